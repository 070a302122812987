//! A fake Twilio on loopback, written from the public API docs:
//! - the Messages API, `POST /2010-04-01/Accounts/{AccountSid}/Messages.json`:
//!   form-encoded, HTTP basic auth (the account SID and the auth token; anything
//!   else is 401, code 20003), `To` and `Body` required with `From` or
//!   `MessagingServiceSid`, a body of at most 1 600 characters (else 400, code
//!   21617); answers 201 with the message's `sid`. On demand: 429 with `Retry-After`,
//!   500, or a lost answer (the message is taken, the answer unreadable);
//! - webhooks to gatebot's listener, signed as Twilio signs them (`X-Twilio-Signature`:
//!   base64 HMAC-SHA1 with the auth token of the public URL and the POST parameters
//!   sorted by name, each name then value), or forged.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use hmac13::{Hmac, KeyInit, Mac};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

pub const ACCOUNT: &str = "AC0123456789abcdef0123456789abcdef";
pub const TOKEN: &str = "twilio-test-token";
pub const FROM: &str = "+15005550006";
pub const PUBLIC_URL: &str = "https://gatebot.example.com/sms";
/// The owner: cards go to this number, and it may decide.
pub const OWNER: &str = "+15550000001";
/// Another approver, to whom no cards go.
pub const SECOND: &str = "+15550000002";
/// A number that may not decide.
pub const STRANGER: &str = "+15559999999";

/// One text gatebot sent.
#[derive(Debug, Clone)]
pub struct Sent {
    pub sid: String,
    pub to: String,
    pub body: String,
    pub status_callback: Option<String>,
}

#[derive(Default)]
struct Faults {
    rate_limit: u32,
    retry_after: u64,
    fail: u32,
    lose: u32,
}

#[derive(Clone)]
struct Shared {
    sent: Arc<Mutex<Vec<Sent>>>,
    faults: Arc<Mutex<Faults>>,
    refused: Arc<Mutex<Vec<(u16, String)>>>,
    next: Arc<AtomicU64>,
}

pub struct FakeTwilio {
    pub api: std::net::SocketAddr,
    /// gatebot's webhook listener.
    pub listen: std::net::SocketAddr,
    shared: Shared,
    inbound: AtomicU64,
}

impl FakeTwilio {
    pub async fn start() -> FakeTwilio {
        let shared = Shared {
            sent: Arc::default(),
            faults: Arc::default(),
            refused: Arc::default(),
            next: Arc::new(AtomicU64::new(1)),
        };
        let router = axum::Router::new()
            .route(
                "/2010-04-01/Accounts/{account}/Messages.json",
                axum::routing::post(messages),
            )
            .with_state(shared.clone());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let api = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await });
        FakeTwilio {
            api,
            listen: crate::helpers::free_port(),
            shared,
            inbound: AtomicU64::new(1),
        }
    }

    /// The `[sms]` table for this fake.
    pub fn config(&self) -> String {
        format!(
            "[sms]\naccount_sid = \"{ACCOUNT}\"\nauth_token = \"{TOKEN}\"\nfrom = \"{FROM}\"\n\
             to = [\"{OWNER}\"]\napprovers = [\"{OWNER}\", \"{SECOND}\"]\n\
             api_url = \"http://{}\"\nlisten = \"{}\"\npublic_url = \"{PUBLIC_URL}\"\n",
            self.api, self.listen
        )
    }

    pub fn sent(&self) -> Vec<Sent> {
        self.shared.sent.lock().unwrap().clone()
    }

    /// Texts sent to `to` that contain `needle`.
    pub fn sent_to(&self, to: &str, needle: &str) -> Vec<Sent> {
        self.sent()
            .into_iter()
            .filter(|s| s.to == to && s.body.contains(needle))
            .collect()
    }

    /// Calls refused, with their status and Twilio's error.
    pub fn refused(&self) -> Vec<(u16, String)> {
        self.shared.refused.lock().unwrap().clone()
    }

    /// The next `times` sends are answered 429 with `Retry-After: secs`.
    pub fn rate_limit(&self, times: u32, secs: u64) {
        let mut f = self.shared.faults.lock().unwrap();
        f.rate_limit = times;
        f.retry_after = secs;
    }

    /// The next `times` sends are answered 500.
    pub fn fail(&self, times: u32) {
        self.shared.faults.lock().unwrap().fail = times;
    }

    /// The next `times` sends are taken, but their answer is lost.
    pub fn lose(&self, times: u32) {
        self.shared.faults.lock().unwrap().lose = times;
    }

    /// `from` texts `body` to gatebot's number, signed: (HTTP status, TwiML answer).
    pub async fn text(&self, from: &str, body: &str) -> (u16, String) {
        let sid = format!("SM{:032}", self.inbound.fetch_add(1, Ordering::SeqCst));
        self.text_as(&sid, from, body).await
    }

    /// A text with the given MessageSid (Twilio retries a webhook with the same one).
    pub async fn text_as(&self, sid: &str, from: &str, body: &str) -> (u16, String) {
        let params = inbound(sid, from, body);
        let signature = sign(TOKEN, PUBLIC_URL, &params);
        self.webhook(&params, Some(&signature)).await
    }

    /// A text whose signature is made with the wrong key (or absent).
    pub async fn forged(&self, from: &str, body: &str, signed: bool) -> (u16, String) {
        let params = inbound("SMforged000000000000000000000000", from, body);
        let signature = sign("not-the-token", PUBLIC_URL, &params);
        self.webhook(&params, signed.then_some(signature.as_str()))
            .await
    }

    /// A delivery status callback for message `sid`.
    pub async fn status(&self, sid: &str, to: &str, status: &str) -> (u16, String) {
        let params: Vec<(String, String)> = [
            ("AccountSid", ACCOUNT),
            ("MessageSid", sid),
            ("MessageStatus", status),
            ("To", to),
            ("From", FROM),
            ("ErrorCode", "30003"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let signature = sign(TOKEN, PUBLIC_URL, &params);
        self.webhook(&params, Some(&signature)).await
    }

    /// POSTs `params` to gatebot's listener (as the TLS proxy forwards it).
    async fn webhook(&self, params: &[(String, String)], signature: Option<&str>) -> (u16, String) {
        let body = serde_urlencoded::to_string(params).unwrap();
        let mut head = format!(
            "POST /sms HTTP/1.1\r\nHost: gatebot.example.com\r\nConnection: close\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
            body.len()
        );
        if let Some(s) = signature {
            head.push_str(&format!("X-Twilio-Signature: {s}\r\n"));
        }
        let mut stream = crate::helpers::eventually("gatebot's SMS listener", async || {
            tokio::net::TcpStream::connect(self.listen).await.ok()
        })
        .await;
        stream
            .write_all(format!("{head}\r\n{body}").as_bytes())
            .await
            .unwrap();
        let mut raw = String::new();
        stream.read_to_string(&mut raw).await.unwrap();
        let status = raw
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let answer = raw.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
        (status, answer.to_string())
    }
}

fn inbound(sid: &str, from: &str, body: &str) -> Vec<(String, String)> {
    [
        ("AccountSid", ACCOUNT),
        ("MessageSid", sid),
        ("SmsSid", sid),
        ("From", from),
        ("To", FROM),
        ("Body", body),
        ("NumMedia", "0"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// Twilio's signature: the URL, then each parameter's name and value sorted by name.
pub fn sign(token: &str, url: &str, params: &[(String, String)]) -> String {
    let mut sorted = params.to_vec();
    sorted.sort();
    let mut data = url.to_string();
    for (k, v) in sorted {
        data.push_str(&k);
        data.push_str(&v);
    }
    let mut mac = <Hmac<sha1::Sha1> as KeyInit>::new_from_slice(token.as_bytes()).unwrap();
    mac.update(data.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

fn error(st: &Shared, status: StatusCode, code: u32, message: &str) -> Response {
    st.refused
        .lock()
        .unwrap()
        .push((status.as_u16(), message.to_string()));
    (
        status,
        axum::Json(json!({"code": code, "message": message, "status": status.as_u16()})),
    )
        .into_response()
}

async fn messages(
    State(st): State<Shared>,
    Path(account): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{ACCOUNT}:{TOKEN}"))
    );
    let auth = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if account != ACCOUNT || auth != Some(expected.as_str()) {
        return error(&st, StatusCode::UNAUTHORIZED, 20003, "Authenticate");
    }
    let form_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/x-www-form-urlencoded"));
    let Ok(form) = serde_urlencoded::from_bytes::<Vec<(String, String)>>(&body) else {
        return error(&st, StatusCode::BAD_REQUEST, 21600, "unreadable form");
    };
    let get = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let (Some(to), Some(text)) = (get("To"), get("Body")) else {
        return error(
            &st,
            StatusCode::BAD_REQUEST,
            21604,
            "A 'To' and 'Body' are required",
        );
    };
    if !form_type {
        return error(&st, StatusCode::BAD_REQUEST, 21600, "not form-encoded");
    }
    if get("From").is_none() && get("MessagingServiceSid").is_none() {
        return error(
            &st,
            StatusCode::BAD_REQUEST,
            21603,
            "A 'From' phone number is required",
        );
    }
    if text.chars().count() > 1600 {
        return error(
            &st,
            StatusCode::BAD_REQUEST,
            21617,
            "The concatenated message body exceeds the 1600 character limit",
        );
    }
    {
        let mut f = st.faults.lock().unwrap();
        if f.rate_limit > 0 {
            f.rate_limit -= 1;
            let secs = f.retry_after.to_string();
            drop(f);
            st.refused
                .lock()
                .unwrap()
                .push((429, "Too Many Requests".into()));
            return (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, secs)],
                axum::Json(json!({"code": 20429, "message": "Too Many Requests", "status": 429})),
            )
                .into_response();
        }
        if f.fail > 0 {
            f.fail -= 1;
            drop(f);
            return error(
                &st,
                StatusCode::INTERNAL_SERVER_ERROR,
                20500,
                "Internal Server Error",
            );
        }
    }
    let sid = format!("SM{:032x}", st.next.fetch_add(1, Ordering::SeqCst));
    st.sent.lock().unwrap().push(Sent {
        sid: sid.clone(),
        to: to.clone(),
        body: text.clone(),
        status_callback: get("StatusCallback"),
    });
    let lost = {
        let mut f = st.faults.lock().unwrap();
        let lost = f.lose > 0;
        f.lose = f.lose.saturating_sub(1);
        lost
    };
    if lost {
        // Taken, but what comes back cannot be read.
        return (StatusCode::CREATED, "{\"sid\": ").into_response();
    }
    (
        StatusCode::CREATED,
        axum::Json(json!({
            "sid": sid, "account_sid": ACCOUNT, "to": to, "from": get("From"),
            "body": text, "status": "queued", "num_segments": "1",
        })),
    )
        .into_response()
}
