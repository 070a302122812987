//! A fake Telegram Bot API on 127.0.0.1:0 that speaks real Bot API JSON.
//!
//! - `POST /bot<token>/<method>`, method names matched case-insensitively (teloxide
//!   sends `SendMessage`); a wrong token gets 401 Unauthorized, like Telegram.
//! - Every call is recorded (method in lower case, JSON params, whether it succeeded).
//! - `getUpdates` long-polls: it honours `offset` (older updates are dropped) and
//!   `timeout`, returning as soon as a test injects an update. As Telegram allows one
//!   consumer per token, a call still waiting when a newer one comes is ended with 409
//!   ("terminated by other getUpdates request"), and counted.
//! - Tests inject button presses and messages from chosen users (a reply carries the
//!   message replied to as Telegram sends it: plain text, no HTML), and make the next
//!   sends or edits fail (429 + retry_after, 500, a dropped connection, a slow answer,
//!   a send that takes effect but whose answer never comes), or the next polls answer
//!   409.
//! - Optionally it enforces Telegram's documented limits on sends (one message a
//!   second per chat, 20 a minute per group, 30 a second overall) with 429s, fails a
//!   share of all sends and edits at random ("chaos"), or holds every call until
//!   released.
//! - Failures happen *before* a call takes effect (but for `Unanswered`, which is
//!   about a send that did), so a test can count exactly how often each message
//!   really reached "Telegram".

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::sync::Notify;

pub const BOT_USERNAME: &str = "gatebot_test_bot";
const BOT_ID: u64 = 999_000;

#[derive(Debug, Clone)]
pub struct Call {
    pub method: String,
    pub params: Value,
    pub ok: bool,
    /// When the call arrived.
    pub at: Instant,
    /// The message a successful sendMessage created.
    pub message_id: Option<i64>,
}

impl Call {
    /// A posting call as (chat, message id, its parameters).
    fn posted(self) -> (i64, i64, Value) {
        (
            self.params["chat_id"].as_i64().unwrap(),
            self.message_id.unwrap(),
            self.params,
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// 429 Too Many Requests with `retry_after` seconds.
    RetryAfter(u64),
    /// 500 Internal Server Error.
    ServerError,
    /// The connection breaks before an answer (nothing was done).
    Drop,
    /// The answer comes after this long (the call then succeeds).
    Slow(Duration),
    /// The send takes effect (the message is in the chat), but its answer waits until
    /// [`FakeTelegram::release`] and then the connection breaks: gatebot never learns
    /// the message's id.
    Unanswered,
}

/// Telegram's documented limits on sending messages.
const PER_CHAT_GAP: Duration = Duration::from_millis(900); // 1/s, less some network jitter
const PER_GROUP_MINUTE: usize = 20;
const OVERALL_PER_SECOND: usize = 30;

#[derive(Default)]
struct Inner {
    calls: Vec<Call>,
    updates: Vec<Value>,
    next_update: i64,
    next_message: i64,
    /// (chat, message id) → the message as Telegram would return it.
    messages: HashMap<(i64, i64), Value>,
    send_failures: VecDeque<Failure>,
    edit_failures: VecDeque<Failure>,
    conflicts: u32,
    /// getUpdates calls so far: a call still waiting when a newer one comes is ended
    /// with 409, as Telegram ends it (one consumer per token).
    polls: u64,
    /// getUpdates calls ended so by a newer one.
    terminated: u64,
    /// Enforce the documented send limits with 429s.
    limits: bool,
    /// Sends that took effect: (chat, when), for the limits.
    sent: Vec<(i64, Instant)>,
    /// 429s answered because a limit was exceeded.
    limited: u64,
    /// Fail this share of sends and edits at random.
    chaos: Option<(f64, StdRng)>,
    held: bool,
    /// How often [`FakeTelegram::release`] was called.
    releases: u64,
}

struct Shared {
    token: String,
    inner: Mutex<Inner>,
    news: Notify,
    released: Notify,
}

#[derive(Clone)]
pub struct FakeTelegram {
    pub url: String,
    shared: Arc<Shared>,
}

/// A Telegram user: (id, first name).
pub type User = (u64, &'static str);

fn user_json(u: User) -> Value {
    json!({"id": u.0, "is_bot": false, "first_name": u.1})
}

fn chat_json(id: i64) -> Value {
    if id < 0 {
        json!({"id": id, "type": "supergroup", "title": "ops"})
    } else {
        json!({"id": id, "type": "private", "first_name": "Someone"})
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn ok(result: Value) -> Response {
    Json(json!({"ok": true, "result": result})).into_response()
}

fn fail(status: StatusCode, description: &str, extra: Value) -> Response {
    let mut body = json!({"ok": false, "error_code": status.as_u16(), "description": description});
    if let Value::Object(m) = extra {
        body.as_object_mut().unwrap().extend(m);
    }
    (status, Json(body)).into_response()
}

impl FakeTelegram {
    pub async fn start(token: &str) -> FakeTelegram {
        let shared = Arc::new(Shared {
            token: token.to_string(),
            inner: Mutex::new(Inner {
                next_update: 1,
                next_message: 100,
                ..Inner::default()
            }),
            news: Notify::new(),
            released: Notify::new(),
        });
        let app = Router::new()
            .route("/{bot}/{method}", post(handle))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        FakeTelegram { url, shared }
    }

    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> T {
        f(&mut self.shared.inner.lock().unwrap())
    }

    /// Every call to `method` (any case), successful or not.
    pub fn calls(&self, method: &str) -> Vec<Call> {
        let m = method.to_ascii_lowercase();
        self.with(|i| i.calls.iter().filter(|c| c.method == m).cloned().collect())
    }

    /// The successful sendMessage calls that posted a message (not replies), with when
    /// each arrived.
    pub fn posted_calls(&self) -> Vec<Call> {
        self.calls("sendMessage")
            .into_iter()
            .filter(|c| c.ok && c.params["reply_parameters"].is_null())
            .collect()
    }

    /// (chat, message id) of every message the bot posted (not counting replies).
    pub fn posted(&self) -> Vec<(i64, i64, Value)> {
        self.posted_calls().into_iter().map(Call::posted).collect()
    }

    /// The calls that posted a prompt for the request `short_id` (each names it as
    /// `id <code>…</code>`), in `chat` or in any chat, oldest first.
    pub fn prompt_calls(&self, chat: Option<i64>, short_id: &str) -> Vec<Call> {
        let needle = format!("id <code>{short_id}</code>");
        self.posted_calls()
            .into_iter()
            .filter(|c| {
                chat.is_none_or(|want| c.params["chat_id"].as_i64() == Some(want))
                    && c.params["text"]
                        .as_str()
                        .unwrap_or_default()
                        .contains(&needle)
            })
            .collect()
    }

    /// The prompts posted for the request `short_id`, in `chat` or in any chat, oldest
    /// first: (chat, message id, the call's parameters).
    pub fn prompts_of(&self, chat: Option<i64>, short_id: &str) -> Vec<(i64, i64, Value)> {
        self.prompt_calls(chat, short_id)
            .into_iter()
            .map(Call::posted)
            .collect()
    }

    /// The messages in `chat` that show the request `short_id` (`id <code>…</code>`),
    /// whether or not gatebot got the answer to their send, oldest first.
    pub fn stored_prompts(&self, chat: i64, short_id: &str) -> Vec<i64> {
        let needle = format!("id <code>{short_id}</code>");
        let mut ids: Vec<i64> = self.with(|i| {
            i.messages
                .iter()
                .filter(|((c, _), m)| {
                    *c == chat && m["text"].as_str().unwrap_or_default().contains(&needle)
                })
                .map(|((_, id), _)| *id)
                .collect()
        });
        ids.sort_unstable();
        ids
    }

    /// Params of the successful calls to `method`.
    pub fn ok_calls(&self, method: &str) -> Vec<Value> {
        self.calls(method)
            .into_iter()
            .filter(|c| c.ok)
            .map(|c| c.params)
            .collect()
    }

    /// The next sends (sendMessage) fail like this, in order.
    pub fn fail_next_sends(&self, failures: &[Failure]) {
        self.with(|i| i.send_failures.extend(failures.iter().copied()));
    }

    /// The next edits (editMessageText) fail like this, in order.
    pub fn fail_next_edits(&self, failures: &[Failure]) {
        self.with(|i| i.edit_failures.extend(failures.iter().copied()));
    }

    /// The messages posted in `chat` that mention users (`<a href="tg://user?id=N">`):
    /// (message id, the message it replies to, the users mentioned), oldest first.
    pub fn mentions(&self, chat: i64) -> Vec<(i64, Option<i64>, Vec<i64>)> {
        self.calls("sendMessage")
            .into_iter()
            .filter(|c| c.ok && c.params["chat_id"].as_i64() == Some(chat))
            .filter_map(|c| {
                let users = mentioned(c.params["text"].as_str().unwrap_or_default())?;
                let reply_to = c.params["reply_parameters"]["message_id"].as_i64();
                (!users.is_empty()).then(|| (c.message_id.unwrap(), reply_to, users))
            })
            .collect()
    }

    /// Answer sends beyond Telegram's documented limits with 429.
    pub fn enforce_limits(&self) {
        self.with(|i| i.limits = true);
    }

    /// How many 429s the limits caused.
    pub fn rate_limited(&self) -> u64 {
        self.with(|i| i.limited)
    }

    /// Fail `share` (0.0–1.0) of sends and edits at random: 429, 500, a dropped
    /// connection or a slow answer, reproducibly for a `seed`.
    pub fn chaos(&self, share: f64, seed: u64) {
        self.with(|i| i.chaos = Some((share, StdRng::seed_from_u64(seed))));
    }

    /// Every call waits until [`FakeTelegram::release`].
    pub fn hold(&self) {
        self.with(|i| i.held = true);
    }

    /// Ends [`FakeTelegram::hold`], and lets [`Failure::Unanswered`] sends end.
    pub fn release(&self) {
        self.with(|i| {
            i.held = false;
            i.releases += 1;
        });
        self.shared.released.notify_waiters();
    }

    /// How many getUpdates calls a newer one ended with 409 (two consumers of the token).
    pub fn terminated_polls(&self) -> u64 {
        self.with(|i| i.terminated)
    }

    /// The next `n` getUpdates calls answer 409 Conflict.
    pub fn conflict_next_polls(&self, n: u32) {
        self.with(|i| i.conflicts = n);
    }

    /// The message as it is now (after edits); panics if there is none.
    pub fn message(&self, chat: i64, id: i64) -> Value {
        self.with(|i| i.messages.get(&(chat, id)).cloned())
            .unwrap_or_else(|| panic!("no message {chat}/{id}"))
    }

    /// The id of the latest message the bot sent to `chat` with exactly `text`.
    pub fn message_id(&self, chat: i64, text: &Value) -> Option<i64> {
        self.with(|i| {
            i.messages
                .iter()
                .filter(|((c, _), m)| *c == chat && m["text"] == *text)
                .map(|((_, id), _)| *id)
                .max()
        })
    }

    fn push_update(&self, mut update: Value) {
        self.with(|i| {
            update["update_id"] = json!(i.next_update);
            i.next_update += 1;
            i.updates.push(update);
        });
        self.shared.news.notify_waiters();
    }

    /// `user` taps a button with `data` on message `message` in `chat`.
    pub fn press(&self, user: User, chat: i64, message: i64, data: &str) {
        let msg = as_received(self.message(chat, message));
        self.push_update(json!({"callback_query": {
            "id": format!("cq{}", rand_id()),
            "from": user_json(user),
            "message": msg,
            "chat_instance": "ci",
            "data": data,
        }}));
    }

    /// `user` writes `text` in `chat`, optionally replying to message `reply_to`;
    /// returns the new message's id.
    pub fn say(&self, user: User, chat: i64, text: &str, reply_to: Option<i64>) -> i64 {
        let id = self.with(|i| {
            i.next_message += 1;
            i.next_message
        });
        let mut msg = json!({
            "message_id": id,
            "date": now_secs(),
            "chat": chat_json(chat),
            "from": user_json(user),
            "text": text,
        });
        if let Some(r) = reply_to {
            msg["reply_to_message"] = as_received(self.message(chat, r));
        }
        self.push_update(json!({"message": msg}));
        id
    }
}

/// A message as Telegram sends it in an update: its text without the HTML it was
/// sent with (Telegram keeps formatting as entities beside the text).
fn as_received(mut msg: Value) -> Value {
    if let Some(html) = msg["text"].as_str() {
        let mut text = String::new();
        let mut in_tag = false;
        for c in html.chars() {
            match c {
                '<' => in_tag = true,
                '>' => in_tag = false,
                c if !in_tag => text.push(c),
                _ => {}
            }
        }
        let text = text
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&amp;", "&");
        msg["text"] = json!(text);
    }
    msg
}

fn rand_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(1);
    N.fetch_add(1, Ordering::Relaxed)
}

/// Waits while calls are held ([`FakeTelegram::hold`]), or, with `after`, until a
/// release later than the `after`-th.
async fn wait_for_release(s: &Shared, after: Option<u64>) {
    loop {
        let released = s.released.notified();
        tokio::pin!(released);
        released.as_mut().enable();
        {
            let inner = s.inner.lock().unwrap();
            let waiting = match after {
                Some(n) => inner.releases <= n,
                None => inner.held,
            };
            if !waiting {
                return;
            }
        }
        released.await;
    }
}

/// What to do instead of answering normally, if anything.
fn failure_for(s: &Shared, method: &str) -> Option<Failure> {
    let mut inner = s.inner.lock().unwrap();
    let scripted = match method {
        "sendmessage" => inner.send_failures.pop_front(),
        "editmessagetext" => inner.edit_failures.pop_front(),
        _ => return None,
    };
    if scripted.is_some() {
        return scripted;
    }
    let (share, rng) = inner.chaos.as_mut()?;
    if !rng.random_bool(*share) {
        return None;
    }
    Some(match rng.random_range(0..4) {
        0 => Failure::RetryAfter(1),
        1 => Failure::ServerError,
        2 => Failure::Drop,
        _ => Failure::Slow(Duration::from_millis(rng.random_range(200..2000))),
    })
}

/// A 200 whose body breaks off: the client sees the connection drop.
fn dropped() -> Response {
    let broken = futures_util::stream::once(async {
        Err::<axum::body::Bytes, std::io::Error>(std::io::Error::other("connection dropped"))
    });
    axum::body::Body::from_stream(broken).into_response()
}

/// Seconds until a send to `chat` would be within the limits, if it is not now.
fn over_limits(inner: &mut Inner, chat: i64, now: Instant) -> Option<u64> {
    inner
        .sent
        .retain(|(_, t)| now.duration_since(*t) < Duration::from_secs(60));
    let last_here = inner
        .sent
        .iter()
        .filter(|(c, _)| *c == chat)
        .map(|(_, t)| *t)
        .max();
    if let Some(t) = last_here {
        if now.duration_since(t) < PER_CHAT_GAP {
            return Some(1);
        }
    }
    if chat < 0 && inner.sent.iter().filter(|(c, _)| *c == chat).count() >= PER_GROUP_MINUTE {
        let oldest = inner
            .sent
            .iter()
            .filter(|(c, _)| *c == chat)
            .map(|(_, t)| *t)
            .min()?;
        return Some(
            60u64
                .saturating_sub(now.duration_since(oldest).as_secs())
                .max(1),
        );
    }
    let last_second = inner
        .sent
        .iter()
        .filter(|(_, t)| now.duration_since(*t) < Duration::from_secs(1))
        .count();
    (last_second >= OVERALL_PER_SECOND).then_some(1)
}

async fn handle(
    State(s): State<Arc<Shared>>,
    Path((bot, method)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> Response {
    if bot != format!("bot{}", s.token) {
        return fail(StatusCode::UNAUTHORIZED, "Unauthorized", json!({}));
    }
    let method = method.to_ascii_lowercase();
    let params: Value = serde_json::from_slice(&body).unwrap_or(json!({}));
    let at = Instant::now();
    let record_message = |ok: bool, message_id: Option<i64>| {
        s.inner.lock().unwrap().calls.push(Call {
            method: method.clone(),
            params: params.clone(),
            ok,
            at,
            message_id,
        });
    };
    let record = |ok: bool| record_message(ok, None);
    wait_for_release(&s, None).await;
    let failure = failure_for(&s, &method);
    match failure {
        Some(Failure::RetryAfter(n)) => {
            record(false);
            return fail(
                StatusCode::TOO_MANY_REQUESTS,
                &format!("Too Many Requests: retry after {n}"),
                json!({"parameters": {"retry_after": n}}),
            );
        }
        Some(Failure::ServerError) => {
            record(false);
            return fail(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Internal Server Error",
                json!({}),
            );
        }
        Some(Failure::Drop) => {
            record(false);
            return dropped();
        }
        Some(Failure::Slow(d)) => tokio::time::sleep(d).await,
        Some(Failure::Unanswered) | None => {}
    }
    let unanswered = failure == Some(Failure::Unanswered);
    match method.as_str() {
        "getme" => {
            record(true);
            ok(json!({
                "id": BOT_ID, "is_bot": true, "first_name": "gatebot", "username": BOT_USERNAME,
                "can_join_groups": true, "can_read_all_group_messages": false,
                "supports_inline_queries": false, "has_main_web_app": false,
            }))
        }
        "getupdates" => get_updates(&s, &params, record).await,
        "sendmessage" => {
            let chat = params["chat_id"].as_i64().unwrap();
            // Telegram refuses a text whose mention links it cannot read.
            if mentioned(params["text"].as_str().unwrap_or_default()).is_none() {
                record(false);
                return fail(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: can't parse entities: wrong user mention",
                    json!({}),
                );
            }
            // The guard stays in this block: the handler's future must be Send.
            let stored = {
                let mut inner = s.inner.lock().unwrap();
                let now = Instant::now();
                match inner
                    .limits
                    .then(|| over_limits(&mut inner, chat, now))
                    .flatten()
                {
                    Some(wait) => {
                        inner.limited += 1;
                        Err(wait)
                    }
                    None => {
                        inner.sent.push((chat, now));
                        inner.next_message += 1;
                        let id = inner.next_message;
                        let mut msg = json!({
                            "message_id": id, "date": now_secs(), "chat": chat_json(chat),
                            "from": {"id": BOT_ID, "is_bot": true, "first_name": "gatebot", "username": BOT_USERNAME},
                            "text": params["text"],
                        });
                        if params["reply_markup"].get("inline_keyboard").is_some() {
                            msg["reply_markup"] = params["reply_markup"].clone();
                        }
                        inner.messages.insert((chat, id), msg.clone());
                        Ok((id, msg, inner.releases))
                    }
                }
            };
            let (id, msg, releases) = match stored {
                Ok(stored) => stored,
                Err(wait) => {
                    record(false);
                    return fail(
                        StatusCode::TOO_MANY_REQUESTS,
                        &format!("Too Many Requests: retry after {wait}"),
                        json!({"parameters": {"retry_after": wait}}),
                    );
                }
            };
            if unanswered {
                record(false);
                wait_for_release(&s, Some(releases)).await;
                return dropped();
            }
            record_message(true, Some(id));
            ok(msg)
        }
        "editmessagetext" | "editmessagereplymarkup" => {
            let chat = params["chat_id"].as_i64().unwrap();
            let id = params["message_id"].as_i64().unwrap();
            let mut inner = s.inner.lock().unwrap();
            let Some(old) = inner.messages.get(&(chat, id)).cloned() else {
                drop(inner);
                record(false);
                return fail(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: message to edit not found",
                    json!({}),
                );
            };
            let mut new = old.clone();
            if method == "editmessagetext" {
                new["text"] = params["text"].clone();
            }
            match params.get("reply_markup") {
                Some(kb)
                    if kb["inline_keyboard"]
                        .as_array()
                        .is_some_and(|r| !r.is_empty()) =>
                {
                    new["reply_markup"] = kb.clone();
                }
                _ => {
                    new.as_object_mut().unwrap().remove("reply_markup");
                }
            }
            if new == old {
                drop(inner);
                record(false);
                return fail(
                    StatusCode::BAD_REQUEST,
                    "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
                    json!({}),
                );
            }
            inner.messages.insert((chat, id), new.clone());
            drop(inner);
            record(true);
            ok(new)
        }
        "answercallbackquery" | "setmycommands" | "deletewebhook" => {
            record(true);
            ok(json!(true))
        }
        _ => {
            record(false);
            fail(
                StatusCode::NOT_FOUND,
                "Not Found: method not found",
                json!({}),
            )
        }
    }
}

async fn get_updates(s: &Shared, params: &Value, record: impl Fn(bool)) -> Response {
    {
        let mut inner = s.inner.lock().unwrap();
        if inner.conflicts > 0 {
            inner.conflicts -= 1;
            drop(inner);
            record(false);
            return fail(
                StatusCode::CONFLICT,
                "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
                json!({}),
            );
        }
    }
    record(true);
    let offset = params["offset"].as_i64().unwrap_or(0);
    let timeout = Duration::from_secs(params["timeout"].as_u64().unwrap_or(0));
    let deadline = tokio::time::Instant::now() + timeout;
    let poll = {
        let mut inner = s.inner.lock().unwrap();
        inner.polls += 1;
        inner.polls
    };
    // A call still waiting learns of this one and ends.
    s.news.notify_waiters();
    loop {
        let news = s.news.notified();
        tokio::pin!(news);
        news.as_mut().enable();
        {
            let mut inner = s.inner.lock().unwrap();
            if inner.polls != poll {
                inner.terminated += 1;
                drop(inner);
                return fail(
                    StatusCode::CONFLICT,
                    "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
                    json!({}),
                );
            }
            // Like Telegram: an offset confirms (and forgets) every earlier update.
            inner
                .updates
                .retain(|u| u["update_id"].as_i64().unwrap() >= offset);
            if !inner.updates.is_empty() || tokio::time::Instant::now() >= deadline {
                return ok(json!(inner.updates));
            }
        }
        let _ = tokio::time::timeout_at(deadline, news).await;
    }
}

/// The users a message's text mentions by id (`<a href="tg://user?id=N">name</a>`, in
/// HTML parse mode), or `None` if a mention link is malformed (Telegram refuses the
/// message: "can't parse entities").
fn mentioned(text: &str) -> Option<Vec<i64>> {
    const LINK: &str = "<a href=\"tg://user?id=";
    let mut users = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(LINK) {
        rest = &rest[at + LINK.len()..];
        let end = rest.find("\">")?;
        let id: i64 = rest[..end].parse().ok().filter(|n| *n > 0)?;
        rest[end..].find("</a>")?;
        users.push(id);
    }
    Some(users)
}
