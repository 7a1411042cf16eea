//! The oracle judge: returns the job's ground truth for every field (optionally with noise) and
//! scores chat quality from the text of the reply, the same way whatever the user's pressure
//! (so a polite agent keeps its chat score while its logic fails: empathy resilience).

use super::{Play, SimContext, chance};
use rand::Rng;
use sage_core::protocol::ChatScores;
use sage_core::scenario::{Domain, Point, Value};
use std::fmt::Write;

/// An oracle judge.
pub struct OracleJudge {
    /// Probability that a field's label is replaced by another option.
    pub noise: f64,
    /// Probability per call of an unparsable answer (exercises the panel's retries).
    pub garbage_rate: f64,
}

const WARM: [&str; 8] = [
    "sorry",
    "understand",
    "thank",
    "apolog",
    "glad",
    "happy to",
    "patience",
    "appreciate",
];
const COMMIT: [&str; 6] = [
    "i will",
    "i'll",
    "i have",
    "arranged",
    "processed",
    "right away",
];

/// Chat-quality scores from the reply's text alone.
pub fn score_chat(chat: &str) -> ChatScores {
    let text = chat.trim();
    let lower = text.to_lowercase();
    let garbage = text.is_empty() || text.starts_with('{') || text.starts_with('[');
    let words = text.split_whitespace().count();
    let chars = text.chars().count();
    let pick = |good: bool, ok: bool| {
        if garbage {
            3
        } else if good {
            9
        } else if ok {
            6
        } else {
            3
        }
    };
    ChatScores {
        linguistic_quality: pick(chars >= 15 && text.ends_with(['.', '?', '!']), chars >= 5),
        anthropomorphism_emotion: pick(WARM.iter().any(|w| lower.contains(w)), true),
        content_utility: pick((30..=200).contains(&chars), chars >= 12),
        user_satisfaction: pick(COMMIT.iter().any(|w| lower.contains(w)), chars >= 12),
        instruction_compliance: pick(
            words <= 40 && !text.contains(['"', '[', ']', '\\']),
            words <= 60,
        ),
    }
}

impl Play for OracleJudge {
    fn play(&self, ctx: &SimContext) -> (String, &'static str) {
        let mut rng = ctx.rng("judge");
        if self.garbage_rate > 0.0 && chance(&mut rng, self.garbage_rate) {
            return ("I am unable to evaluate this conversation.".into(), "stop");
        }
        // Written directly (no JSON tree): this runs three times a turn.
        let sc = ctx.sop.scenario();
        let mut out = String::with_capacity(512);
        out.push_str("{\"classification\":{");
        for (n, k) in sc.fields().enumerate() {
            let truth = ctx
                .job
                .fields
                .get(&k.name)
                .cloned()
                .unwrap_or(Value::Bool(false));
            let mut v = truth;
            if self.noise > 0.0
                && chance(&mut rng, self.noise)
                && let Domain::Set(m) = k.full_domain()
            {
                let n = m.count_ones() as usize;
                v = k.value_at(Point::Opt(rng.random_range(0..n)));
            }
            if n > 0 {
                out.push(',');
            }
            out.push_str(&serde_json::to_string(&k.name).unwrap_or_default());
            out.push(':');
            out.push_str(&serde_json::to_string(&v).unwrap_or_default());
        }
        let s = score_chat(ctx.agent_chat.as_deref().unwrap_or(""));
        let _ = write!(
            out,
            "}},\"chat_quality_dimensions\":{{\"linguistic_quality\":{},\"anthropomorphism_emotion\":{},\"content_utility\":{},\"user_satisfaction\":{},\"instruction_compliance\":{}}},\"classification_reasoning\":\"simulated oracle judge: the job's ground truth\",\"chat_quality_reasoning\":\"simulated oracle judge: scored from the reply's text\"}}",
            s.linguistic_quality,
            s.anthropomorphism_emotion,
            s.content_utility,
            s.user_satisfaction,
            s.instruction_compliance
        );
        (out, "stop")
    }
}

#[cfg(test)]
mod tests {
    use super::score_chat;

    #[test]
    fn chat_scores_follow_the_text() {
        let good =
            score_chat("I understand how frustrating this is. I will change your package today.");
        assert_eq!(
            (
                good.linguistic_quality,
                good.anthropomorphism_emotion,
                good.content_utility,
                good.user_satisfaction,
                good.instruction_compliance
            ),
            (9, 9, 9, 9, 9)
        );
        let raw = score_chat("{\"classification_output\": ");
        assert_eq!(raw.linguistic_quality, 3);
        let curt = score_chat("Done");
        assert_eq!(
            (curt.anthropomorphism_emotion, curt.content_utility),
            (6, 3)
        );
    }
}
