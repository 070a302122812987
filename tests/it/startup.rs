//! What the daemon says as it starts: the pending count in its log and audit trail,
//! and plain log lines without colour codes when stderr is not a terminal.

use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use crate::helpers::{eventually, log_text, spawn_app, spawn_app_in, BASE_CONFIG};

const BIN: &str = env!("CARGO_BIN_EXE_gatebot");

#[tokio::test]
async fn the_start_counts_every_pending_request() {
    if !crate::helpers::sqlite_only("the_start_counts_every_pending_request") {
        return;
    }
    let app = spawn_app("").await;
    let dir = app.stop().await;
    // 10 000 pending requests, written straight into the database.
    let db = rusqlite::Connection::open(dir.path().join("gatebot.db")).unwrap();
    db.execute_batch(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000)
         INSERT INTO approvals (id, short_id, agent, tool, args, status, risk_score, tool_class,
             risk_factors, policy_reason, ttl_ms, created_at, expires_at)
         SELECT printf('01COUNT%019d', i), printf('c%07d', i), 'intern', 'create_contact',
             '{}', 'pending', 'medium', 'write', '[]', 'counted', 86400000,
             CAST(strftime('%s','now') AS INTEGER) * 1000,
             CAST(strftime('%s','now') AS INTEGER) * 1000 + 86400000
         FROM n;",
    )
    .unwrap();
    drop(db);
    let app = spawn_app_in(dir, "").await;
    let audit = app.owner.get("/v1/audit").await.unwrap().body;
    let started = audit["audit"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|r| r["event"] == "daemon_started")
        .cloned()
        .unwrap();
    assert_eq!(started["detail"]["pending"], 10_000, "{started}");
    assert!(log_text().contains("pending=10000"));
    let listed = app
        .owner
        .get("/v1/requests?status=pending&limit=1")
        .await
        .unwrap();
    assert!(listed.body["next"].is_string(), "more than one page");
}

#[tokio::test]
async fn plain_logs_carry_no_colour_codes_into_a_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bot.toml"), BASE_CONFIG).unwrap();
    let log = dir.path().join("gatebot.log");
    let mut child = Command::new(BIN)
        .args(["run", "--config"])
        .arg(dir.path().join("bot.toml"))
        .env_remove("NO_COLOR")
        .env_remove("RUST_LOG")
        .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    eventually("the daemon to be ready", async || {
        let written = std::fs::read_to_string(&log).ok()?;
        written.contains("gatebot is ready").then_some(())
    })
    .await;
    crate::helpers::signal(child.id().unwrap(), libc::SIGTERM);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("exits")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let written = std::fs::read_to_string(&log).unwrap();
    assert!(written.contains(" INFO "), "{written}");
    assert!(!written.contains('\u{1b}'), "escape codes in {written:?}");
}

/// A SIGHUP or SIGTERM that arrives the moment the daemon's socket appears is handled,
/// not met by the default action (which ends the process at once): the handlers are
/// installed before the daemon serves.
#[tokio::test]
async fn signals_arriving_as_the_daemon_starts_are_handled() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bot.toml"), BASE_CONFIG).unwrap();
    let sock = dir.path().join("gatebot.sock");
    let child = Command::new(BIN)
        .args(["run", "--config"])
        .arg(dir.path().join("bot.toml"))
        .env_remove("NOTIFY_SOCKET")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    // Signal as soon as the socket file exists (checked every millisecond): the daemon
    // is still building then, before it serves.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !sock.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the agents' socket never appeared"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    crate::helpers::signal(pid, libc::SIGHUP);
    crate::helpers::signal(pid, libc::SIGTERM);
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("the daemon stops")
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
