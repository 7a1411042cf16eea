//! The SAGE paper's formulas (eqs. 5-9), aggregation and statistics. Pure: plain functions and
//! serde types, no I/O. See docs/metrics-scoring.md for every number and its formula.
//!
//! * [`turn`]: one turn's scores ([`score_turn`], [`score_record`]).
//! * [`summary`]: a run's records folded into a [`Summary`] ([`summarize`]).
//! * [`stats`]: means with seeded cluster-bootstrap intervals ([`Metric`], [`Bootstrap`]).
//! * [`leaderboard`]: the summary as Markdown tables and a terminal table.
//! * [`unpaired`]: two runs' scores compared without pairing (a stratified bootstrap).
//! * [`budget`]: cost budgets, what was spent against them ([`budget::BudgetFold`]).

pub mod adaptive;
pub mod budget;
pub mod calibration;
pub mod desk;
pub mod fidelity;
pub mod labels;
pub mod leaderboard;
pub mod rejudge;
pub mod rescore;
pub mod sensitivity;
pub mod stats;
pub mod summary;
pub mod turn;
pub mod unpaired;

pub use leaderboard::{leaderboard_markdown, leaderboard_text};
pub use stats::{Bootstrap, Metric};
pub use summary::{GroupStats, ModelSummary, Summary, SummaryFold, summarize};
pub use turn::{Answer, Finals, LogicParts, score_record, score_turn};

#[cfg(test)]
mod tests;
