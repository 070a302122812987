//! The runs API (docs/workflows.md):
//! - `POST /v1/runs`: an agent starts a workflow run (`201`; `200` for a repeat of an
//!   earlier idempotency key);
//! - `POST /v1/runs/{id}/events`: one event, answered `continue`, `stop` or `wait`;
//! - `GET /v1/runs/{id}?wait=SECONDS`: a run; while it waits at a check-in, waits up to
//!   `wait` (capped by `[queue] max_wait`) for the owner's answer;
//! - `GET /v1/runs?agent=&status=&limit=&after=`: one page of runs, newest first.
//!
//! Runs belong to their agent, with the same token rules as requests: on the agents'
//! API an agent must name itself (and send its token, if it has one) and sees only its
//! own runs; another agent's run is `not_found`. The owners' control socket sees every
//! run, and also takes short ids and unique prefixes. Owners answer check-ins through
//! `POST /v1/requests/{id}/decision` (the check-in kind's `decide`).

use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use tracing::instrument;

use super::error::{ApiError, ApiResult};
use super::extract::{
    admit, authenticate, json_body_sized, wait_param, ApiPath, ApiQuery, Waiting,
};
use super::list::page_limit;
use super::ApiState;
use crate::engine::{EngineError, EventOutcome, Recorded, RunFilter, RunStart};
use crate::limits::Quota;
use crate::workflow::run::{CheckIn, Run, RunStatus};
use crate::workflow::wire::{
    CheckInView, EventAnswer, EventBody, IssueView, RunView, StartRunBody,
};

/// A JSON error with more in its body (`run`, `check_in`), so the caller need not ask.
fn conflict(code: &'static str, message: String, key: &str, value: serde_json::Value) -> Response {
    let body = json!({"error": {"code": code, "message": message}, key: value});
    (StatusCode::CONFLICT, Json(body)).into_response()
}

fn run_not_found(typed: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        format!("no workflow run with id `{typed}`"),
    )
}

/// Loads a run and checks the caller may see it: owners see all (also by short id or
/// prefix); an agent sees its own, with its token if it has one.
async fn authorised_run(
    state: &ApiState,
    typed: &str,
    headers: &HeaderMap,
    attempted: &'static str,
) -> ApiResult<Run> {
    // Agents get no prefixes: an ambiguity would name other agents' runs.
    let run = state
        .engine
        .lookup_run(typed, state.owner)
        .await
        .map_err(|e| match e {
            EngineError::NotFound { .. } => run_not_found(typed),
            other => other.into(),
        })?;
    if !state.owner {
        authenticate(state, &run.agent, headers, attempted, Some(&run.id))
            .await
            .map_err(|e| match e {
                // Don't reveal that the id exists to an agent that cannot see it.
                EngineError::UnknownAgent(_) => run_not_found(typed),
                other => other.into(),
            })?;
    }
    Ok(run)
}

/// The view of check-in `id` of `run`, with the problems it shows.
async fn check_in_view(state: &ApiState, c: &CheckIn, run: &Run) -> ApiResult<CheckInView> {
    let issues = state.engine.check_in_issues(&c.id).await?;
    Ok(CheckInView::new(c, run, &issues))
}

/// The view of `run`, with its waiting or latest check-in.
async fn run_view(state: &ApiState, run: &Run) -> ApiResult<RunView> {
    let check_in = match &run.check_in {
        Some(id) => {
            let c = state.engine.check_in(id).await?;
            Some(check_in_view(state, &c, run).await?)
        }
        None => None,
    };
    Ok(RunView::new(run, check_in))
}

#[instrument(name = "api", skip_all, fields(op = "run_start"))]
pub(super) async fn start(
    State(state): State<ApiState>,
    req: Request<Body>,
) -> ApiResult<Response> {
    let headers = req.headers().clone();
    let (body, size): (StartRunBody, _) = json_body_sized(&state, req).await?;
    authenticate(&state, &body.agent, &headers, "start a workflow run", None).await?;
    admit(&state, &body.agent, Quota::Runs, size)?;
    let (run, created) = state
        .engine
        .start_run(RunStart {
            agent: body.agent,
            title: body.title,
            workflow: body.workflow,
            idempotency_key: body.idempotency_key,
        })
        .await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(run_view(&state, &run).await?)).into_response())
}

#[instrument(name = "api", skip_all, fields(op = "run_event", run = %id))]
pub(super) async fn event(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
    req: Request<Body>,
) -> ApiResult<Response> {
    let headers = req.headers().clone();
    let run = authorised_run(&state, &id, &headers, "report a workflow event").await?;
    let (body, size): (EventBody, _) = json_body_sized(&state, req).await?;
    admit(&state, &run.agent, Quota::Events, size)?;
    match state.engine.run_event(&run, body).await? {
        Recorded::Evaluated(o) => Ok(Json(answer(&state, o, false).await?).into_response()),
        Recorded::Repeated(o) => {
            // The run and its check-in as they are now, with the first answer.
            let now = state.engine.get_run(&run.id).await?;
            let o = EventOutcome { run: now, ..o };
            Ok(Json(answer(&state, o, true).await?).into_response())
        }
        Recorded::KeyConflict(seq) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "idempotency_conflict",
            format!(
                "this idempotency_key was already used in run {} for an event with other content \
                 (event {seq}): send a new key for a new event, or the same event to repeat it",
                run.short_id
            ),
        )),
        Recorded::Waiting(run) => {
            let view = run_view(&state, &run).await?;
            let short = view
                .check_in
                .as_ref()
                .and_then(|c| c.short_id.clone())
                .unwrap_or_default();
            Ok(conflict(
                "check_in_waiting",
                format!(
                    "run {} waits at check-in {short} for its owner; long-poll GET /v1/runs/{}?wait=SECONDS until it is answered",
                    run.short_id, run.id
                ),
                "run",
                serde_json::to_value(view).unwrap_or_default(),
            ))
        }
        Recorded::Finished(run) => {
            let view = run_view(&state, &run).await?;
            Ok(conflict(
                "run_finished",
                format!(
                    "run {} is {}{}; it takes no more events",
                    run.short_id,
                    run.status.as_str(),
                    run.reason
                        .as_deref()
                        .map(|r| format!(" ({r})"))
                        .unwrap_or_default()
                ),
                "run",
                serde_json::to_value(view).unwrap_or_default(),
            ))
        }
        Recorded::NotFound => Err(run_not_found(&id)),
    }
}

async fn answer(state: &ApiState, o: EventOutcome, repeated: bool) -> ApiResult<EventAnswer> {
    let check_in = match &o.check_in {
        Some(c) => Some(check_in_view(state, c, &o.run).await?),
        None => None,
    };
    let exceeded = o
        .exceeded
        .iter()
        .map(|i| IssueView {
            text: i.text.clone(),
            severity: i.severity,
            detected: i.detected,
            phase: o.run.phase.clone().unwrap_or_default(),
            step: o.run.step.clone(),
            exceeded: true,
        })
        .collect();
    Ok(EventAnswer {
        action: o.action,
        reason: o.reason,
        check_in,
        seq: o.seq,
        exceeded,
        truncated: o.truncated,
        repeated,
        run: run_view(state, &o.run).await?,
    })
}

#[derive(serde::Deserialize)]
pub(super) struct WaitQuery {
    wait: Option<String>,
}

#[instrument(name = "api", skip_all, fields(op = "run_get", run = %id))]
pub(super) async fn get_run(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<WaitQuery>,
    headers: HeaderMap,
) -> ApiResult<Json<RunView>> {
    let wait = wait_param("wait", q.wait.as_deref())?;
    let run = authorised_run(&state, &id, &headers, "read a workflow run").await?;
    let max = state.engine.config().queue.max_wait;
    let wait = wait.unwrap_or(Duration::ZERO).min(max);
    let run = if run.status == RunStatus::Waiting && !wait.is_zero() {
        let (engine, id) = (&state.engine, &run.id);
        Waiting::run(&state, &run.agent, |stop| async move {
            engine.wait_run(id, wait, &stop).await
        })
        .await?
    } else {
        run
    };
    Ok(Json(run_view(&state, &run).await?))
}

#[derive(serde::Deserialize)]
pub(super) struct ListQuery {
    agent: Option<String>,
    status: Option<String>,
    limit: Option<String>,
    after: Option<String>,
}

pub(super) async fn list(
    State(state): State<ApiState>,
    ApiQuery(q): ApiQuery<ListQuery>,
    headers: HeaderMap,
) -> ApiResult<Json<serde_json::Value>> {
    let bad = |m: String| ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", m);
    let status = match q.status.as_deref() {
        None | Some("") => None,
        Some(s) => Some(RunStatus::parse(s).ok_or_else(|| {
            bad(format!(
                "`status` must be running, waiting, stopped or completed, got `{s}`"
            ))
        })?),
    };
    if !state.owner {
        let Some(agent) = q.agent.as_deref() else {
            return Err(bad(
                "agents must name themselves: GET /v1/runs?agent=NAME".into()
            ));
        };
        authenticate(&state, agent, &headers, "list its workflow runs", None).await?;
    }
    let limit = page_limit(q.limit.as_deref())?;
    let runs = state
        .engine
        .list_runs(RunFilter {
            agent: q.agent.clone().filter(|a| !a.is_empty()),
            status,
            after: q.after.clone().filter(|a| !a.is_empty()),
            limit,
        })
        .await?;
    let mut views = Vec::with_capacity(runs.len());
    for run in &runs {
        // A list shows the check-in only where it waits: that is what owners act on.
        let view = if run.status == RunStatus::Waiting {
            run_view(&state, run).await?
        } else {
            RunView::new(run, None)
        };
        views.push(view);
    }
    let next = (runs.len() == limit).then(|| runs.last().map(|r| r.id.clone()));
    Ok(Json(json!({"runs": views, "next": next.flatten()})))
}
