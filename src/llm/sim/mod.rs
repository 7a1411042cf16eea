//! The built-in simulated models: offline, deterministic for a seed, labelled simulated in every
//! output. They play from the structured [`SimContext`] a role attaches to its request (the
//! job's facts and ground truth), not from the prompt text.

use super::{ChatModel, LlmError, ModelConfig};
use crate::protocol::{DialogueJob, Role};
use crate::sop::Sop;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// What a simulated model is told about the call (never sent to a real model).
#[derive(Debug, Clone)]
pub struct SimContext {
    /// The compiled scenario.
    pub sop: Arc<Sop>,
    /// The job (ground truth, intent, persona, adversarial level, seed).
    pub job: DialogueJob,
    /// The role calling.
    pub role: Role,
    /// 1-based turn.
    pub turn: u32,
    /// For judges: which judge of the panel (0, 1, 2).
    pub judge_index: usize,
    /// For the user: the agent's last action, if any.
    pub last_action: Option<String>,
    /// For judges: the agent reply being judged.
    pub agent_chat: Option<String>,
}

/// Which simulated model, and its settings (`sim:` in a model's configuration).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimSpec {
    /// `agent`, `user` or `judge`.
    pub kind: String,
}

/// Builds the simulated backend a configuration describes.
pub fn build(config: &ModelConfig) -> Result<Arc<dyn ChatModel>, LlmError> {
    let _ = config;
    Err(LlmError::Config("simulated models are not built yet".into()))
}
