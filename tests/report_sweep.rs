//! The SAGE report of a sweep, read in headless Chromium (tests/common/browser.rs) as a person
//! reads it: runs of 27 and of 60 simulated models named as real ones
//! (`common::SWEEP_MODELS`, names of up to 47 characters), at 1,366 and 1,024 pixels wide.
//!
//! - nothing makes the page wider than the window (every folded part opened, a transcript open,
//!   a case open): wide tables scroll in their own box, their first column stays;
//! - every view that lists models lists them in the leaderboard's order;
//! - names are whole: the per-route table's rotated headers, the charts' labels and legends;
//! - the case view: one row per model (in that order) with each turn's verdict, the best, the
//!   worst and the dialogue it was opened from side by side, every text block at least 150 px
//!   wide, and a `#case=` link lands on it;
//! - a line chart highlights the model picked (or pointed at) over the others in grey;
//! - the explorer's tags stay in view beside a long id, the transcript's tables inside its pane.
//!
//! Screenshots (`common::browser::screenshot_dir()`, `sweep-*.png`; those in docs/img/report
//! were taken by this test).

mod common;

use common::browser::{Browser, Tab, assert_fits, open_report, screenshot_dir};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// How long the page's scripts may take.
const READY: Duration = Duration::from_secs(30);

/// The widths a sweep's report is read at.
const WIDTHS: [u32; 2] = [1366, 1024];

/// A JavaScript string literal of `text`.
fn js(text: &str) -> String {
    serde_json::to_string(text).expect("a string")
}

/// A run of the first `n` sweep models on two scenarios (made once per size for this file):
/// its results folder.
fn sweep(n: usize) -> &'static Path {
    static RUNS: [OnceLock<PathBuf>; 2] = [OnceLock::new(), OnceLock::new()];
    let slot = if n == 27 { &RUNS[0] } else { &RUNS[1] };
    slot.get_or_init(|| {
        let dir = common::fresh_dir(&format!("report_sweep_{n}"));
        let scenarios = ["telecom_package", "airline_refund"].map(common::scenario_path);
        let config = common::Sweep {
            models: n,
            scenarios: &scenarios.each_ref().map(String::as_str),
            cases: 4,
            min_per_route: 0,
            max_turns: 6,
            judges: 3,
            seed: 7,
        }
        .write(&dir);
        common::run_config(&config, &dir, "sweep")
    })
}

/// The models of a run in the leaderboard's order.
fn ranked(folder: &Path) -> Vec<String> {
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("summary.json")).expect("summary.json"),
    )
    .expect("json");
    common::ranked(&summary)
}

/// Opens a run's report at `width` x 900, scripts on, ready.
fn open<'b>(browser: &'b Browser, folder: &Path, width: u32) -> Tab<'b> {
    open_report(browser, &folder.join("report.html"), width, "explorer")
}

/// Every view that lists models, each as the list of names it shows, in order.
const ORDERS: &str = r#"
(() => {
  const attr = (sel, a) => [...document.querySelectorAll(sel)].map(e => e.getAttribute(a));
  const values = sel => [...document.querySelectorAll(sel)].map(e => e.value).filter(v => v);
  const texts = sel => [...document.querySelectorAll(sel)].map(e => e.textContent);
  const out = {
    leaderboard: attr('#leaderboard-table tbody tr[data-model]', 'data-model'),
    scenario_matrix: attr('#scenario-matrix tbody tr[data-model]', 'data-model'),
    graph_selector: values('select[data-graph-model] option'),
    explorer_filter: texts('#explorer select[data-filter="model"] option').slice(1),
    calls: [...new Set(attr('#run table.calls tr[data-model]', 'data-model'))],
    under_test: [...document.querySelectorAll('#run table.models tr[data-model]')]
      .filter(r => r.cells[1].textContent.includes('under test')).map(r => r.dataset.model),
    fidelity: [...document.querySelectorAll('table.fidelity[data-by="Model under test"] tr')].slice(1)
      .map(r => r.cells[1].textContent),
  };
  document.querySelectorAll('svg.chart[data-chart]').forEach(svg => {
    const c = svg.dataset.chart;
    const labels = [...svg.querySelectorAll('text.model-name')];
    if (labels.length) out['chart ' + c] = labels.map(t => t.dataset.model);
    const legend = [...svg.querySelectorAll('g.legend[data-model]')];
    if (legend.length) out['legend ' + c] = legend.map(g => g.dataset.model);
  });
  document.querySelectorAll('select[data-chart-pick]').forEach(s => {
    out['pick ' + s.dataset.chartPick] = values('select[data-chart-pick="' + s.dataset.chartPick + '"] option');
  });
  document.querySelectorAll('table.route-models').forEach(t => {
    out['route-models ' + t.dataset.scenario] = attr('table.route-models[data-scenario="' + t.dataset.scenario + '"] th[data-model]', 'data-model');
  });
  return out;
})()
"#;

/// Names drawn whole: per view, the names that are not (cut, broken or clipped).
const WHOLE: &str = r#"
(() => {
  const out = [];
  // Rotated headers: the text is the name, on one line, not clipped by its cell.
  for (const th of document.querySelectorAll('table.route-models th[data-model]')) {
    const s = th.querySelector('span'), r = s.getBoundingClientRect(), c = th.getBoundingClientRect();
    if (s.textContent !== th.dataset.model || r.height > c.height + 1 || r.width > 2 * parseFloat(getComputedStyle(s).fontSize) + 2)
      out.push('route-models ' + th.dataset.model + ' ' + JSON.stringify([r.width, r.height, c.height]));
  }
  // Chart labels and legends: the whole name (or, past the longest a chart draws, its start
  // and an ellipsis with the whole name on hover), inside the drawing.
  for (const t of document.querySelectorAll('svg.chart text.model-name, svg.chart g.legend text')) {
    const name = t.closest('[data-model]').dataset.model;
    const shown = [...t.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join('');
    const full = t.querySelector('title')?.textContent;
    const svg = t.closest('svg').getBoundingClientRect(), r = t.getBoundingClientRect();
    const cut = shown.endsWith('…') && name.startsWith(shown.slice(0, -1));
    if ((shown !== name && !cut) || full !== name || r.left < svg.left - 1 || r.right > svg.right + 1)
      out.push('chart ' + name + ' shows ' + JSON.stringify(shown));
  }
  return out;
})()
"#;

#[test]
fn a_sweep_report_fits_the_window_and_lists_models_in_the_leaderboard_order() {
    let browser = Browser::launch();
    for n in [27, 60] {
        let folder = sweep(n);
        let ranked = ranked(folder);
        assert_eq!(ranked.len(), n);
        for width in WIDTHS {
            let tab = open(&browser, folder, width);
            assert_fits(&tab, &format!("{n} models at {width} px"));
            let orders = tab.eval(ORDERS).expect("orders");
            let orders = orders.as_object().expect("an object");
            for view in [
                "leaderboard",
                "scenario_matrix",
                "graph_selector",
                "explorer_filter",
                "calls",
                "under_test",
                "fidelity",
                "chart execution-gap",
                "chart chat-dimensions",
                "legend turn-depth",
                "legend adversarial",
                "pick turn-depth",
                "pick adversarial",
                "route-models telecom_package",
                "route-models airline_refund",
            ] {
                let shown: Vec<String> = serde_json::from_value(orders[view].clone())
                    .unwrap_or_else(|_| {
                        panic!("{n} models: the view {view} is missing: {orders:?}")
                    });
                assert_eq!(
                    shown, ranked,
                    "{n} models: {view} is not in the leaderboard's order"
                );
            }
            let broken = tab.eval(WHOLE).expect("whole names");
            assert_eq!(broken, serde_json::json!([]), "{n} models at {width} px");
            if width == 1366 || n == 60 {
                tab.eval("scrollTo(0, 0)").expect("top");
                tab.screenshot_viewport(
                    &screenshot_dir().join(format!("sweep-{n}-first-screen-{width}.png")),
                )
                .expect("screenshot");
            }
        }
    }
    // The per-route table of 27 models: in its box, scrolled sideways, its routes stay.
    let tab = open(&browser, sweep(27), 1366);
    let stays = tab
        .eval(
            "(async () => { const t = document.querySelector('table.route-models'); \
             const box = t.closest('div.table-box'); box.scrollIntoView(); scrollBy(0, -80); \
             const first = t.rows[1].cells[0], before = first.getBoundingClientRect().left; \
             box.scrollLeft = 400; await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r))); \
             const after = first.getBoundingClientRect().left, cell = t.rows[1].cells[3].getBoundingClientRect().left; \
             return {scrolled: box.scrollLeft, wider: t.scrollWidth > box.clientWidth, same: Math.abs(after - before) < 1, \
             under: document.elementFromPoint(after + 5, first.getBoundingClientRect().top + 5) === first || first.contains(document.elementFromPoint(after + 5, first.getBoundingClientRect().top + 5))}; })()",
        )
        .expect("scroll the box");
    assert_eq!(stays["wider"], true, "{stays}");
    assert!(stays["scrolled"].as_f64() > Some(0.0), "{stays}");
    assert_eq!(stays["same"], true, "the route column stays: {stays}");
    assert_eq!(stays["under"], true, "the route column is on top: {stays}");
    tab.screenshot(
        &screenshot_dir().join("sweep-27-route-models.png"),
        Some("details.route-models"),
    )
    .expect("screenshot");
}

/// The case view as a reader sees it: its overview's rows (models), the dialogues shown side by
/// side, the narrowest text block, and where the view is in the window.
const CASE: &str = r#"
(() => {
  const v = document.getElementById('dialogue-view');
  const rows = [...v.querySelectorAll('table.case-verdicts tr[data-model]')];
  const msgs = [...v.querySelectorAll('table.case-turns .msg')].map(m => m.getBoundingClientRect().width);
  return {
    models: rows.map(r => r.dataset.model),
    verdicts: rows.map(r => [...r.querySelectorAll('td.verdict[data-verdict]')].map(c => c.dataset.verdict).join('')),
    ticked: rows.filter(r => r.querySelector('input').checked).map(r => r.dataset.dialogue),
    shown: [...v.querySelectorAll('table.case-turns th[data-model]')].map(h => h.dataset.model),
    narrowest: Math.min(...msgs),
    top: v.getBoundingClientRect().top,
    window: innerHeight,
  };
})()
"#;

#[test]
fn the_case_view_reads_at_any_number_of_models() {
    let browser = Browser::launch();
    for n in [27, 60] {
        let folder = sweep(n);
        let ranked = ranked(folder);
        let records = common::records_json(folder);
        // A case every model played, opened from a middling model's dialogue: one whose best
        // dialogue is not the leaderboard's first model's (the view picks by the case, not by
        // the leaderboard).
        let case_of = |r: &Value| {
            let m = r["job"]["service_model"].as_str().expect("model");
            let id = r["job"]["dialogue_id"].as_str().expect("id");
            id.replace(&format!("/{m}/"), "/")
        };
        // A dialogue's mean Overall over its counted turns, in hundredths (as the page rounds).
        let overall = |record: &Value| -> Option<f64> {
            let scores: Vec<f64> = record["turns"]
                .as_array()?
                .iter()
                .filter(|t| t["outcome"]["kind"] != "infra_error")
                .filter_map(|t| t["scores"]["overall"].as_f64())
                .collect();
            (!scores.is_empty())
                .then(|| (scores.iter().sum::<f64>() / scores.len() as f64 * 100.0).round())
        };
        let (id, case, of_case) = records
            .iter()
            .filter(|r| r["job"]["service_model"] == ranked[n / 2].as_str())
            .map(|from| {
                let case = case_of(from);
                let of_case: Vec<&Value> = records.iter().filter(|r| case_of(r) == case).collect();
                let id = from["job"]["dialogue_id"].as_str().expect("id").to_string();
                (id, case, of_case)
            })
            .find(|(_, _, of_case)| {
                let first = of_case
                    .iter()
                    .find(|r| r["job"]["service_model"] == ranked[0].as_str())
                    .and_then(|r| overall(r));
                let best = of_case
                    .iter()
                    .filter_map(|r| overall(r))
                    .fold(f64::MIN, f64::max);
                first.is_some_and(|f| f < best)
            })
            .expect("a case whose best is not the leaderboard's first");
        assert_eq!(of_case.len(), n, "every model played case {case}");
        for width in WIDTHS {
            let tab = open(&browser, folder, width);
            let hash = format!("#case={};dialogue:{}", urlencoding(&case), urlencoding(&id));
            tab.eval(&format!("location.hash = {}", js(&hash)))
                .expect("open the case");
            tab.wait_for(
                "Number(document.getElementById('dialogue-view').dataset.shown) > 0",
                READY,
            )
            .expect("the case opens");
            let view = tab.eval(CASE).expect("the case view");
            let models: Vec<String> =
                serde_json::from_value(view["models"].clone()).expect("models");
            assert_eq!(
                models, ranked,
                "{n} models: one row per model, in the leaderboard's order"
            );
            // Each row's verdicts are its record's turns against their references.
            for (row, model) in view["verdicts"]
                .as_array()
                .expect("verdicts")
                .iter()
                .zip(&models)
            {
                let record = of_case
                    .iter()
                    .find(|r| r["job"]["service_model"] == model.as_str())
                    .expect("its record");
                assert_eq!(
                    row.as_str().expect("letters").len(),
                    record["turns"].as_array().expect("turns").len(),
                    "{model}: a verdict per turn"
                );
            }
            // The best and the worst by Overall (the first of the leaderboard's order among
            // equals) and the one it came from, in the leaderboard's order.
            let overall_of = |model: &str| {
                of_case
                    .iter()
                    .find(|r| r["job"]["service_model"] == model)
                    .and_then(|r| overall(r))
            };
            let scored: Vec<(&String, f64)> = ranked
                .iter()
                .filter_map(|m| Some((m, overall_of(m)?)))
                .collect();
            let best = scored
                .iter()
                .fold(scored[0], |a, b| if b.1 > a.1 { *b } else { a });
            let worst = scored
                .iter()
                .fold(scored[0], |a, b| if b.1 < a.1 { *b } else { a });
            let want: Vec<&String> = ranked
                .iter()
                .filter(|m| [best.0, worst.0, &ranked[n / 2]].contains(m))
                .collect();
            let shown: Vec<String> = serde_json::from_value(view["shown"].clone()).expect("shown");
            assert_eq!(
                shown.iter().collect::<Vec<_>>(),
                want,
                "the best, the worst and the one it came from: {view}"
            );
            assert!(
                view["narrowest"].as_f64() >= Some(150.0),
                "{n} models at {width} px: a text block under 150 px: {view}"
            );
            if n == 27 || width == 1024 {
                tab.eval("document.getElementById('dialogue-view').scrollIntoView()")
                    .expect("scroll");
                tab.screenshot_viewport(
                    &screenshot_dir().join(format!("sweep-{n}-case-{width}.png")),
                )
                .expect("screenshot");
            }
            let top = view["top"].as_f64().expect("top");
            assert!(
                (0.0..200.0).contains(&top),
                "the #case= link lands on the case: {view}"
            );
            assert_fits(&tab, &format!("{n} models at {width} px, a case open"));
            // Ticking two more models shows them too, each still readable.
            tab.eval(
                "(() => { const boxes = [...document.querySelectorAll('#dialogue-view table.case-verdicts input')].filter(b => !b.checked); \
                 boxes.slice(0, 2).forEach(b => b.click()); })()",
            )
            .expect("tick");
            tab.wait_for(
                &format!(
                    "document.querySelectorAll('#dialogue-view table.case-turns th[data-model]').length === {}",
                    shown.len() + 2
                ),
                READY,
            )
            .expect("two more transcripts");
            let more = tab.eval(CASE).expect("the case view");
            assert!(more["narrowest"].as_f64() >= Some(150.0), "{more}");
            assert_fits(&tab, &format!("{n} models at {width} px, five transcripts"));
        }
    }
}

/// `text` encoded as JavaScript's `encodeURIComponent` does.
fn urlencoding(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[test]
fn a_line_chart_highlights_one_model_over_the_others() {
    let browser = Browser::launch();
    let folder = sweep(27);
    let ranked = ranked(folder);
    let tab = open(&browser, folder, 1366);
    // 27 lines: eight in colour (the four best and the four worst), the others grey, on the tick
    // (not nudged) and without whiskers.
    let state = |chart: &str| {
        tab.eval(&format!(
            "(svg => ({{on: svg.classList.contains('hl-on'), \
             hl: [...new Set([...svg.querySelectorAll('.hl')].map(e => e.dataset.model))], \
             coloured: [...svg.querySelectorAll('polyline.line:not(.bg)')].map(l => l.dataset.model), \
             greyWhiskers: [...svg.querySelectorAll('.whisker.bg')].filter(w => getComputedStyle(w).display !== 'none').length, \
             xs: [...new Set([...svg.querySelectorAll('path.mark.bg')].filter(m => m.dataset.series.endsWith('T1')) \
               .map(m => Math.round(m.getBBox().x + m.getBBox().width / 2)))], \
             stroke: (l => l && getComputedStyle(l).stroke)(svg.querySelector('polyline.hl'))}}))\
             (document.querySelector('svg.chart.lines[data-chart={}]'))",
            js(chart)
        ))
        .expect("the chart")
    };
    let before = state("turn-depth");
    assert_eq!(before["on"], false);
    assert_eq!(
        before["coloured"].as_array().map(Vec::len),
        Some(8),
        "{before}"
    );
    assert_eq!(before["greyWhiskers"], 0, "{before}");
    assert_eq!(
        before["xs"].as_array().map(Vec::len),
        Some(1),
        "grey points on the tick: {before}"
    );
    // Picking a grey model highlights it alone, in its colour, with its whiskers.
    let picked = &ranked[13];
    tab.eval(&format!(
        "(s => {{ s.value = {}; s.dispatchEvent(new Event('change')); }})(document.querySelector('select[data-chart-pick=\"turn-depth\"]'))",
        js(picked)
    ))
    .expect("pick");
    let after = state("turn-depth");
    assert_eq!(after["on"], true, "{after}");
    assert_eq!(after["hl"], serde_json::json!([picked]), "{after}");
    assert_ne!(
        after["stroke"], "rgb(184, 190, 201)",
        "in its colour: {after}"
    );
    tab.eval(
        "document.querySelector('svg.chart.lines[data-chart=\"turn-depth\"]').scrollIntoView()",
    )
    .expect("scroll");
    tab.screenshot(
        &screenshot_dir().join("sweep-27-turn-depth-picked.png"),
        Some("svg.chart.lines[data-chart=\"turn-depth\"]"),
    )
    .expect("screenshot");
    // Pointing at another model's legend entry highlights that one; leaving the chart goes back
    // to the pick.
    let other = &ranked[20];
    let hovered = tab
        .eval(&format!(
            "(svg => {{ svg.querySelector('g.legend[data-model=' + CSS.escape({}) + '] text').dispatchEvent(new MouseEvent('mouseover', {{bubbles: true}})); \
             const hl = [...new Set([...svg.querySelectorAll('.hl')].map(e => e.dataset.model))]; \
             svg.dispatchEvent(new MouseEvent('mouseleave')); \
             return [hl, [...new Set([...svg.querySelectorAll('.hl')].map(e => e.dataset.model))]]; }})\
             (document.querySelector('svg.chart.lines[data-chart=\"adversarial\"]'))",
            js(other)
        ))
        .expect("hover");
    assert_eq!(
        hovered,
        serde_json::json!([[other], []]),
        "the adversarial chart has no pick"
    );
}

#[test]
fn the_explorer_shows_tags_and_transcripts_within_their_panes() {
    let browser = Browser::launch();
    let folder = sweep(27);
    for width in WIDTHS {
        let tab = open(&browser, folder, width);
        // A dialogue with a format error: its tag is whole beside its (cut) id.
        let tag = tab
            .eval(
                "(() => { const s = document.getElementById('explorer').querySelector('input[data-filter=\"format-error\"]'); \
                 s.checked = true; s.dispatchEvent(new Event('change')); \
                 const td = document.querySelector('#explorer-table tbody tr td.id'); const t = td.querySelector('.tag'); \
                 const a = td.getBoundingClientRect(), b = t.getBoundingClientRect(); \
                 return {text: t.textContent, inside: b.left >= a.left - 1 && b.right <= a.right + 1, width: b.width, scroll: t.scrollWidth - t.clientWidth}; })()",
            )
            .expect("the tag");
        assert_eq!(tag["text"], "format error", "{tag}");
        assert_eq!(tag["inside"], true, "{width} px: {tag}");
        assert_eq!(tag["scroll"], 0, "{width} px: the tag is not cut: {tag}");
        // One transcript per scenario: its tables inside the transcript's pane.
        let ids = tab
            .eval(
                "(() => { const seen = new Set(); return JSON.parse(document.getElementById('explorer-data').textContent).rows \
                 .map(r => r[0]).filter(id => { const s = id.split('/')[0]; if (seen.has(s)) return false; seen.add(s); return true; }); })()",
            )
            .expect("ids");
        for id in ids.as_array().expect("ids") {
            let id = id.as_str().expect("id");
            tab.eval(&format!(
                "location.hash = '#dialogue=' + encodeURIComponent({})",
                js(id)
            ))
            .expect("open");
            tab.wait_for(
                &format!(
                    "(v => v.dataset.dialogue === {} && v.querySelector('.turn table.compare') !== null)(document.getElementById('dialogue-view'))",
                    js(id)
                ),
                READY,
            )
            .expect("the transcript");
            let out = tab
                .eval(
                    "(() => { const v = document.getElementById('dialogue-view'), p = v.getBoundingClientRect(); \
                     return [...v.querySelectorAll('table')].filter(t => t.getBoundingClientRect().right > p.right + 1).map(t => t.className); })()",
                )
                .expect("tables");
            assert_eq!(
                out,
                serde_json::json!([]),
                "{id} at {width} px: tables past the pane"
            );
            assert_fits(&tab, &format!("{id} open at {width} px"));
        }
    }
}
