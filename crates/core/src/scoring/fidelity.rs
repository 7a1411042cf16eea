//! Customer fidelity: whether the simulated customer expressed the case's intent and stayed in
//! it. The cheap checks of one customer line ([`off_script`], used by `customer_guard`, and
//! [`off_case`], the audit of every line against the case) and the per-dialogue counts the
//! summary folds per customer model and adversarial level ([`DialogueFidelity`]). Pure.

pub use crate::protocol::simulator::OffCase;
use crate::protocol::{DialogueEnd, DialogueJob, DialogueRecord, TurnRecord};
use crate::scenario::Intent;
use crate::sop::Sop;
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

pub use crate::scenario::normalize;

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

/// Fewest words an intent's phrase needs to be looked for in a line (shorter ones match by
/// chance).
const PHRASE_WORDS: usize = 3;

/// The field of `job`'s case that `intent` implies another value of, with the case's value;
/// `None` when the intent agrees with the case on every field it implies (or is the case's).
pub fn conflict(sop: &Sop, job: &DialogueJob, intent: &Intent) -> Option<(String, String)> {
    if intent.id == job.intent {
        return None;
    }
    let keys = &sop.scenario().keys;
    intent.implies.iter().find_map(|(k, domain)| {
        let key = keys.get(*k)?;
        let value = job
            .fields
            .get(&key.name)
            .or_else(|| job.variables.get(&key.name))?;
        let point = key.point(value)?;
        (!domain.contains(point)).then(|| (key.name.clone(), value.to_string()))
    })
}

/// The audit of one customer `line` against `job`'s case ([`OffCase`]); no model call.
pub fn off_case(sop: &Sop, job: &DialogueJob, line: &str) -> Option<OffCase> {
    let sc = sop.scenario();
    let words = format!(" {} ", normalize(line));
    if words.trim().is_empty() {
        return None;
    }
    let found = sop.intent_phrases_in(&words);
    let own = sc.intents.iter().position(|i| i.id == job.intent);
    // Another intent's phrase inside one the case's own intent says is not another claim.
    let mine: Vec<(usize, usize)> = (found.iter())
        .filter(|f| Some(f.intent) == own)
        .map(|f| (f.start, f.end))
        .collect();
    found.iter().find_map(|f| {
        let inside_mine = mine.iter().any(|&(s, e)| s <= f.start && f.end <= e);
        if Some(f.intent) == own || f.words < PHRASE_WORDS || inside_mine {
            return None;
        }
        let intent = sc.intents.get(f.intent)?;
        let (field, case_value) = conflict(sop, job, intent)?;
        Some(OffCase {
            intent: intent.id.clone(),
            field,
            case_value,
        })
    })
}

/// Whether the agent failed at a turn: Logic below 100 in a turn the summary counts (a
/// field, the path or the action wrong, or a format error). A failure at or after the
/// dialogue's [`first_off_case`] line is possibly the simulator's doing.
pub fn failed(turn: &TurnRecord) -> bool {
    turn.counted_scores().is_some_and(|s| s.logic < 100.0)
}

/// The index of `record`'s first turn whose customer line is off-case.
pub fn first_off_case(record: &DialogueRecord) -> Option<usize> {
    record.turns.iter().position(|t| t.off_case.is_some())
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
    /// Customer lines the audit found off-case ([`OffCase`], the turns' `off_case`).
    pub off_case: usize,
    /// Scored turns where the agent failed (Logic below 100: a field, the path or the action
    /// wrong, or a format error).
    pub failures: usize,
    /// Of those, the turns at or after the dialogue's first off-case customer line: possibly
    /// the simulator's doing.
    pub failures_after_off_case: usize,
}

impl DialogueFidelity {
    /// Whether the customer went off-case somewhere in the dialogue.
    pub fn went_off_case(&self) -> bool {
        self.off_case > 0
    }
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
            out.off_case += usize::from(turn.off_case.is_some());
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
        let off_case_from = first_off_case(record).unwrap_or(usize::MAX);
        for (i, turn) in record.turns.iter().enumerate() {
            let failed = failed(turn);
            out.failures += usize::from(failed);
            out.failures_after_off_case += usize::from(failed && i >= off_case_from);
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
            off_case: None,
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
                ..Default::default()
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

    /// A planned job of bundled scenario `scenario` whose customer holds `intent`.
    fn case_of(scenario: &str, intent: &str) -> (crate::sop::Sop, DialogueJob) {
        let path = format!(
            "{}/../../scenarios/{scenario}.yaml",
            env!("CARGO_MANIFEST_DIR")
        );
        let sop = crate::sop::load(std::path::Path::new(&path)).unwrap();
        let config = crate::plan::RunConfig {
            dialogues_per_scenario: 30,
            ..Default::default()
        };
        let sops = [std::sync::Arc::new(sop.clone())];
        let job = crate::plan::jobs(&config, "r", &sops)
            .into_iter()
            .find(|j| {
                j.intent == intent
                    && j.fields
                        .get("ConsumptionProfile")
                        .is_none_or(|v| v.to_string() == "Data")
            })
            .expect("a case of the intent");
        (sop, job)
    }

    #[test]
    fn the_audit_finds_a_line_that_asserts_another_intent_of_the_scenario() {
        let (sop, job) = case_of("telecom_package", "enquiry_data_agree");
        let check = |line: &str| off_case(&sop, &job, line);
        // The customer's own words are on-case.
        assert_eq!(
            check(
                "Hello: keeps running out of data; open to a recommended data plan. I run out of mobile data around the 20th of every month."
            ),
            None
        );
        assert_eq!(
            check("I would take a bigger data plan if the price is fair."),
            None
        );
        // Another intent's description: it implies Voice where the case has Data.
        assert_eq!(
            check("Actually, makes many work calls; wants a plan with more minutes."),
            Some(OffCase {
                intent: "enquiry_voice_agree".into(),
                field: "ConsumptionProfile".into(),
                case_value: "Data".into(),
            })
        );
        // Another intent's fact, in other words around it: it implies Hesitate, not Agree.
        let hesitates = check("Honestly, I will not commit to anything today, sorry.").unwrap();
        assert_eq!(
            (hesitates.intent.as_str(), hesitates.field.as_str()),
            ("enquiry_hesitate", "ApplicationTendency")
        );
        assert_eq!(
            hesitates.describe(),
            "says intent enquiry_hesitate, which has another ApplicationTendency than this case's Agree"
        );
        // Words shared by chance, short phrases and empty lines are not claims.
        assert_eq!(check("I make a lot"), None);
        assert_eq!(check("   "), None);
    }

    #[test]
    fn another_intents_phrase_inside_the_customers_own_is_not_a_claim() {
        // "I want to return it" is a fact of user_return_medium_credit (the user's
        // responsibility) and a part of this merchant-fault customer's own fact.
        let (sop, job) = case_of("ecommerce_refund", "merchant_compensation_low_credit");
        assert_eq!(
            off_case(&sop, &job, "I feel cheated and I want to return it! Now."),
            None
        );
        let said = off_case(&sop, &job, "Fine. I want to return it.").unwrap();
        assert_eq!(
            (said.intent.as_str(), said.field.as_str()),
            ("user_return_medium_credit", "Responsibility")
        );
    }
}
