//! `gatebot mcp`: a stdio MCP server with one tool, `request_approval`, shaped for
//! Claude Code's `--permission-prompt-tool`.
//!
//! The protocol subset is small enough to speak directly (JSON-RPC 2.0, one JSON
//! message per line on stdin/stdout, logs on stderr):
//! 1. `initialize` → server info and the `tools` capability; the client's protocol
//!    version is echoed when gatebot knows it, else gatebot's newest is offered.
//! 2. `notifications/initialized` and other notifications → no answer.
//! 3. `ping` → `{}`; `tools/list` → the one tool and its input schema.
//! 4. `tools/call` with `{tool_name, input, tool_use_id?}` → submitted as the agent,
//!    answered when decided (or when the budget ends) with one text content item
//!    holding `{"behavior":"allow","updatedInput":<input>}` or
//!    `{"behavior":"deny","message":"…"}`. Calls run concurrently, so `ping` is
//!    answered while one waits. With `_meta.progressToken`, a waiting call sends
//!    `notifications/progress` when it starts waiting and every
//!    [`crate::hooks::WAIT_SLICE`], so the client does not time it out as idle.
//! 5. `notifications/cancelled` for a waiting call, or the client closing stdin,
//!    withdraws its gatebot request, so nobody is asked to decide for a caller
//!    that is gone. So does the server being told to stop ([`McpOptions::stop`]:
//!    SIGTERM, SIGINT or SIGHUP): each waiting call withdraws its request and is
//!    answered with a deny, within a second, and the server returns.
//! 6. Errors: -32700 parse error, -32600 invalid request, -32601 unknown method,
//!    -32602 bad params (unknown tool, missing `tool_name`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::hook::DaemonGate;
use super::Client;
use crate::hooks::{resolve_until_stopped, Budget, ToolCall, Verdict};

/// The tool's name; Claude Code refers to it as `mcp__<server>__request_approval`.
pub const TOOL_NAME: &str = "request_approval";
/// How long withdrawing a request may take when the client gave up on its call.
const WITHDRAW_TIMEOUT: Duration = Duration::from_secs(5);
/// Protocol versions gatebot can speak, newest first.
const PROTOCOL_VERSIONS: &[&str] = &["2025-06-18", "2025-03-26", "2024-11-05"];

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

/// How the server submits requests.
#[derive(Debug, Clone)]
pub struct McpOptions {
    pub agent: String,
    pub budget: Duration,
    /// The client of the agents' socket or endpoints, with the agent's token, or why
    /// there is none (then every call is denied).
    pub client: Result<Client, String>,
    /// Fires when the server must stop (the client killed it, or Ctrl-C).
    pub stop: CancellationToken,
    /// The inbox task the agent runs (`GATEBOT_TASK_ID`), named on every request.
    pub task_id: Option<String>,
}

/// Longest a stopping server waits for its calls to withdraw and answer: their own
/// bound ([`crate::hooks::STOP_SUBMIT_GRACE`] + [`crate::hooks::STOP_WITHDRAW`]) and a
/// margin to write the answers.
const STOP_DRAIN: Duration = Duration::from_millis(950);

/// Serves MCP on `input`/`output` until `input` ends.
pub async fn serve<R, W>(opts: McpOptions, input: R, output: W) -> std::io::Result<()>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
    let writer = tokio::spawn(async move {
        let mut output = output;
        while let Some(msg) = rx.recv().await {
            let mut line = msg.to_string();
            line.push('\n');
            output.write_all(line.as_bytes()).await?;
            output.flush().await?;
        }
        Ok::<_, std::io::Error>(())
    });
    let mut calls = JoinSet::new();
    let mut waiting: HashMap<String, (tokio::task::AbortHandle, Slot)> = HashMap::new();
    let mut withdrawals = JoinSet::new();
    let mut lines = input.lines();
    loop {
        let line = tokio::select! {
            line = lines.next_line() => line?,
            _ = opts.stop.cancelled() => {
                // Each waiting call sees the same token: it withdraws and answers deny.
                let _ = tokio::time::timeout(STOP_DRAIN, async {
                    while calls.join_next().await.is_some() {}
                })
                .await;
                calls.abort_all();
                drop(tx);
                // The client may be gone; answers it cannot read are no error now.
                let _ = tokio::time::timeout(STOP_DRAIN, writer).await;
                return Ok(());
            }
        };
        let Some(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let msg: Value = match serde_json::from_str(&line) {
            Ok(m) => m,
            Err(e) => {
                let _ = tx.send(error(
                    Value::Null,
                    PARSE_ERROR,
                    &format!("parse error: {e}"),
                ));
                continue;
            }
        };
        match dispatch(&opts, msg, &tx) {
            Dispatch::Reply(r) => {
                let _ = tx.send(r);
            }
            Dispatch::Call(key, slot, fut) => {
                waiting.insert(key, (calls.spawn(fut), slot));
            }
            Dispatch::Cancel(key) => {
                if let Some((handle, slot)) = waiting.remove(&key) {
                    withdraw(&opts, &handle, &slot, &mut withdrawals);
                }
            }
            Dispatch::Nothing => {}
        }
        // Forget finished calls.
        waiting.retain(|_, (h, _)| !h.is_finished());
    }
    // The client hung up: nobody is left to read answers.
    for (handle, slot) in waiting.values() {
        withdraw(&opts, handle, slot, &mut withdrawals);
    }
    calls.abort_all();
    while withdrawals.join_next().await.is_some() {}
    drop(tx);
    writer.await.map_err(std::io::Error::other)?
}

/// The gatebot request id of a waiting call, once it is known.
type Slot = Arc<Mutex<Option<String>>>;

enum Dispatch {
    Reply(Value),
    /// A tool call: its JSON-RPC id (as text), its request slot, and its work.
    Call(
        String,
        Slot,
        std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
    ),
    /// The client gave up on the call with this JSON-RPC id.
    Cancel(String),
    Nothing,
}

/// Stops a waiting call and withdraws its request, if it has one still pending.
fn withdraw(
    opts: &McpOptions,
    handle: &tokio::task::AbortHandle,
    slot: &Slot,
    tasks: &mut JoinSet<()>,
) {
    handle.abort();
    let id = slot.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let (Some(id), Ok(client)) = (id, &opts.client) {
        let client = client.clone().with_timeout(WITHDRAW_TIMEOUT);
        tasks.spawn(async move {
            // Already settled is fine: then there is nothing to withdraw.
            let _ = client
                .post_made(&format!("/v1/requests/{id}/cancel"), &json!({}))
                .await;
        });
    }
}

fn dispatch(opts: &McpOptions, msg: Value, tx: &mpsc::UnboundedSender<Value>) -> Dispatch {
    let id = msg.get("id").cloned();
    let method = msg.get("method").and_then(Value::as_str);
    let (Some(method), true) = (method, msg.get("jsonrpc") == Some(&json!("2.0"))) else {
        // A response from the client (we send no requests) or garbage.
        if msg.get("result").is_some() || msg.get("error").is_some() {
            return Dispatch::Nothing;
        }
        return Dispatch::Reply(error(
            id.unwrap_or(Value::Null),
            INVALID_REQUEST,
            "invalid request: expected a JSON-RPC 2.0 object with `method`",
        ));
    };
    let Some(id) = id else {
        if method == "notifications/cancelled" {
            if let Some(r) = msg["params"].get("requestId") {
                return Dispatch::Cancel(r.to_string());
            }
        }
        // Other notifications (initialized, …) need no answer.
        return Dispatch::Nothing;
    };
    let params = msg.get("params").cloned().unwrap_or(json!({}));
    match method {
        "initialize" => {
            let asked = params["protocolVersion"].as_str().unwrap_or_default();
            let version = PROTOCOL_VERSIONS
                .iter()
                .find(|v| **v == asked)
                .unwrap_or(&PROTOCOL_VERSIONS[0]);
            Dispatch::Reply(result(
                id,
                json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": false}},
                    "serverInfo": {"name": "gatebot", "version": env!("CARGO_PKG_VERSION")},
                    "instructions": "request_approval asks gatebot (and, when needed, a human) \
                        whether a tool call may run.",
                }),
            ))
        }
        "ping" => Dispatch::Reply(result(id, json!({}))),
        "tools/list" => Dispatch::Reply(result(id, json!({"tools": [tool_definition()]}))),
        "tools/call" => match call_arguments(&params) {
            Err(message) => Dispatch::Reply(error(id, INVALID_PARAMS, &message)),
            Ok(call) => {
                let progress = params["_meta"]["progressToken"].clone();
                let (opts, tx) = (opts.clone(), tx.clone());
                let slot = Slot::default();
                let key = id.to_string();
                let request = slot.clone();
                Dispatch::Call(
                    key,
                    slot,
                    Box::pin(async move {
                        let text = approve(&opts, &call, progress, &tx, &request).await;
                        let _ = tx.send(result(
                            id,
                            json!({"content": [{"type": "text", "text": text}], "isError": false}),
                        ));
                    }),
                )
            }
        },
        other => Dispatch::Reply(error(
            id,
            METHOD_NOT_FOUND,
            &format!("method not found: {other}"),
        )),
    }
}

/// The `request_approval` tool as `tools/list` shows it.
#[must_use]
pub fn tool_definition() -> Value {
    json!({
        "name": TOOL_NAME,
        "description": "Ask gatebot whether a tool call may run. Returns JSON text: \
            {\"behavior\":\"allow\",\"updatedInput\":{…}} or {\"behavior\":\"deny\",\"message\":\"…\"}. \
            A denied, expired or withdrawn action was not run.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "tool_name": {"type": "string", "description": "The tool that wants to run."},
                "input": {"type": "object", "description": "The tool's arguments."},
                "tool_use_id": {"type": "string", "description": "The tool call's id, if any."}
            },
            "required": ["tool_name", "input"]
        }
    })
}

fn call_arguments(params: &Value) -> Result<ToolCall, String> {
    match params.get("name").and_then(Value::as_str) {
        Some(TOOL_NAME) => {}
        Some(other) => return Err(format!("unknown tool `{other}`; the tool is `{TOOL_NAME}`")),
        None => return Err("`name` is required".into()),
    }
    parse_arguments(&params.get("arguments").cloned().unwrap_or(json!({})))
}

/// The permission-prompt tool's arguments `{tool_name, input, tool_use_id?}` as a call.
pub fn parse_arguments(args: &Value) -> Result<ToolCall, String> {
    let tool = args
        .get("tool_name")
        .and_then(Value::as_str)
        .filter(|t| !t.trim().is_empty())
        .ok_or("`arguments.tool_name` is required and must be a string")?;
    let input = args.get("input").cloned().unwrap_or(json!({}));
    if !input.is_object() {
        return Err("`arguments.input` must be an object".into());
    }
    Ok(ToolCall::new(
        tool,
        input,
        args.get("tool_use_id").and_then(Value::as_str),
    ))
}

/// Decides one call; the tool result's text.
async fn approve(
    opts: &McpOptions,
    call: &ToolCall,
    progress: Value,
    tx: &mpsc::UnboundedSender<Value>,
    request: &Slot,
) -> String {
    let verdict = match &opts.client {
        Err(e) => Verdict::unreachable(&call.tool, e),
        Ok(client) => {
            let gate = DaemonGate {
                client: client.clone(),
            };
            let mut n = 0u64;
            let mut body = call.submit_body(&opts.agent);
            body.task_id = opts.task_id.clone();
            // Resent to another endpoint, the call must find the same request.
            if body.idempotency_key.is_none() {
                body.idempotency_key = Some(super::fresh_idempotency_key());
            }
            // The permission tool's answer carries `updatedInput`: an edited call fits.
            body.accepts_edits = true;
            resolve_until_stopped(
                &gate,
                &body,
                Budget::new(opts.budget, tokio::time::Instant::now()),
                |view, elapsed| {
                    *request.lock().unwrap_or_else(|e| e.into_inner()) = Some(view.id.clone());
                    if progress.is_null() {
                        return;
                    }
                    n += 1;
                    let _ = tx.send(json!({
                        "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": {
                            "progressToken": progress,
                            "progress": n,
                            "message": format!(
                                "waiting for a human to decide request {} ({}s so far)",
                                view.short_id,
                                elapsed.as_secs()
                            ),
                        }
                    }));
                },
                &opts.stop,
            )
            .await
        }
    };
    permission_result(call, &verdict).to_string()
}

/// The permission-prompt tool's answer for `verdict`.
#[must_use]
pub fn permission_result(call: &ToolCall, verdict: &Verdict) -> Value {
    if verdict.allow {
        // The call as an owner edited and approved it, else as asked.
        let input = verdict.updated_input.as_ref().unwrap_or(&call.args);
        json!({"behavior": "allow", "updatedInput": input})
    } else {
        json!({"behavior": "deny", "message": verdict.message})
    }
}

fn result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> McpOptions {
        McpOptions {
            agent: "a".into(),
            budget: Duration::from_secs(1),
            client: Err("no socket".into()),
            stop: CancellationToken::new(),
            task_id: None,
        }
    }

    fn reply(msg: Value) -> Value {
        let (tx, _rx) = mpsc::unbounded_channel();
        match dispatch(&opts(), msg, &tx) {
            Dispatch::Reply(r) => r,
            Dispatch::Call(..) => panic!("expected a reply, got a call"),
            Dispatch::Cancel(_) => panic!("expected a reply, got a cancel"),
            Dispatch::Nothing => Value::Null,
        }
    }

    #[test]
    fn unknown_methods_get_method_not_found() {
        let r = reply(json!({"jsonrpc": "2.0", "id": 7, "method": "resources/list"}));
        assert_eq!(r["id"], 7);
        assert_eq!(r["error"]["code"], METHOD_NOT_FOUND);
    }

    #[test]
    fn notifications_get_no_answer() {
        let r = reply(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert_eq!(r, Value::Null);
    }

    #[test]
    fn bad_tool_calls_get_invalid_params() {
        for params in [
            json!({"name": "other", "arguments": {"tool_name": "Bash", "input": {}}}),
            json!({"name": TOOL_NAME, "arguments": {"input": {}}}),
            json!({"name": TOOL_NAME, "arguments": {"tool_name": "Bash", "input": "rm"}}),
        ] {
            let r =
                reply(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}));
            assert_eq!(r["error"]["code"], INVALID_PARAMS, "{r}");
        }
    }

    #[test]
    fn a_message_without_a_method_is_an_invalid_request() {
        let r = reply(json!({"jsonrpc": "2.0", "id": 3}));
        assert_eq!(r["error"]["code"], INVALID_REQUEST);
    }

    #[test]
    fn an_unknown_protocol_version_is_answered_with_ours() {
        let r = reply(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "1999-01-01"}}));
        assert_eq!(r["result"]["protocolVersion"], PROTOCOL_VERSIONS[0]);
        let r = reply(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-03-26"}}));
        assert_eq!(r["result"]["protocolVersion"], "2025-03-26");
    }
}
