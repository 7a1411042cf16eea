//! `sage run` stopped with Ctrl-C (SIGINT): no dialogue starts after it, those in flight
//! finish and are stored whole, the summary covers them, the command that resumes the run is
//! printed, and the resumed run stores every dialogue once: the same records as a run never
//! stopped.

mod common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

fn ids(dir: &std::path::Path) -> Vec<String> {
    common::records_json(dir)
        .iter()
        .map(|r| r["job"]["dialogue_id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn ctrl_c_lets_the_dialogues_in_flight_finish_and_says_how_to_resume() {
    let dir = tempfile::tempdir().unwrap();
    // Every call takes 20 ms: the run lasts long enough to be stopped in the middle.
    let config = common::write_config(dir.path(), "{fixed_ms: 20}", 2, 3);
    let out = dir.path().to_str().unwrap();
    let args = [
        "run",
        "--config",
        &config,
        "--out",
        out,
        "--run-id",
        "stopped",
        "--quiet",
        "--concurrency",
        "8",
    ];
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("sage starts");
    let run = dir.path().join("stopped");
    let records = run.join("dialogues.jsonl");
    // Stopped once a few dialogues are stored.
    let started = Instant::now();
    while std::fs::read_to_string(&records).map_or(0, |t| t.lines().count()) < 10 {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no dialogue stored"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: a signal to the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("stopping: no new dialogue starts"),
        "{stderr}"
    );
    let resume = format!("continue with: sage run --resume {}", run.display());
    assert!(stderr.contains(&resume), "{stderr}");

    // Every line whole, each dialogue once; the summary covers what was stored.
    let stored = ids(&run);
    let plan = common::sage_ok(&["run", "--config", &config, "--plan"]);
    let planned: usize = plan
        .split_whitespace()
        .find_map(|w| w.replace(',', "").parse().ok())
        .expect("the plan's count");
    assert!(
        stored.len() >= 10 && stored.len() < planned,
        "{} of {planned}",
        stored.len()
    );
    assert_eq!(stored.iter().collect::<BTreeSet<_>>().len(), stored.len());
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["dialogues"].as_u64(), Some(stored.len() as u64));

    // Resumed: the rest, every dialogue once, the records a run never stopped stores.
    common::sage_ok(&["run", "--resume", run.to_str().unwrap(), "--quiet"]);
    let resumed = ids(&run);
    assert_eq!(resumed.len(), planned);
    assert_eq!(resumed.iter().collect::<BTreeSet<_>>().len(), planned);
    let whole = common::run_config(std::path::Path::new(&config), dir.path(), "whole");
    let strip = |mut v: Vec<serde_json::Value>| {
        for r in &mut v {
            r["job"]["run_id"] = serde_json::Value::Null;
            // The times measured (each call's latency and wait for a limit) aside.
            let forget = |calls: &mut serde_json::Value| {
                for c in calls.as_array_mut().into_iter().flatten() {
                    c.as_object_mut().unwrap().remove("latency_ms");
                    c.as_object_mut().unwrap().remove("limit_wait_ms");
                }
            };
            if let Some(closing) = r.get_mut("closing_calls") {
                forget(closing);
            }
            for t in r["turns"].as_array_mut().unwrap() {
                forget(&mut t["calls"]);
            }
        }
        v.sort_by_key(|r| r["job"]["dialogue_id"].as_str().unwrap().to_string());
        v
    };
    assert!(strip(common::records_json(&run)) == strip(common::records_json(&whole)));
}
