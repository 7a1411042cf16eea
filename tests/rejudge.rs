//! `sage rejudge`: a stored run's dialogues judged again by a new panel behind a mock
//! OpenAI-compatible server: only judge calls are made, exactly on the turns judged, the
//! records carry the new panel, a second invocation resumes (no call), and a budget stops it
//! (issue 22).

mod common;

use common::mock::{JUDGE_ANSWER, completion};
use common::{sage, sage_ok};
use serde_json::{Value, json};
use std::path::Path;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

/// `sage rejudge BASE --config CONFIG --out OUT`, which must succeed (or fail, `succeed` false):
/// its standard output and error.
fn rejudge(base: &Path, config: &str, out: &Path, succeed: bool) -> (String, String) {
    let o = sage(&[
        "rejudge",
        &base.display().to_string(),
        "--config",
        config,
        "--out",
        &out.display().to_string(),
    ]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert_eq!(o.status.success(), succeed, "{stdout}{stderr}");
    (stdout, stderr)
}

/// The judged turns of a run's records (turns with a panel).
fn judged(records: &[Value]) -> usize {
    records
        .iter()
        .flat_map(|r| r["turns"].as_array().expect("turns"))
        .filter(|t| !t["judges"].is_null())
        .count()
}

/// A panel of `names`, each an OpenAI-compatible judge at `base_url` billed
/// $1000 per million tokens, and `extra` lines.
fn panel(dir: &Path, file: &str, base_url: &str, names: &[&str], extra: &str) -> String {
    let models: String = names
        .iter()
        .map(|n| format!("  - {{name: {n}, provider: openai, base_url: '{base_url}', model: mock-model, price: {{input_per_million: 1000, output_per_million: 1000}}, retries: {{max_attempts: 2, base_delay_ms: 10, max_delay_ms: 10}}}}\n"))
        .collect();
    let path = dir.join(file);
    std::fs::write(
        &path,
        format!(
            "models:\n{models}judge_models: [{}]\n{extra}",
            names.join(", ")
        ),
    )
    .expect("panel");
    path.display().to_string()
}

#[test]
fn rejudge_calls_only_the_new_judges_on_the_judged_turns_resumes_and_keeps_to_its_budget() {
    let dir = tempfile::tempdir().expect("dir");
    let telecom = std::fs::canonicalize("scenarios/telecom_package.yaml").expect("scenario");
    let config = dir.path().join("run.yaml");
    std::fs::write(
        &config,
        format!(
            "models:
  - {{name: sim-strong, provider: simulated, sim: {{kind: agent, profile: strong}}}}
  - {{name: sim-user, provider: simulated, sim: {{kind: user}}}}
  - {{name: sim-judge-1, provider: simulated, sim: {{kind: judge}}}}
  - {{name: sim-judge-2, provider: simulated, sim: {{kind: judge, noise: 0.03}}}}
  - {{name: sim-judge-3, provider: simulated, sim: {{kind: judge, noise: 0.06}}}}
service_models: [sim-strong]
user_model: sim-user
judge_models: [sim-judge-1, sim-judge-2, sim-judge-3]
scenarios: ['{}']
dialogues_per_scenario: 6
min_per_route: 0
max_turns: 6
seed: 5
",
            telecom.display()
        ),
    )
    .expect("config");
    let out = dir.path().display().to_string();
    sage_ok(&[
        "run",
        "--quiet",
        "--config",
        &config.display().to_string(),
        "--out",
        &out,
        "--run-id",
        "base",
    ]);
    let base = dir.path().join("base");
    let stored = common::records_json(&base);
    let turns = judged(&stored);
    assert!(turns >= stored.len(), "{turns} judged turns");

    let runtime = common::mock::runtime();
    let server = runtime.block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(completion(JUDGE_ANSWER))
            .mount(&server)
            .await;
        server
    });
    let received = || {
        runtime
            .block_on(server.received_requests())
            .expect("recorded")
    };
    let base_url = format!("{}/v1", server.uri());
    let judges = ["mock-a", "mock-b", "mock-c"];
    let file = panel(dir.path(), "judges.yaml", &base_url, &judges, "");
    let new = dir.path().join("new");
    let printed = rejudge(&base, &file, &new, true).0;

    // Only judge calls, one per judge per judged turn, each a judge's prompt.
    let requests = received();
    assert_eq!(requests.len(), 3 * turns, "{printed}");
    for r in &requests {
        let body: Value = serde_json::from_slice(&r.body).expect("json");
        let system = body["messages"][0]["content"].as_str().expect("system");
        assert!(
            system.contains("chat_quality_dimensions"),
            "not a judge's prompt: {}",
            &system[..system.len().min(200)]
        );
    }
    assert!(
        printed.contains(&format!("{} dialogues judged again", stored.len())),
        "{printed}"
    );
    // The same dialogues, the same lines, the new panel's verdicts.
    let rejudged = common::records_json(&new);
    assert_eq!(rejudged.len(), stored.len());
    assert_eq!(judged(&rejudged), turns);
    for r in &rejudged {
        let old = stored
            .iter()
            .find(|o| o["job"]["dialogue_id"] == r["job"]["dialogue_id"])
            .expect("the same dialogue");
        assert_eq!(r["job"]["run_id"], "new");
        assert_eq!(r["job"]["judge_models"], json!(judges));
        for (t, o) in r["turns"]
            .as_array()
            .unwrap()
            .iter()
            .zip(old["turns"].as_array().unwrap())
        {
            assert_eq!(t["user_message"], o["user_message"]);
            assert_eq!(t["outcome"], o["outcome"]);
            for call in t["calls"].as_array().unwrap() {
                assert!(
                    !call["model"].as_str().unwrap().starts_with("sim-judge"),
                    "{call}"
                );
            }
            if !t["judges"].is_null() {
                assert_eq!(t["judges"]["consensus"]["ConsumptionType"], "Change");
                assert!(t["scores"].is_object(), "{t}");
            }
        }
    }
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(new.join("summary.json")).expect("summary"))
            .expect("json");
    assert!(
        summary["models"].is_array() || summary["models"].is_object(),
        "{summary}"
    );
    // What the new judges change, beside the stored run.
    let compared = sage_ok(&[
        "report",
        &new.display().to_string(),
        "--compare",
        &base.display().to_string(),
    ]);
    assert!(compared.contains("sim-strong"), "{compared}");

    // Again: everything is kept, no call.
    let again = rejudge(&base, &file, &new, true).0;
    assert_eq!(received().len(), 3 * turns, "{again}");
    assert!(
        again.contains(&format!("{} kept from before", stored.len())),
        "{again}"
    );

    // A budget of about one dialogue's judging, one dialogue at a time: the rest is left for a
    // resume, which judges it without judging the first ones again.
    let tight = panel(
        dir.path(),
        "tight.yaml",
        &base_url,
        &["mock-a"],
        "concurrency: 1\nmax_cost_usd: 0.2\n",
    );
    let budgeted = dir.path().join("budgeted");
    let before = received().len();
    let printed = rejudge(&base, &tight, &budgeted, true).0;
    let first = common::records_json(&budgeted).len();
    assert!(
        first >= 1 && first < stored.len(),
        "{first} judged: {printed}"
    );
    assert!(printed.contains("left unjudged"), "{printed}");
    let loose = panel(
        dir.path(),
        "tight.yaml",
        &base_url,
        &["mock-a"],
        "concurrency: 1\nmax_cost_usd: 100\n",
    );
    rejudge(&base, &loose, &budgeted, true);
    assert_eq!(common::records_json(&budgeted).len(), stored.len());
    assert_eq!(
        received().len() - before,
        turns,
        "each judged turn judged once"
    );

    // Another panel into the same folder is refused, naming both.
    let other = panel(dir.path(), "other.yaml", &base_url, &["mock-z"], "");
    let (_, stderr) = rejudge(&base, &other, &budgeted, false);
    assert!(
        stderr.contains("mock-a") && stderr.contains("mock-z"),
        "{stderr}"
    );
}
