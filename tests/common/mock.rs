//! A mock OpenAI-compatible model for tests (wiremock): a chat completion's body, a model
//! declaration pointing at the mock, and the telecom answers of an agent and a judge.

use sage::llm::{ModelConfig, Provider, RetryConfig};
use serde_json::json;
use wiremock::{MockServer, ResponseTemplate};

/// A valid agent answer in the telecom scenario (a contract change, no contract).
pub const AGENT_ANSWER: &str = r#"{"classification_output": {"ConsumptionType": "Change", "ApplicationTendency": "Agree", "ConsumptionProfile": "Data", "EmotionTag": "Calm"}, "cot": "change, no contract", "now_path": ["step1", "step2", "step4"], "finals": {"Action": "ChangeOrder"}, "chat": "I will change your package right away."}"#;

/// A valid judge answer in the telecom scenario.
pub const JUDGE_ANSWER: &str = r#"{"classification": {"ConsumptionType": "Change", "ApplicationTendency": "Agree", "ConsumptionProfile": "Data", "EmotionTag": "Calm"}, "chat_quality_dimensions": {"linguistic_quality": 9, "anthropomorphism_emotion": 6, "content_utility": 9, "user_satisfaction": 9, "instruction_compliance": 9}, "classification_reasoning": "r", "chat_quality_reasoning": "r"}"#;

/// A chat completion answering `content` (100 prompt and 20 completion tokens).
pub fn completion(content: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "x", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    }))
}

/// An OpenAI-compatible model `name` served by `server`, with this timeout and these attempts
/// (10 to 100 ms apart).
pub fn model(name: &str, server: &MockServer, timeout_secs: f64, max_attempts: u32) -> ModelConfig {
    ModelConfig {
        base_url: Some(format!("{}/v1", server.uri())),
        model: Some("mock-model".into()),
        timeout_secs,
        retries: RetryConfig {
            max_attempts,
            base_delay_ms: 10,
            max_delay_ms: 100,
        },
        ..ModelConfig::new(name, Provider::Openai)
    }
}

/// Plays the one dialogue `config` plans over the telecom scenario, embedded (the models
/// behind mocks), and returns its record. `config` must plan exactly one dialogue.
pub fn play_one_telecom_dialogue(config: &sage::plan::RunConfig) -> sage::protocol::DialogueRecord {
    config.check("<test>").unwrap();
    let sop = std::sync::Arc::new(
        sage::sop::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("scenarios/telecom_package.yaml"),
        )
        .unwrap(),
    );
    let dir = tempfile::tempdir().unwrap();
    let run = sage::store::RunDir::create(dir.path(), "one").unwrap();
    let sops = vec![sop];
    let jobs = sage::plan::jobs(config, "one", &sops);
    assert_eq!(jobs.len(), 1);
    actix::System::new()
        .block_on(sage::actors::runner::run_embedded(
            config, &sops, &jobs, &run, None,
        ))
        .unwrap();
    run.read_dialogues().unwrap().remove(0)
}

/// A runtime of its own for mock servers, kept alive beside them while the test runs `sage`.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime")
}
