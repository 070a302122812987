//! Agent trust, on the control socket only (owners): evidence and tiers, assessments,
//! tier overrides, pauses, grants and open proposals.
//!
//! - `GET /v1/agents`: every agent's trust; `GET /v1/agents/{name}/trust`: one.
//! - `POST /v1/agents/{name}/assess`: run the assessment now (may make a proposal).
//! - `POST /v1/agents/{name}/tier` `{"tier": "autonomous" | null, "reason"?}`
//!   (`null`: back to `bot.toml`'s tier).
//! - `POST /v1/agents/{name}/pause` `{"reason"?, "deny_pending"?}`;
//!   `POST /v1/agents/{name}/resume` `{}`.
//! - `GET /v1/grants?agent=&all=true`; `POST /v1/grants/{id}/revoke` `{}`.
//! - `GET /v1/proposals`: the open proposals.
//! - `POST /v1/evidence/recount` `{"check"?}`: count every agent's evidence from its
//!   requests again and compare it with the running summaries; without `check`,
//!   rebuild them if they differ (audited).
//!
//! Who changed something is the caller the kernel names, as for decisions
//! ([`super::owner::decider`]); a body naming an `actor` is refused.
//!
//! The agents' API has the changing routes too, only to refuse the attempt and audit
//! it ([`forbidden`]): an agent can neither raise its own tier nor lift its pause.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::Json;
use serde_json::{json, Value};

use super::error::{ApiError, ApiResult};
use super::extract::{audit_refusal, bearer, json_body, ApiPath, ApiQuery};
use super::owner::{owner_of, refuse_actor};
use super::ApiState;
use crate::approval::Via;
use crate::names::valid_agent_name;
use crate::policy::Tier;
use crate::trust::evidence::Recount;
use crate::trust::view::{ActorBody, AgentView, AssessOutcome, PauseBody, RecountBody, TierBody};
use crate::trust::{Actor, Grant, Proposal};

/// The owner acting through `req`, who may not name anyone in its body.
fn owner(
    state: &ApiState,
    req: &Request<Body>,
) -> impl std::future::Future<Output = ApiResult<Actor>> + Send {
    let name = owner_of(state, req);
    async move {
        Ok(Actor {
            name: name.await?,
            via: Via::Cli,
        })
    }
}

fn agent_name(name: &str) -> ApiResult<()> {
    if valid_agent_name(name) {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "agent names are 1-64 letters, digits, '-', '_' or '.'",
        ))
    }
}

pub(super) async fn list(State(state): State<ApiState>) -> ApiResult<Json<Value>> {
    let agents = state.engine.agent_views().await?;
    Ok(Json(json!({"agents": agents})))
}

pub(super) async fn show(
    State(state): State<ApiState>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<AgentView>> {
    agent_name(&name)?;
    Ok(Json(state.engine.agent_view(&name).await?))
}

pub(super) async fn assess(
    State(state): State<ApiState>,
    ApiPath(name): ApiPath<String>,
) -> ApiResult<Json<AssessOutcome>> {
    agent_name(&name)?;
    Ok(Json(state.engine.assess(&name).await?))
}

pub(super) async fn tier(
    State(state): State<ApiState>,
    ApiPath(name): ApiPath<String>,
    req: Request<Body>,
) -> ApiResult<Json<AgentView>> {
    agent_name(&name)?;
    let who = owner(&state, &req).await?;
    let body: TierBody = json_body(&state, req).await?;
    refuse_actor(body.actor.as_ref())?;
    let tier = match body.tier.as_deref() {
        None => None,
        Some(t) => Some(
            serde_json::from_value::<Tier>(Value::String(t.to_string())).map_err(|_| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    format!(
                        "`tier` must be draft_only, supervised, semi_autonomous or autonomous \
                         (or null for bot.toml's), got `{t}`"
                    ),
                )
            })?,
        ),
    };
    let reason = body.reason.filter(|r| !r.trim().is_empty());
    state.engine.set_tier(&name, tier, who, reason).await?;
    Ok(Json(state.engine.agent_view(&name).await?))
}

pub(super) async fn pause(
    State(state): State<ApiState>,
    ApiPath(name): ApiPath<String>,
    req: Request<Body>,
) -> ApiResult<Json<Value>> {
    agent_name(&name)?;
    let who = owner(&state, &req).await?;
    let body: PauseBody = json_body(&state, req).await?;
    refuse_actor(body.actor.as_ref())?;
    let reason = body.reason.filter(|r| !r.trim().is_empty());
    let o = state
        .engine
        .pause(&name, who, reason, body.deny_pending)
        .await?;
    Ok(Json(json!({
        "pause": o.pause,
        "new": o.new,
        "denied": o.denied.iter().map(|a| &a.short_id).collect::<Vec<_>>(),
        "pending": o.pending,
    })))
}

pub(super) async fn resume(
    State(state): State<ApiState>,
    ApiPath(name): ApiPath<String>,
    req: Request<Body>,
) -> ApiResult<Json<Value>> {
    agent_name(&name)?;
    let who = owner(&state, &req).await?;
    let body: ActorBody = json_body(&state, req).await?;
    refuse_actor(body.actor.as_ref())?;
    let lifted = state.engine.resume(&name, who).await?;
    Ok(Json(json!({"resumed": lifted.is_some(), "pause": lifted})))
}

#[derive(serde::Deserialize)]
pub(super) struct GrantsQuery {
    agent: Option<String>,
    all: Option<String>,
}

pub(super) async fn grants(
    State(state): State<ApiState>,
    ApiQuery(q): ApiQuery<GrantsQuery>,
) -> ApiResult<Json<Value>> {
    let all = match q.all.as_deref() {
        None | Some("" | "false") => false,
        Some("true") => true,
        Some(other) => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                format!("`all` must be true or false, got `{other}`"),
            ))
        }
    };
    let agent = q.agent.filter(|a| !a.is_empty());
    if let Some(a) = &agent {
        agent_name(a)?;
    }
    let grants: Vec<Grant> = state.engine.grants(agent, all).await?;
    Ok(Json(json!({"grants": grants})))
}

pub(super) async fn revoke(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
    req: Request<Body>,
) -> ApiResult<Json<Grant>> {
    let who = owner(&state, &req).await?;
    let body: ActorBody = json_body(&state, req).await?;
    refuse_actor(body.actor.as_ref())?;
    Ok(Json(state.engine.revoke_grant(&id, who).await?))
}

pub(super) async fn recount(
    State(state): State<ApiState>,
    req: Request<Body>,
) -> ApiResult<Json<Recount>> {
    let who = owner(&state, &req).await?;
    let body: RecountBody = json_body(&state, req).await?;
    refuse_actor(body.actor.as_ref())?;
    Ok(Json(state.engine.recount_evidence(body.check, who).await?))
}

pub(super) async fn proposals(State(state): State<ApiState>) -> ApiResult<Json<Value>> {
    let open: Vec<Proposal> = state.engine.open_proposals().await?;
    Ok(Json(json!({"proposals": open})))
}

/// A changing trust route on the agents' API: refused, and audited.
pub(super) async fn forbidden(
    State(state): State<ApiState>,
    ApiPath(target): ApiPath<String>,
    headers: HeaderMap,
    req: Request<Body>,
) -> ApiError {
    let (actor, detail, kind) = refusal(&state, target, &headers, &req);
    audit_refusal(&state, None, actor, kind, None, detail).await;
    ApiError::new(
        StatusCode::FORBIDDEN,
        "forbidden",
        "agents cannot change tiers, pauses or grants; an owner does, from a chat channel or the CLI",
    )
}

/// The evidence recount on the agents' API: refused, and audited.
pub(super) async fn recount_forbidden(
    State(state): State<ApiState>,
    headers: HeaderMap,
    req: Request<Body>,
) -> ApiError {
    let (actor, detail, kind) = refusal(&state, "every agent".into(), &headers, &req);
    audit_refusal(&state, None, actor, kind, None, detail).await;
    ApiError::new(
        StatusCode::FORBIDDEN,
        "forbidden",
        "agents cannot recount their evidence; an owner does, from the CLI",
    )
}

/// Who tried a trust route on the agents' API, what, and the kind of refusal it is
/// counted under (so refusals of different changes are counted apart).
fn refusal(
    state: &ApiState,
    target: String,
    headers: &HeaderMap,
    req: &Request<Body>,
) -> (String, Value, &'static str) {
    let actor = bearer(headers)
        .and_then(|t| state.engine.token_owner(t))
        .unwrap_or_else(|| "unknown".to_string());
    let detail = json!({
        "attempted": format!("{} {} on the agents' API", req.method(), req.uri().path()),
        "target": target,
        "transport": state.transport.as_str(),
    });
    let kind = match req.uri().path().rsplit('/').next() {
        Some("tier") => "change a tier",
        Some("pause") => "pause an agent",
        Some("resume") => "resume an agent",
        Some("assess") => "assess an agent",
        Some("revoke") => "revoke a grant",
        Some("recount") => "recount evidence",
        _ => "change trust",
    };
    (actor, detail, kind)
}
