//! Two runs compared without pairing: a stratified bootstrap of each run's cases. When the
//! dialogues of two runs do not pair (another seed drew other cases), the difference between
//! the runs is the post-stratified difference of their ratio means,
//! `Δ = Σ_s w_s (m_cur,s − m_base,s)`, over the strata `s` both runs hold (a stratum: the
//! scenario and target route of a case, say), `m_run,s` the ratio mean of the run's cases in the
//! stratum (the sum of their turn scores over their counted turns, like the leaderboard's) and
//! `w_s` the stratum's share of the counted turns of both runs together. Its interval and
//! p-value come from resampling each run's cases independently within each stratum.
//!
//! Folded one stratum at a time ([`StratumDraws::draw`] each run's side, then
//! [`StratifiedFold::add`] to every group the stratum is in), so that memory holds a few
//! vectors of B numbers per open group, never the draws of every stratum at once.

use super::stats::{Bootstrap, Difference, bootstrap_p, fnv1a, interval};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// One case of one run (its repeats together): per metric, the sum of its counted turns'
/// scores, and the number of those turns (the same turns for every metric).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CaseSums<const M: usize> {
    /// Per metric, the sum of the scores of the counted turns.
    pub sums: [f64; M],
    /// Counted turns.
    pub turns: u64,
}

impl<const M: usize> CaseSums<M> {
    /// Nothing yet.
    pub fn new() -> Self {
        CaseSums {
            sums: [0.0; M],
            turns: 0,
        }
    }

    /// Adds a counted turn's scores.
    pub fn observe(&mut self, scores: [f64; M]) {
        for (s, x) in self.sums.iter_mut().zip(scores) {
            *s += x;
        }
        self.turns += 1;
    }

    /// Adds another part of the same case (a repeat).
    pub fn plus(&mut self, other: &Self) {
        for (s, x) in self.sums.iter_mut().zip(other.sums) {
            *s += x;
        }
        self.turns += other.turns;
    }

    /// The ratio means of `cases`; `None` without a counted turn.
    fn means<'a>(cases: impl Iterator<Item = &'a Self>) -> (u64, Option<[f64; M]>) {
        let mut total = CaseSums::<M>::new();
        for c in cases {
            total.plus(c);
        }
        let means = (total.turns > 0).then(|| total.sums.map(|s| s / total.turns as f64));
        (total.turns, means)
    }
}

impl<const M: usize> Default for CaseSums<M> {
    fn default() -> Self {
        Self::new()
    }
}

/// One stratum of one run, resampled: its ratio means, its counted turns and, per resample,
/// the ratio means of the cases drawn (`None` when they hold no counted turn).
///
/// A resample draws `n − 1` of the stratum's `n` cases with replacement (one when `n` is 1):
/// the variance of a mean of `n` draws would be `(n − 1)/n` of the unbiased `s²/n`, too
/// narrow for the few cases a stratum holds; with `n − 1` draws it is `s²/n` (McCarthy and
/// Snowden's correction of the stratified bootstrap). A stratum of one case does not vary.
#[derive(Debug, Clone, PartialEq)]
pub struct StratumDraws<const M: usize> {
    turns: u64,
    means: Option<[f64; M]>,
    draws: Vec<Option<[f64; M]>>,
}

impl<const M: usize> StratumDraws<M> {
    /// The stratum's `cases` (in an order that does not depend on the order the records came
    /// in: the caller sorts them) resampled `bootstrap.resamples` times, with draws from a
    /// generator seeded by the bootstrap's seed and a stream named by `label` (the run side,
    /// the model and the stratum, say: the same label, the same draws).
    pub fn draw(cases: &[CaseSums<M>], bootstrap: &Bootstrap, label: &str) -> Self {
        let (turns, means) = CaseSums::means(cases.iter());
        let mut rng = ChaCha8Rng::seed_from_u64(bootstrap.seed);
        rng.set_stream(fnv1a(label));
        let n = cases.len();
        let k = n.saturating_sub(1).max(1);
        let draws = if n == 0 {
            vec![None; bootstrap.resamples]
        } else {
            (0..bootstrap.resamples)
                .map(|_| CaseSums::means((0..k).map(|_| &cases[rng.random_range(0..n)])).1)
                .collect()
        };
        StratumDraws {
            turns,
            means,
            draws,
        }
    }
}

/// A group's post-stratified difference between two runs, folded one stratum at a time: per
/// metric `Σ_s n_s (m_cur,s − m_base,s)` and its resampled values, `n_s` the stratum's counted
/// turns in both runs.
#[derive(Debug, Clone)]
pub struct StratifiedFold<const M: usize> {
    weight: f64,
    current: [f64; M],
    baseline: [f64; M],
    draws: Vec<[f64; M]>,
    skipped: Vec<bool>,
    strata: usize,
    left_out: usize,
}

impl<const M: usize> StratifiedFold<M> {
    /// No stratum yet, for `resamples` resamples.
    pub fn new(resamples: usize) -> Self {
        StratifiedFold {
            weight: 0.0,
            current: [0.0; M],
            baseline: [0.0; M],
            draws: vec![[0.0; M]; resamples],
            skipped: vec![false; resamples],
            strata: 0,
            left_out: 0,
        }
    }

    /// Adds a stratum: its `current` and `baseline` draws (of as many resamples as the fold's).
    /// A stratum without a counted turn in either run is left out (and counted); a resample in
    /// which either side drew no counted turn is skipped for the whole group.
    pub fn add(&mut self, current: &StratumDraws<M>, baseline: &StratumDraws<M>) {
        let (Some(cur), Some(base)) = (current.means, baseline.means) else {
            self.left_out += 1;
            return;
        };
        let w = (current.turns + baseline.turns) as f64;
        self.weight += w;
        self.strata += 1;
        for m in 0..M {
            self.current[m] += w * cur[m];
            self.baseline[m] += w * base[m];
        }
        let pairs = current.draws.iter().zip(&baseline.draws);
        for ((sum, skipped), (c, b)) in self.draws.iter_mut().zip(&mut self.skipped).zip(pairs) {
            match (c, b) {
                (Some(c), Some(b)) => {
                    for m in 0..M {
                        sum[m] += w * (c[m] - b[m]);
                    }
                }
                _ => *skipped = true,
            }
        }
    }

    /// Strata that held a counted turn in both runs.
    pub fn strata(&self) -> usize {
        self.strata
    }

    /// Strata left out (no counted turn in one of the runs).
    pub fn left_out(&self) -> usize {
        self.left_out
    }

    /// The post-stratified means and differences with their percentile intervals and
    /// two-sided p-values ([`bootstrap_p`]); `None` when no stratum was in both runs.
    pub fn finish(&self, bootstrap: &Bootstrap) -> Option<StratifiedDifference<M>> {
        if self.strata == 0 {
            return None;
        }
        let w = self.weight;
        let metrics = std::array::from_fn(|m| {
            let current = self.current[m] / w;
            let baseline = self.baseline[m] / w;
            let delta = current - baseline;
            let mut draws: Vec<f64> = (self.draws.iter().zip(&self.skipped))
                .filter(|(_, skipped)| !**skipped)
                .map(|(d, _)| d[m] / w)
                .collect();
            draws.sort_by(f64::total_cmp);
            let (ci_low, ci_high) = interval(&draws, bootstrap).unwrap_or((delta, delta));
            StratifiedMetric {
                current,
                baseline,
                difference: Difference {
                    delta,
                    ci_low,
                    ci_high,
                },
                p: bootstrap_p(&draws),
            }
        });
        Some(StratifiedDifference {
            metrics,
            strata: self.strata,
            left_out: self.left_out,
        })
    }
}

/// One metric of a post-stratified comparison.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StratifiedMetric {
    /// The current run's post-stratified mean, `Σ w_s m_cur,s`.
    pub current: f64,
    /// The baseline's, `Σ w_s m_base,s`.
    pub baseline: f64,
    /// Their difference with its percentile interval.
    pub difference: Difference,
    /// The two-sided bootstrap p-value of the difference.
    pub p: f64,
}

/// What a [`StratifiedFold`] gives: per metric its means, difference, interval and p.
#[derive(Debug, Clone, PartialEq)]
pub struct StratifiedDifference<const M: usize> {
    /// Per metric.
    pub metrics: [StratifiedMetric; M],
    /// Strata in both runs.
    pub strata: usize,
    /// Strata left out (in one run only).
    pub left_out: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(scores: &[f64]) -> CaseSums<1> {
        let mut c = CaseSums::new();
        for x in scores {
            c.observe([*x]);
        }
        c
    }

    fn boot(resamples: usize, seed: u64) -> Bootstrap {
        Bootstrap {
            resamples,
            confidence: 0.95,
            seed,
        }
    }

    /// Two strata. Stratum A: current cases [80, 60] and [70] (ratio mean 70, 3 turns),
    /// baseline [50] and [40, 60] (50, 3 turns): weight 6, difference 20. Stratum B: current
    /// [90] (1 turn), baseline [30, 50] and [60] (140/3, 3 turns): weight 4, difference
    /// 130/3. Δ = (6 · 20 + 4 · 130/3) / 10 = 88/3; the current run's post-stratified mean
    /// (6 · 70 + 4 · 90) / 10 = 78, the baseline's (6 · 50 + 4 · 140/3) / 10 = 146/3. A
    /// stratum held by one run only is left out.
    #[test]
    fn the_post_stratified_difference_on_a_hand_example() {
        let b = boot(500, 1);
        let mut fold = StratifiedFold::<1>::new(b.resamples);
        let a_cur = [case(&[80.0, 60.0]), case(&[70.0])];
        let a_base = [case(&[50.0]), case(&[40.0, 60.0])];
        let b_cur = [case(&[90.0])];
        let b_base = [case(&[30.0, 50.0]), case(&[60.0])];
        let draw = |cases: &[CaseSums<1>], label: &str| StratumDraws::draw(cases, &b, label);
        fold.add(&draw(&a_cur, "cur/a"), &draw(&a_base, "base/a"));
        fold.add(&draw(&b_cur, "cur/b"), &draw(&b_base, "base/b"));
        fold.add(&draw(&[case(&[10.0])], "cur/c"), &draw(&[], "base/c"));
        let r = fold.finish(&b).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        let m = r.metrics[0];
        assert!(close(m.difference.delta, 88.0 / 3.0), "{m:?}");
        assert!(close(m.current, 78.0), "{m:?}");
        assert!(close(m.baseline, 146.0 / 3.0), "{m:?}");
        assert_eq!((r.strata, r.left_out), (2, 1));
        // A resample draws one case of two (n − 1): stratum A's sides are 70 and 50 whichever
        // case is drawn, B's current 90 and its baseline 40 or 60, so every resampled Δ is
        // (120 + 4 · 50) / 10 = 32 or (120 + 4 · 30) / 10 = 24, above 0: the smallest p.
        assert_eq!(m.p, 2.0 / (b.resamples as f64 + 1.0));
        assert_eq!((m.difference.ci_low, m.difference.ci_high), (24.0, 32.0));
        let a = StratumDraws::draw(&a_cur, &b, "x");
        assert!(a.draws.iter().all(|d| close(d.unwrap()[0], 70.0)));
        // The same label draws the same; another label, others.
        let base = StratumDraws::draw(&b_base, &b, "x");
        assert_eq!(base, StratumDraws::draw(&b_base, &b, "x"));
        assert_ne!(base.draws, StratumDraws::draw(&b_base, &b, "y").draws);
        // Nothing in both runs: no result.
        let mut empty = StratifiedFold::<1>::new(10);
        empty.add(&draw(&[], "e"), &draw(&b_base, "f"));
        assert_eq!(empty.finish(&b), None);
    }

    /// A run's cases: `cases` per stratum of three strata of different levels, each case one
    /// to four turns of a skewed score (60% near the stratum's level, the rest low), `shift`
    /// added.
    fn sample(rng: &mut ChaCha8Rng, cases: usize, shift: f64) -> Vec<Vec<CaseSums<1>>> {
        [85.0, 60.0, 35.0]
            .iter()
            .map(|level| {
                (0..cases)
                    .map(|_| {
                        let turns = rng.random_range(1..=4);
                        let scores: Vec<f64> = (0..turns)
                            .map(|_| {
                                let x = if rng.random_bool(0.6) {
                                    level + 15.0 * rng.random::<f64>()
                                } else {
                                    30.0 * rng.random::<f64>()
                                };
                                (x + shift).clamp(0.0, 100.0)
                            })
                            .collect();
                        case(&scores)
                    })
                    .collect()
            })
            .collect()
    }

    /// Two runs' samples stratum by stratum: p of the post-stratified difference.
    fn p_value(current: &[Vec<CaseSums<1>>], baseline: &[Vec<CaseSums<1>>], seed: u64) -> f64 {
        let b = boot(1000, seed);
        let mut fold = StratifiedFold::<1>::new(b.resamples);
        for (s, (c, base)) in current.iter().zip(baseline).enumerate() {
            fold.add(
                &StratumDraws::draw(c, &b, &format!("cur/{s}")),
                &StratumDraws::draw(base, &b, &format!("base/{s}")),
            );
        }
        fold.finish(&b).unwrap().metrics[0].p
    }

    /// Two samples of one distribution (with other numbers of cases in each run and
    /// stratum): p < 0.05 in about 5% of 200 comparisons; a drop of 20 points, in most.
    #[test]
    fn p_values_are_about_uniform_under_no_difference_and_a_shift_is_found() {
        let mut rng = ChaCha8Rng::seed_from_u64(17);
        let (mut null, mut shifted) = (0, 0);
        let replications: u64 = 200;
        for rep in 0..replications {
            let current = sample(&mut rng, 12, 0.0);
            let baseline = sample(&mut rng, 9, 0.0);
            null += u64::from(p_value(&current, &baseline, rep) < 0.05);
            let worse = sample(&mut rng, 12, -20.0);
            shifted += u64::from(p_value(&worse, &baseline, rep) < 0.05);
        }
        let rate = null as f64 / replications as f64;
        eprintln!("null: p < 0.05 in {null} of {replications}; shifted: {shifted}");
        assert!((0.01..=0.10).contains(&rate), "{rate}");
        assert!(shifted > replications * 3 / 4, "{shifted}");
    }
}
