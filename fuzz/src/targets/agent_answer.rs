//! The agent under test's answer (appendix B.3.2's JSON contract), parsed against a bundled
//! scenario (picked by the first byte; its top bit is the model's `finish_reason: length`):
//! `parse_agent_output`, and `extract_chat` for what the user is shown after a format error.
//! A valid turn written back in the contract parses to the same turn; every outcome survives
//! the JSON of a record.

use sage_core::protocol::parse::{extract_chat, parse_agent_output};
use serde_json::{Map, Value, json};

/// Feeds one input to what this target fuzzes (panics on what must not happen).
pub fn run(data: &[u8]) {
    let (selector, rest) = super::split_first(data);
    let Ok(raw) = std::str::from_utf8(rest) else {
        return;
    };
    let sop = super::pick_sop(selector & 0x7f);
    let _ = extract_chat(raw);
    let turn = match parse_agent_output(sop, raw, selector & 0x80 != 0) {
        Ok(turn) => turn,
        Err(e) => {
            let _ = (e.kind(), e.to_string());
            super::json_roundtrip(&e);
            return;
        }
    };
    super::json_roundtrip(&turn);
    let mut finals = Map::new();
    for (name, value) in &turn.outputs {
        finals.insert(name.clone(), Value::String(value.clone()));
    }
    finals.insert("Action".into(), Value::String(turn.action.clone()));
    let written = json!({
        "classification_output": turn.classification,
        "cot": turn.cot,
        "now_path": turn.path,
        "finals": finals,
        "chat": turn.chat,
    })
    .to_string();
    let again = parse_agent_output(sop, &written, false)
        .unwrap_or_else(|e| panic!("{turn:?} written as {written} does not parse: {e}"));
    assert_eq!(again, turn);
}
