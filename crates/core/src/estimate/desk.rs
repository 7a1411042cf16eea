//! What a support-desk run will do, counted before it does it (`sage run --suite support-desk
//! --plan`): its conversations and the most model calls they make.

use super::thousands;
use crate::plan::desk::{DeskConfig, MAX_ROUNDS};
use crate::scenario::desk::Desk;
use crate::scoring::leaderboard::{TERMINAL_WIDTH, Table, model_label, wrap};
use serde::Serialize;

/// What a support-desk run will do (`sage run --suite support-desk --plan`): its conversations
/// and the most model calls they make. Tokens and cost are not estimated: the tool rounds of a
/// turn, and what each returns, depend on the agent.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DeskEstimate {
    /// Conversations in the run: cases x repeats x agents.
    pub conversations: usize,
    /// Cases of the store.
    pub cases: usize,
    /// Runs of each case.
    pub repeats: u32,
    /// The agents under test.
    pub agents: Vec<String>,
    /// Whether each agent is a built-in simulated model, in the order of `agents`.
    pub simulated: Vec<bool>,
    /// Most customer turns.
    pub max_turns: u32,
    /// The agent's calls in one conversation, at most: `max_turns` turns of [`MAX_ROUNDS`].
    pub agent_calls_at_most: u64,
    /// The customer's calls in one conversation, at most: one after each agent turn but the
    /// last (its opening is the case's email).
    pub customer_calls_at_most: u64,
    /// The judges' calls in one conversation: the judge and the second judge, once each.
    pub judge_calls: u64,
}

impl DeskEstimate {
    /// What `config` will do over the store `desk`.
    pub fn new(config: &DeskConfig, desk: &Desk) -> DeskEstimate {
        let simulated = config
            .agents
            .iter()
            .map(|a| {
                config
                    .models
                    .iter()
                    .any(|m| &m.name == a && m.provider == crate::plan::model::Provider::Simulated)
            })
            .collect();
        DeskEstimate {
            conversations: desk.cases.len() * config.repeats as usize * config.agents.len(),
            cases: desk.cases.len(),
            repeats: config.repeats,
            agents: config.agents.clone(),
            simulated,
            max_turns: config.max_turns,
            agent_calls_at_most: u64::from(config.max_turns) * u64::from(MAX_ROUNDS),
            customer_calls_at_most: u64::from(config.max_turns.saturating_sub(1)),
            judge_calls: config.judge_models.len().min(2) as u64,
        }
    }

    /// The most calls of one conversation, every role.
    pub fn calls_at_most(&self) -> u64 {
        self.agent_calls_at_most + self.customer_calls_at_most + self.judge_calls
    }

    /// The run in one line: `1,458 conversations (162 cases x 3 runs x 3 agents)`.
    pub fn line(&self) -> String {
        let s = |n: usize| if n == 1 { "" } else { "s" };
        format!(
            "{} conversation{} ({} case{} x {} run{} x {} agent{})",
            thousands(self.conversations as f64),
            s(self.conversations),
            thousands(self.cases as f64),
            s(self.cases),
            self.repeats,
            s(self.repeats as usize),
            self.agents.len(),
            s(self.agents.len()),
        )
    }

    /// The plan as `sage run --suite support-desk --plan` prints it, every line at most
    /// [`TERMINAL_WIDTH`] characters.
    pub fn text(&self) -> String {
        let n = |x: u64| thousands(x as f64);
        let mut out = wrap("", &self.line(), TERMINAL_WIDTH, "  ");
        let mut per = Table::with(&["Per conversation", "At most"]);
        per.rows
            .push(vec!["agent calls".into(), n(self.agent_calls_at_most)]);
        per.rows.push(vec![
            "customer calls".into(),
            n(self.customer_calls_at_most),
        ]);
        per.rows
            .push(vec!["judge calls".into(), n(self.judge_calls)]);
        per.rows.push(vec!["all".into(), n(self.calls_at_most())]);
        out.push('\n');
        out.push_str(&per.text_within(TERMINAL_WIDTH));
        let per_agent = (self.cases * self.repeats as usize) as u64;
        let mut agents = Table::with(&["Agent under test", "Conversations", "Calls max"]);
        for (agent, simulated) in self.agents.iter().zip(&self.simulated) {
            agents.rows.push(vec![
                model_label(agent, *simulated, false),
                n(per_agent),
                n(per_agent * self.calls_at_most()),
            ]);
        }
        agents.rows.push(vec![
            "Total".into(),
            n(self.conversations as u64),
            n(self.conversations as u64 * self.calls_at_most()),
        ]);
        out.push('\n');
        out.push_str(&agents.text_within(TERMINAL_WIDTH));
        out.push_str(&wrap(
            "",
            &format!(
                "At most: every conversation runs max_turns {} turns, each agent turn {} calls (tool rounds, then \
                 the answer), every call answered at its first attempt; the judges score each conversation once \
                 each. Tokens and cost are not estimated for the support desk: a turn's tool rounds, and what they \
                 return, depend on the agent.",
                self.max_turns, MAX_ROUNDS
            ),
            TERMINAL_WIDTH,
            "",
        ));
        out
    }
}
