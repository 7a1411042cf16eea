//! The support-desk suite (SupportAgentBench methodology; docs/support-desk.md) on the one
//! mechanism ([`crate::suite::Suite`]): its world (a store and its cases, [`DeskFixture`]) and
//! the suite itself ([`SupportDesk`]). Its configuration and jobs are in [`crate::plan::desk`],
//! its scoring in [`crate::scoring::desk`], its records in [`crate::protocol::desk`].

use crate::plan::desk::{DeskConfig, jobs};
use crate::plan::model::ModelConfig;
use crate::protocol::chat::ToolSpec;
use crate::protocol::desk::{DeskJob, DeskRecord};
use crate::scenario::desk::{Case, Desk, Tool};
use crate::scoring::desk::{DeskScores, ModelRow};
use std::collections::HashMap;
use std::sync::Arc;

/// A store and its cases as a run plays them (the suite's world): the cases by id, the agent's
/// system prompt and the tool specs, rendered once per run. The role actors serving a
/// support-desk run hold it too.
pub struct DeskFixture {
    /// The store and its cases.
    pub desk: Desk,
    cases: HashMap<String, Arc<Case>>,
    /// The agent's system prompt.
    pub agent_prompt: Arc<str>,
    /// The tools offered to the agent.
    pub tools: Vec<ToolSpec>,
}

impl DeskFixture {
    /// Serves `desk`.
    pub fn new(desk: Desk) -> DeskFixture {
        DeskFixture {
            cases: desk
                .cases
                .iter()
                .map(|c| (c.id.clone(), Arc::new(c.clone())))
                .collect(),
            agent_prompt: crate::prompts::desk::agent_system_prompt(&desk.store).into(),
            tools: tool_specs(),
            desk,
        }
    }

    /// The case `id`.
    pub fn case(&self, id: &str) -> Result<&Arc<Case>, String> {
        self.cases
            .get(id)
            .ok_or_else(|| format!("case `{id}` is not in this process's store"))
    }
}

/// The tools offered to the agent.
pub fn tool_specs() -> Vec<ToolSpec> {
    Tool::ALL
        .iter()
        .map(|t| ToolSpec {
            name: t.name().into(),
            description: t.description().into(),
            parameters: t.parameters(),
        })
        .collect()
}

/// The support-desk suite (SupportAgentBench methodology; docs/support-desk.md).
pub struct SupportDesk;

impl crate::suite::Suite for SupportDesk {
    const NAME: &'static str = "support-desk";
    const RECORDS: &'static str = "desk.jsonl";
    const SUMMARY: &'static str = "desk-summary.json";
    const TABLE: &'static str = "desk-leaderboard.txt";
    type Config = DeskConfig;
    type World = DeskFixture;
    type Job = DeskJob;
    type Record = DeskRecord;
    type Fold = DeskScores;
    type Summary = Vec<ModelRow>;

    fn config(text: &str, file: &str) -> Result<DeskConfig, crate::plan::config::ConfigError> {
        DeskConfig::from_yaml(text, file)
    }
    fn check(config: &DeskConfig, file: &str) -> Result<(), crate::plan::config::ConfigError> {
        config.check(file)
    }
    fn model_names(config: &DeskConfig) -> Vec<&str> {
        config.model_names()
    }
    fn models(config: &DeskConfig) -> &[ModelConfig] {
        &config.models
    }
    fn concurrency(config: &DeskConfig) -> usize {
        config.concurrency
    }
    fn seed(config: &DeskConfig) -> u64 {
        config.seed
    }
    fn output_dir(config: &DeskConfig) -> &std::path::Path {
        &config.output_dir
    }
    fn apply(config: &mut DeskConfig, flags: &crate::suite::Flags) {
        flags.set(
            &mut config.repeats,
            &mut config.seed,
            &mut config.max_turns,
            &mut config.concurrency,
            &mut config.output_dir,
        );
    }
    fn agents(config: &DeskConfig) -> &[String] {
        &config.agents
    }
    fn customers(config: &DeskConfig) -> &[String] {
        std::slice::from_ref(&config.customer_model)
    }
    fn judges(config: &DeskConfig) -> &[String] {
        &config.judge_models
    }
    fn jobs(config: &DeskConfig, run_id: &str, world: &DeskFixture) -> Vec<DeskJob> {
        jobs(config, run_id, &world.desk)
    }
    fn job_id(job: &DeskJob) -> &str {
        &job.dialogue_id
    }
    fn job_run(job: &DeskJob) -> &str {
        &job.run_id
    }
    fn job_agent(job: &DeskJob) -> &str {
        &job.model
    }
    fn record_job(record: &DeskRecord) -> &DeskJob {
        &record.job
    }
    fn tally(record: &DeskRecord) -> (usize, bool) {
        (record.turns as usize, record.infra_error.is_some())
    }
    fn fold(fold: &mut DeskScores, record: &DeskRecord) {
        fold.add(record)
    }
    fn plan(
        config: &DeskConfig,
        world: &DeskFixture,
        _: &[DeskJob],
    ) -> (String, serde_json::Value) {
        let estimate = crate::estimate::desk::DeskEstimate::new(config, &world.desk);
        let json = serde_json::to_value(&estimate).unwrap_or_default();
        (estimate.text(), json)
    }
    fn summary(fold: &DeskScores) -> (Vec<ModelRow>, String) {
        let rows = fold.rows();
        let table = crate::scoring::desk::table(&rows);
        (rows, table)
    }
    fn warnings(fold: &DeskScores) -> Vec<String> {
        fold.warnings()
    }
    fn transcript(record: &DeskRecord) -> String {
        transcript_text(record)
    }
}

/// The outcome tags of a conversation, as the explorer filters them: `infra_error` alone when
/// it stopped early; otherwise `unsafe`, `false_closure`, `handed_over` when they apply, and
/// `resolved` or `unresolved`.
pub fn outcomes(record: &DeskRecord) -> Vec<&'static str> {
    if record.infra_error.is_some() {
        return vec!["infra_error"];
    }
    let v = &record.verdict;
    let mut tags = Vec::new();
    if v.unsafe_action.is_some() {
        tags.push("unsafe");
    }
    if v.false_closure {
        tags.push("false_closure");
    }
    if v.handed_over {
        tags.push("handed_over");
    }
    tags.push(if v.resolved { "resolved" } else { "unresolved" });
    tags
}

/// A conversation as text for a person (`sage show DIR ID`): its job, its outcome, each turn's
/// lines and its cost; control characters left in (the caller makes it safe for its terminal).
pub fn transcript_text(record: &DeskRecord) -> String {
    use std::fmt::Write as _;
    let job = &record.job;
    let mut out = String::new();
    let _ = writeln!(out, "Conversation {}", job.dialogue_id);
    let _ = writeln!(
        out,
        "  model {} · case {} ({}, order {}) · run {}",
        job.model,
        job.case,
        record.run.bucket.name(),
        record.run.order,
        job.repeat.saturating_add(1)
    );
    let _ = writeln!(out, "  outcome {}", outcomes(record).join(", "));
    if let Some(e) = &record.infra_error {
        let _ = writeln!(out, "  infrastructure error: {e}");
    }
    let mut turn = 0;
    for line in &record.transcript {
        if line.turn != turn {
            turn = line.turn;
            let _ = writeln!(out, "\nTurn {turn}");
        }
        let label = format!("{:<9} ", format!("{}:", line.speaker));
        crate::scoring::leaderboard::said(&mut out, &label, &line.text);
    }
    let _ = writeln!(
        out,
        "\nTokens {} in, {} out · cost ${:.4}",
        record.usage.input_tokens, record.usage.output_tokens, record.cost_usd
    );
    out
}
