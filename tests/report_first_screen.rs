//! The SAGE report's first screen and charts, read from the rendered page in headless Chromium
//! (tests/common/browser.rs) on the default run (`sage run`): the leaderboard comes first and
//! shows every model's OA without scrolling, ranked by OA with each column's best marked, the
//! model x scenario matrix equals summary.json, a legend spells out every abbreviation, every
//! chart has axis titles, every turn-depth and adversarial point carries its interval and n
//! (drawn as a whisker of the right length), and a model has one colour everywhere.
//! Screenshots of the first screen (1280 and 1024 wide) and of the charts go to
//! `common::browser::screenshot_dir()`.

mod common;

use common::browser::{Browser, Tab, screenshot_dir};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A JavaScript string literal of `text`.
fn js(text: &str) -> String {
    serde_json::to_string(text).expect("a string")
}

/// The number in `value` (a JSON number).
fn number(value: &Value) -> f64 {
    value
        .as_f64()
        .unwrap_or_else(|| panic!("a number: {value}"))
}

/// The default run (`sage run`, no configuration), made once for the tests of this file: its
/// folder.
fn default_run() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        // Under cargo's temporary folder for integration tests: a static is never dropped, so a
        // TempDir here would be left behind.
        let dir = common::fresh_dir("report_first_screen");
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

/// The default run's summary.json.
fn summary() -> Value {
    let text = std::fs::read_to_string(default_run().join("summary.json")).expect("summary.json");
    serde_json::from_str(&text).expect("json")
}

/// summary.json's models.
fn models(summary: &Value) -> &Vec<Value> {
    summary["models"].as_array().expect("models")
}

/// A metric's mean (`{"mean": ..}`), `None` when null.
fn mean(metric: &Value) -> Option<f64> {
    metric.get("mean").and_then(Value::as_f64)
}

/// Which of `values` are a column's best (the test's own statement of docs/report.md's rule):
/// the highest (`higher`) or lowest, all that tie; none with fewer than two values or when all
/// are equal.
fn best(values: &[Option<f64>], higher: bool) -> Vec<bool> {
    let valued: Vec<f64> = values.iter().flatten().copied().collect();
    let top = if higher {
        valued.iter().copied().fold(f64::NEG_INFINITY, f64::max)
    } else {
        valued.iter().copied().fold(f64::INFINITY, f64::min)
    };
    let any_other = valued.iter().any(|v| *v != top);
    values
        .iter()
        .map(|v| valued.len() >= 2 && any_other && *v == Some(top))
        .collect()
}

/// The report opened with scripts on, at the top.
fn open(browser: &Browser) -> Tab<'_> {
    let tab = browser
        .open(default_run().join("report.html"), true)
        .expect("open");
    tab.wait_for(
        "document.querySelectorAll('#explorer tr[data-dialogue]').length > 0",
        std::time::Duration::from_secs(20),
    )
    .expect("the page's scripts ran");
    tab
}

/// A screenshot of what the viewport (`width` x `height`) shows at the top of the page.
fn first_screen_shot(tab: &Tab<'_>, width: u32, height: u32) -> PathBuf {
    tab.eval(&format!(
        "(() => {{ const d = document.createElement('div'); d.id = 'first-screen-frame'; \
         d.style.position = 'absolute'; d.style.left = '0'; d.style.top = '0'; \
         d.style.width = '{width}px'; d.style.height = '{height}px'; d.style.pointerEvents = 'none'; \
         document.body.appendChild(d); }})()"
    ))
    .expect("frame");
    let path = screenshot_dir().join(format!("sage-first-screen-{width}.png"));
    tab.screenshot(&path, Some("#first-screen-frame"))
        .expect("screenshot");
    tab.eval("document.getElementById('first-screen-frame').remove()")
        .expect("remove");
    path
}

#[test]
fn the_leaderboard_is_the_first_screen() {
    let summary = summary();
    let browser = Browser::launch();
    let tab = open(&browser);
    // The first section under the table of contents is the leaderboard; the run comes next.
    let order = tab
        .eval("[...document.querySelectorAll('main > section[data-section]')].map(s => s.id)")
        .expect("sections");
    assert_eq!(
        order,
        serde_json::json!([
            "leaderboard",
            "run",
            "charts",
            "sop-graphs",
            "judges",
            "explorer"
        ])
    );
    let toc = tab
        .eval("[...document.querySelectorAll('nav#toc a')].map(a => a.getAttribute('href'))")
        .expect("toc");
    assert_eq!(toc[0], "#leaderboard");
    assert!(
        toc.as_array().expect("links").iter().any(|l| l == "#run"),
        "the run is in the table of contents: {toc}"
    );
    // At 1280x800 and 1024x768, every model's OA cell is in the viewport without scrolling.
    for (width, height) in [(1280, 800), (1024, 768)] {
        tab.set_viewport(width, height).expect("viewport");
        tab.eval("window.scrollTo(0, 0)").expect("scroll");
        let cells = tab
            .eval(
                "[...document.querySelectorAll('#leaderboard-table tr[data-model]')].map(r => { \
                 const b = r.querySelector('td[data-metric=overall]').getBoundingClientRect(); \
                 return {model: r.dataset.model, top: b.top, bottom: b.bottom, left: b.left, right: b.right, \
                 w: innerWidth, h: innerHeight, scrolled: scrollY}; })",
            )
            .expect("cells");
        let cells = cells.as_array().expect("a list");
        assert_eq!(cells.len(), models(&summary).len());
        for c in cells {
            assert_eq!(number(&c["w"]), f64::from(width), "{c}");
            assert_eq!(number(&c["scrolled"]), 0.0);
            assert!(
                number(&c["top"]) >= 0.0
                    && number(&c["bottom"]) <= number(&c["h"])
                    && number(&c["left"]) >= 0.0
                    && number(&c["right"]) <= number(&c["w"]),
                "{width}x{height}: the OA of {} is off screen: {c}",
                c["model"]
            );
        }
        first_screen_shot(&tab, width, height);
    }
}

#[test]
fn the_leaderboard_ranks_by_oa_and_marks_each_columns_best() {
    let summary = summary();
    let browser = Browser::launch();
    let tab = open(&browser);
    let rows = tab
        .eval("[...document.querySelectorAll('#leaderboard-table tbody tr[data-model]')].map(r => r.dataset.model)")
        .expect("rows");
    let ranked = common::ranked(&summary);
    assert_eq!(rows, serde_json::json!(ranked), "rows by OA, best first");
    assert_eq!(
        tab.eval("document.querySelector('#leaderboard-table th[data-sort=overall]').getAttribute('aria-sort')")
            .expect("aria-sort"),
        "descending"
    );
    // Each row's numbers equal summary.json.
    let by_name = |name: &str| {
        models(&summary)
            .iter()
            .find(|m| m["model"] == name)
            .expect("a model")
            .clone()
    };
    let columns = [
        ("overall", Some(true)),
        ("logic", Some(true)),
        ("chat", Some(true)),
        ("acc_cls", Some(true)),
        ("sim_path", Some(true)),
        ("acc_action", Some(true)),
        // A small execution gap is no merit by itself (a weak classifier has one too).
        ("execution_gap", None),
        ("format_error_rate", Some(false)),
        ("chat_length", None),
    ];
    let cells = tab
        .eval(
            "[...document.querySelectorAll('#leaderboard-table tbody td[data-metric]')].map(td => ({ \
             model: td.closest('tr').dataset.model, metric: td.dataset.metric, value: td.dataset.value, \
             best: td.classList.contains('best'), star: (td.querySelector('.best-mark') || {}).textContent || null, \
             starTitle: td.querySelector('.best-mark') && td.querySelector('.best-mark').getAttribute('aria-label'), \
             weight: Number(getComputedStyle(td).fontWeight) }))",
        )
        .expect("cells");
    let cells = cells.as_array().expect("a list");
    let cell = |model: &str, metric: &str| -> &Value {
        cells
            .iter()
            .find(|c| c["model"] == model && c["metric"] == metric)
            .unwrap_or_else(|| panic!("no cell {model} {metric}"))
    };
    for (key, higher) in columns {
        let values: Vec<Option<f64>> = ranked
            .iter()
            .map(|m| mean(&by_name(m)["all"][key]))
            .collect();
        let want = match higher {
            Some(higher) => best(&values, higher),
            None => vec![false; values.len()],
        };
        for ((model, value), best) in ranked.iter().zip(&values).zip(&want) {
            let c = cell(model, key);
            let shown: Option<f64> = c["value"].as_str().and_then(|v| v.parse().ok());
            assert_eq!(shown, *value, "{model} {key}");
            assert_eq!(c["best"], *best, "{model} {key}: best mark {c}");
            if *best {
                assert_eq!(c["star"], "★", "{c}");
                assert_eq!(c["starTitle"], "best of the column", "{c}");
                assert!(number(&c["weight"]) >= 600.0, "a best cell is bold: {c}");
            } else {
                assert!(c["star"].is_null(), "{c}");
                assert!(number(&c["weight"]) < 600.0, "{c}");
            }
        }
    }
    // Each model's OA noise floor (summary.json `models[].noise_floor`), never marked best.
    for model in &ranked {
        let c = cell(model, "noise_floor");
        let shown: Option<f64> = c["value"].as_str().and_then(|v| v.parse().ok());
        let want = by_name(model)["noise_floor"].as_f64();
        assert!(want.is_some_and(|x| x > 0.0), "{model}: a noise floor");
        assert_eq!(shown, want, "{model} noise floor");
        assert_eq!(c["best"], false, "{c}");
    }
    // The default run has a best in each of OA's columns: the marks are not vacuous.
    assert!(
        cells
            .iter()
            .any(|c| c["metric"] == "overall" && c["best"] == true)
    );
    assert!(
        cells
            .iter()
            .any(|c| c["metric"] == "format_error_rate" && c["best"] == true)
    );
    // Sorting still works: Logic, best first.
    tab.click("#leaderboard-table th[data-sort=logic]")
        .expect("click");
    let order = tab
        .eval("[...document.querySelectorAll('#leaderboard-table tbody td[data-metric=logic]')].map(td => Number(td.dataset.value))")
        .expect("order");
    let order: Vec<f64> = serde_json::from_value(order).expect("numbers");
    let mut sorted = order.clone();
    sorted.sort_by(|a, b| b.total_cmp(a));
    assert_eq!(order, sorted, "Logic, descending");
}

#[test]
fn the_scenario_matrix_equals_the_summary_and_the_legend_spells_out_every_heading() {
    let summary = summary();
    let browser = Browser::launch();
    let tab = open(&browser);
    let ranked = common::ranked(&summary);
    let rows = tab
        .eval("[...document.querySelectorAll('#scenario-matrix tbody tr[data-model]')].map(r => r.dataset.model)")
        .expect("rows");
    assert_eq!(rows, serde_json::json!(ranked), "the leaderboard's order");
    let headings = tab
        .eval(
            "[...document.querySelectorAll('#scenario-matrix th[data-scenario]')].map(th => ({ \
             id: th.dataset.scenario, abbr: th.querySelector('abbr').textContent, \
             name: th.querySelector('.scenario-name').textContent }))",
        )
        .expect("headings");
    let headings = headings.as_array().expect("a list");
    // The paper's six scenarios, in its column order, each with its abbreviation and name.
    let want = [
        ("ecommerce_refund", "ER", "E-commerce Refund"),
        ("telecom_package", "TP", "Telecom Package"),
        ("property_service", "PS", "Property Service"),
        ("logistics_delivery", "LD", "Logistics Delivery"),
        ("airline_refund", "AR", "Airline Refund"),
        ("online_education", "OE", "Online Education"),
    ];
    assert_eq!(headings.len(), want.len(), "{headings:?}");
    for (h, (id, abbr, name)) in headings.iter().zip(want) {
        assert_eq!(h["id"], id);
        assert_eq!(h["abbr"], abbr);
        assert_eq!(h["name"], name);
    }
    let by_name = |name: &str| {
        models(&summary)
            .iter()
            .find(|m| m["model"] == name)
            .expect("a model")
            .clone()
    };
    for (id, _, _) in want {
        let values: Vec<Option<f64>> = ranked
            .iter()
            .map(|m| mean(&by_name(m)["by_scenario"][id]["overall"]))
            .collect();
        let marks = best(&values, true);
        for ((model, value), mark) in ranked.iter().zip(&values).zip(marks) {
            let c = tab
                .eval(&format!(
                    "(td => ({{value: td.dataset.value, title: td.title, best: td.classList.contains('best'), \
                     text: td.textContent}}))(document.querySelector('#scenario-matrix tr[data-model=' + {} + '] td[data-scenario={id}]'))",
                    js(&js(model))
                ))
                .expect("a cell");
            let shown: Option<f64> = c["value"].as_str().and_then(|v| v.parse().ok());
            assert_eq!(shown, *value, "{model} {id}");
            assert_eq!(c["best"], mark, "{model} {id}: {c}");
            let stats = &by_name(model)["by_scenario"][id];
            let metric = &stats["overall"];
            let title = c["title"].as_str().expect("a title");
            for part in [
                format!("n = {} scored turns", metric["n"]),
                format!("{} dialogues", stats["dialogues"]),
                "95% interval".to_string(),
            ] {
                assert!(title.contains(&part), "{model} {id}: {title} lacks {part}");
            }
        }
    }

    // The legend names every heading of both tables but Model and Dialogues, and each
    // scenario abbreviation with its full name.
    let legend = tab
        .eval(
            "Object.fromEntries([...document.querySelectorAll('dl#leaderboard-legend dt')] \
             .map(dt => [dt.textContent, dt.nextElementSibling.textContent]))",
        )
        .expect("legend");
    let headings = tab
        .eval(
            "[...document.querySelectorAll('#leaderboard-table thead th')].map(th => th.textContent) \
             .concat([...document.querySelectorAll('#scenario-matrix thead th abbr')].map(a => a.textContent))",
        )
        .expect("headings");
    for h in headings.as_array().expect("a list") {
        let h = h.as_str().expect("text");
        if h == "Model" || h == "Dialogues" {
            continue;
        }
        let said = legend[h].as_str().unwrap_or_default();
        assert!(
            said.len() > 10,
            "the legend does not spell out {h}: {legend}"
        );
    }
    for (id, abbr, name) in want {
        let said = legend[abbr].as_str().unwrap_or_default();
        assert!(said.contains(name) && said.contains(id), "{abbr}: {said}");
    }
    assert!(
        legend["OA"]
            .as_str()
            .is_some_and(|s| s.contains("0.8 Logic + 0.2 Chat"))
    );
    // And it is visible (not folded away).
    let shown = tab
        .eval("document.getElementById('leaderboard-legend').getBoundingClientRect().height")
        .expect("height");
    assert!(number(&shown) > 20.0);
}

/// Per chart, its marks as the page shows them.
const MARKS: &str = "Object.fromEntries([...document.querySelectorAll('svg.chart[data-chart]')].map(svg => \
    [svg.dataset.chart, [...svg.querySelectorAll('.mark')].map(m => { \
      const w = [...svg.querySelectorAll('.whisker')].find(w => w.dataset.model === m.dataset.model && w.dataset.series === m.dataset.series); \
      const wb = w && w.getBoundingClientRect(); const s = getComputedStyle(m); \
      return {model: m.dataset.model, series: m.dataset.series, value: Number(m.dataset.value), \
        n: m.dataset.n === undefined ? null : Number(m.dataset.n), \
        low: m.dataset.ciLow === undefined ? null : Number(m.dataset.ciLow), \
        high: m.dataset.ciHigh === undefined ? null : Number(m.dataset.ciHigh), \
        title: m.querySelector('title').textContent, few: m.classList.contains('few'), \
        fill: s.fill, stroke: s.stroke, tag: m.tagName, \
        whisker: wb ? {top: wb.top, bottom: wb.bottom, left: wb.left, right: wb.right} : null, \
        zero: svg.querySelector('line.grid[data-tick=\"0\"]').getBoundingClientRect().top, \
        hundred: (svg.querySelector('line.grid[data-tick=\"100\"]') || svg.querySelector('line.grid[data-tick=\"0\"]')).getBoundingClientRect().top}; })]))";

#[test]
fn every_chart_has_axis_titles_and_every_point_its_interval_and_n() {
    let summary = summary();
    let browser = Browser::launch();
    let tab = open(&browser);
    tab.set_viewport(1280, 900).expect("viewport");
    let titles = tab
        .eval(
            "[...document.querySelectorAll('svg.chart[data-chart]')].map(svg => ({chart: svg.dataset.chart, \
             x: [...svg.querySelectorAll('text.axis-title[data-axis=x]')].map(t => [t.textContent, t.getBoundingClientRect().width]), \
             y: [...svg.querySelectorAll('text.axis-title[data-axis=y]')].map(t => [t.textContent, t.getBoundingClientRect().height])}))",
        )
        .expect("titles");
    let titles = titles.as_array().expect("a list");
    assert_eq!(titles.len(), 5, "{titles:?}");
    for t in titles {
        for axis in ["x", "y"] {
            let list = t[axis].as_array().expect("a list");
            assert_eq!(list.len(), 1, "{t}");
            assert!(
                list[0][0].as_str().is_some_and(|s| !s.is_empty()) && number(&list[0][1]) > 5.0,
                "{}: no visible {axis} axis title: {t}",
                t["chart"]
            );
        }
    }
    let title = |chart: &str, axis: &str| -> String {
        titles
            .iter()
            .find(|t| t["chart"] == chart)
            .expect("a chart")[axis][0][0]
            .as_str()
            .expect("text")
            .to_string()
    };
    assert_eq!(title("turn-depth", "y"), "OA, 0-100");
    assert!(title("turn-depth", "x").starts_with("turn"));
    assert!(title("adversarial", "x").starts_with("adversarial level"));
    assert!(title("format-errors", "x").contains('%'));

    let marks = tab.eval(MARKS).expect("marks");
    let mut few = 0;
    for (chart, group, panels, labels) in [
        (
            "turn-depth",
            "by_turn",
            &[("OA", "overall")][..],
            &[
                ("t1", "T1"),
                ("t5", "T5"),
                ("t10", "T10"),
                ("t15", "T15"),
                ("final", "Final"),
            ][..],
        ),
        (
            "adversarial",
            "by_adversarial",
            &[("OA", "overall"), ("Logic", "logic"), ("Chat", "chat")][..],
            &[("zero", "zero"), ("weak", "weak"), ("strong", "strong")][..],
        ),
    ] {
        let list = marks[chart].as_array().expect("marks");
        let mut seen = 0;
        for model in models(&summary) {
            let name = model["model"].as_str().expect("name");
            for (panel, key) in panels {
                for (k, label) in labels {
                    let stats = &model[group][*k];
                    if stats.is_null() {
                        continue;
                    }
                    let metric = &stats[*key];
                    let series = format!("{panel} {label}");
                    let m = list
                        .iter()
                        .find(|m| m["model"] == name && m["series"] == series.as_str())
                        .unwrap_or_else(|| panic!("{chart}: no point {name} {series}"));
                    seen += 1;
                    let close = |a: &Value, b: &Value| (number(a) - number(b)).abs() < 1e-9;
                    assert!(close(&m["value"], &metric["mean"]), "{name} {series}: {m}");
                    assert!(close(&m["low"], &metric["ci_low"]), "{name} {series}: {m}");
                    assert!(
                        close(&m["high"], &metric["ci_high"]),
                        "{name} {series}: {m}"
                    );
                    assert_eq!(m["n"], metric["n"], "{name} {series}");
                    let n = metric["n"].as_u64().expect("n");
                    let tooltip = m["title"].as_str().expect("title");
                    assert!(
                        tooltip.contains(&format!("n = {n} scored turns"))
                            && tooltip.contains("95% interval"),
                        "{tooltip}"
                    );
                    // The whisker spans the interval on the chart's own scale.
                    let w = &m["whisker"];
                    assert!(!w.is_null(), "{name} {series}: no whisker");
                    let per_point = (number(&m["zero"]) - number(&m["hundred"])) / 100.0;
                    let want = (number(&metric["ci_high"]) - number(&metric["ci_low"])) * per_point;
                    let drawn = number(&w["bottom"]) - number(&w["top"]);
                    assert!(
                        (drawn - want).abs() < 1.0,
                        "{name} {series}: whisker {drawn} px, interval {want} px"
                    );
                    let hi_y = number(&m["zero"]) - number(&metric["ci_high"]) * per_point;
                    assert!((number(&w["top"]) - hi_y).abs() < 1.0, "{name} {series}");
                    // A point from few turns is hollow: its fill is the page's background.
                    let hollow = n < 30;
                    assert_eq!(m["few"], hollow, "{name} {series} n = {n}");
                    if hollow {
                        few += 1;
                        assert_eq!(m["fill"], "rgb(255, 255, 255)", "{m}");
                    } else {
                        assert_eq!(m["fill"], m["stroke"], "{m}");
                    }
                }
            }
        }
        assert_eq!(
            seen,
            list.len(),
            "{chart}: a point the summary does not have"
        );
        assert!(seen > 0);
    }
    // The default run's late turns come from few dialogues: some point is hollow.
    assert!(few > 0, "no point from fewer than 30 turns");

    std::fs::create_dir_all(screenshot_dir()).expect("folder");
    for chart in [
        "turn-depth",
        "adversarial",
        "execution-gap",
        "format-errors",
    ] {
        tab.screenshot(
            &screenshot_dir().join(format!("sage-chart-{chart}.png")),
            Some(&format!("svg.chart[data-chart={chart}]")),
        )
        .expect("screenshot");
    }
}

#[test]
fn a_model_has_one_colour_in_every_chart_legend_and_table() {
    let summary = summary();
    let browser = Browser::launch();
    let tab = open(&browser);
    let seen = tab
        .eval(
            "(() => { const out = []; \
             document.querySelectorAll('svg.chart .mark').forEach(m => { const s = getComputedStyle(m); \
               out.push({model: m.dataset.model, where: m.closest('svg').dataset.chart + ' mark', \
               colour: m.classList.contains('few') ? s.stroke : s.fill}); }); \
             document.querySelectorAll('svg.chart polyline.line, svg.chart .whisker:not(.on-bar)').forEach(l => \
               out.push({model: l.dataset.model, where: l.closest('svg').dataset.chart + ' line', colour: getComputedStyle(l).stroke})); \
             document.querySelectorAll('svg.chart g.legend[data-model]').forEach(g => \
               out.push({model: g.dataset.model, where: g.closest('svg').dataset.chart + ' legend', \
               colour: getComputedStyle(g.querySelector('line')).stroke})); \
             document.querySelectorAll('#leaderboard-table tr[data-model], #scenario-matrix tr[data-model]').forEach(r => \
               out.push({model: r.dataset.model, where: r.closest('table').id, \
               colour: getComputedStyle(r.querySelector('svg.swatch line')).stroke})); \
             return out; })()",
        )
        .expect("colours");
    let seen = seen.as_array().expect("a list");
    let names: Vec<&str> = models(&summary)
        .iter()
        .map(|m| m["model"].as_str().expect("name"))
        .collect();
    let mut colours = Vec::new();
    for name in &names {
        let mine: Vec<&Value> = seen.iter().filter(|s| s["model"] == *name).collect();
        let places: std::collections::BTreeSet<&str> = mine
            .iter()
            .map(|s| s["where"].as_str().expect("where"))
            .collect();
        for place in [
            "execution-gap mark",
            "turn-depth mark",
            "turn-depth line",
            "turn-depth legend",
            "adversarial mark",
            "adversarial legend",
            "format-errors mark",
            "chat-dimensions mark",
            "leaderboard-table",
            "scenario-matrix",
        ] {
            assert!(places.contains(place), "{name}: not in {place}: {places:?}");
        }
        let colour = &mine[0]["colour"];
        for s in &mine {
            assert_eq!(&s["colour"], colour, "{name}: {s} vs {colour}");
        }
        colours.push(colour.clone());
    }
    let distinct: std::collections::BTreeSet<String> =
        colours.iter().map(|c| c.to_string()).collect();
    assert_eq!(
        distinct.len(),
        names.len(),
        "two models share a colour: {colours:?}"
    );
}

/// A run of eleven simulated agents (each case of each bundled scenario once, few cases), in a
/// fresh folder: its report.
fn crowded_run() -> PathBuf {
    let dir = common::fresh_dir("report_first_screen_crowded");
    let mut models = String::new();
    let names: Vec<String> = (0..11).map(|i| format!("agent-{i:02}")).collect();
    for (i, name) in names.iter().enumerate() {
        let profile = ["strong", "balanced", "weak"][i % 3];
        models.push_str(&format!(
            "  - {{name: {name}, provider: simulated, sim: {{kind: agent, profile: {profile}, \
             skills: {{action_derivation: {:.2}}}, latency: null}}}}\n",
            0.3 + 0.06 * i as f64
        ));
    }
    let config = dir.join("run.yaml");
    std::fs::write(
        &config,
        format!(
            "models:\n{models}  - {{name: sim-user, provider: simulated, sim: {{kind: user, latency: null}}}}\n  \
             - {{name: sim-judge, provider: simulated, sim: {{kind: judge, latency: null}}}}\n\
             service_models: [{}]\nuser_model: sim-user\njudge_models: [sim-judge]\nscenarios: [bundled]\n\
             dialogues_per_scenario: 6\nmin_per_route: 1\nmax_turns: 16\nseed: 3\n",
            names.join(", ")
        ),
    )
    .expect("config");
    common::run_config(&config, &dir, "crowded").join("report.html")
}

#[test]
fn a_crowded_line_chart_colours_eight_models_and_a_legend_click_colours_another() {
    let report = crowded_run();
    let browser = Browser::launch();
    let tab = browser.open(&report, true).expect("open");
    tab.set_viewport(1280, 900).expect("viewport");
    // Three of the eleven are grey, lines, points, whiskers and legend alike.
    let grey = |chart: &str| -> Vec<String> {
        let names = tab
            .eval(&format!(
                "[...document.querySelectorAll('svg.chart[data-chart={chart}] g.legend.bg')].map(g => g.dataset.model)"
            ))
            .expect("legend");
        serde_json::from_value(names).expect("names")
    };
    let before = grey("turn-depth");
    assert_eq!(before.len(), 3, "{before:?}");
    assert_eq!(grey("adversarial"), before);
    let model = &before[0];
    let state = |model: &str| {
        tab.eval(&format!(
            "(svg => ({{grey: [...svg.querySelectorAll('[data-model=' + {m} + ']')].filter(e => e.tagName !== 'text') \
             .map(e => e.classList.contains('bg')), \
             line: getComputedStyle(svg.querySelector('polyline.line[data-model=' + {m} + ']')).stroke, \
             swatch: getComputedStyle(document.querySelector('#leaderboard-table tr[data-model=' + {m} + '] svg.swatch line')).stroke}}))\
             (document.querySelector('svg.chart[data-chart=turn-depth]'))",
            m = js(&js(model))
        ))
        .expect("state")
    };
    let s = state(model);
    assert!(
        s["grey"]
            .as_array()
            .expect("list")
            .iter()
            .all(|g| g == true),
        "{s}"
    );
    assert_ne!(
        s["line"], s["swatch"],
        "a grey line is not in its colour: {s}"
    );
    let note = tab
        .eval("document.querySelector('#charts [data-chart-focus]').textContent")
        .expect("note");
    assert!(
        note.as_str()
            .is_some_and(|n| n.contains("11 models") && !n.contains(model.as_str())),
        "{note}"
    );
    tab.screenshot(
        &screenshot_dir().join("sage-chart-turn-depth-crowded.png"),
        Some("svg.chart[data-chart=turn-depth]"),
    )
    .expect("screenshot");
    // A click on its legend entry colours it: its own colour, the one of its swatch.
    tab.click(&format!(
        "svg.chart[data-chart=turn-depth] g.legend[data-model={}]",
        js(model)
    ))
    .expect("click");
    let s = state(model);
    assert!(
        s["grey"]
            .as_array()
            .expect("list")
            .iter()
            .all(|g| g == false),
        "{s}"
    );
    assert_eq!(s["line"], s["swatch"], "{s}");
}
