//! An OpenAI-compatible server's chat-completions body (`llm::openai::parse_completion`).
//! An error never quotes the API key, even when the server echoes it; a completion written
//! back from what was read reads to the same answer.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sage_fuzz::openai_body::run(data));
