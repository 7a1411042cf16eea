//! The built-in simulated models: offline, deterministic for a seed, labelled simulated in every
//! output. They play from the structured [`SimContext`] a role attaches to its request (the
//! job's facts and ground truth), not from the prompt text, and answer in the same text formats
//! a real model must use, so their answers go through the same parsers.
//!
//! * [`agent`]: service-agent profiles with named, tunable skills (classification accuracy,
//!   action derivation, format errors, chat verbosity, degradation with adversarial level and
//!   turn depth). The bundled profiles reproduce the paper's phenomena: the execution gap, the
//!   inverted U over turns, empathy resilience.
//! * [`user`]: a customer who reveals the intent's facts gradually and behaves per adversarial
//!   level.
//! * [`judge`]: an oracle judge that returns the job's ground truth (optionally with noise) and
//!   scores chat quality from the reply's text.

pub mod agent;
pub mod desk;
pub mod judge;
pub mod tau2;
pub mod user;

pub use sage_core::plan::model::{Latency, SimSpec};

use super::{ChatModel, ChatRequest, ChatResponse, LlmError, ModelConfig};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use sage_core::estimate;
use sage_core::protocol::{DialogueJob, Role, Usage};
use sage_core::sop::Sop;
use std::sync::Arc;
use std::time::Duration;

/// What a simulated model is told about the call (never sent to a real model).
#[derive(Debug, Clone)]
pub struct SimContext {
    /// The compiled scenario.
    pub sop: Arc<Sop>,
    /// The job (ground truth, intent, persona, adversarial level, seed).
    pub job: Arc<DialogueJob>,
    /// The role calling.
    pub role: Role,
    /// 1-based turn.
    pub turn: u32,
    /// For judges: which judge of the panel (0, 1, 2).
    pub judge_index: usize,
    /// For the user: the agent's last action, if any.
    pub last_action: Option<String>,
    /// For judges: the agent reply being judged.
    pub agent_chat: Option<String>,
    /// Content retries of the same call (0 for the first): varies the draw.
    pub attempt: u32,
    /// A fork's sample ([`sage_core::protocol::ServiceRequest::sample`]): varies the draw.
    pub sample: Option<u32>,
    /// For the agent: the customer's line of this turn is off-case
    /// ([`sage_core::scoring::fidelity::off_case`]); a simulated agent is misled by it.
    pub misled: bool,
}

impl SimContext {
    /// A generator seeded by (dialogue seed, role, turn, judge, attempt, salt), and a fork's
    /// sample when there is one: every random choice of a simulated model draws from its own
    /// stream, so results never depend on scheduling, and a fork's branch draws as its parent
    /// did but at the sampled turn.
    pub fn rng(&self, salt: &str) -> ChaCha8Rng {
        let base = (
            self.job.seed,
            self.role.as_str(),
            self.turn,
            self.judge_index,
            self.attempt,
            salt,
        );
        ChaCha8Rng::seed_from_u64(match self.sample {
            None => sage_core::plan::derive_seed(base),
            Some(sample) => sage_core::plan::derive_seed((base, "sample", sample)),
        })
    }
}

/// A draw that is true with probability `p` (clamped to [0, 1]; NaN counts as 0): never panics.
pub fn chance(rng: &mut ChaCha8Rng, p: f64) -> bool {
    use rand::Rng;
    let p = if p.is_nan() { 0.0 } else { p.clamp(0.0, 1.0) };
    rng.random_bool(p)
}

/// Checks that a setting is a probability.
fn probability(model: &str, name: &str, p: f64) -> Result<(), LlmError> {
    sage_core::plan::model::probability(model, name, p).map_err(LlmError::Config)
}

/// Builds the simulated backend a configuration describes.
pub fn build(config: &ModelConfig) -> Result<Arc<dyn ChatModel>, LlmError> {
    let spec = config.sim.clone().ok_or_else(|| {
        LlmError::Config(format!(
            "model {}: provider simulated needs a `sim:` section",
            config.name
        ))
    })?;
    spec.check(&config.name).map_err(LlmError::Config)?;
    Ok(match spec {
        SimSpec::Agent {
            profile,
            skills,
            latency,
            fail_turns,
        } => {
            let base = agent::Skills::profile(&profile).ok_or_else(|| {
                LlmError::Config(format!(
                    "model {}: unknown simulated agent profile `{profile}`; expected one of: {}",
                    config.name,
                    agent::Skills::PROFILES.join(", ")
                ))
            })?;
            let skills = base.overridden(&skills);
            let name = &config.name;
            for (setting, p) in [
                ("classification_accuracy", skills.classification_accuracy),
                ("action_derivation", skills.action_derivation),
                ("format_error_rate", skills.format_error_rate),
                ("empathy", skills.empathy),
                ("cold_start", skills.cold_start),
                ("fatigue", skills.fatigue),
                ("adversarial_penalty", skills.adversarial_penalty[0]),
                ("adversarial_penalty", skills.adversarial_penalty[1]),
                ("adversarial_penalty", skills.adversarial_penalty[2]),
            ] {
                probability(name, setting, p)?;
            }
            if !(skills.format_error_escalation.is_finite()
                && skills.format_error_escalation >= 0.0)
            {
                return Err(LlmError::Config(format!(
                    "model {name}: sim format_error_escalation must be a number >= 0"
                )));
            }
            if skills.chat_verbosity > 10_000 {
                return Err(LlmError::Config(format!(
                    "model {name}: sim chat_verbosity must be at most 10000 characters"
                )));
            }
            Arc::new(Simulated {
                model: agent::SimAgent { skills, fail_turns },
                latency,
            })
        }
        SimSpec::User {
            latency,
            empty_rate,
            off_case_rate,
        } => Arc::new(Simulated {
            model: user::SimUser {
                empty_rate,
                off_case_rate,
            },
            latency,
        }),
        SimSpec::DeskAgent { skills, latency } => Arc::new(desk::SimDeskAgent { skills, latency }),
        SimSpec::DeskCustomer { latency } => Arc::new(desk::SimDeskCustomer { latency }),
        SimSpec::DeskJudge { noise, latency } => Arc::new(desk::SimDeskJudge { noise, latency }),
        SimSpec::Tau2Agent {
            wrong_argument,
            skip,
            latency,
        } => Arc::new(tau2::SimTau2Agent {
            wrong_argument,
            skip,
            latency,
        }),
        SimSpec::Tau2Customer { latency } => Arc::new(tau2::SimTau2Customer { latency }),
        SimSpec::Tau2Judge { noise, latency } => Arc::new(tau2::SimTau2Judge { noise, latency }),
        SimSpec::Judge {
            noise,
            latency,
            garbage_rate,
        } => Arc::new(Simulated {
            model: judge::OracleJudge {
                noise,
                garbage_rate,
            },
            latency,
        }),
    })
}

/// A simulated tool-calling model's answer: its text and tool calls, with token counts
/// estimated from the request's and the answer's lengths.
pub(crate) fn answer(
    text: String,
    tool_calls: Vec<super::ToolCall>,
    request: &ChatRequest,
) -> ChatResponse {
    let input: usize = request.messages.iter().map(|m| m.content.len()).sum();
    ChatResponse {
        usage: Usage {
            input_tokens: sage_core::estimate::tokens(input),
            output_tokens: sage_core::estimate::tokens(text.len()) + 20 * tool_calls.len() as u64,
            ..Usage::default()
        },
        finish_reason: Some(
            if tool_calls.is_empty() {
                "stop"
            } else {
                "tool_calls"
            }
            .into(),
        ),
        text,
        tool_calls,
        rate_limits: None,
    }
}

/// Waits the simulated latency of a call (drawn from `rng` when uniform).
pub async fn sleep_latency(latency: Option<Latency>, rng: &mut ChaCha8Rng) {
    let Some(latency) = latency else { return };
    let ms = match latency {
        Latency::FixedMs(ms) => ms,
        Latency::UniformMs(lo, hi) => {
            use rand::Rng;
            rng.random_range(lo..=hi.max(lo))
        }
    };
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

/// A simulated model's text answer for a call.
pub trait Play: Send + Sync {
    /// The answer text and why it stopped (`stop` or `length`).
    fn play(&self, ctx: &SimContext) -> (String, &'static str);
}

struct Simulated<P> {
    model: P,
    latency: Option<Latency>,
}

#[async_trait::async_trait]
impl<P: Play> ChatModel for Simulated<P> {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let ctx = request.sim.as_ref().ok_or_else(|| {
            LlmError::Config("a simulated model needs the call's simulation context".into())
        })?;
        sleep_latency(self.latency, &mut ctx.rng("latency")).await;
        let (text, finish) = self.model.play(ctx);
        // Token counts as a real tokenizer would roughly give them (4 characters a token). The
        // roles send a simulated model no prompt: one is estimated, as the plan estimates it
        // (`sage_core::estimate`).
        let input: usize = if request.messages.is_empty() {
            estimate::simulated_input_chars(ctx.turn)
        } else {
            request.messages.iter().map(|m| m.content.len()).sum()
        };
        Ok(ChatResponse {
            usage: Usage {
                input_tokens: estimate::tokens(input),
                output_tokens: estimate::tokens(text.len()),
                ..Usage::default()
            },
            text,
            finish_reason: Some(finish.to_string()),
            tool_calls: Vec::new(),
            rate_limits: None,
        })
    }

    fn is_simulated(&self) -> bool {
        true
    }
}
