//! `sage models check` against wiremock servers that each lack one capability (a wrong key, an
//! unknown model, no `json_schema`, no tools, `max_tokens` rejected, no usage), one that has
//! everything, an Anthropic-compatible one and a closed port: every cell of the capability
//! table (latency and tokens/s aside, which vary) and the binary's exit code. Then the
//! rehearsal (each role's real prompt, read by its real parser), which decides the verdict: a
//! server that fails the generic JSON probes but answers the real agent prompt works; answers
//! the parsers refuse are format errors (a warning); and the rate-limit headers' rows and
//! advice.

use sage::llm::probe::{self, ModelReport, ProbeOptions, Role};
use sage::llm::{ModelConfig, PerMinute, Provider};
use serde_json::{Value, json};
use std::process::Output;
use std::sync::Once;
use std::time::Duration;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const KEY_VAR: &str = "SAGE_MODELS_CHECK_TEST_KEY_6a1f";
const KEY: &str = "FAKE-models-check-key";
const WRONG_VAR: &str = "SAGE_MODELS_CHECK_TEST_WRONG_KEY_93bd";
const WRONG: &str = "FAKE-wrong-key";
/// The bundled telecom scenario: every configuration here names it first, so the rehearsal
/// plays it and the fake servers answer for it.
const TELECOM: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/scenarios/telecom_package.yaml"
);
/// A valid telecom agent answer.
const AGENT_ANSWER: &str = r#"{"classification_output": {"ConsumptionType": "Change", "ApplicationTendency": "Agree", "ConsumptionProfile": "Data", "EmotionTag": "Calm"}, "cot": "change, no contract", "now_path": ["step1", "step2", "step4"], "finals": {"Action": "ChangeOrder"}, "chat": "I will change your package right away."}"#;
/// A valid telecom judge verdict.
const JUDGE_ANSWER: &str = r#"{"classification": {"ConsumptionType": "Change", "ApplicationTendency": "Agree", "ConsumptionProfile": "Data", "EmotionTag": "Calm"}, "chat_quality_dimensions": {"linguistic_quality": 9, "anthropomorphism_emotion": 6, "content_utility": 9, "user_satisfaction": 9, "instruction_compliance": 9}, "classification_reasoning": "r", "chat_quality_reasoning": "r"}"#;
/// A customer's message.
const CUSTOMER_ANSWER: &str = "Hi, I would like to change my package to one with more data.";

/// The answer to a real role's prompt (told by its system prompt's opening), if it is one.
fn role_answer(system: &str, agent: &'static str, judge: &'static str) -> Option<&'static str> {
    if system.contains("customer service representative") {
        Some(agent)
    } else if system.contains("expert evaluator") {
        Some(judge)
    } else if system.contains("role-playing as a customer") {
        Some(CUSTOMER_ANSWER)
    } else {
        None
    }
}

fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
        // SAFETY: every test calls `init` first and `Once` blocks them until this returns.
        unsafe {
            std::env::set_var(KEY_VAR, KEY);
            std::env::set_var(WRONG_VAR, WRONG);
        }
    });
}

/// What a token-limit field does on the fake server.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Limit {
    Honoured,
    Ignored,
    Rejected,
}

/// An OpenAI-compatible chat server with a set of capabilities.
#[derive(Debug, Clone)]
struct Fake {
    models: Vec<&'static str>,
    json_schema: bool,
    tools: bool,
    /// `tool_choice: auto` accepted (vLLM: only with `--enable-auto-tool-choice`).
    auto_tool_choice: bool,
    max_tokens: Limit,
    max_completion_tokens: Limit,
    usage: bool,
    /// Answers a call with `max_completion_tokens` after this long.
    slow_max_completion_tokens: Option<Duration>,
    /// The structured-output probe gets the schema's keys when the form asks for them; when
    /// false it gets prose whatever the form (a model that follows no toy JSON prompt).
    probe_json: bool,
    /// The answer to the real agent prompt.
    agent: &'static str,
    /// The answer to the real judge prompt.
    judge: &'static str,
    /// `x-ratelimit-*` headers on every answer: (requests, tokens) per minute; 1 request and
    /// 1,000 tokens used.
    rate: Option<(u64, u64)>,
}

impl Fake {
    fn everything() -> Fake {
        Fake {
            models: vec!["served-model", "other-model"],
            json_schema: true,
            tools: true,
            auto_tool_choice: true,
            max_tokens: Limit::Honoured,
            max_completion_tokens: Limit::Honoured,
            usage: true,
            slow_max_completion_tokens: None,
            probe_json: true,
            agent: AGENT_ANSWER,
            judge: JUDGE_ANSWER,
            rate: None,
        }
    }
}

fn error(status: u16, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({"error": {"message": message}}))
}

impl Respond for Fake {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let answer = self.answer(request);
        match self.rate {
            Some((requests, tokens)) => answer
                .insert_header("x-ratelimit-limit-requests", requests.to_string())
                .insert_header("x-ratelimit-remaining-requests", (requests - 1).to_string())
                .insert_header("x-ratelimit-reset-requests", "100ms")
                .insert_header("x-ratelimit-limit-tokens", tokens.to_string())
                .insert_header("x-ratelimit-remaining-tokens", (tokens - 1000).to_string())
                .insert_header("x-ratelimit-reset-tokens", "400ms"),
            None => answer,
        }
    }
}

impl Fake {
    fn answer(&self, request: &Request) -> ResponseTemplate {
        let auth = request
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok());
        if auth != Some(&format!("Bearer {KEY}")) {
            return error(401, "Incorrect API key provided");
        }
        if request.method.as_str() == "GET" {
            let data: Vec<Value> = self
                .models
                .iter()
                .map(|m| json!({"id": m, "object": "model"}))
                .collect();
            return ResponseTemplate::new(200)
                .set_body_json(json!({"object": "list", "data": data}));
        }
        let body: Value = serde_json::from_slice(&request.body).expect("a JSON body");
        let model = body["model"].as_str().unwrap_or_default();
        if !self.models.contains(&model) {
            return error(404, &format!("The model `{model}` does not exist"));
        }
        let mut limit = None;
        for (field, support) in [
            ("max_tokens", self.max_tokens),
            ("max_completion_tokens", self.max_completion_tokens),
        ] {
            if let Some(n) = body.get(field).and_then(Value::as_u64) {
                match support {
                    Limit::Rejected => {
                        return error(
                            400,
                            &format!("Unsupported parameter: '{field}' is not supported"),
                        );
                    }
                    Limit::Honoured => limit = Some(n),
                    Limit::Ignored => {}
                }
            }
        }
        let format = &body["response_format"];
        if format["type"] == "json_schema" && !self.json_schema {
            return error(400, "response_format json_schema is not supported");
        }
        if body.get("tools").is_some() && !self.tools {
            return error(400, "tools are not supported");
        }
        if body["tool_choice"] == "auto" && !self.auto_tool_choice {
            return error(
                400,
                "\"auto\" tool choice requires --enable-auto-tool-choice and \
                 --tool-call-parser to be set",
            );
        }
        let system = body["messages"][0]["content"].as_str().unwrap_or_default();
        let (text, tokens, tool_calls) = if body.get("tools").is_some() {
            let call = json!([{"id": "call_1", "type": "function", "function": {
                "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]);
            (Value::Null, 12, Some(call))
        } else if let Some(text) = role_answer(system, self.agent, self.judge) {
            (json!(text), 50, None)
        } else if system.contains("PINEAPPLE") {
            (json!("PINEAPPLE"), 3, None)
        } else if system.contains("\"city\"") {
            let text = if !self.probe_json {
                "The capital of France is Paris."
            } else if format["type"] == "json_schema" || format.get("schema").is_some() {
                r#"{"city": "Paris", "country": "France"}"#
            } else if format["type"] == "json_object" {
                r#"{"answer": "Paris"}"#
            } else {
                "The capital of France is Paris."
            };
            (json!(text), 11, None)
        } else {
            (
                json!("1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15"),
                30,
                None,
            )
        };
        let (tokens, finish) = match limit {
            Some(n) if n < tokens => (n, "length"),
            _ => (
                tokens,
                if tool_calls.is_some() {
                    "tool_calls"
                } else {
                    "stop"
                },
            ),
        };
        let mut message = json!({"role": "assistant", "content": text});
        if let Some(calls) = tool_calls {
            message["tool_calls"] = calls;
        }
        let mut answer = json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        });
        if self.usage {
            answer["usage"] = json!({"prompt_tokens": 20, "completion_tokens": tokens, "total_tokens": 20 + tokens});
        }
        let template = ResponseTemplate::new(200).set_body_json(answer);
        match self.slow_max_completion_tokens {
            Some(delay) if body.get("max_completion_tokens").is_some() => template.set_delay(delay),
            _ => template,
        }
    }
}

/// An Anthropic-compatible messages server: system prompt, tools with `tool_choice`, usage.
struct FakeAnthropic;

impl Respond for FakeAnthropic {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let key = request
            .headers
            .get("x-api-key")
            .and_then(|v| v.to_str().ok());
        if key != Some(KEY) || request.headers.get("anthropic-version").is_none() {
            return ResponseTemplate::new(401).set_body_json(json!({"type": "error",
                "error": {"type": "authentication_error", "message": "invalid x-api-key"}}));
        }
        if request.method.as_str() == "GET" {
            return ResponseTemplate::new(200).set_body_json(json!({"data": [
                {"type": "model", "id": "claude-test"}], "has_more": false}));
        }
        let body: Value = serde_json::from_slice(&request.body).expect("a JSON body");
        assert!(body.get("response_format").is_none(), "{body}");
        assert!(body.get("max_completion_tokens").is_none(), "{body}");
        let max = body["max_tokens"].as_u64().expect("max_tokens is required");
        // A string or text blocks, as the API takes either (the probe sends a string, the
        // backend one block marked for caching).
        let system = body["system"]
            .as_str()
            .or(body["system"][0]["text"].as_str())
            .unwrap_or_default();
        let (content, tokens) = if let Some(text) = role_answer(system, AGENT_ANSWER, JUDGE_ANSWER)
        {
            (json!([{"type": "text", "text": text}]), 50.min(max))
        } else if body.get("tools").is_some() {
            (
                json!([{"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                    "input": {"city": "Paris"}}]),
                15,
            )
        } else if system.contains("PINEAPPLE") {
            (json!([{"type": "text", "text": "PINEAPPLE"}]), 4)
        } else if system.contains("\"city\"") {
            (
                json!([{"type": "text", "text": "{\"city\": \"Paris\", \"country\": \"France\"}"}]),
                14,
            )
        } else {
            (json!([{"type": "text", "text": "1, 2, 3"}]), 30)
        };
        let (tokens, stop) = if tokens > max {
            (max, "max_tokens")
        } else {
            (tokens, "end_turn")
        };
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_1", "type": "message", "role": "assistant", "content": content,
            "stop_reason": stop, "usage": {"input_tokens": 20, "output_tokens": tokens},
        }))
    }
}

async fn serve(responder: impl Respond + 'static) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::any())
        .respond_with(responder)
        .mount(&server)
        .await;
    server
}

fn config(base_url: String, model: &str, key_var: &str) -> ModelConfig {
    let mut c = ModelConfig::new("probed", Provider::Openai);
    c.base_url = Some(base_url);
    c.model = Some(model.into());
    c.api_key_env = Some(key_var.into());
    c.timeout_secs = 5.0;
    c
}

async fn check(config: &ModelConfig) -> ModelReport {
    check_within(config, Duration::from_secs(5)).await
}

async fn check_within(config: &ModelConfig, timeout: Duration) -> ModelReport {
    let options = ProbeOptions { timeout };
    probe::probe(config, vec![Role::Agent, Role::Judge], &options).await
}

/// The rows left out of [`stable`]: latency and tokens/s (they vary), the limits (tested on
/// their own) and the rehearsal's (`-` for a report of the probes only).
fn unstable(row: &str) -> bool {
    matches!(row, "latency" | "output tokens/s")
        || row.ends_with(" limit")
        || row.starts_with("rehearsal")
}

/// The generic probes' cells that do not vary from run to run, and the verdict.
fn stable(report: &ModelReport) -> Vec<(&'static str, String)> {
    probe::ROWS
        .iter()
        .copied()
        .zip(report.cells())
        .filter(|(row, _)| !unstable(row))
        .collect()
}

/// The expected stable cells, as (row, cell) pairs in table order, from 16 cells.
fn expect(cells: [&str; 16]) -> Vec<(&'static str, String)> {
    probe::ROWS
        .iter()
        .copied()
        .filter(|row| !unstable(row))
        .zip(cells.iter().map(|c| c.to_string()))
        .collect()
}

/// A report's cell in `row`.
fn cell(report: &ModelReport, row: &str) -> String {
    let i = probe::ROWS.iter().position(|r| *r == row).expect("a row");
    report.cells()[i].clone()
}

/// The first model's cell in `row` of the printed table (cells are apart by 2+ spaces).
fn printed(stdout: &str, row: &str) -> String {
    let line = stdout
        .lines()
        .find(|l| l.starts_with(row) && l[row.len()..].starts_with("  "))
        .unwrap_or_else(|| panic!("no row {row}: {stdout}"));
    line[row.len()..]
        .trim_start()
        .split("  ")
        .next()
        .unwrap()
        .to_string()
}

/// `sage models check --config` on a configuration of the telecom scenario with `model` in
/// `roles` (a single judge when it judges) and simulated models in the others.
fn sage_check_as(model: &ModelConfig, roles: &[Role]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let mut models = vec![serde_json::to_value(model).unwrap()];
    models.push(json!({"name": "sim-agent", "provider": "simulated", "sim": {"kind": "agent"}}));
    models.push(json!({"name": "sim-user", "provider": "simulated", "sim": {"kind": "user"}}));
    for i in 1..=3 {
        models.push(
            json!({"name": format!("sim-judge-{i}"), "provider": "simulated",
            "sim": {"kind": "judge"}}),
        );
    }
    let name = json!(model.name);
    let yaml = json!({
        "models": models,
        "scenarios": [TELECOM],
        "service_models": [if roles.contains(&Role::Agent) { name.clone() } else { json!("sim-agent") }],
        "user_model": if roles.contains(&Role::Customer) { name.clone() } else { json!("sim-user") },
        "judge_models": if roles.contains(&Role::Judge) {
            json!([name])
        } else {
            json!(["sim-judge-1", "sim-judge-2", "sim-judge-3"])
        },
    });
    let path = dir.path().join("run.yaml");
    // JSON is YAML.
    std::fs::write(&path, yaml.to_string()).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(["models", "check", "--timeout", "5", "--config"])
        .arg(&path)
        .output()
        .expect("run sage");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains(KEY), "the key is printed: {stdout}");
    out
}

async fn sage_check_async(model: ModelConfig) -> Output {
    sage_check_as_async(model, &[Role::Agent]).await
}

async fn sage_check_as_async(model: ModelConfig, roles: &'static [Role]) -> Output {
    tokio::task::spawn_blocking(move || sage_check_as(&model, roles))
        .await
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_with_everything() {
    init();
    let server = serve(Fake::everything()).await;
    let c = config(format!("{}/v1", server.uri()), "served-model", KEY_VAR);
    let report = check(&c).await;
    assert_eq!(
        stable(&report),
        expect([
            "agent,judge",
            "openai",
            "yes",
            "yes",
            "yes",
            "yes",
            "yes",
            "-",
            "-",
            "-",
            "yes",
            "yes",
            "yes",
            "yes",
            "yes",
            "ok",
        ])
    );
    assert_eq!(report.problems, Vec::<String>::new());
    assert!(report.latency_ms.is_some());
    assert!(report.output_tokens_per_s.unwrap() > 0.0);
    let out = sage_check_async(c).await;
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(text.contains("structured_output: json_schema\n"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()
                == [
                    "verdict",
                    "ok",
                    "simulated",
                    "simulated",
                    "simulated",
                    "simulated"
                ]),
        "{text}"
    );
    assert_eq!(printed(&text, "rehearsal as agent"), "works", "{text}");
    assert_eq!(printed(&text, "rehearsal as judge"), "-", "{text}");
    // No rate-limit headers: no limit rows' numbers, no advice.
    assert_eq!(printed(&text, "requests/min limit"), "-", "{text}");
    assert_eq!(printed(&text, "tokens/min limit"), "-", "{text}");
    assert!(!text.contains("requests_per_minute"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_key_is_401() {
    init();
    let server = serve(Fake::everything()).await;
    let c = config(format!("{}/v1", server.uri()), "served-model", WRONG_VAR);
    let report = check(&c).await;
    assert_eq!(
        stable(&report),
        expect([
            "agent,judge",
            "openai",
            "yes",
            "no (HTTP 401)",
            "-",
            "-",
            "-",
            "-",
            "-",
            "-",
            "-",
            "-",
            "-",
            "-",
            "-",
            "FAIL",
        ])
    );
    assert_eq!(
        report.problems,
        ["not authenticated (HTTP 401): check the API key"]
    );
    let out = sage_check_async(c).await;
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(!stdout(&out).contains(WRONG));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_model() {
    init();
    let server = serve(Fake::everything()).await;
    let c = config(format!("{}/v1", server.uri()), "gpt-nope", KEY_VAR);
    let report = check(&c).await;
    assert_eq!(
        stable(&report),
        expect([
            "agent,judge",
            "openai",
            "yes",
            "yes",
            "no (not listed)",
            "-",
            "-",
            "-",
            "-",
            "-",
            "-",
            "-",
            "-",
            "-",
            "-",
            "FAIL",
        ])
    );
    assert_eq!(
        report.problems,
        ["GET /models does not list `gpt-nope` (it lists: served-model, other-model)"]
    );
    let out = sage_check_async(c).await;
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_json_schema_but_json_object_with_a_schema() {
    init();
    let server = serve(Fake {
        json_schema: false,
        ..Fake::everything()
    })
    .await;
    let c = config(format!("{}/v1", server.uri()), "served-model", KEY_VAR);
    let report = check(&c).await;
    assert_eq!(
        stable(&report),
        expect([
            "agent,judge",
            "openai",
            "yes",
            "yes",
            "yes",
            "yes",
            "no (HTTP 400)",
            "yes",
            "-",
            "-",
            "yes",
            "yes",
            "yes",
            "yes",
            "yes",
            "ok",
        ])
    );
    let out = sage_check_async(c).await;
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("structured_output: json_object_schema\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_tools() {
    init();
    let server = serve(Fake {
        tools: false,
        ..Fake::everything()
    })
    .await;
    let c = config(format!("{}/v1", server.uri()), "served-model", KEY_VAR);
    let report = check(&c).await;
    assert_eq!(
        stable(&report),
        expect([
            "agent,judge",
            "openai",
            "yes",
            "yes",
            "yes",
            "yes",
            "yes",
            "-",
            "-",
            "-",
            "no (HTTP 400)",
            "no (HTTP 400)",
            "yes",
            "yes",
            "yes",
            "ok",
        ])
    );
    let out = sage_check_async(c).await;
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_tokens_rejected_max_completion_tokens_taken() {
    init();
    let server = serve(Fake {
        max_tokens: Limit::Rejected,
        ..Fake::everything()
    })
    .await;
    let mut c = config(format!("{}/v1", server.uri()), "served-model", KEY_VAR);
    let report = check(&c).await;
    assert_eq!(
        stable(&report),
        expect([
            "agent,judge",
            "openai",
            "yes",
            "yes",
            "yes",
            "yes",
            "yes",
            "-",
            "-",
            "-",
            "yes",
            "yes",
            "no (HTTP 400)",
            "yes",
            "yes",
            "ok",
        ])
    );
    let out = sage_check_async(c.clone()).await;
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains(
        "#   the server rejects max_tokens and takes max_completion_tokens, which SAGE-RS does \
         not send: leave max_tokens out\n"
    ));
    // With max_tokens configured, every call of the run would be rejected.
    c.max_tokens = Some(200);
    let report = check(&c).await;
    assert_eq!(
        report.problems,
        ["max_tokens: 200 is configured and the server rejects max_tokens; leave it out"]
    );
    let out = sage_check_async(c).await;
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_usage() {
    init();
    let server = serve(Fake {
        usage: false,
        max_completion_tokens: Limit::Ignored,
        ..Fake::everything()
    })
    .await;
    let c = config(format!("{}/v1", server.uri()), "served-model", KEY_VAR);
    let report = check(&c).await;
    assert_eq!(
        stable(&report),
        expect([
            "agent,judge",
            "openai",
            "yes",
            "yes",
            "yes",
            "yes",
            "yes",
            "-",
            "-",
            "-",
            "yes",
            "yes",
            "yes",
            "ignored",
            "no",
            "ok",
        ])
    );
    assert_eq!(report.output_tokens_per_s, None);
    let out = sage_check_async(c).await;
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("#   no usage reported: token counts and costs will read 0\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_listens() {
    init();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let c = config(
        format!("http://127.0.0.1:{port}/v1"),
        "served-model",
        KEY_VAR,
    );
    let report = check(&c).await;
    assert_eq!(cell(&report, "reachable"), "no (connection failed)");
    assert_eq!(cell(&report, "verdict"), "FAIL");
    let out = sage_check_async(c).await;
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    // The rehearsal's call fails too: that decides.
    let text = stdout(&out);
    assert_eq!(
        printed(&text, "rehearsal as agent"),
        "cannot work (connection failed)"
    );
    assert_eq!(printed(&text, "verdict"), "FAIL");
    assert!(text.contains("#   as agent: cannot work: "), "{text}");
    assert!(stderr(&out).contains("a role cannot work with: probed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_messages() {
    init();
    let server = serve(FakeAnthropic).await;
    let mut c = config(format!("{}/v1", server.uri()), "claude-test", KEY_VAR);
    c.provider = Provider::Anthropic;
    let report = check(&c).await;
    assert_eq!(
        stable(&report),
        expect([
            "agent,judge",
            "anthropic",
            "yes",
            "yes",
            "yes",
            "yes",
            "n/a",
            "n/a",
            "n/a",
            "yes",
            "yes",
            "yes",
            "yes",
            "n/a",
            "yes",
            "ok",
        ])
    );
    let out = sage_check_async(c).await;
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("structured_output: none\n"));
}

#[test]
fn the_default_run_is_simulated_and_not_probed() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(["models", "check"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = stdout(&out);
    assert!(text.starts_with(
        "model                  sim-strong  sim-balanced  sim-weak   sim-user   sim-judge-1  sim-judge-2  sim-judge-3\n\
         roles                  agent       agent         agent      customer   judge        judge        judge\n"
    ), "{text}");
    assert!(text.contains(
        "verdict                simulated   simulated     simulated  simulated  simulated    simulated    simulated\n"
    ), "{text}");
}

/// vLLM as documented, started without `--enable-auto-tool-choice`: `tool_choice: auto` is
/// refused with HTTP 400, a named tool works (guided decoding), everything else as OpenAI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_without_auto_tool_choice() {
    init();
    let server = serve(Fake {
        auto_tool_choice: false,
        ..Fake::everything()
    })
    .await;
    let c = config(format!("{}/v1", server.uri()), "served-model", KEY_VAR);
    let report = check(&c).await;
    assert_eq!(
        stable(&report),
        expect([
            "agent,judge",
            "openai",
            "yes",
            "yes",
            "yes",
            "yes",
            "yes",
            "-",
            "-",
            "-",
            "no (HTTP 400)",
            "yes",
            "yes",
            "yes",
            "yes",
            "ok",
        ])
    );
    let out = sage_check_async(c).await;
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains(
        "#   tools are called only when tool_choice names one; SAGE-RS sends none, so a desk \
         agent may answer in text\n"
    ));
}

/// A probe that times out after the server has answered is that probe's failure only: the
/// server stays reachable and the role works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_answer_after_a_good_one_is_not_unreachable() {
    init();
    let server = serve(Fake {
        slow_max_completion_tokens: Some(Duration::from_millis(1500)),
        ..Fake::everything()
    })
    .await;
    let c = config(format!("{}/v1", server.uri()), "served-model", KEY_VAR);
    let report = check_within(&c, Duration::from_millis(500)).await;
    assert_eq!(
        stable(&report),
        expect([
            "agent,judge",
            "openai",
            "yes",
            "yes",
            "yes",
            "yes",
            "yes",
            "-",
            "-",
            "-",
            "yes",
            "yes",
            "yes",
            "no (timed out)",
            "yes",
            "ok",
        ])
    );
}

/// A server that fails every generic JSON probe (prose whatever the form) but answers the run's
/// real agent prompt with a valid answer: the probes alone say the agent cannot work, the
/// rehearsal says it works, and the rehearsal decides (verdict ok, exit 0).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rehearsal_decides_over_the_generic_json_probes() {
    init();
    let server = serve(Fake {
        probe_json: false,
        ..Fake::everything()
    })
    .await;
    let c = config(format!("{}/v1", server.uri()), "served-model", KEY_VAR);
    // The probes alone: no structured-output form works, so the agent "cannot work".
    let report = check(&c).await;
    assert_eq!(report.structured_output(), None);
    assert_eq!(cell(&report, "verdict"), "FAIL");
    assert_eq!(
        report.problems,
        [
            "as agent: no structured-output form works and its plain JSON does not parse",
            "as judge: no structured-output form works and its plain JSON does not parse",
        ]
    );
    let out = sage_check_async(c).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}{}", stderr(&out));
    assert_eq!(printed(&text, "json_schema (strict)"), "no (not JSON)");
    assert_eq!(printed(&text, "rehearsal as agent"), "works");
    assert_eq!(printed(&text, "verdict"), "ok");
    // The probes' finding stays, as information.
    assert!(
        text.contains(
            "#   probe: as agent: no structured-output form works and its plain JSON does not parse\n"
        ),
        "{text}"
    );
    assert!(!text.contains("cannot work"), "{text}");
}

/// An agent answer the parser refuses is a format error for the agent (a warning: exit 0); in
/// a run where the same server plays every role, a judge answer without JSON is the judge's
/// format error, and the customer's plain text works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_the_parsers_refuse_are_format_errors() {
    init();
    let server = serve(Fake {
        agent: r#"{"chat": "Sure, I can help."}"#,
        ..Fake::everything()
    })
    .await;
    let c = config(format!("{}/v1", server.uri()), "served-model", KEY_VAR);
    let out = sage_check_async(c).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(
        printed(&text, "rehearsal as agent"),
        "format error (missing_key)"
    );
    assert_eq!(printed(&text, "verdict"), "ok");
    assert!(
        text.contains(
            "#   as agent: format error (missing_key): missing key `classification_output`; a \
             real run records format errors\n"
        ),
        "{text}"
    );
    assert!(
        stderr(&out).contains("warning: a rehearsal answer did not parse"),
        "{}",
        stderr(&out)
    );

    let server = serve(Fake {
        judge: "The agent did well.",
        ..Fake::everything()
    })
    .await;
    let c = config(format!("{}/v1", server.uri()), "served-model", KEY_VAR);
    let out = sage_check_as_async(c, &[Role::Agent, Role::Customer, Role::Judge]).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(printed(&text, "roles"), "agent,customer,judge");
    assert_eq!(printed(&text, "rehearsal as agent"), "works");
    assert_eq!(printed(&text, "rehearsal as customer"), "works");
    assert_eq!(
        printed(&text, "rehearsal as judge"),
        "format error (no_json)"
    );
    assert_eq!(printed(&text, "verdict"), "ok");
    // One call per role: GET /models, 9 probe calls and 3 rehearsal calls.
    let requests = server.received_requests().await.unwrap();
    let rehearsed = requests
        .iter()
        .filter(|r| {
            let body: Value = serde_json::from_slice(&r.body).unwrap_or_default();
            let system = body["messages"][0]["content"].as_str().unwrap_or_default();
            role_answer(system, "", "").is_some()
        })
        .count();
    assert_eq!(rehearsed, 3);
}

/// The rehearsal's call failing decides (exit 1), whatever the probes found: a wrong key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rehearsal_refused_with_401_cannot_work() {
    init();
    let server = serve(Fake::everything()).await;
    let c = config(format!("{}/v1", server.uri()), "served-model", WRONG_VAR);
    let out = sage_check_as_async(c, &[Role::Agent, Role::Judge]).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert_eq!(
        printed(&text, "rehearsal as agent"),
        "cannot work (HTTP 401)"
    );
    assert_eq!(
        printed(&text, "rehearsal as judge"),
        "cannot work (HTTP 401)"
    );
    assert!(!text.contains(WRONG));
}

/// The provider's `x-ratelimit-*` headers: the last seen in the table, and the lines to use
/// (`requests_per_minute: 600` when none is configured; a comment when the configured one is
/// above the provider's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limit_headers_show_in_the_table_and_the_advice() {
    init();
    let server = serve(Fake {
        rate: Some((600, 150_000)),
        ..Fake::everything()
    })
    .await;
    let mut c = config(format!("{}/v1", server.uri()), "served-model", KEY_VAR);
    let report = check(&c).await;
    assert_eq!(cell(&report, "requests/min limit"), "600 (599 left)");
    assert_eq!(cell(&report, "tokens/min limit"), "150000 (149000 left)");
    let out = sage_check_async(c.clone()).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(printed(&text, "requests/min limit"), "600 (599 left)");
    assert_eq!(printed(&text, "tokens/min limit"), "150000 (149000 left)");
    assert!(
        text.contains(
            "requests_per_minute: 600   # the provider's limit, from its rate-limit headers\n"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "tokens_per_minute: 150000   # the provider's limit, from its rate-limit headers\n"
        ),
        "{text}"
    );

    c.requests_per_minute = Some(PerMinute::Known(1000));
    c.tokens_per_minute = Some(PerMinute::Known(100_000));
    let text = stdout(&sage_check_async(c).await);
    assert!(
        text.contains("#   requests_per_minute: 1000 is above the provider's limit of 600 "),
        "{text}"
    );
    assert!(!text.contains("\nrequests_per_minute:"), "{text}");
    // Under the provider's: nothing to say.
    assert!(!text.contains("tokens_per_minute"), "{text}");
}

/// An HTTP agent is not probed (it speaks its own contract) but is rehearsed through it: the
/// real agent prompt as its conversation, its reply read by the agent's parser.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_agent_is_rehearsed_not_probed() {
    init();
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"reply": AGENT_ANSWER})))
        .mount(&server)
        .await;
    let mut c = ModelConfig::new("deployed", Provider::HttpAgent);
    c.base_url = Some(format!("{}/agent", server.uri()));
    let out = sage_check_async(c).await;
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(printed(&text, "provider"), "http-agent");
    assert_eq!(printed(&text, "reachable"), "-");
    assert_eq!(printed(&text, "rehearsal as agent"), "works");
    // The HTTP agent backend does not read rate-limit headers.
    assert_eq!(printed(&text, "requests/min limit"), "-");
    assert_eq!(printed(&text, "verdict"), "ok");
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1);
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    let system = body["conversation"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("customer service representative"),
        "{system}"
    );
}
