//! Telegram's inbound side: long polling, and translating each update into
//! [`Inbound`] and each [`Answer`] into Bot API calls.
//!
//! 1. [`poll`] calls `getUpdates` with the next offset, waiting up to
//!    [`super::POLL_TIMEOUT`]; it drops the call at once when `stop`
//!    fires. A 409 Conflict (another process polls with this token) is logged as an
//!    error and polling resumes after [`super::CONFLICT_PAUSE`].
//! 2. Each update is handled in its own task (a slow, throttled reply in one chat must
//!    not hold up a tap in another); at shutdown, tasks under way may finish.
//! 3. A press becomes [`Inbound::Press`] and is answered with `answerCallbackQuery`
//!    (an alert for refusals). A text message becomes [`Inbound::Text`], with the
//!    message it replies to; a private chat's text is written to gatebot itself (with
//!    the inbox on, plain text there is a task). Messages from private chats that are
//!    neither in `chats` nor an approver's are ignored and logged, unless the inbox is
//!    on: then they are refused and audited like any stranger's. Answers to text are replies, plain text
//!    unless the answer is a card with formatting.
//! 4. A question ([`Answer::Ask`], "why deny?") is a ForceReply message that mentions
//!    the asker (so it reaches them in a group too), recorded in SQLite so that a reply
//!    to it counts after a restart; the pressed button is swapped for the question's
//!    "skip" button ("🚫 Deny without reason").
//! 5. Replies are retried a few times on 429 and temporary failures.

use std::sync::Arc;
use std::time::Duration;

use teloxide::prelude::*;
use teloxide::types::{
    AllowedUpdate, CallbackQuery, ForceReply, MaybeInaccessibleMessage, MessageId, ParseMode,
    ReplyParameters, UpdateKind, User,
};
use teloxide::RequestError;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{error, info, warn};

use crate::chat::card::{Button, Card};
use crate::chat::conversation;
use crate::chat::exchange::{Actor, Answer, At, Question};
use crate::chat::inbound::{self, Inbound, Replied, Seen};
use crate::chat::platform::SendError;
use crate::chat::text::{escape, shorten};
use crate::chat::Context;
use crate::retry::{backoff, retry};
use crate::secret::scrub;
use crate::subject::Thread;
use crate::telegram::platform::{classify, Telegram};
use crate::telegram::{render, CONFLICT_PAUSE, POLL_TIMEOUT};

/// How long update handlers under way may finish at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Attempts for a reply before giving up, and the longest wait between two.
const REPLY_ATTEMPTS: u32 = 3;
const REPLY_MAX_WAIT: Duration = Duration::from_secs(30);

struct Handler {
    telegram: Arc<Telegram>,
    cx: Context,
}

/// Long-polls until `stop` fires; see the module docs.
pub async fn poll(telegram: Arc<Telegram>, cx: Context, stop: CancellationToken) {
    let handler = Arc::new(Handler { telegram, cx });
    let tasks = TaskTracker::new();
    let mut offset: i32 = 0;
    let mut failures: u32 = 0;
    loop {
        let call = handler
            .telegram
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
    fn scrub(&self, e: &RequestError) -> String {
        scrub(&e.to_string(), &[&self.telegram.token])
    }

    /// Approvers and chats are read from the config in force at each update, so a
    /// SIGHUP reload takes effect at once (the token and API URL need a restart).
    fn actor(&self, user: &User) -> Actor {
        self.cx.actor(&user.id.0.to_string(), &user.full_name())
    }

    fn is_configured_chat(&self, chat: i64) -> bool {
        self.cx.destinations().contains(&chat.to_string())
    }

    async fn update(&self, kind: UpdateKind) {
        match kind {
            UpdateKind::CallbackQuery(q) => self.callback(q).await,
            UpdateKind::Message(m) => self.message(m).await,
            _ => {}
        }
    }

    async fn answer_press(&self, q: &CallbackQuery, text: &str, alert: bool) {
        let text = shorten(text, render::MAX_ANSWER);
        if let Err(e) = self
            .telegram
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
        let actor = self.actor(&q.from);
        let Some(data) = q.data.clone() else {
            return self
                .answer_press(&q, "This button does nothing.", false)
                .await;
        };
        let at = match &q.message {
            Some(m) => At {
                chat: m.chat().id.0.to_string(),
                message: Some(m.id().0.to_string()),
                text: match m {
                    MaybeInaccessibleMessage::Regular(m) => m.text().map(str::to_string),
                    MaybeInaccessibleMessage::Inaccessible(_) => None,
                },
                private: m.chat().is_private(),
            },
            None => At {
                chat: String::new(),
                message: None,
                text: None,
                private: false,
            },
        };
        let answer = inbound::handle(&self.cx, &actor, Inbound::Press { data, at }).await;
        self.show_press_answer(&q, &actor, answer).await;
    }

    async fn show_press_answer(&self, q: &CallbackQuery, actor: &Actor, answer: Answer) {
        match answer {
            Answer::Nothing => self.answer_press(q, "", false).await,
            Answer::Done(card) => self.answer_press(q, &card.plain(), false).await,
            Answer::Notice { card, alert } => self.answer_press(q, &card.plain(), alert).await,
            Answer::Card(_) | Answer::Cards(_) => {
                self.answer_press(q, "", false).await;
                if let Some(m) = &q.message {
                    for card in answer.cards() {
                        self.reply(m.chat().id, Some(m.id()), card).await;
                    }
                }
            }
            Answer::Ask(question) => self.ask(q, actor, question).await,
        }
    }

    /// Asks `question` in reply to the pressed message, and offers its skip button in
    /// place of the pressed one.
    async fn ask(&self, q: &CallbackQuery, actor: &Actor, question: Question) {
        let Some(msg) = &q.message else {
            // No message to reply to (inline mode): answer without text at once.
            let answer =
                conversation::answer(&self.cx, actor, &question.subject, question.purpose, None)
                    .await;
            return Box::pin(self.show_press_answer(q, actor, answer)).await;
        };
        let chat = msg.chat().id;
        // A selective ForceReply reaches the users mentioned in the text: the asker.
        let mut text = format!(
            "<a href=\"tg://user?id={}\">{}</a>, {}",
            q.from.id.0,
            escape(&shorten(&q.from.full_name(), 60)),
            render::line(&question.text)
        );
        if let Some(skip) = &question.skip {
            text.push_str(&format!(
                " Reply to this message; it reaches the agent. Or tap “{}” on the prompt.",
                escape(&skip.label)
            ));
        } else {
            text.push_str(" Reply to this message; it reaches the agent.");
        }
        let field = question.field.clone();
        let sent = self
            .retrying("the question", || {
                self.telegram
                    .bot
                    .send_message(chat, text.clone())
                    .parse_mode(ParseMode::Html)
                    .reply_parameters(ReplyParameters::new(msg.id()).allow_sending_without_reply())
                    .reply_markup(
                        ForceReply::new()
                            .selective()
                            .input_field_placeholder(Some(field.clone())),
                    )
                    .send()
            })
            .await;
        match sent {
            Ok(m) => {
                let recorded = self
                    .cx
                    .engine
                    .chat()
                    .ask(
                        &self.cx.platform,
                        &chat.0.to_string(),
                        &m.id.0.to_string(),
                        &question.subject,
                        question.purpose,
                    )
                    .await;
                if let Err(e) = recorded {
                    error!(error = %e, "telegram: cannot record the question");
                }
                self.answer_press(q, &question.asked, false).await;
            }
            Err(_) => self.answer_press(q, &question.not_asked, true).await,
        }
        if let (MaybeInaccessibleMessage::Regular(m), Some(skip), Some(data)) =
            (msg, &question.skip, &q.data)
        {
            self.offer_skip(m, data, skip, &question.subject).await;
        }
    }

    /// Puts the question's skip button ("🚫 Deny without reason") in place of the
    /// pressed one on message `m`.
    async fn offer_skip(&self, m: &Message, pressed: &str, skip: &Button, subject: &str) {
        let chat = m.chat.id;
        let Some(swapped) = m
            .reply_markup()
            .and_then(|kb| render::swap_button(kb, pressed, skip))
        else {
            return;
        };
        if let Err(e) = self
            .telegram
            .bot
            .edit_message_reply_markup(chat, m.id)
            .reply_markup(swapped)
            .await
        {
            warn!(
                "telegram: cannot offer “{}”: {}",
                skip.label,
                self.scrub(&e)
            );
        }
        // The swap may land after the subject was settled and its message brought up
        // to date, putting buttons back on it: if so, have delivery draw it again.
        let open = self.cx.engine.chat().is_open(subject).await;
        if matches!(open, Ok(Some(false))) {
            self.cx
                .delivery
                .redraw(&chat.0.to_string(), &m.id.0.to_string());
        }
    }

    async fn message(&self, m: Message) {
        let Some(from) = m.from.as_ref().filter(|u| !u.is_bot) else {
            return;
        };
        let Some(text) = m.text() else { return };
        let actor = self.actor(from);
        let chat = m.chat.id;
        // With the inbox on, a private chat with the bot is where tasks are written:
        // a stranger's is refused and audited there, not ignored.
        let inbox = self.cx.engine.config().inbox.is_some();
        if m.chat.is_private() && !self.is_configured_chat(chat.0) && !actor.approver && !inbox {
            self.cx.engine.metrics.chat_update(&self.cx.platform, false);
            info!(chat = chat.0, user = %actor.id, "telegram: ignoring a message from a private chat that is not in [telegram] chats");
            return;
        }
        let id = m.id.0.to_string();
        let inbound = Inbound::Text {
            chat: chat.0.to_string(),
            text: text.to_string(),
            reply_to: m.reply_to_message().map(|r| Replied {
                message: r.id.0.to_string(),
                seen: self.seen(r),
            }),
            addressed: false,
            direct: m.chat.is_private(),
            private: m.chat.is_private(),
            // Telegram threads are replies: a task's card replies to this message.
            origin: Some(Thread {
                reply_to: id.clone(),
                root: id,
            }),
        };
        match inbound::handle(&self.cx, &actor, inbound).await {
            Answer::Nothing => {}
            Answer::Ask(q) => self.reply(chat, Some(m.id), &Card::text(q.not_asked)).await,
            other => {
                for card in other.cards() {
                    self.reply(chat, Some(m.id), card).await;
                }
            }
        }
    }

    /// What a message replied to shows: Telegram sends the message along, with its
    /// author and its text (markup resolved, so a card's `id k7m2abcd` reads as such).
    fn seen(&self, replied: &Message) -> Seen {
        if replied
            .from
            .as_ref()
            .is_some_and(|u| u.id == self.telegram.id)
        {
            Seen::Ours(replied.text().unwrap_or_default().to_string())
        } else {
            Seen::Theirs
        }
    }

    /// Sends `card` as a reply, retrying a few times.
    async fn reply(&self, chat: ChatId, to: Option<MessageId>, card: &Card) {
        let _ = self
            .retrying_send("a reply", || self.telegram.send(chat, card, to))
            .await;
    }

    /// Sends with a few retries on 429 (when Telegram asks for a short wait) and
    /// temporary failures (5xx, network trouble).
    async fn retrying<F, Fut>(&self, what: &str, mut send: F) -> Result<Message, SendError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<Message, RequestError>>,
    {
        self.retrying_send(what, || {
            let call = send();
            let token = self.telegram.token.clone();
            async move { call.await.map_err(|e| classify(&e, &token)) }
        })
        .await
    }

    async fn retrying_send<F, Fut>(&self, what: &str, send: F) -> Result<Message, SendError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<Message, SendError>>,
    {
        // Not cancelled at shutdown: an update already fetched gets its answer.
        let never = CancellationToken::new();
        let result = retry(&never, send, |e, attempt| {
            let wait = e.retry_in(attempt, REPLY_ATTEMPTS, REPLY_MAX_WAIT);
            if wait.is_none() {
                warn!("telegram: cannot send {what}: {e}");
            }
            wait
        })
        .await;
        result.unwrap_or_else(|| Err(SendError::Transient("stopped".into())))
    }
}
