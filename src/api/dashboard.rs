//! The web dashboard's sign-in, on the control socket only (owners):
//!
//! - `POST /v1/dashboard/links` `{}`: a single-use sign-in link for the caller (the
//!   person `[people]` names for the account, else the account): `{"url", "person",
//!   "expires_at"}`.
//! - `GET /v1/dashboard/sessions`: the signed-in browsers.
//! - `POST /v1/dashboard/sessions/revoke` `{"session": ID}` | `{"person": NAME}` |
//!   `{"all": true}`: ends them; `{"ended": [ids]}`.
//!
//! `409 dashboard_off` when `[dashboard] listen` is not set.

use axum::body::Body;
use axum::extract::State;
use axum::http::{Request, StatusCode};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::error::{ApiError, ApiResult};
use super::extract::json_body;
use super::owner::owner_of;
use super::ApiState;
use crate::approval::Via;
use crate::engine::SessionEnd;
use crate::time::format_ms as rfc3339;

pub(super) async fn link(
    State(state): State<ApiState>,
    req: Request<Body>,
) -> ApiResult<Json<Value>> {
    let person = owner_of(&state, &req).await?;
    let _: Value = json_body(&state, req).await?;
    let link = state.engine.sign_in_link(&person, Via::Cli, None).await?;
    Ok(Json(json!({
        "url": link.url,
        "person": person,
        "expires_at": rfc3339(link.expires_at),
    })))
}

pub(super) async fn sessions(State(state): State<ApiState>) -> ApiResult<Json<Value>> {
    state.engine.dashboard()?;
    let sessions: Vec<Value> = state
        .engine
        .sessions()
        .await?
        .into_iter()
        .map(|s| {
            json!({
                "id": s.id,
                "person": s.person,
                "user_agent": s.user_agent,
                "created_at": rfc3339(s.created_at),
                "last_seen_at": rfc3339(s.last_seen_at),
                "expires_at": rfc3339(s.expires_at),
            })
        })
        .collect();
    Ok(Json(json!({"sessions": sessions})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RevokeBody {
    session: Option<String>,
    person: Option<String>,
    #[serde(default)]
    all: bool,
}

pub(super) async fn revoke(
    State(state): State<ApiState>,
    req: Request<Body>,
) -> ApiResult<Json<Value>> {
    let by = owner_of(&state, &req).await?;
    let body: RevokeBody = json_body(&state, req).await?;
    let which = match (body.session, body.person, body.all) {
        (Some(id), None, false) => SessionEnd::One(id),
        (None, Some(p), false) => SessionEnd::Person(p),
        (None, None, true) => SessionEnd::All,
        _ => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "name one session (`session`), one person (`person`), or `all`",
            ))
        }
    };
    state.engine.dashboard()?;
    let ended = state.engine.end_sessions(which, &by, Via::Cli).await?;
    Ok(Json(json!({"ended": ended})))
}
