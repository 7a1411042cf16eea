//! The HTTP agent contract's answer (`llm::http_agent::parse_reply`, docs/http-agent.md). An
//! error never quotes the API key; a reply written back reads to the same answer.

use sage::llm::http_agent::parse_reply;
use serde_json::json;

/// Feeds one input to what this target fuzzes (panics on what must not happen).
pub fn run(data: &[u8]) {
    let response = match parse_reply(data, Some(super::FAKE_KEY)) {
        Ok(response) => response,
        Err(e) => {
            super::check_body_error(&e);
            return;
        }
    };
    assert!(response.tool_calls.is_empty());
    let written = json!({
        "reply": response.text,
        "finish_reason": response.finish_reason,
        "usage": {
            "input_tokens": response.usage.input_tokens,
            "output_tokens": response.usage.output_tokens,
        },
    })
    .to_string();
    let again = parse_reply(written.as_bytes(), Some(super::FAKE_KEY))
        .unwrap_or_else(|e| panic!("{written} does not read again: {e}"));
    assert_eq!(again, response);
}
