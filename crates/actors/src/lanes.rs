//! Fair sharing of a run's dialogue slots between its models under test, so a slow or limited
//! provider never holds back the dialogues of another model (no head-of-line blocking).
//!
//! Each model under test has a lane of jobs. At most `concurrency` jobs are in flight in all,
//! and a lane has at most its fair part of them in flight: `concurrency` divided by the lanes
//! that still have jobs, rounded up. A free slot goes to the lane with the fewest in flight, the
//! lanes taking turns among equals (so lanes of equal pace start their jobs in the plan's
//! order: case by case, each with every model). A
//! model waiting on its provider's limit keeps its part of the slots, no more; the other lanes
//! use theirs; a lane that runs out of jobs leaves its part to the others.
//!
//! Lanes are iterators, read as slots free up (never ahead), so the memory of a run still grows
//! with the jobs in flight, not with the jobs done.

use futures::stream::{FuturesUnordered, Stream, StreamExt};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

/// One lane's jobs.
pub type Lane<'a, J> = Box<dyn Iterator<Item = J> + 'a>;

type Running<'a, T> = FuturesUnordered<Pin<Box<dyn Future<Output = (usize, T)> + 'a>>>;

struct Lanes<'a, J, F, T> {
    /// The lanes' jobs; `None` once a lane has no more.
    lanes: Vec<Option<Lane<'a, J>>>,
    in_flight: Vec<usize>,
    /// The lane whose turn it is among equals.
    turn: usize,
    running: Running<'a, T>,
    concurrency: usize,
    start: F,
}

impl<'a, J, F, Fut> Lanes<'a, J, F, Fut::Output>
where
    F: FnMut(J) -> Fut,
    Fut: Future + 'a,
{
    /// Starts jobs while there is a free slot and a lane under its part.
    fn fill(&mut self) {
        while self.running.len() < self.concurrency {
            let open = self.lanes.iter().filter(|l| l.is_some()).count();
            if open == 0 {
                return;
            }
            let part = self.concurrency.div_ceil(open);
            let n = self.lanes.len();
            // The first of the fewest in flight, counting from the lane whose turn it is.
            let next = (0..n)
                .map(|k| (self.turn + k) % n)
                .filter(|i| self.lanes[*i].is_some() && self.in_flight[*i] < part)
                .min_by_key(|i| self.in_flight[*i]);
            let Some(i) = next else { return };
            self.turn = (i + 1) % n;
            match self.lanes[i].as_mut().and_then(Iterator::next) {
                Some(job) => {
                    let job = (self.start)(job);
                    self.in_flight[i] += 1;
                    self.running.push(Box::pin(async move { (i, job.await) }));
                }
                None => self.lanes[i] = None,
            }
        }
    }
}

/// Plays the jobs of `lanes` through `start`, at most `concurrency` (at least 1) at once, each
/// lane at most its fair part; yields each outcome as it finishes.
pub fn fair<'a, J, F, Fut>(
    lanes: Vec<Lane<'a, J>>,
    concurrency: usize,
    start: F,
) -> impl Stream<Item = Fut::Output> + 'a
where
    J: 'a,
    F: FnMut(J) -> Fut + 'a,
    Fut: Future + 'a,
{
    let state = Lanes {
        in_flight: vec![0; lanes.len()],
        turn: 0,
        lanes: lanes.into_iter().map(Some).collect(),
        running: FuturesUnordered::new(),
        concurrency: concurrency.max(1),
        start,
    };
    futures::stream::unfold(state, |mut state| async move {
        state.fill();
        let (lane, outcome) = state.running.next().await?;
        state.in_flight[lane] -= 1;
        Some((outcome, state))
    })
}

/// How long a model under test counts among a worker's lanes after its last job was delivered,
/// when it has none in flight.
pub const LANE_FORGET: Duration = Duration::from_secs(10);

/// The same fair parts for a worker, which is delivered jobs one by one from a shared queue
/// rather than reading lanes: a lane is a model under test (of a run), known from the jobs it
/// is delivered. A lane counts while it has jobs in flight or was delivered one within
/// [`LANE_FORGET`]; each holds at most `concurrency` divided by the lanes that count, rounded
/// up. A job whose lane is at its part is not admitted (the worker defers it). Bounded: a lane
/// that no longer counts is forgotten.
#[derive(Debug)]
pub struct Parts {
    concurrency: usize,
    lanes: HashMap<String, PartLane>,
}

#[derive(Debug, Default)]
struct PartLane {
    in_flight: usize,
    seen: Option<Instant>,
}

impl Parts {
    /// Parts of `concurrency` (at least 1) slots.
    pub fn new(concurrency: usize) -> Parts {
        Parts {
            concurrency: concurrency.max(1),
            lanes: HashMap::new(),
        }
    }

    /// A job of `lane` was delivered at `now`: true (and it counts as in flight until
    /// [`Parts::done`]) when the lane is under its part, or when the job is not `deferrable`.
    pub fn admit(&mut self, lane: &str, now: Instant, deferrable: bool) -> bool {
        self.lanes.retain(|name, l| {
            l.in_flight > 0
                || name == lane
                || l.seen
                    .is_some_and(|at| now.duration_since(at) < LANE_FORGET)
        });
        let counted = self.lanes.len() + usize::from(!self.lanes.contains_key(lane));
        let part = self.concurrency.div_ceil(counted);
        let mine = self.lanes.entry(lane.to_string()).or_default();
        mine.seen = Some(now);
        if deferrable && mine.in_flight >= part {
            return false;
        }
        mine.in_flight += 1;
        true
    }

    /// An admitted job of `lane` finished.
    pub fn done(&mut self, lane: &str) {
        if let Some(l) = self.lanes.get_mut(lane) {
            l.in_flight = l.in_flight.saturating_sub(1);
        }
    }

    /// Jobs of `lane` in flight.
    pub fn in_flight(&self, lane: &str) -> usize {
        self.lanes.get(lane).map_or(0, |l| l.in_flight)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::rc::Rc;

    /// Two lanes, one slow (each job takes 1 s) and one fast (10 ms): the fast lane finishes
    /// its jobs while the slow one holds only its half of the slots.
    #[tokio::test(start_paused = true)]
    async fn a_slow_lane_keeps_its_part_and_the_fast_one_runs_on() {
        let peak = Rc::new(RefCell::new([0usize; 2]));
        let now = Rc::new(RefCell::new([0usize; 2]));
        let lanes: Vec<Lane<'_, (usize, u64)>> = vec![
            Box::new((0..40).map(|_| (0, 1000))),
            Box::new((0..40).map(|_| (1, 10))),
        ];
        let started = tokio::time::Instant::now();
        let (peak2, now2) = (peak.clone(), now.clone());
        let done: Vec<(usize, Duration)> = fair(lanes, 8, move |(lane, ms)| {
            let (peak, now) = (peak2.clone(), now2.clone());
            now.borrow_mut()[lane] += 1;
            // Each lane's most in flight in the first 50 ms (the fast lane still has jobs).
            if started.elapsed() < Duration::from_millis(50) {
                let mine = now.borrow()[lane];
                let p = &mut peak.borrow_mut()[lane];
                *p = (*p).max(mine);
            }
            async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                now.borrow_mut()[lane] -= 1;
                (lane, started.elapsed())
            }
        })
        .collect()
        .await;
        assert_eq!(done.len(), 80);
        assert_eq!(*peak.borrow(), [4, 4], "each lane holds half the slots");
        let fast_done = done
            .iter()
            .filter(|(lane, _)| *lane == 1)
            .map(|(_, at)| *at)
            .max()
            .expect("fast jobs");
        // 40 jobs of 10 ms on 4 slots: 100 ms, not held behind the slow ones.
        assert!(fast_done <= Duration::from_millis(110), "{fast_done:?}");
        // Once the fast lane is done, the slow one gets every slot: 36 jobs left on 8 slots
        // after the first second, 5 more seconds, not 9.
        let slow_done = done.iter().map(|(_, at)| *at).max().expect("jobs");
        assert!(slow_done <= Duration::from_secs(6), "{slow_done:?}");
    }

    /// One slot, lanes of equal pace: the jobs start in turn, lane by lane.
    #[tokio::test]
    async fn equal_lanes_take_turns() {
        let lanes: Vec<Lane<'_, (char, u32)>> = vec![
            Box::new((0..3).map(|i| ('a', i))),
            Box::new((0..3).map(|i| ('b', i))),
        ];
        let order: Vec<(char, u32)> = fair(lanes, 1, |j| async move { j }).collect().await;
        assert_eq!(
            order,
            [('a', 0), ('b', 0), ('a', 1), ('b', 1), ('a', 2), ('b', 2)]
        );
    }

    #[tokio::test]
    async fn every_job_is_played_once_with_one_lane_or_none() {
        let one: Vec<Lane<'_, u32>> = vec![Box::new(0..100)];
        let mut played: Vec<u32> = fair(one, 3, |j| async move { j }).collect().await;
        played.sort_unstable();
        assert_eq!(played, (0..100).collect::<Vec<_>>());
        let none: Vec<Lane<'_, u32>> = Vec::new();
        assert_eq!(fair(none, 3, |j| async move { j }).count().await, 0);
    }

    /// A worker's parts: two lanes share 8 slots 4 and 4; a lane seen no more for
    /// [`LANE_FORGET`] leaves its part to the other.
    #[test]
    fn parts_share_slots_between_the_lanes_delivered() {
        let t0 = Instant::now();
        let mut parts = Parts::new(8);
        // Alone, the slow lane may take every slot.
        assert!((0..8).all(|_| parts.admit("slow", t0, true)));
        assert!(!parts.admit("slow", t0, true), "no ninth slot");
        for _ in 0..4 {
            parts.done("slow");
        }
        // A second lane appears: the slow one is at its part (4), the fast one gets 4.
        assert!(parts.admit("fast", t0, true));
        assert!(!parts.admit("slow", t0, true));
        assert!((0..3).all(|_| parts.admit("fast", t0, true)));
        assert!(!parts.admit("fast", t0, true), "the fast lane's part is 4");
        // The fast lane's jobs finish and none comes for LANE_FORGET: the slow one gets all.
        for _ in 0..4 {
            parts.done("fast");
        }
        let later = t0 + LANE_FORGET + Duration::from_millis(1);
        assert!((0..4).all(|_| parts.admit("slow", later, true)));
        assert_eq!(parts.in_flight("slow"), 8);
        // A job that cannot be deferred is admitted past the part, and counted.
        assert!(parts.admit("slow", later, false));
        assert_eq!(parts.in_flight("slow"), 9);
        assert_eq!(parts.lanes.len(), 1, "the fast lane is forgotten");
    }
}
