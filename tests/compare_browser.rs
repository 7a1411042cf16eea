//! The comparison page (`sage report A --compare B --html`) in a real headless Chromium: what a
//! person sees equals the JSON output (`--format json`): the forest plot's rows and the
//! per-model table carry each model's difference, interval and noise floor, the planted
//! regression first; the pairing warning box shows when under half the dialogues pair, and only
//! then; a flipped dialogue opens both runs' transcripts side by side (with or without
//! scripts); hostile model text in a transcript is shown literally and nothing runs. Screenshots
//! go to `common::browser::screenshot_dir()` (`compare.png` is the one docs/report.md shows).

mod common;

use common::browser::{Browser, Tab, assert_offline, screenshot_dir};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// What the planted transcript says: markup and a script end tag that must stay text.
const HOSTILE: &str =
    "<img src=x onerror=window.__pwned=1></script><script>window.__pwned=2</script>";

/// Runs `sage run` with `config` as `id` in `dir`.
fn run(dir: &Path, config: &str, id: &str) {
    common::sage_ok(&[
        "run",
        "--config",
        config,
        "--run-id",
        id,
        "--out",
        dir.to_str().expect("utf-8"),
        "--quiet",
    ]);
}

/// A config file of the bundled scenarios and two simulated agents, `cases` a scenario, seed
/// 5; `strong_skills` goes into sim-strong's profile.
fn config(dir: &Path, name: &str, cases: usize, strong_skills: &str) -> String {
    let text = std::fs::read_to_string(common::write_config(dir, "null", cases, 5))
        .expect("config")
        .replace(
            "profile: strong,",
            &format!("profile: strong, skills: {{{strong_skills}}},"),
        );
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, text).expect("config");
    path.display().to_string()
}

/// The runs, made once: `base`; `worse`, where sim-strong derives its action right a fifth of
/// the time (a planted regression) and the first flipped dialogue's first turn says
/// [`HOSTILE`] (customer and agent); `more`, the base's design with three times the cases (so
/// under half of it pairs with `base`).
fn runs() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = common::fresh_dir("compare_browser_runs");
        run(&dir, &config(&dir, "base", 8, ""), "base");
        run(
            &dir,
            &config(&dir, "worse", 8, "action_derivation: 0.2"),
            "worse",
        );
        run(&dir, &config(&dir, "more", 24, ""), "more");
        let flip = first_flip(&dir.join("worse"), &dir.join("base"));
        plant(&dir.join("worse").join("dialogues.jsonl"), &flip);
        dir
    })
}

/// The JSON comparison of `current` against `baseline`.
fn json(current: &Path, baseline: &Path) -> Value {
    let out = common::sage_ok(&[
        "report",
        current.to_str().expect("utf-8"),
        "--compare",
        baseline.to_str().expect("utf-8"),
        "--format",
        "json",
    ]);
    serde_json::from_str(&out).expect("JSON")
}

/// The id of the first flipped dialogue.
fn first_flip(current: &Path, baseline: &Path) -> String {
    json(current, baseline)["flips"][0]["dialogue_id"]
        .as_str()
        .expect("a flip")
        .to_string()
}

/// Rewrites dialogue `id`'s first turn in `file`: the customer's message and the agent's reply
/// become [`HOSTILE`].
fn plant(file: &Path, id: &str) {
    let text = std::fs::read_to_string(file).expect("records");
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            let mut record: Value = serde_json::from_str(line).expect("a record");
            if record["job"]["dialogue_id"] == id {
                let turn = &mut record["turns"][0];
                turn["user_message"] = Value::from(HOSTILE);
                match turn["outcome"]["kind"].as_str() {
                    Some("valid") => turn["outcome"]["turn"]["chat"] = Value::from(HOSTILE),
                    _ => turn["outcome"]["chat"] = Value::from(HOSTILE),
                }
            }
            serde_json::to_string(&record).expect("JSON")
        })
        .collect();
    std::fs::write(file, lines.join("\n") + "\n").expect("records");
}

/// Writes the comparison page of `current` against `baseline` to `out`.
fn page(current: &Path, baseline: &Path, out: &Path) {
    common::sage_ok(&[
        "report",
        current.to_str().expect("utf-8"),
        "--compare",
        baseline.to_str().expect("utf-8"),
        "--html",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
}

/// A screenshot of `selector` (its top 1,400 pixels at 1,280 wide) as `NAME.png`.
fn shot(tab: &Tab<'_>, selector: &str, name: &str) -> PathBuf {
    shot_at(tab, selector, name, 1280)
}

/// [`shot`] in a window `width` pixels wide.
fn shot_at(tab: &Tab<'_>, selector: &str, name: &str, width: u32) -> PathBuf {
    tab.set_viewport(width, 900).expect("viewport");
    let path = screenshot_dir().join(format!("{name}.png"));
    let s = serde_json::to_string(selector).expect("a string");
    tab.eval(&format!(
        "(e => {{ e.style.maxHeight = '1400px'; e.style.overflow = 'hidden'; }})(document.querySelector({s}))"
    ))
    .expect("cut");
    tab.screenshot(&path, Some(selector)).expect("screenshot");
    tab.eval(&format!(
        "(e => {{ e.style.maxHeight = ''; e.style.overflow = ''; }})(document.querySelector({s}))"
    ))
    .expect("restore");
    path
}

fn number(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

#[test]
fn the_page_shows_what_the_json_says_per_model_first() {
    let dir = runs();
    let (worse, base) = (dir.join("worse"), dir.join("base"));
    let doc = json(&worse, &base);
    let out = dir.join("compare.html");
    page(&worse, &base, &out);
    let browser = Browser::launch();
    let tab = browser.open(&out, true).expect("open");

    // The forest plot: one row per model, the JSON's per-model rows in their order.
    let models: Vec<&Value> = doc["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .filter(|g| g["group"] == "all")
        .collect();
    let rows = tab
        .eval(
            "[...document.querySelectorAll('#compare-forest g.forest-row')].map(g => ({\
             model: g.dataset.model, verdict: g.dataset.verdict, delta: Number(g.dataset.delta), \
             low: Number(g.dataset.ciLow), high: Number(g.dataset.ciHigh), \
             floor: Number(g.dataset.noiseFloor), \
             dot: Number(g.querySelector('circle.mark').getAttribute('cx')), \
             whisker: [...g.querySelectorAll('line.whisker')].map(l => [Number(l.getAttribute('x1')), Number(l.getAttribute('x2'))])[0], \
             band: (r => [Number(r.getAttribute('x')), Number(r.getAttribute('width'))])(g.querySelector('rect.noise-floor')), \
             label: g.querySelector('text').textContent}))",
        )
        .expect("forest rows");
    let rows = rows.as_array().expect("a list");
    assert_eq!(rows.len(), models.len());
    assert!(models.len() == 2, "{models:?}");
    let zero = number(
        &tab.eval("Number(document.querySelector('#compare-forest line.zero').getAttribute('x1'))")
            .expect("zero"),
    );
    for (row, model) in rows.iter().zip(&models) {
        assert_eq!(row["model"], model["model"]);
        assert_eq!(row["label"], model["model"], "the label a person reads");
        assert_eq!(row["verdict"], model["verdict"]);
        // The same numbers (exactly: both are the shortest form of one double).
        assert_eq!(number(&row["delta"]), number(&model["overall"]["delta"]));
        assert_eq!(number(&row["low"]), number(&model["overall"]["ci_low"]));
        assert_eq!(number(&row["high"]), number(&model["overall"]["ci_high"]));
        assert_eq!(number(&row["floor"]), number(&model["noise_floor"]));
        // Drawn where the numbers say: the dot inside its whisker, the band centred on 0.
        let (dot, whisker) = (number(&row["dot"]), &row["whisker"]);
        assert!(
            number(&whisker[0]) <= dot + 0.1 && dot <= number(&whisker[1]) + 0.1,
            "{row}"
        );
        let band = &row["band"];
        assert!(
            (number(&band[0]) + number(&band[1]) / 2.0 - zero).abs() < 0.2,
            "{row} zero {zero}"
        );
        let delta = number(&model["overall"]["delta"]);
        if delta < 0.0 {
            assert!(dot < zero, "{row}");
        }
    }
    assert_eq!(rows[0]["model"], "sim-strong");
    assert_eq!(rows[0]["verdict"], "regression");
    assert!(number(&rows[0]["high"]) < 0.0);
    let title = tab
        .eval("document.querySelector('#compare-forest .axis-title').textContent")
        .expect("axis title");
    assert_eq!(title, "ΔOverall (current − baseline), points 0-100");

    // The per-model table comes before the groups, with the noise floor a person reads.
    let table = tab
        .eval(
            "(() => { const r = document.querySelector('#compare-models tbody tr'); \
             const top = s => document.querySelector(s).getBoundingClientRect().top; \
             return {model: r.dataset.model, verdict: r.dataset.verdict, \
             floor: r.querySelector('td[data-metric=noise_floor]').textContent, \
             forest: top('#compare-forest'), models: top('#compare-models'), groups: top('#compare-table')}; })()",
        )
        .expect("table");
    assert_eq!(table["model"], "sim-strong");
    assert_eq!(table["verdict"], "regression");
    assert_eq!(
        table["floor"],
        format!("±{:.2}", number(&models[0]["noise_floor"]))
    );
    assert!(number(&table["forest"]) < number(&table["models"]));
    assert!(number(&table["models"]) < number(&table["groups"]));
    // Every tested group of the JSON is a row of the groups table, the exploratory ones apart.
    let shown = tab
        .eval(
            "[...document.querySelectorAll('#compare-table tbody tr')].map(r => [r.dataset.model, r.dataset.group, r.dataset.verdict, r.dataset.delta, r.dataset.q])",
        )
        .expect("groups");
    let tested: Vec<Value> = doc["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .filter(|g| g["group"] != "all" && g["verdict"] != "exploratory")
        .map(|g| {
            let raw = |v: &Value| number(v).to_string();
            serde_json::json!([
                g["model"],
                g["group"],
                g["verdict"],
                raw(&g["overall"]["delta"]),
                raw(&g["q"])
            ])
        })
        .collect();
    assert_eq!(shown, Value::Array(tested));
    let exploratory = tab
        .eval("document.querySelectorAll('#exploratory #compare-exploratory tbody tr').length")
        .expect("exploratory");
    assert_eq!(
        number(&exploratory) as usize,
        doc["groups"]
            .as_array()
            .expect("groups")
            .iter()
            .filter(|g| g["group"] != "all" && g["verdict"] == "exploratory")
            .count()
    );
    // Every pair of runs of the same seed pairs: no warning.
    let warning = tab
        .eval("document.querySelector('.warning#pairing')")
        .expect("warning");
    assert!(warning.is_null(), "{warning}");
    assert_offline(&tab, &out);
    let shot = shot(&tab, "section#compare", "compare");
    assert!(shot.exists());
    shot_forest(&tab);
}

fn shot_forest(tab: &Tab<'_>) {
    tab.set_viewport(1280, 900).expect("viewport");
    tab.screenshot(
        &screenshot_dir().join("compare-forest.png"),
        Some("#compare-forest"),
    )
    .expect("screenshot");
}

/// The text of each column of turn 1 of the open flip.
const FIRST_TURN: &str = "(() => { const d = document.querySelector('details.flip[open]'); \
    const t = d.querySelector('table.side-by-side tr[data-turn=\"1\"]'); \
    const cell = c => { const e = t.querySelector('td.' + c); const r = e.getBoundingClientRect(); \
      return {text: e.textContent, left: r.left, top: r.top, width: r.width}; }; \
    return {id: d.dataset.dialogue, table: d.querySelector('table.side-by-side').getBoundingClientRect().height, \
      baseline: cell('baseline'), current: cell('current'), \
      imgs: d.querySelectorAll('img').length, scripts: document.querySelectorAll('script').length}; })()";

/// The first turn's customer message of dialogue `id` in `folder`.
fn first_message(folder: &Path, id: &str) -> String {
    let text = std::fs::read_to_string(folder.join("dialogues.jsonl")).expect("records");
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("record"))
        .find(|r| r["job"]["dialogue_id"] == id)
        .and_then(|r| r["turns"][0]["user_message"].as_str().map(String::from))
        .expect("the dialogue")
}

#[test]
fn a_flip_opens_both_transcripts_side_by_side_and_hostile_text_stays_text() {
    let dir = runs();
    let (worse, base) = (dir.join("worse"), dir.join("base"));
    let out = dir.join("compare-flips.html");
    page(&worse, &base, &out);
    let flip = first_flip(&worse, &base);
    for scripts in [true, false] {
        let browser = Browser::launch();
        let tab = browser.open(&out, scripts).expect("open");
        let closed = tab
            .eval("document.querySelectorAll('details.flip[open]').length")
            .expect("open flips");
        assert_eq!(number(&closed), 0.0);
        // A person clicks the first flip's line.
        tab.click("#compare-flips details.flip > summary")
            .expect("click");
        tab.wait_for(
            "document.querySelector('details.flip[open]') !== null",
            std::time::Duration::from_secs(5),
        )
        .expect("it opens");
        let seen = tab.eval(FIRST_TURN).expect("turn 1");
        assert_eq!(seen["id"], flip.as_str());
        assert!(number(&seen["table"]) > 0.0, "{seen}");
        // Baseline on the left, current on the right, on one line.
        let (b, c) = (&seen["baseline"], &seen["current"]);
        assert!(
            number(&b["left"]) + number(&b["width"]) <= number(&c["left"]) + 0.5,
            "{seen}"
        );
        assert_eq!(number(&b["top"]), number(&c["top"]), "{seen}");
        let baseline_said = first_message(&base, &flip);
        assert!(
            b["text"].as_str().expect("text").contains(&baseline_said),
            "{seen}"
        );
        // The planted text is shown as text in the current column, twice (customer, agent).
        assert_eq!(
            c["text"].as_str().expect("text").matches(HOSTILE).count(),
            2,
            "{seen}"
        );
        assert_eq!(seen["imgs"], 0);
        assert_eq!(seen["scripts"], 0, "the compare page has no script");
        let pwned = tab.eval("window.__pwned === undefined").expect("pwned");
        assert_eq!(pwned, Value::Bool(true));
        // Still linked to each run's report.
        let links = tab
            .eval(
                "[...document.querySelectorAll('details.flip[open] summary a')].map(a => a.className + ' ' + a.getAttribute('href'))",
            )
            .expect("links");
        let id = sage::report::encode_uri_component(&flip);
        assert_eq!(
            links,
            serde_json::json!([
                format!("baseline base/report.html#dialogue={id}"),
                format!("current worse/report.html#dialogue={id}")
            ])
        );
        assert_offline(&tab, &out);
        if scripts {
            tab.set_viewport(1280, 900).expect("viewport");
            tab.screenshot(
                &screenshot_dir().join("compare-flip.png"),
                Some("details.flip[open]"),
            )
            .expect("screenshot");
        }
    }
}

#[test]
fn the_warning_box_shows_when_under_half_pairs() {
    let dir = runs();
    let (more, base) = (dir.join("more"), dir.join("base"));
    let doc = json(&more, &base);
    let warning = doc["pairing"]["warning"].as_str().expect("a warning");
    let out = dir.join("compare-more.html");
    page(&more, &base, &out);
    let browser = Browser::launch();
    let tab = browser.open(&out, true).expect("open");
    let seen = tab
        .eval(
            "(() => { const w = document.querySelector('.warning#pairing'); if (!w) return null; \
             const s = getComputedStyle(w); const r = w.getBoundingClientRect(); \
             return {text: w.textContent, first: w === document.querySelector('section#compare > h2').nextElementSibling, \
             border: s.borderTopColor, width: s.borderTopWidth, height: r.height, \
             above: r.top < document.querySelector('#compare-forest').getBoundingClientRect().top}; })()",
        )
        .expect("warning");
    assert!(!seen.is_null(), "no warning box");
    assert_eq!(
        seen["text"],
        format!(
            "Few dialogues pair: compared unpaired. O{}",
            warning.strip_prefix('o').expect("only ...")
        ),
        "{seen}"
    );
    assert_eq!(seen["first"], true, "{seen}");
    assert_eq!(seen["above"], true, "{seen}");
    assert_eq!(seen["border"], "rgb(198, 40, 40)", "red: {seen}");
    assert_eq!(seen["width"], "2px");
    assert!(number(&seen["height"]) > 20.0);
    let paired = number(&doc["pairing"]["paired"]);
    let total = number(&doc["current"]["dialogues"]);
    assert!(2.0 * paired < total, "{doc}");
    assert!(warning.starts_with(&format!("only {paired} of the {total} dialogues of `more`")));
    assert_offline(&tab, &out);
    shot(&tab, "section#compare", "compare-warning");
}

/// A run of the first 27 sweep models (`common::SWEEP_MODELS`, long names as providers spell
/// them) on one scenario, `cases` cases, seed `seed`.
fn long_names_config(dir: &Path, cases: usize, seed: u64) -> String {
    let telecom = common::scenario_path("telecom_package");
    common::Sweep {
        models: 27,
        scenarios: &[&telecom],
        cases,
        min_per_route: 0,
        max_turns: 4,
        judges: 1,
        seed,
    }
    .write(dir)
    .display()
    .to_string()
}

/// 27 models with long names: in a 1366 and a 1024 pixel window the page is no wider than the
/// window (wide tables scroll in their own box) and every name in the forest plot is whole,
/// inside the plot. The screenshot at 1366 is docs/img/report/compare-27.png.
#[test]
fn twenty_seven_long_model_names_are_whole_and_the_page_fits_the_window() {
    let dir = common::fresh_dir("compare_browser_27");
    run(&dir, &long_names_config(&dir, 4, 5), "before");
    run(&dir, &long_names_config(&dir, 4, 6), "after");
    let out = dir.join("compare-27.html");
    page(&dir.join("after"), &dir.join("before"), &out);
    let browser = Browser::launch();
    let tab = browser.open(&out, true).expect("open");
    for width in [1366, 1024] {
        tab.set_viewport(width, 900).expect("viewport");
        let seen = tab
            .eval(
                "(() => { const svg = document.querySelector('#compare-forest').getBoundingClientRect(); \
                 const labels = [...document.querySelectorAll('#compare-forest g.forest-row')].map(g => { \
                   const t = g.querySelector('text.label'); const r = t.getBoundingClientRect(); \
                   return {model: g.dataset.model, text: t.textContent, \
                     inside: r.left >= svg.left - 0.5 && r.right <= svg.right + 0.5 && r.top >= svg.top - 0.5 && r.bottom <= svg.bottom + 0.5,}; }); \
                 return {scroll: document.documentElement.scrollWidth, inner: innerWidth, labels}; })()",
            )
            .expect("layout");
        assert!(
            number(&seen["scroll"]) <= number(&seen["inner"]),
            "{width}: the page is {} wide in a {} window",
            seen["scroll"],
            seen["inner"]
        );
        let labels = seen["labels"].as_array().expect("labels");
        assert_eq!(labels.len(), 27);
        for label in labels {
            assert_eq!(label["text"], label["model"], "{width}: {label}");
            assert_eq!(label["inside"], true, "{width}: {label}");
        }
        // The labels end left of the plot: the longest name's text ends before the plot's
        // first grid line.
        let overlap = tab
            .eval(
                "(() => { const grid = document.querySelector('#compare-forest line.grid').getBoundingClientRect().left; \
                 return [...document.querySelectorAll('#compare-forest text.label')].filter(t => t.getBoundingClientRect().right > grid).map(t => t.textContent); })()",
            )
            .expect("overlap");
        assert_eq!(
            overlap,
            serde_json::json!([]),
            "{width}: labels over the plot"
        );
        // The first row of each table is seen, not under its heading (a sticky heading must
        // stay in place inside the table's scroll box).
        let covered = tab
            .eval(
                "[...document.querySelectorAll('table.data')].filter(t => t.closest('details:not([open])') === null).map(t => { \
                   const r = t.querySelector('tbody tr'); r.scrollIntoView({block: 'center'}); \
                   const b = r.getBoundingClientRect(); \
                   return [t.id, r.contains(document.elementFromPoint(b.left + 10, b.top + b.height / 2))]; \
                 }).filter(([, seen]) => !seen).map(([id]) => id)",
            )
            .expect("first rows");
        assert_eq!(
            covered,
            serde_json::json!([]),
            "{width}: first rows covered"
        );
    }
    assert_offline(&tab, &out);
    shot_at(&tab, "section#compare", "compare-27", 1366);
}
