//! The support-desk configuration (`sage run --suite support-desk --config`):
//! `DeskConfig::from_yaml`. What is accepted round-trips through YAML and JSON and checks again.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sage_fuzz::desk_config::run(data));
