//! Commands that wait for the owner keep waiting when the daemon restarts (an upgrade,
//! `systemctl restart`): what they wait for survives the restart, so they reconnect
//! within their own wait and exit by the owner's answer, as `ask` and `status` do
//! (`integrations::waiting_clients_survive_a_daemon_restart`).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::cli::text;
use crate::helpers::{eventually, gatebot_at as gatebot, spawn_app, spawn_app_in, TestApp};

/// Starts `cmd`, collecting its stderr as it comes (`<eof>` marks its end).
fn spawn(mut cmd: Command) -> (Child, Arc<Mutex<String>>) {
    let mut child = cmd.spawn().unwrap();
    let text = Arc::new(Mutex::new(String::new()));
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let sink = text.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let mut t = sink.lock().unwrap();
            t.push_str(&line);
            t.push('\n');
        }
        sink.lock().unwrap().push_str("<eof>");
    });
    (child, text)
}

fn sockets(app: &TestApp) -> (std::path::PathBuf, std::path::PathBuf) {
    (
        app.path().join("gatebot.sock"),
        app.path().join("gatebot-control.sock"),
    )
}

/// The run's open check-in, once it waits at one.
async fn check_in_of(app: &TestApp, run: &str) -> String {
    eventually("the run to wait at a check-in", async || {
        let res = app.owner.get(&format!("/v1/runs/{run}")).await.ok()?;
        let v: &Value = &res.body;
        (v["status"] == "waiting").then(|| v["check_in"]["short_id"].as_str().unwrap().to_string())
    })
    .await
}

/// Issue 20: `workflow event --wait` and `workflow status --wait` exited 2 ("cannot
/// reach gatebot") when the daemon restarted, though the check-in survives it, so a
/// pipeline died on `systemctl restart`.
#[tokio::test]
async fn workflow_waits_survive_a_daemon_restart_and_end_by_the_owners_answer() {
    let app = spawn_app("").await;
    let (socket, control) = sockets(&app);
    let out = gatebot(
        &socket,
        &[
            "workflow",
            "start",
            "--agent",
            "mailer",
            "--title",
            "Release 2.4",
        ],
    )
    .output()
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let run = text(&out.stdout).trim().to_string();

    // The end of a phase with a warning waits for the owner (the default per-phase
    // check-in).
    let (mut event, event_err) = spawn(gatebot(
        &socket,
        &[
            "workflow",
            "event",
            &run,
            "--type",
            "phase_complete",
            "--phase",
            "build",
            "--warning",
            "Style issue:low",
            "--wait",
            "10m",
        ],
    ));
    let short = check_in_of(&app, &run).await;
    let (mut status, status_err) = spawn(gatebot(
        &socket,
        &["workflow", "status", &run, "--wait", "10m"],
    ));
    eventually("workflow status to be waiting", async || {
        let e = status_err.lock().unwrap().clone();
        let out = app.owner.get(&format!("/v1/runs/{run}")).await.ok()?;
        // Its long-poll is in: nothing on stderr yet, and the run still waits.
        (e.is_empty() && out.body["status"] == "waiting").then_some(())
    })
    .await;

    let dir = app.stop().await;
    for (what, err) in [("event", &event_err), ("status", &status_err)] {
        let said = eventually(&format!("workflow {what} to lose gatebot"), async || {
            let e = err.lock().unwrap().clone();
            (e.contains("reconnecting") || e.contains("<eof>")).then_some(e)
        })
        .await;
        assert!(!said.contains("<eof>"), "{what} gave up: {said}");
    }
    let app = spawn_app_in(dir, "").await;
    // The owner answers after the restart.
    let decided = gatebot(
        &control,
        &[
            "decide",
            &short,
            "continue",
            "--reason",
            "after the upgrade",
        ],
    )
    .output()
    .await
    .unwrap();
    assert_eq!(decided.status.code(), Some(0), "{}", text(&decided.stderr));

    for (what, child, err) in [
        ("event --wait", &mut event, &event_err),
        ("status --wait", &mut status, &status_err),
    ] {
        let mut stdout = String::new();
        tokio::io::AsyncReadExt::read_to_string(child.stdout.as_mut().unwrap(), &mut stdout)
            .await
            .unwrap();
        let code = tokio::time::timeout(Duration::from_secs(60), child.wait())
            .await
            .expect("it exits once answered")
            .unwrap()
            .code();
        let stderr = eventually("its stderr to end", async || {
            let e = err.lock().unwrap().clone();
            e.contains("<eof>").then_some(e)
        })
        .await;
        assert_eq!(code, Some(0), "{what}: {stdout}\n{stderr}");
        assert!(stdout.contains("after the upgrade"), "{what}: {stdout}");
        // Said once that it reconnects, and that it did.
        assert_eq!(
            stderr.matches("reconnecting").count(),
            1,
            "{what}: {stderr}"
        );
        assert!(
            stderr.contains("reconnected to gatebot"),
            "{what}: {stderr}"
        );
    }
    drop(app);
}

/// `gatebot task status --wait` the same way: the task survives the restart, and the
/// command ends by what the owner does after it.
#[tokio::test]
async fn task_status_wait_survives_a_daemon_restart() {
    let app = spawn_app(crate::inbox::INBOX).await;
    let (_, control) = sockets(&app);
    let out = gatebot(&control, &["task", "add", "say hello", "--json"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let task: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = task["id"].as_str().unwrap().to_string();
    let (mut status, status_err) =
        spawn(gatebot(&control, &["task", "status", &id, "--wait", "10m"]));

    let dir = app.stop().await;
    let said = eventually("task status to lose gatebot", async || {
        let e = status_err.lock().unwrap().clone();
        (e.contains("reconnecting") || e.contains("<eof>")).then_some(e)
    })
    .await;
    assert!(!said.contains("<eof>"), "it gave up: {said}");
    let _app = spawn_app_in(dir, crate::inbox::INBOX).await;
    let cancelled = gatebot(&control, &["task", "cancel", &id])
        .output()
        .await
        .unwrap();
    assert_eq!(
        cancelled.status.code(),
        Some(0),
        "{}",
        text(&cancelled.stderr)
    );

    let code = tokio::time::timeout(Duration::from_secs(60), status.wait())
        .await
        .expect("it exits once the task is cancelled")
        .unwrap()
        .code();
    let stderr = eventually("its stderr to end", async || {
        let e = status_err.lock().unwrap().clone();
        e.contains("<eof>").then_some(e)
    })
    .await;
    assert_eq!(code, Some(1), "cancelled: {stderr}");
    assert!(stderr.contains("reconnected to gatebot"), "{stderr}");
}
