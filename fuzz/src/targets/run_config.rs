//! The run configuration (`sage run --config`, `sage sweep --config`): `RunConfig::from_yaml`.
//! What is accepted is written back as YAML and read again to the same configuration, and
//! passes its own check again.

use sage_core::plan::RunConfig;

/// Feeds one input to what this target fuzzes (panics on what must not happen).
pub fn run(data: &[u8]) {
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
    super::json_roundtrip(&config);
    super::yaml_roundtrip(&config, |yaml| RunConfig::from_yaml(yaml, "written.yaml"));
}
