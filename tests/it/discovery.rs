//! Where client commands find the daemon: the agents' snippets of docs/integrations.md
//! and docs/inbox.md, run verbatim from a project directory without a `bot.toml`,
//! reach a running daemon through the user's config, the system's config, or the
//! default socket; and when nothing is anywhere, the deny says where it looked.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::helpers::{spawn_app_with_config, TestApp};
use crate::sandbox::{code_blocks, stderr, stdout, write, Sandbox, BIN};

/// Every agent of the snippets runs each fixture's tool without asking (even the
/// critical ones: the configured always_allow under `none`), so an allow proves the
/// daemon answered.
fn daemon_config(agents_socket: &Path, control_socket: &Path) -> String {
    format!(
        r#"
[queue]
socket = "{}"
control_socket = "{}"

[policy]
tool_approval_mode = "none"

[agents.claude-code]
tier = "autonomous"
always_allow = ["Edit", "Bash", "Write"]

[agents.codex]
tier = "autonomous"
always_allow = ["Bash"]

[agents.gemini]
tier = "autonomous"
always_allow = ["run_shell_command"]
"#,
        agents_socket.display(),
        control_socket.display()
    )
}

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hooks")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

/// A command the docs tell an agent to run, with the hook event it is set up for.
#[derive(Debug, Clone)]
struct Snippet {
    doc: &'static str,
    /// `hooks.EVENT` of the settings file; `None` for the MCP server.
    event: Option<String>,
    argv: Vec<String>,
}

/// Every `gatebot hook …` and `gatebot mcp …` command of the two docs: the hooks'
/// `"command"` in the JSON blocks, `.mcp.json`'s command and args, and the `claude mcp
/// add gatebot -- gatebot mcp …` lines.
fn documented_snippets() -> Vec<Snippet> {
    let mut found = Vec::new();
    for doc in ["docs/integrations.md", "docs/inbox.md"] {
        for (lang, body) in code_blocks(doc) {
            collect(doc, &lang, &body, &mut found);
        }
    }
    found
}

fn collect(doc: &'static str, lang: &str, body: &str, found: &mut Vec<Snippet>) {
    let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
    if lang == "json" {
        let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("{doc}: {e}"));
        if let Some(events) = v["hooks"].as_object() {
            for (event, groups) in events {
                for group in groups.as_array().unwrap() {
                    for hook in group["hooks"].as_array().unwrap() {
                        if let Some(cmd) = hook["command"].as_str() {
                            if cmd.starts_with("gatebot ") {
                                found.push(Snippet {
                                    doc,
                                    event: Some(event.clone()),
                                    argv: words(cmd),
                                });
                            }
                        }
                    }
                }
            }
        }
        if let Some(servers) = v["mcpServers"].as_object() {
            for server in servers.values() {
                let mut argv = vec![server["command"].as_str().unwrap().to_string()];
                argv.extend(
                    server["args"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|a| a.as_str().unwrap().to_string()),
                );
                found.push(Snippet {
                    doc,
                    event: None,
                    argv,
                });
            }
        }
    } else if lang == "sh" {
        for line in body.lines() {
            if let Some((_, cmd)) = line.split_once("-- gatebot mcp") {
                found.push(Snippet {
                    doc,
                    event: None,
                    argv: words(&format!("gatebot mcp{cmd}")),
                });
            }
        }
    }
}

/// Runs `snippet` in `sandbox` (its `gatebot` is this build) and asserts gatebot allowed
/// the call, in the agent's own answer shape.
async fn assert_allowed(sandbox: &Sandbox, snippet: &Snippet) {
    assert_eq!(snippet.argv[0], "gatebot", "{snippet:?}");
    let args: Vec<&str> = snippet.argv[1..].iter().map(String::as_str).collect();
    if args[0] == "mcp" {
        return assert_mcp_allowed(sandbox, snippet, &args).await;
    }
    let (payload, kind) = match (args[1], snippet.event.as_deref()) {
        ("claude-code", Some("PreToolUse")) => ("claude-code-pre-tool-use.json", "pre"),
        ("claude-code", Some("PermissionRequest")) => {
            ("claude-code-permission-request.json", "permission")
        }
        ("codex", Some("PreToolUse")) => ("codex-pre-tool-use.json", "codex-pre"),
        ("gemini", Some("BeforeTool")) => ("gemini-before-tool.json", "gemini"),
        other => panic!("no fixture for {other:?} ({snippet:?})"),
    };
    let out = sandbox.run(&args, &fixture(payload)).await;
    let (text, err) = (stdout(&out), stderr(&out));
    assert!(out.status.success(), "{snippet:?}: {text} {err}");
    let allowed = match kind {
        // Codex refuses an explicit allow from PreToolUse: an allow prints nothing.
        "codex-pre" => text.trim().is_empty(),
        _ => {
            let v: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{snippet:?}: not JSON ({e}): {text} {err}"));
            match kind {
                "pre" => v["hookSpecificOutput"]["permissionDecision"] == "allow",
                "permission" => v["hookSpecificOutput"]["decision"]["behavior"] == "allow",
                _ => v["decision"] == "allow",
            }
        }
    };
    assert!(
        allowed,
        "{} {snippet:?} was not allowed: {text} {err}",
        snippet.doc
    );
}

async fn assert_mcp_allowed(sandbox: &Sandbox, snippet: &Snippet, args: &[&str]) {
    let mut child = sandbox.gatebot(args).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let call: Value = serde_json::from_str(&fixture("mcp-permission-prompt.json")).unwrap();
    for msg in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "request_approval", "arguments": call}}),
    ] {
        stdin
            .write_all(format!("{msg}\n").as_bytes())
            .await
            .unwrap();
    }
    stdin.flush().await.unwrap();
    loop {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the MCP server answered")
            .unwrap()
            .expect("the MCP server is still running");
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == 2 {
            let text = v["result"]["content"][0]["text"].as_str().unwrap();
            let r: Value = serde_json::from_str(text).unwrap();
            assert_eq!(r["behavior"], "allow", "{} {snippet:?}: {r}", snippet.doc);
            return;
        }
    }
}

/// A daemon whose sockets are in `dir` (absolute paths).
async fn daemon_in(dir: &Path) -> (TestApp, PathBuf, String) {
    let (agents, control) = (dir.join("agents.sock"), dir.join("control.sock"));
    let config = daemon_config(&agents, &control);
    let app = spawn_app_with_config(tempfile::tempdir().unwrap(), &config).await;
    (app, agents, config)
}

#[tokio::test]
async fn every_documented_agent_snippet_works_from_a_project_without_a_bot_toml() {
    let snippets = documented_snippets();
    let count = |doc: &str, first: &str| {
        snippets
            .iter()
            .filter(|s| s.doc == doc && s.argv.get(1).map(String::as_str) == Some(first))
            .count()
    };
    // The docs' hooks (Claude Code's two events, Codex, Gemini) and MCP forms are all here.
    assert!(count("docs/integrations.md", "hook") >= 3, "{snippets:?}");
    assert!(count("docs/integrations.md", "mcp") >= 3, "{snippets:?}");
    assert!(count("docs/inbox.md", "hook") >= 1, "{snippets:?}");

    let sandbox = Sandbox::new();
    let (app, agents_socket, config) = daemon_in(sandbox.dir.path()).await;

    // 1. The user's config (~/.config/gatebot/bot.toml): nothing else exists.
    write(&sandbox.user_config(), &config);
    for s in &snippets {
        assert_allowed(&sandbox, s).await;
    }
    std::fs::remove_file(sandbox.user_config()).unwrap();

    // 2. The system's (/etc/gatebot/bot.toml).
    write(&sandbox.system_config(), &config);
    for s in &snippets {
        assert_allowed(&sandbox, s).await;
    }
    std::fs::remove_file(sandbox.system_config()).unwrap();

    // 3. No config file anywhere: the system's default socket, where gatebot.socket
    //    puts it (here a link to the daemon's).
    let default = sandbox.root().join("run/gatebot/gatebot.sock");
    std::fs::create_dir_all(default.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&agents_socket, &default).unwrap();
    for s in &snippets {
        assert_allowed(&sandbox, s).await;
    }
    drop(app);
}

#[tokio::test]
async fn with_nothing_to_find_the_hook_denies_naming_every_place_tried() {
    let sandbox = Sandbox::new();
    let out = sandbox
        .run(
            &["hook", "claude-code", "--agent", "claude-code"],
            &fixture("claude-code-pre-tool-use.json"),
        )
        .await;
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
    let reason = v["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    let (project, home, run, root) = (
        sandbox.project(),
        sandbox.home(),
        sandbox.runtime(),
        sandbox.root(),
    );
    assert_eq!(
        reason,
        format!(
            "[Action not checked] Edit: gatebot could not be asked (gatebot found no config \
             file, no socket and no endpoint; tried, in order: --url / GATEBOT_URL: not set; \
             --socket / GATEBOT_SOCKET: not set; \
             --config / GATEBOT_CONFIG: not set; ./bot.toml ({}/bot.toml): not there; \
             {}/.config/gatebot/bot.toml: not there; {}/etc/gatebot/bot.toml: not there; \
             {}/gatebot/gatebot.sock: not there; {}/run/gatebot/gatebot.sock: not there. \
             Set GATEBOT_CONFIG or GATEBOT_SOCKET (or GATEBOT_URL, for gatebot on another \
             machine) in the agent's environment, or write a config with `gatebot init`). \
             The action was not run.",
            project.display(),
            home.display(),
            root.display(),
            run.display(),
            root.display()
        )
    );

    // The owner's commands say the same, a place a line.
    let out = sandbox.run(&["pending"], "").await;
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("tried, in order:\n  --socket / GATEBOT_SOCKET: not set\n"),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "\n  {}/run/gatebot/gatebot-control.sock: not there\n",
            root.display()
        )),
        "{err}"
    );
}

#[tokio::test]
async fn owner_commands_and_check_config_find_the_users_config_from_anywhere() {
    let sandbox = Sandbox::new();
    let (app, _, config) = daemon_in(sandbox.dir.path()).await;
    write(&sandbox.user_config(), &config);
    let out = sandbox.run(&["pending", "--json"], "").await;
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(v["requests"].is_array(), "{v}");

    let out = sandbox.run(&["check-config"], "").await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with(&format!("{}: ok", sandbox.user_config().display())),
        "{}",
        stdout(&out)
    );
    // ./bot.toml comes first when there is one (the README's quick start).
    write(
        &sandbox.project().join("bot.toml"),
        "[store]\npath = \"x.db\"\n",
    );
    let out = sandbox.run(&["check-config"], "").await;
    assert!(
        stdout(&out).starts_with(&format!(
            "{}: ok",
            sandbox.project().join("bot.toml").display()
        )),
        "{}",
        stdout(&out)
    );
    drop(app);
}

#[tokio::test]
async fn the_daemon_reads_the_users_config_when_started_without_one() {
    let sandbox = Sandbox::new();
    // Relative paths: next to the user's config file.
    write(
        &sandbox.user_config(),
        "[agents.claude-code]\ntier = \"autonomous\"\nalways_allow = [\"Edit\"]\n\n\
         [policy]\ntool_approval_mode = \"none\"\n",
    );
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.arg("run");
    sandbox.env(&mut cmd);
    let mut daemon = cmd
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let socket = sandbox.home().join(".config/gatebot/gatebot.sock");
    for _ in 0..400 {
        if socket.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(socket.exists(), "the daemon did not start");
    let out = sandbox
        .run(
            &["hook", "claude-code", "--agent", "claude-code"],
            &fixture("claude-code-pre-tool-use.json"),
        )
        .await;
    let v: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        v["hookSpecificOutput"]["permissionDecision"], "allow",
        "{v}"
    );
    daemon.start_kill().unwrap();
    let _ = daemon.wait().await;

    // Nowhere to find one: it says where it looked.
    std::fs::remove_file(sandbox.user_config()).unwrap();
    let out = sandbox.run(&["run"], "").await;
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.starts_with("error: gatebot found no config file; tried, in order:\n  --config / GATEBOT_CONFIG: not set\n  ./bot.toml ("),
        "{err}"
    );
    assert!(
        err.ends_with(
            "Write one with `gatebot init`, or name it with --config or GATEBOT_CONFIG.\n"
        ),
        "{err}"
    );
}
