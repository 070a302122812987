//! systemd integration with the real binary: socket activation (the test passes the
//! listening socket as systemd does: at fd 3 with `LISTEN_FDS`, `LISTEN_PID` and
//! `LISTEN_FDNAMES`, so no systemd tools are needed) and the notify protocol (READY,
//! WATCHDOG, STOPPING) on a datagram socket we listen on.

use std::os::unix::net::UnixDatagram;
use std::process::Stdio;
use std::time::{Duration, Instant};

use gatebot::client::Client;
use serde_json::json;
use tokio::process::Command;

use crate::helpers::BASE_CONFIG;

const BIN: &str = env!("CARGO_BIN_EXE_gatebot");

fn read_states(sock: &UnixDatagram, want: &str, within: Duration) -> Vec<String> {
    let deadline = Instant::now() + within;
    let mut seen = Vec::new();
    let mut buf = [0u8; 512];
    while Instant::now() < deadline {
        if let Ok(n) = sock.recv(&mut buf) {
            let s = String::from_utf8_lossy(&buf[..n]).into_owned();
            let done = s.contains(want);
            seen.push(s);
            if done {
                break;
            }
        }
    }
    seen
}

#[tokio::test]
async fn the_daemon_notifies_ready_pings_the_watchdog_and_says_stopping() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bot.toml"), BASE_CONFIG).unwrap();
    let notify_path = dir.path().join("notify.sock");
    let notify = UnixDatagram::bind(&notify_path).unwrap();
    notify
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut child = Command::new(BIN)
        .args(["run", "--config"])
        .arg(dir.path().join("bot.toml"))
        .env("NOTIFY_SOCKET", &notify_path)
        .env("WATCHDOG_USEC", "200000")
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let seen = read_states(&notify, "READY=1", Duration::from_secs(20));
    assert!(seen.iter().any(|s| s == "READY=1"), "{seen:?}");
    // READY comes after the sockets are bound: the daemon answers at once.
    let res = Client::new(dir.path().join("gatebot.sock"))
        .post(
            "/v1/requests",
            &json!({"agent": "mailer", "tool": "query_org_data", "args": {}}),
        )
        .await
        .unwrap();
    assert_eq!(res.body["status"], "allowed");
    let seen = read_states(&notify, "WATCHDOG=1", Duration::from_secs(10));
    assert!(seen.iter().any(|s| s == "WATCHDOG=1"), "{seen:?}");

    crate::helpers::signal(child.id().unwrap(), libc::SIGTERM);
    let seen = read_states(&notify, "STOPPING=1", Duration::from_secs(10));
    assert!(seen.iter().any(|s| s == "STOPPING=1"), "{seen:?}");
    assert_eq!(child.wait().await.unwrap().code(), Some(0));
}

#[tokio::test]
async fn an_activated_socket_is_used_and_left_in_place() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bot.toml"), BASE_CONFIG).unwrap();
    let sock = dir.path().join("gatebot.sock");
    // Bound and listening before gatebot runs, as the `.socket` unit holds it: a
    // request made now waits in the kernel's backlog until gatebot accepts it.
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let early = tokio::spawn({
        let sock = sock.clone();
        async move {
            Client::new(&sock)
                .post(
                    "/v1/requests",
                    &json!({"agent": "mailer", "tool": "query_org_data", "args": {}}),
                )
                .await
        }
    });
    let mut child = activated(&listener, "agents")
        .args(["run", "--config"])
        .arg(dir.path().join("bot.toml"))
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    drop(listener);
    let res = tokio::time::timeout(Duration::from_secs(30), early)
        .await
        .expect("answered")
        .unwrap()
        .unwrap();
    assert_eq!(res.body["status"], "allowed", "{:?}", res.body);
    // The control socket is still the daemon's own.
    assert!(dir.path().join("gatebot-control.sock").exists());

    crate::helpers::signal(child.id().unwrap(), libc::SIGTERM);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("exits")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let mut log = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut child.stderr.take().unwrap(), &mut log)
        .await
        .unwrap();
    assert!(log.contains("passed by systemd"), "{log}");
    assert!(
        sock.exists(),
        "the activated socket belongs to the .socket unit"
    );
    assert!(
        !dir.path().join("gatebot-control.sock").exists(),
        "its own socket is removed"
    );
}

/// The gatebot binary, started as systemd starts a socket-activated service: the
/// listening socket at fd 3 (`SD_LISTEN_FDS_START`), `LISTEN_FDS=1`, its name in
/// `LISTEN_FDNAMES`, and `LISTEN_PID` set to the service's own pid. The pid is known
/// only in the child, so `sh` sets it (`$$`) and `exec`s gatebot, keeping the pid.
fn activated(listener: &std::os::unix::net::UnixListener, name: &str) -> Command {
    use std::os::fd::AsRawFd;
    let fd = listener.as_raw_fd();
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg(r#"LISTEN_PID=$$ exec "$0" "$@""#)
        .arg(BIN)
        .env("LISTEN_FDS", "1")
        .env("LISTEN_FDNAMES", name);
    // SAFETY: between fork and exec the closure makes only async-signal-safe calls
    // (dup2, fcntl) on descriptors this process owns.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
            if fd == 3 {
                // Already in place: dup2 would leave close-on-exec set, so clear it.
                let flags = libc::fcntl(3, libc::F_GETFD);
                if flags < 0 || libc::fcntl(3, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(fd, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Command::from(cmd)
}
