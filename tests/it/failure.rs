//! Failure: kill -9 in the middle of a burst from concurrent agents, then restart.

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use gatebot::api::client::Client;
use serde_json::{json, Value};
use tokio::process::{Child, Command};

use crate::helpers::BASE_CONFIG;

const BIN: &str = env!("CARGO_BIN_EXE_gatebot");
const TOTAL: usize = 1000;
const AGENTS: usize = 16;

async fn start(dir: &std::path::Path) -> Child {
    let child = Command::new(BIN)
        .args(["run", "--config"])
        .arg(dir.join("bot.toml"))
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    for _ in 0..400 {
        if Client::new(dir.join("gatebot-control.sock"))
            .get("/v1/health")
            .await
            .is_ok()
        {
            return child;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the daemon did not start");
}

fn body(i: usize) -> Value {
    // Half run at once, half wait for a human; every one has its own idempotency key.
    let tool = if i % 2 == 0 {
        "query_org_data"
    } else {
        "send_email"
    };
    json!({"agent": "mailer", "tool": tool, "args": {"n": i}, "idempotency_key": format!("burst-{i}")})
}

#[tokio::test]
async fn kill_9_mid_burst_loses_no_acknowledged_request_and_duplicates_none() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bot.toml"), BASE_CONFIG).unwrap();
    let mut daemon = start(dir.path()).await;
    let sock = dir.path().join("gatebot.sock");

    let acked: Arc<tokio::sync::Mutex<HashMap<usize, Value>>> = Default::default();
    let sent = Arc::new(AtomicUsize::new(0));
    let mut agents = Vec::new();
    for a in 0..AGENTS {
        let (acked, sent, client) = (acked.clone(), sent.clone(), Client::new(&sock));
        agents.push(tokio::spawn(async move {
            for i in (a..TOTAL).step_by(AGENTS) {
                sent.fetch_add(1, Ordering::SeqCst);
                match client.post("/v1/requests", &body(i)).await {
                    Ok(res) if res.status.is_success() => {
                        acked.lock().await.insert(i, res.body);
                    }
                    // The daemon died under us: stop this agent.
                    _ => return,
                }
            }
        }));
    }
    // Kill once a good part of the burst is in.
    while acked.lock().await.len() < TOTAL / 3 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    daemon.start_kill().unwrap();
    daemon.wait().await.unwrap();
    for a in agents {
        a.await.unwrap();
    }
    let acked = acked.lock().await.clone();
    assert!(
        acked.len() < TOTAL,
        "the kill came too late to test anything"
    );

    // Restart on the same files (a stale socket is left behind by the kill).
    let _daemon = start(dir.path()).await;
    let owner = Client::new(dir.path().join("gatebot-control.sock"));
    for (i, before) in &acked {
        let now = owner
            .get(&format!("/v1/requests/{}", before["id"].as_str().unwrap()))
            .await
            .unwrap();
        assert!(now.status.is_success(), "acknowledged request {i} is lost");
        assert_eq!(now.body["status"], before["status"], "request {i}");
        assert_eq!(
            now.body["expires_at"], before["expires_at"],
            "deadline of {i}"
        );
    }
    // The agents retry everything that was not acknowledged, with the same keys.
    let agent = Client::new(&sock);
    for i in 0..TOTAL {
        if !acked.contains_key(&i) {
            let res = agent.post("/v1/requests", &body(i)).await.unwrap();
            assert!(res.status.is_success(), "{:?}", res.body);
        } else {
            // A retry of an acknowledged one returns the same request.
            let res = agent.post("/v1/requests", &body(i)).await.unwrap();
            assert_eq!(res.body["id"], acked[&i]["id"]);
        }
    }
    // Exactly one request per key: none lost, none twice.
    let db = rusqlite::Connection::open(dir.path().join("gatebot.db")).unwrap();
    db.busy_timeout(Duration::from_secs(5)).unwrap();
    let (rows, keys): (i64, i64) = db
        .query_row(
            "SELECT COUNT(*), COUNT(DISTINCT idempotency_key) FROM approvals",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((rows, keys), (TOTAL as i64, TOTAL as i64));
    let check = owner.get("/v1/audit/verify").await.unwrap();
    assert!(
        check.body["problems"].as_array().unwrap().is_empty(),
        "{:?}",
        check.body
    );
}
