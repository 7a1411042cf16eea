//! Prompt templates rendered from a scenario (appendix B.3.2), and the parsing of the user
//! simulator's reply. Pure: no I/O.
//!
//! Each role sees what section 3.1.2 gives it, and nothing more:
//!
//! * the service agent ([`agent`]): the system information S (the job's variables and the
//!   intent's extra context), the dialogue history, the user message and the SOP graph G as
//!   text, rendered from the same compiled graph the rule engine walks;
//! * the user simulator ([`user`]): its intent I, persona P and adversarial level, and the facts
//!   of its own case (the intent's facts, the job's field and variable values) — nothing about
//!   other intents or the SOP;
//! * the judges ([`judge`]): S, the history, the user message and the agent's `chat` only (never
//!   its reasoning, path or action).
//!
//! The agent's and the judges' answers are parsed by [`crate::protocol::parse`].

pub mod agent;
pub mod desk;
pub mod draft;
pub mod judge;
pub mod user;

pub use agent::{
    agent_messages, agent_system_prompt, agent_system_prompt_split, system_information,
};
pub use judge::{
    DIMENSIONS, Dimension, judge_messages, judge_system_prompt, judge_system_prompt_split,
};
pub use user::{UserOutputError, parse_user_output, user_messages, user_system_prompt};

use crate::protocol::chat::{ChatMessage, ChatRole};
use crate::protocol::{Line, Speaker};
use crate::scenario::{Key, KeyKind};
use crate::sop::{Assignment, Sop};
use std::fmt::Write;

/// A key's values for a prompt: `Enquiry/Change/Cancel`, `true/false`, or
/// `an integer in 0..10000`.
fn values_text(key: &Key) -> String {
    match key.kind {
        KeyKind::Integer { .. } => key.expected(),
        _ => key.options().join("/"),
    }
}

/// `"A"/"B"/"C"`: alternatives for a JSON template.
fn quoted_alternatives(items: Vec<&str>) -> String {
    let quoted: Vec<String> = items.iter().map(|x| format!("\"{x}\"")).collect();
    quoted.join("/")
}

/// One line per classification field, `<indent>- Name: description (values)`.
fn field_lines(sop: &Sop, indent: &str) -> String {
    let mut s = String::new();
    for key in sop.scenario().fields() {
        let _ = writeln!(
            s,
            "{indent}- {}: {} ({})",
            key.name,
            key.description,
            values_text(key)
        );
    }
    s
}

/// The classification object of a JSON template, one key per field with its values:
/// `"ConsumptionType": "Enquiry"/"Change"/"Cancel"`, `"Flag": true/false`,
/// `"Count": <an integer in 0..10>`.
fn classification_template(sop: &Sop) -> String {
    let lines: Vec<String> = sop
        .scenario()
        .fields()
        .map(|key| {
            let values = match &key.kind {
                KeyKind::Enum(options) => {
                    quoted_alternatives(options.iter().map(String::as_str).collect())
                }
                KeyKind::Boolean => "true/false".into(),
                KeyKind::Integer { .. } => format!("<{}>", key.expected()),
            };
            format!("    \"{}\": {}", key.name, values)
        })
        .collect();
    format!("{{\n{}\n  }}", lines.join(",\n"))
}

/// [System Variables Introduction]: each declared variable with its description and values, as
/// the paper's prompt has it. The same for every job of a scenario, so it belongs to the stable
/// start of a prompt (a provider's prefix cache reads it instead of billing it again); the
/// job's values come last, in [`current_information_section`].
fn variables_section(sop: &Sop) -> String {
    let mut s = String::from("[System Variables Introduction]\n");
    let mut declared = sop.scenario().variables().peekable();
    if declared.peek().is_none() {
        s.push_str("(none)\n");
    }
    for key in declared {
        let _ = writeln!(
            s,
            "- {}: {} ({})",
            key.name,
            key.description,
            values_text(key)
        );
    }
    s
}

/// The heading of the last section of the agent's and the judges' system prompts, the job's
/// values: what precedes it is the same for every dialogue of a scenario.
pub const CURRENT_INFORMATION_HEADING: &str = "[Current System Information]";

/// A rendered system prompt and where its part shared by every dialogue of the scenario ends:
/// `text[..shared]` (the role, the SOP, the rubric, the output format) is the same for every
/// dialogue, the rest is the job's values. The roles carry `shared` in the model request, so a
/// backend with a prompt cache can end its cached part there (Anthropic's breakpoint).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemPrompt {
    /// The prompt.
    pub text: String,
    /// Bytes at its start that every dialogue of the scenario shares (a char boundary).
    pub shared: usize,
}

impl SystemPrompt {
    /// `shared` (the part every dialogue shares, ending with a blank line) followed by the
    /// job's values `own`.
    fn joined(mut shared: String, own: &str) -> SystemPrompt {
        shared.push('\n');
        let at = shared.len();
        shared.push_str(own);
        SystemPrompt {
            text: shared,
            shared: at,
        }
    }
}

/// [Current System Information]: the job's system information S, the part of a prompt that
/// changes from one dialogue to the next (and never within one), placed at the end of the
/// system prompt so that everything before it is a prefix shared by every dialogue of the
/// scenario. Each declared variable's current value (`unknown` when absent), then any other
/// entry (an intent's context) under [Other System Information].
fn current_information_section(sop: &Sop, variables: &Assignment) -> String {
    let mut s = format!("{CURRENT_INFORMATION_HEADING}\n");
    let declared: Vec<&Key> = sop.scenario().variables().collect();
    if declared.is_empty() {
        s.push_str("(none)\n");
    }
    for key in &declared {
        let current = variables
            .get(&key.name)
            .map_or_else(|| "unknown".to_string(), |v| v.to_string());
        let _ = writeln!(s, "- {}: {current}", key.name);
    }
    let extra: Vec<_> = variables
        .iter()
        .filter(|(name, _)| !declared.iter().any(|k| &k.name == *name))
        .collect();
    if !extra.is_empty() {
        s.push_str("[Other System Information]\n");
        for (name, value) in extra {
            let _ = writeln!(s, "- {name}: {value}");
        }
    }
    s
}

/// Appends a message, merging it into the previous one when both have the same role (chat APIs
/// expect alternating roles).
fn push_merged(messages: &mut Vec<ChatMessage>, role: ChatRole, text: &str) {
    match messages.last_mut() {
        Some(last) if last.role == role && role != ChatRole::System => {
            last.content = format!("{}\n\n{text}", last.content).into();
        }
        _ => messages.push(ChatMessage::new(role, text)),
    }
}

/// Appends the history, each line in the role `role_of` gives its speaker.
fn push_history(
    messages: &mut Vec<ChatMessage>,
    history: &[Line],
    role_of: impl Fn(Speaker) -> ChatRole,
) {
    for line in history {
        push_merged(messages, role_of(line.speaker), &line.text);
    }
}
