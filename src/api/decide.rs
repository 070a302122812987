//! `POST /v1/requests/{id}/decision`: an owner's decision, on the control socket only.
//! The agents' API has the route too, only to refuse the attempt and audit it.
//!
//! The id may name a request or a proposal. For a request, `approve-always` (and
//! `approve` with `for`) also makes a grant, scoped by `prefix` / `exact` for a
//! shell-like tool; the answer carries it as `grant`. For a proposal, `approve` or
//! `deny` (`decline`); the answer is the proposal with `"kind": "proposal"`.
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
use tracing::instrument;

use super::error::{ApiError, ApiResult};
use super::extract::{audit_refusal, bearer, json_body, note, note_error, ApiPath};
use super::owner::{owner_of, refuse_actor};
use super::ApiState;
use crate::approval::{Decision, Verb, Via};
use crate::engine::{GrantChoice, ProposalDecided, ScopeChoice};
use crate::subject::SubjectKind;
use crate::time::parse_duration;
use crate::trust::{Actor, Proposal};
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
    let actor = owner_of(&req).await?;
    let body: DecisionBody = json_body(&state, req).await?;
    refuse_actor(body.actor.as_ref())?;
    // Requests that never asked a human are no subjects; they are still looked up
    // (and refused as already settled) by the request path.
    let subject = state.engine.identify(&id).await.ok();
    match subject.as_ref().map_or(SubjectKind::Approval, |s| s.kind) {
        SubjectKind::Approval => decide_request(&state, &id, body, actor)
            .await
            .map(IntoResponse::into_response),
        SubjectKind::Task => super::tasks::decide(&state, &id, &body.decision, actor).await,
        SubjectKind::CheckIn => {
            let id = subject.map(|s| s.id).unwrap_or(id);
            super::runs::decide_check_in(&state, &id, body, actor).await
        }
        SubjectKind::Proposal => decide_proposal(&state, &id, body, actor)
            .await
            .map(IntoResponse::into_response),
    }
}

fn bad_request(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", message)
}

/// A proposal: `approve` changes the agent's tier, `deny` (or `decline`) declines it.
/// The answer is the proposal, with `"kind": "proposal"`.
async fn decide_proposal(
    state: &ApiState,
    id: &str,
    body: DecisionBody,
    actor: String,
) -> ApiResult<Json<serde_json::Value>> {
    if body.prefix.is_some() || body.exact || body.for_.is_some() {
        return Err(bad_request(
            "--prefix, --exact and --for are for requests; a proposal is approved or declined",
        ));
    }
    let approve = match body.decision.trim().to_ascii_lowercase().as_str() {
        "decline" | "declined" => false,
        d => match d.parse::<Verb>() {
            Ok(Verb::Approve) => true,
            Ok(Verb::Deny) => false,
            Ok(Verb::ApproveAlways) => {
                return Err(bad_request(
                    "a proposal is approved or declined: use approve or deny",
                ))
            }
            Err(e) => return Err(bad_request(e)),
        },
    };
    let subject = state.engine.identify(id).await?;
    let who = Actor {
        name: actor,
        via: Via::Cli,
    };
    let reason = body.reason.filter(|r| !r.trim().is_empty());
    let view = |p: &Proposal| {
        let mut v = serde_json::to_value(p).unwrap_or_default();
        v["kind"] = "proposal".into();
        v
    };
    match state
        .engine
        .decide_proposal(&subject.id, approve, who, reason)
        .await?
    {
        ProposalDecided::Done(p) => Ok(Json(view(&p))),
        ProposalDecided::AlreadySettled(p) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "already_decided",
            format!(
                "proposal {} is already {}{}",
                p.short_id,
                p.status.as_str(),
                p.decided_by
                    .as_ref()
                    .map(|a| format!(" by {}", a.label()))
                    .unwrap_or_default()
            ),
        )),
        ProposalDecided::Superseded(p) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "already_decided",
            format!(
                "proposal {} is out of date: {}'s tier changed since it was made (from {}), \
                 so nothing changed",
                p.short_id,
                p.agent,
                p.from.as_str()
            ),
        )),
    }
}

/// What the body asks an approval to grant.
fn grant_choice(body: &DecisionBody) -> ApiResult<GrantChoice> {
    let scope = match (&body.prefix, body.exact) {
        (Some(_), true) => return Err(bad_request("use either --prefix or --exact, not both")),
        (Some(p), false) if p.trim().is_empty() => ScopeChoice::Prefix(None),
        (Some(p), false) => ScopeChoice::Prefix(Some(p.clone())),
        (None, true) => ScopeChoice::Exact,
        (None, false) => ScopeChoice::Default,
    };
    let for_ = body
        .for_
        .as_deref()
        .map(|d| parse_duration(d).map_err(|e| bad_request(format!("`for`: {e}"))))
        .transpose()?;
    Ok(GrantChoice { scope, for_ })
}

async fn decide_request(
    state: &ApiState,
    id: &str,
    body: DecisionBody,
    actor: String,
) -> ApiResult<Json<serde_json::Value>> {
    let verb = body
        .decision
        .parse()
        .map_err(|e: String| ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", e))?;
    let choice = grant_choice(&body)?;
    let result = state
        .engine
        .decide_granting(
            id,
            Decision {
                verb,
                actor,
                via: Via::Cli,
                reason: body.reason.filter(|r| !r.trim().is_empty()),
            },
            choice,
        )
        .await;
    note_error(&result);
    let a = result?;
    note(&a);
    // The request as always, and the grant its approval made, if any.
    let mut view = serde_json::to_value(ApprovalView::from(&a)).unwrap_or_default();
    if a.always_allowed {
        if let Some(g) = state.engine.grant_of_approval(&a.id).await? {
            view["grant"] = serde_json::to_value(g).unwrap_or_default();
        }
    }
    Ok(Json(view))
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
        Err(_) => state.engine.identify(&id).await.ok().map(|s| s.id),
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
