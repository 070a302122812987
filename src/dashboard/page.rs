//! The page shell every page is drawn in, and the one-message pages (signed out, not
//! found, a refused link).

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Json;
use maud::{html, Markup, DOCTYPE};
use serde_json::json;

use crate::engine::Session;

/// Which page of the menu a page is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Menu {
    Pending,
    Drafts,
    Agents,
    Tasks,
    Runs,
    History,
    Audit,
    System,
    Factors,
    None,
}

/// A whole page: `title`, the menu for `who` (signed in) and `body`.
pub(super) fn shell(title: &str, who: Option<&Session>, menu: Menu, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                title { (title) " · gatebot" }
                link rel="stylesheet" href="/assets/app.css";
                script src="/assets/app.js" defer {}
            }
            body {
                header.top {
                    a.brand href="/" { "🛡 gatebot" }
                    @if let Some(s) = who {
                        nav {
                            a href="/" aria-current=[(menu == Menu::Pending).then_some("page")] { "Pending" }
                            a href="/drafts" aria-current=[(menu == Menu::Drafts).then_some("page")] { "Drafts" }
                            a href="/agents" aria-current=[(menu == Menu::Agents).then_some("page")] { "Agents" }
                            a href="/tasks" aria-current=[(menu == Menu::Tasks).then_some("page")] { "Tasks" }
                            a href="/runs" aria-current=[(menu == Menu::Runs).then_some("page")] { "Runs" }
                            a href="/history" aria-current=[(menu == Menu::History).then_some("page")] { "History" }
                            a href="/audit" aria-current=[(menu == Menu::Audit).then_some("page")] { "Audit" }
                            a href="/system" aria-current=[(menu == Menu::System).then_some("page")] { "System" }
                            a href="/factors" aria-current=[(menu == Menu::Factors).then_some("page")] { "Factors" }
                        }
                        form.signout method="post" action="/logout" {
                            input type="hidden" name="csrf" value=(s.csrf);
                            span.person { (s.person) }
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main id="main" { (body) }
            }
        }
    }
}

/// A page that says one thing: `heading`, `text`, and an optional next step.
pub(super) fn message(
    status: StatusCode,
    heading: &str,
    text: &str,
    next: Option<Markup>,
) -> Response {
    let body = html! {
        section.message {
            h1 { (heading) }
            p { (text) }
            @if let Some(n) = next { (n) }
        }
    };
    (status, shell(heading, None, Menu::None, body)).into_response()
}

/// What a step asked by a form came to: the lines said, or why not (a status and words).
pub(super) type Outcome = Result<Vec<String>, (StatusCode, String)>;

/// The answer to a form's POST: for the page's script (`Accept: application/json`)
/// `{"said": [...]}` or `{"error": "..."}`; for a plain form, back to `back` when done,
/// else a page that says why not.
pub(super) fn answered(headers: &HeaderMap, outcome: Outcome, back: &str) -> Response {
    let wants_json = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/json"));
    match (outcome, wants_json) {
        (Ok(said), true) => Json(json!({"said": said})).into_response(),
        (Err((status, message)), true) => (status, Json(json!({"error": message}))).into_response(),
        (Ok(_), false) => Redirect::to(back).into_response(),
        (Err((status, why)), false) => message(
            status,
            "Not done",
            &why,
            Some(html! { a href=(back) { "Back" } }),
        ),
    }
}

/// The answer to a form's POST whose next step is another page (`go`): for the page's
/// script `{"go": "…"}`, for a plain form a redirect.
pub(super) fn go_to(headers: &HeaderMap, go: &str) -> Response {
    let wants_json = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("application/json"));
    if wants_json {
        Json(json!({"go": go})).into_response()
    } else {
        Redirect::to(go).into_response()
    }
}

/// How to get a sign-in link, said wherever a page needs one.
pub(super) fn how_to_sign_in() -> Markup {
    html! {
        p { "To sign in, ask gatebot for a link: send " code { "/login" }
            " to the bot in a private chat, or run " code { "gatebot dashboard login" }
            " on the machine gatebot runs on. Each link signs in once and expires after a few minutes." }
    }
}
