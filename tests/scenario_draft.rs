//! `sage scenario draft` against a mock model (issue 23): the model first drafts a scenario
//! with a known defect (a case left uncovered) and repairs it only when the validator's message
//! is in its prompt, so the repair loop is what passes; a model that never repairs stops at the
//! round limit with the last messages; the draft's citations against a small policy.

mod common;

use common::mock::completion;
use common::sage;
use serde_json::Value;
use std::path::{Path, PathBuf};
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer};

const POLICY: &str = "tests/data/draft/policy.md";
const GOOD: &str = include_str!("data/draft/shop_refund.yaml");
/// The validator's message on [`bad`]'s defect.
const MESSAGE: &str = "cases do not cover Intent = Other";

/// The good draft with the `Other` case left out.
fn bad() -> String {
    let bad = GOOD.replace("        Other: {action: Handoff}\n", "");
    assert_ne!(bad, GOOD);
    bad
}

/// A mock model answering the good draft when [`MESSAGE`] is in the request (when
/// `repairs`), the bad one otherwise; and a configuration declaring it.
fn drafter(dir: &Path, repairs: bool) -> (tokio::runtime::Runtime, MockServer, PathBuf) {
    let runtime = common::mock::runtime();
    let server = runtime.block_on(async {
        let server = MockServer::start().await;
        let chat = || Mock::given(method("POST")).and(path("/v1/chat/completions"));
        if repairs {
            chat()
                .and(body_string_contains(MESSAGE))
                .respond_with(completion(&format!("Here it is:\n```yaml\n{GOOD}```\n")))
                .with_priority(1)
                .mount(&server)
                .await;
        }
        chat()
            .respond_with(completion(&bad()))
            .with_priority(2)
            .mount(&server)
            .await;
        server
    });
    let config = dir.join("run.yaml");
    std::fs::write(
        &config,
        format!(
            "models:\n  - {{name: drafter, provider: openai, base_url: '{}/v1', model: m, price: {{input_per_million: 1000, output_per_million: 1000}}, retries: {{max_attempts: 1}}}}\n",
            server.uri()
        ),
    )
    .expect("config");
    (runtime, server, config)
}

fn run_draft(config: &Path, out: &Path, rounds: &str) -> std::process::Output {
    sage(&[
        "scenario",
        "draft",
        POLICY,
        "--model",
        "drafter",
        "--config",
        &config.display().to_string(),
        "--out",
        &out.display().to_string(),
        "--rounds",
        rounds,
    ])
}

#[test]
fn the_validators_message_drives_the_repair_and_every_round_is_logged() {
    let dir = tempfile::tempdir().expect("dir");
    let (runtime, server, config) = drafter(dir.path(), true);
    let out = dir.path().join("shop.yaml");
    let o = run_draft(&config, &out, "4");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        runtime
            .block_on(server.received_requests())
            .expect("requests")
            .len(),
        2
    );
    assert_eq!(
        std::fs::read_to_string(&out).expect("written").trim(),
        GOOD.trim()
    );
    assert!(
        text.starts_with("2 rounds with drafter ($0.2400)"),
        "{text}"
    );
    assert!(text.contains("shop_refund: 4 routes"), "{text}");
    // Rounds: the defective draft with the validator's message, then the repair.
    let log: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("shop.draft.json")).expect("log"),
    )
    .expect("json");
    assert_eq!(log["validated"], true);
    let rounds = log["rounds"].as_array().expect("rounds");
    assert_eq!(rounds.len(), 2);
    assert!(
        rounds[0]["errors"][0]
            .as_str()
            .expect("message")
            .contains(MESSAGE)
    );
    assert!(!rounds[0]["request"].as_str().unwrap().contains(MESSAGE));
    assert!(rounds[1]["request"].as_str().unwrap().contains(MESSAGE));
    assert_eq!(rounds[1]["errors"], serde_json::json!([]));
    // Citations: one policy sentence nothing cites, the stages and actions without a source.
    assert!(
        text.contains("1 policy sentences nothing cites (not covered):\n  Keep a record of every refund in the ledger.\n"),
        "{text}"
    );
    assert!(
        text.contains("2 parts that cite nothing:\n  stage mood\n  action Decline\n"),
        "{text}"
    );
}

#[test]
fn a_draft_that_never_validates_stops_at_the_round_limit_with_the_last_messages() {
    let dir = tempfile::tempdir().expect("dir");
    let (runtime, server, config) = drafter(dir.path(), false);
    let out = dir.path().join("shop.yaml");
    let o = run_draft(&config, &out, "3");
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert_eq!(
        runtime
            .block_on(server.received_requests())
            .expect("requests")
            .len(),
        3
    );
    assert!(
        !out.exists(),
        "an invalid draft is not written as the scenario"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("shop.rejected.yaml"))
            .expect("kept")
            .trim(),
        bad().trim()
    );
    assert!(text.contains("no draft validated"), "{text}");
    assert!(text.contains(MESSAGE), "{text}");
}

#[test]
fn a_policy_too_large_is_refused_before_it_is_read_whole() {
    let dir = tempfile::tempdir().expect("dir");
    let policy = dir.path().join("huge.md");
    std::fs::write(&policy, "Refund every order. ".repeat(30_000)).expect("policy");
    let o = sage(&[
        "scenario",
        "draft",
        &policy.display().to_string(),
        "--model",
        "drafter",
        "--config",
        "no-such.yaml",
        "--out",
        &dir.path().join("x.yaml").display().to_string(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        stderr.contains("huge.md: larger than 400000 bytes"),
        "{stderr}"
    );
}
