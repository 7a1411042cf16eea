//! `sage models check` against wiremock servers that each lack one capability (a wrong key, an
//! unknown model, no `json_schema`, no tools, `max_tokens` rejected, no usage), one that has
//! everything, an Anthropic-compatible one and a closed port: every cell of the capability
//! table (latency and tokens/s aside, which vary) and the binary's exit code.

use sage::llm::probe::{self, ModelReport, ProbeOptions, Role};
use sage::llm::{ModelConfig, Provider};
use serde_json::{Value, json};
use std::process::Output;
use std::sync::Once;
use std::time::Duration;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const KEY_VAR: &str = "SAGE_MODELS_CHECK_TEST_KEY_6a1f";
const KEY: &str = "FAKE-models-check-key";
const WRONG_VAR: &str = "SAGE_MODELS_CHECK_TEST_WRONG_KEY_93bd";
const WRONG: &str = "FAKE-wrong-key";

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
        }
    }
}

fn error(status: u16, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({"error": {"message": message}}))
}

impl Respond for Fake {
    fn respond(&self, request: &Request) -> ResponseTemplate {
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
        } else if system.contains("PINEAPPLE") {
            (json!("PINEAPPLE"), 3, None)
        } else if system.contains("\"city\"") {
            let text = if format["type"] == "json_schema" || format.get("schema").is_some() {
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
        let (content, tokens) = if body.get("tools").is_some() {
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

/// The cells that do not vary from run to run (latency and tokens/s left out).
fn stable(report: &ModelReport) -> Vec<(&'static str, String)> {
    probe::ROWS
        .iter()
        .copied()
        .zip(report.cells())
        .filter(|(row, _)| !matches!(*row, "latency" | "output tokens/s"))
        .collect()
}

/// The expected stable cells, as (row, cell) pairs in table order, from 16 cells.
fn expect(cells: [&str; 16]) -> Vec<(&'static str, String)> {
    probe::ROWS
        .iter()
        .copied()
        .filter(|row| !matches!(*row, "latency" | "output tokens/s"))
        .zip(cells.iter().map(|c| c.to_string()))
        .collect()
}

/// `sage models check --config` on a configuration with `model` as the agent under test (and
/// simulated customer and judges).
fn sage_check(model: &ModelConfig) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let mut models = vec![serde_json::to_value(model).unwrap()];
    models.push(json!({"name": "sim-user", "provider": "simulated", "sim": {"kind": "user"}}));
    for i in 1..=3 {
        models.push(
            json!({"name": format!("sim-judge-{i}"), "provider": "simulated",
            "sim": {"kind": "judge"}}),
        );
    }
    let yaml = json!({
        "models": models,
        "service_models": [model.name],
        "user_model": "sim-user",
        "judge_models": ["sim-judge-1", "sim-judge-2", "sim-judge-3"],
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
    tokio::task::spawn_blocking(move || sage_check(&model))
        .await
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
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
    assert_eq!(report.cells()[2], "no (connection failed)");
    assert_eq!(report.cells()[17], "FAIL");
    let out = sage_check_async(c).await;
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
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
