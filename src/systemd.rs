//! systemd integration without libsystemd: socket activation (`LISTEN_FDS`) and
//! the notify protocol (`READY=1`, `STOPPING=1`, `RELOADING=1`, `WATCHDOG=1`).
//!
//! Both are no-ops when the daemon is not started by systemd.

use std::os::fd::{FromRawFd, RawFd};
use std::time::Duration;

/// The first file descriptor systemd passes (`SD_LISTEN_FDS_START`).
const LISTEN_FDS_START: RawFd = 3;

/// Listening sockets passed by systemd, by name (`FileDescriptorName=`).
#[derive(Debug, Default)]
pub struct Activation {
    sockets: Vec<(String, std::os::unix::net::UnixListener)>,
}

impl Activation {
    /// Takes the sockets systemd passed to this process, if any, and clears the
    /// variables so child processes do not see them.
    #[must_use]
    pub fn from_env() -> Activation {
        let pid_matches = std::env::var("LISTEN_PID")
            .ok()
            .and_then(|p| p.parse::<u32>().ok())
            == Some(std::process::id());
        let count = std::env::var("LISTEN_FDS")
            .ok()
            .and_then(|n| n.parse::<i32>().ok())
            .unwrap_or(0);
        let names = std::env::var("LISTEN_FDNAMES").unwrap_or_default();
        for var in ["LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"] {
            // SAFETY-free: std::env::remove_var is safe in edition 2021; this runs at
            // start-up before any other thread reads the environment.
            std::env::remove_var(var);
        }
        if !pid_matches || count <= 0 {
            return Activation::default();
        }
        let names: Vec<&str> = names.split(':').collect();
        let sockets = (0..count)
            .map(|i| {
                let fd = LISTEN_FDS_START + i;
                // SAFETY: systemd passes `count` open descriptors starting at fd 3,
                // owned by this process and used by nothing else; each is wrapped
                // exactly once here.
                let listener = unsafe { std::os::unix::net::UnixListener::from_raw_fd(fd) };
                let name = names.get(i as usize).copied().unwrap_or("").to_string();
                (name, listener)
            })
            .collect();
        Activation { sockets }
    }

    /// The socket named `name`, or the first unnamed one when `name` is "agents"
    /// (a `.socket` unit without `FileDescriptorName=`).
    pub fn take(&mut self, name: &str) -> Option<std::os::unix::net::UnixListener> {
        let pos = self
            .sockets
            .iter()
            .position(|(n, _)| n == name)
            .or_else(|| {
                (name == "agents")
                    .then(|| {
                        self.sockets.iter().position(|(n, _)| {
                            n.is_empty() || n == "unknown" || n.ends_with(".socket")
                        })
                    })
                    .flatten()
            })?;
        Some(self.sockets.remove(pos).1)
    }
}

/// Sends a state string to systemd's notify socket, if there is one.
pub fn notify(state: &str) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let Ok(sock) = std::os::unix::net::UnixDatagram::unbound() else {
        return;
    };
    let bytes = path.as_encoded_bytes();
    let sent = if let Some(name) = bytes.strip_prefix(b"@") {
        use std::os::linux::net::SocketAddrExt;
        std::os::unix::net::SocketAddr::from_abstract_name(name)
            .and_then(|addr| sock.send_to_addr(state.as_bytes(), &addr))
    } else {
        sock.send_to(state.as_bytes(), &path)
    };
    if let Err(e) = sent {
        tracing::warn!(error = %e, "cannot notify systemd");
    }
}

/// How often to send `WATCHDOG=1`: half of `WATCHDOG_USEC`, if the watchdog is on
/// for this process.
#[must_use]
pub fn watchdog_interval() -> Option<Duration> {
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.parse().ok()?;
    if let Some(pid) = std::env::var("WATCHDOG_PID")
        .ok()
        .and_then(|p| p.parse::<u32>().ok())
    {
        if pid != std::process::id() {
            return None;
        }
    }
    (usec > 0).then(|| Duration::from_micros(usec / 2))
}
