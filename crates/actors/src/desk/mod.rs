//! The support-desk suite's driver: plays one run of a case with one agent under test (the
//! customer's opening email, then up to `max_turns` turns), records every tool call, has the two
//! judges score the transcript. It reaches the roles through a [`Transport`], like the SAGE
//! dialogue driver: the same role actors answer in this process ([`run_embedded`]) or behind
//! the broker (`sage worker`).

pub mod roles;

pub use crate::fixture::tool_specs;

use crate::fixture::DeskFixture;
use crate::roles::Registry;
use crate::runner::{RunError, build_endpoints};
use crate::{MAILBOX, start_local_roles};
use actix::{Actor, Context, Handler, ResponseFuture};
use futures::StreamExt;
use sage_core::plan::desk::DeskConfig;
use sage_core::protocol::desk::{
    DeskAgentRequest, DeskCustomerRequest, DeskJob, DeskJudgeRequest, DeskLine, DeskRecord,
};
use sage_core::protocol::{CallRecord, Usage};
use sage_core::scenario::desk::Desk;
use sage_core::scoring::desk::{CaseRun, verdict};
use sage_ports::llm::{ChatMessage, ChatRole};
use sage_ports::store::RunDir;
use sage_ports::store::desk::{DESK_RECORDS, Stored};
use sage_ports::telemetry::metrics::{InFlight, RunLabels, metrics};
use sage_ports::transport::Transport;
use std::sync::Arc;

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

/// Play this support-desk job, through the driver's transport or the one given.
pub struct PlayCase {
    /// The job.
    pub job: DeskJob,
    /// A transport for this conversation only (the driver's own when `None`).
    pub through: Option<Arc<dyn Transport>>,
}

impl actix::Message for PlayCase {
    type Result = Result<DeskRecord, String>;
}

/// The support-desk driver's actor: plays each job it is sent through its transport.
pub struct DeskActor {
    /// How the driver reaches the roles.
    pub transport: Arc<dyn Transport>,
    /// The store and its cases.
    pub fixture: Arc<DeskFixture>,
}

impl Actor for DeskActor {
    type Context = Context<Self>;
    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.set_mailbox_capacity(MAILBOX);
    }
}

impl Handler<PlayCase> for DeskActor {
    type Result = ResponseFuture<Result<DeskRecord, String>>;
    fn handle(&mut self, msg: PlayCase, _: &mut Context<Self>) -> Self::Result {
        let transport = msg.through.unwrap_or_else(|| self.transport.clone());
        let fixture = self.fixture.clone();
        Box::pin(async move { play(transport.as_ref(), &fixture, msg.job).await })
    }
}

/// The registry a process serving a support-desk run needs: the store, and the endpoints of
/// the models of `config` that `wanted` accepts.
pub fn registry(
    config: &DeskConfig,
    desk: Arc<DeskFixture>,
    wanted: impl Fn(&str) -> bool,
    limiters: &sage_ports::llm::Limiters,
) -> Result<Registry, RunError> {
    let models: Vec<_> = config
        .models
        .iter()
        .filter(|m| wanted(&m.name))
        .cloned()
        .collect();
    Ok(Registry {
        sops: Default::default(),
        endpoints: build_endpoints(&models, None, limiters)?,
        content_attempts: 1,
        record_prompts: false,
        customer_guard: false,
        prompts: Default::default(),
        desk: Some(desk),
    })
}

/// Plays `jobs` (of `config` over `desk`: [`sage_core::plan::desk::jobs`]) in this process (the
/// role actors and the driver), at most `concurrency` at once, each agent under test its fair
/// part of them ([`crate::lanes`]); `on_record` receives each record as it finishes. Must run
/// inside an actix `System`.
pub async fn run_embedded(
    config: &DeskConfig,
    desk: Desk,
    jobs: Vec<DeskJob>,
    mut on_record: impl FnMut(DeskRecord),
) -> Result<(), RunError> {
    let fixture = Arc::new(DeskFixture::new(desk));
    metrics().driving(&RunLabels::Agents(&config.agents));
    let needed = config.model_names();
    let registry = registry(
        config,
        fixture.clone(),
        |m| needed.contains(&m),
        &Default::default(),
    )?;
    let transport = Arc::new(start_local_roles(
        Arc::new(registry),
        &actix::Arbiter::current(),
        None,
    ));
    let driver = DeskActor { transport, fixture }.start();
    let mut lanes: Vec<Vec<DeskJob>> = vec![Vec::new(); config.agents.len().max(1)];
    for job in jobs {
        let lane = config.agents.iter().position(|a| *a == job.model);
        lanes[lane.unwrap_or(0)].push(job);
    }
    let lanes = lanes
        .into_iter()
        .map(|jobs| Box::new(jobs.into_iter()) as crate::lanes::Lane<'_, DeskJob>)
        .collect();
    let mut finished = std::pin::pin!(crate::lanes::fair(lanes, config.concurrency, |job| {
        driver.send(PlayCase { job, through: None })
    }));
    while let Some(record) = finished.next().await {
        let record = record
            .map_err(|e| RunError::Runtime(e.to_string()))?
            .map_err(RunError::Runtime)?;
        on_record(record);
    }
    Ok(())
}

/// Plays `todo` (the jobs of a run not yet among the `stored`) as [`run_embedded`] does, storing
/// each record in `run`'s desk.jsonl as it finishes and folding it into `stored`'s report and
/// page; `progress` advances by one a conversation. A record that cannot be written does not stop
/// the conversations in flight: the run fails with that error once they have finished (what was
/// written stays, for a resume). Must run inside an actix `System`.
pub async fn run_stored(
    config: &DeskConfig,
    desk: Desk,
    todo: Vec<DeskJob>,
    run: &RunDir,
    stored: &mut Stored,
    progress: Option<&indicatif::ProgressBar>,
) -> Result<(), RunError> {
    let mut writer = run.jsonl_writer(DESK_RECORDS)?;
    let mut failed = None;
    run_embedded(config, desk, todo, |record| {
        match writer.append(&record) {
            Ok(at) => stored.page.add(&record, at),
            Err(e) => {
                failed.get_or_insert(e);
            }
        }
        stored.report.add(&record);
        if let Some(p) = progress {
            p.inc(1);
        }
    })
    .await?;
    match failed {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}
