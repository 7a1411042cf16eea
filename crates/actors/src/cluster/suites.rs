//! The suites on the one lifecycle ([`crate::suite::Play`]) the distributed mode serves: the one list a
//! new suite joins (its driver in a folder of its own, as [`crate::tau2`]).

use super::hosted::{Hosted, HostedRecord, load, read};
use sage_core::desk::SupportDesk;
use sage_core::suite::Suite;
use sage_core::tau2::run::Tau2Retail;

/// How a run spec of a suite is read (the runs bucket's `suite`).
type Load = fn(serde_json::Value) -> Result<Hosted, serde_json::Error>;
/// How a record of a suite is read.
type Read = fn(&[u8]) -> Result<Box<dyn HostedRecord>, serde_json::Error>;

/// The suites on the one lifecycle: each one's name, how its spec is read and how its records
/// are.
fn suites() -> [(&'static str, Load, Read); 2] {
    [
        (SupportDesk::NAME, load::<SupportDesk>, read::<SupportDesk>),
        (Tau2Retail::NAME, load::<Tau2Retail>, read::<Tau2Retail>),
    ]
}

/// How a run spec of the suite `name` is read (the runs bucket's `suite`), for the suites on
/// the one lifecycle.
pub fn loader(name: &str) -> Option<Load> {
    suites()
        .into_iter()
        .find_map(|(suite, load, _)| (suite == name).then_some(load))
}

/// How a record of the suite `name` is read, for the suites on the one lifecycle.
pub fn reader(name: &str) -> Option<Read> {
    suites()
        .into_iter()
        .find_map(|(suite, _, read)| (suite == name).then_some(read))
}
