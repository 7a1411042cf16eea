//! End to end through real HTTP: the agent under test, the user simulator and the three judges
//! are OpenAI-compatible servers (wiremock) that answer validly, with malformed JSON, with 429
//! and Retry-After, with 500, and past the timeout. The run completes; retries, format errors
//! and infrastructure errors are each recorded as what they are.

mod common;

use common::mock::{AGENT_ANSWER, JUDGE_ANSWER, completion};
use sage::actors::runner::run_embedded;
use sage::plan::{self, RunConfig};
use sage::protocol::{DialogueRecord, FormatError, ServiceOutcome};
use sage::store::RunDir;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn config(agent: &MockServer, user: &MockServer, judge: &MockServer) -> RunConfig {
    RunConfig {
        models: vec![
            common::mock::model("agent", agent, 1.0, 3),
            common::mock::model("user", user, 5.0, 3),
            common::mock::model("judge-1", judge, 5.0, 3),
            common::mock::model("judge-2", judge, 5.0, 3),
            common::mock::model("judge-3", judge, 5.0, 3),
        ],
        service_models: vec!["agent".into()],
        user_model: "user".into(),
        judge_models: vec!["judge-1".into(), "judge-2".into(), "judge-3".into()],
        // Every turn judged: each turn's faults are recorded and scored as what they are.
        judge_turns: sage::protocol::JudgeTurns::Every,
        dialogues_per_scenario: 4,
        min_per_route: 0,
        max_turns: 3,
        concurrency: 4,
        ..RunConfig::default()
    }
}

fn run(config: &RunConfig) -> Vec<DialogueRecord> {
    let sop = Arc::new(
        sage::sop::load(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/telecom_package.yaml"),
        )
        .unwrap(),
    );
    let dir = tempfile::tempdir().unwrap();
    let run = RunDir::create(dir.path(), "e2e").unwrap();
    let sops = vec![sop];
    let jobs = plan::jobs(config, "e2e", &sops);
    actix::System::new()
        .block_on(run_embedded(config, &sops, &jobs, &run, None))
        .unwrap();
    let records = run.read_dialogues().unwrap();
    assert_eq!(records.len(), 4);
    records
}

/// Three servers that always answer: the agent with `agent`, the customer with a request to
/// change plans, the judges with a valid verdict.
fn simple_servers(
    rt: &tokio::runtime::Runtime,
    agent: ResponseTemplate,
) -> (MockServer, MockServer, MockServer) {
    rt.block_on(async {
        let (a, u, j) = servers().await;
        let chat = || Mock::given(method("POST")).and(path("/v1/chat/completions"));
        chat().respond_with(agent).mount(&a).await;
        chat()
            .respond_with(completion("Please change my plan."))
            .mount(&u)
            .await;
        chat()
            .respond_with(completion(JUDGE_ANSWER))
            .mount(&j)
            .await;
        (a, u, j)
    })
}

async fn servers() -> (MockServer, MockServer, MockServer) {
    (
        MockServer::start().await,
        MockServer::start().await,
        MockServer::start().await,
    )
}

#[test]
fn http_models_with_faults_complete_and_are_recorded_truthfully() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (agent, user, judge) = rt.block_on(async {
        let (agent, user, judge) = servers().await;
        let chat = || Mock::given(method("POST")).and(path("/v1/chat/completions"));
        // The agent: one 429 with Retry-After, one 500, one hang past the 1 s timeout, two
        // malformed answers, then valid answers.
        chat()
            .respond_with(ResponseTemplate::new(429).insert_header("Retry-After", "1"))
            .up_to_n_times(1)
            .with_priority(1)
            .mount(&agent)
            .await;
        chat()
            .respond_with(ResponseTemplate::new(500).set_body_string("overloaded"))
            .up_to_n_times(1)
            .with_priority(2)
            .mount(&agent)
            .await;
        chat()
            .respond_with(completion(AGENT_ANSWER).set_delay(Duration::from_secs(3)))
            .up_to_n_times(1)
            .with_priority(3)
            .mount(&agent)
            .await;
        chat()
            .respond_with(completion("Sure, I can help with that!"))
            .up_to_n_times(1)
            .with_priority(4)
            .mount(&agent)
            .await;
        chat()
            .respond_with(completion(
                r#"{"classification_output": {"ConsumptionType": "Change",}"#,
            ))
            .up_to_n_times(1)
            .with_priority(5)
            .mount(&agent)
            .await;
        chat()
            .respond_with(completion(AGENT_ANSWER))
            .with_priority(10)
            .mount(&agent)
            .await;
        // The customer.
        chat()
            .respond_with(completion(
                "I want to change my plan; I am not under contract.",
            ))
            .mount(&user)
            .await;
        // The judges: one unparsable answer (retried), one 500 (retried), then valid.
        chat()
            .respond_with(completion("I cannot judge this."))
            .up_to_n_times(1)
            .with_priority(1)
            .mount(&judge)
            .await;
        chat()
            .respond_with(ResponseTemplate::new(500))
            .up_to_n_times(1)
            .with_priority(2)
            .mount(&judge)
            .await;
        chat()
            .respond_with(completion(JUDGE_ANSWER))
            .with_priority(10)
            .mount(&judge)
            .await;
        (agent, user, judge)
    });
    let config = config(&agent, &user, &judge);
    let records = run(&config);

    let turns: Vec<_> = records.iter().flat_map(|r| &r.turns).collect();
    assert_eq!(turns.len(), 4 * 3, "every dialogue ran its three turns");
    assert!(
        turns.iter().all(|t| t.infra_error.is_none()),
        "every fault was absorbed by a retry"
    );
    let format_errors: Vec<&FormatError> = turns
        .iter()
        .filter_map(|t| match &t.outcome {
            ServiceOutcome::FormatError { error, .. } => Some(error),
            _ => None,
        })
        .collect();
    assert_eq!(format_errors.len(), 2, "{format_errors:?}");
    assert!(format_errors.contains(&&FormatError::NoJsonObject));
    assert!(
        format_errors
            .iter()
            .any(|e| matches!(e, FormatError::InvalidJson { .. } | FormatError::Truncated))
    );
    // A format-error turn is scored: logic 0, chat from the judges.
    for t in &turns {
        let s = t.scores.expect("scored");
        if matches!(t.outcome, ServiceOutcome::FormatError { .. }) {
            assert_eq!(s.logic, 0.0);
            assert!(s.chat > 0.0);
        } else {
            assert_eq!(s.acc_cls, 1.0);
            assert_eq!(s.acc_action, 1.0);
        }
    }
    let agent_calls: Vec<_> = turns
        .iter()
        .flat_map(|t| &t.calls)
        .filter(|c| c.model == "agent")
        .collect();
    let retried: Vec<_> = agent_calls.iter().filter(|c| c.attempts > 1).collect();
    assert_eq!(
        retried.iter().map(|c| c.attempts - 1).sum::<u32>(),
        3,
        "429, 500 and the timeout each cost one retry"
    );
    assert!(
        retried.iter().any(|c| c.latency_ms >= 1000),
        "Retry-After: 1 was honoured"
    );
    assert!(
        agent_calls
            .iter()
            .all(|c| c.usage.input_tokens == 100 && !c.simulated)
    );
    // The judge's unparsable answer was asked again: 3 judge calls per turn plus one.
    let judge_calls = turns
        .iter()
        .flat_map(|t| &t.calls)
        .filter(|c| c.model.starts_with("judge"))
        .count();
    assert_eq!(judge_calls, 3 * turns.len() + 1);
}

#[test]
fn an_unreachable_agent_is_an_infrastructure_error_not_a_format_error() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (agent, user, judge) = simple_servers(&rt, ResponseTemplate::new(503));
    let records = run(&config(&agent, &user, &judge));
    assert!(
        records
            .iter()
            .all(|r| r.end == sage::protocol::DialogueEnd::InfraError)
    );
    for t in records.iter().flat_map(|r| &r.turns) {
        assert!(
            matches!(t.outcome, ServiceOutcome::InfraError { .. }),
            "{:?}",
            t.outcome
        );
        assert!(t.infra_error.is_some() && t.scores.is_none());
        let agent_call = t.calls.iter().find(|c| c.model == "agent").unwrap();
        assert_eq!(agent_call.attempts, 3);
        assert!(agent_call.error.as_deref().unwrap().contains("503"));
    }
    let summary = sage::scoring::summarize(&records, &sage::scoring::Bootstrap::default());
    let all = &summary.models[0].all;
    assert_eq!(
        all.infra_error_turns,
        4 * 3,
        "the summary counts infrastructure errors"
    );
    assert_eq!(
        all.format_error_turns, 0,
        "and does not count them as format errors"
    );
}

#[test]
fn a_rerun_with_the_response_cache_makes_zero_calls() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (agent, user, judge) = simple_servers(&rt, completion(AGENT_ANSWER));
    let cache = tempfile::tempdir().unwrap();
    let mut config = config(&agent, &user, &judge);
    config.cache_dir = Some(cache.path().to_path_buf());
    let received = || {
        rt.block_on(async {
            let mut n = 0;
            for s in [&agent, &user, &judge] {
                n += s.received_requests().await.map_or(0, |r| r.len());
            }
            n
        })
    };
    let first = run(&config);
    let calls_first = received();
    assert!(calls_first >= 4 * 3 * 5, "{calls_first} calls");
    let second = run(&config);
    assert_eq!(
        received(),
        calls_first,
        "the second run was served from the cache"
    );
    let strip = |records: &[DialogueRecord]| {
        let mut v: Vec<_> = records
            .iter()
            .map(|r| {
                (
                    r.job.dialogue_id.clone(),
                    r.turns.iter().map(|t| t.scores).collect::<Vec<_>>(),
                )
            })
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    };
    assert_eq!(strip(&first), strip(&second), "same results");
    let cached: Vec<_> = second
        .iter()
        .flat_map(|r| &r.turns)
        .flat_map(|t| &t.calls)
        .collect();
    assert!(cached.iter().all(|c| c.cached && c.cost_usd == 0.0));
}

/// Every call made is in the records: the customer's closing call (the one that ends the
/// dialogue, and belongs to no turn) included, with its tokens and cost.
#[test]
fn every_model_call_made_is_recorded_the_closing_one_included() {
    use wiremock::matchers::body_string_contains;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (agent, user, judge) = rt.block_on(async {
        let (agent, user, judge) = servers().await;
        let chat = || Mock::given(method("POST")).and(path("/v1/chat/completions"));
        chat()
            .respond_with(completion(AGENT_ANSWER))
            .mount(&agent)
            .await;
        // Once the agent has answered, the customer ends the dialogue.
        chat()
            .and(body_string_contains(
                "I will change your package right away.",
            ))
            .respond_with(completion("[END]"))
            .with_priority(1)
            .mount(&user)
            .await;
        chat()
            .respond_with(completion("Please change my plan."))
            .with_priority(10)
            .mount(&user)
            .await;
        chat()
            .respond_with(completion(JUDGE_ANSWER))
            .mount(&judge)
            .await;
        (agent, user, judge)
    });
    let mut config = config(&agent, &user, &judge);
    for m in &mut config.models {
        m.price = sage::llm::Price {
            input_per_million: 1.0,
            output_per_million: 2.0,
            ..Default::default()
        };
    }
    let records = run(&config);
    let made = rt
        .block_on(user.received_requests())
        .expect("recorded requests")
        .len();
    let calls = |r: &DialogueRecord| -> Vec<sage::protocol::CallRecord> {
        r.turns
            .iter()
            .flat_map(|t| &t.calls)
            .chain(&r.closing_calls)
            .cloned()
            .collect()
    };
    let recorded: usize = records
        .iter()
        .map(|r| calls(r).iter().filter(|c| c.model == "user").count())
        .sum();
    assert_eq!(made, 8, "two customer calls per dialogue");
    assert_eq!(recorded, made, "every customer call is in the records");
    for r in &records {
        assert_eq!(r.closing_calls.len(), 1, "{:?}", r.end);
        let usage: u64 = calls(r).iter().map(|c| c.usage.input_tokens).sum();
        assert_eq!(r.usage.input_tokens, usage);
        let cost: f64 = calls(r).iter().map(|c| c.cost_usd).sum();
        assert!((r.cost_usd - cost).abs() < 1e-12 && cost > 0.0);
    }
}
