//! A model call as a GenAI client span (docs/metrics.md, "Tracing"): `chat {model}` with the
//! OpenTelemetry GenAI attributes of the request, then of the answer and its record
//! ([`crate::telemetry::genai::call_attributes`]), failed attempts as events; the messages only
//! with `--trace-content`.

use crate::llm::{Called, ChatRequest, ModelConfig, Provider};
use crate::telemetry::genai::{call_attributes, error_type};
use crate::telemetry::trace::{capture_content, exporting};
use opentelemetry::KeyValue;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// `gen_ai.provider.name` of a backend (an OpenAI-compatible server reports as `openai`).
fn provider_name(provider: Provider) -> &'static str {
    match provider {
        Provider::Openai => "openai",
        Provider::Anthropic => "anthropic",
        Provider::HttpAgent => "sage.http_agent",
        Provider::Simulated => "sage.simulated",
    }
}

/// The model id sent to the provider (the configured name when none is set).
fn request_model(config: &ModelConfig) -> &str {
    config.model.as_deref().unwrap_or(&config.name)
}

/// The span of one model call (none when spans are not exported): the request's attributes
/// now, the answer's by [`record_call`] when it is done.
pub fn call_span(config: &ModelConfig, request: &ChatRequest) -> tracing::Span {
    if !exporting() {
        return tracing::Span::none();
    }
    let model = request_model(config);
    let dialogue = request.sim.as_ref().map(|s| s.job.dialogue_id.as_str());
    let span = tracing::info_span!(
        "chat",
        otel.name = %format!("chat {model}"),
        otel.kind = "client",
        sage.dialogue_id = dialogue,
    );
    let provider = provider_name(config.provider);
    let mut attributes = vec![
        KeyValue::new("gen_ai.operation.name", "chat"),
        KeyValue::new("gen_ai.provider.name", provider),
        KeyValue::new("gen_ai.system", provider),
        KeyValue::new("gen_ai.request.model", model.to_string()),
        KeyValue::new("sage.model", config.name.clone()),
        KeyValue::new("sage.attempt", i64::from(request.attempt)),
        KeyValue::new("openinference.span.kind", "LLM"),
        KeyValue::new("llm.model_name", model.to_string()),
        KeyValue::new("llm.provider", provider),
        KeyValue::new("llm.system", provider),
    ];
    if let Some(t) = config.temperature {
        attributes.push(KeyValue::new("gen_ai.request.temperature", f64::from(t)));
    }
    if let Some(m) = config.max_tokens {
        attributes.push(KeyValue::new("gen_ai.request.max_tokens", i64::from(m)));
    }
    if let Some(s) = config.seed {
        attributes.push(KeyValue::new("gen_ai.request.seed", s as i64));
    }
    if let Some(sim) = &request.sim {
        attributes.extend([
            KeyValue::new("sage.role", sim.role.as_str()),
            KeyValue::new("sage.scenario", sim.job.scenario.clone()),
            KeyValue::new("sage.turn", i64::from(sim.turn)),
            KeyValue::new("sage.adversarial", sim.job.adversarial.to_string()),
            KeyValue::new("sage.run_id", sim.job.run_id.clone()),
        ]);
        if sim.role == sage_core::protocol::Role::Judge {
            attributes.push(KeyValue::new("sage.judge_index", sim.judge_index as i64));
        }
    }
    if let Some(desk) = &request.desk {
        attributes.extend([
            KeyValue::new("sage.role", format!("desk_{:?}", desk.role).to_lowercase()),
            KeyValue::new("sage.case", desk.case.id.clone()),
            KeyValue::new("sage.turn", i64::from(desk.turn)),
        ]);
    }
    if capture_content() {
        let messages: Vec<serde_json::Value> = request
            .messages
            .iter()
            .map(|m| {
                serde_json::json!({"role": m.role.as_str(), "parts": [{"type": "text", "content": m.content.as_ref()}]})
            })
            .collect();
        attributes.push(KeyValue::new(
            "gen_ai.input.messages",
            serde_json::Value::Array(messages).to_string(),
        ));
        for (i, m) in request.messages.iter().enumerate() {
            attributes.push(KeyValue::new(
                format!("llm.input_messages.{i}.message.role"),
                m.role.as_str(),
            ));
            attributes.push(KeyValue::new(
                format!("llm.input_messages.{i}.message.content"),
                m.content.to_string(),
            ));
        }
    }
    for kv in attributes {
        span.set_attribute(kv.key, kv.value);
    }
    span
}

/// Records a finished call on its span: usage (the record's, so the span's token counts are the
/// record's), finish reason, cost, cache, attempts, latency, and the error when it failed.
pub fn record_call(span: &tracing::Span, config: &ModelConfig, called: &Called) {
    if span.is_none() {
        return;
    }
    let r = &called.record;
    let mut attributes = call_attributes(r);
    attributes.push(KeyValue::new(
        "gen_ai.response.model",
        request_model(config).to_string(),
    ));
    if capture_content()
        && let Ok(response) = &called.result
    {
        attributes.push(KeyValue::new(
            "gen_ai.output.messages",
            serde_json::json!([{"role": "assistant", "parts": [{"type": "text", "content": response.text}]}]).to_string(),
        ));
        attributes.push(KeyValue::new(
            "llm.output_messages.0.message.role",
            "assistant",
        ));
        attributes.push(KeyValue::new(
            "llm.output_messages.0.message.content",
            response.text.clone(),
        ));
    }
    for kv in attributes {
        span.set_attribute(kv.key, kv.value);
    }
    if let Some(error) = &r.error {
        span.set_status(opentelemetry::trace::Status::error(error.clone()));
    }
}

/// Adds a failed attempt of a call to its span as an event: `gen_ai.retry` (the attempt, its
/// error, the delay before the next) or, for an HTTP 429, `gen_ai.rate_limited`.
pub fn attempt_failed(span: &tracing::Span, attempt: u32, error: &str, delay_ms: Option<u64>) {
    if span.is_none() {
        return;
    }
    let name = if error.contains("HTTP 429") {
        "gen_ai.rate_limited"
    } else {
        "gen_ai.retry"
    };
    let mut attributes = vec![
        KeyValue::new("sage.attempt", i64::from(attempt)),
        KeyValue::new("error.type", error_type(error)),
        KeyValue::new("exception.message", error.to_string()),
    ];
    if let Some(d) = delay_ms {
        attributes.push(KeyValue::new("sage.retry_delay_ms", d as i64));
    }
    span.add_event(name, attributes);
}
