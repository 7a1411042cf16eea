//! Sets of values a key can take, and boxes of such sets over all keys.
//!
//! This is the algebra behind symbolic validation and enumeration: a branch of the SOP
//! constrains a key to a [`Domain`]; a route is a [`ValueBox`] (one domain per key). Enum and
//! boolean keys use a bit set over their options, integer keys a union of inclusive ranges.

use std::fmt;

/// Most options an enum key may declare (the width of the bit set).
pub const MAX_OPTIONS: usize = 64;

/// The values a single key may still take.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Domain {
    /// A set of option indices (enum options in declaration order; booleans: 0 = true, 1 = false).
    Set(u64),
    /// A set of integers.
    Ints(IntSet),
}

impl Domain {
    /// The set holding the first `n` options.
    pub fn all_options(n: usize) -> Domain {
        Domain::Set(if n >= 64 { u64::MAX } else { (1u64 << n) - 1 })
    }

    /// The set holding only option `i`.
    pub fn option(i: usize) -> Domain {
        Domain::Set(1u64 << i)
    }

    /// True when no value is left.
    pub fn is_empty(&self) -> bool {
        match self {
            Domain::Set(m) => *m == 0,
            Domain::Ints(s) => s.is_empty(),
        }
    }

    /// Values in both sets.
    pub fn intersect(&self, other: &Domain) -> Domain {
        match (self, other) {
            (Domain::Set(a), Domain::Set(b)) => Domain::Set(a & b),
            (Domain::Ints(a), Domain::Ints(b)) => Domain::Ints(a.intersect(b)),
            _ => Domain::Set(0),
        }
    }

    /// Values of `self` that are not in `other`.
    pub fn subtract(&self, other: &Domain) -> Domain {
        match (self, other) {
            (Domain::Set(a), Domain::Set(b)) => Domain::Set(a & !b),
            (Domain::Ints(a), Domain::Ints(b)) => Domain::Ints(a.subtract(b)),
            _ => self.clone(),
        }
    }

    /// Values in either set.
    pub fn union(&self, other: &Domain) -> Domain {
        match (self, other) {
            (Domain::Set(a), Domain::Set(b)) => Domain::Set(a | b),
            (Domain::Ints(a), Domain::Ints(b)) => Domain::Ints(a.union(b)),
            _ => self.clone(),
        }
    }

    /// True when every value of `self` is in `other`.
    pub fn is_subset(&self, other: &Domain) -> bool {
        self.subtract(other).is_empty()
    }

    /// Number of values (saturating; an unbounded integer range counts as `u128::MAX`).
    pub fn count(&self) -> u128 {
        match self {
            Domain::Set(m) => m.count_ones() as u128,
            Domain::Ints(s) => s.count(),
        }
    }
}

/// A union of disjoint, non-adjacent, sorted inclusive integer ranges.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct IntSet {
    ranges: Vec<(i64, i64)>,
}

impl IntSet {
    /// The empty set.
    pub fn empty() -> IntSet {
        IntSet { ranges: Vec::new() }
    }

    /// All integers in `lo..=hi` (empty when `lo > hi`).
    pub fn range(lo: i64, hi: i64) -> IntSet {
        if lo > hi {
            IntSet::empty()
        } else {
            IntSet {
                ranges: vec![(lo, hi)],
            }
        }
    }

    /// The ranges, sorted and disjoint.
    pub fn ranges(&self) -> &[(i64, i64)] {
        &self.ranges
    }

    /// True when the set holds no integer.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// True when `v` is in the set.
    pub fn contains(&self, v: i64) -> bool {
        self.ranges.iter().any(|&(lo, hi)| lo <= v && v <= hi)
    }

    /// Number of integers in the set (saturating).
    pub fn count(&self) -> u128 {
        self.ranges.iter().fold(0u128, |acc, &(lo, hi)| {
            acc.saturating_add((hi as i128 - lo as i128 + 1) as u128)
        })
    }

    fn normalized(mut ranges: Vec<(i64, i64)>) -> IntSet {
        ranges.retain(|&(lo, hi)| lo <= hi);
        ranges.sort_unstable();
        let mut out: Vec<(i64, i64)> = Vec::with_capacity(ranges.len());
        for (lo, hi) in ranges {
            match out.last_mut() {
                Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
                _ => out.push((lo, hi)),
            }
        }
        IntSet { ranges: out }
    }

    /// Integers in either set.
    pub fn union(&self, other: &IntSet) -> IntSet {
        let mut all = self.ranges.clone();
        all.extend_from_slice(&other.ranges);
        IntSet::normalized(all)
    }

    /// Integers in both sets.
    pub fn intersect(&self, other: &IntSet) -> IntSet {
        let mut out = Vec::new();
        for &(a_lo, a_hi) in &self.ranges {
            for &(b_lo, b_hi) in &other.ranges {
                let lo = a_lo.max(b_lo);
                let hi = a_hi.min(b_hi);
                if lo <= hi {
                    out.push((lo, hi));
                }
            }
        }
        IntSet::normalized(out)
    }

    /// Integers of `self` not in `other`.
    pub fn subtract(&self, other: &IntSet) -> IntSet {
        let mut current = self.ranges.clone();
        for &(b_lo, b_hi) in &other.ranges {
            let mut next = Vec::with_capacity(current.len() + 1);
            for (lo, hi) in current {
                if b_hi < lo || b_lo > hi {
                    next.push((lo, hi));
                    continue;
                }
                if lo < b_lo {
                    next.push((lo, b_lo - 1));
                }
                if hi > b_hi {
                    next.push((b_hi + 1, hi));
                }
            }
            current = next;
        }
        IntSet::normalized(current)
    }

    /// A representative value: the first of `preferred` in the set, else the value closest to 0.
    pub fn pick(&self, preferred: &[i64]) -> Option<i64> {
        if let Some(v) = preferred.iter().find(|v| self.contains(**v)) {
            return Some(*v);
        }
        self.ranges
            .iter()
            .map(|&(lo, hi)| 0i64.clamp(lo, hi))
            .min_by_key(|v| v.unsigned_abs())
    }
}

impl fmt::Display for IntSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ranges.is_empty() {
            return write!(f, "{{}}");
        }
        let parts: Vec<String> = self
            .ranges
            .iter()
            .map(|&(lo, hi)| {
                if lo == hi {
                    lo.to_string()
                } else {
                    let lo = if lo == i64::MIN {
                        String::new()
                    } else {
                        lo.to_string()
                    };
                    let hi = if hi == i64::MAX {
                        String::new()
                    } else {
                        hi.to_string()
                    };
                    format!("{lo}..{hi}")
                }
            })
            .collect();
        write!(f, "{}", parts.join(", "))
    }
}

/// One domain per key of a scenario (fields first, then variables): a region of the space of
/// complete assignments.
pub type ValueBox = Vec<Domain>;

/// True when some key has no value left (the box holds no assignment).
pub fn box_is_empty(b: &[Domain]) -> bool {
    b.iter().any(Domain::is_empty)
}

/// The box of assignments in both boxes.
pub fn box_intersect(a: &[Domain], b: &[Domain]) -> ValueBox {
    a.iter().zip(b).map(|(x, y)| x.intersect(y)).collect()
}

/// `a` minus `b`, as a list of disjoint boxes.
pub fn box_subtract(a: &[Domain], b: &[Domain]) -> Vec<ValueBox> {
    if box_is_empty(&box_intersect(a, b)) {
        return vec![a.to_vec()];
    }
    let mut out = Vec::new();
    let mut current = a.to_vec();
    for i in 0..a.len() {
        let rest = current[i].subtract(&b[i]);
        if !rest.is_empty() {
            let mut piece = current.clone();
            piece[i] = rest;
            out.push(piece);
        }
        current[i] = current[i].intersect(&b[i]);
    }
    out
}

/// `a` minus every box of `bs`, as a list of disjoint boxes.
pub fn box_subtract_all<'a>(
    a: &[Domain],
    bs: impl IntoIterator<Item = &'a ValueBox>,
) -> Vec<ValueBox> {
    let mut remainder = vec![a.to_vec()];
    for b in bs {
        remainder = remainder.iter().flat_map(|r| box_subtract(r, b)).collect();
        if remainder.is_empty() {
            break;
        }
    }
    remainder
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_set_algebra() {
        let a = IntSet::range(0, 10);
        let b = IntSet::range(3, 5);
        assert_eq!(a.subtract(&b).ranges(), &[(0, 2), (6, 10)]);
        assert_eq!(a.intersect(&b).ranges(), &[(3, 5)]);
        assert_eq!(
            a.subtract(&b).union(&IntSet::range(3, 4)).ranges(),
            &[(0, 4), (6, 10)]
        );
        assert_eq!(a.count(), 11);
        assert_eq!(
            IntSet::range(i64::MIN, i64::MAX)
                .subtract(&IntSet::range(i64::MIN, -1))
                .ranges(),
            &[(0, i64::MAX)]
        );
    }

    #[test]
    fn int_set_pick_prefers_examples_then_zero() {
        let s = IntSet::range(1, 10_000);
        assert_eq!(s.pick(&[0, 100]), Some(100));
        assert_eq!(s.pick(&[]), Some(1));
        assert_eq!(IntSet::range(-9, -3).pick(&[]), Some(-3));
        assert_eq!(IntSet::empty().pick(&[1]), None);
    }

    #[test]
    fn box_subtraction_partitions() {
        let a = vec![Domain::all_options(3), Domain::all_options(2)];
        let b = vec![Domain::option(0), Domain::option(1)];
        let parts = box_subtract(&a, &b);
        let total: u128 = parts
            .iter()
            .map(|p| p.iter().map(Domain::count).product::<u128>())
            .sum();
        assert_eq!(total, 5);
        for p in &parts {
            assert!(box_is_empty(&box_intersect(p, &b)));
        }
    }
}
