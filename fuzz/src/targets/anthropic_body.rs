//! An Anthropic messages-API body (`llm::anthropic::parse_message`). An error never quotes the
//! API key; a message written back from what was read reads to the same answer (tool inputs
//! compared as JSON).

use sage::llm::anthropic::parse_message;
use serde_json::{Value, json};

/// Feeds one input to what this target fuzzes (panics on what must not happen).
pub fn run(data: &[u8]) {
    let response = match parse_message(data, Some(super::FAKE_KEY)) {
        Ok(response) => response,
        Err(e) => {
            super::check_body_error(&e);
            return;
        }
    };
    let mut content = vec![json!({"type": "text", "text": response.text})];
    for c in &response.tool_calls {
        let input: Value = serde_json::from_str(&c.arguments).expect("tool input is JSON text");
        content.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
    }
    let written = json!({
        "content": content,
        "stop_reason": response.finish_reason,
        "usage": {
            "input_tokens": response.usage.input_tokens,
            "output_tokens": response.usage.output_tokens,
        },
    })
    .to_string();
    let again = parse_message(written.as_bytes(), Some(super::FAKE_KEY))
        .unwrap_or_else(|e| panic!("{written} does not read again: {e}"));
    assert_eq!(again.text, response.text);
    assert_eq!(again.finish_reason, response.finish_reason);
    assert_eq!(again.usage, response.usage);
    assert_eq!(again.tool_calls.len(), response.tool_calls.len());
    for (a, b) in again.tool_calls.iter().zip(&response.tool_calls) {
        assert_eq!((&a.id, &a.name), (&b.id, &b.name));
        let parse = |t: &str| serde_json::from_str::<Value>(t).expect("JSON");
        assert!(super::same_json(&parse(&a.arguments), &parse(&b.arguments)));
    }
}
