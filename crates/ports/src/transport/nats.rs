//! The NATS transport: role requests as NATS request/reply on `sage.v1.role.<role>` (queue
//! groups, so another process serving a role adds capacity), dialogue jobs in a JetStream
//! work-queue stream, records in a JetStream stream, run manifests and status in a JetStream
//! key-value bucket. Payloads are the JSON of [`sage_core::protocol`]; the run id and the W3C trace
//! context travel in message headers.

use super::{Transport, TransportError};
use crate::telemetry::{metrics, trace};
use async_nats::jetstream::{self, consumer, kv, stream};
use async_nats::{Client, ConnectOptions, HeaderMap, HeaderValue, RequestErrorKind};
use bytes::Bytes;
use sage_core::protocol::call::{CallRole, ModelCallReply, ModelCallRequest};
use sage_core::protocol::desk::{
    DeskAgentReply, DeskAgentRequest, DeskCustomerReply, DeskCustomerRequest, DeskJudgeReply,
    DeskJudgeRequest,
};
use sage_core::protocol::{
    JudgeReply, JudgeRequest, Role, RuleReply, RuleRequest, ServiceReply, ServiceRequest,
    UserReply, UserRequest,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Room kept for headers when checking a message against the server's `max_payload`.
const HEADER_ROOM: usize = 1024;

/// Header naming the run a role request belongs to.
pub const RUN_HEADER: &str = "Sage-Run";
/// Header of a reply that carries an error instead of a reply.
pub const ERROR_HEADER: &str = "Sage-Error";

/// The text of header `name`, if the message has it (the first value when there are several).
pub fn header<'a>(headers: Option<&'a HeaderMap>, name: &str) -> Option<&'a str> {
    headers.and_then(|h| h.get(name)).map(|v| v.as_str())
}

/// A header value holding `text`: header values are one line, so line breaks become spaces
/// (async-nats panics on a value with one). Texts from outside (an error, the ids of a job
/// read from NATS in a message id) go through it.
pub fn header_value(text: &str) -> HeaderValue {
    HeaderValue::from(text.replace(['\r', '\n'], " "))
}
/// The work-queue stream of dialogue jobs.
pub const JOBS_STREAM: &str = "SAGE_JOBS";
/// The stream of dialogue records.
pub const RECORDS_STREAM: &str = "SAGE_RECORDS";
/// The key-value bucket of run manifests and status.
pub const RUNS_BUCKET: &str = "sage_runs";
/// The key-value bucket of the workers' leases on provider limit groups.
pub const LIMITS_BUCKET: &str = "sage_limits";
/// How long a lease on a limit group lasts unless renewed.
pub const LIMIT_LEASE: Duration = Duration::from_secs(6);
/// The durable consumer the dialogue workers share.
pub const JOBS_CONSUMER: &str = "dialogue";
/// The durable consumer of the aggregator.
pub const RECORDS_CONSUMER: &str = "aggregator";

/// The subject a role is requested on; the service role has one per model under test.
pub fn role_subject(role: Role, model: Option<&str>) -> String {
    match (role, model) {
        (Role::Service, Some(model)) => format!("sage.v1.role.service.{}", subject_token(model)),
        (Role::Service, None) => "sage.v1.role.service.*".into(),
        (role, _) => format!("sage.v1.role.{}", role.as_str()),
    }
}

/// The queue group serving a role subject.
pub fn role_queue(role: Role, model: Option<&str>) -> String {
    match (role, model) {
        (Role::Service, Some(model)) => format!("service.{}", subject_token(model)),
        (role, _) => role.as_str().into(),
    }
}

/// The subject of a run's dialogue jobs.
pub fn jobs_subject(run: &str) -> String {
    format!("sage.v1.jobs.{run}")
}

/// The subject of a run's dialogue records.
pub fn records_subject(run: &str) -> String {
    format!("sage.v1.records.{run}")
}

pub use sage_core::protocol::subject_token;

/// A server URL fit for a log: user names and passwords in it (`nats://user:pass@host`) are
/// replaced by `<redacted>`.
pub fn redact_url(urls: &str) -> String {
    urls.split(',')
        .map(|url| match (url.find("://"), url.rfind('@')) {
            (Some(scheme), Some(at)) if at > scheme => {
                format!("{}<redacted>{}", &url[..scheme + 3], &url[at..])
            }
            _ => url.to_string(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// How to reach the NATS server. Secrets are never printed (`Debug` redacts them).
#[derive(Clone, Default)]
pub struct NatsConfig {
    /// Server URL(s), comma-separated (`nats://127.0.0.1:4222`, `tls://...`).
    pub url: String,
    /// User name (with `password`).
    pub user: Option<String>,
    /// Password.
    pub password: Option<String>,
    /// Token authentication.
    pub token: Option<String>,
    /// A `.creds` file (JWT and NKey seed).
    pub creds_file: Option<PathBuf>,
    /// An NKey seed.
    pub nkey_seed: Option<String>,
    /// A CA certificate (PEM) to trust.
    pub tls_ca: Option<PathBuf>,
    /// Client certificate (PEM), with `tls_key`.
    pub tls_cert: Option<PathBuf>,
    /// Client key (PEM).
    pub tls_key: Option<PathBuf>,
    /// Refuse a connection without TLS.
    pub tls_required: bool,
    /// The connection name the server shows.
    pub name: String,
    /// How long to keep trying the first connection.
    pub connect_for: Duration,
}

impl std::fmt::Debug for NatsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secret = |s: &Option<String>| s.as_ref().map(|_| "<redacted>");
        f.debug_struct("NatsConfig")
            .field("url", &self.url)
            .field("user", &self.user)
            .field("password", &secret(&self.password))
            .field("token", &secret(&self.token))
            .field("creds_file", &self.creds_file)
            .field("nkey_seed", &secret(&self.nkey_seed))
            .field("tls_ca", &self.tls_ca)
            .field("tls_cert", &self.tls_cert)
            .field("tls_key", &self.tls_key)
            .field("tls_required", &self.tls_required)
            .field("name", &self.name)
            .finish()
    }
}

/// The NATS side failed.
#[derive(Debug, thiserror::Error)]
pub enum NatsError {
    /// The configuration is unusable (e.g. a password without a user).
    #[error("NATS configuration: {0}")]
    Config(String),
    /// No connection.
    #[error("cannot connect to NATS at {url}: {message}")]
    Connect {
        /// The URL tried.
        url: String,
        /// Why.
        message: String,
    },
    /// A JetStream operation failed.
    #[error("JetStream {what}: {message}")]
    JetStream {
        /// What was being done.
        what: String,
        /// Why.
        message: String,
    },
    /// A message is larger than the server accepts (its `max_payload`).
    #[error(
        "{what}: a message of {size} bytes exceeds the server's max_payload of {max} bytes (raise max_payload in the nats-server configuration)"
    )]
    TooLarge {
        /// Where it was going.
        what: String,
        /// Its size.
        size: usize,
        /// The server's limit.
        max: usize,
    },
    /// The client's connection task ended for good (see [`stop_when_gone`]).
    #[error(
        "the NATS client stopped for good (a message it could not handle; nats-io/nats.rs#1612); restart the process, and let only SAGE-RS publish on sage.v1.>"
    )]
    ClientGone,
    /// The broker did not answer in time.
    #[error("{what}: no answer from NATS within {after:?}")]
    Timeout {
        /// What was being done.
        what: String,
        /// How long it waited.
        after: Duration,
    },
    /// A message did not encode or decode.
    #[error("{what}: bad message: {message}")]
    Codec {
        /// What it was.
        what: String,
        /// Why.
        message: String,
    },
}

/// Most time one broker operation may take (a key-value read or write, a stream or consumer
/// lookup, a publication and its acknowledgement): with the connection gone, or dropped by the
/// server, a reply may never come, and nothing may wait for it forever.
pub const BROKER_WAIT: Duration = Duration::from_secs(10);

/// Runs a broker operation for at most [`BROKER_WAIT`]; its error, or its not answering in
/// time, becomes a [`NatsError`] saying what was being done.
pub async fn bounded<T, E: std::fmt::Display>(
    what: impl Into<String>,
    operation: impl std::future::Future<Output = Result<T, E>>,
) -> Result<T, NatsError> {
    match tokio::time::timeout(BROKER_WAIT, operation).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(e)) => Err(js_error(what)(&e)),
        Err(_) => Err(NatsError::Timeout {
            what: what.into(),
            after: BROKER_WAIT,
        }),
    }
}

/// A stop signal that also turns true when `client`'s connection task has ended for good
/// (async-nats ends it on a message it cannot handle, such as a header value with a lone
/// carriage return; nats-io/nats.rs#1612): the client will never send again, reconnecting or
/// not. `health` is then marked dead (/healthz answers 503) and the process stops, to be
/// restarted. Checked every 2 s with a flush, which fails at once on such a client.
pub fn stop_when_gone(
    client: Client,
    health: std::sync::Arc<crate::telemetry::Health>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> tokio::sync::watch::Receiver<bool> {
    let (tx, rx) = tokio::sync::watch::channel(*stop.borrow());
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = stop.wait_for(|s| *s) => break,
                _ = tokio::time::sleep(Duration::from_secs(2)) => {}
            }
            let flushed = tokio::time::timeout(BROKER_WAIT, client.flush()).await;
            if let Ok(Err(e)) = flushed
                && e.kind() == async_nats::client::FlushErrorKind::SendError
            {
                tracing::error!(error = %e, "the NATS client is gone for good; stopping (restart the process)");
                health.set_dead();
                break;
            }
        }
        let _ = tx.send(true);
    });
    rx
}

/// A JetStream error with what was being done.
pub fn js_error(what: impl Into<String>) -> impl FnOnce(&dyn std::fmt::Display) -> NatsError {
    let what = what.into();
    move |e| NatsError::JetStream {
        what,
        message: e.to_string(),
    }
}

impl NatsConfig {
    async fn options(&self) -> Result<ConnectOptions, NatsError> {
        let mut options = match &self.creds_file {
            Some(path) => ConnectOptions::with_credentials_file(path)
                .await
                .map_err(|e| NatsError::Config(format!("creds file {}: {e}", path.display())))?,
            None => ConnectOptions::new(),
        };
        match (&self.user, &self.password) {
            (Some(user), Some(password)) => {
                options = options.user_and_password(user.clone(), password.clone())
            }
            (None, None) => {}
            _ => {
                return Err(NatsError::Config(
                    "a NATS user needs a password and a password needs a user".into(),
                ));
            }
        }
        if let Some(token) = &self.token {
            options = options.token(token.clone());
        }
        if let Some(seed) = &self.nkey_seed {
            options = options.nkey(seed.clone());
        }
        if let Some(ca) = &self.tls_ca {
            options = options.add_root_certificates(ca.clone());
        }
        match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => {
                options = options.add_client_certificate(cert.clone(), key.clone())
            }
            (None, None) => {}
            _ => {
                return Err(NatsError::Config(
                    "a TLS client certificate needs its key and a key needs its certificate".into(),
                ));
            }
        }
        if self.tls_required {
            options = options.require_tls(true);
        }
        let name = if self.name.is_empty() {
            "sage"
        } else {
            &self.name
        };
        Ok(options
            .name(name)
            .max_reconnects(None)
            // Requests carry their own timeouts (see `NatsTransport`).
            .request_timeout(None))
    }

    /// Connects, trying again for `connect_for` (a broker that starts after its clients is
    /// normal on Kubernetes); afterwards the client reconnects on its own.
    pub async fn connect(&self) -> Result<Connection, NatsError> {
        // TLS needs a crypto provider; async-nats and the HTTP clients share ring.
        crate::ensure_crypto_provider();
        let started = Instant::now();
        let mut delay = Duration::from_millis(100);
        let (lost, disconnects) = tokio::sync::watch::channel(0u64);
        let lost = std::sync::Arc::new(lost);
        loop {
            let lost = lost.clone();
            let options = self.options().await?.event_callback(move |event| {
                match &event {
                    async_nats::Event::Disconnected => {
                        lost.send_modify(|n| *n += 1);
                        tracing::warn!("NATS connection lost; reconnecting");
                    }
                    // async-nats logs every event itself.
                    other => tracing::debug!(event = %other, "NATS event"),
                }
                async {}
            });
            match options.connect(self.url.as_str()).await {
                Ok(client) => {
                    return Ok(Connection {
                        client,
                        disconnects,
                    });
                }
                Err(e) if started.elapsed() < self.connect_for => {
                    tracing::warn!(url = %redact_url(&self.url), error = %e, "NATS not reachable yet");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
                Err(e) => {
                    return Err(NatsError::Connect {
                        url: redact_url(&self.url),
                        message: e.to_string(),
                    });
                }
            }
        }
    }
}

/// A NATS connection, and how many times it was lost so far (a request waiting for a reply
/// when the connection drops will never get it: it is sent again instead).
#[derive(Clone)]
pub struct Connection {
    /// The client.
    pub client: Client,
    /// Counts lost connections.
    pub disconnects: tokio::sync::watch::Receiver<u64>,
}

/// JetStream settings a deployment may tune.
#[derive(Debug, Clone)]
pub struct QueueSettings {
    /// How long a delivered job may go without an ack or a progress signal before it is
    /// delivered again (workers signal progress at a third of it).
    pub ack_wait: Duration,
    /// Most jobs delivered and not yet acked across all workers (backpressure).
    pub max_ack_pending: i64,
    /// Replicas of the streams and the bucket (1 for a single server).
    pub replicas: usize,
    /// How long records stay in the records stream (0: until deleted by hand). The aggregator
    /// has stored them long before; the stream keeps them so a lost results folder can be
    /// rebuilt within that time.
    pub records_max_age: Duration,
}

impl Default for QueueSettings {
    fn default() -> Self {
        QueueSettings {
            ack_wait: Duration::from_secs(30),
            max_ack_pending: 10_000,
            replicas: 1,
            records_max_age: Duration::from_secs(7 * 24 * 3600),
        }
    }
}

/// The JetStream side of a deployment: the two streams, the bucket, the consumers. Every
/// process creates what it needs if it is missing, so the start order does not matter.
#[derive(Clone)]
pub struct Broker {
    /// The connection.
    pub client: Client,
    /// Counts lost connections.
    pub disconnects: tokio::sync::watch::Receiver<u64>,
    /// JetStream.
    pub js: jetstream::Context,
    /// The settings used when creating the streams and consumers.
    pub settings: QueueSettings,
}

impl Broker {
    /// JetStream over `connection`.
    pub fn new(connection: Connection, settings: QueueSettings) -> Broker {
        let js = jetstream::new(connection.client.clone());
        Broker {
            client: connection.client,
            disconnects: connection.disconnects,
            js,
            settings,
        }
    }

    /// The connection.
    pub fn connection(&self) -> Connection {
        Connection {
            client: self.client.clone(),
            disconnects: self.disconnects.clone(),
        }
    }

    /// The jobs stream (work queue: a job is gone once acked).
    pub async fn jobs_stream(&self) -> Result<stream::Stream, NatsError> {
        bounded(
            "creating the jobs stream",
            self.js.get_or_create_stream(stream::Config {
                name: JOBS_STREAM.into(),
                subjects: vec!["sage.v1.jobs.>".into()],
                retention: stream::RetentionPolicy::WorkQueue,
                storage: stream::StorageType::File,
                num_replicas: self.settings.replicas,
                duplicate_window: Duration::from_secs(120),
                ..Default::default()
            }),
        )
        .await
    }

    /// The records stream (kept: the aggregator can be rebuilt from it).
    /// Records older than the settings' `records_max_age` age out (0: kept); a stream created
    /// before with another age is updated to this one.
    pub async fn records_stream(&self) -> Result<stream::Stream, NatsError> {
        let config = stream::Config {
            name: RECORDS_STREAM.into(),
            subjects: vec!["sage.v1.records.>".into()],
            storage: stream::StorageType::File,
            num_replicas: self.settings.replicas,
            duplicate_window: Duration::from_secs(120),
            max_message_size: -1,
            max_age: self.settings.records_max_age,
            ..Default::default()
        };
        let mut stream = bounded(
            "creating the records stream",
            self.js.get_or_create_stream(config.clone()),
        )
        .await?;
        let current = bounded("reading the records stream", stream.info())
            .await?
            .config
            .max_age;
        if current != config.max_age {
            tracing::info!(from = ?current, to = ?config.max_age, "records stream: retention changed");
            bounded(
                "updating the records stream's retention",
                self.js.update_stream(stream::Config {
                    max_age: config.max_age,
                    ..stream.cached_info().config.clone()
                }),
            )
            .await?;
        }
        Ok(stream)
    }

    /// The bucket of run manifests and status. Its stream is created here with the settings
    /// async-nats gives a bucket (one value per key, rollups, no deletes, direct gets), because
    /// async-nats' own bucket creation first queries the account, whose answer from a
    /// nats-server 2.9 (Debian 12) it cannot parse.
    pub async fn runs(&self) -> Result<kv::Store, NatsError> {
        self.bucket(
            RUNS_BUCKET,
            "SAGE-RS run manifests and status",
            Duration::ZERO,
        )
        .await
    }

    /// The bucket of the workers' leases on provider limit groups (`sage_actors::cluster::
    /// limits`): a value lives [`LIMIT_LEASE`] unless renewed, so a worker that is gone stops
    /// counting by itself.
    pub async fn limits(&self) -> Result<kv::Store, NatsError> {
        self.bucket(
            LIMITS_BUCKET,
            "SAGE-RS workers' leases on provider limits",
            LIMIT_LEASE,
        )
        .await
    }

    /// Opens the bucket `name`, creating its stream (values older than `max_age` dropped; zero:
    /// kept) when it does not exist.
    async fn bucket(
        &self,
        name: &str,
        description: &str,
        max_age: Duration,
    ) -> Result<kv::Store, NatsError> {
        if let Ok(store) = bounded(
            &format!("opening the {name} bucket"),
            self.js.get_key_value(name),
        )
        .await
        {
            return Ok(store);
        }
        bounded(
            &format!("creating the {name} bucket"),
            self.js.get_or_create_stream(stream::Config {
                name: format!("KV_{name}"),
                description: Some(description.into()),
                subjects: vec![format!("$KV.{name}.>")],
                max_messages_per_subject: 1,
                max_age,
                storage: stream::StorageType::File,
                num_replicas: self.settings.replicas,
                allow_rollup: true,
                deny_delete: max_age.is_zero(),
                allow_direct: true,
                discard: stream::DiscardPolicy::New,
                ..Default::default()
            }),
        )
        .await?;
        bounded(
            &format!("opening the {name} bucket"),
            self.js.get_key_value(name),
        )
        .await
    }

    /// The dialogue workers' shared pull consumer: explicit acks, redelivery after `ack_wait`,
    /// at most `max_ack_pending` jobs out at once.
    pub async fn jobs_consumer(&self) -> Result<consumer::PullConsumer, NatsError> {
        bounded(
            "creating the dialogue consumer",
            self.jobs_stream().await?.get_or_create_consumer(
                JOBS_CONSUMER,
                consumer::pull::Config {
                    durable_name: Some(JOBS_CONSUMER.into()),
                    ack_policy: consumer::AckPolicy::Explicit,
                    ack_wait: self.settings.ack_wait,
                    max_ack_pending: self.settings.max_ack_pending,
                    ..Default::default()
                },
            ),
        )
        .await
    }

    /// The aggregator's durable consumer of every run's records.
    pub async fn records_consumer(&self) -> Result<consumer::PullConsumer, NatsError> {
        bounded(
            "creating the aggregator consumer",
            self.records_stream().await?.get_or_create_consumer(
                RECORDS_CONSUMER,
                consumer::pull::Config {
                    durable_name: Some(RECORDS_CONSUMER.into()),
                    ack_policy: consumer::AckPolicy::Explicit,
                    ack_wait: self.settings.ack_wait,
                    max_ack_pending: 4096,
                    ..Default::default()
                },
            ),
        )
        .await
    }

    /// Publishes a JSON message to a stream and waits until the server stored it. `id`
    /// deduplicates within the stream's window (a second copy is acknowledged, not stored).
    pub async fn publish_json(
        &self,
        subject: String,
        id: &str,
        headers: Option<HeaderMap>,
        value: &impl Serialize,
    ) -> Result<(), NatsError> {
        let payload = serde_json::to_vec(value).map_err(|e| NatsError::Codec {
            what: subject.clone(),
            message: e.to_string(),
        })?;
        let max = self.client.server_info().max_payload;
        // Headers count too (message id, trace context): keep a little room for them.
        if max > 0 && payload.len() + HEADER_ROOM > max {
            return Err(NatsError::TooLarge {
                what: subject,
                size: payload.len(),
                max,
            });
        }
        let mut headers = headers.unwrap_or_default();
        headers.insert("Nats-Msg-Id", header_value(id));
        let ack = bounded(
            format!("publishing to {subject}"),
            self.js
                .publish_with_headers(subject.clone(), headers, payload.into()),
        )
        .await?;
        bounded(format!("storing to {subject}"), ack.into_future()).await?;
        Ok(())
    }
}

/// Writes the current span's trace context into `headers` (when spans are exported).
pub fn inject_trace(headers: &mut HeaderMap) {
    if !trace::exporting() {
        return;
    }
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let cx = tracing::Span::current().context();
    opentelemetry::global::get_text_map_propagator(|p| {
        p.inject_context(&cx, &mut HeaderInjector(headers))
    });
}

/// Makes `span` a child of the trace context in `headers`, if any.
pub fn extract_trace(headers: Option<&HeaderMap>, span: &tracing::Span) {
    let Some(headers) = headers else { return };
    if !trace::exporting() {
        return;
    }
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    let cx =
        opentelemetry::global::get_text_map_propagator(|p| p.extract(&HeaderExtractor(headers)));
    let _ = span.set_parent(cx);
}

struct HeaderInjector<'a>(&'a mut HeaderMap);

impl opentelemetry::propagation::Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key, value.as_str());
    }
}

struct HeaderExtractor<'a>(&'a HeaderMap);

impl opentelemetry::propagation::Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(|v| v.as_str())
    }
    fn keys(&self) -> Vec<&str> {
        // Only the trace-context keys are asked for by name.
        Vec::new()
    }
}

/// Attempts at a role request that processes refuse (an error reply) before giving up.
pub const MAX_REFUSALS: u32 = 3;

/// How role requests are retried when no process answers (no responders, a timeout, a lost
/// connection). Role answers are deterministic, so asking again is safe.
#[derive(Debug, Clone)]
pub struct RequestPolicy {
    /// Most time one attempt waits for its reply (a model call with its retries included).
    pub timeout: Duration,
    /// Most time spent retrying a request before giving up on it.
    pub retry_for: Duration,
}

impl Default for RequestPolicy {
    fn default() -> Self {
        RequestPolicy {
            timeout: Duration::from_secs(300),
            retry_for: Duration::from_secs(120),
        }
    }
}

/// The roles of one run, reached over NATS.
pub struct NatsTransport {
    connection: Connection,
    run: String,
    policy: RequestPolicy,
}

impl NatsTransport {
    /// Role requests for `run` over `connection`.
    pub fn new(connection: Connection, run: &str, policy: RequestPolicy) -> NatsTransport {
        NatsTransport {
            connection,
            run: run.to_string(),
            policy,
        }
    }

    async fn ask<Req: Serialize, Rep: DeserializeOwned>(
        &self,
        role: Role,
        subject: String,
        request: &Req,
    ) -> Result<Rep, TransportError> {
        let name = role.as_str();
        let started = Instant::now();
        let result = self.ask_inner(name, subject, request, started).await;
        let m = metrics();
        m.role_latency
            .with_label_values(&[name])
            .observe(started.elapsed().as_secs_f64());
        m.role_requests
            .with_label_values(&[name, if result.is_ok() { "ok" } else { "error" }])
            .inc();
        result
    }

    async fn ask_inner<Req: Serialize, Rep: DeserializeOwned>(
        &self,
        name: &'static str,
        subject: String,
        request: &Req,
        started: Instant,
    ) -> Result<Rep, TransportError> {
        let payload: Bytes = serde_json::to_vec(request)
            .map_err(|e| TransportError::Codec {
                role: name,
                message: e.to_string(),
            })?
            .into();
        let mut delay = Duration::from_millis(50);
        let mut refusals = 0;
        loop {
            let mut headers = HeaderMap::new();
            headers.insert(RUN_HEADER, self.run.as_str());
            inject_trace(&mut headers);
            let request = async_nats::Request::new()
                .payload(payload.clone())
                .headers(headers)
                .timeout(Some(self.policy.timeout));
            let mut disconnects = self.connection.disconnects.clone();
            disconnects.mark_unchanged();
            let sent = tokio::select! {
                r = self.connection.client.send_request(subject.clone(), request) => Some(r),
                _ = disconnects.changed() => None,
            };
            let Some(sent) = sent else {
                // The connection dropped: the reply is lost with it; ask again once back.
                tracing::debug!(
                    role = name,
                    "connection lost during a role request; asking again"
                );
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(2));
                continue;
            };
            let error = match sent {
                Ok(reply) => {
                    if let Some(error) = header(reply.headers.as_ref(), ERROR_HEADER) {
                        // A process that cannot serve the run (say, a missing API key) refused;
                        // another member of the queue group may not.
                        refusals += 1;
                        if refusals >= MAX_REFUSALS {
                            return Err(TransportError::Codec {
                                role: name,
                                message: error.to_string(),
                            });
                        }
                        tracing::debug!(role = name, %error, "role request refused; asking again");
                        continue;
                    }
                    return serde_json::from_slice(&reply.payload).map_err(|e| {
                        TransportError::Codec {
                            role: name,
                            message: e.to_string(),
                        }
                    });
                }
                Err(e) => e,
            };
            let retryable = matches!(
                error.kind(),
                RequestErrorKind::NoResponders
                    | RequestErrorKind::TimedOut
                    | RequestErrorKind::Other
            );
            if !retryable || started.elapsed() + delay > self.policy.retry_for {
                return Err(match error.kind() {
                    RequestErrorKind::TimedOut => TransportError::Timeout { role: name },
                    _ => TransportError::Unavailable {
                        role: name,
                        message: error.to_string(),
                    },
                });
            }
            tracing::debug!(role = name, error = %error, "role request failed; retrying");
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(2));
        }
    }
}

#[async_trait::async_trait]
impl Transport for NatsTransport {
    async fn user(&self, request: UserRequest) -> Result<UserReply, TransportError> {
        self.ask(Role::User, role_subject(Role::User, None), &request)
            .await
    }

    async fn service(&self, request: ServiceRequest) -> Result<ServiceReply, TransportError> {
        let subject = role_subject(Role::Service, Some(&request.job.service_model));
        self.ask(Role::Service, subject, &request).await
    }

    async fn judge(&self, request: JudgeRequest) -> Result<JudgeReply, TransportError> {
        self.ask(Role::Judge, role_subject(Role::Judge, None), &request)
            .await
    }

    async fn rule(&self, request: RuleRequest) -> Result<RuleReply, TransportError> {
        self.ask(Role::Rule, role_subject(Role::Rule, None), &request)
            .await
    }

    async fn desk_agent(
        &self,
        request: DeskAgentRequest,
    ) -> Result<DeskAgentReply, TransportError> {
        let subject = role_subject(Role::Service, Some(&request.job.model));
        self.ask(Role::Service, subject, &request).await
    }

    async fn desk_customer(
        &self,
        request: DeskCustomerRequest,
    ) -> Result<DeskCustomerReply, TransportError> {
        self.ask(Role::User, role_subject(Role::User, None), &request)
            .await
    }

    async fn desk_judge(
        &self,
        request: DeskJudgeRequest,
    ) -> Result<DeskJudgeReply, TransportError> {
        self.ask(Role::Judge, role_subject(Role::Judge, None), &request)
            .await
    }

    async fn call(&self, request: ModelCallRequest) -> Result<ModelCallReply, TransportError> {
        let role = request.role.role();
        let model = (request.role == CallRole::Agent).then_some(request.model.as_str());
        self.ask(role, role_subject(role, model), &request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_follow_the_architecture() {
        assert_eq!(role_subject(Role::User, None), "sage.v1.role.user");
        assert_eq!(role_subject(Role::Judge, None), "sage.v1.role.judge");
        assert_eq!(role_subject(Role::Rule, None), "sage.v1.role.rule");
        assert_eq!(
            role_subject(Role::Service, Some("gpt-4.1 mini")),
            "sage.v1.role.service.gpt-4_1_mini"
        );
        assert_eq!(role_subject(Role::Service, None), "sage.v1.role.service.*");
        assert_eq!(role_queue(Role::Service, Some("a.b")), "service.a_b");
        assert_eq!(role_queue(Role::Judge, None), "judge");
        assert_eq!(jobs_subject("r1"), "sage.v1.jobs.r1");
        assert_eq!(records_subject("r1"), "sage.v1.records.r1");
    }

    #[test]
    fn urls_in_logs_carry_no_credentials() {
        assert_eq!(
            redact_url("nats://alice:FAKE-pw@nats:4222,tls://tok@other:4222"),
            "nats://<redacted>@nats:4222,tls://<redacted>@other:4222"
        );
        assert_eq!(redact_url("nats://127.0.0.1:4222"), "nats://127.0.0.1:4222");
    }

    #[test]
    fn trace_context_crosses_the_headers() {
        use opentelemetry::trace::TracerProvider as _;
        use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
        use tracing_subscriber::layer::SubscriberExt;
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
        crate::telemetry::trace::enable_propagation();
        tracing::subscriber::with_default(subscriber, || {
            let mut headers = HeaderMap::new();
            {
                let dialogue = tracing::info_span!("dialogue");
                let _entered = dialogue.enter();
                inject_trace(&mut headers);
            }
            assert!(
                headers
                    .get("traceparent")
                    .is_some_and(|v| v.as_str().starts_with("00-")),
                "{headers:?}"
            );
            // The other process: its span joins the dialogue's trace.
            let role = tracing::info_span!("role");
            extract_trace(Some(&headers), &role);
            drop(role);
        });
        let spans = exporter.get_finished_spans().expect("spans");
        let find = |name: &str| {
            spans
                .iter()
                .find(|s| s.name == name)
                .unwrap_or_else(|| panic!("no {name} span in {spans:?}"))
        };
        let (dialogue, role) = (find("dialogue"), find("role"));
        assert_eq!(
            role.span_context.trace_id(),
            dialogue.span_context.trace_id()
        );
        assert_eq!(role.parent_span_id, dialogue.span_context.span_id());
        assert!(role.parent_span_is_remote);
    }

    #[test]
    fn debug_never_shows_secrets() {
        let config = NatsConfig {
            url: "nats://x".into(),
            user: Some("u".into()),
            password: Some("FAKE-password".into()),
            token: Some("FAKE-token".into()),
            nkey_seed: Some("FAKE-nkey-seed".into()),
            ..Default::default()
        };
        let shown = format!("{config:?}");
        assert!(!shown.contains("FAKE-password") && !shown.contains("FAKE-token"));
        assert!(!shown.contains("FAKE-nkey-seed"));
        assert!(shown.contains("<redacted>"));
    }
}
