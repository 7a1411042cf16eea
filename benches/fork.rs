//! `sage fork` on the default run (issue 33): the preference pairs a run gives before and after
//! a fork at every judged turn (three models, four samples), and what the fork costs per 1,000
//! parent dialogues (wall and CPU time, peak RSS, bytes of records). Release binary, each
//! command measured from the outside (`wait4`). Numbers and method: docs/training-data.md.
//!
//! `cargo bench --bench fork`. The results go to a temporary folder (`TMPDIR`), removed at the
//! end (the fork of the default run writes about 260 MB).

#[path = "../tests/common/mod.rs"]
mod common;

use common::measured_sage;
use std::path::Path;

/// The pairs line of `sage export DIR --format dpo-trl`'s standard error ("N preference
/// pairs ...") and the yield line.
fn pairs(dir: &Path, out: &Path) -> (usize, String) {
    let m = measured_sage(&[
        "export",
        dir.to_str().unwrap(),
        "--format",
        "dpo-trl",
        "--out",
        out.to_str().unwrap(),
    ]);
    let count = std::fs::read_to_string(out).map_or(0, |t| t.lines().count());
    let yield_line = m
        .stderr
        .lines()
        .find(|l| l.starts_with("yield"))
        .unwrap_or("")
        .to_string();
    (count, yield_line)
}

fn main() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().display().to_string();
    let run = measured_sage(&["run", "--quiet", "--out", &out, "--run-id", "default"]);
    let parent = tmp.path().join("default");
    let dialogues = common::records_json(&parent).len();
    println!(
        "default run: {dialogues} dialogues in {:.1} s ({:.1} s CPU, {:.0} MiB)",
        run.secs, run.cpu_secs, run.peak_rss_mib
    );
    let (before, yield_before) = pairs(&parent, &tmp.path().join("before.jsonl"));
    println!("pairs before: {before}\n  {yield_before}");

    let forked = tmp.path().join("fork");
    let fork = measured_sage(&[
        "fork",
        parent.to_str().unwrap(),
        "--out",
        forked.to_str().unwrap(),
        "--samples",
        "4",
        "--quiet",
    ]);
    let done: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(forked.join("fork.json")).expect("fork.json"),
    )
    .expect("json");
    let bytes = std::fs::metadata(forked.join("dialogues.jsonl")).map_or(0, |m| m.len());
    let (after, yield_after) = pairs(&forked, &tmp.path().join("after.jsonl"));
    let per_k = 1000.0 / dialogues as f64;
    println!(
        "pairs after: {after} ({:.1}x, {:.2} per dialogue)\n  {yield_after}",
        after as f64 / before.max(1) as f64,
        after as f64 / dialogues as f64
    );
    println!(
        "fork: {} branches at {} points; {:.1} s wall, {:.1} s CPU, {:.0} MiB peak, {:.0} MB of records",
        done["done"]["branches"],
        done["done"]["points"],
        fork.secs,
        fork.cpu_secs,
        fork.peak_rss_mib,
        bytes as f64 / 1e6
    );
    println!(
        "per 1,000 parent dialogues: {:.0} pairs, {:.1} s CPU, {:.0} MB of records",
        after as f64 * per_k,
        fork.cpu_secs * per_k,
        bytes as f64 / 1e6 * per_k
    );
}
