//! Retrying with backoff: the one helper every retry loop uses (chat calls, replies,
//! connecting, listening).
//!
//! [`retry`] repeats a call until it succeeds, `stop` fires, or the caller's `wait`
//! decides to give up. `wait` sees each error and the attempt number, and returns how
//! long to wait before the next attempt (a server's `retry_after`, or [`backoff`]), or
//! `None` to stop trying; it is also where the caller logs the failure.

use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// Backoff for attempt `n` (0-based): 1 s, 2 s, 4 s … capped at 60 s.
#[must_use]
pub fn backoff(attempt: u32) -> Duration {
    Duration::from_secs(1u64 << attempt.min(6)).min(Duration::from_secs(60))
}

/// The pause before reconnecting to gatebot's socket, attempt `n` (0-based): 100 ms,
/// doubling, at most 2 s, so a client finds a restarted daemon within 2 s of its return.
#[must_use]
pub fn reconnect_delay(attempt: u32) -> Duration {
    Duration::from_millis(100)
        .saturating_mul(1u32 << attempt.min(8))
        .min(Duration::from_secs(2))
}

/// Calls `call` until it succeeds or `wait` gives up (its last error), or `stop` fires
/// (`None`, also when `stop` fires during a call).
pub async fn retry<T, E, F, Fut, W>(
    stop: &CancellationToken,
    mut call: F,
    mut wait: W,
) -> Option<Result<T, E>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    W: FnMut(&E, u32) -> Option<Duration>,
{
    let mut attempt = 0;
    loop {
        let result = tokio::select! {
            _ = stop.cancelled() => return None,
            r = call() => r,
        };
        let e = match result {
            Ok(v) => return Some(Ok(v)),
            Err(e) => e,
        };
        let Some(pause) = wait(&e, attempt) else {
            return Some(Err(e));
        };
        attempt += 1;
        tokio::select! {
            _ = stop.cancelled() => return None,
            _ = tokio::time::sleep(pause) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_a_minute() {
        let waits: Vec<u64> = (0..9).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
    }

    #[test]
    fn reconnecting_starts_fast_and_waits_at_most_two_seconds() {
        let waits: Vec<u128> = (0..7).map(|n| reconnect_delay(n).as_millis()).collect();
        assert_eq!(waits, [100, 200, 400, 800, 1600, 2000, 2000]);
        assert_eq!(reconnect_delay(u32::MAX), Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn retries_until_success_or_until_told_to_give_up() {
        let stop = CancellationToken::new();
        let mut calls = 0;
        let got = retry(
            &stop,
            || {
                calls += 1;
                let n = calls;
                async move {
                    if n < 3 {
                        Err(n)
                    } else {
                        Ok(n)
                    }
                }
            },
            |_, attempt| Some(backoff(attempt)),
        )
        .await;
        assert_eq!(got, Some(Ok(3)));
        let got: Option<Result<(), u32>> = retry(
            &stop,
            || async { Err(7) },
            |_, attempt| (attempt < 2).then_some(Duration::ZERO),
        )
        .await;
        assert_eq!(got, Some(Err(7)));
        stop.cancel();
        let got: Option<Result<(), u32>> =
            retry(&stop, || async { Err(1) }, |_, _| Some(backoff(0))).await;
        assert_eq!(got, None);
    }
}
