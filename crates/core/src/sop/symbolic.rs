//! Symbolic search of the decision graph: enumeration of every route, inverse configuration,
//! loop detection and semantic reachability, without ever trying combinations of values.
//!
//! The search walks from the start carrying a [`ValueBox`] (per key, the values still possible).
//! A `When` edge intersects the box with its condition; an `Otherwise` edge keeps what no sibling
//! condition takes (box subtraction, possibly several disjoint boxes). An empty box is an
//! infeasible branch and is dropped. Reaching an action yields a route; reaching a stage already
//! on the current path with a non-empty box is a loop that every assignment in the box follows.

use super::{Assignment, MAX_SEARCH_LEAVES, Node, Route, Sop};
use crate::scenario::domain::{box_intersect, box_is_empty, box_subtract_all};
use crate::scenario::{Guard, Problem, Scope, ValueBox};
use serde::Serialize;
use std::collections::HashMap;

/// One route of the SOP with an assignment that produces it.
#[derive(Debug, Clone, Serialize)]
pub struct RouteCase {
    /// The path, action and outputs.
    #[serde(flatten)]
    pub route: Route,
    /// A complete assignment of every field producing the route (inverse configuration).
    pub fields: Assignment,
    /// A complete assignment of every variable producing the route.
    pub variables: Assignment,
    /// Every assignment producing the route, as disjoint boxes.
    #[serde(skip)]
    pub region: Vec<ValueBox>,
}

/// What the search found.
pub(super) struct SearchResult {
    pub routes: Vec<RouteCase>,
    pub problems: Vec<Problem>,
}

struct Search<'a> {
    sop: &'a Sop,
    /// Per stage: the boxes of its `When` edges, for `Otherwise` edges.
    when_boxes: Vec<Vec<ValueBox>>,
    path: Vec<usize>,
    on_path: Vec<bool>,
    sets: Vec<Option<String>>,
    visited: Vec<bool>,
    found: Vec<(Route, Vec<ValueBox>)>,
    index: HashMap<Route, usize>,
    problems: Vec<Problem>,
    leaves: usize,
}

pub(super) fn enumerate(sop: &Sop) -> SearchResult {
    let sc = sop.scenario();
    let full = sc.full_box();
    let when_boxes = (0..sc.stages.len())
        .map(|s| {
            sop.transitions(s)
                .filter_map(|(edge, _)| match &edge.guard {
                    Guard::When(conds) => {
                        let mut b = full.clone();
                        for (k, d) in conds {
                            b[*k] = b[*k].intersect(d);
                        }
                        Some(b)
                    }
                    _ => None,
                })
                .collect()
        })
        .collect();
    let mut search = Search {
        sop,
        when_boxes,
        path: Vec::new(),
        on_path: vec![false; sc.stages.len()],
        sets: vec![None; sc.outputs.len()],
        visited: vec![false; sc.stages.len()],
        found: Vec::new(),
        index: HashMap::new(),
        problems: Vec::new(),
        leaves: 0,
    };
    search.visit(sc.start, vec![full]);
    if search.leaves > MAX_SEARCH_LEAVES {
        search.problems.push(Problem::BadDeclaration {
            at: "sop".into(),
            found: format!("more than {MAX_SEARCH_LEAVES} distinct branches to explore"),
            expected: "a smaller SOP (split it into several scenarios)".into(),
        });
    }
    if search.problems.is_empty() {
        for (i, st) in sc.stages.iter().enumerate() {
            if !search.visited[i] {
                search.problems.push(Problem::Unreachable {
                    stage: st.id.clone(),
                    start: sc.stages[sc.start].id.clone(),
                    why: "no assignment of values leads to it",
                });
            }
        }
    }
    let routes = search
        .found
        .into_iter()
        .map(|(route, region)| {
            let (fields, variables) = representative(sop, &region[0]);
            RouteCase {
                route,
                fields,
                variables,
                region,
            }
        })
        .collect();
    SearchResult {
        routes,
        problems: search.problems,
    }
}

/// One complete assignment inside a box, split into fields and variables.
pub fn representative(sop: &Sop, b: &[crate::scenario::Domain]) -> (Assignment, Assignment) {
    let mut fields = Assignment::new();
    let mut variables = Assignment::new();
    for (k, d) in sop.scenario().keys.iter().zip(b) {
        let v = k.pick(d).expect("route boxes are never empty");
        match k.scope {
            Scope::Field => fields.insert(k.name.clone(), v),
            Scope::Variable => variables.insert(k.name.clone(), v),
        };
    }
    (fields, variables)
}

/// Adds a box to a region (a union of disjoint boxes), merging it into a box that differs from
/// it in one key only, so that parallel cases (`o0: next`, `o1: next`) do not multiply boxes.
fn push_merged(region: &mut Vec<ValueBox>, b: ValueBox) {
    for e in region.iter_mut() {
        let mut differ = e.iter().zip(&b).enumerate().filter(|(_, (x, y))| x != y);
        match (differ.next(), differ.next()) {
            (None, _) => return,
            (Some((i, _)), None) => {
                e[i] = e[i].union(&b[i]);
                return;
            }
            _ => {}
        }
    }
    region.push(b);
}

/// The branches leaving a stage: per distinct (target, outputs set), the labels of its cases and
/// the region of assignments that take it.
struct Branch {
    to: Node,
    set: Vec<(usize, String)>,
    labels: Vec<String>,
    region: Vec<ValueBox>,
}

impl Search<'_> {
    fn visit(&mut self, stage: usize, region: Vec<ValueBox>) {
        if self.leaves > MAX_SEARCH_LEAVES || self.problems.len() >= 20 {
            return;
        }
        self.visited[stage] = true;
        self.on_path[stage] = true;
        self.path.push(stage);
        let mut branches: Vec<Branch> = Vec::new();
        for (edge, to) in self.sop.transitions(stage) {
            let part: Vec<ValueBox> = match &edge.guard {
                Guard::Always => region.clone(),
                Guard::When(conds) => region
                    .iter()
                    .map(|b| {
                        let mut nb = b.clone();
                        for (k, d) in conds {
                            nb[*k] = nb[*k].intersect(d);
                        }
                        nb
                    })
                    .filter(|nb| !box_is_empty(nb))
                    .collect(),
                Guard::Otherwise => region
                    .iter()
                    .flat_map(|b| box_subtract_all(b, &self.when_boxes[stage]))
                    .collect(),
            };
            if part.is_empty() {
                continue;
            }
            let i = match branches
                .iter()
                .position(|br| br.to == to && br.set == edge.set)
            {
                Some(i) => i,
                None => {
                    branches.push(Branch {
                        to,
                        set: edge.set.clone(),
                        labels: Vec::new(),
                        region: Vec::new(),
                    });
                    branches.len() - 1
                }
            };
            branches[i].labels.push(edge.label.clone());
            for b in part {
                push_merged(&mut branches[i].region, b);
            }
        }
        for br in branches {
            let saved: Vec<Option<String>> =
                br.set.iter().map(|(o, _)| self.sets[*o].clone()).collect();
            for (o, v) in &br.set {
                self.sets[*o] = Some(v.clone());
            }
            match br.to {
                Node::Action(a) => self.leaf(a, br.region, &br.labels),
                Node::Stage(s) if self.on_path[s] => self.report_loop(s, &br.region[0]),
                Node::Stage(s) => self.visit(s, br.region),
                Node::Start => {}
            }
            for ((o, _), old) in br.set.iter().zip(saved) {
                self.sets[*o] = old;
            }
        }
        self.path.pop();
        self.on_path[stage] = false;
    }

    fn leaf(&mut self, action: usize, region: Vec<ValueBox>, labels: &[String]) {
        self.leaves += 1;
        let sc = self.sop.scenario();
        let ids: Vec<String> = self.path.iter().map(|&s| sc.stages[s].id.clone()).collect();
        for &o in &sc.actions[action].outputs {
            if self.sets[o].is_none() {
                let p = Problem::OutputNotSet {
                    action: sc.actions[action].name.clone(),
                    output: sc.outputs[o].name.clone(),
                    path: format!("[{}]", ids.join(", ")),
                    case: format!(
                        "{} at {}",
                        labels.join(" | "),
                        ids.last().map_or("", String::as_str)
                    ),
                };
                if !self.problems.contains(&p) {
                    self.problems.push(p);
                }
                return;
            }
        }
        let sets: Vec<Option<&str>> = self.sets.iter().map(|s| s.as_deref()).collect();
        let route = self.sop.finish(ids, action, &sets);
        match self.index.get(&route) {
            Some(&i) => {
                for b in region {
                    push_merged(&mut self.found[i].1, b);
                }
            }
            None => {
                self.index.insert(route.clone(), self.found.len());
                self.found.push((route, region));
            }
        }
    }

    fn report_loop(&mut self, again: usize, b: &[crate::scenario::Domain]) {
        let sc = self.sop.scenario();
        let from = self.path.iter().position(|&s| s == again).unwrap_or(0);
        let mut cycle: Vec<&str> = self.path[from..]
            .iter()
            .map(|&s| sc.stages[s].id.as_str())
            .collect();
        cycle.push(&sc.stages[again].id);
        let (fields, variables) = representative(self.sop, b);
        let witness = fields
            .iter()
            .chain(variables.iter())
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ");
        let p = Problem::Loop {
            cycle: cycle.join(" -> "),
            witness,
        };
        if !self.problems.iter().any(|q| matches!((q, &p), (Problem::Loop { cycle: a, .. }, Problem::Loop { cycle: c, .. }) if a == c)) {
            self.problems.push(p);
        }
    }
}

impl Sop {
    /// The routes compatible with a box of assignments (e.g. an intent's), each with the part of
    /// its region inside the box.
    pub fn routes_within(&self, b: &[crate::scenario::Domain]) -> Vec<(&RouteCase, Vec<ValueBox>)> {
        self.routes()
            .iter()
            .filter_map(|rc| {
                let parts: Vec<ValueBox> = rc
                    .region
                    .iter()
                    .map(|r| box_intersect(r, b))
                    .filter(|r| !box_is_empty(r))
                    .collect();
                (!parts.is_empty()).then_some((rc, parts))
            })
            .collect()
    }
}
