//! `GET /v1/audit?request=&since=`, `GET /v1/audit/verify?head=` and
//! `GET /v1/audit/head` (owners only): the audit trail, the check of its hash chain
//! (against an anchor kept elsewhere, if given), and the chain's head to keep as one.

use std::convert::Infallible;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::error::{ApiError, ApiResult};
use super::extract::ApiQuery;
use super::ApiState;
use crate::engine::{EngineError, What};

#[derive(serde::Deserialize)]
pub(super) struct AuditQuery {
    request: Option<String>,
    since: Option<String>,
    format: Option<String>,
}

/// Rows read from the store for one chunk of the answer.
const PAGE: i64 = 500;

/// The trail, streamed a page at a time so neither side holds it whole: by default
/// one JSON object `{"audit": [rows…]}`, sent in chunks; with `format=ndjson` (or
/// `Accept: application/x-ndjson`) one row per line. It ends at the row that was last
/// when the call began. A store error after the first chunk cannot change the status:
/// the answer then ends with `"error": {…}` (JSON) or an `{"error": {…}}` line.
pub(super) async fn audit(
    State(state): State<ApiState>,
    headers: HeaderMap,
    ApiQuery(q): ApiQuery<AuditQuery>,
) -> ApiResult<Response> {
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
    let accepts_ndjson = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains(NDJSON));
    let lines = match q.format.as_deref() {
        Some("ndjson") => true,
        Some("json") => false,
        None => accepts_ndjson,
        Some(other) => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                format!("`format` must be json or ndjson, got `{other}`"),
            ))
        }
    };
    // A request's id, or another subject's (a task, a check-in, a proposal) or a run's.
    let id = match q.request {
        Some(typed) => Some(audited_id(&state, &typed).await?),
        None => None,
    };
    let until = state.engine.audit_last_seq().await?;
    let pages = Pages {
        state,
        id,
        since,
        after: 0,
        until,
        lines,
        started: false,
        done: false,
    };
    let body = Body::from_stream(futures_util::stream::unfold(pages, Pages::next));
    let content_type = if lines { NDJSON } else { "application/json" };
    Ok(([(header::CONTENT_TYPE, content_type)], body).into_response())
}

const NDJSON: &str = "application/x-ndjson";

/// Where a streamed answer is.
struct Pages {
    state: ApiState,
    id: Option<String>,
    since: Option<i64>,
    after: i64,
    until: i64,
    lines: bool,
    started: bool,
    done: bool,
}

impl Pages {
    /// The next chunk: the opening, a page of rows, or the closing.
    async fn next(mut self) -> Option<(Result<Bytes, Infallible>, Pages)> {
        if self.done {
            return None;
        }
        let mut out = Vec::new();
        if !self.started && !self.lines {
            out.extend_from_slice(b"{\"audit\":[");
        }
        let page = self
            .state
            .engine
            .audit_page(self.id.clone(), self.since, self.after, self.until, PAGE)
            .await;
        match page {
            Ok(rows) if !rows.is_empty() => {
                for row in &rows {
                    if self.lines {
                        serde_json::to_writer(&mut out, row).unwrap_or_default();
                        out.push(b'\n');
                    } else {
                        if self.started {
                            out.push(b',');
                        }
                        serde_json::to_writer(&mut out, row).unwrap_or_default();
                    }
                    self.started = true;
                }
                self.after = rows.last().map_or(self.until, |r| r.seq);
            }
            Ok(_) => {
                self.done = true;
                if !self.lines {
                    out.extend_from_slice(b"]}");
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "the audit trail could not be read to the end");
                self.done = true;
                let error = json!({"code": "internal", "message": "the audit trail could not be read to the end; see the daemon's log"});
                if self.lines {
                    serde_json::to_writer(&mut out, &json!({"error": error})).unwrap_or_default();
                    out.push(b'\n');
                } else {
                    out.extend_from_slice(b"],\"error\":");
                    serde_json::to_writer(&mut out, &error).unwrap_or_default();
                    out.push(b'}');
                }
            }
        }
        self.started = true;
        Some((Ok(Bytes::from(out)), self))
    }
}

#[derive(serde::Deserialize)]
pub(super) struct VerifyQuery {
    head: Option<String>,
}

/// The id whose rows `typed` asks for: a request's, else a subject's of another kind
/// (a check-in), else a workflow run's.
async fn audited_id(state: &ApiState, typed: &str) -> ApiResult<String> {
    match state.engine.lookup(typed, false).await {
        Ok(a) => return Ok(a.id),
        Err(EngineError::NotFound { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    if let Ok(s) = state.engine.identify(typed).await {
        return Ok(s.id);
    }
    match state.engine.lookup_run(typed, true).await {
        Ok(run) => Ok(run.id),
        // Named a request, the kind most audited ids are.
        Err(EngineError::NotFound { .. }) => {
            Err(EngineError::not_found(What::Request, typed).into())
        }
        Err(e) => Err(e.into()),
    }
}

pub(super) async fn audit_verify(
    State(state): State<ApiState>,
    ApiQuery(q): ApiQuery<VerifyQuery>,
) -> ApiResult<Json<serde_json::Value>> {
    let anchor = q
        .head
        .map(|h| {
            let h = h.trim().to_ascii_lowercase();
            if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) {
                Ok(h)
            } else {
                Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    "`head` must be a head hash as `gatebot audit head` prints it (64 hex digits)",
                ))
            }
        })
        .transpose()?;
    let check = state.engine.verify_audit(anchor).await?;
    Ok(Json(serde_json::to_value(check).unwrap_or_default()))
}

pub(super) async fn audit_head(
    State(state): State<ApiState>,
) -> ApiResult<Json<serde_json::Value>> {
    match state.engine.audit_head().await? {
        Some(head) => Ok(Json(serde_json::to_value(head).unwrap_or_default())),
        None => Err(ApiError::new(
            StatusCode::CONFLICT,
            "audit_broken",
            "the audit trail has no head record (it was removed from the database); \
             run `gatebot audit verify`",
        )),
    }
}
