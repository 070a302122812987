//! The dashboard's stylesheet and script, embedded in the binary: no CDN, no build
//! step. The script only enhances pages that work without it (live updates, keys,
//! countdowns); it is the only script a page may run (the CSP allows no other).

use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

const CSS: &str = include_str!("assets/app.css");
const JS: &str = include_str!("assets/app.js");

pub(super) async fn asset(Path(name): Path<String>) -> Response {
    let (body, kind) = match name.as_str() {
        "app.css" => (CSS, "text/css; charset=utf-8"),
        "app.js" => (JS, "text/javascript; charset=utf-8"),
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(kind)),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
        body,
    )
        .into_response()
}
