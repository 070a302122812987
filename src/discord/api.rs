//! Discord REST calls through twilight-http, with raw JSON in and out.
//!
//! twilight-http does the HTTP, the `Authorization: Bot …` header, the routes and the
//! decoding of Discord's error bodies (a 429's `retry_after` and `global`); gatebot
//! builds the JSON itself ([`super::render`]), so what is sent is exactly what the
//! tests read.
//!
//! Rate limits are gatebot's own, not twilight's in-memory ratelimiter (which would
//! queue calls silently, hiding 429s from delivery and from the metrics):
//! 1. after every answer, `X-RateLimit-Remaining` and `X-RateLimit-Reset-After` (per
//!    `X-RateLimit-Bucket`) say whether the route's bucket is spent; if it is, the
//!    next call on that route waits until the reset, or, for delivery, fails at once
//!    with [`SendError::RetryAfter`] so delivery retries it then;
//! 2. a 429 (a bucket's, or the global limit's: `global: true`) becomes
//!    [`SendError::RetryAfter`] with Discord's `retry_after`, and a global one holds
//!    every route back;
//! 3. both are counted in `gatebot_chat_rate_limited_total{channel="discord"}`.
//!
//! Every error leaves here as a [`SendError`] whose text has the token scrubbed out.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tracing::{debug, warn};
use twilight_http::error::ErrorType;
use twilight_http::request::Request;
use twilight_http::routing::Route;
use twilight_http::Client;

use super::PLATFORM;
use crate::chat::platform::SendError;
use crate::config::discord::DiscordConfig;
use crate::metrics::Metrics;

/// Discord's own API host: no proxy needed.
const DISCORD_API: &str = "https://discord.com";
/// Longest wait for one REST call.
const CALL_TIMEOUT: Duration = Duration::from_secs(15);
/// Discord's JSON error codes that mean the thing is gone or not allowed: retrying
/// will not help. 10003 Unknown Channel, 10008 Unknown Message, 10062 Unknown
/// interaction, 50001 Missing Access, 50013 Missing Permissions, 50035 Invalid Form Body,
/// 40060 Interaction has already been acknowledged.
const PERMANENT_CODES: &[u64] = &[10003, 10008, 10062, 50001, 50013, 50035, 40060];

/// Where a bucket's limit is kept: per route and the resource it names (a channel, an
/// interaction token's application), as Discord scopes buckets by their major
/// parameter. `"global"` holds everything back after a global 429.
type BucketKey = String;

pub struct DiscordApi {
    client: Client,
    token: String,
    metrics: Arc<Metrics>,
    /// Route keys whose bucket is spent, until when.
    spent: Mutex<HashMap<BucketKey, Instant>>,
}

impl DiscordApi {
    /// A client for `config.api_url`: Discord's own, or (tests, a self-hosted proxy) any
    /// other host, over plain `http://` where the URL says so.
    pub fn new(config: &DiscordConfig, metrics: Arc<Metrics>) -> DiscordApi {
        crate::https::install_crypto_provider();
        let mut builder = Client::builder()
            .token(config.bot_token.expose().to_string())
            .ratelimiter(None)
            .timeout(CALL_TIMEOUT);
        let base = config.api_url.trim_end_matches('/');
        if base != DISCORD_API {
            let (http, host) = match base.split_once("://") {
                Some(("http", host)) => (true, host),
                Some((_, host)) => (false, host),
                None => (false, base),
            };
            builder = builder.proxy(host.to_string(), http);
        }
        DiscordApi {
            client: builder.build(),
            token: config.bot_token.expose().to_string(),
            metrics,
            spent: Mutex::default(),
        }
    }

    /// The token scrubbed out of `text`.
    pub fn scrub(&self, text: &str) -> String {
        crate::secret::scrub(text, &[&self.token])
    }

    /// Calls `route` with `body` (JSON) at once: a spent bucket is a
    /// [`SendError::RetryAfter`] (for delivery, which retries then). The answer's JSON,
    /// `Null` for 204 No Content.
    pub async fn call(
        &self,
        key: &str,
        route: &Route<'_>,
        body: Option<&Value>,
    ) -> Result<Value, SendError> {
        if let Some(wait) = self.held_back(key) {
            self.metrics.chat_rate_limited(&PLATFORM);
            return Err(SendError::RetryAfter(wait));
        }
        self.send(key, route, body).await
    }

    /// Calls `route`, waiting out a spent bucket or a 429 up to `max_wait` in all, and
    /// retrying temporary failures, `attempts` times at most (answers to people, which
    /// no delivery retries).
    pub async fn call_patiently(
        &self,
        key: &str,
        route: &Route<'_>,
        body: Option<&Value>,
        attempts: u32,
        max_wait: Duration,
    ) -> Result<Value, SendError> {
        let mut attempt = 0;
        loop {
            let result = match self.held_back(key) {
                Some(wait) => {
                    self.metrics.chat_rate_limited(&PLATFORM);
                    Err(SendError::RetryAfter(wait))
                }
                None => self.send(key, route, body).await,
            };
            match result {
                Ok(v) => return Ok(v),
                Err(e) => match e.retry_in(attempt, attempts, max_wait) {
                    Some(wait) => {
                        debug!(route = key, ?wait, error = %e, "discord: will try again");
                        tokio::time::sleep(wait).await;
                        attempt += 1;
                    }
                    None => return Err(e),
                },
            }
        }
    }

    /// How long `key`'s bucket (or the global limit) is still spent, if it is.
    fn held_back(&self, key: &str) -> Option<Duration> {
        let now = Instant::now();
        let mut spent = self.spent.lock().unwrap_or_else(|e| e.into_inner());
        spent.retain(|_, until| *until > now);
        [key, "global"]
            .iter()
            .filter_map(|k| spent.get(*k))
            .max()
            .map(|until| until.duration_since(now))
    }

    fn hold(&self, key: &str, wait: Duration) {
        let until = Instant::now() + wait;
        let mut spent = self.spent.lock().unwrap_or_else(|e| e.into_inner());
        let at = spent.entry(key.to_string()).or_insert(until);
        *at = (*at).max(until);
    }

    async fn send(
        &self,
        key: &str,
        route: &Route<'_>,
        body: Option<&Value>,
    ) -> Result<Value, SendError> {
        let mut request = Request::builder(route);
        if let Some(b) = body {
            request = request.json(b);
        }
        let request = request
            .build()
            .map_err(|e| SendError::Permanent(self.scrub(&e.to_string())))?;
        let response = match self.client.request::<Value>(request).await {
            Ok(r) => r,
            Err(e) => return Err(self.classify(key, e)),
        };
        self.note_limits(key, response.headers());
        let bytes = response.bytes().await.map_err(|e| {
            // The call was made; its answer was lost.
            SendError::Unknown(self.scrub(&e.to_string()))
        })?;
        if bytes.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&bytes)
            .map_err(|e| SendError::Unknown(format!("unreadable answer from Discord: {e}")))
    }

    /// Reads `X-RateLimit-Remaining` and `X-RateLimit-Reset-After`: a spent bucket
    /// holds its route back until the reset.
    fn note_limits<'a>(&self, key: &str, headers: impl Iterator<Item = (&'a str, &'a [u8])>) {
        let mut remaining = None;
        let mut reset_after = None;
        let mut bucket = None;
        for (name, value) in headers {
            let value = std::str::from_utf8(value).unwrap_or_default();
            match name.to_ascii_lowercase().as_str() {
                "x-ratelimit-remaining" => remaining = value.parse::<u64>().ok(),
                "x-ratelimit-reset-after" => reset_after = value.parse::<f64>().ok(),
                "x-ratelimit-bucket" => bucket = Some(value.to_string()),
                _ => {}
            }
        }
        if let (Some(0), Some(secs)) = (remaining, reset_after) {
            let wait = seconds(secs);
            debug!(
                route = key,
                bucket,
                ?wait,
                "discord: rate-limit bucket spent"
            );
            self.hold(key, wait);
        }
    }

    /// A twilight error as a [`SendError`]; a 429 holds its route (or, global, all)
    /// back and is counted.
    fn classify(&self, key: &str, e: twilight_http::Error) -> SendError {
        let text = self.scrub(&e.to_string());
        match e.kind() {
            // Read from the body itself: a 429 may carry an error `code` too, which
            // twilight then reads as a general error.
            ErrorType::Response { body, status, .. } if status.get() == 429 => {
                let limit: Value = serde_json::from_slice(body).unwrap_or_default();
                let wait = seconds(limit["retry_after"].as_f64().unwrap_or(1.0));
                let global = limit["global"] == true;
                self.metrics.chat_rate_limited(&PLATFORM);
                warn!(route = key, global, retry_after = ?wait, "discord: rate limited");
                self.hold(if global { "global" } else { key }, wait);
                SendError::RetryAfter(wait)
            }
            ErrorType::Response { error, status, .. } => {
                use twilight_http::api_error::ApiError;
                match error {
                    ApiError::General(g) if PERMANENT_CODES.contains(&g.code) => {
                        SendError::Permanent(text)
                    }
                    _ if status.get() >= 500 => SendError::Transient(text),
                    _ => SendError::Permanent(text),
                }
            }
            ErrorType::ServiceUnavailable { .. } | ErrorType::RequestError => {
                SendError::Transient(text)
            }
            // A 5xx whose body is no JSON error.
            ErrorType::Parsing { .. } => SendError::Transient(text),
            ErrorType::RequestTimedOut | ErrorType::ChunkingResponse => SendError::Unknown(text),
            ErrorType::Unauthorized => SendError::Permanent(
                "Discord refused the bot token (401): set a valid bot_token and restart".into(),
            ),
            _ => SendError::Permanent(text),
        }
    }
}

/// Discord's seconds (`1.234`) as a duration, at least a millisecond, at most an hour.
fn seconds(secs: f64) -> Duration {
    if secs.is_finite() && secs > 0.0 {
        Duration::from_secs_f64(secs.min(3600.0)).max(Duration::from_millis(1))
    } else {
        Duration::from_millis(1)
    }
}

/// A snowflake id as the number twilight's routes take.
pub fn id(s: &str) -> Result<u64, SendError> {
    s.parse::<u64>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| SendError::Permanent(format!("`{s}` is not a Discord id")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discords_seconds_become_durations_within_bounds() {
        assert_eq!(seconds(1.5), Duration::from_millis(1500));
        assert_eq!(seconds(0.0), Duration::from_millis(1));
        assert_eq!(seconds(f64::NAN), Duration::from_millis(1));
        assert_eq!(seconds(1e9), Duration::from_secs(3600));
    }

    #[test]
    fn ids_are_positive_numbers() {
        assert_eq!(id("123").unwrap(), 123);
        assert!(matches!(id("0"), Err(SendError::Permanent(_))));
        assert!(id("C123").is_err());
    }
}
