//! WhatsApp's outbound side.
//!
//! 1. A card goes to a number as an interactive message with its first three buttons
//!    ([`super::render`]) when that person wrote to the business number in the last 24
//!    hours (the engine's contacts: `ChatState::contact`, noted by every inbound
//!    message); otherwise, and whenever Meta answers 131047 (the window closed), as the
//!    configured template, whose quick-reply buttons carry the action and the id (see
//!    [`payload`]; a digest's carry "show pending"). Its message id is the card's.
//! 2. A message cannot be edited. Delivery edits a card when its subject changes: while
//!    the subject is open nothing is sent; once it shows an outcome, the outcome goes
//!    as a reply to the card (`context.message_id`), once per card: it is taken in the
//!    database just before it is sent (`ChatState::take_outcome`, on the card's row), so
//!    a later change (an approved request that ran) or a restart never sends it again;
//!    it is put back only when WhatsApp said it sent nothing (a crash in between loses
//!    it, as a reminder would be). Outside the window the outcome is not sent: the
//!    person decided elsewhere, and the dashboard shows it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tracing::{info, warn};

use super::graph::{Graph, Refused, REENGAGEMENT};
use super::render::{self, Message};
use super::{to_wa_id, WhatsAppConfig, PLATFORM};
use crate::approval::PlatformId;
use crate::chat::card::{Block, Card, Tag};
use crate::chat::platform::{Platform, SendError};
use crate::config::whatsapp::TemplateButton;
use crate::engine::Engine;
use crate::subject::{SubjectKind, Thread};

/// How long after a person's last message free-form messages reach them.
pub const WINDOW: Duration = Duration::from_secs(24 * 60 * 60);
/// Kept back from the window, so a message is not sent at its very edge.
const WINDOW_MARGIN: Duration = Duration::from_secs(60);
/// What a template's "show" names for a message of no one subject (a digest): the
/// `/pending` list.
pub const PENDING: &str = "pending";
/// The pace of calls in one chat (Meta's pair rate limit allows bursts, then about
/// one message every six seconds; 131056 is waited out when it comes).
pub const CHAT_PACE: Duration = Duration::from_secs(1);

pub struct WhatsApp {
    pub graph: Arc<Graph>,
    pub engine: Arc<Engine>,
    pub config: WhatsAppConfig,
}

/// The payload of a template quick-reply button: what it does and the subject's id,
/// read back by [`read_payload`].
#[must_use]
pub fn payload(button: TemplateButton, kind: SubjectKind, short: &str) -> String {
    let decides = matches!(kind, SubjectKind::Approval | SubjectKind::Proposal);
    let verb = match button {
        TemplateButton::Approve if decides => "approve",
        TemplateButton::Deny if decides => "deny",
        _ => "show",
    };
    format!("gatebot {verb} {short}")
}

/// What a template quick reply's payload asks: `(verb, short id)`.
#[must_use]
pub fn read_payload(payload: &str) -> Option<(&str, &str)> {
    let mut words = payload.split_whitespace();
    match (words.next(), words.next(), words.next(), words.next()) {
        (Some("gatebot"), Some(verb @ ("show" | "approve" | "deny")), Some(short), None) => {
            Some((verb, short))
        }
        _ => None,
    }
}

/// The Messages API's JSON for `message` to `to` (E.164), replying to `context`.
#[must_use]
pub fn message_json(to: &str, message: &Message, context: Option<&str>) -> Value {
    let mut v = match message {
        Message::Text { body } => json!({
            "to": to_wa_id(to),
            "type": "text",
            "text": {"body": body, "preview_url": false},
        }),
        Message::Interactive { body, buttons } => json!({
            "to": to_wa_id(to),
            "type": "interactive",
            "interactive": {
                "type": "button",
                "body": {"text": body},
                "action": {"buttons": buttons.iter().map(|b| json!({
                    "type": "reply",
                    "reply": {"id": b.id, "title": b.title},
                })).collect::<Vec<_>>()},
            },
        }),
    };
    if let Some(c) = context {
        v["context"] = json!({"message_id": c});
    }
    v
}

impl WhatsApp {
    /// Whether `chat` wrote to the business number within the window.
    async fn window_open(&self, chat: &str) -> Result<bool, SendError> {
        let contact = self
            .engine
            .chat()
            .contact(&PLATFORM, chat)
            .await
            .map_err(|e| SendError::Transient(format!("database: {e}")))?;
        Ok(within_window(
            contact.last_inbound_at,
            crate::time::now_ms(),
        ))
    }

    /// The template message for `card` to `chat`.
    pub async fn send_template(&self, chat: &str, card: &Card) -> Result<String, SendError> {
        let Some(name) = &self.config.template else {
            return Err(SendError::Permanent(
                "this person has not written to the business number in 24 hours, and WhatsApp \
                 then takes only an approved template: set one in [whatsapp] template (docs/whatsapp.md)"
                    .into(),
            ));
        };
        let (one, two) = render::variables(card);
        let subject = subject(card);
        let mut components = vec![json!({
            "type": "body",
            "parameters": [{"type": "text", "text": one}, {"type": "text", "text": two}],
        })];
        for (i, b) in self.config.template_buttons.iter().enumerate() {
            components.push(json!({
                "type": "button",
                "sub_type": "quick_reply",
                "index": i.to_string(),
                "parameters": [{"type": "payload", "payload": match &subject {
                    Some((kind, short)) => payload(*b, *kind, short),
                    // A digest, a notice: what waits is listed by /pending.
                    None => format!("gatebot show {PENDING}"),
                }}],
            }));
        }
        let message = json!({
            "to": to_wa_id(chat),
            "type": "template",
            "template": {
                "name": name,
                "language": {"code": self.config.template_language},
                "components": components,
            },
        });
        info!(
            chat,
            "whatsapp: outside the 24-hour window; sending the template"
        );
        self.graph.send(message).await.map_err(|r| r.error)
    }
}

/// Whether a person who last wrote at `last` (ms) can get a free-form message at `now`.
#[must_use]
pub fn within_window(last: Option<i64>, now: i64) -> bool {
    let open = i64::try_from((WINDOW - WINDOW_MARGIN).as_millis()).unwrap_or(i64::MAX);
    last.is_some_and(|t| now - t < open)
}

/// The kind and short id of the subject `card` shows.
fn subject(card: &Card) -> Option<(SubjectKind, String)> {
    card.blocks.iter().find_map(|b| match b {
        Block::Heading {
            tag: Some(Tag::Subject { kind, short }),
            ..
        } => Some((*kind, short.clone())),
        _ => None,
    })
}

impl Platform for WhatsApp {
    fn id(&self) -> PlatformId {
        PLATFORM
    }

    fn pace(&self, _chat: &str) -> Duration {
        CHAT_PACE
    }

    /// In a thread, the card replies to the thread's message.
    async fn post(
        &self,
        chat: &str,
        card: &Card,
        thread: Option<&Thread>,
    ) -> Result<String, SendError> {
        if self.window_open(chat).await? {
            let context = thread.map(|t| t.reply_to.as_str());
            let message = message_json(chat, &render::render(card), context);
            match self.graph.send(message).await {
                Err(Refused {
                    code: Some(REENGAGEMENT),
                    ..
                }) => {
                    info!(chat, "whatsapp: Meta says the 24-hour window closed");
                }
                other => return other.map_err(|r| r.error),
            }
        }
        self.send_template(chat, card).await
    }

    /// Sends the card's outcome as a reply to it, once (see the module docs).
    async fn edit(&self, chat: &str, message: &str, card: &Card) -> Result<(), SendError> {
        let Some(text) = render::outcome(card) else {
            return Ok(());
        };
        if !self.window_open(chat).await? {
            info!(
                chat,
                "whatsapp: an outcome is not sent: this person has not written in 24 hours"
            );
            return Ok(());
        }
        let chats = self.engine.chat();
        let database =
            |e: crate::engine::EngineError| SendError::Transient(format!("database: {e}"));
        if !chats
            .take_outcome(&PLATFORM, chat, message)
            .await
            .map_err(database)?
        {
            return Ok(());
        }
        let json = message_json(chat, &Message::Text { body: text }, Some(message));
        match self.graph.send(json).await {
            Ok(_) => Ok(()),
            // Nothing was sent: send it when delivery tries again.
            Err(Refused {
                error: error @ (SendError::Transient(_) | SendError::RetryAfter(_)),
                ..
            }) => {
                if let Err(e) = chats.put_back_outcome(&PLATFORM, chat, message).await {
                    warn!(message, error = %e, "whatsapp: an outcome WhatsApp did not take cannot be kept for later; it is not sent");
                }
                Err(error)
            }
            // Sent or maybe sent (Unknown), or never will be (Permanent): it stays taken.
            Err(r) => Err(r.error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_is_24_hours_from_the_last_message_less_a_minute() {
        let now = 100 * 24 * 3_600_000;
        assert!(!within_window(None, now));
        assert!(within_window(Some(now - 1_000), now));
        assert!(within_window(Some(now - 23 * 3_600_000), now));
        assert!(!within_window(Some(now - 24 * 3_600_000 + 30_000), now));
        assert!(!within_window(Some(now - 25 * 3_600_000), now));
    }

    #[test]
    fn payloads_name_the_action_and_decide_only_what_approve_and_deny_decide() {
        let p = payload(TemplateButton::Approve, SubjectKind::Approval, "k7m2abcd");
        assert_eq!(p, "gatebot approve k7m2abcd");
        assert_eq!(read_payload(&p), Some(("approve", "k7m2abcd")));
        let p = payload(TemplateButton::Deny, SubjectKind::CheckIn, "k7m2abcd");
        assert_eq!(read_payload(&p), Some(("show", "k7m2abcd")));
        assert_eq!(read_payload("gatebot drop k7m2abcd"), None);
        assert_eq!(read_payload("gatebot show k7m2abcd extra"), None);
    }
}
