//! Provider limits across a cluster: two workers calling one API key share its limit through
//! their leases in the limits bucket (a real nats-server, a mock provider that enforces the
//! limit), and a worker that loses the bucket keeps its share and says so.

mod common;

use common::cluster::{Nats, Sage, http_get, test_dir, wait_status};
use common::provider::{self, ProviderSpec, Seen};
use common::sage_ok;
use std::path::Path;
use std::time::{Duration, Instant};

const KEY_VAR: &str = "SAGE_CLUSTER_LIMIT_KEY";

/// A run whose agent under test is the provider's (300 requests a minute, known), the customer
/// and the judges simulated.
fn write_run(dir: &Path, base_url: &str) -> String {
    let path = dir.join("run.yaml");
    let text = format!(
        "models:
  - {{name: agent, provider: openai, base_url: '{base_url}', api_key_env: {KEY_VAR}, requests_per_minute: 300, timeout_secs: 10, retries: {{max_attempts: 10, base_delay_ms: 50, max_delay_ms: 2000}}}}
  - {{name: sim-user, provider: simulated, sim: {{kind: user}}}}
  - {{name: sim-judge-1, provider: simulated, sim: {{kind: judge}}}}
  - {{name: sim-judge-2, provider: simulated, sim: {{kind: judge, noise: 0.03}}}}
  - {{name: sim-judge-3, provider: simulated, sim: {{kind: judge, noise: 0.06}}}}
service_models: [agent]
user_model: sim-user
judge_models: [sim-judge-1, sim-judge-2, sim-judge-3]
scenarios: [bundled]
dialogues_per_scenario: 3
min_per_route: 0
max_turns: 8
seed: 11
"
    );
    std::fs::write(&path, text).expect("config");
    path.display().to_string()
}

fn wait_for_log(worker: &Sage, text: &str, within: Duration) -> bool {
    let started = Instant::now();
    while started.elapsed() < within {
        if worker.log_text().contains(text) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

#[test]
fn two_workers_share_one_keys_limit_and_keep_their_share_without_the_bucket() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (server, provider) = runtime.block_on(provider::start(ProviderSpec::keys(
        &[("k-cluster", 300, u32::MAX)],
        true,
        Duration::from_millis(30),
    )));
    let dir = test_dir();
    let config = write_run(dir.path(), &format!("{}/v1", server.uri()));
    let mut nats = Nats::start(dir.path());
    let url = nats.url();
    let out = dir.path().join("results");
    let common = ["--nats", url.as_str(), "--metrics-addr", "127.0.0.1:0"];
    let workers: Vec<Sage> = (1..=2)
        .map(|i| {
            let mut args = vec!["worker"];
            args.extend(common);
            args.extend(["--concurrency", "16"]);
            Sage::spawn_with_env(
                dir.path(),
                &format!("worker-{i}"),
                &args,
                &[(KEY_VAR, "k-cluster")],
            )
        })
        .collect();
    let _aggregator = Sage::aggregator(dir.path(), &out, &common);
    sage_ok(&[
        "sweep",
        "--nats",
        &url,
        "--config",
        &config,
        "--run-id",
        "shared-key",
    ]);
    // While both call the key, each holds half of its limit (scraped from its /metrics).
    for worker in &workers {
        let addr = worker.metrics_addr();
        let started = Instant::now();
        let mut last: String;
        let half = loop {
            let (_, body) = http_get(&addr, "/metrics");
            last = body
                .lines()
                .filter(|l| l.starts_with("sage_limit_"))
                .map(|l| format!("{l}\n"))
                .collect();
            if last.contains("sage_limit_share{endpoint=\"agent\"} 0.5") {
                break true;
            }
            if started.elapsed() > Duration::from_secs(30) {
                break false;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        assert!(half, "{} never held half the limit:\n{last}", worker.name);
    }
    let status = wait_status(&url, "shared-key", Duration::from_secs(240), |s| {
        s["state"] == "complete"
    });
    assert_eq!(status["stored"], status["jobs"], "{status}");

    // Each worker held half of the key's limit while both called it.
    for worker in &workers {
        let log = worker.log_text();
        assert!(
            log.contains("provider limit shared") && log.contains("workers=2"),
            "{}: {log}",
            worker.name
        );
    }
    // Together at the limit, not twice it, and (almost) never refused.
    let seen: Vec<Seen> = provider.seen().remove("k-cluster").expect("calls");
    let accepted: Vec<Duration> = seen.iter().filter(|s| s.accepted).map(|s| s.at).collect();
    let (first, last) = (accepted[0], accepted[accepted.len() - 1]);
    assert!(
        last - first > Duration::from_secs(12),
        "too short a run to measure: {:?} ({} calls)",
        last - first,
        accepted.len()
    );
    // The middle of the run: both workers busy (not the first lease round, not the tail).
    let per_minute = provider::accepted_per_minute(
        &seen,
        first + Duration::from_secs(3),
        last - Duration::from_secs(3),
    );
    assert!(
        (255.0..=310.0).contains(&per_minute),
        "{per_minute} calls a minute for a limit of 300"
    );
    let refused = provider::refused_share(&seen);
    assert!(refused < 0.02, "{:.1}% refused", refused * 100.0);

    // The bucket gone: each worker keeps its share and says so; back, it follows the leases.
    nats.kill();
    for worker in &workers {
        assert!(
            wait_for_log(
                worker,
                "cannot reach the limits bucket",
                Duration::from_secs(20)
            ),
            "{}: {}",
            worker.name,
            worker.log_text()
        );
    }
    nats.restart();
    for worker in &workers {
        assert!(
            wait_for_log(
                worker,
                "the limits bucket answers again",
                Duration::from_secs(30)
            ),
            "{}: {}",
            worker.name,
            worker.log_text()
        );
    }
    drop(server);
}
