//! Delivering cards to a platform's chats, durably, for every conversation kind.
//!
//! One worker per chat makes that chat match the database. The chats are the
//! platform's destinations in the config in force (a reload that adds one starts its
//! worker), where every subject without a home is shown, and the home chats of
//! subjects that have one (a task written in a chat is shown there only; see
//! `store::chat`'s `Home`):
//! 1. open subjects without a message there get one: their own card, or, when more
//!    requests than the platform's `digest_after` wait at once, one digest for all of
//!    them (see [`crate::chat::conversation::digest`]). A card goes in its thread: as
//!    a reply to its home message, or under its parent's card (a task's question, a
//!    request the task's agent made) when the parent is shown in that chat;
//! 2. messages whose subject changed since they were drawn are edited to show it now
//!    (a settled request loses its buttons and shows its outcome), and digests move on
//!    to the next pending request or close;
//! 3. messages the conversations ask for ([`Handle::redraw`]: a digest an approver
//!    navigated) are drawn again;
//! 4. reminders of routed requests (docs/teams.md), written by the approval rules'
//!    timers, are posted as replies to the request's card there, calling on the people
//!    asked there who have not voted. Each is taken from the database before its post
//!    starts, so a restart never posts one twice (one in flight is lost, not repeated);
//!    one the platform refused without posting (429, unreachable) is put back;
//! 5. notices ([`Event::Notice`]: a budget's warning) are posted in each destination
//!    chat before anything else, retried like a card; they are not recorded, so one
//!    in flight when gatebot stops is not posted again.
//!
//! A worker makes one call per pass, the most urgent first (a digest for a burst, a
//! card, a reminder, an edit, a redraw), and weighs what arrived meanwhile before the next. Calls
//! in one chat are spaced by the platform's pace, and a failure holds up only that
//! chat: it waits out the server's `retry_after` or backs off (1 s, 2 s, 4 s … up to a
//! minute), then retries whatever is still out of date. Work is driven by engine events
//! and, at start and whenever events were missed, by a scan of the database, so a
//! restart neither loses an edit nor posts a card twice.
//!
//! Each post is recorded before it starts and completed when the platform answers. If
//! gatebot dies mid-call or the answer is lost, the outcome is unknown: the card is
//! posted again (a request must stay reachable) and a `prompt_reposted` audit row says
//! it may show twice. Chat APIs have no idempotency keys, so that window — one call per
//! chat — cannot be closed from our side; but a person can close it: a reply or press
//! on the message while its post is in flight makes it the post's message
//! ([`crate::engine::ChatState::adopt`], from [`crate::chat::inbound`]), and the
//! platform's answer, if it comes, then records nothing more.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};

use crate::approval::votes::Reminder;
use crate::approval::Approval;
use crate::chat::conversation::{self, approval, digest, Rendered};
use crate::chat::platform::{Platform, SendError};
use crate::chat::Context;
use crate::engine::cluster::Lead;
use crate::engine::{ChatWork, Engine, EngineError, Event};
use crate::retry::backoff;
use crate::subject::{ShownBy, SubjectKind, Unposted};

/// A store failure, retried like a temporary failure of the chat API.
/// Records a post whose message now exists: `record` (how many of its `shown` subjects it
/// tied to the message) is tried again, backing off, or the message is orphaned. Subjects a
/// reply or press had already tied to a message of the post are said in the log.
async fn record_posted<F, Fut>(
    platform: &crate::approval::PlatformId,
    chat: &str,
    message: &str,
    shown: usize,
    mut record: F,
) -> Result<(), SendError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<usize, EngineError>>,
{
    let mut attempt = 0;
    loop {
        match record().await {
            Ok(recorded) => {
                if recorded < shown {
                    info!(
                        platform = %platform, chat = %chat, message = %message,
                        subjects = shown - recorded,
                        "posted; a reply or press had already tied the subjects to their message"
                    );
                }
                return Ok(());
            }
            Err(e) if attempt < 5 => {
                warn!(error = %e, "cannot record a posted message yet; retrying");
                attempt += 1;
                tokio::time::sleep(backoff(attempt)).await;
            }
            Err(e) => return Err(database(e)),
        }
    }
}

fn database(e: EngineError) -> SendError {
    SendError::Transient(format!("database: {e}"))
}

/// How long a call already under way may finish after shutdown begins.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Asks a platform's delivery to draw messages again.
#[derive(Debug, Clone)]
pub struct Handle {
    tx: mpsc::UnboundedSender<(String, String)>,
}

impl Handle {
    /// Draws `message` in `chat` again from the database (a digest whose view changed,
    /// a card whose buttons a platform put back).
    pub fn redraw(&self, chat: &str, message: &str) {
        let _ = self.tx.send((chat.to_string(), message.to_string()));
    }
}

/// Work for one chat's worker.
#[derive(Debug)]
enum Work {
    /// A subject changed (settled, or of another kind).
    Subject(String),
    /// A request was submitted and asks a human: the event's request, from which its
    /// first card is drawn without reading it back.
    Submitted(Arc<Approval>),
    /// A message must be drawn again.
    Redraw(String),
    /// Words for the owners, posted once (a budget's warning).
    Notice(Arc<str>),
    /// Look for everything out of date (start, missed events).
    Rescan,
}

/// Starts delivery for `platform`: returns the handle conversations use to ask for
/// redraws, and the future that delivers until `stop` fires (calls under way get a
/// short grace to finish, so a card is not cut off mid-post at shutdown).
pub fn start<P: Platform>(
    engine: Arc<Engine>,
    platform: Arc<P>,
    stop: CancellationToken,
) -> (Handle, impl Future<Output = ()>) {
    let (tx, redraws) = mpsc::unbounded_channel();
    let handle = Handle { tx };
    let cx = Context {
        engine,
        platform: platform.id(),
        delivery: handle.clone(),
        bot_username: None,
        reader: platform.clone(),
    };
    (handle, run(cx, platform, redraws, stop))
}

async fn run<P: Platform>(
    cx: Context,
    platform: Arc<P>,
    mut redraws: mpsc::UnboundedReceiver<(String, String)>,
    stop: CancellationToken,
) {
    let mut lead = cx.engine.node.watch_lead();
    loop {
        if lead.borrow_and_update().is_none() {
            stand_by(&cx, &platform, &mut redraws, &mut lead, &stop).await;
        }
        if stop.is_cancelled() {
            return;
        }
        deliver(&cx, &platform, &mut redraws, &mut lead, stop.child_token()).await;
        if stop.is_cancelled() {
            return;
        }
    }
}

/// While another node leads (it delivers): draws again only what this node's
/// conversations ask for (a digest whose page an approver turned with a press that came
/// to this node), paced per chat like delivery's calls. Returns when this node leads,
/// or at `stop`.
async fn stand_by<P: Platform>(
    cx: &Context,
    platform: &Arc<P>,
    redraws: &mut mpsc::UnboundedReceiver<(String, String)>,
    lead: &mut watch::Receiver<Option<Lead>>,
    stop: &CancellationToken,
) {
    let mut chats: HashMap<String, ChatWorker<P>> = HashMap::new();
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            changed = lead.changed() => {
                if changed.is_err() {
                    stop.cancelled().await;
                    return;
                }
                if lead.borrow_and_update().is_some() {
                    return;
                }
            }
            Some((chat, message)) = redraws.recv() => {
                let worker = chats.entry(chat.clone()).or_insert_with(|| {
                    ChatWorker::new(cx.clone(), platform.clone(), chat.clone())
                });
                if let Err(e) = worker.redraw(stop, &message).await {
                    warn!(
                        platform = %cx.platform, chat = %chat, message, error = %e,
                        "cannot draw a message again from this node; the next change to it will"
                    );
                }
            }
        }
    }
}

/// While this node leads: makes every chat match the database, until `term` or until
/// this node no longer leads.
async fn deliver<P: Platform>(
    cx: &Context,
    platform: &Arc<P>,
    redraws: &mut mpsc::UnboundedReceiver<(String, String)>,
    lead: &mut watch::Receiver<Option<Lead>>,
    stop: CancellationToken,
) {
    // Subscribe before the workers scan, so nothing falls between scan and events.
    let mut events = cx.engine.subscribe();
    let mut config = cx.engine.watch_config();
    let mut workers = Workers {
        cx: cx.clone(),
        platform: platform.clone(),
        stop: stop.clone(),
        tasks: TaskTracker::new(),
        chats: HashMap::new(),
    };
    workers.follow(&platform.settings(&config.borrow_and_update()).destinations);
    // Chats that are no destination but home to subjects that need work there (a task
    // written in an approver's private chat).
    match cx.engine.chat().home_chats(&cx.platform).await {
        Ok(chats) => {
            for chat in chats {
                workers.home(chat);
            }
        }
        Err(e) => {
            warn!(platform = %cx.platform, error = %e, "cannot read the chats subjects live in")
        }
    }
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            changed = lead.changed() => {
                if changed.is_err() || lead.borrow_and_update().is_none() {
                    break;
                }
            }
            Some((chat, message)) = redraws.recv() => {
                if let Some(tx) = workers.chats.get(&chat) {
                    let _ = tx.send(Work::Redraw(message));
                }
            }
            changed = config.changed() => {
                if changed.is_err() {
                    break;
                }
                let destinations = platform.settings(&config.borrow_and_update()).destinations;
                workers.follow(&destinations);
            }
            ev = events.recv() => match ev {
                Ok(Event::Notice(text)) => {
                    let destinations = platform.settings(&config.borrow()).destinations;
                    workers.notice(&destinations, &text);
                }
                Ok(ev) => {
                    let Some(id) = ev.subject() else { continue };
                    // A subject at home in a chat (or shown to a routed request's
                    // people there) without a worker gets one there.
                    let homed = match &ev {
                        Event::Subject(_) => true,
                        other => other
                            .approval()
                            .is_some_and(|a| a.task_id.is_some() || a.route.is_some()),
                    };
                    if homed {
                        if let Ok(chats) = cx.engine.chat().chats_on(id, &cx.platform).await {
                            for chat in chats {
                                workers.home(chat);
                            }
                        }
                    }
                    match &ev {
                        Event::Submitted(a) => workers.all(&|| Work::Submitted(a.clone())),
                        _ => workers.all(&|| Work::Subject(id.to_string())),
                    }
                }
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    info!(platform = %cx.platform, missed = n, "event stream lagged; rescanning");
                    workers.all(&|| Work::Rescan);
                }
                Err(broadcast::error::RecvError::Closed) => break,
            },
        }
    }
    // The workers stop (a call under way gets its grace) before another term starts.
    stop.cancel();
    let tasks = workers.tasks.clone();
    drop(workers);
    tasks.close();
    tasks.wait().await;
}

/// The chat workers of a platform: one per chat that is, or was since start, a
/// destination. A chat dropped from the config keeps its worker, which stops posting
/// there but still brings the messages it posted up to date (a decided request does
/// not keep live buttons); one added gets a worker, or its old one rescans.
struct Workers<P> {
    cx: Context,
    platform: Arc<P>,
    stop: CancellationToken,
    tasks: TaskTracker,
    chats: HashMap<String, mpsc::UnboundedSender<Work>>,
}

impl<P: Platform> Workers<P> {
    /// Makes sure every chat in `destinations` has a worker that knows it is one.
    fn follow(&mut self, destinations: &[String]) {
        for chat in destinations {
            let tx = self.chats.entry(chat.clone()).or_insert_with(|| {
                let (tx, rx) = mpsc::unbounded_channel();
                let worker = ChatWorker::new(self.cx.clone(), self.platform.clone(), chat.clone());
                self.tasks.spawn(worker.run(rx, self.stop.clone()));
                info!(platform = %self.cx.platform, chat = %chat, "delivering to this chat");
                tx
            });
            // A new worker's first scan; an old one's look at what it missed meanwhile.
            let _ = tx.send(Work::Rescan);
        }
    }

    /// Makes sure `chat`, home to a subject, has a worker (it is no destination unless
    /// the config says so).
    fn home(&mut self, chat: String) {
        if self.chats.contains_key(&chat) {
            return;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let worker = ChatWorker::new(self.cx.clone(), self.platform.clone(), chat.clone());
        self.tasks.spawn(worker.run(rx, self.stop.clone()));
        let _ = tx.send(Work::Rescan);
        self.chats.insert(chat, tx);
    }

    /// Posts `text` once in each of `destinations` (their workers pace and retry it).
    fn notice(&self, destinations: &[String], text: &Arc<str>) {
        for chat in destinations {
            if let Some(tx) = self.chats.get(chat) {
                let _ = tx.send(Work::Notice(text.clone()));
            }
        }
    }

    fn all(&self, make: &dyn Fn() -> Work) {
        for tx in self.chats.values() {
            let _ = tx.send(make());
        }
    }
}

/// Keeps one chat up to date.
struct ChatWorker<P> {
    cx: Context,
    platform: Arc<P>,
    chat: String,
    /// Subjects that may need a post or an edit here.
    subjects: BTreeSet<String>,
    /// Requests among `subjects` as their `Submitted` events carried them, to draw
    /// their first card from while they are still as submitted.
    submitted: HashMap<String, Arc<Approval>>,
    /// Messages to draw again.
    redraws: BTreeSet<String>,
    /// Notices to post here, oldest first.
    notices: std::collections::VecDeque<Arc<str>>,
    rescan: bool,
    /// When the last call started, for pacing.
    last_call: Option<Instant>,
    /// No calls before this (a 429's retry_after, or backoff after failures).
    hold_until: Option<Instant>,
    failures: u32,
}

impl<P: Platform> ChatWorker<P> {
    fn new(cx: Context, platform: Arc<P>, chat: String) -> Self {
        ChatWorker {
            cx,
            platform,
            chat,
            subjects: BTreeSet::new(),
            submitted: HashMap::new(),
            redraws: BTreeSet::new(),
            notices: std::collections::VecDeque::new(),
            rescan: false,
            last_call: None,
            hold_until: None,
            failures: 0,
        }
    }

    fn take(&mut self, work: Work) {
        match work {
            Work::Subject(id) => {
                self.subjects.insert(id);
            }
            Work::Submitted(a) => {
                self.subjects.insert(a.id.clone());
                self.submitted.insert(a.id.clone(), a);
            }
            Work::Redraw(m) => {
                self.redraws.insert(m);
            }
            Work::Notice(text) => self.notices.push_back(text),
            Work::Rescan => self.rescan = true,
        }
    }

    fn idle(&self) -> bool {
        self.subjects.is_empty()
            && self.redraws.is_empty()
            && self.notices.is_empty()
            && !self.rescan
    }

    /// When the next call may start.
    fn next_slot(&self) -> Instant {
        let paced = self
            .last_call
            .map_or_else(Instant::now, |t| t + self.platform.pace(&self.chat));
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
                    // A 429 is also counted as such by the platform's API client.
                    self.cx.engine.metrics.chat_error(&self.cx.platform);
                    let wait = match &e {
                        SendError::RetryAfter(d) => *d,
                        _ => backoff(self.failures),
                    };
                    self.failures += 1;
                    warn!(
                        platform = %self.cx.platform, chat = %self.chat,
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

    /// Makes the most urgent call the chat needs, if any: a digest for a burst, else
    /// one card, else one edit, else one redraw. One call per pass, so what arrives
    /// while a call is paced is weighed before the next (a burst that builds up behind
    /// a single card still becomes a digest). On error, the work stays queued.
    async fn pass(&mut self, stop: &CancellationToken) -> Result<(), SendError> {
        // 0. A notice: nothing to decide, so it goes first and is not recorded.
        if let Some(text) = self.notices.pop_front() {
            let card = crate::chat::card::Card::text(text.to_string());
            let (platform, chat) = (self.platform.clone(), self.chat.clone());
            let posted = self
                .call(stop, async move { platform.post(&chat, &card, None).await })
                .await;
            if let Err(e) = posted {
                self.notices.push_front(text);
                return Err(e);
            }
            return Ok(());
        }
        let state = self.cx.engine.chat();
        let platform = self.cx.platform.clone();
        let settings = self.platform.settings(&self.cx.engine.config());
        // One of the platform's destination chats in the config in force: subjects
        // without a home are shown here. A chat that is not (never was, or a reload
        // dropped it) gets only the cards of subjects at home in it; those it has are
        // still edited below.
        let destination = settings.destinations.contains(&self.chat);
        let known: Vec<String> = self.subjects.iter().cloned().collect();
        let digest_after = settings.digest_after;
        let ChatWork {
            unposted,
            requests,
            stale,
            reminders,
        } = state
            .work(
                &platform,
                &self.chat,
                &known,
                destination,
                self.rescan,
                digest_after.saturating_add(1),
            )
            .await
            .map_err(database)?;
        self.rescan = false;
        // What needs work here is what the chat needs now (the rescan's finds among
        // it); forget the rest.
        self.subjects = unposted
            .iter()
            .map(|u| u.subject.id.clone())
            .chain(stale.iter().map(|(s, _)| s.subject.id.clone()))
            .collect();
        let subjects = &self.subjects;
        self.submitted.retain(|id, _| subjects.contains(id));

        // 1. Posts: a burst of requests as one digest, else the oldest waiting card.
        if requests > digest_after {
            let listed: Vec<String> = unposted
                .iter()
                .filter(|u| u.subject.kind == SubjectKind::Approval)
                .map(|u| u.subject.id.clone())
                .collect();
            let posted = self.post_digest(stop, destination).await;
            // The requests past those listed are not among `subjects`: should the
            // digest be tried again, a scan finds them.
            if posted.is_err() {
                self.rescan = true;
            }
            for id in &listed {
                self.subjects.remove(id);
            }
            return posted;
        }
        if let Some(u) = unposted.first() {
            return self.post_card(stop, u).await;
        }

        // 2. Reminders, once their request's card is here to reply to.
        for r in reminders {
            if r.open {
                return self.remind(stop, r).await;
            }
            // Settled since it was written: nothing to remind of.
            state.take_reminder(r.id).await.map_err(database)?;
        }

        // 3. Edits. Subjects shown by a digest need no call of their own: their digest
        // is drawn again (below) once they are marked.
        let mut edit = None;
        for (shown, current) in stale {
            if shown.by == ShownBy::Digest {
                state
                    .drawn(&shown.subject.id, &platform, &self.chat, &current)
                    .await
                    .map_err(database)?;
                self.redraws.insert(shown.message);
                self.subjects.remove(&shown.subject.id);
            } else if edit.is_none() {
                edit = Some(shown);
            }
        }
        if let Some(shown) = edit {
            return self.draw_card(stop, &shown.subject, &shown.message).await;
        }

        // 4. Redraws.
        if let Some(message) = self.redraws.pop_first() {
            if let Err(e) = self.redraw(stop, &message).await {
                self.redraws.insert(message);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Posts reminder `r` as a reply to its request's card here: taken first, so a
    /// restart during the call never posts it twice; put back only when the platform
    /// said it did nothing.
    async fn remind(&mut self, stop: &CancellationToken, r: Reminder) -> Result<(), SendError> {
        let engine = self.cx.engine.clone();
        let state = engine.chat();
        let a = engine.get(&r.approval_id).await.map_err(database)?;
        let votes = engine.votes(&a.id).await.map_err(database)?;
        let config = engine.config();
        let key = self.cx.platform.to_string();
        let people: Vec<(String, Option<String>)> = r
            .people
            .iter()
            .map(|p| {
                (
                    p.clone(),
                    config.people.identity(p, &key).map(str::to_string),
                )
            })
            .collect();
        let card = conversation::approval::reminder(&a, &votes, &people, crate::time::now_ms());
        let thread = state
            .shown_in(&a.id, &self.cx.platform, &self.chat)
            .await
            .map_err(database)?;
        if !state.take_reminder(r.id).await.map_err(database)? {
            return Ok(());
        }
        let (platform, chat) = (self.platform.clone(), self.chat.clone());
        let posted = self
            .call(stop, async move {
                platform.post(&chat, &card, thread.as_ref()).await
            })
            .await;
        match posted {
            Ok(_) => {
                info!(platform = %self.cx.platform, chat = %self.chat, id = %a.id, "reminder posted");
                Ok(())
            }
            Err(e) => {
                if matches!(e, SendError::RetryAfter(_) | SendError::Transient(_)) {
                    state.put_back_reminder(r).await.map_err(database)?;
                } else {
                    warn!(
                        platform = %self.cx.platform, chat = %self.chat, id = %a.id, error = %e,
                        "a reminder may not have been posted; it is not tried again"
                    );
                }
                Err(e)
            }
        }
    }

    /// Posts one subject's card, in its thread where it has one here.
    async fn post_card(&mut self, stop: &CancellationToken, u: &Unposted) -> Result<(), SendError> {
        let Some(rendered) = self.render_unposted(u).await.map_err(database)? else {
            return Ok(());
        };
        if !rendered.open {
            return Ok(());
        }
        let thread = self
            .cx
            .engine
            .chat()
            .anchor(&u.subject.id, &self.cx.platform, &self.chat)
            .await
            .map_err(database)?;
        let shown = vec![(u.subject.id.clone(), rendered.revision)];
        let platform = self.platform.clone();
        let chat = self.chat.clone();
        let card = rendered.card;
        let root = thread.as_ref().map(|t| t.root.clone());
        self.post(
            stop,
            &shown,
            ShownBy::Card,
            u.unknown,
            root.as_deref(),
            async move { platform.post(&chat, &card, thread.as_ref()).await },
        )
        .await
    }

    /// The card of `u` as it stands: drawn from the request its `Submitted` event
    /// carried while the stored request is still at that revision (a pending request
    /// changes only by leaving `pending`), else from the stored subject.
    async fn render_unposted(&self, u: &Unposted) -> Result<Option<Rendered>, EngineError> {
        if u.subject.kind == SubjectKind::Approval {
            if let Some(a) = self.submitted.get(&u.subject.id) {
                if a.status.as_str() == u.revision {
                    return approval::render_request(&self.cx.engine, a).await.map(Some);
                }
            }
        }
        conversation::render(&self.cx.engine, &u.subject).await
    }

    /// Posts one digest for every request waiting for a message here. Its bookkeeping
    /// is the database's, a chunk at a time ([`crate::engine::ChatState::begin_digest`]):
    /// a digest of 100 000 requests never holds them all here.
    async fn post_digest(
        &mut self,
        stop: &CancellationToken,
        destination: bool,
    ) -> Result<(), SendError> {
        let engine = self.cx.engine.clone();
        let state = engine.chat();
        let platform = self.cx.platform.clone();
        let chat = self.chat.clone();
        let begun = crate::time::now_ms();
        let (shown, reposted) = state
            .begin_digest(&platform, &chat, destination, begun)
            .await
            .map_err(database)?;
        if shown == 0 {
            return Ok(());
        }
        if reposted > 0 {
            warn!(platform = %platform, chat = %chat, subjects = reposted, "an earlier post's outcome is unknown; posting again (it may show twice)");
        }
        let summary = match state.summarize_digest(&platform, &chat, begun).await {
            Ok(summary) => summary,
            Err(e) => {
                state
                    .abandon_digest(&platform, &chat, begun)
                    .await
                    .map_err(database)?;
                return Err(database(e));
            }
        };
        info!(
            platform = %platform, chat = %chat, requests = shown,
            "posting a digest instead of one card per request"
        );
        let card = digest::card(&digest::View::Summary(summary));
        let (to, at) = (self.platform.clone(), chat.clone());
        match self
            .call(stop, async move { to.post(&at, &card, None).await })
            .await
        {
            Ok(message) => {
                engine.metrics.chat_posted(&platform, true);
                debug!(platform = %platform, chat = %chat, message = %message, subjects = shown, "posted");
                record_posted(&platform, &chat, &message, shown, || {
                    state.finish_digest(&platform, &chat, begun, &message)
                })
                .await
            }
            Err(SendError::Unknown(e)) => Err(SendError::Unknown(e)),
            Err(e) => {
                state
                    .abandon_digest(&platform, &chat, begun)
                    .await
                    .map_err(database)?;
                match e {
                    SendError::Permanent(e) => {
                        warn!(platform = %platform, chat = %chat, error = %e, "cannot post to this chat; giving up until restart");
                        Ok(())
                    }
                    other => Err(other),
                }
            }
        }
    }

    /// Records the post's intent (the subjects and the revisions the message shows,
    /// and the thread it goes in), makes the call, and records what happened.
    async fn post(
        &mut self,
        stop: &CancellationToken,
        shown: &[(String, String)],
        by: ShownBy,
        unknown_before: bool,
        thread: Option<&str>,
        call: impl Future<Output = Result<String, SendError>>,
    ) -> Result<(), SendError> {
        let ids: Vec<String> = shown.iter().map(|(id, _)| id.clone()).collect();
        let ids = &ids[..];
        let engine = self.cx.engine.clone();
        let state = engine.chat();
        let platform = self.cx.platform.clone();
        let chat = self.chat.clone();
        if unknown_before {
            warn!(platform = %platform, chat = %chat, subjects = ids.len(), "an earlier post's outcome is unknown; posting again (it may show twice)");
        }
        state
            .begin_post(&platform, &chat, shown, by, thread, unknown_before)
            .await
            .map_err(database)?;
        match self.call(stop, call).await {
            Ok(message) => {
                self.cx
                    .engine
                    .metrics
                    .chat_posted(&platform, by == ShownBy::Digest);
                debug!(platform = %platform, chat = %chat, message = %message, subjects = ids.len(), "posted");
                record_posted(&platform, &chat, &message, ids.len(), || async {
                    Ok(state
                        .finish_post(&platform, &chat, ids, by, &message)
                        .await?
                        .len())
                })
                .await
            }
            Err(SendError::Unknown(e)) => Err(SendError::Unknown(e)),
            Err(e) => {
                state
                    .abandon_post(&platform, &chat, ids)
                    .await
                    .map_err(database)?;
                match e {
                    SendError::Permanent(e) => {
                        warn!(platform = %platform, chat = %chat, error = %e, "cannot post to this chat; giving up until restart");
                        for id in ids {
                            self.subjects.remove(id);
                        }
                        Ok(())
                    }
                    other => Err(other),
                }
            }
        }
    }

    /// Draws `message`, a card of `subject`, as the subject is now.
    async fn draw_card(
        &mut self,
        stop: &CancellationToken,
        subject: &crate::subject::Subject,
        message: &str,
    ) -> Result<(), SendError> {
        let Some(rendered) = conversation::render(&self.cx.engine, subject)
            .await
            .map_err(database)?
        else {
            return Ok(());
        };
        let platform = self.platform.clone();
        let (chat, m, card) = (self.chat.clone(), message.to_string(), rendered.card);
        match self
            .call(stop, async move { platform.edit(&chat, &m, &card).await })
            .await
        {
            Ok(()) => {}
            Err(SendError::Permanent(e)) => {
                warn!(platform = %self.cx.platform, id = %subject.id, chat = %self.chat, error = %e, "cannot edit the card; leaving it");
            }
            Err(e) => return Err(e),
        }
        self.cx
            .engine
            .chat()
            .drawn(
                &subject.id,
                &self.cx.platform,
                &self.chat,
                &rendered.revision,
            )
            .await
            .map_err(database)
    }

    /// Draws `message` again: a digest from its stored view (moving on or closing as
    /// needed), or a card from its subject.
    async fn redraw(&mut self, stop: &CancellationToken, message: &str) -> Result<(), SendError> {
        let loaded = digest::load(&self.cx, &self.chat, message)
            .await
            .map_err(database)?;
        let Some((view, changed)) = loaded else {
            let shown = self
                .cx
                .engine
                .chat()
                .shown_at(&self.cx.platform, &self.chat, message)
                .await
                .map_err(database)?;
            return match shown {
                Some(s) if s.by == ShownBy::Card => self.draw_card(stop, &s.subject, message).await,
                _ => Ok(()),
            };
        };
        let was_closed = matches!(view, digest::View::Closed(_)) && changed.is_none();
        if was_closed {
            return Ok(());
        }
        let platform = self.platform.clone();
        let (chat, m, card) = (self.chat.clone(), message.to_string(), digest::card(&view));
        match self
            .call(stop, async move { platform.edit(&chat, &m, &card).await })
            .await
        {
            Ok(()) => {}
            Err(SendError::Permanent(e)) => {
                warn!(platform = %self.cx.platform, chat = %self.chat, message, error = %e, "cannot draw the digest; leaving it");
            }
            Err(e) => return Err(e),
        }
        if let Some(state) = changed {
            self.cx
                .engine
                .chat()
                .set_digest(&self.cx.platform, &self.chat, message, &state)
                .await
                .map_err(database)?;
        }
        Ok(())
    }
}
