//! Second factors (step-up, docs/teams.md), on the control socket only: the caller's
//! own factors, the caller being the person the kernel names ([`super::owner::owner_of`]).
//!
//! - `GET /v1/factors`: the caller's factors (never their secrets).
//! - `POST /v1/factors` `{"label"?}`: starts an enrolment; `201` with its `id`, `secret`
//!   (base32) and `uri` (`otpauth://…`), shown this once.
//! - `POST /v1/factors/{id}/confirm` `{"code"}`: its first code finishes it.
//! - `POST /v1/factors/{id}/remove` `{"code"}`: removes it, after a fresh code from any
//!   of the caller's factors.
//!
//! A wrong code is `403 wrong_code` (and counts: past a few, `429 codes_locked`).

use axum::body::Body;
use axum::extract::State;
use axum::http::{Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::error::ApiResult;
use super::extract::{json_body, ApiPath};
use super::owner::owner_of;
use super::ApiState;
use crate::approval::Via;
use crate::engine::FactorRow;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct EnrolBody {
    #[serde(default)]
    label: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CodeBody {
    code: String,
}

fn view(f: &FactorRow) -> Value {
    json!({
        "id": f.id,
        "label": f.label,
        "created_at": crate::time::format_ms(f.created_at),
        "confirmed": f.confirmed_at.is_some(),
    })
}

pub(super) async fn list(
    State(state): State<ApiState>,
    req: Request<Body>,
) -> ApiResult<Json<Value>> {
    let person = owner_of(&state, &req).await?;
    let factors = state.engine.factors(&person).await?;
    Ok(Json(json!({
        "person": person,
        "factors": factors.iter().map(view).collect::<Vec<_>>(),
    })))
}

pub(super) async fn enroll(
    State(state): State<ApiState>,
    req: Request<Body>,
) -> ApiResult<Response> {
    let person = owner_of(&state, &req).await?;
    let body: EnrolBody = json_body(&state, req).await?;
    let label = body
        .label
        .unwrap_or_else(|| "authenticator app".to_string());
    let e = state.engine.enroll_factor(&person, &label).await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({"id": e.id, "person": person, "label": label.trim(), "secret": e.secret, "uri": e.uri})),
    )
        .into_response())
}

pub(super) async fn confirm(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
    req: Request<Body>,
) -> ApiResult<Json<Value>> {
    let person = owner_of(&state, &req).await?;
    let body: CodeBody = json_body(&state, req).await?;
    state
        .engine
        .confirm_factor(&person, &id, &body.code, Via::Cli)
        .await?;
    Ok(Json(json!({"id": id, "confirmed": true})))
}

pub(super) async fn remove(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
    req: Request<Body>,
) -> ApiResult<Json<Value>> {
    let person = owner_of(&state, &req).await?;
    let body: CodeBody = json_body(&state, req).await?;
    state
        .engine
        .remove_factor(&person, &id, &body.code, Via::Cli)
        .await?;
    Ok(Json(json!({"id": id, "removed": true})))
}
