//! A run's cost against its size (issue 11): peak memory must follow the work in flight, not
//! the work done. Release binary, zero-latency simulated models (the bundled scenarios, three
//! agents, `--max-turns 2` so that a million dialogues fit on this machine's disk), each process
//! measured from the outside (`wait4` for commands, `/proc/PID/status` VmHWM for servers).
//!
//! `cargo bench --bench scale -- flat|cluster|million`
//!
//! - flat: `sage run` at 1,000 / 10,000 / 100,000 dialogues: peak RSS and dialogues/s; then
//!   `sage report` and `sage export` on the 100,000. Goal: flat within the noise.
//! - cluster: a 200,000-dialogue `sage sweep` through one worker, the aggregator and
//!   nats-server: the aggregator's and the worker's peak RSS. Goal: aggregator under 256 MiB.
//! - million (only when named: about 8 GB of records and ten minutes): a 1,000,000-dialogue
//!   `sage run` (goal: under 512 MiB), then `sage report` and `sage export` on its folder
//!   (goal: under 256 MiB each).
//!
//! Numbers and method: docs/benchmarks.md.

#[path = "../tests/common/mod.rs"]
mod common;

use common::cluster::{Nats, Sage, wait_status};
use common::sage_ok;
use common::{Measured, measured_sage, process_peak_rss_mib};
use std::path::Path;
use std::time::{Duration, Instant};

/// Cases per scenario for about `dialogues` dialogues (six scenarios, three agents; the route
/// supplements add a few).
fn per_scenario(dialogues: usize) -> String {
    (dialogues / 18).to_string()
}

fn row(what: &str, dialogues: usize, m: &Measured) {
    println!(
        "| {what} | {dialogues} | {:.1} | {:.1} | {:.0} | {:.1} |",
        m.secs,
        m.cpu_secs,
        dialogues as f64 / m.secs,
        m.peak_rss_mib
    );
}

fn header() {
    println!("| command | dialogues | wall s | CPU s | dialogues/s | peak RSS MiB |");
    println!("|---|---|---|---|---|---|");
}

/// `sage run` of about `dialogues` into `out/ID`, then `sage report` and `sage export` on it
/// when `readers`; the folder is removed after.
fn embedded(out: &Path, dialogues: usize, readers: bool) {
    let id = format!("d{dialogues}");
    let out_s = out.display().to_string();
    let m = measured_sage(&[
        "run",
        "--quiet",
        "--dialogues",
        &per_scenario(dialogues),
        "--max-turns",
        "2",
        "--out",
        &out_s,
        "--run-id",
        &id,
    ]);
    row("sage run", dialogues, &m);
    let folder = out.join(&id);
    if readers {
        let folder_s = folder.display().to_string();
        row(
            "sage report",
            dialogues,
            &measured_sage(&["report", &folder_s]),
        );
        row(
            "sage export --format openai",
            dialogues,
            &measured_sage(&[
                "export",
                &folder_s,
                "--format",
                "openai",
                "--out",
                "/dev/null",
            ]),
        );
        row(
            "sage export --format sharegpt --min-logic 90",
            dialogues,
            &measured_sage(&[
                "export",
                &folder_s,
                "--format",
                "sharegpt",
                "--min-logic",
                "90",
                "--out",
                "/dev/null",
            ]),
        );
    }
    let _ = std::fs::remove_dir_all(&folder);
}

/// A sweep of about `dialogues` through one worker and the aggregator.
fn cluster(dir: &Path, dialogues: usize) {
    let config = dir.join("scale.yaml");
    std::fs::write(
        &config,
        format!(
            "scenarios: [bundled]\ndialogues_per_scenario: {}\nmax_turns: 2\njudge_turns: every\nseed: 3\n",
            per_scenario(dialogues)
        ),
    )
    .expect("config");
    let nats = Nats::start(dir);
    let url = nats.url();
    let out = dir.join("results");
    let worker = Sage::spawn(
        dir,
        "worker",
        &["worker", "--nats", &url, "--metrics-addr", "127.0.0.1:0"],
    );
    let aggregator = Sage::aggregator(
        dir,
        &out,
        &["--nats", &url, "--metrics-addr", "127.0.0.1:0"],
    );
    let started = Instant::now();
    sage_ok(&[
        "sweep",
        "--nats",
        &url,
        "--config",
        &config.display().to_string(),
        "--run-id",
        "scale",
    ]);
    let status = wait_status(&url, "scale", Duration::from_secs(4 * 3600), |s| {
        s["state"] == "complete"
    });
    let secs = started.elapsed().as_secs_f64();
    let stored = status["stored"].as_u64().unwrap_or(0) as usize;
    let rss = |p: &Sage| process_peak_rss_mib(p.pid().expect("running"));
    println!("| process | dialogues | wall s | dialogues/s | peak RSS MiB |");
    println!("|---|---|---|---|---|");
    for (name, p) in [("sage aggregator", &aggregator), ("sage worker", &worker)] {
        println!(
            "| {name} | {stored} | {secs:.1} | {:.0} | {:.1} |",
            stored as f64 / secs,
            rss(p)
        );
    }
    if let Some(pid) = nats.pid() {
        println!(
            "| nats-server | {stored} | {secs:.1} | | {:.1} |",
            process_peak_rss_mib(pid)
        );
    }
}

fn main() {
    let tmp = tempfile::tempdir().expect("temporary folder");
    // Only when named: it writes about 8 GB.
    let million = std::env::args().skip(1).any(|a| a == "million");
    if common::bench_selected("flat") && !million {
        println!("\n## flat: sage run at three sizes (release, --max-turns 2)\n");
        header();
        for (n, readers) in [(1_000, false), (10_000, false), (100_000, true)] {
            embedded(tmp.path(), n, readers);
        }
    }
    if common::bench_selected("cluster") && !million {
        println!("\n## cluster: a 200,000-dialogue sweep\n");
        cluster(tmp.path(), 200_000);
    }
    if million {
        println!("\n## million: a 1,000,000-dialogue run, its report and export\n");
        header();
        embedded(tmp.path(), 1_000_000, true);
    }
}
