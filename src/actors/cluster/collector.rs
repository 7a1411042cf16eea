//! `sage aggregator`: the durable consumer of the records stream. Each record is appended to
//! `<out>/<run-id>/dialogues.jsonl` and acked only then; a second completed attempt of a
//! dialogue already stored (a job played twice after a worker died before its ack) is acked
//! and dropped. When a run has every dialogue, its summary.json and leaderboard.md are written
//! (the same code as the embedded mode, from the records in dialogue-id order) and its status
//! turns complete.

use super::{ClusterError, RunSpec, RunState, RunStatus, get_json, put_json, status_key};
use crate::protocol::DialogueEnd;
use crate::store::{DialogueWriter, RunDir, now_utc};
use crate::telemetry::{Health, metrics};
use crate::transport::nats::Broker;
use async_nats::jetstream::{self, AckKind, kv};
use futures::StreamExt;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// How often a running run's status is written to the bucket.
const STATUS_EVERY: Duration = Duration::from_millis(500);

/// One run's results folder as the aggregator keeps it.
struct RunFolder {
    dir: RunDir,
    writer: DialogueWriter,
    stored_ids: HashSet<String>,
    status: RunStatus,
    status_written: Instant,
    /// The status changed since it was last written.
    dirty: bool,
}

/// The aggregator's state: the folders of the runs it has seen.
struct Collector {
    out: PathBuf,
    bucket: kv::Store,
    runs: HashMap<String, RunFolder>,
}

impl Collector {
    /// The folder of `run`, opened (or created from the run's manifest) on first use.
    async fn folder(&mut self, run: &str) -> Result<&mut RunFolder, ClusterError> {
        if !self.runs.contains_key(run) {
            let spec = RunSpec::get(&self.bucket, run).await?;
            let dir = self.run_dir(run, &spec)?;
            let records = records_file(spec.is_desk());
            let mut status = get_json::<RunStatus>(&self.bucket, &status_key(run))
                .await?
                .unwrap_or_else(|| RunStatus::submitted(run, spec.jobs(), spec.created_at()));
            // Counted again from the folder (the folder is the truth after a restart).
            status.stored = 0;
            status.turns = 0;
            status.infra_errors = 0;
            let mut stored_ids = HashSet::new();
            dir.scan_jsonl(records, |r: RecordHead| {
                count(&mut status, &r);
                stored_ids.insert(r.job.dialogue_id);
            })?;
            status.results = Some(dir.path().display().to_string());
            let writer = dir.jsonl_writer(records)?;
            tracing::info!(run, stored = status.stored, jobs = status.jobs, folder = %dir.path().display(), "collecting run");
            self.runs.insert(
                run.to_string(),
                RunFolder {
                    dir,
                    writer,
                    stored_ids,
                    status,
                    status_written: Instant::now(),
                    dirty: true,
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
            let fresh = !path.join("manifest.json").exists()
                && !path.join(records_file(false)).exists()
                && !path.join(records_file(true)).exists();
            if fresh {
                // New, or left without a record by a crash before its manifest was written.
                let dir = RunDir::create(&self.out, &name)?;
                match spec {
                    RunSpec::Sage { manifest, .. } => dir.write_manifest(manifest)?,
                    RunSpec::SupportDesk { manifest, .. } => {
                        dir.write_json("manifest.json", manifest)?
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

    /// Stores a record (its JSON as sent, and the parts read from it) unless its dialogue is
    /// already stored; true when stored.
    async fn store(&mut self, head: RecordHead, json: &[u8]) -> Result<bool, ClusterError> {
        let run = head.job.run_id.clone();
        let bucket = self.bucket.clone();
        let folder = self.folder(&run).await?;
        if folder.stored_ids.contains(&head.job.dialogue_id) {
            metrics().records_duplicate.inc();
            return Ok(false);
        }
        folder.writer.append_json(json)?;
        count(&mut folder.status, &head);
        folder.stored_ids.insert(head.job.dialogue_id);
        folder.dirty = true;
        metrics().records_stored.inc();
        if folder.status.state == RunState::Submitted {
            folder.status.state = RunState::Running;
        }
        if folder.status.stored >= folder.status.jobs && folder.status.state != RunState::Complete {
            let table = crate::store::desk::report_any(&folder.dir)?;
            folder.status.state = RunState::Complete;
            folder.status.leaderboard = Some(table);
            tracing::info!(run, folder = %folder.dir.path().display(), "run complete");
        }
        if folder.status.state == RunState::Complete
            || folder.status_written.elapsed() >= STATUS_EVERY
        {
            write_status(&bucket, folder).await;
        }
        Ok(true)
    }

    /// Writes every status with news.
    async fn flush_status(&mut self) {
        for folder in self.runs.values_mut() {
            if folder.dirty {
                write_status(&self.bucket, folder).await;
            }
        }
    }
}

/// Counts a stored record in a run's status: one more dialogue, its turns, and whether any of
/// them hit an infrastructure error.
pub fn count(status: &mut RunStatus, head: &RecordHead) {
    status.stored += 1;
    // A record's turn count comes from outside: a wrong one must not wrap the run's count.
    status.turns = status.turns.saturating_add(head.turns());
    if head.infra_error() {
        status.infra_errors += 1;
    }
}

/// What the aggregator reads of a record (a line of dialogues.jsonl or desk.jsonl, as it comes
/// from the records stream or from the folder after a restart): the job's ids, the turns and
/// whether the dialogue hit an infrastructure error. The rest is stored as it came.
#[derive(Debug, serde::Deserialize)]
pub struct RecordHead {
    job: JobHead,
    turns: TurnsHead,
    /// How a SAGE dialogue ended.
    #[serde(default)]
    end: Option<DialogueEnd>,
    /// Why a support-desk conversation stopped early.
    #[serde(default)]
    infra_error: Option<serde::de::IgnoredAny>,
}

/// A dialogue's turns (their count, and whether any hit an infrastructure error), or a
/// conversation's turn count. Read without buffering the turns.
#[derive(Debug)]
struct TurnsHead {
    count: usize,
    infra_error: bool,
}

impl<'de> serde::Deserialize<'de> for TurnsHead {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = TurnsHead;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of turns or a number of turns")
            }
            fn visit_u64<E>(self, n: u64) -> Result<TurnsHead, E> {
                Ok(TurnsHead {
                    count: n as usize,
                    infra_error: false,
                })
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<TurnsHead, A::Error> {
                let mut head = TurnsHead {
                    count: 0,
                    infra_error: false,
                };
                while let Some(turn) = seq.next_element::<TurnHead>()? {
                    head.count += 1;
                    head.infra_error |= turn.infra_error.is_some();
                }
                Ok(head)
            }
        }
        d.deserialize_any(Visit)
    }
}

impl RecordHead {
    /// The run the record belongs to.
    pub fn run_id(&self) -> &str {
        &self.job.run_id
    }

    /// The record's dialogue id (`job.dialogue_id`).
    pub fn dialogue_id(&self) -> &str {
        &self.job.dialogue_id
    }

    /// The turns of the dialogue (a support-desk record gives their number).
    pub fn turns(&self) -> usize {
        self.turns.count
    }

    /// Whether the dialogue ended with, or had a turn with, an infrastructure error.
    pub fn infra_error(&self) -> bool {
        self.end == Some(DialogueEnd::InfraError)
            || self.infra_error.is_some()
            || self.turns.infra_error
    }
}

/// The records file of a run's folder.
fn records_file(desk: bool) -> &'static str {
    if desk {
        crate::store::desk::DESK_RECORDS
    } else {
        "dialogues.jsonl"
    }
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
    #[serde(default)]
    store_sha256: Option<(String, String)>,
}

impl ManifestHead {
    fn of(spec: &RunSpec) -> ManifestHead {
        let (scenarios, store_sha256) = match spec {
            RunSpec::Sage { manifest, .. } => (Some(manifest.scenarios.clone()), None),
            RunSpec::SupportDesk { manifest, .. } => (None, Some(manifest.store_sha256.clone())),
        };
        ManifestHead {
            run_id: spec.run_id().to_string(),
            created_at: spec.created_at().to_string(),
            scenarios,
            store_sha256,
        }
    }
}

#[derive(Debug, serde::Deserialize)]
struct TurnHead {
    #[serde(default)]
    infra_error: Option<serde::de::IgnoredAny>,
}

#[derive(Debug, serde::Deserialize)]
struct JobHead {
    run_id: String,
    dialogue_id: String,
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

/// Consumes records into `out` until `stop` turns true.
pub async fn run_aggregator(
    broker: Broker,
    out: PathBuf,
    health: Arc<Health>,
    mut stop: watch::Receiver<bool>,
) -> Result<u64, ClusterError> {
    std::fs::create_dir_all(&out).map_err(|source| crate::store::StoreError::Io {
        path: out.clone(),
        source,
    })?;
    let consumer = broker.records_consumer().await?;
    let mut collector = Collector {
        out,
        bucket: broker.runs().await?,
        runs: HashMap::new(),
    };
    {
        let client = broker.client.clone();
        health.watch(move || client.connection_state() == async_nats::connection::State::Connected);
    }
    health.unready_on(stop.clone());
    health.set_ready(true);
    tracing::info!("aggregator ready");
    let mut stored = 0;
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
            let next = tokio::select! {
                m = tokio::time::timeout(STATUS_EVERY, messages.next()) => m,
                _ = stop.wait_for(|s| *s) => break 'consume,
            };
            let message = match next {
                Err(_) => {
                    collector.flush_status().await;
                    continue;
                }
                Ok(None) => break,
                Ok(Some(Err(e))) => {
                    tracing::debug!(error = %e, "records consumer status");
                    continue;
                }
                Ok(Some(Ok(m))) => m,
            };
            if message.info().map(|i| i.delivered).unwrap_or(1) > 1 {
                metrics()
                    .redeliveries
                    .with_label_values(&["aggregator"])
                    .inc();
            }
            match handle(&mut collector, &message).await {
                Ok(true) => stored += 1,
                Ok(false) => {}
                Err(e) => {
                    // Not stored: it comes back after a while (the manifest may not be readable
                    // yet, or the disk is full).
                    tracing::error!(subject = %message.subject, error = %e, "cannot store a record");
                    let _ = message
                        .ack_with(AckKind::Nak(Some(Duration::from_secs(5))))
                        .await;
                    continue;
                }
            }
            if let Err(e) = message.ack().await {
                tracing::debug!(error = %e, "record ack lost; a redelivery will be dropped as a duplicate");
            }
        }
    }
    health.set_ready(false);
    collector.flush_status().await;
    Ok(stored)
}

async fn handle(
    collector: &mut Collector,
    message: &jetstream::Message,
) -> Result<bool, ClusterError> {
    let head: RecordHead = match serde_json::from_slice(&message.payload) {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(subject = %message.subject, error = %e, "undecodable record dropped");
            return Ok(false);
        }
    };
    collector.store(head, &message.payload).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_with_a_huge_turn_count_is_counted_without_overflow() {
        // Found by reviewing the nats_message fuzz target: a record from the stream said
        // 2^64 - 1 turns, and counting a second record overflowed (a panic in a debug build, a
        // wrapped count in a release one).
        let head: RecordHead = serde_json::from_str(
            r#"{"job": {"run_id": "r", "dialogue_id": "d"}, "turns": 18446744073709551615}"#,
        )
        .expect("a record head");
        let mut status = RunStatus::submitted("r", 2, "now");
        count(&mut status, &head);
        count(&mut status, &head);
        assert_eq!(status.stored, 2);
        assert_eq!(status.turns, usize::MAX);
    }
}
