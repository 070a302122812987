//! Expiry, restarts and the socket's ownership rules.

use std::time::Duration;

use hyper::StatusCode;
use serde_json::json;

use crate::helpers::{http_get, spawn_app, spawn_app_in};

#[tokio::test]
async fn an_unanswered_request_expires_and_the_agent_is_told_it_expired() {
    let app = spawn_app("").await;
    let body = app
        .submit(json!({"agent": "mailer", "tool": "send_email", "args": {}, "ttl": "1s"}))
        .await
        .body;
    let id = body["id"].as_str().unwrap();
    // The waiter is woken by the expiry itself, well before its own 20s wait ends.
    let started = std::time::Instant::now();
    let got = app.get(id, 20.0).await;
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(got.body["status"], "expired");
    assert_eq!(got.body["reason"], "no response within 1 s");
    let message = got.body["message"].as_str().unwrap();
    assert!(
        message.starts_with("[Action expired] send_email"),
        "{message}"
    );
    assert!(message.contains("not denied"), "{message}");
    // A decision after expiry is refused and says why.
    let late = app.decide(id, "approve", None).await;
    assert_eq!(late.status, StatusCode::CONFLICT);
    assert!(
        late.error_message().contains("expired"),
        "{}",
        late.error_message()
    );
    assert!(app.audit_events(id).await.contains(&"expired".to_string()));
}

#[tokio::test]
async fn a_decision_after_the_deadline_loses_to_it_before_the_expiry_pass_runs() {
    if !crate::helpers::sqlite_only(
        "a_decision_after_the_deadline_loses_to_it_before_the_expiry_pass_runs",
    ) {
        return;
    }
    let app = spawn_app("[queue]\nlisten = \"127.0.0.1:0\"\nmetrics = true\n").await;
    let body = app.submit_ok("mailer", "send_email", json!({})).await;
    let id = body["id"].as_str().unwrap().to_string();
    // Move the deadline into the past behind the daemon's back. The expiry task sleeps
    // towards the old deadline (an hour away), so only the decision can notice.
    let db = rusqlite::Connection::open(app.path().join("gatebot.db")).unwrap();
    db.busy_timeout(Duration::from_secs(5)).unwrap();
    let past = gatebot::time::now_ms() - 1_000;
    db.execute(
        "UPDATE approvals SET expires_at = ?1 WHERE id = ?2",
        rusqlite::params![past, id],
    )
    .unwrap();

    let late = app.decide(&id, "approve", None).await;
    assert_eq!(late.status, StatusCode::CONFLICT, "{:?}", late.body);
    assert_eq!(late.error_code(), Some("already_decided"));
    assert!(
        late.error_message()
            .contains("expired: no response within 1 h"),
        "{}",
        late.error_message()
    );
    let got = app.get(&id, 0.0).await;
    assert_eq!(got.body["status"], "expired");
    assert_eq!(got.body["decided_by"], "gatebot");
    // The same record the expiry task writes, then the refused decision; never a decision.
    assert_eq!(
        app.audit_events(&id).await,
        ["submitted", "evaluated", "expired", "decision_refused"]
    );
    // A cancel now sees the expiry too.
    let cancel = app
        .agent
        .post(&format!("/v1/requests/{id}/cancel"), &json!({}))
        .await
        .unwrap();
    assert_eq!(cancel.status, StatusCode::CONFLICT);
    // The expiry was announced once: counted once, and not again by the expiry task.
    let metrics = http_get(app.tcp.unwrap(), "/metrics").await;
    for line in [
        "gatebot_outcomes_total{outcome=\"expired\"} 1",
        "gatebot_outcomes_total{outcome=\"approved\"} 0",
        "gatebot_pending 0",
    ] {
        assert!(metrics.contains(line), "missing {line}:\n{metrics}");
    }
}

#[tokio::test]
async fn a_restart_keeps_pending_requests_and_their_deadlines() {
    let app = spawn_app("").await;
    let keep = app
        .submit_ok("mailer", "send_email", json!({"to": "a@example.com"}))
        .await;
    let soon = app
        .submit(json!({"agent": "mailer", "tool": "send_email", "args": {}, "ttl": "2s"}))
        .await
        .body;
    let decided = app.submit_ok("mailer", "send_email", json!({"n": 3})).await;
    app.decide(decided["id"].as_str().unwrap(), "deny", Some("no"))
        .await;
    let dir = app.stop().await;

    let app = spawn_app_in(dir, "").await;
    let k = app.get(keep["id"].as_str().unwrap(), 0.0).await;
    assert_eq!(k.body["status"], "pending");
    assert_eq!(k.body["expires_at"], keep["expires_at"]);
    assert_eq!(
        app.get(decided["id"].as_str().unwrap(), 0.0).await.body["status"],
        "rejected"
    );
    // The short-lived one still expires on time after the restart.
    let s = app.get(soon["id"].as_str().unwrap(), 20.0).await;
    assert_eq!(s.body["status"], "expired");
    // And the old pending one can still be decided.
    let res = app
        .decide(keep["short_id"].as_str().unwrap(), "approve", None)
        .await;
    assert_eq!(res.status, StatusCode::OK);
}

#[tokio::test]
async fn a_second_daemon_refuses_a_live_socket_and_a_stale_one_is_replaced() {
    let app = spawn_app("").await;
    let config = gatebot::config::Config::load(&app.config_path).unwrap();
    let err = match gatebot::daemon::App::build(config.clone()).await {
        Ok(_) => panic!("a second daemon must not start"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("already listening"), "{err}");
    // The first daemon is unharmed.
    app.submit_ok("mailer", "query_org_data", json!({})).await;

    let dir = app.stop().await;
    // Leave stale socket files behind, as a crash would.
    let stale = std::os::unix::net::UnixListener::bind(dir.path().join("gatebot.sock")).unwrap();
    drop(stale);
    assert!(dir.path().join("gatebot.sock").exists());
    let app = spawn_app_in(dir, "").await;
    app.submit_ok("mailer", "query_org_data", json!({})).await;
}

#[tokio::test]
async fn shutdown_ends_long_polls_promptly() {
    let app = spawn_app("").await;
    let body = app.submit_ok("mailer", "send_email", json!({})).await;
    let id = body["id"].as_str().unwrap().to_string();
    let agent = app.agent.clone();
    let waiter =
        tokio::spawn(async move { agent.get(&format!("/v1/requests/{id}?wait=120")).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = std::time::Instant::now();
    let _dir = app.stop().await;
    assert!(started.elapsed() < Duration::from_secs(10));
    let res = waiter.await.unwrap().unwrap();
    assert_eq!(res.body["status"], "pending");
}
