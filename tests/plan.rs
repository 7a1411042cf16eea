//! `sage run --plan` (docs/cli.md): the plan counts what the run then does. The same flags are
//! planned (`--plan --json`) and run: the dialogues per scenario and model are the records'
//! exactly, the calls stay within the plan's bounds (the judges' are exactly judged turns x
//! panel, nothing retried), the expected calls and input tokens are within 10% of the run's and
//! its cost within 20% (the simulated models answer more briefly than the complete answers the
//! plan takes, so their output tokens are fewer), and planning writes nothing.

mod common;

use common::{fresh_dir, records_json, sage, sage_ok};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Two priced simulated agents, a priced customer and three priced judges, two scenarios;
/// judges that never answer garbage and a customer that never answers empty, so no call is
/// retried.
const CONFIG: &str = r#"
models:
  - {name: agent-a, provider: simulated, sim: {kind: agent, profile: strong}, price: {input_per_million: 2, output_per_million: 8}}
  - {name: agent-b, provider: simulated, sim: {kind: agent, profile: weak}, price: {input_per_million: 1, output_per_million: 4}}
  - {name: user, provider: simulated, sim: {kind: user}, price: {input_per_million: 0.5, output_per_million: 1}}
  - {name: judge-1, provider: simulated, sim: {kind: judge}, price: {input_per_million: 3, output_per_million: 6}}
  - {name: judge-2, provider: simulated, sim: {kind: judge, noise: 0.03}, price: {input_per_million: 3, output_per_million: 6}}
  - {name: judge-3, provider: simulated, sim: {kind: judge, noise: 0.06}, price: {input_per_million: 3, output_per_million: 6}}
service_models: [agent-a, agent-b]
user_model: user
judge_models: [judge-1, judge-2, judge-3]
scenarios: [scenarios/telecom_package.yaml, scenarios/airline_refund.yaml]
min_per_route: 2
"#;

/// Which role a call of the run is: the agent under test, the customer or a judge.
fn role(model: &str) -> &'static str {
    match model {
        "user" => "customer",
        m if m.starts_with("judge-") => "judges",
        _ => "agent",
    }
}

/// `x` is within `share` of `expected`.
fn near(x: f64, expected: f64, share: f64) -> bool {
    (x - expected).abs() <= share * expected
}

#[test]
fn the_plan_counts_the_dialogues_and_calls_the_run_makes_and_writes_nothing() {
    let tmp = fresh_dir("plan");
    let config = tmp.join("run.yaml");
    std::fs::write(&config, CONFIG).unwrap();
    let out = tmp.join("results");
    std::fs::create_dir(&out).unwrap();
    let args = |extra: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = [
            "run",
            "--config",
            config.to_str().unwrap(),
            "--dialogues",
            "5",
            "--repeats",
            "3",
            "--out",
            out.to_str().unwrap(),
        ]
        .map(String::from)
        .to_vec();
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    let run_args = args(&["--plan", "--json"]);
    let plan: Value = serde_json::from_str(&sage_ok(
        &run_args.iter().map(String::as_str).collect::<Vec<_>>(),
    ))
    .expect("--plan --json prints JSON");
    let text_args = args(&["--plan"]);
    let text = sage_ok(&text_args.iter().map(String::as_str).collect::<Vec<_>>());
    // Nothing written: the results folder is as it was, empty.
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0, "--plan wrote");
    let line = text.lines().next().unwrap();
    // 5 cases asked per scenario, the rest added to give each of the 12 + 15 routes two.
    assert_eq!(
        line,
        "324 dialogues (2 scenarios, 54 cases: 10 asked + 44 added by min_per_route 2; x 3 repeats; x 2 models)"
    );
    assert_eq!(plan["dialogues"], 324);

    let real_args = args(&["--run-id", "planned", "--quiet"]);
    let ran = sage(&real_args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let stderr = String::from_utf8_lossy(&ran.stderr);
    let dir = out.join("planned");
    // The run starts with the plan's line.
    assert!(
        stderr.starts_with(&format!("run planned: {line} -> {}\n", dir.display())),
        "{stderr}"
    );
    let records = records_json(&dir);

    // Dialogues: per scenario, per model, in all, exactly.
    assert_eq!(records.len(), 324);
    let count =
        |key: &str, value: &str| records.iter().filter(|r| r["job"][key] == value).count() as u64;
    for s in plan["scenarios"].as_array().unwrap() {
        let id = s["id"].as_str().unwrap();
        assert_eq!(Some(count("scenario", id)), s["dialogues"].as_u64(), "{id}");
        assert_eq!(
            s["dialogues"].as_u64(),
            Some(s["cases"].as_u64().unwrap() * 3 * 2)
        );
    }
    for m in plan["models"].as_array().unwrap() {
        let model = m["model"].as_str().unwrap();
        assert_eq!(
            Some(count("service_model", model)),
            m["dialogues"].as_u64(),
            "{model}"
        );
    }

    // Calls: every record within the bounds per dialogue, the judges' exactly judged x panel.
    let per = &plan["per_dialogue"];
    let most = |key: &str| per[key]["at_most"].as_f64().unwrap();
    let mut calls: BTreeMap<&str, f64> = BTreeMap::new();
    let mut input: BTreeMap<&str, f64> = BTreeMap::new();
    let mut cost = 0.0;
    for r in &records {
        let mut mine: BTreeMap<&str, f64> = BTreeMap::new();
        let turns = r["turns"].as_array().unwrap();
        let all = turns
            .iter()
            .flat_map(|t| t["calls"].as_array().unwrap())
            .chain(r["closing_calls"].as_array().into_iter().flatten());
        for c in all {
            let role = role(c["model"].as_str().unwrap());
            assert_eq!(c["attempts"], 1);
            *mine.entry(role).or_default() += 1.0;
            *input.entry(role).or_default() += c["usage"]["input_tokens"].as_f64().unwrap();
        }
        let judged = turns.iter().filter(|t| !t["judges"].is_null()).count() as f64;
        assert!(mine["agent"] <= most("agent"));
        assert!(mine["customer"] <= most("customer"));
        assert!(judged <= most("judged_turns"));
        assert_eq!(mine.get("judges").copied().unwrap_or(0.0), judged * 3.0);
        for (role, n) in mine {
            *calls.entry(role).or_default() += n;
        }
        cost += r["cost_usd"].as_f64().unwrap();
    }
    // Over the run: within the bounds, and near the expected figures.
    for r in plan["roles"].as_array().unwrap() {
        let name = r["role"].as_str().unwrap();
        let spend = &r["spend"];
        let (made, expected) = (calls[name], spend["calls"]["expected"].as_f64().unwrap());
        assert!(
            made <= spend["calls"]["at_most"].as_f64().unwrap(),
            "{name}"
        );
        assert!(
            near(made, expected, 0.10),
            "{name}: {made} calls, {expected} expected"
        );
        let (read, expected) = (
            input[name],
            spend["input_tokens"]["expected"].as_f64().unwrap(),
        );
        assert!(
            near(read, expected, 0.10),
            "{name}: {read} tokens in, {expected} expected"
        );
    }
    let total = &plan["total"]["cost_usd"];
    let expected = total["expected"].as_f64().unwrap();
    assert!(cost <= total["at_most"].as_f64().unwrap());
    assert!(near(cost, expected, 0.20), "${cost}, ${expected} expected");
}

#[test]
fn plan_and_json_need_each_other_and_a_resume_is_not_planned() {
    let out = sage(&["run", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let out = sage(&["run", "--plan", "--resume", "results/x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"));
}

#[test]
fn the_support_desk_and_a_sweep_are_planned_without_a_folder_or_a_broker() {
    let tmp = fresh_dir("plan-desk");
    let out = tmp.to_str().unwrap();
    let desk = sage_ok(&["run", "--suite", "support-desk", "--plan", "--out", out]);
    assert!(
        desk.starts_with("1,458 conversations (162 cases x 3 runs x 3 agents)\n"),
        "{desk}"
    );
    // 8 turns of at most 6 calls, 7 customer calls, 2 judges: 57 a conversation.
    assert!(desk.contains("\nall                    57\n"), "{desk}");
    let json: Value = serde_json::from_str(&sage_ok(&[
        "run",
        "--suite",
        "support-desk",
        "--plan",
        "--json",
        "--repeats",
        "1",
    ]))
    .unwrap();
    assert_eq!(json["conversations"], 486);
    assert_eq!(json["agent_calls_at_most"], 48);
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
    // No NATS is listening on this port: the plan does not connect.
    let sweep = sage_ok(&[
        "sweep",
        "--plan",
        "--nats",
        "nats://127.0.0.1:1",
        "--nats-connect-secs",
        "0",
    ]);
    assert!(
        sweep.starts_with("1,092 dialogues (6 scenarios, 364 cases"),
        "{sweep}"
    );
    let sweep = sage_ok(&[
        "sweep",
        "--suite",
        "support-desk",
        "--plan",
        "--nats",
        "nats://127.0.0.1:1",
    ]);
    assert!(sweep.starts_with("1,458 conversations"), "{sweep}");
    assert!(Path::new(out).read_dir().unwrap().next().is_none());
}
