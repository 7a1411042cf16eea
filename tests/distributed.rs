//! The distributed mode against real processes: a nats-server with JetStream on a free port,
//! `sage worker` and `sage aggregator` processes, `sage sweep` and `sage status`.
//!
//! - A sweep through three workers (every role request through the broker) and an aggregator
//!   gives the same summary.json as the embedded run of the same configuration and seed; every
//!   worker played some of it; their /metrics pass promtool and carry the documented names;
//!   /healthz and /readyz answer.
//! - A worker killed with SIGKILL and a nats-server restart, mid-run: the run completes with
//!   every dialogue stored once, and the summary still equals the embedded one.
//! - The support-desk suite on the same workers (roles split across two workers, every request
//!   through the broker; then a worker killed mid-run): the desk summary equals the embedded
//!   run's, every conversation is stored once, and the desk metrics are exported.
//! - An aggregator killed right after storing a run's last record (before summarizing it),
//!   five times in a row: started again, it finishes the run, whose summary equals the
//!   embedded one.
//! - A full disk under the aggregator (a file-size limit): a record it cannot append whole
//!   leaves dialogues.jsonl ending with its last whole line, is not acked, and is stored once
//!   there is room (the run then completes with the embedded run's summary).
//! - A run whose agent never answered: `sage sweep --follow` prints the leaderboard, says so
//!   and exits 1, as the embedded run does.
//! - A message id with a line break (the ids of a job read from NATS) is published, and
//!   still deduplicates.

mod common;

use common::cluster::{Nats, Sage, http_get, promtool_check, wait_status};
use common::sage_ok;
use common::{write_config, write_desk_config};
use std::collections::{BTreeSet, HashSet};
use std::path::Path;
use std::time::Duration;

/// The embedded run of `config` as `run_id` under `dir`: its summary.json.
fn embedded_summary(dir: &Path, config: &str, run_id: &str) -> String {
    embedded_run(dir, &["--config", config], run_id, "summary.json")
}

/// `sage run ARGS` as `run_id` under `dir/embedded`: its results file `file`.
fn embedded_run(dir: &Path, args: &[&str], run_id: &str, file: &str) -> String {
    let out = dir.join("embedded").display().to_string();
    let mut all = vec!["run", "--run-id", run_id, "--out", &out, "--quiet"];
    all.extend(args);
    sage_ok(&all);
    std::fs::read_to_string(dir.join("embedded").join(run_id).join(file)).expect("embedded results")
}

/// Dialogue ids in a results folder's dialogues.jsonl, asserting none is there twice.
fn stored_ids(folder: &Path) -> BTreeSet<String> {
    ids_in(&folder.join("dialogues.jsonl"))
}

/// The job ids of a JSON-lines records file, asserting none is there twice.
fn ids_in(file: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(file).expect("a records file");
    let mut ids = BTreeSet::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).expect("a record");
        let id = v["job"]["dialogue_id"].as_str().expect("an id").to_string();
        assert!(ids.insert(id.clone()), "{id} stored twice");
    }
    ids
}

/// The metric names documented in docs/metrics.md (first table column, in backticks).
fn documented_metrics() -> HashSet<String> {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/metrics.md"))
            .expect("docs/metrics.md");
    doc.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .filter(|n| n.starts_with("sage_"))
        .map(str::to_string)
        .collect()
}

/// Parses the Prometheus text format strictly enough to catch a malformed exposition: every
/// sample line is `name{labels} value` with a float value and a declared TYPE. Returns the
/// sample values by full series text.
fn parse_exposition(text: &str) -> Vec<(String, String, f64)> {
    let mut typed = HashSet::new();
    let mut samples = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split_whitespace();
            let name = parts.next().expect("a TYPE name");
            let kind = parts.next().expect("a TYPE kind");
            assert!(
                ["counter", "gauge", "histogram"].contains(&kind),
                "unexpected type {kind}"
            );
            typed.insert(name.to_string());
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("series and value");
        let value: f64 = value
            .parse()
            .unwrap_or_else(|_| panic!("bad value: {line}"));
        let name = series.split('{').next().expect("a name");
        if let Some(labels) = series.strip_prefix(name) {
            assert!(
                labels.is_empty() || (labels.starts_with('{') && labels.ends_with('}')),
                "bad labels: {line}"
            );
        }
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s).filter(|f| typed.contains(*f)))
            .unwrap_or(name);
        assert!(typed.contains(family), "sample without a TYPE: {line}");
        samples.push((family.to_string(), series.to_string(), value));
    }
    samples
}

fn sum_of(samples: &[(String, String, f64)], family: &str) -> f64 {
    samples
        .iter()
        .filter(|(f, series, _)| f == family && !series.contains("_bucket"))
        .map(|(_, _, v)| v)
        .sum()
}

/// The harness itself: a port something else took is not mistaken for the test's server (it
/// would answer a connection), the server moves to another port and is its own.
#[test]
fn a_nats_server_whose_port_was_taken_moves_to_another() {
    let dir = common::cluster::test_dir();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = taken.local_addr().expect("addr").port();
    let nats = Nats::start_on(dir.path(), port, &[]);
    assert_ne!(nats.port, port);
    let status = common::sage(&["status", "--nats", &nats.url(), "--nats-connect-secs", "5"]);
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    drop(taken);
}

#[test]
fn a_sweep_through_three_workers_equals_the_embedded_run() {
    let dir = common::cluster::test_dir();
    let config = write_config(dir.path(), "null", 6, 7);
    let expected = embedded_summary(dir.path(), &config, "three-workers");
    let nats = Nats::start(dir.path());
    let url = nats.url();
    let out = dir.path().join("results");
    let common = ["--nats", url.as_str(), "--metrics-addr", "127.0.0.1:0"];
    let workers: Vec<Sage> = (1..=3)
        .map(|i| {
            // Every role request goes through the broker (queue groups spread them over the
            // three workers), not to the requesting worker's own actors.
            let mut args = vec!["worker", "--remote-roles"];
            args.extend(common);
            args.extend(["--concurrency", "16"]);
            Sage::spawn(dir.path(), &format!("worker-{i}"), &args)
        })
        .collect();
    let aggregator = Sage::aggregator(dir.path(), &out, &common);
    let printed = sage_ok(&[
        "sweep",
        "--nats",
        &url,
        "--config",
        &config,
        "--run-id",
        "three-workers",
    ]);
    assert_eq!(printed.trim(), "three-workers");
    let status = wait_status(&url, "three-workers", Duration::from_secs(240), |s| {
        s["state"] == "complete"
    });
    let jobs = status["jobs"].as_u64().expect("jobs") as usize;
    assert_eq!(status["stored"].as_u64(), Some(jobs as u64));
    assert!(
        status["leaderboard"]
            .as_str()
            .is_some_and(|t| t.contains("sim-strong")),
        "{status}"
    );
    let folder = out.join("three-workers");
    assert_eq!(stored_ids(&folder).len(), jobs);
    let summary = std::fs::read_to_string(folder.join("summary.json")).expect("summary");
    assert!(
        summary == expected,
        "the distributed summary differs from the embedded one"
    );

    // Every worker played part of the run, and its /metrics is well formed and documented.
    let documented = documented_metrics();
    assert!(
        documented.len() >= 16,
        "docs/metrics.md lists {documented:?}"
    );
    let mut played = 0.0;
    for worker in &workers {
        let addr = worker.metrics_addr();
        assert_eq!(http_get(&addr, "/healthz").0, 200);
        assert_eq!(http_get(&addr, "/readyz").0, 200);
        assert_eq!(http_get(&addr, "/nothing").0, 404);
        let (code, body) = http_get(&addr, "/metrics");
        assert_eq!(code, 200);
        promtool_check(&body);
        let samples = parse_exposition(&body);
        for (family, series, _) in &samples {
            assert!(
                documented.contains(family),
                "{}: {series} is not in docs/metrics.md",
                worker.name
            );
        }
        let completed = sum_of(&samples, "sage_dialogues_completed_total");
        assert!(completed > 0.0, "{} played no dialogue", worker.name);
        played += completed;
        for name in [
            "sage_dialogues_started_total",
            "sage_turns_total",
            "sage_turn_score",
            "sage_model_requests_total",
            "sage_model_request_duration_seconds",
            "sage_role_requests_total",
            "sage_role_request_duration_seconds",
            "sage_dialogues_in_flight",
        ] {
            assert!(
                samples.iter().any(|(f, _, _)| f == name),
                "{} lacks {name}",
                worker.name
            );
        }
        assert!(body.contains("role=\"judge\"") && body.contains("adversarial=\"strong\""));
    }
    assert_eq!(played as usize, jobs, "each dialogue was played once");
    let (code, body) = http_get(&aggregator.metrics_addr(), "/metrics");
    assert_eq!(code, 200);
    promtool_check(&body);
    assert_eq!(
        sum_of(&parse_exposition(&body), "sage_records_stored_total") as usize,
        jobs
    );

    // SIGTERM: a clean exit.
    for mut worker in workers {
        assert_eq!(
            worker.terminate(Duration::from_secs(30)),
            Some(0),
            "{}",
            worker.log_text()
        );
    }
}

/// A nats-server and an aggregator with a short ack wait (a killed worker's jobs come back
/// quickly); `worker` starts workers playing at most `concurrency` jobs each.
struct CrashCluster {
    nats: Nats,
    url: String,
    out: std::path::PathBuf,
    dir: std::path::PathBuf,
    concurrency: String,
    _aggregator: Sage,
}

impl CrashCluster {
    fn start(dir: &Path, concurrency: usize) -> CrashCluster {
        let nats = Nats::start(dir);
        let url = nats.url();
        let out = dir.join("results");
        let aggregator = Sage::aggregator(dir, &out, &Self::common(&url));
        CrashCluster {
            nats,
            url,
            out,
            dir: dir.to_path_buf(),
            concurrency: concurrency.to_string(),
            _aggregator: aggregator,
        }
    }

    fn common(url: &str) -> [&str; 6] {
        [
            "--nats",
            url,
            "--metrics-addr",
            "127.0.0.1:0",
            "--ack-wait-secs",
            "2",
        ]
    }

    fn worker(&self, name: &str) -> Sage {
        let mut args = vec!["worker", "--concurrency", &self.concurrency];
        args.extend(Self::common(&self.url));
        Sage::spawn(&self.dir, name, &args)
    }
}

/// `sage status RUN` while a sweep plays: each model's OA so far with its interval and n,
/// the dialogues left, the spend and an ETA, from the aggregator's fold; at the end, the
/// summary's numbers.
#[test]
fn the_status_shows_each_models_oa_while_the_sweep_plays() {
    let dir = common::cluster::test_dir();
    let config = write_config(dir.path(), "{uniform_ms: [10, 30]}", 4, 11);
    let cluster = CrashCluster::start(dir.path(), 8);
    let (url, out) = (cluster.url.clone(), cluster.out.clone());
    let _workers = [cluster.worker("worker-a"), cluster.worker("worker-b")];
    sage_ok(&[
        "sweep", "--nats", &url, "--config", &config, "--run-id", "live",
    ]);
    let status = wait_status(&url, "live", Duration::from_secs(120), |s| {
        s["stored"].as_u64().unwrap_or(0) >= 30
            && s["models"].as_array().is_some_and(|m| m.len() == 2)
    });
    let jobs = status["jobs"].as_u64().unwrap();
    assert!(
        status["stored"].as_u64() < Some(jobs),
        "the run ended first: {status}"
    );
    assert_eq!(status["state"], "running");
    for m in status["models"].as_array().unwrap() {
        let oa = &m["oa"];
        let (low, mean, high) = (
            oa["ci_low"].as_f64().unwrap(),
            oa["mean"].as_f64().unwrap(),
            oa["ci_high"].as_f64().unwrap(),
        );
        assert!(
            low <= mean && mean <= high && high <= 100.0 && low >= 0.0,
            "{m}"
        );
        assert!(oa["n"].as_u64().unwrap() > 0 && m["dialogues"].as_u64().unwrap() > 0);
    }
    assert!(
        status["eta_secs"].as_f64().is_some_and(|s| s > 0.0),
        "{status}"
    );
    let plain = sage_ok(&["status", "--nats", &url, "--nats-connect-secs", "5", "live"]);
    assert!(
        plain.contains("OA so far") && plain.contains("sim-strong"),
        "{plain}"
    );

    // Complete: the standings are the summary's.
    let end = wait_status(&url, "live", Duration::from_secs(180), |s| {
        s["state"] == "complete"
    });
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("live").join("summary.json")).unwrap(),
    )
    .unwrap();
    for m in summary["models"].as_array().unwrap() {
        let live = end["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["model"] == m["model"])
            .expect("every model");
        assert_eq!(live["oa"], m["all"]["overall"], "{}", m["model"]);
    }
    assert!(end.get("eta_secs").is_none(), "{end}");
}

/// The lines of a run's dialogues.jsonl on the aggregator, each a whole record (parsed).
fn whole_lines(folder: &Path) -> usize {
    let text = std::fs::read_to_string(folder.join("dialogues.jsonl")).unwrap_or_default();
    for line in text.lines() {
        serde_json::from_str::<serde_json::Value>(line).expect("a whole record");
    }
    assert!(
        text.is_empty() || text.ends_with('\n'),
        "a half-written last line"
    );
    text.lines().count()
}

/// `sage sweep --pause` and `--unpause`: while paused no dialogue starts (once those in
/// flight are stored, nothing more is), and the run completes after. `--cancel`: the state
/// says `cancelled` within 15 s, nothing is stored afterwards, every line is whole, and
/// `--resume` plays the rest, every dialogue stored once.
#[test]
fn a_paused_sweep_waits_and_a_cancelled_one_stops_then_resumes_every_dialogue_once() {
    let dir = common::cluster::test_dir();
    let config = write_config(dir.path(), "{uniform_ms: [10, 30]}", 4, 11);
    let cluster = CrashCluster::start(dir.path(), 8);
    let (url, out) = (cluster.url.clone(), cluster.out.clone());
    let _workers = [cluster.worker("worker-a"), cluster.worker("worker-b")];
    let stored = |s: &serde_json::Value| s["stored"].as_u64().unwrap_or(0);
    let now = |run: &str| wait_status(&url, run, Duration::from_secs(10), |_| true);
    let sweep = |args: &[&str]| {
        let mut all = vec!["sweep", "--nats", url.as_str(), "--nats-connect-secs", "5"];
        all.extend_from_slice(args);
        sage_ok(&all)
    };

    sweep(&["--config", &config, "--run-id", "held"]);
    wait_status(&url, "held", Duration::from_secs(120), |s| stored(s) >= 20);
    sweep(&["--pause", "held"]);
    wait_status(&url, "held", Duration::from_secs(15), |s| {
        s["control"] == "paused"
    });
    // The dialogues in flight when it paused finish; then nothing more is stored.
    std::thread::sleep(Duration::from_secs(5));
    let paused = now("held");
    let lines = whole_lines(&out.join("held"));
    std::thread::sleep(Duration::from_secs(5));
    let later = now("held");
    let jobs = paused["jobs"].as_u64().unwrap();
    assert!(
        stored(&paused) < jobs,
        "the run ended before its pause: {paused}"
    );
    assert_eq!(
        stored(&later),
        stored(&paused),
        "stored while paused: {later}"
    );
    assert_eq!(whole_lines(&out.join("held")), lines);
    let plain = sage_ok(&["status", "--nats", &url, "--nats-connect-secs", "5", "held"]);
    assert!(plain.contains("paused"), "{plain}");
    sweep(&["--unpause", "held"]);
    let done = wait_status(&url, "held", Duration::from_secs(180), |s| {
        s["state"] == "complete"
    });
    assert_eq!(stored(&done), jobs);
    assert_eq!(stored_ids(&out.join("held")).len() as u64, jobs);

    sweep(&["--config", &config, "--run-id", "cut"]);
    wait_status(&url, "cut", Duration::from_secs(120), |s| stored(s) >= 20);
    let asked = std::time::Instant::now();
    sweep(&["--cancel", "cut"]);
    let cancelled = wait_status(&url, "cut", Duration::from_secs(15), |s| {
        s["state"] == "cancelled"
    });
    assert!(asked.elapsed() < Duration::from_secs(15));
    assert_eq!(cancelled["state"], "cancelled", "{cancelled}");
    assert!(stored(&cancelled) < jobs, "{cancelled}");
    let lines = whole_lines(&out.join("cut"));
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(
        whole_lines(&out.join("cut")),
        lines,
        "stored after the cancel"
    );
    assert_eq!(stored(&now("cut")), lines as u64);
    // Nothing to cancel or pause once it has ended.
    let o = common::sage(&[
        "sweep",
        "--nats",
        &url,
        "--nats-connect-secs",
        "5",
        "--pause",
        "cut",
    ]);
    assert!(!o.status.success());
    // Resumed: the rest, every dialogue once.
    sweep(&["--resume", "cut"]);
    let done = wait_status(&url, "cut", Duration::from_secs(180), |s| {
        s["state"] == "complete"
    });
    assert_eq!(stored(&done), jobs);
    assert_eq!(whole_lines(&out.join("cut")) as u64, jobs);
    assert_eq!(stored_ids(&out.join("cut")).len() as u64, jobs);
}

#[test]
fn a_killed_worker_and_a_restarted_server_lose_nothing_and_count_nothing_twice() {
    let dir = common::cluster::test_dir();
    // Slow enough models that the run is still going when things break: the status is
    // written every 2 s, and its first one must find fewer than half the run stored (at 10 to
    // 30 ms a call a fast machine had stored 81 of 156 by then).
    let config = write_config(dir.path(), "{uniform_ms: [40, 80]}", 4, 11);
    let expected = embedded_summary(dir.path(), &config, "crash");
    let mut cluster = CrashCluster::start(dir.path(), 8);
    let (url, out) = (cluster.url.clone(), cluster.out.clone());
    let worker = |name: &str| cluster.worker(name);
    let mut doomed = worker("worker-doomed");
    let mut survivor = worker("worker-survivor");
    sage_ok(&[
        "sweep", "--nats", &url, "--config", &config, "--run-id", "crash",
    ]);
    let status = wait_status(&url, "crash", Duration::from_secs(120), |s| {
        s["stored"].as_u64().unwrap_or(0) >= 40
    });
    let jobs = status["jobs"].as_u64().expect("jobs");
    assert!(
        status["stored"].as_u64() < Some(jobs / 2),
        "the run went too fast to be interrupted: {status}"
    );
    // SIGKILL mid-run: its jobs in flight are neither acked nor handed back.
    doomed.kill();
    let replacement = worker("worker-replacement");
    // SIGTERM mid-run: the survivor finishes what it plays (or hands it back) and exits 0.
    wait_status(&url, "crash", Duration::from_secs(120), |s| {
        s["stored"].as_u64().unwrap_or(0) >= jobs / 2
    });
    assert_eq!(
        survivor.terminate(Duration::from_secs(60)),
        Some(0),
        "{}",
        survivor.log_text()
    );
    // What the survivor was delivered again, up to its exit (its last line says: a redelivery
    // it took between a scrape of its /metrics and its stop would be missed there).
    let log = survivor.log_text();
    let mut redelivered: f64 = log
        .lines()
        .filter(|l| l.contains("worker stopped"))
        .filter_map(|l| l.split("redelivered=").nth(1))
        .filter_map(|n| n.split_whitespace().next()?.parse().ok())
        .next()
        .unwrap_or_else(|| panic!("the survivor's exit line says its redeliveries: {log}"));
    let status = wait_status(&url, "crash", Duration::from_secs(120), |s| {
        s["stored"].as_u64().unwrap_or(0) >= jobs * 2 / 3
    });
    assert!(status["stored"].as_u64() < Some(jobs), "{status}");
    // The broker goes away and comes back with its store.
    cluster.nats.restart();
    let status = wait_status(&url, "crash", Duration::from_secs(180), |s| {
        s["state"] == "complete"
    });
    assert_eq!(status["stored"].as_u64(), Some(jobs));
    let folder = out.join("crash");
    assert_eq!(stored_ids(&folder).len() as u64, jobs);
    let summary = std::fs::read_to_string(folder.join("summary.json")).expect("summary");
    assert!(
        summary == expected,
        "after the crashes the summary differs from the embedded one"
    );
    // The killed worker's jobs were delivered again to the others.
    let (_, body) = http_get(&replacement.metrics_addr(), "/metrics");
    redelivered += sum_of(
        &parse_exposition(&body),
        "sage_jetstream_redeliveries_total",
    );
    assert!(redelivered >= 1.0, "no job was delivered again");
}

#[test]
fn a_restarted_aggregator_finishes_a_run_it_was_killed_on_after_the_last_record() {
    let dir = common::cluster::test_dir();
    let config = write_config(dir.path(), "null", 1, 19);
    let nats = Nats::start(dir.path());
    let url = nats.url();
    let out = dir.path().join("results");
    let common = ["--nats", url.as_str(), "--metrics-addr", "127.0.0.1:0"];
    let _worker = Sage::worker(dir.path(), &[&common[..], &["--concurrency", "8"]].concat());
    for round in 1..=5 {
        let run = format!("killed-{round}");
        let expected = embedded_summary(dir.path(), &config, &run);
        let crash = [("SAGE_CRASH_AT", "after-last-append")];
        let name = format!("aggregator-{round}-killed");
        let mut doomed = Sage::aggregator_with_env(dir.path(), &name, &out, &common, &crash);
        sage_ok(&[
            "sweep", "--nats", &url, "--config", &config, "--run-id", &run,
        ]);
        assert_eq!(
            doomed.wait(Duration::from_secs(120)),
            Some(137),
            "round {round}: the aggregator did not stop at the crash point:\n{}",
            doomed.log_text()
        );
        let folder = out.join(&run);
        let status = wait_status(&url, &run, Duration::from_secs(10), |_| true);
        let jobs = status["jobs"].as_u64().expect("jobs");
        assert_eq!(stored_ids(&folder).len() as u64, jobs, "round {round}");
        assert!(
            !folder.join("summary.json").exists() && status["state"] != "complete",
            "round {round}: the crash came after the summary: {status}"
        );
        let name = format!("aggregator-{round}");
        let _aggregator = Sage::aggregator_with_env(dir.path(), &name, &out, &common, &[]);
        let status = wait_status(&url, &run, Duration::from_secs(60), |s| {
            s["state"] == "complete"
        });
        assert_eq!(status["stored"].as_u64(), Some(jobs), "round {round}");
        assert_eq!(stored_ids(&folder).len() as u64, jobs, "round {round}");
        let summary = std::fs::read_to_string(folder.join("summary.json")).expect("summary");
        assert!(
            summary == expected,
            "round {round}: the finished run's summary differs from the embedded one"
        );
    }
}

#[test]
fn a_record_the_aggregator_cannot_append_whole_leaves_whole_lines_and_comes_again() {
    let dir = common::cluster::test_dir();
    let config = write_config(dir.path(), "null", 1, 23);
    let expected = embedded_summary(dir.path(), &config, "full");
    let size = std::fs::metadata(dir.path().join("embedded/full/dialogues.jsonl"))
        .expect("embedded records")
        .len();
    let nats = Nats::start(dir.path());
    let url = nats.url();
    let out = dir.path().join("results");
    let common = ["--nats", url.as_str(), "--metrics-addr", "127.0.0.1:0"];
    let _worker = Sage::worker(dir.path(), &[&common[..], &["--concurrency", "8"]].concat());
    // The disk is full once the records file holds about half of the run.
    let out_arg = out.display().to_string();
    let mut args = vec!["aggregator", "--out", out_arg.as_str()];
    args.extend(common);
    let mut full = Sage::spawn_limited(dir.path(), "aggregator-full", &args, &[], Some(size / 2));
    sage_ok(&[
        "sweep", "--nats", &url, "--config", &config, "--run-id", "full",
    ]);
    // Two failed appends: the first cut a line short, the second came after it.
    let started = std::time::Instant::now();
    while full.log_text().matches("cannot store a record").count() < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(60) && full.running(),
            "no append failed:\n{}",
            full.log_text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let records = out.join("full").join("dialogues.jsonl");
    let text = std::fs::read(&records).expect("records");
    assert!(text.ends_with(b"\n"), "the records file ends inside a line");
    // The status counts what the file holds: read together, since a smaller record may still
    // fit after a larger one did not.
    let status = wait_status(&url, "full", Duration::from_secs(20), |s| {
        s["stored"].as_u64() == Some(ids_in(&records).len() as u64)
    });
    let whole = status["stored"].as_u64().expect("stored");
    assert_ne!(status["state"], "complete", "{status}");
    assert!(whole < status["jobs"].as_u64().expect("jobs"), "{status}");
    // Room again: the records not acked come again and are stored.
    full.kill();
    let _aggregator = Sage::aggregator(dir.path(), &out, &common);
    let status = wait_status(&url, "full", Duration::from_secs(120), |s| {
        s["state"] == "complete"
    });
    let jobs = status["jobs"].as_u64().expect("jobs");
    assert_eq!(status["stored"].as_u64(), Some(jobs));
    assert_eq!(ids_in(&records).len() as u64, jobs);
    let summary = std::fs::read_to_string(out.join("full").join("summary.json")).expect("summary");
    assert!(
        summary == expected,
        "after the full disk the summary differs from the embedded one"
    );
}

#[test]
fn sweep_follow_fails_a_run_whose_agent_never_answered() {
    let dir = common::cluster::test_dir();
    // A real (OpenAI-compatible) agent behind a customer who never says anything: every
    // dialogue ends before the agent is asked.
    let config = dir.path().join("silent.yaml");
    std::fs::write(
        &config,
        "models:
  - {name: agent, provider: openai, base_url: \"http://127.0.0.1:9/v1\"}
  - {name: user, provider: simulated, sim: {kind: user, empty_rate: 1.0}}
  - {name: j1, provider: simulated, sim: {kind: judge}}
service_models: [agent]
user_model: user
judge_models: [j1]
scenarios: [scenarios/telecom_package.yaml]
dialogues_per_scenario: 3
min_per_route: 0
max_turns: 4
",
    )
    .expect("config");
    let nats = Nats::start(dir.path());
    let url = nats.url();
    let out = dir.path().join("results");
    let common = ["--nats", url.as_str(), "--metrics-addr", "127.0.0.1:0"];
    let _worker = Sage::worker(dir.path(), &common);
    let _aggregator = Sage::aggregator(dir.path(), &out, &common);
    let o = common::sage(&[
        "sweep",
        "--nats",
        &url,
        "--config",
        config.to_str().expect("utf-8"),
        "--run-id",
        "silent",
        "--follow",
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("error: model `agent` never answered: its 3 dialogues ended before the agent gave an answer"),
        "{err}"
    );
    let printed = String::from_utf8_lossy(&o.stdout);
    assert!(
        printed.contains("agent"),
        "the leaderboard first: {printed}"
    );
}

#[test]
fn role_requests_carry_the_run_and_one_trace_per_dialogue() {
    let dir = common::cluster::test_dir();
    let config = dir.path().join("run.yaml");
    std::fs::write(
        &config,
        "service_models: [sim-strong]\nscenarios: [scenarios/telecom_package.yaml]\n\
         dialogues_per_scenario: 3\nmin_per_route: 0\nmax_turns: 4\n",
    )
    .expect("config");
    let nats = Nats::start(dir.path());
    let url = nats.url();
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    // A plain subscriber sees a copy of every role request.
    let mut requests = runtime.block_on(async {
        let client = async_nats::connect(url.as_str()).await.expect("connect");
        let sub = client.subscribe("sage.v1.role.>").await.expect("subscribe");
        client.flush().await.expect("flush");
        (client, sub)
    });
    // An OTLP/HTTP collector: the worker posts its spans to {endpoint}/v1/traces.
    let collector = runtime.block_on(async {
        let server = wiremock::MockServer::start().await;
        wiremock::Mock::given(wiremock::matchers::method("POST"))
            .and(wiremock::matchers::path("/v1/traces"))
            .respond_with(wiremock::ResponseTemplate::new(200))
            .mount(&server)
            .await;
        server
    });
    let otlp = collector.uri();
    let _worker = Sage::spawn(
        dir.path(),
        "worker",
        &[
            "worker",
            "--nats",
            &url,
            "--metrics-addr",
            "127.0.0.1:0",
            "--otlp-endpoint",
            &otlp,
            "--trace-sample-rate",
            "1",
            "--remote-roles",
        ],
    );
    sage_ok(&[
        "sweep",
        "--nats",
        &url,
        "--config",
        &config.display().to_string(),
        "--run-id",
        "traced",
    ]);
    // Trace ids of the requests, by dialogue.
    let mut traces: std::collections::BTreeMap<String, BTreeSet<String>> = Default::default();
    let mut seen = 0;
    runtime.block_on(async {
        use futures::StreamExt;
        while let Ok(Some(message)) =
            tokio::time::timeout(Duration::from_secs(5), requests.1.next()).await
        {
            seen += 1;
            let headers = message.headers.as_ref().expect("headers");
            assert_eq!(
                headers.get("Sage-Run").map(|v| v.as_str()),
                Some("traced"),
                "{}",
                message.subject
            );
            let parent = headers
                .get("traceparent")
                .unwrap_or_else(|| panic!("{} without traceparent", message.subject));
            let trace_id = parent.as_str().split('-').nth(1).expect("a trace id");
            assert_eq!(trace_id.len(), 32);
            let body: serde_json::Value =
                serde_json::from_slice(&message.payload).expect("a JSON request");
            if let Some(dialogue) = body["job"]["dialogue_id"].as_str() {
                traces
                    .entry(dialogue.to_string())
                    .or_default()
                    .insert(trace_id.to_string());
            }
        }
    });
    assert!(
        traces.len() >= 3 && seen > 3 * traces.len(),
        "{seen} requests: {traces:?}"
    );
    let mut ids = BTreeSet::new();
    for (dialogue, trace) in &traces {
        assert_eq!(trace.len(), 1, "dialogue {dialogue} spans traces {trace:?}");
        assert!(ids.insert(trace.clone()), "two dialogues share a trace");
    }
    // The worker's spans reach the collector as OTLP protobuf, under its service name and in
    // the dialogues' traces (a trace id is 16 raw bytes there), within the batch exporter's
    // delay (5 s).
    let exported = |body: &[u8], bytes: &[u8]| body.windows(bytes.len()).any(|w| w == bytes);
    let trace_ids: Vec<Vec<u8>> = ids
        .iter()
        .flatten()
        .map(|id| hex::decode(id).expect("a hex trace id"))
        .collect();
    let worker_span = |r: &wiremock::Request| {
        let body = &r.body;
        r.url.path() == "/v1/traces"
            && exported(body, b"sage-worker")
            && exported(body, b"role")
            && trace_ids.iter().any(|id| exported(body, id))
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let posts = loop {
        let posts = runtime
            .block_on(collector.received_requests())
            .unwrap_or_default();
        if posts.iter().any(worker_span) || std::time::Instant::now() > deadline {
            break posts;
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    assert!(
        posts.iter().any(worker_span),
        "no span of the worker's dialogues reached the collector: {} posts",
        posts.len()
    );
    assert!(posts.iter().all(|r| {
        r.headers
            .get("content-type")
            .is_some_and(|v| v.as_bytes() == b"application/x-protobuf")
    }));
}

#[test]
fn an_embedded_run_can_serve_its_metrics_too() {
    let dir = common::cluster::test_dir();
    let config = write_config(dir.path(), "{fixed_ms: 300}", 1, 3);
    let out = dir.path().join("out").display().to_string();
    let mut run = Sage::spawn(
        dir.path(),
        "run",
        &[
            "run",
            "--config",
            &config,
            "--out",
            &out,
            "--quiet",
            "--metrics-addr",
            "127.0.0.1:0",
        ],
    );
    let addr = run.metrics_addr();
    // Dialogues start once the scenarios are loaded and the jobs planned.
    let started = std::time::Instant::now();
    let body = loop {
        let (code, body) = http_get(&addr, "/metrics");
        assert_eq!(code, 200);
        if body.contains("sage_dialogues_started_total{")
            || started.elapsed() > Duration::from_secs(30)
        {
            break body;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    promtool_check(&body);
    assert!(body.contains("sage_dialogues_started_total{"), "{body}");
    assert_eq!(http_get(&addr, "/readyz").0, 200);
    let started = std::time::Instant::now();
    while run.running() && started.elapsed() < Duration::from_secs(120) {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!run.running(), "the run did not finish");
}

/// The support-desk suite on the same workers: a worker that drives the conversations and
/// serves the agents under test, another that serves the customer and the judges, every role
/// request through the broker. The desk summary equals the embedded run's, every conversation
/// is stored once, and the desk metrics are on the driving worker's /metrics.
#[test]
fn a_support_desk_sweep_equals_the_embedded_run() {
    let dir = common::cluster::test_dir();
    let expected = embedded_run(
        dir.path(),
        &["--suite", "support-desk"],
        "desk",
        "desk-summary.json",
    );
    let nats = Nats::start(dir.path());
    let url = nats.url();
    let out = dir.path().join("results");
    let common = ["--nats", url.as_str(), "--metrics-addr", "127.0.0.1:0"];
    let mut workers = Sage::split_workers(dir.path(), &common, &[]);
    let _aggregator = Sage::aggregator(dir.path(), &out, &common);
    let printed = sage_ok(&[
        "sweep",
        "--suite",
        "support-desk",
        "--nats",
        &url,
        "--run-id",
        "desk",
    ]);
    assert_eq!(printed.trim(), "desk");
    let status = wait_status(&url, "desk", Duration::from_secs(240), |s| {
        s["state"] == "complete"
    });
    let jobs = status["jobs"].as_u64().expect("jobs");
    assert_eq!(jobs, 162 * 3 * 3);
    assert_eq!(status["stored"].as_u64(), Some(jobs));
    assert_eq!(status["infra_errors"].as_u64(), Some(0));
    assert!(
        status["leaderboard"]
            .as_str()
            .is_some_and(|t| t.contains("sim-desk-reckless") && t.contains("Unsafe")),
        "{status}"
    );
    let folder = out.join("desk");
    assert_eq!(ids_in(&folder.join("desk.jsonl")).len() as u64, jobs);
    let summary = std::fs::read_to_string(folder.join("desk-summary.json")).expect("summary");
    assert!(
        summary == expected,
        "the distributed desk summary differs from the embedded one"
    );

    // The driver counted every conversation; the other worker answered the customer and the
    // judges (their model calls are on its /metrics, not the driver's).
    let documented = documented_metrics();
    let scrape = |worker: &Sage| {
        let (code, body) = http_get(&worker.metrics_addr(), "/metrics");
        assert_eq!(code, 200);
        promtool_check(&body);
        let samples = parse_exposition(&body);
        for (family, series, _) in &samples {
            assert!(
                documented.contains(family),
                "{}: {series} is not in docs/metrics.md",
                worker.name
            );
        }
        (body, samples)
    };
    let (body, samples) = scrape(&workers[0]);
    assert_eq!(
        sum_of(&samples, "sage_desk_conversations_total") as u64,
        jobs
    );
    assert!(sum_of(&samples, "sage_desk_unsafe_actions_total") > 0.0);
    assert!(sum_of(&samples, "sage_desk_tool_calls_total") > jobs as f64);
    assert!(
        body.contains("model=\"sim-desk-reckless\"") && body.contains("kind=\"free_goods\""),
        "{body}"
    );
    // Model calls by role: the agents here, the customer and the judges on the other worker,
    // reached through the broker.
    let called = |body: &str, role: &str| {
        body.lines().any(|l| {
            l.starts_with("sage_model_requests_total{") && l.contains(&format!("role=\"{role}\""))
        })
    };
    assert!(called(&body, "service") && !called(&body, "judge") && !called(&body, "user"));
    assert!(body.contains("sage_role_requests_total{outcome=\"ok\",role=\"judge\"}"));
    let (body, samples) = scrape(&workers[1]);
    assert_eq!(sum_of(&samples, "sage_desk_conversations_total"), 0.0);
    assert!(called(&body, "judge") && called(&body, "user") && !called(&body, "service"));
    for worker in &mut workers {
        assert_eq!(
            worker.terminate(Duration::from_secs(30)),
            Some(0),
            "{}",
            worker.log_text()
        );
    }
}

/// A support-desk run survives a worker killed mid-run (SIGKILL: its conversations in flight
/// are neither stored nor acked): they are played again by another worker, every conversation
/// is stored once, and the desk summary equals the embedded run's. Then one cancelled mid-run
/// resumes to its end, every conversation stored once.
#[test]
fn a_killed_worker_loses_no_support_desk_conversation() {
    let dir = common::cluster::test_dir();
    let config = write_desk_config(dir.path(), "{uniform_ms: [20, 40]}");
    let expected = embedded_run(
        dir.path(),
        &["--suite", "support-desk", "--config", &config],
        "desk-crash",
        "desk-summary.json",
    );
    let cluster = CrashCluster::start(dir.path(), 2);
    let (url, out) = (cluster.url.clone(), cluster.out.clone());
    let mut doomed = cluster.worker("worker-doomed");
    let survivor = cluster.worker("worker-survivor");
    sage_ok(&[
        "sweep",
        "--suite",
        "support-desk",
        "--nats",
        &url,
        "--config",
        &config,
        "--run-id",
        "desk-crash",
    ]);
    let status = wait_status(&url, "desk-crash", Duration::from_secs(120), |s| {
        s["stored"].as_u64().unwrap_or(0) >= 20
    });
    let jobs = status["jobs"].as_u64().expect("jobs");
    assert_eq!(jobs, 162);
    assert!(
        status["stored"].as_u64() < Some(jobs / 2),
        "the run went too fast to be interrupted: {status}"
    );
    doomed.kill();
    let replacement = cluster.worker("worker-replacement");
    let status = wait_status(&url, "desk-crash", Duration::from_secs(180), |s| {
        s["state"] == "complete"
    });
    assert_eq!(status["stored"].as_u64(), Some(jobs));
    let folder = out.join("desk-crash");
    assert_eq!(ids_in(&folder.join("desk.jsonl")).len() as u64, jobs);
    let summary = std::fs::read_to_string(folder.join("desk-summary.json")).expect("summary");
    assert!(
        summary == expected,
        "the desk summary after a crash differs from the embedded one"
    );
    // The killed worker's conversations in flight came back to the others.
    let redelivered: f64 = [&survivor, &replacement]
        .iter()
        .map(|w| {
            let (_, body) = http_get(&w.metrics_addr(), "/metrics");
            sum_of(
                &parse_exposition(&body),
                "sage_jetstream_redeliveries_total",
            )
        })
        .sum();
    assert!(redelivered >= 1.0, "no conversation was delivered again");

    // A support-desk run cancelled mid-run resumes (without a budget: it has none) to its
    // end, every conversation stored once.
    let sweep = |args: &[&str]| {
        let mut all = vec!["sweep", "--nats", url.as_str(), "--nats-connect-secs", "5"];
        all.extend_from_slice(args);
        common::sage(&all)
    };
    let desk = ["--suite", "support-desk", "--config", config.as_str()];
    assert!(
        sweep(&[&desk[..], &["--run-id", "desk-cut"]].concat())
            .status
            .success()
    );
    wait_status(&url, "desk-cut", Duration::from_secs(120), |s| {
        s["stored"].as_u64().unwrap_or(0) >= 10
    });
    assert!(sweep(&["--cancel", "desk-cut"]).status.success());
    let cancelled = wait_status(&url, "desk-cut", Duration::from_secs(15), |s| {
        s["state"] == "cancelled"
    });
    assert!(cancelled["stored"].as_u64() < Some(jobs), "{cancelled}");
    let o = sweep(&["--resume", "desk-cut", "--max-cost-usd", "5"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("no cost budget"),
        "{err}"
    );
    let o = sweep(&["--resume", "desk-cut"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let done = wait_status(&url, "desk-cut", Duration::from_secs(180), |s| {
        s["state"] == "complete"
    });
    assert_eq!(done["stored"].as_u64(), Some(jobs));
    let records = out.join("desk-cut").join("desk.jsonl");
    let lines = std::fs::read_to_string(&records).unwrap().lines().count() as u64;
    assert_eq!((ids_in(&records).len() as u64, lines), (jobs, jobs));
}

/// A worker unloads a run nobody has asked for during `--run-idle-secs` (its actors and
/// endpoints dropped) and goes on serving the next run, which it unloads in turn.
#[test]
fn an_idle_run_is_unloaded_and_the_next_run_is_served() {
    let dir = common::cluster::test_dir();
    let config = write_config(dir.path(), "null", 1, 3);
    let nats = Nats::start(dir.path());
    let url = nats.url();
    let out = dir.path().join("results");
    let worker = Sage::spawn(
        dir.path(),
        "worker",
        &[
            "worker",
            "--nats",
            &url,
            "--metrics-addr",
            "127.0.0.1:0",
            "--run-idle-secs",
            "1",
        ],
    );
    let _aggregator = Sage::aggregator(
        dir.path(),
        &out,
        &["--nats", &url, "--metrics-addr", "127.0.0.1:0"],
    );
    for run in ["idle-1", "idle-2"] {
        sage_ok(&[
            "sweep", "--nats", &url, "--config", &config, "--run-id", run,
        ]);
        let status = wait_status(&url, run, Duration::from_secs(120), |s| {
            s["state"] == "complete"
        });
        assert_eq!(status["stored"], status["jobs"], "{status}");
        let started = std::time::Instant::now();
        let unloaded = |log: &str| {
            log.lines()
                .any(|l| l.contains("unloaded idle run") && l.contains(run))
        };
        while !unloaded(&worker.log_text()) {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "{run} was not unloaded: {}",
                worker.log_text()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

#[test]
fn a_message_id_with_a_line_break_is_published() {
    // Found with the nats_headers fuzz target: the id of a stored record is the run and dialogue ids of
    // a job read from NATS, and a line break in it made async-nats panic while building the
    // header (a worker's task dies, the job comes back forever).
    use sage::transport::nats::{Broker, NatsConfig, QueueSettings, records_subject};
    let dir = common::cluster::test_dir();
    let nats = Nats::start(dir.path());
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let config = NatsConfig {
            url: nats.url(),
            ..Default::default()
        };
        let broker = Broker::new(
            config.connect().await.expect("connect"),
            QueueSettings::default(),
        );
        let stream = broker.records_stream().await.expect("records stream");
        let id = "run-1/telecom_package/0007\r\nsim-strong/r0";
        for _ in 0..2 {
            broker
                .publish_json(records_subject("run-1"), id, None, &serde_json::json!({}))
                .await
                .expect("stored");
        }
        let mut stream = stream;
        let info = stream.info().await.expect("stream info");
        assert_eq!(info.state.messages, 1, "the second copy is a duplicate");
    });
}
