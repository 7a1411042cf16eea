//! Simulated service agents: profiles with named skills that degrade with adversarial level and
//! turn depth, answering in the agent JSON contract (or, at the configured rate, breaking it).

use super::{Play, SimContext, chance};
use rand::Rng;
use rand::seq::IndexedRandom;
use rand_chacha::ChaCha8Rng;
pub use sage_core::plan::model::SkillOverrides;
use sage_core::scenario::{Adversarial, Domain, KeyKind, Point, Value};
use sage_core::sop::{Route, Values};
use serde::{Deserialize, Serialize};

/// The tunable skills of a simulated service agent.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Skills {
    /// Probability of classifying a field right, at its best turn and with a cooperative user.
    pub classification_accuracy: f64,
    /// Probability of deriving the SOP's path and action from its own classification (the rest
    /// are procedural errors: right steps, wrong conclusion: the execution gap).
    pub action_derivation: f64,
    /// Probability of an answer that breaks the JSON contract, with a cooperative user.
    pub format_error_rate: f64,
    /// Mean length of the chat reply, in characters.
    pub chat_verbosity: usize,
    /// Probability that a reply opens with empathy (kept under pressure: empathy resilience).
    pub empathy: f64,
    /// Accuracy and derivation lost with a zero, weak and strong adversarial user.
    pub adversarial_penalty: [f64; 3],
    /// Format-error rate multiplier per adversarial level above zero (rate x (1 + e x level)).
    pub format_error_escalation: f64,
    /// Accuracy factor at turn 1, rising to 1 at turn 5 as information arrives.
    pub cold_start: f64,
    /// Accuracy lost per turn after turn 10 (context fatigue).
    pub fatigue: f64,
}

impl Skills {
    /// Names of the bundled profiles (checked with the configuration, before a run starts).
    pub const PROFILES: [&'static str; 3] = sage_core::plan::model::SIM_AGENT_PROFILES;

    /// A bundled profile.
    pub fn profile(name: &str) -> Option<Skills> {
        Some(match name {
            "strong" => Skills {
                classification_accuracy: 0.93,
                action_derivation: 0.72,
                format_error_rate: 0.005,
                chat_verbosity: 90,
                empathy: 0.9,
                adversarial_penalty: [0.0, 0.03, 0.10],
                format_error_escalation: 1.0,
                cold_start: 0.85,
                fatigue: 0.012,
            },
            "balanced" => Skills {
                classification_accuracy: 0.86,
                action_derivation: 0.55,
                format_error_rate: 0.015,
                chat_verbosity: 50,
                empathy: 0.7,
                adversarial_penalty: [0.0, 0.05, 0.15],
                format_error_escalation: 1.0,
                cold_start: 0.8,
                fatigue: 0.02,
            },
            "weak" => Skills {
                classification_accuracy: 0.72,
                action_derivation: 0.35,
                format_error_rate: 0.08,
                chat_verbosity: 28,
                empathy: 0.5,
                adversarial_penalty: [0.0, 0.08, 0.22],
                format_error_escalation: 1.2,
                cold_start: 0.75,
                fatigue: 0.03,
            },
            _ => return None,
        })
    }

    /// The turn-depth factor: information gain to turn 5, steady to 10, fatigue after.
    pub fn turn_factor(&self, turn: u32) -> f64 {
        let t = turn.max(1) as f64;
        if t <= 5.0 {
            self.cold_start + (1.0 - self.cold_start) * (t - 1.0) / 4.0
        } else if t <= 10.0 {
            1.0
        } else {
            (1.0 - self.fatigue * (t - 10.0)).max(0.0)
        }
    }

    fn level(a: Adversarial) -> usize {
        match a {
            Adversarial::Zero => 0,
            Adversarial::Weak => 1,
            Adversarial::Strong => 2,
        }
    }

    /// Classification accuracy at a turn against a user of this level.
    pub fn accuracy(&self, turn: u32, a: Adversarial) -> f64 {
        (self.classification_accuracy * self.turn_factor(turn)
            - self.adversarial_penalty[Self::level(a)])
        .clamp(0.0, 1.0)
    }

    /// Action-derivation probability at a turn against a user of this level.
    pub fn derivation(&self, turn: u32, a: Adversarial) -> f64 {
        (self.action_derivation * self.turn_factor(turn) - self.adversarial_penalty[Self::level(a)])
            .clamp(0.0, 1.0)
    }

    /// Format-error probability against a user of this level.
    pub fn format_errors(&self, a: Adversarial) -> f64 {
        (self.format_error_rate * (1.0 + self.format_error_escalation * Self::level(a) as f64))
            .clamp(0.0, 1.0)
    }
}

impl Skills {
    /// This profile with the run configuration's overrides applied.
    pub fn overridden(mut self, o: &SkillOverrides) -> Skills {
        let s = &mut self;
        macro_rules! set {
            ($($f:ident),*) => { $( if let Some(v) = o.$f { s.$f = v; } )* };
        }
        set!(
            classification_accuracy,
            action_derivation,
            format_error_rate,
            chat_verbosity,
            empathy,
            adversarial_penalty,
            format_error_escalation,
            cold_start,
            fatigue
        );
        self
    }
}

/// A simulated service agent.
pub struct SimAgent {
    /// Its skills.
    pub skills: Skills,
    /// Turns at which it takes a wrong action on purpose (planted failures).
    pub fail_turns: Vec<u32>,
}

const EMPATHY: [&str; 5] = [
    "I understand how frustrating this is.",
    "I am sorry for the trouble.",
    "Thank you for your patience.",
    "I completely understand your concern.",
    "Thanks for explaining that so clearly.",
];

const CLOSERS: [&str; 4] = [
    "Is there anything else I can help with?",
    "Please let me know if you have more questions.",
    "I will keep you updated on the progress.",
    "Feel free to ask if anything is unclear.",
];

/// The share of its accuracy a simulated agent keeps at a turn whose customer line is off-case.
const MISLED_ACCURACY: f64 = 0.5;

/// The classification a simulated agent gives: each field right with probability `accuracy`,
/// else another value of the field.
fn classify(ctx: &SimContext, accuracy: f64, rng: &mut ChaCha8Rng) -> Values {
    let sc = ctx.sop.scenario();
    sc.fields()
        .map(|k| {
            let truth = ctx
                .job
                .fields
                .get(&k.name)
                .cloned()
                .unwrap_or(Value::Str(String::new()));
            let v = if chance(rng, accuracy) {
                truth
            } else {
                match (&k.kind, k.full_domain()) {
                    (KeyKind::Integer { .. }, _) => match truth {
                        Value::Int(i) => Value::Int(i + rng.random_range(1..=10)),
                        other => other,
                    },
                    (_, Domain::Set(m)) => {
                        let n = m.count_ones() as usize;
                        let t = k.point(&truth).map(|p| match p {
                            Point::Opt(i) => i,
                            Point::Int(_) => 0,
                        });
                        let others: Vec<usize> = (0..n).filter(|i| Some(*i) != t).collect();
                        match others.choose(rng) {
                            Some(i) => k.value_at(Point::Opt(*i)),
                            None => truth,
                        }
                    }
                    _ => truth,
                }
            };
            (k.name.clone(), v)
        })
        .collect()
}

/// A procedural error: a route with another action that shares the longest prefix with the
/// correct path (right steps, wrong conclusion).
fn wrong_route(ctx: &SimContext, correct: &Route, rng: &mut ChaCha8Rng) -> Route {
    let common = |r: &Route| {
        r.path
            .iter()
            .zip(&correct.path)
            .take_while(|(a, b)| a == b)
            .count()
    };
    let others: Vec<&Route> = ctx
        .sop
        .routes()
        .iter()
        .map(|rc| &rc.route)
        .filter(|r| r.action != correct.action)
        .collect();
    let best = others.iter().map(|r| common(r)).max().unwrap_or(0);
    let closest: Vec<&&Route> = others.iter().filter(|r| common(r) == best).collect();
    closest
        .choose(rng)
        .map(|r| (**r).clone())
        .unwrap_or_else(|| correct.clone())
}

/// A chat reply of about `target` characters for the action taken.
fn chat(ctx: &SimContext, action: &str, skills: &Skills, rng: &mut ChaCha8Rng) -> String {
    let sc = ctx.sop.scenario();
    let description = sc
        .actions
        .iter()
        .find(|a| a.name == action)
        .map(|a| a.description.as_str())
        .unwrap_or("look into this");
    let target = (skills.chat_verbosity as f64 * rng.random_range(0.7..1.3)) as usize;
    let mut text = String::with_capacity(target + 64);
    if chance(rng, skills.empathy) {
        text.push_str(EMPATHY.choose(rng).copied().unwrap_or_default());
        text.push(' ');
    }
    text.push_str("I will ");
    // Action descriptions speak of "the user"; the reply speaks to them.
    let to_user = description
        .trim_end_matches('.')
        .replace("the user's", "your")
        .replace("the user", "you");
    text.push_str(&to_user);
    text.push('.');
    while text.len() < target {
        text.push(' ');
        text.push_str(CLOSERS.choose(rng).copied().unwrap_or_default());
    }
    text
}

impl Play for SimAgent {
    fn play(&self, ctx: &SimContext) -> (String, &'static str) {
        let mut rng = ctx.rng("agent");
        let (turn, level) = (ctx.turn, ctx.job.adversarial);
        let mut accuracy = self.skills.accuracy(turn, level);
        if ctx.misled {
            // A customer who states another case's intent misleads the agent.
            accuracy *= MISLED_ACCURACY;
        }
        let classification = classify(ctx, accuracy, &mut rng);
        let variables = sage_core::sop::values(&ctx.job.variables);
        let own = ctx
            .sop
            .route(&classification, &variables)
            .unwrap_or_else(|_| ctx.job.target.clone());
        let derived = chance(&mut rng, self.skills.derivation(turn, level));
        let route = if derived && !self.fail_turns.contains(&turn) {
            own
        } else {
            wrong_route(ctx, &own, &mut rng)
        };
        // The answer is written directly (no JSON tree): this runs every turn.
        let mut finals = format!("{{\"Action\":{}", json(&route.action));
        for (k, v) in &route.outputs {
            finals.push_str(&format!(",{}:{}", json(k), json(v)));
        }
        finals.push('}');
        let reply = chat(ctx, &route.action, &self.skills, &mut rng);
        let cot = format!(
            "simulated agent: classified the fields, followed the SOP to {}",
            route.action
        );
        let answer = |classification: &Values, with_path: bool| {
            let path = if with_path {
                format!(",\"now_path\":{}", json(&route.path))
            } else {
                String::new()
            };
            format!(
                "{{\"classification_output\":{},\"cot\":{}{path},\"finals\":{finals},\"chat\":{}}}",
                json(classification),
                json(&cot),
                json(&reply)
            )
        };
        if !chance(&mut rng, self.skills.format_errors(level)) {
            return (answer(&classification, true), "stop");
        }
        // Break the contract in one of the ways real models do.
        match rng.random_range(0..5) {
            0 => (format!("{reply} Let me check that for you."), "stop"),
            1 => (
                answer(&classification, true).replacen("\",\"", "\" \"", 1),
                "stop",
            ),
            2 => (answer(&classification, false), "stop"),
            3 => {
                let mut wrong = classification.clone();
                if let Some(first) = ctx.sop.scenario().fields().next() {
                    wrong.insert(first.name.clone(), Value::Str("Unknown".into()));
                }
                (answer(&wrong, true), "stop")
            }
            _ => {
                let text = answer(&classification, true);
                let cut = text.floor_char_boundary(text.len() * 3 / 5);
                (text[..cut].to_string(), "length")
            }
        }
    }
}

/// A value's JSON text (for the answer writer above).
fn json<T: serde::Serialize + ?Sized>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_profiles_are_ordered_and_degrade() {
        // Every name the configuration accepts has its skills.
        assert!(
            Skills::PROFILES
                .iter()
                .all(|p| Skills::profile(p).is_some())
        );
        let s = Skills::profile("strong").unwrap();
        let b = Skills::profile("balanced").unwrap();
        let w = Skills::profile("weak").unwrap();
        for t in [1, 5, 10, 15] {
            for a in [Adversarial::Zero, Adversarial::Weak, Adversarial::Strong] {
                assert!(s.accuracy(t, a) > b.accuracy(t, a) && b.accuracy(t, a) > w.accuracy(t, a));
                assert!(
                    s.derivation(t, a) > b.derivation(t, a)
                        && b.derivation(t, a) > w.derivation(t, a)
                );
            }
        }
        // Inverted U over turns.
        assert!(b.turn_factor(1) < b.turn_factor(5));
        assert_eq!(b.turn_factor(5), b.turn_factor(10));
        assert!(b.turn_factor(15) < b.turn_factor(10));
        // Worse under pressure, more format errors.
        assert!(b.accuracy(5, Adversarial::Strong) < b.accuracy(5, Adversarial::Zero));
        assert!(b.format_errors(Adversarial::Strong) > b.format_errors(Adversarial::Zero));
        // The execution gap: deriving the action is harder than classifying.
        assert!(b.derivation(5, Adversarial::Zero) < b.accuracy(5, Adversarial::Zero));
    }

    #[test]
    fn overrides_apply() {
        let o = SkillOverrides {
            format_error_rate: Some(0.5),
            ..Default::default()
        };
        let s = Skills::profile("strong").unwrap().overridden(&o);
        assert_eq!(s.format_error_rate, 0.5);
        assert_eq!(s.classification_accuracy, 0.93);
    }
}
