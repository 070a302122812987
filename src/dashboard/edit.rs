//! Edit, then approve: an owner changes a pending request's arguments, sees how gatebot
//! would judge the edited call (its risk, the policy's reason) and what changed (a diff
//! of the arguments as asked and as edited), and approves the call as edited.
//!
//! `GET /requests/{id}/edit` shows the arguments in a text box; `POST` with
//! `step=check` validates them (JSON, an object, within the request size) and shows
//! the preview; only `step=approve`, sent by the preview's own button with the
//! previewed arguments, decides, through the request kind's owner decision (as
//! `gatebot decide ID approve --args FILE` does). Nothing the owner did not see is
//! approved: the preview's button carries exactly the call it shows.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Form;
use maud::{html, Markup};
use serde::Deserialize;
use serde_json::Value;

use super::forms::{engine_words, not_found};
use super::page::{shell, Menu};
use super::signin::Signed;
use super::DashState;
use crate::approval::{Approval, Status, Via};
use crate::chat::conversation::owner::{OwnerDecision, Refused};
use crate::chat::conversation::{self};
use crate::engine::{EngineError, Session};
use crate::names::visible;
use crate::policy::{Action, RiskScore, Verdict};

/// The most bytes the edit form may send: its arguments, URL-encoded (each byte up to
/// three), and a little more; the arguments themselves are held to the request size
/// (`[queue] max_body_bytes`) when checked.
pub(super) const MAX_FORM_BYTES: usize = 4 * 1024 * 1024;

/// What the edit form sends.
#[derive(Deserialize)]
pub(super) struct EditForm {
    csrf: String,
    /// The arguments as typed (`check`), or as previewed (`approve`).
    args: String,
    #[serde(default)]
    step: String,
}

/// What the page shows under the text box after a check.
enum Checked {
    /// Not yet checked.
    Nothing,
    /// Why the text is not arguments gatebot can judge.
    Refused(String),
    /// How gatebot would judge the edited call.
    Preview(Box<Verdict>, Value),
}

/// `GET /requests/{id}/edit`: the arguments as asked, in a text box.
pub(super) async fn page(
    State(state): State<DashState>,
    Signed(session): Signed,
    Path(typed): Path<String>,
) -> Response {
    let a = match pending_request(&state, &session, &typed).await {
        Ok(a) => a,
        Err(r) => return r,
    };
    let text = serde_json::to_string_pretty(&a.args).unwrap_or_default();
    draw(&session, &a, &text, &Checked::Nothing, StatusCode::OK)
}

/// `POST /requests/{id}/edit`: checks the edited arguments (the preview), or approves
/// the call as previewed.
pub(super) async fn post(
    State(state): State<DashState>,
    signed: Signed,
    headers: HeaderMap,
    Path(typed): Path<String>,
    Form(form): Form<EditForm>,
) -> Response {
    if let Err(r) = signed.check(&state, &headers, &form.csrf).await {
        return r;
    }
    let session = &signed.0;
    let a = match pending_request(&state, session, &typed).await {
        Ok(a) => a,
        Err(r) => return r,
    };
    let edited = match parse(&form.args) {
        Ok(v) => v,
        Err(why) => {
            let refused = Checked::Refused(why);
            return draw(session, &a, &form.args, &refused, StatusCode::BAD_REQUEST);
        }
    };
    if form.step == "approve" {
        return approve(&state, session, &a, edited).await;
    }
    match state.engine.score_edit(&a.id, edited.clone()).await {
        Ok((_, verdict)) => {
            let preview = Checked::Preview(Box::new(verdict), edited);
            draw(session, &a, &form.args, &preview, StatusCode::OK)
        }
        Err(e @ EngineError::Invalid { .. }) => {
            let refused = Checked::Refused(e.to_string());
            draw(session, &a, &form.args, &refused, StatusCode::BAD_REQUEST)
        }
        Err(e) => refused_step(session, &a, &e),
    }
}

/// The pending request `typed` names, or the page that says why there is none to act on
/// (this page and the step-up confirm page).
pub(super) async fn pending_request(
    state: &DashState,
    session: &Session,
    typed: &str,
) -> Result<Approval, Response> {
    let a = match state.engine.lookup(typed, false).await {
        Ok(a) => a,
        Err(e @ (EngineError::NotFound { .. } | EngineError::Ambiguous { .. })) => {
            let back = ("/", "The pending page");
            return Err(not_found(session, Menu::Pending, &e.to_string(), back));
        }
        Err(e) => return Err(super::failed(&e)),
    };
    if a.status != Status::Pending {
        let e = EngineError::AlreadySettled(Box::new(a.clone()));
        return Err(refused_step(session, &a, &e));
    }
    Ok(a)
}

/// The arguments as typed: a JSON object, or why not (with where, for a syntax error).
fn parse(text: &str) -> Result<Value, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| {
        format!(
            "This is not JSON: {} (line {}, column {}).",
            e.to_string().split(" at line").next().unwrap_or_default(),
            e.line(),
            e.column()
        )
    })?;
    if !v.is_object() {
        return Err("The arguments must be a JSON object ({ … }), like the agent's.".into());
    }
    Ok(v)
}

/// Approves `a` as edited, through the request kind's owner decision.
async fn approve(state: &DashState, session: &Session, a: &Approval, edited: Value) -> Response {
    let decision = OwnerDecision {
        verb: "approve".into(),
        reason: None,
        prefix: None,
        exact: false,
        for_: None,
        args: Some(edited),
        actor: session.person.clone(),
        via: Via::Dashboard,
        factor: false,
    };
    decide_page(state, session, a, decision).await
}

/// Takes `decision` on the pending request `a` through the request kind's owner
/// decision, and answers with a page saying what it came to (this page's approval as
/// edited, and the step-up confirm page's).
pub(super) async fn decide_page(
    state: &DashState,
    session: &Session,
    a: &Approval,
    decision: OwnerDecision,
) -> Response {
    let engine = &state.engine;
    let subject = engine.identify(&a.id).await.ok();
    match conversation::decide(engine, subject.as_ref(), &a.id, decision).await {
        Ok(d) => {
            let body = html! {
                section.message {
                    h1 { "Done" }
                    ul { @for l in &d.said { li { (visible(l)) } } }
                    p {
                        a href="/" { "Back to the pending page" }
                        " · " a href=(format!("/requests/{}", a.id)) { "The request" }
                    }
                }
            };
            shell("Done", Some(session), Menu::Pending, body).into_response()
        }
        Err(Refused::Unclear(m)) => message(session, a, StatusCode::BAD_REQUEST, &m),
        Err(Refused::Settled { message: m, .. }) => message(session, a, StatusCode::CONFLICT, &m),
        Err(Refused::Engine(e)) => refused_step(session, a, &e),
    }
}

/// A page saying why the step on `a` was not taken.
fn refused_step(session: &Session, a: &Approval, e: &EngineError) -> Response {
    let (status, why) = engine_words(e);
    message(session, a, status, &why)
}

fn message(session: &Session, a: &Approval, status: StatusCode, why: &str) -> Response {
    let body = html! {
        section.message {
            h1 { "Not done" }
            p { (visible(why)) }
            p {
                a href="/" { "Back to the pending page" }
                " · " a href=(format!("/requests/{}", a.id)) { "The request" }
            }
        }
    };
    (
        status,
        shell("Not done", Some(session), Menu::Pending, body),
    )
        .into_response()
}

/// The edit page: the request, the text box holding `text`, and what a check found.
fn draw(
    session: &Session,
    a: &Approval,
    text: &str,
    checked: &Checked,
    status: StatusCode,
) -> Response {
    let action = format!("/requests/{}/edit", a.id);
    let body = html! {
        h1 { "Edit request " code { (a.short_id) } ", then approve" }
        p {
            code { (visible(&a.agent)) } " wants to run " code { (visible(&a.tool)) }
            " · risk " (a.risk.score.as_str()) " as asked · "
            a href=(format!("/requests/{}", a.id)) { "the request" }
        }
        @if let Some(s) = &a.summary { p { "Its summary: " q { (visible(s)) } } }
        (preview(session, a, checked, &action))
        form.edit method="post" action=(action) {
            input type="hidden" name="csrf" value=(session.csrf);
            input type="hidden" name="step" value="check";
            label for="args" { "The arguments, as JSON" }
            textarea id="args" name="args" rows="14" spellcheck="false" autocomplete="off" { (text) }
            p {
                button.primary type="submit" { "Check the edit" }
                " " a href="/" { "Cancel" }
            }
        }
    };
    let title = format!("Edit request {}", a.short_id);
    (status, shell(&title, Some(session), Menu::Pending, body)).into_response()
}

/// What a check found: why the text was refused, or the edited call's verdict and
/// diff with the button that approves exactly that call.
fn preview(session: &Session, a: &Approval, checked: &Checked, action: &str) -> Markup {
    match checked {
        Checked::Nothing => html! {
            p.note { "Change the arguments below, then check the edit: gatebot shows how it would judge the edited call before you approve it." }
        },
        Checked::Refused(why) => html! {
            p.error role="alert" { (visible(why)) " Nothing was decided." }
        },
        Checked::Preview(verdict, edited) => {
            let asked = serde_json::to_string_pretty(&a.args).unwrap_or_default();
            let now = serde_json::to_string_pretty(edited).unwrap_or_default();
            let diff = crate::diff::unified("as asked", "as edited", &asked, &now);
            let same = diff.is_empty();
            html! {
                section.preview aria-label="The edited call" {
                    h2 { "The edited call" }
                    dl.fields {
                        div { dt { "Risk" } dd { (risk_words(a.risk.score, verdict.risk.score)) } }
                        div { dt { "gatebot would" } dd { (verdict_words(verdict)) } }
                    }
                    @if same {
                        p.note { "These are the arguments as asked: approve the request on its card instead." }
                    } @else {
                        figure.code {
                            figcaption { "What changes" }
                            pre.diff { code { (diff_lines(&diff)) } }
                        }
                        p.note { (client_words(a, verdict)) }
                        form method="post" action=(action) {
                            input type="hidden" name="csrf" value=(session.csrf);
                            input type="hidden" name="step" value="approve";
                            input type="hidden" name="args" value=(edited.to_string());
                            button.primary type="submit" { "Approve as edited" }
                        }
                    }
                }
            }
        }
    }
}

/// A unified diff, a line at a time, marked as added, removed or a hunk's heading (the
/// stylesheet colours them; the signs say it without colour).
fn diff_lines(diff: &str) -> Markup {
    html! {
        @for l in diff.lines() {
            @let class = if l.starts_with("+++") || l.starts_with("---") {
                "file"
            } else if l.starts_with('+') {
                "add"
            } else if l.starts_with('-') {
                "del"
            } else if l.starts_with("@@") {
                "hunk"
            } else {
                "same"
            };
            span class=(class) { (visible(l)) } "\n"
        }
    }
}

/// "high (was medium)", or "medium, as asked".
fn risk_words(was: RiskScore, now: RiskScore) -> String {
    if was == now {
        format!("{}, as asked", now.as_str())
    } else {
        format!("{} (was {})", now.as_str(), was.as_str())
    }
}

/// What the policy would do with the edited call if the agent asked it now.
fn verdict_words(v: &Verdict) -> String {
    let what = match v.action {
        Action::Allow => "let it run",
        Action::Ask => "ask an owner",
        Action::Block => "block it",
    };
    format!("{what}: {}", v.reason)
}

/// What approving as edited does for this agent's client.
fn client_words(a: &Approval, v: &Verdict) -> &'static str {
    if a.accepts_edits {
        "The agent's client takes the edited call back: it runs the call as edited, at once."
    } else if v.action == Action::Block || v.risk.score == RiskScore::Critical {
        "The agent's client cannot take an edited call back: the agent is denied and told the \
         exact call to make, which is then judged like any call (a grant never covers a \
         blocked or critical call)."
    } else {
        "The agent's client cannot take an edited call back: the agent is denied and told the \
         exact call to make, and that call runs once without asking if it comes within the hour."
    }
}
