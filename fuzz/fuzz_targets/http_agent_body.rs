//! The HTTP agent contract's answer (`llm::http_agent::parse_reply`, docs/http-agent.md). An
//! error never quotes the API key; a reply written back reads to the same answer.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sage::llm::http_agent::parse_reply;
use serde_json::json;

/// The API key of the fuzzed backend (in the dictionary).
const SECRET: &str = "FAKE-fuzz-key-01234";

fuzz_target!(|data: &[u8]| {
    let response = match parse_reply(data, Some(SECRET)) {
        Ok(response) => response,
        Err(e) => {
            let text = e.to_string();
            assert!(
                !text.contains(SECRET),
                "the key leaks into the error: {text}"
            );
            assert!(!e.is_retryable());
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
    let again = parse_reply(written.as_bytes(), Some(SECRET))
        .unwrap_or_else(|e| panic!("{written} does not read again: {e}"));
    assert_eq!(again, response);
});
