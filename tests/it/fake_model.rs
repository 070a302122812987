//! A fake OpenAI-compatible chat-completions server on 127.0.0.1:0, for the inbox's
//! model classifier: it records every request (headers and JSON) and answers as the
//! test says: a classification, any content, an HTTP error (echoing the credentials,
//! as a careless proxy might), or slowly.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

/// How the fake answers.
#[derive(Debug, Clone)]
pub enum Reply {
    /// `choices[0].message.content` is this text.
    Content(String),
    /// This status, with a body that echoes the Authorization header.
    Status(u16),
    /// The body is this raw text, status 200.
    Raw(String),
    /// Waits this long, then answers with the content.
    Slow(Duration, String),
}

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub authorization: Option<String>,
    pub body: Value,
}

/// How to answer, and what was asked so far.
type Shared = Arc<Mutex<(Reply, Vec<Seen>)>>;

#[derive(Clone)]
pub struct FakeModel {
    /// The chat-completions URL, for `[inbox.classifier] api_url`.
    pub url: String,
    state: Shared,
}

impl FakeModel {
    pub async fn start(reply: Reply) -> FakeModel {
        let state = Arc::new(Mutex::new((reply, Vec::new())));
        let app = Router::new()
            .route("/v1/chat/completions", post(handle))
            .with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!(
            "http://{}/v1/chat/completions",
            listener.local_addr().unwrap()
        );
        tokio::spawn(async move { axum::serve(listener, app).await });
        FakeModel { url, state }
    }

    pub fn answer(&self, reply: Reply) {
        self.state.lock().unwrap().0 = reply;
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().1.clone()
    }
}

/// A classification as a model would answer it.
pub fn classification(
    intent: &str,
    summary: &str,
    level: i64,
    clarify: Option<(&str, &[&str])>,
) -> String {
    json!({
        "intent": intent,
        "summary": summary,
        "execution_prompt": format!("Do the {intent} task the owner described."),
        "clarify_question": clarify.map(|(q, _)| q),
        "choices": clarify.map(|(_, c)| c.to_vec()).unwrap_or_default(),
        "autonomy_level": level,
    })
    .to_string()
}

fn completion(content: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "fake",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}]
    })
}

async fn handle(
    State(state): State<Shared>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let reply = {
        let mut s = state.lock().unwrap();
        s.1.push(Seen {
            authorization: authorization.clone(),
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        });
        s.0.clone()
    };
    match reply {
        Reply::Content(c) => Json(completion(&c)).into_response(),
        Reply::Raw(r) => r.into_response(),
        Reply::Status(code) => (
            StatusCode::from_u16(code).unwrap(),
            format!("upstream said no to {}", authorization.unwrap_or_default()),
        )
            .into_response(),
        Reply::Slow(wait, c) => {
            tokio::time::sleep(wait).await;
            Json(completion(&c)).into_response()
        }
    }
}
