//! `POST /v1/hooks/claude-code?agent=NAME&wait=SECONDS`: Claude Code's
//! `type: "http"` hook, served by the daemon itself.
//!
//! The body and the answer are the command hook's JSON ([`crate::hooks::claude_code`]).
//! The agent's bearer token is checked like every agent route (always required on
//! TCP). Errors before the request is submitted (no such agent, bad token, not a
//! hook payload) are HTTP errors; everything after is a `200` with a deny, because
//! Claude Code treats an HTTP error from a hook as "no opinion" and lets the tool run.
//! The wait budget is `wait` (or the `X-Gatebot-Wait` header), in seconds, capped by
//! `[queue] max_wait`, which is also the default.

use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::Json;
use serde_json::Value;
use tracing::field::Empty;
use tracing::Span;

use super::{
    authenticate, json_body, wait_param, ApiError, ApiQuery, ApiResult, ApiState, ApprovalView,
    SubmitBody,
};
use crate::approval::Status;
use crate::config::AgentConfig;
use crate::engine::{EngineError, Submission};
use crate::hooks::{claude_code, resolve, Gate};

#[derive(serde::Deserialize)]
pub(super) struct HookQuery {
    agent: Option<String>,
    wait: Option<String>,
}

#[tracing::instrument(name = "api", skip_all, fields(op = "hook", id = Empty, agent = Empty, tool = Empty, verdict = Empty))]
pub(super) async fn claude_code(
    State(state): State<ApiState>,
    ApiQuery(q): ApiQuery<HookQuery>,
    req: Request<Body>,
) -> ApiResult<Json<Value>> {
    let headers = req.headers().clone();
    let agent = q.agent.unwrap_or_else(|| {
        crate::hooks::cli::Kind::ClaudeCode
            .default_agent()
            .to_string()
    });
    Span::current().record("agent", agent.as_str());
    let cfg = authenticate(&state, &agent, &headers, "use the claude-code hook", None).await?;
    let budget = budget(&state, q.wait.as_deref(), &headers)?;
    let input: Value = json_body(&state, req).await?;
    let (event, call) = claude_code::parse(&input)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", e))?;
    Span::current().record("tool", call.tool.as_str());
    let gate = EngineGate {
        state: &state,
        name: &agent,
        agent: &cfg,
    };
    let verdict = resolve(&gate, &call.submit_body(&agent), budget, |_, _| {}).await;
    Ok(Json(claude_code::answer(event, &verdict)))
}

fn budget(state: &ApiState, query: Option<&str>, headers: &HeaderMap) -> ApiResult<Duration> {
    let max = state.engine.config().queue.max_wait;
    let asked = match (query, headers.get("x-gatebot-wait")) {
        (Some(q), _) => wait_param("wait", Some(q))?,
        (None, Some(h)) => {
            let text = h.to_str().map_err(|_| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    "`X-Gatebot-Wait` must be a number of seconds ≥ 0",
                )
            })?;
            wait_param("X-Gatebot-Wait", Some(text))?
        }
        (None, None) => None,
    };
    Ok(asked.map_or(max, |w| w.min(max)))
}

/// The engine in-process, acting as one authenticated agent.
struct EngineGate<'a> {
    state: &'a ApiState,
    name: &'a str,
    agent: &'a AgentConfig,
}

impl Gate for EngineGate<'_> {
    async fn submit(&self, b: &SubmitBody) -> Result<ApprovalView, String> {
        let sub = Submission {
            agent: b.agent.clone(),
            tool: b.tool.clone(),
            args: b.args.clone(),
            summary: b.summary.clone(),
            confidence: b.confidence,
            environment: b.environment.clone(),
            ttl: None,
            idempotency_key: b.idempotency_key.clone(),
        };
        self.state
            .engine
            .submit(sub, self.agent)
            .await
            .map(|s| {
                super::note(&s.approval);
                ApprovalView::from(&s.approval)
            })
            .map_err(|e| e.to_string())
    }

    async fn wait(&self, id: &str, up_to: Duration) -> Result<ApprovalView, String> {
        if self.state.shutdown.is_cancelled() {
            return Err("gatebot is shutting down".into());
        }
        let a = self
            .state
            .engine
            .wait(id, up_to, &self.state.shutdown)
            .await
            .map_err(|e| e.to_string())?;
        super::note(&a);
        if a.status == Status::Pending && self.state.shutdown.is_cancelled() {
            return Err("gatebot is shutting down".into());
        }
        Ok(ApprovalView::from(&a))
    }

    async fn cancel(&self, id: &str) -> Result<ApprovalView, String> {
        match self.state.engine.cancel(id, self.name).await {
            Ok(a) => {
                super::note(&a);
                Ok(ApprovalView::from(&a))
            }
            Err(EngineError::AlreadySettled(a)) => {
                super::note(&a);
                Ok(ApprovalView::from(&*a))
            }
            Err(e) => Err(e.to_string()),
        }
    }
}
