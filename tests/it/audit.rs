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
    if !crate::helpers::sqlite_only("verify_sees_rows_cut_off_the_end_with_the_sequence_lowered") {
        return;
    }
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
    if !crate::helpers::sqlite_only(
        "verify_sees_hashes_erased_to_pass_as_rows_from_before_the_chain",
    ) {
        return;
    }
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
    if !crate::helpers::sqlite_only("verify_sees_an_emptied_trail") {
        return;
    }
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
    if !crate::helpers::sqlite_only("verify_sees_dropped_triggers") {
        return;
    }
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

/// A POST over TCP, as an agent on another machine would send it: the raw response.
async fn tcp_post(addr: std::net::SocketAddr, path: &str, body: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}

/// The `unauthorised_attempt` rows of the whole trail.
async fn refusals(app: &TestApp) -> Vec<Value> {
    let res = app.owner.get("/v1/audit").await.unwrap();
    res.body["audit"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["event"] == "unauthorised_attempt")
        .cloned()
        .collect()
}

/// How many attempts the rows stand for.
fn attempts(rows: &[Value]) -> i64 {
    rows.iter()
        .map(|r| r["detail"]["count"].as_i64().unwrap())
        .sum()
}

#[tokio::test]
async fn a_flood_of_refused_attempts_is_counted_not_stored_or_logged_each_time() {
    let app = spawn_app("[queue]\nlisten = \"127.0.0.1:0\"\n").await;
    let addr = app.tcp.unwrap();
    // A tool name as long as the body limit allows, with no token, on the TCP listener.
    let marker = "floodtool7f3a";
    let tool = format!("{marker}{}", "x".repeat(60_000));
    let body = json!({"agent": "secure", "tool": tool, "args": {}}).to_string();
    const FLOOD: i64 = 300;
    let started = std::time::Instant::now();
    for _ in 0..FLOOD {
        let res = tcp_post(addr, "/v1/requests", &body).await;
        assert!(res.starts_with("HTTP/1.1 401"), "{}", &res[..200]);
    }
    let minutes = started.elapsed().as_secs() as usize / 60 + 1;

    // At most a row when a minute's window opens and one when it closes (with the count).
    let rows = refusals(&app).await;
    assert!(
        !rows.is_empty() && rows.len() <= 2 * minutes,
        "{} rows",
        rows.len()
    );
    let first = &rows[0];
    assert_eq!(first["actor"], "secure");
    assert_eq!(first["detail"]["transport"], "tcp");
    assert_eq!(first["detail"]["count"], 1);
    let attempted = first["detail"]["attempted"].as_str().unwrap();
    assert!(
        attempted.starts_with(&format!("submit a {marker}"))
            && attempted.ends_with(&format!(
                "({} characters)",
                "submit a  request".len() + tool.len()
            )),
        "{attempted}"
    );
    let stored: usize = rows.iter().map(|r| r.to_string().len()).sum();
    assert!(stored < 1_000 * rows.len(), "{stored} bytes in the audit");

    // The log: a WARN line for a window, never the whole echo.
    let log = crate::helpers::log_text();
    let lines: Vec<&str> = log.lines().filter(|l| l.contains(marker)).collect();
    let warned = lines
        .iter()
        .filter(|l| l.contains("WARN") && l.contains("unauthorised attempt refused"))
        .count();
    assert!(warned >= 1 && warned <= minutes, "{warned} WARN lines");
    assert!(
        lines.iter().all(|l| l.len() < 2_000),
        "a log line carries the whole echo"
    );

    // The counts reach the trail when the window ends (here: made to end now).
    app.engine.flush_refusals(true).await.unwrap();
    let rows = refusals(&app).await;
    assert_eq!(attempts(&rows), FLOOD);
    let closing = rows.last().unwrap();
    assert!(closing["detail"]["repeats_of"].is_i64(), "{closing}");
    assert!(verify(&app).await["problems"]
        .as_array()
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn different_refusals_are_kept_apart_and_counts_survive_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bot.toml"), BASE_CONFIG).unwrap();
    let daemon = run_daemon(dir.path(), 0o022);
    let agent = Client::new(dir.path().join("gatebot.sock"));
    eventually("the daemon serves", async || {
        agent.get("/v1/health").await.ok()
    })
    .await;
    let submit = json!({"agent": "secure", "tool": "send_email", "args": {}});
    let wrong = agent.clone().with_token(Some("guess".into()));
    for _ in 0..5 {
        assert_eq!(
            wrong.post("/v1/requests", &submit).await.unwrap().status,
            401
        );
    }
    // Another reason (no token at all) and another actor are windows of their own.
    for _ in 0..3 {
        assert_eq!(
            agent.post("/v1/requests", &submit).await.unwrap().status,
            401
        );
    }
    let other = json!({"agent": "other", "tool": "send_email", "args": {}});
    assert_eq!(
        agent.post("/v1/requests", &other).await.unwrap().status,
        401
    );

    // kill -9: the counts of the open windows are in the database, not in memory.
    crate::helpers::signal(daemon.id().unwrap(), libc::SIGKILL);
    daemon.wait_with_output().await.unwrap();
    let daemon = run_daemon(dir.path(), 0o022);
    eventually("the daemon serves again", async || {
        agent.get("/v1/health").await.ok()
    })
    .await;
    let owner = Client::new(dir.path().join("gatebot-control.sock"));
    let trail = owner.get("/v1/audit").await.unwrap();
    let rows: Vec<Value> = trail.body["audit"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["event"] == "unauthorised_attempt")
        .cloned()
        .collect();
    let by = |actor: &str, refused: &str| -> i64 {
        attempts(
            &rows
                .iter()
                .filter(|r| {
                    r["actor"] == actor
                        && r["detail"]["refused"].as_str().unwrap().contains(refused)
                })
                .cloned()
                .collect::<Vec<_>>(),
        )
    };
    assert_eq!(by("secure", "is not agent"), 5, "{rows:#?}");
    assert_eq!(by("secure", "send it as"), 3, "{rows:#?}");
    assert_eq!(by("other", "send it as"), 1, "{rows:#?}");
    assert_eq!(
        rows.len(),
        5,
        "three first rows, two with repeats: {rows:#?}"
    );
    let verified = owner.get("/v1/audit/verify").await.unwrap();
    assert_eq!(verified.body["problems"], json!([]));
    stop(daemon).await;
}

#[tokio::test]
async fn the_trail_is_streamed_a_page_at_a_time() {
    let app = spawn_app("").await;
    // More rows than a page (500) holds, from concurrent agents.
    let mut calls = tokio::task::JoinSet::new();
    for n in 0..320 {
        let agent = app.agent.clone();
        calls.spawn(async move {
            agent
                .post(
                    "/v1/requests",
                    &json!({"agent": "mailer", "tool": "query_org_data", "args": {"n": n}}),
                )
                .await
                .unwrap()
                .status
        });
        if calls.len() >= 16 {
            assert!(calls.join_next().await.unwrap().unwrap().is_success());
        }
    }
    while let Some(status) = calls.join_next().await {
        assert!(status.unwrap().is_success());
    }
    let whole = app.owner.get("/v1/audit").await.unwrap();
    let rows = whole.body["audit"].as_array().unwrap().clone();
    assert!(rows.len() > 640, "{}", rows.len());

    // NDJSON, sent in chunks as it is read: the head says so.
    let raw = {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::UnixStream::connect(app.path().join("gatebot-control.sock"))
            .await
            .unwrap();
        s.write_all(
            b"GET /v1/audit?format=ndjson HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .await
        .unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).await.unwrap();
        String::from_utf8_lossy(&out).to_lowercase()
    };
    let head = &raw[..raw.find("\r\n\r\n").unwrap()];
    assert!(
        head.contains("content-type: application/x-ndjson"),
        "{head}"
    );
    assert!(head.contains("transfer-encoding: chunked"), "{head}");

    let mut lines = Vec::new();
    let done = app
        .owner
        .get_lines("/v1/audit?format=ndjson", |l| {
            lines.push(serde_json::from_slice::<Value>(l).unwrap());
            std::ops::ControlFlow::Continue(())
        })
        .await
        .unwrap();
    assert!(done.is_none());
    assert_eq!(lines, rows, "the same rows, in order, once each");

    // The command line prints them as they come.
    let out = tokio::process::Command::new(BIN)
        .args(["audit", "--json", "--socket"])
        .arg(app.path().join("gatebot-control.sock"))
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let printed: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(printed.len(), rows.len());
    assert_eq!(printed.first(), rows.first());
    // An error before the first row is still an error (exit 2).
    let out = tokio::process::Command::new(BIN)
        .args(["audit", "--request", "nosuch", "--socket"])
        .arg(app.path().join("gatebot-control.sock"))
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not_found"));
}
