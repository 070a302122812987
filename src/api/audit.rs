//! `GET /v1/audit?request=&since=`, `GET /v1/audit/verify?head=` and
//! `GET /v1/audit/head` (owners only): the audit trail, the check of its hash chain
//! (against an anchor kept elsewhere, if given), and the chain's head to keep as one.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::json;

use super::error::{ApiError, ApiResult};
use super::extract::ApiQuery;
use super::ApiState;

#[derive(serde::Deserialize)]
pub(super) struct AuditQuery {
    request: Option<String>,
    since: Option<String>,
}

pub(super) async fn audit(
    State(state): State<ApiState>,
    ApiQuery(q): ApiQuery<AuditQuery>,
) -> ApiResult<Json<serde_json::Value>> {
    let since = q
        .since
        .as_deref()
        .map(|s| {
            s.trim().parse::<i64>().map_err(|_| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    format!("`since` must be a time in Unix milliseconds, got `{s}`"),
                )
            })
        })
        .transpose()?;
    let id = match q.request {
        Some(typed) => Some(state.engine.lookup(&typed, false).await?.id),
        None => None,
    };
    let rows = state.engine.audit_rows(id, since).await?;
    Ok(Json(json!({"audit": rows})))
}

#[derive(serde::Deserialize)]
pub(super) struct VerifyQuery {
    head: Option<String>,
}

pub(super) async fn audit_verify(
    State(state): State<ApiState>,
    ApiQuery(q): ApiQuery<VerifyQuery>,
) -> ApiResult<Json<serde_json::Value>> {
    let anchor = q
        .head
        .map(|h| {
            let h = h.trim().to_ascii_lowercase();
            if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) {
                Ok(h)
            } else {
                Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    "`head` must be a head hash as `gatebot audit head` prints it (64 hex digits)",
                ))
            }
        })
        .transpose()?;
    let check = state.engine.verify_audit(anchor).await?;
    Ok(Json(serde_json::to_value(check).unwrap_or_default()))
}

pub(super) async fn audit_head(
    State(state): State<ApiState>,
) -> ApiResult<Json<serde_json::Value>> {
    match state.engine.audit_head().await? {
        Some(head) => Ok(Json(serde_json::to_value(head).unwrap_or_default())),
        None => Err(ApiError::new(
            StatusCode::CONFLICT,
            "audit_broken",
            "the audit trail has no head record (it was removed from the database); \
             run `gatebot audit verify`",
        )),
    }
}
