//! The Discord platform adapter: cards with buttons in action rows, slash commands,
//! replies to cards, threads for tasks; a bot on the Gateway, so no public URL.
//!
//! 1. [`run`] builds the REST client ([`api`]) and runs delivery
//!    ([`crate::chat::delivery`] with [`platform::Discord`]: a message per card, edited
//!    in place when its subject changes, in a thread where delivery says) and the
//!    Gateway ([`gateway`]).
//! 2. READY names the bot and its application; GUILD_CREATE, each server it is in:
//!    there the slash commands are registered ([`commands`]), one per command of the
//!    kinds registry.
//! 3. An interaction (INTERACTION_CREATE) is acknowledged at once, within Discord's
//!    3 s: a button press with a deferred update (type 6: the card itself will show
//!    what was done), a slash command with a deferred ephemeral answer (type 5, flags
//!    64). Then it is handled ([`crate::chat::inbound::handle`]) on a task of its own,
//!    and the answer given: a press's notice (a refusal, an error) as an ephemeral
//!    follow-up, a command's answer in place of "thinking…" (`PATCH
//!    …/messages/@original`) and follow-ups.
//! 4. A message (MESSAGE_CREATE) from a person: a reply to a card or a question
//!    (`message_reference`), a message in a card's thread, a command typed as text, or
//!    (in a DM with the bot, or mentioning it, with the inbox on) a task, whose card
//!    goes in a thread started from that message; answered with a reply. Bots'
//!    messages are ignored.
//!
//! Approvers are user ids (`[discord] approvers`) or members with a role in
//! `approver_roles`, re-read on every interaction so a reload applies; anyone else is
//! refused (ephemerally) and the attempt audited. Nothing gatebot sends can ping
//! anyone but whom it means ([`render::allowed_mentions`]).

pub mod api;
pub mod commands;
pub mod gateway;
pub mod platform;
pub mod render;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, error, info, warn};
use twilight_http::routing::Route;

pub use crate::config::discord::DiscordConfig;

use crate::approval::PlatformId;
use crate::chat::card::Card;
use crate::chat::exchange::{Actor, Answer, At, Question};
use crate::chat::inbound::{self, Inbound, Replied, Seen};
use crate::chat::Context;
use crate::engine::Engine;
use crate::settings::PlatformSettings;
use crate::subject::Thread;
use api::{id, DiscordApi};
use platform::{Discord, Me};

/// The platform's key.
pub const PLATFORM: PlatformId = PlatformId::new(<DiscordConfig as PlatformSettings>::KEY);

/// Interaction types: a slash command, a button press.
const APPLICATION_COMMAND: u64 = 2;
const MESSAGE_COMPONENT: u64 = 3;
/// Interaction callback types: a deferred answer ("thinking…"), a deferred update.
const DEFERRED_CHANNEL_MESSAGE: u64 = 5;
const DEFERRED_UPDATE_MESSAGE: u64 = 6;
/// Message flag: only the user who interacted sees it.
pub const EPHEMERAL: u64 = 64;
/// Longest wait to acknowledge an interaction: Discord's deadline is 3 s.
const ACK_WAIT: Duration = Duration::from_millis(1500);
/// Longest rate-limit wait before an answer to a user is given up.
const ANSWER_WAIT: Duration = Duration::from_secs(10);
/// How long inbound work under way may finish at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Runs the adapter until `stop` fires. Never fails: problems reaching Discord are
/// logged (without the token) and retried.
pub async fn run(engine: Arc<Engine>, config: DiscordConfig, stop: CancellationToken) {
    let api = Arc::new(DiscordApi::new(&config, engine.metrics.clone()));
    let platform = Arc::new(Discord::new(api.clone()));
    info!(channels = ?config.chat.destinations, "discord: starting");
    crate::chat::run(
        engine,
        platform.clone(),
        None,
        stop.clone(),
        |cx| async move {
            // One Gateway session per bot: the node that leads holds it.
            let engine = cx.engine.clone();
            let events = Arc::new(Events::new(cx, platform));
            engine
                .while_leading(stop, false, |term| {
                    gateway::run(events.clone(), &config, term)
                })
                .await;
            events.finish().await;
        },
    )
    .await;
    info!("discord: stopped");
}

/// The inbound side: what the Gateway dispatches.
pub struct Events {
    cx: Context,
    pub api: Arc<DiscordApi>,
    discord: Arc<Discord>,
    /// Guilds whose commands are registered in this run.
    registered: Mutex<HashSet<String>>,
    tasks: TaskTracker,
}

impl Events {
    #[must_use]
    pub fn new(cx: Context, discord: Arc<Discord>) -> Events {
        Events {
            cx,
            api: discord.api.clone(),
            discord,
            registered: Mutex::default(),
            tasks: TaskTracker::new(),
        }
    }

    /// Lets inbound work under way finish (for a while) at shutdown.
    async fn finish(&self) {
        self.tasks.close();
        if tokio::time::timeout(SHUTDOWN_GRACE, self.tasks.wait())
            .await
            .is_err()
        {
            warn!("discord: stopped with work still under way");
        }
    }

    /// One Gateway message, as raw JSON. Dispatches that need calls run on tasks of
    /// their own (tracked, so shutdown lets them finish), so the Gateway is read on.
    pub fn dispatch(self: &Arc<Self>, text: &str) {
        let Ok(v) = serde_json::from_str::<Value>(text) else {
            warn!("discord: unreadable Gateway message");
            return;
        };
        if v["op"] != 0 {
            return;
        }
        let d = v["d"].clone();
        let kind = v["t"].as_str().unwrap_or_default().to_string();
        match kind.as_str() {
            "READY" => self.on_ready(&d),
            "GUILD_CREATE" => {
                if let Some(guild) = d["id"].as_str() {
                    self.register(guild);
                }
            }
            "THREAD_CREATE" => {
                if let (Some(thread), Some(parent)) = (d["id"].as_str(), d["parent_id"].as_str()) {
                    self.discord.thread_of(thread, parent);
                }
            }
            "INTERACTION_CREATE" | "MESSAGE_CREATE" => {
                let events = self.clone();
                self.tasks.spawn(async move {
                    if kind == "INTERACTION_CREATE" {
                        events.on_interaction(d).await;
                    } else {
                        events.on_message(d).await;
                    }
                });
            }
            _ => debug!(event = %kind, "discord: dispatch ignored"),
        }
    }

    fn on_ready(self: &Arc<Self>, d: &Value) {
        let (Some(user), Some(app)) = (d["user"]["id"].as_str(), d["application"]["id"].as_str())
        else {
            warn!("discord: READY without the bot's ids");
            return;
        };
        let me = Me {
            user_id: user.to_string(),
            application_id: app.to_string(),
        };
        let name = d["user"]["username"].as_str().unwrap_or_default();
        info!(user, name, "discord: connected as the bot");
        let _ = self.discord.me.set(me);
        for g in d["guilds"].as_array().into_iter().flatten() {
            if let Some(guild) = g["id"].as_str() {
                self.register(guild);
            }
        }
    }

    /// Registers the slash commands in `guild`, once a run.
    fn register(self: &Arc<Self>, guild: &str) {
        let Some(me) = self.discord.me.get().cloned() else {
            return;
        };
        if !self
            .registered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(guild.to_string())
        {
            return;
        }
        let api = self.api.clone();
        let guild = guild.to_string();
        self.tasks.spawn(async move {
            commands::register(&api, &me.application_id, &guild).await;
        });
    }

    /// Who acted: an approver by user id, or by a role `approver_roles` names.
    fn actor(&self, d: &Value) -> Option<Actor> {
        let user = if d["member"]["user"].is_object() {
            &d["member"]["user"]
        } else if d["user"].is_object() {
            &d["user"]
        } else {
            &d["author"]
        };
        let uid = user["id"].as_str()?;
        let name = user["global_name"]
            .as_str()
            .or(user["username"].as_str())
            .unwrap_or(uid);
        let mut actor = self.cx.actor(uid, name);
        if !actor.approver {
            let roles = self
                .cx
                .engine
                .config()
                .platform::<DiscordConfig>()
                .map(|c| c.approver_roles.clone())
                .unwrap_or_default();
            actor.approver = d["member"]["roles"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .any(|r| roles.contains(r));
        }
        Some(actor)
    }

    async fn on_interaction(&self, d: Value) {
        let (Some(interaction), Some(token)) = (d["id"].as_str(), d["token"].as_str()) else {
            return;
        };
        let kind = d["type"].as_u64().unwrap_or_default();
        let ack = match kind {
            MESSAGE_COMPONENT => json!({"type": DEFERRED_UPDATE_MESSAGE}),
            APPLICATION_COMMAND => {
                json!({"type": DEFERRED_CHANNEL_MESSAGE, "data": {"flags": EPHEMERAL}})
            }
            _ => return,
        };
        // Acknowledge first: Discord's deadline is 3 s.
        let Ok(interaction_id) = id(interaction) else {
            return;
        };
        let route = Route::InteractionCallback {
            interaction_id,
            interaction_token: token,
        };
        if let Err(e) = self
            .api
            .call_patiently(
                &format!("ack:{interaction}"),
                &route,
                Some(&ack),
                2,
                ACK_WAIT,
            )
            .await
        {
            warn!(interaction, error = %e, "discord: cannot acknowledge the interaction");
            return;
        }
        let Some(actor) = self.actor(&d) else {
            return;
        };
        let reply = Reply {
            api: &self.api,
            application: d["application_id"].as_str().unwrap_or_default(),
            interaction,
            token,
        };
        if kind == MESSAGE_COMPONENT {
            self.on_press(&d, &actor, &reply).await;
        } else {
            self.on_command(&d, &actor, &reply).await;
        }
    }

    async fn on_press(&self, d: &Value, actor: &Actor, reply: &Reply<'_>) {
        let data = d["data"]["custom_id"].as_str().unwrap_or_default();
        let channel = d["channel_id"].as_str().unwrap_or_default();
        let message = d["message"]["id"].as_str().unwrap_or_default();
        // A card in a thread is known by the thread and its id.
        let (chat, message) = match self.discord.parent_of(channel).await {
            Some(parent) => (parent, format!("{channel}/{message}")),
            None => (channel.to_string(), message.to_string()),
        };
        let at = At {
            chat: chat.clone(),
            message: Some(message),
            // Its first line, which names a card's subject.
            text: d["message"]["content"]
                .as_str()
                .and_then(|c| c.lines().next())
                .map(str::to_string),
            private: d["guild_id"].is_null(),
        };
        let press = Inbound::Press {
            data: data.to_string(),
            at: at.clone(),
        };
        match inbound::handle(&self.cx, actor, press).await {
            Answer::Nothing | Answer::Done(_) => {}
            Answer::Ask(q) => self.ask(actor, &at, channel, q, reply).await,
            other => {
                for card in other.cards() {
                    reply.followup(card).await;
                }
            }
        }
    }

    /// Asks `q` in the card's channel, replying to the card and mentioning the asker
    /// (who alone is pinged); recorded so that a reply to it, even after a restart, is
    /// the answer. The asker is told privately that it was asked.
    async fn ask(&self, actor: &Actor, at: &At, channel: &str, q: Question, reply: &Reply<'_>) {
        let at_message = at.message.as_deref().unwrap_or_default();
        let (_, card_message) = platform::split(at_message);
        let mut text = format!("<@{}>, {}", actor.id, render::line(&q.text));
        text.push_str(" Reply to this message; it reaches the agent.");
        let mut body = json!({
            "content": text,
            "allowed_mentions": render::allowed_mentions(std::slice::from_ref(&actor.id)),
            "message_reference": {"message_id": card_message, "fail_if_not_exists": false},
        });
        // The question's skip button ("Deny without reason") goes with it.
        if let Some(skip) = &q.skip {
            body["components"] = json!(render::components(&[vec![skip.clone()]]));
        }
        let asked = match id(channel) {
            Ok(channel_id) => {
                self.api
                    .call_patiently(
                        &format!("messages:{channel}"),
                        &Route::CreateMessage { channel_id },
                        Some(&body),
                        3,
                        ANSWER_WAIT,
                    )
                    .await
            }
            Err(e) => Err(e),
        };
        let message = asked
            .ok()
            .and_then(|m| m["id"].as_str().map(str::to_string));
        let Some(message) = message else {
            reply.followup(&Card::text(q.not_asked)).await;
            return;
        };
        let message = if channel == at.chat {
            message
        } else {
            format!("{channel}/{message}")
        };
        if let Err(e) = self
            .cx
            .engine
            .chat()
            .ask(&self.cx.platform, &at.chat, &message, &q.subject, q.purpose)
            .await
        {
            error!(error = %e, "discord: cannot record the question");
        }
        reply.followup(&Card::text(q.asked)).await;
    }

    async fn on_command(&self, d: &Value, actor: &Actor, reply: &Reply<'_>) {
        let name = d["data"]["name"].as_str().unwrap_or_default();
        let args = d["data"]["options"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|o| o["name"] == commands::ARGUMENTS)
            .and_then(|o| o["value"].as_str())
            .unwrap_or_default();
        let channel = d["channel_id"].as_str().unwrap_or_default();
        let chat = self
            .discord
            .parent_of(channel)
            .await
            .unwrap_or_else(|| channel.to_string());
        let text = Inbound::Text {
            chat,
            text: format!("/{name} {args}").trim_end().to_string(),
            reply_to: None,
            addressed: true,
            direct: false,
            // Answered to the one who typed it alone (ephemeral).
            private: true,
            // A slash command is no message: a task's card goes top-level there.
            origin: None,
        };
        let cards: Vec<Card> = match inbound::handle(&self.cx, actor, text).await {
            Answer::Nothing => vec![Card::text("Done.")],
            Answer::Ask(q) => vec![Card::text(q.not_asked)],
            other => other.cards().into_iter().cloned().collect(),
        };
        let mut cards = cards.iter();
        if let Some(first) = cards.next() {
            reply.original(first).await;
        }
        for card in cards {
            reply.followup(card).await;
        }
    }

    /// A message from a person: see the module docs.
    async fn on_message(&self, d: Value) {
        if d["author"]["bot"] == true || d["webhook_id"].is_string() {
            return;
        }
        let me = self.discord.me.get().cloned();
        let (Some(channel), Some(message), Some(text)) = (
            d["channel_id"].as_str(),
            d["id"].as_str(),
            d["content"].as_str(),
        ) else {
            return;
        };
        if text.trim().is_empty() {
            return;
        }
        let Some(actor) = self.actor(&d) else {
            return;
        };
        let direct = d["guild_id"].is_null();
        // In a thread gatebot knows, the chat is its parent and the thread's root (the
        // message it hangs off, whose id the thread shares) is what it replies to.
        let parent = if direct {
            None
        } else {
            self.discord.parent_of(channel).await
        };
        let seen_of = |m: &Value| match (&me, m["author"]["id"].as_str()) {
            (Some(me), Some(author)) if author == me.user_id => {
                Seen::Ours(m["content"].as_str().unwrap_or_default().to_string())
            }
            (_, Some(_)) => Seen::Theirs,
            _ => Seen::Unread,
        };
        let in_thread = |m: &str| match &parent {
            Some(_) => format!("{channel}/{m}"),
            None => m.to_string(),
        };
        let reply_to = match d["message_reference"]["message_id"].as_str() {
            Some(r) => Some(Replied {
                message: in_thread(r),
                seen: seen_of(&d["referenced_message"]),
            }),
            None => parent.as_ref().map(|_| Replied {
                message: channel.to_string(),
                seen: Seen::Unread,
            }),
        };
        let origin = match &parent {
            Some(_) => Some(Thread {
                reply_to: in_thread(message),
                root: channel.to_string(),
            }),
            None if !direct => Some(Thread {
                reply_to: message.to_string(),
                root: message.to_string(),
            }),
            None => None,
        };
        let addressed = me.as_ref().is_some_and(|me| {
            d["mentions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|u| u["id"] == me.user_id.as_str())
        });
        // A mention of the bot is no part of the command.
        let text = match &me {
            Some(me) => text
                .replace(&format!("<@{}>", me.user_id), "")
                .replace(&format!("<@!{}>", me.user_id), ""),
            None => text.to_string(),
        };
        let inbound = Inbound::Text {
            chat: parent.clone().unwrap_or_else(|| channel.to_string()),
            text: text.trim().to_string(),
            reply_to,
            addressed: addressed || direct,
            // Written to gatebot itself: in a DM, or mentioning the bot (with the inbox
            // on, such a message is a task, its card in a thread off the message).
            direct: direct || addressed,
            private: direct,
            origin,
        };
        let cards: Vec<Card> = match inbound::handle(&self.cx, &actor, inbound).await {
            Answer::Nothing => return,
            Answer::Ask(q) => vec![Card::text(q.not_asked)],
            other => other.cards().into_iter().cloned().collect(),
        };
        for card in &cards {
            self.answer(channel, message, card).await;
        }
    }

    /// A reply to message `to` in `channel`.
    async fn answer(&self, channel: &str, to: &str, card: &Card) {
        let mut body = render::render(card).body();
        body["message_reference"] = json!({"message_id": to, "fail_if_not_exists": false});
        let Ok(channel_id) = id(channel) else {
            return;
        };
        if let Err(e) = self
            .api
            .call_patiently(
                &format!("messages:{channel}"),
                &Route::CreateMessage { channel_id },
                Some(&body),
                3,
                ANSWER_WAIT,
            )
            .await
        {
            warn!(channel, error = %e, "discord: cannot answer the message");
        }
    }
}

/// Answers to one interaction, through its token (good for 15 minutes).
struct Reply<'a> {
    api: &'a DiscordApi,
    application: &'a str,
    interaction: &'a str,
    token: &'a str,
}

impl Reply<'_> {
    /// Replaces the deferred answer ("thinking…") with `card`.
    async fn original(&self, card: &Card) {
        let Ok(application_id) = id(self.application) else {
            return;
        };
        let route = Route::UpdateInteractionOriginal {
            application_id,
            interaction_token: self.token,
        };
        let body = render::render(card).body();
        if let Err(e) = self
            .api
            .call_patiently(
                &format!("original:{}", self.interaction),
                &route,
                Some(&body),
                3,
                ANSWER_WAIT,
            )
            .await
        {
            warn!(interaction = self.interaction, error = %e, "discord: cannot answer the command");
        }
    }

    /// `card` as a follow-up only the user sees.
    async fn followup(&self, card: &Card) {
        let Ok(webhook_id) = id(self.application) else {
            return;
        };
        let route = Route::ExecuteWebhook {
            thread_id: None,
            token: self.token,
            wait: Some(true),
            webhook_id,
        };
        let mut body = render::render(card).body();
        body["flags"] = json!(EPHEMERAL);
        if let Err(e) = self
            .api
            .call_patiently(
                &format!("followup:{}", self.interaction),
                &route,
                Some(&body),
                3,
                ANSWER_WAIT,
            )
            .await
        {
            warn!(interaction = self.interaction, error = %e, "discord: cannot answer the user");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::gateway::fatal_reason;

    #[test]
    fn fatal_close_codes_say_what_to_change() {
        assert!(fatal_reason(4004).unwrap().contains("token"));
        assert!(fatal_reason(4014)
            .unwrap()
            .contains("Message Content Intent"));
        assert!(fatal_reason(1000).is_none() && fatal_reason(4000).is_none());
    }
}
