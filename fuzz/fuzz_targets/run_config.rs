//! The run configuration (`sage run --config`, `sage sweep --config`): `RunConfig::from_yaml`.
//! What is accepted is written back as YAML and read again to the same configuration, and
//! passes its own check again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sage::plan::RunConfig;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let config = match RunConfig::from_yaml(text, "run.yaml") {
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
    if let Ok(yaml) = serde_saphyr::to_string(&config) {
        let back = RunConfig::from_yaml(&yaml, "written.yaml")
            .unwrap_or_else(|e| panic!("{config:?} written as\n{yaml}\ndoes not read again: {e}"));
        assert!(sage_fuzz::same_json(
            &serde_json::to_value(&config).unwrap(),
            &serde_json::to_value(&back).unwrap()
        ));
    }
});
