//! tau2-bench retail as a suite of the engine ([`crate::suite::Suite`]): its configuration
//! (`sage run --suite tau2-retail [--config FILE]`, docs/tau2-retail.md), its jobs (every task
//! with every agent, `repeats` trials), the record of one simulation, the prompts tau2 gives
//! its agent and user, and the scores: the reward as tau2 grades it and pass^k over the trials.

use super::{Db, Task};
use crate::plan::config::{ConfigError, MAX_CONCURRENCY, MAX_LIST, MAX_REPEATS, simulated};
use crate::plan::model::{ModelConfig, SimSpec};
use crate::protocol::{CallRecord, Usage};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The retail policy the agent follows (tau2's `policy.md`).
pub const POLICY: &str = include_str!("../../../../scenarios/tau2-retail/policy.md");
/// The retail database (tau2's `db.json`).
pub const DB_JSON: &str = include_str!("../../../../scenarios/tau2-retail/db.json");
/// The retail tasks (tau2's `tasks.json`).
pub const TASKS_JSON: &str = include_str!("../../../../scenarios/tau2-retail/tasks.json");
/// The user simulator's guidelines (tau2's `simulation_guidelines.md`).
pub const USER_GUIDELINES: &str =
    include_str!("../../../../scenarios/tau2-retail/simulation_guidelines.md");

/// What the user says to end the conversation (tau2's `###STOP###`, `###TRANSFER###`,
/// `###OUT-OF-SCOPE###`).
pub const STOP_TOKENS: [&str; 3] = ["###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"];
/// The agent's first message (tau2's `DEFAULT_FIRST_AGENT_MESSAGE`).
pub const FIRST_AGENT_MESSAGE: &str = "Hi! How can I help you today?";
/// Most model calls of the agent in one turn (tool calls, then its message to the user).
pub const MAX_ROUNDS: u32 = 12;
/// Most agent turns a configuration may ask for.
pub const MAX_TURNS: u32 = 100;

/// The agent's system prompt: tau2's `LLMAgent` instructions and the retail policy.
pub fn agent_prompt() -> String {
    format!(
        "<instructions>\nYou are a customer service agent that helps the user according to the <policy> provided below.\nIn each turn you can either:\n- Send a message to the user.\n- Make a tool call.\nYou cannot do both at the same time.\n\nTry to be helpful and always follow the policy. Always make sure you generate valid JSON only.\n</instructions>\n<policy>\n{POLICY}\n</policy>"
    )
}

/// The user simulator's system prompt for `task`: tau2's guidelines and the task's scenario.
pub fn user_prompt(task: &Task) -> String {
    let guidelines = USER_GUIDELINES.replace("<PERSONA_GUIDELINES>", "");
    format!(
        "{}\n\n<scenario>\n{}\n</scenario>",
        guidelines.trim(),
        task.user_scenario.to_prompt_text()
    )
}

/// The NL-assertion judge's system prompt (tau2's `NLAssertionsEvaluator`).
pub const JUDGE_PROMPT: &str = "TASK\n- You will be given a list of expected outcomes and a conversation that was collected during a test case run.\n- The conversation is between an agent and a customer.\n- Your job is to evaluate whether the agent satisfies each of the expected outcomes.\n- Grade each expected outcome individually.\n\nFORMAT\n- Your response should be a JSON object with the following fields:\n- `reasoning`: a short explanation for your classification\n- `metExpectation`: `true` if the agent satisfies the expected outcomes, `false` otherwise\n- `expectedOutcome`: repeat the expectation from the input that you are grading\n\nExample response structure:\n{\n    \"results\": [\n        {\n            \"expectedOutcome\": \"<one of the expected outcomes from the input>\",\n            \"reasoning\": \"<reasoning trace>\",\n            \"metExpectation\": <false or true>,\n        }\n    ]\n}";

/// The judge's user message: the conversation (`role: content` a line) and the assertions.
pub fn judge_message(messages: &[Tau2Message], assertions: &[String]) -> String {
    let conversation: Vec<String> = messages
        .iter()
        .map(|m| format!("{}: {}", m.role, m.content.as_deref().unwrap_or("None")))
        .collect();
    format!(
        "conversation:\n{}\n\nexpectedOutcomes:\n{}",
        conversation.join("\n"),
        serde_json::to_string(assertions).unwrap_or_default()
    )
}

/// Reads a judge's answer: `{"results": [{"expectedOutcome", "reasoning", "metExpectation"}]}`,
/// the first JSON object of the text. `None` when it does not hold one verdict per assertion.
pub fn parse_judge(text: &str, assertions: &[String]) -> Option<Vec<NlCheck>> {
    let object = crate::protocol::parse::extract_object(text, false).ok()?;
    let results = object.get("results")?.as_array()?;
    if results.len() != assertions.len() {
        return None;
    }
    results
        .iter()
        .zip(assertions)
        .map(|(r, assertion)| {
            Some(NlCheck {
                assertion: assertion.clone(),
                met: r.get("metExpectation")?.as_bool()?,
                justification: r
                    .get("reasoning")
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .chars()
                    .take(2000)
                    .collect(),
            })
        })
        .collect()
}

/// One tau2 retail run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Tau2Config {
    /// Every model endpoint (agents under test, the user simulator, the judges).
    pub models: Vec<ModelConfig>,
    /// The agents under test (names from `models`).
    pub agents: Vec<String>,
    /// The user simulator.
    pub customer_model: String,
    /// The judges of the NL assertions (1 to 3; a task's assertions are met when the majority
    /// says so).
    pub judge_models: Vec<String>,
    /// The tasks to run by id (empty: all 114).
    pub tasks: Vec<String>,
    /// Trials of each task with each agent (pass^k is reported for k up to this).
    pub repeats: u32,
    /// Most agent turns per simulation (tau2's `max_steps` counts messages: 100 by default).
    pub max_turns: u32,
    /// Run seed.
    pub seed: u64,
    /// Simulations in flight.
    pub concurrency: usize,
    /// Where results/<run-id>/ goes.
    pub output_dir: PathBuf,
}

impl Default for Tau2Config {
    fn default() -> Self {
        let agent = |wrong_argument: f64, skip: f64| SimSpec::Tau2Agent {
            wrong_argument,
            skip,
            latency: None,
        };
        Tau2Config {
            models: vec![
                simulated("sim-tau2-careful", agent(0.02, 0.02)),
                simulated("sim-tau2-sloppy", agent(0.25, 0.1)),
                simulated("sim-tau2-user", SimSpec::Tau2Customer { latency: None }),
                simulated(
                    "sim-tau2-judge",
                    SimSpec::Tau2Judge {
                        noise: 0.0,
                        latency: None,
                    },
                ),
            ],
            agents: vec!["sim-tau2-careful".into(), "sim-tau2-sloppy".into()],
            customer_model: "sim-tau2-user".into(),
            judge_models: vec!["sim-tau2-judge".into()],
            tasks: Vec::new(),
            repeats: 2,
            max_turns: 30,
            seed: 42,
            concurrency: 64,
            output_dir: PathBuf::from("results"),
        }
    }
}

impl Tau2Config {
    /// Reads a configuration; `file` labels errors.
    pub fn from_yaml(text: &str, file: &str) -> Result<Tau2Config, ConfigError> {
        let config: Tau2Config = crate::plan::config::parse_yaml(
            text,
            file,
            "a tau2 retail configuration (docs/tau2-retail.md)",
        )?;
        config.check(file)?;
        Ok(config)
    }

    /// Every model the run calls: the agents, the user simulator and the judges.
    pub fn model_names(&self) -> Vec<&str> {
        self.agents
            .iter()
            .chain(std::iter::once(&self.customer_model))
            .chain(&self.judge_models)
            .map(String::as_str)
            .collect()
    }

    /// Checks that every model named is configured, the tasks exist and the numbers make sense.
    pub fn check(&self, file: &str) -> Result<(), ConfigError> {
        let err = |problem: String| ConfigError {
            file: file.to_string(),
            problem,
        };
        for (key, len) in [("tasks", self.tasks.len()), ("agents", self.agents.len())] {
            if len > MAX_LIST {
                return Err(err(format!(
                    "`{key}` has {len} entries; expected at most {MAX_LIST}"
                )));
            }
        }
        crate::plan::config::declared_models(&self.models, &self.model_names(), |_| Ok(()))
            .map_err(err)?;
        if self.agents.is_empty() {
            return Err(err(
                "`agents` is empty; expected at least one model under test".into(),
            ));
        }
        if !(1..=3).contains(&self.judge_models.len()) {
            return Err(err(format!(
                "`judge_models` has {} entries; expected 1 to 3",
                self.judge_models.len()
            )));
        }
        let ids = task_ids();
        if let Some(unknown) = self.tasks.iter().find(|t| !ids.contains(&t.as_str())) {
            return Err(err(format!(
                "task {:?} is not a tau2 retail task; expected an id from \"0\" to \"{}\"",
                unknown.chars().take(40).collect::<String>(),
                ids.len().saturating_sub(1)
            )));
        }
        crate::plan::config::within(&[
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

/// The ids of the bundled tasks, in their order.
fn task_ids() -> Vec<&'static str> {
    static IDS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    IDS.get_or_init(|| {
        World::bundled()
            .tasks
            .iter()
            .map(|t| t.id.clone())
            .collect()
    })
    .iter()
    .map(String::as_str)
    .collect()
}

/// What a tau2 retail run plays over: the tasks and the database every simulation starts from.
#[derive(Debug, Clone)]
pub struct World {
    /// The tasks, in tasks.json's order.
    pub tasks: Vec<std::sync::Arc<Task>>,
    /// The database before any call.
    pub db: std::sync::Arc<Db>,
}

impl World {
    /// The bundled retail domain (parsed once per process).
    pub fn bundled() -> &'static World {
        static WORLD: std::sync::OnceLock<World> = std::sync::OnceLock::new();
        WORLD.get_or_init(|| World {
            tasks: super::parse_tasks(TASKS_JSON, "scenarios/tau2-retail/tasks.json")
                .expect("the bundled tasks parse (a test checks it)")
                .into_iter()
                .map(std::sync::Arc::new)
                .collect(),
            db: std::sync::Arc::new(
                Db::from_json(DB_JSON, "scenarios/tau2-retail/db.json")
                    .expect("the bundled database parses (a test checks it)"),
            ),
        })
    }

    /// The task `id`.
    pub fn task(&self, id: &str) -> Option<&std::sync::Arc<Task>> {
        self.tasks.iter().find(|t| t.id == id)
    }
}

/// One simulation to play: a task with an agent, one trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tau2Job {
    /// The run.
    pub run_id: String,
    /// Unique in the run: `<task>/<agent>/r<trial>`.
    pub dialogue_id: String,
    /// The task's id.
    pub task: String,
    /// The agent under test.
    pub model: String,
    /// The user simulator.
    pub customer_model: String,
    /// The NL-assertion judges.
    pub judge_models: Vec<String>,
    /// The trial (0-based).
    pub trial: u32,
    /// Most agent turns.
    pub max_turns: u32,
    /// The simulation's seed (the same for every agent: a paired comparison).
    pub seed: u64,
}

/// The jobs of a run: every task (or those the configuration names) with every agent,
/// `repeats` trials, in that order.
pub fn jobs(config: &Tau2Config, run_id: &str, world: &World) -> Vec<Tau2Job> {
    let tasks: Vec<&Task> = world
        .tasks
        .iter()
        .filter(|t| config.tasks.is_empty() || config.tasks.contains(&t.id))
        .map(|t| t.as_ref())
        .collect();
    let mut jobs = Vec::with_capacity(config.agents.len() * tasks.len());
    for model in &config.agents {
        for task in &tasks {
            for trial in 0..config.repeats {
                jobs.push(Tau2Job {
                    run_id: run_id.to_string(),
                    dialogue_id: format!("{}/{model}/r{trial}", task.id),
                    task: task.id.clone(),
                    model: model.clone(),
                    customer_model: config.customer_model.clone(),
                    judge_models: config.judge_models.clone(),
                    trial,
                    max_turns: config.max_turns,
                    seed: crate::plan::derive_seed((config.seed, "tau2", &task.id, trial)),
                });
            }
        }
    }
    jobs
}

/// A tool call in a simulation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tau2ToolCall {
    /// The call's id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments (an object; what the model wrote when it was not JSON: a string).
    pub arguments: serde_json::Value,
}

/// One message of a simulation, as tau2 records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tau2Message {
    /// `assistant`, `user` or `tool`.
    pub role: String,
    /// The text (none for a message that only calls tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The tools an assistant message calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<Tau2ToolCall>,
    /// The call a tool message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// A tool message that is an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub error: bool,
    /// The agent turn it belongs to (0: the agent's greeting and the user's first message).
    pub turn: u32,
}

/// Why a simulation ended (tau2's `TerminationReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Termination {
    /// The user said a stop token.
    UserStop,
    /// The agent stopped (retail agents do not: kept for tau2's format).
    AgentStop,
    /// The turn limit was reached.
    MaxSteps,
    /// A model call failed after its retries, or a role could not be reached.
    InfrastructureError,
}

impl Termination {
    /// tau2's name of the reason.
    pub fn as_str(self) -> &'static str {
        match self {
            Termination::UserStop => "user_stop",
            Termination::AgentStop => "agent_stop",
            Termination::MaxSteps => "max_steps",
            Termination::InfrastructureError => "infrastructure_error",
        }
    }
}

/// One NL assertion as judged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NlCheck {
    /// The assertion.
    pub assertion: String,
    /// Whether the judges found it met (the majority).
    pub met: bool,
    /// The first judge's reasoning.
    pub justification: String,
}

/// How a simulation was graded (tau2's `RewardInfo`, the parts the retail basis uses).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tau2Reward {
    /// 1 when every part of the task's reward basis passes, else 0.
    pub reward: f64,
    /// The database check (none when the simulation did not end normally).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_match: Option<bool>,
    /// The NL assertions as judged (empty when the task has none or they were not judged).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nl_assertions: Vec<NlCheck>,
    /// The reward of each part of the basis (`DB`, `NL_ASSERTION`, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub breakdown: BTreeMap<String, f64>,
}

/// One played simulation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tau2Record {
    /// The job.
    pub job: Tau2Job,
    /// Every message, the agent's greeting first.
    pub messages: Vec<Tau2Message>,
    /// Why it ended.
    pub termination: Termination,
    /// Its grade (none for an infrastructure error: left out of the scores).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward: Option<Tau2Reward>,
    /// Every model call, for cost and audit.
    pub calls: Vec<CallRecord>,
    /// The agent's tokens.
    pub usage: Usage,
    /// The agent's cost.
    pub cost_usd: f64,
    /// What failed, for an infrastructure error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub infra_error: Option<String>,
}

/// Characters of a tool's answer a transcript shows.
const TOOL_SHOWN: usize = 240;

impl Tau2Record {
    /// The simulation as text: who said what, each tool call with its arguments and answer,
    /// then how it ended and its grade.
    pub fn transcript(&self) -> String {
        let mut out = format!(
            "{} (task {}, agent {}, trial {})\n",
            self.job.dialogue_id, self.job.task, self.job.model, self.job.trial
        );
        for m in &self.messages {
            let who = match m.role.as_str() {
                "assistant" => "agent",
                "user" => "user",
                _ => "tool",
            };
            if let Some(text) = m.content.as_deref().filter(|t| !t.is_empty()) {
                let mark = if m.error { " (error)" } else { "" };
                // A tool's answer (an order, a product with its variants) is cut to its start.
                let cut = if who == "tool" && text.chars().count() > TOOL_SHOWN {
                    format!("{}...", text.chars().take(TOOL_SHOWN).collect::<String>())
                } else {
                    text.to_string()
                };
                out.push_str(&format!("[{} {who}{mark}] {cut}\n", m.turn));
            }
            for call in &m.tool_calls {
                out.push_str(&format!(
                    "[{} agent calls] {}({})\n",
                    m.turn, call.name, call.arguments
                ));
            }
        }
        out.push_str(&format!("ended: {}\n", self.termination.as_str()));
        match (&self.reward, &self.infra_error) {
            (_, Some(e)) => out.push_str(&format!("infrastructure error: {e}\n")),
            (Some(r), None) => {
                out.push_str(&format!("reward: {}", r.reward));
                if let Some(m) = r.db_match {
                    out.push_str(&format!(
                        " (database check: {})",
                        if m { "pass" } else { "fail" }
                    ));
                }
                out.push('\n');
                for c in &r.nl_assertions {
                    out.push_str(&format!(
                        "assertion {}: {}\n",
                        if c.met { "met" } else { "NOT met" },
                        c.assertion
                    ));
                }
            }
            (None, None) => {}
        }
        out
    }

    /// The agent's tool calls in order, as the database check replays them.
    pub fn agent_calls(&self) -> Vec<super::AgentCall> {
        self.messages
            .iter()
            .filter(|m| m.role == "assistant")
            .flat_map(|m| &m.tool_calls)
            .map(|c| (c.name.clone(), c.arguments.clone()))
            .collect()
    }
}

/// Grades a finished simulation as tau2 does: 0 unless the user stopped it; otherwise the
/// product of its basis's parts, the database check replaying `calls` on `world`'s database.
/// `nl`: the judges' verdicts on the task's assertions (none when it has none).
pub fn grade(
    world: &World,
    task: &Task,
    termination: Termination,
    calls: &[super::AgentCall],
    nl: Vec<NlCheck>,
) -> Tau2Reward {
    grade_with(
        || super::db_check(&world.db, task, calls),
        task,
        termination,
        calls,
        nl,
    )
}

/// [`grade`] with the database check given (made only when the run ended normally).
pub fn grade_with(
    check: impl FnOnce() -> super::DbCheck,
    task: &Task,
    termination: Termination,
    calls: &[super::AgentCall],
    nl: Vec<NlCheck>,
) -> Tau2Reward {
    let completed = matches!(termination, Termination::UserStop | Termination::AgentStop);
    let inputs = super::RewardInputs {
        completed,
        nl_assertions_met: Some(nl.iter().all(|c| c.met)),
        communicate_met: Some(true),
    };
    match super::reward_with(check, task, calls, &inputs) {
        Ok(r) => Tau2Reward {
            reward: r.reward,
            db_match: r.db_check.map(|c| c.db_match),
            nl_assertions: nl,
            breakdown: r
                .breakdown
                .into_iter()
                .map(|(part, value)| (part_name(part), value))
                .collect(),
        },
        // Every input is supplied above: unreachable, graded 0 rather than a panic.
        Err(_) => Tau2Reward {
            reward: 0.0,
            db_match: None,
            nl_assertions: nl,
            breakdown: BTreeMap::new(),
        },
    }
}

/// tau2's name of a reward part (`DB`, `NL_ASSERTION`, ...).
fn part_name(part: super::RewardPart) -> String {
    serde_json::to_value(part)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The scores of a run, folded a record at a time: per agent, per task, trials and passes.
#[derive(Debug, Clone, Default)]
pub struct Tau2Fold {
    /// (agent, task) -> (trials graded, trials with reward 1).
    trials: BTreeMap<(String, String), (u32, u32)>,
    /// Per agent: simulations whose database check failed, and those whose NL assertions did.
    misses: BTreeMap<String, (usize, usize)>,
    /// Per agent: simulations stopped by an infrastructure error (left out of the scores).
    infra: BTreeMap<String, usize>,
    /// Per agent: its cost.
    cost: BTreeMap<String, f64>,
    /// Agents in the order first seen.
    order: Vec<String>,
}

impl Tau2Fold {
    /// Adds one record.
    pub fn add(&mut self, record: &Tau2Record) {
        let agent = &record.job.model;
        if !self.order.contains(agent) {
            self.order.push(agent.clone());
        }
        *self.cost.entry(agent.clone()).or_default() += record.cost_usd;
        let Some(reward) = &record.reward else {
            *self.infra.entry(agent.clone()).or_default() += 1;
            return;
        };
        let entry = self
            .trials
            .entry((agent.clone(), record.job.task.clone()))
            .or_default();
        entry.0 += 1;
        entry.1 += u32::from(reward.reward >= 1.0);
        let misses = self.misses.entry(agent.clone()).or_default();
        misses.0 += usize::from(reward.db_match == Some(false));
        misses.1 += usize::from(reward.nl_assertions.iter().any(|c| !c.met));
    }

    /// The scores, one row an agent, best pass^1 first.
    pub fn summary(&self) -> Tau2Summary {
        let mut agents: Vec<AgentScore> = self
            .order
            .iter()
            .map(|agent| {
                let tasks: Vec<(u32, u32)> = self
                    .trials
                    .iter()
                    .filter(|((a, _), _)| a == agent)
                    .map(|(_, &t)| t)
                    .collect();
                let simulations: u32 = tasks.iter().map(|t| t.0).sum();
                let passed: u32 = tasks.iter().map(|t| t.1).sum();
                let k_max = tasks.iter().map(|t| t.0).min().unwrap_or(0);
                let (db_misses, nl_misses) = self.misses.get(agent).copied().unwrap_or_default();
                AgentScore {
                    agent: agent.clone(),
                    tasks: tasks.len(),
                    simulations,
                    average_reward: if simulations == 0 {
                        0.0
                    } else {
                        f64::from(passed) / f64::from(simulations)
                    },
                    pass_hat_k: (1..=k_max).map(|k| pass_hat_k(&tasks, k)).collect(),
                    db_misses,
                    nl_misses,
                    infra_errors: self.infra.get(agent).copied().unwrap_or(0),
                    cost_usd: self.cost.get(agent).copied().unwrap_or(0.0),
                }
            })
            .collect();
        // Ties by name: the order does not depend on which records came first. An agent with
        // no graded simulation goes last.
        agents.sort_by(|a, b| {
            let first = |s: &AgentScore| s.pass_hat_k.first().copied().unwrap_or(-1.0);
            first(b)
                .total_cmp(&first(a))
                .then_with(|| a.agent.cmp(&b.agent))
        });
        Tau2Summary { agents }
    }
}

/// tau2's pass^k: over the tasks, the chance that k trials drawn without replacement all
/// pass, C(passed, k) / C(trials, k), averaged over tasks with at least k trials.
pub fn pass_hat_k(tasks: &[(u32, u32)], k: u32) -> f64 {
    let choose = |n: u32, k: u32| -> f64 {
        if k > n {
            return 0.0;
        }
        (0..k).fold(1.0, |acc, i| acc * f64::from(n - i) / f64::from(i + 1))
    };
    let counted: Vec<f64> = tasks
        .iter()
        .filter(|(n, _)| *n >= k)
        .map(|&(n, c)| choose(c, k) / choose(n, k))
        .collect();
    if counted.is_empty() {
        0.0
    } else {
        counted.iter().sum::<f64>() / counted.len() as f64
    }
}

/// One agent's scores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentScore {
    /// The agent.
    pub agent: String,
    /// Tasks graded.
    pub tasks: usize,
    /// Simulations graded.
    pub simulations: u32,
    /// The mean reward (the share of simulations with reward 1).
    pub average_reward: f64,
    /// pass^1, pass^2, ... up to the fewest trials of a task.
    pub pass_hat_k: Vec<f64>,
    /// Simulations whose database differed from the gold one.
    pub db_misses: usize,
    /// Simulations with an NL assertion judged not met.
    pub nl_misses: usize,
    /// Simulations stopped by an infrastructure error (not graded).
    pub infra_errors: usize,
    /// The agent's cost.
    pub cost_usd: f64,
}

/// A run's scores (summary.json).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tau2Summary {
    /// One row an agent, best pass^1 first (ties by name).
    pub agents: Vec<AgentScore>,
}

impl Tau2Summary {
    /// The table printed after a run and written as leaderboard.md.
    pub fn table(&self) -> String {
        let k = self
            .agents
            .iter()
            .map(|a| a.pass_hat_k.len())
            .max()
            .unwrap_or(0);
        let mut out = String::from("| agent | tasks | simulations |");
        for i in 1..=k {
            out.push_str(&format!(" pass^{i} |"));
        }
        out.push_str(" DB misses | NL misses | infra errors | cost USD |\n|---|---|---|");
        out.push_str(&"---|".repeat(k + 4));
        out.push('\n');
        for a in &self.agents {
            out.push_str(&format!(
                "| {} | {} | {} |",
                a.agent, a.tasks, a.simulations
            ));
            for i in 0..k {
                match a.pass_hat_k.get(i) {
                    Some(p) => out.push_str(&format!(" {p:.3} |")),
                    None => out.push_str(" - |"),
                }
            }
            out.push_str(&format!(
                " {} | {} | {} | {:.4} |\n",
                a.db_misses, a.nl_misses, a.infra_errors, a.cost_usd
            ));
        }
        out
    }
}

/// The tau2 retail suite.
pub struct Tau2Retail;

impl crate::suite::Suite for Tau2Retail {
    const NAME: &'static str = "tau2-retail";
    const RECORDS: &'static str = "tau2.jsonl";
    type Config = Tau2Config;
    type World = World;
    type Job = Tau2Job;
    type Record = Tau2Record;
    type Fold = Tau2Fold;
    type Summary = Tau2Summary;

    fn config(text: &str, file: &str) -> Result<Tau2Config, ConfigError> {
        Tau2Config::from_yaml(text, file)
    }
    fn check(config: &Tau2Config, file: &str) -> Result<(), ConfigError> {
        config.check(file)
    }
    fn model_names(config: &Tau2Config) -> Vec<&str> {
        config.model_names()
    }
    fn agents(config: &Tau2Config) -> &[String] {
        &config.agents
    }
    fn customers(config: &Tau2Config) -> &[String] {
        std::slice::from_ref(&config.customer_model)
    }
    fn judges(config: &Tau2Config) -> &[String] {
        &config.judge_models
    }
    fn models(config: &Tau2Config) -> &[ModelConfig] {
        &config.models
    }
    fn concurrency(config: &Tau2Config) -> usize {
        config.concurrency
    }
    fn seed(config: &Tau2Config) -> u64 {
        config.seed
    }
    fn output_dir(config: &Tau2Config) -> &std::path::Path {
        &config.output_dir
    }
    fn apply(config: &mut Tau2Config, flags: &crate::suite::Flags) {
        flags.set(
            &mut config.repeats,
            &mut config.seed,
            &mut config.max_turns,
            &mut config.concurrency,
            &mut config.output_dir,
        );
    }

    fn jobs(config: &Tau2Config, run_id: &str, world: &World) -> Vec<Tau2Job> {
        jobs(config, run_id, world)
    }
    fn job_id(job: &Tau2Job) -> &str {
        &job.dialogue_id
    }
    fn job_run(job: &Tau2Job) -> &str {
        &job.run_id
    }
    fn job_agent(job: &Tau2Job) -> &str {
        &job.model
    }
    fn record_job(record: &Tau2Record) -> &Tau2Job {
        &record.job
    }
    fn tally(record: &Tau2Record) -> (usize, bool) {
        let turns = record.messages.iter().filter(|m| m.role == "user").count();
        (turns, record.infra_error.is_some())
    }
    fn fold(fold: &mut Tau2Fold, record: &Tau2Record) {
        fold.add(record)
    }
    fn plan(config: &Tau2Config, _: &World, jobs: &[Tau2Job]) -> (String, serde_json::Value) {
        let sims = jobs.len() as u64;
        let turns = u64::from(config.max_turns);
        let judges = config.judge_models.len() as u64;
        let calls = serde_json::json!({
            "agent": sims * turns * u64::from(MAX_ROUNDS),
            "customer": sims * (turns + 1),
            "judge": sims * judges,
        });
        let text = format!(
            "tau2-retail: {sims} simulations ({} agents x {} tasks x {} trials)\nmodel calls at most: agent {}, customer {}, judges {}\n",
            config.agents.len(),
            jobs.len() / (config.agents.len() * config.repeats as usize).max(1),
            config.repeats,
            calls["agent"],
            calls["customer"],
            calls["judge"]
        );
        let json = serde_json::json!({
            "suite": "tau2-retail",
            "simulations": sims,
            "agents": config.agents,
            "trials": config.repeats,
            "max_turns": config.max_turns,
            "model_calls_at_most": calls,
        });
        (text, json)
    }
    fn transcript(record: &Tau2Record) -> String {
        record.transcript()
    }
    fn cases(fold: &Tau2Fold) -> Option<BTreeMap<(String, String), (u32, u32)>> {
        Some(fold.trials.clone())
    }
    fn summary(fold: &Tau2Fold) -> (Tau2Summary, String) {
        let summary = fold.summary();
        let table = summary.table();
        (summary, table)
    }
}

/// What the driver tells a simulated tau2 model with each call (never sent to a real model):
/// the task, the seed and where the simulation is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tau2Facts {
    /// The task's id.
    pub task: String,
    /// The simulation's seed.
    pub seed: u64,
    /// The agent turn (1-based; 0 before the first).
    pub turn: u32,
    /// Model calls of the agent before this one in the same turn.
    pub round: u32,
    /// Tool calls the agent made so far in the simulation.
    pub agent_calls: u32,
    /// For a judge: the database check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db_match: Option<bool>,
}

/// The simulated agent's line once it has done everything it will do.
pub const SIM_AGENT_DONE: &str =
    "Everything you asked for is done. Is there anything else I can help you with?";
