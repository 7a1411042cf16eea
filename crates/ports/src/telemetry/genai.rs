//! Dialogues and turns as spans that GenAI-aware trace viewers read (docs/metrics.md,
//! "Tracing"), and what the model-call spans share with them: the attributes of a call's
//! record ([`call_attributes`], [`error_type`]). The model-call spans themselves are made where
//! the calls are (`llm::span`): `chat {model}` client spans following the OpenTelemetry
//! semantic conventions for generative AI, with OpenInference's names beside them
//! (`openinference.span.kind`, `llm.token_count.*`: what Arize Phoenix reads) and SAGE-RS's own
//! (`sage.*`).
//!
//! The dialogue span is a trace's root ([`dialogue_span`], [`record_dialogue`]); each turn a
//! child ([`turn_span`], [`record_turn`]: the agent's outcome, the reference, the scores). A
//! dialogue the sample rate leaves out ([`super::trace::sampled`]) but that erred is traced all
//! the same, rebuilt from its record ([`keep_errored`]).

use super::trace::{DIALOGUE_ID, KEPT, exporting, sampled};
use opentelemetry::trace::SpanKind;
use opentelemetry::{Context, KeyValue};
use sage_core::protocol::{
    CallRecord, DialogueJob, DialogueRecord, ServiceOutcome, TurnRecord, Usage,
};
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Token usage as span attributes, in the GenAI conventions' names and OpenInference's: input,
/// output, and of the input what the provider read from its prompt cache.
fn usage_attributes(usage: &Usage) -> Vec<KeyValue> {
    let (input, output) = (usage.input_tokens as i64, usage.output_tokens as i64);
    let cache_read = usage.cached_input_tokens as i64;
    vec![
        KeyValue::new("gen_ai.usage.input_tokens", input),
        KeyValue::new("gen_ai.usage.output_tokens", output),
        KeyValue::new("gen_ai.usage.cache_read.input_tokens", cache_read),
        KeyValue::new("llm.token_count.prompt", input),
        KeyValue::new("llm.token_count.completion", output),
        KeyValue::new("llm.token_count.total", input + output),
        KeyValue::new("llm.token_count.prompt_details.cache_read", cache_read),
    ]
}

/// What a call's record says, as span attributes: usage (so a span's token counts are the
/// record's, the prompt-cache reads included), finish reason, cost, cache, attempts, latency,
/// and the error type when it failed.
pub fn call_attributes(r: &CallRecord) -> Vec<KeyValue> {
    let mut attributes = usage_attributes(&r.usage);
    attributes.extend([
        KeyValue::new("sage.cost_usd", r.cost_usd),
        KeyValue::new("sage.cached", r.cached),
        KeyValue::new("sage.attempts", i64::from(r.attempts)),
        KeyValue::new("sage.latency_ms", r.latency_ms as i64),
        KeyValue::new("sage.refused", i64::from(r.refused)),
        KeyValue::new("sage.limit_wait_ms", r.limit_wait_ms as i64),
    ]);
    if let Some(reason) = &r.finish_reason {
        attributes.push(KeyValue::new(
            "gen_ai.response.finish_reasons",
            opentelemetry::Value::Array(
                vec![opentelemetry::StringValue::from(reason.clone())].into(),
            ),
        ));
    }
    if let Some(error) = &r.error {
        attributes.push(KeyValue::new("error.type", error_type(error)));
    }
    attributes
}

/// The `error.type` of a failed call's message: `429`, `timeout`, `http_5xx`, ... or `other`.
pub fn error_type(message: &str) -> &'static str {
    if message.contains("HTTP 429") {
        "429"
    } else if message.contains("timed out") || message.contains("timeout") {
        "timeout"
    } else if message.starts_with("HTTP 5") {
        "http_5xx"
    } else if message.starts_with("HTTP ") {
        "http_4xx"
    } else {
        "other"
    }
}

/// The span of one dialogue, the root of its trace (none when spans are not exported): its
/// turns are children, their model calls grandchildren, in whatever process makes them.
pub fn dialogue_span(job: &DialogueJob) -> tracing::Span {
    if !exporting() {
        return tracing::Span::none();
    }
    let span = tracing::info_span!(
        "dialogue",
        otel.name = %format!("dialogue {}", job.scenario),
        sage.dialogue_id = %job.dialogue_id,
    );
    for kv in job_attributes(job) {
        span.set_attribute(kv.key, kv.value);
    }
    span
}

/// A dialogue's job as span attributes.
fn job_attributes(job: &DialogueJob) -> Vec<KeyValue> {
    vec![
        KeyValue::new("openinference.span.kind", "CHAIN"),
        KeyValue::new("session.id", job.dialogue_id.clone()),
        KeyValue::new("sage.run_id", job.run_id.clone()),
        KeyValue::new("sage.scenario", job.scenario.clone()),
        KeyValue::new("sage.model", job.service_model.clone()),
        KeyValue::new("sage.customer_model", job.user_model.clone()),
        KeyValue::new("sage.adversarial", job.adversarial.to_string()),
        KeyValue::new("sage.intent", job.intent.clone()),
        KeyValue::new("sage.persona", job.persona.clone()),
        KeyValue::new("sage.target.action", job.target.action.clone()),
        KeyValue::new("sage.target.path", job.target.path.join(">")),
    ]
}

/// Records how a dialogue ended on its span: the end, the turns, the format and infrastructure
/// errors, the usage and cost of every call (the record's).
pub fn record_dialogue(span: &tracing::Span, record: &DialogueRecord) {
    if span.is_none() {
        return;
    }
    for kv in end_attributes(record) {
        span.set_attribute(kv.key, kv.value);
    }
    if record.had_infra_error() {
        span.set_status(opentelemetry::trace::Status::error("infrastructure error"));
    }
}

/// How a dialogue ended, as span attributes (its usage summed over every call).
fn end_attributes(record: &DialogueRecord) -> Vec<KeyValue> {
    let mut attributes = usage_attributes(&record.usage);
    attributes.extend([
        KeyValue::new("sage.end", format!("{:?}", record.end)),
        KeyValue::new("sage.turns", record.turns.len() as i64),
        KeyValue::new(
            "sage.format_error_turns",
            record.format_error_turns() as i64,
        ),
        KeyValue::new("sage.infra_error", record.had_infra_error()),
        KeyValue::new("sage.cost_usd", record.cost_usd),
    ]);
    attributes
}

/// The span of one conversation of a suite on the one lifecycle (`sage_actors::suite`), the
/// root of its trace (none when spans are not exported): its model calls are children, in
/// whatever process makes them. Sampled by its id, as a dialogue is.
pub fn conversation_span(suite: &str, run_id: &str, id: &str, agent: &str) -> tracing::Span {
    if !exporting() {
        return tracing::Span::none();
    }
    let span = tracing::info_span!(
        "conversation",
        otel.name = %format!("{suite} {id}"),
        sage.dialogue_id = %id,
    );
    for kv in [
        KeyValue::new("openinference.span.kind", "CHAIN"),
        KeyValue::new("session.id", id.to_string()),
        KeyValue::new("sage.run_id", run_id.to_string()),
        KeyValue::new("sage.suite", suite.to_string()),
        KeyValue::new("sage.model", agent.to_string()),
    ] {
        span.set_attribute(kv.key, kv.value);
    }
    span
}

/// Records how a conversation ended on its span: its turns, and an error status when an
/// infrastructure error stopped it (or it could not be played).
pub fn record_conversation(span: &tracing::Span, turns: usize, infra_error: bool) {
    if span.is_none() {
        return;
    }
    span.set_attribute("sage.turns", turns as i64);
    span.set_attribute("sage.infra_error", infra_error);
    if infra_error {
        span.set_status(opentelemetry::trace::Status::error("infrastructure error"));
    }
}

/// The span of turn `turn` of a dialogue (none when spans are not exported).
pub fn turn_span(job: &DialogueJob, turn: u32) -> tracing::Span {
    if !exporting() {
        return tracing::Span::none();
    }
    let span = tracing::info_span!("turn", otel.name = %format!("turn {turn}"));
    span.set_attribute("openinference.span.kind", "CHAIN");
    span.set_attribute("sage.turn", i64::from(turn));
    span.set_attribute(DIALOGUE_ID, job.dialogue_id.clone());
    span
}

/// Records a played turn on its span: the agent's outcome (valid, format error, infrastructure
/// error), the rule engine's reference when the turn was judged, and the turn's scores.
pub fn record_turn(span: &tracing::Span, turn: &TurnRecord) {
    if span.is_none() {
        return;
    }
    for kv in turn_attributes(turn) {
        span.set_attribute(kv.key, kv.value);
    }
    if let Some(error) = &turn.infra_error {
        span.set_status(opentelemetry::trace::Status::error(error.clone()));
    }
}

/// A played turn as span attributes.
fn turn_attributes(turn: &TurnRecord) -> Vec<KeyValue> {
    let mut out = vec![KeyValue::new("sage.turn", i64::from(turn.turn))];
    let outcome = match &turn.outcome {
        ServiceOutcome::Valid { turn } => {
            out.push(KeyValue::new("sage.agent.action", turn.action.clone()));
            out.push(KeyValue::new("sage.agent.path", turn.path.join(">")));
            "valid"
        }
        ServiceOutcome::FormatError { .. } => "format_error",
        ServiceOutcome::InfraError { .. } => "infra_error",
    };
    out.push(KeyValue::new("sage.outcome", outcome));
    if let Some(error) = &turn.infra_error {
        out.push(KeyValue::new("sage.infra_error", error.clone()));
    }
    if let Some(Ok(reference)) = &turn.reference {
        out.push(KeyValue::new(
            "sage.reference.action",
            reference.action.clone(),
        ));
        out.push(KeyValue::new(
            "sage.reference.path",
            reference.path.join(">"),
        ));
    }
    if let Some(s) = &turn.scores {
        for (key, value) in [
            ("sage.score.logic", s.logic),
            ("sage.score.chat", s.chat),
            ("sage.score.overall", s.overall),
            ("sage.score.acc_cls", s.acc_cls),
            ("sage.score.sim_path", s.sim_path),
            ("sage.score.acc_action", s.acc_action),
        ] {
            out.push(KeyValue::new(key, value));
        }
    }
    out
}

/// Whether `record` is kept whatever the rate: an infrastructure or a format error in it.
pub fn errored(record: &DialogueRecord) -> bool {
    record.had_infra_error() || record.format_error_turns() > 0
}

/// Sends the trace of a dialogue that the sample rate left out but that had an error
/// ([`errored`]), rebuilt from its record: the dialogue span from `started` to now, its turns
/// and their calls laid one after the other, each call as long as its measured latency
/// (`sage.reconstructed: true`: the call's timing, not its clock). Nothing when spans are not
/// exported, the dialogue was traced live, or it had no error.
pub fn keep_errored(record: &DialogueRecord, started: std::time::SystemTime) {
    use opentelemetry::trace::{Span as _, TraceContextExt, Tracer as _};
    let id = &record.job.dialogue_id;
    if !exporting() || sampled(id, super::trace::sample_rate()) || !errored(record) {
        return;
    }
    let tracer = opentelemetry::global::tracer("sage");
    let mut attributes = job_attributes(&record.job);
    attributes.extend(end_attributes(record));
    attributes.extend([
        KeyValue::new(DIALOGUE_ID, id.clone()),
        KeyValue::new(KEPT, "error"),
        KeyValue::new("sage.reconstructed", true),
    ]);
    let root = tracer
        .span_builder(format!("dialogue {}", record.job.scenario))
        .with_start_time(started)
        .with_attributes(attributes)
        // A root: not under whatever span is current (the dialogue's unsampled live one).
        .start_with_context(&tracer, &Context::new());
    let cx = Context::new().with_span(root);
    let mut at = started;
    let closing = (!record.closing_calls.is_empty()).then_some((None, &record.closing_calls));
    let turns = record
        .turns
        .iter()
        .map(|t| (Some(t), &t.calls))
        .chain(closing);
    for (i, (turn, calls)) in turns.enumerate() {
        let number = turn.map_or(i as u32 + 1, |t| t.turn);
        let mut attributes = turn.map(turn_attributes).unwrap_or_default();
        attributes.extend([
            KeyValue::new("openinference.span.kind", "CHAIN"),
            KeyValue::new(DIALOGUE_ID, id.clone()),
        ]);
        let span = tracer
            .span_builder(format!("turn {number}"))
            .with_start_time(at)
            .with_attributes(attributes)
            .start_with_context(&tracer, &cx);
        let turn_cx = cx.with_span(span);
        for call in calls.iter() {
            let end = at + std::time::Duration::from_millis(call.latency_ms);
            let provider = if call.simulated {
                "sage.simulated"
            } else {
                "unknown"
            };
            let mut attributes = call_attributes(call);
            attributes.extend([
                KeyValue::new("gen_ai.operation.name", "chat"),
                KeyValue::new("gen_ai.provider.name", provider),
                KeyValue::new("gen_ai.request.model", call.model.clone()),
                KeyValue::new("openinference.span.kind", "LLM"),
                KeyValue::new("llm.model_name", call.model.clone()),
                KeyValue::new("sage.turn", i64::from(number)),
                KeyValue::new(DIALOGUE_ID, id.clone()),
                KeyValue::new("sage.reconstructed", true),
            ]);
            let mut span = tracer
                .span_builder(format!("chat {}", call.model))
                .with_kind(SpanKind::Client)
                .with_start_time(at)
                .with_attributes(attributes)
                .start_with_context(&tracer, &turn_cx);
            if let Some(e) = &call.error {
                span.set_status(opentelemetry::trace::Status::error(e.clone()));
            }
            span.end_with_timestamp(end);
            at = end;
        }
        turn_cx.span().end_with_timestamp(at);
    }
    cx.span()
        .end_with_timestamp(at.max(std::time::SystemTime::now()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_attempts_error_type_is_named() {
        assert_eq!(
            error_type("rate limited (HTTP 429), retry after 5 ms"),
            "429"
        );
        assert_eq!(error_type("HTTP 503: busy"), "http_5xx");
        assert_eq!(error_type("request timed out after 30 s"), "timeout");
    }
}
