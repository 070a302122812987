//! The housekeeping pass: what must happen every few seconds even when nothing else
//! does.
//!
//! 1. Look at the storage ([`Engine::storage_fault`]): a deleted or replaced database
//!    file is logged (once, at ERROR) when it happens, not at the next call.
//! 2. Close the windows of refused attempts that have ended, so their counts reach
//!    the trail and the log within seconds of their minute (see `refusal`).
//! 3. Forget the dashboard's sign-in links and sessions a day after they ended, and the
//!    batches asked in chats a day after they expired.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::Engine;

/// How often [`Engine::run_housekeeping`] runs.
const HOUSEKEEPING: Duration = Duration::from_secs(5);
/// How long ended sign-in links and sessions, and expired chat batches, are kept (the
/// audit trail keeps the rest).
const ENDED_SESSIONS_KEPT: Duration = Duration::from_secs(24 * 3600);
/// How long an inbound message's id is remembered, so a webhook a provider delivers
/// again is acted on once: longer than any provider retries (Twilio and Meta give up
/// within a day).
const INBOUND_IDS_KEPT: Duration = Duration::from_secs(7 * 24 * 3600);

impl Engine {
    /// Runs the housekeeping pass every few seconds until `stop` fires.
    pub async fn run_housekeeping(self: Arc<Self>, stop: CancellationToken) {
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(HOUSEKEEPING) => {}
            }
            if self.storage_fault().await.is_some() {
                continue;
            }
            if let Err(e) = self.flush_refusals(false).await {
                warn!(error = %e, "cannot record the counts of refused attempts; retrying");
            }
            let keep = ENDED_SESSIONS_KEPT.as_millis() as i64;
            if let Err(e) = self
                .blocking(move |s| s.forget_sessions(crate::time::now_ms(), keep))
                .await
            {
                warn!(error = %e, "cannot forget ended dashboard sessions; retrying");
            }
            if let Err(e) = self
                .blocking(move |s| s.forget_batches(crate::time::now_ms(), keep))
                .await
            {
                warn!(error = %e, "cannot forget the batches chats asked for; retrying");
            }
            let keep = INBOUND_IDS_KEPT.as_millis() as i64;
            if let Err(e) = self
                .blocking(move |s| s.forget_inbound(crate::time::now_ms(), keep))
                .await
            {
                warn!(error = %e, "cannot forget old inbound message ids; retrying");
            }
        }
    }
}
