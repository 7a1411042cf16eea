//! `sage sweep` and `sage status`: submit a run (its manifest to the runs bucket, its jobs to
//! the jobs work queue) and read runs' progress.

use super::{
    ClusterError, RunSpec, RunState, RunStatus, get_json, manifest_key, put_json, status_key,
};
use crate::plan::desk::DeskConfig;
use crate::plan::{self, RunConfig};
use crate::scenario::desk::Desk;
use crate::sop::Sop;
use crate::store::Manifest;
use crate::store::desk::DeskManifest;
use crate::transport::nats::{Broker, NatsError, header_value, jobs_subject, js_error};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use std::sync::Arc;

/// Job publications awaiting the server's confirmation at once.
const PUBLISH_WINDOW: usize = 512;

/// Submits a run of `config` over `scenarios` (each with its name and YAML text) as `run_id`.
/// Refuses a run id already in the bucket. Returns the run's initial status.
pub async fn submit(
    broker: &Broker,
    config: &RunConfig,
    scenarios: &[(Arc<Sop>, String, String)],
    run_id: &str,
) -> Result<RunStatus, ClusterError> {
    let sops: Vec<Arc<Sop>> = scenarios.iter().map(|(s, _, _)| s.clone()).collect();
    let with_text: Vec<(Arc<Sop>, String)> = scenarios
        .iter()
        .map(|(s, _, text)| (s.clone(), text.clone()))
        .collect();
    let jobs = plan::jobs(config, run_id, &sops);
    let spec = RunSpec::Sage {
        manifest: Manifest::new(run_id, config, &with_text, jobs.len()),
        scenarios: scenarios
            .iter()
            .map(|(_, name, text)| (name.clone(), text.clone()))
            .collect(),
    };
    queue(broker, &spec, &jobs, |j| &j.dialogue_id).await
}

/// Submits a support-desk run of `config` over the store given as its store.yaml and
/// cases.yaml texts (`desk` parsed from them) as `run_id`. Refuses a run id already in the
/// bucket. Returns the run's initial status.
pub async fn submit_desk(
    broker: &Broker,
    config: &DeskConfig,
    texts: (&str, &str),
    desk: &Desk,
    run_id: &str,
) -> Result<RunStatus, ClusterError> {
    let jobs = crate::plan::desk::jobs(config, run_id, desk);
    let spec = RunSpec::SupportDesk {
        manifest: DeskManifest::new(run_id, config, texts, jobs.len()),
        store: texts.0.to_string(),
        cases: texts.1.to_string(),
    };
    queue(broker, &spec, &jobs, |j| &j.dialogue_id).await
}

/// Puts a run's spec in the bucket (once: a run id is used once), its status, and its jobs in
/// the work queue.
async fn queue<J: serde::Serialize>(
    broker: &Broker,
    spec: &RunSpec,
    jobs: &[J],
    dialogue_id: impl Fn(&J) -> &str,
) -> Result<RunStatus, ClusterError> {
    let run_id = spec.run_id();
    let bucket = broker.runs().await?;
    let manifest = serde_json::to_vec(spec).map_err(|e| NatsError::Codec {
        what: manifest_key(run_id),
        message: e.to_string(),
    })?;
    // `create` fails when the key exists: a run id is used once.
    bucket
        .create(manifest_key(run_id), manifest.into())
        .await
        .map_err(|e| {
            js_error(format!(
                "run {run_id} cannot be submitted (is the id already used?)"
            ))(&e)
        })?;
    let status = RunStatus::submitted(run_id, jobs.len(), spec.created_at());
    put_json(&bucket, &status_key(run_id), &status).await?;
    broker.jobs_stream().await?;
    let subject = jobs_subject(run_id);
    let mut pending = FuturesUnordered::new();
    for job in jobs {
        let payload = serde_json::to_vec(job).map_err(|e| NatsError::Codec {
            what: subject.clone(),
            message: e.to_string(),
        })?;
        let mut headers = async_nats::HeaderMap::new();
        // A second submission of the same job within the window is dropped by the server.
        headers.insert(
            "Nats-Msg-Id",
            header_value(&format!("{run_id}/{}", dialogue_id(job))),
        );
        let ack = broker
            .js
            .publish_with_headers(subject.clone(), headers, payload.into())
            .await
            .map_err(|e| js_error(format!("queueing jobs on {subject}"))(&e))?;
        pending.push(ack.into_future());
        if pending.len() >= PUBLISH_WINDOW
            && let Some(done) = pending.next().await
        {
            done.map_err(|e| js_error(format!("queueing jobs on {subject}"))(&e))?;
        }
    }
    while let Some(done) = pending.next().await {
        done.map_err(|e| js_error(format!("queueing jobs on {subject}"))(&e))?;
    }
    Ok(status)
}

/// The status of one run, if the bucket has it.
pub async fn status(broker: &Broker, run_id: &str) -> Result<Option<RunStatus>, ClusterError> {
    let bucket = broker.runs().await?;
    Ok(get_json(&bucket, &status_key(run_id)).await?)
}

/// The status of every run in the bucket, oldest first.
pub async fn all_status(broker: &Broker) -> Result<Vec<RunStatus>, ClusterError> {
    let bucket = broker.runs().await?;
    let mut keys = bucket
        .keys()
        .await
        .map_err(|e| js_error("listing runs")(&e))?;
    let mut out = Vec::new();
    while let Some(key) = keys.next().await {
        let key = key.map_err(|e| js_error("listing runs")(&e))?;
        if key.starts_with("status.")
            && let Some(s) = get_json::<RunStatus>(&bucket, &key).await?
        {
            out.push(s);
        }
    }
    out.sort_by(|a, b| (&a.submitted_at, &a.run_id).cmp(&(&b.submitted_at, &b.run_id)));
    Ok(out)
}

/// One line per run: id, state, progress, turns, infrastructure errors, last update.
pub fn status_table(runs: &[RunStatus]) -> String {
    let mut out = format!(
        "{:<32} {:<10} {:>15} {:>8} {:>6} {}\n",
        "run", "state", "dialogues", "turns", "infra", "updated"
    );
    for r in runs {
        let state = match r.state {
            RunState::Submitted => "submitted",
            RunState::Running => "running",
            RunState::Complete => "complete",
        };
        out.push_str(&format!(
            "{:<32} {:<10} {:>15} {:>8} {:>6} {}\n",
            r.run_id,
            state,
            format!("{}/{}", r.stored, r.jobs),
            r.turns,
            r.infra_errors,
            r.updated_at
        ));
    }
    out
}
