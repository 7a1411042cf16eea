//! What the roles do with a support-desk request: the same role structs as the SAGE suite
//! ([`ServiceRole`], [`UserRole`], [`JudgePanel`]) answer the desk's requests too, so the desk
//! runs on the same actors, in-process or behind the broker.
//!
//! * The agent under test ([`ServiceRole::desk`]) plays a whole turn: it may call tools up to
//!   [`MAX_ROUNDS`] times, each answered from the store's fixture ([`Desk::call`]: lookups answer
//!   from its data, every state-changing tool records the intent and changes nothing), then
//!   answers the customer.
//! * The customer ([`UserRole::desk`]) answers the agent, and may end the conversation.
//! * The two judges ([`JudgePanel::desk`]) score the finished transcript.
//!
//! A model that cannot be reached (after the endpoint's retries) is an infrastructure error.

use crate::roles::{JudgePanel, Registry, ServiceRole, UserRole, with_request};
use sage_core::desk::DeskFixture;
use sage_core::prompts::desk as prompts;
use sage_core::protocol::desk::{
    DeskAgentReply, DeskAgentRequest, DeskCustomerReply, DeskCustomerRequest, DeskJob,
    DeskJudgeReply, DeskJudgeRequest, DeskLine,
};
use sage_core::scenario::desk::{Case, Tool};
use sage_core::scoring::desk::{Judged, ToolCall};
use sage_ports::llm::sim::desk::{CUSTOMER_DONE, DeskContext, DeskRole};
use sage_ports::llm::{ChatMessage, ChatRequest, ChatRole, Endpoint};
use std::sync::Arc;

/// Most model calls of the agent in one turn (tool rounds included), as the plan counts them.
pub use sage_core::plan::desk::MAX_ROUNDS;

impl Registry {
    /// The store and case a desk request is about.
    fn desk_case(&self, job: &DeskJob) -> Result<(&DeskFixture, &Arc<Case>), String> {
        let fixture = self
            .desk
            .as_deref()
            .ok_or("this process serves no support desk for the run")?;
        Ok((fixture, fixture.case(&job.case)?))
    }
}

/// The facts a simulated desk model plays from.
fn context(
    case: &Arc<Case>,
    job: &DeskJob,
    role: DeskRole,
    turn: u32,
    round: u32,
    calls: &[ToolCall],
) -> DeskContext {
    DeskContext {
        case: case.clone(),
        seed: job.seed,
        role,
        turn,
        round,
        calls: calls.iter().map(|c| (c.turn, c.tool)).collect(),
        verdict: None,
    }
}

/// Reads a desk judge's answer: the first JSON object of the text (as the agent's answer is
/// found) with `resolution_quality` and `policy_adherence`, each a number within 0-1; `None`
/// when either is missing or out of range (the judge's scores are then left out).
pub fn judged(text: &str) -> Option<Judged> {
    let object = sage_core::protocol::parse::extract_object(text, false).ok()?;
    let score = |key: &str| {
        object
            .get(key)
            .and_then(|v| v.as_f64())
            .filter(|x| (0.0..=1.0).contains(x))
    };
    Some(Judged {
        resolution_quality: score("resolution_quality")?,
        policy_adherence: score("policy_adherence")?,
    })
}

impl ServiceRole {
    /// The agent's turn: tool rounds against the fixture, then its answer to the customer.
    pub async fn desk(&self, req: DeskAgentRequest) -> DeskAgentReply {
        let reg = &self.0;
        let mut reply = DeskAgentReply {
            messages: Vec::new(),
            answer: String::new(),
            tool_calls: Vec::new(),
            lines: Vec::new(),
            ended: false,
            truncated: false,
            calls: Vec::new(),
            infra_error: None,
        };
        let found = reg
            .desk_case(&req.job)
            .and_then(|(f, c)| Ok((f, c, reg.endpoint(&req.job.model)?)));
        let (fixture, case, agent) = match found {
            Ok(found) => found,
            Err(e) => {
                reply.infra_error = Some(e);
                return reply;
            }
        };
        let (job, turn) = (&req.job, req.turn);
        // One request, grown round by round: the tools and the conversation are not copied
        // per model call.
        let mut request = ChatRequest {
            messages: Vec::with_capacity(req.messages.len() + 8),
            tools: fixture.tools.clone(),
            ..ChatRequest::default()
        };
        request.messages.push(ChatMessage::new(
            ChatRole::System,
            fixture.agent_prompt.clone(),
        ));
        request.messages.extend(req.messages);
        let mut calls = req.calls;
        let seen = request.messages.len();
        for round in 0..MAX_ROUNDS {
            request.desk = Some(Arc::new(context(
                case,
                job,
                DeskRole::Agent,
                turn,
                round,
                &calls,
            )));
            let called = agent.call(&request).await;
            reply.calls.push(with_request(
                called.record,
                &request.messages,
                reg.record_prompts,
            ));
            let response = match called.result {
                Ok(r) => r,
                Err(e) => {
                    reply.infra_error = Some(format!("agent {}: {e}", job.model));
                    return reply;
                }
            };
            reply.truncated |= response.finish_reason.as_deref() == Some("length");
            if response.tool_calls.is_empty() {
                reply.answer = response.text;
                break;
            }
            let mut results = Vec::with_capacity(response.tool_calls.len());
            for call in &response.tool_calls {
                let args: serde_json::Value =
                    serde_json::from_str(&call.arguments).unwrap_or(serde_json::Value::Null);
                let output = match Tool::from_name(&call.name) {
                    Some(tool) => {
                        let made = ToolCall {
                            turn,
                            tool,
                            order: args
                                .get("order_number")
                                .and_then(|v| v.as_str())
                                .map(str::to_string),
                        };
                        calls.push(made.clone());
                        reply.tool_calls.push(made);
                        reply.ended |= matches!(tool, Tool::HandoverToHuman | Tool::CloseTicket);
                        fixture.desk.call(tool, &args).output
                    }
                    None => serde_json::json!({"error": format!("no tool {}", call.name)}),
                };
                let output = output.to_string();
                reply.lines.push(DeskLine {
                    turn,
                    speaker: "tool".into(),
                    text: format!("{}({}) -> {output}", call.name, call.arguments),
                });
                results.push(ChatMessage::tool_result(&call.id, output));
            }
            request
                .messages
                .push(ChatMessage::tool_calls(response.text, response.tool_calls));
            request.messages.extend(results);
        }
        request
            .messages
            .push(ChatMessage::new(ChatRole::Assistant, reply.answer.clone()));
        reply.messages = request.messages.split_off(seen);
        reply
    }
}

impl UserRole {
    /// The customer's answer to the agent.
    pub async fn desk(&self, req: DeskCustomerRequest) -> DeskCustomerReply {
        let reg = &self.0;
        let mut reply = DeskCustomerReply {
            message: String::new(),
            done: false,
            calls: Vec::new(),
            infra_error: None,
        };
        let found = reg
            .desk_case(&req.job)
            .and_then(|(f, c)| Ok((f, c, reg.endpoint(&req.job.customer_model)?)));
        let (fixture, case, customer) = match found {
            Ok(found) => found,
            Err(e) => {
                reply.infra_error = Some(e);
                return reply;
            }
        };
        let system = reg.prompts.get_or(("desk-customer", &case.id), || {
            prompts::customer_system_prompt(&fixture.desk.store, case)
        });
        let mut messages = Vec::with_capacity(req.messages.len() + 1);
        messages.push(ChatMessage::new(ChatRole::System, system));
        messages.extend(req.messages);
        let ctx = context(case, &req.job, DeskRole::Customer, req.turn, 0, &req.calls);
        let request = ChatRequest {
            messages,
            desk: Some(Arc::new(ctx)),
            ..ChatRequest::default()
        };
        let called = customer.call(&request).await;
        reply.calls.push(with_request(
            called.record,
            &request.messages,
            reg.record_prompts,
        ));
        match called.result {
            Ok(r) => {
                reply.done = r.text.contains(CUSTOMER_DONE);
                reply.message = r.text.replace(CUSTOMER_DONE, "").trim().to_string();
            }
            Err(e) => reply.infra_error = Some(format!("customer: {e}")),
        }
        reply
    }
}

impl JudgePanel {
    /// The judge's and the second judge's scores of a finished conversation.
    pub async fn desk(&self, req: DeskJudgeRequest) -> DeskJudgeReply {
        let reg = &self.0;
        let mut reply = DeskJudgeReply {
            judged: None,
            rejudged: None,
            calls: Vec::new(),
            infra_error: None,
        };
        let found = reg.desk_case(&req.job).and_then(|(fixture, case)| {
            let judges = (req.job.judge_models.iter().take(2))
                .map(|name| reg.endpoint(name))
                .collect::<Result<Vec<_>, String>>()?;
            Ok((fixture, case, judges))
        });
        let (fixture, case, judges) = match found {
            Ok(found) => found,
            Err(e) => {
                reply.infra_error = Some(format!("judges: {e}"));
                return reply;
            }
        };
        let prompt: Arc<str> =
            prompts::judge_prompt(&fixture.desk.store, case, &req.transcript).into();
        let asks = judges.into_iter().enumerate().map(|(i, judge)| {
            let mut ctx = context(case, &req.job, DeskRole::Judge(i), 0, 0, &req.calls);
            ctx.verdict = Some(req.verdict);
            let request = ChatRequest {
                messages: vec![ChatMessage::new(ChatRole::User, prompt.clone())],
                json: true,
                desk: Some(Arc::new(ctx)),
                ..ChatRequest::default()
            };
            judge_once(reg, judge, request)
        });
        for (i, (scores, call)) in futures::future::join_all(asks)
            .await
            .into_iter()
            .enumerate()
        {
            reply.calls.push(call);
            if i == 0 {
                reply.judged = scores;
            } else {
                reply.rejudged = scores;
            }
        }
        reply
    }
}

/// One judge's call: its scores when usable, and the call's record.
async fn judge_once(
    reg: &Registry,
    judge: &Endpoint,
    request: ChatRequest,
) -> (Option<Judged>, sage_core::protocol::CallRecord) {
    let called = judge.call(&request).await;
    let scores = called.result.ok().and_then(|r| judged(&r.text));
    let record = with_request(called.record, &request.messages, reg.record_prompts);
    (scores, record)
}
