//! Grading stored dialogues again with no model call (`sage rescore`): the rule engine derives
//! each judged turn's reference route from the (possibly corrected) scenario and the panel's
//! stored consensus, and the turn is scored again from its stored answer and verdicts.

use crate::protocol::DialogueRecord;
use crate::scoring::turn::score_record;
use crate::sop::{Route, Sop, Values};
use serde::{Deserialize, Serialize};

/// What a rescore writes into the new folder (its [`RescoreFile`]); its presence tells
/// `sage report` the folder's records are a stored run's, graded again.
pub const RESCORE_JSON: &str = "rescore.json";

/// A dialogue graded differently (rescore.json).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedDialogue {
    /// Its id.
    pub dialogue_id: String,
    /// The turns whose reference route changed.
    pub turns: Vec<u32>,
    /// Whether the case's target route changed.
    pub target_changed: bool,
}

/// What `sage rescore` did: NEW/rescore.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RescoreFile {
    /// The folder graded again (as given).
    pub from: String,
    /// The stored run's id (empty in a file written before it was recorded).
    #[serde(default)]
    pub from_run_id: String,
    /// Scenario ids with the SHA-256 of their YAML before and after, where they differ.
    pub scenarios_changed: Vec<(String, String, String)>,
    /// Dialogues graded.
    pub dialogues: usize,
    /// Dialogues whose references changed, with their turns, by dialogue id.
    pub changed: Vec<ChangedDialogue>,
}

/// What grading a dialogue again changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rescored {
    /// The turns whose reference route changed (1-based).
    pub changed_turns: Vec<u32>,
    /// Whether the case's target route (its true classification's) changed.
    pub target_changed: bool,
}

impl Rescored {
    /// Whether a reference or the target changed.
    pub fn changed(&self) -> bool {
        !self.changed_turns.is_empty() || self.target_changed
    }
}

/// Grades `record` again against `sop` (its scenario): the job's target becomes the route of
/// the case's true classification, each turn with a consensus gets the reference the rule
/// engine derives now, and every turn that was scorable is scored again.
/// Turns that met an infrastructure error stay as they were (there is nothing to grade).
pub fn rescore(record: &mut DialogueRecord, sop: &Sop) -> Rescored {
    use crate::sop::values;
    let variables = values(&record.job.variables);
    let mut out = Rescored::default();
    // The case's target: the route of its true classification under this scenario (the plan
    // of the corrected scenario gives the same).
    if let Ok(target) = sop.route(&values(&record.job.fields), &variables)
        && target != record.job.target
    {
        record.job.target = target;
        out.target_changed = true;
    }
    for turn in &mut record.turns {
        if turn.infra_error.is_some() {
            continue;
        }
        let Some(consensus) = turn.judges.as_ref().and_then(|p| p.consensus.as_ref()) else {
            continue;
        };
        let fields: Values = consensus.clone();
        let reference: Result<Route, String> =
            sop.route(&fields, &variables).map_err(|e| e.to_string());
        if turn.reference.as_ref() != Some(&reference) {
            out.changed_turns.push(turn.turn);
        }
        turn.reference = Some(reference);
        turn.scores = score_record(turn, sop);
    }
    out
}
