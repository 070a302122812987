//! The real `gatebot` binary: daemon as a process, `ask` / `decide` / `status` /
//! `pending` / `check-config` and their exit codes, SIGTERM.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};

use crate::helpers::BASE_CONFIG;

const BIN: &str = env!("CARGO_BIN_EXE_gatebot");

pub(crate) struct Daemon {
    dir: tempfile::TempDir,
    child: Child,
    /// Everything it wrote to stderr so far, read as it comes (a full pipe would stall
    /// the daemon), and the task reading it (done at its end).
    log: std::sync::Arc<std::sync::Mutex<String>>,
    reading: Option<tokio::task::JoinHandle<()>>,
}

impl Daemon {
    async fn start() -> Daemon {
        Daemon::start_with("").await
    }

    /// Starts the daemon on `BASE_CONFIG` plus `extra` TOML.
    pub(crate) async fn start_with(extra: &str) -> Daemon {
        Daemon::start_with_env(extra, &[]).await
    }

    /// Starts the daemon on `BASE_CONFIG` plus `extra` TOML, with `env` set for the
    /// daemon only (its secrets: the commands run against it do not get them).
    async fn start_with_env(extra: &str, env: &[(&str, &OsStr)]) -> Daemon {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("bot.toml"),
            format!("{BASE_CONFIG}\n{extra}"),
        )
        .unwrap();
        let child = Command::new(BIN)
            .args(["run", "--config"])
            .arg(dir.path().join("bot.toml"))
            .envs(env.iter().copied())
            // Not the migrations' SQL (tens of KB at each start): the log is read only at
            // the end, and a full pipe would stall the daemon.
            .env("RUST_LOG", "debug,rusqlite_migration=info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut child = child;
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let reading = tokio::spawn({
            let log = log.clone();
            let stderr = child.stderr.take().unwrap();
            async move {
                use tokio::io::AsyncBufReadExt;
                let mut lines = tokio::io::BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let mut log = log.lock().unwrap();
                    log.push_str(&line);
                    log.push('\n');
                }
            }
        });
        let d = Daemon {
            dir,
            child,
            log,
            reading: Some(reading),
        };
        for _ in 0..200 {
            if d.path().join("gatebot-control.sock").exists() {
                return d;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("the daemon did not start");
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn config(&self) -> PathBuf {
        self.path().join("bot.toml")
    }

    /// `gatebot --config` this daemon's config, with no inherited socket or token.
    pub(crate) fn command(&self) -> Command {
        let mut c = Command::new(BIN);
        c.arg("--config")
            .arg(self.config())
            .env_remove("GATEBOT_SOCKET")
            .env_remove("GATEBOT_URL")
            .env_remove("GATEBOT_TOKEN");
        c
    }

    /// Kills the daemon as `kill -9` would: no shutdown, nothing let go.
    pub(crate) fn kill(&mut self) {
        self.child.start_kill().unwrap();
    }

    /// Sends the daemon `signal` (`libc::SIGTERM`, `SIGHUP`, `SIGSTOP`, `SIGCONT`).
    pub(crate) fn signal(&self, signal: libc::c_int) {
        crate::helpers::signal(self.child.id().expect("running"), signal);
    }

    /// Waits (up to 10 s) for the daemon to exit; its exit status and everything it
    /// wrote to stderr.
    pub(crate) async fn exit_and_log(&mut self) -> (std::process::ExitStatus, String) {
        let exit = tokio::time::timeout(Duration::from_secs(10), self.child.wait())
            .await
            .expect("exits within 10s")
            .unwrap();
        if let Some(reading) = self.reading.take() {
            reading.await.unwrap();
        }
        (exit, self.log.lock().unwrap().clone())
    }

    /// Sends SIGTERM and returns everything the daemon wrote to stderr.
    pub(crate) async fn stop_and_log(&mut self) -> String {
        self.signal(libc::SIGTERM);
        self.exit_and_log().await.1
    }

    /// Runs `gatebot ARGS` against this daemon's config.
    pub(crate) async fn cli(&self, args: &[&str]) -> Output {
        self.command().args(args).output().await.unwrap()
    }

    /// The short id of the only pending request, once there is one.
    async fn wait_for_pending(&self) -> String {
        for _ in 0..400 {
            let out = self.cli(&["pending", "--json"]).await;
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            let list = v["requests"].as_array().unwrap();
            assert!(list.len() <= 1, "{v}");
            if let Some(r) = list.first() {
                return r["short_id"].as_str().unwrap().to_string();
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("no request became pending");
    }
}

/// `gatebot ask --agent AGENT --tool TOOL`; options are added with the methods below.
fn ask(agent: &str, tool: &str) -> Ask {
    Ask {
        args: ["ask", "--agent", agent, "--tool", tool]
            .map(OsString::from)
            .to_vec(),
    }
}

/// A `gatebot ask` command line, to run against a [`Daemon`] or a socket.
struct Ask {
    args: Vec<OsString>,
}

impl Ask {
    fn opt(mut self, name: &str, value: impl AsRef<OsStr>) -> Ask {
        self.args.push(name.into());
        self.args.push(value.as_ref().to_owned());
        self
    }

    /// `--args JSON`; `-` reads them from stdin.
    fn args(self, json: &str) -> Ask {
        self.opt("--args", json)
    }

    fn args_file(self, path: impl AsRef<OsStr>) -> Ask {
        self.opt("--args-file", path)
    }

    fn summary(self, summary: &str) -> Ask {
        self.opt("--summary", summary)
    }

    fn wait(self, wait: &str) -> Ask {
        self.opt("--wait", wait)
    }

    fn ttl(self, ttl: &str) -> Ask {
        self.opt("--ttl", ttl)
    }

    fn token(self, token: &str) -> Ask {
        self.opt("--token", token)
    }

    fn json(mut self) -> Ask {
        self.args.push("--json".into());
        self
    }

    /// Runs it against `d` until it exits.
    async fn run(&self, d: &Daemon) -> Output {
        d.command().args(&self.args).output().await.unwrap()
    }

    /// Runs it with `--socket SOCKET` and no config, until it exits.
    async fn run_on(&self, socket: &Path) -> Output {
        Command::new(BIN)
            .args(&self.args)
            .arg("--socket")
            .arg(socket)
            .output()
            .await
            .unwrap()
    }

    /// Starts it against `d` in the background, with stdout and stderr captured.
    fn spawn(&self, d: &Daemon) -> Child {
        self.start(d, Stdio::inherit())
    }

    /// Starts it against `d` with `input` on its stdin (then closed).
    async fn spawn_with_stdin(&self, d: &Daemon, input: &[u8]) -> Child {
        let mut child = self.start(d, Stdio::piped());
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input).await.unwrap();
        drop(stdin);
        child
    }

    fn start(&self, d: &Daemon, stdin: Stdio) -> Child {
        d.command()
            .args(&self.args)
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap()
    }
}

pub(crate) fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[tokio::test]
async fn ask_exits_0_when_the_policy_allows() {
    let d = Daemon::start().await;
    let out = ask("mailer", "query_org_data")
        .args("{\"q\":1}")
        .run(&d)
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("allowed"),
        "{}",
        text(&out.stdout)
    );
}

#[tokio::test]
async fn ask_waits_for_a_decision_made_with_decide() {
    let d = Daemon::start().await;
    let asking = ask("mailer", "send_email")
        .args("-")
        .json()
        .spawn_with_stdin(&d, b"{\"to\": \"a@example.com\"}")
        .await;
    // Find the pending request and approve it as the owner.
    let id = d.wait_for_pending().await;
    let decided = d.cli(&["decide", &id, "approve"]).await;
    assert_eq!(decided.status.code(), Some(0), "{}", text(&decided.stderr));
    let out = asking.wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "approved");
    // A second decision exits 1 and says who decided first.
    let again = d.cli(&["decide", &id, "deny"]).await;
    assert_eq!(again.status.code(), Some(1));
    assert!(
        text(&again.stderr).contains("already approved by"),
        "{}",
        text(&again.stderr)
    );
}

#[tokio::test]
async fn ask_exits_1_with_the_reason_when_denied() {
    let d = Daemon::start().await;
    let asking = ask("intern", "create_contact").summary("add Bo").spawn(&d);
    let id = d.wait_for_pending().await;
    let decided = d
        .cli(&["decide", &id, "deny", "--reason", "wrong client"])
        .await;
    assert_eq!(decided.status.code(), Some(0));
    let out = asking.wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("[Action rejected] create_contact: wrong client"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn ask_exits_3_when_the_wait_runs_out_and_the_request_stays() {
    let d = Daemon::start().await;
    let out = ask("mailer", "send_email").wait("1s").run(&d).await;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with("pending"));
    let status = d.cli(&["pending"]).await;
    assert!(text(&status.stdout).contains("send_email"));
}

#[tokio::test]
async fn ask_exits_1_when_blocked_and_2_on_errors() {
    let d = Daemon::start().await;
    let out = ask("drafter", "send_email").run(&d).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("[Action blocked]"));
    let out = ask("ghost", "t").run(&d).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unknown agent"));
    let out = ask("mailer", "t").args("{bad").run(&d).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("not valid JSON"));
}

#[tokio::test]
async fn ask_exits_2_when_the_daemon_is_unreachable() {
    let dir = tempfile::tempdir().unwrap();
    let out = ask("a", "t").run_on(&dir.path().join("nobody.sock")).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("cannot reach gatebot"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn check_config_accepts_the_example_and_explains_errors() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("bot.toml");
    let out = Command::new(BIN)
        .args(["check-config", "--config"])
        .arg(&example)
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(": ok"));

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bot.toml");
    std::fs::write(
        &bad,
        "[agents.mailer]\ntier = \"semi_autonomous\"\n\n[policy]\ndefault_ttl = \"forever\"\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["check-config", "--config"])
        .arg(&bad)
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains(":5:") && err.contains("policy.default_ttl"),
        "{err}"
    );

    // A file that parses but breaks several rules: every error, one line each.
    std::fs::write(
        &bad,
        "[queue]\nmax_body_bytes = 10\n\n[policy]\ndefault_ttl = \"30d\"\n\n[agents.a]\ntier = \"supervised\"\nalways_allow = [\"x\"]\ndeny = [\"x\"]\n",
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["check-config", "--config"])
        .arg(&bad)
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    // One line each, then how many (issue 20).
    assert_eq!(lines.len(), 4, "{err}");
    assert!(lines[3].ends_with("bot.toml: 3 errors"), "{err}");
    for (line, (at, key)) in lines.iter().zip([
        (":2:", "queue.max_body_bytes"),
        (":5:", "policy.default_ttl"),
        (":10:", "agents.a.deny"),
    ]) {
        assert!(line.starts_with("error: "), "{line}");
        assert!(line.contains(at) && line.contains(key), "{line}");
    }
}

#[tokio::test]
async fn sigterm_stops_the_daemon_cleanly_with_exit_0() {
    let mut d = Daemon::start().await;
    // A request with a token, so the log has had a chance to leak it.
    let out = ask("secure", "query_org_data")
        .token("secure-token-123")
        .run(&d)
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let bad = ask("secure", "query_org_data")
        .token("secure-token-999")
        .run(&d)
        .await;
    assert_eq!(bad.status.code(), Some(2));
    d.signal(libc::SIGTERM);
    let (exit, log) = d.exit_and_log().await;
    assert_eq!(exit.code(), Some(0));
    assert!(log.contains("shutting down"), "{log}");
    assert!(
        !log.contains("secure-token"),
        "a token reached the log:\n{log}"
    );
    assert!(
        !d.path().join("gatebot.sock").exists(),
        "socket removed on exit"
    );
    // The database is intact and reopens with nothing lost.
    let pending = gatebot::engine::open_database(&d.path().join("gatebot.db")).unwrap();
    assert_eq!(pending, 0);
}

#[tokio::test]
async fn the_daemon_starts_on_the_example_config_without_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let dashboard = crate::helpers::example_config_at(&dir.path().join("bot.toml"));
    let mut child = Command::new(BIN)
        .args(["run", "--config"])
        .arg(dir.path().join("bot.toml"))
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    for _ in 0..200 {
        if dir.path().join("gatebot-control.sock").exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let out = Command::new(BIN)
        .args(["pending", "--config"])
        .arg(dir.path().join("bot.toml"))
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("Nothing is waiting for you."));
    // The owners' second way in is up too: the dashboard asks for a sign-in link.
    let page = crate::helpers::http_get(dashboard, "/signin").await;
    assert!(page.contains("gatebot dashboard login"), "{page}");
    child.start_kill().unwrap();
}

#[tokio::test]
async fn audit_prints_the_trail_and_verify_detects_tampering() {
    let d = Daemon::start().await;
    let out = ask("mailer", "query_org_data").run(&d).await;
    assert_eq!(out.status.code(), Some(0));
    let out = d.cli(&["audit", "--json", "--since", "1h"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(events.iter().any(|e| e["event"] == "submitted"));
    let out = d.cli(&["audit", "--since", "yesterday-ish"]).await;
    assert_eq!(out.status.code(), Some(2));

    let ok = d.cli(&["audit", "verify"]).await;
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stdout));
    assert!(text(&ok.stdout).contains("intact"));

    // Someone with write access to the database edits a row behind gatebot's back.
    let db = rusqlite::Connection::open(d.path().join("gatebot.db")).unwrap();
    db.busy_timeout(Duration::from_secs(5)).unwrap();
    db.execute_batch(
        "DROP TRIGGER audit_is_append_only_update; UPDATE audit SET actor = 'mallory' WHERE event = 'submitted';",
    )
    .unwrap();
    let bad = d.cli(&["audit", "verify"]).await;
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        text(&bad.stdout).contains("changed after it was written"),
        "{}",
        text(&bad.stdout)
    );
}

/// `gatebot agents recount`: a summary row changed behind gatebot's back is found by
/// `--check` (exit 1, the agent named, nothing changed), and fixed by a recount, which
/// the audit trail records.
#[tokio::test]
async fn agents_recount_checks_and_rebuilds_the_evidence_summaries() {
    let d = Daemon::start().await;
    for _ in 0..3 {
        let out = ask("mailer", "query_org_data").run(&d).await;
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let out = d.cli(&["agents", "recount", "--check"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("What gatebot keeps matches the requests."),
        "{}",
        text(&out.stdout)
    );

    let db = rusqlite::Connection::open(d.path().join("gatebot.db")).unwrap();
    db.busy_timeout(Duration::from_secs(5)).unwrap();
    db.execute_batch("UPDATE evidence_totals SET n = n + 5 WHERE agent = 'mailer'")
        .unwrap();
    let allowed = async || {
        let out = d.cli(&["agent", "mailer", "--json"]).await;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["evidence"]["all_time"]["allowed"].as_u64().unwrap()
    };
    assert_eq!(allowed().await, 8);

    let out = d.cli(&["agents", "recount", "--check"]).await;
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}{}", text(&out.stderr));
    assert!(
        said.contains(
            "mailer: requests: 8 kept, 3 counted from its requests; let through \
                       without asking a human: 8 kept, 3 counted from its requests"
        ),
        "{said}"
    );
    assert!(said.contains("Nothing was changed."), "{said}");
    assert!(
        !said.contains("evidence_totals") && !said.contains("low_confidence"),
        "{said}"
    );
    assert_eq!(allowed().await, 8, "a check changes nothing");

    let out = d.cli(&["agents", "recount"]).await;
    let said = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}{}", text(&out.stderr));
    assert!(said.contains("Rebuilt what gatebot keeps"), "{said}");
    assert_eq!(allowed().await, 3);
    let out = d.cli(&["agents", "recount", "--check"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let out = d.cli(&["audit", "--json", "--since", "1h"]).await;
    let recounted: Vec<serde_json::Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["event"] == "evidence_recounted")
        .collect();
    assert_eq!(recounted.len(), 1, "{recounted:?}");
    assert_eq!(
        recounted[0]["detail"]["agents"],
        serde_json::json!(["mailer"])
    );
}

#[tokio::test]
async fn sighup_reloads_the_config_and_refuses_an_invalid_one() {
    let d = Daemon::start().await;
    let hup = || d.signal(libc::SIGHUP);
    // A pending request from before the reload.
    let out = ask("intern", "create_contact").wait("1s").run(&d).await;
    assert_eq!(out.status.code(), Some(3));

    let config = BASE_CONFIG.replace(
        "[agents.intern]\ntier = \"supervised\"",
        "[agents.intern]\ntier = \"autonomous\"",
    );
    assert_ne!(config, BASE_CONFIG);
    std::fs::write(d.config(), &config).unwrap();
    hup();
    let mut reloaded = false;
    for _ in 0..100 {
        let out = ask("intern", "create_contact").wait("1s").run(&d).await;
        if out.status.code() == Some(0) {
            reloaded = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(reloaded, "the new tier never took effect");

    // An invalid file is refused; the daemon keeps the last good config.
    std::fs::write(d.config(), "[agents.intern]\ntier = \"yolo\"\n").unwrap();
    hup();
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The config file is now invalid, so name the socket instead of reading it.
    let sock = d.path().join("gatebot.sock");
    let out = ask("intern", "create_contact").run_on(&sock).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let pending = Command::new(BIN)
        .args(["pending", "--socket"])
        .arg(d.path().join("gatebot-control.sock"))
        .output()
        .await
        .unwrap();
    assert!(
        text(&pending.stdout).contains("create_contact"),
        "the old pending request survives"
    );
}

#[tokio::test]
async fn json_logs_carry_the_request_in_each_line_and_its_span() {
    let mut d = Daemon::start_with("[log]\nformat = \"json\"\n").await;
    let out = ask("mailer", "query_org_data").run(&d).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = ask("intern", "create_contact").wait("1s").run(&d).await;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let pending = text(&out.stdout);
    let short = pending.split_whitespace().nth(2).unwrap().to_string();
    let out = d.cli(&["decide", &short, "approve"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = ask("intern", "send_sms").ttl("1s").run(&d).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    // A refused token: the warning itself names no request, its span does.
    let out = ask("secure", "send_bulk_email")
        .token("wrong")
        .run(&d)
        .await;
    assert_eq!(out.status.code(), Some(2));
    let log = d.stop_and_log().await;

    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let find = |message: &str, tool: &str| {
        lines
            .iter()
            .find(|l| l["message"] == message && l["span"]["tool"] == tool)
            .unwrap_or_else(|| panic!("no `{message}` line for {tool}:\n{log}"))
    };

    let submitted = find("request submitted", "query_org_data");
    let id = submitted["id"].as_str().unwrap();
    assert_eq!(id.len(), 26, "{submitted}");
    assert_eq!(submitted["agent"], "mailer");
    assert_eq!(submitted["tool"], "query_org_data");
    assert_eq!(submitted["verdict"], "allowed");
    // The span of the API call carries the request too.
    assert_eq!(submitted["span"]["name"], "api", "{submitted}");
    assert_eq!(submitted["span"]["op"], "submit");
    assert_eq!(submitted["span"]["agent"], "mailer");

    let decided = find("request decided", "create_contact");
    assert_eq!(decided["verdict"], "approved");
    let span_names: Vec<&str> = decided["spans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(span_names, ["api", "decide"], "{decided}");
    assert_eq!(decided["span"]["agent"], "intern");
    assert_eq!(decided["span"]["id"], decided["id"]);
    assert_eq!(
        decided["span"]["verdict"], "pending",
        "recorded before the decision"
    );

    // The expiry task's line runs in a span of its own.
    let expired = lines
        .iter()
        .find(|l| l["message"] == "request expired")
        .unwrap_or_else(|| panic!("no expiry line:\n{log}"));
    assert_eq!(expired["span"]["name"], "expire", "{expired}");
    assert_eq!(expired["span"]["agent"], "intern");
    assert_eq!(expired["span"]["tool"], "send_sms");
    assert_eq!(expired["span"]["verdict"], "expired");

    let refused = find("unauthorised attempt refused", "send_bulk_email");
    assert!(refused.get("id").is_none(), "{refused}");
    assert_eq!(refused["span"]["op"], "submit");
    assert_eq!(refused["span"]["agent"], "secure");
    assert!(!log.contains("\"wrong\""), "the token reached the log");
}

#[tokio::test]
async fn a_supervised_agents_ask_waits_until_the_owner_approves() {
    let d = Daemon::start().await;
    // Even a read-only call waits for a human when the agent is supervised.
    let asking = ask("intern", "query_org_data").spawn(&d);
    let id = d.wait_for_pending().await;
    let decided = d.cli(&["decide", &id, "approve"]).await;
    assert_eq!(decided.status.code(), Some(0), "{}", text(&decided.stderr));
    assert!(text(&decided.stdout).starts_with("approved"));
    let out = asking.wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with(&format!("approved  id {id}")),
        "{}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stderr).contains(&format!("waiting for a human: request {id}")),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn approve_always_lets_the_next_identical_ask_through_at_once() {
    let d = Daemon::start().await;
    let call = ask("mailer", "send_email").args("{\"to\": \"ann@example.com\"}");
    let asking = call.spawn(&d);
    let id = d.wait_for_pending().await;
    let decided = d.cli(&["decide", &id, "approve-always"]).await;
    assert_eq!(decided.status.code(), Some(0), "{}", text(&decided.stderr));
    let out = asking.wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The same call again: allowed by the policy, nothing pending, no wait.
    let again = call.run(&d).await;
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    assert!(
        text(&again.stdout).starts_with("allowed"),
        "{}",
        text(&again.stdout)
    );
    assert!(!text(&again.stderr).contains("waiting for a human"));
    let pending = d.cli(&["pending"]).await;
    assert_eq!(text(&pending.stdout), "Nothing is waiting for you.\n");
}

#[tokio::test]
async fn an_ask_whose_ttl_runs_out_exits_1_and_says_expired_not_denied() {
    let d = Daemon::start().await;
    let out = ask("intern", "create_contact").ttl("2s").run(&d).await;
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("expired"),
        "{}",
        text(&out.stdout)
    );
    let err = text(&out.stderr).to_lowercase();
    assert!(err.contains("[action expired] create_contact"), "{err}");
    assert!(err.contains("no response within 2 s"), "{err}");
    assert!(
        !err.contains("denied by") && !err.contains("rejected"),
        "{err}"
    );
}

#[tokio::test]
async fn status_wait_exits_3_while_pending_and_0_once_approved() {
    let d = Daemon::start().await;
    let out = ask("intern", "create_contact").wait("1s").run(&d).await;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let id = d.wait_for_pending().await;
    let status = d.cli(&["status", &id, "--wait", "1s"]).await;
    assert_eq!(status.status.code(), Some(3), "{}", text(&status.stderr));
    assert!(text(&status.stdout).starts_with("pending"));
    // What it asks for, in words; and no hint to run the command just run.
    let shown = text(&status.stdout);
    assert!(
        shown.contains("intern wants to run create_contact"),
        "{shown}"
    );
    assert!(shown.contains("  risk: "), "{shown}");
    assert!(shown.contains("  expires in "), "{shown}");
    assert!(
        !text(&status.stderr).contains("gatebot status"),
        "{}",
        text(&status.stderr)
    );
    let decided = d.cli(&["decide", &id, "approve"]).await;
    assert_eq!(decided.status.code(), Some(0), "{}", text(&decided.stderr));
    let status = d.cli(&["status", &id, "--wait", "1s"]).await;
    assert_eq!(status.status.code(), Some(0), "{}", text(&status.stderr));
    assert!(text(&status.stdout).starts_with("approved"));
}

#[tokio::test]
async fn ask_reads_the_arguments_from_a_file() {
    let d = Daemon::start().await;
    let file = d.path().join("args.json");
    std::fs::write(
        &file,
        r#"{"to": ["ann@example.com"], "body": "Our new price is $49."}"#,
    )
    .unwrap();
    let out = ask("boss", "create_contact")
        .json()
        .args_file(&file)
        .run(&d)
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["args"]["to"][0], "ann@example.com");
    assert_eq!(v["args"]["body"], "Our new price is $49.");
    assert!(
        v["risk"]["factors"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("pricing_content")),
        "{v}"
    );
    // A file that is not there is an error (exit 2) that names it.
    let out = ask("boss", "create_contact")
        .args_file("/nonexistent/args.json")
        .run(&d)
        .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("/nonexistent/args.json"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn pending_lists_each_request_with_its_risk_level() {
    let d = Daemon::start().await;
    let out = ask("mailer", "send_email")
        .summary("Reply to Ann")
        .wait("1s")
        .run(&d)
        .await;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let id = d.wait_for_pending().await;
    let out = d.cli(&["pending"]).await;
    assert_eq!(out.status.code(), Some(0));
    let listing = text(&out.stdout);
    let line = listing
        .lines()
        .find(|l| l.starts_with(&id))
        .unwrap_or_else(|| panic!("{listing}"));
    assert!(
        line.contains("mailer") && line.contains("send_email"),
        "{line}"
    );
    assert!(line.contains(" high ") && line.contains(" in "), "{line}");
    assert!(listing.contains("Reply to Ann"), "{listing}");
}

/// Only the daemon resolves secrets: an owner's shell has neither the agents' token
/// variables nor systemd's `$CREDENTIALS_DIRECTORY`, and needs neither.
#[tokio::test]
async fn owner_commands_need_only_the_socket_not_the_daemons_secrets() {
    let creds = tempfile::tempdir().unwrap();
    std::fs::write(creds.path().join("keyed-token"), "keyed-secret-789").unwrap();
    let extra = "[agents.vault]\ntier = \"supervised\"\ntoken_env = \"GATEBOT_IT_VAULT_TOKEN\"\n\n\
                 [agents.keyed]\ntier = \"supervised\"\n\
                 token_file = \"${CREDENTIALS_DIRECTORY}/keyed-token\"\n";
    let d = Daemon::start_with_env(
        extra,
        &[
            ("GATEBOT_IT_VAULT_TOKEN", OsStr::new("vault-secret-456")),
            ("CREDENTIALS_DIRECTORY", creds.path().as_os_str()),
        ],
    )
    .await;
    // The owner's shell: the config would not load here.
    assert!(gatebot::config::Config::load(&d.config()).is_err());

    let out = ask("keyed", "create_contact")
        .token("keyed-secret-789")
        .wait("1s")
        .run(&d)
        .await;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let id = d.wait_for_pending().await;
    // (`status` of a pending request exits 3.)
    for (args, code) in [
        (vec!["pending"], 0),
        (vec!["status", &id], 3),
        (vec!["audit", "--since", "1h"], 0),
        (vec!["audit", "verify"], 0),
        (vec!["decide", &id, "deny", "--reason", "not today"], 0),
    ] {
        let out = d.cli(&args).await;
        assert_eq!(
            out.status.code(),
            Some(code),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    let out = d.cli(&["status", &id, "--json"]).await;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "rejected", "{v}");

    // A config that is not a bot.toml still fails, naming the key and line.
    std::fs::write(d.config(), "[queue]\ncontrol_socket = 5\n").unwrap();
    let out = d.cli(&["pending"]).await;
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains(":2:") && err.contains("queue.control_socket"),
        "{err}"
    );
    assert!(err.contains("--socket"), "{err}");
}

/// The name /etc/passwd gives the account this test runs as (read here, not through
/// gatebot), else `uid N`.
fn my_account(dir: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata(dir).unwrap().uid();
    std::fs::read_to_string("/etc/passwd")
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.len() > 2 && f[2] == uid.to_string()).then(|| f[0].to_string())
        })
        .unwrap_or_else(|| format!("uid {uid}"))
}

/// `decided_by` is the caller's account (the control socket's peer credentials), not
/// the daemon's `$USER`; the loser of a race is told that name.
#[tokio::test]
async fn a_cli_decision_is_recorded_as_the_callers_account_not_the_daemons_user() {
    let d = Daemon::start_with_env(
        "",
        &[
            ("USER", OsStr::new("daemon-env-user")),
            ("LOGNAME", OsStr::new("daemon-env-user")),
        ],
    )
    .await;
    let me = my_account(d.path());
    let decide = |id: &str, verb: &str, sudo_user: Option<&str>| {
        let mut c = d.command();
        c.args(["decide", id, verb])
            .env("USER", "client-env-user")
            .env("LOGNAME", "client-env-user")
            .env_remove("SUDO_USER");
        if let Some(p) = sudo_user {
            c.env("SUDO_USER", p);
        }
        async move { c.output().await.unwrap() }
    };
    let decided_by = async |id: &str| {
        let out = d.cli(&["status", id, "--json"]).await;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["decided_by"].as_str().unwrap().to_string()
    };

    let out = ask("intern", "create_contact").wait("1s").run(&d).await;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let id = d.wait_for_pending().await;
    let out = decide(&id, "approve", None).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(decided_by(&id).await, me);
    let again = decide(&id, "deny", None).await;
    assert_eq!(again.status.code(), Some(1));
    assert!(
        text(&again.stderr).contains(&format!("already approved by {me} on the command line")),
        "{}",
        text(&again.stderr)
    );

    // `sudo -u gatebot gatebot decide`: the account is gatebot's own, so the person
    // sudo names is recorded.
    let out = ask("intern", "create_contact").wait("1s").run(&d).await;
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let id = d.wait_for_pending().await;
    let bad = decide(&id, "deny", Some("alice on the command line")).await;
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains("must be a user name"),
        "{}",
        text(&bad.stderr)
    );
    let out = decide(&id, "deny", Some("alice")).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(decided_by(&id).await, "alice");
    let again = decide(&id, "approve", None).await;
    assert!(
        text(&again.stderr).contains("already denied by alice on the command line"),
        "{}",
        text(&again.stderr)
    );
}

#[tokio::test]
async fn agent_commands_set_tiers_pause_and_show_evidence_and_check_config_follows() {
    let d = Daemon::start_with(crate::trust::SHELL).await;
    let out = d
        .cli(&[
            "agent",
            "boss",
            "tier",
            "supervised",
            "--reason",
            "audit week",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("tier:        supervised (set by"),
        "{}",
        text(&out.stdout)
    );
    // check-config reads the owners' tier from the database.
    let out = d.cli(&["check-config"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let summary = text(&out.stdout);
    // Set by the caller's own account (the socket's peer credentials).
    let me = my_account(d.path());
    assert!(
        summary.contains(&format!("agent boss: supervised (set by {me}"))
            && summary.contains("bot.toml says autonomous"),
        "{summary}"
    );
    assert!(
        summary.contains("shell-like tool Bash: its command is in `command`"),
        "{summary}"
    );
    // Bad input: exit 2, the reason on stderr, nothing changed.
    for args in [
        &["agent", "boss", "tier", "godmode"][..],
        &["agent", "boss", "tier"],
        &["agent", "nobody", "pause"],
        &["agent", "boss", "tier", "autonomous", "--reset"],
    ] {
        let out = d.cli(args).await;
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stdout)
        );
        assert!(!text(&out.stderr).is_empty());
    }
    let out = d.cli(&["agent", "boss", "tier", "--reset"]).await;
    assert!(
        text(&out.stdout).contains("tier:        autonomous (as bot.toml sets it)"),
        "{}",
        text(&out.stdout)
    );

    // Pause: the next ask is blocked (exit 1) and says who paused it and why.
    let out = d
        .cli(&[
            "agent",
            "mailer",
            "pause",
            "--deny-pending",
            "--reason",
            "incident 7",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = ask("mailer", "query_org_data").run(&d).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("incident 7"),
        "{}",
        text(&out.stderr)
    );
    let out = d.cli(&["agents"]).await;
    let listing = text(&out.stdout);
    let mailer = listing.lines().find(|l| l.starts_with("mailer")).unwrap();
    assert!(
        mailer.contains("semi-autonomous") && mailer.contains("yes"),
        "{mailer}"
    );
    let out = d.cli(&["agent", "mailer", "resume"]).await;
    assert!(text(&out.stdout).contains("mailer resumed"));
    let out = d.cli(&["agent", "mailer", "--json"]).await;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["evidence"]["all_time"]["blocked"], 1);
    assert!(v.get("pause").is_none(), "{v}");
}

#[tokio::test]
async fn decide_grants_a_prefix_and_grants_revoke_takes_it_back() {
    let d = Daemon::start_with(crate::trust::SHELL).await;
    let call = ask("coder", "Bash").args("{\"command\": \"git status --short\"}");
    let asking = call.spawn(&d);
    let id = d.wait_for_pending().await;
    let out = d
        .cli(&["decide", &id, "approve-always", "--prefix", "git"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout)
            .contains("may run Bash without asking: commands starting `git`, until revoked"),
        "{}",
        text(&out.stdout)
    );
    asking.wait_with_output().await.unwrap();
    let out = ask("coder", "Bash")
        .args("{\"command\": \"git log\"}")
        .run(&d)
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = d.cli(&["grants", "--json"]).await;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let short = v["grants"][0]["short_id"].as_str().unwrap().to_string();
    let out = d.cli(&["grants"]).await;
    assert!(
        text(&out.stdout).contains(&short) && text(&out.stdout).contains("commands starting `git`")
    );
    assert!(
        text(&out.stdout).lines().all(|l| l.chars().count() <= 80),
        "80 columns: {}",
        text(&out.stdout)
    );
    let out = d.cli(&["grants", "revoke", &short]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = d.cli(&["grants", "revoke", &short]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("already revoked"));
    let out = ask("coder", "Bash")
        .args("{\"command\": \"git log\"}")
        .wait("1s")
        .run(&d)
        .await;
    assert_eq!(
        out.status.code(),
        Some(3),
        "asks again: {}",
        text(&out.stderr)
    );
    // A hostile prefix is refused before anything is stored.
    let id = d.wait_for_pending().await;
    let out = d
        .cli(&["decide", &id, "approve-always", "--prefix", "git log; rm"])
        .await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("not plain words"),
        "{}",
        text(&out.stderr)
    );
    let out = d.cli(&["decide", &id, "approve", "--for", "1h"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("exactly `git log`, until "),
        "{}",
        text(&out.stdout)
    );
}

#[tokio::test]
async fn pending_lists_open_proposals_and_decide_answers_them() {
    // Few requests: the daemon's debug log goes to a pipe this test does not drain.
    let d = Daemon::start_with("[promotion.to_semi_autonomous]\nmin_handled = 3\n").await;
    let client = gatebot::client::Client::new(d.path().join("gatebot-control.sock"));
    let agent = gatebot::client::Client::new(d.path().join("gatebot.sock"));
    for n in 0..3 {
        let r = agent
            .post(
                "/v1/requests",
                &serde_json::json!({"agent": "intern", "tool": "create_contact", "args": {"n": n}}),
            )
            .await
            .unwrap();
        let id = r.body["id"].as_str().unwrap().to_string();
        let r = client
            .post(
                &format!("/v1/requests/{id}/decision"),
                &serde_json::json!({"decision": "approve"}),
            )
            .await
            .unwrap();
        assert!(r.status.is_success(), "{:?}", r.body);
    }
    let out = d.cli(&["agent", "intern", "assess"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said = text(&out.stdout);
    assert!(
        said.contains("Promote intern to semi-autonomous?"),
        "{said}"
    );
    let out = d.cli(&["pending"]).await;
    let listing = text(&out.stdout);
    let line = listing
        .lines()
        .find(|l| l.contains("Promote intern"))
        .unwrap_or_else(|| panic!("{listing}"));
    let short = line.split_whitespace().next().unwrap().to_string();
    assert_eq!(
        line,
        format!(
            "{short}  Promote intern to semi-autonomous? (3 handled: 3 approved and 0 denied by \
             a human, 100 % went well)"
        )
    );
    let out = d.cli(&["pending", "--json"]).await;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["proposals"][0]["short_id"], short.as_str());
    assert!(
        v.get("said").is_none(),
        "JSON is the data, not the lines: {v}"
    );
    let out = d.cli(&["decide", &short, "approve"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("intern is now semi-autonomous"),
        "{}",
        text(&out.stdout)
    );
    let out = d.cli(&["decide", &short, "deny"]).await;
    assert_eq!(out.status.code(), Some(1), "already answered");
    assert!(
        text(&out.stderr).contains("already approved"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn hidden_characters_are_written_out_on_the_command_line_and_decode_in_json() {
    let d = Daemon::start_with(crate::trust::SHELL).await;
    let asking = ask("coder", "Bash")
        .args("{\"command\": \"ls\u{a0}-la\"}")
        .summary("report \u{202e}txt.exe")
        .spawn(&d);
    let id = d.wait_for_pending().await;
    let out = d.cli(&["pending"]).await;
    let shown = text(&out.stdout);
    assert!(!shown.contains(['\u{a0}', '\u{202e}']), "{shown}");
    assert!(shown.contains("\\u202etxt.exe"), "{shown}");
    // In JSON the escape is JSON's own: the value reads back unchanged.
    let out = d.cli(&["pending", "--json"]).await;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["requests"][0]["summary"], "report \u{202e}txt.exe");
    // No prefix is offered for a command with a no-break space: exact only.
    let out = d.cli(&["decide", &id, "approve-always", "--prefix"]).await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("ls\\u00a0-la"),
        "{}",
        text(&out.stderr)
    );
    d.cli(&["decide", &id, "deny"]).await;
    asking.wait_with_output().await.unwrap();
}

/// `gatebot agent NAME` and `gatebot agents` say what the evidence is made of: calls
/// nobody was asked about, reported `ok` by the agent itself, are shown apart and earn
/// nothing (issue 18: such an agent was proposed for autonomy, "99 % approved").
#[tokio::test]
async fn the_agent_page_shows_what_the_evidence_is_made_of() {
    // Few requests: the daemon's debug log goes to a pipe this test does not drain.
    let d = Daemon::start_with("[promotion.to_autonomous]\nmin_handled = 3\n").await;
    let agent = gatebot::client::Client::new(d.path().join("gatebot.sock"));
    for n in 0..3 {
        let r = agent
            .post(
                "/v1/requests",
                &serde_json::json!({"agent": "mailer", "tool": "query_org_data", "args": {"n": n}}),
            )
            .await
            .unwrap();
        assert_eq!(r.body["status"], "allowed", "{:?}", r.body);
        let id = r.body["id"].as_str().unwrap();
        let r = agent
            .post(
                &format!("/v1/requests/{id}/result"),
                &serde_json::json!({"ok": true}),
            )
            .await
            .unwrap();
        assert!(r.status.is_success(), "{:?}", r.body);
    }
    let out = d.cli(&["agent", "mailer"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let page = text(&out.stdout);
    let evidence: Vec<&str> = page
        .lines()
        .skip_while(|l| !l.starts_with("  all time:"))
        .take_while(|l| !l.starts_with("  grants:"))
        .collect();
    assert_eq!(
        evidence,
        [
            "  all time:    3 request(s): 3 let through without asking a human (0 by an owner's \
             grant), 0 blocked, 0 asked (0 approved, 0 denied, 0 expired, 0 cancelled, 0 \
             pending); the agent reported 3 succeeded and 0 failed; 0 blocked for low confidence",
            "  last 30 days: 3 request(s): 3 let through without asking a human (0 by an owner's \
             grant), 0 blocked, 0 asked (0 approved, 0 denied, 0 expired, 0 cancelled, 0 \
             pending); the agent reported 3 succeeded and 0 failed; 0 blocked for low confidence",
            "  evidence:    0 handled, 0 % went well, 0 % denied, 0 % escalated",
            "  by a human:  0 approved, 0 denied",
            "  not counted: 3 call(s) let through with nobody asked and no grant, and 3 \
             outcome(s) the agent reported for them (its own word)",
            "  assessment:  Not yet eligible for full autonomy. Needs 3 handled requests (has \
             0), at most 2 % denied (at 0 %), at least 80 % gone well (at 0 %), at most 10 % \
             escalated (at 0 %). 3 call(s) let through with nobody asked are not counted, nor \
             what the agent reported of them.",
        ]
    );
    let out = d.cli(&["agent", "mailer", "assess"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        !text(&out.stdout).contains("Promote"),
        "{}",
        text(&out.stdout)
    );
    let out = d.cli(&["agents"]).await;
    let listing = text(&out.stdout);
    let header = listing.lines().next().unwrap();
    let lines: Vec<&str> = listing.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("mailer "))
        .unwrap_or_else(|| panic!("{listing}"));
    let row = lines[at];
    let cells: Vec<(&str, &str)> = ["PENDING", "HANDLED", "WENT WELL", "GRANTS"]
        .into_iter()
        .map(|column| {
            // Columns are right-aligned and as wide as their headings.
            let start = header.find(column).unwrap();
            (column, row[start..start + column.len()].trim())
        })
        .collect();
    assert_eq!(
        cells,
        [
            ("PENDING", "0"),
            ("HANDLED", "0"),
            ("WENT WELL", "0 %"),
            ("GRANTS", "0")
        ]
    );
    // What the evidence is made of, under the row: calls nobody was asked about are
    // not counted, and said so.
    assert_eq!(
        lines[at + 1],
        "  evidence: 0 handled: 0 approved and 0 denied by a human, 0 % went well; 3 call(s) \
         nobody was asked about, not counted"
    );
    for l in &lines {
        assert!(
            l.chars().count() <= 80 || l.starts_with("  "),
            "wider than 80 columns: {l}"
        );
    }
}
