//! Which turn becomes which example, and the stable decisions made on it: the case a dialogue
//! belongs to, its part of a split, the filters, the hashes of contexts and examples. Pure: no
//! I/O (the caller reads the records and writes the output).

use sage_core::plan::derive_seed;
use sage_core::protocol::{DialogueJob, DialogueRecord, ServiceOutcome};
use sage_core::scenario::Adversarial;
use sage_core::scoring::summary::case_key;

/// Who says a message of an example.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// The agent's system prompt.
    System,
    /// The customer.
    User,
    /// The agent.
    Assistant,
}

impl Role {
    /// The OpenAI chat role: `system`, `user`, `assistant`.
    pub fn openai(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }

    /// The ShareGPT speaker: `system`, `human`, `gpt`.
    pub fn sharegpt(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "human",
            Role::Assistant => "gpt",
        }
    }
}

/// One message of an example, borrowed from the record (or the rendered system prompt).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message<'a> {
    /// Who says it.
    pub role: Role,
    /// What is said.
    pub content: &'a str,
}

/// What the agent answered in a turn, as training data sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Answer<'a> {
    /// The customer side failed: no line was said, and the turn is not in the context.
    NoLine,
    /// A valid answer: its full JSON text.
    Valid(&'a str),
    /// An answer that did not parse (its raw text when recorded).
    FormatError(Option<&'a str>),
    /// No answer text: the model could not be reached (the turn's `infra_error` says so), or a
    /// valid answer whose text was not recorded.
    None,
}

/// One agent turn with what the agent saw before answering it.
#[derive(Debug)]
pub struct TurnView<'v, 'r> {
    /// Its index in the record's turns.
    pub index: usize,
    /// Its 1-based turn number.
    pub turn: u32,
    /// The system prompt, the customer's lines and the agent's chat replies so far, ending with
    /// this turn's customer line (empty for [`Answer::NoLine`]).
    pub context: &'v [Message<'r>],
    /// Its answer.
    pub answer: Answer<'r>,
    /// Its Logic score (0-100), when scored.
    pub logic: Option<f64>,
    /// Whether the judges were asked about it (`judge_turns`).
    pub judged: bool,
    /// Whether it recorded an infrastructure error (the customer side, the agent, the judges or
    /// the rule engine failed).
    pub infra_error: bool,
    /// [`context_hash`] of `context`, when hashing was asked for (else 0).
    pub context_hash: u64,
}

/// The Logic of a fully correct answer: every classification field as the judges' consensus,
/// every stage of the reference path in the answer's path, the reference action (and outputs).
pub const FULLY_CORRECT: f64 = 100.0;

/// Whether a Logic score reaches a threshold (0-100), allowing for the rounding of the sum
/// that makes it (a fully correct answer reaches 100).
pub fn reaches(logic: f64, threshold: f64) -> bool {
    logic >= threshold - 1e-9
}

/// Why an agent turn gives no example (or no preference candidate). Every agent turn the
/// filters let through is exported or left out for exactly one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Left {
    /// The judges were not asked about the turn (`judge_turns`: `paper` judges turns 1, 5, 10,
    /// 15 and the final one): it has no scores.
    NotJudged,
    /// Example formats: the answer did not parse (judged or not), so it is no answer to learn.
    FormatError,
    /// An infrastructure error: the customer side, the agent, every judge or the rule engine
    /// could not be reached, so the turn was not scored.
    InfraError,
    /// The answer's text was not recorded.
    NoText,
    /// Example formats: a valid answer whose Logic is below `--min-logic`.
    BelowMinLogic,
}

/// A scored answer: its text, its Logic and whether it parsed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored<'a> {
    /// The answer as the agent wrote it.
    pub text: &'a str,
    /// Its Logic, 0-100.
    pub logic: f64,
    /// Whether it parsed (else a format error, scored with Logic 0).
    pub valid: bool,
}

impl<'r> TurnView<'_, 'r> {
    /// The turn's scored answer (valid or a format error), or why it has none: an
    /// infrastructure error, not judged, or no recorded text. What the preference formats pick
    /// their candidates from.
    pub fn scored(&self) -> Result<Scored<'r>, Left> {
        if self.infra_error || self.answer == Answer::NoLine {
            return Err(Left::InfraError);
        }
        if !self.judged {
            return Err(Left::NotJudged);
        }
        // Judged yet not scored: no judge (or no rule engine) answered.
        let logic = self.logic.ok_or(Left::InfraError)?;
        match self.answer {
            Answer::Valid(text) => Ok(Scored {
                text,
                logic,
                valid: true,
            }),
            Answer::FormatError(Some(text)) => Ok(Scored {
                text,
                logic,
                valid: false,
            }),
            Answer::FormatError(None) | Answer::None | Answer::NoLine => Err(Left::NoText),
        }
    }

    /// The text to learn in the example formats: a valid, scored answer whose Logic reaches
    /// `min_logic`; else why the turn is left out (a format error is one, judged or not).
    pub fn target(&self, min_logic: f64) -> Result<&'r str, Left> {
        if matches!(self.answer, Answer::FormatError(_)) {
            return Err(Left::FormatError);
        }
        match self.scored()? {
            Scored { valid: false, .. } => Err(Left::FormatError),
            Scored { logic, .. } if !reaches(logic, min_logic) => Err(Left::BelowMinLogic),
            Scored { text, .. } => Ok(text),
        }
    }
}

/// Calls `f` with every agent turn of `record` in order, with the context the agent saw: the
/// system prompt, the customer's lines and the agent's chat replies (as in the live dialogue;
/// a format error's reply is the raw text the customer saw). With `hashing`, each view carries
/// the [`context_hash`] of its context, computed incrementally. Stops at `f`'s first error.
///
/// A fork's branch (`record.fork`): the turns before its fork turn are its parent's, so they are
/// context only (no view); its reply at the fork turn has the fork's Logic (scored against the
/// parent's reference, with or without a judge's Chat); a fix's reply there is context too.
pub fn walk<'r, E>(
    record: &'r DialogueRecord,
    system: &'r str,
    hashing: bool,
    mut f: impl FnMut(&TurnView<'_, 'r>) -> Result<(), E>,
) -> Result<(), E> {
    let mut context = Vec::with_capacity(1 + 2 * record.turns.len());
    let mut hash = 0;
    let push = |context: &mut Vec<Message<'r>>, hash: &mut u64, m: Message<'r>| {
        if hashing {
            *hash = chain(*hash, m);
        }
        context.push(m);
    };
    push(
        &mut context,
        &mut hash,
        Message {
            role: Role::System,
            content: system,
        },
    );
    // A fix's reply at its fork turn is a sample's copied or one written from the reference:
    // not a model's answer; what its model said after it is.
    let own_from = own_from(record);
    for (index, turn) in record.turns.iter().enumerate() {
        let logic = answer_logic(record, index);
        let judged = turn.judges.is_some();
        let infra_error =
            turn.infra_error.is_some() || matches!(turn.outcome, ServiceOutcome::InfraError { .. });
        let own = turn.turn >= own_from;
        if turn.user_message.is_empty() {
            if !own {
                continue;
            }
            f(&TurnView {
                index,
                turn: turn.turn,
                context: &[],
                answer: Answer::NoLine,
                logic,
                judged,
                infra_error,
                context_hash: 0,
            })?;
            continue;
        }
        push(
            &mut context,
            &mut hash,
            Message {
                role: Role::User,
                content: &turn.user_message,
            },
        );
        // What the customer saw is the agent's chat, whether or not its raw answer is kept (a
        // fork keeps its parent's turns without it).
        let (seen, answer) = match (&turn.outcome, &turn.raw_output) {
            (ServiceOutcome::Valid { turn: t }, Some(raw)) => {
                (Some(t.chat.as_str()), Answer::Valid(raw))
            }
            (ServiceOutcome::Valid { turn: t }, None) => (Some(t.chat.as_str()), Answer::None),
            (ServiceOutcome::FormatError { chat, .. }, raw) => {
                (Some(chat.as_str()), Answer::FormatError(raw.as_deref()))
            }
            (ServiceOutcome::InfraError { .. }, _) => (None, Answer::None),
        };
        if own {
            f(&TurnView {
                index,
                turn: turn.turn,
                context: &context,
                answer,
                logic,
                judged,
                infra_error,
                context_hash: hash,
            })?;
        }
        if let Some(seen) = seen {
            push(
                &mut context,
                &mut hash,
                Message {
                    role: Role::Assistant,
                    content: seen,
                },
            );
        }
    }
    Ok(())
}

/// The first turn number of `record` that is its own: 0 for a run's dialogue; for a fork's
/// branch its fork turn (the turns before are its parent's), or the turn after it for a fix
/// (its reply there is a sample's copied, or one written from the reference).
fn own_from(record: &DialogueRecord) -> u32 {
    record
        .fork
        .as_ref()
        .map_or(0, |f| f.turn + u32::from(f.fix.is_some()))
}

/// The agent turns of `record` that are its own ([`walk`] views only those).
pub fn own_turns(record: &DialogueRecord) -> usize {
    let from = own_from(record);
    record.turns.iter().filter(|t| t.turn >= from).count()
}

/// The Logic of the answer at `index` of `record`: its scores', or at a fork's turn the fork's
/// (scored against the parent's reference, with or without a judge's Chat).
pub fn answer_logic(record: &DialogueRecord, index: usize) -> Option<f64> {
    let turn = record.turns.get(index)?;
    match &record.fork {
        Some(fork) if fork.turn == turn.turn => fork.logic,
        _ => turn.scores.map(|s| s.logic),
    }
}

/// The context and answer of the turn at `index` of `record` (see [`walk`]); `None` when the
/// record has no such turn or the customer said nothing in it.
pub fn turn_at<'r>(
    record: &'r DialogueRecord,
    system: &'r str,
    index: usize,
) -> Option<(Vec<Message<'r>>, Answer<'r>)> {
    let mut found = None;
    let _ = walk(record, system, false, |t| {
        if t.index == index {
            if t.answer != Answer::NoLine {
                found = Some((t.context.to_vec(), t.answer));
            }
            return Err(());
        }
        Ok(())
    });
    found
}

/// A stable 64-bit hash of a list of messages (roles and texts, in order), the same on every
/// platform and Rust version.
pub fn context_hash(messages: &[Message<'_>]) -> u64 {
    messages.iter().fold(0, |h, m| chain(h, *m))
}

/// The hash of a context extended by one message.
fn chain(hash: u64, m: Message<'_>) -> u64 {
    derive_seed((hash, m.role as u8, m.content))
}

/// The case a dialogue plays: its id without the `/r<N>` repeat suffix
/// ([`case_key`]) and without the model under test, so the same customer is one case whatever
/// model served it and however often (`telecom_package/0007/sim-strong/r1` ->
/// `telecom_package/0007`).
pub fn case_of(job: &DialogueJob) -> &str {
    case_of_id(&job.dialogue_id, &job.service_model)
}

/// The case a record plays: its job's ([`case_of`]), and for a fork's branch its parent's, so
/// every branch of a customer's case goes where the case goes (a split never parts them).
pub fn record_case(record: &DialogueRecord) -> &str {
    match &record.fork {
        Some(fork) => case_of_id(&fork.parent, &fork.parent_model),
        None => case_of(&record.job),
    }
}

/// [`case_of`] of a dialogue id and its model under test.
fn case_of_id<'a>(dialogue_id: &'a str, model: &str) -> &'a str {
    let case = case_key(dialogue_id);
    case.strip_suffix(model)
        .and_then(|c| c.strip_suffix('/'))
        .filter(|c| !c.is_empty())
        .unwrap_or(case)
}

/// A held-out part of a split: its name and the fraction of the cases it gets.
#[derive(Debug, Clone, PartialEq)]
pub struct Split {
    /// Its name (`validation`, `test`): it names its file.
    pub name: String,
    /// The fraction of the cases, in (0, 1).
    pub fraction: f64,
}

/// The part of a split a case goes to: 0 for training, `i + 1` for `splits[i]`. Decided by a
/// stable hash of the run seed and the case alone, so every dialogue of a case (every model,
/// every repeat) goes to the same part, whatever the order of the records.
pub fn split_part(seed: u64, case: &str, splits: &[Split]) -> usize {
    if splits.is_empty() {
        return 0;
    }
    // 53 bits of the hash as a number in [0, 1).
    let u = (derive_seed((seed, "export-split", case)) >> 11) as f64 / (1u64 << 53) as f64;
    let mut upto = 0.0;
    for (i, s) in splits.iter().enumerate() {
        upto += s.fraction;
        if u < upto {
            return i + 1;
        }
    }
    0
}

/// The hash identifying an example for `--dedup` and the caps: its part of the split, its
/// target route, its context (as [`context_hash`]) and its answer. Identical examples of two
/// dialogues have the same hash.
pub fn example_hash(part: usize, route: &str, context_hash: u64, answer: &str) -> u64 {
    derive_seed((part as u64, route, context_hash, answer))
}

/// An example's place in the order the caps keep examples in: a stable hash of the run seed and
/// the example, so the examples kept do not depend on the order of the records.
pub fn rank(seed: u64, example_hash: u64) -> u64 {
    derive_seed((seed, "export-rank", example_hash))
}

/// Which dialogues to export (an empty list lets every value through).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// Scenario ids (`--scenario`).
    pub scenarios: Vec<String>,
    /// Target routes as [`sage_core::scoring::summary::route_key`] writes them (`--route`).
    pub routes: Vec<String>,
    /// Adversarial levels (`--adversarial`).
    pub adversarial: Vec<Adversarial>,
    /// Models under test (`--model`).
    pub models: Vec<String>,
}

/// The filter that left a dialogue out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filtered {
    /// `--scenario`.
    Scenario,
    /// `--model`.
    Model,
    /// `--adversarial`.
    Adversarial,
    /// `--route`.
    Route,
}

impl Filter {
    /// The first filter that leaves out the dialogue of `job`, whose target route is `route`.
    pub fn check(&self, job: &DialogueJob, route: &str) -> Option<Filtered> {
        let out =
            |list: &[String], value: &str| !list.is_empty() && !list.iter().any(|v| v == value);
        if out(&self.scenarios, &job.scenario) {
            Some(Filtered::Scenario)
        } else if out(&self.models, &job.service_model) {
            Some(Filtered::Model)
        } else if !self.adversarial.is_empty() && !self.adversarial.contains(&job.adversarial) {
            Some(Filtered::Adversarial)
        } else if out(&self.routes, route) {
            Some(Filtered::Route)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: &str, model: &str) -> DialogueJob {
        let mut job: DialogueJob = serde_json::from_value(serde_json::json!({
            "run_id": "r", "dialogue_id": id, "scenario": "s",
            "target": {"path": ["a"], "action": "X", "outputs": {}},
            "fields": {}, "variables": {}, "intent": "i", "persona": "p",
            "adversarial": "weak", "service_model": model, "user_model": "u",
            "judge_models": [], "max_turns": 4, "seed": 1, "repeat": 0
        }))
        .unwrap();
        job.service_model = model.into();
        job
    }

    #[test]
    fn a_case_is_the_id_without_repeat_and_model() {
        assert_eq!(case_of(&job("s/0007/m/r1", "m")), "s/0007");
        assert_eq!(case_of(&job("s/0007/org/m/r12", "org/m")), "s/0007");
        // Ids of another shape are their own case.
        assert_eq!(case_of(&job("s/0007/m", "other")), "s/0007/m");
        assert_eq!(case_of(&job("m/r0", "m")), "m");
    }

    #[test]
    fn split_parts_follow_the_fractions_and_the_seed() {
        let splits = [Split {
            name: "validation".into(),
            fraction: 0.25,
        }];
        let parts: Vec<usize> = (0..4000)
            .map(|i| split_part(42, &format!("s/{i:04}"), &splits))
            .collect();
        let held = parts.iter().filter(|p| **p == 1).count();
        assert!((900..1100).contains(&held), "{held} of 4000");
        assert_eq!(split_part(42, "s/0001", &splits), parts[1], "stable");
        let other_seed = (0..4000)
            .filter(|i| split_part(43, &format!("s/{i:04}"), &splits) != parts[*i])
            .count();
        assert!(other_seed > 1000, "the seed changes the split");
        assert!((0..100).all(|i| split_part(42, &format!("{i}"), &[]) == 0));
    }

    #[test]
    fn filters_name_the_first_that_applies() {
        let j = job("s/0001/m/r0", "m");
        assert_eq!(Filter::default().check(&j, "a -> X"), None);
        let f = Filter {
            models: vec!["other".into()],
            routes: vec!["b -> Y".into()],
            ..Default::default()
        };
        assert_eq!(f.check(&j, "a -> X"), Some(Filtered::Model));
        let f = Filter {
            adversarial: vec![Adversarial::Zero, Adversarial::Strong],
            ..Default::default()
        };
        assert_eq!(f.check(&j, "a -> X"), Some(Filtered::Adversarial));
        let f = Filter {
            scenarios: vec!["s".into()],
            routes: vec!["b -> Y".into()],
            ..Default::default()
        };
        assert_eq!(f.check(&j, "a -> X"), Some(Filtered::Route));
        assert_eq!(f.check(&j, "b -> Y"), None);
    }

    /// A turn (answer, Logic, judged, infrastructure error) and what it gives: the example
    /// formats at Logic 100, and the preference formats (whether the scored answer parsed).
    type Case<'a> = (
        Answer<'a>,
        Option<f64>,
        bool,
        bool,
        Result<&'a str, Left>,
        Result<bool, Left>,
    );

    #[test]
    fn every_turn_is_exported_or_left_out_for_one_reason() {
        let view = |answer, logic, judged, infra_error| TurnView {
            index: 0,
            turn: 1,
            context: &[],
            answer,
            logic,
            judged,
            infra_error,
            context_hash: 0,
        };
        let valid = Answer::Valid("{}");
        let cases: [Case; 9] = [
            (valid, Some(100.0), true, false, Ok("{}"), Ok(true)),
            // 0.4 + 0.4 + 0.2 summed in floating point: still fully correct.
            (
                valid,
                Some(99.999_999_999_99),
                true,
                false,
                Ok("{}"),
                Ok(true),
            ),
            (
                valid,
                Some(80.0),
                true,
                false,
                Err(Left::BelowMinLogic),
                Ok(true),
            ),
            (
                valid,
                None,
                false,
                false,
                Err(Left::NotJudged),
                Err(Left::NotJudged),
            ),
            (
                valid,
                None,
                true,
                true,
                Err(Left::InfraError),
                Err(Left::InfraError),
            ),
            (
                Answer::FormatError(Some("x")),
                Some(0.0),
                true,
                false,
                Err(Left::FormatError),
                Ok(false),
            ),
            (
                Answer::FormatError(Some("x")),
                None,
                false,
                false,
                Err(Left::FormatError),
                Err(Left::NotJudged),
            ),
            (
                Answer::None,
                None,
                true,
                true,
                Err(Left::InfraError),
                Err(Left::InfraError),
            ),
            (
                Answer::NoLine,
                None,
                false,
                true,
                Err(Left::InfraError),
                Err(Left::InfraError),
            ),
        ];
        for (answer, logic, judged, infra, target, scored) in cases {
            let v = view(answer, logic, judged, infra);
            assert_eq!(v.target(FULLY_CORRECT), target, "{answer:?} {logic:?}");
            assert_eq!(v.scored().map(|s| s.valid), scored, "{answer:?} {logic:?}");
        }
        assert_eq!(view(valid, Some(80.0), true, false).target(80.0), Ok("{}"));
    }

    #[test]
    fn context_hashes_see_roles_and_order() {
        let m = |role, content| Message { role, content };
        let a = [m(Role::System, "s"), m(Role::User, "hi")];
        let b = [m(Role::System, "s"), m(Role::Assistant, "hi")];
        let c = [m(Role::User, "hi"), m(Role::System, "s")];
        assert_ne!(context_hash(&a), context_hash(&b));
        assert_ne!(context_hash(&a), context_hash(&c));
        assert_eq!(context_hash(&a), context_hash(&a.clone()));
        assert_ne!(example_hash(0, "r", 1, "x"), example_hash(1, "r", 1, "x"));
    }
}
