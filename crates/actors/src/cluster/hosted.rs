//! A suite on the one lifecycle ([`Play`]) in the distributed mode: its spec in the runs
//! bucket, its jobs queued, its driver and roles on a worker, its fold in the aggregator. The
//! suite's types are erased behind [`HostedRun`], [`HostedDriver`] and [`HostedFold`], so the
//! worker, the aggregator and `sage sweep` name no suite; [`super::suites`] lists the suites
//! served this way.

use super::ClusterError;
use crate::roles::Registry;
use crate::runner::RunError;
use crate::suite::{Of, Play, Results};
use futures::FutureExt;
use futures::future::BoxFuture;
use sage_core::plan::JobSet;
use sage_ports::store::suite::SuiteManifest;
use sage_ports::store::{HasJob, RunDir, StoreError};
use sage_ports::transport::Transport;
use sage_ports::transport::nats::Broker;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use std::sync::{Arc, OnceLock};

/// What the runs bucket holds for a run of a suite on the trait: the suite's name, the
/// manifest (with the configuration) and the inputs its world is built from.
#[derive(Serialize, Deserialize)]
#[serde(bound = "")]
struct Spec<S: Play> {
    suite: String,
    manifest: SuiteManifest<S::Config>,
    inputs: S::Inputs,
}

/// A run of a suite on the trait, as the processes of the distributed mode hold it.
#[async_trait::async_trait]
pub trait HostedRun: Send + Sync {
    /// The suite's name ([`Suite::NAME`]).
    fn suite(&self) -> &'static str;
    /// The run id.
    fn run_id(&self) -> &str;
    /// When it was submitted.
    fn created_at(&self) -> &str;
    /// Jobs in the run, as submitted.
    fn jobs(&self) -> usize;
    /// The records file of its results folder.
    fn records_file(&self) -> &'static str;
    /// The SHA-256 of the input texts its world is built from.
    fn inputs_sha256(&self) -> &[String];
    /// The agents under test.
    fn agents(&self) -> &[String];
    /// The customer simulators.
    fn customers(&self) -> &[String];
    /// The judges.
    fn judges(&self) -> &[String];
    /// The spec as the runs bucket holds it.
    fn to_json(&self) -> Result<Vec<u8>, serde_json::Error>;
    /// The results folder's manifest.json.
    fn manifest(&self) -> Result<serde_json::Value, serde_json::Error>;
    /// The run's jobs as this version plans them from the spec.
    fn job_set(&self) -> Result<JobSet, ClusterError>;
    /// Queues the run's jobs `todo` keeps, in the order the run plays them; returns how many.
    async fn queue_jobs(
        &self,
        broker: &Broker,
        todo: &(dyn for<'x> Fn(&'x str) -> bool + Sync),
        resume: Option<u32>,
    ) -> Result<usize, ClusterError>;
    /// The model endpoints a process that calls the models `wanted` accepts needs, and the
    /// driver of the run's jobs.
    fn serve(
        &self,
        wanted: &dyn Fn(&str) -> bool,
        limiters: &sage_ports::llm::Limiters,
    ) -> Result<(Registry, Arc<dyn HostedDriver>), RunError>;
    /// An empty fold of the run's results, whose folder is `dir`.
    fn fold(&self, dir: &RunDir) -> Box<dyn HostedFold>;
}

/// Plays a hosted run's jobs on a worker.
pub trait HostedDriver: Send + Sync {
    /// Answers a request of the run that came on `role`'s subject with the role actors of
    /// this process ([`Play::answer`]).
    fn answer<'a>(
        &'a self,
        role: sage_core::protocol::Role,
        local: &'a dyn Transport,
        payload: &'a [u8],
    ) -> BoxFuture<'a, Result<bytes::Bytes, String>>;

    /// Decodes a job (as queued), refuses one not of `planned` (when given, [`super::worker`]'s
    /// check), and plays it through `through`: the record's JSON, or why the job cannot be
    /// played at all. Why the job is refused, before any call, when it cannot be decoded or is
    /// not of the plan.
    fn play(
        &self,
        payload: &[u8],
        planned: &dyn Fn(&str, &dyn erased::Fingerprint) -> Result<(), String>,
        through: Arc<dyn Transport>,
    ) -> Result<BoxFuture<'static, Result<Box<RawValue>, String>>, String>;
}

/// The scores of a hosted run as the aggregator folds them.
pub trait HostedFold: Send {
    /// Reads a record of the run, its JSON as sent.
    fn parse(&self, json: &[u8]) -> Result<Box<dyn HostedRecord>, serde_json::Error>;
    /// Folds a record this fold parsed, whose line starts at byte `at` of the records file.
    fn add(&mut self, record: &dyn HostedRecord, at: u64);
    /// Reads the run's records file in `dir` into the fold (checked to be of `jobs`, which
    /// marks them done: [`RunDir::resume_records`]), each passed to `counted` as well.
    fn resume(
        &mut self,
        dir: &RunDir,
        jobs: &mut JobSet,
        run_id: &str,
        counted: &mut dyn FnMut(&dyn HostedRecord),
    ) -> Result<(), StoreError>;
    /// Writes the results into `dir` (summary.json, leaderboard.md, the HTML report): the
    /// table, and report.html's path when the suite has a page.
    fn write(&mut self, dir: &RunDir) -> Result<(String, Option<std::path::PathBuf>), StoreError>;
}

/// A record of a hosted run.
pub trait HostedRecord: HasJob + Send + Sync {
    /// Its turns, and whether an infrastructure error touched it.
    fn tally(&self) -> (usize, bool);
    /// Itself, for the fold that parsed it.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// A job's check against its run's plan, through an erased job.
pub mod erased {
    use sage_core::plan::{Foreign, JobSet};

    /// A job, checked against a [`JobSet`] without naming its type.
    pub trait Fingerprint {
        /// Whether it is the job of `id` in `jobs`, exactly.
        fn check_in(&self, jobs: &JobSet, id: &str) -> Result<(), Foreign>;
    }

    impl<T: serde::Serialize> Fingerprint for T {
        fn check_in(&self, jobs: &JobSet, id: &str) -> Result<(), Foreign> {
            jobs.check(id, self)
        }
    }
}

/// A run of `S`, loaded from its spec; its world is built once, on first use.
struct Run<S: Play> {
    spec: Spec<S>,
    world: OnceLock<Result<Arc<S::World>, String>>,
}

impl<S: Play> Run<S> {
    fn world(&self) -> Result<Arc<S::World>, ClusterError> {
        let config = &self.spec.manifest.config;
        (self
            .world
            .get_or_init(|| S::world(config, &self.spec.inputs)))
        .clone()
        .map_err(|message| ClusterError::Scenario {
            run: self.spec.manifest.run_id.clone(),
            message,
        })
    }

    fn planned(&self) -> Result<Vec<S::Job>, ClusterError> {
        let manifest = &self.spec.manifest;
        Ok(S::jobs(&manifest.config, &manifest.run_id, &*self.world()?))
    }
}

#[async_trait::async_trait]
impl<S: Play> HostedRun for Run<S> {
    fn suite(&self) -> &'static str {
        S::NAME
    }
    fn run_id(&self) -> &str {
        &self.spec.manifest.run_id
    }
    fn created_at(&self) -> &str {
        &self.spec.manifest.created_at
    }
    fn jobs(&self) -> usize {
        self.spec.manifest.jobs
    }
    fn records_file(&self) -> &'static str {
        S::RECORDS
    }
    fn inputs_sha256(&self) -> &[String] {
        &self.spec.manifest.inputs_sha256
    }
    fn agents(&self) -> &[String] {
        S::agents(&self.spec.manifest.config)
    }
    fn customers(&self) -> &[String] {
        S::customers(&self.spec.manifest.config)
    }
    fn judges(&self) -> &[String] {
        S::judges(&self.spec.manifest.config)
    }
    fn to_json(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(&self.spec)
    }
    fn manifest(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::to_value(&self.spec.manifest)
    }
    fn job_set(&self) -> Result<JobSet, ClusterError> {
        Ok(JobSet::of(self.planned()?, |j| S::job_id(j)))
    }
    async fn queue_jobs(
        &self,
        broker: &Broker,
        todo: &(dyn for<'x> Fn(&'x str) -> bool + Sync),
        resume: Option<u32>,
    ) -> Result<usize, ClusterError> {
        let jobs = self.planned()?.into_iter().filter(|j| todo(S::job_id(j)));
        super::queue::publish_jobs(broker, self.run_id(), jobs, |j| S::job_id(j), resume).await
    }
    fn serve(
        &self,
        wanted: &dyn Fn(&str) -> bool,
        limiters: &sage_ports::llm::Limiters,
    ) -> Result<(Registry, Arc<dyn HostedDriver>), RunError> {
        let world = self.world().map_err(|e| RunError::Runtime(e.to_string()))?;
        let registry =
            crate::suite::registry::<S>(&self.spec.manifest.config, &world, wanted, limiters)?;
        Ok((registry, Arc::new(Driver::<S> { world })))
    }
    fn fold(&self, dir: &RunDir) -> Box<dyn HostedFold> {
        Box::new(Fold::<S>(Results::new(dir)))
    }
}

/// The driver of a run of `S` on a worker.
struct Driver<S: Play> {
    world: Arc<S::World>,
}

impl<S: Play> HostedDriver for Driver<S> {
    fn answer<'a>(
        &'a self,
        role: sage_core::protocol::Role,
        local: &'a dyn Transport,
        payload: &'a [u8],
    ) -> BoxFuture<'a, Result<bytes::Bytes, String>> {
        S::answer(role, local, payload)
    }

    fn play(
        &self,
        payload: &[u8],
        planned: &dyn Fn(&str, &dyn erased::Fingerprint) -> Result<(), String>,
        through: Arc<dyn Transport>,
    ) -> Result<BoxFuture<'static, Result<Box<RawValue>, String>>, String> {
        let job: S::Job =
            serde_json::from_slice(payload).map_err(|e| format!("undecodable job: {e}"))?;
        planned(S::job_id(&job), &job)?;
        let world = self.world.clone();
        Ok(async move {
            let record = crate::suite::play_traced::<S>(through.as_ref(), &world, job).await?;
            serde_json::value::to_raw_value(&record).map_err(|e| e.to_string())
        }
        .boxed())
    }
}

/// The results of a run of `S` in the aggregator.
struct Fold<S: Play>(Results<S>);

impl<S: Play> HostedRecord for Of<S> {
    fn tally(&self) -> (usize, bool) {
        S::tally(&self.0)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl<S: Play> HostedFold for Fold<S> {
    fn parse(&self, json: &[u8]) -> Result<Box<dyn HostedRecord>, serde_json::Error> {
        read::<S>(json)
    }
    fn add(&mut self, record: &dyn HostedRecord, at: u64) {
        if let Some(Of(record)) = record.as_any().downcast_ref::<Of<S>>() {
            self.0.add(record, at);
        }
    }
    fn resume(
        &mut self,
        dir: &RunDir,
        jobs: &mut JobSet,
        run_id: &str,
        counted: &mut dyn FnMut(&dyn HostedRecord),
    ) -> Result<(), StoreError> {
        dir.resume_records(S::RECORDS, jobs, run_id, |at, record: Of<S>| {
            counted(&record);
            self.0.add(&record.0, at);
        })
    }
    fn write(&mut self, dir: &RunDir) -> Result<(String, Option<std::path::PathBuf>), StoreError> {
        let written = self.0.write(dir)?;
        Ok((written.table, written.report.map(|(path, _)| path)))
    }
}

/// A hosted run, shared by the places that hold its spec.
#[derive(Clone)]
pub struct Hosted(pub Arc<dyn HostedRun>);

impl std::fmt::Debug for Hosted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Hosted({} run {})", self.0.suite(), self.0.run_id())
    }
}

impl PartialEq for Hosted {
    fn eq(&self, other: &Hosted) -> bool {
        match (self.0.to_json(), other.0.to_json()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }
}

impl Hosted {
    /// The spec of a new run of `S` with `config`, whose world is built from `inputs`, with
    /// `jobs` jobs.
    pub fn new<S: Play>(
        run_id: &str,
        config: &S::Config,
        inputs: S::Inputs,
        jobs: usize,
    ) -> Hosted {
        Hosted(Arc::new(Run::<S> {
            spec: Spec {
                suite: S::NAME.into(),
                manifest: SuiteManifest::new::<S>(run_id, config, &S::input_texts(&inputs), jobs),
                inputs,
            },
            world: OnceLock::new(),
        }))
    }
}

/// Reads a record of `S` (its JSON as sent).
pub(crate) fn read<S: Play>(json: &[u8]) -> Result<Box<dyn HostedRecord>, serde_json::Error> {
    Ok(Box::new(Of::<S>(serde_json::from_slice(json)?)))
}

/// Reads a spec of `S` from the runs bucket: a message from outside, its configuration checked
/// as a configuration file is (bounds on every count) before anything is planned from it.
pub(crate) fn load<S: Play>(value: serde_json::Value) -> Result<Hosted, serde_json::Error> {
    let spec: Spec<S> = serde_json::from_value(value)?;
    S::check(&spec.manifest.config, "the run's manifest").map_err(serde::de::Error::custom)?;
    if spec.suite != S::NAME {
        return Err(serde::de::Error::custom(format!(
            "a {} spec read as {}",
            spec.suite.escape_debug(),
            S::NAME
        )));
    }
    Ok(Hosted(Arc::new(Run::<S> {
        spec,
        world: OnceLock::new(),
    })))
}
