//! A server's `Retry-After` header (`llm::openai::parse_retry_after`, read on 429 and 5xx
//! answers of every HTTP backend): delay-seconds or an HTTP date. Whole seconds read as
//! themselves.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sage_fuzz::retry_after::run(data));
