//! The agent and owner APIs, through the real sockets of an in-process daemon.

use std::os::unix::fs::PermissionsExt;

use gatebot::client::Client;
use hyper::{Method, StatusCode};
use serde_json::json;

use crate::helpers::{http_get, spawn_app};

#[tokio::test]
async fn a_read_only_call_from_a_semi_autonomous_agent_runs_at_once() {
    let app = spawn_app("").await;
    let res = app
        .submit(json!({"agent": "mailer", "tool": "query_org_data", "args": {"q": "contacts in Berlin"}}))
        .await;
    assert_eq!(res.status, StatusCode::CREATED);
    assert_eq!(res.body["status"], "allowed", "{:?}", res.body);
    assert_eq!(res.body["risk"]["tool_class"], "read-only");
    assert_eq!(res.body["risk"]["score"], "low");
    assert!(res.body["reason"].as_str().unwrap().len() > 5);
    assert!(res.body["expires_at"].is_null());
}

#[tokio::test]
async fn a_destructive_call_waits_and_the_waiting_agent_gets_the_approval() {
    let app = spawn_app("").await;
    let body = app
        .submit_ok(
            "mailer",
            "send_email",
            json!({"to": ["a@example.com"], "body": "Our price is $49"}),
        )
        .await;
    assert_eq!(body["status"], "pending");
    assert_eq!(body["risk"]["score"], "high");
    assert!(body["risk"]["factors"]
        .as_array()
        .unwrap()
        .contains(&json!("pricing_content")));
    assert!(body["expires_at"].is_string());
    let id = body["id"].as_str().unwrap().to_string();

    // The agent long-polls; the owner decides while it waits.
    let waiter = {
        let agent = app.agent.clone();
        let id = id.clone();
        tokio::spawn(async move { agent.get(&format!("/v1/requests/{id}?wait=30")).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let short = body["short_id"].as_str().unwrap();
    let res = app.decide(&short[..5], "approve", None).await;
    assert_eq!(res.status, StatusCode::OK, "{:?}", res.body);
    let got = waiter.await.unwrap().unwrap();
    assert_eq!(got.body["status"], "approved");
    assert_eq!(got.body["decided_by"], "alice");
    assert_eq!(got.body["decided_via"], "cli");

    let events = app.audit_events(&id).await;
    assert_eq!(events, ["submitted", "evaluated", "decided"]);
}

#[tokio::test]
async fn a_denial_reaches_the_agent_with_its_reason() {
    let app = spawn_app("").await;
    let body = app
        .submit_ok("intern", "create_contact", json!({"name": "Bo"}))
        .await;
    assert_eq!(body["status"], "pending");
    let id = body["id"].as_str().unwrap();
    let res = app.decide(id, "deny", Some("not this client")).await;
    assert_eq!(res.status, StatusCode::OK);
    let got = app.get(id, 0.0).await;
    assert_eq!(got.body["status"], "rejected");
    assert_eq!(got.body["reason"], "not this client");
    assert_eq!(
        got.body["message"],
        "[Action rejected] create_contact: not this client. The action was not run."
    );
}

#[tokio::test]
async fn approve_always_lets_the_next_call_through_but_not_required_tools() {
    let app = spawn_app("").await;
    let first = app
        .submit_ok("mailer", "send_email", json!({"to": "a@example.com"}))
        .await;
    assert_eq!(first["status"], "pending");
    assert_eq!(first["always_allow_offered"], true);
    let res = app
        .decide(first["id"].as_str().unwrap(), "approve-always", None)
        .await;
    assert_eq!(res.body["always_allowed"], true);
    let second = app
        .submit_ok("mailer", "send_email", json!({"to": "b@example.com"}))
        .await;
    assert_eq!(second["status"], "allowed", "{second}");

    // require_approval_for wins over an earlier "Always allow".
    let bulk = app.submit_ok("mailer", "send_bulk_email", json!({})).await;
    assert_eq!(bulk["status"], "pending");
    assert_eq!(bulk["always_allow_offered"], false);
    let res = app
        .decide(bulk["id"].as_str().unwrap(), "approve-always", None)
        .await;
    assert_eq!(res.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(res.error_message().contains("does not apply"));
    // And the request is still pending after the refused decision.
    let still = app.get(bulk["id"].as_str().unwrap(), 0.0).await;
    assert_eq!(still.body["status"], "pending");
}

#[tokio::test]
async fn the_same_idempotency_key_returns_the_same_request() {
    let app = spawn_app("").await;
    let body = json!({"agent": "mailer", "tool": "send_email", "args": {"to": "x@example.com"}, "idempotency_key": "k-1"});
    let a = app.submit(body.clone()).await;
    let b = app.submit(body).await;
    assert_eq!(a.status, StatusCode::CREATED);
    assert_eq!(b.status, StatusCode::OK);
    assert_eq!(a.body["id"], b.body["id"]);
    let pending = app.owner.get("/v1/requests?status=pending").await.unwrap();
    assert_eq!(pending.body["requests"].as_array().unwrap().len(), 1);

    let c = app
        .submit(json!({"agent": "mailer", "tool": "send_email", "args": {"to": "other@example.com"}, "idempotency_key": "k-1"}))
        .await;
    assert_eq!(c.status, StatusCode::CONFLICT);
    assert_eq!(c.error_code(), Some("idempotency_conflict"));
}

#[tokio::test]
async fn malformed_json_is_a_clear_400_and_stores_nothing() {
    let app = spawn_app("").await;
    let res = app
        .agent
        .send(
            Method::POST,
            "/v1/requests",
            Some(b"{\"agent\": \"mailer\", ".to_vec()),
        )
        .await
        .unwrap();
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    assert_eq!(res.error_code(), Some("malformed_json"));
    let all = app.owner.get("/v1/requests").await.unwrap();
    assert!(all.body["requests"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn a_missing_field_is_named() {
    let app = spawn_app("").await;
    let res = app.submit(json!({"agent": "mailer", "args": {}})).await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    assert_eq!(res.error_code(), Some("invalid_request"));
    assert!(
        res.error_message().contains("tool"),
        "{}",
        res.error_message()
    );
}

#[tokio::test]
async fn a_misspelt_field_is_rejected_not_ignored() {
    let app = spawn_app("").await;
    let res = app
        .submit(json!({"agent": "mailer", "tool": "t", "args": {}, "sumary": "typo"}))
        .await;
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    assert!(res.error_message().contains("sumary"));
}

#[tokio::test]
async fn an_unknown_agent_is_refused() {
    let app = spawn_app("").await;
    let res = app
        .submit(json!({"agent": "ghost", "tool": "t", "args": {}}))
        .await;
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(res.error_code(), Some("unknown_agent"));
    assert!(res.error_message().contains("ghost"));
}

#[tokio::test]
async fn unknown_agents_can_be_accepted_as_supervised() {
    let app = spawn_app("").await;
    // Rewrite the policy in a fresh app rather than patching BASE_CONFIG.
    drop(app);
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("bot.toml");
    std::fs::write(&cfg, "[policy]\nunknown_agents = \"supervised\"\n").unwrap();
    let config = gatebot::config::Config::load(&cfg).unwrap();
    let sock = config.queue.socket.clone();
    let app = gatebot::daemon::App::build(config).await.unwrap();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(app.run_until(async {
        let _ = rx.await;
    }));
    let res = Client::new(&sock)
        .post(
            "/v1/requests",
            &json!({"agent": "stranger", "tool": "Read", "args": {}}),
        )
        .await
        .unwrap();
    assert_eq!(res.body["status"], "pending");
    tx.send(()).unwrap();
    task.await.unwrap().unwrap();
}

#[tokio::test]
async fn an_oversize_body_gets_413_and_stores_nothing() {
    let app = spawn_app("[queue]\nmax_body_bytes = 4096\n").await;
    let big = "x".repeat(10_000);
    let res = app
        .submit(json!({"agent": "mailer", "tool": "send_email", "args": {"body": big}}))
        .await;
    assert_eq!(res.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(res.error_code(), Some("payload_too_large"));
    // The limit, so a client can say which key to raise and to what.
    assert_eq!(res.body["error"]["max_body_bytes"], 4096);
    let all = app.owner.get("/v1/requests").await.unwrap();
    assert!(all.body["requests"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn an_agent_with_a_token_must_present_it() {
    let app = spawn_app("").await;
    let body = json!({"agent": "secure", "tool": "send_email", "args": {}});
    let none = app.submit(body.clone()).await;
    assert_eq!(none.status, StatusCode::UNAUTHORIZED);
    let wrong = app
        .agent
        .clone()
        .with_token(Some("guess".into()))
        .post("/v1/requests", &body)
        .await
        .unwrap();
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    let theirs = app
        .agent
        .clone()
        .with_token(Some("other-token-456".into()))
        .post("/v1/requests", &body)
        .await
        .unwrap();
    assert_eq!(theirs.status, StatusCode::UNAUTHORIZED);
    // Each refusal is audited: who was claimed, what was tried, never the token.
    let rows = unauthorised_rows(&app).await;
    assert_eq!(rows.len(), 3, "{rows:?}");
    for row in &rows {
        assert_eq!(row["actor"], "secure", "{row}");
        assert_eq!(row["channel"], "api", "{row}");
        assert!(row["approval_id"].is_null(), "{row}");
        assert_eq!(row["detail"]["attempted"], "submit a send_email request");
        assert_eq!(row["detail"]["transport"], "unix");
        let text = row.to_string();
        assert!(
            !text.contains("guess") && !text.contains("token-456"),
            "{text}"
        );
    }
    assert!(rows[0]["detail"]["refused"]
        .as_str()
        .unwrap()
        .contains("send it as"));
    assert!(rows[1]["detail"]["refused"]
        .as_str()
        .unwrap()
        .contains("is not agent `secure`'s token"));
    // A token that belongs to another agent says whose it is.
    assert!(rows[1]["detail"]["token_of"].is_null());
    assert_eq!(rows[2]["detail"]["token_of"], "other");

    let right = app
        .agent
        .clone()
        .with_token(Some("secure-token-123".into()))
        .post("/v1/requests", &body)
        .await
        .unwrap();
    assert_eq!(right.status, StatusCode::CREATED, "{:?}", right.body);
    assert_eq!(unauthorised_rows(&app).await.len(), 3);
}

/// Every `unauthorised_attempt` row in the audit trail, oldest first.
async fn unauthorised_rows(app: &crate::helpers::TestApp) -> Vec<serde_json::Value> {
    let res = app.owner.get("/v1/audit").await.unwrap();
    res.body["audit"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["event"] == "unauthorised_attempt")
        .cloned()
        .collect()
}

#[tokio::test]
async fn an_agent_cannot_act_as_another_with_its_own_token() {
    let app = spawn_app("").await;
    let as_other = app
        .agent
        .clone()
        .with_token(Some("secure-token-123".into()));
    let res = as_other
        .post(
            "/v1/requests",
            &json!({"agent": "other", "tool": "t", "args": {}}),
        )
        .await
        .unwrap();
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);

    // Nor read, cancel or report on another agent's request.
    let theirs = app
        .agent
        .clone()
        .with_token(Some("other-token-456".into()))
        .post(
            "/v1/requests",
            &json!({"agent": "other", "tool": "send_email", "args": {}}),
        )
        .await
        .unwrap();
    let id = theirs.body["id"].as_str().unwrap();
    let peek = as_other.get(&format!("/v1/requests/{id}")).await.unwrap();
    assert_eq!(peek.status, StatusCode::UNAUTHORIZED);
    // The attempt shows in that request's own audit trail.
    let trail = app
        .owner
        .get(&format!("/v1/audit?request={id}"))
        .await
        .unwrap();
    let refused: Vec<_> = trail.body["audit"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["event"] == "unauthorised_attempt")
        .collect();
    assert_eq!(refused.len(), 1, "{}", trail.body);
    assert_eq!(refused[0]["actor"], "other");
    assert_eq!(refused[0]["detail"]["attempted"], "read a request");
    assert_eq!(refused[0]["detail"]["token_of"], "secure");
    let cancel = as_other
        .post(&format!("/v1/requests/{id}/cancel"), &json!({}))
        .await
        .unwrap();
    assert_eq!(cancel.status, StatusCode::UNAUTHORIZED);
    let still = app.owner.get(&format!("/v1/requests/{id}")).await.unwrap();
    assert_eq!(still.body["status"], "pending");
}

#[tokio::test]
async fn agents_cannot_decide_requests() {
    let app = spawn_app("").await;
    let body = app.submit_ok("mailer", "send_email", json!({})).await;
    let id = body["id"].as_str().unwrap();
    let res = app
        .agent
        .post(
            &format!("/v1/requests/{id}/decision"),
            &json!({"decision": "approve"}),
        )
        .await
        .unwrap();
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    assert_eq!(app.get(id, 0.0).await.body["status"], "pending");
    // With a token, the attempt is pinned on that token's agent.
    let res = app
        .agent
        .clone()
        .with_token(Some("secure-token-123".into()))
        .post(
            &format!("/v1/requests/{id}/decision"),
            &json!({"decision": "deny"}),
        )
        .await
        .unwrap();
    assert_eq!(res.status, StatusCode::FORBIDDEN);
    let rows = unauthorised_rows(&app).await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    for (row, actor) in rows.iter().zip(["unknown", "secure"]) {
        assert_eq!(row["actor"], actor);
        assert_eq!(row["channel"], "api");
        assert_eq!(row["approval_id"], id);
        assert!(
            row["detail"]["attempted"]
                .as_str()
                .unwrap()
                .starts_with("decide request"),
            "{row}"
        );
        assert!(!row.to_string().contains("secure-token"), "{row}");
    }
    // The audit route is not on the agents' socket either.
    let audit = app.agent.get("/v1/audit").await.unwrap();
    assert_eq!(audit.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn an_unknown_id_is_404() {
    let app = spawn_app("").await;
    let res = app
        .agent
        .get("/v1/requests/01HZZZZZZZZZZZZZZZZZZZZZZZ")
        .await
        .unwrap();
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    assert_eq!(res.error_code(), Some("not_found"));
    let res = app.decide("zzzz9999", "approve", None).await;
    assert_eq!(res.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_second_decision_is_refused_and_names_the_first() {
    let app = spawn_app("").await;
    let body = app.submit_ok("mailer", "send_email", json!({})).await;
    let id = body["id"].as_str().unwrap();
    assert_eq!(
        app.decide(id, "deny", Some("no")).await.status,
        StatusCode::OK
    );
    let second = app.decide(id, "approve", None).await;
    assert_eq!(second.status, StatusCode::CONFLICT);
    assert_eq!(second.error_code(), Some("already_decided"));
    assert!(
        second
            .error_message()
            .contains("denied by alice on the command line: no"),
        "{}",
        second.error_message()
    );
    assert_eq!(app.get(id, 0.0).await.body["status"], "rejected");
    let events = app.audit_events(id).await;
    assert_eq!(events.iter().filter(|e| *e == "decided").count(), 1);
    assert!(events.contains(&"decision_refused".to_string()));
}

#[tokio::test]
async fn concurrent_decisions_yield_exactly_one_outcome() {
    let app = spawn_app("").await;
    let body = app.submit_ok("mailer", "send_email", json!({})).await;
    let id = body["id"].as_str().unwrap().to_string();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let owner = app.owner.clone();
        let id = id.clone();
        let verb = if i % 2 == 0 { "approve" } else { "deny" };
        tasks.push(tokio::spawn(async move {
            owner
                .post(
                    &format!("/v1/requests/{id}/decision"),
                    &json!({"decision": verb}),
                )
                .await
                .unwrap()
                .status
        }));
    }
    let mut ok = 0;
    for t in tasks {
        match t.await.unwrap() {
            StatusCode::OK => ok += 1,
            StatusCode::CONFLICT => {}
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(ok, 1);
}

#[tokio::test]
async fn an_ambiguous_prefix_lists_the_candidates() {
    if !crate::helpers::sqlite_only("an_ambiguous_prefix_lists_the_candidates") {
        return;
    }
    let app = spawn_app("").await;
    let a = app.submit_ok("mailer", "send_email", json!({})).await;
    let b = app.submit_ok("mailer", "send_email", json!({"n": 2})).await;
    // Give both requests short ids with a common prefix, straight in the database.
    let db = rusqlite::Connection::open(app.path().join("gatebot.db")).unwrap();
    db.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
    for (id, short) in [(&a["id"], "abcd2345"), (&b["id"], "abcd6789")] {
        db.execute(
            "UPDATE approvals SET short_id = ?1 WHERE id = ?2",
            [short, id.as_str().unwrap()],
        )
        .unwrap();
    }
    let res = app.decide("abcd", "approve", None).await;
    assert_eq!(res.status, StatusCode::CONFLICT);
    assert_eq!(res.error_code(), Some("ambiguous_id"));
    assert!(res.error_message().contains("abcd2345") && res.error_message().contains("abcd6789"));
    // Both still pending; a longer prefix decides exactly one.
    assert_eq!(
        app.decide("ABCD6", "approve", None).await.status,
        StatusCode::OK
    );
    assert_eq!(
        app.get(a["id"].as_str().unwrap(), 0.0).await.body["status"],
        "pending"
    );
    assert_eq!(
        app.get(b["id"].as_str().unwrap(), 0.0).await.body["status"],
        "approved"
    );
    // Fewer than 4 characters never match a prefix.
    assert_eq!(
        app.decide("abc", "approve", None).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn the_agent_can_cancel_and_report_results() {
    let app = spawn_app("").await;
    let body = app.submit_ok("mailer", "send_email", json!({})).await;
    let id = body["id"].as_str().unwrap();
    let res = app
        .agent
        .post(&format!("/v1/requests/{id}/cancel"), &json!({}))
        .await
        .unwrap();
    assert_eq!(res.body["status"], "cancelled");
    assert!(res.body["message"]
        .as_str()
        .unwrap()
        .starts_with("[Action cancelled]"));
    // A decision on a cancelled request is refused.
    assert_eq!(
        app.decide(id, "approve", None).await.status,
        StatusCode::CONFLICT
    );

    let ok = app.submit_ok("mailer", "query_org_data", json!({})).await;
    let id = ok["id"].as_str().unwrap();
    let r = app
        .agent
        .post(
            &format!("/v1/requests/{id}/result"),
            &json!({"executing": true}),
        )
        .await
        .unwrap();
    assert_eq!(r.body["status"], "executing");
    let r = app
        .agent
        .post(
            &format!("/v1/requests/{id}/result"),
            &json!({"ok": false, "detail": "timeout"}),
        )
        .await
        .unwrap();
    assert_eq!(r.body["status"], "failed");
    assert_eq!(r.body["result_detail"], "timeout");
    let r = app
        .agent
        .post(&format!("/v1/requests/{id}/result"), &json!({"ok": true}))
        .await
        .unwrap();
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn a_result_for_a_pending_request_is_refused() {
    let app = spawn_app("").await;
    let body = app.submit_ok("mailer", "send_email", json!({})).await;
    let id = body["id"].as_str().unwrap();
    let r = app
        .agent
        .post(&format!("/v1/requests/{id}/result"), &json!({"ok": true}))
        .await
        .unwrap();
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(app.get(id, 0.0).await.body["status"], "pending");
}

#[tokio::test]
async fn bad_values_are_refused_with_the_field_named() {
    let app = spawn_app("").await;
    for (body, needle) in [
        (
            json!({"agent": "mailer", "tool": "t", "args": {}, "confidence": 1.5}),
            "confidence",
        ),
        (
            json!({"agent": "mailer", "tool": "t", "args": {}, "ttl": "soon"}),
            "ttl",
        ),
        (
            json!({"agent": "mailer", "tool": "t", "args": {}, "ttl": "30d"}),
            "ttl",
        ),
        (json!({"agent": "mailer", "tool": "", "args": {}}), "tool"),
        (json!({"agent": "../etc", "tool": "t", "args": {}}), "agent"),
    ] {
        let res = app.submit(body.clone()).await;
        assert!(res.status.is_client_error(), "{body}: {:?}", res.body);
        assert!(
            res.error_message().contains(needle),
            "{body}: {}",
            res.error_message()
        );
    }
}

#[tokio::test]
async fn agents_list_only_their_own_requests() {
    let app = spawn_app("").await;
    app.submit_ok("mailer", "send_email", json!({})).await;
    app.submit_ok("intern", "send_email", json!({})).await;
    let res = app.agent.get("/v1/requests?status=pending").await.unwrap();
    assert_eq!(res.status, StatusCode::BAD_REQUEST);
    let res = app
        .agent
        .get("/v1/requests?status=pending&agent=mailer")
        .await
        .unwrap();
    let list = res.body["requests"].as_array().unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0]["agent"], "mailer");
    let all = app.owner.get("/v1/requests?status=pending").await.unwrap();
    assert_eq!(all.body["requests"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn long_lists_come_in_pages_and_every_request_is_reachable() {
    let app = spawn_app("").await;
    let mut ids = Vec::new();
    for n in 0..5 {
        let body = app.submit_ok("intern", "send_email", json!({"n": n})).await;
        ids.push(body["id"].as_str().unwrap().to_string());
    }
    app.submit_ok("mailer", "send_email", json!({})).await;
    ids.sort();
    let mut seen = Vec::new();
    let mut after = String::new();
    loop {
        let res = app
            .owner
            .get(&format!(
                "/v1/requests?status=pending&agent=intern&limit=2&after={after}"
            ))
            .await
            .unwrap();
        assert!(res.status.is_success(), "{:?}", res.body);
        let page = res.body["requests"].as_array().unwrap();
        assert!(page.len() <= 2);
        seen.extend(page.iter().map(|r| r["id"].as_str().unwrap().to_string()));
        match res.body["next"].as_str() {
            Some(next) => after = next.to_string(),
            None => break,
        }
    }
    assert_eq!(seen, ids, "oldest first, each once, only intern's");
    let bad = app.owner.get("/v1/requests?limit=0").await.unwrap();
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert!(
        bad.error_message().contains("limit"),
        "{}",
        bad.error_message()
    );
}

#[tokio::test]
async fn sockets_have_the_documented_modes() {
    let app = spawn_app("").await;
    let mode = |p: &str| {
        std::fs::metadata(app.path().join(p))
            .unwrap()
            .permissions()
            .mode()
            & 0o777
    };
    assert_eq!(mode("gatebot.sock"), 0o660);
    assert_eq!(mode("gatebot-control.sock"), 0o600);
}

#[tokio::test]
async fn the_tcp_listener_requires_a_token() {
    let app = spawn_app("[queue]\nlisten = \"127.0.0.1:0\"\n").await;
    let addr = app.tcp.unwrap();
    let send = |body: serde_json::Value, token: Option<&str>| {
        let token = token.map(str::to_string);
        async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            let body = body.to_string();
            let auth = token
                .map(|t| format!("Authorization: Bearer {t}\r\n"))
                .unwrap_or_default();
            let req = format!(
                "POST /v1/requests HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            s.write_all(req.as_bytes()).await.unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).await.unwrap();
            out
        }
    };
    let no_token = send(json!({"agent": "mailer", "tool": "t", "args": {}}), None).await;
    assert!(no_token.starts_with("HTTP/1.1 401"), "{no_token}");
    let with_token = send(
        json!({"agent": "secure", "tool": "query_org_data", "args": {}}),
        Some("secure-token-123"),
    )
    .await;
    assert!(with_token.starts_with("HTTP/1.1 201"), "{with_token}");
}

#[tokio::test]
async fn unknown_routes_answer_json() {
    let app = spawn_app("").await;
    let res = app.agent.get("/nope").await.unwrap();
    assert_eq!(res.status, StatusCode::NOT_FOUND);
    assert_eq!(res.error_code(), Some("no_route"));
}

#[tokio::test]
async fn metrics_count_verdicts_outcomes_and_pending() {
    let app = spawn_app("[queue]\nlisten = \"127.0.0.1:0\"\nmetrics = true\n").await;
    app.submit_ok("mailer", "query_org_data", json!({})).await;
    let a = app.submit_ok("mailer", "send_email", json!({})).await;
    app.submit_ok("mailer", "send_email", json!({"n": 2})).await;
    app.submit_ok("drafter", "send_email", json!({})).await;
    app.decide(a["id"].as_str().unwrap(), "deny", None).await;
    let text = http_get(app.tcp.unwrap(), "/metrics").await;
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    for line in [
        "gatebot_requests_total{verdict=\"allow\"} 1",
        "gatebot_requests_total{verdict=\"ask\"} 2",
        "gatebot_requests_total{verdict=\"block\"} 1",
        "gatebot_outcomes_total{outcome=\"rejected\"} 1",
        "gatebot_pending 1",
        "gatebot_decision_latency_seconds_count 1",
    ] {
        assert!(text.contains(line), "missing {line}:\n{text}");
    }
}

#[tokio::test]
async fn metrics_are_off_on_tcp_unless_enabled() {
    let app = spawn_app("[queue]\nlisten = \"127.0.0.1:0\"\n").await;
    let text = http_get(app.tcp.unwrap(), "/metrics").await;
    assert!(text.starts_with("HTTP/1.1 404"), "{text}");
}

#[tokio::test]
async fn bad_query_and_path_parameters_get_the_json_error_naming_them() {
    let app = spawn_app("").await;
    let body = app.submit_ok("mailer", "send_email", json!({})).await;
    let id = body["id"].as_str().unwrap();
    let cases = [
        (&app.agent, format!("/v1/requests/{id}?wait=abc"), "wait"),
        (&app.agent, format!("/v1/requests/{id}?wait=-1"), "wait"),
        (&app.agent, format!("/v1/requests/{id}?wait=NaN"), "wait"),
        (
            &app.owner,
            "/v1/requests?status=bogus".to_string(),
            "status",
        ),
        (
            &app.owner,
            "/v1/requests?status=pending&status=approved".to_string(),
            "status",
        ),
        (&app.owner, "/v1/audit?since=yesterday".to_string(), "since"),
        (&app.owner, "/v1/requests/%FF".to_string(), "UTF-8"),
    ];
    for (client, path, needle) in cases {
        let res = client.get(&path).await.unwrap();
        assert_eq!(
            res.status,
            StatusCode::BAD_REQUEST,
            "{path}: {:?}",
            res.body
        );
        assert_eq!(res.error_code(), Some("invalid_request"), "{path}");
        assert!(
            res.error_message().contains(needle),
            "{path}: {}",
            res.error_message()
        );
    }
    // The hook route checks its wait too, but answers with a deny (a non-2xx answer
    // would let Claude Code run the tool).
    let hook = app
        .agent
        .post("/v1/hooks/claude-code?agent=mailer&wait=soon", &json!({}))
        .await
        .unwrap();
    assert_eq!(hook.status, StatusCode::OK);
    assert_eq!(hook.body["decision"], "block", "{:?}", hook.body);
    assert!(
        hook.body["reason"].as_str().unwrap().contains("wait"),
        "{:?}",
        hook.body
    );
    // A huge wait is capped at max_wait, neither refused nor a panic.
    app.decide(id, "approve", None).await;
    let huge = app.get(id, 1e300).await;
    assert_eq!(huge.status, StatusCode::OK, "{:?}", huge.body);
    assert_eq!(huge.body["status"], "approved");
}

/// How many requests and audit rows the owner API shows.
async fn stored(app: &crate::helpers::TestApp) -> (usize, Vec<serde_json::Value>) {
    let requests = app.owner.get("/v1/requests").await.unwrap();
    let audit = app.owner.get("/v1/audit").await.unwrap();
    (
        requests.body["requests"].as_array().unwrap().len(),
        audit.body["audit"].as_array().unwrap().clone(),
    )
}

#[tokio::test]
async fn a_refused_submission_stores_no_request_and_no_audit_row_for_one() {
    let app = spawn_app("").await;
    app.submit_ok("mailer", "query_org_data", json!({})).await;
    let secure_wrong = app.agent.clone().with_token(Some("guess".into()));
    let cases: Vec<(
        &str,
        &gatebot::client::Client,
        serde_json::Value,
        StatusCode,
    )> = vec![
        (
            "missing field",
            &app.agent,
            json!({"agent": "mailer", "args": {}}),
            StatusCode::BAD_REQUEST,
        ),
        (
            "unknown agent",
            &app.agent,
            json!({"agent": "ghost", "tool": "t", "args": {}}),
            StatusCode::FORBIDDEN,
        ),
        (
            "bad token",
            &secure_wrong,
            json!({"agent": "secure", "tool": "send_email", "args": {}}),
            StatusCode::UNAUTHORIZED,
        ),
        (
            "confidence out of range",
            &app.agent,
            json!({"agent": "mailer", "tool": "t", "args": {}, "confidence": 2.0}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            "bad ttl",
            &app.agent,
            json!({"agent": "mailer", "tool": "t", "args": {}, "ttl": "soon"}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            "empty tool",
            &app.agent,
            json!({"agent": "mailer", "tool": "", "args": {}}),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
    ];
    for (name, client, body, status) in cases {
        let (requests, audit) = stored(&app).await;
        let res = client.post("/v1/requests", &body).await.unwrap();
        assert_eq!(res.status, status, "{name}: {:?}", res.body);
        let (requests_after, audit_after) = stored(&app).await;
        assert_eq!(requests_after, requests, "{name}: a request was stored");
        let new_rows = &audit_after[audit.len()..];
        // Only a refused token leaves a row, about the attempt: no request exists.
        let expected: &[&str] = if name == "bad token" {
            &["unauthorised_attempt"]
        } else {
            &[]
        };
        let events: Vec<&str> = new_rows
            .iter()
            .map(|r| r["event"].as_str().unwrap())
            .collect();
        assert_eq!(events, expected, "{name}: {new_rows:?}");
        assert!(
            new_rows.iter().all(|r| r["approval_id"].is_null()),
            "{name}: {new_rows:?}"
        );
    }
}

/// Who decided comes from the caller's credentials; a body cannot claim it.
#[tokio::test]
async fn a_decision_naming_its_own_actor_is_refused() {
    let app = spawn_app("").await;
    let (id, _) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {}}))
        .await;
    let res = app
        .owner
        .post(
            &format!("/v1/requests/{id}/decision"),
            &json!({"decision": "approve", "actor": "mallory"}),
        )
        .await
        .unwrap();
    assert_eq!(res.status, StatusCode::BAD_REQUEST, "{:?}", res.body);
    assert!(
        res.error_message().contains("peer credentials"),
        "{}",
        res.error_message()
    );
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
}

#[tokio::test]
async fn the_loser_of_two_concurrent_decisions_is_told_who_won() {
    let app = spawn_app("").await;
    let body = app.submit_ok("mailer", "send_email", json!({})).await;
    let id = body["id"].as_str().unwrap().to_string();
    let decide = |actor: &'static str, verb: &'static str| {
        let owner = app.owner.clone();
        let id = id.clone();
        tokio::spawn(async move {
            owner
                .with_header(gatebot::peer::SUDO_USER_HEADER, actor)
                .post(
                    &format!("/v1/requests/{id}/decision"),
                    &json!({"decision": verb}),
                )
                .await
                .unwrap()
        })
    };
    let (a, b) = (decide("alice", "approve"), decide("bob", "approve"));
    let (a, b) = (a.await.unwrap(), b.await.unwrap());
    let (winner, loser) = match (a.status, b.status) {
        (StatusCode::OK, StatusCode::CONFLICT) => (a, b),
        (StatusCode::CONFLICT, StatusCode::OK) => (b, a),
        other => panic!("expected one winner: {other:?}"),
    };
    let who = winner.body["decided_by"].as_str().unwrap();
    assert_eq!(loser.error_code(), Some("already_decided"));
    assert!(
        loser
            .error_message()
            .contains(&format!("already approved by {who} on the command line")),
        "{}",
        loser.error_message()
    );
    assert_eq!(loser.body["request"]["decided_by"], who);
}

#[tokio::test]
async fn the_audit_trail_records_allowlist_results_and_reloads() {
    let app = spawn_app("").await;
    // approve-always makes a grant, in the request's own trail.
    let first = app
        .submit_ok("mailer", "send_email", json!({"to": "a@example.com"}))
        .await;
    let id = first["id"].as_str().unwrap();
    let res = app.decide(id, "approve-always", None).await;
    assert_eq!(res.status, StatusCode::OK, "{:?}", res.body);
    assert_eq!(
        app.audit_events(id).await,
        ["submitted", "evaluated", "decided", "grant_added"]
    );
    // Results: executing then succeeded on one request, failed on another.
    let report = |id: String, body: serde_json::Value| {
        let agent = app.agent.clone();
        async move {
            let r = agent
                .post(&format!("/v1/requests/{id}/result"), &body)
                .await
                .unwrap();
            assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
        }
    };
    report(id.to_string(), json!({"executing": true})).await;
    report(id.to_string(), json!({"ok": true, "detail": "sent"})).await;
    assert_eq!(
        app.audit_events(id).await,
        [
            "submitted",
            "evaluated",
            "decided",
            "grant_added",
            "executing",
            "succeeded"
        ]
    );
    let other = app.submit_ok("mailer", "query_org_data", json!({})).await;
    let other = other["id"].as_str().unwrap().to_string();
    report(other.clone(), json!({"ok": false, "detail": "timeout"})).await;
    assert_eq!(
        app.audit_events(&other).await,
        ["submitted", "evaluated", "failed"]
    );
    // A reload (what SIGHUP does) is recorded too.
    let before = app.owner.get("/v1/audit").await.unwrap().body["audit"]
        .as_array()
        .unwrap()
        .len();
    let config = gatebot::config::Config::load(&app.config_path).unwrap();
    app.engine.reload(config).await.unwrap();
    let audit = app.owner.get("/v1/audit").await.unwrap();
    let rows = audit.body["audit"].as_array().unwrap();
    assert_eq!(rows.len(), before + 1);
    let reloaded = rows.last().unwrap();
    assert_eq!(reloaded["event"], "config_reloaded");
    assert_eq!(reloaded["channel"], "system");
    assert!(reloaded["approval_id"].is_null());
}

#[tokio::test]
async fn without_a_ttl_or_default_ttl_a_request_expires_in_24h() {
    let dir = tempfile::tempdir().unwrap();
    let app =
        crate::helpers::spawn_app_with_config(dir, "[agents.mailer]\ntier = \"supervised\"\n")
            .await;
    let body = app.submit_ok("mailer", "send_email", json!({})).await;
    assert_eq!(body["status"], "pending");
    let at = |field: &str| {
        humantime::parse_rfc3339(body[field].as_str().unwrap())
            .unwrap_or_else(|e| panic!("{field}: {e}"))
    };
    let ttl = at("expires_at").duration_since(at("created_at")).unwrap();
    assert_eq!(ttl, std::time::Duration::from_secs(24 * 3600), "{body}");
}

#[tokio::test]
async fn pending_lists_every_kind_for_owners_only_and_a_decision_says_what_it_did() {
    let app = spawn_app("").await;
    let (id, short) = app
        .submit_pending(
            json!({"agent": "mailer", "tool": "send_email", "args": {"to": "a@example.com"}}),
        )
        .await;
    // Owners: one page of requests, each kind's keys, and the lines `gatebot pending` prints.
    let res = app.owner.get("/v1/pending?limit=1").await.unwrap();
    assert_eq!(res.status, 200, "{:?}", res.body);
    assert_eq!(res.body["requests"][0]["id"], id.as_str());
    assert_eq!(res.body["next"], id.as_str(), "a full page has a next");
    assert_eq!(res.body["check_ins"], json!([]));
    assert_eq!(res.body["proposals"], json!([]));
    let said: Vec<&str> = res.body["said"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    assert!(
        said.iter()
            .any(|l| l.starts_with(&format!("{short}  mailer"))),
        "{said:?}"
    );
    assert_eq!(
        said.last(),
        Some(&format!("… more pending: gatebot pending --after {id}").as_str())
    );
    // The page after it: nothing, and the kinds that list only on the first page are absent.
    let res = app
        .owner
        .get(&format!("/v1/pending?after={id}"))
        .await
        .unwrap();
    assert_eq!(res.body["requests"], json!([]));
    assert!(res.body.get("check_ins").is_none(), "{:?}", res.body);
    assert_eq!(res.body["said"], json!(["Nothing is waiting for you."]));
    let bad = app.owner.get("/v1/pending?limit=0").await.unwrap();
    assert_eq!(bad.status, 400, "{:?}", bad.body);
    // Agents: no such route; nothing of the owners' list reaches them.
    let res = app.agent.get("/v1/pending").await.unwrap();
    assert_eq!(res.status, 404, "{:?}", res.body);
    assert!(!format!("{:?}", res.body).contains(&id));
    // A decision's answer is the request's view and the line the CLI prints.
    let res = app
        .owner
        .post(
            &format!("/v1/requests/{short}/decision"),
            &json!({"decision": "deny", "reason": "not now"}),
        )
        .await
        .unwrap();
    assert_eq!(res.status, 200, "{:?}", res.body);
    assert_eq!(res.body["status"], "rejected");
    assert_eq!(
        res.body["said"],
        json!([format!("denied {short} (send_email from mailer)")])
    );
}
