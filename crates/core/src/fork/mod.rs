//! `sage fork` (docs/training-data.md): a stored dialogue asked again at one of its turns. The
//! context up to that turn is the parent's as stored (no model is called to rebuild it); the
//! models named answer it again, each several times (samples); each reply is scored as the run
//! scores a turn, against the parent turn's reference; with `--continue` each branch plays on to
//! its end. Every answer at one fork point shares one context, so the point yields preference
//! pairs whose sides the rule engine verified; a deviation fork also tells whether fixing the
//! one turn where a failed dialogue first left the reference flips its outcome.
//!
//! Pure: which turns to fork ([`points`]), the branches' ids and jobs ([`branch_job`]), the
//! turns a branch keeps ([`kept_turns`]), the reference it is scored against ([`reference`]),
//! a reply written from the reference ([`written_reply`]), and what a fork did
//! ([`ForkFold`], fork.json). The playing is the dialogue driver's (sage-actors).

use crate::plan::derive_seed;
use crate::protocol::{
    AgentTurn, DialogueJob, DialogueRecord, FixSource, JudgeTurns, ServiceOutcome, ServiceReply,
    TurnRecord,
};
use crate::scoring::stats::Money;
use crate::scoring::summary::reached_target;
use crate::sop::{Route, Values};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a fork writes into its folder, beside the branches: its configuration and, once done,
/// what it did ([`ForkFile`]).
pub const FORK_JSON: &str = "fork.json";

/// Most samples per model and fork point.
pub const MAX_SAMPLES: u32 = 64;

/// Where in each stored dialogue a fork asks again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum At {
    /// Every judged turn (one with a reference route).
    Judged,
    /// The first judged turn where the agent left the reference path or action (or broke the
    /// format).
    Deviation,
    /// Turn N, when it was judged.
    Turn(u32),
}

impl std::str::FromStr for At {
    type Err = String;
    fn from_str(text: &str) -> Result<At, String> {
        match text.trim() {
            "judged" => Ok(At::Judged),
            "deviation" => Ok(At::Deviation),
            n => match n.parse::<u32>() {
                Ok(n) if n >= 1 => Ok(At::Turn(n)),
                _ => Err(format!(
                    "`{}`: expected judged, deviation or a turn number from 1",
                    n.escape_debug()
                )),
            },
        }
    }
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            At::Judged => f.write_str("judged"),
            At::Deviation => f.write_str("deviation"),
            At::Turn(n) => write!(f, "{n}"),
        }
    }
}

/// How a fork asks again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForkConfig {
    /// Where.
    pub at: At,
    /// The models that answer (models of the forked run's configuration).
    pub models: Vec<String>,
    /// Samples per model and fork point.
    pub samples: u32,
    /// Whether each branch plays on to its end.
    #[serde(rename = "continue")]
    pub continue_on: bool,
    /// Whether the judges are asked about each reply (for its Chat; the reference stays the
    /// parent's).
    pub judge: bool,
    /// Draws the samples (a sample's draw is the same for the same seed).
    pub seed: u64,
}

impl ForkConfig {
    /// Checks the numbers: at least one model, 1 to [`MAX_SAMPLES`] samples.
    pub fn check(&self) -> Result<(), String> {
        if self.models.is_empty() {
            return Err("no model to fork with; expected at least one".into());
        }
        if !(1..=MAX_SAMPLES).contains(&self.samples) {
            return Err(format!(
                "--samples {}: expected 1 to {MAX_SAMPLES}",
                self.samples
            ));
        }
        Ok(())
    }

    /// Whether a failed parent gets a fix: a deviation fork that plays on.
    pub fn fixes(&self) -> bool {
        self.at == At::Deviation && self.continue_on
    }

    /// The draw of sample `k` ([`crate::protocol::ServiceRequest::sample`]): the same for the
    /// same fork seed, another for another.
    pub fn draw(&self, k: u32) -> u32 {
        (derive_seed((self.seed, "sample", k)) >> 32) as u32
    }
}

/// Whether a stored turn can be forked: the customer spoke, the agent's side did not fail, and
/// the judges gave a consensus whose reference route the rule engine found.
fn forkable(turn: &TurnRecord) -> bool {
    !turn.user_message.is_empty() && reference(turn).is_some()
}

/// The indexes (into `record.turns`) of the turns `at` forks.
pub fn points(record: &DialogueRecord, at: At) -> Vec<usize> {
    let turns = &record.turns;
    match at {
        At::Judged => (0..turns.len()).filter(|i| forkable(&turns[*i])).collect(),
        At::Deviation => turns
            .iter()
            .position(|t| t.verdict().left())
            .filter(|i| forkable(&turns[*i]))
            .into_iter()
            .collect(),
        At::Turn(n) => turns
            .iter()
            .position(|t| t.turn == n)
            .filter(|i| forkable(&turns[*i]))
            .into_iter()
            .collect(),
    }
}

/// A branch's dialogue id: `PARENT/fTURN/MODEL/sSAMPLE` (its case, the id without its model:
/// `PARENT/fTURN/sSAMPLE`, the same sample of every model at the point).
pub fn branch_id(parent: &str, turn: u32, model: &str, sample: u32) -> String {
    format!("{parent}/f{turn}/{model}/s{sample}")
}

/// The id of a deviation fork's fix branch: `PARENT/fTURN/MODEL/fix`, MODEL the parent's.
pub fn fix_id(parent: &str, turn: u32, model: &str) -> String {
    format!("{parent}/f{turn}/{model}/fix")
}

/// Every branch id a fork as `config` says makes of `parent`: at each of its points, each
/// model's samples, and for a failed parent in a deviation fork that plays on, its fix.
pub fn branch_ids(parent: &DialogueRecord, config: &ForkConfig) -> Vec<String> {
    let id = &parent.job.dialogue_id;
    let mut out = Vec::new();
    for index in points(parent, config.at) {
        let turn = parent.turns[index].turn;
        for model in &config.models {
            out.extend((0..config.samples).map(|k| branch_id(id, turn, model, k)));
        }
        if config.fixes() && !reached_target(parent) {
            out.push(fix_id(id, turn, &parent.job.service_model));
        }
    }
    out
}

/// The job of a branch of `parent` at `turn` answered by `model`: the parent's case, seed
/// (so the branch draws as its parent did but where it is sampled) and customer; the run
/// `run_id`; it ends at the fork turn, or with `continue_on` at the parent's `max_turns`; the
/// judges are asked about later turns (the parent's `judge_turns`) only with `continue_on`
/// and `judge`.
pub fn branch_job(
    parent: &DialogueJob,
    run_id: &str,
    id: String,
    turn: u32,
    model: &str,
    config: &ForkConfig,
) -> DialogueJob {
    DialogueJob {
        run_id: run_id.to_string(),
        dialogue_id: id,
        service_model: model.to_string(),
        judge_turns: if config.continue_on && config.judge {
            parent.judge_turns.clone()
        } else {
            JudgeTurns::List(vec![turn])
        },
        max_turns: if config.continue_on {
            parent.max_turns
        } else {
            turn
        },
        ..parent.clone()
    }
}

/// The turns a branch keeps from its parent: those before `index`, what the customer and the
/// agent said and chose there (the context of the fork turn), without what the parent's folder
/// holds of them (their raw output, verdicts, references, scores and calls: the fork made none
/// of them, and its summary counts only its own turns).
pub fn kept_turns(record: &DialogueRecord, index: usize) -> Vec<TurnRecord> {
    record.turns[..index.min(record.turns.len())]
        .iter()
        .map(|t| TurnRecord {
            turn: t.turn,
            user_message: t.user_message.clone(),
            raw_output: None,
            outcome: t.outcome.clone(),
            judges: None,
            reference: None,
            scores: None,
            infra_error: t.infra_error.clone(),
            calls: Vec::new(),
            customer_retry: None,
            off_case: None,
        })
        .collect()
}

/// A stored turn's reference: its judges' consensus and the route the rule engine derived from
/// it; `None` without both (not judged, no judge answered, an infrastructure error, no route).
pub fn reference(turn: &TurnRecord) -> Option<(Values, Route)> {
    if turn.infra_error.is_some() || matches!(turn.outcome, ServiceOutcome::InfraError { .. }) {
        return None;
    }
    let consensus = turn.judges.as_ref()?.consensus.clone()?;
    let route = turn.reference.clone()?.ok()?;
    Some((consensus, route))
}

/// A reply that follows the reference, written from it when no sample did: the consensus as
/// its classification, the reference path and action (and outputs), and `chat` (the parent's
/// words at the turn); its raw text is the answer in the agent's JSON contract.
pub fn written_reply(consensus: &Values, route: &Route, chat: &str) -> ServiceReply {
    let turn = AgentTurn {
        classification: consensus.clone(),
        cot: "written from the reference: no sample of the fork followed it".into(),
        path: route.path.clone(),
        action: route.action.clone(),
        outputs: route.outputs.clone(),
        chat: chat.to_string(),
    };
    let mut finals = serde_json::Map::new();
    finals.insert("Action".into(), route.action.clone().into());
    for (k, v) in &route.outputs {
        finals.insert(k.clone(), v.clone().into());
    }
    let raw = serde_json::json!({
        "classification_output": turn.classification,
        "cot": turn.cot,
        "now_path": turn.path,
        "finals": finals,
        "chat": turn.chat,
    })
    .to_string();
    ServiceReply {
        outcome: ServiceOutcome::Valid { turn },
        raw: Some(raw),
        calls: Vec::new(),
    }
}

/// The reply of a stored turn as the agent gave it, without its calls (a fix copies a
/// sample's reply; the sample paid for it).
pub fn stored_reply(turn: &TurnRecord) -> ServiceReply {
    ServiceReply {
        outcome: turn.outcome.clone(),
        raw: turn.raw_output.clone(),
        calls: Vec::new(),
    }
}

/// What `sage fork` writes into NEW/fork.json: the folder forked, how, and once done what the
/// fork holds (recounted from every branch stored, a resumed fork's included).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForkFile {
    /// The folder forked.
    pub from: String,
    /// Its run id.
    pub from_run_id: String,
    /// How.
    #[serde(flatten)]
    pub config: ForkConfig,
    /// What it holds, once done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done: Option<Forked>,
}

/// What a fork holds (fork.json's `done`), the same for the same branches whatever their order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Forked {
    /// Parent dialogues with at least one branch.
    pub parents: usize,
    /// Fork points (a parent's turn asked again).
    pub points: usize,
    /// Branches (samples and fixes).
    pub branches: usize,
    /// Branches whose reply could not be had (an infrastructure error at the fork turn).
    pub failed_replies: usize,
    /// Replies at the fork turns whose Logic is 100 (the models' samples: a fix's reply is a
    /// copy of one or written).
    pub logic_100: usize,
    /// Per model that answered: its replies at the fork turns (fixes not counted: their reply
    /// is a copy or written).
    #[serde(default)]
    pub replies_by_model: BTreeMap<String, Replies>,
    /// Model calls by role (`agent`, `customer`, `judges`).
    pub calls: BTreeMap<String, usize>,
    /// What they cost by role, US dollars.
    pub cost_usd: BTreeMap<String, f64>,
    /// Parents left for the budget (none started after it was spent; a rerun with a higher one
    /// forks them).
    pub left_for_budget: usize,
    /// With `--at deviation --continue`: failed parents given a fix (the reference-following
    /// reply at their first deviation, played on by their model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_parents: Option<usize>,
    /// Of those, the fixes that reached the target action: one turn fixed the dialogue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flipped: Option<usize>,
    /// Per parent model: its failed parents given a fix and the fixes that flipped.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fixes_by_model: BTreeMap<String, FixCount>,
}

/// A model's replies at the fork turns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Replies {
    /// Replies (samples).
    pub replies: usize,
    /// Those scored (a reference route and an answer).
    pub scored: usize,
    /// Those whose Logic is 100.
    pub logic_100: usize,
    /// Their mean Logic, 0-100 (`None` with none scored).
    pub mean_logic: Option<f64>,
}

impl Replies {
    /// The share of the scored replies whose Logic is 100, 0-1.
    pub fn share_100(&self) -> Option<f64> {
        (self.scored > 0).then(|| self.logic_100 as f64 / self.scored as f64)
    }
}

/// A model's failed dialogues given a fix, and those the fix flipped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixCount {
    /// Failed parents given a fix.
    pub failed: usize,
    /// Fixes that reached the target action.
    pub flipped: usize,
}

/// The role of a branch's call, by its model: the branch's agent, the customer or a judge.
fn role(job: &DialogueJob, model: &str) -> &'static str {
    if model == job.service_model {
        "agent"
    } else if model == job.user_model {
        "customer"
    } else {
        "judges"
    }
}

/// Folds a fork's branches into [`Forked`], in any order.
#[derive(Debug, Clone, Default)]
pub struct ForkFold {
    parents: std::collections::BTreeSet<String>,
    points: std::collections::BTreeSet<(String, u32)>,
    done: Forked,
    cost: BTreeMap<String, Money>,
    /// Per model, the sum of its replies' Logic held exactly (its mean does not depend on the
    /// branches' order).
    logic: BTreeMap<String, Money>,
    fixes: bool,
}

impl ForkFold {
    /// Counts `with_fixes` ones (a deviation fork that plays on: it reports its fixes).
    pub fn new(with_fixes: bool) -> ForkFold {
        ForkFold {
            fixes: with_fixes,
            ..ForkFold::default()
        }
    }

    /// Adds a branch (a record without a fork link is not one: left out).
    pub fn add(&mut self, record: &DialogueRecord) {
        let Some(fork) = &record.fork else {
            return;
        };
        self.parents.insert(fork.parent.clone());
        self.points.insert((fork.parent.clone(), fork.turn));
        let d = &mut self.done;
        d.branches += 1;
        let reply = record.turns.iter().find(|t| t.turn == fork.turn);
        if reply.is_none_or(|t| matches!(t.outcome, ServiceOutcome::InfraError { .. })) {
            d.failed_replies += 1;
        }
        if fork.fix.is_none() {
            let full = fork.logic.is_some_and(|l| l >= 100.0 - 1e-9);
            d.logic_100 += usize::from(full);
            let model = &record.job.service_model;
            let replies = d.replies_by_model.entry(model.clone()).or_default();
            replies.replies += 1;
            if let Some(logic) = fork.logic {
                replies.scored += 1;
                replies.logic_100 += usize::from(full);
                self.logic.entry(model.clone()).or_default().add(logic);
            }
        }
        for call in record.calls() {
            let role = role(&record.job, &call.model);
            *d.calls.entry(role.to_string()).or_default() += 1;
            self.cost
                .entry(role.to_string())
                .or_default()
                .add(call.cost_usd);
        }
        if fork.fix.is_some() {
            let pass = reached_target(record);
            let count = d
                .fixes_by_model
                .entry(fork.parent_model.clone())
                .or_default();
            count.failed += 1;
            count.flipped += usize::from(pass);
        }
    }

    /// What the fork holds; `left_for_budget` parents were not started.
    pub fn finish(mut self, left_for_budget: usize) -> Forked {
        let d = &mut self.done;
        d.parents = self.parents.len();
        d.points = self.points.len();
        d.left_for_budget = left_for_budget;
        d.cost_usd = self
            .cost
            .iter()
            .map(|(role, money)| (role.clone(), money.usd()))
            .collect();
        for (model, replies) in &mut d.replies_by_model {
            replies.mean_logic = (replies.scored > 0).then(|| {
                let sum = self.logic.get(model).map_or(0.0, Money::usd);
                sum / replies.scored as f64
            });
        }
        if self.fixes {
            d.failed_parents = Some(d.fixes_by_model.values().map(|c| c.failed).sum());
            d.flipped = Some(d.fixes_by_model.values().map(|c| c.flipped).sum());
        }
        self.done
    }
}

/// Where a fix's reply comes from, as recorded.
pub fn fix_source(from: Option<(&str, u32)>) -> FixSource {
    match from {
        Some((model, sample)) => FixSource::Sample {
            model: model.to_string(),
            sample,
        },
        None => FixSource::Written,
    }
}

#[cfg(test)]
mod tests;
