//! The pure core of SAGE-RS: scenarios, SOP graphs and their rule engine, the protocol between
//! the roles, prompts, scoring, run plans, what a run will cost (`estimate`) and stored dialogues
//! asked again (`fork`). No I/O runtime: the crate depends on no tokio,
//! actix, reqwest or async-nats, so a port imported here is a compile error.
//!
//! ```
//! use sage_core::scenario::{Value, bundled::BUNDLED};
//! use sage_core::sop::{self, Values};
//!
//! let (file, yaml) = BUNDLED[5];
//! assert_eq!(file, "telecom_package.yaml");
//! let sop = sop::from_yaml(yaml, file).unwrap();
//! let fields: Values = [
//!     ("ConsumptionType".to_string(), Value::Str("Enquiry".into())),
//!     ("ApplicationTendency".to_string(), Value::Str("Agree".into())),
//! ]
//! .into();
//! let variables: Values = [("PackageStatus".to_string(), Value::Str("NoContract".into()))].into();
//! let route = sop.route(&fields, &variables).unwrap();
//! assert_eq!(route.path, ["step1", "step2", "step3", "step6", "step4"]);
//! assert_eq!(route.action, "ChangeOrder");
//! // Every route of the SOP, each with an assignment that produces it.
//! assert_eq!(sop.routes().len(), 12);
//! ```

pub mod desk;
pub mod estimate;
pub mod fork;
pub mod plan;
pub mod prompts;
pub mod protocol;
pub mod scenario;
pub mod scoring;
pub mod simulator;
pub mod sop;
pub mod suite;
pub mod tau2;
