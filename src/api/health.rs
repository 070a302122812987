//! `GET /v1/health`: that the daemon answers, and its version.

use axum::Json;
use serde_json::json;

pub(super) async fn health() -> Json<serde_json::Value> {
    Json(json!({"ok": true, "version": env!("CARGO_PKG_VERSION")}))
}
