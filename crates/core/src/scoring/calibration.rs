//! Calibration statistics for `sage judges calibrate`: how well a panel of LLM judges agrees
//! with human labels, and a judged mean corrected by a few human labels. Pure functions, no I/O.
//!
//! * [`krippendorff_alpha`]: agreement of any number of coders with missing data ([`Level`]).
//! * [`cohen_kappa`]: chance-corrected agreement of two raters.
//! * [`accuracy`]: the plain share of equal pairs.
//! * [`ppi_stratified`]: prediction-powered inference for a mean over a stratified labelled
//!   sample ([`Ppi`]; Angelopoulos et al. 2023, "Prediction-powered inference", Science).

use std::collections::HashMap;
use std::hash::Hash;

use serde::{Deserialize, Serialize};

/// The level of measurement of the values given to [`krippendorff_alpha`]; it chooses the
/// difference function δ².
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Level {
    /// Categories: only equality matters (δ² = 0 if equal, else 1).
    Nominal,
    /// Ranks: values ordered by their numeric order; δ² grows with the number of values coded
    /// between the two (Krippendorff's ordinal metric).
    Ordinal,
    /// Numbers on an interval scale: δ² = (c - k)².
    Interval,
}

/// Krippendorff's alpha for any number of coders with missing data, by the coincidence-matrix
/// formulation (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability").
///
/// Each unit is the list of the values the coders who coded it gave (categories encoded as
/// numbers by the caller; for [`Level::Nominal`] only equality matters). Non-finite values
/// (NaN, ±∞) count as missing. Units with fewer than 2 values are not pairable and are dropped.
///
/// With `o_ck` = Σ_u (number of c-k pairs in u) / (m_u - 1), `n_c` = Σ_k o_ck and n = Σ_c n_c:
/// alpha = 1 - (n - 1) · Σ o_ck δ²_ck / Σ n_c n_k δ²_ck, where δ² is 0/1 for nominal, (c - k)²
/// for interval, and (Σ_{g=c..k} n_g - (n_c + n_k)/2)² for ordinal (over the values that occur).
///
/// `None` when no unit is pairable or the expected disagreement is 0 (every value the same).
pub fn krippendorff_alpha(units: &[Vec<f64>], level: Level) -> Option<f64> {
    // Pairable units, their finite values (-0.0 folded into 0.0 so equality and order agree).
    let units: Vec<Vec<f64>> = units
        .iter()
        .map(|u| {
            u.iter()
                .filter(|v| v.is_finite())
                .map(|v| v + 0.0)
                .collect::<Vec<f64>>()
        })
        .filter(|u| u.len() >= 2)
        .collect();
    let mut values: Vec<f64> = units.iter().flatten().copied().collect();
    values.sort_by(f64::total_cmp);
    values.dedup();
    let q = values.len();
    if q == 0 {
        return None;
    }
    let index = |v: f64| {
        values
            .binary_search_by(|x| x.total_cmp(&v))
            .expect("every value is in the sorted list")
    };

    // Coincidence matrix.
    let mut o = vec![vec![0.0_f64; q]; q];
    let mut counts = vec![0usize; q];
    for unit in &units {
        counts.iter_mut().for_each(|c| *c = 0);
        for &v in unit {
            counts[index(v)] += 1;
        }
        let weight = 1.0 / (unit.len() - 1) as f64;
        for c in 0..q {
            if counts[c] == 0 {
                continue;
            }
            for k in 0..q {
                // c-k pairs of distinct values in the unit (counts[c] > 0, so c == k cannot underflow).
                let pairs = counts[c] * (counts[k] - usize::from(c == k));
                o[c][k] += pairs as f64 * weight;
            }
        }
    }
    let marginals: Vec<f64> = o.iter().map(|row| row.iter().sum()).collect();
    let n: f64 = marginals.iter().sum();

    let delta2 = |c: usize, k: usize| -> f64 {
        if c == k {
            return 0.0;
        }
        match level {
            Level::Nominal => 1.0,
            Level::Interval => (values[c] - values[k]).powi(2),
            Level::Ordinal => {
                let (lo, hi) = (c.min(k), c.max(k));
                let between: f64 = marginals[lo..=hi].iter().sum();
                (between - (marginals[c] + marginals[k]) / 2.0).powi(2)
            }
        }
    };

    let mut observed = 0.0;
    let mut expected = 0.0;
    for c in 0..q {
        for k in 0..q {
            let d = delta2(c, k);
            observed += o[c][k] * d;
            expected += marginals[c] * marginals[k] * d;
        }
    }
    if expected <= 0.0 {
        return None;
    }
    Some(1.0 - (n - 1.0) * observed / expected)
}

/// Cohen's kappa of two raters over items each rated by both: (p_o - p_e) / (1 - p_e), with p_o
/// the share of items on which they agree and p_e = Σ_c p_A(c) p_B(c) the agreement expected
/// from their marginals. Computed from integer counts, so textbook tables give exact values.
///
/// `None` when `pairs` is empty or the expected agreement is 1 (both raters always give the
/// same single category).
pub fn cohen_kappa<T: Eq + Hash + Clone>(pairs: &[(T, T)]) -> Option<f64> {
    if pairs.is_empty() {
        return None;
    }
    let mut first: HashMap<T, u128> = HashMap::new();
    let mut second: HashMap<T, u128> = HashMap::new();
    let mut agree: u128 = 0;
    for (a, b) in pairs {
        *first.entry(a.clone()).or_default() += 1;
        *second.entry(b.clone()).or_default() += 1;
        agree += u128::from(a == b);
    }
    let n = pairs.len() as u128;
    // Σ_c a_c b_c = n² p_e.
    let chance: u128 = first
        .iter()
        .map(|(c, a)| a * second.get(c).copied().unwrap_or(0))
        .sum();
    let total = n * n;
    if chance >= total {
        return None;
    }
    // (p_o - p_e) / (1 - p_e) = (n·agree - Σ a_c b_c) / (n² - Σ a_c b_c).
    Some((n as f64 * agree as f64 - chance as f64) / (total - chance) as f64)
}

/// The share of pairs whose two values are equal; `None` when `pairs` is empty.
pub fn accuracy<T: PartialEq>(pairs: &[(T, T)]) -> Option<f64> {
    if pairs.is_empty() {
        return None;
    }
    let equal = pairs.iter().filter(|(a, b)| a == b).count();
    Some(equal as f64 / pairs.len() as f64)
}

/// A prediction-powered estimate of a mean beside the uncorrected (naive) judged mean; see
/// [`ppi_stratified`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ppi {
    /// The prediction-powered estimate: the judged mean corrected by the mean rectifier
    /// (judged - human) on the labelled items, stratum by stratum.
    pub estimate: f64,
    /// Half the width of its normal-approximation interval (`estimate ± half_width`).
    pub half_width: f64,
    /// The plain mean of the judged values over every item, labelled and unlabelled.
    pub naive: f64,
    /// Half the width of the naive normal interval, z · sd / √(every item).
    pub naive_half_width: f64,
    /// Number of labelled items (n).
    pub labelled: usize,
    /// Number of unlabelled items (N).
    pub unlabelled: usize,
}

/// One stratum of a stratified labelled sample, for [`ppi_stratified`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stratum {
    /// The judged value f(X) of every item of the stratum, the labelled ones included.
    pub judged: Vec<f64>,
    /// The (judged f(X_i), human Y_i) pairs of its labelled items.
    pub labelled: Vec<(f64, f64)>,
}

/// Prediction-powered inference for a mean over a stratified labelled sample (the labels chosen
/// per stratum, e.g. the turns where the judges disagree first): each stratum's judged mean is
/// corrected by its own rectifier and the strata are weighted by their size (Fisch et al. 2024,
/// "Stratified prediction-powered inference").
///
/// * estimate = Σ_s w_s (mean f_s - mean (f - y)_s), w_s = N_s / N (N_s: the stratum's items);
/// * half_width = z · √(Σ_s w_s² (var f_s / N_s + var (f - y)_s / n_s)), sample variances;
/// * naive = mean of f over every item, naive_half_width = z · sd / √N.
///
/// A stratum without a labelled item keeps its judged mean (no correction: nothing says how far
/// the judges are off there) and adds only its judged variance. `None` when no stratum holds a
/// labelled item.
pub fn ppi_stratified(strata: &[Stratum], z: f64) -> Option<Ppi> {
    let strata: Vec<&Stratum> = strata.iter().filter(|s| !s.judged.is_empty()).collect();
    let labelled: usize = strata.iter().map(|s| s.labelled.len()).sum();
    if labelled == 0 {
        return None;
    }
    let big_n: usize = strata.iter().map(|s| s.judged.len()).sum();
    let (mut estimate, mut variance) = (0.0, 0.0);
    for s in &strata {
        let w = s.judged.len() as f64 / big_n as f64;
        let (mean_f, var_f) = mean_var(&s.judged);
        let mut part = var_f / s.judged.len() as f64;
        let mut corrected = mean_f;
        if !s.labelled.is_empty() {
            let rectifier: Vec<f64> = s.labelled.iter().map(|(f, y)| f - y).collect();
            let (mean_r, var_r) = mean_var(&rectifier);
            corrected -= mean_r;
            part += var_r / rectifier.len() as f64;
        }
        estimate += w * corrected;
        variance += w * w * part;
    }
    let all: Vec<f64> = strata
        .iter()
        .flat_map(|s| s.judged.iter().copied())
        .collect();
    let (naive, var_all) = mean_var(&all);
    Some(Ppi {
        estimate,
        half_width: z * variance.sqrt(),
        naive,
        naive_half_width: z * var_all.sqrt() / (big_n as f64).sqrt(),
        labelled,
        unlabelled: big_n - labelled,
    })
}

/// Mean and sample variance (n - 1 denominator; 0 for a single value) of a non-empty slice.
fn mean_var(xs: &[f64]) -> (f64, f64) {
    let len = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / len;
    if xs.len() < 2 {
        return (mean, 0.0);
    }
    let ss: f64 = xs.iter().map(|x| (x - mean).powi(2)).sum();
    (mean, ss / (len - 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const EPS: f64 = 1e-12;

    #[test]
    fn ppi_stratified_by_hand() {
        // Stratum A: judged 1,0,1,0 (N_A = 4), two labelled: (1, 1) and (0, 1), rectifier
        // mean (0 - 1)/2 = -0.5, so A's corrected mean is 0.5 + 0.5 = 1. Stratum B: judged 1, 1,
        // none labelled: its mean 1 stands. Weights 4/6 and 2/6: estimate 1.
        // Variance: A: var f = (4 · 0.25)/3 = 1/3, over 4 = 1/12; var r of (0, -1) = 1/2, over
        // 2 = 1/4; sum 1/3, times (4/6)² = 4/27. B: var f = 0. Half width z · √(4/27).
        // Naive: mean of 1,0,1,0,1,1 = 4/6.
        let strata = [
            Stratum {
                judged: vec![1.0, 0.0, 1.0, 0.0],
                labelled: vec![(1.0, 1.0), (0.0, 1.0)],
            },
            Stratum {
                judged: vec![1.0, 1.0],
                labelled: vec![],
            },
        ];
        let p = ppi_stratified(&strata, 1.96).expect("labelled items");
        assert!(close(p.estimate, 1.0), "{p:?}");
        assert!(close(p.half_width, 1.96 * (4.0f64 / 27.0).sqrt()), "{p:?}");
        assert!(close(p.naive, 4.0 / 6.0));
        assert_eq!((p.labelled, p.unlabelled), (2, 4));
        // One stratum: the uniform estimator's point estimate over all items.
        let one = [Stratum {
            judged: vec![1.0, 1.0, 0.0, 1.0],
            labelled: vec![(1.0, 0.0)],
        }];
        assert!(close(
            ppi_stratified(&one, 1.96).unwrap().estimate,
            0.75 - 1.0
        ));
        assert_eq!(ppi_stratified(&strata[1..], 1.96), None);
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < EPS
    }

    /// Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 coders
    /// (rows), 12 units (columns), values 1-5, `.` missing.
    ///
    /// ```text
    /// A: 1 2 3 3 2 1 4 1 2 . . .
    /// B: 1 2 3 3 2 2 4 1 2 5 . 3
    /// C: . 3 3 3 2 3 4 2 2 5 1 .
    /// D: 1 2 3 3 2 4 4 1 2 5 1 .
    /// ```
    fn krippendorff_2011() -> Vec<Vec<f64>> {
        // 0 = missing.
        let rows: [[u8; 12]; 4] = [
            [1, 2, 3, 3, 2, 1, 4, 1, 2, 0, 0, 0],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, 0, 3],
            [0, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, 0],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, 0],
        ];
        (0..12)
            .map(|u| {
                rows.iter()
                    .map(|r| r[u])
                    .filter(|&v| v > 0)
                    .map(f64::from)
                    .collect()
            })
            .collect()
    }

    // Published: nominal 0.743, ordinal 0.815, interval 0.849. Exact fractions from an
    // independent pairwise computation (D_o over within-unit pairs, D_e over all pairs of
    // pairable values, in rationals): 113/152, 108577/133160, 951/1120.

    #[test]
    fn alpha_krippendorff_2011_nominal() {
        let a = krippendorff_alpha(&krippendorff_2011(), Level::Nominal).unwrap();
        assert_eq!(format!("{a:.3}"), "0.743");
        assert!(close(a, 113.0 / 152.0), "{a}");
    }

    #[test]
    fn alpha_krippendorff_2011_ordinal() {
        let a = krippendorff_alpha(&krippendorff_2011(), Level::Ordinal).unwrap();
        assert_eq!(format!("{a:.3}"), "0.815");
        assert!(close(a, 108577.0 / 133160.0), "{a}");
    }

    #[test]
    fn alpha_krippendorff_2011_interval() {
        let a = krippendorff_alpha(&krippendorff_2011(), Level::Interval).unwrap();
        assert_eq!(format!("{a:.3}"), "0.849");
        assert!(close(a, 951.0 / 1120.0), "{a}");
    }

    #[test]
    fn alpha_perfect_agreement_is_one() {
        let units = vec![
            vec![1.0, 1.0, 1.0],
            vec![2.0, 2.0],
            vec![5.0, 5.0, 5.0, 5.0],
        ];
        for level in [Level::Nominal, Level::Ordinal, Level::Interval] {
            assert_eq!(krippendorff_alpha(&units, level), Some(1.0), "{level:?}");
        }
    }

    #[test]
    fn alpha_none_without_pairable_units_or_variation() {
        // Every unit coded once: nothing pairable.
        let single = vec![vec![1.0], vec![2.0], vec![], vec![3.0, f64::NAN]];
        for level in [Level::Nominal, Level::Ordinal, Level::Interval] {
            assert_eq!(krippendorff_alpha(&single, level), None, "{level:?}");
        }
        assert_eq!(krippendorff_alpha(&[], Level::Nominal), None);
        // Every value the same: expected disagreement 0.
        let same = vec![vec![4.0, 4.0], vec![4.0, 4.0, 4.0]];
        assert_eq!(krippendorff_alpha(&same, Level::Interval), None);
    }

    #[test]
    fn alpha_two_coders_nominal_by_hand() {
        // Units (1,1), (1,2), (2,2), (2,2): o_11 = 2, o_12 = o_21 = 1, o_22 = 4; n_1 = 3,
        // n_2 = 5, n = 8. alpha = 1 - 7 · 2 / (2 · 3 · 5) = 1 - 14/30 = 8/15.
        let units = vec![
            vec![1.0, 1.0],
            vec![1.0, 2.0],
            vec![2.0, 2.0],
            vec![2.0, 2.0],
        ];
        let a = krippendorff_alpha(&units, Level::Nominal).unwrap();
        assert!(close(a, 8.0 / 15.0), "{a}");
        // Encoding only matters beyond nominal: 2 → 7 gives the same nominal alpha.
        let recoded = vec![
            vec![1.0, 1.0],
            vec![1.0, 7.0],
            vec![7.0, 7.0],
            vec![7.0, 7.0],
        ];
        assert_eq!(krippendorff_alpha(&recoded, Level::Nominal), Some(a));
    }

    #[test]
    fn kappa_wikipedia_two_by_two() {
        // 50 items: both yes 20, both no 15, A yes/B no 5, A no/B yes 10.
        // p_o = 35/50 = 0.7; A yes 25/50, B yes 30/50: p_e = 0.5·0.6 + 0.5·0.4 = 0.5;
        // kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
        let mut pairs = Vec::new();
        pairs.extend(std::iter::repeat_n(("yes", "yes"), 20));
        pairs.extend(std::iter::repeat_n(("no", "no"), 15));
        pairs.extend(std::iter::repeat_n(("yes", "no"), 5));
        pairs.extend(std::iter::repeat_n(("no", "yes"), 10));
        assert_eq!(cohen_kappa(&pairs), Some(0.4));
        assert_eq!(accuracy(&pairs), Some(0.7));
    }

    #[test]
    fn kappa_three_categories_by_hand() {
        // A (rows) against B (columns), 20 items:
        //        a  b  c | A
        //   a    5  1  0 |  6
        //   b    1  4  1 |  6
        //   c    0  2  6 |  8
        //   B    6  7  7 | 20
        // p_o = 15/20 = 0.75; p_e = (6·6 + 6·7 + 8·7)/400 = 134/400 = 0.335;
        // kappa = (0.75 - 0.335)/(1 - 0.335) = 0.415/0.665 = 83/133 ≈ 0.62406.
        let table = [
            (('a', 'a'), 5),
            (('a', 'b'), 1),
            (('b', 'a'), 1),
            (('b', 'b'), 4),
            (('b', 'c'), 1),
            (('c', 'b'), 2),
            (('c', 'c'), 6),
        ];
        let pairs: Vec<(char, char)> = table
            .iter()
            .flat_map(|&(pair, count)| std::iter::repeat_n(pair, count))
            .collect();
        assert_eq!(pairs.len(), 20);
        let k = cohen_kappa(&pairs).unwrap();
        assert!(close(k, 83.0 / 133.0), "{k}");
        assert_eq!(accuracy(&pairs), Some(0.75));
    }

    #[test]
    fn kappa_and_accuracy_degenerate() {
        let empty: [(u8, u8); 0] = [];
        assert_eq!(cohen_kappa(&empty), None);
        assert_eq!(accuracy(&empty), None);
        // Both raters always say the same single category: p_e = 1.
        assert_eq!(cohen_kappa(&[(1, 1), (1, 1), (1, 1)]), None);
        assert_eq!(accuracy(&[(1, 1), (1, 1), (1, 1)]), Some(1.0));
        // Perfect agreement over two categories: kappa 1.
        assert_eq!(cohen_kappa(&[(1, 1), (2, 2)]), Some(1.0));
    }

    #[test]
    fn ppi_stratified_exact_judge_leaves_the_judged_mean() {
        // f == y on every labelled item: every rectifier is 0, so the estimate is the judged
        // mean of all items, and the interval comes from the judged variance alone.
        let strata = [Stratum {
            judged: vec![0.2, 0.9, 0.4, 0.7, 0.3],
            labelled: vec![(0.9, 0.9), (0.3, 0.3)],
        }];
        let p = ppi_stratified(&strata, 1.0).unwrap();
        let (mean, var) = mean_var(&strata[0].judged);
        assert!(close(p.estimate, mean) && close(p.naive, mean), "{p:?}");
        assert!(close(p.half_width, (var / 5.0).sqrt()), "{p:?}");
    }

    #[test]
    fn ppi_serde_round_trip() {
        let strata = [Stratum {
            judged: vec![1.0, 0.0],
            labelled: vec![(1.0, 1.0), (0.0, 1.0)],
        }];
        let p = ppi_stratified(&strata, 1.96).unwrap();
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<Ppi>(&json).unwrap(), p);
    }
}
