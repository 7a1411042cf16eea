//! A support-desk store and its cases as the role actors serve them: the cases by id, the agent's system
//! prompt and the tool specs, rendered once per run. The SAGE roles' registry holds one for a
//! support-desk run; the desk's role handlers read it.

use sage_core::prompts::desk as prompts;
use sage_core::protocol::chat::ToolSpec;
use sage_core::scenario::desk::{Case, Desk, Tool};
use std::collections::HashMap;
use std::sync::Arc;

/// A store and its cases as the roles serve them: cases by id, the agent's system prompt and
/// the tool specs rendered once.
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
            agent_prompt: prompts::agent_system_prompt(&desk.store).into(),
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
