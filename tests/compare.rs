//! Comparing two runs (`sage report A --compare B`), the paired bootstrap and the false
//! discovery rate control behind it, and `sage show`: a regression planted in one simulated
//! agent is listed first and significant, the untouched agent does not move, identical agents
//! rerun with other noise show no significant group in five pairs of runs, the JSON output
//! follows its schema, runs that pair under half get a loud warning, the flipped dialogues link
//! to both transcripts, and runs that share nothing are refused. The page in a browser:
//! tests/compare_browser.rs.

mod common;

use sage::protocol::{
    AgentTurn, ChatScores, DialogueEnd, DialogueJob, DialogueRecord, JudgeReply, Judgment,
    ServiceOutcome, TurnRecord, TurnScores, Usage,
};
use sage::report::compare::{
    ALPHA, CompareFold, Comparison, FlipKind, FlipTranscripts, Group, Links, MIN_PAIRED, RunInfo,
    Test, Verdict, dialogue_href, encode_uri_component, relative_url,
};
use sage::scenario::{Adversarial, Value};
use sage::scoring::Bootstrap;
use sage::scoring::stats::{Cluster, RatioFold};
use sage::sop::Route;
use std::path::Path;
use std::sync::OnceLock;

/// A run configuration of two scenarios and two simulated agents, 20 cases a scenario;
/// `strong_skills` is put into sim-strong's `skills`.
fn config(dir: &Path, name: &str, strong_skills: &str, scenarios: &[&str]) -> String {
    config_cases(dir, name, strong_skills, scenarios, 20)
}

/// [`config`] with `cases` cases a scenario.
fn config_cases(
    dir: &Path,
    name: &str,
    strong_skills: &str,
    scenarios: &[&str],
    cases: usize,
) -> String {
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
dialogues_per_scenario: {cases}
min_per_route: 0
max_turns: 8
seed: 11
",
        files.join(", "),
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
                seed: m.config.seed,
                scenarios: m.scenarios,
                simulator: m.simulator,
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
fn a_planted_regression_is_listed_first_and_significant() {
    let dir = runs();
    let c = compare(&dir.join("worse"), &dir.join("base"));
    assert_eq!((c.current.as_str(), c.baseline.as_str()), ("worse", "base"));
    assert_eq!((c.only_current, c.only_baseline, c.mismatched), (0, 0, 0));
    assert_eq!(c.shared, 80, "2 scenarios x 20 cases x 2 models");
    assert_eq!(c.pairing_warning(), None);
    // Each model's 40 cases are tested; every smaller group is exploratory.
    assert_eq!(c.method.tested, 2);
    assert_eq!(c.method.bootstrap.resamples, 2_000);
    for r in &c.rows {
        assert_eq!(r.tested(), r.cases >= MIN_PAIRED, "{r:?}");
        assert_eq!(r.verdict == Verdict::Exploratory, !r.tested(), "{r:?}");
    }
    let first = &c.rows[0];
    assert_eq!(
        (first.model.as_str(), &first.group, first.verdict),
        ("sim-strong", &Group::All, Verdict::Regression)
    );
    assert_eq!(
        c.models().next(),
        Some(first),
        "the per-model rows start with it"
    );
    // Every resample is below 0: the smallest p there is, and q = p x 2 tests / rank 1.
    assert_eq!(first.p, c.method.smallest_p());
    assert_eq!(first.q, Some(2.0 * first.p));
    assert!(first.q.unwrap() < ALPHA);
    assert_eq!((first.dialogues, first.cases), (40, 40));
    // Every dialogue pairs: every row is paired.
    assert!(c.rows.iter().all(|r| r.test == Test::Paired));
    // The logic falls with the actions; the delta is the difference of the two means.
    let d = first.overall.difference;
    assert!(d.ci_low <= d.delta && d.delta <= d.ci_high && d.ci_high < 0.0);
    assert!((d.delta - (first.overall.current - first.overall.baseline)).abs() < 1e-9);
    assert!((first.noise_floor() - (d.ci_high - d.ci_low) / 2.0).abs() < 1e-12);
    assert!(first.logic.unwrap().difference.delta < 0.0);
    // Verdicts in order: regressions, improvements, unchanged, exploratory.
    let verdicts: Vec<Verdict> = c.rows.iter().map(|r| r.verdict).collect();
    let mut sorted = verdicts.clone();
    sorted.sort();
    assert_eq!(verdicts, sorted);
    // The untouched agent plays the same dialogues: no change at all, in every group.
    for r in c.rows.iter().filter(|r| r.model == "sim-weak") {
        assert!(
            matches!(r.verdict, Verdict::Unchanged | Verdict::Exploratory),
            "{r:?}"
        );
        assert_eq!(r.overall.difference.delta, 0.0, "{r:?}");
        assert_eq!((r.p, r.noise_floor()), (1.0, 0.0), "{r:?}");
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
    assert!(
        text.starts_with(
            "Comparing `worse` (current) against `base` (baseline): 80 paired dialogues, 2 models"
        ),
        "{text}"
    );
    assert!(text.contains("adjusted together by Benjamini-Hochberg"));
    // The per-model table comes first, the planted regression its first row.
    let per_model = text.find("\nPer model").unwrap();
    let first = text[per_model..].lines().nth(4).unwrap();
    assert!(
        first.starts_with("sim-strong") && first.contains("regression"),
        "{first}"
    );
    assert!(per_model < text.find("\nGroups").unwrap());
    assert!(text.contains("Regressions (q < 0.05, ΔOA interval below 0), worst first: none"));
    assert!(text.contains("Exploratory: "));
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
    assert!(!html.contains("id=\"pairing\""), "no pairing warning");
    let models = html.split("id=\"compare-models\"").nth(1).unwrap();
    let first_row = models.split("<tbody>").nth(1).unwrap();
    assert!(
        first_row.starts_with("<tr class=\"regression\" data-model=\"sim-strong\""),
        "{}",
        &first_row[..200]
    );
    let flips = html.split("id=\"compare-flips\"").nth(1).unwrap();
    let row = flips
        .split("<details class=\"flip\" data-dialogue=\"")
        .nth(1)
        .unwrap();
    let id = &row[..row.find('"').unwrap()];
    assert!(row[id.len()..].starts_with("\" data-flip=\"pass-to-fail\">"));
    let encoded = encode_uri_component(id);
    assert!(row.contains(&format!("href=\"report.html#dialogue={encoded}\"")));
    assert!(row.contains(&format!("href=\"../base/report.html#dialogue={encoded}\"")));
    // Its two transcripts are on the page, side by side.
    let view = &row[..row.find("</details>").unwrap()];
    assert!(view.contains("<table class=\"side-by-side\">"), "{view}");
    assert!(view.contains("<tr data-turn=\"1\">"));

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

/// Identical agents rerun with other noise, five times. The run seed draws both the cases and
/// every dialogue's seed (docs/report.md, "Checking the comparison on a null"): two runs with
/// the same seed are the same to the byte, two seeds give other cases that do not pair. What
/// varies the noise and keeps the cases is the repeat: repeat r of a case is the same case
/// played with its own dialogue seed (another customer, agent and judge draw). So one run plays
/// every case ten times, and repeats 2k and 2k + 1 (each renamed `r0`, so that they pair) are
/// the k-th pair of runs: the same models on the same cases with independent noise. No group of
/// any pair may be significant after the false discovery rate correction.
#[test]
fn identical_models_in_five_seed_pairs_show_no_significant_group() {
    let dir = common::fresh_dir("compare_null");
    let config = config_cases(
        &dir,
        "null",
        "",
        &["telecom_package", "ecommerce_refund"],
        60,
    );
    let out = dir.display().to_string();
    common::sage_ok(&[
        "run",
        "--config",
        &config,
        "--repeats",
        "10",
        "--run-id",
        "null",
        "--out",
        &out,
        "--quiet",
    ]);
    let run = sage::store::RunDir::open(&dir.join("null")).unwrap();
    let info = |id: String| RunInfo {
        id,
        seed: 11,
        scenarios: vec![
            ("telecom_package".into(), "h".into()),
            ("ecommerce_refund".into(), "h".into()),
        ],
        simulator: None,
    };
    let as_first_repeat = |mut r: DialogueRecord| {
        r.job.dialogue_id = format!(
            "{}/r0",
            sage::scoring::summary::case_key(&r.job.dialogue_id)
        );
        r.job.repeat = 0;
        r
    };
    let mut moved = 0;
    for k in 0..5u32 {
        let (before, after) = (2 * k, 2 * k + 1);
        let mut fold = CompareFold::new(
            info(format!("r{after}")),
            info(format!("r{before}")),
            Bootstrap {
                seed: 11,
                ..Bootstrap::default()
            },
        )
        .unwrap();
        run.scan_dialogues(|r| {
            if r.job.repeat == before {
                fold.add_baseline(&as_first_repeat(r));
            }
        })
        .unwrap();
        run.scan_dialogues(|r| {
            if r.job.repeat == after {
                fold.add_current(&as_first_repeat(r));
            }
        })
        .unwrap();
        let c = fold.finish().unwrap();
        assert_eq!(c.shared, 240, "2 scenarios x 60 cases x 2 models");
        assert_eq!(c.pairing_warning(), None);
        // Each model, each scenario and each adversarial level has 30 cases or more.
        assert!(c.method.tested >= 10, "{:?}", c.method);
        let tested: Vec<_> = c.rows.iter().filter(|r| r.tested()).collect();
        let significant: Vec<String> = tested
            .iter()
            .filter(|r| matches!(r.verdict, Verdict::Regression | Verdict::Improvement))
            .map(|r| format!("{} {} q {:?}", r.model, r.group.key(), r.q))
            .collect();
        assert!(significant.is_empty(), "pair {k}: {significant:?}");
        moved += tested
            .iter()
            .filter(|r| r.overall.difference.delta != 0.0)
            .count();
        let smallest = tested.iter().filter_map(|r| r.q).fold(1.0, f64::min);
        let raw = tested.iter().filter(|r| r.p < 0.05).count();
        eprintln!(
            "pair {k}: {} tested groups, smallest q {smallest:.3}, {raw} with p < 0.05 before the correction",
            tested.len()
        );
    }
    // The noise is there: the runs do differ.
    assert!(moved > 40, "{moved} tested groups moved");
}

/// Under no difference the bootstrap p-values are calibrated: two runs' dialogues drawn from the
/// same score distribution, 300 times over, give p < 0.05 in about 5% of them (a planted drop
/// of 15 points, in most).
#[test]
fn p_values_are_calibrated_when_nothing_changes() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let draw = |rng: &mut rand_chacha::ChaCha8Rng, shift: f64| -> Vec<f64> {
        let turns = rng.random_range(1..=6);
        (0..turns)
            .map(|_| {
                let x: f64 = if rng.random_bool(0.6) {
                    80.0 + 20.0 * rng.random::<f64>()
                } else {
                    40.0 * rng.random::<f64>()
                };
                (x + shift).clamp(0.0, 100.0)
            })
            .collect()
    };
    let (replications, cases) = (300, MIN_PAIRED);
    let mut rejected = [0usize; 2];
    for (shift, rejected) in [0.0, -15.0].into_iter().zip(&mut rejected) {
        for rep in 0..replications {
            let mut fold = CompareFold::new(
                tp_run("now"),
                tp_run("before"),
                Bootstrap {
                    seed: rep as u64,
                    ..Bootstrap::default()
                },
            )
            .unwrap();
            let ids: Vec<String> = (0..cases).map(|i| format!("tp/{i:04}/m/r0")).collect();
            for id in &ids {
                fold.add_baseline(&dialogue(id, "m", &draw(&mut rng, 0.0), true));
            }
            for id in &ids {
                fold.add_current(&dialogue(id, "m", &draw(&mut rng, shift), true));
            }
            let c = fold.finish().unwrap();
            let all = c.models().next().unwrap();
            *rejected += usize::from(all.p < 0.05);
        }
    }
    let rate = rejected[0] as f64 / replications as f64;
    eprintln!(
        "p < 0.05 in {} of {replications} null comparisons of {cases} cases ({rate:.3}); {} of {replications} with a 15-point drop",
        rejected[0], rejected[1]
    );
    // Binomial(300, 0.05): 15 ± 3.8; a test that ignored the pairing or the clusters would be
    // far off.
    assert!((0.02..=0.09).contains(&rate), "{rate}");
    assert!(rejected[1] > replications / 2, "{rejected:?}");
}

#[test]
fn the_json_comparison_follows_its_schema() {
    let dir = runs();
    let (worse, base) = (dir.join("worse"), dir.join("base"));
    let args = [
        "report",
        worse.to_str().unwrap(),
        "--compare",
        base.to_str().unwrap(),
        "--format",
        "json",
    ];
    let out = common::sage(&args);
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let keys = |v: &serde_json::Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(&doc),
        [
            "baseline",
            "changed",
            "current",
            "flips",
            "groups",
            "method",
            "notes",
            "pairing",
            "relation",
            "relation_note",
            "schema",
            "verdicts"
        ]
    );
    assert_eq!(
        (&doc["relation"], &doc["relation_note"]),
        (&serde_json::json!("runs"), &serde_json::Value::Null)
    );
    assert_eq!(doc["changed"], serde_json::json!([]));
    assert_eq!(doc["schema"], "sage-compare/1");
    // Both runs under the same customer simulator, named in full.
    let simulator = &doc["current"]["simulator"];
    assert_eq!(
        (&simulator["name"], &simulator["version"]),
        (&"sim-user".into(), &1.into())
    );
    assert_eq!(doc["baseline"]["simulator"], *simulator);
    let without = |run: &serde_json::Value| {
        let mut run = run.clone();
        run.as_object_mut().unwrap().remove("simulator");
        run
    };
    assert_eq!(
        without(&doc["current"]),
        serde_json::json!({"run_id": "worse", "seed": 11, "dialogues": 80})
    );
    assert_eq!(
        without(&doc["baseline"]),
        serde_json::json!({"run_id": "base", "seed": 11, "dialogues": 80})
    );
    assert_eq!(
        doc["pairing"],
        serde_json::json!({"paired": 80, "current_share": 1.0, "baseline_share": 1.0,
            "mismatched": 0, "only_current": 0, "only_baseline": 0, "warning": null})
    );
    let method = &doc["method"];
    assert_eq!(
        keys(method),
        [
            "alpha",
            "confidence",
            "difference",
            "fdr",
            "interval",
            "min_paired_cases",
            "p_value",
            "resamples",
            "seed",
            "smallest_p",
            "tested",
            "unpaired_interval"
        ]
    );
    assert_eq!(
        (
            &method["fdr"],
            &method["alpha"],
            &method["min_paired_cases"],
            &method["resamples"],
            &method["tested"],
            &method["seed"],
        ),
        (
            &serde_json::json!("benjamini-hochberg"),
            &serde_json::json!(0.05),
            &serde_json::json!(30),
            &serde_json::json!(2000),
            &serde_json::json!(2),
            &serde_json::json!(11),
        )
    );
    assert_eq!(method["smallest_p"].as_f64(), Some(2.0 / 2001.0));

    // Every group, with the library's numbers: the per-model rows first.
    let c = compare(&worse, &base);
    let groups = doc["groups"].as_array().unwrap();
    assert_eq!(groups.len(), c.rows.len());
    let expected: Vec<_> = c.models().chain(c.groups()).collect();
    let change = |ch: &sage::report::compare::Change| {
        serde_json::json!({"baseline": ch.baseline, "current": ch.current,
            "delta": ch.difference.delta, "ci_low": ch.difference.ci_low,
            "ci_high": ch.difference.ci_high})
    };
    for (g, r) in groups.iter().zip(expected) {
        assert_eq!(
            *g,
            serde_json::json!({
                "model": r.model,
                "group": r.group.key(),
                "kind": r.group.kind(),
                "test": "paired",
                "paired": r.dialogues,
                "cases": r.cases,
                "dialogues": {"current": r.dialogues, "baseline": r.dialogues},
                "cases_per_run": {"current": r.cases, "baseline": r.cases},
                "overall": change(&r.overall),
                "logic": r.logic.as_ref().map(change),
                "chat": r.chat.as_ref().map(change),
                "noise_floor": r.noise_floor(),
                "p": r.p,
                "q": r.q,
                "verdict": r.verdict.name(),
            })
        );
    }
    assert_eq!(
        (
            &groups[0]["model"],
            &groups[0]["group"],
            &groups[0]["verdict"]
        ),
        (
            &serde_json::json!("sim-strong"),
            &serde_json::json!("all"),
            &serde_json::json!("regression")
        )
    );
    assert!(groups[0]["q"].as_f64().unwrap() < 0.05);
    assert!(
        groups
            .iter()
            .filter(|g| g["verdict"] == "exploratory")
            .all(|g| g["q"].is_null() && g["cases"].as_u64().unwrap() < 30)
    );
    let count = |v: Verdict| c.rows_of(v).count();
    assert_eq!(
        doc["verdicts"],
        serde_json::json!({"regression": count(Verdict::Regression),
            "improvement": count(Verdict::Improvement), "unchanged": count(Verdict::Unchanged),
            "exploratory": count(Verdict::Exploratory), "lower": 0, "higher": 0})
    );
    let flips = doc["flips"].as_array().unwrap();
    assert_eq!(flips.len(), c.flips.len());
    let f = &c.flips[0];
    assert_eq!(
        flips[0],
        serde_json::json!({"dialogue_id": f.dialogue_id, "model": f.model,
            "scenario": f.scenario, "flip": "pass-to-fail",
            "baseline_end": f.baseline_end.name(), "current_end": f.current_end.name(),
            "baseline_why": f.baseline_why, "current_why": f.current_why})
    );

    // --out: the same document in a file, nothing on standard output.
    let file = dir.join("compare.json");
    let mut with_out = args.to_vec();
    with_out.extend(["--out", file.to_str().unwrap()]);
    let printed = common::sage_ok(&with_out);
    assert!(printed.is_empty(), "{printed}");
    assert_eq!(std::fs::read(&file).unwrap(), out.stdout);

    // --fail-on-regression: exit code 3 after the document; 0 without a regression.
    let mut gate = args.to_vec();
    gate.push("--fail-on-regression");
    let gated = common::sage(&gate);
    assert_eq!(gated.status.code(), Some(3));
    assert_eq!(gated.stdout, out.stdout);
    let same = common::sage(&[
        "report",
        base.to_str().unwrap(),
        "--compare",
        base.to_str().unwrap(),
        "--fail-on-regression",
    ]);
    assert_eq!(same.status.code(), Some(0));
}

#[test]
fn runs_that_pair_under_half_get_a_loud_warning() {
    // The same seed with three times the cases: the baseline's 80 dialogues pair with 80 of the
    // 240 (a seed draws case i the same, whatever the number of cases).
    let dir = common::fresh_dir("compare_pairing");
    let config = config_cases(
        &dir,
        "more",
        "",
        &["telecom_package", "ecommerce_refund"],
        60,
    );
    let out = dir.display().to_string();
    common::sage_ok(&[
        "run", "--config", &config, "--run-id", "more", "--out", &out, "--quiet",
    ]);
    let (more, base) = (dir.join("more"), runs().join("base"));
    let run = common::sage(&[
        "report",
        more.to_str().unwrap(),
        "--compare",
        base.to_str().unwrap(),
    ]);
    assert!(run.status.success());
    let (stdout, stderr) = (
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr),
    );
    let warning = "only 80 of the 240 dialogues of `more` (33%) and of the 80 of `base` (100%) pair (same id, same case): the runs hold different dialogues (160 only in `more`, 0 only in `base`, 0 ids in both with a different case: other cases per scenario, scenarios, models or repeats?). So every model (`sim-strong`, `sim-weak`) was compared unpaired: over all their dialogues in both runs, each run's cases resampled apart within each scenario and target route (a model is compared paired only when at least half of its dialogues pair in each run). The unpaired test is sound, but the cases differ between the runs, so it needs a larger difference to find one than a paired test of the same runs would: compare two runs of one configuration to pair every dialogue.\n";
    assert!(
        stdout.starts_with(&format!("WARNING: {warning}")),
        "{stdout}"
    );
    assert!(
        stderr.starts_with(&format!("warning: {warning}")),
        "{stderr}"
    );
    let c = compare(&more, &base);
    assert_eq!(c.pairing_warning().unwrap() + "\n", warning);
    // Each model compared over all its dialogues: 120 in `more`, 40 in `base`.
    for r in c.models() {
        assert_eq!(r.test, Test::Unpaired, "{r:?}");
        assert_eq!(
            (r.sides.current_dialogues, r.sides.baseline_dialogues),
            (120, 40)
        );
    }
    // In the JSON and at the top of the page.
    let json = common::sage_ok(&[
        "report",
        more.to_str().unwrap(),
        "--compare",
        base.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["pairing"]["warning"], c.pairing_warning().unwrap());
    assert_eq!(doc["pairing"]["current_share"].as_f64(), Some(80.0 / 240.0));
    let page = dir.join("cmp.html");
    common::sage_ok(&[
        "report",
        more.to_str().unwrap(),
        "--compare",
        base.to_str().unwrap(),
        "--html",
        "--out",
        page.to_str().unwrap(),
    ]);
    let html = std::fs::read_to_string(&page).unwrap();
    let section = html.split("<h2>Compare</h2>").nth(1).unwrap();
    assert!(
        section.starts_with("<div class=\"warning\" id=\"pairing\" role=\"alert\">"),
        "{}",
        &section[..200]
    );
}

/// Two seeds draw other cases: the warning says so, with both seeds.
#[test]
fn the_pairing_warning_names_different_seeds() {
    let info = |id: &str, seed: u64| RunInfo {
        id: id.into(),
        seed,
        scenarios: vec![("tp".into(), "h".into())],
        simulator: None,
    };
    let mut fold = CompareFold::new(info("a", 7), info("b", 8), Bootstrap::default()).unwrap();
    for i in 0..4 {
        fold.add_baseline(&dialogue(&format!("tp/{i:04}/m/r0"), "m", &[70.0], true));
    }
    for i in 0..4 {
        let mut r = dialogue(&format!("tp/{i:04}/m/r0"), "m", &[60.0], true);
        if i > 0 {
            r.job.intent = "another".into();
        }
        fold.add_current(&r);
    }
    let c = fold.finish().unwrap();
    assert_eq!((c.shared, c.mismatched), (1, 3));
    assert_eq!(
        c.pairing_warning().unwrap(),
        "only 1 of the 4 dialogues of `a` (25%) and of the 4 of `b` (25%) pair (same id, same case): the runs have different seeds (7 and 8) and the seed draws the cases, so most dialogue ids name another case in each run (3 ids are in both with a different case). So every model (`m`) was compared unpaired: over all its dialogues in both runs, each run's cases resampled apart within each scenario and target route (a model is compared paired only when at least half of its dialogues pair in each run). The unpaired test is sound, but the cases differ between the runs, so it needs a larger difference to find one than a paired test of the same runs would: rerun `a`'s configuration with `--seed 8` to pair every dialogue."
    );
    assert!(c.text().starts_with("WARNING: only 1 of the 4 dialogues"));
}

/// A record rewritten by another tool may list its values in another order: the case is the
/// same, and it pairs.
#[test]
fn a_case_pairs_whatever_order_its_values_are_listed_in() {
    let mut fold = CompareFold::new(tp_run("a"), tp_run("b"), Bootstrap::default()).unwrap();
    let mut before = dialogue("tp/0001/m/r0", "m", &[70.0], true);
    let mut after = dialogue("tp/0001/m/r0", "m", &[60.0], true);
    for (name, value) in [("A", "x"), ("B", "y")] {
        before
            .job
            .fields
            .insert(name.into(), Value::Str(value.into()));
    }
    for (name, value) in [("B", "y"), ("A", "x")] {
        after
            .job
            .fields
            .insert(name.into(), Value::Str(value.into()));
    }
    fold.add_baseline(&before);
    fold.add_current(&after);
    let c = fold.finish().unwrap();
    assert_eq!((c.shared, c.mismatched), (1, 0));
}

/// summary.json gives each model its noise floor against an independent rerun: about √2 times
/// half its OA interval (the difference of two independent runs' means), in OA points.
#[test]
fn each_model_has_its_noise_floor_in_summary_json() {
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(runs().join("base").join("summary.json")).unwrap(),
    )
    .unwrap();
    let models = summary["models"].as_array().unwrap();
    assert_eq!(models.len(), 2);
    for m in models {
        let floor = m["noise_floor"].as_f64().unwrap();
        let oa = &m["all"]["overall"];
        let half = (oa["ci_high"].as_f64().unwrap() - oa["ci_low"].as_f64().unwrap()) / 2.0;
        let ratio = floor / half;
        assert!(
            (1.2..=1.65).contains(&ratio),
            "{}: floor {floor}, half-width {half}",
            m["model"]
        );
    }
}

/// Runs whose customer simulators differ (here: another prompt version) are compared with the
/// difference said first and no verdict, unless `--allow-simulator-change`; the JSON carries
/// both simulators. Each run's summary names its simulator.
#[test]
fn runs_under_another_customer_simulator_get_no_verdict_unless_allowed() {
    let dir = runs();
    let tmp = tempfile::tempdir().unwrap();
    let moved = tmp.path().join("worse-v2");
    std::fs::create_dir(&moved).unwrap();
    for file in ["manifest.json", "dialogues.jsonl"] {
        std::fs::copy(dir.join("worse").join(file), moved.join(file)).unwrap();
    }
    let path = moved.join("manifest.json");
    let mut manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let simulator = &mut manifest["simulator"];
    assert_eq!(simulator["name"], "sim-user", "{simulator}");
    assert_eq!(simulator["prompt_sha256"].as_str().unwrap().len(), 64);
    simulator["version"] = 99.into();
    std::fs::write(&path, manifest.to_string()).unwrap();
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("base").join("summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["simulator"]["name"], "sim-user");
    let board = std::fs::read_to_string(dir.join("base").join("leaderboard.md")).unwrap();
    assert!(board.contains("Customer simulator: sim-user (simulated; simulator v1, prompt "));

    let (a, b) = (moved.to_str().unwrap(), dir.join("base"));
    let json = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec![
            "report",
            a,
            "--compare",
            b.to_str().unwrap(),
            "--format",
            "json",
        ];
        args.extend_from_slice(extra);
        serde_json::from_str(&common::sage_ok(&args)).unwrap()
    };
    let held = json(&[]);
    assert!(
        held["notes"][0]
            .as_str()
            .unwrap()
            .starts_with("the runs' customer simulators differ (simulator version 99 / 1)"),
        "{}",
        held["notes"]
    );
    assert_eq!(held["verdicts"]["regression"], 0, "{}", held["verdicts"]);
    assert_eq!(held["current"]["simulator"]["version"], 99);
    assert_eq!(held["baseline"]["simulator"]["version"], 1);
    let text = common::sage_ok(&["report", a, "--compare", b.to_str().unwrap()]);
    let first_note = text.lines().find(|l| l.starts_with("note: ")).unwrap();
    assert!(first_note.contains("customer simulators differ"), "{text}");
    // Allowed: the planted regression is found again, the note says so.
    let allowed = json(&["--allow-simulator-change"]);
    assert!(allowed["verdicts"]["regression"].as_u64() > Some(0));
    assert!(
        allowed["notes"][0]
            .as_str()
            .unwrap()
            .contains("verdicts drawn all the same")
    );
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
    let mut fold = CompareFold::new(tp_run("a"), tp_run("b"), Bootstrap::default()).unwrap();
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

/// A run `id` of seed 1 and one scenario, `tp`, as the hand-made records' comparisons name it.
fn tp_run(id: &str) -> RunInfo {
    RunInfo {
        id: id.into(),
        seed: 1,
        scenarios: vec![("tp".into(), "h".into())],
        simulator: None,
    }
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
            customer_retry: None,
            off_case: None,
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
            user_model_index: 0,
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
        fork: None,
    }
}

/// Every shared dialogue 10 points worse with as many turns: the difference is -10 in every
/// resample, so the interval is [-10, -10] (to rounding); dialogue 3 also stopped passing.
#[test]
fn a_constant_drop_has_a_degenerate_interval() {
    let mut fold = CompareFold::new(tp_run("now"), tp_run("before"), Bootstrap::default()).unwrap();
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
    // Six cases: too few to test, so no verdict, whatever the interval says.
    assert_eq!(
        (all.verdict, all.q, all.cases),
        (Verdict::Exploratory, None, 6)
    );
    // Every resample with a dialogue in it is at -10: p = 2 / (draws + 1), the smallest there
    // is but for the few resamples (e^-6 of them) that drew no dialogue at all.
    let draws = 2.0 / all.p - 1.0;
    assert!((draws - draws.round()).abs() < 1e-6 && (1980.0..=2000.0).contains(&draws));
    assert_eq!(c.method.tested, 0);
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
    let page = page_of(&c);
    assert!(page.contains(
        "<details class=\"flip\" data-dialogue=\"tp/0003/m/r0\" data-flip=\"pass-to-fail\">"
    ));
    assert!(page.contains("href=\"../before/report.html#dialogue=tp%2F0003%2Fm%2Fr0\""));
    assert!(page.contains(&format!(
        "data-model=\"m\" data-verdict=\"exploratory\" data-test=\"paired\" data-delta=\"{}\"",
        d.delta
    )));
}

/// The page of a comparison of runs `now` (the page's folder) and `before` (beside it),
/// without transcripts.
fn page_of(c: &Comparison) -> String {
    c.page(
        &Links {
            current: "report.html".into(),
            baseline: "../before/report.html".into(),
        },
        &FlipTranscripts::new(),
    )
    .render()
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

// ------------------------------------------------------------- reruns with another seed

/// `sage run` of `config` with `--seed seed` as `name` in `dir`.
fn run_seeded(dir: &Path, config: &str, name: &str, seed: u64) {
    let out = dir.display().to_string();
    common::sage_ok(&[
        "run",
        "--config",
        config,
        "--seed",
        &seed.to_string(),
        "--run-id",
        name,
        "--out",
        &out,
        "--quiet",
    ]);
}

/// Reruns with new seeds, made once: `s1` to `s10`, the same two agents of one configuration
/// (2 scenarios x 20 cases, seeds 1 to 10), and `weaker` (seed 12), where sim-strong derives
/// its action right a fifth of the time. Two seeds draw other cases: few dialogues pair.
fn seed_runs() -> &'static Path {
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = common::fresh_dir("compare_seeds");
        let two = ["telecom_package", "ecommerce_refund"];
        let same = config(&dir, "same", "", &two);
        for seed in 1..=10 {
            run_seeded(&dir, &same, &format!("s{seed}"), seed);
        }
        let weaker = config(&dir, "weaker", "action_derivation: 0.2", &two);
        run_seeded(&dir, &weaker, "weaker", 12);
        dir
    })
}

/// `sage report CURRENT --compare BASELINE EXTRA...`, whatever its exit code.
fn sage_compare(current: &Path, baseline: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "report",
        current.to_str().unwrap(),
        "--compare",
        baseline.to_str().unwrap(),
    ];
    args.extend(extra);
    common::sage(&args)
}

/// The exit code of `sage report CURRENT --compare BASELINE --fail-on-regression`.
fn gate(current: &Path, baseline: &Path) -> Option<i32> {
    sage_compare(current, baseline, &["--fail-on-regression"])
        .status
        .code()
}

/// `sage report CURRENT --compare BASELINE EXTRA...`'s standard output (it must succeed).
fn compare_ok(current: &Path, baseline: &Path, extra: &[&str]) -> String {
    let out = sage_compare(current, baseline, extra);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `sage report CURRENT --compare BASELINE --format json`, parsed.
fn compare_json(current: &Path, baseline: &Path) -> serde_json::Value {
    serde_json::from_str(&compare_ok(current, baseline, &["--format", "json"]))
        .expect("one JSON document")
}

/// A group's `verdict`, as a string.
fn verdict_of(g: &serde_json::Value) -> &str {
    g["verdict"].as_str().unwrap()
}

/// Five pairs of reruns of one configuration with new seeds (1 and 2, 3 and 4, ...): few
/// dialogues pair, so every model is compared unpaired, and no group is a regression or an
/// improvement.
#[test]
fn reruns_with_new_seeds_are_compared_unpaired_and_show_no_difference() {
    let dir = seed_runs();
    for k in 0..5 {
        let (before, after) = (2 * k + 1, 2 * k + 2);
        let doc = compare_json(
            &dir.join(format!("s{after}")),
            &dir.join(format!("s{before}")),
        );
        let share = doc["pairing"]["current_share"].as_f64().unwrap();
        assert!(share < 0.5, "pair {k}: {share} paired");
        let groups = doc["groups"].as_array().unwrap();
        let models: Vec<&serde_json::Value> =
            groups.iter().filter(|g| g["group"] == "all").collect();
        assert_eq!(models.len(), 2);
        for m in &models {
            // Every dialogue of the model in each run: 2 scenarios x 20 cases; tested.
            assert_eq!(m["test"], "unpaired", "{m}");
            assert_eq!(
                m["dialogues"],
                serde_json::json!({"current": 40, "baseline": 40}),
                "{m}"
            );
            assert_eq!(m["cases"], 40, "{m}");
            assert!(m["q"].is_number(), "tested: {m}");
        }
        assert!(groups.iter().all(|g| g["test"] == "unpaired"));
        let significant: Vec<String> = groups
            .iter()
            .filter(|g| matches!(verdict_of(g), "regression" | "improvement"))
            .map(|g| format!("{} {} q {}", g["model"], g["group"], g["q"]))
            .collect();
        assert!(significant.is_empty(), "pair {k}: {significant:?}");
        let warning = doc["pairing"]["warning"].as_str().unwrap();
        assert!(
            warning.contains("So every model (`sim-strong`, `sim-weak`) was compared unpaired"),
            "{warning}"
        );
        assert!(!warning.contains("small, unplanned part"), "{warning}");
        let smallest = groups
            .iter()
            .filter_map(|g| g["q"].as_f64())
            .fold(1.0, f64::min);
        eprintln!(
            "seeds {before}/{after}: {} tested groups, smallest q {smallest:.3}",
            doc["method"]["tested"]
        );
    }
}

/// A rerun with a new seed in which sim-strong derives its action right a fifth of the time:
/// compared unpaired, its regression is found, and sim-weak does not move.
#[test]
fn a_weaker_model_in_a_rerun_with_another_seed_is_found_unpaired() {
    let dir = seed_runs();
    let (weaker, base) = (dir.join("weaker"), dir.join("s1"));
    let doc = compare_json(&weaker, &base);
    let groups = doc["groups"].as_array().unwrap();
    let all = |model: &str| {
        groups
            .iter()
            .find(|g| g["model"] == model && g["group"] == "all")
            .unwrap()
    };
    let strong = all("sim-strong");
    assert_eq!(
        (&strong["test"], verdict_of(strong)),
        (&serde_json::json!("unpaired"), "regression"),
        "{strong}"
    );
    assert!(strong["overall"]["ci_high"].as_f64().unwrap() < 0.0);
    assert_eq!(groups[0]["model"], "sim-strong", "listed first");
    for g in groups.iter().filter(|g| g["model"] == "sim-weak") {
        assert!(matches!(verdict_of(g), "unchanged" | "exploratory"), "{g}");
    }
    // The terminal says which test each row used.
    let text = compare_ok(&weaker, &base, &[]);
    let per_model = text.find("\nPer model").unwrap();
    let first = text[per_model..].lines().nth(4).unwrap();
    assert!(
        first.starts_with("sim-strong")
            && first.contains("regression")
            && first.contains("unpaired"),
        "{first}"
    );
    assert!(first.contains("40 / 40"), "{first}");
    assert!(
        text.contains("Unpaired (a model with fewer of its dialogues paired)"),
        "{text}"
    );
    assert_eq!(gate(&weaker, &base), Some(3));
}

// ------------------------------------------------------------- rescore and rejudge

/// `sage COMMAND BASE FLAG VALUE --out OUT` (a rescore or a rejudge of BASE into OUT): its
/// last lines say where its report.html is, and that page is the one `sage report OUT --html`
/// rebuilds, to the byte.
fn regrade(command: &str, base: &Path, (flag, value): (&str, &Path), out: &Path) {
    let printed = common::sage_ok(&[
        command,
        base.to_str().unwrap(),
        flag,
        value.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let line = format!("report: {}", out.join("report.html").display());
    assert!(
        printed.lines().rev().take(3).any(|l| l == line),
        "{line} not among the last lines of:\n{printed}"
    );
    let written = std::fs::read(out.join("report.html")).expect("report.html written");
    common::sage_ok(&["report", out.to_str().unwrap(), "--html"]);
    let rebuilt = std::fs::read(out.join("report.html")).unwrap();
    assert!(
        written == rebuilt,
        "report.html differs from the rebuilt one"
    );
}

/// The `dialogue_id` of each element of a JSON list.
fn ids(list: &serde_json::Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|c| c["dialogue_id"].as_str().unwrap())
        .collect()
}

/// A rescore against a corrected scenario (Telecom's discontent customer said goodbye to
/// instead of transferred): compared with its source, every dialogue pairs by id, the regraded
/// dialogues are a group of each model's and listed by id (those of rescore.json, sorted), and
/// the verdicts say how the corrected scenario scores, never "regression".
#[test]
fn a_rescore_is_compared_for_its_regraded_dialogues() {
    let dir = common::fresh_dir("compare_rescore");
    let base = runs().join("base");
    let file = common::telecom_discontent(&dir, "telecom_corrected", "GoodBye");
    let corrected = dir.join("corrected");
    regrade("rescore", &base, ("--scenario", &file), &corrected);
    let rescore: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(corrected.join("rescore.json")).unwrap())
            .unwrap();
    assert_eq!(rescore["from_run_id"], "base");
    let listed = ids(&rescore["changed"]);
    assert!(!listed.is_empty());
    let mut sorted = listed.clone();
    sorted.sort_unstable();
    assert_eq!(listed, sorted, "rescore.json lists them by id");

    // No --allow-scenario-change: the correction is the point.
    let doc = compare_json(&corrected, &base);
    assert_eq!(doc["relation"], "rescore");
    assert_eq!(doc["pairing"]["paired"], doc["current"]["dialogues"]);
    assert_eq!(doc["pairing"]["mismatched"], 0);
    assert_eq!(ids(&doc["changed"]), listed);
    for c in doc["changed"].as_array().unwrap() {
        let from_file = rescore["changed"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["dialogue_id"] == c["dialogue_id"])
            .unwrap();
        assert_eq!(c["turns"], from_file["turns"]);
        assert_eq!(c["target_changed"], from_file["target_changed"]);
        assert!(c["baseline_overall"].is_number() && c["current_overall"].is_number());
    }
    // Each model's regraded dialogues are a group: as many as rescore.json lists of it.
    let groups = doc["groups"].as_array().unwrap();
    let regraded: usize = groups
        .iter()
        .filter(|g| g["group"] == "changed")
        .map(|g| {
            let model = g["model"].as_str().unwrap();
            let n = listed
                .iter()
                .filter(|id| id.contains(&format!("/{model}/")))
                .count();
            assert_eq!(g["paired"], n, "{g}");
            n
        })
        .sum();
    assert_eq!(regraded, listed.len());
    assert!(groups.iter().all(|g| g["test"] == "paired"));
    assert!(
        groups
            .iter()
            .all(|g| !matches!(verdict_of(g), "regression" | "improvement"))
    );
    assert_eq!(
        (
            &doc["verdicts"]["regression"],
            &doc["verdicts"]["improvement"]
        ),
        (&serde_json::json!(0), &serde_json::json!(0))
    );

    let text = compare_ok(&corrected, &base, &[]);
    assert!(
        text.starts_with("`corrected` is `base` graded again (`sage rescore`): the agents' transcripts are the same, only the references changed"),
        "{text}"
    );
    assert!(text.contains(&format!(
        "{} dialogues were graded differently",
        listed.len()
    )));
    assert!(text.contains("Scored lower under the corrected scenario (q < 0.05"));
    // Per model, the regraded dialogues' own difference, beside the one over all.
    let own = text
        .split("\nPer model, the regraded dialogues only")
        .nth(1)
        .expect("the regraded dialogues per model");
    let regraded_rows: Vec<&str> = own.lines().skip(3).take_while(|l| !l.is_empty()).collect();
    let groups_changed = groups.iter().filter(|g| g["group"] == "changed").count();
    assert_eq!(regraded_rows.len(), groups_changed, "{own}");
    assert!(text.contains(&format!(
        "\nRegraded dialogues (their reference routes changed), by id: {}\n",
        listed.len()
    )));
    assert!(text.contains(&format!("\n{}", listed[0])), "{text}");
    assert!(!text.to_lowercase().contains("regression"), "{text}");
    assert_eq!(gate(&corrected, &base), Some(0));
}

/// A rejudge by another (simulated, noisier) panel, compared with its source either way: only
/// the panel changed, and the comparison says so first; its verdicts are the panel's.
#[test]
fn a_rejudge_says_the_panel_moved_the_scores() {
    let dir = common::fresh_dir("compare_rejudge");
    let base = runs().join("base");
    let panel = dir.join("judges.yaml");
    std::fs::write(
        &panel,
        "models:\n  - {name: rough-judge, provider: simulated, sim: {kind: judge, noise: 0.4}}\njudge_models: [rough-judge]\n",
    )
    .unwrap();
    let rejudged = dir.join("rough");
    regrade("rejudge", &base, ("--config", &panel), &rejudged);
    for (current, baseline) in [(&rejudged, &base), (&base, &rejudged)] {
        let doc = compare_json(current, baseline);
        assert_eq!(doc["relation"], "rejudge");
        assert!(
            doc["relation_note"]
                .as_str()
                .unwrap()
                .contains("only the judge panel changed, so every difference below is the panel's"),
            "{doc}"
        );
        let groups = doc["groups"].as_array().unwrap();
        assert!(
            groups
                .iter()
                .all(|g| !matches!(verdict_of(g), "regression" | "improvement"))
        );
        let moved = groups
            .iter()
            .filter(|g| matches!(verdict_of(g), "lower" | "higher"))
            .count();
        assert_eq!(
            doc["verdicts"]["lower"].as_u64().unwrap()
                + doc["verdicts"]["higher"].as_u64().unwrap(),
            moved as u64
        );
        let text = compare_ok(current, baseline, &[]);
        assert!(
            text.starts_with(&format!(
                "`{}` and `{}` hold the same transcripts judged by different panels (`sage rejudge`): only the judge panel changed",
                current.file_name().unwrap().to_str().unwrap(),
                baseline.file_name().unwrap().to_str().unwrap()
            )),
            "{text}"
        );
        assert!(text.contains("The panel scored lower (q < 0.05"), "{text}");
        assert!(!text.to_lowercase().contains("regression"), "{text}");
        assert_eq!(gate(current, baseline), Some(0));
    }
}

/// Each side of a flip says why it passed or failed, not only how it ended: the turn the
/// target action was reached at, the last action taken instead, or the infrastructure error.
#[test]
fn flips_say_why_each_side_passed_or_failed() {
    let mut fold = CompareFold::new(tp_run("now"), tp_run("before"), Bootstrap::default()).unwrap();
    fold.add_baseline(&dialogue("tp/0001/m/r0", "m", &[80.0, 90.0], true));
    // Took the target action at turn 1, then another one to the end.
    let mut took = dialogue("tp/0002/m/r0", "m", &[50.0, 60.0, 70.0], false);
    if let ServiceOutcome::Valid { turn } = &mut took.turns[0].outcome {
        turn.action = "Done".into();
    }
    fold.add_baseline(&took);
    fold.add_baseline(&dialogue("tp/0003/m/r0", "m", &[80.0], true));
    fold.add_current(&dialogue("tp/0001/m/r0", "m", &[40.0, 50.0, 60.0], false));
    fold.add_current(&dialogue("tp/0002/m/r0", "m", &[80.0, 90.0], true));
    let mut cut = dialogue("tp/0003/m/r0", "m", &[80.0, 70.0], true);
    cut.end = DialogueEnd::InfraError;
    cut.turns[1].infra_error = Some("the customer's model is down".into());
    fold.add_current(&cut);
    let c = fold.finish().unwrap();
    let why: Vec<(&str, &str, &str)> = c
        .flips
        .iter()
        .map(|f| {
            (
                f.dialogue_id.as_str(),
                f.baseline_why.as_str(),
                f.current_why.as_str(),
            )
        })
        .collect();
    assert_eq!(
        why,
        [
            (
                "tp/0001/m/r0",
                "reached the target action Done at turn 1 (ended resolved)",
                "never took the target action Done; last action Other at turn 3 (ended max_turns)"
            ),
            (
                "tp/0003/m/r0",
                "reached the target action Done at turn 1 (ended resolved)",
                "infrastructure error at turn 2 (ended infra_error)"
            ),
            (
                "tp/0002/m/r0",
                "took the target action Done at turn 1, but its last answer took Other at turn 3 (ended max_turns)",
                "reached the target action Done at turn 1 (ended resolved)"
            ),
        ]
    );
    assert!(c.text().contains(
        "  tp/0001/m/r0\n    baseline: reached the target action Done at turn 1 (ended resolved)\n    current:  never took the target action Done; last action Other at turn 3 (ended max_turns)\n"
    ));
    let doc = c.document();
    assert_eq!(
        doc.flips[1].current_why,
        "infrastructure error at turn 2 (ended infra_error)"
    );
    let page = page_of(&c);
    assert!(page.contains(
        "<span class=\"why current\">current: infrastructure error at turn 2 (ended infra_error)</span>"
    ));
}

/// The unpaired test draws the same whatever the order the records come in: its strata are
/// visited by name and a stratum's cases by their key.
#[test]
fn the_unpaired_comparison_does_not_depend_on_the_order_of_the_records() {
    let side = |intent: &str, shift: f64| -> Vec<DialogueRecord> {
        (0..40)
            .map(|i| {
                let x = f64::from((i * 37) % 61) + shift;
                let mut r = dialogue(&format!("tp/{i:04}/m/r0"), "m", &[x, x / 2.0], i % 3 > 0);
                // Another case under the same id (another seed drew it): nothing pairs.
                r.job.intent = intent.into();
                r
            })
            .collect()
    };
    let (before, after) = (side("i", 0.0), side("j", -5.0));
    let fold = |reverse: bool| {
        let mut fold =
            CompareFold::new(tp_run("now"), tp_run("before"), Bootstrap::default()).unwrap();
        let order = |records: &[DialogueRecord]| -> Vec<DialogueRecord> {
            let mut v = records.to_vec();
            if reverse {
                v.reverse();
            }
            v
        };
        order(&before).iter().for_each(|r| fold.add_baseline(r));
        order(&after).iter().for_each(|r| fold.add_current(r));
        fold.finish().unwrap()
    };
    let (forward, backward) = (fold(false), fold(true));
    assert_eq!(forward.shared, 0);
    let all = forward.models().next().unwrap();
    assert_eq!(
        (all.test, all.sides.current_cases, all.sides.baseline_cases),
        (Test::Unpaired, 40, 40)
    );
    assert!(all.overall.difference.ci_low < all.overall.difference.ci_high);
    assert_eq!(forward.rows, backward.rows);
}
