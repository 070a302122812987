//! Second factors on the dashboard (step-up, docs/teams.md).
//!
//! - `GET /factors`: the signed-in person's factors; a form to add one, and one to
//!   remove each (a fresh code).
//! - `POST /factors`: starts an enrolment and shows its QR code (inline SVG) and
//!   secret, with the field for the app's first code (`POST /factors/{id}/confirm`).
//! - `POST /factors/{id}/remove`: removes one after a fresh code.
//! - `GET /requests/{id}/confirm`: the confirm page of a request whose approval needs a
//!   second factor (where an Approve in chat or on the pending page leads); `POST`
//!   approves it with a code, or without one within the person's step-up window on this
//!   session (`[step_up] window`, renewed by each use).

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Form;
use maud::{html, Markup, PreEscaped};
use serde::Deserialize;

use super::edit::pending_request;
use super::forms::engine_words;
use super::page::{shell, Menu};
use super::signin::Signed;
use super::DashState;
use crate::approval::{Approval, Via};
use crate::chat::conversation::owner::OwnerDecision;
use crate::engine::{EngineError, Session};
use crate::names::visible;

/// What the factor forms send.
#[derive(Deserialize)]
pub(super) struct FactorForm {
    csrf: String,
    #[serde(default)]
    label: String,
    #[serde(default)]
    code: String,
}

/// The step-up window's key for a dashboard session.
fn surface(session: &Session) -> String {
    format!("session:{}", session.id)
}

/// `GET /factors`.
pub(super) async fn page(State(state): State<DashState>, Signed(session): Signed) -> Response {
    list(&state, &session, None, StatusCode::OK).await
}

/// The factors page, with `said` (what the last step came to) on top.
async fn list(
    state: &DashState,
    session: &Session,
    said: Option<(bool, String)>,
    status: StatusCode,
) -> Response {
    let factors = match state.engine.factors(&session.person).await {
        Ok(f) => f,
        Err(e) => return super::failed(&e),
    };
    let now = crate::time::now_ms();
    let body = html! {
        h1 { "Second factors" }
        (said_line(said))
        p.note { "An authenticator app's codes confirm approvals that need a second factor (approval rules with step_up, and critical requests once anyone has a factor). A deny never needs one." }
        @if factors.is_empty() {
            p { "You have no second factor yet." }
        } @else {
            table.list {
                thead { tr { th { "Factor" } th { "Added" } th { "Remove (a fresh code)" } } }
                tbody {
                    @for f in &factors {
                        tr {
                            td { (visible(&f.label))
                                @if f.confirmed_at.is_none() { " " em { "(waiting for its first code)" } } }
                            td { (super::forms::when(f.created_at, now)) }
                            td {
                                form.inline method="post" action=(format!("/factors/{}/remove", f.id)) {
                                    input type="hidden" name="csrf" value=(session.csrf);
                                    (code_field("remove"))
                                    button type="submit" { "Remove" }
                                }
                            }
                        }
                    }
                }
            }
        }
        h2 { "Add an authenticator app" }
        form method="post" action="/factors" {
            input type="hidden" name="csrf" value=(session.csrf);
            label for="label" { "What to call it" }
            input id="label" name="label" type="text" maxlength="40" value="phone" required;
            button.primary type="submit" { "Add" }
        }
        p.note { "Or, on gatebot's machine: " code { "gatebot factor enroll" } }
    };
    (
        status,
        shell("Second factors", Some(session), Menu::Factors, body),
    )
        .into_response()
}

fn said_line(said: Option<(bool, String)>) -> Markup {
    match said {
        None => html! {},
        Some((false, s)) => html! { p.said role="status" { (visible(&s)) } },
        Some((true, s)) => html! { p.error role="alert" { (visible(&s)) } },
    }
}

/// A field for a 6-digit code.
fn code_field(id: &str) -> Markup {
    html! {
        label for=(format!("code-{id}")) { "Code" }
        input id=(format!("code-{id}")) name="code" type="text" inputmode="numeric"
            autocomplete="one-time-code" pattern="[0-9 ]{6,7}" maxlength="7" size="7";
    }
}

/// `POST /factors`: starts an enrolment, shown with its QR code and secret.
pub(super) async fn add(
    State(state): State<DashState>,
    signed: Signed,
    headers: HeaderMap,
    Form(form): Form<FactorForm>,
) -> Response {
    if let Err(r) = signed.check(&state, &headers, &form.csrf).await {
        return r;
    }
    let session = &signed.0;
    let e = match state
        .engine
        .enroll_factor(&session.person, &form.label)
        .await
    {
        Ok(e) => e,
        Err(e @ EngineError::Invalid { .. }) => {
            return list(
                &state,
                session,
                Some((true, e.to_string())),
                StatusCode::BAD_REQUEST,
            )
            .await
        }
        Err(e) => return super::failed(&e),
    };
    let qr = crate::factor::qr_svg(&e.uri).unwrap_or_default();
    let body = html! {
        h1 { "Add an authenticator app" }
        ol {
            li { "Scan this QR code with the app (or type the secret in):"
                figure.qr { (PreEscaped(qr)) }
                p { "Secret: " code.secret { (e.secret) } }
            }
            li { "Enter the code the app shows, within 10 minutes:"
                form method="post" action=(format!("/factors/{}/confirm", e.id)) {
                    input type="hidden" name="csrf" value=(session.csrf);
                    (code_field("confirm"))
                    button.primary type="submit" { "Finish" }
                }
            }
        }
        p.note { "The secret is shown this once. Anyone who has it can make your codes: don't share it." }
    };
    shell(
        "Add an authenticator app",
        Some(session),
        Menu::Factors,
        body,
    )
    .into_response()
}

/// `POST /factors/{id}/confirm`: the app's first code finishes the enrolment.
pub(super) async fn confirm(
    State(state): State<DashState>,
    signed: Signed,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<FactorForm>,
) -> Response {
    if let Err(r) = signed.check(&state, &headers, &form.csrf).await {
        return r;
    }
    let session = &signed.0;
    let done = state
        .engine
        .confirm_factor(&session.person, &id, &form.code, Via::Dashboard)
        .await;
    factor_step(
        &state,
        session,
        done,
        "Added: approvals that need a second factor now take its codes.",
    )
    .await
}

/// `POST /factors/{id}/remove`: removes a factor after a fresh code.
pub(super) async fn remove(
    State(state): State<DashState>,
    signed: Signed,
    headers: HeaderMap,
    Path(id): Path<String>,
    Form(form): Form<FactorForm>,
) -> Response {
    if let Err(r) = signed.check(&state, &headers, &form.csrf).await {
        return r;
    }
    let session = &signed.0;
    let done = state
        .engine
        .remove_factor(&session.person, &id, &form.code, Via::Dashboard)
        .await;
    factor_step(&state, session, done, "Removed.").await
}

/// The factors page after a step: what it came to.
async fn factor_step(
    state: &DashState,
    session: &Session,
    done: Result<(), EngineError>,
    ok: &str,
) -> Response {
    match done {
        Ok(()) => {
            list(
                state,
                session,
                Some((false, ok.to_string())),
                StatusCode::OK,
            )
            .await
        }
        Err(e @ (EngineError::CodeRefused { .. } | EngineError::Invalid { .. })) => {
            list(
                state,
                session,
                Some((true, e.to_string())),
                StatusCode::FORBIDDEN,
            )
            .await
        }
        Err(e) => {
            let (status, why) = engine_words(&e);
            list(state, session, Some((true, why)), status).await
        }
    }
}

/// `GET /requests/{id}/confirm`: approve a request with a second factor.
pub(super) async fn confirm_page(
    State(state): State<DashState>,
    Signed(session): Signed,
    Path(typed): Path<String>,
) -> Response {
    match pending_request(&state, &session, &typed).await {
        Ok(a) => draw_confirm(&session, &a, None, StatusCode::OK),
        Err(r) => r,
    }
}

/// `POST /requests/{id}/confirm`: the code (or the session's open window) confirms the
/// person's approval, taken through the request kind's owner decision.
pub(super) async fn confirm_post(
    State(state): State<DashState>,
    signed: Signed,
    headers: HeaderMap,
    Path(typed): Path<String>,
    Form(form): Form<FactorForm>,
) -> Response {
    if let Err(r) = signed.check(&state, &headers, &form.csrf).await {
        return r;
    }
    let session = &signed.0;
    let a = match pending_request(&state, session, &typed).await {
        Ok(a) => a,
        Err(r) => return r,
    };
    let code = Some(form.code.trim()).filter(|c| !c.is_empty());
    let engine = &state.engine;
    let factor = match engine
        .step_up(&session.person, &surface(session), code, Via::Dashboard)
        .await
    {
        Ok(true) => true,
        Ok(false) => {
            let why = "Enter the code your authenticator app shows now.".to_string();
            return draw_confirm(session, &a, Some(why), StatusCode::BAD_REQUEST);
        }
        Err(e @ EngineError::CodeRefused { .. }) => {
            return draw_confirm(session, &a, Some(e.to_string()), StatusCode::FORBIDDEN)
        }
        Err(e) => return super::failed(&e),
    };
    let decision = OwnerDecision {
        verb: "approve".into(),
        reason: None,
        prefix: None,
        exact: false,
        for_: None,
        args: None,
        actor: session.person.clone(),
        via: Via::Dashboard,
        factor,
    };
    super::edit::decide_page(&state, session, &a, decision).await
}

/// The confirm page: what is approved, and the code field.
fn draw_confirm(
    session: &Session,
    a: &Approval,
    refused: Option<String>,
    status: StatusCode,
) -> Response {
    let args = serde_json::to_string_pretty(&a.args).unwrap_or_default();
    let body = html! {
        h1 { "Approve request " code { (a.short_id) } " with your second factor" }
        p {
            code { (visible(&a.agent)) } " wants to run " code { (visible(&a.tool)) }
            " · risk " (a.risk.score.as_str()) " · "
            a href=(format!("/requests/{}", a.id)) { "the request" }
        }
        @if let Some(s) = &a.summary { p { "Its summary: " q { (visible(s)) } } }
        figure.code { figcaption { "Arguments from the agent" } pre { code { (visible(&args)) } } }
        @if let Some(why) = refused { p.error role="alert" { (visible(&why)) " Nothing was decided." } }
        form method="post" action=(format!("/requests/{}/confirm", a.id)) {
            input type="hidden" name="csrf" value=(session.csrf);
            (code_field("step-up"))
            button.primary type="submit" { "Approve" }
            " " a href="/" { "Cancel" }
        }
        p.note { "A code confirms approvals on this browser for a few minutes after it: within that time, leave the field empty. To deny, use the request's card: a deny needs no code." }
    };
    let title = format!("Approve request {}", a.short_id);
    (status, shell(&title, Some(session), Menu::Pending, body)).into_response()
}
