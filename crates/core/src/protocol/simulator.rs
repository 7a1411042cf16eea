//! Who played the customer: summary.json's `simulator`, recorded in the manifest when a run
//! starts (made by [`crate::simulator::describe`]). A score depends on the customer simulator as
//! much as on the agent (a stronger or more cooperative simulator raises every row), so a
//! result names it and `sage report --compare` checks it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The customer simulator of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Simulator {
    /// The user model's `name` in the configuration.
    pub name: String,
    /// Its provider (`openai`, `anthropic`, `http_agent`, `simulated`).
    pub provider: String,
    /// The model id sent to the provider (its `model`, else its name).
    pub model: String,
    /// What else decides its lines: `temperature`, `seed`, `max_tokens` when set, and a
    /// simulated model's `sim` settings.
    pub parameters: BTreeMap<String, serde_json::Value>,
    /// Whether `customer_guard` asked it again when a line was off-script.
    pub customer_guard: bool,
    /// SHA-256 of its prompt template ([`crate::simulator::template_probe`]).
    pub prompt_sha256: String,
    /// The simulator's version in this project ([`crate::prompts::user::SIMULATOR_VERSION`]).
    pub version: u32,
}

impl Simulator {
    /// One line for people: `sim-user (simulated; simulator v1, prompt 3fa2c1d4e5b6)`.
    pub fn line(&self) -> String {
        let model = if self.model == self.name {
            String::new()
        } else {
            format!(" {}", self.model)
        };
        let guard = if self.customer_guard {
            ", customer_guard"
        } else {
            ""
        };
        format!(
            "{} ({}{model}; simulator v{}, prompt {}{guard})",
            self.name,
            self.provider,
            self.version,
            self.prompt_sha256.chars().take(12).collect::<String>()
        )
    }

    /// What differs from `other`, in words (empty: the same simulator).
    pub fn differences(&self, other: &Simulator) -> Vec<String> {
        let mut out = Vec::new();
        let mut differ = |what: &str, a: String, b: String| {
            if a != b {
                out.push(format!("{what} {a} / {b}"));
            }
        };
        differ("user model", self.name.clone(), other.name.clone());
        differ("provider", self.provider.clone(), other.provider.clone());
        differ("model id", self.model.clone(), other.model.clone());
        differ(
            "parameters",
            serde_json::to_string(&self.parameters).unwrap_or_default(),
            serde_json::to_string(&other.parameters).unwrap_or_default(),
        );
        differ(
            "customer_guard",
            self.customer_guard.to_string(),
            other.customer_guard.to_string(),
        );
        differ(
            "prompt",
            self.prompt_sha256.chars().take(12).collect(),
            other.prompt_sha256.chars().take(12).collect(),
        );
        differ(
            "simulator version",
            self.version.to_string(),
            other.version.to_string(),
        );
        out
    }
}

/// Most customer simulators one run plays every case with (`user_models`).
pub const MAX_USER_MODELS: usize = 4;

/// A customer line that asserts what its case does not hold: it says the words of another
/// intent of the scenario (its description, or one of its facts the case's own intent does not
/// share), and that intent implies a value of a field the case fixes otherwise. The agent's
/// failures after such a line may be the simulator's doing (docs/judges.md, "Off-case
/// customer lines"); found by `crate::scoring::fidelity::off_case`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffCase {
    /// The other intent whose words the line says.
    pub intent: String,
    /// A field that intent implies another value of.
    pub field: String,
    /// The case's value of that field.
    pub case_value: String,
}

impl OffCase {
    /// In a few words: `says intent X, which has another F than this case's V`.
    pub fn describe(&self) -> String {
        format!(
            "says intent {}, which has another {} than this case's {}",
            self.intent, self.field, self.case_value
        )
    }
}
