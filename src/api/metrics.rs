//! `GET /metrics`: Prometheus text. Owners always; agents on TCP when
//! `[queue] metrics` is on.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::error::ApiResult;
use super::ApiState;

pub(super) async fn metrics(State(state): State<ApiState>) -> ApiResult<Response> {
    let pending = state.engine.count_pending().await?;
    let mut text = state.engine.metrics.render(pending);
    let node = &state.engine.node;
    crate::metrics::render_node(&mut text, &node.name, node.leads());
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response())
}
