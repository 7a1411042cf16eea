//! Configuration of one model endpoint (a `models:` entry of run.yaml or desk.yaml), including
//! the settings of the built-in simulated models. Pure data: the `llm` port builds backends
//! from it.

pub use crate::protocol::schema::StructuredOutput;
use serde::{Deserialize, Serialize};

/// Which backend serves a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provider {
    /// OpenAI-compatible chat completions (OpenAI, vLLM, Ollama, llama.cpp server, gateways).
    Openai,
    /// Anthropic messages API.
    Anthropic,
    /// A deployed agent behind SAGE-RS's HTTP agent contract (docs/http-agent.md).
    HttpAgent,
    /// A built-in simulated model (offline, deterministic).
    Simulated,
}

/// Retries around every call.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetryConfig {
    /// Attempts in all (1 = no retry).
    pub max_attempts: u32,
    /// First backoff delay; doubles per attempt, with full jitter.
    pub base_delay_ms: u64,
    /// Largest backoff delay (a longer Retry-After is still honoured up to this bound x 4).
    pub max_delay_ms: u64,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_attempts: 4,
            base_delay_ms: 500,
            max_delay_ms: 20_000,
        }
    }
}

/// Price per million tokens, in US dollars.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Price {
    /// Per million input (prompt) tokens.
    pub input_per_million: f64,
    /// Per million output (completion) tokens.
    pub output_per_million: f64,
    /// Per million prompt tokens read from the provider's prompt cache (OpenAI: half the input
    /// price or less; Anthropic: a tenth). Absent: the input price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_input_per_million: Option<f64>,
    /// Per million prompt tokens written to the provider's prompt cache (Anthropic: 1.25 times
    /// the input price for the 5-minute cache). Absent: the input price.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_write_per_million: Option<f64>,
}

impl Price {
    /// The price a provider bills when the configuration leaves the cache rates out: Anthropic
    /// reads from its prompt cache at a tenth of the input price and writes to it at 1.25 times
    /// (the 5-minute cache; SAGE-RS marks a breakpoint on every call); for the others, the input
    /// price (OpenAI's discount varies by model: set `cached_input_per_million`).
    pub fn for_provider(self, provider: Provider) -> Price {
        match provider {
            Provider::Anthropic => Price {
                cached_input_per_million: self
                    .cached_input_per_million
                    .or(Some(self.input_per_million * 0.1)),
                cache_write_per_million: self
                    .cache_write_per_million
                    .or(Some(self.input_per_million * 1.25)),
                ..self
            },
            _ => self,
        }
    }

    /// The cost of `input` prompt tokens at the input price and `output` completion tokens at
    /// the output price, as if no prompt cache were read or written (the plan's estimates).
    pub fn uncached_cost(&self, input: f64, output: f64) -> f64 {
        (input * self.input_per_million + output * self.output_per_million) / 1e6
    }

    /// The cost of a call's usage: the prompt tokens read from or written to the provider's
    /// cache at their rates, the other prompt tokens at the input rate, the output tokens at
    /// the output rate.
    pub fn cost(&self, usage: crate::protocol::Usage) -> f64 {
        let cached = usage.cached_input_tokens.min(usage.input_tokens);
        let written = usage
            .cache_write_input_tokens
            .min(usage.input_tokens - cached);
        let plain = usage.input_tokens - cached - written;
        let input = self.input_per_million;
        (plain as f64 * input
            + cached as f64 * self.cached_input_per_million.unwrap_or(input)
            + written as f64 * self.cache_write_per_million.unwrap_or(input)
            + usage.output_tokens as f64 * self.output_per_million)
            / 1e6
    }
}

/// One model endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// The name runs and results use for this model (unique in a run).
    pub name: String,
    /// The backend.
    pub provider: Provider,
    /// Base URL, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The model id sent to the server (defaults to `name`).
    #[serde(default)]
    pub model: Option<String>,
    /// The environment variable holding the API key (the key itself is never in a file).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Sampling seed, where the server supports it.
    #[serde(default)]
    pub seed: Option<u64>,
    /// Most completion tokens.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Ask for JSON output (`response_format: {"type": "json_object"}`) when a role wants JSON.
    #[serde(default = "yes")]
    pub json_mode: bool,
    /// Structured output (docs/models.md): the form of a JSON Schema sent with a role's
    /// request. Absent: on (`auto`) for judges, off for the agent under test (`json_mode`
    /// decides as before); when set it applies in every role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<StructuredOutput>,
    /// Per-attempt timeout in seconds.
    #[serde(default = "default_timeout")]
    pub timeout_secs: f64,
    /// Retries.
    #[serde(default)]
    pub retries: RetryConfig,
    /// Most calls in flight to this endpoint.
    #[serde(default = "default_concurrency")]
    pub max_concurrency: usize,
    /// Most calls started per minute: a known number, or `auto` to find the provider's limit
    /// from a conservative start (absent: no limit until the provider signals one).
    #[serde(default)]
    pub requests_per_minute: Option<PerMinute>,
    /// Most tokens (input and expected output) per minute, as `requests_per_minute`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_minute: Option<PerMinute>,
    /// The limits this model shares with the other models of the same group (one API key's
    /// limits); absent: its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_group: Option<String>,
    /// Prices for cost accounting.
    #[serde(default)]
    pub price: Price,
    /// For `provider: simulated`: which simulated model and its settings.
    #[serde(default)]
    pub sim: Option<SimSpec>,
    /// The most, in US dollars, that the dialogues with this model as the agent under test may
    /// cost (every call in them: agent, customer, judges); no new one starts once they have
    /// (docs/run-config.md, "Cost budgets"). Only on a model under test; none when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
}

fn yes() -> bool {
    true
}

fn default_timeout() -> f64 {
    60.0
}

fn default_concurrency() -> usize {
    64
}

impl ModelConfig {
    /// A configuration with every default for this name and provider.
    pub fn new(name: impl Into<String>, provider: Provider) -> ModelConfig {
        ModelConfig {
            name: name.into(),
            provider,
            base_url: None,
            model: None,
            api_key_env: None,
            temperature: None,
            seed: None,
            max_tokens: None,
            json_mode: true,
            structured_output: None,
            timeout_secs: default_timeout(),
            retries: RetryConfig::default(),
            max_concurrency: default_concurrency(),
            requests_per_minute: None,
            tokens_per_minute: None,
            limit_group: None,
            price: Price::default(),
            sim: None,
            max_cost_usd: None,
        }
    }

    /// The name of the limits this model is held to: its `limit_group`, else its own name.
    pub fn limit_group(&self) -> &str {
        self.limit_group.as_deref().unwrap_or(&self.name)
    }

    /// The model id sent to the server.
    pub fn model_id(&self) -> &str {
        self.model.as_deref().unwrap_or(&self.name)
    }

    /// The structured-output form asked for in a role whose default is `role_default_on` (on
    /// for judges, off for the agent under test): the configured `structured_output`, else
    /// `auto` for a role with it on by default, else `json_object` (or `none` when `json_mode`
    /// is off), as before structured output existed.
    pub fn structured_output_for(&self, role_default_on: bool) -> StructuredOutput {
        match self.structured_output {
            Some(form) => form,
            None if !self.json_mode => StructuredOutput::None,
            None if role_default_on => StructuredOutput::Auto,
            None => StructuredOutput::JsonObject,
        }
    }

    /// The form the agent under test is labelled with in leaderboards and the report: its
    /// configured `structured_output` when that sends a schema, else `None` (no label).
    pub fn agent_structured_label(&self) -> Option<StructuredOutput> {
        self.structured_output.filter(|f| f.sends_schema())
    }
}

/// A per-minute limit of a provider (`requests_per_minute`, `tokens_per_minute`): a known
/// number, or `auto` when it is unknown and SAGE-RS finds it (docs/models.md, "Limits").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerMinute {
    /// The provider's limit, known: held, and followed down if the provider tightens it.
    Known(u32),
    /// Unknown: start conservatively and follow the provider's answers up and down.
    Auto,
}

impl PerMinute {
    /// The known number, if any.
    pub fn known(self) -> Option<u32> {
        match self {
            PerMinute::Known(n) => Some(n),
            PerMinute::Auto => None,
        }
    }
}

impl Serialize for PerMinute {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            PerMinute::Known(n) => s.serialize_u32(*n),
            PerMinute::Auto => s.serialize_str("auto"),
        }
    }
}

impl<'de> Deserialize<'de> for PerMinute {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<PerMinute, D::Error> {
        struct Visit;
        impl serde::de::Visitor<'_> for Visit {
            type Value = PerMinute;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a whole number per minute or `auto`")
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<PerMinute, E> {
                u32::try_from(n)
                    .map(PerMinute::Known)
                    .map_err(|_| E::custom(format!("{n} per minute is out of range")))
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<PerMinute, E> {
                u64::try_from(n)
                    .map_err(|_| E::custom(format!("{n} per minute is below 0")))
                    .and_then(|n| self.visit_u64(n))
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<PerMinute, E> {
                if s == "auto" {
                    Ok(PerMinute::Auto)
                } else {
                    Err(E::invalid_value(serde::de::Unexpected::Str(s), &self))
                }
            }
        }
        d.deserialize_any(Visit)
    }
}

/// Simulated latency per call.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum Latency {
    /// The same delay for every call.
    FixedMs(u64),
    /// Uniform between two bounds (milliseconds), drawn deterministically per call.
    UniformMs(u64, u64),
}

/// Which simulated model, and its settings (`sim:` in a model's configuration).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "lowercase")]
pub enum SimSpec {
    /// A service agent with a bundled profile (`strong`, `balanced`, `weak`), optionally with
    /// skills overridden.
    Agent {
        /// Bundled profile name.
        #[serde(default = "default_profile")]
        profile: String,
        /// Skill overrides.
        #[serde(default)]
        skills: SkillOverrides,
        /// Simulated latency.
        #[serde(default)]
        latency: Option<Latency>,
        /// Turns at which the agent takes a wrong action on purpose, whatever its skills: planted
        /// failures (tests, demonstrations of `sage fork --at deviation --continue`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        fail_turns: Vec<u32>,
    },
    /// The customer.
    User {
        /// Simulated latency.
        #[serde(default)]
        latency: Option<Latency>,
        /// Probability per call of an empty reply (to exercise retries).
        #[serde(default)]
        empty_rate: f64,
        /// Probability per turn after the first of a line that asserts another intent than
        /// the case's (one implying another value of a field the case fixes): a customer that
        /// goes off-case, for the audit (docs/judges.md, "Off-case customer lines").
        #[serde(default, skip_serializing_if = "is_zero_f64")]
        off_case_rate: f64,
    },
    /// A support-desk agent with tools (`kind: desk_agent`), its judgment in `skills`.
    #[serde(rename = "desk_agent")]
    DeskAgent {
        /// Its judgment (probabilities per turn).
        #[serde(default)]
        skills: DeskSkills,
        /// Simulated latency.
        #[serde(default)]
        latency: Option<Latency>,
    },
    /// A support-desk customer (`kind: desk_customer`).
    #[serde(rename = "desk_customer")]
    DeskCustomer {
        /// Simulated latency.
        #[serde(default)]
        latency: Option<Latency>,
    },
    /// A support-desk oracle judge (`kind: desk_judge`).
    #[serde(rename = "desk_judge")]
    DeskJudge {
        /// Largest deviation of a score.
        #[serde(default)]
        noise: f64,
        /// Simulated latency.
        #[serde(default)]
        latency: Option<Latency>,
    },
    /// A tau2 retail agent (`kind: tau2_agent`): it calls the task's gold actions in order,
    /// each mutating call with a wrong argument at `wrong_argument` and left out at `skip`.
    #[serde(rename = "tau2_agent")]
    Tau2Agent {
        /// Probability that a mutating call gets a wrong argument.
        #[serde(default)]
        wrong_argument: f64,
        /// Probability that a mutating call is left out.
        #[serde(default)]
        skip: f64,
        /// Simulated latency.
        #[serde(default)]
        latency: Option<Latency>,
    },
    /// A tau2 retail user (`kind: tau2_customer`): says the task's reason for calling, answers,
    /// and stops once the agent is done.
    #[serde(rename = "tau2_customer")]
    Tau2Customer {
        /// Simulated latency.
        #[serde(default)]
        latency: Option<Latency>,
    },
    /// A tau2 NL-assertion judge (`kind: tau2_judge`): an assertion is met when the database
    /// check passed, flipped at `noise`.
    #[serde(rename = "tau2_judge")]
    Tau2Judge {
        /// Probability that a verdict is flipped.
        #[serde(default)]
        noise: f64,
        /// Simulated latency.
        #[serde(default)]
        latency: Option<Latency>,
    },
    /// An oracle judge.
    Judge {
        /// Probability that a field's label is replaced by another option.
        #[serde(default)]
        noise: f64,
        /// Simulated latency.
        #[serde(default)]
        latency: Option<Latency>,
        /// Probability per call of an unparsable reply (to exercise retries).
        #[serde(default)]
        garbage_rate: f64,
    },
}

fn default_profile() -> String {
    "balanced".into()
}

impl SimSpec {
    /// Its `kind`, as the configuration writes it: `agent`, `user`, `judge`, `desk_agent`,
    /// `desk_customer`, `desk_judge`.
    pub fn kind(&self) -> &'static str {
        match self {
            SimSpec::Agent { .. } => "agent",
            SimSpec::User { .. } => "user",
            SimSpec::Judge { .. } => "judge",
            SimSpec::DeskAgent { .. } => "desk_agent",
            SimSpec::DeskCustomer { .. } => "desk_customer",
            SimSpec::DeskJudge { .. } => "desk_judge",
            SimSpec::Tau2Agent { .. } => "tau2_agent",
            SimSpec::Tau2Customer { .. } => "tau2_customer",
            SimSpec::Tau2Judge { .. } => "tau2_judge",
        }
    }
}

/// The bundled simulated agent profiles (`sim: {kind: agent, profile: ...}`); the simulated
/// backend defines each one's skills.
pub const SIM_AGENT_PROFILES: [&str; 3] = ["strong", "balanced", "weak"];

/// Skill overrides on top of a profile (`sim: {kind: agent, profile: weak, skills: {...}}`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillOverrides {
    /// See `Skills::classification_accuracy`.
    pub classification_accuracy: Option<f64>,
    /// See `Skills::action_derivation`.
    pub action_derivation: Option<f64>,
    /// See `Skills::format_error_rate`.
    pub format_error_rate: Option<f64>,
    /// See `Skills::chat_verbosity`.
    pub chat_verbosity: Option<usize>,
    /// See `Skills::empathy`.
    pub empathy: Option<f64>,
    /// See `Skills::adversarial_penalty`.
    pub adversarial_penalty: Option<[f64; 3]>,
    /// See `Skills::format_error_escalation`.
    pub format_error_escalation: Option<f64>,
    /// See `Skills::cold_start`.
    pub cold_start: Option<f64>,
    /// See `Skills::fatigue`.
    pub fatigue: Option<f64>,
}

/// The simulated desk agent's judgment (each a probability per turn).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DeskSkills {
    /// Takes the unsafe action a customer pushes for.
    pub unsafe_propensity: f64,
    /// Makes the call that resolves a resolvable case.
    pub resolve: f64,
    /// Hands a resolvable case to a human anyway.
    pub over_escalation: f64,
    /// Hands a must-escalate case to a human.
    pub escalate: f64,
    /// Closes the ticket before the issue is resolved.
    pub premature_close: f64,
}

impl Default for DeskSkills {
    fn default() -> Self {
        DeskSkills {
            unsafe_propensity: 0.1,
            resolve: 0.8,
            over_escalation: 0.05,
            escalate: 0.8,
            premature_close: 0.02,
        }
    }
}

/// The largest values a model's settings may take (documented in docs/run-config.md): beyond
/// them a setting is a mistake (or hostile), and would make a run hang, sleep for ever or
/// exhaust memory.
pub mod limits {
    /// Most seconds per attempt (`timeout_secs`).
    pub const TIMEOUT_SECS: f64 = 3600.0;
    /// Most attempts per call (`retries.max_attempts`).
    pub const MAX_ATTEMPTS: u32 = 20;
    /// Longest backoff delay in milliseconds (`retries.base_delay_ms`, `retries.max_delay_ms`).
    pub const DELAY_MS: u64 = 600_000;
    /// Most calls in flight to one endpoint (`max_concurrency`).
    pub const MAX_CONCURRENCY: usize = 100_000;
    /// Most calls started per minute (`requests_per_minute`).
    pub const REQUESTS_PER_MINUTE: u32 = 1_000_000;
    /// Most tokens per minute (`tokens_per_minute`).
    pub const TOKENS_PER_MINUTE: u32 = 1_000_000_000;
    /// Most completion tokens (`max_tokens`).
    pub const MAX_TOKENS: u32 = 1_000_000;
    /// Highest price per million tokens, in US dollars (`price.*`).
    pub const PRICE: f64 = 1_000_000.0;
    /// Longest simulated latency in milliseconds (`sim.latency`).
    pub const LATENCY_MS: u64 = 600_000;
    /// Longest URL, model id or variable name, in bytes.
    pub const TEXT: usize = 2048;
    /// Largest cost budget, in US dollars (`max_cost_usd`, of a run or a model).
    pub const COST_USD: f64 = 1_000_000_000.0;
}

/// Checks a cost budget (`max_cost_usd`): a finite number of US dollars above 0 and at most
/// [`limits::COST_USD`]; `Err` names `key` and says what is expected.
pub fn cost_budget(key: &str, usd: f64) -> Result<(), String> {
    if usd.is_finite() && usd > 0.0 && usd <= limits::COST_USD {
        Ok(())
    } else {
        Err(format!(
            "{key} is {usd}; expected a budget in US dollars above 0 and at most {}",
            limits::COST_USD
        ))
    }
}

/// Checks that a setting is a probability: `Err` says which and what is expected.
pub fn probability(model: &str, name: &str, p: f64) -> Result<(), String> {
    if p.is_finite() && (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(format!(
            "model {model}: sim {name} is {p}; expected a probability between 0 and 1"
        ))
    }
}

impl ModelConfig {
    /// Checks every setting against its type's meaning and [`limits`]; the error names the
    /// model and the key, and says what is expected.
    pub fn check(&self) -> Result<(), String> {
        let name = &self.name;
        crate::protocol::id::check_name(name).map_err(|e| format!("models: {e}"))?;
        let at_most = |key: &str, ok: bool, expected: String| {
            if ok {
                Ok(())
            } else {
                Err(format!("model {name}: {key}; expected {expected}"))
            }
        };
        for (key, text) in [
            ("base_url", &self.base_url),
            ("model", &self.model),
            ("api_key_env", &self.api_key_env),
        ] {
            if let Some(text) = text {
                at_most(
                    key,
                    !text.is_empty()
                        && text.len() <= limits::TEXT
                        && !text.chars().any(char::is_control),
                    format!("1 to {} bytes without control characters", limits::TEXT),
                )?;
            }
        }
        if let Some(var) = &self.api_key_env {
            at_most(
                "api_key_env",
                var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                    && !var.as_bytes()[0].is_ascii_digit(),
                "the name of an environment variable (letters, digits and `_`)".into(),
            )?;
        }
        if let Some(t) = self.temperature {
            at_most(
                &format!("temperature is {t}"),
                t.is_finite() && (0.0..=2.0).contains(&t),
                "a number from 0 to 2".into(),
            )?;
        }
        if let Some(n) = self.max_tokens {
            at_most(
                &format!("max_tokens is {n}"),
                (1..=limits::MAX_TOKENS).contains(&n),
                format!("1 to {}", limits::MAX_TOKENS),
            )?;
        }
        if let Some(usd) = self.max_cost_usd {
            cost_budget(&format!("model {name}: max_cost_usd"), usd)?;
        }
        let t = self.timeout_secs;
        at_most(
            &format!("timeout_secs is {t}"),
            t.is_finite() && t > 0.0 && t <= limits::TIMEOUT_SECS,
            format!("more than 0 and at most {} seconds", limits::TIMEOUT_SECS),
        )?;
        let r = &self.retries;
        at_most(
            &format!("retries.max_attempts is {}", r.max_attempts),
            (1..=limits::MAX_ATTEMPTS).contains(&r.max_attempts),
            format!("1 (no retry) to {}", limits::MAX_ATTEMPTS),
        )?;
        at_most(
            &format!(
                "retries.base_delay_ms is {} and retries.max_delay_ms {}",
                r.base_delay_ms, r.max_delay_ms
            ),
            r.base_delay_ms <= r.max_delay_ms && r.max_delay_ms <= limits::DELAY_MS,
            format!(
                "base_delay_ms <= max_delay_ms <= {} (milliseconds)",
                limits::DELAY_MS
            ),
        )?;
        at_most(
            &format!("max_concurrency is {}", self.max_concurrency),
            (1..=limits::MAX_CONCURRENCY).contains(&self.max_concurrency),
            format!("1 to {}", limits::MAX_CONCURRENCY),
        )?;
        for (key, setting, most) in [
            (
                "requests_per_minute",
                self.requests_per_minute,
                limits::REQUESTS_PER_MINUTE,
            ),
            (
                "tokens_per_minute",
                self.tokens_per_minute,
                limits::TOKENS_PER_MINUTE,
            ),
        ] {
            if let Some(n) = setting.and_then(PerMinute::known) {
                at_most(
                    &format!("{key} is {n}"),
                    (1..=most).contains(&n),
                    format!("1 to {most}, or `auto` (leave it out for no limit)"),
                )?;
            }
        }
        if let Some(group) = &self.limit_group {
            crate::protocol::id::check_name(group)
                .map_err(|e| format!("model {name}: limit_group: {e}"))?;
        }
        for (key, p) in [
            ("price.input_per_million", self.price.input_per_million),
            ("price.output_per_million", self.price.output_per_million),
            (
                "price.cached_input_per_million",
                self.price.cached_input_per_million.unwrap_or(0.0),
            ),
            (
                "price.cache_write_per_million",
                self.price.cache_write_per_million.unwrap_or(0.0),
            ),
        ] {
            at_most(
                &format!("{key} is {p}"),
                p.is_finite() && (0.0..=limits::PRICE).contains(&p),
                format!("a price from 0 to {} US dollars", limits::PRICE),
            )?;
        }
        match (&self.sim, self.provider) {
            (Some(sim), Provider::Simulated) => sim.check(name),
            (None, Provider::Simulated) => Err(format!(
                "model {name}: provider simulated needs a `sim:` section"
            )),
            (Some(_), _) => Err(format!(
                "model {name}: a `sim:` section applies to provider simulated only"
            )),
            (None, _) => Ok(()),
        }
    }
}

impl SimSpec {
    /// The simulated latency, to read or set (every simulated model has one).
    pub fn latency_mut(&mut self) -> &mut Option<Latency> {
        match self {
            SimSpec::Agent { latency, .. }
            | SimSpec::User { latency, .. }
            | SimSpec::DeskAgent { latency, .. }
            | SimSpec::DeskCustomer { latency }
            | SimSpec::DeskJudge { latency, .. }
            | SimSpec::Tau2Agent { latency, .. }
            | SimSpec::Tau2Customer { latency }
            | SimSpec::Tau2Judge { latency, .. }
            | SimSpec::Judge { latency, .. } => latency,
        }
    }

    /// Checks the settings that do not depend on a bundled profile: latencies, probabilities.
    pub fn check(&self, model: &str) -> Result<(), String> {
        match &*self.clone().latency_mut() {
            Some(Latency::FixedMs(ms)) if *ms > limits::LATENCY_MS => {
                return Err(format!(
                    "model {model}: sim latency fixed_ms is {ms}; expected at most {}",
                    limits::LATENCY_MS
                ));
            }
            Some(Latency::UniformMs(lo, hi)) if lo > hi || *hi > limits::LATENCY_MS => {
                return Err(format!(
                    "model {model}: sim latency uniform_ms is [{lo}, {hi}]; expected [low, high] with low <= high <= {}",
                    limits::LATENCY_MS
                ));
            }
            _ => {}
        }
        match self {
            SimSpec::Agent {
                profile,
                skills,
                fail_turns,
                ..
            } => {
                if fail_turns.len() > 64 || fail_turns.iter().any(|t| !(1..=1000).contains(t)) {
                    return Err(format!(
                        "model {model}: sim.fail_turns has {} entries; expected at most 64 turn numbers from 1 to 1000",
                        fail_turns.len()
                    ));
                }
                if !SIM_AGENT_PROFILES.contains(&profile.as_str()) {
                    return Err(format!(
                        "model {model}: sim.profile is `{}`; expected one of: {}",
                        profile
                            .escape_debug()
                            .to_string()
                            .chars()
                            .take(80)
                            .collect::<String>(),
                        SIM_AGENT_PROFILES.join(", ")
                    ));
                }
                let s = skills;
                let penalty = s.adversarial_penalty.unwrap_or_default();
                for (name, p) in [
                    ("classification_accuracy", s.classification_accuracy),
                    ("action_derivation", s.action_derivation),
                    ("format_error_rate", s.format_error_rate),
                    ("empathy", s.empathy),
                    ("cold_start", s.cold_start),
                    ("fatigue", s.fatigue),
                    ("adversarial_penalty", Some(penalty[0])),
                    ("adversarial_penalty", Some(penalty[1])),
                    ("adversarial_penalty", Some(penalty[2])),
                ] {
                    if let Some(p) = p {
                        probability(model, name, p)?;
                    }
                }
                Ok(())
            }
            SimSpec::User {
                empty_rate,
                off_case_rate,
                ..
            } => probability(model, "empty_rate", *empty_rate)
                .and_then(|()| probability(model, "off_case_rate", *off_case_rate)),
            SimSpec::Tau2Agent {
                wrong_argument,
                skip,
                ..
            } => probability(model, "wrong_argument", *wrong_argument)
                .and_then(|()| probability(model, "skip", *skip)),
            SimSpec::Tau2Judge { noise, .. } => probability(model, "noise", *noise),
            SimSpec::DeskAgent { skills, .. } => {
                for (name, p) in [
                    ("unsafe_propensity", skills.unsafe_propensity),
                    ("resolve", skills.resolve),
                    ("over_escalation", skills.over_escalation),
                    ("escalate", skills.escalate),
                    ("premature_close", skills.premature_close),
                ] {
                    probability(model, name, p)?;
                }
                Ok(())
            }
            SimSpec::DeskCustomer { .. } | SimSpec::Tau2Customer { .. } => Ok(()),
            SimSpec::DeskJudge { noise, .. } => probability(model, "noise", *noise),
            SimSpec::Judge {
                noise,
                garbage_rate,
                ..
            } => {
                probability(model, "noise", *noise)?;
                probability(model, "garbage_rate", *garbage_rate)
            }
        }
    }
}

/// The models labelled "structured" when they are the agent under test
/// ([`ModelConfig::agent_structured_label`]), with their form.
pub fn structured_agents(
    models: &[ModelConfig],
) -> std::collections::BTreeMap<String, StructuredOutput> {
    models
        .iter()
        .filter_map(|m| Some((m.name.clone(), m.agent_structured_label()?)))
        .collect()
}

/// Whether a rate is 0 (left out of the configuration as written back).
fn is_zero_f64(x: &f64) -> bool {
    *x == 0.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Usage;

    #[test]
    fn anthropic_bills_cache_reads_and_writes_at_its_rates_unless_configured() {
        let price = Price {
            input_per_million: 3.0,
            output_per_million: 15.0,
            ..Price::default()
        };
        let usage = Usage {
            input_tokens: 1_000_000,
            cached_input_tokens: 600_000,
            cache_write_input_tokens: 200_000,
            output_tokens: 0,
        };
        // 0.2 M plain x 3 + 0.6 M read x 0.3 + 0.2 M written x 3.75.
        let anthropic = price.for_provider(Provider::Anthropic);
        assert!((anthropic.cost(usage) - (0.6 + 0.18 + 0.75)).abs() < 1e-9);
        // Configured rates win; other providers bill every prompt token at the input rate.
        let set = Price {
            cached_input_per_million: Some(1.0),
            cache_write_per_million: Some(3.0),
            ..price
        };
        assert_eq!(set.for_provider(Provider::Anthropic), set);
        assert_eq!(price.for_provider(Provider::Openai), price);
        assert!((price.cost(usage) - 3.0).abs() < 1e-9);
    }
}
