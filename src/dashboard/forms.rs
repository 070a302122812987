//! What the pages share: an engine error in words, the person
//! signed in as the actor of a change, an instant as a page shows it, a query value
//! that must be one of a page's words, and a page that says an id names nothing.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{html, Markup};

use super::page::{shell, Menu};
use crate::approval::Via;
use crate::engine::{EngineError, Session};
use crate::trust::Actor;

/// An engine error as a page says it: its own words, or a generic line (and a log
/// line) for a fault of the store or the daemon.
pub(super) fn engine_words(e: &EngineError) -> (StatusCode, String) {
    match e {
        EngineError::Store(_) | EngineError::Internal { .. } => {
            tracing::warn!(error = %e, "dashboard: a step failed");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "gatebot could not do that; its log says why.".into(),
            )
        }
        EngineError::NotFound { .. } | EngineError::UnknownAgent(_) => {
            (StatusCode::NOT_FOUND, e.to_string())
        }
        EngineError::Invalid { .. } | EngineError::Ambiguous { .. } => {
            (StatusCode::BAD_REQUEST, e.to_string())
        }
        _ => (StatusCode::CONFLICT, e.to_string()),
    }
}

/// The person signed in, as trust records name who changed something.
pub(super) fn actor(session: &Session) -> Actor {
    Actor {
        name: session.person.clone(),
        via: Via::Dashboard,
    }
}

/// An instant: how long ago (or how soon), with the clock time on hover and for
/// machines.
pub(super) fn when(at: i64, now: i64) -> Markup {
    html! {
        time datetime=(crate::time::format_ms(at)) title=(crate::time::clock(at)) {
            (crate::words::relative(at, now))
        }
    }
}

/// A form's text field: trimmed, `None` when blank.
pub(super) fn given(s: &str) -> Option<String> {
    Some(s.trim().to_string()).filter(|s| !s.is_empty())
}

/// An agent filter as typed: the name, `None` when blank, or `None` with a note when it
/// is no agent name (the page then shows every agent's).
pub(super) fn agent_given(s: &str, notes: &mut Vec<String>) -> Option<String> {
    match given(s) {
        Some(a) if !crate::names::valid_agent_name(&a) => {
            notes.push(format!(
                "“{}” is not an agent name (letters, digits, '-', '_' or '.'); showing every agent's.",
                crate::names::visible(&a)
            ));
            None
        }
        other => other,
    }
}

/// A page cursor as typed: an id (a ULID), or `None` to start from the top.
pub(super) fn cursor_given(s: &str) -> Option<String> {
    crate::chat::conversation::full_id(s.trim())
}

/// The query string of a page's filters: those that are not blank, in order.
pub(super) fn query(pairs: &[(&str, &String)]) -> String {
    serde_urlencoded::to_string(
        pairs
            .iter()
            .filter(|(_, v)| !v.trim().is_empty())
            .collect::<Vec<_>>(),
    )
    .unwrap_or_default()
}

/// The page for an id that names nothing (or a name gatebot does not know).
pub(super) fn not_found(session: &Session, menu: Menu, why: &str, back: (&str, &str)) -> Response {
    let body = html! {
        section.message {
            h1 { "Not found" }
            p { (crate::names::visible(why)) }
            p { a href=(back.0) { (back.1) } }
        }
    };
    (
        StatusCode::NOT_FOUND,
        shell("Not found", Some(session), menu, body),
    )
        .into_response()
}

/// A note above a page's list when a filter in the URL is not one of the page's words
/// (the page shows everything instead; nothing typed is lost: the form keeps it).
pub(super) fn bad_filter(name: &str, got: &str, allowed: &[&str]) -> String {
    format!(
        "The {name} “{}” is not one this page knows ({}); showing all.",
        crate::names::visible(got),
        allowed.join(", ")
    )
}

/// The dashboard page a form was sent from (its `Referer`, same origin only: the
/// dashboard's Referrer-Policy sends it only there), to go back to after a plain form's
/// step; `None` for another site's or a missing one.
pub(super) fn referring_page(headers: &axum::http::HeaderMap) -> Option<String> {
    use axum::http::header;
    let referer = headers.get(header::REFERER)?.to_str().ok()?;
    let host = headers.get(header::HOST)?.to_str().ok()?;
    let rest = referer
        .strip_prefix("http://")
        .or_else(|| referer.strip_prefix("https://"))?;
    let path = rest.strip_prefix(host)?;
    let ours = path.starts_with('/')
        && !path.starts_with("//")
        && !path.contains('#')
        && path.bytes().all(|b| b.is_ascii_graphic());
    ours.then(|| path.to_string())
}
