//! A run killed with SIGKILL mid-way and resumed gives the same results as an uninterrupted run
//! with the same seed: no finished dialogue lost, none repeated.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CONFIG: &str = r#"
models:
  - {name: agent, provider: simulated, sim: {kind: agent, profile: balanced, latency: {fixed_ms: 3}}}
  - {name: user, provider: simulated, sim: {kind: user}}
  - {name: j1, provider: simulated, sim: {kind: judge}}
  - {name: j2, provider: simulated, sim: {kind: judge, noise: 0.05}}
  - {name: j3, provider: simulated, sim: {kind: judge, noise: 0.1}}
service_models: [agent]
user_model: user
judge_models: [j1, j2, j3]
scenarios: [scenarios/telecom_package.yaml, scenarios/online_education.yaml]
dialogues_per_scenario: 40
max_turns: 8
seed: 11
concurrency: 4
"#;

fn sage(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sage"));
    c.args(args).current_dir(env!("CARGO_MANIFEST_DIR"));
    c
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// The records without what depends on timing (latencies, waits for a limit), keyed and sorted
/// by dialogue id.
fn records(dir: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join("dialogues.jsonl")).unwrap();
    let mut out: Vec<serde_json::Value> = text
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["job"]["run_id"] = serde_json::Value::Null;
            for t in v["turns"].as_array_mut().unwrap() {
                for c in t["calls"].as_array_mut().unwrap() {
                    c["latency_ms"] = 0.into();
                    if let Some(c) = c.as_object_mut() {
                        c.remove("limit_wait_ms");
                    }
                }
            }
            v
        })
        .collect();
    out.sort_by(|a, b| {
        a["job"]["dialogue_id"]
            .as_str()
            .cmp(&b["job"]["dialogue_id"].as_str())
    });
    out
}

#[test]
fn killed_and_resumed_equals_uninterrupted() {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("run.yaml");
    std::fs::write(&config, CONFIG).unwrap();
    let out = tmp.path().to_str().unwrap();
    let config = config.to_str().unwrap();

    // The reference: one uninterrupted run.
    let status = sage(&[
        "run", "--config", config, "--out", out, "--run-id", "whole", "--quiet",
    ])
    .stdout(Stdio::null())
    .status()
    .unwrap();
    assert!(status.success());
    let whole = tmp.path().join("whole");
    let total = lines(&whole.join("dialogues.jsonl"));
    assert!(total > 60, "{total} dialogues");

    // The same run, killed with SIGKILL part-way.
    // Killed when dropped, so a failing assertion never leaves it running.
    struct KillOnDrop(std::process::Child);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = KillOnDrop(
        sage(&[
            "run", "--config", config, "--out", out, "--run-id", "cut", "--quiet",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap(),
    );
    let cut = tmp.path().join("cut");
    let started = Instant::now();
    while lines(&cut.join("dialogues.jsonl")) < 10 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the run made no progress"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    child.0.kill().unwrap();
    child.0.wait().unwrap();
    let done_before = lines(&cut.join("dialogues.jsonl"));
    assert!(
        done_before < total,
        "killed too late to test anything ({done_before} of {total})"
    );

    // Resuming with changed scenarios is refused (the jobs would change under the run).
    let manifest = cut.join("manifest.json");
    let original = std::fs::read_to_string(&manifest).unwrap();
    let mut tampered: serde_json::Value = serde_json::from_str(&original).unwrap();
    tampered["scenarios"][0][1] = "0000".into();
    std::fs::write(&manifest, tampered.to_string()).unwrap();
    let refused = sage(&["run", "--resume", cut.to_str().unwrap(), "--quiet"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("the scenarios changed"));
    std::fs::write(&manifest, original).unwrap();

    let status = sage(&["run", "--resume", cut.to_str().unwrap(), "--quiet"])
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());

    let (a, b) = (records(&whole), records(&cut));
    assert_eq!(a.len(), b.len(), "every dialogue exactly once");
    assert!(a == b, "resumed records differ from the uninterrupted run");
    let summary = |d: &Path| std::fs::read_to_string(d.join("summary.json")).unwrap();
    assert_eq!(summary(&whole), summary(&cut));
    assert_eq!(
        std::fs::read_to_string(whole.join("leaderboard.md")).unwrap(),
        std::fs::read_to_string(cut.join("leaderboard.md")).unwrap()
    );

    // `sage report` rebuilds both files from dialogues.jsonl alone.
    std::fs::remove_file(whole.join("summary.json")).unwrap();
    std::fs::remove_file(whole.join("leaderboard.md")).unwrap();
    let report = sage(&["report", whole.to_str().unwrap()]).output().unwrap();
    assert!(report.status.success());
    assert!(String::from_utf8_lossy(&report.stdout).contains("agent (simulated)"));
    assert_eq!(summary(&whole), summary(&cut));

    // `sage export`: training data from the turns whose logic reaches the threshold (every
    // scored answer at 0; by default the fully correct ones).
    let all = sage(&[
        "export",
        whole.to_str().unwrap(),
        "--format",
        "openai",
        "--min-logic",
        "0",
    ])
    .output()
    .unwrap();
    let good = sage(&[
        "export",
        whole.to_str().unwrap(),
        "--format",
        "openai",
        "--min-logic",
        "90",
    ])
    .output()
    .unwrap();
    assert!(all.status.success() && good.status.success());
    let examples = |o: &std::process::Output| -> Vec<serde_json::Value> {
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let (all, good) = (examples(&all), examples(&good));
    assert!(
        !good.is_empty() && good.len() < all.len(),
        "{} of {}",
        good.len(),
        all.len()
    );
    for ex in &good {
        let messages = ex["messages"].as_array().unwrap();
        assert_eq!(messages[0]["role"], "system");
        assert!(messages[0]["content"].as_str().unwrap().contains("step1"));
        // The context is what the agent saw: its chat replies, never its parsed JSON answers
        // (a broken answer the user saw raw stays raw).
        for m in &messages[1..messages.len() - 1] {
            let content = m["content"].as_str().unwrap();
            let parsed = serde_json::from_str::<serde_json::Value>(content).ok();
            assert!(parsed.is_none_or(|v| v.get("finals").is_none()), "{m}");
        }
        let last = messages.last().unwrap();
        assert_eq!(last["role"], "assistant");
        let answer: serde_json::Value =
            serde_json::from_str(last["content"].as_str().unwrap()).unwrap();
        assert!(answer["finals"]["Action"].is_string());
    }
    let file = tmp.path().join("train.json");
    let sharegpt = sage(&[
        "export",
        whole.to_str().unwrap(),
        "--format",
        "sharegpt",
        "--min-logic",
        "90",
        "--out",
    ])
    .arg(&file)
    .output()
    .unwrap();
    assert!(sharegpt.status.success());
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v.as_array().unwrap().len(), good.len());
    assert_eq!(v[0]["conversations"][0]["from"], "system");
}
