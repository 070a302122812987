//! Slack's side of [`delivery`](crate::channel::delivery): post a prompt with
//! `chat.postMessage` (its `ts` is the message id), edit it with `chat.update`.

use std::sync::Arc;

use serde_json::json;

use super::api::SlackApi;
use super::blocks;
use crate::approval::{Approval, Channel};
use crate::channel::delivery::{ChatSender, SendError};

pub struct SlackSender {
    pub api: Arc<SlackApi>,
    pub channels: Vec<String>,
}

impl ChatSender for SlackSender {
    fn channel(&self) -> Channel {
        Channel::Slack
    }

    fn destinations(&self) -> Vec<String> {
        self.channels.clone()
    }

    async fn post(&self, chat: &str, approval: &Approval) -> Result<String, SendError> {
        let (text, blocks) = blocks::prompt(approval);
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

    async fn finalize(
        &self,
        chat: &str,
        message: &str,
        approval: &Approval,
    ) -> Result<(), SendError> {
        let (text, blocks) = blocks::settled(approval);
        self.api
            .call(
                "chat.update",
                &json!({"channel": chat, "ts": message, "text": text, "blocks": blocks}),
            )
            .await
            .map(|_| ())
    }
}
