//! The hooks over the agents' API: `DaemonGate`, and one `gatebot hook
//! claude-code|codex|gemini` invocation, its payload in and its answer out.

use std::time::Duration;

use hyper::{Method, StatusCode};
use serde_json::{json, Value};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{Client, ClientError, Response};
use crate::hooks::{parse, render, resolve_until_stopped, Budget, Gate, GateError, Kind, Verdict};
use crate::wire::{ApprovalView, SubmitBody};

/// The daemon over its agents' socket or its TCP endpoints ([`Client`], which fails
/// over between them). A wait or a withdrawal names a request one endpoint made, so
/// it goes by [`Client::get_made`] and [`Client::post_made`].
#[derive(Debug, Clone)]
pub(crate) struct DaemonGate {
    pub client: Client,
}

impl From<ClientError> for GateError {
    fn from(e: ClientError) -> Self {
        if e.is_transient() {
            GateError::Unreachable(e.to_string())
        } else {
            GateError::Failed(e.to_string())
        }
    }
}

fn view_from(res: Response) -> Result<ApprovalView, GateError> {
    if !res.status.is_success() {
        return Err(GateError::Failed(format!(
            "{} ({})",
            res.error_message(),
            res.error_code().unwrap_or("error")
        )));
    }
    serde_json::from_value(res.body)
        .map_err(|e| GateError::Failed(format!("unexpected answer from gatebot: {e}")))
}

impl Gate for DaemonGate {
    async fn submit(&self, body: &SubmitBody) -> Result<ApprovalView, GateError> {
        let bytes = serde_json::to_vec(body).map_err(|e| e.to_string())?;
        let size = bytes.len();
        let res = self
            .client
            .send(Method::POST, "/v1/requests", Some(bytes))
            .await?;
        if res.status == StatusCode::PAYLOAD_TOO_LARGE {
            return Err(GateError::TooLarge {
                bytes: Some(size),
                limit: res.body["error"]["max_body_bytes"]
                    .as_u64()
                    .and_then(|n| usize::try_from(n).ok()),
            });
        }
        view_from(res)
    }

    async fn wait(&self, id: &str, up_to: Duration) -> Result<ApprovalView, GateError> {
        let path = format!("/v1/requests/{id}?wait={:.3}", up_to.as_secs_f64());
        view_from(self.client.get_made(&path).await?)
    }

    async fn cancel(&self, id: &str) -> Result<ApprovalView, GateError> {
        let res = self
            .client
            .post_made(&format!("/v1/requests/{id}/cancel"), &json!({}))
            .await?;
        if res.error_code() == Some("already_decided") {
            return serde_json::from_value(res.body["request"].clone())
                .map_err(|e| GateError::Failed(format!("unexpected answer from gatebot: {e}")));
        }
        view_from(res)
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
    /// The client of the agents' socket or endpoints, with the agent's token, or why
    /// there is none (then the answer is a deny).
    pub client: Result<Client, String>,
    /// Fires when the agent kills the hook: withdraw, deny, exit.
    pub stop: CancellationToken,
    /// The inbox task the agent runs (`GATEBOT_TASK_ID`), named on the request.
    pub task_id: Option<String>,
}

/// Answers one hook payload: the JSON to print, or `None` to print nothing (Codex's
/// `PreToolUse` on allow). `Err` only for input that is not a hook payload of this
/// kind (the caller exits 2, which every agent treats as a block).
pub async fn run(h: HookRun, input: &str) -> Result<Option<Value>, String> {
    let parsed = parse(h.kind, input)?;
    let agent = h
        .agent
        .unwrap_or_else(|| h.kind.default_agent().to_string());
    let verdict = match h.client {
        Err(e) => Verdict::unreachable(&parsed.call.tool, &e),
        Ok(client) => {
            let gate = DaemonGate { client };
            let total = h.budget.unwrap_or_else(|| h.kind.default_budget());
            let budget = Budget::new(total, h.started);
            let mut body = parsed.call.submit_body(&agent);
            body.task_id = h.task_id;
            // A call resent to another endpoint must find the same request: a payload
            // without a tool call id (Codex's PermissionRequest, Gemini CLI's) gets a key
            // of this hook run's own.
            if body.idempotency_key.is_none() {
                body.idempotency_key = Some(super::fresh_idempotency_key());
            }
            // Claude Code takes an edited call back (`updatedInput`); Codex and Gemini CLI
            // do not.
            body.accepts_edits = parsed.kind == Kind::ClaudeCode;
            resolve_until_stopped(&gate, &body, budget, |_, _| {}, &h.stop).await
        }
    };
    Ok(render(&parsed, &verdict))
}
