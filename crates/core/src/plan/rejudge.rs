//! The judge panel of `sage rejudge` (JUDGES.yaml, docs/judges.md): the judge models, and
//! optionally the turns they judge, the dialogues in flight and a cost budget. Applied to a
//! stored run's configuration, it gives the configuration of the new run (the same dialogues,
//! judged by the new panel).

use super::config::{ConfigError, RunConfig};
use super::model::ModelConfig;
use crate::protocol::JudgeTurns;
use serde::{Deserialize, Serialize};

/// JUDGES.yaml.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RejudgeConfig {
    /// The judge models (declared as in run.yaml). A model of the stored run with the same
    /// name is replaced by this one.
    pub models: Vec<ModelConfig>,
    /// The new panel: 1, 3 or 5 names from `models`.
    pub judge_models: Vec<String>,
    /// The turns judged; the stored run's when absent.
    #[serde(default)]
    pub judge_turns: Option<JudgeTurns>,
    /// Most dialogues judged at a time; the stored run's `concurrency` when absent.
    #[serde(default)]
    pub concurrency: Option<usize>,
    /// The most, in US dollars, the new judges' calls may cost: once they have, no further
    /// dialogue is judged (those in flight finish) and the rest waits for a resume.
    #[serde(default)]
    pub max_cost_usd: Option<f64>,
}

impl RejudgeConfig {
    /// Parses JUDGES.yaml text (`file` labels errors) and checks what it can alone: its models,
    /// names, panel size and budget. [`RejudgeConfig::apply`] checks the rest.
    pub fn from_yaml(text: &str, file: &str) -> Result<RejudgeConfig, ConfigError> {
        super::config::refuse_empty(text, file, "a judge panel (docs/judges.md)")?;
        let config: RejudgeConfig = serde_saphyr::from_str(text).map_err(|e| ConfigError {
            file: file.into(),
            problem: e.to_string(),
        })?;
        let err = |problem: String| ConfigError {
            file: file.into(),
            problem,
        };
        for m in &config.models {
            if !config.judge_models.contains(&m.name) {
                return Err(err(format!(
                    "models: `{}` is not in judge_models; expected only the panel's models (rejudge calls judges only)",
                    m.name
                )));
            }
        }
        if let Some(usd) = config.max_cost_usd {
            super::model::cost_budget("max_cost_usd", usd).map_err(err)?;
        }
        if config.concurrency == Some(0) {
            return Err(err("concurrency: 0; expected at least 1".into()));
        }
        Ok(config)
    }

    /// The stored run's configuration `run` with this panel: its models (the panel's replacing
    /// those of the same name), judges, judged turns and concurrency. Checked as a run is
    /// (`file` labels errors): the panel's size, its models' kinds, the judged turns.
    pub fn apply(&self, run: &RunConfig, file: &str) -> Result<RunConfig, ConfigError> {
        let mut merged = run.clone();
        merged
            .models
            .retain(|m| !self.models.iter().any(|n| n.name == m.name));
        merged.models.extend(self.models.iter().cloned());
        merged.judge_models = self.judge_models.clone();
        if let Some(turns) = &self.judge_turns {
            merged.judge_turns = turns.clone();
        }
        if let Some(n) = self.concurrency {
            merged.concurrency = n;
        }
        merged.check(file)?;
        Ok(merged)
    }

    /// The panel's model declarations, as the merged configuration has them.
    pub fn judges<'a>(&self, merged: &'a RunConfig) -> Vec<&'a ModelConfig> {
        merged
            .models
            .iter()
            .filter(|m| self.judge_models.contains(&m.name))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PANEL: &str = "models:
  - {name: new-judge, provider: simulated, sim: {kind: judge, noise: 0.2}}
judge_models: [new-judge]
judge_turns: every
";

    #[test]
    fn a_panel_replaces_the_runs_judges_and_keeps_its_agents_and_customer() {
        let run = RunConfig::default();
        let panel = RejudgeConfig::from_yaml(PANEL, "judges.yaml").expect("a panel");
        let merged = panel.apply(&run, "judges.yaml").expect("applies");
        assert_eq!(merged.judge_models, vec!["new-judge".to_string()]);
        assert_eq!(merged.judge_turns, JudgeTurns::Every);
        assert_eq!(merged.service_models, run.service_models);
        assert_eq!(merged.user_model, run.user_model);
        assert_eq!(merged.models.len(), run.models.len() + 1);
        assert_eq!(panel.judges(&merged).len(), 1);
    }

    #[test]
    fn a_bad_panel_is_refused_naming_the_file_and_the_field() {
        let even = PANEL
            .replace(
                "judge_models: [new-judge]",
                "judge_models: [new-judge, sim-judge-1]",
            )
            .replace("judge_turns: every\n", "");
        let panel = RejudgeConfig::from_yaml(&even, "judges.yaml").expect("parses");
        let e = panel
            .apply(&RunConfig::default(), "judges.yaml")
            .expect_err("two judges");
        assert!(e.to_string().contains("judges.yaml") && e.to_string().contains("judge_models"));
        let agent = "models:\n  - {name: other, provider: simulated, sim: {kind: agent}}\njudge_models: [other]\n";
        let e = RejudgeConfig::from_yaml(agent, "judges.yaml")
            .expect("parses")
            .apply(&RunConfig::default(), "judges.yaml")
            .expect_err("an agent cannot judge");
        assert!(e.to_string().contains("kind `agent`"), "{e}");
        let stray = PANEL.replace("judge_models: [new-judge]", "judge_models: [sim-judge-1]");
        let e = RejudgeConfig::from_yaml(&stray, "judges.yaml").expect_err("unused model");
        assert!(e.to_string().contains("not in judge_models"), "{e}");
    }
}
