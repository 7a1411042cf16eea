//! Tests of the retail domain against the shipped data and against tau2's own answers
//! (`golden.json`, made by `scenarios/tau2-retail/golden.py` with tau2's Python code).

use super::*;
use serde_json::{Value, json};
use std::sync::OnceLock;

const DB_JSON: &str = include_str!("../../../../scenarios/tau2-retail/db.json");
const TASKS_JSON: &str = include_str!("../../../../scenarios/tau2-retail/tasks.json");
const POLICY_MD: &str = include_str!("../../../../scenarios/tau2-retail/policy.md");
const GOLDEN: &str = include_str!("golden.json");

fn fresh() -> &'static Db {
    static DB: OnceLock<Db> = OnceLock::new();
    DB.get_or_init(|| Db::from_json(DB_JSON, "db.json").expect("the shipped db.json loads"))
}

fn all_tasks() -> &'static [Task] {
    static TASKS: OnceLock<Vec<Task>> = OnceLock::new();
    TASKS.get_or_init(|| parse_tasks(TASKS_JSON, "tasks.json").expect("tasks.json loads"))
}

fn golden() -> &'static Value {
    static G: OnceLock<Value> = OnceLock::new();
    G.get_or_init(|| serde_json::from_str(GOLDEN).expect("golden.json parses"))
}

/// SHA-256 (FIPS 180-4), for comparing database hashes with tau2's `get_db_hash`.
fn sha256_hex(data: &[u8]) -> String {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let bits = (data.len() as u64).wrapping_mul(8);
    let full = data.len() / 64 * 64;
    let mut tail = data[full..].to_vec();
    tail.push(0x80);
    while tail.len() % 64 != 56 {
        tail.push(0);
    }
    tail.extend_from_slice(&bits.to_be_bytes());
    let mut w = [0u32; 64];
    for block in data[..full].chunks_exact(64).chain(tail.chunks_exact(64)) {
        for i in 0..16 {
            w[i] = u32::from_be_bytes([
                block[4 * i],
                block[4 * i + 1],
                block[4 * i + 2],
                block[4 * i + 3],
            ]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = hh
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            hh = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (x, y) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
            *x = x.wrapping_add(y);
        }
    }
    h.iter().map(|x| format!("{x:08x}")).collect()
}

fn db_sha(db: &Db) -> String {
    sha256_hex(db.canonical_json().as_bytes())
}

/// Content equality as tau2's replay compares it: as JSON values when both parse (`25 ==
/// 25.0`), else as strings.
fn same_content(got: &str, want: &str) -> bool {
    match (
        serde_json::from_str::<Value>(got),
        serde_json::from_str::<Value>(want),
    ) {
        (Ok(a), Ok(b)) => py::eq(&a, &b),
        _ => got == want,
    }
}

#[test]
fn tau2_sha256_is_sha256() {
    assert_eq!(
        sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(
        sha256_hex(b""),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
}

#[test]
fn tau2_shipped_data_loads() {
    let db = fresh();
    assert_eq!(db.products.len(), 50);
    assert_eq!(db.users.len(), 500);
    assert_eq!(db.orders.len(), 1000);
    let variants: usize = db.products.values().map(|p| p.variants.len()).sum();
    assert_eq!(variants, 591);
    assert!(POLICY_MD.starts_with("# Retail agent policy"));
    // The database hashes as tau2 hashes it.
    assert_eq!(db_sha(db), golden()["initial_db_sha256"].as_str().unwrap());
}

#[test]
fn tau2_114_tasks_load() {
    let tasks = all_tasks();
    assert_eq!(tasks.len(), 114);
    assert_eq!(tasks[0].id, "0");
    let t0 = &tasks[0];
    assert!(t0.user_scenario.reason_for_call().contains("#W2378156"));
    assert_eq!(
        t0.user_scenario.known_info(),
        Some("You are Yusuf Rossi in zip code 19122.")
    );
    assert_eq!(
        t0.user_scenario.unknown_info(),
        Some("You do not remember your email address.")
    );
    assert!(t0.user_scenario.task_instructions().is_some());
    assert_eq!(t0.user_scenario.persona, None);
    assert_eq!(t0.gold_actions().len(), 5);
    assert_eq!(t0.gold_actions()[4].name, "exchange_delivered_order_items");
    assert_eq!(
        t0.reward_basis(),
        [RewardPart::Db, RewardPart::NlAssertion].as_slice()
    );
    let actions: usize = tasks.iter().map(|t| t.gold_actions().len()).sum();
    assert_eq!(actions, 550);
    let db_only = tasks
        .iter()
        .filter(|t| t.reward_basis() == [RewardPart::Db])
        .count();
    assert_eq!(db_only, 2);
    let with_nl = tasks
        .iter()
        .filter(|t| !t.nl_assertions().is_empty())
        .count();
    assert_eq!(with_nl, 40);
    let with_comm = tasks
        .iter()
        .filter(|t| !t.communicate_info().is_empty())
        .count();
    assert_eq!(with_comm, 36);
    let compare_args = tasks
        .iter()
        .flat_map(|t| t.gold_actions())
        .filter(|a| a.compare_args.is_some())
        .count();
    assert_eq!(compare_args, 4);
    assert!(
        t0.user_scenario
            .to_prompt_text()
            .starts_with("Instructions:\n\tDomain: retail\n")
    );
}

#[test]
fn tau2_sixteen_tools_as_tau2_exposes_them() {
    assert_eq!(TOOLS.len(), 16);
    let g = golden();
    let want = g["tools"].as_array().unwrap();
    assert_eq!(want.len(), 16);
    for (spec, w) in TOOLS.iter().zip(want) {
        assert_eq!(&spec.openai_schema(), w, "{}", spec.name);
        let text: Value = serde_json::from_str(&spec.openai_schema_json()).unwrap();
        assert_eq!(&text, w, "{}", spec.name);
    }
    let mutating: Vec<&str> = TOOLS.iter().filter(|t| t.mutates).map(|t| t.name).collect();
    let mut want_mut: Vec<&str> = g["mutating"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    want_mut.sort();
    let mut got = mutating.clone();
    got.sort();
    assert_eq!(got, want_mut);
    assert_eq!(mutating.len(), 7);
    assert!(
        TOOLS
            .iter()
            .all(|t| t.mutates == (t.kind == ToolKind::Write))
    );
}

#[test]
fn tau2_tools_answer_as_tau2_golden() {
    let g = golden();
    let cases = g["cases"].as_array().unwrap();
    assert!(cases.len() > 700, "{} cases", cases.len());
    let mut db = fresh().clone();
    let mut failures = Vec::new();
    let mut byte_diffs = 0;
    for (i, case) in cases.iter().enumerate() {
        let tool = case["tool"].as_str().unwrap();
        let out = call(&mut db, tool, &case["arguments"]);
        let want = case["content"].as_str().unwrap();
        let want_error = case["error"].as_bool().unwrap();
        if !same_content(&out.content, want) || out.error != want_error {
            failures.push(format!(
                "case {i}: {tool}({})\n  got  ({}): {}\n  want ({}): {}",
                case["arguments"]
                    .to_string()
                    .chars()
                    .take(200)
                    .collect::<String>(),
                out.error,
                out.content.chars().take(300).collect::<String>(),
                want_error,
                want.chars().take(300).collect::<String>(),
            ));
        } else if out.content != want {
            byte_diffs += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases differ from tau2:\n{}",
        failures.len(),
        cases.len(),
        failures
            .iter()
            .take(15)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    // Stronger than tau2's own comparison: the very bytes are equal.
    assert_eq!(byte_diffs, 0, "contents equal as JSON but not as text");
    // And so is the database after every case, by tau2's hash.
    assert_eq!(db_sha(&db), g["final_db_sha256"].as_str().unwrap());
}

#[test]
fn tau2_gold_actions_replay_as_tau2() {
    let g = golden();
    let want = g["gold"].as_array().unwrap();
    let tasks = all_tasks();
    assert_eq!(want.len(), tasks.len());
    // (task id, errors, hash of the database after the gold actions), hashed on two threads.
    let results: Vec<(String, usize, String)> = std::thread::scope(|s| {
        let half = tasks.len() / 2;
        let workers: Vec<_> = [&tasks[..half], &tasks[half..]]
            .into_iter()
            .map(|chunk| {
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|task| {
                            let (db, errors) = replay_gold(fresh(), task);
                            (task.id.clone(), errors, db_sha(&db))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let mut total_errors = 0;
    for ((id, errors, sha), w) in results.iter().zip(want) {
        assert_eq!(id, w["task"].as_str().unwrap());
        assert_eq!(*errors as u64, w["errors"].as_u64().unwrap(), "task {id}");
        assert_eq!(
            sha,
            w["db_sha256"].as_str().unwrap(),
            "task {id}: the database after the gold actions differs from tau2's"
        );
        total_errors += errors;
    }
    // tau2's gold actions include 18 calls that answer with an error (lookups of users,
    // products and orders that do not exist, and two refused exchanges); tau2 ignores them.
    assert_eq!(total_errors, 18);
}

#[test]
fn tau2_db_check_as_tau2_evaluator() {
    let g = golden();
    let checks = g["db_checks"].as_array().unwrap();
    assert!(!checks.is_empty());
    for c in checks {
        let task = all_tasks()
            .iter()
            .find(|t| t.id == c["task"].as_str().unwrap())
            .unwrap();
        let calls: Vec<AgentCall> = c["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                (
                    x["name"].as_str().unwrap().to_string(),
                    x["arguments"].clone(),
                )
            })
            .collect();
        let got = db_check(fresh(), task, &calls);
        assert_eq!(
            got.db_match,
            c["db_match"].as_bool().unwrap(),
            "task {} ({})",
            task.id,
            c["label"]
        );
    }
}

/// The gold actions as agent calls.
fn gold_calls(task: &Task) -> Vec<AgentCall> {
    task.gold_actions()
        .iter()
        .map(|a| (a.name.clone(), Value::Object(a.arguments.clone())))
        .collect()
}

#[test]
fn tau2_db_check_passes_gold_and_fails_a_planted_wrong_argument() {
    let mut planted_tasks = 0;
    for task in all_tasks().iter().take(40) {
        let calls = gold_calls(task);
        assert!(db_check(fresh(), task, &calls).db_match, "task {}", task.id);
        // Plant one wrong argument in the last mutating call that succeeds (an earlier one
        // may be undone by a later call).
        let mut db = fresh().clone();
        let mut last_ok = None;
        for (k, (name, args)) in calls.iter().enumerate() {
            if !call(&mut db, name, args).error && is_mutating(name) {
                last_ok = Some(k);
            }
        }
        let Some(k) = last_ok else {
            continue;
        };
        let mut planted = calls.clone();
        let args = planted[k].1.as_object_mut().unwrap();
        if let Some(Value::String(reason)) = args.get_mut("reason") {
            *reason = if reason == "no longer needed" {
                "ordered by mistake".into()
            } else {
                "no longer needed".into()
            };
        } else if let Some(Value::String(zip)) = args.get_mut("zip") {
            zip.push('9');
        } else if let Some(Value::String(pm)) = args.get_mut("payment_method_id") {
            pm.push('0');
        } else {
            continue;
        }
        assert!(
            !db_check(fresh(), task, &planted).db_match,
            "task {}: a wrong argument of {} went unnoticed",
            task.id,
            planted[k].0
        );
        // Without its mutating calls, the run fails the check too.
        let reads: Vec<AgentCall> = calls
            .iter()
            .filter(|(n, _)| !is_mutating(n))
            .cloned()
            .collect();
        assert!(
            !db_check(fresh(), task, &reads).db_match,
            "task {}",
            task.id
        );
        planted_tasks += 1;
    }
    assert!(planted_tasks >= 10, "only {planted_tasks} tasks planted");
}

#[test]
fn tau2_reward_follows_the_basis() {
    let tasks = all_tasks();
    let task = &tasks[0];
    let calls = gold_calls(task);
    let done = RewardInputs {
        completed: true,
        ..Default::default()
    };
    // Task 0: basis DB + NL_ASSERTION, and no NL assertions: the DB decides.
    let r = reward(fresh(), task, &calls, &done).unwrap();
    assert_eq!(r.reward, 1.0);
    assert_eq!(
        r.breakdown,
        vec![(RewardPart::Db, 1.0), (RewardPart::NlAssertion, 1.0)]
    );
    let r = reward(fresh(), task, &[], &done).unwrap();
    assert_eq!(r.reward, 0.0);
    assert_eq!(r.db_check.map(|c| c.db_match), Some(false));
    // A run that did not end normally gets 0.
    let r = reward(fresh(), task, &calls, &RewardInputs::default()).unwrap();
    assert_eq!(r.reward, 0.0);
    // A task with NL assertions needs the judge's verdict.
    let nl = tasks
        .iter()
        .find(|t| !t.nl_assertions().is_empty())
        .unwrap();
    let calls = gold_calls(nl);
    assert!(matches!(
        reward(fresh(), nl, &calls, &done),
        Err(RewardError::MissingInput {
            part: RewardPart::NlAssertion,
            ..
        })
    ));
    let judged = |met| RewardInputs {
        completed: true,
        nl_assertions_met: Some(met),
        communicate_met: None,
    };
    assert_eq!(
        reward(fresh(), nl, &calls, &judged(true)).unwrap().reward,
        1.0
    );
    assert_eq!(
        reward(fresh(), nl, &calls, &judged(false)).unwrap().reward,
        0.0
    );
    // COMMUNICATE is not in the retail bases, so its strings do not gate the reward...
    let comm = tasks
        .iter()
        .find(|t| !t.communicate_info().is_empty())
        .unwrap();
    let ok = RewardInputs {
        completed: true,
        nl_assertions_met: Some(true),
        communicate_met: None,
    };
    assert_eq!(
        reward(fresh(), comm, &gold_calls(comm), &ok)
            .unwrap()
            .reward,
        1.0
    );
    // ...but the check is there for a basis that holds it.
    let info = comm.communicate_info()[0].clone();
    assert!(
        communicate_met(comm, &[&format!("So, the total is {info}.")])
            || comm.communicate_info().len() > 1
    );
    assert!(!communicate_met(comm, &["nothing useful"]));
    // ACTION: every gold action called.
    assert!(actions_met(task, &gold_calls(task)));
    assert!(!actions_met(task, &gold_calls(task)[1..]));
}

#[test]
fn tau2_hostile_database_text_is_an_error() {
    let bad: &[(&str, &str)] = &[
        ("", "EOF"),
        ("{", "EOF"),
        ("[]", "expected struct RawDb"),
        (r#"{"products": {}, "users": {}}"#, "missing field `orders`"),
        (
            r#"{"products": {}, "users": {}, "orders": {}, "x": 1}"#,
            "unknown field `x`",
        ),
        (
            r#"{"products": {"1": {"name": "A", "product_id": "1", "variants": {"2": {"item_id": "2", "options": {}, "available": true, "price": "9"}}}}, "users": {}, "orders": {}}"#,
            "products['1'].variants['2'].price: invalid type: string \"9\", expected f64",
        ),
        (
            r#"{"products": {}, "users": {"u": {"user_id": "u"}}, "orders": {}}"#,
            "users['u']: missing field `name`",
        ),
        (
            r##"{"products": {}, "users": {}, "orders": {"#1": {"order_id": "#1", "user_id": "u", "address": {"address1": "", "address2": "", "city": "", "country": "", "state": "", "zip": ""}, "items": [], "status": "lost", "fulfillments": [], "payment_history": []}}}"##,
            "orders['#1'].status: unknown variant `lost`",
        ),
        (
            r#"{"products": {}, "users": {"u": {"user_id": "u", "name": {"first_name": "a", "last_name": "b"}, "address": {"address1": "", "address2": "", "city": "", "country": "", "state": "", "zip": ""}, "email": "e", "payment_methods": {"p": {"source": "cash", "id": "p"}}, "orders": []}}, "orders": {}}"#,
            "users['u'].payment_methods.p.source: unknown variant `cash`",
        ),
    ];
    let deep = format!(
        r#"{{"products": {{"1": {}{}}}, "users": {{}}, "orders": {{}}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    let bad: Vec<(&str, &str)> = bad
        .iter()
        .copied()
        .chain([(deep.as_str(), "products['1'][0]: invalid type: sequence")])
        .collect();
    for (text, expected) in bad {
        let err = Db::from_json(text, "db.json").unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("db.json: "), "{msg}");
        assert!(msg.contains(expected), "{text:.60}: {msg}");
    }
    // The position is the file's, not the record's.
    let text = "{\"products\": {},\n \"users\": {},\n \"orders\": {\"#1\": {\"order_id\": 5}}}";
    let err = Db::from_json(text, "db.json").unwrap_err();
    let crate::scenario::Problem::Syntax { line, .. } = &err.problems[0] else {
        panic!("{err}");
    };
    assert_eq!(*line, 3, "{err}");
}

#[test]
fn tau2_hostile_tasks_text_is_an_error() {
    for (text, expected) in [
        ("{}", "invalid type: map"),
        ("[{}]", "tasks[0]: missing field `id`"),
        (
            r#"[{"id": "7", "user_scenario": {"instructions": "x"}, "evaluation_criteria": {"actions": [{"action_id": "a", "name": "n", "arguments": []}]}}]"#,
            "tasks[0] (id '7').evaluation_criteria.actions[0].arguments: invalid type: sequence",
        ),
        (
            r#"[{"id": "1", "user_scenario": {"instructions": 5}}]"#,
            "tasks[0] (id '1')",
        ),
        (
            r#"[{"id": "1", "user_scenario": {"instructions": "x"}, "evaluation_criteria": {"reward_basis": ["GOLD"]}}]"#,
            "unknown variant `GOLD`",
        ),
        (
            r#"[{"id": "1", "user_scenario": {"instructions": "x"}}, {"id": "1", "user_scenario": {"instructions": "y"}}]"#,
            "duplicate id `1`",
        ),
        (
            r#"[{"id": "1", "user_scenario": {"instructions": "x"}, "initial_state": {"message_history": []}}]"#,
            "initial_state",
        ),
    ] {
        let err = parse_tasks(text, "tasks.json").unwrap_err();
        assert!(err.to_string().contains(expected), "{text}: {err}");
    }
    // A task without criteria: the default basis, and a passing check.
    let tasks = parse_tasks(
        r#"[{"id": "x", "user_scenario": {"instructions": "hi"}}]"#,
        "t",
    )
    .unwrap();
    assert!(db_check(fresh(), &tasks[0], &[]).db_match);
}

#[test]
fn tau2_hostile_tool_calls_never_panic() {
    let odd = [
        json!(null),
        json!(true),
        json!(0),
        json!(-1),
        json!(1.5e300),
        json!(""),
        json!("#W0000000"),
        json!("9999999999"),
        json!("(((("),
        json!([]),
        json!([null, [], {}]),
        json!(["", ""]),
        json!({}),
        json!({"a": [1, {"b": null}]}),
        json!("x".repeat(10_000)),
        json!("é😀\u{0}"),
    ];
    let mut db = fresh().clone();
    let order = db.orders.keys().next().unwrap().clone();
    for spec in TOOLS.iter() {
        for v in &odd {
            for p in 0..spec.parameters.len() {
                let mut args = serde_json::Map::new();
                for (j, name) in spec.parameters.iter().enumerate() {
                    let value = if j == p {
                        v.clone()
                    } else if *name == "order_id" {
                        json!(order)
                    } else {
                        json!("x")
                    };
                    args.insert((*name).to_string(), value);
                }
                let out = call(&mut db, spec.name, &Value::Object(args));
                assert!(!out.content.is_empty() || spec.name == "calculate");
            }
        }
        for v in &odd {
            if !v.is_object() {
                let out = call(&mut db, spec.name, v);
                assert!(out.error);
                assert!(out.content.starts_with("Error: "));
            }
        }
    }
}

#[test]
fn tau2_mutations_follow_python() {
    let mut db = fresh().clone();
    // A pending order paid by gift card: cancelling refunds the card at once, rounded.
    let (oid, order) = db
        .orders
        .iter()
        .find(|(_, o)| {
            o.status == db::OrderStatus::Pending
                && o.payment_history[0]
                    .payment_method_id
                    .starts_with("gift_card")
        })
        .map(|(k, o)| (k.clone(), o.clone()))
        .unwrap();
    let pm = order.payment_history[0].payment_method_id.clone();
    let balance = |db: &Db| match &db.users[&order.user_id].payment_methods[&pm] {
        db::PaymentMethod::GiftCard { balance, .. } => *balance,
        _ => unreachable!(),
    };
    let before = balance(&db);
    let out = call(
        &mut db,
        "cancel_pending_order",
        &json!({"order_id": oid, "reason": "no longer needed"}),
    );
    assert!(!out.error, "{}", out.content);
    assert_eq!(
        balance(&db),
        py::round2(before + order.payment_history[0].amount)
    );
    assert_eq!(db.orders[&oid].status, db::OrderStatus::Cancelled);
    assert_eq!(db.orders[&oid].payment_history.len(), 2);
    // Reading changes nothing.
    let snapshot = db.clone();
    for (name, args) in [
        ("get_order_details", json!({"order_id": oid})),
        ("list_all_product_types", json!({})),
        ("calculate", json!({"expression": "1+1"})),
        ("transfer_to_human_agents", json!({"summary": "s"})),
    ] {
        call(&mut db, name, &args);
    }
    assert!(db.same_state(&snapshot));
    assert_eq!(db, snapshot);
}

/// A record of `agent` on task `task`, graded `passed` (or stopped by an infrastructure error
/// when `None`).
fn scored(agent: &str, task: &str, passed: Option<bool>) -> crate::tau2::run::Tau2Record {
    use crate::tau2::run::{Tau2Job, Tau2Record, Tau2Reward, Termination};
    Tau2Record {
        job: Tau2Job {
            run_id: "r".into(),
            dialogue_id: format!("{task}/{agent}/r0"),
            task: task.into(),
            model: agent.into(),
            customer_model: "user".into(),
            judge_models: vec!["judge".into()],
            trial: 0,
            max_turns: 30,
            seed: 1,
        },
        messages: Vec::new(),
        termination: Termination::UserStop,
        reward: passed.map(|p| Tau2Reward {
            reward: if p { 1.0 } else { 0.0 },
            db_match: Some(p),
            nl_assertions: Vec::new(),
            breakdown: Default::default(),
        }),
        calls: Vec::new(),
        usage: Default::default(),
        cost_usd: 0.0,
        infra_error: passed.is_none().then(|| "down".into()),
    }
}

#[test]
fn tau2_ranks_by_pass1_then_by_name_and_an_ungraded_agent_last() {
    let mut fold = crate::tau2::run::Tau2Fold::default();
    // Seen in the order z, down, b, a: the ranking must not follow it.
    for record in [
        scored("z", "0", Some(true)),
        scored("down", "0", None),
        scored("b", "0", Some(false)),
        scored("a", "0", Some(true)),
    ] {
        fold.add(&record);
    }
    let order: Vec<String> = fold.summary().agents.into_iter().map(|a| a.agent).collect();
    assert_eq!(order, ["a", "z", "b", "down"]);
}
