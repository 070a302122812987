//! `GET /v1/health`: that the daemon answers, its version, and whether its storage can
//! keep what it is sent: `503` with `storage_unavailable` (the database file was
//! deleted or replaced, I/O errors) or `storage_full`, and what to do, when not.
//! While agents' writes are refused because they filled their share of the database
//! (`store.reserve` is kept for owners), the answer stays `200` (owners can act) and
//! says so under `agents`. `node` names the node that answered and says whether it
//! leads (a load balancer in front of the chat webhooks can check it).
//!
//! `GET /v1/nodes` (owners only): every node using the database, and what owners should
//! look at (`gatebot nodes`).

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde_json::json;

use super::error::ApiResult;
use super::ApiState;
use crate::engine::cluster::NodesView;

pub(super) async fn health(State(state): State<ApiState>) -> (StatusCode, Json<serde_json::Value>) {
    let version = env!("CARGO_PKG_VERSION");
    let node = json!({
        "name": state.engine.node.name,
        "leader": state.engine.node.leads(),
    });
    match state.engine.storage_fault().await {
        None => {
            let mut body = json!({"ok": true, "version": version, "node": node, "storage": "ok"});
            if let Some(message) = state.engine.agents_held_back().await {
                body["agents"] = json!({"code": "storage_full", "message": message});
            }
            (StatusCode::OK, Json(body))
        }
        Some(fault) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({
                "ok": false,
                "version": version,
                "node": node,
                "storage": fault.code(),
                "error": {"code": fault.code(), "message": fault.message},
            })),
        ),
    }
}

pub(super) async fn nodes(State(state): State<ApiState>) -> ApiResult<Json<NodesView>> {
    Ok(Json(state.engine.nodes().await?))
}
