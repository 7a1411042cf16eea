//! One model call asked of a role process: the suites whose driver writes the prompts itself
//! (tau2 retail) reach their models through this one request, in this process or behind the
//! broker, so a new suite of that shape adds no request types, subjects or handlers.

use super::CallRecord;
use super::chat::{ChatMessage, ToolCall, ToolSpec};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Which role a call plays (the role process that serves it: limits, metrics, traces).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CallRole {
    /// The agent under test.
    Agent,
    /// The simulated customer.
    Customer,
    /// A judge.
    Judge,
}

impl CallRole {
    /// The role process that serves such a call (its subjects, limits, metrics, traces).
    pub fn role(self) -> super::Role {
        match self {
            CallRole::Agent => super::Role::Service,
            CallRole::Customer => super::Role::User,
            CallRole::Judge => super::Role::Judge,
        }
    }
}

/// A model call: the model, the messages (system prompt first), the tools it may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelCallRequest {
    /// The model's name in the run's configuration.
    pub model: String,
    /// The role the call plays.
    pub role: CallRole,
    /// The conversation, system prompt first.
    pub messages: Vec<ChatMessage>,
    /// Tools the model may call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// Ask for a JSON object.
    #[serde(default)]
    pub json: bool,
    /// The facts a simulated model plays from (the suite's own shape); never sent to a real
    /// model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facts: Option<Arc<serde_json::Value>>,
}

/// What a model call gave: its answer, or why it failed after the endpoint's retries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelCallReply {
    /// The text.
    pub text: String,
    /// The tools it called, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Why the model stopped (`stop`, `length`, ...), when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// The call as recorded (one).
    pub calls: Vec<CallRecord>,
    /// Why the call failed (after the endpoint's retries), or the model is not served here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
