//! The local HTTP/JSON API.
//!
//! Two routers share the handlers:
//! - the **agent API** ([`agent_router`]), served on the agents' Unix socket and the
//!   optional TCP listener: submit, get (long-poll), report a result, cancel, list
//!   the agent's own pending requests. It has no route that decides a request.
//! - the **owner API** ([`owner_router`]), served only on the control socket (mode
//!   0600): everything above for any agent, plus decisions and the audit trail.
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

mod agents;
pub mod client;
mod hook;
mod wire;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::de::DeserializeOwned;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tracing::field::Empty;
use tracing::{instrument, Span};

use crate::approval::{Approval, Channel, Decision, Status};
use crate::config::AgentConfig;
use crate::engine::{record_request, Engine, EngineError, Submission, Transport};

pub use wire::{ApprovalView, DecisionBody, ResultBody, SubmitBody};

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

/// An API error: status, stable code, human message.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// The request the error is about, if any (e.g. who already decided it).
    pub approval: Option<Box<Approval>>,
    /// On `payload_too_large`, the limit, so clients can say what to raise.
    pub max_body_bytes: Option<usize>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            approval: None,
            max_body_bytes: None,
        }
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        let message = e.to_string();
        match e {
            EngineError::UnknownAgent(_) => {
                ApiError::new(StatusCode::FORBIDDEN, "unknown_agent", message)
            }
            EngineError::Unauthorized(_) => {
                ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
            }
            EngineError::Forbidden(_) => ApiError::new(StatusCode::FORBIDDEN, "forbidden", message),
            EngineError::Invalid(_) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_request", message)
            }
            EngineError::NotFound(_) => ApiError::new(StatusCode::NOT_FOUND, "not_found", message),
            EngineError::Ambiguous { .. } => {
                ApiError::new(StatusCode::CONFLICT, "ambiguous_id", message)
            }
            EngineError::AlreadySettled(a) => ApiError {
                status: StatusCode::CONFLICT,
                code: "already_decided",
                message,
                approval: Some(a),
                max_body_bytes: None,
            },
            EngineError::IdempotencyConflict { .. } => {
                ApiError::new(StatusCode::CONFLICT, "idempotency_conflict", message)
            }
            EngineError::Store(_) | EngineError::Internal(_) => {
                tracing::error!(error = %message, "request failed");
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "internal error; see the daemon's log",
                )
            }
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({"error": {"code": self.code, "message": self.message}});
        if let Some(n) = self.max_body_bytes {
            body["error"]["max_body_bytes"] = json!(n);
        }
        if let Some(a) = self.approval {
            body["request"] = serde_json::to_value(ApprovalView::from(&*a)).unwrap_or_default();
        }
        (self.status, Json(body)).into_response()
    }
}

type ApiResult<T> = Result<T, ApiError>;

/// Records `a` in the current `api` span (see the module docs).
fn note(a: &Approval) {
    record_request(&Span::current(), a);
}

/// Records in the current span the request an engine error is about, if any.
fn note_error<T>(result: &Result<T, EngineError>) {
    if let Err(EngineError::AlreadySettled(a)) = result {
        note(a);
    }
}

/// Query-string parameters. Unlike axum's `Query`, whose rejection is plain text, a
/// query that does not parse (an unknown shape, a repeated parameter) gets the JSON
/// `invalid_request` error. Handlers take values as strings and parse them
/// themselves, so the message can name the parameter and say what it must be.
pub(super) struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        serde_urlencoded::from_str(parts.uri.query().unwrap_or_default())
            .map(ApiQuery)
            .map_err(|e| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    format!("bad query string: {e}"),
                )
            })
    }
}

/// A path parameter, with the JSON `invalid_request` error when it does not decode
/// (axum's own `Path` answers in plain text, e.g. for `%FF`).
pub(super) struct ApiPath<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiPath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        Path::<T>::from_request_parts(parts, state)
            .await
            .map(|Path(v)| ApiPath(v))
            .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", e.body_text()))
    }
}

/// A `wait` parameter: seconds ≥ 0, fractions allowed; `None` when absent.
/// Values too large for a `Duration` saturate (callers cap them at `max_wait`).
pub(super) fn wait_param(name: &str, raw: Option<&str>) -> ApiResult<Option<Duration>> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    match raw.trim().parse::<f64>() {
        Ok(w) if w.is_finite() && w >= 0.0 => Ok(Some(
            Duration::try_from_secs_f64(w).unwrap_or(Duration::MAX),
        )),
        _ => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            format!("`{name}` must be a number of seconds ≥ 0, got `{raw}`"),
        )),
    }
}

/// Routes agents may use (and `/metrics` on TCP when `[queue] metrics` is on).
pub fn agent_router(state: ApiState) -> Router {
    let with_metrics = state.transport == Transport::Tcp && state.engine.config().queue.metrics;
    let routes = if with_metrics {
        common_routes().route("/metrics", get(metrics))
    } else {
        common_routes()
    };
    routes
        .route("/v1/requests/{id}/decision", post(decision_forbidden))
        .route("/v1/hooks/claude-code", post(hook::claude_code))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

/// Routes for owners: the agent routes plus decisions and the audit trail.
pub fn owner_router(state: ApiState) -> Router {
    common_routes()
        .route("/v1/requests/{id}/decision", post(decide))
        .route("/v1/audit", get(audit))
        .route("/v1/audit/verify", get(audit_verify))
        .route("/metrics", get(metrics))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
}

fn common_routes() -> Router<ApiState> {
    Router::new()
        .route("/v1/health", get(health))
        .route("/v1/requests", post(submit).get(list))
        .route("/v1/requests/{id}", get(get_request))
        .route("/v1/requests/{id}/result", post(report))
        .route("/v1/requests/{id}/cancel", post(cancel))
        .route("/v1/agents/{name}", get(agents::guidance))
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

/// `POST /v1/requests/{id}/decision` on the agents' API: refused, and audited.
async fn decision_forbidden(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
    headers: HeaderMap,
) -> ApiError {
    // Who tried: the agent whose token came with it, if any; nobody else can be named.
    let actor = bearer(&headers)
        .and_then(|t| state.engine.token_owner(t))
        .unwrap_or_else(|| "unknown".to_string());
    let approval_id = state.engine.lookup(&id, false).await.ok().map(|a| a.id);
    let detail = json!({
        "attempted": format!("decide request {id} on the agents' API"),
        "transport": state.transport.as_str(),
    });
    audit_refusal(&state, approval_id, actor, detail).await;
    ApiError::new(
        StatusCode::FORBIDDEN,
        "forbidden",
        "agents cannot decide requests; an owner decides from a chat channel or the CLI",
    )
}

/// Appends an `unauthorised_attempt` audit row. A failure to write it is logged,
/// and the caller refuses the request all the same.
async fn audit_refusal(
    state: &ApiState,
    approval_id: Option<String>,
    actor: String,
    detail: serde_json::Value,
) {
    if let Err(e) = state
        .engine
        .record_unauthorised(approval_id, actor, Channel::Api, detail)
        .await
    {
        tracing::error!(error = %e, "cannot audit an unauthorised attempt");
    }
}

/// Checks that the client may act as `agent` ([`Engine::authenticate`]). A missing
/// or wrong token also leaves an `unauthorised_attempt` audit row: actor the agent
/// claimed, detail what was `attempted` and why it was refused (never the token;
/// if the token is another agent's, that agent is named).
pub(super) async fn authenticate(
    state: &ApiState,
    agent: &str,
    headers: &HeaderMap,
    attempted: &str,
    approval_id: Option<&str>,
) -> Result<AgentConfig, EngineError> {
    let token = bearer(headers);
    match state.engine.authenticate(agent, token, state.transport) {
        Err(EngineError::Unauthorized(why)) => {
            let mut detail = json!({
                "attempted": attempted,
                "refused": why,
                "transport": state.transport.as_str(),
            });
            if let Some(owner) = token.and_then(|t| state.engine.token_owner(t)) {
                detail["token_of"] = owner.into();
            }
            audit_refusal(
                state,
                approval_id.map(str::to_string),
                agent.to_string(),
                detail,
            )
            .await;
            Err(EngineError::Unauthorized(why))
        }
        other => other,
    }
}

async fn health() -> Json<serde_json::Value> {
    Json(json!({"ok": true, "version": env!("CARGO_PKG_VERSION")}))
}

/// The bearer token of a request, if any.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
}

/// Reads and parses a JSON body under the size cap, with errors a person can act on.
async fn json_body<T: DeserializeOwned>(state: &ApiState, req: Request<Body>) -> ApiResult<T> {
    let limit = state.engine.config().queue.max_body_bytes;
    let too_large = || ApiError {
        max_body_bytes: Some(limit),
        ..ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            format!("the request body is larger than {limit} bytes (queue.max_body_bytes)"),
        )
    };
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(too_large());
    }
    let bytes = axum::body::to_bytes(req.into_body(), limit)
        .await
        .map_err(|_| too_large())?;
    serde_json::from_slice(&bytes).map_err(|e| {
        use serde_json::error::Category;
        match e.classify() {
            Category::Data => {
                ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", e.to_string())
            }
            _ => ApiError::new(
                StatusCode::BAD_REQUEST,
                "malformed_json",
                format!("the body is not valid JSON: {e}"),
            ),
        }
    })
}

#[instrument(name = "api", skip_all, fields(op = "submit", id = Empty, agent = Empty, tool = Empty, verdict = Empty))]
async fn submit(State(state): State<ApiState>, req: Request<Body>) -> ApiResult<Response> {
    let headers = req.headers().clone();
    let body: SubmitBody = json_body(&state, req).await?;
    let span = Span::current();
    span.record("agent", body.agent.as_str());
    span.record("tool", body.tool.as_str());
    let attempted = format!("submit a {} request", body.tool);
    let agent = authenticate(&state, &body.agent, &headers, &attempted, None).await?;
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
                agent: body.agent,
                tool: body.tool,
                args: body.args,
                summary: body.summary,
                confidence: body.confidence,
                environment: body.environment,
                ttl,
                idempotency_key: body.idempotency_key,
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

/// Loads a request and checks the caller may see it: owners see all; an agent
/// sees its own (with its token, if it has one).
async fn authorised_request(
    state: &ApiState,
    id: &str,
    headers: &HeaderMap,
    attempted: &str,
) -> ApiResult<Approval> {
    let approval = if state.owner {
        state.engine.lookup(id, false).await?
    } else {
        state.engine.get(id).await?
    };
    note(&approval);
    if !state.owner {
        authenticate(
            state,
            &approval.agent,
            headers,
            attempted,
            Some(&approval.id),
        )
        .await
        .map_err(|e| match e {
            // Don't reveal that the id exists to an agent that cannot see it.
            EngineError::UnknownAgent(_) => EngineError::NotFound(id.to_string()),
            other => other,
        })?;
    }
    Ok(approval)
}

#[derive(serde::Deserialize)]
struct WaitQuery {
    wait: Option<String>,
}

#[instrument(name = "api", skip_all, fields(op = "get", id = Empty, agent = Empty, tool = Empty, verdict = Empty))]
async fn get_request(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<WaitQuery>,
    headers: HeaderMap,
) -> ApiResult<Json<ApprovalView>> {
    let wait = wait_param("wait", q.wait.as_deref())?;
    let approval = authorised_request(&state, &id, &headers, "read a request").await?;
    let max = state.engine.config().queue.max_wait;
    let wait = wait.unwrap_or(Duration::ZERO).min(max);
    let approval = if approval.status == Status::Pending && !wait.is_zero() {
        state
            .engine
            .wait(&approval.id, wait, &state.shutdown)
            .await?
    } else {
        approval
    };
    note(&approval);
    Ok(Json(ApprovalView::from(&approval)))
}

#[derive(serde::Deserialize)]
struct ListQuery {
    status: Option<String>,
    agent: Option<String>,
    limit: Option<String>,
    after: Option<String>,
}

/// Most requests one page of `GET /v1/requests` returns.
pub const MAX_PAGE: usize = 1000;

async fn list(
    State(state): State<ApiState>,
    ApiQuery(q): ApiQuery<ListQuery>,
    headers: HeaderMap,
) -> ApiResult<Json<serde_json::Value>> {
    let status = match q.status.as_deref() {
        None | Some("") => None,
        Some(s) => Some(s.parse::<Status>().map_err(|e| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                format!("`status`: {e}"),
            )
        })?),
    };
    if !state.owner {
        // Agents list only their own requests, and must say who they are.
        let Some(agent) = q.agent.as_deref() else {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "agents must name themselves: GET /v1/requests?agent=NAME",
            ));
        };
        authenticate(&state, agent, &headers, "list its requests", None).await?;
    }
    let limit = match q.limit.as_deref() {
        None | Some("") => MAX_PAGE,
        Some(l) => match l.trim().parse::<usize>() {
            Ok(n) if (1..=MAX_PAGE).contains(&n) => n,
            _ => {
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    format!("`limit` must be a whole number from 1 to {MAX_PAGE}, got `{l}`"),
                ))
            }
        },
    };
    let filter = crate::store::ListFilter {
        status,
        agent: q.agent.clone(),
        after: q.after.clone().filter(|a| !a.is_empty()),
        limit,
    };
    let rows = state.engine.blocking(move |s| s.list_page(&filter)).await?;
    let views: Vec<ApprovalView> = rows.iter().map(ApprovalView::from).collect();
    // A full page may have more after it: `next` is the cursor for `after`.
    let next = (rows.len() == limit).then(|| rows.last().map(|a| a.id.clone()));
    Ok(Json(json!({"requests": views, "next": next.flatten()})))
}

#[instrument(name = "api", skip_all, fields(op = "result", id = Empty, agent = Empty, tool = Empty, verdict = Empty))]
async fn report(
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
    let a = state.engine.report(&approval.id, to, body.detail).await?;
    note(&a);
    Ok(Json(ApprovalView::from(&a)))
}

#[instrument(name = "api", skip_all, fields(op = "cancel", id = Empty, agent = Empty, tool = Empty, verdict = Empty))]
async fn cancel(
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

#[instrument(name = "api", skip_all, fields(op = "decide", id = Empty, agent = Empty, tool = Empty, verdict = Empty))]
async fn decide(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
    req: Request<Body>,
) -> ApiResult<Json<ApprovalView>> {
    let body: DecisionBody = json_body(&state, req).await?;
    let verb = body
        .decision
        .parse()
        .map_err(|e: String| ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", e))?;
    let actor = body
        .actor
        .filter(|a| !a.trim().is_empty())
        .unwrap_or_else(local_user);
    let result = state
        .engine
        .decide(
            &id,
            Decision {
                verb,
                actor,
                via: Channel::Cli,
                reason: body.reason.filter(|r| !r.trim().is_empty()),
            },
        )
        .await;
    note_error(&result);
    let a = result?;
    note(&a);
    Ok(Json(ApprovalView::from(&a)))
}

#[derive(serde::Deserialize)]
struct AuditQuery {
    request: Option<String>,
    since: Option<String>,
}

async fn audit(
    State(state): State<ApiState>,
    ApiQuery(q): ApiQuery<AuditQuery>,
) -> ApiResult<Json<serde_json::Value>> {
    let since = q
        .since
        .as_deref()
        .map(|s| {
            s.trim().parse::<i64>().map_err(|_| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    format!("`since` must be a time in Unix milliseconds, got `{s}`"),
                )
            })
        })
        .transpose()?;
    let id = match q.request {
        Some(typed) => Some(state.engine.lookup(&typed, false).await?.id),
        None => None,
    };
    let rows = state
        .engine
        .blocking(move |s| s.audit_rows(id.as_deref(), since))
        .await?;
    Ok(Json(json!({"audit": rows})))
}

async fn metrics(State(state): State<ApiState>) -> ApiResult<Response> {
    let pending = state.engine.blocking(|s| s.count_pending()).await?;
    Ok((
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.engine.metrics.render(pending),
    )
        .into_response())
}

async fn audit_verify(State(state): State<ApiState>) -> ApiResult<Json<serde_json::Value>> {
    let check = state.engine.blocking(|s| s.verify_audit()).await?;
    Ok(Json(serde_json::to_value(check).unwrap_or_default()))
}

/// The name of the local user, for decisions made from the CLI.
#[must_use]
pub fn local_user() -> String {
    std::env::var("USER")
        .or_else(|_| std::env::var("LOGNAME"))
        .unwrap_or_else(|_| "local owner".to_string())
}
