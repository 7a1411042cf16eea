//! Scores that depend on who played the customer (issue 35): `user_models` plays every case
//! with each customer simulator under the same seed and summary.json's
//! `simulator_sensitivity` gives each model's OA under each; the off-case audit finds a
//! planted customer that states another intent, marks the agent's failures after it, and
//! `sage report DIR --exclude-off-case` leaves those dialogues out, saying how many.

mod common;

use common::{records_json, run_config, sage_ok};
use serde_json::Value;
use std::path::Path;

/// A run configuration: the default run's agents and judges, the customers `customers`
/// (`name: off_case_rate`), the first the run's `user_model`; with `list`, all of them in
/// `user_models`.
fn config(dir: &Path, name: &str, customers: &[(&str, f64)], list: bool) -> std::path::PathBuf {
    let mut text = String::from("models:\n");
    for profile in ["strong", "balanced", "weak"] {
        text.push_str(&format!(
            "  - {{name: sim-{profile}, provider: simulated, sim: {{kind: agent, profile: {profile}}}}}\n"
        ));
    }
    for (customer, rate) in customers {
        text.push_str(&format!(
            "  - {{name: {customer}, provider: simulated, sim: {{kind: user, off_case_rate: {rate}}}}}\n"
        ));
    }
    for (i, noise) in [0.0, 0.03, 0.06].iter().enumerate() {
        text.push_str(&format!(
            "  - {{name: sim-judge-{}, provider: simulated, sim: {{kind: judge, noise: {noise}}}}}\n",
            i + 1
        ));
    }
    text.push_str("service_models: [sim-strong, sim-balanced, sim-weak]\n");
    text.push_str("judge_models: [sim-judge-1, sim-judge-2, sim-judge-3]\n");
    text.push_str("dialogues_per_scenario: 12\nmax_turns: 8\n");
    if list {
        let names: Vec<&str> = customers.iter().map(|(n, _)| *n).collect();
        text.push_str(&format!("user_models: [{}]\n", names.join(", ")));
    } else {
        text.push_str(&format!("user_model: {}\n", customers[0].0));
    }
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, text).expect("config");
    path
}

fn summary(run: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap()
}

/// Each model's OA mean in a summary, by name.
fn oa(summary: &Value) -> Vec<(String, f64)> {
    summary["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["model"].as_str().unwrap().to_string(),
                m["all"]["overall"]["mean"].as_f64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn two_customer_simulators_give_each_model_a_sensitivity() {
    let dir = tempfile::tempdir().unwrap();
    let customers = [("sim-user", 0.0), ("sim-user-drifts", 0.8)];
    let both = config(dir.path(), "both", &customers, true);
    let alone = config(dir.path(), "alone", &customers[..1], false);

    // Counted before it spends: twice the dialogues of the first simulator alone.
    let plan = |c: &Path| -> Value {
        serde_json::from_str(&sage_ok(&[
            "run",
            "--config",
            c.to_str().unwrap(),
            "--plan",
            "--json",
        ]))
        .unwrap()
    };
    let (plan_both, plan_alone) = (plan(&both), plan(&alone));
    assert_eq!(
        plan_both["dialogues"].as_u64().unwrap(),
        2 * plan_alone["dialogues"].as_u64().unwrap()
    );
    assert_eq!(plan_both["customers"], 2);

    let two = run_config(&both, dir.path(), "two");
    let one = run_config(&alone, dir.path(), "one");
    let (s2, s1) = (summary(&two), summary(&one));
    assert_eq!(
        records_json(&two).len(),
        2 * records_json(&one).len(),
        "every case under each simulator"
    );
    // The leaderboard ranks under the first simulator: the same figures as the run with it
    // alone (same seed, same cases).
    assert_eq!(oa(&s2), oa(&s1));
    assert_eq!(s2["simulator"]["name"], "sim-user");
    assert!(s1.get("simulator_sensitivity").is_none());

    let sensitivity = s2["simulator_sensitivity"].as_array().unwrap();
    assert_eq!(sensitivity.len(), 3, "one entry per model under test");
    for model in sensitivity {
        let name = model["model"].as_str().unwrap();
        let sims = model["simulators"].as_array().unwrap();
        let names: Vec<&str> = sims
            .iter()
            .map(|s| s["user_model"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["sim-user", "sim-user-drifts"], "{name}");
        assert_eq!(sims[0]["dialogues"], sims[1]["dialogues"]);
        // Under the first it is the leaderboard's OA.
        let leaderboard = oa(&s2).into_iter().find(|(m, _)| m == name).unwrap().1;
        assert!((sims[0]["oa"]["mean"].as_f64().unwrap() - leaderboard).abs() < 1e-9);
        assert!(sims[0]["difference"].is_null());
        // A customer that states other intents most of the time misleads every agent: its OA
        // drops beyond the noise, and the difference is the two OAs'.
        let d = &sims[1]["difference"];
        let delta = d["delta"].as_f64().unwrap();
        let (under_first, under_second) = (
            sims[0]["oa"]["mean"].as_f64().unwrap(),
            sims[1]["oa"]["mean"].as_f64().unwrap(),
        );
        assert!((delta - (under_second - under_first)).abs() < 1e-9);
        assert!(d["ci_high"].as_f64().unwrap() < 0.0, "{name}: {d}");
        assert!(
            -delta > model["noise_floor"].as_f64().unwrap(),
            "{name}: {model}"
        );
        assert_eq!(sims[1]["moved"], true, "{name}");
    }
    let leaderboard = std::fs::read_to_string(two.join("leaderboard.md")).unwrap();
    assert!(
        leaderboard.contains("Every case was played under 2 customer simulators (sim-user, sim-user-drifts); ranked under the first, sim-user")
            && leaderboard.contains("3 of 3 models moved beyond their noise")
            && leaderboard.contains("## Customer simulators"),
        "{leaderboard}"
    );
}

#[test]
fn the_audit_finds_a_customer_that_states_another_intent() {
    let dir = tempfile::tempdir().unwrap();
    let drifts = config(dir.path(), "drifts", &[("sim-user-drifts", 0.3)], false);
    let faithful = config(dir.path(), "faithful", &[("sim-user", 0.0)], false);
    let run = run_config(&drifts, dir.path(), "drifts");
    let control = run_config(&faithful, dir.path(), "faithful");

    // Every planted line ("To be clear: <another intent's description>.") is found, and nothing
    // else: the faithful customer has none.
    let records = records_json(&run);
    let (mut planted, mut found, mut off_case_dialogues) = (0, 0, 0);
    for r in &records {
        let mut any = false;
        for t in r["turns"].as_array().unwrap() {
            let said = t["user_message"].as_str().unwrap();
            let is_planted = said.starts_with("To be clear: ");
            planted += usize::from(is_planted);
            if let Some(off) = t.get("off_case") {
                found += 1;
                any = true;
                assert!(is_planted, "{said}: {off}");
                assert_ne!(off["intent"], r["job"]["intent"]);
                let field = off["field"].as_str().unwrap();
                let case = r["job"]["fields"]
                    .get(field)
                    .or_else(|| r["job"]["variables"].get(field))
                    .unwrap();
                assert_eq!(
                    off["case_value"].as_str().unwrap(),
                    case.to_string().trim_matches('"')
                );
            }
        }
        off_case_dialogues += usize::from(any);
    }
    assert!(planted > 50, "{planted} planted lines");
    assert_eq!(found, planted, "every planted line found");
    for r in records_json(&control) {
        for t in r["turns"].as_array().unwrap() {
            assert!(t.get("off_case").is_none(), "a faithful customer: {t}");
        }
    }

    // Counted per customer model, and the failures after them marked per model under test.
    let s = summary(&run);
    let by_customer = s["customer_fidelity"]["by_customer"].as_array().unwrap();
    let lines: u64 = by_customer
        .iter()
        .map(|f| f["off_case_lines"].as_u64().unwrap())
        .sum();
    assert_eq!(lines as usize, found);
    for f in s["customer_fidelity"]["by_agent"].as_array().unwrap() {
        let (after, failures) = (
            f["failures_after_off_case"].as_u64().unwrap(),
            f["failures"].as_u64().unwrap(),
        );
        assert!(after > 0 && after < failures, "{f}");
        let share = f["possibly_simulator"].as_f64().unwrap();
        assert!((share - 100.0 * after as f64 / failures as f64).abs() < 1e-9);
    }
    let control_summary = summary(&control);
    for f in control_summary["customer_fidelity"]["by_agent"]
        .as_array()
        .unwrap()
    {
        assert_eq!(f["failures_after_off_case"], 0);
        assert_eq!(f["possibly_simulator"], 0.0);
    }
    // `sage show` names the finding under the line.
    let id = records
        .iter()
        .find(|r| {
            r["turns"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t.get("off_case").is_some())
        })
        .unwrap()["job"]["dialogue_id"]
        .as_str()
        .unwrap()
        .to_string();
    let shown = sage_ok(&["show", run.to_str().unwrap(), &id]);
    assert!(shown.contains("off-case: says intent "), "{shown}");

    // Left out on request, saying how many; counted back without the flag.
    let before = oa(&s);
    sage_ok(&["report", run.to_str().unwrap(), "--exclude-off-case"]);
    let leaderboard = std::fs::read_to_string(run.join("leaderboard.md")).unwrap();
    assert!(
        leaderboard.contains(&format!(
            "Left out (--exclude-off-case): {off_case_dialogues} dialogues in which the customer went off-case"
        )),
        "{leaderboard}"
    );
    let without = summary(&run);
    assert_eq!(without["off_case_excluded"], off_case_dialogues);
    assert_eq!(
        without["dialogues"].as_u64().unwrap() as usize,
        records.len() - off_case_dialogues
    );
    // The misled turns gone, every agent scores higher.
    for ((model, a), (_, b)) in before.iter().zip(oa(&without)) {
        assert!(b > *a, "{model}: {a} -> {b}");
    }
    sage_ok(&["report", run.to_str().unwrap()]);
    let again = summary(&run);
    assert!(again.get("off_case_excluded").is_none());
    assert_eq!(oa(&again), before);
}
