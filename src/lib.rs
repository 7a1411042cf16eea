//! SAGE-RS: graph-guided evaluation of LLM customer-service agents against their Standard
//! Operating Procedures (the SAGE benchmark, in Rust).
//!
//! Layers (see docs/architecture.md): a pure core ([`scenario`], [`sop`]) with no I/O beyond
//! reading the scenario file it is given; the command line ([`cli`]) on top.

pub mod cli;
pub mod scenario;
pub mod sop;
