//! Long polling and what each update does.
//!
//! 1. [`poll`] calls `getUpdates` with the next offset, waiting up to
//!    [`POLL_TIMEOUT`](super::POLL_TIMEOUT); it drops the call at once when `stop`
//!    fires. A 409 Conflict (another process polls with this token) is logged as an
//!    error and polling resumes after [`CONFLICT_PAUSE`](super::CONFLICT_PAUSE).
//! 2. Each update is handled in its own task (a slow, throttled reply in one chat
//!    must not hold up a tap in another):
//!    - a button press is decoded (`gb1:<code>:<id>`) and goes to [`handle::decide`],
//!      which checks the presser is an approver (whatever the chat) and audits refusals;
//!      ❌ first asks for a reason (see below);
//!    - a text message from a configured chat or an approver is parsed with
//!      [`command::parse`]; a reply to a prompt names its request (`prompts` table).
//!      Messages from other chats are ignored and logged.
//! 3. Deny with a reason: ❌ sends a ForceReply question replying to the prompt and
//!    swaps ❌ for "🚫 Deny without reason" on the tapped message. The question's message
//!    id is remembered **in memory** (chat, message) → request, so a reply to it denies
//!    with the reply's text as the reason. After a restart that mapping is gone: a late
//!    reply is answered with how to deny by command instead.

use std::sync::{Arc, Mutex};

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
use crate::channel::delivery::backoff;
use crate::channel::handle::{self, Actor, Reply};
use crate::config::TelegramConfig;
use crate::engine::{describe_settled, Engine};
use crate::telegram::{render, scrub, TgBot, CONFLICT_PAUSE, POLL_TIMEOUT};

/// Most reason questions remembered at once (oldest forgotten first).
const MAX_QUESTIONS: usize = 1000;

pub struct Handler {
    engine: Arc<Engine>,
    bot: TgBot,
    token: String,
    username: String,
    /// Reason questions: (chat, message id) → request id, in the order asked.
    questions: Mutex<Vec<((i64, i32), String)>>,
}

impl Handler {
    #[must_use]
    pub fn new(engine: Arc<Engine>, bot: TgBot, config: &TelegramConfig, username: String) -> Self {
        Handler {
            engine,
            bot,
            token: config.token.expose().to_string(),
            username,
            questions: Mutex::new(Vec::new()),
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

    fn remember_question(&self, chat: i64, message: i32, id: &str) {
        let mut q = self.questions.lock().unwrap_or_else(|e| e.into_inner());
        if q.len() >= MAX_QUESTIONS {
            q.remove(0);
        }
        q.push(((chat, message), id.to_string()));
    }

    fn question(&self, chat: i64, message: i32) -> Option<String> {
        let q = self.questions.lock().unwrap_or_else(|e| e.into_inner());
        q.iter()
            .rev()
            .find(|(k, _)| *k == (chat, message))
            .map(|(_, id)| id.clone())
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
                    let (h, stop) = (handler.clone(), stop.clone());
                    tasks.spawn(async move {
                        tokio::select! {
                            _ = stop.cancelled() => {}
                            _ = h.update(u.kind) => {}
                        }
                    });
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
    tasks.close();
    tasks.wait().await;
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
        let actor = self.actor(&q.from);
        let Some(data) = q.data.as_deref() else {
            return self.answer(&q, "This button does nothing.", false).await;
        };
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
            return self.ask_reason(&q, &id).await;
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
    async fn ask_reason(&self, q: &CallbackQuery, id: &str) {
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
            let reply = handle::decide(
                &self.engine,
                Channel::Telegram,
                &self.actor(&q.from),
                Verb::Deny,
                id,
                None,
            )
            .await;
            return self.answer(q, &reply.text(), false).await;
        };
        let chat = msg.chat().id;
        self.answer(
            q,
            "Why deny? Reply to my question, or tap “Deny without reason”.",
            false,
        )
        .await;
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
            }
        }
        let sent = self
            .bot
            .send_message(chat, render::reason_question(&approval))
            .reply_parameters(ReplyParameters::new(msg.id()).allow_sending_without_reply())
            .reply_markup(
                ForceReply::new()
                    .selective()
                    .input_field_placeholder(Some("Reason for denying (optional)".into())),
            )
            .await;
        match sent {
            Ok(m) => self.remember_question(chat.0, m.id.0, id),
            Err(e) => warn!("telegram: cannot ask for a deny reason: {}", self.scrub(&e)),
        }
    }

    async fn message(&self, m: Message) {
        let Some(from) = m.from.as_ref().filter(|u| !u.is_bot) else {
            return;
        };
        let Some(text) = m.text() else { return };
        let actor = self.actor(from);
        let chat = m.chat.id;
        if !self.is_configured_chat(chat.0) && !actor.approver {
            info!(chat = chat.0, user = %actor.id, "telegram: ignoring a message from a chat that is not in [telegram] chats");
            return;
        }
        let replied = m.reply_to_message().map(|r| r.id.0);
        // A reply to our reason question: its text is the reason.
        if let Some(rid) = replied {
            if let Some(id) = self.question(chat.0, rid) {
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
        }
        let prompt_of = match replied {
            Some(rid) => {
                let c = chat.0.to_string();
                match self
                    .engine
                    .blocking(move |s| s.prompt_by_message(Channel::Telegram, &c, &rid.to_string()))
                    .await
                {
                    Ok(p) => p.map(|p| p.approval_id),
                    Err(e) => {
                        error!(error = %e, "telegram: cannot look up the replied-to prompt");
                        None
                    }
                }
            }
            None => None,
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
        let res = match &reply {
            Reply::Pending(list) if !list.is_empty() => {
                let (text, kb) = render::pending(list);
                self.bot
                    .send_message(m.chat.id, text)
                    .parse_mode(ParseMode::Html)
                    .reply_markup(kb)
                    .reply_parameters(to)
                    .await
            }
            // Plain text: no parse mode, so nothing in it is markup.
            other => {
                self.bot
                    .send_message(m.chat.id, other.text())
                    .reply_parameters(to)
                    .await
            }
        };
        if let Err(e) = res {
            warn!("telegram: cannot reply: {}", self.scrub(&e));
        }
    }
}
