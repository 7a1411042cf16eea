//! The command line (`sage::cli::Cli`, clap): arbitrary arguments (split at NUL bytes, not
//! necessarily UTF-8) are parsed with `try_parse_from`. Parsing is deterministic, and an error
//! (help and version included) renders.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sage_fuzz::cli::run(data));
