//! `sage export`: training data from a results folder, streamed.
//!
//! The fixture run (tests/data/export/fixture-run) is a small real run: the six bundled
//! scenarios, two cases each, three simulated agents, two repeats, at most four turns (72
//! dialogues). `openai-min90.jsonl` and `sharegpt-min90.json` are the outputs of the in-memory
//! implementation that preceded streaming (commit 7c49964) on it, kept to check that the
//! streamed output is the same bytes. When the prompts were laid out for prefix caching (the
//! job's values moved to a last [Current System Information] section) both files were written
//! again by `sage export`, after checking that they differ from the old ones in that layout only
//! (every system prompt, with its values section removed, equals the old one with its
//! `. Current value: V` suffixes and [Other System Information] block removed; every other
//! message is the same bytes).

mod common;

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/export")
        .join(name)
}

fn fixture_run() -> String {
    data("fixture-run").display().to_string()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `sage export` on the fixture run; its standard output (the command must succeed).
fn export(args: &[&str]) -> Vec<u8> {
    let run = fixture_run();
    let mut all = vec!["export", run.as_str()];
    all.extend_from_slice(args);
    let o = common::sage(&all);
    assert!(o.status.success(), "sage {all:?}: {}", stderr(&o));
    o.stdout
}

/// Snapshots: the bytes `sage export` wrote for the fixture run before the export streamed
/// (tests/data/export/openai-min90.jsonl, sharegpt-min90.json) and the SHA-256 of two larger
/// outputs. A change that alters them on purpose regenerates them with
/// `cargo run -- export tests/data/export/fixture-run --format openai --min-logic 0 | sha256sum`
/// (and the same with `--format sharegpt`; `--min-logic 90` into the two files). What the
/// examples must be is checked independently of any snapshot by [`oracle`] (the examples
/// computed from the records in memory as docs/export.md describes them), in the tests below.
#[test]
fn the_existing_formats_give_the_bytes_the_in_memory_export_gave() {
    for (args, fixture) in [
        (
            &["--format", "openai", "--min-logic", "90"][..],
            "openai-min90.jsonl",
        ),
        (
            &["--format", "sharegpt", "--min-logic", "90"][..],
            "sharegpt-min90.json",
        ),
    ] {
        let expected = std::fs::read(data(fixture)).unwrap();
        let got = export(args);
        assert!(
            got == expected,
            "{args:?}: output differs from {fixture} ({} bytes, expected {})",
            got.len(),
            expected.len()
        );
    }
    // Every turn with a valid scored answer (2 MB each, so only their SHA-256 are kept).
    for (args, sha, lines) in [
        (
            &["--format", "openai", "--min-logic", "0"][..],
            "3cc43f780f0cfccd476d71a3841a0cc3b0c8d2035a9582affcb666c73d1544ef",
            276,
        ),
        (
            &["--format", "sharegpt", "--min-logic", "0"][..],
            "da5730b9d5cf683a1308040ab75170f0ae4a384e310a7b76ca38f014e9d11eef",
            0,
        ),
    ] {
        let got = export(args);
        if lines > 0 {
            assert_eq!(got.iter().filter(|b| **b == b'\n').count(), lines);
        }
        assert_eq!(hex(&Sha256::digest(&got)), sha, "{args:?}");
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

// ---------------------------------------------------------------------------------------------
// An independent oracle: the examples and pairs computed from the records in memory, the way
// the documentation describes them, to compare the streamed export with.

use sage::plan::derive_seed;
use sage::protocol::{DialogueRecord, ServiceOutcome};
use sage::sop::Sop;
use sage::store::RunDir;
use sage::store::export::{self as ex, ExportStats, Format, Options, Output, example};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::num::NonZeroUsize;
use std::sync::Arc;

/// One example the oracle expects: where it comes from and its text.
#[derive(Debug, Clone)]
struct Expected {
    record: usize,
    turn: usize,
    dialogue: String,
    scenario: String,
    model: String,
    adversarial: String,
    route: String,
    /// `scenario/case`: the dialogue id without model and repeat.
    case: String,
    messages: Vec<(&'static str, String)>,
    answer: String,
    logic: f64,
}

impl Expected {
    /// The OpenAI line, built as the in-memory export built it.
    fn openai(&self) -> String {
        let mut messages: Vec<Value> = self
            .messages
            .iter()
            .map(|(role, content)| json!({"role": role, "content": content}))
            .collect();
        messages.push(json!({"role": "assistant", "content": self.answer}));
        json!({ "messages": messages }).to_string()
    }
}

fn read_records(dir: &Path) -> Vec<DialogueRecord> {
    std::fs::read_to_string(dir.join("dialogues.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn sops() -> HashMap<String, Arc<Sop>> {
    sage::scenario::bundled::BUNDLED
        .iter()
        .map(|(name, text)| {
            let sop = sage::sop::from_yaml(text, name).unwrap();
            (sop.scenario().id.clone(), Arc::new(sop))
        })
        .collect()
}

fn system_prompt(sops: &HashMap<String, Arc<Sop>>, r: &DialogueRecord) -> String {
    let sop = &sops[&r.job.scenario];
    sage::prompts::agent_system_prompt(sop, &sage::prompts::system_information(sop, &r.job))
}

/// Every agent turn with a valid, scored answer, in file order, with its context.
fn oracle(records: &[DialogueRecord]) -> Vec<Expected> {
    let sops = sops();
    let mut out = Vec::new();
    for (i, r) in records.iter().enumerate() {
        let mut context = vec![("system", system_prompt(&sops, r))];
        let mut id = r.job.dialogue_id.rsplitn(3, '/');
        let case = id.nth(2).unwrap().to_string();
        for (t, turn) in r.turns.iter().enumerate() {
            if turn.user_message.is_empty() {
                continue;
            }
            context.push(("user", turn.user_message.clone()));
            let seen = match (&turn.outcome, &turn.raw_output) {
                (ServiceOutcome::Valid { turn: v }, Some(raw)) => {
                    if let Some(s) = turn.scores {
                        out.push(Expected {
                            record: i,
                            turn: t,
                            dialogue: r.job.dialogue_id.clone(),
                            scenario: r.job.scenario.clone(),
                            model: r.job.service_model.clone(),
                            adversarial: r.job.adversarial.to_string(),
                            route: sage::scoring::summary::route_key(&r.job.target),
                            case: case.clone(),
                            messages: context.clone(),
                            answer: raw.clone(),
                            logic: s.logic,
                        });
                    }
                    Some(v.chat.clone())
                }
                (ServiceOutcome::FormatError { chat, .. }, _) => Some(chat.clone()),
                _ => None,
            };
            if let Some(seen) = seen {
                context.push(("assistant", seen));
            }
        }
    }
    out
}

/// The library's hash of an oracle example (for the caps' rank).
fn example_hash(e: &Expected, part: usize) -> u64 {
    let role = |r: &str| match r {
        "system" => example::Role::System,
        "user" => example::Role::User,
        _ => example::Role::Assistant,
    };
    let messages: Vec<example::Message<'_>> = e
        .messages
        .iter()
        .map(|(r, c)| example::Message {
            role: role(r),
            content: c,
        })
        .collect();
    example::example_hash(part, &e.route, example::context_hash(&messages), &e.answer)
}

/// Runs the library's export of `dir` to files in a temporary folder: the stats and each
/// part's text (the training part first).
fn export_lib(dir: &Path, options: &Options) -> (ExportStats, Vec<String>) {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out.jsonl");
    let run = RunDir::open(dir).unwrap();
    let stats = ex::export(&run, &sops(), options, &Output::File(out.clone())).unwrap();
    let texts = stats
        .parts
        .iter()
        .map(|p| std::fs::read_to_string(p.path.as_ref().unwrap()).unwrap())
        .collect();
    (stats, texts)
}

fn lines(text: &str) -> Vec<String> {
    text.lines().map(String::from).collect()
}

fn fixture() -> PathBuf {
    data("fixture-run")
}

fn nz(n: usize) -> Option<NonZeroUsize> {
    NonZeroUsize::new(n)
}

/// The default options but `--min-logic 0`: every valid scored answer, as [`oracle`] lists them.
fn every_scored() -> Options {
    Options {
        min_logic: 0.0,
        ..Options::default()
    }
}

#[test]
fn sharegpt_jsonl_is_the_array_one_element_a_line() {
    let array: Vec<Value> =
        serde_json::from_slice(&std::fs::read(data("sharegpt-min90.json")).unwrap()).unwrap();
    let got =
        String::from_utf8(export(&["--format", "sharegpt-jsonl", "--min-logic", "90"])).unwrap();
    let expected: String = array.iter().map(|v| v.to_string() + "\n").collect();
    assert_eq!(got, expected);
}

/// Which oracle examples a filter keeps.
type Keep = Box<dyn Fn(&Expected) -> bool>;

#[test]
fn filters_keep_exactly_the_matching_dialogues() {
    let all = oracle(&read_records(&fixture()));
    let route = all
        .iter()
        .find(|e| e.scenario == "telecom_package")
        .unwrap()
        .route
        .clone();
    let cases: Vec<(example::Filter, Keep)> = vec![
        (
            example::Filter {
                scenarios: vec!["telecom_package".into(), "airline_refund".into()],
                ..Default::default()
            },
            Box::new(|e: &Expected| {
                ["telecom_package", "airline_refund"].contains(&e.scenario.as_str())
            }),
        ),
        (
            example::Filter {
                models: vec!["sim-weak".into()],
                ..Default::default()
            },
            Box::new(|e: &Expected| e.model == "sim-weak"),
        ),
        (
            example::Filter {
                adversarial: vec![sage::scenario::Adversarial::Weak],
                ..Default::default()
            },
            Box::new(|e: &Expected| e.adversarial == "weak"),
        ),
        (
            example::Filter {
                routes: vec![route.clone()],
                models: vec!["sim-strong".into(), "sim-balanced".into()],
                ..Default::default()
            },
            Box::new(move |e: &Expected| e.route == route && e.model != "sim-weak"),
        ),
    ];
    for (filter, keep) in cases {
        let options = Options {
            filter: filter.clone(),
            min_logic: 50.0,
            ..Options::default()
        };
        let (stats, texts) = export_lib(&fixture(), &options);
        let expected: Vec<String> = all
            .iter()
            .filter(|e| keep(e) && e.logic >= 50.0)
            .map(Expected::openai)
            .collect();
        assert!(
            !expected.is_empty() && expected.len() < all.len(),
            "{filter:?}"
        );
        assert_eq!(lines(&texts[0]), expected, "{filter:?}");
        // Every turn counted once; the filters count the turns of the dialogues they left out.
        let f = stats.filtered;
        assert_eq!(
            stats.turns,
            f.scenario + f.model + f.adversarial + f.route + stats.left.total() + stats.written(),
            "{stats:?}"
        );
        let records = read_records(&fixture());
        let left_out: usize = records
            .iter()
            .filter(|r| {
                let route = sage::scoring::summary::route_key(&r.job.target);
                filter.check(&r.job, &route).is_some()
            })
            .map(|r| r.turns.len())
            .sum();
        assert_eq!(f.scenario + f.model + f.adversarial + f.route, left_out);
    }
}

#[test]
fn dedup_drops_an_example_already_written_to_the_same_file() {
    let all = oracle(&read_records(&fixture()));
    let mut seen = BTreeSet::new();
    let expected: Vec<String> = all
        .iter()
        .filter(|e| seen.insert((e.route.clone(), e.openai())))
        .map(Expected::openai)
        .collect();
    let duplicates = all.len() - expected.len();
    assert!(
        duplicates > 0,
        "the fixture repeats examples (same customer, same answer)"
    );
    let (stats, texts) = export_lib(
        &fixture(),
        &Options {
            dedup: true,
            ..every_scored()
        },
    );
    assert_eq!(lines(&texts[0]), expected);
    assert_eq!(stats.duplicates, duplicates);
}

/// The cases of the fixture the split `validation=0.3` holds out with seed 7 (a change here
/// moves a team's validation set: the split must stay stable across versions).
const VALIDATION_CASES: [&str; 2] = ["property_service/0000", "telecom_package/0000"];

#[test]
fn a_split_puts_every_dialogue_of_a_case_in_one_part() {
    let all = oracle(&read_records(&fixture()));
    let options = Options {
        splits: vec![example::Split {
            name: "validation".into(),
            fraction: 0.3,
        }],
        ..every_scored()
    };
    let (stats, texts) = export_lib(&fixture(), &options);
    assert_eq!(stats.parts.len(), 2);
    assert_eq!(stats.parts[1].name, "validation");
    assert!(
        stats.parts[1]
            .path
            .as_ref()
            .unwrap()
            .ends_with("out.validation.jsonl")
    );
    let held: BTreeSet<String> = all
        .iter()
        .filter(|e| lines(&texts[1]).contains(&e.openai()))
        .map(|e| e.case.clone())
        .collect();
    assert_eq!(
        held,
        VALIDATION_CASES.iter().map(|c| c.to_string()).collect()
    );
    let part = |e: &Expected| usize::from(VALIDATION_CASES.contains(&e.case.as_str()));
    for (i, text) in texts.iter().enumerate() {
        let expected: Vec<String> = all
            .iter()
            .filter(|e| part(e) == i)
            .map(Expected::openai)
            .collect();
        assert_eq!(lines(text), expected, "part {i}");
    }
    // Three parts: no case in two, none lost.
    let options = Options {
        splits: vec![
            example::Split {
                name: "validation".into(),
                fraction: 0.25,
            },
            example::Split {
                name: "test".into(),
                fraction: 0.25,
            },
        ],
        ..every_scored()
    };
    let (stats, texts) = export_lib(&fixture(), &options);
    let mut part_of: BTreeMap<String, usize> = BTreeMap::new();
    for e in &all {
        let line = e.openai();
        let parts: Vec<usize> = (0..3)
            .filter(|i| lines(&texts[*i]).contains(&line))
            .collect();
        assert_eq!(parts.len(), 1, "{} in parts {parts:?}", e.dialogue);
        assert_eq!(
            *part_of.entry(e.case.clone()).or_insert(parts[0]),
            parts[0],
            "{}",
            e.case
        );
    }
    assert_eq!(stats.written(), all.len());
    assert!(
        stats.parts.iter().all(|p| p.written > 0),
        "{:?}",
        stats.parts
    );
}

/// What the caps keep: in rank order, an example is kept while its route has fewer than
/// `per_route` and its scenario fewer than `per_scenario` kept; returned in file order, with
/// the numbers over each cap.
fn capped(all: &[Expected], per_scenario: usize, per_route: usize) -> (Vec<String>, usize, usize) {
    let mut order: Vec<&Expected> = all.iter().collect();
    order.sort_by_key(|e| (example::rank(7, example_hash(e, 0)), e.record, e.turn));
    let (mut routes, mut scenarios, mut seen) = (HashMap::new(), HashMap::new(), HashMap::new());
    let mut kept = Vec::new();
    let (mut over_route, mut over_scenario) = (0, 0);
    for e in order {
        let route = (e.scenario.clone(), e.route.clone());
        let before = seen.entry(route.clone()).or_insert(0);
        *before += 1;
        let r = routes.entry(route).or_insert(0);
        let s = scenarios.entry(e.scenario.clone()).or_insert(0);
        if *r < per_route && *s < per_scenario {
            *r += 1;
            *s += 1;
            kept.push(e);
        } else if *before > per_route {
            over_route += 1;
        } else {
            over_scenario += 1;
        }
    }
    kept.sort_by_key(|e| (e.record, e.turn));
    (
        kept.iter().map(|e| e.openai()).collect(),
        over_route,
        over_scenario,
    )
}

#[test]
fn caps_keep_the_lowest_ranked_examples_per_route_and_scenario() {
    let all = oracle(&read_records(&fixture()));
    for (per_scenario, per_route) in [(10, 0), (0, 4), (12, 5), (1, 1)] {
        let options = Options {
            max_per_scenario: nz(per_scenario),
            max_per_route: nz(per_route),
            ..every_scored()
        };
        let (stats, texts) = export_lib(&fixture(), &options);
        let big = usize::MAX;
        let (expected, over_route, over_scenario) = capped(
            &all,
            if per_scenario == 0 { big } else { per_scenario },
            if per_route == 0 { big } else { per_route },
        );
        assert_eq!(
            lines(&texts[0]),
            expected,
            "caps {per_scenario}/{per_route}"
        );
        assert_eq!(
            (stats.over_route_cap, stats.over_scenario_cap),
            (over_route, over_scenario),
            "caps {per_scenario}/{per_route}"
        );
        assert!(stats.over_route_cap + stats.over_scenario_cap > 0);
        assert_eq!(stats.written() + over_route + over_scenario, all.len());
    }
}

/// A copy of the fixture run with the lines of dialogues.jsonl in another order.
fn shuffled(tmp: &Path, salt: u64) -> PathBuf {
    let dir = tmp.join(format!("shuffled-{salt}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(fixture().join("manifest.json"), dir.join("manifest.json")).unwrap();
    let text = std::fs::read_to_string(fixture().join("dialogues.jsonl")).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_by_key(|l| derive_seed((salt, *l)));
    std::fs::write(dir.join("dialogues.jsonl"), lines.join("\n") + "\n").unwrap();
    dir
}

/// An output as a sorted list of examples (a ShareGPT array's elements; other formats' lines).
fn sorted_examples(format: Format, text: &str) -> Vec<String> {
    let mut out: Vec<String> = if format == Format::Sharegpt {
        let v: Vec<Value> = serde_json::from_str(text).unwrap();
        v.iter().map(Value::to_string).collect()
    } else {
        lines(text)
    };
    out.sort();
    out
}

#[test]
fn the_order_of_the_records_changes_nothing_but_the_order_of_the_examples() {
    let tmp = tempfile::tempdir().unwrap();
    let others = [shuffled(tmp.path(), 1), shuffled(tmp.path(), 2)];
    let split = vec![example::Split {
        name: "validation".into(),
        fraction: 0.3,
    }];
    let option_sets = vec![
        Options::default(),
        Options {
            format: Format::Sharegpt,
            min_logic: 80.0,
            ..Options::default()
        },
        Options {
            format: Format::SharegptJsonl,
            dedup: true,
            splits: split.clone(),
            ..Options::default()
        },
        Options {
            dedup: true,
            splits: split.clone(),
            max_per_scenario: nz(9),
            max_per_route: nz(4),
            ..Options::default()
        },
        Options {
            max_per_scenario: nz(5),
            ..Options::default()
        },
        Options {
            format: Format::Dpo,
            splits: split.clone(),
            ..Options::default()
        },
        Options {
            format: Format::DpoTrl,
            dedup: true,
            max_per_scenario: nz(1),
            max_rejected_logic: 70.0,
            ..Options::default()
        },
    ];
    for options in option_sets {
        let (stats, texts) = export_lib(&fixture(), &options);
        assert!(stats.written() > 0, "{options:?}");
        for other in &others {
            let (other_stats, other_texts) = export_lib(other, &options);
            let counts = |s: &ExportStats| {
                (
                    s.parts.iter().map(|p| p.written).collect::<Vec<_>>(),
                    s.duplicates,
                    s.over_route_cap,
                    s.over_scenario_cap,
                    s.dpo,
                )
            };
            assert_eq!(counts(&stats), counts(&other_stats), "{options:?}");
            for (a, b) in texts.iter().zip(&other_texts) {
                if options.format.pairs() {
                    // Pairs come in the order of their context's hash: the same bytes.
                    assert!(a == b, "{options:?}");
                } else {
                    assert_eq!(
                        sorted_examples(options.format, a),
                        sorted_examples(options.format, b),
                        "{options:?}"
                    );
                }
            }
        }
    }
}

/// A scored answer, as the oracle sees it: one side of a preference pair when chosen or
/// rejected, neither otherwise.
struct Side {
    record: usize,
    model: String,
    repeat: u32,
    /// Logic in hundredths, rounded down.
    logic: u64,
    chosen: bool,
    rejected: bool,
    answer: String,
}

/// A context: case, turn number, the messages the agent saw.
type Context = (String, u32, Vec<(&'static str, String)>);

/// Every scored answer of `records` by context (`below`: the rejection threshold).
fn oracle_contexts(records: &[DialogueRecord], below: f64) -> BTreeMap<Context, Vec<Side>> {
    let sops = sops();
    let mut groups: BTreeMap<Context, Vec<Side>> = BTreeMap::new();
    for (i, r) in records.iter().enumerate() {
        let mut context = vec![("system", system_prompt(&sops, r))];
        let case = r
            .job
            .dialogue_id
            .rsplitn(3, '/')
            .nth(2)
            .unwrap()
            .to_string();
        for turn in &r.turns {
            if turn.user_message.is_empty() {
                continue;
            }
            context.push(("user", turn.user_message.clone()));
            let (seen, answer, valid) = match (&turn.outcome, &turn.raw_output) {
                (ServiceOutcome::Valid { turn: v }, Some(raw)) => {
                    (Some(v.chat.clone()), Some(raw.clone()), true)
                }
                (ServiceOutcome::FormatError { chat, .. }, raw) => {
                    (Some(chat.clone()), raw.clone(), false)
                }
                _ => (None, None, false),
            };
            if let (Some(answer), Some(s)) = (answer, turn.scores) {
                let chosen = valid && s.logic >= 100.0;
                groups
                    .entry((case.clone(), turn.turn, context.clone()))
                    .or_default()
                    .push(Side {
                        record: i,
                        model: r.job.service_model.clone(),
                        repeat: r.job.repeat,
                        logic: (s.logic * 100.0).floor() as u64,
                        chosen,
                        rejected: !chosen && s.logic < below,
                        answer,
                    });
            }
            if let Some(seen) = seen {
                context.push(("assistant", seen));
            }
        }
    }
    groups
}

/// Every pair the documentation promises: per (case, turn, context), the rejected answer with
/// the lowest Logic (below `below`), then the chosen one (Logic 100) of another model; ties by
/// model name, then repeat. As OpenAI preference lines, sorted.
fn oracle_pairs(records: &[DialogueRecord], below: f64) -> Vec<Value> {
    let mut out = Vec::new();
    for ((_, _, context), sides) in oracle_contexts(records, below) {
        let mut rejected: Vec<&Side> = sides.iter().filter(|s| s.rejected).collect();
        let mut chosen: Vec<&Side> = sides.iter().filter(|s| s.chosen).collect();
        rejected.sort_by_key(|s| (s.logic, s.model.clone(), s.repeat, s.record));
        chosen.sort_by_key(|s| (s.model.clone(), s.repeat, s.record));
        let pair = rejected
            .iter()
            .find_map(|r| chosen.iter().find(|c| c.model != r.model).map(|c| (c, r)));
        if let Some((c, r)) = pair {
            let messages: Vec<Value> = context
                .iter()
                .map(|(role, content)| json!({"role": role, "content": content}))
                .collect();
            out.push(json!({
                "input": {"messages": messages},
                "preferred_output": [{"role": "assistant", "content": c.answer}],
                "non_preferred_output": [{"role": "assistant", "content": r.answer}],
            }));
        }
    }
    out.sort_by_key(Value::to_string);
    out
}

/// The contexts of `records` and why those without a pair have none, as docs/cli.md says:
/// `[contexts, paired, answered by one model only, no answer of Logic 100, none below `below`,
/// chosen and rejected all one model's]`.
fn oracle_yield(records: &[DialogueRecord], below: f64) -> [usize; 6] {
    let mut counts = [0; 6];
    for sides in oracle_contexts(records, below).values() {
        counts[0] += 1;
        let models: BTreeSet<&str> = sides.iter().map(|s| s.model.as_str()).collect();
        let paired = sides
            .iter()
            .filter(|r| r.rejected)
            .any(|r| sides.iter().any(|c| c.chosen && c.model != r.model));
        let why = if paired {
            1
        } else if models.len() == 1 {
            2
        } else if !sides.iter().any(|s| s.chosen) {
            3
        } else if !sides.iter().any(|s| s.rejected) {
            4
        } else {
            5
        };
        counts[why] += 1;
    }
    counts
}

fn values(text: &str) -> Vec<Value> {
    let mut v: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    v.sort_by_key(Value::to_string);
    v
}

#[test]
fn dpo_pairs_are_the_documented_pairs_in_both_shapes() {
    let records = read_records(&fixture());
    for below in [50.0, 70.0] {
        let expected = oracle_pairs(&records, below);
        assert!(!expected.is_empty(), "the fixture has pairs below {below}");
        let options = Options {
            format: Format::Dpo,
            max_rejected_logic: below,
            ..Options::default()
        };
        let (stats, texts) = export_lib(&fixture(), &options);
        assert_eq!(values(&texts[0]), expected, "below {below}");
        let d = stats.dpo.unwrap();
        assert_eq!(d.paired, expected.len());
        assert_eq!(d.mismatched, 0);
        // Every context where models answered is counted, with why it has no pair.
        let counted = [
            d.contexts,
            d.paired,
            d.one_model,
            d.no_chosen,
            d.no_rejected,
            d.same_model,
        ];
        assert_eq!(counted, oracle_yield(&records, below), "below {below}");
        assert_eq!(counted[0], counted[1..].iter().sum::<usize>());
        assert!(d.one_model > 0 && d.no_chosen > 0, "{d:?}");
        assert_eq!(
            stats.turns,
            stats.left.total() + d.chosen + d.rejected + d.neither,
            "{stats:?}"
        );
        // TRL's shape holds the same pairs.
        let (_, trl) = export_lib(
            &fixture(),
            &Options {
                format: Format::DpoTrl,
                ..options.clone()
            },
        );
        let as_openai: Vec<Value> = values(&trl[0])
            .into_iter()
            .map(|v| {
                json!({
                    "input": {"messages": v["prompt"]},
                    "preferred_output": v["chosen"],
                    "non_preferred_output": v["rejected"],
                })
            })
            .collect();
        let mut as_openai = as_openai;
        as_openai.sort_by_key(Value::to_string);
        assert_eq!(as_openai, expected);
        // Candidates spilled to temporary files in chunks of 3 give the same bytes.
        let (spilled, spilled_texts) = export_lib(
            &fixture(),
            &Options {
                dpo_chunk: 3,
                ..options.clone()
            },
        );
        assert!(spilled.dpo.unwrap().spilled > 10);
        assert!(spilled_texts == texts);
    }
}

#[test]
fn a_planted_pair_is_found_across_the_file() {
    // Two records of one case by two models, far apart in the file: the first turn of each
    // gets the same new customer line; one answers it with Logic 100, the other with 12.5.
    let text = std::fs::read_to_string(fixture().join("dialogues.jsonl")).unwrap();
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let id = |v: &Value| v["job"]["dialogue_id"].as_str().unwrap().to_string();
    let chosen = lines
        .iter()
        .position(|v| id(v) == "telecom_package/0001/sim-weak/r1")
        .unwrap();
    let rejected = lines
        .iter()
        .position(|v| id(v) == "telecom_package/0001/sim-strong/r0")
        .unwrap();
    let line = "PLANTED: I want to cancel my package today.";
    for (i, logic, answer) in [
        (chosen, 100.0, "{\"planted\": \"chosen\"}"),
        (rejected, 12.5, "{\"planted\": \"rejected\"}"),
    ] {
        let name = id(&lines[i]);
        let turn = &mut lines[i]["turns"][0];
        assert_eq!(turn["outcome"]["kind"], "valid", "{name}");
        turn["user_message"] = json!(line);
        turn["raw_output"] = json!(answer);
        turn["scores"]["logic"] = json!(logic);
    }
    // Far apart: the chosen one first, the rejected one last.
    let (c, r) = (lines[chosen].clone(), lines[rejected].clone());
    lines.retain(|v| id(v) != id(&c) && id(v) != id(&r));
    lines.insert(0, c.clone());
    lines.push(r);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("planted");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(fixture().join("manifest.json"), dir.join("manifest.json")).unwrap();
    let text: String = lines.iter().map(|v| v.to_string() + "\n").collect();
    std::fs::write(dir.join("dialogues.jsonl"), text).unwrap();

    let record: DialogueRecord = serde_json::from_value(c).unwrap();
    let system = system_prompt(&sops(), &record);
    let (stats, texts) = export_lib(
        &dir,
        &Options {
            format: Format::DpoTrl,
            ..Options::default()
        },
    );
    let planted = json!({
        "prompt": [
            {"role": "system", "content": system},
            {"role": "user", "content": line},
        ],
        "chosen": [{"role": "assistant", "content": "{\"planted\": \"chosen\"}"}],
        "rejected": [{"role": "assistant", "content": "{\"planted\": \"rejected\"}"}],
    });
    let found = values(&texts[0]);
    // The pair as TRL reads it, and beside it what a person audits it with.
    let trl = |v: &Value| json!({"prompt": v["prompt"], "chosen": v["chosen"], "rejected": v["rejected"]});
    let hits: Vec<&Value> = found.iter().filter(|v| trl(v) == planted).collect();
    assert_eq!(hits.len(), 1, "{found:#?}");
    assert_eq!(hits[0]["chosen_logic"], 100.0);
    assert_eq!(hits[0]["rejected_logic"], 12.5);
    assert_eq!(
        hits[0]["chosen_dialogue"],
        "telecom_package/0001/sim-weak/r1"
    );
    assert_eq!(
        hits[0]["rejected_dialogue"],
        "telecom_package/0001/sim-strong/r0"
    );
    assert_eq!(hits[0]["turn"], 1);
    assert!(hits[0].get("parent").is_none(), "not a fork's pair");
    // Every pair of the planted file is a documented one.
    assert_eq!(found.len(), oracle_pairs(&read_records(&dir), 50.0).len());
    assert_eq!(stats.dpo.unwrap().mismatched, 0);
}

#[test]
fn the_command_line_names_the_files_and_counts_what_it_left_out() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("train.jsonl");
    let run = fixture_run();
    let o = common::sage(&[
        "export",
        &run,
        "--format",
        "openai",
        "--min-logic",
        "60",
        "--dedup",
        "--split",
        "validation=0.3",
        "--max-per-route",
        "6",
        "--model",
        "sim-strong",
        "--model",
        "sim-weak",
        "--out",
        &out.display().to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let held = tmp.path().join("train.validation.jsonl");
    let (train, validation) = (
        std::fs::read_to_string(&out).unwrap(),
        std::fs::read_to_string(&held).unwrap(),
    );
    let (stats, texts) = export_lib(
        &fixture(),
        &Options {
            min_logic: 60.0,
            dedup: true,
            splits: vec![example::Split {
                name: "validation".into(),
                fraction: 0.3,
            }],
            max_per_route: nz(6),
            filter: example::Filter {
                models: vec!["sim-strong".into(), "sim-weak".into()],
                ..Default::default()
            },
            ..Options::default()
        },
    );
    assert_eq!([train, validation], [texts[0].clone(), texts[1].clone()]);
    let err = stderr(&o);
    for expected in [
        format!(
            "{} examples: {} train in {}, {} validation in {}",
            stats.written(),
            stats.parts[0].written,
            out.display(),
            stats.parts[1].written,
            held.display()
        ),
        "kept: turns with Logic 60 or more (--min-logic 60): answers below 100 are partly wrong"
            .to_string(),
        format!(
            "72 dialogues, 288 agent turns; left out: 0 not judged (judge_turns: every turn), {} format errors, 0 infrastructure errors, {} below --min-logic 60, {} by --model, {} duplicate turns (--dedup), {} turns over --max-per-route 6",
            stats.left.format_errors,
            stats.left.below_min_logic,
            stats.filtered.model,
            stats.duplicates,
            stats.over_route_cap
        ),
    ] {
        assert!(err.contains(&expected), "{expected}\nnot in\n{err}");
    }
    assert!(stats.filtered.model == 96 && stats.duplicates > 0 && stats.over_route_cap > 0);

    // Pairs to standard output, with their own counts.
    let o = common::sage(&[
        "export",
        &run,
        "--format",
        "dpo-trl",
        "--max-rejected-logic",
        "70",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let d = export_lib(
        &fixture(),
        &Options {
            format: Format::DpoTrl,
            max_rejected_logic: 70.0,
            ..Options::default()
        },
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout), d.1[0]);
    let dpo = d.0.dpo.unwrap();
    let [
        contexts,
        paired,
        one_model,
        no_chosen,
        no_rejected,
        same_model,
    ] = oracle_yield(&read_records(&fixture()), 70.0);
    for line in [
        format!(
            "\n{} agent turns can be chosen (logic 100), {} rejected (below --max-rejected-logic 70), {} neither\n",
            dpo.chosen, dpo.rejected, dpo.neither
        ),
        format!(
            "\nyield: {paired} of {contexts} contexts had a pair (a context: a case at a turn, the dialogue before it the same, with scored answers); without one: {one_model} answered by one model only (the models' dialogues of the case went apart before that turn, or ended), {no_chosen} with no answer of logic 100, {no_rejected} with none below --max-rejected-logic 70, {same_model} whose chosen and rejected answers are all one model's\n"
        ),
    ] {
        assert!(stderr(&o).contains(&line), "{line}\nnot in\n{}", stderr(&o));
    }
    assert!(stderr(&o).starts_with(&format!("{} preference pairs\n", d.0.written())));
}

#[test]
fn bad_flag_values_are_refused_naming_the_flag() {
    let run = fixture_run();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("x.jsonl").display().to_string();
    let own = data("fixture-run/dialogues.jsonl").display().to_string();
    let before = std::fs::read(&own).unwrap();
    // (arguments, exit code, message)
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (
            vec!["--split", "validation=1.5", "--out", &out],
            2,
            "`validation=1.5`: expected a fraction strictly between 0 and 1 after `=`",
        ),
        (
            vec!["--split", "validation=0", "--out", &out],
            2,
            "expected a fraction strictly between 0 and 1",
        ),
        (
            vec!["--split", "validation", "--out", &out],
            2,
            "`validation`: expected NAME=FRACTION, e.g. validation=0.1",
        ),
        (
            vec!["--split", "a=0.6", "--split", "b=0.5", "--out", &out],
            1,
            "--split: the fractions add up to 1.1; expected less than 1",
        ),
        (
            vec!["--split", "train=0.2", "--out", &out],
            1,
            "--split: `train`: expected a part name",
        ),
        (
            vec!["--split", "validation=0.2"],
            1,
            "--split: writes one file per part; expected --out FILE",
        ),
        (
            vec!["--max-per-scenario", "0"],
            2,
            "`0`: expected a number of examples, at least 1",
        ),
        (
            vec!["--max-per-route", "many"],
            2,
            "`many`: expected a number of examples, at least 1",
        ),
        (
            vec!["--scenario", "nope"],
            1,
            "--scenario: `nope` is not a scenario of this run; expected one of airline_refund, ecommerce_refund, logistics_delivery, online_education, property_service, telecom_package",
        ),
        (
            vec!["--model", "gpt-9"],
            1,
            "--model: `gpt-9` is not a model under test in this run; expected one of sim-strong, sim-balanced, sim-weak",
        ),
        (
            vec![
                "--scenario",
                "telecom_package",
                "--route",
                "step1 -> Nowhere",
            ],
            1,
            "--route: `step1 -> Nowhere` is not a route of scenario telecom_package; expected a route as summary.json's `coverage` writes it",
        ),
        (
            vec!["--adversarial", "extreme"],
            2,
            "invalid value 'extreme' for '--adversarial <LEVEL>'",
        ),
        (
            vec!["--max-rejected-logic", "20"],
            1,
            "--max-rejected-logic: applies to --format dpo and dpo-trl only",
        ),
        (
            vec!["--out", &own],
            1,
            "is a file of the run being exported; expected another file",
        ),
    ];
    for (args, code, message) in cases {
        let mut all = vec!["export", run.as_str(), "--format", "openai"];
        all.extend(args.iter());
        let o = common::sage(&all);
        assert_eq!(o.status.code(), Some(code), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(message), "{args:?}: {}", stderr(&o));
    }
    let o = common::sage(&["export", &run, "--format", "dpo", "--min-logic", "90"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--min-logic: applies to the example formats"));
    assert!(
        std::fs::read(&own).unwrap() == before,
        "the records are intact"
    );
    assert!(!tmp.path().join("x.jsonl").exists(), "nothing written");
    // A folder without records: nothing to read again, and an error saying so.
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::copy(fixture().join("manifest.json"), empty.join("manifest.json")).unwrap();
    for format in ["dpo", "openai"] {
        let empty = empty.display().to_string();
        let o = common::sage(&["export", &empty, "--format", format, "--max-per-route", "3"]);
        assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("no dialogues to export"),
            "{}",
            stderr(&o)
        );
    }
}

/// A run judged as the paper judges (turns 1, 5 and the final one of at most 8), one judge that
/// sometimes answers nothing usable (so some judged turns are not scored: an infrastructure
/// error), and a weak agent (format errors): every reason to leave a turn out happens.
fn paper_judged_run(dir: &Path) -> PathBuf {
    let config = dir.join("run.yaml");
    std::fs::write(
        &config,
        "models:
  - {name: sim-strong, provider: simulated, sim: {kind: agent, profile: strong}}
  - {name: sim-weak, provider: simulated, sim: {kind: agent, profile: weak}}
  - {name: user, provider: simulated, sim: {kind: user}}
  - {name: judge, provider: simulated, sim: {kind: judge, garbage_rate: 0.2}}
service_models: [sim-strong, sim-weak]
user_model: user
judge_models: [judge]
content_attempts: 1
scenarios: [bundled]
dialogues_per_scenario: 2
min_per_route: 0
max_turns: 8
seed: 11
",
    )
    .unwrap();
    let out = dir.join("out").display().to_string();
    let config = config.display().to_string();
    common::sage_ok(&[
        "run", "--config", &config, "--out", &out, "--run-id", "paper", "--quiet",
    ]);
    dir.join("out/paper")
}

/// Why the documentation says an agent turn is left out of the example formats, or `None` when
/// it is exported at `min_logic` (an oracle of the records, apart from the library's code).
fn example_reason(turn: &sage::protocol::TurnRecord, min_logic: f64) -> Option<&'static str> {
    let infra = turn.user_message.is_empty()
        || turn.infra_error.is_some()
        || matches!(turn.outcome, ServiceOutcome::InfraError { .. });
    match (&turn.outcome, turn.scores) {
        (ServiceOutcome::FormatError { .. }, _) => Some("format errors"),
        _ if infra => Some("infrastructure errors"),
        _ if turn.judges.is_none() => Some("not judged"),
        (_, None) => Some("infrastructure errors"),
        (_, Some(s)) if s.logic < min_logic => Some("below --min-logic"),
        _ => None,
    }
}

#[test]
fn by_default_only_fully_correct_turns_are_kept_and_each_reason_is_counted_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let run = paper_judged_run(tmp.path());
    let records = read_records(&run);
    let run_s = run.display().to_string();
    let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
    for t in records.iter().flat_map(|r| &r.turns) {
        *reasons
            .entry(example_reason(t, 100.0).unwrap_or("written"))
            .or_default() += 1;
    }
    for reason in [
        "not judged",
        "format errors",
        "infrastructure errors",
        "below --min-logic",
        "written",
    ] {
        assert!(reasons.get(reason).copied().unwrap_or(0) > 0, "{reasons:?}");
    }
    let o = common::sage(&["export", &run_s, "--format", "openai"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // Exactly the turns whose Logic is 100, in file order.
    let expected: Vec<String> = oracle(&records)
        .iter()
        .filter(|e| e.logic >= 100.0 - 1e-9)
        .map(Expected::openai)
        .collect();
    let got = lines(&String::from_utf8_lossy(&o.stdout));
    assert!(
        got == expected,
        "{} examples written; expected the {} with Logic 100",
        got.len(),
        expected.len()
    );
    assert_eq!(expected.len(), reasons["written"]);
    let err = stderr(&o);
    let turns: usize = records.iter().map(|r| r.turns.len()).sum();
    for line in [
        format!("{} examples\n", expected.len()),
        "kept: turns with Logic 100 (fully correct: classification, SOP path and action all match the reference); --min-logic N keeps answers down to Logic N\n".to_string(),
        format!(
            "{} dialogues, {turns} agent turns; left out: {} not judged (judge_turns: paper: turns 1, 5, 10, 15 and each dialogue's final turn), {} format errors, {} infrastructure errors, {} below --min-logic 100\n",
            records.len(),
            reasons["not judged"],
            reasons["format errors"],
            reasons["infrastructure errors"],
            reasons["below --min-logic"],
        ),
    ] {
        assert!(err.contains(&line), "{line}not in\n{err}");
    }

    // The preference formats leave out the turns without scores, for either reason; a format
    // error with scores may be rejected.
    let (mut not_judged, mut infra) = (0, 0);
    for t in records.iter().flat_map(|r| &r.turns) {
        match example_reason(t, 0.0) {
            Some("infrastructure errors") => infra += 1,
            Some("not judged") => not_judged += 1,
            Some("format errors") if t.scores.is_none() => {
                if t.judges.is_none() {
                    not_judged += 1
                } else {
                    infra += 1
                }
            }
            _ => {}
        }
    }
    let o = common::sage(&["export", &run_s, "--format", "dpo"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let line = format!(
        "left out: {not_judged} not judged (judge_turns: paper: turns 1, 5, 10, 15 and each dialogue's final turn), {infra} infrastructure errors\n"
    );
    assert!(stderr(&o).contains(&line), "{line}not in\n{}", stderr(&o));
}
