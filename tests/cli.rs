//! The `sage scenario` commands, run as a user would (the built binary, from the repository root).

mod common;

use std::process::Output;

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
    let o = common::sage(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let want: String = BUNDLED.iter().map(|f| format!("ok: {f}\n")).collect();
    assert_eq!(stdout(&o), want);
    assert_eq!(stderr(&o), "", "no warnings on bundled scenarios");
}

#[test]
fn validate_fails_on_a_missing_file() {
    let o = common::sage(&[
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
    let o = common::sage(&["scenario", "paths", "scenarios/telecom_package.yaml"]);
    assert!(o.status.success());
    let text = stdout(&o);
    assert!(
        text.starts_with("telecom_package: 12 routes; 36 field-value combinations\n"),
        "{text}"
    );
    assert!(text.contains("step1>step2>step3>step6>step4 -> ChangeOrder"));
}

#[test]
fn scenario_diff_lists_the_routes_and_regions_two_scenarios_route_apart() {
    let telecom = "scenarios/telecom_package.yaml";
    let same = common::sage(&["scenario", "diff", telecom, telecom]);
    assert_eq!(same.status.code(), Some(0));
    assert!(
        stdout(&same).ends_with("every assignment is routed alike\n"),
        "{}",
        stdout(&same)
    );

    // A discontent customer under contract with a penalty: changed, not transferred.
    let dir = tempfile::tempdir().expect("dir");
    let edited = dir.path().join("telecom_edited.yaml");
    let text = std::fs::read_to_string(telecom).expect("scenario");
    std::fs::write(
        &edited,
        text.replace(
            "Discontent: {action: TransHuman}",
            "Discontent: {action: ChangeOrder}",
        ),
    )
    .expect("write");
    let edited = edited.display().to_string();
    let o = common::sage(&["scenario", "diff", telecom, &edited]);
    assert_eq!(o.status.code(), Some(1));
    let text = stdout(&o);
    assert!(
        text.starts_with(&format!("{telecom}: 12 routes; {edited}: 9 routes\n")),
        "{text}"
    );
    // The three transfers are gone; each of their regions now ends in the contract change.
    assert!(
        text.contains(&format!("only in {telecom}:\n  step1>step2>step3")),
        "{text}"
    );
    assert_eq!(text.matches("-> TransHuman\n").count(), 3 + 3, "{text}");
    assert!(!text.contains(&format!("only in {edited}")), "{text}");
    assert!(
        text.contains("3 regions routed to another action:"),
        "{text}"
    );
    assert!(text.contains("EmotionTag=Discontent"), "{text}");
    let json: serde_json::Value = serde_json::from_str(&stdout(&common::sage(&[
        "scenario", "diff", telecom, &edited, "--json",
    ])))
    .expect("json");
    assert_eq!(json["actions"].as_array().expect("actions").len(), 3);
    assert_eq!(json["actions"][0]["b"]["action"], "ChangeOrder");
}

#[test]
fn paths_json_has_the_documented_shape() {
    let o = common::sage(&[
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
    let oe = common::sage(&[
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
    let o = common::sage(&[
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
    let o = common::sage(&[
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
    let human = common::sage(&[
        "scenario",
        "route",
        "scenarios/online_education.yaml",
        "--set",
        "DescriptionClear=false",
    ]);
    assert_eq!(
        stdout(&human),
        "path: step1>step2\naction: GUIDE\nPLAN: none\n"
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
        let o = common::sage(&[
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
    let dot = stdout(&common::sage(&[
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
    let mermaid = stdout(&common::sage(&[
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
    let oe = stdout(&common::sage(&[
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

#[test]
fn every_size_and_duration_has_a_bound_and_silent_mistakes_are_refused() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/run.yaml")).unwrap();
    let refused = |from: &str, to: &str, expected: &str| {
        assert!(text.contains(from), "the example has no `{from}`");
        let err = sage::plan::RunConfig::from_yaml(&text.replace(from, to), "run.yaml")
            .expect_err(to)
            .to_string();
        assert!(
            err.starts_with("run.yaml: ") && err.contains(expected),
            "{to}: {err}"
        );
    };
    refused("repeats: 1", "repeats: 0", "repeats: 0; expected 1 to 100");
    refused(
        "repeats: 1",
        "repeats: 1000000000",
        "repeats: 1000000000; expected 1 to 100",
    );
    refused(
        "dialogues_per_scenario: 12",
        "dialogues_per_scenario: 1000000000000",
        "dialogues_per_scenario: 1000000000000; expected 0 to 1000000",
    );
    refused(
        "min_per_route: 1",
        "min_per_route: 1000000000",
        "min_per_route: 1000000000; expected 0 to 10000",
    );
    refused(
        "concurrency: 16",
        "concurrency: 0",
        "concurrency: 0; expected 1 to 100000",
    );
    refused(
        "max_delay_ms: 20000",
        "max_delay_ms: 18446744073709551615",
        "model local-llm: retries.base_delay_ms is 500 and retries.max_delay_ms 18446744073709551615; expected base_delay_ms <= max_delay_ms <= 600000",
    );
    refused(
        "base_delay_ms: 500",
        "base_delay_ms: 50000",
        "expected base_delay_ms <= max_delay_ms",
    );
    refused(
        "max_attempts: 4",
        "max_attempts: 0",
        "model local-llm: retries.max_attempts is 0; expected 1 (no retry) to 20",
    );
    refused(
        "input_per_million: 0.0",
        "input_per_million: -1.5",
        "model local-llm: price.input_per_million is -1.5; expected a price from 0",
    );
    refused(
        "timeout_secs: 60",
        "timeout_secs: .nan",
        "model local-llm: timeout_secs is NaN",
    );
    refused(
        "requests_per_minute: 600",
        "requests_per_minute: 0",
        "requests_per_minute is 0; expected 1 to 1000000, or `auto` (leave it out for no limit)",
    );
    refused(
        "sim: {kind: user}",
        "sim: {kind: user, latency: {uniform_ms: [50, 10]}}",
        "model sim-user: sim latency uniform_ms is [50, 10]; expected [low, high] with low <= high",
    );
    refused(
        "sim: {kind: user}",
        "sim: {kind: user, latency: {fixed_ms: 18446744073709551615}}",
        "sim latency fixed_ms is 18446744073709551615; expected at most 600000",
    );
    refused(
        "    json_mode: true",
        "    json_mode: true\n    sim: {kind: user}",
        "model local-llm: a `sim:` section applies to provider simulated only",
    );
    for empty in ["", "\n", "# nothing but a comment\n", "---\n"] {
        let err = sage::plan::RunConfig::from_yaml(empty, "run.yaml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("run.yaml: the file is empty; expected a run configuration"),
            "{empty:?}: {err}"
        );
        let err = sage::plan::desk::DeskConfig::from_yaml(empty, "desk.yaml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("desk.yaml: the file is empty"), "{err}");
    }
    // The run as a whole: a million cases of three models a hundred times is refused before
    // anything is planned.
    let config = sage::plan::RunConfig {
        dialogues_per_scenario: 1_000_000,
        repeats: 100,
        ..Default::default()
    };
    config
        .check("run.yaml")
        .expect("each number within its bound");
    let sops = [std::sync::Arc::new(
        sage::sop::load(std::path::Path::new("scenarios/telecom_package.yaml")).unwrap(),
    )];
    let err = config
        .check_jobs(&sops, "run.yaml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("expected at most 2000000 in one run"), "{err}");
    assert!(RunConfigDefault::ok(&sops));
}

/// The default run plans within the bound.
struct RunConfigDefault;

impl RunConfigDefault {
    fn ok(sops: &[std::sync::Arc<sage::sop::Sop>]) -> bool {
        sage::plan::RunConfig::default()
            .check_jobs(sops, "<default>")
            .is_ok()
    }
}

#[test]
fn flags_and_files_that_cannot_work_are_refused_with_one_clear_message() {
    let tmp = tempfile::tempdir().unwrap();
    // A cache_dir that is a file: refused, the OS error said once.
    let file = tmp.path().join("not-a-folder");
    std::fs::write(&file, "x").unwrap();
    let config = tmp.path().join("run.yaml");
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/run.yaml")).unwrap();
    std::fs::write(
        &config,
        text.replace(
            "# cache_dir: .sage-cache",
            &format!("cache_dir: {}", file.join("cache").display()),
        )
        .replace(
            "service_models: [local-llm, sim-balanced]",
            "service_models: [sim-balanced]",
        ),
    )
    .unwrap();
    let out = tmp.path().join("out").display().to_string();
    let o = common::sage(&[
        "run",
        "--config",
        &config.display().to_string(),
        "--out",
        &out,
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("cache_dir"), "{err}");
    assert_eq!(err.matches("Not a directory").count(), 1, "{err}");
    // A scenario given twice.
    std::fs::write(
        &config,
        text.replace(
            "scenarios: [scenarios/telecom_package.yaml, scenarios/online_education.yaml]",
            "scenarios: [bundled, scenarios/telecom_package.yaml]",
        ),
    )
    .unwrap();
    let o = common::sage(&[
        "run",
        "--config",
        &config.display().to_string(),
        "--out",
        &out,
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(
            "scenarios: `scenarios/telecom_package.yaml` is scenario `telecom_package`, which `bundled` (telecom_package.yaml) already gives"
        ),
        "{}",
        stderr(&o)
    );
    // Usage errors exit 2 (docs/cli.md): a score that is not a number from 0 to 100.
    let o = common::sage(&[
        "export",
        "results/x",
        "--format",
        "openai",
        "--min-logic",
        "NaN",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("`NaN`: expected a score from 0 to 100"),
        "{}",
        stderr(&o)
    );
    // A key set twice.
    let o = common::sage(&[
        "scenario",
        "route",
        "scenarios/telecom_package.yaml",
        "--set",
        "ConsumptionType=Enquiry",
        "--set",
        "ConsumptionType=Handle",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("`ConsumptionType` is already set; expected each key once"),
        "{}",
        stderr(&o)
    );
    // A folder that is no support-desk store.
    let o = common::sage(&["scenario", "validate", "scenarios"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("a store folder holds store.yaml and cases.yaml")
            && stderr(&o).contains("to validate scenario files, name the files"),
        "{}",
        stderr(&o)
    );
}

/// `sage run --dialogues 1` of the bundled default into `dir/RUN_ID`: that folder.
fn small_run(dir: &std::path::Path, run_id: &str) -> std::path::PathBuf {
    let out = dir.display().to_string();
    common::sage_ok(&[
        "run",
        "--dialogues",
        "1",
        "--run-id",
        run_id,
        "--out",
        &out,
        "--quiet",
    ]);
    dir.join(run_id)
}

/// `sage show` of a dialogue whose customer wrote terminal escape sequences (window title,
/// clipboard, clear screen), a carriage return, a bell and a right-to-left override: none
/// reaches the terminal; each is printed visibly as its escape.
#[test]
fn show_prints_control_characters_visibly() {
    let dir = tempfile::tempdir().expect("temp dir");
    let folder = small_run(dir.path(), "hostile");
    let file = folder.join("dialogues.jsonl");
    let text = std::fs::read_to_string(&file).expect("records");
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut record: serde_json::Value = serde_json::from_str(&lines[0]).expect("a record");
    let hostile =
        "hi\u{1b}]0;pwned\u{7}\u{1b}]52;c;clipboard-text\u{7}\u{1b}[2J\rgone \u{202e}desrever";
    record["turns"][0]["user_message"] = hostile.into();
    lines[0] = record.to_string();
    std::fs::write(&file, lines.join("\n") + "\n").expect("records written");
    let id = record["job"]["dialogue_id"].as_str().expect("an id");
    let printed = common::sage_ok(&["show", folder.to_str().expect("utf-8"), id]);
    for c in ['\u{1b}', '\u{7}', '\r', '\u{202e}'] {
        assert!(!printed.contains(c), "{:?} printed raw:\n{printed}", c);
    }
    assert!(
        printed.contains(
            "hi\\u{1b}]0;pwned\\u{7}\\u{1b}]52;c;clipboard-text\\u{7}\\u{1b}[2J\\u{d}gone \\u{202e}desrever"
        ),
        "{printed}"
    );
}

/// An error that echoes a flag's value (`--set` with a bell and a right-to-left override)
/// prints those characters visibly, not raw.
#[test]
fn errors_echo_control_characters_visibly() {
    let out = common::sage(&[
        "scenario",
        "route",
        "scenarios/telecom_package.yaml",
        "--set",
        "Consumption\u{202e}Type=x\u{7}",
    ]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        !err.contains('\u{202e}') && !err.contains('\u{7}'),
        "{err:?}"
    );
    assert!(
        err.contains("--set Consumption\\u{202e}Type=x\\u{7}: unknown key"),
        "{err}"
    );
}

/// `sage show` and `sage report` on a records file that is a link to /dev/zero, a named pipe or
/// holds a line longer than a record can be: each exits 1 within seconds with a message naming
/// the file (no endless read, no wait for a writer, no huge allocation).
#[test]
fn records_files_that_are_not_files_or_have_huge_lines_are_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let folder = small_run(dir.path(), "odd");
    let records = folder.join("dialogues.jsonl");
    let first = std::fs::read_to_string(&records).expect("records");
    let id = serde_json::from_str::<serde_json::Value>(first.lines().next().expect("a line"))
        .expect("a record")["job"]["dialogue_id"]
        .as_str()
        .expect("an id")
        .to_string();
    let folder_arg = folder.display().to_string();
    let within = |args: &[&str]| {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_sage"))
            .args(args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("sage starts");
        let started = std::time::Instant::now();
        while child.try_wait().expect("wait").is_none() {
            if started.elapsed() > std::time::Duration::from_secs(20) {
                let _ = child.kill();
                panic!("sage {args:?} did not end within 20 s");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let out = child.wait_with_output().expect("output");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let expected = format!("{}: not a regular file", records.display());
    std::fs::remove_file(&records).expect("remove");
    std::os::unix::fs::symlink("/dev/zero", &records).expect("symlink");
    for args in [vec!["show", &folder_arg, &id], vec!["report", &folder_arg]] {
        let (code, err) = within(&args);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert!(err.contains(&expected), "{args:?}: {err}");
    }
    std::fs::remove_file(&records).expect("remove");
    let fifo = std::ffi::CString::new(records.display().to_string()).expect("path");
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0, "mkfifo");
    let (code, err) = within(&["show", &folder_arg, &id]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains(&expected), "{err}");
    std::fs::remove_file(&records).expect("remove");
    let mut huge = vec![b'x'; 64 * 1024 * 1024 + 1];
    huge.push(b'\n');
    huge.extend_from_slice(first.as_bytes());
    std::fs::write(&records, huge).expect("a huge line");
    let (code, err) = within(&["show", &folder_arg, &id]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "{}: line 1 is longer than 64 MiB, the most a record can be",
            records.display()
        )),
        "{err}"
    );
}

/// A model that cannot be set up (its API key variable is not set) is named once in the
/// error, without a second prefix (it read "model agent: configuration: model `agent`: ...").
#[test]
fn a_model_that_cannot_be_set_up_is_named_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("desk.yaml");
    std::fs::write(
        &config,
        "models:
  - {name: agent, provider: openai, base_url: \"http://127.0.0.1:9/v1\", api_key_env: SAGE_TEST_KEY_NOT_SET}
  - {name: customer, provider: simulated, sim: {kind: desk_customer}}
  - {name: judge-1, provider: simulated, sim: {kind: desk_judge}}
  - {name: judge-2, provider: simulated, sim: {kind: desk_judge}}
agents: [agent]
customer_model: customer
judge_models: [judge-1, judge-2]
",
    )
    .expect("config");
    let out = dir.path().join("out").display().to_string();
    let o = common::sage(&[
        "run",
        "--suite",
        "support-desk",
        "--config",
        config.to_str().expect("utf-8"),
        "--out",
        &out,
        "--quiet",
    ]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.lines()
            .any(|l| l
                == "error: model `agent`: the API key variable SAGE_TEST_KEY_NOT_SET is not set"),
        "{err}"
    );
}

/// `sage worker --model` with a name outside the model-name syntax (5,000 characters, a space,
/// a `/`) exits 1 at once with a message, before connecting to anything (it reconnected
/// thousands of times with a name that could not be a subject).
#[test]
fn worker_model_names_are_checked_before_connecting() {
    let long = "m".repeat(5000);
    for name in [long.as_str(), "a b", "a/b"] {
        let o = common::sage(&[
            "worker",
            "--model",
            name,
            "--nats",
            "nats://127.0.0.1:9",
            "--nats-connect-secs",
            "30",
        ]);
        assert_eq!(o.status.code(), Some(1));
        let err = stderr(&o);
        assert!(err.starts_with("error: --model: model name `"), "{err}");
        assert!(err.len() < 400, "{err}");
    }
}
