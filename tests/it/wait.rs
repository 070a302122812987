//! Waiting for what happens elsewhere, and free ports: shared by the integration tests'
//! helpers, the fakes and the benchmarks (`benches/gatebot.rs` includes this file as its
//! `helpers`, so the fakes build there too).

use std::time::Duration;

pub use crate::ports::free_port;

/// How long [`eventually`] waits.
const EVENTUALLY: Duration = Duration::from_secs(30);

/// Polls `f` until it returns `Some`, for at most 30 s; panics naming `what`.
/// `f` may be an async closure (`async || …`), so it can call the daemon too.
pub async fn eventually<T>(what: &str, f: impl AsyncFnMut() -> Option<T>) -> T {
    eventually_within(what, EVENTUALLY, f).await
}

/// [`eventually`] with its own limit, for the few waits that take minutes (chaos tests).
pub async fn eventually_within<T>(
    what: &str,
    limit: Duration,
    mut f: impl AsyncFnMut() -> Option<T>,
) -> T {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
