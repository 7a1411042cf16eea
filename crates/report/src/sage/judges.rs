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
                "consensus and the truth."
            }
            @for (scenario, fields) in &self.judges {
                @let agreement = summary.judge_agreement.get(scenario);
                h3 { (scenario) }
                table.data.judges data-scenario=(scenario) {
                    tr {
                        th { "Field" } th.num { "Unanimous" } th.num { "Consensus = truth" }
                        @for (i, (a, b)) in pairs.iter().enumerate() {
                            th.num { "κ " @if i == 0 { "judges " } (a + 1) "-" (b + 1) }
                        }
                        th.num { "κ mean" } th.num { "κ consensus-truth" }
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
    }
}
