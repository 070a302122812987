//! A fake Discord on loopback, written from Discord's public API docs (v10):
//! - REST under `/api/v10`: create, edit and get a message, get a channel, start a
//!   thread from a message, an interaction's callback, its original response and
//!   follow-ups, and the bulk overwrite of a guild's commands. Every call must carry
//!   `Authorization: Bot <token>` (else 401). Documented limits are enforced (else 400,
//!   code 50035 Invalid Form Body): content ≤ 2000 characters, ≤ 5 action rows of 1 to 5
//!   buttons, `custom_id` ≤ 100 characters, labels ≤ 80; a command's name and
//!   description. An interaction's callback must come within 3 s of it (else 404, code
//!   10062 Unknown interaction) and once (else 400, code 40060); its follow-ups and
//!   original only after it. Answers carry `X-RateLimit-*` headers; on demand a 429
//!   (`retry_after`, `global`), a 500, or a spent bucket (`X-RateLimit-Remaining: 0`).
//! - the Gateway, a WebSocket: HELLO, IDENTIFY (token checked, else close 4004) →
//!   READY and GUILD_CREATE, heartbeats answered with ACKs, RESUME replaying the
//!   dispatches missed (then RESUMED), and dispatches the tests make: button presses
//!   and slash commands (INTERACTION_CREATE), messages (MESSAGE_CREATE). On demand the
//!   connection is dropped without a close frame.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message as Ws;

pub const TOKEN: &str = "discord-test-token.Gx7f.0123456789";
pub const APP: &str = "900000000000000100";
pub const BOT: &str = "900000000000000200";
pub const GUILD: &str = "900000000000000001";
/// The channel cards go to.
pub const CHANNEL: &str = "900000000000000010";
/// The owner: an approver by user id.
pub const OWNER: &str = "111111111111111111";
/// An approver by role only.
pub const ROLE_MEMBER: &str = "222222222222222222";
pub const APPROVER_ROLE: &str = "333333333333333333";
/// A member who may not decide.
pub const STRANGER: &str = "999999999999999999";

/// Discord's deadline for an interaction's first answer.
const INTERACTION_DEADLINE: Duration = Duration::from_secs(3);

/// A message gatebot sent (or a member wrote), as the fake keeps it.
#[derive(Debug, Clone)]
pub struct Msg {
    pub id: String,
    pub channel: String,
    pub content: String,
    pub components: Value,
    pub author: String,
    /// The message it replies to.
    pub reply_to: Option<String>,
    pub allowed_mentions: Value,
    pub edits: u32,
}

impl Msg {
    /// The labels of its buttons, in order.
    pub fn buttons(&self) -> Vec<String> {
        self.components
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|r| r["components"].as_array().cloned().unwrap_or_default())
            .filter_map(|b| b["label"].as_str().map(str::to_string))
            .collect()
    }

    /// The `custom_id` of the button whose label contains `label`.
    pub fn button(&self, label: &str) -> String {
        self.components
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|r| r["components"].as_array().cloned().unwrap_or_default())
            .find(|b| b["label"].as_str().is_some_and(|l| l.contains(label)))
            .and_then(|b| b["custom_id"].as_str().map(str::to_string))
            .unwrap_or_else(|| panic!("no button {label} on {self:?}"))
    }
}

/// An interaction the fake dispatched, and what gatebot answered to it.
#[derive(Debug, Clone)]
pub struct Interaction {
    pub token: String,
    created: Instant,
    /// The callback's type (5, 6, …), once answered.
    pub acked: Option<u64>,
    /// Follow-ups (`flags`, content) and the original response's content.
    pub followups: Vec<(u64, String)>,
    pub original: Option<String>,
}

#[derive(Default)]
struct Faults {
    rate_limit: u32,
    global: bool,
    fail: u32,
    spent: u32,
    late: u32,
}

#[derive(Default)]
struct Gateway {
    /// The connection open now: where dispatches go.
    conn: Option<mpsc::UnboundedSender<Ws>>,
    /// The session's dispatches, by sequence, for a resume.
    log: Vec<(u64, String)>,
    session: String,
    identifies: u32,
    resumes: u32,
}

#[derive(Default)]
struct Inner {
    messages: Vec<Msg>,
    interactions: HashMap<String, Interaction>,
    commands: HashMap<String, Value>,
    /// Thread → parent channel.
    threads: HashMap<String, String>,
    refused: Vec<(u16, u64, String)>,
    faults: Faults,
    gateway: Gateway,
}

#[derive(Clone)]
struct Shared {
    inner: Arc<Mutex<Inner>>,
    next: Arc<AtomicU64>,
    gateway_url: String,
}

pub struct FakeDiscord {
    pub api: std::net::SocketAddr,
    pub gateway: std::net::SocketAddr,
    shared: Shared,
}

impl FakeDiscord {
    pub async fn start() -> FakeDiscord {
        let gw = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let gateway = gw.local_addr().unwrap();
        let shared = Shared {
            inner: Arc::default(),
            next: Arc::new(AtomicU64::new(1)),
            gateway_url: format!("ws://{gateway}"),
        };
        let router = axum::Router::new()
            .fallback(rest)
            .with_state(shared.clone());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let api = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router).await });
        let s = shared.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = gw.accept().await {
                tokio::spawn(connection(s.clone(), stream));
            }
        });
        FakeDiscord {
            api,
            gateway,
            shared,
        }
    }

    /// The `[discord]` table for this fake.
    pub fn config(&self) -> String {
        format!(
            "[discord]\nbot_token = \"{TOKEN}\"\napi_url = \"http://{}\"\n\
             gateway_url = \"ws://{}\"\nchannels = [\"{CHANNEL}\"]\n\
             approvers = [\"{OWNER}\"]\napprover_roles = [\"{APPROVER_ROLE}\"]\n",
            self.api, self.gateway
        )
    }

    fn id(&self) -> String {
        next_id(&self.shared)
    }

    pub fn messages(&self) -> Vec<Msg> {
        self.shared.inner.lock().unwrap().messages.clone()
    }

    /// gatebot's messages in `channel` that contain `needle`.
    pub fn posted(&self, channel: &str, needle: &str) -> Vec<Msg> {
        self.messages()
            .into_iter()
            .filter(|m| m.author == BOT && m.channel == channel && m.content.contains(needle))
            .collect()
    }

    /// gatebot's message `id`.
    pub fn message(&self, id: &str) -> Msg {
        self.messages()
            .into_iter()
            .find(|m| m.id == id)
            .unwrap_or_else(|| panic!("no message {id}"))
    }

    pub fn interaction(&self, id: &str) -> Interaction {
        self.shared.inner.lock().unwrap().interactions[id].clone()
    }

    /// The guild's commands as registered.
    pub fn commands(&self) -> Option<Value> {
        self.shared
            .inner
            .lock()
            .unwrap()
            .commands
            .get(GUILD)
            .cloned()
    }

    /// The parent of thread `id`, if gatebot started it.
    pub fn thread_parent(&self, id: &str) -> Option<String> {
        self.shared.inner.lock().unwrap().threads.get(id).cloned()
    }

    /// Calls refused: (HTTP status, Discord's error code, message).
    pub fn refused(&self) -> Vec<(u16, u64, String)> {
        self.shared.inner.lock().unwrap().refused.clone()
    }

    /// (IDENTIFYs, RESUMEs) received.
    pub fn sessions(&self) -> (u32, u32) {
        let g = &self.shared.inner.lock().unwrap().gateway;
        (g.identifies, g.resumes)
    }

    /// The next `times` calls are answered 429 (`global` or the route's bucket).
    pub fn rate_limit(&self, times: u32, global: bool) {
        let mut i = self.shared.inner.lock().unwrap();
        i.faults.rate_limit = times;
        i.faults.global = global;
    }

    /// The next `times` calls are answered 500.
    pub fn fail(&self, times: u32) {
        self.shared.inner.lock().unwrap().faults.fail = times;
    }

    /// The next `times` answers say the bucket is spent (`X-RateLimit-Remaining: 0`).
    pub fn spend(&self, times: u32) {
        self.shared.inner.lock().unwrap().faults.spent = times;
    }

    /// The next `times` interactions are dispatched as if 3 s had passed already.
    pub fn late(&self, times: u32) {
        self.shared.inner.lock().unwrap().faults.late = times;
    }

    /// Drops the Gateway connection without a close frame, as a network failure does.
    pub fn drop_connection(&self) {
        let mut i = self.shared.inner.lock().unwrap();
        if let Some(conn) = i.gateway.conn.take() {
            let _ = conn.send(Ws::Binary(b"drop".to_vec().into()));
        }
    }

    /// Waits until gatebot is connected and has its commands registered.
    pub async fn ready(&self) {
        crate::helpers::eventually("gatebot on the Gateway with its commands", async || {
            let i = self.shared.inner.lock().unwrap();
            (i.gateway.conn.is_some() && i.commands.contains_key(GUILD)).then_some(())
        })
        .await;
    }

    /// A member object for `user` (the approver role for [`ROLE_MEMBER`]).
    fn member(user: &str) -> Value {
        let roles: Vec<&str> = if user == ROLE_MEMBER {
            vec![APPROVER_ROLE]
        } else {
            vec![]
        };
        json!({
            "user": Self::user(user),
            "roles": roles, "joined_at": "2026-01-01T00:00:00.000000+00:00",
            "deaf": false, "mute": false, "flags": 0, "pending": false,
            "permissions": "2248473465835073", "nick": null, "avatar": null,
        })
    }

    fn user(user: &str) -> Value {
        json!({
            "id": user, "username": format!("user{}", &user[..3]), "discriminator": "0",
            "global_name": format!("User {}", &user[..3]), "avatar": null, "public_flags": 0,
        })
    }

    /// The message object Discord sends inside an event.
    fn message_object(m: &Msg) -> Value {
        let author = if m.author == BOT {
            json!({"id": BOT, "username": "gatebot", "discriminator": "0", "bot": true, "avatar": null})
        } else {
            Self::user(&m.author)
        };
        json!({
            "id": m.id, "channel_id": m.channel, "author": author, "content": m.content,
            "timestamp": "2026-11-25T09:00:00.000000+00:00", "edited_timestamp": null,
            "tts": false, "mention_everyone": false, "mentions": [], "mention_roles": [],
            "attachments": [], "embeds": [], "pinned": false, "type": 0, "flags": 0,
            "components": m.components,
        })
    }

    /// `user` presses the button `custom_id` on message `message`: the interaction's id.
    pub fn press(&self, user: &str, message: &str, custom_id: &str) -> String {
        let m = self.message(message);
        let data = json!({"custom_id": custom_id, "component_type": 2});
        let mut message_object = Self::message_object(&m);
        message_object["guild_id"] = json!(GUILD);
        self.interact(user, 3, data, &m.channel, Some(message_object))
    }

    /// `user` types slash command `/name arguments`: the interaction's id.
    pub fn command(&self, user: &str, name: &str, arguments: &str) -> String {
        let mut data = json!({"id": self.id(), "name": name, "type": 1, "guild_id": GUILD});
        if !arguments.is_empty() {
            data["options"] = json!([{"name": "arguments", "type": 3, "value": arguments}]);
        }
        self.interact(user, 2, data, CHANNEL, None)
    }

    fn interact(
        &self,
        user: &str,
        kind: u64,
        data: Value,
        channel: &str,
        message: Option<Value>,
    ) -> String {
        let id = self.id();
        let token = format!("aW50ZXJhY3Rpb246{id}:{}", "x".repeat(40));
        let late = {
            let mut i = self.shared.inner.lock().unwrap();
            let late = i.faults.late > 0;
            i.faults.late = i.faults.late.saturating_sub(1);
            late
        };
        let created = if late {
            Instant::now() - INTERACTION_DEADLINE - Duration::from_millis(100)
        } else {
            Instant::now()
        };
        self.shared.inner.lock().unwrap().interactions.insert(
            id.clone(),
            Interaction {
                token: token.clone(),
                created,
                acked: None,
                followups: vec![],
                original: None,
            },
        );
        let mut d = json!({
            "id": id, "application_id": APP, "type": kind, "data": data,
            "guild_id": GUILD, "channel_id": channel,
            "channel": {"id": channel, "type": 0, "guild_id": GUILD, "name": "approvals"},
            "member": Self::member(user), "token": token, "version": 1,
            "app_permissions": "2248473465835073", "locale": "en-US", "guild_locale": "en-US",
            "entitlements": [], "authorizing_integration_owners": {"0": GUILD}, "context": 0,
        });
        if let Some(m) = message {
            d["message"] = m;
        }
        dispatch(&self.shared, "INTERACTION_CREATE", d);
        id
    }

    /// `user` writes `content` in `channel`, replying to `reply_to` if given (and
    /// mentioning the bot if `mention`): the new message's id.
    pub fn write(
        &self,
        user: &str,
        channel: &str,
        content: &str,
        reply_to: Option<&str>,
        mention: bool,
    ) -> String {
        let id = self.id();
        let msg = Msg {
            id: id.clone(),
            channel: channel.to_string(),
            content: content.to_string(),
            components: json!([]),
            author: user.to_string(),
            reply_to: reply_to.map(str::to_string),
            allowed_mentions: json!(null),
            edits: 0,
        };
        let mut d = Self::message_object(&msg);
        d["guild_id"] = json!(GUILD);
        d["member"] = Self::member(user);
        d["member"].as_object_mut().unwrap().remove("user");
        if mention {
            d["mentions"] = json!([{"id": BOT, "username": "gatebot", "discriminator": "0", "bot": true, "avatar": null}]);
        }
        if let Some(r) = reply_to {
            let replied = self.message(r);
            d["type"] = json!(19);
            d["message_reference"] = json!({"type": 0, "message_id": r, "channel_id": replied.channel, "guild_id": GUILD});
            d["referenced_message"] = Self::message_object(&replied);
        }
        self.shared.inner.lock().unwrap().messages.push(msg);
        dispatch(&self.shared, "MESSAGE_CREATE", d);
        id
    }
}

fn next_id(s: &Shared) -> String {
    format!(
        "{}",
        1_300_000_000_000_000_000u64 + s.next.fetch_add(1, Ordering::SeqCst)
    )
}

/// Sends a dispatch on the connection open now, and logs it for a resume.
fn dispatch(s: &Shared, t: &str, d: Value) {
    let mut i = s.inner.lock().unwrap();
    let seq = i.gateway.log.last().map_or(2, |(n, _)| n + 1);
    let text = json!({"op": 0, "t": t, "s": seq, "d": d}).to_string();
    i.gateway.log.push((seq, text.clone()));
    if let Some(conn) = &i.gateway.conn {
        let _ = conn.send(Ws::Text(text.into()));
    }
}

/// One Gateway connection.
async fn connection(s: Shared, stream: tokio::net::TcpStream) {
    let Ok(ws) = tokio_tungstenite::accept_async(stream).await else {
        return;
    };
    let (mut sink, mut source) = ws.split();
    let (tx, mut rx) = mpsc::unbounded_channel::<Ws>();
    let hello = json!({"op": 10, "d": {"heartbeat_interval": 41250}, "s": null, "t": null});
    if sink.send(Ws::Text(hello.to_string().into())).await.is_err() {
        return;
    }
    loop {
        tokio::select! {
            out = rx.recv() => match out {
                Some(Ws::Binary(b)) if &b[..] == b"drop" => return,
                Some(m) => { if sink.send(m).await.is_err() { return; } }
                None => return,
            },
            incoming = source.next() => {
                let Some(Ok(Ws::Text(text))) = incoming else { return };
                let v: Value = serde_json::from_str(&text).unwrap_or_default();
                match v["op"].as_u64() {
                    Some(1) => { let _ = tx.send(Ws::Text(json!({"op": 11, "d": null, "s": null, "t": null}).to_string().into())); }
                    Some(2) => {
                        if v["d"]["token"].as_str() != Some(&format!("Bot {TOKEN}")) && v["d"]["token"].as_str() != Some(TOKEN) {
                            let _ = sink.send(Ws::Close(Some(tokio_tungstenite::tungstenite::protocol::CloseFrame {
                                code: 4004.into(), reason: "Authentication failed.".into(),
                            }))).await;
                            return;
                        }
                        let session = {
                            let mut i = s.inner.lock().unwrap();
                            i.gateway.identifies += 1;
                            i.gateway.session = format!("session{}", i.gateway.identifies);
                            i.gateway.log.clear();
                            i.gateway.conn = Some(tx.clone());
                            i.gateway.session.clone()
                        };
                        let ready = json!({"op": 0, "t": "READY", "s": 1, "d": {
                            "v": 10, "user_settings": {}, "session_type": "normal",
                            "user": {"id": BOT, "username": "gatebot", "discriminator": "0", "bot": true, "avatar": null, "verified": true, "flags": 0, "mfa_enabled": false},
                            "guilds": [{"id": GUILD, "unavailable": true}],
                            "session_id": session, "resume_gateway_url": s.gateway_url,
                            "application": {"id": APP, "flags": 0}, "private_channels": [],
                        }});
                        let guild = json!({"op": 0, "t": "GUILD_CREATE", "s": 2, "d": {
                            "id": GUILD, "name": "Test", "unavailable": false, "channels": [
                                {"id": CHANNEL, "type": 0, "name": "approvals", "guild_id": GUILD}
                            ], "threads": [], "members": [], "roles": [],
                        }});
                        let mut i = s.inner.lock().unwrap();
                        i.gateway.log.push((2, guild.to_string()));
                        let _ = tx.send(Ws::Text(ready.to_string().into()));
                        let _ = tx.send(Ws::Text(guild.to_string().into()));
                    }
                    Some(6) => {
                        let mut i = s.inner.lock().unwrap();
                        let ok = v["d"]["session_id"].as_str() == Some(i.gateway.session.as_str())
                            && v["d"]["token"].as_str().is_some_and(|t| t.ends_with(TOKEN));
                        if !ok {
                            let _ = tx.send(Ws::Text(json!({"op": 9, "d": false, "s": null, "t": null}).to_string().into()));
                            continue;
                        }
                        i.gateway.resumes += 1;
                        i.gateway.conn = Some(tx.clone());
                        let after = v["d"]["seq"].as_u64().unwrap_or_default();
                        for (n, text) in &i.gateway.log {
                            if *n > after {
                                let _ = tx.send(Ws::Text(text.clone().into()));
                            }
                        }
                        let seq = i.gateway.log.last().map_or(2, |(n, _)| *n);
                        let _ = tx.send(Ws::Text(json!({"op": 0, "t": "RESUMED", "s": seq, "d": {}}).to_string().into()));
                    }
                    _ => {}
                }
            }
        }
    }
}

fn error(s: &Shared, status: StatusCode, code: u64, message: &str) -> Response {
    s.inner
        .lock()
        .unwrap()
        .refused
        .push((status.as_u16(), code, message.to_string()));
    (
        status,
        axum::Json(json!({"code": code, "message": message})),
    )
        .into_response()
}

/// An answer with the rate-limit headers Discord sends.
fn ok(s: &Shared, status: StatusCode, body: Option<Value>) -> Response {
    let spent = {
        let mut i = s.inner.lock().unwrap();
        let spent = i.faults.spent > 0;
        i.faults.spent = i.faults.spent.saturating_sub(1);
        spent
    };
    let headers = [
        ("x-ratelimit-limit", "5".to_string()),
        (
            "x-ratelimit-remaining",
            if spent { "0" } else { "4" }.to_string(),
        ),
        (
            "x-ratelimit-reset-after",
            if spent { "2.500" } else { "1.000" }.to_string(),
        ),
        ("x-ratelimit-bucket", "41f9cd3b0e5c4a8f".to_string()),
    ];
    match body {
        Some(b) => (status, headers, axum::Json(b)).into_response(),
        None => (status, headers).into_response(),
    }
}

/// Every REST route: auth, faults, then the route.
async fn rest(
    State(s): State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let auth = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if auth != Some(&format!("Bot {TOKEN}")) {
        return error(&s, StatusCode::UNAUTHORIZED, 0, "401: Unauthorized");
    }
    {
        let mut i = s.inner.lock().unwrap();
        if i.faults.rate_limit > 0 {
            i.faults.rate_limit -= 1;
            let global = i.faults.global;
            i.refused
                .push((429, 0, "You are being rate limited.".into()));
            drop(i);
            let mut h = vec![
                ("retry-after", "1".to_string()),
                (
                    "x-ratelimit-scope",
                    if global { "global" } else { "user" }.to_string(),
                ),
            ];
            if global {
                h.push(("x-ratelimit-global", "true".to_string()));
            } else {
                h.extend([
                    ("x-ratelimit-limit", "5".to_string()),
                    ("x-ratelimit-remaining", "0".to_string()),
                    ("x-ratelimit-reset-after", "0.500".to_string()),
                    ("x-ratelimit-bucket", "41f9cd3b0e5c4a8f".to_string()),
                ]);
            }
            let mut r = (
                StatusCode::TOO_MANY_REQUESTS,
                axum::Json(json!({"message": "You are being rate limited.", "retry_after": 0.5, "global": global, "code": 0})),
            )
                .into_response();
            for (k, v) in h {
                r.headers_mut().insert(k, v.parse().unwrap());
            }
            return r;
        }
        if i.faults.fail > 0 {
            i.faults.fail -= 1;
            drop(i);
            return error(
                &s,
                StatusCode::INTERNAL_SERVER_ERROR,
                0,
                "500: Internal Server Error",
            );
        }
    }
    let path = uri.path().to_string();
    let Some(path) = path.strip_prefix("/api/v10/") else {
        return error(&s, StatusCode::NOT_FOUND, 0, "404: Not Found");
    };
    let parts: Vec<&str> = path.split('/').collect();
    let json: Value = if body.is_empty() {
        Value::Null
    } else {
        match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(_) => {
                return error(
                    &s,
                    StatusCode::BAD_REQUEST,
                    50109,
                    "The request body contains invalid JSON.",
                )
            }
        }
    };
    match (method.as_str(), parts.as_slice()) {
        ("POST", ["channels", ch, "messages"]) => create_message(&s, ch, &json),
        ("PATCH", ["channels", ch, "messages", id]) => edit_message(&s, ch, id, &json),
        ("GET", ["channels", ch, "messages", id]) => {
            let m = s
                .inner
                .lock()
                .unwrap()
                .messages
                .iter()
                .find(|m| m.id == *id && m.channel == *ch)
                .cloned();
            match m {
                Some(m) => ok(&s, StatusCode::OK, Some(FakeDiscord::message_object(&m))),
                None => error(&s, StatusCode::NOT_FOUND, 10008, "Unknown Message"),
            }
        }
        ("GET", ["channels", ch]) => {
            let parent = s.inner.lock().unwrap().threads.get(*ch).cloned();
            let channel = match parent {
                Some(p) => {
                    json!({"id": ch, "type": 11, "parent_id": p, "guild_id": GUILD, "name": "thread"})
                }
                None if *ch == CHANNEL => {
                    json!({"id": ch, "type": 0, "guild_id": GUILD, "name": "approvals"})
                }
                None => return error(&s, StatusCode::NOT_FOUND, 10003, "Unknown Channel"),
            };
            ok(&s, StatusCode::OK, Some(channel))
        }
        ("POST", ["channels", ch, "messages", id, "threads"]) => {
            let name = json["name"].as_str().unwrap_or_default();
            if name.is_empty() || name.chars().count() > 100 {
                return error(
                    &s,
                    StatusCode::BAD_REQUEST,
                    50035,
                    "Invalid Form Body (name)",
                );
            }
            let mut i = s.inner.lock().unwrap();
            if !i.messages.iter().any(|m| m.id == *id && m.channel == *ch) {
                drop(i);
                return error(&s, StatusCode::NOT_FOUND, 10008, "Unknown Message");
            }
            if i.threads.contains_key(*id) {
                drop(i);
                return error(
                    &s,
                    StatusCode::BAD_REQUEST,
                    160004,
                    "A thread has already been created for this message",
                );
            }
            i.threads.insert(id.to_string(), ch.to_string());
            drop(i);
            let thread =
                json!({"id": id, "type": 11, "parent_id": ch, "guild_id": GUILD, "name": name});
            dispatch(&s, "THREAD_CREATE", thread.clone());
            ok(&s, StatusCode::CREATED, Some(thread))
        }
        ("POST", ["interactions", id, token, "callback"]) => callback(&s, id, token, &json),
        ("PATCH", ["webhooks", app, token, "messages", "@original"]) if *app == APP => {
            answer(&s, token, &json, true)
        }
        ("POST", ["webhooks", app, token]) if *app == APP => answer(&s, token, &json, false),
        ("PUT", ["applications", app, "guilds", guild, "commands"]) if *app == APP => {
            let Some(list) = json.as_array() else {
                return error(&s, StatusCode::BAD_REQUEST, 50035, "Invalid Form Body");
            };
            for c in list {
                let name = c["name"].as_str().unwrap_or_default();
                let description = c["description"].as_str().unwrap_or_default();
                let valid_name = (1..=32).contains(&name.len())
                    && name.chars().all(|ch| {
                        ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-' || ch == '_'
                    });
                if !valid_name || !(1..=100).contains(&description.chars().count()) {
                    return error(
                        &s,
                        StatusCode::BAD_REQUEST,
                        50035,
                        &format!("Invalid Form Body (command {name})"),
                    );
                }
            }
            s.inner
                .lock()
                .unwrap()
                .commands
                .insert(guild.to_string(), json.clone());
            ok(&s, StatusCode::OK, Some(json))
        }
        _ => error(
            &s,
            StatusCode::NOT_FOUND,
            0,
            &format!("404: Not Found ({method} {path})"),
        ),
    }
}

/// What Discord checks of a message's body; `Some(field)` names the first violation.
fn invalid(body: &Value) -> Option<String> {
    let content = body["content"].as_str().unwrap_or_default();
    if content.chars().count() > 2000 {
        return Some("content: Must be 2000 or fewer in length.".into());
    }
    let rows = body["components"].as_array().cloned().unwrap_or_default();
    if rows.len() > 5 {
        return Some("components: Must be 5 or fewer in length.".into());
    }
    for row in &rows {
        let buttons = row["components"].as_array().cloned().unwrap_or_default();
        if row["type"] != 1 || buttons.is_empty() || buttons.len() > 5 {
            return Some("components.N.components: Must be between 1 and 5 in length.".into());
        }
        for b in &buttons {
            let id = b["custom_id"].as_str().unwrap_or_default();
            let label = b["label"].as_str().unwrap_or_default();
            if b["type"] != 2
                || id.is_empty()
                || id.chars().count() > 100
                || label.chars().count() > 80
            {
                return Some(format!("button {id}: custom_id 1 to 100, label at most 80"));
            }
        }
    }
    if content.is_empty() && rows.is_empty() {
        return Some("Cannot send an empty message".into());
    }
    None
}

fn create_message(s: &Shared, ch: &str, body: &Value) -> Response {
    if let Some(why) = invalid(body) {
        return error(
            s,
            StatusCode::BAD_REQUEST,
            50035,
            &format!("Invalid Form Body: {why}"),
        );
    }
    let known = {
        let i = s.inner.lock().unwrap();
        ch == CHANNEL || i.threads.contains_key(ch)
    };
    if !known {
        return error(s, StatusCode::NOT_FOUND, 10003, "Unknown Channel");
    }
    let m = Msg {
        id: next_id(s),
        channel: ch.to_string(),
        content: body["content"].as_str().unwrap_or_default().to_string(),
        components: body["components"].clone(),
        author: BOT.into(),
        reply_to: body["message_reference"]["message_id"]
            .as_str()
            .map(str::to_string),
        allowed_mentions: body["allowed_mentions"].clone(),
        edits: 0,
    };
    s.inner.lock().unwrap().messages.push(m.clone());
    let mut object = FakeDiscord::message_object(&m);
    object["guild_id"] = json!(GUILD);
    ok(s, StatusCode::OK, Some(object))
}

fn edit_message(s: &Shared, ch: &str, id: &str, body: &Value) -> Response {
    if let Some(why) = invalid(body) {
        return error(
            s,
            StatusCode::BAD_REQUEST,
            50035,
            &format!("Invalid Form Body: {why}"),
        );
    }
    let mut i = s.inner.lock().unwrap();
    let Some(m) = i
        .messages
        .iter_mut()
        .find(|m| m.id == id && m.channel == ch)
    else {
        drop(i);
        return error(s, StatusCode::NOT_FOUND, 10008, "Unknown Message");
    };
    if m.author != BOT {
        drop(i);
        return error(
            s,
            StatusCode::FORBIDDEN,
            50005,
            "Cannot edit a message authored by another user",
        );
    }
    if let Some(c) = body["content"].as_str() {
        m.content = c.to_string();
    }
    if body.get("components").is_some() {
        m.components = body["components"].clone();
    }
    m.allowed_mentions = body["allowed_mentions"].clone();
    m.edits += 1;
    let object = FakeDiscord::message_object(m);
    drop(i);
    ok(s, StatusCode::OK, Some(object))
}

fn callback(s: &Shared, id: &str, token: &str, body: &Value) -> Response {
    let mut i = s.inner.lock().unwrap();
    let Some(it) = i.interactions.get_mut(id).filter(|it| it.token == token) else {
        drop(i);
        return error(s, StatusCode::NOT_FOUND, 10062, "Unknown interaction");
    };
    if it.created.elapsed() > INTERACTION_DEADLINE {
        drop(i);
        return error(s, StatusCode::NOT_FOUND, 10062, "Unknown interaction");
    }
    if it.acked.is_some() {
        drop(i);
        return error(
            s,
            StatusCode::BAD_REQUEST,
            40060,
            "Interaction has already been acknowledged.",
        );
    }
    let Some(kind) = body["type"]
        .as_u64()
        .filter(|k| [1, 4, 5, 6, 7, 9].contains(k))
    else {
        drop(i);
        return error(
            s,
            StatusCode::BAD_REQUEST,
            50035,
            "Invalid Form Body (type)",
        );
    };
    it.acked = Some(kind);
    drop(i);
    ok(s, StatusCode::NO_CONTENT, None)
}

/// A follow-up or the original response, through the interaction's token.
fn answer(s: &Shared, token: &str, body: &Value, original: bool) -> Response {
    if let Some(why) = invalid(body) {
        return error(
            s,
            StatusCode::BAD_REQUEST,
            50035,
            &format!("Invalid Form Body: {why}"),
        );
    }
    let mut i = s.inner.lock().unwrap();
    let Some(it) = i
        .interactions
        .values_mut()
        .find(|it| it.token == token && it.acked.is_some())
    else {
        drop(i);
        return error(s, StatusCode::NOT_FOUND, 10015, "Unknown Webhook");
    };
    let content = body["content"].as_str().unwrap_or_default().to_string();
    if original {
        it.original = Some(content.clone());
    } else {
        it.followups
            .push((body["flags"].as_u64().unwrap_or_default(), content.clone()));
    }
    drop(i);
    let id = next_id(s);
    ok(
        s,
        StatusCode::OK,
        Some(
            json!({"id": id, "channel_id": CHANNEL, "content": content, "author": {"id": APP, "username": "gatebot", "discriminator": "0", "bot": true, "avatar": null}, "flags": body["flags"]}),
        ),
    )
}
