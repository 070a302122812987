//! Which agent's hook protocol to speak: reading its payload, and the verdict in its
//! own JSON shape. Shared by the hook process and the daemon's http hook route.

use std::time::Duration;

use serde_json::Value;

use super::{claude_code, codex, gemini, ToolCall, Verdict};

/// Which agent's hook protocol to speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    ClaudeCode,
    Codex,
    Gemini,
}

impl Kind {
    /// The agent name used when `--agent` is not given.
    #[must_use]
    pub fn default_agent(self) -> &'static str {
        match self {
            Kind::ClaudeCode => "claude-code",
            Kind::Codex => "codex",
            Kind::Gemini => "gemini",
        }
    }

    /// The budget used when `--timeout` is not given: under the agent's hook timeout.
    #[must_use]
    pub fn default_budget(self) -> Duration {
        match self {
            Kind::ClaudeCode | Kind::Codex => super::DEFAULT_BUDGET,
            Kind::Gemini => super::GEMINI_DEFAULT_BUDGET,
        }
    }
}

/// A hook payload, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub kind: Kind,
    /// Claude Code and Codex answers differ per event (Gemini has one event).
    pub event: Option<claude_code::Event>,
    pub call: ToolCall,
}

/// Reads a hook payload of `kind`.
pub fn parse(kind: Kind, input: &str) -> Result<Parsed, String> {
    let value: Value = serde_json::from_str(input)
        .map_err(|e| format!("the hook input is not valid JSON: {e}"))?;
    let (event, call) = match kind {
        Kind::ClaudeCode => {
            let (e, c) = claude_code::parse(&value)?;
            (Some(e), c)
        }
        Kind::Codex => {
            let (e, c) = codex::parse(&value)?;
            (Some(e), c)
        }
        Kind::Gemini => (None, gemini::parse(&value)?),
    };
    Ok(Parsed { kind, event, call })
}

/// The hook's stdout for `verdict`; `None` when the hook must print nothing (Codex's
/// `PreToolUse` on allow: see [`codex`]).
#[must_use]
pub fn render(parsed: &Parsed, verdict: &Verdict) -> Option<Value> {
    let event = parsed
        .event
        .unwrap_or(claude_code::Event::PermissionRequest);
    match parsed.kind {
        Kind::ClaudeCode => Some(claude_code::answer(event, verdict)),
        Kind::Codex => codex::answer(event, verdict),
        Kind::Gemini => Some(gemini::answer(verdict)),
    }
}
