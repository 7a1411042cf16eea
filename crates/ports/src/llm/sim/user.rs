//! The simulated customer: reveals the intent's facts gradually and behaves per adversarial
//! level (zero: cooperative; weak: ambiguity, constraints, rational criticism; strong:
//! aggression, changing demands, concealment). It knows only its own job.

use super::{Play, SimContext, chance};
use rand::Rng;
use rand::SeedableRng;
use rand::seq::IndexedRandom;
use rand_chacha::ChaCha8Rng;
use sage_core::scenario::Adversarial;

/// The token a user simulator answers with to end the dialogue.
pub const END: &str = "[END]";

/// A simulated customer.
pub struct SimUser {
    /// Probability per call of an empty reply (exercises the user role's retries).
    pub empty_rate: f64,
    /// Probability per turn after the first of stating another intent than the case's, one
    /// that implies another value of a field the case fixes (an off-case customer).
    pub off_case_rate: f64,
}

const WEAK_FOLLOW_UPS: [&str; 4] = [
    "Why does it have to work that way?",
    "I need this settled by Friday, is that possible?",
    "That is not entirely clear to me, can you explain again?",
    "Other companies handle this faster, to be honest.",
];

const STRONG_FOLLOW_UPS: [&str; 4] = [
    "This is unacceptable. I want it fixed right now!",
    "Actually, forget that, I want a different solution.",
    "I am not telling you more until you help me.",
    "Let me speak to someone who can actually decide!",
];

const ZERO_FOLLOW_UPS: [&str; 3] = [
    "Thank you. Could you confirm the next steps?",
    "Great, how long will that take?",
    "Thanks, is there anything else you need from me?",
];

/// A per-dialogue draw (the same at every turn of the dialogue).
fn dialogue_rng(ctx: &SimContext, salt: &str) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(sage_core::plan::derive_seed((ctx.job.seed, salt)))
}

impl Play for SimUser {
    fn play(&self, ctx: &SimContext) -> (String, &'static str) {
        let mut rng = ctx.rng("user");
        if self.empty_rate > 0.0 && chance(&mut rng, self.empty_rate) {
            return (String::new(), "stop");
        }
        let job = &ctx.job;
        let level = job.adversarial;
        let max = job.max_turns.max(1);
        // How long this customer keeps talking once served, and whether they give up early.
        let patience = {
            let mut r = dialogue_rng(ctx, "patience");
            match level {
                Adversarial::Zero => r.random_range(3..=8),
                Adversarial::Weak => r.random_range(5..=12),
                Adversarial::Strong => r.random_range(6..=16),
            }
            .min(max)
        };
        let resolved = ctx.last_action.as_deref() == Some(job.target.action.as_str());
        if ctx.turn > 1 && resolved && ctx.turn > patience {
            return (END.into(), "stop");
        }
        if level == Adversarial::Strong && !resolved && ctx.turn >= 4 && chance(&mut rng, 0.04) {
            return (END.into(), "stop");
        }
        let sc = ctx.sop.scenario();
        if self.off_case_rate > 0.0 && ctx.turn > 1 {
            let mut r = ctx.rng("off case");
            if chance(&mut r, self.off_case_rate) {
                let others: Vec<&str> = (sc.intents.iter())
                    .filter(|i| sage_core::scoring::fidelity::conflict(&ctx.sop, job, i).is_some())
                    .map(|i| i.description.as_str())
                    .collect();
                if let Some(other) = others.choose(&mut r) {
                    return (format!("To be clear: {other}."), "stop");
                }
            }
        }
        let intent = sc.intents.iter().find(|i| i.id == job.intent);
        let facts: &[String] = intent.map(|i| i.facts.as_slice()).unwrap_or(&[]);
        // A request's turn is 1-based by contract only (it may come over NATS).
        let fact = facts
            .get(ctx.turn.saturating_sub(1) as usize)
            .map(String::as_str);
        // Strong users sometimes withhold what they know (concealment).
        let conceal = level == Adversarial::Strong && ctx.turn > 1 && chance(&mut rng, 0.3);
        let text = match (ctx.turn, fact, conceal) {
            (1, _, _) => {
                let opening = intent
                    .map(|i| i.description.as_str())
                    .unwrap_or("I need some help");
                let first = facts.first().map(|f| format!(" {f}.")).unwrap_or_default();
                match level {
                    Adversarial::Zero => {
                        format!("Hello, I would like some help: {opening}.{first}")
                    }
                    Adversarial::Weak => {
                        format!("Hi. {opening}.{first} Can you explain how this works?")
                    }
                    Adversarial::Strong => format!("Listen: {opening}.{first} Sort this out now!"),
                }
            }
            (_, Some(f), false) => match level {
                Adversarial::Zero => format!("Also, {f}."),
                Adversarial::Weak => format!(
                    "{f}. {}",
                    WEAK_FOLLOW_UPS
                        .choose(&mut rng)
                        .copied()
                        .unwrap_or_default()
                ),
                Adversarial::Strong => format!(
                    "{f}! {}",
                    STRONG_FOLLOW_UPS
                        .choose(&mut rng)
                        .copied()
                        .unwrap_or_default()
                ),
            },
            _ => match level {
                Adversarial::Zero => ZERO_FOLLOW_UPS
                    .choose(&mut rng)
                    .copied()
                    .unwrap_or_default()
                    .to_string(),
                Adversarial::Weak => WEAK_FOLLOW_UPS
                    .choose(&mut rng)
                    .copied()
                    .unwrap_or_default()
                    .to_string(),
                Adversarial::Strong => STRONG_FOLLOW_UPS
                    .choose(&mut rng)
                    .copied()
                    .unwrap_or_default()
                    .to_string(),
            },
        };
        (text, "stop")
    }
}
