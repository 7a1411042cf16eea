//! A scenario with 24 fields of 5 options each (5^24 combinations) validates and enumerates
//! symbolically. The bound is loose on purpose (it guards the method, not the speed: trying
//! every combination would take years); benches/sop.rs measures the time.

mod common;

use sage::scenario::Value;
use sage::sop::{self, Values};
use std::time::{Duration, Instant};

#[test]
fn validates_and_enumerates_5_pow_24_combinations_symbolically() {
    let yaml = common::wide_scenario(24, 5);
    let t = Instant::now();
    let sop = sop::from_yaml(&yaml, "wide.yaml").unwrap_or_else(|e| panic!("{e}"));
    let elapsed = t.elapsed();
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    assert_eq!(sop.scenario().field_combinations(), Some(5u128.pow(24)));
    // triage: 3 action routes; per field i: Accept, Reject, and the detour's 3 actions;
    // after the last field: 3 actions on V. One detour route is infeasible: d23 decides on F0,
    // and its Review rule needs F0 in o3..o4, which c0 already sent elsewhere.
    assert_eq!(sop.routes().len(), 3 + 24 * 5 + 3 - 1);
    assert!(
        !sop.routes()
            .iter()
            .any(|rc| rc.route.path.last().map(String::as_str) == Some("d23")
                && rc.route.action == "Review")
    );
    for rc in sop.routes() {
        let fields: Values = rc.fields.clone().into_iter().collect();
        let variables: Values = rc.variables.clone().into_iter().collect();
        assert_eq!(sop.route(&fields, &variables).unwrap(), rc.route);
    }
    // The longest route reads every field and the variable.
    let mut fields: Values = (0..24)
        .map(|i| (format!("F{i}"), Value::Str("o1".into())))
        .collect();
    fields.insert("F0".into(), Value::Str("o0".into()));
    let r = sop
        .route(&fields, &[("V".to_string(), Value::Int(300))].into())
        .unwrap();
    assert_eq!(r.path.len(), 1 + 24 + 1);
    assert_eq!(r.action, "Review");
}
