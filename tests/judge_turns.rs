//! Judged turns (`judge_turns`) and judge panels of any odd size: the judges are asked about
//! exactly the turns configured (the paper's 1, 5, 10, 15 and final turn by default), the final
//! turn is judged after the customer ends the dialogue without an extra call, `every` gives the
//! numbers of the harness before `judge_turns` existed, and the model calls of one dialogue are
//! counted through real HTTP.

mod common;

use common::mock::{AGENT_ANSWER, JUDGE_ANSWER, completion};
use sage::plan::RunConfig;
use sage::protocol::{DialogueRecord, JudgeTurns, ServiceOutcome};
use sage::store::RunDir;
use serde_json::{Value as Json, json};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::process::Command;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer};

/// The simulated run the `every` golden was made with (two agents, the bundled scenarios).
const CONFIG: &str = "models:
  - {name: sim-balanced, provider: simulated, sim: {kind: agent, profile: balanced}}
  - {name: sim-weak, provider: simulated, sim: {kind: agent, profile: weak}}
  - {name: sim-user, provider: simulated, sim: {kind: user}}
  - {name: sim-judge-1, provider: simulated, sim: {kind: judge}}
  - {name: sim-judge-2, provider: simulated, sim: {kind: judge, noise: 0.03}}
  - {name: sim-judge-3, provider: simulated, sim: {kind: judge, noise: 0.06}}
service_models: [sim-balanced, sim-weak]
user_model: sim-user
judge_models: [sim-judge-1, sim-judge-2, sim-judge-3]
scenarios: [bundled]
dialogues_per_scenario: 4
min_per_route: 0
max_turns: 16
seed: 13
";

/// Snapshot: the SHA-256 of [`canonical`] summary.json of [`CONFIG`] run by the harness before
/// `judge_turns` existed (commit 54373402, `sage run --config run.yaml --run-id before`), so
/// that `judge_turns: every` is shown to change no number of before. It is regenerated only on
/// purpose (a change of the scores themselves), by printing [`canonical`] of that run's
/// summary.json. Beside it, what this test derives on its own: the turns judged in each record,
/// by the paper's rule, and summary.json's headline numbers from the records' turn scores
/// ([`rescore`]).
const EVERY_GOLDEN: &str = "589836bd7c0f148d3b88d65e48d9c6c9ee03dca377a5ceb801bd94c87df6be57";

/// Runs [`CONFIG`] plus `extra` through the CLI; the results folder.
fn cli_run(dir: &Path, extra: &str) -> std::path::PathBuf {
    let config = dir.join("run.yaml");
    std::fs::write(&config, format!("{CONFIG}{extra}")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(["run", "--quiet", "--run-id", "r", "--config"])
        .arg(&config)
        .arg("--out")
        .arg(dir.join("out"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join("out/r")
}

/// summary.json without what was added since [`EVERY_GOLDEN`] was taken (`judge_turns`'s
/// `judged_turns` and `unjudged_turns`; the calls' `scored_turns` and `per_scored_turn`; the
/// models' `noise_floor`; the run's `customer_fidelity` and `scenario_sha256`), hashed.
fn canonical(summary: &Path) -> String {
    fn strip(v: &mut Json) {
        match v {
            Json::Object(map) => {
                map.remove("judged_turns");
                map.remove("unjudged_turns");
                map.remove("scored_turns");
                map.remove("per_scored_turn");
                map.remove("noise_floor");
                map.remove("customer_fidelity");
                map.remove("scenario_sha256");
                map.remove("simulator");
                map.remove("judges");
                map.remove("error_correlation");
                map.remove("effective_judges");
                map.values_mut().for_each(strip);
            }
            Json::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v: Json = serde_json::from_slice(&std::fs::read(summary).unwrap()).unwrap();
    strip(&mut v);
    let text = serde_json::to_string(&v).unwrap();
    format!("{:x}", Sha256::digest(text.as_bytes()))
}

fn records(results: &Path) -> Vec<DialogueRecord> {
    let mut r = RunDir::open(results).unwrap().read_dialogues().unwrap();
    r.sort_by(|a, b| a.job.dialogue_id.cmp(&b.job.dialogue_id));
    r
}

/// The turns of a record the judges were asked about.
fn judged(r: &DialogueRecord) -> Vec<u32> {
    r.turns
        .iter()
        .filter(|t| t.judges.is_some())
        .map(|t| t.turn)
        .collect()
}

#[test]
fn every_turn_gives_the_numbers_of_before_and_paper_judges_the_papers_turns_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let every_dir = tmp.path().join("every");
    let paper_dir = tmp.path().join("paper");
    std::fs::create_dir_all(&every_dir).unwrap();
    std::fs::create_dir_all(&paper_dir).unwrap();
    let every = cli_run(&every_dir, "judge_turns: every\n");
    assert_eq!(canonical(&every.join("summary.json")), EVERY_GOLDEN);
    // The default is the paper's evaluation.
    let paper = cli_run(&paper_dir, "");
    let (every, paper_summary) = (
        records(&every),
        std::fs::read_to_string(paper.join("summary.json")).unwrap(),
    );
    let paper = records(&paper);
    assert_eq!(every.len(), 48);
    let mut ended_early = 0;
    for (e, p) in every.iter().zip(&paper) {
        assert_eq!(e.job.dialogue_id, p.job.dialogue_id);
        assert_eq!(p.job.judge_turns, JudgeTurns::Paper);
        // The same dialogue is played: judging fewer turns changes no line of it.
        assert_eq!(e.end, p.end);
        assert_eq!(e.turns.len(), p.turns.len());
        let last = p.turns.last().unwrap().turn;
        ended_early += usize::from(last < 16);
        let expected: Vec<u32> = (1..=last)
            .filter(|t| [1, 5, 10, 15].contains(t) || *t == last)
            .collect();
        assert_eq!(judged(p), expected, "{}", p.job.dialogue_id);
        assert_eq!(judged(e), (1..=last).collect::<Vec<_>>());
        for (te, tp) in e.turns.iter().zip(&p.turns) {
            assert_eq!(te.outcome, tp.outcome);
            if tp.judges.is_some() {
                // A judged turn is judged and scored as under `every` (the final one too,
                // judged after the customer's closing call).
                assert_eq!(te.judges, tp.judges);
                assert_eq!(te.scores, tp.scores);
            } else {
                assert_eq!((tp.scores, &tp.infra_error), (None, &None));
            }
        }
        // Agent and customer calls alike; judge calls only on judged turns.
        let calls = |r: &DialogueRecord| {
            r.turns.iter().map(|t| t.calls.len()).sum::<usize>() + r.closing_calls.len()
        };
        let unjudged = (e.turns.len() - expected.len()) * 3;
        assert_eq!(calls(p), calls(e) - unjudged);
    }
    // The final turn came before max_turns in some dialogues (judged after the customer left).
    assert!(ended_early > 0);
    // leaderboard.md, the terminal table and the report's run header say it too.
    let paper_dir = paper_dir.join("out/r");
    let said = "Judged turns: paper: turns 1, 5, 10, 15 and each dialogue's final turn.";
    let leaderboard = std::fs::read_to_string(paper_dir.join("leaderboard.md")).unwrap();
    assert!(leaderboard.contains(said), "{leaderboard}");
    let report = std::fs::read_to_string(paper_dir.join("report.html")).unwrap();
    assert!(report.contains(
        "<td data-fact=\"judged-turns\">paper: turns 1, 5, 10, 15 and each dialogue's final turn</td>"
    ));
    // summary.json says which turns were judged and counts the valid answers not judged.
    let summary: Json = serde_json::from_str(&paper_summary).unwrap();
    assert_eq!(summary["judged_turns"], json!("paper"));
    let unjudged_valid: usize = paper
        .iter()
        .filter(|r| r.job.service_model == "sim-weak")
        .flat_map(|r| &r.turns)
        .filter(|t| t.judges.is_none() && matches!(t.outcome, ServiceOutcome::Valid { .. }))
        .count();
    assert_eq!(
        summary["models"][1]["all"]["unjudged_turns"],
        json!(unjudged_valid)
    );
    // The oracle beside the snapshot: summary.json's headline numbers re-derived here from the
    // records' own turn scores, by the paper's averages over scored turns, for both runs.
    let every_summary = std::fs::read_to_string(every_dir.join("out/r/summary.json")).unwrap();
    rescore(&every, &serde_json::from_str(&every_summary).unwrap());
    rescore(&paper, &summary);
}

/// Checks every model's `all` numbers in `summary` against the records: OA, Logic and Chat the
/// means of the scored turns' (those with scores) `overall`, `logic` and `chat`; the execution
/// gap the mean Acc_cls minus the mean Acc_action, in points; `turns` their count.
fn rescore(records: &[DialogueRecord], summary: &Json) {
    let models = summary["models"].as_array().expect("models");
    assert_eq!(models.len(), 2);
    for model in models {
        let name = model["model"].as_str().unwrap();
        let scored: Vec<_> = records
            .iter()
            .filter(|r| r.job.service_model == name)
            .flat_map(|r| &r.turns)
            .filter_map(|t| t.scores.as_ref())
            .collect();
        let mean = |f: &dyn Fn(&sage::protocol::TurnScores) -> f64| {
            scored.iter().map(|s| f(s)).sum::<f64>() / scored.len() as f64
        };
        let all = &model["all"];
        assert_eq!(all["turns"], json!(scored.len()), "{name}");
        for (metric, expected) in [
            ("overall", mean(&|s| s.overall)),
            ("logic", mean(&|s| s.logic)),
            ("chat", mean(&|s| s.chat)),
            (
                "execution_gap",
                100.0 * (mean(&|s| s.acc_cls) - mean(&|s| s.acc_action)),
            ),
        ] {
            let got = all[metric]["mean"].as_f64().unwrap();
            assert!(
                (got - expected).abs() < 1e-6,
                "{name} {metric}: summary.json says {got}, the records {expected}"
            );
            assert_eq!(all[metric]["n"], json!(scored.len()), "{name} {metric}");
        }
    }
}

/// [`CONFIG`] with a panel of `judges` simulated judges.
fn with_panel(judges: usize) -> String {
    let mut text = CONFIG.replace(
        "judge_models: [sim-judge-1, sim-judge-2, sim-judge-3]",
        &format!(
            "judge_models: [{}]",
            (1..=judges)
                .map(|i| format!("sim-judge-{i}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    for i in 4..=judges {
        text = text.replace(
            "service_models:",
            &format!(
                "  - {{name: sim-judge-{i}, provider: simulated, sim: {{kind: judge, noise: 0.1}}}}\nservice_models:"
            ),
        );
    }
    text
}

#[test]
fn panels_of_one_and_five_judges_run_and_are_reported_pair_by_pair() {
    for (judges, pairs) in [(1, 0), (5, 10)] {
        let tmp = tempfile::tempdir().unwrap();
        let config = tmp.path().join("run.yaml");
        std::fs::write(&config, with_panel(judges)).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_sage"))
            .args([
                "run",
                "--quiet",
                "--run-id",
                "r",
                "--dialogues",
                "1",
                "--config",
            ])
            .arg(&config)
            .arg("--out")
            .arg(tmp.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let results = tmp.path().join("r");
        for r in records(&results) {
            for t in r.turns.iter().filter(|t| t.judges.is_some()) {
                let panel = t.judges.as_ref().unwrap();
                assert_eq!(panel.judgments.len(), judges);
                assert!(panel.consensus.is_some());
                // One call per judge on a judged turn, plus the customer's and the agent's.
                assert_eq!(t.calls.len(), 2 + judges);
            }
        }
        // The judges section has one kappa column per pair of judges and one column per judge
        // in the list of split turns.
        let report = std::fs::read_to_string(results.join("report.html")).unwrap();
        let kappas = report.matches("<th class=\"num\">κ ").count();
        let scenarios = report.matches("<table class=\"data judges\"").count();
        assert!(scenarios > 0);
        // Each table: the pairs, the mean and the consensus against the truth.
        assert_eq!(kappas, scenarios * (pairs + 2));
        assert_eq!(report.contains("<th>Judge 5</th>"), judges == 5);
    }
}

/// Requests each server received (agent, customer, judges) for one 8-turn dialogue of the
/// telecom scenario (the customer ends it at its ninth call), and the record.
fn count_calls(judges: usize, judge_turns: JudgeTurns) -> ([usize; 3], DialogueRecord) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (agent, user, judge) = rt.block_on(async {
        let (a, u, j) = (
            MockServer::start().await,
            MockServer::start().await,
            MockServer::start().await,
        );
        let chat = || Mock::given(method("POST")).and(path("/v1/chat/completions"));
        chat()
            .respond_with(completion(AGENT_ANSWER))
            .mount(&a)
            .await;
        chat()
            .respond_with(completion("Please change my plan."))
            .up_to_n_times(8)
            .mount(&u)
            .await;
        chat().respond_with(completion("[END]")).mount(&u).await;
        chat()
            .respond_with(completion(JUDGE_ANSWER))
            .mount(&j)
            .await;
        (a, u, j)
    });
    let names: Vec<String> = (1..=judges).map(|i| format!("judge-{i}")).collect();
    let mut models = vec![
        common::mock::model("agent", &agent, 5.0, 1),
        common::mock::model("user", &user, 5.0, 1),
    ];
    models.extend(names.iter().map(|n| common::mock::model(n, &judge, 5.0, 1)));
    let config = RunConfig {
        models,
        service_models: vec!["agent".into()],
        user_model: "user".into(),
        judge_models: names,
        judge_turns,
        dialogues_per_scenario: 1,
        min_per_route: 0,
        max_turns: 16,
        concurrency: 1,
        ..RunConfig::default()
    };
    let record = common::mock::play_one_telecom_dialogue(&config);
    let counts = rt.block_on(async {
        let mut n = [0; 3];
        for (i, s) in [&agent, &user, &judge].into_iter().enumerate() {
            n[i] = s.received_requests().await.map_or(0, |r| r.len());
        }
        n
    });
    (counts, record)
}

#[test]
fn an_eight_turn_dialogue_makes_26_calls_with_three_judges_on_the_papers_turns() {
    let (n, record) = count_calls(3, JudgeTurns::Paper);
    // 8 agent calls, 8 customer calls and the closing one, 3 judges on turns 1, 5 and 8.
    assert_eq!(n, [8, 9, 9]);
    assert_eq!(n.iter().sum::<usize>(), 26);
    assert_eq!(record.turns.len(), 8);
    assert_eq!(judged(&record), vec![1, 5, 8]);
    // Every call is in the record: the final turn's judges in turn 8's calls.
    assert_eq!(record.turns[7].calls.len(), 2 + 3);
    assert_eq!(record.closing_calls.len(), 1);
    let scored: Vec<u32> = (record.turns.iter())
        .filter(|t| t.scores.is_some())
        .map(|t| t.turn)
        .collect();
    assert_eq!(scored, vec![1, 5, 8]);
}

#[test]
fn every_turn_makes_41_calls_one_judge_on_the_papers_turns_20_and_on_every_turn_25() {
    let (n, record) = count_calls(3, JudgeTurns::Every);
    assert_eq!((n, n.iter().sum::<usize>()), ([8, 9, 24], 41));
    assert_eq!(judged(&record), (1..=8).collect::<Vec<_>>());
    let (n, record) = count_calls(1, JudgeTurns::Paper);
    assert_eq!((n, n.iter().sum::<usize>()), ([8, 9, 3], 20));
    assert_eq!(judged(&record), vec![1, 5, 8]);
    let (n, _) = count_calls(1, JudgeTurns::Every);
    assert_eq!((n, n.iter().sum::<usize>()), ([8, 9, 8], 25));
    let (n, _) = count_calls(5, JudgeTurns::List(vec![2, 8]));
    assert_eq!((n, n.iter().sum::<usize>()), ([8, 9, 10], 27));
}

#[test]
fn panels_of_even_size_or_above_five_and_bad_turn_lists_are_refused() {
    let base = "models:\n  - {name: a, provider: simulated, sim: {kind: agent, profile: strong}}\n  - {name: u, provider: simulated, sim: {kind: user}}\n  - {name: j, provider: simulated, sim: {kind: judge}}\nservice_models: [a]\nuser_model: u\nmax_turns: 8\n";
    let parse = |extra: &str| RunConfig::from_yaml(&format!("{base}{extra}"), "run.yaml");
    for judges in [1, 3, 5] {
        let list = vec!["j"; judges].join(", ");
        assert!(parse(&format!("judge_models: [{list}]\n")).is_ok());
    }
    for judges in [0, 2, 4, 6, 7] {
        let list = vec!["j"; judges].join(", ");
        assert_eq!(
            parse(&format!("judge_models: [{list}]\n"))
                .unwrap_err()
                .to_string(),
            format!(
                "run.yaml: judge_models: {judges} given; expected 1, 3 or 5 judges (an odd panel, so that the majority vote per field has a winner)"
            )
        );
    }
    let judged = |text: &str| {
        parse(&format!("judge_models: [j]\njudge_turns: {text}\n"))
            .map(|c| c.judge_turns)
            .map_err(|e| e.to_string())
    };
    assert_eq!(judged("every"), Ok(JudgeTurns::Every));
    assert_eq!(judged("paper"), Ok(JudgeTurns::Paper));
    assert_eq!(judged("[1, 8]"), Ok(JudgeTurns::List(vec![1, 8])));
    assert_eq!(
        judged("[1, 9]"),
        Err("run.yaml: judge_turns: turn 9; expected 1 to max_turns (8)".into())
    );
    assert_eq!(
        judged("[3, 3]"),
        Err("run.yaml: judge_turns: turn 3 listed twice; expected each turn once".into())
    );
    assert!(
        judged("often")
            .unwrap_err()
            .contains("judge_turns: `often`; expected `paper`, `every` or a list of turn numbers"),
        "{:?}",
        judged("often")
    );
}

#[test]
fn a_run_from_before_judge_turns_resumes_as_every_turn() {
    let tmp = tempfile::tempdir().unwrap();
    let results = cli_run(tmp.path(), "judge_turns: every\n");
    // Make it look like a run written before the key existed: no `judge_turns` anywhere, and
    // the last dialogue not played yet.
    let manifest = results.join("manifest.json");
    let mut m: Json = serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    m["config"].as_object_mut().unwrap().remove("judge_turns");
    std::fs::write(&manifest, serde_json::to_string(&m).unwrap()).unwrap();
    let dialogues = results.join("dialogues.jsonl");
    let text = std::fs::read_to_string(&dialogues).unwrap();
    let mut lines: Vec<String> = text
        .lines()
        .map(|l| {
            let mut v: Json = serde_json::from_str(l).unwrap();
            v["job"].as_object_mut().unwrap().remove("judge_turns");
            serde_json::to_string(&v).unwrap()
        })
        .collect();
    lines.pop();
    std::fs::write(&dialogues, lines.join("\n") + "\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_sage"))
        .args(["run", "--quiet", "--resume"])
        .arg(&results)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let all = records(&results);
    assert_eq!(all.len(), 48);
    assert!(all.iter().all(|r| r.job.judge_turns == JudgeTurns::Every));
    assert_eq!(canonical(&results.join("summary.json")), EVERY_GOLDEN);
}
