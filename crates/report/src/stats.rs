//! Small exact accumulators of the report: means held in fixed point (so the report is the same
//! whatever order the records came in) and confusion matrices with Cohen's kappa.

use sage_core::scenario::Value;
use std::collections::BTreeMap;

/// Fixed-point scale of [`Mean`]: observations are held as integer numbers of 10^-9 units.
const SCALE: f64 = 1e9;

/// A mean folded one observation at a time, in exact arithmetic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mean {
    sum: i128,
    n: u64,
}

impl Mean {
    /// Adds an observation (a non-finite one is ignored).
    pub fn add(&mut self, x: f64) {
        if x.is_finite() {
            self.sum += (x * SCALE).round() as i128;
            self.n += 1;
        }
    }

    /// Observations.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The mean; `None` without an observation.
    pub fn get(&self) -> Option<f64> {
        (self.n > 0).then(|| self.sum as f64 / (SCALE * self.n as f64))
    }
}

/// A value as one category: booleans and integers written as text count as those values (as
/// [`sage_core::scoring::turn::values_equal`] compares them).
pub fn category(v: &Value) -> String {
    match v {
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Str(s) => {
            let t = s.trim();
            if t.eq_ignore_ascii_case("true") || t.eq_ignore_ascii_case("false") {
                t.to_ascii_lowercase()
            } else if let Ok(i) = t.parse::<i64>() {
                i.to_string()
            } else {
                s.clone()
            }
        }
    }
}

/// Paired ratings of two raters on one categorical field.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Confusion {
    counts: BTreeMap<(String, String), u64>,
    n: u64,
}

impl Confusion {
    /// Adds one item rated `a` by the first rater and `b` by the second.
    pub fn add(&mut self, a: &str, b: &str) {
        *self
            .counts
            .entry((a.to_string(), b.to_string()))
            .or_default() += 1;
        self.n += 1;
    }

    /// Items rated.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// Observed agreement, 0-1; `None` without an item.
    pub fn agreement(&self) -> Option<f64> {
        let same: u64 = self
            .counts
            .iter()
            .filter(|((a, b), _)| a == b)
            .map(|(_, n)| n)
            .sum();
        (self.n > 0).then(|| same as f64 / self.n as f64)
    }

    /// Cohen's kappa: (p_o - p_e) / (1 - p_e), p_e from each rater's marginals. `None` without
    /// an item, or when chance agreement is certain (both raters always gave one same value).
    pub fn kappa(&self) -> Option<f64> {
        let po = self.agreement()?;
        let mut first: BTreeMap<&str, u64> = BTreeMap::new();
        let mut second: BTreeMap<&str, u64> = BTreeMap::new();
        for ((a, b), n) in &self.counts {
            *first.entry(a).or_default() += n;
            *second.entry(b).or_default() += n;
        }
        let total = self.n as f64;
        let pe: f64 = first
            .iter()
            .map(|(k, a)| *a as f64 / total * second.get(k).copied().unwrap_or(0) as f64 / total)
            .sum();
        if (1.0 - pe).abs() < 1e-12 {
            return None;
        }
        Some((po - pe) / (1.0 - pe))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kappa_of_the_textbook_example() {
        // 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15: p_o = 0.7, p_e = 0.5, kappa 0.4.
        let mut c = Confusion::default();
        for (a, b, n) in [
            ("y", "y", 20),
            ("y", "n", 5),
            ("n", "y", 10),
            ("n", "n", 15),
        ] {
            for _ in 0..n {
                c.add(a, b);
            }
        }
        assert_eq!(c.n(), 50);
        assert!((c.agreement().unwrap() - 0.7).abs() < 1e-12);
        assert!((c.kappa().unwrap() - 0.4).abs() < 1e-12);
    }

    #[test]
    fn kappa_is_undefined_when_chance_agreement_is_certain() {
        let mut c = Confusion::default();
        c.add("a", "a");
        c.add("a", "a");
        assert_eq!(c.kappa(), None);
        assert_eq!(Confusion::default().kappa(), None);
        // Perfect agreement over two categories is 1; systematic disagreement is below 0.
        let mut p = Confusion::default();
        p.add("a", "a");
        p.add("b", "b");
        assert_eq!(p.kappa(), Some(1.0));
        let mut q = Confusion::default();
        q.add("a", "b");
        q.add("b", "a");
        assert_eq!(q.kappa(), Some(-1.0));
    }

    #[test]
    fn means_are_exact_and_ignore_non_finite_values() {
        let mut m = Mean::default();
        assert_eq!(m.get(), None);
        for x in [0.1, 0.2, f64::NAN, 0.3] {
            m.add(x);
        }
        assert_eq!(m.n(), 3);
        assert_eq!(m.get(), Some(0.2));
    }

    #[test]
    fn categories_follow_value_equality() {
        assert_eq!(category(&Value::Str(" TRUE ".into())), "true");
        assert_eq!(category(&Value::Bool(true)), "true");
        assert_eq!(category(&Value::Str("7".into())), "7");
        assert_eq!(category(&Value::Int(7)), "7");
        assert_eq!(category(&Value::Str("Calm".into())), "Calm");
    }
}
