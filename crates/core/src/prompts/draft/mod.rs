//! Drafting a scenario from a policy document (`sage scenario draft`): the policy's sentences
//! (what the draft cites), the steps and their prompts ([`Step`]: the repair prompt hands the
//! validator's messages back with the answer), the draft so far ([`Draft`]), the YAML taken out
//! of an answer, the log of the rounds, and what a draft leaves uncited. Pure.

mod step;

pub use step::{Draft, Step};

use crate::scoring::fidelity::normalize;
use crate::sop::Sop;

/// Most bytes of a policy document read.
pub const MAX_POLICY_BYTES: u64 = 400_000;

/// The policy's sentences, in order: each paragraph and list item joined into one line (wrapped
/// prose), then split after `.`, `!` or `?` followed by white space; headings (`#` lines) and
/// pieces of fewer than three words are left out.
pub fn sentences(policy: &str) -> Vec<String> {
    // Paragraphs and list items, each joined into one line (prose is wrapped).
    let mut items: Vec<String> = Vec::new();
    for block in policy.split("\n\n") {
        let mut open = false;
        for line in block.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                open = false;
                continue;
            }
            let item = line.starts_with("- ") || line.starts_with("* ");
            let text = line.trim_start_matches(['-', '*', ' ']);
            match items.last_mut() {
                Some(last) if open && !item => {
                    last.push(' ');
                    last.push_str(text);
                }
                _ => items.push(text.to_string()),
            }
            open = true;
        }
    }
    let mut out = Vec::new();
    for item in &items {
        let mut start = 0;
        let chars: Vec<(usize, char)> = item.char_indices().collect();
        for (i, (at, c)) in chars.iter().enumerate() {
            let next_is_space = chars.get(i + 1).is_none_or(|(_, n)| n.is_whitespace());
            if matches!(c, '.' | '!' | '?') && next_is_space {
                push_sentence(&mut out, &item[start..at + c.len_utf8()]);
                start = at + c.len_utf8();
            }
        }
        push_sentence(&mut out, &item[start..]);
    }
    out
}

fn push_sentence(out: &mut Vec<String>, piece: &str) {
    let piece = piece.trim();
    if piece.split_whitespace().count() >= 3 {
        out.push(piece.to_string());
    }
}

fn policy_block(sentences: &[String]) -> String {
    let mut text = String::from("The policy, one sentence per line:\n");
    for (i, s) in sentences.iter().enumerate() {
        text.push_str(&format!("{}. {s}\n", i + 1));
    }
    text
}

/// The YAML of an answer: the first fenced block when there is one, else the whole text.
pub fn yaml_of(answer: &str) -> &str {
    let Some(open) = answer.find("```") else {
        return answer.trim();
    };
    let body = &answer[open + 3..];
    let body = body.split_once('\n').map_or("", |(_, rest)| rest);
    body.split("```").next().unwrap_or(body).trim()
}

/// One drafting round: the request's policy part, the model's answer, and what the validator
/// said of it (empty: it validated).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Round {
    /// The step this round drafted.
    pub step: Step,
    /// The user message sent (the system prompt is the log's).
    pub request: String,
    /// The model's answer (empty when the call failed).
    pub answer: String,
    /// The validator's messages on the answer's YAML, one per problem.
    pub errors: Vec<String>,
    /// Why the model could not be reached, when it could not (after retries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_error: Option<String>,
    /// What the call cost, in US dollars.
    pub cost_usd: f64,
}

/// How a draft came to be: OUT.draft.json.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DraftLog {
    /// The model that drafted.
    pub model: String,
    /// The system prompt of each step, by step name.
    pub systems: std::collections::BTreeMap<String, String>,
    /// Every round, in order.
    pub rounds: Vec<Round>,
    /// Whether the last round's draft validated.
    pub validated: bool,
    /// What every round cost, in US dollars.
    pub cost_usd: f64,
    /// Whether the drafting stopped because `--max-cost-usd` was spent.
    #[serde(default)]
    pub budget_spent: bool,
}

/// What a draft cites and leaves out.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Citations {
    /// Policy sentences no stage, branch or action cites.
    pub uncovered: Vec<String>,
    /// Parts of the graph that cite nothing (`stage step3`, `action GoodBye`,
    /// `step7: Discontent`).
    pub uncited: Vec<String>,
    /// Cited text that is no sentence of the policy (a citation the model made up or changed).
    pub unknown: Vec<String>,
}

/// The citations of `sop` against the policy's `sentences` (compared by their words).
pub fn citations(sop: &Sop, sentences: &[String]) -> Citations {
    let sc = sop.scenario();
    let mut cited: Vec<&String> = Vec::new();
    let mut out = Citations::default();
    for stage in &sc.stages {
        if stage.source.is_empty() {
            out.uncited.push(format!("stage {}", stage.id));
        }
        cited.extend(&stage.source);
        for t in &stage.transitions {
            cited.extend(&t.source);
            let branches = stage.transitions.len() > 1;
            if branches && t.source.is_empty() && stage.source.is_empty() {
                out.uncited.push(format!("{}: {}", stage.id, t.label));
            }
        }
    }
    for action in &sc.actions {
        if action.source.is_empty() {
            out.uncited.push(format!("action {}", action.name));
        }
        cited.extend(&action.source);
    }
    let policy: Vec<String> = sentences.iter().map(|s| normalize(s)).collect();
    let cited_words: Vec<String> = cited.iter().map(|c| normalize(c)).collect();
    out.uncovered = sentences
        .iter()
        .zip(&policy)
        .filter(|(_, p)| !cited_words.contains(p))
        .map(|(s, _)| s.clone())
        .collect();
    let mut unknown: Vec<String> = cited
        .iter()
        .zip(&cited_words)
        .filter(|(_, w)| !policy.contains(w))
        .map(|(c, _)| c.to_string())
        .collect();
    unknown.dedup();
    out.unknown = unknown;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_splits_into_sentences_without_headings_or_fragments() {
        let policy = "# Refunds\n\nA customer may cancel within 14 days. After that, a fee applies!\n\n- Angry customers go to a person.\n- Ok.\n\nIs the order late? Then apologise\nfirst, always.";
        assert_eq!(
            sentences(policy),
            vec![
                "A customer may cancel within 14 days.",
                "After that, a fee applies!",
                "Angry customers go to a person.",
                "Is the order late?",
                "Then apologise first, always.",
            ]
        );
    }

    #[test]
    fn the_telecom_policy_prose_reads_as_its_rules() {
        // docs/examples/telecom-policy.md: the worked example's policy (issue 23).
        let prose = include_str!("../../../../../docs/examples/telecom-policy.md");
        let s = sentences(prose);
        assert_eq!(s.len(), 16, "{s:#?}");
        assert_eq!(
            s.last().map(String::as_str),
            Some("A discontent customer who owes a penalty is transferred to a human agent.")
        );
    }

    #[test]
    fn the_yaml_of_an_answer_is_its_fenced_block() {
        assert_eq!(yaml_of("Here:\n```yaml\nid: x\n```\nDone."), "id: x");
        assert_eq!(yaml_of("id: x\n"), "id: x");
    }

    #[test]
    fn a_repair_hands_back_the_answer_and_every_message() {
        let m = Step::Routes.messages(
            &["One two three.".into()],
            &Draft::default(),
            Some(("id: x", &["e1".into(), "e2".into()])),
        );
        let user = &m[1].content;
        assert!(user.contains("1. One two three.") && user.contains("id: x"));
        assert!(user.contains("- e1\n- e2\n"), "{user}");
        assert!(user.contains("Step 3 of 3"), "{user}");
    }
}
