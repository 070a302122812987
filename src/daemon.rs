//! The daemon: build everything, then run until shutdown.
//!
//! 1. [`App::build`] opens the store, claims the sockets and binds the optional TCP
//!    listener, so callers (and tests) know every address before anything runs. A
//!    socket path is claimed only if nothing is there, or a stale socket (which is
//!    removed); a live daemon's socket, or anything that is not a socket (the
//!    database, a config file), stops the start with an error naming the key. It also
//!    raises the open-file limit and sizes each listener's connection cap to it
//!    ([`crate::serve::fit_connections`]).
//! 2. [`App::run_until`] serves the APIs ([`crate::serve::serve`] on each listener),
//!    runs the expiry and housekeeping tasks and the promotion assessment's
//!    schedule (on the node that leads) and the chat platforms (those `bot.toml`
//!    turns on, from [`crate::platforms::configured`], and any added with
//!    [`App::add_platform`]) until the shutdown future completes; then it stops
//!    accepting, lets in-flight requests finish (long-polls return at once), waits for
//!    every task, and records the counts of refused attempts still in their minute.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use tokio::net::{TcpListener, UnixListener};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

use crate::api::{agent_router, owner_router, ApiState};
use crate::chat::platform::PlatformRun;
use crate::config::Config;
use crate::engine::{Engine, Transport};
use crate::serve::{Limits, Listener, Timeouts, CONTROL_CONNECTIONS, DASHBOARD_CONNECTIONS};
use crate::systemd::Activation;

pub struct App {
    engine: Arc<Engine>,
    listeners: Listeners,
    socket: PathBuf,
    control_socket: PathBuf,
    /// Socket files this process created (and removes at shutdown); sockets passed
    /// by systemd belong to the `.socket` unit and stay.
    owned_sockets: Vec<PathBuf>,
    /// Chat platforms to run beside the configured ones (tests: the in-memory one).
    extra_platforms: Vec<PlatformRun>,
}

impl App {
    /// Opens the store and binds every listener.
    pub async fn build(config: Config) -> anyhow::Result<App> {
        App::build_with(config, Activation::default()).await
    }

    /// Like [`App::build`], using the agents' socket (`FileDescriptorName=agents`)
    /// and the control socket (`control`) from systemd socket activation when given.
    pub async fn build_with(config: Config, mut activation: Activation) -> anyhow::Result<App> {
        if config.store.postgres.is_none() {
            if let Some(dir) = config.store.path.parent() {
                crate::files::create_dirs(dir, crate::files::PRIVATE_DIR)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
            }
        }
        let db = config.store.shown();
        let engine = Engine::open(config)
            .await
            .with_context(|| format!("cannot open the database {db}"))?;
        let config = engine.config();
        let socket = config.queue.socket.clone();
        let control_socket = config.queue.control_socket.clone();
        let mut owned_sockets = Vec::new();
        let agent_listener = match activation.take("agents") {
            Some(l) => {
                info!("using the agents' socket passed by systemd");
                inherited(l)?
            }
            None => {
                owned_sockets.push(socket.clone());
                claim_socket("queue.socket", &socket, 0o660).await?
            }
        };
        let control_listener = match activation.take("control") {
            Some(l) => inherited(l)?,
            None => {
                owned_sockets.push(control_socket.clone());
                claim_socket("queue.control_socket", &control_socket, 0o600).await?
            }
        };
        let tcp_listener = match &config.queue.listen {
            Some(addr) => Some(
                TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("cannot listen on {addr} (queue.listen)"))?,
            ),
            None => None,
        };
        let dashboard_listener =
            match &config.dashboard {
                Some(d) => Some(TcpListener::bind(d.listen).await.with_context(|| {
                    format!("cannot listen on {} (dashboard.listen)", d.listen)
                })?),
                None => None,
            };
        let (agent_limits, control_limits) = connection_limits(&engine);
        for note in &config.notes {
            info!("{note}");
        }
        for warning in &config.warnings {
            warn!("{warning}");
        }
        let pending = engine.record_start().await?;
        info!(
            pending,
            "store opened; pending requests and their deadlines reloaded"
        );
        Ok(App {
            engine,
            listeners: Listeners {
                agents: agent_listener,
                control: control_listener,
                tcp: tcp_listener,
                dashboard: dashboard_listener,
                agent_limits,
                control_limits,
            },
            socket,
            control_socket,
            owned_sockets,
            extra_platforms: Vec::new(),
        })
    }

    /// Runs `platform` too (a chat platform that is not in `bot.toml`: the in-memory
    /// platform of the tests).
    pub fn add_platform(&mut self, platform: PlatformRun) {
        self.extra_platforms.push(platform);
    }

    #[must_use]
    pub fn engine(&self) -> Arc<Engine> {
        self.engine.clone()
    }

    /// The web dashboard's address, if `[dashboard] listen` is set.
    #[must_use]
    pub fn dashboard_addr(&self) -> Option<std::net::SocketAddr> {
        self.listeners
            .dashboard
            .as_ref()
            .and_then(|l| l.local_addr().ok())
    }

    /// The TCP address agents may use, if `[queue] listen` is set.
    #[must_use]
    pub fn tcp_addr(&self) -> Option<std::net::SocketAddr> {
        self.listeners
            .tcp
            .as_ref()
            .and_then(|l| l.local_addr().ok())
    }

    /// Serves until `shutdown` completes, then shuts down gracefully.
    pub async fn run_until(self, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
        let App {
            engine,
            listeners,
            socket,
            control_socket,
            owned_sockets,
            extra_platforms,
        } = self;
        let stop = CancellationToken::new();
        let tasks = TaskTracker::new();
        listeners.serve(&engine, &stop, &tasks);
        // This node's row, and the leader's lease when nodes share the database: the
        // timers run on the node that leads, and it sends the chats' messages
        // (docs/scale-out.md).
        tasks.spawn(engine.clone().run_node(stop.clone()));
        spawn_background(&engine, &stop, &tasks);
        // Each platform's counters from the start, zero on a node that stands by.
        for settings in &engine.config().platforms {
            engine
                .metrics
                .chat_platform(&crate::approval::PlatformId::new(settings.key()));
        }
        // The platforms run on every node: each hears what comes to it (webhooks, a
        // Slack connection); what only one consumer may read (Telegram's updates,
        // Discord's Gateway) and their delivery follow the lead (`chat::run`).
        for (_, run) in crate::platforms::configured(&engine.config(), &engine, &stop) {
            tasks.spawn(run);
        }
        for platform in extra_platforms {
            tasks.spawn(platform(engine.clone(), stop.clone()));
        }
        if let Some(d) = &engine.config().dashboard {
            info!(url = %d.public_url, "the web dashboard is served; sign in with a link from `gatebot dashboard login`");
        }
        info!(socket = %socket.display(), control_socket = %control_socket.display(), "gatebot is ready");
        crate::systemd::notify("READY=1");

        shutdown.await;
        crate::systemd::notify("STOPPING=1");
        info!("shutting down: no new requests; finishing those in flight");
        stop.cancel();
        tasks.close();
        tasks.wait().await;
        // Counts of refused attempts still in their minute go into the trail now.
        if let Err(e) = engine.flush_refusals(true).await {
            warn!(error = %e, "could not record the counts of refused attempts; the next start will");
        }
        for path in &owned_sockets {
            if let Err(e) = std::fs::remove_file(path) {
                warn!(path = %path.display(), error = %e, "could not remove the socket file");
            }
        }
        // Dropping the last engine handle closes SQLite (checkpointing the WAL).
        drop(engine);
        info!("stopped");
        Ok(())
    }
}

/// The listeners [`App::build`] bound, with how each serves: the agents' listeners
/// (Unix and TCP, each) and the control socket.
struct Listeners {
    agents: UnixListener,
    control: UnixListener,
    tcp: Option<TcpListener>,
    dashboard: Option<TcpListener>,
    agent_limits: Limits,
    control_limits: Limits,
}

impl Listeners {
    /// Serves the agents' API on the agents' socket (and the TCP listener) and the
    /// owners' on the control socket, until `stop`.
    fn serve(self, engine: &Arc<Engine>, stop: &CancellationToken, tasks: &TaskTracker) {
        let state = |transport, owner| ApiState {
            engine: engine.clone(),
            transport,
            owner,
            shutdown: stop.clone(),
        };
        let connections = engine.metrics.connections.clone();
        tasks.spawn(crate::serve::serve(
            self.agents,
            Listener::Agents,
            agent_router(state(Transport::Unix, false)),
            self.agent_limits.clone(),
            connections.clone(),
            stop.clone(),
            tasks.clone(),
        ));
        tasks.spawn(crate::serve::serve(
            self.control,
            Listener::Control,
            owner_router(state(Transport::Unix, true)),
            self.control_limits.clone(),
            connections.clone(),
            stop.clone(),
            tasks.clone(),
        ));
        if let Some(listener) = self.dashboard {
            // The history page's search index, brought up to date in batches.
            tasks.spawn(crate::dashboard::keep_index(engine.clone(), stop.clone()));
            let limits = Limits {
                max_connections: DASHBOARD_CONNECTIONS,
                ..self.control_limits.clone()
            };
            tasks.spawn(crate::serve::serve(
                listener,
                Listener::Dashboard,
                crate::dashboard::router(engine.clone(), stop.clone()),
                limits,
                connections.clone(),
                stop.clone(),
                tasks.clone(),
            ));
        }
        if let Some(listener) = self.tcp {
            tasks.spawn(crate::serve::serve(
                listener,
                Listener::Tcp,
                agent_router(state(Transport::Tcp, false)),
                self.agent_limits.clone(),
                connections,
                stop.clone(),
                tasks.clone(),
            ));
        }
    }
}

/// The engine's timers: expiry, housekeeping, the tasks' timers and the promotion
/// assessment's schedule, on the leading node with its lease's fence (one node runs
/// them, and a node that no longer leads cannot write what they do); and systemd's
/// watchdog when it asks for one, on every node.
fn spawn_background(engine: &Arc<Engine>, stop: &CancellationToken, tasks: &TaskTracker) {
    tasks.spawn(engine.clone().while_leading(stop.clone(), true, {
        let engine = engine.clone();
        move |term: CancellationToken| {
            let engine = engine.clone();
            // In the one task `while_leading` runs, which its fence is set for.
            async move {
                tokio::join!(
                    engine.clone().run_expiry(term.clone()),
                    engine.clone().run_housekeeping(term.clone()),
                    engine.clone().run_task_timers(term.clone()),
                    // The promotion assessment's schedule (`[promotion] every`).
                    engine.clone().run_promotion(term),
                );
            }
        }
    }));
    if let Some(every) = crate::systemd::watchdog_interval() {
        tasks.spawn(watchdog(engine.clone(), every, stop.clone()));
    }
}

/// Raises the open-file limit, and sizes the listeners' caps to it: the agents'
/// listeners get `[queue] max_connections` each (or what fits), the control socket
/// [`CONTROL_CONNECTIONS`] of its own.
fn connection_limits(engine: &Arc<Engine>) -> (Limits, Limits) {
    let config = engine.config();
    let q = &config.queue;
    let open_files = crate::serve::raise_open_file_limit().unwrap_or_else(|e| {
        warn!(error = %e, "cannot read the open-file limit; assuming 1024");
        1024
    });
    let listeners = 1 + usize::from(q.listen.is_some());
    let (cap, lowered) = crate::serve::fit_connections(q.max_connections, listeners, open_files);
    if lowered {
        warn!(
            configured = q.max_connections,
            cap,
            open_files,
            "queue.max_connections lowered to {cap}: {listeners} listener(s) of that many, the \
             control socket and gatebot's own files must fit in the open-file limit of {open_files}"
        );
    }
    info!(
        max_connections = cap,
        open_files, "connections capped per agents' listener"
    );
    // The live config's, so a reload applies to new connections.
    let engine = engine.clone();
    let timeouts: Arc<dyn Fn() -> Timeouts + Send + Sync> = Arc::new(move || {
        let config = engine.config();
        Timeouts {
            header: config.queue.header_timeout,
            idle: config.queue.idle_timeout,
        }
    });
    let limits = |max_connections| Limits {
        max_connections,
        timeouts: timeouts.clone(),
    };
    (limits(cap), limits(CONTROL_CONNECTIONS))
}

/// Pings systemd's watchdog while the store answers and can keep what it is sent: a
/// wedged store, a deleted or replaced database file, a full disk or I/O errors stop
/// the pings (and say why in `STATUS=`), and systemd restarts the service.
async fn watchdog(
    engine: Arc<Engine>,
    every: std::time::Duration,
    stop: CancellationToken,
) -> std::io::Result<()> {
    loop {
        tokio::select! {
            _ = stop.cancelled() => return Ok(()),
            _ = tokio::time::sleep(every) => {}
        }
        if let Some(fault) = engine.storage_fault().await {
            // Logged at ERROR when it was found; this says why the pings stopped.
            warn!(
                code = fault.code(),
                "storage fault: skipping the watchdog ping"
            );
            crate::systemd::notify(&format!("STATUS={}", fault.message));
            continue;
        }
        let healthy = tokio::time::timeout(every, engine.count_pending()).await;
        match healthy {
            Ok(Ok(_)) => crate::systemd::notify("WATCHDOG=1"),
            _ => warn!("the store did not answer in time; skipping the watchdog ping"),
        }
    }
}

/// Adopts a listening socket passed by systemd.
fn inherited(l: std::os::unix::net::UnixListener) -> anyhow::Result<UnixListener> {
    l.set_nonblocking(true)
        .context("cannot use the socket passed by systemd")?;
    UnixListener::from_std(l).context("cannot use the socket passed by systemd")
}

/// Binds a Unix socket at `path` (the config's `key`) with `mode`. Removes only a
/// stale socket there: a live daemon's socket, or anything that is not a socket (the
/// database, a config file, a directory, a symbolic link), stops the start instead.
async fn claim_socket(key: &str, path: &Path, mode: u32) -> anyhow::Result<UnixListener> {
    use std::os::unix::fs::FileTypeExt;
    if let Some(dir) = path.parent() {
        crate::files::create_dirs(dir, crate::files::SOCKET_DIR)
            .with_context(|| format!("`{key}`: cannot create {}", dir.display()))?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            if tokio::net::UnixStream::connect(path).await.is_ok() {
                bail!(
                    "`{key}`: another gatebot is already listening on {}; stop it first",
                    path.display()
                );
            }
            warn!(key, path = %path.display(), "removing a stale socket file left by a previous run");
            std::fs::remove_file(path).with_context(|| {
                format!("`{key}`: cannot remove the stale socket {}", path.display())
            })?;
        }
        Ok(meta) => bail!(
            "`{key}`: {} is {}, not a socket; gatebot removes only a stale socket it left \
             there, so move that away or set `{key}` to another path",
            path.display(),
            crate::files::describe(&meta)
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => bail!(
            "`{key}`: cannot check {}: {}",
            path.display(),
            crate::files::io_words(&e)
        ),
    }
    let listener = crate::files::bind_unix(path, mode)
        .with_context(|| format!("`{key}`: cannot bind {}", path.display()))?;
    listener
        .set_nonblocking(true)
        .with_context(|| format!("`{key}`: cannot use {}", path.display()))?;
    UnixListener::from_std(listener)
        .with_context(|| format!("`{key}`: cannot use {}", path.display()))
}

/// The signals the daemon acts on. They are installed before the daemon serves: a
/// signal that arrived before its handler would find the default action in place,
/// and SIGTERM's and SIGHUP's default is to end the process at once.
pub struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    /// SIGHUP: reload the config ([`reload_on_sighup`]).
    pub hup: tokio::signal::unix::Signal,
}

impl Signals {
    /// Installs the handlers; call it first thing in the runtime.
    pub fn install() -> std::io::Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
            hup: signal(SignalKind::hangup())?,
        })
    }

    /// Completes on SIGINT or SIGTERM; the SIGHUP stream is handed back for reloads.
    pub fn shutdown(self) -> (impl Future<Output = ()>, tokio::signal::unix::Signal) {
        let Signals {
            mut term,
            mut int,
            hup,
        } = self;
        let shutdown = async move {
            tokio::select! {
                _ = int.recv() => info!("SIGINT received"),
                _ = term.recv() => info!("SIGTERM received"),
            }
        };
        (shutdown, hup)
    }
}

/// Reloads the config on every SIGHUP; an invalid file is refused and the old config
/// stays, with a warning for each of its errors.
pub async fn reload_on_sighup(
    engine: Arc<Engine>,
    path: PathBuf,
    mut hup: tokio::signal::unix::Signal,
) {
    while hup.recv().await.is_some() {
        match Config::check(&path) {
            Ok(new) => {
                for warning in &new.warnings {
                    warn!("{warning}");
                }
                match engine.reload(new).await {
                    Ok(restart) if restart.is_empty() => {
                        info!(config = %path.display(), "configuration reloaded")
                    }
                    // Each key was named in its own warning.
                    Ok(restart) => info!(
                        config = %path.display(), restart_needed = ?restart,
                        "configuration reloaded, except what needs a restart"
                    ),
                    Err(e) => warn!(error = %e, "configuration reload failed"),
                }
            }
            // One line per error (each with its line and key), then the verdict.
            Err(errors) => {
                for e in &errors {
                    warn!("new configuration: {e}");
                }
                warn!(
                    config = %path.display(),
                    "new configuration refused ({}); keeping the old one",
                    crate::config::count_errors(errors.len())
                );
            }
        }
    }
}
