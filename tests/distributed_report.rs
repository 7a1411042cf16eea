//! The aggregator writes a run's HTML report when the run completes, against real processes (a
//! nats-server with JetStream on a free port and a temporary store, one `sage worker`, one
//! `sage aggregator`), and `sage sweep --follow` prints where it is:
//!
//! - a small SAGE sweep: the aggregator's report.html is byte for byte the one `sage report DIR
//!   --html --out OTHER` builds afterwards from the folder;
//! - a support-desk sweep: its report.html has the seven desk sections and every conversation
//!   of desk.jsonl in its explorer, and is byte for byte the one `sage report` rebuilds.

mod common;

use base64::Engine;
use common::cluster::{Nats, Sage, test_dir, wait_status};
use common::sage_ok;
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A nats-server, one worker serving every role and an aggregator writing under `out`.
struct Cluster {
    nats: Nats,
    out: PathBuf,
    _worker: Sage,
    aggregator: Sage,
}

impl Cluster {
    fn start(dir: &Path) -> Cluster {
        let nats = Nats::start(dir);
        let url = nats.url();
        let common = ["--nats", url.as_str(), "--metrics-addr", "127.0.0.1:0"];
        let mut worker = vec!["worker", "--concurrency", "16"];
        worker.extend(common);
        let out = dir.join("results");
        Cluster {
            _worker: Sage::spawn(dir, "worker", &worker),
            aggregator: Sage::aggregator(dir, &out, &common),
            nats,
            out,
        }
    }

    /// `sage sweep --follow ARGS` as `run` to its end: what it printed on standard output.
    fn sweep_follow(&self, run: &str, args: &[&str]) -> String {
        let began = Instant::now();
        let url = self.nats.url();
        let mut all = vec!["sweep", "--nats", url.as_str(), "--run-id", run, "--follow"];
        all.extend(args);
        let printed = sage_ok(&all);
        eprintln!("{run}: {:?}", began.elapsed());
        printed
    }
}

/// `sage report FOLDER --html --out OTHER` on the aggregator's folder: OTHER's text.
fn rebuilt_report(dir: &Path, folder: &Path) -> String {
    let other = dir.join("rebuilt.html");
    let printed = sage_ok(&[
        "report",
        &folder.display().to_string(),
        "--html",
        "--out",
        &other.display().to_string(),
    ]);
    assert!(
        printed.contains(&format!("report: {}", other.display())),
        "{printed}"
    );
    std::fs::read_to_string(&other).expect("the rebuilt report")
}

/// The sweep printed the results folder and the report in it, as its last two lines.
fn assert_printed_paths(printed: &str, folder: &Path) {
    let report = folder.join("report.html");
    let tail: Vec<&str> = printed.lines().rev().take(2).collect();
    assert_eq!(
        tail,
        [
            format!("report (on the aggregator): {}", report.display()),
            format!("results (on the aggregator): {}", folder.display()),
        ],
        "{printed}"
    );
}

/// The dialogue ids of a JSON-lines records file.
fn ids_in(file: &Path) -> BTreeSet<String> {
    std::fs::read_to_string(file)
        .expect("a records file")
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a record");
            v["job"]["dialogue_id"].as_str().expect("an id").to_string()
        })
        .collect()
}

#[test]
fn the_aggregator_writes_a_sage_runs_report_equal_to_sage_report() {
    let dir = test_dir();
    let cluster = Cluster::start(dir.path());
    let config = common::write_config(dir.path(), "null", 2, 9);
    let printed = cluster.sweep_follow("agg-sage", &["--config", &config]);
    let folder = cluster.out.join("agg-sage");
    assert_printed_paths(&printed, &folder);
    let status = wait_status(
        &cluster.nats.url(),
        "agg-sage",
        Duration::from_secs(10),
        |s| s["state"] == "complete",
    );
    let report = folder.join("report.html");
    assert_eq!(
        status["report"].as_str(),
        Some(report.display().to_string().as_str())
    );
    let jobs = status["jobs"].as_u64().expect("jobs");
    assert!(jobs >= 12, "{jobs}");
    assert_eq!(ids_in(&folder.join("dialogues.jsonl")).len() as u64, jobs);

    let written = std::fs::read_to_string(&report).expect("the aggregator's report.html");
    assert!(
        written.contains("<section id=\"explorer\" data-section=\"explorer\">"),
        "not a SAGE report"
    );
    let rebuilt = rebuilt_report(dir.path(), &folder);
    assert!(
        written == rebuilt,
        "the aggregator's report.html ({} bytes) differs from `sage report --html` ({} bytes)",
        written.len(),
        rebuilt.len()
    );
    // Written atomically: no temporary file left beside it.
    assert!(!folder.join(".report.html.tmp").exists());
    assert!(
        cluster.aggregator.log_text().contains("run complete"),
        "{}",
        cluster.aggregator.log_text()
    );
}

#[test]
fn the_aggregator_writes_a_support_desk_runs_report() {
    let dir = test_dir();
    let cluster = Cluster::start(dir.path());
    let config = common::write_desk_config(dir.path(), "null");
    let printed = cluster.sweep_follow(
        "agg-desk",
        &["--suite", "support-desk", "--config", &config],
    );
    let folder = cluster.out.join("agg-desk");
    assert_printed_paths(&printed, &folder);
    let status = wait_status(
        &cluster.nats.url(),
        "agg-desk",
        Duration::from_secs(10),
        |s| s["state"] == "complete",
    );
    let report = folder.join("report.html");
    assert_eq!(
        status["report"].as_str(),
        Some(report.display().to_string().as_str())
    );
    let ids = ids_in(&folder.join("desk.jsonl"));
    assert_eq!(ids.len() as u64, status["jobs"].as_u64().expect("jobs"));
    assert_eq!(ids.len(), 162);

    let html = std::fs::read_to_string(&report).expect("the aggregator's report.html");
    for id in common::DESK_SECTIONS {
        assert_eq!(
            html.matches(&format!("<section id=\"{id}\" data-section=\"{id}\">"))
                .count(),
            1,
            "{id}"
        );
    }
    // Every conversation is in the explorer's data (gzip chunks, base64, JSON lines).
    let conversations = explorer_transcripts(&html, "desk-explorer");
    assert!(html.contains("data-total=\"162\" data-listed=\"162\" data-embedded=\"162\""));
    let shown: BTreeSet<String> = conversations
        .iter()
        .map(|c| c["id"].as_str().expect("an id").to_string())
        .collect();
    assert_eq!(conversations.len(), ids.len());
    assert_eq!(shown, ids);
    // The same code as `sage run --suite support-desk` and `sage report --html`: the same bytes.
    assert!(
        html == rebuilt_report(dir.path(), &folder),
        "the aggregator's desk report differs from `sage report --html`"
    );
    assert!(!folder.join(".report.html.tmp").exists());
}

/// Every transcript the explorer `root` of a page embeds: its gzip chunks (base64 in
/// `<script data-explorer="ROOT" data-chunk="N">`), one JSON object per line.
fn explorer_transcripts(html: &str, root: &str) -> Vec<serde_json::Value> {
    let open = format!("data-explorer=\"{root}\" data-chunk=\"");
    let mut out = Vec::new();
    for (at, _) in html.match_indices(&open) {
        let start = at + html[at..].find('>').expect("the tag's end") + 1;
        let data = &html[start..start + html[start..].find("</script>").expect("its end")];
        let gz = base64::engine::general_purpose::STANDARD
            .decode(data)
            .expect("base64");
        let mut text = String::new();
        flate2::read::GzDecoder::new(gz.as_slice())
            .read_to_string(&mut text)
            .expect("gzip");
        out.extend(
            text.lines()
                .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("JSON")),
        );
    }
    out
}
