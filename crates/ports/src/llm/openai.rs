//! OpenAI-compatible chat completions (`POST {base_url}/chat/completions`): OpenAI itself, vLLM,
//! Ollama, llama.cpp server and gateways that speak the same API.
//!
//! This module also holds the HTTP plumbing every HTTP backend shares ([`HttpCore`]): one pooled
//! `reqwest::Client` per backend, the API key read once from the configured environment variable
//! (never printed), the per-attempt timeout and the mapping of HTTP outcomes onto [`LlmError`].

use super::{
    ChatMessage, ChatModel, ChatRequest, ChatResponse, JsonSchema, LlmError, ModelConfig,
    RateHeaders, StructuredOutput, ToolCall,
};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER};
use sage_core::protocol::Usage;
use sage_core::protocol::schema::Ordered;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::{Duration, SystemTime};

/// The base URL used when an OpenAI configuration names none.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// How much of an error body is kept in [`LlmError::Status`] (characters).
const BODY_SNIPPET_CHARS: usize = 300;

/// An API key read from the environment. Its `Debug` never shows the value.
#[derive(Clone)]
pub(crate) struct ApiKey(String);

impl ApiKey {
    /// The key itself (only for building the auth header).
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// Reads the API key from the variable `config.api_key_env` names: `Ok(None)` when no variable is
/// configured (local servers), a [`LlmError::Config`] naming the variable (never a value) when it
/// is configured but unset, empty or not Unicode.
pub(crate) fn read_api_key(config: &ModelConfig) -> Result<Option<ApiKey>, LlmError> {
    let Some(var) = config.api_key_env.as_deref() else {
        return Ok(None);
    };
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => Ok(Some(ApiKey(v.trim().to_string()))),
        Ok(_) => Err(LlmError::Config(format!(
            "model `{}`: the API key variable {var} is empty",
            config.name
        ))),
        Err(std::env::VarError::NotPresent) => Err(LlmError::Config(format!(
            "model `{}`: the API key variable {var} is not set",
            config.name
        ))),
        Err(std::env::VarError::NotUnicode(_)) => Err(LlmError::Config(format!(
            "model `{}`: the API key variable {var} is not valid Unicode",
            config.name
        ))),
    }
}

/// A header value holding a secret: marked sensitive so that `http`'s own `Debug` hides it.
pub(crate) fn secret_header(config: &ModelConfig, value: &str) -> Result<HeaderValue, LlmError> {
    let mut v = HeaderValue::from_str(value).map_err(|_| {
        LlmError::Config(format!(
            "model `{}`: the API key in {} contains characters not allowed in an HTTP header",
            config.name,
            config.api_key_env.as_deref().unwrap_or("its variable")
        ))
    })?;
    v.set_sensitive(true);
    Ok(v)
}

/// The per-attempt timeout of a configuration (must be positive and finite).
pub(crate) fn timeout_of(config: &ModelConfig) -> Result<Duration, LlmError> {
    if !(config.timeout_secs.is_finite() && config.timeout_secs > 0.0) {
        return Err(LlmError::Config(format!(
            "model `{}`: timeout_secs must be a positive number of seconds, not {}",
            config.name, config.timeout_secs
        )));
    }
    Duration::try_from_secs_f64(config.timeout_secs).map_err(|_| {
        LlmError::Config(format!(
            "model `{}`: timeout_secs {} is out of range",
            config.name, config.timeout_secs
        ))
    })
}

/// `base` without trailing slashes, or `default`.
/// The `Authorization: Bearer` header for a key, if there is one (a sensitive header value).
pub(crate) fn bearer(
    config: &ModelConfig,
    key: Option<&ApiKey>,
) -> Result<Vec<(reqwest::header::HeaderName, HeaderValue)>, LlmError> {
    key.map(|k| {
        Ok((
            reqwest::header::AUTHORIZATION,
            secret_header(config, &format!("Bearer {}", k.expose()))?,
        ))
    })
    .into_iter()
    .collect()
}

pub(crate) fn base_url_or(config: &ModelConfig, default: Option<&str>) -> Result<String, LlmError> {
    let url = match (config.base_url.as_deref(), default) {
        (Some(u), _) => u,
        (None, Some(d)) => d,
        (None, None) => {
            return Err(LlmError::Config(format!(
                "model `{}`: base_url is required for provider {:?}",
                config.name, config.provider
            )));
        }
    };
    let url = url.trim().trim_end_matches('/');
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(LlmError::Config(format!(
            "model `{}`: base_url must start with http:// or https://",
            config.name
        )));
    }
    Ok(url.to_string())
}

/// True when `url` points at this machine (no proxy is used for it).
fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority
        .rsplit_once('@')
        .map(|(_, h)| h)
        .unwrap_or(authority);
    let host = if let Some(stripped) = host.strip_prefix('[') {
        stripped.split(']').next().unwrap_or("")
    } else {
        host.split(':').next().unwrap_or("")
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .map(|ip| ip.is_loopback())
            .unwrap_or(false)
}

/// A 2xx answer: its body and the provider's rate-limit headers, when it sent them.
#[derive(Debug)]
pub(crate) struct HttpAnswer {
    /// The body.
    pub(crate) body: bytes::Bytes,
    /// The rate-limit headers.
    pub(crate) limits: Option<RateHeaders>,
}

/// What every HTTP backend shares: the pooled client, the URL, the fixed headers (with the
/// secret, marked sensitive), the timeout, and the key for redacting server echoes.
pub(crate) struct HttpCore {
    client: reqwest::Client,
    url: String,
    headers: HeaderMap,
    timeout: Duration,
    key: Option<ApiKey>,
}

impl fmt::Debug for HttpCore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpCore")
            .field("url", &self.url)
            .field("timeout", &self.timeout)
            .field("api_key", &self.key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl HttpCore {
    /// A client for `url` with these extra headers (besides `content-type: application/json`).
    pub(crate) fn new(
        config: &ModelConfig,
        url: String,
        extra: Vec<(HeaderName, HeaderValue)>,
        key: Option<ApiKey>,
    ) -> Result<HttpCore, LlmError> {
        let timeout = timeout_of(config)?;
        crate::ensure_crypto_provider();
        let mut builder = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)))
            .pool_idle_timeout(Duration::from_secs(90))
            .tcp_nodelay(true);
        if is_loopback(&url) {
            builder = builder.no_proxy();
        }
        let client = builder.build().map_err(|e| {
            LlmError::Config(format!(
                "model `{}`: cannot build the HTTP client: {e}",
                config.name
            ))
        })?;
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (k, v) in extra {
            headers.insert(k, v);
        }
        Ok(HttpCore {
            client,
            url,
            headers,
            timeout,
            key,
        })
    }

    /// The URL requests go to.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// One POST of a JSON body; the body of a 2xx answer and its rate-limit headers, or the
    /// mapped error.
    pub(crate) async fn post(&self, body: Vec<u8>) -> Result<HttpAnswer, LlmError> {
        let response = self
            .client
            .post(&self.url)
            .headers(self.headers.clone())
            .body(body)
            .send()
            .await
            .map_err(|e| self.map_error(e))?;
        self.read(response).await
    }

    /// One GET of the URL (e.g. `GET /v1/models`); the body of a 2xx answer, or the mapped
    /// error.
    pub(crate) async fn get(&self) -> Result<HttpAnswer, LlmError> {
        let mut headers = self.headers.clone();
        headers.remove(CONTENT_TYPE);
        let response = self
            .client
            .get(&self.url)
            .headers(headers)
            .send()
            .await
            .map_err(|e| self.map_error(e))?;
        self.read(response).await
    }

    /// The body of a 2xx answer (at most [`MAX_BODY_BYTES`]: a larger one is refused, not
    /// buffered) with its rate-limit headers, or the status mapped onto an [`LlmError`].
    async fn read(&self, response: reqwest::Response) -> Result<HttpAnswer, LlmError> {
        let status = response.status();
        let limits = RateHeaders::from_headers(response.headers());
        if status.is_success() {
            let (body, whole) = body_within(response, MAX_BODY_BYTES)
                .await
                .map_err(|e| self.map_error(e))?;
            if !whole {
                return Err(LlmError::InvalidResponse(format!(
                    "the server's answer is larger than {} MiB; refused",
                    MAX_BODY_BYTES >> 20
                )));
            }
            return Ok(HttpAnswer {
                body: body.into(),
                limits,
            });
        }
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        // The start of the body, for the error text (the rest is not read).
        let (body, _) = body_within(response, MAX_ERROR_BODY_BYTES)
            .await
            .unwrap_or_default();
        if status.as_u16() == 429 {
            return Err(LlmError::RateLimited {
                retry_after,
                limits: limits.map(Box::new),
            });
        }
        Err(LlmError::Status {
            status: status.as_u16(),
            body: self.snippet(&body),
            retry_after,
        })
    }

    /// The start of a server's text, with the key blanked should the server echo it.
    pub(crate) fn snippet(&self, body: &[u8]) -> String {
        snippet(body, self.secret())
    }

    /// The API key, to blank from any server text quoted in an error.
    pub(crate) fn secret(&self) -> Option<&str> {
        self.key.as_ref().map(ApiKey::expose)
    }

    /// A reqwest failure as an [`LlmError`].
    fn map_error(&self, e: reqwest::Error) -> LlmError {
        if e.is_timeout() {
            return LlmError::Timeout(self.timeout);
        }
        let e = e.without_url();
        if e.is_decode() {
            return LlmError::InvalidResponse(error_chain(&e));
        }
        if e.is_builder() {
            return LlmError::Config(format!("cannot build the request: {}", error_chain(&e)));
        }
        // connect, request, body, redirect and anything else: the connection failed or broke.
        LlmError::Connection(error_chain(&e))
    }
}

/// The start of a server's text (at most [`BODY_SNIPPET_CHARS`] characters), with `secret`
/// blanked should the server echo it.
fn snippet(body: &[u8], secret: Option<&str>) -> String {
    // Redact first: a key cut in two by the truncation would leave its start behind.
    let text = redact(String::from_utf8_lossy(body).trim().to_string(), secret);
    truncate_chars(&text, BODY_SNIPPET_CHARS)
}

/// `text` with every occurrence of `secret` blanked.
fn redact(text: String, secret: Option<&str>) -> String {
    match secret {
        Some(key) if !key.is_empty() && text.contains(key) => text.replace(key, "<redacted>"),
        _ => text,
    }
}

/// The snippet helper for parse failures: `InvalidResponse` with the start of the body
/// (`secret` blanked).
pub(crate) fn invalid(
    secret: Option<&str>,
    what: &str,
    err: &serde_json::Error,
    body: &[u8],
) -> LlmError {
    #[derive(Deserialize)]
    struct ErrorEnvelope {
        error: ErrorBody,
    }
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum ErrorBody {
        Object { message: String },
        Text(String),
    }
    if let Ok(env) = serde_json::from_slice::<ErrorEnvelope>(body) {
        let message = match env.error {
            ErrorBody::Object { message } | ErrorBody::Text(message) => message,
        };
        return LlmError::InvalidResponse(format!(
            "the server answered an error instead of {what}: {}",
            snippet(message.as_bytes(), secret)
        ));
    }
    // The parser's message may quote the body too.
    let err = redact(err.to_string(), secret);
    LlmError::InvalidResponse(format!("not {what} ({err}): {}", snippet(body, secret)))
}

/// An error and its sources, joined with `: `.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// The most of a model server's 2xx answer that is read: a larger one is refused (no model
/// answer comes near it; a hostile or broken server would otherwise fill the memory).
pub const MAX_BODY_BYTES: usize = 32 << 20;

/// The most of an error answer's body that is read (its start is quoted in the error).
const MAX_ERROR_BODY_BYTES: usize = 64 << 10;

/// Reads `response`'s body, at most `limit` bytes: the bytes read, and whether that is the whole
/// body (false: it is larger, as its `Content-Length` or the bytes coming say, and the rest is
/// not read).
async fn body_within(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Ok((Vec::new(), false));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if body.len() + chunk.len() > limit {
            let room = limit - body.len();
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, false));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, true))
}

/// At most `n` characters of `s`, with `…` when cut.
pub(crate) fn truncate_chars(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// A `Retry-After` value: delay-seconds (integer or decimal) or an HTTP-date (a date in the past
/// means now).
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Ok(secs) = value.parse::<f64>() {
        return Duration::try_from_secs_f64(secs).ok();
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// An OpenAI-compatible chat-completions backend.
///
/// Sends `model`, `messages`, `temperature`, `seed`, `max_tokens` (not
/// `max_completion_tokens`, which llama.cpp ignores) and, when the request wants JSON, the
/// `response_format` of its structured-output form ([`response_format`]). Under `auto`, a
/// schema form the server answers with HTTP 400 or 422 is retried once with the next weaker
/// form, which is remembered for the model when the server takes it. The API key, when
/// configured, goes in `Authorization: Bearer`; without one no header is sent (local servers).
pub struct OpenAiChat {
    core: HttpCore,
    model: String,
    temperature: Option<f32>,
    seed: Option<u64>,
    max_tokens: Option<u32>,
    json_mode: bool,
    /// The configuration (for the structured-output form of each request).
    config: ModelConfig,
    /// What `auto` resolves to now: [`auto_form`] at first, weaker after a rejection.
    auto: std::sync::Mutex<StructuredOutput>,
}

/// What `structured_output: auto` starts as, until a server rejects it: `json_schema` for
/// OpenAI itself (provider `openai` and an `api.openai.com` base URL, the default one
/// included), `json_object_schema` (llama.cpp, vLLM) for any other OpenAI-compatible server, and
/// `none` for other providers.
pub fn auto_form(config: &ModelConfig) -> StructuredOutput {
    if config.provider != super::Provider::Openai {
        return StructuredOutput::None;
    }
    let base = config.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL);
    let rest = base.split_once("://").map_or(base, |(_, r)| r);
    let host = rest.split(['/', ':', '?', '#']).next().unwrap_or("");
    if host.eq_ignore_ascii_case("api.openai.com") {
        StructuredOutput::JsonSchema
    } else {
        StructuredOutput::JsonObjectSchema
    }
}

/// The chat-completions `response_format` of a structured-output form for an answer of this
/// schema (`None`: send no `response_format`):
///
/// * `json_schema`: `{"type": "json_schema", "json_schema": {"name", "strict": true, "schema"}}`
///   (OpenAI structured outputs);
/// * `json_object_schema`: `{"type": "json_object", "schema": {...}}` (llama.cpp, vLLM);
/// * `json_object`: `{"type": "json_object"}`;
/// * `none`: nothing.
///
/// `auto` must be resolved first ([`auto_form`]); given here it is sent as
/// `json_object_schema`. Serialize the result with serde (it keeps the schema's property order);
/// [`Ordered::to_json`] gives a `serde_json::Value`.
pub fn response_format(form: StructuredOutput, schema: &JsonSchema) -> Option<Ordered> {
    let kind = |k: &str| ("type".to_string(), Ordered::Str(k.into()));
    match form {
        StructuredOutput::JsonSchema => Some(Ordered::Obj(vec![
            kind("json_schema"),
            (
                "json_schema".into(),
                Ordered::Obj(vec![
                    ("name".into(), Ordered::Str(schema.name.into())),
                    ("strict".into(), Ordered::Bool(true)),
                    ("schema".into(), schema.schema.clone()),
                ]),
            ),
        ])),
        // Grammar-compiling servers (llama.cpp, vLLM) honour maxLength: the answer's length is
        // bounded by the schema.
        StructuredOutput::JsonObjectSchema | StructuredOutput::Auto => Some(Ordered::Obj(vec![
            kind("json_object"),
            (
                "schema".into(),
                sage_core::protocol::schema::bounded_strings(
                    &schema.schema,
                    sage_core::protocol::schema::FREE_TEXT_MAX_CHARS,
                ),
            ),
        ])),
        StructuredOutput::JsonObject => Some(Ordered::Obj(vec![kind("json_object")])),
        StructuredOutput::None => None,
    }
}

impl fmt::Debug for OpenAiChat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiChat")
            .field("core", &self.core)
            .field("model", &self.model)
            .field("temperature", &self.temperature)
            .field("seed", &self.seed)
            .field("max_tokens", &self.max_tokens)
            .field("json_mode", &self.json_mode)
            .field("structured_output", &self.config.structured_output)
            .finish()
    }
}

impl OpenAiChat {
    /// A backend for this configuration; reads the API key variable once, here.
    pub fn new(config: &ModelConfig) -> Result<OpenAiChat, LlmError> {
        let base = base_url_or(config, Some(DEFAULT_BASE_URL))?;
        let key = read_api_key(config)?;
        let extra = bearer(config, key.as_ref())?;
        Ok(OpenAiChat {
            core: HttpCore::new(config, format!("{base}/chat/completions"), extra, key)?,
            model: config.model_id().to_string(),
            temperature: config.temperature,
            seed: config.seed,
            max_tokens: config.max_tokens,
            json_mode: config.json_mode,
            config: config.clone(),
            auto: std::sync::Mutex::new(auto_form(config)),
        })
    }

    /// The form `auto` resolves to now for this model (weaker after a server rejected a form).
    pub fn auto_resolved(&self) -> StructuredOutput {
        *self.auto.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The form a request is sent with: its own ([`ChatRequest::structured_output`]), `auto`
    /// resolved.
    fn form_of(&self, request: &ChatRequest) -> StructuredOutput {
        match request.structured_output(&self.config) {
            StructuredOutput::Auto => self.auto_resolved(),
            form => form,
        }
    }

    /// The request body with the `response_format` of `form`.
    fn body(&self, request: &ChatRequest, form: StructuredOutput) -> Result<Vec<u8>, LlmError> {
        let response_format = match &request.structured {
            Some(s) => response_format(form, &s.schema),
            None => (form == StructuredOutput::JsonObject)
                .then(|| Ordered::Obj(vec![("type".into(), Ordered::Str("json_object".into()))])),
        };
        let (seed, temperature) = request.sampling(self.seed, self.temperature);
        let body = CompletionRequest {
            model: &self.model,
            messages: wire_messages(&request.messages),
            tools: request
                .tools
                .iter()
                .map(|t| WireTool {
                    kind: "function",
                    function: WireToolSpec {
                        name: &t.name,
                        description: &t.description,
                        parameters: &t.parameters,
                    },
                })
                .collect(),
            temperature,
            seed,
            max_tokens: self.max_tokens,
            response_format,
        };
        serde_json::to_vec(&body)
            .map_err(|e| LlmError::InvalidResponse(format!("cannot encode the request: {e}")))
    }

    /// The URL calls go to.
    pub fn url(&self) -> &str {
        self.core.url()
    }
}

#[derive(Serialize)]
struct CompletionRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<Ordered>,
}

/// A message as the chat-completions API wants it (tool calls nested under `function`).
#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

#[derive(Serialize)]
struct WireToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

/// A tool call in a completion.
#[derive(Deserialize)]
struct ResponseToolCall {
    #[serde(default)]
    id: String,
    function: ResponseFunction,
}

#[derive(Deserialize)]
struct ResponseFunction {
    name: String,
    /// A JSON string by the API; some servers send the object itself.
    #[serde(default)]
    arguments: serde_json::Value,
}

/// An id for the `index`th tool call of a completion that gave none.
fn made_up_id(completion: &str, index: usize, function: &ResponseFunction) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    for part in [completion, &function.name, &function.arguments.to_string()] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    let digest = hex::encode(h.finalize());
    format!("call_{index}_{}", &digest[..12])
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireToolSpec<'a>,
}

#[derive(Serialize)]
struct WireToolSpec<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a serde_json::Value,
}

fn wire_messages(messages: &[ChatMessage]) -> Vec<WireMessage<'_>> {
    messages
        .iter()
        .map(|m| WireMessage {
            role: m.role.as_str(),
            content: &m.content,
            tool_calls: m
                .tool_calls
                .iter()
                .map(|c| WireToolCall {
                    id: &c.id,
                    kind: "function",
                    function: WireFunction {
                        name: &c.name,
                        arguments: &c.arguments,
                    },
                })
                .collect(),
            tool_call_id: m.tool_call_id.as_deref(),
        })
        .collect()
}

#[derive(Deserialize)]
struct Completion {
    #[serde(default)]
    id: String,
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<CompletionUsage>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    message: Option<AssistantMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct AssistantMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ResponseToolCall>>,
}

#[derive(Deserialize)]
struct CompletionUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient_details")]
    prompt_tokens_details: Option<PromptTokensDetails>,
}

/// OpenAI's breakdown of the prompt tokens: `cached_tokens` were read from its prompt cache.
/// Read leniently (a count that is not a whole number is none): a server's odd breakdown must
/// not cost the answer.
#[derive(Deserialize)]
struct PromptTokensDetails {
    #[serde(default)]
    cached_tokens: Option<serde_json::Value>,
}

/// `prompt_tokens_details` when it is an object, else none (`null`, a string, ...).
fn lenient_details<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<PromptTokensDetails>, D::Error> {
    let value = serde_json::Value::deserialize(d)?;
    Ok(serde_json::from_value(value).ok())
}

#[async_trait::async_trait]
impl ChatModel for OpenAiChat {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let form = self.form_of(request);
        let first = self.core.post(self.body(request, form)?).await;
        let rejected = matches!(
            &first,
            Err(LlmError::Status {
                status: 400 | 422,
                ..
            })
        );
        let weaker = form.weaker().filter(|_| {
            rejected
                && form.sends_schema()
                && request.structured_output(&self.config) == StructuredOutput::Auto
        });
        let answer = match weaker {
            None => first?,
            Some(weaker) => match self.core.post(self.body(request, weaker)?).await {
                // The weaker form fails the same way: the rejection was not about the form.
                Err(LlmError::Status {
                    status: 400 | 422, ..
                }) => first?,
                second => {
                    let mut auto = self.auto.lock().unwrap_or_else(|e| e.into_inner());
                    if *auto == form {
                        *auto = weaker;
                        tracing::warn!(
                            model = %self.config.name,
                            rejected = form.as_str(),
                            now = weaker.as_str(),
                            "the server rejected this structured-output form; using the next weaker one for this model from now on"
                        );
                    }
                    drop(auto);
                    second?
                }
            },
        };
        let mut response = parse_completion(&answer.body, self.core.secret())?;
        response.rate_limits = answer.limits;
        Ok(response)
    }
}

/// Reads a chat-completions response body (a 2xx answer): the first choice's text, its tool
/// calls (arguments sent as a JSON object read as their JSON text; a call without an id gets
/// one made from the completion), its finish reason and the usage. A body that is not a
/// completion, or has no choice, is [`LlmError::InvalidResponse`] quoting its start, with
/// `secret` (the API key, when there is one) blanked.
pub fn parse_completion(bytes: &[u8], secret: Option<&str>) -> Result<ChatResponse, LlmError> {
    let completion: Completion = serde_json::from_slice(bytes)
        .map_err(|e| invalid(secret, "a chat completion", &e, bytes))?;
    let Some(choice) = completion.choices.into_iter().next() else {
        return Err(LlmError::InvalidResponse(
            "the chat completion has no choices".into(),
        ));
    };
    let (text, tool_calls) = match choice.message {
        Some(m) => (
            m.content.unwrap_or_default(),
            m.tool_calls
                .unwrap_or_default()
                .into_iter()
                .enumerate()
                .map(|(i, c)| ToolCall {
                    // A server that gives no id still needs one for the tool's answer:
                    // made from the completion's id, or its content when it has none, so
                    // it differs across rounds and stays the same for the same answer.
                    id: if c.id.is_empty() {
                        made_up_id(&completion.id, i, &c.function)
                    } else {
                        c.id
                    },
                    name: c.function.name,
                    arguments: match c.function.arguments {
                        serde_json::Value::String(text) => text,
                        serde_json::Value::Null => String::new(),
                        other => other.to_string(),
                    },
                })
                .collect(),
        ),
        None => (String::new(), Vec::new()),
    };
    let usage = completion
        .usage
        .map(|u| {
            let input_tokens = u.prompt_tokens.unwrap_or(0);
            Usage {
                input_tokens,
                output_tokens: u.completion_tokens.unwrap_or(0),
                // Never more than the prompt: a hostile body cannot make the cost negative.
                cached_input_tokens: u
                    .prompt_tokens_details
                    .and_then(|d| d.cached_tokens)
                    .and_then(|n| n.as_u64())
                    .unwrap_or(0)
                    .min(input_tokens),
                cache_write_input_tokens: 0,
            }
        })
        .unwrap_or_default();
    Ok(ChatResponse {
        text,
        finish_reason: choice.finish_reason,
        usage,
        tool_calls,
        rate_limits: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_seconds_and_dates() {
        assert_eq!(parse_retry_after("1"), Some(Duration::from_secs(1)));
        assert_eq!(parse_retry_after(" 120 "), Some(Duration::from_secs(120)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("-3"), None);
        assert_eq!(parse_retry_after("soon"), None);
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(30));
        let d = parse_retry_after(&later).expect("a date");
        assert!(
            d > Duration::from_secs(25) && d <= Duration::from_secs(30),
            "{d:?}"
        );
    }

    #[test]
    fn loopback_hosts() {
        assert!(is_loopback("http://127.0.0.1:8080/v1"));
        assert!(is_loopback("http://localhost/v1"));
        assert!(is_loopback("http://[::1]:9/x"));
        assert!(!is_loopback("https://api.openai.com/v1"));
        assert!(!is_loopback("http://10.0.0.1:80"));
    }

    #[test]
    fn truncation_keeps_char_boundaries() {
        assert_eq!(truncate_chars("héllo", 2), "hé…");
        assert_eq!(truncate_chars("ok", 5), "ok");
    }

    #[test]
    fn a_body_that_echoes_the_key_never_puts_it_in_the_error() {
        // Found by fuzzing (openai_body, http_agent_body): serde's message quotes the string it
        // did not expect, and it was not redacted.
        let key = "FAKE-echoed-key";
        let bodies: [&[u8]; 4] = [
            br#"{"choices": "FAKE-echoed-key"}"#,
            br#"{"FAKE-echoed-key": 1"#,
            br#""FAKE-echoed-key""#,
            br#"{"error": {"message": "bad key FAKE-echoed-key"}}"#,
        ];
        for body in bodies {
            let errors = [
                parse_completion(body, Some(key)).expect_err("not a completion"),
                crate::llm::anthropic::parse_message(body, Some(key)).expect_err("not a message"),
                crate::llm::http_agent::parse_reply(body, Some(key)).expect_err("not a reply"),
            ];
            for e in errors {
                let text = e.to_string();
                assert!(!text.contains(key), "{text}");
                assert!(text.contains("<redacted>"), "{text}");
            }
        }
    }

    #[test]
    fn a_forks_sample_is_sent_with_its_seed_and_a_sampling_temperature() {
        let mut config = ModelConfig::new("m", crate::llm::Provider::Openai);
        config.base_url = Some("http://127.0.0.1:9/v1".into());
        config.seed = Some(40);
        let chat = OpenAiChat::new(&config).expect("backend");
        let body = |sample| {
            let request = ChatRequest {
                sample,
                ..ChatRequest::default()
            };
            let bytes = chat.body(&request, StructuredOutput::None).expect("body");
            serde_json::from_slice::<serde_json::Value>(&bytes).expect("json")
        };
        let run = body(None);
        assert_eq!(run["seed"], 40);
        assert!(run.get("temperature").is_none(), "{run}");
        let sample = body(Some(2));
        assert_eq!(sample["seed"], 42);
        assert_eq!(sample["temperature"], 1.0);
    }

    #[test]
    fn api_key_debug_is_redacted() {
        let k = ApiKey("FAKE-key".into());
        assert_eq!(format!("{k:?}"), "<redacted>");
    }
}
