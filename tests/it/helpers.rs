//! Test harness: a whole gatebot in a temp dir, with clients for both sockets.

use std::path::{Path, PathBuf};
use std::time::Duration;

use gatebot::client::{Client, Response};
use gatebot::config::Config;
use gatebot::daemon::App;
use serde_json::{json, Value};
use tempfile::TempDir;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

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
    let config_path = dir.path().join("bot.toml");
    std::fs::write(&config_path, config).unwrap();
    let config = Config::load(&config_path).unwrap();
    let (agent_sock, owner_sock) = (
        config.queue.socket.clone(),
        config.queue.control_socket.clone(),
    );
    let app = App::build(config).await.unwrap();
    let tcp = app.tcp_addr();
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
        stop: Some(tx),
        task: Some(task),
    }
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

    pub async fn decide(&self, id: &str, decision: &str, reason: Option<&str>) -> Response {
        self.owner
            .post(
                &format!("/v1/requests/{id}/decision"),
                &json!({"decision": decision, "reason": reason, "actor": "alice"}),
            )
            .await
            .unwrap()
    }

    pub async fn get(&self, id: &str, wait_secs: f64) -> Response {
        self.agent
            .get(&format!("/v1/requests/{id}?wait={wait_secs}"))
            .await
            .unwrap()
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
