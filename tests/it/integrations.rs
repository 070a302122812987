//! The agent integrations end to end: `gatebot hook …` and `gatebot mcp` as real
//! processes against an in-process daemon, the daemon's http hook route (Unix and
//! TCP), and tier guidance.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use gatebot::config::Config;
use hyper::StatusCode;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::helpers::{eventually, gatebot_at, spawn_app, spawn_app_in, TestApp};

/// Every call of a supervised agent waits for a human.
const EXTRA: &str = "[agents.claude-code]\ntier = \"supervised\"\n";

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hooks")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

fn sockets(app: &TestApp) -> (PathBuf, PathBuf) {
    let c = Config::load(&app.config_path).unwrap();
    (c.queue.socket, c.queue.control_socket)
}

/// `gatebot --socket SOCKET ARGS…` ([`gatebot_at`]) with stdin piped too: a hook reads
/// its event there.
fn gatebot(socket: &Path, args: &[&str]) -> Command {
    let mut c = gatebot_at(socket, args);
    c.stdin(Stdio::piped());
    c
}

/// Starts a hook with `input` on its stdin (then closed).
async fn start_hook(socket: &Path, args: &[&str], input: &str) -> Child {
    start(gatebot(socket, args), input).await
}

/// Starts `cmd` with `input` on its stdin (then closed).
async fn start(mut cmd: Command, input: &str) -> Child {
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    child
}

/// A "daemon" that accepts connections and never answers: the connections are
/// held open (and never read) until the test ends.
fn silent_daemon(dir: &Path) -> PathBuf {
    let path = dir.join("silent.sock");
    let listener = tokio::net::UnixListener::bind(&path).unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    path
}

/// Runs `gatebot decide ID VERB [--reason R]` on the owners' socket, as an owner would.
async fn decide_cli(app: &TestApp, id: &str, verb: &str, reason: Option<&str>) {
    let (_, control) = sockets(app);
    let mut args = vec!["decide", id, verb];
    if let Some(r) = reason {
        args.extend(["--reason", r]);
    }
    let out = gatebot(&control, &args).output().await.unwrap();
    assert!(out.status.success(), "gatebot decide failed: {out:?}");
}

async fn finish(child: Child) -> (Output, Value) {
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the hook answered")
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let answer = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {stdout:?}; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out, answer)
}

/// The one pending request, once it exists.
async fn pending_one(app: &TestApp) -> Value {
    for _ in 0..1000 {
        let res = app.owner.get("/v1/requests?status=pending").await.unwrap();
        if let Some(r) = res.body["requests"].as_array().and_then(|a| a.first()) {
            return r.clone();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no request became pending");
}

#[tokio::test]
async fn the_claude_code_hook_allows_what_the_owner_approves() {
    let app = spawn_app(EXTRA).await;
    let (socket, _) = sockets(&app);
    let child = start_hook(
        &socket,
        &["hook", "claude-code"],
        &fixture("claude-code-permission-request.json"),
    )
    .await;
    let req = pending_one(&app).await;
    assert_eq!(req["agent"], "claude-code");
    assert_eq!(req["tool"], "Bash");
    assert_eq!(req["summary"], "Clean the build and publish the package");
    assert_eq!(req["risk"]["score"], "critical", "rm -rf is scanned: {req}");
    decide_cli(&app, req["short_id"].as_str().unwrap(), "approve", None).await;
    let (out, answer) = finish(child).await;
    assert!(out.status.success());
    assert_eq!(
        answer,
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest",
               "decision": {"behavior": "allow"}}})
    );
}

#[tokio::test]
async fn the_claude_code_hook_denies_with_the_reason_given_to_gatebot_decide() {
    let app = spawn_app(EXTRA).await;
    let (socket, _) = sockets(&app);
    let child = start_hook(
        &socket,
        &["hook", "claude-code", "--agent", "claude-code"],
        &fixture("claude-code-pre-tool-use.json"),
    )
    .await;
    let req = pending_one(&app).await;
    assert_eq!(req["tool"], "Edit");
    let short = req["short_id"].as_str().unwrap();
    decide_cli(&app, short, "deny", Some("discounts need finance")).await;
    let (out, answer) = finish(child).await;
    assert!(out.status.success());
    let o = &answer["hookSpecificOutput"];
    assert_eq!(o["hookEventName"], "PreToolUse");
    assert_eq!(o["permissionDecision"], "deny");
    let reason = o["permissionDecisionReason"].as_str().unwrap();
    assert!(reason.contains("discounts need finance"), "{reason}");
    assert!(reason.contains("was not run"), "{reason}");
}

#[tokio::test]
async fn the_hook_denies_when_the_daemon_is_unreachable() {
    let dir = tempfile::tempdir().unwrap();
    let child = start_hook(
        &dir.path().join("nothing-here.sock"),
        &["hook", "claude-code"],
        &fixture("claude-code-permission-request.json"),
    )
    .await;
    let (out, answer) = finish(child).await;
    assert!(out.status.success());
    let d = &answer["hookSpecificOutput"]["decision"];
    assert_eq!(d["behavior"], "deny");
    let m = d["message"].as_str().unwrap();
    assert!(m.contains("could not be asked"), "{m}");
    assert!(m.contains("was not run"), "{m}");
}

#[tokio::test]
async fn the_hook_denies_in_time_when_the_daemon_accepts_but_never_answers() {
    let dir = tempfile::tempdir().unwrap();
    let socket = silent_daemon(dir.path());
    let started = Instant::now();
    let child = start_hook(
        &socket,
        &["hook", "claude-code", "--timeout", "2s"],
        &fixture("claude-code-pre-tool-use.json"),
    )
    .await;
    let (out, answer) = finish(child).await;
    let took = started.elapsed();
    assert!(took < Duration::from_secs(20), "answered after {took:?}");
    assert!(out.status.success());
    let o = &answer["hookSpecificOutput"];
    assert_eq!(o["permissionDecision"], "deny");
    let m = o["permissionDecisionReason"].as_str().unwrap();
    assert!(m.contains("did not answer within 2 s"), "{m}");
    assert!(m.contains("was not run"), "{m}");
}

#[tokio::test]
async fn a_tool_call_over_max_body_bytes_is_denied_with_how_to_allow_it() {
    let app = spawn_app(EXTRA).await;
    let (socket, _) = sockets(&app);
    let big = "x".repeat(100 * 1024);
    let input = json!({"session_id": "s", "hook_event_name": "PermissionRequest",
        "tool_name": "Write", "tool_input": {"file_path": "/tmp/big.txt", "content": big}});
    let child = start_hook(&socket, &["hook", "claude-code"], &input.to_string()).await;
    let (out, answer) = finish(child).await;
    assert!(out.status.success());
    let d = &answer["hookSpecificOutput"]["decision"];
    assert_eq!(d["behavior"], "deny");
    let m = d["message"].as_str().unwrap();
    assert!(
        m.starts_with("[Action not checked] Write: the tool call is "),
        "{m}"
    );
    assert!(
        m.contains("gatebot's limit of 65536 bytes ([queue] max_body_bytes)"),
        "{m}"
    );
    assert!(m.contains("raise max_body_bytes"), "{m}");
    assert!(m.contains("was not run"), "{m}");
    // Nothing was queued: the owner never saw it, so nobody can approve it unseen.
    let pending = app.owner.get("/v1/requests?status=pending").await.unwrap();
    assert_eq!(pending.body["requests"], json!([]));
}

#[tokio::test]
async fn the_agent_name_can_come_from_gatebot_agent() {
    let extra = format!("{EXTRA}\n[agents.from-env]\ntier = \"supervised\"\n");
    let app = spawn_app(&extra).await;
    let (socket, _) = sockets(&app);
    let input = fixture("claude-code-permission-request.json");

    let mut cmd = gatebot(&socket, &["hook", "claude-code", "--timeout", "30s"]);
    cmd.env("GATEBOT_AGENT", "from-env");
    let child = start(cmd, &input).await;
    let req = pending_one(&app).await;
    assert_eq!(req["agent"], "from-env");
    decide_cli(&app, req["short_id"].as_str().unwrap(), "deny", None).await;
    finish(child).await;

    // --agent wins over the environment.
    let mut cmd = gatebot(&socket, &["hook", "claude-code", "--agent", "claude-code"]);
    cmd.env("GATEBOT_AGENT", "from-env");
    let child = start(cmd, &input).await;
    let req = pending_one(&app).await;
    assert_eq!(req["agent"], "claude-code");
    decide_cli(&app, req["short_id"].as_str().unwrap(), "deny", None).await;
    finish(child).await;

    // `gatebot mcp` reads it too.
    let mut mcp = Mcp::start_with(&socket, &["mcp"], Some("from-env"));
    mcp.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "request_approval",
        "arguments": {"tool_name": "Bash", "input": {"command": "make"}}}}),
    )
    .await;
    let req = pending_one(&app).await;
    assert_eq!(req["agent"], "from-env");
    decide_cli(&app, req["short_id"].as_str().unwrap(), "approve", None).await;
    assert_eq!(tool_result(&mcp.recv().await)["behavior"], "allow");
}

#[tokio::test]
async fn the_hook_denies_and_withdraws_the_request_before_its_budget_runs_out() {
    let app = spawn_app(EXTRA).await;
    let (socket, _) = sockets(&app);
    let started = Instant::now();
    let child = start_hook(
        &socket,
        &["hook", "claude-code", "--timeout", "2s"],
        &fixture("claude-code-permission-request.json"),
    )
    .await;
    let req = pending_one(&app).await;
    let (out, answer) = finish(child).await;
    // The agent's own timeout would let the action run: the deny must come first.
    // (The hook answers half a second before its budget; the margin covers starting
    // the process.)
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3), "answered after {took:?}");
    assert!(out.status.success());
    let d = &answer["hookSpecificOutput"]["decision"];
    assert_eq!(d["behavior"], "deny");
    let m = d["message"].as_str().unwrap();
    assert!(m.contains("no human decided within 2 s"), "{m}");
    assert!(m.contains("was not run"), "{m}");
    // Withdrawn, so a late approval cannot contradict the deny the agent got.
    let now = app.get(req["id"].as_str().unwrap(), 0.0).await;
    assert_eq!(now.body["status"], "cancelled");
}

#[tokio::test]
async fn the_codex_and_gemini_hooks_answer_in_their_own_shapes() {
    let app = spawn_app(EXTRA).await;
    let (socket, _) = sockets(&app);
    let child = start_hook(
        &socket,
        &["hook", "codex", "--agent", "claude-code"],
        &fixture("codex-permission-request.json"),
    )
    .await;
    let req = pending_one(&app).await;
    assert_eq!(req["summary"], "Push the rebased branch");
    app.decide(req["id"].as_str().unwrap(), "approve", None)
        .await;
    let (_, answer) = finish(child).await;
    assert_eq!(
        answer["hookSpecificOutput"]["decision"]["behavior"],
        "allow"
    );

    let child = start_hook(
        &socket,
        &["hook", "gemini", "--agent", "claude-code"],
        &fixture("gemini-before-tool.json"),
    )
    .await;
    let req = pending_one(&app).await;
    app.decide(
        req["id"].as_str().unwrap(),
        "deny",
        Some("not the orders table"),
    )
    .await;
    let (_, answer) = finish(child).await;
    assert_eq!(answer["decision"], "deny");
    assert!(answer["reason"]
        .as_str()
        .unwrap()
        .contains("not the orders table"));
}

/// `codex exec` forces `approval: never`, so only PreToolUse gates it. Codex refuses an
/// explicit `allow` there: an approved call gets an empty stdout, a denied one the deny.
#[tokio::test]
async fn the_codex_hook_gates_pre_tool_use_for_codex_exec() {
    let app = spawn_app(EXTRA).await;
    let (socket, _) = sockets(&app);
    let input = fixture("codex-pre-tool-use.json");
    let child = start_hook(
        &socket,
        &["hook", "codex", "--agent", "claude-code"],
        &input,
    )
    .await;
    let req = pending_one(&app).await;
    assert_eq!(req["tool"], "Bash");
    assert_eq!(req["summary"], "Bash: git push --force origin main");
    decide_cli(&app, req["short_id"].as_str().unwrap(), "approve", None).await;
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the hook answered")
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        out.stdout.is_empty(),
        "an allowed PreToolUse prints nothing: {:?}",
        String::from_utf8_lossy(&out.stdout)
    );

    // The same tool_use_id is the same request: use a new call for the deny.
    let input = input.replace("call_0B2hZk3YqN8c1Rw4", "call_second");
    let child = start_hook(
        &socket,
        &["hook", "codex", "--agent", "claude-code"],
        &input,
    )
    .await;
    let req = pending_one(&app).await;
    decide_cli(
        &app,
        req["short_id"].as_str().unwrap(),
        "deny",
        Some("not on main"),
    )
    .await;
    let (out, answer) = finish(child).await;
    assert_eq!(out.status.code(), Some(0));
    let o = &answer["hookSpecificOutput"];
    assert_eq!(o["hookEventName"], "PreToolUse", "{answer}");
    assert_eq!(o["permissionDecision"], "deny", "{answer}");
    let reason = o["permissionDecisionReason"].as_str().unwrap();
    assert!(reason.contains("not on main"), "{reason}");
    assert!(reason.contains("was not run"), "{reason}");
}

#[tokio::test]
async fn the_codex_and_gemini_hooks_deny_when_the_daemon_is_unreachable() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("nothing-here.sock");
    let child = start_hook(
        &socket,
        &["hook", "codex"],
        &fixture("codex-permission-request.json"),
    )
    .await;
    let (out, answer) = finish(child).await;
    assert!(out.status.success());
    let d = &answer["hookSpecificOutput"]["decision"];
    assert_eq!(d["behavior"], "deny", "{answer}");
    assert!(d["message"]
        .as_str()
        .unwrap()
        .contains("could not be asked"));

    let child = start_hook(
        &socket,
        &["hook", "gemini"],
        &fixture("gemini-before-tool.json"),
    )
    .await;
    let (out, answer) = finish(child).await;
    assert!(out.status.success());
    assert_eq!(answer["decision"], "deny", "{answer}");
    let reason = answer["reason"].as_str().unwrap();
    assert!(reason.contains("could not be asked"), "{reason}");
    assert!(reason.contains("was not run"), "{reason}");
}

/// Codex and Gemini CLI read exit 2 with a reason on stderr as a deny (so does Claude Code).
#[tokio::test]
async fn every_hook_given_malformed_input_exits_2_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    for kind in ["claude-code", "codex", "gemini"] {
        let child = start_hook(
            &dir.path().join("x.sock"),
            &["hook", kind],
            "{\"hook_event_name\": \"PermissionRe",
        )
        .await;
        let out = child.wait_with_output().await.unwrap();
        assert_eq!(out.status.code(), Some(2), "{kind}: {out:?}");
        assert!(out.stdout.is_empty(), "{kind}: nothing on stdout");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("not valid JSON"), "{kind}: {err}");
    }
}

#[tokio::test]
async fn a_hook_given_something_else_exits_2_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let child = start_hook(
        &dir.path().join("x.sock"),
        &["hook", "claude-code"],
        "{\"hook_event_name\": \"Stop\"}",
    )
    .await;
    let out = child.wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Stop"));
}

struct Mcp {
    _child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Mcp {
    fn start(socket: &Path) -> Mcp {
        Mcp::start_with(socket, &["mcp", "--agent", "claude-code"], None)
    }

    /// `gatebot ARGS…`, with `GATEBOT_AGENT` set when `agent` is.
    fn start_with(socket: &Path, args: &[&str], agent: Option<&str>) -> Mcp {
        let mut cmd = gatebot(socket, args);
        if let Some(a) = agent {
            cmd.env("GATEBOT_AGENT", a);
        }
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Mcp {
            _child: child,
            stdin,
            lines,
        }
    }

    async fn send(&mut self, msg: Value) {
        self.send_raw(&format!("{msg}\n")).await;
    }

    async fn send_raw(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
            .await
            .expect("the MCP server answered")
            .unwrap()
            .expect("the MCP server is still running");
        serde_json::from_str(&line).unwrap()
    }

    /// Sends a request and returns its response.
    async fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let r = self.recv().await;
        assert_eq!(r["id"], id, "{r}");
        r
    }
}

fn tool_result(r: &Value) -> Value {
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    serde_json::from_str(text).unwrap()
}

#[tokio::test]
async fn the_mcp_server_answers_the_permission_prompt_tool() {
    let app = spawn_app(EXTRA).await;
    let (socket, _) = sockets(&app);
    let mut mcp = Mcp::start(&socket);

    let init = mcp
        .call(
            1,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "0"}}),
        )
        .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "gatebot");
    assert!(init["result"]["capabilities"]["tools"].is_object());
    mcp.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;

    let list = mcp.call(2, "tools/list", json!({})).await;
    let tools = list["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["name"], "request_approval");
    assert_eq!(
        tools[0]["inputSchema"]["required"],
        json!(["tool_name", "input"])
    );

    let unknown = mcp.call(3, "resources/list", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601);

    // Approve, with progress while waiting.
    let input = json!({"command": "npm publish", "description": "Release 1.2"});
    mcp.send(
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
        "name": "request_approval",
        "arguments": {"tool_name": "Bash", "input": input, "tool_use_id": "toolu_1"},
        "_meta": {"progressToken": "tok-4"}}}),
    )
    .await;
    let progress = mcp.recv().await;
    assert_eq!(progress["method"], "notifications/progress", "{progress}");
    assert_eq!(progress["params"]["progressToken"], "tok-4");
    // The server still answers while the call waits.
    let pong = mcp.call(5, "ping", json!({})).await;
    assert_eq!(pong["result"], json!({}));
    let req = pending_one(&app).await;
    assert_eq!(req["summary"], "Release 1.2");
    app.decide(req["id"].as_str().unwrap(), "approve", None)
        .await;
    let done = mcp.recv().await;
    assert_eq!(done["id"], 4, "{done}");
    assert_eq!(
        tool_result(&done),
        json!({"behavior": "allow", "updatedInput": input})
    );

    // Deny with a reason.
    mcp.send(
        json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {
        "name": "request_approval",
        "arguments": {"tool_name": "Write", "input": {"file_path": "/etc/hosts"}}}}),
    )
    .await;
    let req = pending_one(&app).await;
    app.decide(
        req["id"].as_str().unwrap(),
        "deny",
        Some("not system files"),
    )
    .await;
    let done = mcp.recv().await;
    assert_eq!(done["id"], 6, "no progress without a progressToken: {done}");
    let r = tool_result(&done);
    assert_eq!(r["behavior"], "deny");
    assert!(r["message"].as_str().unwrap().contains("not system files"));

    let bad = mcp
        .call(
            7,
            "tools/call",
            json!({"name": "request_approval", "arguments": {"input": {}}}),
        )
        .await;
    assert_eq!(bad["error"]["code"], -32602);

    // The client gives up on a waiting call: its request is withdrawn.
    mcp.send(
        json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
        "name": "request_approval",
        "arguments": {"tool_name": "Bash", "input": {"command": "make release"}},
        "_meta": {"progressToken": 8}}}),
    )
    .await;
    assert_eq!(mcp.recv().await["method"], "notifications/progress");
    let req = pending_one(&app).await;
    mcp.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                    "params": {"requestId": 8, "reason": "user interrupted"}}),
    )
    .await;
    let now = app.get(req["id"].as_str().unwrap(), 10.0).await;
    assert_eq!(now.body["status"], "cancelled", "{:?}", now.body);
}

#[tokio::test]
async fn the_mcp_tool_denies_when_the_daemon_is_down_and_survives_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let mut mcp = Mcp::start(&dir.path().join("nothing-here.sock"));
    let init = mcp
        .call(1, "initialize", json!({"protocolVersion": "2025-06-18"}))
        .await;
    assert!(init["result"]["capabilities"]["tools"].is_object());

    let done = mcp
        .call(
            2,
            "tools/call",
            json!({"name": "request_approval",
                   "arguments": {"tool_name": "Bash", "input": {"command": "make deploy"}}}),
        )
        .await;
    let r = tool_result(&done);
    assert_eq!(r["behavior"], "deny", "{done}");
    let m = r["message"].as_str().unwrap();
    assert!(m.contains("could not be asked"), "{m}");
    assert!(m.contains("was not run"), "{m}");

    // A line that is not JSON gets a parse error, and the server keeps serving.
    mcp.send_raw("{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\"\n")
        .await;
    let err = mcp.recv().await;
    assert_eq!(err["error"]["code"], -32700, "{err}");
    let pong = mcp.call(4, "ping", json!({})).await;
    assert_eq!(pong["result"], json!({}));
}

#[tokio::test]
async fn the_mcp_tool_denies_in_time_when_the_daemon_never_answers() {
    let dir = tempfile::tempdir().unwrap();
    let socket = silent_daemon(dir.path());
    let mut mcp = Mcp::start_with(&socket, &["mcp", "--timeout", "2s"], None);
    let started = Instant::now();
    let done = mcp
        .call(
            1,
            "tools/call",
            json!({"name": "request_approval",
                   "arguments": {"tool_name": "Bash", "input": {"command": "make"}}}),
        )
        .await;
    let took = started.elapsed();
    assert!(took < Duration::from_secs(20), "answered after {took:?}");
    let r = tool_result(&done);
    assert_eq!(r["behavior"], "deny", "{done}");
    assert!(r["message"]
        .as_str()
        .unwrap()
        .contains("did not answer within 2 s"));
}

#[tokio::test]
async fn the_daemon_serves_claude_codes_http_hook() {
    let app = spawn_app(EXTRA).await;
    let client = app.agent.clone();
    let body: Value = serde_json::from_str(&fixture("claude-code-pre-tool-use.json")).unwrap();
    let call = tokio::spawn(async move {
        client
            .post("/v1/hooks/claude-code?agent=claude-code&wait=60", &body)
            .await
            .unwrap()
    });
    let req = pending_one(&app).await;
    assert_eq!(req["tool"], "Edit");
    app.decide(req["id"].as_str().unwrap(), "deny", Some("freeze week"))
        .await;
    let res = call.await.unwrap();
    assert_eq!(res.status, StatusCode::OK, "{:?}", res.body);
    let o = &res.body["hookSpecificOutput"];
    assert_eq!(o["permissionDecision"], "deny");
    assert!(o["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .contains("freeze week"));

    // A zero budget withdraws at once and says so.
    let body: Value =
        serde_json::from_str(&fixture("claude-code-permission-request.json")).unwrap();
    let res = app
        .agent
        .post("/v1/hooks/claude-code?agent=claude-code&wait=0", &body)
        .await
        .unwrap();
    let d = &res.body["hookSpecificOutput"]["decision"];
    assert_eq!(d["behavior"], "deny");
    assert!(d["message"].as_str().unwrap().contains("withdrew"), "{d}");
}

/// Claude Code runs the tool on any answer but a 2xx: every failure is a 200 deny.
#[tokio::test]
async fn the_http_hook_denies_with_a_200_whatever_goes_wrong() {
    let app = spawn_app(EXTRA).await;
    let post = |path: &'static str, body: Vec<u8>| {
        let client = app.agent.clone();
        async move {
            let res = client
                .send(hyper::Method::POST, path, Some(body))
                .await
                .unwrap();
            assert_eq!(res.status, StatusCode::OK, "{path}: {:?}", res.body);
            res.body
        }
    };
    let pre_tool_use = |body: &Value| {
        let o = &body["hookSpecificOutput"];
        assert_eq!(o["hookEventName"], "PreToolUse", "{body}");
        assert_eq!(o["permissionDecision"], "deny", "{body}");
        o["permissionDecisionReason"].as_str().unwrap().to_string()
    };

    // A body over max_body_bytes (64 KiB here), in the shape of its event. Claude Code
    // sends the event and tool names before the input.
    let big = format!(
        r#"{{"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Write", "tool_input": {{"file_path": "/tmp/big", "content": "{}"}}}}"#,
        "x".repeat(200 * 1024)
    );
    let body = post("/v1/hooks/claude-code", big.into_bytes()).await;
    let m = pre_tool_use(&body);
    assert!(
        m.starts_with("[Action not checked] Write: the tool call is "),
        "{m}"
    );
    assert!(m.contains("65536 bytes ([queue] max_body_bytes)"), "{m}");
    assert!(m.contains("raise max_body_bytes"), "{m}");

    // Malformed JSON: the event is still read from its start.
    let cut = br#"{"hook_event_name": "PermissionRequest", "tool_name": "Bash", "tool_input": {"#;
    let body = post("/v1/hooks/claude-code", cut.to_vec()).await;
    let d = &body["hookSpecificOutput"]["decision"];
    assert_eq!(
        body["hookSpecificOutput"]["hookEventName"],
        "PermissionRequest"
    );
    assert_eq!(d["behavior"], "deny", "{body}");
    assert!(
        d["message"].as_str().unwrap().contains("not valid JSON"),
        "{body}"
    );

    // Another event, or no event: the generic block, which names no event.
    for input in [
        json!({"hook_event_name": "Stop"}),
        json!({"tool_name": "Bash"}),
    ] {
        let body = post("/v1/hooks/claude-code", input.to_string().into_bytes()).await;
        assert_eq!(body["decision"], "block", "{body}");
        assert!(body.get("hookSpecificOutput").is_none(), "{body}");
        assert!(
            body["reason"].as_str().unwrap().contains("was not run"),
            "{body}"
        );
    }
    let body = post(
        "/v1/hooks/claude-code",
        json!({"hook_event_name": "Stop"}).to_string().into_bytes(),
    )
    .await;
    assert!(
        body["reason"].as_str().unwrap().contains("`Stop`"),
        "{body}"
    );

    // A bad wait, and an unknown agent.
    let pre = fixture("claude-code-pre-tool-use.json").into_bytes();
    let m = pre_tool_use(&post("/v1/hooks/claude-code?wait=soon", pre.clone()).await);
    assert!(m.contains("`wait`"), "{m}");
    let m = pre_tool_use(&post("/v1/hooks/claude-code?agent=nobody", pre).await);
    assert!(m.contains("unknown agent `nobody`"), "{m}");
    let pending = app.owner.get("/v1/requests?status=pending").await.unwrap();
    assert_eq!(pending.body["requests"], json!([]), "nothing was submitted");
}

async fn tcp_post(
    addr: std::net::SocketAddr,
    path: &str,
    body: &str,
    token: Option<&str>,
) -> String {
    use tokio::io::AsyncReadExt;
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{auth}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}

#[tokio::test]
async fn the_http_hook_over_tcp_needs_the_agents_token() {
    let app = spawn_app("[queue]\nlisten = \"127.0.0.1:0\"\n").await;
    let addr = app.tcp.unwrap();
    let body = json!({"hook_event_name": "PreToolUse", "tool_name": "query_org_data",
                      "tool_input": {"q": "contacts"}, "tool_use_id": "toolu_tcp"})
    .to_string();
    let path = "/v1/hooks/claude-code?agent=secure";
    // Refused, but as a 200 deny: any other status would let Claude Code run the tool.
    let no_token = tcp_post(addr, path, &body, None).await;
    assert!(no_token.starts_with("HTTP/1.1 200"), "{no_token}");
    assert!(
        no_token.contains("\"permissionDecision\":\"deny\""),
        "{no_token}"
    );
    assert!(no_token.contains("has a token: send it as"), "{no_token}");
    let wrong = tcp_post(addr, path, &body, Some("other-token-456")).await;
    assert!(wrong.starts_with("HTTP/1.1 200"), "{wrong}");
    assert!(wrong.contains("\"permissionDecision\":\"deny\""), "{wrong}");
    assert!(wrong.contains("not agent `secure`'s token"), "{wrong}");
    assert!(
        !wrong.contains("other-token-456"),
        "the token is never echoed: {wrong}"
    );
    // An agent without a token cannot use TCP at all.
    let tokenless = tcp_post(addr, "/v1/hooks/claude-code?agent=mailer", &body, None).await;
    assert!(tokenless.starts_with("HTTP/1.1 200"), "{tokenless}");
    assert!(
        tokenless.contains("\"permissionDecision\":\"deny\""),
        "{tokenless}"
    );
    let ok = tcp_post(addr, path, &body, Some("secure-token-123")).await;
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    assert!(ok.contains("\"permissionDecision\":\"allow\""), "{ok}");
}

#[tokio::test]
async fn agents_can_read_their_tier_guidance() {
    let app = spawn_app("").await;
    let res = app.agent.get("/v1/agents/mailer").await.unwrap();
    assert_eq!(res.status, StatusCode::OK, "{:?}", res.body);
    assert_eq!(res.body["tier"], "semi_autonomous");
    assert_eq!(res.body["require_approval_for"], json!(["send_bulk_email"]));
    assert_eq!(res.body["always_allow"], json!([]));
    assert!(res.body["guidance"]
        .as_str()
        .unwrap()
        .contains("semi-autonomous mode"));
    assert_eq!(res.body["tool_approval_mode"], "dangerous");
    // The org mode and [tools] shape the paragraph: send_email is destructive.
    let boss = app.agent.get("/v1/agents/boss").await.unwrap();
    let g = boss.body["guidance"].as_str().unwrap();
    assert!(g.contains("calls to destructive tools (send_email)"), "{g}");

    // "Always allow" shows up in the list.
    let sub = app
        .submit_ok("mailer", "create_contact", json!({"name": "Ann"}))
        .await;
    assert_eq!(sub["status"], "pending", "{sub}");
    let d = app
        .decide(sub["id"].as_str().unwrap(), "approve-always", None)
        .await;
    assert!(d.status.is_success(), "{:?}", d.body);
    let res = app.owner.get("/v1/agents/mailer").await.unwrap();
    assert_eq!(res.body["always_allow"], json!(["create_contact"]));

    // An agent with a token must present it; an unknown agent is refused.
    let res = app.agent.get("/v1/agents/secure").await.unwrap();
    assert_eq!(res.status, StatusCode::UNAUTHORIZED);
    let res = app.agent.get("/v1/agents/nobody").await.unwrap();
    assert_eq!(res.status, StatusCode::FORBIDDEN);

    // `gatebot agent-guidance` prints the paragraph.
    let (_, control) = sockets(&app);
    let out = gatebot(&control, &["agent-guidance", "intern"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("supervised mode"), "{text}");
    assert!(text.contains("did not run"), "{text}");
}

/// Every pending request, once there are `n`.
async fn pending_n(app: &TestApp, n: usize) -> Vec<Value> {
    eventually(&format!("{n} pending requests"), async || {
        let res = app.owner.get("/v1/requests?status=pending").await.ok()?;
        let list = res.body["requests"].as_array()?.clone();
        (list.len() == n).then_some(list)
    })
    .await
}

/// A restart (an upgrade, `systemctl restart`) keeps every pending request, so the
/// clients waiting on them reconnect and keep waiting within their own budgets.
#[tokio::test]
async fn waiting_clients_survive_a_daemon_restart() {
    let app = spawn_app(EXTRA).await;
    let (socket, control) = sockets(&app);
    let hook = start_hook(
        &socket,
        &["hook", "claude-code", "--timeout", "120s"],
        &fixture("claude-code-permission-request.json"),
    )
    .await;
    let hooked = pending_one(&app).await;
    let hooked_id = hooked["id"].as_str().unwrap().to_string();
    let status = start(
        gatebot(&control, &["status", &hooked_id, "--wait", "120s"]),
        "",
    )
    .await;
    let ask = start(
        gatebot(
            &socket,
            &[
                "ask",
                "--agent",
                "intern",
                "--tool",
                "create_contact",
                "--json",
            ],
        ),
        "",
    )
    .await;
    let mut mcp = Mcp::start_with(
        &socket,
        &["mcp", "--agent", "claude-code", "--timeout", "120s"],
        None,
    );
    mcp.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "request_approval",
        "arguments": {"tool_name": "Bash", "input": {"command": "make release"}}}}),
    )
    .await;
    pending_n(&app, 3).await;
    let (mut ask, ask_err) = stderr_of(ask);
    let (mut status, status_err) = stderr_of(status);

    let dir = app.stop().await;
    // Down: the waiting clients notice before the daemon is back.
    for (what, err) in [("ask", &ask_err), ("status", &status_err)] {
        eventually(&format!("{what} to lose gatebot"), async || {
            err.lock().unwrap().contains("lost gatebot").then_some(())
        })
        .await;
    }
    let app = spawn_app_in(dir, EXTRA).await;
    for req in pending_n(&app, 3).await {
        app.decide_ok(req["id"].as_str().unwrap(), "approve", None)
            .await;
    }

    let (out, answer) = finish(hook).await;
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        answer["hookSpecificOutput"]["decision"]["behavior"], "allow",
        "{answer}"
    );
    let done = mcp.recv().await;
    assert_eq!(done["id"], 1, "{done}");
    assert_eq!(tool_result(&done)["behavior"], "allow", "{done}");
    for (what, child, err) in [
        ("ask", &mut ask, &ask_err),
        ("status --wait", &mut status, &status_err),
    ] {
        let code = tokio::time::timeout(Duration::from_secs(60), child.wait())
            .await
            .expect("it answered")
            .unwrap()
            .code();
        let stderr = eventually("its stderr to end", async || {
            let e = err.lock().unwrap().clone();
            e.contains("\n<eof>").then_some(e)
        })
        .await;
        assert_eq!(code, Some(0), "{what}: {stderr}");
        assert!(
            stderr.contains("reconnected to gatebot"),
            "{what}: {stderr}"
        );
    }
}

/// Reads `child`'s stderr as it comes (`<eof>` marks its end), so a test can wait for
/// a line while the process still runs.
fn stderr_of(mut child: Child) -> (Child, std::sync::Arc<std::sync::Mutex<String>>) {
    let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let sink = text.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let mut t = sink.lock().unwrap();
            t.push_str(&line);
            t.push('\n');
        }
        sink.lock().unwrap().push_str("\n<eof>");
    });
    (child, text)
}

/// Sends `sig` to `child`.
/// Claude Code SIGTERMs a hook whose timeout ran out, Gemini CLI SIGTERMs then
/// SIGKILLs it, Ctrl-C reaches both: the hook withdraws its request and denies
/// instead of leaving it pending for an owner to approve later.
#[tokio::test]
async fn a_killed_hook_withdraws_its_request_and_denies() {
    let app = spawn_app(EXTRA).await;
    let (socket, _) = sockets(&app);
    for (kind, fixture_name, sig) in [
        (
            "claude-code",
            "claude-code-permission-request.json",
            libc::SIGTERM,
        ),
        ("gemini", "gemini-before-tool.json", libc::SIGHUP),
        ("codex", "codex-pre-tool-use.json", libc::SIGINT),
    ] {
        let child = start_hook(
            &socket,
            &["hook", kind, "--agent", "claude-code", "--timeout", "300s"],
            &fixture(fixture_name),
        )
        .await;
        let req = pending_one(&app).await;
        let id = req["id"].as_str().unwrap();
        crate::helpers::signal(child.id().expect("still running"), sig);
        let (out, answer) = finish(child).await;
        assert_eq!(out.status.code(), Some(0), "{kind}: {out:?}");
        let message = match kind {
            "claude-code" => {
                let d = &answer["hookSpecificOutput"]["decision"];
                assert_eq!(d["behavior"], "deny", "{answer}");
                d["message"].as_str().unwrap().to_string()
            }
            "gemini" => {
                assert_eq!(answer["decision"], "deny", "{answer}");
                answer["reason"].as_str().unwrap().to_string()
            }
            _ => {
                let o = &answer["hookSpecificOutput"];
                assert_eq!(o["permissionDecision"], "deny", "{answer}");
                o["permissionDecisionReason"].as_str().unwrap().to_string()
            }
        };
        assert!(
            message.contains("stopped before anyone decided"),
            "{kind}: {message}"
        );
        assert!(message.contains("withdrew request"), "{kind}: {message}");
        assert!(message.contains("was not run"), "{kind}: {message}");
        assert_eq!(app.get(id, 0.0).await.body["status"], "cancelled", "{kind}");
    }

    // Killed before it could read its input: nothing was asked, exit 2 (a block).
    let mut waiting = gatebot(&socket, &["hook", "claude-code"]).spawn().unwrap();
    let _stdin_open = waiting.stdin.take();
    // Until it handles SIGTERM, SIGTERM would just kill it: wait for the handler
    // (the kernel lists caught signals in SigCgt), not for a time.
    eventually("the hook to handle SIGTERM", async || {
        let status = std::fs::read_to_string(format!("/proc/{}/status", waiting.id()?)).ok()?;
        let caught = status.lines().find_map(|l| l.strip_prefix("SigCgt:"))?;
        let mask = u64::from_str_radix(caught.trim(), 16).ok()?;
        (mask & (1 << (libc::SIGTERM - 1)) != 0).then_some(())
    })
    .await;
    crate::helpers::signal(waiting.id().expect("still running"), libc::SIGTERM);
    let out = tokio::time::timeout(Duration::from_secs(30), waiting.wait_with_output())
        .await
        .expect("the hook exited")
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("stopped before the hook input"));
}

/// `gatebot mcp` killed with a call waiting: the call's request is withdrawn and the
/// call answered with a deny, then the server exits though stdin is still open.
#[tokio::test]
async fn a_killed_mcp_server_withdraws_its_waiting_calls() {
    let app = spawn_app(EXTRA).await;
    let (socket, _) = sockets(&app);
    let mut mcp = Mcp::start(&socket);
    mcp.send(
        json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": "request_approval",
        "arguments": {"tool_name": "Bash", "input": {"command": "make deploy"}}}}),
    )
    .await;
    let req = pending_one(&app).await;
    crate::helpers::signal(mcp._child.id().expect("still running"), libc::SIGINT);
    let done = mcp.recv().await;
    assert_eq!(done["id"], 9, "{done}");
    let r = tool_result(&done);
    assert_eq!(r["behavior"], "deny", "{done}");
    assert!(
        r["message"].as_str().unwrap().contains("withdrew request"),
        "{done}"
    );
    assert_eq!(
        app.get(req["id"].as_str().unwrap(), 0.0).await.body["status"],
        "cancelled"
    );
    let exited = tokio::time::timeout(Duration::from_secs(30), mcp._child.wait())
        .await
        .expect("the server exited with stdin still open")
        .unwrap();
    assert_eq!(exited.code(), Some(0));
}

#[tokio::test]
async fn an_owners_edit_reaches_claude_code_as_updated_input_and_other_clients_as_a_denial() {
    let app = spawn_app(EXTRA).await;
    let (socket, _) = sockets(&app);
    let child = start_hook(
        &socket,
        &["hook", "claude-code"],
        &fixture("claude-code-pre-tool-use.json"),
    )
    .await;
    let req = pending_one(&app).await;
    let id = req["id"].as_str().unwrap().to_string();
    // Not an object: refused, nothing decided.
    let bad = app
        .engine
        .approve_edited(
            &id,
            json!("rm -rf /"),
            "alice".into(),
            gatebot::approval::Via::Cli,
            false,
        )
        .await;
    assert!(bad.unwrap_err().to_string().contains("JSON object"));
    let edited = json!({"command": "git status", "description": "Only look"});
    let (_, verdict) = app.engine.score_edit(&id, edited.clone()).await.unwrap();
    // Scored as a new request of the agent's would be (its tier asks for every call).
    assert!(verdict.reason.contains("supervised"), "{verdict:?}");
    let a = app
        .engine
        .approve_edited(
            &id,
            edited.clone(),
            "alice".into(),
            gatebot::approval::Via::Cli,
            false,
        )
        .await
        .unwrap();
    assert_eq!(a.status.as_str(), "approved");
    let (_, answer) = finish(child).await;
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "allow",
        "{answer}"
    );
    assert_eq!(
        answer["hookSpecificOutput"]["updatedInput"], edited,
        "{answer}"
    );
    // The trail has both versions.
    let rows = app.audit_rows(&id).await;
    let decided = rows.iter().find(|r| r["event"] == "decided").unwrap();
    assert_eq!(decided["detail"]["edited_args"], edited);
    assert_eq!(decided["detail"]["asked_args"], req["args"]);

    // `gatebot ask` cannot take an edited call back: it is denied with the call to make.
    let (id, _) = app
        .submit_pending(
            json!({"agent": "claude-code", "tool": "Bash", "args": {"command": "git push"}}),
        )
        .await;
    let a = app
        .engine
        .approve_edited(
            &id,
            json!({"command": "git push --dry-run"}),
            "alice".into(),
            gatebot::approval::Via::Cli,
            false,
        )
        .await
        .unwrap();
    assert_eq!(a.status.as_str(), "rejected");
    let reason = a.decision_reason.unwrap();
    assert!(
        reason.contains(r#"{"command":"git push --dry-run"}"#),
        "{reason}"
    );
    assert!(
        reason.contains("runs once without asking again"),
        "{reason}"
    );
    // The denial made a single-use grant of exactly the edited call, audited with it.
    let grants = app.engine.grants(None, false).await.unwrap();
    assert_eq!(grants.len(), 1, "{grants:?}");
    assert_eq!(grants[0].uses_left, Some(1));
    assert!(grants[0].expires_at.is_some());
    let events = app.audit_events(&id).await;
    assert!(events.contains(&"grant_added".to_string()), "{events:?}");

    // Two copies of the edited call at once (one with its keys written otherwise): the
    // grant lets exactly one through; the other asks, as does any later copy, and a
    // call that differs at all never used it.
    let other = app
        .submit(json!({"agent": "claude-code", "tool": "Bash",
                       "args": {"command": "git push --dry-run", "timeout": 5}}))
        .await;
    assert_eq!(other.body["status"], "pending", "{:?}", other.body);
    let call = json!({"agent": "claude-code", "tool": "Bash",
                      "args": {"command": "git push --dry-run"}});
    let (first, second) = tokio::join!(app.submit(call.clone()), app.submit(call.clone()));
    let mut statuses = [
        first.body["status"].as_str().unwrap().to_string(),
        second.body["status"].as_str().unwrap().to_string(),
    ];
    statuses.sort();
    assert_eq!(
        statuses,
        ["allowed", "pending"],
        "{:?} {:?}",
        first.body,
        second.body
    );
    let allowed = if first.body["status"] == "allowed" {
        &first
    } else {
        &second
    };
    let why = allowed.body["policy_reason"].as_str().unwrap_or_default();
    assert!(
        why.contains("an owner approved exactly this call"),
        "{}",
        allowed.body
    );
    let again = app.submit(call).await;
    assert_eq!(again.body["status"], "pending", "{:?}", again.body);
    assert!(app.engine.grants(None, false).await.unwrap().is_empty());
    let used = &app.engine.grants(None, true).await.unwrap()[0];
    assert_eq!(used.uses_left, Some(0));
    assert!(used.until_words(0).contains("used"));
}

#[tokio::test]
async fn gatebot_decide_approve_with_args_runs_the_edited_call_in_the_waiting_hook() {
    let app = spawn_app(EXTRA).await;
    let (socket, control) = sockets(&app);
    let child = start_hook(
        &socket,
        &["hook", "claude-code"],
        &fixture("claude-code-permission-request.json"),
    )
    .await;
    let req = pending_one(&app).await;
    let short = req["short_id"].as_str().unwrap().to_string();
    let file = app.path().join("edited.json");
    let run = |args: Vec<String>| {
        let control = control.clone();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            gatebot(&control, &args).output().await.unwrap()
        }
    };
    let f = file.to_str().unwrap().to_string();
    // Not JSON, not an object, or with another verb: refused, nothing decided.
    std::fs::write(&file, "git status").unwrap();
    let out = run(vec![
        "decide".into(),
        short.clone(),
        "approve".into(),
        "--args".into(),
        f.clone(),
    ])
    .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not JSON"),
        "{out:?}"
    );
    std::fs::write(&file, r#"{"command": "git status"}"#).unwrap();
    let out = run(vec![
        "decide".into(),
        short.clone(),
        "deny".into(),
        "--args".into(),
        f.clone(),
    ])
    .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--args goes with approve alone"),
        "{out:?}"
    );
    assert_eq!(pending_one(&app).await["short_id"], short.as_str());
    let out = run(vec![
        "decide".into(),
        short.clone(),
        "approve".into(),
        "--args".into(),
        f,
    ])
    .await;
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("as edited"),
        "{out:?}"
    );
    let (_, answer) = finish(child).await;
    assert_eq!(
        answer["hookSpecificOutput"]["decision"],
        json!({"behavior": "allow", "updatedInput": {"command": "git status"}}),
        "{answer}"
    );
}
