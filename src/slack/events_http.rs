//! HTTP mode: Slack POSTs events, interactions and slash commands to `events_listen`
//! (behind your HTTPS reverse proxy); any path is accepted.
//!
//! 1. Every request must carry a valid `X-Slack-Signature` (HMAC-SHA256 of
//!    `v0:{timestamp}:{body}` with the signing secret) and an `X-Slack-Request-Timestamp`
//!    within 5 minutes of now; anything else gets 401 and is not looked at further.
//! 2. JSON bodies are Events API calls: `url_verification` is answered with its
//!    challenge; an `event_callback` is de-duplicated by `event_id` (Slack retries).
//! 3. Form bodies are interactions (`payload=` JSON) or slash commands (`command=`).
//! 4. The answer is an empty 200 at once; the work runs on its own task.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use slack_morphism::prelude::SlackSigningSecret;
use slack_morphism::signature_verifier::SlackEventSignatureVerifier;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::{Received, Slack, SlackConfig};

#[derive(Clone)]
struct HttpState {
    slack: Arc<Slack>,
    verifier: SlackEventSignatureVerifier,
}

/// Serves Slack's requests on `events_listen` until `stop` fires.
pub async fn run(slack: Arc<Slack>, config: &SlackConfig, stop: CancellationToken) {
    let (Some(listen), Some(secret)) = (&config.events_listen, &config.signing_secret) else {
        warn!("slack: HTTP mode needs events_listen and signing_secret; inbound Slack is off");
        return;
    };
    let state = HttpState {
        slack,
        verifier: SlackEventSignatureVerifier::new(&SlackSigningSecret(secret.expose().into())),
    };
    let Some(listener) = crate::chat::platform::webhook_listener("slack", listen, &stop).await
    else {
        return;
    };
    let router = axum::Router::new().fallback(receive).with_state(state);
    if let Err(e) = axum::serve(listener, router)
        .with_graceful_shutdown(stop.cancelled_owned())
        .await
    {
        warn!(error = %e, "slack: the HTTP listener failed");
    }
}

async fn receive(State(st): State<HttpState>, headers: HeaderMap, body: Bytes) -> Response {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let Ok(body) = std::str::from_utf8(&body) else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let (Some(sig), Some(ts)) = (
        header(SlackEventSignatureVerifier::SLACK_SIGNED_HASH_HEADER),
        header(SlackEventSignatureVerifier::SLACK_SIGNED_TIMESTAMP),
    ) else {
        warn!("slack: request without a signature refused");
        return (StatusCode::UNAUTHORIZED, "missing Slack signature").into_response();
    };
    if let Err(e) = st.verifier.verify(sig, body, ts) {
        warn!(error = %e, "slack: request with a bad or stale signature refused");
        return (StatusCode::UNAUTHORIZED, "invalid Slack signature").into_response();
    }
    let inbound: Received = if body.trim_start().starts_with('{') {
        let Ok(v) = serde_json::from_str::<Value>(body) else {
            return StatusCode::BAD_REQUEST.into_response();
        };
        match v["type"].as_str() {
            Some("url_verification") => {
                return Json(json!({"challenge": v["challenge"]})).into_response()
            }
            Some("event_callback") => Received::Event(v),
            _ => return StatusCode::OK.into_response(),
        }
    } else {
        let Ok(form) = serde_urlencoded::from_str::<HashMap<String, String>>(body) else {
            return StatusCode::BAD_REQUEST.into_response();
        };
        if let Some(payload) = form.get("payload") {
            match serde_json::from_str(payload) {
                Ok(v) => Received::Interaction(v),
                Err(_) => return StatusCode::BAD_REQUEST.into_response(),
            }
        } else if form.contains_key("command") {
            Received::SlashCommand(json!(form))
        } else {
            return StatusCode::OK.into_response();
        }
    };
    st.slack.spawn(inbound);
    StatusCode::OK.into_response()
}
