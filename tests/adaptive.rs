//! `sage run --adaptive` and `sage sweep --adaptive` (docs/run-config.md, "Adaptive runs"): a
//! model stops getting cases once its OA's confidence sequence puts it surely in or surely out
//! of the top K. Six simulated agents, three strong and three weak, 24 cases per scenario: the
//! adaptive run, embedded and over a real nats-server with two workers, finds the full run's
//! top three at a fraction of its dialogues. The sequence's coverage and the 27-model
//! simulation are unit tests (`sage_core::scoring::adaptive`); the 27-model run is a
//! benchmark (`cargo bench --bench adaptive`).

mod common;

use common::cluster::{Nats, Sage, http_get, promtool_check, wait_status};
use std::path::Path;
use std::time::Duration;

/// The six agents' run; `latency` (e.g. `{uniform_ms: [20, 40]}`) given to the agents' and
/// the customer's calls, which changes no answer.
fn config(dir: &Path, latency: Option<&str>) -> std::path::PathBuf {
    let latency = latency.map_or(String::new(), |l| format!(", latency: {l}"));
    let mut text = String::from("models:\n");
    let skills = [0.99, 0.97, 0.95, 0.45, 0.40, 0.35];
    for (i, skill) in skills.iter().enumerate() {
        let errors = if *skill < 0.5 { 0.3 } else { 0.01 };
        text.push_str(&format!(
            "  - {{name: m{i}, provider: simulated, sim: {{kind: agent, profile: balanced, skills: {{classification_accuracy: {skill}, action_derivation: {skill}, format_error_rate: {errors}}}{latency}}}}}\n"
        ));
    }
    text.push_str(&format!(
        "  - {{name: sim-user, provider: simulated, sim: {{kind: user{latency}}}}}\n"
    ));
    text.push_str(
        "  - {name: sim-judge, provider: simulated, sim: {kind: judge}}
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
    let path = dir.join(if latency.is_empty() {
        "six.yaml"
    } else {
        "six-slow.yaml"
    });
    std::fs::write(&path, text).unwrap();
    path
}

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

/// What an adaptive run of the six decided: the full run's top three (`full`) at 60% of its
/// dialogues or less, every model decided, none playing more than `slack` dialogues past its
/// decision (those in flight then finish and count), and the summary's standings.
fn check_decided(full: &Path, adaptive: &Path, slack: u64) -> serde_json::Value {
    let (f, a) = (summary(full), summary(adaptive));
    // The same three (their order among themselves is not what the run decides).
    let top = |s: &serde_json::Value| {
        let mut top = common::ranked(s)[..3].to_vec();
        top.sort();
        top
    };
    assert_eq!(top(&a), top(&f));
    let records = common::records_json(adaptive);
    let (played, all) = (records.len(), common::records_json(full).len());
    assert_eq!(all, 6 * 6 * 24);
    println!("adaptive: {played} of {all} dialogues");
    assert!(10 * played <= 6 * all, "{played} of {all} dialogues");
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
        let dialogues = (records.iter())
            .filter(|r| r["job"]["service_model"] == model)
            .count() as u64;
        assert!(
            dialogues <= after + slack,
            "{model}: {dialogues} dialogues, decided after {after}"
        );
        // What stopping early saved: the full run's 144 less those played.
        assert_eq!(s["not_played"].as_u64(), Some(144 - dialogues), "{s}");
        assert!(s["lower"].as_f64().unwrap() <= s["upper"].as_f64().unwrap());
    }
    // The HTML report tags each decided model in its leaderboard row.
    let html = std::fs::read_to_string(adaptive.join("report.html")).unwrap();
    for (decision, tag) in [("in_top", "top 3 · "), ("out_of_top", "out · ")] {
        let rows: Vec<&str> = html.split("<tr data-model=").skip(1).collect();
        let tagged = (rows.iter())
            .filter(|r| r.contains(&format!("data-decision=\"{decision}\"")) && r.contains(tag))
            .count();
        assert_eq!(tagged, 3, "{decision}");
    }
    // The leaderboard marks each decision.
    let board = std::fs::read_to_string(adaptive.join("leaderboard.md")).unwrap();
    assert!(
        board.contains("| Adaptive |") && board.contains("top 3 @") && board.contains("out @"),
        "{board}"
    );
    a
}

#[test]
fn an_adaptive_run_finds_the_full_runs_top_three_at_a_fraction_of_its_dialogues() {
    let dir = common::cluster::test_dir();
    let config = config(dir.path(), None);
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
    // Four dialogues in flight at most when a model is decided: they finish and count.
    let a = check_decided(&full, &adaptive, 4);
    for m in ["m0", "m1", "m2", "m3", "m4", "m5"] {
        assert!(printed.contains(&format!("{m}: surely")), "{printed}");
    }
    assert!(printed.contains(" Adaptive "), "{printed}");
    // A full run says nothing of it.
    assert!(summary(&full).get("adaptive").is_none());
    // `sage report` folds the same decisions from the records, in their stored order.
    common::sage_ok(&["report", adaptive.to_str().unwrap()]);
    assert_eq!(summary(&adaptive)["adaptive"], a["adaptive"]);

    // The same run over NATS: `sage sweep --adaptive`, two workers of four dialogues each.
    // The models take 40-80 ms a call, as real ones take seconds: without it the workers
    // would outpace the aggregator (a debug build) and play most dialogues before it folds
    // the records that decide.
    let nats = Nats::start(dir.path());
    let url = nats.url();
    let results = dir.path().join("results");
    let common_args = ["--nats", &url, "--metrics-addr", "127.0.0.1:0"];
    let aggregator = Sage::aggregator(dir.path(), &results, &common_args);
    let _workers = Sage::workers(dir.path(), &url, 2, 4, &[]);
    let slow = self::config(dir.path(), Some("{uniform_ms: [40, 80]}"));
    common::sage_ok(&[
        "sweep",
        "--nats",
        &url,
        "--config",
        slow.to_str().unwrap(),
        "--run-id",
        "swept",
        "--adaptive",
    ]);
    let end = wait_status(&url, "swept", Duration::from_secs(240), |s| {
        s["state"] == "complete"
    });
    // Each decision reaches the workers at once, but up to eight dialogues are in flight
    // then and some records may wait to be folded (more on a loaded machine).
    let swept = results.join("swept");
    let a = check_decided(&full, &swept, 32);
    assert_eq!(
        end["adaptive"], a["adaptive"],
        "the status holds the summary's"
    );
    let table = common::sage_ok(&["status", "--nats", &url, "swept"]);
    assert!(table.contains(" decided "), "{table}");
    // Prometheus: each model's OA, its interval's width and decision, and the models decided.
    let (code, metrics) = http_get(&aggregator.metrics_addr(), "/metrics");
    assert_eq!(code, 200);
    for line in [
        r#"sage_run_models_decided{decision="in_top",run="swept"} 3"#,
        r#"sage_run_models_decided{decision="out_of_top",run="swept"} 3"#,
        r#"sage_run_models_decided{decision="undecided",run="swept"} 0"#,
        r#"sage_run_model_decision{model="m0",run="swept"} 1"#,
        r#"sage_run_model_decision{model="m5",run="swept"} -1"#,
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in\n{metrics}");
    }
    let m0 = &a["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == "m0")
        .unwrap()["all"]["overall"];
    let gauge = |name: &str| -> f64 {
        let prefix = format!(r#"{name}{{model="m0",run="swept"}} "#);
        let line = metrics.lines().find_map(|l| l.strip_prefix(&prefix));
        line.unwrap_or_else(|| panic!("{prefix} in\n{metrics}"))
            .parse()
            .unwrap()
    };
    assert!((gauge("sage_run_model_oa") - m0["mean"].as_f64().unwrap()).abs() < 1e-9);
    let width = m0["ci_high"].as_f64().unwrap() - m0["ci_low"].as_f64().unwrap();
    assert!((gauge("sage_run_model_oa_interval_width") - width).abs() < 1e-9);
    promtool_check(&metrics);
    // A run whose every model is decided has nothing to resume.
    let o = common::sage(&["sweep", "--nats", &url, "--resume", "swept"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("all decided"), "{err}");
}

#[test]
fn an_adaptive_top_that_leaves_no_model_out_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), None);
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
