//! What Slack sends, as serde types: interactions (`block_actions`, `view_submission`),
//! slash commands and Events API callbacks. Only the fields gatebot reads are named;
//! the rest is ignored, so Slack adding fields breaks nothing.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

/// An interaction payload.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "type")]
pub enum Interaction {
    #[serde(rename = "block_actions")]
    BlockActions(BlockActions),
    #[serde(rename = "view_submission")]
    ViewSubmission(ViewSubmission),
    #[serde(other)]
    Other,
}

#[derive(Debug, Clone, Deserialize)]
pub struct User {
    pub id: String,
    pub username: Option<String>,
    pub name: Option<String>,
}

impl User {
    /// A display name: the username, else the name, else the id.
    #[must_use]
    pub fn display(&self) -> &str {
        self.username
            .as_deref()
            .or(self.name.as_deref())
            .unwrap_or(&self.id)
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct BlockActions {
    pub user: User,
    pub trigger_id: Option<String>,
    pub container: Option<Container>,
    pub channel: Option<Named>,
    pub message: Option<MessageRef>,
    #[serde(default)]
    pub actions: Vec<ActionPayload>,
}

impl BlockActions {
    /// The conversation the clicked message is in.
    #[must_use]
    pub fn channel(&self) -> String {
        self.container
            .as_ref()
            .and_then(|c| c.channel_id.clone())
            .or_else(|| self.channel.as_ref().map(|c| c.id.clone()))
            .unwrap_or_default()
    }

    /// The clicked message's `ts`.
    #[must_use]
    pub fn message_ts(&self) -> Option<String> {
        self.container
            .as_ref()
            .and_then(|c| c.message_ts.clone())
            .or_else(|| self.message.as_ref().map(|m| m.ts.clone()))
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Container {
    pub channel_id: Option<String>,
    pub message_ts: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Named {
    pub id: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct MessageRef {
    pub ts: String,
    pub text: Option<String>,
    #[serde(default)]
    pub blocks: Vec<Value>,
}

impl MessageRef {
    /// What a card's tag is read from: its first block's text (where the heading is),
    /// else the notification text.
    #[must_use]
    pub fn shown(&self) -> Option<String> {
        first_block_text(&self.blocks).or_else(|| self.text.clone())
    }
}

/// The text of a message's first block (a card's heading is its first line).
#[must_use]
pub fn first_block_text(blocks: &[Value]) -> Option<String> {
    blocks.first()?["text"]["text"].as_str().map(str::to_string)
}

#[derive(Debug, Clone, Deserialize)]
pub struct ActionPayload {
    pub action_id: Option<String>,
    pub value: Option<String>,
}

impl ActionPayload {
    /// The button's data: its value, else its action id.
    #[must_use]
    pub fn data(&self) -> &str {
        self.value
            .as_deref()
            .or(self.action_id.as_deref())
            .unwrap_or_default()
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct ViewSubmission {
    pub user: User,
    pub view: View,
}

#[derive(Debug, Clone, Deserialize)]
pub struct View {
    pub callback_id: Option<String>,
    pub private_metadata: Option<String>,
    pub state: Option<ViewState>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ViewState {
    /// block id → action id → input.
    #[serde(default)]
    pub values: HashMap<String, HashMap<String, Input>>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Input {
    pub value: Option<String>,
}

impl View {
    /// The value typed into the input `block`/`action`, trimmed; `None` when empty.
    #[must_use]
    pub fn input(&self, block: &str, action: &str) -> Option<String> {
        self.state
            .as_ref()?
            .values
            .get(block)?
            .get(action)?
            .value
            .as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    }
}

/// A slash command (sent as a form).
#[derive(Debug, Clone, Deserialize)]
pub struct SlashCommand {
    pub command: String,
    #[serde(default)]
    pub text: String,
    pub user_id: String,
    pub user_name: Option<String>,
    #[serde(default)]
    pub channel_id: String,
    pub response_url: Option<String>,
}

/// An Events API `event_callback`.
#[derive(Debug, Clone, Deserialize)]
pub struct EventCallback {
    pub event_id: Option<String>,
    pub event: Event,
}

/// The event of a callback; gatebot reads only messages.
#[derive(Debug, Clone, Deserialize)]
pub struct Event {
    #[serde(rename = "type")]
    pub kind: String,
    pub subtype: Option<String>,
    pub bot_id: Option<serde_json::Value>,
    pub user: Option<String>,
    pub text: Option<String>,
    pub channel: Option<String>,
    /// `im` for a direct message to the bot, `channel` / `group` otherwise.
    pub channel_type: Option<String>,
    pub ts: Option<String>,
    pub thread_ts: Option<String>,
    /// In a thread: who wrote its parent.
    pub parent_user_id: Option<String>,
}

impl Event {
    /// A person's message: not an edit, a join or a bot's post (a reply also sent to
    /// the channel is a `thread_broadcast`, which counts).
    #[must_use]
    pub fn is_human_message(&self) -> bool {
        self.kind == "message"
            && self
                .subtype
                .as_deref()
                .is_none_or(|s| s == "thread_broadcast")
            && self.bot_id.as_ref().is_none_or(serde_json::Value::is_null)
    }

    /// The thread this message is a reply in, if it is one (not the thread's parent).
    #[must_use]
    pub fn thread(&self) -> Option<&str> {
        self.thread_ts
            .as_deref()
            .filter(|t| Some(*t) != self.ts.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_click_and_a_form_read_the_fields_gatebot_needs() {
        let click: Interaction = serde_json::from_value(json!({
            "type": "block_actions",
            "user": {"id": "U1", "username": "ann", "team_id": "T1"},
            "trigger_id": "t",
            "container": {"type": "message", "message_ts": "1.2", "channel_id": "C1"},
            "actions": [{"type": "button", "action_id": "gb1:v:r", "value": "gb1:v:r"}],
            "something_new": true
        }))
        .unwrap();
        let Interaction::BlockActions(b) = click else {
            panic!("not a click")
        };
        assert_eq!(
            (b.channel().as_str(), b.message_ts().as_deref()),
            ("C1", Some("1.2"))
        );
        assert_eq!(b.actions[0].data(), "gb1:v:r");
        assert_eq!(b.user.display(), "ann");

        let form: Interaction = serde_json::from_value(json!({
            "type": "view_submission",
            "user": {"id": "U1"},
            "view": {"callback_id": "gatebot_deny", "private_metadata": "{}",
                     "state": {"values": {"reason": {"reason": {"value": "  no  "}}}}}
        }))
        .unwrap();
        let Interaction::ViewSubmission(v) = form else {
            panic!("not a form")
        };
        assert_eq!(v.view.input("reason", "reason").as_deref(), Some("no"));
        let other: Interaction =
            serde_json::from_value(json!({"type": "shortcut", "user": {"id": "U1"}})).unwrap();
        assert!(matches!(other, Interaction::Other));
    }

    #[test]
    fn bot_posts_and_edits_are_not_human_messages() {
        let ev = |extra: serde_json::Value| -> Event {
            let mut base = json!({"type": "message", "user": "U1", "text": "hi", "ts": "1"});
            base.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            serde_json::from_value(base).unwrap()
        };
        assert!(ev(json!({})).is_human_message());
        assert!(ev(json!({"subtype": "thread_broadcast"})).is_human_message());
        assert!(!ev(json!({"subtype": "message_changed"})).is_human_message());
        assert!(!ev(json!({"bot_id": "B1"})).is_human_message());
        assert_eq!(
            ev(json!({"thread_ts": "1"})).thread(),
            None,
            "the parent itself"
        );
        assert_eq!(ev(json!({"thread_ts": "0.5"})).thread(), Some("0.5"));
    }
}
