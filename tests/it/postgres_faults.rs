//! The store on PostgreSQL when the database goes away (issue 26's fault 5): every call
//! answers 503 `storage_unavailable` with what to check (never a wrong answer, never an
//! allow by default), `/v1/health` says why, nothing acknowledged is lost, and when the
//! database is back the node carries on without a restart. On a cluster of the test's own
//! (the shared one cannot be stopped); skipped, with one line, without PostgreSQL.

use std::time::Duration;

use hyper::StatusCode;
use serde_json::json;

use crate::helpers::{
    assert_health_unavailable, assert_unavailable, eventually_within, health, send_email, spawn_app,
};
use crate::pg_cluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_out_of_reach_answers_503_and_the_node_recovers_without_a_restart() {
    let Some(cluster) = pg_cluster::own_cluster() else {
        return;
    };
    let db = cluster.database();
    let app = spawn_app(&format!("[store]\nurl = \"{}\"\n", db.url())).await;
    let (kept, _) = app.submit_pending(send_email(0)).await;
    let allowed = app
        .submit_ok("boss", "query_org_data", json!({"q": "before"}))
        .await;
    assert_eq!(health(&app.agent).await.0, StatusCode::OK);

    cluster.halt();
    for body in [
        send_email(1),
        json!({"agent": "boss", "tool": "query_org_data", "args": {"q": "during"}}),
    ] {
        let res = app.submit(body).await;
        assert_unavailable(&res, "PostgreSQL database cannot be reached");
    }
    // Owners' calls too: a decision is refused, not taken for done.
    let decided = app.decide(&kept, "approve", None).await;
    assert_eq!(
        decided.status,
        StatusCode::SERVICE_UNAVAILABLE,
        "{:?}",
        decided.body
    );
    for client in [&app.agent, &app.owner] {
        assert_health_unavailable(client, "PostgreSQL").await;
    }

    cluster.resume();
    // The next calls make new connections: no restart.
    eventually_within(
        "a submit after the database is back",
        Duration::from_secs(30),
        async || {
            app.submit(json!({"agent": "boss", "tool": "query_org_data", "args": {"q": "after"}}))
                .await
                .status
                .is_success()
                .then_some(())
        },
    )
    .await;
    assert_eq!(health(&app.agent).await.0, StatusCode::OK);
    // What was acknowledged before is all there, once.
    let kept_now = app.get(&kept, 0.0).await;
    assert_eq!(kept_now.body["status"], "pending", "{:?}", kept_now.body);
    let again = app.get(allowed["id"].as_str().unwrap(), 0.0).await;
    assert_eq!(again.body["status"], "allowed", "{:?}", again.body);
    app.decide_ok(&kept, "approve", None).await;
    let check = app.owner.get("/v1/audit/verify").await.unwrap();
    assert_eq!(check.status, StatusCode::OK, "{:?}", check.body);
    assert_eq!(check.body["problems"], json!([]), "{:?}", check.body);
}
