//! What the handlers share to read a request: query, path and JSON body with JSON
//! errors, the bearer token, and who may act on which request (refusals audited);
//! and `note`, which records the request in the call's `api` span.
//!
//! On the agents' listeners every request runs in a scope ([`count_requests`]): the
//! agent it authenticates as ([`authenticate`]) gets a slot among its requests in
//! flight for as long as it is answered, and a long-poll a wait slot too
//! ([`Waiting`]), both from the engine's gate (`[queue] max_connections_per_agent`, `max_waits_per_agent`; see
//! `engine::gate`).

use std::time::Duration;

use axum::body::Body;
use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use axum::http::{header, HeaderMap, Request, StatusCode};
use serde::de::DeserializeOwned;
use serde_json::json;
use tracing::Span;

use super::error::{ApiError, ApiResult};
use super::ApiState;
use crate::approval::{Approval, Via};
use crate::config::AgentConfig;
use crate::engine::{record_request, EngineError, Refusal, Slot, WaitSlot, What};
use crate::limits::Quota;

tokio::task_local! {
    /// The request being answered on an agents' listener: the slot of the agent it
    /// authenticated as, held until the answer is ready.
    static REQUEST: std::sync::Mutex<Option<Slot>>;
}

/// Middleware of the agents' router: runs each request in its own scope, so the slot
/// [`authenticate`] takes for it is given back when it is answered.
pub(super) async fn count_requests(
    req: Request<Body>,
    next: axum::middleware::Next,
) -> axum::response::Response {
    REQUEST
        .scope(std::sync::Mutex::new(None), next.run(req))
        .await
}

/// Takes a slot for `agent` for the request being answered (once per request: a
/// request that names its agent twice counts once).
fn take_slot(state: &ApiState, agent: &str) -> Result<(), EngineError> {
    let taken = REQUEST.try_with(|slot| -> Result<(), EngineError> {
        let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(state.engine.enter(agent)?);
        }
        Ok(())
    });
    // Outside a scope (the owners' router) nothing is counted.
    taken.unwrap_or(Ok(()))
}

/// A long-poll's stop: on the agents' listeners, a counted [`WaitSlot`] of the agent
/// whose stop also fires when the agent is paused; for owners, shutdown alone.
pub(super) struct Waiting {
    slot: Option<WaitSlot>,
    agent: String,
    shutdown: tokio_util::sync::CancellationToken,
}

impl Waiting {
    /// Runs `wait` (given the stop it must honour) as a long-poll of `agent`: counted
    /// and stopped by a pause as [`Waiting::begin`] says, and answered
    /// [`Waiting::finish`]'s way. Every long-poll route waits through this.
    pub(super) async fn run<T, Fut>(
        state: &ApiState,
        agent: &str,
        wait: impl FnOnce(tokio_util::sync::CancellationToken) -> Fut,
    ) -> Result<T, EngineError>
    where
        Fut: std::future::Future<Output = Result<T, EngineError>>,
    {
        let waiting = Waiting::begin(state, agent).await?;
        let out = wait(waiting.stop().clone()).await?;
        waiting.finish(state).await?;
        Ok(out)
    }

    /// Starts a long-poll for `agent`: refused while it is paused or at its
    /// `[queue] max_waits_per_agent` (agents' listeners only).
    async fn begin(state: &ApiState, agent: &str) -> Result<Waiting, EngineError> {
        let slot = if state.owner {
            None
        } else {
            Some(state.engine.begin_wait(agent, &state.shutdown).await?)
        };
        Ok(Waiting {
            slot,
            agent: agent.to_string(),
            shutdown: state.shutdown.clone(),
        })
    }

    fn stop(&self) -> &tokio_util::sync::CancellationToken {
        self.slot.as_ref().map_or(&self.shutdown, WaitSlot::stop)
    }

    /// After the wait: `Err(Paused)` when the agent's pause ended it, so the agent
    /// learns why instead of polling again.
    async fn finish(self, state: &ApiState) -> Result<(), EngineError> {
        if self.slot.as_ref().is_some_and(WaitSlot::paused) {
            return state.engine.refuse_if_paused(&self.agent).await;
        }
        Ok(())
    }
}

/// Records `a` in the current `api` span (see the [`api`](super) module docs).
pub(super) fn note(a: &Approval) {
    record_request(&Span::current(), a);
}

/// Records in the current span the request an engine error is about, if any.
pub(super) fn note_error<T>(result: &Result<T, EngineError>) {
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

/// Records a refused attempt on the API ([`Engine::record_unauthorised`](crate::engine::Engine::record_unauthorised):
/// coalesced per actor, `kind`, transport and `reason` each minute; echoed strings
/// cut). A failure to record it is logged, and the caller refuses the request all
/// the same.
pub(super) async fn audit_refusal(
    state: &ApiState,
    approval_id: Option<String>,
    actor: String,
    kind: &'static str,
    reason: Option<String>,
    detail: serde_json::Value,
) {
    let refusal = Refusal {
        approval_id,
        actor,
        via: Via::Api,
        transport: Some(state.transport),
        kind: kind.to_string(),
        reason,
        detail,
    };
    if let Err(e) = state.engine.record_unauthorised(refusal).await {
        tracing::error!(error = %e, "cannot audit an unauthorised attempt");
    }
}

/// Checks that the client may act as `agent` ([`Engine::authenticate`](crate::engine::Engine::authenticate)). A missing
/// or wrong token also leaves an `unauthorised_attempt` audit row: actor the agent
/// claimed, detail what was `attempted` and why it was refused (never the token;
/// if the token is another agent's, that agent is named). `attempted` is also the
/// kind the refusal is coalesced by, so it must be a fixed text.
pub(super) async fn authenticate(
    state: &ApiState,
    agent: &str,
    headers: &HeaderMap,
    attempted: &'static str,
    approval_id: Option<&str>,
) -> Result<AgentConfig, EngineError> {
    authenticate_as(state, agent, headers, attempted, attempted, approval_id).await
}

/// [`authenticate`], where what was attempted names more than its `kind` (the tool of
/// a submission): `attempted` is recorded (cut), `kind` coalesces.
pub(super) async fn authenticate_as(
    state: &ApiState,
    agent: &str,
    headers: &HeaderMap,
    kind: &'static str,
    attempted: &str,
    approval_id: Option<&str>,
) -> Result<AgentConfig, EngineError> {
    let token = bearer(headers);
    let authenticated = state
        .engine
        .authenticate(agent, token, state.transport)
        .and_then(|cfg| take_slot(state, agent).map(|()| cfg));
    match authenticated {
        Err(EngineError::Unauthorized {
            agent: who,
            problem,
        }) => {
            let why = EngineError::Unauthorized {
                agent: who.clone(),
                problem,
            }
            .to_string();
            let mut detail = json!({
                "attempted": attempted,
                "refused": why,
                "transport": state.transport.as_str(),
            });
            let mut reason = why.clone();
            if let Some(owner) = token.and_then(|t| state.engine.token_owner(t)) {
                reason.push_str(&format!(" (the token is {owner}'s)"));
                detail["token_of"] = owner.into();
            }
            audit_refusal(
                state,
                approval_id.map(str::to_string),
                agent.to_string(),
                kind,
                Some(reason),
                detail,
            )
            .await;
            Err(EngineError::Unauthorized {
                agent: who,
                problem,
            })
        }
        other => other,
    }
}

/// The bearer token of a request, if any.
pub(super) fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
}

/// Lets `agent` (authenticated) make a call of kind `quota` whose body took `bytes`,
/// or refuses it with `429 rate_limited` ([`Engine::admit`](crate::engine::Engine::admit)).
pub(super) fn admit(state: &ApiState, agent: &str, quota: Quota, bytes: usize) -> ApiResult<()> {
    state
        .engine
        .admit(agent, quota, bytes)
        .map_err(ApiError::from)
}

/// Reads and parses a JSON body under the size cap, with errors a person can act on.
pub(super) async fn json_body<T: DeserializeOwned>(
    state: &ApiState,
    req: Request<Body>,
) -> ApiResult<T> {
    Ok(json_body_sized(state, req).await?.0)
}

/// [`json_body`], with the body's size in bytes (what [`admit`] counts).
pub(super) async fn json_body_sized<T: DeserializeOwned>(
    state: &ApiState,
    req: Request<Body>,
) -> ApiResult<(T, usize)> {
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
    let size = bytes.len();
    let mut reader = serde_json::Deserializer::from_slice(&bytes);
    let parsed = serde_path_to_error::deserialize(&mut reader).map_err(|e| {
        use serde_json::error::Category;
        let (path, e) = (e.path().to_string(), e.into_inner());
        match e.classify() {
            // What is wrong with a field, named by its path, in words (not Rust's type
            // names), without the parser's line and column of a one-line body.
            Category::Data => {
                let said = e.to_string();
                let said = said
                    .rsplit_once(" at line ")
                    .map_or(said.as_str(), |(head, _)| head);
                let said = crate::words::expected_in_words(said, "an object");
                let message = if path.is_empty() || path == "." {
                    said
                } else {
                    format!("`{path}`: {said}")
                };
                ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", message)
            }
            _ => ApiError::new(
                StatusCode::BAD_REQUEST,
                "malformed_json",
                format!("the body is not valid JSON: {e}"),
            ),
        }
    })?;
    Ok((parsed, size))
}

/// Loads a request and checks the caller may see it: owners see all; an agent
/// sees its own (with its token, if it has one).
pub(super) async fn authorised_request(
    state: &ApiState,
    id: &str,
    headers: &HeaderMap,
    attempted: &'static str,
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
            EngineError::UnknownAgent(_) => EngineError::not_found(What::Request, id),
            other => other,
        })?;
    }
    Ok(approval)
}
