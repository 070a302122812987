//! `GET /v1/requests?status=&agent=&limit=&after=`: one page of requests, with the
//! cursor of the next. Agents must name themselves and see only their own.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use serde_json::json;

use super::error::{ApiError, ApiResult};
use super::extract::{authenticate, ApiQuery};
use super::ApiState;
use crate::approval::Status;
use crate::wire::ApprovalView;

#[derive(serde::Deserialize)]
pub(super) struct ListQuery {
    status: Option<String>,
    agent: Option<String>,
    limit: Option<String>,
    after: Option<String>,
}

/// Most requests one page of `GET /v1/requests` returns.
pub const MAX_PAGE: usize = 1000;

/// A page's `limit` parameter: 1 to [`MAX_PAGE`], and [`MAX_PAGE`] when absent.
pub(super) fn page_limit(typed: Option<&str>) -> ApiResult<usize> {
    match typed {
        None | Some("") => Ok(MAX_PAGE),
        Some(l) => match l.trim().parse::<usize>() {
            Ok(n) if (1..=MAX_PAGE).contains(&n) => Ok(n),
            _ => Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                format!("`limit` must be a whole number from 1 to {MAX_PAGE}, got `{l}`"),
            )),
        },
    }
}

pub(super) async fn list(
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
    let limit = page_limit(q.limit.as_deref())?;
    let filter = crate::approval::ListFilter {
        status,
        agent: q.agent.clone(),
        after: q.after.clone().filter(|a| !a.is_empty()),
        limit,
    };
    let rows = state.engine.list(filter).await?;
    let views: Vec<ApprovalView> = rows.iter().map(ApprovalView::from).collect();
    // A full page may have more after it: `next` is the cursor for `after`.
    let next = (rows.len() == limit).then(|| rows.last().map(|a| a.id.clone()));
    Ok(Json(json!({"requests": views, "next": next.flatten()})))
}
