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

/// A run whose agents under test are the provider's, each with its API key variable and its
/// known requests-per-minute limit; the customer and the judges simulated.
fn write_run(
    dir: &Path,
    base_url: &str,
    agents: &[(&str, &str, u32)],
    per_scenario: u32,
) -> String {
    let path = dir.join("run.yaml");
    let models: String = agents
        .iter()
        .map(|(name, key_var, rpm)| {
            format!(
                "  - {{name: {name}, provider: openai, base_url: '{base_url}', api_key_env: {key_var}, requests_per_minute: {rpm}, timeout_secs: 10, retries: {{max_attempts: 10, base_delay_ms: 50, max_delay_ms: 2000}}}}\n"
            )
        })
        .collect();
    let names: Vec<&str> = agents.iter().map(|a| a.0).collect();
    let text = format!(
        "models:
{models}  - {{name: sim-user, provider: simulated, sim: {{kind: user}}}}
  - {{name: sim-judge-1, provider: simulated, sim: {{kind: judge}}}}
  - {{name: sim-judge-2, provider: simulated, sim: {{kind: judge, noise: 0.03}}}}
  - {{name: sim-judge-3, provider: simulated, sim: {{kind: judge, noise: 0.06}}}}
service_models: [{}]
user_model: sim-user
judge_models: [sim-judge-1, sim-judge-2, sim-judge-3]
scenarios: [bundled]
dialogues_per_scenario: {per_scenario}
min_per_route: 0
max_turns: 8
seed: 11
",
        names.join(", ")
    );
    std::fs::write(&path, text).expect("config");
    path.display().to_string()
}

/// The mock provider enforcing `spec`, served by its own runtime (kept alive beside it).
fn limited_provider(
    spec: ProviderSpec,
) -> (
    tokio::runtime::Runtime,
    wiremock::MockServer,
    provider::LimitedProvider,
) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (server, provider) = runtime.block_on(provider::start(spec));
    (runtime, server, provider)
}

/// Where the aggregator of [`sweep`] writes.
fn results(dir: &Path) -> std::path::PathBuf {
    dir.join("results")
}

/// `workers.0` workers of `workers.1` slots each with `env`, an aggregator writing
/// [`results`], and the run `config` submitted to them as `run_id`.
fn sweep(
    dir: &Path,
    url: &str,
    workers: (usize, usize),
    env: &[(&str, &str)],
    config: &str,
    run_id: &str,
) -> (Vec<Sage>, Sage) {
    let started = Sage::workers(dir, url, workers.0, workers.1, env);
    let common = ["--nats", url, "--metrics-addr", "127.0.0.1:0"];
    let aggregator = Sage::aggregator(dir, &results(dir), &common);
    sage_ok(&[
        "sweep", "--nats", url, "--config", config, "--run-id", run_id,
    ]);
    (started, aggregator)
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
    let (_runtime, server, provider) = limited_provider(ProviderSpec::keys(
        &[("k-cluster", 300, u32::MAX)],
        true,
        Duration::from_millis(30),
    ));
    let dir = test_dir();
    let config = write_run(
        dir.path(),
        &format!("{}/v1", server.uri()),
        &[("agent", KEY_VAR, 300)],
        3,
    );
    let mut nats = Nats::start(dir.path());
    let url = nats.url();
    let (workers, _aggregator) = sweep(
        dir.path(),
        &url,
        // Few slots a worker, so both keep dialogues until the queue is empty (with 16 the
        // first worker to pull took most of the run's 18 dialogues, and the other sat idle).
        (2, 4),
        &[(KEY_VAR, "k-cluster")],
        &config,
        "shared-key",
    );
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
        last - first > Duration::from_secs(14),
        "too short a run to measure: {:?} ({} calls)",
        last - first,
        accepted.len()
    );
    // The first half of the run after the first lease round: the queue still holds dialogues,
    // so both workers are calling (in the tail one may have none while its lease runs out).
    let per_minute =
        provider::accepted_per_minute(&seen, first + Duration::from_secs(3), (first + last) / 2);
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

/// No head-of-line blocking in a worker: two models under test, one on a key of 60 requests a
/// minute and one on a key of 6,000, played by two workers of 2 slots each. Without lanes the
/// slow model's dialogues, queued between the fast one's, fill every slot while they wait for
/// their grants (about 20 s) and the fast model's last dialogues wait behind them; with lanes
/// each model holds its part and the slow model's jobs wait at the end of the queue.
#[test]
fn a_slow_provider_does_not_hold_back_another_models_dialogues_in_a_worker() {
    let (_runtime, server, provider) = limited_provider(ProviderSpec::keys(
        &[("k-60", 60, u32::MAX), ("k-6000", 6_000, u32::MAX)],
        true,
        Duration::from_millis(30),
    ));
    let dir = test_dir();
    let config = write_run(
        dir.path(),
        &format!("{}/v1", server.uri()),
        &[
            ("slow", "SAGE_SLOW_KEY", 60),
            ("fast", "SAGE_FAST_KEY", 6_000),
        ],
        1,
    );
    let nats = Nats::start(dir.path());
    let url = nats.url();
    let keys = [("SAGE_SLOW_KEY", "k-60"), ("SAGE_FAST_KEY", "k-6000")];
    let (workers, _aggregator) = sweep(dir.path(), &url, (2, 2), &keys, &config, "two-paces");
    let status = wait_status(&url, "two-paces", Duration::from_secs(240), |s| {
        s["state"] == "complete"
    });
    assert_eq!(status["stored"], status["jobs"], "{status}");
    assert_eq!(status["jobs"], 12, "{status}");

    let seen = provider.seen();
    let span = |key: &str| {
        let accepted: Vec<Duration> = seen[key]
            .iter()
            .filter(|s| s.accepted)
            .map(|s| s.at)
            .collect();
        (accepted[0], accepted[accepted.len() - 1])
    };
    let (slow_first, slow_last) = span("k-60");
    let (fast_first, fast_last) = span("k-6000");
    eprintln!(
        "calls spanned: slow {:?}, fast {:?}",
        slow_last - slow_first,
        fast_last.saturating_sub(fast_first)
    );
    // The slow model's calls take their time (so its dialogues could have held the slots)...
    assert!(
        slow_last - slow_first > Duration::from_secs(15),
        "the slow model was not slow: {:?}",
        slow_last - slow_first
    );
    // ...while the fast model's dialogues all finish early, beside the slow model's first.
    assert!(
        fast_last.saturating_sub(fast_first) < Duration::from_secs(8),
        "the fast model's dialogues waited behind the slow model's: its calls spanned {:?}, the slow model's {:?}",
        fast_last.saturating_sub(fast_first),
        slow_last - slow_first
    );
    for key in ["k-60", "k-6000"] {
        let refused = provider::refused_share(&seen[key]);
        let when: Vec<String> = seen[key]
            .iter()
            .map(|s| {
                format!(
                    "{}{:.2}",
                    if s.accepted { "" } else { "REFUSED " },
                    s.at.as_secs_f64()
                )
            })
            .collect();
        eprintln!(
            "{key}: {} calls, {:.1}% refused",
            seen[key].len(),
            refused * 100.0
        );
        assert!(
            refused < 0.05,
            "{key}: {:.1}% refused: {}",
            refused * 100.0,
            when.join(", ")
        );
    }
    // The slow model's jobs were deferred (queued again), none dropped or played twice.
    let deferred: f64 = workers
        .iter()
        .map(|w| {
            let (_, body) = http_get(&w.metrics_addr(), "/metrics");
            body.lines()
                .find_map(|l| l.strip_prefix("sage_jobs_deferred_total "))
                .and_then(|v| v.trim().parse::<f64>().ok())
                .unwrap_or(0.0)
        })
        .sum();
    assert!(deferred > 0.0, "no job was deferred");
    let records = std::fs::read_to_string(
        results(dir.path())
            .join("two-paces")
            .join("dialogues.jsonl"),
    )
    .expect("records");
    assert_eq!(records.lines().count(), 12);
    drop(server);
}
