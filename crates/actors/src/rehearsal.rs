//! `sage models check`'s rehearsal: the first turn of a run, one call per role a real model
//! plays, with that role's real prompt and its real parser (docs/models.md, "Checking a model").
//!
//! The generic probes (`sage_ports::llm::probe`) ask toy questions; a small model may fail them
//! and still follow the run's real prompts. The rehearsal asks what a run asks: for the run's
//! first scenario and its first dialogue, the customer's request for turn 1, the agent's answer
//! to the customer's first message, and each judge's verdict on that exchange, each request
//! built by the role's own code ([`roles::user_request`], [`roles::service_request`],
//! [`roles::judge_request`]) and sent once (no retry) through the model's real [`Endpoint`]
//! within the check's timeout; the answer is read as the role reads it
//! ([`prompts::parse_user_output`], [`roles::service_outcome`], [`parse_judge_output`]).
//!
//! What a role sees that another role says (the customer's message, the agent's reply) comes
//! from the run's own models when they gave it: the customer model's message, the first agent
//! under test's reply (a simulated one plays from the job). When a real model's answer cannot
//! be used, a built-in simulated customer or agent stands in, so that every role is still
//! rehearsed. Simulated models are not rehearsed (they need no server); HTTP agents are, through
//! the same [`Endpoint`], which speaks their contract.

use crate::roles::{self, Registry, ServiceRole, UserRole};
use sage_core::plan::{Plan, RunConfig};
use sage_core::prompts::{self, UserOutputError};
use sage_core::protocol::parse::parse_judge_output;
use sage_core::protocol::{DialogueJob, JudgeRequest, ServiceOutcome, ServiceRequest, UserRequest};
use sage_core::sop::Sop;
use sage_ports::llm::probe::{Rehearsed, Role};
use sage_ports::llm::{
    ChatRequest, ChatResponse, Endpoint, LlmError, ModelConfig, Provider, RateHeaders,
};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// The run id of the rehearsed dialogue (it names no results folder).
const RUN_ID: &str = "models-check";
/// The simulated customer that stands in for a real one whose message cannot be used.
const STAND_IN_CUSTOMER: &str = "models-check:stand-in-customer";
/// The simulated agent that stands in for real ones whose replies cannot be used.
const STAND_IN_AGENT: &str = "models-check:stand-in-agent";
/// The customer's message when not even the simulated customer gives one.
const LAST_RESORT_MESSAGE: &str = "Hello, I need some help.";

/// What one role's rehearsal found for one model.
#[derive(Debug, Clone, PartialEq)]
pub struct RoleRehearsal {
    /// The model's name in the configuration.
    pub model: String,
    /// The role rehearsed.
    pub role: Role,
    /// Works, format error or cannot work.
    pub found: Rehearsed,
    /// The rate-limit headers of the answer (or of the 429), if it carried any.
    pub limits: Option<RateHeaders>,
}

/// Why there is no rehearsal at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RehearsalError {
    /// The configuration plays no dialogue of its first scenario (e.g. none of its adversarial
    /// levels).
    #[error("the run plays no dialogue of its first scenario `{scenario}`: nothing to rehearse")]
    NoDialogue {
        /// The scenario's id.
        scenario: String,
    },
}

/// Rehearses the first turn of `config`'s first dialogue of `sop` (the run's first scenario):
/// one call per role each real model plays (customer, then agents under test, then judges, a
/// model in two roles called once in each), each bounded by `timeout` (or the model's
/// `timeout_secs` when smaller) and made once. Never fails for a model: a call that fails is
/// that role's [`Rehearsed::CannotWork`].
pub async fn rehearse(
    config: &RunConfig,
    sop: Arc<Sop>,
    timeout: Duration,
) -> Result<Vec<RoleRehearsal>, RehearsalError> {
    let scenario = sop.scenario().id.clone();
    let job = Plan::new(config, RUN_ID, std::slice::from_ref(&sop))
        .jobs()
        .next()
        .ok_or_else(|| RehearsalError::NoDialogue {
            scenario: scenario.clone(),
        })?;
    let job = Arc::new(job);
    let mut endpoints = HashMap::new();
    // Why a model has no endpoint (an API key variable not set, ...): its every role's outcome.
    let mut broken = HashMap::new();
    let stand_ins = stand_ins();
    for model in config.models.iter().chain(&stand_ins) {
        match Endpoint::new(bounded(model, timeout), None) {
            Ok(endpoint) => {
                endpoints.insert(model.name.clone(), Arc::new(endpoint));
            }
            Err(e) => {
                broken.insert(model.name.clone(), e);
            }
        }
    }
    let reg = Arc::new(Registry::sage(
        config,
        [(scenario, sop.clone())].into(),
        endpoints,
    ));
    let rehearsal = Rehearsal {
        config,
        reg,
        broken,
        sop,
    };
    let mut found = Vec::new();

    // The customer's first message.
    let user = UserRequest {
        job: job.clone(),
        turn: 1,
        history: Arc::new(Vec::new()),
        last_action: None,
    };
    let mut message = None;
    // Every customer simulator that is a real model (`user_models`), the first answer played.
    for customer in config.customers().iter().filter(|m| rehearsal.is_real(m)) {
        let answer = rehearsal
            .once(customer, |reg, sop, endpoint| {
                roles::user_request(reg, sop, endpoint, &user)
            })
            .await;
        let limits = limits_of(&answer);
        let outcome = match answer {
            Err(e) => Rehearsed::CannotWork(e),
            Ok(response) => match prompts::parse_user_output(&response.text) {
                Ok(said) => {
                    message = message.or(said);
                    Rehearsed::Works
                }
                Err(e) => Rehearsed::FormatError {
                    kind: user_error_kind(&e).into(),
                    message: e.to_string(),
                },
            },
        };
        found.push(RoleRehearsal {
            model: customer.clone(),
            role: Role::Customer,
            found: outcome,
            limits,
        });
    }
    let message = match message {
        Some(m) => m,
        None => rehearsal.simulated_message(&user).await,
    };

    // Each agent under test's answer to it.
    let service = ServiceRequest {
        job: job.clone(),
        turn: 1,
        history: Arc::new(Vec::new()),
        user_message: message.clone(),
        sample: None,
    };
    let mut agent_chat = None;
    for model in unique(&config.service_models) {
        if !rehearsal.is_real(model) {
            continue;
        }
        let answer = rehearsal
            .once(model, |reg, sop, endpoint| {
                roles::service_request(reg, sop, endpoint, &service)
            })
            .await;
        let limits = limits_of(&answer);
        let outcome = match answer {
            Err(e) => Rehearsed::CannotWork(e),
            Ok(response) => match roles::service_outcome(&rehearsal.sop, &response) {
                ServiceOutcome::Valid { turn } => {
                    agent_chat.get_or_insert(turn.chat);
                    Rehearsed::Works
                }
                ServiceOutcome::FormatError { error, chat } => {
                    agent_chat.get_or_insert(chat);
                    Rehearsed::FormatError {
                        kind: error.kind().into(),
                        message: error.to_string(),
                    }
                }
                ServiceOutcome::InfraError { error } => {
                    Rehearsed::CannotWork(LlmError::InvalidResponse(error))
                }
            },
        };
        found.push(RoleRehearsal {
            model: model.clone(),
            role: Role::Agent,
            found: outcome,
            limits,
        });
    }
    let agent_chat = match agent_chat {
        Some(chat) => chat,
        None => rehearsal.simulated_chat(&service).await,
    };

    // Each judge's verdict on the exchange.
    let judge = JudgeRequest {
        job,
        turn: 1,
        history: Arc::new(Vec::new()),
        user_message: message,
        agent_chat,
    };
    for model in unique(&config.judge_models) {
        if !rehearsal.is_real(model) {
            continue;
        }
        let answer = rehearsal
            .once(model, |reg, sop, _| {
                roles::judge_request(reg, sop, &judge, false)
            })
            .await;
        let limits = limits_of(&answer);
        let outcome = match answer {
            Err(e) => Rehearsed::CannotWork(e),
            Ok(response) => match parse_judge_output(&rehearsal.sop, &response.text) {
                Ok(_) => Rehearsed::Works,
                Err(error) => Rehearsed::FormatError {
                    kind: error.kind().into(),
                    message: error.to_string(),
                },
            },
        };
        found.push(RoleRehearsal {
            model: model.clone(),
            role: Role::Judge,
            found: outcome,
            limits,
        });
    }
    Ok(found)
}

/// What every call of a rehearsal shares.
struct Rehearsal<'a> {
    config: &'a RunConfig,
    reg: Arc<Registry>,
    broken: HashMap<String, LlmError>,
    sop: Arc<Sop>,
}

impl Rehearsal<'_> {
    /// True for a model that is configured and not simulated.
    fn is_real(&self, name: &str) -> bool {
        self.config
            .models
            .iter()
            .any(|m| m.name == name && m.provider != Provider::Simulated)
    }

    /// One call of `model` with the request `build` makes for its endpoint: the answer, or why
    /// there is none.
    async fn once(
        &self,
        model: &str,
        build: impl FnOnce(&Registry, &Arc<Sop>, &Endpoint) -> ChatRequest,
    ) -> Result<ChatResponse, LlmError> {
        if let Some(e) = self.broken.get(model) {
            return Err(e.clone());
        }
        let endpoint = self.reg.endpoint(model).map_err(LlmError::Config)?;
        let request = build(&self.reg, &self.sop, endpoint);
        endpoint.call(&request).await.result
    }

    /// The first message of the run's customer when it is simulated, else of the stand-in
    /// simulated customer.
    async fn simulated_message(&self, user: &UserRequest) -> String {
        let mut job = DialogueJob::clone(&user.job);
        if self.is_real(&job.user_model) {
            job.user_model = STAND_IN_CUSTOMER.into();
        }
        let request = UserRequest {
            job: Arc::new(job),
            ..user.clone()
        };
        UserRole(self.reg.clone())
            .handle(request)
            .await
            .message
            .unwrap_or_else(|| LAST_RESORT_MESSAGE.into())
    }

    /// The reply of the run's first simulated agent under test, else of the stand-in simulated
    /// agent.
    async fn simulated_chat(&self, service: &ServiceRequest) -> String {
        let mut job = DialogueJob::clone(&service.job);
        job.service_model = (self.config.service_models.iter())
            .find(|m| !self.is_real(m))
            .cloned()
            .unwrap_or_else(|| STAND_IN_AGENT.into());
        let request = ServiceRequest {
            job: Arc::new(job),
            ..service.clone()
        };
        match ServiceRole(self.reg.clone()).handle(request).await.outcome {
            ServiceOutcome::Valid { turn } => turn.chat,
            ServiceOutcome::FormatError { chat, .. } => chat,
            ServiceOutcome::InfraError { .. } => String::new(),
        }
    }
}

/// A model's configuration for a rehearsal: a real model makes one attempt (no retry) within
/// `timeout` (its own `timeout_secs` when smaller); a simulated one is as configured.
fn bounded(model: &ModelConfig, timeout: Duration) -> ModelConfig {
    let mut model = model.clone();
    if model.provider != Provider::Simulated {
        model.retries.max_attempts = 1;
        model.timeout_secs = model.timeout_secs.min(timeout.as_secs_f64());
    }
    model
}

/// The built-in simulated customer and agent of the default run, under the stand-ins' names.
fn stand_ins() -> Vec<ModelConfig> {
    RunConfig::default()
        .models
        .into_iter()
        .filter_map(|m| {
            let name = match m.name.as_str() {
                "sim-user" => STAND_IN_CUSTOMER,
                "sim-strong" => STAND_IN_AGENT,
                _ => return None,
            };
            Some(ModelConfig {
                name: name.into(),
                ..m
            })
        })
        .collect()
}

/// The names in `names`, each once, in order.
fn unique(names: &[String]) -> Vec<&String> {
    let mut seen = Vec::new();
    for name in names {
        if !seen.contains(&name) {
            seen.push(name);
        }
    }
    seen
}

/// The rate-limit headers of an answer or of a 429.
fn limits_of(answer: &Result<ChatResponse, LlmError>) -> Option<RateHeaders> {
    match answer {
        Ok(response) => response.rate_limits,
        Err(LlmError::RateLimited { limits, .. }) => limits.as_deref().copied(),
        Err(_) => None,
    }
}

/// A short name of a customer reply's error: `empty`, `refusal`, `no_content`.
fn user_error_kind(e: &UserOutputError) -> &'static str {
    match e {
        UserOutputError::Empty => "empty",
        UserOutputError::Refusal { .. } => "refusal",
        UserOutputError::NoContent { .. } => "no_content",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sage_core::scenario::bundled::BUNDLED;

    fn telecom() -> Arc<Sop> {
        let (name, text) = BUNDLED
            .iter()
            .find(|(n, _)| *n == "telecom_package.yaml")
            .expect("bundled telecom");
        Arc::new(sage_core::sop::from_yaml(text, name).expect("sop"))
    }

    #[tokio::test]
    async fn simulated_models_are_not_rehearsed() {
        let found = rehearse(&RunConfig::default(), telecom(), Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(found, Vec::new());
    }

    /// A model whose key variable is not set cannot work in any role it plays; nothing is
    /// sent anywhere (the endpoint cannot be built).
    #[tokio::test]
    async fn a_model_without_its_key_cannot_work_in_each_of_its_roles() {
        let mut config = RunConfig::default();
        let mut real = ModelConfig::new("real", Provider::Openai);
        real.base_url = Some("http://127.0.0.1:9/v1".into());
        real.api_key_env = Some("SAGE_REHEARSAL_TEST_UNSET_KEY_5e2c".into());
        config.models.push(real);
        config.service_models = vec!["real".into(), "sim-strong".into()];
        config.judge_models = vec!["real".into()];
        let found = rehearse(&config, telecom(), Duration::from_secs(5))
            .await
            .unwrap();
        let roles: Vec<(&str, Role, bool)> = found
            .iter()
            .map(|f| {
                let config_error = matches!(&f.found, Rehearsed::CannotWork(LlmError::Config(e))
                    if e.contains("SAGE_REHEARSAL_TEST_UNSET_KEY_5e2c"));
                (f.model.as_str(), f.role, config_error)
            })
            .collect();
        assert_eq!(
            roles,
            [("real", Role::Agent, true), ("real", Role::Judge, true)]
        );
    }

    #[test]
    fn a_real_model_makes_one_attempt_within_the_timeout() {
        let mut real = ModelConfig::new("real", Provider::Openai);
        real.timeout_secs = 60.0;
        let b = bounded(&real, Duration::from_secs(30));
        assert_eq!((b.retries.max_attempts, b.timeout_secs), (1, 30.0));
        real.timeout_secs = 10.0;
        assert_eq!(bounded(&real, Duration::from_secs(30)).timeout_secs, 10.0);
        let sim = &RunConfig::default().models[0];
        assert_eq!(&bounded(sim, Duration::from_secs(1)), sim);
    }
}
