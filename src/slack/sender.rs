//! Slack's side of [`delivery`](crate::channel::delivery): post a prompt with
//! `chat.postMessage` (its `ts` is the message id), edit it with `chat.update`.

use std::sync::Arc;

use serde_json::json;

use super::api::SlackApi;
use super::blocks;
use crate::approval::{Approval, Channel};
use crate::channel::delivery::{ChatSender, SendError};
use crate::channel::digest::DigestView;

pub struct SlackSender {
    pub api: Arc<SlackApi>,
    pub channels: Vec<String>,
    pub digest_after: usize,
}

impl SlackSender {
    async fn post_message(
        &self,
        chat: &str,
        text: String,
        blocks: Vec<serde_json::Value>,
    ) -> Result<String, SendError> {
        let res = self
            .api
            .call(
                "chat.postMessage",
                &json!({"channel": chat, "text": text, "blocks": blocks, "unfurl_links": false, "unfurl_media": false}),
            )
            .await?;
        res["ts"]
            .as_str()
            .or_else(|| res["message"]["ts"].as_str())
            .map(str::to_string)
            .ok_or_else(|| SendError::Permanent("chat.postMessage answered without a ts".into()))
    }

    async fn update(
        &self,
        chat: &str,
        message: &str,
        text: String,
        blocks: Vec<serde_json::Value>,
    ) -> Result<(), SendError> {
        self.api
            .call(
                "chat.update",
                &json!({"channel": chat, "ts": message, "text": text, "blocks": blocks}),
            )
            .await
            .map(|_| ())
    }
}

impl ChatSender for SlackSender {
    fn channel(&self) -> Channel {
        Channel::Slack
    }

    fn destinations(&self) -> Vec<String> {
        self.channels.clone()
    }

    /// chat.postMessage allows about one message a second per channel, chat.update
    /// about 50 a minute.
    fn pace(&self, _chat: &str) -> std::time::Duration {
        std::time::Duration::from_millis(1200)
    }

    fn digest_after(&self) -> usize {
        self.digest_after
    }

    async fn post(&self, chat: &str, approval: &Approval) -> Result<String, SendError> {
        let (text, blocks) = blocks::prompt(approval);
        self.post_message(chat, text, blocks).await
    }

    async fn finalize(
        &self,
        chat: &str,
        message: &str,
        approval: &Approval,
    ) -> Result<(), SendError> {
        let (text, blocks) = blocks::settled(approval);
        self.update(chat, message, text, blocks).await
    }

    async fn post_digest(&self, chat: &str, view: &DigestView) -> Result<String, SendError> {
        let (text, blocks) = super::digest::render(view);
        self.post_message(chat, text, blocks).await
    }

    async fn show_digest(
        &self,
        chat: &str,
        message: &str,
        view: &DigestView,
    ) -> Result<(), SendError> {
        let (text, blocks) = super::digest::render(view);
        self.update(chat, message, text, blocks).await
    }
}
