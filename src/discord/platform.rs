//! Discord's outbound side: a card is a message (`POST /channels/{id}/messages`),
//! edited in place (`PATCH …/messages/{id}`), and, in a [`Thread`], posted in the
//! Discord thread started from the thread's root message.
//!
//! A thread started from a message has that message's id as its channel id, so the
//! thread of root `R` is channel `R`: it is created on first use
//! (`POST /channels/{chat}/messages/{R}/threads`), remembered with its parent, and a
//! message posted in it is known as `R/M` (its channel, then its id) so it can be
//! edited and recognised later. Where no thread can be started (the root is itself in
//! a thread, or the bot may not create threads), the card replies to the root message
//! instead (`message_reference`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};
use tracing::{debug, warn};
use twilight_http::routing::Route;

use super::api::{id, DiscordApi};
use super::{render, PLATFORM};
use crate::approval::PlatformId;
use crate::chat::card::Card;
use crate::chat::platform::{Platform, SendError};
use crate::subject::Thread;

/// Who the bot is, from the Gateway's READY.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Me {
    pub user_id: String,
    pub application_id: String,
}

/// Discord's limit on a thread's name, in characters.
const MAX_THREAD_NAME: usize = 100;
/// Discord's channel types for threads (announcement, public, private).
pub const THREAD_TYPES: [u64; 3] = [10, 11, 12];

pub struct Discord {
    pub api: Arc<DiscordApi>,
    /// Set once the Gateway says READY.
    pub me: OnceLock<Me>,
    /// Thread channel → its parent channel, as far as known.
    threads: Mutex<HashMap<String, String>>,
}

/// Where a message is: `R/M` is message `M` in thread `R`; a plain id is in the chat.
#[must_use]
pub fn split(message: &str) -> (Option<&str>, &str) {
    match message.split_once('/') {
        Some((thread, m)) => (Some(thread), m),
        None => (None, message),
    }
}

impl Discord {
    #[must_use]
    pub fn new(api: Arc<DiscordApi>) -> Discord {
        Discord {
            api,
            me: OnceLock::new(),
            threads: Mutex::default(),
        }
    }

    /// Records that channel `thread` is a thread of `parent`.
    pub fn thread_of(&self, thread: &str, parent: &str) {
        self.threads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(thread.to_string(), parent.to_string());
    }

    /// The parent of `channel` if it is a thread: remembered, or asked of Discord once
    /// (`GET /channels/{id}`), so threads started before a restart are still known.
    pub async fn parent_of(&self, channel: &str) -> Option<String> {
        if let Some(p) = self
            .threads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(channel)
        {
            return (!p.is_empty()).then(|| p.clone());
        }
        let route = Route::GetChannel {
            channel_id: id(channel).ok()?,
        };
        let parent = match self
            .api
            .call_patiently(
                &format!("channel:{channel}"),
                &route,
                None,
                2,
                Duration::from_secs(5),
            )
            .await
        {
            Ok(c)
                if c["type"]
                    .as_u64()
                    .is_some_and(|t| THREAD_TYPES.contains(&t)) =>
            {
                c["parent_id"].as_str().map(str::to_string)
            }
            Ok(_) => None,
            Err(e) => {
                debug!(channel, error = %e, "discord: cannot read the channel");
                return None;
            }
        };
        // An empty parent remembers "not a thread".
        self.thread_of(channel, parent.as_deref().unwrap_or_default());
        parent
    }

    /// Posts `body` in channel `channel`; the new message's id.
    async fn create(&self, channel: &str, body: &Value) -> Result<String, SendError> {
        let route = Route::CreateMessage {
            channel_id: id(channel)?,
        };
        let res = self
            .api
            .call(&format!("messages:{channel}"), &route, Some(body))
            .await?;
        res["id"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| SendError::Unknown("Discord answered a post without an id".into()))
    }

    /// Makes sure the thread started from message `root` in `chat` exists.
    async fn open_thread(&self, chat: &str, root: &str, name: &str) -> Result<(), SendError> {
        if self
            .threads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(root)
            .is_some_and(|p| p == chat)
        {
            return Ok(());
        }
        let route = Route::CreateThreadFromMessage {
            channel_id: id(chat)?,
            message_id: id(root)?,
        };
        let (name, _) =
            crate::chat::text::fit(name, "the name", |p| p.chars().count() <= MAX_THREAD_NAME);
        let body = json!({"name": name, "auto_archive_duration": 10080});
        match self
            .api
            .call(&format!("threads:{chat}"), &route, Some(&body))
            .await
        {
            Ok(_) => {}
            // 160004: a thread has already been created for this message.
            Err(SendError::Permanent(e)) if e.contains("160004") => {}
            Err(e) => return Err(e),
        }
        self.thread_of(root, chat);
        Ok(())
    }
}

impl Platform for Discord {
    fn id(&self) -> PlatformId {
        PLATFORM
    }

    /// Discord allows 5 messages per 5 s in a channel; the headers say the rest.
    fn pace(&self, _chat: &str) -> Duration {
        Duration::from_millis(1000)
    }

    async fn post(
        &self,
        chat: &str,
        card: &Card,
        thread: Option<&Thread>,
    ) -> Result<String, SendError> {
        let message = render::render(card);
        let mut body = message.body();
        let Some(t) = thread else {
            return self.create(chat, &body).await;
        };
        let (in_thread, root) = split(&t.root);
        if in_thread.is_none() {
            let name = if card.fallback.is_empty() {
                "gatebot".to_string()
            } else {
                card.fallback.clone()
            };
            match self.open_thread(chat, root, &name).await {
                Ok(()) => {
                    let m = self.create(root, &body).await?;
                    return Ok(format!("{root}/{m}"));
                }
                Err(SendError::Permanent(e)) => {
                    warn!(chat, root, error = %e, "discord: cannot start a thread; replying to the message instead");
                }
                Err(e) => return Err(e),
            }
        }
        // A reply to the message the thread hangs off, where it is.
        let (channel, reply_to) = match split(&t.reply_to) {
            (Some(th), m) => (th.to_string(), m.to_string()),
            (None, m) => (chat.to_string(), m.to_string()),
        };
        body["message_reference"] = json!({"message_id": reply_to, "fail_if_not_exists": false});
        let m = self.create(&channel, &body).await?;
        Ok(if channel == chat {
            m
        } else {
            format!("{channel}/{m}")
        })
    }

    async fn edit(&self, chat: &str, message: &str, card: &Card) -> Result<(), SendError> {
        let (thread, m) = split(message);
        let channel = thread.unwrap_or(chat);
        let route = Route::UpdateMessage {
            channel_id: id(channel)?,
            message_id: id(m)?,
        };
        let body = render::render(card).body();
        self.api
            .call(&format!("edit:{channel}"), &route, Some(&body))
            .await
            .map(|_| ())
    }

    /// A message read back (`GET /channels/{id}/messages/{id}`): its content if the
    /// bot wrote it.
    async fn read(&self, chat: &str, message: &str) -> Result<Option<String>, SendError> {
        let (thread, m) = split(message);
        let channel = thread.unwrap_or(chat);
        let route = Route::GetMessage {
            channel_id: id(channel)?,
            message_id: id(m)?,
        };
        let res = self
            .api
            .call(&format!("read:{channel}"), &route, None)
            .await?;
        let ours = self
            .me
            .get()
            .is_some_and(|me| res["author"]["id"] == me.user_id.as_str());
        Ok(ours.then(|| res["content"].as_str().unwrap_or_default().to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn a_message_in_a_thread_names_its_channel() {
        assert_eq!(split("123/456"), (Some("123"), "456"));
        assert_eq!(split("456"), (None, "456"));
    }
}
