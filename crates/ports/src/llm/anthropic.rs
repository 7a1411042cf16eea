//! Anthropic messages API (`POST {base_url}/messages`, default `https://api.anthropic.com/v1`).
//!
//! System messages go to the top-level `system` field (joined by a blank line when there are
//! several) as text blocks with `cache_control: {"type": "ephemeral"}` at the end of the part
//! every dialogue of a scenario shares (before the job's values), so that the prompt
//! is read from Anthropic's prompt cache (`cache_read_input_tokens`, priced
//! at `price.cached_input_per_million`) rather than paid in full; `max_tokens` is required by the API and defaults to [`DEFAULT_MAX_TOKENS`]. The
//! `stop_reason` is reported in the OpenAI vocabulary so that truncation is detected the same way
//! for every backend: `max_tokens` becomes `length`, `end_turn` and `stop_sequence` become `stop`.
//! The messages API has no JSON mode and no seed: `request.json` and `seed` are not sent.

use super::openai::{ApiKey, HttpCore, base_url_or, invalid, read_api_key, secret_header};
use super::{
    ChatMessage, ChatModel, ChatRequest, ChatResponse, ChatRole, LlmError, ModelConfig, ToolCall,
};
use reqwest::header::{HeaderName, HeaderValue};
use sage_core::protocol::Usage;
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

/// Extra HTTP headers of a call.
pub(crate) type Headers = Vec<(HeaderName, HeaderValue)>;

/// The headers every Anthropic call carries (`anthropic-version`, and `x-api-key` marked
/// sensitive when a key is configured), and the key read from its variable.
pub(crate) fn headers(config: &ModelConfig) -> Result<(Headers, Option<ApiKey>), LlmError> {
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
    Ok((extra, key))
}

impl AnthropicMessages {
    /// A backend for this configuration; reads the API key variable once, here.
    pub fn new(config: &ModelConfig) -> Result<AnthropicMessages, LlmError> {
        let base = base_url_or(config, Some(DEFAULT_BASE_URL))?;
        let (extra, key) = headers(config)?;
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
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<SystemBlock>,
    messages: Vec<Turn<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ToolDef<'a>>,
}

/// A text block of the system prompt; the one marked with `cache_control` is a prompt-cache
/// breakpoint: Anthropic caches the prefix up to it (tools and system).
#[derive(Serialize)]
struct SystemBlock {
    #[serde(rename = "type")]
    kind: &'static str,
    text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<CacheControl>,
}

/// The system prompt as text blocks with the cache breakpoint at the end of the part every
/// dialogue of a scenario shares (`shared` bytes, as the request carries it), so that one
/// dialogue reads what another wrote; else at the end (the prompt every turn repeats).
fn system_blocks(system: String, shared: Option<usize>) -> Vec<SystemBlock> {
    let block = |text: String, cached: bool| SystemBlock {
        kind: "text",
        text,
        cache_control: cached.then_some(CacheControl { kind: "ephemeral" }),
    };
    match shared.filter(|&at| at > 0 && at < system.len() && system.is_char_boundary(at)) {
        Some(at) => {
            let mut shared = system;
            let own = shared.split_off(at);
            vec![block(shared, true), block(own, false)]
        }
        None => vec![block(system, true)],
    }
}

#[derive(Serialize)]
struct CacheControl {
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
struct ToolDef<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a serde_json::Value,
}

/// A turn: plain text, or content blocks (tool use and tool results).
#[derive(Serialize)]
struct Turn<'a> {
    role: &'static str,
    content: Content<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(&'a str),
    Blocks(Vec<OutBlock<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum OutBlock<'a> {
    Text {
        text: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: serde_json::Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: &'a str,
    },
}

/// The conversation in Anthropic's shape: system text apart, tool calls as `tool_use` blocks
/// of the assistant's turn, tool results as `tool_result` blocks of one user turn.
fn turns(messages: &[ChatMessage]) -> (Vec<&str>, Vec<Turn<'_>>) {
    let mut system = Vec::new();
    let mut out: Vec<Turn<'_>> = Vec::with_capacity(messages.len());
    for m in messages {
        match m.role {
            ChatRole::System => system.push(&*m.content),
            ChatRole::Assistant if !m.tool_calls.is_empty() => {
                let mut blocks = Vec::new();
                if !m.content.is_empty() {
                    blocks.push(OutBlock::Text { text: &m.content });
                }
                for c in &m.tool_calls {
                    blocks.push(OutBlock::ToolUse {
                        id: &c.id,
                        name: &c.name,
                        // Arguments that do not parse are sent as an empty object.
                        input: serde_json::from_str(&c.arguments)
                            .unwrap_or_else(|_| serde_json::json!({})),
                    });
                }
                out.push(Turn {
                    role: "assistant",
                    content: Content::Blocks(blocks),
                });
            }
            ChatRole::Tool => {
                let block = OutBlock::ToolResult {
                    tool_use_id: m.tool_call_id.as_deref().unwrap_or(""),
                    content: &m.content,
                };
                match out.last_mut() {
                    Some(Turn {
                        role: "user",
                        content: Content::Blocks(blocks),
                    }) => blocks.push(block),
                    _ => out.push(Turn {
                        role: "user",
                        content: Content::Blocks(vec![block]),
                    }),
                }
            }
            ChatRole::User | ChatRole::Assistant => out.push(Turn {
                role: m.role.as_str(),
                content: Content::Text(&m.content),
            }),
        }
    }
    (system, out)
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
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    input: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct MessagesUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    // Read leniently (a count that is not a whole number is none): an odd cache count must
    // not cost the answer.
    #[serde(default)]
    cache_read_input_tokens: Option<serde_json::Value>,
    #[serde(default)]
    cache_creation_input_tokens: Option<serde_json::Value>,
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
        let (system, messages) = turns(&request.messages);
        let body = MessagesRequest {
            model: &self.model,
            max_tokens: self.max_tokens,
            system: if system.is_empty() {
                Vec::new()
            } else {
                system_blocks(system.join("\n\n"), request.cache_prefix)
            },
            messages,
            // No seed in the messages API: a sample differs by its temperature only.
            temperature: request.sampling(None, self.temperature).1,
            tools: request
                .tools
                .iter()
                .map(|t| ToolDef {
                    name: &t.name,
                    description: &t.description,
                    input_schema: &t.parameters,
                })
                .collect(),
        };
        let body = serde_json::to_vec(&body)
            .map_err(|e| LlmError::InvalidResponse(format!("cannot encode the request: {e}")))?;
        let answer = self.core.post(body).await?;
        let mut response = parse_message(&answer.body, self.core.secret())?;
        response.rate_limits = answer.limits;
        Ok(response)
    }
}

/// Reads a messages-API response body (a 2xx answer): the text blocks joined, the `tool_use`
/// blocks as tool calls (their input as JSON text), the stop reason in the OpenAI vocabulary
/// ([`finish_reason`]) and the usage. A body that is not a message is
/// [`LlmError::InvalidResponse`] quoting its start, with `secret` (the API key, when there is
/// one) blanked.
pub fn parse_message(bytes: &[u8], secret: Option<&str>) -> Result<ChatResponse, LlmError> {
    let answer: MessagesResponse = serde_json::from_slice(bytes)
        .map_err(|e| invalid(secret, "an Anthropic message", &e, bytes))?;
    let text: String = answer
        .content
        .iter()
        .filter(|b| b.kind == "text")
        .filter_map(|b| b.text.as_deref())
        .collect();
    let usage = answer
        .usage
        .map(|u| {
            // Anthropic's `input_tokens` are those after the last cache breakpoint: the prompt
            // is those plus the ones read from and written to the cache.
            let count = |n: Option<serde_json::Value>| n.and_then(|n| n.as_u64()).unwrap_or(0);
            let read = count(u.cache_read_input_tokens);
            let write = count(u.cache_creation_input_tokens);
            Usage {
                input_tokens: u
                    .input_tokens
                    .unwrap_or(0)
                    .saturating_add(read)
                    .saturating_add(write),
                output_tokens: u.output_tokens.unwrap_or(0),
                cached_input_tokens: read,
                cache_write_input_tokens: write,
            }
        })
        .unwrap_or_default();
    let tool_calls = answer
        .content
        .into_iter()
        .filter(|b| b.kind == "tool_use")
        .map(|b| ToolCall {
            id: b.id.unwrap_or_default(),
            name: b.name.unwrap_or_default(),
            arguments: b
                .input
                .map(|v| v.to_string())
                .unwrap_or_else(|| "{}".into()),
        })
        .collect();
    Ok(ChatResponse {
        text,
        finish_reason: answer.stop_reason.as_deref().map(finish_reason),
        usage,
        tool_calls,
        rate_limits: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_breakpoint_ends_the_part_every_dialogue_shares() {
        let json = |blocks: Vec<SystemBlock>| serde_json::to_value(blocks).unwrap();
        let prompt = "Role.\n\n[Key Requirements]\n1. JSON.\n\n[Current System Information]\n- Penalty: 200\n";
        let shared = prompt.find("[Current").unwrap();
        assert_eq!(
            json(system_blocks(prompt.into(), Some(shared))),
            serde_json::json!([
                {"type": "text", "text": "Role.\n\n[Key Requirements]\n1. JSON.\n\n",
                 "cache_control": {"type": "ephemeral"}},
                {"type": "text", "text": "[Current System Information]\n- Penalty: 200\n"}
            ])
        );
        // No boundary carried, or one outside the prompt: the whole prompt is cached (the
        // heading text alone moves nothing).
        let whole = |text: &str| {
            serde_json::json!([{"type": "text", "text": text,
                                "cache_control": {"type": "ephemeral"}}])
        };
        assert_eq!(json(system_blocks(prompt.into(), None)), whole(prompt));
        assert_eq!(
            json(system_blocks("You run the desk.".into(), None)),
            whole("You run the desk.")
        );
        assert_eq!(
            json(system_blocks("You run the desk.".into(), Some(100))),
            whole("You run the desk.")
        );
    }

    #[test]
    fn stop_reasons_map_to_openai_vocabulary() {
        assert_eq!(finish_reason("max_tokens"), "length");
        assert_eq!(finish_reason("end_turn"), "stop");
        assert_eq!(finish_reason("stop_sequence"), "stop");
        assert_eq!(finish_reason("refusal"), "refusal");
    }
}
