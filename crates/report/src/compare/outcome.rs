//! Why a dialogue passed or failed, for the flips: kept per dialogue in a few numbers while the
//! runs are folded (its actions as indexes into the fold's list of action names), and told in
//! words when the dialogue flipped: "reached the target action Refund at turn 4 (ended
//! max_turns)", "never took the target action Refund; last action Reject at turn 8 (ended
//! max_turns)", "infrastructure error at turn 3 (ended infra_error)".

use indexmap::IndexSet;
use sage_core::protocol::{DialogueEnd, DialogueRecord, ServiceOutcome};

/// What decided whether a dialogue passed (reached its target action: the rule of
/// `sage_core::scoring::summary::reached_target`), in a few numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Outcome {
    /// How it ended.
    pub end: DialogueEnd,
    /// The job's target action (an index into the fold's actions).
    target: u32,
    /// The agent's last valid answer: its action and its turn.
    last: Option<(u32, u32)>,
    /// The turn from which the valid answers took the target action without a break, up to
    /// the last one (set when the last valid answer took it).
    since: Option<u32>,
    /// The first turn the target action was taken at, if ever.
    first_target: Option<u32>,
    /// The first turn that met an infrastructure error.
    infra: Option<u32>,
}

impl Outcome {
    /// The outcome of `record`, its action names put into `actions`.
    pub fn of(record: &DialogueRecord, actions: &mut IndexSet<String>) -> Outcome {
        let mut index = |name: &str| {
            actions
                .get_index_of(name)
                .unwrap_or_else(|| actions.insert_full(name.to_string()).0) as u32
        };
        let target = index(&record.job.target.action);
        let mut out = Outcome {
            end: record.end,
            target,
            last: None,
            since: None,
            first_target: None,
            infra: None,
        };
        for t in &record.turns {
            if out.infra.is_none()
                && (t.infra_error.is_some()
                    || matches!(t.outcome, ServiceOutcome::InfraError { .. }))
            {
                out.infra = Some(t.turn);
            }
            if let ServiceOutcome::Valid { turn } = &t.outcome {
                let action = index(&turn.action);
                if action == target {
                    out.first_target.get_or_insert(t.turn);
                    if out.since.is_none() {
                        out.since = Some(t.turn);
                    }
                } else {
                    out.since = None;
                }
                out.last = Some((action, t.turn));
            }
        }
        out
    }

    /// Why it passed or failed, in words (`actions`: the fold's action names).
    pub fn why(&self, actions: &IndexSet<String>) -> String {
        let name = |i: u32| actions.get_index(i as usize).map_or("?", String::as_str);
        let target = name(self.target);
        let ended = format!("(ended {})", self.end.name());
        if self.end == DialogueEnd::InfraError {
            return match self.infra {
                Some(turn) => format!("infrastructure error at turn {turn} {ended}"),
                None => format!("infrastructure error {ended}"),
            };
        }
        match (self.last, self.first_target) {
            (Some((action, _)), _) if action == self.target => format!(
                "reached the target action {target} at turn {} {ended}",
                self.since.unwrap_or_default()
            ),
            (Some((action, turn)), Some(first)) => format!(
                "took the target action {target} at turn {first}, but its last answer took {} at turn {turn} {ended}",
                name(action)
            ),
            (Some((action, turn)), None) => format!(
                "never took the target action {target}; last action {} at turn {turn} {ended}",
                name(action)
            ),
            (None, _) => format!("no valid answer (target action {target}) {ended}"),
        }
    }
}
