//! Storage faults are visible: a database file deleted or replaced under the running
//! daemon, or a database that cannot grow, makes submits fail with 503 and a code an
//! operator can act on, `/v1/health` say so, an ERROR line, and the systemd watchdog
//! stop being pinged (so systemd restarts the service); nothing is acknowledged and
//! then lost.

use std::os::unix::net::UnixDatagram;
use std::time::{Duration, Instant};

use gatebot::client::Client;
use hyper::StatusCode;
use serde_json::json;

use crate::files::stop;
use crate::helpers::{
    assert_health_unavailable, assert_unavailable, health, log_text, send_email, spawn_app,
    BASE_CONFIG,
};

#[tokio::test]
async fn a_deleted_database_refuses_submits_instead_of_losing_them() {
    if !crate::helpers::sqlite_only("a_deleted_database_refuses_submits_instead_of_losing_them") {
        return;
    }
    let app = spawn_app("").await;
    assert_eq!(health(&app.agent).await.0, StatusCode::OK);
    app.submit_pending(send_email(0)).await;
    let db = app.path().join("gatebot.db");
    std::fs::remove_file(&db).unwrap();

    let res = app.submit(send_email(1)).await;
    let message = assert_unavailable(&res, "was deleted");
    assert!(message.contains(&db.display().to_string()), "{message}");
    assert!(message.contains("restart gatebot"), "{message}");
    // Owners see it too, on every route that reads the store, and in /v1/health.
    let listed = app.owner.get("/v1/requests").await.unwrap();
    assert_eq!(listed.status, StatusCode::SERVICE_UNAVAILABLE);
    for client in [&app.agent, &app.owner] {
        assert_health_unavailable(client, "was deleted").await;
    }
    let log = log_text();
    assert!(
        log.lines().any(|l| l.contains("ERROR")
            && l.contains("storage_unavailable")
            && l.contains(&db.display().to_string())),
        "no ERROR line about {}",
        db.display()
    );
}

#[tokio::test]
async fn a_replaced_database_refuses_submits() {
    if !crate::helpers::sqlite_only("a_replaced_database_refuses_submits") {
        return;
    }
    let app = spawn_app("").await;
    app.submit_pending(send_email(0)).await;
    let db = app.path().join("gatebot.db");
    // A backup restored over the live file, as `cp` or `mv` would.
    let copy = app.path().join("copy.db");
    std::fs::copy(&db, &copy).unwrap();
    std::fs::rename(&copy, &db).unwrap();
    let res = app.submit(send_email(1)).await;
    assert_unavailable(&res, "was replaced");
    let (status, body) = health(&app.owner).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("was replaced"));
}

#[tokio::test]
async fn a_full_database_refuses_submits_and_keeps_what_it_acknowledged() {
    if !crate::helpers::sqlite_only(
        "a_full_database_refuses_submits_and_keeps_what_it_acknowledged",
    ) {
        return;
    }
    // No room kept back for owners (tests/it/quotas.rs has that): the hard cap.
    let app = spawn_app("[store]\nmax_size = \"1MiB\"\nreserve = \"0\"\n").await;
    let big = "x".repeat(50_000);
    let mut acknowledged = Vec::new();
    let mut refused = None;
    for n in 0..100 {
        let res = app
            .submit(json!({"agent": "mailer", "tool": "send_email", "args": {"n": n, "body": big}}))
            .await;
        if res.status.is_success() {
            acknowledged.push(res.body["id"].as_str().unwrap().to_string());
        } else {
            refused = Some(res);
            break;
        }
    }
    let res = refused.expect("1 MiB was never reached");
    assert!(!acknowledged.is_empty());
    assert_eq!(
        res.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{:?}",
        res.body
    );
    assert_eq!(res.error_code(), Some("storage_full"));
    let message = res.error_message();
    assert!(
        message.contains("cannot grow") && message.contains("store.max_size"),
        "{message}"
    );
    let (status, body) = health(&app.agent).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["storage"], "storage_full");
    assert!(log_text()
        .lines()
        .any(|l| l.contains("ERROR") && l.contains("storage_full")));
    // Every acknowledged request is there; the refused one is not.
    let pending = app.owner.get("/v1/requests?status=pending").await.unwrap();
    let ids: Vec<&str> = pending.body["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, acknowledged);
}

/// Datagrams on the notify socket until one contains `want`, for at most `within`.
fn read_until(sock: &UnixDatagram, want: &str, within: Duration) -> Vec<String> {
    let deadline = Instant::now() + within;
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
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
async fn the_watchdog_stops_being_pinged_when_the_database_is_deleted() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bot.toml"), BASE_CONFIG).unwrap();
    let notify_path = dir.path().join("notify.sock");
    let notify = UnixDatagram::bind(&notify_path).unwrap();
    notify
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_gatebot"));
    cmd.args(["run", "--config"])
        .arg(dir.path().join("bot.toml"))
        .env("NOTIFY_SOCKET", &notify_path)
        .env("WATCHDOG_USEC", "200000")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let daemon = cmd.spawn().unwrap();
    let seen = read_until(&notify, "WATCHDOG=1", Duration::from_secs(30));
    assert!(seen.iter().any(|s| s == "WATCHDOG=1"), "{seen:?}");

    std::fs::remove_file(dir.path().join("gatebot.db")).unwrap();
    // The watchdog task says why it stops pinging...
    let seen = read_until(&notify, "STATUS=", Duration::from_secs(30));
    let status = seen
        .iter()
        .find(|s| s.starts_with("STATUS="))
        .unwrap_or_else(|| panic!("{seen:?}"));
    assert!(status.contains("was deleted"), "{status}");
    // ...and from then on it pings no more: several watchdog intervals (100 ms) pass
    // with STATUS repeated and no WATCHDOG=1.
    let later = read_until(&notify, "never sent", Duration::from_secs(2));
    assert!(later.iter().all(|s| s != "WATCHDOG=1"), "{later:?}");
    assert!(later.iter().any(|s| s.starts_with("STATUS=")), "{later:?}");

    let agent = Client::new(dir.path().join("gatebot.sock"));
    let (status, body) = health(&agent).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    let out = stop(daemon).await;
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.lines()
            .any(|l| l.contains("ERROR") && l.contains("was deleted")),
        "{log}"
    );
}

#[tokio::test]
async fn check_config_explains_a_bad_store_max_size() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bot.toml"),
        "[store]\npath = \"g.db\"\nmax_size = \"a lot\"\n",
    )
    .unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_gatebot"))
        .args(["check-config", "--config"])
        .arg(dir.path().join("bot.toml"))
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(":3:") && err.contains("store.max_size"),
        "{err}"
    );
}
