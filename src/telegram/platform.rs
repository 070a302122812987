//! Telegram's outbound side: posting and editing cards ([`Platform`]), and what a
//! failed Bot API call means for whoever retries it ([`classify`]).

use std::time::Duration;

use teloxide::prelude::*;
use teloxide::types::{MessageId, ParseMode, ReplyParameters};
use teloxide::{ApiError, RequestError};

use crate::approval::PlatformId;
use crate::chat::card::Card;
use crate::chat::platform::{Platform, SendError};
use crate::secret::scrub;
use crate::subject::Thread;
use crate::telegram::api::BotApi;
use crate::telegram::{render, PLATFORM};

pub struct Telegram {
    pub bot: BotApi,
    /// Only to scrub it out of error text.
    pub token: String,
    /// The bot's own user id: messages from it are gatebot's.
    pub id: UserId,
}

/// Telegram allows about one message a second in a chat and 20 a minute in a group;
/// edits are paced the same way (the API client's limits pace only sends).
fn pace(chat: i64) -> Duration {
    if chat < 0 {
        Duration::from_secs(3)
    } else {
        Duration::from_secs(1)
    }
}

fn chat_id(chat: &str) -> Result<ChatId, SendError> {
    chat.parse()
        .map(ChatId)
        .map_err(|_| SendError::Permanent(format!("bad chat id {chat}")))
}

fn message_id(message: &str) -> Result<MessageId, SendError> {
    message
        .parse()
        .map(MessageId)
        .map_err(|_| SendError::Permanent(format!("bad message id {message}")))
}

/// Maps a teloxide error to what a caller should do, with the token scrubbed.
#[must_use]
pub fn classify(e: &RequestError, token: &str) -> SendError {
    let text = scrub(&e.to_string(), &[token]);
    match e {
        RequestError::RetryAfter(s) => {
            SendError::RetryAfter(s.duration().max(Duration::from_secs(1)))
        }
        // Not connected: nothing was sent. Broken after sending: it may have arrived.
        RequestError::Network(n) if n.is_connect() => SendError::Transient(text),
        RequestError::Network(_) | RequestError::Io(_) => SendError::Unknown(text),
        RequestError::InvalidJson { .. } => SendError::Transient(text),
        RequestError::MigrateToChatId(id) => SendError::Permanent(format!(
            "the group became a supergroup with id {id}: put that id in [telegram] chats"
        )),
        // Telegram answers 4xx with "Bad Request: …" / "Forbidden: …": retrying will not
        // help. Anything else (a 5xx's "Internal Server Error", a proxy's page) may pass.
        RequestError::Api(ApiError::Unknown(d))
            if !(d.starts_with("Bad Request") || d.starts_with("Forbidden")) =>
        {
            SendError::Transient(text)
        }
        RequestError::Api(_) => SendError::Permanent(text),
    }
}

impl Telegram {
    fn error(&self, e: &RequestError) -> SendError {
        classify(e, &self.token)
    }

    /// Sends `card` to `chat`, as a reply to `reply_to` if given; returns the message.
    pub async fn send(
        &self,
        chat: ChatId,
        card: &Card,
        reply_to: Option<MessageId>,
    ) -> Result<Message, SendError> {
        let (text, keyboard) = render::render(card);
        let mut call = self.bot.send_message(chat, text);
        if !render::is_plain(card) {
            call = call.parse_mode(ParseMode::Html);
        }
        if !card.buttons.is_empty() {
            call = call.reply_markup(keyboard);
        }
        if let Some(m) = reply_to {
            call = call.reply_parameters(ReplyParameters::new(m).allow_sending_without_reply());
        }
        call.await.map_err(|e| self.error(&e))
    }
}

impl Platform for Telegram {
    fn id(&self) -> PlatformId {
        PLATFORM
    }

    fn pace(&self, chat: &str) -> Duration {
        pace(chat.parse().unwrap_or(-1))
    }

    async fn post(
        &self,
        chat: &str,
        card: &Card,
        thread: Option<&Thread>,
    ) -> Result<String, SendError> {
        // Telegram threads are replies: to the owner's message, or the task's card.
        let reply_to = thread.map(|t| message_id(&t.reply_to)).transpose()?;
        let msg = self.send(chat_id(chat)?, card, reply_to).await?;
        Ok(msg.id.0.to_string())
    }

    async fn edit(&self, chat: &str, message: &str, card: &Card) -> Result<(), SendError> {
        let (text, keyboard) = render::render(card);
        let mut call = self
            .bot
            .edit_message_text(chat_id(chat)?, message_id(message)?, text)
            .reply_markup(keyboard);
        if !render::is_plain(card) {
            call = call.parse_mode(ParseMode::Html);
        }
        let res = call.await;
        match res {
            // "Not modified": it shows that already.
            Ok(_) | Err(RequestError::Api(ApiError::MessageNotModified)) => Ok(()),
            Err(e) => Err(self.error(&e)),
        }
    }
}
