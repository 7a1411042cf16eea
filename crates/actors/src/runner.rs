//! Runs a set of dialogue jobs embedded in this process: the role actors, the dialogue driver
//! and the aggregator, with at most `concurrency` dialogues in flight. Jobs whose dialogue is
//! already stored are skipped (resume), and so are those a cost budget keeps from starting.

use super::aggregator::{Aggregator, Counts, Finished, Progress, TakeReport};
use super::roles::Registry;
use super::{DialogueActor, RunDialogue, start_local_roles};
use actix::Actor;
use futures::StreamExt;
use sage_core::plan::RunConfig;
use sage_core::protocol::DialogueJob;
use sage_core::scoring::budget::BudgetFold;
use sage_core::sop::Sop;
use sage_ports::llm::{Endpoint, Limiters, LlmError};
use sage_ports::store::{RunDir, SageFold, StoreError};
use sage_ports::telemetry::metrics::RunLabels;
use std::collections::HashMap;
use std::sync::Arc;

/// Why a run could not go on.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A model endpoint could not be set up (the error names the model: no prefix, so the
    /// message says it once).
    #[error("{error}")]
    Model {
        /// The model name.
        model: String,
        /// Why.
        error: LlmError,
    },
    /// The results could not be written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// An actor went away.
    #[error("runtime: {0}")]
    Runtime(String),
}

/// The records stored in `from`, read on a blocking thread of their own and handed over
/// `capacity` at a time (so only those in flight are in memory), and the reader's handle (its
/// I/O error, if any, once the stream has ended). For the commands that go through a run's
/// records again: `sage rejudge`, `sage fork`.
pub fn stored_records(
    from: &RunDir,
    capacity: usize,
) -> (
    impl futures::Stream<Item = sage_core::protocol::DialogueRecord>,
    tokio::task::JoinHandle<Result<(), StoreError>>,
) {
    let (tx, rx) = tokio::sync::mpsc::channel(capacity.max(1));
    let reader = {
        let from = from.clone();
        tokio::task::spawn_blocking(move || from.scan_dialogues(|r| drop(tx.blocking_send(r))))
    };
    let records =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|r| (r, rx)) });
    (records, reader)
}

/// The model endpoints of a configuration, held to `limiters` (one per limit group).
pub fn endpoints(
    config: &RunConfig,
    limiters: &Limiters,
) -> Result<HashMap<String, Arc<Endpoint>>, RunError> {
    build_endpoints(&config.models, config.cache_dir.clone(), limiters)
}

/// An endpoint for each of `models`, by name (responses cached under `cache_dir` when given);
/// the models of one `limit_group` share one [`Limiter`](sage_ports::llm::Limiter) of
/// `limiters`.
pub fn build_endpoints(
    models: &[sage_ports::llm::ModelConfig],
    cache_dir: Option<std::path::PathBuf>,
    limiters: &Limiters,
) -> Result<HashMap<String, Arc<Endpoint>>, RunError> {
    let mut groups: HashMap<&str, Vec<&sage_ports::llm::ModelConfig>> = HashMap::new();
    for m in models {
        groups.entry(m.limit_group()).or_default().push(m);
    }
    let held: HashMap<&str, Arc<sage_ports::llm::Limiter>> = groups
        .iter()
        .map(|(name, members)| (*name, limiters.group(name, members)))
        .collect();
    models
        .iter()
        .map(|m| {
            Endpoint::held_to(m.clone(), cache_dir.clone(), held[m.limit_group()].clone())
                .map(|e| (m.name.clone(), Arc::new(e)))
                .map_err(|error| RunError::Model {
                    model: m.name.clone(),
                    error,
                })
        })
        .collect()
}

/// Where the jobs of an embedded run come from: a list, or a lazy [`sage_core::plan::Plan`].
pub trait JobSource {
    /// Every job, in the order to play them.
    fn jobs(&self) -> Box<dyn Iterator<Item = DialogueJob> + '_>;
    /// Every job, the cases in a random order (an adaptive run's: every prefix a random
    /// sample of the cases).
    fn jobs_in_random_order(&self) -> Box<dyn Iterator<Item = DialogueJob> + '_>;
    /// Jobs in all.
    fn count(&self) -> usize;
}

impl JobSource for Vec<DialogueJob> {
    fn jobs(&self) -> Box<dyn Iterator<Item = DialogueJob> + '_> {
        Box::new(self.iter().cloned())
    }
    fn jobs_in_random_order(&self) -> Box<dyn Iterator<Item = DialogueJob> + '_> {
        let mut jobs = self.clone();
        // A dialogue's seed is its case's and repeat's, whatever the model: a hash of it
        // orders the cases at random and keeps each case's models together.
        jobs.sort_by_key(|j| (sage_core::plan::derive_seed(j.seed), j.dialogue_id.clone()));
        Box::new(jobs.into_iter())
    }
    fn count(&self) -> usize {
        self.len()
    }
}

impl JobSource for sage_core::plan::Plan<'_> {
    fn jobs(&self) -> Box<dyn Iterator<Item = DialogueJob> + '_> {
        Box::new(sage_core::plan::Plan::jobs(self))
    }
    fn jobs_in_random_order(&self) -> Box<dyn Iterator<Item = DialogueJob> + '_> {
        Box::new(sage_core::plan::Plan::jobs_in_random_order(self))
    }
    fn count(&self) -> usize {
        self.len()
    }
}

/// What an embedded run did: the aggregator's counts for this session, and the run's report
/// folded from every record (those stored before a resume included).
pub struct Embedded {
    /// Counts of this session.
    pub counts: Counts,
    /// The report of the whole run so far: write it with [`SageFold::write`].
    pub report: SageFold,
    /// Whether the run was stopped before its end ([`run_embedded_until`]): the dialogues in
    /// flight then finished and were stored, the others were not started.
    pub stopped: bool,
}

/// Plays every job not yet stored in `run_dir` and stores its record, folding every record
/// (those already stored, read once, and the new ones as they are written) into the run's
/// report. The jobs are made one at a time and at most `concurrency` dialogues are in memory,
/// so the run's memory does not grow with its size. Must run inside an actix `System`.
///
/// Cost budgets (`max_cost_usd` of the run and of each model under test): a job starts only
/// while neither the run's stored dialogues (those stored before a resume included) nor those
/// of its agent under test have cost their budget; the others are left unplayed (the summary's
/// `budget` counts them) for a resume with a higher budget. Dialogues in flight when a budget
/// is reached finish and are stored, so the spending can overshoot by at most
/// `concurrency` dialogues.
pub async fn run_embedded(
    config: &RunConfig,
    sops: &[Arc<Sop>],
    jobs: &(impl JobSource + ?Sized),
    run_dir: &RunDir,
    progress: Option<indicatif::ProgressBar>,
) -> Result<Embedded, RunError> {
    let (_never, stop) = tokio::sync::watch::channel(false);
    run_embedded_until(config, sops, jobs, run_dir, progress, stop).await
}

/// [`run_embedded`], stopped when `stop` turns true (`sage run` on Ctrl-C): no dialogue starts
/// after that, those in flight finish and are stored, and the report covers what was stored
/// (`--resume` plays the rest).
pub async fn run_embedded_until(
    config: &RunConfig,
    sops: &[Arc<Sop>],
    jobs: &(impl JobSource + ?Sized),
    run_dir: &RunDir,
    progress: Option<indicatif::ProgressBar>,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Result<Embedded, RunError> {
    let mut report = SageFold::for_run(config, jobs.count(), run_dir, sops);
    let mut budget = BudgetFold::new(config);
    // An adaptive run: a model decided against the top K gets no more cases.
    let mut adaptive = sage_core::scoring::adaptive::Adaptive::for_run(config, jobs.count());
    // Records already stored are kept, once checked to be of these jobs (read once).
    let mut stored = None;
    if run_dir.path().join("dialogues.jsonl").exists() {
        let run_id = jobs.jobs().next().map(|j| j.run_id).unwrap_or_default();
        let mut set = sage_core::plan::JobSet::of(jobs.jobs(), |j| &j.dialogue_id);
        run_dir.resume_records(
            "dialogues.jsonl",
            &mut set,
            &run_id,
            |at, r: sage_core::protocol::DialogueRecord| {
                if report.add(&r, at) {
                    budget.add(&r);
                    if let Some(a) = adaptive.as_mut() {
                        a.add(&r);
                    }
                }
            },
        )?;
        stored = Some(set);
    }
    let done = stored.as_ref().map_or(0, |s| s.done());
    // Read when the next job is asked for: after every record finished so far was added.
    let budget = std::cell::RefCell::new(budget);
    let adaptive = std::cell::RefCell::new(adaptive);
    // One lane per model under test, so a slow or limited one never holds back the others.
    let todo: Vec<crate::lanes::Lane<'_, DialogueJob>> = config
        .service_models
        .iter()
        .map(|model| {
            let (stored, budget, adaptive, stop) = (&stored, &budget, &adaptive, &stop);
            let all = match config.adaptive_top {
                Some(_) => jobs.jobs_in_random_order(),
                None => jobs.jobs(),
            };
            Box::new(
                all.filter(move |j| j.service_model == *model)
                    .filter(move |j| !stored.as_ref().is_some_and(|s| s.is_done(&j.dialogue_id)))
                    .filter(move |j| budget.borrow().admits(&j.service_model))
                    .filter(move |j| {
                        (adaptive.borrow().as_ref()).is_none_or(|a| a.admits(&j.service_model))
                    })
                    .take_while(move |_| !*stop.borrow()),
            ) as crate::lanes::Lane<'_, DialogueJob>
        })
        .collect();
    if let Some(p) = &progress {
        p.set_length(jobs.count() as u64);
        p.set_position(done as u64);
    }
    let sops: HashMap<String, Arc<Sop>> = sops
        .iter()
        .map(|s| (s.scenario().id.clone(), s.clone()))
        .collect();
    sage_ports::telemetry::metrics().driving(&RunLabels::sage(config, sops.keys()));
    let limiters = Limiters::default();
    let registry = Arc::new(Registry::sage(
        config,
        sops.clone(),
        endpoints(config, &limiters)?,
    ));
    // A second thread for the busiest role (the judge panel) and the rule engine when there is a
    // second core.
    let second =
        (std::thread::available_parallelism().map_or(1, |n| n.get()) > 1).then(actix::Arbiter::new);
    let transport = Arc::new(start_local_roles(
        registry,
        &actix::Arbiter::current(),
        second.as_ref().map(|a| a.handle()).as_ref(),
    ));
    let driver = DialogueActor::for_run(config, sops, transport).start();
    let aggregator = Aggregator::new(run_dir.writer()?, report, progress.clone());
    // On this thread: the records are built here, so they are also freed here.
    let aggregator = aggregator.start();
    // Finished records go to the aggregator through a bounded channel, so the loop below keeps
    // starting dialogues while the aggregator writes (awaiting each write would let the number
    // in flight dip every time one finishes).
    let (tx, mut rx) =
        tokio::sync::mpsc::channel::<sage_core::protocol::DialogueRecord>(super::MAILBOX);
    let writer = {
        let aggregator = aggregator.clone();
        actix::spawn(async move {
            while let Some(record) = rx.recv().await {
                aggregator
                    .send(Finished(record))
                    .await
                    .map_err(|e| RunError::Runtime(e.to_string()))??;
            }
            Ok::<(), RunError>(())
        })
    };
    let mut finished = std::pin::pin!(crate::lanes::fair(todo, config.concurrency, |job| {
        driver.send(RunDialogue::new(job))
    }));
    while let Some(record) = finished.next().await {
        let record = record.map_err(|e| RunError::Runtime(e.to_string()))?;
        budget.borrow_mut().add(&record);
        if let Some(a) = adaptive.borrow_mut().as_mut() {
            a.add(&record);
        }
        if tx.send(record).await.is_err() {
            break; // the writer stopped on an error, reported below
        }
    }
    drop(tx);
    writer
        .await
        .map_err(|e| RunError::Runtime(e.to_string()))??;
    if let Some(p) = &progress {
        p.finish_and_clear();
    }
    let gone = |e: actix::MailboxError| RunError::Runtime(e.to_string());
    let counts = aggregator.send(Progress).await.map_err(gone)?;
    let report = aggregator
        .send(TakeReport)
        .await
        .map_err(gone)?
        .ok_or_else(|| RunError::Runtime("the run's report was taken twice".into()))?;
    if let Some(arbiter) = second {
        arbiter.stop();
    }
    let stopped = *stop.borrow();
    Ok(Embedded {
        counts,
        report,
        stopped,
    })
}
