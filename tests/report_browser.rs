//! The HTML reports checked through a real headless Chromium (tests/common/browser.rs), not by
//! reading the file: no console error, no request beyond the file itself, the tables equal the
//! run's summary files, every chart has its marks, the explorers filter and open a transcript,
//! everything above the explorer reads with scripts off. Screenshots of each section are written
//! to `common::browser::screenshot_dir()` (docs/report.md shows them).

mod common;

use common::browser::{Browser, Tab, assert_offline, screenshot_dir};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a page's script may take to decode its embedded data.
const READY: Duration = Duration::from_secs(20);

/// A JavaScript string literal of `text`.
fn js(text: &str) -> String {
    serde_json::to_string(text).expect("a string")
}

/// Screenshots of every section of the open page, named `PREFIX-SECTION.png` (`SECTION.png` when it begins with the prefix), at a desktop
/// width and cut at [`SHOT_HEIGHT`] pixels (the top of a long section).
fn screenshot_sections(tab: &Tab<'_>, prefix: &str) -> Vec<PathBuf> {
    let ids = tab
        .eval("[...document.querySelectorAll('section[data-section]')].map(s => s.id)")
        .expect("sections");
    ids.as_array()
        .expect("a list")
        .iter()
        .map(|id| {
            let id = id.as_str().expect("an id");
            // desk-run, not desk-desk-run.
            let name = if id.starts_with(prefix) {
                id.to_string()
            } else {
                format!("{prefix}-{id}")
            };
            shot(tab, &format!("section#{id}"), &name)
        })
        .collect()
}

/// The height at which a screenshot is cut.
const SHOT_HEIGHT: u32 = 1400;

/// A screenshot of the window, 1,280 x [`SHOT_HEIGHT`], with the element `selector` scrolled to
/// the top (below the sticky table of contents, as a reader sees it), as `NAME.png` in the
/// screenshot folder.
fn shot(tab: &Tab<'_>, selector: &str, name: &str) -> PathBuf {
    let path = window_at(tab, selector, name, (1280, SHOT_HEIGHT));
    tab.set_viewport(1280, 900).expect("viewport");
    path
}

/// As [`shot`], in a window of `size` (width, height) pixels.
fn shot_at(tab: &Tab<'_>, selector: &str, name: &str, size: (u32, u32)) -> PathBuf {
    tab.set_viewport(size.0, size.1).expect("viewport");
    let cut = format!(
        "(e => {{ e.dataset.shotStyle = e.style.cssText; \
         e.style.maxHeight = '{SHOT_HEIGHT}px'; e.style.overflow = 'hidden'; }})(document.querySelector({}))",
        js(selector)
    );
    tab.eval(&cut).expect("cut");
    let path = screenshot_dir().join(format!("{name}.png"));
    tab.screenshot(&path, Some(selector)).expect("screenshot");
    tab.eval(&format!(
        "(e => {{ e.style.cssText = e.dataset.shotStyle; delete e.dataset.shotStyle; }})(document.querySelector({}))",
        js(selector)
    ))
    .expect("restore");
    path
}

/// A screenshot of the window at `size` as a reader sees it with `selector`'s top scrolled to
/// just below the table of contents (sticky parts where they stay), written as `name`.png.
fn window_at(tab: &Tab<'_>, selector: &str, name: &str, size: (u32, u32)) -> PathBuf {
    tab.set_viewport(size.0, size.1).expect("viewport");
    tab.eval(&format!(
        "document.querySelector({}).scrollIntoView()",
        js(selector)
    ))
    .expect("scroll");
    let path = screenshot_dir().join(format!("{name}.png"));
    tab.screenshot_viewport(&path).expect("screenshot");
    path
}

/// The number in `value` (a JSON number).
fn number(value: &Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("a number: {value}"))
}

#[test]
fn the_desk_report_reads_in_a_browser_equal_to_its_summary() {
    let dir = tempfile::tempdir().expect("dir");
    let printed = common::sage_ok(&[
        "run",
        "--suite",
        "support-desk",
        "--repeats",
        "1",
        "--quiet",
        "--run-id",
        "desk",
        "--out",
        dir.path().to_str().expect("utf-8"),
    ]);
    let folder = dir.path().join("desk");
    let report = folder.join("report.html");
    assert!(
        printed.trim_end().ends_with(&report.display().to_string()),
        "the run ends with the report's path: {printed}"
    );
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("desk-summary.json")).expect("summary"),
    )
    .expect("json");

    let browser = Browser::launch();
    let tab = browser.open(&report, true).expect("open");
    tab.wait_for(
        "document.querySelector('div#desk-explorer').dataset.ready !== undefined",
        READY,
    )
    .expect("the explorer loads its data");

    // The metric table equals desk-summary.json, cell by cell.
    let models = summary.as_array().expect("a list of models");
    for model in models {
        let name = model["model"].as_str().expect("name");
        for key in [
            "runs",
            "unsafe_actions",
            "escalation_accuracy",
            "over_escalation",
            "resolution_rate",
            "false_closures",
            "resolution_quality",
            "policy_adherence",
        ] {
            let shown = tab
                .eval(&format!(
                    "document.querySelector('#desk-metrics-table tr[data-model=' + {} + '] td[data-metric={key}]').dataset.value",
                    js(&js(name))
                ))
                .expect("a cell");
            let shown: f64 = shown.as_str().expect("a value").parse().expect("a number");
            assert!(
                (shown - number(&model[key])).abs() < 1e-9,
                "{name} {key}: page {shown}, summary {}",
                model[key]
            );
        }
    }

    // Filter the explorer to one model, open a conversation: its tool calls are shown.
    let reckless = "sim-desk-reckless";
    tab.eval(&format!(
        "(() => {{ const s = document.querySelector('select[data-filter=model]'); s.value = {}; \
         s.dispatchEvent(new Event('change', {{bubbles: true}})); }})()",
        js(reckless)
    ))
    .expect("filter");
    let rows = tab
        .eval("[...document.querySelectorAll('#desk-explorer-table tbody tr[data-conversation]')].map(r => r.dataset.conversation)")
        .expect("rows");
    let rows = rows.as_array().expect("a list");
    assert!(!rows.is_empty(), "the filter left no row");
    for row in rows {
        assert!(
            row.as_str().expect("id").contains(reckless),
            "a row of another model: {row}"
        );
    }
    let first = rows[0].as_str().expect("id").to_string();
    tab.click(&format!(
        "#desk-explorer-table tr[data-conversation={}]",
        js(&first)
    ))
    .expect("click");
    tab.wait_for(
        &format!(
            "(v => v && !v.hidden && v.dataset.conversation === {} && v.querySelectorAll('.tool-call').length > 0)(document.querySelector('#conversation-view'))",
            js(&first)
        ),
        READY,
    )
    .expect("the conversation opens with its tool calls");
    assert_offline(&tab, &report);
    screenshot_sections(&tab, "desk");

    // A link to a conversation opens it.
    let link = format!(
        "file://{}#conversation={}",
        report.canonicalize().expect("path").display(),
        sage::report::encode_uri_component(&first)
    );
    let linked = browser.open(&link, true).expect("open the link");
    linked
        .wait_for(
            &format!(
                "(v => v && !v.hidden && v.dataset.conversation === {})(document.querySelector('#conversation-view'))",
                js(&first)
            ),
            READY,
        )
        .expect("the link opens the conversation");

    // Without scripts, everything above the explorer is there.
    let plain = browser.open(&report, false).expect("open without scripts");
    let shown = plain
        .eval("document.querySelectorAll('#desk-metrics-table tr[data-model]').length")
        .expect("rows");
    assert_eq!(number(&shown) as usize, models.len());
    let sections = plain
        .eval("[...document.querySelectorAll('section[data-section] > h2')].length")
        .expect("sections");
    assert_eq!(number(&sections), 7.0);
}

/// Two SAGE runs of the simulated agents over the bundled scenarios, each case twice (so pass^k
/// is reported): `base`, and `worse` where sim-strong derives its action right a fifth of the
/// time (a planted regression). Made once for the tests of this file.
fn sage_runs() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        // Under cargo's temporary folder for integration tests, not /tmp: a static is never
        // dropped, so a TempDir here would be left behind.
        let dir = common::fresh_dir("report_browser_runs");
        let base = common::write_config(&dir, "null", 12, 5);
        let text = std::fs::read_to_string(&base).expect("config");
        let worse = dir.join("worse.yaml");
        std::fs::write(
            &worse,
            text.replace(
                "profile: strong,",
                "profile: strong, skills: {action_derivation: 0.2},",
            ),
        )
        .expect("config");
        let out = dir.to_str().expect("utf-8");
        for (id, config) in [
            ("base", base.as_str()),
            ("worse", worse.to_str().expect("utf-8")),
        ] {
            common::sage_ok(&[
                "run",
                "--config",
                config,
                "--repeats",
                "2",
                "--run-id",
                id,
                "--out",
                out,
                "--quiet",
            ]);
        }
        dir
    })
}

#[test]
fn the_compare_report_lists_the_planted_regression_first() {
    let runs = sage_runs();
    let out = runs.join("compare.html");
    common::sage_ok(&[
        "report",
        runs.join("worse").to_str().expect("utf-8"),
        "--compare",
        runs.join("base").to_str().expect("utf-8"),
        "--html",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    let browser = Browser::launch();
    let tab = browser.open(&out, true).expect("open");
    let first = tab
        .eval(
            "(r => r && {model: r.dataset.model, group: r.dataset.group, delta: Number(r.dataset.delta), \
             regression: r.classList.contains('regression')})\
             (document.querySelector('#compare-models tbody tr[data-model]'))",
        )
        .expect("the first row");
    assert_eq!(first["model"], "sim-strong", "{first}");
    assert_eq!(first["regression"], true, "{first}");
    assert!(number(&first["delta"]) < 0.0, "{first}");
    // The untouched model regressed nowhere.
    let weak = tab
        .eval("document.querySelectorAll('#compare tr.regression[data-model=\"sim-weak\"]').length")
        .expect("rows");
    assert_eq!(number(&weak), 0.0);
    // Dialogues that went from pass to fail link to both runs' transcripts.
    let flips = tab
        .eval(
            "[...document.querySelectorAll('#compare-flips details[data-flip=\"pass-to-fail\"]')]\
             .map(r => [...r.querySelectorAll('summary a')].map(a => a.getAttribute('href')))",
        )
        .expect("flips");
    let flips = flips.as_array().expect("a list");
    assert!(!flips.is_empty(), "no dialogue went from pass to fail");
    for links in flips {
        let links: Vec<&str> = links
            .as_array()
            .expect("links")
            .iter()
            .map(|l| l.as_str().expect("href"))
            .collect();
        assert!(
            links
                .iter()
                .any(|l| l.starts_with("worse/report.html#dialogue="))
                && links
                    .iter()
                    .any(|l| l.starts_with("base/report.html#dialogue=")),
            "{links:?}"
        );
    }
    assert_offline(&tab, &out);
    // The screenshot docs/report.md shows is tests/compare_browser.rs's.
}

/// The mean of a summary.json statistic (`{"mean": ..}`) or a plain number.
fn mean(value: &Value) -> f64 {
    value.get("mean").map_or_else(|| number(value), number)
}

/// Sets the explorer's select `filter` to the option labelled `label`.
fn choose(tab: &Tab<'_>, filter: &str, label: &str) {
    let found = tab
        .eval(&format!(
            "(() => {{ const s = document.querySelector('#explorer select[data-filter={filter}]'); \
             const o = [...s.options].find(o => o.textContent === {}); if (!o) return false; \
             s.value = o.value; s.dispatchEvent(new Event('change', {{bubbles: true}})); return true; }})()",
            js(label)
        ))
        .expect("filter");
    assert_eq!(found, Value::Bool(true), "no {filter} option {label}");
}

#[test]
fn the_sage_report_reads_in_a_browser_equal_to_its_summary() {
    let folder = sage_runs().join("base");
    let report = folder.join("report.html");
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("summary.json")).expect("summary"),
    )
    .expect("json");
    let models = summary["models"].as_array().expect("models");
    let browser = Browser::launch();
    let tab = browser.open(&report, true).expect("open");
    tab.wait_for(
        "document.querySelectorAll('#explorer tr[data-dialogue]').length > 0",
        READY,
    )
    .expect("the explorer lists dialogues");

    // The leaderboard equals summary.json, cell by cell.
    let keys = tab
        .eval(
            "[...new Set([...document.querySelectorAll('#leaderboard-table td[data-metric][data-value]')]\
             .map(td => td.dataset.metric))]",
        )
        .expect("keys");
    let mut keys: Vec<String> = serde_json::from_value(keys).expect("strings");
    keys.retain(|k| k != "model"); // the name column sorts by name
    for key in [
        "overall",
        "logic",
        "chat",
        "acc_cls",
        "sim_path",
        "acc_action",
        "dialogues",
        "pass^1",
        "pass^2",
    ] {
        assert!(keys.iter().any(|k| k == key), "no {key} column: {keys:?}");
    }
    for model in models {
        let name = model["model"].as_str().expect("name");
        for key in &keys {
            let shown = tab
                .eval(&format!(
                    "document.querySelector('#leaderboard-table tr[data-model=' + {} + '] td[data-metric=' + {} + ']').dataset.value",
                    js(&js(name)),
                    js(&js(key))
                ))
                .expect("a cell");
            let shown: f64 = shown
                .as_str()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name} {key}: not a number: {shown}"));
            let want = match key.strip_prefix("pass^") {
                // pass^k: with repeats, summary.json's models[].pass_k.
                Some(k) => {
                    let k: u64 = k.parse().expect("k");
                    let entry = model["pass_k"]
                        .as_array()
                        .expect("pass_k with repeats")
                        .iter()
                        .find(|e| e["k"] == k)
                        .unwrap_or_else(|| panic!("{name}: no pass^{k}"));
                    number(&entry["pass"])
                }
                // The OA noise floor is the model's own field, not one of `all`.
                None if key == "noise_floor" => number(&model["noise_floor"]),
                None => mean(&model["all"][key.as_str()]),
            };
            assert!(
                (shown - want).abs() < 1e-9,
                "{name} {key}: page {shown}, summary {want}"
            );
        }
    }
    // Sorting by a column orders the rows by its values, and a second click reverses them (a
    // click that did nothing would leave the rows as they were, already in OA order).
    let overall = |tab: &Tab<'_>| -> Vec<f64> {
        let order = tab
            .eval("[...document.querySelectorAll('#leaderboard-table tr[data-model] td[data-metric=overall]')].map(td => Number(td.dataset.value))")
            .expect("order");
        serde_json::from_value(order).expect("numbers")
    };
    let before = overall(&tab);
    let mut sorted = before.clone();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let mut descending = sorted.clone();
    descending.reverse();
    assert!(
        sorted.first() != sorted.last(),
        "the models' OA are all equal: a sort cannot be seen {sorted:?}"
    );
    tab.click("#leaderboard-table th[data-sort=overall]")
        .expect("sort");
    let first = overall(&tab);
    assert!(
        first == sorted || first == descending,
        "not sorted: {first:?}"
    );
    tab.click("#leaderboard-table th[data-sort=overall]")
        .expect("sort again");
    let second = overall(&tab);
    let mut reversed = first.clone();
    reversed.reverse();
    assert_eq!(
        second, reversed,
        "a second click does not reverse the order"
    );

    // Every chart has its marks, drawn, with the summary's values.
    let marks = tab
        .eval(
            "Object.fromEntries([...document.querySelectorAll('svg.chart[data-chart]')].map(svg => \
             [svg.dataset.chart, [...svg.querySelectorAll('.mark')].map(m => { const b = m.getBoundingClientRect(); \
             return {model: m.dataset.model, series: m.dataset.series, value: Number(m.dataset.value), \
             drawn: b.width > 0 || b.height > 0}; })]))",
        )
        .expect("marks");
    for chart in [
        "execution-gap",
        "turn-depth",
        "adversarial",
        "format-errors",
        "chat-dimensions",
    ] {
        let list = marks[chart]
            .as_array()
            .unwrap_or_else(|| panic!("no chart {chart}"));
        for model in models {
            let name = model["model"].as_str().expect("name");
            assert!(
                list.iter()
                    .any(|m| m["model"] == name && m["drawn"] == true),
                "{chart}: no mark drawn for {name}"
            );
        }
    }
    let mark = |chart: &str, model: &str, series: &str| -> f64 {
        let found = marks[chart]
            .as_array()
            .expect("marks")
            .iter()
            .find(|m| m["model"] == model && m["series"] == series)
            .unwrap_or_else(|| panic!("{chart}: no mark {model} {series}"));
        number(&found["value"])
    };
    for model in models {
        let name = model["model"].as_str().expect("name");
        for (series, key) in [
            ("Acc_cls", "acc_cls"),
            ("Sim_path", "sim_path"),
            ("Acc_action", "acc_action"),
        ] {
            let want = mean(&model["all"][key]);
            assert!((mark("execution-gap", name, series) - want).abs() < 1e-9);
        }
        for (depth, label) in [("t1", "T1"), ("t5", "T5"), ("final", "Final")] {
            let want = mean(&model["by_turn"][depth]["overall"]);
            let shown = mark("turn-depth", name, &format!("OA {label}"));
            assert!(
                (shown - want).abs() < 1e-9,
                "{name} {depth}: {shown} vs {want}"
            );
        }
        for (level, stats) in model["by_adversarial"].as_object().expect("levels") {
            for (metric, key) in [("OA", "overall"), ("Logic", "logic"), ("Chat", "chat")] {
                let want = mean(&stats[key]);
                let shown = mark("adversarial", name, &format!("{metric} {level}"));
                assert!((shown - want).abs() < 1e-9, "{name} {metric} {level}");
            }
        }
    }

    // Filter the explorer to one model: it lists exactly that model's dialogues; open one.
    let weak = models
        .iter()
        .find(|m| m["model"] == "sim-weak")
        .expect("sim-weak");
    choose(&tab, "model", "sim-weak");
    let count = tab
        .eval("Number(document.getElementById('explorer-count').textContent)")
        .expect("count");
    assert_eq!(number(&count), number(&weak["dialogues"]));
    let ids = tab
        .eval("[...document.querySelectorAll('#explorer tr[data-dialogue]')].map(r => r.dataset.dialogue)")
        .expect("rows");
    let ids: Vec<String> = serde_json::from_value(ids).expect("ids");
    assert!(!ids.is_empty());
    assert!(
        ids.iter().all(|id| id.contains("/sim-weak/")),
        "a row of another model"
    );
    let id = &ids[0];
    let turns = dialogue_turns(&folder, id);
    tab.click(&format!("#explorer tr[data-dialogue={}] td", js(id)))
        .expect("click");
    let opened = format!(
        "(v => v && v.dataset.dialogue === {} && v.querySelectorAll('.turn[data-turn]').length === {turns})\
         (document.getElementById('dialogue-view'))",
        js(id)
    );
    tab.wait_for(&opened, READY)
        .expect("the dialogue opens with its turns");
    assert_offline(&tab, &report);
    screenshot_sections(&tab, "sage");

    // A link to the dialogue opens it.
    let link = format!(
        "file://{}#dialogue={}",
        report.canonicalize().expect("path").display(),
        sage::report::encode_uri_component(id)
    );
    let linked = browser.open(&link, true).expect("open the link");
    linked
        .wait_for(&opened, READY)
        .expect("the link opens the dialogue");

    // Without scripts, everything above the explorer is there.
    let plain = browser.open(&report, false).expect("open without scripts");
    let shown = plain
        .eval(
            "({rows: document.querySelectorAll('#leaderboard-table tr[data-model]').length, \
              charts: document.querySelectorAll('svg.chart[data-chart] .mark').length, \
              graphs: document.querySelectorAll('svg.sop-graph g.node[data-stage]').length, \
              routes: document.querySelectorAll('table.routes tr[data-route]').length, \
              sections: document.querySelectorAll('section[data-section] > h2').length})",
        )
        .expect("counts");
    assert_eq!(number(&shown["rows"]) as usize, models.len());
    assert!(number(&shown["charts"]) > 0.0 && number(&shown["graphs"]) > 0.0);
    let routes: usize = summary["coverage"]
        .as_object()
        .expect("coverage")
        .values()
        .map(|r| r.as_object().expect("routes").len())
        .sum();
    assert!(number(&shown["routes"]) as usize >= routes, "{shown}");
    assert_eq!(number(&shown["sections"]), 6.0);
}

/// The number of turns of dialogue `id` in `folder`'s dialogues.jsonl.
fn dialogue_turns(folder: &Path, id: &str) -> usize {
    dialogue_record(folder, id)["turns"]
        .as_array()
        .expect("turns")
        .len()
}

/// The question the report exists for, asked through the browser as a newcomer would: which
/// SOP branch does sim-weak get wrong, and what did it say there? The graphs show sim-weak's
/// numbers, its worst route's cell leads to exactly its dialogues there, worst first, and the
/// first one opens at the turn where it broke, with what the agent said.
#[test]
fn from_a_models_worst_branch_to_what_it_said_there() {
    let folder = sage_runs().join("base");
    let report = folder.join("report.html");
    let browser = Browser::launch();
    let tab = browser.open(&report, true).expect("open");
    tab.wait_for(
        "document.querySelector('div#explorer').dataset.ready !== undefined",
        READY,
    )
    .expect("the explorer is ready");

    // The graphs coloured by one model: every stage shows that model's mean Logic.
    tab.eval(
        "(() => { const s = document.querySelector('select[data-graph-model]'); s.value = 'sim-weak'; \
         s.dispatchEvent(new Event('change', {bubbles: true})); })()",
    )
    .expect("choose the model");
    let view = tab
        .eval(
            "(() => { const nodes = [...document.querySelectorAll('svg.sop-graph g.node[data-logic-by-model]')]; \
              const of = (n, a) => JSON.parse(n.getAttribute(a) || '{}')['sim-weak']; \
              const want = n => of(n, 'data-logic-by-model') === undefined ? 'untested' \
                : 'Logic ' + Math.round(of(n, 'data-logic-by-model') * 100) / 100 + ' \u{b7} ' + (of(n, 'data-turns-by-model') || 0) + ' turns'; \
              return {view: document.getElementById('sop-graphs').dataset.modelView, nodes: nodes.length, \
                tested: nodes.filter(n => of(n, 'data-logic-by-model') !== undefined).length, \
                wrong: nodes.filter(n => n.querySelector('.stat').textContent !== want(n)) \
                  .slice(0, 5).map(n => [n.querySelector('.stat').textContent, want(n)])}; })()",
        )
        .expect("the view");
    assert_eq!(view["view"], "sim-weak", "{view}");
    assert!(
        view["nodes"].as_u64() > Some(0) && view["tested"].as_u64() > Some(0),
        "no stage shows a Logic of sim-weak: {view}"
    );
    assert_eq!(
        view["wrong"],
        json!([]),
        "stages whose text is not sim-weak's Logic and turns: {view}"
    );
    shot(&tab, "section#sop-graphs", "question-1-graphs-of-sim-weak");

    // sim-weak's worst route (lowest mean Logic of its cells), and its link.
    let worst = tab
        .eval(
            "(() => { const cells = [...document.querySelectorAll('table.route-models td[data-model=\"sim-weak\"]')]\
             .filter(td => td.dataset.value !== ''); cells.sort((a, b) => Number(a.dataset.value) - Number(b.dataset.value)); \
             const td = cells[0]; return {reached: Number(td.dataset.reached), value: Number(td.dataset.value), \
             route: td.closest('tr').dataset.routeKey, href: td.querySelector('a').getAttribute('href')}; })()",
        )
        .expect("the worst cell");
    let href = worst["href"].as_str().expect("a link").to_string();
    assert!(href.starts_with("#explore="), "{worst}");
    tab.click(&format!("a[href={}]", js(&href))).expect("click");
    tab.wait_for(
        &format!(
            "Number(document.getElementById('explorer-count').textContent) === {}",
            worst["reached"]
        ),
        READY,
    )
    .expect("the explorer shows exactly the dialogues that reached the route");
    let rows = tab
        .eval(
            "[...document.querySelectorAll('#explorer tr[data-dialogue]')].map(r => \
             ({id: r.dataset.dialogue, logic: Number(r.querySelector('td[data-route-logic]').dataset.routeLogic)}))",
        )
        .expect("rows");
    let rows = rows.as_array().expect("a list");
    assert_eq!(rows.len() as f64, number(&worst["reached"]));
    assert!(
        rows.iter()
            .all(|r| r["id"].as_str().expect("id").contains("/sim-weak/"))
    );
    let logic: Vec<f64> = rows.iter().map(|r| number(&r["logic"])).collect();
    assert!(
        logic.windows(2).all(|w| w[0] <= w[1]),
        "not worst first: {logic:?}"
    );
    // The link is stable: loading it gives the same rows.
    let link = format!(
        "file://{}{href}",
        report.canonicalize().expect("path").display()
    );
    let again = browser.open(&link, true).expect("open the link");
    again
        .wait_for(
            &format!(
                "Number(document.getElementById('explorer-count').textContent) === {}",
                worst["reached"]
            ),
            READY,
        )
        .expect("the link gives the same view");

    // The worst dialogue opens where it broke, with what the agent said there.
    let id = rows[0]["id"].as_str().expect("id").to_string();
    tab.click(&format!("#explorer tr[data-dialogue={}] td", js(&id)))
        .expect("open");
    tab.wait_for(
        &format!(
            "(v => v && v.dataset.dialogue === {} && v.querySelector('.turn.broke') !== null)(document.getElementById('dialogue-view'))",
            js(&id)
        ),
        READY,
    )
    .expect("the dialogue opens and marks where it broke");
    let broke = tab
        .eval(
            "(t => ({turn: t.dataset.turn, text: t.textContent, diffs: t.querySelectorAll('.diff').length}))\
             (document.querySelector('#dialogue-view .turn.broke'))",
        )
        .expect("the turn");
    let turn: usize = broke["turn"]
        .as_str()
        .expect("turn")
        .parse()
        .expect("a number");
    let record = dialogue_record(&folder, &id);
    // The agent's chat: of its valid answer, or what it sent when the answer did not parse.
    let outcome = &record["turns"][turn - 1]["outcome"];
    let said = outcome["turn"]["chat"]
        .as_str()
        .or_else(|| outcome["chat"].as_str())
        .expect("the agent's chat")
        .to_string();
    let text = broke["text"].as_str().expect("text");
    let excerpt: String = said.chars().take(40).collect();
    assert!(
        text.contains(excerpt.trim()),
        "turn {turn} does not show what the agent said ({excerpt}): {text}"
    );
    assert!(
        number(&broke["diffs"]) > 0.0,
        "no difference marked: {broke}"
    );
    shot(&tab, "#explorer", "question-2-its-dialogues-there");
    shot(
        &tab,
        "#dialogue-view .turn.broke",
        "question-3-where-it-broke",
    );
    assert_offline(&tab, &report);
}

/// Dialogue `id` of `folder`'s dialogues.jsonl, as JSON.
fn dialogue_record(folder: &Path, id: &str) -> Value {
    let text = std::fs::read_to_string(folder.join("dialogues.jsonl")).expect("records");
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a record"))
        .find(|r| r["job"]["dialogue_id"] == id)
        .unwrap_or_else(|| panic!("no dialogue {id}"))
}

/// The explorer's layout and transcript as a reader sees them: at 1024 px the score columns are
/// in view without scrolling sideways and the transcript opens right below the list; at 1440 px
/// it opens beside the list, each pane scrolling on its own; a turn the judges were not asked
/// about says "not judged" and marks nothing; the scores are on the 0-100 scale `sage show`
/// prints; each turn lists its calls; one case opens across every model.
#[test]
fn the_explorer_shows_the_transcript_beside_the_list_with_every_turns_record() {
    let folder = sage_runs().join("base");
    let report = folder.join("report.html");
    // A dialogue with a turn the judges were not asked about, and a scored turn.
    let text = std::fs::read_to_string(folder.join("dialogues.jsonl")).expect("records");
    let record: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a record"))
        .find(|r| {
            let turns = r["turns"].as_array().expect("turns");
            turns
                .iter()
                .any(|t| t["judges"].is_null() && t["outcome"]["kind"] == "valid")
                && turns.iter().any(|t| t["scores"].is_object())
        })
        .expect("a dialogue with a turn not judged (judge_turns: paper)");
    let id = record["job"]["dialogue_id"]
        .as_str()
        .expect("id")
        .to_string();
    let turns = record["turns"].as_array().expect("turns");
    let unjudged = turns
        .iter()
        .find(|t| t["judges"].is_null())
        .expect("unjudged")["turn"]
        .as_u64()
        .expect("n");
    let scored = turns
        .iter()
        .find(|t| t["scores"].is_object())
        .expect("scored");
    let acc_cls = 100.0 * number(&scored["scores"]["acc_cls"]);

    let browser = Browser::launch();
    let tab = browser.open(&report, true).expect("open");
    tab.set_viewport(1024, 800).expect("viewport");
    tab.wait_for(
        "document.querySelector('div#explorer').dataset.ready !== undefined",
        READY,
    )
    .expect("ready");
    // The rows are by dialogue id.
    let ids = tab
        .eval("[...document.querySelectorAll('#explorer tr[data-dialogue]')].map(r => r.dataset.dialogue)")
        .expect("ids");
    let ids: Vec<String> = serde_json::from_value(ids).expect("ids");
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted, "the default order is by dialogue id");
    // The score columns are inside the list's box, no sideways scroll of the page.
    let fits = tab
        .eval(
            "(() => { const s = document.querySelector('#explorer .explorer-scroll').getBoundingClientRect(); \
             const cells = [...document.querySelectorAll('#explorer tbody tr:first-child td')].slice(0, 4); \
             return cells.every(c => c.getBoundingClientRect().right <= s.right + 1) \
             && document.documentElement.scrollWidth <= innerWidth; })()",
        )
        .expect("eval");
    assert_eq!(fits, Value::Bool(true), "the scores are in view at 1024 px");
    tab.click(&format!("#explorer tr[data-dialogue={}] td", js(&id)))
        .expect("click");
    let opened = format!(
        "(v => v && v.dataset.dialogue === {} && v.querySelectorAll('.turn[data-turn]').length === {})(document.getElementById('dialogue-view'))",
        js(&id),
        turns.len()
    );
    tab.wait_for(&opened, READY).expect("the dialogue opens");
    let below = tab
        .eval(
            "(() => { const l = document.querySelector('#explorer .explorer-list').getBoundingClientRect(); \
             const v = document.getElementById('dialogue-view').getBoundingClientRect(); \
             return v.top >= l.bottom - 1 && v.left < l.left + 5 && v.top < innerHeight && v.bottom > 0; })()",
        )
        .expect("eval");
    assert_eq!(
        below,
        Value::Bool(true),
        "narrow: the transcript is below the list, in view"
    );
    // Not judged: says so, no reference column, nothing red, no scores.
    let turn = tab
        .eval(&format!(
            "(t => t && {{notJudged: t.classList.contains('not-judged'), tag: t.querySelector('h4 .tag.not-judged')?.textContent, \
             diffs: t.querySelectorAll('.diff').length, scores: t.querySelectorAll('.scores').length, \
             heads: [...t.querySelectorAll('table.compare tr:first-child th')].map(h => h.textContent)}})\
             (document.querySelector('#dialogue-view .turn[data-turn=\"{unjudged}\"]'))"
        ))
        .expect("the turn");
    assert_eq!(turn["notJudged"], true, "{turn}");
    assert_eq!(turn["tag"], "not judged", "{turn}");
    assert_eq!(turn["diffs"], 0, "{turn}");
    assert_eq!(turn["scores"], 0, "{turn}");
    assert_eq!(turn["heads"], serde_json::json!(["", "Agent"]), "{turn}");
    // The scored turn: 0-100 scores, its calls per role, its judges' weighted Chat.
    let shown = tab
        .eval(&format!(
            "(t => ({{acc: Number(t.querySelector('.scores [data-score=acc_cls]').dataset.value), \
             roles: [...t.querySelectorAll('table.calls tr[data-role]')].map(r => r.dataset.role), \
             chat: t.querySelectorAll('td[data-judge-chat]').length}}))\
             (document.querySelector('#dialogue-view .turn[data-turn=\"{}\"]'))",
            scored["turn"]
        ))
        .expect("the scored turn");
    assert!((number(&shown["acc"]) - acc_cls).abs() < 0.006, "{shown}");
    assert!(
        shown["roles"]
            .as_array()
            .expect("roles")
            .iter()
            .any(|r| r == "agent"),
        "{shown}"
    );
    assert!(number(&shown["chat"]) >= 1.0, "{shown}");
    // `sage show` prints the same number on the same scale.
    let printed = common::sage_ok(&["show", folder.to_str().expect("utf-8"), &id]);
    assert!(
        printed.contains(&format!("Acc_cls {acc_cls:.2}")),
        "sage show prints Acc_cls {acc_cls:.2}: {printed}"
    );
    assert!(printed.contains("not judged"), "{printed}");
    window_at(&tab, "div#explorer", "sage-explorer-1024", (1024, 800));

    // Wide: the transcript beside the list, each scrolling on its own.
    tab.set_viewport(1440, 900).expect("viewport");
    let beside = tab
        .eval(
            "(() => { const l = document.querySelector('#explorer .explorer-list').getBoundingClientRect(); \
             const v = document.getElementById('dialogue-view'); const r = v.getBoundingClientRect(); \
             const s = document.querySelector('#explorer .explorer-scroll'); \
             return r.left >= l.right - 1 && getComputedStyle(v).overflowY === 'auto' \
             && getComputedStyle(s).overflowY === 'auto' && v.scrollHeight > v.clientHeight; })()",
        )
        .expect("eval");
    assert_eq!(
        beside,
        Value::Bool(true),
        "wide: the transcript is beside the list"
    );
    window_at(&tab, "div#explorer", "sage-explorer-wide", (1440, 900));

    // The case across models: one column per model, one row per turn.
    let case = sage::report::explorer::case_id(
        &id,
        record["job"]["service_model"].as_str().expect("model"),
    );
    // The transcript's link to its case (followed as a click on it does: the link may be
    // scrolled under the sticky table of contents, where a click at its place would not land).
    let href = tab
        .eval("document.querySelector('#dialogue-view a.case-link').getAttribute('href')")
        .expect("the case link");
    assert_eq!(
        href,
        Value::String(sage::report::explorer::case_anchor_from(&case, &id))
    );
    tab.eval("document.querySelector('#dialogue-view a.case-link').click()")
        .expect("follow the case link");
    tab.wait_for(
        &format!(
            "(v => v.dataset.case === {} && v.querySelector('table.case-turns') !== null)(document.getElementById('dialogue-view'))",
            js(&case)
        ),
        READY,
    )
    .expect("the case opens");
    let heads = tab
        .eval("[...document.querySelectorAll('#dialogue-view table.case-turns th[data-model]')].map(t => t.dataset.model)")
        .expect("heads");
    let rows = tab
        .eval("[...document.querySelectorAll('#dialogue-view table.case-verdicts tr[data-model]')].map(t => t.dataset.model)")
        .expect("rows");
    let mut same_case: Vec<(String, String)> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a record"))
        .filter_map(|r| {
            let (i, m) = (
                r["job"]["dialogue_id"].as_str()?.to_string(),
                r["job"]["service_model"].as_str()?.to_string(),
            );
            (sage::report::explorer::case_id(&i, &m) == case).then_some((i, m))
        })
        .collect();
    same_case.sort();
    assert!(same_case.len() > 1, "the case has several models");
    let mut want: Vec<&str> = same_case.iter().map(|(_, m)| m.as_str()).collect();
    let mut listed: Vec<String> = serde_json::from_value(rows).expect("rows");
    listed.sort();
    want.sort();
    assert_eq!(listed, want, "a row per model of the case");
    let heads: Vec<String> = serde_json::from_value(heads).expect("heads");
    let from = record["job"]["service_model"].as_str().expect("model");
    assert!(
        heads.len() >= 2 && heads.iter().any(|m| m == from),
        "the dialogue it came from beside the best and the worst: {heads:?}"
    );
    shot_at(&tab, "#dialogue-view", "sage-case", (1440, 900));
    assert_offline(&tab, &report);
}
