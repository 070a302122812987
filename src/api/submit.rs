//! `POST /v1/requests`: an agent submits a tool call and gets the verdict at once:
//! `201` for a new request, `200` for a repeat of an earlier idempotency key.

use axum::body::Body;
use axum::extract::State;
use axum::http::{Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use tracing::field::Empty;
use tracing::{instrument, Span};

use super::error::{ApiError, ApiResult};
use super::extract::{admit, authenticate_as, json_body_sized, note};
use super::ApiState;
use crate::engine::{cut, Submission};
use crate::limits::Quota;
use crate::wire::{ApprovalView, SubmitBody};

#[instrument(name = "api", skip_all, fields(op = "submit", id = Empty, agent = Empty, tool = Empty, verdict = Empty))]
pub(super) async fn submit(
    State(state): State<ApiState>,
    req: Request<Body>,
) -> ApiResult<Response> {
    let headers = req.headers().clone();
    let (body, size): (SubmitBody, _) = json_body_sized(&state, req).await?;
    let span = Span::current();
    // Cut: every log line of the call carries them, and they are not checked yet.
    span.record("agent", cut(&body.agent).as_ref());
    span.record("tool", cut(&body.tool).as_ref());
    let attempted = format!("submit a {} request", body.tool);
    let agent = authenticate_as(
        &state,
        &body.agent,
        &headers,
        "submit a request",
        &attempted,
        None,
    )
    .await?;
    admit(&state, &body.agent, Quota::Requests, size)?;
    let ttl = body
        .ttl
        .as_deref()
        .map(crate::time::parse_duration)
        .transpose()
        .map_err(|e| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                format!("`ttl`: {e}"),
            )
        })?;
    let submitted = state
        .engine
        .submit(
            Submission {
                asked: body.into(),
                ttl,
            },
            &agent,
        )
        .await?;
    note(&submitted.approval);
    let status = if submitted.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(ApprovalView::from(&submitted.approval))).into_response())
}
