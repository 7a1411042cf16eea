//! Chat messages as every model backend and prompt uses them: who wrote it, its text, the tool
//! calls it made or answers. Pure serde types (the model ports in `llm` send them).

use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Who wrote a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    /// Instructions.
    System,
    /// The counterpart.
    User,
    /// The model itself.
    Assistant,
    /// The result of a tool the model called.
    Tool,
}

impl ChatRole {
    /// `system`, `user`, `assistant` or `tool`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ChatRole::System => "system",
            ChatRole::User => "user",
            ChatRole::Assistant => "assistant",
            ChatRole::Tool => "tool",
        }
    }
}

/// A tool the model may call (function calling): its name, what it does, and the JSON Schema
/// of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of its arguments (an object).
    pub parameters: serde_json::Value,
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id (to answer it with a tool message).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as JSON text, as the model wrote them (they may not parse).
    pub arguments: String,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Who wrote it.
    pub role: ChatRole,
    /// The text, shared: a system prompt is rendered once and sent with many calls.
    pub content: Arc<str>,
    /// The tools an assistant message called.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The call a tool message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl ChatMessage {
    /// A message with this role and text.
    pub fn new(role: ChatRole, content: impl Into<Arc<str>>) -> ChatMessage {
        ChatMessage {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }

    /// The model's turn that called tools (with its text, possibly empty).
    pub fn tool_calls(content: impl Into<Arc<str>>, calls: Vec<ToolCall>) -> ChatMessage {
        ChatMessage {
            tool_calls: calls,
            ..ChatMessage::new(ChatRole::Assistant, content)
        }
    }

    /// The result of the tool call `id`.
    pub fn tool_result(id: &str, content: impl Into<Arc<str>>) -> ChatMessage {
        ChatMessage {
            tool_call_id: Some(id.to_string()),
            ..ChatMessage::new(ChatRole::Tool, content)
        }
    }
}
