//! Slack's outbound side: a card is posted with `chat.postMessage` (its `ts` is the
//! message id; `thread_ts` puts it in a thread) and edited with `chat.update`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::api::SlackApi;
use super::{render, PLATFORM};
use crate::approval::PlatformId;
use crate::chat::card::Card;
use crate::chat::platform::{Pacer, Platform, SendError};
use crate::subject::Thread;

pub struct Slack {
    pub api: Arc<SlackApi>,
    /// `chat.update` across every channel: Slack counts it per app and workspace.
    pub edits: Pacer,
}

/// `chat.update` is a Tier 3 method: "50+ per minute" for the app in a workspace,
/// whatever the channel.
pub const EDIT_INTERVAL: Duration = Duration::from_millis(1250);

impl Platform for Slack {
    fn id(&self) -> PlatformId {
        PLATFORM
    }

    /// chat.postMessage allows about one message a second per channel; chat.update
    /// about 50 a minute in all, which [`EDIT_INTERVAL`] keeps across channels.
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

    /// A thread's parent, read with `conversations.replies`: its first block's text
    /// (a card's heading, where it names its subject), if the bot wrote it.
    async fn read(&self, chat: &str, message: &str) -> Result<Option<String>, SendError> {
        let me = self.api.identity().await?;
        let res = self
            .api
            .get(
                "conversations.replies",
                &[
                    ("channel", chat),
                    ("ts", message),
                    ("limit", "1"),
                    ("inclusive", "true"),
                ],
            )
            .await?;
        let parent = res["messages"]
            .as_array()
            .and_then(|all| all.iter().find(|m| m["ts"] == message));
        let Some(parent) = parent else {
            return Ok(None);
        };
        let ours = (!me.bot_id.is_empty() && parent["bot_id"] == me.bot_id.as_str())
            || (!me.user_id.is_empty() && parent["user"] == me.user_id.as_str());
        let shown = parent["blocks"]
            .as_array()
            .and_then(|b| super::payload::first_block_text(b))
            .or_else(|| parent["text"].as_str().map(str::to_string));
        Ok(ours.then(|| shown.unwrap_or_default()))
    }

    async fn edit(&self, chat: &str, message: &str, card: &Card) -> Result<(), SendError> {
        let (text, blocks) = render::render(card);
        self.edits.turn().await;
        self.api
            .call(
                "chat.update",
                &json!({"channel": chat, "ts": message, "text": text, "blocks": blocks}),
            )
            .await
            .map(|_| ())
    }
}
