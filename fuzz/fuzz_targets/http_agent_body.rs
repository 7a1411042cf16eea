//! The HTTP agent contract's answer (`llm::http_agent::parse_reply`, docs/http-agent.md). An
//! error never quotes the API key; a reply written back reads to the same answer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sage_fuzz::http_agent_body::run(data));
