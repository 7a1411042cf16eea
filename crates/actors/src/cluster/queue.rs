//! The jobs work queue: a run's jobs published, each confirmed by the server (`sage sweep`, a
//! resume, a worker deferring a job).

use super::{ClusterError, RESUME_HEADER};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use sage_ports::transport::nats::{
    BROKER_WAIT, Broker, NatsError, header_value, jobs_subject, js_error,
};

/// Job publications awaiting the server's confirmation at once.
const PUBLISH_WINDOW: usize = 512;

/// Queues jobs of `run_id` in the work queue. Each job's message id is its dialogue id (a
/// second copy within the stream's window is dropped by the server); jobs queued by resume `n`
/// carry it in their id and in [`RESUME_HEADER`].
pub(crate) async fn publish_jobs<J: serde::Serialize>(
    broker: &Broker,
    run_id: &str,
    jobs: impl Iterator<Item = J>,
    dialogue_id: impl Fn(&J) -> &str,
    resume: Option<u32>,
) -> Result<usize, ClusterError> {
    broker.jobs_stream().await?;
    let subject = jobs_subject(run_id);
    let mut pending = FuturesUnordered::new();
    let mut queued = 0;
    for job in jobs {
        let payload = serde_json::to_vec(&job).map_err(|e| NatsError::Codec {
            what: subject.clone(),
            message: e.to_string(),
        })?;
        let mut headers = async_nats::HeaderMap::new();
        let mut id = format!("{run_id}/{}", dialogue_id(&job));
        if let Some(n) = resume {
            id.push_str(&format!("/resume-{n}"));
            headers.insert(RESUME_HEADER, header_value(&n.to_string()));
        }
        // A second submission of the same job within the window is dropped by the server.
        headers.insert("Nats-Msg-Id", header_value(&id));
        pending.push(publish_acked(
            broker.js.clone(),
            subject.clone(),
            headers,
            payload.into(),
        ));
        queued += 1;
        if pending.len() >= PUBLISH_WINDOW
            && let Some(done) = pending.next().await
        {
            done?;
        }
    }
    while let Some(done) = pending.next().await {
        done?;
    }
    Ok(queued)
}

/// Publishes one job and awaits the server's confirmation. A publication that finds no stream
/// for its subject is tried again after 250 ms and 500 ms (ADR-22's retry on "no responders"):
/// a stream just created, by this process or another at the same moment, can miss its first
/// publications on a loaded server. The job's message id makes a repeat harmless.
pub(crate) async fn publish_acked(
    js: async_nats::jetstream::Context,
    subject: String,
    headers: async_nats::HeaderMap,
    payload: bytes::Bytes,
) -> Result<(), NatsError> {
    use async_nats::jetstream::context::PublishErrorKind;
    let what = || format!("queueing jobs on {subject}");
    let mut attempt = 0u32;
    loop {
        let result = match tokio::time::timeout(BROKER_WAIT, async {
            js.publish_with_headers(subject.clone(), headers.clone(), payload.clone())
                .await?
                .await
        })
        .await
        {
            Ok(result) => result,
            Err(_) => {
                return Err(NatsError::Timeout {
                    what: what(),
                    after: BROKER_WAIT,
                });
            }
        };
        match result {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == PublishErrorKind::StreamNotFound && attempt < 2 => {
                attempt += 1;
                tokio::time::sleep(std::time::Duration::from_millis(250 << (attempt - 1))).await;
            }
            Err(e) => return Err(js_error(what())(&e)),
        }
    }
}
