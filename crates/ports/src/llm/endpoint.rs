//! An endpoint: a backend with cache, retries, limits and accounting around it.

use super::anthropic::AnthropicMessages;
use super::cache::{ResponseCache, cache_key};
use super::http_agent::HttpAgent;
use super::limit::Limiter;
use super::openai::OpenAiChat;
use super::{ChatModel, ChatRequest, ChatResponse, LlmError, ModelConfig, Provider, retry};
use sage_core::protocol::{CallRecord, Usage};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What one logical call met of its provider's limits, over its attempts.
#[derive(Debug, Default)]
struct LimitsMet {
    /// Attempts refused for the rate limit (HTTP 429).
    refused: u32,
    /// Time waiting for the limit group's grant.
    waited: Duration,
}

/// The outcome of one logical call (all attempts) and its record.
#[derive(Debug, Clone)]
pub struct Called {
    /// The response, or the last error after retries.
    pub result: Result<ChatResponse, LlmError>,
    /// What happened, for the results.
    pub record: CallRecord,
}

/// Counters of an endpoint since it was built.
#[derive(Debug, Default)]
struct Stats {
    calls: AtomicU64,
    attempts: AtomicU64,
    cache_hits: AtomicU64,
    failures: AtomicU64,
}

/// A model endpoint ready to call.
///
/// Every [`call`](Endpoint::call) looks in the response cache first (when one is configured and
/// the backend is not simulated), then makes attempts until one succeeds, an error is not
/// retryable, or `retries.max_attempts` is reached. Each attempt passes the endpoint's
/// [`Limiter`] (a concurrency slot, the requests and tokens rates, a provider's pause); the
/// backoff between attempts holds none of them. Endpoints of one limit group share a limiter
/// ([`held_to`](Endpoint::held_to)).
pub struct Endpoint {
    config: ModelConfig,
    backend: Arc<dyn ChatModel>,
    cache: Option<ResponseCache>,
    limiter: Arc<Limiter>,
    stats: Stats,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The configuration names the key variable, never holds the key.
        f.debug_struct("Endpoint")
            .field("name", &self.config.name)
            .field("provider", &self.config.provider)
            .field("simulated", &self.backend.is_simulated())
            .field("cache_dir", &self.cache.as_ref().map(|c| c.dir()))
            .field("limits", &self.limiter.name())
            .finish()
    }
}

impl Endpoint {
    /// Builds the backend the configuration names, with the response cache in `cache_dir` when
    /// given (opt-in).
    ///
    /// Fails with [`LlmError::Config`] when the configuration cannot work: a setting out of its
    /// bounds ([`ModelConfig::check`]), a configured API key variable that is not set (the
    /// error names the variable), a missing `base_url` for an HTTP agent, or a `cache_dir` that
    /// cannot be a folder.
    pub fn new(config: ModelConfig, cache_dir: Option<PathBuf>) -> Result<Endpoint, LlmError> {
        let limiter = Arc::new(Limiter::for_model(&config));
        Endpoint::held_to(config, cache_dir, limiter)
    }

    /// As [`new`](Endpoint::new), held to `limiter` (shared with the other models of its limit
    /// group) instead of limits of its own.
    pub fn held_to(
        config: ModelConfig,
        cache_dir: Option<PathBuf>,
        limiter: Arc<Limiter>,
    ) -> Result<Endpoint, LlmError> {
        config.check().map_err(LlmError::Config)?;
        if let Some(dir) = &cache_dir {
            std::fs::create_dir_all(dir).map_err(|e| {
                LlmError::Config(format!(
                    "cache_dir `{}`: cannot be the response cache's folder: {e}",
                    dir.display()
                ))
            })?;
        }
        let backend: Arc<dyn ChatModel> = match config.provider {
            Provider::Openai => Arc::new(OpenAiChat::new(&config)?),
            Provider::Anthropic => Arc::new(AnthropicMessages::new(&config)?),
            Provider::HttpAgent => Arc::new(HttpAgent::new(&config)?),
            Provider::Simulated => super::sim::build(&config)?,
        };
        Ok(Endpoint::assemble(config, backend, cache_dir, limiter))
    }

    /// An endpoint around a given backend (tests, custom backends).
    pub fn with_backend(
        config: ModelConfig,
        backend: Arc<dyn ChatModel>,
        cache_dir: Option<PathBuf>,
    ) -> Endpoint {
        let limiter = Arc::new(Limiter::for_model(&config));
        Endpoint::assemble(config, backend, cache_dir, limiter)
    }

    fn assemble(
        config: ModelConfig,
        backend: Arc<dyn ChatModel>,
        cache_dir: Option<PathBuf>,
        limiter: Arc<Limiter>,
    ) -> Endpoint {
        Endpoint {
            config,
            backend,
            cache: cache_dir.map(ResponseCache::new),
            limiter,
            stats: Stats::default(),
        }
    }

    /// The limits this endpoint is held to.
    pub fn limiter(&self) -> &Arc<Limiter> {
        &self.limiter
    }

    /// The model's name in the run.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// The configuration.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// True for a built-in simulated model.
    pub fn is_simulated(&self) -> bool {
        self.backend.is_simulated()
    }

    /// The response cache directory, when caching is on.
    pub fn cache_dir(&self) -> Option<&Path> {
        self.cache.as_ref().map(|c| c.dir())
    }

    /// Logical calls made through [`call`](Endpoint::call).
    pub fn calls(&self) -> u64 {
        self.stats.calls.load(Ordering::Relaxed)
    }

    /// Attempts that reached the backend (each retry counts; cache hits do not).
    pub fn backend_calls(&self) -> u64 {
        self.stats.attempts.load(Ordering::Relaxed)
    }

    /// Calls answered from the response cache.
    pub fn cache_hits(&self) -> u64 {
        self.stats.cache_hits.load(Ordering::Relaxed)
    }

    /// Logical calls that ended in an error (after retries).
    pub fn failures(&self) -> u64 {
        self.stats.failures.load(Ordering::Relaxed)
    }

    /// Most attempts that were ever in flight at once (never above `max_concurrency`).
    pub fn peak_in_flight(&self) -> usize {
        self.limiter.peak_in_flight()
    }

    /// One logical call: cache lookup, then attempts with backoff until success, a
    /// non-retryable error or the attempt limit; each attempt within the concurrency and rate
    /// limits.
    ///
    /// The record of a cache hit has `cached: true`, zero attempts, and zero usage and cost
    /// (nothing was spent; the cached response in `result` still carries its original usage).
    ///
    /// When spans are exported, the call is a GenAI client span (`chat {model}`,
    /// [`super::span`]) with its failed attempts as events.
    pub async fn call(&self, request: &ChatRequest) -> Called {
        use tracing::Instrument;
        let span = super::span::call_span(&self.config, request);
        let called = self.attempts(request, &span).instrument(span.clone()).await;
        super::span::record_call(&span, &self.config, &called);
        called
    }

    /// The body of [`Endpoint::call`]; `span` gets an event per failed attempt.
    async fn attempts(&self, request: &ChatRequest, span: &tracing::Span) -> Called {
        let started = Instant::now();
        self.stats.calls.fetch_add(1, Ordering::Relaxed);
        // Simulated backends play from `request.sim`, which is not part of the key: never cached.
        let cache = self.cache.as_ref().filter(|_| !self.backend.is_simulated());
        let key = cache.map(|_| cache_key(&self.config, request));

        if let (Some(cache), Some(key)) = (cache, key.as_deref())
            && let Some(response) = cache.get(key).await
        {
            self.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
            let record = self.record(request, Ok(&response), 0, true, started);
            return Called {
                result: Ok(response),
                record,
            };
        }

        let input_chars = request
            .messages
            .iter()
            .map(|m| m.content.len())
            .sum::<usize>()
            + request
                .tools
                .iter()
                // A schema is a few hundred characters; not worth encoding each call to count.
                .map(|t| t.name.len() + t.description.len() + 200)
                .sum::<usize>();
        let mut attempts = 0u32;
        let mut limits = LimitsMet::default();
        let result = loop {
            attempts += 1;
            self.stats.attempts.fetch_add(1, Ordering::Relaxed);
            let outcome = {
                let asked = Instant::now();
                let permit = self.limiter.acquire(input_chars).await;
                limits.waited += asked.elapsed();
                let outcome = self.backend.chat(request).await;
                match &outcome {
                    Ok(response) => {
                        permit.settle(response.usage.input_tokens, response.usage.output_tokens);
                        if let Some(headers) = &response.rate_limits {
                            permit.answered(headers);
                        }
                    }
                    // A 429 holds every caller of the limit group and slows the group down.
                    Err(LlmError::RateLimited {
                        retry_after,
                        limits: limits_seen,
                    }) => {
                        limits.refused += 1;
                        self.limiter.refused(*retry_after, limits_seen.as_deref())
                    }
                    Err(_) => {}
                }
                outcome
            };
            match outcome {
                Ok(response) => break Ok(response),
                Err(error) => match retry::next_delay(&self.config.retries, attempts, &error) {
                    Some(delay) => {
                        super::span::attempt_failed(
                            span,
                            attempts,
                            &error.to_string(),
                            Some(delay.as_millis() as u64),
                        );
                        tracing::debug!(
                            model = %self.config.name,
                            attempt = attempts,
                            error = %error,
                            delay_ms = delay.as_millis() as u64,
                            "model call failed; retrying"
                        );
                        tokio::time::sleep(delay).await;
                    }
                    None => {
                        super::span::attempt_failed(span, attempts, &error.to_string(), None);
                        break Err(error);
                    }
                },
            }
        };

        match &result {
            Ok(response) => {
                if let (Some(cache), Some(key)) = (cache, key.as_deref())
                    && let Err(e) = cache.put(key, response).await
                {
                    tracing::warn!(model = %self.config.name, error = %e, "cannot write the response cache");
                }
            }
            Err(error) => {
                self.stats.failures.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(model = %self.config.name, attempts, error = %error, "model call failed");
            }
        }
        let mut record = self.record(request, result.as_ref(), attempts, false, started);
        record.refused = limits.refused;
        record.limit_wait_ms = limits.waited.as_millis().try_into().unwrap_or(u64::MAX);
        Called { result, record }
    }

    fn record(
        &self,
        _request: &ChatRequest,
        result: Result<&ChatResponse, &LlmError>,
        attempts: u32,
        cached: bool,
        started: Instant,
    ) -> CallRecord {
        let (response, finish_reason, error, usage) = match result {
            Ok(r) => (
                Some(r.text.clone()),
                r.finish_reason.clone(),
                None,
                if cached { Usage::default() } else { r.usage },
            ),
            Err(e) => (None, None, Some(e.to_string()), Usage::default()),
        };
        CallRecord {
            model: self.config.name.clone(),
            simulated: self.backend.is_simulated(),
            // The caller decides how much of the request to keep (see `CallRecord::request`).
            request: Vec::new(),
            response,
            finish_reason,
            error,
            attempts,
            usage,
            cost_usd: self
                .config
                .price
                .for_provider(self.config.provider)
                .cost(usage),
            cached,
            latency_ms: started.elapsed().as_millis().try_into().unwrap_or(u64::MAX),
            refused: 0,
            limit_wait_ms: 0,
        }
    }
}
