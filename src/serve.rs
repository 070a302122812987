//! Serving the API on a listener, so that no client can use up the daemon.
//!
//! Each listener (the agents' socket, the owners' control socket, the optional TCP
//! listener, the web dashboard's) runs [`serve`]:
//! 1. Take a permit from the listener's own semaphore, then accept. At the cap, new
//!    connections wait in the kernel's queue, where they use no file of ours; the
//!    listener counts the event (`gatebot_connection_cap_reached_total`) and WARNs, at
//!    most once a minute. The control socket's cap is separate ([`CONTROL_CONNECTIONS`]),
//!    so owners can act however many agents are connected.
//! 2. Serve the connection with hyper (HTTP/1.1, keep-alive), each request through the
//!    axum router, with the kernel's [`Caller`] attached for Unix sockets.
//! 3. Time the connection out by what it is doing ([`Phase`]): waiting for a request
//!    for longer than `[queue] idle_timeout`, or sending a request head for longer than
//!    `header_timeout` (both as they were when it was accepted), closes it. A request
//!    being answered, a long-poll included, is never timed out.
//! 4. At shutdown stop accepting; close connections that are not answering a request,
//!    and let the others finish (long-polls return at once, as they watch the same
//!    token), then close them.
//!
//! [`fit_connections`] sizes the caps to the open-file limit, which
//! [`raise_open_file_limit`] raises to its hard limit at start.

use std::convert::Infallible;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::Router;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::{watch, Semaphore};
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};

pub use crate::peer::Caller;

/// Connections per agents' listener when `[queue] max_connections` is not set (fewer
/// when the open-file limit is lower; see [`fit_connections`]).
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Connections the owners' control socket keeps for itself.
pub const CONTROL_CONNECTIONS: usize = 64;
/// Connections the web dashboard's listener takes (owners' browsers: each open page
/// holds one for its live updates).
pub const DASHBOARD_CONNECTIONS: usize = 64;
/// Files kept for everything but connections: SQLite's database, WAL and SHM for each
/// of its connections, chat platforms' HTTPS and websocket connections, the listeners,
/// stdio, and the runtime's epoll and signal descriptors.
pub const RESERVED_FILES: u64 = 256;
/// How often a listener at its cap (or failing to accept) may say so in the log.
const CAP_WARNING_EVERY: Duration = Duration::from_secs(60);
/// Pause after a failed accept (out of files, say), so the loop does not spin.
const ACCEPT_RETRY: Duration = Duration::from_millis(250);

/// Which listener: labels the metrics and the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listener {
    Agents,
    Control,
    Tcp,
    Dashboard,
}

impl Listener {
    pub const ALL: [Listener; 4] = [
        Listener::Agents,
        Listener::Control,
        Listener::Tcp,
        Listener::Dashboard,
    ];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Listener::Agents => "agents",
            Listener::Control => "control",
            Listener::Tcp => "tcp",
            Listener::Dashboard => "dashboard",
        }
    }

    /// How the log names it.
    fn describe(self) -> &'static str {
        match self {
            Listener::Agents => "the agents' socket",
            Listener::Control => "the owners' control socket",
            Listener::Tcp => "the TCP listener",
            Listener::Dashboard => "the web dashboard's listener",
        }
    }
}

/// How one listener serves: its cap, fixed at start, and its timeouts, read for each
/// new connection (so a reloaded `bot.toml` applies to the connections after it).
#[derive(Clone)]
pub struct Limits {
    pub max_connections: usize,
    pub timeouts: Arc<dyn Fn() -> Timeouts + Send + Sync>,
}

/// `[queue] header_timeout` and `idle_timeout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    pub header: Duration,
    pub idle: Duration,
}

/// Why a connection was closed by its timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timeout {
    /// No request came within `idle_timeout`.
    Idle,
    /// A request head did not complete within `header_timeout`.
    Header,
}

impl Timeout {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Timeout::Idle => "idle",
            Timeout::Header => "header",
        }
    }
}

/// Per listener ([`Listener`]): open connections, caps reached, timeouts; the
/// metrics render them ([`crate::metrics`]).
#[derive(Debug, Default)]
pub struct Connections {
    open: [AtomicU64; 4],
    cap_reached: [AtomicU64; 4],
    /// Per listener: idle, header.
    timed_out: [[AtomicU64; 2]; 4],
}

/// Counts a connection as open while it lives.
pub struct OpenConnection<'a>(&'a AtomicU64);

impl Drop for OpenConnection<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Connections {
    /// A connection was accepted; it counts as open until the guard drops.
    pub fn opened(&self, l: Listener) -> OpenConnection<'_> {
        let open = &self.open[l as usize];
        open.fetch_add(1, Ordering::Relaxed);
        OpenConnection(open)
    }

    /// `l` had no room for another connection.
    pub fn cap_reached(&self, l: Listener) {
        self.cap_reached[l as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// A connection of `l` was closed by its timer.
    pub fn timed_out(&self, l: Listener, why: Timeout) {
        self.timed_out[l as usize][why as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// `l`'s connections open now.
    #[must_use]
    pub fn open(&self, l: Listener) -> u64 {
        self.open[l as usize].load(Ordering::Relaxed)
    }

    /// How many times `l` had no room for another connection.
    #[must_use]
    pub fn caps_reached(&self, l: Listener) -> u64 {
        self.cap_reached[l as usize].load(Ordering::Relaxed)
    }

    /// How many of `l`'s connections were closed by their timer for `why`.
    #[must_use]
    pub fn timeouts(&self, l: Listener, why: Timeout) -> u64 {
        self.timed_out[l as usize][why as usize].load(Ordering::Relaxed)
    }
}

/// A listener gatebot accepts connections on.
pub trait Accept: Send + Sync + 'static {
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// The next connection, and who it is from when the kernel can say.
    fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(Self::Io, Option<Caller>)>>;
}

impl Accept for UnixListener {
    type Io = tokio::net::UnixStream;
    fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(Self::Io, Option<Caller>)>> {
        UnixListener::poll_accept(self, cx).map_ok(|(stream, _)| {
            let caller = stream.peer_cred().ok().map(|c| Caller {
                uid: c.uid(),
                pid: c.pid(),
            });
            (stream, caller)
        })
    }
}

impl Accept for TcpListener {
    type Io = tokio::net::TcpStream;
    fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<(Self::Io, Option<Caller>)>> {
        TcpListener::poll_accept(self, cx).map_ok(|(stream, _)| (stream, None))
    }
}

/// Serves `router` on `listener` until `stop` fires (see the module docs). Every
/// connection runs in `tasks`, so waiting for `tasks` waits for them to finish.
pub async fn serve<L: Accept>(
    listener: L,
    which: Listener,
    router: Router,
    limits: Limits,
    metrics: Arc<Connections>,
    stop: CancellationToken,
    tasks: TaskTracker,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let mut last_warning: Option<Instant> = None;
    let mut last_accept_error: Option<Instant> = None;
    let mut unwarned = 0u64;
    loop {
        let permit = match permits.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                metrics.cap_reached(which);
                unwarned += 1;
                if last_warning.is_none_or(|t| t.elapsed() >= CAP_WARNING_EVERY) {
                    warn!(
                        listener = which.as_str(),
                        cap = limits.max_connections,
                        times = unwarned,
                        "{} reached its cap of {} open connections ([queue] max_connections; \
                         the control socket has its own); new connections wait until one closes",
                        which.describe(),
                        limits.max_connections
                    );
                    last_warning = Some(Instant::now());
                    unwarned = 0;
                }
                tokio::select! {
                    _ = stop.cancelled() => return,
                    p = permits.clone().acquire_owned() => p.expect("the semaphore is never closed"),
                }
            }
        };
        let accepted = tokio::select! {
            _ = stop.cancelled() => return,
            r = poll_fn(|cx| listener.poll_accept(cx)) => r,
        };
        let (io, caller) = match accepted {
            Ok(c) => c,
            Err(e) => {
                // EMFILE and friends: the permit goes back, and we try again shortly.
                if last_accept_error.is_none_or(|t| t.elapsed() >= CAP_WARNING_EVERY) {
                    warn!(listener = which.as_str(), error = %e, "cannot accept a connection; retrying");
                    last_accept_error = Some(Instant::now());
                }
                drop(permit);
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(ACCEPT_RETRY) => continue,
                }
            }
        };
        let conn = Connection {
            which,
            router: router.clone(),
            caller,
            timeouts: (limits.timeouts)(),
            metrics: metrics.clone(),
            stop: stop.clone(),
        };
        tasks.spawn(async move {
            conn.run(io).await;
            drop(permit);
        });
    }
}

/// One accepted connection.
struct Connection {
    which: Listener,
    router: Router,
    caller: Option<Caller>,
    timeouts: Timeouts,
    metrics: Arc<Connections>,
    stop: CancellationToken,
}

impl Connection {
    async fn run<I: AsyncRead + AsyncWrite + Unpin + Send + 'static>(self, io: I) {
        let _open = self.metrics.opened(self.which);
        let activity = Arc::new(Activity::new());
        let io = TokioIo::new(Watched {
            inner: io,
            activity: activity.clone(),
        });
        let service = Service {
            router: self.router,
            caller: self.caller,
            activity: activity.clone(),
        };
        // No hyper timer: the timeouts are ours (`expired`), because hyper's one
        // header-read timeout also runs while a kept-alive connection is idle.
        let conn = hyper::server::conn::http1::Builder::new().serve_connection(io, service);
        tokio::pin!(conn);
        let mut draining = false;
        loop {
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        debug!(listener = self.which.as_str(), error = %e, "connection ended with an error");
                    }
                    return;
                }
                why = expired(&activity, self.timeouts) => {
                    self.metrics.timed_out(self.which, why);
                    debug!(listener = self.which.as_str(), timeout = why.as_str(), "closing a connection that timed out");
                    return;
                }
                _ = self.stop.cancelled(), if !draining => {
                    if !activity.busy() {
                        return;
                    }
                    // Answer what is in flight, then close.
                    conn.as_mut().graceful_shutdown();
                    draining = true;
                }
            }
        }
    }
}

/// What a connection is doing, for its timeouts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Waiting for a request since `since` (accepted, or the last answer given).
    Idle { since: Instant },
    /// A request head started arriving at `since`.
    Head { since: Instant },
    /// Answering this many requests (a long-poll included).
    Busy(usize),
}

/// A connection's [`Phase`], moved by its reads and its requests.
struct Activity(watch::Sender<Phase>);

impl Activity {
    fn new() -> Activity {
        Activity(watch::Sender::new(Phase::Idle {
            since: Instant::now(),
        }))
    }

    fn busy(&self) -> bool {
        matches!(*self.0.borrow(), Phase::Busy(_))
    }

    /// Bytes arrived: while idle, a request head has started.
    fn read(&self) {
        self.0.send_if_modified(|p| match p {
            Phase::Idle { .. } => {
                *p = Phase::Head {
                    since: Instant::now(),
                };
                true
            }
            _ => false,
        });
    }

    /// A request head is complete: answering it until the guard drops.
    fn begin(self: &Arc<Self>) -> Answering {
        self.0.send_modify(|p| {
            *p = match p {
                Phase::Busy(n) => Phase::Busy(*n + 1),
                _ => Phase::Busy(1),
            }
        });
        Answering(self.clone())
    }
}

/// Marks a request as being answered while it lives.
struct Answering(Arc<Activity>);

impl Drop for Answering {
    fn drop(&mut self) {
        self.0 .0.send_modify(|p| {
            *p = match p {
                Phase::Busy(n) if *n > 1 => Phase::Busy(*n - 1),
                _ => Phase::Idle {
                    since: Instant::now(),
                },
            }
        });
    }
}

/// Completes when the connection has been idle, or sending one head, for too long.
async fn expired(activity: &Activity, timeouts: Timeouts) -> Timeout {
    let mut phases = activity.0.subscribe();
    loop {
        let deadline = match *phases.borrow_and_update() {
            Phase::Idle { since } => Some((since + timeouts.idle, Timeout::Idle)),
            Phase::Head { since } => Some((since + timeouts.header, Timeout::Header)),
            Phase::Busy(_) => None,
        };
        match deadline {
            Some((at, why)) => tokio::select! {
                _ = sleep_until(at) => return why,
                _ = phases.changed() => {}
            },
            // The sender lives as long as `activity`, so this only returns on a change.
            None => {
                let _ = phases.changed().await;
            }
        }
    }
}

/// The connection's stream, telling its [`Activity`] when bytes arrive.
struct Watched<I> {
    inner: I,
    activity: Arc<Activity>,
}

impl<I: AsyncRead + Unpin> AsyncRead for Watched<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.read();
        }
        r
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Watched<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Each request of a connection: the caller attached, the router called, the
/// connection [`Phase::Busy`] until the answer is ready.
struct Service {
    router: Router,
    caller: Option<Caller>,
    activity: Arc<Activity>,
}

impl hyper::service::Service<Request<Incoming>> for Service {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let mut req = detached(req);
        if let Some(caller) = self.caller {
            req.extensions_mut().insert(caller);
        }
        let answering = self.activity.begin();
        let mut router = self.router.clone();
        Box::pin(async move {
            let res = tower_service::Service::call(&mut router, req).await;
            drop(answering);
            res
        })
    }
}

/// `req` with its head (the URI, header names and values) copied out of hyper's read
/// buffer, which the parsed head otherwise shares. While a request is answered, hyper
/// keeps reading its connection to notice a client that goes away; with the buffer
/// still shared it takes a new one for that (8 KiB), so each long-poll held two. A
/// copy of the head is a few hundred bytes.
fn detached(req: Request<Incoming>) -> Request<Incoming> {
    use hyper::header::{HeaderMap, HeaderName, HeaderValue};
    let (mut parts, body) = req.into_parts();
    let mut headers = HeaderMap::with_capacity(parts.headers.len());
    for (name, value) in &parts.headers {
        let name =
            HeaderName::from_bytes(name.as_str().as_bytes()).unwrap_or_else(|_| name.clone());
        let value = HeaderValue::from_bytes(value.as_bytes()).unwrap_or_else(|_| value.clone());
        headers.append(name, value);
    }
    parts.headers = headers;
    if let Ok(uri) = hyper::Uri::try_from(parts.uri.to_string()) {
        parts.uri = uri;
    }
    Request::from_parts(parts, body)
}

/// Raises the soft open-file limit to the hard limit; returns the soft limit now in
/// force. A refusal (a seccomp filter, say) leaves the limit as it was.
pub fn raise_open_file_limit() -> io::Result<u64> {
    // SAFETY: an all-zero rlimit is valid, and getrlimit only writes into it.
    let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: `lim` is a valid rlimit for the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    if lim.rlim_cur < lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: `raised` is a valid rlimit; setrlimit only reads it.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
            let e = io::Error::last_os_error();
            warn!(soft = lim.rlim_cur, hard = lim.rlim_max, error = %e, "cannot raise the open-file limit; keeping it");
            return Ok(lim.rlim_cur);
        }
        lim.rlim_cur = lim.rlim_max;
    }
    Ok(lim.rlim_cur)
}

/// The cap of each of `agent_listeners` listeners so that they, the control socket and
/// [`RESERVED_FILES`] fit in `open_files`: `configured` (else the default) when it
/// fits; otherwise what fits, and whether that lowered a configured value.
#[must_use]
pub fn fit_connections(
    configured: Option<usize>,
    agent_listeners: usize,
    open_files: u64,
) -> (usize, bool) {
    let spare = open_files
        .saturating_sub(RESERVED_FILES + (CONTROL_CONNECTIONS + DASHBOARD_CONNECTIONS) as u64);
    let fits = usize::try_from(spare / agent_listeners.max(1) as u64)
        .unwrap_or(usize::MAX)
        .max(1);
    let wanted = configured.unwrap_or(DEFAULT_MAX_CONNECTIONS);
    (wanted.min(fits), configured.is_some() && wanted > fits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_fit_the_open_file_limit() {
        // The usual soft limit: one agents' socket fits 1024 - 256 - 64 - 64 (the
        // files kept, the control socket's and the dashboard's connections).
        assert_eq!(fit_connections(None, 1, 1024), (640, false));
        // With TCP too, they share it.
        assert_eq!(fit_connections(None, 2, 1024), (320, false));
        // Raised to a large hard limit: the default, or what was asked for.
        assert_eq!(fit_connections(None, 2, 524_288), (1024, false));
        assert_eq!(fit_connections(Some(5000), 1, 524_288), (5000, false));
        // Asked for more than fits: lowered, and said so.
        assert_eq!(fit_connections(Some(5000), 1, 1024), (640, true));
        // A tiny limit still serves someone.
        assert_eq!(fit_connections(Some(10), 1, 100), (1, true));
    }

    #[test]
    fn the_open_file_limit_is_raised_to_the_hard_limit() {
        let soft = raise_open_file_limit().unwrap();
        // SAFETY: as in raise_open_file_limit.
        let mut lim: libc::rlimit = unsafe { std::mem::zeroed() };
        // SAFETY: `lim` is a valid rlimit for the call.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
        assert_eq!(soft, lim.rlim_cur);
        assert_eq!(lim.rlim_cur, lim.rlim_max);
    }

    #[tokio::test(start_paused = true)]
    async fn a_connection_is_timed_out_only_while_it_waits_or_sends_a_head() {
        let limits = Timeouts {
            header: Duration::from_secs(10),
            idle: Duration::from_secs(60),
        };
        let activity = Arc::new(Activity::new());
        let started = Instant::now();
        assert_eq!(expired(&activity, limits).await, Timeout::Idle);
        assert_eq!(started.elapsed(), Duration::from_secs(60));

        // A long-poll: busy for an hour, never timed out; idle again after it.
        let answering = activity.begin();
        let t = tokio::time::timeout(Duration::from_secs(3600), expired(&activity, limits));
        assert!(t.await.is_err(), "timed out while answering");
        drop(answering);
        let idle_from = Instant::now();
        assert_eq!(expired(&activity, limits).await, Timeout::Idle);
        assert_eq!(idle_from.elapsed(), Duration::from_secs(60));

        // A head that starts and never ends: the shorter header timeout.
        let activity = Arc::new(Activity::new());
        tokio::time::advance(Duration::from_secs(5)).await;
        activity.read();
        let head_from = Instant::now();
        assert_eq!(expired(&activity, limits).await, Timeout::Header);
        assert_eq!(head_from.elapsed(), Duration::from_secs(10));
    }
}
