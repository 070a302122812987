//! Several gatebot nodes on one PostgreSQL database (docs/scale-out.md): the row is the
//! truth whichever node wrote it, and a poll waiting on one node is answered when an
//! owner decides on another (the commit's notification, or the trail read every two
//! seconds). Skipped, with one line, without PostgreSQL.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::helpers::spawn_app;
use crate::pg_cluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poll_on_one_node_is_answered_when_an_owner_decides_on_another() {
    let Some(db) = pg_cluster::database() else {
        return;
    };
    let store = format!("[store]\nurl = \"{}\"\n", db.url());
    let a = spawn_app(&store).await;
    let b = spawn_app(&store).await;
    let body = json!({"agent": "mailer", "tool": "send_email", "args": {"to": "ann"}});
    let (id, _) = a.submit_pending(body.clone()).await;
    // The other node reads the same row, and the same idempotency key there gets it.
    let seen = b.get(&id, 0.0).await;
    assert_eq!(seen.body["status"], "pending", "{:?}", seen.body);
    // The agent waits on A (up to 30 s); the owner decides on B meanwhile. The poll must
    // be answered by the decision, not by its own time limit (which reads the row too):
    // far sooner than 30 s (at most the trail's re-read, 2 s, without the notification).
    let started = Instant::now();
    let (answer, ()) = tokio::join!(a.get(&id, 30.0), async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        b.decide_ok(&id, "approve", Some("fine")).await;
    });
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the poll ran to its limit"
    );
    assert_eq!(answer.body["status"], "approved", "{:?}", answer.body);
    assert_eq!(answer.body["decided_by"], "alice", "{:?}", answer.body);
    // A decision on A now reaches a poll on B too.
    let (other, _) = b
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"to": "bo"}}))
        .await;
    let started = Instant::now();
    let (answer, ()) = tokio::join!(b.get(&other, 30.0), async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        a.decide_ok(&other, "deny", Some("no")).await;
    });
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the poll ran to its limit"
    );
    assert_eq!(answer.body["status"], "rejected", "{:?}", answer.body);
    // One trail for both nodes, and it verifies.
    let check = a.owner.get("/v1/audit/verify").await.unwrap();
    assert_eq!(check.body["problems"], json!([]), "{:?}", check.body);
    assert_eq!(
        check.body["head"],
        b.owner.get("/v1/audit/head").await.unwrap().body
    );
}
