//! The support-desk suite's configuration (`sage run --suite support-desk [--config desk.yaml]`,
//! docs/support-desk.md). With no file: the bundled Northline store against three simulated
//! agents of different judgment, the simulated customer and two simulated judges.

use super::model::{DeskSkills, ModelConfig, SimSpec};
use crate::protocol::desk::DeskJob;
use crate::scenario::desk::Desk;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One support-desk run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DeskConfig {
    /// Every model endpoint (agents under test, the customer, the judges).
    pub models: Vec<ModelConfig>,
    /// The agents under test (names from `models`).
    pub agents: Vec<String>,
    /// The customer simulator.
    pub customer_model: String,
    /// The primary judge and the second judge that re-judges every run.
    pub judge_models: Vec<String>,
    /// The store folder (store.yaml and cases.yaml), or `bundled` for Northline.
    pub store: String,
    /// Runs of each case (medians across runs are published).
    pub repeats: u32,
    /// Most customer turns per conversation.
    pub max_turns: u32,
    /// Run seed.
    pub seed: u64,
    /// Conversations in flight.
    pub concurrency: usize,
    /// Where results/<run-id>/ goes.
    pub output_dir: PathBuf,
}

use super::config::simulated;

impl Default for DeskConfig {
    fn default() -> Self {
        let agent =
            |unsafe_propensity: f64, resolve: f64, over_escalation: f64| SimSpec::DeskAgent {
                skills: DeskSkills {
                    unsafe_propensity,
                    resolve,
                    over_escalation,
                    ..DeskSkills::default()
                },
                latency: None,
            };
        DeskConfig {
            models: vec![
                // Chances per turn; a trap sees up to seven pushes.
                simulated("sim-desk-careful", agent(0.005, 0.85, 0.03)),
                simulated("sim-desk-cautious", agent(0.0, 0.5, 0.3)),
                simulated("sim-desk-reckless", agent(0.15, 0.9, 0.0)),
                simulated("sim-customer", SimSpec::DeskCustomer { latency: None }),
                simulated(
                    "sim-desk-judge-1",
                    SimSpec::DeskJudge {
                        noise: 0.0,
                        latency: None,
                    },
                ),
                simulated(
                    "sim-desk-judge-2",
                    SimSpec::DeskJudge {
                        noise: 0.05,
                        latency: None,
                    },
                ),
            ],
            agents: vec![
                "sim-desk-careful".into(),
                "sim-desk-cautious".into(),
                "sim-desk-reckless".into(),
            ],
            customer_model: "sim-customer".into(),
            judge_models: vec!["sim-desk-judge-1".into(), "sim-desk-judge-2".into()],
            store: "bundled".into(),
            repeats: 3,
            max_turns: 8,
            seed: 42,
            concurrency: 64,
            output_dir: PathBuf::from("results"),
        }
    }
}

impl DeskConfig {
    /// Reads a configuration; `file` labels errors.
    pub fn from_yaml(text: &str, file: &str) -> Result<DeskConfig, super::config::ConfigError> {
        let config: DeskConfig = super::config::parse_yaml(
            text,
            file,
            "a support-desk configuration (docs/support-desk.md)",
        )?;
        config.check(file)?;
        Ok(config)
    }

    /// Every model the run calls: the agents, the customer and the judges.
    pub fn model_names(&self) -> Vec<&str> {
        self.agents
            .iter()
            .chain(std::iter::once(&self.customer_model))
            .chain(&self.judge_models)
            .map(String::as_str)
            .collect()
    }

    /// Checks that every model named is configured and the numbers make sense.
    pub fn check(&self, file: &str) -> Result<(), super::config::ConfigError> {
        let err = |problem: String| super::config::ConfigError {
            file: file.to_string(),
            problem,
        };
        super::config::declared_models(&self.models, &self.model_names(), |model| {
            match model.max_cost_usd {
                Some(_) => Err(format!(
                    "model {}: max_cost_usd is not enforced by the support desk; expected it only in a SAGE run configuration",
                    model.name
                )),
                None => Ok(()),
            }
        })
        .map_err(err)?;
        if self.agents.is_empty() {
            return Err(err(
                "`agents` is empty; expected at least one model under test".into(),
            ));
        }
        if self.judge_models.len() != 2 {
            return Err(err(format!(
                "`judge_models` has {} entries; expected two (the judge and the second judge)",
                self.judge_models.len()
            )));
        }
        use super::config::{MAX_CONCURRENCY, MAX_REPEATS, MAX_TURNS};
        super::config::within(&[
            ("repeats", u64::from(self.repeats), u64::from(MAX_REPEATS)),
            ("max_turns", u64::from(self.max_turns), u64::from(MAX_TURNS)),
            (
                "concurrency",
                self.concurrency as u64,
                MAX_CONCURRENCY as u64,
            ),
        ])
        .map_err(err)
    }
}

/// Most model calls of the agent in one turn: its tool rounds against the store, then its
/// answer to the customer.
pub const MAX_ROUNDS: u32 = 6;

/// The jobs of a support-desk run: every case with every agent, `repeats` times, in that order.
/// A run of a case has the same seed for every agent (the same customer: a paired comparison).
pub fn jobs(config: &DeskConfig, run_id: &str, desk: &Desk) -> Vec<DeskJob> {
    let mut jobs = Vec::with_capacity(config.agents.len() * desk.cases.len());
    for model in &config.agents {
        for case in &desk.cases {
            for repeat in 0..config.repeats {
                jobs.push(DeskJob {
                    run_id: run_id.to_string(),
                    dialogue_id: format!("{}/{model}/r{repeat}", case.id),
                    case: case.id.clone(),
                    model: model.clone(),
                    customer_model: config.customer_model.clone(),
                    judge_models: config.judge_models.clone(),
                    repeat,
                    max_turns: config.max_turns,
                    seed: super::derive_seed((config.seed, &case.id, repeat)),
                });
            }
        }
    }
    jobs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cost_budget_is_refused_on_a_desk_model() {
        let mut config = DeskConfig::default();
        config.models[0].max_cost_usd = Some(1.0);
        let name = config.models[0].name.clone();
        assert_eq!(
            config.check("desk.yaml").unwrap_err().problem,
            format!(
                "model {name}: max_cost_usd is not enforced by the support desk; expected it only in a SAGE run configuration"
            )
        );
    }
}
