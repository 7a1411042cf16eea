//! The support-desk configuration (`sage run --suite support-desk --config`):
//! `DeskConfig::from_yaml`. What is accepted round-trips through YAML and JSON and checks again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sage::plan::desk::DeskConfig;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let config = match DeskConfig::from_yaml(text, "desk.yaml") {
        Ok(config) => config,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return;
        }
    };
    config
        .check("again")
        .expect("an accepted configuration checks");
    sage_fuzz::json_roundtrip(&config);
    sage_fuzz::yaml_roundtrip(&config, |yaml| DeskConfig::from_yaml(yaml, "written.yaml"));
});
