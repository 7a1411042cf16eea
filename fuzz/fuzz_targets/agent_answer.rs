//! The agent under test's answer (appendix B.3.2's JSON contract), parsed against a bundled
//! scenario (picked by the first byte; its top bit is the model's `finish_reason: length`):
//! `parse_agent_output`, and `extract_chat` for what the user is shown after a format error.
//! A valid turn written back in the contract parses to the same turn; every outcome survives
//! the JSON of a record.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sage_fuzz::agent_answer::run(data));
