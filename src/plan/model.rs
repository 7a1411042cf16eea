//! Configuration of one model endpoint (a `models:` entry of run.yaml or desk.yaml), including
//! the settings of the built-in simulated models. Pure data: the `llm` port builds backends
//! from it.

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
}

impl Price {
    /// The cost of a call's usage.
    pub fn cost(&self, usage: crate::protocol::Usage) -> f64 {
        usage.input_tokens as f64 * self.input_per_million / 1e6
            + usage.output_tokens as f64 * self.output_per_million / 1e6
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
    /// Per-attempt timeout in seconds.
    #[serde(default = "default_timeout")]
    pub timeout_secs: f64,
    /// Retries.
    #[serde(default)]
    pub retries: RetryConfig,
    /// Most calls in flight to this endpoint.
    #[serde(default = "default_concurrency")]
    pub max_concurrency: usize,
    /// Most calls started per minute (unlimited when absent).
    #[serde(default)]
    pub requests_per_minute: Option<u32>,
    /// Prices for cost accounting.
    #[serde(default)]
    pub price: Price,
    /// For `provider: simulated`: which simulated model and its settings.
    #[serde(default)]
    pub sim: Option<SimSpec>,
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
            timeout_secs: default_timeout(),
            retries: RetryConfig::default(),
            max_concurrency: default_concurrency(),
            requests_per_minute: None,
            price: Price::default(),
            sim: None,
        }
    }

    /// The model id sent to the server.
    pub fn model_id(&self) -> &str {
        self.model.as_deref().unwrap_or(&self.name)
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
    },
    /// The customer.
    User {
        /// Simulated latency.
        #[serde(default)]
        latency: Option<Latency>,
        /// Probability per call of an empty reply (to exercise retries).
        #[serde(default)]
        empty_rate: f64,
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
