//! The webhook listener: Meta calls `listen` (behind your TLS proxy, at the callback
//! URL given in the app dashboard); any path is accepted.
//!
//! 1. `GET`: the verification handshake. With `hub.mode=subscribe` and `hub.verify_token`
//!    equal to the configured token, the answer is `hub.challenge`; anything else is 403.
//! 2. `POST`: the raw body is read (at most [`MAX_BODY`]) and its `X-Hub-Signature-256`
//!    checked with the app secret before anything in it is read: a request without a
//!    good one gets 403 and is audited as an unauthorised attempt.
//! 3. A genuine body is answered 200 at once (Meta retries slow answers) and handled
//!    after ([`super::Inbox::receive`]); a webhook delivered twice acts once, since
//!    message ids are remembered.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, RawQuery, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::warn;

use super::graph::verify;
use super::Inbox;

/// The largest webhook body read.
const MAX_BODY: usize = 256 * 1024;

#[derive(Clone)]
struct Listener {
    inbox: Arc<Inbox>,
    tasks: TaskTracker,
}

/// Serves Meta's webhooks on `listen` until `stop` fires; messages being handled then
/// are finished first.
pub async fn run(inbox: Arc<Inbox>, listen: &str, stop: CancellationToken) {
    let Some(listener) = crate::chat::platform::webhook_listener("whatsapp", listen, &stop).await
    else {
        return;
    };
    let tasks = TaskTracker::new();
    let router = axum::Router::new()
        .fallback(receive)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(Listener {
            inbox,
            tasks: tasks.clone(),
        });
    if let Err(e) = axum::serve(listener, router)
        .with_graceful_shutdown(stop.cancelled_owned())
        .await
    {
        warn!(error = %e, "whatsapp: the webhook listener failed");
    }
    tasks.close();
    tasks.wait().await;
}

async fn receive(
    State(l): State<Listener>,
    method: Method,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if method == Method::GET {
        return handshake(&l.inbox, query.as_deref().unwrap_or_default());
    }
    if method != Method::POST {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    let signature = headers
        .get("x-hub-signature-256")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if !verify(l.inbox.app_secret.expose(), &body, signature) {
        l.inbox.forged(&body).await;
        return (StatusCode::FORBIDDEN, "invalid signature").into_response();
    }
    let Ok(value) = serde_json::from_slice::<Value>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let inbox = l.inbox.clone();
    l.tasks.spawn(async move { inbox.receive(value).await });
    StatusCode::OK.into_response()
}

/// The answer to Meta's verification `GET`.
fn handshake(inbox: &Inbox, query: &str) -> Response {
    let params: Vec<(String, String)> = serde_urlencoded::from_str(query).unwrap_or_default();
    let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let token = get("hub.verify_token").unwrap_or_default();
    if get("hub.mode") == Some("subscribe")
        && same(token.as_bytes(), inbox.verify_token.expose().as_bytes())
    {
        if let Some(challenge) = get("hub.challenge") {
            return (StatusCode::OK, challenge.to_string()).into_response();
        }
    }
    warn!("whatsapp: a webhook verification with a wrong or missing token refused");
    StatusCode::FORBIDDEN.into_response()
}

/// Whether `a` and `b` are equal, in time that depends only on their lengths.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_compare_whole() {
        assert!(super::same(b"abc", b"abc"));
        assert!(!super::same(b"abc", b"abd"));
        assert!(!super::same(b"abc", b"ab"));
    }
}
