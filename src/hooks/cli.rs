//! `gatebot hook claude-code|codex|gemini`: one hook invocation, stdin to stdout.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use tokio::time::Instant;

use super::{claude_code, codex, gemini, resolve, Budget, SocketGate, ToolCall, Verdict};
use crate::api::client::Client;

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
    /// Claude Code answers differ per event.
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
        Kind::Codex => (None, codex::parse(&value)?),
        Kind::Gemini => (None, gemini::parse(&value)?),
    };
    Ok(Parsed { kind, event, call })
}

/// The hook's stdout for `verdict`.
#[must_use]
pub fn render(parsed: &Parsed, verdict: &Verdict) -> Value {
    match (parsed.kind, parsed.event) {
        (Kind::ClaudeCode, Some(e)) => claude_code::answer(e, verdict),
        (Kind::ClaudeCode, None) => {
            claude_code::answer(claude_code::Event::PermissionRequest, verdict)
        }
        (Kind::Codex, _) => codex::answer(verdict),
        (Kind::Gemini, _) => gemini::answer(verdict),
    }
}

/// What `gatebot hook` was asked to do.
#[derive(Debug, Clone)]
pub struct HookRun {
    pub kind: Kind,
    pub agent: Option<String>,
    pub budget: Option<Duration>,
    /// When the hook process started: the budget counts from then.
    pub started: Instant,
    /// The agents' socket, or why it could not be found (then the answer is a deny).
    pub socket: Result<PathBuf, String>,
    pub token: Option<String>,
}

/// Answers one hook payload. `Err` only for input that is not a hook payload of
/// this kind (the caller exits 2, which Claude Code and Gemini CLI treat as a block).
pub async fn run(h: HookRun, input: &str) -> Result<Value, String> {
    let parsed = parse(h.kind, input)?;
    let agent = h
        .agent
        .unwrap_or_else(|| h.kind.default_agent().to_string());
    let verdict = match h.socket {
        Err(e) => Verdict::unreachable(&parsed.call.tool, &e),
        Ok(socket) => {
            let gate = SocketGate {
                client: Client::new(socket).with_token(h.token),
            };
            let total = h.budget.unwrap_or_else(|| h.kind.default_budget());
            let budget = Budget::new(total, h.started);
            resolve(&gate, &parsed.call.submit_body(&agent), budget, |_, _| {}).await
        }
    };
    Ok(render(&parsed, &verdict))
}
