//! A server's `Retry-After` header (`llm::openai::parse_retry_after`, read on 429 and 5xx
//! answers of every HTTP backend): delay-seconds or an HTTP date. Whole seconds read as
//! themselves.

use sage::llm::openai::parse_retry_after;

/// Feeds one input to what this target fuzzes (panics on what must not happen).
pub fn run(data: &[u8]) {
    let Ok(value) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = parse_retry_after(value);
    if let Ok(secs) = value.trim().parse::<u64>() {
        assert_eq!(parsed, Some(std::time::Duration::from_secs(secs)));
    }
}
