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
                "the customer's doing as much as the model's."
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
                            @if guarded { td.num { (r.retried) } }
                        }
                    }
                }
            }
        }
    }
}
