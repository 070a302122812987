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
use serde_json::{json, Value};
use tracing::field::Empty;
use tracing::{instrument, Span};

use super::error::{ApiError, ApiResult};
use super::extract::{audit_refusal, bearer, json_body, ApiPath};
use super::owner::{owner_of, refuse_actor};
use super::ApiState;
use crate::approval::Via;
use crate::chat::conversation::{self, owner::OwnerDecision, owner::Refused};
use crate::engine::EngineError;

/// Where the control socket's step-up window is kept (one per person).
const STEP_UP_SURFACE: &str = "cli";
use crate::wire::DecisionBody;

/// Decides whatever `id` names, through its kind in the registry: an owner answers
/// every kind of subject with `gatebot decide ID VERB`. The answer is the subject's
/// view (every kind's but a request's says its `kind`) with `said`: what the owner is
/// told, a line each.
#[instrument(name = "api", skip_all, fields(op = "decide", id = Empty, agent = Empty, tool = Empty, verdict = Empty))]
pub(super) async fn decide(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
    req: Request<Body>,
) -> ApiResult<Response> {
    let actor = owner_of(&state, &req).await?;
    let body: DecisionBody = json_body(&state, req).await?;
    refuse_actor(body.actor.as_ref())?;
    // A code confirms the person's second factor (and opens their window on the CLI).
    let factor = match &body.code {
        Some(code) => {
            state
                .engine
                .step_up(&actor, STEP_UP_SURFACE, Some(code), Via::Cli)
                .await?
        }
        None => false,
    };
    let mut decision = OwnerDecision {
        verb: body.decision,
        reason: body.reason,
        prefix: body.prefix,
        exact: body.exact,
        for_: body.for_,
        args: body.args,
        actor,
        via: Via::Cli,
        factor,
    };
    // An id that names no subject (a request that never asked a human) is still
    // looked up, and refused as already settled, by the kind that decides such ids.
    let subject = state.engine.identify(&id).await.ok();
    let mut result =
        conversation::decide(&state.engine, subject.as_ref(), &id, decision.clone()).await;
    // An approval that needs a second factor, without a code: within the person's
    // step-up window on the CLI it stands confirmed (and the window is renewed).
    if let Err(Refused::Engine(EngineError::StepUpRequired { enrolled: true, .. })) = &result {
        if state
            .engine
            .step_up(&decision.actor, STEP_UP_SURFACE, None, Via::Cli)
            .await?
        {
            decision.factor = true;
            result = conversation::decide(&state.engine, subject.as_ref(), &id, decision).await;
        }
    }
    match result {
        Ok(decided) => {
            note(&decided.view);
            let mut view = decided.view;
            view["said"] = json!(decided.said);
            Ok(Json(view).into_response())
        }
        Err(Refused::Unclear(message)) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            message,
        )),
        Err(Refused::Settled { message, shown }) => {
            let mut body = json!({"error": {"code": "already_decided", "message": message}});
            if let Some((key, view)) = shown {
                body[key] = view;
            }
            Ok((StatusCode::CONFLICT, Json(body)).into_response())
        }
        Err(Refused::Engine(e)) => Err(e.into()),
    }
}

/// Records in the API call's span what was decided, from its view.
fn note(view: &Value) {
    let span = Span::current();
    for (field, key) in [
        ("id", "id"),
        ("agent", "agent"),
        ("tool", "tool"),
        ("verdict", "status"),
    ] {
        if let Some(v) = view[key].as_str() {
            span.record(field, v);
        }
    }
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
