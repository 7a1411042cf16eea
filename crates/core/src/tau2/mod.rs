//! The retail domain of tau2-bench (sierra-research/tau2-bench, commit a2c0247, MIT; the data
//! is shipped in `scenarios/tau2-retail/`), pure: the database, the tasks, the 16 tools and
//! the grading, each taking text and values, none doing I/O.
//!
//! * [`Db`]: the database from db.json text, serializing as tau2's pydantic models do.
//! * [`parse_tasks`]: the 114 tasks from tasks.json text.
//! * [`TOOLS`] and [`call`]: the tools as the model sees them, and their answers, equal to
//!   tau2's `Environment.get_response` (content and `Error: ...` messages), checked against
//!   answers recorded from tau2's own code (`golden.json`, made by
//!   `scenarios/tau2-retail/golden.py`).
//! * [`db_check`] and [`reward`]: tau2's database check and reward.
//!
//! ```
//! use sage_core::tau2::{self, Db};
//! use serde_json::json;
//!
//! let db = Db::from_json(r#"{"products": {}, "users": {}, "orders": {}}"#, "db.json").unwrap();
//! let mut db = db;
//! let out = tau2::call(&mut db, "get_order_details", &json!({"order_id": "#W0000000"}));
//! assert_eq!(out.content, "Error: Order not found");
//! assert!(out.error);
//! let out = tau2::call(&mut db, "calculate", &json!({"expression": "(19.99 + 5) * 2"}));
//! assert_eq!(out.content, "49.98");
//! ```
#![warn(missing_docs)]

mod bigint;
mod calc;
pub mod db;
pub mod export;
pub mod grade;
pub mod py;
pub mod run;
pub mod tasks;
pub mod tools;

pub use db::Db;
pub use grade::{
    AgentCall, DbCheck, Reward, RewardError, RewardInputs, actions_met, communicate_met, db_check,
    db_check_text, replay_agent, replay_gold, reward, reward_with,
};
pub use tasks::{Action, RewardPart, Task, parse_tasks};
pub use tools::{TOOLS, ToolKind, ToolOutput, ToolSpec, call, is_mutating, tool, tools};

#[cfg(test)]
mod tests;
