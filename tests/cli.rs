//! The `sage scenario` commands, run as a user would (the built binary, from the repository root).

use std::process::{Command, Output};

fn sage(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run sage")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const BUNDLED: [&str; 6] = [
    "scenarios/airline_refund.yaml",
    "scenarios/ecommerce_refund.yaml",
    "scenarios/logistics_delivery.yaml",
    "scenarios/online_education.yaml",
    "scenarios/property_service.yaml",
    "scenarios/telecom_package.yaml",
];

#[test]
fn validate_accepts_every_bundled_scenario() {
    let mut args = vec!["scenario", "validate"];
    args.extend(BUNDLED);
    let o = sage(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let want: String = BUNDLED.iter().map(|f| format!("ok: {f}\n")).collect();
    assert_eq!(stdout(&o), want);
    assert_eq!(stderr(&o), "", "no warnings on bundled scenarios");
}

#[test]
fn validate_fails_on_a_missing_file() {
    let o = sage(&[
        "scenario",
        "validate",
        "scenarios/telecom_package.yaml",
        "scenarios/nope.yaml",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "ok: scenarios/telecom_package.yaml\n");
    assert!(
        stderr(&o).starts_with("scenarios/nope.yaml: cannot read the file"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn paths_lists_routes_with_assignments() {
    let o = sage(&["scenario", "paths", "scenarios/telecom_package.yaml"]);
    assert!(o.status.success());
    let text = stdout(&o);
    assert!(
        text.starts_with("telecom_package: 12 routes; 36 field-value combinations\n"),
        "{text}"
    );
    assert!(text.contains("step1 > step2 > step3 > step6 > step4 -> ChangeOrder"));
}

#[test]
fn paths_json_has_the_documented_shape() {
    let o = sage(&[
        "scenario",
        "paths",
        "scenarios/telecom_package.yaml",
        "--json",
    ]);
    assert!(o.status.success());
    // Key order matters (declaration order): read into order-keeping maps.
    type Map = indexmap::IndexMap<String, serde_json::Value>;
    #[derive(serde::Deserialize)]
    struct Fields {
        fields: Map,
    }
    let routes: Vec<Map> = serde_json::from_slice(&o.stdout).unwrap();
    let fields: Vec<Fields> = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(routes.len(), 12);
    for (r, f) in routes.iter().zip(&fields) {
        let keys: Vec<&str> = r.keys().map(String::as_str).collect();
        assert_eq!(keys, ["path", "action", "outputs", "fields", "variables"]);
        let fields: Vec<&str> = f.fields.keys().map(String::as_str).collect();
        assert_eq!(
            fields,
            [
                "ConsumptionType",
                "ApplicationTendency",
                "ConsumptionProfile",
                "EmotionTag"
            ]
        );
        assert!(r["variables"]["Penalty"].is_i64());
        assert_eq!(r["outputs"], serde_json::json!({}));
    }
    let oe = sage(&[
        "scenario",
        "paths",
        "scenarios/online_education.yaml",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&oe.stdout).unwrap();
    let plans: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["outputs"]["PLAN"].as_str().unwrap())
        .collect();
    for p in [
        "PLAN_A", "PLAN_B", "PLAN_C", "PLAN_D", "PLAN_E", "PLAN_F", "none",
    ] {
        assert!(plans.contains(&p), "{p} missing from {plans:?}");
    }
    assert!(v[0]["fields"]["DescriptionClear"].is_boolean());
}

#[test]
fn route_json_for_the_papers_first_example() {
    let o = sage(&[
        "scenario",
        "route",
        "scenarios/telecom_package.yaml",
        "--set",
        "ConsumptionType=Enquiry",
        "--set",
        "ApplicationTendency=Agree",
        "--set",
        "ConsumptionProfile=Data",
        "--set",
        "EmotionTag=Calm",
        "--set",
        "PackageStatus=NoContract",
        "--set",
        "Penalty=0",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "{\"path\":[\"step1\",\"step2\",\"step3\",\"step6\",\"step4\"],\"action\":\"ChangeOrder\",\"outputs\":{}}\n"
    );
}

#[test]
fn route_with_booleans_and_outputs() {
    let o = sage(&[
        "scenario",
        "route",
        "scenarios/online_education.yaml",
        "--set",
        "DescriptionClear=true",
        "--set",
        "QuestionRelevance=false",
        "--set",
        "ResolveDependency=HighDependency",
        "--set",
        "RegardingRefund=false",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["action"], "PLAN");
    assert_eq!(v["outputs"], serde_json::json!({"PLAN": "PLAN_D"}));
    let human = sage(&[
        "scenario",
        "route",
        "scenarios/online_education.yaml",
        "--set",
        "DescriptionClear=false",
    ]);
    assert_eq!(
        stdout(&human),
        "path: step1 -> step2\naction: GUIDE\nPLAN: none\n"
    );
}

#[test]
fn route_errors_name_the_problem() {
    // Each `--set` is refused (exit 1) with a message naming the problem.
    for (set, message) in [
        (
            "ConsumptionType=Change",
            "stage step4 needs variable PackageStatus, which is missing",
        ),
        ("Colour=red", "unknown key `Colour`"),
        ("Penalty=lots", "Penalty is an integer"),
        (
            "ConsumptionType=Upgrade",
            "`Upgrade` is not a value of ConsumptionType",
        ),
    ] {
        let o = sage(&[
            "scenario",
            "route",
            "scenarios/telecom_package.yaml",
            "--set",
            set,
        ]);
        assert_eq!(o.status.code(), Some(1), "{set}");
        assert!(stderr(&o).contains(message), "{set}: {}", stderr(&o));
    }
}

#[test]
fn graph_exports_dot_and_mermaid() {
    let dot = stdout(&sage(&[
        "scenario",
        "graph",
        "scenarios/telecom_package.yaml",
        "--format",
        "dot",
    ]));
    assert!(dot.starts_with("digraph \"telecom_package\" {\n"));
    assert!(dot.ends_with("}\n"));
    assert!(
        dot.contains("stage_1 -> stage_2 [label=\"Enquiry\"];"),
        "{dot}"
    );
    assert!(
        dot.contains("stage_4 -> action_0 [label=\"== 0\"];"),
        "{dot}"
    );
    assert!(dot.contains("start -> stage_0;"));
    // 1 start edge + 14 stage edges (1+3+1+2+2+3+2) in the Telecom SOP.
    assert_eq!(dot.matches(" -> ").count(), 15);
    let mermaid = stdout(&sage(&[
        "scenario",
        "graph",
        "scenarios/telecom_package.yaml",
        "--format",
        "mermaid",
    ]));
    assert!(mermaid.starts_with("flowchart TD\n"));
    assert!(
        mermaid.contains("  stage_1 -->|\"Enquiry\"| stage_2\n"),
        "{mermaid}"
    );
    assert_eq!(mermaid.matches("-->").count(), 15);
    let oe = stdout(&sage(&[
        "scenario",
        "graph",
        "scenarios/online_education.yaml",
    ]));
    assert!(oe.contains("PLAN := PLAN_A"), "{oe}");
}

#[test]
fn the_example_run_configuration_is_valid() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/run.yaml")).unwrap();
    let config = sage::plan::RunConfig::from_yaml(&text, "examples/run.yaml").unwrap();
    assert_eq!(config.service_models, ["local-llm", "sim-balanced"]);
    assert_eq!(
        config.models[0].api_key_env, None,
        "no key variable is needed for a local server"
    );
    // A bad model reference is named.
    let bad = text.replace("user_model: sim-user", "user_model: nobody");
    let err = sage::plan::RunConfig::from_yaml(&bad, "run.yaml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("user_model: unknown model `nobody`"), "{err}");
}

#[test]
fn run_configurations_with_impossible_settings_are_refused_with_their_name() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/run.yaml")).unwrap();
    let twice = text.replace(
        "service_models: [local-llm, sim-balanced]",
        "service_models: [sim-balanced, sim-balanced]",
    );
    let err = sage::plan::RunConfig::from_yaml(&twice, "run.yaml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("`sim-balanced` is listed twice"), "{err}");
    // Two model names that would share a NATS subject token.
    let clash = text
        .replace("  - name: sim-judge-2", "  - name: sim.judge_2")
        .replace("  - name: sim-judge-3", "  - name: sim_judge.2");
    let err = sage::plan::RunConfig::from_yaml(&clash, "run.yaml")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`sim.judge_2` and `sim_judge.2`") && err.contains("`sim_judge_2`"),
        "{err}"
    );
    let desk = sage::plan::desk::DeskConfig {
        models: vec![
            sage::llm::ModelConfig::new("gpt-4.1", sage::llm::Provider::Openai),
            sage::llm::ModelConfig::new("gpt-4_1", sage::llm::Provider::Openai),
        ],
        ..Default::default()
    };
    let err = desk.check("desk.yaml").unwrap_err().to_string();
    assert!(
        err.contains("desk.yaml") && err.contains("`gpt-4.1` and `gpt-4_1`"),
        "{err}"
    );
    let long = text.replace("max_turns: 8", "max_turns: 4000000000");
    let err = sage::plan::RunConfig::from_yaml(&long, "run.yaml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("max_turns"), "{err}");
    // A simulated skill that is not a probability is refused with the configuration.
    let err = sage::plan::RunConfig::from_yaml(
        &text.replace(
            "sim: {kind: agent, profile: balanced}",
            "sim: {kind: agent, profile: balanced, skills: {empathy: 1.5}}",
        ),
        "run.yaml",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("empathy is 1.5; expected a probability"),
        "{err}"
    );
}
