//! Statistics: means with a seeded cluster-bootstrap percentile interval, quantiles, medians.

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

/// How the intervals are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bootstrap {
    /// Resamples (B); 0 gives a degenerate interval at the mean.
    pub resamples: usize,
    /// Coverage of the interval, e.g. 0.95.
    pub confidence: f64,
    /// Seed of the generator; each group also derives a stream from its label.
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

/// One cluster's (dialogue's) contribution to each of `N` metrics: (sum of its observations,
/// number of observations). A metric's value is `sum of sums / sum of counts`.
pub type ClusterSums<const N: usize> = [(f64, f64); N];

impl Bootstrap {
    /// Each metric's pooled mean with a percentile interval from resampling whole clusters with
    /// replacement. The same resamples serve every metric. A metric with no observation is
    /// `None`; a resample in which a metric has no observation is skipped for that metric.
    /// `label` selects the generator's stream, so a group's interval does not depend on which
    /// other groups exist.
    pub fn metrics<const N: usize>(
        &self,
        clusters: &[ClusterSums<N>],
        label: &str,
    ) -> [Option<Metric>; N] {
        let n = clusters.len();
        // Column-major: a resample is a weight per cluster (how often it was drawn), and a
        // metric's value is a ratio of two weighted sums. Metrics observed on the same turns
        // share their denominator column.
        let sums: [Vec<f64>; N] =
            std::array::from_fn(|m| clusters.iter().map(|c| c[m].0).collect());
        let mut counts: Vec<Vec<f64>> = Vec::new();
        let denominator: [usize; N] = std::array::from_fn(|m| {
            let column: Vec<f64> = clusters.iter().map(|c| c[m].1).collect();
            counts.iter().position(|c| *c == column).unwrap_or_else(|| {
                counts.push(column);
                counts.len() - 1
            })
        });
        let ratios = |weights: &[f64]| -> [Option<f64>; N] {
            let den: Vec<f64> = counts.iter().map(|c| dot(weights, c)).collect();
            std::array::from_fn(|m| {
                let d = den[denominator[m]];
                (d > 0.0).then(|| dot(weights, &sums[m]) / d)
            })
        };
        let point = ratios(&vec![1.0; n]);
        let mut draws: [Vec<f64>; N] = std::array::from_fn(|_| Vec::with_capacity(self.resamples));
        if n > 0 {
            let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
            rng.set_stream(fnv1a(label));
            let mut weights = vec![0.0; n];
            for _ in 0..self.resamples {
                weights.fill(0.0);
                for _ in 0..n {
                    weights[rng.random_range(0..n)] += 1.0;
                }
                for (draw, r) in draws.iter_mut().zip(ratios(&weights)) {
                    draw.extend(r);
                }
            }
        }
        let tail = (1.0 - self.confidence) / 2.0;
        std::array::from_fn(|m| {
            let mean = point[m]?;
            let draw = &mut draws[m];
            draw.sort_by(f64::total_cmp);
            Some(Metric {
                mean,
                ci_low: quantile(draw, tail).unwrap_or(mean),
                ci_high: quantile(draw, 1.0 - tail).unwrap_or(mean),
                n: counts[denominator[m]].iter().sum::<f64>() as usize,
            })
        })
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut total = 0.0;
    for (x, y) in a.iter().zip(b) {
        total += x * y;
    }
    total
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
fn fnv1a(label: &str) -> u64 {
    label.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
