//! The user simulator's prompt (appendix B.3.2, "User Simulator Prompt", and the guidelines of
//! B.2) and the parsing of its reply.
//!
//! The simulator is given only its own case: the intent's description and facts, the adversarial
//! level, the persona, and the job's field and variable values stated as what the customer knows
//! about themself. It never sees other intents, stage ids or the SOP.

use super::{push_history, push_merged};
use crate::protocol::chat::{ChatMessage, ChatRole};
use crate::protocol::{DialogueJob, Line, Speaker};
use crate::scenario::{Adversarial, Cooperativeness, Value};
use crate::sop::{Assignment, Sop};
use serde::{Deserialize, Serialize};
use std::fmt::Write;
use std::sync::Arc;

/// What the simulator answers to end the dialogue.
pub const END_MARKER: &str = "[END]";

/// The cue that opens the simulator's conversation (chat APIs expect a `user` message first).
pub(crate) const OPENING_CUE: &str =
    "[The chat with customer service is open. Write your first message to the agent.]";

/// The cue sent when the customer spoke last and the agent has not answered.
pub(crate) const CONTINUE_CUE: &str =
    "[No answer from customer service yet. Write your next message.]";

/// Why a user-simulator reply is not a usable customer message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum UserOutputError {
    /// Nothing but whitespace (after removing quotes and a speaker label).
    #[error("empty user message")]
    Empty,
    /// The model refused or stepped out of the role.
    #[error("the user simulator refused or broke character: {text}")]
    Refusal {
        /// The reply.
        text: String,
    },
    /// Only punctuation or symbols, no words.
    #[error("the user message has no words: {text}")]
    NoContent {
        /// The reply.
        text: String,
    },
}

/// The user simulator's system prompt for a job: identity (intent, adversarial level, persona),
/// its situation (the intent's facts, the job's values, the intent's context), the interaction
/// rules of B.2.2, and the reply format (the next message, or exactly `[END]`). An intent or
/// persona the scenario does not have is left out.
pub fn user_system_prompt(sop: &Sop, job: &DialogueJob) -> String {
    let sc = sop.scenario();
    let intent = sc.intents.iter().find(|i| i.id == job.intent);
    let persona = sc.personas.iter().find(|p| p.id == job.persona);
    let mut p = format!(
        "You are role-playing as a customer contacting customer service ({}) about your own \
         case.\n\n[Your Identity]\n",
        sc.domain
    );
    if let Some(intent) = intent {
        let _ = writeln!(p, "- Your intent: {}", intent.description);
    }
    let _ = writeln!(
        p,
        "- Adversarial level: {}",
        adversarial_description(job.adversarial)
    );
    if let Some(persona) = persona {
        let _ = writeln!(p, "- Your personality: {}", persona.traits.join(", "));
        let _ = writeln!(
            p,
            "- Your communication style: {}",
            persona.communication_style
        );
        let _ = writeln!(
            p,
            "- Your cooperativeness: {}",
            cooperativeness_description(persona.cooperativeness)
        );
    }
    p.push_str(
        "\n[Your Situation]\nWhat you know about your own case (\"the user\" below means you). \
         Reveal it gradually, only when it fits the conversation:\n",
    );
    for fact in intent.map(|i| i.facts.as_slice()).unwrap_or_default() {
        let _ = writeln!(p, "- {fact}");
    }
    p.push_str(&situation(sop, &job.fields));
    p.push_str(&situation(sop, &job.variables));
    for (name, text) in intent.map(|i| i.context.as_slice()).unwrap_or_default() {
        let _ = writeln!(p, "- {name}: {text}");
    }
    p.push('\n');
    p.push_str(GUIDELINES);
    p.push_str(&format!(
        "\n[Reply Format]\nReply with only your next message to customer service, as plain \
         text, without quotes or a speaker label. When your problem is resolved and you are \
         satisfied, or you give up, reply with exactly {END_MARKER} and nothing else.\n"
    ));
    p
}

/// The customer simulator's version in this project (summary.json's `simulator.version`): bump
/// it whenever what the customer model is told or how its lines are checked changes (this
/// module's prompt, cues and re-ask note, the reply parsing, or `customer_guard`'s checks).
/// A test holds [`crate::simulator::template_probe`]'s hash against it.
pub const SIMULATOR_VERSION: u32 = 1;

/// The simulator's conversation, from its point of view: the system prompt, an opening cue, then
/// the history with the agent's lines as `user` and the customer's own lines as `assistant`;
/// it always ends with a `user` message.
pub fn user_messages(system: Arc<str>, history: &[Line]) -> Vec<ChatMessage> {
    let mut messages = vec![ChatMessage::new(ChatRole::System, system)];
    push_merged(&mut messages, ChatRole::User, OPENING_CUE);
    push_history(&mut messages, history, |speaker| match speaker {
        Speaker::Agent => ChatRole::User,
        Speaker::User => ChatRole::Assistant,
    });
    if messages
        .last()
        .is_some_and(|m| m.role == ChatRole::Assistant)
    {
        push_merged(&mut messages, ChatRole::User, CONTINUE_CUE);
    }
    messages
}

/// The note `customer_guard` appends when it asks the simulator again because its line was
/// off-script (empty, a repeat of an earlier line of its own, or the agent's words).
pub const REASK_NOTE: &str = "[Stay in your role as the customer described above: do not \
     repeat an earlier message and do not speak as the agent. Write your next message.]";

/// The simulator's conversation `messages` (from [`user_messages`]) asked again by
/// `customer_guard`: the same messages with [`REASK_NOTE`] appended to the last one (always
/// the agent's side, a `user` message).
pub fn user_reask_messages(messages: &[ChatMessage]) -> Vec<ChatMessage> {
    let mut messages = messages.to_vec();
    push_merged(&mut messages, ChatRole::User, REASK_NOTE);
    messages
}

/// Reads the simulator's reply: `Ok(None)` when it ends the dialogue (`[END]` in any case, alone
/// or closing the reply), `Ok(Some(message))` otherwise. Surrounding quotes and a leading
/// `Customer:` or `User:` label are removed. Errors: empty text, a refusal or out-of-role answer at the start
/// (`I'm sorry, but I can't ...`, `As an AI ...`), or text without any letter or digit.
pub fn parse_user_output(raw: &str) -> Result<Option<String>, UserOutputError> {
    let text = clean(raw);
    if text.to_ascii_uppercase().ends_with(END_MARKER) {
        return Ok(None);
    }
    if text.is_empty() {
        return Err(UserOutputError::Empty);
    }
    if is_refusal(&text) {
        return Err(UserOutputError::Refusal { text });
    }
    if !text.chars().any(char::is_alphanumeric) {
        return Err(UserOutputError::NoContent { text });
    }
    Ok(Some(text))
}

/// The reply without surrounding whitespace, quotes and speaker labels (repeated until stable,
/// so `Customer: "Hi"` and `"Customer: Hi"` both give `Hi`).
fn clean(raw: &str) -> String {
    let mut text = raw.trim();
    loop {
        let before = text;
        text = strip_label(text);
        text = strip_quotes(text);
        if text == before {
            return text.to_string();
        }
    }
}

fn strip_label(text: &str) -> &str {
    for label in ["customer:", "user:"] {
        if let Some(head) = text.get(..label.len())
            && head.eq_ignore_ascii_case(label)
        {
            return text[label.len()..].trim();
        }
    }
    text
}

fn strip_quotes(text: &str) -> &str {
    for (open, close) in [('"', '"'), ('\'', '\''), ('“', '”'), ('`', '`')] {
        if let Some(inner) = text.strip_prefix(open).and_then(|t| t.strip_suffix(close)) {
            return inner.trim();
        }
    }
    text
}

/// True when the reply opens like a model refusal or an out-of-role statement.
fn is_refusal(text: &str) -> bool {
    const OPENINGS: [&str; 9] = [
        "i'm sorry, but i can't",
        "i'm sorry, but i cannot",
        "i am sorry, but i can't",
        "i am sorry, but i cannot",
        "i'm sorry, i can't assist",
        "i can't assist with",
        "i cannot assist with",
        "as an ai",
        "as a language model",
    ];
    let start = text.to_lowercase().replace('’', "'");
    OPENINGS.iter().any(|o| start.starts_with(o))
}

/// The job's values as statements about the customer: `- <description>: <value>`.
fn situation(sop: &Sop, values: &Assignment) -> String {
    let sc = sop.scenario();
    let mut s = String::new();
    for (name, value) in values {
        let description = sc
            .key_index(name)
            .map_or(name.as_str(), |k| sc.keys[k].description.as_str());
        let value = match value {
            Value::Bool(true) => "yes".to_string(),
            Value::Bool(false) => "no".to_string(),
            other => other.to_string(),
        };
        let _ = writeln!(s, "- {description}: {value}");
    }
    s
}

/// The adversarial level as section 3.3 describes it.
fn adversarial_description(level: Adversarial) -> &'static str {
    match level {
        Adversarial::Zero => {
            "zero. You are cooperative: your goal matches what the service offers; you make clear \
             requests with a friendly attitude and accept reasonable recommendations."
        }
        Adversarial::Weak => {
            "weak. You bring procedural friction or rational criticism: complex constraints or \
             ambiguous needs, mild concerns and questions, but no direct hostility."
        }
        Adversarial::Strong => {
            "strong. You are in a high-stakes conflict driven by emotional dissatisfaction or \
             urgency: you are demanding, press aggressively for an immediate resolution and \
             have to be negotiated with and calmed down."
        }
    }
}

/// How willing the persona is to cooperate.
fn cooperativeness_description(c: Cooperativeness) -> &'static str {
    match c {
        Cooperativeness::High => "high: you answer the agent's questions readily",
        Cooperativeness::Medium => {
            "medium: you answer the agent's questions, sometimes only after a second prompt"
        }
        Cooperativeness::Low => "low: you hold back details and resist until pressed",
    }
}

/// The interaction requirements of appendix B.3.2 (B.2.2's guidelines).
const GUIDELINES: &str = "[Interaction Requirements]
* What you should do:
- Use natural English consistent with your personality, and keep the same language throughout \
the conversation
- Respond to the customer service representative's reply and gradually advance the conversation
- Strictly focus on your current intent, do not deviate to other irrelevant topics
- Avoid revealing all information at once; disclose details gradually so the conversation lasts \
several rounds
- Keep each reply concise and natural (5-15 words), like a real user's message
- When customer service asks for information, provide it gradually according to your \
personality and situation
- When the problem is not fully resolved, keep asking for details, confirming the process or \
expressing concerns
- Respond appropriately to the agent's actions: if satisfied, thank them and confirm the next \
steps; if not, keep stating your demands
* What you should NOT do:
- Do not cross intent boundaries or switch to another request mid-conversation
- Do not end the conversation too early: do not say \"OK thank you\" and leave before the \
problem is solved
- Do not switch languages during the conversation
- Do not provide all information at once
- Do not deviate from your personality and adversarial level
- Do not mention that you are an AI or a simulation; stay fully in the customer role
[Important Notes]
- Maintain role consistency and keep your emotion and adversarial level throughout
- Adopt the attitude your adversarial level describes, and insist on your position when necessary
- Let the conversation continue naturally by asking, confirming and expressing emotions
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asked_again_the_same_messages_end_with_the_note() {
        let history = [Line {
            speaker: Speaker::User,
            text: "My bill is wrong.".into(),
        }];
        let messages = user_messages(Arc::from("system"), &history);
        let again = user_reask_messages(&messages);
        assert_eq!(again.len(), messages.len());
        assert_eq!(again[..again.len() - 1], messages[..messages.len() - 1]);
        let (last, before) = (&again[again.len() - 1], &messages[messages.len() - 1]);
        assert_eq!(last.role, ChatRole::User);
        assert_eq!(
            &*last.content,
            format!("{}\n\n{REASK_NOTE}", before.content)
        );
    }
}
