//! Codex: the `PermissionRequest` hook in `.codex/hooks.json`.
//!
//! Codex sends `hook_event_name: "PermissionRequest"`, `tool_name` (`Bash` for shell
//! and exec approvals, `NetworkAccess` for network approvals), `tool_input.command`
//! and an optional `tool_input.description` (the request's justification), plus
//! `session_id`, `turn_id`, `cwd`, `model`, `permission_mode`. It reads the same
//! `hookSpecificOutput.decision.{behavior, message}` as Claude Code, and fails closed
//! on fields it does not know, so gatebot sends nothing else. There is no
//! `tool_use_id`, so requests carry no idempotency key.

use serde_json::Value;

use super::{claude_code, ToolCall, Verdict};

/// Reads a hook payload.
pub fn parse(input: &Value) -> Result<ToolCall, String> {
    match input.get("hook_event_name").and_then(Value::as_str) {
        Some("PermissionRequest") | None => claude_code::tool_call(input),
        Some(other) => Err(format!(
            "gatebot answers Codex's PermissionRequest hook, not `{other}`"
        )),
    }
}

/// The hook's answer for `verdict`.
#[must_use]
pub fn answer(verdict: &Verdict) -> Value {
    claude_code::permission_request_answer(verdict)
}
