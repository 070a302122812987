//! `GET /metrics`: Prometheus text. Owners always; agents on TCP when
//! `[queue] metrics` is on.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::error::ApiResult;
use super::ApiState;

pub(super) async fn metrics(State(state): State<ApiState>) -> ApiResult<Response> {
    let pending = state.engine.count_pending().await?;
    Ok((
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.engine.metrics.render(pending),
    )
        .into_response())
}
