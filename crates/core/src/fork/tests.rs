use super::*;
use crate::protocol::{DialogueEnd, Fork, JudgeReply, TurnVerdict, Usage};
use crate::scenario::Value;
use crate::sop;

fn telecom() -> sop::Sop {
    let (file, yaml) = crate::scenario::bundled::BUNDLED
        .iter()
        .find(|(f, _)| *f == "telecom_package.yaml")
        .copied()
        .expect("bundled");
    sop::from_yaml(yaml, file).expect("telecom")
}

fn values(pairs: &[(&str, &str)]) -> Values {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), Value::Str(v.to_string())))
        .collect()
}

/// The Telecom case Enquiry / Agree with no contract: reference step1..step4 -> ChangeOrder.
fn case() -> (Values, Values) {
    (
        values(&[
            ("ConsumptionType", "Enquiry"),
            ("ApplicationTendency", "Agree"),
            ("ConsumptionProfile", "Data"),
            ("EmotionTag", "Calm"),
        ]),
        values(&[("PackageStatus", "NoContract")]),
    )
}

fn job(id: &str, model: &str) -> DialogueJob {
    let sop = telecom();
    let (fields, variables) = case();
    DialogueJob {
        run_id: "r".into(),
        dialogue_id: id.into(),
        scenario: "telecom_package".into(),
        target: sop.route(&fields, &variables).expect("route"),
        fields: fields.into_iter().collect(),
        variables: variables.into_iter().collect(),
        intent: "i".into(),
        persona: "p".into(),
        adversarial: crate::scenario::Adversarial::Zero,
        service_model: model.into(),
        user_model: "u".into(),
        user_model_index: 0,
        judge_models: vec!["j".into()],
        judge_turns: JudgeTurns::Paper,
        max_turns: 6,
        seed: 11,
        repeat: 0,
    }
}

/// A turn where the agent answered `action` on `path`; judged when `judged` (the consensus the
/// case's truth, its reference route the rule engine's).
fn turn(n: u32, path: &[&str], action: &str, judged: bool) -> TurnRecord {
    let sop = telecom();
    let (fields, variables) = case();
    let agent = AgentTurn {
        classification: fields.clone(),
        cot: String::new(),
        path: path.iter().map(|s| s.to_string()).collect(),
        action: action.into(),
        outputs: Default::default(),
        chat: format!("chat {n}"),
    };
    TurnRecord {
        turn: n,
        user_message: format!("customer {n}"),
        raw_output: Some(format!("raw {n}")),
        outcome: ServiceOutcome::Valid { turn: agent },
        judges: judged.then(|| JudgeReply {
            judgments: Vec::new(),
            consensus: Some(fields.clone()),
            calls: Vec::new(),
        }),
        reference: judged.then(|| Ok(sop.route(&fields, &variables).expect("route"))),
        scores: None,
        infra_error: None,
        calls: vec![call("m")],
        customer_retry: None,
        off_case: None,
    }
}

fn call(model: &str) -> crate::protocol::CallRecord {
    serde_json::from_value(serde_json::json!({
        "model": model, "simulated": true, "request": [], "response": null,
        "usage": {"input_tokens": 10, "output_tokens": 5}, "latency_ms": 1,
        "attempts": 1, "cost_usd": 0.25, "cached": false
    }))
    .expect("a call")
}

fn record(turns: Vec<TurnRecord>) -> DialogueRecord {
    DialogueRecord {
        job: job("telecom_package/0001/m/r0", "m"),
        turns,
        closing_calls: Vec::new(),
        end: DialogueEnd::MaxTurns,
        simulated: true,
        structured_output: None,
        usage: Usage::default(),
        cost_usd: 0.0,
        fork: None,
    }
}

const RIGHT: [&str; 5] = ["step1", "step2", "step3", "step6", "step4"];

#[test]
fn points_are_the_judged_turns_the_first_deviation_or_a_turn() {
    let r = record(vec![
        turn(1, &RIGHT, "ChangeOrder", true),
        turn(2, &["step1"], "GoodBye", false),
        turn(3, &["step1", "step2"], "TransHuman", true),
        turn(4, &RIGHT, "ChangeOrder", true),
        turn(5, &["step1"], "GoodBye", true),
    ]);
    assert_eq!(r.turns[2].verdict(), TurnVerdict::Left);
    assert_eq!(points(&r, At::Judged), [0, 2, 3, 4]);
    // Turn 2 left the reference but was not judged: the first judged deviation is turn 3.
    assert_eq!(points(&r, At::Deviation), [2]);
    assert_eq!(points(&r, At::Turn(4)), [3]);
    assert!(
        points(&r, At::Turn(2)).is_empty(),
        "not judged: no reference"
    );
    assert!(points(&r, At::Turn(9)).is_empty());
    let clean = record(vec![turn(1, &RIGHT, "ChangeOrder", true)]);
    assert!(points(&clean, At::Deviation).is_empty());
    assert_eq!("judged".parse::<At>(), Ok(At::Judged));
    assert_eq!("deviation".parse::<At>(), Ok(At::Deviation));
    assert_eq!("7".parse::<At>(), Ok(At::Turn(7)));
    assert!("0".parse::<At>().is_err() && "first".parse::<At>().is_err());
}

#[test]
fn a_branch_keeps_the_parents_turns_without_their_calls_and_draws_as_it() {
    let r = record(vec![
        turn(1, &RIGHT, "ChangeOrder", true),
        turn(2, &["step1"], "GoodBye", true),
        turn(3, &RIGHT, "ChangeOrder", true),
    ]);
    let kept = kept_turns(&r, 2);
    assert_eq!(kept.len(), 2);
    assert!(kept.iter().all(|t| t.calls.is_empty()
        && t.judges.is_none()
        && t.scores.is_none()
        && t.raw_output.is_none()));
    assert_eq!(kept[1].user_message, "customer 2");
    assert_eq!(kept[1].outcome, r.turns[1].outcome);
    // The conversation they make is the parent's up to the fork turn.
    assert_eq!(
        crate::scoring::rejudge::history_of(&kept),
        crate::scoring::rejudge::history_before(&r, 2)
    );
    let config = ForkConfig {
        at: At::Judged,
        models: vec!["x".into()],
        samples: 2,
        continue_on: false,
        judge: false,
        seed: 5,
    };
    let id = branch_id(&r.job.dialogue_id, 3, "x", 1);
    assert_eq!(id, "telecom_package/0001/m/r0/f3/x/s1");
    let b = branch_job(&r.job, "new", id.clone(), 3, "x", &config);
    assert_eq!(
        (b.dialogue_id.as_str(), b.service_model.as_str()),
        (id.as_str(), "x")
    );
    assert_eq!(
        (b.run_id.as_str(), b.max_turns, b.seed),
        ("new", 3, r.job.seed)
    );
    assert_eq!(b.judge_turns, JudgeTurns::List(vec![3]));
    let on = ForkConfig {
        continue_on: true,
        judge: true,
        ..config.clone()
    };
    let b = branch_job(&r.job, "new", id, 3, "x", &on);
    assert_eq!((b.max_turns, b.judge_turns), (6, JudgeTurns::Paper));
    // Samples draw apart, the same for the same seed.
    assert_ne!(config.draw(0), config.draw(1));
    assert_eq!(config.draw(1), config.clone().draw(1));
    let other = ForkConfig { seed: 6, ..config };
    assert_ne!(
        other.draw(1),
        ForkConfig {
            seed: 5,
            ..other.clone()
        }
        .draw(1)
    );
    assert_eq!(
        fix_id("telecom_package/0001/m/r0", 2, "m"),
        "telecom_package/0001/m/r0/f2/m/fix"
    );
}

#[test]
fn a_reply_written_from_the_reference_parses_and_has_logic_100() {
    let sop = telecom();
    let (consensus, variables) = case();
    let route = sop.route(&consensus, &variables).expect("route");
    let reply = written_reply(&consensus, &route, "I will change your package.");
    let raw = reply.raw.as_deref().expect("raw");
    let parsed = crate::protocol::parse::parse_agent_output(&sop, raw, false).expect("parses");
    let ServiceOutcome::Valid { turn: written } = &reply.outcome else {
        panic!("valid");
    };
    assert_eq!(&parsed, written);
    let mut t = turn(2, &["step1"], "GoodBye", true);
    assert!(crate::scoring::turn::turn_logic(&t, &sop).is_some_and(|l| l < 100.0));
    t.outcome = reply.outcome.clone();
    assert_eq!(crate::scoring::turn::turn_logic(&t, &sop), Some(100.0));
    assert_eq!(t.verdict(), TurnVerdict::Followed);
    // Without a reference there is no Logic.
    t.reference = None;
    assert_eq!(crate::scoring::turn::turn_logic(&t, &sop), None);
}

#[test]
fn the_fold_counts_branches_calls_and_fixes_whatever_their_order() {
    let branch = |id: &str, model: &str, fix: bool, last: &str, logic: f64| {
        let mut r = record(vec![
            TurnRecord {
                calls: Vec::new(),
                ..turn(1, &RIGHT, "ChangeOrder", true)
            },
            turn(2, &RIGHT, last, true),
        ]);
        r.job.dialogue_id = id.into();
        r.job.service_model = model.into();
        r.turns[1].calls = vec![call(model), call("u")];
        r.fork = Some(Box::new(Fork {
            parent: "telecom_package/0001/m/r0".into(),
            parent_model: "m".into(),
            turn: 2,
            sample: 0,
            fix: fix.then_some(FixSource::Written),
            logic: Some(logic),
        }));
        r
    };
    let all = [
        branch("a", "x", false, "GoodBye", 40.0),
        branch("b", "y", false, "ChangeOrder", 100.0),
        branch("c", "m", true, "ChangeOrder", 100.0),
        branch("d", "m", true, "GoodBye", 100.0),
    ];
    let fold = |order: &[usize]| {
        let mut f = ForkFold::new(true);
        for i in order {
            f.add(&all[*i]);
        }
        f.add(&record(vec![turn(1, &RIGHT, "ChangeOrder", true)]));
        f.finish(2)
    };
    let done = fold(&[0, 1, 2, 3]);
    assert_eq!(done, fold(&[3, 1, 0, 2]));
    assert_eq!((done.parents, done.points, done.branches), (1, 1, 4));
    assert_eq!(done.logic_100, 1);
    // Per model, its samples only (the fixes' replies are copies or written).
    assert_eq!(done.replies_by_model.len(), 2);
    let x = &done.replies_by_model["x"];
    assert_eq!(
        (x.replies, x.scored, x.logic_100, x.mean_logic),
        (1, 1, 0, Some(40.0))
    );
    assert_eq!(done.replies_by_model["y"].share_100(), Some(1.0));
    assert_eq!(done.calls["agent"], 4);
    assert_eq!(done.calls["customer"], 4);
    assert_eq!(done.cost_usd["agent"], 1.0);
    assert_eq!((done.failed_parents, done.flipped), (Some(2), Some(1)));
    assert_eq!(
        done.fixes_by_model["m"],
        FixCount {
            failed: 2,
            flipped: 1
        }
    );
    assert_eq!(done.left_for_budget, 2);
    assert_eq!(ForkFold::new(false).finish(0).failed_parents, None);
}
