//! The run configuration (`sage run --config`, `sage sweep --config`): `RunConfig::from_yaml`.
//! What is accepted is written back as YAML and read again to the same configuration, and
//! passes its own check again.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sage_fuzz::run_config::run(data));
