//! The service agent's prompt (appendix B.3.2, "Customer Service Agent Prompt"): role, system
//! variables, the SOP flow rendered from the compiled graph, action
//! descriptions, and the JSON output contract that [`crate::protocol::parse_agent_output`]
//! checks, then the job's current system information (last, so that the rest is a prefix every
//! dialogue of the scenario shares).
//!
//! The [SOP Flow] section is generated from [`Sop::transitions`], the edges the rule engine
//! walks, so the instructions and the reference can never disagree: every stage in file order,
//! every edge with its case as written and its target (`Enquiry→step3`,
//! `Penalty == 0→ACTION=ChangeOrder→END`, `...→set PLAN=PLAN_A→step7`).

use super::{
    SystemPrompt, classification_template, current_information_section, field_lines, push_history,
    push_merged, quoted_alternatives, variables_section,
};
use crate::protocol::chat::{ChatMessage, ChatRole};
use crate::protocol::{DialogueJob, Line, Speaker};
use crate::scenario::{Guard, KeyKind, Scope, StageKind, Value};
use crate::sop::{Assignment, Edge, Node, Sop};
use std::fmt::Write;
use std::sync::Arc;

/// The system information S the agent and the judges see: the job's system variables, then the
/// extra context of the job's intent (e.g. Online Education's `CourseList`) as text values.
pub fn system_information(sop: &Sop, job: &DialogueJob) -> Assignment {
    let mut info = job.variables.clone();
    let intent = sop.scenario().intents.iter().find(|i| i.id == job.intent);
    for (name, text) in intent.map(|i| i.context.as_slice()).unwrap_or_default() {
        info.insert(name.clone(), Value::Str(text.clone()));
    }
    info
}

/// The agent's system prompt for a job whose system information is `variables` (see
/// [`system_information`]): the paper's sections (role, system variables with their
/// descriptions and values, SOP flow, actions, output format, key requirements), then the job's
/// current values and any other entry as extra system information. Laid out for prefix caching:
/// everything before the last section is the same for every dialogue of the scenario, and the
/// whole prompt is the same on every turn of a dialogue.
pub fn agent_system_prompt(sop: &Sop, variables: &Assignment) -> String {
    agent_system_prompt_split(sop, variables).text
}

/// [`agent_system_prompt`], with where the part every dialogue of the scenario shares ends.
pub fn agent_system_prompt_split(sop: &Sop, variables: &Assignment) -> SystemPrompt {
    let sc = sop.scenario();
    let mut p = String::new();
    let _ = writeln!(
        p,
        "You are a professional intelligent customer service representative handling {}. You \
         must process user enquiries according to the following Standard Operating Procedure \
         (SOP) and system variables, outputting a complete response in JSON format.",
        sc.domain
    );
    let _ = writeln!(p, "Scenario: {}", sc.description);
    p.push('\n');
    p.push_str(&variables_section(sop));
    p.push('\n');
    p.push_str(&sop_flow_section(sop));
    p.push('\n');
    p.push_str(&actions_section(sop));
    p.push('\n');
    p.push_str(&output_format_section(sop));
    p.push('\n');
    p.push_str(&key_requirements_section(sop));
    // The job's values last: everything above is the same for every dialogue of the scenario.
    SystemPrompt::joined(p, &current_information_section(sop, variables))
}

/// The agent's conversation: the system prompt ([`agent_system_prompt`], which callers may
/// reuse across turns), the history (the customer's lines as `user`, the agent's chat texts as
/// `assistant`), then the new user message.
pub fn agent_messages(system: Arc<str>, history: &[Line], user_message: &str) -> Vec<ChatMessage> {
    let mut messages = vec![ChatMessage::new(ChatRole::System, system)];
    push_history(&mut messages, history, |speaker| match speaker {
        Speaker::User => ChatRole::User,
        Speaker::Agent => ChatRole::Assistant,
    });
    push_merged(&mut messages, ChatRole::User, user_message);
    messages
}

/// [SOP Flow Introduction]: every stage in file order with its jump logic.
fn sop_flow_section(sop: &Sop) -> String {
    let sc = sop.scenario();
    let mut s = String::from("[SOP Flow Introduction]\n");
    let _ = writeln!(
        s,
        "Start at {} and follow the jump logic stage by stage until an ACTION ends the flow.",
        sc.stages[sc.start].id
    );
    for (i, stage) in sc.stages.iter().enumerate() {
        let _ = write!(s, "{}. {} ({})", i + 1, stage.title, stage.id);
        match &stage.description {
            Some(d) => {
                let _ = writeln!(s, ": {d}.");
            }
            None => s.push_str(":\n"),
        }
        if i == sc.start {
            s.push_str(&classification_instructions(sop));
        }
        s.push_str(&jump_logic(sop, i));
    }
    s
}

/// The start stage's instruction to classify every field.
fn classification_instructions(sop: &Sop) -> String {
    format!(
        "   - Classify the following {} fields based on the dialogue history and the system \
         information:\n{}",
        sop.scenario().fields().count(),
        field_lines(sop, "     ")
    )
}

/// A stage's jump logic: what it decides on, then one line per edge in file order.
fn jump_logic(sop: &Sop, stage: usize) -> String {
    let sc = sop.scenario();
    let edges: Vec<(&Edge, Node)> = sop.transitions(stage).collect();
    let mut s = match &sc.stages[stage].kind {
        StageKind::Next => "   - Jump Logic:\n".to_string(),
        StageKind::Branch { key } => format!(
            "   - Jump Logic: based on the value of the {}:\n",
            key_reference(sop, *key)
        ),
        StageKind::Rules { keys } => {
            let names: Vec<String> = keys.iter().map(|k| key_reference(sop, *k)).collect();
            format!(
                "   - Jump Logic: based on the combination of the {}; apply the one rule that \
                 matches (`A|B` means A or B; a key a rule does not mention matches any \
                 value):\n",
                names.join(" and the ")
            )
        }
    };
    for (edge, to) in edges {
        let _ = writeln!(
            s,
            "     - {}{}",
            case_text(sop, stage, edge),
            target_text(sop, edge, to)
        );
    }
    s
}

/// `field [Name]` or `system variable [Name]`.
fn key_reference(sop: &Sop, key: usize) -> String {
    let k = &sop.scenario().keys[key];
    match k.scope {
        Scope::Field => format!("field [{}]", k.name),
        Scope::Variable => format!("system variable [{}]", k.name),
    }
}

/// The case of an edge as written; integer predicates name their key (`Penalty == 0`).
fn case_text(sop: &Sop, stage: usize, edge: &Edge) -> String {
    let sc = sop.scenario();
    match (&edge.guard, &sc.stages[stage].kind) {
        (Guard::Always, _) => "always".into(),
        (Guard::Otherwise, _) => "otherwise (no case above applies)".into(),
        (Guard::When(_), StageKind::Branch { key }) => {
            let k = &sc.keys[*key];
            match k.kind {
                KeyKind::Integer { .. } => integer_case(&k.name, &edge.label),
                _ => edge.label.clone(),
            }
        }
        (Guard::When(_), _) => edge.label.clone(),
    }
}

/// An integer case with its key: `Penalty == 0`, `Penalty in 1..5`, `Penalty = 3`.
fn integer_case(key: &str, label: &str) -> String {
    let label = label.trim();
    if label.starts_with(['=', '!', '<', '>']) {
        format!("{key} {label}")
    } else if label.contains("..") {
        format!("{key} in {label}")
    } else {
        format!("{key} = {label}")
    }
}

/// Where an edge leads, with the outputs it sets: `→step3`, `→set PLAN=PLAN_A→step7`,
/// `→ACTION=ChangeOrder→END`.
fn target_text(sop: &Sop, edge: &Edge, to: Node) -> String {
    let sc = sop.scenario();
    let mut s = String::new();
    for (o, value) in &edge.set {
        let _ = write!(s, "→set {}={}", sc.outputs[*o].name, value);
    }
    match to {
        Node::Stage(i) => {
            let _ = write!(s, "→{}", sc.stages[i].id);
        }
        Node::Action(a) => {
            let _ = write!(s, "→ACTION={}→END", sc.actions[a].name);
        }
        Node::Start => s.push_str("→START"),
    }
    s
}

/// [Action Descriptions], and the declared outputs.
fn actions_section(sop: &Sop) -> String {
    let sc = sop.scenario();
    let mut s = String::from("[Action Descriptions]\n");
    for action in &sc.actions {
        let _ = write!(s, "- {}: {}", action.name, action.description);
        let carried: Vec<&str> = action
            .outputs
            .iter()
            .map(|o| sc.outputs[*o].name.as_str())
            .collect();
        if !carried.is_empty() {
            let _ = write!(s, " (also output {})", carried.join(", "));
        }
        s.push('\n');
    }
    if !sc.outputs.is_empty() {
        s.push_str("[Output Descriptions]\n");
        for (i, output) in sc.outputs.iter().enumerate() {
            let _ = write!(
                s,
                "- {}: {} ({}). Output the value set on your path when the Action is {}",
                output.name,
                output.description,
                output.options.join("/"),
                carrying_actions(sop, i).join(" or ")
            );
            match &output.default {
                Some(d) => {
                    let _ = writeln!(s, "; otherwise output {d}.");
                }
                None => s.push_str(".\n"),
            }
        }
    }
    s
}

/// The actions that carry output `o`.
fn carrying_actions(sop: &Sop, o: usize) -> Vec<&str> {
    sop.scenario()
        .actions
        .iter()
        .filter(|a| a.outputs.contains(&o))
        .map(|a| a.name.as_str())
        .collect()
}

/// [Output Format Requirements]: the JSON template.
fn output_format_section(sop: &Sop) -> String {
    let sc = sop.scenario();
    let mut finals = vec![format!(
        "    \"Action\": {}",
        quoted_alternatives(sc.actions.iter().map(|a| a.name.as_str()).collect())
    )];
    for output in &sc.outputs {
        let mut values: Vec<&str> = output.options.iter().map(String::as_str).collect();
        values.extend(output.default.as_deref());
        finals.push(format!(
            "    \"{}\": {}",
            output.name,
            quoted_alternatives(values)
        ));
    }
    let start = &sc.stages[sc.start].id;
    format!(
        "[Output Format Requirements]\n\
         You must output in the following JSON format (do not include any other text):\n\
         {{\n  \"classification_output\": {},\n  \
         \"cot\": \"Briefly explain your classification reasoning and SOP flow jump logic\",\n  \
         \"now_path\": [\"{start}\", ...],\n  \
         \"finals\": {{\n{}\n  }},\n  \
         \"chat\": \"Your friendly, professional response to the user based on Action\"\n}}\n",
        classification_template(sop),
        finals.join(",\n"),
    )
}

/// [Key Requirements - Must Follow], as in the paper.
fn key_requirements_section(sop: &Sop) -> String {
    let sc = sop.scenario();
    let start = &sc.stages[sc.start].id;
    let outputs: String = sc
        .outputs
        .iter()
        .enumerate()
        .map(|(i, o)| {
            format!(
                ", and {} when the Action is {}",
                o.name,
                carrying_actions(sop, i).join(" or ")
            )
        })
        .collect();
    format!(
        "[Key Requirements - Must Follow]\n\
         1. Output pure JSON only, do not include any other content (such as explanations, \
         notes, etc.).\n\
         2. JSON must contain the following fields:\n\
         \x20  - classification_output (object, with every field listed above)\n\
         \x20  - cot (string)\n\
         \x20  - now_path (array)\n\
         \x20  - finals (object, with Action{outputs})\n\
         \x20  - chat (string)\n\
         3. now_path must start from \"{start}\" and list the stages passed in order (e.g., \
         [\"{start}\", ...]), ending with the stage whose jump leads to the Action.\n\
         4. The chat field must be limited to 40 words. It is a complete, concise user reply. \
         The language must be consistent with the user's language. The content must be enclosed \
         in double quotes, and must not contain unescaped double quotes (\"), backslashes (\\), \
         square brackets ([]), etc.; if you need to quote code or special content, please \
         describe it in text instead of directly including code.\n\
         5. The complete JSON should be: {{ ... }} (The outermost layer must have one and only \
         one pair of curly braces).\n"
    )
}
