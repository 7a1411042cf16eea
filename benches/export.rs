//! `sage export` on a large run: peak resident memory and throughput of the release binary
//! (method and numbers in docs/benchmarks.md, "Export").
//!
//! The run is synthetic: the 72 records of the test fixture (tests/data/export/fixture-run, a
//! small real run) copied until there are `SAGE_EXPORT_BENCH_DIALOGUES` records (default
//! 108,000), each copy its own cases (the case number of its dialogue ids prefixed by the copy
//! number) and its own customer lines (prefixed by the copy number), so no two copies share an
//! example and `--dedup` has to remember every one; pairs of models stay within a copy. The
//! file goes to a temporary folder (`TMPDIR`) and is removed at the end.
//!
//! Each case runs `sage export` as a child process, standard output to /dev/null unless it
//! writes files, and reads its peak RSS from `wait4`. Goal: peak RSS under 256 MiB whatever
//! the run's size (one million dialogues), time linear in the dialogues.
//!
//! Then `stream-openai` and `stream-dedup` export a run of `SAGE_EXPORT_BENCH_STREAMED` records
//! (default 1,000,000: 14 GiB, more than this machine's free disk) fed through a FIFO by a
//! thread of the benchmark, so that the goal's size is measured without storing it.
//!
//! `cargo bench --bench export -- openai dedup` runs those cases; with no argument, all.

#[path = "../tests/common/mod.rs"]
mod common;

use common::Measured;

use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

/// Writes the synthetic run's folder: the fixture's manifest and `n` records.
fn synthesize(dir: &Path, n: usize) -> u64 {
    manifest(dir);
    let file = std::fs::File::create(dir.join("dialogues.jsonl")).expect("dialogues.jsonl");
    records(file, n)
}

fn fixture() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/export/fixture-run")
}

/// The run folder with the fixture's manifest.
fn manifest(dir: &Path) {
    std::fs::create_dir_all(dir).expect("run folder");
    std::fs::copy(fixture().join("manifest.json"), dir.join("manifest.json")).expect("manifest");
}

/// Writes `n` synthetic records to `to` (see the module's documentation); the bytes written.
fn records(to: impl Write, n: usize) -> u64 {
    let text = std::fs::read_to_string(fixture().join("dialogues.jsonl")).expect("fixture");
    let lines: Vec<&str> = text.lines().collect();
    let mut out = BufWriter::with_capacity(1 << 20, to);
    let key = "\"dialogue_id\":\"";
    let mut bytes = 0;
    for i in 0..n {
        let (copy, line) = (i / lines.len(), lines[i % lines.len()]);
        // `scenario/0001/model/r0` -> `scenario/c00042-0001/model/r0`.
        let start = line.find(key).expect("a dialogue id") + key.len();
        let slash = start + line[start..].find('/').expect("scenario/case") + 1;
        let line = format!("{}c{copy:05}-{}", &line[..slash], &line[slash..])
            .replace(
                "\"user_message\":\"",
                &format!("\"user_message\":\"[{copy}] "),
            )
            .replace(
                &format!("\"user_message\":\"[{copy}] \""),
                "\"user_message\":\"\"",
            );
        if out.write_all(line.as_bytes()).is_err() || out.write_all(b"\n").is_err() {
            break; // the reader stopped
        }
        bytes += line.len() as u64 + 1;
    }
    let _ = out.flush();
    bytes
}

/// A run folder whose dialogues.jsonl is a FIFO fed `n` synthetic records by a thread, so a
/// run of any size streams through `sage export` without being stored (only the cases that
/// read the file once, in order, can read it).
fn streamed(dir: &Path, n: usize) -> std::thread::JoinHandle<u64> {
    manifest(dir);
    let fifo = dir.join("dialogues.jsonl");
    let c = std::ffi::CString::new(fifo.display().to_string()).expect("a path");
    // SAFETY: mkfifo reads the NUL-terminated path we own.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    std::thread::spawn(move || {
        // Opening blocks until sage opens the other end.
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&fifo)
            .expect("the FIFO");
        records(file, n)
    })
}

/// What one `sage export` cost.
/// Runs `sage export DIR ARGS` to its end (standard output discarded).
fn measure(dir: &Path, args: &[&str]) -> Measured {
    let mut all: Vec<&str> = vec!["export", dir.to_str().expect("a UTF-8 path")];
    all.extend(args);
    common::measured_sage(&all)
}

fn main() {
    let n: usize = std::env::var("SAGE_EXPORT_BENCH_DIALOGUES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(108_000);
    let tmp = tempfile::tempdir().expect("temporary folder");
    let run = tmp.path().join("run");
    let started = Instant::now();
    let bytes = synthesize(&run, n);
    println!(
        "synthetic run: {n} dialogues, dialogues.jsonl {:.0} MiB, written in {:.1} s",
        bytes as f64 / (1u64 << 20) as f64,
        started.elapsed().as_secs_f64()
    );
    let train = tmp.path().join("train.jsonl").display().to_string();
    // `--min-logic 0`: every scored answer (the default keeps the fully correct ones alone),
    // the workload the figures of docs/benchmarks.md were measured on.
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("openai", vec!["--format", "openai", "--min-logic", "0"]),
        ("sharegpt", vec!["--format", "sharegpt", "--min-logic", "0"]),
        (
            "dedup",
            vec!["--format", "openai", "--min-logic", "0", "--dedup"],
        ),
        (
            "caps",
            vec![
                "--format",
                "openai",
                "--min-logic",
                "0",
                "--max-per-scenario",
                "20000",
                "--max-per-route",
                "5000",
            ],
        ),
        (
            "split",
            vec![
                "--format",
                "openai",
                "--min-logic",
                "90",
                "--split",
                "validation=0.1",
                "--out",
                &train,
            ],
        ),
        ("dpo", vec!["--format", "dpo"]),
    ];
    println!(
        "{:<13} {:>9} {:>9} {:>13} {:>13}  stats",
        "case", "wall s", "CPU s", "dialogues/s", "peak RSS MiB"
    );
    for (name, args) in cases {
        if !common::bench_selected(name) {
            continue;
        }
        let m = measure(&run, &args);
        println!(
            "{name:<13} {:>9.1} {:>9.1} {:>13.0} {:>13.1}  {}",
            m.secs,
            m.cpu_secs,
            n as f64 / m.secs,
            m.peak_rss_mib,
            m.stderr.trim().replace('\n', " | ")
        );
        for f in [
            train.clone(),
            format!("{}.validation.jsonl", &train[..train.len() - 6]),
        ] {
            let _ = std::fs::remove_file(f);
        }
    }
    // A run too large to store here, streamed through a FIFO.
    let big: usize = std::env::var("SAGE_EXPORT_BENCH_STREAMED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    for (name, args) in [
        (
            "stream-openai",
            vec!["--format", "openai", "--min-logic", "0"],
        ),
        (
            "stream-dedup",
            vec!["--format", "openai", "--min-logic", "0", "--dedup"],
        ),
    ] {
        if !common::bench_selected(name) {
            continue;
        }
        let dir = tmp.path().join(name);
        let feeder = streamed(&dir, big);
        let m = measure(&dir, &args);
        let bytes = feeder.join().expect("the feeder");
        println!(
            "{name:<13} {:>9.1} {:>9.1} {:>13.0} {:>13.1}  {} dialogues ({:.1} GiB) through a FIFO | {}",
            m.secs,
            m.cpu_secs,
            big as f64 / m.secs,
            m.peak_rss_mib,
            big,
            bytes as f64 / (1u64 << 30) as f64,
            m.stderr.trim().replace('\n', " | ")
        );
    }
}
