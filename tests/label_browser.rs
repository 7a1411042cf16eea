//! The labelling page (labels.html, docs/report.md "Human labels") through a real headless
//! Chromium (tests/common/browser.rs): written beside report.html by a run, linked from it,
//! offline, blind (no verdict, consensus, true value or score), the sample as chosen (every
//! model and scenario, the judges' split turns first), labels set through DOM events kept over
//! a reload, and the file the Download button saves read back line by line.
//! Screenshots go to `common::browser::screenshot_dir()` (`labels-*.png`).

mod common;

use common::browser::{Browser, Tab, assert_offline, screenshot_dir};
use sage::protocol::DialogueRecord;
use sage::report::label::{self, SAMPLE};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long the page's script and a download may take.
const READY: Duration = Duration::from_secs(20);

/// A JavaScript string literal of `text`.
fn js(text: &str) -> String {
    serde_json::to_string(text).expect("a string")
}

/// A run of the two simulated agents over the six bundled scenarios; its folder.
fn run(dir: &Path) -> PathBuf {
    let config = common::write_config(dir, "null", 4, 11);
    common::sage_ok(&[
        "run",
        "--config",
        &config,
        "--run-id",
        "labels",
        "--out",
        dir.to_str().expect("utf-8"),
        "--quiet",
    ]);
    dir.join("labels")
}

/// The run's records, by dialogue id.
fn records(folder: &Path) -> BTreeMap<String, DialogueRecord> {
    std::fs::read_to_string(folder.join("dialogues.jsonl"))
        .expect("records")
        .lines()
        .map(|l| serde_json::from_str::<DialogueRecord>(l).expect("a record"))
        .map(|r| (r.job.dialogue_id.clone(), r))
        .collect()
}

/// Lets the browser save downloads into `dir`, over a DevTools connection of its own (the
/// harness's tabs do not expose browser-level commands); kept open while downloads happen.
fn allow_downloads(browser: &Browser, dir: &Path) -> tungstenite::WebSocket<TcpStream> {
    let active = std::fs::read_to_string(browser.temp_dir().join("profile/DevToolsActivePort"))
        .expect("DevToolsActivePort");
    let mut lines = active.lines();
    let (port, path) = (lines.next().expect("port"), lines.next().expect("path"));
    let stream = TcpStream::connect(format!("127.0.0.1:{}", port.trim())).expect("DevTools");
    stream.set_read_timeout(Some(READY)).expect("read timeout");
    let url = format!("ws://127.0.0.1:{}{}", port.trim(), path.trim());
    let (mut ws, _) = tungstenite::client(url.as_str(), stream).expect("WebSocket");
    let command = json!({"id": 1, "method": "Browser.setDownloadBehavior", "params": {
        "behavior": "allow", "downloadPath": dir.display().to_string()}});
    ws.send(tungstenite::Message::text(command.to_string()))
        .expect("send");
    loop {
        let reply = ws.read().expect("a reply");
        if let tungstenite::Message::Text(text) = reply {
            let reply: Value = serde_json::from_str(text.as_str()).expect("JSON");
            if reply["id"] == 1 {
                assert!(reply.get("error").is_none(), "{reply}");
                return ws;
            }
        }
    }
}

/// A screenshot of the window at `width` x `height` with `selector` scrolled to the top (or
/// the page's top), as `NAME.png` in the screenshot folder.
fn window(
    tab: &Tab<'_>,
    (width, height): (u32, u32),
    selector: Option<&str>,
    name: &str,
) -> PathBuf {
    tab.set_viewport(width, height).expect("viewport");
    let scroll = match selector {
        Some(s) => format!(
            "(e => {{ e.scrollIntoView(); scrollBy(0, -document.getElementById('label-bar').offsetHeight - document.getElementById('toc').offsetHeight - 8); }})(document.querySelector({}))",
            js(s)
        ),
        None => "scrollTo(0, 0)".into(),
    };
    tab.eval(&scroll).expect("scroll");
    let path = screenshot_dir().join(format!("{name}.png"));
    tab.screenshot_viewport(&path).expect("screenshot");
    path
}

/// Sets a control of item `item` (`select[data-field=F]`, the labeller input, ...) to `value`
/// and fires the event a person's change fires.
fn set(tab: &Tab<'_>, selector: &str, value: &str, event: &str) {
    tab.eval(&format!(
        "(c => {{ c.value = {}; c.dispatchEvent(new Event({}, {{bubbles: true}})); return c.value; }})(document.querySelector({}))",
        js(value),
        js(event),
        js(selector)
    ))
    .unwrap_or_else(|e| panic!("{selector}: {e}"));
}

/// A candidate turn: dialogue, turn, whether the judges split on it.
type Turn = (String, u32, bool);

fn item(n: usize) -> String {
    format!("article.label-item[data-item=\"{n}\"]")
}

#[test]
fn a_person_labels_a_blind_sample_offline_and_downloads_labels_jsonl() {
    let dir = tempfile::tempdir().expect("dir");
    let folder = run(dir.path());
    let report = folder.join("report.html");
    let labels = folder.join("labels.html");
    assert!(
        labels.exists(),
        "the run writes labels.html beside report.html"
    );
    let records = records(&folder);

    // The sample the page should hold: every judged turn without an infrastructure error is
    // a candidate; the judges' split turns first in each (model, scenario).
    let mut candidates: BTreeMap<(String, String), Vec<Turn>> = BTreeMap::new();
    for r in records.values() {
        for t in &r.turns {
            if let Some(split) = label::judged_split(t) {
                candidates
                    .entry((r.job.service_model.clone(), r.job.scenario.clone()))
                    .or_default()
                    .push((r.job.dialogue_id.clone(), t.turn, split));
            }
        }
    }
    let total: usize = candidates.values().map(Vec::len).sum();
    assert!(total > SAMPLE, "the run has {total} judged turns");
    let splits: usize = candidates.values().flatten().filter(|c| c.2).count();
    assert!(splits > 0, "the noisy judges split on some turns");

    let browser = Browser::launch();
    // The report links to the page, visibly; following the link opens it.
    let tab = browser.open(&report, true).expect("open the report");
    let link = tab
        .eval("(a => a && {text: a.textContent, href: a.getAttribute('href'), shown: a.getClientRects().length > 0})(document.querySelector('a[href=\"labels.html\"]'))")
        .expect("the link");
    assert_eq!(
        link,
        json!({"text": "Label a sample of turns (labels.html)", "href": "labels.html", "shown": true})
    );
    tab.set_viewport(1300, 900).expect("viewport");
    tab.screenshot(
        &screenshot_dir().join("labels-report-link.png"),
        Some("section#run"),
    )
    .expect("screenshot");
    // Before any labels, the judges section says how to check the judges against people.
    let note = tab
        .eval("(p => p && p.getClientRects().length > 0 ? p.innerText : null)(document.querySelector('[data-calibration=\"none\"]'))")
        .expect("the note");
    assert!(
        note.as_str()
            .is_some_and(|t| t.starts_with("No labels yet.")
                && t.contains("sage judges calibrate DIR --labels labels.jsonl (DIR: this report's folder, the run labels)")),
        "{note}"
    );
    tab.eval("document.querySelector('[data-calibration]').scrollIntoView({block: 'center'})")
        .expect("scroll");
    tab.screenshot_viewport(&screenshot_dir().join("judges-no-labels.png"))
        .expect("screenshot");
    tab.click("a[href=\"labels.html\"]")
        .expect("click the link");
    tab.wait_for("location.pathname.endsWith('/labels.html')", READY)
        .expect("the link opens labels.html");
    drop(tab);

    let downloads = tempfile::tempdir().expect("downloads");
    let _devtools = allow_downloads(&browser, downloads.path());
    let tab = browser.open(&labels, true).expect("open labels.html");
    tab.wait_for(
        "document.getElementById('label-bar').hasAttribute('data-ready')",
        READY,
    )
    .expect("the script runs");
    assert_offline(&tab, &labels);

    // The sample: SAMPLE turns, distinct, every model and every scenario.
    let shown = tab
        .eval("[...document.querySelectorAll('article.label-item')].map(a => [a.dataset.dialogue, Number(a.dataset.turn)])")
        .expect("items");
    let shown: Vec<(String, u32)> = serde_json::from_value(shown).expect("pairs");
    assert_eq!(shown.len(), SAMPLE);
    assert_eq!(shown.iter().collect::<BTreeSet<_>>().len(), SAMPLE);
    assert_eq!(
        tab.eval("document.getElementById('label-count').textContent")
            .expect("count"),
        json!(format!("0 of {SAMPLE} turns labelled"))
    );
    let sampled: BTreeSet<&(String, u32)> = shown.iter().collect();
    for ((model, scenario), list) in &candidates {
        let taken: Vec<_> = list
            .iter()
            .filter(|(d, t, _)| sampled.contains(&(d.clone(), *t)))
            .collect();
        assert!(!taken.is_empty(), "{model} / {scenario} left out");
        // A stratum gives an undisputed turn only once every split turn of it is taken.
        if taken.iter().any(|c| !c.2) {
            for c in list.iter().filter(|c| c.2) {
                assert!(
                    sampled.contains(&(c.0.clone(), c.1)),
                    "{model} / {scenario}: split turn {c:?} left out for an undisputed one"
                );
            }
        }
    }

    // Blind: nothing of the judges, the scores, the truth or the model under test is shown,
    // and no control starts set.
    let text = tab
        .eval("document.body.innerText")
        .expect("text")
        .as_str()
        .expect("a string")
        .to_string();
    for hidden in [
        "sim-judge",
        "sim-strong",
        "sim-weak",
        "onsensus",
        "Judge 1",
        "Logic ",
        "Acc_cls",
    ] {
        assert!(!text.contains(hidden), "{hidden:?} is shown");
    }
    for (dialogue, _) in &shown {
        let job = &records[dialogue].job;
        assert!(
            !text.contains(&job.intent),
            "intent {} is shown",
            job.intent
        );
        assert!(
            !text.contains(&job.persona),
            "persona {} is shown",
            job.persona
        );
    }
    let preset = tab
        .eval("[...document.querySelectorAll('[data-field]')].filter(c => c.value !== '').length + [...document.querySelectorAll('input[type=radio]')].filter(r => r.checked).length")
        .expect("controls");
    assert_eq!(preset, json!(0));
    window(&tab, (1300, 900), None, "labels-first-screen");

    // Label two turns: the first with a boolean field, and another; a third set, then cleared.
    let with_bool = tab
        .eval("Number(document.querySelector('article.label-item select[data-type=bool]').closest('article').dataset.item)")
        .expect("an item with a boolean field")
        .as_u64()
        .expect("a number") as usize;
    let other = if with_bool == 1 { 2 } else { 1 };
    let third = (1..=SAMPLE)
        .find(|n| ![with_bool, other].contains(n))
        .expect("a third");
    set(&tab, "#labeller", "Ada <Tester>", "input");
    let fields = |n: usize| -> Vec<(String, String, Vec<String>)> {
        let v = tab
            .eval(&format!(
                "[...document.querySelectorAll({} + ' select[data-field]')].map(s => [s.dataset.field, s.dataset.type, [...s.options].map(o => o.value).filter(v => v)])",
                js(&item(n))
            ))
            .expect("fields");
        serde_json::from_value(v).expect("triples")
    };
    let a_fields = fields(with_bool);
    let (bool_field, _, _) = a_fields
        .iter()
        .find(|f| f.1 == "bool")
        .expect("a boolean field")
        .clone();
    let (text_field, _, text_options) = a_fields
        .iter()
        .find(|f| f.1 == "str")
        .expect("an option field")
        .clone();
    set(
        &tab,
        &format!("{} select[data-field={}]", item(with_bool), js(&bool_field)),
        "false",
        "change",
    );
    set(
        &tab,
        &format!("{} select[data-field={}]", item(with_bool), js(&text_field)),
        &text_options[1],
        "change",
    );
    let dims = [
        ("linguistic_quality", 9),
        ("anthropomorphism_emotion", 6),
        ("content_utility", 3),
        ("user_satisfaction", 6),
        ("instruction_compliance", 9),
    ];
    for (dim, v) in dims {
        tab.click(&format!(
            "{} input[data-dim={dim}][value=\"{v}\"]",
            item(with_bool)
        ))
        .expect("click a score");
    }
    let b_fields = fields(other);
    let (b_field, _, b_options) = b_fields[0].clone();
    set(
        &tab,
        &format!("{} select[data-field={}]", item(other), js(&b_field)),
        &b_options[0],
        "change",
    );
    tab.click(&format!(
        "{} input[data-dim=user_satisfaction][value=\"3\"]",
        item(other)
    ))
    .expect("click a score");
    tab.click(&format!(
        "{} input[data-dim=content_utility][value=\"9\"]",
        item(third)
    ))
    .expect("click a score");
    assert_eq!(
        tab.eval(&format!(
            "document.querySelector({}).hasAttribute('data-labelled')",
            js(&item(third))
        ))
        .expect("state"),
        json!(true)
    );
    tab.click(&format!("{} button.label-clear", item(third)))
        .expect("clear");
    window(&tab, (1300, 900), Some(&item(with_bool)), "labels-item");
    tab.screenshot(
        &screenshot_dir().join("labels-item-whole.png"),
        Some(&item(with_bool)),
    )
    .expect("screenshot");
    window(&tab, (390, 844), Some(&item(with_bool)), "labels-phone");
    window(&tab, (390, 844), None, "labels-phone-top");
    tab.set_viewport(1300, 900).expect("viewport");

    // Kept over a reload.
    tab.navigate(&labels).expect("reload");
    tab.wait_for(
        "document.getElementById('label-bar').hasAttribute('data-ready')",
        READY,
    )
    .expect("the script runs again");
    let kept = tab
        .eval(&format!(
            "({{labeller: document.getElementById('labeller').value, \
               count: document.getElementById('label-count').textContent, \
               labelled: [...document.querySelectorAll('article[data-labelled]')].map(a => Number(a.dataset.item)), \
               bool: document.querySelector({a} + ' select[data-field=' + {bf} + ']').value, \
               text: document.querySelector({a} + ' select[data-field=' + {tf} + ']').value, \
               scores: [...document.querySelectorAll({a} + ' input[type=radio]:checked')].map(r => [r.dataset.dim, Number(r.value)]) }})",
            a = js(&item(with_bool)),
            bf = js(&js(&bool_field)),
            tf = js(&js(&text_field)),
        ))
        .expect("state");
    let mut labelled = vec![with_bool, other];
    labelled.sort();
    assert_eq!(
        kept,
        json!({
            "labeller": "Ada <Tester>",
            "count": format!("2 of {SAMPLE} turns labelled"),
            "labelled": labelled,
            "bool": "false",
            "text": text_options[1],
            "scores": dims.iter().map(|(d, v)| json!([d, v])).collect::<Vec<_>>(),
        })
    );

    // Download: the file the browser saves, one line per labelled turn, in the page's order.
    tab.click("#label-download").expect("download");
    let file = downloads.path().join("labels.jsonl");
    let deadline = Instant::now() + READY;
    while !file.exists() {
        assert!(
            Instant::now() < deadline,
            "no labels.jsonl in {:?}",
            downloads.path()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let text = std::fs::read_to_string(&file).expect("labels.jsonl");
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect();
    let (a, b) = (&shown[with_bool - 1], &shown[other - 1]);
    let line_a = json!({
        "run_id": "labels",
        "dialogue_id": a.0,
        "turn": a.1,
        "labeller": "Ada <Tester>",
        "classification": {bool_field.clone(): false, text_field.clone(): text_options[1]},
        "chat": dims.iter().map(|(d, v)| (d.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
    });
    let line_b = json!({
        "run_id": "labels",
        "dialogue_id": b.0,
        "turn": b.1,
        "labeller": "Ada <Tester>",
        "classification": {b_field.clone(): b_options[0]},
        "chat": {"user_satisfaction": 3},
    });
    let expected = if with_bool < other {
        vec![line_a, line_b]
    } else {
        vec![line_b, line_a]
    };
    assert_eq!(lines, expected, "{text}");
    // Every key as documented, a boolean as a JSON boolean.
    for line in &lines {
        let keys: Vec<&String> = line.as_object().expect("an object").keys().collect();
        assert_eq!(
            keys.iter().map(|k| k.as_str()).collect::<BTreeSet<_>>(),
            BTreeSet::from([
                "run_id",
                "dialogue_id",
                "turn",
                "labeller",
                "classification",
                "chat"
            ])
        );
    }
    assert_eq!(
        tab.eval("document.getElementById('label-file').hidden")
            .expect("the file's link"),
        json!(false)
    );
    assert_eq!(tab.console_errors().expect("console"), Vec::<String>::new());

    // `sage judges calibrate` reads the downloaded file: both labelled turns matched, each
    // judge compared on the three fields set, the person named.
    let printed = common::sage_ok(&[
        "judges",
        "calibrate",
        folder.to_str().expect("utf-8"),
        "--labels",
        file.to_str().expect("utf-8"),
        "--json",
    ]);
    let calibration: Value = serde_json::from_str(&printed).expect("calibration JSON");
    assert_eq!(calibration["labels"], 2, "{calibration}");
    assert_eq!(calibration["turns"], 2, "{calibration}");
    assert_eq!(calibration["unmatched_count"], 0, "{calibration}");
    assert_eq!(calibration["labellers"], json!(["Ada <Tester>"]));
    let first_judge = &calibration["judges"][0];
    assert_eq!(first_judge["pairs"], 3, "{calibration}");

    // The report built again shows the judges against the person, and the customer's fidelity
    // beside them, as a person sees them.
    common::sage_ok(&["report", folder.to_str().expect("utf-8"), "--html"]);
    let page = browser.open(&report, true).expect("open the report");
    let rows = |selector: &str| {
        page.eval(&format!(
            "[...document.querySelectorAll({})].filter(t => t.getClientRects().length > 0).map(t => [...t.querySelectorAll('tr')].map(r => r.innerText.replace(/\\s+/g, ' ').trim()))",
            js(selector)
        ))
        .expect("tables")
    };
    let people = rows("table.calibration");
    let people: Vec<Vec<String>> = serde_json::from_value(people).expect("rows");
    assert_eq!(people.len(), 1, "{people:?}");
    assert_eq!(
        people[0][0],
        "Judge Accuracy (fields) κ vs people Accuracy (chat) Pairs"
    );
    assert_eq!(
        people[0].len(),
        1 + 3 + 1,
        "three judges and the panel: {people:?}"
    );
    assert!(people[0][1].starts_with("sim-judge-1 "), "{people:?}");
    assert!(people[0][4].starts_with("panel "), "{people:?}");
    let note = page
        .eval("document.querySelector('[data-calibration]').innerText")
        .expect("note");
    assert!(
        note.as_str()
            .expect("text")
            .starts_with("2 labels by Ada <Tester> on 2 judged turns"),
        "{note}"
    );
    let fidelity: Vec<Vec<String>> = serde_json::from_value(rows("table.fidelity")).expect("rows");
    assert_eq!(fidelity.len(), 2, "by level and by model: {fidelity:?}");
    assert!(
        fidelity[1]
            .iter()
            .any(|r| r.starts_with("sim-user sim-strong ")),
        "{fidelity:?}"
    );
    page.set_viewport(1300, 900).expect("viewport");
    page.eval("document.querySelector('table.calibration').scrollIntoView()")
        .expect("scroll");
    page.screenshot_viewport(&screenshot_dir().join("judges-against-people.png"))
        .expect("screenshot");
    drop(page);

    // `sage report DIR --html` writes the same page again.
    let written = std::fs::read(&labels).expect("labels.html");
    common::sage_ok(&["report", folder.to_str().expect("utf-8"), "--html"]);
    assert!(
        std::fs::read(&labels).expect("labels.html") == written,
        "the rebuilt labels.html differs from the run's"
    );
}
