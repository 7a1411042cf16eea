//! Every committed fuzz corpus replayed through its target in a normal build (no sanitizers,
//! no libFuzzer): each input of `fuzz/corpus/TARGET/` is fed to the target's body
//! (`fuzz/src/targets/TARGET.rs`, the code `cargo fuzz` runs) and must not panic. The inputs
//! libFuzzer kept are the ones that reached new code, so this is the fuzzers' coverage at the
//! cost of a test; the sanitizer fuzzing itself is `.ci/fuzz` (docs/fuzzing.md).

// The fuzz crate's two halves, included as its lib.rs includes them (the runtime one with the
// `runtime` feature, here always).
#[path = "../fuzz/src/core.rs"]
#[allow(dead_code)]
mod core_targets;
#[path = "../fuzz/src/runtime.rs"]
#[allow(dead_code)]
mod runtime_targets;

mod sage_fuzz {
    pub use super::core_targets::*;
    pub use super::runtime_targets::*;
}

use std::path::Path;

/// Every target, in `fuzz/fuzz_targets/` order.
const TARGETS: &[&str] = &[
    "agent_answer",
    "anthropic_body",
    "cli",
    "customer_answer",
    "desk_config",
    "desk_record",
    "desk_tool_call",
    "desk_yaml",
    "dialogue_record",
    "http_agent_body",
    "judge_answer",
    "nats_headers",
    "nats_message",
    "openai_body",
    "retry_after",
    "run_config",
    "scenario_yaml",
];

/// Feeds every input of the target's corpus to `run`; fails naming each input that panicked.
fn replay(target: &str, run: fn(&[u8])) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut inputs: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("an entry").path())
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "{}: an empty corpus", dir.display());
    let failed: Vec<String> = inputs
        .iter()
        .filter(|input| {
            let data = std::fs::read(input).expect("an input");
            std::panic::catch_unwind(|| run(&data)).is_err()
        })
        .map(|input| input.display().to_string())
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} inputs of {target} panic (reproduce with `cargo +nightly fuzz run {target} INPUT` in fuzz/): {}",
        failed.len(),
        inputs.len(),
        failed.join(", ")
    );
}

#[test]
fn every_target_is_replayed() {
    let mut found: Vec<String> =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/fuzz_targets"))
            .expect("fuzz/fuzz_targets")
            .map(|e| e.expect("an entry").path())
            .filter_map(|p| Some(p.file_stem()?.to_str()?.to_string()))
            .collect();
    found.sort();
    assert_eq!(found, TARGETS, "a target without its replay test here");
}

#[test]
fn agent_answer() {
    replay("agent_answer", sage_fuzz::agent_answer::run);
}

#[test]
fn anthropic_body() {
    replay("anthropic_body", sage_fuzz::anthropic_body::run);
}

#[test]
fn cli() {
    replay("cli", sage_fuzz::cli::run);
}

#[test]
fn customer_answer() {
    replay("customer_answer", sage_fuzz::customer_answer::run);
}

#[test]
fn desk_config() {
    replay("desk_config", sage_fuzz::desk_config::run);
}

#[test]
fn desk_record() {
    replay("desk_record", sage_fuzz::desk_record::run);
}

#[test]
fn desk_tool_call() {
    replay("desk_tool_call", sage_fuzz::desk_tool_call::run);
}

#[test]
fn desk_yaml() {
    replay("desk_yaml", sage_fuzz::desk_yaml::run);
}

#[test]
fn dialogue_record() {
    replay("dialogue_record", sage_fuzz::dialogue_record::run);
}

#[test]
fn http_agent_body() {
    replay("http_agent_body", sage_fuzz::http_agent_body::run);
}

#[test]
fn judge_answer() {
    replay("judge_answer", sage_fuzz::judge_answer::run);
}

#[test]
fn nats_headers() {
    replay("nats_headers", sage_fuzz::nats_headers::run);
}

#[test]
fn nats_message() {
    replay("nats_message", sage_fuzz::nats_message::run);
}

#[test]
fn openai_body() {
    replay("openai_body", sage_fuzz::openai_body::run);
}

#[test]
fn retry_after() {
    replay("retry_after", sage_fuzz::retry_after::run);
}

#[test]
fn run_config() {
    replay("run_config", sage_fuzz::run_config::run);
}

#[test]
fn scenario_yaml() {
    replay("scenario_yaml", sage_fuzz::scenario_yaml::run);
}
