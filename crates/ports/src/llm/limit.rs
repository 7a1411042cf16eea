//! Per-endpoint limits around every attempt: at most `max_concurrency` calls in flight
//! (a tokio [`Semaphore`]) and, when `requests_per_minute` is set, calls started no closer than
//! `60 s / requests_per_minute` apart (a token bucket of capacity one, i.e. even spacing).
//!
//! A provider's Retry-After holds for the whole endpoint: after a 429 that names one, no caller
//! of the endpoint starts an attempt before it has passed ([`Limits::pause`]), not only the
//! caller that got it.
//!
//! Bounded by construction: the rate limiter is taken while holding a concurrency permit, so at
//! most `max_concurrency` callers ever wait on it, and it keeps one timestamp, no queue. Waiting
//! for a concurrency permit is tokio's fair semaphore queue of the callers themselves.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio::time::Instant;

/// The limits of one endpoint.
#[derive(Debug)]
pub(crate) struct Limits {
    semaphore: Semaphore,
    rate: Option<RateLimiter>,
    /// No attempt starts before this (a provider's Retry-After).
    paused_until: Mutex<Option<Instant>>,
    in_flight: AtomicUsize,
    peak_in_flight: AtomicUsize,
}

/// Held while an attempt runs; releases its slot on drop.
pub(crate) struct Permit<'a> {
    _permit: Option<SemaphorePermit<'a>>,
    limits: &'a Limits,
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.limits.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Limits {
    /// Limits for `max_concurrency` in flight (0 is taken as 1) and at most
    /// `requests_per_minute` starts per minute (`None` or 0: unlimited).
    pub(crate) fn new(max_concurrency: usize, requests_per_minute: Option<u32>) -> Limits {
        let max_concurrency = max_concurrency.clamp(1, Semaphore::MAX_PERMITS);
        Limits {
            semaphore: Semaphore::new(max_concurrency),
            rate: requests_per_minute
                .filter(|r| *r > 0)
                .map(RateLimiter::per_minute),
            paused_until: Mutex::new(None),
            in_flight: AtomicUsize::new(0),
            peak_in_flight: AtomicUsize::new(0),
        }
    }

    /// Holds every attempt of the endpoint for `delay` from now (a provider's Retry-After): an
    /// earlier pause that ends later is kept.
    pub(crate) fn pause(&self, delay: Duration) {
        let until = Instant::now() + delay;
        let mut paused = match self.paused_until.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        *paused = Some(paused.map_or(until, |p| p.max(until)));
    }

    /// When the endpoint's pause ends, if it has not yet.
    fn paused(&self) -> Option<Instant> {
        let paused = match self.paused_until.lock() {
            Ok(guard) => *guard,
            Err(poisoned) => *poisoned.into_inner(),
        };
        paused.filter(|until| *until > Instant::now())
    }

    /// Waits for a concurrency slot, then for the rate limiter; the slot is held until the
    /// permit drops.
    pub(crate) async fn acquire(&self) -> Permit<'_> {
        // The semaphore is never closed, so `acquire` cannot fail; if it ever did, run unlimited
        // rather than fail the call.
        let permit = self.semaphore.acquire().await.ok();
        // A pause set while this caller waited holds it too (checked again after the wait).
        while let Some(until) = self.paused() {
            tokio::time::sleep_until(until).await;
        }
        if let Some(rate) = &self.rate {
            rate.until_ready().await;
        }
        let now = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak_in_flight.fetch_max(now, Ordering::Relaxed);
        Permit {
            _permit: permit,
            limits: self,
        }
    }

    /// Most attempts ever in flight at once.
    pub(crate) fn peak_in_flight(&self) -> usize {
        self.peak_in_flight.load(Ordering::Relaxed)
    }
}

/// Even spacing of call starts: each caller reserves the next free start time.
#[derive(Debug)]
struct RateLimiter {
    interval: Duration,
    next: Mutex<Option<Instant>>,
}

impl RateLimiter {
    fn per_minute(rpm: u32) -> RateLimiter {
        RateLimiter {
            interval: Duration::from_secs(60) / rpm.max(1),
            next: Mutex::new(None),
        }
    }

    async fn until_ready(&self) {
        let start = {
            let mut next = match self.next.lock() {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
            let now = Instant::now();
            let start = next.map_or(now, |n| n.max(now));
            *next = Some(start + self.interval);
            start
        };
        tokio::time::sleep_until(start).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test(start_paused = true)]
    async fn rate_limit_spaces_starts() {
        let limits = Limits::new(8, Some(120)); // 500 ms apart
        let t0 = Instant::now();
        let mut starts = Vec::new();
        for _ in 0..4 {
            let _p = limits.acquire().await;
            starts.push(t0.elapsed());
        }
        assert_eq!(starts[0], Duration::ZERO);
        for w in starts.windows(2) {
            assert!(w[1] - w[0] >= Duration::from_millis(500), "{starts:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn concurrency_is_bounded() {
        let limits = Arc::new(Limits::new(3, None));
        let mut tasks = Vec::new();
        for _ in 0..10 {
            let l = limits.clone();
            tasks.push(tokio::spawn(async move {
                let _p = l.acquire().await;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }));
        }
        for t in tasks {
            t.await.expect("task");
        }
        assert_eq!(limits.peak_in_flight(), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn a_pause_holds_every_caller_of_the_endpoint() {
        let limits = Arc::new(Limits::new(4, None));
        let t0 = Instant::now();
        drop(limits.acquire().await);
        assert_eq!(t0.elapsed(), Duration::ZERO);
        // One caller got a 429 with Retry-After: 2 s; the others wait for it too.
        limits.pause(Duration::from_secs(2));
        // A shorter pause does not cut the longer one short.
        limits.pause(Duration::from_millis(500));
        let mut tasks = Vec::new();
        for _ in 0..3 {
            let l = limits.clone();
            tasks.push(tokio::spawn(async move {
                let _p = l.acquire().await;
                Instant::now()
            }));
        }
        for t in tasks {
            let started = t.await.expect("task");
            assert!(started - t0 >= Duration::from_secs(2), "{:?}", started - t0);
        }
        // Once passed, no wait.
        let t1 = Instant::now();
        drop(limits.acquire().await);
        assert_eq!(t1.elapsed(), Duration::ZERO);
    }

    #[test]
    fn zero_means_one_and_unlimited() {
        let l = Limits::new(0, Some(0));
        assert_eq!(l.semaphore.available_permits(), 1);
        assert!(l.rate.is_none());
    }
}
