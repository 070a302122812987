//! The Slack channel: prompts with buttons, a deny modal, slash commands and thread replies.
//!
//! 1. [`run`] builds a Web API client ([`api`]) and starts two things:
//!    [`delivery`](crate::channel::delivery) with [`sender::SlackSender`] (post a Block Kit
//!    prompt per pending request and channel, `chat.update` it once settled), and the
//!    inbound side: Socket Mode ([`socket`], the default) or HTTP events ([`events_http`]).
//! 2. Inbound traffic is acknowledged first and handled after, on its own task, so Slack
//!    gets its ack within 3 s; envelopes and events are de-duplicated by id ([`Dedup`]).
//! 3. [`Slack::handle`] turns each payload into a [`handle`] call (authorisation, id
//!    resolution and auditing live there) and answers the user ephemerally: a slash
//!    command through its `response_url` (which works in any conversation), anything
//!    else, or a slash command whose `response_url` failed, with `chat.postEphemeral`.
//!
//! Users are authorised by Slack user id (`[slack] approvers`, re-read on every action
//! so a SIGHUP reload applies), never by channel membership.

pub mod api;
pub mod blocks;
pub mod config;
pub mod digest;
pub mod events_http;
pub mod sender;
pub mod socket;

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};

use crate::approval::{Channel, Status, Verb};
use crate::channel::command::{self, decode_button, Button, ChatCommand};
use crate::channel::delivery;
use crate::channel::digest::{decode_nav, navigate};
use crate::channel::handle::{self, Actor, Reply};
use crate::engine::{describe_settled, Engine};
use api::SlackApi;
use config::{SlackConfig, SlackMode};
use sender::SlackSender;

/// Longest rate-limit wait for `views.open`: its trigger id expires after 3 s.
const TRIGGER_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
/// Longest rate-limit wait before an answer to a user is given up.
const ANSWER_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// How many envelope / event ids are remembered for de-duplication.
const DEDUP_CAPACITY: usize = 4096;

/// Runs the Slack channel until `stop` fires. Never fails: problems reaching Slack are
/// logged (without tokens) and retried with backoff.
pub async fn run(engine: Arc<Engine>, config: SlackConfig, stop: CancellationToken) {
    let api = match SlackApi::new(&config) {
        Ok(api) => Arc::new(api),
        Err(e) => {
            error!(error = %e, "slack: cannot build the HTTP client; the Slack channel is off");
            return;
        }
    };
    tokio::spawn({
        let api = api.clone();
        async move {
            match api.call("auth.test", &json!({})).await {
                Ok(me) => info!(
                    user = me["user"].as_str().unwrap_or("?"),
                    team = me["team"].as_str().unwrap_or("?"),
                    "slack: bot token accepted"
                ),
                Err(e) => {
                    warn!(error = %e, "slack: auth.test failed; check bot_token (prompts will be retried)")
                }
            }
        }
    });
    let slack = Arc::new(Slack::new(engine.clone(), api.clone()));
    let sender = Arc::new(SlackSender {
        api,
        channels: config.channels.clone(),
        digest_after: config.digest_after,
    });
    let delivery = tokio::spawn(delivery::run(engine, sender, stop.clone()));
    info!(mode = ?config.mode, channels = ?config.channels, "slack: channel starting");
    match config.mode {
        SlackMode::Socket => socket::run(slack, stop.clone()).await,
        SlackMode::Http => events_http::run(slack, &config, stop.clone()).await,
    }
    let _ = delivery.await;
    info!("slack: channel stopped");
}

/// Something Slack sent, after its envelope or signature was dealt with.
#[derive(Debug, Clone)]
pub enum Inbound {
    /// `block_actions`, `view_submission`, … (an interaction payload).
    Interactive(Value),
    /// A slash command (`command`, `text`, `user_id`, `channel_id`, …).
    SlashCommand(Value),
    /// An Events API `event_callback`.
    Event(Value),
}

/// A bounded set of recently seen ids: the oldest are forgotten first.
#[derive(Debug, Default)]
pub struct Dedup {
    set: HashSet<String>,
    order: VecDeque<String>,
}

impl Dedup {
    /// Records `id`; `true` the first time it is seen (while remembered).
    pub fn first_time(&mut self, id: &str) -> bool {
        if self.set.contains(id) {
            return false;
        }
        if self.order.len() >= DEDUP_CAPACITY {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
        self.set.insert(id.to_string());
        self.order.push_back(id.to_string());
        true
    }
}

/// The inbound side of the channel, shared by Socket Mode and HTTP mode.
pub struct Slack {
    engine: Arc<Engine>,
    api: Arc<SlackApi>,
    seen: Mutex<Dedup>,
}

impl Slack {
    #[must_use]
    pub fn new(engine: Arc<Engine>, api: Arc<SlackApi>) -> Slack {
        Slack {
            engine,
            api,
            seen: Mutex::new(Dedup::default()),
        }
    }

    /// `true` the first time `id` (an envelope or event id) is seen.
    pub fn first_time(&self, id: &str) -> bool {
        self.seen.lock().expect("dedup lock").first_time(id)
    }

    /// Handles one inbound payload. Errors are logged, never returned: Slack has been
    /// acknowledged already.
    pub async fn handle(&self, inbound: Inbound) {
        match inbound {
            Inbound::Interactive(p) => match p["type"].as_str() {
                Some("block_actions") => self.on_block_actions(&p).await,
                Some("view_submission") => self.on_view_submission(&p).await,
                other => debug!(kind = ?other, "slack: interaction ignored"),
            },
            Inbound::SlashCommand(p) => self.on_command(&p).await,
            Inbound::Event(p) => {
                if let Some(id) = p["event_id"].as_str() {
                    if !self.first_time(&format!("event:{id}")) {
                        debug!(event_id = id, "slack: duplicate event ignored");
                        return;
                    }
                }
                self.on_event(&p["event"]).await;
            }
        }
    }

    fn actor(&self, id: &str, name: Option<&str>) -> Actor {
        let approver = self
            .engine
            .config()
            .slack
            .as_ref()
            .is_some_and(|s| s.approvers.contains(id));
        Actor {
            id: id.to_string(),
            name: name.unwrap_or(id).to_string(),
            approver,
        }
    }

    async fn on_block_actions(&self, p: &Value) {
        let Some(user) = p["user"]["id"].as_str() else {
            return;
        };
        let name = p["user"]["username"]
            .as_str()
            .or_else(|| p["user"]["name"].as_str());
        let actor = self.actor(user, name);
        let channel = p["container"]["channel_id"]
            .as_str()
            .or_else(|| p["channel"]["id"].as_str())
            .unwrap_or_default()
            .to_string();
        for action in p["actions"].as_array().into_iter().flatten() {
            let data = action["value"]
                .as_str()
                .or_else(|| action["action_id"].as_str())
                .unwrap_or_default();
            if let Some(nav) = decode_nav(data) {
                let message = p["container"]["message_ts"]
                    .as_str()
                    .or_else(|| p["message"]["ts"].as_str())
                    .unwrap_or_default();
                let reply =
                    navigate(&self.engine, Channel::Slack, &actor, &channel, message, nav).await;
                // Moving through a digest shows in the digest; refusals are told privately.
                if !reply.text().is_empty() {
                    self.ephemeral(&channel, user, &reply, None).await;
                }
                continue;
            }
            let (button, id) = match decode_button(data) {
                Ok(b) => b,
                Err(e) => {
                    warn!(user, error = %e, "slack: unrecognised button");
                    continue;
                }
            };
            let reply = match button {
                Button::Deny if actor.approver => {
                    self.open_deny_modal(p, &actor, &channel, &id).await
                }
                b => reply_unless_decided(
                    handle::decide(&self.engine, Channel::Slack, &actor, b.verb(), &id, None).await,
                ),
            };
            // A decision shows in the prompt itself (delivery edits it); anything else
            // (not allowed, already decided, an error) is told to the clicker alone.
            if let Some(reply) = reply {
                self.ephemeral(&channel, user, &reply, None).await;
            }
        }
    }

    /// Opens the "deny with a reason" modal; the decision happens on its submission.
    /// Returns what to tell the clicker, if anything.
    async fn open_deny_modal(
        &self,
        p: &Value,
        actor: &Actor,
        channel: &str,
        id: &str,
    ) -> Option<Reply> {
        let approval = match self.engine.get(id).await {
            Ok(a) => a,
            Err(e) => return Some(Reply::Text(format!("Cannot find that request: {e}"))),
        };
        if approval.status != Status::Pending {
            return Some(Reply::AlreadySettled(
                format!(
                    "Request {} is already {}.",
                    approval.short_id,
                    describe_settled(&approval)
                ),
                Box::new(approval),
            ));
        }
        let Some(trigger) = p["trigger_id"].as_str() else {
            // No way to ask for a reason: deny without one.
            return reply_unless_decided(
                handle::decide(&self.engine, Channel::Slack, actor, Verb::Deny, id, None).await,
            );
        };
        let view = blocks::deny_modal(&approval, channel);
        // A trigger id is good for 3 s: a rate limit is waited out only if that fits.
        match self
            .api
            .call_patiently(
                "views.open",
                &json!({"trigger_id": trigger, "view": view}),
                2,
                TRIGGER_WAIT,
            )
            .await
        {
            Ok(_) => None,
            Err(e) => {
                warn!(error = %e, "slack: cannot open the deny form");
                Some(Reply::Text(format!(
                    "Could not open the deny form. Use /deny {} [reason] instead.",
                    approval.short_id
                )))
            }
        }
    }

    async fn on_view_submission(&self, p: &Value) {
        let view = &p["view"];
        if view["callback_id"].as_str() != Some(blocks::DENY_MODAL) {
            return;
        }
        let Some(user) = p["user"]["id"].as_str() else {
            return;
        };
        let name = p["user"]["username"]
            .as_str()
            .or_else(|| p["user"]["name"].as_str());
        let actor = self.actor(user, name);
        let meta: Value = view["private_metadata"]
            .as_str()
            .and_then(|m| serde_json::from_str(m).ok())
            .unwrap_or_default();
        let Some(id) = meta["id"].as_str() else {
            warn!("slack: deny form without a request id");
            return;
        };
        let field = blocks::REASON_FIELD;
        let reason = view["state"]["values"][field][field]["value"]
            .as_str()
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(str::to_string);
        let reply =
            handle::decide(&self.engine, Channel::Slack, &actor, Verb::Deny, id, reason).await;
        if let (Some(reply), Some(channel)) =
            (reply_unless_decided(reply), meta["channel"].as_str())
        {
            self.ephemeral(channel, user, &reply, None).await;
        }
    }

    async fn on_command(&self, p: &Value) {
        let (Some(user), Some(cmd)) = (p["user_id"].as_str(), p["command"].as_str()) else {
            return;
        };
        let actor = self.actor(user, p["user_name"].as_str());
        let text = format!("{cmd} {}", p["text"].as_str().unwrap_or_default());
        let parsed = command::parse(&text, None, false).unwrap_or(ChatCommand::Help);
        let reply = handle::command(&self.engine, Channel::Slack, &actor, parsed, None).await;
        // The response_url works wherever the command was typed (a DM, a channel the
        // bot is not in); chat.postEphemeral only where the bot is a member.
        if let Some(url) = p["response_url"].as_str().filter(|u| !u.is_empty()) {
            let (text, blocks) = blocks::reply(&reply);
            let body = json!({"response_type": "ephemeral", "text": text, "blocks": blocks});
            match self.api.respond(url, &body).await {
                Ok(()) => return,
                Err(e) => {
                    warn!(user, error = %e, "slack: cannot answer through response_url; trying chat.postEphemeral")
                }
            }
        }
        let channel = p["channel_id"].as_str().unwrap_or_default();
        self.ephemeral(channel, user, &reply, None).await;
    }

    /// A message: a command typed in a prompt's thread (no id needed) or a `/command`
    /// typed as a plain message. Other chatter and bot messages are ignored.
    async fn on_event(&self, ev: &Value) {
        // A reply also sent to the channel is a `thread_broadcast`; other subtypes are
        // edits, joins, bot posts and the like.
        let subtype = ev["subtype"].as_str();
        if ev["type"].as_str() != Some("message")
            || subtype.is_some_and(|s| s != "thread_broadcast")
            || ev.get("bot_id").is_some_and(|b| !b.is_null())
        {
            return;
        }
        let (Some(user), Some(text), Some(channel)) = (
            ev["user"].as_str(),
            ev["text"].as_str(),
            ev["channel"].as_str(),
        ) else {
            return;
        };
        let thread = ev["thread_ts"]
            .as_str()
            .filter(|t| Some(*t) != ev["ts"].as_str());
        let replied_to = match thread {
            Some(ts) => {
                let (c, t) = (channel.to_string(), ts.to_string());
                match self
                    .engine
                    .blocking(move |s| s.prompt_by_message(Channel::Slack, &c, &t))
                    .await
                {
                    Ok(p) => p.map(|p| p.approval_id),
                    Err(e) => {
                        warn!(error = %e, "slack: cannot look up the thread's prompt");
                        None
                    }
                }
            }
            None => None,
        };
        let Some(cmd) = command::parse(text, None, replied_to.is_some()) else {
            return;
        };
        let actor = self.actor(user, None);
        let reply = handle::command(
            &self.engine,
            Channel::Slack,
            &actor,
            cmd,
            replied_to.as_deref(),
        )
        .await;
        self.ephemeral(channel, user, &reply, thread).await;
    }

    /// Tells one user something only they see (`chat.postEphemeral`).
    async fn ephemeral(&self, channel: &str, user: &str, reply: &Reply, thread: Option<&str>) {
        if channel.is_empty() {
            warn!(user, "slack: no channel to answer in");
            return;
        }
        let (text, blocks) = blocks::reply(reply);
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

/// `None` for a decision (the prompt's edit shows it), the reply otherwise.
fn reply_unless_decided(reply: Reply) -> Option<Reply> {
    match reply {
        Reply::Decided(..) => None,
        other => Some(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dedup_remembers_a_bounded_number_of_ids() {
        let mut d = Dedup::default();
        assert!(d.first_time("a"));
        assert!(!d.first_time("a"));
        for i in 0..DEDUP_CAPACITY {
            d.first_time(&i.to_string());
        }
        assert!(d.order.len() <= DEDUP_CAPACITY && d.set.len() == d.order.len());
        assert!(d.first_time("a"), "the oldest id was forgotten");
    }
}
