//! Which dialogues the explorer embeds when a run has more than it can hold: a bounded,
//! deterministic choice that does not depend on the order the records arrive.
//!
//! Every dialogue is ranked within its group (model under test x scenario for SAGE) by a key:
//! the failing dialogues by how bad they are (the worst first), the others by a hash of their
//! id (a stratified random sample). The choice takes the failing dialogues first, then the
//! others, each class round-robin over the groups (rank 0 of every group, then rank 1, ...):
//! every group is represented before any gets a second one. The fold keeps only the items that
//! can still be chosen: once the groups hold `limit` items up to rank `c`, nothing ranked `c` or
//! below in any group can be, whatever comes later, so each group is cut to `c` and from then
//! on an item that would rank `c` or below in its group is dropped as it comes (memory
//! `O(limit + groups)`, not `O(dialogues)`).

use std::collections::BTreeMap;

/// Up to `limit` items chosen round-robin over groups, each group's items in key order.
#[derive(Debug, Clone)]
pub struct Stratified<G: Ord, K: Ord, T> {
    limit: usize,
    groups: BTreeMap<G, BTreeMap<K, T>>,
    kept: usize,
    seen: usize,
    /// Once known, the rank below which every chosen item lies (it only falls as items come).
    cap: Option<usize>,
}

impl<G: Ord, K: Ord, T> Stratified<G, K, T> {
    /// An empty choice of at most `limit` items.
    pub fn new(limit: usize) -> Self {
        Stratified {
            limit,
            groups: BTreeMap::new(),
            kept: 0,
            seen: 0,
            cap: None,
        }
    }

    /// Items offered.
    pub fn seen(&self) -> usize {
        self.seen
    }

    /// Items kept as candidates (at most about 1.125 times the limit plus the groups).
    pub fn kept(&self) -> usize {
        self.kept
    }

    /// Offers an item of group `group` with rank key `key` (a key offered twice keeps the
    /// first item).
    pub fn push(&mut self, group: G, key: K, item: T) {
        self.seen += 1;
        let items = self.groups.entry(group).or_default();
        if items.contains_key(&key) {
            return;
        }
        // A full group: the item replaces its last one, or is dropped at once.
        if let Some(cap) = self.cap
            && items.len() >= cap
        {
            if items.last_key_value().is_some_and(|(last, _)| key < *last) {
                items.insert(key, item);
                items.pop_last();
            }
            return;
        }
        items.insert(key, item);
        self.kept += 1;
        if self.kept > self.limit + self.limit / 8 + self.groups.len() {
            self.prune();
        }
    }

    /// The smallest rank `c` such that the groups hold at least `limit` items of rank below
    /// `c` (`None` while they hold fewer than `limit` in all).
    fn level(&self) -> Option<usize> {
        if self.kept < self.limit {
            return None;
        }
        let mut sizes: Vec<usize> = self.groups.values().map(BTreeMap::len).collect();
        sizes.sort_unstable();
        // sum_g min(n_g, c) grows with c: the first c where it reaches the limit.
        let (mut below, mut groups_left, mut c) = (0usize, sizes.len(), 0usize);
        for n in sizes {
            // Levels c..n are full for the groups_left groups still at least this large.
            let full = (n - c) * groups_left;
            if below + full >= self.limit {
                let need = self.limit - below;
                return Some(c + need.div_ceil(groups_left));
            }
            below += full;
            c = n;
            groups_left -= 1;
        }
        None
    }

    /// Drops the items that can no longer be chosen.
    fn prune(&mut self) {
        let Some(c) = self.level() else { return };
        self.cap = Some(self.cap.map_or(c, |cap| cap.min(c)));
        for items in self.groups.values_mut() {
            while items.len() > c {
                items.pop_last();
            }
        }
        self.kept = self.groups.values().map(BTreeMap::len).sum();
    }

    /// The chosen items, at most `n` (at most the limit), in priority order: rank 0 of every
    /// group (groups in order), then rank 1, ...
    pub fn take(&self, n: usize) -> Vec<&T> {
        let n = n.min(self.limit);
        let mut queues: Vec<std::collections::btree_map::Values<'_, K, T>> =
            self.groups.values().map(BTreeMap::values).collect();
        let mut out = Vec::new();
        while out.len() < n && !queues.is_empty() {
            queues.retain_mut(|q| match q.next() {
                Some(item) if out.len() < n => {
                    out.push(item);
                    true
                }
                _ => false,
            });
        }
        out
    }
}

/// A dialogue's standing in the choice: its group, whether it failed, and how badly.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    /// Its group (model x scenario for SAGE).
    pub group: String,
    /// Whether it failed (it is chosen before those that passed).
    pub failing: bool,
    /// Its score (lower is worse; `None`: no score, counted as the worst).
    pub score: Option<f64>,
}

/// An integer in the order of `x` (IEEE 754 total order, as `f64::total_cmp`), above
/// `i64::MIN` for every number.
fn ordered(x: f64) -> i64 {
    let bits = x.to_bits() as i64;
    let key = bits ^ ((((bits >> 63) as u64) >> 1) as i64);
    key.max(i64::MIN + 1)
}

/// The rank key of a failing dialogue: its score (none first), then a hash of its id, then the
/// id (the hash ties).
type FailKey = (i64, u64, String);
/// The rank key of a passing dialogue: a hash of its id, then the id.
type PassKey = (u64, String);

/// The explorer's choice of dialogues: every failing one of each group first (worst first),
/// then a stratified sample of the others, at most `limit`; with the counts it reports.
#[derive(Debug, Clone)]
pub struct Selection<T> {
    limit: usize,
    failing: Stratified<String, FailKey, T>,
    passing: Stratified<String, PassKey, T>,
}

/// What a choice took, to say it on the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// Dialogues offered.
    pub total: usize,
    /// Failing dialogues offered.
    pub failing: usize,
    /// Dialogues chosen.
    pub chosen: usize,
    /// Failing dialogues chosen.
    pub failing_chosen: usize,
}

impl<T> Selection<T> {
    /// An empty choice of at most `limit` dialogues.
    pub fn new(limit: usize) -> Self {
        Selection {
            limit,
            failing: Stratified::new(limit),
            passing: Stratified::new(limit),
        }
    }

    /// Offers a dialogue with id `id` and standing `standing`.
    pub fn push(&mut self, id: &str, standing: Standing, item: T) {
        let hash = sage_core::plan::derive_seed(("explorer", id));
        if standing.failing {
            // No score counts below every score.
            let score = standing.score.map_or(i64::MIN, ordered);
            self.failing
                .push(standing.group, (score, hash, id.to_string()), item);
        } else {
            self.passing
                .push(standing.group, (hash, id.to_string()), item);
        }
    }

    /// Items held now (for memory checks).
    pub fn kept(&self) -> usize {
        self.failing.kept() + self.passing.kept()
    }

    /// The chosen items in priority order (the failing first), and the counts.
    pub fn take(&self) -> (Vec<&T>, Counts) {
        let total = self.failing.seen() + self.passing.seen();
        let failing = self.failing.seen();
        let mut chosen = self.failing.take(self.limit);
        let failing_chosen = chosen.len();
        let rest = self.limit - failing_chosen;
        chosen.extend(self.passing.take(rest));
        let counts = Counts {
            total,
            failing,
            chosen: chosen.len(),
            failing_chosen,
        };
        (chosen, counts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standing(group: usize, failing: bool, score: f64) -> Standing {
        Standing {
            group: format!("g{group}"),
            failing,
            score: Some(score),
        }
    }

    /// Dialogues `d0..dn`: groups of very unequal sizes, a third failing.
    fn dialogues(n: usize) -> Vec<(String, Standing)> {
        (0..n)
            .map(|i| {
                let group = if i % 10 < 6 { 0 } else { 1 + i % 4 };
                (
                    format!("d{i:05}"),
                    standing(group, i % 3 == 0, (i * 37 % 101) as f64),
                )
            })
            .collect()
    }

    fn choose(list: &[(String, Standing)], limit: usize) -> (Vec<String>, Counts, usize) {
        let mut s = Selection::new(limit);
        let mut most = 0;
        for (id, st) in list {
            s.push(id, st.clone(), id.clone());
            most = most.max(s.kept());
        }
        let (chosen, counts) = s.take();
        (chosen.into_iter().cloned().collect(), counts, most)
    }

    #[test]
    fn the_choice_does_not_depend_on_the_order_of_the_records() {
        let list = dialogues(5_000);
        let (first, counts, _) = choose(&list, 700);
        let mut reversed = list.clone();
        reversed.reverse();
        // A fixed shuffle: every 7th element, wrapping.
        let shuffled: Vec<_> = (0..list.len())
            .map(|i| list[i * 7 % list.len()].clone())
            .collect();
        assert_eq!(choose(&reversed, 700).0, first);
        assert_eq!(choose(&shuffled, 700).0, first);
        assert_eq!(counts.total, 5_000);
        assert_eq!(counts.failing, 1_667);
        assert_eq!(counts.chosen, 700);
        assert_eq!(counts.failing_chosen, 700);
    }

    #[test]
    fn failing_dialogues_come_first_worst_first_round_robin_over_groups() {
        let list = vec![
            ("a".to_string(), standing(0, true, 50.0)),
            ("b".to_string(), standing(0, true, 10.0)),
            ("c".to_string(), standing(0, true, 30.0)),
            ("d".to_string(), standing(1, true, 90.0)),
            ("e".to_string(), standing(1, false, 100.0)),
            ("f".to_string(), standing(2, false, 100.0)),
            (
                "g".to_string(),
                Standing {
                    group: "g2".into(),
                    failing: true,
                    score: None,
                },
            ),
        ];
        let (chosen, counts, _) = choose(&list, 6);
        // Failing: rank 0 of g0 (b: 10), g1 (d), g2 (g: no score); rank 1 of g0 (c); rank 2 (a).
        assert_eq!(chosen[..5], ["b", "d", "g", "c", "a"]);
        // Then one passing: rank 0 of g1 or g2 by the hash of the id.
        assert!(chosen[5] == "e" || chosen[5] == "f");
        assert_eq!(
            counts,
            Counts {
                total: 7,
                failing: 5,
                chosen: 6,
                failing_chosen: 5
            }
        );
        // Everything when it fits.
        let (all, counts, _) = choose(&list, 100);
        assert_eq!(all.len(), 7);
        assert_eq!(counts.chosen, 7);
    }

    #[test]
    fn scores_order_as_numbers() {
        let xs = [-1.5, -0.0, 0.0, 0.004, 0.005, 50.0, 100.0];
        for w in xs.windows(2) {
            assert!(ordered(w[0]) <= ordered(w[1]), "{w:?}");
        }
        assert!(ordered(0.004) < ordered(0.005));
        assert!(i64::MIN < ordered(f64::NEG_INFINITY));
    }

    #[test]
    fn memory_stays_bounded_by_the_limit_not_the_dialogues() {
        let list = dialogues(60_000);
        let (chosen, _, most) = choose(&list, 1_000);
        assert_eq!(chosen.len(), 1_000);
        assert!(most <= 2 * (1_000 + 125 + 5 + 1), "kept at most {most}");
        // The pruned choice is the unpruned one.
        let (full, _, _) = {
            let mut s = Selection::new(1_000);
            s.failing.limit = usize::MAX / 4;
            s.passing.limit = usize::MAX / 4;
            for (id, st) in &list {
                s.push(id, st.clone(), id.clone());
            }
            s.failing.limit = 1_000;
            s.passing.limit = 1_000;
            let (c, n) = s.take();
            (c.into_iter().cloned().collect::<Vec<String>>(), n, 0)
        };
        assert_eq!(chosen, full);
    }
}
