//! `POST /v1/requests/{id}/decision`: an owner's decision, on the control socket only.
//! The agents' API has the route too, only to refuse the attempt and audit it.
//!
//! Who decided is the caller the kernel names ([`crate::peer`]), never what the body or
//! the daemon's environment says: the account behind the connection, or, for gatebot's
//! own account and root, the person sudo named.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use tracing::field::Empty;
use tracing::{info, instrument};

use super::error::{ApiError, ApiResult};
use super::extract::{audit_refusal, bearer, json_body, note, note_error, ApiPath};
use super::ApiState;
use crate::approval::{Decision, Via};
use crate::engine::SubjectKind;
use crate::peer::{check_sudo_user, Caller, SUDO_USER_HEADER};
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
    let caller = req.extensions().get::<Caller>().copied();
    let actor = decider(caller, req.headers()).await?;
    let body: DecisionBody = json_body(&state, req).await?;
    if body.actor.is_some() {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "`actor` is not accepted: gatebot records who decided from the control socket's \
             peer credentials (the caller's own account)",
        ));
    }
    // Requests that never asked a human are no subjects; they are still looked up
    // (and refused as already settled) by the request path.
    let subject = state.engine.chat().lookup(&id).await.ok();
    match subject.as_ref().map_or(SubjectKind::Approval, |s| s.kind) {
        SubjectKind::Approval => decide_request(&state, &id, body, actor)
            .await
            .map(IntoResponse::into_response),
        SubjectKind::Task => super::tasks::decide(&state, &id, &body.decision, actor).await,
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
    audit_refusal(&state, approval_id, actor, "decide a request", None, detail).await;
    ApiError::new(
        StatusCode::FORBIDDEN,
        "forbidden",
        "agents cannot decide requests; an owner decides from a chat channel or the CLI",
    )
}

/// Who is deciding: the kernel's caller of this connection (see the module docs).
pub(super) async fn decider(caller: Option<Caller>, headers: &HeaderMap) -> ApiResult<String> {
    let bad = |m: String| ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", m);
    let sudo_user = match headers.get(SUDO_USER_HEADER) {
        None => None,
        Some(v) => {
            let v = v
                .to_str()
                .map_err(|_| bad(format!("`{SUDO_USER_HEADER}` must be a user name")))?;
            Some(check_sudo_user(v).map_err(bad)?.to_string())
        }
    };
    let Some(caller) = caller else {
        // Every Unix connection carries one; the control socket is only ever Unix.
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            "decisions are taken only from a caller the kernel can name (the control socket)",
        ));
    };
    // getpwuid_r may ask NSS (a directory service): not on the async threads.
    let (name, account) = tokio::task::spawn_blocking(move || {
        (caller.owner_name(sudo_user.as_deref()), caller.account())
    })
    .await
    .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?;
    if name != account {
        info!(by = %name, account = %account, uid = caller.uid, pid = ?caller.pid, "decision through a shared account, for the person sudo named");
    }
    Ok(name)
}
