//! SAGE-RS: graph-guided evaluation of LLM customer-service agents against their Standard
//! Operating Procedures (the SAGE benchmark, in Rust).
//!
//! Layers (see docs/architecture.md): a pure core ([`scenario`], [`sop`]) with no I/O beyond
//! reading the scenario file it is given; the command line ([`cli`]) on top.
//!
//! ```
//! use sage::scenario::Value;
//! use sage::sop::{self, Values};
//!
//! let sop = sop::load(std::path::Path::new("scenarios/telecom_package.yaml")).unwrap();
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

pub mod actors;
pub mod cli;
pub mod llm;
pub mod plan;
pub mod prompts;
pub mod protocol;
pub mod report;
pub mod scenario;
pub mod scoring;
pub mod sop;
pub mod store;
pub mod telemetry;
pub mod transport;
