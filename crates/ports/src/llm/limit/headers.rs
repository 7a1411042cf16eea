//! A provider's rate-limit headers, read from every answer (success or 429):
//!
//! - OpenAI and compatible servers: `x-ratelimit-limit-requests`, `x-ratelimit-limit-tokens`,
//!   `x-ratelimit-remaining-requests`, `x-ratelimit-remaining-tokens`,
//!   `x-ratelimit-reset-requests`, `x-ratelimit-reset-tokens` (a duration such as `1s`,
//!   `6m0s`, `20ms`);
//! - Anthropic: `anthropic-ratelimit-requests-{limit,remaining,reset}` and
//!   `anthropic-ratelimit-tokens-{limit,remaining,reset}` (the reset an RFC 3339 time).
//!
//! A value that does not parse is ignored (as if the header were absent): the headers come from
//! outside and only ever tighten what SAGE-RS does, within the bounds below.

use reqwest::header::HeaderMap;
use std::time::{Duration, SystemTime};

/// Largest limit taken from a header (per minute): larger values are ignored.
const MOST: u64 = 1_000_000_000;
/// Longest reset taken from a header: longer values are cut to this.
const LONGEST_RESET: Duration = Duration::from_secs(600);

/// What a provider said about its limits in one answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateHeaders {
    /// The requests-per-minute limit.
    pub requests_limit: Option<u64>,
    /// Requests left before the limit.
    pub requests_remaining: Option<u64>,
    /// When the requests limit is back to full.
    pub requests_reset: Option<Duration>,
    /// The tokens-per-minute limit.
    pub tokens_limit: Option<u64>,
    /// Tokens left before the limit.
    pub tokens_remaining: Option<u64>,
    /// When the tokens limit is back to full.
    pub tokens_reset: Option<Duration>,
}

impl RateHeaders {
    /// The rate-limit headers of an answer (OpenAI's or Anthropic's names); `None` when it has
    /// none.
    pub fn from_headers(headers: &HeaderMap) -> Option<RateHeaders> {
        let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
        let number = |name: &str| {
            text(name)
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|n| *n <= MOST)
        };
        let openai_reset = |name: &str| text(name).and_then(parse_duration);
        let anthropic_reset = |name: &str| text(name).and_then(parse_rfc3339_from_now);
        let found = RateHeaders {
            requests_limit: number("x-ratelimit-limit-requests")
                .or_else(|| number("anthropic-ratelimit-requests-limit")),
            requests_remaining: number("x-ratelimit-remaining-requests")
                .or_else(|| number("anthropic-ratelimit-requests-remaining")),
            requests_reset: openai_reset("x-ratelimit-reset-requests")
                .or_else(|| anthropic_reset("anthropic-ratelimit-requests-reset")),
            tokens_limit: number("x-ratelimit-limit-tokens")
                .or_else(|| number("anthropic-ratelimit-tokens-limit")),
            tokens_remaining: number("x-ratelimit-remaining-tokens")
                .or_else(|| number("anthropic-ratelimit-tokens-remaining")),
            tokens_reset: openai_reset("x-ratelimit-reset-tokens")
                .or_else(|| anthropic_reset("anthropic-ratelimit-tokens-reset")),
        };
        (found != RateHeaders::default()).then_some(found)
    }

    /// How long to hold every call when the provider says a limit is used up (remaining 0): the
    /// later of the used-up limits' resets.
    pub fn exhausted_for(&self) -> Option<Duration> {
        let used_up = |remaining: Option<u64>, reset: Option<Duration>| {
            (remaining == Some(0)).then_some(reset).flatten()
        };
        match (
            used_up(self.requests_remaining, self.requests_reset),
            used_up(self.tokens_remaining, self.tokens_reset),
        ) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }
}

/// A Go-style duration as OpenAI sends it: `1s`, `6m0s`, `20ms`, `1m30.5s`, `2h` (units `h`,
/// `m`, `s`, `ms`, `us`/`µs`, `ns`); at most [`LONGEST_RESET`].
pub fn parse_duration(value: &str) -> Option<Duration> {
    let mut rest = value.trim();
    if rest.is_empty() || rest.len() > 64 {
        return None;
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += number * seconds;
    }
    Duration::try_from_secs_f64(total)
        .ok()
        .map(|d| d.min(LONGEST_RESET))
}

/// The time from now until an RFC 3339 instant (zero for one in the past); at most
/// [`LONGEST_RESET`].
fn parse_rfc3339_from_now(value: &str) -> Option<Duration> {
    let at =
        time::OffsetDateTime::parse(value.trim(), &time::format_description::well_known::Rfc3339)
            .ok()?;
    let at = SystemTime::from(at);
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO)
            .min(LONGEST_RESET),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderName, HeaderValue};

    fn map(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                HeaderName::from_bytes(k.as_bytes()).expect("name"),
                HeaderValue::from_str(v).expect("value"),
            );
        }
        h
    }

    #[test]
    fn openai_durations() {
        assert_eq!(parse_duration("1s"), Some(Duration::from_secs(1)));
        assert_eq!(parse_duration("6m0s"), Some(Duration::from_secs(360)));
        assert_eq!(parse_duration("20ms"), Some(Duration::from_millis(20)));
        assert_eq!(
            parse_duration("1m30.5s"),
            Some(Duration::from_millis(90_500))
        );
        assert_eq!(parse_duration("2h"), Some(LONGEST_RESET));
        assert_eq!(parse_duration("0s"), Some(Duration::ZERO));
        for bad in ["", "s", "1", "1x", "-1s", "1..2s", "1s2"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }

    #[test]
    fn openai_headers() {
        let h = RateHeaders::from_headers(&map(&[
            ("x-ratelimit-limit-requests", "600"),
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "100ms"),
            ("x-ratelimit-limit-tokens", "200000"),
            ("x-ratelimit-remaining-tokens", "150000"),
            ("x-ratelimit-reset-tokens", "15s"),
        ]))
        .expect("headers");
        assert_eq!(h.requests_limit, Some(600));
        assert_eq!(h.tokens_limit, Some(200_000));
        assert_eq!(h.tokens_remaining, Some(150_000));
        // Only the used-up limit holds the calls.
        assert_eq!(h.exhausted_for(), Some(Duration::from_millis(100)));
    }

    #[test]
    fn anthropic_headers() {
        let later = time::OffsetDateTime::now_utc() + time::Duration::seconds(30);
        let later = later
            .format(&time::format_description::well_known::Rfc3339)
            .expect("format");
        let h = RateHeaders::from_headers(&map(&[
            ("anthropic-ratelimit-requests-limit", "50"),
            ("anthropic-ratelimit-requests-remaining", "49"),
            ("anthropic-ratelimit-tokens-limit", "40000"),
            ("anthropic-ratelimit-tokens-remaining", "0"),
            ("anthropic-ratelimit-tokens-reset", &later),
        ]))
        .expect("headers");
        assert_eq!(h.requests_limit, Some(50));
        assert_eq!(h.tokens_limit, Some(40_000));
        let held = h.exhausted_for().expect("tokens used up");
        assert!(
            held > Duration::from_secs(28) && held <= Duration::from_secs(30),
            "{held:?}"
        );
    }

    #[test]
    fn hostile_or_absent_values_are_ignored() {
        assert_eq!(RateHeaders::from_headers(&HeaderMap::new()), None);
        assert_eq!(
            RateHeaders::from_headers(&map(&[
                ("x-ratelimit-limit-requests", "-5"),
                ("x-ratelimit-limit-tokens", "99999999999999999999"),
                ("x-ratelimit-reset-requests", "soon"),
            ])),
            None
        );
    }
}
