//! Customer fidelity: whether the simulated customer expressed the case's intent and stayed in
//! it. The cheap checks of one customer line ([`off_script`], used by `customer_guard`) and
//! the per-dialogue counts the summary folds per customer model and adversarial level
//! ([`DialogueFidelity`]). Pure.

use crate::protocol::{DialogueEnd, DialogueRecord};
use serde::{Deserialize, Serialize};

/// Why a customer line reads as off-script.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OffScript {
    /// Nothing but whitespace.
    Empty,
    /// The same words as an earlier customer line of the dialogue.
    Repeated,
    /// Words of the agent's side (offering help, speaking as an assistant): the customer
    /// model swapped roles.
    RoleSwap,
}

impl OffScript {
    /// A few words for reports and logs.
    pub fn describe(self) -> &'static str {
        match self {
            OffScript::Empty => "an empty line",
            OffScript::Repeated => "a line the customer already said",
            OffScript::RoleSwap => "the agent's words (roles swapped)",
        }
    }
}

/// Phrases only the agent's side says (lower case): a customer line holding one has swapped
/// roles.
const AGENT_PHRASES: [&str; 8] = [
    "how can i help you",
    "how can i assist you",
    "how may i help you",
    "how may i assist you",
    "as an ai",
    "i am an ai",
    "i'm an ai",
    "thank you for contacting",
];

/// A line's words for comparison: lower case, letters and digits only, single spaces.
pub fn normalize(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for word in line
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

/// Whether `line` says the same words as one of `earlier` (an empty line repeats nothing).
pub fn repeats<'a>(line: &str, earlier: impl IntoIterator<Item = &'a str>) -> bool {
    let words = normalize(line);
    !words.is_empty() && earlier.into_iter().any(|e| normalize(e) == words)
}

/// The cheap check of a customer line against the customer's `earlier` lines of the dialogue:
/// empty, repeated, or in the agent's words. No model call.
pub fn off_script<'a>(line: &str, earlier: impl IntoIterator<Item = &'a str>) -> Option<OffScript> {
    if line.trim().is_empty() {
        return Some(OffScript::Empty);
    }
    let lower = line.to_lowercase();
    if AGENT_PHRASES.iter().any(|p| lower.contains(p)) {
        return Some(OffScript::RoleSwap);
    }
    repeats(line, earlier).then_some(OffScript::Repeated)
}

/// One dialogue's customer-fidelity counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DialogueFidelity {
    /// Turns with a panel consensus.
    pub judged: usize,
    /// Of those, turns where the consensus differs from the case's truth on some field (the
    /// customer did not express the intent, or the judges misread it).
    pub off_intent: usize,
    /// Customer lines.
    pub lines: usize,
    /// Customer lines repeating an earlier one.
    pub repeated: usize,
    /// Customer turns `customer_guard` asked again.
    pub retried: usize,
    /// Whether the customer ended the dialogue before the target action.
    pub ended_early: bool,
}

impl DialogueFidelity {
    /// The counts of `record`.
    pub fn of(record: &DialogueRecord) -> DialogueFidelity {
        let mut out = DialogueFidelity {
            ended_early: record.end == DialogueEnd::UserEndedEarly,
            ..Default::default()
        };
        let truth = &record.job.fields;
        for (i, turn) in record.turns.iter().enumerate() {
            if turn.user_message.is_empty() {
                continue;
            }
            out.lines += 1;
            out.retried += usize::from(turn.customer_retry.is_some());
            let earlier = record.turns[..i].iter().map(|t| t.user_message.as_str());
            out.repeated += usize::from(repeats(&turn.user_message, earlier));
            if let Some(consensus) = turn.judges.as_ref().and_then(|p| p.consensus.as_ref()) {
                out.judged += 1;
                let differs = truth
                    .iter()
                    .any(|(k, v)| consensus.get(k).is_some_and(|c| c != v));
                out.off_intent += usize::from(differs);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_compare_by_their_words() {
        assert_eq!(
            normalize("  I want to CANCEL, now!! "),
            "i want to cancel now"
        );
        assert!(repeats(
            "I want to cancel now.",
            ["hello", "i want to cancel, NOW"]
        ));
        assert!(!repeats("I want to cancel", ["I want to cancel now"]));
        assert!(!repeats("...", ["!!!"]), "an empty line repeats nothing");
    }

    #[test]
    fn a_dialogue_counts_its_repeats_its_off_intent_turns_and_how_it_ended() {
        use crate::protocol::{JudgeReply, ServiceOutcome, TurnRecord, Usage};
        use crate::scenario::{Adversarial, Value};
        let job = crate::scoring::tests::job("d", "agent", "s", Adversarial::Weak);
        let turn = |n: u32, line: &str, consensus: Option<(&str, &str)>| TurnRecord {
            turn: n,
            user_message: line.into(),
            raw_output: None,
            outcome: ServiceOutcome::InfraError {
                error: String::new(),
            },
            judges: consensus.map(|(a, b)| JudgeReply {
                judgments: Vec::new(),
                consensus: Some(
                    [("A", a), ("B", b)]
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), Value::Str(v.into())))
                        .collect(),
                ),
                calls: Vec::new(),
            }),
            reference: None,
            scores: None,
            infra_error: None,
            calls: Vec::new(),
            customer_retry: None,
        };
        // The job's truth is A = x, B = z.
        let record = DialogueRecord {
            job,
            turns: vec![
                turn(1, "I want a refund.", Some(("x", "z"))),
                turn(2, "i want a REFUND", Some(("x", "other"))),
                turn(3, "Thanks, bye", None),
            ],
            closing_calls: Vec::new(),
            end: DialogueEnd::UserEndedEarly,
            simulated: true,
            structured_output: None,
            usage: Usage::default(),
            cost_usd: 0.0,
            fork: None,
        };
        assert_eq!(
            DialogueFidelity::of(&record),
            DialogueFidelity {
                judged: 2,
                off_intent: 1,
                lines: 3,
                repeated: 1,
                retried: 0,
                ended_early: true,
            }
        );
    }

    #[test]
    fn the_cheap_check_flags_empty_repeated_and_swapped_lines() {
        assert_eq!(off_script("  \n", []), Some(OffScript::Empty));
        assert_eq!(
            off_script("Hello! How can I help you today?", []),
            Some(OffScript::RoleSwap)
        );
        assert_eq!(
            off_script("My bill is wrong.", ["my bill is wrong"]),
            Some(OffScript::Repeated)
        );
        assert_eq!(off_script("My bill is wrong.", ["I need help"]), None);
    }
}
