//! tau2's tasks (tasks.json): what the simulated user wants and knows, and how the run is
//! graded (gold actions, NL assertions, information to communicate, reward basis).

use super::py;
use crate::scenario::{Problem, ScenarioError};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The largest tasks.json accepted, in bytes (the shipped one is about 400 KB).
pub const MAX_TASKS_BYTES: usize = 16 << 20;
/// The most tasks accepted.
pub const MAX_TASKS: usize = 10_000;
/// The most gold actions, assertions or strings accepted in one task's list.
pub const MAX_TASK_LIST: usize = 1_000;

/// One task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// Its id (`"0"` ... `"113"` for retail).
    pub id: String,
    /// What the task tests, when given.
    #[serde(default)]
    pub description: Option<Description>,
    /// What the simulated user is told.
    pub user_scenario: UserScenario,
    /// How the run is graded; `None` grades every run 1.
    #[serde(default)]
    pub evaluation_criteria: Option<EvaluationCriteria>,
}

/// What a task tests (all optional).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Description {
    /// What the scenario tests.
    #[serde(default)]
    pub purpose: Option<String>,
    /// The policy that matters.
    #[serde(default)]
    pub relevant_policies: Option<String>,
    /// Other notes.
    #[serde(default)]
    pub notes: Option<String>,
}

/// Everything the user simulator is given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserScenario {
    /// The user's persona, when the task has one.
    #[serde(default)]
    pub persona: Option<String>,
    /// The situation and the instructions.
    pub instructions: Instructions,
}

/// The user's instructions: structured (every retail task) or free text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Instructions {
    /// tau2's `StructuredUserInstructions`.
    Structured(StructuredInstructions),
    /// Plain text.
    Text(String),
}

/// tau2's `StructuredUserInstructions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StructuredInstructions {
    /// The domain (`retail`).
    pub domain: String,
    /// Why the user calls.
    pub reason_for_call: String,
    /// What the user knows about themself.
    #[serde(default)]
    pub known_info: Option<String>,
    /// What the user does not know.
    #[serde(default)]
    pub unknown_info: Option<String>,
    /// How the user should behave.
    pub task_instructions: String,
}

impl UserScenario {
    /// The structured instructions, when they are structured.
    pub fn structured(&self) -> Option<&StructuredInstructions> {
        match &self.instructions {
            Instructions::Structured(s) => Some(s),
            Instructions::Text(_) => None,
        }
    }

    /// Why the user calls (the whole text for free-text instructions).
    pub fn reason_for_call(&self) -> &str {
        match &self.instructions {
            Instructions::Structured(s) => &s.reason_for_call,
            Instructions::Text(t) => t,
        }
    }

    /// What the user knows.
    pub fn known_info(&self) -> Option<&str> {
        self.structured().and_then(|s| s.known_info.as_deref())
    }

    /// What the user does not know.
    pub fn unknown_info(&self) -> Option<&str> {
        self.structured().and_then(|s| s.unknown_info.as_deref())
    }

    /// How the user should behave.
    pub fn task_instructions(&self) -> Option<&str> {
        self.structured().map(|s| s.task_instructions.as_str())
    }

    /// The text tau2 gives the user simulator (`str(UserScenario)`): persona, then the
    /// instructions, indented with tabs.
    pub fn to_prompt_text(&self) -> String {
        let indent = |text: &str| -> String {
            // textwrap.indent: prefix every line that is not only whitespace.
            text.split_inclusive('\n')
                .map(|line| {
                    if line.trim().is_empty() {
                        line.to_string()
                    } else {
                        format!("\t{line}")
                    }
                })
                .collect()
        };
        let mut lines = Vec::new();
        if let Some(p) = &self.persona {
            lines.push("Persona:".to_string());
            lines.push(indent(p));
        }
        lines.push("Instructions:".to_string());
        let instructions = match &self.instructions {
            Instructions::Text(t) => t.clone(),
            Instructions::Structured(s) => {
                let mut l = vec![format!("Domain: {}", s.domain)];
                l.push(format!("Reason for call:\n{}", indent(&s.reason_for_call)));
                if let Some(k) = &s.known_info {
                    l.push(format!("Known info:\n{}", indent(k)));
                }
                if let Some(u) = &s.unknown_info {
                    l.push(format!("Unknown info:\n{}", indent(u)));
                }
                l.push(format!(
                    "Task instructions:\n{}",
                    indent(&s.task_instructions)
                ));
                l.join("\n")
            }
        };
        lines.push(indent(&instructions));
        lines.join("\n")
    }
}

/// A part of the reward (tau2's `RewardType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RewardPart {
    /// The database after the run equals the database after the gold actions.
    #[serde(rename = "DB")]
    Db,
    /// Every environment assertion holds (no retail task has one).
    #[serde(rename = "ENV_ASSERTION")]
    EnvAssertion,
    /// Every NL assertion is judged true (by an LLM).
    #[serde(rename = "NL_ASSERTION")]
    NlAssertion,
    /// Every gold action was called (not used by retail).
    #[serde(rename = "ACTION")]
    Action,
    /// Every `communicate_info` string appears in the agent's messages.
    #[serde(rename = "COMMUNICATE")]
    Communicate,
}

/// How a task is graded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvaluationCriteria {
    /// One reference trajectory; replayed on a fresh database it gives the target state.
    #[serde(default)]
    pub actions: Option<Vec<Action>>,
    /// Strings the agent must say (substring match).
    #[serde(default)]
    pub communicate_info: Option<Vec<String>>,
    /// Natural-language assertions judged by an LLM.
    #[serde(default)]
    pub nl_assertions: Option<Vec<String>>,
    /// The parts whose rewards are multiplied (tau2's default: DB and COMMUNICATE).
    #[serde(default = "default_basis")]
    pub reward_basis: Vec<RewardPart>,
}

fn default_basis() -> Vec<RewardPart> {
    vec![RewardPart::Db, RewardPart::Communicate]
}

/// A gold action: a tool call of the reference trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Action {
    /// Its id within the task (`"0_4"`).
    pub action_id: String,
    /// Who calls (`assistant` for every retail action).
    #[serde(default = "assistant")]
    pub requestor: String,
    /// The tool.
    pub name: String,
    /// Its arguments.
    pub arguments: Map<String, Value>,
    /// A note.
    #[serde(default)]
    pub info: Option<String>,
    /// The arguments an ACTION check compares (all when `None`).
    #[serde(default)]
    pub compare_args: Option<Vec<String>>,
}

fn assistant() -> String {
    "assistant".into()
}

impl Action {
    /// tau2's `Action.compare_with_tool_call`: same name, and the compared arguments equal
    /// (all of the call's arguments when `compare_args` is not given).
    pub fn matches(&self, name: &str, arguments: &Map<String, Value>) -> bool {
        if self.name != name {
            return false;
        }
        let keys: Vec<&String> = match &self.compare_args {
            Some(k) => k.iter().collect(),
            None => arguments.keys().collect(),
        };
        if keys.is_empty() {
            return true;
        }
        let pick = |m: &Map<String, Value>| -> Vec<(String, Value)> {
            let mut v: Vec<(String, Value)> = m
                .iter()
                .filter(|(k, _)| keys.contains(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            v.sort_by(|a, b| a.0.cmp(&b.0));
            v
        };
        let (a, b) = (pick(arguments), pick(&self.arguments));
        a.len() == b.len()
            && a.iter()
                .zip(&b)
                .all(|(x, y)| x.0 == y.0 && py::eq(&x.1, &y.1))
    }
}

impl Task {
    /// The gold actions (empty when there are none).
    pub fn gold_actions(&self) -> &[Action] {
        self.evaluation_criteria
            .as_ref()
            .and_then(|c| c.actions.as_deref())
            .unwrap_or(&[])
    }

    /// The NL assertions (empty when there are none).
    pub fn nl_assertions(&self) -> &[String] {
        self.evaluation_criteria
            .as_ref()
            .and_then(|c| c.nl_assertions.as_deref())
            .unwrap_or(&[])
    }

    /// The strings to communicate (empty when there are none).
    pub fn communicate_info(&self) -> &[String] {
        self.evaluation_criteria
            .as_ref()
            .and_then(|c| c.communicate_info.as_deref())
            .unwrap_or(&[])
    }

    /// The reward basis (empty when the task has no evaluation criteria).
    pub fn reward_basis(&self) -> &[RewardPart] {
        self.evaluation_criteria
            .as_ref()
            .map_or(&[], |c| c.reward_basis.as_slice())
    }
}

/// Parses tasks.json text (a JSON array of tasks); `file` labels errors. Each error names the
/// task (`tasks[3] (id "3")`), the field when serde names it, and the line and column.
/// Features of tau2's task format that retail does not use and this module does not run
/// (an initial state, environment assertions) are refused, not ignored.
pub fn parse_tasks(text: &str, file: &str) -> Result<Vec<Task>, ScenarioError> {
    let bad = |at: String, found: String, expected: String| {
        ScenarioError::one(
            file,
            Problem::BadDeclaration {
                at,
                found,
                expected,
            },
        )
    };
    if text.len() > MAX_TASKS_BYTES {
        return Err(bad(
            "tasks".into(),
            format!("{} bytes", text.len()),
            format!("at most {MAX_TASKS_BYTES} bytes"),
        ));
    }
    let raw: Vec<&RawValue> =
        serde_json::from_str(text).map_err(|e| json_error(file, text, None, &e))?;
    if raw.len() > MAX_TASKS {
        return Err(bad(
            "tasks".into(),
            format!("{} tasks", raw.len()),
            format!("at most {MAX_TASKS}"),
        ));
    }
    let mut problems = Vec::new();
    let mut tasks = Vec::with_capacity(raw.len());
    let mut ids = std::collections::HashSet::new();
    for (i, r) in raw.iter().enumerate() {
        let value: Value = match serde_json::from_str(r.get()) {
            Ok(v) => v,
            Err(e) => {
                problems.extend(
                    json_error(file, text, Some((&format!("tasks[{i}]"), r.get())), &e).problems,
                );
                continue;
            }
        };
        let at = match value.get("id").and_then(Value::as_str) {
            Some(id) => format!("tasks[{i}] (id {})", py::str_repr(id)),
            None => format!("tasks[{i}]"),
        };
        for (field, what) in [
            ("initial_state", "an initial state"),
            ("ticket", "a ticket"),
        ] {
            if value.get(field).is_some_and(|v| !v.is_null()) {
                problems.push(Problem::BadDeclaration {
                    at: format!("{at}.{field}"),
                    found: what.into(),
                    expected: "null (this module runs tasks from the database as it is)".into(),
                });
            }
        }
        if let Some(c) = value.get("evaluation_criteria")
            && c.get("env_assertions")
                .is_some_and(|v| !v.is_null() && v != &Value::Array(vec![]))
        {
            problems.push(Problem::BadDeclaration {
                at: format!("{at}.evaluation_criteria.env_assertions"),
                found: "environment assertions".into(),
                expected: "none (retail has none; this module does not run them)".into(),
            });
        }
        match serde_json::from_str::<Task>(r.get()) {
            Ok(t) => {
                if let Some(c) = &t.evaluation_criteria {
                    for (field, len) in [
                        ("actions", c.actions.as_ref().map_or(0, Vec::len)),
                        (
                            "nl_assertions",
                            c.nl_assertions.as_ref().map_or(0, Vec::len),
                        ),
                        (
                            "communicate_info",
                            c.communicate_info.as_ref().map_or(0, Vec::len),
                        ),
                    ] {
                        if len > MAX_TASK_LIST {
                            problems.push(Problem::BadDeclaration {
                                at: format!("{at}.evaluation_criteria.{field}"),
                                found: format!("{len} entries"),
                                expected: format!("at most {MAX_TASK_LIST}"),
                            });
                        }
                    }
                }
                if !ids.insert(t.id.clone()) {
                    problems.push(Problem::DuplicateId {
                        at: at.clone(),
                        id: t.id.clone(),
                        first: "an earlier task".into(),
                    });
                }
                tasks.push(t);
            }
            Err(e) => problems.extend(json_error(file, text, Some((&at, r.get())), &e).problems),
        }
    }
    if problems.is_empty() {
        Ok(tasks)
    } else {
        problems.truncate(20);
        Err(ScenarioError {
            file: file.into(),
            problems,
        })
    }
}

/// A serde_json error as a problem at its line and column in the whole file, naming the field
/// it is in (`orders['#W1'].address.zip: invalid type ...`); `record` is the label and text
/// (a slice of `text`) of the record it is in.
pub(crate) fn json_error(
    file: &str,
    text: &str,
    record: Option<(&str, &str)>,
    e: &serde_json::Error,
) -> ScenarioError {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full).to_string();
    let (line, column) = (e.line() as u64, e.column() as u64);
    let (label, slice) = record.unwrap_or(("", text));
    let path = path_at(slice, offset_of(slice, line, column));
    let at = format!("{label}{path}");
    let at = at.strip_prefix('.').unwrap_or(&at);
    let message = if at.is_empty() {
        message
    } else {
        format!("{at}: {message}")
    };
    // The record's text is a slice of the file: shift the position to the file's.
    let start = (slice.as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
    let before = text.get(..start).unwrap_or("");
    let start_line = before.matches('\n').count() as u64;
    let start_col = (before.len() - before.rfind('\n').map_or(0, |i| i + 1)) as u64;
    let (line, column) = if line <= 1 {
        (line + start_line, column + start_col)
    } else {
        (line + start_line, column)
    };
    ScenarioError::one(
        file,
        Problem::Syntax {
            line: line.max(1),
            column: column.max(1),
            message,
        },
    )
}

/// The byte offset of a 1-based line and column (serde_json counts bytes).
fn offset_of(text: &str, line: u64, column: u64) -> usize {
    let mut offset = 0;
    for (n, l) in text.split_inclusive('\n').enumerate() {
        if n as u64 + 1 == line {
            return (offset + column as usize).min(text.len());
        }
        offset += l.len();
    }
    text.len()
}

/// The path of the value at `offset` in a JSON text (`.variants['2'].price`), from a scan of
/// the text before it.
fn path_at(text: &str, offset: usize) -> String {
    enum Frame {
        Object {
            key: Option<String>,
            expect_key: bool,
        },
        Array(usize),
    }
    let b = text.as_bytes();
    let end = offset.min(b.len());
    let mut stack: Vec<Frame> = Vec::new();
    let mut pending: Option<String> = None;
    let mut i = 0;
    while i < end {
        match b[i] {
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                if let Some(Frame::Object {
                    expect_key: true, ..
                }) = stack.last()
                {
                    pending = text.get(i + 1..j.min(b.len())).map(str::to_string);
                }
                i = j + 1;
                continue;
            }
            b'{' => stack.push(Frame::Object {
                key: None,
                expect_key: true,
            }),
            b'[' => stack.push(Frame::Array(0)),
            b'}' | b']' => {
                stack.pop();
            }
            b':' => {
                if let Some(Frame::Object { key, expect_key }) = stack.last_mut() {
                    *key = pending.take();
                    *expect_key = false;
                }
            }
            b',' => match stack.last_mut() {
                Some(Frame::Array(n)) => *n += 1,
                Some(Frame::Object { key, expect_key }) => {
                    *key = None;
                    *expect_key = true;
                }
                None => {}
            },
            _ => {}
        }
        i += 1;
    }
    let mut out = String::new();
    for (depth, frame) in stack.iter().enumerate() {
        if depth == 16 {
            out.push_str("...");
            break;
        }
        match frame {
            Frame::Object { key: Some(k), .. } => {
                let ident = k
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if ident {
                    out.push('.');
                    out.push_str(k);
                } else {
                    out.push_str(&format!("[{}]", py::str_repr(k)));
                }
            }
            Frame::Array(n) => out.push_str(&format!("[{n}]")),
            Frame::Object { key: None, .. } => {}
        }
    }
    out
}
