//! Statistics: ratio means with a seeded Poisson cluster-bootstrap percentile interval, folded
//! one cluster at a time in exact (order-independent) arithmetic; quantiles, medians; sums of
//! money.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// A mean with its bootstrap confidence interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Metric {
    /// The mean over every observation (pooled over the clusters).
    pub mean: f64,
    /// Lower bound of the percentile interval.
    pub ci_low: f64,
    /// Upper bound of the percentile interval.
    pub ci_high: f64,
    /// Number of observations (turns) behind the mean.
    pub n: usize,
}

impl Metric {
    /// Half the interval's width (`±` in the leaderboard).
    pub fn half_width(&self) -> f64 {
        (self.ci_high - self.ci_low) / 2.0
    }
}

/// How the intervals are drawn: a Poisson cluster bootstrap (each dialogue weighs Poisson(1)
/// in each resample; docs/metrics-scoring.md), folded one dialogue at a time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bootstrap {
    /// Resamples (B); 0 gives a degenerate interval at the mean.
    pub resamples: usize,
    /// Coverage of the interval, e.g. 0.95.
    pub confidence: f64,
    /// Seed of the generator; each dialogue draws its weights from a stream of its id.
    pub seed: u64,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Bootstrap {
            resamples: 1000,
            confidence: 0.95,
            seed: 0,
        }
    }
}

/// Fixed-point scale of the point estimates: each observation is held as an integer number of
/// 10^-9 units, so sums are exact and the same whatever the order the records come in.
const POINT_SCALE: f64 = 1e9;
/// Fixed-point scale of the bootstrap's weighted sums: integer numbers of 10^-4 units, held in
/// `f64`, where sums of integers below 2^53 are exact (and so independent of the order).
const BOOT_SCALE: f64 = 1e4;

/// The number of `scale` units of `x` (rounded).
fn units(x: f64, scale: f64) -> f64 {
    (x * scale).round()
}

/// Poisson(1) cumulative probabilities as thresholds of a uniform `u32` (k = 0..=11).
const POISSON_CDF: [u32; 12] = {
    let mut out = [0u32; 12];
    let mut p = 0.367_879_441_171_442_3; // e^-1
    let mut cdf = 0.0;
    let mut k = 0;
    while k < 12 {
        cdf += p;
        out[k] = (cdf * 4_294_967_296.0) as u32;
        k += 1;
        p /= k as f64;
    }
    out
};

/// The Poisson bootstrap weights of one cluster (a dialogue): `resamples` draws of Poisson(1),
/// from a generator seeded by the run seed and the cluster's id, so a cluster weighs the same in
/// every group it belongs to, whatever else the run holds and whatever the order it comes in.
pub fn poisson_weights(seed: u64, cluster: &str, resamples: usize) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(fnv1a(cluster));
    (0..resamples)
        .map(|_| {
            let u: u32 = rng.random();
            // The first k with u below its threshold: the thresholds u is not below (they
            // rise), counted without a branch.
            POISSON_CDF.iter().map(|t| u8::from(u >= *t)).sum::<u8>()
        })
        .collect()
}

/// Ratio means of `N` metrics over clusters, folded one cluster at a time: each metric's
/// pooled mean (the sum of its observations over their number) and a Poisson-bootstrap
/// percentile interval, in memory that does not grow with the clusters (B weighted sums per
/// metric). Metric `m` counts its observations in denominator column `den[m]` (metrics observed
/// on the same turns share one), `D` columns in all.
///
/// Every sum is of integers (observations in scale units, counts, small integer weights), held
/// exactly, so folds of disjoint clusters can be added up or taken from each other
/// ([`RatioFold::plus`], [`RatioFold::minus`]) and give what folding the clusters would.
#[derive(Debug, Clone)]
pub struct RatioFold<const N: usize, const D: usize> {
    den: [usize; N],
    num: [i128; N],
    count: [i64; D],
    /// One row of weighted sums per resample (empty until the first cluster), of every
    /// cluster but the pending ones.
    boot: Vec<Row<N, D>>,
    /// Clusters folded but not yet in `boot` (at most [`BATCH`]): applied together, a row is
    /// read and written once a batch rather than once a cluster.
    pending: Vec<Row<N, D>>,
    /// The pending clusters' weights, cluster by cluster (one a resample).
    pending_weights: Vec<u8>,
}

/// Clusters applied to the resamples' rows together.
const BATCH: usize = 16;

/// Resample `b`'s weights of the pending clusters, whose weights are `weights` (cluster by
/// cluster, `resamples` each).
#[inline(always)]
fn weights_of(weights: &[u8], b: usize, resamples: usize) -> impl Iterator<Item = u8> + '_ {
    weights.iter().skip(b).step_by(resamples.max(1)).copied()
}

/// Adds to each row the clusters `pending`, weighted by their weights in that row's resample.
#[inline(always)]
fn apply_rows<const N: usize, const D: usize>(
    rows: &mut [Row<N, D>],
    pending: &[Row<N, D>],
    weights: &[u8],
) {
    let resamples = rows.len();
    for (b, row) in rows.iter_mut().enumerate() {
        *row = row.with(pending, weights_of(weights, b, resamples));
    }
}

/// [`apply_rows`] compiled for AVX2: four sums an instruction instead of two, the same
/// additions and multiplications in the same order (no fused multiply-add), so the same sums.
/// Most of a run's summary is spent here.
///
/// # Safety
/// Only on a processor with AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn apply_avx2<const N: usize, const D: usize>(
    rows: &mut [Row<N, D>],
    pending: &[Row<N, D>],
    weights: &[u8],
) {
    apply_rows(rows, pending, weights);
}

/// One resample's weighted sums: per metric, of its observations; per denominator column, of
/// the observations counted.
#[derive(Debug, Clone, Copy)]
struct Row<const N: usize, const D: usize> {
    sum: [f64; N],
    count: [f64; D],
}

impl<const N: usize, const D: usize> Row<N, D> {
    const ZERO: Self = Row {
        sum: [0.0; N],
        count: [0.0; D],
    };

    /// This row plus the clusters `xs`, each weighted by its weight in `ws`.
    #[inline(always)]
    fn with(mut self, xs: &[Self], ws: impl Iterator<Item = u8>) -> Self {
        for (x, w) in xs.iter().zip(ws) {
            let w = f64::from(w);
            for (s, x) in self.sum.iter_mut().zip(&x.sum) {
                *s += w * x;
            }
            for (s, x) in self.count.iter_mut().zip(&x.count) {
                *s += w * x;
            }
        }
        self
    }
}

/// One cluster's observations of `N` metrics: per metric, the sum of its observations and, per
/// denominator column, their number.
#[derive(Debug, Clone, Copy)]
pub struct Cluster<const N: usize, const D: usize> {
    /// Per metric: the sum of the observations, each as `POINT_SCALE` units.
    pub point: [i128; N],
    /// Per metric: the sum of the observations, each as `BOOT_SCALE` units.
    pub boot: [f64; N],
    /// Per denominator column: observations (negative in a difference of clusters).
    pub count: [i64; D],
}

impl<const N: usize, const D: usize> Cluster<N, D> {
    /// No observation yet.
    pub fn new() -> Self {
        Cluster {
            point: [0; N],
            boot: [0.0; N],
            count: [0; D],
        }
    }

    /// Adds an observation `x` of metric `m`; `None` adds nothing.
    pub fn observe(&mut self, m: usize, x: Option<f64>) {
        if let Some(x) = x.filter(|x| x.is_finite()) {
            self.point[m] += units(x, POINT_SCALE) as i128;
            self.boot[m] += units(x, BOOT_SCALE);
        }
    }

    /// Counts one turn in denominator column `d`.
    pub fn count(&mut self, d: usize) {
        self.count[d] += 1;
    }

    /// Adds `other`'s observations.
    pub fn plus(&mut self, other: &Self) {
        self.combine(other, 1);
    }

    /// Takes `other`'s observations away (the change a variant of the same turns makes, say):
    /// exact, as every sum is of integers.
    pub fn minus(&mut self, other: &Self) {
        self.combine(other, -1);
    }

    fn combine(&mut self, other: &Self, sign: i8) {
        for m in 0..N {
            self.point[m] += i128::from(sign) * other.point[m];
            self.boot[m] += f64::from(sign) * other.boot[m];
        }
        for d in 0..D {
            self.count[d] += i64::from(sign) * other.count[d];
        }
    }

    /// Whether it holds nothing: folding it changes no sum.
    pub fn is_zero(&self) -> bool {
        self.point.iter().all(|x| *x == 0)
            && self.boot.iter().all(|x| *x == 0.0)
            && self.count.iter().all(|x| *x == 0)
    }
}

impl<const N: usize, const D: usize> Default for Cluster<N, D> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize, const D: usize> RatioFold<N, D> {
    /// An empty fold; `den[m]` is metric `m`'s denominator column.
    pub fn new(den: [usize; N]) -> Self {
        RatioFold {
            den,
            num: [0; N],
            count: [0; D],
            boot: Vec::new(),
            pending: Vec::new(),
            pending_weights: Vec::new(),
        }
    }

    /// Adds one cluster, weighted in resample `b` by `weights[b]` (as many weights as every
    /// other cluster of the fold has).
    pub fn add(&mut self, cluster: &Cluster<N, D>, weights: &[u8]) {
        if cluster.is_zero() {
            return;
        }
        for m in 0..N {
            self.num[m] += cluster.point[m];
        }
        for d in 0..D {
            self.count[d] += cluster.count[d];
        }
        self.reserve(weights.len());
        let k = self.pending.len();
        self.pending.push(Row {
            sum: cluster.boot,
            count: cluster.count.map(|c| c as f64),
        });
        let resamples = self.boot.len();
        self.pending_weights[k * resamples..(k + 1) * resamples].copy_from_slice(weights);
        if self.pending.len() == BATCH {
            self.apply();
        }
    }

    /// Rows for `resamples` resamples, once.
    fn reserve(&mut self, resamples: usize) {
        if self.boot.is_empty() {
            self.boot = vec![Row::ZERO; resamples];
            self.pending.reserve_exact(BATCH);
            self.pending_weights = vec![0; resamples * BATCH];
        }
    }

    /// Applies the pending clusters to the rows. Every row is summed in the same way (all
    /// weights, zeros included): a multiplication costs less than a branch the weights'
    /// randomness makes the processor mispredict.
    fn apply(&mut self) {
        let (rows, pending, weights) = (&mut self.boot, &self.pending, &self.pending_weights);
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor has AVX2, checked just above.
            unsafe { apply_avx2(rows, pending, weights) };
            self.pending.clear();
            return;
        }
        apply_rows(rows, pending, weights);
        self.pending.clear();
    }

    /// Every resample's row, the pending clusters included.
    fn rows(&self) -> impl Iterator<Item = Row<N, D>> + '_ {
        let resamples = self.boot.len();
        (self.boot.iter().enumerate()).map(move |(b, row)| {
            row.with(
                &self.pending,
                weights_of(&self.pending_weights, b, resamples),
            )
        })
    }

    /// Adds the clusters `other` folded (clusters not in this fold, drawn with the same
    /// weights): the fold of both sets, exactly.
    pub fn plus(&mut self, other: &Self) {
        self.combine(other, 1);
    }

    /// Takes away the clusters `other` folded (a part of this fold's clusters, or of their
    /// observations): the fold of the rest, exactly.
    pub fn minus(&mut self, other: &Self) {
        self.combine(other, -1);
    }

    fn combine(&mut self, other: &Self, sign: i8) {
        if other.boot.is_empty() {
            return;
        }
        for m in 0..N {
            self.num[m] += i128::from(sign) * other.num[m];
        }
        for d in 0..D {
            self.count[d] += i64::from(sign) * other.count[d];
        }
        self.reserve(other.boot.len());
        let sign = f64::from(sign);
        for (row, x) in self.boot.iter_mut().zip(other.rows()) {
            for (s, x) in row.sum.iter_mut().zip(&x.sum) {
                *s += sign * x;
            }
            for (s, x) in row.count.iter_mut().zip(&x.count) {
                *s += sign * x;
            }
        }
    }

    /// Each metric's mean with its percentile interval (`None` without an observation); a
    /// resample in which a metric has no observation is skipped for it.
    pub fn metrics(&self, bootstrap: &Bootstrap) -> [Option<Metric>; N] {
        std::array::from_fn(|m| {
            let n = self.count[self.den[m]].max(0);
            let mean = self.mean(m)?;
            let draws = self.draws(bootstrap, |row| self.draw(row, m));
            let (ci_low, ci_high) = interval(&draws, bootstrap).unwrap_or((mean, mean));
            Some(Metric {
                mean,
                ci_low,
                ci_high,
                n: n as usize,
            })
        })
    }

    /// The paired difference of two metrics' means, `a - b` (say, one run's score minus a
    /// baseline's over the same dialogues), with the percentile interval of the difference
    /// within each resample (a cluster weighs the same on both sides, so the interval is a
    /// paired bootstrap's); `None` when either metric has no observation. A resample in which
    /// either has none is skipped.
    pub fn difference(&self, a: usize, b: usize, bootstrap: &Bootstrap) -> Option<Difference> {
        self.paired_test(a, b, bootstrap).map(|t| t.difference)
    }

    /// [`RatioFold::difference`] with its two-sided bootstrap p-value ([`bootstrap_p`] of the
    /// resampled differences): how unlikely a difference this far from 0 is if the two metrics
    /// do not differ.
    pub fn paired_test(&self, a: usize, b: usize, bootstrap: &Bootstrap) -> Option<PairedTest> {
        let delta = self.mean(a)? - self.mean(b)?;
        let draws = self.draws(bootstrap, |row| {
            Some(self.draw(row, a)? - self.draw(row, b)?)
        });
        let (ci_low, ci_high) = interval(&draws, bootstrap).unwrap_or((delta, delta));
        Some(PairedTest {
            difference: Difference {
                delta,
                ci_low,
                ci_high,
            },
            p: bootstrap_p(&draws),
        })
    }

    /// The noise floor of metric `m` against a rerun: half the width of the percentile interval
    /// of the difference between two independent bootstrap replicates of its mean (replicate
    /// `b` minus replicate `b + ⌊n/2⌋` modulo the n resamples that observed it), which stands for
    /// the difference between this run and an independent rerun of the same design. `None`
    /// without an observation or with fewer than two resamples.
    pub fn rerun_half_width(&self, m: usize, bootstrap: &Bootstrap) -> Option<f64> {
        self.mean(m)?;
        let draws: Vec<f64> = self
            .rows()
            .take(bootstrap.resamples)
            .filter_map(|row| self.draw(&row, m))
            .collect();
        let n = draws.len();
        if n < 2 {
            return None;
        }
        let mut differences: Vec<f64> = (0..n).map(|b| draws[b] - draws[(b + n / 2) % n]).collect();
        differences.sort_by(f64::total_cmp);
        let (low, high) = interval(&differences, bootstrap)?;
        Some((high - low) / 2.0)
    }

    /// Metric `m`'s pooled mean; `None` without an observation.
    fn mean(&self, m: usize) -> Option<f64> {
        let n = self.count[self.den[m]];
        (n > 0).then(|| self.num[m] as f64 / POINT_SCALE / n as f64)
    }

    /// Metric `m`'s mean in one resample's row; `None` when the resample holds no observation.
    fn draw(&self, row: &Row<N, D>, m: usize) -> Option<f64> {
        let den = row.count[self.den[m]];
        (den > 0.0).then(|| row.sum[m] / BOOT_SCALE / den)
    }

    /// `f` of every resample's row (those it gives a value for), sorted.
    fn draws(&self, bootstrap: &Bootstrap, f: impl Fn(&Row<N, D>) -> Option<f64>) -> Vec<f64> {
        let mut draws: Vec<f64> = self
            .rows()
            .take(bootstrap.resamples)
            .filter_map(|row| f(&row))
            .collect();
        draws.sort_by(f64::total_cmp);
        draws
    }
}

/// The percentile interval of sorted draws at the bootstrap's confidence; `None` without draws.
pub(crate) fn interval(sorted: &[f64], bootstrap: &Bootstrap) -> Option<(f64, f64)> {
    let tail = (1.0 - bootstrap.confidence) / 2.0;
    Some((quantile(sorted, tail)?, quantile(sorted, 1.0 - tail)?))
}

/// A difference of two means with its bootstrap percentile interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    /// The difference of the means.
    pub delta: f64,
    /// Lower bound of the percentile interval.
    pub ci_low: f64,
    /// Upper bound of the percentile interval.
    pub ci_high: f64,
}

/// A paired difference and its two-sided bootstrap p-value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedTest {
    /// The difference with its percentile interval.
    pub difference: Difference,
    /// The two-sided p-value of "no difference" ([`bootstrap_p`]).
    pub p: f64,
}

/// The two-sided p-value of a difference from its bootstrap draws: twice the smaller share of
/// draws on either side of 0, each counted with the observed sample,
/// `min(1, 2 · min((#{Δ* ≤ 0} + 1) / (B + 1), (#{Δ* ≥ 0} + 1) / (B + 1)))`, B the number of
/// draws. It is below 0.05 about when the 95% percentile interval excludes 0, and never below
/// `2 / (B + 1)` (1 without draws).
pub fn bootstrap_p(draws: &[f64]) -> f64 {
    let b = draws.len() as f64;
    let below = draws.iter().filter(|d| **d <= 0.0).count() as f64;
    let above = draws.iter().filter(|d| **d >= 0.0).count() as f64;
    (2.0 * ((below + 1.0) / (b + 1.0)).min((above + 1.0) / (b + 1.0))).min(1.0)
}

/// Benjamini-Hochberg adjusted p-values (q-values) of a family of tests, in the order given:
/// `q_(i) = min over j >= i of (m / j) · p_(j)`, capped at 1, for the p-values sorted
/// ascending (rank i of m). Calling "significant" every test with q < α keeps the expected
/// share of false discoveries among them at most α (for independent or positively dependent
/// tests).
pub fn benjamini_hochberg(p: &[f64]) -> Vec<f64> {
    let m = p.len() as f64;
    let mut order: Vec<usize> = (0..p.len()).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]).then(i.cmp(&j)));
    let mut q = vec![1.0; p.len()];
    let mut smallest = 1.0_f64;
    for (rank, &i) in order.iter().enumerate().rev() {
        smallest = smallest.min(p[i] * m / (rank + 1) as f64);
        q[i] = smallest;
    }
    q
}

/// A sum of money held exactly (picodollars), whatever the order of its terms.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Money(i128);

impl Money {
    /// Adds an amount in US dollars.
    pub fn add(&mut self, usd: f64) {
        if usd.is_finite() {
            self.0 += (usd * 1e12).round() as i128;
        }
    }

    /// The sum in US dollars.
    pub fn usd(&self) -> f64 {
        self.0 as f64 / 1e12
    }
}

/// The `q` quantile of sorted values, interpolating linearly between order statistics (the
/// usual "type 7" definition); `None` when there are none.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    let last = sorted.len().checked_sub(1)?;
    let h = last as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(last);
    Some(sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo]))
}

/// The median (mean of the two middle values for an even count); `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    quantile(&sorted, 0.5)
}

/// `part / whole`, 0 when `whole` is 0.
pub fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The arithmetic mean; `None` when empty.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// 64-bit FNV-1a: a stable hash of a label (std's hasher may change between releases).
pub(crate) fn fnv1a(label: &str) -> u64 {
    label.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bootstrap_p_counts_the_draws_on_each_side_of_zero() {
        // 3 of 4 draws at or below 0, 1 at or above: 2 · min(4/5, 2/5).
        assert!((bootstrap_p(&[-3.0, -2.0, -1.0, 1.0]) - 0.8).abs() < 1e-12);
        // Every draw below 0: the smallest p that 10 draws can give, 2/11.
        assert!((bootstrap_p(&[-1.0; 10]) - 2.0 / 11.0).abs() < 1e-12);
        // No difference at all, or no draw: 1.
        assert_eq!(bootstrap_p(&[0.0; 10]), 1.0);
        assert_eq!(bootstrap_p(&[]), 1.0);
    }

    #[test]
    fn benjamini_hochberg_q_values_as_r_p_adjust_gives_them() {
        // p.adjust(c(0.01, 0.04, 0.03, 0.005), "BH") in R: 0.02 0.04 0.04 0.02.
        let q = benjamini_hochberg(&[0.01, 0.04, 0.03, 0.005]);
        for (got, want) in q.iter().zip([0.02, 0.04, 0.04, 0.02]) {
            assert!((got - want).abs() < 1e-12, "{q:?}");
        }
        // p.adjust(c(0.001, 0.3, 0.2), "BH"): 0.003 0.3 0.3 (monotone in the ranks).
        let q = benjamini_hochberg(&[0.001, 0.3, 0.2]);
        for (got, want) in q.iter().zip([0.003, 0.3, 0.3]) {
            assert!((got - want).abs() < 1e-12, "{q:?}");
        }
        assert_eq!(benjamini_hochberg(&[0.9, 1.0]), [1.0, 1.0]);
        assert!(benjamini_hochberg(&[]).is_empty());
    }

    /// Two dialogues, one metric: [80] and [50, 70], weighed (1,1), (2,0), (0,2), (1,2), (0,0)
    /// in five resamples: draws 200/3, 80, 60, 64 (the last skipped: no observation).
    #[test]
    fn the_rerun_noise_floor_on_a_hand_example() {
        let mut fold = RatioFold::<1, 1>::new([0]);
        for (xs, w) in [
            (&[80.0][..], [1, 2, 0, 1, 0]),
            (&[50.0, 70.0][..], [1, 0, 2, 2, 0]),
        ] {
            let mut c = Cluster::<1, 1>::new();
            for x in xs {
                c.observe(0, Some(*x));
                c.count(0);
            }
            fold.add(&c, &w);
        }
        let half = Bootstrap {
            resamples: 5,
            confidence: 0.5,
            seed: 0,
        };
        // Replicate b minus replicate b + 2 (mod 4): 20/3, 16, -20/3, -16; sorted quartiles
        // (type 7, h = 0.75 and 2.25): -16 + 0.75 · 28/3 = -9 and 20/3 + 0.25 · 28/3 = 9.
        let floor = fold.rerun_half_width(0, &half).unwrap();
        assert!((floor - 9.0).abs() < 1e-9, "{floor}");
        let none = Bootstrap {
            resamples: 0,
            ..half
        };
        assert_eq!(fold.rerun_half_width(0, &none), None);
        assert_eq!(RatioFold::<1, 1>::new([0]).rerun_half_width(0, &half), None);
    }

    /// Many dialogues of a smooth score: the rerun floor is about √2 times half the mean's own
    /// interval (the difference of two independent means).
    #[test]
    fn the_rerun_noise_floor_is_about_root_two_half_widths() {
        let bootstrap = Bootstrap {
            resamples: 4000,
            confidence: 0.95,
            seed: 3,
        };
        let mut fold = RatioFold::<1, 1>::new([0]);
        for i in 0..400 {
            let mut c = Cluster::<1, 1>::new();
            c.observe(0, Some(f64::from((i * 37) % 101)));
            c.count(0);
            fold.add(&c, &poisson_weights(3, &format!("d{i}"), 4000));
        }
        let own = fold.metrics(&bootstrap)[0].unwrap().half_width();
        let floor = fold.rerun_half_width(0, &bootstrap).unwrap();
        let ratio = floor / own;
        assert!(
            (ratio - 2f64.sqrt()).abs() < 0.1,
            "{floor} / {own} = {ratio}"
        );
    }
}
