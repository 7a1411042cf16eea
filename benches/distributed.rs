//! The distributed mode under load, with real processes on this machine: a nats-server with
//! JetStream, `sage worker` and `sage aggregator` processes (release build), `sage sweep`.
//!
//! `cargo bench --bench distributed -- throughput|scaling|desk`
//!
//! - throughput: zero-latency simulated models; turns per second end to end (from the sweep
//!   to the last record stored) and CPU per turn of every process (nats-server included),
//!   against the embedded `sage run` of the same configuration. Goals: >= 2,000 turns/s; CPU
//!   per turn <= 3x the embedded mode's.
//! - scaling: simulated models at 1 s per call; 1 worker holding C dialogues vs 4 workers
//!   holding C each: in-flight dialogues (sampled from their /metrics), turns per second, and
//!   the time a dialogue spends per turn (Little's law: in flight / turns per second).
//! - desk: the support-desk suite through one worker (own roles in-process, then every role
//!   request through NATS): conversations per second and CPU per conversation against the
//!   embedded run; the desk summaries must be equal.
//!
//! Numbers and method: docs/benchmarks.md.

#[path = "../tests/common/mod.rs"]
mod common;

use common::cluster::{Nats, Sage, http_get};
use common::sage_ok;
use std::path::Path;
use std::time::{Duration, Instant};

/// CPU seconds (user + system) a live process has used, from /proc.
fn cpu_of(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (ticks(11) + ticks(12)) / hz
}

/// Runs `sage ARGS` to its end; its CPU seconds (from wait4).
#[allow(clippy::zombie_processes)] // reaped by wait4, which also gives its CPU time
fn run_measured(args: &[&str]) -> f64 {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("sage starts");
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as i32;
    unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "sage {args:?} failed"
    );
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// A metric's value summed over its series, from a process's /metrics.
fn metric(addr: &str, family: &str) -> f64 {
    let (_, body) = http_get(addr, "/metrics");
    body.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| {
            l.strip_prefix(family)
                .is_some_and(|r| r.starts_with('{') || r.starts_with(' '))
        })
        .filter_map(|l| l.rsplit_once(' ').and_then(|(_, v)| v.parse::<f64>().ok()))
        .sum()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("config");
    path.display().to_string()
}

/// A cluster: nats-server, `workers` all-role workers, the aggregator.
struct Cluster {
    nats: Nats,
    workers: Vec<Sage>,
    aggregator: Sage,
    url: String,
}

impl Cluster {
    fn start(dir: &Path, workers: usize, concurrency: usize, remote_roles: bool) -> Cluster {
        let nats = Nats::start(dir);
        let url = nats.url();
        let concurrency = concurrency.to_string();
        let workers = (0..workers)
            .map(|i| {
                let mut args = vec![
                    "worker",
                    "--nats",
                    &url,
                    "--metrics-addr",
                    "127.0.0.1:0",
                    "--concurrency",
                    &concurrency,
                ];
                if remote_roles {
                    args.push("--remote-roles");
                }
                Sage::spawn(dir, &format!("worker-{i}"), &args)
            })
            .collect();
        let aggregator = Sage::aggregator(
            dir,
            &dir.join("results"),
            &["--nats", &url, "--metrics-addr", "127.0.0.1:0"],
        );
        let cluster = Cluster {
            nats,
            workers,
            aggregator,
            url,
        };
        for w in &cluster.workers {
            w.metrics_addr();
        }
        cluster.aggregator.metrics_addr();
        // Let every process finish connecting and creating its consumer.
        std::thread::sleep(Duration::from_millis(500));
        cluster
    }

    fn pids(&self) -> Vec<u32> {
        let mut pids: Vec<u32> = self.workers.iter().filter_map(|w| w.pid()).collect();
        pids.extend(self.aggregator.pid());
        pids.extend(self.nats.pid());
        pids
    }

    fn cpu(&self) -> f64 {
        self.pids().into_iter().map(cpu_of).sum()
    }

    /// Submits run `bench` with `sage sweep ARGS` and waits for it to complete: the wall time,
    /// the CPU of every process (the sweep's included) and the final status.
    fn sweep(&self, args: &[&str]) -> (f64, f64, serde_json::Value) {
        let cpu_before = self.cpu();
        let started = Instant::now();
        let mut sweep = vec!["sweep", "--nats", &self.url, "--run-id", "bench"];
        sweep.extend(args);
        let sweep_cpu = run_measured(&sweep);
        let status =
            common::cluster::wait_status(&self.url, "bench", Duration::from_secs(600), |s| {
                s["state"] == "complete"
            });
        let wall = started.elapsed().as_secs_f64();
        (wall, self.cpu() - cpu_before + sweep_cpu, status)
    }

    fn sum(&self, family: &str) -> f64 {
        self.workers
            .iter()
            .map(|w| metric(&w.metrics_addr(), family))
            .sum()
    }
}

fn throughput() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write(
        dir.path(),
        "run.yaml",
        "dialogues_per_scenario: 150\nmin_per_route: 2\n",
    );
    let out = dir.path().join("embedded").display().to_string();
    let embedded_cpu = run_measured(&[
        "run", "--config", &config, "--quiet", "--out", &out, "--run-id", "bench",
    ]);
    let summary = std::fs::read_to_string(dir.path().join("embedded/bench/summary.json"))
        .expect("embedded summary");
    println!(
        "throughput: zero-latency simulated models, nats-server and every process on this machine"
    );
    println!("| setup | dialogues | turns | wall s | turns/s | CPU s | CPU/turn us | x embedded |");
    println!("|---|---|---|---|---|---|---|---|");
    let mut embedded_per_turn = None;
    for (workers, remote) in [(1, false), (1, true), (2, false), (2, true)] {
        let sub = dir.path().join(format!("w{workers}-{remote}"));
        std::fs::create_dir_all(&sub).expect("dir");
        let cluster = Cluster::start(&sub, workers, 256, remote);
        let (wall, cpu, status) = cluster.sweep(&["--config", &config]);
        let dialogues = status["jobs"].as_f64().unwrap_or(0.0);
        // The same turns as the embedded run (same seed; the summaries are compared below).
        let run_turns = status["turns"].as_f64().unwrap_or(f64::NAN);
        let per_turn = cpu / run_turns * 1e6;
        let embedded = *embedded_per_turn.get_or_insert(embedded_cpu / run_turns * 1e6);
        let distributed = std::fs::read_to_string(sub.join("results/bench/summary.json"))
            .expect("distributed summary");
        assert!(distributed == summary, "distributed summary differs");
        if workers == 1 && !remote {
            println!(
                "| embedded `sage run` | {dialogues} | {run_turns} | - | - | {embedded_cpu:.2} | {embedded:.1} | 1.0 |"
            );
        }
        let roles = if remote {
            "every role request through NATS (--remote-roles)"
        } else {
            "own roles in-process"
        };
        println!(
            "| {workers} worker(s), all roles, {roles}; aggregator; nats-server | {dialogues} | {run_turns} | {wall:.2} | {:.0} | {cpu:.2} | {per_turn:.1} | {:.2} |",
            run_turns / wall,
            per_turn / embedded
        );
        drop(cluster);
    }
    println!(
        "(status polling by `sage status` processes is not counted; the summary equals the embedded one)"
    );
}

fn scaling() {
    let dir = tempfile::tempdir().expect("temp dir");
    let latency = "{fixed_ms: 1000}";
    let per_worker = 1000;
    // No per-process model limit: the harness, not the endpoint limit, is measured.
    let limit = 100_000;
    println!("scaling: simulated models at 1 s per call, {per_worker} dialogues per worker");
    println!(
        "| workers | capacity | in flight (mean) | turns/s | s per turn (in flight / turns/s) | CPU s per s |"
    );
    println!("|---|---|---|---|---|---|");
    for workers in [1usize, 4] {
        // Enough jobs to keep every worker full through the measurement window.
        let dialogues = 180 * workers;
        let config = write(
            dir.path(),
            &format!("scale{workers}.yaml"),
            &format!(
                "models:
  - {{name: sim-strong, provider: simulated, max_concurrency: {limit}, sim: {{kind: agent, profile: strong, latency: {latency}}}}}
  - {{name: sim-balanced, provider: simulated, max_concurrency: {limit}, sim: {{kind: agent, profile: balanced, latency: {latency}}}}}
  - {{name: sim-weak, provider: simulated, max_concurrency: {limit}, sim: {{kind: agent, profile: weak, latency: {latency}}}}}
  - {{name: sim-user, provider: simulated, max_concurrency: {limit}, sim: {{kind: user, latency: {latency}}}}}
  - {{name: sim-judge-1, provider: simulated, max_concurrency: {limit}, sim: {{kind: judge, latency: {latency}}}}}
  - {{name: sim-judge-2, provider: simulated, max_concurrency: {limit}, sim: {{kind: judge, noise: 0.03, latency: {latency}}}}}
  - {{name: sim-judge-3, provider: simulated, max_concurrency: {limit}, sim: {{kind: judge, noise: 0.06, latency: {latency}}}}}
dialogues_per_scenario: {dialogues}
min_per_route: 1
max_turns: 16
judge_turns: every
"
            ),
        );
        let sub = dir.path().join(format!("s{workers}"));
        std::fs::create_dir_all(&sub).expect("dir");
        let cluster = Cluster::start(&sub, workers, per_worker, false);
        sage_ok(&[
            "sweep",
            "--nats",
            &cluster.url,
            "--config",
            &config,
            "--run-id",
            "scale",
        ]);
        // Fill up, then measure for 30 s.
        std::thread::sleep(Duration::from_secs(10));
        let (turns0, cpu0, t0) = (
            cluster.sum("sage_turns_total"),
            cluster.cpu(),
            Instant::now(),
        );
        let mut samples = Vec::new();
        while t0.elapsed() < Duration::from_secs(30) {
            samples.push(cluster.sum("sage_dialogues_in_flight"));
            std::thread::sleep(Duration::from_secs(1));
        }
        let secs = t0.elapsed().as_secs_f64();
        let turns_per_s = (cluster.sum("sage_turns_total") - turns0) / secs;
        let cpu_per_s = (cluster.cpu() - cpu0) / secs;
        let in_flight = samples.iter().sum::<f64>() / samples.len() as f64;
        println!(
            "| {workers} | {} | {in_flight:.0} | {turns_per_s:.0} | {:.2} | {cpu_per_s:.2} |",
            workers * per_worker,
            in_flight / turns_per_s
        );
        drop(cluster);
    }
}

/// The support-desk suite over the broker: the bundled store, the three simulated agents, five
/// runs of every case; conversations per second and CPU per conversation against the embedded
/// `sage run --suite support-desk`.
fn desk() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = write(dir.path(), "desk.yaml", "repeats: 5\n");
    let out = dir.path().join("embedded").display().to_string();
    let embedded_cpu = run_measured(&[
        "run",
        "--suite",
        "support-desk",
        "--config",
        &config,
        "--quiet",
        "--out",
        &out,
        "--run-id",
        "bench",
    ]);
    let summary = std::fs::read_to_string(dir.path().join("embedded/bench/desk-summary.json"))
        .expect("embedded summary");
    println!("desk: the support-desk suite, zero-latency simulated models, every process here");
    println!(
        "| setup | conversations | wall s | conversations/s | CPU s | CPU/conversation us | x embedded |"
    );
    println!("|---|---|---|---|---|---|---|");
    let mut embedded_per = None;
    for remote in [false, true] {
        let sub = dir.path().join(format!("desk-{remote}"));
        std::fs::create_dir_all(&sub).expect("dir");
        let cluster = Cluster::start(&sub, 1, 256, remote);
        let (wall, cpu, status) = cluster.sweep(&["--suite", "support-desk", "--config", &config]);
        let n = status["jobs"].as_f64().unwrap_or(f64::NAN);
        let per = cpu / n * 1e6;
        let embedded = *embedded_per.get_or_insert(embedded_cpu / n * 1e6);
        let distributed = std::fs::read_to_string(sub.join("results/bench/desk-summary.json"))
            .expect("distributed summary");
        assert!(distributed == summary, "distributed desk summary differs");
        if !remote {
            println!(
                "| embedded `sage run --suite support-desk` | {n} | - | - | {embedded_cpu:.2} | {embedded:.1} | 1.0 |"
            );
        }
        let roles = if remote {
            "every role request through NATS (--remote-roles)"
        } else {
            "own roles in-process"
        };
        println!(
            "| 1 worker, all roles, {roles}; aggregator; nats-server | {n} | {wall:.2} | {:.0} | {cpu:.2} | {per:.1} | {:.2} |",
            n / wall,
            per / embedded
        );
        drop(cluster);
    }
}

fn main() {
    if common::bench_selected("throughput") {
        throughput();
    }
    if common::bench_selected("desk") {
        desk();
    }
    if common::bench_selected("scaling") {
        scaling();
    }
}
