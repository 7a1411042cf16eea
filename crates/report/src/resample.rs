//! Resampling with replacement, seeded and the same on every platform: the bootstrap of a mean
//! over a few hundred values at most (a run's tasks), where every value is at hand.

/// `resamples` means of `values` resampled with replacement (n draws from n values), the
/// generator seeded by `seed`, sorted ascending; none without values.
pub fn means(values: &[f64], resamples: usize, seed: u64) -> Vec<f64> {
    let n = values.len();
    if n == 0 {
        return Vec::new();
    }
    let mut rng = SplitMix64(seed);
    let mut draws: Vec<f64> = (0..resamples)
        .map(|_| (0..n).map(|_| values[rng.below(n)]).sum::<f64>() / n as f64)
        .collect();
    draws.sort_by(f64::total_cmp);
    draws
}

/// The SplitMix64 generator (small, seeded, the same on every platform).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A position below `n` (n > 0), by the multiply-shift mapping.
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}
