//! Logging and tracing: `tracing` to standard error (text or JSON, filtered by `RUST_LOG`), and,
//! when an OTLP endpoint is configured, spans exported through tracing-opentelemetry (OTLP
//! over HTTP, protobuf, to `{endpoint}/v1/traces`). The W3C trace-context propagator is installed so a dialogue's trace crosses
//! processes in message headers (see `transport::nats`).

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::trace::SdkTracerProvider;
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

static EXPORTING: AtomicBool = AtomicBool::new(false);

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

/// Installs the process's subscriber: log lines at `default_level` and above unless `RUST_LOG`
/// says otherwise. With `otlp_endpoint`, spans go to that collector under `service_name`; must
/// then be called inside a tokio runtime. A second call in one process keeps the first
/// subscriber.
pub fn init(
    format: LogFormat,
    default_level: &str,
    otlp_endpoint: Option<&str>,
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
    let Some(endpoint) = otlp_endpoint else {
        let _ = tracing_subscriber::registry().with(fmt).try_init();
        return Ok(TraceGuard(None));
    };
    // The exporter's HTTP client is reqwest's, built with `rustls-no-provider`.
    crate::ensure_crypto_provider();
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
        .with_endpoint(traces_url(endpoint))
        .build()
        .map_err(|e| TraceError {
            endpoint: endpoint.to_string(),
            message: e.to_string(),
        })?;
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name(service_name.to_string())
                .build(),
        )
        .build();
    let tracer = provider.tracer("sage");
    let otel = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(EnvFilter::new("sage=info"));
    let _ = tracing_subscriber::registry()
        .with(fmt)
        .with(otel)
        .try_init();
    enable_propagation();
    Ok(TraceGuard(Some(provider)))
}

#[cfg(test)]
mod tests {
    use super::traces_url;

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
