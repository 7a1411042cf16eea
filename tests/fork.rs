//! `sage fork`: stored dialogues asked again at their turns (docs/training-data.md).
//!
//! The parent run of the pair tests is the export fixture (tests/data/export/fixture-run: the
//! six bundled scenarios, two cases each, three simulated agents, two repeats, four turns: 72
//! dialogues). The planted-failure tests play a small run of two simulated agents that are
//! right everywhere except at the turns they are told to fail (`fail_turns`), judged by one
//! exact judge at every turn.

mod common;

use sage::protocol::{DialogueRecord, ServiceOutcome, TurnRecord};
use sage::sop::{Sop, Values};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

fn fixture_run() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/export/fixture-run")
        .display()
        .to_string()
}

fn records(dir: &Path) -> Vec<DialogueRecord> {
    std::fs::read_to_string(dir.join("dialogues.jsonl"))
        .expect("records")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a record"))
        .collect()
}

fn fork_json(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("fork.json")).expect("fork.json"))
        .expect("json")
}

/// `sage export DIR --format dpo-trl`: its lines.
fn dpo_trl(dir: &Path) -> Vec<serde_json::Value> {
    let out = common::sage_ok(&["export", dir.to_str().unwrap(), "--format", "dpo-trl"]);
    out.lines()
        .map(|l| serde_json::from_str(l).expect("a pair"))
        .collect()
}

/// `sage fork FROM --out OUT ARGS --quiet`: its standard output.
fn fork(from: &str, out: &Path, args: &[&str]) -> String {
    let mut all = vec!["fork", from, "--out", out.to_str().unwrap(), "--quiet"];
    all.extend_from_slice(args);
    common::sage_ok(&all)
}

/// The records of a folder, ordered by id, without the run id (the folder's name) and the
/// times measured (each call's latency and wait for a provider's limit).
fn normalized(dir: &Path) -> Vec<serde_json::Value> {
    let mut all: Vec<serde_json::Value> = common::records_json(dir);
    for r in &mut all {
        r["job"]["run_id"] = serde_json::Value::Null;
        for t in r["turns"].as_array_mut().unwrap() {
            for c in t["calls"].as_array_mut().unwrap() {
                let c = c.as_object_mut().unwrap();
                c.remove("latency_ms");
                c.remove("limit_wait_ms");
            }
        }
    }
    all.sort_by(|a, b| {
        a["job"]["dialogue_id"]
            .as_str()
            .cmp(&b["job"]["dialogue_id"].as_str())
    });
    all
}

/// Asserts two folders' [`normalized`] records are the same, naming the first that differs.
fn assert_same(got: &[serde_json::Value], expected: &[serde_json::Value]) {
    assert_eq!(got.len(), expected.len(), "records");
    for (g, e) in got.iter().zip(expected) {
        if g != e {
            let diff: Vec<String> = ["job", "turns", "fork", "cost_usd", "end"]
                .iter()
                .filter(|k| g[**k] != e[**k])
                .map(|k| k.to_string())
                .collect();
            panic!("{} differs in {diff:?}:\n{g}\n{e}", e["job"]["dialogue_id"]);
        }
    }
}

/// A turn's answer: classification, path and action.
fn answer(t: &TurnRecord) -> Option<(&Values, &[String], &str)> {
    match &t.outcome {
        ServiceOutcome::Valid { turn } => Some((&turn.classification, &turn.path, &turn.action)),
        _ => None,
    }
}

/// A turn's chat reply as the agent's next prompt holds it.
fn answer_chat(t: &TurnRecord) -> Option<String> {
    match &t.outcome {
        ServiceOutcome::Valid { turn } => Some(turn.chat.clone()),
        ServiceOutcome::FormatError { chat, .. } => Some(chat.clone()),
        ServiceOutcome::InfraError { .. } => None,
    }
}

/// Whether `reply` is what the rule engine says is right for the parent turn: the judges'
/// consensus there as its classification, and the route `sop` derives from that consensus and
/// the case's variables as its path and action.
fn follows(sop: &Sop, parent: &DialogueRecord, turn: u32, reply: &TurnRecord) -> bool {
    let stored = parent
        .turns
        .iter()
        .find(|t| t.turn == turn)
        .expect("parent turn");
    let consensus = stored
        .judges
        .as_ref()
        .and_then(|j| j.consensus.clone())
        .expect("a forked turn has a consensus");
    let variables: Values = parent.job.variables.clone().into_iter().collect();
    let route = sop.route(&consensus, &variables).expect("a route");
    answer(reply).is_some_and(|(classification, path, action)| {
        *classification == consensus && path == route.path && action == route.action
    })
}

/// The default fork's goal on a small run: at least ten times the pairs the run gives and at
/// least one per two dialogues, every pair's chosen reply the rule engine's answer for its
/// context and every rejected one not; no model is called to rebuild a prefix.
#[test]
fn forking_every_judged_turn_multiplies_the_pairs_and_the_rule_engine_verifies_each() {
    let dir = tempfile::tempdir().unwrap();
    let from = fixture_run();
    let before = dpo_trl(Path::new(&from)).len();
    let out = dir.path().join("fork");
    let printed = fork(&from, &out, &["--samples", "4"]);
    assert!(
        printed.contains("3456 branches of 72 dialogues at 288 points"),
        "{printed}"
    );

    let parents: HashMap<String, DialogueRecord> = records(Path::new(&from))
        .into_iter()
        .map(|r| (r.job.dialogue_id.clone(), r))
        .collect();
    let branches: HashMap<String, DialogueRecord> = records(&out)
        .into_iter()
        .map(|r| (r.job.dialogue_id.clone(), r))
        .collect();
    // Every judged turn (four per dialogue), three models, four samples.
    assert_eq!(branches.len(), 72 * 4 * 3 * 4);
    let summary = fork_json(&out);
    let done = &summary["done"];
    assert_eq!(
        (
            done["parents"].as_u64(),
            done["points"].as_u64(),
            done["branches"].as_u64()
        ),
        (Some(72), Some(288), Some(3456))
    );
    // Only the agents answered: the customer's and the agent's words before each fork point
    // are the parent's, and no judge was asked without --judge.
    let calls = done["calls"].as_object().unwrap();
    assert_eq!(calls.keys().collect::<Vec<_>>(), ["agent"], "{calls:?}");
    assert_eq!(calls["agent"].as_u64(), Some(3456));
    for b in branches.values() {
        let link = b.fork.as_ref().expect("a fork link");
        let parent = &parents[&link.parent];
        assert_eq!(b.job.scenario, parent.job.scenario);
        assert_eq!(b.turns.len() as u32, link.turn, "{}", b.job.dialogue_id);
        for (mine, theirs) in b.turns.iter().zip(&parent.turns) {
            assert_eq!(mine.user_message, theirs.user_message);
            if mine.turn < link.turn {
                assert_eq!(mine.outcome, theirs.outcome);
                assert!(mine.calls.is_empty() && mine.judges.is_none());
            }
        }
    }

    let pairs = dpo_trl(&out);
    println!(
        "pairs: {before} from the run's 72 dialogues, {} from its fork ({}x)",
        pairs.len(),
        pairs.len() / before.max(1)
    );
    assert!(
        pairs.len() >= 10 * before.max(1),
        "{} pairs against {before}",
        pairs.len()
    );
    assert!(
        2 * pairs.len() >= 72,
        "{} pairs of 72 dialogues",
        pairs.len()
    );
    let sops: HashMap<String, Sop> = common::SCENARIOS
        .iter()
        .map(|id| (id.to_string(), common::load(id)))
        .collect();
    for pair in &pairs {
        let side = |key: &str| &branches[pair[key].as_str().expect("a dialogue id")];
        let (chosen, rejected) = (side("chosen_dialogue"), side("rejected_dialogue"));
        let (c, r) = (
            chosen.fork.as_ref().unwrap(),
            rejected.fork.as_ref().unwrap(),
        );
        // One context: the same turn of parents whose dialogue before it was the same (the
        // same parent, or a repeat of its case that went the same way), which the line names.
        assert_eq!(c.turn, r.turn);
        let context = |p: &str| {
            let p = &parents[p];
            let before: Vec<_> = (p.turns.iter().take(c.turn as usize - 1))
                .map(|t| (t.user_message.clone(), answer_chat(t)))
                .collect();
            let now = &p.turns[c.turn as usize - 1].user_message;
            (
                p.job.scenario.clone(),
                p.job.variables.clone(),
                before,
                now.clone(),
            )
        };
        assert_eq!(context(&c.parent), context(&r.parent), "{pair}");
        assert_eq!(pair["parent"].as_str(), Some(c.parent.as_str()));
        assert_eq!(pair["turn"].as_u64(), Some(u64::from(c.turn)));
        assert_eq!(pair["chosen_logic"].as_f64(), Some(100.0));
        assert!(pair["rejected_logic"].as_f64().unwrap() <= 50.0, "{pair}");
        let parent = &parents[&c.parent];
        let sop = &sops[&parent.job.scenario];
        let reply = |b: &DialogueRecord| b.turns.last().expect("the fork turn").clone();
        assert!(follows(sop, parent, c.turn, &reply(chosen)), "{pair}");
        assert!(!follows(sop, parent, c.turn, &reply(rejected)), "{pair}");
    }

    // The report of the fork: each model's replies at the fork turns.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let table = html
        .split("id=\"fork-replies\"")
        .nth(1)
        .expect("the fork section");
    let table = table.split("</table>").next().unwrap();
    for model in ["sim-strong", "sim-balanced", "sim-weak"] {
        assert!(
            table.contains(&format!("data-model=\"{model}\"")),
            "{model}"
        );
    }
}

/// The same fork twice gives the same fork.json and the same branches; one interrupted (its
/// records cut mid-line) and run again gives them too.
#[test]
fn the_same_fork_twice_and_a_resumed_one_give_the_same_branches() {
    let dir = tempfile::tempdir().unwrap();
    let from = fixture_run();
    let args = [
        "--samples",
        "2",
        "--models",
        "sim-strong,sim-weak",
        "--at",
        "2",
    ];
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    fork(&from, &a, &args);
    fork(&from, &b, &args);
    let expected = normalized(&a);
    assert_eq!(expected.len(), 72 * 2 * 2);
    assert_same(&normalized(&b), &expected);
    assert_eq!(fork_json(&a), fork_json(&b));

    // Interrupted: half its records, the last one cut short.
    let file = b.join("dialogues.jsonl");
    let text = std::fs::read_to_string(&file).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // A parent's branches are written together: two of one parent kept, its third cut.
    let keep = lines.len() / 2 + 2;
    let mut cut = lines[..keep].join("\n");
    cut.push('\n');
    cut.push_str(&lines[keep][..40]);
    std::fs::write(&file, cut).unwrap();
    let json = b.join("fork.json");
    let mut unfinished = fork_json(&b);
    unfinished.as_object_mut().unwrap().remove("done");
    std::fs::write(&json, unfinished.to_string()).unwrap();
    fork(&from, &b, &args);
    assert_same(&normalized(&b), &expected);
    assert_eq!(fork_json(&b), fork_json(&a));

    // Another fork into the same folder is refused, saying what is there.
    let o = common::sage(&[
        "fork",
        &from,
        "--out",
        b.to_str().unwrap(),
        "--samples",
        "3",
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("holds a fork of run `fixture`"), "{err}");
}

/// The planted run: `planted-3` fails at turn 3 only, `planted-23` at turns 2 and 3, both
/// priced; judged at every turn by an exact judge; three turns.
fn planted_run(dir: &Path) -> PathBuf {
    let config = dir.join("planted.yaml");
    let agent = |name: &str, turns: &str| {
        format!(
            "  - {{name: {name}, provider: simulated, price: {{input_per_million: 1.0, output_per_million: 2.0}}, sim: {{kind: agent, profile: strong, skills: {{classification_accuracy: 1.0, action_derivation: 1.0, format_error_rate: 0.0}}, fail_turns: [{turns}]}}}}\n"
        )
    };
    let text = format!(
        "models:\n{}{}  - {{name: sim-user, provider: simulated, sim: {{kind: user}}}}
  - {{name: sim-judge, provider: simulated, sim: {{kind: judge, noise: 0.0}}}}
service_models: [planted-3, planted-23]
user_model: sim-user
judge_models: [sim-judge]
scenarios: [bundled]
dialogues_per_scenario: 3
min_per_route: 0
max_turns: 3
judge_turns: every
seed: 11
",
        agent("planted-3", "3"),
        agent("planted-23", "2, 3")
    );
    std::fs::write(&config, text).unwrap();
    common::run_config(&config, dir, "planted")
}

/// The first turn where a record's agent left its reference path or action.
fn first_deviation(r: &DialogueRecord) -> Option<u32> {
    r.turns.iter().find(|t| t.verdict().left()).map(|t| t.turn)
}

/// `--at deviation --continue`: a failure planted at one turn is fixed by that turn (every
/// failed dialogue that had followed the reference until its last turn flips, the others do
/// not), a failure planted at two turns is not (none flips).
#[test]
fn one_turn_fixes_a_failure_planted_at_one_turn_and_not_one_planted_at_two() {
    let dir = tempfile::tempdir().unwrap();
    let run = planted_run(dir.path());
    let parents = records(&run);
    let out = dir.path().join("fix");
    let printed = fork(
        run.to_str().unwrap(),
        &out,
        &["--at", "deviation", "--continue"],
    );

    let failed: Vec<&DialogueRecord> = parents
        .iter()
        .filter(|r| !sage::scoring::summary::reached_target(r))
        .collect();
    let fixes: HashMap<String, DialogueRecord> = records(&out)
        .into_iter()
        .filter(|r| r.fork.as_ref().is_some_and(|f| f.fix.is_some()))
        .map(|r| (r.fork.clone().unwrap().parent, r))
        .collect();
    assert_eq!(fixes.len(), failed.len(), "one fix per failed parent");
    let mut expected_flips: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut flips: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for p in &failed {
        let model = p.job.service_model.as_str();
        let id = p.job.dialogue_id.as_str();
        let fix = &fixes[id];
        assert_eq!(fix.job.service_model, model, "played on by its own model");
        assert_eq!(fix.fork.as_ref().unwrap().turn, first_deviation(p).unwrap());
        if first_deviation(p) == Some(3) {
            expected_flips.entry(model).or_default().insert(id);
        }
        if sage::scoring::summary::reached_target(fix) {
            flips.entry(model).or_default().insert(id);
        }
    }
    let one_turn = expected_flips.get("planted-3").map_or(0, BTreeSet::len);
    assert!(one_turn >= 3, "{one_turn} one-turn failures planted");
    assert_eq!(flips, expected_flips);
    assert!(!flips.contains_key("planted-23"));

    let done = &fork_json(&out)["done"];
    let by_model = &done["fixes_by_model"];
    let failed_of = |m: &str| failed.iter().filter(|p| p.job.service_model == m).count();
    assert_eq!(
        by_model["planted-3"]["failed"].as_u64(),
        Some(failed_of("planted-3") as u64)
    );
    assert_eq!(
        by_model["planted-3"]["flipped"].as_u64(),
        Some(one_turn as u64)
    );
    assert_eq!(by_model["planted-23"]["flipped"].as_u64(), Some(0));
    assert_eq!(done["failed_parents"].as_u64(), Some(failed.len() as u64));
    assert_eq!(done["flipped"].as_u64(), Some(one_turn as u64));
    assert!(
        printed.contains(&format!(
            "{one_turn} of the {} failed dialogues",
            failed.len()
        )),
        "{printed}"
    );
    // Each branch played on: the customer answered after the fork turn.
    assert!(done["calls"]["customer"].as_u64().unwrap() > 0);

    // The report: per model the share one turn fixes, and each flipped dialogue beside its
    // parent with links to both transcripts.
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let fixes_table = html
        .split("id=\"fork-fixes\"")
        .nth(1)
        .expect("the fixes table");
    let fixes_table = fixes_table.split("</table>").next().unwrap();
    assert!(fixes_table.contains(&format!("<td class=\"num\">{one_turn}</td>")));
    for id in &expected_flips["planted-3"] {
        let at = html
            .find(&format!("data-parent=\"{id}\""))
            .unwrap_or_else(|| panic!("{id} listed"));
        let item = &html[at..];
        let item = &item[..item.find("</details>").unwrap()];
        assert!(
            item.contains("table class=\"side-by-side\""),
            "{id} side by side"
        );
        let parent_link = format!(
            "../planted/report.html#dialogue={}",
            sage::report::encode_uri_component(id)
        );
        assert!(item.contains(&parent_link), "{id}: {parent_link}");
    }
}

/// A fork held to a budget starts no parent once it is spent and says how many it left; the
/// same command with a higher budget forks the rest, to the branches an unbudgeted fork makes.
#[test]
fn a_fork_stops_at_its_budget_and_the_rerun_finishes_it() {
    let dir = tempfile::tempdir().unwrap();
    let run = planted_run(dir.path());
    let run = run.to_str().unwrap();
    let args = ["--at", "judged", "--samples", "2", "--concurrency", "1"];
    let whole = dir.path().join("whole");
    fork(run, &whole, &args);
    let cost: f64 = fork_json(&whole)["done"]["cost_usd"]["agent"]
        .as_f64()
        .unwrap();
    assert!(cost > 0.0);

    let part = dir.path().join("part");
    let budget = format!("{}", cost / 4.0);
    let mut limited = args.to_vec();
    limited.extend(["--max-cost-usd", &budget]);
    let printed = fork(run, &part, &limited);
    let done = &fork_json(&part)["done"];
    let left = done["left_for_budget"].as_u64().unwrap();
    assert!(left > 0, "{printed}");
    assert!(printed.contains("left unforked: the budget"), "{printed}");
    assert_eq!(done["parents"].as_u64().unwrap() + left, 36);
    let spent = done["cost_usd"]["agent"].as_f64().unwrap();
    // No parent starts once the budget is spent: over by one parent's branches at most.
    assert!(
        spent >= cost / 4.0 && spent < cost / 2.0,
        "{spent} of {cost}"
    );

    fork(run, &part, &args);
    assert_same(&normalized(&part), &normalized(&whole));
    assert_eq!(fork_json(&part)["done"], fork_json(&whole)["done"]);
}
