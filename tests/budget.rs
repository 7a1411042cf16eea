//! Cost budgets (`max_cost_usd` of a run and of a model under test, docs/run-config.md): a run
//! stops starting dialogues at its budget and keeps those finished, a model's budget stops that
//! model only, a resume with a higher budget plays exactly the dialogues not started and ends
//! with the summary of an unbudgeted run, and a wrong budget is refused with a clear message.
//! The simulated models report token counts, so with a `price` their calls cost money.

mod common;

use common::cluster::{Nats, Sage, wait_status};
use common::{fresh_dir, sage, sage_ok};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// Two models under test, priced, one scenario; `concurrency: 1`, so the dialogues are played
/// one after the other in the plan's order (each case with `a`, then with `b`) and where a
/// budget stops is exact.
fn config(extra_a: &str, extra: &str) -> String {
    format!(
        r#"
models:
  - {{name: a, provider: simulated, sim: {{kind: agent, profile: strong}}, price: {{input_per_million: 2, output_per_million: 8}}{extra_a}}}
  - {{name: b, provider: simulated, sim: {{kind: agent, profile: weak}}, price: {{input_per_million: 1, output_per_million: 4}}}}
  - {{name: user, provider: simulated, sim: {{kind: user}}, price: {{input_per_million: 0.5, output_per_million: 1}}}}
  - {{name: judge, provider: simulated, sim: {{kind: judge}}, price: {{input_per_million: 3, output_per_million: 6}}}}
service_models: [a, b]
user_model: user
judge_models: [judge]
scenarios: [scenarios/telecom_package.yaml]
dialogues_per_scenario: 4
min_per_route: 0
max_turns: 4
seed: 7
concurrency: 1
{extra}"#
    )
}

/// Writes `text` as `name` in `dir`; its path.
fn write_config(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// The records of a run folder, in the order written.
fn records(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("dialogues.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn ids(records: &[Value]) -> Vec<String> {
    records
        .iter()
        .map(|r| r["job"]["dialogue_id"].as_str().unwrap().to_string())
        .collect()
}

fn cost(record: &Value) -> f64 {
    record["cost_usd"].as_f64().unwrap()
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// `sage run` of `config` as run `id` under `out`, with `flags`; its standard output.
fn run(out: &Path, config: &str, id: &str, flags: &[&str]) -> String {
    let out = out.to_str().unwrap();
    let mut args = vec![
        "run", "--config", config, "--out", out, "--run-id", id, "--quiet",
    ];
    args.extend_from_slice(flags);
    sage_ok(&args)
}

/// The unbudgeted reference run (8 dialogues: 4 cases x 2 models) in `tmp/whole`.
fn whole(tmp: &Path) -> Vec<Value> {
    let config = write_config(tmp, "run.yaml", &config("", ""));
    run(tmp, &config, "whole", &[]);
    let records = records(&tmp.join("whole"));
    assert_eq!(records.len(), 8);
    assert!(records.iter().all(|r| cost(r) > 0.0), "priced calls cost");
    records
}

/// The summary without its budget section.
fn scores(summary: &Value) -> Value {
    let mut s = summary.clone();
    s.as_object_mut().unwrap().remove("budget");
    s
}

#[test]
fn a_run_budget_stops_early_keeps_the_dialogues_and_a_resume_completes_the_run() {
    let tmp = fresh_dir("budget-run");
    let reference = whole(&tmp);
    // Without a budget nothing changes: no `budget` in summary.json, none in manifest.json.
    let whole_dir = tmp.join("whole");
    let whole_summary = json(&whole_dir.join("summary.json"));
    assert!(whole_summary.get("budget").is_none());
    let manifest = std::fs::read_to_string(whole_dir.join("manifest.json")).unwrap();
    assert!(!manifest.contains("max_cost_usd"), "{manifest}");

    // A budget reached by the third dialogue (and not by the second): three are played.
    let spent: Vec<f64> = reference
        .iter()
        .scan(0.0, |sum, r| {
            *sum += cost(r);
            Some(*sum)
        })
        .collect();
    let budget = (spent[1] + spent[2]) / 2.0;
    let budget_flag = budget.to_string();
    let config = write_config(&tmp, "run.yaml", &config("", ""));
    let stdout = run(&tmp, &config, "cut", &["--max-cost-usd", &budget_flag]);
    let cut = tmp.join("cut");
    let played = records(&cut);
    assert_eq!(ids(&played), ids(&reference)[..3]);
    let expected = format!(
        "budget reached: spent ${:.4} of ${budget:.4} (run); 5 dialogues not started; resume with `sage run --resume {} --max-cost-usd ",
        spent[2],
        cut.display()
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("budget reached"))
        .unwrap_or_else(|| panic!("no budget line in:\n{stdout}"));
    assert!(line.starts_with(&expected), "{line}\nexpected {expected}");
    let suggested: f64 = line[expected.len()..]
        .trim_end_matches('`')
        .parse()
        .unwrap();
    assert!(suggested > budget, "{line}");

    let summary = json(&cut.join("summary.json"));
    assert_eq!(summary["dialogues"], 3);
    let b = &summary["budget"];
    assert_eq!(b["max_cost_usd"].as_f64(), Some(budget));
    assert!(
        (b["spent_usd"].as_f64().unwrap() - spent[2]).abs() < 1e-9,
        "{b}"
    );
    assert_eq!(b["reached"], true);
    assert_eq!(b["not_started"], 5);
    // Played in plan order: case 0 with a and b, case 1 with a.
    assert_eq!(b["models"]["a"]["dialogues"], 2);
    assert_eq!(b["models"]["a"]["not_started"], 2);
    assert_eq!(b["models"]["b"]["dialogues"], 1);
    assert_eq!(b["models"]["b"]["not_started"], 3);
    assert_eq!(b["models"]["a"]["reached"], false);
    assert!(b["models"]["a"].get("max_cost_usd").is_none());
    let leaderboard = std::fs::read_to_string(cut.join("leaderboard.md")).unwrap();
    assert!(
        leaderboard.contains("5 dialogues not started, 3 played"),
        "{leaderboard}"
    );
    assert!(cut.join("report.html").exists());

    // Resumed with the same budget: nothing more is played.
    let out = sage_ok(&["run", "--resume", cut.to_str().unwrap(), "--quiet"]);
    assert!(out.contains("5 dialogues not started"), "{out}");
    assert_eq!(records(&cut).len(), 3);

    // Resumed with a higher budget: exactly the five not started are played, and the run
    // equals the unbudgeted one.
    let out = sage_ok(&[
        "run",
        "--resume",
        cut.to_str().unwrap(),
        "--quiet",
        "--max-cost-usd",
        "1000",
    ]);
    assert!(
        out.contains(&format!(
            "budget: spent ${:.4} of $1000.0000 (run); every dialogue played",
            spent[7]
        )),
        "{out}"
    );
    let all = records(&cut);
    assert_eq!(&all[..3], &played[..], "the kept dialogues are untouched");
    let mut after = ids(&all);
    let mut expected_ids = ids(&reference);
    after.sort();
    expected_ids.sort();
    assert_eq!(after, expected_ids, "every dialogue once");
    let manifest = json(&cut.join("manifest.json"));
    assert_eq!(manifest["config"]["max_cost_usd"], 1000.0);
    let summary = json(&cut.join("summary.json"));
    assert_eq!(summary["budget"]["not_started"], 0);
    assert_eq!(summary["budget"]["reached"], false);
    assert_eq!(
        scores(&summary),
        whole_summary,
        "the same summary as unbudgeted"
    );
    // `sage report` rebuilds the same summary, budget included, from the records.
    sage_ok(&["report", cut.to_str().unwrap()]);
    assert_eq!(json(&cut.join("summary.json")), summary);
}

#[test]
fn a_model_budget_stops_that_model_only_and_a_resume_lifts_it() {
    let tmp = fresh_dir("budget-model");
    let reference = whole(&tmp);
    // Model a's budget is reached by its second dialogue (and not by its first).
    let costs_a: Vec<f64> = reference
        .iter()
        .filter(|r| r["job"]["service_model"] == "a")
        .map(cost)
        .collect();
    let budget = costs_a[0] + costs_a[1] / 2.0;
    let config = write_config(
        &tmp,
        "model.yaml",
        &config(&format!(", max_cost_usd: {budget}"), ""),
    );
    let stdout = run(&tmp, &config, "cut", &[]);
    let cut = tmp.join("cut");
    let played = records(&cut);
    let per = |model: &str| {
        played
            .iter()
            .filter(|r| r["job"]["service_model"] == model)
            .count()
    };
    assert_eq!((per("a"), per("b")), (2, 4));
    assert!(
        stdout.contains(&format!(
            "budget reached: [model a: ${:.4} of ${budget:.4}]; 2 dialogues not started; resume with `sage run --resume {} --max-cost-usd-per-model a=",
            costs_a[0] + costs_a[1],
            cut.display()
        )),
        "{stdout}"
    );
    let b = &json(&cut.join("summary.json"))["budget"];
    assert!(b.get("max_cost_usd").is_none(), "no run budget: {b}");
    assert_eq!(b["reached"], false);
    assert_eq!(b["not_started"], 2);
    assert_eq!(b["models"]["a"]["max_cost_usd"].as_f64(), Some(budget));
    assert_eq!(b["models"]["a"]["reached"], true);
    assert_eq!(b["models"]["a"]["not_started"], 2);
    assert_eq!(b["models"]["b"]["reached"], false);
    assert_eq!(b["models"]["b"]["dialogues"], 4);
    assert_eq!(b["models"]["b"]["not_started"], 0);

    // The flag lifts model a's budget on resume; the manifest records it.
    let out = sage_ok(&[
        "run",
        "--resume",
        cut.to_str().unwrap(),
        "--quiet",
        "--max-cost-usd-per-model",
        "a=50",
    ]);
    assert!(out.contains("every dialogue played"), "{out}");
    assert_eq!(records(&cut).len(), 8);
    let manifest = json(&cut.join("manifest.json"));
    assert_eq!(manifest["config"]["models"][0]["max_cost_usd"], 50.0);
    assert_eq!(
        scores(&json(&cut.join("summary.json"))),
        json(&tmp.join("whole/summary.json"))
    );
}

#[test]
fn the_dialogues_in_flight_finish_so_the_overshoot_is_bounded_by_the_concurrency() {
    let tmp = fresh_dir("budget-in-flight");
    let reference = whole(&tmp);
    // A budget any one dialogue reaches: the first to finish stops the run, and the other three
    // started with it (concurrency 4) finish and are kept; nothing else starts.
    let cheapest = reference.iter().map(cost).fold(f64::INFINITY, f64::min);
    let budget = (cheapest / 2.0).to_string();
    let config = write_config(&tmp, "run.yaml", &config("", ""));
    let stdout = run(
        &tmp,
        &config,
        "cut",
        &["--max-cost-usd", &budget, "--concurrency", "4"],
    );
    let played = records(&tmp.join("cut"));
    let (mut got, mut first) = (ids(&played), ids(&reference)[..4].to_vec());
    got.sort();
    first.sort();
    assert_eq!(got, first, "the four started first");
    let spent: f64 = played.iter().map(cost).sum();
    assert!(spent > 4.0 * cheapest - 1e-12, "{spent}");
    assert!(stdout.contains("; 4 dialogues not started;"), "{stdout}");
}

/// `sage ARGS` fails; its standard error.
fn refused(args: &[&str]) -> String {
    let out = sage(args);
    assert!(!out.status.success(), "sage {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn wrong_budgets_are_refused_with_the_key_and_what_is_expected() {
    let tmp = fresh_dir("budget-refused");
    let expected = "expected a budget in US dollars above 0 and at most 1000000000";
    for (extra_a, extra, problem) in [
        ("", "max_cost_usd: -1\n", "max_cost_usd is -1"),
        ("", "max_cost_usd: .nan\n", "max_cost_usd is NaN"),
        ("", "max_cost_usd: 0\n", "max_cost_usd is 0"),
        ("", "max_cost_usd: 2e9\n", "max_cost_usd is 2000000000"),
        (", max_cost_usd: -2", "", "model a: max_cost_usd is -2"),
    ] {
        let config = write_config(&tmp, "wrong.yaml", &config(extra_a, extra));
        let err = refused(&["run", "--config", &config, "--out", "/nonexistent"]);
        assert!(
            err.contains(&format!("{config}: {problem}; {expected}")),
            "{err}"
        );
    }
    // A model's budget on a model that is not under test.
    let text = config("", "").replace("sim: {kind: user}", "sim: {kind: user}, max_cost_usd: 1");
    let config = write_config(&tmp, "user.yaml", &text);
    let err = refused(&["run", "--config", &config, "--out", "/nonexistent"]);
    assert!(
        err.contains("model user: max_cost_usd bounds the dialogues of a model under test, and `user` is not in service_models"),
        "{err}"
    );
    // The same from the command line.
    let plain = write_config(&tmp, "plain.yaml", &self::config("", ""));
    let err = refused(&[
        "run",
        "--config",
        &plain,
        "--out",
        "/nonexistent",
        "--max-cost-usd-per-model",
        "judge=1",
    ]);
    assert!(
        err.contains(
            "--max-cost-usd-per-model: `judge` is not a model under test; expected one of: a, b"
        ),
        "{err}"
    );
    let err = refused(&[
        "run",
        "--config",
        &plain,
        "--max-cost-usd-per-model",
        "nobody=1",
    ]);
    assert!(
        err.contains(
            "--max-cost-usd-per-model: `nobody` is not a model under test; expected one of: a, b"
        ),
        "{err}"
    );

    let err = refused(&["run", "--config", &plain, "--max-cost-usd-per-model", "a"]);
    assert!(err.contains("`a`: expected NAME=USD"), "{err}");
    let err = refused(&["run", "--config", &plain, "--max-cost-usd", "0"]);
    assert!(
        err.contains(&format!("command line: max_cost_usd is 0; {expected}")),
        "{err}"
    );
    // A sweep resumed with a configuration is refused before connecting (one resumed without
    // a budget is refused once the run is known not to be cancelled: below, with a cluster).
    let err = refused(&["sweep", "--resume", "r1", "--config", &config]);
    assert!(err.contains("cannot be used with"), "{err}");
    let err = refused(&[
        "sweep",
        "--config",
        &plain,
        "--max-cost-usd-per-model",
        "zz=1",
        "--nats",
        "nats://127.0.0.1:1",
    ]);
    assert!(
        err.contains("--max-cost-usd-per-model: `zz` is not a model under test"),
        "{err}"
    );
    let err = refused(&["run", "--suite", "support-desk", "--max-cost-usd", "1"]);
    assert!(
        err.contains("--max-cost-usd and --max-cost-usd-per-model apply to the SAGE suite"),
        "{err}"
    );
}

/// [`config`] with 24 dialogues, the judge taking 40 ms a call (so that a dialogue takes
/// longer than the aggregator takes to store a record and tell the workers the budget).
fn sweep_config(extra_a: &str) -> String {
    config(extra_a, "")
        .replace("dialogues_per_scenario: 4", "dialogues_per_scenario: 12")
        .replace(
            "sim: {kind: judge}",
            "sim: {kind: judge, latency: {fixed_ms: 40}}",
        )
}

/// The distributed mode against a real nats-server, one worker (one dialogue at a time) and an
/// aggregator: a sweep with a run budget stops early (the dialogues stored kept, the summary's
/// `budget` reached with the rest not started, the jobs not started dropped from the queue);
/// one with a model's budget stops that model only; `sage sweep --resume RUN --max-cost-usd`
/// completes each with the summary of the unbudgeted run. Where a sweep stops is not exact
/// (the worker learns that a budget is reached from the aggregator's status, a few dialogues
/// late at most), so the test has 24 dialogues and stops at the third.
#[test]
fn a_sweep_stops_at_its_budgets_and_a_resume_completes_it() {
    let dir = common::cluster::test_dir();
    let tmp = dir.path();
    let plain = write_config(tmp, "sweep.yaml", &sweep_config(""));
    // The unbudgeted reference, run embedded under each run id the sweeps use.
    let embedded = tmp.join("embedded");
    let mut reference = BTreeMap::new();
    for id in ["d-run", "d-model"] {
        run(&embedded, &plain, id, &[]);
        let recs = records(&embedded.join(id));
        assert_eq!(recs.len(), 24);
        reference.insert(id, recs);
    }
    let ref_run = &reference["d-run"];
    let spent: Vec<f64> = ref_run
        .iter()
        .scan(0.0, |sum, r| {
            *sum += cost(r);
            Some(*sum)
        })
        .collect();
    let budget = ((spent[1] + spent[2]) / 2.0).to_string();

    let nats = Nats::start(tmp);
    let url = nats.url();
    let out = tmp.join("results");
    let common = ["--nats", url.as_str(), "--metrics-addr", "127.0.0.1:0"];
    // Four dialogues at a time: some are in flight when a budget is reached.
    let mut args = vec!["worker", "--concurrency", "4"];
    args.extend(common);
    let _worker = Sage::spawn(tmp, "worker", &args);
    let _aggregator = Sage::aggregator(tmp, &out, &common);

    // The run's budget: reached by the third dialogue, so at least three are stored.
    let followed = sage_ok(&[
        "sweep",
        "--nats",
        &url,
        "--config",
        &plain,
        "--run-id",
        "d-run",
        "--max-cost-usd",
        &budget,
        "--follow",
    ]);
    let done = |s: &Value| s["state"] == "complete";
    let status = wait_status(&url, "d-run", Duration::from_secs(10), done);
    let stored = status["stored"].as_u64().unwrap() as usize;
    assert!((3..24).contains(&stored), "{status}");
    assert_eq!(status["budget"]["reached"], true, "{status}");
    assert_eq!(status["budget"]["not_started"], 24 - stored, "{status}");
    let folder = out.join("d-run");
    let kept = records(&folder);
    assert_eq!(kept.len(), stored);
    // The bound the design promises (docs/run-config.md): the records file is in the order the
    // aggregator stored them; after the one whose cost reached the budget come only the
    // dialogues in flight (one per worker slot, concurrency 4) and the few started while the
    // news travelled to the worker (two at most here).
    let reached_at = kept
        .iter()
        .scan(0.0, |sum, r| {
            *sum += cost(r);
            Some(*sum)
        })
        .position(|sum| sum >= budget.parse::<f64>().unwrap())
        .expect("the stored dialogues reach the budget")
        + 1;
    assert!(
        stored - reached_at <= 6,
        "{} dialogues stored after the budget was reached by the {reached_at}th",
        stored - reached_at
    );
    for r in &kept {
        let same = ref_run.iter().find(|x| x["job"] == r["job"]).unwrap();
        assert_eq!(cost(r), cost(same), "the same dialogue as embedded");
    }
    let summary = json(&folder.join("summary.json"));
    let b = &summary["budget"];
    assert_eq!(b["max_cost_usd"].as_f64(), Some(budget.parse().unwrap()));
    assert_eq!(b["reached"], true);
    assert_eq!(b["not_started"], 24 - stored);
    let total: f64 = kept.iter().map(cost).sum();
    assert!(
        (b["spent_usd"].as_f64().unwrap() - total).abs() < 1e-9,
        "{b}"
    );
    assert!(total >= spent[2] - 1e-12, "{b}");
    // What --follow printed when the run completed is its end: the dialogues in flight when
    // the budget was reached were stored before it, and the jobs not started were dropped,
    // not left in the queue: nothing more comes.
    assert!(
        followed.contains(&format!(
            "budget reached: spent ${total:.4} of ${:.4} (run); {} dialogues not started",
            budget.parse::<f64>().unwrap(),
            24 - stored
        )),
        "{followed}"
    );
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(records(&folder).len(), stored);
    assert_eq!(json(&folder.join("summary.json")), summary);
    let table = sage_ok(&["status", "--nats", &url, "d-run"]);
    let line = table.lines().find(|l| l.starts_with("d-run")).unwrap();
    let columns: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        columns[1..3],
        ["budget", &format!("{stored}/24")],
        "{table}"
    );
    // Resumed without a budget: only a cancelled run resumes so; this one needs a higher one.
    let none = sage(&["sweep", "--nats", &url, "--resume", "d-run"]);
    let err = String::from_utf8_lossy(&none.stderr);
    assert!(!none.status.success());
    assert!(
        err.contains("--resume: expected the budgets to resume with: --max-cost-usd USD and/or --max-cost-usd-per-model NAME=USD (a cancelled run needs none)"),
        "{err}"
    );
    // Resumed with a budget what was spent already reaches: refused, nothing queued.
    let spent_out = sage(&[
        "sweep",
        "--nats",
        &url,
        "--resume",
        "d-run",
        "--max-cost-usd",
        &budget,
    ]);
    let err = String::from_utf8_lossy(&spent_out.stderr);
    assert_eq!(spent_out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "run d-run: the budgets given are already spent, so no dialogue would start (nothing queued): budget reached: spent ${:.4} of ${:.4} (run); {} dialogues not started; resume with `sage sweep --resume d-run --max-cost-usd ",
            total,
            budget.parse::<f64>().unwrap(),
            24 - stored
        )),
        "{err}"
    );
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(records(&folder).len(), stored);
    let status = wait_status(&url, "d-run", Duration::from_secs(10), done);
    assert_eq!(status["resumes"], 0, "{status}");
    // Resumed with a higher budget: the rest is played, each dialogue once, and the summary is
    // the unbudgeted run's.
    let followed = sage_ok(&[
        "sweep",
        "--nats",
        &url,
        "--resume",
        "d-run",
        "--max-cost-usd",
        "1000",
        "--follow",
    ]);
    assert!(
        followed.contains(&format!(
            "budget: spent ${:.4} of $1000.0000 (run); every dialogue played",
            spent[23]
        )),
        "{followed}"
    );
    let all = records(&folder);
    assert_eq!(
        &all[..stored],
        &kept[..],
        "the kept dialogues are untouched"
    );
    let mut got = ids(&all);
    let mut want = ids(ref_run);
    got.sort();
    want.sort();
    assert_eq!(got, want, "every dialogue once");
    assert_eq!(
        json(&folder.join("manifest.json"))["config"]["max_cost_usd"],
        1000.0
    );
    let summary = json(&folder.join("summary.json"));
    assert_eq!(summary["budget"]["not_started"], 0);
    assert_eq!(
        scores(&summary),
        json(&embedded.join("d-run").join("summary.json")),
        "the same summary as unbudgeted"
    );
    // A complete run is not resumed.
    let err = sage(&[
        "sweep",
        "--nats",
        &url,
        "--resume",
        "d-run",
        "--max-cost-usd",
        "2000",
    ]);
    assert!(!err.status.success());
    let stderr = String::from_utf8_lossy(&err.stderr);
    assert!(
        stderr.contains("run d-run is complete: every one of its 24 dialogues is stored"),
        "{stderr}"
    );

    // A model's budget: model a stops after its second dialogue (or a little later), b plays
    // all of its twelve.
    let ref_model = &reference["d-model"];
    let a_costs: Vec<f64> = ref_model
        .iter()
        .filter(|r| r["job"]["service_model"] == "a")
        .map(cost)
        .collect();
    let a_budget = a_costs[0] + a_costs[1] / 2.0;
    let per_model = write_config(
        tmp,
        "per-model.yaml",
        &sweep_config(&format!(", max_cost_usd: {a_budget}")),
    );
    sage_ok(&[
        "sweep", "--nats", &url, "--config", &per_model, "--run-id", "d-model",
    ]);
    let status = wait_status(&url, "d-model", Duration::from_secs(120), done);
    let m = &status["budget"]["models"];
    let a_stored = m["a"]["dialogues"].as_u64().unwrap() as usize;
    assert!((2..12).contains(&a_stored), "{status}");
    assert_eq!(m["a"]["reached"], true, "{status}");
    assert_eq!(m["a"]["not_started"], 12 - a_stored);
    assert_eq!(m["b"]["dialogues"], 12, "{status}");
    assert_eq!(m["b"]["reached"], false);
    assert_eq!(status["budget"]["reached"], false);
    assert_eq!(status["stored"], 12 + a_stored);
    sage_ok(&[
        "sweep",
        "--nats",
        &url,
        "--resume",
        "d-model",
        "--max-cost-usd-per-model",
        "a=1000",
        "--follow",
    ]);
    let folder = out.join("d-model");
    assert_eq!(records(&folder).len(), 24);
    let summary = json(&folder.join("summary.json"));
    assert_eq!(summary["budget"]["models"]["a"]["max_cost_usd"], 1000.0);
    assert_eq!(summary["budget"]["not_started"], 0);
    assert_eq!(
        scores(&summary),
        json(&embedded.join("d-model").join("summary.json")),
        "the same summary as unbudgeted"
    );
}
