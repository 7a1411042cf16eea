//! A flipped dialogue's two transcripts side by side ([`crate::side_by_side`]): baseline on the
//! left and the current run on the right.

use crate::side_by_side::side_by_side;
use maud::Markup;
use sage_core::protocol::DialogueRecord;
use std::collections::HashMap;

/// The side-by-side transcripts of some flipped dialogues, by dialogue id.
#[derive(Debug, Clone, Default)]
pub struct FlipTranscripts {
    views: HashMap<String, Markup>,
}

impl FlipTranscripts {
    /// None yet.
    pub fn new() -> FlipTranscripts {
        FlipTranscripts::default()
    }

    /// Renders one dialogue's `baseline` and `current` records side by side (`runs`: the
    /// baseline's and the current run's ids, for the headings).
    pub fn add(&mut self, baseline: &DialogueRecord, current: &DialogueRecord, runs: (&str, &str)) {
        self.views.insert(
            current.job.dialogue_id.clone(),
            side_by_side(
                baseline,
                current,
                [("Baseline", runs.0), ("Current", runs.1)],
            ),
        );
    }

    /// The view of dialogue `id`, if it was added.
    pub fn get(&self, id: &str) -> Option<&Markup> {
        self.views.get(id)
    }

    /// Dialogues added.
    pub fn len(&self) -> usize {
        self.views.len()
    }

    /// Whether none was added.
    pub fn is_empty(&self) -> bool {
        self.views.is_empty()
    }
}
