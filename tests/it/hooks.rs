//! Golden tests: each agent's sample payload (tests/fixtures/hooks) → the request
//! gatebot submits, and a verdict → the JSON the agent reads.

use std::path::PathBuf;

use gatebot::hooks::Verdict;
use gatebot::hooks::{parse, render, Kind};
use serde_json::Value;

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hooks")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json_fixture(name: &str) -> Value {
    serde_json::from_str(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn allow(tool: &str) -> Verdict {
    Verdict {
        allow: true,
        message: format!("[Action approved] {tool}: approved by alice"),
        updated_input: None,
    }
}

fn deny(tool: &str) -> Verdict {
    Verdict {
        allow: false,
        message: format!("[Action rejected] {tool}: not on a Friday. The action was not run."),
        updated_input: None,
    }
}

/// Checks one hook fixture against its `.request`, `.allow` and `.deny` goldens.
fn golden(kind: Kind, name: &str) {
    let parsed = parse(kind, &fixture(&format!("{name}.json"))).unwrap();
    let body = serde_json::to_value(parsed.call.submit_body("test-agent")).unwrap();
    assert_eq!(
        body,
        json_fixture(&format!("{name}.request.json")),
        "{name}"
    );
    let tool = parsed.call.tool.clone();
    // `null` in a fixture: the hook prints nothing.
    assert_eq!(
        render(&parsed, &allow(&tool)).unwrap_or(Value::Null),
        json_fixture(&format!("{name}.allow.json")),
        "{name} allow"
    );
    assert_eq!(
        render(&parsed, &deny(&tool)).unwrap_or(Value::Null),
        json_fixture(&format!("{name}.deny.json")),
        "{name} deny"
    );
}

#[test]
fn claude_code_permission_request_golden() {
    golden(Kind::ClaudeCode, "claude-code-permission-request");
}

#[test]
fn claude_code_pre_tool_use_golden() {
    golden(Kind::ClaudeCode, "claude-code-pre-tool-use");
}

#[test]
fn codex_permission_request_golden() {
    golden(Kind::Codex, "codex-permission-request");
}

/// What `codex exec` sends (it never sends PermissionRequest): deny is a
/// `permissionDecision`, allow prints nothing.
#[test]
fn codex_pre_tool_use_golden() {
    golden(Kind::Codex, "codex-pre-tool-use");
}

#[test]
fn gemini_before_tool_golden() {
    golden(Kind::Gemini, "gemini-before-tool");
}

#[test]
fn mcp_permission_prompt_golden() {
    let call =
        gatebot::client::mcp::parse_arguments(&json_fixture("mcp-permission-prompt.json")).unwrap();
    let body = serde_json::to_value(call.submit_body("test-agent")).unwrap();
    assert_eq!(body, json_fixture("mcp-permission-prompt.request.json"));
    assert_eq!(
        gatebot::client::mcp::permission_result(&call, &allow("Write")),
        json_fixture("mcp-permission-prompt.allow.json")
    );
    assert_eq!(
        gatebot::client::mcp::permission_result(&call, &deny("Write")),
        json_fixture("mcp-permission-prompt.deny.json")
    );
}

#[test]
fn a_payload_of_another_agent_or_event_is_refused() {
    let gemini = fixture("gemini-before-tool.json");
    assert!(parse(Kind::ClaudeCode, &gemini).is_err());
    assert!(parse(Kind::Codex, &gemini).is_err());
    assert!(parse(Kind::Gemini, &fixture("codex-permission-request.json")).is_err());
    assert!(parse(Kind::ClaudeCode, "not json").is_err());
}
