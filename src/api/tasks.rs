//! The inbox's routes (docs/api.md, "Tasks"):
//! - owners (control socket): `POST /v1/tasks` hands over a task, `GET /v1/tasks`
//!   lists them, `GET /v1/tasks/{id}?wait=` shows one, `POST /v1/tasks/{id}/cancel`
//!   and `/retry`; on the agents' socket those that act for the owner are refused and
//!   audited ([`owner_only`]);
//! - agents: `POST /v1/tasks/claim` long-polls for the agent's next task, and
//!   `POST /v1/tasks/{id}/progress | complete | fail | needs-input` report on it under
//!   the claim's lease. An agent names itself (and shows its token) on a claim, and a
//!   report is checked against the task's agent: no agent claims, reads or reports on
//!   another's task (one that tries learns only that there is no such task, or is
//!   refused and audited for the wrong token).

use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;
use tracing::field::Empty;
use tracing::{instrument, Span};

use super::error::{ApiError, ApiResult};
use super::extract::{
    admit, audit_refusal, authenticate, bearer, json_body, json_body_sized, wait_param, ApiPath,
    ApiQuery, Waiting,
};
use super::owner::owner_of;
use super::ApiState;
use crate::approval::Via;
use crate::engine::{EngineError, TaskRequest, What};
use crate::inbox::lifecycle::Step;
use crate::inbox::wire::{
    ClaimAnswer, ClaimBody, ClaimedView, CompleteBody, FailBody, NeedsInputBody, ProgressBody,
    TaskBody, TaskView,
};
use crate::inbox::Report;
use crate::inbox::{Intent, Task};
use crate::limits::Quota;

/// Most tasks one `GET /v1/tasks` returns.
pub const MAX_TASKS: usize = 1000;

/// Records the task in the call's span.
fn note(t: &Task) {
    let span = Span::current();
    span.record("id", t.id.as_str());
    span.record("agent", t.agent.as_str());
    span.record("verdict", t.status.as_str());
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_request", message)
}

/// `POST /v1/tasks` (owners): classify, route and queue a task.
#[instrument(name = "api", skip_all, fields(op = "task_add", id = Empty, agent = Empty, tool = Empty, verdict = Empty))]
pub(super) async fn create(
    State(state): State<ApiState>,
    req: Request<Body>,
) -> ApiResult<Response> {
    let by = owner_of(&state, &req).await?;
    let body: TaskBody = json_body(&state, req).await?;
    let intent = body
        .intent
        .as_deref()
        .map(str::parse::<Intent>)
        .transpose()
        .map_err(invalid)?;
    let task = state
        .engine
        .create_task(TaskRequest {
            text: body.text,
            agent: body.agent,
            intent,
            by,
            via: Via::Cli,
            home: None,
        })
        .await?;
    note(&task);
    Ok((StatusCode::CREATED, Json(TaskView::from(&task))).into_response())
}

#[derive(serde::Deserialize)]
pub(super) struct ListQuery {
    agent: Option<String>,
    all: Option<String>,
    limit: Option<String>,
}

/// `GET /v1/tasks?agent=&all=&limit=`: open tasks, oldest first; with `all=true` the
/// latest of any status, newest first. Agents name themselves and see their own.
pub(super) async fn list(
    State(state): State<ApiState>,
    ApiQuery(q): ApiQuery<ListQuery>,
    headers: HeaderMap,
) -> ApiResult<Json<serde_json::Value>> {
    if !state.owner {
        let Some(agent) = q.agent.as_deref() else {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "agents must name themselves: GET /v1/tasks?agent=NAME",
            ));
        };
        authenticate(&state, agent, &headers, "list its tasks", None).await?;
    }
    let all = match q.all.as_deref() {
        None | Some("" | "false" | "0") => false,
        Some("true" | "1") => true,
        Some(other) => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                format!("`all` must be true or false, got `{other}`"),
            ))
        }
    };
    let limit = match q.limit.as_deref() {
        None | Some("") => MAX_TASKS,
        Some(l) => match l.trim().parse::<usize>() {
            Ok(n) if (1..=MAX_TASKS).contains(&n) => n,
            _ => {
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "invalid_request",
                    format!("`limit` must be a whole number from 1 to {MAX_TASKS}, got `{l}`"),
                ))
            }
        },
    };
    let tasks = state.engine.tasks(all, q.agent.clone(), limit).await?;
    let views: Vec<TaskView> = tasks.iter().map(TaskView::from).collect();
    Ok(Json(json!({"tasks": views})))
}

/// Loads a task and checks the caller may see it: owners see all (by short id or
/// prefix too); an agent sees its own, by full id, with its token.
async fn authorised_task(
    state: &ApiState,
    id: &str,
    headers: &HeaderMap,
    attempted: &'static str,
) -> ApiResult<Task> {
    let task = if state.owner {
        state.engine.task(id).await?
    } else {
        match state.engine.task_subject(id).await? {
            Some(crate::engine::TaskSubject::Task(t)) if t.id == id => *t,
            _ => return Err(EngineError::not_found(What::Task, id).into()),
        }
    };
    note(&task);
    if !state.owner {
        authenticate(state, &task.agent, headers, attempted, Some(&task.id))
            .await
            .map_err(|e| match e {
                // Don't reveal that the id exists to an agent that cannot see it.
                EngineError::UnknownAgent(_) => EngineError::not_found(What::Task, id),
                other => other,
            })?;
    }
    Ok(task)
}

#[derive(serde::Deserialize)]
pub(super) struct WaitQuery {
    wait: Option<String>,
}

/// `GET /v1/tasks/{id}?wait=SECONDS`: one task; while it is queued or running, waits
/// up to `wait` (capped by `[queue] max_wait`) for it to finish or need its owner.
#[instrument(name = "api", skip_all, fields(op = "task_get", id = Empty, agent = Empty, tool = Empty, verdict = Empty))]
pub(super) async fn get(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
    ApiQuery(q): ApiQuery<WaitQuery>,
    headers: HeaderMap,
) -> ApiResult<Json<TaskView>> {
    let wait = wait_param("wait", q.wait.as_deref())?;
    let task = authorised_task(&state, &id, &headers, "read a task").await?;
    let max = state.engine.config().queue.max_wait;
    let wait = wait.unwrap_or(Duration::ZERO).min(max);
    let task = if wait.is_zero() {
        task
    } else {
        let (engine, id) = (&state.engine, &task.id);
        Waiting::run(&state, &task.agent, |stop| async move {
            engine.wait_task(id, wait, &stop).await
        })
        .await?
    };
    note(&task);
    Ok(Json(TaskView::from(&task)))
}

/// `POST /v1/tasks/{id}/cancel` and `/retry` (owners).
async fn owner_step(
    state: &ApiState,
    id: &str,
    req: Request<Body>,
    step: Step,
) -> ApiResult<Json<TaskView>> {
    let actor = owner_of(state, &req).await?;
    let task = state.engine.task_step(id, step, &actor, &Via::Cli).await?;
    note(&task);
    Ok(Json(TaskView::from(&task)))
}

#[instrument(name = "api", skip_all, fields(op = "task_cancel", id = Empty, agent = Empty, tool = Empty, verdict = Empty))]
pub(super) async fn cancel(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
    req: Request<Body>,
) -> ApiResult<Json<TaskView>> {
    owner_step(&state, &id, req, Step::Cancel).await
}

#[instrument(name = "api", skip_all, fields(op = "task_retry", id = Empty, agent = Empty, tool = Empty, verdict = Empty))]
pub(super) async fn retry(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
    req: Request<Body>,
) -> ApiResult<Json<TaskView>> {
    owner_step(&state, &id, req, Step::Retry).await
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct AnswerBody {
    text: String,
}

/// `POST /v1/tasks/{id}/answer {text}` (owners): answers the question the task waits on.
#[instrument(name = "api", skip_all, fields(op = "task_answer", id = Empty, agent = Empty, tool = Empty, verdict = Empty))]
pub(super) async fn answer(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
    req: Request<Body>,
) -> ApiResult<Json<TaskView>> {
    let actor = owner_of(&state, &req).await?;
    let body: AnswerBody = json_body(&state, req).await?;
    let task = state.engine.task(&id).await?;
    let task = state
        .engine
        .answer_task(&task.id, &body.text, &actor, &Via::Cli)
        .await?;
    note(&task);
    Ok(Json(TaskView::from(&task)))
}

/// The owners' task routes on the agents' socket: refused, and audited.
pub(super) async fn owner_only(State(state): State<ApiState>, headers: HeaderMap) -> ApiError {
    let actor = bearer(&headers)
        .and_then(|t| state.engine.token_owner(t))
        .unwrap_or_else(|| "unknown".to_string());
    let detail = json!({
        "attempted": "hand over, answer, cancel or retry a task on the agents' API",
        "transport": state.transport.as_str(),
    });
    audit_refusal(
        &state,
        None,
        actor,
        "use an owner's task route",
        None,
        detail,
    )
    .await;
    ApiError::new(
        StatusCode::FORBIDDEN,
        "forbidden",
        "agents cannot hand over, answer, cancel or retry tasks; an owner does, from a chat or the CLI",
    )
}

/// `POST /v1/tasks/claim {agent, wait}`: the agent's next task, or `{"task": null}`
/// when none came within `wait` seconds (capped by `[queue] max_wait`).
#[instrument(name = "api", skip_all, fields(op = "task_claim", id = Empty, agent = Empty, tool = Empty, verdict = Empty))]
pub(super) async fn claim(
    State(state): State<ApiState>,
    req: Request<Body>,
) -> ApiResult<Json<ClaimAnswer>> {
    let headers = req.headers().clone();
    let (body, size): (ClaimBody, _) = json_body_sized(&state, req).await?;
    Span::current().record("agent", body.agent.as_str());
    if !state.owner {
        authenticate(&state, &body.agent, &headers, "claim a task", None).await?;
    } else if state.engine.config().agent(&body.agent).is_none() {
        return Err(EngineError::UnknownAgent(body.agent).into());
    }
    admit(&state, &body.agent, Quota::Tasks, size)?;
    let wait = match body.wait {
        Some(w) if !w.is_finite() || w < 0.0 => {
            return Err(invalid(format!(
                "`wait` must be a number of seconds ≥ 0, got {w}"
            )))
        }
        Some(w) => Duration::try_from_secs_f64(w).unwrap_or(Duration::MAX),
        None => Duration::ZERO,
    }
    .min(state.engine.config().queue.max_wait);
    let inbox = state.engine.config().inbox.clone();
    let task = if wait.is_zero() {
        state
            .engine
            .claim_task(&body.agent, wait, &state.shutdown)
            .await?
    } else {
        let (engine, agent) = (&state.engine, &body.agent);
        Waiting::run(&state, agent, |stop| async move {
            engine.claim_task(agent, wait, &stop).await
        })
        .await?
    };
    let Some(t) = task else {
        return Ok(Json(ClaimAnswer { task: None }));
    };
    note(&t);
    let lease_secs = inbox.as_ref().map_or(60.0, |i| i.lease.as_secs_f64());
    let timeout_secs = inbox
        .as_ref()
        .map_or(600.0, |i| i.timeout(t.intent).as_secs_f64());
    Ok(Json(ClaimAnswer {
        task: Some(ClaimedView {
            id: t.id.clone(),
            short_id: t.short_id.clone(),
            intent: t.intent,
            summary: t.summary.clone(),
            prompt: t.prompt.clone(),
            lease: t.lease.clone().unwrap_or_default(),
            lease_secs,
            timeout_secs,
            attempt: t.attempts,
            questions: t.input_questions.clone(),
            input: t.input.clone(),
            session_id: t.session_id.clone(),
        }),
    }))
}

/// Checks the caller may report on task `id` (and its limits, for a body of `size`
/// bytes), then reports.
async fn report(
    state: &ApiState,
    id: &str,
    headers: &HeaderMap,
    (lease, size): (&str, usize),
    report: Report,
    attempted: &'static str,
) -> ApiResult<Json<TaskView>> {
    let task = authorised_task(state, id, headers, attempted).await?;
    admit(state, &task.agent, Quota::Tasks, size)?;
    let task = state.engine.report_task(&task.id, lease, report).await?;
    note(&task);
    Ok(Json(TaskView::from(&task)))
}

#[instrument(name = "api", skip_all, fields(op = "task_progress", id = Empty, agent = Empty, tool = Empty, verdict = Empty))]
pub(super) async fn progress(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
    req: Request<Body>,
) -> ApiResult<Json<TaskView>> {
    let headers = req.headers().clone();
    let (b, size): (ProgressBody, _) = json_body_sized(&state, req).await?;
    report(
        &state,
        &id,
        &headers,
        (&b.lease, size),
        Report::Progress(b.text),
        "report progress",
    )
    .await
}

#[instrument(name = "api", skip_all, fields(op = "task_complete", id = Empty, agent = Empty, tool = Empty, verdict = Empty))]
pub(super) async fn complete(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
    req: Request<Body>,
) -> ApiResult<Json<TaskView>> {
    let headers = req.headers().clone();
    let (b, size): (CompleteBody, _) = json_body_sized(&state, req).await?;
    let r = Report::Complete {
        result: b.result,
        cost_usd: b.cost_usd,
        session_id: b.session_id,
    };
    report(
        &state,
        &id,
        &headers,
        (&b.lease, size),
        r,
        "complete a task",
    )
    .await
}

#[instrument(name = "api", skip_all, fields(op = "task_fail", id = Empty, agent = Empty, tool = Empty, verdict = Empty))]
pub(super) async fn fail(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
    req: Request<Body>,
) -> ApiResult<Json<TaskView>> {
    let headers = req.headers().clone();
    let (b, size): (FailBody, _) = json_body_sized(&state, req).await?;
    let r = Report::Fail {
        error: b.error,
        cost_usd: b.cost_usd,
        session_id: b.session_id,
    };
    report(&state, &id, &headers, (&b.lease, size), r, "fail a task").await
}

#[instrument(name = "api", skip_all, fields(op = "task_needs_input", id = Empty, agent = Empty, tool = Empty, verdict = Empty))]
pub(super) async fn needs_input(
    State(state): State<ApiState>,
    ApiPath(id): ApiPath<String>,
    req: Request<Body>,
) -> ApiResult<Json<TaskView>> {
    let headers = req.headers().clone();
    let (b, size): (NeedsInputBody, _) = json_body_sized(&state, req).await?;
    let r = Report::NeedsInput {
        questions: b.questions,
        session_id: b.session_id,
    };
    report(&state, &id, &headers, (&b.lease, size), r, "ask the owner").await
}
