//! tau2-bench's results format (`Results`: info, tasks, simulations), so tau2's own tools load
//! a SAGE-RS run and grade it again (`tau2 evaluate-trajs`): every simulation's messages with
//! their tool calls and the tools' answers as tau2's tools give them, its termination reason and
//! its reward_info with the database check.

use super::run::{POLICY, TASKS_JSON, Tau2Config, Tau2Message, Tau2Record};
use serde_json::{Value, json};

/// tau2's `info` of a run of `config`.
pub fn info(config: &Tau2Config) -> Value {
    let llm = |name: &str| -> Value {
        config
            .models
            .iter()
            .find(|m| m.name == name)
            .map(|m| Value::String(m.model.clone().unwrap_or_else(|| m.name.clone())))
            .unwrap_or(Value::Null)
    };
    json!({
        "git_commit": "",
        "num_trials": config.repeats,
        "max_steps": config.max_turns,
        "max_errors": 10,
        "user_info": {
            "implementation": "user_simulator",
            "llm": llm(&config.customer_model),
            "llm_args": {},
            "global_simulation_guidelines": null,
        },
        "agent_info": {
            "implementation": "llm_agent",
            "llm": config.agents.first().map(|a| llm(a)).unwrap_or(Value::Null),
            "llm_args": {},
        },
        "environment_info": {
            "domain_name": "retail",
            "policy": POLICY,
            "tool_defs": null,
        },
        "seed": config.seed,
    })
}

/// The tasks `ids` as tasks.json holds them (every field kept), in its order.
pub fn tasks(ids: &[String]) -> Vec<Value> {
    let all: Vec<Value> = serde_json::from_str(TASKS_JSON).unwrap_or_default();
    all.into_iter()
        .filter(|t| {
            t.get("id")
                .and_then(Value::as_str)
                .is_some_and(|id| ids.is_empty() || ids.iter().any(|i| i == id))
        })
        .collect()
}

/// One message in tau2's shape; `index` is its position (tau2's `turn_idx`).
fn message(m: &Tau2Message, index: usize) -> Value {
    match m.role.as_str() {
        "tool" => json!({
            "id": m.tool_call_id.clone().unwrap_or_default(),
            "role": "tool",
            "content": m.content,
            "requestor": "assistant",
            "error": m.error,
            "turn_idx": index,
        }),
        role => {
            let calls: Vec<Value> = m
                .tool_calls
                .iter()
                .map(|c| {
                    json!({
                        "id": c.id,
                        "name": c.name,
                        // tau2's ToolCall takes a dict: arguments that were not a JSON object
                        // are kept under one key, so the replay meets the same error.
                        "arguments": match &c.arguments {
                            Value::Object(_) => c.arguments.clone(),
                            other => json!({"arguments": other}),
                        },
                        "requestor": "assistant",
                    })
                })
                .collect();
            json!({
                "role": role,
                "content": m.content,
                "tool_calls": if calls.is_empty() { Value::Null } else { Value::Array(calls) },
                "turn_idx": index,
            })
        }
    }
}

/// One simulation in tau2's `SimulationRun` shape.
pub fn simulation(record: &Tau2Record, basis: &[super::RewardPart]) -> Value {
    let user_cost: f64 = record
        .calls
        .iter()
        .filter(|c| c.model == record.job.customer_model)
        .map(|c| c.cost_usd)
        .sum();
    let reward_info = match &record.reward {
        Some(r) => json!({
            "reward": r.reward,
            "db_check": r.db_match.map(|m| json!({
                "db_match": m,
                "db_reward": if m { 1.0 } else { 0.0 },
            })),
            "nl_assertions": if r.nl_assertions.is_empty() { Value::Null } else {
                Value::Array(r.nl_assertions.iter().map(|c| json!({
                    "nl_assertion": c.assertion,
                    "met": c.met,
                    "justification": c.justification,
                })).collect())
            },
            "reward_basis": basis,
            "reward_breakdown": if r.breakdown.is_empty() { Value::Null } else { json!(r.breakdown) },
            "info": null,
        }),
        None => json!({
            "reward": 0.0,
            "info": {"note": format!(
                "Simulation terminated prematurely. Termination reason: {}",
                record.termination.as_str()
            )},
        }),
    };
    json!({
        "id": record.job.dialogue_id,
        "task_id": record.job.task,
        "timestamp": "",
        "start_time": "",
        "end_time": "",
        "duration": 0.0,
        "termination_reason": record.termination.as_str(),
        "agent_cost": record.cost_usd,
        "user_cost": user_cost,
        "reward_info": reward_info,
        "messages": record
            .messages
            .iter()
            .enumerate()
            .map(|(i, m)| message(m, i))
            .collect::<Vec<_>>(),
        "trial": record.job.trial,
        "seed": record.job.seed,
    })
}
