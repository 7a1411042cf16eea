//! Logging and tracing: `tracing` to standard error (text or JSON, filtered by `RUST_LOG`), and,
//! when an OTLP endpoint is configured, spans exported through tracing-opentelemetry (OTLP
//! over HTTP, protobuf, to `{endpoint}/v1/traces`, or over gRPC, as `OTEL_EXPORTER_OTLP_PROTOCOL`
//! says). The W3C trace-context propagator is installed so a dialogue's trace crosses
//! processes in message headers (see `transport::nats`).

use opentelemetry::trace::TracerProvider as _;
use opentelemetry::trace::{SpanKind, TraceId};
use opentelemetry::{Context, KeyValue};
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::trace::{SamplingDecision, SamplingResult, ShouldSample};
use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicBool, Ordering};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Tracing could not be set up.
#[derive(Debug, thiserror::Error)]
#[error("OTLP exporter for {endpoint}: {message}")]
pub struct TraceError {
    /// The configured endpoint.
    pub endpoint: String,
    /// Why.
    pub message: String,
}

/// The OTLP transport (`OTEL_EXPORTER_OTLP_PROTOCOL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OtlpProtocol {
    /// `http/protobuf`: protobuf posted to `{endpoint}/v1/traces` (port 4318 by convention).
    #[default]
    HttpProtobuf,
    /// `grpc` (port 4317 by convention): OTLP/gRPC through tonic, on a runtime of its own.
    Grpc,
}

impl OtlpProtocol {
    /// Reads OpenTelemetry's own value (`http/protobuf` or `grpc`).
    pub fn parse(text: &str) -> Result<OtlpProtocol, String> {
        match text {
            "http/protobuf" => Ok(OtlpProtocol::HttpProtobuf),
            "grpc" => Ok(OtlpProtocol::Grpc),
            other => Err(format!(
                "OTLP protocol `{other}`: expected `http/protobuf` or `grpc`"
            )),
        }
    }
}

/// Where and how spans are exported.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceExport {
    /// The collector's base URL (as `OTEL_EXPORTER_OTLP_ENDPOINT` has it).
    pub endpoint: String,
    /// The OTLP transport.
    pub protocol: OtlpProtocol,
    /// The share of dialogues traced, 0 to 1, decided by each dialogue's id
    /// ([`sampled`]).
    pub sample_rate: f64,
    /// Whether model calls carry the messages sent and received (they may hold customer data;
    /// off unless asked, as the GenAI conventions say).
    pub capture_content: bool,
}

static EXPORTING: AtomicBool = AtomicBool::new(false);
static CAPTURE_CONTENT: AtomicBool = AtomicBool::new(false);
/// The sample rate's bits (an f64), 1.0 until [`init`] sets it.
static SAMPLE_RATE: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(0x3FF0_0000_0000_0000);

/// Whether model calls carry their messages (`--trace-content`).
pub fn capture_content() -> bool {
    CAPTURE_CONTENT.load(Ordering::Relaxed)
}

/// The share of dialogues traced.
pub fn sample_rate() -> f64 {
    f64::from_bits(SAMPLE_RATE.load(Ordering::Relaxed))
}

/// Sets what [`capture_content`] and [`sample_rate`] say (done by [`init`]; tests call it with
/// their own exporter).
pub fn set_options(sample_rate: f64, capture_content: bool) {
    SAMPLE_RATE.store(sample_rate.clamp(0.0, 1.0).to_bits(), Ordering::Relaxed);
    CAPTURE_CONTENT.store(capture_content, Ordering::Relaxed);
}

/// Whether spans are exported (trace context is only worth propagating then).
pub fn exporting() -> bool {
    EXPORTING.load(Ordering::Relaxed)
}

/// Installs the W3C trace-context propagator and turns propagation on (done by [`init`] when
/// spans are exported; tests call it with their own exporter).
pub fn enable_propagation() {
    opentelemetry::global::set_text_map_propagator(
        opentelemetry_sdk::propagation::TraceContextPropagator::new(),
    );
    EXPORTING.store(true, Ordering::Relaxed);
}

/// Flushes and stops span export when dropped (keep it until the process ends; drop it inside
/// the tokio runtime).
pub struct TraceGuard(Option<SdkTracerProvider>);

impl Drop for TraceGuard {
    fn drop(&mut self) {
        if let Some(provider) = self.0.take()
            && let Err(e) = provider.shutdown()
        {
            eprintln!("tracing: span export did not shut down cleanly: {e}");
        }
    }
}

/// Where spans are posted: the OTLP/HTTP traces path under `endpoint` (the base URL, as
/// `OTEL_EXPORTER_OTLP_ENDPOINT` has it), unless `endpoint` already names it.
fn traces_url(endpoint: &str) -> String {
    let base = endpoint.trim_end_matches('/');
    if base.ends_with("/v1/traces") {
        base.to_string()
    } else {
        format!("{base}/v1/traces")
    }
}

/// A span exporter on a Tokio runtime of its own (one worker thread): the batch processor
/// exports from a plain thread, and the gRPC exporter (tonic) needs a reactor there. Dropped
/// without blocking, wherever the last reference goes.
#[derive(Debug)]
struct OnRuntime<E> {
    inner: E,
    runtime: Option<tokio::runtime::Runtime>,
}

impl OnRuntime<opentelemetry_otlp::SpanExporter> {
    /// The OTLP/gRPC exporter to `endpoint` (e.g. `http://otel-collector:4317`).
    fn grpc(endpoint: &str) -> Result<Self, String> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("sage-otlp-grpc")
            .enable_all()
            .build()
            .map_err(|e| format!("the gRPC exporter's runtime: {e}"))?;
        let inner = {
            let _inside = runtime.enter();
            opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .with_endpoint(endpoint)
                .build()
                .map_err(|e| e.to_string())?
        };
        Ok(OnRuntime {
            inner,
            runtime: Some(runtime),
        })
    }
}

impl<E: opentelemetry_sdk::trace::SpanExporter> opentelemetry_sdk::trace::SpanExporter
    for OnRuntime<E>
{
    fn export(
        &self,
        batch: Vec<opentelemetry_sdk::trace::SpanData>,
    ) -> impl std::future::Future<Output = opentelemetry_sdk::error::OTelSdkResult> + Send {
        let result = match &self.runtime {
            Some(runtime) => runtime.block_on(self.inner.export(batch)),
            None => Ok(()),
        };
        std::future::ready(result)
    }

    fn shutdown_with_timeout(
        &self,
        timeout: std::time::Duration,
    ) -> opentelemetry_sdk::error::OTelSdkResult {
        let _inside = self.runtime.as_ref().map(|r| r.enter());
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> opentelemetry_sdk::error::OTelSdkResult {
        let _inside = self.runtime.as_ref().map(|r| r.enter());
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        self.inner.set_resource(resource);
    }
}

impl<E> Drop for OnRuntime<E> {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Installs the process's subscriber: log lines at `default_level` and above unless `RUST_LOG`
/// says otherwise. With `otlp_endpoint`, spans go to that collector under `service_name`; must
/// then be called inside a tokio runtime. A second call in one process keeps the first
/// subscriber.
pub fn init(
    format: LogFormat,
    default_level: &str,
    export: Option<&TraceExport>,
    service_name: &str,
) -> Result<TraceGuard, TraceError> {
    let filter =
        || EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_level));
    let fmt = match format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_filter(filter())
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_writer(std::io::stderr)
            .with_filter(filter())
            .boxed(),
    };
    let Some(export) = export else {
        let _ = tracing_subscriber::registry().with(fmt).try_init();
        return Ok(TraceGuard(None));
    };
    let endpoint = export.endpoint.as_str();
    // The exporter's HTTP client is reqwest's, built with `rustls-no-provider`.
    crate::ensure_crypto_provider();
    let failed = |message: String| TraceError {
        endpoint: endpoint.to_string(),
        message,
    };
    let builder = SdkTracerProvider::builder();
    let builder = match export.protocol {
        OtlpProtocol::HttpProtobuf => builder.with_batch_exporter(
            opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_endpoint(traces_url(endpoint))
                .build()
                .map_err(|e| failed(e.to_string()))?,
        ),
        OtlpProtocol::Grpc => {
            builder.with_batch_exporter(OnRuntime::grpc(endpoint).map_err(failed)?)
        }
    };
    let provider = builder
        .with_sampler(DialogueSampler)
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name(service_name.to_string())
                .build(),
        )
        .build();
    // The traces rebuilt after the fact (`genai::keep_errored`) go through the global tracer.
    opentelemetry::global::set_tracer_provider(provider.clone());
    let tracer = provider.tracer("sage");
    let otel = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(EnvFilter::new("sage=info"));
    let _ = tracing_subscriber::registry()
        .with(fmt)
        .with(otel)
        .try_init();
    set_options(export.sample_rate, export.capture_content);
    enable_propagation();
    Ok(TraceGuard(Some(provider)))
}

/// The attribute that names a dialogue on its root span (and on every call of it).
pub const DIALOGUE_ID: &str = "sage.dialogue_id";

/// Whether the dialogue `id` is traced at `rate` (0 to 1): the first 8 bytes of its SHA-256,
/// as a fraction of 2^64, below the rate. Deterministic: every process, every rerun, the same
/// answer; and nested (a dialogue traced at 1% is traced at 10%).
pub fn sampled(id: &str, rate: f64) -> bool {
    if rate >= 1.0 {
        return true;
    }
    let digest = Sha256::digest(id.as_bytes());
    let mut head = [0u8; 8];
    head.copy_from_slice(&digest[..8]);
    (u64::from_be_bytes(head) as f64) < rate * 2f64.powi(64)
}

/// The tracer's sampler: a span with a parent follows it (a worker's role span follows the
/// `traceparent` flag of the request); a root span naming a dialogue ([`DIALOGUE_ID`]) is kept
/// when [`sampled`] at [`sample_rate`]; any other root span is kept.
#[derive(Debug, Clone, Copy)]
pub struct DialogueSampler;

impl ShouldSample for DialogueSampler {
    fn should_sample(
        &self,
        parent_context: Option<&Context>,
        _trace_id: TraceId,
        _name: &str,
        _span_kind: &SpanKind,
        attributes: &[KeyValue],
        _links: &[opentelemetry::trace::Link],
    ) -> SamplingResult {
        use opentelemetry::trace::TraceContextExt;
        let parent = parent_context.filter(|cx| cx.has_active_span());
        let keep = match parent {
            Some(cx) => cx.span().span_context().is_sampled(),
            None if attributes.iter().any(|kv| kv.key.as_str() == KEPT) => true,
            None => attributes
                .iter()
                .find(|kv| kv.key.as_str() == DIALOGUE_ID)
                .is_none_or(|kv| sampled(&kv.value.as_str(), sample_rate())),
        };
        SamplingResult {
            decision: if keep {
                SamplingDecision::RecordAndSample
            } else {
                SamplingDecision::Drop
            },
            attributes: Vec::new(),
            trace_state: parent
                .map(|cx| cx.span().span_context().trace_state().clone())
                .unwrap_or_default(),
        }
    }
}

/// The attribute that keeps a root span whatever the sample rate: the trace of a dialogue the
/// rate left out, sent after the fact because the dialogue had an error (`genai::keep_errored`).
pub const KEPT: &str = "sage.kept";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_by_dialogue_id_is_deterministic_and_near_the_rate() {
        let ids: Vec<String> = (0..10_000).map(|i| format!("run-x/telecom/{i}")).collect();
        let kept = |rate: f64| ids.iter().filter(|id| sampled(id, rate)).count();
        let tenth = kept(0.1);
        assert!((900..1100).contains(&tenth), "{tenth}");
        assert_eq!(kept(0.1), tenth, "the same ids, the same choice");
        assert_eq!(kept(1.0), 10_000);
        assert_eq!(kept(0.0), 0);
        // Nested: a dialogue kept at 1% is kept at 10%.
        assert!(
            ids.iter()
                .filter(|id| sampled(id, 0.01))
                .all(|id| sampled(id, 0.1))
        );
    }

    #[test]
    fn spans_go_to_the_traces_path_under_the_endpoint() {
        assert_eq!(
            traces_url("http://otel-collector:4318"),
            "http://otel-collector:4318/v1/traces"
        );
        assert_eq!(
            traces_url("http://otel-collector:4318/"),
            "http://otel-collector:4318/v1/traces"
        );
        assert_eq!(
            traces_url("https://otlp.example/v1/traces"),
            "https://otlp.example/v1/traces"
        );
    }
}
