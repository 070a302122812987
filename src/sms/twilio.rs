//! Twilio Programmable Messaging, the first [`Gateway`].
//!
//! - Sending: `POST {api_url}/2010-04-01/Accounts/{AccountSid}/Messages.json`,
//!   form-encoded (`To`, `From` or `MessagingServiceSid`, `Body`, `StatusCallback`),
//!   HTTP basic auth with the account SID and the auth token. Its answer's `sid` is
//!   the message id. A 429 is waited out as its `Retry-After` says (and counted in
//!   `gatebot_chat_rate_limited_total`), a 5xx or a refused connection is tried again,
//!   a broken answer leaves the outcome unknown, any other 4xx is final. Sends are
//!   paced to one a second from the number (Twilio's default for a long code).
//! - Webhooks: `X-Twilio-Signature` is the base64 HMAC-SHA1, keyed with the auth
//!   token, of the URL Twilio called (`public_url`, exactly as given to Twilio)
//!   followed by every POST parameter's name and value, sorted by name.
//! - Answers to an inbound text are TwiML: `<Response><Message>…</Message></Response>`.

use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderMap;
use base64::Engine as _;
use hmac13::{Hmac, KeyInit, Mac};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::{Method, Request};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use sha1::Sha1;

use super::provider::{Gateway, Params, Webhook};
use super::SmsConfig;
use crate::approval::PlatformId;
use crate::chat::platform::{Pacer, SendError};
use crate::metrics::Metrics;

/// When Twilio says 429 without a `Retry-After`, wait this long.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(2);
/// Longest wait for one call.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// The most of an answer read.
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// Twilio's default throughput for a long-code number: one message a second.
pub const SEND_INTERVAL: Duration = Duration::from_secs(1);

type HttpClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

pub struct Twilio {
    client: HttpClient,
    url: String,
    account_sid: String,
    token: crate::secret::Secret,
    from: Option<String>,
    service: Option<String>,
    public_url: Option<String>,
    metrics: Arc<Metrics>,
    platform: PlatformId,
    /// The number's sends, one per [`SEND_INTERVAL`].
    sends: Pacer,
}

impl Twilio {
    /// A client for `config.api_url`. Plain `http://` is accepted (tests).
    pub fn new(config: &SmsConfig, metrics: Arc<Metrics>) -> anyhow::Result<Twilio> {
        let https = crate::https::connector()?;
        Ok(Twilio {
            client: Client::builder(TokioExecutor::new()).build(https),
            url: format!(
                "{}/2010-04-01/Accounts/{}/Messages.json",
                config.api_url, config.account_sid
            ),
            account_sid: config.account_sid.clone(),
            token: config.auth_token.clone(),
            from: config.from.clone(),
            service: config.messaging_service_sid.clone(),
            public_url: config.public_url.clone(),
            metrics,
            platform: super::PLATFORM,
            sends: Pacer::new(SEND_INTERVAL),
        })
    }

    async fn call(&self, form: String) -> Result<String, SendError> {
        let auth = base64::engine::general_purpose::STANDARD.encode(format!(
            "{}:{}",
            self.account_sid,
            self.token.expose()
        ));
        let req = Request::builder()
            .method(Method::POST)
            .uri(&self.url)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("accept", "application/json")
            .header("authorization", format!("Basic {auth}"))
            .body(Full::new(Bytes::from(form)))
            .map_err(|e| SendError::Permanent(e.to_string()))?;
        let res = match tokio::time::timeout(CALL_TIMEOUT, self.client.request(req)).await {
            Err(_) => return Err(SendError::Unknown("no answer from Twilio in time".into())),
            Ok(Err(e)) if e.is_connect() => {
                return Err(SendError::Transient(format!("cannot reach Twilio: {e}")))
            }
            Ok(Err(e)) => return Err(SendError::Unknown(format!("Twilio's answer broke: {e}"))),
            Ok(Ok(res)) => res,
        };
        let status = res.status();
        let retry_after = res
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let bytes = match Limited::new(res.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
        {
            Ok(b) => b.to_bytes(),
            Err(e) => return Err(SendError::Unknown(format!("Twilio's answer broke: {e}"))),
        };
        let v: Value = serde_json::from_slice(&bytes).unwrap_or_default();
        if status.as_u16() == 429 {
            self.metrics.chat_rate_limited(&self.platform);
            return Err(SendError::RetryAfter(
                retry_after.unwrap_or(DEFAULT_RETRY_AFTER),
            ));
        }
        let said = || {
            format!(
                "Twilio answered {status}: {} (code {})",
                v["message"].as_str().unwrap_or("no message"),
                v["code"]
            )
        };
        if status.is_server_error() {
            return Err(SendError::Transient(said()));
        }
        if !status.is_success() {
            return Err(SendError::Permanent(said()));
        }
        v["sid"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| SendError::Unknown("Twilio answered without a message sid".into()))
    }
}

impl Gateway for Twilio {
    async fn send(&self, to: &str, body: &str) -> Result<String, SendError> {
        let mut form = vec![("To", to), ("Body", body)];
        if let Some(f) = &self.from {
            form.push(("From", f));
        }
        if let Some(s) = &self.service {
            form.push(("MessagingServiceSid", s));
        }
        if let Some(u) = &self.public_url {
            form.push(("StatusCallback", u));
        }
        let form =
            serde_urlencoded::to_string(&form).map_err(|e| SendError::Permanent(e.to_string()))?;
        self.sends.turn().await;
        self.call(form).await
    }

    fn genuine(&self, headers: &HeaderMap, params: &Params) -> bool {
        let (Some(url), Some(sig)) = (
            &self.public_url,
            headers
                .get("x-twilio-signature")
                .and_then(|v| v.to_str().ok()),
        ) else {
            return false;
        };
        verify(self.token.expose(), url, params, sig)
    }

    fn read(&self, params: &Params) -> Webhook {
        let get = |name: &str| {
            params
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        if let (Some(status), Some(id)) = (get("MessageStatus"), get("MessageSid")) {
            if get("Body").is_none() {
                return Webhook::Status {
                    id,
                    to: get("To").unwrap_or_default(),
                    status,
                    error: get("ErrorCode"),
                };
            }
        }
        match (get("MessageSid"), get("From"), get("Body")) {
            (Some(id), Some(from), Some(body)) => Webhook::Message { id, from, body },
            _ => Webhook::Other,
        }
    }

    fn answer(&self, text: Option<&str>) -> (&'static str, String) {
        let body = match text {
            Some(t) => format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Message>{}</Message></Response>",
                xml_escape(t)
            ),
            None => "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response></Response>".to_string(),
        };
        ("text/xml", body)
    }
}

/// Twilio's signature of a request to `url` with `params`.
#[must_use]
pub fn sign(token: &str, url: &str, params: &Params) -> String {
    base64::engine::general_purpose::STANDARD
        .encode(mac(token, url, params).finalize().into_bytes())
}

/// Whether `signature` is Twilio's for this request (compared in constant time).
#[must_use]
pub fn verify(token: &str, url: &str, params: &Params, signature: &str) -> bool {
    let Ok(sig) = base64::engine::general_purpose::STANDARD.decode(signature.trim()) else {
        return false;
    };
    mac(token, url, params).verify_slice(&sig).is_ok()
}

fn mac(token: &str, url: &str, params: &Params) -> Hmac<Sha1> {
    let mut sorted: Vec<&(String, String)> = params.iter().collect();
    sorted.sort();
    let mut mac = <Hmac<Sha1> as KeyInit>::new_from_slice(token.as_bytes())
        .expect("HMAC takes a key of any length");
    mac.update(url.as_bytes());
    for (k, v) in sorted {
        mac.update(k.as_bytes());
        mac.update(v.as_bytes());
    }
    mac
}

fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of Twilio's "Webhooks security" page: its auth token, URL,
    /// parameters and the signature it gives.
    #[test]
    fn signs_twilio_s_documented_example() {
        let token = "12345";
        let url = "https://mycompany.com/myapp.php?foo=1&bar=2";
        let params: Params = [
            ("CallSid", "CA1234567890ABCDE"),
            ("Caller", "+12349013030"),
            ("Digits", "1234"),
            ("From", "+12349013030"),
            ("To", "+18005551212"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let sig = sign(token, url, &params);
        assert_eq!(sig, "0/KCTR6DLpKmkAf8muzZqo1nDgQ=");
        assert!(verify(token, url, &params, &sig));
        assert!(!verify("54321", url, &params, &sig));
        let mut changed = params.clone();
        changed[2].1 = "9999".into();
        assert!(!verify(token, url, &changed, &sig));
        assert!(!verify(token, url, &params, "not base64!"));
    }

    #[test]
    fn twiml_escapes_the_text() {
        assert_eq!(xml_escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&apos;");
    }
}
