//! The charts section (`#charts`); the chart primitives are `report::charts`. A model has the
//! same colour in every chart (its position in `summary.models`, [`charts::model_style`]).

use super::*;
use crate::charts::{Axis, BarPanel, ChartModel, Estimate, XAxis};
use maud::{Markup, html};
use sage_core::scoring::summary::ModelSummary;

/// A score axis, 0-100, whose values are means over scored turns.
fn score_axis(title: &str) -> Axis<'_> {
    Axis {
        title,
        max: 100.0,
        unit: "",
        n_of: "scored turns",
    }
}

/// A group's statistic with its interval, its turns and the group's dialogues.
fn estimate(g: &GroupStats, get: fn(&GroupStats) -> Option<Metric>) -> Option<Estimate> {
    get(g).map(|m| Estimate::of(m, Some(g.dialogues)))
}

impl SageReport {
    pub(super) fn charts_html(&self, summary: &Summary) -> Markup {
        // The leaderboard's order (best first); each model keeps its colour.
        let ranked = leaderboard::rows(summary);
        let models: Vec<&ModelSummary> = ranked.iter().map(|(_, m)| *m).collect();
        let chart_models: Vec<ChartModel<'_>> = ranked
            .iter()
            .map(|(index, m)| ChartModel {
                name: &m.model,
                index: *index,
            })
            .collect();
        let bars = |series: &str, get: fn(&GroupStats) -> Option<Metric>| BarPanel {
            series: series.into(),
            values: models.iter().map(|m| estimate(&m.all, get)).collect(),
        };
        let execution_gap = charts::bar_panels(
            "execution-gap",
            &chart_models,
            &[
                bars("Acc_cls", |g| g.acc_cls),
                bars("Sim_path", |g| g.sim_path),
                bars("Acc_action", |g| g.acc_action),
            ],
            &score_axis("% of scored turns, 0-100"),
        );

        let by_oa: Vec<(&str, Option<f64>)> = models
            .iter()
            .map(|m| (m.model.as_str(), m.all.overall.map(|x| x.mean)))
            .collect();
        let focus = charts::focus(&by_oa);
        let focus_note = html! {
            @if let Some(f) = &focus {
                " "
                span data-chart-focus=(f.len()) {
                    (models.len()) " models: the " (charts::FOCUS_EACH) " best and "
                    (charts::FOCUS_EACH) " worst by OA in colour (" (f.join(", "))
                    "), the others grey; point at a model or pick it below to highlight it, click it in the legend to colour or grey its line."
                }
            }
        };
        let lines = |keys: &[&str],
                     groups: fn(&ModelSummary) -> &IndexMap<String, GroupStats>,
                     get: fn(&GroupStats) -> Option<Metric>|
         -> Vec<Line> {
            ranked
                .iter()
                .map(|(index, m)| Line {
                    model: m.model.clone(),
                    index: *index,
                    values: keys
                        .iter()
                        .map(|k| groups(m).get(*k).and_then(|g| estimate(g, get)))
                        .collect(),
                })
                .collect()
        };
        let names: Vec<&str> = models.iter().map(|m| m.model.as_str()).collect();
        let pick = |chart: &str| {
            let default = match &focus {
                Some(_) => format!(
                    "the {} best and {} worst in colour",
                    charts::FOCUS_EACH,
                    charts::FOCUS_EACH
                ),
                None => "every model in colour".to_string(),
            };
            charts::pick_control(chart, &default, &names)
        };
        let depths = ["t1", "t5", "t10", "t15", "final"];
        let turn_depth = charts::line_panels(
            "turn-depth",
            &XAxis {
                title: "turn of the dialogue",
                labels: &["T1", "T5", "T10", "T15", "Final"],
            },
            &[("OA", lines(&depths, |m| &m.by_turn, |g| g.overall))],
            &score_axis("OA, 0-100"),
            focus.as_deref(),
        );
        let levels = ["zero", "weak", "strong"];
        let adversarial = charts::line_panels(
            "adversarial",
            &XAxis {
                title: "adversarial level of the customer",
                labels: &levels,
            },
            &[
                ("OA", lines(&levels, |m| &m.by_adversarial, |g| g.overall)),
                ("Logic", lines(&levels, |m| &m.by_adversarial, |g| g.logic)),
                ("Chat", lines(&levels, |m| &m.by_adversarial, |g| g.chat)),
            ],
            &score_axis("score, 0-100"),
            focus.as_deref(),
        );

        // Format errors: per kind met in the run, the share of each model's answered turns.
        let kinds: Vec<usize> = (0..FormatError::KINDS.len())
            .filter(|k| self.format_errors.values().any(|c| c[*k] > 0))
            .collect();
        let panels: Vec<BarPanel> = kinds
            .iter()
            .map(|k| BarPanel {
                series: FormatError::KINDS[*k].to_string(),
                values: models
                    .iter()
                    .map(|m| {
                        let answered = m.all.format_error_rate?.n;
                        let count = self.format_errors.get(&m.model).map_or(0, |c| c[*k]);
                        (answered > 0).then(|| Estimate {
                            value: count as f64 / answered as f64 * 100.0,
                            interval: None,
                            n: Some(answered),
                            dialogues: None,
                        })
                    })
                    .collect(),
            })
            .collect();
        let most = panels
            .iter()
            .flat_map(|p| p.values.iter().flatten())
            .map(|v| v.value)
            .fold(0.0, f64::max);
        let format_errors = charts::bar_panels(
            "format-errors",
            &chart_models,
            &panels,
            &Axis {
                title: "turns with a format error of the kind, % of answered turns",
                max: nice_max(most),
                unit: "%",
                n_of: "answered turns",
            },
        );

        let dimensions = charts::bar_panels(
            "chat-dimensions",
            &chart_models,
            &[
                bars("Linguistic", |g| g.chat_dimensions.linguistic_quality),
                bars("Anthropomorphism", |g| {
                    g.chat_dimensions.anthropomorphism_emotion
                }),
                bars("Utility", |g| g.chat_dimensions.content_utility),
                bars("Satisfaction", |g| g.chat_dimensions.user_satisfaction),
                bars("Compliance", |g| g.chat_dimensions.instruction_compliance),
            ],
            &score_axis("judges' score, 0-100"),
        );

        html! {
            p.note {
                "Each model has one colour in every chart and table. Whiskers: the 95% bootstrap "
                "interval; hover over a bar or point for its value, interval and n (the turns behind it)."
            }
            h3 { "Execution gap" }
            p.note {
                "Per model: classification accuracy (Acc_cls), path similarity (Sim_path) and action "
                "correctness (Acc_action), 0-100. Knowing what the customer wants (classification) but "
                "not acting on it shows as a longer Acc_cls bar than Acc_action bar."
            }
            (execution_gap)
            h3 { "Turn depth" }
            p.note {
                "Overall score (OA) at turns 1, 5, 10, 15 and each dialogue's final turn, one line per "
                "model. Few dialogues reach the late turns: their points have wide whiskers, and are "
                "hollow when fewer than " (charts::FEW_TURNS) " turns are behind them."
                (focus_note)
            }
            (pick("turn-depth"))
            (turn_depth)
            h3 { "Adversarial degradation" }
            p.note {
                "OA, Logic and Chat at each adversarial level. Empathy resilience: Chat holding while "
                "Logic falls. Hollow points: fewer than " (charts::FEW_TURNS) " turns."
                (focus_note)
            }
            (pick("adversarial"))
            (adversarial)
            h3 { "Format errors by kind" }
            p.note {
                "Turns whose answer did not parse, per model and kind, as a share of the model's "
                "answered turns (the count on hover)."
            }
            @if kinds.is_empty() {
                p data-chart-empty="format-errors" { "No format errors in this run." }
            }
            (format_errors)
            h3 { "Chat sub-dimensions" }
            p.note { "The judges' five chat dimensions, 0-100." }
            (dimensions)
        }
    }
}

/// A round axis maximum at or above `x` (1, 2, 5 times a power of ten).
fn nice_max(x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(x.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= x {
            return m * p;
        }
    }
    10.0 * p
}
