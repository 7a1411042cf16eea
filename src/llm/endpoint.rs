//! An endpoint: a backend with cache, retries, limits and accounting around it.

use super::{ChatModel, ChatRequest, ChatResponse, LlmError, ModelConfig};
use crate::protocol::CallRecord;
use std::path::PathBuf;
use std::sync::Arc;

/// The outcome of one logical call (all attempts) and its record.
#[derive(Debug, Clone)]
pub struct Called {
    /// The response, or the last error after retries.
    pub result: Result<ChatResponse, LlmError>,
    /// What happened, for the results.
    pub record: CallRecord,
}

/// A model endpoint ready to call.
pub struct Endpoint {
    config: ModelConfig,
    backend: Arc<dyn ChatModel>,
    cache_dir: Option<PathBuf>,
}

impl Endpoint {
    /// Builds the backend the configuration names, with the response cache in `cache_dir` when
    /// given (opt-in).
    pub fn new(config: ModelConfig, cache_dir: Option<PathBuf>) -> Result<Endpoint, LlmError> {
        let _ = (&config, &cache_dir);
        todo!()
    }

    /// An endpoint around a given backend (tests, custom backends).
    pub fn with_backend(config: ModelConfig, backend: Arc<dyn ChatModel>, cache_dir: Option<PathBuf>) -> Endpoint {
        Endpoint {
            config,
            backend,
            cache_dir,
        }
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

    /// One logical call: cache lookup, then attempts with backoff until success, a
    /// non-retryable error or the attempt limit; each attempt within the concurrency and rate
    /// limits.
    pub async fn call(&self, request: &ChatRequest) -> Called {
        let _ = (request, &self.cache_dir);
        todo!()
    }
}
