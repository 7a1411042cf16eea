//! An OpenAI-compatible mock provider that enforces its limits, as a real one does: a token
//! bucket per API key for requests and tokens per minute (each holding one second of its limit,
//! at least one request's worth), answering HTTP 429 with Retry-After past them, the
//! `x-ratelimit-*` headers on every answer (unless turned off), and limits that change at given
//! times. It records when each call was accepted or refused, per key.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// A key's limits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KeyLimits {
    /// Requests per minute.
    pub rpm: u32,
    /// Tokens per minute (input and output); `u32::MAX`: none.
    pub tpm: u32,
}

/// What the provider answers and enforces.
#[derive(Debug, Clone)]
pub struct ProviderSpec {
    /// Limits per API key (the Bearer token; `""` without one).
    pub keys: HashMap<String, KeyLimits>,
    /// Limit changes: after this long from the start, this key has these limits.
    pub changes: Vec<(Duration, String, KeyLimits)>,
    /// Send the `x-ratelimit-*` headers (as OpenAI does); off: only the 429 and Retry-After.
    pub headers: bool,
    /// The content of every completion.
    pub answer: String,
    /// Completion tokens per answer.
    pub completion_tokens: u64,
    /// How long each answer takes.
    pub latency: Duration,
}

impl ProviderSpec {
    /// A provider with these keys (name, requests and tokens per minute, `u32::MAX` for no
    /// tokens limit), answering the Telecom agent answer ([`TELECOM_AGENT_ANSWER`]) with 60
    /// completion tokens in `latency`, its limits never changing.
    pub fn keys(keys: &[(&str, u32, u32)], headers: bool, latency: Duration) -> ProviderSpec {
        ProviderSpec {
            keys: keys
                .iter()
                .map(|(k, rpm, tpm)| {
                    (
                        k.to_string(),
                        KeyLimits {
                            rpm: *rpm,
                            tpm: *tpm,
                        },
                    )
                })
                .collect(),
            changes: Vec::new(),
            headers,
            answer: TELECOM_AGENT_ANSWER.into(),
            completion_tokens: 60,
            latency,
        }
    }
}

/// One call as the provider saw it.
#[derive(Debug, Clone, Copy)]
pub struct Seen {
    /// Since the provider started.
    pub at: Duration,
    /// Accepted (false: refused with 429).
    pub accepted: bool,
    /// Tokens it counted (input and output; 0 for a refusal).
    pub tokens: u64,
}

struct Bucket {
    limits: KeyLimits,
    requests: f64,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    fn new(limits: KeyLimits, now: Instant) -> Bucket {
        let mut b = Bucket {
            limits,
            requests: 0.0,
            tokens: 0.0,
            last: now,
        };
        b.requests = b.request_capacity();
        b.tokens = b.token_capacity();
        b
    }

    fn request_capacity(&self) -> f64 {
        (f64::from(self.limits.rpm) / 60.0).max(1.0)
    }

    fn token_capacity(&self) -> f64 {
        (f64::from(self.limits.tpm) / 60.0).max(4096.0)
    }

    fn refill(&mut self, now: Instant) {
        let secs = now.duration_since(self.last).as_secs_f64();
        self.last = now;
        self.requests =
            (self.requests + secs * f64::from(self.limits.rpm) / 60.0).min(self.request_capacity());
        self.tokens =
            (self.tokens + secs * f64::from(self.limits.tpm) / 60.0).min(self.token_capacity());
    }

    /// Until one request and `tokens` tokens are available.
    fn wait_for(&self, tokens: f64) -> Duration {
        let need_r = (1.0 - self.requests).max(0.0) / (f64::from(self.limits.rpm) / 60.0);
        let need_t = (tokens - self.tokens).max(0.0) / (f64::from(self.limits.tpm) / 60.0);
        Duration::from_secs_f64(need_r.max(need_t))
    }

    fn headers(&self, t: ResponseTemplate) -> ResponseTemplate {
        // One limit's three headers: its limit, what is left, and when it is full again.
        let limit = |t: ResponseTemplate, kind: &str, per_minute: u32, left: f64, full: f64| {
            let missing = (full - left).max(0.0);
            let reset_ms = (missing / (f64::from(per_minute) / 60.0) * 1000.0).ceil() as u64;
            t.insert_header(format!("x-ratelimit-limit-{kind}"), per_minute.to_string())
                .insert_header(
                    format!("x-ratelimit-remaining-{kind}"),
                    (left.max(0.0).floor() as u64).to_string(),
                )
                .insert_header(format!("x-ratelimit-reset-{kind}"), format!("{reset_ms}ms"))
        };
        let t = limit(
            t,
            "requests",
            self.limits.rpm,
            self.requests,
            self.request_capacity(),
        );
        if self.limits.tpm == u32::MAX {
            return t;
        }
        limit(
            t,
            "tokens",
            self.limits.tpm,
            self.tokens,
            self.token_capacity(),
        )
    }
}

struct State {
    started: Instant,
    buckets: HashMap<String, Bucket>,
    changes: Vec<(Duration, String, KeyLimits)>,
    seen: HashMap<String, Vec<Seen>>,
}

/// The responder mounted on `POST /v1/chat/completions`.
#[derive(Clone)]
pub struct LimitedProvider {
    spec: Arc<ProviderSpec>,
    state: Arc<Mutex<State>>,
}

impl LimitedProvider {
    /// What each key's calls saw so far.
    pub fn seen(&self) -> HashMap<String, Vec<Seen>> {
        self.state.lock().expect("provider state").seen.clone()
    }
}

fn key_of(request: &Request) -> String {
    request
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("")
        .to_string()
}

/// Input tokens as the mock counts them: a quarter of the characters of the message contents.
fn input_tokens(request: &Request) -> u64 {
    let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap_or_default();
    let chars: usize = body["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter_map(|m| m["content"].as_str())
                .map(str::len)
                .sum()
        })
        .unwrap_or(0);
    (chars / 4) as u64
}

impl Respond for LimitedProvider {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let key = key_of(request);
        let input = input_tokens(request);
        let tokens = input + self.spec.completion_tokens;
        let now = Instant::now();
        let mut state = self.state.lock().expect("provider state");
        let elapsed = now.duration_since(state.started);
        let due: Vec<(String, KeyLimits)> = state
            .changes
            .iter()
            .filter(|(at, _, _)| *at <= elapsed)
            .map(|(_, k, l)| (k.clone(), *l))
            .collect();
        state.changes.retain(|(at, _, _)| *at > elapsed);
        for (k, limits) in due {
            if let Some(b) = state.buckets.get_mut(&k) {
                b.refill(now);
                b.limits = limits;
                b.requests = b.requests.min(b.request_capacity());
                b.tokens = b.tokens.min(b.token_capacity());
            }
        }
        let Some(bucket) = state.buckets.get_mut(&key) else {
            return ResponseTemplate::new(401).set_body_string("unknown key");
        };
        bucket.refill(now);
        let accepted = bucket.requests >= 1.0 && bucket.tokens >= tokens as f64;
        let template = if accepted {
            bucket.requests -= 1.0;
            bucket.tokens -= tokens as f64;
            let body = serde_json::json!({
                "id": "chatcmpl-limited",
                "object": "chat.completion",
                "choices": [{"index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": self.spec.answer}}],
                "usage": {"prompt_tokens": input,
                    "completion_tokens": self.spec.completion_tokens,
                    "total_tokens": tokens}
            });
            ResponseTemplate::new(200)
                .set_body_json(body)
                .set_delay(self.spec.latency)
        } else {
            let wait = bucket.wait_for(tokens as f64);
            ResponseTemplate::new(429)
                .insert_header("retry-after", format!("{:.3}", wait.as_secs_f64()))
                .set_body_string("{\"error\": {\"message\": \"Rate limit reached\"}}")
        };
        let template = if self.spec.headers {
            bucket.headers(template)
        } else {
            template
        };
        state.seen.entry(key).or_default().push(Seen {
            at: elapsed,
            accepted,
            tokens: if accepted { tokens } else { 0 },
        });
        template
    }
}

/// Starts the provider; its base URL is `{server.uri()}/v1`.
pub async fn start(spec: ProviderSpec) -> (MockServer, LimitedProvider) {
    let now = Instant::now();
    let state = State {
        started: now,
        buckets: spec
            .keys
            .iter()
            .map(|(k, l)| (k.clone(), Bucket::new(*l, now)))
            .collect(),
        changes: spec.changes.clone(),
        seen: HashMap::new(),
    };
    let provider = LimitedProvider {
        spec: Arc::new(spec),
        state: Arc::new(Mutex::new(state)),
    };
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(provider.clone())
        .mount(&server)
        .await;
    (server, provider)
}

/// Accepted calls per minute between `from` and `to` (from the provider's start).
pub fn accepted_per_minute(seen: &[Seen], from: Duration, to: Duration) -> f64 {
    let n = seen
        .iter()
        .filter(|s| s.accepted && s.at >= from && s.at < to)
        .count();
    n as f64 * 60.0 / (to - from).as_secs_f64()
}

/// Accepted calls per minute between the first and the last accepted one (a rate that does not
/// depend on where a short window starts).
pub fn steady_per_minute(seen: &[Seen]) -> f64 {
    let accepted: Vec<Duration> = seen.iter().filter(|s| s.accepted).map(|s| s.at).collect();
    match (accepted.first(), accepted.last()) {
        (Some(first), Some(last)) if last > first => {
            (accepted.len() - 1) as f64 * 60.0 / (*last - *first).as_secs_f64()
        }
        _ => 0.0,
    }
}

/// The part of the calls refused with 429.
pub fn refused_share(seen: &[Seen]) -> f64 {
    if seen.is_empty() {
        return 0.0;
    }
    seen.iter().filter(|s| !s.accepted).count() as f64 / seen.len() as f64
}

/// A valid agent answer to the Telecom scenario (so dialogues against the provider run to
/// their end).
pub const TELECOM_AGENT_ANSWER: &str = r#"{"classification_output": {"ConsumptionType": "Change", "ApplicationTendency": "Agree", "ConsumptionProfile": "Data", "EmotionTag": "Calm"}, "cot": "change, no contract", "now_path": ["step1", "step2", "step4"], "finals": {"Action": "ChangeOrder"}, "chat": "I will change your package right away."}"#;
