//! The targets that fuzz the parsers of the pure core (scenarios, stores, configurations, the
//! agent's and the customer's answers), and what every target shares: the bundled scenarios and
//! store compiled once and the round-trip checks. They build with `sage-core` alone (no
//! runtime): `cargo fuzz build --no-default-features` builds only these.

#[path = "targets/agent_answer.rs"]
pub mod agent_answer;
#[path = "targets/customer_answer.rs"]
pub mod customer_answer;
#[path = "targets/desk_config.rs"]
pub mod desk_config;
#[path = "targets/desk_tool_call.rs"]
pub mod desk_tool_call;
#[path = "targets/desk_yaml.rs"]
pub mod desk_yaml;
#[path = "targets/run_config.rs"]
pub mod run_config;
#[path = "targets/scenario_yaml.rs"]
pub mod scenario_yaml;

use sage_core::scenario::bundled::{BUNDLED, NORTHLINE};
use sage_core::scenario::desk::Desk;
use sage_core::sop::{self, Sop};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fmt::Debug;
use std::sync::{Arc, OnceLock};

/// The six bundled scenarios, compiled once, in file-name order.
pub fn sops() -> &'static [Arc<Sop>] {
    static SOPS: OnceLock<Vec<Arc<Sop>>> = OnceLock::new();
    SOPS.get_or_init(|| {
        BUNDLED
            .iter()
            .map(|(name, text)| Arc::new(sop::from_yaml(text, name).expect("a bundled scenario")))
            .collect()
    })
}

/// The bundled scenario picked by `selector`.
pub fn pick_sop(selector: u8) -> &'static Arc<Sop> {
    let sops = sops();
    &sops[usize::from(selector) % sops.len()]
}

/// The bundled Northline store, loaded once.
pub fn northline() -> &'static Desk {
    static DESK: OnceLock<Desk> = OnceLock::new();
    DESK.get_or_init(|| {
        Desk::from_yaml(NORTHLINE.0, NORTHLINE.1, ("store.yaml", "cases.yaml"))
            .expect("the bundled store")
    })
}

/// An accepted configuration written back as YAML reads again (with `read`) to the same
/// configuration.
pub fn yaml_roundtrip<T: Serialize + Debug, E: std::fmt::Display>(
    config: &T,
    read: impl Fn(&str) -> Result<T, E>,
) {
    if let Ok(yaml) = serde_saphyr::to_string(config) {
        let back = read(&yaml)
            .unwrap_or_else(|e| panic!("{config:?} written as\n{yaml}\ndoes not read again: {e}"));
        assert!(same_json(
            &serde_json::to_value(config).unwrap(),
            &serde_json::to_value(&back).unwrap()
        ));
    }
}

/// What serializes parses back to the same value: `value` as JSON, read again, is the same
/// JSON (numbers compared as floats to the last bit but one: serde_json's default float parser
/// may round the last bit differently).
pub fn json_roundtrip<T: Serialize + DeserializeOwned + Debug>(value: &T) {
    let text = serde_json::to_string(value).expect("a parsed value serializes");
    let back: T = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{value:?} serialized as {text} does not parse again: {e}"));
    let (a, b) = (
        serde_json::to_value(value).expect("to a JSON value"),
        serde_json::to_value(&back).expect("to a JSON value"),
    );
    assert!(same_json(&a, &b), "round trip changed the value:\n{a}\n{b}");
}

/// JSON equality with floats equal within a relative 1e-15 (see [`json_roundtrip`]).
pub fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if x == y {
                return true;
            }
            match (x.as_f64(), y.as_f64()) {
                (Some(x), Some(y)) => (x - y).abs() <= 1e-15 * x.abs().max(y.abs()),
                _ => false,
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}

/// Whether `SAGE_FUZZ_DEBUG` is set: targets then say on standard error why an input was not
/// decoded (to check that the seeds decode as they should).
pub fn debug() -> bool {
    static DEBUG: OnceLock<bool> = OnceLock::new();
    *DEBUG.get_or_init(|| std::env::var_os("SAGE_FUZZ_DEBUG").is_some())
}

/// The input's first byte (0 when empty) and the rest.
pub fn split_first(data: &[u8]) -> (u8, &[u8]) {
    match data.split_first() {
        Some((&first, rest)) => (first, rest),
        None => (0, data),
    }
}
