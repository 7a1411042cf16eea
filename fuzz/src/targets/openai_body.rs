//! An OpenAI-compatible server's chat-completions body (`llm::openai::parse_completion`).
//! An error never quotes the API key, even when the server echoes it; a completion written
//! back from what was read reads to the same answer.

use sage::llm::openai::parse_completion;
use serde_json::json;

/// Feeds one input to what this target fuzzes (panics on what must not happen).
pub fn run(data: &[u8]) {
    let response = match parse_completion(data, Some(super::FAKE_KEY)) {
        Ok(response) => response,
        Err(e) => {
            super::check_body_error(&e);
            return;
        }
    };
    let calls: Vec<_> = response
        .tool_calls
        .iter()
        .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
        .collect();
    let written = json!({
        "choices": [{
            "message": {"content": response.text, "tool_calls": calls},
            "finish_reason": response.finish_reason,
        }],
        "usage": {
            "prompt_tokens": response.usage.input_tokens,
            "completion_tokens": response.usage.output_tokens,
        },
    })
    .to_string();
    let again = parse_completion(written.as_bytes(), Some(super::FAKE_KEY))
        .unwrap_or_else(|e| panic!("{written} does not read again: {e}"));
    assert_eq!(again, response);
}
