//! The HTML report of a small simulated run, built as a user builds it (the binary): `sage run`
//! ends by writing report.html and printing its path; `sage report DIR --html` rebuilds the
//! same file from dialogues.jsonl. Checked on the file: self-contained (nothing to fetch), the
//! sections of the DOM contract, the leaderboard's values equal summary.json's. The browser
//! checks are in the headless-Chromium test.

use std::path::Path;
use std::process::{Command, Output};

fn sage(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run sage")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A run of the bundled scenarios and simulated models: two cases per scenario, three turns.
fn small_run(out: &Path) -> (std::path::PathBuf, String) {
    let out_s = out.display().to_string();
    let o = sage(&[
        "run",
        "--quiet",
        "--dialogues",
        "2",
        "--max-turns",
        "3",
        "--out",
        &out_s,
        "--run-id",
        "html",
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    (out.join("html"), text(&o.stdout))
}

/// The values of attribute `name` in `html`, in order.
fn attrs<'a>(html: &'a str, name: &str) -> Vec<&'a str> {
    let key = format!("{name}=\"");
    html.match_indices(&key)
        .map(|(i, _)| {
            let start = i + key.len();
            &html[start..start + html[start..].find('"').expect("a closing quote")]
        })
        .collect()
}

#[test]
fn a_run_writes_a_self_contained_report_and_ends_with_its_path() {
    let tmp = tempfile::tempdir().expect("temporary folder");
    let (dir, stdout) = small_run(tmp.path());
    let path = dir.join("report.html");
    assert_eq!(
        stdout.lines().last(),
        Some(format!("report: {}", path.display()).as_str()),
        "{stdout}"
    );
    let html = std::fs::read_to_string(&path).expect("report.html");
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.len() < 2_000_000, "{} bytes", html.len());
    // Nothing to fetch: no URL, no external resource, a CSP that forbids every request.
    for needle in [
        "http://", "https://", "src=", "<link", "@import", "url(http",
    ] {
        assert!(!html.contains(needle), "the report contains {needle}");
    }
    assert!(html.contains("default-src 'none'"));
    // The sections, in order.
    let sections = attrs(&html, "data-section");
    assert_eq!(
        sections,
        [
            "run",
            "leaderboard",
            "charts",
            "sop-graphs",
            "judges",
            "explorer"
        ]
    );
    for chart in [
        "execution-gap",
        "turn-depth",
        "adversarial",
        "format-errors",
        "chat-dimensions",
    ] {
        assert!(
            html.contains(&format!("<svg class=\"chart\" data-chart=\"{chart}\"")),
            "{chart}"
        );
    }
    // One graph and one routes table per bundled scenario, no route without its counts.
    assert_eq!(html.matches("<svg class=\"sop-graph\"").count(), 6);
    assert_eq!(html.matches("<table class=\"data routes\"").count(), 6);
    assert_eq!(
        attrs(&html, "data-route").len(),
        attrs(&html, "data-dialogues").len()
    );
    // The explorer's filters and its embedded transcripts.
    for f in [
        "model",
        "scenario",
        "route",
        "adversarial",
        "persona",
        "end",
    ] {
        assert!(
            html.contains(&format!("<select data-filter=\"{f}\">")),
            "{f}"
        );
    }
    for f in ["min-score", "max-score", "format-error", "infra-error"] {
        assert!(html.contains(&format!("data-filter=\"{f}\"")), "{f}");
    }
    assert!(html.contains("id=\"explorer-count\""));
    assert!(html.contains("data-chunk=\"0\""));

    // The leaderboard shows summary.json's numbers, unrounded in data-value.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).expect("summary"))
            .expect("summary.json");
    let models = summary["models"].as_array().expect("models");
    let table = &html[html.find("id=\"leaderboard-table\"").expect("the table")..];
    let table = &table[..table.find("</table>").expect("its end")];
    assert_eq!(attrs(table, "data-model").len(), models.len());
    for m in models {
        let name = m["model"].as_str().expect("a name");
        let row = &table[table
            .find(&format!("<tr data-model=\"{name}\">"))
            .expect("a row per model")..];
        let row = &row[..row.find("</tr>").expect("its end")];
        for key in ["overall", "logic", "chat", "acc_cls", "execution_gap"] {
            let cell = format!("data-metric=\"{key}\" data-value=\"");
            let at = row.find(&cell).expect("a cell") + cell.len();
            let value: f64 = row[at..at + row[at..].find('"').expect("quote")]
                .parse()
                .expect("a number");
            assert_eq!(Some(value), m["all"][key]["mean"].as_f64(), "{name} {key}");
        }
    }

    // `sage report --html` rebuilds the same file from dialogues.jsonl, in one pass.
    let again = tmp.path().join("again.html");
    let o = sage(&[
        "report",
        &dir.display().to_string(),
        "--html",
        "--out",
        &again.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).ends_with(&format!("report: {}\n", again.display())));
    assert_eq!(
        std::fs::read_to_string(&again).expect("again.html"),
        html,
        "the run's report and the rebuilt one are the same"
    );
}

#[test]
fn html_needs_the_flag_and_out_needs_html() {
    let o = sage(&["report", "nowhere", "--out", "x.html"]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("--html"), "{}", text(&o.stderr));
}
