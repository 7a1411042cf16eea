//! The HTTP agent contract's answer (`llm::http_agent::parse_reply`, docs/http-agent.md). An
//! error never quotes the API key; a reply written back reads to the same answer.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sage::llm::http_agent::parse_reply;
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    let response = match parse_reply(data, Some(sage_fuzz::FAKE_KEY)) {
        Ok(response) => response,
        Err(e) => {
            sage_fuzz::check_body_error(&e);
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
    let again = parse_reply(written.as_bytes(), Some(sage_fuzz::FAKE_KEY))
        .unwrap_or_else(|e| panic!("{written} does not read again: {e}"));
    assert_eq!(again, response);
});
