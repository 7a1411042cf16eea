//! The judges section (`#judges`).

use super::*;

impl SageReport {
    pub(super) fn judges_html(&self, summary: &Summary) -> String {
        let mut out = String::from(
            "<p class=\"note\">Per scenario and field: the share of turns where the judges gave the same value, the share where their consensus equals the customer's true value (the job's), Cohen's kappa between each pair of judges (their mean: Light's kappa) and between the consensus and the truth.</p>",
        );
        let pct = |x: Option<f64>| x.map_or("—".to_string(), |x| format!("{}%", num(x)));
        let k = |x: Option<f64>| x.map_or("—".to_string(), |x| format!("{x:.3}"));
        let kv = |x: Option<f64>| x.map(raw).unwrap_or_default();
        let pairs = judge_pairs(self.panel).count();
        let pair_headers: String = judge_pairs(self.panel)
            .enumerate()
            .map(|(i, (a, b))| {
                let judges = if i == 0 { "judges " } else { "" };
                format!("<th class=\"num\">κ {judges}{}-{}</th>", a + 1, b + 1)
            })
            .collect();
        for (scenario, fields) in &self.judges {
            let agreement = summary.judge_agreement.get(scenario);
            let _ = write!(
                out,
                "<h3>{}</h3><table class=\"data judges\" data-scenario=\"{}\"><tr><th>Field</th><th class=\"num\">Unanimous</th><th class=\"num\">Consensus = truth</th>{pair_headers}<th class=\"num\">κ mean</th><th class=\"num\">κ consensus-truth</th></tr>",
                escape(scenario),
                escape(scenario)
            );
            for (name, f) in fields {
                let a = agreement.and_then(|a| a.fields.get(name));
                let _ = write!(
                    out,
                    "<tr data-field=\"{}\"><td>{}</td><td class=\"num\" data-value=\"{}\">{}</td><td class=\"num\" data-value=\"{}\">{}</td>",
                    escape(name),
                    escape(name),
                    kv(a.map(|a| a.unanimous)),
                    pct(a.map(|a| a.unanimous)),
                    kv(a.and_then(|a| a.matches_truth)),
                    pct(a.and_then(|a| a.matches_truth))
                );
                let none = Confusion::default();
                for p in (0..pairs).map(|i| f.pairs.get(i).unwrap_or(&none)) {
                    let _ = write!(
                        out,
                        "<td class=\"num\" data-value=\"{}\">{}</td>",
                        kv(p.kappa()),
                        k(p.kappa())
                    );
                }
                let _ = write!(
                    out,
                    "<td class=\"num\" data-metric=\"kappa\" data-value=\"{}\">{}</td><td class=\"num\" data-value=\"{}\">{}</td></tr>",
                    kv(f.kappa()),
                    k(f.kappa()),
                    kv(f.truth.kappa()),
                    k(f.truth.kappa())
                );
            }
            out.push_str("</table>");
        }
        let _ = write!(
            out,
            "<h3>Turns where the judges split</h3><p data-split-turns=\"{}\">{} turns had a field the judges did not agree on{}.</p>",
            self.split_turns,
            self.split_turns,
            if self.split_turns as usize > self.splits.len() {
                format!(
                    "; a sample of {} (turn, field) pairs is listed",
                    self.splits.len()
                )
            } else {
                String::new()
            }
        );
        let (splits, _) = self.splits();
        if !splits.is_empty() {
            out.push_str("<details><summary>The split turns, linked to their transcripts</summary><table class=\"data splits\"><tr><th>Dialogue</th><th class=\"num\">Turn</th><th>Model</th><th>Field</th>");
            for i in 1..=self.panel {
                let _ = write!(out, "<th>Judge {i}</th>");
            }
            out.push_str("<th>Truth</th></tr>");
            for s in splits {
                let _ = write!(
                    out,
                    "<tr data-split-dialogue=\"{}\"><td><a href=\"{}\">{}</a></td><td class=\"num\">{}</td><td>{}</td><td>{}</td>",
                    escape(&s.dialogue),
                    escape(&dialogue_anchor(&s.dialogue)),
                    escape(&s.dialogue),
                    s.turn,
                    escape(&s.model),
                    escape(&s.field)
                );
                for i in 0..self.panel {
                    let v = s.votes.get(i).cloned().flatten();
                    let class = if v != s.truth { " class=\"bad\"" } else { "" };
                    let _ = write!(
                        out,
                        "<td{class}>{}</td>",
                        escape(v.as_deref().unwrap_or("—"))
                    );
                }
                let _ = write!(
                    out,
                    "<td>{}</td></tr>",
                    escape(s.truth.as_deref().unwrap_or("—"))
                );
            }
            out.push_str("</table></details>");
        }
        out
    }
}
