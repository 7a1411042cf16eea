//! The targets that fuzz the parsers living with the runtime (model backends' response bodies,
//! NATS messages and headers, the results records through the actors' collector and the
//! reports, the judges' answers through the role registry, the command line), and what only they
//! share: the role registries a worker would serve, a runtime, the fake API key. Built with the
//! `runtime` feature (the default).

#[path = "targets/anthropic_body.rs"]
pub mod anthropic_body;
#[path = "targets/cli.rs"]
pub mod cli;
#[path = "targets/desk_record.rs"]
pub mod desk_record;
#[path = "targets/dialogue_record.rs"]
pub mod dialogue_record;
#[path = "targets/http_agent_body.rs"]
pub mod http_agent_body;
#[path = "targets/judge_answer.rs"]
pub mod judge_answer;
#[path = "targets/nats_headers.rs"]
pub mod nats_headers;
#[path = "targets/nats_message.rs"]
pub mod nats_message;
#[path = "targets/openai_body.rs"]
pub mod openai_body;
#[path = "targets/retry_after.rs"]
pub mod retry_after;

use super::core_targets::{
    debug, json_roundtrip, northline, pick_sop, same_json, sops, split_first,
};
use sage::actors::roles::Registry;
use sage::desk::{DeskFixture, SupportDesk};
use sage::plan::RunConfig;
use sage::plan::desk::DeskConfig;
use sage::sop::Sop;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// The API key of the fuzzed HTTP backends (in the dictionary, so bodies that echo it are
/// tried).
pub const FAKE_KEY: &str = "fuzz-redact-sample1";

/// What a backend says of a body it cannot read: never the key, and no retry (the same body
/// would come back).
pub fn check_body_error(e: &sage::llm::LlmError) {
    let text = e.to_string();
    assert!(
        !text.contains(FAKE_KEY),
        "the key leaks into the error: {text}"
    );
    assert!(!e.is_retryable());
}

/// What a worker serves a SAGE run of the default configuration with: the bundled scenarios and
/// the simulated models.
pub fn sage_registry() -> Arc<Registry> {
    static REGISTRY: OnceLock<Arc<Registry>> = OnceLock::new();
    REGISTRY
        .get_or_init(|| {
            let config = RunConfig::default();
            let sops: HashMap<String, Arc<Sop>> = sops()
                .iter()
                .map(|s| (s.scenario().id.clone(), s.clone()))
                .collect();
            let endpoints = sage::actors::runner::endpoints(&config, &Default::default())
                .expect("simulated models");
            Arc::new(Registry::sage(&config, sops, endpoints))
        })
        .clone()
}

/// What a worker serves a support-desk run of the default configuration with: Northline and
/// the simulated models.
pub fn desk_registry() -> Arc<Registry> {
    static REGISTRY: OnceLock<Arc<Registry>> = OnceLock::new();
    REGISTRY
        .get_or_init(|| {
            let fixture = Arc::new(DeskFixture::new(northline().clone()));
            Arc::new(
                sage::actors::suite::registry::<SupportDesk>(
                    &DeskConfig::default(),
                    &fixture,
                    |_| true,
                    &Default::default(),
                )
                .expect("simulated models"),
            )
        })
        .clone()
}

/// A single-threaded runtime for the roles' async handlers (timers enabled).
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a runtime")
    })
}
