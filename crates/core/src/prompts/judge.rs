//! The judges' prompt (appendix B.3.2, "Judge Prompt Template"): classify every field and score
//! the agent's reply on five chat-quality dimensions, each 3, 6 or 9. A judge sees the system
//! information S, the history, the user message and the agent's `chat` only: never the agent's
//! reasoning, path or action. Its answer is parsed by
//! [`crate::protocol::parse::parse_judge_output`].

use super::agent::system_information;
use super::{
    SystemPrompt, classification_template, current_information_section, field_lines,
    variables_section,
};
use crate::protocol::chat::{ChatMessage, ChatRole};
pub use crate::protocol::rubric::{DIMENSIONS, Dimension};
use crate::protocol::{DialogueJob, Line, Speaker};
use crate::sop::Sop;
use std::fmt::Write;
use std::sync::Arc;

/// The judges' system prompt for a job: the task, every field with its values, the system
/// variables, the five dimensions with weights and 3/6/9 rubrics, the JSON output format, then
/// the job's system information (last: the rest is the same for every dialogue of the
/// scenario, a prefix a provider's cache can hold).
pub fn judge_system_prompt(sop: &Sop, job: &DialogueJob) -> String {
    judge_system_prompt_split(sop, job).text
}

/// [`judge_system_prompt`], with where the part every dialogue of the scenario shares ends.
pub fn judge_system_prompt_split(sop: &Sop, job: &DialogueJob) -> SystemPrompt {
    let sc = sop.scenario();
    let field_names: Vec<&str> = sc.fields().map(|k| k.name.as_str()).collect();
    let mut p = format!(
        "You are an expert evaluator assessing the quality of customer service agent responses \
         in a {} scenario.\nScenario: {}\n\n\
         [Your Task]\n\
         Evaluate the agent's response based on the dialogue history, the user message and the \
         agent's reply. Provide:\n\
         1. Classification of dialogue fields ({})\n\
         2. Chat quality evaluation across five dimensions\n\n\
         [Dialogue Fields]\n\
         Classify each field from the dialogue history, the user message and the system \
         information, using exactly one of its values:\n{}\n",
        sc.domain,
        sc.description,
        field_names.join(", "),
        field_lines(sop, "")
    );
    p.push_str(&variables_section(sop));
    p.push_str("\n[Chat Quality Dimensions]\nEach dimension is scored on a 3-level scale:\n");
    for (i, d) in DIMENSIONS.iter().enumerate() {
        let _ = writeln!(p, "{}. {} (Weight: {}%)", i + 1, d.name, d.weight);
        for (points, meaning) in [9, 6, 3].iter().zip(d.rubric) {
            let _ = writeln!(p, "- {points} points: {meaning}");
        }
    }
    let dimensions: Vec<String> = DIMENSIONS
        .iter()
        .map(|d| format!("    \"{}\": 3 or 6 or 9", d.key))
        .collect();
    let _ = write!(
        p,
        "\n[Output Format]\n{{\n  \"classification\": {},\n  \
         \"chat_quality_dimensions\": {{\n{}\n  }},\n  \
         \"classification_reasoning\": \"Explanation for classification decisions\",\n  \
         \"chat_quality_reasoning\": \"Explanation for each dimension's score (e.g., 9 points \
         means..., 6 points means..., 3 points means...)\"\n}}\n\n\
         [Requirements]\n\
         1. Only output valid JSON\n\
         2. Scores must be exactly 3, 6, or 9 for each dimension\n\
         3. Every field must have exactly one of the values listed for it\n\
         4. Provide clear reasoning for both classification and quality evaluation\n",
        classification_template(sop),
        dimensions.join(",\n")
    );
    // The job's values last: everything above is the same for every dialogue of the scenario.
    SystemPrompt::joined(
        p,
        &current_information_section(sop, &system_information(sop, job)),
    )
}

/// The judges' conversation: the system prompt, then one user message holding the dialogue
/// history, the user message of this turn and the agent's reply (its `chat` only).
pub fn judge_messages(
    system: Arc<str>,
    history: &[Line],
    user_message: &str,
    agent_chat: &str,
) -> Vec<ChatMessage> {
    let mut transcript = String::new();
    for line in history {
        let who = match line.speaker {
            Speaker::User => "User",
            Speaker::Agent => "Agent",
        };
        let _ = writeln!(transcript, "{who}: {}", line.text);
    }
    if transcript.is_empty() {
        transcript.push_str("(none)\n");
    }
    let content = format!(
        "[Dialogue History]\n{transcript}\n[User Message]\n{user_message}\n\n\
         [Agent Reply]\n{agent_chat}\n\n\
         Evaluate the agent reply now. Output only the JSON object."
    );
    vec![
        ChatMessage::new(ChatRole::System, system),
        ChatMessage::new(ChatRole::User, content),
    ]
}
