//! A fake WhatsApp Cloud API on loopback, written from Meta's public docs:
//! - the Messages API, `POST /{version}/{phone-number-id}/messages`: JSON with
//!   `messaging_product: "whatsapp"`, a Bearer token (anything else is 401, code 190);
//!   `text` (a body of at most 4 096 characters), `interactive` of type `button` (a body
//!   of at most 1 024, one to three reply buttons, titles of at most 20 characters and
//!   unique, ids of at most 256), and `template` (a template that exists by name and
//!   language, its two body variables without line breaks, tabs or runs of more than
//!   four spaces, code 132018; its quick-reply buttons by index). **The 24-hour rule**:
//!   anything but a template to someone who has not written in 24 hours (or ever) is
//!   refused with 131047, "Re-engagement message". Answers 200 with the `wamid`. On
//!   demand: a 500, the pair rate limit (131056), or a lost answer (the message is
//!   taken, the answer unreadable);
//! - webhooks to gatebot's listener as Meta sends them (`object:
//!   whatsapp_business_account`, `entry[].changes[].value` with `messages` or
//!   `statuses`), signed with the app secret (`X-Hub-Signature-256: sha256=<hex>`), or
//!   forged; one can be delivered twice with the same message id; and the `GET`
//!   verification handshake.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use hmac::{Hmac, Mac};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

pub const PHONE_NUMBER_ID: &str = "106540352242922";
pub const VERSION: &str = "v23.0";
pub const TOKEN: &str = "EAAG-system-user-token";
pub const APP_SECRET: &str = "whatsapp-app-secret";
pub const VERIFY_TOKEN: &str = "gatebot-verify-words";
pub const TEMPLATE: &str = "gatebot_prompt";
pub const LANGUAGE: &str = "en_US";
/// The owner: cards go to this number, and it may decide.
pub const OWNER: &str = "+15550000001";
/// Another approver, to whom no cards go.
pub const SECOND: &str = "+15550000002";
/// A number that may not decide.
pub const STRANGER: &str = "+15559999999";
/// The business number, as webhooks show it.
const DISPLAY: &str = "15550783881";

/// One message gatebot sent.
#[derive(Debug, Clone)]
pub struct Sent {
    pub id: String,
    /// E.164, with the `+`.
    pub to: String,
    /// `text`, `interactive` or `template`.
    pub kind: String,
    /// The text (a template's: its variables, joined by " | ").
    pub body: String,
    /// Reply buttons `(id, title)`; a template's quick replies `(payload, "")`.
    pub buttons: Vec<(String, String)>,
    /// The message this one replies to.
    pub context: Option<String>,
}

impl Sent {
    pub fn button(&self, title_part: &str) -> String {
        self.buttons
            .iter()
            .find(|(_, t)| t.contains(title_part))
            .unwrap_or_else(|| panic!("no button {title_part} in {self:?}"))
            .0
            .clone()
    }
}

#[derive(Default)]
struct Faults {
    fail: u32,
    pair_limit: u32,
    lose: u32,
}

#[derive(Clone)]
struct Shared {
    sent: Arc<Mutex<Vec<Sent>>>,
    faults: Arc<Mutex<Faults>>,
    /// Calls refused: (HTTP status, Meta's code).
    refused: Arc<Mutex<Vec<(u16, i64)>>>,
    /// When each wa_id last wrote (ms).
    last_inbound: Arc<Mutex<HashMap<String, i64>>>,
    next: Arc<AtomicU64>,
}

pub struct FakeWhatsApp {
    pub api: std::net::SocketAddr,
    /// gatebot's webhook listener.
    pub listen: std::net::SocketAddr,
    shared: Shared,
    inbound: AtomicU64,
}

fn now_ms() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

fn wa_id(number: &str) -> String {
    number.trim_start_matches('+').to_string()
}

impl FakeWhatsApp {
    pub async fn start() -> FakeWhatsApp {
        let shared = Shared {
            sent: Arc::default(),
            faults: Arc::default(),
            refused: Arc::default(),
            last_inbound: Arc::default(),
            next: Arc::new(AtomicU64::new(1)),
        };
        let router = axum::Router::new()
            .route("/{version}/{phone}/messages", axum::routing::post(messages))
            .with_state(shared.clone());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let api = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await });
        FakeWhatsApp {
            api,
            listen: crate::helpers::free_port(),
            shared,
            inbound: AtomicU64::new(1),
        }
    }

    /// The `[whatsapp]` table for this fake.
    pub fn config(&self) -> String {
        format!(
            "[whatsapp]\nphone_number_id = \"{PHONE_NUMBER_ID}\"\naccess_token = \"{TOKEN}\"\n\
             app_secret = \"{APP_SECRET}\"\nverify_token = \"{VERIFY_TOKEN}\"\n\
             to = [\"{OWNER}\"]\napprovers = [\"{OWNER}\", \"{SECOND}\"]\n\
             api_url = \"http://{}\"\napi_version = \"{VERSION}\"\nlisten = \"{}\"\n\
             template = \"{TEMPLATE}\"\ntemplate_language = \"{LANGUAGE}\"\n",
            self.api, self.listen
        )
    }

    pub fn sent(&self) -> Vec<Sent> {
        self.shared.sent.lock().unwrap().clone()
    }

    /// Messages sent to `to` whose text contains `needle`.
    pub fn sent_to(&self, to: &str, needle: &str) -> Vec<Sent> {
        self.sent()
            .into_iter()
            .filter(|s| s.to == to && s.body.contains(needle))
            .collect()
    }

    /// Messages sent as replies to `message`.
    pub fn replies_to(&self, message: &str) -> Vec<Sent> {
        self.sent()
            .into_iter()
            .filter(|s| s.context.as_deref() == Some(message))
            .collect()
    }

    /// Calls refused: (HTTP status, Meta's code).
    pub fn refused(&self) -> Vec<(u16, i64)> {
        self.shared.refused.lock().unwrap().clone()
    }

    /// The next `times` sends are answered 500.
    pub fn fail(&self, times: u32) {
        self.shared.faults.lock().unwrap().fail = times;
    }

    /// The next `times` sends hit the pair rate limit (131056).
    pub fn pair_limit(&self, times: u32) {
        self.shared.faults.lock().unwrap().pair_limit = times;
    }

    /// The next `times` sends are taken, but their answer is lost.
    pub fn lose(&self, times: u32) {
        self.shared.faults.lock().unwrap().lose = times;
    }

    /// As if `number` last wrote 25 hours ago (only Meta's side knows).
    pub fn expire(&self, number: &str) {
        self.shared
            .last_inbound
            .lock()
            .unwrap()
            .insert(wa_id(number), now_ms() - 25 * 3_600_000);
    }

    fn next_inbound(&self) -> String {
        format!(
            "wamid.IN{:020}",
            self.inbound.fetch_add(1, Ordering::SeqCst)
        )
    }

    /// `from` writes `body` to the business number (signed): the HTTP status.
    pub async fn text(&self, from: &str, body: &str) -> u16 {
        let m = json!({"type": "text", "text": {"body": body}});
        self.message(from, m, None).await
    }

    /// `from` replies to `message` with `body`.
    pub async fn reply(&self, from: &str, message: &str, body: &str) -> u16 {
        let m = json!({"type": "text", "text": {"body": body}});
        self.message(from, m, Some(message)).await
    }

    /// `from` taps the reply button `id` of message `on`.
    pub async fn press(&self, from: &str, on: &str, id: &str) -> u16 {
        let m = json!({"type": "interactive", "interactive": {
            "type": "button_reply", "button_reply": {"id": id, "title": "tapped"}}});
        self.message(from, m, Some(on)).await
    }

    /// `from` taps a template's quick reply with `payload` on message `on`.
    pub async fn quick_reply(&self, from: &str, on: &str, payload: &str) -> u16 {
        let m = json!({"type": "button", "button": {"payload": payload, "text": "tapped"}});
        self.message(from, m, Some(on)).await
    }

    /// A message from `from` with a fresh id.
    async fn message(&self, from: &str, m: Value, context: Option<&str>) -> u16 {
        let id = self.next_inbound();
        self.message_as(&id, from, m, context).await
    }

    /// A message with the given id (Meta retries a webhook with the same one).
    pub async fn message_as(
        &self,
        id: &str,
        from: &str,
        mut m: Value,
        context: Option<&str>,
    ) -> u16 {
        m["from"] = wa_id(from).into();
        m["id"] = id.into();
        m["timestamp"] = (now_ms() / 1000).to_string().into();
        if let Some(c) = context {
            m["context"] = json!({"from": DISPLAY, "id": c});
        }
        self.shared
            .last_inbound
            .lock()
            .unwrap()
            .insert(wa_id(from), now_ms());
        let body = envelope(json!({
            "contacts": [{"profile": {"name": "Owner Person"}, "wa_id": wa_id(from)}],
            "messages": [m],
        }));
        let signature = sign(APP_SECRET, body.as_bytes());
        self.webhook("POST", "/whatsapp", &body, Some(&signature))
            .await
            .0
    }

    /// A text from `from` whose signature is made with the wrong key (or absent).
    pub async fn forged(&self, from: &str, body: &str, signed: bool) -> u16 {
        let body = envelope(json!({
            "contacts": [{"profile": {"name": "Mallory"}, "wa_id": wa_id(from)}],
            "messages": [{"from": wa_id(from), "id": "wamid.FORGED", "timestamp": "1",
                "type": "text", "text": {"body": body}}],
        }));
        let signature = sign("not-the-app-secret", body.as_bytes());
        self.webhook(
            "POST",
            "/whatsapp",
            &body,
            signed.then_some(signature.as_str()),
        )
        .await
        .0
    }

    /// A status callback for message `id`: `failed` carries Meta's error `code`.
    pub async fn status(&self, id: &str, to: &str, status: &str, code: i64) -> u16 {
        let mut s =
            json!({"id": id, "status": status, "timestamp": "1", "recipient_id": wa_id(to)});
        if status == "failed" {
            s["errors"] = json!([{"code": code, "title": "Re-engagement message",
                "message": "Re-engagement message",
                "error_data": {"details": "Message failed to send because more than 24 hours have passed since the customer last replied to this number."}}]);
        }
        let body = envelope(json!({"statuses": [s]}));
        let signature = sign(APP_SECRET, body.as_bytes());
        self.webhook("POST", "/whatsapp", &body, Some(&signature))
            .await
            .0
    }

    /// Meta's verification `GET`: (status, body).
    pub async fn handshake(&self, token: &str, challenge: &str) -> (u16, String) {
        let q = serde_urlencoded::to_string([
            ("hub.mode", "subscribe"),
            ("hub.verify_token", token),
            ("hub.challenge", challenge),
        ])
        .unwrap();
        self.webhook("GET", &format!("/whatsapp?{q}"), "", None)
            .await
    }

    /// A request to gatebot's listener (as the TLS proxy forwards it).
    async fn webhook(
        &self,
        method: &str,
        path: &str,
        body: &str,
        signature: Option<&str>,
    ) -> (u16, String) {
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: gatebot.example.com\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        );
        if let Some(s) = signature {
            head.push_str(&format!("X-Hub-Signature-256: {s}\r\n"));
        }
        let mut stream = crate::helpers::eventually("gatebot's WhatsApp listener", async || {
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

/// A `messages` webhook's body around `value`'s fields.
fn envelope(fields: Value) -> String {
    let mut value = json!({
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": DISPLAY, "phone_number_id": PHONE_NUMBER_ID},
    });
    for (k, v) in fields.as_object().unwrap() {
        value[k] = v.clone();
    }
    json!({"object": "whatsapp_business_account", "entry": [{"id": "102290129340398",
        "changes": [{"value": value, "field": "messages"}]}]})
    .to_string()
}

/// Meta's signature: `sha256=` and the hex HMAC-SHA256 of the body with the app secret.
pub fn sign(secret: &str, body: &[u8]) -> String {
    let mut mac = <Hmac<sha2::Sha256> as Mac>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

fn error(st: &Shared, status: StatusCode, code: i64, message: &str) -> Response {
    st.refused.lock().unwrap().push((status.as_u16(), code));
    (
        status,
        axum::Json(json!({"error": {
            "message": message, "type": "OAuthException", "code": code,
            "error_data": {"messaging_product": "whatsapp", "details": message},
            "fbtrace_id": "Az8or2yhqkZfEZ-_4Qn_Bam",
        }})),
    )
        .into_response()
}

/// Meta's rule for a template variable.
fn bad_variable(s: &str) -> bool {
    s.is_empty() || s.contains('\n') || s.contains('\t') || s.contains("     ")
}

async fn messages(
    State(st): State<Shared>,
    Path((version, phone)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let auth = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if auth != Some(format!("Bearer {TOKEN}").as_str()) {
        return error(
            &st,
            StatusCode::UNAUTHORIZED,
            190,
            "Invalid OAuth access token",
        );
    }
    if version != VERSION || phone != PHONE_NUMBER_ID {
        return error(
            &st,
            StatusCode::BAD_REQUEST,
            100,
            "Unsupported post request",
        );
    }
    let Ok(m) = serde_json::from_slice::<Value>(&body) else {
        return error(&st, StatusCode::BAD_REQUEST, 100, "Invalid JSON");
    };
    if m["messaging_product"] != "whatsapp" {
        return error(
            &st,
            StatusCode::BAD_REQUEST,
            100,
            "messaging_product is required",
        );
    }
    let Some(to) = m["to"].as_str().map(str::to_string) else {
        return error(&st, StatusCode::BAD_REQUEST, 100, "to is required");
    };
    let kind = m["type"].as_str().unwrap_or("text").to_string();
    let too_long = |s: &str, max: usize| s.chars().count() > max;
    let (text, buttons) = match kind.as_str() {
        "text" => {
            let body = m["text"]["body"].as_str().unwrap_or_default();
            if body.is_empty() || too_long(body, 4096) {
                return error(
                    &st,
                    StatusCode::BAD_REQUEST,
                    100,
                    "text.body: 1 to 4096 characters",
                );
            }
            (body.to_string(), Vec::new())
        }
        "interactive" => {
            let i = &m["interactive"];
            let body = i["body"]["text"].as_str().unwrap_or_default();
            let buttons = i["action"]["buttons"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if i["type"] != "button" || body.is_empty() || too_long(body, 1024) {
                return error(
                    &st,
                    StatusCode::BAD_REQUEST,
                    131009,
                    "body: 1 to 1024 characters",
                );
            }
            if buttons.is_empty() || buttons.len() > 3 {
                return error(&st, StatusCode::BAD_REQUEST, 131009, "buttons: 1 to 3");
            }
            let mut seen = Vec::new();
            let mut out = Vec::new();
            for b in &buttons {
                let id = b["reply"]["id"].as_str().unwrap_or_default();
                let title = b["reply"]["title"].as_str().unwrap_or_default();
                if b["type"] != "reply" || id.is_empty() || too_long(id, 256) {
                    return error(
                        &st,
                        StatusCode::BAD_REQUEST,
                        131009,
                        "button id: 1 to 256 characters",
                    );
                }
                if title.is_empty() || too_long(title, 20) || seen.contains(&title) {
                    return error(
                        &st,
                        StatusCode::BAD_REQUEST,
                        131009,
                        "button title: 1 to 20 characters, unique",
                    );
                }
                seen.push(title);
                out.push((id.to_string(), title.to_string()));
            }
            (body.to_string(), out)
        }
        "template" => {
            let t = &m["template"];
            if t["name"] != TEMPLATE || t["language"]["code"] != LANGUAGE {
                return error(
                    &st,
                    StatusCode::NOT_FOUND,
                    132001,
                    "Template name does not exist in the translation",
                );
            }
            let mut vars = Vec::new();
            let mut payloads = Vec::new();
            for c in t["components"].as_array().into_iter().flatten() {
                match c["type"].as_str() {
                    Some("body") => {
                        for p in c["parameters"].as_array().into_iter().flatten() {
                            vars.push(p["text"].as_str().unwrap_or_default().to_string());
                        }
                    }
                    Some("button") => {
                        let index: usize = c["index"]
                            .as_str()
                            .and_then(|i| i.parse().ok())
                            .unwrap_or(99);
                        let payload = c["parameters"][0]["payload"].as_str().unwrap_or_default();
                        if c["sub_type"] != "quick_reply"
                            || index > 2
                            || payload.is_empty()
                            || too_long(payload, 1000)
                        {
                            return error(
                                &st,
                                StatusCode::BAD_REQUEST,
                                132000,
                                "button parameters do not match",
                            );
                        }
                        payloads.push((payload.to_string(), String::new()));
                    }
                    _ => return error(&st, StatusCode::BAD_REQUEST, 132000, "unknown component"),
                }
            }
            if vars.len() != 2 {
                return error(
                    &st,
                    StatusCode::BAD_REQUEST,
                    132000,
                    "Number of parameters does not match the expected number of params",
                );
            }
            if vars.iter().any(|v| bad_variable(v)) {
                return error(&st, StatusCode::BAD_REQUEST, 132018, "Param text cannot have new-line/tab characters or more than 4 consecutive spaces");
            }
            (vars.join(" | "), payloads)
        }
        _ => return error(&st, StatusCode::BAD_REQUEST, 100, "unsupported type"),
    };
    // The 24-hour customer service window.
    if kind != "template" {
        let last = st.last_inbound.lock().unwrap().get(&to).copied();
        if last.is_none_or(|t| now_ms() - t >= 24 * 3_600_000) {
            return error(
                &st,
                StatusCode::BAD_REQUEST,
                131047,
                "Re-engagement message",
            );
        }
    }
    {
        let mut f = st.faults.lock().unwrap();
        if f.fail > 0 {
            f.fail -= 1;
            drop(f);
            return error(
                &st,
                StatusCode::INTERNAL_SERVER_ERROR,
                131000,
                "Something went wrong",
            );
        }
        if f.pair_limit > 0 {
            f.pair_limit -= 1;
            drop(f);
            return error(
                &st,
                StatusCode::BAD_REQUEST,
                131056,
                "(Business Account, Consumer Account) pair rate limit hit",
            );
        }
    }
    let id = format!("wamid.OUT{:020}", st.next.fetch_add(1, Ordering::SeqCst));
    st.sent.lock().unwrap().push(Sent {
        id: id.clone(),
        to: format!("+{to}"),
        kind,
        body: text,
        buttons,
        context: m["context"]["message_id"].as_str().map(str::to_string),
    });
    let lost = {
        let mut f = st.faults.lock().unwrap();
        let lost = f.lose > 0;
        f.lose = f.lose.saturating_sub(1);
        lost
    };
    if lost {
        return (StatusCode::OK, "{\"messaging_product\": ").into_response();
    }
    (
        StatusCode::OK,
        axum::Json(json!({
            "messaging_product": "whatsapp",
            "contacts": [{"input": to, "wa_id": to}],
            "messages": [{"id": id}],
        })),
    )
        .into_response()
}

/// How long a test waits to see that nothing more is sent.
pub const QUIET: Duration = Duration::from_millis(1500);
