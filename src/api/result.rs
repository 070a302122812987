//! `POST /v1/requests/{id}/result`: the agent reports that an allowed or approved
//! call is executing, succeeded or failed.

use axum::body::Body;
use axum::extract::State;
use axum::http::{Request, StatusCode};
use axum::Json;
use tracing::field::Empty;
use tracing::instrument;

use super::error::{ApiError, ApiResult};
use super::extract::{authorised_request, json_body, note, ApiPath};
use super::ApiState;
use crate::approval::Status;
use crate::wire::{ApprovalView, ResultBody};

#[instrument(name = "api", skip_all, fields(op = "result", id = Empty, agent = Empty, tool = Empty, verdict = Empty))]
pub(super) async fn report(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
    req: Request<Body>,
) -> ApiResult<Json<ApprovalView>> {
    let headers = req.headers().clone();
    let approval = authorised_request(&state, &id, &headers, "report a result").await?;
    let body: ResultBody = json_body(&state, req).await?;
    let to = match (body.ok, body.executing) {
        (Some(true), _) => Status::Succeeded,
        (Some(false), _) => Status::Failed,
        (None, Some(true)) => Status::Executing,
        _ => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "send {\"ok\": true|false, \"detail\": \"…\"} or {\"executing\": true}",
            ))
        }
    };
    // A bad cost is refused before anything is recorded.
    let cost = body.cost.map(crate::engine::check_cost).transpose()?;
    let mut a = state.engine.report(&approval.id, to, body.detail).await?;
    if let Some(cost) = cost {
        a = state.engine.report_cost(&a.id, cost).await?;
    }
    note(&a);
    Ok(Json(ApprovalView::from(&a)))
}
