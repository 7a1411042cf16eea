//! The suites on the one lifecycle ([`crate::suite::Play`]) the distributed mode serves: the one list a
//! new suite joins (its driver in a folder of its own, as [`crate::tau2`]).

use super::hosted::{Hosted, load};
use sage_core::suite::Suite;
use sage_core::tau2::run::Tau2Retail;

/// How a run spec of the suite `name` is read (the runs bucket's `suite`), for the suites on
/// the one lifecycle.
pub fn loader(name: &str) -> Option<fn(serde_json::Value) -> Result<Hosted, serde_json::Error>> {
    let suites: [(&str, fn(_) -> _); 1] = [(Tau2Retail::NAME, load::<Tau2Retail>)];
    suites
        .into_iter()
        .find_map(|(suite, load)| (suite == name).then_some(load))
}
