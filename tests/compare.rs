//! Comparing two runs (`sage report A --compare B`), the paired bootstrap behind it, and `sage
//! show`: a regression planted in one simulated agent is listed first with an interval below 0,
//! the untouched agent does not move, the flipped dialogues link to both transcripts, and runs
//! that share nothing are refused.

mod common;

use sage::protocol::{
    AgentTurn, ChatScores, DialogueEnd, DialogueJob, DialogueRecord, JudgeReply, Judgment,
    ServiceOutcome, TurnRecord, TurnScores, Usage,
};
use sage::report::compare::{
    CompareFold, Comparison, FlipKind, Group, Links, RunInfo, Status, dialogue_href,
    encode_uri_component, relative_url,
};
use sage::scenario::Adversarial;
use sage::scoring::Bootstrap;
use sage::scoring::stats::{Cluster, RatioFold};
use sage::sop::Route;
use std::path::Path;
use std::sync::OnceLock;

/// A run configuration of two scenarios and two simulated agents; `strong_skills` is put into
/// sim-strong's `skills`.
fn config(dir: &Path, name: &str, strong_skills: &str, scenarios: &[&str]) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let files: Vec<String> = scenarios
        .iter()
        .map(|s| format!("\"{}\"", root.join(format!("{s}.yaml")).display()))
        .collect();
    let text = format!(
        "models:
  - {{name: sim-strong, provider: simulated, sim: {{kind: agent, profile: strong, skills: {{{strong_skills}}}}}}}
  - {{name: sim-weak, provider: simulated, sim: {{kind: agent, profile: weak}}}}
  - {{name: sim-user, provider: simulated, sim: {{kind: user}}}}
  - {{name: sim-judge-1, provider: simulated, sim: {{kind: judge}}}}
  - {{name: sim-judge-2, provider: simulated, sim: {{kind: judge, noise: 0.03}}}}
  - {{name: sim-judge-3, provider: simulated, sim: {{kind: judge, noise: 0.06}}}}
service_models: [sim-strong, sim-weak]
user_model: sim-user
judge_models: [sim-judge-1, sim-judge-2, sim-judge-3]
scenarios: [{}]
dialogues_per_scenario: 20
min_per_route: 0
max_turns: 8
seed: 11
",
        files.join(", ")
    );
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// Runs `name` in `dir` (results in `dir/name`).
fn run(dir: &Path, name: &str, strong_skills: &str, scenarios: &[&str]) {
    let config = config(dir, name, strong_skills, scenarios);
    let out = dir.display().to_string();
    common::sage_ok(&[
        "run", "--config", &config, "--run-id", name, "--out", &out, "--quiet",
    ]);
}

/// The two runs, made once: `base` and `worse` (sim-strong derives its action right a fifth of
/// the time), both over telecom_package and ecommerce_refund; `other` over airline_refund only.
fn runs() -> &'static Path {
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = common::fresh_dir("compare_runs");
        let two = ["telecom_package", "ecommerce_refund"];
        run(&dir, "base", "", &two);
        run(&dir, "worse", "action_derivation: 0.2", &two);
        run(&dir, "other", "", &["airline_refund"]);
        dir
    })
}

/// The comparison of two folders through the library, as the CLI folds it.
fn compare(current: &Path, baseline: &Path) -> Comparison {
    let info = |dir: &Path| {
        let run = sage::store::RunDir::open(dir).unwrap();
        let m = run.read_manifest().unwrap();
        (
            run,
            RunInfo {
                id: m.run_id,
                scenarios: m.scenarios,
            },
        )
    };
    let (a, a_info) = info(current);
    let (b, b_info) = info(baseline);
    let bootstrap = Bootstrap {
        seed: 11,
        ..Bootstrap::default()
    };
    let mut fold = CompareFold::new(a_info, b_info, bootstrap).unwrap();
    b.scan_dialogues(|r| fold.add_baseline(&r)).unwrap();
    a.scan_dialogues(|r| fold.add_current(&r)).unwrap();
    fold.finish().unwrap()
}

#[test]
fn a_planted_regression_is_listed_first_with_an_interval_below_zero() {
    let dir = runs();
    let c = compare(&dir.join("worse"), &dir.join("base"));
    assert_eq!((c.current.as_str(), c.baseline.as_str()), ("worse", "base"));
    assert_eq!((c.only_current, c.only_baseline, c.mismatched), (0, 0, 0));
    assert_eq!(c.shared, 80, "2 scenarios x 20 cases x 2 models");
    let first = &c.rows[0];
    assert_eq!(first.model, "sim-strong");
    assert_eq!(first.status, Status::Regression);
    assert!(first.overall.difference.ci_high < 0.0, "{first:?}");
    // Regressions come first, worst first, then the rest.
    let statuses: Vec<Status> = c.rows.iter().map(|r| r.status).collect();
    let mut sorted = statuses.clone();
    sorted.sort();
    assert_eq!(statuses, sorted);
    let regressions: Vec<f64> = c
        .rows_of(Status::Regression)
        .map(|r| r.overall.difference.delta)
        .collect();
    assert!(regressions.windows(2).all(|w| w[0] <= w[1]));
    let strong = c
        .rows
        .iter()
        .find(|r| r.model == "sim-strong" && r.group == Group::All)
        .unwrap();
    assert_eq!(strong.status, Status::Regression);
    assert_eq!(strong.dialogues, 40);
    // The logic falls with the actions; the delta is the difference of the two means.
    let d = strong.overall.difference;
    assert!(d.ci_low <= d.delta && d.delta <= d.ci_high && d.ci_high < 0.0);
    assert!((d.delta - (strong.overall.current - strong.overall.baseline)).abs() < 1e-9);
    assert!(strong.logic.unwrap().difference.delta < 0.0);
    // The untouched agent plays the same dialogues: no change at all, in every group.
    for r in c.rows.iter().filter(|r| r.model == "sim-weak") {
        assert_eq!(r.status, Status::Unchanged);
        assert_eq!(r.overall.difference.delta, 0.0, "{r:?}");
    }
    // Dialogues that stopped reaching the target action are listed, sim-strong's, pass to
    // fail first.
    assert!(c.flips_of(FlipKind::PassToFail).count() > 0);
    assert!(c.flips.iter().all(|f| f.model == "sim-strong"));
    assert_eq!(c.flips[0].kind, FlipKind::PassToFail);
    // Per model, scenario, level and route.
    let groups: Vec<String> = c
        .rows
        .iter()
        .filter(|r| r.model == "sim-strong")
        .map(|r| r.group.key())
        .collect();
    assert!(groups.contains(&"scenario:telecom_package".to_string()));
    assert!(groups.iter().any(|g| g.starts_with("adversarial:")));
    assert!(
        groups
            .iter()
            .any(|g| g.starts_with("route:ecommerce_refund:"))
    );
}

#[test]
fn the_terminal_and_html_comparison() {
    let dir = runs();
    let (worse, base) = (dir.join("worse"), dir.join("base"));
    let text = common::sage_ok(&[
        "report",
        worse.to_str().unwrap(),
        "--compare",
        base.to_str().unwrap(),
    ]);
    assert!(text.starts_with(
        "Comparing `worse` (current) against `base` (baseline): 80 shared dialogues, 2 models"
    ));
    let regressions = text.find("Regressions").unwrap();
    let first = text[regressions..].lines().nth(3).unwrap();
    assert!(first.starts_with("sim-strong"), "{first}");
    assert!(text.contains("Pass to fail"));
    assert!(!worse.join("compare-base.html").exists());

    let text = common::sage_ok(&[
        "report",
        worse.to_str().unwrap(),
        "--compare",
        base.to_str().unwrap(),
        "--html",
    ]);
    let page = worse.join("compare-base.html");
    assert!(text.ends_with(&format!(
        "wrote {}\n",
        page.canonicalize().unwrap().display()
    )));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<section id=\"compare\" data-section=\"compare\">"));
    assert!(html.contains("<table id=\"compare-table\" class=\"data\">"));
    let first_row = html.split("<tbody>").nth(1).unwrap();
    assert!(
        first_row.starts_with("<tr class=\"regression\" data-model=\"sim-strong\" data-group=\""),
        "{}",
        &first_row[..200]
    );
    let flips = html.split("<table id=\"compare-flips\"").nth(1).unwrap();
    let row = flips.split("<tr data-dialogue=\"").nth(1).unwrap();
    let id = &row[..row.find('"').unwrap()];
    assert!(row[id.len()..].starts_with("\" data-flip=\"pass-to-fail\">"));
    let encoded = encode_uri_component(id);
    assert!(row.contains(&format!("href=\"report.html#dialogue={encoded}\"")));
    assert!(row.contains(&format!("href=\"../base/report.html#dialogue={encoded}\"")));

    // Elsewhere with --out: both links relative to that file.
    let out = dir.join("cmp.html");
    common::sage_ok(&[
        "report",
        worse.to_str().unwrap(),
        "--compare",
        base.to_str().unwrap(),
        "--html",
        "--out",
        out.to_str().unwrap(),
    ]);
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains(&format!("href=\"worse/report.html#dialogue={encoded}\"")));
    assert!(html.contains(&format!("href=\"base/report.html#dialogue={encoded}\"")));
}

#[test]
fn runs_sharing_nothing_are_refused() {
    let dir = runs();
    let out = common::sage(&[
        "report",
        dir.join("worse").to_str().unwrap(),
        "--compare",
        dir.join("other").to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("runs `worse` and `other` share no scenario")
            && err.contains("`other`: airline_refund"),
        "{err}"
    );
    // A shared scenario but no shared dialogue (other models): refused too.
    let current = RunInfo {
        id: "a".into(),
        scenarios: vec![("tp".into(), "h".into())],
    };
    let baseline = RunInfo {
        id: "b".into(),
        scenarios: vec![("tp".into(), "h".into())],
    };
    let mut fold = CompareFold::new(current, baseline, Bootstrap::default()).unwrap();
    fold.add_baseline(&dialogue("tp/0001/m/r0", "m", &[70.0], true));
    fold.add_current(&dialogue("tp/0001/n/r0", "n", &[60.0], true));
    let err = fold.finish().unwrap_err().to_string();
    assert!(
        err.starts_with("runs `a` and `b` share no dialogue: none of the 1 dialogues of `a`"),
        "{err}"
    );
}

#[test]
fn runs_judging_different_turns_are_compared_with_a_note() {
    let dir = common::fresh_dir("compare_judged_turns");
    let config = config(&dir, "every", "", &["telecom_package", "ecommerce_refund"]);
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}judge_turns: every\n")).unwrap();
    let out = dir.display().to_string();
    common::sage_ok(&[
        "run", "--config", &config, "--run-id", "every", "--out", &out, "--quiet",
    ]);
    let printed = common::sage_ok(&[
        "report",
        dir.join("every").to_str().unwrap(),
        "--compare",
        runs().join("base").to_str().unwrap(),
    ]);
    assert!(
        printed.contains(
            "note: the runs judged different turns (`every`: every turn; `base`: paper: turns 1, 5, 10, 15 and each dialogue's final turn)"
        ),
        "{printed}"
    );
    // Runs judging the same turns get no such note.
    let same = common::sage_ok(&[
        "report",
        runs().join("worse").to_str().unwrap(),
        "--compare",
        runs().join("base").to_str().unwrap(),
    ]);
    assert!(!same.contains("judged different turns"), "{same}");
}

#[test]
fn sage_show_prints_one_transcript() {
    let dir = runs();
    let worse = dir.join("worse");
    let flipped = compare(&worse, &dir.join("base")).flips[0]
        .dialogue_id
        .clone();
    let text = common::sage_ok(&["show", worse.to_str().unwrap(), &flipped]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("Dialogue {flipped}"));
    assert!(lines[1].starts_with("  model sim-strong (simulated) · scenario "));
    assert!(text.contains("target action reached: no"));
    assert!(text.contains("\nTurn 1\n  customer: "));
    assert!(text.contains("reference (judges' consensus, rule engine)"));
    assert!(text.contains(" judges ") && text.contains("sim-judge-3: "));
    assert!(text.contains("    scores "));
    // The planted skill: some action differs from the reference.
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("action") && l.contains(" != ")),
        "{text}"
    );

    let out = common::sage(&["show", worse.to_str().unwrap(), "telecom_package/9999/x/r0"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "{}: no dialogue `telecom_package/9999/x/r0` in dialogues.jsonl",
            worse.display()
        )),
        "{err}"
    );
    let out = common::sage(&["show", worse.to_str().unwrap(), "a\nb"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("dialogue id `a\\nb`"));
}

// ------------------------------------------------------------- the paired bootstrap by hand

/// Two dialogues; metric 0 is the current run's Overall (turns in column 0), metric 1 the
/// baseline's (column 1). Dialogue 1: current [80], baseline [60, 70]; dialogue 2: current
/// [50, 70], baseline [90]. Resamples weigh them (1,1), (2,0), (0,2), (1,2) and (0,0).
#[test]
fn the_paired_bootstrap_on_a_hand_example() {
    let mut fold = RatioFold::<2, 2>::new([0, 1]);
    let cluster = |current: &[f64], baseline: &[f64]| {
        let mut c = Cluster::<2, 2>::new();
        for x in current {
            c.observe(0, Some(*x));
            c.count(0);
        }
        for x in baseline {
            c.observe(1, Some(*x));
            c.count(1);
        }
        c
    };
    fold.add(&cluster(&[80.0], &[60.0, 70.0]), &[1, 2, 0, 1, 0]);
    fold.add(&cluster(&[50.0, 70.0], &[90.0]), &[1, 0, 2, 2, 0]);
    // Point: 200/3 - 220/3. Resamples: (1,1) -20/3; (2,0) 80 - 65 = 15; (0,2) 60 - 90 = -30;
    // (1,2) 320/5 - 310/4 = -13.5; (0,0) no observation, skipped. Sorted: -30, -13.5, -20/3, 15.
    let half = Bootstrap {
        resamples: 5,
        confidence: 0.5,
        seed: 0,
    };
    let d = fold.difference(0, 1, &half).unwrap();
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    assert!(close(d.delta, -20.0 / 3.0), "{d:?}");
    // Quartiles (type 7, h = 3q): -30 + 0.75 x 16.5 and -20/3 + 0.25 x (15 + 20/3).
    assert!(close(d.ci_low, -17.625), "{d:?}");
    assert!(close(d.ci_high, -1.25), "{d:?}");
    // 95%: h = 0.075 and 2.925.
    let d = fold
        .difference(
            0,
            1,
            &Bootstrap {
                confidence: 0.95,
                ..half
            },
        )
        .unwrap();
    assert!(close(d.ci_low, -30.0 + 0.075 * 16.5), "{d:?}");
    assert!(
        close(d.ci_high, -20.0 / 3.0 + 0.925 * (15.0 + 20.0 / 3.0)),
        "{d:?}"
    );
    // The same metric on both sides: zero in every resample.
    let d = fold.difference(0, 0, &half).unwrap();
    assert_eq!((d.delta, d.ci_low, d.ci_high), (0.0, 0.0, 0.0));
}

fn dialogue(id: &str, model: &str, overall: &[f64], pass: bool) -> DialogueRecord {
    let route = |action: &str| Route {
        path: vec!["s1".into()],
        action: action.into(),
        outputs: Default::default(),
    };
    let chat = ChatScores {
        linguistic_quality: 9,
        anthropomorphism_emotion: 9,
        content_utility: 9,
        user_satisfaction: 9,
        instruction_compliance: 9,
    };
    let turns = overall
        .iter()
        .enumerate()
        .map(|(i, x)| TurnRecord {
            turn: i as u32 + 1,
            user_message: "hi".into(),
            raw_output: None,
            outcome: ServiceOutcome::Valid {
                turn: AgentTurn {
                    classification: Default::default(),
                    cot: String::new(),
                    path: vec!["s1".into()],
                    action: if pass { "Done" } else { "Other" }.into(),
                    outputs: Default::default(),
                    chat: "ok".into(),
                },
            },
            judges: Some(JudgeReply {
                judgments: vec![Ok(Judgment {
                    classification: Default::default(),
                    chat,
                })],
                consensus: Some(Default::default()),
                calls: vec![],
            }),
            reference: Some(Ok(route("Done"))),
            scores: Some(TurnScores {
                acc_cls: 1.0,
                sim_path: 1.0,
                acc_action: 1.0,
                logic: *x,
                chat: 100.0,
                overall: *x,
                sim_path_prefix: 1.0,
            }),
            infra_error: None,
            calls: vec![],
        })
        .collect();
    DialogueRecord {
        job: DialogueJob {
            run_id: "r".into(),
            dialogue_id: id.into(),
            scenario: "tp".into(),
            target: route("Done"),
            fields: Default::default(),
            variables: Default::default(),
            intent: "i".into(),
            persona: "p".into(),
            adversarial: Adversarial::Strong,
            service_model: model.into(),
            user_model: "u".into(),
            judge_models: vec!["j".into()],
            judge_turns: sage::protocol::JudgeTurns::Every,
            max_turns: 10,
            seed: 1,
            repeat: 0,
        },
        turns,
        closing_calls: vec![],
        end: if pass {
            DialogueEnd::Resolved
        } else {
            DialogueEnd::MaxTurns
        },
        simulated: false,
        structured_output: None,
        usage: Usage::default(),
        cost_usd: 0.0,
    }
}

/// Every shared dialogue 10 points worse with as many turns: the difference is -10 in every
/// resample, so the interval is [-10, -10] (to rounding); dialogue 3 also stopped passing.
#[test]
fn a_constant_drop_has_a_degenerate_interval() {
    let info = |id: &str| RunInfo {
        id: id.into(),
        scenarios: vec![("tp".into(), "h".into())],
    };
    let mut fold = CompareFold::new(info("now"), info("before"), Bootstrap::default()).unwrap();
    let base: [&[f64]; 6] = [
        &[70.0, 90.0],
        &[50.0, 60.0],
        &[80.0, 80.0],
        &[40.0, 100.0],
        &[65.0, 75.0],
        &[90.0, 30.0],
    ];
    for (i, xs) in base.iter().enumerate() {
        fold.add_baseline(&dialogue(&format!("tp/{i:04}/m/r0"), "m", xs, true));
    }
    fold.add_baseline(&dialogue("tp/0099/m/r0", "m", &[10.0], true));
    for (i, xs) in base.iter().enumerate() {
        let worse: Vec<f64> = xs.iter().map(|x| x - 10.0).collect();
        let id = format!("tp/{i:04}/m/r0");
        fold.add_current(&dialogue(&id, "m", &worse, i != 3));
    }
    let c = fold.finish().unwrap();
    assert_eq!((c.shared, c.only_current, c.only_baseline), (6, 0, 1));
    let all = c.rows.iter().find(|r| r.group == Group::All).unwrap();
    assert_eq!(all.status, Status::Regression);
    let d = all.overall.difference;
    for x in [d.delta, d.ci_low, d.ci_high] {
        assert!((x + 10.0).abs() < 1e-9, "{d:?}");
    }
    // Baseline mean 830/12, current 710/12.
    assert!((all.overall.baseline - 830.0 / 12.0).abs() < 1e-9);
    assert!((all.overall.current - 710.0 / 12.0).abs() < 1e-9);
    assert_eq!(all.chat.unwrap().difference.delta, 0.0);
    assert_eq!(c.flips.len(), 1);
    assert_eq!(c.flips[0].dialogue_id, "tp/0003/m/r0");
    assert_eq!(c.flips[0].kind, FlipKind::PassToFail);
    assert_eq!(
        c.rows.iter().map(|r| r.group.key()).collect::<Vec<_>>(),
        [
            "all",
            "scenario:tp",
            "adversarial:strong",
            "route:tp:s1 -> Done"
        ]
    );
    let page = c
        .page(&Links {
            current: "report.html".into(),
            baseline: "../before/report.html".into(),
        })
        .render();
    assert!(page.contains("<tr data-dialogue=\"tp/0003/m/r0\" data-flip=\"pass-to-fail\">"));
    assert!(page.contains("href=\"../before/report.html#dialogue=tp%2F0003%2Fm%2Fr0\""));
    assert!(page.contains(&format!("data-group=\"all\" data-delta=\"{}\"", d.delta)));
}

#[test]
fn links_are_relative_and_encoded() {
    assert_eq!(
        encode_uri_component("tp/0001/gpt 4o#x/r0"),
        "tp%2F0001%2Fgpt%204o%23x%2Fr0"
    );
    assert_eq!(encode_uri_component("a-b_c.d!~*'()"), "a-b_c.d!~*'()");
    assert_eq!(encode_uri_component("é"), "%C3%A9");
    assert_eq!(
        dialogue_href("../b/report.html", "x/r0"),
        "../b/report.html#dialogue=x%2Fr0"
    );
    let rel = |from: &str, to: &str| relative_url(Path::new(from), Path::new(to));
    assert_eq!(rel("/r/a", "/r/a/report.html"), "report.html");
    assert_eq!(rel("/r/a", "/r/b/report.html"), "../b/report.html");
    assert_eq!(rel("/r", "/r/b/report.html"), "b/report.html");
    assert_eq!(
        rel("/x/y", "/r/my run/report.html"),
        "../../r/my%20run/report.html"
    );
}
