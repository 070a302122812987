//! Quotas (issue 18, item 6): per-agent token buckets for requests, runs, events, task
//! calls and bytes, answered `429 rate_limited` with `Retry-After` and the limit named;
//! and the room kept back for owners (`store.reserve`), so their decisions and expiries
//! commit after agents have filled their share of the database.

use hyper::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{log_text, spawn_app, TestApp};
use crate::inbox::with_inbox;

/// A raw POST on the agents' socket: the status line and headers, and the body.
async fn raw_post(app: &TestApp, path: &str, body: &Value) -> (String, Value) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::UnixStream::connect(app.path().join("gatebot.sock"))
        .await
        .unwrap();
    let body = body.to_string();
    s.write_all(
        format!(
            "POST {path} HTTP/1.1\r\nHost: gatebot\r\nConnection: close\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    (
        head.to_ascii_lowercase(),
        serde_json::from_str(body).unwrap(),
    )
}

fn read(agent: &str, n: usize) -> Value {
    json!({"agent": agent, "tool": "query_org_data", "args": {"q": format!("contacts {n}")}})
}

/// The value of a Prometheus series in `metrics`.
fn series(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in the metrics"))
}

#[tokio::test]
async fn an_agent_over_its_limit_gets_429_with_retry_after_naming_the_limit() {
    let app = spawn_app(
        "[limits]\nrequests = \"5/min\"\n\n\
         [agents.boss.limits]\nrequests = \"100/min\"\n",
    )
    .await;
    for n in 0..5 {
        app.submit_ok("mailer", "query_org_data", json!({"q": n}))
            .await;
    }
    let (head, body) = raw_post(&app, "/v1/requests", &read("mailer", 5)).await;
    assert!(head.starts_with("http/1.1 429"), "{head}");
    let retry: u64 = head
        .lines()
        .find_map(|l| l.strip_prefix("retry-after: "))
        .expect("a Retry-After header")
        .trim()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    let e = &body["error"];
    assert_eq!(e["code"], "rate_limited");
    assert_eq!(e["limit"], "limits.requests");
    assert_eq!(e["retry_after"], retry);
    let message = e["message"].as_str().unwrap();
    for says in [
        "agent `mailer` is over its limit of 5 requests a minute",
        "try again in",
        "limits.requests for every agent, agents.mailer.limits.requests for this one",
    ] {
        assert!(message.contains(says), "{message}");
    }
    // Nothing was stored for the refused call.
    let mine = app.owner.get("/v1/requests?agent=mailer").await.unwrap();
    assert_eq!(mine.body["requests"].as_array().unwrap().len(), 5);
    // The hook route (always 200) denies, saying why.
    let hook = json!({"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Read",
                      "tool_input": {"file_path": "/tmp/x"}, "tool_use_id": "t-1", "cwd": "/tmp"});
    let res = app
        .agent
        .post("/v1/hooks/claude-code?agent=mailer&wait=1", &hook)
        .await
        .unwrap();
    assert_eq!(res.status, StatusCode::OK);
    let o = &res.body["hookSpecificOutput"];
    assert_eq!(o["permissionDecision"], "deny", "{:?}", res.body);
    assert!(o["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .contains("limits.requests"));
    // Each agent has its own buckets; an agent's own table raises its limit.
    app.submit_ok("intern", "query_org_data", json!({})).await;
    for n in 0..20 {
        app.submit_ok("boss", "query_org_data", json!({"q": n}))
            .await;
    }
    // Counted, and logged (once a minute per agent).
    assert!(
        series(
            &app.metrics().await,
            "gatebot_rate_limited_total{limit=\"requests\"}"
        ) >= 2
    );
    assert_eq!(
        series(
            &app.metrics().await,
            "gatebot_rate_limited_total{limit=\"events\"}"
        ),
        0
    );
    assert!(log_text()
        .lines()
        .any(|l| l.contains("WARN") && l.contains("over its limit of 5 requests")));
}

#[tokio::test]
async fn runs_events_task_calls_and_bytes_have_limits_of_their_own() {
    let app = spawn_app(&with_inbox(
        "",
        "[limits]\nruns = \"2/min\"\nevents = \"3/min\"\ntasks = \"2/min\"\n\n\
         [agents.boss.limits]\nbytes = \"100KiB/h\"\n",
    ))
    .await;
    let limited = |res: &gatebot::client::Response, key: &str| {
        assert_eq!(res.status, StatusCode::TOO_MANY_REQUESTS, "{:?}", res.body);
        assert_eq!(res.body["error"]["limit"], key, "{:?}", res.body);
        assert!(res.retry_after().is_some());
    };
    let start = |title: &str| {
        let client = app.agent.clone();
        let body = json!({"agent": "mailer", "title": title});
        async move { client.post("/v1/runs", &body).await.unwrap() }
    };
    let run = start("one").await.body["id"].as_str().unwrap().to_string();
    assert_eq!(start("two").await.status, StatusCode::CREATED);
    limited(&start("three").await, "limits.runs");

    let event = |n: usize| {
        let client = app.agent.clone();
        let path = format!("/v1/runs/{run}/events");
        async move {
            let body = json!({"type": "step_complete", "phase": "build", "step": format!("s{n}")});
            client.post(&path, &body).await.unwrap()
        }
    };
    for n in 0..3 {
        assert_eq!(event(n).await.status, StatusCode::OK);
    }
    limited(&event(3).await, "limits.events");
    let totals = app.owner.get(&format!("/v1/runs/{run}")).await.unwrap();
    assert_eq!(
        totals.body["events"], 3,
        "the refused event was not recorded"
    );

    let claim = || {
        let client = app.agent.clone();
        async move {
            client
                .post(
                    "/v1/tasks/claim",
                    &json!({"agent": "claude-code", "wait": 0}),
                )
                .await
                .unwrap()
        }
    };
    assert!(claim().await.status.is_success());
    assert!(claim().await.status.is_success());
    limited(&claim().await, "limits.tasks");

    // Bytes count over everything an agent sends: 60 KB, then 50 KB more is over 100 KiB.
    let big = |n: usize, size: usize| json!({"agent": "boss", "tool": "create_contact", "args": {"n": n, "note": "x".repeat(size)}});
    assert!(app.submit(big(0, 60_000)).await.status.is_success());
    let res = app.submit(big(1, 50_000)).await;
    limited(&res, "limits.bytes");
    assert!(res
        .error_message()
        .contains("100 KiB of request, run, event and task bodies an hour"));
    // The same agent's small calls still fit.
    assert!(app.submit(big(2, 10)).await.status.is_success());
}

#[tokio::test]
async fn owners_decide_and_requests_expire_after_agents_have_filled_their_share() {
    if !crate::helpers::sqlite_only(
        "owners_decide_and_requests_expire_after_agents_have_filled_their_share",
    ) {
        return;
    }
    let app = spawn_app(
        "[store]\nmax_size = \"2MiB\"\nreserve = \"512KiB\"\n\n\
         [limits]\nrequests = \"100000/min\"\nbytes = \"1GiB/h\"\n",
    )
    .await;
    let send = |n: usize, size: usize, ttl: &str| {
        json!({"agent": "mailer", "tool": "send_email", "ttl": ttl,
               "args": {"n": n, "body": "x".repeat(size)}})
    };
    // Some requests that will expire while agents are held back.
    let mut expiring = Vec::new();
    for n in 0..3 {
        expiring.push(app.submit_pending(send(n, 10, "4s")).await.0);
    }
    // Large requests, then smaller ones into what room is left: with no room kept
    // back, this leaves no page free for the owners.
    let mut pending = Vec::new();
    let mut refused = None;
    for size in [50_000, 2_000, 100] {
        refused = Some(loop {
            assert!(pending.len() < 2_000, "the agents' share was never filled");
            let res = app.submit(send(pending.len() + 10, size, "1h")).await;
            if !res.status.is_success() {
                break res;
            }
            pending.push(res.body["id"].as_str().unwrap().to_string());
        });
    }
    let refused = refused.unwrap();
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.error_code(), Some("storage_full"));
    let message = refused.error_message();
    assert!(
        message.contains("store.reserve (512 KiB)") && message.contains("kept for owners"),
        "{message}"
    );
    assert_eq!(
        app.get(&expiring[0], 0.0).await.body["status"],
        "pending",
        "filled before the expiry"
    );
    // Runs are agents' writes too.
    let run = app
        .agent
        .post("/v1/runs", &json!({"agent": "mailer", "title": "Release"}))
        .await
        .unwrap();
    assert_eq!(run.error_code(), Some("storage_full"), "{:?}", run.body);
    // Not a fault of the storage: health stays green, and says what is held back.
    let health = app.owner.get("/v1/health").await.unwrap();
    assert_eq!(health.status, StatusCode::OK, "{:?}", health.body);
    assert_eq!(health.body["agents"]["code"], "storage_full");

    // Owners decide...
    for (i, id) in pending.iter().take(10).enumerate() {
        let verb = if i % 2 == 0 { "approve" } else { "deny" };
        app.decide_ok(id, verb, Some("checked")).await;
    }
    // ...and requests nobody answered expire.
    for id in &expiring {
        app.wait_for_status(id, "expired").await;
    }
    assert!(app
        .audit_events(&pending[0])
        .await
        .contains(&"decided".to_string()));
    let metrics = app.metrics().await;
    assert!(series(&metrics, "gatebot_storage_reserve_refusals_total") >= 4);
    assert!(log_text()
        .lines()
        .any(|l| l.contains("WARN") && l.contains("agents' writes are refused")));
    // Agents stay held back until there is room.
    let again = app.submit(send(9_999, 10, "1h")).await;
    assert_eq!(again.error_code(), Some("storage_full"));
}
