//! SAGE-RS: graph-guided evaluation of LLM customer-service agents against their Standard
//! Operating Procedures (the SAGE benchmark, in Rust).
//!
//! This package is the `sage` binary and its command line ([`cli`]); the layers below it are
//! crates of their own (docs/architecture.md), each importing only those under it:
//! [`sage_actors`] (the runtime) on [`sage_ports`] (transport, llm, store, telemetry) on
//! [`sage_report`] (HTML) on [`sage_core`] (scenario, sop, protocol, scoring, prompts, plan,
//! estimate).
//! They are re-exported here under their layer names, so `sage::sop` or `sage::store` name the
//! same modules for the tests, benchmarks and examples.
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
//! assert_eq!(sop.route(&fields, &variables).unwrap().action, "ChangeOrder");
//! ```

pub mod cli;

pub use sage_actors as actors;
pub use sage_core::{desk, estimate, fork, plan, prompts, protocol, scenario, scoring, sop};
pub use sage_ports::{llm, store, telemetry, transport};
pub use sage_report as report;
