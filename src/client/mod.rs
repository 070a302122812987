//! The client side of gatebot: everything that runs outside the daemon and talks to
//! it over a socket or TCP. It shares the JSON shapes with the daemon through
//! [`crate::wire`] and the hook logic through [`crate::hooks`], and does not use the
//! daemon's API, engine or store, so a client cannot come to depend on how the
//! daemon works inside.
//!
//! - [`Client`]: a small HTTP client for the API over a Unix socket, or over one or
//!   more TCP endpoints (`http://`, `https://`) with failover between them; used by
//!   everything below and by the tests.
//! - [`endpoint`]: the endpoints (`--url`, `GATEBOT_URL`), TLS, connecting.
//! - [`cli`]: the `gatebot` command line.
//! - [`discover`]: where a command finds the daemon: its endpoints, its socket or its
//!   config file.
//! - [`hook`]: `gatebot hook …`, and the `DaemonGate` the MCP server shares.
//! - [`mcp`]: `gatebot mcp`, the MCP approval tool.

pub mod cli;
pub mod discover;
pub mod endpoint;
pub mod hook;
pub mod mcp;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::UnixStream;

use crate::secret::Secret;
pub use endpoint::Endpoint;
use endpoint::{ConnectFailure, Connector};

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Nothing listens at the endpoint (or it cannot be reached). `hint` says what to check.
    #[error("cannot reach gatebot at {at}: {why} ({hint})")]
    Unreachable {
        at: String,
        why: String,
        hint: &'static str,
    },
    /// An `https://` endpoint was reached, but the TLS handshake failed.
    #[error("cannot talk to gatebot at {at} over TLS: {why}")]
    Tls { at: String, why: String },
    /// The connection broke before the answer was complete (a daemon restarting, say).
    #[error("the connection to gatebot broke: {0}")]
    Disconnected(String),
    #[error("talking to gatebot failed: {0}")]
    Protocol(String),
    #[error("gatebot did not answer within {}", crate::words::span(*.0))]
    TimedOut(Duration),
    /// A client with several endpoints found none that took the call: each, and why.
    #[error("{}", no_endpoint(.0))]
    NoEndpoint(Vec<Attempt>),
}

/// One endpoint tried for a call that went to the next one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The endpoint, as the user wrote it (`http://10.0.0.5:8377`).
    pub endpoint: String,
    /// Why it did not take the call, in words.
    pub why: String,
    /// Worth another try later (refused, broken, 503), unlike a TLS failure.
    pub transient: bool,
}

fn no_endpoint(tried: &[Attempt]) -> String {
    let each: Vec<String> = tried
        .iter()
        .map(|a| format!("{}: {}", a.endpoint, a.why))
        .collect();
    format!(
        "none of gatebot's {} endpoints took the call ({}); check that gatebot runs at \
         each with `[queue] listen` on that address, or change --url / GATEBOT_URL",
        tried.len(),
        each.join("; ")
    )
}

impl ClientError {
    /// The daemon could not be reached, or dropped the connection: what a restart looks
    /// like, so worth another try. A daemon that answers nonsense or nothing is not;
    /// nor is a TLS failure. With several endpoints: when one of them is worth it.
    #[must_use]
    pub fn is_transient(&self) -> bool {
        match self {
            ClientError::Unreachable { .. } | ClientError::Disconnected(_) => true,
            ClientError::NoEndpoint(tried) => tried.iter().any(|a| a.transient),
            _ => false,
        }
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

/// An idempotency key of this invocation's own, for a call that came without one: a
/// call resent to another endpoint then finds the request (or run, or event) the first
/// one made instead of making another.
#[must_use]
pub fn fresh_idempotency_key() -> String {
    format!("gatebot-{}", ulid::Ulid::new())
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

/// A client of the daemon's API: over one Unix socket, or over one or more TCP
/// endpoints with failover. A call goes to the endpoint that answered last; when that
/// one refuses the connection, cannot be reached, breaks the connection before the
/// answer, or answers `503` (or a proxy's `502`/`504`), the same call goes to the next,
/// round the list once, and [`ClientError::NoEndpoint`] says why each failed. A retry
/// is the same request: agents' commands send an idempotency key with everything they
/// create. With one endpoint every answer and error is handed back as it is.
#[derive(Debug, Clone)]
pub struct Client {
    endpoints: Arc<[Endpoint]>,
    /// The endpoint that answered last (an index into `endpoints`): calls start there.
    current: Arc<AtomicUsize>,
    /// For TCP endpoints (`None` for a Unix socket).
    connector: Option<Connector>,
    /// The agent's token: `Debug` shows `[redacted]`.
    token: Option<Secret>,
    timeout: Option<Duration>,
    /// Sent with every request.
    headers: Vec<(&'static str, String)>,
}

/// What a call is about, for a client with several endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum About {
    /// Anything: a `404` is an answer.
    Anything,
    /// Something one endpoint made (a request, a run, a task by its id): a `404
    /// not_found` from another means that one does not share its database (separate
    /// SQLite nodes), so the next is tried; once every node shares one store, no node
    /// answers so.
    Made,
}

/// Stops the connection task when a request is dropped half-way (e.g. timed out),
/// so a daemon that never answers does not keep a socket open.
struct AbortOnDrop(tokio::task::JoinHandle<Result<(), hyper::Error>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The hint of an unreachable Unix socket.
const SOCKET_HINT: &str = "is `gatebot run` running? set --socket or GATEBOT_SOCKET";
/// The hint of an unreachable TCP endpoint.
const TCP_HINT: &str =
    "is gatebot running there, with `[queue] listen` on that address? check --url or GATEBOT_URL";

impl Client {
    /// A client of the daemon's socket at `socket`.
    #[must_use]
    pub fn new(socket: impl AsRef<Path>) -> Self {
        Client {
            endpoints: Arc::from(vec![Endpoint::Unix(socket.as_ref().to_path_buf())]),
            current: Arc::default(),
            connector: None,
            token: None,
            timeout: None,
            headers: Vec::new(),
        }
    }

    /// A client of `endpoints`, in that order, failing over from one to the next (see
    /// [`Client`]). `https://` endpoints are checked against `ca_file`'s certificates
    /// (PEM), else the system's. `Err` says what to fix: no endpoint, a CA file that
    /// cannot be read.
    pub fn with_endpoints(
        endpoints: Vec<Endpoint>,
        ca_file: Option<&Path>,
    ) -> Result<Self, String> {
        if endpoints.is_empty() {
            return Err("no endpoint to reach gatebot at".into());
        }
        let connector = if endpoints.iter().any(|e| matches!(e, Endpoint::Tcp(_))) {
            Some(endpoint::connector(endpoint::tls_config(
                &endpoints, ca_file,
            )?))
        } else {
            None
        };
        Ok(Client {
            endpoints: Arc::from(endpoints),
            current: Arc::default(),
            connector,
            token: None,
            timeout: None,
            headers: Vec::new(),
        })
    }

    /// The endpoints, in order.
    #[must_use]
    pub fn endpoints(&self) -> &[Endpoint] {
        &self.endpoints
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
        self.token = token.map(Secret::new);
        self
    }

    /// Bounds each request (connecting, sending, and reading the whole answer), on each
    /// endpoint tried. Without it a request waits as long as the daemon takes.
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

    /// GETs something an endpoint made (a request, a run, a task): with several
    /// endpoints, one that answers `404 not_found` is passed over like one that is down
    /// (it does not share the database of the one that made it), so a long-poll whose
    /// daemon went away goes on at the next and comes back when the first is up again.
    pub async fn get_made(&self, path: &str) -> Result<Response, ClientError> {
        self.call(Method::GET, path, None, About::Made).await
    }

    /// POSTs to something an endpoint made, as [`Client::get_made`] GETs it.
    pub async fn post_made(&self, path: &str, body: &Value) -> Result<Response, ClientError> {
        self.call(
            Method::POST,
            path,
            Some(body.to_string().into_bytes()),
            About::Made,
        )
        .await
    }

    /// Sends raw bytes (tests use it for malformed and oversize bodies).
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<Response, ClientError> {
        self.call(method, path, body, About::Anything).await
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        about: About,
    ) -> Result<Response, ClientError> {
        let n = self.endpoints.len();
        if n == 1 {
            let (status, bytes) = self.exchange(0, method, path, body).await?;
            return answer(status, &bytes);
        }
        let first = self.current.load(Ordering::Relaxed) % n;
        let mut tried = Vec::with_capacity(n);
        for k in 0..n {
            let i = (first + k) % n;
            let at = self.endpoints[i].to_string();
            let failed = match self.exchange(i, method.clone(), path, body.clone()).await {
                Ok((status, bytes)) => match passed_over(status, &bytes, about) {
                    Some((why, transient)) => Attempt {
                        endpoint: at,
                        why,
                        transient,
                    },
                    None => {
                        self.current.store(i, Ordering::Relaxed);
                        return answer(status, &bytes);
                    }
                },
                Err(ClientError::Unreachable { why, .. }) => Attempt {
                    endpoint: at,
                    why,
                    transient: true,
                },
                Err(ClientError::Disconnected(e)) => Attempt {
                    endpoint: at,
                    why: format!("the connection broke before the answer ({e})"),
                    transient: true,
                },
                Err(ClientError::Tls { why, .. }) => Attempt {
                    endpoint: at,
                    why: format!("TLS failed: {why}"),
                    transient: false,
                },
                // A daemon that accepted the call and never answered it, or answered
                // nonsense: the call may have been taken, and the caller decides.
                Err(e) => return Err(e),
            };
            tried.push(failed);
        }
        Err(ClientError::NoEndpoint(tried))
    }

    /// GETs `path` and hands each line of a successful answer to `line` as it arrives
    /// (NDJSON), never holding the whole body; `line` may stop the reading early
    /// (`ControlFlow::Break`). An error status is read whole and returned. The timeout,
    /// if set, bounds the wait for the answer to begin and then for each further part
    /// of it, not the whole answer, which may be long. It asks the endpoint that
    /// answered last only (the owners' commands stream, on their one socket).
    pub async fn get_lines(
        &self,
        path: &str,
        mut line: impl FnMut(&[u8]) -> std::ops::ControlFlow<()>,
    ) -> Result<Option<Response>, ClientError> {
        let at = self.current.load(Ordering::Relaxed) % self.endpoints.len();
        let (res, _conn) = match self.timeout {
            None => self.request(at, Method::GET, path, None).await?,
            Some(t) => tokio::time::timeout(t, self.request(at, Method::GET, path, None))
                .await
                .map_err(|_| ClientError::TimedOut(t))??,
        };
        let status = res.status();
        if !status.is_success() {
            let body = match self.timeout {
                None => read_body(res.into_body()).await?,
                Some(t) => tokio::time::timeout(t, read_body(res.into_body()))
                    .await
                    .map_err(|_| ClientError::TimedOut(t))??,
            };
            return answer(status, &body).map(Some);
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

    /// One request to endpoint `at`, its answer's status and body, within the timeout.
    async fn exchange(
        &self,
        at: usize,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<(StatusCode, Bytes), ClientError> {
        let whole = async {
            let (res, _conn) = self.request(at, method, path, body).await?;
            let status = res.status();
            Ok((status, read_body(res.into_body()).await?))
        };
        match self.timeout {
            None => whole.await,
            Some(t) => tokio::time::timeout(t, whole)
                .await
                .map_err(|_| ClientError::TimedOut(t))?,
        }
    }

    /// Connects to endpoint `at`, sends the request and reads the answer's head. The
    /// connection lives as long as the returned guard.
    async fn request(
        &self,
        at: usize,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> Result<(hyper::Response<hyper::body::Incoming>, AbortOnDrop), ClientError> {
        let endpoint = &self.endpoints[at];
        let (mut sender, conn, uri, host) = match endpoint {
            Endpoint::Unix(socket) => {
                let stream = UnixStream::connect(socket).await.map_err(|source| {
                    ClientError::Unreachable {
                        at: socket.display().to_string(),
                        why: crate::files::io_words(&source),
                        hint: SOCKET_HINT,
                    }
                })?;
                let (sender, conn) = handshake(TokioIo::new(stream)).await?;
                (
                    sender,
                    conn,
                    format!("http://gatebot{path}"),
                    "gatebot".into(),
                )
            }
            Endpoint::Tcp(t) => {
                let connector = self
                    .connector
                    .as_ref()
                    .ok_or_else(|| ClientError::Protocol("no TCP connector".into()))?;
                let stream = endpoint::connect(connector, t).await.map_err(|f| match f {
                    ConnectFailure::Unreachable(why) => ClientError::Unreachable {
                        at: endpoint.to_string(),
                        why,
                        hint: TCP_HINT,
                    },
                    ConnectFailure::Tls(why) => ClientError::Tls {
                        at: endpoint.to_string(),
                        why,
                    },
                })?;
                let (sender, conn) = handshake(stream).await?;
                (sender, conn, path.to_string(), t.authority())
            }
        };
        let mut req = Request::builder()
            .method(method)
            .uri(uri)
            .header("host", host);
        if body.is_some() {
            req = req.header("content-type", "application/json");
        }
        if let Some(t) = &self.token {
            req = req.header("authorization", format!("Bearer {}", t.expose()));
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

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// HTTP/1.1 over `io`, its connection driven by a task that ends with the guard.
async fn handshake<T>(io: T) -> Result<(Sender, AbortOnDrop), ClientError>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| ClientError::Disconnected(e.to_string()))?;
    Ok((sender, AbortOnDrop(tokio::spawn(conn))))
}

/// Why an answer sends a call on to the next endpoint, and whether that is worth
/// another round later; `None` when it is the answer.
fn passed_over(status: StatusCode, body: &[u8], about: About) -> Option<(String, bool)> {
    let json: Option<Value> = serde_json::from_slice(body).ok();
    let code = json
        .as_ref()
        .and_then(|v| v["error"]["code"].as_str())
        .map(str::to_string);
    match status.as_u16() {
        502..=504 => {
            let said = match (
                &code,
                json.as_ref().and_then(|v| v["error"]["message"].as_str()),
            ) {
                (Some(code), Some(message)) => format!("{code}: {message}"),
                (Some(code), None) => code.clone(),
                _ => status.canonical_reason().unwrap_or("").to_string(),
            };
            Some((format!("answered {} {said}", status.as_u16()), true))
        }
        404 if about == About::Made && code.as_deref() == Some("not_found") => Some((
            "answered 404 not_found: it does not know this id (it does not share the \
             database of the node that made it)"
                .to_string(),
            false,
        )),
        _ => None,
    }
}

/// An answer as a [`Response`]: its status and JSON body (`Null` when empty).
fn answer(status: StatusCode, bytes: &[u8]) -> Result<Response, ClientError> {
    if bytes.is_empty() {
        return Ok(Response {
            status,
            body: Value::Null,
        });
    }
    let body = serde_json::from_slice(bytes).map_err(|e| {
        ClientError::Protocol(format!("the daemon answered with invalid JSON: {e}"))
    })?;
    Ok(Response { status, body })
}

/// The longest line [`Client::get_lines`] accepts: far more than any audit row.
const MAX_LINE: usize = 16 << 20;

/// Reads a whole answer body.
async fn read_body(body: hyper::body::Incoming) -> Result<Bytes, ClientError> {
    Ok(body
        .collect()
        .await
        .map_err(|e| ClientError::Disconnected(e.to_string()))?
        .to_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(why: &str, transient: bool) -> Attempt {
        Attempt {
            endpoint: "http://a:1".into(),
            why: why.into(),
            transient,
        }
    }

    #[test]
    fn the_token_is_never_in_a_clients_debug_output() {
        let c = Client::new("/s.sock").with_token(Some("tok-9f8e7d6c".into()));
        assert!(!format!("{c:?}").contains("tok-9f8e7d6c"));
    }

    #[test]
    fn no_endpoint_is_worth_another_round_while_one_of_them_may_come_back() {
        let refused = attempt("connection refused", true);
        let tls = attempt("TLS failed", false);
        assert!(ClientError::NoEndpoint(vec![tls.clone(), refused]).is_transient());
        assert!(!ClientError::NoEndpoint(vec![tls.clone(), tls]).is_transient());
    }

    #[test]
    fn what_passes_a_call_on_to_the_next_endpoint() {
        let err = |code: &str| {
            serde_json::to_vec(&serde_json::json!({"error": {"code": code, "message": "m"}}))
                .unwrap()
        };
        let unavailable = passed_over(
            StatusCode::SERVICE_UNAVAILABLE,
            &err("storage_full"),
            About::Anything,
        );
        assert_eq!(
            unavailable,
            Some(("answered 503 storage_full: m".into(), true))
        );
        // A proxy's page, not gatebot's JSON.
        assert_eq!(
            passed_over(StatusCode::BAD_GATEWAY, b"<html>", About::Anything),
            Some(("answered 502 Bad Gateway".into(), true))
        );
        // A 404 is an answer, except about something another endpoint made.
        assert_eq!(
            passed_over(StatusCode::NOT_FOUND, &err("not_found"), About::Anything),
            None
        );
        assert!(passed_over(StatusCode::NOT_FOUND, &err("not_found"), About::Made).is_some());
        assert_eq!(
            passed_over(StatusCode::NOT_FOUND, &err("no_route"), About::Made),
            None
        );
        assert_eq!(
            passed_over(StatusCode::CONFLICT, &err("agent_paused"), About::Made),
            None
        );
    }
}
