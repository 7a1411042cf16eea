//! The SOP as a petgraph decision graph, and the rule engine that walks it.
//!
//! [`Sop::compile`] turns a checked [`Scenario`] into a `DiGraph` (a start node, one decision node
//! per stage, one node per action; each edge carries the case that takes it), then validates what
//! only the whole graph can show: every stage reachable, an action reachable from every stage, no
//! loop that some assignment follows, outputs set on every route that emits them. It enumerates
//! every route symbolically on the way (see [`symbolic`]), so [`Sop::routes`] is ready to use.
//!
//! [`Sop::route`] is the rule engine: deterministic, it reads only the values the route needs.

pub mod diff;
mod export;
pub mod symbolic;

use crate::scenario::{
    self, Guard, Point, Problem, Scenario, ScenarioError, Scope, Target, Value, ValueBox,
};
use petgraph::graph::{DiGraph, EdgeIndex, NodeIndex};
use petgraph::visit::{Dfs, Reversed};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

pub use symbolic::RouteCase;

/// Values by key name (fields or variables), as the rule engine reads them.
pub type Values = BTreeMap<String, Value>;

/// A complete assignment, keys in the scenario's declaration order (inverse configuration).
pub type Assignment = indexmap::IndexMap<String, Value>;

/// An assignment as the rule engine reads it (a job's fields or variables).
pub fn values(a: &Assignment) -> Values {
    a.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

/// A node of the decision graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Node {
    /// The start marker; one edge to the start stage.
    Start,
    /// A stage (index into the scenario's stages): a decision node.
    Stage(usize),
    /// An action (index into the scenario's actions): a leaf.
    Action(usize),
}

/// An edge of the decision graph: the case that takes it.
#[derive(Debug, Clone)]
pub struct Edge {
    /// When the edge is taken.
    pub guard: Guard,
    /// Outputs set on the way: (output index, value).
    pub set: Vec<(usize, String)>,
    /// The case as written (`Enquiry`, `!= 0`, `otherwise`, ...).
    pub label: String,
}

/// What the rule engine derives: the reference path, action and extra outputs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Route {
    /// Stages visited from the start, in order (the stage that emits the action included).
    pub path: Vec<String>,
    /// The action reached.
    pub action: String,
    /// Every declared output: its value when the action carries it, else its default.
    pub outputs: BTreeMap<String, String>,
}

/// Why the rule engine could not route.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// The route needs a value that was not given.
    #[error("stage {stage} needs {scope} {key}, which is missing; expected one of: {expected}")]
    Missing {
        /// The stage that reads it.
        stage: String,
        /// The key.
        key: String,
        /// `field` or `variable`.
        scope: &'static str,
        /// Its values.
        expected: String,
    },
    /// The route reads a value that is not one of the key's values.
    #[error(
        "stage {stage} reads {key} = {value}, which is not a value of {key}; expected one of: {expected}"
    )]
    Invalid {
        /// The stage that reads it.
        stage: String,
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// Its values.
        expected: String,
    },
}

/// A scenario compiled into its decision graph, with every route enumerated.
#[derive(Debug, Clone)]
pub struct Sop {
    scenario: Scenario,
    graph: DiGraph<Node, Edge>,
    start: NodeIndex,
    stage_nodes: Vec<NodeIndex>,
    action_nodes: Vec<NodeIndex>,
    /// Outgoing edges of each stage, in file order (petgraph iterates newest first).
    out_edges: Vec<Vec<EdgeIndex>>,
    routes: Vec<RouteCase>,
    /// Every intent's description and facts, as the customer audit looks for them in a line.
    phrases: IntentPhrases,
}

/// Every intent's description and facts ([`crate::scenario::normalize`]d, a space on each
/// side), found in a line in one pass (Aho-Corasick: the audit runs on every customer line).
#[derive(Debug, Clone)]
struct IntentPhrases {
    matcher: Option<aho_corasick::AhoCorasick>,
    /// Per pattern: its intent's index and its number of words.
    of: Vec<(usize, usize)>,
}

/// An intent's phrase found in a line: the intent's index (in `intents` order), the phrase's
/// words and where it is in the line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhraseFound {
    /// The intent's index in the scenario's `intents`.
    pub intent: usize,
    /// The phrase's number of words.
    pub words: usize,
    /// Its byte range in the line searched.
    pub start: usize,
    /// The end of that range.
    pub end: usize,
}

impl IntentPhrases {
    fn of(scenario: &Scenario) -> IntentPhrases {
        let mut patterns = Vec::new();
        let mut of = Vec::new();
        for (i, intent) in scenario.intents.iter().enumerate() {
            for phrase in std::iter::once(&intent.description).chain(&intent.facts) {
                let words = crate::scenario::normalize(phrase);
                if !words.is_empty() {
                    of.push((i, words.split(' ').count()));
                    patterns.push(format!(" {words} "));
                }
            }
        }
        IntentPhrases {
            matcher: aho_corasick::AhoCorasick::new(&patterns).ok(),
            of,
        }
    }
}

/// Most DFS leaves the symbolic search explores before giving up on a scenario.
pub const MAX_SEARCH_LEAVES: usize = 1_000_000;

impl Sop {
    /// Builds the graph and checks everything that needs the whole graph; `file` labels errors.
    pub fn compile(scenario: Scenario, file: &str) -> Result<Sop, ScenarioError> {
        let mut graph = DiGraph::new();
        let start = graph.add_node(Node::Start);
        let stage_nodes: Vec<NodeIndex> = (0..scenario.stages.len())
            .map(|i| graph.add_node(Node::Stage(i)))
            .collect();
        let action_nodes: Vec<NodeIndex> = (0..scenario.actions.len())
            .map(|i| graph.add_node(Node::Action(i)))
            .collect();
        graph.add_edge(
            start,
            stage_nodes[scenario.start],
            Edge {
                guard: Guard::Always,
                set: Vec::new(),
                label: "start".into(),
            },
        );
        let out_edges = scenario
            .stages
            .iter()
            .enumerate()
            .map(|(i, stage)| {
                stage
                    .transitions
                    .iter()
                    .map(|t| {
                        let to = match t.target {
                            Target::Stage(s) => stage_nodes[s],
                            Target::Action(a) => action_nodes[a],
                        };
                        graph.add_edge(
                            stage_nodes[i],
                            to,
                            Edge {
                                guard: t.guard.clone(),
                                set: t.set.clone(),
                                label: t.label.clone(),
                            },
                        )
                    })
                    .collect()
            })
            .collect();
        let mut sop = Sop {
            scenario,
            graph,
            start,
            stage_nodes,
            action_nodes,
            out_edges,
            routes: Vec::new(),
            phrases: IntentPhrases {
                matcher: None,
                of: Vec::new(),
            },
        };
        sop.phrases = IntentPhrases::of(&sop.scenario);
        let structural = sop.structural_problems();
        if !structural.is_empty() {
            return Err(ScenarioError {
                file: file.to_string(),
                problems: structural,
            });
        }
        let search = symbolic::enumerate(&sop);
        if !search.problems.is_empty() {
            return Err(ScenarioError {
                file: file.to_string(),
                problems: search.problems,
            });
        }
        sop.routes = search.routes;
        Ok(sop)
    }

    /// Stages no edge path reaches, and stages from which no action can be reached.
    fn structural_problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        let mut reached = vec![false; self.graph.node_count()];
        let mut dfs = Dfs::new(&self.graph, self.start);
        while let Some(n) = dfs.next(&self.graph) {
            reached[n.index()] = true;
        }
        let mut leads_to_action = vec![false; self.graph.node_count()];
        let reversed = Reversed(&self.graph);
        for &a in &self.action_nodes {
            let mut dfs = Dfs::new(reversed, a);
            while let Some(n) = dfs.next(reversed) {
                leads_to_action[n.index()] = true;
            }
        }
        let start_id = &self.scenario.stages[self.scenario.start].id;
        for (i, &n) in self.stage_nodes.iter().enumerate() {
            let id = &self.scenario.stages[i].id;
            if !reached[n.index()] {
                problems.push(Problem::Unreachable {
                    stage: id.clone(),
                    start: start_id.clone(),
                    why: "no transition leads to it",
                });
            } else if !leads_to_action[n.index()] {
                problems.push(Problem::DeadEnd { stage: id.clone() });
            }
        }
        problems
    }

    /// The scenario this graph was compiled from.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// Every intent's description or fact said in `words` (a [`crate::scenario::normalize`]d
    /// line with a space on each side), overlapping ones included.
    pub fn intent_phrases_in(&self, words: &str) -> Vec<PhraseFound> {
        let Some(matcher) = &self.phrases.matcher else {
            return Vec::new();
        };
        matcher
            .find_overlapping_iter(words)
            .filter_map(|m| {
                let (intent, n) = *self.phrases.of.get(m.pattern().as_usize())?;
                Some(PhraseFound {
                    intent,
                    words: n,
                    start: m.start(),
                    end: m.end(),
                })
            })
            .collect()
    }

    /// The decision graph.
    pub fn graph(&self) -> &DiGraph<Node, Edge> {
        &self.graph
    }

    /// The start node.
    pub fn start_node(&self) -> NodeIndex {
        self.start
    }

    /// Outgoing edges of a stage in file order, with the node each leads to.
    pub fn transitions(&self, stage: usize) -> impl Iterator<Item = (&Edge, Node)> + '_ {
        self.out_edges[stage].iter().map(move |&e| {
            let (_, to) = self.graph.edge_endpoints(e).expect("edge exists");
            (&self.graph[e], self.graph[to])
        })
    }

    /// Every route: each distinct (path, action, outputs) with one complete assignment of all
    /// fields and variables that produces it, in depth-first order of the SOP.
    pub fn routes(&self) -> &[RouteCase] {
        &self.routes
    }

    /// Actions that no route reaches (declared but unused).
    pub fn unused_actions(&self) -> Vec<&str> {
        self.scenario
            .actions
            .iter()
            .filter(|a| !self.routes.iter().any(|r| r.route.action == a.name))
            .map(|a| a.name.as_str())
            .collect()
    }

    /// The rule engine: the reference path, action and outputs for these values. Deterministic;
    /// reads only what the route needs, so values it never reads may be absent (or anything).
    pub fn route(&self, fields: &Values, variables: &Values) -> Result<Route, RouteError> {
        let sc = &self.scenario;
        let lookup = |key: usize| {
            let k = &sc.keys[key];
            match k.scope {
                Scope::Field => fields.get(&k.name),
                Scope::Variable => variables.get(&k.name),
            }
        };
        let mut path = Vec::new();
        let mut sets: Vec<Option<&str>> = vec![None; sc.outputs.len()];
        let mut stage = sc.start;
        // A validated SOP never revisits a stage; the bound only guards against misuse.
        for _ in 0..=sc.stages.len() {
            path.push(sc.stages[stage].id.clone());
            let (edge, to) = self.choose(stage, &lookup)?;
            for (o, v) in &edge.set {
                sets[*o] = Some(v.as_str());
            }
            match to {
                Node::Stage(s) => stage = s,
                Node::Action(a) => return Ok(self.finish(path, a, &sets)),
                Node::Start => unreachable!("no edge leads to the start node"),
            }
        }
        unreachable!("a compiled SOP has no loop that values can follow")
    }

    /// The edge a stage takes for these values.
    fn choose<'v>(
        &self,
        stage: usize,
        lookup: &dyn Fn(usize) -> Option<&'v Value>,
    ) -> Result<(&Edge, Node), RouteError> {
        let sc = &self.scenario;
        let stage_id = || sc.stages[stage].id.clone();
        let mut undecided: Option<usize> = None;
        let mut otherwise = None;
        for (edge, to) in self.transitions(stage) {
            let conds = match &edge.guard {
                Guard::Always => return Ok((edge, to)),
                Guard::Otherwise => {
                    otherwise = Some((edge, to));
                    continue;
                }
                Guard::When(conds) => conds,
            };
            let mut failed = false;
            let mut missing = None;
            for (key, domain) in conds {
                let k = &sc.keys[*key];
                if k.full_domain().is_subset(domain) {
                    continue; // the condition allows every value: nothing to read
                }
                match lookup(*key) {
                    None => {
                        missing.get_or_insert(*key);
                    }
                    Some(v) => {
                        let p: Point = k.point(v).ok_or_else(|| RouteError::Invalid {
                            stage: stage_id(),
                            key: k.name.clone(),
                            value: v.to_string(),
                            expected: k.expected(),
                        })?;
                        if !domain.contains(p) {
                            failed = true;
                            break;
                        }
                    }
                }
            }
            if failed {
                continue;
            }
            match missing {
                None => return Ok((edge, to)),
                Some(key) => {
                    undecided.get_or_insert(key);
                }
            }
        }
        if let Some(key) = undecided {
            let k = &sc.keys[key];
            return Err(RouteError::Missing {
                stage: stage_id(),
                key: k.name.clone(),
                scope: match k.scope {
                    Scope::Field => "field",
                    Scope::Variable => "variable",
                },
                expected: k.expected(),
            });
        }
        Ok(otherwise.expect("validated stages cover every value"))
    }

    /// The route's result once it reaches action `a`.
    fn finish(&self, path: Vec<String>, a: usize, sets: &[Option<&str>]) -> Route {
        let sc = &self.scenario;
        let action = &sc.actions[a];
        let outputs = sc
            .outputs
            .iter()
            .enumerate()
            .filter_map(|(i, o)| {
                let value = if action.outputs.contains(&i) {
                    sets[i].map(str::to_string)
                } else {
                    o.default.clone()
                };
                value.map(|v| (o.name.clone(), v))
            })
            .collect();
        Route {
            path,
            action: action.name.clone(),
            outputs,
        }
    }

    /// The box of assignments an intent implies (every other key free).
    pub fn intent_box(&self, intent: &scenario::Intent) -> ValueBox {
        let mut b = self.scenario.full_box();
        for (k, d) in &intent.implies {
            b[*k] = b[*k].intersect(d);
        }
        b
    }

    /// The decision graph in Graphviz DOT.
    pub fn to_dot(&self) -> String {
        export::dot(self)
    }

    /// The decision graph as a Mermaid flowchart.
    pub fn to_mermaid(&self) -> String {
        export::mermaid(self)
    }
}

/// Reads, checks and compiles a scenario file.
pub fn load(path: &Path) -> Result<Sop, ScenarioError> {
    let scenario = scenario::load(path)?;
    Sop::compile(scenario, &path.display().to_string())
}

/// Parses, checks and compiles a scenario from YAML text; `file` labels errors.
pub fn from_yaml(text: &str, file: &str) -> Result<Sop, ScenarioError> {
    Sop::compile(Scenario::from_yaml(text, file)?, file)
}
