//! Delivering prompts and their final edits to a chat channel, durably.
//!
//! For each request the driver makes the chat match the database:
//! 1. a pending request gets one prompt in each destination chat that has none yet;
//! 2. a settled request gets each of its prompts edited to show the outcome (buttons
//!    removed) until the prompt records that status.
//!
//! Prompt messages are recorded in SQLite (`prompts`) as soon as they are posted, so a
//! restart neither loses edits nor posts twice. Work is driven by engine events and, at
//! start and whenever events were missed, by a scan of what is out of date. Failed
//! calls are retried with backoff (or after the server's `retry_after`), per request,
//! without holding up the others. One gap remains: if the process dies between a
//! successful post and its record, that one prompt is posted again after the restart.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::approval::{now_ms, Approval, Channel, Status};
use crate::engine::{Engine, EngineError, Event};

/// Why a chat call failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendError {
    /// The server asked us to wait (429 with retry_after).
    RetryAfter(Duration),
    /// A network error or 5xx: retry with backoff.
    Transient(String),
    /// Retrying will not help (chat not found, message deleted, bad token).
    Permanent(String),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::RetryAfter(d) => write!(f, "rate limited; retry after {d:?}"),
            SendError::Transient(e) => write!(f, "temporary failure: {e}"),
            SendError::Permanent(e) => write!(f, "failed: {e}"),
        }
    }
}

/// A chat channel's side of delivery.
pub trait ChatSender: Send + Sync + 'static {
    /// Which channel this is (the `prompts.channel` column).
    fn channel(&self) -> Channel;
    /// Where prompts go.
    fn destinations(&self) -> Vec<String>;
    /// Posts a prompt for a pending request; returns the message's id.
    fn post(
        &self,
        chat: &str,
        approval: &Approval,
    ) -> impl Future<Output = Result<String, SendError>> + Send;
    /// Edits a prompt to show the request's current (settled) state, without buttons.
    fn finalize(
        &self,
        chat: &str,
        message: &str,
        approval: &Approval,
    ) -> impl Future<Output = Result<(), SendError>> + Send;
}

/// Backoff for transient failures: 1 s, 2 s, 4 s … capped at 60 s.
#[must_use]
pub fn backoff(attempt: u32) -> Duration {
    Duration::from_secs(1u64 << attempt.min(6)).min(Duration::from_secs(60))
}

/// Runs delivery for one channel until `stop` fires.
pub async fn run<S: ChatSender>(engine: Arc<Engine>, sender: Arc<S>, stop: CancellationToken) {
    let channel = sender.channel();
    let mut events = engine.subscribe();
    let (retry_tx, mut retry_rx) = mpsc::unbounded_channel::<String>();
    let mut attempts: HashMap<String, u32> = HashMap::new();
    let mut queue: Vec<String> = scan(&engine, channel).await;
    loop {
        while let Some(id) = queue.pop() {
            if stop.is_cancelled() {
                return;
            }
            match sync(&engine, sender.as_ref(), &id).await {
                Ok(()) => {
                    attempts.remove(&id);
                }
                Err(e) => {
                    engine
                        .metrics
                        .chat_error(channel, matches!(e, SendError::RetryAfter(_)));
                    let n = attempts.entry(id.clone()).or_insert(0);
                    *n += 1;
                    let wait = match &e {
                        SendError::RetryAfter(d) => *d,
                        _ => backoff(*n - 1),
                    };
                    warn!(channel = channel.as_str(), id = %id, attempt = *n, error = %e, retry_in = ?wait, "chat delivery failed; will retry");
                    let tx = retry_tx.clone();
                    let stop = stop.clone();
                    tokio::spawn(async move {
                        tokio::select! {
                            _ = stop.cancelled() => {}
                            _ = tokio::time::sleep(wait) => { let _ = tx.send(id); }
                        }
                    });
                }
            }
        }
        tokio::select! {
            _ = stop.cancelled() => return,
            Some(id) = retry_rx.recv() => queue.push(id),
            ev = events.recv() => match ev {
                Ok(Event::Submitted(a)) if a.status == Status::Pending => queue.push(a.id.clone()),
                Ok(Event::Submitted(_)) => {}
                Ok(Event::Settled(a)) => queue.push(a.id.clone()),
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    info!(channel = channel.as_str(), missed = n, "event stream lagged; rescanning");
                    queue.extend(scan(&engine, channel).await);
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
        }
    }
}

/// Requests whose prompts on this channel may be out of date.
async fn scan(engine: &Engine, channel: Channel) -> Vec<String> {
    match engine.blocking(move |s| s.prompts_to_sync(channel)).await {
        Ok(mut ids) => {
            // `run` pops from the back: keep the oldest first.
            ids.reverse();
            ids
        }
        Err(e) => {
            warn!(channel = channel.as_str(), error = %e, "cannot scan prompts");
            Vec::new()
        }
    }
}

/// Makes every prompt of one request match its current state.
async fn sync<S: ChatSender>(engine: &Engine, sender: &S, id: &str) -> Result<(), SendError> {
    let channel = sender.channel();
    let db = |e: EngineError| SendError::Transient(format!("database: {e}"));
    let approval = engine.get(id).await.map_err(db)?;
    let owned = id.to_string();
    let prompts = engine
        .blocking(move |s| s.prompts_for(&owned, channel))
        .await
        .map_err(db)?;
    if approval.status == Status::Pending {
        for chat in sender.destinations() {
            if prompts.iter().any(|p| p.chat == chat) {
                continue;
            }
            match sender.post(&chat, &approval).await {
                Ok(message) => {
                    debug!(channel = channel.as_str(), id, chat = %chat, message = %message, "prompt posted");
                    let (i, c) = (id.to_string(), chat.clone());
                    engine
                        .blocking(move |s| s.record_prompt(&i, channel, &c, &message, now_ms()))
                        .await
                        .map_err(db)?;
                }
                Err(SendError::Permanent(e)) => {
                    warn!(channel = channel.as_str(), id, chat = %chat, error = %e, "cannot post the prompt to this chat; giving up on it");
                }
                Err(e) => return Err(e),
            }
        }
        return Ok(());
    }
    for p in prompts {
        if p.final_status == Some(approval.status) {
            continue;
        }
        match sender.finalize(&p.chat, &p.message, &approval).await {
            Ok(()) => {}
            Err(SendError::Permanent(e)) => {
                warn!(channel = channel.as_str(), id, chat = %p.chat, error = %e, "cannot edit the prompt; leaving it");
            }
            Err(e) => return Err(e),
        }
        let (i, c, st) = (id.to_string(), p.chat.clone(), approval.status);
        engine
            .blocking(move |s| s.record_prompt_final(&i, channel, &c, st))
            .await
            .map_err(db)?;
    }
    Ok(())
}
