//! A support-desk store (store.yaml) and its cases (cases.yaml): `Desk::from_yaml`. The first
//! byte says which file the rest is (the other one is a three-case slice of Northline,
//! fuzz/seeds/mini_*.yaml), or both, split at the first NUL. What loads must hold together: every case's order is in the store and looks up,
//! and the prompts render.

use sage_core::scenario::desk::{Desk, Tool};

/// Three orders of Northline, those of `MINI_CASES`.
const MINI_STORE: &str = include_str!("../../seeds/mini_store.yaml");
/// Three cases of Northline, one per bucket.
const MINI_CASES: &str = include_str!("../../seeds/mini_cases.yaml");

/// Feeds one input to what this target fuzzes (panics on what must not happen).
pub fn run(data: &[u8]) {
    let (mode, rest) = super::split_first(data);
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let (store, cases) = match mode % 3 {
        0 => (text, MINI_CASES),
        1 => (MINI_STORE, text),
        _ => text.split_once('\0').unwrap_or((text, "")),
    };
    let desk = match Desk::from_yaml(store, cases, ("store.yaml", "cases.yaml")) {
        Ok(desk) => desk,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    let _ = sage_core::prompts::desk::agent_system_prompt(&desk.store);
    for case in desk.cases.iter().take(32) {
        assert!(
            desk.order(&case.order).is_some(),
            "case {} without its order",
            case.id
        );
        let looked = desk.call(
            Tool::OrderLookup,
            &serde_json::json!({ "order_number": case.order }),
        );
        assert!(looked.ok, "case {}: its order does not look up", case.id);
        let _ = sage_core::prompts::desk::customer_system_prompt(&desk.store, case);
        let _ = sage_core::prompts::desk::judge_prompt(&desk.store, case, "transcript");
    }
    let _ = desk.counts();
}
