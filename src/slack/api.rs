//! Slack Web API calls through slack-morphism, with raw JSON in and out.
//!
//! slack-morphism does the HTTP, the bearer token and the error decoding (`ok: false`,
//! 429 with `Retry-After`); gatebot builds the Block Kit JSON itself (see
//! [`super::render`]) so what is sent is exactly what the tests read. Every error
//! leaves here as a [`SendError`] whose text has the tokens scrubbed out.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use slack_morphism::errors::SlackClientError;
use slack_morphism::prelude::*;
use slack_morphism::{SlackClientApiCallContext, SlackClientHttpConnector};
use tracing::debug;

use tokio_util::sync::CancellationToken;

use crate::chat::platform::SendError;
use crate::metrics::Metrics;
use crate::retry::retry;
use crate::slack::SlackConfig;

/// When Slack says 429 without a `Retry-After`, wait this long.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(5);

/// Longest wait for one Web API call.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Slack API error codes worth retrying; every other `ok: false` is permanent.
const TRANSIENT_CODES: &[&str] = &[
    "ratelimited",
    "internal_error",
    "fatal_error",
    "service_unavailable",
    "request_timeout",
    "team_added_to_org",
];

/// Who the bot is, from `auth.test`: how its own messages are told apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub user_id: String,
    pub bot_id: String,
    /// Names, for the log.
    pub user: String,
    pub team: String,
}

pub struct SlackApi {
    client: SlackClient<SlackClientHyperHttpsConnector>,
    identity: tokio::sync::OnceCell<Identity>,
    bot: SlackApiToken,
    app: Option<SlackApiToken>,
    secrets: Vec<String>,
    /// Where 429s are counted.
    metrics: Option<Arc<Metrics>>,
}

impl SlackApi {
    /// A client for `config.api_url`. Plain `http://` is accepted (self-hosted proxies,
    /// tests); Slack itself is `https://`.
    pub fn new(config: &SlackConfig) -> anyhow::Result<SlackApi> {
        let https = crate::https::connector()?;
        let connector = SlackClientHyperConnector::with_connector(https)
            .with_slack_api_url(config.api_url.trim_end_matches('/'));
        let token = |s: &str| SlackApiToken::new(SlackApiTokenValue(s.to_string()));
        let mut secrets = vec![config.bot_token.expose().to_string()];
        secrets.extend(config.app_token.iter().map(|s| s.expose().to_string()));
        secrets.extend(config.signing_secret.iter().map(|s| s.expose().to_string()));
        Ok(SlackApi {
            client: SlackClient::new(connector),
            identity: tokio::sync::OnceCell::new(),
            bot: token(config.bot_token.expose()),
            app: config.app_token.as_ref().map(|t| token(t.expose())),
            secrets,
            metrics: None,
        })
    }

    /// Counts every 429 in `metrics` (`gatebot_chat_rate_limited_total`).
    #[must_use]
    pub fn counting(mut self, metrics: Arc<Metrics>) -> SlackApi {
        self.metrics = Some(metrics);
        self
    }

    /// Calls a Web API method with the bot token (`chat.postMessage`, …).
    pub async fn call(&self, method: &str, body: &Value) -> Result<Value, SendError> {
        self.call_with(&self.bot, method, body).await
    }

    /// Who the bot is (`auth.test`, asked once it succeeds).
    pub async fn identity(&self) -> Result<&Identity, SendError> {
        self.identity
            .get_or_try_init(|| async {
                let me = self.call("auth.test", &serde_json::json!({})).await?;
                let field = |k: &str| me[k].as_str().unwrap_or_default().to_string();
                Ok(Identity {
                    user_id: field("user_id"),
                    bot_id: field("bot_id"),
                    user: field("user"),
                    team: field("team"),
                })
            })
            .await
    }

    /// Who the bot is, if `auth.test` has answered.
    pub fn known_identity(&self) -> Option<&Identity> {
        self.identity.get()
    }

    /// Calls a read method (`conversations.replies`, …) with the bot token: Slack
    /// takes their arguments in the query string, not as JSON.
    pub async fn get(&self, method: &str, args: &[(&str, &str)]) -> Result<Value, SendError> {
        let session = self.client.open_session(&self.bot);
        let params: Vec<(&str, Option<&str>)> = args.iter().map(|(k, v)| (*k, Some(*v))).collect();
        let call = session
            .http_session_api
            .http_get::<Value, _, _>(method, &params, None);
        match tokio::time::timeout(CALL_TIMEOUT, call).await {
            Ok(r) => r.map_err(|e| self.classify(method, e)),
            Err(_) => Err(SendError::Transient(format!("{method}: timed out"))),
        }
    }

    /// Calls a method, waiting out a rate limit (429) up to `attempts - 1` times, but
    /// only when Slack's `Retry-After` is at most `max_wait`: a wait any longer would
    /// not help whoever is waiting for the answer (a user, a 3-second trigger id).
    pub async fn call_patiently(
        &self,
        method: &str,
        body: &Value,
        attempts: u32,
        max_wait: Duration,
    ) -> Result<Value, SendError> {
        // Not cancelled at shutdown: whoever waits for this answer is still there.
        let never = CancellationToken::new();
        let result = retry(
            &never,
            || self.call(method, body),
            |e, attempt| match e {
                SendError::RetryAfter(wait) if attempt + 1 < attempts && *wait <= max_wait => {
                    debug!(method, ?wait, "slack: rate limited; waiting as asked");
                    Some(*wait)
                }
                _ => None,
            },
        )
        .await;
        result.unwrap_or_else(|| Err(SendError::Transient(format!("{method}: stopped"))))
    }

    /// Posts `body` to an interaction's `response_url` (no token: the URL is the
    /// credential, so it is kept out of logs and errors).
    pub async fn respond(&self, response_url: &str, body: &Value) -> Result<(), SendError> {
        let url = url::Url::parse(response_url)
            .ok()
            .filter(|u| matches!(u.scheme(), "https" | "http"))
            .ok_or_else(|| SendError::Permanent("response_url is not an http(s) URL".into()))?;
        let span = tracing::debug_span!("slack response_url");
        let context = SlackClientApiCallContext {
            rate_control_params: None,
            token: None,
            tracing_span: &span,
            is_sensitive_url: true,
        };
        let call = self
            .client
            .http_api
            .connector
            .http_post_uri::<Value, Value>(url, body, context);
        match tokio::time::timeout(CALL_TIMEOUT, call).await {
            Ok(r) => r.map(|_| ()).map_err(|e| self.classify("response_url", e)),
            Err(_) => Err(SendError::Transient("response_url: timed out".into())),
        }
    }

    /// Calls a method that needs the app-level token (`apps.connections.open`).
    pub async fn call_app(&self, method: &str, body: &Value) -> Result<Value, SendError> {
        let Some(app) = &self.app else {
            return Err(SendError::Permanent(
                "no app token (xapp-…) configured".into(),
            ));
        };
        self.call_with(app, method, body).await
    }

    async fn call_with(
        &self,
        token: &SlackApiToken,
        method: &str,
        body: &Value,
    ) -> Result<Value, SendError> {
        let session = self.client.open_session(token);
        let call = session
            .http_session_api
            .http_post::<Value, Value>(method, body, None);
        // hyper's client has no timeout of its own: a silent network must not hang delivery.
        match tokio::time::timeout(CALL_TIMEOUT, call).await {
            Ok(r) => r.map_err(|e| self.classify(method, e)),
            Err(_) => Err(SendError::Unknown(format!("{method}: timed out"))),
        }
    }

    fn classify(&self, method: &str, e: SlackClientError) -> SendError {
        match e {
            SlackClientError::RateLimitError(r) => {
                if let Some(m) = &self.metrics {
                    m.chat_rate_limited(&super::PLATFORM);
                }
                SendError::RetryAfter(r.retry_after.unwrap_or(DEFAULT_RETRY_AFTER))
            }
            SlackClientError::ApiError(a) => {
                let msg = self.scrub(&format!("{method}: {}", a.code));
                if TRANSIENT_CODES.contains(&a.code.as_str()) {
                    SendError::Transient(msg)
                } else {
                    SendError::Permanent(msg)
                }
            }
            SlackClientError::HttpError(h) if h.status_code.is_client_error() => {
                SendError::Permanent(self.scrub(&format!("{method}: HTTP {}", h.status_code)))
            }
            // Slack answered (5xx, or a body that is not Slack's JSON): nothing happened.
            SlackClientError::HttpError(_) | SlackClientError::ProtocolError(_) => {
                SendError::Transient(self.scrub(&format!("{method}: {e}")))
            }
            // The connection failed, possibly after the request went out: it may have
            // taken effect.
            other => SendError::Unknown(self.scrub(&format!("{method}: {other}"))),
        }
    }

    /// `s` with every configured secret, and anything shaped like a token, replaced
    /// by `[redacted]`.
    #[must_use]
    pub fn scrub(&self, s: &str) -> String {
        let secrets: Vec<&str> = self.secrets.iter().map(String::as_str).collect();
        crate::secret::scrub(s, &secrets)
    }
}
