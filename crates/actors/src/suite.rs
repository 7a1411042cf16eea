//! One run lifecycle for every suite ([`sage_core::suite::Suite`]): the role actors and the
//! suite's driver in this process, the jobs played each agent its fair part at a time, every
//! record stored as it finishes and folded into the scores. A suite brings its driver ([`Play`]);
//! nothing here names one.

use crate::lanes;
use crate::roles::Registry;
use crate::runner::{RunError, build_endpoints};
use crate::start_local_roles;
use bytes::Bytes;
use futures::StreamExt;
use sage_core::plan::JobSet;
use sage_core::protocol::Role;
use sage_core::protocol::call::ModelCallRequest;
use sage_core::suite::Suite;
use sage_ports::store::suite::Page;
use sage_ports::store::{HasJob, RunDir};
use sage_ports::transport::{Transport, TransportError};
use std::sync::Arc;

/// A suite's driver: plays one job through a transport to the roles.
#[async_trait::async_trait]
pub trait Play: Suite {
    /// What the world is built from besides the configuration: the texts of the files the
    /// configuration names (`()` for a world bundled with the binary). Read once where a run
    /// starts; a distributed run carries them to its workers in its spec.
    type Inputs: Clone + serde::Serialize + serde::de::DeserializeOwned + Send + Sync + 'static;

    /// Reads the inputs a run of `config` names (why not, naming the file, when they cannot be
    /// read).
    fn inputs(config: &Self::Config) -> Result<Self::Inputs, String>;

    /// The texts of `inputs`, whose SHA-256 the run's manifest keeps: a run resumes only with
    /// the same texts. None for a world bundled with the binary.
    fn input_texts(_inputs: &Self::Inputs) -> Vec<&str> {
        Vec::new()
    }

    /// Gives the role actors of a process serving a run over `world` what they need of it
    /// besides the model endpoints (nothing, for a suite whose roles only call models).
    fn serve(_world: &Arc<Self::World>, _registry: &mut Registry) {}

    /// The world a run of `config` plays over, built from its inputs (why not, naming what is
    /// wrong in them).
    fn world(config: &Self::Config, inputs: &Self::Inputs) -> Result<Arc<Self::World>, String>;

    /// The run's HTML report, folded a record at a time (`()` for a suite without one).
    type Page: Page<Self::Record>;

    /// An empty page of the run in `run` (its header from the folder's manifest).
    fn page(run: &RunDir) -> Self::Page;

    /// Answers a request of a run of this suite that came on `role`'s subject (`sage worker`)
    /// with the role actors of this process (`local`): the reply's JSON, or why not. By
    /// default a request is one model call ([`ModelCallRequest`]) of that role.
    async fn answer(role: Role, local: &dyn Transport, payload: &[u8]) -> Result<Bytes, String> {
        answer_call(role, local, payload).await
    }

    /// Plays `job` over `world`: its record, or why the job cannot be played at all (it names
    /// what the world does not hold).
    async fn play(
        transport: &dyn Transport,
        world: &Self::World,
        job: Self::Job,
    ) -> Result<Self::Record, String>;
}

/// Decodes a request, has the local role actors answer it, encodes the reply.
pub async fn reply_json<Req, Rep, F, Fut>(payload: &[u8], ask: F) -> Result<Bytes, String>
where
    Req: serde::de::DeserializeOwned,
    Rep: serde::Serialize,
    F: FnOnce(Req) -> Fut,
    Fut: std::future::Future<Output = Result<Rep, TransportError>>,
{
    let request: Req =
        serde_json::from_slice(payload).map_err(|e| format!("undecodable request: {e}"))?;
    let reply = ask(request).await.map_err(|e| e.to_string())?;
    serde_json::to_vec(&reply)
        .map(Bytes::from)
        .map_err(|e| e.to_string())
}

/// Answers one model call of `role` ([`Play::answer`]'s default): a call of another role on
/// this role's subject is refused.
async fn answer_call(role: Role, local: &dyn Transport, payload: &[u8]) -> Result<Bytes, String> {
    match role {
        Role::Service | Role::User | Role::Judge => {
            reply_json(payload, |r: ModelCallRequest| async move {
                let asked = r.role.role();
                if asked != role {
                    return Err(TransportError::Codec {
                        role: role.as_str(),
                        message: format!("a {} call on this role's subject", asked.as_str()),
                    });
                }
                local.call(r).await
            })
            .await
        }
        Role::Rule | Role::Dialogue => Err(format!(
            "a run of this suite has no {} requests",
            role.as_str()
        )),
    }
}

/// What a run's records give, folded a record at a time: the scores and the HTML report.
pub struct Results<S: Play> {
    /// The scores.
    pub fold: S::Fold,
    /// The HTML report.
    pub page: S::Page,
}

/// What [`Results::write`] wrote.
pub struct Written {
    /// The scores' table (leaderboard.md).
    pub table: String,
    /// report.html's path and what its explorer embeds (a suite with a page).
    pub report: Option<(std::path::PathBuf, sage_ports::store::suite::Embedded)>,
}

impl<S: Play> Results<S> {
    /// Nothing folded yet, of the run in `run`.
    pub fn new(run: &RunDir) -> Results<S> {
        Results {
            fold: S::Fold::default(),
            page: S::page(run),
        }
    }

    /// Folds a record in, whose line starts at byte `at` of the records file.
    pub fn add(&mut self, record: &S::Record, at: u64) {
        S::fold(&mut self.fold, record);
        self.page.add(record, at);
    }

    /// Writes the scores ([`Suite::SUMMARY`], [`Suite::TABLE`]) and the HTML report into the
    /// run's folder, each atomically.
    pub fn write(&mut self, run: &RunDir) -> Result<Written, sage_ports::store::StoreError> {
        let (summary, table) = S::summary(&self.fold);
        run.write_json(S::SUMMARY, &summary)?;
        run.write_text(S::TABLE, &table)?;
        let report = self.page.write(run, None)?;
        Ok(Written { table, report })
    }
}

/// The registry of a process serving a run of `S` over `world`: the endpoints of the models of
/// `config` that `wanted` accepts, and what the suite's roles need of the world
/// ([`Play::serve`]).
pub fn registry<S: Play>(
    config: &S::Config,
    world: &Arc<S::World>,
    wanted: impl Fn(&str) -> bool,
    limiters: &sage_ports::llm::Limiters,
) -> Result<Registry, RunError> {
    let models: Vec<_> = S::models(config)
        .iter()
        .filter(|m| wanted(&m.name))
        .cloned()
        .collect();
    let mut registry = Registry::of_endpoints(build_endpoints(&models, None, limiters)?);
    S::serve(world, &mut registry);
    Ok(registry)
}

/// Plays `jobs` in this process (the role actors and the driver), at most the configuration's
/// concurrency at once, each agent under test its fair part of them ([`lanes`]); `on_record`
/// receives each record as it finishes. Must run inside an actix `System`.
pub async fn run_embedded<S: Play>(
    config: &S::Config,
    world: Arc<S::World>,
    jobs: Vec<S::Job>,
    mut on_record: impl FnMut(S::Record),
) -> Result<(), RunError> {
    use sage_ports::telemetry::metrics::{RunLabels, metrics};
    metrics().driving(&RunLabels::Agents(S::agents(config)));
    let needed = S::model_names(config);
    let registry = registry::<S>(config, &world, |m| needed.contains(&m), &Default::default())?;
    let transport: Arc<dyn Transport> = Arc::new(start_local_roles(
        Arc::new(registry),
        &actix::Arbiter::current(),
        None,
    ));
    let agents = S::agents(config);
    let mut lanes: Vec<Vec<S::Job>> = vec![Vec::new(); agents.len().max(1)];
    for job in jobs {
        let lane = agents.iter().position(|a| a == S::job_agent(&job));
        lanes[lane.unwrap_or(0)].push(job);
    }
    let lanes = lanes
        .into_iter()
        .map(|jobs| Box::new(jobs.into_iter()) as lanes::Lane<'_, S::Job>)
        .collect();
    let mut finished = std::pin::pin!(lanes::fair(lanes, S::concurrency(config), |job| {
        let (transport, world) = (transport.clone(), world.clone());
        async move { play_traced::<S>(transport.as_ref(), &world, job).await }
    }));
    while let Some(record) = finished.next().await {
        on_record(record.map_err(RunError::Runtime)?);
    }
    Ok(())
}

/// Plays `job` as [`Play::play`] does, within its conversation's span (the root of its trace,
/// when spans are exported), which records how it ended.
pub async fn play_traced<S: Play>(
    transport: &dyn Transport,
    world: &S::World,
    job: S::Job,
) -> Result<S::Record, String> {
    use tracing::Instrument;
    let span = sage_ports::telemetry::genai::conversation_span(
        S::NAME,
        S::job_run(&job),
        S::job_id(&job),
        S::job_agent(&job),
    );
    let played = S::play(transport, world, job)
        .instrument(span.clone())
        .await;
    let (turns, infra_error) = played.as_ref().map_or((0, true), S::tally);
    sage_ports::telemetry::genai::record_conversation(&span, turns, infra_error);
    played
}

/// What a stored run of `S` holds so far: the jobs done and the results folded from them.
pub struct Stored<S: Play> {
    /// The jobs with a record.
    pub jobs: JobSet,
    /// The scores and the page of the records.
    pub results: Results<S>,
}

impl<S: Play> Stored<S> {
    /// Reads the records of `run` once, to resume it (folded as read): each must be of `jobs`
    /// and of the run `run_id` ([`RunDir::resume_records`]); a job stored twice counts once.
    pub fn read(run: &RunDir, jobs: &[S::Job], run_id: &str) -> Result<Stored<S>, RunError> {
        let mut set = JobSet::of(jobs, |j| S::job_id(j));
        let mut results = Results::new(run);
        run.resume_records(S::RECORDS, &mut set, run_id, |at, Of::<S>(record)| {
            results.add(&record, at)
        })?;
        Ok(Stored { jobs: set, results })
    }
}

/// Reads the records of `run` once for a report, each as read to `add` with the offset of its
/// line: a record not of the run (`jobs`) or repeating a dialogue id is left out, and noted.
/// How many were added, and those left out.
pub fn read_for_report<S: Play>(
    run: &RunDir,
    jobs: &sage_ports::store::RunJobs,
    mut add: impl FnMut(&S::Record, u64),
) -> Result<(usize, sage_ports::store::Screened), sage_ports::store::StoreError> {
    let (mut added, mut screened) = (0, sage_ports::store::Screened::default());
    run.scan_jsonl_at(S::RECORDS, |at, record: Of<S>| {
        if screened.admit(jobs, &record) {
            add(&record.0, at);
            added += 1;
        }
        Ok::<(), sage_ports::store::StoreError>(())
    })?;
    Ok((added, screened))
}

/// A record of `S` as the store reads it back.
pub(crate) struct Of<S: Suite>(pub(crate) S::Record);

impl<'de, S: Suite> serde::Deserialize<'de> for Of<S> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        S::Record::deserialize(d).map(Of)
    }
}

impl<S: Suite> HasJob for Of<S> {
    fn ids(&self) -> (&str, &str) {
        let job = S::record_job(&self.0);
        (S::job_run(job), S::job_id(job))
    }
    fn check(&self, jobs: &JobSet) -> Result<(), sage_core::plan::Foreign> {
        let job = S::record_job(&self.0);
        jobs.check(S::job_id(job), job)
    }
}

/// Plays `todo` (the jobs of a run not yet among the `stored`) as [`run_embedded`] does, storing
/// each record in `run`'s records file as it finishes and folding it into `stored`; `progress`
/// advances by one a conversation. A record that cannot be written does not stop the
/// conversations in flight: the run fails with that error once they have finished (what was
/// written stays, for a resume). Must run inside an actix `System`.
pub async fn run_stored<S: Play>(
    config: &S::Config,
    world: Arc<S::World>,
    todo: Vec<S::Job>,
    run: &RunDir,
    stored: &mut Stored<S>,
    progress: Option<&indicatif::ProgressBar>,
) -> Result<(), RunError> {
    let mut writer = run.jsonl_writer(S::RECORDS)?;
    let mut failed = None;
    run_embedded::<S>(config, world, todo, |record| {
        match writer.append(&record) {
            Ok(at) => stored.results.add(&record, at),
            Err(e) => {
                failed.get_or_insert(e);
                S::fold(&mut stored.results.fold, &record);
            }
        }
        stored.jobs.mark_done(S::job_id(S::record_job(&record)));
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
