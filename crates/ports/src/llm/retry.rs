//! Backoff between attempts: exponential with full jitter, honouring the server's Retry-After.
//!
//! After the `n`-th failed attempt (0-based `attempt = n - 1`) the delay is a uniformly random
//! value in `[0, min(max_delay, base * 2^attempt)]`. When the server sent a Retry-After, the
//! delay is at least that long, capped at `4 x max_delay_ms` so a hostile or confused server
//! cannot park a run for hours. Only [`LlmError::is_retryable`](super::LlmError::is_retryable)
//! errors are retried, and at most `max_attempts` attempts are made in all.

use super::{LlmError, RetryConfig};
use rand::Rng;
use std::time::Duration;

/// Attempts in all for this configuration (at least one).
pub(crate) fn max_attempts(config: &RetryConfig) -> u32 {
    config.max_attempts.max(1)
}

/// The upper bound of the jittered delay after the 0-based `attempt`:
/// `min(max_delay, base * 2^attempt)` in milliseconds.
pub(crate) fn backoff_cap_ms(config: &RetryConfig, attempt: u32) -> u64 {
    let factor = 2u64.saturating_pow(attempt);
    config
        .base_delay_ms
        .saturating_mul(factor)
        .min(config.max_delay_ms)
}

/// The delay before the next attempt after the 0-based `attempt` failed, given the server's
/// Retry-After, if any.
pub(crate) fn backoff_delay(
    config: &RetryConfig,
    attempt: u32,
    retry_after: Option<Duration>,
) -> Duration {
    let cap = backoff_cap_ms(config, attempt);
    let jitter = if cap == 0 {
        0
    } else {
        rand::rng().random_range(0..=cap)
    };
    let mut delay = Duration::from_millis(jitter);
    if let Some(server) = retry_after {
        let bound = Duration::from_millis(config.max_delay_ms.saturating_mul(4));
        delay = delay.max(server.min(bound));
    }
    delay
}

/// What to do after a failed attempt: `Some(delay)` to try again, `None` to give up (the error
/// is not retryable or `attempts_made` reached the limit).
pub(crate) fn next_delay(
    config: &RetryConfig,
    attempts_made: u32,
    error: &LlmError,
) -> Option<Duration> {
    if !error.is_retryable() || attempts_made >= max_attempts(config) {
        return None;
    }
    Some(backoff_delay(
        config,
        attempts_made.saturating_sub(1),
        error.retry_after(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(max_attempts: u32, base: u64, max: u64) -> RetryConfig {
        RetryConfig {
            max_attempts,
            base_delay_ms: base,
            max_delay_ms: max,
        }
    }

    #[test]
    fn jitter_stays_within_the_exponential_cap() {
        let c = cfg(10, 100, 1_000);
        assert_eq!(backoff_cap_ms(&c, 0), 100);
        assert_eq!(backoff_cap_ms(&c, 1), 200);
        assert_eq!(backoff_cap_ms(&c, 3), 800);
        assert_eq!(backoff_cap_ms(&c, 4), 1_000);
        assert_eq!(backoff_cap_ms(&c, 200), 1_000);
        for attempt in 0..8 {
            for _ in 0..200 {
                let d = backoff_delay(&c, attempt, None);
                assert!(d <= Duration::from_millis(backoff_cap_ms(&c, attempt)));
            }
        }
    }

    #[test]
    fn jitter_is_spread_out() {
        let c = cfg(10, 1_000, 1_000);
        let ds: Vec<_> = (0..200).map(|_| backoff_delay(&c, 0, None)).collect();
        assert!(ds.iter().any(|d| *d < Duration::from_millis(300)));
        assert!(ds.iter().any(|d| *d > Duration::from_millis(700)));
    }

    #[test]
    fn retry_after_is_a_floor_capped_at_four_times_max() {
        let c = cfg(4, 10, 500);
        for _ in 0..50 {
            assert!(backoff_delay(&c, 0, Some(Duration::from_secs(1))) >= Duration::from_secs(1));
        }
        assert_eq!(
            backoff_delay(&c, 0, Some(Duration::from_secs(3600))),
            Duration::from_millis(2_000)
        );
    }

    #[test]
    fn only_retryable_errors_within_the_attempt_limit() {
        let c = cfg(3, 0, 0);
        let timeout = LlmError::Timeout(Duration::from_secs(1));
        assert!(next_delay(&c, 1, &timeout).is_some());
        assert!(next_delay(&c, 2, &timeout).is_some());
        assert!(next_delay(&c, 3, &timeout).is_none());
        assert!(next_delay(&c, 1, &LlmError::InvalidResponse("x".into())).is_none());
        let bad = LlmError::Status {
            status: 400,
            body: String::new(),
            retry_after: None,
        };
        assert!(next_delay(&c, 1, &bad).is_none());
        assert!(next_delay(&cfg(0, 0, 0), 1, &timeout).is_none());
    }
}
