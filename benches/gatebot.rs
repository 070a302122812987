//! `cargo bench` — prints gatebot's performance figures (no assertions).
//! docs/performance.md explains each figure and records the latest run.
//!
//! Sections (run one with `cargo bench -- NAME`): policy, submit, daemon.

use std::path::Path;
use std::time::{Duration, Instant};

use gatebot::api::client::Client;
use gatebot::config::Config;
use gatebot::daemon::App;
use gatebot::policy::{AgentRules, History, Request, Tier};
use serde_json::{json, Value};

fn main() {
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let wants = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
    println!(
        "gatebot benchmarks ({} cores)",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    if wants("policy") {
        policy();
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    if wants("submit") {
        rt.block_on(submit());
    }
    if wants("daemon") {
        rt.block_on(daemon());
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1]
}

fn policy() {
    let config = Config::parse(
        "[tools]\nsend_email = \"destructive\"\nquery_org_data = \"read-only\"\n",
        Path::new("bench.toml"),
    )
    .unwrap();
    let rules = AgentRules::with_tier(Tier::SemiAutonomous);
    let typical = json!({
        "to": ["ann@example.com", "bo@example.com"],
        "subject": "Your quote",
        "body": "Hi Ann, as discussed the price is $49 per seat. See https://example.com/pricing. Best, Bo"
    });
    // Worst case: a body at the default 64 KiB cap, many strings, every pattern near-missing.
    let filler: Vec<Value> = (0..600)
        .map(|i| json!({"line": format!("item {i}: pricey competitors-ish text http:/not-a-url rm -r f drop tab le {}", "x".repeat(60))}))
        .collect();
    let worst = json!({"command": "echo ok", "rows": filler, "recipients": (0..200).map(|i| format!("u{i}@example.com")).collect::<Vec<_>>()});
    println!("\n## policy evaluation (risk scoring + decision), per request");
    for (name, args) in [
        ("typical (3 fields, 170 B)", &typical),
        ("worst case (~64 KiB, 800 strings)", &worst),
    ] {
        let size = args.to_string().len();
        let req = Request {
            tool: "send_email",
            args,
            confidence: Some(0.8),
            environment: Some("production"),
        };
        let history = History {
            always_allowed: false,
            first_use: true,
        };
        // Warm up, then time enough iterations for a stable mean.
        for _ in 0..100 {
            std::hint::black_box(config.policy.evaluate(&rules, history, &req));
        }
        let n = if size > 10_000 { 2_000 } else { 200_000 };
        let start = Instant::now();
        for _ in 0..n {
            std::hint::black_box(config.policy.evaluate(&rules, history, &req));
        }
        let per = start.elapsed() / n;
        println!("{name:<36} {size:>6} B args: {per:>10.2?} per evaluation");
    }
}

struct Running {
    _dir: tempfile::TempDir,
    agent: std::path::PathBuf,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

async fn spawn(dir: tempfile::TempDir) -> Running {
    let cfg = dir.path().join("bot.toml");
    std::fs::write(
        &cfg,
        "[tools]\nquery_org_data = \"read-only\"\n[agents.bench]\ntier = \"semi_autonomous\"\n",
    )
    .unwrap();
    let config = Config::load(&cfg).unwrap();
    let agent = config.queue.socket.clone();
    let app = App::build(config).await.unwrap();
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(app.run_until(async {
        let _ = rx.await;
    }));
    Running {
        _dir: dir,
        agent,
        stop,
        task,
    }
}

/// Raw SQLite: one INSERT per transaction, WAL + synchronous=FULL, like the store.
fn raw_sqlite_inserts(dir: &Path, n: usize) -> f64 {
    let conn = rusqlite::Connection::open(dir.join("raw.db")).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.pragma_update(None, "synchronous", "FULL").unwrap();
    conn.execute_batch("CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT NOT NULL)")
        .unwrap();
    let body = "x".repeat(400);
    let start = Instant::now();
    for i in 0..n {
        conn.execute(
            "INSERT INTO t VALUES (?1, ?2)",
            rusqlite::params![format!("{i:026}"), body],
        )
        .unwrap();
    }
    n as f64 / start.elapsed().as_secs_f64()
}

async fn submit() {
    println!("\n## durable submit through the Unix socket (WAL, synchronous=FULL)");
    let dir = tempfile::tempdir().unwrap();
    let raw = tokio::task::spawn_blocking({
        let p = dir.path().to_path_buf();
        move || raw_sqlite_inserts(&p, 2_000)
    })
    .await
    .unwrap();
    println!("raw SQLite, one INSERT per commit, same disk and settings: {raw:>8.0} inserts/s");
    for agents in [1usize, 8, 64] {
        let run = spawn(tempfile::tempdir().unwrap()).await;
        let per_agent = (2_000 / agents).max(20);
        let start = Instant::now();
        let mut tasks = Vec::new();
        for a in 0..agents {
            let client = Client::new(&run.agent);
            tasks.push(tokio::spawn(async move {
                let mut lat = Vec::with_capacity(per_agent);
                for i in 0..per_agent {
                    let body = json!({"agent": "bench", "tool": "query_org_data",
                        "args": {"q": format!("contacts in Berlin {a}-{i}")}});
                    let t = Instant::now();
                    let res = client.post("/v1/requests", &body).await.unwrap();
                    assert!(res.status.is_success());
                    lat.push(t.elapsed());
                }
                lat
            }));
        }
        let mut lat = Vec::new();
        for t in tasks {
            lat.extend(t.await.unwrap());
        }
        let elapsed = start.elapsed();
        lat.sort();
        let rate = lat.len() as f64 / elapsed.as_secs_f64();
        println!(
            "{agents:>2} concurrent agents: {rate:>8.0} submits/s (ratio to raw {:.2})  p50 {:>9.2?}  p99 {:>9.2?}  ({} requests)",
            rate / raw,
            percentile(&lat, 0.50),
            percentile(&lat, 0.99),
            lat.len()
        );
        run.stop.send(()).unwrap();
        run.task.await.unwrap().unwrap();
    }
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// Starts the release/bench binary and times until the control socket answers.
async fn start_binary(dir: &Path) -> (tokio::process::Child, Duration) {
    let bin = env!("CARGO_BIN_EXE_gatebot");
    let start = Instant::now();
    let child = tokio::process::Command::new(bin)
        .args(["run", "--config"])
        .arg(dir.join("bot.toml"))
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let owner = Client::new(dir.join("gatebot-control.sock"));
    loop {
        if owner.get("/v1/health").await.is_ok() {
            return (child, start.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn daemon() {
    println!("\n## the daemon process: start time and memory");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bot.toml"),
        "[agents.bench]\ntier = \"supervised\"\n",
    )
    .unwrap();
    let (mut child, took) = start_binary(dir.path()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle = rss_kib(child.id().unwrap());
    println!(
        "start to first answer, empty database:   {took:>9.2?}   RSS idle: {:>7} KiB",
        idle
    );
    child.kill().await.unwrap();

    // 100 000 pending requests, written straight into the database first.
    let db = rusqlite::Connection::open(dir.path().join("gatebot.db")).unwrap();
    db.execute_batch(
        "BEGIN;
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
         INSERT INTO approvals (id, short_id, agent, tool, args, status, risk_score, tool_class,
             risk_factors, policy_reason, ttl_ms, created_at, expires_at)
         SELECT printf('01BENCH%019d', i), printf('b%07d', i), 'bench', 'send_email',
             '{\"to\":\"a@example.com\",\"body\":\"hello there, a typical short email body\"}',
             'pending', 'high', 'destructive', '[]', 'bench', 86400000,
             CAST(strftime('%s','now') AS INTEGER) * 1000,
             CAST(strftime('%s','now') AS INTEGER) * 1000 + 86400000 + i
         FROM n;
         COMMIT;",
    )
    .unwrap();
    drop(db);
    let _ = std::fs::remove_file(dir.path().join("gatebot.sock"));
    let _ = std::fs::remove_file(dir.path().join("gatebot-control.sock"));
    let (mut child, took) = start_binary(dir.path()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let loaded = rss_kib(child.id().unwrap());
    println!(
        "start to first answer, 100 000 pending:  {took:>9.2?}   RSS: {:>7} KiB",
        loaded
    );
    // A listing of all pending requests (the CLI's `pending` is capped at 1000).
    let owner = Client::new(dir.path().join("gatebot-control.sock"));
    let t = Instant::now();
    let res = owner.get("/v1/requests?status=pending").await.unwrap();
    println!(
        "list pending (first {}), 100 000 pending: {:>9.2?}   RSS after: {:>7} KiB",
        res.body["requests"].as_array().map_or(0, Vec::len),
        t.elapsed(),
        rss_kib(child.id().unwrap())
    );
    child.kill().await.unwrap();
}
