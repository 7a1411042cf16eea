use super::*;
use std::sync::Arc;

fn model(rpm: Option<PerMinute>, tpm: Option<PerMinute>, concurrency: usize) -> ModelConfig {
    let mut m = ModelConfig::new("m", sage_core::plan::model::Provider::Simulated);
    m.requests_per_minute = rpm;
    m.tokens_per_minute = tpm;
    m.max_concurrency = concurrency;
    m
}

fn limiter(rpm: Option<u32>, concurrency: usize) -> Limiter {
    Limiter::for_model(&model(rpm.map(PerMinute::Known), None, concurrency))
}

#[tokio::test(start_paused = true)]
async fn rate_limit_spaces_starts() {
    let limits = limiter(Some(120), 8); // 500 ms apart
    let t0 = Instant::now();
    let mut starts = Vec::new();
    for _ in 0..4 {
        let _p = limits.acquire(0).await;
        starts.push(t0.elapsed());
    }
    assert_eq!(starts[0], Duration::ZERO);
    for w in starts.windows(2) {
        assert!(w[1] - w[0] >= Duration::from_millis(500), "{starts:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn concurrency_is_bounded() {
    let limits = Arc::new(limiter(None, 3));
    let mut tasks = Vec::new();
    for _ in 0..10 {
        let l = limits.clone();
        tasks.push(tokio::spawn(async move {
            let _p = l.acquire(0).await;
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
    let limits = Arc::new(limiter(None, 4));
    let t0 = Instant::now();
    drop(limits.acquire(0).await);
    assert_eq!(t0.elapsed(), Duration::ZERO);
    // One caller got a 429 with Retry-After: 2 s; the others wait for it too.
    limits.pause(Duration::from_secs(2));
    // A shorter pause does not cut the longer one short.
    limits.pause(Duration::from_millis(500));
    let mut tasks = Vec::new();
    for _ in 0..3 {
        let l = limits.clone();
        tasks.push(tokio::spawn(async move {
            let _p = l.acquire(0).await;
            Instant::now()
        }));
    }
    for t in tasks {
        let started = t.await.expect("task");
        assert!(started - t0 >= Duration::from_secs(2), "{:?}", started - t0);
    }
    // Once passed, no wait.
    let t1 = Instant::now();
    drop(limits.acquire(0).await);
    assert_eq!(t1.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn tokens_per_minute_spaces_starts_by_their_estimate_and_settles_on_the_usage() {
    // 6,000 tokens a minute = 100 a second; each call: 400 characters (100 tokens) of input
    // and max_tokens 100 expected out: 200 tokens, so 2 s apart.
    let mut m = model(None, Some(PerMinute::Known(6_000)), 8);
    m.max_tokens = Some(100);
    let limits = Limiter::for_model(&m);
    let t0 = Instant::now();
    let first = limits.acquire(400).await;
    assert_eq!(t0.elapsed(), Duration::ZERO);
    drop(first);
    let second = limits.acquire(400).await;
    assert_eq!(t0.elapsed(), Duration::from_secs(2));
    // It spent 600 tokens, not 200: the next start moves 4 s later.
    second.settle(500, 100);
    drop(second);
    let _third = limits.acquire(400).await;
    let waited = t0.elapsed();
    assert!(
        waited >= Duration::from_secs(8) && waited < Duration::from_millis(8_100),
        "{waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_share_divides_the_rates_and_the_slots() {
    let limits = limiter(Some(600), 8); // 100 ms apart for the whole group
    limits.set_share(0.25); // one of four workers: 400 ms apart, 2 slots
    assert_eq!(limits.now().slots, 2);
    let t0 = Instant::now();
    drop(limits.acquire(0).await);
    drop(limits.acquire(0).await);
    assert_eq!(
        t0.elapsed(),
        Duration::from_millis(404),
        "400 ms and the 1% margin"
    );
    limits.set_share(f64::NAN);
    assert_eq!(
        limits.now().share,
        1.0,
        "a share that is not a number is ignored"
    );
}

#[tokio::test(start_paused = true)]
async fn a_429_slows_the_group_and_its_headers_set_the_limit() {
    let limits = limiter(Some(600), 8);
    limits.refused(Some(Duration::from_millis(10)), None);
    let after = limits.now().requests_per_minute.expect("a rate");
    assert!(after < 600.0, "{after}");
    assert_eq!(limits.refusals(), 1);
    // The provider's headers say its limit is 300: followed down at once.
    let headers = RateHeaders {
        requests_limit: Some(300),
        ..RateHeaders::default()
    };
    limits.answered(&headers);
    assert_eq!(limits.now().requests_per_minute, Some(300.0));
    assert_eq!(limits.known(), (Some(300.0), None));
}

#[tokio::test(start_paused = true)]
async fn a_used_up_limit_holds_every_caller_until_its_reset() {
    let limits = limiter(None, 4);
    limits.answered(&RateHeaders {
        requests_limit: Some(6_000),
        requests_remaining: Some(0),
        requests_reset: Some(Duration::from_secs(3)),
        ..RateHeaders::default()
    });
    let t0 = Instant::now();
    drop(limits.acquire(0).await);
    assert!(t0.elapsed() >= Duration::from_secs(3), "{:?}", t0.elapsed());
}

#[test]
fn a_group_takes_the_lowest_limits_of_its_members() {
    let a = model(Some(PerMinute::Known(500)), Some(PerMinute::Auto), 16);
    let b = model(Some(PerMinute::Known(300)), None, 4);
    let c = model(Some(PerMinute::Auto), None, 64);
    let group = Limiter::for_group("key-1", &[&a, &b, &c]);
    let now = group.now();
    assert_eq!(now.requests_per_minute, Some(300.0));
    assert_eq!(now.tokens_per_minute, Some(control::AUTO_START_TOKENS));
    assert_eq!(now.slots, 4);
    let zero = Limiter::for_model(&model(None, None, 0));
    assert_eq!(zero.now().slots, 1, "0 is taken as 1");
    assert_eq!(zero.now().requests_per_minute, None);
}

#[tokio::test(start_paused = true)]
async fn a_limit_used_up_at_the_rate_slows_nothing_used_up_for_long_does() {
    let limits = limiter(Some(60), 4); // one a second
    // The last call took the last request, the next is due in a second: exactly at the limit.
    limits.answered(&RateHeaders {
        requests_limit: Some(60),
        requests_remaining: Some(0),
        requests_reset: Some(Duration::from_secs(1)),
        ..RateHeaders::default()
    });
    assert_eq!(limits.now().requests_per_minute, Some(60.0));
    // Used up for 30 s: calls came faster than the provider refills.
    limits.answered(&RateHeaders {
        requests_limit: Some(60),
        requests_remaining: Some(0),
        requests_reset: Some(Duration::from_secs(30)),
        ..RateHeaders::default()
    });
    let slowed = limits.now().requests_per_minute.expect("a rate");
    assert!(slowed < 60.0, "{slowed}");
}

#[tokio::test(start_paused = true)]
async fn a_used_up_limit_resets_from_when_the_call_started() {
    let limits = limiter(None, 4);
    let t0 = Instant::now();
    let permit = limits.acquire(0).await;
    // The answer took 150 ms and says the limit is back in 1 s: 1 s from the call's start.
    tokio::time::sleep(Duration::from_millis(150)).await;
    permit.answered(&RateHeaders {
        requests_limit: Some(60),
        requests_remaining: Some(0),
        requests_reset: Some(Duration::from_secs(1)),
        ..RateHeaders::default()
    });
    drop(permit);
    drop(limits.acquire(0).await);
    assert_eq!(t0.elapsed(), Duration::from_secs(1));
}

/// Two workers sharing a 60-a-minute key (each 2 s apart): worker 0 starts on even seconds of
/// the wall clock, worker 1 on odd ones, so their calls stay a second apart; a caller a few
/// milliseconds late still takes its turn.
#[test]
fn turns_keep_the_workers_calls_an_interval_apart() {
    let now = Instant::now();
    let wall = UNIX_EPOCH + Duration::from_millis(1_000_300);
    let step = Duration::from_secs(2);
    let first = Turn { rank: 0, of: 2 };
    let second = Turn { rank: 1, of: 2 };
    let ms = |t: Instant| t.duration_since(now).as_millis();
    assert_eq!(ms(first.next_start(step, now, now, wall)), 1_700);
    assert_eq!(ms(second.next_start(step, now, now, wall)), 700);
    // From a later next start: the first turn at or after it.
    let later = now + Duration::from_millis(800);
    assert_eq!(ms(second.next_start(step, later, now, wall)), 2_700);
    // 10 ms late for the odd second (within the margin's 60 ms of a 2 s period): still this
    // turn; 100 ms late: the next one.
    let late = UNIX_EPOCH + Duration::from_millis(1_001_010);
    assert_eq!(ms(second.next_start(step, now, now, late)), 0);
    let too_late = UNIX_EPOCH + Duration::from_millis(1_001_100);
    assert_eq!(ms(second.next_start(step, now, now, too_late)), 1_900);
}

/// A limiter on a turn starts only on it.
#[tokio::test]
async fn a_limiter_on_a_turn_starts_on_it() {
    let limits = limiter(Some(60), 8);
    limits.set_share(0.5);
    assert!(limits.set_turn(Some(Turn { rank: 1, of: 2 })));
    let _first = limits.acquire(0).await;
    let _second = limits.acquire(0).await;
    let wall = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64();
    // Worker 1 of 2 on a 60-a-minute key: its starts at odd multiples of the group's interval
    // (1 s, widened by the turn margin).
    let phase = (wall / TURN_MARGIN).round() as i64;
    let off = (wall - phase as f64 * TURN_MARGIN).abs();
    assert!(phase % 2 == 1 && off < 0.05, "started at {wall}");
}
