//! Which turns of a dialogue the judges are asked about (`judge_turns` in the run
//! configuration): the paper's evaluation turns, every turn, or a list.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The turns the paper evaluates (besides each dialogue's final turn).
pub const PAPER_JUDGED_TURNS: [u32; 4] = [1, 5, 10, 15];

/// Which turns the judges score. A turn not judged still has the agent's answer parsed (its
/// format error, if any, is counted); it has no Logic, Chat or Overall.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum JudgeTurns {
    /// Turns 1, 5, 10, 15 and each dialogue's final turn (the last turn the agent answered
    /// before the customer ended the dialogue or `max_turns` was reached): the paper's
    /// evaluation. The default.
    #[default]
    Paper,
    /// Every turn.
    Every,
    /// Exactly these turn numbers (1-based).
    List(Vec<u32>),
}

impl JudgeTurns {
    /// Every turn: what a dialogue record written before `judge_turns` existed was judged on.
    pub fn every() -> JudgeTurns {
        JudgeTurns::Every
    }

    /// Whether `turn` is judged whatever happens after it (the final turn aside).
    pub fn fixed(&self, turn: u32) -> bool {
        match self {
            JudgeTurns::Paper => PAPER_JUDGED_TURNS.contains(&turn),
            JudgeTurns::Every => true,
            JudgeTurns::List(turns) => turns.contains(&turn),
        }
    }

    /// Whether each dialogue's final turn is judged too.
    pub fn final_turn(&self) -> bool {
        matches!(self, JudgeTurns::Paper)
    }

    /// Whether a played turn is judged: `is_final` when it is the dialogue's final turn.
    pub fn judges(&self, turn: u32, is_final: bool) -> bool {
        self.fixed(turn) || (is_final && self.final_turn())
    }

    /// As written in the configuration and shown in tables: `paper`, `every` or `1, 5, 8`.
    pub fn label(&self) -> String {
        match self {
            JudgeTurns::Paper => "paper".into(),
            JudgeTurns::Every => "every".into(),
            JudgeTurns::List(turns) => turns
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        }
    }

    /// A sentence for reports: which turns were judged.
    pub fn describe(&self) -> String {
        match self {
            JudgeTurns::Paper => format!(
                "paper: turns {} and each dialogue's final turn",
                PAPER_JUDGED_TURNS.map(|t| t.to_string()).join(", ")
            ),
            JudgeTurns::Every => "every turn".into(),
            JudgeTurns::List(_) => format!("turns {}", self.label()),
        }
    }

    /// Checks a list against the dialogue length: non-empty, at most `max_turns` entries,
    /// each 1 to `max_turns`, none twice. `Err` says what is wrong.
    pub fn check(&self, max_turns: u32) -> Result<(), String> {
        let JudgeTurns::List(turns) = self else {
            return Ok(());
        };
        if turns.is_empty() {
            return Err(
                "judge_turns: empty list; expected `paper`, `every` or turn numbers".into(),
            );
        }
        if turns.len() > max_turns as usize {
            return Err(format!(
                "judge_turns: {} entries; expected at most max_turns ({max_turns})",
                turns.len()
            ));
        }
        for (i, t) in turns.iter().enumerate() {
            if !(1..=max_turns).contains(t) {
                return Err(format!(
                    "judge_turns: turn {t}; expected 1 to max_turns ({max_turns})"
                ));
            }
            if turns[..i].contains(t) {
                return Err(format!(
                    "judge_turns: turn {t} listed twice; expected each turn once"
                ));
            }
        }
        Ok(())
    }
}

/// How `judge_turns` is written: a word or a list of turn numbers.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Written {
    Word(String),
    List(Vec<u32>),
}

impl Serialize for JudgeTurns {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            JudgeTurns::List(turns) => Written::List(turns.clone()),
            other => Written::Word(other.label()),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for JudgeTurns {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let expected = "`paper`, `every` or a list of turn numbers";
        match Written::deserialize(d)
            .map_err(|_| serde::de::Error::custom(format!("judge_turns: expected {expected}")))?
        {
            Written::Word(w) if w == "paper" => Ok(JudgeTurns::Paper),
            Written::Word(w) if w == "every" => Ok(JudgeTurns::Every),
            Written::Word(w) => Err(serde::de::Error::custom(format!(
                "judge_turns: `{w}`; expected {expected}"
            ))),
            Written::List(turns) => Ok(JudgeTurns::List(turns)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_judges_its_four_turns_and_the_final_one() {
        let p = JudgeTurns::Paper;
        let judged: Vec<u32> = (1..=16).filter(|t| p.judges(*t, *t == 8)).collect();
        assert_eq!(judged, vec![1, 5, 8, 10, 15]);
        let list = JudgeTurns::List(vec![2, 4]);
        let judged: Vec<u32> = (1..=8).filter(|t| list.judges(*t, *t == 8)).collect();
        assert_eq!(judged, vec![2, 4]);
        assert!((1..=8).all(|t| JudgeTurns::Every.judges(t, false)));
    }

    #[test]
    fn written_as_a_word_or_a_list() {
        for (text, value) in [
            ("\"paper\"", JudgeTurns::Paper),
            ("\"every\"", JudgeTurns::Every),
            ("[1,3,8]", JudgeTurns::List(vec![1, 3, 8])),
        ] {
            assert_eq!(serde_json::from_str::<JudgeTurns>(text).unwrap(), value);
            assert_eq!(serde_json::to_string(&value).unwrap(), text);
        }
        let err = serde_json::from_str::<JudgeTurns>("\"some\"").unwrap_err();
        assert_eq!(
            err.to_string(),
            "judge_turns: `some`; expected `paper`, `every` or a list of turn numbers"
        );
    }

    #[test]
    fn a_list_is_checked_against_max_turns() {
        let check = |v: Vec<u32>| JudgeTurns::List(v).check(8);
        assert_eq!(check(vec![1, 8]), Ok(()));
        assert_eq!(
            check(vec![]),
            Err("judge_turns: empty list; expected `paper`, `every` or turn numbers".into())
        );
        assert_eq!(
            check(vec![0]),
            Err("judge_turns: turn 0; expected 1 to max_turns (8)".into())
        );
        assert_eq!(
            check(vec![9]),
            Err("judge_turns: turn 9; expected 1 to max_turns (8)".into())
        );
        assert_eq!(
            check(vec![2, 3, 2]),
            Err("judge_turns: turn 2 listed twice; expected each turn once".into())
        );
        assert_eq!(
            check((1..=9).collect()),
            Err("judge_turns: 9 entries; expected at most max_turns (8)".into())
        );
        assert_eq!(JudgeTurns::Paper.check(1), Ok(()));
    }
}
