//! Provider limits against a mock provider that enforces them (tests/common/provider.rs): known
//! limits held, unknown ones found, a tightened one followed down, one key's limits shared by
//! the models that use it, and each key at its own pace. Short runs (seconds); the long
//! measurements are `cargo bench --bench limits` (docs/benchmarks.md).

mod common;

use common::provider::{self, KeyLimits, ProviderSpec, Seen};
use sage::llm::{
    ChatMessage, ChatRequest, ChatRole, Endpoint, ModelConfig, PerMinute, Provider, RetryConfig,
};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

const NO_TPM: u32 = u32::MAX;

fn spec(keys: &[(&str, u32, u32)], headers: bool) -> ProviderSpec {
    ProviderSpec {
        completion_tokens: 20,
        ..ProviderSpec::keys(keys, headers, Duration::from_millis(20))
    }
}

/// A model on the provider with the API key in `var` (set here to `key`).
fn model(name: &str, server: &wiremock::MockServer, var: &str, key: &str) -> ModelConfig {
    // SAFETY: each test sets its own variables before any thread reads them, to the same value.
    unsafe { std::env::set_var(var, key) };
    let mut m = ModelConfig::new(name, Provider::Openai);
    m.base_url = Some(format!("{}/v1", server.uri()));
    m.api_key_env = Some(var.into());
    m.max_concurrency = 32;
    m.timeout_secs = 10.0;
    m.retries = RetryConfig {
        max_attempts: 20,
        base_delay_ms: 50,
        max_delay_ms: 2_000,
    };
    m
}

fn request() -> ChatRequest {
    ChatRequest {
        messages: vec![ChatMessage::new(ChatRole::User, "x".repeat(400))],
        ..ChatRequest::default()
    }
}

/// `callers` tasks per endpoint calling it back to back for `run`; the calls that failed.
async fn drive(endpoints: &[Arc<Endpoint>], callers: usize, run: Duration) -> u64 {
    let until = Instant::now() + run;
    let mut tasks = Vec::new();
    for e in endpoints {
        for _ in 0..callers {
            let e = e.clone();
            tasks.push(tokio::spawn(async move {
                let mut failed = 0;
                while Instant::now() < until {
                    if e.call(&request()).await.result.is_err() {
                        failed += 1;
                    }
                }
                failed
            }));
        }
    }
    let mut failed = 0;
    for t in tasks {
        failed += t.await.expect("caller");
    }
    failed
}

fn rate(seen: &HashMap<String, Vec<Seen>>, key: &str, from: u64, to: u64) -> f64 {
    provider::accepted_per_minute(
        &seen[key],
        Duration::from_secs(from),
        Duration::from_secs(to),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_known_limit_is_held_at_the_limit_without_refusals() {
    let (server, provider) = provider::start(spec(&[("k-known", 600, NO_TPM)], true)).await;
    let mut m = model("known", &server, "SAGE_TEST_KEY_KNOWN", "k-known");
    m.requests_per_minute = Some(PerMinute::Known(600));
    let e = Arc::new(Endpoint::new(m, None).expect("endpoint"));
    assert_eq!(drive(&[e], 16, Duration::from_secs(4)).await, 0);
    let seen = provider.seen();
    let per_minute = rate(&seen, "k-known", 0, 4);
    assert!((570.0..=615.0).contains(&per_minute), "{per_minute}/min");
    assert_eq!(provider::refused_share(&seen["k-known"]), 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_limit_is_found_from_the_headers_and_held() {
    let (server, provider) = provider::start(spec(&[("k-auto", 600, NO_TPM)], true)).await;
    let mut m = model("auto", &server, "SAGE_TEST_KEY_AUTO", "k-auto");
    m.requests_per_minute = Some(PerMinute::Auto);
    let e = Arc::new(Endpoint::new(m, None).expect("endpoint"));
    assert_eq!(
        drive(std::slice::from_ref(&e), 16, Duration::from_secs(4)).await,
        0
    );
    assert_eq!(
        e.limiter().now().requests_per_minute,
        Some(600.0),
        "the limit from the headers is in force"
    );
    let seen = provider.seen();
    let per_minute = rate(&seen, "k-auto", 1, 4);
    assert!((540.0..=615.0).contains(&per_minute), "{per_minute}/min");
    assert!(provider::refused_share(&seen["k-auto"]) < 0.02);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_headers_a_429_sets_a_limit_and_a_halved_limit_is_followed_within_5_s() {
    let mut s = spec(&[("k-halved", 600, NO_TPM)], false);
    s.changes = vec![(
        Duration::from_secs(3),
        "k-halved".into(),
        KeyLimits {
            rpm: 300,
            tpm: NO_TPM,
        },
    )];
    let (server, provider) = provider::start(s).await;
    // Nothing configured, no headers: unlimited until the provider refuses.
    let m = model("halved", &server, "SAGE_TEST_KEY_HALVED", "k-halved");
    let e = Arc::new(Endpoint::new(m, None).expect("endpoint"));
    assert_eq!(
        drive(std::slice::from_ref(&e), 16, Duration::from_secs(15)).await,
        0
    );
    let seen = &provider.seen()["k-halved"];
    // Within 5 s of the change, under the new limit: a few refusals at most from then on (the
    // rate grows back towards the limit until the provider refuses again, about every 10 s).
    let late: Vec<Seen> = seen
        .iter()
        .filter(|s| s.at >= Duration::from_secs(8))
        .copied()
        .collect();
    let refused = late.iter().filter(|s| !s.accepted).count();
    assert!(
        refused <= 3,
        "{refused} of {} calls refused 5 s after the change: {:?}",
        late.len(),
        e.limiter().now()
    );
    // The rate in force probes up to the limit and past it, 1% a second, until the provider
    // refuses again (then 10% down): at any moment it is within 10% of the new limit, far
    // from the old one. (At 310 this failed once in a cold CI run, at 316, with no refusal
    // late: the probing, not a missed halving.)
    let in_force = e.limiter().now().requests_per_minute.expect("a rate");
    assert!(in_force <= 330.0, "{in_force}");
    let per_minute =
        provider::accepted_per_minute(seen, Duration::from_secs(8), Duration::from_secs(15));
    assert!(per_minute >= 200.0, "{per_minute}/min: slowed too far");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_of_one_limit_group_share_its_limits() {
    let (server, provider) = provider::start(spec(&[("k-shared", 600, NO_TPM)], true)).await;
    let mut a = model("a", &server, "SAGE_TEST_KEY_SHARED", "k-shared");
    let mut b = model("b", &server, "SAGE_TEST_KEY_SHARED", "k-shared");
    for m in [&mut a, &mut b] {
        m.requests_per_minute = Some(PerMinute::Known(600));
        m.limit_group = Some("shared-key".into());
    }
    // As a run builds them: one limiter for the group.
    let built = sage::actors::runner::build_endpoints(&[a, b], None, &Default::default())
        .expect("endpoints");
    let endpoints = [built["a"].clone(), built["b"].clone()];
    assert!(Arc::ptr_eq(endpoints[0].limiter(), endpoints[1].limiter()));
    assert_eq!(drive(&endpoints, 8, Duration::from_secs(4)).await, 0);
    let seen = provider.seen();
    let per_minute = rate(&seen, "k-shared", 0, 4);
    assert!((570.0..=615.0).contains(&per_minute), "{per_minute}/min");
    assert_eq!(provider::refused_share(&seen["k-shared"]), 0.0);
    // As many callers of each: each model gets its turn, about half the starts (a race for
    // each start once gave one 47 calls and the other 8).
    let calls: Vec<u64> = endpoints.iter().map(|e| e.calls()).collect();
    let total: u64 = calls.iter().sum();
    assert!(
        calls.iter().all(|&c| c * 10 >= total * 4),
        "each model its turn: {calls:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_key_runs_at_its_own_pace() {
    let (server, provider) = provider::start(spec(
        &[
            ("k-60", 60, NO_TPM),
            ("k-600", 600, NO_TPM),
            ("k-6000", 6_000, NO_TPM),
        ],
        true,
    ))
    .await;
    let endpoints: Vec<Arc<Endpoint>> = [("slow", 60), ("mid", 600), ("fast", 6_000)]
        .iter()
        .map(|(name, rpm)| {
            let var = format!("SAGE_TEST_KEY_{}", name.to_uppercase());
            let mut m = model(name, &server, &var, &format!("k-{rpm}"));
            m.requests_per_minute = Some(PerMinute::Known(*rpm));
            Arc::new(Endpoint::new(m, None).expect("endpoint"))
        })
        .collect();
    assert_eq!(drive(&endpoints, 8, Duration::from_secs(4)).await, 0);
    let seen = provider.seen();
    for (key, rpm) in [("k-60", 60.0), ("k-600", 600.0), ("k-6000", 6_000.0)] {
        let per_minute = provider::steady_per_minute(&seen[key]);
        assert!(
            per_minute >= rpm * 0.9 && per_minute <= rpm * 1.03,
            "{key}: {per_minute}/min"
        );
        assert_eq!(provider::refused_share(&seen[key]), 0.0, "{key}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tokens_limit_is_held_with_the_usage_reconciled() {
    // 60,000 tokens a minute = 1,000 a second; each call about 100 in + 20 out: ~8 a second.
    let (server, provider) = provider::start(spec(&[("k-tpm", 100_000, 60_000)], true)).await;
    let mut m = model("tpm", &server, "SAGE_TEST_KEY_TPM", "k-tpm");
    m.tokens_per_minute = Some(PerMinute::Known(60_000));
    let e = Arc::new(Endpoint::new(m, None).expect("endpoint"));
    assert_eq!(drive(&[e], 16, Duration::from_secs(4)).await, 0);
    let seen = &provider.seen()["k-tpm"];
    let tokens: u64 = seen
        .iter()
        .filter(|s| s.at >= Duration::from_secs(1) && s.at < Duration::from_secs(4))
        .map(|s| s.tokens)
        .sum();
    let per_minute = tokens as f64 * 60.0 / 3.0;
    assert!(
        (50_000.0..=63_000.0).contains(&per_minute),
        "{per_minute} tokens/min"
    );
    assert!(provider::refused_share(seen) < 0.01);
}
