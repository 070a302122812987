//! Agents' commands with several gatebot endpoints over TCP (`GATEBOT_URL`): a call
//! goes on to the next endpoint when one refuses the connection, answers 503, breaks
//! the connection before answering or fails TLS, keeping its idempotency key; a
//! long-poll whose daemon is killed goes on at the other; when none takes the call the
//! error names each, and a hook denies. The agent's token never shows in what the
//! commands print or the daemons log. The daemons are separate (their own SQLite), so
//! the one that did not make a request does not know it; with one shared database
//! (PostgreSQL) the same polls find it.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gatebot::client::Client;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};

use crate::helpers::{free_port, log_text, spawn_app, TestApp, BASE_CONFIG};

/// The agent the tests act as, over TCP: its token must be sent, and must never show.
const TOKEN: &str = "tok-remote-5e1f9c0d";
/// `remote` may read at once, and waits for a human to edit a file.
const AGENTS: &str = "[agents.remote]\ntier = \"semi_autonomous\"\n\
                      require_approval_for = [\"Edit\"]\ntoken = \"tok-remote-5e1f9c0d\"\n";

/// A daemon with its TCP listener on a free port of loopback.
async fn node() -> TestApp {
    spawn_app(&format!("{AGENTS}[queue]\nlisten = \"127.0.0.1:0\"\n")).await
}

fn url(addr: SocketAddr) -> String {
    format!("http://{addr}")
}

fn tcp(app: &TestApp) -> String {
    url(app.tcp.unwrap())
}

/// A port of loopback nobody listens on.
fn closed() -> String {
    url(free_port())
}

/// `gatebot ARGS…` reaching gatebot at `urls` (GATEBOT_URL) with the agent's token in
/// GATEBOT_TOKEN, reading no config and no other gatebot variable.
fn gatebot(urls: &str, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gatebot"));
    c.arg("--config")
        .arg("/nonexistent/bot.toml")
        .args(args)
        .env_remove("GATEBOT_SOCKET")
        .env_remove("GATEBOT_CONFIG")
        .env_remove("GATEBOT_AGENT")
        .env_remove("GATEBOT_CA_FILE")
        .env("GATEBOT_URL", urls)
        .env("GATEBOT_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    c
}

/// Runs `cmd` to its end; its exit code, stdout and stderr, checked for the token.
async fn run(mut cmd: Command) -> (Option<i32>, String, String) {
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("the command ended")
        .unwrap();
    texts(&out)
}

fn texts(out: &Output) -> (Option<i32>, String, String) {
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        !stdout.contains(TOKEN) && !stderr.contains(TOKEN),
        "the token was printed: {stdout}\n{stderr}"
    );
    (out.status.code(), stdout, stderr)
}

/// `gatebot ask` as `remote` for a read the policy allows at once, JSON out.
fn ask_read(urls: &str) -> Command {
    gatebot(
        urls,
        &[
            "ask",
            "--agent",
            "remote",
            "--tool",
            "query_org_data",
            "--json",
        ],
    )
}

/// A Claude Code PreToolUse hook for `remote` with `budget`, started with its input.
async fn start_hook(urls: &str, budget: &str) -> Child {
    let input = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/hooks/claude-code-pre-tool-use.json"),
    )
    .unwrap();
    let mut cmd = gatebot(
        urls,
        &[
            "hook",
            "claude-code",
            "--agent",
            "remote",
            "--timeout",
            budget,
        ],
    );
    cmd.stdin(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    child
}

/// A hook's decision and its reason.
async fn hook_answer(child: Child) -> (String, String) {
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the hook answered")
        .unwrap();
    let (code, stdout, stderr) = texts(&out);
    assert_eq!(code, Some(0), "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let o = &v["hookSpecificOutput"];
    (
        o["permissionDecision"].as_str().unwrap().to_string(),
        o["permissionDecisionReason"]
            .as_str()
            .unwrap_or("")
            .to_string(),
    )
}

/// Every request `app` holds, as its owner lists them.
async fn requests(app: &TestApp) -> Vec<Value> {
    let res = app.owner.get("/v1/requests").await.unwrap();
    assert!(res.status.is_success(), "{:?}", res.body);
    res.body["requests"].as_array().unwrap().clone()
}

fn no_token_logged() {
    assert!(
        !log_text().contains(TOKEN),
        "the token is in the daemons' log"
    );
}

#[tokio::test]
async fn a_call_whose_first_endpoint_refuses_lands_on_the_second() {
    let (a, b) = (node().await, node().await);
    let list = format!("{},{},{}", closed(), tcp(&b), tcp(&a));
    let (code, stdout, stderr) = run(ask_read(&list)).await;
    assert_eq!(code, Some(0), "{stderr}");
    let asked: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(asked["status"], "allowed", "{stdout}");
    let on_b = requests(&b).await;
    assert_eq!(on_b.len(), 1, "{on_b:?}");
    assert_eq!(on_b[0]["id"], asked["id"]);
    assert!(requests(&a).await.is_empty());

    // The same list as --url flags, which win over GATEBOT_URL (here all closed).
    let mut cmd = ask_read(&format!("{},{}", closed(), closed()));
    cmd.args(["--url", &closed(), "--url", &tcp(&a)]);
    let (code, _, stderr) = run(cmd).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(requests(&a).await.len(), 1);
    no_token_logged();
}

#[tokio::test]
async fn a_node_answering_503_is_passed_over_and_when_none_takes_the_call_each_is_named() {
    if !crate::helpers::sqlite_only(
        "a_node_answering_503_is_passed_over_and_when_none_takes_the_call_each_is_named",
    ) {
        return;
    }
    let (a, b) = (node().await, node().await);
    // A database deleted under a running daemon: every submit is refused with 503.
    std::fs::remove_file(a.path().join("gatebot.db")).unwrap();
    let (code, stdout, stderr) = run(ask_read(&format!("{},{}", tcp(&a), tcp(&b)))).await;
    assert_eq!(code, Some(0), "{stderr}");
    let asked: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(requests(&b).await[0]["id"], asked["id"]);

    // Nothing takes it: the command's error names every endpoint and why.
    let (dead, sick) = (closed(), tcp(&a));
    let list = format!("{dead},{sick}");
    let (code, _, stderr) = run(ask_read(&list)).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("none of gatebot's 2 endpoints took the call"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{dead}: connection refused")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{sick}: answered 503 storage_unavailable")),
        "{stderr}"
    );
    // A hook denies, saying the same.
    let (decision, reason) = hook_answer(start_hook(&list, "10s").await).await;
    assert_eq!(decision, "deny", "{reason}");
    assert!(reason.contains("could not be asked"), "{reason}");
    assert!(
        reason.contains(&format!("{dead}: connection refused")),
        "{reason}"
    );
    assert!(
        reason.contains(&format!("{sick}: answered 503")),
        "{reason}"
    );
    assert!(reason.contains("was not run"), "{reason}");
    no_token_logged();
}

/// A node that reads one request, keeps its body, and drops the connection without
/// answering: what a daemon killed mid-call looks like.
fn breaks_after_reading() -> (SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let seen = bodies.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let mut r = BufReader::new(stream);
            if let Some((_, body)) = read_message(&mut r) {
                seen.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&body).into_owned());
            }
            // Dropped: the connection breaks before any answer.
        }
    });
    (addr, bodies)
}

#[tokio::test]
async fn a_call_broken_before_its_answer_goes_to_the_next_with_the_same_idempotency_key() {
    let b = node().await;
    let (broken, bodies) = breaks_after_reading();
    let (code, stdout, stderr) = run(ask_read(&format!("{},{}", url(broken), tcp(&b)))).await;
    assert_eq!(code, Some(0), "{stderr}");
    let asked: Value = serde_json::from_str(&stdout).unwrap();
    let sent: Value = serde_json::from_str(&bodies.lock().unwrap()[0]).unwrap();
    let key = sent["idempotency_key"]
        .as_str()
        .expect("ask sends a key of its own");
    assert!(key.starts_with("gatebot-"), "{key}");
    // B holds the request under that very key: the same call again is the same request.
    let again = b
        .agent
        .clone()
        .with_token(Some(TOKEN.into()))
        .post("/v1/requests", &sent)
        .await
        .unwrap();
    assert_eq!(again.body["id"], asked["id"], "{:?}", again.body);
    assert_eq!(requests(&b).await.len(), 1);
}

/// A daemon as its own process (to kill it), on `BASE_CONFIG` and [`AGENTS`], its TCP
/// listener at `addr`.
struct Process {
    dir: tempfile::TempDir,
    child: Child,
    addr: SocketAddr,
}

impl Process {
    async fn start() -> Process {
        let dir = tempfile::tempdir().unwrap();
        let addr = free_port();
        std::fs::write(
            dir.path().join("bot.toml"),
            format!("{BASE_CONFIG}\n{AGENTS}[queue]\nlisten = \"{addr}\"\n"),
        )
        .unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_gatebot"))
            .args(["run", "--config"])
            .arg(dir.path().join("bot.toml"))
            .env("RUST_LOG", "debug,rusqlite_migration=info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let p = Process { dir, child, addr };
        let started = Instant::now();
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the daemon did not start"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        p
    }

    fn owner(&self) -> Client {
        Client::new(self.dir.path().join("gatebot-control.sock"))
    }
}

#[tokio::test]
async fn a_hook_waiting_on_a_killed_node_polls_the_other_and_denies_naming_both() {
    let mut a = Process::start().await;
    let b = node().await;
    let (at_a, at_b) = (url(a.addr), tcp(&b));
    let started = Instant::now();
    let hook = start_hook(&format!("{at_a},{at_b}"), "6s").await;
    // The request waits at A, the first endpoint.
    let owner = a.owner();
    let mut pending = Vec::new();
    while pending.is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "no request at A"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        pending = owner.get("/v1/requests?status=pending").await.unwrap().body["requests"]
            .as_array()
            .unwrap()
            .clone();
    }
    let short = pending[0]["short_id"].as_str().unwrap().to_string();
    a.child.start_kill().unwrap();
    let out = a.child.wait_with_output().await.unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!log.contains(TOKEN), "the token is in A's log");

    let (decision, reason) = hook_answer(hook).await;
    let took = started.elapsed();
    assert_eq!(decision, "deny", "{reason}");
    // B was asked for the request and does not know it (separate databases): the deny
    // says so, and that A could not be reached. Nothing was submitted again at B.
    assert!(reason.contains(&format!("request {short}")), "{reason}");
    assert!(reason.contains("still queued"), "{reason}");
    assert!(
        reason.contains(&format!("{at_a}: connection refused")),
        "{reason}"
    );
    assert!(
        reason.contains(&format!("{at_b}: answered 404 not_found")),
        "{reason}"
    );
    assert!(requests(&b).await.is_empty());
    assert!(took < Duration::from_secs(12), "answered after {took:?}");
    no_token_logged();
}

#[tokio::test]
async fn a_malformed_endpoint_list_is_refused_saying_what_to_write() {
    for (list, says) in [
        (
            "http://127.0.0.1:9,,http://127.0.0.1:8",
            "GATEBOT_URL: entry 2 is empty",
        ),
        (
            "ftp://127.0.0.1:9",
            "starts with ftp://; gatebot's endpoints are http:// or https://",
        ),
        ("127.0.0.1:9", "has no scheme; write http://127.0.0.1:9"),
        ("http://127.0.0.1:9/api", "has a path"),
    ] {
        let (code, _, stderr) = run(ask_read(list)).await;
        assert_eq!(code, Some(2), "{list}: {stderr}");
        assert!(stderr.contains(says), "{list}: {stderr}");
        // A hook denies with the same words.
        let (decision, reason) = hook_answer(start_hook(list, "5s").await).await;
        assert_eq!(decision, "deny");
        assert!(reason.contains(says), "{list}: {reason}");
    }
    let mut both = ask_read("http://127.0.0.1:9");
    both.args([
        "--url",
        "http://127.0.0.1:9",
        "--socket",
        "/nonexistent.sock",
    ]);
    let (code, _, stderr) = run(both).await;
    assert_eq!(code, Some(2));
    assert!(stderr.contains("--url and --socket"), "{stderr}");
    // Over TCP the token is required: its absence is said before anything is sent.
    let mut tokenless = ask_read("http://127.0.0.1:9");
    tokenless.env_remove("GATEBOT_TOKEN");
    let (code, _, stderr) = run(tokenless).await;
    assert_eq!(code, Some(2));
    assert!(stderr.contains("set GATEBOT_TOKEN"), "{stderr}");
    // The owner's commands stay on the control socket.
    let (code, _, stderr) = run(gatebot("", &["pending", "--url", "http://127.0.0.1:9"])).await;
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("--url is for the agents' commands"),
        "{stderr}"
    );
}

/// The test certificates (tests/fixtures/tls/make.sh says how they were made).
fn tls_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tls")
        .join(name)
}

/// One HTTP/1.1 message from `r`: its head (with the blank line) and its body (by
/// Content-Length); `None` at the end of the stream.
fn read_message(r: &mut impl BufRead) -> Option<(Vec<u8>, Vec<u8>)> {
    let mut head = Vec::new();
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                len = value.trim().parse().ok()?;
            }
        }
        head.extend_from_slice(line.as_bytes());
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some((head, body))
}

/// A TLS front for the daemon at `to` (as a proxy would be), serving the test
/// certificate for 127.0.0.1: each request and answer passed through as they are.
fn tls_front(to: SocketAddr) -> SocketAddr {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(tls_fixture("server.pem"))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(tls_fixture("server.key")).unwrap();
    let config = Arc::new(
        rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap(),
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let config = config.clone();
            std::thread::spawn(move || {
                let conn = rustls::ServerConnection::new(config).unwrap();
                let mut tls = BufReader::new(rustls::StreamOwned::new(conn, stream));
                let Ok(up) = std::net::TcpStream::connect(to) else {
                    return;
                };
                let mut up = BufReader::new(up);
                while let Some((head, body)) = read_message(&mut tls) {
                    let sent = up
                        .get_mut()
                        .write_all(&head)
                        .and_then(|()| up.get_mut().write_all(&body));
                    let Some((head, body)) = sent.ok().and_then(|()| read_message(&mut up)) else {
                        return;
                    };
                    let w = tls.get_mut();
                    if w.write_all(&head)
                        .and_then(|()| w.write_all(&body))
                        .and_then(|()| w.flush())
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    addr
}

#[tokio::test]
async fn https_endpoints_are_checked_against_the_ca_file_and_a_tls_failure_is_passed_over() {
    let b = node().await;
    let https = format!("https://{}", tls_front(b.tcp.unwrap()));
    let ca = tls_fixture("ca.pem");

    let mut cmd = ask_read(&https);
    cmd.env("GATEBOT_CA_FILE", &ca);
    let (code, stdout, stderr) = run(cmd).await;
    assert_eq!(code, Some(0), "{stderr}");
    let asked: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(requests(&b).await[0]["id"], asked["id"]);

    // Without the CA, the certificate is not trusted: the error says what to set…
    let (code, _, stderr) = run(ask_read(&https)).await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot talk to gatebot at {https} over TLS")),
        "{stderr}"
    );
    assert!(stderr.contains("GATEBOT_CA_FILE"), "{stderr}");
    // …and with another endpoint after it, the call goes there.
    let (code, _, stderr) = run(ask_read(&format!("{https},{}", tcp(&b)))).await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(requests(&b).await.len(), 2);
    // A CA file that is not one is named.
    let mut cmd = ask_read(&https);
    cmd.env("GATEBOT_CA_FILE", tls_fixture("make.sh"));
    let (code, _, stderr) = run(cmd).await;
    assert_eq!(code, Some(2));
    assert!(
        stderr.contains("make.sh): holds no certificate"),
        "{stderr}"
    );
    no_token_logged();
}

#[tokio::test]
async fn a_worker_claims_over_the_endpoints_and_hands_them_to_its_command() {
    use crate::inbox::{add, start, task, RESEARCHER_TOKEN};
    let app = start("", "[queue]\nlisten = \"127.0.0.1:0\"\n").await;
    let t = add(
        &app,
        serde_json::json!({"text": "look into it", "agent": "researcher"}),
    )
    .await;
    let id = t.body["id"].as_str().unwrap().to_string();
    let (dead, live) = (closed(), tcp(&app));
    let list = format!("{dead},{live}");
    // Given by flag, which wins over the variable (pointing nowhere useful here): the
    // command gets the worker's endpoints, not what the worker inherited.
    let mut cmd = gatebot(
        "http://127.0.0.1:1",
        &[
            "--url",
            &dead,
            "--url",
            &live,
            "worker",
            "--agent",
            "researcher",
            "--once",
            "--",
            "sh",
            "-c",
            "env | grep '^GATEBOT_' | sort > env.txt; echo done",
        ],
    );
    cmd.env("GATEBOT_TOKEN", RESEARCHER_TOKEN)
        .env("GATEBOT_SOCKET", "/nonexistent.sock")
        .current_dir(app.path());
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("the worker ended")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains(RESEARCHER_TOKEN), "{stderr}");
    assert_eq!(task(&app, &id).await["status"], "completed");
    // The command's hooks reach the same gatebot, as the same agent.
    let env = std::fs::read_to_string(app.path().join("env.txt")).unwrap();
    assert!(env.contains(&format!("GATEBOT_URL={list}\n")), "{env}");
    assert!(!env.contains("GATEBOT_SOCKET"), "{env}");
    assert!(env.contains("GATEBOT_TOKEN="), "{env}");
}
