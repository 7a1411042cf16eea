//! `sage judges calibrate`: a run's judge panel against people's labels. The labels here are
//! made from the records (a person who agrees with the first judge everywhere), so every figure
//! is known beforehand: that judge's accuracy and kappa are 1, the others' accuracy is their
//! agreement with it, and the corrected Logic is the judged mean moved by the labelled turns'
//! differences (issue 22).

mod common;

use common::{sage, sage_ok};
use serde_json::{Value, json};

/// Mean of `xs`.
fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// The default run's models on two cases a scenario, six turns at most: its folder `r` in a
/// temporary folder.
fn small_run() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("dir");
    let out = dir.path().display().to_string();
    sage_ok(&[
        "run",
        "--quiet",
        "--dialogues",
        "2",
        "--max-turns",
        "6",
        "--out",
        &out,
        "--run-id",
        "r",
    ]);
    let run = dir.path().join("r");
    (dir, run)
}

#[test]
fn calibration_against_a_person_who_agrees_with_the_first_judge() {
    let (dir, run) = small_run();
    let stored = common::records_json(&run);

    // Every third scored turn labelled by "ana" with the first judge's fields and chat scores.
    let mut labels = String::new();
    let mut scored = 0;
    let (mut agree2, mut fields2, mut agree_panel) = (0usize, 0usize, 0usize);
    let mut unlabelled: Vec<(String, f64)> = Vec::new();
    let mut differences: Vec<(String, f64, f64)> = Vec::new();
    for r in &stored {
        let model = r["job"]["service_model"].as_str().unwrap().to_string();
        for t in r["turns"].as_array().unwrap() {
            let Some(logic) = t["scores"]["logic"].as_f64() else {
                continue;
            };
            scored += 1;
            let judgments = t["judges"]["judgments"].as_array().unwrap();
            let first = &judgments[0]["Ok"];
            if scored % 3 != 0 || first.is_null() {
                unlabelled.push((model.clone(), logic));
                continue;
            }
            let fields = first["classification"].as_object().unwrap();
            let consensus = t["judges"]["consensus"].as_object().unwrap();
            for (k, v) in fields {
                fields2 += 1;
                agree2 += usize::from(judgments[1]["Ok"]["classification"][k] == *v);
                agree_panel += usize::from(consensus[k] == *v);
            }
            // Where the person agrees with the consensus the turn's Logic stands; only turns
            // where the first judge was outvoted can move it (checked below only for those).
            let same = fields.iter().all(|(k, v)| consensus[k] == *v);
            differences.push((model.clone(), logic, if same { 0.0 } else { f64::NAN }));
            labels.push_str(
                &json!({
                    "run_id": "r",
                    "dialogue_id": r["job"]["dialogue_id"],
                    "turn": t["turn"],
                    "labeller": "ana",
                    "classification": first["classification"],
                    "chat": first["chat"],
                })
                .to_string(),
            );
            labels.push('\n');
        }
    }
    // A label of no judged turn, and one with a value its scenario lacks: left out, said why.
    let any = &stored[0];
    labels.push_str(
        &json!({"dialogue_id": "nowhere/0001", "turn": 1, "labeller": "ana", "classification": {"X": "Y"}})
            .to_string(),
    );
    labels.push('\n');
    let first_judged = any["turns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["scores"].is_object())
        .expect("a scored turn");
    let field = first_judged["judges"]["consensus"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    labels.push_str(
        &json!({"dialogue_id": any["job"]["dialogue_id"], "turn": first_judged["turn"], "labeller": "bo", "classification": {field.clone(): "NotAnOption"}})
            .to_string(),
    );
    labels.push('\n');
    let file = dir.path().join("labels.jsonl");
    std::fs::write(&file, &labels).expect("labels");
    let labelled = differences.len();
    assert!(labelled >= 10, "{labelled} labelled turns");

    let printed = sage_ok(&[
        "judges",
        "calibrate",
        &run.display().to_string(),
        "--labels",
        &file.display().to_string(),
    ]);
    assert!(printed.contains("judge vs people"), "{printed}");
    let c: Value = serde_json::from_str(
        &std::fs::read_to_string(run.join("calibration.json")).expect("calibration.json"),
    )
    .expect("json");
    assert_eq!(c["turns"], labelled);
    assert_eq!(c["labels"], labelled + 2);
    assert_eq!(c["unmatched_count"], 2, "{}", c["unmatched"]);
    let why = c["unmatched"].to_string();
    assert!(
        why.contains("no judged turn") && why.contains("NotAnOption"),
        "{why}"
    );
    let judge = |name: &str| {
        c["judges"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["judge"] == name)
            .unwrap_or_else(|| panic!("{name} in {}", c["judges"]))
            .clone()
    };
    let one = judge("sim-judge-1");
    assert_eq!(one["classification_accuracy"], 1.0);
    assert_eq!(one["chat_accuracy"], 1.0);
    assert_eq!(one["kappa"], 1.0);
    let two = judge("sim-judge-2");
    let expected2 = agree2 as f64 / fields2 as f64;
    assert!(
        (two["classification_accuracy"].as_f64().unwrap() - expected2).abs() < 1e-12,
        "{two} vs {expected2}"
    );
    let panel = judge("panel");
    let expected_panel = agree_panel as f64 / fields2 as f64;
    assert!((panel["classification_accuracy"].as_f64().unwrap() - expected_panel).abs() < 1e-12);
    assert!(c["alpha_classification"].as_f64().unwrap() > 0.5, "{c}");

    // Each model's Logic, strata weighted by size: where the person agrees with the consensus
    // on every labelled turn, no stratum moves and the estimate is the judged mean of all turns.
    for l in c["logic"].as_array().unwrap() {
        let model = l["model"].as_str().unwrap();
        let f: Vec<f64> = unlabelled
            .iter()
            .filter(|(m, _)| m == model)
            .map(|(_, x)| *x)
            .collect();
        let labelled: Vec<&(String, f64, f64)> =
            differences.iter().filter(|(m, _, _)| m == model).collect();
        assert_eq!(l["ppi"]["unlabelled"], f.len());
        assert_eq!(l["ppi"]["labelled"], labelled.len());
        let all: Vec<f64> = f
            .iter()
            .copied()
            .chain(labelled.iter().map(|d| d.1))
            .collect();
        assert!((l["ppi"]["naive"].as_f64().unwrap() - mean(&all)).abs() < 1e-9);
        if labelled.iter().all(|d| d.2 == 0.0) {
            let estimate = l["ppi"]["estimate"].as_f64().unwrap();
            assert!(
                (estimate - mean(&all)).abs() < 1e-9,
                "{l} vs {}",
                mean(&all)
            );
        }
        assert!(l["ppi"]["half_width"].as_f64().unwrap() > 0.0);
    }
    // The labels are kept with the run.
    assert_eq!(
        std::fs::read_to_string(run.join("labels.jsonl")).expect("kept"),
        labels
    );

    // A line that is not a label is refused, naming the file, the line and what was expected.
    std::fs::write(&file, format!("{labels}{{\"turn\": 0}}\n")).expect("labels");
    let refused = sage(&[
        "judges",
        "calibrate",
        &run.display().to_string(),
        "--labels",
        &file.display().to_string(),
    ]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    let line = labels.lines().count() + 1;
    assert!(
        stderr.contains(&format!("labels.jsonl:{line}")) && stderr.contains("dialogue_id"),
        "{stderr}"
    );
}

/// `--suggest 20`: twenty judged turns to label next, the judges' disagreements first, none of
/// those labelled already, the least-labelled strata first; labels.html holds them in order.
#[test]
fn suggest_names_the_turns_to_label_next_disagreements_first() {
    let (dir, run) = small_run();
    let stored = common::records_json(&run);
    // Which judged turns the judges split on (some field given different values).
    let mut split = std::collections::BTreeSet::new();
    let mut judged = 0;
    for r in &stored {
        for t in r["turns"].as_array().unwrap() {
            let Some(judgments) = t["judges"]["judgments"].as_array() else {
                continue;
            };
            judged += 1;
            let verdicts: Vec<&Value> = judgments
                .iter()
                .map(|j| &j["Ok"]["classification"])
                .collect();
            if verdicts.windows(2).any(|w| w[0] != w[1]) {
                let id = r["job"]["dialogue_id"].as_str().unwrap().to_string();
                split.insert((id, t["turn"].as_u64().unwrap()));
            }
        }
    }
    assert!(
        judged > 20 && split.len() >= 3,
        "{judged} judged, {} split",
        split.len()
    );
    let parse = |printed: &str| -> Vec<(String, u64, bool)> {
        printed
            .lines()
            .filter_map(|l| {
                let (id, rest) = l.split_once(" turn ")?;
                let turn = rest.split_whitespace().next()?.parse().ok()?;
                Some((id.to_string(), turn, l.ends_with(", judges split)")))
            })
            .collect()
    };
    let printed = sage_ok(&[
        "judges",
        "calibrate",
        run.to_str().unwrap(),
        "--suggest",
        "20",
    ]);
    let named = parse(&printed);
    assert_eq!(named.len(), 20, "{printed}");
    for (id, turn, is_split) in &named {
        assert_eq!(
            *is_split,
            split.contains(&(id.clone(), *turn)),
            "{id} {turn}"
        );
    }
    // Disagreements first: asked for more turns than the judges split on, every split turn
    // named comes before every other one (taken a stratum at a time, some strata run out of
    // split turns before others: without the order they would interleave).
    let more = (split.len() + 10).min(judged).to_string();
    let printed = sage_ok(&[
        "judges",
        "calibrate",
        run.to_str().unwrap(),
        "--suggest",
        &more,
    ]);
    let all = parse(&printed);
    let first_other = all.iter().position(|n| !n.2).unwrap_or(all.len());
    assert!(first_other >= 3, "{printed}");
    assert!(all[first_other..].iter().all(|n| !n.2), "{printed}");
    // The page holds them, in that order.
    let page = std::fs::read_to_string(run.join("labels.html")).unwrap();
    let mut at = 0;
    for (id, _, _) in &named {
        let found = page[at..].find(id.as_str());
        assert!(found.is_some(), "{id} on the page in order");
        at += found.unwrap();
    }
    // Labelled turns are left out next time.
    let labels = dir.path().join("labels.jsonl");
    let text: String = named[..5]
        .iter()
        .map(|(id, turn, _)| format!("{}\n", json!({"dialogue_id": id, "turn": turn, "labeller": "ana", "chat": {"linguistic_quality": 6}})))
        .collect();
    std::fs::write(&labels, text).unwrap();
    let again = parse(&sage_ok(&[
        "judges",
        "calibrate",
        run.to_str().unwrap(),
        "--suggest",
        "20",
        "--labels",
        labels.to_str().unwrap(),
    ]));
    assert_eq!(again.len(), 20);
    assert!(again.iter().all(|n| !named[..5].contains(n)));
    // Without --labels or --suggest: a usage error.
    let o = sage(&["judges", "calibrate", run.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
}

/// Labels of every scored turn of `run` by one person who gives the case's true fields, but
/// another value (one the run's cases hold for that field elsewhere) where `wrong(i)` for the
/// turn's index `i`: calibration.json's fields, read back.
fn calibrate_against(run: &std::path::Path, wrong: impl Fn(usize) -> bool) -> Vec<Value> {
    let stored = common::records_json(run);
    // Every value each field takes in the run's cases, by scenario.
    let mut seen: std::collections::BTreeMap<(String, String), Vec<Value>> = Default::default();
    for r in &stored {
        for (k, v) in r["job"]["fields"].as_object().unwrap() {
            let values = seen
                .entry((r["job"]["scenario"].as_str().unwrap().into(), k.clone()))
                .or_default();
            if !values.contains(v) {
                values.push(v.clone());
            }
        }
    }
    let mut labels = String::new();
    let mut i = 0;
    for r in &stored {
        let scenario = r["job"]["scenario"].as_str().unwrap().to_string();
        for t in r["turns"].as_array().unwrap() {
            if !t["scores"].is_object() {
                continue;
            }
            i += 1;
            let mut fields = r["job"]["fields"].as_object().unwrap().clone();
            if wrong(i) {
                for (k, v) in fields.iter_mut() {
                    if let Some(other) = seen[&(scenario.clone(), k.clone())]
                        .iter()
                        .find(|o| *o != v)
                    {
                        *v = other.clone();
                    }
                }
            }
            labels.push_str(
                &json!({"dialogue_id": r["job"]["dialogue_id"], "turn": t["turn"], "labeller": "cy", "classification": fields})
                    .to_string(),
            );
            labels.push('\n');
        }
    }
    let file = run.join("people.jsonl");
    std::fs::write(&file, labels).unwrap();
    sage_ok(&[
        "judges",
        "calibrate",
        &run.display().to_string(),
        "--labels",
        &file.display().to_string(),
    ]);
    let c: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("calibration.json")).unwrap())
            .unwrap();
    c["fields"].as_array().unwrap().clone()
}

#[test]
fn effective_judges_against_peoples_labels() {
    // Three judges that err independently (noise 0.2 each) against a person who gives the
    // truth: about three votes. Three judges that are always right against a person who is
    // wrong on a third of the turns: their errors are the same turns, one vote.
    let dir = tempfile::tempdir().expect("dir");
    let config = dir.path().join("run.yaml");
    std::fs::write(
        &config,
        "models:
  - {name: agent, provider: simulated, sim: {kind: agent, profile: strong}}
  - {name: user, provider: simulated, sim: {kind: user}}
  - {name: j1, provider: simulated, sim: {kind: judge, noise: 0.2}}
  - {name: j2, provider: simulated, sim: {kind: judge, noise: 0.2}}
  - {name: j3, provider: simulated, sim: {kind: judge, noise: 0.2}}
  - {name: k1, provider: simulated, sim: {kind: judge, noise: 0.0}}
  - {name: k2, provider: simulated, sim: {kind: judge, noise: 0.0}}
  - {name: k3, provider: simulated, sim: {kind: judge, noise: 0.0}}
service_models: [agent]
user_model: user
judge_models: [j1, j2, j3]
scenarios: [scenarios/telecom_package.yaml]
dialogues_per_scenario: 60
judge_turns: every
max_turns: 6
",
    )
    .unwrap();
    let noisy = common::run_config(&config, dir.path(), "noisy");
    let fields = calibrate_against(&noisy, |_| false);
    let mut checked = 0;
    for f in &fields {
        let Some(n) = f["effective_judges"].as_f64() else {
            continue; // a field the judges never missed
        };
        assert!((2.4..=3.0).contains(&n), "independent: {f}");
        checked += 1;
    }
    assert!(checked >= 3, "{fields:?}");

    let exact = std::fs::read_to_string(&config)
        .unwrap()
        .replace("judge_models: [j1, j2, j3]", "judge_models: [k1, k2, k3]");
    std::fs::write(&config, exact).unwrap();
    let right = common::run_config(&config, dir.path(), "right");
    let fields = calibrate_against(&right, |i| i % 3 == 0);
    let mut checked = 0;
    for f in &fields {
        let Some(n) = f["effective_judges"].as_f64() else {
            continue;
        };
        assert!(n < 1.2, "copies: {f}");
        assert!(f["error_correlation"].as_f64().unwrap() > 0.9, "{f}");
        checked += 1;
    }
    assert!(checked >= 3, "{fields:?}");
    let printed = sage_ok(&[
        "judges",
        "calibrate",
        &right.display().to_string(),
        "--labels",
        &right.join("people.jsonl").display().to_string(),
    ]);
    assert!(
        printed.contains("(!)") && printed.contains("eff. jdg"),
        "{printed}"
    );
}
