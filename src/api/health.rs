//! `GET /v1/health`: that the daemon answers, its version, and whether its storage can
//! keep what it is sent: `503` with `storage_unavailable` (the database file was
//! deleted or replaced, I/O errors) or `storage_full`, and what to do, when not.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::json;

use super::ApiState;

pub(super) async fn health(State(state): State<ApiState>) -> (StatusCode, Json<serde_json::Value>) {
    let version = env!("CARGO_PKG_VERSION");
    match state.engine.storage_fault().await {
        None => (
            StatusCode::OK,
            Json(json!({"ok": true, "version": version, "storage": "ok"})),
        ),
        Some(fault) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({
                "ok": false,
                "version": version,
                "storage": fault.code(),
                "error": {"code": fault.code(), "message": fault.message},
            })),
        ),
    }
}
