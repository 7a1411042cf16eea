//! `sage rescore`: stored dialogues graded again with no model call, against the run's
//! scenarios or a corrected one (issue 22).

mod common;

use common::sage_ok;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

fn changed(dir: &Path) -> BTreeSet<String> {
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("rescore.json")).expect("file"))
            .expect("json");
    file["changed"]
        .as_array()
        .expect("changed")
        .iter()
        .map(|c| c["dialogue_id"].as_str().expect("id").to_string())
        .collect()
}

#[test]
fn rescore_reproduces_an_unchanged_run_and_follows_a_corrected_route() {
    let dir = tempfile::tempdir().expect("dir");
    let out = dir.path().display().to_string();
    sage_ok(&[
        "run",
        "--dialogues",
        "4",
        "--max-turns",
        "6",
        "--out",
        &out,
        "--run-id",
        "base",
    ]);
    let base = dir.path().join("base");

    // Unchanged: the same summary, to the byte, and nothing graded differently.
    let same = dir.path().join("same");
    let printed = sage_ok(&[
        "rescore",
        &base.display().to_string(),
        "--out",
        &same.display().to_string(),
    ]);
    assert!(printed.contains("0 graded differently"), "{printed}");
    let summary = |d: &Path| std::fs::read_to_string(d.join("summary.json")).expect("summary");
    assert!(summary(&base) == summary(&same), "the summaries differ");
    assert!(changed(&same).is_empty());

    // The emotion branch of the Telecom SOP corrected: a discontent customer is now said
    // goodbye to instead of transferred. Exactly the dialogues with a judged turn whose
    // reference ended in the transfer change, and only their Telecom turns.
    let file = common::telecom_discontent(dir.path(), "telecom_corrected", "GoodBye");
    let expected: BTreeSet<String> = common::records_json(&base)
        .iter()
        .filter(|r| r["job"]["scenario"] == "telecom_package")
        .filter(|r| {
            r["turns"].as_array().expect("turns").iter().any(|t| {
                t["infra_error"].is_null() && t["reference"]["Ok"]["action"] == "TransHuman"
            })
        })
        .map(|r| r["job"]["dialogue_id"].as_str().expect("id").to_string())
        .collect();
    assert!(
        !expected.is_empty(),
        "no dialogue reached the transfer: a larger run is needed"
    );
    let corrected = dir.path().join("corrected");
    let printed = sage_ok(&[
        "rescore",
        &base.display().to_string(),
        "--scenario",
        &file.display().to_string(),
        "--out",
        &corrected.display().to_string(),
    ]);
    assert!(
        printed.contains("scenario `telecom_package` changed"),
        "{printed}"
    );
    assert_eq!(changed(&corrected), expected);
    // The new folder stands on its own: its manifest names the scenarios it was graded with.
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(corrected.join("manifest.json")).expect("manifest"),
    )
    .expect("json");
    assert_eq!(manifest["run_id"], "corrected");
    // `sage report` rebuilds the same summary from the rescored records, with no warning
    // about the scenarios.
    let written = summary(&corrected);
    let report = common::sage(&["report", &corrected.display().to_string()]);
    assert!(report.status.success());
    assert_eq!(String::from_utf8_lossy(&report.stderr), "");
    assert!(
        summary(&corrected) == written,
        "sage report rebuilt another summary"
    );
    assert!(summary(&base) != written, "the correction changed no score");

    // Compare refuses to set runs graded against different scenario texts side by side,
    // unless asked, or unless the current run is the rescore of the baseline (what the
    // correction changed is then the point: tests/compare.rs); the other way round it is not.
    let (a, b) = (corrected.display().to_string(), base.display().to_string());
    let refused = common::sage(&["report", &b, "--compare", &a]);
    assert!(!refused.status.success());
    let why = String::from_utf8_lossy(&refused.stderr);
    assert!(
        why.contains("scenario `telecom_package` has another text in each run")
            && why.contains("--allow-scenario-change"),
        "{why}"
    );
    sage_ok(&["report", &b, "--compare", &a, "--allow-scenario-change"]);
    sage_ok(&["report", &a, "--compare", &b]);
    sage_ok(&["report", &same.display().to_string(), "--compare", &b]);

    // summary.json names the scenario texts it was scored against: the corrected one's hash.
    let hashes = |d: &Path| -> Value {
        serde_json::from_str::<Value>(&summary(d)).expect("json")["scenario_sha256"].clone()
    };
    assert_eq!(hashes(&base), manifest_hashes(&base));
    assert_eq!(hashes(&corrected), manifest_hashes(&corrected));
    assert_ne!(
        hashes(&corrected)["telecom_package"],
        hashes(&base)["telecom_package"]
    );

    // A correction that merges two routes (a discontent customer's contract change is made,
    // not transferred) plans other cases from the scenario; the rescored folder still reports
    // every stored dialogue, with no warning.
    let file = common::telecom_discontent(dir.path(), "telecom_merged", "ChangeOrder");
    let fewer = dir.path().join("fewer");
    sage_ok(&[
        "rescore",
        &b,
        "--scenario",
        &file.display().to_string(),
        "--out",
        &fewer.display().to_string(),
    ]);
    let report = common::sage(&["report", &fewer.display().to_string()]);
    assert!(report.status.success());
    assert_eq!(String::from_utf8_lossy(&report.stderr), "");
    let dialogues =
        |d: &Path| serde_json::from_str::<Value>(&summary(d)).expect("json")["dialogues"].clone();
    assert_eq!(dialogues(&fewer), dialogues(&base));
}

/// The scenario hashes a folder's manifest names, as an object.
fn manifest_hashes(dir: &Path) -> Value {
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("manifest.json")).expect("manifest"),
    )
    .expect("json");
    manifest["scenarios"]
        .as_array()
        .expect("pairs")
        .iter()
        .map(|p| (p[0].as_str().expect("id").to_string(), p[1].clone()))
        .collect::<serde_json::Map<_, _>>()
        .into()
}
