//! `POST /v1/hooks/claude-code?agent=NAME&wait=SECONDS`: Claude Code's
//! `type: "http"` hook, served by the daemon itself.
//!
//! The body and the answer are the command hook's JSON ([`crate::hooks::claude_code`]).
//! The agent's bearer token is checked like every agent route (always required on
//! TCP). Errors before the request is submitted (no such agent, bad token, not a
//! hook payload) are HTTP errors; everything after is a `200` with a deny, because
//! Claude Code treats an HTTP error from a hook as "no opinion" and lets the tool run.
//! The wait budget is `wait` (or the `X-Gatebot-Wait` header), in seconds, capped by
//! `[queue] max_wait`, which is also the default, and at least 1 s.

use std::time::Duration;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Request, StatusCode};
use axum::Json;
use serde_json::Value;

use super::{bearer, json_body, ApiError, ApiResult, ApiState, ApprovalView, SubmitBody};
use crate::approval::Status;
use crate::config::AgentConfig;
use crate::engine::{EngineError, Submission};
use crate::hooks::{claude_code, resolve, Budget, Gate, GateError};

#[derive(serde::Deserialize)]
pub(super) struct HookQuery {
    agent: Option<String>,
    wait: Option<f64>,
}

pub(super) async fn claude_code(
    State(state): State<ApiState>,
    Query(q): Query<HookQuery>,
    req: Request<Body>,
) -> ApiResult<Json<Value>> {
    let headers = req.headers().clone();
    let agent = q.agent.unwrap_or_else(|| {
        crate::hooks::cli::Kind::ClaudeCode
            .default_agent()
            .to_string()
    });
    let cfg = state
        .engine
        .authenticate(&agent, bearer(&headers), state.transport)?;
    let budget = budget(&state, q.wait, &headers)?;
    let input: Value = json_body(&state, req).await?;
    let (event, call) = claude_code::parse(&input)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", e))?;
    let gate = EngineGate {
        state: &state,
        name: &agent,
        agent: &cfg,
    };
    let budget = Budget::new(budget, tokio::time::Instant::now());
    let verdict = resolve(&gate, &call.submit_body(&agent), budget, |_, _| {}).await;
    Ok(Json(claude_code::answer(event, &verdict)))
}

fn budget(state: &ApiState, query: Option<f64>, headers: &HeaderMap) -> ApiResult<Duration> {
    let max = state.engine.config().queue.max_wait;
    let header = headers
        .get("x-gatebot-wait")
        .map(|v| {
            v.to_str()
                .ok()
                .and_then(|s| s.trim().parse::<f64>().ok())
                .ok_or(())
        })
        .transpose();
    let asked = match (query, header) {
        (Some(w), _) => Some(w),
        (None, Ok(h)) => h,
        (None, Err(())) => Some(f64::NAN),
    };
    match asked {
        None => Ok(max),
        Some(w) if w.is_finite() && w >= 0.0 => Ok(Duration::from_secs_f64(w).min(max)),
        Some(_) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "`wait` (or X-Gatebot-Wait) must be a number of seconds ≥ 0",
        )),
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
            .map(|s| ApprovalView::from(&s.approval))
            .map_err(|e| GateError::Failed(e.to_string()))
    }

    async fn wait(&self, id: &str, up_to: Duration) -> Result<ApprovalView, GateError> {
        let shutting_down = || GateError::Failed("gatebot is shutting down".into());
        if self.state.shutdown.is_cancelled() {
            return Err(shutting_down());
        }
        let a = self
            .state
            .engine
            .wait(id, up_to, &self.state.shutdown)
            .await
            .map_err(|e| GateError::Failed(e.to_string()))?;
        if a.status == Status::Pending && self.state.shutdown.is_cancelled() {
            return Err(shutting_down());
        }
        Ok(ApprovalView::from(&a))
    }

    async fn cancel(&self, id: &str) -> Result<ApprovalView, GateError> {
        match self.state.engine.cancel(id, self.name).await {
            Ok(a) => Ok(ApprovalView::from(&a)),
            Err(EngineError::AlreadySettled(a)) => Ok(ApprovalView::from(&*a)),
            Err(e) => Err(GateError::Failed(e.to_string())),
        }
    }
}
