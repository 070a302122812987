//! What a chat platform adapter implements, and the platforms the daemon runs.
//!
//! An adapter has two sides:
//! - **outbound**, the [`Platform`] trait: where cards go, how fast, and posting (in a
//!   [`Thread`] where delivery says) or editing a [`Card`] (rendered with the platform's
//!   own renderer). Delivery drives it.
//! - **inbound**: its own loop (Telegram's long polling, Slack's Socket Mode or HTTP
//!   events) that translates updates into [`crate::chat::inbound::Inbound`], calls
//!   [`crate::chat::inbound::handle`] with the [`crate::chat::Context`]
//!   [`crate::chat::run`] gives it, and shows the answer its way.
//!
//! [`crate::chat::run`] starts delivery for a platform and hands its inbound loop the
//! context. The list of platforms the daemon runs is [`crate::platforms`]: chat names
//! none.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::approval::PlatformId;
use crate::chat::card::Card;
use crate::config::{ChatSettings, Config};
use crate::engine::Engine;

/// Spaces calls that share one limit beyond a chat's own pace (a phone number's
/// sends, a Slack app's edits across its channels): each call waits its turn, at least
/// `interval` after the one before, in the order they asked.
#[derive(Debug)]
pub struct Pacer {
    interval: Duration,
    next: tokio::sync::Mutex<tokio::time::Instant>,
}

impl Pacer {
    #[must_use]
    pub fn new(interval: Duration) -> Pacer {
        Pacer {
            interval,
            next: tokio::sync::Mutex::new(tokio::time::Instant::now()),
        }
    }

    /// Waits for this call's turn.
    pub async fn turn(&self) {
        let mut next = self.next.lock().await;
        tokio::time::sleep_until(*next).await;
        *next = tokio::time::Instant::now() + self.interval;
    }
}

/// Where in a chat a card goes: as a reply to a message on Telegram, in the thread a
/// message starts on Slack. Delivery decides it per subject (its home message, or its
/// parent's card); a platform without threads may ignore it.
use crate::subject::Thread;

/// Why a chat call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendError {
    /// The server asked us to wait (429 with retry_after).
    RetryAfter(Duration),
    /// The server refused for now (5xx), or could not be reached: nothing happened.
    Transient(String),
    /// The call may or may not have taken effect (the connection broke after sending,
    /// or gatebot stopped waiting).
    Unknown(String),
    /// Retrying will not help (chat not found, message deleted, bad token).
    Permanent(String),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::RetryAfter(d) => write!(f, "rate limited; retry after {d:?}"),
            SendError::Transient(e) => write!(f, "temporary failure: {e}"),
            SendError::Unknown(e) => write!(f, "outcome unknown: {e}"),
            SendError::Permanent(e) => write!(f, "failed: {e}"),
        }
    }
}

impl std::error::Error for SendError {}

impl SendError {
    /// How long to wait before trying again, for a caller who tries `attempts` times
    /// and waits at most `max_wait`: a server's `retry_after`, or backoff after a
    /// temporary failure. `None`: give up.
    #[must_use]
    pub fn retry_in(&self, attempt: u32, attempts: u32, max_wait: Duration) -> Option<Duration> {
        if attempt + 1 >= attempts {
            return None;
        }
        match self {
            SendError::RetryAfter(d) if *d <= max_wait => Some(*d),
            SendError::Transient(_) => Some(crate::retry::backoff(attempt).min(max_wait)),
            _ => None,
        }
    }
}

/// A chat platform's outbound side: what delivery needs.
pub trait Platform: Send + Sync + 'static {
    /// The platform's key (the `platform` column of chat bookkeeping).
    fn id(&self) -> PlatformId;
    /// Where cards go, who decides, when a burst becomes a digest: by default the
    /// platform's table in the config in force, so a reload applies.
    fn settings(&self, config: &Config) -> ChatSettings {
        config.chat(&self.id()).cloned().unwrap_or_default()
    }
    /// The least time between two calls that post or edit in `chat`.
    fn pace(&self, chat: &str) -> Duration;
    /// Posts a card, in `thread` if given (Telegram: a reply to `reply_to`; Slack: in
    /// the thread `root` starts); returns the new message's id.
    fn post(
        &self,
        chat: &str,
        card: &Card,
        thread: Option<&Thread>,
    ) -> impl Future<Output = Result<String, SendError>> + Send;
    /// Replaces what `message` shows with `card`. Showing it already is success.
    fn edit(
        &self,
        chat: &str,
        message: &str,
        card: &Card,
    ) -> impl Future<Output = Result<(), SendError>> + Send;
    /// What `message` in `chat` says, if it is one of the bot's own messages; `None`
    /// for someone else's. Asked only for a message a reply went to that gatebot has
    /// no record of, where the platform did not send its text along (Slack's thread
    /// parent). By default a platform cannot read messages back: `None`.
    fn read(
        &self,
        _chat: &str,
        _message: &str,
    ) -> impl Future<Output = Result<Option<String>, SendError>> + Send {
        async { Ok(None) }
    }
}

/// Reads a platform's messages back ([`Platform::read`]) for the inbound layer,
/// whatever the platform.
pub trait ReadBack: Send + Sync {
    fn read_back<'a>(
        &'a self,
        chat: &'a str,
        message: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, SendError>>;
}

impl<P: Platform> ReadBack for P {
    fn read_back<'a>(
        &'a self,
        chat: &'a str,
        message: &'a str,
    ) -> BoxFuture<'a, Result<Option<String>, SendError>> {
        Box::pin(self.read(chat, message))
    }
}

/// Starts a chat platform: given the engine and the shutdown token, the future that
/// runs it until shutdown.
pub type PlatformRun =
    Box<dyn Fn(Arc<Engine>, CancellationToken) -> BoxFuture<'static, ()> + Send + Sync>;

/// The listener for a platform's webhooks (Slack's HTTP mode, SMS gateways) on
/// `listen`: bound, or tried again with backoff while the address is taken, until
/// `stop` (then `None`). `platform` names it in the log.
pub async fn webhook_listener(
    platform: &str,
    listen: &str,
    stop: &CancellationToken,
) -> Option<tokio::net::TcpListener> {
    let mut failures = 0;
    loop {
        match tokio::net::TcpListener::bind(listen).await {
            Ok(l) => {
                tracing::info!(platform, listen, "listening for the platform's webhooks");
                return Some(l);
            }
            Err(e) => {
                let wait = crate::retry::backoff(failures);
                failures += 1;
                tracing::warn!(
                    platform, listen, error = %e, retry_in = ?wait,
                    "cannot listen for the platform's webhooks; will retry"
                );
                tokio::select! {
                    _ = stop.cancelled() => return None,
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::Pacer;

    /// Calls from several chats at once take their turns one interval apart, in the
    /// order they asked; the first at once.
    #[tokio::test(start_paused = true)]
    async fn a_pacer_spaces_calls_from_every_caller_by_its_interval() {
        let pacer = Arc::new(Pacer::new(Duration::from_millis(1250)));
        let start = tokio::time::Instant::now();
        let turns = (0..4).map(|_| {
            let pacer = pacer.clone();
            tokio::spawn(async move {
                pacer.turn().await;
                start.elapsed()
            })
        });
        let mut at: Vec<Duration> = Vec::new();
        for t in turns {
            at.push(t.await.unwrap());
        }
        at.sort();
        let ms: Vec<u128> = at.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, [0, 1250, 2500, 3750]);
        // After a quiet spell, the next call goes at once.
        tokio::time::sleep(Duration::from_secs(10)).await;
        let before = tokio::time::Instant::now();
        pacer.turn().await;
        assert_eq!(before.elapsed(), Duration::ZERO);
    }
}
