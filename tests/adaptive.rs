//! `sage run --adaptive` (docs/run-config.md, "Adaptive runs"): a model stops getting cases
//! once its OA's confidence sequence puts it surely in or surely out of the top K. Six
//! simulated agents, three strong and three weak, 24 cases per scenario: the adaptive run
//! finds the full run's top three at a fraction of its dialogues. The sequence's coverage and
//! the 27-model simulation are unit tests (`sage_core::scoring::adaptive`).

mod common;

use std::path::Path;

fn config(dir: &Path) -> std::path::PathBuf {
    let mut text = String::from("models:\n");
    let skills = [0.99, 0.97, 0.95, 0.45, 0.40, 0.35];
    for (i, skill) in skills.iter().enumerate() {
        let errors = if *skill < 0.5 { 0.3 } else { 0.01 };
        text.push_str(&format!(
            "  - {{name: m{i}, provider: simulated, sim: {{kind: agent, profile: balanced, skills: {{classification_accuracy: {skill}, action_derivation: {skill}, format_error_rate: {errors}}}}}}}\n"
        ));
    }
    text.push_str(
        "  - {name: sim-user, provider: simulated, sim: {kind: user}}
  - {name: sim-judge, provider: simulated, sim: {kind: judge}}
service_models: [m0, m1, m2, m3, m4, m5]
user_model: sim-user
judge_models: [sim-judge]
scenarios: [bundled]
dialogues_per_scenario: 24
min_per_route: 0
max_turns: 3
judge_turns: every
seed: 5
",
    );
    let path = dir.join("six.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn an_adaptive_run_finds_the_full_runs_top_three_at_a_fraction_of_its_dialogues() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let full = common::run_config(&config, dir.path(), "full");
    let out = dir.path().to_str().unwrap();
    let printed = common::sage_ok(&[
        "run",
        "--config",
        config.to_str().unwrap(),
        "--out",
        out,
        "--run-id",
        "adaptive",
        "--adaptive",
        "--concurrency",
        "4",
        "--quiet",
    ]);
    let adaptive = dir.path().join("adaptive");
    let (f, a) = (summary(&full), summary(&adaptive));
    assert_eq!(common::ranked(&a)[..3], common::ranked(&f)[..3]);
    let played = common::records_json(&adaptive).len();
    let all = common::records_json(&full).len();
    assert_eq!(all, 6 * 6 * 24);
    println!("adaptive: {played} of {all} dialogues");
    assert!(10 * played <= 6 * all, "{played} of {all} dialogues");

    // What was decided, per model: all six, and no model played much past its decision (the
    // dialogues in flight then, four at most, finish and count).
    let standings = a["adaptive"]["models"].as_array().expect("adaptive.models");
    assert_eq!(a["adaptive"]["top"], 3);
    assert_eq!(standings.len(), 6);
    for s in standings {
        let model = s["model"].as_str().unwrap();
        let expected = if ["m0", "m1", "m2"].contains(&model) {
            "in_top"
        } else {
            "out_of_top"
        };
        assert_eq!(s["decision"], expected, "{s}");
        let after = s["decided_after"].as_u64().unwrap();
        let dialogues = common::records_json(&adaptive)
            .iter()
            .filter(|r| r["job"]["service_model"] == model)
            .count() as u64;
        assert!(
            dialogues <= after + 4,
            "{model}: {dialogues} dialogues, decided after {after}"
        );
        assert!(s["lower"].as_f64().unwrap() <= s["upper"].as_f64().unwrap());
        assert!(printed.contains(&format!("{model}: surely")), "{printed}");
    }
    // A full run says nothing of it.
    assert!(f.get("adaptive").is_none());
    // `sage report` folds the same decisions from the records, in their stored order.
    common::sage_ok(&["report", adaptive.to_str().unwrap()]);
    assert_eq!(summary(&adaptive)["adaptive"], a["adaptive"]);
}

#[test]
fn an_adaptive_top_that_leaves_no_model_out_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path());
    let o = common::sage(&[
        "run",
        "--config",
        config.to_str().unwrap(),
        "--out",
        dir.path().to_str().unwrap(),
        "--adaptive",
        "--adaptive-top",
        "6",
        "--plan",
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("adaptive_top: 6; expected 1 to 5"), "{err}");
    // Without --adaptive, --adaptive-top is a usage error.
    let o = common::sage(&["run", "--adaptive-top", "2", "--plan"]);
    assert_eq!(o.status.code(), Some(2));
}
