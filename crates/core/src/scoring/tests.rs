//! Scoring tests: every expected value is computed by hand from the formulas.

use super::stats::{Bootstrap, median, quantile};
use super::summary::{
    RELEASED_BOTH, RELEASED_DROP_FORMAT_ERRORS, RELEASED_PREFIX_PATH, case_key, pass_hat,
    reached_target, route_key,
};
use super::turn::*;
use super::*;
use crate::protocol::{
    AgentTurn, CallRecord, ChatScores, DialogueEnd, DialogueJob, DialogueRecord, FormatError,
    JudgeReply, Judgment, ServiceOutcome, TurnRecord, Usage,
};
use crate::scenario::{Adversarial, Value};
use crate::sop::{self, Route, Sop};
use std::collections::BTreeMap;

const EPS: f64 = 1e-9;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < EPS
}

macro_rules! assert_close {
    ($a:expr, $b:expr) => {{
        let (a, b): (f64, f64) = ($a, $b);
        assert!(close(a, b), "{} = {a}, expected {b}", stringify!($a));
    }};
}

// ---------------------------------------------------------------- builders

fn strings(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|s| s.to_string()).collect()
}

fn text(s: &str) -> Value {
    Value::Str(s.into())
}

fn fields(pairs: &[(&str, Value)]) -> BTreeMap<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn route(path: &[&str], action: &str, outputs: &[(&str, &str)]) -> Route {
    Route {
        path: strings(path),
        action: action.into(),
        outputs: outputs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

fn agent(path: &[&str], action: &str, outputs: &[(&str, &str)]) -> AgentTurn {
    let r = route(path, action, outputs);
    AgentTurn {
        classification: BTreeMap::new(),
        cot: String::new(),
        path: r.path,
        action: r.action,
        outputs: r.outputs,
        chat: "hello".into(),
    }
}

fn scores(l: u8, a: u8, c: u8, s: u8, i: u8) -> ChatScores {
    ChatScores {
        linguistic_quality: l,
        anthropomorphism_emotion: a,
        content_utility: c,
        user_satisfaction: s,
        instruction_compliance: i,
    }
}

fn all(x: u8) -> ChatScores {
    scores(x, x, x, x, x)
}

/// A dialogue of `model` without a turn (ended resolved), costing `cost_usd`.
pub(super) fn bare_record(model: &str, cost_usd: f64) -> DialogueRecord {
    DialogueRecord {
        job: job("d", model, "sc", Adversarial::Zero),
        turns: Vec::new(),
        closing_calls: Vec::new(),
        end: DialogueEnd::Resolved,
        simulated: true,
        structured_output: None,
        usage: Default::default(),
        cost_usd,
        fork: None,
    }
}

pub(super) fn job(id: &str, model: &str, scenario: &str, adversarial: Adversarial) -> DialogueJob {
    DialogueJob {
        run_id: "run".into(),
        dialogue_id: id.into(),
        scenario: scenario.into(),
        target: route(&["step1", "step2"], "Refund", &[]),
        fields: [("A".to_string(), text("x")), ("B".to_string(), text("z"))]
            .into_iter()
            .collect(),
        variables: Default::default(),
        intent: "intent".into(),
        persona: "persona".into(),
        adversarial,
        service_model: model.into(),
        user_model: "user-model".into(),
        user_model_index: 0,
        judge_models: strings(&["judge-1", "judge-2"]),
        judge_turns: crate::protocol::JudgeTurns::Every,
        max_turns: 20,
        seed: 1,
        repeat: 0,
    }
}

/// Judges: each with its classification and chat scores; consensus: the first judge's fields.
fn panel(judges: &[(BTreeMap<String, Value>, ChatScores)]) -> JudgeReply {
    JudgeReply {
        judgments: judges
            .iter()
            .map(|(c, s)| {
                Ok(Judgment {
                    classification: c.clone(),
                    chat: *s,
                })
            })
            .collect(),
        consensus: judges.first().map(|(c, _)| c.clone()),
        calls: Vec::new(),
    }
}

fn record(n: u32, outcome: ServiceOutcome, judges: JudgeReply, parts: LogicParts) -> TurnRecord {
    let chats: Vec<ChatScores> = judges
        .judgments
        .iter()
        .filter_map(|j| j.as_ref().ok().map(|j| j.chat))
        .collect();
    TurnRecord {
        turn: n,
        user_message: "hi".into(),
        raw_output: None,
        outcome,
        judges: Some(judges),
        reference: None,
        scores: combine(parts, &chats),
        infra_error: None,
        calls: Vec::new(),
        customer_retry: None,
        off_case: None,
    }
}

/// A valid turn with the given logic sub-scores (prefix path score = sim_path unless changed).
fn valid(n: u32, p: (f64, f64, f64), chat: &str, judges: JudgeReply) -> TurnRecord {
    let mut turn = agent(&["step1"], "Refund", &[]);
    turn.chat = chat.into();
    let parts = LogicParts {
        acc_cls: p.0,
        sim_path: p.1,
        sim_path_prefix: p.1,
        acc_action: p.2,
    };
    record(n, ServiceOutcome::Valid { turn }, judges, parts)
}

fn format_error(n: u32, judges: JudgeReply) -> TurnRecord {
    let outcome = ServiceOutcome::FormatError {
        error: FormatError::NoJsonObject,
        chat: "raw text shown to the user".into(),
    };
    record(n, outcome, judges, LogicParts::FORMAT_ERROR)
}

fn infra(n: u32) -> TurnRecord {
    TurnRecord {
        turn: n,
        user_message: "hi".into(),
        raw_output: None,
        outcome: ServiceOutcome::InfraError {
            error: "timeout".into(),
        },
        judges: None,
        reference: None,
        scores: None,
        infra_error: Some("timeout".into()),
        calls: Vec::new(),
        customer_retry: None,
        off_case: None,
    }
}

fn dialogue(job: DialogueJob, turns: Vec<TurnRecord>, end: DialogueEnd) -> DialogueRecord {
    DialogueRecord {
        simulated: job.service_model.starts_with("sim"),
        structured_output: None,
        job,
        turns,
        closing_calls: Vec::new(),
        end,
        usage: Usage::default(),
        cost_usd: 0.0,
        fork: None,
    }
}

fn call(model: &str, input: u64, output: u64, cost: f64) -> CallRecord {
    CallRecord {
        model: model.into(),
        simulated: false,
        request: Vec::new(),
        response: Some("ok".into()),
        finish_reason: None,
        error: None,
        attempts: 1,
        usage: Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        },
        cost_usd: cost,
        cached: false,
        latency_ms: 5,
        refused: 0,
        limit_wait_ms: 0,
    }
}

fn load(scenario: &str) -> Sop {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    sop::load(&dir.join(format!("{scenario}.yaml"))).unwrap()
}

// ---------------------------------------------------------------- per turn

#[test]
fn values_compare_across_text_and_types() {
    assert!(values_equal(&text("true"), &Value::Bool(true)));
    assert!(values_equal(&Value::Bool(false), &text("false")));
    assert!(values_equal(&text("5"), &Value::Int(5)));
    assert!(values_equal(&Value::Int(5), &text("5")));
    assert!(!values_equal(&text("6"), &Value::Int(5)));
    assert!(!values_equal(&text("true"), &Value::Bool(false)));
    assert!(!values_equal(&text("Calm"), &text("calm")));
}

#[test]
fn classification_accuracy_is_the_share_of_fields_right() {
    let consensus = fields(&[
        ("Type", text("Enquiry")),
        ("Member", Value::Bool(true)),
        ("Penalty", Value::Int(5)),
        ("Emotion", text("Calm")),
    ]);
    let agent = fields(&[
        ("Type", text("Enquiry")),
        ("Member", text("true")),
        ("Penalty", text("5")),
        ("Emotion", text("Discontent")),
    ]);
    assert_close!(acc_cls(&agent, &consensus), 0.75);
    // A field the agent left out counts as wrong.
    let partial = fields(&[("Type", text("Enquiry"))]);
    assert_close!(acc_cls(&partial, &consensus), 0.25);
}

#[test]
fn path_similarity_and_the_released_prefix_score() {
    let reference = strings(&["step1", "step2", "step3", "step6"]);
    let p = strings(&["step1", "step2", "step4"]);
    assert_close!(sim_path(&p, &reference), 0.5); // {1,2} of 4
    assert_close!(sim_path_prefix(&p, &reference), 0.5); // prefix 2 / max(3, 4)
    let p = strings(&["step1", "step2", "step3"]);
    assert_close!(sim_path(&p, &reference), 0.75);
    assert_close!(sim_path_prefix(&p, &reference), 0.75);
    // Order matters only to the prefix score.
    let p = strings(&["step2", "step1", "step3", "step6"]);
    assert_close!(sim_path(&p, &reference), 1.0);
    assert_close!(sim_path_prefix(&p, &reference), 0.0);
    // Extra stages do not lower eq. 6 but lower the prefix score: prefix 4 / max(5, 4).
    let p = strings(&["step1", "step2", "step3", "step6", "step4"]);
    assert_close!(sim_path(&p, &reference), 1.0);
    assert_close!(sim_path_prefix(&p, &reference), 0.8);
    // start/end markers are removed before the exact-match test.
    let p = strings(&["start", "step1", "step2", "step3", "step6", "END"]);
    assert_close!(sim_path_prefix(&p, &reference), 1.0);
}

#[test]
fn finals_follow_the_action_and_outputs_rules() {
    let plan = route(&["step1"], "PLAN", &[("PLAN", "PLAN_B")]);
    let guide = route(&["step1"], "GUIDE", &[("PLAN", "none")]);
    let with_plan = Finals::WithOutputs {
        carried: strings(&["PLAN"]),
    };
    let carries_none = Finals::WithOutputs { carried: vec![] };
    // PLAN right, plan wrong: 0.7.
    let t = agent(&["step1"], "PLAN", &[("PLAN", "PLAN_A")]);
    assert_close!(acc_action(&t, &plan, &with_plan), 0.7);
    let t = agent(&["step1"], "PLAN", &[("PLAN", "PLAN_B")]);
    assert_close!(acc_action(&t, &plan, &with_plan), 1.0);
    // Wrong action, reference GUIDE (carries no output): the 0.3 is granted.
    let t = agent(&["step1"], "COMFORT", &[("PLAN", "PLAN_A")]);
    assert_close!(acc_action(&t, &guide, &carries_none), 0.3);
    let t = agent(&["step1"], "GUIDE", &[]);
    assert_close!(acc_action(&t, &guide, &carries_none), 1.0);
    // Wrong action against a PLAN reference: 0.3 only if the plan matches.
    let t = agent(&["step1"], "GUIDE", &[("PLAN", "PLAN_B")]);
    assert_close!(acc_action(&t, &plan, &with_plan), 0.3);
    // A scenario without outputs (Telecom): all or nothing.
    let change = route(&["step1"], "ChangeOrder", &[]);
    let t = agent(&["step1"], "ChangeOrder", &[]);
    assert_close!(acc_action(&t, &change, &Finals::ActionOnly), 1.0);
    let t = agent(&["step1"], "TransHuman", &[]);
    assert_close!(acc_action(&t, &change, &Finals::ActionOnly), 0.0);
}

#[test]
fn finals_rule_comes_from_the_scenario() {
    let oe = load("online_education");
    let find = |action: &str| {
        oe.routes()
            .iter()
            .find(|r| r.route.action == action)
            .map(|r| r.route.clone())
            .unwrap()
    };
    let carried = |f: Finals| match f {
        Finals::WithOutputs { carried } => carried,
        Finals::ActionOnly => panic!("online_education declares PLAN"),
    };
    assert_eq!(carried(Finals::for_route(&oe, &find("PLAN"))), ["PLAN"]);
    assert!(carried(Finals::for_route(&oe, &find("GUIDE"))).is_empty());
    let tp = load("telecom_package");
    let r = tp.routes()[0].route.clone();
    assert_eq!(Finals::for_route(&tp, &r), Finals::ActionOnly);
}

#[test]
fn chat_is_the_weighted_judge_score_averaged_over_judges() {
    assert_close!(judge_chat(&all(9)), 100.0);
    // (0.2*3 + 0.25*6 + 0.25*9 + 0.15*6 + 0.15*3) / 9 * 100 = 5.7 / 9 * 100
    assert_close!(judge_chat(&scores(3, 6, 9, 6, 3)), 570.0 / 9.0);
    assert_close!(judge_chat(&all(3)), 100.0 / 3.0);
    assert_close!(
        panel_chat(&[all(9), all(3)]).unwrap(),
        (100.0 + 100.0 / 3.0) / 2.0
    );
    assert_eq!(panel_chat(&[]), None);
    assert_close!(chat_dimensions(&scores(3, 6, 9, 6, 3))[1], 600.0 / 9.0);
}

#[test]
fn a_turn_combines_logic_and_chat() {
    let consensus = fields(&[
        ("A", text("a")),
        ("B", text("b")),
        ("C", text("c")),
        ("D", text("d")),
    ]);
    let reference = route(&["step1", "step2", "step3", "step6"], "ChangeOrder", &[]);
    let mut turn = agent(&["step1", "step2", "step4"], "ChangeOrder", &[]);
    turn.classification = fields(&[
        ("A", text("a")),
        ("B", text("b")),
        ("C", text("c")),
        ("D", text("x")),
    ]);
    let answer = Answer::Valid {
        turn: &turn,
        consensus: &consensus,
        reference: &reference,
        finals: &Finals::ActionOnly,
    };
    let s = score_turn(answer, &[scores(3, 6, 9, 6, 3)]).unwrap();
    assert_close!(s.acc_cls, 0.75);
    assert_close!(s.sim_path, 0.5);
    assert_close!(s.sim_path_prefix, 0.5);
    assert_close!(s.acc_action, 1.0);
    // 100 * (0.4*0.75 + 0.4*0.5 + 0.2*1) = 70
    assert_close!(s.logic, 70.0);
    assert_close!(s.chat, 570.0 / 9.0);
    // 0.8*70 + 0.2*63.33 = 56 + 12.666
    assert_close!(s.overall, 56.0 + 0.2 * 570.0 / 9.0);
    // No judge answered: not scored.
    assert_eq!(score_turn(answer, &[]), None);
}

#[test]
fn a_format_error_turn_scores_only_chat() {
    let s = score_turn(Answer::FormatError, &[all(9), all(9), all(9)]).unwrap();
    assert_eq!(
        (
            s.acc_cls,
            s.sim_path,
            s.sim_path_prefix,
            s.acc_action,
            s.logic
        ),
        (0.0, 0.0, 0.0, 0.0, 0.0)
    );
    assert_close!(s.chat, 100.0);
    assert_close!(s.overall, 20.0);
}

#[test]
fn stored_turns_are_rescored() {
    let tp = load("telecom_package");
    let reference = tp.routes()[0].route.clone();
    let consensus = fields(&[("ConsumptionType", text("Enquiry"))]);
    let mut turn = agent(&[], &reference.action, &[]);
    turn.path = reference.path.clone();
    turn.classification = consensus.clone();
    let mut r = valid(1, (0.0, 0.0, 0.0), "x", panel(&[(consensus, all(9))]));
    r.outcome = ServiceOutcome::Valid { turn };
    r.reference = Some(Ok(reference));
    let s = score_record(&r, &tp).unwrap();
    assert_eq!((s.logic, s.chat, s.overall), (100.0, 100.0, 100.0));
    let fe = format_error(2, panel(&[(fields(&[]), all(3))]));
    assert_close!(score_record(&fe, &tp).unwrap().overall, 0.2 * 100.0 / 3.0);
    assert_eq!(score_record(&infra(3), &tp), None);
    r.reference = Some(Err("no route".into()));
    assert_eq!(score_record(&r, &tp), None);
}

// ---------------------------------------------------------------- statistics

#[test]
fn quantiles_and_medians() {
    assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.5), Some(2.5));
    assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.0), Some(1.0));
    assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 1.0), Some(4.0));
    assert_eq!(quantile(&[], 0.5), None);
    assert_eq!(median(&[10.0, 50.0, 20.0]), Some(20.0));
    assert_eq!(median(&[30.0, 40.0]), Some(35.0));
}

#[test]
fn bootstrap_pools_clusters_and_brackets_the_mean() {
    use super::stats::{Cluster, RatioFold, poisson_weights};
    // Two clusters: sums 1 over 1 observation and 9 over 3 -> pooled mean 10/4.
    let b = Bootstrap::default();
    let fold = |order: &[usize]| {
        let mut fold = RatioFold::<2, 2>::new([0, 1]);
        for &i in order {
            let mut c = Cluster::<2, 2>::new();
            for x in [[1.0].as_slice(), &[2.0, 3.0, 4.0]][i] {
                c.observe(0, Some(*x));
                c.count(0);
            }
            fold.add(&c, &poisson_weights(b.seed, &format!("d{i}"), b.resamples));
        }
        fold
    };
    let [m, empty] = fold(&[0, 1]).metrics(&b);
    let m = m.unwrap();
    assert_close!(m.mean, 2.5);
    assert_eq!(m.n, 4);
    assert!(m.ci_low <= m.mean && m.mean <= m.ci_high);
    assert!(m.ci_low >= 1.0 && m.ci_high <= 3.0);
    assert_eq!(empty, None);
    // Any order of the clusters: the same interval, to the last bit.
    assert_eq!(fold(&[1, 0]).metrics(&b), fold(&[0, 1]).metrics(&b));
    let none = Bootstrap { resamples: 0, ..b };
    let [m, _] = fold(&[0, 1]).metrics(&none);
    let m = m.unwrap();
    assert_eq!((m.ci_low, m.ci_high), (m.mean, m.mean));
}

#[test]
fn poisson_weights_have_mean_and_variance_one() {
    let w = super::stats::poisson_weights(3, "a dialogue", 100_000);
    let n = w.len() as f64;
    let mean = w.iter().map(|&x| f64::from(x)).sum::<f64>() / n;
    let var = w
        .iter()
        .map(|&x| (f64::from(x) - mean).powi(2))
        .sum::<f64>()
        / n;
    assert!(
        (mean - 1.0).abs() < 0.01 && (var - 1.0).abs() < 0.02,
        "{mean} {var}"
    );
    let zeros = w.iter().filter(|&&x| x == 0).count() as f64 / n;
    assert!((zeros - (-1f64).exp()).abs() < 0.005, "{zeros}");
    assert_ne!(w, super::stats::poisson_weights(3, "another", 100_000));
}

// ---------------------------------------------------------------- aggregation

/// Model `m`: D1 (zero) = valid 100/100/100, format error (chat 33.3), infra; D2 (strong) =
/// valid logic 40 chat 100. Model `sim` (simulated): three identical dialogues.
fn records() -> Vec<DialogueRecord> {
    let ab = |a: &str, b: &str| fields(&[("A", text(a)), ("B", text(b))]);
    let mut t1 = valid(
        1,
        (1.0, 1.0, 1.0),
        "hello",
        panel(&[(ab("x", "y"), all(9)), (ab("x", "z"), all(9))]),
    );
    t1.calls = vec![
        call("user-model", 10, 5, 0.001),
        call("m", 100, 20, 0.01),
        call("judge-1", 50, 10, 0.002),
        call("judge-2", 50, 10, 0.002),
    ];
    let d1 = dialogue(
        job(
            "ecommerce_refund/0001/m/r0",
            "m",
            "ecommerce_refund",
            Adversarial::Zero,
        ),
        vec![
            t1,
            format_error(2, panel(&[(ab("x", "y"), all(3)), (ab("x", "y"), all(3))])),
            infra(3),
        ],
        DialogueEnd::UserEndedEarly,
    );
    let mut d2_turn = valid(
        1,
        (0.5, 0.5, 0.0),
        "hi!",
        panel(&[(ab("w", "y"), all(9)), (ab("w", "y"), all(9))]),
    );
    // The released path score is lower here: 0.25 instead of 0.5.
    d2_turn.scores.as_mut().unwrap().sim_path_prefix = 0.25;
    let mut j2 = job(
        "ecommerce_refund/0002/m/r0",
        "m",
        "ecommerce_refund",
        Adversarial::Strong,
    );
    j2.fields = [("A".to_string(), text("x")), ("B".to_string(), text("y"))]
        .into_iter()
        .collect();
    let d2 = dialogue(j2, vec![d2_turn], DialogueEnd::Resolved);
    let mut out = vec![d2, d1];
    for i in 0..3 {
        let id = format!("telecom_package/000{i}/sim/r0");
        let turns = vec![valid(
            1,
            (1.0, 1.0, 1.0),
            "abcd",
            panel(&[(ab("x", "z"), all(9))]),
        )];
        let j = job(&id, "sim", "telecom_package", Adversarial::Weak);
        out.push(dialogue(j, turns, DialogueEnd::Resolved));
    }
    out
}

fn model<'s>(s: &'s Summary, name: &str) -> &'s ModelSummary {
    s.models.iter().find(|m| m.model == name).unwrap()
}

fn mean_of(m: Option<Metric>) -> f64 {
    m.unwrap().mean
}

#[test]
fn summary_means_are_turn_weighted() {
    let s = summarize(&records(), &Bootstrap::default());
    assert_eq!(s.dialogues, 5);
    let m = model(&s, "m");
    let a = &m.all;
    assert_eq!((m.dialogues, a.dialogues), (2, 2));
    assert_eq!(
        (
            a.turns,
            a.valid_turns,
            a.format_error_turns,
            a.infra_error_turns
        ),
        (3, 2, 1, 1)
    );
    // OA: (100 + 0.2*33.33 + 0.8*40 + 20) / 3
    assert_close!(mean_of(a.overall), (100.0 + 20.0 / 3.0 + 52.0) / 3.0);
    assert_close!(mean_of(a.logic), 140.0 / 3.0);
    assert_close!(mean_of(a.chat), (200.0 + 100.0 / 3.0) / 3.0);
    assert_close!(mean_of(a.acc_cls), 50.0);
    assert_close!(mean_of(a.sim_path), 50.0);
    assert_close!(mean_of(a.acc_action), 100.0 / 3.0);
    assert_close!(mean_of(a.execution_gap), 50.0 - 100.0 / 3.0);
    assert_close!(mean_of(a.format_error_rate), 100.0 / 3.0);
    assert_close!(mean_of(a.chat_length), 4.0); // "hello", "hi!"
    assert_close!(
        mean_of(a.chat_dimensions.anthropomorphism_emotion),
        (200.0 + 100.0 / 3.0) / 3.0
    );
    assert_eq!(a.overall.unwrap().n, 3);
    assert_eq!(a.chat_length.unwrap().n, 2);
    assert!(!m.simulated && model(&s, "sim").simulated);
}

#[test]
fn summary_breakdowns() {
    let s = summarize(&records(), &Bootstrap::default());
    let m = model(&s, "m");
    // Turn depth: T1 = (100 + 52) / 2; final = the last scored turn (D1's format error, D2's T1).
    assert_eq!(m.by_turn.keys().collect::<Vec<_>>(), ["t1", "final"]);
    assert_close!(mean_of(m.by_turn["t1"].overall), 76.0);
    assert_close!(
        mean_of(m.by_turn["final"].overall),
        (20.0 / 3.0 + 52.0) / 2.0
    );
    // Turn-level evaluation: turns 1 and final here, the same three turns, no infra turn.
    assert_close!(mean_of(m.turn_level.overall), mean_of(m.all.overall));
    assert_eq!(m.turn_level.infra_error_turns, 0);
    // Adversarial: zero = D1, strong = D2, no weak dialogue.
    assert_eq!(
        m.by_adversarial.keys().collect::<Vec<_>>(),
        ["zero", "strong"]
    );
    assert_close!(
        mean_of(m.by_adversarial["zero"].overall),
        (100.0 + 20.0 / 3.0) / 2.0
    );
    assert_close!(mean_of(m.by_adversarial["zero"].format_error_rate), 50.0);
    assert_close!(mean_of(m.by_adversarial["strong"].logic), 40.0);
    assert_eq!(
        m.by_scenario.keys().collect::<Vec<_>>(),
        ["ecommerce_refund"]
    );
    assert_eq!(m.by_scenario["ecommerce_refund"], m.all);
    // Ends.
    assert_eq!(m.ended_early, 1);
    assert_eq!(m.end_reasons["resolved"], 1);
    assert_eq!(m.end_reasons["max_turns"], 0);
    // Coverage: every dialogue targets step1>step2 -> Refund.
    assert_eq!(s.coverage["ecommerce_refund"]["step1>step2 -> Refund"], 2);
    assert_eq!(s.coverage["telecom_package"]["step1>step2 -> Refund"], 3);
    assert_eq!(
        route_key(&route(&["s1", "s2"], "PLAN", &[("PLAN", "PLAN_A")])),
        "s1>s2 -> PLAN [PLAN=PLAN_A]"
    );
}

#[test]
fn released_variants_drop_format_errors_and_score_paths_by_prefix() {
    let s = summarize(&records(), &Bootstrap::default());
    let m = model(&s, "m");
    let paper = mean_of(m.all.overall);
    // Dropping the format-error turn: (100 + 52) / 2 = 76, above the paper's 52.89.
    let drop = &m.released[RELEASED_DROP_FORMAT_ERRORS];
    assert_close!(mean_of(drop.overall), 76.0);
    assert!(mean_of(drop.overall) > paper);
    assert_eq!((drop.turns, drop.format_error_turns), (2, 0));
    assert_close!(mean_of(drop.format_error_rate), 0.0);
    // Prefix path: D2's logic becomes 100 * (0.2 + 0.4*0.25 + 0) = 30, its OA 0.8*30 + 20 = 44.
    let prefix = &m.released[RELEASED_PREFIX_PATH];
    assert_close!(mean_of(prefix.overall), (100.0 + 20.0 / 3.0 + 44.0) / 3.0);
    assert_close!(mean_of(prefix.sim_path), (100.0 + 0.0 + 25.0) / 3.0);
    let both = &m.released[RELEASED_BOTH];
    assert_close!(mean_of(both.overall), 72.0);
    assert_close!(mean_of(both.logic), 65.0);
}

#[test]
fn intervals_bracket_the_mean_and_collapse_for_identical_dialogues() {
    let s = summarize(&records(), &Bootstrap::default());
    let m = model(&s, "m").all.overall.unwrap();
    assert!(m.ci_low <= m.mean && m.mean <= m.ci_high);
    assert!(m.ci_low < m.ci_high);
    let sim = model(&s, "sim").all.overall.unwrap();
    assert_eq!((sim.mean, sim.ci_low, sim.ci_high), (100.0, 100.0, 100.0));
}

#[test]
fn summary_is_deterministic_and_order_independent() {
    let b = Bootstrap {
        seed: 7,
        ..Bootstrap::default()
    };
    let mut reversed = records();
    reversed.reverse();
    let first = summarize(&records(), &b);
    assert_eq!(first, summarize(&records(), &b));
    let json = |s: &Summary| serde_json::to_string_pretty(s).unwrap();
    let (a, z) = (json(&first), json(&summarize(&reversed, &b)));
    if let Some((x, y)) = a.lines().zip(z.lines()).find(|(x, y)| x != y) {
        panic!("the order of the records changed the summary: {x} / {y}");
    }
    let json = serde_json::to_string(&first).unwrap();
    assert_eq!(serde_json::from_str::<Summary>(&json).unwrap(), first);
}

#[test]
fn calls_are_summed_per_role_and_model() {
    let s = summarize(&records(), &Bootstrap::default());
    let c = &model(&s, "m").calls;
    assert_eq!(c.total.calls, 4);
    assert_eq!(c.total.input_tokens, 210);
    assert_close!(c.total.cost_usd, 0.015);
    let service = c.by_role["service"];
    assert_eq!(
        (service.calls, service.input_tokens, service.output_tokens),
        (1, 100, 20)
    );
    assert_eq!(c.by_role["judge"].calls, 2);
    assert_eq!(c.by_role["user"].output_tokens, 5);
    assert_eq!(s.calls_by_model["judge-1"].input_tokens, 50);
    // No prompt-cache reads: none in summary.json.
    assert_eq!(c.total.cached_input_tokens, 0);
    assert!(
        !serde_json::to_string(&c.total)
            .unwrap()
            .contains("cached_input")
    );
}

/// Per scored turn: `m` has 3 scored turns (D1: valid, format error; the infra turn is not
/// scored; D2: valid), so its 210 input / 45 output tokens and $0.015 make 70 / 15 / $0.005
/// a turn; the service's 100 / 20 / $0.01 make 33.3333 / 6.6667 / $0.00333. Prompt tokens read
/// from the provider's cache are summed per role and model.
#[test]
fn tokens_and_cost_per_scored_turn_per_role() {
    let mut records = records();
    records[1].turns[0].calls[3].usage.cached_input_tokens = 30;
    let s = summarize(&records, &Bootstrap::default());
    let c = &model(&s, "m").calls;
    assert_eq!(c.scored_turns, 3);
    assert_eq!(
        c.per_scored_turn.keys().collect::<Vec<_>>(),
        ["all", "service", "user", "judge"]
    );
    let all = c.per_scored_turn["all"];
    assert_eq!((all.input_tokens, all.output_tokens), (70.0, 15.0));
    assert_close!(all.cost_usd, 0.005);
    let service = c.per_scored_turn["service"];
    assert_eq!(
        (service.input_tokens, service.output_tokens),
        (33.3333, 6.6667)
    );
    assert_close!(service.cost_usd, 0.01 / 3.0);
    assert_eq!(c.per_scored_turn["judge"].input_tokens, 33.3333);
    assert_eq!(c.by_role["judge"].cached_input_tokens, 30);
    assert_eq!(c.total.cached_input_tokens, 30);
    assert_eq!(s.calls_by_model["judge-2"].cached_input_tokens, 30);
    // `sim`'s dialogues made no call: three scored turns of nothing.
    let sim = &model(&s, "sim").calls;
    assert_eq!(sim.scored_turns, 3);
    assert_eq!(sim.per_scored_turn["all"], Default::default());
}

#[test]
fn judge_agreement_per_field_and_against_the_ground_truth() {
    let s = summarize(&records(), &Bootstrap::default());
    let a = &s.judge_agreement["ecommerce_refund"];
    // Scored turns: D1 T1 (judges disagree on B), D1 T2, D2 T1 (the infra turn is left out).
    assert_eq!(a.turns, 3);
    assert_close!(a.fields["A"].unanimous, 100.0);
    assert_close!(a.fields["B"].unanimous, 200.0 / 3.0);
    // Truth: D1 fixes A=x, B=z; D2 fixes A=x, B=y. Consensus A: x, x, w; B: y, y, y.
    assert_close!(a.fields["A"].matches_truth.unwrap(), 200.0 / 3.0);
    assert_close!(a.fields["B"].matches_truth.unwrap(), 100.0 / 3.0);
    assert_close!(a.unanimous_all_fields, 200.0 / 3.0);
    assert_close!(a.truth_all_fields.unwrap(), 0.0);
    assert_close!(a.truth_mean_over_fields.unwrap(), 50.0);
    assert_eq!(a.fields.keys().collect::<Vec<_>>(), ["A", "B"]);
}

#[test]
fn a_panel_of_independent_judges_votes_like_three_and_copies_of_one_like_one() {
    // 600 turns whose truth is A = x, B = z; each judge errs on a field 30% of the time.
    let mut state = 7u64;
    let mut unit = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let value = |wrong: bool, right: &str| text(if wrong { "w" } else { right });
    let run = |copies: bool, unit: &mut dyn FnMut() -> f64| {
        let mut records = Vec::new();
        for d in 0..600 {
            let shared = (unit() < 0.3, unit() < 0.3);
            let judges: Vec<(BTreeMap<String, Value>, ChatScores)> = (0..3)
                .map(|_| {
                    let (a, b) = if copies {
                        shared
                    } else {
                        (unit() < 0.3, unit() < 0.3)
                    };
                    (
                        fields(&[("A", value(a, "x")), ("B", value(b, "z"))]),
                        all(4),
                    )
                })
                .collect();
            let j = job(
                &format!("d{d}"),
                "sim",
                "ecommerce_refund",
                Adversarial::Zero,
            );
            let turn = valid(1, (1.0, 1.0, 1.0), "ok", panel(&judges));
            records.push(dialogue(j, vec![turn], DialogueEnd::Resolved));
        }
        summarize(&records, &Bootstrap::default()).judge_agreement["ecommerce_refund"].clone()
    };
    let independent = run(false, &mut unit);
    assert_eq!(independent.judges, 3);
    for field in ["A", "B"] {
        let f = &independent.fields[field];
        let n = f.effective_judges.unwrap();
        assert!(
            (2.6..=3.0).contains(&n),
            "{field}: {n} ({:?})",
            f.error_correlation
        );
    }
    let copies = run(true, &mut unit);
    for field in ["A", "B"] {
        let f = &copies.fields[field];
        assert_close!(f.error_correlation.unwrap(), 1.0);
        assert_close!(f.effective_judges.unwrap(), 1.0);
    }
    assert_close!(super::summary::effective_judges(5, 0.0), 5.0);
    assert_close!(super::summary::effective_judges(5, 0.25), 2.5);
    assert_close!(super::summary::effective_judges(3, -0.9), 3.0);
}

#[test]
fn repeats_take_the_median_per_case() {
    assert_eq!(case_key("tp/0001/sim/r12"), "tp/0001/sim");
    assert_eq!(case_key("tp/0001/sim/rx"), "tp/0001/sim/rx");
    assert_eq!(case_key("tp/0001/r"), "tp/0001/r");
    assert_eq!(case_key("r0"), "r0");
    // Logic per dialogue (chat 100 everywhere): case 1: 10, 50, 20; case 2: 30, 40; case 3: 90.
    let runs: [(&str, &[f64]); 3] = [
        ("telecom_package/0001/r", &[0.1, 0.5, 0.2]),
        ("telecom_package/0002/r", &[0.3, 0.4]),
        ("telecom_package/0003/r", &[0.9]),
    ];
    let mut repeated = Vec::new();
    for (case, xs) in runs {
        for (i, x) in xs.iter().enumerate() {
            let mut j = job(
                &format!("{case}/r{i}"),
                "r",
                "telecom_package",
                Adversarial::Zero,
            );
            j.repeat = i as u32;
            let turn = valid(1, (*x, *x, *x), "c", panel(&[(fields(&[]), all(9))]));
            repeated.push(dialogue(j, vec![turn], DialogueEnd::Resolved));
        }
    }
    let s = summarize(&repeated, &Bootstrap::default());
    let r = model(&s, "r").repeats.as_ref().unwrap();
    assert_eq!((r.cases, r.max_repeats), (3, 3));
    // Medians: 20, 35, 90.
    assert_close!(r.logic.mean, 145.0 / 3.0);
    assert_close!(r.logic.median, 35.0);
    // OA = 0.8 Logic + 20: medians 36, 48, 92.
    assert_close!(r.overall.mean, 176.0 / 3.0);
    assert_close!(r.overall.median, 48.0);
    assert_close!(r.chat.median, 100.0);
    // No case ran twice: no section.
    let s = summarize(&records(), &Bootstrap::default());
    assert!(model(&s, "m").repeats.is_none());
}

#[test]
fn pass_hat_is_the_ratio_of_binomials() {
    // C(2,2)/C(3,2) = 1/3; C(3,2)/C(5,2) = 3/10; C(1,1)/C(4,1) = 1/4; C(2,3) = 0.
    assert_close!(pass_hat(2, 3, 2).unwrap(), 1.0 / 3.0);
    assert_close!(pass_hat(3, 5, 2).unwrap(), 0.3);
    assert_close!(pass_hat(3, 5, 3).unwrap(), 0.1);
    assert_close!(pass_hat(1, 4, 1).unwrap(), 0.25);
    assert_close!(pass_hat(2, 3, 3).unwrap(), 0.0);
    assert_close!(pass_hat(4, 4, 4).unwrap(), 1.0);
    assert_eq!(pass_hat(1, 2, 3), None);
    assert_eq!(pass_hat(1, 2, 0), None);
}

#[test]
fn pass_k_averages_the_estimator_over_cases() {
    // Case 1: pass, pass, fail (wrong action); case 2: three passes; case 3: two repeats that
    // fail (an infrastructure end, then a wrong action).
    let plan: [(&str, &[(&str, DialogueEnd)]); 3] = [
        (
            "telecom_package/0001/p",
            &[
                ("Refund", DialogueEnd::Resolved),
                ("Refund", DialogueEnd::MaxTurns),
                ("Deny", DialogueEnd::UserEndedEarly),
            ],
        ),
        (
            "telecom_package/0002/p",
            &[("Refund", DialogueEnd::Resolved); 3],
        ),
        (
            "telecom_package/0003/p",
            &[
                ("Refund", DialogueEnd::InfraError),
                ("Deny", DialogueEnd::MaxTurns),
            ],
        ),
    ];
    let mut repeated = Vec::new();
    for (case, runs) in plan {
        for (i, (action, end)) in runs.iter().enumerate() {
            let mut j = job(
                &format!("{case}/r{i}"),
                "p",
                "telecom_package",
                Adversarial::Zero,
            );
            j.repeat = i as u32;
            let mut turn = valid(1, (1.0, 1.0, 1.0), "c", panel(&[(fields(&[]), all(9))]));
            if let ServiceOutcome::Valid { turn } = &mut turn.outcome {
                turn.action = action.to_string();
            }
            repeated.push(dialogue(j, vec![turn], *end));
        }
    }
    let reached: Vec<bool> = repeated.iter().map(reached_target).collect();
    assert_eq!(reached, [true, true, false, true, true, true, false, false]);
    let s = summarize(&repeated, &Bootstrap::default());
    let p = &model(&s, "p").pass_k;
    assert_eq!(
        p.iter().map(|p| (p.k, p.cases)).collect::<Vec<_>>(),
        [(1, 3), (2, 3), (3, 2)]
    );
    // k=1: (2/3 + 1 + 0) / 3; k=2: (1/3 + 1 + 0) / 3; k=3 (cases 1 and 2): (0 + 1) / 2.
    assert_close!(p[0].pass, 100.0 * 5.0 / 9.0);
    assert_close!(p[1].pass, 100.0 * 4.0 / 9.0);
    assert_close!(p[2].pass, 50.0);
    let text = leaderboard_text(&s);
    assert!(text.contains("pass^3"), "{text}");
    assert!(
        text.contains("\n  pass^k            the share of cases, %, whose k repeats"),
        "{text}"
    );
    let md = leaderboard_markdown(&s);
    assert!(md.contains("## pass^k"));
    // The per-case table is named apart from the per-turn OA, and the legend says how.
    assert!(
        md.contains("| Model | Cases | Max repeats | OA per case (mean) | OA per case (median) |"),
        "{md}"
    );
    assert!(
        md.contains("- **OA/Logic/Chat per case (mean)**: a case is one customer served by one model; its score is the median over its repeats"),
        "{md}"
    );
    assert!(!md.contains("OA mean"), "{md}");
    // Without repeats: no pass^k, and summary.json has no such field.
    let s = summarize(&records(), &Bootstrap::default());
    assert!(model(&s, "m").pass_k.is_empty());
    assert!(!serde_json::to_string(&s).unwrap().contains("pass_k"));
    assert!(!leaderboard_text(&s).contains("pass^"));
}

// ---------------------------------------------------------------- rendering

#[test]
fn leaderboard_has_the_shape_of_table_1() {
    let s = summarize(&records(), &Bootstrap::default());
    let md = leaderboard_markdown(&s);
    assert!(
        md.contains(
            "| Model | OA | Logic | Chat | ER | TP | Format Error (%) | Chat Length | Scored turns |"
        ),
        "{md}"
    );
    // Sorted by OA: the simulated model (100) before m (52.89).
    let sim = md
        .find("| sim (simulated) | 100.00 ±0.0 |")
        .expect("sim row");
    let m = md.find("| m | 52.89 ±").expect("m row");
    assert!(sim < m);
    assert!(md.contains("(simulated): a built-in simulated backend"));
    for section in [
        "## Execution gap",
        "## Chat sub-dimensions",
        "## Turn depth",
        "## Adversarial intensity",
        "## Judge agreement",
        "## Released-code variants",
        "## Tokens and cost",
        "## Route coverage",
    ] {
        assert!(md.contains(section), "{section} missing");
    }
    assert!(!md.contains("## Per case"));
    let text = leaderboard_text(&s);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("Model") && lines[0].ends_with("Scored turns"));
    assert!(lines[2].starts_with("sim (simulated)"));
}

#[test]
fn every_abbreviation_shown_is_spelled_out_in_a_legend() {
    let s = summarize(&records(), &Bootstrap::default());
    let columns = leaderboard::scenario_columns(&s);
    let spelled: Vec<(&str, &str, &str)> = columns
        .iter()
        .map(|c| (c.id.as_str(), c.abbreviation.as_str(), c.name.as_str()))
        .collect();
    assert_eq!(
        spelled,
        [
            ("ecommerce_refund", "ER", "E-commerce Refund"),
            ("telecom_package", "TP", "Telecom Package")
        ]
    );
    let md = leaderboard_markdown(&s);
    let legend = &md[md.find("\n## Legend\n").expect("a legend")..];
    assert!(md.ends_with(legend), "the legend ends leaderboard.md");
    for line in [
        "- **OA**: Overall = 0.8 Logic + 0.2 Chat",
        "- **ER**: OA in scenario E-commerce Refund (ecommerce_refund)",
        "- **TP**: OA in scenario Telecom Package (telecom_package)",
        "- **Format Error (%)**: % of the agent's answers that did not parse",
        "- **Scored turns**: the turns the means are over: valid answers the judges scored, and format errors on judged turns, counted with Logic 0",
        "- **Chat Length**: characters of the agent's chat reply",
        "- **Acc_cls**: classification accuracy",
        "- **Ling.**: linguistic quality",
        "- **T1, T5, T10, T15, Final**: OA at turn 1",
        "- **±**: half the 95% cluster-bootstrap interval",
    ] {
        assert!(legend.contains(line), "{line} missing from\n{legend}");
    }
    // Each term once; none for what the tables do not show (no repeats here).
    assert_eq!(legend.matches("- **OA**").count(), 1);
    assert!(
        !legend.contains("pass^k") && !legend.contains("per case"),
        "{legend}"
    );
    let text = leaderboard_text(&s);
    let legend = &text[text.find("\nLegend:\n").expect("a legend")..];
    assert!(text.ends_with(legend));
    for line in [
        "  OA                Overall = 0.8 Logic + 0.2 Chat",
        "  ER                OA in scenario E-commerce Refund (ecommerce_refund)",
        "  Format Error (%)  % of the agent's answers that did not parse",
        "  Chat Length       characters of the agent's chat reply",
    ] {
        assert!(legend.contains(line), "{line} missing from\n{legend}");
    }
    // The terminal shows no sub-dimension: its legend does not explain one.
    assert!(!legend.contains("Ling."));
}

#[test]
fn scenario_columns_are_headed_by_initials_unless_they_would_clash() {
    let mut rs = records();
    let ids = [
        "order_audit",
        "billing_dispute",
        "bank_dispute",
        "returns",
        "returns",
    ];
    for (r, id) in rs.iter_mut().zip(ids) {
        r.job.scenario = id.into();
    }
    let s = summarize(&rs, &Bootstrap::default());
    let heads: Vec<(String, String)> = leaderboard::scenario_columns(&s)
        .into_iter()
        .map(|c| (c.abbreviation, c.name))
        .collect();
    let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
    // OA is a heading already; BD would head two columns; one word stays whole; custom
    // scenarios are named by their id.
    assert_eq!(
        heads,
        [
            pair("bank_dispute", "bank_dispute"),
            pair("billing_dispute", "billing_dispute"),
            pair("order_audit", "order_audit"),
            pair("returns", "returns"),
        ]
    );
    let text = leaderboard_text(&s);
    assert!(text.contains("  bank_dispute  "), "{text}");
}

/// A turn the agent answered but no judge scored (the panel failed).
fn unjudged(mut turn: TurnRecord) -> TurnRecord {
    turn.judges = None;
    turn.scores = None;
    turn.infra_error = Some("no judge answered".into());
    turn
}

#[test]
fn format_errors_count_whether_or_not_a_judge_answered() {
    let ab = fields(&[("A", text("x")), ("B", text("y"))]);
    let judged = || panel(&[(ab.clone(), all(9))]);
    // One judged valid turn, a format error no judge answered, a valid turn no judge answered,
    // an unreachable agent.
    let turns = vec![
        valid(1, (1.0, 1.0, 1.0), "ok", judged()),
        unjudged(format_error(2, judged())),
        unjudged(valid(3, (1.0, 1.0, 1.0), "ok", judged())),
        infra(4),
    ];
    let j = job(
        "ecommerce_refund/0001/m/r0",
        "m",
        "ecommerce_refund",
        Adversarial::Zero,
    );
    let s = summarize(
        &[dialogue(j, turns, DialogueEnd::MaxTurns)],
        &Bootstrap::default(),
    );
    let a = &model(&s, "m").all;
    // The format error is the agent's own: it is known without the judges.
    assert_eq!(a.format_error_turns, 1);
    // Scored turns: the judged valid one alone (the format error has no scores).
    assert_eq!((a.turns, a.valid_turns, a.infra_error_turns), (1, 1, 2));
    // Format Error (%): one of the three answers the agent gave (the unjudged valid one too).
    assert_eq!(a.format_error_rate.unwrap().n, 3);
    assert_close!(mean_of(a.format_error_rate), 100.0 / 3.0);
    // The scores come from the judged turn alone.
    assert_eq!(a.overall.unwrap().n, 1);
    assert_close!(mean_of(a.logic), 100.0);
    // The final turn is the last scored one.
    assert_eq!(model(&s, "m").by_turn["final"].overall.unwrap().n, 1);
}

#[test]
fn the_online_fold_equals_a_direct_computation() {
    use super::stats::{Cluster, RatioFold, poisson_weights};
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let b = Bootstrap {
        resamples: 500,
        ..Bootstrap::default()
    };
    // 40 clusters of 1 to 6 observations in 0..100.
    let clusters: Vec<(String, Vec<f64>)> = (0..40)
        .map(|i| {
            let n = rng.random_range(1..=6);
            (
                format!("d{i}"),
                (0..n).map(|_| rng.random_range(0.0..100.0)).collect(),
            )
        })
        .collect();
    let mut fold = RatioFold::<1, 1>::new([0]);
    for (id, xs) in &clusters {
        let mut c = Cluster::<1, 1>::new();
        for x in xs {
            c.observe(0, Some(*x));
            c.count(0);
        }
        fold.add(&c, &poisson_weights(b.seed, id, b.resamples));
    }
    let [m] = fold.metrics(&b);
    let m = m.unwrap();
    // Direct: the pooled mean, and the same resamples computed naively.
    let (sum, n): (f64, usize) = clusters.iter().fold((0.0, 0), |(s, n), (_, xs)| {
        (s + xs.iter().sum::<f64>(), n + xs.len())
    });
    assert!(
        (m.mean - sum / n as f64).abs() < 1e-8,
        "{} {}",
        m.mean,
        sum / n as f64
    );
    assert_eq!(m.n, n);
    let weights: Vec<Vec<u8>> = clusters
        .iter()
        .map(|(id, _)| poisson_weights(b.seed, id, b.resamples))
        .collect();
    let mut draws: Vec<f64> = (0..b.resamples)
        .filter_map(|r| {
            let (mut s, mut k) = (0.0, 0.0);
            for ((_, xs), w) in clusters.iter().zip(&weights) {
                s += f64::from(w[r]) * xs.iter().sum::<f64>();
                k += f64::from(w[r]) * xs.len() as f64;
            }
            (k > 0.0).then(|| s / k)
        })
        .collect();
    draws.sort_by(f64::total_cmp);
    let low = quantile(&draws, 0.025).unwrap();
    let high = quantile(&draws, 0.975).unwrap();
    // The fold holds its sums in units of 10^-4: the bounds agree to that.
    assert!((m.ci_low - low).abs() < 1e-3, "{} {low}", m.ci_low);
    assert!((m.ci_high - high).abs() < 1e-3, "{} {high}", m.ci_high);
}

#[test]
fn an_agent_asked_with_a_schema_is_labelled_structured() {
    use crate::plan::model::StructuredOutput;
    let plain = summarize(&records(), &Bootstrap::default());
    assert_eq!(model(&plain, "m").structured_output, None);
    assert!(
        !serde_json::to_string(&plain)
            .unwrap()
            .contains("structured_output")
    );
    assert!(!leaderboard_markdown(&plain).contains("(structured)"));
    let mut labelled = records();
    for r in labelled.iter_mut().filter(|r| r.job.service_model == "m") {
        r.structured_output = Some(StructuredOutput::JsonObjectSchema);
    }
    let s = summarize(&labelled, &Bootstrap::default());
    assert_eq!(
        model(&s, "m").structured_output,
        Some(StructuredOutput::JsonObjectSchema)
    );
    let json = serde_json::to_value(&s).unwrap();
    let m = json["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == "m")
        .unwrap();
    assert_eq!(m["structured_output"], "json_object_schema");
    let md = leaderboard_markdown(&s);
    assert!(md.contains("| m (structured) |"), "{md}");
    assert!(
        md.contains("\n(structured): the agent was asked with a JSON Schema"),
        "{md}"
    );
    let text = leaderboard_text(&s);
    assert!(text.contains("m (structured)"), "{text}");
    assert!(text.contains("(structured): the agent was asked"), "{text}");
}

// ---------------------------------------------------------------- judged turns

/// A turn the judges were not asked about (`judge_turns`).
fn not_asked(mut turn: TurnRecord) -> TurnRecord {
    turn.judges = None;
    turn.scores = None;
    turn
}

#[test]
fn turns_not_judged_have_no_scores_but_count_their_format() {
    let ab = fields(&[("A", text("x")), ("B", text("y"))]);
    let judged = |chat: u8| panel(&[(ab.clone(), all(chat))]);
    let mut paper = job(
        "ecommerce_refund/0001/m/r0",
        "m",
        "ecommerce_refund",
        Adversarial::Zero,
    );
    paper.judge_turns = crate::protocol::JudgeTurns::Paper;
    // Turns 1 and 4 (the final one) judged; a valid answer and a format error between them.
    let d = dialogue(
        paper.clone(),
        vec![
            valid(1, (1.0, 1.0, 1.0), "a", judged(9)),
            not_asked(valid(2, (0.0, 0.0, 0.0), "b", judged(3))),
            not_asked(format_error(3, judged(3))),
            valid(4, (0.5, 0.5, 0.5), "d", judged(9)),
        ],
        DialogueEnd::UserEndedEarly,
    );
    let s = summarize(std::slice::from_ref(&d), &Bootstrap::default());
    let all = &model(&s, "m").all;
    assert_eq!(
        (
            all.turns,
            all.valid_turns,
            all.format_error_turns,
            all.unjudged_turns,
            all.infra_error_turns
        ),
        // The format error of turn 3 was not judged: it is not a scored turn, yet it counts in
        // the format-error rate.
        (2, 2, 1, 1, 0)
    );
    assert_eq!(
        all.overall.as_ref().unwrap().n,
        all.turns,
        "n of OA = scored turns"
    );
    assert_eq!(model(&s, "m").calls.scored_turns, all.turns);
    // Overall over the judged turns only: (80 + 20) and (40 + 20), Chat 100.
    assert_close!(all.overall.as_ref().unwrap().mean, (100.0 + 60.0) / 2.0);
    // The format-error rate over every answer, judged or not: 1 of 4.
    assert_close!(all.format_error_rate.as_ref().unwrap().mean, 25.0);
    // The final depth is the last judged turn.
    assert_close!(
        model(&s, "m").by_turn["final"].logic.as_ref().unwrap().mean,
        50.0
    );
    assert_eq!(s.judged_turns, Some(crate::protocol::JudgeTurns::Paper));
    let said = "judged turns: paper: turns 1, 5, 10, 15 and each dialogue's final turn";
    assert!(
        leaderboard_text(&s).contains(said),
        "{}",
        leaderboard_text(&s)
    );
    let md = leaderboard_markdown(&s);
    assert!(
        md.contains("Judged turns: paper: turns 1, 5, 10, 15"),
        "{md}"
    );
    assert!(md.contains("| Not judged (valid answers) |"), "{md}");
    // The dialogues table's scored turns are the means' n.
    assert!(md.contains("| m | 1 | 2 | 1 | 0 | 1 |"), "{md}");
    // Dialogues judged on different turns: the summary says so instead of naming one.
    let mut every = d.clone();
    every.job.dialogue_id = "ecommerce_refund/0002/m/r0".into();
    every.job.judge_turns = crate::protocol::JudgeTurns::Every;
    let s = summarize(&[d, every], &Bootstrap::default());
    assert_eq!(s.judged_turns, None);
    assert!(leaderboard_text(&s).contains("judged turns: not the same in every dialogue"));
    // Records of before (every turn judged): no unjudged column.
    let s = summarize(&records(), &Bootstrap::default());
    assert_eq!(s.judged_turns, Some(crate::protocol::JudgeTurns::Every));
    assert!(!leaderboard_markdown(&s).contains("Not judged"));
}

/// Records whose dialogues run to turn 16: valid turns of varied scores, format errors, an
/// unreachable agent, paths the released prefix score rates lower, dialogues ending at a depth
/// and off it.
fn long_records() -> Vec<DialogueRecord> {
    let ab = |a: &str| fields(&[("A", text(a)), ("B", text("z"))]);
    let mut out = records();
    for (i, length) in [16u32, 5, 7, 10, 12, 1].into_iter().enumerate() {
        let turns = (1..=length)
            .map(|n| {
                let k = (n as usize + i) % 7;
                match k {
                    0 => format_error(n, panel(&[(ab("x"), all(3))])),
                    5 if n > 1 => infra(n),
                    6 => unjudged(format_error(n, panel(&[(ab("x"), all(3))]))),
                    _ => {
                        let mut t = valid(
                            n,
                            (
                                k as f64 / 4.0,
                                1.0 - k as f64 / 8.0,
                                f64::from(k.is_multiple_of(2)),
                            ),
                            &"x".repeat(k + n as usize),
                            panel(&[(ab("x"), all(k as u8 + 3)), (ab("w"), all(9))]),
                        );
                        if k % 3 == 1 {
                            t.scores.as_mut().unwrap().sim_path_prefix = 0.125;
                        }
                        t
                    }
                }
            })
            .collect();
        let level = [Adversarial::Zero, Adversarial::Weak, Adversarial::Strong][i % 3];
        let scenario = ["ecommerce_refund", "telecom_package"][i % 2];
        let j = job(&format!("{scenario}/01{i:02}/m/r0"), "m", scenario, level);
        out.push(dialogue(j, turns, DialogueEnd::MaxTurns));
    }
    out
}

/// The groups the summary derives from others (every turn, the turn-level group, the final
/// turn, the released variants) equal the group folded directly: a summary of the records cut
/// to those turns, intervals included.
#[test]
fn derived_groups_equal_a_direct_fold_of_their_turns() {
    let bootstrap = Bootstrap::default();
    let records = long_records();
    let s = summarize(&records, &bootstrap);
    let m = model(&s, "m");
    let every_turn = |edit: &dyn Fn(&DialogueRecord) -> Vec<TurnRecord>| {
        let cut: Vec<DialogueRecord> = records
            .iter()
            .map(|r| DialogueRecord {
                turns: edit(r),
                ..r.clone()
            })
            .collect();
        model(&summarize(&cut, &bootstrap), "m").all.clone()
    };
    let is_format_error = |t: &TurnRecord| matches!(t.outcome, ServiceOutcome::FormatError { .. });
    let last_scored = |r: &DialogueRecord| {
        r.turns.iter().rposition(|t| {
            t.scores.is_some() && !matches!(t.outcome, ServiceOutcome::InfraError { .. })
        })
    };
    let prefixed = |turns: Vec<TurnRecord>| -> Vec<TurnRecord> {
        turns
            .into_iter()
            .map(|mut t| {
                if let Some(s) = &mut t.scores {
                    s.sim_path = s.sim_path_prefix;
                    s.logic = logic(s.acc_cls, s.sim_path, s.acc_action);
                    s.overall = overall(s.logic, s.chat);
                }
                t
            })
            .collect()
    };
    let kept = |r: &DialogueRecord| -> Vec<TurnRecord> {
        r.turns
            .iter()
            .filter(|t| !is_format_error(t))
            .cloned()
            .collect()
    };
    assert!(m.all.format_error_turns > 0 && m.all.infra_error_turns > 0);
    assert_eq!(
        m.by_scenario.values().map(|g| g.dialogues).sum::<usize>(),
        m.all.dialogues
    );
    assert_eq!(m.released[RELEASED_DROP_FORMAT_ERRORS], every_turn(&kept));
    assert_eq!(
        m.released[RELEASED_PREFIX_PATH],
        every_turn(&|r| prefixed(r.turns.clone()))
    );
    assert_ne!(m.released[RELEASED_PREFIX_PATH], m.all);
    assert_eq!(
        m.released[RELEASED_BOTH],
        every_turn(&|r| prefixed(kept(r)))
    );
    assert_eq!(
        m.turn_level,
        every_turn(&|r| {
            let last = last_scored(r);
            (r.turns.iter().enumerate())
                .filter(|(i, t)| super::summary::TURN_DEPTHS.contains(&t.turn) || Some(*i) == last)
                .map(|(_, t)| t.clone())
                .collect()
        })
    );
    assert_eq!(
        m.by_turn["final"],
        every_turn(&|r| last_scored(r)
            .map(|i| r.turns[i].clone())
            .into_iter()
            .collect())
    );
    assert_eq!(
        m.by_turn.keys().collect::<Vec<_>>(),
        ["t1", "t5", "t10", "t15", "final"]
    );
}

#[test]
fn a_turn_verdict_says_how_it_stood_against_its_reference() {
    use crate::protocol::TurnVerdict;
    let reference = |path: &[&str], action: &str| Some(Ok(route(path, action, &[])));
    let judges = || panel(&[(BTreeMap::new(), scores(9, 9, 9, 9, 9))]);
    let mut followed = valid(1, (1.0, 1.0, 1.0), "ok", judges());
    followed.reference = reference(&["step1"], "Refund");
    assert_eq!(followed.verdict(), TurnVerdict::Followed);
    let mut other_action = followed.clone();
    other_action.reference = reference(&["step1"], "Reject");
    assert_eq!(other_action.verdict(), TurnVerdict::Left);
    let mut other_path = followed.clone();
    other_path.reference = reference(&["step1", "step2"], "Refund");
    assert_eq!(other_path.verdict(), TurnVerdict::Left);
    let mut no_route = followed.clone();
    no_route.reference = Some(Err("no route".into()));
    assert_eq!(no_route.verdict(), TurnVerdict::NoReference);
    let mut not_judged = followed.clone();
    not_judged.judges = None;
    not_judged.reference = None;
    assert_eq!(not_judged.verdict(), TurnVerdict::NotJudged);
    let mut broken = format_error(2, judges());
    broken.reference = reference(&["step1"], "Refund");
    assert_eq!(broken.verdict(), TurnVerdict::FormatError);
    assert!(broken.verdict().left() && other_path.verdict().left());
    assert!(!followed.verdict().left() && !not_judged.verdict().left());
    // The judges unreachable on a format error: an infrastructure error, not scored.
    let mut unjudged = format_error(3, judges());
    unjudged.judges = None;
    unjudged.infra_error = Some("judges down".into());
    assert_eq!(unjudged.verdict(), TurnVerdict::InfraError);
    assert_eq!(infra(4).verdict(), TurnVerdict::InfraError);
    let letters: String = [&followed, &other_action, &not_judged, &broken, &no_route]
        .iter()
        .map(|t| t.verdict().letter())
        .collect();
    assert_eq!(letters, "ox-fn");
}

/// The names of 27 models under test as a sweep over hosted models has them (`/` written `--`),
/// two pairs differing only near their end; the first five simulated.
const MANY_MODELS: [&str; 27] = [
    "sim-meta-llama--Llama-3.3-70B-Instruct-Turbo",
    "sim-CohereForAI--c4ai-command-r-plus-08-2024",
    "sim-CohereForAI--c4ai-command-r-plus-04-2024",
    "sim-Qwen--Qwen2.5-72B-Instruct-Turbo",
    "sim-mistralai--Mixtral-8x22B-Instruct-v0.1",
    "meta-llama--Llama-3.3-70B-Instruct-Turbo",
    "CohereForAI--c4ai-command-r-plus-08-2024",
    "CohereForAI--c4ai-command-r-plus-04-2024",
    "meta-llama--Meta-Llama-3.1-405B-Instruct-Turbo",
    "meta-llama--Meta-Llama-3.1-8B-Instruct-Turbo",
    "Qwen--Qwen2.5-72B-Instruct-Turbo",
    "Qwen--Qwen2.5-7B-Instruct-Turbo",
    "mistralai--Mixtral-8x22B-Instruct-v0.1",
    "mistralai--Mistral-Small-24B-Instruct-2501",
    "deepseek-ai--DeepSeek-V3",
    "deepseek-ai--DeepSeek-R1-Distill-Llama-70B",
    "google--gemma-2-27b-it",
    "google--gemma-2-9b-it",
    "microsoft--WizardLM-2-8x22B",
    "NousResearch--Nous-Hermes-2-Mixtral-8x7B-DPO",
    "gpt-4.1",
    "gpt-4.1-mini",
    "gpt-4o-2024-11-20",
    "claude-sonnet-4-20250514",
    "claude-3-5-haiku-20241022",
    "gemini-2.0-flash-001",
    "nvidia--Llama-3.1-Nemotron-70B-Instruct-HF",
];

/// The six bundled scenarios played by the first `n` of [`MANY_MODELS`], one dialogue each,
/// model `i` with Logic parts `i / 27` (so OA rises with `i`), under `judge_turns`.
fn many_models(n: usize, judge_turns: crate::protocol::JudgeTurns) -> Summary {
    let ab = fields(&[("A", text("x")), ("B", text("z"))]);
    let mut records = Vec::new();
    for (i, name) in MANY_MODELS.iter().enumerate().take(n) {
        let share = i as f64 / MANY_MODELS.len() as f64;
        for (k, sc) in crate::scenario::bundled::BUNDLED.iter().enumerate() {
            let sc = sc.0.trim_end_matches(".yaml");
            let turns = vec![valid(
                1,
                (share, share, 1.0),
                "hello",
                panel(&[(ab.clone(), all(9))]),
            )];
            let mut j = job(
                &format!("{sc}/000{k}/{name}/r0"),
                name,
                sc,
                Adversarial::Zero,
            );
            j.judge_turns = judge_turns.clone();
            records.push(dialogue(j, turns, DialogueEnd::Resolved));
        }
    }
    summarize(&records, &Bootstrap::default())
}

#[test]
fn the_terminal_leaderboard_fits_120_columns_at_27_models_ranked_by_oa() {
    let s = many_models(27, crate::protocol::JudgeTurns::Paper);
    assert_eq!(s.models.len(), 27);
    let text = leaderboard_text(&s);
    for line in text.lines() {
        assert!(
            line.chars().count() <= leaderboard::TERMINAL_WIDTH,
            "{} characters: {line}\n{text}",
            line.chars().count()
        );
    }
    // The main table: the heading, the rule, then one row per model, best OA first.
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("Model") && lines[0].ends_with("Scored turns"));
    let cells: Vec<&str> = lines[2..29]
        .iter()
        .map(|l| l.split("  ").next().unwrap().trim_end())
        .collect();
    let mut unique = cells.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), 27, "names cut apart: {cells:?}");
    for (cell, name) in cells.iter().zip(MANY_MODELS.iter().rev()) {
        let name = leaderboard::model_label(name, name.starts_with("sim"), false);
        match cell.split_once('…') {
            Some((head, tail)) => {
                assert!(
                    name.starts_with(head) && name.ends_with(tail),
                    "{cell} {name}"
                )
            }
            None => assert_eq!(*cell, name),
        }
    }
    // Cut to 38 characters (what the five number columns leave), in the middle: the two that
    // differ in their date stay apart, a tag stays whole, a name that fits too.
    assert!(cells.contains(&"gpt-4.1"), "{cells:?}");
    assert!(
        cells.contains(&"CohereForAI--c4ai-c…and-r-plus-08-2024"),
        "{cells:?}"
    );
    assert!(
        cells.contains(&"CohereForAI--c4ai-c…and-r-plus-04-2024"),
        "{cells:?}"
    );
    assert!(
        cells.contains(&"sim-CohereFor…plus-08-2024 (simulated)"),
        "{cells:?}"
    );
    // OA per scenario below, in the paper's column order, the legend after it.
    let below = text.find("\nOA per scenario:\n").expect("a scenario table");
    assert!(text[below..].contains("\nModel  "));
    let heading = text[below..].lines().nth(2).unwrap();
    let heads: Vec<&str> = heading.split_whitespace().collect();
    assert_eq!(heads, ["Model", "ER", "TP", "PS", "LD", "AR", "OE"]);
    assert!(text.contains("Model names cut with … to fit 120 columns"));
    assert!(text.find("\nLegend:\n").unwrap() > below);
    assert!(
        text.contains(
            "\n  ER                OA in scenario E-commerce Refund (ecommerce_refund)\n"
        )
    );
}

#[test]
fn names_are_cut_in_the_middle_and_stay_apart() {
    let names: Vec<String> = ["abcdefghij-2024-08", "abcdefghij-2024-04", "short"]
        .map(String::from)
        .to_vec();
    assert_eq!(
        leaderboard::cut_names(&names, 9),
        ["abcd…4-08", "abcd…4-04", "short"]
    );
    // Alike at both ends: the cut moves to where they differ.
    let names: Vec<String> = ["abc-1-model-x", "abc-2-model-x"]
        .map(String::from)
        .to_vec();
    assert_eq!(leaderboard::cut_names(&names, 7), ["abc-1…x", "abc-2…x"]);
    // Tags at the end are kept, the name before them cut.
    let names: Vec<String> = vec!["abcdefghij-2024-08 (simulated)".into()];
    assert_eq!(
        leaderboard::cut_names(&names, 21),
        ["abcd…4-08 (simulated)"]
    );
    // Nothing tells them apart within the width: kept whole.
    let names: Vec<String> = ["a-middle-1-z", "a-middle-2-z"].map(String::from).to_vec();
    assert_eq!(leaderboard::cut_names(&names, 3), names);
}

#[test]
fn the_turn_depth_table_shows_one_oa_column_when_the_judged_turns_are_the_turn_level_ones() {
    let paper = leaderboard_markdown(&many_models(2, crate::protocol::JudgeTurns::Paper));
    let every = leaderboard_markdown(&many_models(2, crate::protocol::JudgeTurns::Every));
    let depth = |md: &str| -> String {
        let at = md.find("## Turn depth (OA)").expect("the table");
        md[at..].lines().nth(2).unwrap().to_string()
    };
    assert_eq!(
        depth(&paper),
        "| Model | T1 | T5 | T10 | T15 | Final | Turn-level (1/5/10/15/final) |"
    );
    assert_eq!(
        depth(&every),
        "| Model | T1 | T5 | T10 | T15 | Final | Turn-level (1/5/10/15/final) | All turns |"
    );
}
