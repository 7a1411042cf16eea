//! Per-turn scores: the paper's eqs. 5-9, plus the released code's path score.
//!
//! A turn is scored in two steps: its logic sub-scores ([`LogicParts`], each 0-1) against the
//! judges' consensus and the rule engine's reference route, then [`combine`] with the judges'
//! chat scores into a [`TurnScores`]. [`score_turn`] does both; [`score_record`] does it from a
//! stored [`TurnRecord`].

use super::stats::ratio;
use crate::protocol::{AgentTurn, ChatScores, ServiceOutcome, TurnRecord, TurnScores};
use crate::scenario::Value;
use crate::sop::{Route, Sop};
use std::collections::{BTreeMap, BTreeSet};

/// Weights of classification accuracy, path similarity and action correctness in Logic.
pub const LOGIC_WEIGHTS: [f64; 3] = [0.4, 0.4, 0.2];
/// Weights of the five chat dimensions, in [`ChatScores`] field order (appendix B.3.2).
pub const CHAT_WEIGHTS: [f64; 5] = [0.20, 0.25, 0.25, 0.15, 0.15];
/// The top of the judges' 3/6/9 scale.
pub const CHAT_SCALE_MAX: f64 = 9.0;
/// Weights of Logic and Chat in the overall score (eq. 9).
pub const OVERALL_WEIGHTS: [f64; 2] = [0.8, 0.2];
/// Share of the finals score given for the action when the scenario declares extra outputs.
pub const FINALS_ACTION_SHARE: f64 = 0.7;
/// Share of the finals score given for the extra outputs (the remaining 0.3).
pub const FINALS_OUTPUTS_SHARE: f64 = 1.0 - FINALS_ACTION_SHARE;

/// How a scenario's finals (the action and any extra outputs) are scored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finals {
    /// The scenario declares no extra outputs: `Acc_action = I[action == action*]` (eq. 7).
    ActionOnly,
    /// The scenario declares extra outputs (e.g. Online Education's PLAN):
    /// `0.7 I[action == action*] + 0.3 I[every carried output equal]`, where the second term is
    /// 1 when the reference action carries no output (the released evaluator's rule).
    WithOutputs {
        /// Names of the outputs the reference action carries (empty when it carries none).
        carried: Vec<String>,
    },
}

impl Finals {
    /// The finals rule for a reference route of this SOP.
    pub fn for_route(sop: &Sop, reference: &Route) -> Finals {
        let sc = sop.scenario();
        if sc.outputs.is_empty() {
            return Finals::ActionOnly;
        }
        let carried = sc
            .actions
            .iter()
            .find(|a| a.name == reference.action)
            .map(|a| {
                a.outputs
                    .iter()
                    .map(|&i| sc.outputs[i].name.clone())
                    .collect()
            })
            .unwrap_or_default();
        Finals::WithOutputs { carried }
    }
}

/// The agent side of a turn to score.
#[derive(Debug, Clone, Copy)]
pub enum Answer<'a> {
    /// The agent's answer parsed: it is compared against the consensus and the reference.
    Valid {
        /// The parsed answer.
        turn: &'a AgentTurn,
        /// The judges' majority classification (the ground truth of eq. 5).
        consensus: &'a BTreeMap<String, Value>,
        /// The rule engine's route for the consensus (the reference of eqs. 6-7).
        reference: &'a Route,
        /// How the finals are scored in this scenario.
        finals: &'a Finals,
    },
    /// The answer did not parse: every logic sub-score is 0.
    FormatError,
}

/// The logic sub-scores of one turn, each 0-1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogicParts {
    /// Classification accuracy (eq. 5).
    pub acc_cls: f64,
    /// Path similarity `|p ∩ p*| / |p*|` (eq. 6).
    pub sim_path: f64,
    /// The released code's path score (see [`sim_path_prefix`]).
    pub sim_path_prefix: f64,
    /// Action (finals) correctness (eq. 7 and the outputs rule).
    pub acc_action: f64,
}

impl LogicParts {
    /// A format-error turn: nothing to compare, every sub-score 0.
    pub const FORMAT_ERROR: LogicParts = LogicParts {
        acc_cls: 0.0,
        sim_path: 0.0,
        sim_path_prefix: 0.0,
        acc_action: 0.0,
    };

    /// Compares a parsed answer with the consensus and the reference route.
    pub fn of(
        turn: &AgentTurn,
        consensus: &BTreeMap<String, Value>,
        reference: &Route,
        finals: &Finals,
    ) -> LogicParts {
        LogicParts {
            acc_cls: acc_cls(&turn.classification, consensus),
            sim_path: sim_path(&turn.path, &reference.path),
            sim_path_prefix: sim_path_prefix(&turn.path, &reference.path),
            acc_action: acc_action(turn, reference, finals),
        }
    }
}

/// Scores one turn. `judges` holds the chat scores of the judges that answered; `None` when no
/// judge answered (such a turn is not scored, like an infrastructure error).
pub fn score_turn(answer: Answer<'_>, judges: &[ChatScores]) -> Option<TurnScores> {
    let parts = match answer {
        Answer::Valid {
            turn,
            consensus,
            reference,
            finals,
        } => LogicParts::of(turn, consensus, reference, finals),
        Answer::FormatError => LogicParts::FORMAT_ERROR,
    };
    combine(parts, judges)
}

/// Combines logic sub-scores and the judges' chat scores into the turn's scores (eqs. 8-9);
/// `None` when `judges` is empty.
pub fn combine(parts: LogicParts, judges: &[ChatScores]) -> Option<TurnScores> {
    let chat = panel_chat(judges)?;
    let logic = logic(parts.acc_cls, parts.sim_path, parts.acc_action);
    Some(TurnScores {
        acc_cls: parts.acc_cls,
        sim_path: parts.sim_path,
        acc_action: parts.acc_action,
        logic,
        chat,
        overall: overall(logic, chat),
        sim_path_prefix: parts.sim_path_prefix,
    })
}

/// Scores a stored turn: `None` when it cannot be scored (an infrastructure error, no judge
/// answered, or a valid answer without a consensus or a reference route).
pub fn score_record(record: &TurnRecord, sop: &Sop) -> Option<TurnScores> {
    if record.infra_error.is_some() {
        return None;
    }
    let panel = record.judges.as_ref()?;
    let judges: Vec<ChatScores> = answered_chat_scores(record).copied().collect();
    match &record.outcome {
        ServiceOutcome::InfraError { .. } => None,
        ServiceOutcome::FormatError { .. } => score_turn(Answer::FormatError, &judges),
        ServiceOutcome::Valid { turn } => {
            let consensus = panel.consensus.as_ref()?;
            let reference = record.reference.as_ref()?.as_ref().ok()?;
            let finals = Finals::for_route(sop, reference);
            let answer = Answer::Valid {
                turn,
                consensus,
                reference,
                finals: &finals,
            };
            score_turn(answer, &judges)
        }
    }
}

/// The Logic (0-100) of a stored turn's answer against its panel's consensus and reference
/// route, whether or not a judge scored its Chat (a fork's reply asked without judges has a
/// Logic and no scores): 0 for a format error; `None` for an infrastructure error, or without a
/// consensus and a reference route.
pub fn turn_logic(record: &TurnRecord, sop: &Sop) -> Option<f64> {
    if record.infra_error.is_some() {
        return None;
    }
    let consensus = record.judges.as_ref()?.consensus.as_ref()?;
    let reference = record.reference.as_ref()?.as_ref().ok()?;
    let parts = match &record.outcome {
        ServiceOutcome::InfraError { .. } => return None,
        ServiceOutcome::FormatError { .. } => LogicParts::FORMAT_ERROR,
        ServiceOutcome::Valid { turn } => LogicParts::of(
            turn,
            consensus,
            reference,
            &Finals::for_route(sop, reference),
        ),
    };
    Some(logic(parts.acc_cls, parts.sim_path, parts.acc_action))
}

/// The chat scores of the judges of a stored turn that answered.
pub fn answered_chat_scores(record: &TurnRecord) -> impl Iterator<Item = &ChatScores> {
    record
        .judges
        .iter()
        .flat_map(|panel| &panel.judgments)
        .filter_map(|j| j.as_ref().ok().map(|j| &j.chat))
}

/// Whether two classification values are equal, reading a boolean or an integer written as text
/// as that boolean or integer (`"true"` equals `true`, `"5"` equals `5`). Text against text is an
/// exact match.
pub fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Str(s), Value::Bool(x)) | (Value::Bool(x), Value::Str(s)) => s
            .trim()
            .eq_ignore_ascii_case(if *x { "true" } else { "false" }),
        (Value::Str(s), Value::Int(i)) | (Value::Int(i), Value::Str(s)) => {
            s.trim().parse::<i64>() == Ok(*i)
        }
        _ => a == b,
    }
}

/// Eq. 5: the share of the consensus's fields the agent classified as the consensus did (a field
/// the agent left out counts as wrong); 0 when the consensus is empty.
pub fn acc_cls(agent: &BTreeMap<String, Value>, consensus: &BTreeMap<String, Value>) -> f64 {
    let right = consensus
        .iter()
        .filter(|(field, truth)| agent.get(*field).is_some_and(|v| values_equal(v, truth)))
        .count();
    ratio(right, consensus.len())
}

/// Eq. 6: `|p ∩ p*| / |p*|`, the paths taken as sets of stage ids; 0 when `p*` is empty.
pub fn sim_path(path: &[String], reference: &[String]) -> f64 {
    let agent: BTreeSet<&str> = path.iter().map(String::as_str).collect();
    let reference: BTreeSet<&str> = reference.iter().map(String::as_str).collect();
    ratio(agent.intersection(&reference).count(), reference.len())
}

/// The released evaluator's path score: after removing `start`/`end` markers (any case), 1 on an
/// exact match, else the common-prefix length over the longer path's length.
pub fn sim_path_prefix(path: &[String], reference: &[String]) -> f64 {
    let strip = |p: &[String]| -> Vec<String> {
        p.iter()
            .filter(|s| !s.eq_ignore_ascii_case("start") && !s.eq_ignore_ascii_case("end"))
            .cloned()
            .collect()
    };
    let (path, reference) = (strip(path), strip(reference));
    if path == reference {
        return 1.0;
    }
    let prefix = path
        .iter()
        .zip(&reference)
        .take_while(|(a, b)| a == b)
        .count();
    ratio(prefix, path.len().max(reference.len()))
}

/// Eq. 7 with the outputs rule of [`Finals`].
pub fn acc_action(turn: &AgentTurn, reference: &Route, finals: &Finals) -> f64 {
    let action = indicator(turn.action == reference.action);
    match finals {
        Finals::ActionOnly => action,
        Finals::WithOutputs { carried } => {
            let outputs = carried
                .iter()
                .all(|name| turn.outputs.get(name) == reference.outputs.get(name));
            FINALS_ACTION_SHARE * action + FINALS_OUTPUTS_SHARE * indicator(outputs)
        }
    }
}

/// Logic, 0-100, from the three sub-scores (each 0-1).
pub fn logic(acc_cls: f64, sim_path: f64, acc_action: f64) -> f64 {
    let [w1, w2, w3] = LOGIC_WEIGHTS;
    100.0 * (w1 * acc_cls + w2 * sim_path + w3 * acc_action)
}

/// Each chat dimension of one judge on 0-100 (`s / 9 * 100`), in [`ChatScores`] field order.
pub fn chat_dimensions(s: &ChatScores) -> [f64; 5] {
    [
        s.linguistic_quality,
        s.anthropomorphism_emotion,
        s.content_utility,
        s.user_satisfaction,
        s.instruction_compliance,
    ]
    .map(|x| f64::from(x) / CHAT_SCALE_MAX * 100.0)
}

/// One judge's chat score, 0-100: `sum_k w_k s_k / 9 * 100` (eq. 8, inner sum).
pub fn judge_chat(s: &ChatScores) -> f64 {
    chat_dimensions(s)
        .iter()
        .zip(CHAT_WEIGHTS)
        .map(|(d, w)| w * d)
        .sum()
}

/// The panel's chat score: the mean of [`judge_chat`] over the judges that answered (eq. 8);
/// `None` when none did.
pub fn panel_chat(judges: &[ChatScores]) -> Option<f64> {
    (!judges.is_empty()).then(|| judges.iter().map(judge_chat).sum::<f64>() / judges.len() as f64)
}

/// Eq. 9: `0.8 Logic + 0.2 Chat`.
pub fn overall(logic: f64, chat: f64) -> f64 {
    let [wl, wc] = OVERALL_WEIGHTS;
    wl * logic + wc * chat
}

fn indicator(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}
