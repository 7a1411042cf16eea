//! A scenario file (`sage scenario validate`, `sage run`, a run's scenario texts in the runs
//! bucket): `sop::from_yaml` parses, checks and compiles it. What compiles must keep the
//! compiler's promise: every route it enumerates comes with an assignment that the rule engine
//! routes to that very route; the prompts and the graph exports render.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sage_fuzz::scenario_yaml::run(data));
