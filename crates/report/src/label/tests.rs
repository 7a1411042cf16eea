use super::*;
use serde_json::{Value as Json, json};

fn candidate(model: &str, scenario: &str, dialogue: &str, turn: u32, split: bool) -> Candidate {
    Candidate {
        dialogue: dialogue.into(),
        turn,
        model: model.into(),
        scenario: scenario.into(),
        split,
        draw: draw(7, dialogue, turn),
        at: 0,
    }
}

/// Every (model, scenario) with `per` dialogues of 5 turns each; the turns `split` says split.
fn grid(
    models: &[&str],
    scenarios: &[&str],
    per: u32,
    split: impl Fn(&str, u32, u32) -> bool,
) -> Vec<Candidate> {
    let mut out = Vec::new();
    for m in models {
        for s in scenarios {
            for d in 0..per {
                let id = format!("{s}/{d:04}/{m}/r0");
                for t in 1..=5 {
                    out.push(candidate(m, s, &id, t, split(m, d, t)));
                }
            }
        }
    }
    out
}

fn ids(sample: &[&Candidate]) -> Vec<(String, u32)> {
    sample
        .iter()
        .map(|c| (c.dialogue.clone(), c.turn))
        .collect()
}

#[test]
fn split_turns_come_first_within_each_stratum() {
    // One split turn per dialogue of m1/s1 (turn 3 of dialogues 0 and 4), none elsewhere.
    let all = grid(&["m1", "m2"], &["s1"], 6, |m, d, t| {
        m == "m1" && t == 3 && (d == 0 || d == 4)
    });
    let sample = select(&all, 8);
    assert_eq!(sample.len(), 8);
    let m1: Vec<&&Candidate> = sample.iter().filter(|c| c.model == "m1").collect();
    assert_eq!(m1.len(), 4, "round-robin: as many of each stratum");
    assert!(m1[0].split && m1[1].split, "{m1:?}");
    assert!(m1[2..].iter().all(|c| !c.split));
    // Every split turn is sampled before any other turn of its stratum.
    let splits: Vec<_> = all.iter().filter(|c| c.split).collect();
    for s in splits {
        assert!(sample.iter().any(|c| c == &s), "{s:?} left out");
    }
}

#[test]
fn every_model_and_scenario_is_represented_even_with_more_strata_than_turns() {
    let models: Vec<String> = (0..27).map(|i| format!("model-{i:02}")).collect();
    let models: Vec<&str> = models.iter().map(String::as_str).collect();
    let scenarios = ["a", "b", "c", "d", "e", "f"];
    let all = grid(&models, &scenarios, 2, |_, _, _| false);
    // 162 strata, 30 turns: each model and each scenario at least once.
    let sample = select(&all, 30);
    assert_eq!(sample.len(), 30);
    for m in &models {
        assert!(sample.iter().any(|c| c.model == *m), "{m} missing");
    }
    for s in scenarios {
        assert!(sample.iter().any(|c| c.scenario == s), "{s} missing");
    }
    // No stratum twice before all have been taken once.
    let strata: BTreeSet<(&str, &str)> = sample
        .iter()
        .map(|c| (c.model.as_str(), c.scenario.as_str()))
        .collect();
    assert_eq!(strata.len(), 30);
    // Scenarios are spread evenly: 30 turns over 6 scenarios, 5 each.
    for s in scenarios {
        assert_eq!(sample.iter().filter(|c| c.scenario == s).count(), 5, "{s}");
    }
}

#[test]
fn strata_are_taken_round_robin_and_small_ones_run_out() {
    let mut all = grid(&["m1", "m2"], &["s1", "s2"], 4, |_, _, _| false);
    // m2/s2 has a single turn.
    all.retain(|c| {
        !(c.model == "m2" && c.scenario == "s2") || (c.dialogue.contains("0000") && c.turn == 1)
    });
    let sample = select(&all, 60);
    assert_eq!(sample.len(), 60);
    let of = |m: &str, s: &str| {
        sample
            .iter()
            .filter(|c| c.model == m && c.scenario == s)
            .count()
    };
    assert_eq!(of("m2", "s2"), 1);
    // The rest split evenly between the three others: 59 = 20 + 20 + 19.
    let mut counts = [of("m1", "s1"), of("m1", "s2"), of("m2", "s1")];
    counts.sort();
    assert_eq!(counts, [19, 20, 20]);
    // The first round takes one of each stratum.
    let first: BTreeSet<(&str, &str)> = sample[..4]
        .iter()
        .map(|c| (c.model.as_str(), c.scenario.as_str()))
        .collect();
    assert_eq!(first.len(), 4);
}

#[test]
fn fewer_candidates_than_the_sample_are_all_taken() {
    let all = grid(&["m1"], &["s1", "s2"], 1, |_, _, t| t == 2);
    let sample = select(&all, SAMPLE);
    assert_eq!(sample.len(), 10);
    assert!(select(&[], SAMPLE).is_empty());
    assert!(select(&all, 0).is_empty());
}

#[test]
fn the_sample_does_not_depend_on_the_order_of_the_candidates() {
    let all = grid(&["m1", "m2", "m3"], &["s1", "s2"], 5, |_, d, t| {
        (d + t) % 4 == 0
    });
    let sample = ids(&select(&all, 25));
    let mut reversed = all.clone();
    reversed.reverse();
    assert_eq!(ids(&select(&reversed, 25)), sample);
    let mut shuffled = all.clone();
    shuffled.sort_by_key(|c| draw(99, &c.dialogue, c.turn));
    assert_eq!(ids(&select(&shuffled, 25)), sample);
    // Another seed draws another sample.
    let reseeded: Vec<Candidate> = all
        .iter()
        .map(|c| Candidate {
            draw: draw(8, &c.dialogue, c.turn),
            ..c.clone()
        })
        .collect();
    assert_ne!(ids(&select(&reseeded, 25)), sample);
}

fn judgment(a: &str) -> Json {
    json!({"Ok": {"classification": {"ConsumptionType": a, "EmotionTag": "Calm"},
        "chat": {"linguistic_quality": 9, "anthropomorphism_emotion": 6, "content_utility": 9,
        "user_satisfaction": 3, "instruction_compliance": 9}}})
}

/// A judged turn whose judges say `votes` for ConsumptionType (`"!"`: that judge failed).
fn turn(n: u32, votes: &[&str], consensus: bool) -> Json {
    let judgments: Vec<Json> = votes
        .iter()
        .map(|v| {
            if *v == "!" {
                json!({"Err": "timeout"})
            } else {
                judgment(v)
            }
        })
        .collect();
    json!({
        "turn": n, "user_message": format!("customer line {n} <b>bold</b>"), "raw_output": null,
        "outcome": {"kind": "valid", "turn": {"classification": {"ConsumptionType": "Cancel"},
            "cot": "SECRET-COT", "path": ["s1"], "action": "SECRET-ACTION", "outputs": {},
            "chat": format!("agent reply {n}")}},
        "judges": {"judgments": judgments,
            "consensus": if consensus { json!({"ConsumptionType": votes[0], "EmotionTag": "Calm"}) } else { Json::Null },
            "calls": []},
        "reference": {"Ok": {"path": ["s1"], "action": "REFERENCE-ACTION", "outputs": {}}},
        "scores": {"acc_cls": 1.0, "sim_path": 1.0, "acc_action": 1.0, "logic": 77.7,
            "chat": 88.8, "overall": 79.9, "sim_path_prefix": 1.0},
        "infra_error": null, "calls": []
    })
}

fn record(id: &str, model: &str, turns: Vec<Json>) -> DialogueRecord {
    let value = json!({
        "job": {"run_id": "r1", "dialogue_id": id, "scenario": "telecom_package",
            "target": {"path": ["s1"], "action": "Done", "outputs": {}},
            "fields": {"ConsumptionType": "TRUTH-NOT-SHOWN"},
            "variables": {"PackageStatus": "Contracted", "Penalty": 250},
            "intent": "intent-not-shown", "persona": "persona-not-shown", "adversarial": "zero",
            "service_model": model, "user_model": "u", "judge_models": ["j1", "j2", "j3"],
            "max_turns": 4, "seed": 1, "repeat": 0},
        "turns": turns, "end": "resolved", "simulated": true,
        "usage": {"input_tokens": 0, "output_tokens": 0}, "cost_usd": 0.0
    });
    match serde_json::from_value(value) {
        Ok(r) => r,
        Err(e) => panic!("a record: {e}"),
    }
}

#[test]
fn a_turn_is_split_when_judges_differ_fail_or_reach_no_consensus() {
    let split = |t: Json| judged_split(&serde_json::from_value::<TurnRecord>(t).unwrap());
    assert_eq!(split(turn(1, &["Enquiry"; 3], true)), Some(false));
    assert_eq!(
        split(turn(1, &["Enquiry", "Cancel", "Enquiry"], true)),
        Some(true)
    );
    assert_eq!(
        split(turn(1, &["Enquiry", "!", "Enquiry"], true)),
        Some(true)
    );
    assert_eq!(split(turn(1, &["Enquiry"; 3], false)), Some(true));
    // Not candidates: no verdict at all, no panel, an infrastructure error.
    assert_eq!(split(turn(1, &["!", "!", "!"], false)), None);
    let mut unjudged = turn(1, &["Enquiry"; 3], true);
    unjudged["judges"] = Json::Null;
    assert_eq!(split(unjudged), None);
    let mut infra = turn(1, &["Enquiry"; 3], true);
    infra["infra_error"] = json!("judge 2 unreachable");
    assert_eq!(split(infra), None);
}

/// The seed of the test run.
const SEED: u64 = 42;

fn telecom() -> Arc<Sop> {
    let (file, text) = sage_core::scenario::bundled::BUNDLED[5];
    Arc::new(sage_core::sop::from_yaml(text, file).expect("telecom compiles"))
}

#[test]
fn the_fold_keeps_what_the_selection_over_every_turn_takes() {
    let mut records = Vec::new();
    for d in 0..30u32 {
        let model = ["m1", "m2", "m3"][d as usize % 3];
        let turns = (1..=4)
            .map(|t| {
                let votes = if (d + t) % 5 == 0 {
                    ["Enquiry", "Cancel", "Enquiry"]
                } else {
                    ["Enquiry"; 3]
                };
                turn(t, &votes, true)
            })
            .collect();
        records.push(record(
            &format!("telecom_package/{d:04}/{model}/r0"),
            model,
            turns,
        ));
    }
    for n in [1, 5, 7, 60] {
        let mut fold = LabelFold::new("r1", SEED, vec![]).with_sample(n);
        let mut every = Vec::new();
        for (i, r) in records.iter().enumerate() {
            fold.add(r, i as u64);
            for t in &r.turns {
                every.push(Candidate {
                    dialogue: r.job.dialogue_id.clone(),
                    turn: t.turn,
                    model: r.job.service_model.clone(),
                    scenario: r.job.scenario.clone(),
                    split: judged_split(t).unwrap(),
                    draw: draw(SEED, &r.job.dialogue_id, t.turn),
                    at: i as u64,
                });
            }
        }
        let kept: usize = fold.strata.values().map(|[a, b]| a.len() + b.len()).sum();
        assert!(kept <= 3 * 2 * n, "{kept} kept for n = {n}");
        let expected: Vec<Candidate> = select(&every, n).into_iter().cloned().collect();
        assert_eq!(fold.sample(), expected, "n = {n}");
    }
}

/// The page of `records` (placed by index) with the telecom scenario.
fn page_of(records: &[DialogueRecord]) -> (String, usize) {
    let mut fold = LabelFold::new("r1", SEED, vec![telecom()]);
    for (i, r) in records.iter().enumerate() {
        fold.add(r, i as u64);
    }
    let mut out = Vec::new();
    let n = fold
        .write_page(&mut out, &mut records.to_vec())
        .expect("a page");
    (String::from_utf8(out).expect("utf-8"), n)
}

#[test]
fn the_page_is_blind_escaped_and_offers_every_field_and_dimension() {
    let records = vec![
        record(
            "telecom_package/0001/m1/r0",
            "m1",
            vec![
                turn(1, &["Enquiry", "Change", "Cancel"], true),
                turn(2, &["Enquiry"; 3], true),
            ],
        ),
        record(
            "telecom_package/0002/m2/r0",
            "m2",
            vec![turn(1, &["Cancel"; 3], true)],
        ),
    ];
    let (html, n) = page_of(&records);
    assert_eq!(n, 3);
    assert_eq!(html.matches("<article class=\"label-item\"").count(), 3);
    // The record's text is escaped; the page's one script is allowed by its hash.
    assert!(html.contains("customer line 1 &lt;b&gt;bold&lt;/b&gt;"));
    assert!(!html.contains("<b>bold</b>"));
    assert!(html.contains(&crate::page::csp_hash(SCRIPT)));
    assert_eq!(html.matches("<script>").count(), 1);
    assert!(!SCRIPT.to_ascii_lowercase().contains("</script"));
    // Blind: no verdict, consensus, true value, intent, persona, reasoning, route or score
    // (nor a control set in advance).
    let body = &html[..html.find("<script>").expect("the script")];
    for hidden in [
        "TRUTH-NOT-SHOWN",
        "intent-not-shown",
        "persona-not-shown",
        "SECRET-COT",
        "SECRET-ACTION",
        "REFERENCE-ACTION",
        "77.7",
        "88.8",
        "79.9",
        "consensus",
        "selected",
        "checked",
    ] {
        assert!(!body.contains(hidden), "{hidden} is on the page");
    }
    // The system information the judges see is there, folded.
    assert!(html.contains("PackageStatus") && html.contains("Contracted"));
    // Every field of the scenario, with its options and description; every dimension 9/6/3.
    let sop = telecom();
    for key in sop.scenario().fields() {
        assert!(html.contains(&format!("data-field=\"{}\"", key.name)));
        for o in key.options() {
            assert!(html.contains(&format!("<option value=\"{o}\">{o}</option>")));
        }
        assert!(html.contains(&key.description));
    }
    for d in &DIMENSIONS_KEYS {
        assert_eq!(
            html.matches(&format!("data-dim=\"{d}\"")).count(),
            3 * 4,
            "{d}"
        );
    }
    // The conversation up to the turn, not after it.
    let item = |dialogue: &str, t: u32| {
        let start = html
            .find(&format!("data-dialogue=\"{dialogue}\" data-turn=\"{t}\""))
            .expect("the item");
        let end = html[start..].find("</article>").expect("its end") + start;
        html[start..end].to_string()
    };
    let first = item("telecom_package/0001/m1/r0", 1);
    assert!(first.contains("agent reply 1") && !first.contains("agent reply 2"));
    let second = item("telecom_package/0001/m1/r0", 2);
    assert!(second.contains("agent reply 1") && second.contains("agent reply 2"));
    assert!(second.contains("Turn 2: the reply to label"));
}

const DIMENSIONS_KEYS: [&str; 5] = [
    "linguistic_quality",
    "anthropomorphism_emotion",
    "content_utility",
    "user_satisfaction",
    "instruction_compliance",
];

#[test]
fn a_run_without_judged_turns_gets_a_page_that_says_so() {
    let mut unjudged = turn(1, &["Enquiry"; 3], true);
    unjudged["judges"] = Json::Null;
    let (html, n) = page_of(&[record("telecom_package/0001/m1/r0", "m1", vec![unjudged])]);
    assert_eq!(n, 0);
    assert!(html.contains("no judged turn to label"));
}
