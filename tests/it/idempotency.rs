//! An idempotency key stands for the whole content it was first sent with (issue 18,
//! item 7): the same content again gets the first answer; anything else under the key
//! is `409 idempotency_conflict`, and nothing of it is kept or dropped in silence.

use hyper::StatusCode;
use serde_json::{json, Value};

use crate::helpers::spawn_app;

#[tokio::test]
async fn an_event_key_resent_with_a_new_error_is_a_conflict_not_a_repeat() {
    let app = spawn_app("").await;
    let run = app
        .agent
        .post("/v1/runs", &json!({"agent": "mailer", "title": "Release"}))
        .await
        .unwrap();
    let run = run.body["id"].as_str().unwrap().to_string();
    let post = |body: Value| {
        let client = app.agent.clone();
        let path = format!("/v1/runs/{run}/events");
        async move { client.post(&path, &body).await.unwrap() }
    };
    let first = json!({"type": "step_complete", "phase": "build", "step": "migrate", "idempotency_key": "k1"});
    let a = post(first.clone()).await;
    assert_eq!(a.status, StatusCode::OK, "{:?}", a.body);
    assert_eq!(a.body["action"], "continue");

    // Same type, phase and step, plus a high "data loss" error: not the same event.
    let mut worse = first.clone();
    worse["errors"] = json!([{"text": "data loss", "severity": "high"}]);
    let b = post(worse.clone()).await;
    assert_eq!(b.status, StatusCode::CONFLICT, "{:?}", b.body);
    assert_eq!(b.error_code(), Some("idempotency_conflict"));
    assert!(
        b.error_message()
            .contains("an event with other content (event 1)"),
        "{}",
        b.error_message()
    );
    for change in [
        json!({"step": "other"}),
        json!({"warnings": [{"text": "slow"}]}),
        json!({"artifacts": [{"name": "log"}]}),
        json!({"result_handling": {"on_failure": "continue"}}),
    ] {
        let mut other = first.clone();
        for (k, v) in change.as_object().unwrap() {
            other[k] = v.clone();
        }
        let res = post(other).await;
        assert_eq!(res.error_code(), Some("idempotency_conflict"), "{change}");
    }
    let now = app
        .owner
        .get(&format!("/v1/runs/{run}"))
        .await
        .unwrap()
        .body;
    assert_eq!(
        now["events"], 1,
        "nothing of the conflicting events was recorded"
    );
    assert_eq!(now["totals"]["errors"], 0);

    // The same event again is a repeat, with the first answer.
    let again = post(first).await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(
        (again.body["seq"].clone(), again.body["repeated"].clone()),
        (json!(1), json!(true))
    );
    // Under a key of its own, the error is evaluated (and stops the run).
    worse["idempotency_key"] = "k2".into();
    let stopped = post(worse).await;
    assert_eq!(stopped.body["action"], "stop", "{:?}", stopped.body);
}

#[tokio::test]
async fn a_request_key_resent_with_other_content_is_a_conflict() {
    let app = spawn_app("").await;
    let first = json!({"agent": "mailer", "tool": "send_email", "args": {"to": "ann@example.com"},
                       "summary": "Reply to Ann", "idempotency_key": "m-1"});
    let (id, short) = app.submit_pending(first.clone()).await;
    let again = app.submit(first.clone()).await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(again.body["id"], id.as_str());
    for change in [
        json!({"summary": "Reply to Bob"}),
        json!({"confidence": 0.2}),
        json!({"environment": "production"}),
        json!({"ttl": "5m"}),
        json!({"args": {"to": "bob@example.com"}}),
    ] {
        let mut other = first.clone();
        for (k, v) in change.as_object().unwrap() {
            other[k] = v.clone();
        }
        let res = app.submit(other).await;
        assert_eq!(res.status, StatusCode::CONFLICT, "{change}: {:?}", res.body);
        assert_eq!(res.error_code(), Some("idempotency_conflict"));
        let message = res.error_message();
        assert!(
            message.contains(&format!("a request with other content (request {short})")),
            "{message}"
        );
    }
    let pending = app.owner.get("/v1/requests?status=pending").await.unwrap();
    assert_eq!(pending.body["requests"].as_array().unwrap().len(), 1);
    assert_eq!(pending.body["requests"][0]["summary"], "Reply to Ann");
}
