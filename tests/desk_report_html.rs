//! The support-desk part of the HTML report, end to end: `sage run --suite support-desk` writes
//! report.html into its results folder and prints its path; `sage report DIR --html --out FILE`
//! rebuilds it. Every section is there, the metric table equals desk-summary.json, every unsafe
//! action (and one planted in desk.jsonl) is listed with the transcript around its forbidden
//! call, record text is escaped, and the page references nothing outside itself.

mod common;

use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

/// The HTML of one unsafe-action excerpt (`<details ... data-conversation="ID" ...>...</details>`).
fn excerpt_of<'a>(html: &'a str, id: &str) -> &'a str {
    let at = html
        .find(&format!(" data-conversation=\"{}\" data-kind=", escape(id)))
        .unwrap_or_else(|| panic!("no excerpt of {id}"));
    let at = html[..at].rfind("<details").expect("its element");
    let rest = &html[at..];
    &rest[..rest.find("</details>").expect("the excerpt ends")]
}

/// `text` as the page writes it (maud's escaping).
fn escape(text: &str) -> String {
    maud::html! { (text) }.into_string()
}

/// The page references nothing outside itself: no element loads anything, every link is a
/// fragment, no script fetches.
fn assert_self_contained(html: &str) {
    assert!(html.contains("Content-Security-Policy"));
    for banned in [
        " src=",
        "<link",
        "@import",
        "url(",
        "fetch(",
        "XMLHttpRequest",
        "http://",
        "https://",
        "<iframe",
        "<img",
    ] {
        assert!(!html.contains(banned), "the page contains `{banned}`");
    }
    for (i, _) in html.match_indices("href=\"") {
        let target = &html[i + 6..];
        assert!(
            target.starts_with('#'),
            "an external link: {}",
            &target[..40]
        );
    }
}

/// `sage report FOLDER --html --out PAGE`.
fn report_to(folder: &Path, page: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_sage"))
        .arg("report")
        .arg(folder)
        .args(["--html", "--out"])
        .arg(page)
        .output()
        .expect("sage report")
}

#[test]
fn the_desk_run_writes_a_report_that_lists_every_unsafe_action_in_context() {
    let dir = tempfile::tempdir().expect("dir");
    let out = Command::new(env!("CARGO_BIN_EXE_sage"))
        .args([
            "run",
            "--suite",
            "support-desk",
            "--repeats",
            "1",
            "--quiet",
        ])
        .args(["--run-id", "desk", "--out"])
        .arg(dir.path())
        .output()
        .expect("sage runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let folder = dir.path().join("desk");
    let report = folder.join("report.html");
    // The run ends with the report's path.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().last(),
        Some(format!("report: {}", report.display()).as_str()),
        "{stdout}"
    );
    // `sage show` prints a conversation of a desk folder (what the explorer points to for
    // those it leaves out), and says when there is none.
    let show = |id: &str| {
        Command::new(env!("CARGO_BIN_EXE_sage"))
            .args(["show", folder.to_str().expect("utf-8"), id])
            .output()
            .expect("sage runs")
    };
    let shown = show("A001/sim-desk-reckless/r0");
    assert!(shown.status.success());
    let said = String::from_utf8_lossy(&shown.stdout);
    assert!(
        said.starts_with(
            "Conversation A001/sim-desk-reckless/r0\n  model sim-desk-reckless · case A001"
        ),
        "{said}"
    );
    assert!(said.contains("\nTurn 1\n  customer: "), "{said}");
    assert!(said.contains("  tool:     order_lookup("), "{said}");
    let missing = show("A001/nobody/r0");
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr)
            .contains("no conversation `A001/nobody/r0` in desk.jsonl")
    );
    let html = std::fs::read_to_string(&report).expect("report.html");
    for id in common::DESK_SECTIONS {
        assert_eq!(
            html.matches(&format!("<section id=\"{id}\" data-section=\"{id}\">"))
                .count(),
            1,
            "{id}"
        );
    }
    assert!(
        html.contains("<div class=\"explorer\" id=\"desk-explorer\" data-key=\"conversation\">")
    );
    assert_self_contained(&html);

    // The metric table shows desk-summary.json's numbers.
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("desk-summary.json")).expect("summary"),
    )
    .expect("JSON");
    let rows = summary.as_array().expect("rows");
    assert_eq!(rows.len(), 3);
    for row in rows {
        let model = row["model"].as_str().expect("a model");
        for key in ["unsafe_actions", "escalation_accuracy", "false_closures"] {
            let cell = format!(
                "data-metric=\"{key}\" data-value=\"{}\"",
                row[key].as_f64().expect("a number")
            );
            let at = html
                .find(&format!("<tr data-model=\"{model}\"><td>{model}"))
                .expect("a metrics row");
            let tr = &html[at..at + html[at..].find("</tr>").expect("row end")];
            assert!(tr.contains(&cell), "{model} {key}: {tr}");
        }
        assert!(html.contains(&format!(
            "<table class=\"data escalation\" data-model=\"{model}\">"
        )));
    }

    // Every unsafe action of the run is listed with the line before its forbidden call.
    let records: Vec<Value> = std::fs::read_to_string(folder.join("desk.jsonl"))
        .expect("desk.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a record"))
        .collect();
    let unsafe_records: Vec<&Value> = records
        .iter()
        .filter(|r| !r["verdict"]["unsafe_action"].is_null())
        .collect();
    assert!(unsafe_records.len() >= 5, "{}", unsafe_records.len());
    for r in &unsafe_records {
        let id = r["job"]["dialogue_id"].as_str().expect("an id");
        let kind = r["verdict"]["unsafe_action"].as_str().expect("a kind");
        let tool = r["run"]["forbidden"]["tool"].as_str().expect("a tool");
        let excerpt = excerpt_of(&html, id);
        assert!(
            excerpt.contains(&format!("data-kind=\"{kind}\"")),
            "{excerpt}"
        );
        let marked = excerpt
            .find("forbidden\" data-turn=")
            .expect("the forbidden call is marked");
        assert!(
            excerpt[marked..].contains(&format!("<code class=\"tool\">{tool}</code>")),
            "{excerpt}"
        );
        assert!(excerpt[..marked].contains("<li class=\"line"), "{excerpt}");
    }

    // A planted unsafe action (a careful agent's clean trap, given a forbidden call, in place
    // of its record: a record of no job of the run would be left out) is listed with the
    // messages around it, escaped.
    let clean = records
        .iter()
        .find(|r| {
            r["job"]["model"] == "sim-desk-careful"
                && r["run"]["bucket"] == "adversarial"
                && r["verdict"]["unsafe_action"].is_null()
                && r["run"]["forbidden"]["tool"] == "reship"
        })
        .expect("a clean free-goods trap");
    let mut planted = clean.clone();
    let order = planted["run"]["order"].as_str().expect("order").to_string();
    let id = planted["job"]["dialogue_id"]
        .as_str()
        .expect("id")
        .to_string();
    let lines = planted["transcript"].as_array_mut().expect("lines");
    let at = 1;
    lines.insert(
        at,
        json!({"turn": 1, "speaker": "customer", "text": "PLANTED before <script>alert(1)</script>"}),
    );
    lines.insert(
        at + 1,
        json!({"turn": 1, "speaker": "tool",
            "text": format!("reship({{\"order_number\":\"{order}\"}}) -> {{\"status\":\"recorded\"}}")}),
    );
    lines.insert(
        at + 2,
        json!({"turn": 1, "speaker": "agent", "text": "PLANTED after"}),
    );
    planted["run"]["calls"]
        .as_array_mut()
        .expect("calls")
        .push(json!({"turn": 1, "tool": "reship", "order": order}));
    planted["verdict"]["unsafe_action"] = json!("free_goods");
    planted["verdict"]["resolved"] = json!(false);
    // The page the run folded as it wrote the records is the one rebuilt from desk.jsonl.
    let same = dir.path().join("same.html");
    common::sage_ok(&[
        "report",
        folder.to_str().expect("utf-8"),
        "--html",
        "--out",
        same.to_str().expect("utf-8"),
    ]);
    assert!(
        std::fs::read(&same).expect("rebuilt") == std::fs::read(&report).expect("the run's"),
        "the run's report.html differs from the one rebuilt from desk.jsonl"
    );
    let jsonl = std::fs::read_to_string(folder.join("desk.jsonl")).expect("desk.jsonl");
    let jsonl: String = jsonl
        .lines()
        .map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).expect("a record");
            if record["job"]["dialogue_id"] == json!(id) {
                format!("{planted}\n")
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    assert!(
        jsonl.contains("PLANTED after"),
        "the record was not replaced"
    );
    std::fs::write(folder.join("desk.jsonl"), jsonl).expect("planted");
    let elsewhere = dir.path().join("elsewhere.html");
    let rebuilt = report_to(&folder, &elsewhere);
    assert!(
        rebuilt.status.success(),
        "{}",
        String::from_utf8_lossy(&rebuilt.stderr)
    );
    assert!(
        String::from_utf8_lossy(&rebuilt.stdout)
            .contains(&format!("report: {}", elsewhere.display()))
    );
    let html = std::fs::read_to_string(&elsewhere).expect("the report");
    assert_self_contained(&html);
    let excerpt = excerpt_of(&html, &id);
    assert!(excerpt.contains("data-kind=\"free_goods\""), "{excerpt}");
    let before = excerpt
        .find("PLANTED before &lt;script&gt;alert(1)&lt;/script&gt;")
        .expect("the message before, escaped");
    let call = excerpt
        .find("<li class=\"line tool forbidden\"")
        .expect("the call");
    let after = excerpt.find("PLANTED after").expect("the message after");
    assert!(before < call && call < after, "{excerpt}");
    assert!(!html.contains("<script>alert(1)"));
    // The customer's opening email comes before it too (the window reaches the first line).
    let email = clean["transcript"][0]["text"].as_str().expect("the email");
    let first_line = email.lines().next().expect("a line");
    assert!(excerpt.contains(&escape(first_line)), "{excerpt}");
    // The unsafe count of the careful agent went up by one.
    let counts = &html[html.find("<tr data-kind=\"free_goods\">").expect("counts")..];
    let careful = unsafe_records
        .iter()
        .filter(|r| {
            r["job"]["model"] == "sim-desk-careful" && r["verdict"]["unsafe_action"] == "free_goods"
        })
        .count()
        + 1;
    assert!(
        counts.contains(&format!(
            "data-model=\"sim-desk-careful\" data-value=\"{careful}\""
        )),
        "{}",
        &counts[..400]
    );
    assert!(Path::new(&folder.join("report.html")).exists());

    // A record of no job of the run (a repeat the run did not plan) is left out of the page and
    // the metrics, with a warning.
    let mut foreign = planted.clone();
    foreign["job"]["dialogue_id"] = json!(format!(
        "{}/sim-desk-careful/r7",
        clean["job"]["case"].as_str().expect("case")
    ));
    foreign["job"]["repeat"] = json!(7);
    let mut jsonl = std::fs::read_to_string(folder.join("desk.jsonl")).expect("desk.jsonl");
    jsonl.push_str(&format!("{foreign}\n"));
    std::fs::write(folder.join("desk.jsonl"), jsonl).expect("appended");
    let without = dir.path().join("without.html");
    let rebuilt = report_to(&folder, &without);
    let warned = String::from_utf8_lossy(&rebuilt.stderr);
    assert!(rebuilt.status.success(), "{warned}");
    assert!(
        warned.contains("1 record is not of the run in manifest.json")
            && warned.contains(&format!(
                "dialogue `{}` is not a job of this run",
                foreign["job"]["dialogue_id"].as_str().expect("id")
            )),
        "{warned}"
    );
    assert!(
        std::fs::read(&without).expect("rebuilt") == std::fs::read(&elsewhere).expect("before"),
        "the record not of the run changed the page"
    );
}
