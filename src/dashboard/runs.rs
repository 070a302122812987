//! The runs' pages: `/runs` lists workflow runs, newest first, filtered by status and
//! agent (kept in the URL), as `gatebot workflows` does; `/runs/{id}` shows one run's
//! events and the problems they reported as a timeline, with each check-in where its
//! event made it and how it was answered (who, when, why). A waiting check-in is
//! answered on the pending page, with the chats' buttons.

use axum::extract::{Path, Query, State};
use axum::response::{IntoResponse, Response};
use maud::{html, Markup};
use serde::Deserialize;

use super::forms::{agent_given, bad_filter, cursor_given, not_found, when};
use super::page::{shell, Menu};
use super::signin::Signed;
use super::DashState;
use crate::engine::{EngineError, RunEvent, RunFilter};
use crate::names::visible;
use crate::workflow::run::{CheckIn, CheckInStatus, Run, RunIssue, RunStatus};
use crate::workflow::EventType;

/// Runs on one page.
pub(super) const PAGE: usize = 50;

const STATUSES: [(&str, &str); 5] = [
    ("", "Any"),
    ("running", "Running"),
    ("waiting", "Waiting for you"),
    ("stopped", "Stopped"),
    ("completed", "Completed"),
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
    fn read(&self) -> (RunFilter, Vec<String>) {
        let mut notes = Vec::new();
        let status = match self.status.as_str() {
            "" => None,
            s => RunStatus::parse(s).or_else(|| {
                let words: Vec<&str> = STATUSES.iter().skip(1).map(|(w, _)| *w).collect();
                notes.push(bad_filter("status", s, &words));
                None
            }),
        };
        let agent = agent_given(&self.agent, &mut notes);
        let after = cursor_given(&self.after);
        (
            RunFilter {
                agent,
                status,
                after,
                limit: PAGE,
            },
            notes,
        )
    }

    fn query(&self) -> String {
        let pairs = [("status", &self.status), ("agent", &self.agent)];
        super::forms::query(&pairs)
    }
}

/// A run's status in words.
fn status_words(r: &Run) -> String {
    match r.status {
        RunStatus::Running => "running".into(),
        RunStatus::Waiting => "waiting for you at a check-in".into(),
        RunStatus::Completed => "completed".into(),
        RunStatus::Stopped => match &r.reason {
            Some(why) => format!("stopped: {why}"),
            None => "stopped".into(),
        },
    }
}

fn event_words(e: EventType) -> &'static str {
    match e {
        EventType::StepComplete => "step complete",
        EventType::PhaseComplete => "phase complete",
        EventType::WorkflowComplete => "workflow complete",
    }
}

/// "build › lint", or the phase alone.
fn place(phase: &str, step: Option<&str>) -> String {
    match step {
        Some(s) => format!("{phase} › {s}"),
        None => phase.to_string(),
    }
}

/// `GET /runs`.
pub(super) async fn list(
    State(state): State<DashState>,
    Signed(session): Signed,
    Query(f): Query<Filters>,
) -> Response {
    let (filter, notes) = f.read();
    let runs = match state.engine.list_runs(filter).await {
        Ok(r) => r,
        Err(e) => return super::failed(&e),
    };
    let now = crate::time::now_ms();
    let query = f.query();
    let body = html! {
        h1 { "Workflow runs" }
        form.filters method="get" action="/runs" {
            label { "Status "
                select name="status" {
                    @for (w, said) in STATUSES {
                        option value=(w) selected[f.status == w] { (said) }
                    }
                }
            }
            label { "Agent " input name="agent" value=(f.agent) size="12"; }
            button type="submit" { "Filter" }
        }
        @for n in &notes { p.note role="status" { (n) } }
        @if runs.is_empty() { p.count { "No workflow runs here." } }
        ul.rows.runs {
            @for r in &runs {
                li data-status=(r.status.as_str()) {
                    div {
                        a href=(format!("/runs/{}", r.id)) { strong { (visible(&r.title)) } }
                        " " code { (r.short_id) }
                        br;
                        span.muted {
                            code { (visible(&r.agent)) } " · " (status_words(r))
                            @if let Some(p) = &r.phase { " · at " (visible(&place(p, r.step.as_deref()))) }
                            " · " (r.events) " event(s), " (r.totals.warnings) " warning(s), "
                            (r.totals.errors) " error(s) · started " (when(r.created_at, now))
                        }
                    }
                }
            }
        }
        @if runs.len() == PAGE {
            @if let Some(last) = runs.last() {
                @let sep = if query.is_empty() { "" } else { "&" };
                a.next href=(format!("/runs?{query}{sep}after={}", last.id)) { "Next page" }
            }
        }
    };
    shell("Runs", Some(&session), Menu::Runs, body).into_response()
}

/// `GET /runs/{id}`: one run, by id, short id or unique prefix.
pub(super) async fn page(
    State(state): State<DashState>,
    Signed(session): Signed,
    Path(id): Path<String>,
) -> Response {
    let engine = &state.engine;
    let run = match engine.lookup_run(&id, true).await {
        Ok(r) => r,
        Err(e @ (EngineError::NotFound { .. } | EngineError::Ambiguous { .. })) => {
            return not_found(
                &session,
                Menu::Runs,
                &e.to_string(),
                ("/runs", "All workflow runs"),
            )
        }
        Err(e) => return super::failed(&e),
    };
    let timeline = match engine.run_timeline(&run).await {
        Ok(t) => t,
        Err(e) => return super::failed(&e),
    };
    let now = crate::time::now_ms();
    let body = html! {
        p.crumbs { a href="/runs" { "Workflow runs" } " ›" }
        h1 { (visible(&run.title)) " " span.tag { code { (run.short_id) } } }
        dl.fields {
            div { dt { "Agent" } dd { a href=(format!("/agents/{}", run.agent)) { code { (visible(&run.agent)) } } } }
            @if let Some(w) = &run.workflow { div { dt { "Workflow" } dd { (visible(w)) } } }
            div { dt { "Status" } dd { strong { (visible(&status_words(&run))) } } }
            div { dt { "Started" } dd { (when(run.created_at, now)) } }
            @if let Some(at) = run.finished_at { div { dt { "Finished" } dd { (when(at, now)) } } }
            div { dt { "Problems" } dd { (run.totals.warnings) " warning(s), " (run.totals.errors) " error(s)"
                @if !run.dropped.is_empty() {
                    " (and " (run.dropped.warnings) " warning(s), " (run.dropped.errors)
                    " error(s) past the limits, not kept)"
                } } }
        }
        @if run.status == RunStatus::Waiting {
            p.note { "It waits for you: " a href="/?kind=checkin" { "answer its check-in on the Pending page" } "." }
        }
        h2 { "Timeline" }
        @if timeline.events.is_empty() { p.count { "No events yet." } }
        ol.timeline {
            @for e in &timeline.events {
                (event_item(e, timeline.check_ins.iter().find(|c| Some(&c.id) == e.check_in.as_ref()), now))
            }
        }
        @if timeline.more > 0 {
            p.muted { "… and " (timeline.more) " later event(s), not shown." }
        }
    };
    shell(&visible(&run.title), Some(&session), Menu::Runs, body).into_response()
}

fn event_item(e: &RunEvent, check_in: Option<&CheckIn>, now: i64) -> Markup {
    html! {
        li.event data-action=(e.action.as_str()) {
            p.head {
                span.seq { "#" (e.seq) } " "
                strong { (event_words(e.event)) } ": " (visible(&place(&e.phase, e.step.as_deref())))
                " · " (when(e.created_at, now))
            }
            @if !e.issues.is_empty() {
                ul.issues { @for i in &e.issues { (issue(i)) } }
            }
            @if !e.artifacts.is_empty() {
                p { "Artifacts: "
                    @for (n, a) in e.artifacts.iter().enumerate() {
                        @if n > 0 { ", " }
                        (visible(&a.name))
                        // A link only to the web: never `javascript:` or the like.
                        @if let Some(u) = a.url.as_deref().filter(|u| u.starts_with("https://") || u.starts_with("http://")) {
                            " (" a href=(u) rel="noopener noreferrer" { (visible(u)) } ")"
                        } @else if let Some(u) = &a.url {
                            " (" code { (visible(u)) } ")"
                        }
                    }
                }
            }
            p.answer { "Told to " strong { (e.action.as_str()) }
                @if let Some(r) = &e.reason { ": " (visible(r)) } }
            @if let Some(c) = check_in { (check_in_block(c, now)) }
        }
    }
}

fn issue(i: &RunIssue) -> Markup {
    html! {
        li class=(i.kind.as_str()) {
            strong { (i.kind.as_str()) } " (" (i.severity.as_str())
            @if i.detected { ", read from its words" }
            @if i.exceeded { ", beyond tolerance" }
            "): " (visible(&i.text))
        }
    }
}

fn check_in_block(c: &CheckIn, now: i64) -> Markup {
    html! {
        div.checkin data-status=(c.status.as_str()) {
            p { strong { @if c.status == CheckInStatus::Reported { "Report" } @else { "Check-in" } }
                @if let Some(s) = &c.short_id { " " code { (s) } }
                ": " (visible(&c.reason)) }
            p { "Answer: " (visible(&c.describe_answer()))
                @if let Some(at) = c.decided_at { " · " (when(at, now)) }
                @if c.status == CheckInStatus::Waiting {
                    @if let Some(at) = c.expires_at { " · expires " (crate::words::relative(at, now)) }
                    " · " a href="/?kind=checkin" { "answer it" }
                }
            }
        }
    }
}
