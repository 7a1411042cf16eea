//! The support-desk suite's driver: plays one case with one agent under test (the customer's
//! opening email, then up to `max_turns` turns; in each, the agent may call tools several times
//! before it answers), records every tool call, has the two judges score the transcript, and
//! runs every case of a store against every model, N times, writing desk.jsonl.
//!
//! Tools run against the store's fixture ([`Desk::call`]): lookups answer from its data, every
//! state-changing tool records the intent and changes nothing.

use crate::llm::sim::desk::{CUSTOMER_DONE, DeskContext, DeskRole};
use crate::llm::{ChatMessage, ChatRequest, ChatRole, Endpoint, ToolSpec};
use crate::plan::derive_seed;
use crate::plan::desk::DeskConfig;
use crate::prompts::desk as prompts;
use crate::protocol::desk::{DeskLine, DeskRecord};
use crate::protocol::{CallRecord, Usage};
use crate::scenario::desk::{Case, Desk, Tool};
use crate::scoring::desk::{CaseRun, Judged, ToolCall, verdict};
use futures::StreamExt;
use std::collections::HashMap;
use std::sync::Arc;

/// Most model calls of the agent in one turn (tool rounds included).
pub const MAX_ROUNDS: u32 = 6;

/// The endpoints a desk run uses.
pub struct DeskModels {
    /// By name.
    pub endpoints: HashMap<String, Arc<Endpoint>>,
    /// The customer simulator.
    pub customer: Arc<Endpoint>,
    /// The judge and the second judge.
    pub judges: [Arc<Endpoint>; 2],
}

/// The tools offered to the agent.
pub fn tool_specs() -> Vec<ToolSpec> {
    Tool::ALL
        .iter()
        .map(|t| ToolSpec {
            name: t.name().into(),
            description: t.description().into(),
            parameters: t.parameters(),
        })
        .collect()
}

struct Play<'a> {
    desk: &'a Desk,
    case: Arc<Case>,
    seed: u64,
    calls: Vec<CallRecord>,
    tool_calls: Vec<ToolCall>,
    transcript: Vec<DeskLine>,
}

impl Play<'_> {
    fn context(&self, role: DeskRole, turn: u32, round: u32) -> Arc<DeskContext> {
        Arc::new(DeskContext {
            case: self.case.clone(),
            seed: self.seed,
            role,
            turn,
            round,
            calls: self.tool_calls.iter().map(|c| (c.turn, c.tool)).collect(),
            verdict: None,
        })
    }

    fn line(&mut self, turn: u32, speaker: &str, text: String) {
        self.transcript.push(DeskLine {
            turn,
            speaker: speaker.into(),
            text,
        });
    }
}

fn judged(text: &str) -> Option<Judged> {
    let object = crate::protocol::parse::extract_object(text, false).ok()?;
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

/// Plays one run of `case` with the agent `model`. Never fails: an unreachable model ends the
/// conversation with `infra_error` set.
pub async fn play_case(
    desk: &Desk,
    case: Arc<Case>,
    model: &str,
    models: &DeskModels,
    seed: u64,
    max_turns: u32,
) -> (CaseRun, Vec<DeskLine>, Vec<CallRecord>, Option<String>) {
    let agent = &models.endpoints[model];
    let tools = tool_specs();
    let mut play = Play {
        desk,
        case: case.clone(),
        seed,
        calls: Vec::new(),
        tool_calls: Vec::new(),
        transcript: Vec::new(),
    };
    let mut agent_view = vec![
        ChatMessage::new(ChatRole::System, prompts::agent_system_prompt(&desk.store)),
        ChatMessage::new(ChatRole::User, case.email.trim()),
    ];
    let customer_system = prompts::customer_system_prompt(&desk.store, &case);
    // The customer's view: the agent speaks as `user`, the customer as `assistant`.
    let mut customer_view = vec![
        ChatMessage::new(ChatRole::System, customer_system),
        ChatMessage::new(ChatRole::Assistant, case.email.trim()),
    ];
    play.line(1, "customer", case.email.trim().to_string());
    let mut infra_error = None;
    'turns: for turn in 1..=max_turns {
        let mut ended = false;
        let mut answer = String::new();
        for round in 0..MAX_ROUNDS {
            let request = ChatRequest {
                messages: agent_view.clone(),
                tools: tools.clone(),
                desk: Some(play.context(DeskRole::Agent, turn, round)),
                ..ChatRequest::default()
            };
            let called = agent.call(&request).await;
            play.calls.push(called.record);
            let response = match called.result {
                Ok(r) => r,
                Err(e) => {
                    infra_error = Some(format!("agent {model}: {e}"));
                    break 'turns;
                }
            };
            if response.tool_calls.is_empty() {
                answer = response.text;
                break;
            }
            agent_view.push(ChatMessage::tool_calls(
                response.text.clone(),
                response.tool_calls.clone(),
            ));
            for call in &response.tool_calls {
                let args: serde_json::Value =
                    serde_json::from_str(&call.arguments).unwrap_or(serde_json::Value::Null);
                let output = match Tool::from_name(&call.name) {
                    Some(tool) => {
                        play.tool_calls.push(ToolCall {
                            turn,
                            tool,
                            order: args
                                .get("order_number")
                                .and_then(|v| v.as_str())
                                .map(str::to_string),
                        });
                        ended |= matches!(tool, Tool::HandoverToHuman | Tool::CloseTicket);
                        play.desk.call(tool, &args).output
                    }
                    None => serde_json::json!({"error": format!("no tool {}", call.name)}),
                };
                let output = output.to_string();
                play.line(
                    turn,
                    "tool",
                    format!("{}({}) -> {output}", call.name, call.arguments),
                );
                agent_view.push(ChatMessage::tool_result(&call.id, output));
            }
        }
        play.line(turn, "agent", answer.clone());
        agent_view.push(ChatMessage::new(ChatRole::Assistant, answer.clone()));
        customer_view.push(ChatMessage::new(ChatRole::User, answer));
        if ended || turn == max_turns {
            break;
        }
        let request = ChatRequest {
            messages: customer_view.clone(),
            desk: Some(play.context(DeskRole::Customer, turn + 1, 0)),
            ..ChatRequest::default()
        };
        let called = models.customer.call(&request).await;
        play.calls.push(called.record);
        let reply = match called.result {
            Ok(r) => r.text,
            Err(e) => {
                infra_error = Some(format!("customer: {e}"));
                break;
            }
        };
        let done = reply.contains(CUSTOMER_DONE);
        let reply = reply.replace(CUSTOMER_DONE, "").trim().to_string();
        play.line(turn + 1, "customer", reply.clone());
        if done {
            break;
        }
        customer_view.push(ChatMessage::new(ChatRole::Assistant, reply.clone()));
        agent_view.push(ChatMessage::new(ChatRole::User, reply));
    }
    let mut run = CaseRun::new(&case, play.tool_calls.clone());
    let shown = verdict(&run);
    let transcript: String = play
        .transcript
        .iter()
        .map(|l| format!("[{} {}] {}\n", l.turn, l.speaker, l.text))
        .collect();
    for (i, judge) in models.judges.iter().enumerate() {
        let mut ctx = (*play.context(DeskRole::Judge(i), 0, 0)).clone();
        ctx.verdict = Some(shown);
        let request = ChatRequest {
            messages: vec![ChatMessage::new(
                ChatRole::User,
                prompts::judge_prompt(&desk.store, &case, &transcript),
            )],
            json: true,
            desk: Some(Arc::new(ctx)),
            ..ChatRequest::default()
        };
        let called = judge.call(&request).await;
        let scores = called.result.ok().and_then(|r| judged(&r.text));
        play.calls.push(called.record);
        if i == 0 {
            run.judged = scores;
        } else {
            run.rejudged = scores;
        }
    }
    (run, play.transcript, play.calls, infra_error)
}

/// Plays every case of `desk` with every agent of `config`, `repeats` times each, at most
/// `concurrency` at once; `on_record` receives each record as it finishes.
pub async fn run_suite(
    config: &DeskConfig,
    desk: Arc<Desk>,
    models: Arc<DeskModels>,
    run_id: &str,
    mut on_record: impl FnMut(DeskRecord),
) {
    let cases: Vec<Arc<Case>> = desk.cases.iter().cloned().map(Arc::new).collect();
    let mut jobs = Vec::new();
    for model in &config.agents {
        for case in &cases {
            for repeat in 0..config.repeats {
                // The same customer for every model (paired comparison).
                let seed = derive_seed((config.seed, &case.id, repeat));
                jobs.push((model.clone(), case.clone(), repeat, seed));
            }
        }
    }
    let max_turns = config.max_turns;
    let mut finished = futures::stream::iter(jobs)
        .map(|(model, case, repeat, seed)| {
            let (desk, models) = (desk.clone(), models.clone());
            let run_id = run_id.to_string();
            async move {
                let (run, transcript, calls, infra_error) =
                    play_case(&desk, case, &model, &models, seed, max_turns).await;
                let mut usage = Usage::default();
                let mut cost_usd = 0.0;
                for c in calls.iter().filter(|c| c.model == model) {
                    usage += c.usage;
                    cost_usd += c.cost_usd;
                }
                DeskRecord {
                    run_id,
                    verdict: verdict(&run),
                    model,
                    repeat,
                    transcript,
                    run,
                    calls,
                    usage,
                    cost_usd,
                    infra_error,
                }
            }
        })
        .buffer_unordered(config.concurrency.max(1));
    while let Some(record) = finished.next().await {
        on_record(record);
    }
}
