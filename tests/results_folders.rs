//! Results folders against concurrent writers and hostile input, through the built binary:
//! one process writes a folder at a time (a lock), default run ids never collide, a run id is
//! always one folder under `--out`, `sage report` copes with repeated dialogue ids, `--resume`
//! refuses records of another configuration or another suite's folder, and a run whose agent
//! never answered fails, labelled by its configuration.

mod common;

use std::path::Path;
use std::process::{Command, Output};

/// One scenario, one simulated agent, four dialogues.
fn config(seed: u64) -> String {
    format!(
        "models:
  - {{name: agent, provider: simulated, sim: {{kind: agent, profile: balanced}}}}
  - {{name: user, provider: simulated, sim: {{kind: user}}}}
  - {{name: j1, provider: simulated, sim: {{kind: judge}}}}
  - {{name: j2, provider: simulated, sim: {{kind: judge}}}}
  - {{name: j3, provider: simulated, sim: {{kind: judge}}}}
service_models: [agent]
user_model: user
judge_models: [j1, j2, j3]
scenarios: [scenarios/telecom_package.yaml]
dialogues_per_scenario: 4
min_per_route: 0
max_turns: 6
seed: {seed}
"
    )
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("written");
    path.display().to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `sage run --config CONFIG --out OUT --quiet ARGS`, which must succeed.
fn run(config: &str, out: &Path, args: &[&str]) -> Output {
    let out_s = out.display().to_string();
    let mut all = vec!["run", "--config", config, "--out", &out_s, "--quiet"];
    all.extend(args);
    let o = common::sage(&all);
    assert!(o.status.success(), "sage {all:?}: {}", stderr(&o));
    o
}

#[test]
fn a_run_id_names_one_folder_under_out() {
    let tmp = tempfile::tempdir().unwrap();
    let config = write(tmp.path(), "run.yaml", &config(1));
    let out = tmp.path().join("out");
    let long = "x".repeat(4100);
    for bad in [
        "../../escaped",
        "/tmp/absolute",
        "",
        "a/b",
        ".hidden",
        &long,
    ] {
        let o = common::sage(&[
            "run",
            "--config",
            &config,
            "--out",
            &out.display().to_string(),
            "--run-id",
            bad,
        ]);
        assert_eq!(o.status.code(), Some(1), "--run-id {bad:?} accepted");
        assert!(stderr(&o).contains("--run-id: run id"), "{}", stderr(&o));
    }
    assert!(!out.exists(), "nothing written for a refused id");
    assert!(!tmp.path().join("escaped").exists());
}

#[test]
fn one_process_writes_a_folder_at_a_time_and_default_ids_never_collide() {
    let tmp = tempfile::tempdir().unwrap();
    let config = write(tmp.path(), "run.yaml", &config(2));
    let out = tmp.path().join("out");
    // Two runs started at the same moment with the default run id: two folders.
    let spawn = || {
        Command::new(env!("CARGO_BIN_EXE_sage"))
            .args(["run", "--config", &config, "--quiet", "--out"])
            .arg(&out)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
    };
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(spawn);
        let b = s.spawn(spawn);
        (a.join().unwrap().unwrap(), b.join().unwrap().unwrap())
    });
    assert!(a.status.success() && b.status.success(), "{}", stderr(&a));
    let folders: Vec<_> = std::fs::read_dir(&out).unwrap().collect();
    assert_eq!(folders.len(), 2, "two runs, two folders");
    for folder in folders {
        let text = std::fs::read_to_string(folder.unwrap().path().join("dialogues.jsonl")).unwrap();
        assert_eq!(
            text.lines().count(),
            4,
            "each run holds its own four dialogues"
        );
    }
    // While a process holds a folder, another cannot resume it.
    run(&config, &out, &["--run-id", "held"]);
    let held = out.join("held");
    let claim = sage::store::RunDir::open(&held).unwrap().claim().unwrap();
    let o = common::sage(&["run", "--resume", &held.display().to_string(), "--quiet"]);
    assert_eq!(o.status.code(), Some(1));
    let message = stderr(&o);
    assert!(
        message.contains("in use by another process")
            && message.contains(&format!("pid {}", std::process::id())),
        "{message}"
    );
    drop(claim);
    let o = common::sage(&["run", "--resume", &held.display().to_string(), "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn report_keeps_the_first_record_of_a_repeated_dialogue_id_and_says_which() {
    let tmp = tempfile::tempdir().unwrap();
    let config = write(tmp.path(), "run.yaml", &config(3));
    let out = tmp.path().join("out");
    run(&config, &out, &["--run-id", "twice"]);
    let folder = out.join("twice");
    let summary = std::fs::read_to_string(folder.join("summary.json")).unwrap();
    let records = folder.join("dialogues.jsonl");
    let text = std::fs::read_to_string(&records).unwrap();
    let first: Vec<&str> = text.lines().take(2).collect();
    std::fs::write(&records, format!("{text}{}\n", first.join("\n"))).unwrap();
    let o = common::sage(&["report", &folder.display().to_string()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let id = |line: &str| {
        serde_json::from_str::<serde_json::Value>(line).unwrap()["job"]["dialogue_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let message = stderr(&o);
    assert!(
        message.contains("2 records repeat a dialogue id")
            && message.contains(&id(first[0]))
            && message.contains(&id(first[1])),
        "{message}"
    );
    assert_eq!(
        std::fs::read_to_string(folder.join("summary.json")).unwrap(),
        summary,
        "the repeats are not counted"
    );
}

#[test]
fn resume_refuses_records_of_another_configuration_and_a_desk_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let (one, two) = (
        write(tmp.path(), "one.yaml", &config(4)),
        write(tmp.path(), "two.yaml", &config(5)),
    );
    run(&one, &tmp.path().join("a"), &["--run-id", "same"]);
    run(&two, &tmp.path().join("b"), &["--run-id", "same"]);
    let (a, b) = (tmp.path().join("a/same"), tmp.path().join("b/same"));
    // Run a's folder with run b's records (the same ids, other seeds).
    std::fs::copy(b.join("dialogues.jsonl"), a.join("dialogues.jsonl")).unwrap();
    let o = common::sage(&["run", "--resume", &a.display().to_string(), "--quiet"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("was played from another job than this run's"),
        "{}",
        stderr(&o)
    );
    // A support-desk folder is resumed with --suite support-desk.
    let desk = tmp.path().join("desk");
    std::fs::create_dir_all(&desk).unwrap();
    std::fs::write(
        desk.join("manifest.json"),
        r#"{"run_id": "d", "suite": "support-desk"}"#,
    )
    .unwrap();
    let o = common::sage(&["run", "--resume", &desk.display().to_string()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("resume it with `sage run --suite support-desk --resume"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_run_whose_agent_never_answered_fails_and_is_labelled_by_its_configuration() {
    let tmp = tempfile::tempdir().unwrap();
    // A real (OpenAI-compatible) agent behind a customer who never says anything: every
    // dialogue ends before the agent is asked.
    let text = config(6)
        .replace(
            "  - {name: agent, provider: simulated, sim: {kind: agent, profile: balanced}}",
            "  - {name: agent, provider: openai, base_url: \"http://127.0.0.1:9/v1\"}",
        )
        .replace("sim: {kind: user}", "sim: {kind: user, empty_rate: 1.0}");
    let config = write(tmp.path(), "run.yaml", &text);
    let out = tmp.path().join("out");
    let o = common::sage(&[
        "run",
        "--config",
        &config,
        "--out",
        &out.display().to_string(),
        "--run-id",
        "silent",
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("model `agent` never answered: its 4 dialogues"),
        "{}",
        stderr(&o)
    );
    let leaderboard = String::from_utf8_lossy(&o.stdout);
    assert!(!leaderboard.contains("(simulated)"), "{leaderboard}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("silent/summary.json")).unwrap())
            .unwrap();
    assert_eq!(summary["models"][0]["simulated"], false, "{summary}");
}
