//! One definition of a dialogue with an infrastructure error
//! (`DialogueRecord::had_infra_error`: some turn recorded one, whether the dialogue went on or
//! ended on it), counted alike by `sage run`'s closing line and `sage status` (the aggregator),
//! on a run where judges fail on some turns and the dialogues go on. The aggregator lets go of
//! the folder of a run it completed: no `.lock` is left in it.

mod common;

use common::cluster::{Nats, Sage, wait_status};
use common::sage_ok;
use sage::protocol::{DialogueEnd, DialogueRecord};
use sage::store::RunDir;
use std::path::Path;
use std::time::Duration;

/// Two scenarios, one agent, one judge that answers nothing usable on about one call in five
/// (with one attempt, such a judged turn is not scored: an infrastructure error), and a
/// customer that never fails: the dialogues go on past the failed turns.
fn write_config(dir: &Path) -> String {
    let path = dir.join("run.yaml");
    std::fs::write(
        &path,
        "models:
  - {name: agent, provider: simulated, sim: {kind: agent, profile: balanced}}
  - {name: user, provider: simulated, sim: {kind: user}}
  - {name: judge, provider: simulated, sim: {kind: judge, garbage_rate: 0.2}}
service_models: [agent]
user_model: user
judge_models: [judge]
judge_turns: every
content_attempts: 1
scenarios: [scenarios/telecom_package.yaml, scenarios/airline_refund.yaml]
dialogues_per_scenario: 6
min_per_route: 0
max_turns: 6
seed: 3
",
    )
    .expect("config");
    path.display().to_string()
}

/// The number before `what` in `text` (`12 dialogues had ...` -> 12).
fn count_before(text: &str, what: &str) -> Option<usize> {
    let at = text.find(what)?;
    text[..at].split_whitespace().last()?.parse().ok()
}

#[test]
fn sage_run_and_sage_status_count_the_same_infrastructure_errors() {
    let dir = common::cluster::test_dir();
    let config = write_config(dir.path());

    // Embedded.
    let embedded = dir.path().join("embedded");
    let o = common::sage(&[
        "run",
        "--config",
        &config,
        "--out",
        &embedded.display().to_string(),
        "--run-id",
        "infra",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let said = String::from_utf8_lossy(&o.stderr).into_owned();
    let printed = count_before(&said, "dialogues had an infrastructure error").unwrap_or(0);
    let records: Vec<DialogueRecord> = RunDir::open(&embedded.join("infra"))
        .unwrap()
        .read_dialogues()
        .unwrap();
    let touched = records.iter().filter(|r| r.had_infra_error()).count();
    let went_on = records
        .iter()
        .filter(|r| {
            r.end != DialogueEnd::InfraError && r.turns.iter().any(|t| t.infra_error.is_some())
        })
        .count();
    assert!(
        went_on > 0 && touched < records.len(),
        "the run needs dialogues that went on after an infrastructure error ({went_on} of {})",
        records.len()
    );
    assert_eq!(printed, touched, "{said}");

    // Distributed: the aggregator's status counts the same dialogues.
    let nats = Nats::start(dir.path());
    let url = nats.url();
    let out = dir.path().join("results");
    let common_args = ["--nats", url.as_str(), "--metrics-addr", "127.0.0.1:0"];
    let mut worker_args = vec!["worker"];
    worker_args.extend(common_args);
    let _worker = Sage::spawn(dir.path(), "worker", &worker_args);
    let _aggregator = Sage::aggregator(dir.path(), &out, &common_args);
    sage_ok(&[
        "sweep", "--nats", &url, "--config", &config, "--run-id", "infra",
    ]);
    let status = wait_status(&url, "infra", Duration::from_secs(240), |s| {
        s["state"] == "complete"
    });
    assert_eq!(
        status["infra_errors"].as_u64(),
        Some(touched as u64),
        "{status}"
    );
    let table = sage_ok(&["status", "--nats", &url, "infra"]);
    let row = table
        .lines()
        .find(|l| l.starts_with("infra "))
        .unwrap_or_else(|| panic!("no row for the run:\n{table}"));
    let columns: Vec<&str> = row.split_whitespace().collect();
    // run, state, dialogues, turns, infra, updated
    assert_eq!(columns[4], touched.to_string(), "{table}");
    // The same dialogues, and the folder of the completed run is let go.
    let folder = out.join("infra");
    let stored = RunDir::open(&folder).unwrap().read_dialogues().unwrap();
    assert_eq!(
        stored.iter().filter(|r| r.had_infra_error()).count(),
        touched
    );
    assert!(
        !folder.join(".lock").exists(),
        "the aggregator left a .lock in the completed run's folder"
    );
    drop(nats);
}
