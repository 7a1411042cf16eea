//! `sage scenario draft` against a mock model (issue 23): in three steps (keys, stages, routes),
//! each answer held to its schema; the model first drafts routes with a known defect (a case
//! left uncovered) and repairs them only when the validator's message is in its prompt, so the
//! repair loop is what passes; a model that never repairs stops at the round limit with the last
//! messages; the draft's citations against a small policy; the worked example (the Telecom
//! policy drafted back, compared with the hand-written scenario, and run).

mod common;

use common::browser::{Browser, assert_offline, screenshot_dir};
use common::mock::completion;
use common::{sage, sage_ok};
use serde_json::Value;
use std::path::{Path, PathBuf};
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer};

const POLICY: &str = "tests/data/draft/policy.md";
const GOOD_FILE: &str = "tests/data/draft/shop_refund.yaml";
const GOOD: &str = include_str!("data/draft/shop_refund.yaml");
/// The validator's message on the defect of [`bad`].
const MESSAGE: &str = "cases do not cover Intent = Other";

/// `text` with the `Other` case left out.
fn bad(text: &str) -> String {
    let bad = text.replace("        Other: {action: Handoff}\n", "");
    assert_ne!(bad, text);
    bad
}

/// The good draft's parts as the three steps answer them: the keys, the stages outlined (no way
/// on), the routes (`sop` whole and `user`).
fn shop_steps() -> [String; 3] {
    let (keys, rest) = GOOD.split_once("sop:\n").expect("sop");
    let stages = "sop:\n  start: intent\n  stages:\n    intent: {title: What the customer wants, branch_on: Intent, source: [\"First find out what the customer wants.\"]}\n    window: {title: Return window, branch_on: InWindow, source: []}\n    mood: {title: Emotion, branch_on: Emotion, source: []}\n";
    [
        keys.to_string(),
        stages.to_string(),
        format!("sop:\n{rest}"),
    ]
}

/// What a mock model answers: requests whose body holds every one of `when` get `answer`
/// (first match in this order wins).
struct Answer {
    when: Vec<&'static str>,
    answer: String,
}

fn answer(when: &[&'static str], answer: impl Into<String>) -> Answer {
    Answer {
        when: when.to_vec(),
        answer: answer.into(),
    }
}

/// A mock model giving `answers`, and a configuration declaring it as `drafter`.
fn drafter(dir: &Path, answers: Vec<Answer>) -> (tokio::runtime::Runtime, MockServer, PathBuf) {
    let runtime = common::mock::runtime();
    let server = runtime.block_on(async {
        let server = MockServer::start().await;
        for (i, a) in answers.into_iter().enumerate() {
            let mut mock = Mock::given(method("POST")).and(path("/v1/chat/completions"));
            for w in a.when {
                mock = mock.and(body_string_contains(w));
            }
            mock.respond_with(completion(&format!(
                "Here it is:\n```yaml\n{}```\n",
                a.answer
            )))
            .with_priority(u8::try_from(i + 1).expect("few answers"))
            .mount(&server)
            .await;
        }
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

/// A mock that drafts the shop in steps; its routes come with the `Other` case left out, and
/// are repaired only when the validator's message is in the request (when `repairs`).
fn shop_drafter(dir: &Path, repairs: bool) -> (tokio::runtime::Runtime, MockServer, PathBuf) {
    let [keys, stages, routes] = shop_steps();
    let mut answers = vec![
        answer(&["Step 1 of 3"], keys),
        answer(&["Step 2 of 3"], stages),
    ];
    if repairs {
        answers.push(answer(&["Step 3 of 3", MESSAGE], routes.clone()));
    }
    answers.push(answer(&["Step 3 of 3"], bad(&routes)));
    drafter(dir, answers)
}

fn run_draft(policy: &str, config: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    let (config, out) = (config.display().to_string(), out.display().to_string());
    let mut args = vec![
        "scenario", "draft", policy, "--model", "drafter", "--config", &config, "--out", &out,
    ];
    args.extend_from_slice(extra);
    sage(&args)
}

fn requests(runtime: &tokio::runtime::Runtime, server: &MockServer) -> Vec<Value> {
    runtime
        .block_on(server.received_requests())
        .expect("requests")
        .iter()
        .map(|r| serde_json::from_slice(&r.body).expect("json body"))
        .collect()
}

fn log_of(file: PathBuf) -> Value {
    serde_json::from_str(&std::fs::read_to_string(file).expect("log")).expect("json")
}

#[test]
fn drafting_goes_step_by_step_and_the_validators_message_drives_the_repair() {
    let dir = tempfile::tempdir().expect("dir");
    let (runtime, server, config) = shop_drafter(dir.path(), true);
    let out = dir.path().join("shop.yaml");
    let o = run_draft(POLICY, &config, &out, &["--rounds", "4"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        text.starts_with("4 rounds (keys 1, stages 1, routes 2) with drafter ($0.4800)"),
        "{text}"
    );
    assert!(text.contains("shop_refund: 4 routes"), "{text}");
    // Each step's answer is held to its part of the scenario's JSON Schema.
    let sent = requests(&runtime, &server);
    assert_eq!(sent.len(), 4);
    let properties = |i: usize| -> Vec<String> {
        let schema = &sent[i]["response_format"]["schema"]["properties"];
        schema
            .as_object()
            .expect("a schema")
            .keys()
            .cloned()
            .collect()
    };
    assert_eq!(
        properties(0),
        [
            "actions",
            "description",
            "domain",
            "fields",
            "id",
            "name",
            "variables"
        ]
    );
    assert_eq!(properties(1), ["sop"]);
    assert_eq!(properties(3), ["sop", "user"]);
    // A later step sees the parts drafted before it.
    let stages_request = sent[1]["messages"][1]["content"].as_str().expect("text");
    assert!(
        stages_request.contains("The scenario so far:\n```yaml\nid: shop_refund\n"),
        "{stages_request}"
    );
    // The written draft routes every assignment as the good one.
    let same = sage(&["scenario", "diff", GOOD_FILE, &out.display().to_string()]);
    assert!(
        same.status.success(),
        "{}",
        String::from_utf8_lossy(&same.stdout)
    );
    // Rounds: the defective routes with the validator's message, then the repair.
    let log = log_of(dir.path().join("shop.draft.json"));
    assert_eq!(log["validated"], true);
    let rounds = log["rounds"].as_array().expect("rounds");
    let steps: Vec<&str> = rounds.iter().map(|r| r["step"].as_str().unwrap()).collect();
    assert_eq!(steps, ["keys", "stages", "routes", "routes"]);
    assert!(
        rounds[2]["errors"][0]
            .as_str()
            .expect("message")
            .contains(MESSAGE)
    );
    assert!(!rounds[2]["request"].as_str().unwrap().contains(MESSAGE));
    assert!(rounds[3]["request"].as_str().unwrap().contains(MESSAGE));
    assert_eq!(rounds[3]["errors"], serde_json::json!([]));
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
fn a_one_shot_draft_is_repaired_whole() {
    let dir = tempfile::tempdir().expect("dir");
    let (runtime, server, config) = drafter(
        dir.path(),
        vec![
            answer(&["Write the whole scenario", MESSAGE], GOOD),
            answer(&["Write the whole scenario"], bad(GOOD)),
        ],
    );
    let out = dir.path().join("shop.yaml");
    let o = run_draft(POLICY, &config, &out, &["--one-shot"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{text}");
    assert!(
        text.starts_with("2 rounds (whole 2) with drafter"),
        "{text}"
    );
    assert_eq!(requests(&runtime, &server).len(), 2);
    let same = sage(&["scenario", "diff", GOOD_FILE, &out.display().to_string()]);
    assert!(same.status.success());
}

#[test]
fn a_step_that_never_validates_stops_at_the_round_limit_with_the_last_messages() {
    let dir = tempfile::tempdir().expect("dir");
    let (runtime, server, config) = shop_drafter(dir.path(), false);
    let out = dir.path().join("shop.yaml");
    let o = run_draft(POLICY, &config, &out, &["--rounds", "3"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{text}");
    // One round for the keys, one for the stages, three for the routes.
    assert_eq!(requests(&runtime, &server).len(), 5);
    assert!(
        !out.exists(),
        "an invalid draft is not written as the scenario"
    );
    let rejected = std::fs::read_to_string(dir.path().join("shop.rejected.yaml")).expect("kept");
    assert!(
        rejected.contains("Calm:") && !rejected.contains("Other:"),
        "{rejected}"
    );
    assert!(text.contains("no draft validated"), "{text}");
    assert!(text.contains("step routes did not validate"), "{text}");
    assert!(text.contains(MESSAGE), "{text}");
}

#[test]
fn the_cost_budget_stops_the_drafting_between_rounds() {
    let dir = tempfile::tempdir().expect("dir");
    let (runtime, server, config) = shop_drafter(dir.path(), true);
    let out = dir.path().join("shop.yaml");
    // Each call costs $0.12: the keys and the stages are drafted, the routes are not.
    let o = run_draft(POLICY, &config, &out, &["--max-cost-usd", "0.2"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert_eq!(requests(&runtime, &server).len(), 2);
    assert!(
        text.starts_with("2 rounds (keys 1, stages 1, routes 0)"),
        "{text}"
    );
    assert!(text.contains("stopped: --max-cost-usd 0.2 spent"), "{text}");
    assert_eq!(
        log_of(dir.path().join("shop.draft.json"))["budget_spent"],
        true
    );
}

/// Drafts the worked example into `dir/telecom.yaml` with a mock answering the three steps from
/// tests/data/draft/telecom/; the scenario's path and what the command printed.
fn draft_telecom(dir: &Path) -> (PathBuf, String) {
    let part = |name: &str| {
        std::fs::read_to_string(format!("tests/data/draft/telecom/{name}.yaml")).expect("part")
    };
    let (_runtime, _server, config) = drafter(
        dir,
        vec![
            answer(&["Step 1 of 3"], part("keys")),
            answer(&["Step 2 of 3"], part("stages")),
            answer(&["Step 3 of 3"], part("routes")),
        ],
    );
    let out = dir.join("telecom.yaml");
    let o = run_draft("docs/examples/telecom-policy.md", &config, &out, &[]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    (out, text)
}

/// The review page as a person reads it in a real browser: the verdict first, the graph with
/// every stage and action, each part with the sentences it cites (numbered as in the policy),
/// the citations in the graph's tooltips; offline.
#[test]
fn the_review_page_reads_in_a_browser() {
    let dir = tempfile::tempdir().expect("dir");
    let (out, _) = draft_telecom(dir.path());
    let page = out.with_extension("html");
    let browser = Browser::launch();
    let tab = browser.open(&page, true).expect("open the review page");
    assert_offline(&tab, &page);
    let text = |js: &str| tab.eval(js).expect("eval");
    assert_eq!(
        text(
            "[...document.querySelectorAll('main h2, section > h2')].map(h => h.textContent).join('|')"
        ),
        "Draft|Decision graph|Citations|Not covered|Rounds"
    );
    let verdict = text("document.querySelector('#draft p').innerText");
    assert!(
        verdict
            .as_str()
            .expect("text")
            .starts_with("telecom_package: 12 routes, drafted by drafter in 3 rounds"),
        "{verdict}"
    );
    // Seven stages and three actions drawn, each visible in the viewport's width.
    assert_eq!(
        text("document.querySelectorAll('#graph svg g[data-stage]').length"),
        7
    );
    assert_eq!(
        text("document.querySelectorAll('#graph svg g[data-action]').length"),
        3
    );
    // Nothing has run on a draft: no statistics line ("untested") is shown.
    assert_eq!(
        text(
            "[...document.querySelectorAll('#graph text.stat')].every(t => getComputedStyle(t).display === 'none')"
        ),
        true
    );
    let tooltip =
        text("document.querySelector('#graph g[data-stage=\"step7\"] > title').textContent");
    assert!(
        tooltip
            .as_str()
            .expect("title")
            .contains("cites: “When a penalty applies, look at how the customer feels about it.”"),
        "{tooltip}"
    );
    // The citations table: stage step5 cites sentences 11 and 12 of the policy, nothing uncited.
    let step5 = text(
        "[...document.querySelectorAll('#citations tbody tr')].find(r => r.cells[0].innerText.startsWith('stage step5')).cells[1].innerText",
    );
    let step5 = step5.as_str().expect("cell");
    assert!(step5.starts_with("#11 A plan under contract"), "{step5}");
    assert!(
        step5.contains("#12 A cancellation always starts"),
        "{step5}"
    );
    assert_eq!(
        text("document.querySelectorAll('#citations tr.uncited').length"),
        0
    );
    assert_eq!(
        text(
            "document.querySelector('#uncovered').innerText.includes('Every policy sentence is cited.')"
        ),
        true
    );
    tab.screenshot(&screenshot_dir().join("draft-review.png"), None)
        .expect("screenshot");
}

/// The worked example (docs/scenario-format.md): the Telecom policy as prose, drafted back in
/// three steps by a mock standing in for a capable model (its answers are
/// tests/data/draft/telecom/), compared route by route with the hand-written scenario, and run.
#[test]
fn the_telecom_policy_drafted_back_routes_as_the_hand_written_scenario_and_runs() {
    let dir = tempfile::tempdir().expect("dir");
    let (out, text) = draft_telecom(dir.path());
    assert!(text.contains("telecom_package: 12 routes"), "{text}");
    assert!(
        !text.contains("not covered") && !text.contains("cite nothing"),
        "{text}"
    );
    let draft = out.display().to_string();
    let diff = sage_ok(&["scenario", "diff", "scenarios/telecom_package.yaml", &draft]);
    assert!(diff.contains("every assignment is routed alike"), "{diff}");
    // A run of the drafted scenario, embedded, with the simulated models.
    let run = dir.path().join("run.yaml");
    std::fs::write(
        &run,
        format!("scenarios: ['{draft}']\ndialogues_per_scenario: 4\nmin_per_route: 1\nservice_models: [sim-strong]\n"),
    )
    .expect("run config");
    let results = dir.path().join("results");
    sage_ok(&[
        "run",
        "--config",
        &run.display().to_string(),
        "--out",
        &results.display().to_string(),
        "--run-id",
        "drafted",
        "--quiet",
    ]);
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(results.join("drafted/summary.json")).expect("summary"),
    )
    .expect("json");
    // Every route of the draft played (min_per_route: 1), by the drafted scenario's hash.
    assert_eq!(summary["dialogues"], 12);
    let coverage = summary["coverage"]["telecom_package"]
        .as_object()
        .expect("coverage");
    assert_eq!(coverage.len(), 12, "{coverage:?}");
    assert!(summary["scenario_sha256"]["telecom_package"].is_string());
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

/// `sage scenario schema`: the format's JSON Schema, which every bundled scenario matches (checked
/// with the jsonschema crate in sage-core) and a drafted answer is held to.
#[test]
fn the_scenario_schema_is_printed_for_editors() {
    let text = sage_ok(&["scenario", "schema"]);
    let schema: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    let properties = schema["properties"].as_object().expect("properties");
    assert!(properties.contains_key("sop") && properties.contains_key("user"));
    assert_eq!(
        schema["properties"]["sop"]["properties"]["stages"]["additionalProperties"]["required"],
        serde_json::json!(["title"])
    );
}
