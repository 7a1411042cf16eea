//! `sage models check`: a few short, bounded probes of one configured model, and the
//! capability table they give (docs/models.md, "Checking a model").
//!
//! Per model (not per call): `GET {base}/models` (reachable, authenticated, model name known),
//! then chat calls of a few tokens each, one attempt each (no retry), each bounded by the probe
//! timeout and a small token limit: which token-limit field the server takes (`max_tokens`,
//! `max_completion_tokens`: honoured, ignored or rejected), a system prompt asking for a fixed
//! word, each structured-output form in turn until one works (OpenAI `json_schema` strict,
//! llama.cpp/vLLM `json_object` + `schema`, plain `json_object`, none: a form works when the
//! server accepts it AND the answer is a JSON object with the schema's keys), and tool calling
//! with `tool_choice` `auto` and a named tool. Usage, latency and output tokens per second are
//! read from the same calls.
//!
//! Anthropic's Messages API gets the same checks where they apply: it has no `response_format`
//! (structured forms other than plain JSON are `n/a`) and no `max_completion_tokens`.
//! Simulated models and HTTP agents are reported, never probed. API keys come from the
//! configured environment variable only and never appear in a report.
//!
//! Every answer's rate-limit headers ([`RateHeaders`]) are kept, the last seen per model, for
//! the `requests/min limit` and `tokens/min limit` rows and the `requests_per_minute` /
//! `tokens_per_minute` advice.
//!
//! The verdict does not come from these generic probes when the model was rehearsed: a
//! rehearsal (`sage_actors::rehearsal`, added with [`ModelReport::rehearsed`]) makes one call per
//! role with the role's real prompt and reads it with the role's real parser, and a model works
//! when no role's rehearsal call failed ([`Rehearsed`]).

use super::openai::HttpAnswer;
use super::openai::{
    DEFAULT_BASE_URL as OPENAI_BASE_URL, HttpCore, base_url_or, bearer, parse_completion,
    read_api_key,
};
use super::{ChatResponse, LlmError, ModelConfig, PerMinute, Provider, RateHeaders, anthropic};
use sage_core::plan::model::StructuredOutput;
use sage_core::protocol::parse::extract_object;
use sage_core::protocol::schema::{JsonSchema, Ordered};
use serde_json::{Value, json};
use std::fmt;
use std::time::{Duration, Instant};

/// A role a model plays in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// An agent under test (`service_models`): answers in JSON.
    Agent,
    /// The customer simulator (`user_model`): answers in plain text.
    Customer,
    /// A judge (`judge_models`): answers in JSON.
    Judge,
}

impl Role {
    /// The role's name in the table.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Agent => "agent",
            Role::Customer => "customer",
            Role::Judge => "judge",
        }
    }

    /// True for the roles whose answer is parsed as JSON.
    pub fn wants_json(self) -> bool {
        matches!(self, Role::Agent | Role::Judge)
    }
}

/// The structured-output forms probed, in the order tried (the `structured_output` values
/// but `auto`, which a probe resolves).
pub const PROBED_FORMS: [StructuredOutput; 4] = [
    StructuredOutput::JsonSchema,
    StructuredOutput::JsonObjectSchema,
    StructuredOutput::JsonObject,
    StructuredOutput::None,
];

/// The `response_format` a probe sends in `form` (the backend's own, for the probe's schema).
fn probe_response_format(form: StructuredOutput) -> Option<Value> {
    super::openai::response_format(form, &schema()).map(|f| f.to_json())
}

/// One check's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// It works.
    Yes,
    /// It does not; the short reason (`HTTP 400`, `no tool call`, ...).
    No(String),
    /// The server accepts the setting but does not act on it (a token limit not honoured).
    Ignored,
    /// The API has no such thing (e.g. `response_format` on Anthropic).
    NotApplicable,
    /// Not tried (an earlier check failed, a better form already works, or not probed).
    NotTried,
}

impl Check {
    /// True for [`Check::Yes`].
    pub fn is_yes(&self) -> bool {
        *self == Check::Yes
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Check::Yes => f.write_str("yes"),
            Check::No(why) if why.is_empty() => f.write_str("no"),
            Check::No(why) => write!(f, "no ({why})"),
            Check::Ignored => f.write_str("ignored"),
            Check::NotApplicable => f.write_str("n/a"),
            Check::NotTried => f.write_str("-"),
        }
    }
}

/// What one role's rehearsal found: one call with the role's real prompt for the run's first
/// scenario, read by the role's real parser.
#[derive(Debug, Clone, PartialEq)]
pub enum Rehearsed {
    /// The parser took the answer.
    Works,
    /// The model answered and the parser refused the answer: a real run records a format error
    /// (the agent's own; a customer's or judge's is asked again, then an infrastructure error).
    FormatError {
        /// The error's kind (`missing_key`, `no_json`, ... for the agent and judges; `empty`,
        /// `refusal`, `no_content` for the customer).
        kind: String,
        /// The parser's message.
        message: String,
    },
    /// The call failed (unreachable, not authenticated, unknown model, refused request).
    CannotWork(LlmError),
}

impl Rehearsed {
    /// True for [`Rehearsed::CannotWork`].
    pub fn cannot_work(&self) -> bool {
        matches!(self, Rehearsed::CannotWork(_))
    }
}

impl fmt::Display for Rehearsed {
    /// The table cell: `works`, `format error (missing_key)`, `cannot work (HTTP 401)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rehearsed::Works => f.write_str("works"),
            Rehearsed::FormatError { kind, .. } => write!(f, "format error ({kind})"),
            Rehearsed::CannotWork(e) => write!(f, "cannot work ({})", reason(e)),
        }
    }
}

/// Bounds of every probe call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProbeOptions {
    /// Most time per call (the model's own `timeout_secs` when smaller).
    pub timeout: Duration,
}

impl Default for ProbeOptions {
    fn default() -> Self {
        ProbeOptions {
            timeout: Duration::from_secs(30),
        }
    }
}

/// What the probes found about one model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelReport {
    /// The model's name in the configuration.
    pub name: String,
    /// The backend.
    pub provider: Provider,
    /// The roles it plays in the run.
    pub roles: Vec<Role>,
    /// False for models that are reported, not probed (simulated, HTTP agents).
    pub probed: bool,
    /// The server answered at all.
    pub reachable: Check,
    /// Not refused with HTTP 401 or 403.
    pub authenticated: Check,
    /// The server knows the model id (listed by `GET /models`, or accepted by a chat call when
    /// the server has no list).
    pub model_known: Check,
    /// The answer follows a system prompt asking for a fixed word.
    pub system_message: Check,
    /// Per [`PROBED_FORMS`]: works, fails (why), or not tried.
    pub structured: [Check; 4],
    /// A tool call with `tool_choice: auto`.
    pub tools_auto: Check,
    /// A tool call with `tool_choice` naming the tool.
    pub tools_named: Check,
    /// `max_tokens` accepted and honoured.
    pub max_tokens: Check,
    /// `max_completion_tokens` accepted and honoured.
    pub max_completion_tokens: Check,
    /// The answer reports token usage.
    pub usage: Check,
    /// Wall time of the system-prompt call, in milliseconds.
    pub latency_ms: Option<u64>,
    /// Output tokens per second over the probe calls that reported usage.
    pub output_tokens_per_s: Option<f64>,
    /// Why a role cannot work with this model (empty: every role can).
    pub problems: Vec<String>,
    /// Details: the server's own words for what failed.
    pub notes: Vec<String>,
    /// The last rate-limit headers the server sent (probes, then rehearsal calls).
    pub limits: Option<RateHeaders>,
    /// The configured `requests_per_minute`.
    pub requests_per_minute: Option<PerMinute>,
    /// The configured `tokens_per_minute`.
    pub tokens_per_minute: Option<PerMinute>,
    /// Per role rehearsed: what its rehearsal found (empty: not rehearsed; the verdict is then
    /// the generic probes').
    pub rehearsal: Vec<(Role, Rehearsed)>,
}

impl ModelReport {
    fn new(config: &ModelConfig, roles: Vec<Role>, probed: bool) -> ModelReport {
        ModelReport {
            name: config.name.clone(),
            provider: config.provider,
            roles,
            probed,
            reachable: Check::NotTried,
            authenticated: Check::NotTried,
            model_known: Check::NotTried,
            system_message: Check::NotTried,
            structured: [
                Check::NotTried,
                Check::NotTried,
                Check::NotTried,
                Check::NotTried,
            ],
            tools_auto: Check::NotTried,
            tools_named: Check::NotTried,
            max_tokens: Check::NotTried,
            max_completion_tokens: Check::NotTried,
            usage: Check::NotTried,
            latency_ms: None,
            output_tokens_per_s: None,
            problems: Vec::new(),
            notes: Vec::new(),
            limits: None,
            requests_per_minute: config.requests_per_minute,
            tokens_per_minute: config.tokens_per_minute,
            rehearsal: Vec::new(),
        }
    }

    /// Adds what a role's rehearsal found, with the rate-limit headers of its answer (newer than
    /// the probes': they replace them when present).
    pub fn rehearsed(&mut self, role: Role, found: Rehearsed, limits: Option<RateHeaders>) {
        self.rehearsal.push((role, found));
        if limits.is_some() {
            self.limits = limits;
        }
    }

    /// The first structured-output form that works, if any.
    pub fn structured_output(&self) -> Option<StructuredOutput> {
        PROBED_FORMS
            .into_iter()
            .zip(&self.structured)
            .find(|(_, c)| c.is_yes())
            .map(|(f, _)| f)
    }

    /// True when every role this model plays can work with it: no rehearsal call failed, or,
    /// when the model was not rehearsed, the generic probes found no problem.
    pub fn works(&self) -> bool {
        if self.rehearsal.is_empty() {
            self.problems.is_empty()
        } else {
            !self.rehearsal.iter().any(|(_, r)| r.cannot_work())
        }
    }

    /// True when a role's rehearsal answer was refused by its parser (a warning).
    pub fn format_errors(&self) -> bool {
        self.rehearsal
            .iter()
            .any(|(_, r)| matches!(r, Rehearsed::FormatError { .. }))
    }

    /// The rehearsal cell of `role`: `-` when the model does not play it or it was not
    /// rehearsed.
    fn rehearsal_cell(&self, role: Role) -> String {
        self.rehearsal
            .iter()
            .find(|(r, _)| *r == role)
            .map(|(_, found)| found.to_string())
            .unwrap_or_else(|| "-".into())
    }

    /// The table's rows for this model: (row label, cell), in [`ROWS`] order.
    pub fn cells(&self) -> Vec<String> {
        let roles = self
            .roles
            .iter()
            .map(|r| r.as_str())
            .collect::<Vec<_>>()
            .join(",");
        let provider = match self.provider {
            Provider::Openai => "openai",
            Provider::Anthropic => "anthropic",
            Provider::HttpAgent => "http-agent",
            Provider::Simulated => "simulated",
        };
        let verdict = if self.provider == Provider::Simulated {
            "simulated"
        } else if !self.works() {
            "FAIL"
        } else if self.probed || !self.rehearsal.is_empty() {
            "ok"
        } else {
            "not probed"
        };
        let limits = self.limits.unwrap_or_default();
        let mut cells = vec![
            roles,
            provider.to_string(),
            self.reachable.to_string(),
            self.authenticated.to_string(),
            self.model_known.to_string(),
            self.system_message.to_string(),
        ];
        cells.extend(self.structured.iter().map(Check::to_string));
        cells.extend([
            self.tools_auto.to_string(),
            self.tools_named.to_string(),
            self.max_tokens.to_string(),
            self.max_completion_tokens.to_string(),
            self.usage.to_string(),
            self.latency_ms
                .map(|ms| format!("{ms} ms"))
                .unwrap_or_else(|| "-".into()),
            self.output_tokens_per_s
                .map(|t| format!("{t:.1}"))
                .unwrap_or_else(|| "-".into()),
            limit_cell(limits.requests_limit, limits.requests_remaining),
            limit_cell(limits.tokens_limit, limits.tokens_remaining),
            self.rehearsal_cell(Role::Agent),
            self.rehearsal_cell(Role::Customer),
            self.rehearsal_cell(Role::Judge),
            verdict.to_string(),
        ]);
        cells
    }
}

/// A limit row's cell: `600 (599 left)`, `600`, `? (599 left)`, or `-` when the server sent
/// neither.
fn limit_cell(limit: Option<u64>, remaining: Option<u64>) -> String {
    match (limit, remaining) {
        (Some(l), Some(r)) => format!("{l} ({r} left)"),
        (Some(l), None) => l.to_string(),
        (None, Some(r)) => format!("? ({r} left)"),
        (None, None) => "-".into(),
    }
}

/// The table's row labels, in the order of [`ModelReport::cells`].
pub const ROWS: [&str; 23] = [
    "roles",
    "provider",
    "reachable",
    "authenticated",
    "model known",
    "system message",
    "json_schema (strict)",
    "json_object + schema",
    "json_object",
    "plain JSON (none)",
    "tools (auto)",
    "tools (named)",
    "max_tokens",
    "max_completion_tokens",
    "usage",
    "latency",
    "output tokens/s",
    "requests/min limit",
    "tokens/min limit",
    "rehearsal as agent",
    "rehearsal as customer",
    "rehearsal as judge",
    "verdict",
];

/// The capability table: one row per check, one column per model.
pub fn render_table(reports: &[ModelReport]) -> String {
    let columns: Vec<Vec<String>> = reports.iter().map(ModelReport::cells).collect();
    let label_width = ROWS.iter().map(|r| r.len()).max().unwrap_or(0).max(5);
    let widths: Vec<usize> = reports
        .iter()
        .zip(&columns)
        .map(|(r, c)| {
            c.iter()
                .map(|s| s.chars().count())
                .chain([r.name.chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    let line = |out: &mut String, label: &str, cells: Vec<&str>| {
        let mut row = format!("{label:<label_width$}");
        for (cell, width) in cells.iter().zip(&widths) {
            row.push_str("  ");
            row.push_str(&format!("{cell:<width$}"));
        }
        out.push_str(row.trim_end());
        out.push('\n');
    };
    line(
        &mut out,
        "model",
        reports.iter().map(|r| r.name.as_str()).collect(),
    );
    for (i, label) in ROWS.iter().enumerate() {
        line(
            &mut out,
            label,
            columns.iter().map(|c| c[i].as_str()).collect(),
        );
    }
    out
}

/// The configuration lines to use per probed or rehearsed model (as YAML to paste under its
/// `models:` entry), advice as `#` comments, and what each role's rehearsal found short of
/// working. The generic probes' problems read `cannot work` when the model was not
/// rehearsed, and `probe` (information) when it was: the rehearsal decides.
pub fn render_advice(reports: &[ModelReport]) -> String {
    let mut out = String::new();
    for r in reports
        .iter()
        .filter(|r| r.probed || !r.rehearsal.is_empty())
    {
        out.push_str(&format!("# {}\n", r.name));
        for (role, found) in &r.rehearsal {
            let role = role.as_str();
            match found {
                Rehearsed::Works => {}
                Rehearsed::CannotWork(e) => {
                    out.push_str(&format!("#   as {role}: cannot work: {e}\n"));
                }
                Rehearsed::FormatError { kind, message } => out.push_str(&format!(
                    "#   as {role}: format error ({kind}): {message}; a real run records format \
                     errors\n"
                )),
            }
        }
        let label = if r.rehearsal.is_empty() {
            "cannot work"
        } else {
            "probe"
        };
        for p in &r.problems {
            out.push_str(&format!("#   {label}: {p}\n"));
        }
        limit_advice(&mut out, r);
        if r.reachable.is_yes() && r.authenticated.is_yes() {
            match r.structured_output() {
                Some(form) => out.push_str(&format!("structured_output: {}\n", form.as_str())),
                None if r.structured.iter().any(|c| *c != Check::NotTried) => out.push_str(
                    "#   no structured-output form works and plain JSON does not parse\n",
                ),
                None => {}
            }
            if matches!(&r.structured[2], Check::No(why) if why.starts_with("HTTP")) {
                out.push_str("json_mode: false   # the server rejects json_object\n");
            }
            match (&r.max_tokens, &r.max_completion_tokens) {
                (Check::No(_), Check::Yes) => out.push_str(
                    "#   the server rejects max_tokens and takes max_completion_tokens, which \
                     SAGE-RS does not send: leave max_tokens out\n",
                ),
                (Check::Ignored, _) => out.push_str(
                    "#   the server ignores max_tokens: answers are not cut short, set \
                     timeout_secs for long answers\n",
                ),
                _ => {}
            }
            if r.usage != Check::Yes && r.usage != Check::NotTried {
                out.push_str("#   no usage reported: token counts and costs will read 0\n");
            }
            if r.tools_auto != Check::Yes && r.tools_named == Check::Yes {
                out.push_str(
                    "#   tools are called only when tool_choice names one; SAGE-RS sends none, so \
                     a desk agent may answer in text\n",
                );
            }
        }
        for n in &r.notes {
            out.push_str(&format!("#   {n}\n"));
        }
    }
    out
}

/// The `requests_per_minute` / `tokens_per_minute` lines for the provider's limits its headers
/// told: the line to use when the model configures none, a comment when it configures `auto`
/// or more than the provider allows.
fn limit_advice(out: &mut String, r: &ModelReport) {
    let Some(limits) = r.limits else {
        return;
    };
    for (key, unit, provider, configured) in [
        (
            "requests_per_minute",
            "requests",
            limits.requests_limit,
            r.requests_per_minute,
        ),
        (
            "tokens_per_minute",
            "tokens",
            limits.tokens_limit,
            r.tokens_per_minute,
        ),
    ] {
        let Some(provider) = provider else {
            continue;
        };
        match configured {
            None => out.push_str(&format!(
                "{key}: {provider}   # the provider's limit, from its rate-limit headers\n"
            )),
            Some(PerMinute::Auto) => out.push_str(&format!(
                "#   {key}: auto; the provider's limit is {provider} {unit}/min \
                 (`{key}: {provider}` starts there instead of finding it)\n"
            )),
            Some(PerMinute::Known(n)) if u64::from(n) > provider => out.push_str(&format!(
                "#   {key}: {n} is above the provider's limit of {provider} {unit}/min: calls \
                 beyond it are refused (HTTP 429) until SAGE-RS follows the headers down; set \
                 {key}: {provider}\n"
            )),
            Some(PerMinute::Known(_)) => {}
        }
    }
}

/// The JSON Schema of the structured-output probe.
fn schema() -> JsonSchema {
    let string = || Ordered::Obj(vec![("type".into(), Ordered::Str("string".into()))]);
    JsonSchema {
        name: "capital",
        schema: Ordered::Obj(vec![
            ("type".into(), Ordered::Str("object".into())),
            (
                "properties".into(),
                Ordered::Obj(vec![
                    ("city".into(), string()),
                    ("country".into(), string()),
                ]),
            ),
            (
                "required".into(),
                Ordered::Arr(vec![
                    Ordered::Str("city".into()),
                    Ordered::Str("country".into()),
                ]),
            ),
            ("additionalProperties".into(), Ordered::Bool(false)),
        ]),
    }
}

const STRUCTURED_SYSTEM: &str = "You answer with a JSON object with exactly two keys: \"city\" \
     and \"country\", both strings. No other text.";
const STRUCTURED_USER: &str = "Which city is the capital of France? Give the city and its country.";
const SYSTEM_WORD: &str = "PINEAPPLE";
const SYSTEM_PROMPT: &str = "Whatever the user writes, answer with the single word PINEAPPLE \
     and nothing else.";
const SYSTEM_USER: &str = "Hello! What should I cook tonight?";
const COUNT_USER: &str = "Count from 1 to 20, separated by commas.";
/// The token limit of the limit-field probe (an answer longer than this ignored the limit).
const COUNT_LIMIT: u32 = 5;
/// The token limit of the other probes.
const LIMIT: u32 = 60;
const TOOL_NAME: &str = "get_weather";
const TOOL_SYSTEM: &str = "You are a weather assistant. Use the get_weather tool to answer.";
const TOOL_USER: &str = "What is the weather in Paris right now?";

/// Which wire API a probe speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    OpenAi,
    Anthropic,
}

/// One chat call's answer, with what the probe reads beside the parsed response.
struct Answer {
    response: ChatResponse,
    /// The body had a `usage` with output tokens.
    usage: bool,
    elapsed: Duration,
}

/// The HTTP clients of one model's probes.
struct Prober {
    api: Api,
    model: String,
    chat: HttpCore,
    models: HttpCore,
    /// A chat call got a 2xx answer.
    answered: bool,
    /// Output tokens and time of the calls that reported usage.
    tokens: u64,
    time: Duration,
    /// The last rate-limit headers an answer (or a 429) carried.
    limits: Option<RateHeaders>,
}

impl Prober {
    fn new(config: &ModelConfig, options: &ProbeOptions) -> Result<Prober, LlmError> {
        let mut config = config.clone();
        config.timeout_secs = config.timeout_secs.min(options.timeout.as_secs_f64());
        let (api, base, extra, key) = match config.provider {
            Provider::Anthropic => {
                let base = base_url_or(&config, Some(anthropic::DEFAULT_BASE_URL))?;
                let (extra, key) = anthropic::headers(&config)?;
                (Api::Anthropic, base, extra, key)
            }
            _ => {
                let base = base_url_or(&config, Some(OPENAI_BASE_URL))?;
                let key = read_api_key(&config)?;
                let extra = bearer(&config, key.as_ref())?;
                (Api::OpenAi, base, extra, key)
            }
        };
        let chat_path = match api {
            Api::OpenAi => "chat/completions",
            Api::Anthropic => "messages",
        };
        Ok(Prober {
            api,
            model: config.model_id().to_string(),
            chat: HttpCore::new(
                &config,
                format!("{base}/{chat_path}"),
                extra.clone(),
                key.clone(),
            )?,
            models: HttpCore::new(&config, format!("{base}/models"), extra, key)?,
            answered: false,
            tokens: 0,
            time: Duration::ZERO,
            limits: None,
        })
    }

    /// Keeps the rate-limit headers of an answer or a 429, if it carried any.
    fn seen(&mut self, answer: Result<HttpAnswer, LlmError>) -> Result<HttpAnswer, LlmError> {
        let limits = match &answer {
            Ok(a) => a.limits,
            Err(LlmError::RateLimited { limits, .. }) => limits.as_deref().copied(),
            Err(_) => None,
        };
        if limits.is_some() {
            self.limits = limits;
        }
        answer
    }

    /// The model ids `GET /models` lists.
    async fn list_models(&mut self) -> Result<Option<Vec<String>>, LlmError> {
        let answer = self.models.get().await;
        let body = self.seen(answer)?.body;
        let ids = serde_json::from_slice::<Value>(&body).ok().and_then(|v| {
            v.get("data")?.as_array().map(|data| {
                data.iter()
                    .filter_map(|m| m.get("id")?.as_str().map(str::to_string))
                    .collect::<Vec<_>>()
            })
        });
        Ok(ids)
    }

    /// The body of a chat call: the model, the system (none when empty) and user messages,
    /// temperature 0, and
    /// `extra` fields (token limit, response format, tools) on top.
    fn body(&self, system: &str, user: &str, extra: Value) -> Value {
        let mut body = match self.api {
            Api::OpenAi if system.is_empty() => json!({
                "model": self.model,
                "temperature": 0,
                "messages": [{"role": "user", "content": user}],
            }),
            Api::Anthropic if system.is_empty() => json!({
                "model": self.model,
                "temperature": 0,
                "messages": [{"role": "user", "content": user}],
            }),
            Api::OpenAi => json!({
                "model": self.model,
                "temperature": 0,
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": user},
                ],
            }),
            Api::Anthropic => json!({
                "model": self.model,
                "temperature": 0,
                "system": system,
                "messages": [{"role": "user", "content": user}],
            }),
        };
        if let (Some(body), Value::Object(extra)) = (body.as_object_mut(), extra) {
            body.extend(extra);
        }
        body
    }

    /// One chat call, one attempt.
    async fn call(&mut self, body: &Value) -> Result<Answer, LlmError> {
        let started = Instant::now();
        let answer = self.chat.post(body.to_string().into_bytes()).await;
        let bytes = self.seen(answer)?.body;
        let elapsed = started.elapsed();
        self.answered = true;
        let secret = self.chat.secret();
        let response = match self.api {
            Api::OpenAi => parse_completion(&bytes, secret)?,
            Api::Anthropic => anthropic::parse_message(&bytes, secret)?,
        };
        let out_key = match self.api {
            Api::OpenAi => "completion_tokens",
            Api::Anthropic => "output_tokens",
        };
        let usage = serde_json::from_slice::<Value>(&bytes)
            .ok()
            .and_then(|v| v.get("usage")?.get(out_key)?.as_u64())
            .is_some();
        if usage {
            self.tokens += response.usage.output_tokens;
            self.time += elapsed;
        }
        Ok(Answer {
            response,
            usage,
            elapsed,
        })
    }
}

/// A short reason for a failed call, for a table cell.
fn reason(e: &LlmError) -> String {
    match e {
        LlmError::Status { status, .. } => format!("HTTP {status}"),
        LlmError::RateLimited { .. } => "HTTP 429".into(),
        LlmError::Timeout(_) => "timed out".into(),
        LlmError::Connection(_) => "connection failed".into(),
        LlmError::InvalidResponse(_) => "invalid response".into(),
        LlmError::Config(_) => "configuration".into(),
    }
}

/// True when a failed chat call says the model id is unknown.
fn unknown_model(e: &LlmError) -> bool {
    match e {
        LlmError::Status { status: 404, .. } => true,
        LlmError::Status { status, body, .. } if (400..500).contains(status) => {
            let body = body.to_ascii_lowercase();
            body.contains("model")
                && [
                    "not found",
                    "does not exist",
                    "unknown model",
                    "invalid model",
                ]
                .iter()
                .any(|w| body.contains(w))
        }
        _ => false,
    }
}

/// Records an error that stops every later probe (unreachable, unauthenticated, unknown
/// model); false for any other error. Once a chat call has `answered`, a timeout or a broken
/// connection is that probe's failure only (a long answer, a busy server), not a fatal one.
fn fatal(report: &mut ModelReport, model_id: &str, e: &LlmError, answered: bool) -> bool {
    match e {
        LlmError::Connection(_) | LlmError::Timeout(_) if answered => false,
        LlmError::Connection(_) | LlmError::Timeout(_) => {
            if report.reachable.is_yes() {
                // `GET /models` answered; chat calls do not.
                report.problems.push(format!("the chat call fails: {e}"));
            } else {
                report.reachable = Check::No(reason(e));
                report.problems.push(format!("unreachable: {e}"));
            }
            true
        }
        LlmError::Status {
            status: 401 | 403, ..
        } => {
            report.reachable = Check::Yes;
            report.authenticated = Check::No(reason(e));
            report.problems.push(format!(
                "not authenticated ({}): check the API key",
                reason(e)
            ));
            true
        }
        e if unknown_model(e) => {
            report.reachable = Check::Yes;
            report.authenticated = Check::Yes;
            // `GET /models` may have said so already (its cell and problem stay).
            if !matches!(report.model_known, Check::No(_)) {
                report.model_known = Check::No(reason(e));
                report.problems.push(format!(
                    "the server does not know the model `{model_id}`: {e}"
                ));
            }
            true
        }
        LlmError::Config(_) => {
            report.problems.push(e.to_string());
            true
        }
        _ => false,
    }
}

/// The report of a model that is not probed (simulated, HTTP agent): its roles only.
pub fn not_probed(config: &ModelConfig, roles: Vec<Role>) -> ModelReport {
    ModelReport::new(config, roles, false)
}

/// Probes one model for the roles it plays (simulated models and HTTP agents are reported, not
/// probed). Never fails: what goes wrong is in the report's cells and `problems`.
pub async fn probe(config: &ModelConfig, roles: Vec<Role>, options: &ProbeOptions) -> ModelReport {
    if matches!(config.provider, Provider::Simulated | Provider::HttpAgent) {
        return not_probed(config, roles);
    }
    let mut report = ModelReport::new(config, roles, true);
    let mut prober = match Prober::new(config, options) {
        Ok(p) => p,
        Err(e) => {
            report.problems.push(e.to_string());
            return report;
        }
    };
    checks(config, &mut prober, &mut report).await;
    report.limits = prober.limits;
    if prober.tokens > 0 && !prober.time.is_zero() {
        report.output_tokens_per_s = Some(prober.tokens as f64 / prober.time.as_secs_f64());
    }
    report
}

/// The probes in order, into `report`; stops at the first error that stops every later one.
async fn checks(config: &ModelConfig, prober: &mut Prober, report: &mut ModelReport) {
    let model_id = config.model_id().to_string();

    // 1. GET /models: reachable, authenticated, model known.
    match prober.list_models().await {
        Ok(ids) => {
            report.reachable = Check::Yes;
            report.authenticated = Check::Yes;
            if let Some(ids) = ids {
                if ids.contains(&model_id) {
                    report.model_known = Check::Yes;
                } else {
                    report.model_known = Check::No("not listed".into());
                    report.problems.push(format!(
                        "GET /models does not list `{model_id}` (it lists: {})",
                        ids.join(", ")
                    ));
                }
            }
        }
        Err(e) => {
            if matches!(e, LlmError::Status { status, .. } if status != 401 && status != 403) {
                report.notes.push(format!("GET /models: {e}"));
            } else if fatal(report, &model_id, &e, false) {
                return;
            }
        }
    }

    // 2. The token-limit field: honoured, ignored or rejected.
    let mut field = None;
    let fields: &[&str] = match prober.api {
        Api::OpenAi => &["max_tokens", "max_completion_tokens"],
        Api::Anthropic => &["max_tokens"],
    };
    if prober.api == Api::Anthropic {
        report.max_completion_tokens = Check::NotApplicable;
    }
    for &name in fields {
        let body = prober.body("", COUNT_USER, json!({ name: COUNT_LIMIT }));
        let check = match prober.call(&body).await {
            Ok(a) => {
                let r = &a.response;
                let cut = r.finish_reason.as_deref() == Some("length")
                    || (a.usage && r.usage.output_tokens <= u64::from(COUNT_LIMIT));
                if cut { Check::Yes } else { Check::Ignored }
            }
            Err(e) => {
                if fatal(report, &model_id, &e, prober.answered) {
                    return;
                }
                report.notes.push(format!("{name}: {e}"));
                Check::No(reason(&e))
            }
        };
        if field.is_none() && check == Check::Yes {
            field = Some(name);
        }
        if name == "max_tokens" {
            report.max_tokens = check;
        } else {
            report.max_completion_tokens = check;
        }
    }
    if prober.api == Api::OpenAi
        && matches!(report.max_tokens, Check::No(_))
        && let Some(n) = config.max_tokens
    {
        report.problems.push(format!(
            "max_tokens: {n} is configured and the server rejects max_tokens; leave it out"
        ));
    }
    // A field the server accepts, even if it ignores it; none when it rejects both.
    let field = field.or_else(|| {
        fields
            .iter()
            .zip([&report.max_tokens, &report.max_completion_tokens])
            .find(|(_, c)| **c == Check::Ignored)
            .map(|(n, _)| *n)
    });
    let limit = |n: u32| match field {
        Some(name) => json!({ name: n }),
        None => json!({}),
    };
    report.reachable = Check::Yes;
    report.authenticated = Check::Yes;

    // 3. System message, latency, usage.
    let body = prober.body(SYSTEM_PROMPT, SYSTEM_USER, limit(8));
    match prober.call(&body).await {
        Ok(a) => {
            if report.model_known == Check::NotTried {
                report.model_known = Check::Yes;
            }
            report.latency_ms = Some(a.elapsed.as_millis().try_into().unwrap_or(u64::MAX));
            report.usage = if a.usage {
                Check::Yes
            } else {
                Check::No(String::new())
            };
            report.system_message = if a.response.text.to_uppercase().contains(SYSTEM_WORD) {
                Check::Yes
            } else {
                report.notes.push(format!(
                    "system message: asked for {SYSTEM_WORD}, got {:?}",
                    super::openai::truncate_chars(a.response.text.trim(), 60)
                ));
                Check::No(String::new())
            };
        }
        Err(e) => {
            if fatal(report, &model_id, &e, prober.answered) {
                return;
            }
            report.system_message = Check::No(reason(&e));
            report
                .problems
                .push(format!("a plain chat call fails: {e}"));
            return;
        }
    }

    // 4. Structured output: each form until one works.
    for (i, form) in PROBED_FORMS.into_iter().enumerate() {
        let format = match (prober.api, probe_response_format(form)) {
            (Api::Anthropic, Some(_)) => {
                report.structured[i] = Check::NotApplicable;
                continue;
            }
            (_, format) => format,
        };
        let mut extra = limit(LIMIT);
        if let (Some(format), Some(map)) = (format, extra.as_object_mut()) {
            map.insert("response_format".into(), format);
        }
        let body = prober.body(STRUCTURED_SYSTEM, STRUCTURED_USER, extra);
        report.structured[i] = match prober.call(&body).await {
            Ok(a) => {
                let truncated = a.response.finish_reason.as_deref() == Some("length");
                match extract_object(&a.response.text, truncated) {
                    Ok(obj) if ["city", "country"].iter().all(|k| obj.contains_key(*k)) => {
                        Check::Yes
                    }
                    Ok(_) => Check::No("wrong keys".into()),
                    Err(_) if truncated => Check::No("cut off".into()),
                    Err(_) => Check::No("not JSON".into()),
                }
            }
            Err(e) => {
                report
                    .notes
                    .push(format!("structured output {}: {e}", form.as_str()));
                Check::No(reason(&e))
            }
        };
        if report.structured[i].is_yes() {
            break;
        }
    }
    if report.structured_output().is_none() {
        for role in report.roles.clone().into_iter().filter(|r| r.wants_json()) {
            report.problems.push(format!(
                "as {}: no structured-output form works and its plain JSON does not parse",
                role.as_str()
            ));
        }
    }

    // 5. Tool calling: `auto`, then a named tool.
    let tool_params = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    });
    let (tools, choices) = match prober.api {
        Api::OpenAi => (
            json!([{"type": "function", "function": {
                "name": TOOL_NAME, "description": "The current weather in a city.",
                "parameters": tool_params}}]),
            [
                json!("auto"),
                json!({"type": "function", "function": {"name": TOOL_NAME}}),
            ],
        ),
        Api::Anthropic => (
            json!([{"name": TOOL_NAME, "description": "The current weather in a city.",
                "input_schema": tool_params}]),
            [
                json!({"type": "auto"}),
                json!({"type": "tool", "name": TOOL_NAME}),
            ],
        ),
    };
    for (i, choice) in choices.into_iter().enumerate() {
        let mut extra = limit(LIMIT);
        if let Some(map) = extra.as_object_mut() {
            map.insert("tools".into(), tools.clone());
            map.insert("tool_choice".into(), choice);
        }
        let body = prober.body(TOOL_SYSTEM, TOOL_USER, extra);
        let check = match prober.call(&body).await {
            Ok(a) if a.response.tool_calls.iter().any(|c| c.name == TOOL_NAME) => Check::Yes,
            Ok(_) => Check::No("no tool call".into()),
            Err(e) => {
                report.notes.push(format!(
                    "tools ({}): {e}",
                    if i == 0 { "auto" } else { "named" }
                ));
                Check::No(reason(&e))
            }
        };
        if i == 0 {
            report.tools_auto = check;
        } else {
            report.tools_named = check;
        }
    }
}
