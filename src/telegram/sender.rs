//! Posting prompts and editing them after a decision: Telegram's [`ChatSender`].

use std::time::Duration;

use teloxide::prelude::*;
use teloxide::types::{InlineKeyboardMarkup, MessageId, ParseMode};
use teloxide::{ApiError, RequestError};

use crate::approval::{Approval, Channel};
use crate::channel::delivery::{ChatSender, SendError};
use crate::telegram::{render, scrub, TgBot};

pub struct TelegramSender {
    pub bot: TgBot,
    pub chats: Vec<i64>,
    /// Only to scrub it out of error text.
    pub token: String,
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
        RequestError::Network(_) | RequestError::InvalidJson { .. } | RequestError::Io(_) => {
            SendError::Transient(text)
        }
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

    async fn post(&self, chat: &str, approval: &Approval) -> Result<String, SendError> {
        let chat: i64 = chat
            .parse()
            .map_err(|_| SendError::Permanent(format!("bad chat id {chat}")))?;
        let msg = self
            .bot
            .send_message(ChatId(chat), render::prompt_text(approval))
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
        let (Ok(chat), Ok(message)) = (chat.parse::<i64>(), message.parse::<i32>()) else {
            return Err(SendError::Permanent(format!(
                "bad prompt record {chat}/{message}"
            )));
        };
        let res = self
            .bot
            .edit_message_text(
                ChatId(chat),
                MessageId(message),
                render::final_text(approval),
            )
            .parse_mode(ParseMode::Html)
            .reply_markup(InlineKeyboardMarkup::default())
            .await;
        match res {
            Ok(_) | Err(RequestError::Api(ApiError::MessageNotModified)) => Ok(()),
            Err(e) => Err(self.error(e)),
        }
    }
}
