//! The tau2 retail suite's driver ([`Play`] for [`Tau2Retail`]): plays one simulation as tau2's
//! orchestrator does (the agent greets, the user speaks, the agent calls tools on the
//! simulation's own copy of the database, one call a message, then answers; the user ends it
//! with a stop token), then grades it (the database check, the NL assertions judged by the
//! panel). Every model is reached with one [`ModelCallRequest`] through the transport, so the
//! same driver runs in-process or against role processes.

use crate::suite::Play;
use sage_core::protocol::call::{CallRole, ModelCallReply, ModelCallRequest};
use sage_core::protocol::chat::{ChatMessage, ChatRole, ToolSpec};
use sage_core::protocol::{CallRecord, Usage};
use sage_core::tau2::run::{
    self as tau2run, FIRST_AGENT_MESSAGE, MAX_ROUNDS, NlCheck, STOP_TOKENS, Tau2Facts, Tau2Job,
    Tau2Message, Tau2Record, Tau2Retail, Tau2ToolCall, Termination, World,
};
use sage_core::tau2::{self, AgentCall, RewardPart, Task};
use sage_ports::transport::Transport;
use std::sync::{Arc, OnceLock};

/// The agent's system prompt and tools, rendered once per process.
fn agent_setup() -> &'static (Arc<str>, Vec<ToolSpec>) {
    static SETUP: OnceLock<(Arc<str>, Vec<ToolSpec>)> = OnceLock::new();
    SETUP.get_or_init(|| {
        let tools = tau2::tools()
            .iter()
            .map(|t| ToolSpec {
                name: t.name.to_string(),
                description: t.description.to_string(),
                parameters: t.parameters_schema(),
            })
            .collect();
        (tau2run::agent_prompt().into(), tools)
    })
}

/// A simulation in progress.
struct Simulation<'a> {
    transport: &'a dyn Transport,
    job: &'a Tau2Job,
    messages: Vec<Tau2Message>,
    calls: Vec<CallRecord>,
    agent_calls: Vec<AgentCall>,
}

impl Simulation<'_> {
    fn facts(&self, turn: u32, round: u32, db_match: Option<bool>) -> Arc<serde_json::Value> {
        let facts = Tau2Facts {
            task: self.job.task.clone(),
            seed: self.job.seed,
            turn,
            round,
            agent_calls: self.agent_calls.len() as u32,
            db_match,
        };
        Arc::new(serde_json::to_value(facts).unwrap_or_default())
    }

    /// Asks a model; the reply, or the infrastructure error that ends the simulation.
    async fn ask(&mut self, request: ModelCallRequest) -> Result<ModelCallReply, String> {
        let role = request.role;
        let reply = self
            .transport
            .call(request)
            .await
            .map_err(|e| e.to_string())?;
        self.calls.extend(reply.calls.iter().cloned());
        match &reply.error {
            Some(e) => Err(format!("{role:?} call failed: {e}").to_lowercase()),
            None => Ok(reply),
        }
    }

    fn say(&mut self, role: &str, content: String, turn: u32) {
        self.messages.push(Tau2Message {
            role: role.into(),
            content: Some(content),
            tool_calls: Vec::new(),
            tool_call_id: None,
            error: false,
            turn,
        });
    }
}

#[async_trait::async_trait]
impl Play for Tau2Retail {
    type Inputs = ();
    type Page = sage_ports::store::tau2::Tau2Page;

    fn page(run: &sage_ports::store::RunDir) -> Self::Page {
        sage_ports::store::tau2::Tau2Page::new(run)
    }

    fn inputs(_: &sage_core::tau2::run::Tau2Config) -> Result<(), String> {
        Ok(())
    }

    fn world(_: &sage_core::tau2::run::Tau2Config, _: &()) -> Result<Arc<World>, String> {
        Ok(Arc::new(World::bundled().clone()))
    }

    async fn play(
        transport: &dyn Transport,
        world: &World,
        job: Tau2Job,
    ) -> Result<Tau2Record, String> {
        let task = world
            .task(&job.task)
            .ok_or_else(|| format!("task {:?} is not a tau2 retail task", job.task))?
            .clone();
        let (agent_prompt, tools) = agent_setup();
        let mut db = (*world.db).clone();
        let mut sim = Simulation {
            transport,
            job: &job,
            messages: Vec::new(),
            calls: Vec::new(),
            agent_calls: Vec::new(),
        };
        // The agent's view and the user's (to whom the agent is `user`).
        let mut agent_view = vec![
            ChatMessage::new(ChatRole::System, agent_prompt.clone()),
            ChatMessage::new(ChatRole::Assistant, FIRST_AGENT_MESSAGE),
        ];
        let mut user_view = vec![
            ChatMessage::new(ChatRole::System, tau2run::user_prompt(&task)),
            ChatMessage::new(ChatRole::User, FIRST_AGENT_MESSAGE),
        ];
        sim.say("assistant", FIRST_AGENT_MESSAGE.into(), 0);
        let mut termination = Termination::MaxSteps;
        let mut infra_error = None;
        'turns: for turn in 0..=job.max_turns {
            let request = ModelCallRequest {
                model: job.customer_model.clone(),
                role: CallRole::Customer,
                messages: user_view.clone(),
                tools: Vec::new(),
                json: false,
                facts: Some(sim.facts(turn, 0, None)),
            };
            let said = match sim.ask(request).await {
                Ok(reply) => reply.text,
                Err(e) => {
                    infra_error = Some(e);
                    break;
                }
            };
            sim.say("user", said.clone(), turn);
            if STOP_TOKENS.iter().any(|t| said.contains(t)) {
                termination = Termination::UserStop;
                break;
            }
            if turn == job.max_turns {
                break;
            }
            user_view.push(ChatMessage::new(ChatRole::Assistant, said.clone()));
            agent_view.push(ChatMessage::new(ChatRole::User, said));
            let mut answer = String::new();
            for round in 0..MAX_ROUNDS {
                let request = ModelCallRequest {
                    model: job.model.clone(),
                    role: CallRole::Agent,
                    messages: agent_view.clone(),
                    tools: tools.clone(),
                    json: false,
                    facts: Some(sim.facts(turn + 1, round, None)),
                };
                let reply = match sim.ask(request).await {
                    Ok(reply) => reply,
                    Err(e) => {
                        infra_error = Some(e);
                        break 'turns;
                    }
                };
                if reply.tool_calls.is_empty() {
                    answer = reply.text;
                    break;
                }
                agent_view.push(ChatMessage::tool_calls(
                    reply.text.clone(),
                    reply.tool_calls.clone(),
                ));
                let mut called = Vec::new();
                let mut results = Vec::new();
                for call in &reply.tool_calls {
                    let arguments = serde_json::from_str(&call.arguments)
                        .unwrap_or_else(|_| serde_json::Value::String(call.arguments.clone()));
                    let out = tau2::call(&mut db, &call.name, &arguments);
                    agent_view.push(ChatMessage::tool_result(&call.id, out.content.clone()));
                    sim.agent_calls.push((call.name.clone(), arguments.clone()));
                    called.push(Tau2ToolCall {
                        id: call.id.clone(),
                        name: call.name.clone(),
                        arguments,
                    });
                    results.push(Tau2Message {
                        role: "tool".into(),
                        content: Some(out.content),
                        tool_calls: Vec::new(),
                        tool_call_id: Some(call.id.clone()),
                        error: out.error,
                        turn: turn + 1,
                    });
                }
                sim.messages.push(Tau2Message {
                    role: "assistant".into(),
                    content: (!reply.text.is_empty()).then_some(reply.text),
                    tool_calls: called,
                    tool_call_id: None,
                    error: false,
                    turn: turn + 1,
                });
                sim.messages.extend(results);
            }
            sim.say("assistant", answer.clone(), turn + 1);
            agent_view.push(ChatMessage::new(ChatRole::Assistant, answer.clone()));
            user_view.push(ChatMessage::new(ChatRole::User, answer));
        }
        let mut reward = None;
        if infra_error.is_none() {
            // The database check, once: the simulated judges read it, and the grade.
            let check = (termination == Termination::UserStop)
                .then(|| tau2::db_check(&world.db, &task, &sim.agent_calls));
            match judge(&mut sim, &task, check.map(|c| c.db_match)).await {
                Ok(nl) => {
                    reward = Some(tau2run::grade_with(
                        || {
                            check.unwrap_or_else(|| {
                                tau2::db_check(&world.db, &task, &sim.agent_calls)
                            })
                        },
                        &task,
                        termination,
                        &sim.agent_calls,
                        nl,
                    ))
                }
                Err(e) => infra_error = Some(e),
            }
        }
        if infra_error.is_some() {
            termination = Termination::InfrastructureError;
        }
        let mut usage = Usage::default();
        let mut cost_usd = 0.0;
        for c in sim.calls.iter().filter(|c| c.model == job.model) {
            usage += c.usage;
            cost_usd += c.cost_usd;
        }
        Ok(Tau2Record {
            messages: sim.messages,
            termination,
            reward,
            calls: sim.calls,
            usage,
            cost_usd,
            infra_error,
            job,
        })
    }
}

/// The NL assertions as the judges find them (the majority of the judges that answered, per
/// assertion); none when the task has none, its basis does not count them or the simulation
/// did not end normally (no `db_match`: it is graded 0 without them). An error when no judge's
/// answer reads.
async fn judge(
    sim: &mut Simulation<'_>,
    task: &Task,
    db_match: Option<bool>,
) -> Result<Vec<NlCheck>, String> {
    let assertions = task.nl_assertions();
    let counted = task.reward_basis().contains(&RewardPart::NlAssertion);
    // `db_match` is there when the user stopped the simulation (otherwise it is graded 0).
    let Some(db_match) = db_match.filter(|_| !assertions.is_empty() && counted) else {
        return Ok(Vec::new());
    };
    let messages = vec![
        ChatMessage::new(ChatRole::System, tau2run::JUDGE_PROMPT),
        ChatMessage::new(
            ChatRole::User,
            tau2run::judge_message(&sim.messages, assertions),
        ),
    ];
    let mut verdicts: Vec<Vec<NlCheck>> = Vec::new();
    for judge in &sim.job.judge_models.clone() {
        let request = ModelCallRequest {
            model: judge.clone(),
            role: CallRole::Judge,
            messages: messages.clone(),
            tools: Vec::new(),
            json: true,
            facts: Some(sim.facts(0, 0, Some(db_match))),
        };
        let reply = sim.ask(request).await?;
        if let Some(checks) = tau2run::parse_judge(&reply.text, assertions) {
            verdicts.push(checks);
        }
    }
    let Some(first) = verdicts.first() else {
        return Err("no judge's verdict on the NL assertions could be read".into());
    };
    Ok(first
        .iter()
        .enumerate()
        .map(|(i, check)| {
            let met = verdicts.iter().filter(|v| v[i].met).count();
            NlCheck {
                met: 2 * met > verdicts.len(),
                ..check.clone()
            }
        })
        .collect())
}
