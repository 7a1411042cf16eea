//! The run header section (`#run`).

use super::*;

impl SageReport {
    pub(super) fn run_html(&self, summary: &Summary) -> String {
        let info = &self.info;
        let c = &info.config;
        let mut out = String::new();
        let _ = write!(
            out,
            "<table class=\"data run-facts\"><tr><th>Run id</th><td data-fact=\"run-id\">{}</td></tr><tr><th>Started</th><td data-fact=\"date\">{}</td></tr><tr><th>Seed</th><td data-fact=\"seed\">{}</td></tr><tr><th>Dialogues</th><td data-fact=\"dialogues\">{} of {} planned</td></tr><tr><th>Repeats</th><td>{}</td></tr><tr><th>Most turns</th><td>{}</td></tr><tr><th>Judged turns</th><td data-fact=\"judged-turns\">{}</td></tr><tr><th>SAGE-RS</th><td>{}</td></tr></table>",
            escape(&info.run_id),
            escape(&info.created_at),
            c.seed,
            summary.dialogues,
            info.jobs,
            c.repeats,
            c.max_turns,
            escape(&crate::scoring::leaderboard::judged_turns(summary)),
            escape(&info.sage_version)
        );
        out.push_str("<h3>Scenarios</h3><table class=\"data scenarios\"><tr><th>Scenario</th><th>SHA-256 of its YAML</th><th class=\"num\">Routes</th><th class=\"num\">Dialogues</th></tr>");
        for (id, hash) in &info.scenarios {
            let routes = self
                .sop(id)
                .map_or("—".to_string(), |s| s.routes().len().to_string());
            let dialogues: usize = summary.coverage.get(id).map_or(0, |c| c.values().sum());
            let _ = write!(
                out,
                "<tr data-scenario=\"{}\"><td>{}</td><td><code title=\"{}\">{}</code></td><td class=\"num\">{routes}</td><td class=\"num\">{dialogues}</td></tr>",
                escape(id),
                escape(id),
                escape(hash),
                escape(&hash.chars().take(16).collect::<String>())
            );
        }
        out.push_str("</table><h3>Models</h3><table class=\"data models\"><tr><th>Model</th><th>Role</th><th class=\"num\">Calls</th><th class=\"num\">Errors</th><th class=\"num\">Cached</th><th class=\"num\">Input tokens</th><th class=\"num\">Output tokens</th><th class=\"num\">Cost (USD)</th></tr>");
        let mut roles: IndexMap<&str, Vec<&str>> = IndexMap::new();
        for m in &c.service_models {
            roles.entry(m).or_default().push("under test");
        }
        roles.entry(&c.user_model).or_default().push("customer");
        for m in &c.judge_models {
            roles.entry(m).or_default().push("judge");
        }
        for model in summary.calls_by_model.keys() {
            roles.entry(model).or_default();
        }
        for (model, role) in &roles {
            let sim = if info.simulated_models.iter().any(|m| m == model) {
                " <span class=\"tag sim\">simulated</span>"
            } else {
                ""
            };
            let t = summary
                .calls_by_model
                .get(*model)
                .copied()
                .unwrap_or_default();
            let _ = write!(
                out,
                "<tr data-model=\"{}\"><td>{}{sim}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\" data-value=\"{}\">{:.4}</td></tr>",
                escape(model),
                escape(model),
                escape(&role.join(", ")),
                t.calls,
                t.errors,
                t.cached,
                t.input_tokens,
                t.output_tokens,
                raw(t.cost_usd),
                t.cost_usd
            );
        }
        out.push_str("</table><h3>Calls by role, per model under test</h3><p class=\"note\">The calls made in each model's dialogues: its own (service), the customer's and the judges'.</p><table class=\"data calls\"><tr><th>Model under test</th><th>Role</th><th class=\"num\">Calls</th><th class=\"num\">Errors</th><th class=\"num\">Input tokens</th><th class=\"num\">Of which cached</th><th class=\"num\">Output tokens</th><th class=\"num\">Cost (USD)</th><th class=\"num\">Tokens / scored turn</th><th class=\"num\">Cost / scored turn (USD)</th></tr>");
        for m in &summary.models {
            for (role, t) in &m.calls.by_role {
                let per_turn = m.calls.per_scored_turn.get(role);
                let _ = write!(
                    out,
                    "<tr data-model=\"{}\" data-role=\"{}\"><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\" data-value=\"{}\">{:.4}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                    escape(&m.model),
                    escape(role),
                    escape(&m.model),
                    escape(role),
                    t.calls,
                    t.errors,
                    t.input_tokens,
                    t.cached_input_tokens,
                    t.output_tokens,
                    raw(t.cost_usd),
                    t.cost_usd,
                    per_turn.map_or("-".into(), |p| format!(
                        "{:.0}",
                        p.input_tokens + p.output_tokens
                    )),
                    per_turn.map_or("-".into(), |p| format!("{:.6}", p.cost_usd)),
                );
            }
        }
        out.push_str("</table><h3>Infrastructure errors</h3>");
        let total: u64 = self.infra_turns.values().sum();
        if total == 0 {
            out.push_str("<p class=\"good\" data-infra-errors=\"0\">None: every turn reached its models.</p>");
        } else {
            let _ = write!(
                out,
                "<p class=\"bad\" data-infra-errors=\"{total}\">{total} turns were not scored for infrastructure reasons.</p><table class=\"data infra\"><tr><th>Model under test</th><th class=\"num\">Turns</th><th class=\"num\">Dialogues ended by one</th></tr>"
            );
            for (model, n) in &self.infra_turns {
                let ended = summary
                    .models
                    .iter()
                    .find(|m| &m.model == model)
                    .and_then(|m| m.end_reasons.get("infra_error").copied())
                    .unwrap_or(0);
                let _ = write!(
                    out,
                    "<tr data-model=\"{}\"><td>{}</td><td class=\"num\">{n}</td><td class=\"num\">{ended}</td></tr>",
                    escape(model),
                    escape(model)
                );
            }
            out.push_str("</table><ul class=\"infra-examples\">");
            for e in &self.infra_examples {
                let _ = write!(
                    out,
                    "<li><a href=\"{}\">{}</a> ({}): <code>{}</code></li>",
                    escape(&dialogue_anchor(&e.dialogue)),
                    escape(&e.dialogue),
                    escape(&e.model),
                    escape(&e.error)
                );
            }
            out.push_str("</ul>");
        }
        out
    }
}
