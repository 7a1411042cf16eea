//! Cost budgets (`max_cost_usd` of a run and of a model under test, docs/run-config.md): what
//! the run's dialogues have cost against them, whether a new dialogue may start, and the
//! summary's `budget` section. A dialogue's cost is its record's
//! [`DialogueRecord::cost_usd`] (every call in it: agent, customer, judges), summed exactly, so
//! the spending depends only on the set of records, never on their order.

use super::stats::Money;
use crate::plan::RunConfig;
use crate::protocol::DialogueRecord;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The budgets of a run and what its dialogues have cost so far.
#[derive(Debug, Clone, Default)]
pub struct BudgetFold {
    /// The run's budget.
    limit: Option<f64>,
    /// What every dialogue folded cost.
    spent: Money,
    /// Per model under test, in `service_models` order.
    models: IndexMap<String, ModelSpend>,
}

/// One model under test's budget and spending.
#[derive(Debug, Clone, Default)]
struct ModelSpend {
    limit: Option<f64>,
    spent: Money,
    dialogues: usize,
}

/// Whether `spent` has reached `limit` (never without a limit).
fn reached(limit: Option<f64>, spent: Money) -> bool {
    reached_usd(limit, spent.usd())
}

/// [`reached`] of an amount in US dollars.
fn reached_usd(limit: Option<f64>, spent: f64) -> bool {
    limit.is_some_and(|l| spent >= l)
}

impl BudgetFold {
    /// The budgets of `config` (the run's `max_cost_usd`, each model under test's), nothing
    /// spent yet.
    pub fn new(config: &RunConfig) -> BudgetFold {
        BudgetFold {
            limit: config.max_cost_usd,
            spent: Money::default(),
            models: config
                .service_models
                .iter()
                .map(|name| {
                    let limit = config
                        .models
                        .iter()
                        .find(|m| &m.name == name)
                        .and_then(|m| m.max_cost_usd);
                    let spend = ModelSpend {
                        limit,
                        ..ModelSpend::default()
                    };
                    (name.clone(), spend)
                })
                .collect(),
        }
    }

    /// Whether any budget is set (the run's or a model's).
    pub fn is_set(&self) -> bool {
        self.limit.is_some() || self.models.values().any(|m| m.limit.is_some())
    }

    /// Adds a stored dialogue's cost (to the run's and to its agent's spending).
    pub fn add(&mut self, record: &DialogueRecord) {
        self.spent.add(record.cost_usd);
        let model = self
            .models
            .entry(record.job.service_model.clone())
            .or_default();
        model.spent.add(record.cost_usd);
        model.dialogues += 1;
    }

    /// Whether a new dialogue with `model` as the agent under test may start: neither the run's
    /// budget nor the model's is reached.
    pub fn admits(&self, model: &str) -> bool {
        !reached(self.limit, self.spent)
            && !self
                .models
                .get(model)
                .is_some_and(|m| reached(m.limit, m.spent))
    }

    /// The summary's `budget` section of a run of `jobs` dialogues (each model under test has
    /// the same share of them); `None` when no budget is set.
    pub fn summary(&self, jobs: usize) -> Option<BudgetSummary> {
        if !self.is_set() {
            return None;
        }
        let per_model = jobs.checked_div(self.models.len()).unwrap_or(0);
        let models: BTreeMap<String, ModelBudget> = self
            .models
            .iter()
            .map(|(name, m)| {
                let budget = ModelBudget {
                    max_cost_usd: m.limit,
                    spent_usd: m.spent.usd(),
                    reached: reached(m.limit, m.spent),
                    dialogues: m.dialogues,
                    not_started: per_model.saturating_sub(m.dialogues),
                };
                (name.clone(), budget)
            })
            .collect();
        Some(BudgetSummary {
            max_cost_usd: self.limit,
            spent_usd: self.spent.usd(),
            reached: reached(self.limit, self.spent),
            not_started: models.values().map(|m| m.not_started).sum(),
            models,
        })
    }
}

/// The cost budgets of a run and what was spent against them (summary.json's `budget`, present
/// only when a budget is set).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetSummary {
    /// The run's budget, US dollars (absent when only models have one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// What the stored dialogues cost, US dollars.
    pub spent_usd: f64,
    /// Whether the run's budget is reached.
    pub reached: bool,
    /// Dialogues of the run not stored: once the run has ended, those a budget kept from
    /// starting (a resume with a higher budget plays them).
    pub not_started: usize,
    /// Per model under test.
    pub models: BTreeMap<String, ModelBudget>,
}

/// One model under test's budget and spending.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelBudget {
    /// Its budget (its `max_cost_usd`), US dollars; absent when it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// What its stored dialogues cost (every call in them), US dollars.
    pub spent_usd: f64,
    /// Whether its budget is reached.
    pub reached: bool,
    /// Its stored dialogues.
    pub dialogues: usize,
    /// Its dialogues not stored.
    pub not_started: usize,
}

/// Dollars as the budget line writes them.
fn usd(x: f64) -> String {
    format!("${x:.4}")
}

/// A budget to resume with: what the whole (share of the) run would cost at the cost per
/// dialogue so far, rounded up to the cent, and more than `limit`.
fn suggested(spent: f64, dialogues: usize, jobs: usize, limit: f64) -> String {
    let estimate = if dialogues == 0 {
        0.0
    } else {
        spent / dialogues as f64 * jobs as f64
    };
    // Up to the cent, but not for the noise of a binary fraction (0.1 x 2 x 100 is not 20).
    let cents = (estimate * 100.0 - 1e-6).ceil() / 100.0;
    let z = if cents > limit { cents } else { limit * 2.0 };
    format!("{z:.2}")
}

impl BudgetSummary {
    /// Whether a reached budget (the run's, or a model's with dialogues left) kept dialogues
    /// from starting: not so for a run killed or still running with no budget reached.
    pub fn kept_some_from_starting(&self) -> bool {
        self.not_started > 0
            && (self.reached || self.models.values().any(|m| m.reached && m.not_started > 0))
    }

    /// Whether the budgets keep every dialogue not stored from starting: some are not stored,
    /// and the run's budget is reached, or each model with dialogues not stored has reached
    /// its own (the run has then ended, as far as budgets go).
    pub fn stops_the_rest(&self) -> bool {
        self.not_started > 0
            && (self.reached
                || self
                    .models
                    .values()
                    .all(|m| m.not_started == 0 || m.reached))
    }

    /// This spending under the budgets of `config` instead of its own, when they would still
    /// keep every dialogue not stored from starting (a resume with them would play nothing);
    /// `None` when they let some start.
    pub fn spent_under(&self, config: &crate::plan::RunConfig) -> Option<BudgetSummary> {
        let mut after = self.clone();
        after.max_cost_usd = config.max_cost_usd;
        after.reached = reached_usd(after.max_cost_usd, after.spent_usd);
        for (name, model) in &mut after.models {
            model.max_cost_usd = (config.models.iter())
                .find(|m| &m.name == name)
                .and_then(|m| m.max_cost_usd);
            model.reached = reached_usd(model.max_cost_usd, model.spent_usd);
        }
        after.stops_the_rest().then_some(after)
    }

    /// The line `sage run` prints at its end: `budget reached: spent $X of $Y (run) [model M:
    /// $x of $y]; N dialogues not started; resume with ...` when a budget kept dialogues from
    /// starting, else what was spent of which budget. `dir` is the run's folder.
    pub fn line(&self, dir: &std::path::Path) -> String {
        self.line_resumed_by(&format!("sage run --resume {}", dir.display()))
    }

    /// [`BudgetSummary::line`] for a run resumed by `command` (e.g. `sage sweep --resume ID`),
    /// which the flags to resume with follow.
    pub fn line_resumed_by(&self, command: &str) -> String {
        let mut parts = Vec::new();
        if let Some(limit) = self.max_cost_usd {
            parts.push(format!(
                "spent {} of {} (run)",
                usd(self.spent_usd),
                usd(limit)
            ));
        }
        for (name, m) in &self.models {
            if let Some(limit) = m.max_cost_usd {
                parts.push(format!(
                    "[model {name}: {} of {}]",
                    usd(m.spent_usd),
                    usd(limit)
                ));
            }
        }
        let spent = parts.join(" ");
        if self.not_started == 0 {
            return format!("budget: {spent}; every dialogue played");
        }
        if !self.kept_some_from_starting() {
            // Stopped or still running for another reason (killed, or a resume pending).
            return format!(
                "budget: {spent}; {} dialogues not played yet, no budget reached",
                self.not_started
            );
        }
        let mut flags = String::new();
        let dialogues: usize = self.models.values().map(|m| m.dialogues).sum();
        if let Some(limit) = self.max_cost_usd.filter(|_| self.reached) {
            let jobs = dialogues + self.not_started;
            let z = suggested(self.spent_usd, dialogues, jobs, limit);
            flags.push_str(&format!(" --max-cost-usd {z}"));
        }
        for (name, m) in &self.models {
            if let Some(limit) = m.max_cost_usd.filter(|_| m.reached) {
                let jobs = m.dialogues + m.not_started;
                let z = suggested(m.spent_usd, m.dialogues, jobs, limit);
                flags.push_str(&format!(" --max-cost-usd-per-model {name}={z}"));
            }
        }
        format!(
            "budget reached: {spent}; {} dialogues not started; resume with `{command}{flags}`",
            self.not_started,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(run: Option<f64>, a: Option<f64>) -> RunConfig {
        let mut config = RunConfig {
            service_models: vec!["sim-strong".into(), "sim-weak".into()],
            max_cost_usd: run,
            ..RunConfig::default()
        };
        config.models[0].max_cost_usd = a;
        config
    }

    use super::super::tests::bare_record as record;

    #[test]
    fn no_budget_admits_everything_and_has_no_section() {
        let mut fold = BudgetFold::new(&config(None, None));
        fold.add(&record("sim-strong", 1e6));
        assert!(fold.admits("sim-strong"));
        assert_eq!(fold.summary(10), None);
    }

    #[test]
    fn the_run_budget_stops_every_model_once_reached() {
        let mut fold = BudgetFold::new(&config(Some(0.5), None));
        fold.add(&record("sim-strong", 0.25));
        fold.add(&record("sim-weak", 0.2));
        assert!(fold.admits("sim-strong") && fold.admits("sim-weak"));
        fold.add(&record("sim-weak", 0.05));
        assert!(!fold.admits("sim-strong") && !fold.admits("sim-weak"));
        let s = fold.summary(8).unwrap();
        assert_eq!(s.max_cost_usd, Some(0.5));
        assert_eq!(s.spent_usd, 0.5);
        assert!(s.reached);
        assert_eq!(s.not_started, 5);
        assert_eq!(s.models["sim-strong"].not_started, 3);
        assert_eq!(s.models["sim-weak"].not_started, 2);
        assert_eq!(s.models["sim-weak"].spent_usd, 0.25);
        assert!(s.stops_the_rest());
        assert!(
            !fold.summary(3).unwrap().stops_the_rest(),
            "every dialogue stored"
        );
        assert_eq!(
            s.line(std::path::Path::new("results/r1")),
            "budget reached: spent $0.5000 of $0.5000 (run); 5 dialogues not started; resume with `sage run --resume results/r1 --max-cost-usd 1.34`"
        );
    }

    /// A run with a budget killed (or still running) before reaching it: nothing says the
    /// budget was reached.
    #[test]
    fn dialogues_not_stored_without_a_reached_budget_are_not_called_stopped() {
        let mut fold = BudgetFold::new(&config(Some(10.0), None));
        fold.add(&record("sim-strong", 0.1));
        let s = fold.summary(4).unwrap();
        assert!(!s.reached);
        assert_eq!(s.not_started, 3);
        assert!(!s.kept_some_from_starting());
        assert!(!s.stops_the_rest());
        let line = s.line(std::path::Path::new("d"));
        assert!(
            line.starts_with("budget: spent $0.1000 of $10.0000"),
            "{line}"
        );
        assert!(
            line.ends_with("; 3 dialogues not played yet, no budget reached"),
            "{line}"
        );
    }

    #[test]
    fn a_model_budget_stops_that_model_only() {
        let mut fold = BudgetFold::new(&config(None, Some(0.1)));
        fold.add(&record("sim-strong", 0.1));
        fold.add(&record("sim-weak", 0.3));
        assert!(!fold.admits("sim-strong"));
        assert!(fold.admits("sim-weak"));
        let s = fold.summary(4).unwrap();
        assert_eq!(s.max_cost_usd, None);
        assert!(!s.reached);
        assert!(s.models["sim-strong"].reached);
        assert!(!s.models["sim-weak"].reached);
        assert_eq!(
            s.line(std::path::Path::new("d")),
            "budget reached: [model sim-strong: $0.1000 of $0.1000]; 2 dialogues not started; resume with `sage run --resume d --max-cost-usd-per-model sim-strong=0.20`"
        );
        assert!(!s.stops_the_rest(), "sim-weak has dialogues to play");
        fold.add(&record("sim-weak", 0.1));
        assert!(fold.summary(4).unwrap().stops_the_rest());
        let all = fold.summary(2).unwrap();
        assert_eq!(
            all.line(std::path::Path::new("d")),
            "budget: [model sim-strong: $0.1000 of $0.1000]; every dialogue played"
        );
    }
}
