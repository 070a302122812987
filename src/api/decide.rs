//! `POST /v1/requests/{id}/decision`: an owner's decision, on the control socket only.
//! The agents' API has the route too, only to refuse the attempt and audit it.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use tracing::field::Empty;
use tracing::instrument;

use super::error::{ApiError, ApiResult};
use super::extract::{audit_refusal, bearer, json_body, note, note_error, ApiPath};
use super::ApiState;
use crate::approval::{Decision, Via};
use crate::engine::SubjectKind;
use crate::wire::{ApprovalView, DecisionBody};

/// Decides whatever `id` names: an owner answers every kind of subject (a request,
/// and what later kinds add) with `gatebot decide ID VERB`. Each kind's answer is its
/// own JSON; every kind but a request's says its `kind`.
#[instrument(name = "api", skip_all, fields(op = "decide", id = Empty, agent = Empty, tool = Empty, verdict = Empty))]
pub(super) async fn decide(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
    req: Request<Body>,
) -> ApiResult<Response> {
    let body: DecisionBody = json_body(&state, req).await?;
    let actor = body
        .actor
        .clone()
        .filter(|a| !a.trim().is_empty())
        .unwrap_or_else(local_user);
    // Requests that never asked a human are no subjects; they are still looked up
    // (and refused as already settled) by the request path.
    let subject = state.engine.chat().lookup(&id).await.ok();
    match subject.as_ref().map_or(SubjectKind::Approval, |s| s.kind) {
        SubjectKind::Approval => decide_request(&state, &id, body, actor)
            .await
            .map(IntoResponse::into_response),
        SubjectKind::CheckIn => {
            let id = subject.map(|s| s.id).unwrap_or(id);
            super::runs::decide_check_in(&state, &id, body, actor).await
        }
    }
}

async fn decide_request(
    state: &ApiState,
    id: &str,
    body: DecisionBody,
    actor: String,
) -> ApiResult<Json<ApprovalView>> {
    let verb = body
        .decision
        .parse()
        .map_err(|e: String| ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", e))?;
    let result = state
        .engine
        .decide(
            id,
            Decision {
                verb,
                actor,
                via: Via::Cli,
                reason: body.reason.filter(|r| !r.trim().is_empty()),
            },
        )
        .await;
    note_error(&result);
    let a = result?;
    note(&a);
    Ok(Json(ApprovalView::from(&a)))
}

/// `POST /v1/requests/{id}/decision` on the agents' API: refused, and audited.
pub(super) async fn decision_forbidden(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
    headers: HeaderMap,
) -> ApiError {
    // Who tried: the agent whose token came with it, if any; nobody else can be named.
    let actor = bearer(&headers)
        .and_then(|t| state.engine.token_owner(t))
        .unwrap_or_else(|| "unknown".to_string());
    let approval_id = match state.engine.lookup(&id, false).await {
        Ok(a) => Some(a.id),
        Err(_) => state.engine.chat().lookup(&id).await.ok().map(|s| s.id),
    };
    let detail = json!({
        "attempted": format!("decide request {id} on the agents' API"),
        "transport": state.transport.as_str(),
    });
    audit_refusal(&state, approval_id, actor, detail).await;
    ApiError::new(
        StatusCode::FORBIDDEN,
        "forbidden",
        "agents cannot decide requests; an owner decides from a chat channel or the CLI",
    )
}

/// The name of the local user, for decisions made from the CLI.
#[must_use]
pub fn local_user() -> String {
    std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| "local owner".to_string())
}
