//! How a role reaches a model: one trait for every backend ([`ChatModel`]), and an [`Endpoint`]
//! that wraps a backend with what every call needs: a response cache, retries with backoff and
//! jitter (honouring Retry-After), a concurrency and requests-per-minute limit, token and cost
//! accounting, and a [`CallRecord`] of what happened.
//!
//! Backends: OpenAI-compatible chat completions ([`openai`]), Anthropic messages
//! ([`anthropic`]), a deployed agent behind a small HTTP contract ([`http_agent`]), and the
//! built-in simulated models ([`sim`]), which run offline and deterministically for a seed.
//! API keys are read from the environment variable the configuration names; they never appear in
//! a log, a record or an error.

pub mod anthropic;
mod cache;
mod endpoint;
pub mod http_agent;
pub mod limit;
pub mod openai;
pub mod probe;
mod retry;
pub mod sim;
pub mod span;

pub use endpoint::{Called, Endpoint};
pub use limit::{Limiter, Limiters, LimitsNow, RateHeaders, Turn};
pub use sage_core::plan::model::{
    ModelConfig, PerMinute, Price, Provider, RetryConfig, StructuredOutput,
};
pub use sage_core::protocol::chat::{ChatMessage, ChatRole, ToolCall, ToolSpec};
pub use sage_core::protocol::schema::JsonSchema;

use sage_core::protocol::Usage;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

/// One model call.
#[derive(Debug, Clone, Default)]
pub struct ChatRequest {
    /// The conversation, system prompt first.
    pub messages: Vec<ChatMessage>,
    /// Ask for a JSON object (OpenAI `response_format`), when the endpoint supports it.
    pub json: bool,
    /// Content retries of the same call by a role (0 for the first): a retry after an
    /// unusable answer is a different request, so it is part of the cache key when > 0.
    pub attempt: u32,
    /// The structured facts a simulated backend plays from; never sent to a real model and not
    /// part of the cache key.
    pub sim: Option<Arc<sim::SimContext>>,
    /// Tools the model may call (none: plain chat).
    pub tools: Vec<ToolSpec>,
    /// The facts a simulated support-desk model plays from; never sent to a real model and not
    /// part of the cache key.
    pub desk: Option<Arc<sim::desk::DeskContext>>,
    /// The facts a simulated model of a suite that writes its own prompts plays from (the
    /// suite's shape, e.g. [`sage_core::tau2::run::Tau2Facts`]); never sent to a real model and
    /// not part of the cache key.
    pub facts: Option<Arc<serde_json::Value>>,
    /// The schema of the answer the role parses, for structured output (none: no schema).
    pub structured: Option<Structured>,
    /// A fork's sample (`sage fork --samples K`): a real backend asks with the seed
    /// `model seed + sample` and, when the model's temperature is unset or 0, at
    /// [`SAMPLE_TEMPERATURE`], so the samples differ; part of the cache key.
    pub sample: Option<u32>,
    /// Bytes at the start of the system prompt (the first message) that every dialogue of the
    /// scenario shares ([`sage_core::prompts::SystemPrompt::shared`]): a backend with a prompt
    /// cache ends its cached part there. None: the whole system prompt (the same on every
    /// turn). Not part of the cache key (the messages are).
    pub cache_prefix: Option<usize>,
}

/// A role's schema for structured output, and whether the role wants it when the model's
/// configuration says nothing ([`ModelConfig::structured_output_for`]).
#[derive(Debug, Clone)]
pub struct Structured {
    /// The answer's JSON Schema.
    pub schema: Arc<JsonSchema>,
    /// On by default (judges), or only when the model's configuration sets it (the agent).
    pub default_on: bool,
}

/// The sampling temperature a fork's samples are asked at when the model's configuration sets
/// none or 0 (greedy decoding would give every sample the same answer).
pub const SAMPLE_TEMPERATURE: f32 = 1.0;

impl ChatRequest {
    /// The seed and temperature this request is sent with by a model configured with `seed`
    /// and `temperature`: those, or for a fork's sample `seed + sample` (from 0 when unset)
    /// and [`SAMPLE_TEMPERATURE`] when the temperature is unset or 0.
    pub fn sampling(
        &self,
        seed: Option<u64>,
        temperature: Option<f32>,
    ) -> (Option<u64>, Option<f32>) {
        match self.sample {
            None => (seed, temperature),
            Some(k) => (
                Some(seed.unwrap_or(0).wrapping_add(u64::from(k))),
                Some(
                    temperature
                        .filter(|t| *t > 0.0)
                        .unwrap_or(SAMPLE_TEMPERATURE),
                ),
            ),
        }
    }

    /// The form this request asks a model configured as `config` for: none without `json`;
    /// otherwise [`ModelConfig::structured_output_for`], a schema form degraded to
    /// `json_object` when the role gave no schema.
    pub fn structured_output(&self, config: &ModelConfig) -> StructuredOutput {
        if !self.json {
            return StructuredOutput::None;
        }
        let default_on = self.structured.as_ref().is_some_and(|s| s.default_on);
        let form = config.structured_output_for(default_on);
        if form.sends_schema() && self.structured.is_none() {
            StructuredOutput::JsonObject
        } else {
            form
        }
    }
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// The text (for tool-less chat: the assistant message content).
    pub text: String,
    /// Why the model stopped (`stop`, `length`, ...), when it says.
    pub finish_reason: Option<String>,
    /// Tokens used.
    pub usage: Usage,
    /// The tools the model called, in order (none for plain chat).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The provider's rate-limit headers on this answer (never cached or stored).
    #[serde(skip)]
    pub rate_limits: Option<RateHeaders>,
}

/// Why a model call failed. Retryable errors are retried by the [`Endpoint`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    /// HTTP 429.
    #[error("rate limited (HTTP 429){}", retry_after.map(|d| format!(", retry after {} ms", d.as_millis())).unwrap_or_default())]
    RateLimited {
        /// The server's Retry-After, if any.
        retry_after: Option<Duration>,
        /// The server's rate-limit headers, if any (boxed: errors stay small).
        limits: Option<Box<RateHeaders>>,
    },
    /// Another HTTP error status.
    #[error("HTTP {status}: {body}")]
    Status {
        /// The status code.
        status: u16,
        /// The start of the body (secrets never appear here: it is the server's text).
        body: String,
        /// The server's Retry-After, if any.
        retry_after: Option<Duration>,
    },
    /// No answer within the configured timeout.
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// The connection failed or broke.
    #[error("connection failed: {0}")]
    Connection(String),
    /// The server answered with something that is not a chat completion.
    #[error("invalid response: {0}")]
    InvalidResponse(String),
    /// The configuration cannot work (e.g. the API key variable is not set); the message
    /// names the model.
    #[error("{0}")]
    Config(String),
}

impl LlmError {
    /// True for errors worth another attempt: 429, 5xx, timeouts and broken connections.
    pub fn is_retryable(&self) -> bool {
        match self {
            LlmError::RateLimited { .. } | LlmError::Timeout(_) | LlmError::Connection(_) => true,
            LlmError::Status { status, .. } => *status >= 500 || *status == 408,
            LlmError::InvalidResponse(_) | LlmError::Config(_) => false,
        }
    }

    /// The server's Retry-After, if it sent one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::RateLimited { retry_after, .. } | LlmError::Status { retry_after, .. } => {
                *retry_after
            }
            _ => None,
        }
    }
}

/// A model backend: chat messages in, text and token usage out.
#[async_trait::async_trait]
pub trait ChatModel: Send + Sync {
    /// One attempt at a call (the [`Endpoint`] retries, limits and caches around it).
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError>;

    /// True for the built-in simulated backends (labelled as such in every output).
    fn is_simulated(&self) -> bool {
        false
    }
}
