//! The judges section (`#judges`).

use super::*;
use maud::{Markup, html};

/// A share as `NN%`, `—` when undefined.
fn pct(x: Option<f64>) -> String {
    x.map_or("—".to_string(), |x| format!("{}%", num(x)))
}

/// A kappa with three decimals, `—` when undefined.
fn kappa(x: Option<f64>) -> String {
    x.map_or("—".to_string(), |x| format!("{x:.3}"))
}

/// A raw value for `data-value`, empty when undefined.
fn value(x: Option<f64>) -> String {
    x.map(raw).unwrap_or_default()
}

impl SageReport {
    pub(super) fn judges_html(&self, summary: &Summary) -> Markup {
        let pairs: Vec<(usize, usize)> = judge_pairs(self.panel).collect();
        let none = Confusion::default();
        let (splits, _) = self.splits();
        html! {
            p.note {
                "Per scenario and field: the share of turns where the judges gave the same value, the "
                "share where their consensus equals the customer's true value (the job's), Cohen's "
                "kappa between each pair of judges (their mean: Light's kappa) and between the "
                "consensus and the truth, and how many independent votes the panel is worth "
                "(effective judges: Kish's n / (1 + (n - 1) r) from the mean correlation r of the "
                "judges' errors; a panel of 3 or 5 worth fewer than 1.5 votes like one judge)."
            }
            @for (scenario, fields) in &self.judges {
                @let agreement = summary.judge_agreement.get(scenario);
                h3 { (scenario) }
                @if let Some(a) = agreement.filter(|a| a.judges >= 3) {
                    @let few: Vec<&String> = (a.fields.iter())
                        .filter(|(_, f)| f.effective_judges.is_some_and(|n| n < sage_core::scoring::summary::FEW_EFFECTIVE_JUDGES))
                        .map(|(name, _)| name)
                        .collect();
                    @if !few.is_empty() {
                        p.bad data-few-effective-judges=(few.len()) {
                            "On " (few.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "))
                            ", the panel of " (a.judges) " votes like fewer than 1.5 judges: their errors go "
                            "together, so agreement there is not independent confirmation."
                        }
                    }
                }
                table.data.judges data-scenario=(scenario) {
                    tr {
                        th { "Field" } th.num { "Unanimous" } th.num { "Consensus = truth" }
                        @for (i, (a, b)) in pairs.iter().enumerate() {
                            th.num { "κ " @if i == 0 { "judges " } (a + 1) "-" (b + 1) }
                        }
                        th.num { "κ mean" } th.num { "κ consensus-truth" }
                        th.num title="independent votes the panel is worth on the field" { "Effective judges" }
                    }
                    @for (name, f) in fields {
                        @let a = agreement.and_then(|a| a.fields.get(name));
                        @let unanimous = a.map(|a| a.unanimous);
                        @let truth = a.and_then(|a| a.matches_truth);
                        tr data-field=(name) {
                            td { (name) }
                            td.num data-value=(value(unanimous)) { (pct(unanimous)) }
                            td.num data-value=(value(truth)) { (pct(truth)) }
                            @for p in (0..pairs.len()).map(|i| f.pairs.get(i).unwrap_or(&none)) {
                                td.num data-value=(value(p.kappa())) { (kappa(p.kappa())) }
                            }
                            td.num data-metric="kappa" data-value=(value(f.kappa())) { (kappa(f.kappa())) }
                            td.num data-value=(value(f.truth.kappa())) { (kappa(f.truth.kappa())) }
                            @let effective = a.and_then(|a| a.effective_judges);
                            @let panel = agreement.map_or(0, |a| a.judges);
                            @let few = panel >= 3 && effective.is_some_and(|n| n < sage_core::scoring::summary::FEW_EFFECTIVE_JUDGES);
                            td.num.bad[few] data-metric="effective-judges" data-value=(value(effective))
                                title={ "of " (panel) " judges; error correlation " (a.and_then(|a| a.error_correlation).map_or("—".to_string(), |r| format!("{r:.2}"))) } {
                                (effective.map_or("—".to_string(), |n| format!("{n:.1} of {panel}")))
                            }
                        }
                    }
                }
            }
            h3 { "Turns where the judges split" }
            p data-split-turns=(self.split_turns) {
                (self.split_turns) " turns had a field the judges did not agree on"
                @if self.split_turns as usize > self.splits.len() {
                    "; a sample of " (self.splits.len()) " (turn, field) pairs is listed"
                }
                "."
            }
            @if !splits.is_empty() {
                details {
                    summary { "The split turns, linked to their transcripts" }
                    div.table-box {
                    table.data.splits {
                        tr {
                            th { "Dialogue" } th.num { "Turn" } th { "Model" } th { "Field" }
                            @for i in 1..=self.panel { th { "Judge " (i) } }
                            th { "Truth" }
                        }
                        @for s in splits {
                            tr data-split-dialogue=(s.dialogue) {
                                td { a href=(dialogue_anchor(&s.dialogue)) { (s.dialogue) } }
                                td.num { (s.turn) }
                                td { (s.model) }
                                td { (s.field) }
                                @for i in 0..self.panel {
                                    @let v = s.votes.get(i).cloned().flatten();
                                    td class=[(v != s.truth).then_some("bad")] { (v.as_deref().unwrap_or("—")) }
                                }
                                td { (s.truth.as_deref().unwrap_or("—")) }
                            }
                        }
                    }
                    }
                }
            }
            (self.people_html(summary))
            (fidelity_html(summary))
            (sensitivity_html(summary))
        }
    }

    /// The judges against people (`sage judges calibrate`), or how to get there.
    fn people_html(&self, summary: &Summary) -> Markup {
        html! {
            h3 { "Judges against people" }
            @match &self.calibration {
                None => p.note data-calibration="none" {
                    "No labels yet. Label a sample of turns in " a href="labels.html" { "labels.html" }
                    " (offline, blind to the judges), then run "
                    code { "sage judges calibrate DIR --labels labels.jsonl" }
                    " (DIR: this report's folder, the run " (self.info.run_id) ")"
                    " and build this report again (docs/judges.md)."
                },
                Some(c) => {
                    p.note data-calibration=(c.turns) {
                        (c.labels) " labels by " (c.labellers.join(", ")) " on " (c.turns)
                        " judged turns. Krippendorff's alpha of people and judges together: "
                        "classification " (kappa(c.alpha_classification)) " (nominal), chat "
                        (kappa(c.alpha_chat)) " (ordinal). Trust a panel's Logic from 0.8, "
                        "tentatively from 0.667."
                        @let worth: Vec<f64> = c.fields.iter().filter_map(|f| f.effective_judges).collect();
                        @if let (Some(low), Some(high)) = (worth.iter().copied().reduce(f64::min), worth.iter().copied().reduce(f64::max)) {
                            " Against the people's labels the panel of " (self.panel) " is worth "
                            (format!("{low:.1}")) " to " (format!("{high:.1}"))
                            " independent votes per field (effective judges, from the correlation of "
                            "the judges' errors)."
                        }
                    }
                    table.data.calibration {
                        tr {
                            th { "Judge" } th.num { "Accuracy (fields)" } th.num { "κ vs people" }
                            th.num { "Accuracy (chat)" } th.num { "Pairs" }
                        }
                        @for j in &c.judges {
                            tr data-judge=(j.judge) {
                                td { (j.judge) }
                                td.num { (pct(j.classification_accuracy.map(|x| 100.0 * x))) }
                                td.num { (kappa(j.kappa)) }
                                td.num { (pct(j.chat_accuracy.map(|x| 100.0 * x))) }
                                td.num { (j.pairs) }
                            }
                        }
                    }
                    table.data.corrected-logic {
                        tr {
                            th { "Model" } th.num { "Logic, judges" } th.num { "Logic, corrected by people" }
                            th.num { "Labelled turns" }
                        }
                        @for l in leaderboard::in_leaderboard_order(summary, &c.logic, |l| &l.model) {
                            tr data-model=(l.model) {
                                td { (l.model) }
                                td.num { (num(l.ppi.naive)) " ± " (num(l.ppi.naive_half_width)) }
                                td.num { (num(l.ppi.estimate)) " ± " (num(l.ppi.half_width)) }
                                td.num { (l.ppi.labelled) }
                            }
                        }
                    }
                    p.note {
                        "Corrected: prediction-powered inference, each scenario's turns (those the "
                        "judges split on apart) corrected by how far the judges were from the "
                        "people there; 95% intervals."
                    }
                }
            }
        }
    }
}

/// The customer's fidelity per customer model and adversarial level, and per model under test.
fn fidelity_html(summary: &Summary) -> Markup {
    let f = &summary.customer_fidelity;
    html! {
        @if !f.is_empty() {
            h3 { "Customer fidelity" }
            p.note {
                "Whether the simulated customer expressed the case's intent and stayed in it: the "
                "judged turns whose consensus differs from the case's true fields (off intent), the "
                "dialogues the customer ended before the target action, and the customer's lines "
                "that repeat an earlier one. A model's low Logic beside a high off-intent share is "
                "the customer's doing as much as the model's. Off-case lines: the customer's lines "
                "that assert what the case does not hold (another intent's words, implying another "
                "value of a field the case fixes); failures after off-case: the share of the "
                "agent's failed turns (Logic below 100) at or after such a line, possibly the "
                "simulator's doing ("
                code { "sage report DIR --exclude-off-case" } " leaves those dialogues out)."
            }
            @let by_agent = leaderboard::in_leaderboard_order(summary, &f.by_agent, |r| {
                r.service_model.as_deref().unwrap_or_default()
            });
            @for (rows, by) in [(f.by_customer.iter().collect::<Vec<_>>(), "Level"), (by_agent, "Model under test")] {
                @let guarded = rows.iter().any(|r| r.retried > 0);
                table.data.fidelity data-by=(by) {
                    tr {
                        th { "Customer" } th { (by) } th.num { "Dialogues" } th.num { "Judged turns" }
                        th.num { "Off intent" } th.num { "Ended early" } th.num { "Repeated lines" }
                        th.num { "Off-case lines" } th.num { "Failures after off-case" }
                        @if guarded { th.num { "Re-asked turns" } }
                    }
                    @for r in rows {
                        tr {
                            td { (r.customer_model) }
                            td {
                                @if let Some(level) = r.adversarial { (level) }
                                @else { (r.service_model.as_deref().unwrap_or("")) }
                            }
                            td.num { (r.dialogues) }
                            td.num { (r.judged_turns) }
                            td.num data-value=(value(r.off_intent)) { (pct(r.off_intent)) }
                            td.num data-value=(raw(r.ended_early)) { (pct(Some(r.ended_early))) }
                            td.num data-value=(value(r.repeated)) { (pct(r.repeated)) }
                            td.num data-off-case=(r.off_case_lines) {
                                (r.off_case_lines) " in " (r.off_case_dialogues) " dialogues"
                            }
                            td.num.bad[r.possibly_simulator.is_some_and(|p| p >= 10.0)]
                                data-value=(value(r.possibly_simulator))
                                title={ (r.failures_after_off_case) " of " (r.failures) " failed turns" } {
                                (pct(r.possibly_simulator))
                            }
                            @if guarded { td.num { (r.retried) } }
                        }
                    }
                }
            }
        }
    }
}

/// Each model's OA under each customer simulator (`user_models`), one row a model in the
/// leaderboard's order: its OA under each, the difference from the first with its interval,
/// and whether it moved beyond its noise floor. Nothing with one simulator.
pub(super) fn sensitivity_html(summary: &Summary) -> Markup {
    let rows = leaderboard::in_leaderboard_order(summary, &summary.simulator_sensitivity, |m| {
        m.model.as_str()
    });
    let Some(first) = rows.first() else {
        return html! {};
    };
    let names: Vec<&str> = first
        .simulators
        .iter()
        .map(|s| s.user_model.as_str())
        .collect();
    let moved = rows.iter().filter(|m| m.moved()).count();
    let signed = |x: f64| format!("{x:+.2}");
    html! {
        h3 #simulators { "Customer simulators" }
        p.note data-simulators=(names.len()) data-moved=(moved) {
            "Every case was played under " (names.len()) " customer simulators with the same seed; "
            "the leaderboard ranks under the first, " (names[0]) ". Δ: the model's OA under "
            "another simulator minus under the first, paired over the same cases, with its 95% "
            "interval. Moved: the interval leaves out 0 and the Δ is larger than the noise floor "
            "(what a rerun could move the OA by): the model's result depends on who plays the "
            "customer. " (moved) " of " (rows.len()) " models moved."
        }
        div.table-box {
        table.data.sensitivity {
            tr {
                th { "Model" }
                @for n in &names { th.num { "OA, " (n) } }
                @for n in &names[1..] { th.num { "Δ " (n) } }
                th.num { "Noise floor" }
            }
            @for m in &rows {
                tr data-model=(m.model) data-moved=(m.moved()) {
                    td { (m.model) }
                    @for s in &m.simulators {
                        td.num data-value=(value(s.oa.map(|o| o.mean))) {
                            (num_or_dash(s.oa.map(|o| o.mean)))
                        }
                    }
                    @for s in &m.simulators[1..] {
                        @match s.difference {
                            Some(d) => td.num.bad[s.moved] data-value=(raw(d.delta))
                                title={ "95% interval " (signed(d.ci_low)) " to " (signed(d.ci_high)) } {
                                (signed(d.delta)) " [" (signed(d.ci_low)) ", " (signed(d.ci_high)) "]"
                                @if s.moved { " moved" }
                            },
                            None => td.num { "—" },
                        }
                    }
                    td.num { (num_or_dash(m.noise_floor)) }
                }
            }
        }
        }
    }
}

fn num_or_dash(x: Option<f64>) -> String {
    x.map_or_else(|| "—".into(), |x| format!("{x:.2}"))
}
