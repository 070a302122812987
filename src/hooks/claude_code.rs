//! Claude Code hooks: `PermissionRequest` and `PreToolUse`.
//!
//! Input (stdin, or the body of a `type: "http"` hook): `session_id`, `cwd`,
//! `hook_event_name`, `tool_name`, `tool_input`, `tool_use_id` (and, for
//! `PermissionRequest`, `permission_suggestions`). Output on stdout, exit code 0:
//! - `PermissionRequest`: `{"hookSpecificOutput": {"hookEventName": "PermissionRequest",
//!   "decision": {"behavior": "allow" | "deny", "message"?}}}`; the message is read
//!   only on deny.
//! - `PreToolUse`: `{"hookSpecificOutput": {"hookEventName": "PreToolUse",
//!   "permissionDecision": "allow" | "deny", "permissionDecisionReason": "…"}}`; on
//!   deny the reason is shown to the model.
//!
//! gatebot never answers `ask` (the human decision happens in gatebot), and does not
//! return `updatedPermissions` on "Always allow": gatebot records the tool on the
//! agent's always-allow list itself, so the next call is allowed without a prompt,
//! and stays visible and revocable in one place.

use serde_json::{json, Value};

use super::{ToolCall, Verdict};

/// The hook events gatebot answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    PermissionRequest,
    PreToolUse,
}

impl Event {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Event::PermissionRequest => "PermissionRequest",
            Event::PreToolUse => "PreToolUse",
        }
    }
}

/// Reads a hook payload.
pub fn parse(input: &Value) -> Result<(Event, ToolCall), String> {
    let event = match input.get("hook_event_name").and_then(Value::as_str) {
        Some("PermissionRequest") => Event::PermissionRequest,
        Some("PreToolUse") => Event::PreToolUse,
        Some(other) => {
            return Err(format!(
                "gatebot answers the PermissionRequest and PreToolUse hooks, not `{other}`"
            ))
        }
        None => return Err("the hook input has no `hook_event_name`".into()),
    };
    let call = tool_call(input)?;
    Ok((event, call))
}

/// `tool_name`, `tool_input` and `tool_use_id` as a gatebot call (shared with Codex).
pub(crate) fn tool_call(input: &Value) -> Result<ToolCall, String> {
    let tool = input
        .get("tool_name")
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty())
        .ok_or("the hook input has no `tool_name`")?;
    Ok(ToolCall::new(
        tool,
        input.get("tool_input").cloned().unwrap_or(Value::Null),
        input.get("tool_use_id").and_then(Value::as_str),
    ))
}

/// The hook's answer for `verdict`.
#[must_use]
pub fn answer(event: Event, verdict: &Verdict) -> Value {
    match event {
        Event::PermissionRequest => permission_request_answer(verdict),
        Event::PreToolUse => {
            let mut out = json!({
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": if verdict.allow { "allow" } else { "deny" },
                    "permissionDecisionReason": verdict.message,
                }
            });
            if let Some(input) = verdict.updated_input.as_ref().filter(|_| verdict.allow) {
                out["hookSpecificOutput"]["updatedInput"] = input.clone();
            }
            out
        }
    }
}

/// `PermissionRequest` output; Codex reads the same shape (and refuses unknown fields).
pub(crate) fn permission_request_answer(verdict: &Verdict) -> Value {
    let decision = if verdict.allow {
        match &verdict.updated_input {
            // The call as an owner edited and approved it.
            Some(input) => json!({"behavior": "allow", "updatedInput": input}),
            None => json!({"behavior": "allow"}),
        }
    } else {
        json!({"behavior": "deny", "message": verdict.message})
    };
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": decision,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_events_are_refused_by_name() {
        let e = parse(&json!({"hook_event_name": "PostToolUse", "tool_name": "Bash"})).unwrap_err();
        assert!(e.contains("PostToolUse"), "{e}");
        assert!(parse(&json!({"tool_name": "Bash"})).is_err());
        assert!(parse(&json!({"hook_event_name": "PreToolUse"})).is_err());
    }

    #[test]
    fn an_allow_carries_no_message_for_permission_requests() {
        let v = Verdict {
            allow: true,
            message: "[Action allowed] x".into(),
            updated_input: None,
        };
        assert_eq!(
            answer(Event::PermissionRequest, &v),
            json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
                   "decision": {"behavior": "allow"}}})
        );
    }

    #[test]
    fn an_edited_approval_carries_the_edited_input_on_both_events_and_a_denial_never() {
        let edited = json!({"command": "git status"});
        let mut v = Verdict {
            allow: true,
            message: "[Action approved] Bash".into(),
            updated_input: Some(edited.clone()),
        };
        let pre = answer(Event::PreToolUse, &v);
        assert_eq!(pre["hookSpecificOutput"]["updatedInput"], edited);
        let req = answer(Event::PermissionRequest, &v);
        assert_eq!(
            req["hookSpecificOutput"]["decision"]["updatedInput"],
            edited
        );
        v.allow = false;
        assert!(answer(Event::PreToolUse, &v)["hookSpecificOutput"]
            .get("updatedInput")
            .is_none());
        let denied = answer(Event::PermissionRequest, &v);
        assert!(denied["hookSpecificOutput"]["decision"]
            .get("updatedInput")
            .is_none());
    }
}
