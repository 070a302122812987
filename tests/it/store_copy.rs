//! `gatebot store copy --to postgres://…` (docs/scale-out.md, "Moving from SQLite"): an
//! installation made on SQLite, stopped, copied by the real binary into a fresh database
//! of the throwaway PostgreSQL cluster, and started there: the same requests, grants,
//! tiers, tasks and runs, the same audit head, and new rows after the copy work. Skipped,
//! with one line, without PostgreSQL; the source is the SQLite file itself, so the suite
//! run on PostgreSQL skips it too.

use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};

use crate::helpers::{spawn_app, spawn_app_in, sqlite_only, TestApp, BASE_CONFIG};
use crate::inbox::{self, with_inbox};
use crate::pg_cluster;
use crate::trust::{owner_get, owner_post};

/// `gatebot --config CONFIG store copy ARGS…` as a child process, with no gatebot
/// environment: its output.
async fn copy(config: &Path, args: &[&str]) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_gatebot"))
        .arg("--config")
        .arg(config)
        .args(["store", "copy"])
        .args(args)
        .env_remove("GATEBOT_CONFIG")
        .env_remove("GATEBOT_SOCKET")
        .env_remove("GATEBOT_STORE_TESTS")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap()
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What an owner sees of the installation, without what changes with the clock: each
/// request's status and who decided it, the grants, the tiers in force, the tasks and
/// the runs.
async fn seen(app: &TestApp, ids: &[String]) -> Value {
    let mut requests = Vec::new();
    for id in ids {
        let r = app.get(id, 0.0).await.body;
        requests.push(json!([r["id"], r["status"], r["decided_by"], r["tool"]]));
    }
    let (_, grants) = owner_get(app, "/v1/grants?all=true").await;
    let grants: Vec<Value> = grants["grants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| json!([g["id"], g["agent"], g["tool"], g["scope"]]))
        .collect();
    let mut tiers = Vec::new();
    for agent in ["boss", "mailer", "intern"] {
        let (_, t) = owner_get(app, &format!("/v1/agents/{agent}/trust")).await;
        tiers.push(json!([
            agent,
            t["tier"],
            t["source"],
            t["pending"],
            t["evidence"]
        ]));
    }
    let tasks = app.owner.get("/v1/tasks?all=true").await.unwrap().body;
    let tasks: Vec<Value> = tasks["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| json!([t["id"], t["status"], t["text"]]))
        .collect();
    let runs = app.owner.get("/v1/runs").await.unwrap().body;
    let runs: Vec<Value> = runs["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| json!([r["id"], r["status"], r["title"]]))
        .collect();
    json!({"requests": requests, "grants": grants, "tiers": tiers, "tasks": tasks, "runs": runs})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_installation_moves_to_postgresql_with_the_same_audit_head() {
    if !sqlite_only("an_installation_moves_to_postgresql_with_the_same_audit_head") {
        return;
    }
    let Some(db) = pg_cluster::database() else {
        return;
    };
    // Arrange: an installation on SQLite with a bit of everything.
    let app = spawn_app(&with_inbox("", "")).await;
    let mut ids = Vec::new();
    let allowed = app
        .submit_ok("boss", "query_org_data", json!({"q": 1}))
        .await;
    ids.push(allowed["id"].as_str().unwrap().to_string());
    for (to, verdict) in [("ann", Some("approve")), ("bo", Some("deny")), ("cy", None)] {
        let (id, _) = app
            .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"to": to}}))
            .await;
        if let Some(v) = verdict {
            app.decide_ok(&id, v, Some("looked at it")).await;
        }
        ids.push(id);
    }
    let (id, _) = app
        .submit_pending(json!({"agent": "mailer", "tool": "create_contact", "args": {"n": 0}}))
        .await;
    let made = app.decide_ok(&id, "approve-always", None).await;
    assert!(made["grant"]["id"].is_string(), "{made}");
    ids.push(id);
    let (status, res) =
        owner_post(&app, "/v1/agents/boss/tier", json!({"tier": "supervised"})).await;
    assert_eq!(status, 200, "{res}");
    let task = inbox::add_ok(&app, "read the quarterly report").await;
    assert!(task["id"].is_string(), "{task}");
    let run = app
        .agent
        .post(
            "/v1/runs",
            &json!({"agent": "mailer", "title": "newsletter"}),
        )
        .await
        .unwrap();
    assert_eq!(run.status, 201, "{:?}", run.body);
    // While gatebot runs, the copy is refused, and says what to stop.
    let config = app.path().join("bot.toml");
    let out = copy(&config, &["--to", &db.url()]).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("is in use: gatebot is running"), "{stderr}");
    assert!(stderr.contains("systemctl stop"), "{stderr}");
    assert_eq!(
        db.run("SELECT to_regclass('audit') IS NULL").trim(),
        "t",
        "not even the schema"
    );
    // ...and gatebot carries on (boss is supervised now: its request waits).
    let (id, _) = app
        .submit_pending(json!({"agent": "boss", "tool": "query_org_data", "args": {"q": 2}}))
        .await;
    ids.push(id);
    let before = seen(&app, &ids).await;
    let head = app.owner.get("/v1/audit/head").await.unwrap().body;
    assert!(head["seq"].as_i64().unwrap() > 5, "{head}");
    let dir = app.stop().await;

    // Act: the copy, by the binary.
    let started = std::time::Instant::now();
    let out = copy(&config, &["--to", &db.url()]).await;
    let took = started.elapsed();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    eprintln!("store copy took {took:?}:\n{stdout}");
    assert!(
        stdout.contains("6 requests, 1 grant, 1 tier change"),
        "{stdout}"
    );
    assert!(stdout.contains("1 task, 1 workflow run"), "{stdout}");
    let short = &head["hash"].as_str().unwrap()[..12];
    let seq = head["seq"].as_i64().unwrap();
    assert_eq!(
        stdout.matches(&format!("row {seq}, hash {short}…")).count(),
        2,
        "the head on both sides: {stdout}"
    );
    assert!(
        stdout.contains("the copy's audit trail verifies"),
        "{stdout}"
    );
    let anchor = format!(
        "gatebot audit verify --head {}",
        head["hash"].as_str().unwrap()
    );
    assert!(stdout.contains(&anchor), "{stdout}");
    assert!(
        stdout.contains(&format!("url = \"{}\"", db.url())),
        "{stdout}"
    );
    // The copy's rows are the file's, table by table.
    let file = rusqlite::Connection::open(dir.path().join("gatebot.db")).unwrap();
    for table in [
        "approvals",
        "audit",
        "grants",
        "tier_overrides",
        "tasks",
        "runs",
        "subjects",
    ] {
        let sqlite: i64 = file
            .query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .unwrap();
        let pg: i64 = db
            .run(&format!("SELECT count(*) FROM {table}"))
            .trim()
            .parse()
            .unwrap();
        assert_eq!(pg, sqlite, "{table}");
    }
    drop(file);
    // Every identity's sequence is past the rows copied (the next insert cannot collide).
    let behind = db.rows(
        "SELECT c.table_name, c.column_name FROM information_schema.columns c \
         WHERE c.is_identity = 'YES' AND c.table_schema = current_schema() \
         AND (xpath('/row/m/text()', query_to_xml(format('SELECT max(%I) AS m FROM %I', \
              c.column_name, c.table_name), false, true, '')))[1]::text::bigint \
           > COALESCE((SELECT s.last_value FROM pg_sequences s \
              WHERE format('%I.%I', s.schemaname, s.sequencename) \
                  = pg_get_serial_sequence(format('%I', c.table_name), c.column_name)), 0)",
    );
    assert_eq!(behind, Vec::<Value>::new(), "sequences behind their rows");

    let copied = db.rows("SELECT seq, hash, rows FROM audit_head");
    assert_eq!(copied, vec![head.clone()], "the copy's head is the file's");

    // Assert: gatebot started on the copy sees the same installation.
    let on_pg = format!("{}\n[store]\nurl = \"{}\"\n", with_inbox("", ""), db.url());
    let app = spawn_app_in(dir, &on_pg).await;
    assert_eq!(seen(&app, &ids).await, before);
    // The chain goes on from the file's head (gatebot's start is a row of it).
    let hash = head["hash"].as_str().unwrap();
    let check = app
        .owner
        .get(&format!("/v1/audit/verify?head={hash}"))
        .await
        .unwrap()
        .body;
    assert_eq!(check["problems"], json!([]), "{check}");
    assert_eq!(check["anchored_at"], head["seq"], "{check}");
    // New rows after the copy: a request (its subject), a decision, a task, a run.
    let (id, _) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"to": "di"}}))
        .await;
    app.decide_ok(&id, "approve", None).await;
    inbox::add_ok(&app, "tidy the downloads folder").await;
    let run = app
        .agent
        .post("/v1/runs", &json!({"agent": "mailer", "title": "digest"}))
        .await
        .unwrap();
    assert_eq!(run.status, 201, "{:?}", run.body);
    let check = app.owner.get("/v1/audit/verify").await.unwrap().body;
    assert_eq!(check["problems"], json!([]), "{check}");
    assert!(check["head"]["seq"].as_i64().unwrap() > seq, "{check}");
    assert_eq!(
        db.run("SELECT count(*) FROM approvals").trim(),
        (ids.len() + 1).to_string(),
        "the new request is in PostgreSQL"
    );

    // A second copy into the same database is refused, and changes nothing.
    let dir = app.stop().await;
    let rows = db.run("SELECT count(*) FROM audit");
    // (The cluster trusts loopback; the password is read, and PostgreSQL does not ask.)
    let password = dir.path().join("postgres-password");
    std::fs::write(&password, "not-asked\n").unwrap();
    let out = copy(
        &dir.path().join("bot.toml"),
        &[
            "--to",
            &db.url(),
            "--password-file",
            password.to_str().unwrap(),
        ],
    )
    .await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("already holds an installation"), "{stderr}");
    assert!(stderr.contains("docs/scale-out.md"), "{stderr}");
    assert_eq!(db.run("SELECT count(*) FROM audit"), rows);
}

#[tokio::test]
async fn a_password_in_the_url_or_a_missing_file_is_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("bot.toml");
    std::fs::write(&config, BASE_CONFIG).unwrap();
    // No SQLite file where the config says: said before anything is reached.
    let out = copy(&config, &["--to", "postgres://gatebot@127.0.0.1:1/gatebot"]).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("there is no gatebot database at"),
        "{stderr}"
    );
    assert!(stderr.contains("[store] path"), "{stderr}");
    assert!(
        !dir.path().join("gatebot.db").exists(),
        "nothing was created"
    );
    // A password in the URL, refused as bot.toml's `[store] url` refuses it, and never
    // repeated.
    let out = copy(
        &config,
        &["--to", "postgres://gatebot:hunter2@127.0.0.1:1/gatebot"],
    )
    .await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("--to: must not hold the password"),
        "{stderr}"
    );
    assert!(stderr.contains("--password-file"), "{stderr}");
    assert!(!stderr.contains("hunter2") && !stdout.contains("hunter2"));
    // A password variable that is not set.
    let out = copy(
        &config,
        &[
            "--to",
            "postgres://gatebot@127.0.0.1:1/gatebot",
            "--password-env",
            "GATEBOT_TEST_NO_SUCH_PASSWORD",
        ],
    )
    .await;
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "--password-env: environment variable `GATEBOT_TEST_NO_SUCH_PASSWORD` is not set"
        ),
        "{stderr}"
    );
    // A database that cannot be reached: said with PostgreSQL's cause and what to check.
    drop(gatebot::bench_internals::Store::open(&dir.path().join("gatebot.db")).unwrap());
    let port = crate::helpers::free_port();
    let url = format!("postgres://gatebot@127.0.0.1:{}/gatebot", port.port());
    let out = copy(&config, &["--to", &url]).await;
    let (_, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot open the PostgreSQL database {url}")),
        "{stderr}"
    );
    assert!(stderr.contains("Connection refused"), "{stderr}");
    assert!(stderr.contains("Nothing was copied"), "{stderr}");
}

/// A value PostgreSQL's column cannot take stops the copy, naming where it is, and the
/// database is left as it was: empty.
#[tokio::test]
async fn a_copy_that_fails_leaves_the_database_empty() {
    if !sqlite_only("a_copy_that_fails_leaves_the_database_empty") {
        return;
    }
    let Some(db) = pg_cluster::database() else {
        return;
    };
    let app = spawn_app("").await;
    app.submit_ok("boss", "query_org_data", json!({"q": 1}))
        .await;
    let dir = app.stop().await;
    // A value PostgreSQL's column cannot take (SQLite keeps what it is given).
    let file = rusqlite::Connection::open(dir.path().join("gatebot.db")).unwrap();
    file.execute_batch("UPDATE approvals SET checkpoint = 'yes'")
        .unwrap();
    drop(file);
    let out = copy(&dir.path().join("bot.toml"), &["--to", &db.url()]).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(
            "approvals.checkpoint of row 1 holds text, where PostgreSQL's column is int8"
        ),
        "{stderr}"
    );
    let empty = || {
        assert_eq!(db.run("SELECT count(*) FROM approvals").trim(), "0");
        assert_eq!(db.run("SELECT count(*) FROM audit").trim(), "0");
        assert_eq!(db.run("SELECT seq FROM audit_head").trim(), "0");
    };
    empty();
    // A row PostgreSQL refuses (SQLite lets a text key be NULL): its own words.
    let file = rusqlite::Connection::open(dir.path().join("gatebot.db")).unwrap();
    file.execute_batch(
        "UPDATE approvals SET checkpoint = 0; \
         INSERT INTO agent_handles (id, agent) VALUES (NULL, 'nobody')",
    )
    .unwrap();
    drop(file);
    let out = copy(&dir.path().join("bot.toml"), &["--to", &db.url()]).await;
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("the copy stopped: "), "{stderr}");
    assert!(stderr.contains("agent_handles"), "{stderr}");
    assert!(stderr.contains("Nothing was copied"), "{stderr}");
    empty();
}

/// How fast a copy goes: 10 000 requests (and their audit rows) made on SQLite, copied
/// by the binary. A measurement, run by hand:
/// `cargo test --test it store_copy -- --ignored --nocapture`; `GATEBOT_COPY_REQUESTS`
/// sets how many requests (in thousands: 10 by default).
#[tokio::test]
#[ignore = "a measurement, run by hand"]
async fn copying_10_000_requests() {
    use gatebot::bench_internals::{NewApproval, Store};
    let Some(db) = pg_cluster::database() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("bot.toml");
    std::fs::write(&config, BASE_CONFIG).unwrap();
    {
        let store = Store::open(&dir.path().join("gatebot.db")).unwrap();
        let thousands: usize = std::env::var("GATEBOT_COPY_REQUESTS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(10);
        for batch in 0..thousands * 2 {
            let news: Vec<NewApproval> = (0..500)
                .map(|i| {
                    let mut n = NewApproval::sample("mailer", "send_email", Some(i64::MAX));
                    n.asked.args = json!({"to": format!("person {batch}-{i}")});
                    n
                })
                .collect();
            for r in store.insert_batch(&news) {
                r.unwrap();
            }
        }
    }
    let started = std::time::Instant::now();
    let out = copy(&config, &["--to", &db.url()]).await;
    let took = started.elapsed();
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let rows: i64 = db
        .run("SELECT (SELECT count(*) FROM approvals) + (SELECT count(*) FROM audit) + (SELECT count(*) FROM subjects)")
        .trim()
        .parse()
        .unwrap();
    eprintln!(
        "{stdout}the whole command: {took:?}, {:.0} rows/s (requests, audit rows and subjects: {rows})",
        rows as f64 / took.as_secs_f64()
    );
}
