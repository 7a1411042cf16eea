//! Two transcripts of one case side by side: one table, one row per turn (the customer's
//! message, the agent's reply, its action and path beside the reference, the turn's scores).
//! Rendered with maud as the records are read, so every text of a record is escaped. Used by
//! the comparison's flips (baseline and current) and a fork's flipped dialogues (the parent
//! and its fix).

use maud::{Markup, html};
use sage_core::protocol::{DialogueRecord, ServiceOutcome, TurnRecord};
use sage_core::scoring::summary::{counted_scores, reached_target};

/// The style of `table.side-by-side`.
pub const CSS: &str = "\
table.side-by-side{border-collapse:collapse;width:100%;table-layout:fixed;margin:6px 0 14px;font-size:13px}\
table.side-by-side th,table.side-by-side td{border:1px solid var(--line);padding:4px 8px;vertical-align:top;text-align:left}\
table.side-by-side th.num,table.side-by-side td.num{width:48px;text-align:right}\
table.side-by-side th{background:var(--panel)}\
table.side-by-side p{margin:2px 0;white-space:pre-wrap;overflow-wrap:anywhere}\
.turn.differs{border-left:3px solid var(--bad);padding-left:6px}\
code.diff{color:var(--bad);font-weight:600}\
span.ending{font-weight:normal;color:var(--muted);font-size:12px}";

/// A column's heading: a word (`Baseline`, `Parent`) and the run or dialogue id after it.
pub type Heading<'a> = (&'a str, &'a str);

/// `table.side-by-side`: a heading per side (with how its dialogue ended), then one
/// `tr[data-turn]` per turn with `td.baseline` (the left side) and `td.current` (the right).
pub fn side_by_side(
    baseline: &DialogueRecord,
    current: &DialogueRecord,
    headings: [Heading<'_>; 2],
) -> Markup {
    let turns = baseline.turns.len().max(current.turns.len());
    html! {
        table.side-by-side {
            thead {
                tr {
                    th.num { "Turn" }
                    th.baseline { (headings[0].0) " " code { (headings[0].1) } br; span.ending { (ending(baseline)) } }
                    th.current { (headings[1].0) " " code { (headings[1].1) } br; span.ending { (ending(current)) } }
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
