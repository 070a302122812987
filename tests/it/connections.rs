//! Connections cannot use up the daemon: per-listener caps with room kept for owners,
//! idle and slow connections timed out, long-polls left alone.

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

use crate::helpers::{eventually, log_text, spawn_app};

/// Reads until the daemon closes the connection; what it sent. Bounded, so a daemon
/// that never closes fails the test instead of hanging it.
async fn read_until_closed(s: &mut UnixStream) -> String {
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut out))
        .await
        .expect("the daemon closed the connection")
        .unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

/// The value of one series in the Prometheus text.
fn series(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in:\n{metrics}"))
}

async fn connect(path: &Path) -> UnixStream {
    UnixStream::connect(path).await.unwrap()
}

/// ~1 000 idle connections once left the daemon answering nobody. With a cap (3 here),
/// idle agents wait their turn and the control socket still answers owners.
#[tokio::test]
async fn idle_agent_connections_cannot_lock_owners_out() {
    let app = spawn_app("[queue]\nmax_connections = 3\nidle_timeout = \"1h\"\n").await;
    let socket = app.path().join("gatebot.sock");
    let (id, short) = app
        .submit_pending(json!({"agent": "intern", "tool": "create_contact", "args": {}}))
        .await;
    let mut idle = Vec::new();
    for _ in 0..3 {
        idle.push(connect(&socket).await);
    }
    // A fourth agent: it connects (the kernel queues it) and waits for room.
    let agent = app.agent.clone();
    let waiting = tokio::spawn(async move {
        agent
            .post(
                "/v1/requests",
                &json!({"agent": "mailer", "tool": "query_org_data", "args": {}}),
            )
            .await
    });
    let metrics = eventually("the agents' socket to reach its cap", async || {
        let m = app.metrics().await;
        (series(
            &m,
            "gatebot_connection_cap_reached_total{listener=\"agents\"}",
        ) >= 1)
            .then_some(m)
    })
    .await;
    assert_eq!(
        series(&metrics, "gatebot_connections{listener=\"agents\"}"),
        3
    );
    assert!(
        log_text().contains("reached its cap of 3 open connections"),
        "the cap is logged"
    );

    // Owners act all the while.
    let pending = app.owner.get("/v1/requests?status=pending").await.unwrap();
    assert_eq!(
        pending.body["requests"][0]["short_id"], short,
        "{:?}",
        pending.body
    );
    let decided = app.decide_ok(&id, "approve", None).await;
    assert_eq!(decided["status"], "approved");

    // The idle ones go; the waiting agent is served.
    drop(idle);
    let res = tokio::time::timeout(Duration::from_secs(30), waiting)
        .await
        .expect("the waiting agent was served")
        .unwrap()
        .unwrap();
    assert_eq!(res.body["status"], "allowed", "{:?}", res.body);
    // Shutdown does not wait on idle connections either.
    let _held = connect(&socket).await;
    app.stop().await;
}

/// A connection that sends nothing, one that never finishes its request head, and a
/// kept-alive one after its answer are closed; a long-poll that outlasts both timeouts
/// is answered.
#[tokio::test]
async fn idle_and_slow_connections_are_closed_but_a_long_poll_is_not() {
    let app = spawn_app("[queue]\nidle_timeout = \"1s\"\nheader_timeout = \"1s\"\n").await;
    let socket = app.path().join("gatebot.sock");

    let mut silent = connect(&socket).await;
    let mut slow = connect(&socket).await;
    slow.write_all(b"GET /v1/health HTTP/1.1\r\nHost: gatebot\r\n")
        .await
        .unwrap();
    let mut kept = connect(&socket).await;
    kept.write_all(b"GET /v1/health HTTP/1.1\r\nHost: gatebot\r\n\r\n")
        .await
        .unwrap();

    // A long-poll three times longer than either timeout.
    let (id, _) = app
        .submit_pending(json!({"agent": "intern", "tool": "create_contact", "args": {}}))
        .await;
    let polled = app.get(&id, 3.0).await;
    assert!(polled.status.is_success(), "{:?}", polled.body);
    assert_eq!(polled.body["status"], "pending");

    assert_eq!(read_until_closed(&mut silent).await, "");
    let slow_answer = read_until_closed(&mut slow).await;
    assert!(!slow_answer.contains("200 OK"), "{slow_answer}");
    let kept_answer = read_until_closed(&mut kept).await;
    assert!(kept_answer.starts_with("HTTP/1.1 200"), "{kept_answer}");

    let m = app.metrics().await;
    let timeouts = |reason: &str| {
        series(
            &m,
            &format!(
                "gatebot_connection_timeouts_total{{listener=\"agents\",reason=\"{reason}\"}}"
            ),
        )
    };
    assert!(timeouts("idle") >= 2, "{m}");
    assert!(timeouts("header") >= 1, "{m}");
}

/// The timeouts are reloaded (SIGHUP) for the connections opened after the reload.
#[tokio::test]
async fn a_reloaded_idle_timeout_applies_to_new_connections() {
    let app = spawn_app("[queue]\nidle_timeout = \"1h\"\n").await;
    let config = std::fs::read_to_string(&app.config_path)
        .unwrap()
        .replace("idle_timeout = \"1h\"", "idle_timeout = \"1s\"");
    std::fs::write(&app.config_path, config).unwrap();
    let reloaded = gatebot::config::Config::load(&app.config_path).unwrap();
    app.engine.reload(reloaded).await.unwrap();
    let mut silent = connect(&app.path().join("gatebot.sock")).await;
    assert_eq!(read_until_closed(&mut silent).await, "");
}
