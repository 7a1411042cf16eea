//! A tool call of the agent under test against the Northline fixture: the arguments are the
//! model's text, read as the service role reads them (JSON, or null when they do not parse).
//! The first byte picks the tool. A call is deterministic, and it is `ok` only with a known
//! order (or for the tools that need none).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sage_fuzz::desk_tool_call::run(data));
