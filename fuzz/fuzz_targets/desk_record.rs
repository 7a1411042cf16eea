//! A line of desk.jsonl (a `DeskRecord`), read as `sage report` and the aggregator read it. A
//! record survives a JSON round trip; the aggregator's reading of the same line agrees with it;
//! the desk summary and its table are computed as `sage report` computes them.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sage_fuzz::desk_record::run(data));
