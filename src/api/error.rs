//! The API's errors: `{"error": {"code": "…", "message": "…"}}` with a fitting status,
//! and how the engine's errors map onto them.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::approval::Approval;
use crate::engine::{Conflict, EngineError, GrantRefused};
use crate::inbox::TaskStatus;
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
        let message = message(&e);
        match e {
            EngineError::UnknownAgent(_) => {
                ApiError::new(StatusCode::FORBIDDEN, "unknown_agent", message)
            }
            EngineError::VoteRefused { ref why, .. } => {
                let code = match why {
                    crate::approval::votes::VoteRefused::NotAsked { .. } => "not_asked",
                    crate::approval::votes::VoteRefused::OwnTask { .. } => "own_task",
                };
                ApiError::new(StatusCode::FORBIDDEN, code, message)
            }
            EngineError::VotedAlready { .. } => {
                ApiError::new(StatusCode::CONFLICT, "voted_already", message)
            }
            EngineError::StepUpRequired { enrolled, .. } => {
                let code = if enrolled {
                    "step_up_required"
                } else {
                    "no_factor"
                };
                ApiError::new(StatusCode::FORBIDDEN, code, message)
            }
            EngineError::CodeRefused { ref refused } => {
                let (status, code) = match refused {
                    crate::store::CodeCheck::Locked { .. } => {
                        (StatusCode::TOO_MANY_REQUESTS, "codes_locked")
                    }
                    crate::store::CodeCheck::NoFactor => (StatusCode::FORBIDDEN, "no_factor"),
                    _ => (StatusCode::FORBIDDEN, "wrong_code"),
                };
                ApiError::new(status, code, message)
            }
            EngineError::Unauthorized { .. } => {
                ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
            }
            EngineError::Invalid { .. } | EngineError::Grant(_) => {
                ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_request", message)
            }
            EngineError::NotFound { .. } => {
                ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
            }
            EngineError::Conflict(c) => {
                let (status, code) = conflict_code(&c);
                ApiError::new(status, code, message)
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
            EngineError::Store(ref store) => match store.fault() {
                Some(fault) => {
                    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, fault.code(), fault.message)
                }
                None => internal(&e),
            },
            EngineError::Internal { .. } => internal(&e),
        }
    }
}

/// The status and code of a step that does not apply to the thing as it is now.
fn conflict_code(c: &Conflict) -> (StatusCode, &'static str) {
    match c {
        Conflict::Task {
            status: TaskStatus::Cancelled,
            ..
        } => (StatusCode::CONFLICT, "task_cancelled"),
        Conflict::Task { .. } | Conflict::NothingAsked { .. } => {
            (StatusCode::CONFLICT, "task_conflict")
        }
        Conflict::LeaseLost { .. } => (StatusCode::CONFLICT, "lease_lost"),
        Conflict::DashboardOff => (StatusCode::CONFLICT, "dashboard_off"),
        Conflict::Draft { .. } => (StatusCode::CONFLICT, "draft_settled"),
        Conflict::OverBudget { .. } => (StatusCode::CONFLICT, "over_budget"),
        // Answered as a bad request since the API began; kept so clients keep working.
        Conflict::GrantRevoked { .. }
        | Conflict::NotReportable { .. }
        | Conflict::AgentGone { .. } => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_request"),
    }
}

/// The message an API client (and so the `gatebot` command, which prints it) reads.
/// The API is where an owner's grant choices are flags and fields (`gatebot decide
/// --prefix`, the body's `for`), and where a paused agent learns how it is resumed.
#[must_use]
pub fn message(e: &EngineError) -> String {
    match e {
        EngineError::Grant(g) => grant_message(g),
        EngineError::Paused(p) => format!(
            "{e}. While paused it cannot claim or report on tasks, start workflow runs or \
             report their events, and its requests are blocked; an owner resumes it \
             (gatebot agent {} resume, or /resume in a chat)",
            p.agent
        ),
        other => other.to_string(),
    }
}

/// An owner's grant choice refused, in the words of `gatebot decide` and its API.
fn grant_message(g: &GrantRefused) -> String {
    match g {
        GrantRefused::DenialGrantsNothing => {
            "a denial grants nothing: --prefix, --exact and --for go with approve".into()
        }
        GrantRefused::ScopeWithoutGrant => {
            "--prefix and --exact choose what approve-always (or approve --for) grants".into()
        }
        GrantRefused::NotShell { .. } => format!("{g}; leave out --prefix and --exact"),
        GrantRefused::For(why) => format!(
            "a time-boxed grant (--for, or `for`) {why}; for longer, approve always without \
             --for and revoke it when it is no longer wanted"
        ),
        GrantRefused::NotOffered { .. }
        | GrantRefused::NoCommand { .. }
        | GrantRefused::Prefix(_) => g.to_string(),
    }
}

/// An unexpected failure: logged with its causes, and the client is pointed at the log.
fn internal(e: &EngineError) -> ApiError {
    tracing::error!(error = %e.chain(), "request failed");
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
