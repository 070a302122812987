//! Set-up in a few commands: `gatebot init` writes a config that passes check-config,
//! `gatebot connect telegram` finds the owner on a fake Telegram, `gatebot hooks
//! install|status` edits the agents' own settings files (in the shapes the docs show,
//! keeping what is there, once, `--dry-run` writing nothing, hostile files untouched).
//! Everything runs in a [`Sandbox`]: no real home directory or `/etc`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::fake_telegram::FakeTelegram;
use crate::sandbox::{code_blocks, stderr, stdout, write, Sandbox};

const TG_TOKEN: &str = "123456:test-token";

async fn ok(sandbox: &Sandbox, args: &[&str]) -> String {
    let out = sandbox.run(args, "").await;
    assert!(
        out.status.success(),
        "gatebot {args:?} failed: {}{}",
        stdout(&out),
        stderr(&out)
    );
    stdout(&out)
}

async fn fails(sandbox: &Sandbox, args: &[&str]) -> String {
    let out = sandbox.run(args, "").await;
    assert_eq!(out.status.code(), Some(2), "gatebot {args:?}: {out:?}");
    stderr(&out)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json_of(path: &Path) -> Value {
    serde_json::from_str(&read(path)).unwrap()
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

// ---- gatebot init ------------------------------------------------------------------

#[tokio::test]
async fn init_writes_a_users_config_that_passes_check_config() {
    let sandbox = Sandbox::new();
    let bad = fails(&sandbox, &["init", "--dashboard", "everywhere"]).await;
    assert!(
        bad.contains("--dashboard: `everywhere` is not an address"),
        "{bad}"
    );
    let said = ok(&sandbox, &["init"]).await;
    let path = sandbox.user_config();
    assert!(
        said.starts_with(&format!("Wrote {} (a user's install).\n", path.display())),
        "{said}"
    );
    assert!(said.contains("Start gatebot: gatebot run"), "{said}");
    assert!(said.contains("gatebot hooks install claude-code"), "{said}");
    assert!(said.ends_with("gatebot check-config: ok.\n"), "{said}");
    assert_eq!(mode(&path), 0o600);
    let text = read(&path);
    assert!(text.contains(&format!(
        "path = \"{}\"",
        sandbox
            .home()
            .join(".local/state/gatebot/gatebot.db")
            .display()
    )));
    assert!(text.contains(&format!(
        "socket = \"{}\"",
        sandbox.runtime().join("gatebot/gatebot.sock").display()
    )));
    assert!(text.contains("[agents.claude-code]\n"), "{text}");
    // Every key is explained: no setting without a comment above it somewhere.
    assert!(text.lines().filter(|l| l.starts_with('#')).count() > 30);

    // check-config finds it from the project, and agrees.
    let checked = ok(&sandbox, &["check-config"]).await;
    assert!(
        checked.starts_with(&format!("{}: ok\n", path.display())),
        "{checked}"
    );
}

#[tokio::test]
async fn init_never_replaces_a_file_unless_forced_and_keeps_the_old_one() {
    let sandbox = Sandbox::new();
    let path = sandbox.user_config();
    write(&path, "# mine\n");
    let err = fails(&sandbox, &["init"]).await;
    assert!(
        err.contains(&format!(
            "{} is already there, and gatebot init leaves it as it is",
            path.display()
        )),
        "{err}"
    );
    assert!(err.contains("--force"), "{err}");
    assert_eq!(read(&path), "# mine\n");

    ok(&sandbox, &["init", "--force"]).await;
    assert!(read(&path).contains("[store]"));
    assert_eq!(read(&path.with_file_name("bot.toml.bak")), "# mine\n");
}

#[tokio::test]
async fn init_names_token_files_and_never_writes_a_token() {
    let sandbox = Sandbox::new();
    let said = ok(
        &sandbox,
        &[
            "init",
            "--telegram",
            "--telegram-approver",
            "42",
            "--slack",
            "--slack-channel",
            "C0123",
            "--slack-approver",
            "U0123",
            "--agent",
            "codex",
            "--tier",
            "semi_autonomous",
        ],
    )
    .await;
    let path = sandbox.user_config();
    let text = read(&path);
    for line in [
        "token_file = \"telegram-token\"\n",
        "approvers = [42]\n",
        "bot_token_file = \"slack-bot-token\"\n",
        "app_token_file = \"slack-app-token\"\n",
        "channels = [\"C0123\"]\n",
        "approvers = [\"U0123\"]\n",
        "[agents.codex]\n",
        "tier = \"semi_autonomous\"\n",
    ] {
        assert!(text.contains(line), "{line:?} missing from:\n{text}");
    }
    assert!(!text.contains("\ntoken ="), "{text}");
    // Until the token files are there, check-config says so, and the steps say where.
    let dir = path.parent().unwrap();
    assert!(
        said.contains(&format!(
            "Put the Telegram bot token from @BotFather in {}, readable only by you",
            dir.join("telegram-token").display()
        )),
        "{said}"
    );
    assert!(said.contains("telegram.token_file"), "{said}");
    assert!(!said.ends_with("gatebot check-config: ok.\n"), "{said}");
    for (name, token) in [
        ("telegram-token", TG_TOKEN),
        ("slack-bot-token", "xoxb-1"),
        ("slack-app-token", "xapp-1"),
    ] {
        write(&dir.join(name), token);
    }
    let checked = ok(&sandbox, &["check-config"]).await;
    assert!(checked.contains("telegram:"), "{checked}");
    assert!(checked.contains("slack:"), "{checked}");
}

#[tokio::test]
async fn init_for_a_system_service_uses_the_services_paths_and_credentials() {
    let sandbox = Sandbox::new();
    let said = ok(
        &sandbox,
        &["init", "--system", "--telegram", "--telegram-approver", "7"],
    )
    .await;
    let path = sandbox.system_config();
    assert_eq!(mode(&path), 0o640);
    let text = read(&path);
    let root = sandbox.root();
    for line in [
        format!(
            "path = \"{}\"\n",
            root.join("var/lib/gatebot/gatebot.db").display()
        ),
        format!(
            "socket = \"{}\"\n",
            root.join("run/gatebot/gatebot.sock").display()
        ),
        format!(
            "control_socket = \"{}\"\n",
            root.join("run/gatebot/gatebot-control.sock").display()
        ),
        "token_file = \"${CREDENTIALS_DIRECTORY}/telegram-token\"\n".to_string(),
    ] {
        assert!(text.contains(&line), "{line:?} missing from:\n{text}");
    }
    assert!(
        said.contains(&format!(
            "sudo install -m 600 /dev/null {}",
            root.join("etc/gatebot/telegram-token").display()
        )),
        "{said}"
    );
    // As systemd runs it: the credential directory set.
    let creds = sandbox.dir.path().join("creds");
    write(&creds.join("telegram-token"), TG_TOKEN);
    let mut cmd = sandbox.gatebot(&["check-config"]);
    cmd.env("CREDENTIALS_DIRECTORY", &creds);
    let out = cmd.output().await.unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).starts_with(&format!("{}: ok\n", path.display())));
}

// ---- gatebot connect telegram ---------------------------------------------------------

/// A user's config with Telegram on the fake, no approver yet (as `init` leaves it).
async fn telegram_setup(sandbox: &Sandbox, fake: &FakeTelegram) {
    ok(sandbox, &["init", "--telegram"]).await;
    let path = sandbox.user_config();
    let text = read(&path).replace(
        "[telegram]\n",
        &format!("[telegram]\napi_url = \"{}\"\n", fake.url),
    );
    write(&path, &text);
    write(&path.with_file_name("telegram-token"), TG_TOKEN);
}

/// Starts `gatebot connect telegram ARGS…` and returns it with the code it asks for.
async fn start_connect(
    sandbox: &Sandbox,
    args: &[&str],
) -> (
    tokio::process::Child,
    String,
    tokio::task::JoinHandle<String>,
) {
    let mut all = vec!["connect", "telegram"];
    all.extend(args);
    let mut child = sandbox.gatebot(&all).spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let code = loop {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("connect asked for /start")
            .unwrap()
            .expect("connect is still running");
        if let Some(code) = line.trim().strip_prefix("/start ") {
            break code.to_string();
        }
    };
    let rest = tokio::spawn(async move {
        let mut seen = String::new();
        while let Ok(Some(l)) = lines.next_line().await {
            seen.push_str(&l);
            seen.push('\n');
        }
        seen
    });
    (child, code, rest)
}

#[tokio::test]
async fn connect_telegram_finds_the_owner_by_the_code_and_writes_the_ids() {
    let fake = FakeTelegram::start(TG_TOKEN).await;
    let sandbox = Sandbox::new();
    telegram_setup(&sandbox, &fake).await;
    // Before: the file has no approver, so check-config fails.
    fails(&sandbox, &["check-config"]).await;

    let (child, code, stderr_rest) = start_connect(&sandbox, &["--write"]).await;
    assert_eq!(code.len(), 8, "{code}");
    // A stranger's /start, and one with a wrong code, make nobody an approver.
    fake.say((66, "Mallory"), 66, "/start", None);
    fake.say((67, "Eve"), 67, "/start abcdefgh", None);
    fake.say((42, "Ann"), 42, &format!("/start {code}"), None);
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let said = stdout(&out);
    assert!(out.status.success(), "{said} {}", stderr(&out));
    let ignored = stderr_rest.await.unwrap();
    assert!(
        ignored.contains("ignored a /start from Mallory (user id 66)"),
        "{ignored}"
    );
    assert!(
        said.starts_with("Found Ann, user id 42, in your private chat with @gatebot_test_bot.\n"),
        "{said}"
    );
    assert!(said.contains("approvers = [42]\nchats = []\n"), "{said}");
    assert!(said.contains("gatebot check-config: ok."), "{said}");
    let text = read(&sandbox.user_config());
    assert!(text.contains("\napprovers = [42]\n"), "{text}");
    assert!(text.contains("\nchats = []\n"), "{text}");
    // Ann is told in her chat.
    let sent = fake.ok_calls("sendMessage");
    assert!(
        sent.iter()
            .any(|p| p["chat_id"] == 42 && p["text"].as_str().unwrap().contains("user id 42")),
        "{sent:?}"
    );
    ok(&sandbox, &["check-config"]).await;
}

#[tokio::test]
async fn connect_telegram_without_write_prints_the_lines_and_changes_nothing() {
    let fake = FakeTelegram::start(TG_TOKEN).await;
    let sandbox = Sandbox::new();
    telegram_setup(&sandbox, &fake).await;
    let before = read(&sandbox.user_config());
    let (child, code, _) = start_connect(&sandbox, &[]).await;
    // From a group: the group becomes a chat.
    fake.say(
        (42, "Ann"),
        -1001,
        &format!("/start@gatebot_test_bot {code}"),
        None,
    );
    let out = child.wait_with_output().await.unwrap();
    let said = stdout(&out);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("in the group -1001"), "{said}");
    assert!(
        said.contains(&format!(
            "For the [telegram] table of {}:\napprovers = [42]\nchats = [-1001]\n",
            sandbox.user_config().display()
        )),
        "{said}"
    );
    assert_eq!(read(&sandbox.user_config()), before);
}

#[tokio::test]
async fn connect_telegram_says_when_another_program_reads_the_bot() {
    let fake = FakeTelegram::start(TG_TOKEN).await;
    let sandbox = Sandbox::new();
    telegram_setup(&sandbox, &fake).await;
    fake.conflict_next_polls(1);
    let err = fails(&sandbox, &["connect", "telegram"]).await;
    assert!(
        err.contains("another program is reading this bot's messages"),
        "{err}"
    );
    // Without a [telegram] table there is nothing to connect.
    write(
        &sandbox.user_config(),
        "[agents.a]\ntier = \"supervised\"\n",
    );
    let err = fails(&sandbox, &["connect", "telegram"]).await;
    assert!(err.contains("has no [telegram] table"), "{err}");
}

// ---- gatebot hooks install / status -------------------------------------------------

/// The hook group the docs show for `settings_key` in docs/integrations.md's JSON block
/// that runs `command_start`.
fn documented_group(event: &str, command_start: &str) -> Value {
    for (lang, body) in code_blocks("docs/integrations.md") {
        if lang != "json" {
            continue;
        }
        let v: Value = serde_json::from_str(&body).unwrap();
        if let Some(group) = v["hooks"][event].get(0) {
            if group["hooks"][0]["command"]
                .as_str()
                .is_some_and(|c| c.starts_with(command_start))
            {
                return group.clone();
            }
        }
    }
    panic!("no documented {event} hook running {command_start}");
}

#[tokio::test]
async fn hooks_install_adds_the_documented_hooks_and_keeps_what_is_there() {
    let sandbox = Sandbox::new();
    let settings = sandbox.project().join(".claude/settings.json");
    let mine = json!({
        "permissions": {"allow": ["Bash(ls:*)"]},
        "hooks": {"PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "./fmt.sh"}]}]},
        "model": "opus"
    });
    // The owner's order (not serde_json's sorted one).
    write(
        &settings,
        "{\n  \"permissions\": {\"allow\": [\"Bash(ls:*)\"]},\n  \"model\": \"opus\",\n  \"hooks\": {\"PostToolUse\": [{\"matcher\": \"Write\", \"hooks\": [{\"type\": \"command\", \"command\": \"./fmt.sh\"}]}]}\n}\n",
    );
    let said = ok(
        &sandbox,
        &[
            "hooks",
            "install",
            "claude-code",
            "--event",
            "permission-request",
        ],
    )
    .await;
    assert!(
        said.starts_with(&format!(
            "Added gatebot's PermissionRequest hook to {}: gatebot hook claude-code --agent claude-code\n",
            settings.display()
        )),
        "{said}"
    );
    let v = json_of(&settings);
    assert_eq!(v["permissions"], mine["permissions"]);
    assert_eq!(v["hooks"]["PostToolUse"], mine["hooks"]["PostToolUse"]);
    assert_eq!(v["model"], "opus");
    assert_eq!(
        v["hooks"]["PermissionRequest"],
        json!([documented_group(
            "PermissionRequest",
            "gatebot hook claude-code"
        )])
    );
    // The owner's keys stay in their order; gatebot's come after.
    let text = read(&settings);
    let at = |key: &str| text.find(key).unwrap();
    assert!(at("\"permissions\"") < at("\"model\""), "{text}");
    assert!(at("\"model\"") < at("\"hooks\""), "{text}");
    assert!(
        at("\"PostToolUse\"") < at("\"PermissionRequest\""),
        "{text}"
    );

    // A second run changes nothing.
    let said = ok(
        &sandbox,
        &[
            "hooks",
            "install",
            "claude-code",
            "--event",
            "permission-request",
        ],
    )
    .await;
    assert!(said.starts_with("Already installed in "), "{said}");
    assert!(said.contains("Nothing changed."), "{said}");
    assert_eq!(read(&settings), text);
    // The other event as well would ask twice: refused, file untouched.
    let err = fails(&sandbox, &["hooks", "install", "claude-code"]).await;
    assert!(
        err.contains("already has gatebot's hook under PermissionRequest"),
        "{err}"
    );
    assert_eq!(read(&settings), text);

    // Codex and Gemini CLI, each in its own file, in the documented shapes.
    ok(&sandbox, &["hooks", "install", "codex"]).await;
    let codex = json_of(&sandbox.project().join(".codex/hooks.json"));
    assert_eq!(
        codex,
        json!({"hooks": {"PreToolUse": [documented_group("PreToolUse", "gatebot hook codex")]}})
    );
    ok(&sandbox, &["hooks", "install", "gemini"]).await;
    let gemini = json_of(&sandbox.project().join(".gemini/settings.json"));
    assert_eq!(
        gemini,
        json!({"hooks": {"BeforeTool": [documented_group("BeforeTool", "gatebot hook gemini")]}})
    );
}

#[tokio::test]
async fn hooks_install_dry_run_prints_a_diff_and_writes_nothing() {
    let sandbox = Sandbox::new();
    let settings = sandbox.project().join(".claude/settings.json");
    let said = ok(&sandbox, &["hooks", "install", "claude-code", "--dry-run"]).await;
    assert!(!settings.exists(), "a dry run wrote {}", settings.display());
    assert!(
        said.starts_with(&format!(
            "--- /dev/null\n+++ {}\n@@ -0,0 +1,",
            settings.display()
        )),
        "{said}"
    );
    assert!(
        said.contains("+        \"PreToolUse\": [\n") || said.contains("+    \"PreToolUse\": [\n"),
        "{said}"
    );
    assert!(said.contains("Nothing was written (--dry-run)."), "{said}");

    write(&settings, "{\"model\": \"opus\"}\n");
    let said = ok(&sandbox, &["hooks", "install", "claude-code", "--dry-run"]).await;
    assert_eq!(read(&settings), "{\"model\": \"opus\"}\n");
    assert!(said.contains("-{\"model\": \"opus\"}\n"), "{said}");
    assert!(said.contains("+  \"model\": \"opus\",\n"), "{said}");
}

#[tokio::test]
async fn hostile_settings_files_get_a_clear_error_and_are_left_alone() {
    let sandbox = Sandbox::new();
    let settings = sandbox.project().join(".gemini/settings.json");
    for (text, says) in [
        ("{ \"hooks\": ", "is not valid JSON"),
        ("// comments\n{}", "is not valid JSON"),
        ("[1, 2]", "holds a list, not a JSON object of settings"),
        ("{\"hooks\": []}", "\"hooks\" is a list, not an object"),
        (
            "{\"hooks\": {\"BeforeTool\": {}}}",
            "\"hooks\".\"BeforeTool\" is an object, not a list",
        ),
        (
            "{\"hooks\": {\"BeforeTool\": [7]}}",
            "\"hooks\".\"BeforeTool\" item 1 is a number, not an object",
        ),
        (
            "{\"hooks\": {}, \"hooks\": {}}",
            "the key \"hooks\" is there twice",
        ),
    ] {
        write(&settings, text);
        let err = fails(&sandbox, &["hooks", "install", "gemini"]).await;
        assert!(err.contains(says), "{text}: {err}");
        assert!(err.contains(&settings.display().to_string()), "{err}");
        assert_eq!(read(&settings), text, "the file was changed");
    }
    std::fs::remove_file(&settings).unwrap();
    std::fs::create_dir_all(&settings).unwrap();
    let err = fails(&sandbox, &["hooks", "install", "gemini"]).await;
    assert!(err.contains("is not a file"), "{err}");
    let big = sandbox.project().join(".codex/hooks.json");
    write(&big, &" ".repeat(5 * 1024 * 1024));
    let err = fails(&sandbox, &["hooks", "install", "codex"]).await;
    assert!(err.contains("more than a settings file holds"), "{err}");
}

#[tokio::test]
async fn hooks_install_for_the_user_and_status_with_codexs_trust_step() {
    let sandbox = Sandbox::new();
    let said = ok(&sandbox, &["hooks", "install", "codex", "--user"]).await;
    let file = sandbox.home().join(".codex/hooks.json");
    assert!(said.contains(&file.display().to_string()), "{said}");
    assert!(said.contains("\"Hooks need review\""), "{said}");
    // Nothing to find yet: the hook would deny, and the note says so.
    assert!(
        said.contains("until gatebot can be found, the hook denies every call"),
        "{said}"
    );
    ok(&sandbox, &["hooks", "install", "claude-code", "--mcp"]).await;
    let mcp = json_of(&sandbox.project().join(".mcp.json"));
    let documented = code_blocks("docs/integrations.md")
        .into_iter()
        .filter(|(l, _)| l == "json")
        .map(|(_, b)| serde_json::from_str::<Value>(&b).unwrap())
        .find(|v| v.get("mcpServers").is_some())
        .unwrap();
    assert_eq!(mcp, documented);
    let settings = json_of(&sandbox.project().join(".claude/settings.json"));
    assert_eq!(settings["env"]["MCP_TOOL_TIMEOUT"], "600000");

    let status = ok(&sandbox, &["hooks", "status"]).await;
    let project = sandbox.project();
    for line in [
        "Claude Code:\n".to_string(),
        format!(
            "  project {}: PreToolUse: gatebot hook claude-code --agent claude-code\n",
            project.join(".claude/settings.json").display()
        ),
        format!(
            "  user {}: no file\n",
            sandbox.home().join(".claude/settings.json").display()
        ),
        format!(
            "  MCP approval tool {}: gatebot …\n",
            project.join(".mcp.json").display()
        ),
        format!(
            "  user {}: PreToolUse: gatebot hook codex --agent codex\n",
            file.display()
        ),
        "trust gatebot's hook.\n".to_string(),
        "From ".to_string(),
    ] {
        assert!(status.contains(&line), "{line:?} missing from:\n{status}");
    }
}

#[tokio::test]
async fn a_hook_found_only_from_here_names_the_socket_and_gatebot_off_path_by_its_path() {
    let sandbox = Sandbox::new();
    let socket = sandbox.dir.path().join("elsewhere/agents.sock");
    let said = ok(
        &sandbox,
        &[
            "--socket",
            socket.to_str().unwrap(),
            "hooks",
            "install",
            "claude-code",
        ],
    )
    .await;
    assert!(said.contains("the hook names the socket"), "{said}");
    let v = json_of(&sandbox.project().join(".claude/settings.json"));
    assert_eq!(
        v["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        format!(
            "gatebot hook claude-code --agent claude-code --socket {}",
            socket.display()
        )
    );

    // A project with its own bot.toml: the hook finds it there, so it names nothing.
    let other = sandbox.dir.path().join("other");
    write(&other.join("bot.toml"), "");
    let said = ok(
        &sandbox,
        &[
            "hooks",
            "install",
            "codex",
            "--project",
            other.to_str().unwrap(),
        ],
    )
    .await;
    assert!(
        said.contains(&format!(
            "in {} the hook reaches gatebot at {} (from {})",
            other.display(),
            other.join("gatebot.sock").display(),
            other.join("bot.toml").display()
        )),
        "{said}"
    );
    let v = json_of(&other.join(".codex/hooks.json"));
    assert_eq!(
        v["hooks"]["PreToolUse"][0]["hooks"][0]["command"],
        "gatebot hook codex --agent codex"
    );

    // gatebot not on PATH: the hook names this program by its path (a missing program
    // would make the agent run the tool unchecked).
    let mut cmd = sandbox.gatebot(&["hooks", "install", "gemini"]);
    cmd.env("PATH", "/usr/bin:/bin");
    let out = cmd.output().await.unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout(&out).contains("gatebot is not on PATH"),
        "{}",
        stdout(&out)
    );
    let v = json_of(&sandbox.project().join(".gemini/settings.json"));
    let command = v["hooks"]["BeforeTool"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(
        command.starts_with('/') && command.contains(" hook gemini --agent gemini"),
        "{command}"
    );
}

/// The README's quick start with these commands: init, run, hooks install, and the
/// installed hook answers from the project.
#[tokio::test]
async fn init_run_and_hooks_install_put_gatebot_in_front_of_an_agent() {
    let sandbox = Sandbox::new();
    // The dashboard on a free port: 8378 may be another test's, or the reader's.
    let dashboard = crate::helpers::free_port();
    let port = dashboard.to_string();
    ok(
        &sandbox,
        &["init", "--tier", "autonomous", "--dashboard", &port],
    )
    .await;
    let mut daemon = sandbox.gatebot(&["run"]);
    daemon
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut daemon = daemon.spawn().unwrap();
    let socket = sandbox.runtime().join("gatebot/gatebot.sock");
    for _ in 0..400 {
        if socket.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(socket.exists(), "the daemon did not start");
    // The dashboard init turned on answers (it is bound just after the sockets), and
    // sends the signed-out to sign in.
    for _ in 0..400 {
        if tokio::net::TcpStream::connect(dashboard).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let page = crate::helpers::http_get(dashboard, "/signin").await;
    assert!(page.contains("gatebot dashboard login"), "{page}");
    let said = ok(&sandbox, &["hooks", "install", "claude-code"]).await;
    assert!(
        said.contains(&format!(
            "the hook reaches gatebot at {} (from {})",
            socket.display(),
            sandbox.user_config().display()
        )),
        "{said}"
    );
    let v = json_of(&sandbox.project().join(".claude/settings.json"));
    let command = v["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    // Run as Claude Code runs it: through a shell, in the project.
    let payload = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/hooks/claude-code-pre-tool-use.json"),
    )
    .unwrap();
    let mut sh = tokio::process::Command::new("sh");
    sh.args(["-c", &command]);
    sandbox.env(&mut sh);
    sh.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = sh.spawn().unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(payload.as_bytes()).await.unwrap();
    }
    let out = child.wait_with_output().await.unwrap();
    let answer: Value = serde_json::from_str(&stdout(&out))
        .unwrap_or_else(|e| panic!("{e}: {} {}", stdout(&out), stderr(&out)));
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "allow",
        "{answer}"
    );
    let _ = daemon.start_kill();
    let _ = daemon.wait().await;
}
