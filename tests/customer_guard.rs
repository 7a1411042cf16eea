//! `customer_guard` (issue 22, customer fidelity): a customer line the cheap check flags
//! (`sage_core::scoring::fidelity::off_script`) is asked again once, and both lines are
//! recorded. Counted through real HTTP: the agent, the customer and the judge are
//! OpenAI-compatible mocks, and the customer says the same line on every call.

mod common;

use common::mock::{AGENT_ANSWER, JUDGE_ANSWER, completion};
use sage::plan::RunConfig;
use sage::protocol::{DialogueEnd, DialogueRecord, JudgeTurns};
use serde_json::{Value as Json, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

/// What the customer mock says on every call (before its `[END]`).
const LINE: &str = "Please change my plan.";

/// The reason recorded for a repeated line (`OffScript::Repeated.describe()`).
const REPEATED: &str = "a line the customer already said";

/// The start of the note appended when the customer is asked again.
const NOTE: &str = "Stay in your role as the customer";

/// One dialogue of the telecom scenario: the customer says [`LINE`] on its first `lines` calls
/// (on every call when `None`) and `[END]` after. Returns the record, the customer's requests
/// (their JSON bodies, in order) and the configuration run.
fn run(guard: bool, lines: Option<u64>, max_turns: u32) -> (DialogueRecord, Vec<Json>, RunConfig) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (agent, user, judge) = rt.block_on(async {
        let (a, u, j) = (
            MockServer::start().await,
            MockServer::start().await,
            MockServer::start().await,
        );
        let chat = || Mock::given(method("POST")).and(path("/v1/chat/completions"));
        chat()
            .respond_with(completion(AGENT_ANSWER))
            .mount(&a)
            .await;
        match lines {
            Some(n) => {
                chat()
                    .respond_with(completion(LINE))
                    .up_to_n_times(n)
                    .mount(&u)
                    .await;
                chat().respond_with(completion("[END]")).mount(&u).await;
            }
            None => chat().respond_with(completion(LINE)).mount(&u).await,
        }
        chat()
            .respond_with(completion(JUDGE_ANSWER))
            .mount(&j)
            .await;
        (a, u, j)
    });
    let config = RunConfig {
        models: vec![
            common::mock::model("agent", &agent, 5.0, 1),
            common::mock::model("user", &user, 5.0, 1),
            common::mock::model("judge", &judge, 5.0, 1),
        ],
        service_models: vec!["agent".into()],
        user_model: "user".into(),
        judge_models: vec!["judge".into()],
        judge_turns: JudgeTurns::Paper,
        dialogues_per_scenario: 1,
        min_per_route: 0,
        max_turns,
        concurrency: 1,
        customer_guard: guard,
        ..RunConfig::default()
    };
    let record = common::mock::play_one_telecom_dialogue(&config);
    let requests = rt.block_on(async {
        (user.received_requests().await.unwrap_or_default())
            .iter()
            .map(|r| serde_json::from_slice::<Json>(&r.body).unwrap())
            .collect::<Vec<Json>>()
    });
    (record, requests, config)
}

/// The text of a request's last message.
fn last_message(request: &Json) -> &str {
    let messages = request["messages"].as_array().unwrap();
    messages.last().unwrap()["content"].as_str().unwrap()
}

/// The turns that recorded a retry.
fn retried(record: &DialogueRecord) -> Vec<u32> {
    (record.turns.iter())
        .filter(|t| t.customer_retry.is_some())
        .map(|t| t.turn)
        .collect()
}

#[test]
fn without_the_guard_a_repeating_customer_is_asked_once_per_turn() {
    let (record, requests, config) = run(false, Some(5), 16);
    // 5 turns, then the closing `[END]`.
    assert_eq!(record.turns.len(), 5);
    assert_eq!(requests.len(), 5 + 1);
    assert_ne!(record.end, DialogueEnd::MaxTurns, "the customer ended it");
    assert!(record.turns.iter().all(|t| t.user_message == LINE));
    assert_eq!(retried(&record), Vec::<u32>::new());
    assert!(requests.iter().all(|r| !last_message(r).contains(NOTE)));
    // Off: left out of the manifest's configuration and of every turn.
    let manifest = serde_json::to_value(&config).unwrap();
    assert!(manifest.get("customer_guard").is_none(), "{manifest}");
    let line = serde_json::to_string(&record).unwrap();
    assert!(!line.contains("customer_retry"));
}

#[test]
fn with_the_guard_every_repeated_line_is_asked_again_once_and_both_are_recorded() {
    // 9 lines: turn 1 takes one, turns 2 to 5 two each (the line, flagged, and the second
    // answer, played); then the closing `[END]`, never asked again.
    let (record, requests, config) = run(true, Some(9), 16);
    let turns = record.turns.len();
    assert_eq!(turns, 5);
    let flagged = retried(&record);
    assert_eq!(flagged, vec![2, 3, 4, 5]);
    assert_eq!(requests.len(), turns + flagged.len() + 1);
    assert_eq!(requests.len(), 10);
    assert_ne!(record.end, DialogueEnd::MaxTurns, "the customer ended it");
    assert_eq!(record.closing_calls.len(), 1);
    for t in &record.turns {
        // The second answer is played whatever it says (here the same line again).
        assert_eq!(t.user_message, LINE);
        // Both customer calls are in the turn's calls (and the agent's, and the judge's).
        let customer = t.calls.iter().filter(|c| c.model == "user").count();
        match &t.customer_retry {
            None => assert_eq!((t.turn, customer), (1, 1)),
            Some(retry) => {
                assert_eq!(retry.first, LINE);
                assert_eq!(retry.reason, REPEATED);
                assert_eq!(customer, 2, "turn {}", t.turn);
            }
        }
    }
    // The second ask is the first's messages with the note appended to the last one.
    let noted: Vec<usize> = (requests.iter().enumerate())
        .filter(|(_, r)| last_message(r).contains(NOTE))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(noted, vec![2, 4, 6, 8]);
    for &i in &noted {
        let (first, again) = (&requests[i - 1]["messages"], &requests[i]["messages"]);
        let (first, again) = (first.as_array().unwrap(), again.as_array().unwrap());
        assert_eq!(first.len(), again.len());
        assert_eq!(first[..first.len() - 1], again[..again.len() - 1]);
        let (before, after) = (last_message(&requests[i - 1]), last_message(&requests[i]));
        assert!(after.starts_with(before) && after.len() > before.len());
    }
    // On: in the manifest's configuration, and in dialogues.jsonl as written.
    let manifest = serde_json::to_value(&config).unwrap();
    assert_eq!(manifest["customer_guard"], json!(true));
    let line = serde_json::to_value(&record).unwrap();
    assert_eq!(
        line["turns"][1]["customer_retry"],
        json!({"first": LINE, "reason": REPEATED})
    );
    assert!(line["turns"][0].get("customer_retry").is_none());
}

#[test]
fn a_second_answer_that_ends_the_dialogue_ends_it_and_max_turns_bounds_the_turns() {
    // 8 lines: turn 5's line is flagged and the second answer is `[END]`: the dialogue ends,
    // with both calls as its closing calls.
    let (record, requests, _) = run(true, Some(8), 16);
    assert_eq!(record.turns.len(), 4);
    assert_eq!(retried(&record), vec![2, 3, 4]);
    assert_eq!(requests.len(), 9);
    assert_eq!(record.closing_calls.len(), 2);
    assert_ne!(record.end, DialogueEnd::MaxTurns, "the customer ended it");
    // A customer that never ends: max_turns turns, each after the first asked twice.
    let (record, requests, _) = run(true, None, 4);
    assert_eq!(record.turns.len(), 4);
    assert_eq!(record.end, DialogueEnd::MaxTurns);
    assert_eq!(retried(&record), vec![2, 3, 4]);
    assert_eq!(requests.len(), 4 + 3);
    let (record, requests, _) = run(false, None, 4);
    assert_eq!((record.turns.len(), requests.len()), (4, 4));
}

#[test]
fn the_option_reads_from_run_yaml_and_defaults_to_off() {
    let on = RunConfig::from_yaml("customer_guard: true\n", "run.yaml").unwrap();
    assert!(on.customer_guard);
    let off = RunConfig::from_yaml("seed: 7\n", "run.yaml").unwrap();
    assert!(!off.customer_guard);
    assert!(!RunConfig::default().customer_guard);
}
