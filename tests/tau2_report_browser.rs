//! The tau2 retail report (report.html) read in headless Chromium as a person reads it, for a
//! run of 3 agents and one of 27 (named as real models, `common::SWEEP_MODELS`), at 1,366 and
//! 1,024 pixels wide:
//!
//! - the first screen is the leaderboard: the agents in summary.json's order with its pass^1,
//!   each with an interval that holds it;
//! - nothing makes the page wider than the window: the task matrix scrolls in its own box, its
//!   agent columns in the leaderboard's order with their names whole;
//! - a matrix cell opens the explorer on that agent and task, with as many simulations as the
//!   cell says; a simulation opens with its tool calls, its answers and its grade;
//! - nothing is fetched beyond the file, and no script fails.
//!
//! Screenshots: `common::browser::screenshot_dir()`, `tau2-*.png`.

mod common;

use common::browser::{Browser, assert_fits, assert_offline, open_report, screenshot_dir};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

/// How long the page's scripts may take.
const READY: Duration = Duration::from_secs(30);

/// A JavaScript string literal of `text`.
fn js(text: &str) -> String {
    serde_json::to_string(text).expect("a string")
}

/// A run of `n` simulated agents (the first `n` sweep names, each sloppier than the one
/// before) on 8 tasks, 2 trials: its results folder (made once per size for this file).
fn run(n: usize) -> &'static Path {
    static RUNS: [OnceLock<PathBuf>; 2] = [OnceLock::new(), OnceLock::new()];
    let slot = if n == 27 { &RUNS[0] } else { &RUNS[1] };
    slot.get_or_init(|| {
        let dir = common::fresh_dir(&format!("tau2_report_{n}"));
        let names = &common::SWEEP_MODELS[..n];
        let mut text = String::from("models:\n");
        for (i, name) in names.iter().enumerate() {
            let f = i as f64 / (n - 1) as f64;
            text.push_str(&format!(
                "  - {{name: {name}, provider: simulated, sim: {{kind: tau2_agent, wrong_argument: {:.3}, skip: {:.3}}}}}\n",
                0.6 * f,
                0.2 * f
            ));
        }
        text.push_str(
            "  - {name: user, provider: simulated, sim: {kind: tau2_customer}}\n  - {name: judge, provider: simulated, sim: {kind: tau2_judge, noise: 0.05}}\n",
        );
        text.push_str(&format!(
            "agents: [{}]\ncustomer_model: user\njudge_models: [judge]\ntasks: [\"0\", \"1\", \"2\", \"3\", \"4\", \"5\", \"6\", \"7\"]\nrepeats: 2\nseed: 3\n",
            names.join(", ")
        ));
        let config = dir.join("tau2.yaml");
        std::fs::write(&config, text).expect("config");
        let out = dir.join("out");
        common::sage_ok(&[
            "run",
            "--suite",
            "tau2-retail",
            "--quiet",
            "--config",
            config.to_str().expect("path"),
            "--run-id",
            "tau2",
            "--out",
            out.to_str().expect("path"),
        ]);
        out.join("tau2")
    })
}

/// summary.json's agents, best first, with their pass^1.
fn ranked(folder: &Path) -> Vec<(String, f64)> {
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("summary.json")).expect("summary.json"),
    )
    .expect("json");
    summary["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .map(|a| {
            (
                a["agent"].as_str().expect("name").to_string(),
                a["pass_hat_k"][0].as_f64().expect("pass^1"),
            )
        })
        .collect()
}

/// What the first screen and the matrix show: the leaderboard's rows (name, pass^1 shown,
/// the interval's bounds) and where its table starts; the matrix's agent columns (name, the
/// text shown, whether it is drawn whole within its cell).
const SHOWN: &str = r#"
(() => {
  const rows = [...document.querySelectorAll('#tau2-leaderboard-table tbody tr[data-agent]')];
  const numbers = t => (t.match(/\d+\.\d+/g) || []).map(Number);
  const head = [...document.querySelectorAll('#tau2-leaderboard-table thead th')].map(th => th.textContent.trim());
  const p1 = head.findIndex(h => h.startsWith('pass^1'));
  const board = rows.map(r => ({agent: r.dataset.agent, cell: r.cells[p1].textContent, numbers: numbers(r.cells[p1].textContent)}));
  const table = document.getElementById('tau2-leaderboard-table').getBoundingClientRect();
  const columns = [...document.querySelectorAll('#tau2-matrix th[data-agent]')].map(th => {
    const s = th.querySelector('span') || th, r = s.getBoundingClientRect(), c = th.getBoundingClientRect();
    return {agent: th.dataset.agent, text: s.textContent, inside: r.top >= c.top - 1 && r.bottom <= c.bottom + 1};
  });
  return {board, top: table.top, columns};
})()
"#;

/// The reading of a run's report at `width`: the first screen, the width, the matrix, a
/// cell's link to the explorer and a simulation's transcript.
fn read(browser: &Browser, n: usize, width: u32) {
    let folder = run(n);
    let expected = ranked(folder);
    assert_eq!(expected.len(), n);
    let tab = open_report(browser, &folder.join("report.html"), width, "tau2-explorer");
    tab.screenshot_viewport(&screenshot_dir().join(format!("tau2-{n}-first-screen-{width}.png")))
        .expect("screenshot");
    let shown = tab.eval(SHOWN).expect("shown");
    // The first screen opens on the leaderboard, in summary.json's order and numbers.
    assert!(
        shown["top"].as_f64().expect("top") < 450.0,
        "the leaderboard is not on the first screen: {shown}"
    );
    let board = shown["board"].as_array().expect("board");
    let names: Vec<&str> = board.iter().map(|r| r["agent"].as_str().unwrap()).collect();
    let want: Vec<&str> = expected.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(names, want, "the leaderboard's order");
    for (row, (agent, pass1)) in board.iter().zip(&expected) {
        let numbers: Vec<f64> = (row["numbers"].as_array().expect("numbers"))
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert!(
            numbers.len() >= 3,
            "{agent}: pass^1 without its interval: {row}"
        );
        let (value, low, high) = (numbers[0], numbers[1], numbers[2]);
        assert!((value - pass1).abs() < 0.0006, "{agent}: {row} for {pass1}");
        assert!(low <= value && value <= high, "{agent}: {row}");
    }
    // The matrix: agent columns in the leaderboard's order, each name whole in its header.
    let columns = shown["columns"].as_array().expect("columns");
    let order: Vec<&str> = columns
        .iter()
        .map(|c| c["agent"].as_str().unwrap())
        .collect();
    assert_eq!(order, want, "the task matrix's columns");
    for c in columns {
        assert_eq!(c["text"], c["agent"], "a name cut: {c}");
        assert_eq!(c["inside"], true, "a name outside its header: {c}");
    }
    // Nothing wider than the window, every part opened.
    assert_fits(&tab, "every part opened");
    tab.eval("document.getElementById('tau2-tasks').scrollIntoView()")
        .expect("scroll");
    tab.screenshot_viewport(&screenshot_dir().join(format!("tau2-{n}-tasks-{width}.png")))
        .expect("screenshot");

    // The worst agent's first failing cell opens the explorer on that agent and task, listing
    // as many simulations as the cell's trials.
    let worst = want.last().expect("an agent");
    let cell = tab
        .eval(&format!(
            "(() => {{ const td = [...document.querySelectorAll('#tau2-matrix td[data-agent=' + CSS.escape({}) + ']')].find(td => td.querySelector('a') && +td.dataset.passed < +td.dataset.trials); \
             if (!td) return null; return {{task: td.closest('tr').dataset.task, trials: +td.dataset.trials, href: td.querySelector('a').getAttribute('href')}}; }})()",
            js(worst)
        ))
        .expect("cell");
    assert!(cell.is_object(), "{worst} failed no task");
    let task = cell["task"].as_str().expect("task").to_string();
    tab.eval(&format!(
        "location.hash = {}",
        js(cell["href"].as_str().expect("href"))
    ))
    .expect("follow the cell");
    let listed = "[...document.querySelectorAll('#tau2-explorer-table tbody tr[data-simulation]')].filter(r => !r.hidden && r.offsetParent !== null).map(r => r.dataset.simulation)";
    tab.wait_for(
        &format!(
            "(() => {{ const ids = {listed}; return ids.length === {} && ids.every(id => id.startsWith({} + '/') && id.includes('/' + {} + '/')); }})()",
            cell["trials"],
            js(&task),
            js(worst)
        ),
        READY,
    )
    .unwrap_or_else(|_| {
        panic!(
            "the cell did not open the explorer on {worst} and task {task}: {}",
            tab.eval(listed).expect("listed")
        )
    });
    // A simulation opens with its tool calls and answers, and its grade.
    let id = format!("{task}/{worst}/r0");
    tab.eval(&format!(
        "location.hash = '#simulation=' + encodeURIComponent({})",
        js(&id)
    ))
    .expect("open a simulation");
    tab.wait_for(
        &format!(
            "(v => v && !v.hidden && v.dataset.simulation === {} && v.querySelectorAll('.call').length > 0 && v.querySelectorAll('.result').length > 0 && /reward/.test(v.textContent))(document.querySelector('#simulation-view'))",
            js(&id)
        ),
        READY,
    )
    .expect("the simulation opens with its calls, their answers and its reward");
    tab.screenshot_viewport(&screenshot_dir().join(format!("tau2-{n}-simulation-{width}.png")))
        .expect("screenshot");
    assert_fits(&tab, "a simulation open");
    assert_offline(&tab, &folder.join("report.html"));
}

#[test]
fn a_tau2_report_of_3_agents_reads_at_both_widths() {
    let browser = Browser::launch();
    for width in [1366, 1024] {
        read(&browser, 3, width);
    }
}

#[test]
fn a_tau2_report_of_27_agents_reads_at_both_widths() {
    let browser = Browser::launch();
    for width in [1366, 1024] {
        read(&browser, 27, width);
    }
}
