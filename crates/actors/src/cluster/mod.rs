//! The distributed mode: the same actors, reached over NATS JetStream.
//!
//! - [`submit`]: `sage sweep` puts a run's manifest (configuration and scenario texts) in the
//!   `sage_runs` bucket and its dialogue jobs in the jobs work queue; `sage status` reads the
//!   bucket.
//! - [`worker`]: `sage worker` serves roles: it pulls jobs and drives dialogues (the dialogue
//!   role), and answers role requests on queue groups with the local role actors.
//! - [`collector`]: `sage aggregator` consumes dialogue records into results folders, one
//!   completed attempt per dialogue id, and writes the summary when a run is complete.
//!
//! A process learns a run from the bucket the first time it sees the run's id ([`Runs`]), so
//! workers need no configuration of their own beyond the API keys the run's models name.

pub mod collector;
pub mod hosted;
pub mod limits;
mod queue;
pub mod submit;
pub mod suites;
pub mod worker;

use super::roles::Registry;
use super::runner::{RunError, endpoints};
use super::{DialogueActor, start_local_roles};
use actix::Addr;
use async_nats::jetstream::kv;
use sage_core::plan::{JobSet, RunConfig};
use sage_core::sop::{self, Sop};
use sage_ports::store::Manifest;
use sage_ports::telemetry::metrics::RunLabels;
use sage_ports::transport::local::LocalTransport;
use sage_ports::transport::nats::{Broker, NatsError, NatsTransport, RequestPolicy, bounded};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// What the runs bucket holds for a run under `manifest.<run>`: everything a process needs to
/// serve it, for either suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "suite", rename_all = "kebab-case")]
// One value per run, read from the bucket once: its size does not matter.
#[allow(clippy::large_enum_variant)]
pub enum RunSpec {
    /// A SAGE run (SOP scenarios).
    Sage {
        /// The manifest (configuration, versions, seed, job count).
        manifest: Manifest,
        /// Each scenario's name and YAML text, in the configuration's order.
        scenarios: Vec<(String, String)>,
    },
    /// A run of a suite on the one lifecycle ([`hosted`]); its spec is written and read
    /// through [`RunSpec::to_json`] and [`RunSpec::from_value`].
    #[serde(skip)]
    Suite(hosted::Hosted),
}

impl RunSpec {
    /// The run id.
    pub fn run_id(&self) -> &str {
        match self {
            RunSpec::Sage { manifest, .. } => &manifest.run_id,
            RunSpec::Suite(run) => run.0.run_id(),
        }
    }

    /// When it was submitted.
    pub fn created_at(&self) -> &str {
        match self {
            RunSpec::Sage { manifest, .. } => &manifest.created_at,
            RunSpec::Suite(run) => run.0.created_at(),
        }
    }

    /// Jobs in the run.
    pub fn jobs(&self) -> usize {
        match self {
            RunSpec::Sage { manifest, .. } => manifest.jobs,
            RunSpec::Suite(run) => run.0.jobs(),
        }
    }

    /// The suite's name (`sage run --suite NAME`).
    pub fn suite(&self) -> &'static str {
        match self {
            RunSpec::Sage { .. } => "sage",
            RunSpec::Suite(run) => run.0.suite(),
        }
    }

    /// The spec of `run` from the runs bucket. A spec written before runs had a suite (no
    /// `suite` key) is a SAGE run.
    pub async fn get(bucket: &kv::Store, run: &str) -> Result<RunSpec, ClusterError> {
        let key = manifest_key(run);
        let value: serde_json::Value = get_json(bucket, &key)
            .await?
            .ok_or_else(|| ClusterError::UnknownRun(run.to_string()))?;
        Ok(RunSpec::from_value(value).map_err(|e| NatsError::Codec {
            what: key,
            message: e.to_string(),
        })?)
    }

    /// The run's scenarios, compiled, in the configuration's order (a SAGE run; none for a run
    /// of a suite on the trait).
    pub fn sops(&self) -> Result<Vec<Arc<Sop>>, ClusterError> {
        let RunSpec::Sage { scenarios, .. } = self else {
            return Ok(Vec::new());
        };
        scenarios
            .iter()
            .map(|(name, text)| {
                sop::from_yaml(text, name)
                    .map(Arc::new)
                    .map_err(|e| ClusterError::Scenario {
                        run: self.run_id().to_string(),
                        message: e.to_string(),
                    })
            })
            .collect()
    }

    /// The run's jobs, planned again from its manifest as `sage sweep` planned them: the only
    /// records the run may hold. A count other than the manifest's means this version plans
    /// differently from the one that submitted the run.
    pub fn job_set(&self) -> Result<JobSet, ClusterError> {
        let jobs = match self {
            RunSpec::Sage { manifest, .. } => {
                let sops = self.sops()?;
                let plan = sage_core::plan::Plan::new(&manifest.config, &manifest.run_id, &sops);
                JobSet::of(plan.jobs(), |j| &j.dialogue_id)
            }
            RunSpec::Suite(run) => run.0.job_set()?,
        };
        if jobs.len() != self.jobs() {
            return Err(ClusterError::Invalid(format!(
                "run {}: this version plans {} jobs where the run was submitted with {}",
                self.run_id(),
                jobs.len(),
                self.jobs()
            )));
        }
        Ok(jobs)
    }

    /// Queues the run's jobs in the work queue, in the order the run plays them, but those
    /// `stored` holds; `resume`: the resume's number they are marked with. Returns how many.
    pub(crate) async fn queue_jobs(
        &self,
        broker: &Broker,
        stored: Option<&JobSet>,
        resume: Option<u32>,
    ) -> Result<usize, ClusterError> {
        let (run, todo) = (self.run_id(), |id: &str| {
            stored.is_none_or(|s| !s.is_done(id))
        });
        match self {
            RunSpec::Sage { manifest, .. } => {
                let sops = self.sops()?;
                let plan = sage_core::plan::Plan::new(&manifest.config, run, &sops);
                let jobs = (plan.jobs_in_play_order()).filter(|j| todo(&j.dialogue_id));
                queue::publish_jobs(broker, run, jobs, |j| &j.dialogue_id, resume).await
            }
            RunSpec::Suite(hosted) => hosted.0.queue_jobs(broker, &todo, resume).await,
        }
    }

    /// A spec from its JSON; without a `suite` key (written before runs had one), a SAGE run.
    pub fn from_value(mut value: serde_json::Value) -> Result<RunSpec, serde_json::Error> {
        if let Some(object) = value.as_object_mut() {
            object.entry("suite").or_insert_with(|| "sage".into());
        }
        let load = (value["suite"].as_str()).and_then(suites::loader);
        match load {
            Some(load) => load(value).map(RunSpec::Suite),
            None => serde_json::from_value(value),
        }
    }

    /// The spec as the runs bucket holds it ([`RunSpec::from_value`] reads it back).
    pub fn to_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        match self {
            RunSpec::Suite(run) => run.0.to_json(),
            _ => serde_json::to_vec(self),
        }
    }

    /// [`RunSpec::to_json`] as the bucket's value, a failure naming its key.
    pub(crate) fn encoded(&self) -> Result<bytes::Bytes, NatsError> {
        self.to_json()
            .map(Into::into)
            .map_err(|e| NatsError::Codec {
                what: manifest_key(self.run_id()),
                message: e.to_string(),
            })
    }

    /// The records file of its results folder.
    pub fn records_file(&self) -> &'static str {
        match self {
            RunSpec::Sage { .. } => "dialogues.jsonl",
            RunSpec::Suite(run) => run.0.records_file(),
        }
    }
}

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunState {
    /// Jobs queued, no record stored yet.
    Submitted,
    /// Records arriving.
    Running,
    /// Every dialogue stored; the summary is written.
    Complete,
    /// Cancelled (`sage sweep --cancel`): nothing more started, the dialogues in flight then
    /// stored, the summary written; `sage sweep --resume` plays the rest.
    Cancelled,
}

impl RunState {
    /// Whether the run is over: complete (or stopped by its budgets), or cancelled.
    pub fn over(self) -> bool {
        matches!(self, RunState::Complete | RunState::Cancelled)
    }
}

/// What an operator asked of a run (`sage sweep --pause|--cancel`; `--unpause` clears it),
/// carried to the aggregator on the run's records subject and to the workers in its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Control {
    /// No dialogue of the run starts: its jobs wait in the queue.
    Paused,
    /// No dialogue of the run starts ever again: its jobs are dropped (a resume queues them
    /// again); those in flight finish and are stored.
    Cancelled,
}

/// `sage sweep --pause|--unpause|--cancel RUN`'s request to the aggregator (`None`: unpause).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControlRequest {
    /// The run.
    #[serde(deserialize_with = "sage_core::protocol::id::run_id")]
    pub run_id: String,
    /// What is asked.
    pub control: Option<Control>,
}

/// Whether a worker starts a job of a run now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Play it.
    Play,
    /// Drop it unplayed (a cost budget reached, or the run cancelled): a resume queues it again.
    Drop,
    /// Hand it back to the queue for later (the run paused).
    Wait,
}

/// A run's progress under `status.<run>` (written by `sweep`, then by the aggregator).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStatus {
    /// The run.
    #[serde(deserialize_with = "sage_core::protocol::id::run_id")]
    pub run_id: String,
    /// Where it is.
    pub state: RunState,
    /// Dialogue jobs in the run.
    pub jobs: usize,
    /// Dialogues stored.
    pub stored: usize,
    /// Turns stored.
    pub turns: usize,
    /// Dialogues an infrastructure error touched
    /// ([`sage_core::protocol::DialogueRecord::had_infra_error`]; for a suite on the trait,
    /// as its `tally` says).
    pub infra_errors: usize,
    /// When it was submitted (UTC, RFC 3339).
    pub submitted_at: String,
    /// Last update (UTC, RFC 3339).
    pub updated_at: String,
    /// The leaderboard, once complete.
    #[serde(default)]
    pub leaderboard: Option<String>,
    /// The results folder on the aggregator, once known.
    #[serde(default)]
    pub results: Option<String>,
    /// The HTML report on the aggregator (report.html in the results folder), once written.
    #[serde(default)]
    pub report: Option<String>,
    /// A run with a cost budget: what its stored dialogues cost against it (the summary's
    /// `budget`), as the aggregator last folded them. Workers start no dialogue of a model
    /// whose budget (or the run's) is reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<sage_core::scoring::budget::BudgetSummary>,
    /// How many times the run was resumed (`sage sweep --resume`); the jobs a resume queues
    /// carry its number in [`RESUME_HEADER`].
    #[serde(default)]
    pub resumes: u32,
    /// Once complete: what the run could not measure (a model under test that never answered,
    /// judges that never gave a verdict; [`sage_ports::store::report::Reported::unmeasured`]).
    /// `sage sweep --follow` prints them and exits 1, as `sage run` does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unmeasured: Vec<String>,
    /// While a SAGE run plays: each model's OA so far with its 95% interval, from the
    /// aggregator's fold of the records stored (the fold the final summary comes from),
    /// refreshed every few seconds; best first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<LiveModel>,
    /// What the stored dialogues cost, US dollars (every call in them).
    #[serde(default)]
    pub cost_usd: f64,
    /// What an operator asked of the run (`paused`, `cancelled`), if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<Control>,
    /// Seconds left at the rate dialogues were stored since this aggregator took the run
    /// (`None` before two were, or once it has ended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eta_secs: Option<f64>,
    /// An adaptive run (`sage sweep --adaptive`): each model's standing against the top K, as
    /// the aggregator last folded the records (a decision is written at once). Workers start
    /// no dialogue of a decided model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<sage_core::scoring::adaptive::AdaptiveSummary>,
}

/// One model's standing while its run plays (a run status's `models`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveModel {
    /// The model under test.
    pub model: String,
    /// Its dialogues stored.
    pub dialogues: usize,
    /// Its OA so far with the 95% bootstrap interval and the turns behind it (`None` before
    /// a scored turn).
    pub oa: Option<sage_core::scoring::stats::Metric>,
}

impl LiveModel {
    /// The standings in `summary`, best OA first (ties by name).
    pub fn of(summary: &sage_core::scoring::Summary) -> Vec<LiveModel> {
        sage_core::scoring::leaderboard::ranked(summary)
            .into_iter()
            .map(|m| LiveModel {
                model: m.model.clone(),
                dialogues: m.dialogues,
                // Finite numbers only: JSON has no NaN (it would write null, and a status that
                // does not read back would hide a pause or a cancel from the workers).
                oa: m
                    .all
                    .overall
                    .filter(|o| [o.mean, o.ci_low, o.ci_high].iter().all(|x| x.is_finite())),
            })
            .collect()
    }
}

impl RunStatus {
    /// The status of a run just submitted: `jobs` queued, nothing stored.
    pub fn submitted(run_id: &str, jobs: usize, submitted_at: &str) -> RunStatus {
        RunStatus {
            run_id: run_id.to_string(),
            state: RunState::Submitted,
            jobs,
            stored: 0,
            turns: 0,
            infra_errors: 0,
            submitted_at: submitted_at.to_string(),
            updated_at: sage_ports::store::now_utc().0,
            leaderboard: None,
            results: None,
            report: None,
            budget: None,
            resumes: 0,
            unmeasured: Vec::new(),
            models: Vec::new(),
            cost_usd: 0.0,
            eta_secs: None,
            control: None,
            adaptive: None,
        }
    }

    /// Whether a new dialogue with `model` as the agent under test may start: neither the
    /// run's budget nor the model's is reached, and in an adaptive run the model is not
    /// decided.
    pub fn admits(&self, model: &str) -> bool {
        self.budget
            .as_ref()
            .is_none_or(|b| !b.reached && !b.models.get(model).is_some_and(|m| m.reached))
            && self.adaptive.as_ref().is_none_or(|a| a.admits(model))
    }

    /// What a worker does with a job of `model` now: the run cancelled or its budget reached,
    /// drop it; paused, hand it back; else play it.
    pub fn admit(&self, model: Option<&str>) -> Admit {
        match self.control {
            Some(Control::Cancelled) => Admit::Drop,
            Some(Control::Paused) => Admit::Wait,
            None if model.is_some_and(|m| !self.admits(m)) => Admit::Drop,
            None => Admit::Play,
        }
    }

    /// Whether the run has ended: every dialogue stored, the budgets or an adaptive run's
    /// decisions keep every dialogue not stored from starting, or it was cancelled.
    pub fn ended(&self) -> bool {
        self.stored >= self.jobs || self.rest_kept() || self.control == Some(Control::Cancelled)
    }

    /// Whether some dialogues are not stored and none of them may start: each model with
    /// dialogues left is kept by a budget or decided (both may hold in one run).
    fn rest_kept(&self) -> bool {
        let left: Vec<&str> = match (&self.budget, &self.adaptive) {
            (Some(b), _) => (b.models.iter())
                .filter(|(_, m)| m.not_started > 0)
                .map(|(name, _)| name.as_str())
                .collect(),
            (None, Some(a)) => (a.models.iter())
                .filter(|s| s.not_played > 0)
                .map(|s| s.model.as_str())
                .collect(),
            (None, None) => return false,
        };
        !left.is_empty() && left.iter().all(|m| !self.admits(m))
    }
}

/// Header of a job queued by a resume (`sage sweep --resume`): the resume's number (see
/// [`RunStatus::resumes`]).
pub const RESUME_HEADER: &str = "Sage-Resume";

/// Header of a message on a run's records subject that is no record but a request to the
/// aggregator: `resume` (its payload a [`ResumeRequest`]).
pub const CONTROL_HEADER: &str = "Sage-Control";

/// `sage sweep --resume`'s request to the aggregator (on the run's records subject, so that it
/// is kept until an aggregator handles it): fold the run again with the budgets of its
/// manifest in the bucket, and queue its jobs not stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResumeRequest {
    /// The run.
    #[serde(deserialize_with = "sage_core::protocol::id::run_id")]
    pub run_id: String,
    /// The resume's number (the run's `resumes` + 1 when it was asked for).
    pub resume: u32,
}

/// What a worker knows of a run's status (its budgets, a pause or a cancel): the latest value of its `status.<run>`
/// key, kept by a watch on it (no bucket read per job).
pub struct BudgetWatch {
    run: String,
    latest: Arc<std::sync::RwLock<Option<(u64, RunStatus)>>>,
    /// Whether the watch is live (else each job reads the status from the bucket).
    watching: Arc<AtomicBool>,
    _task: AbortOnDrop,
}

impl BudgetWatch {
    /// Watches the status of `run` in the runs bucket (from the task's runtime).
    pub fn start(broker: Broker, run: &str) -> BudgetWatch {
        let latest: Arc<std::sync::RwLock<Option<(u64, RunStatus)>>> = Default::default();
        let watching = Arc::new(AtomicBool::new(false));
        let (key, into, live) = (status_key(run), latest.clone(), watching.clone());
        let task = tokio::spawn(async move {
            use futures::StreamExt;
            loop {
                let watch = async {
                    let bucket = broker.runs().await?;
                    bounded(format!("watching {key}"), bucket.watch_with_history(&key)).await
                };
                let mut entries = match watch.await {
                    Ok(w) => w,
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot watch the run status; retrying");
                        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                        continue;
                    }
                };
                live.store(true, Ordering::Relaxed);
                while let Some(Ok(entry)) = entries.next().await {
                    match serde_json::from_slice::<RunStatus>(&entry.value) {
                        Ok(status) => keep(&into, entry.revision, status),
                        Err(e) => {
                            tracing::warn!(key, error = %e, "an unreadable run status ignored")
                        }
                    }
                }
                live.store(false, Ordering::Relaxed);
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        });
        BudgetWatch {
            run: run.to_string(),
            latest,
            watching,
            _task: AbortOnDrop(task),
        }
    }

    /// What to do with a job of `model` queued by resume `resume` (0: by the submission).
    /// The status is read from the bucket when the watch is not live or has not yet seen that
    /// resume (or any value).
    pub async fn admit(
        &self,
        broker: &Broker,
        model: Option<&str>,
        resume: u32,
    ) -> Result<Admit, NatsError> {
        let seen = |latest: &Option<(u64, RunStatus)>| {
            latest
                .as_ref()
                .filter(|(_, s)| s.resumes >= resume)
                .map(|(_, s)| s.admit(model))
        };
        if self.watching.load(Ordering::Relaxed)
            && let Some(admits) = seen(&self.latest.read().unwrap_or_else(|e| e.into_inner()))
        {
            return Ok(admits);
        }
        let bucket = broker.runs().await?;
        let key = status_key(&self.run);
        let entry = bounded(format!("reading {key}"), bucket.entry(&key)).await?;
        if let Some(entry) = entry
            && let Ok(status) = serde_json::from_slice::<RunStatus>(&entry.value)
        {
            keep(&self.latest, entry.revision, status);
        }
        let latest = self.latest.read().unwrap_or_else(|e| e.into_inner());
        Ok(latest.as_ref().map_or(Admit::Play, |(_, s)| s.admit(model)))
    }
}

/// Keeps `status` of bucket revision `revision` unless a later one is kept.
fn keep(into: &std::sync::RwLock<Option<(u64, RunStatus)>>, revision: u64, status: RunStatus) {
    let mut latest = into.write().unwrap_or_else(|e| e.into_inner());
    if latest.as_ref().is_none_or(|(r, _)| *r < revision) {
        *latest = Some((revision, status));
    }
}

/// A background task, aborted when this is dropped.
pub struct AbortOnDrop(pub(crate) tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// How many times JetStream has delivered `message` (1 the first time); a redelivery is counted
/// in `sage_redeliveries_total{consumer}`.
pub(crate) fn deliveries(message: &async_nats::jetstream::Message, consumer: &str) -> i64 {
    let delivered = message.info().map(|i| i.delivered).unwrap_or(1);
    if delivered > 1 {
        sage_ports::telemetry::metrics()
            .redeliveries
            .with_label_values(&[consumer])
            .inc();
    }
    delivered
}

/// The one "gives up after N deliveries" path of jobs and records: a message that could not be
/// handled and may never be is dropped for good (acked with `Term`, so JetStream stops
/// delivering it) once it has been delivered `max_deliveries` times, and true is returned;
/// before that nothing is done and false is returned (the caller hands it back, to come again
/// after a delay).
pub(crate) async fn give_up_after(
    message: &async_nats::jetstream::Message,
    delivered: i64,
    max_deliveries: i64,
) -> bool {
    if delivered < max_deliveries {
        return false;
    }
    if let Err(e) = message.ack_with(async_nats::jetstream::AckKind::Term).await {
        tracing::debug!(error = %e, "term ack lost; the message comes back and is given up again");
    }
    true
}

/// The bucket key of a run's manifest.
pub fn manifest_key(run: &str) -> String {
    format!("manifest.{run}")
}

/// The bucket key of a run's status.
pub fn status_key(run: &str) -> String {
    format!("status.{run}")
}

/// Reads a JSON value from the runs bucket.
pub async fn get_json<T: serde::de::DeserializeOwned>(
    bucket: &kv::Store,
    key: &str,
) -> Result<Option<T>, NatsError> {
    let Some(bytes) = bounded(format!("reading {key}"), bucket.get(key)).await? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| NatsError::Codec {
            what: key.to_string(),
            message: e.to_string(),
        })
}

/// Writes a JSON value to the runs bucket.
pub async fn put_json(
    bucket: &kv::Store,
    key: &str,
    value: &impl Serialize,
) -> Result<(), NatsError> {
    let bytes = serde_json::to_vec(value).map_err(|e| NatsError::Codec {
        what: key.to_string(),
        message: e.to_string(),
    })?;
    bounded(format!("writing {key}"), bucket.put(key, bytes.into())).await?;
    Ok(())
}

/// A run could not be served.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// NATS or JetStream failed.
    #[error(transparent)]
    Nats(#[from] NatsError),
    /// An id or a message that does not follow its syntax.
    #[error("{0}")]
    Invalid(String),
    /// The run is not in the bucket.
    #[error("run {0}: no manifest in the {bucket} bucket (submitted with `sage sweep`?)", bucket = sage_ports::transport::nats::RUNS_BUCKET)]
    UnknownRun(String),
    /// A scenario of the run does not load.
    #[error("run {run}: {message}")]
    Scenario {
        /// The run.
        run: String,
        /// The loader's message.
        message: String,
    },
    /// The run's models could not be set up, or an actor went away.
    #[error("run {run}: {error}")]
    Run {
        /// The run.
        run: String,
        /// Why.
        error: RunError,
    },
    /// The results could not be written.
    #[error(transparent)]
    Store(#[from] sage_ports::store::StoreError),
}

impl ClusterError {
    /// Whether trying again cannot help: the run is not in the bucket, or its spec or a
    /// scenario of it cannot be read by this version.
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            ClusterError::UnknownRun(_)
                | ClusterError::Invalid(_)
                | ClusterError::Scenario { .. }
                | ClusterError::Nats(NatsError::Codec { .. })
        )
    }
}

/// The driver that plays a run's jobs.
pub enum Driver {
    /// SAGE dialogues.
    Sage(Addr<DialogueActor>),
    /// The jobs of a suite on the one lifecycle.
    Suite(Arc<dyn hosted::HostedDriver>),
}

/// A run as a worker serves it: its scenarios and model endpoints, the role actors that
/// answer its requests, and the driver that plays its jobs (the roles served here
/// in-process, the others over NATS).
pub struct ServedRun {
    /// The role actors (reached in this process).
    pub local: LocalTransport,
    /// The driver of the run's suite.
    pub driver: Driver,
    /// How this run's dialogues reach the roles: in-process for the roles served here, over
    /// NATS for the others (for dialogues played through a per-dialogue wrapper).
    pub transport: Arc<dyn sage_ports::transport::Transport>,
    /// When it was last asked for (milliseconds since its `Runs` began).
    last_used: std::sync::atomic::AtomicU64,
    /// A run with a cost budget, on a worker that plays dialogues: its status, watched.
    pub budget: Option<BudgetWatch>,
    /// On a worker that plays dialogues: the run's jobs as its manifest plans them. A job is
    /// played only when it is one of them, exactly (a forged job of a known run, say with
    /// another model or a billion turns, is refused before any call).
    pub jobs: Option<JobSet>,
}

/// The roles a worker serves, and for the service role which models (all when empty).
#[derive(Debug, Clone, Default)]
pub struct Served {
    /// The roles.
    pub roles: std::collections::BTreeSet<sage_core::protocol::Role>,
    /// The models under test served (all when empty).
    pub models: Vec<String>,
    /// Ask every role through the broker, even the ones served in this process (by default
    /// this process's dialogues use its own role actors for the roles it serves).
    pub remote_roles: bool,
}

impl Served {
    /// The roles this process's dialogues ask in-process.
    pub fn local_roles(&self) -> sage_ports::transport::LocalRoles {
        use sage_core::protocol::Role;
        if self.remote_roles {
            return Default::default();
        }
        sage_ports::transport::LocalRoles {
            user: self.roles.contains(&Role::User),
            service: self
                .roles
                .contains(&Role::Service)
                .then(|| self.models.clone()),
            judge: self.roles.contains(&Role::Judge),
            rule: self.roles.contains(&Role::Rule),
        }
    }

    /// Whether this worker calls `model` for some role of a run of `config` (only those
    /// endpoints are built, so a worker needs only its own models' API keys).
    pub fn calls(&self, config: &RunConfig, model: &str) -> bool {
        self.calls_in(
            model,
            config.customers(),
            &config.judge_models,
            &config.service_models,
        )
    }

    /// Whether this worker calls `model` for some role, the run's models of each role given.
    pub fn calls_in(
        &self,
        model: &str,
        customers: &[String],
        judges: &[String],
        services: &[String],
    ) -> bool {
        use sage_core::protocol::Role;
        (self.roles.contains(&Role::User) && customers.iter().any(|m| m == model))
            || (self.roles.contains(&Role::Judge) && judges.iter().any(|m| m == model))
            || (self.roles.contains(&Role::Service)
                && services.iter().any(|m| m == model)
                && (self.models.is_empty() || self.models.iter().any(|m| m == model)))
    }
}

/// The runs a process has seen, loaded from the bucket on first use.
pub struct Runs {
    served: Served,
    broker: Broker,
    policy: RequestPolicy,
    arbiters: [actix::ArbiterHandle; 2],
    /// Runs served so far (read on every request).
    served_runs: std::sync::RwLock<HashMap<String, Arc<ServedRun>>>,
    /// Held while a run is being loaded, so it is loaded once.
    loading: tokio::sync::Mutex<()>,
    /// The clock of `ServedRun::last_used`.
    began: std::time::Instant,
    /// Whether loading runs from the bucket works.
    loads: LoadHealth,
    /// The provider limits, one per limit group, shared by every run served (and, through the
    /// limits bucket, by every worker: [`limits`]).
    limiters: Arc<sage_ports::llm::Limiters>,
}

/// When loading a run last failed for a reason other than the run itself (the broker did not
/// answer), and when it last worked (milliseconds of a process clock, 0: never).
#[derive(Debug, Default)]
struct LoadHealth {
    failed_ms: std::sync::atomic::AtomicU64,
    worked_ms: std::sync::atomic::AtomicU64,
}

impl LoadHealth {
    /// How long a failure keeps the process unready (unless a load works since).
    const TROUBLE_FOR_MS: u64 = 60_000;

    fn record(&self, now_ms: u64, worked: bool) {
        let at = if worked {
            &self.worked_ms
        } else {
            &self.failed_ms
        };
        at.store(now_ms.max(1), Ordering::Relaxed);
    }

    fn troubled(&self, now_ms: u64) -> bool {
        let failed = self.failed_ms.load(Ordering::Relaxed);
        failed > self.worked_ms.load(Ordering::Relaxed)
            && now_ms.saturating_sub(failed) < Self::TROUBLE_FOR_MS
    }
}

impl Runs {
    /// Runs served with role actors on `arbiters` (two threads).
    pub fn new(
        served: Served,
        broker: Broker,
        policy: RequestPolicy,
        arbiters: [actix::ArbiterHandle; 2],
    ) -> Runs {
        Runs {
            served,
            broker,
            policy,
            arbiters,
            served_runs: Default::default(),
            loading: Default::default(),
            began: std::time::Instant::now(),
            loads: LoadHealth::default(),
            limiters: Arc::default(),
        }
    }

    /// The provider limits of every run served.
    pub fn limiters(&self) -> &Arc<sage_ports::llm::Limiters> {
        &self.limiters
    }

    /// Whether loading runs from the bucket failed lately for want of an answer from the broker
    /// (and has not worked since, for up to a minute): the process cannot take new runs, and
    /// its readiness says so.
    pub fn troubled(&self) -> bool {
        self.loads.troubled(self.now_ms())
    }

    fn now_ms(&self) -> u64 {
        self.began.elapsed().as_millis() as u64
    }

    /// Unloads the runs not asked for during `idle` that nothing in this process still uses
    /// (no dialogue of theirs in flight): their actors stop and their endpoints are dropped. A
    /// later job or request of such a run loads it again from the bucket. Returns their ids.
    pub fn unload_idle(&self, idle: std::time::Duration) -> Vec<String> {
        let now = self.now_ms();
        let idle = idle.as_millis() as u64;
        let mut runs = self.served_runs.write().unwrap_or_else(|e| e.into_inner());
        let gone: Vec<String> = runs
            .iter()
            .filter(|(_, run)| {
                Arc::strong_count(run) == 1
                    && now.saturating_sub(run.last_used.load(Ordering::Relaxed)) >= idle
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in &gone {
            runs.remove(id);
        }
        gone
    }

    /// The run `id`, loading it from the bucket the first time.
    pub async fn get(&self, id: &str) -> Result<Arc<ServedRun>, ClusterError> {
        let known = |runs: &Self| {
            let run = runs
                .served_runs
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .get(id)
                .cloned();
            if let Some(run) = &run {
                run.last_used.store(runs.now_ms(), Ordering::Relaxed);
            }
            run
        };
        if let Some(run) = known(self) {
            return Ok(run);
        }
        sage_core::protocol::id::check_run_id(id)
            .map_err(|e| ClusterError::Invalid(e.to_string()))?;
        // Bounded: a load holds the lock, and every broker call in it is bounded.
        let _loading = tokio::time::timeout(
            4 * sage_ports::transport::nats::BROKER_WAIT,
            self.loading.lock(),
        )
        .await
        .map_err(|_| {
            ClusterError::Nats(NatsError::Timeout {
                what: format!("loading run {id} (another run is still loading)"),
                after: 4 * sage_ports::transport::nats::BROKER_WAIT,
            })
        })?;
        if let Some(run) = known(self) {
            return Ok(run);
        }
        let spec = async { RunSpec::get(&self.broker.runs().await?, id).await }.await;
        let broker_failed =
            matches!(&spec, Err(ClusterError::Nats(e)) if !matches!(e, NatsError::Codec { .. }));
        self.loads.record(self.now_ms(), !broker_failed);
        let spec = spec?;
        if spec.run_id() != id {
            return Err(ClusterError::Invalid(format!(
                "the bucket's manifest.{id} is of run `{}`",
                spec.run_id()
            )));
        }
        let run = Arc::new(self.serve(id, spec)?);
        self.served_runs
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.to_string(), run.clone());
        Ok(run)
    }

    fn serve(&self, id: &str, spec: RunSpec) -> Result<ServedRun, ClusterError> {
        let failed = |error| ClusterError::Run {
            run: id.to_string(),
            error,
        };
        let sops = spec.sops()?;
        let jobs = (self
            .served
            .roles
            .contains(&sage_core::protocol::Role::Dialogue))
        .then(|| spec.job_set())
        .transpose()?;
        // Every run's status is watched where dialogues start: its budgets, a pause or a
        // cancel (either suite) stop them within a moment.
        let budget = (self
            .served
            .roles
            .contains(&sage_core::protocol::Role::Dialogue))
        .then(|| BudgetWatch::start(self.broker.clone(), id));
        let manifest = match spec {
            RunSpec::Sage { manifest, .. } => manifest,
            RunSpec::Suite(run) => {
                let run = run.0;
                let wanted = |m: &str| {
                    (self.served).calls_in(m, run.customers(), run.judges(), run.agents())
                };
                let (registry, driver) = run.serve(&wanted, &self.limiters).map_err(failed)?;
                if self
                    .served
                    .roles
                    .contains(&sage_core::protocol::Role::Dialogue)
                {
                    sage_ports::telemetry::metrics().driving(&RunLabels::Agents(run.agents()));
                }
                let (local, transport) = self.start_roles(id, registry);
                return Ok(ServedRun {
                    local,
                    driver: Driver::Suite(driver),
                    transport,
                    last_used: self.now_ms().into(),
                    budget,
                    jobs,
                });
            }
        };
        let config = manifest.config;
        let sops: HashMap<String, Arc<Sop>> = sops
            .into_iter()
            .map(|sop| (sop.scenario().id.clone(), sop))
            .collect();
        if self
            .served
            .roles
            .contains(&sage_core::protocol::Role::Dialogue)
        {
            sage_ports::telemetry::metrics().driving(&RunLabels::sage(&config, sops.keys()));
        }
        // Only the models this worker calls (those of the roles it serves).
        let endpoints = endpoints(
            &RunConfig {
                models: (config.models.iter())
                    .filter(|m| self.served.calls(&config, &m.name))
                    .cloned()
                    .collect(),
                ..config.clone()
            },
            &self.limiters,
        )
        .map_err(failed)?;
        let registry = Registry::sage(&config, sops.clone(), endpoints);
        let (local, transport) = self.start_roles(id, registry);
        let driver = DialogueActor::for_run(&config, sops, transport.clone());
        let driver =
            <DialogueActor as actix::Actor>::start_in_arbiter(&self.arbiters[0], |_| driver);
        Ok(ServedRun {
            local,
            driver: Driver::Sage(driver),
            transport,
            last_used: self.now_ms().into(),
            budget,
            jobs,
        })
    }

    /// Starts a run's role actors; returns them, and the transport its jobs reach the roles
    /// through (the roles served here in-process, the others over NATS).
    fn start_roles(
        &self,
        id: &str,
        registry: Registry,
    ) -> (LocalTransport, Arc<dyn sage_ports::transport::Transport>) {
        let local = start_local_roles(
            Arc::new(registry),
            &self.arbiters[0],
            Some(&self.arbiters[1]),
        );
        let transport: Arc<dyn sage_ports::transport::Transport> =
            Arc::new(sage_ports::transport::Routed {
                local: Arc::new(local.clone()),
                remote: Arc::new(NatsTransport::new(
                    self.broker.connection(),
                    id,
                    self.policy.clone(),
                )),
                roles: self.served.local_roles(),
            });
        (local, transport)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_written_before_suites_is_a_sage_run() {
        let config = RunConfig::default();
        let spec = RunSpec::Sage {
            manifest: Manifest::new("r1", &config, &[], 3),
            scenarios: vec![("a.yaml".into(), "text".into())],
        };
        let mut value = serde_json::to_value(&spec).expect("JSON");
        assert_eq!(value["suite"], "sage");
        value.as_object_mut().expect("an object").remove("suite");
        let read = RunSpec::from_value(value).expect("a spec");
        assert_eq!(read.run_id(), "r1");
        assert!(read.suite() == "sage" && read.jobs() == 3);
        assert!(RunSpec::from_value(serde_json::json!({"suite": "other"})).is_err());
    }

    #[test]
    fn a_status_admits_by_the_budgets_it_holds_and_ends_when_they_stop_the_rest() {
        use sage_core::scoring::budget::{BudgetSummary, ModelBudget};
        let model = |reached, dialogues, not_started| ModelBudget {
            max_cost_usd: Some(1.0),
            spent_usd: if reached { 1.0 } else { 0.5 },
            reached,
            dialogues,
            not_started,
        };
        let mut status = RunStatus::submitted("r1", 8, "2026-01-01T00:00:00Z");
        status.stored = 5;
        assert!(status.admits("a") && !status.ended(), "no budget");
        status.budget = Some(BudgetSummary {
            max_cost_usd: None,
            spent_usd: 1.5,
            reached: false,
            not_started: 3,
            models: [
                ("a".into(), model(true, 1, 3)),
                ("b".into(), model(false, 4, 0)),
            ]
            .into_iter()
            .collect(),
        });
        assert!(!status.admits("a") && status.admits("b") && status.admits("other"));
        assert!(
            status.ended(),
            "only a has dialogues left, and its budget is reached"
        );
        let budget = status.budget.as_mut().unwrap();
        budget.models.insert("b".into(), model(false, 3, 1));
        assert!(
            !status.ended(),
            "b has one left and its budget is not reached"
        );
        status.budget.as_mut().unwrap().reached = true;
        assert!(
            !status.admits("b") && status.ended(),
            "the run's budget stops every model"
        );
        // What the status table calls a run its budgets ended: stopping while the dialogues
        // then in flight are stored, then budget.
        status.state = RunState::Running;
        let table = submit::status_table(std::slice::from_ref(&status));
        let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
        assert_eq!(row[..3], ["r1", "stopping", "5/8"]);
        status.state = RunState::Complete;
        let table = submit::status_table(std::slice::from_ref(&status));
        let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
        assert_eq!(row[..3], ["r1", "budget", "5/8"]);
        status.stored = 8;
        let table = submit::status_table(&[status]);
        assert!(table.lines().nth(1).unwrap().contains("complete"));
    }

    #[test]
    fn an_adaptive_status_drops_decided_models_and_ends_when_every_one_left_is() {
        use sage_core::scoring::adaptive::{AdaptiveSummary, Decision, Standing};
        let standing = |model: &str, decision, not_played| Standing {
            model: model.into(),
            decision,
            dialogues: 4,
            decided_after: (decision != Decision::Undecided).then_some(4),
            lower: 10.0,
            upper: 20.0,
            mean: Some(15.0),
            not_played,
        };
        let mut status = RunStatus::submitted("r1", 20, "2026-01-01T00:00:00Z");
        status.stored = 8;
        status.adaptive = Some(AdaptiveSummary {
            top: 1,
            alpha: 0.05,
            sequence: "test".into(),
            models: vec![
                standing("a", Decision::InTop, 6),
                standing("b", Decision::Undecided, 6),
            ],
        });
        assert_eq!(status.admit(Some("a")), Admit::Drop);
        assert_eq!(status.admit(Some("b")), Admit::Play);
        assert!(!status.ended(), "b plays on");
        status.adaptive.as_mut().unwrap().models[1].decision = Decision::OutOfTop;
        assert!(status.ended(), "every model with dialogues left is decided");
        status.state = RunState::Complete;
        let table = submit::status_table(std::slice::from_ref(&status));
        assert!(
            table.lines().nth(1).unwrap().contains(" decided "),
            "{table}"
        );
        // A budget and the decisions together: b undecided but its budget reached.
        status.adaptive.as_mut().unwrap().models[1].decision = Decision::Undecided;
        use sage_core::scoring::budget::{BudgetSummary, ModelBudget};
        let budget = |reached, not_started| ModelBudget {
            max_cost_usd: Some(1.0),
            spent_usd: 1.0,
            reached,
            dialogues: 4,
            not_started,
        };
        status.budget = Some(BudgetSummary {
            max_cost_usd: None,
            spent_usd: 2.0,
            reached: false,
            not_started: 12,
            models: [
                ("a".into(), budget(false, 6)),
                ("b".into(), budget(true, 6)),
            ]
            .into_iter()
            .collect(),
        });
        assert!(status.ended(), "a is decided, b's budget is reached");
    }

    #[test]
    fn only_runs_no_worker_can_load_are_given_up() {
        assert!(ClusterError::UnknownRun("r".into()).is_permanent());
        let codec = NatsError::Codec {
            what: "manifest.r".into(),
            message: "unknown variant".into(),
        };
        assert!(ClusterError::Nats(codec).is_permanent());
        // A run this worker cannot set up (a missing API key) may be played elsewhere or later.
        let setup = ClusterError::Run {
            run: "r".into(),
            error: RunError::Runtime("OPENAI_API_KEY is not set".into()),
        };
        assert!(!setup.is_permanent());
    }

    #[test]
    fn a_worker_that_cannot_load_runs_is_unready_until_a_load_works_or_a_minute_passes() {
        let loads = LoadHealth::default();
        assert!(!loads.troubled(0) && !loads.troubled(1_000_000));
        loads.record(1_000, false);
        assert!(loads.troubled(1_000) && loads.troubled(60_999));
        assert!(!loads.troubled(61_000), "a minute later: ready again");
        loads.record(2_000, true);
        assert!(!loads.troubled(2_000), "a load worked since");
        loads.record(3_000, false);
        assert!(loads.troubled(3_500));
    }
}
