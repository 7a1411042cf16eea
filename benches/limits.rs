//! Provider limits against a mock provider that enforces them (tests/common/provider.rs: a token
//! bucket per key holding one second of its limit, 429 with Retry-After past it, the
//! `x-ratelimit-*` headers unless turned off, limits that change at a given time). The agents
//! under test are the provider's (answering in 150 ms); the customer and the judges are
//! simulated. Real `sage run` processes (embedded) and `sage worker`s over a nats-server.
//!
//! Goals (docs/benchmarks.md, "Provider limits"):
//! - `known`: embedded, one model, 600 RPM known: calls/min within 95-100% of 600, 429s < 0.5%;
//! - `adaptive`: the same limit unknown to SAGE-RS (`auto`): >= 90% of 600 after the first
//!   minute, 429s < 2% (with the provider's headers, and again without them);
//! - `cluster`: 4 workers over NATS sharing one key at 600 RPM / 200k TPM: within 95-100% of the
//!   limit, 429s < 1%, the same summary as an embedded run of the same configuration;
//! - `halved`: the provider halves its limit mid-run: back under it within 10 s;
//! - `keys`: 3 models on 3 keys at 60 / 600 / 6,000 RPM: each near its own limit at once.
//!
//! Run: `cargo bench --bench limits` (all, about 12 minutes) or `-- known adaptive ...`;
//! `SAGE_BENCH_MINUTES=1` shortens every measurement window.

#[path = "../tests/common/mod.rs"]
mod common;

use common::cluster::{Nats, Sage, test_dir, wait_status};
use common::provider::{self, KeyLimits, ProviderSpec, Seen};
use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const NO_TPM: u32 = u32::MAX;

fn minutes() -> f64 {
    std::env::var("SAGE_BENCH_MINUTES")
        .ok()
        .and_then(|m| m.parse().ok())
        .unwrap_or(2.0)
}

fn spec(keys: &[(&str, u32, u32)], headers: bool) -> ProviderSpec {
    ProviderSpec::keys(keys, headers, Duration::from_millis(150))
}

/// One agent under test on the provider: (name, key, its limits settings as YAML).
struct Agent<'a> {
    name: &'a str,
    key: &'a str,
    limits: &'a str,
}

/// A run of `agents` on the provider at `base_url`, the customer and judges simulated, with
/// `dialogues` cases per scenario of the Telecom scenario (the agent's answer fits it).
fn write_run(dir: &Path, base_url: &str, agents: &[Agent<'_>], dialogues: usize) -> String {
    let path = dir.join("run.yaml");
    let mut models = String::new();
    for a in agents {
        let var = format!("SAGE_BENCH_KEY_{}", a.name.to_uppercase().replace('-', "_"));
        models.push_str(&format!(
            "  - {{name: {}, provider: openai, base_url: '{base_url}', api_key_env: {var}, {}, timeout_secs: 30, retries: {{max_attempts: 20, base_delay_ms: 100, max_delay_ms: 5000}}}}\n",
            a.name, a.limits
        ));
        // SAFETY: set before any process or thread that reads it starts.
        unsafe { std::env::set_var(&var, a.key) };
    }
    let names: Vec<&str> = agents.iter().map(|a| a.name).collect();
    let text = format!(
        "models:
{models}  - {{name: sim-user, provider: simulated, sim: {{kind: user}}}}
  - {{name: sim-judge-1, provider: simulated, sim: {{kind: judge}}}}
  - {{name: sim-judge-2, provider: simulated, sim: {{kind: judge, noise: 0.03}}}}
  - {{name: sim-judge-3, provider: simulated, sim: {{kind: judge, noise: 0.06}}}}
service_models: [{}]
user_model: sim-user
judge_models: [sim-judge-1, sim-judge-2, sim-judge-3]
scenarios: [scenarios/telecom_package.yaml]
dialogues_per_scenario: {dialogues}
min_per_route: 0
max_turns: 8
concurrency: 256
seed: 21
",
        names.join(", ")
    );
    std::fs::write(&path, text).expect("config");
    path.display().to_string()
}

/// Starts `sage run` on `config`; killed when dropped.
struct Run(Child);

impl Run {
    fn start(dir: &Path, config: &str, run_id: &str) -> Run {
        let log = std::fs::File::create(dir.join(format!("{run_id}.log"))).expect("log");
        Run(Command::new(env!("CARGO_BIN_EXE_sage"))
            .args(["run", "--quiet", "--config", config, "--run-id", run_id])
            .arg("--out")
            .arg(dir.join("results"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("sage run starts"))
    }

    fn finished(&mut self) -> bool {
        self.0.try_wait().ok().flatten().is_some()
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Per key: accepted calls a minute over `[from, to)`, and the part refused over all of it.
fn report(name: &str, seen: &[Seen], from: Duration, to: Duration, limit: f64) -> (f64, f64) {
    report_tokens(name, seen, from, to, limit, None)
}

/// [`report`], with the tokens a minute as a part of `tpm` when given.
fn report_tokens(
    name: &str,
    seen: &[Seen],
    from: Duration,
    to: Duration,
    limit: f64,
    tpm: Option<f64>,
) -> (f64, f64) {
    let per_minute = provider::accepted_per_minute(seen, from, to);
    let window: Vec<Seen> = seen
        .iter()
        .filter(|s| s.at >= from && s.at < to)
        .copied()
        .collect();
    let refused = provider::refused_share(&window);
    let tokens: u64 = window.iter().map(|s| s.tokens).sum();
    let tokens_per_minute = tokens as f64 * 60.0 / (to - from).as_secs_f64();
    let of_tpm = tpm.map_or(String::new(), |t| {
        format!(" ({:.1}% of {t:.0})", tokens_per_minute / t * 100.0)
    });
    println!(
        "{name}: {per_minute:.0} calls/min ({:.1}% of {limit:.0}), {:.2}% refused, {tokens_per_minute:.0} tokens/min{of_tpm}, over {:.0} s ({} calls)",
        per_minute / limit * 100.0,
        refused * 100.0,
        (to - from).as_secs_f64(),
        window.len()
    );
    (per_minute, refused)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Runs `agents` embedded against `spec` for the measurement window (`warmup` then
/// `minutes()`), then stops the run; the provider's view per key.
fn embedded(
    spec: ProviderSpec,
    agents: &[Agent<'_>],
    warmup: Duration,
) -> (HashMap<String, Vec<Seen>>, Duration) {
    let rt = runtime();
    let (server, provider) = rt.block_on(provider::start(spec));
    let dir = test_dir();
    let config = write_run(dir.path(), &format!("{}/v1", server.uri()), agents, 100_000);
    let mut run = Run::start(dir.path(), &config, "bench");
    let until = warmup + Duration::from_secs_f64(minutes() * 60.0);
    let started = Instant::now();
    while started.elapsed() < until && !run.finished() {
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(!run.finished(), "the run ended before the window did");
    drop(run);
    (provider.seen(), until)
}

fn known() {
    println!("\n== known: embedded, one model, 600 RPM known");
    let (seen, until) = embedded(
        spec(&[("k-known", 600, NO_TPM)], true),
        &[Agent {
            name: "agent",
            key: "k-known",
            limits: "requests_per_minute: 600",
        }],
        Duration::from_secs(5),
    );
    report(
        "known",
        &seen["k-known"],
        Duration::from_secs(5),
        until,
        600.0,
    );
}

fn adaptive() {
    for headers in [true, false] {
        println!(
            "\n== adaptive: 600 RPM unknown (requests_per_minute: auto), headers {}",
            if headers { "on" } else { "off" }
        );
        let (seen, until) = embedded(
            spec(&[("k-auto", 600, NO_TPM)], headers),
            &[Agent {
                name: "agent",
                key: "k-auto",
                limits: "requests_per_minute: auto",
            }],
            Duration::from_secs(60),
        );
        report(
            "adaptive, first minute",
            &seen["k-auto"],
            Duration::ZERO,
            Duration::from_secs(60),
            600.0,
        );
        report(
            "adaptive, after the first minute",
            &seen["k-auto"],
            Duration::from_secs(60),
            until,
            600.0,
        );
    }
}

fn halved() {
    println!("\n== halved: 600 RPM known, the provider halves it at 60 s (headers off)");
    let mut s = spec(&[("k-halved", 600, NO_TPM)], false);
    s.changes = vec![(
        Duration::from_secs(60),
        "k-halved".into(),
        KeyLimits {
            rpm: 300,
            tpm: NO_TPM,
        },
    )];
    let (seen, until) = embedded(
        s,
        &[Agent {
            name: "agent",
            key: "k-halved",
            limits: "requests_per_minute: 600",
        }],
        Duration::from_secs(60),
    );
    let seen = &seen["k-halved"];
    report(
        "halved, before",
        seen,
        Duration::from_secs(5),
        Duration::from_secs(60),
        600.0,
    );
    // The last refusal of the burst after the change: when SAGE-RS was back under the limit.
    let mut last_burst = Duration::from_secs(60);
    for s in seen.iter().filter(|s| !s.accepted) {
        if s.at >= last_burst && s.at - last_burst <= Duration::from_secs(2) {
            last_burst = s.at;
        }
    }
    println!(
        "halved: refusals after the change stop {:.1} s after it",
        (last_burst - Duration::from_secs(60)).as_secs_f64()
    );
    report("halved, after", seen, Duration::from_secs(70), until, 300.0);
}

fn keys() {
    println!("\n== keys: 3 models on 3 keys at 60 / 600 / 6,000 RPM, one embedded run");
    let (seen, until) = embedded(
        spec(
            &[
                ("k-60", 60, NO_TPM),
                ("k-600", 600, NO_TPM),
                ("k-6000", 6_000, NO_TPM),
            ],
            true,
        ),
        &[
            Agent {
                name: "slow",
                key: "k-60",
                limits: "requests_per_minute: 60",
            },
            Agent {
                name: "mid",
                key: "k-600",
                limits: "requests_per_minute: 600",
            },
            Agent {
                name: "fast",
                key: "k-6000",
                limits: "requests_per_minute: 6000",
            },
        ],
        Duration::from_secs(10),
    );
    for (key, limit) in [("k-60", 60.0), ("k-600", 600.0), ("k-6000", 6_000.0)] {
        report(key, &seen[key], Duration::from_secs(10), until, limit);
    }
}

fn cluster() {
    println!("\n== cluster: 4 workers sharing one key at 600 RPM / 200k TPM");
    let rt = runtime();
    let (server, provider) =
        rt.block_on(provider::start(spec(&[("k-shared", 600, 200_000)], true)));
    let dir = test_dir();
    let base = format!("{}/v1", server.uri());
    let agents = [Agent {
        name: "agent",
        key: "k-shared",
        limits: "requests_per_minute: 600, tokens_per_minute: 200000",
    }];
    // Sized to last about the measurement window at the limit that binds: about 1,160 tokens a
    // call (the Telecom prompt), so 200k tokens a minute is about 170 calls a minute, and
    // about 4.6 agent calls a dialogue (measured).
    let dialogues = (minutes() * 170.0 / 4.6) as usize;
    let config = write_run(dir.path(), &base, &agents, dialogues);
    let nats = Nats::start(dir.path());
    let url = nats.url();
    let out = dir.path().join("results");
    let common = ["--nats", url.as_str(), "--metrics-addr", "127.0.0.1:0"];
    let key_env = [("SAGE_BENCH_KEY_AGENT", "k-shared")];
    let workers = Sage::workers(dir.path(), &url, 4, 64, &key_env);
    let _aggregator = Sage::aggregator(dir.path(), &out, &common);
    let started = Instant::now();
    common::sage_ok(&[
        "sweep", "--nats", &url, "--config", &config, "--run-id", "shared",
    ]);
    // Each second, the tokens rate the workers hold together (in force times share, from their
    // /metrics): shows whether a shortfall is the rates' (AIMD) or the calls' spacing.
    let addrs: Vec<String> = workers.iter().map(Sage::metrics_addr).collect();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let total: f64 = addrs
                    .iter()
                    .map(|a| {
                        let (_, body) = common::cluster::http_get(a, "/metrics");
                        let read = |name: &str| {
                            body.lines()
                                .find_map(|l| l.strip_prefix(name))
                                .and_then(|v| v.trim().parse::<f64>().ok())
                                .unwrap_or(0.0)
                        };
                        read("sage_limit_tokens_per_minute{endpoint=\"agent\"} ")
                            * read("sage_limit_share{endpoint=\"agent\"} ")
                    })
                    .sum();
                held.push(total);
                std::thread::sleep(Duration::from_secs(1));
            }
            held
        })
    };
    let status = wait_status(&url, "shared", Duration::from_secs(3600), |s| {
        s["state"] == "complete"
    });
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let held = sampler.join().unwrap_or_default();
    let middle = &held[held.len() / 5..held.len() * 4 / 5];
    println!(
        "cluster: tokens rate held by the workers together, middle 60%: mean {:.0}/min, lowest {:.0}",
        middle.iter().sum::<f64>() / middle.len().max(1) as f64,
        middle.iter().copied().fold(f64::INFINITY, f64::min)
    );
    println!(
        "cluster: {} dialogues stored of {} in {:.0} s",
        status["stored"],
        status["jobs"],
        started.elapsed().as_secs_f64()
    );
    drop(workers);
    let seen = &provider.seen()["k-shared"];
    let first = seen
        .iter()
        .find(|s| s.accepted)
        .map_or(Duration::ZERO, |s| s.at);
    let last = seen
        .iter()
        .rev()
        .find(|s| s.accepted)
        .map_or(Duration::ZERO, |s| s.at);
    report_tokens(
        "cluster, whole run",
        seen,
        first,
        last,
        600.0,
        Some(200_000.0),
    );
    // The steady part: the middle 60% (the last dialogues finish one by one, fewer in flight).
    let span = last.saturating_sub(first);
    report_tokens(
        "cluster, steady (middle 60%)",
        seen,
        first + span.mul_f64(0.2),
        first + span.mul_f64(0.8),
        600.0,
        Some(200_000.0),
    );
    // The same configuration embedded (the same provider, idle again): the same summary.
    let embedded_dir = dir.path().join("embedded");
    std::fs::create_dir_all(&embedded_dir).expect("folder");
    let mut run = Run::start(&embedded_dir, &config, "shared");
    while !run.finished() {
        std::thread::sleep(Duration::from_millis(500));
    }
    let read = |p: &Path| std::fs::read_to_string(p.join("summary.json")).unwrap_or_default();
    let same = read(&out.join("shared")) == read(&embedded_dir.join("results/shared"));
    println!("cluster: summary identical to the embedded run's: {same}");
}

fn main() {
    if common::bench_selected("known") {
        known();
    }
    if common::bench_selected("adaptive") {
        adaptive();
    }
    if common::bench_selected("halved") {
        halved();
    }
    if common::bench_selected("keys") {
        keys();
    }
    if common::bench_selected("cluster") {
        cluster();
    }
}
