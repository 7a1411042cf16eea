//! The run header section (`#run`): the run's facts in one table, then, folded, its scenarios,
//! models, calls and infrastructure errors (a count of the errors stays visible).

use super::*;
use maud::{Markup, html};

impl SageReport {
    pub(super) fn run_html(&self, summary: &Summary) -> Markup {
        let info = &self.info;
        let c = &info.config;
        let mut roles: IndexMap<&str, Vec<&str>> = IndexMap::new();
        for m in leaderboard::in_leaderboard_order(summary, &c.service_models, |m| m) {
            roles.entry(m).or_default().push("under test");
        }
        for m in c.customers() {
            roles.entry(m).or_default().push("customer");
        }
        for m in &c.judge_models {
            roles.entry(m).or_default().push("judge");
        }
        for model in summary.calls_by_model.keys() {
            roles.entry(model).or_default();
        }
        let infra_total: u64 = self.infra_turns.values().sum();
        html! {
            table.data.run-facts {
                tr {
                    th { "Run id" } th { "Started" } th { "Seed" } th { "Dialogues" } th { "Repeats" }
                    th { "Most turns" } th { "Judged turns" } th { "Customer simulator" } th { "SAGE-RS" }
                }
                tr {
                    td data-fact="run-id" { (info.run_id) }
                    td data-fact="date" { (info.created_at) }
                    td data-fact="seed" { (c.seed) }
                    td data-fact="dialogues" {
                        (summary.dialogues) " of " (info.jobs) " planned"
                        @if let Some(n) = summary.off_case_excluded {
                            br;
                            span.bad data-off-case-excluded=(n) {
                                (n) " with an off-case customer left out (--exclude-off-case)"
                            }
                        }
                    }
                    td { (c.repeats) }
                    td { (c.max_turns) }
                    td data-fact="judged-turns" { (sage_core::scoring::leaderboard::judged_turns(summary)) }
                    @match &summary.simulator {
                        Some(s) => td data-fact="simulator" title={ "prompt SHA-256 " (s.prompt_sha256) "; parameters " (serde_json::to_string(&s.parameters).unwrap_or_default()) } {
                            (s.line())
                            @if let Some(m) = summary.simulator_sensitivity.first() {
                                " (ranked under; every case also played by "
                                (m.simulators[1..].iter().map(|s| s.user_model.as_str()).collect::<Vec<_>>().join(", "))
                                ": " a href="#simulators" { "Customer simulators" } ")"
                            }
                        },
                        None => td data-fact="simulator" { (info.config.user_model) " (not recorded)" },
                    }
                    td { (info.sage_version) }
                }
            }
            @if infra_total == 0 {
                p.good data-infra-errors="0" { "No infrastructure error: every turn reached its models." }
            } @else {
                p.bad data-infra-errors=(infra_total) {
                    (infra_total) " turns were not scored for infrastructure reasons (below, under "
                    "Infrastructure errors)."
                }
            }
            (crate::limits::refused_line(self.limits.iter().map(|(m, l)| (m.as_str(), *l))))
            p.labels-link { a href=(crate::label::LABELS_HTML) { "Label a sample of turns (labels.html)" } }
            details.run-details {
                summary { "Scenarios, models, calls and infrastructure errors" }
                h3 { "Scenarios" }
                table.data.scenarios {
                    tr { th { "Scenario" } th { "SHA-256 of its YAML" } th.num { "Routes" } th.num { "Dialogues" } }
                    @for (id, hash) in &info.scenarios {
                        tr data-scenario=(id) {
                            td { (id) }
                            td { code title=(hash) { (hash.chars().take(16).collect::<String>()) } }
                            td.num {
                                @match self.sop(id) {
                                    Some(s) => (s.routes().len()),
                                    None => "—",
                                }
                            }
                            td.num { (summary.coverage.get(id).map_or(0, |c| c.values().sum::<usize>())) }
                        }
                    }
                }
                h3 { "Models" }
                table.data.models {
                    tr {
                        th { "Model" } th { "Role" } th.num { "Calls" } th.num { "Errors" } th.num { "Cached" }
                        th.num { "Input tokens" } th.num { "Output tokens" } th.num { "Cost (USD)" }
                        (crate::limits::LimitsMet::headers())
                    }
                    @for (model, role) in &roles {
                        @let t = summary.calls_by_model.get(*model).copied().unwrap_or_default();
                        @let met = self.limits.get(*model).copied().unwrap_or_default();
                        tr data-model=(model) {
                            td {
                                (model)
                                @if info.simulated_models.iter().any(|m| m == model) {
                                    " " span.tag.sim { "simulated" }
                                }
                            }
                            td { (role.join(", ")) }
                            td.num { (t.calls) } td.num { (t.errors) } td.num { (t.cached) }
                            td.num { (t.input_tokens) } td.num { (t.output_tokens) }
                            td.num data-value=(raw(t.cost_usd)) { (format!("{:.4}", t.cost_usd)) }
                            (met.cells())
                        }
                    }
                }
                h3 { "Calls by role, per model under test" }
                p.note { "The calls made in each model's dialogues: its own (service), the customer's and the judges'." }
                table.data.calls {
                    tr {
                        th { "Model under test" } th { "Role" } th.num { "Calls" } th.num { "Errors" }
                        th.num { "Input tokens" } th.num { "Of which cached" } th.num { "Output tokens" }
                        th.num { "Cost (USD)" } th.num { "Tokens / scored turn" } th.num { "Cost / scored turn (USD)" }
                    }
                    @for m in leaderboard::in_leaderboard_order(summary, &summary.models, |m| &m.model) {
                        @for (role, t) in &m.calls.by_role {
                            @let per_turn = m.calls.per_scored_turn.get(role);
                            tr data-model=(m.model) data-role=(role) {
                                td { (m.model) } td { (role) }
                                td.num { (t.calls) } td.num { (t.errors) } td.num { (t.input_tokens) }
                                td.num { (t.cached_input_tokens) } td.num { (t.output_tokens) }
                                td.num data-value=(raw(t.cost_usd)) { (format!("{:.4}", t.cost_usd)) }
                                td.num { (per_turn.map_or("-".into(), |p| format!("{:.0}", p.input_tokens + p.output_tokens))) }
                                td.num { (per_turn.map_or("-".into(), |p| format!("{:.6}", p.cost_usd))) }
                            }
                        }
                    }
                }
                h3 { "Infrastructure errors" }
                @if infra_total == 0 {
                    p.good { "None: every turn reached its models." }
                } @else {
                    table.data.infra {
                        tr { th { "Model under test" } th.num { "Turns" } th.num { "Dialogues ended by one" } }
                        @for (model, n) in leaderboard::in_leaderboard_order(summary, &self.infra_turns, |(m, _)| m) {
                            @let ended = summary.models.iter().find(|m| &m.model == model)
                                .and_then(|m| m.end_reasons.get("infra_error").copied()).unwrap_or(0);
                            tr data-model=(model) { td { (model) } td.num { (n) } td.num { (ended) } }
                        }
                    }
                    ul.infra-examples {
                        @for e in &self.infra_examples {
                            li {
                                a href=(dialogue_anchor(&e.dialogue)) { (e.dialogue) }
                                " (" (e.model) "): " code { (e.error) }
                            }
                        }
                    }
                }
            }
        }
    }
}
