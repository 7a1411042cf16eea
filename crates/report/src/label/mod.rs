//! Human labels (`labels.html`): a page, written beside a SAGE run's report.html, where a person
//! labels a sample of the run's judged turns with the fields the judges give (each
//! classification field of the scenario, the five chat-quality dimensions), blind (no verdict,
//! consensus, true value or score on the page), then downloads `labels.jsonl`
//! (docs/report.md, "Human labels"). Offline like the report: everything is in the file, its
//! one script ([`SCRIPT`]) keeps the labels in the browser's `localStorage` under the run's id.
//!
//! The sample is chosen here, when the page is written, by [`select`]: a pure function of the
//! candidate turns, so the page is the same for the same records whatever their order.
//! [`LabelFold`] folds the records one at a time and keeps, per stratum, only the candidates the
//! selection can take (memory grows with the sample, never with the run); the page reads the
//! sampled records back by their place in dialogues.jsonl when it is written.

use crate::explorer::Records;
use crate::stats::category;
use sage_core::protocol::{DialogueRecord, ServiceOutcome, TurnRecord};
use sage_core::sop::Sop;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

mod page;

pub use page::CSS;

/// The page's file name, beside report.html (the report links to it by this relative name).
pub const LABELS_HTML: &str = "labels.html";

/// Turns the page offers for labelling (fewer when the run has fewer judged turns).
pub const SAMPLE: usize = 60;

/// The page's script: the labels kept in `localStorage`, the counter, the download.
pub const SCRIPT: &str = include_str!("../js/label.js");

/// A turn that may be sampled: judged (some judge gave a verdict), no infrastructure error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Its dialogue.
    pub dialogue: String,
    /// The turn (1-based, as in `TurnRecord::turn`).
    pub turn: u32,
    /// The model under test.
    pub model: String,
    /// The scenario.
    pub scenario: String,
    /// The judges split on it: some field got different values (or a judge gave none while
    /// another did), or the panel reached no consensus.
    pub split: bool,
    /// Its draw: a hash of the seed, the dialogue and the turn (the order within a stratum).
    pub draw: u64,
    /// Where its record's line starts in dialogues.jsonl.
    pub at: u64,
}

impl Candidate {
    /// Its order within its stratum: split turns first, then by draw.
    fn rank(&self) -> (bool, u64, &str, u32) {
        (!self.split, self.draw, &self.dialogue, self.turn)
    }
}

/// The draw of a turn for `seed`.
pub fn draw(seed: u64, dialogue: &str, turn: u32) -> u64 {
    sage_core::plan::derive_seed(("label", seed, dialogue, turn))
}

/// Whether the judges split on a turn: some field named by the job or a verdict was given
/// different values by the judges that answered (booleans, integers and their text alike), or
/// some judges gave it and others did not (a judge failed), or the panel reached no consensus.
/// `None` when the turn is no candidate: not judged (no verdict at all) or an infrastructure
/// error.
pub fn judged_split(t: &TurnRecord) -> Option<bool> {
    let infra = t.infra_error.is_some() || matches!(t.outcome, ServiceOutcome::InfraError { .. });
    let panel = t.judges.as_ref()?;
    if infra || !panel.judgments.iter().any(Result::is_ok) {
        return None;
    }
    let verdicts: Vec<Option<_>> = (panel.judgments.iter())
        .map(|j| j.as_ref().ok().map(|j| &j.classification))
        .collect();
    let names: BTreeSet<&String> = verdicts.iter().flatten().flat_map(|v| v.keys()).collect();
    let split = names.into_iter().any(|name| {
        let values: Vec<Option<String>> = (verdicts.iter())
            .map(|v| v.and_then(|v| v.get(name)).map(category))
            .collect();
        let given: Vec<&String> = values.iter().flatten().collect();
        given.windows(2).any(|w| w[0] != w[1]) || given.len() < values.len()
    });
    Some(split || panel.consensus.is_none())
}

/// The sample of at most `n` turns: stratified by model under test and scenario, the split
/// turns first within each stratum (then the others, each by its draw), taken round-robin
/// over the strata (one turn of each stratum per round) so that every stratum gives one before
/// any gives two. The strata are visited in an order that reaches every model and every
/// scenario as early as it can (the next stratum is the one whose model, then scenario, has
/// been visited least; ties by name), so that a sample smaller than the strata still covers
/// each model and each scenario when it can. Pure and deterministic: the same candidates, in
/// any order, give the same sample, in the order to label them.
pub fn select(candidates: &[Candidate], n: usize) -> Vec<&Candidate> {
    select_after(candidates, n, &BTreeMap::new())
}

/// [`select`], the strata people have labelled least (`labelled`: turns labelled per stratum,
/// model and scenario) visited first, so that the next labels go where they narrow the
/// corrected interval most.
pub fn select_after<'c>(
    candidates: &'c [Candidate],
    n: usize,
    labelled: &BTreeMap<(String, String), usize>,
) -> Vec<&'c Candidate> {
    let mut strata: BTreeMap<(&str, &str), Vec<&Candidate>> = BTreeMap::new();
    for c in candidates {
        strata.entry((&c.model, &c.scenario)).or_default().push(c);
    }
    for list in strata.values_mut() {
        list.sort_by(|a, b| a.rank().cmp(&b.rank()));
    }
    // The visiting order: the least-visited model, then scenario, first.
    let mut left: Vec<(&str, &str)> = strata.keys().copied().collect();
    let mut order = Vec::with_capacity(left.len());
    let (mut models, mut scenarios) = (BTreeMap::new(), BTreeMap::new());
    while !left.is_empty() {
        let count = |m: &BTreeMap<&str, usize>, k: &str| m.get(k).copied().unwrap_or(0);
        let covered =
            |m: &str, s: &str| (labelled.get(&(m.to_string(), s.to_string()))).map_or(0, |n| *n);
        let (i, _) = (left.iter().enumerate())
            .min_by_key(|(_, (m, s))| {
                (
                    covered(m, s),
                    count(&models, m),
                    count(&scenarios, s),
                    *m,
                    *s,
                )
            })
            .expect("not empty");
        let (m, s) = left.remove(i);
        *models.entry(m).or_insert(0) += 1;
        *scenarios.entry(s).or_insert(0) += 1;
        order.push(&strata[&(m, s)]);
    }
    let mut out = Vec::with_capacity(n.min(candidates.len()));
    for round in 0.. {
        let before = out.len();
        for list in &order {
            if out.len() == n {
                return out;
            }
            if let Some(c) = list.get(round) {
                out.push(*c);
            }
        }
        if out.len() == before {
            break;
        }
    }
    out
}

/// The labelling page's fold: per stratum (model under test, scenario), the [`SAMPLE`] split
/// and the [`SAMPLE`] other candidates of smallest draw, all [`select`] can take from it.
#[derive(Debug)]
pub struct LabelFold {
    run_id: String,
    seed: u64,
    n: usize,
    sops: Vec<Arc<Sop>>,
    /// Per stratum (model, scenario), split candidates then the others.
    strata: BTreeMap<(String, String), [Kept; 2]>,
    /// Turns people labelled already (dialogue, turn): left out of the sample.
    labelled: BTreeSet<(String, u32)>,
    /// Of those, per stratum, how many the run holds.
    covered: BTreeMap<(String, String), usize>,
    /// The sample listed with the turns the judges split on first (`--suggest`).
    splits_first: bool,
}

/// Candidates by draw (then dialogue and turn): the smallest kept.
type Kept = BTreeMap<(u64, String, u32), Candidate>;

impl LabelFold {
    /// An empty fold of run `run_id` whose seed `seed` draws the sample (`sops`: its compiled
    /// scenarios, for the fields and their options), sampling [`SAMPLE`] turns.
    pub fn new(run_id: &str, seed: u64, sops: Vec<Arc<Sop>>) -> LabelFold {
        LabelFold {
            run_id: run_id.to_string(),
            seed,
            n: SAMPLE,
            sops,
            strata: BTreeMap::new(),
            labelled: BTreeSet::new(),
            covered: BTreeMap::new(),
            splits_first: false,
        }
    }

    /// The same fold suggesting what people should label next (`sage judges calibrate
    /// --suggest`): the turns in `labelled` (dialogue, turn) left out, the strata they cover
    /// least visited first, and the sample listed with the split turns first.
    pub fn suggesting(mut self, labelled: BTreeSet<(String, u32)>) -> LabelFold {
        self.labelled = labelled;
        self.splits_first = true;
        self
    }

    /// The same fold sampling `n` turns.
    pub fn with_sample(mut self, n: usize) -> LabelFold {
        self.n = n;
        self
    }

    /// Folds a record in (the caller skips repeated dialogue ids), whose line starts at byte
    /// `at` of dialogues.jsonl.
    pub fn add(&mut self, record: &DialogueRecord, at: u64) {
        let job = &record.job;
        for t in &record.turns {
            let Some(split) = judged_split(t) else {
                continue;
            };
            if !self.labelled.is_empty()
                && self.labelled.contains(&(job.dialogue_id.clone(), t.turn))
            {
                let stratum = (job.service_model.clone(), job.scenario.clone());
                *self.covered.entry(stratum).or_insert(0) += 1;
                continue;
            }
            let c = Candidate {
                dialogue: job.dialogue_id.clone(),
                turn: t.turn,
                model: job.service_model.clone(),
                scenario: job.scenario.clone(),
                split,
                draw: draw(self.seed, &job.dialogue_id, t.turn),
                at,
            };
            let kept = &mut self
                .strata
                .entry((c.model.clone(), c.scenario.clone()))
                .or_default()[usize::from(!split)];
            let key = (c.draw, c.dialogue.clone(), c.turn);
            if kept.len() >= self.n && kept.last_key_value().is_none_or(|(k, _)| key >= *k) {
                continue;
            }
            kept.insert(key, c);
            if kept.len() > self.n {
                kept.pop_last();
            }
        }
    }

    /// The sample, in the order to label it.
    pub fn sample(&self) -> Vec<Candidate> {
        let kept: Vec<Candidate> = (self.strata.values())
            .flat_map(|[a, b]| a.values().chain(b.values()))
            .cloned()
            .collect();
        let mut sample: Vec<Candidate> = (select_after(&kept, self.n, &self.covered).into_iter())
            .cloned()
            .collect();
        if self.splits_first {
            sample.sort_by_key(|c| !c.split);
        }
        sample
    }

    /// Writes the page to `out`, each sampled turn's record read back from `records` by its
    /// place; the number of turns on it.
    pub fn write_page<W: std::io::Write>(
        &self,
        out: W,
        records: &mut dyn Records<DialogueRecord>,
    ) -> std::io::Result<usize> {
        let sample = self.sample();
        let mut items = Vec::with_capacity(sample.len());
        for c in &sample {
            let record = records.read(c.at)?;
            if record.job.dialogue_id != c.dialogue {
                return Err(std::io::Error::other(format!(
                    "dialogues.jsonl changed while the labelling page was written: no record of {} at byte {}",
                    c.dialogue, c.at
                )));
            }
            let sop = (self.sops.iter()).find(|s| s.scenario().id == record.job.scenario);
            items.push(page::Item {
                record,
                turn: c.turn,
                sop: sop.cloned(),
            });
        }
        page::write(out, &self.run_id, &items)?;
        Ok(items.len())
    }
}

#[cfg(test)]
mod tests;
