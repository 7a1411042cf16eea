//! The distributed mode against hostile or broken messages, with real processes (a nats-server
//! on a free port, `sage worker`, `sage aggregator`, `sage sweep`, `sage status`):
//!
//! - a job and a role request whose run id is thousands of characters long are refused where
//!   they enter, and the worker goes on serving the next run;
//! - records that are not of their run's jobs (a forged dialogue id, a job played with another
//!   seed, another run's record on this run's subject) are rejected and counted, and the run
//!   completes with the embedded run's summary; a record of a run that does not exist is
//!   dropped after its fifth delivery;
//! - an undecodable status in the runs bucket is skipped by `sage status`, which says so;
//! - forged jobs of a known run (an unknown model, a billion turns, a thousand judges, an id
//!   the plan does not have) are refused by the worker before any model call.

mod common;

use common::cluster::{Nats, Sage, http_get, wait_status};
use common::sage_ok;
use common::write_config;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The value of the series `name{labels}` (labels as exported, e.g. `source="job"`) in an
/// exposition; 0 when absent.
fn sample(exposition: &str, name: &str, labels: &[&str]) -> f64 {
    exposition
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.rsplit_once(' '))
        .filter(|(series, _)| {
            series.starts_with(&format!("{name}{{")) && labels.iter().all(|l| series.contains(l))
        })
        .map(|(_, v)| v.parse::<f64>().expect("a number"))
        .sum()
}

/// Waits until `sample` of a process's metrics reaches `at_least`.
fn wait_sample(process: &Sage, name: &str, labels: &[&str], at_least: f64) -> f64 {
    let addr = process.metrics_addr();
    let started = Instant::now();
    loop {
        let (_, body) = http_get(&addr, "/metrics");
        let value = sample(&body, name, labels);
        if value >= at_least {
            return value;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{name}{labels:?} stayed at {value} < {at_least} on {}:\n{}",
            process.name,
            process.log_text()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

async fn connect(url: &str) -> async_nats::Client {
    async_nats::connect(url).await.expect("connected")
}

/// Publishes `payload` to the JetStream stream that takes `subject`, and waits until stored.
async fn publish(client: &async_nats::Client, subject: String, payload: Vec<u8>) {
    async_nats::jetstream::new(client.clone())
        .publish(subject, payload.into())
        .await
        .expect("published")
        .await
        .expect("stored");
}

#[test]
fn over_long_run_ids_are_refused_and_the_worker_serves_the_next_run() {
    let dir = common::cluster::test_dir();
    let config = write_config(dir.path(), "null", 1, 11);
    let nats = Nats::start(dir.path());
    let url = nats.url();
    let out = dir.path().join("results");
    let worker = Sage::spawn(
        dir.path(),
        "worker",
        &["worker", "--nats", &url, "--metrics-addr", "127.0.0.1:0"],
    );
    let _aggregator = Sage::aggregator(
        dir.path(),
        &out,
        &["--nats", &url, "--metrics-addr", "127.0.0.1:0"],
    );
    let long = "x".repeat(4100);
    // The worker is up (its role subscriptions too) once it serves /metrics and is ready.
    let addr = worker.metrics_addr();
    let started = Instant::now();
    while http_get(&addr, "/readyz").0 != 200 {
        assert!(started.elapsed() < Duration::from_secs(30), "never ready");
        std::thread::sleep(Duration::from_millis(100));
    }
    runtime().block_on(async {
        let client = connect(&url).await;
        // A job of an over-long run id, on a subject the jobs stream takes.
        let job = serde_json::json!({"run_id": long, "dialogue_id": "a/0001/m/r0"});
        publish(
            &client,
            "sage.v1.jobs.poison".into(),
            serde_json::to_vec(&job).unwrap(),
        )
        .await;
        // A role request naming an over-long run: answered at once with an error.
        let mut headers = async_nats::HeaderMap::new();
        headers.insert("Sage-Run", long.as_str());
        let reply = tokio::time::timeout(
            Duration::from_secs(10),
            client.send_request(
                "sage.v1.role.user",
                async_nats::Request::new()
                    .headers(headers)
                    .payload("{}".into())
                    .timeout(Some(Duration::from_secs(10))),
            ),
        )
        .await
        .expect("answered within 10 s")
        .expect("a reply");
        let error = reply
            .headers
            .as_ref()
            .and_then(|h| h.get("Sage-Error"))
            .map(|v| v.to_string())
            .expect("an error reply");
        assert!(error.contains("Sage-Run header: run id"), "{error}");
        assert!(error.len() < 400, "the id is not echoed whole: {error}");
    });
    // The worker refused both and goes on: the next run completes.
    wait_sample(
        &worker,
        "sage_messages_rejected_total",
        &["source=\"job\"", "reason=\"invalid\""],
        1.0,
    );
    wait_sample(
        &worker,
        "sage_messages_rejected_total",
        &["source=\"request\"", "reason=\"invalid\""],
        1.0,
    );
    sage_ok(&[
        "sweep", "--nats", &url, "--config", &config, "--run-id", "after",
    ]);
    let status = wait_status(&url, "after", Duration::from_secs(120), |s| {
        s["state"] == "complete"
    });
    assert_eq!(status["stored"], status["jobs"], "{status}");
    assert_eq!(http_get(&addr, "/readyz").0, 200, "{}", worker.log_text());
    // `sage sweep` refuses such an id before it connects.
    let refused = Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(["sweep", "--nats", &url, "--run-id", &long])
        .output()
        .expect("sage runs");
    assert_eq!(refused.status.code(), Some(1));
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(
        message.contains("--run-id: run id") && message.contains("too long"),
        "{message}"
    );
}

/// Every record line of a results file, as JSON.
fn records(file: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(file)
        .expect("records")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a record"))
        .collect()
}

#[test]
fn records_of_no_job_of_their_run_are_rejected_and_the_summary_is_the_embedded_one() {
    let dir = common::cluster::test_dir();
    let config = write_config(dir.path(), "null", 1, 13);
    let nats = Nats::start(dir.path());
    let url = nats.url();
    // The embedded run of the same configuration and run id: its records carry the very jobs
    // the sweep plans.
    let run = "guarded";
    let embedded = dir.path().join("embedded");
    sage_ok(&[
        "run",
        "--config",
        &config,
        "--run-id",
        run,
        "--out",
        &embedded.display().to_string(),
        "--quiet",
    ]);
    let genuine = records(&embedded.join(run).join("dialogues.jsonl"));
    let out = dir.path().join("results");
    let aggregator = Sage::aggregator(
        dir.path(),
        &out,
        &["--nats", &url, "--metrics-addr", "127.0.0.1:0"],
    );
    // Submitted with no worker running: the forged records arrive first.
    sage_ok(&[
        "sweep", "--nats", &url, "--config", &config, "--run-id", run,
    ]);
    let mut forged = genuine[0].clone();
    forged["job"]["dialogue_id"] = "telecom_package/9999/sim-strong/r0".into();
    let mut reseeded = genuine[1].clone();
    reseeded["job"]["seed"] = 1234.into();
    let mut other_run = genuine[2].clone();
    other_run["job"]["run_id"] = "elsewhere".into();
    let mut ghost = genuine[3].clone();
    ghost["job"]["run_id"] = "ghost".into();
    runtime().block_on(async {
        let client = connect(&url).await;
        for record in [&forged, &reseeded, &other_run] {
            publish(
                &client,
                format!("sage.v1.records.{run}"),
                serde_json::to_vec(record).unwrap(),
            )
            .await;
        }
        publish(
            &client,
            "sage.v1.records.ghost".into(),
            serde_json::to_vec(&ghost).unwrap(),
        )
        .await;
    });
    wait_sample(
        &aggregator,
        "sage_messages_rejected_total",
        &["source=\"record\"", "reason=\"foreign\""],
        3.0,
    );
    let _worker = Sage::spawn(
        dir.path(),
        "worker",
        &["worker", "--nats", &url, "--metrics-addr", "127.0.0.1:0"],
    );
    let status = wait_status(&url, run, Duration::from_secs(120), |s| {
        s["state"] == "complete"
    });
    assert_eq!(status["stored"], status["jobs"], "{status}");
    assert_eq!(status["jobs"], genuine.len(), "{status}");
    let summary = |folder: &Path| std::fs::read_to_string(folder.join("summary.json")).unwrap();
    assert_eq!(summary(&out.join(run)), summary(&embedded.join(run)));
    // The ghost run's record is given up after its fifth delivery.
    wait_sample(
        &aggregator,
        "sage_messages_rejected_total",
        &["source=\"record\"", "reason=\"unknown_run\""],
        1.0,
    );
    let (_, metrics) = http_get(&aggregator.metrics_addr(), "/metrics");
    assert_eq!(
        sample(
            &metrics,
            "sage_messages_rejected_total",
            &["source=\"record\"", "reason=\"foreign\""]
        ),
        3.0
    );
    assert!(!out.join("ghost").exists());
}

#[test]
fn an_unreadable_status_is_skipped_and_reported() {
    let dir = common::cluster::test_dir();
    let config = write_config(dir.path(), "null", 1, 17);
    let nats = Nats::start(dir.path());
    let url = nats.url();
    sage_ok(&[
        "sweep", "--nats", &url, "--config", &config, "--run-id", "readable",
    ]);
    runtime().block_on(async {
        let client = connect(&url).await;
        let bucket = async_nats::jetstream::new(client)
            .get_key_value("sage_runs")
            .await
            .expect("the runs bucket");
        bucket
            .put("status.broken", "{not json".into())
            .await
            .expect("written");
    });
    let out = Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(["status", "--nats", &url, "--nats-connect-secs", "1"])
        .output()
        .expect("sage runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("readable"), "{stdout}");
    assert!(
        stderr.contains("skipped an unreadable run status") && stderr.contains("status.broken"),
        "{stderr}"
    );
}

/// A header async-nats cannot handle (a lone carriage return in a value) ends the worker's NATS
/// client for good (nats-io/nats.rs#1612): the worker notices, says so in /healthz, and exits
/// with an error to be restarted, rather than staying up, ready and deaf.
#[test]
fn a_worker_whose_nats_client_died_says_so_and_exits() {
    use std::io::{Read, Write};
    let dir = common::cluster::test_dir();
    let nats = Nats::start(dir.path());
    let url = nats.url();
    let mut worker = Sage::spawn(
        dir.path(),
        "worker",
        &["worker", "--nats", &url, "--metrics-addr", "127.0.0.1:0"],
    );
    let addr = worker.metrics_addr();
    let started = Instant::now();
    while http_get(&addr, "/readyz").0 != 200 {
        assert!(started.elapsed() < Duration::from_secs(30), "never ready");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The raw protocol: no client library would write such a header.
    let port = url.rsplit(':').next().expect("a port");
    let mut raw = std::net::TcpStream::connect(format!("127.0.0.1:{port}")).expect("connected");
    let mut info = [0u8; 4096];
    let _ = raw.read(&mut info);
    let header = b"NATS/1.0\r\nSage-Run: a\rb\r\n\r\n";
    let mut message = b"CONNECT {\"verbose\":false,\"headers\":true}\r\n".to_vec();
    message.extend(
        format!(
            "HPUB sage.v1.role.user _INBOX.x {} {}\r\n",
            header.len(),
            header.len() + 2
        )
        .as_bytes(),
    );
    message.extend(header);
    message.extend(b"{}\r\nPING\r\n");
    raw.write_all(&message).expect("sent");
    let _ = raw.read(&mut info);
    let code = worker.wait(Duration::from_secs(30));
    assert_eq!(code, Some(1), "{}", worker.log_text());
    let log = worker.log_text();
    assert!(
        log.contains("the NATS client is gone for good") && log.contains("restart the process"),
        "{log}"
    );
}

#[test]
fn forged_jobs_of_a_known_run_are_refused_before_any_call() {
    let dir = common::cluster::test_dir();
    let config = write_config(dir.path(), "null", 1, 29);
    let nats = Nats::start(dir.path());
    let url = nats.url();
    let out = dir.path().join("results");
    let common = ["--nats", url.as_str(), "--metrics-addr", "127.0.0.1:0"];
    let worker = Sage::worker(dir.path(), &common);
    let _aggregator = Sage::aggregator(dir.path(), &out, &common);
    sage_ok(&[
        "sweep", "--nats", &url, "--config", &config, "--run-id", "known",
    ]);
    wait_status(&url, "known", Duration::from_secs(120), |s| {
        s["state"] == "complete"
    });
    let addr = worker.metrics_addr();
    let calls = || {
        sample(
            &http_get(&addr, "/metrics").1,
            "sage_model_requests_total",
            &[],
        )
    };
    let before = calls();
    assert!(before > 0.0, "the run made no call");
    // Forged from a real job of the run (a record holds its job).
    let job = records(&out.join("known").join("dialogues.jsonl"))[0]["job"].clone();
    let mut forged = Vec::new();
    for (key, value) in [
        ("service_model", serde_json::json!("huge-model")),
        ("max_turns", serde_json::json!(1_000_000_000u64)),
        ("judge_models", serde_json::json!(vec!["sim-judge-1"; 1000])),
        (
            "dialogue_id",
            serde_json::json!("telecom_package/9999/sim-strong/r0"),
        ),
    ] {
        let mut j = job.clone();
        j[key] = value;
        forged.push(j);
    }
    runtime().block_on(async {
        let client = connect(&url).await;
        for j in &forged {
            publish(
                &client,
                "sage.v1.jobs.known".into(),
                serde_json::to_vec(j).unwrap(),
            )
            .await;
        }
    });
    wait_sample(
        &worker,
        "sage_messages_rejected_total",
        &["source=\"job\"", "reason=\"foreign\""],
        forged.len() as f64,
    );
    assert_eq!(calls(), before, "a forged job made model calls");
    assert!(
        worker.log_text().contains("not a job of its run's plan"),
        "{}",
        worker.log_text()
    );
}
