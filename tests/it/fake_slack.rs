//! A fake Slack on loopback: the Web API (every call recorded with its params and
//! arrival time), the `response_url`s of slash commands (what is posted to them is
//! recorded too), and a Socket Mode WebSocket server that says `hello`, sends the
//! envelopes a test injects and records the acks. Like Slack it keeps several
//! connections of one app open at once (up to ten) and hands each envelope to one of
//! them, in turn. It keeps the bot's messages, so
//! `conversations.replies` (a GET, arguments in the query string, as Slack takes
//! them) reads a thread's parent back, and thread replies say who wrote their parent
//! (`parent_user_id`); a post can take effect and lose its answer.
//!
//! In "chaos" mode a share of `chat.postMessage` and `chat.update` calls fail before
//! they take effect (429, 500, a dropped connection) or answer slowly, so a test can
//! count exactly how often each message really reached "Slack".
//!
//! Optionally ([`FakeSlack::enforce_limits`]) it enforces Slack's documented limits on
//! `chat.postMessage` and `chat.update` with 429s, and counts them.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::{SinkExt, StreamExt};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

use crate::helpers::eventually;

/// One Web API call.
#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    pub params: Value,
    /// The `Authorization` header.
    pub auth: String,
    /// The `ts` answered (postMessage).
    pub ts: Option<String>,
    /// When the call arrived.
    pub at: Instant,
    /// Whether it was answered `ok: true`.
    pub ok: bool,
}

/// How an answer meant for one user arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// `chat.postEphemeral`.
    Ephemeral,
    /// A POST to a slash command's `response_url`.
    ResponseUrl,
}

/// Something only one user sees.
#[derive(Debug, Clone)]
pub struct Answer {
    pub via: Via,
    pub user: String,
    /// The JSON posted.
    pub params: Value,
    pub at: Instant,
}

impl Answer {
    /// What the user reads: the blocks' texts, else the plain `text`.
    pub fn text(&self) -> String {
        let shown: Vec<&str> = self.params["blocks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| b["text"]["text"].as_str())
            .collect();
        if shown.is_empty() {
            self.params["text"].as_str().unwrap_or_default().to_string()
        } else {
            shown.join("\n")
        }
    }
}

enum ToClient {
    Text(String),
    /// Drop the TCP connection without a close frame, like a network failure.
    Drop,
}

/// The open Socket Mode connections, oldest first, and the next to send to.
#[derive(Default)]
struct Sockets {
    open: Vec<(usize, mpsc::UnboundedSender<ToClient>)>,
    next: usize,
}

#[derive(Default)]
struct Inner {
    ws_port: u16,
    calls: Mutex<Vec<Call>>,
    next_ts: AtomicU64,
    next_envelope: AtomicU64,
    /// Method → how many more calls get a 429, and its `Retry-After` in seconds.
    limited: Mutex<HashMap<String, (u32, u64)>>,
    /// What was posted to response_urls.
    responses: Mutex<Vec<Answer>>,
    next_response: AtomicU64,
    /// Whether response_urls answer 404 (as an expired one does).
    responses_fail: std::sync::atomic::AtomicBool,
    /// Method → an `error` code to answer with (`ok: false`).
    failing: Mutex<HashMap<String, String>>,
    conns: Mutex<Sockets>,
    connections: AtomicUsize,
    acks: Mutex<Vec<String>>,
    /// Fail this share of posts and updates at random.
    chaos: Mutex<Option<(f64, StdRng)>>,
    /// The bot's messages by `ts`, as `conversations.replies` returns them.
    messages: Mutex<HashMap<String, Value>>,
    /// Posts that take effect but whose answer is lost (the connection breaks).
    lose_posts: AtomicUsize,
    /// Enforce Slack's documented limits with 429s.
    limits: AtomicBool,
    /// What the limits remember of the calls that took effect.
    usage: Mutex<Usage>,
    /// 429s answered because a limit was exceeded.
    rate_limited: AtomicU64,
}

/// Slack's documented limits ("Rate limits", docs.slack.dev/apis/web-api/rate-limits),
/// as this fake enforces them:
///
/// - `chat.postMessage`: "1 message per second per channel, short bursts allowed"
///   (Slack: "Short bursts >1 allowed. If you attempt bursts, there is no guarantee
///   that messages will" all be posted). Taken at its least: a token bucket per channel
///   of [`POST_BURST`] messages, refilled at one a second: after a quiet spell two may
///   come back to back, then one a second; over any `T` seconds at most `T + 2`. The
///   bucket's second token also absorbs the network's jitter between calls paced 1 s
///   apart or more. (Slack's workspace-wide limit on posts is not published; not
///   enforced.)
/// - `chat.update`: Tier 3, "50+ per minute", applied "per API method per workspace/team
///   per app": taken at its floor, at most [`UPDATES_PER_MINUTE`] calls that took effect
///   in any 60 s window (half-open: a call exactly 60 s after the 50th-last is allowed),
///   whatever the channel.
///
/// A call over a limit gets 429, `Retry-After` (whole seconds, at least 1) and
/// `{"ok": false, "error": "ratelimited"}`, takes no effect and is not counted against
/// the limits.
const POST_BURST: f64 = 2.0;
const UPDATES_PER_MINUTE: usize = 50;
const MINUTE: Duration = Duration::from_secs(60);

#[derive(Default)]
struct Usage {
    /// Channel → (tokens left in its post bucket, when they were counted).
    posts: HashMap<String, (f64, Instant)>,
    /// When each chat.update that took effect in the last minute arrived, oldest first.
    updates: VecDeque<Instant>,
}

impl Usage {
    /// Seconds until a call to `method` in `channel` would be within the limits, if it
    /// is not now; else the call is counted.
    fn over(&mut self, method: &str, channel: &str, now: Instant) -> Option<u64> {
        match method {
            "chat.postMessage" => {
                let (tokens, at) = self
                    .posts
                    .entry(channel.to_string())
                    .or_insert((POST_BURST, now));
                *tokens = (*tokens + now.duration_since(*at).as_secs_f64()).min(POST_BURST);
                *at = now;
                if *tokens >= 1.0 {
                    *tokens -= 1.0;
                    return None;
                }
                Some(((1.0 - *tokens).ceil() as u64).max(1))
            }
            "chat.update" => {
                while self
                    .updates
                    .front()
                    .is_some_and(|t| now.duration_since(*t) >= MINUTE)
                {
                    self.updates.pop_front();
                }
                if self.updates.len() < UPDATES_PER_MINUTE {
                    self.updates.push_back(now);
                    return None;
                }
                let oldest = *self.updates.front()?;
                let left = MINUTE.saturating_sub(now.duration_since(oldest));
                Some(left.as_secs_f64().ceil().max(1.0) as u64)
            }
            _ => None,
        }
    }
}

#[derive(Clone)]
pub struct FakeSlack {
    /// For `[slack] api_url`.
    pub api_url: String,
    /// `http://127.0.0.1:N`, for response_urls.
    base_url: String,
    inner: Arc<Inner>,
}

impl FakeSlack {
    pub async fn start() -> FakeSlack {
        let api = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let ws = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let inner = Arc::new(Inner {
            ws_port: ws.local_addr().unwrap().port(),
            next_ts: AtomicU64::new(100),
            ..Inner::default()
        });
        let base_url = format!("http://{}", api.local_addr().unwrap());
        let router = axum::Router::new()
            .route("/api/{method}", axum::routing::post(web).get(web))
            .route("/response/{user}/{n}", axum::routing::post(response))
            .with_state(inner.clone());
        tokio::spawn(async move { axum::serve(api, router).await });
        tokio::spawn(accept(ws, inner.clone()));
        FakeSlack {
            api_url: format!("{base_url}/api"),
            base_url,
            inner,
        }
    }

    /// The `[slack]` section for a Socket Mode daemon using this fake.
    pub fn config(&self) -> String {
        format!(
            "[slack]\nbot_token = \"xoxb-test-bot\"\napp_token = \"xapp-test-app\"\n\
             api_url = \"{}\"\nchannels = [\"C1\"]\napprovers = [\"U1\"]\n",
            self.api_url
        )
    }

    /// The messages posted in `channel` that mention users (`<@U…>` in their blocks):
    /// (the thread they were posted in, the users mentioned), oldest first. A mention
    /// Slack would not read (escaped, or not a user id) is not one.
    pub fn mentions(&self, channel: &str) -> Vec<(Option<String>, Vec<String>)> {
        self.calls("chat.postMessage")
            .into_iter()
            .filter(|c| c.ok && c.params["channel"] == channel)
            .filter_map(|c| {
                let text = c.params["blocks"].to_string();
                let users: Vec<String> = text
                    .split("<@")
                    .skip(1)
                    .filter_map(|rest| {
                        let id = &rest[..rest.find('>')?];
                        let user = id.len() >= 2
                            && matches!(id.as_bytes()[0], b'U' | b'W')
                            && id
                                .bytes()
                                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
                        user.then(|| id.to_string())
                    })
                    .collect();
                let thread = c.params["thread_ts"].as_str().map(str::to_string);
                (!users.is_empty()).then_some((thread, users))
            })
            .collect()
    }

    pub fn calls(&self, method: &str) -> Vec<Call> {
        let calls = self.inner.calls.lock().unwrap();
        calls
            .iter()
            .filter(|c| c.method == method)
            .cloned()
            .collect()
    }

    /// The next `times` calls to `method` get a 429 with `Retry-After: retry_after` (s).
    pub fn rate_limit(&self, method: &str, times: u32, retry_after: u64) {
        let mut limited = self.inner.limited.lock().unwrap();
        limited.insert(method.to_string(), (times, retry_after));
    }

    /// Answer `chat.postMessage` and `chat.update` calls beyond Slack's documented limits
    /// (see [`POST_BURST`]) with 429: they take no effect.
    pub fn enforce_limits(&self) {
        self.inner.limits.store(true, Ordering::SeqCst);
    }

    /// How many 429s the limits caused.
    pub fn rate_limited(&self) -> u64 {
        self.inner.rate_limited.load(Ordering::SeqCst)
    }

    /// Fail `share` (0.0–1.0) of chat.postMessage and chat.update calls at random: 429,
    /// 500, a dropped connection or a slow answer, reproducibly for a `seed`.
    pub fn chaos(&self, share: f64, seed: u64) {
        *self.inner.chaos.lock().unwrap() = Some((share, StdRng::seed_from_u64(seed)));
    }

    /// The next `n` chat.postMessage calls take effect (the message is in the channel)
    /// but the connection breaks before the answer: gatebot never learns the `ts`.
    pub fn lose_next_posts(&self, n: usize) {
        self.inner.lose_posts.fetch_add(n, Ordering::SeqCst);
    }

    /// The `ts` of every message of the bot in `channel` whose text names `needle`,
    /// whether or not gatebot got the answer to its post, oldest first.
    pub fn stored(&self, channel: &str, needle: &str) -> Vec<String> {
        let messages = self.inner.messages.lock().unwrap();
        let mut ts: Vec<String> = messages
            .values()
            .filter(|m| {
                m["channel"] == channel && m["text"].as_str().unwrap_or_default().contains(needle)
            })
            .map(|m| m["ts"].as_str().unwrap().to_string())
            .collect();
        ts.sort();
        ts
    }

    /// A thread reply event from `user` under `thread_ts`, with `parent_user_id` as
    /// Slack sets it: the bot's user id if the bot wrote the parent.
    pub fn thread_reply(&self, user: &str, text: &str, thread_ts: &str, event_id: &str) -> Value {
        let parent = self
            .inner
            .messages
            .lock()
            .unwrap()
            .get(thread_ts)
            .map_or("U_SOMEONE".to_string(), |m| {
                m["user"].as_str().unwrap().to_string()
            });
        let mut v = message(user, text, Some(thread_ts), event_id);
        v["event"]["parent_user_id"] = json!(parent);
        v
    }

    /// Every response_url answers 404 from now on.
    pub fn fail_responses(&self) {
        self.inner.responses_fail.store(true, Ordering::SeqCst);
    }

    /// What `user` was told privately, by either way, oldest first.
    pub fn answers(&self, user: &str) -> Vec<Answer> {
        let mut all: Vec<Answer> = self
            .calls("chat.postEphemeral")
            .into_iter()
            .filter(|c| c.ok && c.params["user"] == user)
            .map(|c| Answer {
                via: Via::Ephemeral,
                user: user.to_string(),
                params: c.params,
                at: c.at,
            })
            .collect();
        all.extend(
            self.inner
                .responses
                .lock()
                .unwrap()
                .iter()
                .filter(|r| r.user == user)
                .cloned(),
        );
        all.sort_by_key(|a| a.at);
        all
    }

    /// A slash command payload from `user`, whose response_url leads back here.
    pub fn slash(&self, user: &str, command: &str, text: &str) -> Value {
        let n = self.inner.next_response.fetch_add(1, Ordering::SeqCst);
        json!({
            "token": "verification-token",
            "team_id": "T1",
            "channel_id": "C1",
            "channel_name": "approvals",
            "user_id": user,
            "user_name": format!("name-{user}"),
            "command": command,
            "text": text,
            "api_app_id": "A1",
            "response_url": format!("{}/response/{user}/{n}", self.base_url),
            "trigger_id": format!("trigger-cmd-{n}")
        })
    }

    /// Every call to `method` answers `{"ok": false, "error": code}`.
    pub fn fail(&self, method: &str, code: &str) {
        let mut failing = self.inner.failing.lock().unwrap();
        failing.insert(method.to_string(), code.to_string());
    }

    /// Socket Mode connections made since start.
    pub fn connections(&self) -> usize {
        self.inner.connections.load(Ordering::SeqCst)
    }

    /// Socket Mode connections open now.
    pub fn open_connections(&self) -> usize {
        self.inner.conns.lock().unwrap().open.len()
    }

    pub fn acks(&self) -> Vec<String> {
        self.inner.acks.lock().unwrap().clone()
    }

    /// Drops the newest WebSocket connection abruptly.
    pub fn drop_connection(&self) {
        if let Some((_, tx)) = self.inner.conns.lock().unwrap().open.pop() {
            let _ = tx.send(ToClient::Drop);
        }
    }

    /// Sends an envelope once a client is connected; returns its envelope id.
    pub async fn send(&self, kind: &str, payload: Value) -> String {
        let n = self.inner.next_envelope.fetch_add(1, Ordering::SeqCst);
        let id = format!("env-{n}");
        self.send_frame(json!({
            "envelope_id": id,
            "type": kind,
            "accepts_response_payload": kind != "events_api",
            "payload": payload,
        }))
        .await;
        id
    }

    /// Sends a raw frame once a client is connected: to the open connections in turn.
    pub async fn send_frame(&self, frame: Value) {
        eventually("a Socket Mode client to send to", async || {
            let mut conns = self.inner.conns.lock().unwrap();
            if conns.open.is_empty() {
                return None;
            }
            let turn = conns.next % conns.open.len();
            conns.next = conns.next.wrapping_add(1);
            let (_, tx) = &conns.open[turn];
            tx.send(ToClient::Text(frame.to_string())).ok()
        })
        .await
    }
}

async fn web(
    State(st): State<Arc<Inner>>,
    Path(method): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("json"));
    // Read methods take their arguments in the query string (a GET), like Slack.
    let params: Value = if let Some(q) = query.filter(|q| !q.is_empty()) {
        json!(serde_urlencoded::from_str::<HashMap<String, String>>(&q).unwrap_or_default())
    } else if is_json {
        serde_json::from_slice(&body).unwrap_or(Value::Null)
    } else {
        json!(serde_urlencoded::from_bytes::<HashMap<String, String>>(&body).unwrap_or_default())
    };
    let auth = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let mut call = Call {
        method: method.clone(),
        params: params.clone(),
        auth: auth.clone(),
        ts: None,
        at: Instant::now(),
        ok: false,
    };
    let limited = {
        let mut l = st.limited.lock().unwrap();
        match l.get_mut(&method) {
            Some((n, secs)) if *n > 0 => {
                *n -= 1;
                Some(*secs)
            }
            _ => None,
        }
    };
    let failing = st.failing.lock().unwrap().get(&method).cloned();
    let invalid = too_long(&params);
    // 0: 429, 1: 500, 2: dropped, 3: slow.
    let chaos = match (&mut *st.chaos.lock().unwrap(), method.as_str()) {
        (Some((share, rng)), "chat.postMessage" | "chat.update") => rng
            .random_bool(*share)
            .then(|| (rng.random_range(0..4u8), rng.random_range(200..2000u64))),
        _ => None,
    };
    if let Some((3, ms)) = chaos {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    // Only a call that would otherwise take effect is weighed against the limits.
    let over = (st.limits.load(Ordering::SeqCst)
        && chaos.is_none_or(|(kind, _)| kind == 3)
        && limited.is_none()
        && invalid.is_none()
        && failing.is_none())
    .then(|| {
        let channel = params["channel"].as_str().unwrap_or_default();
        st.usage
            .lock()
            .unwrap()
            .over(&method, channel, Instant::now())
    })
    .flatten();
    let response = if let Some((kind @ 0..=2, _)) = chaos {
        match kind {
            0 => (
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, "1".to_string())],
                Json(json!({"ok": false, "error": "ratelimited"})),
            )
                .into_response(),
            1 => (StatusCode::INTERNAL_SERVER_ERROR, "internal error").into_response(),
            _ => {
                let broken = futures_util::stream::once(async {
                    Err::<Bytes, std::io::Error>(std::io::Error::other("connection dropped"))
                });
                axum::body::Body::from_stream(broken).into_response()
            }
        }
    } else if let Some(secs) = limited.or(over) {
        if over.is_some() {
            st.rate_limited.fetch_add(1, Ordering::SeqCst);
        }
        (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, secs.to_string())],
            Json(json!({"ok": false, "error": "ratelimited"})),
        )
            .into_response()
    } else if let Some(why) = invalid {
        Json(json!({"ok": false, "error": "invalid_blocks", "errors": [why]})).into_response()
    } else if let Some(code) = failing {
        // Echo the credentials, as a careless proxy might: they must not reach gatebot's log.
        Json(json!({"ok": false, "error": format!("{code} ({auth})")})).into_response()
    } else {
        let ts = format!(
            "1700000000.{:06}",
            st.next_ts.fetch_add(1, Ordering::SeqCst)
        );
        let channel = params["channel"].clone();
        let body = match method.as_str() {
            "auth.test" => {
                json!({"ok": true, "user": "gatebot", "user_id": "UBOT", "team": "Test", "team_id": "T1", "bot_id": "BBOT"})
            }
            "apps.connections.open" => {
                json!({"ok": true, "url": format!("ws://127.0.0.1:{}/link/?ticket=t{ts}", st.ws_port)})
            }
            "chat.postMessage" => {
                st.messages.lock().unwrap().insert(
                    ts.clone(),
                    json!({"type": "message", "user": "UBOT", "bot_id": "BBOT", "channel": channel,
                           "text": params["text"], "blocks": params["blocks"], "ts": ts}),
                );
                let lost = st
                    .lose_posts
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok();
                if lost {
                    st.calls.lock().unwrap().push(call);
                    let broken = futures_util::stream::once(async {
                        Err::<Bytes, std::io::Error>(std::io::Error::other("connection dropped"))
                    });
                    return axum::body::Body::from_stream(broken).into_response();
                }
                call.ts = Some(ts.clone());
                json!({"ok": true, "channel": channel, "ts": ts, "message": {"text": params["text"], "ts": ts}})
            }
            "chat.update" => {
                if let Some(m) = st
                    .messages
                    .lock()
                    .unwrap()
                    .get_mut(params["ts"].as_str().unwrap_or_default())
                {
                    m["text"] = params["text"].clone();
                    m["blocks"] = params["blocks"].clone();
                }
                json!({"ok": true, "channel": channel, "ts": params["ts"], "text": params["text"], "message": {"text": params["text"], "ts": params["ts"]}})
            }
            "conversations.replies" => {
                let parent = st
                    .messages
                    .lock()
                    .unwrap()
                    .get(params["ts"].as_str().unwrap_or_default())
                    .filter(|m| m["channel"] == params["channel"])
                    .cloned();
                match parent {
                    Some(m) => json!({"ok": true, "messages": [m], "has_more": false}),
                    None => json!({"ok": false, "error": "thread_not_found"}),
                }
            }
            "chat.postEphemeral" => json!({"ok": true, "message_ts": ts}),
            "views.open" => json!({"ok": true, "view": {"id": "V1"}}),
            _ => json!({"ok": false, "error": "unknown_method"}),
        };
        call.ok = body["ok"] == true;
        Json(body).into_response()
    };
    st.calls.lock().unwrap().push(call);
    response
}

/// What Slack would refuse in a message or view: more than 50 blocks, or a text object
/// over 3000 characters.
fn too_long(params: &Value) -> Option<String> {
    fn walk(v: &Value, out: &mut Option<String>) {
        match v {
            Value::Object(m) => {
                let is_text = matches!(
                    m.get("type").and_then(Value::as_str),
                    Some("mrkdwn" | "plain_text")
                );
                if let (true, Some(t)) = (is_text, m.get("text").and_then(Value::as_str)) {
                    if t.chars().count() > 3000 {
                        *out = Some(format!("a text object of {} characters", t.chars().count()));
                    }
                }
                m.values().for_each(|x| walk(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let blocks = params["blocks"]
        .as_array()
        .or_else(|| params["view"]["blocks"].as_array());
    if blocks.is_some_and(|b| b.len() > 50) {
        return Some("more than 50 blocks".into());
    }
    let mut out = None;
    walk(params, &mut out);
    out
}

/// A POST to a response_url (`/response/{user}/{n}`), as Slack takes them: JSON, no token.
async fn response(
    State(st): State<Arc<Inner>>,
    Path((user, _n)): Path<(String, u64)>,
    body: Bytes,
) -> Response {
    if st.responses_fail.load(Ordering::SeqCst) {
        return (StatusCode::NOT_FOUND, "expired_url").into_response();
    }
    let params: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    if too_long(&params).is_some() {
        return (StatusCode::BAD_REQUEST, "invalid_blocks").into_response();
    }
    st.responses.lock().unwrap().push(Answer {
        via: Via::ResponseUrl,
        user,
        params,
        at: Instant::now(),
    });
    Json(json!({"ok": true})).into_response()
}

async fn accept(listener: TcpListener, st: Arc<Inner>) {
    while let Ok((stream, _)) = listener.accept().await {
        let st = st.clone();
        tokio::spawn(async move {
            let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await else {
                return;
            };
            let n = st.connections.fetch_add(1, Ordering::SeqCst) + 1;
            let (tx, mut rx) = mpsc::unbounded_channel();
            let open = {
                let mut conns = st.conns.lock().unwrap();
                // Slack allows an app ten connections at once; an eleventh is refused.
                if conns.open.len() >= 10 {
                    return;
                }
                conns.open.push((n, tx));
                conns.open.len()
            };
            let hello = json!({"type": "hello", "num_connections": open,
                               "connection_info": {"app_id": "A1"}});
            if ws.send(Message::text(hello.to_string())).await.is_err() {
                return;
            }
            loop {
                tokio::select! {
                    out = rx.recv() => match out {
                        Some(ToClient::Text(t)) => {
                            if ws.send(Message::text(t)).await.is_err() {
                                break;
                            }
                        }
                        Some(ToClient::Drop) | None => break,
                    },
                    msg = ws.next() => match msg {
                        Some(Ok(Message::Text(t))) => {
                            if let Ok(v) = serde_json::from_str::<Value>(t.as_str()) {
                                if let Some(id) = v["envelope_id"].as_str() {
                                    st.acks.lock().unwrap().push(id.to_string());
                                }
                            }
                        }
                        Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                        Some(Ok(_)) => {}
                    },
                }
            }
            st.conns.lock().unwrap().open.retain(|(id, _)| *id != n);
        });
    }
}

/// A `block_actions` payload for a click on a prompt's button.
pub fn click(user: &str, ts: &str, value: &str) -> Value {
    json!({
        "type": "block_actions",
        "user": {"id": user, "username": format!("name-{user}"), "team_id": "T1"},
        "api_app_id": "A1",
        "trigger_id": format!("trigger-{ts}"),
        "container": {"type": "message", "message_ts": ts, "channel_id": "C1", "is_ephemeral": false},
        "channel": {"id": "C1", "name": "approvals"},
        "message": {"ts": ts, "text": "…"},
        "actions": [{"type": "button", "block_id": "gatebot_decide", "action_id": value, "value": value, "action_ts": "1700000001.000001"}]
    })
}

/// A `view_submission` of the deny modal.
pub fn submit_modal(user: &str, private_metadata: &str, reason: Option<&str>) -> Value {
    json!({
        "type": "view_submission",
        "user": {"id": user, "username": format!("name-{user}"), "team_id": "T1"},
        "api_app_id": "A1",
        "trigger_id": "trigger-modal",
        "view": {
            "id": "V1",
            "type": "modal",
            "callback_id": "gatebot_deny",
            "private_metadata": private_metadata,
            "state": {"values": {"reason": {"reason": {"type": "plain_text_input", "value": reason}}}}
        }
    })
}

/// An Events API `message` payload, in a thread when `thread_ts` is set.
pub fn message(user: &str, text: &str, thread_ts: Option<&str>, event_id: &str) -> Value {
    let mut event = json!({
        "type": "message",
        "channel": "C1",
        "user": user,
        "text": text,
        "ts": "1700000999.000001",
        "channel_type": "channel"
    });
    if let Some(t) = thread_ts {
        event["thread_ts"] = json!(t);
    }
    json!({
        "token": "verification-token",
        "team_id": "T1",
        "api_app_id": "A1",
        "type": "event_callback",
        "event_id": event_id,
        "event_time": 1700000999,
        "event": event
    })
}

/// An Events API `message` payload in `channel` (`channel_type` `im` for a DM), with
/// its own `ts`, in a thread when `thread_ts` is set.
pub fn message_in(
    channel: &str,
    channel_type: &str,
    user: &str,
    text: &str,
    ts: &str,
    thread_ts: Option<&str>,
    event_id: &str,
) -> Value {
    let mut event = json!({
        "type": "message",
        "channel": channel,
        "user": user,
        "text": text,
        "ts": ts,
        "channel_type": channel_type
    });
    if let Some(t) = thread_ts {
        event["thread_ts"] = json!(t);
    }
    json!({
        "token": "verification-token",
        "team_id": "T1",
        "api_app_id": "A1",
        "type": "event_callback",
        "event_id": event_id,
        "event_time": 1700000999,
        "event": event
    })
}

/// A `block_actions` payload for a click on a message in `channel`.
pub fn click_in(user: &str, channel: &str, ts: &str, value: &str) -> Value {
    let mut v = click(user, ts, value);
    v["container"]["channel_id"] = json!(channel);
    v["channel"]["id"] = json!(channel);
    v
}

#[test]
fn the_limits_allow_two_posts_at_once_then_one_a_second_and_50_updates_a_minute() {
    let mut usage = Usage::default();
    let t0 = Instant::now();
    let at = |ms: u64| t0 + Duration::from_millis(ms);
    // Two back to back in a channel, then one a second; another channel is apart.
    assert_eq!(usage.over("chat.postMessage", "C1", at(0)), None);
    assert_eq!(usage.over("chat.postMessage", "C1", at(10)), None);
    assert_eq!(usage.over("chat.postMessage", "C1", at(20)), Some(1));
    assert_eq!(usage.over("chat.postMessage", "C2", at(20)), None);
    assert_eq!(usage.over("chat.postMessage", "C1", at(1010)), None);
    assert_eq!(usage.over("chat.postMessage", "C1", at(1500)), Some(1));
    assert_eq!(usage.over("chat.postMessage", "C1", at(2010)), None);
    // chat.update at gatebot's pace (1.2 s) is 50 a minute: within the limit, the
    // 51st exactly 60 s after the first too; one sooner is not, and one just after
    // waits for the second to leave the window (1.2 s, rounded up).
    for n in 0..50 {
        assert_eq!(usage.over("chat.update", "C1", at(n * 1200)), None, "{n}");
    }
    assert_eq!(usage.over("chat.update", "C2", at(59_999)), Some(1));
    assert_eq!(usage.over("chat.update", "C1", at(60_000)), None);
    assert_eq!(usage.over("chat.update", "C1", at(60_001)), Some(2));
}
