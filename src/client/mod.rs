//! The client side of gatebot: everything that runs outside the daemon and talks to
//! it over a socket. It shares the JSON shapes with the daemon through
//! [`crate::wire`] and the hook logic through [`crate::hooks`], and does not use the
//! daemon's API, engine or store, so a client cannot come to depend on how the
//! daemon works inside.
//!
//! - [`Client`]: a small HTTP client for the API over a Unix socket, used by
//!   everything below and by the tests.
//! - [`cli`]: the `gatebot` command line.
//! - [`discover`]: where a command finds the daemon's socket or its config file.
//! - [`hook`]: `gatebot hook …`, and the `SocketGate` the MCP server shares.
//! - [`mcp`]: `gatebot mcp`, the MCP approval tool.

pub mod cli;
pub mod discover;
pub mod hook;
pub mod mcp;

use std::path::{Path, PathBuf};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::UnixStream;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Nothing listens at the socket (or it cannot be opened).
    #[error("cannot reach gatebot at {}: {} (is `gatebot run` running? set --socket or GATEBOT_SOCKET)", path.display(), crate::files::io_words(source))]
    Unreachable {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The connection broke before the answer was complete (a daemon restarting, say).
    #[error("the connection to gatebot broke: {0}")]
    Disconnected(String),
    #[error("talking to gatebot failed: {0}")]
    Protocol(String),
    #[error("gatebot did not answer within {}", crate::words::span(*.0))]
    TimedOut(Duration),
}

impl ClientError {
    /// The daemon could not be reached, or dropped the connection: what a restart looks
    /// like, so worth another try. A daemon that answers nonsense or nothing is not.
    #[must_use]
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            ClientError::Unreachable { .. } | ClientError::Disconnected(_)
        )
    }
}

/// A token that fires on the first SIGTERM, SIGINT or SIGHUP, for the processes an
/// agent starts and may kill (`gatebot hook`, `gatebot mcp`): they withdraw what they
/// asked for, answer deny and exit, instead of dying with a request left pending.
/// From the first call on, those signals no longer end the process by themselves.
pub fn stop_on_signals() -> std::io::Result<tokio_util::sync::CancellationToken> {
    use tokio::signal::unix::{signal, SignalKind};
    let stop = tokio_util::sync::CancellationToken::new();
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    let fire = stop.clone();
    tokio::spawn(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
            _ = hup.recv() => {}
        }
        fire.cancel();
    });
    Ok(stop)
}

/// An API response: status and JSON body.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: StatusCode,
    pub body: Value,
}

impl Response {
    /// The `error.message` of an error response, or the body.
    #[must_use]
    pub fn error_message(&self) -> String {
        self.body["error"]["message"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| self.body.to_string())
    }

    #[must_use]
    pub fn error_code(&self) -> Option<&str> {
        self.body["error"]["code"].as_str()
    }

    /// For `429 rate_limited`: how long to wait before trying again (the body's
    /// `retry_after`, as the `Retry-After` header says it), at least 1 s.
    #[must_use]
    pub fn retry_after(&self) -> Option<Duration> {
        (self.status == StatusCode::TOO_MANY_REQUESTS).then(|| {
            Duration::from_secs(
                self.body["error"]["retry_after"]
                    .as_u64()
                    .unwrap_or(1)
                    .max(1),
            )
        })
    }
}

#[derive(Debug, Clone)]
pub struct Client {
    socket: PathBuf,
    token: Option<String>,
    timeout: Option<Duration>,
    /// Sent with every request.
    headers: Vec<(&'static str, String)>,
}

/// Stops the connection task when a request is dropped half-way (e.g. timed out),
/// so a daemon that never answers does not keep a socket open.
struct AbortOnDrop(tokio::task::JoinHandle<Result<(), hyper::Error>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Client {
    #[must_use]
    pub fn new(socket: impl AsRef<Path>) -> Self {
        Client {
            socket: socket.as_ref().to_path_buf(),
            token: None,
            timeout: None,
            headers: Vec::new(),
        }
    }

    /// Sends `name: value` with every request.
    #[must_use]
    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// Sends `Authorization: Bearer <token>` with every request.
    #[must_use]
    pub fn with_token(mut self, token: Option<String>) -> Self {
        self.token = token;
        self
    }

    /// Bounds each request (connecting, sending, and reading the whole answer).
    /// Without it a request waits as long as the daemon takes.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    pub async fn get(&self, path: &str) -> Result<Response, ClientError> {
        self.send(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: &Value) -> Result<Response, ClientError> {
        self.send(Method::POST, path, Some(body.to_string().into_bytes()))
            .await
    }

    /// Sends raw bytes (tests use it for malformed and oversize bodies).
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<Response, ClientError> {
        match self.timeout {
            None => self.exchange(method, path, body).await,
            Some(t) => tokio::time::timeout(t, self.exchange(method, path, body))
                .await
                .map_err(|_| ClientError::TimedOut(t))?,
        }
    }

    /// GETs `path` and hands each line of a successful answer to `line` as it arrives
    /// (NDJSON), never holding the whole body; `line` may stop the reading early
    /// (`ControlFlow::Break`). An error status is read whole and returned. The timeout,
    /// if set, bounds the wait for the answer to begin and then for each further part
    /// of it, not the whole answer, which may be long.
    pub async fn get_lines(
        &self,
        path: &str,
        mut line: impl FnMut(&[u8]) -> std::ops::ControlFlow<()>,
    ) -> Result<Option<Response>, ClientError> {
        let (res, _conn) = match self.timeout {
            None => self.request(Method::GET, path, None).await?,
            Some(t) => tokio::time::timeout(t, self.request(Method::GET, path, None))
                .await
                .map_err(|_| ClientError::TimedOut(t))??,
        };
        let status = res.status();
        if !status.is_success() {
            let body = match self.timeout {
                None => read_json(res.into_body()).await?,
                Some(t) => tokio::time::timeout(t, read_json(res.into_body()))
                    .await
                    .map_err(|_| ClientError::TimedOut(t))??,
            };
            return Ok(Some(Response { status, body }));
        }
        let mut body = res.into_body();
        let mut pending: Vec<u8> = Vec::new();
        loop {
            let frame = match self.timeout {
                None => body.frame().await,
                Some(t) => tokio::time::timeout(t, body.frame())
                    .await
                    .map_err(|_| ClientError::TimedOut(t))?,
            };
            let Some(frame) = frame else { break };
            let frame = frame.map_err(|e| ClientError::Disconnected(e.to_string()))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            pending.extend_from_slice(&data);
            let mut start = 0;
            while let Some(end) = pending[start..].iter().position(|b| *b == b'\n') {
                if line(&pending[start..start + end]).is_break() {
                    return Ok(None);
                }
                start += end + 1;
            }
            pending.drain(..start);
            if pending.len() > MAX_LINE {
                return Err(ClientError::Protocol(format!(
                    "the daemon sent a line longer than {MAX_LINE} bytes"
                )));
            }
        }
        if !pending.is_empty() {
            let _ = line(&pending);
        }
        Ok(None)
    }

    async fn exchange(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<Response, ClientError> {
        let (res, _conn) = self.request(method, path, body).await?;
        let status = res.status();
        let body = read_json(res.into_body()).await?;
        Ok(Response { status, body })
    }

    /// Connects, sends the request and reads the answer's head. The connection lives
    /// as long as the returned guard.
    async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<(hyper::Response<hyper::body::Incoming>, AbortOnDrop), ClientError> {
        let stream =
            UnixStream::connect(&self.socket)
                .await
                .map_err(|source| ClientError::Unreachable {
                    path: self.socket.clone(),
                    source,
                })?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| ClientError::Disconnected(e.to_string()))?;
        let conn = AbortOnDrop(tokio::spawn(conn));
        let mut req = Request::builder()
            .method(method)
            .uri(format!("http://gatebot{path}"))
            .header("host", "gatebot");
        if body.is_some() {
            req = req.header("content-type", "application/json");
        }
        if let Some(t) = &self.token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        for (name, value) in &self.headers {
            req = req.header(*name, value);
        }
        let req = req
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .map_err(|e| ClientError::Protocol(e.to_string()))?;
        let res = sender
            .send_request(req)
            .await
            .map_err(|e| ClientError::Disconnected(e.to_string()))?;
        Ok((res, conn))
    }
}

/// The longest line [`Client::get_lines`] accepts: far more than any audit row.
const MAX_LINE: usize = 16 << 20;

/// Reads a whole answer body as JSON (`Null` when empty).
async fn read_json(body: hyper::body::Incoming) -> Result<Value, ClientError> {
    let bytes = body
        .collect()
        .await
        .map_err(|e| ClientError::Disconnected(e.to_string()))?
        .to_bytes();
    if bytes.is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_slice(&bytes)
        .map_err(|e| ClientError::Protocol(format!("the daemon answered with invalid JSON: {e}")))
}
