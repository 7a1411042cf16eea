//! The run configuration (`sage run --config run.yaml`, documented in docs/run-config.md). With
//! no file, [`RunConfig::default`] is the embedded run: the bundled scenarios, three simulated
//! agent profiles, a simulated customer and three simulated judges.

use super::model::{ModelConfig, Provider, SimSpec, SkillOverrides};
use crate::protocol::JudgeTurns;
use crate::scenario::Adversarial;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Most turns a dialogue may be given.
pub const MAX_TURNS: u32 = 1000;
/// Most cases per scenario (`dialogues_per_scenario`).
pub const MAX_DIALOGUES_PER_SCENARIO: usize = 1_000_000;
/// Most cases per route (`min_per_route`).
pub const MAX_MIN_PER_ROUTE: usize = 10_000;
/// Most runs of each case (`repeats`).
pub const MAX_REPEATS: u32 = 100;
/// Most dialogues in flight (`concurrency`).
pub const MAX_CONCURRENCY: usize = 100_000;
/// Most attempts at a user or judge answer (`content_attempts`).
pub const MAX_CONTENT_ATTEMPTS: u32 = 10;
/// Most models, and most scenario entries, in one configuration.
pub const MAX_LIST: usize = 1000;
/// Most dialogue jobs in one run (cases x models x repeats over every scenario): the jobs are
/// planned in memory, about a kilobyte each.
pub const MAX_JOBS: u64 = 2_000_000;

/// Most customer simulators in one run (`user_models`): each plays every case again.
pub use crate::protocol::simulator::MAX_USER_MODELS;

/// The judge panel sizes allowed: odd, so that a majority vote per field has a winner.
pub const JUDGE_PANEL_SIZES: [usize; 3] = [1, 3, 5];

/// One run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunConfig {
    /// Every model endpoint the run uses (agents under test, the user simulator, the judges).
    pub models: Vec<ModelConfig>,
    /// The models under test (names from `models`).
    pub service_models: Vec<String>,
    /// The user-simulator model (with `user_models`, the first of them).
    pub user_model: String,
    /// Several customer simulators (at most [`MAX_USER_MODELS`]): every case is played with
    /// each, under the same seed, and summary.json's `simulator_sensitivity` gives each model's
    /// OA under each (docs/run-config.md, "Several customer simulators"). The leaderboard ranks
    /// under the first, which is the run's `user_model`. Empty (left out of manifest.json)
    /// for a run with one simulator.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub user_models: Vec<String>,
    /// The judge models: an odd panel of [`JUDGE_PANEL_SIZES`] (majority vote per field).
    pub judge_models: Vec<String>,
    /// Which turns the judges score: `paper` (turns 1, 5, 10, 15 and each dialogue's final
    /// turn; the default), `every`, or a list of turn numbers.
    pub judge_turns: JudgeTurns,
    /// Scenario files, or `bundled` for the six SAGE scenarios.
    pub scenarios: Vec<String>,
    /// Intent-balanced cases per scenario (each run against every model under test).
    pub dialogues_per_scenario: usize,
    /// Every route gets at least this many cases (supplemented by inverse configuration).
    pub min_per_route: usize,
    /// Adversarial levels to run (cases of other levels are left out).
    pub adversarial_levels: Vec<Adversarial>,
    /// Most user turns per dialogue.
    pub max_turns: u32,
    /// Runs of each case (medians across repeats are reported when > 1).
    pub repeats: u32,
    /// The run seed: same seed and configuration, same results.
    pub seed: u64,
    /// Most dialogues in flight.
    pub concurrency: usize,
    /// Where results/<run-id>/ folders go.
    pub output_dir: PathBuf,
    /// The opt-in response cache (content-addressed); none when absent.
    pub cache_dir: Option<PathBuf>,
    /// Attempts at a user or judge reply that is empty, unparsable or a refusal.
    pub content_attempts: u32,
    /// Keep every model request's full messages in dialogues.jsonl (large); by default only
    /// their SHA-256 (prompts are rendered again from the scenario, the job and the history).
    pub record_prompts: bool,
    /// The most, in US dollars, the run's dialogues may cost (every call in them, by
    /// [`crate::protocol::DialogueRecord::cost_usd`]): once they have, no new dialogue starts,
    /// those in flight finish and are kept, and the run can be resumed with a higher budget
    /// (docs/run-config.md, "Cost budgets"). None when absent (left out of manifest.json).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// Ask the customer model once more when its line is off-script by the cheap check
    /// ([`crate::scoring::fidelity::off_script`]: empty, a repeat of an earlier customer line
    /// of the dialogue, or the agent's words); the second answer is played and the first is
    /// kept in the turn's `customer_retry` (docs/run-config.md, "Customer guard"). Off by
    /// default (left out of manifest.json when off).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub customer_guard: bool,
    /// An adaptive run (`sage run --adaptive`): the K of the top K a model stops getting cases
    /// at, once it is surely in or surely out of it (docs/run-config.md, "Adaptive runs").
    /// None when absent (left out of manifest.json).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adaptive_top: Option<usize>,
}

/// A simulated model of this name.
pub(crate) fn simulated(name: &str, sim: SimSpec) -> ModelConfig {
    ModelConfig {
        sim: Some(sim),
        ..ModelConfig::new(name, Provider::Simulated)
    }
}

impl Default for RunConfig {
    fn default() -> Self {
        let agent = |profile: &str| SimSpec::Agent {
            profile: profile.into(),
            skills: SkillOverrides::default(),
            latency: None,
            fail_turns: Vec::new(),
        };
        let judge = |noise: f64| SimSpec::Judge {
            noise,
            latency: None,
            garbage_rate: 0.0,
        };
        RunConfig {
            models: vec![
                simulated("sim-strong", agent("strong")),
                simulated("sim-balanced", agent("balanced")),
                simulated("sim-weak", agent("weak")),
                simulated(
                    "sim-user",
                    SimSpec::User {
                        latency: None,
                        empty_rate: 0.0,
                        off_case_rate: 0.0,
                    },
                ),
                simulated("sim-judge-1", judge(0.0)),
                simulated("sim-judge-2", judge(0.03)),
                simulated("sim-judge-3", judge(0.06)),
            ],
            service_models: vec![
                "sim-strong".into(),
                "sim-balanced".into(),
                "sim-weak".into(),
            ],
            user_model: "sim-user".into(),
            user_models: Vec::new(),
            judge_models: vec![
                "sim-judge-1".into(),
                "sim-judge-2".into(),
                "sim-judge-3".into(),
            ],
            judge_turns: JudgeTurns::Paper,
            scenarios: vec!["bundled".into()],
            dialogues_per_scenario: 60,
            min_per_route: 2,
            adversarial_levels: vec![Adversarial::Zero, Adversarial::Weak, Adversarial::Strong],
            max_turns: 16,
            repeats: 1,
            seed: 42,
            concurrency: 256,
            output_dir: PathBuf::from("results"),
            cache_dir: None,
            content_attempts: 3,
            record_prompts: false,
            max_cost_usd: None,
            customer_guard: false,
            adaptive_top: None,
        }
    }
}

/// A configuration that cannot run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {problem}")]
pub struct ConfigError {
    /// The file (or `<default>`).
    pub file: String,
    /// What is wrong, naming the key.
    pub problem: String,
}

/// Refuses a configuration file with nothing in it (every key has a default, so an empty file
/// would silently be the default run).
pub(crate) fn refuse_empty(text: &str, file: &str, expected: &str) -> Result<(), ConfigError> {
    let meaningful = text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .any(|l| !l.is_empty() && l != "---" && l != "...");
    if meaningful {
        Ok(())
    } else {
        Err(ConfigError {
            file: file.into(),
            problem: format!("the file is empty; expected {expected}"),
        })
    }
}

/// Parses a suite's configuration file: refused when empty ([`refuse_empty`], `expected` says
/// what it should be), its YAML read into `T` with the parser's message; `file` labels errors.
pub(crate) fn parse_yaml<T: serde::de::DeserializeOwned>(
    text: &str,
    file: &str,
    expected: &str,
) -> Result<T, ConfigError> {
    refuse_empty(text, file, expected)?;
    serde_saphyr::from_str(text).map_err(|e| ConfigError {
        file: file.to_string(),
        problem: e.to_string(),
    })
}

/// A suite's models checked: at most [`MAX_LIST`], each valid (and passing `extra`), names
/// unique, and every name in `named` (the roles the configuration gives) declared.
pub(crate) fn declared_models(
    models: &[ModelConfig],
    named: &[&str],
    extra: impl Fn(&ModelConfig) -> Result<(), String>,
) -> Result<(), String> {
    if models.len() > MAX_LIST {
        return Err(format!(
            "`models` has {} entries; expected at most {MAX_LIST}",
            models.len()
        ));
    }
    for model in models {
        model.check()?;
        extra(model)?;
    }
    let declared: Vec<&str> = models.iter().map(|m| m.name.as_str()).collect();
    unique_names(&declared)?;
    match named.iter().find(|name| !declared.contains(name)) {
        Some(name) => Err(format!(
            "model `{name}` is not in `models`; expected one of: {}",
            declared.join(", ")
        )),
        None => Ok(()),
    }
}

/// Each `(key, value, high)` within 1 to `high`; the first that is not, as the problem.
pub(crate) fn within(bounds: &[(&str, u64, u64)]) -> Result<(), String> {
    match bounds
        .iter()
        .find(|(_, value, high)| !(1..=*high).contains(value))
    {
        Some((key, value, high)) => Err(format!("`{key}` is {value}; expected 1 to {high}")),
        None => Ok(()),
    }
}

/// Model names must be unique, also as message subject tokens (in the distributed mode a
/// model's service role is requested on a subject made from its name).
pub(crate) fn unique_names(names: &[&str]) -> Result<(), String> {
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            return Err(format!(
                "models: `{name}` is declared twice; expected unique names"
            ));
        }
        let token = crate::protocol::subject_token(name);
        if let Some(other) = names[..i]
            .iter()
            .find(|o| crate::protocol::subject_token(o) == token)
        {
            return Err(format!(
                "models: `{other}` and `{name}` would share the subject token `{token}` in the distributed mode; expected names that differ in more than `.`, `*`, `>` or spaces"
            ));
        }
    }
    Ok(())
}

impl RunConfig {
    /// Parses run.yaml text; `file` labels errors.
    pub fn from_yaml(text: &str, file: &str) -> Result<RunConfig, ConfigError> {
        refuse_empty(text, file, "a run configuration (docs/run-config.md)")?;
        let mut config: RunConfig = serde_saphyr::from_str(text).map_err(|e| ConfigError {
            file: file.into(),
            problem: e.to_string(),
        })?;
        if let Some(first) = config.user_models.first() {
            // `user_model` is the first of `user_models`: given both, they must agree.
            #[derive(Deserialize)]
            struct Named {
                user_model: Option<String>,
            }
            let named: Option<String> = serde_saphyr::from_str::<Named>(text)
                .ok()
                .and_then(|n| n.user_model);
            if let Some(named) = named.filter(|n| n != first) {
                return Err(ConfigError {
                    file: file.into(),
                    problem: format!(
                        "user_model: `{named}` while user_models starts with `{first}`; expected user_model left out or the first of user_models (the simulator the leaderboard ranks under)"
                    ),
                });
            }
            config.user_model = first.clone();
        }
        config.check(file)?;
        Ok(config)
    }

    /// The customer simulators the run plays every case with, the first the one the
    /// leaderboard ranks under: `user_models`, or `user_model` alone.
    pub fn customers(&self) -> &[String] {
        if self.user_models.is_empty() {
            std::slice::from_ref(&self.user_model)
        } else {
            &self.user_models
        }
    }

    /// The models a configuration file declares, each checked, without checking the rest of the
    /// run (`sage scenario draft` needs a model, not a run); `file` labels errors.
    pub fn models_from_yaml(text: &str, file: &str) -> Result<Vec<ModelConfig>, ConfigError> {
        refuse_empty(text, file, "a run configuration (docs/run-config.md)")?;
        let config: RunConfig = serde_saphyr::from_str(text).map_err(|e| ConfigError {
            file: file.into(),
            problem: e.to_string(),
        })?;
        for model in &config.models {
            model.check().map_err(|problem| ConfigError {
                file: file.into(),
                problem,
            })?;
        }
        Ok(config.models)
    }

    /// Checks that the run, planned over `sops`, stays within [`MAX_JOBS`] (an upper bound
    /// computed without planning: every route supplemented to `min_per_route`).
    pub fn check_jobs(
        &self,
        sops: &[std::sync::Arc<crate::sop::Sop>],
        file: &str,
    ) -> Result<(), ConfigError> {
        let cases: u64 = sops
            .iter()
            .map(|sop| {
                (self.dialogues_per_scenario as u64).saturating_add(
                    (self.min_per_route as u64).saturating_mul(sop.routes().len() as u64),
                )
            })
            .fold(0u64, u64::saturating_add);
        let jobs = cases
            .saturating_mul(self.service_models.len() as u64)
            .saturating_mul(self.customers().len() as u64)
            .saturating_mul(u64::from(self.repeats));
        if jobs > MAX_JOBS {
            return Err(ConfigError {
                file: file.into(),
                problem: format!(
                    "dialogues_per_scenario, min_per_route, service_models, user_models and repeats make up to {jobs} dialogues; expected at most {MAX_JOBS} in one run (split it into several runs)"
                ),
            });
        }
        Ok(())
    }

    /// Checks names and numbers: every referenced model declared, an odd judge panel, judged turns
    /// within the dialogue, sane counts.
    pub fn check(&self, file: &str) -> Result<(), ConfigError> {
        let err = |problem: String| {
            Err(ConfigError {
                file: file.into(),
                problem,
            })
        };
        if self.models.len() > MAX_LIST || self.scenarios.len() > MAX_LIST {
            return err(format!(
                "models or scenarios: {} and {} entries; expected at most {MAX_LIST} each",
                self.models.len(),
                self.scenarios.len()
            ));
        }
        for model in &self.models {
            model.check().or_else(err)?;
        }
        let declared: Vec<&str> = self.models.iter().map(|m| m.name.as_str()).collect();
        if let Err(problem) = unique_names(&declared) {
            return err(problem);
        }
        let known = |key: &str, name: &str| -> Result<(), ConfigError> {
            if declared.contains(&name) {
                Ok(())
            } else {
                Err(ConfigError {
                    file: file.into(),
                    problem: format!(
                        "{key}: unknown model `{name}`; expected one of: {}",
                        declared.join(", ")
                    ),
                })
            }
        };
        if self.service_models.is_empty() {
            return err("service_models: empty; expected at least one model under test".into());
        }
        for (i, m) in self.service_models.iter().enumerate() {
            known("service_models", m)?;
            if self.service_models[..i].contains(m) {
                return err(format!(
                    "service_models: `{m}` is listed twice; expected each model once"
                ));
            }
        }
        if let Some(usd) = self.max_cost_usd {
            super::model::cost_budget("max_cost_usd", usd).or_else(err)?;
        }
        if let Some(k) = self.adaptive_top
            && !(1..self.service_models.len()).contains(&k)
        {
            return err(format!(
                "adaptive_top: {k}; expected 1 to {} (fewer than the {} models under test: the top K must leave some out)",
                self.service_models.len().saturating_sub(1),
                self.service_models.len()
            ));
        }
        // A model's budget bounds its dialogues as the agent under test.
        if let Some(m) = self
            .models
            .iter()
            .find(|m| m.max_cost_usd.is_some() && !self.service_models.contains(&m.name))
        {
            return err(format!(
                "model {}: max_cost_usd bounds the dialogues of a model under test, and `{}` is not in service_models; expected it on a model under test (or the run's max_cost_usd)",
                m.name, m.name
            ));
        }
        known("user_model", &self.user_model)?;
        if self.user_models.len() > MAX_USER_MODELS {
            return err(format!(
                "user_models: {} given; expected at most {MAX_USER_MODELS} (each plays every case again)",
                self.user_models.len()
            ));
        }
        for (i, m) in self.user_models.iter().enumerate() {
            known("user_models", m)?;
            if self.user_models[..i].contains(m) {
                return err(format!(
                    "user_models: `{m}` is listed twice; expected each simulator once"
                ));
            }
        }
        if let Some(first) = self.user_models.first()
            && *first != self.user_model
        {
            return err(format!(
                "user_model: `{}` while user_models starts with `{first}`; expected user_model to be the first of user_models",
                self.user_model
            ));
        }
        if self.user_models.len() > 1 && self.adaptive_top.is_some() {
            return err(
                "adaptive_top: an adaptive run with several user_models; expected one customer simulator (an adaptive run ranks under one)".into(),
            );
        }
        // A simulated model plays the role its kind is for (an agent profile cannot judge).
        let plays = |key: &str, name: &str, kind: &str| -> Result<(), ConfigError> {
            let sim = self
                .models
                .iter()
                .find(|m| m.name == name)
                .and_then(|m| m.sim.as_ref());
            match sim {
                Some(sim) if sim.kind() != kind => Err(ConfigError {
                    file: file.into(),
                    problem: format!(
                        "{key}: `{name}` is a simulated model of kind `{}`; expected a real model or one of sim kind `{kind}`",
                        sim.kind()
                    ),
                }),
                _ => Ok(()),
            }
        };
        for m in &self.service_models {
            plays("service_models", m, "agent")?;
        }
        let key = if self.user_models.is_empty() {
            "user_model"
        } else {
            "user_models"
        };
        for m in self.customers() {
            plays(key, m, "user")?;
        }
        if !JUDGE_PANEL_SIZES.contains(&self.judge_models.len()) {
            return err(format!(
                "judge_models: {} given; expected 1, 3 or 5 judges (an odd panel, so that the majority vote per field has a winner)",
                self.judge_models.len()
            ));
        }
        for m in &self.judge_models {
            known("judge_models", m)?;
            plays("judge_models", m, "judge")?;
        }
        if self.scenarios.is_empty() {
            return err("scenarios: empty; expected `bundled` or scenario files".into());
        }
        let bounds: [(&str, u64, u64, u64); 6] = [
            ("max_turns", self.max_turns.into(), 1, MAX_TURNS.into()),
            ("repeats", self.repeats.into(), 1, MAX_REPEATS.into()),
            (
                "concurrency",
                self.concurrency as u64,
                1,
                MAX_CONCURRENCY as u64,
            ),
            (
                "content_attempts",
                self.content_attempts.into(),
                1,
                MAX_CONTENT_ATTEMPTS.into(),
            ),
            (
                "dialogues_per_scenario",
                self.dialogues_per_scenario as u64,
                0,
                MAX_DIALOGUES_PER_SCENARIO as u64,
            ),
            (
                "min_per_route",
                self.min_per_route as u64,
                0,
                MAX_MIN_PER_ROUTE as u64,
            ),
        ];
        for (key, value, low, high) in bounds {
            if !(low..=high).contains(&value) {
                return err(format!("{key}: {value}; expected {low} to {high}"));
            }
        }
        if self.adversarial_levels.is_empty() {
            return err("adversarial_levels: empty; expected some of zero, weak, strong".into());
        }
        self.judge_turns.check(self.max_turns).or_else(err)?;
        Ok(())
    }
}
