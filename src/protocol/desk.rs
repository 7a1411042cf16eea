//! What a support-desk run records: one line of desk.jsonl per run of a case by a model.

use super::{CallRecord, Usage};
use crate::scoring::desk::{CaseRun, Verdict};
use serde::{Deserialize, Serialize};

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

/// One run of one case by one model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeskRecord {
    /// The run.
    pub run_id: String,
    /// The model under test.
    pub model: String,
    /// Which run of the case (0-based).
    pub repeat: u32,
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
    /// Why the conversation stopped early, when a model could not be reached.
    pub infra_error: Option<String>,
}
