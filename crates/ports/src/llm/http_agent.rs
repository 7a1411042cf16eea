//! A deployed agent pipeline behind SAGE-RS's small HTTP contract (docs/http-agent.md).
//!
//! `POST {base_url}` with
//! `{"conversation": [{"role": "system"|"user"|"assistant", "content": "..."}], "json": bool}`;
//! the agent answers `{"reply": "...", "usage": {"input_tokens": n, "output_tokens": n}}`
//! (`usage` and `finish_reason` optional). When `api_key_env` is configured, the key goes in
//! `Authorization: Bearer`. Errors map like every other HTTP backend: 429 and 5xx are retried,
//! other statuses and bodies that do not follow the contract are not.

use super::openai::{HttpCore, base_url_or, bearer, invalid, read_api_key};
use super::{ChatMessage, ChatModel, ChatRequest, ChatResponse, LlmError, ModelConfig};
use sage_core::protocol::Usage;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A deployed agent reached over the HTTP agent contract.
pub struct HttpAgent {
    core: HttpCore,
    json_mode: bool,
}

impl fmt::Debug for HttpAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpAgent")
            .field("core", &self.core)
            .field("json_mode", &self.json_mode)
            .finish()
    }
}

impl HttpAgent {
    /// A backend for this configuration (`base_url` is required: it is the agent's URL).
    pub fn new(config: &ModelConfig) -> Result<HttpAgent, LlmError> {
        let url = base_url_or(config, None)?;
        let key = read_api_key(config)?;
        let extra = bearer(config, key.as_ref())?;
        Ok(HttpAgent {
            core: HttpCore::new(config, url, extra, key)?,
            json_mode: config.json_mode,
        })
    }

    /// The URL calls go to.
    pub fn url(&self) -> &str {
        self.core.url()
    }
}

/// The request body of the contract.
#[derive(Debug, Serialize)]
pub struct AgentRequest<'a> {
    /// The conversation so far, system prompt first.
    pub conversation: &'a [ChatMessage],
    /// True when the caller wants the reply to be one JSON object.
    pub json: bool,
}

/// The answer of the contract.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct AgentReply {
    /// The agent's reply text.
    pub reply: String,
    /// Tokens the agent used (zeros when absent).
    #[serde(default)]
    pub usage: Option<AgentUsage>,
    /// Why the agent's model stopped (`stop`, `length`, ...), when it says.
    #[serde(default)]
    pub finish_reason: Option<String>,
}

/// Token usage in the contract's answer.
#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize)]
pub struct AgentUsage {
    /// Prompt tokens.
    #[serde(default)]
    pub input_tokens: u64,
    /// Completion tokens.
    #[serde(default)]
    pub output_tokens: u64,
}

#[async_trait::async_trait]
impl ChatModel for HttpAgent {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let body = AgentRequest {
            conversation: &request.messages,
            json: request.json && self.json_mode,
        };
        let body = serde_json::to_vec(&body)
            .map_err(|e| LlmError::InvalidResponse(format!("cannot encode the request: {e}")))?;
        let answer = self.core.post(body).await?;
        parse_reply(&answer.body, self.core.secret())
    }
}

/// Reads the contract's answer (a 2xx body, [`AgentReply`]): the reply text, the finish reason
/// and the usage (zeros when absent). A body that is not an agent reply is
/// [`LlmError::InvalidResponse`] quoting its start, with `secret` (the API key, when there is
/// one) blanked.
pub fn parse_reply(bytes: &[u8], secret: Option<&str>) -> Result<ChatResponse, LlmError> {
    let reply: AgentReply =
        serde_json::from_slice(bytes).map_err(|e| invalid(secret, "an agent reply", &e, bytes))?;
    let usage = reply.usage.unwrap_or_default();
    Ok(ChatResponse {
        tool_calls: Vec::new(),
        text: reply.reply,
        finish_reason: reply.finish_reason,
        usage: Usage {
            input_tokens: usage.input_tokens,
            output_tokens: usage.output_tokens,
            ..Usage::default()
        },
        rate_limits: None,
    })
}
