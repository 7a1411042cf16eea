//! Monitoring against the real tools.
//!
//! - The alerting rules of deploy/alerts.yml pass their unit tests (`promtool test rules
//!   deploy/alerts.test.yml`), and every alert is tested both firing and not firing.
//! - Every panel query of every Grafana dashboard returns data from a real Prometheus that
//!   scraped a worker and the aggregator through a SAGE sweep, an adaptive one and a support-desk sweep (the
//!   queries are evaluated by `grafana/check.py --prometheus`), and the alerting rules evaluate
//!   without error on those series.

mod common;

use common::cluster::{Nats, Prometheus, Sage, test_dir};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// A YAML file of the repository as JSON.
fn yaml(path: &str) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

#[test]
fn the_alerting_rules_pass_their_promtool_tests() {
    let out = Command::new("promtool")
        .args(["test", "rules", "alerts.test.yml"])
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy"))
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run promtool ({e}): it must be on PATH (Debian: apt-get install prometheus)"
            )
        });
    assert!(
        out.status.success(),
        "promtool test rules deploy/alerts.test.yml:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Every alert has an evaluation where it fires and one where it does not.
    let rules = yaml("deploy/alerts.yml");
    let tests = yaml("deploy/alerts.test.yml");
    let alerts: Vec<&str> = rules["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["rules"].as_array().expect("rules"))
        .filter_map(|r| r["alert"].as_str())
        .collect();
    assert_eq!(alerts.len(), 6, "{alerts:?}");
    let evaluations: Vec<&serde_json::Value> = tests["tests"]
        .as_array()
        .expect("tests")
        .iter()
        .flat_map(|t| t["alert_rule_test"].as_array().expect("alert_rule_test"))
        .collect();
    for alert in alerts {
        let fired: Vec<bool> = evaluations
            .iter()
            .filter(|e| e["alertname"] == alert)
            .map(|e| e["exp_alerts"].as_array().is_some_and(|a| !a.is_empty()))
            .collect();
        assert!(
            fired.contains(&true) && fired.contains(&false),
            "{alert}: evaluations firing {fired:?}; each alert needs one firing and one not"
        );
    }
}

/// Runs `sage ARGS` (a sweep with `--follow`) to its end, within `within`.
fn follow(dir: &Path, name: &str, args: &[&str], within: Duration) {
    let began = Instant::now();
    let mut sweep = Sage::spawn(dir, name, args);
    assert_eq!(
        sweep.wait(within),
        Some(0),
        "sage {args:?} did not complete within {within:?}:\n{}",
        sweep.log_text()
    );
    eprintln!("{name}: {:?}", began.elapsed());
}

#[test]
fn every_dashboard_query_has_data_after_a_sweep() {
    let began = Instant::now();
    let dir = test_dir();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let nats = Nats::start(dir.path());
    let url = nats.url();
    let common = ["--nats", url.as_str(), "--metrics-addr", "127.0.0.1:0"];
    // One worker serving every role (its dialogues ask them in-process: no role request
    // crosses NATS, the role panels read the series created at 0), and the aggregator.
    let mut worker_args = vec!["worker", "--concurrency", "16"];
    worker_args.extend(common);
    let worker = Sage::spawn(dir.path(), "worker", &worker_args);
    let aggregator = Sage::aggregator(dir.path(), &dir.path().join("results"), &common);
    let prometheus = Prometheus::start(
        dir.path(),
        &[
            ("sage-worker", vec![worker.metrics_addr()]),
            ("sage-aggregator", vec![aggregator.metrics_addr()]),
        ],
        &[root.join("deploy/alerts.yml")],
    );
    prometheus.wait_for("sum(up)", Duration::from_secs(30), |up| up == 2.0);

    // A short SAGE run and a support-desk run of simulated models slow enough (10-30 ms a
    // call, 50-100 ms for the desk) that each run spans several scrapes: a run over between
    // two scrapes shows no increase at all (Prometheus cannot tell a counter's first sample
    // from its start).
    let config = common::write_config(dir.path(), "{uniform_ms: [10, 30]}", 2, 5);
    let desk = common::write_desk_config(dir.path(), "{uniform_ms: [50, 100]}");
    let sweep = |run: &str, extra: &[&str]| {
        let mut args = vec!["sweep", "--nats", url.as_str(), "--run-id", run, "--follow"];
        args.extend(extra);
        follow(dir.path(), run, &args, Duration::from_secs(60));
    };
    sweep("live-sage", &["--config", &config]);
    // And adaptive (top 1 of the two models), so that its decisions have series too.
    sweep(
        "live-adaptive",
        &["--config", &config, "--adaptive", "--adaptive-top", "1"],
    );
    sweep("live-desk", &["--suite", "support-desk", "--config", &desk]);
    let jobs: u64 = ["live-sage", "live-adaptive", "live-desk"]
        .iter()
        .map(|run| {
            let status = common::cluster::wait_status(&url, run, Duration::from_secs(10), |s| {
                s["state"] == "complete"
            });
            // Stored: an adaptive run may end with its models decided before every job.
            status["stored"].as_u64().expect("stored")
        })
        .sum();
    // Prometheus has scraped both runs to their end.
    prometheus.wait_for(
        "sum(sage_records_stored_total)",
        Duration::from_secs(30),
        |stored| stored == jobs as f64,
    );
    prometheus.wait_for(
        "sum(sage_dialogues_completed_total) + sum(sage_desk_conversations_total)",
        Duration::from_secs(30),
        |finished| finished == jobs as f64,
    );

    // The alerting rules evaluate on these series without error.
    let rules = prometheus.api("rules?type=alert");
    let rules: Vec<&serde_json::Value> = rules["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["rules"].as_array().expect("rules"))
        .collect();
    assert_eq!(rules.len(), 6);
    for rule in rules {
        assert_eq!(rule["health"], "ok", "{rule}");
    }

    // Every panel query (and every variable query) of every dashboard returns data, over a
    // window that covers both runs.
    let window = began.elapsed().as_secs() + 10;
    let out = Command::new("python3")
        .arg(root.join("grafana/check.py"))
        .args(["--no-promtool", "--prometheus", &prometheus.url()])
        .args(["--window", &window.to_string()])
        .output()
        .expect("python3 runs grafana/check.py");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{report}");
    assert!(out.status.success(), "{report}");
    assert!(report.contains("none empty"), "{report}");
    eprintln!(
        "{jobs} dialogues and conversations; the whole test took {:?}",
        began.elapsed()
    );
}
