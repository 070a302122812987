//! The local HTTP/JSON API.
//!
//! Two routers share the handlers:
//! - the **agent API** ([`agent_router`]), served on the agents' Unix socket and the
//!   optional TCP listener: submit, get (long-poll), report a result, cancel, list
//!   the agent's own pending requests. It has no route that decides a request.
//! - the **owner API** ([`owner_router`]), served only on the control socket (mode
//!   0600): everything above for any agent, plus decisions and the audit trail,
//!   handing over, cancelling and retrying inbox tasks, agents' trust (evidence,
//!   tiers, pauses, grants, proposals), and the caller's second factors.
//!
//! Both serve the inbox's agent routes: claiming a task and reporting on it
//! (`tasks`); on the agents' socket, the owners' task routes and the trust routes
//! that change something are refused and audited.
//!
//! Both also serve `GET /v1/agents/{name}` (tier guidance); the agent API also serves
//! `POST /v1/hooks/claude-code` (Claude Code's `type: "http"` hook).
//!
//! Errors are `{"error": {"code": "…", "message": "…"}}` with a fitting status.
//!
//! Every route about one request (submit, get, result, cancel, decision, the hook)
//! runs in an `api` span whose `op` names the route and whose `id`, `agent`, `tool`
//! and `verdict` (the request's status) are recorded as soon as they are known, so
//! every log line of the call carries them.
//!
//! Both serve the workflow runs API (`runs`: start, events, get with long-poll, list),
//! with the same token rules as requests.
//!
//! One file per route (`submit`, `get`, `list`, `result`, `cancel`, `decide`, `audit`,
//! `metrics`, `health`, `agents`, `hook`, `runs`), one for the inbox's (`tasks`), `trust`
//! for the trust routes, `factors` for people's second factors (step-up) and
//! `dashboard` for the dashboard's links and sessions; what they share is in `error` (the error
//! body and the engine's errors mapped onto it) and `extract` (reading requests,
//! authentication, span notes). This file holds the routers: which routes each socket
//! serves is the API's access control, so it stays in one place.

mod agents;
mod audit;
mod cancel;
mod dashboard;
mod decide;
mod error;
mod extract;
mod factors;
mod get;
mod health;
mod hook;
mod list;
mod metrics;
mod owner;
mod pending;
mod result;
mod runs;
mod submit;
mod tasks;
mod trust;

use std::sync::Arc;

use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::Router;
use tokio_util::sync::CancellationToken;

use crate::engine::{Engine, Transport};

pub use error::ApiError;
pub use list::MAX_PAGE;

/// Shared state of a router.
#[derive(Clone)]
pub struct ApiState {
    pub engine: Arc<Engine>,
    pub transport: Transport,
    /// True on the owners' control socket.
    pub owner: bool,
    /// Fires at shutdown so long-polls return at once.
    pub shutdown: CancellationToken,
}

/// Routes agents may use (and `/metrics` on TCP when `[queue] metrics` is on).
pub fn agent_router(state: ApiState) -> Router {
    let with_metrics = state.transport == Transport::Tcp && state.engine.config().queue.metrics;
    let routes = if with_metrics {
        common_routes().route("/metrics", get(metrics::metrics))
    } else {
        common_routes()
    };
    routes
        .route(
            "/v1/requests/{id}/decision",
            post(decide::decision_forbidden),
        )
        .route("/v1/hooks/claude-code", post(hook::claude_code))
        .route("/v1/tasks", post(tasks::owner_only).get(tasks::list))
        .route("/v1/tasks/{id}/answer", post(tasks::owner_only))
        .route("/v1/tasks/{id}/cancel", post(tasks::owner_only))
        .route("/v1/tasks/{id}/retry", post(tasks::owner_only))
        // Trust changes are the owners': refused here, and audited.
        .route("/v1/agents/{name}/tier", post(trust::forbidden))
        .route("/v1/agents/{name}/pause", post(trust::forbidden))
        .route("/v1/agents/{name}/resume", post(trust::forbidden))
        .route("/v1/agents/{name}/assess", post(trust::forbidden))
        .route("/v1/grants/{id}/revoke", post(trust::forbidden))
        .route("/v1/evidence/recount", post(trust::recount_forbidden))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        // Each request's agent holds a slot while it is answered (`[queue] max_connections_per_agent`).
        .layer(axum::middleware::from_fn(extract::count_requests))
        .with_state(state)
}

/// Routes for owners: the agent routes plus decisions and the audit trail.
pub fn owner_router(state: ApiState) -> Router {
    common_routes()
        .route("/v1/requests/{id}/decision", post(decide::decide))
        .route("/v1/pending", get(pending::pending))
        .route("/v1/audit", get(audit::audit))
        .route("/v1/audit/verify", get(audit::audit_verify))
        .route("/v1/audit/head", get(audit::audit_head))
        .route("/v1/nodes", get(health::nodes))
        .route("/v1/tasks", post(tasks::create).get(tasks::list))
        .route("/v1/tasks/{id}/answer", post(tasks::answer))
        .route("/v1/tasks/{id}/cancel", post(tasks::cancel))
        .route("/v1/tasks/{id}/retry", post(tasks::retry))
        .route("/metrics", get(metrics::metrics))
        .route("/v1/agents", get(trust::list))
        .route("/v1/agents/{name}/trust", get(trust::show))
        .route("/v1/agents/{name}/assess", post(trust::assess))
        .route("/v1/agents/{name}/tier", post(trust::tier))
        .route("/v1/agents/{name}/pause", post(trust::pause))
        .route("/v1/agents/{name}/resume", post(trust::resume))
        .route("/v1/grants", get(trust::grants))
        .route("/v1/grants/{id}/revoke", post(trust::revoke))
        .route("/v1/proposals", get(trust::proposals))
        .route("/v1/evidence/recount", post(trust::recount))
        .route("/v1/factors", get(factors::list).post(factors::enroll))
        .route("/v1/factors/{id}/confirm", post(factors::confirm))
        .route("/v1/factors/{id}/remove", post(factors::remove))
        .route("/v1/dashboard/links", post(dashboard::link))
        .route("/v1/dashboard/sessions", get(dashboard::sessions))
        .route("/v1/dashboard/sessions/revoke", post(dashboard::revoke))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

fn common_routes() -> Router<ApiState> {
    Router::new()
        .route("/v1/health", get(health::health))
        .route("/v1/requests", post(submit::submit).get(list::list))
        .route("/v1/requests/{id}", get(get::get_request))
        .route("/v1/requests/{id}/result", post(result::report))
        .route("/v1/requests/{id}/cancel", post(cancel::cancel))
        .route("/v1/agents/{name}", get(agents::guidance))
        .route("/v1/tasks/claim", post(tasks::claim))
        .route("/v1/tasks/{id}", get(tasks::get))
        .route("/v1/tasks/{id}/progress", post(tasks::progress))
        .route("/v1/tasks/{id}/complete", post(tasks::complete))
        .route("/v1/tasks/{id}/fail", post(tasks::fail))
        .route("/v1/tasks/{id}/needs-input", post(tasks::needs_input))
        .route("/v1/runs", post(runs::start).get(runs::list))
        .route("/v1/runs/{id}", get(runs::get_run))
        .route("/v1/runs/{id}/events", post(runs::event))
}

async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "no_route",
        "no such route; see docs/api.md",
    )
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not take that method; see docs/api.md",
    )
}
