//! Durations (issue 18, item 8): every duration key, field and flag has a range,
//! refused outside it with the key and the range in words, and no stored time,
//! however extreme, stops a listing.

use std::process::Output;

use serde_json::{json, Value};
use tokio::process::Command;

use crate::helpers::TestApp;
use crate::inbox::{add_ok, claim, start};
use crate::trust::{decide_with, owner_get, owner_post, SHELL};

const BIN: &str = env!("CARGO_BIN_EXE_gatebot");

/// `gatebot --config <the app's> ARGS` (the owner's commands, on the control socket).
async fn cli(app: &TestApp, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("--config")
        .arg(&app.config_path)
        .args(args)
        .env_remove("GATEBOT_SOCKET")
        .env_remove("GATEBOT_TOKEN")
        .output()
        .await
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Every column of `table` that holds an instant.
fn time_columns(db: &rusqlite::Connection, table: &str) -> Vec<String> {
    let mut stmt = db
        .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
        .unwrap();
    let names: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    names
        .into_iter()
        .filter(|n| {
            n.ends_with("_at")
                || n.ends_with("_until")
                || ["deadline", "progress_due", "at"].contains(&n.as_str())
        })
        .collect()
}

#[tokio::test]
async fn extreme_stored_times_never_stop_a_listing() {
    let app = start("", SHELL).await;
    // One of everything that carries a time: a pending request, a time-boxed grant, a
    // pause, a tier override, a running task, a run waiting at a check-in.
    let (pending, _) = app
        .submit_pending(json!({"agent": "intern", "tool": "create_contact", "args": {}}))
        .await;
    let first = app
        .submit(json!({"agent": "coder", "tool": "Bash", "args": {"command": "git status"}}))
        .await
        .body;
    let (status, body) = decide_with(
        &app,
        first["id"].as_str().unwrap(),
        "approve",
        json!({"for": "1h"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    owner_post(&app, "/v1/agents/drafter/pause", json!({"reason": "r"})).await;
    owner_post(&app, "/v1/agents/boss/tier", json!({"tier": "supervised"})).await;
    let task = add_ok(&app, "say hello to the team").await;
    assert!(claim(&app, "claude-code", 5.0).await.is_object());
    let run = app
        .agent
        .post("/v1/runs", &json!({"agent": "mailer", "title": "Release"}))
        .await
        .unwrap()
        .body;
    let run_id = run["id"].as_str().unwrap().to_string();
    let event = json!({"type": "phase_complete", "phase": "build",
                       "warnings": [{"text": "flaky test", "severity": "low"}],
                       "result_handling": {"on_warning": "ask"}});
    let waits = app
        .agent
        .post(&format!("/v1/runs/{run_id}/events"), &event)
        .await
        .unwrap();
    assert_eq!(waits.body["action"], "wait", "{:?}", waits.body);

    let db = rusqlite::Connection::open(app.path().join("gatebot.db")).unwrap();
    let tables: Vec<String> = db
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        // The audit trail is hash-chained: changing it is another test's subject.
        .filter(|t: &String| !t.starts_with("audit") && !t.starts_with("sqlite"))
        .collect();
    let year_10000 = 253_402_300_800_000_i64;
    for extreme in [i64::MAX, year_10000, -1, i64::MIN] {
        for table in &tables {
            for column in time_columns(&db, table) {
                db.execute(&format!("UPDATE {table} SET {column} = ?1"), [extreme])
                    .unwrap();
            }
        }
        let task_id = task["id"].as_str().unwrap();
        for path in [
            "/v1/requests?status=pending".to_string(),
            "/v1/requests?limit=100".to_string(),
            format!("/v1/requests/{pending}"),
            "/v1/grants?all=true".to_string(),
            "/v1/agents".to_string(),
            "/v1/agents/coder/trust".to_string(),
            "/v1/agents/drafter/trust".to_string(),
            "/v1/tasks?all=true".to_string(),
            format!("/v1/tasks/{task_id}"),
            "/v1/runs".to_string(),
            format!("/v1/runs/{run_id}"),
        ] {
            let (status, body) = owner_get(&app, &path).await;
            assert_eq!(status, 200, "{extreme}: {path}: {body}");
        }
        for args in [
            &["pending"][..],
            &["pending", "--json"],
            &["grants", "--all"],
            &["agents"],
            &["agent", "coder"],
            &["agent", "drafter"],
            &["tasks", "--all"],
            &["workflows"],
            &["status", &pending],
        ] {
            let out = cli(&app, args).await;
            assert!(
                matches!(out.status.code(), Some(0 | 1 | 3)),
                "{extreme}: gatebot {args:?}: {}\n{}",
                text(&out.stdout),
                text(&out.stderr)
            );
            assert!(
                !text(&out.stderr).contains("panicked"),
                "{}",
                text(&out.stderr)
            );
        }
    }
    // The daemon is still whole: a new request is answered.
    let after: Value = app
        .submit_ok("boss", "query_org_data", json!({"q": 1}))
        .await;
    assert!(after["status"].is_string(), "{after}");
}

#[tokio::test]
async fn durations_out_of_range_are_refused_in_the_api_and_the_commands_and_change_nothing() {
    let app = crate::helpers::spawn_app(SHELL).await;
    let first = app
        .submit(json!({"agent": "coder", "tool": "Bash", "args": {"command": "git status"}}))
        .await
        .body;
    let id = first["id"].as_str().unwrap();
    // A grant for 10 000 years: refused, the request still waits, no grant is made.
    let (status, body) = decide_with(&app, id, "approve", json!({"for": "10000y"})).await;
    assert_eq!(status, 422, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("from 1 second to 365 days; 10000 years is longer"),
        "{message}"
    );
    let out = cli(&app, &["decide", id, "approve", "--for", "36500d"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("36500 days is longer"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(app.get(id, 0.0).await.body["status"], "pending");
    let (_, grants) = owner_get(&app, "/v1/grants?all=true").await;
    assert_eq!(grants["grants"], json!([]));
    // A request's ttl past max_ttl, and a command's wait past its range.
    let res = app
        .submit(json!({"agent": "intern", "tool": "create_contact", "args": {}, "ttl": "8000y"}))
        .await;
    assert_eq!(res.status, 422, "{:?}", res.body);
    let out = cli(&app, &["status", id, "--wait", "8000y"]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr)
            .contains("--wait: `8000y` is out of range: must be from 1 second to 1 day"),
        "{}",
        text(&out.stderr)
    );
    // check-config says which key and what range.
    std::fs::write(
        app.path().join("long.toml"),
        "[policy]\nmax_ttl = \"8000y\"\n[inbox]\nlease = \"1ms\"\n[inbox.routes]\ndefault = \"a\"\n[agents.a]\ntier = \"supervised\"\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["check-config", "--config"])
        .arg(app.path().join("long.toml"))
        .output()
        .await
        .unwrap();
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_ne!(out.status.code(), Some(0), "{all}");
    assert!(
        all.contains("`policy.max_ttl`: must be from 1 second to 365 days; 8000 years is longer"),
        "{all}"
    );
    assert!(
        all.contains("`inbox.lease`: must be from 1 second to 1 hour; 1 millisecond is shorter"),
        "{all}"
    );
}
