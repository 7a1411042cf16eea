//! Simulated tau2 retail models, so the suite runs offline: an agent that calls the task's gold
//! actions in order, a mutating one now and then with a wrong argument or left out (its
//! profile), a user who says the task's reason for calling and stops once the agent is done,
//! and a judge of the NL assertions that follows the database check. They play from the
//! [`Tau2Facts`] the driver attaches to each call and the bundled tasks, seeded per
//! (simulation, action), so a run never depends on scheduling.

use super::{Latency, answer, chance, sleep_latency};
use crate::llm::{ChatModel, ChatRequest, ChatResponse, LlmError, ToolCall};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use sage_core::tau2::run::{SIM_AGENT_DONE, STOP_TOKENS, Tau2Facts, World};
use sage_core::tau2::{Task, is_mutating};
use serde_json::Value;

fn facts(request: &ChatRequest) -> Result<(Tau2Facts, &'static Task), LlmError> {
    let facts: Tau2Facts = request
        .facts
        .as_deref()
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .ok_or_else(|| LlmError::Config("a simulated tau2 model needs the tau2 facts".into()))?;
    let task = World::bundled()
        .task(&facts.task)
        .ok_or_else(|| LlmError::Config(format!("no tau2 task {:?}", facts.task)))?;
    Ok((facts, task))
}

fn rng(facts: &Tau2Facts, salt: &str, index: u32) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(sage_core::plan::derive_seed((facts.seed, salt, index)))
}

/// The calls the agent will make, in order: each gold action, a mutating one left out at
/// `skip` and given a wrong argument at `wrong_argument`.
fn planned(task: &Task, facts: &Tau2Facts, wrong_argument: f64, skip: f64) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for (i, action) in task.gold_actions().iter().enumerate() {
        let mut arguments = Value::Object(action.arguments.clone());
        if is_mutating(&action.name) {
            let mut r = rng(facts, "action", i as u32);
            if chance(&mut r, skip) {
                continue;
            }
            if chance(&mut r, wrong_argument) {
                arguments = spoiled(arguments);
            }
        }
        out.push((action.name.clone(), arguments));
    }
    out
}

/// The arguments with their last one wrong: a cancellation's other reason, an id that is not
/// in the database.
fn spoiled(mut arguments: Value) -> Value {
    if let Some(object) = arguments.as_object_mut()
        && let Some((_, value)) = object.iter_mut().last()
    {
        let spoilt = match &*value {
            Value::String(s) if s == "no longer needed" => "ordered by mistake".into(),
            Value::String(s) if s == "ordered by mistake" => "no longer needed".into(),
            Value::String(s) => format!("{s}9").into(),
            Value::Array(items) => {
                let mut items = items.clone();
                if let Some(Value::String(s)) = items.first_mut() {
                    s.push('9');
                }
                items.into()
            }
            other => other.clone(),
        };
        *value = spoilt;
    }
    arguments
}

/// A simulated tau2 agent.
pub struct SimTau2Agent {
    /// Probability that a mutating call gets a wrong argument.
    pub wrong_argument: f64,
    /// Probability that a mutating call is left out.
    pub skip: f64,
    /// Simulated latency.
    pub latency: Option<Latency>,
}

#[async_trait::async_trait]
impl ChatModel for SimTau2Agent {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let (facts, task) = facts(request)?;
        sleep_latency(self.latency, &mut rng(&facts, "latency", facts.turn)).await;
        let plan = planned(task, &facts, self.wrong_argument, self.skip);
        let next = plan.get(facts.agent_calls as usize);
        // One call a round; a turn that runs out of rounds asks the user to wait.
        let last_round = facts.round + 1 >= sage_core::tau2::run::MAX_ROUNDS;
        Ok(match next {
            Some((name, arguments)) if !last_round => {
                let call = ToolCall {
                    id: format!("call_{}_{}", facts.turn, facts.agent_calls),
                    name: name.clone(),
                    arguments: arguments.to_string(),
                };
                answer(String::new(), vec![call], request)
            }
            Some(_) => answer(
                "One moment, I am still working on it.".into(),
                Vec::new(),
                request,
            ),
            None => answer(SIM_AGENT_DONE.into(), Vec::new(), request),
        })
    }
}

/// A simulated tau2 user.
pub struct SimTau2Customer {
    /// Simulated latency.
    pub latency: Option<Latency>,
}

/// Agent turns after which the simulated user gives up on an agent that never says it is done.
const PATIENCE: u32 = 12;

#[async_trait::async_trait]
impl ChatModel for SimTau2Customer {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let (facts, task) = facts(request)?;
        sleep_latency(self.latency, &mut rng(&facts, "latency-user", facts.turn)).await;
        // From the user's side the agent speaks as `user`.
        let last = request
            .messages
            .iter()
            .rev()
            .find(|m| m.role == crate::llm::ChatRole::User)
            .map(|m| m.content.to_string())
            .unwrap_or_default();
        let text = if facts.turn == 0 {
            let scenario = &task.user_scenario;
            match scenario.known_info() {
                Some(known) => format!("{} {}", scenario.reason_for_call(), known),
                None => scenario.reason_for_call().to_string(),
            }
        } else if last.contains(SIM_AGENT_DONE) || facts.turn >= PATIENCE {
            format!("Thank you, that is all. {}", STOP_TOKENS[0])
        } else {
            "Okay, please go ahead.".into()
        };
        Ok(answer(text, Vec::new(), request))
    }
}

/// A simulated NL-assertion judge: every assertion met when the database check passed, each
/// verdict flipped at `noise`.
pub struct SimTau2Judge {
    /// Probability that a verdict is flipped.
    pub noise: f64,
    /// Simulated latency.
    pub latency: Option<Latency>,
}

#[async_trait::async_trait]
impl ChatModel for SimTau2Judge {
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let (facts, task) = facts(request)?;
        let mut r = rng(&facts, "judge", 0);
        sleep_latency(self.latency, &mut r).await;
        let met = facts.db_match.unwrap_or(false);
        let results: Vec<Value> = task
            .nl_assertions()
            .iter()
            .map(|a| {
                let flipped = chance(&mut r, self.noise);
                serde_json::json!({
                    "expectedOutcome": a,
                    "reasoning": "simulated judge: follows the database check",
                    "metExpectation": met != flipped,
                })
            })
            .collect();
        Ok(answer(
            serde_json::json!({"results": results}).to_string(),
            Vec::new(),
            request,
        ))
    }
}
