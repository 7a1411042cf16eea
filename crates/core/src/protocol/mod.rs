//! Messages and records shared by every actor, port and transport, and the parsing of the service
//! agent's answer into a typed turn or a typed format error. Pure: serde types and functions.
//!
//! Everything here crosses process boundaries in the distributed mode (JSON over NATS), so every
//! type is `Serialize + Deserialize` and carries what the receiving side needs, nothing more.

pub mod call;
pub mod chat;
pub mod desk;
pub mod id;
pub mod judged;
pub mod parse;
pub mod rubric;
pub mod scenario_schema;
pub mod schema;
pub mod simulator;

use crate::scenario::{Adversarial, Value};
use crate::sop::{Assignment, Route};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

pub use judged::{JudgeTurns, PAPER_JUDGED_TURNS};
pub use parse::{FormatError, parse_agent_output};

/// The roles of a dialogue, as reached through the transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Drives one dialogue turn by turn.
    Dialogue,
    /// The simulated customer.
    User,
    /// The agent under test.
    Service,
    /// The judge panel (1, 3 or 5 judges).
    Judge,
    /// The rule engine.
    Rule,
}

/// A model name made safe as one token of a message subject (`.`, `*`, `>` and whitespace
/// become `_`): the service role of a model is requested on `sage.v1.role.service.<token>`.
pub fn subject_token(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            '.' | '*' | '>' => '_',
            c if c.is_whitespace() => '_',
            c => c,
        })
        .collect()
}

impl Role {
    /// The role's name as used in subjects, metrics and config (`user`, `service`, ...).
    pub fn as_str(&self) -> &'static str {
        match self {
            Role::Dialogue => "dialogue",
            Role::User => "user",
            Role::Service => "service",
            Role::Judge => "judge",
            Role::Rule => "rule",
        }
    }
}

/// Who said a line of the dialogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Speaker {
    /// The customer (user simulator).
    User,
    /// The service agent under test (its `chat` text).
    Agent,
}

/// One line of the dialogue as both sides see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Line {
    /// Who said it.
    pub speaker: Speaker,
    /// What was said.
    pub text: String,
}

/// One dialogue to run: everything that fixes it, so any process can run it and get the same
/// result for the same seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DialogueJob {
    /// The run it belongs to.
    #[serde(deserialize_with = "id::run_id")]
    pub run_id: String,
    /// Stable id within the run, e.g. `telecom_package/0007/sim-strong/r0`.
    #[serde(deserialize_with = "id::dialogue_id")]
    pub dialogue_id: String,
    /// Scenario id.
    pub scenario: String,
    /// The target route (the reference for the complete information of this job).
    pub target: Route,
    /// The job's ground truth for the classification fields.
    pub fields: Assignment,
    /// The system variables (known to the agent, the judges and the rule engine).
    pub variables: Assignment,
    /// User intent id.
    pub intent: String,
    /// Persona id.
    pub persona: String,
    /// Adversarial level (the intent's).
    pub adversarial: Adversarial,
    /// The service model under test (a model name from the run's configuration).
    pub service_model: String,
    /// The user-simulator model.
    pub user_model: String,
    /// Which of the run's customer simulators `user_model` is (`user_models`, 0-based): the
    /// leaderboard ranks under the first, the others feed `simulator_sensitivity`. Absent
    /// when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub user_model_index: u32,
    /// The judge models (an odd panel: 1, 3 or 5).
    pub judge_models: Vec<String>,
    /// Which turns the judges score (records written before this existed: every turn).
    #[serde(default = "JudgeTurns::every")]
    pub judge_turns: JudgeTurns,
    /// Most user turns.
    pub max_turns: u32,
    /// The dialogue's seed (derived from the run seed and the dialogue id).
    pub seed: u64,
    /// Repeat index (0-based) when cases are run several times.
    pub repeat: u32,
}

/// Token usage of model calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, all of them (those read from the provider's prompt cache and those written
    /// to it included).
    pub input_tokens: u64,
    /// Completion tokens.
    pub output_tokens: u64,
    /// Of `input_tokens`, those the provider read from its prompt cache (OpenAI
    /// `prompt_tokens_details.cached_tokens`, Anthropic `cache_read_input_tokens`), priced at the
    /// cached rate. Absent from the records when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_input_tokens: u64,
    /// Of `input_tokens`, those the provider wrote to its prompt cache (Anthropic
    /// `cache_creation_input_tokens`), priced at the cache-write rate. Absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_input_tokens: u64,
}

fn is_zero<T: Default + PartialEq>(n: &T) -> bool {
    *n == T::default()
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, o: Usage) {
        self.input_tokens = self.input_tokens.saturating_add(o.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(o.output_tokens);
        self.cached_input_tokens = self
            .cached_input_tokens
            .saturating_add(o.cached_input_tokens);
        self.cache_write_input_tokens = self
            .cache_write_input_tokens
            .saturating_add(o.cache_write_input_tokens);
    }
}

/// One model call as recorded in the results: the request, the response or the error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// Model name (from the configuration).
    pub model: String,
    /// True for the built-in simulated backends.
    pub simulated: bool,
    /// The messages sent, as (role, content), when full prompts are recorded; otherwise one
    /// `("prompt_sha256", hex)` entry identifying them (none for a simulated model, which plays
    /// from the job rather than the prompt). Prompts are rendered deterministically from the
    /// scenario, the job and the history, all of which are in the record.
    pub request: Vec<(String, String)>,
    /// The text returned. Absent on error; for the agent's call, whose text is the turn's
    /// `raw_output`; and for an accepted answer of a simulated user or judge, which the record
    /// holds parsed (the user message, the verdict) and the seed reproduces.
    pub response: Option<String>,
    /// Why the model stopped (`stop`, `length`, ...), when known.
    pub finish_reason: Option<String>,
    /// The error after retries, when the call failed.
    pub error: Option<String>,
    /// Attempts made (1 when the first succeeded).
    pub attempts: u32,
    /// Tokens used.
    pub usage: Usage,
    /// Cost in US dollars from the configured prices.
    pub cost_usd: f64,
    /// Served from the response cache.
    pub cached: bool,
    /// Wall-clock latency of the call including retries, milliseconds.
    pub latency_ms: u64,
    /// Attempts the provider refused for its rate limit (HTTP 429); left out when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refused: u32,
    /// Milliseconds the attempts waited for the provider limit's grant (a slot, a pause, the
    /// requests and tokens rates), part of `latency_ms`; left out when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub limit_wait_ms: u64,
}

/// What the service agent answered in one turn, parsed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentTurn {
    /// Its classification of each field.
    pub classification: BTreeMap<String, Value>,
    /// Its reasoning (not judged).
    pub cot: String,
    /// The stages it says it traversed (`now_path`).
    pub path: Vec<String>,
    /// The action it took (`finals.Action`).
    pub action: String,
    /// Extra finals (e.g. PLAN).
    pub outputs: BTreeMap<String, String>,
    /// Its reply to the user.
    pub chat: String,
}

/// The five chat-quality dimensions a judge scores, each 3, 6 or 9 (appendix B.3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatScores {
    /// Linguistic quality (weight 20%).
    pub linguistic_quality: u8,
    /// Anthropomorphism and emotion (25%).
    pub anthropomorphism_emotion: u8,
    /// Content utility (25%).
    pub content_utility: u8,
    /// User satisfaction (15%).
    pub user_satisfaction: u8,
    /// Instruction compliance (15%).
    pub instruction_compliance: u8,
}

impl ChatScores {
    /// The score of the dimension keyed `key` (a [`rubric::DIMENSIONS`] key), if it is one.
    pub fn get(&self, key: &str) -> Option<u8> {
        Some(match key {
            "linguistic_quality" => self.linguistic_quality,
            "anthropomorphism_emotion" => self.anthropomorphism_emotion,
            "content_utility" => self.content_utility,
            "user_satisfaction" => self.user_satisfaction,
            "instruction_compliance" => self.instruction_compliance,
            _ => return None,
        })
    }
}

/// One judge's verdict on one turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgment {
    /// The judge's classification of every field.
    pub classification: BTreeMap<String, Value>,
    /// Its chat-quality scores.
    pub chat: ChatScores,
}

/// Request to the user role: the next customer message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserRequest {
    /// The job.
    pub job: Arc<DialogueJob>,
    /// 1-based turn about to be played.
    pub turn: u32,
    /// The dialogue so far.
    pub history: Arc<Vec<Line>>,
    /// The agent's last action (its state), if any turn was parsed.
    pub last_action: Option<String>,
}

/// The user role's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserReply {
    /// The next message, or `None` when the customer ends the dialogue.
    pub message: Option<String>,
    /// The model calls made (with retries).
    pub calls: Vec<CallRecord>,
    /// Set when the user side could not produce a message after retries.
    pub infra_error: Option<String>,
    /// Set when `customer_guard` asked the customer model again because its first line was
    /// off-script: that line and why (`message` is the second answer). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<CustomerRetry>,
    /// Set when the audit found `message` off-case ([`crate::scoring::fidelity::off_case`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off_case: Option<simulator::OffCase>,
}

/// A customer line that `customer_guard` (docs/run-config.md) found off-script by the cheap
/// check ([`crate::scoring::fidelity::off_script`]) and asked again, once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CustomerRetry {
    /// The customer model's first line, set aside.
    pub first: String,
    /// Why it was set aside: [`crate::scoring::fidelity::OffScript::describe`] (`an empty
    /// line`, `a line the customer already said`, `the agent's words (roles swapped)`).
    pub reason: String,
}

/// Request to the service role: the agent under test answers one user message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceRequest {
    /// The job.
    pub job: Arc<DialogueJob>,
    /// 1-based turn.
    pub turn: u32,
    /// The dialogue before this user message.
    pub history: Arc<Vec<Line>>,
    /// The user message to answer.
    pub user_message: String,
    /// A fork's sample (`sage fork --samples K`, 0-based): the same context asked again, each
    /// sample drawn apart (a simulated agent draws by it, a real one gets another seed and a
    /// sampling temperature). Absent in a run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample: Option<u32>,
}

/// The outcome of a service turn: a valid answer, a typed format error, or an infrastructure
/// error (the model could not be reached after retries).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ServiceOutcome {
    /// The answer parsed and every value is valid.
    Valid {
        /// The parsed answer.
        turn: AgentTurn,
    },
    /// The model answered, but not in the required format.
    FormatError {
        /// What is wrong.
        error: FormatError,
        /// The reply shown to the user (the raw text, or the `chat` value when it could be read).
        chat: String,
    },
    /// The model could not be reached (after retries).
    InfraError {
        /// The last error.
        error: String,
    },
}

/// The service role's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServiceReply {
    /// What the agent did.
    pub outcome: ServiceOutcome,
    /// The raw model output (when there was one).
    pub raw: Option<String>,
    /// The model calls made.
    pub calls: Vec<CallRecord>,
}

/// Request to the judge panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeRequest {
    /// The job.
    pub job: Arc<DialogueJob>,
    /// 1-based turn.
    pub turn: u32,
    /// The dialogue before this turn.
    pub history: Arc<Vec<Line>>,
    /// The user message of this turn.
    pub user_message: String,
    /// The agent's reply to judge.
    pub agent_chat: String,
}

/// The panel's answer: each judge's verdict (or its failure), the majority classification and
/// the mean chat score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeReply {
    /// Per judge (in the job's judge order): its verdict, or the error after retries.
    pub judgments: Vec<Result<Judgment, String>>,
    /// Majority vote per field over the judges that answered (ties: the first judge's value).
    pub consensus: Option<BTreeMap<String, Value>>,
    /// The model calls made.
    pub calls: Vec<CallRecord>,
}

/// Request to the rule engine: the reference for a classification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleRequest {
    /// Scenario id.
    pub scenario: String,
    /// The (consensus) classification.
    pub fields: BTreeMap<String, Value>,
    /// The system variables.
    pub variables: BTreeMap<String, Value>,
}

/// The rule engine's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleReply {
    /// The reference route, or why there is none.
    pub route: Result<Route, String>,
}

/// The per-turn scores (0-100), as the paper defines them (eqs. 5-9), plus the released code's
/// variant of the path score.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TurnScores {
    /// Classification accuracy against the judges' consensus, 0-1.
    pub acc_cls: f64,
    /// |p ∩ p*| / |p*|, 0-1.
    pub sim_path: f64,
    /// Action correctness, 0-1 (0.7 action + 0.3 outputs where the scenario has outputs).
    pub acc_action: f64,
    /// 0.4 acc_cls + 0.4 sim_path + 0.2 acc_action, 0-100.
    pub logic: f64,
    /// Mean over judges of the weighted chat scores, 0-100.
    pub chat: f64,
    /// 0.8 logic + 0.2 chat, 0-100.
    pub overall: f64,
    /// The released code's path score: 1 on an exact match, else common prefix / longer length.
    pub sim_path_prefix: f64,
}

/// Everything recorded about one turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnRecord {
    /// 1-based turn.
    pub turn: u32,
    /// The customer's message.
    pub user_message: String,
    /// The raw service output, if any.
    pub raw_output: Option<String>,
    /// What the agent did.
    pub outcome: ServiceOutcome,
    /// The panel's verdicts and consensus (absent when the agent side failed).
    pub judges: Option<JudgeReply>,
    /// The reference route for the consensus classification.
    pub reference: Option<Result<Route, String>>,
    /// The scores (absent for an infrastructure error: such a turn is not scored).
    pub scores: Option<TurnScores>,
    /// Set when the turn could not be scored for infrastructure reasons (user, agent or judges
    /// unreachable after retries).
    pub infra_error: Option<String>,
    /// Every model call of the turn (user, service, judges).
    pub calls: Vec<CallRecord>,
    /// Set when `customer_guard` asked the customer again in this turn: the first line, set
    /// aside, and why (`user_message` is the second answer; both calls are in `calls`).
    /// Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub customer_retry: Option<CustomerRetry>,
    /// Set when the customer's line asserts what the case does not hold (the audit,
    /// [`crate::scoring::fidelity::off_case`]): the agent's failures from here on may be the
    /// simulator's doing. Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off_case: Option<simulator::OffCase>,
}

/// A turn against the reference, as the report reads it: whether the agent followed the
/// reference path and action the rule engine derived from the judges' consensus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TurnVerdict {
    /// Judged, and the agent's path and action are the reference's.
    Followed,
    /// Judged, and the agent's path or action differs from the reference's.
    Left,
    /// The agent's answer did not parse (a format error on a judged turn).
    FormatError,
    /// The customer, the agent or the judges could not be reached: not scored.
    InfraError,
    /// The judges were not asked about this turn (`judge_turns`): no reference.
    NotJudged,
    /// Judged, but the rule engine gave no reference route (the consensus fits no route).
    NoReference,
}

impl TurnVerdict {
    /// One letter per verdict, as the report's rows carry them: `o` followed, `x` left,
    /// `f` format error, `i` infrastructure error, `-` not judged, `n` no reference.
    pub fn letter(self) -> char {
        match self {
            TurnVerdict::Followed => 'o',
            TurnVerdict::Left => 'x',
            TurnVerdict::FormatError => 'f',
            TurnVerdict::InfraError => 'i',
            TurnVerdict::NotJudged => '-',
            TurnVerdict::NoReference => 'n',
        }
    }

    /// Whether the agent left the reference here: a path or action other than the reference's,
    /// or a format error where a reference existed.
    pub fn left(self) -> bool {
        matches!(self, TurnVerdict::Left | TurnVerdict::FormatError)
    }
}

impl TurnRecord {
    /// Its scores when every summary mean counts them: a turn scored (a valid answer the
    /// judges scored, or a format error), not an infrastructure error.
    pub fn counted_scores(&self) -> Option<&TurnScores> {
        match self.outcome {
            ServiceOutcome::InfraError { .. } => None,
            _ => self.scores.as_ref(),
        }
    }

    /// The turn against its reference ([`TurnVerdict`]).
    pub fn verdict(&self) -> TurnVerdict {
        let reference = match &self.reference {
            Some(Ok(route)) => Some(route),
            _ => None,
        };
        match &self.outcome {
            ServiceOutcome::InfraError { .. } => TurnVerdict::InfraError,
            _ if self.judges.is_none() && self.infra_error.is_none() => TurnVerdict::NotJudged,
            ServiceOutcome::FormatError { .. } if reference.is_some() => TurnVerdict::FormatError,
            _ if self.infra_error.is_some() => TurnVerdict::InfraError,
            ServiceOutcome::FormatError { .. } => TurnVerdict::NoReference,
            ServiceOutcome::Valid { turn } => match reference {
                None => TurnVerdict::NoReference,
                Some(r) if r.path == turn.path && r.action == turn.action => TurnVerdict::Followed,
                Some(_) => TurnVerdict::Left,
            },
        }
    }
}

/// How a dialogue ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DialogueEnd {
    /// The customer ended it after the agent took the target action.
    Resolved,
    /// The customer ended it before the agent took the target action.
    UserEndedEarly,
    /// It reached the configured maximum of turns.
    MaxTurns,
    /// The user side failed (infrastructure) and the dialogue could not go on.
    InfraError,
}

impl DialogueEnd {
    /// Every way a dialogue ends.
    pub const ALL: [DialogueEnd; 4] = [
        DialogueEnd::Resolved,
        DialogueEnd::UserEndedEarly,
        DialogueEnd::MaxTurns,
        DialogueEnd::InfraError,
    ];

    /// Its name, as in dialogues.jsonl and the `end` metrics label: `resolved`,
    /// `user_ended_early`, `max_turns`, `infra_error`.
    pub fn name(self) -> &'static str {
        match self {
            DialogueEnd::Resolved => "resolved",
            DialogueEnd::UserEndedEarly => "user_ended_early",
            DialogueEnd::MaxTurns => "max_turns",
            DialogueEnd::InfraError => "infra_error",
        }
    }
}

/// One finished dialogue: the line written to dialogues.jsonl.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DialogueRecord {
    /// The job that was run.
    pub job: DialogueJob,
    /// Every turn.
    pub turns: Vec<TurnRecord>,
    /// The model calls made after the last turn: the customer's call that ended the dialogue
    /// (every call made is in the record, with its tokens and cost).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub closing_calls: Vec<CallRecord>,
    /// How it ended.
    pub end: DialogueEnd,
    /// Whether the run's configuration declares the service model a built-in simulated one.
    pub simulated: bool,
    /// The structured-output form the run's configuration sets for the service model, when it
    /// sends a schema (labelled "structured" in leaderboards and the report); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<schema::StructuredOutput>,
    /// Total tokens.
    pub usage: Usage,
    /// Total cost in US dollars.
    pub cost_usd: f64,
    /// Set on a fork's branch (`sage fork`): the stored dialogue it was forked from and how.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork: Option<Box<Fork>>,
}

/// Where a fork's branch comes from (`sage fork`, docs/training-data.md). Its record holds the
/// parent's turns before the fork turn (what was said and chosen there: its context, without
/// the parent's verdicts, scores and calls), then its own reply at the fork turn, scored
/// against the parent turn's reference, then, with `--continue`, the turns it played on to its
/// end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fork {
    /// The parent dialogue's id (in the folder forked).
    pub parent: String,
    /// The parent's model under test.
    pub parent_model: String,
    /// The turn forked, 1-based.
    pub turn: u32,
    /// Which of the branch model's samples this is, 0-based (the fix: 0).
    pub sample: u32,
    /// Set on the reference-following branch of a deviation fork: the reply that follows the
    /// reference at the turn where the parent first left it, played on by the parent's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fix: Option<FixSource>,
    /// The Logic of the reply at the fork turn (0-100) against the parent turn's reference:
    /// its classification against the parent's judges' consensus, its path and action against
    /// the route the rule engine derived from it. Absent when the reply could not be had.
    pub logic: Option<f64>,
}

/// Where the reply of a fix branch comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "snake_case")]
pub enum FixSource {
    /// A sample of the fork that followed the reference (its model and sample).
    Sample {
        /// The model that answered.
        model: String,
        /// Its sample.
        sample: u32,
    },
    /// No sample followed it: the reply was written from the reference (the parent's
    /// classification consensus, the reference path and action, the parent's chat).
    Written,
}

impl DialogueRecord {
    /// Every model call of the dialogue: its turns', then the closing ones.
    pub fn calls(&self) -> impl Iterator<Item = &CallRecord> {
        (self.turns.iter().flat_map(|t| &t.calls)).chain(&self.closing_calls)
    }

    /// Whether an infrastructure error touched the dialogue: some turn recorded one (the
    /// customer side, the agent, every judge or the rule engine could not be reached, so the
    /// turn was not scored), whether the dialogue went on or ended on it. The one definition
    /// every count of such dialogues uses (`sage run`'s closing line, `sage status`, the
    /// report's filter; docs/metrics-scoring.md).
    pub fn had_infra_error(&self) -> bool {
        self.end == DialogueEnd::InfraError
            || self.turns.iter().any(|t| {
                t.infra_error.is_some() || matches!(t.outcome, ServiceOutcome::InfraError { .. })
            })
    }

    /// The turns whose agent answer was a format error.
    pub fn format_error_turns(&self) -> usize {
        self.turns
            .iter()
            .filter(|t| matches!(t.outcome, ServiceOutcome::FormatError { .. }))
            .count()
    }
}
