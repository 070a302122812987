//! The Slack platform adapter: Block Kit cards with buttons, a form for questions,
//! slash commands and thread replies.
//!
//! 1. [`run`] builds a Web API client ([`api`]), checks the bot token (`auth.test`),
//!    and runs delivery ([`crate::chat::delivery`] with [`platform::Slack`]: a
//!    `chat.postMessage` per card, `chat.update` when its subject changes) and the
//!    inbound side: Socket Mode ([`socket`], the default) or HTTP events
//!    ([`events_http`]).
//! 2. Inbound traffic is acknowledged first and handled after, on a task of its own
//!    ([`Slack::spawn`]; tracked, so shutdown lets it finish), so Slack gets its ack
//!    within 3 s; envelopes and events are de-duplicated by id in the database
//!    ([`Slack::first_time`]), so one Slack retries on another node's connection is
//!    handled once across the nodes.
//! 3. [`Slack::handle`] reads each payload ([`payload`]) into a
//!    [`crate::chat::inbound::Inbound`] and answers the user privately: a slash
//!    command through its `response_url` (which works in any conversation), anything
//!    else, or a slash command whose `response_url` failed, with `chat.postEphemeral`.
//!    A question opens a form (`views.open`); its submission is the answer.
//!
//! Users are authorised by Slack user id (`[slack] approvers`, re-read on every action
//! so a SIGHUP reload applies), never by channel membership.

pub mod api;
pub mod events_http;
pub mod payload;
pub mod platform;
pub mod render;
pub mod socket;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, error, info, warn};

pub use crate::config::slack::{SlackConfig, SlackMode};

use crate::approval::PlatformId;
use crate::chat::card::Card;
use crate::chat::conversation;
use crate::chat::exchange::{Actor, Answer, At};
use crate::chat::inbound::{self, Inbound, Replied, Seen};
use crate::chat::platform::Pacer;
use crate::chat::Context;
use crate::engine::Engine;
use crate::settings::PlatformSettings;
use crate::subject::Purpose;
use crate::subject::Thread;
use api::SlackApi;
use payload::{Interaction, SlashCommand};

/// The platform's key.
pub const PLATFORM: PlatformId = PlatformId::new(<SlackConfig as PlatformSettings>::KEY);

/// Longest rate-limit wait for `views.open`: its trigger id expires after 3 s.
const TRIGGER_WAIT: Duration = Duration::from_secs(2);
/// Longest rate-limit wait before an answer to a user is given up.
const ANSWER_WAIT: Duration = Duration::from_secs(10);
/// How long inbound work under way may finish at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Runs the adapter until `stop` fires. Never fails: problems reaching Slack are
/// logged (without tokens) and retried with backoff.
pub async fn run(engine: Arc<Engine>, config: SlackConfig, stop: CancellationToken) {
    let api = match SlackApi::new(&config) {
        Ok(api) => Arc::new(api.counting(engine.metrics.clone())),
        Err(e) => {
            error!(error = %e, "slack: cannot build the HTTP client; Slack is off");
            return;
        }
    };
    let check = tokio::spawn(check_token(api.clone()));
    let platform = Arc::new(platform::Slack {
        api: api.clone(),
        edits: Pacer::new(platform::EDIT_INTERVAL),
    });
    info!(mode = config.mode.as_str(), channels = ?config.chat.destinations, "slack: starting");
    crate::chat::run(engine, platform, None, stop.clone(), |cx| async move {
        let slack = Arc::new(Slack::new(cx, api));
        match config.mode {
            SlackMode::Socket => socket::run(slack.clone(), stop).await,
            SlackMode::Http => events_http::run(slack.clone(), &config, stop).await,
        }
        slack.finish().await;
    })
    .await;
    check.abort();
    info!("slack: stopped");
}

async fn check_token(api: Arc<SlackApi>) {
    match api.identity().await {
        Ok(me) => info!(
            user = %me.user, team = %me.team,
            "slack: bot token accepted"
        ),
        Err(e) => {
            warn!(error = %e, "slack: auth.test failed; check bot_token (cards will be retried)")
        }
    }
}

/// Something Slack sent, after its envelope or signature was dealt with.
#[derive(Debug, Clone)]
pub enum Received {
    /// An interaction payload (`block_actions`, `view_submission`, …).
    Interaction(serde_json::Value),
    /// A slash command.
    SlashCommand(serde_json::Value),
    /// An Events API `event_callback`.
    Event(serde_json::Value),
}

/// The inbound side, shared by Socket Mode and HTTP mode.
pub struct Slack {
    cx: Context,
    api: Arc<SlackApi>,
    tasks: TaskTracker,
}

impl Slack {
    #[must_use]
    pub fn new(cx: Context, api: Arc<SlackApi>) -> Slack {
        Slack {
            cx,
            api,
            tasks: TaskTracker::new(),
        }
    }

    /// `true` the first time Slack's `id` of `kind` (`envelope`, `event`) is seen by
    /// any node (the database remembers a week of ids, across restarts). When the
    /// database cannot tell, it is handled: what it asks for is settled by the engine
    /// once either way.
    pub async fn first_time(&self, kind: &str, id: &str) -> bool {
        match self.cx.engine.chat().heard(&PLATFORM, kind, id).await {
            Ok(first) => first,
            Err(e) => {
                warn!(kind, id, error = %e, "slack: cannot tell whether this was seen before");
                true
            }
        }
    }

    /// Handles `received` on a task of its own, tracked for shutdown.
    pub fn spawn(self: &Arc<Self>, received: Received) {
        let slack = self.clone();
        self.tasks
            .spawn(async move { slack.handle(received).await });
    }

    /// Lets inbound work under way finish (for a while) at shutdown.
    async fn finish(&self) {
        self.tasks.close();
        if tokio::time::timeout(SHUTDOWN_GRACE, self.tasks.wait())
            .await
            .is_err()
        {
            warn!("slack: stopped with work still under way");
        }
    }

    /// Handles one payload. Errors are logged, never returned: Slack has been
    /// acknowledged already.
    pub async fn handle(&self, received: Received) {
        match received {
            Received::Interaction(v) => match serde_json::from_value(v) {
                Ok(Interaction::BlockActions(b)) => self.on_block_actions(b).await,
                Ok(Interaction::ViewSubmission(v)) => self.on_view_submission(v).await,
                Ok(Interaction::Other) => debug!("slack: interaction ignored"),
                Err(e) => warn!(error = %e, "slack: unreadable interaction"),
            },
            Received::SlashCommand(v) => match serde_json::from_value(v) {
                Ok(c) => self.on_command(c).await,
                Err(e) => warn!(error = %e, "slack: unreadable slash command"),
            },
            Received::Event(v) => match serde_json::from_value::<payload::EventCallback>(v) {
                Ok(cb) => {
                    if let Some(id) = &cb.event_id {
                        if !self.first_time("event", id).await {
                            debug!(event_id = %id, "slack: duplicate event ignored");
                            return;
                        }
                    }
                    self.on_event(cb.event).await;
                }
                Err(e) => debug!(error = %e, "slack: event ignored"),
            },
        }
    }

    fn actor(&self, id: &str, name: &str) -> Actor {
        self.cx.actor(id, name)
    }

    async fn on_block_actions(&self, p: payload::BlockActions) {
        let actor = self.actor(&p.user.id, p.user.display());
        let channel = p.channel();
        for action in &p.actions {
            let at = At {
                chat: channel.clone(),
                message: p.message_ts(),
                // Its heading, which names a card's subject.
                text: p.message.as_ref().and_then(payload::MessageRef::shown),
                // A direct message with the app (Slack's DM channel ids start with D).
                private: channel.starts_with('D'),
            };
            let press = Inbound::Press {
                data: action.data().to_string(),
                at,
            };
            let answer = inbound::handle(&self.cx, &actor, press).await;
            self.show_press_answer(&p, &actor, &channel, answer).await;
        }
    }

    /// A press's answer: the card itself shows what was done; anything else (not
    /// allowed, already decided, an error) is told to the clicker alone.
    async fn show_press_answer(
        &self,
        p: &payload::BlockActions,
        actor: &Actor,
        channel: &str,
        answer: Answer,
    ) {
        match answer {
            Answer::Nothing | Answer::Done(_) => {}
            Answer::Notice { .. } | Answer::Card(_) | Answer::Cards(_) => {
                for card in answer.cards() {
                    self.ephemeral(channel, &actor.id, card, None).await;
                }
            }
            Answer::Ask(q) => {
                let Some(trigger) = &p.trigger_id else {
                    // No way to ask: answer without text.
                    let answer =
                        conversation::answer(&self.cx, actor, &q.subject, q.purpose, None).await;
                    return Box::pin(self.show_press_answer(p, actor, channel, answer)).await;
                };
                let view = render::form(&q, channel);
                // A trigger id is good for 3 s: a rate limit is waited out only if that fits.
                let opened = self
                    .api
                    .call_patiently(
                        "views.open",
                        &json!({"trigger_id": trigger, "view": view}),
                        2,
                        TRIGGER_WAIT,
                    )
                    .await;
                if let Err(e) = opened {
                    warn!(error = %e, "slack: cannot open the form");
                    self.ephemeral(channel, &actor.id, &Card::text(q.not_asked), None)
                        .await;
                }
            }
        }
    }

    async fn on_view_submission(&self, p: payload::ViewSubmission) {
        if p.view.callback_id.as_deref() != Some(render::QUESTION_FORM) {
            return;
        }
        let actor = self.actor(&p.user.id, p.user.display());
        let meta: serde_json::Value = p
            .view
            .private_metadata
            .as_deref()
            .and_then(|m| serde_json::from_str(m).ok())
            .unwrap_or_default();
        let Some(subject) = meta["id"].as_str() else {
            warn!("slack: form without a subject");
            return;
        };
        // Forms opened before questions had purposes asked why to deny.
        let purpose = meta["purpose"]
            .as_str()
            .map_or(Some(Purpose::DenyReason), Purpose::parse);
        let Some(purpose) = purpose else {
            warn!("slack: form with an unknown purpose");
            return;
        };
        let text = p.view.input(render::ANSWER_FIELD, render::ANSWER_FIELD);
        let answer = Inbound::Answer {
            subject: subject.to_string(),
            purpose,
            text,
        };
        match inbound::handle(&self.cx, &actor, answer).await {
            Answer::Nothing | Answer::Done(_) => {}
            other => {
                if let (Some(card), Some(channel)) = (other.card(), meta["channel"].as_str()) {
                    self.ephemeral(channel, &actor.id, card, None).await;
                }
            }
        }
    }

    async fn on_command(&self, p: SlashCommand) {
        let actor = self.actor(&p.user_id, p.user_name.as_deref().unwrap_or(&p.user_id));
        let text = Inbound::Text {
            chat: p.channel_id.clone(),
            text: format!("{} {}", p.command, p.text),
            reply_to: None,
            addressed: true,
            direct: false,
            // A slash command is answered to the one who typed it alone (ephemeral).
            private: true,
            // A slash command is no message: a task's card goes top-level there.
            origin: None,
        };
        let answer = inbound::handle(&self.cx, &actor, text).await;
        let cards = match &answer {
            Answer::Nothing => return,
            Answer::Ask(q) => vec![Card::text(q.not_asked.clone())],
            other => other.cards().into_iter().cloned().collect(),
        };
        for card in &cards {
            self.answer_command(&p, card).await;
        }
    }

    /// One message of a slash command's answer, seen only by whoever typed it.
    async fn answer_command(&self, p: &payload::SlashCommand, card: &Card) {
        // The response_url works wherever the command was typed (a DM, a channel the
        // bot is not in); chat.postEphemeral only where the bot is a member.
        if let Some(url) = p.response_url.as_deref().filter(|u| !u.is_empty()) {
            let (text, blocks) = render::render(card);
            let body = json!({"response_type": "ephemeral", "text": text, "blocks": blocks});
            match self.api.respond(url, &body).await {
                Ok(()) => return,
                Err(e) => {
                    warn!(user = %p.user_id, error = %e, "slack: cannot answer through response_url; trying chat.postEphemeral")
                }
            }
        }
        self.ephemeral(&p.channel_id, &p.user_id, card, None).await;
    }

    /// A message: a command typed in a card's thread (no id needed), a `/command`
    /// typed as a plain message, an answer in a task's thread, or (a top-level message
    /// in a DM to the bot or an inbox channel) a task. Other chatter and bot messages
    /// are ignored.
    async fn on_event(&self, ev: payload::Event) {
        if !ev.is_human_message() {
            return;
        }
        let (Some(user), Some(text), Some(channel)) = (&ev.user, &ev.text, &ev.channel) else {
            return;
        };
        let thread = ev.thread().map(str::to_string);
        let actor = self.actor(user, user);
        // The thread's parent is read back only if gatebot has no record of it, and
        // not at all when Slack says someone else wrote it.
        let seen = match (&ev.parent_user_id, self.api.known_identity()) {
            (Some(parent), Some(me)) if *parent != me.user_id => Seen::Theirs,
            _ => Seen::Unread,
        };
        let inbox_channel = self
            .cx
            .engine
            .config()
            .platform::<SlackConfig>()
            .is_some_and(|s| s.inbox_channels.contains(channel));
        let direct =
            thread.is_none() && (ev.channel_type.as_deref() == Some("im") || inbox_channel);
        // A task's card goes in the thread this message starts (or is in).
        let origin = ev.ts.clone().map(|ts| Thread {
            root: ev.thread_ts.clone().unwrap_or_else(|| ts.clone()),
            reply_to: ts,
        });
        let message = Inbound::Text {
            chat: channel.clone(),
            text: text.clone(),
            reply_to: thread.clone().map(|message| Replied { message, seen }),
            addressed: false,
            direct,
            private: ev.channel_type.as_deref() == Some("im"),
            origin,
        };
        let answer = inbound::handle(&self.cx, &actor, message).await;
        let cards = match &answer {
            Answer::Nothing => return,
            Answer::Ask(q) => vec![Card::text(q.not_asked.clone())],
            other => other.cards().into_iter().cloned().collect(),
        };
        for card in &cards {
            self.ephemeral(channel, user, card, thread.as_deref()).await;
        }
    }

    /// Tells one user something only they see (`chat.postEphemeral`).
    async fn ephemeral(&self, channel: &str, user: &str, card: &Card, thread: Option<&str>) {
        if channel.is_empty() {
            warn!(user, "slack: no channel to answer in");
            return;
        }
        let (text, blocks) = render::render(card);
        let mut body = json!({"channel": channel, "user": user, "text": text, "blocks": blocks});
        if let Some(t) = thread {
            body["thread_ts"] = json!(t);
        }
        if let Err(e) = self
            .api
            .call_patiently("chat.postEphemeral", &body, 3, ANSWER_WAIT)
            .await
        {
            warn!(channel, user, error = %e, "slack: cannot answer the user");
        }
    }
}
