//! Slack's outbound side: a card is posted with `chat.postMessage` (its `ts` is the
//! message id; `thread_ts` puts it in a thread) and edited with `chat.update`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::api::SlackApi;
use super::{render, PLATFORM};
use crate::approval::PlatformId;
use crate::chat::card::Card;
use crate::chat::platform::{Platform, SendError, Thread};

pub struct Slack {
    pub api: Arc<SlackApi>,
}

impl Platform for Slack {
    fn id(&self) -> PlatformId {
        PLATFORM
    }

    /// chat.postMessage allows about one message a second per channel, chat.update
    /// about 50 a minute.
    fn pace(&self, _chat: &str) -> Duration {
        Duration::from_millis(1200)
    }

    async fn post(
        &self,
        chat: &str,
        card: &Card,
        thread: Option<&Thread>,
    ) -> Result<String, SendError> {
        let (text, blocks) = render::render(card);
        let mut body = json!({"channel": chat, "text": text, "blocks": blocks, "unfurl_links": false, "unfurl_media": false});
        // Slack threads hang off their first message.
        if let Some(t) = thread {
            body["thread_ts"] = json!(t.root);
        }
        let res = self.api.call("chat.postMessage", &body).await?;
        res["ts"]
            .as_str()
            .or_else(|| res["message"]["ts"].as_str())
            .map(str::to_string)
            .ok_or_else(|| SendError::Permanent("chat.postMessage answered without a ts".into()))
    }

    async fn edit(&self, chat: &str, message: &str, card: &Card) -> Result<(), SendError> {
        let (text, blocks) = render::render(card);
        self.api
            .call(
                "chat.update",
                &json!({"channel": chat, "ts": message, "text": text, "blocks": blocks}),
            )
            .await
            .map(|_| ())
    }
}
