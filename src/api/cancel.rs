//! `POST /v1/requests/{id}/cancel`: the agent withdraws a request still pending.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;
use tracing::field::Empty;
use tracing::instrument;

use super::error::ApiResult;
use super::extract::{authorised_request, note, note_error, ApiPath};
use super::ApiState;
use crate::wire::ApprovalView;

#[instrument(name = "api", skip_all, fields(op = "cancel", id = Empty, agent = Empty, tool = Empty, verdict = Empty))]
pub(super) async fn cancel(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
    headers: HeaderMap,
) -> ApiResult<Json<ApprovalView>> {
    let approval = authorised_request(&state, &id, &headers, "cancel a request").await?;
    let result = state.engine.cancel(&approval.id, &approval.agent).await;
    note_error(&result);
    let a = result?;
    note(&a);
    Ok(Json(ApprovalView::from(&a)))
}
