//! Adaptive runs (`sage run --adaptive`): stop giving a model cases once its place against the
//! top K is decided. Each model's dialogue OA (the mean Overall of its scored turns, on 0-1)
//! carries an anytime-valid confidence sequence ([`ConfidenceSequence`]): valid however often
//! it is looked at, so it is looked at after every dialogue. The sequences hold together at
//! `1 - alpha` (each at `alpha / models`, Bonferroni), and a model is decided once its
//! sequence says it is surely in the top K (fewer than K other models can be above it) or
//! surely out of it (at least K others are surely above it). A decided model gets no more
//! cases; the others go on to the full run's size. Pure: [`Adaptive`] folds records and
//! answers [`Adaptive::admits`]; the runner asks it before each dialogue.

use crate::protocol::DialogueRecord;
use crate::scoring::summary::counted_scores;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The predictable plug-in empirical-Bernstein confidence sequence for the mean of
/// observations in [0, 1] (Waudby-Smith and Ramdas, "Estimating means of bounded random
/// variables by betting", JRSS-B 2024, Theorem 2 with c = 1/2), intersected over time: at
/// every time at once, the mean is inside with probability at least `1 - alpha`.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfidenceSequence {
    alpha: f64,
    n: u64,
    sum_x: f64,
    /// Σ (x_i - μ̂_i)², for the variance estimate.
    sum_sq: f64,
    sum_lambda: f64,
    sum_lambda_x: f64,
    /// Σ v_i ψ_E(λ_i).
    sum_v_psi: f64,
    lower: f64,
    upper: f64,
}

impl ConfidenceSequence {
    /// No observation yet: [0, 1].
    pub fn new(alpha: f64) -> ConfidenceSequence {
        ConfidenceSequence {
            alpha,
            n: 0,
            sum_x: 0.0,
            sum_sq: 0.0,
            sum_lambda: 0.0,
            sum_lambda_x: 0.0,
            sum_v_psi: 0.0,
            lower: 0.0,
            upper: 1.0,
        }
    }

    /// Adds an observation (clamped to [0, 1]; not a number: left out).
    pub fn add(&mut self, x: f64) {
        if x.is_nan() {
            return;
        }
        let x = x.clamp(0.0, 1.0);
        let t = (self.n + 1) as f64;
        // The estimates before this observation (t - 1 of them), as the paper starts them.
        let mu_prev = (0.5 + self.sum_x) / t;
        let sigma2_prev = (0.25 + self.sum_sq) / t;
        let log_term = (2.0 / self.alpha).ln();
        let lambda = (2.0 * log_term / (sigma2_prev * t * (1.0 + t).ln()))
            .sqrt()
            .min(0.5);
        let v = 4.0 * (x - mu_prev).powi(2);
        let psi = (-(1.0 - lambda).ln() - lambda) / 4.0;
        self.n += 1;
        self.sum_x += x;
        let mu = (0.5 + self.sum_x) / (t + 1.0);
        self.sum_sq += (x - mu).powi(2);
        self.sum_lambda += lambda;
        self.sum_lambda_x += lambda * x;
        self.sum_v_psi += v * psi;
        let center = self.sum_lambda_x / self.sum_lambda;
        let half = (log_term + self.sum_v_psi) / self.sum_lambda;
        self.lower = self.lower.max(center - half).clamp(0.0, 1.0);
        self.upper = self.upper.min(center + half).clamp(0.0, 1.0);
        if self.lower > self.upper {
            // The intersection is empty only when the sequence missed: keep a point.
            let mid = (self.lower + self.upper) / 2.0;
            (self.lower, self.upper) = (mid, mid);
        }
    }

    /// Observations.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// Their mean (`None` without any).
    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum_x / self.n as f64)
    }

    /// The sequence's bounds now.
    pub fn bounds(&self) -> (f64, f64) {
        (self.lower, self.upper)
    }
}

/// Where a model stands against the top K.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Surely in the top K: it stopped getting cases.
    InTop,
    /// Surely out of it: it stopped getting cases.
    OutOfTop,
    /// Not decided: it plays on to the full run's size.
    Undecided,
}

/// One model's standing in an adaptive run (summary.json's `adaptive.models`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Standing {
    /// The model.
    pub model: String,
    /// Where it stands.
    pub decision: Decision,
    /// Dialogues with a scored turn that its sequence holds.
    pub dialogues: u64,
    /// The dialogue count at which it was decided (`None`: undecided).
    pub decided_after: Option<u64>,
    /// Its OA's confidence sequence now, 0-100.
    pub lower: f64,
    /// Upper bound, 0-100.
    pub upper: f64,
    /// The mean of its dialogues' OA, 0-100.
    pub mean: Option<f64>,
    /// Its dialogues of the full run not played (so far; once the run has ended, what
    /// stopping early saved).
    #[serde(default)]
    pub not_played: usize,
}

/// summary.json's `adaptive`: what an adaptive run decided.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdaptiveSummary {
    /// The K decided against.
    pub top: usize,
    /// The level the sequences hold together at.
    pub alpha: f64,
    /// The sequence: the predictable plug-in empirical-Bernstein confidence sequence.
    pub sequence: String,
    /// Per model, in the order of their names.
    pub models: Vec<Standing>,
}

impl AdaptiveSummary {
    /// Whether `model` still gets cases (undecided, or not one of the run's models).
    pub fn admits(&self, model: &str) -> bool {
        self.standing(model)
            .is_none_or(|s| s.decision == Decision::Undecided)
    }

    /// The standing of `model`.
    pub fn standing(&self, model: &str) -> Option<&Standing> {
        self.models.iter().find(|s| s.model == model)
    }

    /// Models decided so far: surely in the top K, and surely out of it.
    pub fn decided(&self) -> (usize, usize) {
        let count = |d| self.models.iter().filter(|s| s.decision == d).count();
        (count(Decision::InTop), count(Decision::OutOfTop))
    }

    /// Whether the decisions keep every dialogue not played from starting: some are not
    /// played, and each model with dialogues not played is decided (the run has then ended).
    pub fn stops_the_rest(&self) -> bool {
        let mut left = self.models.iter().filter(|s| s.not_played > 0).peekable();
        left.peek().is_some() && left.all(|s| s.decision != Decision::Undecided)
    }

    /// A standing's mark in a leaderboard: `top 3 @120`, `out @45` (decided after that many
    /// dialogues), `undecided`.
    pub fn mark(&self, model: &str) -> String {
        match self.standing(model).map(|s| (s.decision, s.decided_after)) {
            Some((Decision::InTop, Some(n))) => format!("top {} @{n}", self.top),
            Some((Decision::OutOfTop, Some(n))) => format!("out @{n}"),
            _ => "undecided".into(),
        }
    }

    /// What an adaptive run decided, a line per model, the decided ones first.
    pub fn text(&self) -> String {
        let mut out = format!(
            "adaptive run (top {}, 95% confidence sequences): ",
            self.top
        );
        let decided = self
            .models
            .iter()
            .filter(|m| m.decision != Decision::Undecided)
            .count();
        out.push_str(&format!(
            "{decided} of {} models decided early\n",
            self.models.len()
        ));
        let mut models: Vec<&Standing> = self.models.iter().collect();
        models.sort_by_key(|m| (m.decision == Decision::Undecided, m.model.clone()));
        for m in models {
            let why = match (m.decision, m.decided_after) {
                (Decision::InTop, Some(n)) => {
                    format!("surely in the top {} after {n} dialogues", self.top)
                }
                (Decision::OutOfTop, Some(n)) => {
                    format!("surely out of the top {} after {n} dialogues", self.top)
                }
                _ => format!(
                    "undecided: played to the full run ({} dialogues)",
                    m.dialogues
                ),
            };
            let saved = match m.not_played {
                0 => String::new(),
                n => format!("; {n} not played"),
            };
            out.push_str(&format!(
                "  {}: {why}; OA {:.1} to {:.1}{saved}\n",
                m.model, m.lower, m.upper
            ));
        }
        out
    }
}

/// The adaptive state of a run: one confidence sequence per model under test, and the
/// decisions made.
#[derive(Debug, Clone)]
pub struct Adaptive {
    top: usize,
    alpha: f64,
    models: BTreeMap<String, ConfidenceSequence>,
    decided: BTreeMap<String, (Decision, u64)>,
    /// Each model's dialogues in the full run.
    per_model: usize,
    /// Each model's dialogues added (scored or not).
    played: BTreeMap<String, usize>,
}

/// The default K of `--adaptive-top`.
pub const DEFAULT_TOP: usize = 3;
/// The level the sequences hold together at (95%).
pub const ALPHA: f64 = 0.05;

impl Adaptive {
    /// A run of `models` deciding against the top `top`, every sequence valid together at
    /// `1 - alpha` (each model's full run unknown: see [`Adaptive::of_jobs`]).
    pub fn new(models: &[String], top: usize, alpha: f64) -> Adaptive {
        let each = alpha / models.len().max(1) as f64;
        Adaptive {
            top,
            alpha,
            models: models
                .iter()
                .map(|m| (m.clone(), ConfidenceSequence::new(each)))
                .collect(),
            decided: BTreeMap::new(),
            per_model: 0,
            played: BTreeMap::new(),
        }
    }

    /// The same, the full run giving each model `jobs / models` dialogues (the standings
    /// count those not played).
    pub fn of_jobs(mut self, jobs: usize) -> Adaptive {
        self.per_model = jobs / self.models.len().max(1);
        self
    }

    /// The adaptive state of a run of `config` planned as `jobs` dialogues (`None`: not an
    /// adaptive run), at [`ALPHA`].
    pub fn for_run(config: &crate::plan::RunConfig, jobs: usize) -> Option<Adaptive> {
        let k = config.adaptive_top?;
        Some(Adaptive::new(&config.service_models, k, ALPHA).of_jobs(jobs))
    }

    /// Whether `model` still gets cases (undecided, or not one of the run's models).
    pub fn admits(&self, model: &str) -> bool {
        !self.decided.contains_key(model)
    }

    /// Adds an observation of `model` (its dialogue's OA, 0-1) and decides what can be.
    pub fn observe(&mut self, model: &str, oa: f64) {
        self.push(model, oa);
        self.decide();
    }

    /// Adds an observation without deciding (a simulation decides once per round).
    fn push(&mut self, model: &str, oa: f64) {
        if let Some(cs) = self.models.get_mut(model) {
            cs.add(oa);
        }
    }

    /// Adds a finished dialogue: its model's OA over its scored turns (a dialogue without one
    /// adds nothing).
    pub fn add(&mut self, record: &DialogueRecord) {
        if let Some(n) = self.played.get_mut(&record.job.service_model) {
            *n += 1;
        } else if self.models.contains_key(&record.job.service_model) {
            self.played.insert(record.job.service_model.clone(), 1);
        }
        let scores: Vec<f64> = counted_scores(record).map(|s| s.overall).collect();
        if !scores.is_empty() {
            let oa = scores.iter().sum::<f64>() / scores.len() as f64 / 100.0;
            self.observe(&record.job.service_model, oa);
        }
    }

    /// Decides every model whose place is sure now (a decision is kept).
    fn decide(&mut self) {
        let k = self.top;
        let all = self.models.len();
        if k == 0 || k >= all {
            return;
        }
        let mut uppers: Vec<f64> = self.models.values().map(|c| c.bounds().1).collect();
        let mut lowers: Vec<f64> = self.models.values().map(|c| c.bounds().0).collect();
        uppers.sort_by(f64::total_cmp);
        lowers.sort_by(f64::total_cmp);
        for (model, cs) in &self.models {
            if self.decided.contains_key(model) || cs.n() == 0 {
                continue;
            }
            let (lo, hi) = cs.bounds();
            // Others that may be above it: their upper bound reaches its lower one (itself
            // counted among them when its own upper bound does, which it always does).
            let may_be_above = all - uppers.partition_point(|u| *u < lo) - 1;
            // Others surely above it: their lower bound is past its upper one.
            let surely_above = all - lowers.partition_point(|l| *l <= hi);
            let decision = if may_be_above < k {
                Decision::InTop
            } else if surely_above >= k {
                Decision::OutOfTop
            } else {
                continue;
            };
            self.decided.insert(model.clone(), (decision, cs.n()));
        }
    }

    /// Every model's standing, in the order of the models' names.
    pub fn standings(&self) -> Vec<Standing> {
        self.models
            .iter()
            .map(|(model, cs)| {
                let (lower, upper) = cs.bounds();
                let decided = self.decided.get(model);
                Standing {
                    model: model.clone(),
                    decision: decided.map_or(Decision::Undecided, |d| d.0),
                    dialogues: cs.n(),
                    decided_after: decided.map(|d| d.1),
                    lower: 100.0 * lower,
                    upper: 100.0 * upper,
                    mean: cs.mean().map(|m| 100.0 * m),
                    not_played: (self.per_model)
                        .saturating_sub(self.played.get(model).copied().unwrap_or(0)),
                }
            })
            .collect()
    }

    /// summary.json's `adaptive`.
    pub fn summary(&self) -> AdaptiveSummary {
        AdaptiveSummary {
            top: self.top,
            alpha: self.alpha,
            sequence: "predictable plug-in empirical Bernstein (Waudby-Smith and Ramdas 2024), \
                       each model at alpha / models"
                .into(),
            models: self.standings(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (SplitMix64): the tests need many draws, no crate.
    struct Draws(u64);
    impl Draws {
        fn unit(&mut self) -> f64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        }
        /// A dialogue's OA of a model of true mean `mean`: the share of four turns right,
        /// each with chance `mean` (its mean is `mean`, its spread a real dialogue's).
        fn dialogue(&mut self, mean: f64) -> f64 {
            (0..4).filter(|_| self.unit() < mean).count() as f64 / 4.0
        }
    }

    #[test]
    fn the_sequence_covers_the_mean_at_every_time_at_once() {
        // 400 sequences at 90%, 2,000 observations each, looked at after every one: the
        // share that ever misses the mean stays under 10% (the fixed-n interval looked at
        // every time would miss far more often).
        let mut missed = 0;
        for run in 0..400 {
            let mut d = Draws(run);
            let mut cs = ConfidenceSequence::new(0.10);
            let mean = 0.2 + 0.6 * d.unit();
            let mut ever = false;
            for _ in 0..2000 {
                cs.add(d.dialogue(mean));
                let (lo, hi) = cs.bounds();
                ever |= mean < lo || mean > hi;
            }
            missed += usize::from(ever);
        }
        assert!(missed <= 40, "{missed} of 400 missed");
        // And it narrows: after 2,000 observations of spread ~0.25 the width is a few points.
        let mut d = Draws(9);
        let mut cs = ConfidenceSequence::new(0.05);
        for _ in 0..2000 {
            cs.add(d.dialogue(0.7));
        }
        let (lo, hi) = cs.bounds();
        assert!(hi - lo < 0.08 && lo < 0.7 && hi > 0.7, "{lo}..{hi}");
    }

    /// An adaptive run of models of true means `means`, each at most `size` dialogues, one
    /// dialogue per undecided model per round: the top K it reports (decided in, then the
    /// undecided by their mean) and the dialogues played.
    fn simulate(means: &[f64], k: usize, size: u64, seed: u64) -> (Vec<usize>, u64) {
        let names: Vec<String> = (0..means.len()).map(|i| format!("m{i:02}")).collect();
        let mut a = Adaptive::new(&names, k, ALPHA);
        let mut d = Draws(seed);
        let mut played = 0;
        for _ in 0..size {
            for (i, name) in names.iter().enumerate() {
                if a.admits(name) {
                    a.push(name, d.dialogue(means[i]));
                    played += 1;
                }
            }
            a.decide();
            if names.iter().all(|n| !a.admits(n)) {
                break;
            }
        }
        let standings = a.standings();
        let mut ranked: Vec<(usize, &Standing)> = standings.iter().enumerate().collect();
        ranked.sort_by(|(_, x), (_, y)| {
            let key = |s: &Standing| (s.decision != Decision::InTop, -s.mean.unwrap_or(0.0));
            key(x).partial_cmp(&key(y)).unwrap()
        });
        let mut top: Vec<usize> = ranked.iter().take(k).map(|(i, _)| *i).collect();
        top.sort_unstable();
        (top, played)
    }

    #[test]
    fn over_200_runs_of_27_models_the_top_three_is_wrong_at_most_5_percent_and_costs_less() {
        // 27 models of distinct skill, OA from 0.85 down to 0.35; a full run of 600
        // dialogues per model.
        let means: Vec<f64> = (0..27).map(|i| 0.85 - 0.5 * i as f64 / 26.0).collect();
        let size = 600;
        let (mut wrong, mut played) = (0, 0);
        for seed in 0..200 {
            let (top, n) = simulate(&means, 3, size, 1000 + seed);
            wrong += usize::from(top != [0, 1, 2]);
            played += n;
        }
        let full = 200 * 27 * size;
        let share = played as f64 / full as f64;
        println!(
            "{wrong} of 200 wrong, {:.1}% of the dialogues",
            100.0 * share
        );
        assert!(wrong <= 10, "{wrong} of 200 runs had the top three wrong");
        assert!(
            share <= 0.6,
            "{:.0}% of the full runs' dialogues",
            100.0 * share
        );
    }

    #[test]
    fn the_rest_is_kept_once_every_model_with_dialogues_left_is_decided() {
        let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        // A full run of 30 dialogues: 10 a model.
        let mut a = Adaptive::new(&names, 1, ALPHA).of_jobs(30);
        // A dialogue without a scored turn: played, but its sequence learns nothing.
        let record = |model: &str| crate::scoring::tests::bare_record(model, 0.0);
        for _ in 0..4 {
            a.add(&record("a"));
        }
        let s = a.summary();
        assert_eq!(s.standing("a").unwrap().not_played, 6);
        assert_eq!(s.standing("a").unwrap().dialogues, 0, "no scored turn");
        assert_eq!(s.standing("c").unwrap().not_played, 10);
        assert!(!s.stops_the_rest(), "nothing is decided");
        let mut s = s;
        for m in &mut s.models {
            m.decision = Decision::OutOfTop;
        }
        s.models[2].decision = Decision::Undecided;
        assert!(!s.stops_the_rest(), "c has dialogues left and is undecided");
        s.models[2].not_played = 0;
        assert!(s.stops_the_rest(), "c played to its size");
        for m in &mut s.models {
            m.not_played = 0;
        }
        assert!(
            !s.stops_the_rest(),
            "nothing is left: the run is complete, not stopped"
        );
    }

    #[test]
    fn decisions_follow_the_bounds() {
        let names: Vec<String> = ["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect();
        let mut a = Adaptive::new(&names, 1, ALPHA);
        assert!(names.iter().all(|n| a.admits(n)));
        // Far apart: a at 0.95, the others at 0.1; a is surely first, the others surely not.
        for _ in 0..200 {
            a.observe("a", 0.95);
            for other in ["b", "c", "d"] {
                a.observe(other, 0.1);
            }
        }
        let s = a.standings();
        assert_eq!(s[0].decision, Decision::InTop);
        assert!(
            s[1..].iter().all(|s| s.decision == Decision::OutOfTop),
            "{s:?}"
        );
        assert!(s[0].decided_after.unwrap() < 200);
        // Not a model of the run: nothing happens.
        a.observe("zz", 1.0);
        assert!(a.admits("zz"));
        let summary = a.summary();
        assert_eq!(summary.decided(), (1, 3));
        assert!(!summary.admits("a") && summary.admits("zz"));
        assert!(
            summary.mark("a").starts_with("top 1 @"),
            "{}",
            summary.mark("a")
        );
        assert!(summary.mark("b").starts_with("out @"));
        // Equal models are never decided against each other.
        let mut tie = Adaptive::new(&names, 2, ALPHA);
        let mut d = Draws(3);
        for _ in 0..500 {
            for n in &names {
                tie.observe(n, d.dialogue(0.5));
            }
        }
        assert!(names.iter().all(|n| tie.admits(n)));
    }
}
