//! The web dashboard: what waits for owners, of every kind, on a page of its own,
//! served by the daemon on `[dashboard] listen`.
//!
//! - [`signin`]: sign-in links used up by a POST, sessions in the database, the
//!   [`signin::Signed`] extractor every page takes, signing out.
//! - [`pending`]: the pending page: every open subject's card, drawn by its kind
//!   through the registry ([`crate::chat::conversation::render`]), filtered and paged;
//!   its buttons are the chats' buttons, taken through the kind's owner decision
//!   ([`crate::chat::conversation::decide`]), as `gatebot decide` takes them.
//! - [`batch`]: approving or denying several pending requests at once, after a page
//!   that counts what will happen (never a critical request approved so). [`edit`]: a
//!   request's arguments edited, the edited call judged and diffed, approved as edited.
//! - [`drafts`]: draft-only agents' kept calls, discarded or handed on as tasks.
//! - [`agents`], [`tasks`], [`runs`]: each agent's tier, pause, evidence, proposals and
//!   grants; the inbox's tasks (handed over, cancelled, retried here); workflow runs as
//!   timelines. [`forms`]: what those pages share (an engine error in words, the actor).
//! - [`card`]: a card as HTML (the web's renderer, beside Telegram's and Slack's).
//! - [`live`]: server-sent events from the engine's bus, so pages follow changes.
//! - [`history`]: every request with its outcome, searched, filtered, paged and
//!   exported; a request's own page. [`audit`]: the trail and its chain's state.
//!   [`system`]: storage, chat platforms, version, uptime.
//! - [`page`]: the page shell and the words shared by pages; [`assets`]: the stylesheet
//!   and the one script, embedded in the binary.
//!
//! Every response carries a Content-Security-Policy without inline script or style,
//! `frame-ancestors 'none'`, no referrer to other sites (same-origin: a form's POST
//! still names its origin, which [`signin::Signed::check`] reads), and `no-store`:
//! pages hold owners' data.
//! Every state change is a POST with the session's CSRF token. Agent text reaches HTML
//! only through maud's escaping.
//!
//! To add a page: its module here (a handler taking [`signin::Signed`], drawn with
//! [`page::shell`]; a POST checks [`signin::Signed::check`] first and answers with
//! [`page::answered`]), its routes in [`router`], and its entry in `page::Menu` and the
//! nav: 3 files. A new conversation kind needs none: the pending page draws its cards and
//! takes its buttons through the registry.

mod agents;
mod assets;
mod audit;
mod batch;
pub mod card;
mod drafts;
mod edit;
mod factors;
mod forms;
mod history;
mod live;
mod page;
mod pending;
mod runs;
pub mod signin;
mod system;
mod tasks;

use std::sync::Arc;

use axum::extract::DefaultBodyLimit;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use tokio_util::sync::CancellationToken;

use crate::engine::Engine;
pub use history::keep_index;

/// The most bytes a form may send (a reason, filters, a batch of ids).
const MAX_FORM_BYTES: usize = 64 * 1024;

/// What every handler of the dashboard has.
#[derive(Clone)]
pub struct DashState {
    pub engine: Arc<Engine>,
    /// Fires at shutdown: live streams end.
    pub shutdown: CancellationToken,
}

/// The dashboard's routes.
pub fn router(engine: Arc<Engine>, shutdown: CancellationToken) -> Router {
    system::mark_start();
    Router::new()
        .route("/", get(pending::page))
        .route("/pending/list", get(pending::list))
        .route("/decide", post(pending::decide))
        .route("/batch", post(batch::batch))
        .route("/drafts", get(drafts::page))
        .route("/drafts/discard", post(drafts::discard))
        .route("/drafts/hand", post(drafts::hand))
        .route("/events", get(live::events))
        .route("/agents", get(agents::list))
        .route("/agents/{name}", get(agents::page))
        .route("/agents/{name}/tier", post(agents::set_tier))
        .route("/agents/{name}/pause", post(agents::pause))
        .route("/agents/{name}/resume", post(agents::resume))
        .route("/agents/{name}/proposal", post(agents::proposal))
        .route("/agents/{name}/assess", post(agents::assess))
        .route("/agents/{name}/revoke", post(agents::revoke))
        .route("/tasks", get(tasks::page).post(tasks::add))
        .route("/tasks/{id}/cancel", post(tasks::cancel))
        .route("/tasks/{id}/retry", post(tasks::retry))
        .route("/tasks/{id}/answer", post(tasks::answer))
        .route("/runs", get(runs::list))
        .route("/runs/{id}", get(runs::page))
        .route("/history", get(history::page))
        .route("/history.csv", get(history::csv))
        .route("/history.json", get(history::json))
        .route("/requests/{id}", get(history::request))
        .route(
            "/requests/{id}/edit",
            get(edit::page)
                .post(edit::post)
                .layer(DefaultBodyLimit::max(edit::MAX_FORM_BYTES)),
        )
        .route(
            "/requests/{id}/confirm",
            get(factors::confirm_page).post(factors::confirm_post),
        )
        .route("/factors", get(factors::page).post(factors::add))
        .route("/factors/{id}/confirm", post(factors::confirm))
        .route("/factors/{id}/remove", post(factors::remove))
        .route("/audit", get(audit::page))
        .route("/system", get(system::page))
        .route("/signin", get(signin::signed_out))
        .route("/login/{token}", get(signin::link_page))
        .route("/login", post(signin::sign_in))
        .route("/logout", post(signin::sign_out))
        .route("/assets/{name}", get(assets::asset))
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_FORM_BYTES))
        .layer(axum::middleware::map_response(secured))
        .with_state(DashState { engine, shutdown })
}

/// The headers every answer carries (see the module docs).
async fn secured(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        ),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    r
}

async fn not_found() -> Response {
    page::message(
        StatusCode::NOT_FOUND,
        "Not found",
        "There is no page here.",
        None,
    )
}

/// An answer for a failed step: the engine's words, or a generic line for a fault. A
/// storage fault (the database deleted, replaced or full) says what it is and what to
/// do, on every page: it is what an owner must act on (the sign-in check meets it first).
fn failed(e: &crate::engine::EngineError) -> Response {
    if let crate::engine::EngineError::Store(store) = e {
        if let Some(fault) = store.fault() {
            return page::message(
                StatusCode::SERVICE_UNAVAILABLE,
                "The database cannot keep what it is sent",
                &fault.message,
                None,
            );
        }
    }
    tracing::warn!(error = %e, "dashboard: a step failed");
    page::message(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Something went wrong",
        "gatebot could not do that; its log says why.",
        None,
    )
    .into_response()
}
