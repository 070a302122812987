//! systemd integration with the real binary: socket activation (through
//! `systemd-socket-activate`, which passes the socket as systemd does) and the
//! notify protocol (READY, WATCHDOG, STOPPING) on a datagram socket we listen on.

use std::os::unix::net::UnixDatagram;
use std::process::Stdio;
use std::time::{Duration, Instant};

use gatebot::client::Client;
use serde_json::json;
use tokio::process::Command;

use crate::helpers::{eventually, BASE_CONFIG};

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

    let pid = child.id().unwrap().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let seen = read_states(&notify, "STOPPING=1", Duration::from_secs(10));
    assert!(seen.iter().any(|s| s == "STOPPING=1"), "{seen:?}");
    assert_eq!(child.wait().await.unwrap().code(), Some(0));
}

#[tokio::test]
async fn an_activated_socket_is_used_and_left_in_place() {
    let activate = which("systemd-socket-activate").expect(
        "systemd-socket-activate is needed for this test (Debian package `systemd`; .ci/run installs it)",
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bot.toml"), BASE_CONFIG).unwrap();
    let sock = dir.path().join("gatebot.sock");
    let mut child = Command::new(activate)
        .arg("-l")
        .arg(&sock)
        .arg("--fdname=agents")
        .args([BIN, "run", "--config"])
        .arg(dir.path().join("bot.toml"))
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // systemd-socket-activate binds the socket first and starts gatebot on the first
    // connection, as systemd does: the request waits in the backlog meanwhile.
    eventually("the socket", async || sock.exists().then_some(())).await;
    let res = tokio::time::timeout(
        Duration::from_secs(30),
        Client::new(&sock).post(
            "/v1/requests",
            &json!({"agent": "mailer", "tool": "query_org_data", "args": {}}),
        ),
    )
    .await
    .expect("answered")
    .unwrap();
    assert_eq!(res.body["status"], "allowed", "{:?}", res.body);
    // The control socket is still the daemon's own.
    assert!(dir.path().join("gatebot-control.sock").exists());

    let pid = child.id().unwrap().to_string();
    assert!(std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
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
        !dir.path().join("gatebot-control.sock").exists(),
        "its own socket is removed"
    );
}

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| std::path::Path::new(d).join(name))
        .find(|p| p.exists())
}
