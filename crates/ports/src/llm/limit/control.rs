//! One per-minute rate in force (requests or tokens) and how it moves: additive increase while
//! the rate binds and calls succeed, multiplicative decrease when the provider refuses (a 429,
//! or a rate-limit header saying the limit is used up), from the lower of the rate in force and
//! the rate the provider accepted just before (which is about its limit when it refuses), never
//! above what the configuration or the provider's headers say the limit is.
//!
//! Pure state with the time passed in, so the rules are unit-tested without a clock.

use sage_core::plan::model::PerMinute;
use std::time::Duration;
use tokio::time::Instant;

/// Where an `auto` rate starts (per minute): low enough for any paid tier.
pub(crate) const AUTO_START_REQUESTS: f64 = 60.0;
/// Where an `auto` tokens rate starts (per minute).
pub(crate) const AUTO_START_TOKENS: f64 = 20_000.0;
/// The factor a refusal multiplies the rate by.
const DECREASE: f64 = 0.9;
/// The factor a second of binding, unrefused calls multiplies the rate by before the first
/// refusal (slow start: find the order of magnitude fast).
const SLOW_START: f64 = 1.5;
/// The part of the rate added per second of binding, unrefused calls after the first refusal.
const INCREASE: f64 = 0.01;
/// At most one decrease per this long: the calls in flight when the provider refused were
/// started at the old rate, and their refusals say nothing new.
const COOLDOWN: Duration = Duration::from_secs(1);
/// The lowest rate a decrease goes to (per minute).
const FLOOR: f64 = 1.0;
/// The span over which the rate actually used is measured (seconds, one bucket each).
const WINDOW: usize = 4;
/// The fewest calls a measure of the rate actually used must hold to count: two or three calls
/// of a slow rate in the window measure their timing, not the rate (a worker's share of a
/// tokens limit at 40 calls a minute read one call short is a third too low).
const MIN_MEASURED: u32 = 8;

/// A per-minute rate in force and its history.
#[derive(Debug)]
pub(crate) struct Rate {
    /// The configured limit (`Known`).
    configured: Option<f64>,
    /// The provider's limit from its headers, last seen.
    learned: Option<f64>,
    /// The rate in force (before a cluster share); `None`: unlimited.
    current: Option<f64>,
    /// No refusal yet: increase multiplicatively.
    slow_start: bool,
    last_decrease: Option<Instant>,
    last_change: Instant,
    /// A caller had to wait for this rate since the last change.
    binding: bool,
    /// Amounts started, and accepted by the provider, over the last seconds.
    started: Recent,
    accepted: Recent,
}

/// Amounts in each of the last [`WINDOW`] seconds (a ring, by whole second since `origin`).
#[derive(Debug)]
struct Recent {
    /// Per second: the second, the amount, the calls.
    slots: [(u64, f64, u32); WINDOW],
    origin: Instant,
}

impl Recent {
    fn new(origin: Instant) -> Recent {
        Recent {
            slots: [(u64::MAX, 0.0, 0); WINDOW],
            origin,
        }
    }

    fn add(&mut self, now: Instant, amount: f64) {
        let second = now.duration_since(self.origin).as_secs();
        let slot = &mut self.slots[(second % WINDOW as u64) as usize];
        if slot.0 != second {
            *slot = (second, 0.0, 0);
        }
        slot.1 += amount;
        slot.2 += 1;
    }

    /// Per minute over the last [`WINDOW`] seconds (the current one included), over at least
    /// one second, so a first burst does not count as a rate; `None` when fewer than
    /// [`MIN_MEASURED`] calls are in the window.
    fn per_minute(&self, now: Instant) -> Option<f64> {
        let elapsed = now.duration_since(self.origin);
        let second = elapsed.as_secs();
        let (sum, calls) = (0..WINDOW as u64)
            .filter(|back| *back <= second)
            .map(|back| self.slots[((second - back) % WINDOW as u64) as usize])
            .filter(|slot| slot.0 <= second && second - slot.0 < WINDOW as u64)
            .fold((0.0, 0), |(sum, calls), slot| {
                (sum + slot.1, calls + slot.2)
            });
        if calls < MIN_MEASURED {
            return None;
        }
        let covered = elapsed
            .as_secs_f64()
            .min((WINDOW - 1) as f64 + elapsed.subsec_nanos() as f64 / 1e9)
            .max(1.0);
        Some(sum / covered * 60.0)
    }
}

impl Rate {
    /// The rate of a setting: a known limit is in force from the start, `auto` starts at
    /// `auto_start`, none is unlimited until the provider signals a limit.
    pub(crate) fn new(setting: Option<PerMinute>, auto_start: f64, now: Instant) -> Rate {
        let (configured, current, slow_start) = match setting {
            Some(PerMinute::Known(n)) => (Some(f64::from(n)), Some(f64::from(n)), false),
            Some(PerMinute::Auto) => (None, Some(auto_start), true),
            None => (None, None, true),
        };
        Rate {
            configured,
            learned: None,
            current,
            slow_start,
            last_decrease: None,
            last_change: now,
            binding: false,
            started: Recent::new(now),
            accepted: Recent::new(now),
        }
    }

    /// The most the configuration and the provider allow.
    fn ceiling(&self) -> Option<f64> {
        match (self.configured, self.learned) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The limit as known (configured or learned from the provider), if any.
    pub(crate) fn known_limit(&self) -> Option<f64> {
        self.ceiling()
    }

    /// The rate in force per minute (`None`: unlimited).
    pub(crate) fn in_force(&self) -> Option<f64> {
        match (self.current, self.ceiling()) {
            (Some(c), Some(l)) => Some(c.min(l)),
            (c, l) => c.or(l),
        }
    }

    /// A caller started an attempt of `amount` at `now`; `waited`: it had to wait for this
    /// rate.
    pub(crate) fn started(&mut self, now: Instant, amount: f64, waited: bool) {
        self.started.add(now, amount);
        self.binding |= waited;
    }

    /// The provider accepted `amount` (a call, or its tokens) at `now`.
    pub(crate) fn accepted(&mut self, now: Instant, amount: f64) {
        self.accepted.add(now, amount);
    }

    /// The provider said its limit is `limit` per minute: never go above it (a lower limit
    /// than before is followed down at once; an `auto` rate that was never refused jumps to it).
    pub(crate) fn learn(&mut self, limit: u64) {
        let limit = (limit as f64).max(FLOOR);
        self.learned = Some(limit);
        // Before any refusal, a limit found is in force at once; after one, the rate in force
        // only comes down to it (and grows back to it as calls succeed).
        if self.slow_start || self.current.is_none_or(|c| c > limit) {
            self.current = Some(limit.min(self.configured.unwrap_or(f64::INFINITY)));
        }
        self.slow_start = false;
    }

    /// The provider refused (429, or a limit used up): decrease multiplicatively from the
    /// lower of the rate in force and the rate it accepted (or, before it answered any, the
    /// rate started); share: this process's part of the limit, so the rate seen here is scaled
    /// to the whole. At most once per [`COOLDOWN`].
    pub(crate) fn refused(&mut self, now: Instant, share: f64) {
        if self
            .last_decrease
            .is_some_and(|at| now.duration_since(at) < COOLDOWN)
        {
            return;
        }
        let seen = self
            .accepted
            .per_minute(now)
            .filter(|a| *a > 0.0)
            .or_else(|| self.started.per_minute(now));
        let used = seen.map(|s| s / share.max(f64::MIN_POSITIVE));
        let base = match (self.in_force(), used) {
            (Some(rate), Some(used)) if used > 0.0 => rate.min(used),
            (Some(rate), _) => rate,
            (None, Some(used)) if used > 0.0 => used,
            (None, _) => AUTO_START_REQUESTS,
        };
        self.current = Some((base * DECREASE).max(FLOOR));
        self.slow_start = false;
        self.last_decrease = Some(now);
        self.last_change = now;
        self.binding = false;
    }

    /// Once a second: a rate that bound callers and was not refused since grows (slow start
    /// until the first refusal, additively after), up to the ceiling.
    pub(crate) fn tick(&mut self, now: Instant) {
        if now.duration_since(self.last_change) < Duration::from_secs(1) {
            return;
        }
        let refused_lately = self
            .last_decrease
            .is_some_and(|at| now.duration_since(at) < COOLDOWN * 2);
        if let Some(current) = self.current
            && self.binding
            && !refused_lately
        {
            let grown = if self.slow_start {
                current * SLOW_START
            } else {
                current + (current * INCREASE).max(FLOOR)
            };
            self.current = Some(match self.ceiling() {
                Some(limit) => grown.min(limit),
                None => grown,
            });
        }
        self.binding = false;
        self.last_change = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(start: Instant, ms: u64) -> Instant {
        start + Duration::from_millis(ms)
    }

    #[test]
    fn known_limits_hold_from_the_start_and_never_grow_past_it() {
        let t0 = Instant::now();
        let mut r = Rate::new(Some(PerMinute::Known(600)), AUTO_START_REQUESTS, t0);
        assert_eq!(r.in_force(), Some(600.0));
        for s in 1..30 {
            r.started(at(t0, s * 1000), 10.0, true);
            r.accepted(at(t0, s * 1000), 10.0);
            r.tick(at(t0, s * 1000));
        }
        assert_eq!(r.in_force(), Some(600.0));
    }

    #[test]
    fn none_is_unlimited_until_the_provider_refuses_then_below_what_it_accepted() {
        let t0 = Instant::now();
        let mut r = Rate::new(None, AUTO_START_REQUESTS, t0);
        assert_eq!(r.in_force(), None);
        // It accepted 10 a second over the last 4 s, then refused.
        for ms in (1000..5000).step_by(100) {
            r.accepted(at(t0, ms), 1.0);
        }
        r.refused(at(t0, 5000), 1.0);
        let rate = r.in_force().expect("a rate now");
        assert!((rate - 600.0 * DECREASE).abs() < 1e-6, "{rate}");
    }

    #[test]
    fn before_any_answer_a_refusal_slows_from_the_rate_started() {
        let t0 = Instant::now();
        let mut r = Rate::new(None, AUTO_START_REQUESTS, t0);
        for ms in 0..17 {
            r.started(at(t0, ms), 1.0, false);
        }
        r.refused(at(t0, 20), 1.0);
        assert_eq!(r.in_force(), Some(17.0 * 60.0 * DECREASE));
    }

    #[test]
    fn a_first_burst_is_not_taken_for_a_rate() {
        let t0 = Instant::now();
        let mut r = Rate::new(None, AUTO_START_REQUESTS, t0);
        for ms in 0..10 {
            r.accepted(at(t0, ms), 1.0);
        }
        r.refused(at(t0, 100), 1.0);
        // 10 in 0.1 s, counted over a whole second: 600 a minute.
        assert_eq!(r.in_force(), Some(600.0 * DECREASE));
    }

    #[test]
    fn auto_starts_low_grows_fast_then_slowly() {
        let t0 = Instant::now();
        let mut r = Rate::new(Some(PerMinute::Auto), AUTO_START_REQUESTS, t0);
        assert_eq!(r.in_force(), Some(60.0));
        r.started(t0, 1.0, true);
        r.tick(at(t0, 1000));
        assert_eq!(r.in_force(), Some(90.0));
        // Not binding (no caller waited): no growth.
        r.tick(at(t0, 2000));
        assert_eq!(r.in_force(), Some(90.0));
        r.started(t0, 1.0, true);
        r.refused(at(t0, 2600), 1.0);
        // Two calls in the window measure their timing, not a rate (2 in 2.6 s would read 46
        // a minute): down from the rate in force.
        let after = r.in_force().expect("rate");
        assert!((after - 90.0 * DECREASE).abs() < 1e-9, "{after}");
        // After the cooldown, binding seconds add 1% (at least 1 per minute).
        r.started(t0, 1.0, true);
        r.tick(at(t0, 6000));
        let grown = r.in_force().expect("rate");
        assert!((grown - (after + (after * INCREASE).max(FLOOR))).abs() < 1e-9);
    }

    #[test]
    fn refusals_within_the_cooldown_count_once() {
        let t0 = Instant::now();
        let mut r = Rate::new(Some(PerMinute::Known(600)), AUTO_START_REQUESTS, t0);
        r.refused(at(t0, 100), 1.0);
        r.refused(at(t0, 200), 1.0);
        r.refused(at(t0, 900), 1.0);
        assert_eq!(r.in_force(), Some(600.0 * DECREASE));
        r.refused(at(t0, 1200), 1.0);
        assert_eq!(r.in_force(), Some(600.0 * DECREASE * DECREASE));
    }

    #[test]
    fn a_halved_limit_is_followed_at_the_first_refusal_after_the_change() {
        let t0 = Instant::now();
        let mut r = Rate::new(Some(PerMinute::Known(600)), AUTO_START_REQUESTS, t0);
        // The provider accepts 5 a second (300 a minute) from 10 s on, and refuses the rest.
        for ms in (10_000..14_000).step_by(200) {
            r.accepted(at(t0, ms), 1.0);
        }
        r.refused(at(t0, 14_000), 1.0);
        assert_eq!(r.in_force(), Some(300.0 * DECREASE));
    }

    #[test]
    fn shares_scale_what_was_accepted_to_the_whole_group() {
        let t0 = Instant::now();
        let mut r = Rate::new(Some(PerMinute::Known(1200)), AUTO_START_REQUESTS, t0);
        // This worker of two got 5 a second accepted: the group about 600 a minute.
        for ms in (1000..5000).step_by(200) {
            r.accepted(at(t0, ms), 1.0);
        }
        r.refused(at(t0, 5000), 0.5);
        assert_eq!(r.in_force(), Some(600.0 * DECREASE));
    }

    #[test]
    fn a_learned_limit_caps_and_follows_the_provider_down() {
        let t0 = Instant::now();
        let mut r = Rate::new(Some(PerMinute::Auto), AUTO_START_REQUESTS, t0);
        r.learn(600);
        assert_eq!(r.in_force(), Some(600.0));
        r.learn(300);
        assert_eq!(r.in_force(), Some(300.0));
        let mut known = Rate::new(Some(PerMinute::Known(500)), AUTO_START_REQUESTS, t0);
        known.learn(10_000);
        assert_eq!(
            known.in_force(),
            Some(500.0),
            "the configuration still holds"
        );
        known.learn(250);
        assert_eq!(known.in_force(), Some(250.0));
        assert_eq!(known.known_limit(), Some(250.0));
    }
}
