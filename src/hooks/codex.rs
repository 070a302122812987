//! Codex: the `PermissionRequest` and `PreToolUse` hooks in `.codex/hooks.json`.
//!
//! - `PermissionRequest` fires when Codex would ask the user to approve a shell, exec or
//!   network call: `tool_name` (`Bash`, or `NetworkAccess`), `tool_input.command` and an
//!   optional `tool_input.description` (the request's justification), plus
//!   `session_id`, `turn_id`, `cwd`, `model`, `permission_mode`; no `tool_use_id`. It
//!   reads the same `hookSpecificOutput.decision.{behavior, message}` as Claude Code and
//!   fails closed on fields it does not know, so gatebot sends nothing else.
//! - `PreToolUse` fires before every tool call, also under `codex exec`, which forces
//!   `approval: never` so that `PermissionRequest` never fires there. It carries
//!   `tool_use_id` (the request's idempotency key) and `tool_input` (`{command}` for the
//!   shell, the arguments for MCP tools). Codex takes
//!   `hookSpecificOutput.{hookEventName, permissionDecision: "deny",
//!   permissionDecisionReason}` as a block, but refuses `permissionDecision: "allow"`
//!   (the hook then counts as failed), so on allow gatebot prints **nothing**: exit 0
//!   with empty stdout is Codex's "no objection".

use serde_json::{json, Value};

use super::claude_code::{self, Event};
use super::{ToolCall, Verdict};

/// Reads a hook payload; a payload without `hook_event_name` is a `PermissionRequest`
/// (what Codex sent before it named its events).
pub fn parse(input: &Value) -> Result<(Event, ToolCall), String> {
    let event = match input.get("hook_event_name").and_then(Value::as_str) {
        Some("PermissionRequest") | None => Event::PermissionRequest,
        Some("PreToolUse") => Event::PreToolUse,
        Some(other) => {
            return Err(format!(
                "gatebot answers Codex's PermissionRequest and PreToolUse hooks, not `{other}`"
            ))
        }
    };
    Ok((event, claude_code::tool_call(input)?))
}

/// The hook's answer for `verdict`; `None` means print nothing (an allowed
/// `PreToolUse`, which Codex would refuse as an explicit `allow`).
#[must_use]
pub fn answer(event: Event, verdict: &Verdict) -> Option<Value> {
    match event {
        Event::PermissionRequest => Some(claude_code::permission_request_answer(verdict)),
        Event::PreToolUse if verdict.allow => None,
        Event::PreToolUse => Some(json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": verdict.message,
            }
        })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(allow: bool) -> Verdict {
        Verdict {
            allow,
            message: "[Action rejected] Bash: no. The action was not run.".into(),
            updated_input: None,
        }
    }

    #[test]
    fn pre_tool_use_is_answered_with_nothing_on_allow_and_a_deny_otherwise() {
        assert_eq!(answer(Event::PreToolUse, &verdict(true)), None);
        let deny = answer(Event::PreToolUse, &verdict(false)).unwrap();
        assert_eq!(deny["hookSpecificOutput"]["permissionDecision"], "deny");
        assert!(
            deny["hookSpecificOutput"].get("updatedInput").is_none(),
            "only the fields Codex knows: {deny}"
        );
    }

    #[test]
    fn other_events_are_refused_by_name_and_a_nameless_payload_is_a_permission_request() {
        let e = parse(&json!({"hook_event_name": "PostToolUse", "tool_name": "Bash"}));
        assert!(e.unwrap_err().contains("`PostToolUse`"));
        let (event, call) =
            parse(&json!({"tool_name": "Bash", "tool_input": {"command": "ls"}})).unwrap();
        assert_eq!(event, Event::PermissionRequest);
        assert_eq!(call.tool, "Bash");
    }
}
