//! `GET /v1/requests/{id}?wait=SECONDS`: one request; while it is pending, waits up to
//! `wait` (capped by `[queue] max_wait`) for it to be settled.

use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::Json;
use tracing::field::Empty;
use tracing::instrument;

use super::error::ApiResult;
use super::extract::{authorised_request, note, wait_param, ApiPath, ApiQuery, Waiting};
use super::ApiState;
use crate::approval::Status;
use crate::wire::ApprovalView;

#[derive(serde::Deserialize)]
pub(super) struct WaitQuery {
    wait: Option<String>,
}

#[instrument(name = "api", skip_all, fields(op = "get", id = Empty, agent = Empty, tool = Empty, verdict = Empty))]
pub(super) async fn get_request(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<WaitQuery>,
    headers: HeaderMap,
) -> ApiResult<Json<ApprovalView>> {
    let wait = wait_param("wait", q.wait.as_deref())?;
    let approval = authorised_request(&state, &id, &headers, "read a request").await?;
    // Only what the wait needs is kept while it waits (thousands of polls may).
    drop(headers);
    let max = state.engine.config().queue.max_wait;
    let wait = wait.unwrap_or(Duration::ZERO).min(max);
    let approval = if approval.status == Status::Pending && !wait.is_zero() {
        // A wait keeps only the request's id and agent: thousands of polls may wait.
        let (id, agent) = (approval.id.clone(), approval.agent.clone());
        drop(approval);
        let engine = &state.engine;
        Waiting::run(&state, &agent, |stop| async move {
            engine.wait(&id, wait, &stop).await
        })
        .await?
    } else {
        approval
    };
    note(&approval);
    Ok(Json(ApprovalView::from(&approval)))
}
