//! Runs a set of dialogue jobs embedded in this process: the role actors, the dialogue driver
//! and the aggregator, with at most `concurrency` dialogues in flight. Jobs whose dialogue is
//! already stored are skipped (resume).

use super::aggregator::{Aggregator, Counts, Finished, Progress};
use super::roles::Registry;
use super::{DialogueActor, RunDialogue, start_local_roles};
use crate::llm::{Endpoint, LlmError};
use crate::plan::RunConfig;
use crate::protocol::DialogueJob;
use crate::sop::Sop;
use crate::store::{RunDir, StoreError};
use crate::telemetry::metrics::RunLabels;
use actix::Actor;
use futures::StreamExt;
use std::collections::HashMap;
use std::sync::Arc;

/// Why a run could not go on.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A model endpoint could not be set up.
    #[error("model {model}: {error}")]
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

/// The model endpoints of a configuration.
pub fn endpoints(config: &RunConfig) -> Result<HashMap<String, Arc<Endpoint>>, RunError> {
    build_endpoints(&config.models, config.cache_dir.clone())
}

/// An endpoint for each of `models`, by name (responses cached under `cache_dir` when given).
pub fn build_endpoints(
    models: &[crate::llm::ModelConfig],
    cache_dir: Option<std::path::PathBuf>,
) -> Result<HashMap<String, Arc<Endpoint>>, RunError> {
    models
        .iter()
        .map(|m| {
            Endpoint::new(m.clone(), cache_dir.clone())
                .map(|e| (m.name.clone(), Arc::new(e)))
                .map_err(|error| RunError::Model {
                    model: m.name.clone(),
                    error,
                })
        })
        .collect()
}

/// Plays every job not yet stored in `run_dir` and stores its record. Must run inside an actix
/// `System`. Returns the aggregator's counts for this session.
pub async fn run_embedded(
    config: &RunConfig,
    sops: &[Arc<Sop>],
    jobs: Vec<DialogueJob>,
    run_dir: &RunDir,
    progress: Option<indicatif::ProgressBar>,
) -> Result<Counts, RunError> {
    // Records already stored are kept, once checked to be of these jobs.
    let run_id = jobs.first().map(|j| j.run_id.clone()).unwrap_or_default();
    let done = run_dir.stored_jobs::<DialogueJob>(
        "dialogues.jsonl",
        &crate::plan::JobSet::of(&jobs, |j| &j.dialogue_id),
        &run_id,
    )?;
    let todo: Vec<DialogueJob> = jobs
        .into_iter()
        .filter(|j| !done.contains(&j.dialogue_id))
        .collect();
    if let Some(p) = &progress {
        p.set_length((todo.len() + done.len()) as u64);
        p.set_position(done.len() as u64);
    }
    let sops: HashMap<String, Arc<Sop>> = sops
        .iter()
        .map(|s| (s.scenario().id.clone(), s.clone()))
        .collect();
    crate::telemetry::metrics().driving(&RunLabels::sage(config, sops.keys()));
    let registry = Arc::new(Registry {
        sops: sops.clone(),
        endpoints: endpoints(config)?,
        content_attempts: config.content_attempts,
        record_prompts: config.record_prompts,
        prompts: Default::default(),
        desk: None,
    });
    // A second thread for the busiest role (the judge panel) and the rule engine when there is a
    // second core.
    let second =
        (std::thread::available_parallelism().map_or(1, |n| n.get()) > 1).then(actix::Arbiter::new);
    let transport = Arc::new(start_local_roles(
        registry,
        &actix::Arbiter::current(),
        second.as_ref().map(|a| a.handle()).as_ref(),
    ));
    let driver = DialogueActor {
        transport,
        sops: Arc::new(sops),
        simulated: Arc::new(
            crate::store::simulated_models(&config.models)
                .into_iter()
                .collect(),
        ),
    }
    .start();
    let aggregator = Aggregator::new(run_dir.writer()?, progress.clone());
    // On this thread: the records are built here, so they are also freed here.
    let aggregator = aggregator.start();
    // Finished records go to the aggregator through a bounded channel, so the loop below keeps
    // starting dialogues while the aggregator writes (awaiting each write would let the number
    // in flight dip every time one finishes).
    let (tx, mut rx) =
        tokio::sync::mpsc::channel::<crate::protocol::DialogueRecord>(super::MAILBOX);
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
    let mut finished = futures::stream::iter(todo)
        .map(|job| driver.send(RunDialogue::new(job)))
        .buffer_unordered(config.concurrency.max(1));
    while let Some(record) = finished.next().await {
        let record = record.map_err(|e| RunError::Runtime(e.to_string()))?;
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
    let counts = aggregator
        .send(Progress)
        .await
        .map_err(|e| RunError::Runtime(e.to_string()));
    if let Some(arbiter) = second {
        arbiter.stop();
    }
    counts
}
