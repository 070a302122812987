//! The webhook listener: the gateway POSTs inbound texts and delivery statuses to
//! `listen` (behind your TLS proxy, at `public_url`); any path is accepted.
//!
//! 1. The form body is read (at most [`MAX_BODY`]) and its signature checked
//!    ([`Gateway::genuine`]) before anything in it is acted on: a request without a
//!    good one gets 403 and is audited as an unauthorised attempt.
//! 2. A delivery status is logged, and counted when the text failed.
//! 3. An inbound text is handled at once ([`super::Texts::text`]) and answered in the
//!    webhook's own answer (TwiML); a retried webhook (a message id seen before) is
//!    answered with nothing and decides nothing.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::provider::{Gateway, Params, Webhook};
use super::Texts;

/// The largest webhook body read.
const MAX_BODY: usize = 64 * 1024;

/// Serves the gateway's webhooks on `listen` until `stop` fires.
pub async fn run<G: Gateway>(texts: Arc<Texts<G>>, listen: &str, stop: CancellationToken) {
    let Some(listener) = crate::chat::platform::webhook_listener("sms", listen, &stop).await else {
        return;
    };
    let router = axum::Router::new()
        .fallback(receive::<G>)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(texts);
    if let Err(e) = axum::serve(listener, router)
        .with_graceful_shutdown(stop.cancelled_owned())
        .await
    {
        warn!(error = %e, "sms: the webhook listener failed");
    }
}

async fn receive<G: Gateway>(
    State(texts): State<Arc<Texts<G>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Ok(params) = serde_urlencoded::from_bytes::<Params>(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    if !texts.gateway.genuine(&headers, &params) {
        texts.forged(&params).await;
        return (StatusCode::FORBIDDEN, "invalid signature").into_response();
    }
    let answer = match texts.gateway.read(&params) {
        Webhook::Message { id, from, body } => texts.text(&id, &from, &body).await,
        Webhook::Status {
            id,
            to,
            status,
            error,
        } => {
            texts.status(&id, &to, &status, error.as_deref());
            None
        }
        Webhook::Other => None,
    };
    let (content_type, body) = texts.gateway.answer(answer.as_deref());
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}
