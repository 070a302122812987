//! A gatebot daemon run as a process on a config of its own, for the browser tests of
//! every dashboard page: `gatebot` commands against it, an agent's requests, and
//! signing a browser in from a link.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::process::{Child, Command};

use crate::harness::{Browser, WAIT};

const BIN: &str = env!("CARGO_BIN_EXE_gatebot");

/// A gatebot daemon run as a process, with its dashboard on a free port.
pub(crate) struct Daemon {
    dir: tempfile::TempDir,
    pub(crate) base: String,
    _child: Child,
}

impl Daemon {
    pub(crate) async fn start() -> Daemon {
        Daemon::start_with("").await
    }

    /// A daemon on the config [`Daemon::start`] uses, with `extra` TOML after it.
    pub(crate) async fn start_with(extra: &str) -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        let port = crate::ports::free_port().port();
        let config = format!(
            r#"
[policy]
tool_approval_mode = "dangerous"

[tools]
send_email = "destructive"

[agents.mailer]
tier = "semi_autonomous"

[agents.claude-code]
tier = "supervised"

[dashboard]
listen = "127.0.0.1:{port}"

[people.alice]
unix = "alice"

{extra}
"#
        );
        std::fs::write(dir.path().join("bot.toml"), config).unwrap();
        let log = std::fs::File::create(dir.path().join("daemon.log")).unwrap();
        let child = Command::new(BIN)
            .args(["run", "--config"])
            .arg(dir.path().join("bot.toml"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let d = Daemon {
            base: format!("http://127.0.0.1:{port}"),
            dir,
            _child: child,
        };
        for _ in 0..400 {
            if d.path().join("gatebot-control.sock").exists() {
                return d;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("the daemon did not start: {}", d.log());
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.path().join("daemon.log")).unwrap_or_default()
    }

    /// `gatebot ARGS --config …`, as alice (the person sudo names for the daemon's own
    /// account).
    pub(crate) fn gatebot(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .arg("--config")
            .arg(self.path().join("bot.toml"))
            .env("SUDO_USER", "alice")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        c
    }

    pub(crate) async fn run(&self, args: &[&str]) -> String {
        let out = self.gatebot(args).output().await.unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "gatebot {args:?}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    }

    /// A request as `gatebot status --json` shows it (its exit code says the status).
    pub(crate) async fn status(&self, id: &str) -> Value {
        let out = self
            .gatebot(&["status", id, "--json"])
            .output()
            .await
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"))
    }

    /// A sign-in link for alice.
    pub(crate) async fn link(&self) -> String {
        let out = self.run(&["dashboard", "login", "--json"]).await;
        let v: Value = serde_json::from_str(&out).unwrap();
        v["url"].as_str().unwrap().to_string()
    }

    /// An agent's request, waiting for a human: its id and short id.
    pub(crate) async fn submit(&self, body: Value) -> (String, String) {
        let client = gatebot::client::Client::new(self.path().join("gatebot.sock"));
        let res = client.post("/v1/requests", &body).await.unwrap();
        assert_eq!(res.body["status"], "pending", "{:?}", res.body);
        (
            res.body["id"].as_str().unwrap().to_string(),
            res.body["short_id"].as_str().unwrap().to_string(),
        )
    }

    /// An agent that waits for its answer, as `gatebot ask` does.
    pub(crate) fn ask(&self, args: &str) -> Child {
        self.gatebot(&[
            "ask",
            "--agent",
            "mailer",
            "--tool",
            "send_email",
            "--args",
            args,
            "--wait",
            "60s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
    }
}

/// Signs `browser` in from a fresh link, through the page the link opens.
pub(crate) async fn sign_in(browser: &Browser, daemon: &Daemon) {
    browser.goto(&daemon.link().await).await;
    browser.click("form[action='/login'] button").await;
    browser.wait_for("#pending", WAIT).await;
    // The page's script is running and listening for changes.
    browser
        .wait_until("document.body.dataset.live === 'yes'", WAIT)
        .await;
}
