//! Test harness: a whole gatebot in a temp dir, with clients for both sockets;
//! [`eventually`] for anything that happens in the background; and the log of
//! every in-process daemon ([`log_text`]), printed too when `TEST_LOG` is set.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};
use std::time::Duration;

use gatebot::chat::exchange::Actor;
use gatebot::client::{Client, Response};
use gatebot::config::Config;
use gatebot::daemon::App;
use serde_json::{json, Value};
use tempfile::TempDir;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use crate::wait::{eventually, eventually_within, free_port};

/// Agents every test can use, on top of what a test adds.
pub const BASE_CONFIG: &str = r#"
[policy]
tool_approval_mode = "dangerous"
default_ttl = "1h"

[tools]
query_org_data = "read-only"
send_email = "destructive"
create_contact = "write"

[agents.mailer]
tier = "semi_autonomous"
require_approval_for = ["send_bulk_email"]

[agents.boss]
tier = "autonomous"

[agents.intern]
tier = "supervised"

[agents.drafter]
tier = "draft_only"

[agents.secure]
tier = "semi_autonomous"
token = "secure-token-123"

[agents.other]
tier = "semi_autonomous"
token = "other-token-456"
"#;

pub struct TestApp {
    pub dir: TempDir,
    pub config_path: PathBuf,
    /// The running daemon's engine (to reload its config as SIGHUP would).
    pub engine: std::sync::Arc<gatebot::engine::Engine>,
    pub agent: Client,
    pub owner: Client,
    pub tcp: Option<std::net::SocketAddr>,
    /// The web dashboard's address, when `[dashboard] listen` is set.
    pub dashboard: Option<std::net::SocketAddr>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<anyhow::Result<()>>>,
}

/// Starts a daemon on `BASE_CONFIG` plus `extra` TOML, in a fresh temp dir.
pub async fn spawn_app(extra: &str) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    spawn_app_in(dir, extra).await
}

/// Starts a daemon in an existing dir (for restart tests).
pub async fn spawn_app_in(dir: TempDir, extra: &str) -> TestApp {
    spawn_app_with_config(dir, &format!("{BASE_CONFIG}\n{extra}")).await
}

/// Starts a daemon in `dir` on exactly `config` (no `BASE_CONFIG`).
pub async fn spawn_app_with_config(dir: TempDir, config: &str) -> TestApp {
    spawn_app_with(dir, config, Vec::new()).await
}

/// The approver who acts on the in-memory platform in the tests.
pub fn alice() -> Actor {
    Actor {
        id: "42".into(),
        name: "Alice".into(),
        approver: true,
        person: None,
    }
}

/// Someone in the chat who is no approver.
pub fn mallory() -> Actor {
    Actor {
        id: "66".into(),
        name: "Mallory".into(),
        approver: false,
        person: None,
    }
}

/// Starts a daemon on `BASE_CONFIG` plus `extra`, in `dir`, with the in-memory chat
/// platform `memory` running beside whatever the config turns on.
pub async fn spawn_app_with_memory(
    dir: TempDir,
    extra: &str,
    memory: &std::sync::Arc<gatebot::chat::memory::Memory>,
) -> TestApp {
    spawn_app_with(
        dir,
        &format!("{BASE_CONFIG}\n{extra}"),
        vec![memory.runner()],
    )
    .await
}

/// Starts a daemon in `dir` on exactly `config`, running `platforms` too.
pub async fn spawn_app_with(
    dir: TempDir,
    config: &str,
    platforms: Vec<gatebot::chat::platform::PlatformRun>,
) -> TestApp {
    capture_logs();
    let config_path = dir.path().join("bot.toml");
    std::fs::write(&config_path, on_the_store_under_test(config, dir.path())).unwrap();
    let config = Config::load(&config_path).unwrap();
    let (agent_sock, owner_sock) = (
        config.queue.socket.clone(),
        config.queue.control_socket.clone(),
    );
    let mut app = App::build(config).await.unwrap();
    for platform in platforms {
        app.add_platform(platform);
    }
    let tcp = app.tcp_addr();
    let dashboard = app.dashboard_addr();
    let engine = app.engine();
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(app.run_until(async {
        let _ = rx.await;
    }));
    TestApp {
        dir,
        config_path,
        engine,
        agent: Client::new(agent_sock),
        owner: Client::new(owner_sock),
        tcp,
        dashboard,
        stop: Some(tx),
        task: Some(task),
    }
}

/// What `GET /v1/health` answers `client`: its status and body.
pub async fn health(client: &Client) -> (hyper::StatusCode, Value) {
    let res = client.get("/v1/health").await.unwrap();
    (res.status, res.body)
}

/// `res` is a 503 `storage_unavailable` whose message says `says`: its message.
pub fn assert_unavailable(res: &Response, says: &str) -> String {
    assert_eq!(
        res.status,
        hyper::StatusCode::SERVICE_UNAVAILABLE,
        "{:?}",
        res.body
    );
    assert_eq!(
        res.error_code(),
        Some("storage_unavailable"),
        "{:?}",
        res.body
    );
    let message = res.error_message();
    assert!(message.contains(says), "{message}");
    message
}

/// `/v1/health` answers `client` that the store is out of reach, saying `says`.
pub async fn assert_health_unavailable(client: &Client, says: &str) {
    let (status, body) = health(client).await;
    assert_eq!(status, hyper::StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["ok"], false, "{body}");
    assert_eq!(body["storage"], "storage_unavailable", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains(says)),
        "{body}"
    );
}

/// A `send_email` call of mailer's (pending: a destructive tool), the `n`th.
pub fn send_email(n: usize) -> Value {
    json!({"agent": "mailer", "tool": "send_email", "args": {"n": n}})
}

/// `config` as the test's daemon runs it. With `GATEBOT_STORE_TESTS=postgres` (`.ci/run`
/// runs the suite both ways) its store is a database of the throwaway PostgreSQL cluster
/// (`[store] url`, written into the file so a reload reads it too), one per test
/// directory: a restart in the same directory finds the same database. Tests that
/// open the SQLite file themselves return early on PostgreSQL ([`sqlite_only`]).
pub fn on_the_store_under_test(config: &str, dir: &Path) -> String {
    if !postgres_under_test() || config.contains("\nurl = \"postgres") {
        return config.to_string();
    }
    let marker = dir.join("postgres-url");
    let url = match std::fs::read_to_string(&marker) {
        Ok(url) => url,
        Err(_) => {
            let db = crate::pg_cluster::database()
                .expect("GATEBOT_STORE_TESTS=postgres, but PostgreSQL is not installed");
            std::fs::write(&marker, db.url()).unwrap();
            db.url()
        }
    };
    let line = format!("url = \"{url}\"\n");
    match config.find("[store]\n") {
        Some(at) => {
            let after = at + "[store]\n".len();
            format!("{}{line}{}", &config[..after], &config[after..])
        }
        None => format!("{config}\n[store]\n{line}"),
    }
}

/// Whether this run's in-process daemons keep their store on PostgreSQL.
pub fn postgres_under_test() -> bool {
    match std::env::var("GATEBOT_STORE_TESTS").as_deref() {
        Ok("postgres") => true,
        Ok("sqlite" | "") | Err(_) => false,
        Ok(other) => panic!("GATEBOT_STORE_TESTS is `sqlite` or `postgres`, not {other:?}"),
    }
}

/// For a test that reads or changes the SQLite file itself: `false` (the test returns
/// at once, saying so on stderr) when the suite runs on PostgreSQL.
pub fn sqlite_only(test: &str) -> bool {
    if postgres_under_test() {
        eprintln!("{test}: about the SQLite file itself; not run on PostgreSQL");
        return false;
    }
    true
}

impl TestApp {
    /// Stops the daemon gracefully and returns its directory for a restart.
    pub async fn stop(mut self) -> TempDir {
        self.stop.take().unwrap().send(()).unwrap();
        let task = self.task.take().unwrap();
        tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("graceful shutdown within 10s")
            .unwrap()
            .unwrap();
        // Move the dir out without running Drop's stop again.
        std::mem::replace(&mut self.dir, tempfile::tempdir().unwrap())
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Submits as an agent (no token).
    pub async fn submit(&self, body: Value) -> Response {
        self.agent.post("/v1/requests", &body).await.unwrap()
    }

    /// Submits `tool` with `args` for `agent`, expecting success.
    pub async fn submit_ok(&self, agent: &str, tool: &str, args: Value) -> Value {
        let res = self
            .submit(json!({"agent": agent, "tool": tool, "args": args}))
            .await;
        assert!(res.status.is_success(), "{:?}", res.body);
        res.body
    }

    /// Submits `body` as an agent, expecting it to wait for a human: (id, short id).
    pub async fn submit_pending(&self, body: Value) -> (String, String) {
        let res = self.submit(body).await;
        assert!(res.status.is_success(), "{:?}", res.body);
        assert_eq!(res.body["status"], "pending", "{:?}", res.body);
        (
            res.body["id"].as_str().unwrap().to_string(),
            res.body["short_id"].as_str().unwrap().to_string(),
        )
    }

    /// The owners' client acting for `person`, as `sudo -u gatebot gatebot …` does for
    /// them: the test process is the daemon's own account, so the person sudo names is
    /// recorded.
    pub fn owner_as(&self, person: &str) -> Client {
        self.owner
            .clone()
            .with_header(gatebot::peer::SUDO_USER_HEADER, person)
    }

    /// Decides as the owner `alice` ([`TestApp::owner_as`]).
    pub async fn decide(&self, id: &str, decision: &str, reason: Option<&str>) -> Response {
        self.owner_as("alice")
            .post(
                &format!("/v1/requests/{id}/decision"),
                &json!({"decision": decision, "reason": reason}),
            )
            .await
            .unwrap()
    }

    /// Decides as [`TestApp::decide`] does, expecting success.
    pub async fn decide_ok(&self, id: &str, decision: &str, reason: Option<&str>) -> Value {
        let res = self.decide(id, decision, reason).await;
        assert!(res.status.is_success(), "{:?}", res.body);
        res.body
    }

    /// The request as the agent sees it, after waiting up to `wait_secs` for a decision.
    pub async fn get(&self, id: &str, wait_secs: f64) -> Response {
        self.agent
            .get(&format!("/v1/requests/{id}?wait={wait_secs}"))
            .await
            .unwrap()
    }

    /// The request once its status is `want`.
    pub async fn wait_for_status(&self, id: &str, want: &str) -> Value {
        eventually(&format!("{id} to become {want}"), async || {
            let body = self.get(id, 2.0).await.body;
            (body["status"] == want).then_some(body)
        })
        .await
    }

    pub async fn audit_events(&self, id: &str) -> Vec<String> {
        let res = self
            .owner
            .get(&format!("/v1/audit?request={id}"))
            .await
            .unwrap();
        res.body["audit"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["event"].as_str().unwrap().to_string())
            .collect()
    }
}

/// A plain HTTP/1.1 GET over TCP (for `/metrics`, which is not JSON): the raw response.
pub async fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

impl TestApp {
    /// The Prometheus text from the control socket.
    pub async fn metrics(&self) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::UnixStream::connect(self.path().join("gatebot-control.sock"))
            .await
            .unwrap();
        s.write_all(b"GET /metrics HTTP/1.0\r\nHost: gatebot\r\n\r\n")
            .await
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    /// The audit rows of one request, as JSON.
    pub async fn audit_rows(&self, id: &str) -> Vec<Value> {
        let res = self
            .owner
            .get(&format!("/v1/audit?request={id}"))
            .await
            .unwrap();
        res.body["audit"].as_array().unwrap().clone()
    }
}

/// What the log capture records: everything at debug, as `[log] level = "debug"` does,
/// so a token in any library's debug line shows. reqwest and twilight_http are capped at
/// info as the daemon caps them (`telemetry::init`): they log request URLs, Telegram's
/// bot token and Discord's interaction tokens included.
const LOG_FILTER: &str = "debug,reqwest=info,twilight_http=info";

/// Everything logged since the capture was installed, by every test in this binary.
static LOGS: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// Installs the global subscriber once: it records into [`LOGS`] and, when `TEST_LOG`
/// is set, also prints to the output of the test that logged.
pub fn capture_logs() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        use tracing_subscriber::layer::SubscriberExt;
        use tracing_subscriber::util::SubscriberInitExt;
        let record = tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(|| LogSink);
        let print = std::env::var_os("TEST_LOG")
            .is_some()
            .then(|| tracing_subscriber::fmt::layer().with_test_writer());
        tracing_subscriber::registry()
            .with(tracing_subscriber::EnvFilter::new(LOG_FILTER))
            .with(record)
            .with(print)
            .init();
    });
}

/// The captured log so far (installing the capture if nothing has yet).
pub fn log_text() -> String {
    capture_logs();
    String::from_utf8_lossy(&LOGS.lock().unwrap()).into_owned()
}

/// A writer appending to [`LOGS`].
struct LogSink;

impl std::io::Write for LogSink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        LOGS.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `gatebot --socket SOCKET ARGS…` as a child process: reading no config and no gatebot
/// environment, stdin empty, stdout and stderr piped, killed when dropped.
pub fn gatebot_at(socket: &std::path::Path, args: &[&str]) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_gatebot"));
    c.arg("--config")
        .arg("/nonexistent/bot.toml")
        .arg("--socket")
        .arg(socket)
        .args(args)
        .env_remove("GATEBOT_SOCKET")
        .env_remove("GATEBOT_URL")
        .env_remove("GATEBOT_TOKEN")
        .env_remove("GATEBOT_CONFIG")
        .env_remove("GATEBOT_AGENT")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    c
}

/// The example `bot.toml`, written to `to`, with its dashboard on a free port of
/// loopback instead of 8378 (which another test, or the reader's own gatebot, may hold).
/// Returns the dashboard's address.
pub fn example_config_at(to: &std::path::Path) -> std::net::SocketAddr {
    let example =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("bot.toml"))
            .unwrap();
    let addr = free_port();
    let listen = "listen = \"127.0.0.1:8378\"";
    assert!(example.contains(listen), "the example's dashboard moved");
    std::fs::write(to, example.replace(listen, &format!("listen = \"{addr}\""))).unwrap();
    addr
}

/// Sends signal `sig` (`libc::SIGTERM`, …) to process `pid`, a child the test started
/// and has not waited for (with libc, not kill(1): a minimal machine may lack procps).
pub fn signal(pid: u32, sig: libc::c_int) {
    let pid = libc::pid_t::try_from(pid).expect("a pid");
    // SAFETY: kill has no memory-safety preconditions; the pid is the test's own child.
    let sent = unsafe { libc::kill(pid, sig) };
    assert_eq!(
        sent,
        0,
        "signal {sig} to {pid}: {}",
        std::io::Error::last_os_error()
    );
}
