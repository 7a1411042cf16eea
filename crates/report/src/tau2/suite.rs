//! The tau2 retail suite of the explorer ([`crate::explorer`]): its rows, filters and the
//! simulations as the script (`js/tau2.js`) reads them.

use super::task_order;
use crate::explorer::{self, Index, Names, Standing, Suite, case_id};
use sage_core::tau2::run::{NlCheck, Tau2Record, Termination};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Every outcome tag, in the order the explorer's filter offers them.
pub const OUTCOMES: [&str; 6] = [
    "pass",
    "db_miss",
    "nl_miss",
    "max_steps",
    "fail",
    "infra_error",
];

/// The outcome tags of a simulation, as the explorer filters them: `infra_error` alone when it
/// has no reward (an infrastructure error), `pass` alone for reward 1; otherwise `max_steps`
/// (the turn limit ended it), `db_miss` (the database check failed) and `nl_miss` (an NL
/// assertion was judged not met) when they apply, or `fail` when none does.
pub fn outcomes(record: &Tau2Record) -> Vec<&'static str> {
    let Some(reward) = &record.reward else {
        return vec!["infra_error"];
    };
    if reward.reward >= 1.0 {
        return vec!["pass"];
    }
    let mut tags = Vec::new();
    if reward.db_match == Some(false) {
        tags.push("db_miss");
    }
    if reward.nl_assertions.iter().any(|c| !c.met) {
        tags.push("nl_miss");
    }
    if record.termination == Termination::MaxSteps {
        tags.push("max_steps");
    }
    if tags.is_empty() {
        tags.push("fail");
    }
    tags
}

/// How bad a simulation's outcome is (lower is worse): the order the explorer lists the failing
/// ones in when it cannot embed them all. A wrong database first (the agent changed orders or
/// accounts wrongly), then an unmet assertion, the turn limit, another failure, and
/// infrastructure errors last (not the agent's doing).
fn severity(outcome: &[&str]) -> f64 {
    ["db_miss", "nl_miss", "max_steps", "fail", "infra_error"]
        .iter()
        .position(|o| outcome.contains(o))
        .map_or(5.0, |i| i as f64)
}

/// Agent turns of a simulation: the highest turn of its messages.
fn turns(record: &Tau2Record) -> u32 {
    record.messages.iter().map(|m| m.turn).max().unwrap_or(0)
}

/// Tool calls the agent made in a simulation.
fn tool_calls(record: &Tau2Record) -> u32 {
    let n: usize = record
        .messages
        .iter()
        .filter(|m| m.role == "assistant")
        .map(|m| m.tool_calls.len())
        .sum();
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// One simulation as the explorer's script reads it.
#[derive(Serialize)]
struct Simulation<'a> {
    id: &'a str,
    agent: &'a str,
    task: &'a str,
    trial: u32,
    outcome: Vec<&'static str>,
    termination: &'static str,
    reward: Option<f64>,
    db_match: Option<bool>,
    nl_assertions: &'a [NlCheck],
    breakdown: Option<&'a BTreeMap<String, f64>>,
    infra_error: Option<&'a str>,
    turns: u32,
    cost_usd: f64,
    messages: Vec<Message<'a>>,
}

/// A message: its role and turn, its text, the tools it calls, or the call it answers.
#[derive(Serialize)]
struct Message<'a> {
    role: &'a str,
    turn: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    calls: Vec<Call<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    answers: Option<&'a str>,
    /// The tool that answered (the name of the call `answers` names).
    #[serde(skip_serializing_if = "Option::is_none")]
    tool: Option<&'a str>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    error: bool,
}

/// A tool call with its arguments (a JSON value, or the text the model wrote).
#[derive(Serialize)]
struct Call<'a> {
    id: &'a str,
    name: &'a str,
    arguments: &'a serde_json::Value,
}

/// What the explorer keeps of a simulation for its row.
#[derive(Debug, Clone)]
pub struct Tau2Row {
    id: Box<str>,
    agent: std::sync::Arc<str>,
    task: std::sync::Arc<str>,
    trial: u32,
    turns: u32,
    tools: u32,
    outcome: Vec<&'static str>,
}

/// The tau2 retail suite of the explorer: rows, filters, simulations.
#[derive(Debug, Default)]
pub struct Tau2Explorer {
    strings: explorer::Interner,
}

impl Suite for Tau2Explorer {
    type Record = Tau2Record;
    type Row = Tau2Row;
    const NAMES: Names = Names {
        root: "tau2-explorer",
        table: "tau2-explorer-table",
        count: "tau2-explorer-count",
        view: "simulation-view",
        data: "tau2-data",
        key: "simulation",
        noun: "simulation",
        nouns: "simulations",
    };

    fn row(&mut self, record: &Tau2Record) -> (Tau2Row, Standing) {
        let job = &record.job;
        let outcome = outcomes(record);
        let failing = outcome != ["pass"];
        let standing = Standing {
            // Every (agent, task) is represented before any gets a second simulation.
            group: format!("{}\u{1f}{}", job.model, job.task),
            failing,
            score: Some(severity(&outcome)),
        };
        let row = Tau2Row {
            id: job.dialogue_id.as_str().into(),
            agent: self.strings.get(&job.model),
            task: self.strings.get(&job.task),
            trial: job.trial,
            turns: turns(record),
            tools: tool_calls(record),
            outcome,
        };
        (row, standing)
    }

    fn id(row: &Tau2Row) -> &str {
        &row.id
    }

    fn case(row: &Tau2Row) -> String {
        case_id(&row.id, &row.agent)
    }

    fn transcript(&self, record: &Tau2Record, out: &mut Vec<u8>) -> serde_json::Result<()> {
        // The tool a tool message answers, by its call's id.
        let names: BTreeMap<&str, &str> = record
            .messages
            .iter()
            .flat_map(|m| &m.tool_calls)
            .map(|c| (c.id.as_str(), c.name.as_str()))
            .collect();
        let messages = record
            .messages
            .iter()
            .map(|m| Message {
                role: &m.role,
                turn: m.turn,
                text: m.content.as_deref(),
                calls: m
                    .tool_calls
                    .iter()
                    .map(|c| Call {
                        id: &c.id,
                        name: &c.name,
                        arguments: &c.arguments,
                    })
                    .collect(),
                answers: m.tool_call_id.as_deref(),
                tool: m
                    .tool_call_id
                    .as_deref()
                    .and_then(|id| names.get(id).copied()),
                error: m.error,
            })
            .collect();
        let reward = record.reward.as_ref();
        let simulation = Simulation {
            id: &record.job.dialogue_id,
            agent: &record.job.model,
            task: &record.job.task,
            trial: record.job.trial,
            outcome: outcomes(record),
            termination: record.termination.as_str(),
            reward: reward.map(|r| r.reward),
            db_match: reward.and_then(|r| r.db_match),
            nl_assertions: reward.map_or(&[], |r| r.nl_assertions.as_slice()),
            breakdown: reward.map(|r| &r.breakdown).filter(|b| !b.is_empty()),
            infra_error: record.infra_error.as_deref(),
            turns: turns(record),
            cost_usd: record.cost_usd,
            messages,
        };
        serde_json::to_writer(out, &simulation)
    }

    fn index(&self, rows: &[&Tau2Row]) -> Index {
        let agents: Vec<&str> = rows
            .iter()
            .map(|r| &*r.agent)
            .collect::<BTreeSet<&str>>()
            .into_iter()
            .collect();
        let mut tasks: Vec<&str> = rows
            .iter()
            .map(|r| &*r.task)
            .collect::<BTreeSet<&str>>()
            .into_iter()
            .collect();
        tasks.sort_by(|a, b| task_order(a, b));
        let at = |list: &[&str], x: &str| list.iter().position(|y| *y == x).unwrap_or(0);
        let cells = rows
            .iter()
            .map(|r| {
                explorer::cells(&serde_json::json!([
                    at(&agents, &r.agent),
                    at(&tasks, &r.task),
                    r.trial,
                    r.outcome
                        .iter()
                        .map(|o| at(&OUTCOMES, o))
                        .collect::<Vec<_>>(),
                    r.tools,
                    r.turns,
                ]))
            })
            .collect();
        Index {
            tables: serde_json::json!({
                "agents": agents,
                "tasks": tasks,
                "outcomes": OUTCOMES,
            }),
            cells,
        }
    }

    fn controls(&self, index: &Index) -> maud::Markup {
        // The options' text is the name itself: the matrix's links (`#explore=agent:NAME;
        // task:ID`) set them by it.
        let select = |key: &str, label: &str, table: &str| {
            let options: Vec<(String, String)> = index
                .names(table)
                .into_iter()
                .map(|name| (name.clone(), name))
                .collect();
            explorer::select_filter(key, label, &options)
        };
        maud::html! {
            div.filters {
                (select("agent", "Agent", "agents"))
                (select("task", "Task", "tasks"))
                (select("outcome", "Outcome", "outcomes"))
            }
        }
    }

    fn head(&self) -> maud::Markup {
        maud::html! {
            thead {
                tr {
                    th { "Simulation" }
                    th { "Outcome" }
                    th { "Agent" }
                    th { "Task" }
                    th.num title="1-based (the id's r0 is trial 1)" { "Trial" }
                    th.num { "Tool calls" }
                    th.num title="agent turns" { "Turns" }
                }
            }
        }
    }
}
