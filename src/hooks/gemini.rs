//! Gemini CLI: the `BeforeTool` hook in `settings.json`.
//!
//! Gemini sends `hook_event_name: "BeforeTool"`, `tool_name` (e.g.
//! `run_shell_command`, `write_file`, `mcp__server__tool`), `tool_input`, and
//! `session_id`, `cwd`, `timestamp`. It reads `{"decision": "allow"}` or
//! `{"decision": "deny", "reason": "…"}`; the reason goes to the model as the tool's
//! error. Its hook `timeout` is in **milliseconds** and defaults to 60 000, so
//! gatebot's default budget here is 55 s.

use serde_json::{json, Value};

use super::{claude_code, ToolCall, Verdict};

/// Reads a hook payload.
pub fn parse(input: &Value) -> Result<ToolCall, String> {
    match input.get("hook_event_name").and_then(Value::as_str) {
        Some("BeforeTool") | None => claude_code::tool_call(input),
        Some(other) => Err(format!(
            "gatebot answers Gemini CLI's BeforeTool hook, not `{other}`"
        )),
    }
}

/// The hook's answer for `verdict`.
#[must_use]
pub fn answer(verdict: &Verdict) -> Value {
    if verdict.allow {
        json!({"decision": "allow"})
    } else {
        json!({"decision": "deny", "reason": verdict.message})
    }
}
