//! Delivering prompts, digests and their edits to a chat channel, durably.
//!
//! One worker per destination chat makes that chat match the database:
//! 1. pending requests without a message there get one: their own prompt, or, when
//!    more than the channel's `digest_after` are waiting at once, one digest for all
//!    of them (see [`digest`](crate::channel::digest));
//! 2. messages of settled requests are edited to show the outcome (buttons removed),
//!    and digests move on to the next pending request or close;
//! 3. digests an approver navigated are drawn again ([`Event::Redraw`]).
//!
//! A worker makes one call per pass, the most urgent first (a digest for a burst, a
//! prompt, an edit, a digest drawn again), and weighs what arrived meanwhile before
//! the next. Calls in one chat are spaced by the channel's pace, and a failure holds
//! up only that chat: it waits out the server's `retry_after` or backs off (1 s, 2 s, 4 s …
//! up to a minute), then retries whatever is still out of date. Work is driven by
//! engine events and, at start and whenever events were missed, by a scan of the
//! database, so a restart neither loses an edit nor posts a prompt twice.
//!
//! Each post is recorded before it starts ([`Store::begin_post`]) and completed when
//! the platform answers. If gatebot dies mid-call or the answer is lost, the outcome
//! is unknown: the prompt is posted again (a request must stay reachable) and a
//! `prompt_reposted` audit row says it may show twice. Chat APIs have no idempotency
//! keys, so that window — one call per chat — cannot be closed from our side.
//!
//! [`Store::begin_post`]: crate::store::Store::begin_post

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::{broadcast, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};

use crate::approval::{Approval, Channel, Status};
use crate::channel::digest::DigestView;
use crate::engine::{Engine, EngineError, Event};
use crate::store::PromptKind;
use crate::time::now_ms;

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

/// A chat channel's side of delivery.
pub trait ChatSender: Send + Sync + 'static {
    /// Which channel this is (the `prompts.channel` column).
    fn channel(&self) -> Channel;
    /// Where prompts go.
    fn destinations(&self) -> Vec<String>;
    /// The least time between two calls that post or edit in `chat`.
    fn pace(&self, chat: &str) -> Duration;
    /// More requests than this waiting for a prompt in one chat get one digest instead.
    fn digest_after(&self) -> usize;
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
    /// Posts a new digest message; returns its id.
    fn post_digest(
        &self,
        chat: &str,
        view: &DigestView,
    ) -> impl Future<Output = Result<String, SendError>> + Send;
    /// Draws a digest message again.
    fn show_digest(
        &self,
        chat: &str,
        message: &str,
        view: &DigestView,
    ) -> impl Future<Output = Result<(), SendError>> + Send;
}

/// A store failure, retried like a temporary failure of the chat API.
fn database(e: EngineError) -> SendError {
    SendError::Transient(format!("database: {e}"))
}

/// Backoff for transient failures: 1 s, 2 s, 4 s … capped at 60 s.
#[must_use]
pub fn backoff(attempt: u32) -> Duration {
    Duration::from_secs(1u64 << attempt.min(6)).min(Duration::from_secs(60))
}

/// How long a call already under way may finish after shutdown begins.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Work for one chat's worker.
#[derive(Debug)]
enum Work {
    /// A request changed (submitted pending, or settled).
    Request(String),
    /// A digest message must be drawn again.
    Digest(String),
    /// Look for everything out of date (start, missed events).
    Rescan,
}

/// Runs delivery for one channel until `stop` fires; calls under way get a short
/// grace to finish, so a prompt is not cut off mid-post at shutdown.
pub async fn run<S: ChatSender>(engine: Arc<Engine>, sender: Arc<S>, stop: CancellationToken) {
    let channel = sender.channel();
    // Subscribe before the workers scan, so nothing falls between scan and events.
    let mut events = engine.subscribe();
    let tasks = TaskTracker::new();
    let mut workers: HashMap<String, mpsc::UnboundedSender<Work>> = HashMap::new();
    for chat in sender.destinations() {
        let (tx, rx) = mpsc::unbounded_channel();
        let _ = tx.send(Work::Rescan);
        let worker = ChatWorker::new(engine.clone(), sender.clone(), chat.clone());
        tasks.spawn(worker.run(rx, stop.clone()));
        workers.insert(chat, tx);
    }
    let all = |make: &dyn Fn() -> Work| {
        for tx in workers.values() {
            let _ = tx.send(make());
        }
    };
    loop {
        let ev = tokio::select! {
            _ = stop.cancelled() => break,
            ev = events.recv() => ev,
        };
        match ev {
            Ok(Event::Submitted(a)) if a.status == Status::Pending => {
                all(&|| Work::Request(a.id.clone()));
            }
            Ok(Event::Submitted(_)) => {}
            Ok(Event::Settled(a)) => all(&|| Work::Request(a.id.clone())),
            Ok(Event::Redraw {
                channel: c,
                chat,
                message,
            }) if c == channel => {
                if let Some(tx) = workers.get(&chat) {
                    let _ = tx.send(Work::Digest(message));
                }
            }
            Ok(Event::Redraw { .. }) => {}
            Err(broadcast::error::RecvError::Lagged(n)) => {
                info!(
                    channel = channel.as_str(),
                    missed = n,
                    "event stream lagged; rescanning"
                );
                all(&|| Work::Rescan);
            }
            Err(broadcast::error::RecvError::Closed) => break,
        }
    }
    drop(workers);
    tasks.close();
    tasks.wait().await;
}

/// Keeps one chat up to date.
struct ChatWorker<S> {
    engine: Arc<Engine>,
    sender: Arc<S>,
    channel: Channel,
    chat: String,
    /// Requests that may need a post or an edit here.
    requests: BTreeSet<String>,
    /// Digest messages to draw again.
    digests: BTreeSet<String>,
    rescan: bool,
    /// When the last call started, for pacing.
    last_call: Option<Instant>,
    /// No calls before this (a 429's retry_after, or backoff after failures).
    hold_until: Option<Instant>,
    failures: u32,
}

impl<S: ChatSender> ChatWorker<S> {
    fn new(engine: Arc<Engine>, sender: Arc<S>, chat: String) -> Self {
        ChatWorker {
            channel: sender.channel(),
            engine,
            sender,
            chat,
            requests: BTreeSet::new(),
            digests: BTreeSet::new(),
            rescan: false,
            last_call: None,
            hold_until: None,
            failures: 0,
        }
    }

    fn take(&mut self, work: Work) {
        match work {
            Work::Request(id) => {
                self.requests.insert(id);
            }
            Work::Digest(m) => {
                self.digests.insert(m);
            }
            Work::Rescan => self.rescan = true,
        }
    }

    fn idle(&self) -> bool {
        self.requests.is_empty() && self.digests.is_empty() && !self.rescan
    }

    /// When the next call may start.
    fn next_slot(&self) -> Instant {
        let paced = self
            .last_call
            .map_or_else(Instant::now, |t| t + self.sender.pace(&self.chat));
        self.hold_until.map_or(paced, |h| h.max(paced))
    }

    async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Work>, stop: CancellationToken) {
        loop {
            if self.idle() {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    w = rx.recv() => match w {
                        Some(w) => self.take(w),
                        None => return,
                    },
                }
            }
            // Wait for our turn, gathering what else arrives: a burst becomes one pass.
            let ready = self.next_slot();
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep_until(ready) => break,
                    w = rx.recv() => match w {
                        Some(w) => self.take(w),
                        None => return,
                    },
                }
            }
            while let Ok(w) = rx.try_recv() {
                self.take(w);
            }
            match self.pass(&stop).await {
                Ok(()) => {
                    self.failures = 0;
                    self.hold_until = None;
                }
                Err(e) => {
                    if stop.is_cancelled() {
                        return;
                    }
                    self.engine
                        .metrics
                        .chat_error(self.channel, matches!(e, SendError::RetryAfter(_)));
                    let wait = match &e {
                        SendError::RetryAfter(d) => *d,
                        _ => backoff(self.failures),
                    };
                    self.failures += 1;
                    warn!(
                        channel = self.channel.as_str(), chat = %self.chat,
                        attempt = self.failures, error = %e, retry_in = ?wait,
                        "chat delivery failed; will retry"
                    );
                    self.hold_until = Some(Instant::now() + wait);
                }
            }
        }
    }

    /// One call to the platform: paced, and cut off only after a grace at shutdown.
    async fn call<T>(
        &mut self,
        stop: &CancellationToken,
        f: impl Future<Output = Result<T, SendError>>,
    ) -> Result<T, SendError> {
        let slot = self.next_slot();
        tokio::select! {
            _ = stop.cancelled() => return Err(SendError::Transient("shutting down".into())),
            _ = tokio::time::sleep_until(slot) => {}
        }
        self.last_call = Some(Instant::now());
        let grace = async {
            stop.cancelled().await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        };
        tokio::select! {
            r = f => r,
            _ = grace => Err(SendError::Unknown("gatebot stopped while the call was under way".into())),
        }
    }

    async fn db<T, F>(&self, f: F) -> Result<T, SendError>
    where
        T: Send + 'static,
        F: FnOnce(&crate::store::Store) -> Result<T, crate::store::StoreError> + Send + 'static,
    {
        self.engine.blocking(f).await.map_err(database)
    }

    async fn approval(&self, id: &str) -> Result<Approval, SendError> {
        self.engine.get(id).await.map_err(database)
    }

    /// Makes the most urgent call the chat needs, if any: a digest for a burst, else
    /// one prompt, else one edit, else one digest drawn again. One call per pass, so
    /// what arrives while a call is paced is weighed before the next (a burst that
    /// builds up behind a single prompt still becomes a digest). On error, the work
    /// stays queued for the next pass.
    async fn pass(&mut self, stop: &CancellationToken) -> Result<(), SendError> {
        let (channel, chat) = (self.channel, self.chat.clone());
        if self.rescan {
            let c = chat.clone();
            let backlog = self.db(move |s| s.chat_backlog(channel, &c)).await?;
            self.requests.extend(backlog);
            self.rescan = false;
        }
        let ids: Vec<String> = self.requests.iter().cloned().collect();
        let (c, i) = (chat.clone(), ids.clone());
        let unprompted = self.db(move |s| s.unprompted(channel, &c, &i)).await?;
        let (c, i) = (chat.clone(), ids);
        let stale = self.db(move |s| s.stale_prompts(channel, &c, &i)).await?;
        // Forget what needs nothing more here.
        let needed: BTreeSet<&str> = unprompted
            .iter()
            .map(|(id, _)| id.as_str())
            .chain(stale.iter().map(|p| p.approval_id.as_str()))
            .collect();
        self.requests.retain(|id| needed.contains(id.as_str()));

        // 1. Posts: a burst as one digest, else the oldest waiting request.
        if unprompted.len() > self.sender.digest_after() {
            self.post_digest(stop, &unprompted).await?;
            for (id, _) in &unprompted {
                self.requests.remove(id);
            }
            return Ok(());
        }
        if let Some((id, unknown)) = unprompted.first() {
            return self.post_prompt(stop, id, *unknown).await;
        }

        // 2. Edits. Requests shown by a digest need no call of their own: their digest
        // is drawn again (below) once they are marked.
        let mut edit = None;
        for p in stale {
            if p.kind == PromptKind::Digest {
                let id = p.approval_id.clone();
                let status = self.approval(&id).await?.status;
                let c = chat.clone();
                self.db(move |s| s.record_prompt_final(&id, channel, &c, status))
                    .await?;
                self.digests.insert(p.message);
                self.requests.remove(&p.approval_id);
            } else if edit.is_none() {
                edit = Some(p);
            }
        }
        if let Some(p) = edit {
            let id = p.approval_id.clone();
            let approval = self.approval(&id).await?;
            let sender = self.sender.clone();
            let (c, m, a) = (chat.clone(), p.message.clone(), approval.clone());
            match self
                .call(stop, async move { sender.finalize(&c, &m, &a).await })
                .await
            {
                Ok(()) => {}
                Err(SendError::Permanent(e)) => {
                    warn!(channel = channel.as_str(), id = %id, chat = %chat, error = %e, "cannot edit the prompt; leaving it");
                }
                Err(e) => return Err(e),
            }
            let (c, st) = (chat.clone(), approval.status);
            self.db(move |s| s.record_prompt_final(&id, channel, &c, st))
                .await?;
            return Ok(());
        }

        // 3. Digests.
        if let Some(message) = self.digests.pop_first() {
            if let Err(e) = self.draw_digest(stop, &message).await {
                self.digests.insert(message);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Posts one request's prompt.
    async fn post_prompt(
        &mut self,
        stop: &CancellationToken,
        id: &str,
        unknown_before: bool,
    ) -> Result<(), SendError> {
        let approval = self.approval(id).await?;
        if approval.status != Status::Pending {
            return Ok(());
        }
        let ids = vec![id.to_string()];
        self.post(stop, &ids, PromptKind::Prompt, unknown_before, {
            let sender = self.sender.clone();
            let chat = self.chat.clone();
            async move { sender.post(&chat, &approval).await }
        })
        .await
    }

    /// Posts one digest for `waiting` (all pending, none shown here yet).
    async fn post_digest(
        &mut self,
        stop: &CancellationToken,
        waiting: &[(String, bool)],
    ) -> Result<(), SendError> {
        let ids: Vec<String> = waiting.iter().map(|(id, _)| id.clone()).collect();
        let unknown = waiting.iter().any(|(_, u)| *u);
        let i = ids.clone();
        let summary = self.db(move |s| s.summarize(&i)).await?;
        info!(
            channel = self.channel.as_str(), chat = %self.chat, requests = ids.len(),
            "posting a digest instead of one prompt per request"
        );
        let view = DigestView::Summary(summary);
        self.post(stop, &ids, PromptKind::Digest, unknown, {
            let sender = self.sender.clone();
            let chat = self.chat.clone();
            async move { sender.post_digest(&chat, &view).await }
        })
        .await
    }

    /// Records the post's intent, makes the call, and records what happened.
    async fn post(
        &mut self,
        stop: &CancellationToken,
        ids: &[String],
        kind: PromptKind,
        unknown_before: bool,
        call: impl Future<Output = Result<String, SendError>>,
    ) -> Result<(), SendError> {
        let (channel, chat) = (self.channel, self.chat.clone());
        if unknown_before {
            warn!(channel = channel.as_str(), chat = %chat, requests = ids.len(), "an earlier post's outcome is unknown; posting again (it may show twice)");
            let (c, i) = (chat.clone(), ids.to_vec());
            self.db(move |s| {
                let detail = json!({
                    "chat": c,
                    "why": "the outcome of an earlier post is unknown (gatebot stopped, or the answer was lost); the prompt may show twice",
                });
                for id in &i {
                    s.audit(now_ms(), Some(id), "prompt_reposted", None, Some(channel), &detail)?;
                }
                Ok(())
            })
            .await?;
        }
        let (c, i) = (chat.clone(), ids.to_vec());
        self.db(move |s| s.begin_post(channel, &c, &i, kind, now_ms()))
            .await?;
        match self.call(stop, call).await {
            Ok(message) => {
                self.engine
                    .metrics
                    .chat_posted(channel, kind == PromptKind::Digest);
                debug!(channel = channel.as_str(), chat = %chat, message = %message, requests = ids.len(), "posted");
                // The message exists now: keep trying to record it, or it is orphaned.
                let mut attempt = 0;
                loop {
                    let (c, i, m) = (chat.clone(), ids.to_vec(), message.clone());
                    match self
                        .db(move |s| s.finish_post(channel, &c, &i, kind, &m, now_ms()))
                        .await
                    {
                        Ok(()) => return Ok(()),
                        Err(e) if attempt < 5 => {
                            warn!(error = %e, "cannot record a posted message yet; retrying");
                            attempt += 1;
                            tokio::time::sleep(backoff(attempt)).await;
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
            Err(SendError::Unknown(e)) => Err(SendError::Unknown(e)),
            Err(e) => {
                let (c, i) = (chat.clone(), ids.to_vec());
                self.db(move |s| s.abandon_post(channel, &c, &i)).await?;
                match e {
                    SendError::Permanent(e) => {
                        warn!(channel = channel.as_str(), chat = %chat, error = %e, "cannot post to this chat; giving up until restart");
                        for id in ids {
                            self.requests.remove(id);
                        }
                        Ok(())
                    }
                    other => Err(other),
                }
            }
        }
    }

    /// Draws a digest from its stored state (moving on or closing as needed).
    async fn draw_digest(
        &mut self,
        stop: &CancellationToken,
        message: &str,
    ) -> Result<(), SendError> {
        let (channel, chat) = (self.channel, self.chat.clone());
        let (c, m) = (chat.clone(), message.to_string());
        let Some((view, changed)) = self
            .db(move |s| DigestView::load(s, channel, &c, &m))
            .await?
        else {
            return Ok(());
        };
        let was_closed = matches!(view, DigestView::Closed(_)) && changed.is_none();
        if was_closed {
            return Ok(());
        }
        let sender = self.sender.clone();
        let (c, m, v) = (chat.clone(), message.to_string(), view.clone());
        match self
            .call(stop, async move { sender.show_digest(&c, &m, &v).await })
            .await
        {
            Ok(()) => {}
            Err(SendError::Permanent(e)) => {
                warn!(channel = channel.as_str(), chat = %chat, message, error = %e, "cannot draw the digest; leaving it");
            }
            Err(e) => return Err(e),
        }
        if let Some(state) = changed {
            let (c, m) = (chat.clone(), message.to_string());
            self.db(move |s| s.set_digest(channel, &c, &m, &state))
                .await?;
        }
        Ok(())
    }
}
