//! `sage aggregator`: the durable consumer of the records stream. Each record is appended to
//! `<out>/<run-id>/dialogues.jsonl` (checked to be one of the run's jobs) and folded into the
//! run's report, and acked only then; a second completed attempt of a dialogue already stored
//! (a job played twice after a worker died before its ack) is acked and dropped. When a run has
//! every dialogue, its summary.json and leaderboard.md are written from the fold (the same code
//! as the embedded mode) and its status turns complete. A complete run is let go after
//! [`RUN_IDLE`] without records, so the aggregator's memory follows the runs in progress.

use super::{
    CONTROL_HEADER, ClusterError, Control, ControlRequest, LiveModel, ResumeRequest, RunSpec,
    RunState, RunStatus, get_json, put_json, status_key,
};
use async_nats::jetstream::{self, AckKind, kv};
use futures::StreamExt;
use sage_core::plan::JobSet;
use sage_core::protocol::DialogueRecord;
use sage_ports::store::{DialogueWriter, RunDir, now_utc};
use sage_ports::telemetry::{Health, metrics};
use sage_ports::transport::nats::{Broker, header, records_subject};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Deliveries of a record whose run cannot be loaded before it is dropped (as for jobs).
const MAX_DELIVERIES: i64 = 5;

/// How long a complete run is kept open without a record before its folder is let go (a later
/// record opens it again).
const RUN_IDLE: Duration = Duration::from_secs(600);

/// How often a running run's status is written to the bucket.
const STATUS_EVERY: Duration = Duration::from_millis(500);

/// How often a running status's live standings (each model's OA so far) are folded: a summary
/// with its intervals costs more than a count, so not at every status.
const LIVE_EVERY: Duration = Duration::from_secs(2);

/// One run's results folder as the aggregator keeps it.
struct RunFolder {
    /// The folder: claimed while the run is in progress, let go (its `.lock` removed) once it
    /// completes, claimed again should a record come after.
    dir: RunDir,
    /// The records file's writer, while the folder is claimed.
    writer: Option<DialogueWriter>,
    /// The records file's name.
    records: &'static str,
    /// The run's jobs (only their records are stored), and which are stored.
    jobs: JobSet,
    /// The run's report, folded as records are stored.
    report: Report,
    /// When a record last came.
    last_record: Instant,
    status: RunStatus,
    status_written: Instant,
    /// The status changed since it was last written.
    dirty: bool,
    /// Once its budgets stop it: how far the dialogues it had in flight are stored.
    drain: Drain,
    /// When this aggregator took the run, and its records stored then (for the ETA).
    taken: (Instant, usize),
    /// When the status's live standings were last folded ([`LIVE_EVERY`]).
    live_at: Option<Instant>,
}

/// How far a run its budgets stopped (not every dialogue stored, none more to start) is in
/// storing the dialogues that were in flight when they did. It is complete only then, so that
/// what `sage sweep --follow` prints at the end and the summary are the run's final numbers.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
enum Drain {
    /// Some of its jobs may still be queued or playing (a job leaves the work queue once its
    /// record is in the records stream, or once a worker dropped it unplayed).
    #[default]
    Jobs,
    /// None of its jobs is left; every record on the records stream up to this sequence must
    /// be handled (acked) by this aggregator.
    Records(u64),
    /// Every dialogue it started is stored.
    Done,
}

impl RunFolder {
    /// Whether its budgets stopped it: dialogues not stored, and none more will start.
    fn stopped(&self) -> bool {
        self.status.stored < self.status.jobs && self.status.ended()
    }
}

/// The aggregator's state: the folders of the runs it has seen.
struct Collector {
    out: PathBuf,
    broker: Broker,
    bucket: kv::Store,
    runs: HashMap<String, RunFolder>,
}

impl Collector {
    /// The folder of `run`, opened (or created from the run's manifest) on first use.
    async fn folder(&mut self, run: &str) -> Result<&mut RunFolder, ClusterError> {
        if !self.runs.contains_key(run) {
            let spec = RunSpec::get(&self.bucket, run).await?;
            if spec.run_id() != run {
                return Err(ClusterError::Invalid(format!(
                    "the bucket's manifest.{run} is of run `{}`",
                    spec.run_id()
                )));
            }
            let jobs = spec.job_set()?;
            let dir = self.run_dir(run, &spec)?.claim()?;
            let records = spec.records_file();
            let mut status = get_json::<RunStatus>(&self.bucket, &status_key(run))
                .await?
                .unwrap_or_else(|| RunStatus::submitted(run, spec.jobs(), spec.created_at()));
            // Counted again from the folder (the folder is the truth after a restart).
            status.stored = 0;
            status.turns = 0;
            status.infra_errors = 0;
            // The folder read once, as `sage run` resumes it (store::RunDir::resume_records):
            // every record of the run's jobs counted and folded; a line that does not parse or
            // a record not of this run is an error naming the file and the line (the records
            // wait, redelivered, until the folder is mended), never skipped unseen.
            let mut jobs = jobs;
            let mut report = Report::new(&spec, &dir);
            // A line written twice (a record stored, then redelivered before its ack) counts
            // once: the report's fold tells.
            let mut add = |at: u64, record: Record| {
                if report.add(&record, at) {
                    count(&mut status, &record);
                }
            };
            match &spec {
                RunSpec::Sage { .. } => {
                    dir.resume_records(records, &mut jobs, run, |at, r: DialogueRecord| {
                        add(at, Record::Sage(Box::new(r)))
                    })?
                }
                RunSpec::Suite(_) => {
                    let Report::Suite(fold) = &mut report else {
                        unreachable!("a suite's report")
                    };
                    fold.resume(&dir, &mut jobs, run, &mut |r| tally(&mut status, r.tally()))?
                }
            }
            status.results = Some(dir.path().display().to_string());
            status.budget = report.budget();
            status.adaptive = report.adaptive();
            let writer = dir.jsonl_writer(records)?;
            tracing::info!(run, stored = status.stored, jobs = status.jobs, folder = %dir.path().display(), "collecting run");
            let taken = (Instant::now(), status.stored);
            self.runs.insert(
                run.to_string(),
                RunFolder {
                    dir,
                    writer: Some(writer),
                    records,
                    jobs,
                    report,
                    last_record: Instant::now(),
                    status,
                    status_written: Instant::now(),
                    dirty: true,
                    drain: Drain::Jobs,
                    taken,
                    live_at: None,
                },
            );
        }
        Ok(self.runs.get_mut(run).expect("inserted above"))
    }

    /// The results folder of a run: `<out>/<run>`, or `<out>/<run>-2`, `-3`, ... when that
    /// holds another run of the same id (a run id reused after the broker's store was reset).
    fn run_dir(&self, run: &str, spec: &RunSpec) -> Result<RunDir, ClusterError> {
        for n in 1.. {
            let name = if n == 1 {
                run.to_string()
            } else {
                format!("{run}-{n}")
            };
            let path = self.out.join(&name);
            let fresh =
                !path.join("manifest.json").exists() && !path.join(spec.records_file()).exists();
            if fresh {
                // New, or left without a record by a crash before its manifest was written.
                let dir = RunDir::create(&self.out, &name)?;
                match spec {
                    RunSpec::Sage { manifest, .. } => dir.write_manifest(manifest)?,
                    RunSpec::Suite(hosted) => {
                        let manifest = hosted.0.manifest().map_err(|e| {
                            ClusterError::Invalid(format!("run {run}: its manifest: {e}"))
                        })?;
                        dir.write_json("manifest.json", &manifest)?
                    }
                }
                return Ok(dir);
            }
            let dir = RunDir::open(&path)?;
            let same = dir
                .read_json::<ManifestHead>("manifest.json")
                .ok()
                .is_some_and(|m| m == ManifestHead::of(spec));
            if same {
                return Ok(dir);
            }
            tracing::warn!(run, folder = %path.display(), "the folder holds another run of this id");
        }
        unreachable!("some folder name is free")
    }

    /// Stores a record (its JSON as sent) unless its dialogue is already stored or it is no job
    /// of its run; true when stored.
    async fn store(&mut self, run: &str, json: &[u8]) -> Result<bool, ClusterError> {
        let bucket = self.bucket.clone();
        let folder = self.folder(run).await?;
        let record = match folder.report.parse(json) {
            Ok(record) => record,
            Err(e) => {
                let error: String = e.to_string().chars().take(300).collect();
                tracing::error!(run, %error, "undecodable record dropped");
                metrics()
                    .messages_rejected
                    .with_label_values(&["record", "invalid"])
                    .inc();
                return Ok(false);
            }
        };
        if let Err(foreign) = record.check(&folder.jobs) {
            // Forged, or another configuration's: storing it would count it in this run.
            tracing::error!(run, error = %foreign, "record rejected: not one of the run's jobs");
            metrics()
                .messages_rejected
                .with_label_values(&["record", "foreign"])
                .inc();
            return Ok(false);
        }
        folder.last_record = Instant::now();
        if folder.jobs.is_done(record.ids().1) {
            metrics().records_duplicate.inc();
            // A record stored just before a crash comes again: its run may be complete but
            // not yet summarized.
            finish(&bucket, run, folder).await?;
            return Ok(false);
        }
        let writer = match &mut folder.writer {
            Some(writer) => writer,
            None => {
                folder.dir = folder.dir.clone().claim()?;
                let records = folder.records;
                folder.writer.insert(folder.dir.jsonl_writer(records)?)
            }
        };
        let at = writer.append_json(json)?;
        folder.jobs.mark_done(record.ids().1);
        count(&mut folder.status, &record);
        if folder.status.ended() {
            crash_point("after-last-append");
        }
        folder.report.add(&record, at);
        folder.dirty = true;
        metrics().records_stored.inc();
        if folder.status.state == RunState::Submitted {
            folder.status.state = RunState::Running;
        }
        // A budget just reached, or a model just decided, is told to the workers at once.
        let kept = |s: &RunStatus| {
            let budget = (s.budget.as_ref())
                .map(|b| (b.reached, b.models.values().filter(|m| m.reached).count()));
            (budget, s.adaptive.as_ref().map(|a| a.decided()))
        };
        let before = kept(&folder.status);
        folder.status.budget = folder.report.budget();
        folder.status.adaptive = folder.report.adaptive();
        let news = before != kept(&folder.status);
        settle(run, folder)?;
        // Other news is written when due, after each message (`flush_status`).
        if folder.status.state.over() || news {
            write_status(&bucket, folder).await;
        }
        Ok(true)
    }

    /// Pauses, unpauses or cancels a run that has not ended (`sage sweep --pause|--unpause|
    /// --cancel`): its status says so at once, and the workers watching it obey.
    async fn control(&mut self, request: &ControlRequest) -> Result<(), ClusterError> {
        let run = request.run_id.as_str();
        let bucket = self.bucket.clone();
        let folder = self.folder(run).await?;
        if folder.status.state.over() {
            tracing::warn!(run, "a control request for a run that has ended dropped");
            return Ok(());
        }
        tracing::info!(run, control = ?request.control, "run control");
        folder.status.control = request.control;
        settle(run, folder)?;
        write_status(&bucket, folder).await;
        Ok(())
    }

    /// Resumes a run its budgets stopped or that was cancelled (`sage sweep --resume`): its
    /// folder is read again with the budgets of its spec now in the bucket (a SAGE run's
    /// manifest.json rewritten with them), its status written (not complete unless those
    /// budgets still keep the rest from starting), and its jobs not stored queued again, marked
    /// with the resume's number.
    async fn resume(&mut self, request: &ResumeRequest) -> Result<(), ClusterError> {
        let run = request.run_id.as_str();
        let spec = RunSpec::get(&self.bucket, run).await?;
        let (bucket, broker) = (self.bucket.clone(), self.broker.clone());
        self.runs.remove(run);
        let folder = self.folder(run).await?;
        if folder.status.resumes > request.resume {
            tracing::warn!(
                run,
                resume = request.resume,
                "a stale resume request dropped"
            );
            return Ok(());
        }
        if let RunSpec::Sage { manifest, .. } = &spec {
            folder.dir.write_manifest(manifest)?;
        }
        folder.drain = Drain::Jobs;
        folder.status.resumes = request.resume;
        // A cancelled run resumed plays on.
        folder.status.control = None;
        folder.status.state = if folder.status.stored > 0 {
            RunState::Running
        } else {
            RunState::Submitted
        };
        folder.status.leaderboard = None;
        folder.status.report = None;
        folder.status.unmeasured.clear();
        settle(run, folder)?;
        // Written before the jobs are queued: a worker that takes one sees the new budgets.
        folder.status.updated_at = now_utc().0;
        put_json(&bucket, &status_key(run), &folder.status).await?;
        folder.status_written = Instant::now();
        folder.dirty = false;
        if folder.status.ended() {
            tracing::info!(
                run,
                "resumed, but its budgets or decisions still keep the rest from starting"
            );
            return Ok(());
        }
        let queued = spec
            .queue_jobs(&broker, Some(&folder.jobs), Some(request.resume))
            .await?;
        tracing::info!(run, resume = request.resume, queued, "run resumed");
        Ok(())
    }

    /// Finishes every run of the bucket not yet complete whose records in `out` are: one the
    /// aggregator was stopped on after storing its last record and before summarizing it (no
    /// record of it may come again).
    async fn finish_stored_runs(&mut self, broker: &Broker) -> Result<(), ClusterError> {
        let all = super::submit::all_status(broker).await?;
        for status in all.runs {
            let run = status.run_id.as_str();
            if status.state.over() || !self.out.join(run).join("manifest.json").exists() {
                continue;
            }
            // One run that cannot be loaded or written leaves the others to be finished.
            let bucket = self.bucket.clone();
            let finished = async {
                let folder = self.folder(run).await?;
                if folder.status.ended() {
                    tracing::info!(run, "a run stored whole before a restart is finished now");
                    finish(&bucket, run, folder).await?;
                }
                Ok::<(), ClusterError>(())
            }
            .await;
            if let Err(e) = finished {
                tracing::warn!(run, error = %e, "cannot finish a run stored before a restart");
            }
        }
        Ok(())
    }

    /// Completes the runs their budgets stopped whose dialogues in flight are all stored (see
    /// [`Drain`]): first none of a run's jobs left in the work queue, then every record
    /// published by then handled (the records consumer's ack floor past the records stream's
    /// last sequence at that moment). A broker that does not answer leaves them for next time.
    async fn settle_stopped(&mut self, records: &jetstream::consumer::PullConsumer) {
        for (run, folder) in &mut self.runs {
            if folder.status.state.over() || !folder.stopped() {
                continue;
            }
            if folder.drain == Drain::Jobs {
                match drain_mark(&self.broker, run).await {
                    Ok(Some(last)) => folder.drain = Drain::Records(last),
                    Ok(None) => continue,
                    Err(error) => {
                        tracing::debug!(run, %error, "cannot tell whether the run has jobs left");
                        continue;
                    }
                }
            }
            if let Drain::Records(last) = folder.drain {
                let acked = sage_ports::transport::nats::bounded(
                    "reading the aggregator consumer",
                    records.get_info(),
                )
                .await
                .map(|i| i.ack_floor.stream_sequence);
                match acked {
                    Ok(acked) if acked >= last => folder.drain = Drain::Done,
                    Ok(_) => continue,
                    Err(e) => {
                        tracing::debug!(run, error = %e, "cannot read the aggregator consumer");
                        continue;
                    }
                }
            }
            if let Err(e) = finish(&self.bucket, run, folder).await {
                tracing::warn!(run, error = %e, "cannot summarize the run");
            }
        }
    }

    /// Lets go of the complete runs that had no record for [`RUN_IDLE`] (their status written).
    fn let_go_idle(&mut self) {
        self.runs.retain(|run, folder| {
            let keep = folder.dirty
                || !folder.status.state.over()
                || folder.last_record.elapsed() < RUN_IDLE;
            if !keep {
                tracing::info!(run, "complete run let go");
                let models = folder.status.models.iter().map(|m| m.model.as_str());
                metrics().forget_standings(run, models);
            }
            keep
        });
    }

    /// Writes every status with news (`due`: only those last written [`STATUS_EVERY`] ago or
    /// more, so that a status keeps up while records keep coming, even ones that cannot be
    /// stored).
    async fn flush_status(&mut self, due: bool) {
        for folder in self.runs.values_mut() {
            if folder.dirty && (!due || folder.status_written.elapsed() >= STATUS_EVERY) {
                // The standings with the periodic writes only: a budget's news is written at
                // once, without waiting for a summary to be folded.
                live(folder);
                write_status(&self.bucket, folder).await;
            }
        }
    }
}

/// Once a run has ended (every dialogue stored, or its budgets keep the rest from starting and
/// the dialogues in flight then are stored, see [`Drain`]),
/// writes its summary files from the fold and turns it complete (written again should a
/// record come after).
fn settle(run: &str, folder: &mut RunFolder) -> Result<(), ClusterError> {
    if !folder.status.ended() || (folder.stopped() && folder.drain != Drain::Done) {
        return Ok(());
    }
    let (table, html, unmeasured) = folder.report.write(&folder.dir)?;
    if !folder.status.state.over() {
        let (stored, jobs) = (folder.status.stored, folder.status.jobs);
        if stored < jobs && folder.status.control == Some(Control::Cancelled) {
            tracing::info!(run, stored, jobs, folder = %folder.dir.path().display(), "run cancelled");
        } else if stored < jobs
            && folder
                .status
                .budget
                .as_ref()
                .is_none_or(|b| !b.stops_the_rest())
        {
            tracing::info!(run, stored, jobs, folder = %folder.dir.path().display(), "adaptive run decided: every model's place against the top K is sure");
        } else if stored < jobs {
            tracing::info!(run, stored, jobs, folder = %folder.dir.path().display(), "run stopped by its cost budget");
        } else {
            tracing::info!(run, folder = %folder.dir.path().display(), "run complete");
        }
    }
    for problem in &unmeasured {
        tracing::error!(run, %problem, "the run could not measure");
    }
    let cancelled = folder.status.control == Some(Control::Cancelled);
    folder.status.state = if cancelled && folder.status.stored < folder.status.jobs {
        RunState::Cancelled
    } else {
        RunState::Complete
    };
    folder.status.unmeasured = unmeasured;
    folder.status.leaderboard = Some(table);
    // The final standings: the summary's numbers.
    folder.live_at = None;
    live(folder);
    folder.status.report = html.map(|p| p.display().to_string());
    // A finished folder is let go: no `.lock` left in it.
    folder.writer = None;
    folder.dir = folder.dir.clone().release();
    Ok(())
}

/// When none of `run`'s jobs is left in the work queue: the records stream's last sequence
/// (every record of the run is at or before it); `None` while some job is left.
async fn drain_mark(broker: &Broker, run: &str) -> Result<Option<u64>, String> {
    use jetstream::stream::LastRawMessageErrorKind;
    let wait = sage_ports::transport::nats::BROKER_WAIT;
    let jobs = broker.jobs_stream().await.map_err(|e| e.to_string())?;
    let subject = sage_ports::transport::nats::jobs_subject(run);
    match tokio::time::timeout(wait, jobs.get_last_raw_message_by_subject(&subject)).await {
        Ok(Ok(_)) => return Ok(None),
        Ok(Err(e)) if e.kind() == LastRawMessageErrorKind::NoMessageFound => {}
        Ok(Err(e)) => return Err(e.to_string()),
        Err(_) => return Err(format!("the broker did not answer within {wait:?}")),
    }
    let mut records = broker.records_stream().await.map_err(|e| e.to_string())?;
    sage_ports::transport::nats::bounded("reading the records stream", records.info())
        .await
        .map(|info| Some(info.state.last_sequence))
        .map_err(|e| e.to_string())
}

/// Summarizes a run that has ended but is not complete yet (see [`settle`]), its folder
/// claimed, and writes its status; nothing for a run in progress or already complete.
async fn finish(bucket: &kv::Store, run: &str, folder: &mut RunFolder) -> Result<(), ClusterError> {
    if folder.status.state.over() || !folder.status.ended() {
        return Ok(());
    }
    folder.dir = folder.dir.clone().claim()?;
    settle(run, folder)?;
    write_status(bucket, folder).await;
    Ok(())
}

/// A test hook: with `SAGE_CRASH_AT` set to `name`, the process exits at once (status 137, as
/// if killed: nothing flushed, nothing acked). `after-last-append`: right after the aggregator
/// stores the record that completes a run, before the run is summarized (tests/distributed.rs).
fn crash_point(name: &str) {
    if std::env::var("SAGE_CRASH_AT").is_ok_and(|at| at == name) {
        tracing::warn!(at = name, "SAGE_CRASH_AT: exiting as if killed");
        std::process::exit(137);
    }
}

/// A run's report as the aggregator folds it.
enum Report {
    Sage(Box<sage_ports::store::SageFold>),
    Suite(Box<dyn super::hosted::HostedFold>),
}

impl Report {
    fn new(spec: &RunSpec, dir: &RunDir) -> Report {
        match spec {
            RunSpec::Sage { manifest, .. } => {
                // The HTML report's graphs need the compiled scenarios; should they not
                // compile here, it is written without its graphs.
                let sops = spec.sops().unwrap_or_default();
                Report::Sage(Box::new(
                    sage_ports::store::SageFold::new(&manifest.config, manifest.jobs)
                        .with_html(manifest, sops),
                ))
            }
            RunSpec::Suite(run) => Report::Suite(run.0.fold(dir)),
        }
    }

    /// Reads a record of the run (its JSON as sent).
    fn parse(&self, json: &[u8]) -> Result<Record, serde_json::Error> {
        match self {
            Report::Sage(_) => Ok(Record::Sage(serde_json::from_slice(json)?)),
            Report::Suite(fold) => Ok(Record::Suite(fold.parse(json)?)),
        }
    }

    /// The `budget` section of what is folded (a SAGE run with a budget).
    fn budget(&self) -> Option<sage_core::scoring::budget::BudgetSummary> {
        match self {
            Report::Sage(fold) => fold.budget(),
            Report::Suite(_) => None,
        }
    }

    /// The `adaptive` section of what is folded (an adaptive SAGE run).
    fn adaptive(&self) -> Option<sage_core::scoring::adaptive::AdaptiveSummary> {
        match self {
            Report::Sage(fold) => fold.adaptive(),
            Report::Suite(_) => None,
        }
    }

    /// Folds a record whose line starts at byte `at` of the folder's records file; false when
    /// the fold already had its dialogue (or it is of the other suite).
    fn add(&mut self, record: &Record, at: u64) -> bool {
        match (self, record) {
            (Report::Sage(fold), Record::Sage(r)) => fold.add(r, at),
            (Report::Suite(fold), Record::Suite(r)) => {
                fold.add(r.as_ref(), at);
                true
            }
            _ => false,
        }
    }

    /// Writes the run's summary files and its report.html (atomically, the folder claimed):
    /// the terminal table, and report.html's path when it was written; folded as the records
    /// came.
    fn write(
        &mut self,
        dir: &RunDir,
    ) -> Result<(String, Option<PathBuf>, Vec<String>), ClusterError> {
        Ok(match self {
            Report::Sage(fold) => {
                let reported = fold.write(dir)?;
                let unmeasured = reported.unmeasured();
                (reported.table, reported.html, unmeasured)
            }
            Report::Suite(fold) => {
                let (table, html) = fold.write(dir)?;
                (table, html, Vec::new())
            }
        })
    }
}

/// A record, read whole (its ids checked where they are decoded).
pub enum Record {
    /// A SAGE dialogue.
    Sage(Box<sage_core::protocol::DialogueRecord>),
    /// A record of a suite on the one lifecycle.
    Suite(Box<dyn super::hosted::HostedRecord>),
}

impl Record {
    /// Reads a record of a run of the suite `suite` (its JSON as sent).
    pub fn parse(suite: &str, json: &[u8]) -> Result<Record, serde_json::Error> {
        match super::suites::reader(suite) {
            Some(read) => Ok(Record::Suite(read(json)?)),
            None => Ok(Record::Sage(serde_json::from_slice(json)?)),
        }
    }

    fn record(&self) -> &dyn sage_ports::store::HasJob {
        match self {
            Record::Sage(r) => r.as_ref(),
            Record::Suite(r) => r.as_ref(),
        }
    }

    /// `(run id, dialogue id)`.
    pub fn ids(&self) -> (&str, &str) {
        self.record().ids()
    }

    /// Whether it is of one of the run's jobs (the job exactly as planned).
    fn check(&self, jobs: &JobSet) -> Result<(), sage_core::plan::Foreign> {
        self.record().check(jobs)
    }

    /// Its turns, and whether an infrastructure error touched it
    /// ([`sage_core::protocol::DialogueRecord::had_infra_error`]).
    pub fn counts(&self) -> (usize, bool) {
        match self {
            Record::Sage(r) => (r.turns.len(), r.had_infra_error()),
            Record::Suite(r) => r.tally(),
        }
    }
}

/// Counts a stored dialogue: its turns, and whether an infrastructure error touched it.
pub fn count(status: &mut RunStatus, record: &Record) {
    tally(status, record.counts());
}

/// Counts a stored dialogue of `turns`, touched by an infrastructure error or not.
fn tally(status: &mut RunStatus, (turns, infra_error): (usize, bool)) {
    status.stored += 1;
    // A record's turn count comes from outside: a wrong one must not wrap the run's count.
    status.turns = status.turns.saturating_add(turns);
    if infra_error {
        status.infra_errors += 1;
    }
}

/// What the aggregator reads of a record before it knows the run: its ids (checked).
#[derive(serde::Deserialize)]
pub struct RecordHead {
    job: JobHead,
}

impl RecordHead {
    /// The run it names.
    pub fn run_id(&self) -> &str {
        &self.job.run_id
    }
}

#[derive(serde::Deserialize)]
struct JobHead {
    #[serde(deserialize_with = "sage_core::protocol::id::run_id")]
    run_id: String,
    #[serde(deserialize_with = "sage_core::protocol::id::dialogue_id")]
    #[allow(dead_code)]
    dialogue_id: String,
}

/// What the aggregator compares of a folder's manifest with a run's spec: id, creation time
/// and the scenarios' (or the store's) hashes (field by field: a float of the configuration may
/// not survive a JSON round trip exactly).
#[derive(serde::Deserialize, PartialEq)]
struct ManifestHead {
    run_id: String,
    created_at: String,
    #[serde(default)]
    scenarios: Option<Vec<(String, String)>>,
    #[serde(default, alias = "store_sha256")]
    inputs_sha256: Vec<String>,
}

impl ManifestHead {
    fn of(spec: &RunSpec) -> ManifestHead {
        let (scenarios, inputs_sha256) = match spec {
            RunSpec::Sage { manifest, .. } => (Some(manifest.scenarios.clone()), Vec::new()),
            RunSpec::Suite(run) => (None, run.0.inputs_sha256().to_vec()),
        };
        ManifestHead {
            run_id: spec.run_id().to_string(),
            created_at: spec.created_at().to_string(),
            scenarios,
            inputs_sha256,
        }
    }
}

async fn write_status(bucket: &kv::Store, folder: &mut RunFolder) {
    folder.status.updated_at = now_utc().0;
    match put_json(bucket, &status_key(&folder.status.run_id), &folder.status).await {
        Ok(()) => {
            folder.status_written = Instant::now();
            folder.dirty = false;
        }
        Err(e) => tracing::warn!(error = %e, "cannot write the run status"),
    }
}

/// Folds a SAGE run's live standings into its status (each model's OA so far, the cost and the
/// ETA), at most every [`LIVE_EVERY`] while it runs and once when it completes.
fn live(folder: &mut RunFolder) {
    let complete = folder.status.state.over();
    if !complete && folder.live_at.is_some_and(|t| t.elapsed() < LIVE_EVERY) {
        return;
    }
    let Report::Sage(fold) = &folder.report else {
        return;
    };
    let summary = fold.summary();
    folder.status.models = LiveModel::of(&summary);
    let standings: Vec<_> = (folder.status.models.iter())
        .map(|m| sage_ports::telemetry::metrics::ModelStanding {
            model: &m.model,
            dialogues: m.dialogues,
            oa: m.oa.map(|o| (o.mean, o.ci_high - o.ci_low)),
        })
        .collect();
    metrics().standings(
        &folder.status.run_id,
        &standings,
        folder.status.adaptive.as_ref(),
    );
    let cost: f64 = summary.calls_by_model.values().map(|c| c.cost_usd).sum();
    folder.status.cost_usd = if cost.is_finite() { cost } else { 0.0 };
    let (since, before) = folder.taken;
    let done = folder.status.stored.saturating_sub(before);
    let left = folder.status.jobs.saturating_sub(folder.status.stored);
    folder.status.eta_secs = (done >= 2 && !complete && left > 0)
        .then(|| left as f64 * since.elapsed().as_secs_f64() / done as f64);
    folder.live_at = Some(Instant::now());
}

/// Consumes records into `out` until `stop` turns true.
pub async fn run_aggregator(
    broker: Broker,
    out: PathBuf,
    health: Arc<Health>,
    stop: watch::Receiver<bool>,
) -> Result<u64, ClusterError> {
    let mut stop =
        sage_ports::transport::nats::stop_when_gone(broker.client.clone(), health.clone(), stop);
    std::fs::create_dir_all(&out).map_err(|error| sage_ports::store::StoreError::Io {
        path: out.clone(),
        error,
    })?;
    let consumer = broker.records_consumer().await?;
    let mut collector = Collector {
        out,
        broker: broker.clone(),
        bucket: broker.runs().await?,
        runs: HashMap::new(),
    };
    {
        let client = broker.client.clone();
        health.watch(move || client.connection_state() == async_nats::connection::State::Connected);
    }
    health.unready_on(stop.clone());
    if let Err(e) = collector.finish_stored_runs(&broker).await {
        // Not fatal: a redelivered record of such a run finishes it too.
        tracing::warn!(error = %e, "cannot look for runs stored whole before a restart");
    }
    metrics().collecting();
    health.set_ready(true);
    tracing::info!("aggregator ready");
    let mut stored = 0;
    let mut last_sweep = Instant::now();
    let mut last_drain = Instant::now();
    'consume: while !*stop.borrow() {
        let mut messages = match consumer.messages().await {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(error = %e, "cannot consume records; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        loop {
            if last_drain.elapsed() >= STATUS_EVERY {
                collector.settle_stopped(&consumer).await;
                last_drain = Instant::now();
            }
            let next = tokio::select! {
                m = tokio::time::timeout(STATUS_EVERY, messages.next()) => m,
                _ = stop.wait_for(|s| *s) => break 'consume,
            };
            let message = match next {
                Err(_) => {
                    collector.flush_status(false).await;
                    collector.let_go_idle();
                    continue;
                }
                Ok(None) => break,
                Ok(Some(Err(e))) => {
                    tracing::debug!(error = %e, "records consumer status");
                    continue;
                }
                Ok(Some(Ok(m))) => m,
            };
            let delivered = super::deliveries(&message, "aggregator");
            let handled = handle(&mut collector, &message).await;
            collector.flush_status(true).await;
            match handled {
                Ok(true) => stored += 1,
                Ok(false) => {}
                // Its run does not exist (or cannot be read by this version): no retry will
                // store it.
                Err(e)
                    if e.is_permanent()
                        && super::give_up_after(&message, delivered, MAX_DELIVERIES).await =>
                {
                    tracing::error!(subject = %message.subject, delivered, error = %e, "record of a run that cannot be loaded dropped");
                    metrics()
                        .messages_rejected
                        .with_label_values(&["record", "unknown_run"])
                        .inc();
                    continue;
                }
                Err(e) => {
                    // Not stored: it comes back after a while (the manifest may not be readable
                    // yet, or the disk is full); a run that cannot be loaded is asked for again
                    // sooner, so it is given up after its five deliveries in seconds.
                    tracing::error!(subject = %message.subject, error = %e, "cannot store a record");
                    let delay = Duration::from_secs(if e.is_permanent() { 1 } else { 5 });
                    let _ = message.ack_with(AckKind::Nak(Some(delay))).await;
                    continue;
                }
            }
            if last_sweep.elapsed() >= Duration::from_secs(30) {
                collector.let_go_idle();
                last_sweep = Instant::now();
            }
            if let Err(e) = message.ack().await {
                tracing::debug!(error = %e, "record ack lost; a redelivery will be dropped as a duplicate");
            }
        }
    }
    health.set_ready(false);
    collector.flush_status(false).await;
    if !health.is_live() {
        return Err(sage_ports::transport::nats::NatsError::ClientGone.into());
    }
    Ok(stored)
}

async fn handle(
    collector: &mut Collector,
    message: &jetstream::Message,
) -> Result<bool, ClusterError> {
    let rejected = |reason: &str| {
        metrics()
            .messages_rejected
            .with_label_values(&["record", reason])
            .inc()
    };
    // A request to the aggregator on a run's records subject: read, checked to be on its
    // run's subject, then handled (and acked: never stored).
    fn request<T: serde::de::DeserializeOwned>(
        message: &jetstream::Message,
        kind: &str,
        run_of: fn(&T) -> &str,
        rejected: &dyn Fn(&str),
    ) -> Option<T> {
        let request: T = match serde_json::from_slice(&message.payload) {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(error = %e, kind, "undecodable request dropped");
                rejected("invalid");
                return None;
            }
        };
        let run = run_of(&request);
        if message.subject.as_str() != records_subject(run) {
            tracing::error!(run, kind, "request on another run's subject dropped");
            rejected("foreign");
            return None;
        }
        Some(request)
    }
    match header(message.headers.as_ref(), CONTROL_HEADER) {
        Some("control") => {
            let run_of: fn(&ControlRequest) -> &str = |r| &r.run_id;
            if let Some(request) = request(message, "control", run_of, &rejected) {
                collector.control(&request).await?;
            }
            return Ok(false);
        }
        Some("resume") => {
            let run_of: fn(&ResumeRequest) -> &str = |r| &r.run_id;
            if let Some(request) = request(message, "resume", run_of, &rejected) {
                collector.resume(&request).await?;
            }
            return Ok(false);
        }
        _ => {}
    }
    let head: RecordHead = match serde_json::from_slice(&message.payload) {
        Ok(r) => r,
        Err(e) => {
            let error: String = e.to_string().chars().take(300).collect();
            tracing::error!(subject = %message.subject.chars().take(200).collect::<String>(), %error, "undecodable record dropped");
            rejected("invalid");
            return Ok(false);
        }
    };
    if message.subject.as_str() != records_subject(&head.job.run_id) {
        tracing::error!(subject = %message.subject.chars().take(200).collect::<String>(), run = %head.job.run_id, "record of another run's subject dropped");
        rejected("foreign");
        return Ok(false);
    }
    collector.store(&head.job.run_id, &message.payload).await
}
