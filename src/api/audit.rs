//! `GET /v1/audit?request=&since=` and `GET /v1/audit/verify` (owners only): the
//! audit trail, and the check of its hash chain.

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
    // A request, or a subject of another kind (a proposal).
    let id = match q.request {
        Some(typed) => match state.engine.lookup(&typed, false).await {
            Err(crate::engine::EngineError::NotFound(_)) => {
                Some(state.engine.chat().lookup(&typed).await?.id)
            }
            found => Some(found?.id),
        },
        None => None,
    };
    let rows = state.engine.audit_rows(id, since).await?;
    Ok(Json(json!({"audit": rows})))
}

pub(super) async fn audit_verify(
    State(state): State<ApiState>,
) -> ApiResult<Json<serde_json::Value>> {
    let check = state.engine.verify_audit().await?;
    Ok(Json(serde_json::to_value(check).unwrap_or_default()))
}
