//! Posting prompts and editing them after a decision: Telegram's [`ChatSender`].

use std::time::Duration;

use teloxide::prelude::*;
use teloxide::types::{InlineKeyboardMarkup, MessageId, ParseMode};
use teloxide::{ApiError, RequestError};

use crate::approval::{Approval, Channel};
use crate::channel::delivery::{ChatSender, SendError};
use crate::channel::digest::DigestView;
use crate::telegram::{render, scrub, TgBot};

pub struct TelegramSender {
    pub bot: TgBot,
    pub chats: Vec<i64>,
    /// Only to scrub it out of error text.
    pub token: String,
    pub digest_after: usize,
}

/// Telegram allows about one message a second in a chat and 20 a minute in a group;
/// edits are paced the same way (teloxide's `Throttle` paces only sends).
fn pace(chat: i64) -> Duration {
    if chat < 0 {
        Duration::from_secs(3)
    } else {
        Duration::from_secs(1)
    }
}

fn ids(chat: &str, message: &str) -> Result<(ChatId, MessageId), SendError> {
    match (chat.parse::<i64>(), message.parse::<i32>()) {
        (Ok(c), Ok(m)) => Ok((ChatId(c), MessageId(m))),
        _ => Err(SendError::Permanent(format!(
            "bad message record {chat}/{message}"
        ))),
    }
}

fn chat_id(chat: &str) -> Result<ChatId, SendError> {
    chat.parse()
        .map(ChatId)
        .map_err(|_| SendError::Permanent(format!("bad chat id {chat}")))
}

impl TelegramSender {
    fn error(&self, e: RequestError) -> SendError {
        classify(&e, &self.token)
    }
}

/// Maps a teloxide error to what delivery should do, with the token scrubbed.
#[must_use]
pub fn classify(e: &RequestError, token: &str) -> SendError {
    let text = scrub(&e.to_string(), token);
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

impl ChatSender for TelegramSender {
    fn channel(&self) -> Channel {
        Channel::Telegram
    }

    fn destinations(&self) -> Vec<String> {
        self.chats.iter().map(i64::to_string).collect()
    }

    fn pace(&self, chat: &str) -> Duration {
        pace(chat.parse().unwrap_or(-1))
    }

    fn digest_after(&self) -> usize {
        self.digest_after
    }

    async fn post(&self, chat: &str, approval: &Approval) -> Result<String, SendError> {
        let msg = self
            .bot
            .send_message(chat_id(chat)?, render::prompt_text(approval))
            .parse_mode(ParseMode::Html)
            .reply_markup(render::prompt_keyboard(approval))
            .await
            .map_err(|e| self.error(e))?;
        Ok(msg.id.0.to_string())
    }

    async fn finalize(
        &self,
        chat: &str,
        message: &str,
        approval: &Approval,
    ) -> Result<(), SendError> {
        let (chat, message) = ids(chat, message)?;
        self.edit(
            chat,
            message,
            render::final_text(approval),
            InlineKeyboardMarkup::default(),
        )
        .await
    }

    async fn post_digest(&self, chat: &str, view: &DigestView) -> Result<String, SendError> {
        let (text, keyboard) = render::digest(view);
        let msg = self
            .bot
            .send_message(chat_id(chat)?, text)
            .parse_mode(ParseMode::Html)
            .reply_markup(keyboard)
            .await
            .map_err(|e| self.error(e))?;
        Ok(msg.id.0.to_string())
    }

    async fn show_digest(
        &self,
        chat: &str,
        message: &str,
        view: &DigestView,
    ) -> Result<(), SendError> {
        let (chat, message) = ids(chat, message)?;
        let (text, keyboard) = render::digest(view);
        self.edit(chat, message, text, keyboard).await
    }
}

impl TelegramSender {
    /// Edits a message's text and buttons; "not modified" is success (it already shows that).
    async fn edit(
        &self,
        chat: ChatId,
        message: MessageId,
        text: String,
        keyboard: InlineKeyboardMarkup,
    ) -> Result<(), SendError> {
        let res = self
            .bot
            .edit_message_text(chat, message, text)
            .parse_mode(ParseMode::Html)
            .reply_markup(keyboard)
            .await;
        match res {
            Ok(_) | Err(RequestError::Api(ApiError::MessageNotModified)) => Ok(()),
            Err(e) => Err(self.error(e)),
        }
    }
}
