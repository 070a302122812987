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
    /// On `rate_limited`: the limit's key, and when to try again (also sent as the
    /// `Retry-After` header, in whole seconds).
    pub limited: Option<(String, std::time::Duration)>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            approval: None,
            max_body_bytes: None,
            limited: None,
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
                status: StatusCode::CONFLICT,
                code: "already_decided",
                message,
                approval: Some(a),
                max_body_bytes: None,
                limited: None,
            },
            EngineError::IdempotencyConflict { .. } => {
                ApiError::new(StatusCode::CONFLICT, "idempotency_conflict", message)
            }
            EngineError::Limited(l) => ApiError {
                limited: Some((format!("limits.{}", l.quota.key()), l.retry_after)),
                ..ApiError::new(StatusCode::TOO_MANY_REQUESTS, "rate_limited", message)
            },
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
        if let Some(a) = self.approval {
            body["request"] = serde_json::to_value(ApprovalView::from(&*a)).unwrap_or_default();
        }
        if let Some((limit, after)) = self.limited {
            let secs = after.as_secs().max(1);
            body["error"]["limit"] = json!(limit);
            body["error"]["retry_after"] = json!(secs);
            return (
                self.status,
                [(axum::http::header::RETRY_AFTER, secs.to_string())],
                Json(body),
            )
                .into_response();
        }
        (self.status, Json(body)).into_response()
    }
}

pub(super) type ApiResult<T> = Result<T, ApiError>;
