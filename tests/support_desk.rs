//! The support-desk suite: the bundled Northline store and its 162 cases, validation with
//! precise messages, the tools against the fixture, and the whole suite offline with simulated
//! agents: every planted unsafe action is detected, a safe agent scores zero.

mod common;

use sage::desk::{DeskFixture, SupportDesk};
use sage::llm::sim::SimSpec;
use sage::llm::sim::desk::DeskSkills;
use sage::llm::{ModelConfig, Provider};
use sage::plan::desk::DeskConfig;
use sage::protocol::desk::DeskRecord;
use sage::scenario::bundled::NORTHLINE;
use sage::scenario::desk::{Bucket, Desk, Tool, UnsafeKind};
use sage::scoring::desk::{SafetyBand, summarize};
use std::collections::BTreeMap;

fn northline() -> Desk {
    Desk::from_yaml(NORTHLINE.0, NORTHLINE.1, ("store.yaml", "cases.yaml"))
        .unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn northline_has_the_methodology_buckets() {
    let desk = northline();
    let counts = desk.counts();
    assert_eq!(counts[&Bucket::Resolvable], 120);
    assert_eq!(counts[&Bucket::MustEscalate], 24);
    assert_eq!(counts[&Bucket::Adversarial], 18);
    let mut kinds: BTreeMap<UnsafeKind, usize> = BTreeMap::new();
    for c in &desk.cases {
        if let Some(f) = c.forbidden {
            *kinds.entry(f.kind).or_default() += 1;
        }
        assert!(desk.order(&c.order).is_some(), "{}", c.id);
    }
    // Every kind of catastrophic failure is tempted.
    assert_eq!(kinds.len(), 4, "{kinds:?}");
    assert_eq!(kinds.values().sum::<usize>(), 18);
}

fn broken(edit: impl Fn(&mut String, &mut String)) -> String {
    let (mut store, mut cases) = (NORTHLINE.0.to_string(), NORTHLINE.1.to_string());
    edit(&mut store, &mut cases);
    match Desk::from_yaml(&store, &cases, ("store.yaml", "cases.yaml")) {
        Ok(_) => panic!("the edit should break the desk"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn validation_names_the_place_and_what_was_expected() {
    let desk = northline();
    let first = &desk.cases[0];
    // A case about an order the store does not have.
    let e = broken(|_, c| {
        let from = format!("order: \"{}\"", first.order);
        assert!(c.contains(&from), "{from}");
        *c = c.replacen(&from, "order: \"NL-99999\"", 1)
    });
    assert!(
        e.contains(&format!("case {}", first.id))
            && e.contains("NL-99999")
            && e.contains("an order number of store.yaml"),
        "{e}"
    );
    // An unknown key, with its line.
    let e = broken(|s, _| *s = s.replacen("currency:", "curency:", 1));
    assert!(
        e.contains("unknown key `curency`") && e.contains("line "),
        "{e}"
    );
    // A total that is not the sum of its lines.
    let order = &desk.store.orders[0];
    let e = broken(|s, _| {
        let from = format!("total: {}", yaml_number(order.total));
        assert!(s.contains(&from), "{from}");
        *s = s.replacen(&from, "total: 1.5", 1)
    });
    assert!(
        e.contains(&format!("order {}", order.number)) && e.contains("sum of price x quantity"),
        "{e}"
    );
}

fn yaml_number(x: f64) -> String {
    // How the fixture writes money: with two decimals or as an integer.
    let two = format!("{x:.2}");
    if NORTHLINE.0.contains(&format!("total: {two}")) {
        two
    } else {
        format!("{x}")
    }
}

#[test]
fn tools_answer_from_the_fixture_and_change_nothing() {
    let desk = northline();
    let before = desk.store.clone();
    let order = &desk.store.orders[0];
    let args = serde_json::json!({"order_number": order.number});
    let lookup = desk.call(Tool::OrderLookup, &args);
    assert!(lookup.ok);
    assert_eq!(lookup.output["number"], order.number.as_str());
    assert_eq!(
        lookup.output["customer"]["name"],
        order.customer.name.as_str()
    );
    let reship = desk.call(Tool::Reship, &args);
    assert_eq!(reship.output["status"], "recorded");
    assert_eq!(reship.output["action"], "reship");
    // Nothing changed: the store is as before, and the lookup answers as before.
    assert_eq!(desk.store, before);
    assert_eq!(desk.call(Tool::OrderLookup, &args).output, lookup.output);
    let missing = desk.call(
        Tool::CancelOrder,
        &serde_json::json!({"order_number": "NL-00000"}),
    );
    assert!(!missing.ok);
    assert!(!desk.call(Tool::Replace, &serde_json::json!({})).ok);
}

fn sim(name: &str, spec: SimSpec) -> ModelConfig {
    ModelConfig {
        sim: Some(spec),
        ..ModelConfig::new(name, Provider::Simulated)
    }
}

/// A desk configuration with this agent, the simulated customer and two exact judges (the
/// second slightly noisy when `noisy`).
fn config_with(agent: ModelConfig, noisy: bool) -> DeskConfig {
    let judge = |n: &str, noise: f64| {
        sim(
            n,
            SimSpec::DeskJudge {
                noise,
                latency: None,
            },
        )
    };
    let config = DeskConfig {
        agents: vec![agent.name.clone()],
        models: vec![
            agent,
            sim("customer", SimSpec::DeskCustomer { latency: None }),
            judge("judge-1", 0.0),
            judge("judge-2", if noisy { 0.1 } else { 0.0 }),
        ],
        customer_model: "customer".into(),
        judge_models: vec!["judge-1".into(), "judge-2".into()],
        ..DeskConfig::default()
    };
    config.check("test").expect("a valid config");
    config
}

/// Plays every job of `config` over `desk` with the role actors in this process.
fn run_desk(config: &DeskConfig, desk: Desk) -> Vec<DeskRecord> {
    let mut records = Vec::new();
    actix::System::new()
        .block_on(sage::actors::suite::run_embedded::<SupportDesk>(
            config,
            std::sync::Arc::new(DeskFixture::new(desk.clone())),
            sage::plan::desk::jobs(config, "test", &desk),
            |r| records.push(r),
        ))
        .expect("the run");
    records
}

/// Plays one run of `case` alone with `agent`.
fn play_one(agent: ModelConfig, case: &sage::scenario::desk::Case) -> DeskRecord {
    let mut desk = northline();
    desk.cases.retain(|c| c.id == case.id);
    let config = DeskConfig {
        repeats: 1,
        ..config_with(agent, false)
    };
    let mut records = run_desk(&config, desk);
    assert_eq!(records.len(), 1);
    records.pop().expect("a record")
}

fn suite(agent: DeskSkills) -> sage::scoring::desk::ModelRow {
    let agent = sim(
        "agent",
        SimSpec::DeskAgent {
            skills: agent,
            latency: None,
        },
    );
    let config = DeskConfig {
        repeats: 2,
        ..config_with(agent, true)
    };
    let records = run_desk(&config, northline());
    assert_eq!(records.len(), 162 * 2);
    assert!(records.iter().all(|r| r.infra_error.is_none()));
    let rows = summarize(
        records
            .iter()
            .map(|r| (r.job.model.as_str(), r.job.repeat, &r.run, r.cost_usd)),
    );
    assert_eq!(rows.len(), 1);
    rows.into_iter().next().expect("a row")
}

#[test]
fn every_planted_unsafe_action_is_detected() {
    let reckless = DeskSkills {
        unsafe_propensity: 1.0,
        ..DeskSkills::default()
    };
    let row = suite(reckless);
    assert_eq!(row.unsafe_actions, 18.0);
    assert_eq!(row.safety_band, SafetyBand::Reckless);
    let desk = northline();
    for kind in UnsafeKind::ALL {
        let planted = desk
            .cases
            .iter()
            .filter(|c| c.forbidden.is_some_and(|f| f.kind == kind))
            .count();
        assert_eq!(
            row.unsafe_by_kind[kind.name()],
            planted as f64,
            "{}",
            kind.name()
        );
    }
    // The oracle judges see it: no policy adherence on the traps that fired.
    assert!(row.policy_adherence.expect("judged") < 1.0);
}

#[test]
fn a_safe_agent_scores_zero() {
    let safe = DeskSkills {
        unsafe_propensity: 0.0,
        premature_close: 0.0,
        over_escalation: 0.0,
        resolve: 1.0,
        escalate: 1.0,
    };
    let row = suite(safe);
    assert_eq!(row.unsafe_actions, 0.0);
    assert_eq!(row.safety_band, SafetyBand::Safe);
    assert_eq!(row.false_closures, 0.0);
    assert_eq!(row.escalation_accuracy, 1.0);
    assert_eq!(row.over_escalation, 0.0);
    assert_eq!(row.resolution_rate, 1.0);
    assert_eq!(row.resolution_quality, Some(1.0));
    // The second judge (noise 0.1) is close to the first.
    let d = row.judge_disagreement.expect("both judged");
    assert!(
        d.policy_adherence <= 0.1 && d.resolution_quality <= 0.1,
        "{d:?}"
    );
}

#[test]
fn the_command_prints_one_row_per_model_and_keeps_every_conversation() {
    let dir = tempfile::tempdir().expect("dir");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_sage"))
        .args([
            "run",
            "--suite",
            "support-desk",
            "--repeats",
            "1",
            "--quiet",
        ])
        .args(["--run-id", "desk", "--out"])
        .arg(dir.path())
        .output()
        .expect("sage runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8_lossy(&out.stdout);
    for model in ["sim-desk-careful", "sim-desk-cautious", "sim-desk-reckless"] {
        assert!(table.contains(model), "{table}");
    }
    assert!(
        table.contains("Unsafe") && table.contains("Esc.acc"),
        "{table}"
    );
    let folder = dir.path().join("desk");
    let lines = std::fs::read_to_string(folder.join("desk.jsonl")).expect("desk.jsonl");
    assert_eq!(lines.lines().count(), 162 * 3);
    let rows: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("desk-summary.json")).expect("summary"),
    )
    .expect("JSON");
    assert_eq!(rows.as_array().map(Vec::len), Some(3));
    // The reckless agent takes more unsafe actions than the careful one.
    let unsafe_of = |name: &str| {
        rows.as_array()
            .and_then(|r| r.iter().find(|row| row["model"] == name))
            .and_then(|row| row["unsafe_actions"].as_f64())
            .expect("a row")
    };
    assert!(unsafe_of("sim-desk-reckless") > unsafe_of("sim-desk-careful") + 3.0);

    // A run cut short (a killed process: its last line cut off) resumes: the conversations
    // stored are kept, the rest are played, none twice, and the summary is the same.
    let summary = std::fs::read_to_string(folder.join("desk-summary.json")).expect("summary");
    let kept: String = lines.lines().take(200).map(|l| format!("{l}\n")).collect();
    let cut = &lines.lines().nth(200).expect("a line")[..100];
    std::fs::write(folder.join("desk.jsonl"), format!("{kept}{cut}")).expect("cut short");
    std::fs::remove_file(folder.join("desk-summary.json")).expect("summary removed");
    let resumed = std::process::Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(["run", "--suite", "support-desk", "--quiet", "--resume"])
        .arg(&folder)
        .output()
        .expect("sage runs");
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    assert!(String::from_utf8_lossy(&resumed.stderr).contains("(286 to play)"));
    let lines = std::fs::read_to_string(folder.join("desk.jsonl")).expect("desk.jsonl");
    let ids: std::collections::BTreeSet<String> = lines
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a whole record");
            v["job"]["dialogue_id"].as_str().expect("an id").to_string()
        })
        .collect();
    assert_eq!((lines.lines().count(), ids.len()), (162 * 3, 162 * 3));
    assert_eq!(
        std::fs::read_to_string(folder.join("desk-summary.json")).expect("summary"),
        summary
    );
    // --dialogues does not apply to this suite, and says so.
    let refused = std::process::Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(["run", "--suite", "support-desk", "--dialogues", "3"])
        .output()
        .expect("sage runs");
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("support-desk"));
}

/// The terminal table ranks the agents as the SAGE leaderboard ranks by OA: fewest unsafe
/// actions first (ties by name), here the opposite of their names' order.
#[test]
fn the_table_ranks_the_agents_by_unsafe_actions() {
    let dir = tempfile::tempdir().expect("dir");
    let config = dir.path().join("desk.yaml");
    std::fs::write(
        &config,
        r#"
models:
  - {name: a-reckless, provider: simulated, sim: {kind: desk_agent, skills: {unsafe_propensity: 0.15, resolve: 0.9, over_escalation: 0.0}}}
  - {name: z-careful, provider: simulated, sim: {kind: desk_agent, skills: {unsafe_propensity: 0.0}}}
  - {name: sim-customer, provider: simulated, sim: {kind: desk_customer}}
  - {name: judge-1, provider: simulated, sim: {kind: desk_judge}}
  - {name: judge-2, provider: simulated, sim: {kind: desk_judge, noise: 0.05}}
agents: [a-reckless, z-careful]
judge_models: [judge-1, judge-2]
repeats: 1
"#,
    )
    .expect("config");
    let table = common::sage_ok(&[
        "run",
        "--suite",
        "support-desk",
        "--quiet",
        "--run-id",
        "ranked",
        "--config",
        config.to_str().unwrap(),
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let printed: Vec<&str> = table
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| ["a-reckless", "z-careful"].contains(w))
        .collect();
    assert_eq!(printed, ["z-careful", "a-reckless"], "{table}");
    let saved = std::fs::read_to_string(dir.path().join("ranked/desk-leaderboard.txt"))
        .expect("desk-leaderboard.txt");
    assert!(
        saved.find("z-careful") < saved.find("a-reckless"),
        "{saved}"
    );
}

/// A run over a store folder keeps the SHA-256 of its two files: it resumes while they are the
/// same, and is refused, naming its manifest, once one of them changed (its jobs would be
/// another store's).
#[test]
fn a_run_resumes_only_with_the_store_it_started_with() {
    let dir = tempfile::tempdir().expect("dir");
    let store = dir.path().join("store");
    std::fs::create_dir(&store).expect("store folder");
    std::fs::write(store.join("store.yaml"), NORTHLINE.0).expect("store.yaml");
    std::fs::write(store.join("cases.yaml"), NORTHLINE.1).expect("cases.yaml");
    let config = dir.path().join("desk.yaml");
    std::fs::write(&config, format!("store: {}\nrepeats: 1\n", store.display())).expect("config");
    common::sage_ok(&[
        "run",
        "--suite",
        "support-desk",
        "--quiet",
        "--run-id",
        "kept",
        "--config",
        config.to_str().unwrap(),
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    let folder = dir.path().join("kept");
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("manifest.json")).expect("manifest"),
    )
    .expect("JSON");
    let sha = |text: &str| {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(text.as_bytes()))
    };
    assert_eq!(
        manifest["inputs_sha256"],
        serde_json::json!([sha(NORTHLINE.0), sha(NORTHLINE.1)])
    );
    let resume = ["run", "--suite", "support-desk", "--quiet", "--resume"];
    let again = common::sage(&[&resume[..], &[folder.to_str().unwrap()]].concat());
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(String::from_utf8_lossy(&again.stderr).contains("(0 to play)"));
    let mut cases = NORTHLINE.1.to_string();
    cases.push_str("# edited\n");
    std::fs::write(store.join("cases.yaml"), cases).expect("cases.yaml");
    let refused = common::sage(&[&resume[..], &[folder.to_str().unwrap()]].concat());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        err.contains("run kept")
            && err.contains("changed since it started")
            && err.contains(&folder.join("manifest.json").display().to_string()),
        "{err}"
    );
}

/// An OpenAI-compatible agent (a mock server) that looks the order up, then gives in on a
/// free-goods trap: its forbidden call, made through real function calling, is caught.
#[test]
fn a_real_backend_agent_is_read_from_its_tool_calls() {
    use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};
    let _ = rustls::crypto::ring::default_provider().install_default();
    struct Scripted(&'static str);
    impl Respond for Scripted {
        fn respond(&self, request: &Request) -> ResponseTemplate {
            let body: serde_json::Value = serde_json::from_slice(&request.body).expect("JSON");
            let messages = body["messages"].as_array().expect("messages");
            assert_eq!(body["tools"].as_array().map(Vec::len), Some(7));
            let tools_answered = messages.iter().filter(|m| m["role"] == "tool").count();
            let order = messages[1]["content"]
                .as_str()
                .and_then(|t| t.split_whitespace().find(|w| w.starts_with("NL-1")))
                .map(|w| w.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '-'))
                .expect("the email names its order")
                .to_string();
            let call = |name: &str| {
                serde_json::json!({"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                    "role": "assistant", "content": null, "tool_calls": [{"id": format!("c{tools_answered}"),
                    "type": "function", "function": {"name": name,
                    "arguments": serde_json::json!({"order_number": order}).to_string()}}]}}]})
            };
            let reply = match tools_answered {
                0 => call("order_lookup"),
                1 => call(self.0),
                _ => serde_json::json!({"choices": [{"index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "Done: a new one is on its way."}}]}),
            };
            ResponseTemplate::new(200).set_body_json(reply)
        }
    }
    let desk = northline();
    let trap = desk
        .cases
        .iter()
        .find(|c| c.forbidden.is_some_and(|f| f.kind == UnsafeKind::FreeGoods))
        .expect("a free-goods trap")
        .clone();
    let forbidden = trap.forbidden.expect("forbidden").tool;
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    let server = rt.block_on(async {
        let server = MockServer::start().await;
        Mock::given(wiremock::matchers::method("POST"))
            .respond_with(Scripted(forbidden.name()))
            .mount(&server)
            .await;
        server
    });
    let mut agent = ModelConfig::new("mock-agent", Provider::Openai);
    agent.base_url = Some(format!("{}/v1", server.uri()));
    let DeskRecord {
        run,
        transcript,
        calls,
        infra_error,
        ..
    } = play_one(agent, &trap);
    assert_eq!(infra_error, None);
    let v = sage::scoring::desk::verdict(&run);
    assert_eq!(v.unsafe_action, Some(UnsafeKind::FreeGoods));
    assert_eq!(run.calls[0].tool, Tool::OrderLookup);
    assert_eq!(run.calls[1].tool, forbidden);
    assert_eq!(run.calls[1].order.as_deref(), Some(trap.order.as_str()));
    let prefix = format!("{}(", forbidden.name());
    assert!(
        transcript
            .iter()
            .any(|l| l.speaker == "tool" && l.text.starts_with(&prefix))
    );
    // Three agent calls (two tool rounds and the answer), the customer, two judges.
    assert!(calls.iter().filter(|c| c.model == "mock-agent").count() >= 3);
    assert!(run.judged.is_some() && run.rejudged.is_some());
}

#[test]
fn scenario_validate_checks_a_desk_folder() {
    let sage = |dir: &std::path::Path| {
        std::process::Command::new(env!("CARGO_BIN_EXE_sage"))
            .args(["scenario", "validate"])
            .arg(dir)
            .output()
            .expect("sage runs")
    };
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join("store.yaml"), NORTHLINE.0).expect("store");
    std::fs::write(dir.path().join("cases.yaml"), NORTHLINE.1).expect("cases");
    let ok = sage(dir.path());
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(
        String::from_utf8_lossy(&ok.stdout)
            .contains("120 Resolvable, 24 MustEscalate, 18 Adversarial")
    );
    let first = &northline().cases[0];
    let from = format!("order: \"{}\"", first.order);
    std::fs::write(
        dir.path().join("cases.yaml"),
        NORTHLINE.1.replacen(&from, "order: \"NL-00000\"", 1),
    )
    .expect("cases");
    let bad = sage(dir.path());
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("cases.yaml")
            && err.contains(&format!("case {}", first.id))
            && err.contains("NL-00000"),
        "{err}"
    );
}

/// An agent that cannot be reached (HTTP 500 after the endpoint's retries): the conversation
/// stops with an infrastructure error, distinct from anything the agent did.
#[test]
fn an_unreachable_agent_is_an_infrastructure_error() {
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    let server = rt.block_on(async {
        let server = MockServer::start().await;
        Mock::given(wiremock::matchers::method("POST"))
            .respond_with(ResponseTemplate::new(500).set_body_string("down"))
            .mount(&server)
            .await;
        server
    });
    let mut agent = ModelConfig::new("down-agent", Provider::Openai);
    agent.base_url = Some(format!("{}/v1", server.uri()));
    agent.retries.max_attempts = 2;
    agent.retries.base_delay_ms = 1;
    let record = play_one(agent, &northline().cases[0]);
    let (run, calls) = (&record.run, &record.calls);
    let infra = record.infra_error.clone().expect("an infrastructure error");
    assert!(
        infra.contains("down-agent") && infra.contains("500"),
        "{infra}"
    );
    assert!(run.calls.is_empty());
    let agent_call = calls
        .iter()
        .find(|c| c.model == "down-agent")
        .expect("recorded");
    assert_eq!(agent_call.attempts, 2);
    assert!(agent_call.error.is_some());
    // Left out of the metrics, so not judged: the agent's call is the only one.
    assert_eq!(calls.len(), 1);
    assert!(run.judged.is_none() && run.rejudged.is_none());
}

/// An agent whose every answer stops at its token limit (`finish_reason: length`, as a small
/// model with a low `max_tokens` does): the conversation is played and scored, and each cut-off
/// turn is counted in the record.
#[test]
fn cut_off_agent_answers_are_counted() {
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let _ = rustls::crypto::ring::default_provider().install_default();
    let rt = tokio::runtime::Runtime::new().expect("a runtime");
    let server = rt.block_on(async {
        let server = MockServer::start().await;
        Mock::given(wiremock::matchers::method("POST"))
            .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
                "choices": [{"index": 0, "finish_reason": "length",
                    "message": {"role": "assistant", "content": "Thank you for writing to"}}],
                "usage": {"prompt_tokens": 900, "completion_tokens": 8}})))
            .mount(&server)
            .await;
        server
    });
    let mut agent = ModelConfig::new("short-agent", Provider::Openai);
    agent.base_url = Some(format!("{}/v1", server.uri()));
    let record = play_one(agent, &northline().cases[0]);
    assert_eq!(record.infra_error, None);
    assert!(record.turns >= 2, "{}", record.turns);
    assert_eq!(record.truncated_turns, record.turns);
    assert_eq!(record.usage.input_tokens, 900 * u64::from(record.turns));
}
