//! The charts section (`#charts`); the chart primitives are `report::charts`.

use super::*;

impl SageReport {
    pub(super) fn charts_html(&self, summary: &Summary) -> String {
        let models = &summary.models;
        let mean = |m: &Option<Metric>| m.map(|m| m.mean);
        let mut out = String::new();
        out.push_str("<h3>Execution gap</h3><p class=\"note\">Per model: classification accuracy (Acc_cls), path similarity (Sim_path) and action correctness (Acc_action), 0-100. Knowing the answer (classification) but not acting on it shows as the gap between the first and the last bar.</p>");
        let groups: Vec<BarGroup> = models
            .iter()
            .map(|m| BarGroup {
                model: m.model.clone(),
                values: vec![
                    mean(&m.all.acc_cls),
                    mean(&m.all.sim_path),
                    mean(&m.all.acc_action),
                ],
            })
            .collect();
        out.push_str(&charts::grouped_bars(
            "execution-gap",
            &["Acc_cls", "Sim_path", "Acc_action"],
            &groups,
            100.0,
            "",
        ));
        let by_oa: Vec<(&str, Option<f64>)> = models
            .iter()
            .map(|m| (m.model.as_str(), mean(&m.all.overall)))
            .collect();
        let focus = charts::focus(&by_oa);
        let focus_note = match &focus {
            Some(f) => format!(
                " <span data-chart-focus=\"{}\">{} models: the {} best and {} worst by OA in colour ({}), the others grey; click a model in the legend to colour or grey its line.</span>",
                f.len(),
                models.len(),
                charts::FOCUS_EACH,
                charts::FOCUS_EACH,
                escape(&f.join(", "))
            ),
            None => String::new(),
        };
        let _ = write!(
            out,
            "<h3>Turn depth</h3><p class=\"note\">Overall score (OA) at turns 1, 5, 10, 15 and each dialogue's final turn, one line per model.{focus_note}</p>"
        );
        let depths = ["t1", "t5", "t10", "t15", "final"];
        let lines: Vec<Line> = models
            .iter()
            .map(|m| Line {
                model: m.model.clone(),
                values: depths
                    .iter()
                    .map(|d| m.by_turn.get(*d).and_then(|g| mean(&g.overall)))
                    .collect(),
            })
            .collect();
        out.push_str(&charts::line_panels(
            "turn-depth",
            &["T1", "T5", "T10", "T15", "Final"],
            &[("OA", lines)],
            100.0,
            focus.as_deref(),
        ));
        let _ = write!(
            out,
            "<h3>Adversarial degradation</h3><p class=\"note\">OA, Logic and Chat at each adversarial level. Empathy resilience: Chat holding while Logic falls.{focus_note}</p>"
        );
        let levels = ["zero", "weak", "strong"];
        let panel = |get: fn(&GroupStats) -> Option<Metric>| -> Vec<Line> {
            models
                .iter()
                .map(|m| Line {
                    model: m.model.clone(),
                    values: levels
                        .iter()
                        .map(|l| {
                            m.by_adversarial
                                .get(*l)
                                .and_then(|g| get(g).map(|x| x.mean))
                        })
                        .collect(),
                })
                .collect()
        };
        out.push_str(&charts::line_panels(
            "adversarial",
            &levels,
            &[
                ("OA", panel(|g| g.overall)),
                ("Logic", panel(|g| g.logic)),
                ("Chat", panel(|g| g.chat)),
            ],
            100.0,
            focus.as_deref(),
        ));
        out.push_str("<h3>Format errors by kind</h3><p class=\"note\">Turns whose answer did not parse, per model and kind.</p>");
        let kinds: Vec<usize> = (0..FormatError::KINDS.len())
            .filter(|k| self.format_errors.values().any(|c| c[*k] > 0))
            .collect();
        let kind_names: Vec<&str> = kinds.iter().map(|k| FormatError::KINDS[*k]).collect();
        let groups: Vec<BarGroup> = models
            .iter()
            .map(|m| {
                let counts = self
                    .format_errors
                    .get(&m.model)
                    .copied()
                    .unwrap_or_default();
                BarGroup {
                    model: m.model.clone(),
                    values: kinds.iter().map(|k| Some(counts[*k] as f64)).collect(),
                }
            })
            .collect();
        let most = groups
            .iter()
            .flat_map(|g| g.values.iter().flatten())
            .cloned()
            .fold(0.0, f64::max);
        if kinds.is_empty() {
            out.push_str("<p data-chart-empty=\"format-errors\">No format errors in this run.</p>");
        }
        out.push_str(&charts::grouped_bars(
            "format-errors",
            &kind_names,
            &groups,
            nice_max(most),
            " turns",
        ));
        out.push_str("<h3>Chat sub-dimensions</h3><p class=\"note\">The judges' five chat dimensions, 0-100.</p>");
        let groups: Vec<BarGroup> = models
            .iter()
            .map(|m| {
                let d = &m.all.chat_dimensions;
                BarGroup {
                    model: m.model.clone(),
                    values: vec![
                        mean(&d.linguistic_quality),
                        mean(&d.anthropomorphism_emotion),
                        mean(&d.content_utility),
                        mean(&d.user_satisfaction),
                        mean(&d.instruction_compliance),
                    ],
                }
            })
            .collect();
        out.push_str(&charts::grouped_bars(
            "chat-dimensions",
            &[
                "Linguistic",
                "Anthropomorphism",
                "Utility",
                "Satisfaction",
                "Compliance",
            ],
            &groups,
            100.0,
            "",
        ));
        out
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
