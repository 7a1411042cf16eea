//! NATS message headers as a worker and a requester read and write them: the lines of a header
//! block (`Name: value`, as async-nats accepts them) become a header map; `Sage-Run` and
//! `Sage-Error` are read with `transport::nats::header`; the W3C trace context is extracted
//! into a span (`extract_trace`) and injected again from it (`inject_trace`), keeping the
//! trace id of a valid `traceparent`; and any text, made a header value (`header_value`, as a
//! `Sage-Error` reply or a message id is made), keeps everything but its line breaks.

use async_nats::{HeaderMap, HeaderName, HeaderValue};
use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{TraceContextExt, TracerProvider};
use sage::transport::nats::{
    ERROR_HEADER, RUN_HEADER, extract_trace, header, header_value, inject_trace,
};
use std::str::FromStr;
use std::sync::Once;
use tracing_subscriber::layer::SubscriberExt;

/// Spans exported to nowhere, and propagation on, as in a worker started with an OTLP endpoint.
fn tracing_on() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        let tracer = provider.tracer("fuzz");
        std::mem::forget(provider);
        let subscriber =
            tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(tracer));
        tracing::subscriber::set_global_default(subscriber).expect("one subscriber");
        sage::telemetry::trace::enable_propagation();
    });
}

struct Extract<'a>(&'a HeaderMap);

impl opentelemetry::propagation::Extractor for Extract<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(|v| v.as_str())
    }
    fn keys(&self) -> Vec<&str> {
        Vec::new()
    }
}

/// The trace id of a header map's valid trace context, if it has one.
fn trace_id(headers: &HeaderMap) -> Option<opentelemetry::trace::TraceId> {
    let cx =
        opentelemetry_sdk::propagation::TraceContextPropagator::new().extract(&Extract(headers));
    let span = cx.span();
    let context = span.span_context();
    context.is_valid().then(|| context.trace_id())
}

/// Feeds one input to what this target fuzzes (panics on what must not happen).
pub fn run(data: &[u8]) {
    tracing_on();
    let text = String::from_utf8_lossy(data);
    let value = header_value(&text);
    assert_eq!(value.as_str(), text.replace(['\r', '\n'], " "));
    let mut headers = HeaderMap::new();
    for line in text.lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (Ok(name), Ok(value)) = (
            HeaderName::from_str(name),
            HeaderValue::from_str(value.trim()),
        ) else {
            continue;
        };
        headers.append(name, value);
    }
    let _ = (header(Some(&headers), RUN_HEADER), header(None, RUN_HEADER));
    if let Some(error) = header(Some(&headers), ERROR_HEADER) {
        assert_eq!(header_value(error).as_str(), error);
    }
    let span = tracing::info_span!("role");
    extract_trace(Some(&headers), &span);
    let mut out = HeaderMap::new();
    span.in_scope(|| inject_trace(&mut out));
    if let Some(id) = trace_id(&headers) {
        assert_eq!(
            trace_id(&out),
            Some(id),
            "the trace is lost across the headers"
        );
    }
}
