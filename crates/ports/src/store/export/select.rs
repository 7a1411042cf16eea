//! Which examples survive `--dedup` and the caps, decided in one pass over the records in
//! memory bounded by the flags (no I/O).

use std::collections::{BinaryHeap, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::num::NonZeroUsize;

/// A hasher for keys that are already 64-bit hashes: passes them through.
#[derive(Debug, Default)]
pub struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed; any other input is folded in, for completeness.
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = i;
    }
}

/// The 64-bit hashes of the examples already kept (`--dedup`): 8 bytes each in hash tables
/// (9 with the control byte), each table at most 7/8 full and doubling when it is, so 10 to 21
/// bytes per example. The hashes are spread over [`Seen::SHARDS`] tables, which double one at
/// a time, so the memory never holds an old and a new copy of the whole set at once.
#[derive(Debug)]
pub struct Seen(Vec<HashSet<u64, BuildHasherDefault<PassThrough>>>);

impl Default for Seen {
    fn default() -> Seen {
        Seen((0..Seen::SHARDS).map(|_| HashSet::default()).collect())
    }
}

impl Seen {
    /// Tables the hashes are spread over.
    pub const SHARDS: usize = 256;

    /// Whether `hash` is new (and remember it).
    pub fn first(&mut self, hash: u64) -> bool {
        // The table by middle bits: a table places a hash by its low bits and tells hashes
        // apart by its top 7, so both must vary within a table.
        self.0[(hash >> 32) as usize % Seen::SHARDS].insert(hash)
    }
}

/// Where an example is: the byte offset of its record's line in dialogues.jsonl and the index
/// of its turn in the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Location {
    /// Byte offset of the record's line.
    pub offset: u64,
    /// Index of the turn in the record.
    pub turn: u32,
}

/// An example offered to the caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    rank: u64,
    at: Location,
    scenario: u32,
}

/// `--max-per-scenario` and `--max-per-route`: in rank order (a stable hash of each example,
/// see [`super::example::rank`]), an example is kept while its route has fewer than the route
/// cap and its scenario fewer than the scenario cap. Since a route belongs to one scenario,
/// that is: the lowest-ranked `route cap` examples of each route, then of those the
/// lowest-ranked `scenario cap` of each scenario. Only those candidates are held, in heaps of
/// the cap's size: at most (routes x route cap) or (scenarios x scenario cap) entries of 24
/// bytes.
#[derive(Debug)]
pub struct Caps {
    per_scenario: Option<usize>,
    per_route: Option<usize>,
    scenarios: HashMap<String, u32>,
    routes: HashMap<(u32, String), u32>,
    /// Per group (route with a route cap, else scenario): its lowest ranks, highest on top.
    heaps: HashMap<u32, BinaryHeap<Entry>>,
    offered: usize,
}

/// What the caps kept.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Kept {
    /// The examples kept, in file order.
    pub at: Vec<Location>,
    /// Left out because their route had its cap.
    pub over_route: usize,
    /// Left out because their scenario had its cap.
    pub over_scenario: usize,
}

impl Caps {
    /// The caps, or `None` when there are none.
    pub fn new(
        per_scenario: Option<NonZeroUsize>,
        per_route: Option<NonZeroUsize>,
    ) -> Option<Caps> {
        (per_scenario.is_some() || per_route.is_some()).then(|| Caps {
            per_scenario: per_scenario.map(NonZeroUsize::get),
            per_route: per_route.map(NonZeroUsize::get),
            scenarios: HashMap::new(),
            routes: HashMap::new(),
            heaps: HashMap::new(),
            offered: 0,
        })
    }

    /// Offers an example of `scenario` and `route` with its rank.
    pub fn offer(&mut self, scenario: &str, route: &str, rank: u64, at: Location) {
        self.offered += 1;
        let next = self.scenarios.len() as u32;
        let scenario = *self.scenarios.entry(scenario.to_string()).or_insert(next);
        let (group, cap) = match (self.per_route, self.per_scenario) {
            (Some(cap), _) => {
                let next = self.routes.len() as u32;
                let key = (scenario, route.to_string());
                (*self.routes.entry(key).or_insert(next), cap)
            }
            (None, Some(cap)) => (scenario, cap),
            (None, None) => return,
        };
        let heap = self.heaps.entry(group).or_default();
        let entry = Entry { rank, at, scenario };
        if heap.len() < cap {
            heap.push(entry);
        } else if heap.peek().is_some_and(|top| entry < *top) {
            heap.pop();
            heap.push(entry);
        }
    }

    /// The examples kept, in file order, and how many each cap left out.
    pub fn finish(self) -> Kept {
        let mut kept: Vec<Entry> = self.heaps.into_values().flatten().collect();
        let mut out = Kept {
            over_route: if self.per_route.is_some() {
                self.offered - kept.len()
            } else {
                0
            },
            ..Kept::default()
        };
        if let (Some(_), Some(cap)) = (self.per_route, self.per_scenario) {
            // The route survivors, then the lowest ranks of each scenario among them.
            kept.sort_unstable_by_key(|e| (e.scenario, *e));
            let before = kept.len();
            let mut taken = 0;
            let mut last = None;
            kept.retain(|e| {
                if last != Some(e.scenario) {
                    (last, taken) = (Some(e.scenario), 0);
                }
                taken += 1;
                taken <= cap
            });
            out.over_scenario = before - kept.len();
        } else if self.per_scenario.is_some() {
            out.over_scenario = self.offered - kept.len();
        }
        out.at = kept.into_iter().map(|e| e.at).collect();
        out.at.sort_unstable();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(offset: u64) -> Location {
        Location { offset, turn: 0 }
    }

    /// The reference: in rank order, keep while the route and the scenario have room (kept
    /// examples counted); an example is over the route cap when its route already had that
    /// many before it in rank order, else over the scenario cap.
    fn greedy(
        items: &[(&str, &str, u64, u64)],
        per_scenario: usize,
        per_route: usize,
    ) -> (Vec<u64>, usize, usize) {
        let mut sorted = items.to_vec();
        sorted.sort_by_key(|i| (i.2, i.3));
        let (mut s, mut r, mut seen) = (HashMap::new(), HashMap::new(), HashMap::new());
        let (mut kept, mut over_r, mut over_s) = (Vec::new(), 0, 0);
        for (sc, route, _, offset) in sorted {
            let before = seen.entry((sc, route)).or_insert(0);
            *before += 1;
            let rc = r.entry((sc, route)).or_insert(0);
            let sc_count = s.entry(sc).or_insert(0);
            if *rc < per_route && *sc_count < per_scenario {
                *rc += 1;
                *sc_count += 1;
                kept.push(offset);
            } else if *before > per_route {
                over_r += 1;
            } else {
                over_s += 1;
            }
        }
        kept.sort();
        (kept, over_r, over_s)
    }

    #[test]
    fn caps_keep_what_a_greedy_pass_in_rank_order_keeps() {
        let mut items = Vec::new();
        for i in 0..300u64 {
            let sc = ["a", "b", "c"][(i % 3) as usize];
            let route = ["x", "y", "z", "w"][((i * 7) % 4) as usize];
            let rank = sage_core::plan::derive_seed(i) % 50; // ties on purpose
            items.push((sc, route, rank, i));
        }
        for (ps, pr) in [(5, 100_000), (100_000, 3), (7, 3), (1, 1), (40, 12)] {
            let mut caps = Caps::new(NonZeroUsize::new(ps), NonZeroUsize::new(pr)).unwrap();
            // Any arrival order gives the same result.
            let mut order = items.clone();
            order.reverse();
            for (sc, route, rank, offset) in &order {
                caps.offer(sc, route, *rank, at(*offset));
            }
            let kept = caps.finish();
            let (expected, over_r, over_s) = greedy(&items, ps, pr);
            let got: Vec<u64> = kept.at.iter().map(|l| l.offset).collect();
            assert_eq!(got, expected, "caps {ps}/{pr}");
            assert_eq!((kept.over_route, kept.over_scenario), (over_r, over_s));
        }
        assert!(Caps::new(None, None).is_none());
    }

    #[test]
    fn seen_remembers_hashes() {
        let mut seen = Seen::default();
        assert!(seen.first(7) && seen.first(0) && !seen.first(7));
        let hashes: Vec<u64> = (0..10_000u64).map(sage_core::plan::derive_seed).collect();
        assert!(hashes.iter().all(|h| seen.first(*h)));
        assert!(hashes.iter().all(|h| !seen.first(*h)));
        assert!(
            seen.0.iter().all(|t| t.len() > 10),
            "spread over every table"
        );
    }
}
