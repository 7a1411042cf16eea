//! The judges' agreement with each other and with the ground truth, per scenario and field,
//! and how many independent votes a panel is worth ([`effective_judges`]).

use super::{Agreement, Dialogue, FieldAgreement};
use crate::scenario::Value;
use crate::scoring::turn::values_equal;
use std::collections::BTreeMap;

/// Counts behind [`FieldAgreement`], and where the field first appears in a turn's list of
/// fields (the scenario's declaration order comes first: the job's ground truth lists its fields
/// in that order).
#[derive(Debug, Clone, Default)]
pub(super) struct FieldCounts {
    position: usize,
    turns: usize,
    unanimous: usize,
    truth_turns: usize,
    truth: usize,
    /// The correlation of the judges' errors.
    errors: ErrorCorrelation,
}

/// The judges' errors folded unit by unit (a turn's field, say): per pair of judges (by
/// their place in the panel), the sums behind the correlation of their errors, whose mean is
/// what [`effective_judges`] reads.
#[derive(Debug, Clone, Default)]
pub struct ErrorCorrelation {
    pairs: BTreeMap<(usize, usize), PairSums>,
}

impl ErrorCorrelation {
    /// Adds one unit: each judge's error (`None`: it gave no verdict), in panel order.
    pub fn add(&mut self, errors: &[Option<bool>]) {
        for i in 0..errors.len() {
            for j in i + 1..errors.len() {
                if let (Some(x), Some(y)) = (errors[i], errors[j]) {
                    let sums = self.pairs.entry((i, j)).or_default();
                    sums.n += 1;
                    sums.x += u64::from(x);
                    sums.y += u64::from(y);
                    sums.xy += u64::from(x && y);
                }
            }
        }
    }

    /// The mean over the pairs of judges of the correlation of their errors (pairs where one
    /// never or always erred left out); `None` without such a pair.
    pub fn mean(&self) -> Option<f64> {
        let correlations: Vec<f64> = self
            .pairs
            .values()
            .filter_map(PairSums::correlation)
            .collect();
        (!correlations.is_empty())
            .then(|| correlations.iter().sum::<f64>() / correlations.len() as f64)
    }
}

/// Sums over the turns two judges both answered: n, Σx, Σy, Σxy of their errors (0 or 1).
#[derive(Debug, Clone, Copy, Default)]
struct PairSums {
    n: u64,
    x: u64,
    y: u64,
    xy: u64,
}

impl PairSums {
    /// The Pearson correlation of the two judges' errors (`None` when either never or always
    /// erred: no variance).
    fn correlation(&self) -> Option<f64> {
        let n = self.n as f64;
        let (x, y, xy) = (self.x as f64, self.y as f64, self.xy as f64);
        // For 0/1 values, Σx² = Σx.
        let vx = n * x - x * x;
        let vy = n * y - y * y;
        (vx > 0.0 && vy > 0.0).then(|| (n * xy - x * y) / (vx * vy).sqrt())
    }
}

/// Kish's effective number of a panel of `k` judges whose errors have the mean pairwise
/// correlation `rho`: k / (1 + (k - 1) rho), kept within [1, k] (three independent judges vote
/// like 3, three copies of one like 1; errors that avoid each other count as independent).
pub fn effective_judges(k: usize, rho: f64) -> f64 {
    let k = (k as f64).max(1.0);
    let design = 1.0 + (k - 1.0) * rho;
    // Errors that avoid each other (rho < 0) make the panel worth all its judges, no more.
    if design <= 1.0 {
        return k;
    }
    (k / design).clamp(1.0, k)
}

/// The value under `key` in `map`, made with its default when new (the key is copied only
/// then: this runs for every call of every turn).
pub(super) fn slot<'a, V: Default>(map: &'a mut BTreeMap<String, V>, key: &str) -> &'a mut V {
    if !map.contains_key(key) {
        map.insert(key.to_string(), V::default());
    }
    map.get_mut(key).expect("inserted above")
}

/// Judge agreement counts of one scenario.
#[derive(Debug, Clone, Default)]
pub(super) struct AgreementFold {
    turns: usize,
    /// The largest panel seen.
    panel: usize,
    unanimous_all: usize,
    truth_all: usize,
    /// Per field, in the order first seen.
    fields: Vec<(String, FieldCounts)>,
}

impl AgreementFold {
    /// Counts the scored turns of `d` that have a consensus.
    pub(super) fn add(&mut self, d: &Dialogue) {
        let truth = &d.job().fields;
        // The truth's names as a judgment's map holds them (sorted).
        let mut sorted_truth: Vec<&String> = truth.keys().collect();
        sorted_truth.sort_unstable();
        for f in d.turns.iter().filter(|f| f.scores.is_some()) {
            let Some(panel) = &f.record.judges else {
                continue;
            };
            let Some(consensus) = &panel.consensus else {
                continue;
            };
            let judged: Vec<&BTreeMap<String, Value>> = panel
                .judgments
                .iter()
                .filter_map(|j| j.as_ref().ok().map(|j| &j.classification))
                .collect();
            // Each judge by its place in the panel (`None`: it gave no verdict).
            let seats: Vec<Option<&BTreeMap<String, Value>>> = (panel.judgments.iter())
                .map(|j| j.as_ref().ok().map(|j| &j.classification))
                .collect();
            self.panel = self.panel.max(seats.len());
            let Some(first) = judged.first() else {
                continue;
            };
            // The field names in their first order (a handful: a list beats a hash set).
            let mut names: Vec<&String> = truth.keys().collect();
            let same_names =
                |m: &BTreeMap<String, Value>| m.keys().eq(sorted_truth.iter().copied());
            for map in std::iter::once(consensus).chain(judged.iter().copied()) {
                if same_names(map) {
                    continue;
                }
                for name in map.keys() {
                    if !names.contains(&name) {
                        names.push(name);
                    }
                }
            }
            self.turns += 1;
            let (mut all_agree, mut all_true) = (true, true);
            for (position, name) in names.into_iter().enumerate() {
                let counts = self.field(name, position);
                counts.position = counts.position.min(position);
                let agree = judged.iter().all(|j| match (first.get(name), j.get(name)) {
                    (Some(a), Some(b)) => values_equal(a, b),
                    _ => false,
                });
                counts.turns += 1;
                counts.unanimous += usize::from(agree);
                all_agree &= agree;
                // Each judge's error: its value against the truth where the job fixes the
                // field, else against the consensus.
                let reference = truth.get(name.as_str()).or_else(|| consensus.get(name));
                let errs: Vec<Option<bool>> = (seats.iter())
                    .map(|s| {
                        s.map(|m| match (m.get(name), reference) {
                            (Some(v), Some(r)) => !values_equal(v, r),
                            _ => true,
                        })
                    })
                    .collect();
                counts.errors.add(&errs);
                // `names` begins with the truth's names, in its order.
                if let Some((_, t)) = truth.get_index(position) {
                    let right = consensus.get(name).is_some_and(|c| values_equal(c, t));
                    counts.truth_turns += 1;
                    counts.truth += usize::from(right);
                    all_true &= right;
                }
            }
            self.unanimous_all += usize::from(all_agree);
            self.truth_all += usize::from(all_true);
        }
    }

    /// The counts of field `name`, seen at `position` in a turn (made when new). A scenario's
    /// turns name the same fields in the same order: the field is looked for there first.
    pub(super) fn field(&mut self, name: &str, position: usize) -> &mut FieldCounts {
        let at = match self.fields.get(position) {
            Some((known, _)) if known == name => position,
            _ => match self.fields.iter().position(|(known, _)| known == name) {
                Some(at) => at,
                None => {
                    let counts = FieldCounts {
                        position,
                        ..Default::default()
                    };
                    self.fields.push((name.to_string(), counts));
                    self.fields.len() - 1
                }
            },
        };
        &mut self.fields[at].1
    }

    /// The agreement; `None` without a counted turn.
    pub(super) fn agreement(&self) -> Option<Agreement> {
        if self.turns == 0 {
            return None;
        }
        let percent = |part: usize, whole: usize| 100.0 * part as f64 / whole as f64;
        let (truth, truth_turns) =
            (self.fields.iter()).fold((0, 0), |(t, n), (_, c)| (t + c.truth, n + c.truth_turns));
        let mut fields: Vec<(&String, &FieldCounts)> =
            self.fields.iter().map(|(name, c)| (name, c)).collect();
        fields.sort_by_key(|(name, c)| (c.position, *name));
        Some(Agreement {
            turns: self.turns,
            judges: self.panel,
            unanimous_all_fields: percent(self.unanimous_all, self.turns),
            truth_all_fields: (truth_turns > 0).then(|| percent(self.truth_all, self.turns)),
            truth_mean_over_fields: (truth_turns > 0).then(|| percent(truth, truth_turns)),
            fields: fields
                .into_iter()
                .map(|(name, c)| {
                    let rho = c.errors.mean();
                    let field = FieldAgreement {
                        unanimous: percent(c.unanimous, c.turns),
                        matches_truth: (c.truth_turns > 0).then(|| percent(c.truth, c.truth_turns)),
                        error_correlation: rho,
                        effective_judges: rho.map(|rho| effective_judges(self.panel, rho)),
                    };
                    (name.clone(), field)
                })
                .collect(),
        })
    }
}
