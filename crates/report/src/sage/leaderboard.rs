//! The leaderboard section (`#leaderboard`), the first of the page: the models ranked by OA
//! with the best value of each column marked, their OA per scenario, and a legend of every
//! abbreviated heading.

use super::*;
use crate::charts::swatch;
use maud::{Markup, html};
use sage_core::scoring::leaderboard::{ranked, scenario_columns};
use sage_core::scoring::summary::{ModelSummary, PassK};

/// Which way a column is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// The highest value is the best.
    Higher,
    /// The lowest value is the best.
    Lower,
    /// Neither: no best is marked (chat length, the execution gap, dialogues).
    Neither,
}

/// One column of the leaderboard.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    /// The summary.json key under `models[].all` (`data-metric`).
    pub key: &'static str,
    /// The heading.
    pub heading: &'static str,
    /// Which way it is better.
    pub better: Better,
    /// What the heading stands for (the legend).
    pub meaning: &'static str,
}

/// The leaderboard's metric columns, in order.
pub const LEADERBOARD: [Column; 9] = [
    Column {
        key: "overall",
        heading: "OA",
        better: Better::Higher,
        meaning: "Overall score: 0.8 Logic + 0.2 Chat, 0-100.",
    },
    Column {
        key: "logic",
        heading: "Logic",
        better: Better::Higher,
        meaning: "0.4 Acc_cls + 0.4 Sim_path + 0.2 Acc_action, 0-100.",
    },
    Column {
        key: "chat",
        heading: "Chat",
        better: Better::Higher,
        meaning: "The judges' chat score, 0-100 (five dimensions weighted 20/25/25/15/15).",
    },
    Column {
        key: "acc_cls",
        heading: "Acc_cls",
        better: Better::Higher,
        meaning: "Classification accuracy: fields classified as the judges' consensus, %.",
    },
    Column {
        key: "sim_path",
        heading: "Sim_path",
        better: Better::Higher,
        meaning: "Path similarity: stages of the reference path that the agent's path holds, %.",
    },
    Column {
        key: "acc_action",
        heading: "Acc_action",
        better: Better::Higher,
        meaning: "Action correctness: turns whose action is the reference action, %.",
    },
    Column {
        key: "execution_gap",
        heading: "Exec. gap",
        // A small gap is no merit by itself: an agent that classifies badly has little to lose.
        better: Better::Neither,
        meaning: "Execution gap: Acc_cls − Acc_action, points (knowing what the customer wants but not doing it); read it beside Acc_cls: a weak classifier has a small gap too, so no best is marked.",
    },
    Column {
        key: "format_error_rate",
        heading: "Format err. %",
        better: Better::Lower,
        meaning: "Format-error rate: answers that did not parse, % of the turns the agent answered; lower is better.",
    },
    Column {
        key: "chat_length",
        heading: "Chat length",
        better: Better::Neither,
        meaning: "Characters of the agent's chat, mean over its valid answers (neither better nor worse).",
    },
];

fn metric(g: &GroupStats, key: &str) -> Option<Metric> {
    match key {
        "overall" => g.overall,
        "logic" => g.logic,
        "chat" => g.chat,
        "acc_cls" => g.acc_cls,
        "sim_path" => g.sim_path,
        "acc_action" => g.acc_action,
        "execution_gap" => g.execution_gap,
        "format_error_rate" => g.format_error_rate,
        "chat_length" => g.chat_length,
        _ => None,
    }
}

/// The k of the pass^k columns: every k some model reports (`models[].pass_k`), ascending;
/// none without repeats.
pub fn pass_ks(summary: &Summary) -> Vec<u32> {
    summary
        .models
        .iter()
        .flat_map(|m| m.pass_k.iter().map(|p| p.k))
        .collect::<BTreeSet<u32>>()
        .into_iter()
        .collect()
}

/// What the "OA noise floor" column is (summary.json's `models[].noise_floor`).
pub const NOISE_FLOOR: &str = "The smallest OA difference between this run and an independent rerun of the same design that the run can tell from noise (half the 95% interval of the difference of two bootstrap replicates), points; two runs of one model whose OA differ by less do not show a change.";

/// Which of `values` (one per row) hold the column's best: the highest (or lowest) value,
/// every row that has it when several tie. None when fewer than two rows have a value, when
/// every valued row has the same value (no one is better), or for [`Better::Neither`].
pub fn best_of(values: &[Option<f64>], better: Better) -> Vec<bool> {
    let valued: Vec<f64> = values.iter().flatten().copied().collect();
    let best = match better {
        Better::Higher => valued.iter().copied().reduce(f64::max),
        Better::Lower => valued.iter().copied().reduce(f64::min),
        Better::Neither => None,
    };
    let mark = best.filter(|b| valued.len() >= 2 && valued.iter().any(|v| v != b));
    values.iter().map(|v| v.is_some() && *v == mark).collect()
}

/// Which of `models` hold the best of `value` ([`best_of`]).
fn best_rows(
    models: &[&ModelSummary],
    better: Better,
    value: impl Fn(&ModelSummary) -> Option<f64>,
) -> Vec<bool> {
    let values: Vec<Option<f64>> = models.iter().map(|m| value(m)).collect();
    best_of(&values, better)
}

/// A mean as the tables show it: two decimals, as leaderboard.md and the terminal.
fn fixed(x: f64) -> String {
    format!("{x:.2}")
}

/// The best mark of a cell: bold (class `best` on the cell) and a star that says it.
fn best_mark() -> Markup {
    html! { " " span.best-mark title="best of the column" aria-label="best of the column" { "★" } }
}

/// A metric's cell: the rounded mean, ± half its interval, the interval and turns on hover,
/// the unrounded mean in `data-value`.
fn metric_cell(key: &str, m: Option<Metric>, best: bool) -> Markup {
    html! {
        @match m {
            Some(x) => td.num.best[best] data-metric=(key) data-value=(raw(x.mean))
                title={ "95% interval " (num(x.ci_low)) " to " (num(x.ci_high)) "; n = " (x.n) " scored turns" } {
                (fixed(x.mean))
                @if best { (best_mark()) }
                " " span.ci { "±" (fixed(x.half_width())) }
            },
            None => td.num data-metric=(key) data-value="" { "—" },
        }
    }
}

/// A model's pass^k for `k`, when it has one.
fn pass(m: &ModelSummary, k: u32) -> Option<&PassK> {
    m.pass_k.iter().find(|p| p.k == k)
}

/// The models in the leaderboard's order (by OA, best first; ties by name), each with its
/// position in `summary.models` (its colour).
pub(super) fn rows(summary: &Summary) -> Vec<(usize, &ModelSummary)> {
    ranked(summary)
        .into_iter()
        .map(|m| {
            let index = summary
                .models
                .iter()
                .position(|x| std::ptr::eq(x, m))
                .unwrap_or_default();
            (index, m)
        })
        .collect()
}

/// Each model's place in the leaderboard (0 the best): every view that lists models follows it
/// ([`in_leaderboard_order`]).
pub(super) fn places(summary: &Summary) -> std::collections::HashMap<&str, usize> {
    ranked(summary)
        .into_iter()
        .enumerate()
        .map(|(i, m)| (m.model.as_str(), i))
        .collect()
}

/// `items` sorted by their model's place in the leaderboard (`model` gives it; models not in it
/// last), the order among the same model's items kept.
pub(super) fn in_leaderboard_order<T>(
    summary: &Summary,
    items: impl IntoIterator<Item = T>,
    model: impl Fn(&T) -> &str,
) -> Vec<T> {
    let places = places(summary);
    let mut items: Vec<T> = items.into_iter().collect();
    items.sort_by_key(|t| places.get(model(t)).copied().unwrap_or(usize::MAX));
    items
}

/// A model's swatch, name and `tags`, the name wrapping at its hyphens when long (never inside
/// a word).
fn model_line(index: usize, model: &str, tags: Markup) -> Markup {
    html! { span.model-line { (swatch(index)) span { span.model-name { (model) } (tags) } } }
}

/// The Table-1 leaderboard: one row per model, by OA (best first), each metric of
/// `models[].all` with its interval; `data-value` holds the unrounded mean, class `best` marks
/// each column's best ([`best_of`]). With repeats, columns pass^1 .. pass^k
/// (`data-metric="pass^K"`, `data-value` = `models[].pass_k[].pass`).
pub fn leaderboard_html(summary: &Summary) -> Markup {
    let ks = pass_ks(summary);
    let rows = rows(summary);
    let models: Vec<&ModelSummary> = rows.iter().map(|(_, m)| *m).collect();
    let best: Vec<Vec<bool>> = LEADERBOARD
        .iter()
        .map(|c| best_rows(&models, c.better, |m| metric(&m.all, c.key).map(|x| x.mean)))
        .collect();
    let best_pass: Vec<Vec<bool>> = ks
        .iter()
        .map(|k| best_rows(&models, Better::Higher, |m| pass(m, *k).map(|p| p.pass)))
        .collect();
    html! {
        // Many models or many columns: the table scrolls in its own box, the names stay.
        div.table-box {
        table #leaderboard-table.data {
            thead {
                tr {
                    th data-sort="model" { "Model" }
                    th.num data-sort="dialogues" { "Dialogues" }
                    @for c in &LEADERBOARD {
                        th.num data-sort=(c.key) title=(c.meaning)
                            aria-sort=[(c.key == "overall").then_some("descending")] { (c.heading) }
                    }
                    th.num data-sort="noise_floor" title=(NOISE_FLOOR) { "Noise floor" }
                    @for k in &ks {
                        th.num data-sort={ "pass^" (k) } title={ "cases passing all of " (k) " repeats, %" } {
                            "pass^" (k)
                        }
                    }
                }
            }
            tbody {
                @for (r, (index, m)) in rows.iter().enumerate() {
                    tr data-model=(m.model) data-decision=[decision(summary, &m.model)] {
                        td data-metric="model" data-value=(m.model) {
                            (model_line(*index, &m.model, html! {
                                @if m.simulated { " " span.tag.sim { "simulated" } }
                                (decision_tag(summary, &m.model))
                                @if let Some(form) = m.structured_output {
                                    " "
                                    span.tag.structured title={ "asked with a JSON Schema of its answer (structured_output: " (form.as_str()) ")" } {
                                        "structured"
                                    }
                                }
                            }))
                        }
                        td.num data-metric="dialogues" data-value=(m.dialogues) { (m.dialogues) }
                        @for (c, column) in LEADERBOARD.iter().enumerate() {
                            (metric_cell(column.key, metric(&m.all, column.key), best[c][r]))
                        }
                        @match m.noise_floor {
                            Some(x) => td.num.noise-floor data-metric="noise_floor" data-value=(raw(x))
                                title=(NOISE_FLOOR) { "±" (fixed(x)) },
                            None => td.num.noise-floor data-metric="noise_floor" data-value="" { "—" },
                        }
                        @for (i, k) in ks.iter().enumerate() {
                            @match pass(m, *k) {
                                Some(p) => td.num.best[best_pass[i][r]] data-metric={ "pass^" (k) } data-value=(raw(p.pass))
                                    title={ (p.cases) " cases ran at least " (k) " times" } {
                                    (fixed(p.pass))
                                    @if best_pass[i][r] { (best_mark()) }
                                },
                                None => td.num data-metric={ "pass^" (k) } data-value="" { "—" },
                            }
                        }
                    }
                }
            }
        }
        }
        p.note {
            "Every scored turn of each model, ranked by OA; ± half the 95% bootstrap interval (the "
            "interval and the turns behind it on hover); ★ the best of each column (bold). Click a "
            "heading to sort."
            @if let Some(k) = ks.last() {
                " pass^k (k = 1 to " (k) "): the share of cases, %, whose dialogues reach the target "
                "action in all of k repeats drawn from the case's repeats (tau2-bench's estimator; "
                "pass^1 is the plain pass rate)."
            }
            @if let Some(a) = &summary.adaptive {
                @let (inside, outside) = a.decided();
                @let saved: usize = a.models.iter().map(|m| m.not_played).sum();
                " An adaptive run: a model got no more cases once its OA's 95% confidence sequence "
                "put it surely in the top " (a.top) " (" span.tag.decided.in-top { "top " (a.top) } ") "
                "or surely out of it (" span.tag.decided.out-of-top { "out" } "), after the dialogues "
                "the tag names; the others played to the full run. " (inside) " in, " (outside)
                " out, " (a.models.len() - inside - outside) " undecided; " (saved)
                " dialogues of the full run not played. A decided model's interval is wider: it "
                "played fewer dialogues."
            }
        }
    }
}

/// A model's decision in an adaptive run (`in_top`, `out_of_top`, `undecided`).
fn decision(summary: &Summary, model: &str) -> Option<&'static str> {
    use sage_core::scoring::adaptive::Decision;
    let standing = summary.adaptive.as_ref()?.standing(model)?;
    Some(match standing.decision {
        Decision::InTop => "in_top",
        Decision::OutOfTop => "out_of_top",
        Decision::Undecided => "undecided",
    })
}

/// A decided model's tag in an adaptive run: `top 3 · 120` or `out · 45`, the dialogues it
/// was decided after, explained on hover; nothing for an undecided one.
fn decision_tag(summary: &Summary, model: &str) -> Markup {
    use sage_core::scoring::adaptive::Decision;
    let Some(a) = summary.adaptive.as_ref() else {
        return html! {};
    };
    let Some((standing, n)) = a.standing(model).and_then(|s| Some((s, s.decided_after?))) else {
        return html! {};
    };
    let range = format!(
        "its OA's 95% confidence sequence: {:.1} to {:.1}",
        standing.lower, standing.upper
    );
    html! {
        @match standing.decision {
            Decision::InTop => {
                " " span.tag.decided.in-top title={ "surely in the top " (a.top) " after " (n) " dialogues: it got no more cases (" (range) ")" } {
                    "top " (a.top) " · " (n)
                }
            }
            _ => {
                " " span.tag.decided.out-of-top title={ "surely out of the top " (a.top) " after " (n) " dialogues: it got no more cases (" (range) ")" } {
                    "out · " (n)
                }
            }
        }
    }
}

/// The model x scenario OA matrix (`table#scenario-matrix`): rows the models in the
/// leaderboard's order, a column per scenario (its abbreviation and full name, `names` giving
/// the full name of an id), each cell the OA mean over the model's scored turns in that
/// scenario, its interval and n on hover, the best of each column marked.
pub fn scenario_matrix(summary: &Summary, names: &dyn Fn(&str) -> String) -> Markup {
    let rows = rows(summary);
    let models: Vec<&ModelSummary> = rows.iter().map(|(_, m)| *m).collect();
    let scenarios = scenario_columns(summary);
    let oa = |m: &ModelSummary, s: &str| m.by_scenario.get(s).and_then(|g| g.overall);
    let best: Vec<Vec<bool>> = scenarios
        .iter()
        .map(|s| best_rows(&models, Better::Higher, |m| oa(m, &s.id).map(|x| x.mean)))
        .collect();
    html! {
        div.table-box {
        table #scenario-matrix.data {
            thead {
                tr {
                    th data-sort="model" { "Model" }
                    @for c in &scenarios {
                        @let s = c.id.as_str();
                        th.num data-sort={ "scenario:" (s) } data-scenario=(s) title=(names(s)) {
                            abbr title=(names(s)) { (c.abbreviation) }
                            br;
                            span.scenario-name { (names(s)) }
                        }
                    }
                }
            }
            tbody {
                @for (r, (index, m)) in rows.iter().enumerate() {
                    tr data-model=(m.model) {
                        td data-metric="model" data-value=(m.model) { (model_line(*index, &m.model, html! {})) }
                        @for (c, column) in scenarios.iter().enumerate() {
                            @let s = column.id.as_str();
                            @let dialogues = m.by_scenario.get(s).map_or(0, |g| g.dialogues);
                            @match oa(m, s) {
                                Some(x) => td.num.best[best[c][r]] data-metric={ "scenario:" (s) } data-scenario=(s)
                                    data-value=(raw(x.mean))
                                    title={ "OA " (num(x.mean)) ", 95% interval " (num(x.ci_low)) " to "
                                        (num(x.ci_high)) "; n = " (x.n) " scored turns, " (dialogues) " dialogues" } {
                                    (fixed(x.mean))
                                    @if best[c][r] { (best_mark()) }
                                },
                                None => td.num data-metric={ "scenario:" (s) } data-scenario=(s) data-value="" { "—" },
                            }
                        }
                    }
                }
            }
        }
    }
    }
}

/// The legend of every abbreviated heading of the leaderboard and the scenario matrix
/// (`dl#leaderboard-legend`, one `dt` per heading).
fn legend(summary: &Summary, names: &dyn Fn(&str) -> String) -> Markup {
    let ks = pass_ks(summary);
    html! {
        dl #leaderboard-legend {
            @for c in &LEADERBOARD {
                div { dt { (c.heading) } dd { (c.meaning) } }
            }
            div { dt { "Noise floor" } dd { (NOISE_FLOOR) } }
            @if !ks.is_empty() {
                div {
                    dt { "pass^k" }
                    dd { "Cases, %, whose dialogues reach the target action in all of k repeats." }
                }
            }
            @for c in scenario_columns(summary) {
                div {
                    dt { (c.abbreviation) }
                    dd { (names(&c.id)) " (scenario " code { (c.id) } "): OA of the model's turns in it." }
                }
            }
            div {
                dt { "★" }
                dd {
                    "The best of the column (bold): the highest, the lowest for Format err.; none for "
                    "Dialogues, Exec. gap, Chat length and the noise floor, nor when every model has "
                    "the same value."
                }
            }
        }
    }
}

impl SageReport {
    /// The leaderboard section's body: the table, the OA per scenario and the legend.
    pub(super) fn leaderboard_section(&self, summary: &Summary) -> Markup {
        let names = |id: &str| {
            self.sop(id)
                .map_or_else(|| id.to_string(), |s| s.scenario().name.clone())
        };
        html! {
            (leaderboard_html(summary))
            h3 { "OA per scenario" }
            p.note { "Where each model fails: its OA in each scenario (the interval and n on hover)." }
            (scenario_matrix(summary, &names))
            (legend(summary, &names))
        }
    }
}

pub(super) const LEADERBOARD_CSS: &str = r#"
#leaderboard th[data-sort]{cursor:pointer;user-select:none}
#leaderboard th[aria-sort=ascending]::after{content:" ▲"}
#leaderboard th[aria-sort=descending]::after{content:" ▼"}
#leaderboard td.best{font-weight:bold}
#leaderboard td.num{white-space:nowrap}
#leaderboard .model-line{display:flex;align-items:baseline;gap:2px;min-width:13em;max-width:20em}
#leaderboard .model-line svg.swatch{flex:none}
#leaderboard-table td.num .ci{display:block}
#leaderboard-table th,#leaderboard-table td{padding:3px 6px}
#leaderboard-table th.num{max-width:6.5em}
#leaderboard .best-mark{font-weight:normal;color:var(--accent)}
#scenario-matrix th{vertical-align:bottom}
#scenario-matrix .scenario-name{font-weight:normal;font-size:11px;color:var(--muted)}
#scenario-matrix abbr{text-decoration:none}
dl#leaderboard-legend{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:2px 18px;font-size:12px;color:var(--muted);margin:10px 0}
dl#leaderboard-legend div{display:flex;gap:6px}
dl#leaderboard-legend dt{font-weight:bold;color:var(--fg);min-width:86px}
dl#leaderboard-legend dd{margin:0}
.tag.sim{color:var(--warn)}
.tag.decided{font-size:11px;border-radius:3px;padding:0 3px;white-space:nowrap}
.tag.decided.in-top{color:var(--good);border:1px solid currentColor}
.tag.decided.out-of-top{color:var(--muted);border:1px solid currentColor}
.tag.bad{color:var(--bad)}
table.routes tr.untested td{color:var(--bad)}
table.route-models td{font-size:12px;color:#1d2330}
"#;

/// Sorts `table.data` tables with `th[data-sort]` headings by the clicked column's
/// `data-value` (numbers numerically, missing values last).
pub const SORT_SCRIPT: &str = include_str!("../js/sort.js");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_best_is_marked_when_it_is_better_than_another() {
        let h = Better::Higher;
        assert_eq!(
            best_of(&[Some(1.0), Some(3.0), None, Some(2.0)], h),
            [false, true, false, false]
        );
        assert_eq!(
            best_of(&[Some(1.0), Some(3.0), Some(2.0)], Better::Lower),
            [true, false, false]
        );
        // Ties at the best are all marked; nothing when all are equal, alone, or neither way.
        assert_eq!(
            best_of(&[Some(3.0), Some(1.0), Some(3.0)], h),
            [true, false, true]
        );
        assert_eq!(best_of(&[Some(2.0), Some(2.0)], h), [false, false]);
        assert_eq!(best_of(&[Some(2.0), None], h), [false, false]);
        assert_eq!(
            best_of(&[Some(1.0), Some(2.0)], Better::Neither),
            [false, false]
        );
    }

    #[test]
    fn names_are_escaped_and_the_matrix_follows_the_ranking() {
        use super::super::tests::{record, route, turn};
        // Two models, each one turn in scenario `sc`: the second by name has the better OA.
        let records: Vec<_> = [("<b>a</b>", 20.0), ("z\"", 90.0)]
            .iter()
            .map(|(name, logic)| {
                let id = format!("sc/0001/{name}/r0");
                record(
                    &id,
                    name,
                    vec![turn(1, *logic, route(&["s1"], "Done"), ["x"; 3])],
                )
            })
            .collect();
        let summary = sage_core::scoring::summarize(&records, &Default::default());
        let html = scenario_matrix(&summary, &|id| format!("{id}<i>")).into_string();
        assert!(!html.contains("<b>") && !html.contains("<i>"), "{html}");
        let first = html.find("data-model=\"z&quot;\"").expect("z");
        let second = html.find("data-model=\"&lt;b&gt;a&lt;/b&gt;\"").expect("a");
        assert!(first < second, "by OA, best first");
        assert!(
            html.contains("<abbr title=\"sc&lt;i&gt;\">sc</abbr>"),
            "{html}"
        );
    }
}
