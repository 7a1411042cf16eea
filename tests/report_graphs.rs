//! The SOP graphs and their routes tables read in a real headless Chromium
//! (tests/common/browser.rs), on the report of the default run (the six bundled scenarios
//! against the bundled simulated agents): what a person sees, read from the rendered page.
//!
//! - every graph (and a synthetic one far wider): no edge label on another or on a box, every
//!   box and label and edge inside the drawing, every text inside its box, no edge through a box
//!   other than its two ends (or through another edge's label);
//! - the colours: the legend (its bins, ticks 0, 50 and 100, "mean Logic", the untested
//!   swatch), every box and every Logic cell of the routes tables the legend's colour of its
//!   value, readable text on it, the same with one model selected and without JavaScript;
//! - the sticky headers: with a routes table's header stuck, it sits below the model bar, which
//!   sits below the page's table of contents, and the first row is what a click there hits.
//!
//! Screenshots of each graph, the legend and a stuck header go to
//! `common::browser::screenshot_dir()`.

mod common;

use common::browser::{Browser, Tab, screenshot_dir};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long the page's scripts may take to get ready.
const READY: Duration = Duration::from_secs(20);

/// The default run (`sage run`, no configuration), made once for the tests of this file.
fn default_run() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = common::fresh_dir("report_graphs_run");
        common::sage_ok(&[
            "run",
            "--run-id",
            "default",
            "--out",
            dir.to_str().expect("utf-8"),
            "--quiet",
        ]);
        dir.join("default")
    })
}

/// The models under test of the default run, from its summary.
fn models(folder: &Path) -> Vec<String> {
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("summary.json")).expect("summary"),
    )
    .expect("json");
    summary["models"]
        .as_array()
        .expect("models")
        .iter()
        .map(|m| m["model"].as_str().expect("a name").to_string())
        .collect()
}

/// Opens the default run's report, scripts on or off, at a desktop size.
fn open<'b>(browser: &'b Browser, js: bool) -> Tab<'b> {
    let tab = browser
        .open(default_run().join("report.html"), js)
        .expect("open");
    tab.set_viewport(1280, 900).expect("viewport");
    if js {
        tab.wait_for(
            "document.querySelector('div#explorer').dataset.ready !== undefined",
            READY,
        )
        .expect("the page is ready");
    }
    tab
}

/// A JavaScript string literal.
fn js(text: &str) -> String {
    serde_json::to_string(text).expect("a string")
}

/// Per graph, what is wrong with its geometry (read from the rendered SVG, in its user units):
/// `{scenario, nodes, labels, edges, problems: [...]}`.
const GEOMETRY: &str = r#"
[...document.querySelectorAll('svg.sop-graph')].map(svg => {
  const problems = [];
  const bbox = e => { const b = e.getBBox(); return {x: b.x, y: b.y, w: b.width, h: b.height}; };
  const grow = (b, d) => ({x: b.x - d, y: b.y - d, w: b.w + 2 * d, h: b.h + 2 * d});
  const overlap = (a, b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
  const inside = (b, o) => b.x >= o.x - 0.5 && b.y >= o.y - 0.5 && b.x + b.w <= o.x + o.w + 0.5 && b.y + b.h <= o.y + o.h + 0.5;
  const within = (p, b) => p.x > b.x && p.x < b.x + b.w && p.y > b.y && p.y < b.y + b.h;
  const fmt = b => `(${b.x.toFixed(1)},${b.y.toFixed(1)} ${b.w.toFixed(1)}x${b.h.toFixed(1)})`;
  const vb = svg.viewBox.baseVal;
  const view = {x: vb.x, y: vb.y, w: vb.width, h: vb.height};
  const nodes = [...svg.querySelectorAll('g.node, g.action, g.start')].map(g => ({
    g, name: g.dataset.stage ?? g.dataset.action ?? 'start', box: bbox(g.querySelector('rect, circle'))}));
  const labels = [...svg.querySelectorAll('g.elabel')].map(g => ({
    g, edge: g.dataset.edge, box: bbox(g.querySelector('rect'))}));
  // Boxes and labels: inside the drawing, apart, their text inside them.
  for (const n of nodes) {
    if (!inside(n.box, view)) problems.push(`node ${n.name} ${fmt(n.box)} outside the viewBox`);
    for (const t of n.g.querySelectorAll('text')) {
      if (!inside(bbox(t), n.box)) problems.push(`text "${t.textContent}" ${fmt(bbox(t))} spills out of ${n.name} ${fmt(n.box)}`);
    }
  }
  labels.forEach((l, i) => {
    const text = l.g.querySelector('text').textContent;
    if (!inside(l.box, view)) problems.push(`label ${text} outside the viewBox`);
    for (const t of l.g.querySelectorAll('text')) {
      if (!inside(bbox(t), l.box)) problems.push(`label text "${t.textContent}" spills out of its box`);
    }
    for (const m of labels.slice(i + 1)) {
      if (overlap(l.box, m.box)) problems.push(`labels "${text}" and "${m.g.textContent}" overlap`);
    }
    for (const n of nodes) {
      if (overlap(l.box, n.box)) problems.push(`label "${text}" overlaps node ${n.name}`);
    }
  });
  nodes.forEach((n, i) => nodes.slice(i + 1).forEach(m => {
    if (overlap(n.box, m.box)) problems.push(`nodes ${n.name} and ${m.name} overlap`);
  }));
  // Edges: sampled every 2 units (500 samples on longer ones), never inside a box other than
  // their ends (the box widened by half the stroke) nor inside another edge's label, always
  // inside the drawing.
  const edges = [...svg.querySelectorAll('path.edge')];
  for (const p of edges) {
    const ends = [p.dataset.from, p.dataset.to];
    const half = parseFloat(getComputedStyle(p).strokeWidth) / 2;
    const len = p.getTotalLength();
    const hits = new Set();
    for (let s = 0; s <= len; s += Math.max(2, len / 500)) {
      const pt = p.getPointAtLength(s);
      if (!within(pt, grow(view, 0.5))) hits.add('outside the viewBox');
      for (const n of nodes) {
        if (!ends.includes(n.name) && within(pt, grow(n.box, half))) hits.add(`through node ${n.name}`);
      }
      for (const l of labels) {
        if (l.edge !== p.dataset.edge && within(pt, grow(l.box, -1))) hits.add(`through the label of edge ${l.edge}`);
      }
    }
    for (const h of hits) problems.push(`edge ${ends.join(' -> ')} (${p.dataset.edge}) runs ${h}`);
  }
  return {scenario: svg.dataset.scenario, nodes: nodes.length, labels: labels.length, edges: edges.length, problems};
})
"#;

#[test]
fn every_graph_reads_without_overlaps_spills_or_edges_under_boxes() {
    let browser = Browser::launch();
    let tab = open(&browser, true);
    let graphs = tab.eval(GEOMETRY).expect("geometry");
    let graphs = graphs.as_array().expect("a list");
    let scenarios: Vec<&str> = graphs
        .iter()
        .map(|g| g["scenario"].as_str().expect("id"))
        .collect();
    assert_eq!(
        scenarios,
        common::SCENARIOS,
        "one graph per bundled scenario"
    );
    for g in graphs {
        assert!(g["nodes"].as_u64() > Some(3), "{g}");
        assert!(g["labels"].as_u64() > Some(1), "{g}");
        assert!(g["edges"].as_u64() > g["labels"].as_u64(), "{g}");
    }
    let problems: Vec<String> = graphs
        .iter()
        .flat_map(|g| {
            let id = g["scenario"].as_str().expect("id").to_string();
            g["problems"]
                .as_array()
                .expect("problems")
                .iter()
                .map(move |p| format!("{id}: {}", p.as_str().expect("text")))
        })
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
    // The legend's texts are inside it.
    let legend = tab
        .eval(
            "(svg => { const vb = svg.viewBox.baseVal; return [...svg.querySelectorAll('text')].filter(t => { \
               const b = t.getBBox(); return b.x < vb.x - 0.5 || b.y < vb.y - 0.5 || b.x + b.width > vb.x + vb.width + 0.5 || b.y + b.height > vb.y + vb.height + 0.5; \
             }).map(t => { const b = t.getBBox(); return `${t.textContent} (${b.x.toFixed(1)},${b.y.toFixed(1)} ${b.width.toFixed(1)}x${b.height.toFixed(1)} in ${vb.width}x${vb.height})`; }); \
             })(document.querySelector('#sop-graphs svg.logic-legend'))",
        )
        .expect("legend");
    assert_eq!(legend, serde_json::json!([]), "legend texts cut off");
    // No style attribute: colours are classes and SVG attributes.
    let styled = tab
        .eval("document.querySelectorAll('#sop-graphs [style]').length")
        .expect("styles");
    assert_eq!(styled, 0);
    // Each graph whole: in a window wide enough for it, its scrolling box let open.
    let mut widths = Vec::new();
    for id in common::SCENARIOS {
        let svg = format!("svg.sop-graph[data-scenario={}]", js(id));
        let width = tab
            .eval(&format!(
                "(s => {{ s.parentElement.style.overflow = 'visible'; return s.width.baseVal.value; }})\
                 (document.querySelector({}))",
                js(&svg)
            ))
            .expect("width");
        let width = width.as_f64().expect("a number");
        widths.push(format!("{id} {width}"));
        tab.set_viewport((width as u32 + 60).max(1280), 900)
            .expect("viewport");
        let shot = screenshot_dir().join(format!("sop-graph-{id}.png"));
        tab.screenshot(&shot, Some(&svg)).expect("screenshot");
    }
    tab.set_viewport(1280, 900).expect("viewport");
    println!("graph widths: {widths:?}");
    tab.screenshot(
        &screenshot_dir().join("sop-graphs-legend.png"),
        Some("#sop-graphs div.graph-model"),
    )
    .expect("screenshot");
}

/// Page helpers for the colour checks: the legend's bins, the colour of a value, contrast.
const SCALE: &str = r#"
const legend = document.querySelector('#sop-graphs div.graph-model svg.logic-legend');
const bins = [...legend.querySelectorAll('rect.bin')].map(r => ({
  from: Number(r.dataset.from), to: Number(r.dataset.to), fill: getComputedStyle(r).fill}));
const colour = l => (bins.find(b => l >= b.from && l < b.to) ?? (l >= 100 ? bins[bins.length - 1] : {})).fill;
const rgb = c => (c.match(/[\d.]+/g) || []).slice(0, 3).map(Number);
const lum = c => { const [r, g, b] = rgb(c).map(v => { v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
const contrast = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
// Per coloured thing of the section, what differs from the scale: model `m` ('' = all).
const check = m => {
  const problems = [];
  const pick = (el, all, by) => {
    if (!m) { const v = el.getAttribute(all); return v === null || v === '' ? null : Number(v); }
    const o = JSON.parse(el.getAttribute(by) || '{}');
    return m in o ? o[m] : null;
  };
  for (const g of document.querySelectorAll('svg.sop-graph g.node, svg.sop-graph g.action')) {
    const l = pick(g, 'data-logic', 'data-logic-by-model');
    const rect = g.querySelector('rect');
    const fill = getComputedStyle(rect).fill;
    const name = g.dataset.stage ?? g.dataset.action;
    if (l === null) {
      if (!g.classList.contains('untested') || getComputedStyle(rect).strokeDasharray === 'none' || bins.some(b => b.fill === fill)) problems.push(`${name}: untested is not dashed without a colour (${fill})`);
      continue;
    }
    if (fill !== colour(l)) problems.push(`${name}: Logic ${l} drawn ${fill}, the legend says ${colour(l)}`);
    for (const t of g.querySelectorAll('text')) {
      const c = contrast(getComputedStyle(t).fill, fill);
      if (c < 4.5) problems.push(`${name}: text "${t.textContent}" contrast ${c.toFixed(2)}`);
    }
  }
  for (const tr of document.querySelectorAll('#sop-graphs table.routes tr[data-route]')) {
    const l = pick(tr, 'data-logic', 'data-logic-by-model');
    const td = tr.querySelector('td[data-col="logic"]');
    const s = getComputedStyle(td);
    if (l === null) {
      if (bins.some(b => b.fill === s.backgroundColor)) problems.push(`route ${tr.dataset.route}: no Logic but coloured`);
    } else if (s.backgroundColor !== colour(l)) {
      problems.push(`route ${tr.dataset.route}: Logic ${l} on ${s.backgroundColor}, the legend says ${colour(l)}`);
    } else if (contrast(s.color, s.backgroundColor) < 4.5) {
      problems.push(`route ${tr.dataset.route}: text contrast ${contrast(s.color, s.backgroundColor)}`);
    }
  }
  for (const td of document.querySelectorAll('#sop-graphs table.route-models td[data-value]:not([data-value=""])')) {
    const s = getComputedStyle(td), l = Number(td.dataset.value);
    const link = getComputedStyle(td.querySelector('a')).color;
    if (s.backgroundColor !== colour(l) || contrast(link, s.backgroundColor) < 4.5) problems.push(`cell ${td.dataset.model} ${l}: ${s.backgroundColor} / ${link}`);
  }
  return problems;
};
"#;

#[test]
fn boxes_and_cells_take_the_legend_colour_of_their_logic_for_every_model() {
    let models = models(default_run());
    let browser = Browser::launch();
    let tab = open(&browser, true);
    let legend = tab
        .eval(&format!(
            "(() => {{ {SCALE} \
             const swatch = getComputedStyle(legend.querySelector('rect.untested')); \
             return {{bins: bins.map(b => [b.from, b.to]), fills: new Set(bins.map(b => b.fill)).size, \
               ticks: [...legend.querySelectorAll('text[data-tick]')].map(t => t.textContent), \
               text: legend.textContent, swatch: [swatch.fill, swatch.strokeDasharray], \
               tested: document.querySelectorAll('svg.sop-graph g.node[data-logic], svg.sop-graph g.action[data-logic]').length}}; }})()"
        ))
        .expect("legend");
    let bins: Vec<Value> = (0..10)
        .map(|i| serde_json::json!([i * 10, (i + 1) * 10]))
        .collect();
    assert_eq!(legend["bins"], Value::Array(bins), "{legend}");
    assert_eq!(legend["fills"], 10, "ten distinct colours: {legend}");
    assert_eq!(legend["ticks"], serde_json::json!(["0", "50", "100"]));
    let text = legend["text"].as_str().expect("text");
    assert!(
        text.contains("mean Logic") && text.contains("untested"),
        "{text}"
    );
    assert_eq!(
        legend["swatch"][0], "none",
        "the untested swatch has no fill"
    );
    assert_ne!(legend["swatch"][1], "none", "the untested swatch is dashed");
    assert!(legend["tested"].as_u64() > Some(20), "{legend}");

    // All models, then each model through the selector, then all models again.
    let problems = tab
        .eval(&format!("(() => {{ {SCALE} return check(''); }})()"))
        .expect("check");
    assert_eq!(problems, serde_json::json!([]), "all models");
    assert!(models.len() >= 2, "{models:?}");
    for m in models.iter().map(String::as_str).chain([""]) {
        let problems = tab
            .eval(&format!(
                "(() => {{ {SCALE} const s = document.querySelector('select[data-graph-model]'); \
                 s.value = {m}; s.dispatchEvent(new Event('change', {{bubbles: true}})); \
                 return check({m}); }})()",
                m = js(m)
            ))
            .expect("check");
        assert_eq!(problems, serde_json::json!([]), "model {m:?}");
    }
    let styled = tab
        .eval("document.querySelectorAll('#sop-graphs [style]').length")
        .expect("styles");
    assert_eq!(styled, 0, "the model view sets no style attribute");
    // The link to one model's view selects it and colours by it.
    let weak = &models[models.len() - 1];
    let link = format!(
        "file://{}#graph-model={}",
        default_run()
            .join("report.html")
            .canonicalize()
            .expect("path")
            .display(),
        weak.replace(' ', "%20")
    );
    let linked = browser.open(&link, true).expect("open the link");
    linked
        .wait_for(
            &format!(
                "document.getElementById('sop-graphs').dataset.modelView === {}",
                js(weak)
            ),
            READY,
        )
        .expect("the link selects the model");
    let problems = linked
        .eval(&format!(
            "(() => {{ {SCALE} return check({}); }})()",
            js(weak)
        ))
        .expect("check");
    assert_eq!(problems, serde_json::json!([]), "linked to {weak}");

    // Without JavaScript the page has the same colours.
    let off = open(&browser, false);
    let problems = off
        .eval(&format!("(() => {{ {SCALE} return check(''); }})()"))
        .expect("check");
    assert_eq!(problems, serde_json::json!([]), "without JavaScript");
}

/// Per routes table of the section (scrolled so that its header is stuck 4 px past where it
/// would sit): the rectangles of the page's sticky bar, the model bar and the header, the
/// header's `top` (where it sticks), and whether the centre of each cell of the first row hits
/// that cell. The per-model tables scroll in boxes of their own (their headers stick inside
/// them): each box scrolled to just below the model bar, the same rectangles and hits.
const STUCK: &str = r#"
(async () => {
  const toc = document.getElementById('toc');
  const bar = document.querySelector('#sop-graphs div.graph-model');
  const frame = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const out = [];
  for (const t of document.querySelectorAll('#sop-graphs table.routes, #sop-graphs table.route-models')) {
    const th = t.querySelector('th');
    const boxed = t.closest('div.table-box');
    const stick = boxed ? bar.getBoundingClientRect().bottom + 4 : parseFloat(getComputedStyle(th).top);
    scrollTo(0, (boxed || t).getBoundingClientRect().top + scrollY - stick + (boxed ? 0 : 4));
    await frame();
    const rect = e => { const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; };
    const row = t.rows[1];
    const hits = [...row.cells].map(c => {
      const r = c.getBoundingClientRect();
      const e = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
      return c.contains(e);
    });
    out.push({table: t.className, scenario: t.dataset.scenario, toc: rect(toc), bar: rect(bar),
      header: rect(th), stick, table_top: t.getBoundingClientRect().top, hits, boxed: !!boxed});
  }
  return out;
})()
"#;

#[test]
fn the_first_row_of_every_routes_table_shows_and_clicks_under_the_stuck_headers() {
    let browser = Browser::launch();
    let tab = open(&browser, true);
    let tables = tab.eval(STUCK).expect("stuck headers");
    let tables = tables.as_array().expect("a list");
    assert_eq!(
        tables.len(),
        12,
        "a routes and a per-model table per scenario"
    );
    let n = |v: &Value| v.as_f64().expect("a number");
    for t in tables {
        if t["boxed"] == false {
            // The header is stuck to the window where its style says (the table went on up
            // under it)...
            assert!((n(&t["header"]["top"]) - n(&t["stick"])).abs() < 0.5, "{t}");
            assert!(n(&t["table_top"]) < n(&t["header"]["top"]) - 3.0, "{t}");
        } else {
            // ...or heads its box, right below the model bar.
            assert!((n(&t["header"]["top"]) - n(&t["stick"])).abs() < 2.0, "{t}");
        }
        assert_eq!(
            t["boxed"],
            t["table"] == "data route-models",
            "the per-model tables, only they, are boxed: {t}"
        );
        // ...below the model bar, itself below the page's bar: nothing covers anything.
        assert!(n(&t["bar"]["top"]) >= n(&t["toc"]["bottom"]) - 0.5, "{t}");
        assert!(
            n(&t["header"]["top"]) >= n(&t["bar"]["bottom"]) - 0.5,
            "{t}"
        );
        // The first row is what a click at its cells' centres hits.
        let hits = t["hits"].as_array().expect("hits");
        assert!(!hits.is_empty() && hits.iter().all(|h| h == true), "{t}");
    }
    // A look at a stuck header: the viewport, through an element that covers it.
    tab.eval(
        "(() => { const t = document.querySelector('#sop-graphs table.route-models'); \
         const stick = parseFloat(getComputedStyle(t.querySelector('th')).top); \
         scrollTo(0, t.getBoundingClientRect().top + scrollY - stick + 4); \
         const v = document.createElement('div'); v.id = 'viewport-probe'; \
         Object.assign(v.style, {position: 'fixed', inset: '0', pointerEvents: 'none'}); \
         document.body.appendChild(v); })()",
    )
    .expect("scroll");
    tab.screenshot(
        &screenshot_dir().join("sop-graphs-stuck-header.png"),
        Some("#viewport-probe"),
    )
    .expect("screenshot");

    // Clicking the first row's first value opens its dialogues in the explorer.
    let cell = tab
        .eval(
            "(td => ({reached: Number(td.dataset.reached), href: td.querySelector('a').getAttribute('href')}))\
             (document.querySelector('#sop-graphs table.route-models').rows[1].querySelector('td[data-reached]:not([data-value=\"\"])'))",
        )
        .expect("the first row's cell");
    let href = cell["href"].as_str().expect("a link");
    tab.click(&format!(
        "#sop-graphs table.route-models a[href={}]",
        js(href)
    ))
    .expect("click");
    tab.wait_for(
        &format!(
            "location.hash === {} && Number(document.getElementById('explorer-count').textContent) === {}",
            js(href),
            cell["reached"]
        ),
        READY,
    )
    .expect("the explorer lists the dialogues of the first row's cell");
}

/// A synthetic SOP far wider than the bundled ones (56 stages and actions, 224 edges, rules on
/// six fields at once): laid out, drawn and read in the browser with the same checks.
#[test]
fn a_wide_sop_reads_as_well() {
    let text = common::wide_scenario(24, 6);
    let sop = sage::sop::from_yaml(&text, "wide.yaml").expect("compiles");
    let started = std::time::Instant::now();
    let svg = sage::report::graph::svg(&sop, &Default::default(), 0).expect("laid out");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "{took:?}");
    let page = sage::report::page::Page {
        title: "wide".into(),
        sections: vec![sage::report::page::Section::new(
            "sop-graphs",
            "SOP graphs",
            svg,
        )],
        styles: vec![sage::report::graph::css()],
        scripts: vec![],
    };
    let dir = tempfile::tempdir().expect("dir");
    let file = dir.path().join("wide.html");
    std::fs::write(&file, page.render()).expect("write");
    let browser = Browser::launch();
    let tab = browser.open(&file, false).expect("open");
    // A window as wide as the drawing, to see it whole.
    let width = tab
        .eval("document.querySelector('svg.sop-graph').width.baseVal.value")
        .expect("width");
    tab.set_viewport(width.as_f64().expect("a number") as u32 + 100, 900)
        .expect("viewport");
    let graphs = tab.eval(GEOMETRY).expect("geometry");
    let g = &graphs[0];
    assert_eq!(g["edges"], 224, "{g}");
    assert_eq!(g["problems"], serde_json::json!([]), "{g:#}");
    tab.screenshot(
        &screenshot_dir().join("sop-graph-wide.png"),
        Some("svg.sop-graph"),
    )
    .expect("screenshot");
}

/// A route's "every model" link opens the case of its worst dialogue (the lowest mean Logic of
/// a dialogue's scored turns on the route, ties by case id), computed here from the records,
/// with every model's dialogue of that case side by side.
#[test]
fn a_routes_worst_case_opens_across_every_model() {
    use sage::protocol::{DialogueRecord, ServiceOutcome};
    let folder = default_run();
    // Per (scenario, route key), the worst (mean Logic, case) from dialogues.jsonl.
    let mut worst: std::collections::BTreeMap<(String, String), (f64, String)> = Default::default();
    let text = std::fs::read_to_string(folder.join("dialogues.jsonl")).expect("records");
    for line in text.lines() {
        let record: DialogueRecord = serde_json::from_str(line).expect("a record");
        let job = &record.job;
        let mut on: std::collections::BTreeMap<String, (f64, u32)> = Default::default();
        for t in &record.turns {
            if let (Some(s), Some(Ok(route)), false) = (
                t.scores,
                &t.reference,
                matches!(t.outcome, ServiceOutcome::InfraError { .. }),
            ) {
                let e = on
                    .entry(sage::scoring::summary::route_key(route))
                    .or_default();
                e.0 += s.logic;
                e.1 += 1;
            }
        }
        let case = sage::report::explorer::case_id(&job.dialogue_id, &job.service_model);
        for (key, (sum, n)) in on {
            let mean = sum / f64::from(n);
            let slot = worst
                .entry((job.scenario.clone(), key))
                .or_insert((f64::INFINITY, String::new()));
            if (mean, &case) < (slot.0, &slot.1) {
                *slot = (mean, case.clone());
            }
        }
    }
    let browser = Browser::launch();
    let tab = open(&browser, true);
    let links = tab
        .eval(
            "[...document.querySelectorAll('table.routes tr[data-route]')].map(r => [r.closest('table').dataset.scenario, \
             r.dataset.route, (r.querySelector('td[data-col=case] a.case') || {getAttribute: () => null}).getAttribute('href')])",
        )
        .expect("links");
    let links: Vec<(String, String, Option<String>)> = serde_json::from_value(links).expect("rows");
    assert!(links.len() > 30, "every scenario's routes: {}", links.len());
    for (scenario, route, href) in &links {
        let want = worst
            .get(&(scenario.clone(), route.clone()))
            .map(|(_, case)| sage::report::explorer::case_anchor(case));
        assert_eq!(href, &want, "{scenario} {route}");
    }
    // Following one opens that case with every model's dialogue in its columns.
    let (scenario, route, href) = links
        .iter()
        .find(|(_, _, h)| h.is_some())
        .expect("a reached route");
    let case = &worst[&(scenario.clone(), route.clone())].1;
    tab.eval(&format!(
        "document.querySelector('table.routes[data-scenario=' + {} + '] tr[data-route=' + {} + '] td[data-col=case] a').click()",
        js(&js(scenario)),
        js(&js(route))
    ))
    .expect("follow");
    tab.wait_for(
        &format!(
            "(v => v && v.dataset.case === {} && v.querySelectorAll('table.case-turns th[data-model]').length > 0)(document.getElementById('dialogue-view'))",
            js(case)
        ),
        READY,
    )
    .unwrap_or_else(|e| panic!("{href:?} opens its case: {e}"));
    let rows = tab
        .eval("[...document.querySelectorAll('#dialogue-view table.case-verdicts tr[data-model]')].map(t => t.dataset.model)")
        .expect("models");
    let mut rows: Vec<String> = serde_json::from_value(rows).expect("names");
    rows.sort();
    let mut want = models(folder);
    want.sort();
    assert_eq!(
        rows, want,
        "every model of the run plays the case, a row each"
    );
}
