//! The HTML report of a small simulated run, built as a user builds it (the binary): `sage run`
//! ends by writing report.html and printing its path; `sage report DIR --html` rebuilds the
//! same file from dialogues.jsonl. Checked on the file: self-contained (nothing to fetch), the
//! sections of the DOM contract, the leaderboard's values equal summary.json's. The browser
//! checks are in the headless-Chromium test.

mod common;

use std::path::Path;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A run of the bundled scenarios and simulated models: two cases per scenario, three turns,
/// each case `repeats` times.
fn small_run_with(out: &Path, id: &str, repeats: u32) -> (std::path::PathBuf, String) {
    let out_s = out.display().to_string();
    let repeats = repeats.to_string();
    let o = common::sage(&[
        "run",
        "--quiet",
        "--dialogues",
        "2",
        "--max-turns",
        "3",
        "--repeats",
        &repeats,
        "--out",
        &out_s,
        "--run-id",
        id,
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    (out.join(id), text(&o.stdout))
}

fn small_run(out: &Path) -> (std::path::PathBuf, String) {
    small_run_with(out, "html", 1)
}

/// An attribute's text with the report's escapes undone.
fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

/// What `decodeURIComponent` gives for `s` (UTF-8 percent escapes).
fn decode_uri_component(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).expect("ascii");
            out.push(u8::from_str_radix(hex, 16).expect("a percent escape"));
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).expect("utf-8")
}

/// The value of attribute `name` in the first tag of `html`.
fn attr(html: &str, name: &str) -> Option<String> {
    let tag = &html[..html.find('>')?];
    attrs(tag, name).first().map(|v| unescape(v))
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
            "leaderboard",
            "run",
            "charts",
            "sop-graphs",
            "judges",
            "explorer"
        ]
    );
    for (chart, class) in [
        ("execution-gap", "chart"),
        ("turn-depth", "chart lines"),
        ("adversarial", "chart lines"),
        ("format-errors", "chart"),
        ("chat-dimensions", "chart"),
    ] {
        assert!(
            html.contains(&format!("<svg class=\"{class}\" data-chart=\"{chart}\"")),
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
    // Without repeats, no pass^k column.
    assert!(!html.contains("data-metric=\"pass^"));

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
    let o = common::sage(&[
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
    let o = common::sage(&["report", "nowhere", "--out", "x.html"]);
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("--html"), "{}", text(&o.stderr));
}

#[test]
fn with_repeats_pass_k_columns_and_per_model_routes_linked_to_the_explorer() {
    let tmp = tempfile::tempdir().expect("temporary folder");
    let (dir, _) = small_run_with(tmp.path(), "rep", 2);
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).expect("summary"))
            .expect("summary.json");
    let models: Vec<&str> = summary["models"]
        .as_array()
        .expect("models")
        .iter()
        .map(|m| m["model"].as_str().expect("a name"))
        .collect();

    // pass^1 and pass^2 per model in the leaderboard, equal to summary.json's.
    let table = &html[html.find("id=\"leaderboard-table\"").expect("the table")..];
    let table = &table[..table.find("</table>").expect("its end")];
    for k in [1, 2] {
        assert!(table.contains(&format!("<th class=\"num\" data-sort=\"pass^{k}\"")));
    }
    for m in summary["models"].as_array().expect("models") {
        let name = m["model"].as_str().expect("a name");
        let row = &table[table
            .find(&format!("<tr data-model=\"{name}\">"))
            .expect("a row")..];
        let row = &row[..row.find("</tr>").expect("its end")];
        let pass_k = m["pass_k"].as_array().expect("pass_k with repeats");
        assert_eq!(pass_k.len(), 2);
        for p in pass_k {
            let cell = format!("data-metric=\"pass^{}\" data-value=\"", p["k"]);
            let at = row.find(&cell).expect("a pass^k cell") + cell.len();
            let value: f64 = row[at..at + row[at..].find('"').expect("quote")]
                .parse()
                .expect("a number");
            assert_eq!(Some(value), p["pass"].as_f64(), "{name} pass^{}", p["k"]);
        }
    }

    // The graphs' model selector lists every model after "all models", in the leaderboard's
    // order.
    let select = &html[html
        .find("<select data-graph-model>")
        .expect("the selector")..];
    let select = &select[..select.find("</select>").expect("its end")];
    let ranked = attrs(table, "data-model");
    assert_eq!(ranked.len(), models.len());
    assert_eq!(attrs(select, "value")[1..], ranked[..]);
    // Every stage and action says its Logic per model.
    let nodes = html.matches("<g class=\"node").count() + html.matches("<g class=\"action").count();
    assert_eq!(
        html.matches(" data-logic-by-model=\"").count() - html.matches("<tr data-route=\"").count(),
        nodes
    );

    // Per route: the per-model dialogue counts add up to the route's, the per-model table says
    // the same, and the links open the explorer on those dialogues.
    let mut links = 0;
    for part in html
        .split("<table class=\"data routes\" data-scenario=\"")
        .skip(1)
    {
        let scenario = &part[..part.find('"').expect("quote")];
        let routes = &part[..part.find("</table>").expect("end")];
        let per_model = part
            .find("<table class=\"data route-models\"")
            .map(|i| &part[i..i + part[i..].find("</table>").expect("end")]);
        for row in routes.split("<tr data-route=\"").skip(1) {
            let key = unescape(&row[..row.find('"').expect("quote")]);
            let row = &format!("<tr data-route=\"{row}");
            let dialogues: u64 = attr(row, "data-dialogues").expect("n").parse().expect("n");
            let by_model: std::collections::BTreeMap<String, u64> =
                serde_json::from_str(&attr(row, "data-dialogues-by-model").expect("json"))
                    .expect("a JSON object");
            assert_eq!(
                by_model.values().sum::<u64>(),
                dialogues,
                "{scenario} {key}"
            );
            let logic: std::collections::BTreeMap<String, f64> =
                serde_json::from_str(&attr(row, "data-logic-by-model").expect("json"))
                    .expect("a JSON object");
            assert!(logic.keys().all(|m| models.contains(&m.as_str())));
            if dialogues == 0 {
                assert!(!row.contains("#explore="));
                continue;
            }
            let table = per_model.expect("a per-model table");
            let at = table
                .find(&format!("<tr data-route-key=\"{}\">", row_key_attr(&key)))
                .expect("the route in the per-model table");
            let cells = &table[at..at + table[at..].find("</tr>").expect("end")];
            let reached: u64 = attrs(cells, "data-reached")
                .iter()
                .map(|n| n.parse::<u64>().expect("n"))
                .sum();
            assert_eq!(reached, dialogues, "{scenario} {key}");
            for (m, v) in &logic {
                let cell = format!("data-model=\"{m}\" data-value=\"");
                let at = cells.find(&cell).expect("a cell") + cell.len();
                let shown: f64 = cells[at..at + cells[at..].find('"').expect("quote")]
                    .parse()
                    .expect("a number");
                assert_eq!(shown, *v, "{scenario} {key} {m}");
            }
            // Each link: #explore=scenario:S;reached:S: KEY;sort:worst[;model:M].
            for href in attrs(row, "href").into_iter().chain(attrs(cells, "href")) {
                let href = unescape(href);
                // The worst case's link opens one case of this scenario across the models
                // (followed in tests/report_browser.rs).
                if let Some(case) = href.strip_prefix("#case=") {
                    let case = decode_uri_component(case);
                    assert!(case.starts_with(&format!("{scenario}/")), "{case}");
                    continue;
                }
                let pairs: Vec<(String, String)> = href
                    .strip_prefix("#explore=")
                    .expect("an explorer link")
                    .split(';')
                    .map(|p| {
                        let (k, v) = p.split_once(':').expect("NAME:VALUE");
                        (k.to_string(), decode_uri_component(v))
                    })
                    .collect();
                assert_eq!(pairs[0], ("scenario".into(), scenario.to_string()));
                assert_eq!(pairs[1], ("reached".into(), format!("{scenario}: {key}")));
                assert_eq!(pairs[2], ("sort".into(), "worst".into()));
                if let Some((k, m)) = pairs.get(3) {
                    assert_eq!(k, "model");
                    assert!(models.contains(&m.as_str()), "{m}");
                }
                links += 1;
            }
        }
    }
    assert!(links > 20, "{links} links");
    // The explorer offers the reached routes and the order.
    assert!(html.contains("<select data-filter=\"reached\">"));
    assert!(html.contains("<select data-sort-rows>"));
}

/// A route key as the report escapes it in an attribute.
fn row_key_attr(key: &str) -> String {
    key.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// The explorer's rows of a page: `(id, embedded)` and the note's counts.
fn explorer_rows(html: &str) -> (Vec<(String, bool)>, serde_json::Value) {
    let open = "<script type=\"application/json\" id=\"explorer-data\">";
    let at = html.find(open).expect("the rows") + open.len();
    let data: serde_json::Value =
        serde_json::from_str(&html[at..at + html[at..].find("</script>").expect("end")])
            .expect("JSON");
    let rows = data["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (
                r[0].as_str().expect("id").to_string(),
                r[1].as_i64() != Some(-1),
            )
        })
        .collect();
    let note = &html[html
        .find("<p class=\"note explorer-embeds\"")
        .expect("the note")..];
    let counts = serde_json::json!({
        "total": attr(note, "data-total"),
        "listed": attr(note, "data-listed"),
        "embedded": attr(note, "data-embedded"),
        "failing": attr(note, "data-failing"),
        "failing_embedded": attr(note, "data-failing-embedded"),
    });
    (rows, counts)
}

/// Above its limit (lowered for the test by `SAGE_EXPLORER_MAX_DIALOGUES`), the explorer lists
/// the failing dialogues first, each model x scenario's worst first and the groups in turn, then
/// a sample of the others; the page says so with the counts, `sage report` prints one line; under
/// the limit it lists every dialogue.
#[test]
fn above_its_limit_the_explorer_embeds_the_failing_dialogues_first_and_says_so() {
    let tmp = tempfile::tempdir().expect("temporary folder");
    let (dir, _) = small_run(tmp.path());
    // Each dialogue: its group, whether it failed, its mean Overall.
    let records: Vec<sage::protocol::DialogueRecord> =
        std::fs::read_to_string(dir.join("dialogues.jsonl"))
            .expect("records")
            .lines()
            .map(|l| serde_json::from_str(l).expect("a record"))
            .collect();
    let facts: std::collections::BTreeMap<String, (String, bool, f64)> = records
        .iter()
        .map(|r| {
            let scores: Vec<f64> = sage::scoring::summary::counted_scores(r)
                .map(|s| s.overall)
                .collect();
            let mean = if scores.is_empty() {
                f64::NEG_INFINITY
            } else {
                scores.iter().sum::<f64>() / scores.len() as f64
            };
            (
                r.job.dialogue_id.clone(),
                (
                    format!("{}/{}", r.job.service_model, r.job.scenario),
                    !sage::scoring::summary::reached_target(r),
                    mean,
                ),
            )
        })
        .collect();
    let failing = facts.values().filter(|f| f.1).count();
    assert!(failing > 6, "the run has failing dialogues: {failing}");
    let build = |limit: usize| -> (String, String) {
        let out = tmp.path().join(format!("limit-{limit}.html"));
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_sage"))
            .args(["report", &dir.display().to_string(), "--html", "--out"])
            .arg(&out)
            .env("SAGE_EXPLORER_MAX_DIALOGUES", limit.to_string())
            .output()
            .expect("sage runs");
        assert!(o.status.success(), "{}", text(&o.stderr));
        (
            std::fs::read_to_string(&out).expect("page"),
            text(&o.stdout),
        )
    };

    // Fewer than the failing dialogues: only failing ones, the worst of each group, groups
    // in turn (no group has two more than another that still has some left).
    let limit = 6;
    let (html, stdout) = build(limit);
    let (rows, counts) = explorer_rows(&html);
    assert_eq!(rows.len(), limit);
    assert!(rows.iter().all(|(_, embedded)| *embedded));
    assert_eq!(
        counts,
        serde_json::json!({"total": records.len().to_string(), "listed": "6", "embedded": "6",
            "failing": failing.to_string(), "failing_embedded": "6"})
    );
    assert!(stdout.contains(&format!(
        "the explorer embeds 6 of the {} dialogues with their transcript (6 of the {failing} failing)",
        records.len()
    )), "{stdout}");
    assert!(html.contains("<code class=\"show\">sage show results/html ID</code>"));
    let listed: std::collections::BTreeSet<&str> = rows.iter().map(|(id, _)| id.as_str()).collect();
    let mut per_group: std::collections::BTreeMap<&str, (usize, usize)> = Default::default();
    for (id, (group, fails, mean)) in &facts {
        let entry = per_group.entry(group).or_default();
        if *fails {
            entry.1 += 1;
        }
        if listed.contains(id.as_str()) {
            assert!(*fails, "{id} passed but is listed before failing ones");
            entry.0 += 1;
            // Every failing dialogue of its group left out is at least as good.
            for (other, (g, f, m)) in &facts {
                if g == group && *f && !listed.contains(other.as_str()) {
                    assert!(
                        m >= mean,
                        "{other} ({m}) is worse than the listed {id} ({mean})"
                    );
                }
            }
        }
    }
    let most = per_group.values().map(|(n, _)| *n).max().unwrap_or(0);
    for (group, (n, fails)) in &per_group {
        assert!(
            *n + 1 >= most || n == fails,
            "group {group} has {n} listed of {fails} failing, another {most}"
        );
    }

    // Room for every failing dialogue and three others.
    let (html, _) = build(failing + 3);
    let (rows, _) = explorer_rows(&html);
    assert_eq!(rows.len(), failing + 3);
    let passing = rows.iter().filter(|(id, _)| !facts[id].1).count();
    assert_eq!(passing, 3);
    // The same choice whatever the order of the records: reversed in the file.
    let reversed: String = std::fs::read_to_string(dir.join("dialogues.jsonl"))
        .expect("records")
        .lines()
        .rev()
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(dir.join("dialogues.jsonl"), reversed).expect("write");
    let (again, _) = build(failing + 3);
    assert_eq!(
        explorer_rows(&again).0,
        rows,
        "the same rows from reversed records"
    );

    // Under the limit: every dialogue, no line printed.
    let (html, stdout) = build(10_000);
    assert_eq!(explorer_rows(&html).0.len(), records.len());
    assert!(!stdout.contains("the explorer embeds"), "{stdout}");
}
