//! What the `gatebot` commands print, as the real binary: results written to a pipe
//! whose reader stopped (`gatebot audit | head -1`), to a full disk, and the config
//! summary of `check-config` in `bot.toml`'s own words.

use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Output, Stdio};

use serde_json::json;
use tokio::process::Command;

use crate::fake_telegram::{FakeTelegram, BOT_USERNAME};
use crate::helpers::spawn_app;

const BIN: &str = env!("CARGO_BIN_EXE_gatebot");

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The write end of a pipe whose read end is already closed: the first write gets
/// `EPIPE`, as when `head` has read its lines and gone.
fn closed_pipe() -> Stdio {
    let mut fds = [0; 2];
    // SAFETY: `pipe` fills both descriptors on success; each is owned exactly once.
    unsafe {
        assert_eq!(libc::pipe(fds.as_mut_ptr()), 0);
        drop(OwnedFd::from_raw_fd(fds[0]));
        Stdio::from(OwnedFd::from_raw_fd(fds[1]))
    }
}

/// Runs `gatebot ARGS` with `stdout` (tokio's `output()` would replace it with a pipe).
async fn run(args: &[&str], stdout: Stdio) -> Output {
    Command::new(BIN)
        .args(args)
        .env_remove("GATEBOT_SOCKET")
        .env_remove("GATEBOT_CONFIG")
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
        .wait_with_output()
        .await
        .unwrap()
}

/// `check-config` of `config` (TOML written to a temp file), stdout captured.
async fn check_config(config: &str, extra: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bot.toml");
    std::fs::write(&path, config).unwrap();
    let mut args = vec!["check-config", "--config", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    run(&args, Stdio::piped()).await
}

#[tokio::test]
async fn a_reader_that_stops_early_ends_the_command_quietly() {
    let app = spawn_app("").await;
    let (id, short) = app
        .submit_pending(json!({"agent": "intern", "tool": "create_contact", "args": {}}))
        .await;
    let control = app.path().join("gatebot-control.sock");
    let control = control.to_str().unwrap();
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("bot.toml");
    // Each ends as it would with the reader there: listings with 0, a pending
    // request's status with 3, and never with a panic (exit 101).
    for (args, code) in [
        (vec!["audit", "--socket", control], 0),
        (vec!["audit", "--json", "--socket", control], 0),
        (vec!["audit", "verify", "--socket", control], 0),
        (vec!["pending", "--socket", control], 0),
        (vec!["status", &short, "--socket", control], 3),
        (
            vec!["check-config", "--config", example.to_str().unwrap()],
            0,
        ),
    ] {
        let out = run(&args, closed_pipe()).await;
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(
            !err.contains("panicked") && !err.contains("error"),
            "{args:?} said: {err}"
        );
    }
    // The result still decides the exit code, and what was asked was done.
    let out = run(
        &["decide", &short, "deny", "--socket", control],
        closed_pipe(),
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(app.get(&id, 0.0).await.body["status"], "rejected");
    let out = run(
        &["decide", &short, "approve", "--socket", control],
        closed_pipe(),
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "already decided");
}

#[tokio::test]
async fn output_lost_to_a_full_disk_is_an_error() {
    let app = spawn_app("").await;
    let control = app.path().join("gatebot-control.sock");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = run(
        &["audit", "--socket", control.to_str().unwrap()],
        Stdio::from(full),
    )
    .await;
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("cannot write to standard output") && !err.contains("panicked"),
        "{err}"
    );
}

#[tokio::test]
async fn check_config_shows_values_as_bot_toml_writes_them() {
    let out = check_config(
        "[policy]\ntool_approval_mode = \"dangerous\"\nunknown_agents = \"supervised\"\n\
         default_ttl = \"2h\"\n\
         [slack]\nbot_token = \"xoxb-1\"\napp_token = \"xapp-1\"\nchannels = [\"C1\"]\n\
         approvers = [\"U1\"]\n",
        &[],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    for toml in [
        "tool_approval_mode = \"dangerous\"",
        "unknown_agents = \"supervised\"",
        "default_ttl = \"2h\"",
        "max_ttl = \"7d\"",
        "mode = \"socket\"",
    ] {
        assert!(shown.contains(toml), "{toml} in {shown}");
    }
    for rust in ["Dangerous", "Supervised", "Socket"] {
        assert!(!shown.contains(rust), "{rust} in {shown}");
    }
}

/// Issue 18: an agent the inbox routes tasks to, with no token, is anyone who can reach
/// the agents' socket. check-config says so, and what to change; with a token it is quiet.
#[tokio::test]
async fn check_config_warns_about_an_inbox_agent_without_a_token() {
    let config = "[agents.claude-code]\ntier = \"supervised\"\n{token}\n\
                  [inbox]\n[inbox.routes]\ndefault = \"claude-code\"\n";
    let out = check_config(&config.replace("{token}", ""), &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    let warnings: Vec<&str> = shown
        .lines()
        .filter(|l| l.starts_with("  warning: "))
        .collect();
    assert_eq!(
        warnings,
        [
            "  warning: agent `claude-code` has no token, and the inbox routes tasks to it: any \
             process that can reach the agents' socket can act as it, read its tasks and claim \
             or complete them. Give it one in [agents.claude-code] (`token_env = \"NAME\"`, \
             `token_file` or `token`) and the same token to whatever acts as it \
             (GATEBOT_TOKEN)."
        ],
        "{shown}"
    );
    let out = check_config(&config.replace("{token}", "token = \"cc-token-1\""), &[]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        !text(&out.stdout).contains("  warning: "),
        "{}",
        text(&out.stdout)
    );
}

#[tokio::test]
async fn check_config_telegram_says_ok_only_when_the_token_is_checked() {
    // The channel is off: nothing to check, and no "ok" before the error.
    let unset = "GATEBOT_TEST_SURELY_UNSET_TOKEN";
    let out = check_config(
        &format!("[telegram]\ntoken_env = \"{unset}\"\napprovers = [1]\n"),
        &["--telegram"],
    )
    .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(!text(&out.stdout).contains("ok"), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(
        err.contains("nothing to check") && err.contains(unset) && err.contains("is not set"),
        "{err}"
    );
    let out = check_config("", &["--telegram"]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stdout).is_empty());
    assert!(text(&out.stderr).contains("no [telegram] table"));

    // A token Telegram refuses: an error, no "ok".
    let token = "4242:AAE-the-right-token";
    let fake = FakeTelegram::start(token).await;
    let out = check_config(
        &format!(
            "[telegram]\ntoken = \"4242:AAE-a-wrong-token\"\napi_url = \"{}\"\napprovers = [1]\n",
            fake.url
        ),
        &["--telegram"],
    )
    .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(!text(&out.stdout).contains("ok"), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("refused the bot token"));

    // The right one: the summary, then whose token it is.
    let out = check_config(
        &format!(
            "[telegram]\ntoken = \"{token}\"\napi_url = \"{}\"\napprovers = [1]\n",
            fake.url
        ),
        &["--telegram"],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(shown.contains(": ok"), "{shown}");
    assert!(
        shown.contains(&format!("ok, the token belongs to @{BOT_USERNAME}")),
        "{shown}"
    );
}

#[tokio::test]
async fn check_config_prints_one_line_per_platform_that_is_on() {
    let both = "[telegram]\ntoken = \"1:A\"\nchats = [1, 2]\napprovers = [1]\n\
                [slack]\nbot_token = \"xoxb-1\"\napp_token = \"xapp-1\"\n\
                channels = [\"C1\"]\napprovers = [\"U1\", \"U2\"]\n";
    let out = check_config(both, &[]).await;
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(
            "\n  telegram:        2 chat(s), 1 approver(s), API https://api.telegram.org\n  \
             slack:           mode = \"socket\", 1 channel(s), 2 approver(s), API https://slack.com/api\n"
        ),
        "{stdout}"
    );
    assert!(!stdout.contains("chat channels:"), "{stdout}");
    let out = check_config("", &[]).await;
    let stdout = text(&out.stdout);
    assert!(
        !stdout.contains("telegram:") && !stdout.contains("slack:"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  chat channels:   none on; owners decide with `gatebot decide`"),
        "{stdout}"
    );
}

/// Issue 23: check-config says who decides each agent's requests at each risk level,
/// and names what can never apply.
#[tokio::test]
async fn check_config_shows_the_rule_for_each_agent_and_risk() {
    let out = check_config(
        "[agents.mailer]\ntier = \"semi_autonomous\"\n[agents.deployer]\ntier = \"autonomous\"\n\
         [people.alice]\nunix = \"alice\"\n[people.bob]\nunix = \"bob\"\n\
         [groups.oncall]\npeople = [\"alice\", \"bob\"]\n[groups.nobody]\n\
         [[approval_rules]]\nname = \"critical\"\nrisk_at_least = \"critical\"\nask = \"oncall\"\napprovals = 2\n\
         [[approval_rules]]\nname = \"mail\"\ntool = \"send_email\"\nask = \"oncall\"\n\
         [[approval_rules]]\nname = \"deploys\"\nagent = \"deployer\"\nask = \"oncall\"\nself_approval = false\n\
         [[approval_rules]]\nname = \"late\"\nagent = \"deployer\"\nrisk_at_least = \"high\"\nask = \"oncall\"\n",
        &[],
    )
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    for line in [
        "mailer, low to high risk: for send_email: \"mail\": 1 approval of alice, bob; otherwise the first answer of any approver",
        "mailer, critical risk: \"critical\": 2 approvals of alice, bob",
        "deployer, low to high risk: for send_email: \"mail\": 1 approval of alice, bob; otherwise \"deploys\": 1 approval of alice, bob, not by whoever handed over the task",
        "warning: approval rule \"late\" never applies: \"deploys\" comes before it",
        "warning: [groups.nobody] has nobody in it",
    ] {
        assert!(shown.contains(line), "{line}\n in {shown}");
    }
}
