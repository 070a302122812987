//! `POST /v1/hooks/claude-code?agent=NAME&wait=SECONDS`: Claude Code's
//! `type: "http"` hook, served by the daemon itself.
//!
//! The body and the answer are the command hook's JSON ([`crate::hooks::claude_code`]).
//! Claude Code treats any answer but a 2xx as "no opinion" and lets the tool run, so
//! **every** answer of this route is a `200` with a decision: allow only when gatebot
//! allowed or a human approved the call, otherwise deny with a message that says
//! why. That includes a missing or wrong token, an unknown agent, a bad `wait`, a body
//! over `[queue] max_body_bytes`, a body that is not JSON, and other hook events.
//!
//! 1. Read the body: up to `max_body_bytes` is kept; the rest of a larger body is read
//!    and dropped (up to [`DRAIN_CAP`]), so Claude Code finishes sending and then reads
//!    the deny, rather than a reset connection (which would also let the tool run).
//! 2. Find the hook event, from the JSON or, when the body is too large or not JSON,
//!    from its first bytes (Claude Code sends `hook_event_name` before `tool_input`).
//!    A deny takes that event's shape. For other events, or none, it is the generic
//!    `{"decision": "block", "reason": …}`, which Claude Code reads as a deny for
//!    `PreToolUse` and as a block elsewhere; a `hookSpecificOutput` naming the wrong
//!    event would be rejected as an error, and so let the tool run.
//! 3. Check the agent (`agent`, default `claude-code`) and its bearer token (always
//!    required on TCP). The message never contains the token.
//! 4. The budget is `wait` (or the `X-Gatebot-Wait` header), in seconds, capped by
//!    `[queue] max_wait`, which is also the default, and at least 1 s. Within it,
//!    submit, wait and answer ([`crate::hooks::resolve`]).
//!
//! Nothing can answer when the daemon is down or unreachable; Claude Code then runs
//! the tool. docs/integrations.md says so, and points to the command hook, which
//! denies in that case.

use std::sync::OnceLock;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, Request};
use axum::Json;
use http_body_util::BodyExt;
use regex::bytes::Regex;
use serde_json::{json, Value};
use tokio::time::Instant;
use tracing::field::Empty;
use tracing::Span;

use super::error::message;
use super::extract::{authenticate, note, Waiting};
use super::ApiState;
use crate::approval::Status;
use crate::config::AgentConfig;
use crate::engine::{EngineError, Submission};
use crate::hooks::claude_code::{self, Event};
use crate::hooks::{resolve, Budget, Gate, GateError, Kind, ToolCall, Verdict};
use crate::wire::{ApprovalView, SubmitBody};

/// The most of an oversize body that is read (and dropped) before answering.
pub(super) const DRAIN_CAP: usize = 32 * 1024 * 1024;
/// Names the call in a deny when the body does not say which tool it is.
const SOME_CALL: &str = "this tool call";

#[derive(serde::Deserialize)]
struct HookQuery {
    agent: Option<String>,
    wait: Option<String>,
}

#[tracing::instrument(name = "api", skip_all, fields(op = "hook", id = Empty, agent = Empty, tool = Empty, verdict = Empty))]
pub(super) async fn claude_code(State(state): State<ApiState>, req: Request<Body>) -> Json<Value> {
    let started = Instant::now();
    let (parts, body) = req.into_parts();
    let limit = state.engine.config().queue.max_body_bytes;
    let read = read_capped(body, limit, &parts.headers).await;
    let sniffed = Sniffed::from(&read.head);
    let tool = sniffed.tool.as_deref().unwrap_or(SOME_CALL);
    let deny = |verdict: Verdict| Json(deny(sniffed.event, &verdict.message));

    let caller = match caller(&state, &parts, tool).await {
        Ok(caller) => caller,
        Err(verdict) => return deny(verdict),
    };
    let (event, call) = match hook_call(&state, &caller.agent, &read, limit, tool) {
        Ok(parsed) => parsed,
        Err(verdict) => return deny(verdict),
    };
    let gate = EngineGate {
        state: &state,
        name: &caller.agent,
        agent: &caller.config,
    };
    let budget = Budget::new(caller.wait, started);
    let mut body = call.submit_body(&caller.agent);
    // Claude Code takes an edited call back (`updatedInput`).
    body.accepts_edits = true;
    // Not kept while the call waits for its decision: the request's head and body.
    drop((parts, read));
    let verdict = resolve(&gate, &body, budget, |_, _| {}).await;
    Json(claude_code::answer(event, &verdict))
}

/// Who calls the hook, checked.
struct Caller {
    agent: String,
    config: AgentConfig,
    /// How long the call may wait for its decision.
    wait: Duration,
}

/// The query's agent (`claude-code` by default), once its token is checked, and the
/// wait it asked for; or the deny that says why not.
async fn caller(state: &ApiState, parts: &Parts, tool: &str) -> Result<Caller, Verdict> {
    let query = serde_urlencoded::from_str::<HookQuery>(parts.uri.query().unwrap_or(""))
        .map_err(|e| Verdict::unreachable(tool, &format!("bad query string: {e}")))?;
    let agent = query
        .agent
        .unwrap_or_else(|| Kind::ClaudeCode.default_agent().to_string());
    // Cut: every log line of the call carries them, and they are not checked yet.
    Span::current().record("agent", crate::engine::cut(&agent).as_ref());
    Span::current().record("tool", crate::engine::cut(tool).as_ref());
    let config = match authenticate(
        state,
        &agent,
        &parts.headers,
        "use the claude-code hook",
        None,
    )
    .await
    {
        Ok(cfg) => cfg,
        Err(e) => {
            // A refused token is logged (once a minute per kind) where it is audited.
            if !matches!(e, EngineError::Unauthorized { .. }) {
                let error = e.to_string();
                tracing::warn!(error = %crate::engine::cut(&error), "http hook refused");
            }
            return Err(Verdict::unreachable(tool, &message(&e)));
        }
    };
    let wait = budget(state, query.wait.as_deref(), &parts.headers)
        .map_err(|e| Verdict::unreachable(tool, &e))?;
    Ok(Caller {
        agent,
        config,
        wait,
    })
}

/// The hook event and the tool call the body asks about, once the body was read whole,
/// fits `max_body_bytes` and the agent's quota, and parses; or the deny that says why not.
fn hook_call(
    state: &ApiState,
    agent: &str,
    read: &Capped,
    limit: usize,
    tool: &str,
) -> Result<(Event, ToolCall), Verdict> {
    if let Some(e) = &read.error {
        return Err(Verdict::unreachable(tool, e));
    }
    if read.total > limit {
        return Err(Verdict::too_large(
            tool,
            read.whole.then_some(read.total),
            Some(limit),
        ));
    }
    if let Err(e) = state
        .engine
        .admit(agent, crate::limits::Quota::Requests, read.total)
    {
        return Err(Verdict::unreachable(tool, &message(&e)));
    }
    let input: Value = serde_json::from_slice(&read.head).map_err(|e| {
        let e = format!("the hook body is not valid JSON: {e}");
        Verdict::unreachable(tool, &e)
    })?;
    claude_code::parse(&input).map_err(|e| Verdict::unreachable(tool, &e))
}

/// A deny in `event`'s shape, or the generic block when the event is not known.
fn deny(event: Option<Event>, message: &str) -> Value {
    let verdict = Verdict {
        allow: false,
        message: message.to_string(),
        updated_input: None,
    };
    match event {
        Some(e) => claude_code::answer(e, &verdict),
        None => json!({"decision": "block", "reason": message}),
    }
}

/// A body read under the size cap.
struct Capped {
    /// The first `limit` bytes.
    head: Vec<u8>,
    /// Bytes seen, counting those dropped; reading stops past [`DRAIN_CAP`].
    total: usize,
    /// True when the whole body was read.
    whole: bool,
    /// Why reading failed, if it did.
    error: Option<String>,
}

async fn read_capped(mut body: Body, limit: usize, headers: &HeaderMap) -> Capped {
    let mut read = Capped {
        head: Vec::new(),
        total: 0,
        whole: false,
        error: None,
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > DRAIN_CAP) {
        // Too big even to drop: answer now (the client may see the connection close).
        read.total = DRAIN_CAP + 1;
        return read;
    }
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                let Ok(data) = frame.into_data() else {
                    continue; // trailers
                };
                read.total += data.len();
                let room = limit.saturating_sub(read.head.len());
                read.head.extend_from_slice(&data[..data.len().min(room)]);
                if read.total > DRAIN_CAP {
                    return read;
                }
            }
            Err(e) => {
                read.error = Some(format!("reading the hook body failed: {e}"));
                return read;
            }
        }
    }
    read.whole = true;
    read
}

/// The event and tool named at the start of a body, found without parsing it whole.
#[derive(Debug, Default, PartialEq)]
struct Sniffed {
    event: Option<Event>,
    tool: Option<String>,
}

impl Sniffed {
    fn from(head: &[u8]) -> Sniffed {
        static EVENT: OnceLock<Regex> = OnceLock::new();
        static TOOL: OnceLock<Regex> = OnceLock::new();
        let first = |re: &Regex| {
            re.captures(head)
                .and_then(|c| c.get(1))
                .and_then(|m| std::str::from_utf8(m.as_bytes()).ok())
                .map(str::to_string)
        };
        let event_re = EVENT.get_or_init(|| {
            Regex::new(r#""hook_event_name"\s*:\s*"([A-Za-z]{1,64})""#).expect("valid regex")
        });
        let tool_re = TOOL.get_or_init(|| {
            Regex::new(r#""tool_name"\s*:\s*"([A-Za-z0-9_.:-]{1,128})""#).expect("valid regex")
        });
        Sniffed {
            event: first(event_re).and_then(|e| match e.as_str() {
                "PermissionRequest" => Some(Event::PermissionRequest),
                "PreToolUse" => Some(Event::PreToolUse),
                _ => None,
            }),
            tool: first(tool_re),
        }
    }
}

/// The budget asked for in the query or header, within `[queue] max_wait`.
fn budget(state: &ApiState, query: Option<&str>, headers: &HeaderMap) -> Result<Duration, String> {
    let max = state.engine.config().queue.max_wait;
    let asked = match (query, headers.get("x-gatebot-wait")) {
        (Some(q), _) => Some(q.to_string()),
        (None, Some(h)) => Some(h.to_str().unwrap_or("?").to_string()),
        (None, None) => None,
    };
    match asked.map(|w| w.trim().parse::<f64>()) {
        None => Ok(max),
        Some(Ok(w)) if w.is_finite() && w >= 0.0 => Ok(Duration::try_from_secs_f64(w)
            .unwrap_or(Duration::MAX)
            .min(max)),
        Some(_) => Err("`wait` (or X-Gatebot-Wait) must be a number of seconds ≥ 0".into()),
    }
}

/// The engine in-process, acting as one authenticated agent.
struct EngineGate<'a> {
    state: &'a ApiState,
    name: &'a str,
    agent: &'a AgentConfig,
}

impl Gate for EngineGate<'_> {
    async fn submit(&self, b: &SubmitBody) -> Result<ApprovalView, GateError> {
        // A hook's call waits as long as the hook allows, not a ttl of its own.
        let sub = Submission {
            asked: b.clone().into(),
            ttl: None,
        };
        self.state
            .engine
            .submit(sub, self.agent)
            .await
            .map(|s| {
                note(&s.approval);
                ApprovalView::from(&s.approval)
            })
            .map_err(|e| GateError::Failed(message(&e)))
    }

    async fn wait(&self, id: &str, up_to: Duration) -> Result<ApprovalView, GateError> {
        let shutting_down = || GateError::Failed("gatebot is shutting down".into());
        if self.state.shutdown.is_cancelled() {
            return Err(shutting_down());
        }
        let engine = &self.state.engine;
        let a = Waiting::run(self.state, self.name, |stop| async move {
            engine.wait(id, up_to, &stop).await
        })
        .await
        .map_err(|e: EngineError| GateError::Failed(message(&e)))?;
        note(&a);
        if a.status == Status::Pending && self.state.shutdown.is_cancelled() {
            return Err(shutting_down());
        }
        Ok(ApprovalView::from(&a))
    }

    async fn cancel(&self, id: &str) -> Result<ApprovalView, GateError> {
        match self.state.engine.cancel(id, self.name).await {
            Ok(a) => {
                note(&a);
                Ok(ApprovalView::from(&a))
            }
            Err(EngineError::AlreadySettled(a)) => {
                note(&a);
                Ok(ApprovalView::from(&*a))
            }
            Err(e) => Err(GateError::Failed(message(&e))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_event_and_tool_are_found_at_the_start_of_a_cut_body() {
        let body = br#"{"session_id":"s","hook_event_name" : "PreToolUse","tool_name":"Write","tool_input":{"content":"xxxx"#;
        assert_eq!(
            Sniffed::from(body),
            Sniffed {
                event: Some(Event::PreToolUse),
                tool: Some("Write".into())
            }
        );
        let other = br#"{"hook_event_name":"Stop"}"#;
        assert_eq!(Sniffed::from(other), Sniffed::default());
        assert_eq!(Sniffed::from(b"not json at all"), Sniffed::default());
    }

    #[test]
    fn a_deny_for_an_unknown_event_is_the_generic_block() {
        assert_eq!(
            deny(None, "no"),
            json!({"decision": "block", "reason": "no"})
        );
        assert_eq!(
            deny(Some(Event::PermissionRequest), "no")["hookSpecificOutput"]["decision"],
            json!({"behavior": "deny", "message": "no"})
        );
    }
}
