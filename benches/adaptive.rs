//! `sage run --adaptive` on 27 simulated agents of distinct skill (issue 34's goal): the full
//! run's top three at no more than 60% of its dialogues. A full run of about 1,000 dialogues
//! per model (27,000 in all) and the adaptive run of the same configuration, each measured from
//! the outside (wall and CPU time, peak RSS). Numbers and method: docs/run-config.md,
//! "Adaptive runs".
//!
//! `cargo bench --bench adaptive` (`ADAPTIVE_DIALOGUES=N`: cases per scenario, default 167,
//! six scenarios; `ADAPTIVE_SEEDS=a,b,..`: the runs' seeds, default 1). The results go to a
//! temporary folder, removed at the end.

#[path = "../tests/common/mod.rs"]
mod common;

use common::measured_sage;
use std::collections::BTreeSet;
use std::path::Path;

/// The 27 agents' run: agent i's classification and action skills 0.99 - 0.02 i (0.99 down to
/// 0.47), format errors from 1% to 14%; one simulated customer and one judge; three turns,
/// every one judged.
fn config(dir: &Path, dialogues: usize, seed: u64) -> std::path::PathBuf {
    let mut text = String::from("models:\n");
    let names: Vec<String> = (0..27).map(|i| format!("agent-{i:02}")).collect();
    for (i, name) in names.iter().enumerate() {
        let skill = 0.99 - 0.02 * i as f64;
        let errors = 0.01 + 0.005 * i as f64;
        text.push_str(&format!(
            "  - {{name: {name}, provider: simulated, sim: {{kind: agent, profile: balanced, skills: {{classification_accuracy: {skill:.2}, action_derivation: {skill:.2}, format_error_rate: {errors:.3}}}}}}}\n"
        ));
    }
    text.push_str(&format!(
        "  - {{name: sim-user, provider: simulated, sim: {{kind: user}}}}
  - {{name: sim-judge, provider: simulated, sim: {{kind: judge}}}}
service_models: [{}]
user_model: sim-user
judge_models: [sim-judge]
scenarios: [bundled]
dialogues_per_scenario: {dialogues}
min_per_route: 0
max_turns: 3
judge_turns: every
concurrency: 64
seed: {seed}
",
        names.join(", ")
    ));
    let path = dir.join(format!("agents-27-{seed}.yaml"));
    std::fs::write(&path, text).expect("config");
    path
}

fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).expect("summary"))
        .expect("json")
}

fn main() {
    let dialogues: usize = std::env::var("ADAPTIVE_DIALOGUES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(167);
    let seeds: Vec<u64> = std::env::var("ADAPTIVE_SEEDS")
        .ok()
        .map(|s| s.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![1]);
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = tmp.path().display().to_string();
    let mut shares = Vec::new();
    for seed in seeds {
        let config = config(tmp.path(), dialogues, seed);
        let config = config.to_str().expect("a path");
        let run = |id: &str, extra: &[&str]| {
            let mut args = vec![
                "run", "--quiet", "--config", config, "--out", &out, "--run-id", id,
            ];
            args.extend_from_slice(extra);
            let m = measured_sage(&args);
            let dir = tmp.path().join(id);
            // Counted a line at a time, not read whole: a process that grew (27,000 records as
            // JSON) passes its peak on to the next one it starts (exec keeps the parent's
            // high-water mark in ru_maxrss), which would be measured as the next run's.
            let records = std::fs::File::open(dir.join("dialogues.jsonl")).expect("records");
            let played = std::io::BufRead::lines(std::io::BufReader::new(records)).count();
            (m, summary(&dir), played)
        };
        let (full_m, full, all) = run(&format!("full-{seed}"), &[]);
        let (adaptive_m, adaptive, played) = run(&format!("adaptive-{seed}"), &["--adaptive"]);
        let top = |s: &serde_json::Value| -> BTreeSet<String> {
            common::ranked(s)[..3].iter().cloned().collect()
        };
        let share = played as f64 / all as f64;
        shares.push(share);
        println!(
            "seed {seed}: full run {all} dialogues in {:.1} s ({:.1} s CPU, {:.0} MiB); adaptive {played} ({:.1}%) in {:.1} s ({:.1} s CPU, {:.0} MiB)",
            full_m.secs,
            full_m.cpu_secs,
            full_m.peak_rss_mib,
            100.0 * share,
            adaptive_m.secs,
            adaptive_m.cpu_secs,
            adaptive_m.peak_rss_mib
        );
        println!(
            "  top three: full {:?}, adaptive {:?}: {}",
            top(&full),
            top(&adaptive),
            if top(&full) == top(&adaptive) {
                "the same"
            } else {
                "DIFFERENT"
            }
        );
        let standings = adaptive["adaptive"]["models"]
            .as_array()
            .expect("adaptive.models");
        let count = |d: &str| standings.iter().filter(|s| s["decision"] == d).count();
        println!(
            "  decided: {} in the top three, {} out of it, {} undecided (played to the full run)",
            count("in_top"),
            count("out_of_top"),
            count("undecided")
        );
        // Every decision against the full run's ranking: an `in` is in its top three, an `out`
        // is not.
        let full_top = top(&full);
        let wrong: Vec<&str> = standings
            .iter()
            .filter(|s| {
                let inside = full_top.contains(s["model"].as_str().unwrap_or(""));
                (s["decision"] == "in_top" && !inside) || (s["decision"] == "out_of_top" && inside)
            })
            .filter_map(|s| s["model"].as_str())
            .collect();
        println!("  decisions the full run contradicts: {wrong:?}");
        let mut row: Vec<String> = standings
            .iter()
            .map(|s| {
                format!(
                    "{} {}",
                    s["model"]
                        .as_str()
                        .unwrap_or("?")
                        .trim_start_matches("agent-"),
                    match s["decision"].as_str() {
                        Some("in_top") => format!("in@{}", s["decided_after"]),
                        Some("out_of_top") => format!("out@{}", s["decided_after"]),
                        _ => "undecided".into(),
                    }
                )
            })
            .collect();
        row.sort();
        println!("  {}", row.join(", "));
    }
    let mean = shares.iter().sum::<f64>() / shares.len().max(1) as f64;
    println!(
        "mean share of the full run's dialogues: {:.1}% over {} seeds",
        100.0 * mean,
        shares.len()
    );
}
