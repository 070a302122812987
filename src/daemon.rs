//! The daemon: build everything, then run until shutdown.
//!
//! 1. [`App::build`] opens the store, claims the sockets (refusing to start if a
//!    live daemon owns one, removing a stale file otherwise) and binds the optional
//!    TCP listener, so callers (and tests) know every address before anything runs.
//! 2. [`App::run_until`] serves the APIs, runs the expiry task, the promotion
//!    assessment's schedule and the chat platforms
//!    (those `bot.toml` turns on, from [`crate::chat::platform::configured`], and any
//!    added with [`App::add_platform`]) until the shutdown future completes; then it
//!    stops accepting, lets in-flight requests finish (long-polls return at once) and
//!    waits for every task.

use std::future::Future;
use std::os::unix::fs::PermissionsExt;
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
use crate::systemd::Activation;

pub struct App {
    engine: Arc<Engine>,
    agent_listener: UnixListener,
    control_listener: UnixListener,
    tcp_listener: Option<TcpListener>,
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
        let store_path = config.store.path.clone();
        if let Some(dir) = store_path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let db = config.store.path.clone();
        let engine = Engine::open(config)
            .await
            .with_context(|| format!("cannot open the database {}", db.display()))?;
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
                claim_socket(&socket, 0o660).await?
            }
        };
        let control_listener = match activation.take("control") {
            Some(l) => inherited(l)?,
            None => {
                owned_sockets.push(control_socket.clone());
                claim_socket(&control_socket, 0o600).await?
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
        for note in &config.notes {
            info!("{note}");
        }
        let pending = engine.record_start().await?;
        info!(
            pending,
            "store opened; pending requests and their deadlines reloaded"
        );
        Ok(App {
            engine,
            agent_listener,
            control_listener,
            tcp_listener,
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

    /// The TCP address agents may use, if `[queue] listen` is set.
    #[must_use]
    pub fn tcp_addr(&self) -> Option<std::net::SocketAddr> {
        self.tcp_listener.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// Serves until `shutdown` completes, then shuts down gracefully.
    pub async fn run_until(self, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
        let App {
            engine,
            agent_listener,
            control_listener,
            tcp_listener,
            socket,
            control_socket,
            owned_sockets,
            extra_platforms,
        } = self;
        let stop = CancellationToken::new();
        let tasks = TaskTracker::new();

        let state = |transport, owner| ApiState {
            engine: engine.clone(),
            transport,
            owner,
            shutdown: stop.clone(),
        };
        let serve_unix = |listener: UnixListener, router: axum::Router| {
            let stop = stop.clone();
            async move {
                axum::serve(listener, router)
                    .with_graceful_shutdown(stop.cancelled_owned())
                    .await
            }
        };
        tasks.spawn(serve_unix(
            agent_listener,
            agent_router(state(Transport::Unix, false)),
        ));
        tasks.spawn(serve_unix(
            control_listener,
            owner_router(state(Transport::Unix, true)),
        ));
        if let Some(listener) = tcp_listener {
            let router = agent_router(state(Transport::Tcp, false));
            let stop = stop.clone();
            tasks.spawn(async move {
                axum::serve(listener, router)
                    .with_graceful_shutdown(stop.cancelled_owned())
                    .await
            });
        }
        tasks.spawn({
            let engine = engine.clone();
            let stop = stop.clone();
            async move {
                engine.run_expiry(stop).await;
                Ok::<(), std::io::Error>(())
            }
        });
        // The promotion assessment's schedule (`[promotion] every`).
        tasks.spawn({
            let engine = engine.clone();
            let stop = stop.clone();
            async move {
                engine.run_promotion(stop).await;
                Ok::<(), std::io::Error>(())
            }
        });
        if let Some(every) = crate::systemd::watchdog_interval() {
            tasks.spawn(watchdog(engine.clone(), every, stop.clone()));
        }
        for (id, run) in crate::chat::platform::configured(&engine.config(), &engine, &stop) {
            engine.metrics.chat_platform(&id);
            tasks.spawn(run);
        }
        for platform in extra_platforms {
            tasks.spawn(platform(engine.clone(), stop.clone()));
        }
        info!(socket = %socket.display(), control_socket = %control_socket.display(), "gatebot is ready");
        crate::systemd::notify("READY=1");

        shutdown.await;
        crate::systemd::notify("STOPPING=1");
        info!("shutting down: no new requests; finishing those in flight");
        stop.cancel();
        tasks.close();
        tasks.wait().await;
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

/// Pings systemd's watchdog while the store answers; a wedged store stops the pings
/// and systemd restarts the service.
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

/// Binds a Unix socket at `path` with `mode`, refusing to steal one a live daemon owns.
async fn claim_socket(path: &Path, mode: u32) -> anyhow::Result<UnixListener> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    if path.exists() {
        match tokio::net::UnixStream::connect(path).await {
            Ok(_) => bail!(
                "another gatebot is already listening on {}; stop it first",
                path.display()
            ),
            Err(_) => {
                warn!(path = %path.display(), "removing a stale socket file left by a previous run");
                std::fs::remove_file(path)
                    .with_context(|| format!("cannot remove stale socket {}", path.display()))?;
            }
        }
    }
    let listener =
        UnixListener::bind(path).with_context(|| format!("cannot bind {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("cannot set permissions on {}", path.display()))?;
    Ok(listener)
}

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("install SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => info!("SIGINT received"),
        _ = term.recv() => info!("SIGTERM received"),
    }
}

/// Reloads the config on every SIGHUP; an invalid file is refused and the old config stays.
pub async fn reload_on_sighup(engine: Arc<Engine>, path: PathBuf) {
    use tokio::signal::unix::{signal, SignalKind};
    let Ok(mut hup) = signal(SignalKind::hangup()) else {
        warn!("cannot install a SIGHUP handler; config reload is off");
        return;
    };
    while hup.recv().await.is_some() {
        match Config::load(&path) {
            Ok(new) => match engine.reload(new).await {
                Ok(()) => info!(config = %path.display(), "configuration reloaded"),
                Err(e) => warn!(error = %e, "configuration reload failed"),
            },
            Err(e) => warn!(error = %e, "new configuration refused; keeping the old one"),
        }
    }
}
