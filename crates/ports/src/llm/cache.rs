//! The opt-in on-disk response cache, content-addressed.
//!
//! Key: the SHA-256 (hex) of a canonical JSON of everything that shapes an answer: provider,
//! base URL, model id, temperature, seed, max_tokens, the JSON flags, the role's content-retry
//! number (`request.attempt`, only when above 0), the messages, and the structured-output form
//! with its schema when a schema is sent. Never the
//! API key (nor its variable) and never `request.sim`. File: `{dir}/{first 2 hex}/{hash}.json`
//! holding the [`ChatResponse`], written to a temporary file and renamed into place, so a reader
//! never sees half a file. A file that does not parse is a miss. Only successful responses are
//! stored (the [`Endpoint`](super::Endpoint) decides).

use super::{ChatMessage, ChatRequest, ChatResponse, ModelConfig, Provider};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Bumped when the key material or the file format changes.
const KEY_VERSION: u32 = 1;

/// What the key is the hash of (field order is the canonical order).
#[derive(Serialize)]
struct KeyMaterial<'a> {
    v: u32,
    provider: Provider,
    base_url: Option<&'a str>,
    model: &'a str,
    temperature: Option<f32>,
    seed: Option<u64>,
    max_tokens: Option<u32>,
    json: bool,
    json_mode: bool,
    /// A role's content retry (0 for the first try) is a different request; left out when 0.
    #[serde(skip_serializing_if = "is_zero")]
    attempt: u32,
    messages: &'a [ChatMessage],
    /// Tools offered (left out when none, so plain-chat keys are unchanged).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tools: &'a [super::ToolSpec],
    /// The structured-output form and schema, when the request sends a schema (left out
    /// otherwise, so keys without one are unchanged).
    #[serde(skip_serializing_if = "Option::is_none")]
    structured: Option<(super::StructuredOutput, &'a super::JsonSchema)>,
    /// A fork's sample (left out in a run, so its keys are unchanged): each sample is asked
    /// for and paid once.
    #[serde(skip_serializing_if = "Option::is_none")]
    sample: Option<u32>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// The cache key of a request to an endpoint with this configuration (64 hex characters).
pub(crate) fn cache_key(config: &ModelConfig, request: &ChatRequest) -> String {
    let material = KeyMaterial {
        v: KEY_VERSION,
        provider: config.provider,
        base_url: config
            .base_url
            .as_deref()
            .map(|u| u.trim().trim_end_matches('/')),
        model: config.model_id(),
        temperature: request.sampling(config.seed, config.temperature).1,
        seed: request.sampling(config.seed, config.temperature).0,
        max_tokens: config.max_tokens,
        json: request.json,
        json_mode: config.json_mode,
        attempt: request.attempt,
        messages: &request.messages,
        tools: &request.tools,
        structured: request
            .structured
            .as_ref()
            .map(|s| (request.structured_output(config), &*s.schema))
            .filter(|(form, _)| form.sends_schema()),
        sample: request.sample,
    };
    let mut hasher = Sha256::new();
    // Serializing plain data into a Vec cannot fail; an empty key material would still hash.
    let bytes = serde_json::to_vec(&material).unwrap_or_default();
    hasher.update(&bytes);
    hex::encode(hasher.finalize())
}

/// A response cache rooted at a directory.
#[derive(Debug, Clone)]
pub(crate) struct ResponseCache {
    dir: PathBuf,
}

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl ResponseCache {
    /// A cache in `dir` (created on the first store).
    pub(crate) fn new(dir: PathBuf) -> ResponseCache {
        ResponseCache { dir }
    }

    /// The root directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the response for `key` lives.
    pub(crate) fn path(&self, key: &str) -> PathBuf {
        let prefix = key.get(..2).unwrap_or("__");
        self.dir.join(prefix).join(format!("{key}.json"))
    }

    /// The stored response for `key`; `None` when absent or unreadable (a corrupt file is a miss).
    pub(crate) async fn get(&self, key: &str) -> Option<ChatResponse> {
        let bytes = tokio::fs::read(self.path(key)).await.ok()?;
        match serde_json::from_slice(&bytes) {
            Ok(response) => Some(response),
            Err(e) => {
                tracing::warn!(key, error = %e, "corrupt response cache entry ignored");
                None
            }
        }
    }

    /// Stores `response` under `key` atomically (temporary file, then rename).
    pub(crate) async fn put(&self, key: &str, response: &ChatResponse) -> std::io::Result<()> {
        let path = self.path(key);
        let Some(parent) = path.parent() else {
            return Err(std::io::Error::other("cache path has no parent"));
        };
        tokio::fs::create_dir_all(parent).await?;
        let bytes = serde_json::to_vec_pretty(response).map_err(std::io::Error::other)?;
        let tmp = parent.join(format!(
            ".{key}.{}.{}.tmp",
            std::process::id(),
            TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        if let Err(e) = write_then_rename(&tmp, &path, &bytes).await {
            let _ = tokio::fs::remove_file(&tmp).await;
            return Err(e);
        }
        Ok(())
    }
}

async fn write_then_rename(tmp: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    tokio::fs::write(tmp, bytes).await?;
    tokio::fs::rename(tmp, path).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ChatRole;
    use sage_core::protocol::Usage;

    fn request(text: &str) -> ChatRequest {
        ChatRequest {
            messages: vec![
                ChatMessage::new(ChatRole::System, "be brief"),
                ChatMessage::new(ChatRole::User, text),
            ],
            ..ChatRequest::default()
        }
    }

    #[test]
    fn key_depends_on_what_shapes_the_answer_and_not_the_secret() {
        let mut c = ModelConfig::new("m", Provider::Openai);
        let k = cache_key(&c, &request("hi"));
        assert_eq!(k.len(), 64);
        assert_eq!(k, cache_key(&c, &request("hi")));
        assert_ne!(k, cache_key(&c, &request("hello")));
        c.api_key_env = Some("SOME_VAR".into());
        assert_eq!(
            k,
            cache_key(&c, &request("hi")),
            "the key variable is not part of the key"
        );
        c.temperature = Some(0.5);
        assert_ne!(k, cache_key(&c, &request("hi")));
        let mut j = request("hi");
        j.json = true;
        assert_ne!(cache_key(&ModelConfig::new("m", Provider::Openai), &j), k);
        assert_ne!(
            cache_key(&ModelConfig::new("m", Provider::Anthropic), &request("hi")),
            k
        );
        let mut retry = request("hi");
        retry.attempt = 1;
        assert_ne!(
            cache_key(&ModelConfig::new("m", Provider::Openai), &retry),
            k
        );
        let plain = ModelConfig::new("m", Provider::Openai);
        let k = cache_key(&plain, &request("hi"));
        let mut tools = request("hi");
        tools.tools.push(super::super::ToolSpec {
            name: "order_lookup".into(),
            description: "look up".into(),
            parameters: serde_json::json!({"type": "object"}),
        });
        assert_ne!(cache_key(&plain, &tools), k, "tools shape the answer");
        let mut answered = request("hi");
        answered
            .messages
            .push(super::super::ChatMessage::tool_result("c1", "{}"));
        assert_ne!(cache_key(&plain, &answered), k);
    }

    #[test]
    fn a_forks_samples_are_asked_apart_and_a_runs_keys_are_unchanged() {
        let c = ModelConfig::new("m", Provider::Openai);
        let run = cache_key(&c, &request("hi"));
        let sample = |k| {
            let mut r = request("hi");
            r.sample = Some(k);
            r
        };
        // Without a sample the request is sent as configured (no temperature, no seed).
        assert_eq!(request("hi").sampling(None, None), (None, None));
        assert_eq!(
            request("hi").sampling(Some(3), Some(0.0)),
            (Some(3), Some(0.0))
        );
        // A sample: the seed moved by the draw, and a temperature that samples.
        assert_eq!(
            sample(5).sampling(None, None),
            (Some(5), Some(crate::llm::SAMPLE_TEMPERATURE))
        );
        assert_eq!(
            sample(5).sampling(Some(10), Some(0.0)),
            (Some(15), Some(1.0))
        );
        assert_eq!(
            sample(5).sampling(Some(10), Some(0.3)),
            (Some(15), Some(0.3))
        );
        assert_eq!(sample(1).sampling(Some(u64::MAX), None).0, Some(0));
        // Each sample its own answer in the cache; none of them a run's.
        let keys: std::collections::HashSet<String> =
            (0..4).map(|k| cache_key(&c, &sample(k))).collect();
        assert_eq!(keys.len(), 4);
        assert!(!keys.contains(&run));
        assert_eq!(cache_key(&c, &sample(2)), cache_key(&c, &sample(2)));
    }

    #[tokio::test]
    async fn store_load_and_corrupt_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = ResponseCache::new(dir.path().join("cache"));
        let key = cache_key(&ModelConfig::new("m", Provider::Openai), &request("hi"));
        assert!(cache.get(&key).await.is_none());
        let resp = ChatResponse {
            text: "hello".into(),
            finish_reason: Some("stop".into()),
            usage: Usage {
                input_tokens: 3,
                output_tokens: 1,
                ..Usage::default()
            },
            tool_calls: Vec::new(),
            rate_limits: None,
        };
        cache.put(&key, &resp).await.expect("put");
        let path = cache.path(&key);
        assert!(path.starts_with(cache.dir().join(&key[..2])));
        assert_eq!(cache.get(&key).await, Some(resp));
        std::fs::write(&path, b"{ not json").expect("write");
        assert!(cache.get(&key).await.is_none());
        let leftovers: Vec<_> = std::fs::read_dir(path.parent().expect("parent"))
            .expect("dir")
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }
}
