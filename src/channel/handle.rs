//! Turning a chat command or button press into an engine call and a reply.
//! Channels check nothing themselves beyond who the user is: authorisation,
//! id resolution and the answers live here, once for every channel.

use serde_json::json;

use crate::approval::{Approval, Channel, Decision, Status, Verb};
use crate::channel::command::{ChatCommand, HELP};
use crate::engine::{describe_settled, Engine, EngineError};

/// Who sent a command or pressed a button.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// The platform's user id (Telegram user id, Slack user id).
    pub id: String,
    /// A display name for prompts and the audit trail.
    pub name: String,
    /// Whether `id` is in the channel's `approvers`.
    pub approver: bool,
}

impl Actor {
    /// How the actor is recorded as `decided_by`: "Alice (12345)".
    #[must_use]
    pub fn label(&self) -> String {
        if self.name.is_empty() || self.name == self.id {
            self.id.clone()
        } else {
            format!("{} ({})", self.name, self.id)
        }
    }
}

/// What to answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Plain text (the channel escapes it).
    Text(String),
    /// The open requests, for `/pending` (the channel renders them, with buttons).
    Pending(Vec<Approval>),
    /// A decision was made: the text, and the request as it is now.
    Decided(String, Box<Approval>),
    /// The request is already settled: the text, and the request.
    AlreadySettled(String, Box<Approval>),
    /// The actor may not decide.
    NotAllowed(String),
}

impl Reply {
    /// The reply's text (for `Pending`, a one-line summary).
    #[must_use]
    pub fn text(&self) -> String {
        match self {
            Reply::Text(t)
            | Reply::Decided(t, _)
            | Reply::AlreadySettled(t, _)
            | Reply::NotAllowed(t) => t.clone(),
            Reply::Pending(list) if list.is_empty() => "No pending requests.".into(),
            Reply::Pending(list) => format!("{} pending request(s).", list.len()),
        }
    }
}

/// The message for someone who is not an approver.
#[must_use]
pub fn not_allowed(actor: &Actor) -> String {
    format!(
        "You are not allowed to decide requests (your user id {} is not in the approvers list).",
        actor.id
    )
}

/// Handles a parsed command. `replied_to` is the request whose prompt the message replies to.
pub async fn command(
    engine: &Engine,
    via: Channel,
    actor: &Actor,
    cmd: ChatCommand,
    replied_to: Option<&str>,
) -> Reply {
    match cmd {
        ChatCommand::Help => Reply::Text(HELP.to_string()),
        ChatCommand::Pending => {
            if !actor.approver {
                return refuse(engine, via, actor, None, "pending").await;
            }
            match engine.pending().await {
                Ok(list) => Reply::Pending(list),
                Err(e) => Reply::Text(failure(&e)),
            }
        }
        ChatCommand::Decide { verb, id, reason } => {
            let typed = match (id, replied_to) {
                (Some(id), _) => id,
                (None, Some(r)) => r.to_string(),
                (None, None) => {
                    return Reply::Text(
                        "Which request? Use /approve <id>, or reply to the prompt.".into(),
                    )
                }
            };
            decide(engine, via, actor, verb, &typed, reason).await
        }
    }
}

/// Applies a decision for `actor` on the request `typed` names (id, short id or prefix).
pub async fn decide(
    engine: &Engine,
    via: Channel,
    actor: &Actor,
    verb: Verb,
    typed: &str,
    reason: Option<String>,
) -> Reply {
    if !actor.approver {
        let id = engine.lookup(typed, false).await.ok().map(|a| a.id);
        return refuse(engine, via, actor, id, &format!("{verb:?}")).await;
    }
    let decision = Decision {
        verb,
        actor: actor.label(),
        via,
        reason,
    };
    match engine.decide(typed, decision).await {
        Ok(a) => {
            let text = match (verb, a.status) {
                (Verb::ApproveAlways, _) => format!(
                    "♾️ Approved {} ({} from {}); {} is now always allowed for {}.",
                    a.short_id, a.tool, a.agent, a.tool, a.agent
                ),
                (_, Status::Rejected) => format!(
                    "❌ Denied {} ({} from {}){}.",
                    a.short_id,
                    a.tool,
                    a.agent,
                    a.decision_reason
                        .as_deref()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                ),
                _ => format!("✅ Approved {} ({} from {}).", a.short_id, a.tool, a.agent),
            };
            Reply::Decided(text, Box::new(a))
        }
        Err(EngineError::AlreadySettled(a)) => Reply::AlreadySettled(
            format!(
                "Request {} is already {}.",
                a.short_id,
                describe_settled(&a)
            ),
            a,
        ),
        Err(e) => Reply::Text(failure(&e)),
    }
}

async fn refuse(
    engine: &Engine,
    via: Channel,
    actor: &Actor,
    approval_id: Option<String>,
    attempted: &str,
) -> Reply {
    let detail = json!({"user_id": actor.id, "name": actor.name, "attempted": attempted});
    if let Err(e) = engine
        .record_unauthorised(approval_id, actor.label(), via, detail)
        .await
    {
        tracing::error!(error = %e, "cannot audit an unauthorised attempt");
    }
    Reply::NotAllowed(not_allowed(actor))
}

fn failure(e: &EngineError) -> String {
    match e {
        EngineError::NotFound(id) => {
            format!("No request matches `{id}`. Use /pending to see open requests.")
        }
        EngineError::Ambiguous { typed, candidates } => format!(
            "`{typed}` matches several requests: {}. Type more of the id.",
            candidates.join(", ")
        ),
        EngineError::Invalid(m) => m.clone(),
        other => {
            tracing::error!(error = %other, "chat command failed");
            "Something went wrong; see the gatebot log.".into()
        }
    }
}
