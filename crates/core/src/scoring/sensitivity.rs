//! How much a model's result depends on who played the customer (`user_models`: every case
//! played with each simulator under the same seed): per model under test, its OA under each
//! simulator and the paired difference from the first, with its interval, flagged when it
//! moves beyond the noise (summary.json's `simulator_sensitivity`, docs/report.md). Pure.
//!
//! The difference is paired over the cases: a case's dialogues under every simulator weigh
//! the same in each bootstrap resample (their weights are drawn from the case's id under the
//! first simulator), so a resample's difference compares the same cases, and the fold holds
//! one row of sums a resample whatever the number of dialogues.

use crate::protocol::simulator::MAX_USER_MODELS;
use crate::protocol::{DialogueRecord, TurnRecord};
use crate::scoring::stats::{Bootstrap, Cluster, Difference, Metric, RatioFold, poisson_weights};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One model's OA under each customer simulator of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimulatorSensitivity {
    /// The model under test.
    pub model: String,
    /// The noise floor of its OA under the first simulator: half the width of the interval a
    /// rerun of the same design could differ by ([`RatioFold::rerun_half_width`]); none
    /// without scored turns.
    pub noise_floor: Option<f64>,
    /// Its OA under each simulator, the first (the one the leaderboard ranks under) first.
    pub simulators: Vec<SimulatorScore>,
}

impl SimulatorSensitivity {
    /// Whether its OA moved beyond the noise under some simulator.
    pub fn moved(&self) -> bool {
        self.simulators.iter().any(|s| s.moved)
    }
}

/// A model's OA under one customer simulator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimulatorScore {
    /// The customer simulator (a `user_models` name).
    pub user_model: String,
    /// The model's dialogues under it.
    pub dialogues: usize,
    /// Its OA (mean Overall of the scored turns) with its interval; none without scored turns.
    pub oa: Option<Metric>,
    /// OA under this simulator minus OA under the first, paired over the cases, with its
    /// percentile interval; none for the first simulator (or without scored turns).
    pub difference: Option<Difference>,
    /// Whether the difference is beyond the noise: its interval leaves out 0 and it is larger
    /// than the noise floor.
    pub moved: bool,
}

/// Each model's OA under each customer simulator, folded one record at a time.
#[derive(Debug, Clone)]
pub struct SensitivityFold {
    bootstrap: Bootstrap,
    /// The simulators by their index in `user_models` (as the records name them).
    simulators: BTreeMap<u32, String>,
    models: BTreeMap<String, ModelSensitivity>,
}

#[derive(Debug, Clone)]
struct ModelSensitivity {
    /// Metric and denominator column `i`: OA under simulator `i`.
    oa: RatioFold<MAX_USER_MODELS, MAX_USER_MODELS>,
    dialogues: [usize; MAX_USER_MODELS],
}

/// A dialogue id as the case's dialogue under the first simulator has it (the plan adds
/// `@<simulator>` to the model of the others).
fn first_simulators_id(record: &DialogueRecord) -> String {
    let job = &record.job;
    match job.user_model_index {
        0 => job.dialogue_id.clone(),
        _ => job
            .dialogue_id
            .replacen(&format!("@{}/", job.user_model), "/", 1),
    }
}

impl SensitivityFold {
    /// An empty fold drawing its intervals as `bootstrap` says.
    pub fn new(bootstrap: Bootstrap) -> SensitivityFold {
        SensitivityFold {
            bootstrap,
            simulators: BTreeMap::new(),
            models: BTreeMap::new(),
        }
    }

    /// Folds one record in; `weights`, when given, are its dialogue id's Poisson weights (the
    /// summary has drawn them already for a dialogue under the first simulator).
    pub fn add(&mut self, record: &DialogueRecord, weights: Option<&[u8]>) {
        let job = &record.job;
        let index = job.user_model_index as usize;
        if index >= MAX_USER_MODELS {
            return; // a configuration cannot name more; a foreign record is not counted
        }
        self.simulators
            .entry(job.user_model_index)
            .or_insert_with(|| job.user_model.clone());
        let drawn;
        let weights = match weights {
            Some(w) if index == 0 => w,
            _ => {
                drawn = poisson_weights(
                    self.bootstrap.seed,
                    &first_simulators_id(record),
                    self.bootstrap.resamples,
                );
                &drawn
            }
        };
        let mut cluster = Cluster::<MAX_USER_MODELS, MAX_USER_MODELS>::new();
        for scores in record.turns.iter().filter_map(TurnRecord::counted_scores) {
            cluster.observe(index, Some(scores.overall));
            cluster.count(index);
        }
        let model = self
            .models
            .entry(job.service_model.clone())
            .or_insert_with(|| ModelSensitivity {
                oa: RatioFold::new(std::array::from_fn(|i| i)),
                dialogues: [0; MAX_USER_MODELS],
            });
        model.dialogues[index] += 1;
        model.oa.add(&cluster, weights);
    }

    /// Each model's sensitivity; empty unless some record was played by a second simulator.
    pub fn summary(&self) -> Vec<SimulatorSensitivity> {
        if self.simulators.keys().all(|i| *i == 0) {
            return Vec::new();
        }
        let b = &self.bootstrap;
        self.models
            .iter()
            .map(|(model, fold)| {
                let oa = fold.oa.metrics(b);
                let noise_floor = fold.oa.rerun_half_width(0, b);
                let simulators = self
                    .simulators
                    .iter()
                    .map(|(&i, name)| {
                        let i = i as usize;
                        let difference = (i > 0).then(|| fold.oa.difference(i, 0, b)).flatten();
                        let moved = difference.is_some_and(|d| {
                            let beyond_interval = d.ci_low > 0.0 || d.ci_high < 0.0;
                            beyond_interval && noise_floor.is_some_and(|n| d.delta.abs() > n)
                        });
                        SimulatorScore {
                            user_model: name.clone(),
                            dialogues: fold.dialogues[i],
                            oa: oa[i],
                            difference,
                            moved,
                        }
                    })
                    .collect();
                SimulatorSensitivity {
                    model: model.clone(),
                    noise_floor,
                    simulators,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{FormatError, ServiceOutcome, TurnRecord, TurnScores};
    use crate::scoring::summary::summarize;

    /// A dialogue of `model` on case `case` under simulator `index` (named `user`), one scored
    /// turn of Overall `overall`.
    fn played(model: &str, case: usize, index: u32, user: &str, overall: f64) -> DialogueRecord {
        let mut record = crate::scoring::tests::bare_record(model, 0.0);
        let played_by = if index == 0 {
            String::new()
        } else {
            format!("@{user}")
        };
        record.job.dialogue_id = format!("sc/{case:04}/{model}{played_by}/r0");
        record.job.user_model = user.into();
        record.job.user_model_index = index;
        record.turns.push(TurnRecord {
            turn: 1,
            user_message: "hi".into(),
            raw_output: None,
            outcome: ServiceOutcome::FormatError {
                error: FormatError::NoJsonObject,
                chat: String::new(),
            },
            judges: None,
            reference: None,
            scores: Some(TurnScores {
                acc_cls: 0.0,
                sim_path: 0.0,
                acc_action: 0.0,
                logic: overall,
                chat: overall,
                overall,
                sim_path_prefix: 0.0,
            }),
            infra_error: None,
            calls: Vec::new(),
            customer_retry: None,
            off_case: None,
        });
        record
    }

    #[test]
    fn a_simulator_that_costs_every_case_ten_points_is_seen_paired() {
        // Cases of very different difficulty (OA 10 to 100 under the first simulator); the
        // second costs each exactly 10 points. Paired over the cases the difference is -10
        // with a tight interval; unpaired, the spread of the cases would swamp it.
        let mut records = Vec::new();
        for case in 0..200 {
            let oa = 10.0 + (case * 37 % 91) as f64;
            records.push(played("m", case, 0, "kind", oa));
            records.push(played("m", case, 1, "harsh", oa - 10.0));
            // A model the second simulator does not change.
            records.push(played("n", case, 0, "kind", oa));
            records.push(played("n", case, 1, "harsh", oa));
        }
        let summary = summarize(&records, &Bootstrap::default());
        // The leaderboard is the first simulator's: 200 dialogues a model.
        assert_eq!(summary.models.len(), 2);
        assert!(summary.models.iter().all(|m| m.dialogues == 200));
        let [m, n] = &summary.simulator_sensitivity[..] else {
            panic!("{:?}", summary.simulator_sensitivity)
        };
        assert_eq!((m.model.as_str(), n.model.as_str()), ("m", "n"));
        let names: Vec<&str> = m.simulators.iter().map(|s| s.user_model.as_str()).collect();
        assert_eq!(names, ["kind", "harsh"]);
        let first = &m.simulators[0];
        let leaderboard_oa = summary.models[0].all.overall.unwrap().mean;
        assert!((first.oa.unwrap().mean - leaderboard_oa).abs() < 1e-9);
        assert_eq!(first.difference, None);
        let d = m.simulators[1].difference.expect("a difference");
        assert!((d.delta + 10.0).abs() < 1e-9, "{d:?}");
        assert!(d.ci_high - d.ci_low < 0.01, "paired: {d:?}");
        assert!(m.simulators[1].moved && m.moved());
        let floor = m.noise_floor.unwrap();
        // About 1.96 x √2 x the standard error of 200 cases spread 10 to 100: 5 points.
        assert!(floor > 3.0 && floor < 7.0, "{floor}");
        // The other model did not move at all.
        let d = n.simulators[1].difference.unwrap();
        assert_eq!((d.delta, d.ci_low, d.ci_high), (0.0, 0.0, 0.0));
        assert!(!n.moved());
    }

    #[test]
    fn a_move_within_the_noise_floor_is_not_called_a_move() {
        // Every case 1 point lower: the paired interval leaves out 0, but a rerun could move
        // the OA by more (the cases spread 10 to 100).
        let mut records = Vec::new();
        for case in 0..200 {
            let oa = 10.0 + (case * 37 % 91) as f64;
            records.push(played("m", case, 0, "kind", oa));
            records.push(played("m", case, 1, "harsh", oa - 1.0));
        }
        let summary = summarize(&records, &Bootstrap::default());
        let s = &summary.simulator_sensitivity[0];
        let d = s.simulators[1].difference.unwrap();
        assert!(d.ci_high < 0.0, "{d:?}");
        assert!(s.noise_floor.unwrap() > 1.0);
        assert!(!s.moved());
    }

    #[test]
    fn one_simulator_has_no_sensitivity() {
        let records: Vec<DialogueRecord> =
            (0..10).map(|c| played("m", c, 0, "kind", 50.0)).collect();
        assert!(
            summarize(&records, &Bootstrap::default())
                .simulator_sensitivity
                .is_empty()
        );
    }
}
