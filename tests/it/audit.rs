//! The audit trail under attack: what `audit verify` must see (rows cut off the end
//! with the sequence lowered, hashes erased, an emptied table, dropped triggers), the
//! head an operator keeps elsewhere, and refused attempts that must not fill the disk.

use std::time::Duration;

use gatebot::client::Client;
use serde_json::{json, Value};

use crate::files::{run_daemon, stop};
use crate::helpers::{eventually, spawn_app, TestApp, BASE_CONFIG};

const BIN: &str = env!("CARGO_BIN_EXE_gatebot");

/// A daemon with a few requests (two audit rows each) and a decision.
async fn with_trail() -> TestApp {
    let app = spawn_app("").await;
    for n in 0..3 {
        app.submit_ok("mailer", "query_org_data", json!({"n": n}))
            .await;
    }
    let (id, _) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {}}))
        .await;
    app.decide_ok(&id, "approve", None).await;
    assert!(verify(&app).await["problems"]
        .as_array()
        .unwrap()
        .is_empty());
    app
}

async fn verify(app: &TestApp) -> Value {
    let res = app.owner.get("/v1/audit/verify").await.unwrap();
    assert!(res.status.is_success(), "{:?}", res.body);
    res.body
}

/// What `audit verify` finds, as one string.
async fn problems(app: &TestApp) -> String {
    verify(app).await["problems"].to_string()
}

/// Changes the database as someone with write access to the file would behind the
/// daemon's back: every trigger dropped first and, with `restore`, put back as it was,
/// so the triggers alone do not give the tampering away.
fn tamper(app: &TestApp, sql: &str, restore: bool) {
    let db = rusqlite::Connection::open(app.path().join("gatebot.db")).unwrap();
    db.busy_timeout(Duration::from_secs(10)).unwrap();
    let triggers: Vec<(String, String)> = db
        .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(triggers.len() >= 2);
    for (name, _) in &triggers {
        db.execute_batch(&format!("DROP TRIGGER {name}")).unwrap();
    }
    db.execute_batch(sql).unwrap();
    if restore {
        for (_, sql) in &triggers {
            db.execute_batch(sql).unwrap();
        }
    }
}

#[tokio::test]
async fn verify_sees_rows_cut_off_the_end_with_the_sequence_lowered() {
    let app = with_trail().await;
    tamper(
        &app,
        "DELETE FROM audit WHERE seq > (SELECT MAX(seq) - 3 FROM audit);
         UPDATE sqlite_sequence SET seq = (SELECT MAX(seq) FROM audit) WHERE name = 'audit';",
        true,
    );
    let p = problems(&app).await;
    assert!(p.contains("were removed from the end"), "{p}");
    // The daemon keeps working, and the next rows keep the cut visible.
    app.submit_ok("mailer", "query_org_data", json!({"after": true}))
        .await;
    let p = problems(&app).await;
    assert!(p.contains("does not follow"), "{p}");
}

#[tokio::test]
async fn verify_sees_hashes_erased_to_pass_as_rows_from_before_the_chain() {
    let app = with_trail().await;
    tamper(
        &app,
        "UPDATE audit SET hash = NULL, prev_hash = NULL WHERE seq <= 3;",
        true,
    );
    let p = problems(&app).await;
    assert!(p.contains("row 1 has no hash"), "{p}");
    assert!(p.contains("row 3 has no hash"), "{p}");
}

#[tokio::test]
async fn verify_sees_an_emptied_trail() {
    let app = with_trail().await;
    tamper(
        &app,
        "DELETE FROM audit; DELETE FROM sqlite_sequence WHERE name = 'audit';",
        true,
    );
    let v = verify(&app).await;
    assert_eq!(v["rows"], 0);
    let p = v["problems"].to_string();
    assert!(p.contains("were removed from the end"), "{p}");
}

#[tokio::test]
async fn verify_sees_dropped_triggers() {
    let app = with_trail().await;
    tamper(&app, "SELECT 1;", false);
    let p = problems(&app).await;
    for name in ["audit_is_append_only_update", "audit_is_append_only_delete"] {
        assert!(p.contains(&format!("{name} is missing")), "{p}");
    }
}

#[tokio::test]
async fn the_head_printed_today_anchors_the_chain_tomorrow() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bot.toml"), BASE_CONFIG).unwrap();
    let daemon = run_daemon(dir.path(), 0o022);
    let agent = Client::new(dir.path().join("gatebot.sock"));
    eventually("the daemon serves", async || {
        agent.get("/v1/health").await.ok()
    })
    .await;
    let cli = async |args: &[&str]| {
        let out = tokio::process::Command::new(BIN)
            .arg("--config")
            .arg(dir.path().join("bot.toml"))
            .args(args)
            .env_remove("GATEBOT_SOCKET")
            .output()
            .await
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = cli(&["audit", "head"]).await;
    assert_eq!(code, Some(0), "{err}");
    let anchor = out.trim().to_string();
    assert!(
        anchor.len() == 64 && anchor.bytes().all(|b| b.is_ascii_hexdigit()),
        "{out}"
    );
    let (_, json_head, _) = cli(&["audit", "head", "--json"]).await;
    let head: Value = serde_json::from_str(&json_head).unwrap();
    assert_eq!(head["hash"], anchor.as_str());

    // Later rows do not disturb the anchor.
    let res = agent
        .post(
            "/v1/requests",
            &json!({"agent": "mailer", "tool": "query_org_data", "args": {}}),
        )
        .await
        .unwrap();
    assert_eq!(res.body["status"], "allowed");
    let (code, out, err) = cli(&["audit", "verify", "--head", &anchor]).await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains(&format!("the anchored head is row {}", head["seq"])),
        "{out}"
    );
    // A head this chain never had (a rewritten trail would lose the real one).
    let (code, out, _) = cli(&["audit", "verify", "--head", &"0".repeat(64)]).await;
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("is not in the chain"), "{out}");
    let (code, _, err) = cli(&["audit", "verify", "--head", "not-a-hash"]).await;
    assert_eq!(code, Some(2));
    assert!(err.contains("64 hex digits"), "{err}");
    stop(daemon).await;
}
