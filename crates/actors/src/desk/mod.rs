//! The support-desk suite's driver ([`Play`] for [`SupportDesk`]): plays one run of a case with
//! one agent under test (the customer's opening email, then up to `max_turns` turns), records
//! every tool call, has the two judges score the transcript. It reaches the roles through a
//! [`Transport`] with the desk's own requests (an agent turn runs its tool rounds against the
//! store where the agent's role is served): the same role actors answer in this process
//! ([`crate::suite::run_embedded`]) or behind the broker (`sage worker`).

pub mod roles;

use crate::roles::Registry;
use crate::suite::{Play, reply_json};
use bytes::Bytes;
use sage_core::desk::{DeskFixture, SupportDesk};
use sage_core::plan::desk::DeskConfig;
use sage_core::protocol::Role;
use sage_core::protocol::desk::{
    DeskAgentRequest, DeskCustomerRequest, DeskJob, DeskJudgeRequest, DeskLine, DeskRecord,
};
use sage_core::protocol::{CallRecord, Usage};
use sage_core::scoring::desk::{CaseRun, verdict};
use sage_ports::llm::{ChatMessage, ChatRole};
use sage_ports::store::RunDir;
use sage_ports::store::desk::DeskPage;
use sage_ports::store::inputs;
use sage_ports::telemetry::metrics::{InFlight, metrics};
use sage_ports::transport::Transport;
use std::sync::Arc;

#[async_trait::async_trait]
impl Play for SupportDesk {
    /// The texts of the store's store.yaml and cases.yaml.
    type Inputs = (String, String);
    type Page = DeskPage;

    fn inputs(config: &DeskConfig) -> Result<(String, String), String> {
        inputs::read_store(&config.store).map_err(|e| e.to_string())
    }

    fn input_texts(texts: &(String, String)) -> Vec<&str> {
        vec![&texts.0, &texts.1]
    }

    fn world(config: &DeskConfig, texts: &(String, String)) -> Result<Arc<DeskFixture>, String> {
        let desk =
            inputs::parse_store(&config.store, (&texts.0, &texts.1)).map_err(|e| e.to_string())?;
        Ok(Arc::new(DeskFixture::new(desk)))
    }

    fn serve(world: &Arc<DeskFixture>, registry: &mut Registry) {
        registry.desk = Some(world.clone());
    }

    fn page(run: &RunDir) -> DeskPage {
        DeskPage::new(run)
    }

    async fn play(
        transport: &dyn Transport,
        world: &DeskFixture,
        job: DeskJob,
    ) -> Result<DeskRecord, String> {
        play(transport, world, job).await
    }

    /// The desk's own requests: an agent turn (its tool rounds run against the store here),
    /// a customer turn, the judges' verdicts.
    async fn answer(role: Role, local: &dyn Transport, payload: &[u8]) -> Result<Bytes, String> {
        match role {
            Role::Service => reply_json(payload, |r: DeskAgentRequest| local.desk_agent(r)).await,
            Role::User => {
                reply_json(payload, |r: DeskCustomerRequest| local.desk_customer(r)).await
            }
            Role::Judge => reply_json(payload, |r: DeskJudgeRequest| local.desk_judge(r)).await,
            Role::Rule | Role::Dialogue => Err(format!(
                "a support-desk run has no {} requests",
                role.as_str()
            )),
        }
    }
}

/// Plays one run of a case: the record, or why the job cannot be played at all (its case is not
/// in the store).
pub async fn play(
    transport: &dyn Transport,
    fixture: &DeskFixture,
    job: DeskJob,
) -> Result<DeskRecord, String> {
    let case = fixture.case(&job.case)?.clone();
    let _in_flight = InFlight::start();
    let job = Arc::new(job);
    let line = |turn: u32, speaker: &str, text: &str| DeskLine {
        turn,
        speaker: speaker.into(),
        text: text.to_string(),
    };
    let email = case.email.trim();
    let mut transcript = vec![line(1, "customer", email)];
    // The agent's view: the customer speaks as `user`. The customer's view: the agent speaks
    // as `user`, the customer as `assistant`. The roles add the system prompts.
    let mut agent_view = vec![ChatMessage::new(ChatRole::User, email)];
    let mut customer_view = vec![ChatMessage::new(ChatRole::Assistant, email)];
    let mut tool_calls = Vec::new();
    let mut calls: Vec<CallRecord> = Vec::new();
    let mut infra_error = None;
    let mut turns = 0;
    let mut truncated_turns = 0;
    for turn in 1..=job.max_turns {
        let request = DeskAgentRequest {
            job: job.clone(),
            turn,
            messages: agent_view.clone(),
            calls: tool_calls.clone(),
        };
        let reply = match transport.desk_agent(request).await {
            Ok(r) => r,
            Err(e) => {
                infra_error = Some(e.to_string());
                break;
            }
        };
        calls.extend(reply.calls);
        transcript.extend(reply.lines);
        tool_calls.extend(reply.tool_calls);
        if reply.infra_error.is_some() {
            infra_error = reply.infra_error;
            break;
        }
        turns = turn;
        truncated_turns += u32::from(reply.truncated);
        transcript.push(line(turn, "agent", &reply.answer));
        agent_view.extend(reply.messages);
        customer_view.push(ChatMessage::new(ChatRole::User, reply.answer));
        if reply.ended || turn == job.max_turns {
            break;
        }
        let request = DeskCustomerRequest {
            job: job.clone(),
            turn: turn + 1,
            messages: customer_view.clone(),
            calls: tool_calls.clone(),
        };
        let reply = match transport.desk_customer(request).await {
            Ok(r) => r,
            Err(e) => {
                infra_error = Some(e.to_string());
                break;
            }
        };
        calls.extend(reply.calls);
        if reply.infra_error.is_some() {
            infra_error = reply.infra_error;
            break;
        }
        transcript.push(line(turn + 1, "customer", &reply.message));
        if reply.done {
            break;
        }
        customer_view.push(ChatMessage::new(ChatRole::Assistant, reply.message.clone()));
        agent_view.push(ChatMessage::new(ChatRole::User, reply.message));
    }
    let mut run = CaseRun::new(&case, tool_calls);
    let shown = verdict(&run);
    // A conversation stopped by an infrastructure error is left out of the metrics: it is
    // not judged either.
    if infra_error.is_none() {
        let request = DeskJudgeRequest {
            job: job.clone(),
            transcript: transcript
                .iter()
                .map(|l| format!("[{} {}] {}\n", l.turn, l.speaker, l.text))
                .collect(),
            verdict: shown,
            calls: run.calls.clone(),
        };
        match transport.desk_judge(request).await {
            Ok(reply) => {
                calls.extend(reply.calls);
                run.judged = reply.judged;
                run.rejudged = reply.rejudged;
                infra_error = reply.infra_error;
            }
            Err(e) => infra_error = Some(e.to_string()),
        }
    }
    let mut usage = Usage::default();
    let mut cost_usd = 0.0;
    for c in calls.iter().filter(|c| c.model == job.model) {
        usage += c.usage;
        cost_usd += c.cost_usd;
    }
    let record = DeskRecord {
        job: Arc::unwrap_or_clone(job),
        turns,
        transcript,
        verdict: shown,
        run,
        calls,
        usage,
        cost_usd,
        truncated_turns,
        infra_error,
    };
    metrics().observe_desk(&record);
    Ok(record)
}
