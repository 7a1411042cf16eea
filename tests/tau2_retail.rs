//! `sage run --suite tau2-retail` as a user runs it, offline: the simulated agents' profiles move
//! the pass rate as tau2 grades it, a resumed run plays only the rest and scores the same, and
//! `--plan` counts the run before it spends. The same run through the distributed mode (two
//! workers, an aggregator, every model call through the broker) scores the same.

mod common;

use common::cluster::{Nats, Sage, http_get, wait_status};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const CONFIG: &str = r#"models:
  - {name: careful, provider: simulated, sim: {kind: tau2_agent, wrong_argument: 0.0, skip: 0.0}}
  - {name: sloppy, provider: simulated, sim: {kind: tau2_agent, wrong_argument: 0.5, skip: 0.2}}
  - {name: user, provider: simulated, sim: {kind: tau2_customer}}
  - {name: judge, provider: simulated, sim: {kind: tau2_judge}}
agents: [careful, sloppy]
customer_model: user
judge_models: [judge]
tasks: ["0", "1", "2", "3", "4", "5", "6", "7"]
repeats: 2
"#;

fn sage(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(args)
        .output()
        .expect("run sage")
}

/// The one run folder under `out`.
fn run_folder(out: &Path) -> PathBuf {
    std::fs::read_dir(out)
        .unwrap()
        .next()
        .expect("a run folder")
        .unwrap()
        .path()
}

fn summary(run: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap()
}

fn agent<'a>(summary: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    summary["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == name)
        .unwrap_or_else(|| panic!("no agent {name} in {summary}"))
}

#[test]
fn the_pass_rate_follows_the_agents_profile_and_a_resumed_run_scores_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tau2.yaml");
    std::fs::write(&config, CONFIG).unwrap();
    let out = dir.path().join("out");
    let args = [
        "run",
        "--suite",
        "tau2-retail",
        "--quiet",
        "--config",
        config.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    let run = sage(&args);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let folder = run_folder(&out);
    let first = summary(&folder);
    // The careful agent calls every gold action right: every simulation passes (the database
    // check on every task, the NL assertions after it), so pass^2 is 1 too.
    let careful = agent(&first, "careful");
    assert_eq!(careful["simulations"], 16);
    assert_eq!(careful["pass_hat_k"], serde_json::json!([1.0, 1.0]));
    assert_eq!(careful["db_misses"], 0);
    // The sloppy one spoils or skips mutating calls: the database check fails where it did.
    let sloppy = agent(&first, "sloppy");
    let pass1 = sloppy["pass_hat_k"][0].as_f64().unwrap();
    assert!(pass1 < 0.75, "sloppy pass^1 {pass1}");
    assert!(sloppy["db_misses"].as_u64().unwrap() >= 4, "{sloppy}");
    assert!(sloppy["pass_hat_k"][1].as_f64().unwrap() <= pass1);
    // Ranked best first, and printed.
    assert_eq!(first["agents"][0]["agent"], "careful");
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        stdout.contains("| careful | 8 | 16 | 1.000 | 1.000 |"),
        "{stdout}"
    );

    // Every record is graded as its own messages say: a tool message answers each call, and a
    // simulation with reward 1 passed the database check.
    let records = std::fs::read_to_string(folder.join("tau2.jsonl")).unwrap();
    let lines: Vec<&str> = records.lines().collect();
    assert_eq!(lines.len(), 32);
    for line in &lines {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(r["termination"], "user_stop", "{line}");
        let messages = r["messages"].as_array().unwrap();
        let calls = messages
            .iter()
            .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
            .count();
        let answers = messages.iter().filter(|m| m["role"] == "tool").count();
        assert_eq!(calls, answers);
        if r["reward"]["reward"] == 1.0 {
            assert_eq!(r["reward"]["db_match"], true);
        }
    }

    // Resumed after a crash that kept 10 records: the other 22 are played, the scores equal.
    std::fs::write(folder.join("tau2.jsonl"), lines[..10].join("\n") + "\n").unwrap();
    std::fs::remove_file(folder.join("summary.json")).unwrap();
    let resumed = sage(&[
        "run",
        "--suite",
        "tau2-retail",
        "--quiet",
        "--resume",
        folder.to_str().unwrap(),
    ]);
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert!(String::from_utf8_lossy(&resumed.stderr).contains("(22 to play)"));
    assert_eq!(summary(&folder), first);
    let records = std::fs::read_to_string(folder.join("tau2.jsonl")).unwrap();
    assert_eq!(records.lines().count(), 32);

    // `sage report DIR` rebuilds the same scores from the records.
    std::fs::remove_file(folder.join("summary.json")).unwrap();
    let report = sage(&["report", folder.to_str().unwrap()]);
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    assert_eq!(summary(&folder), first);
    assert!(
        String::from_utf8_lossy(&report.stdout).contains("| careful | 8 | 16 | 1.000 | 1.000 |")
    );
    // With `--html --out FILE`, the page alone is written there, nothing into the folder.
    let page = dir.path().join("elsewhere.html");
    std::fs::remove_file(folder.join("summary.json")).unwrap();
    let html = std::fs::read(folder.join("report.html")).unwrap();
    let report = sage(&[
        "report",
        folder.to_str().unwrap(),
        "--html",
        "--out",
        page.to_str().unwrap(),
    ]);
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    assert_eq!(std::fs::read(&page).unwrap(), html);
    assert!(!folder.join("summary.json").exists());
    std::fs::write(folder.join("summary.json"), first.to_string()).unwrap();

    // `sage show DIR ID`: what the agent did there and how it was graded.
    let show = sage(&["show", folder.to_str().unwrap(), "0/careful/r0"]);
    assert!(
        show.status.success(),
        "{}",
        String::from_utf8_lossy(&show.stderr)
    );
    let text = String::from_utf8_lossy(&show.stdout);
    assert!(
        text.contains("[1 agent calls] exchange_delivered_order_items("),
        "{text}"
    );
    assert!(
        text.contains("ended: user_stop\nreward: 1 (database check: pass)"),
        "{text}"
    );

    export_round_trip(&folder, dir.path());
}

/// `sage export --format tau2`: tau2's results JSON holding the run's tasks and every
/// simulation; each simulation's tool calls, read back from its messages and replayed on a fresh
/// database, give its recorded database verdict; and tau2's own evaluator, on the reference's
/// code, loads the file, replays every tool call strictly (each recorded answer must equal its
/// tools' answer) and gives the same verdict on every simulation.
fn export_round_trip(folder: &Path, scratch: &Path) {
    let results = scratch.join("results.json");
    let out = sage(&[
        "export",
        folder.to_str().unwrap(),
        "--format",
        "tau2",
        "--out",
        results.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The SAGE formats' selection options are refused, not silently ignored.
    let refused = sage(&[
        "export",
        folder.to_str().unwrap(),
        "--format",
        "tau2",
        "--dedup",
    ]);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("--format tau2 writes every simulation")
    );
    let exported: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    assert_eq!(
        exported["info"]["environment_info"]["domain_name"],
        "retail"
    );
    assert_eq!(exported["tasks"].as_array().unwrap().len(), 8);
    let simulations = exported["simulations"].as_array().unwrap();
    assert_eq!(simulations.len(), 32);
    let world = sage_core::tau2::run::World::bundled();
    let mut ours = serde_json::Map::new();
    for s in simulations {
        let task = world.task(s["task_id"].as_str().unwrap()).unwrap();
        let calls: Vec<(String, serde_json::Value)> = s["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "assistant")
            .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_string(),
                    c["arguments"].clone(),
                )
            })
            .collect();
        let replayed = sage_core::tau2::db_check(&world.db, task, &calls).db_match;
        let recorded = &s["reward_info"]["db_check"]["db_match"];
        assert_eq!(recorded, &serde_json::Value::Bool(replayed), "{}", s["id"]);
        ours.insert(s["id"].as_str().unwrap().into(), recorded.clone());
    }
    assert!(ours.values().any(|v| v == false) && ours.values().any(|v| v == true));

    // tau2's own evaluator (its code from the reference folder, in a Python 3.12+ environment
    // that .ci/run makes).
    let Some(archive) = reference_archive() else {
        eprintln!(
            "skipped: tau2's own evaluator: the reference folder (../shared/reference/tau2-bench, or SAGE_TAU2_REFERENCE) is absent"
        );
        return;
    };
    let venv = std::env::var_os("SAGE_TAU2_VENV").map_or_else(
        || PathBuf::from(std::env::var("HOME").expect("HOME")).join(".cache/sage-ci/tau2-venv"),
        PathBuf::from,
    );
    let python = venv.join("bin/python");
    assert!(
        python.exists(),
        "{} is missing: a Python 3.12+ venv with tau2's dependencies (.ci/run makes it; PROVENANCE.md in the reference folder says how)",
        python.display()
    );
    let code = scratch.join("tau2-reference");
    std::fs::create_dir_all(&code).unwrap();
    let untar = Command::new("tar")
        .arg("xzf")
        .arg(&archive)
        .arg("-C")
        .arg(&code)
        .status()
        .unwrap();
    assert!(untar.success());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/tau2-retail/evaluate.py");
    let graded = Command::new(&python)
        .arg(&script)
        .arg(&results)
        .env("PYTHONPATH", code.join("src"))
        .env("TAU2_DATA_DIR", code.join("data"))
        .env("LOGURU_LEVEL", "ERROR")
        .output()
        .unwrap();
    assert!(
        graded.status.success(),
        "tau2's evaluator refused the export:\n{}",
        String::from_utf8_lossy(&graded.stderr)
    );
    let theirs: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&graded.stdout).unwrap();
    assert_eq!(theirs, ours);
}

/// The tau2-bench reference archive, when the reference folder is here.
fn reference_archive() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let folders = [
        std::env::var_os("SAGE_TAU2_REFERENCE").map(PathBuf::from),
        Some(root.join("../shared/reference/tau2-bench")),
        Some(PathBuf::from("/work/shared/reference/tau2-bench")),
    ];
    folders
        .into_iter()
        .flatten()
        .map(|f| f.join("tau2-bench-a2c0247.tar.gz"))
        .find(|a| a.exists())
}

#[test]
fn the_plan_counts_the_run_before_it_spends() {
    let out = sage(&["run", "--suite", "tau2-retail", "--plan", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The default run: 114 tasks, two simulated agents, two trials each.
    assert_eq!(plan["simulations"], 114 * 2 * 2);
    assert_eq!(plan["model_calls_at_most"]["judge"], 456);
}

#[test]
fn a_task_that_is_not_retails_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tau2.yaml");
    std::fs::write(&config, CONFIG.replace("\"7\"]", "\"7\", \"999\"]")).unwrap();
    let out = sage(&[
        "run",
        "--suite",
        "tau2-retail",
        "--plan",
        "--config",
        config.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("task \"999\" is not a tau2 retail task"),
        "{stderr}"
    );
}

/// The simulation ids of a tau2.jsonl, asserting none is there twice.
fn simulation_ids(file: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(file).expect("tau2.jsonl");
    let mut ids = BTreeSet::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).expect("a record");
        let id = v["job"]["dialogue_id"].as_str().expect("an id").to_string();
        assert!(ids.insert(id.clone()), "{id} stored twice");
    }
    ids
}

/// The tau2 retail suite on the distributed mode's lifecycle: a worker that drives the
/// simulations and serves the agents under test, another that serves the user simulator and
/// the judge, every model call through the broker, and an aggregator. The summary equals the
/// embedded run's, every simulation is stored once, `sage report` and `sage show` read the
/// aggregator's folder; a run cancelled mid-way resumes to its end, each simulation stored once.
#[test]
fn a_tau2_sweep_through_two_workers_equals_the_embedded_run() {
    let dir = common::cluster::test_dir();
    let config = dir.path().join("tau2.yaml");
    std::fs::write(&config, CONFIG).unwrap();
    let config = config.to_str().unwrap();
    let embedded = dir.path().join("embedded");
    let run = sage(&[
        "run",
        "--suite",
        "tau2-retail",
        "--quiet",
        "--config",
        config,
        "--run-id",
        "tau2",
        "--out",
        embedded.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let expected = std::fs::read_to_string(embedded.join("tau2/summary.json")).unwrap();

    let nats = Nats::start(dir.path());
    let url = nats.url();
    let out = dir.path().join("results");
    let common = ["--nats", url.as_str(), "--metrics-addr", "127.0.0.1:0"];
    // Four simulations at once: the run cancelled below has some left to cancel.
    let mut workers = Sage::split_workers(dir.path(), &common, &["--concurrency", "4"]);
    let _aggregator = Sage::aggregator(dir.path(), &out, &common);
    let sweep = |args: &[&str]| {
        let mut all = vec!["sweep", "--suite", "tau2-retail", "--nats", url.as_str()];
        all.extend_from_slice(args);
        sage(&all)
    };
    let submitted = sweep(&["--config", config, "--run-id", "tau2"]);
    assert!(
        submitted.status.success(),
        "{}",
        String::from_utf8_lossy(&submitted.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&submitted.stdout).trim(), "tau2");
    let status = wait_status(&url, "tau2", Duration::from_secs(180), |s| {
        s["state"] == "complete"
    });
    assert_eq!(status["jobs"].as_u64(), Some(32));
    assert_eq!(status["stored"].as_u64(), Some(32));
    assert_eq!(status["infra_errors"].as_u64(), Some(0));
    assert!(
        status["leaderboard"]
            .as_str()
            .is_some_and(|t| t.contains("| careful | 8 | 16 | 1.000 | 1.000 |")),
        "{status}"
    );
    let folder = out.join("tau2");
    assert_eq!(simulation_ids(&folder.join("tau2.jsonl")).len(), 32);
    // The aggregator wrote the HTML report too, and says where.
    assert_eq!(
        status["report"].as_str().map(PathBuf::from),
        Some(folder.join("report.html")),
        "{status}"
    );
    let page = std::fs::read_to_string(folder.join("report.html")).unwrap();
    assert!(page.contains("id=\"tau2-leaderboard-table\""));
    let summary = std::fs::read_to_string(folder.join("summary.json")).unwrap();
    assert!(
        summary == expected,
        "the distributed summary differs from the embedded one:\n{summary}\n{expected}"
    );
    // The aggregator's folder is a run folder like the embedded one.
    let report = sage(&["report", folder.to_str().unwrap()]);
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let show = sage(&["show", folder.to_str().unwrap(), "0/careful/r0"]);
    assert!(
        String::from_utf8_lossy(&show.stdout).contains("reward: 1 (database check: pass)"),
        "{}",
        String::from_utf8_lossy(&show.stderr)
    );
    // The agents were called on the driver, the user simulator and the judge on the other
    // worker, through the broker.
    let called = |worker: &Sage, role: &str| {
        let (code, body) = http_get(&worker.metrics_addr(), "/metrics");
        assert_eq!(code, 200);
        body.lines().any(|l| {
            l.starts_with("sage_model_requests_total{") && l.contains(&format!("role=\"{role}\""))
        })
    };
    assert!(called(&workers[0], "service") && !called(&workers[0], "user"));
    assert!(called(&workers[1], "user") && called(&workers[1], "judge"));
    assert!(!called(&workers[1], "service"));

    // Cancelled mid-run, then resumed (without a budget: the suite has none): every simulation
    // stored once, and the scores of the whole run.
    let slow = CONFIG.replace(
        "kind: tau2_agent,",
        "kind: tau2_agent, latency: {uniform_ms: [50, 100]},",
    );
    let slow_config = dir.path().join("slow.yaml");
    std::fs::write(&slow_config, slow).unwrap();
    let slow_config = slow_config.to_str().unwrap();
    assert!(
        sweep(&["--config", slow_config, "--run-id", "tau2-cut"])
            .status
            .success()
    );
    wait_status(&url, "tau2-cut", Duration::from_secs(120), |s| {
        s["stored"].as_u64().unwrap_or(0) >= 4
    });
    let cancel = sage(&["sweep", "--nats", &url, "--cancel", "tau2-cut"]);
    assert!(
        cancel.status.success(),
        "{}",
        String::from_utf8_lossy(&cancel.stderr)
    );
    let status = wait_status(&url, "tau2-cut", Duration::from_secs(60), |s| {
        s["state"] == "cancelled" || s["state"] == "complete"
    });
    assert_eq!(
        status["state"], "cancelled",
        "the run ended before it was cancelled: {status}"
    );
    let budget = sage(&[
        "sweep",
        "--nats",
        &url,
        "--resume",
        "tau2-cut",
        "--max-cost-usd",
        "1",
    ]);
    assert!(!budget.status.success());
    assert!(
        String::from_utf8_lossy(&budget.stderr).contains("tau2-retail run has no cost budget"),
        "{}",
        String::from_utf8_lossy(&budget.stderr)
    );
    let resumed = sage(&["sweep", "--nats", &url, "--resume", "tau2-cut"]);
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    wait_status(&url, "tau2-cut", Duration::from_secs(120), |s| {
        s["state"] == "complete"
    });
    assert_eq!(simulation_ids(&out.join("tau2-cut/tau2.jsonl")).len(), 32);
    let cut = std::fs::read_to_string(out.join("tau2-cut/summary.json")).unwrap();
    let careful = |text: &str| {
        let v: serde_json::Value = serde_json::from_str(text).unwrap();
        agent(&v, "careful").clone()
    };
    assert_eq!(careful(&cut)["pass_hat_k"], serde_json::json!([1.0, 1.0]));
    for worker in &mut workers {
        assert_eq!(
            worker.terminate(Duration::from_secs(30)),
            Some(0),
            "{}",
            worker.log_text()
        );
    }
}

/// The provider limits come with the lifecycle: an agent under test on a provider (a mock that
/// enforces 240 requests a minute and answers 429 past it, tests/common/provider.rs) whose
/// limit is configured is held to it through a whole tau2 run: no call refused, the calls paced
/// at the limit, every simulation stored without an infrastructure error. (Without the limit
/// configured, the first second's calls are refused.)
#[test]
fn a_tau2_agent_is_held_to_its_providers_limit() {
    use common::provider::{self, ProviderSpec};
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    let spec = ProviderSpec::keys(
        &[("k-tau2", 240, u32::MAX)],
        true,
        Duration::from_millis(10),
    );
    let (server, provider) = rt.block_on(provider::start(spec));
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tau2.yaml");
    std::fs::write(
        &config,
        format!(
            r#"models:
  - {{name: limited, provider: openai, base_url: "{}/v1", api_key_env: SAGE_TEST_KEY_TAU2, requests_per_minute: 240, retries: {{max_attempts: 2, base_delay_ms: 10, max_delay_ms: 20}}}}
  - {{name: user, provider: simulated, sim: {{kind: tau2_customer}}}}
  - {{name: judge, provider: simulated, sim: {{kind: tau2_judge}}}}
agents: [limited]
customer_model: user
judge_models: [judge]
tasks: ["0", "1", "2", "3", "4", "5"]
repeats: 1
max_turns: 4
concurrency: 6
"#,
            server.uri()
        ),
    )
    .unwrap();
    let out = dir.path().join("results");
    let run = Command::new(env!("CARGO_BIN_EXE_sage"))
        .env("SAGE_TEST_KEY_TAU2", "k-tau2")
        .args(["run", "--suite", "tau2-retail", "--quiet", "--config"])
        .arg(&config)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run sage");
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let seen = &provider.seen()["k-tau2"];
    assert!(seen.len() >= 12, "{} agent calls", seen.len());
    assert_eq!(
        provider::refused_share(seen),
        0.0,
        "calls refused: {seen:?}"
    );
    // Paced at the limit: the calls after the first second's burst come at most 4 a second.
    let first = seen.iter().map(|s| s.at).min().unwrap();
    let last = seen.iter().map(|s| s.at).max().unwrap();
    let paced = (seen.len() as f64 - 4.0) / (last - first).as_secs_f64() * 60.0;
    assert!(paced <= 252.0, "{paced} calls a minute");
    let folder = run_folder(&out);
    let records = std::fs::read_to_string(folder.join("tau2.jsonl")).unwrap();
    assert_eq!(records.lines().count(), 6);
    for line in records.lines() {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(record["infra_error"].is_null(), "{line}");
    }
}

/// `sage report A --compare B` of two tau2 runs: per agent, the pass rate over the tasks both
/// ran, paired by task, with its interval; a change is claimed only beyond the noise (the agent
/// made careful is better; the agent that did not change is not called anything), and
/// `--fail-on-regression` exits 3 the other way round.
#[test]
fn comparing_two_tau2_runs_claims_only_a_real_change() {
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, sloppy: &str| {
        let config = dir.path().join(format!("{name}.yaml"));
        let tasks: Vec<String> = (0..24).map(|t| format!("\"{t}\"")).collect();
        std::fs::write(
            &config,
            format!(
                r#"models:
  - {{name: steady, provider: simulated, sim: {{kind: tau2_agent, wrong_argument: 0.0, skip: 0.0}}}}
  - {{name: changed, provider: simulated, sim: {{kind: tau2_agent, {sloppy}}}}}
  - {{name: user, provider: simulated, sim: {{kind: tau2_customer}}}}
  - {{name: judge, provider: simulated, sim: {{kind: tau2_judge}}}}
agents: [steady, changed]
customer_model: user
judge_models: [judge]
tasks: [{}]
repeats: 1
"#,
                tasks.join(", ")
            ),
        )
        .unwrap();
        let out = sage(&[
            "run",
            "--suite",
            "tau2-retail",
            "--quiet",
            "--run-id",
            name,
            "--config",
            config.to_str().unwrap(),
            "--out",
            dir.path().to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        dir.path().join(name)
    };
    let before = run("before", "wrong_argument: 0.6, skip: 0.3");
    let after = run("after", "wrong_argument: 0.0, skip: 0.0");
    let compared = sage(&[
        "report",
        after.to_str().unwrap(),
        "--compare",
        before.to_str().unwrap(),
        "--format",
        "json",
    ]);
    assert!(
        compared.status.success(),
        "{}",
        String::from_utf8_lossy(&compared.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&compared.stdout).unwrap();
    let row = |agent: &str| {
        json["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["agent"] == agent)
            .cloned()
            .unwrap_or_else(|| panic!("{json}"))
    };
    let changed = row("changed");
    assert_eq!(changed["cases"], 24);
    assert_eq!(changed["current"], 1.0);
    assert!(changed["baseline"].as_f64().unwrap() < 0.6, "{changed}");
    assert!(changed["ci_low"].as_f64().unwrap() > 0.0, "{changed}");
    assert_eq!(changed["verdict"], "better", "{changed}");
    let steady = row("steady");
    assert_eq!(
        (steady["delta"].as_f64(), &steady["verdict"]),
        (Some(0.0), &serde_json::json!("no_change"))
    );
    // The other way round, a regression: exit 3 with --fail-on-regression, the text says so.
    let back = sage(&[
        "report",
        before.to_str().unwrap(),
        "--compare",
        after.to_str().unwrap(),
        "--fail-on-regression",
    ]);
    assert_eq!(
        back.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&back.stderr)
    );
    let text = String::from_utf8_lossy(&back.stdout);
    assert!(
        text.contains("worse") && text.contains("no change"),
        "{text}"
    );
}
