//! A fake Telegram Bot API on 127.0.0.1:0 that speaks real Bot API JSON.
//!
//! - `POST /bot<token>/<method>`, method names matched case-insensitively (teloxide
//!   sends `SendMessage`); a wrong token gets 401 Unauthorized, like Telegram.
//! - Every call is recorded (method in lower case, JSON params, whether it succeeded).
//! - `getUpdates` long-polls: it honours `offset` (older updates are dropped) and
//!   `timeout`, returning as soon as a test injects an update.
//! - Tests inject button presses and messages from chosen users, and make the next
//!   sends fail with 429 + retry_after or 500, or the next polls answer 409.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
}

#[derive(Debug, Clone, Copy)]
pub enum Failure {
    RetryAfter(u64),
    ServerError,
}

#[derive(Default)]
struct Inner {
    calls: Vec<Call>,
    updates: Vec<Value>,
    next_update: i64,
    next_message: i64,
    /// (chat, message id) → the message as Telegram would return it.
    messages: HashMap<(i64, i64), Value>,
    send_failures: VecDeque<Failure>,
    conflicts: u32,
}

struct Shared {
    token: String,
    inner: Mutex<Inner>,
    news: Notify,
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

fn now() -> u64 {
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
        let msg = self.message(chat, message);
        self.push_update(json!({"callback_query": {
            "id": format!("cq{}", rand_id()),
            "from": user_json(user),
            "message": msg,
            "chat_instance": "ci",
            "data": data,
        }}));
    }

    /// `user` writes `text` in `chat`, optionally replying to message `reply_to`.
    pub fn say(&self, user: User, chat: i64, text: &str, reply_to: Option<i64>) {
        let id = self.with(|i| {
            i.next_message += 1;
            i.next_message
        });
        let mut msg = json!({
            "message_id": id,
            "date": now(),
            "chat": chat_json(chat),
            "from": user_json(user),
            "text": text,
        });
        if let Some(r) = reply_to {
            msg["reply_to_message"] = self.message(chat, r);
        }
        self.push_update(json!({"message": msg}));
    }
}

fn rand_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(1);
    N.fetch_add(1, Ordering::Relaxed)
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
    let record = |ok: bool| {
        s.inner.lock().unwrap().calls.push(Call {
            method: method.clone(),
            params: params.clone(),
            ok,
        });
    };
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
            let failure = s.inner.lock().unwrap().send_failures.pop_front();
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
                None => {}
            }
            record(true);
            let chat = params["chat_id"].as_i64().unwrap();
            let mut inner = s.inner.lock().unwrap();
            inner.next_message += 1;
            let id = inner.next_message;
            let mut msg = json!({
                "message_id": id, "date": now(), "chat": chat_json(chat),
                "from": {"id": BOT_ID, "is_bot": true, "first_name": "gatebot", "username": BOT_USERNAME},
                "text": params["text"],
            });
            if params["reply_markup"].get("inline_keyboard").is_some() {
                msg["reply_markup"] = params["reply_markup"].clone();
            }
            inner.messages.insert((chat, id), msg.clone());
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
    loop {
        let news = s.news.notified();
        tokio::pin!(news);
        news.as_mut().enable();
        {
            let mut inner = s.inner.lock().unwrap();
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
