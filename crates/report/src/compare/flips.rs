//! A flipped dialogue's two transcripts side by side: one table, baseline on the left and the
//! current run on the right, one row per turn (the customer's message, the agent's reply, its
//! action and path beside the reference, the turn's scores). Rendered with maud as the records
//! are read, so every text of a record is escaped.

use maud::{Markup, html};
use sage_core::protocol::{DialogueRecord, ServiceOutcome, TurnRecord};
use sage_core::scoring::summary::{counted_scores, reached_target};
use std::collections::HashMap;

/// The side-by-side transcripts of some flipped dialogues, by dialogue id.
#[derive(Debug, Clone, Default)]
pub struct FlipTranscripts {
    views: HashMap<String, Markup>,
}

impl FlipTranscripts {
    /// None yet.
    pub fn new() -> FlipTranscripts {
        FlipTranscripts::default()
    }

    /// Renders one dialogue's `baseline` and `current` records side by side (`runs`: the
    /// baseline's and the current run's ids, for the headings).
    pub fn add(&mut self, baseline: &DialogueRecord, current: &DialogueRecord, runs: (&str, &str)) {
        self.views.insert(
            current.job.dialogue_id.clone(),
            side_by_side(baseline, current, runs),
        );
    }

    /// The view of dialogue `id`, if it was added.
    pub fn get(&self, id: &str) -> Option<&Markup> {
        self.views.get(id)
    }

    /// Dialogues added.
    pub fn len(&self) -> usize {
        self.views.len()
    }

    /// Whether none was added.
    pub fn is_empty(&self) -> bool {
        self.views.is_empty()
    }
}

/// `table.side-by-side`: a heading per run, then one `tr[data-turn]` per turn with
/// `td.baseline` and `td.current`.
fn side_by_side(baseline: &DialogueRecord, current: &DialogueRecord, runs: (&str, &str)) -> Markup {
    let turns = baseline.turns.len().max(current.turns.len());
    html! {
        table.side-by-side {
            thead {
                tr {
                    th.num { "Turn" }
                    th.baseline { "Baseline " code { (runs.0) } br; span.ending { (ending(baseline)) } }
                    th.current { "Current " code { (runs.1) } br; span.ending { (ending(current)) } }
                }
            }
            tbody {
                @for i in 0..turns {
                    tr data-turn=(i + 1) {
                        td.num { (i + 1) }
                        td.baseline { (turn_or_none(baseline.turns.get(i))) }
                        td.current { (turn_or_none(current.turns.get(i))) }
                    }
                }
            }
        }
    }
}

/// How a dialogue ended, whether it reached its target action, its mean Overall.
fn ending(record: &DialogueRecord) -> String {
    let scores: Vec<f64> = counted_scores(record).map(|s| s.overall).collect();
    let mean = if scores.is_empty() {
        "no scored turn".to_string()
    } else {
        format!(
            "OA {:.2} over {} scored turns",
            scores.iter().sum::<f64>() / scores.len() as f64,
            scores.len()
        )
    };
    format!(
        "ended {} · target action {} · {mean}",
        record.end.name(),
        if reached_target(record) {
            "reached"
        } else {
            "not reached"
        }
    )
}

fn turn_or_none(t: Option<&TurnRecord>) -> Markup {
    match t {
        Some(t) => turn(t),
        None => html! { span.muted { "(the dialogue had ended)" } },
    }
}

/// One turn: `div.turn` (also `.differs` when the agent's path or action is not the
/// reference's, or it broke the format).
fn turn(t: &TurnRecord) -> Markup {
    let reference = match &t.reference {
        Some(Ok(route)) => Some(route),
        _ => None,
    };
    let differs = match (&t.outcome, reference) {
        (ServiceOutcome::Valid { turn }, Some(r)) => turn.path != r.path || turn.action != r.action,
        (ServiceOutcome::FormatError { .. }, _) => true,
        _ => false,
    };
    html! {
        div.turn.differs[differs] {
            p.customer { b { "Customer " } (t.user_message) }
            @match &t.outcome {
                ServiceOutcome::Valid { turn } => {
                    p.agent { b { "Agent " } (turn.chat) }
                    p.route {
                        "action "
                        code.diff[reference.is_some_and(|r| r.action != turn.action)] { (turn.action) }
                        " · path "
                        code.diff[reference.is_some_and(|r| r.path != turn.path)] { (turn.path.join(">")) }
                        @if let Some(r) = reference {
                            br;
                            span.muted { "reference " code { (r.action) } " · " code { (r.path.join(">")) } }
                        }
                    }
                }
                ServiceOutcome::FormatError { error, chat } => {
                    p.agent { b { "Agent " } (chat) }
                    p.bad { "format error: " (error.to_string()) }
                }
                ServiceOutcome::InfraError { error } => {
                    p.bad { "agent not reached: " (error) }
                }
            }
            p.scores {
                @if let Some(s) = &t.scores {
                    (format!("OA {:.2} · Logic {:.2} · Chat {:.2}", s.overall, s.logic, s.chat))
                } @else if t.infra_error.is_some() || matches!(t.outcome, ServiceOutcome::InfraError { .. }) {
                    "not scored (infrastructure error)"
                } @else {
                    "not judged"
                }
            }
        }
    }
}
