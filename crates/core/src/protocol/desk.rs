//! The support-desk suite's messages: a conversation job, the requests the desk driver sends to
//! the roles (the agent under test with its tools, the customer, the two judges) and their
//! replies, and the record of one run of a case (a line of desk.jsonl). Like the SAGE messages,
//! they carry everything a role needs, so a role can answer in another process.

use super::{CallRecord, Usage};
use crate::protocol::chat::ChatMessage;
use crate::scenario::desk::{Bucket, Case, Forbidden, Required, Tool, UnsafeKind};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// One run of one case by one agent under test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeskJob {
    /// The run it belongs to.
    #[serde(deserialize_with = "super::id::run_id")]
    pub run_id: String,
    /// Stable id within the run: `<case>/<model>/r<repeat>`.
    #[serde(deserialize_with = "super::id::dialogue_id")]
    pub dialogue_id: String,
    /// The case id.
    pub case: String,
    /// The agent under test (a model name from the run's configuration).
    pub model: String,
    /// The customer simulator.
    pub customer_model: String,
    /// The judge and the second judge.
    pub judge_models: Vec<String>,
    /// Which run of the case (0-based).
    pub repeat: u32,
    /// Most customer turns.
    pub max_turns: u32,
    /// The conversation's seed: the same for every model (paired comparison).
    pub seed: u64,
}

/// A line of a desk conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeskLine {
    /// 1-based turn.
    pub turn: u32,
    /// `customer`, `agent` or `tool`.
    pub speaker: String,
    /// The text (for a tool: the call and its answer).
    pub text: String,
}

/// The agent's turn: it may call tools several times, then answers the customer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeskAgentRequest {
    /// The job.
    pub job: Arc<DeskJob>,
    /// 1-based turn.
    pub turn: u32,
    /// The agent's view of the conversation so far, without the system prompt (the customer
    /// speaks as `user`; earlier tool calls and results included).
    pub messages: Vec<ChatMessage>,
    /// Every tool call of the conversation so far.
    pub calls: Vec<ToolCall>,
}

/// What the agent did in a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeskAgentReply {
    /// Messages to append to the agent's view: the tool-calling turns with their results,
    /// then the answer.
    pub messages: Vec<ChatMessage>,
    /// The answer the customer sees.
    pub answer: String,
    /// The tool calls made in this turn, in order.
    pub tool_calls: Vec<ToolCall>,
    /// The tool lines of the transcript (each call and its answer).
    pub lines: Vec<DeskLine>,
    /// A handover or a closed ticket ends the conversation.
    pub ended: bool,
    /// The model stopped at its token limit in this turn (`finish_reason: length`).
    pub truncated: bool,
    /// Every model call made.
    pub calls: Vec<CallRecord>,
    /// The agent could not be reached (after the endpoint's retries).
    pub infra_error: Option<String>,
}

/// The customer's next message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeskCustomerRequest {
    /// The job.
    pub job: Arc<DeskJob>,
    /// The 1-based turn the message opens.
    pub turn: u32,
    /// The customer's view so far, without the system prompt (the agent speaks as `user`, the
    /// customer as `assistant`).
    pub messages: Vec<ChatMessage>,
    /// Every tool call of the conversation so far.
    pub calls: Vec<ToolCall>,
}

/// The customer's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeskCustomerReply {
    /// The message (without the end marker).
    pub message: String,
    /// The customer ends the conversation after it.
    pub done: bool,
    /// Every model call made.
    pub calls: Vec<CallRecord>,
    /// The customer simulator could not be reached.
    pub infra_error: Option<String>,
}

/// The two judges score a finished conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeskJudgeRequest {
    /// The job.
    pub job: Arc<DeskJob>,
    /// The transcript as the judges read it.
    pub transcript: String,
    /// What the transcript shows (simulated judges score from it).
    pub verdict: Verdict,
    /// Every tool call of the conversation.
    pub calls: Vec<ToolCall>,
}

/// The judges' scores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeskJudgeReply {
    /// The judge's scores, when it answered with usable ones.
    pub judged: Option<Judged>,
    /// The second judge's scores, likewise.
    pub rejudged: Option<Judged>,
    /// Every model call made.
    pub calls: Vec<CallRecord>,
    /// The judges cannot be served here (no store, or a judge model not configured). A judge
    /// that answers with an error or unusable scores only leaves its scores out.
    pub infra_error: Option<String>,
}

/// One run of one case by one model (a line of desk.jsonl).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeskRecord {
    /// The job.
    pub job: DeskJob,
    /// Customer turns played.
    pub turns: u32,
    /// The conversation, tool calls included.
    pub transcript: Vec<DeskLine>,
    /// The case, its tool calls and its judgments.
    pub run: CaseRun,
    /// What the transcript shows.
    pub verdict: Verdict,
    /// Every model call (agent, customer, judges).
    pub calls: Vec<CallRecord>,
    /// Tokens of the agent's calls.
    pub usage: Usage,
    /// Cost of the agent's calls (US dollars).
    pub cost_usd: f64,
    /// Agent turns in which the model stopped at its token limit (`finish_reason: length`):
    /// its tool calls or answer may be cut short; raise the model's `max_tokens`.
    #[serde(default)]
    pub truncated_turns: u32,
    /// Why the conversation stopped early, when a model or a role could not be reached.
    pub infra_error: Option<String>,
}

/// A tool call the agent made, as the transcript records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The turn it was made in (1-based).
    pub turn: u32,
    /// The tool.
    pub tool: Tool,
    /// The order number it named, if any.
    pub order: Option<String>,
}

/// What the judges said of one run of a case (each 0-1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Judged {
    /// Was the solvable issue actually resolved, against the store's policy.
    pub resolution_quality: f64,
    /// How closely the agent followed the policy and instructions.
    pub policy_adherence: f64,
}

/// One run of one case: what was owed and what the agent did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseRun {
    /// The case id.
    pub case: String,
    /// Its bucket.
    pub bucket: Bucket,
    /// The order it is about.
    pub order: String,
    /// What resolves it.
    pub required: Required,
    /// The unsafe call it tempts (adversarial cases).
    pub forbidden: Option<Forbidden>,
    /// Every tool call of the transcript, in order.
    pub calls: Vec<ToolCall>,
    /// The primary judge's scores, when it answered.
    pub judged: Option<Judged>,
    /// The second judge's scores, when it answered.
    pub rejudged: Option<Judged>,
}

impl CaseRun {
    /// A run of `case` with these calls and no judgments yet.
    pub fn new(case: &Case, calls: Vec<ToolCall>) -> CaseRun {
        CaseRun {
            case: case.id.clone(),
            bucket: case.bucket,
            order: case.order.clone(),
            required: case.required,
            forbidden: case.forbidden,
            calls,
            judged: None,
            rejudged: None,
        }
    }
}

/// What the transcript of one run shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// The agent handed over to a human.
    pub handed_over: bool,
    /// The required outcome happened (the required call on the case's order, or a handover;
    /// for a refusal: the forbidden call was not made).
    pub resolved: bool,
    /// The unsafe call the case tempts was made.
    pub unsafe_action: Option<UnsafeKind>,
    /// The ticket was closed before the required outcome happened.
    pub false_closure: bool,
}
