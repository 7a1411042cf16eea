//! A scenario file (`sage scenario validate`, `sage run`, a run's scenario texts in the runs
//! bucket): `sop::from_yaml` parses, checks and compiles it. What compiles must keep the
//! compiler's promise: every route it enumerates comes with an assignment that the rule engine
//! routes to that very route; the prompts and the graph exports render.

use sage_core::sop::{self, Assignment, Values};

fn values(a: &Assignment) -> Values {
    a.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// Feeds one input to what this target fuzzes (panics on what must not happen).
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let sop = match sop::from_yaml(text, "fuzz.yaml") {
        Ok(sop) => sop,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    for case in sop.routes().iter().take(64) {
        let route = sop
            .route(&values(&case.fields), &values(&case.variables))
            .unwrap_or_else(|e| {
                panic!(
                    "the assignment of route {:?} does not route: {e}",
                    case.route
                )
            });
        assert_eq!(
            route, case.route,
            "the rule engine disagrees with the enumeration"
        );
    }
    if let Some(case) = sop.routes().first() {
        let _ = sage_core::prompts::agent_system_prompt(&sop, &case.variables);
    }
    let _ = (sop.to_dot(), sop.to_mermaid(), sop.unused_actions());
}
