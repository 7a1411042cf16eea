//! The HTML report at the size of a 27-model sweep (issue 12): 27 simulated models under test
//! x the 6 bundled scenarios x 60 cases x 3 repeats (about 29,000 dialogues, 1 GB of
//! dialogues.jsonl). Goals: report.html at most 25 MB, `sage report DIR --html` under 30 s;
//! the default `sage run`'s report under 2 s. Release binary, each command measured from the
//! outside (`wait4`: wall and CPU time, peak RSS). Numbers and method: docs/benchmarks.md.
//!
//! Issue 18: memory and size at any run size. `scale` measures `sage report DIR --html` at
//! 1,000 and 100,000 dialogues (the default run's records replicated with new ids) and at
//! 1,000 and 1,000,000 (a one-turn run's records replicated), and `sage run` at 1,000 and
//! 100,000 (`scale-run-1m`: `sage run --max-turns 1` at 1,000,000). Goals: every command within
//! 1.5x of its memory at 1,000 dialogues and under 256 MB, report.html under 25 MB. Set
//! `TMPDIR` to a folder with room: 100,000 default dialogues are 3.5 GB.
//!
//! `cargo bench --bench report -- default|sweep|scale|scale-run-1m` (all but the last when none
//! is named). The results go to a temporary folder (`TMPDIR`), removed at the end.

#[path = "../tests/common/mod.rs"]
mod common;

use common::{Measured, measured_sage};
use std::path::Path;

/// A run configuration of `models` simulated agents (profiles strong, balanced and weak in
/// turn), the simulated customer and three simulated judges, over the bundled scenarios.
fn sweep_config(dir: &Path, models: usize, cases: usize, repeats: u32) -> String {
    let mut text = String::from("models:\n");
    let names: Vec<String> = (1..=models).map(|i| format!("sim-agent-{i:02}")).collect();
    for (i, name) in names.iter().enumerate() {
        let profile = ["strong", "balanced", "weak"][i % 3];
        text.push_str(&format!(
            "  - name: {name}\n    provider: simulated\n    sim: {{kind: agent, profile: {profile}}}\n"
        ));
    }
    text.push_str(
        "  - name: sim-user\n    provider: simulated\n    sim: {kind: user}\n\
         - name: sim-judge-1\n    provider: simulated\n    sim: {kind: judge}\n\
         - name: sim-judge-2\n    provider: simulated\n    sim: {kind: judge, noise: 0.03}\n\
         - name: sim-judge-3\n    provider: simulated\n    sim: {kind: judge, noise: 0.06}\n"
            .replace("\n- ", "\n  - ")
            .as_str(),
    );
    text.push_str(&format!(
        "service_models: [{}]\nuser_model: sim-user\njudge_models: [sim-judge-1, sim-judge-2, sim-judge-3]\njudge_turns: every\nscenarios: [bundled]\ndialogues_per_scenario: {cases}\nrepeats: {repeats}\nseed: 12\nconcurrency: 64\n",
        names.join(", ")
    ));
    let path = dir.join("sweep.yaml");
    std::fs::write(&path, text).expect("config");
    path.display().to_string()
}

fn row(what: &str, dialogues: usize, m: &Measured, html: &Path) {
    let mb = std::fs::metadata(html).map_or(0.0, |m| m.len() as f64 / 1e6);
    println!(
        "| {what} | {dialogues} | {:.1} | {:.1} | {:.1} | {mb:.1} |",
        m.secs, m.cpu_secs, m.peak_rss_mib
    );
}

fn records(dir: &Path) -> (usize, f64) {
    let file = dir.join("dialogues.jsonl");
    let bytes = std::fs::metadata(&file).map_or(0, |m| m.len());
    // Streamed: a process that held the file would hand its peak RSS down to the commands it
    // starts (Linux keeps the high-water mark across fork and exec).
    let lines = std::fs::File::open(&file).map_or(0, |f| {
        use std::io::BufRead;
        std::io::BufReader::new(f).split(b'\n').count()
    });
    (lines, bytes as f64 / 1e6)
}

/// `sage run` (which writes report.html in its pass), then `sage report DIR --html` alone.
fn case(out: &Path, id: &str, run_args: &[&str]) {
    let out_s = out.display().to_string();
    let mut args = vec!["run", "--quiet", "--out", &out_s, "--run-id", id];
    args.extend(run_args);
    let run = measured_sage(&args);
    let dir = out.join(id);
    let (dialogues, mb) = records(&dir);
    println!("\n{id}: {dialogues} dialogues, dialogues.jsonl {mb:.0} MB\n");
    println!("| command | dialogues | wall s | CPU s | peak RSS MiB | report.html MB |");
    println!("|---|---|---|---|---|---|");
    row(
        "sage run (report in the same pass)",
        dialogues,
        &run,
        &dir.join("report.html"),
    );
    let html = out.join(format!("{id}.html"));
    let dir_s = dir.display().to_string();
    let html_s = html.display().to_string();
    let report = measured_sage(&["report", &dir_s, "--html", "--out", &html_s]);
    row("sage report --html", dialogues, &report, &html);
    browse(&html);
    let summary = measured_sage(&["report", &dir_s]);
    row("sage report (no HTML)", dialogues, &summary, Path::new(""));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Opens `html` in headless Chromium (tests/common/browser.rs) and times what a reader does:
/// the page loaded with the explorer's first rows, the explorer filtered to one model, a
/// dialogue opened (its chunk decompressed); and the page's JavaScript heap.
fn browse(html: &Path) {
    use std::time::{Duration, Instant};
    let wait = Duration::from_secs(60);
    let browser = common::browser::Browser::launch();
    let start = Instant::now();
    let tab = browser.open(html, true).expect("open");
    tab.wait_for(
        "document.querySelectorAll('#explorer tr[data-dialogue]').length > 0",
        wait,
    )
    .expect("explorer rows");
    let loaded = start.elapsed();
    let start = Instant::now();
    let label = tab
        .eval(
            "(() => { const s = document.querySelector('#explorer select[data-filter=model]'); \
             s.value = s.options[1].value; s.dispatchEvent(new Event('change', {bubbles: true})); \
             return s.options[1].textContent; })()",
        )
        .expect("filter");
    let label = label.as_str().unwrap_or("?").to_string();
    let filtered = start.elapsed();
    let first = tab
        .eval("document.querySelector('#explorer tr[data-dialogue]').dataset.dialogue")
        .expect("a row");
    let first = first.as_str().expect("an id").to_string();
    let start = Instant::now();
    tab.click(&format!(
        "#explorer tr[data-dialogue={}] td",
        serde_json::to_string(&first).expect("json")
    ))
    .expect("click");
    tab.wait_for(
        "document.querySelectorAll('#dialogue-view .turn[data-turn]').length > 0",
        wait,
    )
    .expect("the dialogue opens");
    let opened = start.elapsed();
    let heap = tab
        .eval("performance.memory ? performance.memory.usedJSHeapSize / 1048576 : null")
        .expect("heap");
    let errors = tab.console_errors().expect("console");
    println!(
        "\nin headless Chromium: loaded with the explorer's rows {:.2} s (browser already started), \
         filtered to {label} in {:.3} s, a dialogue opened in {:.3} s; JS heap {:.0} MiB; console errors: {}",
        loaded.as_secs_f64(),
        filtered.as_secs_f64(),
        opened.as_secs_f64(),
        heap.as_f64().unwrap_or(f64::NAN),
        errors.len()
    );
}

/// Writes `DIR/dialogues.jsonl` (and the manifest) of a run of `n` dialogues: the records of
/// `source` repeated, each copy's ids made new (`SCENARIO/COPY-CASE/MODEL/rN`), streamed.
fn replicate(source: &Path, dir: &Path, n: usize) {
    use std::io::{BufRead, Write};
    std::fs::create_dir_all(dir).expect("folder");
    std::fs::copy(source.join("manifest.json"), dir.join("manifest.json")).expect("manifest");
    let lines: Vec<String> = std::io::BufReader::new(
        std::fs::File::open(source.join("dialogues.jsonl")).expect("records"),
    )
    .lines()
    .map(|l| l.expect("a line"))
    .collect();
    let mut out = std::io::BufWriter::with_capacity(
        1 << 20,
        std::fs::File::create(dir.join("dialogues.jsonl")).expect("records"),
    );
    const KEY: &str = "\"dialogue_id\":\"";
    for i in 0..n {
        let (copy, line) = (i / lines.len(), &lines[i % lines.len()]);
        let at = line.find(KEY).expect("a dialogue id") + KEY.len();
        let slash = at + line[at..].find('/').expect("a scenario") + 1;
        out.write_all(&line.as_bytes()[..slash]).expect("write");
        write!(out, "{copy}-").expect("write");
        out.write_all(&line.as_bytes()[slash..]).expect("write");
        out.write_all(b"\n").expect("write");
    }
    out.flush().expect("flush");
}

/// `sage report DIR --html` on `n` dialogues replicated from `source`; the folder is removed.
fn scale_report(source: &Path, out: &Path, n: usize) {
    let dir = out.join(format!(
        "x{n}-{}",
        source
            .file_name()
            .map_or_else(String::new, |f| f.to_string_lossy().into_owned())
    ));
    replicate(source, &dir, n);
    let (dialogues, mb) = records(&dir);
    let html = dir.join("report.html");
    let dir_s = dir.display().to_string();
    let report = measured_sage(&["report", &dir_s, "--html"]);
    row(
        &format!("sage report --html (dialogues.jsonl {mb:.0} MB)"),
        dialogues,
        &report,
        &html,
    );
    if let Some(line) = report.stderr.lines().find(|l| l.contains("warning")) {
        println!("  ({line})");
    }
    let summary = measured_sage(&["report", &dir_s]);
    row("sage report (no HTML)", dialogues, &summary, Path::new(""));
    browse(&html);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `sage run` of about `n` dialogues (the bundled scenarios, three simulated agents; `extra`
/// arguments after): its report in the same pass.
fn scale_run(out: &Path, n: usize, extra: &[&str]) {
    let id = format!("run{n}{}", extra.join("").replace('-', ""));
    let out_s = out.display().to_string();
    // 3 models x 6 scenarios per case.
    let cases = (n / 18).to_string();
    let mut args = vec![
        "run",
        "--quiet",
        "--out",
        &out_s,
        "--run-id",
        &id,
        "--dialogues",
        &cases,
    ];
    args.extend(extra);
    let run = measured_sage(&args);
    let dir = out.join(&id);
    let (dialogues, mb) = records(&dir);
    row(
        &format!("sage run (dialogues.jsonl {mb:.0} MB)"),
        dialogues,
        &run,
        &dir.join("report.html"),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 18's sizes: 1,000, 100,000, 1,000,000 dialogues. The 1,000,000 are replicated from a
/// run of one-turn dialogues (about 4 KB a record instead of 35 KB: 4 GB of dialogues.jsonl
/// rather than 35 GB, which this machine's disk cannot hold); what grows with the number of
/// dialogues is the same.
fn scale(out: &Path) {
    let out_s = out.display().to_string();
    measured_sage(&["run", "--quiet", "--out", &out_s, "--run-id", "source"]);
    let source = out.join("source");
    measured_sage(&[
        "run",
        "--quiet",
        "--out",
        &out_s,
        "--run-id",
        "short",
        "--max-turns",
        "1",
    ]);
    let short = out.join("short");
    println!("\n| command | dialogues | wall s | CPU s | peak RSS MiB | report.html MB |");
    println!("|---|---|---|---|---|---|");
    scale_run(out, 1_000, &[]);
    scale_run(out, 100_000, &[]);
    scale_report(&source, out, 1_000);
    scale_report(&source, out, 100_000);
    scale_report(&short, out, 1_000);
    scale_report(&short, out, 1_000_000);
}

fn main() {
    let tmp = tempfile::tempdir().expect("temporary folder");
    let named = |group: &str| std::env::args().skip(1).any(|a| a == group);
    if common::bench_selected("default") {
        case(tmp.path(), "default", &[]);
    }
    if common::bench_selected("sweep") {
        let config = sweep_config(tmp.path(), 27, 60, 3);
        case(tmp.path(), "sweep", &["--config", &config]);
    }
    if common::bench_selected("scale") {
        scale(tmp.path());
    }
    if named("scale-run-1m") {
        println!("\n| command | dialogues | wall s | CPU s | peak RSS MiB | report.html MB |");
        println!("|---|---|---|---|---|---|");
        scale_run(tmp.path(), 1_000, &["--max-turns", "1"]);
        scale_run(tmp.path(), 1_000_000, &["--max-turns", "1"]);
    }
}
