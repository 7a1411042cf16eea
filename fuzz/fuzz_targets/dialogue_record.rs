//! A line of dialogues.jsonl (a `DialogueRecord`), read as `sage report`, `sage export`,
//! `--resume` and the aggregator read it. A record survives a JSON round trip; the aggregator's
//! reading of the same line agrees with it (ids, turns, infrastructure error); the summary, both
//! leaderboards (of the record twice, as two runs) and the training-data export's view of its
//! turns are computed against the bundled scenarios.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sage_fuzz::dialogue_record::run(data));
