//! A pause stops everything the agent does (issue 18, item 3): claims, task reports,
//! workflow runs and their events are refused `409 agent_paused` (who, when, why);
//! its running tasks go back to the queue and wait, or go to the next agent on their
//! route; `gatebot worker` stops, says so, and picks up again on resume. And one agent
//! cannot starve the others (item 5): its long-polls and requests in flight are capped
//! per agent, over-cap attempts get `429`, and a pause closes its waits.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gatebot::client::Client;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

use crate::helpers::{eventually, spawn_app, TestApp};
use crate::inbox::{add, add_ok, claim, report, task, wait_status};
use crate::trust::owner_post;

/// Two agents on one route: the first that is not paused takes new tasks.
const ROUTED: &str = r#"
[agents.claude-code]
tier = "supervised"

[agents.codex]
tier = "supervised"

[inbox]
progress_every = "1s"

[inbox.routes]
default = ["claude-code", "codex"]
"#;

async fn pause(app: &TestApp, agent: &str, reason: &str) {
    let (status, body) = owner_post(
        app,
        &format!("/v1/agents/{agent}/pause"),
        json!({"reason": reason}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

async fn resume(app: &TestApp, agent: &str) {
    let (status, body) = owner_post(app, &format!("/v1/agents/{agent}/resume"), json!({})).await;
    assert_eq!((status, &body["resumed"]), (200, &json!(true)), "{body}");
}

/// Asserts `409 agent_paused` naming who paused `agent` and why.
fn assert_paused(res: &gatebot::client::Response, agent: &str, reason: &str) {
    assert_eq!(res.status, 409, "{:?}", res.body);
    let e = &res.body["error"];
    assert_eq!(e["code"], "agent_paused", "{e}");
    assert_eq!(e["agent"], agent, "{e}");
    assert_eq!(e["paused_by"], "alice on the command line", "{e}");
    assert_eq!(e["reason"], reason, "{e}");
    let message = e["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "agent `{agent}` is paused by alice on the command line"
        )) && message.contains(reason),
        "{message}"
    );
}

async fn events(app: &TestApp, id: &str) -> Vec<String> {
    app.audit_events(id).await
}

#[tokio::test]
async fn a_paused_agent_claims_reports_and_runs_nothing_until_it_is_resumed() {
    let app = spawn_app(crate::inbox::INBOX).await;
    let cc = app.agent.clone();
    // claude-code runs a task; mailer has a run going.
    let t = add(
        &app,
        json!({"text": "say hello to the team", "agent": "claude-code"}),
    )
    .await
    .body;
    let id = t["id"].as_str().unwrap().to_string();
    let claimed = claim(&app, "claude-code", 5.0).await;
    let lease = claimed["lease"].as_str().unwrap().to_string();
    let run = cc
        .post("/v1/runs", &json!({"agent": "mailer", "title": "Release"}))
        .await
        .unwrap()
        .body;
    let run_id = run["id"].as_str().unwrap().to_string();
    let event = json!({"type": "step_complete", "phase": "build"});
    let before = cc
        .post(&format!("/v1/runs/{run_id}/events"), &event)
        .await
        .unwrap();
    assert_eq!(before.body["action"], "continue", "{:?}", before.body);

    pause(&app, "claude-code", "runaway loop").await;
    pause(&app, "mailer", "bad deploy").await;

    // Its running task is queued again: the worker's lease is void.
    let t = task(&app, &id).await;
    assert_eq!(t["status"], "queued", "{t}");
    assert!(events(&app, &id)
        .await
        .contains(&"task_withheld".to_string()));
    // Reports under the old lease, and claims, are refused with who and why.
    for (what, body) in [
        ("progress", json!({"lease": lease, "text": "still going"})),
        ("complete", json!({"lease": lease, "result": "done"})),
        ("fail", json!({"lease": lease, "error": "gave up"})),
        (
            "needs-input",
            json!({"lease": lease, "questions": ["Which?"]}),
        ),
    ] {
        let res = report(&app, "claude-code", &id, what, body).await;
        assert_paused(&res, "claude-code", "runaway loop");
    }
    for wait in [0.0, 5.0] {
        let res = cc
            .post(
                "/v1/tasks/claim",
                &json!({"agent": "claude-code", "wait": wait}),
            )
            .await
            .unwrap();
        assert_paused(&res, "claude-code", "runaway loop");
    }
    assert_eq!(task(&app, &id).await["status"], "queued");
    // No new run, no event: the agent is told, not answered `continue`.
    let res = cc
        .post("/v1/runs", &json!({"agent": "mailer", "title": "Another"}))
        .await
        .unwrap();
    assert_paused(&res, "mailer", "bad deploy");
    let res = cc
        .post(&format!("/v1/runs/{run_id}/events"), &event)
        .await
        .unwrap();
    assert_paused(&res, "mailer", "bad deploy");
    let (_, runs) = crate::trust::owner_get(&app, "/v1/runs?agent=mailer").await;
    assert_eq!(runs["runs"].as_array().unwrap().len(), 1, "{runs}");
    let (_, r) = crate::trust::owner_get(&app, &format!("/v1/runs/{run_id}")).await;
    assert_eq!(r["events"], 1, "only the event before the pause: {r}");
    // Other agents are not touched.
    let other = cc
        .post("/v1/runs", &json!({"agent": "boss", "title": "Other"}))
        .await
        .unwrap();
    assert_eq!(other.status, 201, "{:?}", other.body);

    // Resumed, everything goes on.
    resume(&app, "claude-code").await;
    resume(&app, "mailer").await;
    let again = claim(&app, "claude-code", 5.0).await;
    assert_eq!(again["id"], id.as_str());
    assert_eq!(again["attempt"], 2);
    let res = report(
        &app,
        "claude-code",
        &id,
        "complete",
        json!({"lease": again["lease"], "result": "Hello sent."}),
    )
    .await;
    assert_eq!(res.status, 200, "{:?}", res.body);
    wait_status(&app, &id, "completed").await;
    let res = cc
        .post(&format!("/v1/runs/{run_id}/events"), &event)
        .await
        .unwrap();
    assert_eq!(res.body["action"], "continue", "{:?}", res.body);
}

#[tokio::test]
async fn a_paused_agents_tasks_go_to_the_next_agent_on_their_route() {
    let app = spawn_app(ROUTED).await;
    let routed = add_ok(&app, "say hello to the team").await;
    assert_eq!(routed["agent"], "claude-code");
    // An owner gave this one by name to an agent off the route.
    let named = add(&app, json!({"text": "tidy the notes", "agent": "intern"}))
        .await
        .body;
    pause(&app, "claude-code", "runaway loop").await;
    pause(&app, "intern", "holiday").await;
    // The routed task moves on; the one given to intern by name waits for it.
    let moved = task(&app, routed["id"].as_str().unwrap()).await;
    assert_eq!(
        (&moved["agent"], &moved["status"]),
        (&json!("codex"), &json!("queued"))
    );
    assert!(events(&app, routed["id"].as_str().unwrap())
        .await
        .contains(&"task_rerouted".to_string()));
    let waits = task(&app, named["id"].as_str().unwrap()).await;
    assert_eq!(
        (&waits["agent"], &waits["status"]),
        (&json!("intern"), &json!("queued"))
    );
    // New tasks go to codex while claude-code is paused; codex runs them.
    let new = add_ok(&app, "remind me to call Bob").await;
    assert_eq!(new["agent"], "codex");
    let first = claim(&app, "codex", 5.0).await;
    assert_eq!(first["id"], moved["id"]);
    resume(&app, "claude-code").await;
    resume(&app, "intern").await;
    assert_eq!(add_ok(&app, "say bye").await["agent"], "claude-code");
    assert_eq!(
        claim(&app, "intern", 5.0).await["id"],
        named["id"].as_str().unwrap()
    );
}

/// A running `gatebot worker` with its stderr collected line by line.
struct Worker {
    child: tokio::process::Child,
    stderr: Arc<Mutex<String>>,
}

impl Worker {
    fn start(app: &TestApp, agent: &str, script: &str) -> Worker {
        let mut child = Command::new(env!("CARGO_BIN_EXE_gatebot"))
            .arg("--socket")
            .arg(app.path().join("gatebot.sock"))
            .args(["worker", "--agent", agent, "--", "sh", "-c", script])
            .env_remove("GATEBOT_SOCKET")
            .env_remove("GATEBOT_TOKEN")
            .env_remove("GATEBOT_AGENT")
            .env_remove("GATEBOT_TASK_ID")
            .current_dir(app.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let sink = stderr.clone();
        tokio::spawn(async move {
            while let Ok(Some(l)) = lines.next_line().await {
                let mut s = sink.lock().unwrap();
                s.push_str(&l);
                s.push('\n');
            }
        });
        Worker { child, stderr }
    }

    async fn said(&self, words: &str) {
        eventually(&format!("the worker to say {words:?}"), async || {
            self.stderr.lock().unwrap().contains(words).then_some(())
        })
        .await;
    }
}

#[tokio::test]
async fn a_worker_under_a_paused_agent_stops_waits_says_so_and_picks_up_on_resume() {
    let app = crate::inbox::start("", "").await;
    // The first run hangs (until the pause stops it); the second finishes.
    let script = "if [ -e ran-once ]; then echo finished; else touch ran-once; exec sleep 60; fi";
    let mut worker = Worker::start(&app, "claude-code", script);
    let t = add_ok(&app, "say hello to the team").await;
    let id = t["id"].as_str().unwrap().to_string();
    wait_status(&app, &id, "running").await;
    eventually("the command to start", async || {
        app.path().join("ran-once").exists().then_some(())
    })
    .await;

    pause(&app, "claude-code", "runaway loop").await;
    worker
        .said(&format!("task {} stopped", t["short_id"].as_str().unwrap()))
        .await;
    worker
        .said("agent claude-code is paused by alice on the command line since")
        .await;
    worker
        .said("runaway loop; waiting until an owner resumes it")
        .await;
    assert_eq!(task(&app, &id).await["status"], "queued");

    resume(&app, "claude-code").await;
    worker.said("agent claude-code was resumed").await;
    let done = wait_status(&app, &id, "completed").await;
    assert_eq!(done["result"], "finished", "{done}");
    worker.child.kill().await.unwrap();
}

/// The value of one series in the Prometheus text.
fn series(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in:\n{metrics}"))
}

/// The raw answer to `GET path` on a new connection to `socket`.
async fn raw_get(socket: &Path, path: &str) -> String {
    let mut s = tokio::net::UnixStream::connect(socket).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: gatebot\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = Vec::new();
    // The daemon closes an over-cap connection after its answer.
    tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut out))
        .await
        .expect("the over-cap connection is closed")
        .unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn one_agent_at_its_cap_cannot_stop_another_agents_submit_and_a_pause_closes_its_waits() {
    let app = spawn_app(
        "[queue]\nmax_connections = 12\nmax_connections_per_agent = 6\nmax_waits_per_agent = 6\n",
    )
    .await;
    let socket = app.path().join("gatebot.sock");
    let (id, _) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {}}))
        .await;
    // mailer tries twice as many long-polls as the agents' socket has room for.
    let polls: Vec<_> = (0..24)
        .map(|_| {
            let c = Client::new(&socket);
            let path = format!("/v1/requests/{id}?wait=120");
            tokio::spawn(async move { c.get(&path).await })
        })
        .collect();
    // Each is a request in flight and a wait: whichever cap an extra one meets refuses it.
    let refused = |m: &str| {
        series(m, "gatebot_agent_refusals_total{reason=\"waits\"}")
            + series(m, "gatebot_agent_refusals_total{reason=\"connections\"}")
    };
    let metrics = eventually("mailer's extra long-polls to be refused", async || {
        let m = app.metrics().await;
        (refused(&m) >= 18).then_some(m)
    })
    .await;
    assert_eq!(refused(&metrics), 18);
    // One more is refused at once, naming the limit, and its connection is closed.
    let answer = raw_get(&socket, &format!("/v1/requests/{id}?wait=120")).await;
    assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
    let lower = answer.to_ascii_lowercase();
    assert!(lower.contains("retry-after: 1"), "{answer}");
    assert!(
        answer.contains("\"code\":\"too_many_connections\"")
            && answer.contains("\"limit\":\"queue.max_connections_per_agent\"")
            && answer.contains("agent `mailer` already has 6 requests in flight"),
        "{answer}"
    );
    // Another agent submits at once (bounded: it would hang behind a full socket).
    let boss = app.agent.clone().with_timeout(Duration::from_secs(20));
    let res = boss
        .post(
            "/v1/requests",
            &json!({"agent": "boss", "tool": "query_org_data", "args": {}}),
        )
        .await
        .expect("another agent's submit is answered");
    assert_eq!(res.status, 201, "{:?}", res.body);

    // Pausing mailer closes its six waits, each answered that it is paused.
    pause(&app, "mailer", "flood").await;
    let mut answers: Vec<Value> = Vec::new();
    for p in polls {
        let res = tokio::time::timeout(Duration::from_secs(30), p)
            .await
            .expect("every long-poll returns")
            .unwrap()
            .unwrap();
        answers.push(json!({"status": res.status.as_u16(), "code": res.error_code()}));
    }
    let count = |status: u16, code: &str| {
        answers
            .iter()
            .filter(|a| a["status"] == status && a["code"] == code)
            .count()
    };
    assert_eq!(
        count(429, "too_many_waits") + count(429, "too_many_connections"),
        18,
        "{answers:?}"
    );
    assert_eq!(count(409, "agent_paused"), 6, "{answers:?}");
    let m = app.metrics().await;
    assert!(
        series(&m, "gatebot_agent_refusals_total{reason=\"paused\"}") >= 6,
        "{m}"
    );
    // The request itself still waits for its owner; a new wait is refused as paused.
    let res = app.get(&id, 5.0).await;
    assert_paused(&res, "mailer", "flood");
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
}
