//! Both reports stay inert whatever the records hold: a SAGE run and a support-desk run whose
//! records carry hostile text (a closing `</script>` with a script after it, `<img onerror>`,
//! `"><svg onload>`, `javascript:` links, control characters, 100,000-character strings) in
//! the customer's message, the agent's chat, cot and raw output, the judges' errors, the
//! references, tool results, and in model names, scenario and case ids (which no run stores:
//! the report takes them from a folder whose scenarios changed since, so that its records are
//! checked for the run id only), rebuilt with `sage report DIR --html` and opened in headless
//! Chromium: nothing runs (`window.__pwned` stays undefined), no element is injected, the text
//! shows literally, and the console stays clean.

mod common;

use common::browser::{Browser, Tab};
use serde_json::{Value, json};
use std::path::Path;
use std::time::Duration;

const READY: Duration = Duration::from_secs(30);

/// Markup that would run if a report ever wrote record text as HTML.
const SCRIPT: &str = "</script><script>window.__pwned=1</script>";
const IMG: &str = "<img src=x onerror=\"window.__pwned=1\">";
const SVG: &str = "\"><svg onload=window.__pwned=1>";
const LINK: &str = "javascript:window.__pwned=1";
/// A model name: at most 128 characters without control characters (protocol::id).
const MODEL: &str =
    "m</script><img src=x onerror=\"window.__pwned=1\">'\"><svg onload=window.__pwned=1>";

fn js(text: &str) -> String {
    serde_json::to_string(text).expect("a string")
}

/// Text of every kind that must show literally, `n` characters long at least.
fn hostile(n: usize) -> String {
    let mut text = format!("{SCRIPT} {IMG} {SVG} {LINK} bell\u{7} escape\u{1b}[31m nul-free");
    while text.len() < n {
        text.push_str(" <b class=pwned>x</b>&amp;");
    }
    text
}

fn read_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("records")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a record"))
        .collect()
}

fn write_lines(path: &Path, records: &[Value]) {
    let text: String = records
        .iter()
        .map(|r| serde_json::to_string(r).expect("json") + "\n")
        .collect();
    std::fs::write(path, text).expect("write records");
}

/// Marks the run of `folder` as one whose jobs cannot be planned again (its scenarios or store
/// changed since, as manifest.json's SHA-256 says): `sage report` then checks its records for
/// the run id only, so records rewritten here (hostile models, ids and scenarios, which no run
/// stores) reach the page, which must stay inert whatever they hold. Returns the report's
/// standard error.
fn report_unplannable(folder: &Path) -> String {
    let path = folder.join("manifest.json");
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("manifest")).expect("json");
    let changed = "0".repeat(64);
    if let Some(scenarios) = manifest["scenarios"].as_array_mut() {
        for s in scenarios {
            s[1] = json!(changed);
        }
    } else {
        manifest["inputs_sha256"] = json!([changed, changed]);
    }
    std::fs::write(&path, manifest.to_string()).expect("manifest");
    let o = common::sage(&["report", &folder.display().to_string(), "--html"]);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("its records are checked for the run id only"),
        "{stderr}"
    );
    stderr
}

/// The page did nothing: no script of a record ran, no element of a record was made, no
/// console error.
fn assert_inert(tab: &Tab<'_>) {
    let pwned = tab.eval("typeof window.__pwned").expect("eval");
    assert_eq!(pwned, json!("undefined"), "a record's script ran");
    let injected = tab
        .eval(
            "[...document.querySelectorAll('img, .pwned, a[href^=\"javascript:\" i]')].length \
             + [...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length \
             + [...document.querySelectorAll('script')].filter(s => !s.type && s.textContent.includes('__pwned')).length",
        )
        .expect("eval");
    assert_eq!(injected, json!(0), "an element came from a record");
    let errors = tab.console_errors().expect("console");
    assert!(errors.is_empty(), "console errors: {errors:?}");
}

/// Opens `#KEY=ID` in the explorer and waits until its view shows `ready` (a condition on the
/// view `v`).
fn open(tab: &Tab<'_>, key: &str, id: &str, view: &str, ready: &str) {
    tab.eval(&format!(
        "location.hash = '#{key}=' + encodeURIComponent({})",
        js(id)
    ))
    .expect("hash");
    tab.wait_for(
        &format!(
            "(v => v && v.dataset.{key} === {} && ({ready}))(document.getElementById({}))",
            js(id),
            js(view)
        ),
        READY,
    )
    .unwrap_or_else(|e| panic!("{id} opens: {e}"));
}

#[test]
fn hostile_sage_records_stay_text() {
    let tmp = tempfile::tempdir().expect("dir");
    let out = tmp.path().display().to_string();
    common::sage_ok(&[
        "run",
        "--quiet",
        "--dialogues",
        "1",
        "--max-turns",
        "3",
        "--out",
        &out,
        "--run-id",
        "hostile",
    ]);
    let folder = tmp.path().join("hostile");
    let file = folder.join("dialogues.jsonl");
    let mut records = read_lines(&file);
    let long = hostile(100_000);
    let short = hostile(0);
    // Record 0: hostile model name (and id), scenario, persona, and every text of its turns.
    let model = records[0]["job"]["service_model"]
        .as_str()
        .expect("model")
        .to_string();
    let id = records[0]["job"]["dialogue_id"]
        .as_str()
        .expect("id")
        .replace(&format!("/{model}/"), &format!("/{MODEL}/"));
    {
        let r = &mut records[0];
        r["job"]["dialogue_id"] = json!(id);
        r["job"]["service_model"] = json!(MODEL);
        r["job"]["persona"] = json!(short);
        r["job"]["intent"] = json!(short);
        for t in r["turns"].as_array_mut().expect("turns") {
            t["user_message"] = json!(long);
            t["raw_output"] = json!(short);
            if t["outcome"]["kind"] == "valid" {
                t["outcome"]["turn"]["chat"] = json!(short);
                t["outcome"]["turn"]["cot"] = json!(short);
                t["outcome"]["turn"]["action"] = json!(IMG);
                t["outcome"]["turn"]["path"] = json!([SVG, SCRIPT]);
            }
            if t["judges"].is_object()
                && let Some(j) = t["judges"]["judgments"].as_array_mut()
            {
                j[0] = json!({ "Err": short });
            }
            if t["reference"].is_object() {
                t["reference"] = json!({ "Err": short });
            }
        }
    }
    // Record 1: an infrastructure error message and a hostile scenario id.
    let scenario_id = format!("s{SVG}");
    let id1 = records[1]["job"]["dialogue_id"]
        .as_str()
        .expect("id")
        .to_string();
    {
        let r = &mut records[1];
        let old = r["job"]["scenario"].as_str().expect("scenario").to_string();
        r["job"]["scenario"] = json!(scenario_id);
        r["job"]["dialogue_id"] = json!(id1.replacen(&old, &scenario_id, 1));
        // Its last turn a format error whose judges could not be reached: the infrastructure
        // error shows beside the format error (a run's order once put a format error last, and
        // the page showed only that).
        if let Some(t) = r["turns"].as_array_mut().and_then(|t| t.last_mut()) {
            t["outcome"] = json!({
                "kind": "format_error",
                "error": { "type": "invalid_json", "message": "expected value" },
                "chat": "{not json",
            });
            t["infra_error"] = json!(short);
        }
    }
    let id1 = records[1]["job"]["dialogue_id"]
        .as_str()
        .expect("id")
        .to_string();
    write_lines(&file, &records);
    report_unplannable(&folder);
    let report = folder.join("report.html");

    let browser = Browser::launch();
    let tab = browser.open(&report, true).expect("open");
    tab.wait_for(
        "document.querySelector('div#explorer').dataset.ready !== undefined",
        READY,
    )
    .expect("the explorer is ready");
    assert_inert(&tab);
    // The hostile model is a leaderboard row and a filter option, as text.
    let shown = tab
        .eval(&format!(
            "[...document.querySelectorAll('#explorer select[data-filter=model] option')].some(o => o.text === {})",
            js(MODEL)
        ))
        .expect("eval");
    assert_eq!(shown, json!(true), "the model's name is an option's text");

    let turns = records[0]["turns"].as_array().expect("turns").len();
    open(
        &tab,
        "dialogue",
        &id,
        "dialogue-view",
        &format!("v.querySelectorAll('.turn[data-turn]').length === {turns}"),
    );
    assert_inert(&tab);
    let text = tab
        .eval("document.getElementById('dialogue-view').textContent")
        .expect("text");
    let text = text.as_str().expect("text");
    for needle in [
        SCRIPT,
        IMG,
        SVG,
        LINK,
        MODEL,
        "bell\u{7}",
        "escape\u{1b}[31m",
    ] {
        assert!(text.contains(needle), "{needle:?} shows literally");
    }
    assert!(
        text.contains(&long),
        "the 100,000-character message shows whole"
    );
    // Its raw output unfolds as text too.
    tab.eval("document.querySelectorAll('#dialogue-view details.raw').forEach(d => d.open = true)")
        .expect("unfold");
    assert_inert(&tab);

    open(
        &tab,
        "dialogue",
        &id1,
        "dialogue-view",
        "v.querySelector('.turn[data-turn]') !== null",
    );
    assert_inert(&tab);
    let text = tab
        .eval("document.getElementById('dialogue-view').textContent")
        .expect("text");
    let text = text.as_str().expect("text");
    assert!(text.contains("invalid JSON: expected value"), "{text}");
    assert!(
        text.contains(&format!("Infrastructure error: {SCRIPT}")),
        "{text}"
    );

    // The case across models, opened from the hostile model's dialogue: its column.
    let case = id.replace(&format!("/{MODEL}/"), "/");
    tab.eval(&format!(
        "location.hash = '#case=' + encodeURIComponent({}) + ';dialogue:' + encodeURIComponent({})",
        js(&case),
        js(&id)
    ))
    .expect("hash");
    tab.wait_for(
        &format!(
            "(v => v.dataset.case === {} && v.querySelector('table.case-turns') !== null)(document.getElementById('dialogue-view'))",
            js(&case)
        ),
        READY,
    )
    .expect("the case opens");
    assert_inert(&tab);
    let heads = tab
        .eval("[...document.querySelectorAll('#dialogue-view table.case-turns th[data-model]')].map(t => t.dataset.model)")
        .expect("heads");
    assert!(
        heads.as_array().expect("a list").iter().any(|m| m == MODEL),
        "{heads}"
    );
    // With scripts off, the sections above the explorer show the texts as text too.
    let plain = browser.open(&report, false).expect("open without scripts");
    let body = plain
        .eval("document.body.innerText.includes('m</script><img')")
        .expect("eval");
    assert_eq!(body, json!(true));
    assert_inert(&plain);
}

#[test]
fn hostile_desk_records_stay_text() {
    let tmp = tempfile::tempdir().expect("dir");
    common::sage_ok(&[
        "run",
        "--suite",
        "support-desk",
        "--repeats",
        "1",
        "--quiet",
        "--run-id",
        "hdesk",
        "--out",
        &tmp.path().display().to_string(),
    ]);
    let folder = tmp.path().join("hdesk");
    let file = folder.join("desk.jsonl");
    let mut records = read_lines(&file);
    let long = hostile(100_000);
    let short = hostile(0);
    // The first conversation with a tool call: every line hostile, the tool's result long.
    let at = records
        .iter()
        .position(|r| {
            r["transcript"]
                .as_array()
                .is_some_and(|t| t.iter().any(|l| l["speaker"] == "tool"))
        })
        .expect("a conversation with a tool call");
    let model = records[at]["job"]["model"]
        .as_str()
        .expect("model")
        .to_string();
    let id = records[at]["job"]["dialogue_id"]
        .as_str()
        .expect("id")
        .replace(&format!("/{model}/"), &format!("/{MODEL}/"));
    {
        let r = &mut records[at];
        r["job"]["dialogue_id"] = json!(id);
        r["job"]["model"] = json!(MODEL);
        for l in r["transcript"].as_array_mut().expect("lines") {
            if l["speaker"] == "tool" {
                let text = l["text"].as_str().expect("text").to_string();
                let name = &text[..text.find('(').expect("a call")];
                l["text"] = json!(format!(
                    "{name}({}) -> {}",
                    json!({ "order_number": short }),
                    long
                ));
            } else {
                l["text"] = json!(short);
            }
        }
        r["infra_error"] = json!(short);
    }
    write_lines(&file, &records);
    report_unplannable(&folder);
    let report = folder.join("report.html");

    let browser = Browser::launch();
    let tab = browser.open(&report, true).expect("open");
    tab.wait_for(
        "document.querySelector('div#desk-explorer').dataset.ready !== undefined",
        READY,
    )
    .expect("the explorer is ready");
    assert_inert(&tab);
    open(
        &tab,
        "conversation",
        &id,
        "conversation-view",
        "v.querySelectorAll('.tool-call').length > 0",
    );
    tab.eval("document.querySelectorAll('#conversation-view details').forEach(d => d.open = true)")
        .expect("unfold");
    assert_inert(&tab);
    let text = tab
        .eval("document.getElementById('conversation-view').textContent")
        .expect("text");
    let text = text.as_str().expect("text");
    for needle in [SCRIPT, IMG, SVG, LINK, MODEL] {
        assert!(text.contains(needle), "{needle:?} shows literally");
    }
    assert!(text.contains(&long[..20_000]), "the long tool result shows");
    let plain = browser.open(&report, false).expect("open without scripts");
    assert_inert(&plain);
}
