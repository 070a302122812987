//! The Bot API client: teloxide's types and request payloads, with the HTTP call made
//! here, so failures reach gatebot's own retries at once.
//!
//! teloxide's `Bot` sleeps a fixed 10 s inside every call Telegram answers with a 5xx,
//! before the caller sees the error (teloxide-core 0.13, `net/request.rs`,
//! `DELAY_ON_SERVER_ERROR`), and its `Throttle` adaptor waits out 429s by itself, so
//! they were never counted. Here:
//! 1. each call is one POST of the payload's JSON to `{api_url}/bot<token>/<Method>`
//!    (the `Bot` supplies its HTTP client, token and URL), answered as soon as
//!    Telegram answers: a 5xx is an error for the caller to retry with its backoff
//!    (1 s, 2 s, 4 s …), as every Slack call is;
//! 2. every 429 is counted (`gatebot_chat_rate_limited_total`) and returned with its
//!    `retry_after`; the caller waits it out (delivery holds the chat, replies retry
//!    when the wait is short), and sends to that chat wait for it too;
//! 3. sends are paced within Telegram's limits ([`Limits`]), as `Throttle` paced them.
//!
//! Errors are teloxide's [`RequestError`], with the URL (which holds the token) taken
//! out of network errors.

use std::future::{Future, IntoFuture};
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use teloxide::payloads::{
    AnswerCallbackQuery, EditMessageReplyMarkup, EditMessageText, GetMe, GetUpdates, SendMessage,
    SetMyCommands,
};
use teloxide::requests::{HasPayload, Payload};
use teloxide::types::{
    BotCommand, CallbackQueryId, ChatId, False, MessageId, Recipient, ResponseParameters, True,
};
use teloxide::{ApiError, Bot, RequestError};

use super::limits::Limits;
use super::PLATFORM;
use crate::metrics::Metrics;

/// A Bot API client (see the module docs). Clones share the limits.
#[derive(Clone)]
pub struct BotApi {
    bot: Bot,
    limits: Arc<Limits>,
    /// Where 429s are counted (none for `check-config --telegram`).
    metrics: Option<Arc<Metrics>>,
}

impl std::fmt::Debug for BotApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BotApi").finish_non_exhaustive()
    }
}

/// One Bot API call: a payload, whose setters (`.parse_mode(…)`, `.reply_markup(…)`)
/// are teloxide's, sent by awaiting it (or [`Call::send`]).
#[must_use = "a call does nothing until it is awaited"]
pub struct Call<'a, P> {
    api: &'a BotApi,
    payload: P,
}

/// A Bot API answer: `{"ok": true, "result": …}` or `{"ok": false, "description": …,
/// "parameters": {…}}`.
#[derive(Deserialize)]
#[serde(untagged)]
enum Answer<R> {
    Ok {
        #[allow(dead_code)]
        ok: True,
        result: R,
    },
    Err {
        #[allow(dead_code)]
        ok: False,
        description: ApiError,
        parameters: Option<ResponseParameters>,
    },
}

impl BotApi {
    #[must_use]
    pub fn new(bot: Bot) -> BotApi {
        BotApi {
            bot,
            limits: Arc::new(Limits::default()),
            metrics: None,
        }
    }

    /// Counts every 429 in `metrics`.
    #[must_use]
    pub fn counting(mut self, metrics: Arc<Metrics>) -> BotApi {
        self.metrics = Some(metrics);
        self
    }

    fn call<P>(&self, payload: P) -> Call<'_, P> {
        Call { api: self, payload }
    }

    pub fn get_me(&self) -> Call<'_, GetMe> {
        self.call(GetMe::new())
    }

    pub fn get_updates(&self) -> Call<'_, GetUpdates> {
        self.call(GetUpdates::new())
    }

    pub fn set_my_commands(&self, commands: Vec<BotCommand>) -> Call<'_, SetMyCommands> {
        self.call(SetMyCommands::new(commands))
    }

    pub fn send_message(&self, chat: ChatId, text: impl Into<String>) -> Call<'_, SendMessage> {
        self.call(SendMessage::new(chat, text))
    }

    pub fn edit_message_text(
        &self,
        chat: ChatId,
        message: MessageId,
        text: impl Into<String>,
    ) -> Call<'_, EditMessageText> {
        self.call(EditMessageText::new(chat, message, text))
    }

    pub fn edit_message_reply_markup(
        &self,
        chat: ChatId,
        message: MessageId,
    ) -> Call<'_, EditMessageReplyMarkup> {
        self.call(EditMessageReplyMarkup::new(chat, message))
    }

    pub fn answer_callback_query(&self, id: CallbackQueryId) -> Call<'_, AnswerCallbackQuery> {
        self.call(AnswerCallbackQuery::new(id))
    }

    /// Makes one call of method `name` with `payload`; `chat` is the chat a send goes
    /// to (paced by the limits) or a call is about (held after a 429).
    async fn execute<T: DeserializeOwned>(
        &self,
        name: &str,
        payload: Vec<u8>,
        chat: Option<i64>,
        send: bool,
    ) -> Result<T, RequestError> {
        if let (Some(chat), true) = (chat, send) {
            self.limits.send(chat).await;
        }
        let mut url = self.bot.api_url();
        url.path_segments_mut()
            .map_err(|()| RequestError::Api(ApiError::Unknown("bad api_url".into())))?
            .push(&format!("bot{}", self.bot.token()))
            .push(name);
        let response = self
            .bot
            .client()
            .post(url)
            .header("content-type", "application/json")
            .body(payload)
            .send()
            .await?;
        let text = response.text().await?;
        let answer =
            serde_json::from_str::<Answer<T>>(&text).map_err(|e| RequestError::InvalidJson {
                source: Arc::new(e),
                raw: text.into_boxed_str(),
            })?;
        match answer {
            Answer::Ok { result, .. } => Ok(result),
            Answer::Err {
                parameters: Some(ResponseParameters::RetryAfter(wait)),
                ..
            } => {
                if let Some(m) = &self.metrics {
                    m.chat_rate_limited(&PLATFORM);
                }
                if let Some(chat) = chat {
                    self.limits.hold(chat, wait.duration());
                }
                Err(RequestError::RetryAfter(wait))
            }
            Answer::Err {
                parameters: Some(ResponseParameters::MigrateToChatId(to)),
                ..
            } => Err(RequestError::MigrateToChatId(to)),
            Answer::Err { description, .. } => Err(RequestError::Api(description)),
        }
    }
}

/// The chat a payload is about, when it names one by id.
fn chat_of(recipient: &Recipient) -> Option<i64> {
    match recipient {
        Recipient::Id(ChatId(id)) => Some(*id),
        Recipient::ChannelUsername(_) => None,
    }
}

/// What [`Call`] needs of a payload: which chat it is about, and whether it sends a
/// message (paced by the limits).
pub trait Target {
    fn chat(&self) -> Option<i64> {
        None
    }
    fn sends(&self) -> bool {
        false
    }
}

impl Target for GetMe {}
impl Target for GetUpdates {}
impl Target for SetMyCommands {}
impl Target for AnswerCallbackQuery {}

impl Target for SendMessage {
    fn chat(&self) -> Option<i64> {
        chat_of(&self.chat_id)
    }
    fn sends(&self) -> bool {
        true
    }
}

impl Target for EditMessageText {
    fn chat(&self) -> Option<i64> {
        chat_of(&self.chat_id)
    }
}

impl Target for EditMessageReplyMarkup {
    fn chat(&self) -> Option<i64> {
        chat_of(&self.chat_id)
    }
}

impl<P> HasPayload for Call<'_, P>
where
    P: Payload,
{
    type Payload = P;

    fn payload_mut(&mut self) -> &mut P {
        &mut self.payload
    }

    fn payload_ref(&self) -> &P {
        &self.payload
    }
}

impl<'a, P> Call<'a, P>
where
    P: Payload + Serialize + Target,
    P::Output: DeserializeOwned + Send + 'static,
{
    /// Sends the call; the future borrows nothing from the payload.
    pub fn send(self) -> impl Future<Output = Result<P::Output, RequestError>> + Send + 'a {
        let body = serde_json::to_vec(&self.payload);
        let (chat, sends) = (self.payload.chat(), self.payload.sends());
        let api = self.api;
        async move {
            let body = body.map_err(|e| RequestError::InvalidJson {
                source: Arc::new(e),
                raw: "".into(),
            })?;
            api.execute(P::NAME, body, chat, sends).await
        }
    }
}

impl<'a, P> IntoFuture for Call<'a, P>
where
    P: Payload + Serialize + Target,
    P::Output: DeserializeOwned + Send + 'static,
{
    type Output = Result<P::Output, RequestError>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.send())
    }
}
