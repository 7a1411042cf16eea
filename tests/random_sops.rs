//! Graph invariants on random SOPs: the symbolic validator and enumerator agree with a brute-force
//! oracle that tries every assignment (possible only because these SOPs are tiny).
//!
//! A random SOP has 1-4 keys (enum, boolean, integer 0..=5) and 1-6 stages that pass on, branch
//! on one key, or decide on two keys with rules; any target may be any stage (so loops,
//! unreachable stages and dead ends happen) or one of three actions.

use proptest::prelude::*;
use sage::scenario::{Problem, Value};
use sage::sop::{self, Values};
use std::collections::{BTreeSet, HashSet};
use std::fmt::Write;

#[derive(Debug, Clone)]
enum KeyT {
    Enum(usize),
    Bool,
    Int,
}

impl KeyT {
    fn size(&self) -> usize {
        match self {
            KeyT::Enum(n) => *n,
            KeyT::Bool => 2,
            KeyT::Int => 6,
        }
    }
    fn value(&self, i: usize) -> Value {
        match self {
            KeyT::Enum(_) => Value::Str(format!("o{i}")),
            KeyT::Bool => Value::Bool(i == 0),
            KeyT::Int => Value::Int(i as i64),
        }
    }
    fn yaml(&self, i: usize) -> String {
        match self {
            KeyT::Int => format!("\"== {i}\""),
            _ => match self.value(i) {
                Value::Str(s) => s,
                v => v.to_string(),
            },
        }
    }
}

/// Where a case leads: a stage index or an action index.
#[derive(Debug, Clone, Copy)]
enum To {
    Stage(usize),
    Action(usize),
}

/// A stage: pass on, or a list of (condition over key values, target) covering every value.
#[derive(Debug, Clone)]
enum StageT {
    Next(To),
    /// One case per value of the key.
    Branch(usize, Vec<To>),
    /// Key a, key b, and per value of a: either one target, or (subset of b, target, target).
    Rules(usize, usize, Vec<(To, Option<(usize, To)>)>),
}

#[derive(Debug, Clone)]
struct SopT {
    keys: Vec<KeyT>,
    stages: Vec<StageT>,
}

fn to_strategy(n_stages: usize) -> impl Strategy<Value = To> {
    prop_oneof![
        (0..n_stages).prop_map(To::Stage),
        (0..3usize).prop_map(To::Action)
    ]
}

fn sop_strategy() -> impl Strategy<Value = SopT> {
    let key = prop_oneof![
        (2..=3usize).prop_map(KeyT::Enum),
        Just(KeyT::Bool),
        Just(KeyT::Int)
    ];
    (proptest::collection::vec(key, 1..=4), 1..=6usize).prop_flat_map(|(keys, n)| {
        let nk = keys.len();
        let stage = prop_oneof![
            to_strategy(n).prop_map(StageT::Next),
            (0..nk, proptest::collection::vec(to_strategy(n), 6))
                .prop_map(|(k, v)| StageT::Branch(k, v)),
            (
                0..nk,
                0..nk,
                proptest::collection::vec(
                    (
                        to_strategy(n),
                        proptest::option::of((0..6usize, to_strategy(n)))
                    ),
                    6
                )
            )
                .prop_map(|(a, b, v)| StageT::Rules(a, b, v)),
        ];
        (Just(keys), proptest::collection::vec(stage, n))
            .prop_map(|(keys, stages)| SopT { keys, stages })
    })
}

fn target_yaml(t: To) -> String {
    match t {
        To::Stage(s) => format!("s{s}"),
        To::Action(a) => format!("{{action: a{a}}}"),
    }
}

impl SopT {
    /// Rules stages whose two keys coincide, or whose split value is out of range, are written
    /// as single-key rules.
    fn split(&self, a: usize, b: usize, split: Option<(usize, To)>) -> Option<(usize, To)> {
        split.filter(|(cut, _)| a != b && *cut > 0 && *cut < self.keys[b].size())
    }

    fn yaml(&self) -> String {
        let mut y = String::from("id: random\nname: r\ndomain: d\ndescription: d\nfields:\n");
        for (i, k) in self.keys.iter().enumerate() {
            let _ = match k {
                KeyT::Enum(n) => writeln!(
                    y,
                    "  k{i}: {{description: d, options: [{}]}}",
                    (0..*n)
                        .map(|j| format!("o{j}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                KeyT::Bool => writeln!(y, "  k{i}: {{description: d, type: boolean}}"),
                KeyT::Int => writeln!(
                    y,
                    "  k{i}: {{description: d, type: integer, min: 0, max: 5}}"
                ),
            };
        }
        y.push_str("actions:\n  a0: x\n  a1: y\n  a2: z\nsop:\n  start: s0\n  stages:\n");
        for (i, st) in self.stages.iter().enumerate() {
            let _ = writeln!(y, "    s{i}:\n      title: t");
            match st {
                StageT::Next(t) => {
                    let _ = writeln!(y, "      next: {}", target_yaml(*t));
                }
                StageT::Branch(k, tos) => {
                    let _ = writeln!(y, "      branch_on: k{k}\n      cases:");
                    // Integer branches use `else` for 4 and 5.
                    let explicit = if matches!(self.keys[*k], KeyT::Int) {
                        4
                    } else {
                        self.keys[*k].size()
                    };
                    for (v, to) in tos.iter().enumerate().take(explicit) {
                        let _ =
                            writeln!(y, "        {}: {}", self.keys[*k].yaml(v), target_yaml(*to));
                    }
                    if explicit < self.keys[*k].size() {
                        let _ = writeln!(y, "        else: {}", target_yaml(tos[explicit]));
                    }
                }
                StageT::Rules(a, b, per) => {
                    let _ = writeln!(y, "      rules:");
                    for (v, &(t, split)) in per.iter().enumerate().take(self.keys[*a].size()) {
                        let av = self.keys[*a].yaml(v);
                        let last = v + 1 == self.keys[*a].size();
                        match self.split(*a, *b, split) {
                            None if last => {
                                let _ = writeln!(y, "        - {{otherwise: {}}}", target_yaml(t));
                            }
                            None => {
                                let _ = writeln!(
                                    y,
                                    "        - {{when: {{k{a}: {av}}}, then: {}}}",
                                    target_yaml(t)
                                );
                            }
                            Some((cut, t2)) => {
                                let low: Vec<String> =
                                    (0..cut).map(|j| self.keys[*b].yaml(j)).collect();
                                let high: Vec<String> = (cut..self.keys[*b].size())
                                    .map(|j| self.keys[*b].yaml(j))
                                    .collect();
                                let _ = writeln!(
                                    y,
                                    "        - {{when: {{k{a}: {av}, k{b}: [{}]}}, then: {}}}",
                                    low.join(", "),
                                    target_yaml(t)
                                );
                                let _ = writeln!(
                                    y,
                                    "        - {{when: {{k{a}: {av}, k{b}: [{}]}}, then: {}}}",
                                    high.join(", "),
                                    target_yaml(t2)
                                );
                            }
                        }
                    }
                }
            }
        }
        y
    }

    fn step(&self, s: usize, x: &[usize]) -> To {
        match &self.stages[s] {
            StageT::Next(t) => *t,
            StageT::Branch(k, tos) if matches!(self.keys[*k], KeyT::Int) => tos[x[*k].min(4)],
            StageT::Branch(k, tos) => tos[x[*k]],
            StageT::Rules(a, b, per) => {
                let (t, split) = per[x[*a]];
                match self.split(*a, *b, split) {
                    Some((cut, t2)) if x[*b] >= cut => t2,
                    _ => t,
                }
            }
        }
    }

    fn edges(&self, s: usize) -> Vec<To> {
        match &self.stages[s] {
            StageT::Next(t) => vec![*t],
            StageT::Branch(k, tos) if matches!(self.keys[*k], KeyT::Int) => tos[..5].to_vec(),
            StageT::Branch(k, tos) => tos[..self.keys[*k].size()].to_vec(),
            StageT::Rules(a, b, per) => per[..self.keys[*a].size()]
                .iter()
                .flat_map(|(t, split)| {
                    let mut v = vec![*t];
                    if let Some((_, t2)) = self.split(*a, *b, *split) {
                        v.push(t2);
                    }
                    v
                })
                .collect(),
        }
    }

    fn assignments(&self) -> Vec<Vec<usize>> {
        let mut all = vec![vec![]];
        for k in &self.keys {
            all = all
                .into_iter()
                .flat_map(|p| (0..k.size()).map(move |v| [p.clone(), vec![v]].concat()))
                .collect();
        }
        all
    }
}

/// The brute-force outcome of one assignment: (path, action), or `Err` for a loop.
type RouteOutcome = Result<(Vec<String>, String), ()>;

/// What the oracle sees: structural problems, or else loops, unreachable stages and routes.
#[derive(Debug)]
struct Oracle {
    structural_unreachable: BTreeSet<String>,
    dead_ends: BTreeSet<String>,
    loops: bool,
    unreachable: BTreeSet<String>,
    routes: Vec<(Vec<usize>, RouteOutcome)>,
}

fn oracle(t: &SopT) -> Oracle {
    let n = t.stages.len();
    let mut reach = vec![false; n];
    let mut todo = vec![0];
    while let Some(s) = todo.pop() {
        if std::mem::replace(&mut reach[s], true) {
            continue;
        }
        todo.extend(
            t.edges(s)
                .into_iter()
                .filter_map(|e| if let To::Stage(x) = e { Some(x) } else { None }),
        );
    }
    let mut leads = vec![false; n];
    loop {
        let mut changed = false;
        for s in 0..n {
            if !leads[s]
                && t.edges(s).iter().any(|e| match e {
                    To::Action(_) => true,
                    To::Stage(x) => leads[*x],
                })
            {
                leads[s] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let structural_unreachable = (0..n)
        .filter(|s| !reach[*s])
        .map(|s| format!("s{s}"))
        .collect();
    let dead_ends = (0..n)
        .filter(|s| reach[*s] && !leads[*s])
        .map(|s| format!("s{s}"))
        .collect();
    let mut visited = vec![false; n];
    let mut loops = false;
    let mut routes = Vec::new();
    for x in t.assignments() {
        let mut path = vec![0usize];
        let result = loop {
            let s = *path.last().unwrap();
            visited[s] = true;
            match t.step(s, &x) {
                To::Action(a) => {
                    break Ok((
                        path.iter().map(|s| format!("s{s}")).collect(),
                        format!("a{a}"),
                    ));
                }
                To::Stage(nx) if path.contains(&nx) => break Err(()),
                To::Stage(nx) => path.push(nx),
            }
        };
        loops |= result.is_err();
        routes.push((x, result));
    }
    let unreachable = (0..n)
        .filter(|s| !visited[*s])
        .map(|s| format!("s{s}"))
        .collect();
    Oracle {
        structural_unreachable,
        dead_ends,
        loops,
        unreachable,
        routes,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn symbolic_validation_and_enumeration_agree_with_brute_force(t in sop_strategy()) {
        let yaml = t.yaml();
        let o = oracle(&t);
        match sop::from_yaml(&yaml, "random.yaml") {
            Err(e) => {
                let mut su = BTreeSet::new();
                let mut de = BTreeSet::new();
                let mut su2 = BTreeSet::new();
                let mut lp = false;
                for p in &e.problems {
                    match p {
                        Problem::Unreachable { stage, why, .. } if why.starts_with("no transition") => { su.insert(stage.clone()); }
                        Problem::Unreachable { stage, .. } => { su2.insert(stage.clone()); }
                        Problem::DeadEnd { stage } => { de.insert(stage.clone()); }
                        Problem::Loop { .. } => lp = true,
                        other => prop_assert!(false, "unexpected problem {other} in\n{yaml}"),
                    }
                }
                if !o.structural_unreachable.is_empty() || !o.dead_ends.is_empty() {
                    prop_assert_eq!(su, o.structural_unreachable, "{}", yaml);
                    prop_assert_eq!(de, o.dead_ends, "{}", yaml);
                } else if o.loops {
                    prop_assert!(lp, "oracle finds a loop, validator reports {e}\n{yaml}");
                } else {
                    prop_assert_eq!(su2, o.unreachable, "{}", yaml);
                }
            }
            Ok(sop) => {
                prop_assert!(o.structural_unreachable.is_empty() && o.dead_ends.is_empty() && !o.loops && o.unreachable.is_empty(), "validator accepts, oracle objects: {o:?}\n{yaml}");
                let mut want: HashSet<(Vec<String>, String)> = HashSet::new();
                for (x, r) in &o.routes {
                    let r = r.clone().unwrap();
                    let fields: Values = x.iter().enumerate().map(|(i, v)| (format!("k{i}"), t.keys[i].value(*v))).collect();
                    let got = sop.route(&fields, &Values::new()).unwrap();
                    prop_assert_eq!((&got.path, &got.action), (&r.0, &r.1), "{}", yaml);
                    want.insert(r);
                }
                let have: HashSet<(Vec<String>, String)> = sop.routes().iter().map(|rc| (rc.route.path.clone(), rc.route.action.clone())).collect();
                prop_assert_eq!(have.len(), sop.routes().len());
                prop_assert_eq!(have, want, "{}", yaml);
                for rc in sop.routes() {
                    let fields: Values = rc.fields.clone().into_iter().collect();
                    prop_assert_eq!(&sop.route(&fields, &Values::new()).unwrap(), &rc.route);
                }
            }
        }
    }
}
