//! `sage sweep` and `sage status`: submit a run (its manifest to the runs bucket, its jobs to
//! the jobs work queue) and read runs' progress.

use super::{
    CONTROL_HEADER, ClusterError, Control, ControlRequest, ResumeRequest, RunSpec, RunState,
    RunStatus, get_json, manifest_key, put_json, status_key,
};
use futures::StreamExt;
use sage_core::plan::{self, RunConfig};
use sage_core::sop::Sop;
use sage_ports::store::Manifest;
use sage_ports::transport::nats::{
    BROKER_WAIT, Broker, NatsError, bounded, js_error, records_subject,
};
use std::sync::Arc;

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
    let plan = plan::Plan::new(config, run_id, &sops);
    let spec = RunSpec::Sage {
        manifest: Manifest::new(run_id, config, &with_text, plan.len()),
        scenarios: scenarios
            .iter()
            .map(|(_, name, text)| (name.clone(), text.clone()))
            .collect(),
    };
    queue(broker, &spec, plan.len()).await
}

/// Submits a run of a suite on the one lifecycle (`spec`: [`super::hosted::Hosted::new`]).
/// Refuses a run id already in the bucket. Returns the run's initial status.
pub async fn submit_suite(
    broker: &Broker,
    spec: super::hosted::Hosted,
) -> Result<RunStatus, ClusterError> {
    let jobs = spec.0.jobs();
    queue(broker, &RunSpec::Suite(spec), jobs).await
}

/// Puts a run's spec in the bucket (once: a run id is used once), its status, and its `total`
/// jobs in the work queue, made one at a time.
async fn queue(broker: &Broker, spec: &RunSpec, total: usize) -> Result<RunStatus, ClusterError> {
    let run_id = spec.run_id();
    let bucket = broker.runs().await?;
    // `create` fails when the key exists: a run id is used once.
    bounded(
        format!("run {run_id} cannot be submitted (is the id already used?)"),
        bucket.create(manifest_key(run_id), spec.encoded()?),
    )
    .await?;
    let status = RunStatus::submitted(run_id, total, spec.created_at());
    put_json(&bucket, &status_key(run_id), &status).await?;
    spec.queue_jobs(broker, None, None).await?;
    Ok(status)
}

/// Resumes a run that its cost budgets stopped or that was cancelled, with `spec` (the run's
/// spec from the bucket, a SAGE run's budgets raised): the spec replaces the bucket's, and the
/// aggregator is asked (on the run's records subject) to fold the run again with those budgets
/// and to queue the jobs not stored. Refuses a run that has not ended, and a support-desk run
/// that was not cancelled (it has no budget). Returns the resume's number.
pub async fn resume(broker: &Broker, spec: &RunSpec) -> Result<u32, ClusterError> {
    let run_id = spec.run_id();
    let bucket = broker.runs().await?;
    let status: RunStatus = get_json(&bucket, &status_key(run_id))
        .await?
        .ok_or_else(|| ClusterError::UnknownRun(run_id.to_string()))?;
    if !status.state.over() {
        return Err(ClusterError::Invalid(format!(
            "run {run_id} has not ended ({}/{} dialogues stored); resume it once a budget has stopped it (`sage status {run_id}`)",
            status.stored, status.jobs
        )));
    }
    if !matches!(spec, RunSpec::Sage { .. }) && status.state != RunState::Cancelled {
        return Err(ClusterError::Invalid(format!(
            "run {run_id} is a {} run that was not cancelled: it has no cost budget to resume with",
            spec.suite()
        )));
    }
    if status.stored >= status.jobs {
        return Err(ClusterError::Invalid(format!(
            "run {run_id} is complete: every one of its {} dialogues is stored, there is nothing to resume",
            status.jobs
        )));
    }
    if status.state == RunState::Complete
        && status.adaptive.as_ref().is_some_and(|a| a.stops_the_rest())
    {
        return Err(ClusterError::Invalid(format!(
            "run {run_id} is complete: an adaptive run whose models are all decided ({} of its {} dialogues played), there is nothing to resume",
            status.stored, status.jobs
        )));
    }
    let key = manifest_key(run_id);
    bounded(format!("writing {key}"), bucket.put(&key, spec.encoded()?)).await?;
    broker.records_stream().await?;
    let request = ResumeRequest {
        run_id: run_id.to_string(),
        resume: status.resumes + 1,
    };
    let mut headers = async_nats::HeaderMap::new();
    headers.insert(CONTROL_HEADER, "resume");
    broker
        .publish_json(
            records_subject(run_id),
            &format!("{run_id}/resume-{}", request.resume),
            Some(headers),
            &request,
        )
        .await?;
    Ok(request.resume)
}

/// Asks the aggregator to pause, unpause (`None`) or cancel a run that has not ended; the
/// workers obey once its status says so (within a second or two).
pub async fn control(
    broker: &Broker,
    run_id: &str,
    control: Option<Control>,
) -> Result<RunStatus, ClusterError> {
    let bucket = broker.runs().await?;
    let status: RunStatus = get_json(&bucket, &status_key(run_id))
        .await?
        .ok_or_else(|| ClusterError::UnknownRun(run_id.to_string()))?;
    if status.state.over() {
        return Err(ClusterError::Invalid(format!(
            "run {run_id} has ended ({}/{} dialogues stored): there is nothing to pause or cancel",
            status.stored, status.jobs
        )));
    }
    broker.records_stream().await?;
    let request = ControlRequest {
        run_id: run_id.to_string(),
        control,
    };
    let mut headers = async_nats::HeaderMap::new();
    headers.insert(CONTROL_HEADER, "control");
    let what = match control {
        Some(Control::Paused) => "pause",
        Some(Control::Cancelled) => "cancel",
        None => "unpause",
    };
    broker
        .publish_json(
            records_subject(run_id),
            // A message id of its own: the stream keeps each request (no deduplication).
            &format!(
                "{run_id}/{what}-{}",
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos())
            ),
            Some(headers),
            &request,
        )
        .await?;
    Ok(status)
}

/// Removes a run from the runs bucket (its manifest and status): `sage status` no longer lists
/// it, and a job or record of it that still comes is dropped as of an unknown run. A run that
/// is not complete is refused unless `force`. Returns the status it had.
pub async fn forget(broker: &Broker, run_id: &str, force: bool) -> Result<RunStatus, ClusterError> {
    let bucket = broker.runs().await?;
    let status: RunStatus = get_json(&bucket, &status_key(run_id))
        .await?
        .ok_or_else(|| ClusterError::UnknownRun(run_id.to_string()))?;
    if !status.state.over() && !force {
        return Err(ClusterError::Invalid(format!(
            "run {run_id} is not complete ({}/{} dialogues stored); forgetting it now would drop the rest (--force to do it anyway)",
            status.stored, status.jobs
        )));
    }
    for key in [manifest_key(run_id), status_key(run_id)] {
        bounded(format!("forgetting {key}"), bucket.purge(&key)).await?;
    }
    Ok(status)
}

/// The status of one run, if the bucket has it.
pub async fn status(broker: &Broker, run_id: &str) -> Result<Option<RunStatus>, ClusterError> {
    let bucket = broker.runs().await?;
    Ok(get_json(&bucket, &status_key(run_id)).await?)
}

/// Every run's status in the bucket, and the values that could not be read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AllStatus {
    /// The runs, oldest first.
    pub runs: Vec<RunStatus>,
    /// Why each unreadable `status.*` value could not be read (its key and the error).
    pub unreadable: Vec<String>,
}

/// The status of every run in the bucket, oldest first; a value that cannot be decoded is
/// skipped and reported.
pub async fn all_status(broker: &Broker) -> Result<AllStatus, ClusterError> {
    let bucket = broker.runs().await?;
    let mut keys = bounded("listing runs", bucket.keys()).await?;
    let mut out = AllStatus::default();
    loop {
        let key = match tokio::time::timeout(BROKER_WAIT, keys.next()).await {
            Ok(None) => break,
            Ok(Some(key)) => key.map_err(|e| js_error("listing runs")(&e))?,
            Err(_) => {
                return Err(NatsError::Timeout {
                    what: "listing runs".into(),
                    after: BROKER_WAIT,
                }
                .into());
            }
        };
        if !key.starts_with("status.") {
            continue;
        }
        // One unreadable value (written by another version, or by hand) is reported, not fatal.
        match get_json::<RunStatus>(&bucket, &key).await {
            Ok(Some(s)) => out.runs.push(s),
            Ok(None) => {}
            Err(e @ NatsError::Codec { .. }) => out.unreadable.push(e.to_string()),
            Err(e) => return Err(e.into()),
        }
    }
    out.runs
        .sort_by(|a, b| (&a.submitted_at, &a.run_id).cmp(&(&b.submitted_at, &b.run_id)));
    Ok(out)
}

/// A running run's standings so far: each model's OA with half its 95% interval and its
/// dialogues, best first, then the cost and the time left (empty without standings).
pub fn live_table(run: &RunStatus) -> String {
    if run.models.is_empty() {
        return String::new();
    }
    let width = run
        .models
        .iter()
        .map(|m| m.model.chars().count())
        .max()
        .unwrap_or(5)
        .max(5);
    // An adaptive run: each model's place against the top K (`top 3 @120`, `out @45`).
    let mark = |model: &str| {
        run.adaptive
            .as_ref()
            .map_or(String::new(), |a| format!(" {}", a.mark(model)))
    };
    let mut out = format!(
        "{:<width$} {:>15} {:>9}{}\n",
        "model",
        "OA so far",
        "dialogues",
        if run.adaptive.is_some() {
            " adaptive"
        } else {
            ""
        }
    );
    for m in &run.models {
        let oa = m.oa.map_or("-".to_string(), |o| {
            format!("{:.2} ±{:.1}", o.mean, (o.ci_high - o.ci_low) / 2.0)
        });
        out.push_str(&format!(
            "{:<width$} {oa:>15} {:>9}{}\n",
            m.model,
            m.dialogues,
            mark(&m.model)
        ));
    }
    out.push_str(&format!("spent ${:.4}", run.cost_usd));
    if let Some(eta) = run.eta_secs {
        out.push_str(&format!(
            "; {} dialogues left, about {:.0} s at the rate so far",
            run.jobs.saturating_sub(run.stored),
            eta
        ));
    }
    out.push('\n');
    out
}

/// One line per run: id, state, progress, turns, infrastructure errors, last update.
pub fn status_table(runs: &[RunStatus]) -> String {
    let mut out = format!(
        "{:<32} {:<10} {:>15} {:>8} {:>6} {}\n",
        "run", "state", "dialogues", "turns", "infra", "updated"
    );
    for r in runs {
        let state = match r.state {
            RunState::Submitted | RunState::Running if r.control == Some(Control::Paused) => {
                "paused"
            }
            RunState::Submitted => "submitted",
            // Its budgets stopped it; the dialogues in flight then are being stored.
            RunState::Running if r.ended() => "stopping",
            RunState::Running => "running",
            RunState::Cancelled => "cancelled",
            // An adaptive run that ended with every model decided.
            RunState::Complete
                if r.stored < r.jobs && r.adaptive.as_ref().is_some_and(|a| a.stops_the_rest()) =>
            {
                "decided"
            }
            // Ended with dialogues a cost budget kept from starting.
            RunState::Complete if r.stored < r.jobs => "budget",
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
