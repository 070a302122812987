//! The tasks page: `/tasks` lists the inbox's tasks, newest first, filtered by status
//! and agent (kept in the URL), each with its progress or result and the requests its
//! agent made inside it; a form hands over a new task, as `gatebot task add` does; a
//! task is cancelled or retried as `gatebot task cancel|retry` does. Every change is
//! the engine call the control socket's routes make (`api::tasks`), by the person
//! signed in, on the dashboard.

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Form;
use maud::{html, Markup};
use serde::Deserialize;

use super::forms::{agent_given, bad_filter, cursor_given, engine_words, given, when};
use super::page::{answered, shell, Menu};
use super::signin::Signed;
use super::DashState;
use crate::approval::Via;
use crate::chat::conversation::task::status_word;
use crate::engine::{TaskFilter, TaskRequest, TaskRequests};
use crate::inbox::lifecycle::Step;
use crate::inbox::{Intent, Task, TaskStatus, MAX_ANSWER_CHARS, MAX_TASK_CHARS};
use crate::names::visible;

/// Tasks on one page.
pub(super) const PAGE: usize = 50;
/// Requests shown under a task (the latest).
const REQUESTS_SHOWN: usize = 10;
/// Agent text longer than this many characters is folded.
const FOLD_CHARS: usize = 600;

/// The status filter's words, what each shows, and the statuses it means (none: all).
const STATUSES: [(&str, &str, &[TaskStatus]); 6] = [
    (
        "open",
        "Open",
        &[
            TaskStatus::Pending,
            TaskStatus::Queued,
            TaskStatus::Running,
            TaskStatus::Waiting,
        ],
    ),
    (
        "waiting",
        "Waiting for you",
        &[TaskStatus::Pending, TaskStatus::Waiting],
    ),
    ("queued", "Queued", &[TaskStatus::Queued]),
    ("running", "Running", &[TaskStatus::Running]),
    (
        "done",
        "Done",
        &[
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Rejected,
            TaskStatus::Cancelled,
        ],
    ),
    ("all", "All", &[]),
];

/// The filters as the URL has them.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Filters {
    #[serde(default)]
    status: String,
    #[serde(default)]
    agent: String,
    #[serde(default)]
    after: String,
}

impl Filters {
    /// What to read, and the notes on filter values that are not the page's words.
    fn read(&self) -> (TaskFilter, &'static str, Vec<String>) {
        let mut notes = Vec::new();
        let wanted = if self.status.is_empty() {
            "open"
        } else {
            self.status.as_str()
        };
        let (word, statuses) = match STATUSES.iter().find(|(w, _, _)| *w == wanted) {
            Some((w, _, s)) => (*w, s.to_vec()),
            None => {
                let words: Vec<&str> = STATUSES.iter().map(|(w, _, _)| *w).collect();
                notes.push(bad_filter("status", &self.status, &words));
                ("all", Vec::new())
            }
        };
        let agent = agent_given(&self.agent, &mut notes);
        // A cursor is a task id (a ULID): anything else starts from the top.
        let after = cursor_given(&self.after);
        (
            TaskFilter {
                statuses,
                agent,
                after,
                limit: PAGE,
            },
            word,
            notes,
        )
    }

    /// The query string of these filters, without the page cursor.
    fn query(&self) -> String {
        let pairs = [("status", &self.status), ("agent", &self.agent)];
        super::forms::query(&pairs)
    }
}

/// `GET /tasks`.
pub(super) async fn page(
    State(state): State<DashState>,
    Signed(session): Signed,
    Query(f): Query<Filters>,
) -> Response {
    let (filter, word, notes) = f.read();
    let engine = &state.engine;
    let tasks = match engine.task_page(filter).await {
        Ok(t) => t,
        Err(e) => return super::failed(&e),
    };
    let ids = tasks.iter().map(|t| t.id.clone()).collect();
    let mut requests = match engine.requests_of_tasks(ids, REQUESTS_SHOWN).await {
        Ok(r) => r,
        Err(e) => return super::failed(&e),
    };
    let inbox = engine.config().inbox.is_some();
    let mut agents: Vec<String> = engine.config().agents.keys().cloned().collect();
    agents.sort();
    let now = crate::time::now_ms();
    let back = back_to(&f);
    let query = f.query();
    let body = html! {
        h1 { "Tasks" }
        @if inbox {
            (add_form(&session.csrf, &agents))
        } @else {
            p.note { "The inbox is off: add an [inbox] table to bot.toml to hand tasks to agents (docs/inbox.md)." }
        }
        (filters_form(&f, word))
        @for n in &notes { p.note role="status" { (n) } }
        @if tasks.is_empty() {
            p.count { "No tasks here." }
        }
        @for t in &tasks {
            (task_item(t, requests.remove(&t.id), &session.csrf, &back, now))
        }
        @if tasks.len() == PAGE {
            @if let Some(last) = tasks.last() {
                @let sep = if query.is_empty() { "" } else { "&" };
                a.next href=(format!("/tasks?{query}{sep}after={}", last.id)) { "Next page" }
            }
        }
    };
    shell("Tasks", Some(&session), Menu::Tasks, body).into_response()
}

/// Where a form on this page sends the browser back to: the page as filtered.
fn back_to(f: &Filters) -> String {
    let q = f.query();
    if q.is_empty() {
        "/tasks".into()
    } else {
        format!("/tasks?{q}")
    }
}

fn add_form(csrf: &str, agents: &[String]) -> Markup {
    html! {
        details.panel #new-task {
            summary { "Hand over a task" }
            form.stack method="post" action="/tasks" {
                input type="hidden" name="csrf" value=(csrf);
                label { "What to do"
                    textarea name="text" rows="4" required maxlength=(MAX_TASK_CHARS) {}
                }
                div.row {
                    label { "Agent (blank: as [inbox.routes] sends it) "
                        input name="agent" list="agent-names" size="16" autocomplete="off";
                    }
                    datalist #agent-names { @for a in agents { option value=(a) {} } }
                    label { "Intent "
                        select name="intent" {
                            option value="" { "gatebot decides" }
                            @for i in Intent::ALL { option value=(i.as_str()) { (i.label()) } }
                        }
                    }
                }
                div.buttons { button.primary type="submit" { "Hand over" } }
            }
        }
    }
}

fn filters_form(f: &Filters, word: &str) -> Markup {
    html! {
        form.filters method="get" action="/tasks" {
            label { "Status "
                select name="status" {
                    @for (w, said, _) in STATUSES {
                        option value=(w) selected[w == word] { (said) }
                    }
                }
            }
            label { "Agent " input name="agent" value=(f.agent) size="12"; }
            button type="submit" { "Filter" }
        }
    }
}

/// Agent or owner text in a block, folded when long.
fn text_block(label: &str, body: &str) -> Markup {
    let body = visible(body);
    html! {
        figure.code {
            @if body.chars().count() > FOLD_CHARS || body.lines().count() > 12 {
                details {
                    summary { (label) " (" (body.lines().count()) " lines: show all)" }
                    pre { code { (body) } }
                }
            } @else {
                figcaption { (label) }
                pre { code { (body) } }
            }
        }
    }
}

fn task_item(t: &Task, requests: Option<TaskRequests>, csrf: &str, back: &str, now: i64) -> Markup {
    html! {
        article.item.task id=(format!("task-{}", t.short_id)) data-status=(t.status.as_str()) {
            h2 { (visible(&t.summary)) " " span.tag { code { (t.short_id) } } }
            dl.fields {
                div { dt { "Status" } dd { strong { (status_word(t)) } } }
                div { dt { "Agent" } dd { code { (visible(&t.agent)) } } }
                div { dt { "Intent" } dd { (t.intent.label()) } }
                div { dt { "Handed over" } dd { "by " (visible(&t.created_by)) " " (when(t.created_at, now)) } }
                @if let Some(at) = t.started_at { div { dt { "Started" } dd { (when(at, now)) } } }
                @if let Some(at) = t.finished_at {
                    div { dt { "Finished" } dd { (when(at, now))
                        @if let Some(by) = &t.decided_by { " (" (visible(by)) ")" } } }
                }
                @if let Some(at) = t.deadline.filter(|_| t.status == TaskStatus::Running) {
                    div { dt { "Must end" } dd { (crate::words::deadline(at, now)) } }
                }
                @if let Some(c) = t.cost_usd { div { dt { "Cost" } dd { (format!("${c:.2}")) } } }
            }
            (text_block("The task as written", &t.text))
            @if let Some(s) = &t.suggestion {
                (text_block("The classifier model's suggestion to the agent (not your words)", s))
            }
            @if let Some(p) = &t.progress {
                @let at = t.progress_at.map(|a| format!(" ({})", crate::words::relative(a, now))).unwrap_or_default();
                (text_block(&format!("Latest progress{at}"), p))
            }
            @if let Some(q) = t.question.as_ref().filter(|_| t.status == TaskStatus::Waiting) {
                div.question {
                    p { strong { "It asks:" } }
                    ul { @for line in &q.questions { li { (visible(line)) } } }
                    @if !q.choices.is_empty() {
                        p { "Choices: " (visible(&q.choices.join(" | "))) }
                    }
                    (answer_form(t, csrf, back))
                }
            }
            @if t.status == TaskStatus::Pending {
                p { "It waits for your go: " a href="/?kind=task" { "queue or reject it on the Pending page" } "." }
            }
            @match (t.status, &t.result, &t.error) {
                (TaskStatus::Completed, Some(r), _) => (text_block("Result", r)),
                (TaskStatus::Failed, _, Some(e)) => (text_block("Why it failed", e)),
                _ => {}
            }
            @if let Some(r) = &requests { (requests_list(r, now)) }
            (steps(t, csrf, back))
        }
    }
}

fn requests_list(r: &TaskRequests, now: i64) -> Markup {
    html! {
        div.requests {
            p { strong { "Requests made inside it (" (r.total) ")" } }
            ul {
                @for a in &r.shown {
                    li {
                        code { (a.short_id) } " " code { (visible(&a.tool)) } ": "
                        (a.status.words()) ", " (a.risk.score.as_str()) " risk, " (when(a.created_at, now))
                        @if a.decided_by.is_some() { " (" (visible(&a.decider())) ")" }
                    }
                }
            }
            @if r.total > r.shown.len() {
                p.muted { "… and " (r.total - r.shown.len()) " earlier." }
            }
        }
    }
}

/// The owner's steps a task takes in its status, as forms.
fn steps(t: &Task, csrf: &str, back: &str) -> Markup {
    let cancel = t.status.is_open();
    let retry = matches!(t.status, TaskStatus::Failed | TaskStatus::Cancelled);
    html! {
        @if cancel || retry {
            div.actions {
                @if cancel {
                    form.inline method="post" action=(format!("/tasks/{}/cancel", t.id)) {
                        input type="hidden" name="csrf" value=(csrf);
                        input type="hidden" name="back" value=(back);
                        button.danger type="submit" { "Cancel" }
                    }
                }
                @if retry {
                    form.inline method="post" action=(format!("/tasks/{}/retry", t.id)) {
                        input type="hidden" name="csrf" value=(csrf);
                        input type="hidden" name="back" value=(back);
                        button type="submit" { "Retry" }
                    }
                }
            }
        }
    }
}

/// The form that answers the question task `t` waits on, as `gatebot task answer`
/// does; `back` is the page to return to.
pub(super) fn answer_form(t: &Task, csrf: &str, back: &str) -> Markup {
    html! {
        form.answer method="post" action=(format!("/tasks/{}/answer", t.id)) {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="back" value=(back);
            input type="text" name="text" required maxlength=(MAX_ANSWER_CHARS)
                placeholder="Your answer (the agent reads it)" aria-label="Your answer";
            " "
            button.primary type="submit" { "Answer" }
        }
    }
}

#[derive(Deserialize)]
pub(super) struct AnswerForm {
    csrf: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    back: String,
}

/// `POST /tasks/{id}/answer`: answers the question the task waits on, as
/// `gatebot task answer ID WORDS` does.
pub(super) async fn answer(
    State(state): State<DashState>,
    signed: Signed,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<AnswerForm>,
) -> Response {
    if let Err(r) = signed.check(&state, &headers, &form.csrf).await {
        return r;
    }
    let outcome = state
        .engine
        .answer_task(&id, &form.text, &signed.0.person, &Via::Dashboard)
        .await
        .map(|t| vec![format!("task {}: {}", t.short_id, status_word(&t))])
        .map_err(|e| engine_words(&e));
    answered(&headers, outcome, return_to(&form.back))
}

/// Where a task's form returns: the page it was sent from (the tasks page or the
/// pending page, as filtered), never another site.
fn return_to(back: &str) -> &str {
    let ours = ["/tasks", "/"]
        .iter()
        .any(|p| back == *p || back.starts_with(&format!("{p}?")));
    if ours && back.bytes().all(|b| b.is_ascii_graphic()) {
        back
    } else {
        "/tasks"
    }
}

#[derive(Deserialize)]
pub(super) struct AddForm {
    csrf: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    agent: String,
    #[serde(default)]
    intent: String,
}

/// `POST /tasks`: hands over a task, as `gatebot task add WORDS [--agent] [--intent]`.
pub(super) async fn add(
    State(state): State<DashState>,
    signed: Signed,
    headers: HeaderMap,
    Form(form): Form<AddForm>,
) -> Response {
    if let Err(r) = signed.check(&state, &headers, &form.csrf).await {
        return r;
    }
    let outcome = async {
        let intent = given(&form.intent)
            .map(|i| i.parse::<Intent>())
            .transpose()
            .map_err(|e| (StatusCode::BAD_REQUEST, e))?;
        let t = state
            .engine
            .create_task(TaskRequest {
                text: form.text.clone(),
                agent: given(&form.agent),
                intent,
                by: signed.0.person.clone(),
                via: Via::Dashboard,
                home: None,
            })
            .await
            .map_err(|e| engine_words(&e))?;
        Ok(vec![format!(
            "task {} handed to {}: {}",
            t.short_id,
            t.agent,
            status_word(&t)
        )])
    }
    .await;
    answered(&headers, outcome, "/tasks")
}

#[derive(Deserialize)]
pub(super) struct StepForm {
    csrf: String,
    /// The page to go back to (this page, as filtered).
    #[serde(default)]
    back: String,
}

/// `POST /tasks/{id}/cancel`.
pub(super) async fn cancel(
    state: State<DashState>,
    signed: Signed,
    headers: HeaderMap,
    id: Path<String>,
    form: Form<StepForm>,
) -> Response {
    step(state, signed, headers, id, form, Step::Cancel).await
}

/// `POST /tasks/{id}/retry`.
pub(super) async fn retry(
    state: State<DashState>,
    signed: Signed,
    headers: HeaderMap,
    id: Path<String>,
    form: Form<StepForm>,
) -> Response {
    step(state, signed, headers, id, form, Step::Retry).await
}

/// An owner's step on a task, as `gatebot task cancel|retry ID`.
async fn step(
    State(state): State<DashState>,
    signed: Signed,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<StepForm>,
    step: Step,
) -> Response {
    if let Err(r) = signed.check(&state, &headers, &form.csrf).await {
        return r;
    }
    let back = return_to(&form.back);
    let outcome = state
        .engine
        .task_step(&id, step, &signed.0.person, &Via::Dashboard)
        .await
        .map(|t| vec![format!("task {}: {}", t.short_id, status_word(&t))])
        .map_err(|e| engine_words(&e));
    answered(&headers, outcome, back)
}
