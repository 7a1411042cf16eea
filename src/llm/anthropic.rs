//! Anthropic messages API (`POST {base_url}/messages`, default `https://api.anthropic.com/v1`).
//!
//! System messages go to the top-level `system` field (joined by a blank line when there are
//! several); `max_tokens` is required by the API and defaults to [`DEFAULT_MAX_TOKENS`]. The
//! `stop_reason` is reported in the OpenAI vocabulary so that truncation is detected the same way
//! for every backend: `max_tokens` becomes `length`, `end_turn` and `stop_sequence` become `stop`.
//! The messages API has no JSON mode and no seed: `request.json` and `seed` are not sent.

use super::openai::{HttpCore, base_url_or, invalid, read_api_key, secret_header};
use super::{ChatModel, ChatRequest, ChatResponse, ChatRole, LlmError, ModelConfig};
use crate::protocol::Usage;
use reqwest::header::{HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The base URL used when an Anthropic configuration names none.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";

/// The `anthropic-version` header sent with every call.
pub const API_VERSION: &str = "2023-06-01";

/// `max_tokens` when the configuration sets none (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 1024;

/// An Anthropic messages backend. The key (from `api_key_env`) goes in `x-api-key`.
pub struct AnthropicMessages {
    core: HttpCore,
    model: String,
    temperature: Option<f32>,
    max_tokens: u32,
}

impl fmt::Debug for AnthropicMessages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicMessages")
            .field("core", &self.core)
            .field("model", &self.model)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .finish()
    }
}

impl AnthropicMessages {
    /// A backend for this configuration; reads the API key variable once, here.
    pub fn new(config: &ModelConfig) -> Result<AnthropicMessages, LlmError> {
        let base = base_url_or(config, Some(DEFAULT_BASE_URL))?;
        let key = read_api_key(config)?;
        let mut extra = vec![(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        )];
        if let Some(key) = &key {
            extra.push((
                HeaderName::from_static("x-api-key"),
                secret_header(config, key.expose())?,
            ));
        }
        Ok(AnthropicMessages {
            core: HttpCore::new(config, format!("{base}/messages"), extra, key)?,
            model: config.model_id().to_string(),
            temperature: config.temperature,
            max_tokens: config.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        })
    }

    /// The URL calls go to.
    pub fn url(&self) -> &str {
        self.core.url()
    }
}

#[derive(Serialize)]
struct MessagesRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<String>,
    messages: Vec<Turn<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
}

#[derive(Serialize)]
struct Turn<'a> {
    role: &'static str,
    content: &'a str,
}

#[derive(Deserialize)]
struct MessagesResponse {
    content: Vec<Block>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<MessagesUsage>,
}

#[derive(Deserialize)]
struct Block {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
struct MessagesUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

/// Anthropic's `stop_reason` in the OpenAI vocabulary (`length` for truncation).
pub fn finish_reason(stop_reason: &str) -> String {
    match stop_reason {
        "max_tokens" => "length".to_string(),
        "end_turn" | "stop_sequence" => "stop".to_string(),
        other => other.to_string(),
    }
}

#[async_trait::async_trait]
impl ChatModel for AnthropicMessages {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut system: Vec<&str> = Vec::new();
        let mut messages = Vec::with_capacity(request.messages.len());
        for m in &request.messages {
            match m.role {
                ChatRole::System => system.push(&m.content),
                ChatRole::User | ChatRole::Assistant => messages.push(Turn {
                    role: m.role.as_str(),
                    content: &m.content,
                }),
            }
        }
        let body = MessagesRequest {
            model: &self.model,
            max_tokens: self.max_tokens,
            system: (!system.is_empty()).then(|| system.join("\n\n")),
            messages,
            temperature: self.temperature,
        };
        let body = serde_json::to_vec(&body)
            .map_err(|e| LlmError::InvalidResponse(format!("cannot encode the request: {e}")))?;
        let bytes = self.core.post(body).await?;
        let answer: MessagesResponse = serde_json::from_slice(&bytes)
            .map_err(|e| invalid(&self.core, "an Anthropic message", &e, &bytes))?;
        let text: String = answer
            .content
            .iter()
            .filter(|b| b.kind == "text")
            .filter_map(|b| b.text.as_deref())
            .collect();
        let usage = answer
            .usage
            .map(|u| Usage {
                input_tokens: u.input_tokens.unwrap_or(0),
                output_tokens: u.output_tokens.unwrap_or(0),
            })
            .unwrap_or_default();
        Ok(ChatResponse {
            text,
            finish_reason: answer.stop_reason.as_deref().map(finish_reason),
            usage,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_reasons_map_to_openai_vocabulary() {
        assert_eq!(finish_reason("max_tokens"), "length");
        assert_eq!(finish_reason("end_turn"), "stop");
        assert_eq!(finish_reason("stop_sequence"), "stop");
        assert_eq!(finish_reason("refusal"), "refusal");
    }
}
