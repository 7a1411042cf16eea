//! Dialogues as training data: one example per agent turn whose logic score reaches a
//! threshold, with the agent prompt and the dialogue before it as context and the agent's answer
//! (its JSON output) as the target. OpenAI chat fine-tuning JSONL or ShareGPT JSON.

use crate::prompts;
use crate::protocol::{DialogueRecord, ServiceOutcome};
use crate::sop::Sop;
use serde_json::{Value as Json, json};
use std::collections::HashMap;
use std::sync::Arc;

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `{"messages": [{"role", "content"}, ...]}` per line.
    Openai,
    /// A JSON array of `{"conversations": [{"from", "value"}, ...]}`.
    Sharegpt,
}

/// What an export kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportStats {
    /// Examples written.
    pub examples: usize,
    /// Agent turns left out (below the threshold, format errors, infrastructure errors).
    pub skipped: usize,
}

/// The examples of a set of dialogues, as (system, [(role, content)]) lists: roles are
/// `user`/`assistant`, the last message the answer to learn.
fn examples(
    records: &[DialogueRecord],
    sops: &HashMap<String, Arc<Sop>>,
    min_logic: f64,
) -> (Vec<Vec<(String, String)>>, ExportStats) {
    let mut out = Vec::new();
    let mut stats = ExportStats::default();
    for record in records {
        let Some(sop) = sops.get(&record.job.scenario) else {
            stats.skipped += record.turns.len();
            continue;
        };
        let system =
            prompts::agent_system_prompt(sop, &prompts::system_information(sop, &record.job));
        // The context is what the agent saw: the customer's lines and its own chat replies
        // (as in the live dialogue); the target is its full JSON answer.
        let mut context: Vec<(String, String)> = vec![("system".into(), system)];
        for turn in &record.turns {
            if turn.user_message.is_empty() {
                stats.skipped += 1; // the customer side failed: no line was said
                continue;
            }
            context.push(("user".into(), turn.user_message.clone()));
            let (seen, answer) = match (&turn.outcome, &turn.raw_output) {
                (ServiceOutcome::Valid { turn: t }, Some(raw)) => (Some(t.chat.clone()), Some(raw)),
                (ServiceOutcome::FormatError { chat, .. }, _) => (Some(chat.clone()), None),
                _ => (None, None),
            };
            match (answer, turn.scores.map(|s| s.logic)) {
                (Some(answer), Some(logic)) if logic >= min_logic => {
                    let mut example = context.clone();
                    example.push(("assistant".into(), answer.clone()));
                    out.push(example);
                    stats.examples += 1;
                }
                _ => stats.skipped += 1,
            }
            if let Some(seen) = seen {
                context.push(("assistant".into(), seen));
            }
        }
    }
    (out, stats)
}

/// Renders the examples in a format.
pub fn export(
    records: &[DialogueRecord],
    sops: &HashMap<String, Arc<Sop>>,
    format: Format,
    min_logic: f64,
) -> (String, ExportStats) {
    let (examples, stats) = examples(records, sops, min_logic);
    let text = match format {
        Format::Openai => examples
            .iter()
            .map(|ex| {
                let messages: Vec<Json> = ex
                    .iter()
                    .map(|(role, content)| json!({"role": role, "content": content}))
                    .collect();
                json!({ "messages": messages }).to_string() + "\n"
            })
            .collect(),
        Format::Sharegpt => {
            let all: Vec<Json> = examples
                .iter()
                .map(|ex| {
                    let turns: Vec<Json> = ex
                        .iter()
                        .map(|(role, content)| {
                            let from = match role.as_str() {
                                "system" => "system",
                                "user" => "human",
                                _ => "gpt",
                            };
                            json!({"from": from, "value": content})
                        })
                        .collect();
                    json!({ "conversations": turns })
                })
                .collect();
            serde_json::to_string_pretty(&all).unwrap_or_else(|_| "[]".into()) + "\n"
        }
    };
    (text, stats)
}
