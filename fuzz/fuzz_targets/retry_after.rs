//! A server's `Retry-After` header (`llm::openai::parse_retry_after`, read on 429 and 5xx
//! answers of every HTTP backend): delay-seconds or an HTTP date. Whole seconds read as
//! themselves.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sage::llm::openai::parse_retry_after;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = parse_retry_after(value);
    if let Ok(secs) = value.trim().parse::<u64>() {
        assert_eq!(parsed, Some(std::time::Duration::from_secs(secs)));
    }
});
