//! Structured output (docs/models.md): the schemas derived from a scenario accept what a valid
//! agent gives, each `structured_output` form sends its exact `response_format` to an
//! OpenAI-compatible server (a wiremock mock), `auto` falls back once to the next weaker form on
//! HTTP 400 and remembers it, and an API key never appears in an error.

use sage::llm::openai::{auto_form, response_format};
use sage::llm::sim::SimContext;
use sage::llm::{
    ChatMessage, ChatRequest, ChatRole, Endpoint, ModelConfig, Provider, RetryConfig, Structured,
    StructuredOutput,
};
use sage::protocol::schema::{
    FREE_TEXT_MAX_CHARS, JsonSchema, agent_answer_schema, bounded_strings, judge_answer_schema,
};
use sage::protocol::{Role, parse_agent_output};
use serde_json::{Value, json};
use std::sync::{Arc, Once};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY_VAR: &str = "SAGE_STRUCTURED_TEST_KEY_6b21";
const KEY_VALUE: &str = "FAKE-structured-key";

fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
        // SAFETY: every test calls `init` first and `Once` blocks them until this returns.
        unsafe { std::env::set_var(KEY_VAR, KEY_VALUE) };
    });
}

fn telecom() -> Arc<sage::sop::Sop> {
    let text = sage::scenario::bundled::BUNDLED[5].1;
    Arc::new(sage::sop::from_yaml(text, "telecom_package.yaml").expect("sop"))
}

fn config(server: &MockServer, form: Option<StructuredOutput>) -> ModelConfig {
    let mut c = ModelConfig::new("m", Provider::Openai);
    c.base_url = Some(format!("{}/v1", server.uri()));
    c.api_key_env = Some(KEY_VAR.into());
    c.structured_output = form;
    c.max_tokens = Some(300);
    c.retries = RetryConfig {
        max_attempts: 1,
        base_delay_ms: 0,
        max_delay_ms: 0,
    };
    c
}

fn request(schema: &sage::llm::JsonSchema, default_on: bool) -> ChatRequest {
    ChatRequest {
        messages: vec![
            ChatMessage::new(ChatRole::System, "Answer in JSON."),
            ChatMessage::new(ChatRole::User, "Hello"),
        ],
        json: true,
        structured: Some(Structured {
            schema: Arc::new(schema.clone()),
            default_on,
        }),
        ..ChatRequest::default()
    }
}

fn ok_completion() -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "c1",
        "choices": [{"message": {"role": "assistant", "content": "{}"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1}
    }))
}

/// The `response_format` of every request the server received, in order (`null` when absent),
/// after checking that `max_tokens` is sent as before.
async fn formats(server: &MockServer) -> Vec<Value> {
    let requests = server.received_requests().await.expect("recorded");
    requests
        .iter()
        .map(|r| {
            let body: Value = r.body_json().expect("a JSON body");
            assert_eq!(body["max_tokens"], json!(300));
            assert!(body.get("max_completion_tokens").is_none());
            body.get("response_format").cloned().unwrap_or(Value::Null)
        })
        .collect()
}

#[tokio::test]
async fn a_simulated_agents_valid_answers_validate_against_the_schema() {
    let sop = telecom();
    let schema = agent_answer_schema(&sop).schema;
    let run = sage::plan::RunConfig::default();
    let jobs = sage::plan::jobs(&run, "run", std::slice::from_ref(&sop));
    let strong = run
        .models
        .iter()
        .find(|m| m.name == "sim-strong")
        .expect("sim-strong");
    let endpoint = Endpoint::new(strong.clone(), None).expect("simulated");
    let mut valid = 0;
    for job in jobs.into_iter().take(20) {
        let job = Arc::new(job);
        for turn in 1..=3 {
            let ctx = SimContext {
                sop: sop.clone(),
                job: job.clone(),
                role: Role::Service,
                turn,
                judge_index: 0,
                last_action: None,
                agent_chat: None,
                attempt: 0,
                sample: None,
                misled: false,
            };
            let called = endpoint
                .call(&ChatRequest {
                    json: true,
                    sim: Some(Arc::new(ctx)),
                    ..ChatRequest::default()
                })
                .await;
            let text = called.result.expect("an answer").text;
            if parse_agent_output(&sop, &text, false).is_ok() {
                let value: Value = serde_json::from_str(&text).expect("JSON");
                for form in [&schema, &bounded_strings(&schema, FREE_TEXT_MAX_CHARS)] {
                    let validator =
                        jsonschema::validator_for(&form.to_json()).expect("a valid schema");
                    let errors: Vec<String> = validator
                        .iter_errors(&value)
                        .map(|e| e.to_string())
                        .collect();
                    assert!(errors.is_empty(), "{text}: {errors:?}");
                }
                valid += 1;
            }
        }
    }
    assert!(valid >= 40, "only {valid} valid answers");
}

/// The schema as `json_object` + `schema` sends it: free-text strings bounded to
/// [`FREE_TEXT_MAX_CHARS`] characters.
fn bounded(schema: &JsonSchema) -> Value {
    bounded_strings(&schema.schema, FREE_TEXT_MAX_CHARS).to_json()
}

#[test]
fn each_form_has_its_exact_response_format() {
    let sop = telecom();
    let schema = judge_answer_schema(&sop);
    let s = schema.schema.to_json();
    let rf = |form| response_format(form, &schema).map(|o| o.to_json());
    assert_eq!(
        rf(StructuredOutput::JsonSchema),
        Some(
            json!({"type": "json_schema", "json_schema": {"name": "sage_judge_verdict", "strict": true, "schema": s}})
        )
    );
    assert_eq!(
        rf(StructuredOutput::JsonObjectSchema),
        Some(json!({"type": "json_object", "schema": bounded(&schema)}))
    );
    assert_eq!(
        rf(StructuredOutput::JsonObject),
        Some(json!({"type": "json_object"}))
    );
    assert_eq!(rf(StructuredOutput::None), None);
    // The wire text keeps the prompt's order of properties.
    let text = serde_json::to_string(&response_format(StructuredOutput::JsonSchema, &schema))
        .expect("json");
    assert!(
        text.starts_with(r#"{"type":"json_schema","json_schema":{"name":"sage_judge_verdict","strict":true,"schema":{"type":"object","properties":{"classification":"#),
        "{text}"
    );
}

#[test]
fn auto_is_json_schema_for_openai_itself_only() {
    let mut c = ModelConfig::new("m", Provider::Openai);
    assert_eq!(auto_form(&c), StructuredOutput::JsonSchema);
    c.base_url = Some("https://API.openai.com/v1/".into());
    assert_eq!(auto_form(&c), StructuredOutput::JsonSchema);
    for url in [
        "http://127.0.0.1:8080/v1",
        "https://api.openai.com.example.net/v1",
        "https://gateway.example/api.openai.com/v1",
    ] {
        c.base_url = Some(url.into());
        assert_eq!(auto_form(&c), StructuredOutput::JsonObjectSchema, "{url}");
    }
    let c = ModelConfig::new("m", Provider::Anthropic);
    assert_eq!(auto_form(&c), StructuredOutput::None);
}

#[test]
fn the_config_key_reads_every_form() {
    for (text, form) in [
        ("auto", StructuredOutput::Auto),
        ("json_schema", StructuredOutput::JsonSchema),
        ("json_object_schema", StructuredOutput::JsonObjectSchema),
        ("json_object", StructuredOutput::JsonObject),
        ("none", StructuredOutput::None),
    ] {
        let yaml = format!("name: m\nprovider: openai\nstructured_output: {text}\n");
        let c: ModelConfig = serde_saphyr::from_str(&yaml).expect(text);
        assert_eq!(c.structured_output, Some(form));
        assert_eq!(form.as_str(), text);
    }
    let bad = "name: m\nprovider: openai\nstructured_output: grammar\n";
    let err = serde_saphyr::from_str::<ModelConfig>(bad)
        .expect_err("unknown form")
        .to_string();
    assert!(err.contains("json_object_schema"), "{err}");
}

#[tokio::test]
async fn requests_carry_the_form_of_their_role_and_configuration() {
    init();
    let sop = telecom();
    let schema = agent_answer_schema(&sop);
    let s = schema.schema.to_json();
    let b = bounded(&schema);
    // (configured form, role default on, json_mode) -> response_format sent.
    let cases = [
        (
            Some(StructuredOutput::JsonSchema),
            false,
            true,
            json!({"type": "json_schema", "json_schema": {"name": "sage_agent_answer", "strict": true, "schema": s}}),
        ),
        (
            Some(StructuredOutput::JsonObjectSchema),
            false,
            true,
            json!({"type": "json_object", "schema": b}),
        ),
        (
            Some(StructuredOutput::JsonObject),
            true,
            true,
            json!({"type": "json_object"}),
        ),
        (Some(StructuredOutput::None), true, true, Value::Null),
        // Not configured: off for the agent (JSON mode as before), auto for a judge.
        (None, false, true, json!({"type": "json_object"})),
        (
            None,
            true,
            true,
            json!({"type": "json_object", "schema": b}),
        ),
        (None, true, false, Value::Null),
        // A configured form wins over json_mode.
        (
            Some(StructuredOutput::JsonObjectSchema),
            false,
            false,
            json!({"type": "json_object", "schema": b}),
        ),
    ];
    for (form, default_on, json_mode, expected) in cases {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(ok_completion())
            .mount(&server)
            .await;
        let mut c = config(&server, form);
        c.json_mode = json_mode;
        let endpoint = Endpoint::new(c, None).expect("endpoint");
        let called = endpoint.call(&request(&schema, default_on)).await;
        assert!(called.result.is_ok(), "{:?}", called.result);
        assert_eq!(
            formats(&server).await,
            vec![expected],
            "{form:?} {default_on} {json_mode}"
        );
    }
}

#[tokio::test]
async fn auto_falls_back_once_on_400_and_remembers() {
    init();
    let sop = telecom();
    let schema = judge_answer_schema(&sop);
    let server = MockServer::start().await;
    // The server rejects a schema in response_format, echoing the key; plain JSON mode works.
    Mock::given(method("POST"))
        .and(body_partial_json(
            json!({"response_format": {"schema": {"type": "object"}}}),
        ))
        .respond_with(ResponseTemplate::new(400).set_body_string(format!(
            "{{\"error\": {{\"message\": \"unsupported response_format (key {KEY_VALUE})\"}}}}"
        )))
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ok_completion())
        .with_priority(2)
        .mount(&server)
        .await;
    let endpoint =
        Endpoint::new(config(&server, Some(StructuredOutput::Auto)), None).expect("endpoint");
    for _ in 0..2 {
        let called = endpoint.call(&request(&schema, true)).await;
        assert!(called.result.is_ok(), "{:?}", called.result);
        assert_eq!(called.record.attempts, 1);
    }
    let s = bounded(&schema);
    assert_eq!(
        formats(&server).await,
        vec![
            json!({"type": "json_object", "schema": s}),
            json!({"type": "json_object"}),
            json!({"type": "json_object"}),
        ]
    );
}

#[tokio::test]
async fn a_400_that_is_not_about_the_form_is_reported_and_not_remembered() {
    init();
    let sop = telecom();
    let schema = agent_answer_schema(&sop);
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(400)
                .set_body_string(format!("context_length_exceeded for key {KEY_VALUE}")),
        )
        .mount(&server)
        .await;
    let endpoint =
        Endpoint::new(config(&server, Some(StructuredOutput::Auto)), None).expect("endpoint");
    for _ in 0..2 {
        let called = endpoint.call(&request(&schema, false)).await;
        let error = called.result.expect_err("400").to_string();
        assert_eq!(
            error,
            "HTTP 400: context_length_exceeded for key <redacted>"
        );
        assert!(!called.record.error.unwrap_or_default().contains(KEY_VALUE));
    }
    let s = bounded(&schema);
    let with_schema = json!({"type": "json_object", "schema": s});
    let plain = json!({"type": "json_object"});
    // Each call tried the schema form, then the weaker one once; nothing was remembered.
    assert_eq!(
        formats(&server).await,
        vec![with_schema.clone(), plain.clone(), with_schema, plain]
    );
}

#[tokio::test]
async fn a_configured_form_is_never_changed_behind_the_users_back() {
    init();
    let sop = telecom();
    let schema = agent_answer_schema(&sop);
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_string("json_schema not supported"))
        .mount(&server)
        .await;
    let endpoint =
        Endpoint::new(config(&server, Some(StructuredOutput::JsonSchema)), None).expect("endpoint");
    let called = endpoint.call(&request(&schema, false)).await;
    assert_eq!(
        called.result.expect_err("400").to_string(),
        "HTTP 400: json_schema not supported"
    );
    assert_eq!(formats(&server).await.len(), 1);
}
