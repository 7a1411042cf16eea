//! Model backends against real local HTTP servers: a wiremock `MockServer` per test (an
//! OpenAI-compatible, Anthropic-compatible or HTTP-agent mock), and for the concurrency check a
//! tiny hand-written server that measures requests in flight.
//!
//! Delays are kept small (base_delay_ms 10, Retry-After: 1) so the file runs in a few seconds.

use sage::llm::{
    ChatMessage, ChatRequest, ChatRole, Endpoint, LlmError, ModelConfig, Price, Provider,
    RetryConfig,
};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wiremock::matchers::{body_partial_json, header, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Environment variables these tests set, once, before any test builds a client.
const BEARER_VAR: &str = "SAGE_LLM_HTTP_TEST_KEY_BEARER_91c2";
const BEARER_VALUE: &str = "FAKE-test-bearer-value";
const ANTHROPIC_VAR: &str = "SAGE_LLM_HTTP_TEST_KEY_ANTHROPIC_4d17";
const ANTHROPIC_VALUE: &str = "FAKE-anthropic-test-value";
const AGENT_VAR: &str = "SAGE_LLM_HTTP_TEST_KEY_AGENT_77ab";
const AGENT_VALUE: &str = "FAKE-agent-token";
const UNSET_VAR: &str = "SAGE_LLM_HTTP_TEST_KEY_NEVER_SET_5e03";

fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
        // SAFETY: every test calls `init` first and `Once` blocks them until this returns, so no
        // test thread reads the environment while it is being written.
        unsafe {
            std::env::set_var(BEARER_VAR, BEARER_VALUE);
            std::env::set_var(ANTHROPIC_VAR, ANTHROPIC_VALUE);
            std::env::set_var(AGENT_VAR, AGENT_VALUE);
            std::env::remove_var(UNSET_VAR);
        }
    });
}

fn openai_config(server: &MockServer) -> ModelConfig {
    let mut c = ModelConfig::new("test-model", Provider::Openai);
    c.base_url = Some(format!("{}/v1", server.uri()));
    c.model = Some("served-model".into());
    c.retries = RetryConfig {
        max_attempts: 4,
        base_delay_ms: 10,
        max_delay_ms: 500,
    };
    c.timeout_secs = 5.0;
    c
}

fn request(json: bool) -> ChatRequest {
    ChatRequest {
        messages: vec![
            ChatMessage::new(ChatRole::System, "You are a helpful agent."),
            ChatMessage::new(ChatRole::User, "My internet is down."),
        ],
        json,
        ..ChatRequest::default()
    }
}

fn completion(text: &str, prompt_tokens: u64, completion_tokens: u64, finish: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens}
    })
}

fn ok(text: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(completion(text, 10, 5, "stop"))
}

async fn received(server: &MockServer) -> Vec<Request> {
    server
        .received_requests()
        .await
        .expect("request recording is on")
}

/// OpenAI reports the prompt tokens read from its prompt cache under
/// `usage.prompt_tokens_details.cached_tokens`: they are part of the prompt, priced at the
/// cached rate when one is configured, at the input rate when not; a count above the prompt
/// (a hostile body) is capped at the prompt.
#[tokio::test]
async fn openai_cached_prompt_tokens_are_priced_at_the_cached_rate() {
    init();
    let server = MockServer::start().await;
    let mut body = completion("Let me check.", 1000, 200, "stop");
    body["usage"]["prompt_tokens_details"] = json!({"cached_tokens": 768});
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(body))
        .mount(&server)
        .await;
    let price = |cached| Price {
        input_per_million: 2.0,
        output_per_million: 10.0,
        cached_input_per_million: cached,
        ..Default::default()
    };
    let cost = |config: ModelConfig| async move {
        let called = Endpoint::new(config, None)
            .expect("endpoint")
            .call(&request(false))
            .await;
        let usage = called.result.expect("success").usage;
        assert_eq!(usage.input_tokens, 1000);
        assert_eq!(usage.cached_input_tokens, 768);
        (called.record.cost_usd, called.record.usage)
    };
    let mut config = openai_config(&server);
    // (232 x 2 + 768 x 0.5 + 200 x 10) / 1e6 dollars.
    config.price = price(Some(0.5));
    let (usd, usage) = cost(config.clone()).await;
    assert!((usd - 0.002848).abs() < 1e-12, "cost {usd}");
    assert_eq!(usage.cached_input_tokens, 768);
    // Without a cached price, every prompt token at the input price: (1000 x 2 + 200 x 10) / 1e6.
    config.price = price(None);
    let (usd, _) = cost(config).await;
    assert!((usd - 0.004).abs() < 1e-12, "cost {usd}");

    let hostile = MockServer::start().await;
    let mut body = completion("ok", 10, 1, "stop");
    body["usage"]["prompt_tokens_details"] = json!({"cached_tokens": 1_000_000});
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(body))
        .mount(&hostile)
        .await;
    let mut config = openai_config(&hostile);
    config.price = price(Some(0.5));
    let called = Endpoint::new(config, None)
        .expect("endpoint")
        .call(&request(false))
        .await;
    assert_eq!(called.record.usage.cached_input_tokens, 10);
    assert!((called.record.cost_usd - 15e-6).abs() < 1e-15);

    // An odd breakdown (a negative or fractional count, a string) is no cached tokens, and the
    // answer is kept.
    for details in [
        json!({"cached_tokens": -5}),
        json!({"cached_tokens": 2.5}),
        json!("n/a"),
    ] {
        let odd = MockServer::start().await;
        let mut body = completion("ok", 10, 1, "stop");
        body["usage"]["prompt_tokens_details"] = details.clone();
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(body))
            .mount(&odd)
            .await;
        let called = Endpoint::new(openai_config(&odd), None)
            .expect("endpoint")
            .call(&request(false))
            .await;
        let usage = called.result.expect("the answer is kept").usage;
        assert_eq!(
            (usage.input_tokens, usage.cached_input_tokens),
            (10, 0),
            "{details}"
        );
    }
}

#[tokio::test]
async fn valid_answer_with_usage_and_cost() {
    init();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_body_json(completion(
            "Let me check.",
            1000,
            200,
            "stop",
        )))
        .expect(1)
        .mount(&server)
        .await;
    let mut config = openai_config(&server);
    config.temperature = Some(0.2);
    config.seed = Some(7);
    config.max_tokens = Some(64);
    config.price = Price {
        input_per_million: 2.0,
        output_per_million: 10.0,
        ..Default::default()
    };
    let endpoint = Endpoint::new(config, None).expect("endpoint");
    let called = endpoint.call(&request(false)).await;

    let response = called.result.expect("success");
    assert_eq!(response.text, "Let me check.");
    assert_eq!(response.finish_reason.as_deref(), Some("stop"));
    assert_eq!(response.usage.input_tokens, 1000);
    assert_eq!(response.usage.output_tokens, 200);
    let r = &called.record;
    assert_eq!(r.model, "test-model");
    assert!(!r.simulated);
    assert_eq!(r.attempts, 1);
    assert!(!r.cached);
    assert_eq!(r.response.as_deref(), Some("Let me check."));
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    assert_eq!(r.error, None);
    assert_eq!(r.usage.input_tokens, 1000);
    assert!((r.cost_usd - 0.004).abs() < 1e-12, "cost {}", r.cost_usd);
    // The endpoint leaves the request to the role, which keeps the messages or their hash.
    assert!(r.request.is_empty());

    let reqs = received(&server).await;
    let body: Value = reqs[0].body_json().expect("json body");
    assert_eq!(body["model"], "served-model");
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "You are a helpful agent."})
    );
    assert_eq!(body["messages"][1]["role"], "user");
    assert!((body["temperature"].as_f64().expect("temperature") - 0.2).abs() < 1e-6);
    assert_eq!(body["seed"], 7);
    assert_eq!(body["max_tokens"], 64);
    assert!(body.get("max_completion_tokens").is_none());
    assert!(body.get("response_format").is_none());
    assert!(
        reqs[0].headers.get("authorization").is_none(),
        "no key configured, no header"
    );
}

#[tokio::test]
async fn missing_usage_counts_as_zero() {
    init();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({"choices": [{"message": {"content": "hi"}, "finish_reason": null}]}),
        ))
        .mount(&server)
        .await;
    let endpoint = Endpoint::new(openai_config(&server), None).expect("endpoint");
    let called = endpoint.call(&request(false)).await;
    let response = called.result.expect("success");
    assert_eq!(response.text, "hi");
    assert_eq!(response.finish_reason, None);
    assert_eq!(response.usage, Default::default());
}

#[tokio::test]
async fn json_mode_sends_response_format() {
    init();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_partial_json(
            json!({"response_format": {"type": "json_object"}}),
        ))
        .respond_with(ok("{\"a\": 1}"))
        .expect(1)
        .mount(&server)
        .await;
    let endpoint = Endpoint::new(openai_config(&server), None).expect("endpoint");
    let called = endpoint.call(&request(true)).await;
    assert_eq!(called.result.expect("success").text, "{\"a\": 1}");

    // json_mode off in the configuration: the request's wish is not sent.
    let plain = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ok("x"))
        .mount(&plain)
        .await;
    let mut config = openai_config(&plain);
    config.json_mode = false;
    let endpoint = Endpoint::new(config, None).expect("endpoint");
    endpoint.call(&request(true)).await.result.expect("success");
    let body: Value = received(&plain).await[0].body_json().expect("json");
    assert!(body.get("response_format").is_none());
}

/// A server answering more than any model answer could be is refused, not buffered: the
/// answer over `MAX_BODY_BYTES` is an invalid response, not retried.
#[tokio::test]
async fn an_answer_over_the_body_limit_is_refused() {
    init();
    let server = MockServer::start().await;
    let huge = vec![b' '; sage::llm::openai::MAX_BODY_BYTES + 1];
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(huge, "application/json"))
        .expect(1)
        .mount(&server)
        .await;
    let endpoint = Endpoint::new(openai_config(&server), None).expect("endpoint");
    let called = endpoint.call(&request(false)).await;
    match called.result {
        Err(LlmError::InvalidResponse(msg)) => {
            assert!(msg.contains("larger than 32 MiB"), "{msg}")
        }
        other => panic!("expected InvalidResponse, got {other:?}"),
    }
    assert_eq!(called.record.attempts, 1);
}

#[tokio::test]
async fn malformed_body_is_invalid_response_and_not_retried() {
    init();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_string("<html>gateway says hi</html>"))
        .expect(1)
        .mount(&server)
        .await;
    let endpoint = Endpoint::new(openai_config(&server), None).expect("endpoint");
    let called = endpoint.call(&request(false)).await;
    match called.result {
        Err(LlmError::InvalidResponse(msg)) => assert!(msg.contains("gateway says hi"), "{msg}"),
        other => panic!("expected InvalidResponse, got {other:?}"),
    }
    assert_eq!(called.record.attempts, 1);
    assert!(error_of(&called.record).starts_with("invalid response"));
    assert_eq!(called.record.response, None);

    // No choices is not a completion either.
    let empty = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"choices": []})))
        .expect(1)
        .mount(&empty)
        .await;
    let endpoint = Endpoint::new(openai_config(&empty), None).expect("endpoint");
    assert!(matches!(
        endpoint.call(&request(false)).await.result,
        Err(LlmError::InvalidResponse(_))
    ));
}

#[tokio::test]
async fn rate_limited_waits_for_retry_after_then_succeeds() {
    init();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "1")
                .set_body_string("slow down"),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ok("done"))
        .expect(1)
        .mount(&server)
        .await;
    let endpoint = Endpoint::new(openai_config(&server), None).expect("endpoint");
    let t0 = Instant::now();
    let called = endpoint.call(&request(false)).await;
    let waited = t0.elapsed();
    assert_eq!(called.result.expect("success").text, "done");
    assert_eq!(called.record.attempts, 2);
    assert!(
        waited >= Duration::from_millis(950),
        "waited only {waited:?}"
    );
    assert!(
        called.record.latency_ms >= 950,
        "latency {}",
        called.record.latency_ms
    );
    assert_eq!(endpoint.backend_calls(), 2);
}

/// A 429's Retry-After holds every caller of the endpoint (issue 21): a call started while
/// another waits out the provider's "retry after 1 s" does not go to the server before it ends.
#[tokio::test]
async fn a_retry_after_holds_every_caller_of_the_endpoint() {
    init();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(429).insert_header("retry-after", "1"))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ok("done"))
        .mount(&server)
        .await;
    let endpoint = Arc::new(Endpoint::new(openai_config(&server), None).expect("endpoint"));
    let t0 = Instant::now();
    let first = {
        let endpoint = endpoint.clone();
        tokio::spawn(async move { endpoint.call(&request(false)).await })
    };
    // The first call has had its 429 by now.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(received(&server).await.len(), 1);
    let started = Instant::now();
    let second = endpoint.call(&request(false)).await;
    assert_eq!(second.result.expect("success").text, "done");
    assert_eq!(second.record.attempts, 1);
    assert!(
        t0.elapsed() >= Duration::from_millis(950),
        "the second call went out {:?} after the 429 (waited {:?})",
        t0.elapsed(),
        started.elapsed()
    );
    // Its record says how long it waited for the limit, and that it was never refused.
    assert_eq!(second.record.refused, 0);
    assert!(
        second.record.limit_wait_ms >= 600,
        "{}",
        second.record.limit_wait_ms
    );
    let first = first.await.expect("task").record;
    assert_eq!((first.attempts, first.refused), (2, 1));
    assert_eq!(received(&server).await.len(), 3);
}

#[tokio::test]
async fn server_errors_are_retried_until_success() {
    init();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500).set_body_string("boom"))
        .up_to_n_times(2)
        .with_priority(1)
        .expect(2)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ok("finally"))
        .expect(1)
        .mount(&server)
        .await;
    let endpoint = Endpoint::new(openai_config(&server), None).expect("endpoint");
    let called = endpoint.call(&request(false)).await;
    assert_eq!(called.result.expect("success").text, "finally");
    assert_eq!(called.record.attempts, 3);
    assert_eq!(called.record.error, None);
}

#[tokio::test]
async fn server_errors_forever_give_up_after_max_attempts() {
    init();
    let server = MockServer::start().await;
    let long_body = "x".repeat(5_000);
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_string(long_body))
        .expect(3)
        .mount(&server)
        .await;
    let mut config = openai_config(&server);
    config.retries.max_attempts = 3;
    let endpoint = Endpoint::new(config, None).expect("endpoint");
    let called = endpoint.call(&request(false)).await;
    match &called.result {
        Err(LlmError::Status { status, body, .. }) => {
            assert_eq!(*status, 503);
            assert!(
                body.chars().count() <= 301,
                "body kept short: {}",
                body.len()
            );
        }
        other => panic!("expected Status, got {other:?}"),
    }
    assert_eq!(called.record.attempts, 3);
    assert!(error_of(&called.record).starts_with("HTTP 503"));
    assert_eq!(endpoint.failures(), 1);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    init();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(400).set_body_json(json!({"error": {"message": "bad request"}})),
        )
        .expect(1)
        .mount(&server)
        .await;
    let endpoint = Endpoint::new(openai_config(&server), None).expect("endpoint");
    let called = endpoint.call(&request(false)).await;
    assert!(matches!(
        called.result,
        Err(LlmError::Status { status: 400, .. })
    ));
    assert_eq!(called.record.attempts, 1);
}

#[tokio::test]
async fn hanging_response_times_out_and_is_retried() {
    init();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ok("late").set_delay(Duration::from_secs(5)))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ok("on time"))
        .mount(&server)
        .await;
    let mut config = openai_config(&server);
    config.timeout_secs = 0.3;
    let endpoint = Endpoint::new(config.clone(), None).expect("endpoint");
    let t0 = Instant::now();
    let called = endpoint.call(&request(false)).await;
    assert_eq!(called.result.expect("success").text, "on time");
    assert_eq!(called.record.attempts, 2);
    assert!(t0.elapsed() < Duration::from_secs(3));

    // With a single attempt the timeout is the error.
    let hang = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ok("late").set_delay(Duration::from_secs(5)))
        .mount(&hang)
        .await;
    let mut config = openai_config(&hang);
    config.timeout_secs = 0.3;
    config.retries.max_attempts = 2;
    let endpoint = Endpoint::new(config, None).expect("endpoint");
    let called = endpoint.call(&request(false)).await;
    assert!(
        matches!(called.result, Err(LlmError::Timeout(_))),
        "{:?}",
        called.result
    );
    assert_eq!(called.record.attempts, 2);
    assert!(
        called
            .record
            .error
            .as_deref()
            .unwrap_or("")
            .contains("timed out")
    );
}

#[tokio::test]
async fn refused_connection_is_a_retried_connection_error() {
    init();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let mut config = ModelConfig::new("down", Provider::Openai);
    config.base_url = Some(format!("http://127.0.0.1:{port}/v1"));
    config.retries = RetryConfig {
        max_attempts: 2,
        base_delay_ms: 10,
        max_delay_ms: 20,
    };
    let endpoint = Endpoint::new(config, None).expect("endpoint");
    let called = endpoint.call(&request(false)).await;
    assert!(
        matches!(called.result, Err(LlmError::Connection(_))),
        "{:?}",
        called.result
    );
    assert_eq!(called.record.attempts, 2);
}

/// A minimal HTTP/1.1 keep-alive server that answers every request after `delay` with a fixed
/// chat completion, counting requests in flight (between the end of a request and the start of
/// its response) and the most seen at once.
async fn counting_server(delay: Duration) -> (String, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let in_flight = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let (inf, pk) = (in_flight.clone(), peak.clone());
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let (inf, pk) = (inf.clone(), pk.clone());
            tokio::spawn(async move {
                let body = completion("ok", 1, 1, "stop").to_string();
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{}",
                    body.len(),
                    body
                );
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    // Read one request: headers, then content-length bytes of body.
                    let head_end = loop {
                        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break i + 4;
                        }
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    };
                    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
                    let len: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    while buf.len() < head_end + len {
                        match sock.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    buf.drain(..head_end + len);
                    let now = inf.fetch_add(1, Ordering::SeqCst) + 1;
                    pk.fetch_max(now, Ordering::SeqCst);
                    tokio::time::sleep(delay).await;
                    inf.fetch_sub(1, Ordering::SeqCst);
                    if sock.write_all(response.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (format!("http://{addr}/v1"), in_flight, peak)
}

#[tokio::test]
async fn concurrency_limit_is_respected_at_the_server() {
    init();
    let (url, _in_flight, peak) = counting_server(Duration::from_millis(80)).await;
    let mut config = ModelConfig::new("limited", Provider::Openai);
    config.base_url = Some(url);
    config.max_concurrency = 2;
    let endpoint = Endpoint::new(config, None).expect("endpoint");
    let req = request(false);
    let t0 = Instant::now();
    let calls = futures::future::join_all((0..8).map(|_| endpoint.call(&req))).await;
    assert!(calls.iter().all(|c| c.result.is_ok()));
    assert_eq!(
        peak.load(Ordering::SeqCst),
        2,
        "server saw at most 2 at once, and 2 were used"
    );
    assert!(endpoint.peak_in_flight() <= 2);
    // 8 calls, 2 at a time, 80 ms each: at least 4 rounds.
    assert!(
        t0.elapsed() >= Duration::from_millis(300),
        "{:?}",
        t0.elapsed()
    );
}

/// Records when each request arrived.
struct Arrivals(Arc<Mutex<Vec<Instant>>>);

impl Respond for Arrivals {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        if let Ok(mut v) = self.0.lock() {
            v.push(Instant::now());
        }
        ok("tick")
    }
}

#[tokio::test]
async fn requests_per_minute_spaces_calls() {
    init();
    let server = MockServer::start().await;
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    Mock::given(method("POST"))
        .respond_with(Arrivals(arrivals.clone()))
        .expect(4)
        .mount(&server)
        .await;
    let mut config = openai_config(&server);
    config.requests_per_minute = Some(sage::llm::PerMinute::Known(600)); // one every 100 ms
    let endpoint = Endpoint::new(config, None).expect("endpoint");
    let req = request(false);
    let calls = futures::future::join_all((0..4).map(|_| endpoint.call(&req))).await;
    assert!(calls.iter().all(|c| c.result.is_ok()));
    let mut times = arrivals.lock().expect("lock").clone();
    times.sort();
    assert_eq!(times.len(), 4);
    // Starts are 100 ms apart; arrivals add each request's own (small, variable) latency.
    for w in times.windows(2) {
        let gap = w[1] - w[0];
        assert!(gap >= Duration::from_millis(60), "gap {gap:?}");
    }
    let span = times[3] - times[0];
    assert!(span >= Duration::from_millis(270), "span {span:?}");
}

#[tokio::test]
async fn cache_serves_identical_calls_without_the_server() {
    init();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ok("cached answer"))
        .mount(&server)
        .await;
    let mut config = openai_config(&server);
    config.temperature = Some(0.0);
    config.price = Price {
        input_per_million: 1.0,
        output_per_million: 1.0,
        ..Default::default()
    };
    let endpoint = Endpoint::new(config.clone(), Some(dir.path().to_path_buf())).expect("endpoint");

    let first = endpoint.call(&request(false)).await;
    assert_eq!(
        first.result.as_ref().expect("success").text,
        "cached answer"
    );
    assert!(!first.record.cached);
    assert_eq!(received(&server).await.len(), 1);

    let second = endpoint.call(&request(false)).await;
    assert_eq!(second.result.as_ref().expect("hit").text, "cached answer");
    assert!(second.record.cached);
    assert_eq!(second.record.attempts, 0);
    assert_eq!(second.record.cost_usd, 0.0);
    assert_eq!(second.record.response.as_deref(), Some("cached answer"));
    assert_eq!(
        received(&server).await.len(),
        1,
        "a hit makes zero server calls"
    );
    assert_eq!(endpoint.cache_hits(), 1);
    assert_eq!(endpoint.backend_calls(), 1);

    // The cache is on disk: a new endpoint with the same configuration hits too.
    let again = Endpoint::new(config.clone(), Some(dir.path().to_path_buf())).expect("endpoint");
    assert!(again.call(&request(false)).await.record.cached);
    assert_eq!(received(&server).await.len(), 1);

    // A different temperature (or JSON flag) is a different key.
    let mut warmer = config.clone();
    warmer.temperature = Some(0.7);
    let warmer = Endpoint::new(warmer, Some(dir.path().to_path_buf())).expect("endpoint");
    assert!(!warmer.call(&request(false)).await.record.cached);
    assert_eq!(received(&server).await.len(), 2);
    assert!(!endpoint.call(&request(true)).await.record.cached);
    assert_eq!(received(&server).await.len(), 3);
}

#[tokio::test]
async fn errors_are_not_cached() {
    init();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(500))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ok("fine"))
        .mount(&server)
        .await;
    let mut config = openai_config(&server);
    config.retries.max_attempts = 1;
    let endpoint = Endpoint::new(config, Some(dir.path().to_path_buf())).expect("endpoint");
    assert!(endpoint.call(&request(false)).await.result.is_err());
    let second = endpoint.call(&request(false)).await;
    assert!(!second.record.cached);
    assert_eq!(second.result.expect("success").text, "fine");
    assert!(endpoint.call(&request(false)).await.record.cached);
    assert_eq!(received(&server).await.len(), 2);
}

#[tokio::test]
async fn api_key_goes_to_the_server_and_nowhere_else() {
    init();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(header(
            "authorization",
            format!("Bearer {BEARER_VALUE}").as_str(),
        ))
        .respond_with(ok("authorised"))
        .up_to_n_times(1)
        .with_priority(1)
        .expect(1)
        .mount(&server)
        .await;
    // Then a server that echoes the key in its error body.
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(401).set_body_string(format!("invalid key {BEARER_VALUE}")),
        )
        .mount(&server)
        .await;
    let mut config = openai_config(&server);
    config.api_key_env = Some(BEARER_VAR.into());
    let endpoint = Endpoint::new(config, None).expect("endpoint");
    let good = endpoint.call(&request(false)).await;
    assert_eq!(good.result.as_ref().expect("success").text, "authorised");
    let bad = endpoint.call(&request(false)).await;
    assert!(matches!(
        bad.result,
        Err(LlmError::Status { status: 401, .. })
    ));

    let reqs = received(&server).await;
    assert_eq!(
        reqs[0]
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok()),
        Some(format!("Bearer {BEARER_VALUE}").as_str())
    );
    for text in [
        serde_json::to_string(&good.record).expect("json"),
        serde_json::to_string(&bad.record).expect("json"),
        format!("{:?}", good),
        format!("{:?}", bad),
        bad.record.error.clone().unwrap_or_default(),
        format!("{endpoint:?}"),
        format!(
            "{:?}",
            sage::llm::openai::OpenAiChat::new(endpoint.config()).expect("backend")
        ),
    ] {
        assert!(!text.contains(BEARER_VALUE), "the key leaked into: {text}");
    }
    assert!(
        bad.record
            .error
            .as_deref()
            .unwrap_or("")
            .contains("<redacted>")
    );
}

#[tokio::test]
async fn unset_key_variable_is_a_config_error_naming_it() {
    init();
    let mut config = ModelConfig::new("keyless", Provider::Openai);
    config.base_url = Some("http://127.0.0.1:9/v1".into());
    config.api_key_env = Some(UNSET_VAR.into());
    match Endpoint::new(config.clone(), None) {
        Err(LlmError::Config(msg)) => assert!(msg.contains(UNSET_VAR), "{msg}"),
        Err(other) => panic!("expected Config, got {other:?}"),
        Ok(_) => panic!("expected Config error"),
    }
    config.provider = Provider::Anthropic;
    assert!(
        matches!(Endpoint::new(config.clone(), None), Err(LlmError::Config(m)) if m.contains(UNSET_VAR))
    );
    config.provider = Provider::HttpAgent;
    assert!(
        matches!(Endpoint::new(config, None), Err(LlmError::Config(m)) if m.contains(UNSET_VAR))
    );
}

#[tokio::test]
async fn anthropic_request_shape_and_truncation() {
    init();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(header("x-api-key", ANTHROPIC_VALUE))
        .and(header("anthropic-version", "2023-06-01"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_1", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": "Hello, "}, {"type": "text", "text": "I am cut"}],
            "stop_reason": "max_tokens",
            // 2 tokens after the cache breakpoint, 8 read from the cache, 2 written to it.
            "usage": {"input_tokens": 2, "cache_read_input_tokens": 8,
                      "cache_creation_input_tokens": 2, "output_tokens": 4}
        })))
        .expect(1)
        .mount(&server)
        .await;
    let mut config = ModelConfig::new("claude", Provider::Anthropic);
    config.base_url = Some(format!("{}/v1", server.uri()));
    config.model = Some("claude-test".into());
    config.api_key_env = Some(ANTHROPIC_VAR.into());
    config.temperature = Some(0.0);
    config.price = Price {
        input_per_million: 3.0,
        output_per_million: 15.0,
        cached_input_per_million: Some(0.3),
        cache_write_per_million: Some(3.75),
    };
    let endpoint = Endpoint::new(config, None).expect("endpoint");
    let mut req = request(true);
    req.messages
        .push(ChatMessage::new(ChatRole::Assistant, "Which plan?"));
    req.messages
        .push(ChatMessage::new(ChatRole::User, "The basic one."));
    let called = endpoint.call(&req).await;
    let response = called.result.expect("success");
    assert_eq!(response.text, "Hello, I am cut");
    assert_eq!(response.finish_reason.as_deref(), Some("length"));
    // The prompt is every input token; the cached and written ones are priced at their rates:
    // (2 x 3 + 8 x 0.3 + 2 x 3.75 + 4 x 15) / 1e6 dollars.
    assert_eq!(response.usage.input_tokens, 12);
    assert_eq!(response.usage.cached_input_tokens, 8);
    assert_eq!(response.usage.cache_write_input_tokens, 2);
    assert_eq!(response.usage.output_tokens, 4);
    let cost = called.record.cost_usd;
    assert!((cost - 75.9e-6).abs() < 1e-15, "cost {cost}");

    let reqs = received(&server).await;
    let body: Value = reqs[0].body_json().expect("json");
    assert_eq!(body["model"], "claude-test");
    // The system prompt is one text block, marked as the prompt-cache breakpoint.
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "You are a helpful agent.",
                "cache_control": {"type": "ephemeral"}}])
    );
    assert_eq!(body["max_tokens"], 1024);
    let messages = body["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 3);
    assert!(messages.iter().all(|m| m["role"] != "system"));
    assert_eq!(
        messages[0],
        json!({"role": "user", "content": "My internet is down."})
    );
    assert_eq!(messages[1]["role"], "assistant");
    assert!(body.get("response_format").is_none());
    assert!(reqs[0].headers.get("authorization").is_none());

    // Anthropic's overload status is retried like any 5xx; end_turn is `stop`.
    let busy = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(529)
                .set_body_json(json!({"type": "error", "error": {"type": "overloaded_error"}})),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&busy)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 1}
        })))
        .mount(&busy)
        .await;
    let mut config = ModelConfig::new("claude", Provider::Anthropic);
    config.base_url = Some(format!("{}/v1", busy.uri()));
    config.retries.base_delay_ms = 10;
    let endpoint = Endpoint::new(config, None).expect("endpoint");
    let called = endpoint.call(&request(false)).await;
    assert_eq!(
        called.result.expect("success").finish_reason.as_deref(),
        Some("stop")
    );
    assert_eq!(called.record.attempts, 2);
}

#[tokio::test]
async fn http_agent_contract() {
    init();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/agent/turn"))
        .and(header("authorization", format!("Bearer {AGENT_VALUE}").as_str()))
        .and(body_partial_json(json!({"json": true})))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"reply": "{\"chat\": \"hello\"}", "usage": {"input_tokens": 30, "output_tokens": 8}})),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/agent/turn"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"reply": "no usage here"})))
        .up_to_n_times(1)
        .with_priority(2)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/agent/turn"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"answer": "wrong field"})))
        .with_priority(3)
        .mount(&server)
        .await;
    let mut config = ModelConfig::new("deployed-agent", Provider::HttpAgent);
    config.base_url = Some(format!("{}/agent/turn", server.uri()));
    config.api_key_env = Some(AGENT_VAR.into());
    config.retries.base_delay_ms = 10;
    let endpoint = Endpoint::new(config, None).expect("endpoint");

    let first = endpoint.call(&request(true)).await;
    let response = first.result.expect("success");
    assert_eq!(response.text, "{\"chat\": \"hello\"}");
    assert_eq!(response.usage.input_tokens, 30);
    assert_eq!(response.usage.output_tokens, 8);
    let body: Value = received(&server).await[0].body_json().expect("json");
    assert_eq!(
        body,
        json!({"conversation": [
            {"role": "system", "content": "You are a helpful agent."},
            {"role": "user", "content": "My internet is down."}
        ], "json": true})
    );

    let second = endpoint.call(&request(false)).await;
    let response = second.result.expect("success");
    assert_eq!(response.text, "no usage here");
    assert_eq!(response.usage, Default::default());

    let third = endpoint.call(&request(false)).await;
    assert!(
        matches!(third.result, Err(LlmError::InvalidResponse(_))),
        "{:?}",
        third.result
    );
    assert_eq!(third.record.attempts, 1);

    // The agent's URL is required.
    let config = ModelConfig::new("nowhere", Provider::HttpAgent);
    assert!(matches!(
        Endpoint::new(config, None),
        Err(LlmError::Config(_))
    ));
}

/// A call record's error text ("" when the call succeeded).
fn error_of(record: &sage::protocol::CallRecord) -> &str {
    record.error.as_deref().unwrap_or("")
}
