//! The support-desk configuration (`sage run --suite support-desk --config`):
//! `DeskConfig::from_yaml`. What is accepted round-trips through YAML and JSON and checks again.

use sage_core::plan::desk::DeskConfig;

/// Feeds one input to what this target fuzzes (panics on what must not happen).
pub fn run(data: &[u8]) {
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
    super::json_roundtrip(&config);
    super::yaml_roundtrip(&config, |yaml| DeskConfig::from_yaml(yaml, "written.yaml"));
}
