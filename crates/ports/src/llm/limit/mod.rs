//! A provider's limits around every attempt, held by one [`Limiter`] per limit group (a model,
//! or the models sharing one API key through `limit_group`):
//!
//! - at most `max_concurrency` attempts in flight;
//! - attempt starts spaced so that at most `requests_per_minute` start per minute and at most
//!   `tokens_per_minute` tokens (the request's input, estimated from its length, plus the
//!   expected output, reconciled with the usage the provider returns) are spent per minute;
//! - both rates known (configured), found (`auto`, or absent until the provider signals a
//!   limit) and followed: the provider's rate-limit headers ([`RateHeaders`]) cap them, a 429 or
//!   a used-up limit decreases them multiplicatively, binding seconds without refusal grow them
//!   back ([`control`]);
//! - a provider's Retry-After (or a used-up limit's reset) holds every caller of the group,
//!   not only the caller that got it ([`Limiter::pause`]);
//! - in a cluster, this process holds its share of the group's limits ([`Limiter::set_share`],
//!   kept by `sage_actors::cluster::limits`).
//!
//! Bounded by construction: the rates are taken while holding a concurrency slot, so at most
//! `max_concurrency` callers ever wait on them, and they keep two timestamps, no queue.

mod control;
mod headers;

pub use headers::{RateHeaders, parse_duration};

use control::{AUTO_START_REQUESTS, AUTO_START_TOKENS, Rate};
use sage_core::plan::model::{ModelConfig, PerMinute};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::Notify;
use tokio::time::Instant;

/// Calls are spaced this much wider than the requests rate (see `Limiter::try_start`).
const REQUEST_MARGIN: f64 = 1.01;
/// Workers taking turns on a group's requests ([`Turn`]) space the turns this much wider than
/// the group's limit: the calls of two processes, and the provider's reading of them, move by
/// tens of milliseconds on a busy machine, and a provider that refills one request at a time
/// refuses a call that arrives early.
const TURN_MARGIN: f64 = 1.03;
/// Workers take turns on a group whose requests come at least this far apart (up to 240 a
/// minute): a provider refilling several requests a second absorbs two workers' calls that come
/// close, and a missed turn there would cost more than it saves.
const TURNS_FROM: Duration = Duration::from_millis(250);
/// Below this spacing a late caller may catch up one interval (see `Limiter::try_start`).
const CATCH_UP_BELOW: Duration = Duration::from_millis(100);

/// Expected output tokens of a call before any usage was seen (at most the model's
/// `max_tokens`).
const FIRST_OUTPUT_ESTIMATE: f64 = 256.0;

/// The limits one group of models is held to.
#[derive(Debug)]
pub struct Limiter {
    name: String,
    max_concurrency: usize,
    max_tokens: Option<u32>,
    state: Mutex<State>,
    /// A slot was freed (or more were allowed).
    freed: Notify,
    /// Held by the one caller waiting for the pause and the rates to let it start: the others
    /// queue for it in order (a fair semaphore), so every caller of the group, of whichever
    /// model, starts in its turn. Without it, the callers woken at the same moment raced for
    /// each start and the same ones kept winning (two models of one group: 47 calls to 8).
    starting: tokio::sync::Semaphore,
    /// The next start may have come earlier (a call used fewer tokens than estimated, a larger
    /// share): the caller waiting in turn looks again at once.
    moved: Notify,
    stats: Stats,
    series: crate::telemetry::metrics::LimitSeries,
}

#[derive(Debug)]
struct State {
    requests: Rate,
    tokens: Rate,
    /// This process's part of the group's limits (1 embedded).
    share: f64,
    /// In a cluster: this worker's turn on the group's requests (see [`Turn`]).
    turn: Option<Turn>,
    in_flight: usize,
    next_request: Option<Instant>,
    next_token: Option<Instant>,
    paused_until: Option<Instant>,
    /// Expected output tokens per call (a moving average of the usage seen).
    output_estimate: f64,
}

#[derive(Debug, Default)]
struct Stats {
    started: AtomicU64,
    refused: AtomicU64,
    peak_in_flight: AtomicUsize,
}

/// What a group's limits are now, for `sage models check`, the logs and the tests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LimitsNow {
    /// Requests per minute in force for the whole group (`None`: unlimited).
    pub requests_per_minute: Option<f64>,
    /// Tokens per minute in force for the whole group (`None`: unlimited).
    pub tokens_per_minute: Option<f64>,
    /// This process's share of them.
    pub share: f64,
    /// Attempts this process may have in flight.
    pub slots: usize,
}

/// Held while an attempt runs: frees its slot on drop; [`settle`](Permit::settle) reconciles
/// its token estimate with the usage returned.
pub struct Permit<'a> {
    limiter: &'a Limiter,
    estimated_tokens: f64,
    /// When the attempt was let start.
    started: Instant,
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let mut state = self.limiter.lock();
        state.in_flight = state.in_flight.saturating_sub(1);
        drop(state);
        self.limiter.freed.notify_one();
    }
}

impl Permit<'_> {
    /// The provider answered this attempt with these rate-limit headers
    /// ([`Limiter::answered`]); a used-up limit's reset counts from when the attempt started
    /// (a provider counts a call when it takes it, not when its answer is done).
    pub fn answered(&self, headers: &RateHeaders) {
        self.limiter.answered_since(headers, self.started);
    }

    /// The provider accepted the call, which spent `input + output` tokens (its usage): the
    /// tokens rate is corrected by the difference from the estimate, the expected output
    /// follows, and the rates note what the provider accepted.
    pub fn settle(&self, input: u64, output: u64) {
        let limiter = self.limiter;
        let actual = (input + output) as f64;
        limiter.series.tokens.inc_by(input + output);
        let mut state = limiter.lock();
        let delta = actual - self.estimated_tokens;
        if let Some(next) = state.next_token
            && let Some(interval) = state.token_interval()
        {
            let shift = interval.mul_f64(delta.abs());
            state.next_token = Some(if delta >= 0.0 {
                next + shift
            } else {
                // A refund never moves the next start before now.
                next.checked_sub(shift)
                    .map_or_else(Instant::now, |n| n.max(Instant::now()))
            });
        }
        let now = Instant::now();
        state.requests.accepted(now, 1.0);
        state.tokens.accepted(now, actual);
        state.output_estimate = 0.8 * state.output_estimate + 0.2 * output as f64;
        drop(state);
        if delta < 0.0 {
            limiter.moved.notify_waiters();
        }
    }
}

/// A worker's turn on a limit group's requests, shared with `of - 1` other workers: the
/// group's starts lie on one grid of the wall clock (its spacing: the group's interval at the
/// whole rate), and worker `rank` takes every `of`-th point from its own. Workers that each keep
/// their own spacing start calls at random moments relative to each other, and a provider that
/// refills one request at a time (a 60-a-minute key: one a second) refuses a call that comes
/// within its interval of another worker's: a third of the calls of two workers sharing such a
/// key. On turns their calls stay an interval apart, as far as the nodes' clocks agree (NTP:
/// milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Turn {
    /// This worker's place among the workers sharing the group (0-based).
    pub rank: usize,
    /// The workers sharing the group.
    pub of: usize,
}

impl Turn {
    /// The first start on this worker's turn at or after `from`: `period` is the grid's
    /// spacing for one worker (the group's interval times `of`); `now` and `wall` are the same
    /// moment.
    fn next_start(
        self,
        period: Duration,
        from: Instant,
        now: Instant,
        wall: SystemTime,
    ) -> Instant {
        let period = period.as_secs_f64();
        let offset = period * self.rank as f64 / self.of as f64;
        let epoch = wall
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64()
            + from.saturating_duration_since(now).as_secs_f64();
        // A caller that woke a little late still takes the turn it woke for: late by up to the
        // margin, its call is still an interval before the next worker's turn.
        let late = period / self.of as f64 * (1.0 - 1.0 / TURN_MARGIN);
        let k = ((epoch - offset - late) / period).ceil();
        let at = k * period + offset;
        from + Duration::from_secs_f64((at - epoch).max(0.0))
    }
}

impl State {
    fn requests_rate(&self) -> Option<f64> {
        self.requests.in_force().map(|r| r * self.share)
    }

    fn tokens_rate(&self) -> Option<f64> {
        self.tokens.in_force().map(|r| r * self.share)
    }

    fn token_interval(&self) -> Option<Duration> {
        self.tokens_rate()
            .map(|r| Duration::from_secs(60).div_f64(r.max(f64::MIN_POSITIVE)))
    }
}

impl Limiter {
    /// The limits of a group of models: the lowest `max_concurrency`, and per rate the lowest
    /// known limit of the members, else `auto` if one says so, else none.
    pub fn for_group(name: &str, members: &[&ModelConfig]) -> Limiter {
        let lowest = |pick: fn(&ModelConfig) -> Option<PerMinute>| {
            let settings: Vec<PerMinute> = members.iter().filter_map(|m| pick(m)).collect();
            settings
                .iter()
                .filter_map(|s| s.known())
                .min()
                .map(PerMinute::Known)
                .or_else(|| settings.first().map(|_| PerMinute::Auto))
        };
        let now = Instant::now();
        let max_concurrency = members
            .iter()
            .map(|m| m.max_concurrency)
            .min()
            .unwrap_or(1)
            .max(1);
        let limiter = Limiter {
            name: name.to_string(),
            max_concurrency,
            max_tokens: members.iter().filter_map(|m| m.max_tokens).max(),
            state: Mutex::new(State {
                requests: Rate::new(lowest(|m| m.requests_per_minute), AUTO_START_REQUESTS, now),
                tokens: Rate::new(lowest(|m| m.tokens_per_minute), AUTO_START_TOKENS, now),
                share: 1.0,
                turn: None,
                in_flight: 0,
                next_request: None,
                next_token: None,
                paused_until: None,
                output_estimate: FIRST_OUTPUT_ESTIMATE,
            }),
            freed: Notify::new(),
            starting: tokio::sync::Semaphore::new(1),
            moved: Notify::new(),
            stats: Stats::default(),
            series: crate::telemetry::metrics().limit_series(name),
        };
        limiter.publish();
        limiter
    }

    /// The limits of one model on its own.
    pub fn for_model(config: &ModelConfig) -> Limiter {
        Limiter::for_group(config.limit_group(), &[config])
    }

    /// The group's name (the `endpoint` label of its metrics).
    pub fn name(&self) -> &str {
        &self.name
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The limits now.
    pub fn now(&self) -> LimitsNow {
        let state = self.lock();
        LimitsNow {
            requests_per_minute: state.requests.in_force(),
            tokens_per_minute: state.tokens.in_force(),
            share: state.share,
            slots: self.slots(state.share),
        }
    }

    /// The group's limits as known (configured, or from the provider's headers): requests and
    /// tokens per minute.
    pub fn known(&self) -> (Option<f64>, Option<f64>) {
        let state = self.lock();
        (state.requests.known_limit(), state.tokens.known_limit())
    }

    fn slots(&self, share: f64) -> usize {
        ((self.max_concurrency as f64 * share).floor() as usize).clamp(1, self.max_concurrency)
    }

    /// Sets this process's part of the group's limits (in a cluster: 1 / the workers sharing
    /// them); clamped to (0, 1].
    pub fn set_share(&self, share: f64) {
        let share = if share.is_finite() {
            share.clamp(1e-6, 1.0)
        } else {
            1.0
        };
        let mut state = self.lock();
        let grew = share > state.share;
        state.share = share;
        drop(state);
        if grew {
            self.freed.notify_waiters();
            self.moved.notify_waiters();
        }
        self.publish();
    }

    /// Sets this worker's turn on the group's requests (`None`, or a turn of one: any time its
    /// rate allows); true when it changed.
    pub fn set_turn(&self, turn: Option<Turn>) -> bool {
        let turn = turn.filter(|t| t.of > 1 && t.rank < t.of);
        let mut state = self.lock();
        let changed = state.turn != turn;
        state.turn = turn;
        changed
    }

    /// Holds every attempt of the group for `delay` from now (a provider's Retry-After): an
    /// earlier pause that ends later is kept.
    pub fn pause(&self, delay: Duration) {
        let until = Instant::now() + delay;
        let mut state = self.lock();
        state.paused_until = Some(state.paused_until.map_or(until, |p| p.max(until)));
    }

    /// The provider answered with these rate-limit headers: its limits cap the rates, and a
    /// used-up limit holds every caller until its reset. A limit used up with a reset much
    /// longer than the spacing of calls at the rate in force (more than two intervals; for
    /// tokens, more than two seconds) means the calls came faster than the provider refills:
    /// it counts as a refusal. (Used up with a reset of about one interval is a rate exactly
    /// at the limit: the last call took the last request, and the next one is due then.)
    pub fn answered(&self, headers: &RateHeaders) {
        self.answered_since(headers, Instant::now());
    }

    /// [`answered`](Limiter::answered), a used-up limit's reset counted from `since`.
    fn answered_since(&self, headers: &RateHeaders, since: Instant) {
        let now = Instant::now();
        let mut state = self.lock();
        if let Some(limit) = headers.requests_limit {
            state.requests.learn(limit);
        }
        if let Some(limit) = headers.tokens_limit {
            state.tokens.learn(limit);
        }
        let share = state.share;
        let used_up = |remaining: Option<u64>, reset: Option<Duration>, spacing: Duration| {
            remaining == Some(0) && reset.is_some_and(|r| r > spacing * 2)
        };
        let request_spacing = state.requests.in_force().map_or(Duration::ZERO, |r| {
            Duration::from_secs(60).div_f64(r.max(f64::MIN_POSITIVE))
        });
        if used_up(
            headers.requests_remaining,
            headers.requests_reset,
            request_spacing,
        ) {
            state.requests.refused(now, share);
        }
        if used_up(
            headers.tokens_remaining,
            headers.tokens_reset,
            Duration::from_secs(1),
        ) {
            state.tokens.refused(now, share);
        }
        drop(state);
        if let Some(hold) = headers.exhausted_for() {
            self.pause((since + hold).saturating_duration_since(now));
        }
        self.publish();
    }

    /// The provider refused a call (HTTP 429), with its Retry-After and rate-limit headers when
    /// it sent them: every caller waits the Retry-After out, and the rate that was used up (the
    /// requests rate when the headers do not say) decreases.
    pub fn refused(&self, retry_after: Option<Duration>, headers: Option<&RateHeaders>) {
        self.stats.refused.fetch_add(1, Ordering::Relaxed);
        self.series.refused.inc();
        let now = Instant::now();
        let mut state = self.lock();
        if let Some(h) = headers {
            if let Some(limit) = h.requests_limit {
                state.requests.learn(limit);
            }
            if let Some(limit) = h.tokens_limit {
                state.tokens.learn(limit);
            }
        }
        let tokens_out = headers.is_some_and(|h| h.tokens_remaining == Some(0));
        let requests_out = headers.is_some_and(|h| h.requests_remaining == Some(0));
        let share = state.share;
        if requests_out || !tokens_out {
            state.requests.refused(now, share);
        }
        if tokens_out || (!requests_out && state.tokens.in_force().is_some()) {
            state.tokens.refused(now, share);
        }
        drop(state);
        if let Some(after) = retry_after.or_else(|| headers.and_then(RateHeaders::exhausted_for)) {
            self.pause(after);
        }
        self.publish();
    }

    /// Waits for a slot, then for the pause and the rates; `input_chars`: the request's length,
    /// for its token estimate (`sage_core::estimate::CHARS_PER_TOKEN` characters a token). The slot is held until the
    /// permit drops.
    pub async fn acquire(&self, input_chars: usize) -> Permit<'_> {
        let asked = Instant::now();
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            {
                let mut state = self.lock();
                if state.in_flight < self.slots(state.share) {
                    state.in_flight += 1;
                    self.stats
                        .peak_in_flight
                        .fetch_max(state.in_flight, Ordering::Relaxed);
                    break;
                }
            }
            freed.await;
        }
        // The pause and the rates, as they are when the caller may start: a start is never
        // reserved ahead, so a rate that changes while callers wait applies to them at once.
        let mut waited = false;
        // In turn with the group's other callers (never closed: acquiring fails only once
        // closed).
        let turn = self.starting.acquire().await;
        let estimated_tokens = loop {
            let moved = self.moved.notified();
            tokio::pin!(moved);
            moved.as_mut().enable();
            match self.try_start(input_chars, waited) {
                Ok(tokens) => break tokens,
                Err(until) => {
                    waited = true;
                    tokio::select! {
                        () = tokio::time::sleep_until(until) => {}
                        () = moved => {}
                    }
                }
            }
        };
        drop(turn);
        self.stats.started.fetch_add(1, Ordering::Relaxed);
        self.series.calls.inc();
        self.series.wait.inc_by(asked.elapsed().as_secs_f64());
        Permit {
            limiter: self,
            estimated_tokens,
            started: Instant::now(),
        }
    }

    /// Starts an attempt now if the pause and the rates allow it (its estimated tokens), else
    /// says when to try again.
    fn try_start(&self, input_chars: usize, waited: bool) -> Result<f64, Instant> {
        let now = Instant::now();
        let mut state = self.lock();
        if let Some(until) = state.paused_until.filter(|u| *u > now) {
            return Err(until);
        }
        let ticked = {
            let before = (state.requests.in_force(), state.tokens.in_force());
            state.requests.tick(now);
            state.tokens.tick(now);
            before != (state.requests.in_force(), state.tokens.in_force())
        };
        if ticked {
            drop(state);
            self.publish();
            state = self.lock();
        }
        let expected_output = match self.max_tokens {
            Some(most) => state.output_estimate.min(f64::from(most)),
            None => state.output_estimate,
        };
        let tokens =
            input_chars as f64 / sage_core::estimate::CHARS_PER_TOKEN as f64 + expected_output;
        // 1% wider than the rate: a provider that refills one request at a time refuses a
        // call that arrives a millisecond early, and the network moves arrivals by that much.
        let request_interval = state.requests_rate().map(|r| {
            Duration::from_secs(60)
                .div_f64(r.max(f64::MIN_POSITIVE))
                .mul_f64(REQUEST_MARGIN)
        });
        let token_cost = state.token_interval().map(|i| i.mul_f64(tokens));
        // One grid for every worker: from the group's limit as known (the same for all), not
        // from this worker's rate (which moves with what it is told); a worker whose rate is
        // lower skips turns.
        let turn = state
            .turn
            .filter(|_| request_interval.is_some())
            .and_then(|turn| {
                let group = state.requests.known_limit().or(state.requests.in_force())?;
                let interval = Duration::from_secs(60).div_f64(group.max(f64::MIN_POSITIVE));
                (interval >= TURNS_FROM).then_some((turn, interval))
            });
        let on_turn = match turn {
            Some((turn, interval)) => {
                let period = interval.mul_f64(TURN_MARGIN * turn.of as f64);
                let from = state.next_request.map_or(now, |n| n.max(now));
                Some(turn.next_start(period, from, now, SystemTime::now()))
            }
            None => request_interval.and(state.next_request),
        };
        let earliest = [on_turn, token_cost.and(state.next_token)]
            .into_iter()
            .flatten()
            .max();
        if let Some(at) = earliest.filter(|at| *at > now) {
            return Err(at);
        }
        // The next start after this one. Calls less than `CATCH_UP_BELOW` apart: a caller that
        // woke late may catch up one interval (a timer a millisecond late would otherwise cost
        // a tenth of a 6,000-a-minute rate, and providers that fast refill in bulk); slower
        // ones keep their spacing from the actual start.
        let after = |next: Option<Instant>, step: Duration| {
            let catch_up = if step < CATCH_UP_BELOW {
                step
            } else {
                Duration::ZERO
            };
            next.map_or(now, |n| n.max(now.checked_sub(catch_up).unwrap_or(now))) + step
        };
        if let Some(step) = request_interval {
            state.next_request = Some(after(state.next_request, step));
        }
        if let Some(step) = token_cost {
            state.next_token = Some(after(state.next_token, step));
        }
        state.requests.started(now, 1.0, waited);
        state.tokens.started(now, tokens, waited);
        Ok(tokens)
    }

    /// Most attempts ever in flight at once.
    pub fn peak_in_flight(&self) -> usize {
        self.stats.peak_in_flight.load(Ordering::Relaxed)
    }

    /// Attempts started through the limiter.
    pub fn started(&self) -> u64 {
        self.stats.started.load(Ordering::Relaxed)
    }

    /// Refusals (429) seen.
    pub fn refusals(&self) -> u64 {
        self.stats.refused.load(Ordering::Relaxed)
    }

    /// Sets the gauges of the limits in force.
    fn publish(&self) {
        let now = self.now();
        let (requests, tokens) = self.known();
        self.series.publish(
            now.requests_per_minute,
            now.tokens_per_minute,
            requests.is_some() || tokens.is_some(),
            now.share,
            now.slots,
        );
    }
}

/// The limiters of a process, one per limit group, shared by every run it serves (a worker
/// serving two runs that call one API key holds one limit for both).
#[derive(Debug, Default)]
pub struct Limiters {
    groups: Mutex<std::collections::HashMap<String, Arc<Limiter>>>,
    /// The share a new group starts with (in a cluster: until its first lease).
    first_share: Mutex<Option<f64>>,
    /// A group was added.
    added: Notify,
}

impl Limiters {
    /// The group's limiter: the one already held, or a new one from `members`' settings (a
    /// group's settings are those of the first run that used it).
    pub fn group(&self, name: &str, members: &[&ModelConfig]) -> Arc<Limiter> {
        let mut groups = self.groups.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(limiter) = groups.get(name) {
            return limiter.clone();
        }
        let limiter = Arc::new(Limiter::for_group(name, members));
        let first = *self.first_share.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(share) = first {
            limiter.set_share(share);
        }
        groups.insert(name.to_string(), limiter.clone());
        drop(groups);
        self.added.notify_one();
        limiter
    }

    /// Every group's limiter.
    pub fn all(&self) -> Vec<Arc<Limiter>> {
        let groups = self.groups.lock().unwrap_or_else(|e| e.into_inner());
        groups.values().cloned().collect()
    }

    /// The share a group added from now on starts with (in a cluster: a safe guess until its
    /// lease says better).
    pub fn set_first_share(&self, share: f64) {
        *self.first_share.lock().unwrap_or_else(|e| e.into_inner()) = Some(share);
    }

    /// Waits until a group is added.
    pub async fn added(&self) {
        self.added.notified().await;
    }
}

#[cfg(test)]
mod tests;
