//! The WhatsApp platform adapter (the Cloud API): cards as interactive messages with
//! reply buttons, answered by a tap, a reply or a command; set-up in `docs/whatsapp.md`.
//!
//! 1. [`run`] builds the Graph API client ([`graph::Graph`]) and runs delivery
//!    ([`crate::chat::delivery`] with [`platform::WhatsApp`]: within the 24-hour window
//!    a card is an interactive message, outside it the approved template; a message
//!    cannot be edited, so a card's outcome is a reply to it, once) and, when `listen`
//!    is set, the webhook listener ([`webhook`]).
//! 2. The webhook answers Meta's verification handshake, and checks every POST's
//!    signature before its body is read; forged ones are refused (403) and audited.
//! 3. Each inbound message ([`Inbox::message`]) is, in order: a repeat of a message
//!    already handled (ignored: Meta retries webhooks; the database remembers the ids
//!    across restarts, and notes that the sender wrote, which opens their window); from
//!    a number that is no approver (refused and audited); a reply button (the card
//!    button's data); a template's quick reply ([`platform::read_payload`]: show the
//!    full card, or approve or deny by id); text, a reply to a card when it quotes one
//!    (`context.id`), read like a command or reply on every platform.
//! 4. gatebot's answer goes back as a message (the window is open: they just wrote).
//!    Delivery statuses that failed are logged and counted; a card that failed because
//!    the window had closed (131047, reported after Meta took it) goes as the template.
//!
//! Approvers are phone numbers (`[whatsapp] approvers`, E.164, re-read on every message
//! so a reload applies); WhatsApp's `wa_id` is the number without its `+`. The numbers
//! cards go to are the chats.

pub mod graph;
pub mod platform;
pub mod render;
pub mod webhook;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};

pub use crate::config::whatsapp::WhatsAppConfig;

use crate::approval::PlatformId;
use crate::chat::card::{Block, Card};
use crate::chat::conversation::{self, Action};
use crate::chat::exchange::{Actor, Answer, At, Question};
use crate::chat::inbound::{self, Inbound, Replied, Seen};
use crate::chat::Context;
use crate::engine::Engine;
use crate::settings::PlatformSettings;
use graph::Graph;

/// The platform's key.
pub const PLATFORM: PlatformId = PlatformId::new(<WhatsAppConfig as PlatformSettings>::KEY);

/// How many times an answer is tried when WhatsApp asks to wait.
const ANSWER_ATTEMPTS: u32 = 3;

/// Runs the adapter until `stop` fires. Never fails: problems reaching WhatsApp are
/// logged (without the token) and retried by delivery.
pub async fn run(engine: Arc<Engine>, config: WhatsAppConfig, stop: CancellationToken) {
    let graph = match Graph::new(&config, engine.metrics.clone()) {
        Ok(g) => Arc::new(g),
        Err(e) => {
            error!(error = %e, "whatsapp: cannot build the HTTP client; WhatsApp is off");
            return;
        }
    };
    let platform = Arc::new(platform::WhatsApp {
        graph: graph.clone(),
        engine: engine.clone(),
        config: config.clone(),
    });
    info!(
        numbers = config.chat.destinations.len(),
        "whatsapp: starting"
    );
    let sender = platform.clone();
    crate::chat::run(engine, platform, None, stop.clone(), |cx| async move {
        let (Some(listen), Some(secret), Some(verify)) = (
            config.listen.clone(),
            config.app_secret.clone(),
            config.verify_token.clone(),
        ) else {
            info!("whatsapp: no listen address, so cards are sent but answers are not read");
            stop.cancelled().await;
            return;
        };
        let inbox = Arc::new(Inbox {
            cx,
            graph,
            platform: sender,
            app_secret: secret,
            verify_token: verify,
        });
        webhook::run(inbox, &listen, stop).await;
    })
    .await;
    info!("whatsapp: stopped");
}

/// A number as WhatsApp writes it (`wa_id`): its digits, without the `+`.
#[must_use]
pub fn to_wa_id(number: &str) -> String {
    number.trim_start_matches('+').to_string()
}

/// A `wa_id` as gatebot writes numbers: E.164, with the `+`.
#[must_use]
pub fn from_wa_id(wa_id: &str) -> String {
    format!("+{}", wa_id.trim_start_matches('+'))
}

/// The inbound side: webhooks, once their signature is checked.
pub struct Inbox {
    cx: Context,
    graph: Arc<Graph>,
    /// The outbound side, to send a card's template when Meta says its window closed.
    platform: Arc<platform::WhatsApp>,
    pub app_secret: crate::secret::Secret,
    pub verify_token: crate::secret::Secret,
}

/// What a person's message is, as read from the webhook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    /// A reply button: its id.
    Button(String),
    /// A template's quick reply: its payload.
    QuickReply(String),
    /// Text.
    Text(String),
    /// Anything else (an image, a location): not for gatebot.
    Other(String),
}

impl Inbox {
    /// A POST without a good signature: audited, naming the number it claims.
    pub async fn forged(&self, body: &[u8]) {
        let claimed = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| {
                v["entry"][0]["changes"][0]["value"]["messages"][0]["from"]
                    .as_str()
                    .map(from_wa_id)
            })
            .unwrap_or_else(|| "unknown".into());
        warn!(
            claimed,
            "whatsapp: webhook with a missing or bad signature refused"
        );
        let actor = Actor {
            id: claimed,
            name: "unsigned webhook".into(),
            approver: false,
            person: None,
        };
        let _ = inbound::refuse(&self.cx, &actor, None, "webhook with a bad signature").await;
    }

    /// Everything a genuine webhook's body says, in order.
    pub async fn receive(&self, body: Value) {
        let changes = body["entry"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|e| e["changes"].as_array().into_iter().flatten());
        for change in changes {
            let value = &change["value"];
            for s in value["statuses"].as_array().into_iter().flatten() {
                self.status(s).await;
            }
            for m in value["messages"].as_array().into_iter().flatten() {
                let from = m["from"].as_str().unwrap_or_default();
                let name = value["contacts"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|c| c["wa_id"].as_str() == Some(from))
                    .and_then(|c| c["profile"]["name"].as_str())
                    .unwrap_or(from);
                self.message(m, name).await;
            }
        }
    }

    /// A delivery status: a failed message is logged and counted. A card Meta could not
    /// deliver because the person's window had closed (131047, which Meta may report
    /// only here, after taking the message) goes again as the template.
    async fn status(&self, s: &Value) {
        let id = s["id"].as_str().unwrap_or_default();
        let to = s["recipient_id"].as_str().unwrap_or_default();
        let status = s["status"].as_str().unwrap_or_default();
        if status != "failed" {
            debug!(message = id, to, status, "whatsapp: delivery status");
            return;
        }
        let code = s["errors"][0]["code"].as_i64();
        let title = s["errors"][0]["title"].as_str().unwrap_or_default();
        warn!(
            message = id,
            to, code, title, "whatsapp: a message was not delivered"
        );
        self.cx.engine.metrics.chat_error(&PLATFORM);
        if code == Some(graph::REENGAGEMENT) {
            self.re_engage(&from_wa_id(to), id).await;
        }
    }

    /// Sends the template for the card `message` in `chat`, if it is one of a subject
    /// that still waits. Its quick replies name the subject, so they work though the
    /// card's record keeps the undelivered message.
    async fn re_engage(&self, chat: &str, message: &str) {
        let engine = &self.cx.engine;
        let shown = match engine.chat().shown_at(&PLATFORM, chat, message).await {
            Ok(Some(s)) if s.by == crate::subject::ShownBy::Card => s,
            Ok(_) => return,
            Err(e) => {
                error!(error = %e, "whatsapp: cannot look up an undelivered message");
                return;
            }
        };
        let card = match conversation::render(engine, &shown.subject).await {
            Ok(Some(r)) if r.open => r.card,
            Ok(_) => return,
            Err(e) => {
                error!(error = %e, "whatsapp: cannot draw an undelivered card again");
                return;
            }
        };
        match self.platform.send_template(chat, &card).await {
            Ok(_) => info!(
                chat,
                "whatsapp: an undelivered card went again as the template"
            ),
            Err(e) => {
                warn!(chat, error = %e, "whatsapp: cannot send the template for an undelivered card")
            }
        }
    }

    /// `true` the first time message `id` from `from` is seen; either way the sender is
    /// noted as having written now. When the database cannot tell, the message is
    /// handled: what it asks for is settled by the engine once either way.
    async fn first_time(&self, id: &str, from: &str) -> bool {
        match self.cx.engine.chat().heard(&PLATFORM, from, id).await {
            Ok(first) => first,
            Err(e) => {
                warn!(message = id, error = %e, "whatsapp: cannot tell whether this message was seen before");
                true
            }
        }
    }

    /// One inbound message (see the module docs).
    pub async fn message(&self, m: &Value, name: &str) {
        let (Some(wa_id), Some(id)) = (m["from"].as_str(), m["id"].as_str()) else {
            return;
        };
        let from = from_wa_id(wa_id);
        if !self.first_time(id, &from).await {
            debug!(message = id, "whatsapp: a webhook delivered again ignored");
            return;
        }
        let context = m["context"]["id"].as_str().map(str::to_string);
        let said = read(m);
        let actor = self.cx.actor(&from, name);
        if !actor.approver {
            let (subject, attempted) = match &said {
                Said::Button(data) => (
                    Action::decode(data)
                        .ok()
                        .and_then(|a| a.subject().map(str::to_string)),
                    "button",
                ),
                Said::QuickReply(p) => (
                    match platform::read_payload(p) {
                        Some((_, short)) => {
                            self.cx.engine.chat().lookup(short).await.ok().map(|s| s.id)
                        }
                        None => None,
                    },
                    "template button",
                ),
                _ => (None, "message"),
            };
            let refused = inbound::refuse(&self.cx, &actor, subject, attempted).await;
            self.answer(&from, id, refused, false).await;
            return;
        }
        let (inbound, pressed) = match said {
            Said::Button(data) => (
                Inbound::Press {
                    data,
                    at: At {
                        chat: from.clone(),
                        message: context,
                        text: None,
                        private: true,
                    },
                },
                true,
            ),
            Said::QuickReply(p) => match platform::read_payload(&p) {
                Some(("show", platform::PENDING)) => (self.typed(&from, "/pending", None), false),
                Some(("show", short)) => {
                    self.show(&from, context.as_deref().unwrap_or(id), short)
                        .await;
                    return;
                }
                Some((verb, short)) => (self.typed(&from, &format!("/{verb} {short}"), None), true),
                None => {
                    debug!(payload = p, "whatsapp: a quick reply gatebot did not send");
                    return;
                }
            },
            Said::Text(text) => (self.typed(&from, &text, context), false),
            Said::Other(kind) => {
                debug!(kind, "whatsapp: a message gatebot does not read");
                return;
            }
        };
        let answer = inbound::handle(&self.cx, &actor, inbound).await;
        if let Answer::Ask(q) = answer {
            self.ask(&from, id, &actor, q).await;
            return;
        }
        self.answer(&from, id, answer, pressed).await;
    }

    /// Text from `from`, replying to `context` when it quotes a message.
    fn typed(&self, from: &str, text: &str, context: Option<String>) -> Inbound {
        Inbound::Text {
            chat: from.to_string(),
            text: text.to_string(),
            reply_to: context.map(|message| Replied {
                message,
                seen: Seen::Unread,
            }),
            addressed: true,
            direct: true,
            private: true,
            origin: None,
        }
    }

    /// The full card of subject `short`, after its template's "show" (the window is open
    /// now): as a reply to the template.
    async fn show(&self, to: &str, reply_to: &str, short: &str) {
        let engine = &self.cx.engine;
        let card = match engine.chat().lookup(short).await {
            Ok(subject) => match conversation::render(engine, &subject).await {
                Ok(Some(r)) if r.open => r.card,
                Ok(Some(r)) => match render::outcome(&r.card) {
                    Some(o) => Card::text(o),
                    None => r.card,
                },
                Ok(None) => return,
                Err(e) => {
                    error!(error = %e, "whatsapp: cannot draw the card asked for");
                    return;
                }
            },
            Err(_) => Card::text(format!("gatebot has nothing with the id {short} any more.")),
        };
        let message = platform::message_json(to, &render::render(&card), Some(reply_to));
        self.send(message).await;
    }

    /// Asks `q` as a reply to the message that asked for it, with its skip button, and
    /// records it so that a reply to it is its answer (also after a restart).
    async fn ask(&self, to: &str, reply_to: &str, actor: &Actor, q: Question) {
        let line = q
            .text
            .clone()
            .capitalised()
            .and(" Reply to this message with your answer.");
        let card = Card {
            blocks: vec![Block::Line(line)],
            buttons: q.skip.iter().map(|b| vec![b.clone()]).collect(),
            ..Card::default()
        };
        let message = platform::message_json(to, &render::render(&card), Some(reply_to));
        let Some(sent) = self.send(message).await else {
            // It could not be asked: answer without text.
            let answer = conversation::answer(&self.cx, actor, &q.subject, q.purpose, None).await;
            self.answer(to, reply_to, answer, false).await;
            return;
        };
        if let Err(e) = self
            .cx
            .engine
            .chat()
            .ask(&PLATFORM, to, &sent, &q.subject, q.purpose)
            .await
        {
            error!(error = %e, "whatsapp: cannot record the question; a reply to it will not count");
        }
    }

    /// Shows `answer` to `to` as replies to their message `reply_to`. A press's `Done`
    /// is not sent: the card's outcome goes as a reply to the card.
    async fn answer(&self, to: &str, reply_to: &str, answer: Answer, pressed: bool) {
        if pressed && matches!(answer, Answer::Done(_)) {
            return;
        }
        for card in answer.cards() {
            let message = platform::message_json(to, &render::render(card), Some(reply_to));
            self.send(message).await;
        }
    }

    /// Sends `message`, waiting out a rate limit a few times; its id, if it went.
    async fn send(&self, message: Value) -> Option<String> {
        for attempt in 0..ANSWER_ATTEMPTS {
            match self.graph.send(message.clone()).await {
                Ok(id) => return Some(id),
                Err(r) => match r
                    .error
                    .retry_in(attempt, ANSWER_ATTEMPTS, Duration::from_secs(10))
                {
                    Some(wait) => tokio::time::sleep(wait).await,
                    None => {
                        self.cx.engine.metrics.chat_error(&PLATFORM);
                        warn!(error = %r.error, "whatsapp: cannot send an answer");
                        return None;
                    }
                },
            }
        }
        None
    }
}

/// What message `m` says.
#[must_use]
pub fn read(m: &Value) -> Said {
    match m["type"].as_str().unwrap_or_default() {
        "interactive" => match m["interactive"]["button_reply"]["id"].as_str() {
            Some(id) => Said::Button(id.to_string()),
            None => Said::Other("interactive".into()),
        },
        "button" => match m["button"]["payload"].as_str() {
            Some(p) => Said::QuickReply(p.to_string()),
            None => Said::Other("button".into()),
        },
        "text" => Said::Text(m["text"]["body"].as_str().unwrap_or_default().to_string()),
        other => Said::Other(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_are_wa_ids_without_the_plus() {
        assert_eq!(to_wa_id("+15551234567"), "15551234567");
        assert_eq!(from_wa_id("15551234567"), "+15551234567");
        assert_eq!(from_wa_id(&to_wa_id("+4915112345678")), "+4915112345678");
    }

    /// Messages as Meta's webhook reference shows them.
    #[test]
    fn reads_buttons_quick_replies_and_text() {
        let button = json!({"from": "16505551234", "id": "wamid.1", "type": "interactive",
            "context": {"from": "15550783881", "id": "wamid.card"},
            "interactive": {"type": "button_reply", "button_reply": {"id": "gb1:a:x", "title": "Allow"}}});
        assert_eq!(read(&button), Said::Button("gb1:a:x".into()));
        let quick = json!({"from": "16505551234", "id": "wamid.2", "type": "button",
            "button": {"payload": "gatebot show k7m2abcd", "text": "Show"}});
        assert_eq!(
            read(&quick),
            Said::QuickReply("gatebot show k7m2abcd".into())
        );
        let text = json!({"from": "16505551234", "id": "wamid.3", "type": "text",
            "text": {"body": "/pending"}});
        assert_eq!(read(&text), Said::Text("/pending".into()));
        assert_eq!(read(&json!({"type": "image"})), Said::Other("image".into()));
    }
}
