//! Long polling and what each update does.
//!
//! 1. [`poll`] calls `getUpdates` with the next offset, waiting up to
//!    [`POLL_TIMEOUT`](super::POLL_TIMEOUT); it drops the call at once when `stop`
//!    fires. A 409 Conflict (another process polls with this token) is logged as an
//!    error and polling resumes after [`CONFLICT_PAUSE`](super::CONFLICT_PAUSE).
//! 2. Each update is handled in its own task (a slow, throttled reply in one chat
//!    must not hold up a tap in another); at shutdown, tasks under way may finish:
//!    - a decision button (`gb1:<code>:<id>`) goes to [`handle::decide`], which checks
//!      the presser is an approver (whatever the chat) and audits refusals; ❌ first
//!      asks for a reason (see below);
//!    - a digest button (`gb1:v:…`) goes to [`digest::navigate`];
//!    - a text message is parsed with [`command::parse`]; a reply to a prompt (or to a
//!      digest showing a request) names its request. Messages from private chats that
//!      are not in `chats` and not an approver's are ignored and logged; in groups,
//!      commands are answered (a non-approver is refused and audited).
//! 3. Deny with a reason: ❌ sends a ForceReply question (mentioning the approver, so it
//!    reaches them in a group too) and swaps ❌ for "🚫 Deny without reason" on the
//!    tapped message. The question is recorded in SQLite, so a reply to it denies with
//!    the reply's text as the reason, also after a restart.
//! 4. Replies are retried a few times on 429 and temporary failures.

use std::sync::Arc;
use std::time::Duration;

use teloxide::prelude::*;
use teloxide::types::{
    AllowedUpdate, CallbackQuery, ForceReply, MaybeInaccessibleMessage, ParseMode, ReplyParameters,
    UpdateKind, User,
};
use teloxide::RequestError;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, error, info, warn};

use crate::approval::{Channel, Status, Verb};
use crate::channel::command::{self, decode_button, Button, ChatCommand};
use crate::channel::delivery::{backoff, SendError};
use crate::channel::digest::{self, decode_nav};
use crate::channel::handle::{self, Actor, Reply};
use crate::engine::{describe_settled, Engine};
use crate::telegram::config::TelegramConfig;
use crate::telegram::sender::classify;
use crate::telegram::{render, scrub, TgBot, CONFLICT_PAUSE, POLL_TIMEOUT};
use crate::time::now_ms;

/// How long update handlers under way may finish at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Attempts for a reply before giving up.
const REPLY_ATTEMPTS: u32 = 3;

pub struct Handler {
    engine: Arc<Engine>,
    bot: TgBot,
    token: String,
    username: String,
}

impl Handler {
    #[must_use]
    pub fn new(engine: Arc<Engine>, bot: TgBot, config: &TelegramConfig, username: String) -> Self {
        Handler {
            engine,
            bot,
            token: config.token.expose().to_string(),
            username,
        }
    }

    /// Approvers and chats are read from the config in force at each update, so a
    /// SIGHUP reload takes effect at once (the token and API URL need a restart).
    fn actor(&self, user: &User) -> Actor {
        let approver = self
            .engine
            .config()
            .telegram
            .as_ref()
            .is_some_and(|t| t.approvers.contains(&user.id.0));
        Actor {
            id: user.id.0.to_string(),
            name: user.full_name(),
            approver,
        }
    }

    fn is_configured_chat(&self, chat: i64) -> bool {
        self.engine
            .config()
            .telegram
            .as_ref()
            .is_some_and(|t| t.chats.contains(&chat))
    }

    fn scrub(&self, e: &RequestError) -> String {
        scrub(&e.to_string(), &self.token)
    }

    /// Sends with a few retries on 429 and temporary failures (Throttle paces sends
    /// and retries 429s itself; this covers 5xx and network trouble).
    async fn send_retrying<F, Fut>(&self, what: &str, mut send: F) -> Result<Message, String>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<Message, RequestError>>,
    {
        let mut attempt = 0;
        loop {
            match send().await {
                Ok(m) => return Ok(m),
                Err(e) => {
                    let text = self.scrub(&e);
                    let wait = match classify(&e, &self.token) {
                        SendError::RetryAfter(d) => d,
                        SendError::Transient(_) => backoff(attempt),
                        SendError::Unknown(_) | SendError::Permanent(_) => {
                            warn!("telegram: cannot send {what}: {text}");
                            return Err(text);
                        }
                    };
                    attempt += 1;
                    if attempt >= REPLY_ATTEMPTS {
                        warn!("telegram: cannot send {what} after {attempt} attempts: {text}");
                        return Err(text);
                    }
                    tokio::time::sleep(wait.min(Duration::from_secs(30))).await;
                }
            }
        }
    }
}

/// Long-polls until `stop` fires; see the module docs.
pub async fn poll(handler: Arc<Handler>, stop: CancellationToken) {
    let tasks = TaskTracker::new();
    let mut offset: i32 = 0;
    let mut failures: u32 = 0;
    loop {
        let call = handler
            .bot
            .get_updates()
            .offset(offset)
            .timeout(POLL_TIMEOUT.as_secs() as u32)
            .allowed_updates([AllowedUpdate::Message, AllowedUpdate::CallbackQuery]);
        let res = tokio::select! {
            _ = stop.cancelled() => break,
            r = call.send() => r,
        };
        let pause = match res {
            Ok(updates) => {
                failures = 0;
                for u in updates {
                    offset = offset.max(u.id.0 as i32 + 1);
                    let h = handler.clone();
                    tasks.spawn(async move { h.update(u.kind).await });
                }
                continue;
            }
            Err(RequestError::Api(teloxide::ApiError::TerminatedByOtherGetUpdates)) => {
                error!(
                    retry_in = ?CONFLICT_PAUSE,
                    "telegram: 409 Conflict: another process is polling Telegram with this bot token \
                     (a second gatebot, or a webhook / other bot using the same token). \
                     Only one may poll; stop the other one. Retrying."
                );
                CONFLICT_PAUSE
            }
            Err(RequestError::RetryAfter(s)) => s.duration(),
            Err(e) => {
                let wait = backoff(failures);
                failures += 1;
                warn!(retry_in = ?wait, "telegram: getUpdates failed: {}", handler.scrub(&e));
                wait
            }
        };
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = tokio::time::sleep(pause) => {}
        }
    }
    // Updates already fetched are confirmed to Telegram: let their handlers finish.
    tasks.close();
    if tokio::time::timeout(SHUTDOWN_GRACE, tasks.wait())
        .await
        .is_err()
    {
        warn!("telegram: stopped with updates still being handled");
    }
}

impl Handler {
    async fn update(&self, kind: UpdateKind) {
        match kind {
            UpdateKind::CallbackQuery(q) => self.callback(q).await,
            UpdateKind::Message(m) => self.message(m).await,
            _ => {}
        }
    }

    async fn answer(&self, q: &CallbackQuery, text: &str, alert: bool) {
        let (text, _) = crate::channel::prompt::truncate(text, 190);
        if let Err(e) = self
            .bot
            .answer_callback_query(q.id.clone())
            .text(text)
            .show_alert(alert)
            .await
        {
            warn!("telegram: cannot answer a button press: {}", self.scrub(&e));
        }
    }

    async fn callback(&self, q: CallbackQuery) {
        self.engine.metrics.chat_update(Channel::Telegram, true);
        let actor = self.actor(&q.from);
        let Some(data) = q.data.as_deref() else {
            return self.answer(&q, "This button does nothing.", false).await;
        };
        if let Some(nav) = decode_nav(data) {
            let Some(msg) = &q.message else {
                return self
                    .answer(&q, "This button does nothing here.", false)
                    .await;
            };
            let reply = digest::navigate(
                &self.engine,
                Channel::Telegram,
                &actor,
                &msg.chat().id.0.to_string(),
                &msg.id().0.to_string(),
                nav,
            )
            .await;
            let alert = matches!(reply, Reply::NotAllowed(_));
            return self.answer(&q, &reply.text(), alert).await;
        }
        let (button, id) = match decode_button(data) {
            Ok(x) => x,
            Err(e) => {
                warn!(user = %actor.id, "telegram: {e}");
                return self
                    .answer(&q, "This button is not recognised (stale or forged).", true)
                    .await;
            }
        };
        debug!(user = %actor.id, ?button, id = %id, "telegram: button pressed");
        if button == Button::Deny && actor.approver {
            return self.ask_reason(&q, &actor, &id).await;
        }
        let reply = handle::decide(
            &self.engine,
            Channel::Telegram,
            &actor,
            button.verb(),
            &id,
            None,
        )
        .await;
        let alert = !matches!(reply, Reply::Decided(..));
        self.answer(&q, &reply.text(), alert).await;
    }

    /// After ❌ by an approver: ask for a reason, offer "Deny without reason".
    async fn ask_reason(&self, q: &CallbackQuery, actor: &Actor, id: &str) {
        let approval = match self.engine.get(id).await {
            Ok(a) => a,
            Err(e) => return self.answer(q, &e.to_string(), true).await,
        };
        if approval.status != Status::Pending {
            let text = format!(
                "Request {} is already {}.",
                approval.short_id,
                describe_settled(&approval)
            );
            return self.answer(q, &text, true).await;
        }
        let Some(msg) = &q.message else {
            // No message to reply to (inline mode): deny at once.
            let reply =
                handle::decide(&self.engine, Channel::Telegram, actor, Verb::Deny, id, None).await;
            return self.answer(q, &reply.text(), false).await;
        };
        let chat = msg.chat().id;
        // A selective ForceReply reaches the users mentioned in the text: the approver.
        let question = render::reason_question(&approval, &q.from);
        let sent = self
            .send_retrying("the deny-reason question", || {
                self.bot
                    .send_message(chat, question.clone())
                    .parse_mode(ParseMode::Html)
                    .reply_parameters(ReplyParameters::new(msg.id()).allow_sending_without_reply())
                    .reply_markup(
                        ForceReply::new()
                            .selective()
                            .input_field_placeholder(Some("Reason for denying (optional)".into())),
                    )
                    .send()
            })
            .await;
        let asked = match sent {
            Ok(m) => {
                let (c, mid, i) = (chat.0.to_string(), m.id.0.to_string(), id.to_string());
                let recorded = self
                    .engine
                    .blocking(move |s| s.record_question(Channel::Telegram, &c, &mid, &i, now_ms()))
                    .await;
                if let Err(e) = recorded {
                    error!(error = %e, "telegram: cannot record the deny-reason question");
                }
                true
            }
            Err(_) => false,
        };
        if !asked {
            let text = format!(
                "Could not ask for a reason. Send /deny {} [reason], or tap “Deny without reason”.",
                approval.short_id
            );
            self.answer(q, &text, true).await;
        } else {
            self.answer(
                q,
                "Why deny? Reply to my question, or tap “Deny without reason”.",
                false,
            )
            .await;
        }
        if let MaybeInaccessibleMessage::Regular(m) = msg {
            if let Some(kb) = m.reply_markup() {
                let swapped = render::with_deny_without_reason(kb, id);
                if let Err(e) = self
                    .bot
                    .edit_message_reply_markup(chat, m.id)
                    .reply_markup(swapped)
                    .await
                {
                    warn!(
                        "telegram: cannot offer “Deny without reason”: {}",
                        self.scrub(&e)
                    );
                }
                self.settle_race(chat, m.id, id).await;
            }
        }
    }

    /// The keyboard swap above may land after the request was settled and its message
    /// brought up to date, putting buttons back on it. If so, put the outcome back.
    async fn settle_race(&self, chat: ChatId, message: teloxide::types::MessageId, id: &str) {
        let Ok(now) = self.engine.get(id).await else {
            return;
        };
        if now.status == Status::Pending {
            return;
        }
        let (c, m) = (chat.0.to_string(), message.0.to_string());
        let is_digest = self
            .engine
            .blocking(move |s| s.digest(Channel::Telegram, &c, &m))
            .await
            .ok()
            .flatten()
            .is_some();
        if is_digest {
            self.engine.redraw(
                Channel::Telegram,
                &chat.0.to_string(),
                &message.0.to_string(),
            );
            return;
        }
        let res = self
            .bot
            .edit_message_text(chat, message, render::final_text(&now))
            .parse_mode(ParseMode::Html)
            .reply_markup(teloxide::types::InlineKeyboardMarkup::default())
            .await;
        match res {
            Ok(_) | Err(RequestError::Api(teloxide::ApiError::MessageNotModified)) => {}
            Err(e) => warn!("telegram: cannot restore the outcome: {}", self.scrub(&e)),
        }
    }

    async fn message(&self, m: Message) {
        let Some(from) = m.from.as_ref().filter(|u| !u.is_bot) else {
            return;
        };
        let Some(text) = m.text() else { return };
        let actor = self.actor(from);
        let chat = m.chat.id;
        if m.chat.is_private() && !self.is_configured_chat(chat.0) && !actor.approver {
            self.engine.metrics.chat_update(Channel::Telegram, false);
            info!(chat = chat.0, user = %actor.id, "telegram: ignoring a message from a private chat that is not in [telegram] chats");
            return;
        }
        self.engine.metrics.chat_update(Channel::Telegram, true);
        let replied = m.reply_to_message().map(|r| r.id.0.to_string());
        let Some(rid) = replied else {
            return self.command(&m, &actor, text, None).await;
        };
        // A reply to our reason question: its text is the reason.
        let (c, r) = (chat.0.to_string(), rid.clone());
        let question = self
            .engine
            .blocking(move |s| s.question(Channel::Telegram, &c, &r))
            .await
            .unwrap_or_else(|e| {
                error!(error = %e, "telegram: cannot look up a deny-reason question");
                None
            });
        if let Some(id) = question {
            if !text.trim_start().starts_with('/') {
                let reason = Some(text.trim().to_string()).filter(|r| !r.is_empty());
                let reply = handle::decide(
                    &self.engine,
                    Channel::Telegram,
                    &actor,
                    Verb::Deny,
                    &id,
                    reason,
                )
                .await;
                return self.reply(&m, reply).await;
            }
            return self.command(&m, &actor, text, Some(id)).await;
        }
        let c = chat.0.to_string();
        let prompt_of = match self
            .engine
            .blocking(move |s| s.prompt_by_message(Channel::Telegram, &c, &rid))
            .await
        {
            Ok(p) => p.map(|p| p.approval_id),
            Err(e) => {
                error!(error = %e, "telegram: cannot look up the replied-to prompt");
                None
            }
        };
        self.command(&m, &actor, text, prompt_of).await;
    }

    async fn command(&self, m: &Message, actor: &Actor, text: &str, replied_to: Option<String>) {
        let Some(cmd) = command::parse(text, Some(&self.username), replied_to.is_some()) else {
            return;
        };
        if matches!(cmd, ChatCommand::Decide { .. }) {
            debug!(user = %actor.id, "telegram: command");
        }
        let reply = handle::command(
            &self.engine,
            Channel::Telegram,
            actor,
            cmd,
            replied_to.as_deref(),
        )
        .await;
        self.reply(m, reply).await;
    }

    async fn reply(&self, m: &Message, reply: Reply) {
        let to = ReplyParameters::new(m.id).allow_sending_without_reply();
        let _ = match &reply {
            Reply::Pending(list) if !list.is_empty() => {
                let total = self
                    .engine
                    .blocking(|s| s.count_pending())
                    .await
                    .unwrap_or(list.len());
                let (text, kb) = render::pending(list, total);
                self.send_retrying("the pending list", || {
                    self.bot
                        .send_message(m.chat.id, text.clone())
                        .parse_mode(ParseMode::Html)
                        .reply_markup(kb.clone())
                        .reply_parameters(to.clone())
                        .send()
                })
                .await
            }
            // Plain text: no parse mode, so nothing in it is markup.
            other => {
                let text = other.text();
                self.send_retrying("a reply", || {
                    self.bot
                        .send_message(m.chat.id, text.clone())
                        .reply_parameters(to.clone())
                        .send()
                })
                .await
            }
        };
    }
}
