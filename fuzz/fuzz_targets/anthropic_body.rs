//! An Anthropic messages-API body (`llm::anthropic::parse_message`). An error never quotes the
//! API key; a message written back from what was read reads to the same answer (tool inputs
//! compared as JSON).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sage_fuzz::anthropic_body::run(data));
