//! What a model's calls met of its provider's limits over a run, from the call records (not in
//! summary.json, which holds only what the same run would give again: refusals and waits depend
//! on the moment). Shown in the SAGE and the support-desk reports' model tables.

use maud::{Markup, html};
use sage_core::protocol::CallRecord;

/// One model's (or model and role's) sums.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct LimitsMet {
    /// Attempts made (calls and their retries; cache hits left out).
    pub attempts: u64,
    /// Attempts the provider refused for its rate limit (HTTP 429).
    pub refused: u64,
    /// Milliseconds the attempts waited for a grant of the limit.
    pub wait_ms: u64,
}

impl LimitsMet {
    /// Adds a call (a cache hit made no attempt).
    pub fn add(&mut self, call: &CallRecord) {
        if call.cached {
            return;
        }
        self.attempts += u64::from(call.attempts);
        self.refused += u64::from(call.refused);
        self.wait_ms = self.wait_ms.saturating_add(call.limit_wait_ms);
    }

    /// Adds another's sums.
    pub fn merge(&mut self, other: &LimitsMet) {
        self.attempts += other.attempts;
        self.refused += other.refused;
        self.wait_ms = self.wait_ms.saturating_add(other.wait_ms);
    }

    /// Whether the provider refused more than 1% of the attempts (the alert's threshold).
    pub fn refused_often(&self) -> bool {
        self.refused as f64 > 0.01 * self.attempts as f64
    }

    /// The two table headers, for [`LimitsMet::cells`].
    pub fn headers() -> Markup {
        html! {
            th.num title="Attempts the provider refused for its rate limit (HTTP 429), of all attempts" { "Refused (429)" }
            th.num title="Time the calls waited for the provider limit's grant (slots, pauses, rates), summed over calls" { "Waited for limits" }
        }
    }

    /// The two table cells: refusals of attempts, and the summed wait.
    pub fn cells(&self) -> Markup {
        html! {
            td.num data-fact="refused" data-value=(self.refused) {
                (self.refused) " of " (self.attempts)
                @if self.refused > 0 {
                    " (" (format!("{:.1}%", 100.0 * self.refused as f64 / self.attempts.max(1) as f64)) ")"
                }
            }
            td.num data-fact="limit-wait" data-value=(self.wait_ms) { (wait_text(self.wait_ms)) }
        }
    }
}

/// The line naming the models refused on more than 1% of their attempts (nothing when none).
pub fn refused_line<'a>(models: impl Iterator<Item = (&'a str, LimitsMet)>) -> Markup {
    let refused: Vec<(&str, LimitsMet)> = models.filter(|(_, m)| m.refused_often()).collect();
    html! {
        @if !refused.is_empty() {
            p.bad data-refused-models=(refused.len()) {
                "Provider limits refused more than 1% of the attempts of "
                @for (i, (model, m)) in refused.iter().enumerate() {
                    @if i > 0 { ", " }
                    (model) " (" (m.refused) " of " (m.attempts) ")"
                }
                ": lower its requests_per_minute / tokens_per_minute, or give it a key of its own (docs/models.md, Limits)."
            }
        }
    }
}

/// A summed wait, readable: `-` for none, seconds under two minutes, else minutes.
fn wait_text(ms: u64) -> String {
    match ms {
        0 => "-".into(),
        ms if ms < 120_000 => format!("{:.1} s", ms as f64 / 1000.0),
        ms => format!("{:.1} min", ms as f64 / 60_000.0),
    }
}
