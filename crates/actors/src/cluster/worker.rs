//! `sage worker`: serves roles over NATS.
//!
//! - The dialogue role pulls jobs from the shared JetStream consumer (never more than
//!   `concurrency` at once), plays each with the dialogue driver over NATS, signals progress
//!   while it plays (so `ack_wait` only has to cover a silent worker, not a long dialogue),
//!   stores the record in the records stream and only then acks the job. Roles this worker
//!   serves itself are asked in-process, the others over NATS (all over NATS with
//!   `remote_roles`). A dialogue that lost a role to the transport (no process answered within
//!   the retry budget, or every one refused) is not stored: the job goes back to the queue,
//!   unless it has been tried `max_deliveries` times already.
//! - The user, service, judge and rule roles answer requests on their queue groups with the
//!   local role actors of the request's run.
//!
//! On shutdown (SIGTERM): stop pulling, let the dialogues in flight finish for `grace`, hand
//! back the rest, then stop answering role requests once this process's own dialogues no
//! longer need them.

use super::{AbortOnDrop, ClusterError, Driver, Runs, Served, ServedRun};
use crate::RunDialogue;
use crate::lanes::Parts;
use async_nats::jetstream::{self, AckKind};
use async_nats::{Client, HeaderMap};
use bytes::Bytes;
use futures::StreamExt;
use sage_core::protocol::desk::{
    DeskAgentReply, DeskAgentRequest, DeskCustomerReply, DeskCustomerRequest, DeskJudgeReply,
    DeskJudgeRequest,
};
use sage_core::protocol::{
    DialogueJob, JudgeReply, JudgeRequest, Role, RuleReply, RuleRequest, ServiceReply,
    ServiceRequest, UserReply, UserRequest,
};
use sage_ports::telemetry::{Health, metrics};
use sage_ports::transport::nats::{
    Broker, ERROR_HEADER, NatsError, RUN_HEADER, RequestPolicy, extract_trace, header,
    header_value, records_subject, role_queue, role_subject,
};
use sage_ports::transport::{Transport, TransportError};
use serde::Serialize;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::{Semaphore, watch};
use tracing::Instrument;

/// Most role requests one process answers at once, per role subscription.
const ROLE_REQUESTS_IN_FLIGHT: u32 = 8192;

/// How a worker runs.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// The roles (and models) it serves.
    pub served: Served,
    /// Most dialogues it plays at once.
    pub concurrency: usize,
    /// Role requests: per-attempt timeout and retry budget.
    pub policy: RequestPolicy,
    /// On shutdown, how long dialogues in flight may take to finish before they are handed back.
    pub grace: Duration,
    /// A dialogue that lost a role is retried until it has been delivered this many times;
    /// then it is stored with its infrastructure errors, so the run still completes.
    pub max_deliveries: i64,
    /// A run not asked for this long, with nothing of it in flight, is unloaded (its actors and
    /// endpoints dropped), so a long-lived worker does not keep every run it ever served.
    pub run_idle: Duration,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        WorkerOptions {
            served: Served::default(),
            concurrency: 256,
            policy: RequestPolicy::default(),
            grace: Duration::from_secs(30),
            max_deliveries: 5,
            run_idle: Duration::from_secs(3600),
        }
    }
}

/// What a worker did (for its exit log).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WorkerReport {
    /// Dialogues played and stored.
    pub stored: u64,
    /// Jobs handed back to the queue.
    pub released: u64,
    /// Jobs it was delivered that had been delivered before (another worker's, killed or
    /// stopped, or its own handed back): `sage_jetstream_redeliveries_total{consumer="dialogue"}`
    /// of the process.
    pub redelivered: u64,
}

/// Runs a worker until `stop` turns true, then shuts down gracefully. Must run inside an actix
/// `System`.
pub async fn run_worker(
    broker: Broker,
    options: WorkerOptions,
    health: Arc<Health>,
    stop: watch::Receiver<bool>,
) -> Result<WorkerReport, ClusterError> {
    let mut stop =
        sage_ports::transport::nats::stop_when_gone(broker.client.clone(), health.clone(), stop);
    let arbiters = [actix::Arbiter::new(), actix::Arbiter::new()];
    let runs = Arc::new(Runs::new(
        options.served.clone(),
        broker.clone(),
        options.policy.clone(),
        [arbiters[0].handle(), arbiters[1].handle()],
    ));
    {
        let client = broker.client.clone();
        let runs = runs.clone();
        // Ready while connected and loading runs from the bucket works.
        health.watch(move || {
            client.connection_state() == async_nats::connection::State::Connected
                && !runs.troubled()
        });
    }
    // This worker's part of each provider limit, from the leases of the workers calling it.
    let _leases = super::limits::keep_leases(
        broker.clone(),
        runs.limiters().clone(),
        super::limits::worker_id(),
        stop.clone(),
    );
    let _unloader = {
        let (runs, idle) = (runs.clone(), options.run_idle);
        let every = (idle / 2).clamp(Duration::from_millis(100), Duration::from_secs(60));
        AbortOnDrop(tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                for run in runs.unload_idle(idle) {
                    tracing::info!(run, idle_secs = idle.as_secs(), "unloaded idle run");
                }
            }
        }))
    };
    // Role servers first, so this process's own dialogues find them.
    let (roles_stop_tx, roles_stop) = watch::channel(false);
    let mut servers = Vec::new();
    for &role in &options.served.roles {
        if role == Role::Dialogue {
            continue;
        }
        let models: Vec<Option<String>> = match role {
            Role::Service if !options.served.models.is_empty() => {
                options.served.models.iter().cloned().map(Some).collect()
            }
            _ => vec![None],
        };
        for model in models {
            let subject = role_subject(role, model.as_deref());
            let queue = role_queue(role, model.as_deref());
            let subscription = broker
                .client
                .queue_subscribe(subject.clone(), queue)
                .await
                .map_err(|e| NatsError::JetStream {
                    what: format!("subscribing to {subject}"),
                    message: e.to_string(),
                })?;
            let limit = Arc::new(Semaphore::new(ROLE_REQUESTS_IN_FLIGHT as usize));
            let task = tokio::spawn(serve_role(
                broker.client.clone(),
                role,
                subscription,
                runs.clone(),
                limit.clone(),
                roles_stop.clone(),
            ));
            servers.push((task, limit));
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), broker.client.flush()).await;
    let mut report = WorkerReport::default();
    health.unready_on(stop.clone());
    if options.served.roles.contains(&Role::Dialogue) {
        let consumer = broker.jobs_consumer().await?;
        // Records can be stored before an aggregator ever ran.
        broker.records_stream().await?;
        health.set_ready(true);
        tracing::info!(roles = ?options.served.roles, "worker ready");
        report = pull_jobs(&broker, consumer, runs, &options, stop).await;
    } else {
        health.set_ready(true);
        tracing::info!(roles = ?options.served.roles, "worker ready");
        let _ = stop.wait_for(|s| *s).await;
    }
    health.set_ready(false);
    // This process's dialogues are done: stop answering, finish the requests being answered.
    let _ = roles_stop_tx.send(true);
    // One deadline for all of them, so shutdown stays within a pod's grace period.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    for (task, limit) in servers {
        let _ = tokio::time::timeout_at(deadline, task).await;
        let _ =
            tokio::time::timeout_at(deadline, limit.acquire_many(ROLE_REQUESTS_IN_FLIGHT)).await;
    }
    // Bounded: with the broker gone, a flush would wait for it forever.
    let _ = tokio::time::timeout(Duration::from_secs(5), broker.client.flush()).await;
    for arbiter in arbiters {
        arbiter.stop();
    }
    if !health.is_live() {
        return Err(NatsError::ClientGone.into());
    }
    Ok(report)
}

/// Answers one role's requests until `stop`, each on its own task (at most the semaphore's
/// permits at once).
async fn serve_role(
    client: Client,
    role: Role,
    mut subscription: async_nats::Subscriber,
    runs: Arc<Runs>,
    limit: Arc<Semaphore>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let message = tokio::select! {
            m = subscription.next() => m,
            _ = stop.wait_for(|s| *s) => None,
        };
        let Some(message) = message else { break };
        let Ok(permit) = limit.clone().acquire_owned().await else {
            break;
        };
        let (client, runs) = (client.clone(), runs.clone());
        tokio::spawn(async move {
            answer(&client, role, &runs, message).await;
            drop(permit);
        });
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), subscription.unsubscribe()).await;
}

use crate::suite::reply_json;

async fn answer(client: &Client, role: Role, runs: &Runs, message: async_nats::Message) {
    let Some(reply_to) = message.reply.clone() else {
        return;
    };
    // Spans cost a little per request: only when they are exported.
    let span = if sage_ports::telemetry::trace::exporting() {
        tracing::info_span!("role", role = role.as_str())
    } else {
        tracing::Span::none()
    };
    extract_trace(message.headers.as_ref(), &span);
    let result = async {
        let run = header(message.headers.as_ref(), RUN_HEADER)
            .ok_or_else(|| format!("a request without a {RUN_HEADER} header"))
            .and_then(|run| {
                sage_core::protocol::id::check_run_id(run)
                    .map(|()| run.to_string())
                    .map_err(|e| format!("{RUN_HEADER} header: {e}"))
            })
            .inspect_err(|_| {
                metrics()
                    .messages_rejected
                    .with_label_values(&["request", "invalid"])
                    .inc()
            })?;
        let served: Arc<ServedRun> = runs.get(&run).await.map_err(|e| {
            if e.is_permanent() {
                metrics()
                    .messages_rejected
                    .with_label_values(&["request", "unknown_run"])
                    .inc();
            }
            e.to_string()
        })?;
        let local = &served.local;
        let payload = &message.payload;
        match &served.driver {
            Driver::Suite(driver) => return driver.answer(role, local, payload).await,
            Driver::Sage(_) => {}
        }
        match role {
            Role::User => {
                reply_json(payload, |r: UserRequest| async move {
                    Transport::user(local, r).await.map(|r: UserReply| r)
                })
                .await
            }
            Role::Service => {
                reply_json(payload, |r: ServiceRequest| async move {
                    Transport::service(local, r).await.map(|r: ServiceReply| r)
                })
                .await
            }
            Role::Judge => {
                reply_json(payload, |r: JudgeRequest| async move {
                    Transport::judge(local, r).await.map(|r: JudgeReply| r)
                })
                .await
            }
            Role::Rule => {
                reply_json(payload, |r: RuleRequest| async move {
                    Transport::rule(local, r).await.map(|r: RuleReply| r)
                })
                .await
            }
            Role::Dialogue => Err("the dialogue role takes jobs, not requests".to_string()),
        }
    }
    .instrument(span)
    .await;
    let sent = match result {
        Ok(bytes) => client.publish(reply_to, bytes).await,
        Err(error) => {
            tracing::warn!(role = role.as_str(), %error, "role request failed");
            let mut headers = HeaderMap::new();
            headers.insert(ERROR_HEADER, header_value(&error));
            client
                .publish_with_headers(reply_to, headers, Bytes::new())
                .await
        }
    };
    if let Err(e) = sent {
        tracing::warn!(role = role.as_str(), error = %e, "cannot send a role reply");
    }
}

/// A transport that remembers whether any request failed (the dialogue then did not see the
/// roles it should have, and is played again rather than stored).
struct Tripwire {
    inner: Arc<dyn Transport>,
    tripped: AtomicBool,
}

impl Tripwire {
    /// Passes a request on, and remembers whether it failed. Once tripped, the dialogue will be
    /// played again: the rest of it fails at once instead of waiting out every request's
    /// retries and paying for model calls thrown away.
    async fn guard<T>(
        &self,
        role: &'static str,
        request: impl Future<Output = Result<T, TransportError>>,
    ) -> Result<T, TransportError> {
        if self.tripped.load(Ordering::Relaxed) {
            return Err(TransportError::Unavailable {
                role,
                message: "an earlier request of this dialogue failed".into(),
            });
        }
        let result = request.await;
        if result.is_err() {
            self.tripped.store(true, Ordering::Relaxed);
        }
        result
    }
}

#[async_trait::async_trait]
impl Transport for Tripwire {
    async fn user(&self, request: UserRequest) -> Result<UserReply, TransportError> {
        self.guard("user", self.inner.user(request)).await
    }
    async fn service(&self, request: ServiceRequest) -> Result<ServiceReply, TransportError> {
        self.guard("service", self.inner.service(request)).await
    }
    async fn judge(&self, request: JudgeRequest) -> Result<JudgeReply, TransportError> {
        self.guard("judge", self.inner.judge(request)).await
    }
    async fn rule(&self, request: RuleRequest) -> Result<RuleReply, TransportError> {
        self.guard("rule", self.inner.rule(request)).await
    }
    async fn desk_agent(
        &self,
        request: DeskAgentRequest,
    ) -> Result<DeskAgentReply, TransportError> {
        self.guard("service", self.inner.desk_agent(request)).await
    }
    async fn desk_customer(
        &self,
        request: DeskCustomerRequest,
    ) -> Result<DeskCustomerReply, TransportError> {
        self.guard("user", self.inner.desk_customer(request)).await
    }
    async fn desk_judge(
        &self,
        request: DeskJudgeRequest,
    ) -> Result<DeskJudgeReply, TransportError> {
        self.guard("judge", self.inner.desk_judge(request)).await
    }
    async fn call(
        &self,
        request: sage_core::protocol::call::ModelCallRequest,
    ) -> Result<sage_core::protocol::call::ModelCallReply, TransportError> {
        self.guard(request.role.role().as_str(), self.inner.call(request))
            .await
    }
}

/// Pulls jobs while there is room and `stop` is false; then waits for the dialogues in flight
/// (up to the grace period) and hands back the rest.
async fn pull_jobs(
    broker: &Broker,
    consumer: jetstream::consumer::PullConsumer,
    runs: Arc<Runs>,
    options: &WorkerOptions,
    mut stop: watch::Receiver<bool>,
) -> WorkerReport {
    // The consumer's ack wait rules (the first process created it); progress goes by it.
    let mut consumer = consumer;
    let ack_wait =
        match sage_ports::transport::nats::bounded("reading the jobs consumer", consumer.info())
            .await
        {
            Ok(info) => info.config.ack_wait,
            Err(_) => broker.settings.ack_wait,
        };
    if ack_wait != broker.settings.ack_wait {
        tracing::warn!(
            consumer = ?ack_wait,
            configured = ?broker.settings.ack_wait,
            "the jobs consumer exists with another ack wait; using the consumer's"
        );
    }
    let slots = Arc::new(Semaphore::new(options.concurrency.max(1)));
    metrics().pulling(options.concurrency.max(1));
    let (release_tx, release) = watch::channel(false);
    let stored = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let released = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let parts = Arc::new(std::sync::Mutex::new(Parts::new(options.concurrency)));
    let mut backoff = DEFER_BACKOFF;
    'pull: while !*stop.borrow() {
        let first = tokio::select! {
            p = slots.clone().acquire_owned() => p,
            _ = stop.wait_for(|s| *s) => break,
        };
        let Ok(first) = first else { break };
        let want = slots.available_permits() + 1;
        let batch = sage_ports::transport::nats::bounded(
            "pulling jobs",
            consumer
                .batch()
                .max_messages(want)
                .expires(Duration::from_secs(2))
                .messages(),
        )
        .await;
        let mut batch = match batch {
            Ok(b) => {
                metrics().job_pulls.inc();
                b
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot pull jobs; retrying");
                drop(first);
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {},
                    _ = stop.wait_for(|s| *s) => {},
                }
                continue;
            }
        };
        let mut first = Some(first);
        let (mut started, mut deferred) = (0u32, 0u32);
        loop {
            let next = tokio::select! {
                // A pull ends when the server says so (2 s); a server that went quiet ends it too.
                m = tokio::time::timeout(Duration::from_secs(2) + sage_ports::transport::nats::BROKER_WAIT, batch.next()) => Some(m.unwrap_or(None)),
                _ = stop.wait_for(|s| *s) => None,
            };
            let Some(next) = next else {
                // Hand back what this pull request still delivers.
                while let Ok(Some(m)) =
                    tokio::time::timeout(Duration::from_millis(2500), batch.next()).await
                {
                    if let Ok(m) = m {
                        let _ = m.ack_with(AckKind::Nak(None)).await;
                        metrics()
                            .jobs_released
                            .with_label_values(&["shutdown"])
                            .inc();
                    }
                }
                break 'pull;
            };
            let Some(message) = next else { break };
            let message = match message {
                Ok(m) => m,
                Err(e) => {
                    tracing::debug!(error = %e, "pull status");
                    continue;
                }
            };
            let permit = match first.take() {
                Some(p) => p,
                None => match slots.clone().acquire_owned().await {
                    Ok(p) => p,
                    Err(_) => break 'pull,
                },
            };
            // A job of a model at its part of the slots waits at the end of the queue, unless
            // it was delivered before (it has waited already; its delivery count must stay),
            // or cannot be queued again (it is played now rather).
            // Read once here; `play` takes it (and drops the job when it could not be read).
            let head = JobHead::read(&message.subject, &message.payload);
            let lane = head.as_ref().ok().and_then(JobHead::lane);
            if let (Ok(head), Some(lane)) = (&head, &lane) {
                let deferrable = message.info().map_or(true, |i| i.delivered <= 1);
                let admitted = lock(&parts).admit(lane, std::time::Instant::now(), deferrable);
                if !admitted {
                    if defer(broker, &message, head).await {
                        deferred += 1;
                        continue;
                    }
                    lock(&parts).admit(lane, std::time::Instant::now(), false);
                }
            }
            started += 1;
            let job = Job {
                broker: broker.clone(),
                runs: runs.clone(),
                ack_wait,
                max_deliveries: options.max_deliveries,
                release: release.clone(),
                stored: stored.clone(),
                released: released.clone(),
            };
            let parts = parts.clone();
            tokio::spawn(async move {
                job.play(message, head).await;
                if let Some(lane) = lane {
                    lock(&parts).done(&lane);
                }
                drop(permit);
            });
        }
        // Every job of the batch deferred: the models with jobs queued hold their parts. Pull
        // again a little later (longer each time), not in a loop that only requeues jobs.
        if deferred > 0 && started == 0 {
            tokio::select! {
                _ = tokio::time::sleep(backoff) => {},
                _ = stop.wait_for(|s| *s) => {},
            }
            backoff = (backoff * 2).min(DEFER_BACKOFF_MAX);
        } else {
            backoff = DEFER_BACKOFF;
        }
    }
    // Shutdown: let the dialogues in flight finish, then hand back the rest.
    let all = options.concurrency.max(1) as u32;
    let finished = tokio::time::timeout(options.grace, slots.acquire_many(all)).await;
    if finished.is_err() {
        tracing::info!("grace period over: handing back the dialogues in flight");
        let _ = release_tx.send(true);
        let _ = tokio::time::timeout(Duration::from_secs(10), slots.acquire_many(all)).await;
    }
    WorkerReport {
        stored: stored.load(Ordering::Relaxed),
        released: released.load(Ordering::Relaxed),
        redelivered: metrics()
            .redeliveries
            .with_label_values(&["dialogue"])
            .get(),
    }
}

/// The first pause after a batch whose every job was deferred; it doubles up to
/// [`DEFER_BACKOFF_MAX`] while whole batches are.
const DEFER_BACKOFF: Duration = Duration::from_millis(250);
/// The longest pause between batches whose every job was deferred.
const DEFER_BACKOFF_MAX: Duration = Duration::from_secs(4);

fn lock(parts: &std::sync::Mutex<Parts>) -> std::sync::MutexGuard<'_, Parts> {
    parts.lock().unwrap_or_else(|p| p.into_inner())
}

/// Queues a delivered job again at the end of its run's subject (same payload and headers, a
/// new message id) and acks the delivery; false, with the delivery untouched, when the job
/// could not be queued again. Not a Nak: that would count toward `max_deliveries` and keep the
/// job at the head of the queue. An ack lost after the new copy is queued plays the job twice;
/// the aggregator keeps one record.
async fn defer(broker: &Broker, message: &jetstream::Message, head: &JobHead) -> bool {
    static DEFERRALS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let unique = format!(
        "{:x}-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
        DEFERRALS.fetch_add(1, Ordering::Relaxed)
    );
    let mut headers = message.headers.clone().unwrap_or_default();
    let id = format!("{}/{}/deferred-{unique}", head.run_id, head.dialogue_id);
    headers.insert("Nats-Msg-Id", header_value(&id));
    let queued = super::queue::publish_acked(
        broker.js.clone(),
        message.subject.to_string(),
        headers,
        message.payload.clone(),
    )
    .await;
    if let Err(e) = queued {
        tracing::debug!(error = %e, "cannot defer a job; playing it now");
        return false;
    }
    if let Err(e) = message.double_ack().await {
        tracing::debug!(error = %e, "deferred job's ack not confirmed; it may be played twice");
    }
    metrics().jobs_deferred.inc();
    true
}

/// One delivered job and what playing it needs.
struct Job {
    broker: Broker,
    runs: Arc<Runs>,
    ack_wait: Duration,
    max_deliveries: i64,
    release: watch::Receiver<bool>,
    stored: Arc<std::sync::atomic::AtomicU64>,
    released: Arc<std::sync::atomic::AtomicU64>,
}

impl Job {
    async fn hand_back(&self, message: &jetstream::Message, reason: &str, delay: Option<Duration>) {
        if let Err(e) = message.ack_with(AckKind::Nak(delay)).await {
            tracing::debug!(error = %e, "nak failed; the job comes back after ack_wait");
        }
        metrics().jobs_released.with_label_values(&[reason]).inc();
        self.released.fetch_add(1, Ordering::Relaxed);
    }

    /// Plays a delivered job, `head` being what [`JobHead::read`] made of it.
    async fn play(mut self, message: jetstream::Message, head: Result<JobHead, String>) {
        let delivered = super::deliveries(&message, "dialogue");
        let job = match head {
            Ok(job) => job,
            Err(e) => {
                // Shown cut short: a hostile job may be megabytes of one line.
                let error: String = e.chars().take(300).collect();
                tracing::error!(subject = %message.subject.chars().take(200).collect::<String>(), %error, "invalid job dropped");
                metrics()
                    .messages_rejected
                    .with_label_values(&["job", "invalid"])
                    .inc();
                let _ = message.ack_with(AckKind::Term).await;
                return;
            }
        };
        let served = match self.runs.get(&job.run_id).await {
            Ok(s) => s,
            // The manifest is missing or unreadable by this version: no worker will ever play
            // the job, so stop redelivering it. (A run this worker cannot set up, say for a
            // missing API key, is handed back: another worker, or this one once fixed, may
            // play it.)
            Err(e)
                if e.is_permanent()
                    && super::give_up_after(&message, delivered, self.max_deliveries).await =>
            {
                tracing::error!(run = %job.run_id, delivered, error = %e, "cannot serve the run; job dropped");
                metrics()
                    .messages_rejected
                    .with_label_values(&["job", "unknown_run"])
                    .inc();
                return;
            }
            Err(e) => {
                tracing::warn!(run = %job.run_id, error = %e, "cannot serve the run yet");
                self.hand_back(&message, "transport_error", Some(Duration::from_secs(5)))
                    .await;
                return;
            }
        };
        if let Some(watch) = &served.budget {
            let resume = header(message.headers.as_ref(), super::RESUME_HEADER)
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            let model = job.service_model.as_deref();
            match watch.admit(&self.broker, model, resume).await {
                Ok(super::Admit::Play) => {}
                Ok(super::Admit::Drop) => {
                    // Not played (a cost budget reached, or the run cancelled): a resume
                    // queues it again (a Nak would bring it back for ever).
                    tracing::debug!(dialogue = %job.dialogue_id, "run stopped; job not started");
                    let _ = message.ack_with(AckKind::Term).await;
                    return;
                }
                Ok(super::Admit::Wait) => {
                    // Paused: back to the queue, to be asked again in a moment.
                    self.hand_back(&message, "paused", Some(Duration::from_secs(1)))
                        .await;
                    return;
                }
                Err(e) => {
                    tracing::warn!(run = %job.run_id, error = %e, "cannot read the run's status yet");
                    self.hand_back(&message, "transport_error", Some(Duration::from_secs(5)))
                        .await;
                    return;
                }
            }
        }
        // Progress signals keep the job ours while it plays and while its record is stored.
        let ticker = {
            let message = message.clone();
            let every = (self.ack_wait / 3).max(Duration::from_millis(100));
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(every).await;
                    let _ = message.ack_with(AckKind::Progress).await;
                }
            })
        };
        let _ticker = AbortOnDrop(ticker);
        let tripwire = Arc::new(Tripwire {
            inner: served.transport.clone(),
            tripped: AtomicBool::new(false),
        });
        let JobHead {
            run_id,
            dialogue_id,
            ..
        } = job;
        let through: Arc<dyn Transport> = tripwire.clone();
        let played = match play(&served, &message.payload, through) {
            Ok(played) => played,
            Err(e) => {
                tracing::error!(dialogue = %dialogue_id, error = %e, "job cannot be played; dropped");
                let _ = message.ack_with(AckKind::Term).await;
                return;
            }
        };
        let mut release = self.release.clone();
        let record = tokio::select! {
            r = played => Some(r),
            _ = release.wait_for(|r| *r) => None,
        };
        let Some(record) = record else {
            self.hand_back(&message, "shutdown", None).await;
            return;
        };
        let record = match record {
            Ok(Ok(record)) => record,
            Ok(Err(e)) => {
                tracing::error!(dialogue = %dialogue_id, error = %e, "job cannot be played; dropped");
                let _ = message.ack_with(AckKind::Term).await;
                return;
            }
            Err(_) => {
                self.hand_back(&message, "transport_error", None).await;
                return;
            }
        };
        if tripwire.tripped.load(Ordering::Relaxed) && delivered < self.max_deliveries {
            tracing::warn!(dialogue = %dialogue_id, delivered, "a role was unreachable; the dialogue will be played again");
            self.hand_back(&message, "transport_error", Some(Duration::from_secs(2)))
                .await;
            return;
        }
        // Store the record, then ack the job: a crash in between plays it again, and the
        // second record is dropped (by the stream's duplicate window or the aggregator).
        let id = format!("{run_id}/{dialogue_id}");
        let mut delay = Duration::from_millis(100);
        loop {
            let mut headers = HeaderMap::new();
            sage_ports::transport::nats::inject_trace(&mut headers);
            match self
                .broker
                .publish_json(records_subject(&run_id), &id, Some(headers), &record)
                .await
            {
                Ok(()) => break,
                Err(e @ NatsError::TooLarge { .. }) => {
                    // Retrying cannot help until the server's limit is raised: try again a
                    // minute later, and after the last delivery stop replaying (and paying for)
                    // the dialogue.
                    tracing::error!(dialogue = %dialogue_id, delivered, error = %e, "cannot store the record");
                    if super::give_up_after(&message, delivered, self.max_deliveries).await {
                        metrics()
                            .jobs_released
                            .with_label_values(&["transport_error"])
                            .inc();
                    } else {
                        self.hand_back(&message, "transport_error", Some(Duration::from_secs(60)))
                            .await;
                    }
                    return;
                }
                Err(e) => {
                    tracing::warn!(dialogue = %dialogue_id, error = %e, "cannot store the record yet");
                    if *self.release.borrow_and_update() {
                        self.hand_back(&message, "shutdown", None).await;
                        return;
                    }
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
            }
        }
        self.stored.fetch_add(1, Ordering::Relaxed);
        for _ in 0..3 {
            match message.double_ack().await {
                Ok(()) => return,
                Err(e) => {
                    tracing::debug!(error = %e, "ack not confirmed; trying again");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }
}

/// What a worker reads of a job before it knows the run's suite.
#[derive(serde::Deserialize)]
struct JobHead {
    #[serde(deserialize_with = "sage_core::protocol::id::run_id")]
    run_id: String,
    #[serde(deserialize_with = "sage_core::protocol::id::dialogue_id")]
    dialogue_id: String,
    /// The agent under test (a SAGE job), whose budget applies.
    #[serde(default)]
    service_model: Option<String>,
    /// The agent under test of a support-desk job.
    #[serde(default)]
    model: Option<String>,
}

impl JobHead {
    /// The job's lane among a worker's slots: its model under test, within its run.
    fn lane(&self) -> Option<String> {
        let model = self.service_model.as_ref().or(self.model.as_ref())?;
        Some(format!("{}/{model}", self.run_id))
    }

    /// Reads a job's ids and checks that it was queued on its run's subject.
    fn read(subject: &str, payload: &[u8]) -> Result<JobHead, String> {
        let head: JobHead =
            serde_json::from_slice(payload).map_err(|e| format!("undecodable job: {e}"))?;
        if subject != sage_ports::transport::nats::jobs_subject(&head.run_id) {
            return Err(format!(
                "a job of run `{}` queued on another run's subject",
                head.run_id
            ));
        }
        Ok(head)
    }
}

/// A finished job's record.
#[derive(Serialize)]
#[serde(untagged)]
enum Played {
    Dialogue(Box<sage_core::protocol::DialogueRecord>),
    /// A record of a suite on the one lifecycle, as its driver wrote it.
    Suite(Box<serde_json::value::RawValue>),
}

/// The record a played job will give: the outer error when the driver went away (the job is
/// handed back), the inner one when the job cannot be played (it is dropped).
type Playing = std::pin::Pin<
    Box<dyn Future<Output = Result<Result<Played, String>, actix::MailboxError>> + Send>,
>;

/// Refuses a job that is not exactly one of its run's planned jobs (a forged job of a known
/// run): counted as a foreign job, and no call made for it.
fn planned(
    run: &ServedRun,
    dialogue_id: &str,
    job: &dyn super::hosted::erased::Fingerprint,
) -> Result<(), String> {
    let Some(jobs) = &run.jobs else {
        return Ok(());
    };
    job.check_in(jobs, dialogue_id).map_err(|foreign| {
        metrics()
            .messages_rejected
            .with_label_values(&["job", "foreign"])
            .inc();
        format!("not a job of its run's plan: {foreign}")
    })
}

/// Decodes a job for the run's driver and has it play the job through `through` (a job not
/// of the run's plan is refused first, [`planned`]).
fn play(run: &ServedRun, payload: &[u8], through: Arc<dyn Transport>) -> Result<Playing, String> {
    use futures::FutureExt;
    let undecodable = |e: serde_json::Error| format!("undecodable job: {e}");
    Ok(match &run.driver {
        Driver::Sage(driver) => {
            let job: DialogueJob = serde_json::from_slice(payload).map_err(undecodable)?;
            planned(run, &job.dialogue_id, &job)?;
            let sent = driver.send(RunDialogue {
                through: Some(through),
                ..RunDialogue::new(job)
            });
            sent.map(|r| r.map(|record| Ok(Played::Dialogue(Box::new(record)))))
                .boxed()
        }
        Driver::Suite(driver) => {
            let playing = driver.play(payload, &|id, job| planned(run, id, job), through)?;
            playing.map(|r| Ok(r.map(Played::Suite))).boxed()
        }
    })
}
