//! Grading a run as tau2's evaluator does: the database check (the agent's calls replayed on a
//! fresh database against the task's gold actions replayed on another) and the reward over the
//! task's reward basis.

use super::db::Db;
use super::tasks::{RewardPart, Task};
use super::tools;
use crate::scenario::ScenarioError;
use serde_json::Value;

/// The result of the database check (tau2's `DBCheck`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DbCheck {
    /// Whether the two databases are equal (tau2's `get_db_hash` equality).
    pub db_match: bool,
    /// 1 when they match, else 0.
    pub db_reward: f64,
}

/// One tool call of the agent: the tool's name and its arguments (a JSON object).
pub type AgentCall = (String, Value);

/// Replays the agent's calls on a copy of `fresh` as tau2's `set_state` does: unknown tools
/// and tools that do not mutate are skipped, the others run (an error changes what the tool
/// changed before it failed, as in Python).
pub fn replay_agent(fresh: &Db, calls: &[AgentCall]) -> Db {
    let mut db = fresh.clone();
    for (name, arguments) in calls {
        if tools::is_mutating(name) {
            tools::call(&mut db, name, arguments);
        }
    }
    db
}

/// Replays a task's gold actions on a copy of `fresh`, ignoring errors as tau2 does; returns
/// the database and how many actions answered with an error. Actions requested by the user
/// fail in retail (it has no user tools) and change nothing.
pub fn replay_gold(fresh: &Db, task: &Task) -> (Db, usize) {
    let mut db = fresh.clone();
    let mut errors = 0;
    for action in task.gold_actions() {
        let failed = if action.requestor == "assistant" {
            let arguments = Value::Object(action.arguments.clone());
            tools::call(&mut db, &action.name, &arguments).error
        } else {
            true
        };
        errors += usize::from(failed);
    }
    (db, errors)
}

/// The database check: the agent's calls replayed on one fresh database, the gold actions on
/// another, then compared as tau2 compares them (the whole database). A task without
/// evaluation criteria or gold actions passes.
pub fn db_check(fresh: &Db, task: &Task, agent_calls: &[AgentCall]) -> DbCheck {
    let has_actions = task
        .evaluation_criteria
        .as_ref()
        .is_some_and(|c| c.actions.is_some());
    let db_match = !has_actions || {
        let agent = replay_agent(fresh, agent_calls);
        let (gold, _) = replay_gold(fresh, task);
        agent.same_state(&gold)
    };
    DbCheck {
        db_match,
        db_reward: if db_match { 1.0 } else { 0.0 },
    }
}

/// [`db_check`] from db.json text (parsed once here; `file` labels errors).
pub fn db_check_text(
    db_text: &str,
    file: &str,
    task: &Task,
    agent_calls: &[AgentCall],
) -> Result<DbCheck, ScenarioError> {
    let fresh = Db::from_json(db_text, file)?;
    Ok(db_check(&fresh, task, agent_calls))
}

/// tau2's COMMUNICATE check: every `communicate_info` string appears, case-insensitively, in
/// some message of the agent once its commas are removed.
pub fn communicate_met(task: &Task, agent_messages: &[&str]) -> bool {
    let messages: Vec<String> = agent_messages
        .iter()
        .map(|m| m.to_lowercase().replace(',', ""))
        .collect();
    task.communicate_info().iter().all(|info| {
        let info = info.to_lowercase();
        messages.iter().any(|m| m.contains(&info))
    })
}

/// tau2's ACTION check: every gold action is matched by some call of the agent
/// (`Action.compare_with_tool_call`).
pub fn actions_met(task: &Task, agent_calls: &[AgentCall]) -> bool {
    task.gold_actions().iter().all(|action| {
        agent_calls.iter().any(|(name, arguments)| match arguments {
            Value::Object(args) => action.matches(name, args),
            _ => false,
        })
    })
}

/// The parts of the reward that need a judge or the conversation, supplied by the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RewardInputs {
    /// Whether the run ended normally (the agent or the user stopped). tau2 gives 0 to any
    /// other ending (too many turns, errors) before looking at anything else.
    pub completed: bool,
    /// Whether every NL assertion was judged met; needed when NL_ASSERTION is in the basis
    /// and the task has assertions.
    pub nl_assertions_met: Option<bool>,
    /// Whether every `communicate_info` string was said (see [`communicate_met`]); needed
    /// when COMMUNICATE is in the basis and the task has such strings.
    pub communicate_met: Option<bool>,
}

/// A reward and how it was made.
#[derive(Debug, Clone, PartialEq)]
pub struct Reward {
    /// 1 when every part of the basis passes, else 0.
    pub reward: f64,
    /// The database check, when it ran.
    pub db_check: Option<DbCheck>,
    /// The reward of each part of the basis that was evaluated.
    pub breakdown: Vec<(RewardPart, f64)>,
}

/// A reward that cannot be computed without an input the caller did not give.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RewardError {
    /// The basis holds a part that needs the caller's judgment, and it was not supplied.
    #[error(
        "task {task}: the reward basis holds {part:?} and the task has checks for it; expected RewardInputs to supply its result"
    )]
    MissingInput {
        /// The part.
        part: RewardPart,
        /// The task's id.
        task: String,
    },
}

/// The reward of a run as tau2's `evaluate_simulation` gives it with the `ALL` evaluation:
/// 0 for a run that did not end normally; 1 for a task without criteria; otherwise the
/// product of the rewards of the parts in the task's basis: DB (the database check),
/// ENV_ASSERTION (1: retail has none), ACTION ([`actions_met`]), COMMUNICATE and NL_ASSERTION
/// (from `inputs`, 1 when the task has nothing to check for them).
pub fn reward(
    fresh: &Db,
    task: &Task,
    agent_calls: &[AgentCall],
    inputs: &RewardInputs,
) -> Result<Reward, RewardError> {
    reward_with(
        || db_check(fresh, task, agent_calls),
        task,
        agent_calls,
        inputs,
    )
}

/// [`reward`] with the database check given (made only when the run ended normally): a caller
/// that has made it already does not replay the database again.
pub fn reward_with(
    check: impl FnOnce() -> DbCheck,
    task: &Task,
    agent_calls: &[AgentCall],
    inputs: &RewardInputs,
) -> Result<Reward, RewardError> {
    if !inputs.completed {
        return Ok(Reward {
            reward: 0.0,
            db_check: None,
            breakdown: Vec::new(),
        });
    }
    if task.evaluation_criteria.is_none() {
        return Ok(Reward {
            reward: 1.0,
            db_check: None,
            breakdown: Vec::new(),
        });
    }
    let basis = task.reward_basis();
    let missing = |part| RewardError::MissingInput {
        part,
        task: task.id.clone(),
    };
    let check = check();
    let mut breakdown = Vec::new();
    let mut total = 1.0;
    for part in [
        RewardPart::Db,
        RewardPart::EnvAssertion,
        RewardPart::Action,
        RewardPart::NlAssertion,
        RewardPart::Communicate,
    ] {
        if !basis.contains(&part) {
            continue;
        }
        let r = match part {
            RewardPart::Db => check.db_reward,
            RewardPart::EnvAssertion => 1.0,
            RewardPart::Action => f64::from(u8::from(actions_met(task, agent_calls))),
            RewardPart::NlAssertion => {
                if task.nl_assertions().is_empty() {
                    1.0
                } else {
                    let met = inputs.nl_assertions_met.ok_or_else(|| missing(part))?;
                    f64::from(u8::from(met))
                }
            }
            RewardPart::Communicate => {
                if task.communicate_info().is_empty() {
                    1.0
                } else {
                    let met = inputs.communicate_met.ok_or_else(|| missing(part))?;
                    f64::from(u8::from(met))
                }
            }
        };
        breakdown.push((part, r));
        total *= r;
    }
    Ok(Reward {
        reward: total,
        db_check: Some(check),
        breakdown,
    })
}
