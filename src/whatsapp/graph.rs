//! The Cloud API's side of WhatsApp, as gatebot uses it.
//!
//! - Sending: `POST {api_url}/{version}/{phone-number-id}/messages`, JSON, with the
//!   system user's token as a Bearer token (never logged). Its answer's
//!   `messages[0].id` (a `wamid.…`) is the message id. Errors come as Graph API errors
//!   (`{"error": {"code": …, "message": …}}`): the throughput limit (130429, or an
//!   HTTP 429) and the pair rate limit (131056: too many messages to one person in a
//!   short time) are waited out and counted in `gatebot_chat_rate_limited_total`; a
//!   5xx or a refused connection is tried again; a broken answer leaves the outcome
//!   unknown; any other error is final. 131047 (more than 24 hours since the person
//!   last wrote) is told apart so the caller can send the template instead.
//! - Sends from the number are paced to [`SEND_INTERVAL`] (the Cloud API's default
//!   throughput is 80 messages a second a number).
//! - Webhooks: `X-Hub-Signature-256` is `sha256=` and the hex HMAC-SHA256 of the raw
//!   body, keyed with the app secret ([`verify`], in constant time; HMAC written out
//!   over the `sha2` the crate has, RFC 4231's vectors in the tests).

use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::{Method, Request};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::WhatsAppConfig;
use crate::approval::PlatformId;
use crate::chat::platform::{Pacer, SendError};
use crate::metrics::Metrics;

/// The least time between two sends from the number: 80 a second.
pub const SEND_INTERVAL: Duration = Duration::from_millis(13);
/// How long to wait after the pair rate limit (131056): Meta allows about one
/// message every six seconds to one person, after a burst.
pub const PAIR_WAIT: Duration = Duration::from_secs(6);
/// How long to wait after the throughput limit (130429, 429).
pub const THROUGHPUT_WAIT: Duration = Duration::from_secs(1);
/// Meta's code for a free-form message outside the 24-hour window.
pub const REENGAGEMENT: i64 = 131_047;
/// Meta's code for the pair rate limit.
pub const PAIR_RATE_LIMIT: i64 = 131_056;
/// Meta's code for the throughput limit.
pub const THROUGHPUT: i64 = 130_429;
/// Longest wait for one call.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// The most of an answer read.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

type HttpClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// Why a send failed, with Meta's error code when it gave one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub error: SendError,
    pub code: Option<i64>,
}

impl From<SendError> for Refused {
    fn from(error: SendError) -> Refused {
        Refused { error, code: None }
    }
}

pub struct Graph {
    client: HttpClient,
    url: String,
    token: crate::secret::Secret,
    metrics: Arc<Metrics>,
    platform: PlatformId,
    /// The number's sends, one per [`SEND_INTERVAL`].
    sends: Pacer,
}

impl Graph {
    /// A client for `config.api_url`. Plain `http://` is accepted (tests).
    pub fn new(config: &WhatsAppConfig, metrics: Arc<Metrics>) -> anyhow::Result<Graph> {
        let https = crate::https::connector()?;
        Ok(Graph {
            client: Client::builder(TokioExecutor::new()).build(https),
            url: format!(
                "{}/{}/{}/messages",
                config.api_url, config.api_version, config.phone_number_id
            ),
            token: config.access_token.clone(),
            metrics,
            platform: super::PLATFORM,
            sends: Pacer::new(SEND_INTERVAL),
        })
    }

    /// Sends `message` (the Messages API's JSON without `messaging_product`); the new
    /// message's id.
    pub async fn send(&self, mut message: Value) -> Result<String, Refused> {
        message["messaging_product"] = "whatsapp".into();
        message["recipient_type"] = "individual".into();
        self.sends.turn().await;
        let req = Request::builder()
            .method(Method::POST)
            .uri(&self.url)
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {}", self.token.expose()))
            .body(Full::new(Bytes::from(message.to_string())))
            .map_err(|e| SendError::Permanent(e.to_string()))?;
        let res = match tokio::time::timeout(CALL_TIMEOUT, self.client.request(req)).await {
            Err(_) => {
                return Err(SendError::Unknown("no answer from WhatsApp in time".into()).into())
            }
            Ok(Err(e)) if e.is_connect() => {
                return Err(SendError::Transient(format!("cannot reach WhatsApp: {e}")).into())
            }
            Ok(Err(e)) => {
                return Err(SendError::Unknown(format!("WhatsApp's answer broke: {e}")).into())
            }
            Ok(Ok(res)) => res,
        };
        let status = res.status();
        let bytes = match Limited::new(res.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
        {
            Ok(b) => b.to_bytes(),
            Err(e) => {
                return Err(SendError::Unknown(format!("WhatsApp's answer broke: {e}")).into())
            }
        };
        let Ok(v) = serde_json::from_slice::<Value>(&bytes) else {
            return Err(if status.is_success() {
                SendError::Unknown("WhatsApp's answer could not be read".into())
            } else if status.is_server_error() {
                SendError::Transient(format!("WhatsApp answered {status}"))
            } else {
                SendError::Permanent(format!("WhatsApp answered {status}"))
            }
            .into());
        };
        if status.is_success() {
            return v["messages"][0]["id"]
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| {
                    SendError::Unknown("WhatsApp answered without a message id".into()).into()
                });
        }
        let code = v["error"]["code"].as_i64();
        let said = format!(
            "WhatsApp answered {status}: {} (code {})",
            v["error"]["message"].as_str().unwrap_or("no message"),
            code.map_or_else(|| "none".to_string(), |c| c.to_string())
        );
        let error = match code {
            Some(PAIR_RATE_LIMIT) => {
                self.metrics.chat_rate_limited(&self.platform);
                SendError::RetryAfter(PAIR_WAIT)
            }
            Some(THROUGHPUT | 80007 | 4) => {
                self.metrics.chat_rate_limited(&self.platform);
                SendError::RetryAfter(THROUGHPUT_WAIT)
            }
            _ if status.as_u16() == 429 => {
                self.metrics.chat_rate_limited(&self.platform);
                SendError::RetryAfter(THROUGHPUT_WAIT)
            }
            _ if status.is_server_error() => SendError::Transient(said),
            _ => SendError::Permanent(said),
        };
        Err(Refused { error, code })
    }
}

/// The `X-Hub-Signature-256` header's value for `body`.
#[must_use]
pub fn sign(secret: &str, body: &[u8]) -> String {
    let mut out = String::from("sha256=");
    for b in hmac_sha256(secret.as_bytes(), body) {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Whether `header` is Meta's signature of `body` (compared in constant time).
#[must_use]
pub fn verify(secret: &str, body: &[u8], header: &str) -> bool {
    let Some(hex) = header.trim().strip_prefix("sha256=") else {
        return false;
    };
    let Some(sig) = unhex(hex) else {
        return false;
    };
    let mac = hmac_sha256(secret.as_bytes(), body);
    sig.len() == mac.len() && sig.iter().zip(mac).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// HMAC (RFC 2104) with SHA-256.
fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    const BLOCK: usize = 64;
    let mut k = [0u8; BLOCK];
    if key.len() > BLOCK {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let pad = |byte: u8| k.map(|b| b ^ byte);
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(message)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

/// Hex digits as bytes.
fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// HMAC-SHA256 of RFC 4231's test case 2 ("Jefe", "what do ya want for nothing?").
    #[test]
    fn signs_as_hmac_sha256_in_hex_and_checks_every_byte() {
        let sig = sign("Jefe", b"what do ya want for nothing?");
        assert_eq!(
            sig,
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert!(verify("Jefe", b"what do ya want for nothing?", &sig));
        assert!(!verify("jefe", b"what do ya want for nothing?", &sig));
        assert!(!verify("Jefe", b"what do ya want for nothing!", &sig));
        assert!(!verify("Jefe", b"what do ya want for nothing?", &sig[7..]));
        assert!(!verify(
            "Jefe",
            b"what do ya want for nothing?",
            "sha256=zz"
        ));
    }

    /// RFC 4231 test case 6: a key longer than the block is hashed first.
    #[test]
    fn a_long_key_is_hashed_first() {
        let key = [0xaa_u8; 131];
        let mac = hmac_sha256(
            &key,
            b"Test Using Larger Than Block-Size Key - Hash Key First",
        );
        assert_eq!(
            sign_bytes(&mac),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    fn sign_bytes(b: &[u8]) -> String {
        b.iter().map(|b| format!("{b:02x}")).collect()
    }
}
