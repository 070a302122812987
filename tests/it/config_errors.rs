//! A config with mistakes (issue 20, item 7): `check-config`, the daemon's start and
//! its reload (SIGHUP) say every one in one go, in file order, with a count; a client
//! command reads only the keys it needs; and what is said is in words, without a
//! library's own.

use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::cli::text;
use crate::helpers::{eventually, spawn_app, BASE_CONFIG};

const BIN: &str = env!("CARGO_BIN_EXE_gatebot");

/// Three mistakes, each of a kind that used to hide the others: a rule across keys
/// (line 3), an unknown key (line 4) and a value serde cannot read (line 7).
const THREE_MISTAKES: &str = "\
[queue]
socket = \"gatebot.sock\"
max_body_bytes = 10
sockett = \"other.sock\"

[policy]
default_ttl = \"tomorrow\"
";

/// `gatebot ARGS` with no gatebot environment inherited.
fn gatebot(args: &[&std::ffi::OsStr]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .env_remove("GATEBOT_SOCKET")
        .env_remove("GATEBOT_TOKEN")
        .env_remove("GATEBOT_CONFIG")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    c
}

fn os(s: &str) -> &std::ffi::OsStr {
    s.as_ref()
}

/// The lines naming each of the three mistakes, in order, then the count.
fn assert_three_mistakes_said(stderr: &str, file: &Path, last: &str) {
    let lines: Vec<&str> = stderr.lines().collect();
    let file = file.display();
    assert_eq!(
        lines,
        [
            format!("error: {file}:3: `queue.max_body_bytes`: must be at least 1024").as_str(),
            &format!(
                "error: {file}:4: `queue.sockett`: unknown key `sockett`, expected one of \
                 `socket`, `control_socket`, `listen`, `max_body_bytes`, `max_wait`, \
                 `metrics`, `max_connections`, `max_connections_per_agent`, \
                 `max_waits_per_agent`, `header_timeout`, `idle_timeout`"
            ),
            &format!(
                "error: {file}:7: `policy.default_ttl`: `tomorrow` is not a duration like \
                 30m, 24h or 7d"
            ),
            &format!("{file}: 3 errors{last}"),
        ],
        "{stderr}"
    );
}

/// Issue 20: a file with mistakes on three lines reported one (line 7), then, that
/// fixed, another (line 3).
#[tokio::test]
async fn check_config_reports_every_mistake_in_one_run_with_a_count() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bot.toml");
    std::fs::write(&file, THREE_MISTAKES).unwrap();
    let out = gatebot(&[os("check-config"), os("--config"), file.as_os_str()])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stdout), "", "no summary of a config with errors");
    assert_three_mistakes_said(&text(&out.stderr), &file, "");
}

/// The daemon refuses to start on the same file, saying all three the same way.
#[tokio::test]
async fn the_daemon_says_every_mistake_before_refusing_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bot.toml");
    std::fs::write(&file, THREE_MISTAKES).unwrap();
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        gatebot(&[os("run"), os("--config"), file.as_os_str()]).output(),
    )
    .await
    .expect("it exits")
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_three_mistakes_said(&text(&out.stderr), &file, "; gatebot did not start");
    assert!(!dir.path().join("gatebot.sock").exists());
}

/// A daemon (the real binary) on `BASE_CONFIG` in `dir`, its stderr collected as it
/// comes.
async fn start_daemon(dir: &Path) -> (Child, Arc<Mutex<String>>) {
    std::fs::write(dir.join("bot.toml"), BASE_CONFIG).unwrap();
    let mut child = gatebot(&[os("run"), os("--config"), dir.join("bot.toml").as_os_str()])
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let sink = log.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let mut t = sink.lock().unwrap();
            t.push_str(&line);
            t.push('\n');
        }
    });
    let control = dir.join("gatebot-control.sock");
    eventually("the daemon to start", async || {
        gatebot::client::Client::new(&control)
            .get("/v1/health")
            .await
            .ok()
    })
    .await;
    (child, log)
}

/// SIGHUP with a file holding three mistakes: a warning for each, then the refusal
/// with the count; the daemon keeps running on the old config.
#[tokio::test]
async fn a_reload_refused_says_every_mistake() {
    let dir = tempfile::tempdir().unwrap();
    let (child, log) = start_daemon(dir.path()).await;
    let file = dir.path().join("bot.toml");
    std::fs::write(&file, THREE_MISTAKES).unwrap();
    crate::helpers::signal(child.id().unwrap(), libc::SIGHUP);
    let log = eventually("the reload to be refused", async || {
        let l = log.lock().unwrap().clone();
        l.contains("new configuration refused").then_some(l)
    })
    .await;
    let said: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("new configuration"))
        .collect();
    assert_eq!(said.len(), 4, "{log}");
    let file = file.display();
    for (line, (at, key)) in said.iter().zip([
        (":3:", "queue.max_body_bytes"),
        (":4:", "queue.sockett"),
        (":7:", "policy.default_ttl"),
    ]) {
        assert!(
            line.contains(&format!("{file}{at}")) && line.contains(key),
            "{line}"
        );
    }
    assert!(
        said[3].contains("refused (3 errors); keeping the old one"),
        "{}",
        said[3]
    );
    // Still running, on the old config.
    let out = gatebot(&[os("pending"), os("--config"), os(&file.to_string())])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// Issue 20: `gatebot pending` failed on a bad `default_ttl`, a key it does not read.
/// The daemon runs on a good config; the owner's edit broke a key the daemon reads
/// only at the next reload; the owner's commands still find it by the socket keys.
#[tokio::test]
async fn a_client_command_fails_only_on_the_keys_it_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (_daemon, _) = start_daemon(dir.path()).await;
    let file = dir.path().join("bot.toml");
    std::fs::write(
        &file,
        format!("{BASE_CONFIG}\n[inbox]\nlease = \"soon\"\n")
            .replace("default_ttl = \"1h\"", "default_ttl = \"tomorrow\""),
    )
    .unwrap();
    let pending = || async {
        gatebot(&[os("pending"), os("--config"), file.as_os_str()])
            .output()
            .await
            .unwrap()
    };
    let out = pending().await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("Nothing is waiting for you."));
    // An agent's command too, and check-config still says what is wrong.
    let ask = gatebot(&[
        os("ask"),
        os("--config"),
        file.as_os_str(),
        os("--agent"),
        os("mailer"),
        os("--tool"),
        os("query_org_data"),
    ])
    .output()
    .await
    .unwrap();
    assert_eq!(ask.status.code(), Some(0), "{}", text(&ask.stderr));
    let check = gatebot(&[os("check-config"), os("--config"), file.as_os_str()])
        .output()
        .await
        .unwrap();
    assert_eq!(check.status.code(), Some(2));
    assert!(
        text(&check.stderr).contains("2 errors"),
        "{}",
        text(&check.stderr)
    );

    // A socket key that is wrong is the command's business: it says so, with its line.
    std::fs::write(&file, format!("[queue]\ncontrol_socket = 7\n{BASE_CONFIG}")).unwrap();
    let out = pending().await;
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("bot.toml:2: `queue.control_socket`: invalid type: integer `7`, expected a path in quotes"),
        "{err}"
    );
}

/// What an owner reads about a bad duration says what is wrong in words, wherever it
/// is read: a config key, a command's flag, a request's field.
#[tokio::test]
async fn a_bad_duration_is_said_without_the_parsers_words() {
    let internals = [
        "expected number",
        "invalid character",
        " at 0",
        "(",
        "sec or",
    ];
    let plain = "`tomorrow` is not a duration like 30m, 24h or 7d";
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bot.toml");
    std::fs::write(&file, "[policy]\ndefault_ttl = \"tomorrow\"\n").unwrap();
    let out = gatebot(&[os("check-config"), os("--config"), file.as_os_str()])
        .output()
        .await
        .unwrap();
    let err = text(&out.stderr);
    let said = err.lines().next().unwrap();
    assert!(said.ends_with(plain), "{err}");

    let app = spawn_app("").await;
    let ask = gatebot(&[
        os("ask"),
        os("--socket"),
        app.path().join("gatebot.sock").as_os_str(),
        os("--agent"),
        os("intern"),
        os("--tool"),
        os("create_contact"),
        os("--wait"),
        os("tomorrow"),
    ])
    .output()
    .await
    .unwrap();
    assert_eq!(ask.status.code(), Some(2));
    let flag = text(&ask.stderr);
    assert_eq!(flag.trim(), format!("error: --wait: {plain}"));

    let res = app
        .submit(json!({"agent": "intern", "tool": "create_contact", "args": {}, "ttl": "tomorrow"}))
        .await;
    let field = res.body["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(field.contains(plain), "{}", res.body);

    for message in [
        said.rsplit_once(": ").unwrap().1,
        flag.as_str(),
        field.as_str(),
    ] {
        let after = message.split(plain).nth(1).unwrap_or_default();
        for word in internals {
            assert!(!after.contains(word), "{message}");
        }
    }
}
