//! Results folders against concurrent writers and hostile input, through the built binary:
//! one process writes a folder at a time (a lock), default run ids never collide, a run id is
//! always one folder under `--out`, `sage report` copes with repeated dialogue ids, `--resume`
//! refuses records of another configuration or another suite's folder, a run whose agent
//! never answered fails, labelled by its configuration; every name is checked before a folder
//! is created, `sage report` refuses a folder without records, and a finished folder holds no
//! `.lock` (a stale one is taken over).

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
    let o = attempt(config, out, args);
    assert!(o.status.success(), "sage run {args:?}: {}", stderr(&o));
    o
}

/// `sage run --config CONFIG --out OUT --quiet ARGS`, whatever its outcome.
fn attempt(config: &str, out: &Path, args: &[&str]) -> Output {
    let out_s = out.display().to_string();
    let mut all = vec!["run", "--config", config, "--out", &out_s, "--quiet"];
    all.extend(args);
    common::sage(&all)
}

/// Two runs of the same id and configuration but for the seeds, under `dir/a` and `dir/b`:
/// their folders (the same dialogue ids, other jobs).
fn two_runs_of_one_id(dir: &Path, seeds: (u64, u64)) -> (std::path::PathBuf, std::path::PathBuf) {
    let (one, two) = (
        write(dir, "one.yaml", &config(seeds.0)),
        write(dir, "two.yaml", &config(seeds.1)),
    );
    run(&one, &dir.join("a"), &["--run-id", "same"]);
    run(&two, &dir.join("b"), &["--run-id", "same"]);
    (dir.join("a/same"), dir.join("b/same"))
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
    let (a, b) = two_runs_of_one_id(tmp.path(), (4, 5));
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
    let o = attempt(&config, &out, &["--run-id", "silent"]);
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

#[test]
fn a_run_whose_judges_never_answered_fails_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    // Judges behind a port nothing listens on, one attempt each: no turn gets a verdict.
    let mut text = config(7);
    for judge in ["j1", "j2", "j3"] {
        text = text.replace(
            &format!("  - {{name: {judge}, provider: simulated, sim: {{kind: judge}}}}"),
            &format!(
                "  - {{name: {judge}, provider: openai, base_url: \"http://127.0.0.1:9/v1\", retries: {{max_attempts: 1}}}}"
            ),
        );
    }
    assert!(!text.contains("kind: judge"), "{text}");
    let config = write(tmp.path(), "run.yaml", &text);
    let out = tmp.path().join("out");
    let o = attempt(&config, &out, &["--run-id", "unjudged"]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("no judge ever answered: ")
            && err.contains(
                " turns were sent to the judges and none came back with a verdict (first error: "
            )
            && err.contains("the scores are empty where these were needed"),
        "{err}"
    );
    // The results are written all the same.
    assert!(out.join("unjudged/summary.json").exists());
}

/// `sage run ARGS`, which must fail with exit 1: its standard error.
fn refused(args: &[&str]) -> String {
    let o = common::sage(args);
    assert_eq!(o.status.code(), Some(1), "sage {args:?}: {}", stderr(&o));
    stderr(&o)
}

#[test]
fn names_are_checked_before_a_results_folder_is_created() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let out_s = out.display().to_string();
    // (change to the configuration, extra flags, what the message must say)
    let cases: [(&str, &str, &[&str], &str); 5] = [
        (
            "profile: balanced",
            "profile: balanse",
            &[],
            "model agent: sim.profile is `balanse`; expected one of: strong, balanced, weak",
        ),
        (
            "judge_models: [j1, j2, j3]",
            "judge_models: [j1, agent, j3]",
            &[],
            "judge_models: `agent` is a simulated model of kind `agent`; expected a real model or one of sim kind `judge`",
        ),
        (
            "user_model: user",
            "user_model: j1",
            &[],
            "user_model: `j1` is a simulated model of kind `judge`; expected a real model or one of sim kind `user`",
        ),
        (
            "  - {name: agent, provider: simulated, sim: {kind: agent, profile: balanced}}",
            "  - {name: agent, provider: openai, base_url: \"http://127.0.0.1:9/v1\", api_key_env: SAGE_TEST_KEY_NOT_SET}",
            &[],
            "model `agent`: the API key variable SAGE_TEST_KEY_NOT_SET is not set",
        ),
        (
            "",
            "",
            &["--max-cost-usd-per-model", "agnet=1"],
            "--max-cost-usd-per-model: `agnet` is not a model under test; expected one of: agent",
        ),
    ];
    for (from, to, flags, message) in cases {
        let text = config(8).replace(from, to);
        assert!(from.is_empty() || text != config(8), "{from}");
        let config = write(tmp.path(), "run.yaml", &text);
        let mut args = vec!["run", "--config", &config, "--out", &out_s, "--quiet"];
        args.extend(flags);
        let err = refused(&args);
        assert!(err.contains(message), "{message}\nnot in\n{err}");
        // Said once: no second prefix naming the model or the kind of error again.
        assert!(
            !err.contains("configuration: ") && !err.contains("model agent: model"),
            "{err}"
        );
        assert!(!out.exists(), "{message}: the results folder was created");
    }
    // The support-desk suite sets its models up before it creates a folder too.
    let desk = common::write_desk_config(tmp.path(), "{fixed_ms: 0}");
    let text = std::fs::read_to_string(&desk).unwrap();
    let changed = text.replace(
        "  - {name: agent, provider: simulated, sim: {kind: desk_agent, skills: {unsafe_propensity: 0.2, resolve: 0.9}, latency: {fixed_ms: 0}}}",
        "  - {name: agent, provider: openai, base_url: \"http://127.0.0.1:9/v1\", api_key_env: SAGE_TEST_KEY_NOT_SET}",
    );
    assert_ne!(text, changed);
    std::fs::write(&desk, changed).unwrap();
    let err = refused(&[
        "run",
        "--suite",
        "support-desk",
        "--config",
        &desk,
        "--out",
        &out_s,
        "--quiet",
    ]);
    assert!(
        err.contains("model `agent`: the API key variable SAGE_TEST_KEY_NOT_SET is not set"),
        "{err}"
    );
    assert!(!out.exists(), "a support-desk folder was created");
}

#[test]
fn report_on_a_folder_without_dialogues_fails_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let config = write(tmp.path(), "run.yaml", &config(9));
    let out = tmp.path().join("out");
    run(&config, &out, &["--run-id", "empty"]);
    let folder = out.join("empty");
    let dir = folder.display().to_string();
    let summary = std::fs::read_to_string(folder.join("summary.json")).unwrap();
    let message = format!(
        "{dir}: no dialogue stored in dialogues.jsonl (the run has not finished one yet, or its records are gone); nothing to report"
    );
    // Empty, only a cut-off line, then missing.
    for records in [Some(""), Some("{\"job\": {\"run_id\""), None] {
        match records {
            Some(text) => std::fs::write(folder.join("dialogues.jsonl"), text).unwrap(),
            None => std::fs::remove_file(folder.join("dialogues.jsonl")).unwrap(),
        }
        for html in [false, true] {
            let mut args = vec!["report", dir.as_str()];
            if html {
                args.push("--html");
            }
            let o = common::sage(&args);
            assert_eq!(o.status.code(), Some(1), "{args:?} {records:?}");
            assert!(stderr(&o).contains(&message), "{}", stderr(&o));
            assert!(o.stdout.is_empty(), "no table printed");
        }
        assert_eq!(
            std::fs::read_to_string(folder.join("summary.json")).unwrap(),
            summary,
            "the summary is left as it was"
        );
    }
}

#[test]
fn a_finished_folder_holds_no_lock_and_a_stale_one_is_taken_over() {
    let tmp = tempfile::tempdir().unwrap();
    let config = write(tmp.path(), "run.yaml", &config(10));
    let out = tmp.path().join("out");
    run(&config, &out, &["--run-id", "done"]);
    let folder = out.join("done");
    let lock = folder.join(".lock");
    assert!(!lock.exists(), "a finished run leaves no .lock");
    let dir = folder.display().to_string();
    let o = common::sage(&["run", "--resume", &dir, "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!lock.exists(), "a finished resume leaves no .lock");
    // A killed process leaves its .lock, unlocked: the next run takes it over, then removes it.
    std::fs::write(&lock, "pid 999999 since 2026-01-01T00:00:00Z\n").unwrap();
    let o = common::sage(&["run", "--resume", &dir, "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!lock.exists(), "the stale .lock is gone after the run");
    // While a process holds the folder, its .lock is there and another process is refused.
    let claim = sage::store::RunDir::open(&folder).unwrap().claim().unwrap();
    assert!(lock.exists());
    let err = refused(&["run", "--resume", &dir, "--quiet"]);
    assert!(err.contains("in use by another process"), "{err}");
    assert!(
        lock.exists(),
        "the refused process leaves the holder's .lock"
    );
    drop(claim);
    assert!(!lock.exists(), "let go, the claim removes its .lock");
    let o = common::sage(&["report", &dir, "--html"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!lock.exists());
}

/// `sage report` on the folder of a run in progress is refused (the run holds the folder; its
/// summary is not rewritten under it), and works once the run is gone.
#[test]
fn report_leaves_a_run_in_progress_alone() {
    let tmp = tempfile::tempdir().unwrap();
    // Slow models: the run is still going when the report is asked for.
    let text = config(12).replace(
        "sim: {kind: agent, profile: balanced}",
        "sim: {kind: agent, profile: balanced, latency: {uniform_ms: [300, 400]}}",
    );
    assert_ne!(text, config(12));
    let config = write(tmp.path(), "run.yaml", &text);
    let out = tmp.path().join("out");
    let mut running = Command::new(env!("CARGO_BIN_EXE_sage"))
        .args([
            "run", "--config", &config, "--run-id", "busy", "--quiet", "--out",
        ])
        .arg(&out)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("sage run starts");
    let folder = out.join("busy");
    let records = folder.join("dialogues.jsonl");
    let started = std::time::Instant::now();
    while std::fs::read_to_string(&records).map_or(true, |t| t.lines().count() < 1) {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "the run stored nothing"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let folder_arg = folder.display().to_string();
    let o = common::sage(&["report", &folder_arg]);
    let still_running = running.try_wait().expect("wait").is_none();
    let _ = running.kill();
    let _ = running.wait();
    assert!(
        still_running,
        "the run ended before the report was asked for"
    );
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("{folder_arg}: in use by another process")),
        "{}",
        stderr(&o)
    );
    assert!(
        !folder.join("summary.json").exists(),
        "a summary was written"
    );
    // The run is gone (killed): the folder is free, and the report is written.
    common::sage_ok(&["report", &folder_arg]);
    assert!(folder.join("summary.json").exists());
}

#[test]
fn report_leaves_out_records_not_of_the_run_and_says_which() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = two_runs_of_one_id(tmp.path(), (6, 7));
    let summary = std::fs::read_to_string(a.join("summary.json")).unwrap();
    let own = std::fs::read_to_string(a.join("dialogues.jsonl")).unwrap();
    let theirs = std::fs::read_to_string(b.join("dialogues.jsonl")).unwrap();
    let record = |line: &str| serde_json::from_str::<serde_json::Value>(line).unwrap();
    // Run b's first record (the same id as one of run a's, another seed) before run a's own,
    // then a record of no planned id and one naming another run.
    let other_job = theirs.lines().next().unwrap();
    let mut unknown = record(other_job);
    unknown["job"]["dialogue_id"] = "telecom_package/9999/agent/r0".into();
    let mut other_run = record(own.lines().nth(1).unwrap());
    other_run["job"]["run_id"] = "elsewhere".into();
    std::fs::write(
        a.join("dialogues.jsonl"),
        format!("{other_job}\n{own}{unknown}\n{other_run}\n"),
    )
    .unwrap();
    let o = common::sage(&["report", &a.display().to_string()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let message = stderr(&o);
    let id = record(other_job)["job"]["dialogue_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("3 records are not of the run in manifest.json")
            && message.contains(&format!(
                "dialogue `{id}` was played from another job than this run's"
            ))
            && message
                .contains("dialogue `telecom_package/9999/agent/r0` is not a job of this run")
            && message.contains("belongs to run `elsewhere`"),
        "{message}"
    );
    assert_eq!(
        std::fs::read_to_string(a.join("summary.json")).unwrap(),
        summary,
        "the records not of the run are not counted"
    );
}

/// `sage report DIR --html --out FILE` only reads the folder: it works on a folder it cannot
/// write (as an unprivileged user when the tests run as root, who could write anyway) and
/// leaves it as it was, while `sage report DIR` there fails with the folder named.
#[test]
fn report_html_out_elsewhere_reads_a_read_only_folder_and_writes_the_page_alone() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let config = write(tmp.path(), "run.yaml", &config(8));
    let out = tmp.path().join("out");
    run(&config, &out, &["--run-id", "shared"]);
    let folder = out.join("shared");
    let mode = |path: &Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    let snapshot = |dir: &Path| {
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        files.sort();
        files
    };
    for entry in std::fs::read_dir(&folder).unwrap() {
        mode(&entry.unwrap().path(), 0o444);
    }
    mode(&folder, 0o555);
    mode(tmp.path(), 0o755);
    mode(&out, 0o755);
    let pages = tmp.path().join("pages");
    std::fs::create_dir(&pages).unwrap();
    mode(&pages, 0o777);
    let before = snapshot(&folder);
    let as_reader = |args: &[&str]| {
        let mut command = if unsafe { libc::geteuid() } == 0 {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .arg(env!("CARGO_BIN_EXE_sage"));
            c
        } else {
            Command::new(env!("CARGO_BIN_EXE_sage"))
        };
        command
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("sage runs")
    };
    let folder_arg = folder.display().to_string();
    let page = pages.join("shared.html");
    let o = as_reader(&[
        "report",
        &folder_arg,
        "--html",
        "--out",
        &page.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let printed = String::from_utf8_lossy(&o.stdout);
    assert!(
        printed.contains(&format!("report: {}", page.display())),
        "{printed}"
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<html") && html.contains("shared"), "no page");
    assert_eq!(snapshot(&folder), before, "the folder was changed");
    // Rewriting the folder's own files needs the folder.
    let o = as_reader(&["report", &folder_arg]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains(&folder_arg), "{}", stderr(&o));
    assert_eq!(snapshot(&folder), before, "the folder was changed");
    mode(&folder, 0o755);
}

/// A last line cut off by a killed run (no line break, its JSON ending early) is skipped; any
/// other bad last line is an error naming it, as a bad line anywhere else is.
#[test]
fn only_a_cut_off_last_line_is_skipped() {
    let tmp = tempfile::tempdir().unwrap();
    let config = write(tmp.path(), "run.yaml", &config(10));
    let out = tmp.path().join("out");
    run(&config, &out, &["--run-id", "tail"]);
    let folder = out.join("tail");
    let records = folder.join("dialogues.jsonl");
    let whole = std::fs::read_to_string(&records).unwrap();
    let summary = std::fs::read_to_string(folder.join("summary.json")).unwrap();
    let first = whole.lines().next().unwrap();
    let folder_arg = folder.display().to_string();
    // Cut off half-way: skipped, the summary unchanged.
    std::fs::write(&records, format!("{whole}{}", &first[..first.len() / 2])).unwrap();
    let o = common::sage(&["report", &folder_arg]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(folder.join("summary.json")).unwrap(),
        summary
    );
    let n = whole.lines().count() + 1;
    for (tail, what) in [
        ("{\"job\": nonsense}\n", "a whole line that is not a record"),
        ("not json at all", "a last line that is no record cut short"),
        (
            &format!("{}\n", &first[..first.len() / 2])[..],
            "a cut record followed by a line break",
        ),
    ] {
        std::fs::write(&records, format!("{whole}{tail}")).unwrap();
        let o = common::sage(&["report", &folder_arg]);
        assert_eq!(o.status.code(), Some(1), "{what}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("line {n}:")),
            "{what}: {}",
            stderr(&o)
        );
    }
}
