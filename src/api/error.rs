//! The API's errors: `{"error": {"code": "…", "message": "…"}}` with a fitting status,
//! and how the engine's errors map onto them.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::approval::Approval;
use crate::engine::EngineError;
use crate::wire::ApprovalView;

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
    /// More fields of the `error` object: who paused an agent (`agent_paused`), the
    /// limit reached (`too_many_waits`).
    pub detail: serde_json::Map<String, serde_json::Value>,
    /// `Retry-After`, in seconds; also closes the connection after the answer (an
    /// agent over its cap gives its connection back to the listener at once).
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            approval: None,
            max_body_bytes: None,
            detail: serde_json::Map::new(),
            retry_after: None,
        }
    }

    /// With `key: value` in the `error` object.
    #[must_use]
    pub fn with(mut self, key: &str, value: impl Into<serde_json::Value>) -> Self {
        self.detail.insert(key.to_string(), value.into());
        self
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
            EngineError::NotFound(_) | EngineError::TaskNotFound(_) => {
                ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
            }
            EngineError::Conflict { code, .. } => {
                ApiError::new(StatusCode::CONFLICT, code, message)
            }
            EngineError::Ambiguous { .. } => {
                ApiError::new(StatusCode::CONFLICT, "ambiguous_id", message)
            }
            EngineError::AlreadySettled(a) => ApiError {
                approval: Some(a),
                ..ApiError::new(StatusCode::CONFLICT, "already_decided", message)
            },
            EngineError::Paused(p) => ApiError::new(StatusCode::CONFLICT, "agent_paused", message)
                .with("agent", p.agent.clone())
                .with("paused_by", p.by.label())
                .with("paused_at", crate::time::format_ms(p.at))
                .with("reason", p.reason.clone()),
            EngineError::AtCap { limit, max, .. } => ApiError {
                retry_after: Some(1),
                ..ApiError::new(StatusCode::TOO_MANY_REQUESTS, limit.code(), message)
                    .with("limit", limit.key())
                    .with("max", max)
                    .with("retry_after", 1)
            },
            EngineError::IdempotencyConflict { .. } => {
                ApiError::new(StatusCode::CONFLICT, "idempotency_conflict", message)
            }
            EngineError::Limited(l) => {
                // Whole seconds, rounded up: a client that waits that long finds a token.
                let secs = l.retry_after.as_millis().div_ceil(1000).max(1) as u64;
                ApiError {
                    retry_after: Some(secs),
                    ..ApiError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", message)
                        .with("limit", format!("limits.{}", l.quota.key()))
                        .with("retry_after", secs)
                }
            }
            // Not the daemon's bug: the operator must act (the fault is logged once, at
            // ERROR, where it is detected).
            EngineError::Store(store) => match store.fault() {
                Some(fault) => {
                    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, fault.code(), fault.message)
                }
                None => internal(&message),
            },
            EngineError::Internal(_) => internal(&message),
        }
    }
}

/// An unexpected failure: logged, and the client is pointed at the log.
fn internal(message: &str) -> ApiError {
    tracing::error!(error = %message, "request failed");
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        "internal error; see the daemon's log",
    )
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({"error": {"code": self.code, "message": self.message}});
        if let Some(n) = self.max_body_bytes {
            body["error"]["max_body_bytes"] = json!(n);
        }
        for (k, v) in self.detail {
            body["error"][k] = v;
        }
        if let Some(a) = self.approval {
            body["request"] = serde_json::to_value(ApprovalView::from(&*a)).unwrap_or_default();
        }
        let mut res = (self.status, Json(body)).into_response();
        if let Some(secs) = self.retry_after {
            let headers = res.headers_mut();
            headers.insert(axum::http::header::RETRY_AFTER, secs.into());
            headers.insert(
                axum::http::header::CONNECTION,
                axum::http::HeaderValue::from_static("close"),
            );
        }
        res
    }
}

pub(super) type ApiResult<T> = Result<T, ApiError>;
