//! `gatebot worker` and `gatebot task …`: the real binary against an in-process daemon,
//! running small `sh` scripts as the agent's command.

use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::process::Command;

use crate::helpers::{eventually, TestApp};
use crate::inbox::{add_ok, start, task, wait_status};

const BIN: &str = env!("CARGO_BIN_EXE_gatebot");

/// `gatebot --socket S ARGS…`, with no inherited gatebot settings.
fn gatebot(socket: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.arg("--socket")
        .arg(socket)
        .args(args)
        .env_remove("GATEBOT_SOCKET")
        .env_remove("GATEBOT_TOKEN")
        .env_remove("GATEBOT_AGENT")
        .env_remove("GATEBOT_TASK_ID")
        .env_remove("GATEBOT_CONFIG")
        .env("GATEBOT_BIN", BIN)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    c
}

fn agents_socket(app: &TestApp) -> std::path::PathBuf {
    app.path().join("gatebot.sock")
}

/// `gatebot worker --agent AGENT --once -- sh -c SCRIPT`, run to its end (at most 60 s).
async fn work_once(app: &TestApp, agent: &str, script: &str) -> Output {
    let child = gatebot(
        &agents_socket(app),
        &[
            "worker", "--agent", agent, "--once", "--", "sh", "-c", script,
        ],
    )
    .current_dir(app.path())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the worker ends within 60 s")
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[tokio::test]
async fn the_worker_runs_the_command_with_the_prompt_and_completes_the_task() {
    let app = start("", "").await;
    let t = add_ok(&app, "say hello to the team").await;
    let id = t["id"].as_str().unwrap();
    let out = work_once(
        &app,
        "claude-code",
        "cat > prompt.txt; env | grep '^GATEBOT_' | sort > env.txt; echo 'working on it'; echo \"hello from $GATEBOT_AGENT\"",
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let t = task(&app, id).await;
    assert_eq!(t["status"], "completed");
    assert_eq!(t["result"], "working on it\nhello from claude-code");
    let prompt = std::fs::read_to_string(app.path().join("prompt.txt")).unwrap();
    assert_eq!(prompt, t["prompt"].as_str().unwrap());
    let env = std::fs::read_to_string(app.path().join("env.txt")).unwrap();
    for want in [
        format!("GATEBOT_TASK_ID={id}"),
        "GATEBOT_TASK_INTENT=other".into(),
        "GATEBOT_AGENT=claude-code".into(),
        format!("GATEBOT_SOCKET={}", agents_socket(&app).display()),
    ] {
        assert!(env.contains(&want), "{want} in {env}");
    }
    assert!(!env.contains("GATEBOT_SESSION_ID"), "{env}");
}

#[tokio::test]
async fn a_command_that_fails_fails_the_task_with_its_stderr() {
    let app = start("", "").await;
    let t = add_ok(&app, "say hello to the team").await;
    let out = work_once(
        &app,
        "claude-code",
        "echo partial; echo 'boom: no network' >&2; exit 3",
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let t = task(&app, t["id"].as_str().unwrap()).await;
    assert_eq!(t["status"], "failed");
    let error = t["error"].as_str().unwrap();
    assert!(error.contains("`sh` exited with status 3"), "{error}");
    assert!(error.contains("boom: no network"), "{error}");
    assert!(
        stderr(&out).contains("boom: no network"),
        "the worker shows stderr"
    );
}

/// `claude -p --output-format json` that fails exits 1 and says why only in its JSON
/// result: that text is the task's error, as data.
#[tokio::test]
async fn claudes_own_error_text_reaches_the_tasks_error() {
    let app = start("", "").await;
    let t = add_ok(&app, "say hello to the team").await;
    let script = r#"cat > /dev/null; printf '%s\n' '{"type":"result","subtype":"error_during_execution","is_error":true,"result":"Credit balance is too low <b>*top up*</b>","session_id":"s-1"}'; exit 1"#;
    let out = work_once(&app, "claude-code", script).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let t = task(&app, t["id"].as_str().unwrap()).await;
    assert_eq!(t["status"], "failed");
    assert_eq!(
        t["error"],
        "`sh` exited with status 1\nthe agent reported an error: Credit balance is too low <b>*top up*</b>",
        "{t}"
    );
    // Without a `result`, Claude's `errors` say it; with stderr too, both are there.
    let t = add_ok(&app, "say hello to the team").await;
    let script = r#"cat > /dev/null; printf '%s\n' '{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["API Error: 529 Overloaded"]}'; echo 'claude: giving up' >&2; exit 1"#;
    let out = work_once(&app, "claude-code", script).await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let t = task(&app, t["id"].as_str().unwrap()).await;
    assert_eq!(
        t["error"],
        "`sh` exited with status 1\nthe agent reported an error: API Error: 529 Overloaded\nclaude: giving up",
        "{t}"
    );
}

#[tokio::test]
async fn a_success_that_reports_a_failure_fails_the_task() {
    let app = start("", "").await;
    let t = add_ok(&app, "say hello to the team").await;
    let out = work_once(
        &app,
        "claude-code",
        "echo 'Posting…'; echo 'slack: Permission denied'",
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let t = task(&app, t["id"].as_str().unwrap()).await;
    assert_eq!(t["status"], "failed");
    assert!(
        t["error"]
            .as_str()
            .unwrap()
            .contains("slack: Permission denied"),
        "{t}"
    );
}

#[tokio::test]
async fn a_command_past_the_intents_timeout_is_stopped_and_the_task_failed() {
    let app = start("[inbox.timeouts]\nother = \"1s\"\n", "").await;
    let t = add_ok(&app, "say hello to the team").await;
    let out = work_once(&app, "claude-code", "echo started; exec sleep 30").await;
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let t = task(&app, t["id"].as_str().unwrap()).await;
    assert_eq!(t["status"], "failed");
    let error = t["error"].as_str().unwrap();
    assert!(
        error.contains("timed out") && error.contains("SIGTERM"),
        "{error}"
    );
    assert!(
        error.contains("started"),
        "the output's end is kept: {error}"
    );
}

#[tokio::test]
async fn questions_at_the_end_wait_for_the_owner_and_the_answer_resumes_the_session() {
    let app = start("", "").await;
    let t = add_ok(&app, "say hello to the team").await;
    let id = t["id"].as_str().unwrap();
    // Claude Code's JSON answer: three questions, and its session.
    let script = r#"cat > /dev/null; printf '%s\n' '{"type":"result","is_error":false,"result":"Before I post:\n1. Which team?\n2. Which channel?\n3. Today or tomorrow?","session_id":"sess-9","total_cost_usd":0.05}'"#;
    let out = work_once(&app, "claude-code", script).await;
    assert_eq!(
        out.status.code(),
        Some(1),
        "not completed: {}",
        stderr(&out)
    );
    let t = task(&app, id).await;
    assert_eq!(t["status"], "waiting");
    assert_eq!(t["question"]["questions"].as_array().unwrap().len(), 3);
    assert_eq!(t["session_id"], "sess-9");

    let answer = gatebot(
        &app.path().join("gatebot-control.sock"),
        &[
            "task",
            "answer",
            &t["short_id"].as_str().unwrap()[..6],
            "ops,",
            "#general,",
            "today",
        ],
    )
    .output()
    .await
    .unwrap();
    assert_eq!(answer.status.code(), Some(0), "{}", stderr(&answer));
    assert!(String::from_utf8_lossy(&answer.stdout).starts_with("queued"));

    let out = work_once(
        &app,
        "claude-code",
        "cat > resumed.txt; echo \"$GATEBOT_SESSION_ID\" > session.txt; echo posted",
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let stdin = std::fs::read_to_string(app.path().join("resumed.txt")).unwrap();
    assert!(stdin.contains("- Which channel?"), "{stdin}");
    assert!(stdin.contains("<<<\nops, #general, today\n>>>"), "{stdin}");
    let session = std::fs::read_to_string(app.path().join("session.txt")).unwrap();
    assert_eq!(session.trim(), "sess-9");
    assert_eq!(task(&app, id).await["status"], "completed");
}

#[tokio::test]
async fn output_lines_become_progress_while_the_command_runs() {
    let app = start("", "").await;
    let t = add_ok(&app, "say hello to the team").await;
    let id = t["id"].as_str().unwrap().to_string();
    let worker = {
        let app_path = app.path().to_path_buf();
        let socket = agents_socket(&app);
        tokio::spawn(async move {
            let script = "echo 'step one'; while [ ! -e go ]; do sleep 0.1; done; echo finished";
            gatebot(
                &socket,
                &[
                    "worker",
                    "--agent",
                    "claude-code",
                    "--once",
                    "--",
                    "sh",
                    "-c",
                    script,
                ],
            )
            .current_dir(app_path)
            .output()
            .await
            .unwrap()
        })
    };
    let running = eventually("progress on the task", async || {
        let t = task(&app, &id).await;
        (t["progress"] == "step one").then_some(t)
    })
    .await;
    assert_eq!(running["status"], "running");
    std::fs::write(app.path().join("go"), "").unwrap();
    let out = tokio::time::timeout(Duration::from_secs(60), worker)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(task(&app, &id).await["result"], "step one\nfinished");
}

#[tokio::test]
async fn cancelling_a_running_task_stops_its_command() {
    let app = start("", "").await;
    let t = add_ok(&app, "say hello to the team").await;
    let id = t["id"].as_str().unwrap().to_string();
    let worker = {
        let app_path = app.path().to_path_buf();
        let socket = agents_socket(&app);
        tokio::spawn(async move {
            gatebot(
                &socket,
                &[
                    "worker",
                    "--agent",
                    "claude-code",
                    "--once",
                    "--",
                    "sh",
                    "-c",
                    "echo $$ > pid; exec sleep 60",
                ],
            )
            .current_dir(app_path)
            .output()
            .await
            .unwrap()
        })
    };
    wait_status(&app, &id, "running").await;
    let cancel = gatebot(
        &app.path().join("gatebot-control.sock"),
        &["task", "cancel", &id],
    )
    .output()
    .await
    .unwrap();
    assert_eq!(cancel.status.code(), Some(0), "{}", stderr(&cancel));
    let out = tokio::time::timeout(Duration::from_secs(60), worker)
        .await
        .expect("the worker notices within a few heartbeats")
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("cancelled"), "{}", stderr(&out));
    let pid: i32 = std::fs::read_to_string(app.path().join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: signal 0 only checks whether the process exists.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    assert!(!alive, "the command was stopped");
    assert_eq!(task(&app, &id).await["status"], "cancelled");
}

#[tokio::test]
async fn requests_made_by_the_hook_inside_a_task_carry_its_id() {
    let app = start("", "").await;
    let res = app
        .owner
        .post(
            "/v1/tasks",
            &json!({"text": "look up the Berlin contacts", "agent": "boss"}),
        )
        .await
        .unwrap();
    let id = res.body["id"].as_str().unwrap().to_string();
    let script = r#"printf '%s' '{"hook_event_name":"PreToolUse","tool_name":"query_org_data","tool_input":{"q":"contacts in Berlin"},"session_id":"s","tool_use_id":"toolu_1"}' | "$GATEBOT_BIN" hook claude-code"#;
    let out = work_once(&app, "boss", script).await;
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let t = task(&app, &id).await;
    let result: Value = serde_json::from_str(t["result"].as_str().unwrap()).unwrap();
    assert_eq!(result["hookSpecificOutput"]["permissionDecision"], "allow");
    let list = app.owner.get("/v1/requests?agent=boss").await.unwrap().body;
    let reqs = list["requests"].as_array().unwrap();
    assert_eq!(reqs.len(), 1, "{list}");
    assert_eq!(reqs[0]["task_id"], id.as_str());
    assert_eq!(reqs[0]["tool"], "query_org_data");
}

/// The recipe's agent has a token (issue 18): the worker claims with it, and the hooks
/// its command starts get it too, however the worker was given it.
#[tokio::test]
async fn the_hooks_inside_a_task_act_with_the_workers_token() {
    let app = start("", "").await;
    let res = app
        .owner
        .post(
            "/v1/tasks",
            &json!({"text": "look up the Berlin contacts", "agent": "secure"}),
        )
        .await
        .unwrap();
    let id = res.body["id"].as_str().unwrap().to_string();
    let script = r#"printf '%s' '{"hook_event_name":"PreToolUse","tool_name":"query_org_data","tool_input":{"q":"contacts in Berlin"},"session_id":"s","tool_use_id":"toolu_1"}' | "$GATEBOT_BIN" hook claude-code"#;
    let child = gatebot(
        &agents_socket(&app),
        &[
            "worker",
            "--agent",
            "secure",
            "--token",
            "secure-token-123",
            "--once",
            "--",
            "sh",
            "-c",
            script,
        ],
    )
    .current_dir(app.path())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the worker ends within 60 s")
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let t = task(&app, &id).await;
    let result: Value = serde_json::from_str(t["result"].as_str().unwrap()).unwrap();
    assert_eq!(
        result["hookSpecificOutput"]["permissionDecision"], "allow",
        "{result}"
    );
    let list = app
        .owner
        .get("/v1/requests?agent=secure")
        .await
        .unwrap()
        .body;
    assert_eq!(list["requests"][0]["task_id"], id.as_str(), "{list}");
}

#[tokio::test]
async fn a_worker_for_an_agent_gatebot_refuses_exits_with_the_reason() {
    let app = start("", "").await;
    let out = work_once(&app, "researcher", "true").await;
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("unauthorized"), "{}", stderr(&out));
    let out = gatebot(
        &agents_socket(&app),
        &["worker", "--agent", "x", "--concurrency", "0", "--", "true"],
    )
    .output()
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--concurrency must be 1 to 64"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn the_owners_task_commands_print_and_exit_by_status() {
    let app = start("", "").await;
    let control = app.path().join("gatebot-control.sock");
    let out = gatebot(
        &control,
        &[
            "task",
            "add",
            "fix",
            "the",
            "off-by-one",
            "in",
            "src/retry.rs",
            "--json",
        ],
    )
    .output()
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let t: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(t["text"], "fix the off-by-one in src/retry.rs");
    assert_eq!(t["status"], "pending");
    let short = t["short_id"].as_str().unwrap();

    let out = gatebot(&control, &["task", "status", short])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "open: {}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with(&format!("pending  task {short}")),
        "{text}"
    );
    assert!(
        text.contains(&format!("gatebot decide {short} queue")),
        "{text}"
    );

    let out = gatebot(&control, &["decide", short, "reject"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("rejected"));
    let out = gatebot(&control, &["task", "status", short, "--wait", "5s"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let out = gatebot(&control, &["task", "cancel", short])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "already finished");
    assert!(stderr(&out).contains("is rejected"), "{}", stderr(&out));

    let out = gatebot(&control, &["tasks"]).output().await.unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "No open tasks."
    );
    let out = gatebot(&control, &["tasks", "--all"])
        .output()
        .await
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("rejected"));

    let out = gatebot(&control, &["task", "add", "   "])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("the task is empty"),
        "{}",
        stderr(&out)
    );
    let out = gatebot(&control, &["task", "add", "hi", "--intent", "email"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("unknown intent"), "{}", stderr(&out));
}

#[tokio::test]
async fn a_worker_runs_tasks_side_by_side_and_stops_on_sigterm_without_reporting() {
    let app = start("", "").await;
    let a = add_ok(&app, "say hello to team A").await;
    let b = add_ok(&app, "say hello to team B").await;
    let mut worker = gatebot(
        &agents_socket(&app),
        &[
            "worker",
            "--agent",
            "claude-code",
            "--concurrency",
            "2",
            "--",
            "sh",
            "-c",
            "while [ ! -e go ]; do sleep 0.1; done; echo done",
        ],
    )
    .current_dir(app.path())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // Both run at once.
    for t in [&a, &b] {
        wait_status(&app, t["id"].as_str().unwrap(), "running").await;
    }
    std::fs::write(app.path().join("go"), "").unwrap();
    for t in [&a, &b] {
        wait_status(&app, t["id"].as_str().unwrap(), "completed").await;
    }
    std::fs::remove_file(app.path().join("go")).unwrap();
    let c = add_ok(&app, "say hello to team C").await;
    let c_id = c["id"].as_str().unwrap();
    wait_status(&app, c_id, "running").await;
    crate::helpers::signal(worker.id().unwrap(), libc::SIGTERM);
    let status = tokio::time::timeout(Duration::from_secs(60), worker.wait())
        .await
        .expect("the worker stops")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    // Its task is not reported: the lease will lapse and queue it again.
    let t = task(&app, c_id).await;
    assert_eq!(t["status"], "running");
    assert!(t.get("error").is_none(), "{t}");
}
