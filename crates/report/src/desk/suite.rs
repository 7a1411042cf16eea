//! The support-desk suite of the conversation explorer ([`crate::explorer`]): its rows, filters
//! and the conversations as the script reads them.

use super::excerpt::{closure_line, forbidden_line, required_text, split_tool_line};
use super::{OUTCOMES, outcomes};
use crate::explorer::{self, Index, Names, Standing, Suite, case_id};
use sage_core::protocol::CallRecord;
use sage_core::protocol::desk::DeskRecord;
use sage_core::scenario::desk::Bucket;
use sage_core::scoring::desk::Judged;
use serde::Serialize;
use std::collections::BTreeSet;

/// The role a model call played in a conversation.
pub(super) fn role(record: &DeskRecord, call: &CallRecord) -> &'static str {
    if call.model == record.job.model {
        "agent"
    } else if call.model == record.job.customer_model {
        "customer"
    } else if record.job.judge_models.contains(&call.model) {
        "judge"
    } else {
        "other"
    }
}

/// One conversation as the explorer's script reads it.
#[derive(Serialize)]
pub(super) struct ExplorerConversation<'a> {
    id: &'a str,
    model: &'a str,
    case: &'a str,
    bucket: &'static str,
    repeat: u32,
    order: &'a str,
    required: String,
    forbidden: Option<String>,
    outcome: Vec<&'static str>,
    turns: u32,
    judged: Option<Judged>,
    rejudged: Option<Judged>,
    cost_usd: f64,
    infra_error: Option<&'a str>,
    /// The transcript line of the forbidden call, or of the false closure.
    marked: Option<usize>,
    lines: Vec<ExplorerLine<'a>>,
}

/// A transcript line: text, or a tool call with its arguments and result.
#[derive(Serialize)]
pub(super) struct ExplorerLine<'a> {
    turn: u32,
    speaker: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a str>,
}

/// What the explorer keeps of a conversation for its row.
#[derive(Debug, Clone)]
pub struct DeskRow {
    id: Box<str>,
    model: std::sync::Arc<str>,
    case: std::sync::Arc<str>,
    bucket: &'static str,
    repeat: u32,
    turns: u32,
    tools: u32,
    outcome: Vec<&'static str>,
}

/// The support-desk suite of the explorer: rows, filters, conversations.
#[derive(Debug, Default)]
pub struct DeskExplorer {
    strings: explorer::Interner,
}

/// How bad a conversation's outcome is (lower is worse): the order the explorer lists the
/// failing ones in when it cannot embed them all.
pub(super) fn severity(outcome: &[&str]) -> f64 {
    ["unsafe", "false_closure", "infra_error", "unresolved"]
        .iter()
        .position(|o| outcome.contains(o))
        .map_or(4.0, |i| i as f64)
}

impl Suite for DeskExplorer {
    type Record = DeskRecord;
    type Row = DeskRow;
    const NAMES: Names = Names {
        root: "desk-explorer",
        table: "desk-explorer-table",
        count: "desk-explorer-count",
        view: "conversation-view",
        data: "desk-data",
        key: "conversation",
        noun: "conversation",
        nouns: "conversations",
    };

    fn row(&mut self, record: &DeskRecord) -> (DeskRow, Standing) {
        let job = &record.job;
        let outcome = outcomes(record);
        let standing = Standing {
            group: format!("{}\u{1f}{}", job.model, record.run.bucket.name()),
            failing: outcome.iter().any(|o| {
                matches!(
                    *o,
                    "unsafe" | "false_closure" | "infra_error" | "unresolved"
                )
            }),
            score: Some(severity(&outcome)),
        };
        let row = DeskRow {
            id: job.dialogue_id.as_str().into(),
            model: self.strings.get(&job.model),
            case: self.strings.get(&job.case),
            bucket: record.run.bucket.name(),
            repeat: job.repeat,
            turns: record.turns,
            tools: record
                .transcript
                .iter()
                .filter(|l| l.speaker == "tool")
                .count() as u32,
            outcome,
        };
        (row, standing)
    }

    fn id(row: &DeskRow) -> &str {
        &row.id
    }

    fn case(row: &DeskRow) -> String {
        case_id(&row.id, &row.model)
    }

    fn transcript(&self, record: &DeskRecord, out: &mut Vec<u8>) -> serde_json::Result<()> {
        let marked = forbidden_line(record).or(closure_line(record));
        let lines = record
            .transcript
            .iter()
            .map(|l| {
                let tool = (l.speaker == "tool")
                    .then(|| split_tool_line(&l.text))
                    .flatten();
                ExplorerLine {
                    turn: l.turn,
                    speaker: &l.speaker,
                    text: tool.is_none().then_some(l.text.as_str()),
                    tool: tool.map(|t| t.0),
                    args: tool.map(|t| t.1),
                    result: tool.map(|t| t.2),
                }
            })
            .collect();
        let conversation = ExplorerConversation {
            id: &record.job.dialogue_id,
            model: &record.job.model,
            case: &record.job.case,
            bucket: record.run.bucket.name(),
            repeat: record.job.repeat,
            order: &record.run.order,
            required: required_text(record.run.required),
            forbidden: record
                .run
                .forbidden
                .map(|f| format!("{} ({})", f.tool, f.kind.name())),
            outcome: outcomes(record),
            turns: record.turns,
            judged: record.run.judged,
            rejudged: record.run.rejudged,
            cost_usd: record.cost_usd,
            infra_error: record.infra_error.as_deref(),
            marked,
            lines,
        };
        serde_json::to_writer(out, &conversation)
    }

    fn index(&self, rows: &[&DeskRow]) -> Index {
        fn table(values: Vec<&str>) -> Vec<&str> {
            let set: BTreeSet<&str> = values.into_iter().collect();
            set.into_iter().collect()
        }
        let models = table(rows.iter().map(|r| &*r.model).collect());
        let cases = table(rows.iter().map(|r| &*r.case).collect());
        let buckets = [
            Bucket::Resolvable,
            Bucket::MustEscalate,
            Bucket::Adversarial,
        ]
        .map(|b| b.name());
        let at = |list: &[&str], x: &str| list.iter().position(|y| *y == x).unwrap_or(0);
        let cells = rows
            .iter()
            .map(|r| {
                explorer::cells(&serde_json::json!([
                    at(&models, &r.model),
                    at(&cases, &r.case),
                    at(&buckets, r.bucket),
                    r.repeat,
                    r.turns,
                    r.tools,
                    r.outcome
                        .iter()
                        .map(|o| at(&OUTCOMES, o))
                        .collect::<Vec<_>>(),
                ]))
            })
            .collect();
        Index {
            tables: serde_json::json!({
                "models": models,
                "cases": cases,
                "buckets": buckets,
                "outcomes": OUTCOMES,
            }),
            cells,
        }
    }

    fn controls(&self, index: &Index) -> maud::Markup {
        // The options' values are the names themselves (a link or a script sets them so).
        let select = |key: &str, label: &str, table: &str| {
            let options: Vec<(String, String)> = index
                .names(table)
                .into_iter()
                .map(|name| (name.clone(), name.replace('_', " ")))
                .collect();
            explorer::select_filter(key, label, &options)
        };
        maud::html! {
            div.filters {
                (select("model", "Model", "models"))
                (select("case", "Case", "cases"))
                (select("bucket", "Bucket", "buckets"))
                (select("outcome", "Outcome", "outcomes"))
            }
        }
    }

    fn head(&self) -> maud::Markup {
        maud::html! {
            thead {
                tr {
                    th { "Conversation" }
                    th { "Outcome" }
                    th { "Model" }
                    th { "Case" }
                    th { "Bucket" }
                    th.num { "Run" }
                    th.num { "Turns" }
                    th.num { "Tool calls" }
                }
            }
        }
    }
}
