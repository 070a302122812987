//! Several gatebot nodes on one PostgreSQL database (docs/scale-out.md): the row is the
//! truth whichever node wrote it, and a poll waiting on one node is answered when an
//! owner decides on another (the commit's notification, or the trail read every two
//! seconds). Skipped, with one line, without PostgreSQL.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::fake_telegram::{FakeTelegram, User};
use crate::helpers::{
    eventually, eventually_within, gatebot_at, health, spawn_app, TestApp, BASE_CONFIG,
};
use crate::pg_cluster;

const TOKEN: &str = "424242:AAE-fake-secret-token-for-tests_0123456789";
const ALICE: User = (42, "Alice");
const CHAT: i64 = 7001;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poll_on_one_node_is_answered_when_an_owner_decides_on_another() {
    let Some(db) = pg_cluster::database() else {
        return;
    };
    let store = |node: &str| format!("[store]\nurl = \"{}\"\nnode = \"{node}\"\n", db.url());
    let a = spawn_app(&store("a")).await;
    let b = spawn_app(&store("b")).await;
    let body = json!({"agent": "mailer", "tool": "send_email", "args": {"to": "ann"}});
    let (id, _) = a.submit_pending(body.clone()).await;
    // The other node reads the same row, and the same idempotency key there gets it.
    let seen = b.get(&id, 0.0).await;
    assert_eq!(seen.body["status"], "pending", "{:?}", seen.body);
    // The agent waits on A (up to 30 s); the owner decides on B meanwhile. The poll must
    // be answered by the decision, not by its own time limit (which reads the row too):
    // far sooner than 30 s (at most the trail's re-read, 2 s, without the notification).
    let started = Instant::now();
    let (answer, ()) = tokio::join!(a.get(&id, 30.0), async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        b.decide_ok(&id, "approve", Some("fine")).await;
    });
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the poll ran to its limit"
    );
    assert_eq!(answer.body["status"], "approved", "{:?}", answer.body);
    assert_eq!(answer.body["decided_by"], "alice", "{:?}", answer.body);
    // A decision on A now reaches a poll on B too.
    let (other, _) = b
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"to": "bo"}}))
        .await;
    let started = Instant::now();
    let (answer, ()) = tokio::join!(b.get(&other, 30.0), async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        a.decide_ok(&other, "deny", Some("no")).await;
    });
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the poll ran to its limit"
    );
    assert_eq!(answer.body["status"], "rejected", "{:?}", answer.body);
    // One trail for both nodes, and it verifies.
    let check = a.owner.get("/v1/audit/verify").await.unwrap();
    assert_eq!(check.body["problems"], json!([]), "{:?}", check.body);
    assert_eq!(
        check.body["head"],
        b.owner.get("/v1/audit/head").await.unwrap().body
    );
}

/// Node `name`'s config on `db`, with Telegram on `fake` (the same token for every node).
fn node_config(db: &pg_cluster::Database, name: &str, fake: &FakeTelegram) -> String {
    format!(
        "{}[telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\nchats = [{CHAT}]\napprovers = [{}]\n",
        node_store(db, name),
        fake.url,
        ALICE.0
    )
}

/// The `[store]` section of node `name` on `db`.
pub(crate) fn node_store(db: &pg_cluster::Database, name: &str) -> String {
    format!("[store]\nurl = \"{}\"\nnode = \"{name}\"\n", db.url())
}

/// What `/v1/health` says of the node that answers: whether it leads.
pub(crate) async fn leads(app: &TestApp) -> bool {
    health(&app.owner).await.1["node"]["leader"] == true
}

/// Whether node `a`, a process of its own, says it leads (`gatebot nodes --json`);
/// `None` until it answers.
async fn process_leads(a: &crate::cli::Daemon) -> Option<bool> {
    let out = a.cli(&["nodes", "--json"]).await;
    let view: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    Some(view["nodes"][0]["leader"] == true)
}

/// Node a as a process of its own (to kill or freeze), leading, and node b in this
/// test, standing by; both on `db`, with Telegram on `fake`.
async fn process_leader_and_standby(
    db: &pg_cluster::Database,
    fake: &FakeTelegram,
) -> (crate::cli::Daemon, TestApp) {
    let a = crate::cli::Daemon::start_with(&node_config(db, "a", fake)).await;
    eventually("node a to lead", async || {
        process_leads(&a).await?.then_some(())
    })
    .await;
    let b = spawn_app(&node_config(db, "b", fake)).await;
    (a, b)
}

/// The card of request `short` in the chat, once posted: its message id and the data of
/// its first button (approve).
async fn card(fake: &FakeTelegram, short: &str) -> (i64, String) {
    eventually(&format!("the card of {short}"), async || {
        let (_, message, params) = fake.prompts_of(Some(CHAT), short).pop()?;
        let approve = params["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
            .as_str()?
            .to_string();
        Some((message, approve))
    })
    .await
}

/// How many times the trail says request `id` expired.
async fn expiries(app: &TestApp, id: &str) -> usize {
    let events = app.audit_events(id).await;
    events.iter().filter(|e| *e == "expired").count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_node_leads_the_chat_and_timers_and_another_takes_over_when_it_stops() {
    let Some(db) = pg_cluster::database() else {
        return;
    };
    let fake = FakeTelegram::start(TOKEN).await;
    let a = spawn_app(&node_config(&db, "a", &fake)).await;
    eventually("node a to lead", async || leads(&a).await.then_some(())).await;
    let b = spawn_app(&node_config(&db, "b", &fake)).await;
    // b knows a holds the lease (its first try failed) and stands by.
    let nodes = eventually("both nodes listed", async || {
        let view = b.owner.get("/v1/nodes").await.unwrap().body;
        (view["nodes"].as_array()?.len() == 2).then_some(view)
    })
    .await;
    assert_eq!(nodes["nodes"][0]["name"], "b", "{nodes}");
    assert_eq!(nodes["nodes"][0]["this"], true, "{nodes}");
    assert_eq!(nodes["nodes"][0]["leader"], false, "{nodes}");
    assert_eq!(nodes["nodes"][1]["name"], "a", "{nodes}");
    assert_eq!(nodes["nodes"][1]["leader"], true, "{nodes}");
    assert_eq!(nodes["warnings"], json!([]), "{nodes}");
    assert!(!leads(&b).await);

    // A request submitted on b gets its card from the leader's Telegram, once; a press
    // on it (read by the leader's poller) answers the agent waiting on b.
    let (id, short) = b
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"to": "ann"}}))
        .await;
    let (message, approve) = card(&fake, &short).await;
    let (answer, ()) = tokio::join!(b.get(&id, 30.0), async {
        fake.press(ALICE, CHAT, message, &approve);
    });
    assert_eq!(answer.body["status"], "approved", "{:?}", answer.body);
    // The leader's timers expire what b accepted.
    let (short_lived, _) = b
        .submit_pending(
            json!({"agent": "mailer", "tool": "send_email", "args": {"to": "cy"}, "ttl": "1s"}),
        )
        .await;
    b.wait_for_status(&short_lived, "expired").await;

    // a stops (and lets the lease go): b leads, runs the chat and posts the next card.
    let _a = a.stop().await;
    eventually("node b to lead", async || leads(&b).await.then_some(())).await;
    let (_, next) = b
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"to": "di"}}))
        .await;
    card(&fake, &next).await;
    // Every card once, each decision and expiry once, and never two pollers at once.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for s in [&short, &next] {
        assert_eq!(
            fake.prompt_calls(Some(CHAT), s).len(),
            1,
            "{s}: {:?}",
            fake.posted()
        );
    }
    assert_eq!(expiries(&b, &short_lived).await, 1);
    assert_eq!(
        fake.terminated_polls(),
        0,
        "two nodes polled Telegram at once"
    );
}

#[tokio::test]
async fn gatebot_nodes_lists_this_node_leading_in_words() {
    let app = spawn_app("[store]\nnode = \"gate-1\"\n").await;
    let control = gatebot::config::Config::load(&app.config_path)
        .unwrap()
        .queue
        .control_socket;
    let listed = eventually("the node's row", async || {
        let out = gatebot_at(&control, &["nodes"]).output().await.unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        (out.status.success() && text.contains("gate-1")).then_some(text)
    })
    .await;
    let lines: Vec<&str> = listed.lines().collect();
    assert!(
        lines[0].starts_with("NODE") && lines[0].contains("LAST HEARD"),
        "{listed}"
    );
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(
        row[..4],
        ["gate-1", "(this)", "leader", env!("CARGO_PKG_VERSION")],
        "{listed}"
    );
    assert!(
        lines[1].ends_with("now") || lines[1].ends_with("ago"),
        "{listed}"
    );
    assert_eq!(lines.len(), 2, "no warnings with one node: {listed}");
    let json = gatebot_at(&control, &["nodes", "--json"])
        .output()
        .await
        .unwrap();
    let view: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(view["nodes"][0]["name"], "gate-1", "{view}");
    assert_eq!(view["nodes"][0]["leader"], true, "{view}");
    // A reload changes the configuration this node shows; what each node sets for itself
    // (here its name's table's neighbour, the agents' TCP address) does not count.
    let hash = |view: &serde_json::Value| view["nodes"][0]["config"].as_str().unwrap().to_string();
    let before = hash(&view);
    let reload = |extra: &str| {
        let text = format!("{BASE_CONFIG}\n[store]\nnode = \"gate-1\"\n{extra}");
        std::fs::write(
            &app.config_path,
            crate::helpers::on_the_store_under_test(&text, app.path()),
        )
        .unwrap();
        app.engine
            .reload(gatebot::config::Config::load(&app.config_path).unwrap())
    };
    let now = async || hash(&app.owner.get("/v1/nodes").await.unwrap().body);
    reload("[queue]\nlisten = \"127.0.0.1:0\"\n").await.unwrap();
    assert_eq!(now().await, before, "a node's own address counted");
    reload("[agents.extra]\ntier = \"supervised\"\n")
        .await
        .unwrap();
    assert_ne!(
        now().await,
        before,
        "the reloaded configuration is not shown"
    );
    // Agents cannot list the nodes.
    let agents = app.agent.get("/v1/nodes").await.unwrap();
    assert_eq!(agents.status.as_u16(), 404, "{:?}", agents.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lease_holder_killed_another_node_takes_the_chat_and_timers_within_the_lease() {
    let Some(db) = pg_cluster::database() else {
        return;
    };
    let fake = FakeTelegram::start(TOKEN).await;
    let (mut a, b) = process_leader_and_standby(&db, &fake).await;
    let (_, before) = b
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"to": "ann"}}))
        .await;
    card(&fake, &before).await;
    // Let a record that it posted the card: one whose post is in flight at a crash is
    // posted again by the next leader, as after a lone node's crash (twice rather than
    // never: Telegram cannot be asked whether a send it did not answer took effect).
    tokio::time::sleep(Duration::from_secs(1)).await;
    // A request whose deadline falls after the kill: the next leader expires it, once.
    let (doomed, _) = b
        .submit_pending(
            json!({"agent": "mailer", "tool": "send_email", "args": {"to": "bo"}, "ttl": "4s"}),
        )
        .await;

    a.kill();
    let killed = Instant::now();
    eventually("node b to lead", async || leads(&b).await.then_some(())).await;
    let took_over = killed.elapsed();
    eprintln!("the lease holder killed: another node led after {took_over:?}");
    b.wait_for_status(&doomed, "expired").await;
    // b's poller reads the owner's press; the card is b's to edit.
    let (id, after) = b
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"to": "cy"}}))
        .await;
    let (message, approve) = card(&fake, &after).await;
    fake.press(ALICE, CHAT, message, &approve);
    b.wait_for_status(&id, "approved").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Each card once, the press answered once, the expiry once; at most the dead node's
    // last poll ended by b's first (Telegram's 409 to the older of two), no storm.
    for s in [&before, &after] {
        assert_eq!(
            fake.prompt_calls(Some(CHAT), s).len(),
            1,
            "{s}: {:?}",
            fake.posted()
        );
    }
    assert_eq!(fake.ok_calls("answerCallbackQuery").len(), 1);
    assert_eq!(expiries(&b, &doomed).await, 1);
    assert!(
        fake.terminated_polls() <= 1,
        "{} polls ended by another",
        fake.terminated_polls()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_frozen_past_its_lease_does_not_lead_when_it_wakes() {
    let Some(db) = pg_cluster::database() else {
        return;
    };
    let fake = FakeTelegram::start(TOKEN).await;
    let (mut a, b) = process_leader_and_standby(&db, &fake).await;
    // Due while a is frozen: b expires it; a, waking, must not (its timers' writes carry
    // a stale fence).
    let (doomed, _) = b
        .submit_pending(
            json!({"agent": "mailer", "tool": "send_email", "args": {"to": "bo"}, "ttl": "3s"}),
        )
        .await;

    a.signal(libc::SIGSTOP);
    let frozen = Instant::now();
    eventually("node b to lead", async || leads(&b).await.then_some(())).await;
    eprintln!(
        "a leader frozen: another node led after {:?}",
        frozen.elapsed()
    );
    b.wait_for_status(&doomed, "expired").await;
    a.signal(libc::SIGCONT);
    // Awake, a finds it no longer leads, and says so.
    eventually("node a to stand by", async || {
        (!process_leads(&a).await?).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(leads(&b).await, "b still leads");
    let log = a.stop_and_log().await;
    assert!(log.contains("this node no longer leads"), "{log}");
    // It led once, before it froze, and never again.
    assert_eq!(log.matches("this node leads").count(), 1, "{log}");
    assert_eq!(expiries(&b, &doomed).await, 1);
}

/// An agent that may call over TCP (with its token), and whose reads are allowed at once.
const REMOTE: &str =
    "[agents.remote]\ntier = \"semi_autonomous\"\ntoken = \"tok-remote-5e1f9c0d\"\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_killed_during_a_burst_over_three_loses_and_duplicates_nothing() {
    let Some(db) = pg_cluster::database() else {
        return;
    };
    let config = |name: &str, listen: std::net::SocketAddr| {
        format!(
            "{REMOTE}[store]\nurl = \"{}\"\nnode = \"{name}\"\n[queue]\nlisten = \"{listen}\"\n",
            db.url()
        )
    };
    let a_at = crate::helpers::free_port();
    let mut a = crate::cli::Daemon::start_with(&config("a", a_at)).await;
    let b = spawn_app(&config("b", crate::helpers::free_port())).await;
    let c = spawn_app(&config("c", crate::helpers::free_port())).await;
    let urls = [a_at, b.tcp.unwrap(), c.tcp.unwrap()].map(|at| format!("http://{at}"));

    // 8 agents' connections, each starting at another node, as agents naming all three
    // in another order would; 250 submits each, every one with its own idempotency key,
    // tried again with the same key on an error that leaves the outcome unknown.
    const AGENTS: usize = 8;
    const EACH: usize = 250;
    let acknowledged = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut agents = Vec::new();
    for k in 0..AGENTS {
        let mut order = urls.to_vec();
        order.rotate_left(k % 3);
        let endpoints = gatebot::client::endpoint::parse_urls("the test", &order).unwrap();
        let client = gatebot::client::Client::with_endpoints(endpoints, None)
            .unwrap()
            .with_token(Some("tok-remote-5e1f9c0d".into()))
            .with_timeout(Duration::from_secs(10));
        let acknowledged = acknowledged.clone();
        agents.push(tokio::spawn(async move {
            for i in 0..EACH {
                let key = format!("burst-{k}-{i}");
                let body = json!({"agent": "remote", "tool": "query_org_data",
                    "args": {"q": key}, "idempotency_key": key});
                let started = Instant::now();
                let id = loop {
                    match client.post("/v1/requests", &body).await {
                        Ok(res) if res.status.is_success() => {
                            break res.body["id"].as_str().unwrap().to_string();
                        }
                        Ok(res) => panic!("{key}: {} {:?}", res.status, res.body),
                        Err(e) => {
                            assert!(started.elapsed() < Duration::from_secs(60), "{key}: {e}");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                };
                acknowledged
                    .lock()
                    .unwrap()
                    .push((key, id, started.elapsed()));
            }
        }));
    }
    // a goes down mid-burst, with nothing let go.
    eventually("a third of the burst acknowledged", async || {
        (acknowledged.lock().unwrap().len() >= AGENTS * EACH / 3).then_some(())
    })
    .await;
    a.kill();
    for agent in agents {
        agent.await.unwrap();
    }

    // Every key acknowledged once, each with its own request, and every request there.
    let acknowledged = acknowledged.lock().unwrap().clone();
    let slowest = acknowledged.iter().map(|(_, _, took)| *took).max().unwrap();
    eprintln!("a node killed during a burst: the slowest submit took {slowest:?}");
    assert_eq!(acknowledged.len(), AGENTS * EACH);
    let ids: std::collections::BTreeSet<&str> =
        acknowledged.iter().map(|(_, id, _)| id.as_str()).collect();
    assert_eq!(ids.len(), AGENTS * EACH, "a key got two requests");
    let mut stored = std::collections::BTreeSet::new();
    let mut after = String::new();
    loop {
        let page = b
            .owner
            .get(&format!("/v1/requests?agent=remote&limit=1000{after}"))
            .await
            .unwrap();
        assert!(page.status.is_success(), "{:?}", page.body);
        for r in page.body["requests"].as_array().unwrap() {
            assert!(stored.insert(r["id"].as_str().unwrap().to_string()), "{r}");
        }
        match page.body["next"].as_str() {
            Some(next) => after = format!("&after={next}"),
            None => break,
        }
    }
    assert_eq!(stored.len(), AGENTS * EACH, "requests stored twice or lost");
    assert!(ids.iter().all(|id| stored.contains(*id)));
    // One chain, intact, the same on both nodes left.
    let check = c.owner.get("/v1/audit/verify").await.unwrap();
    assert_eq!(check.body["problems"], json!([]), "{:?}", check.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_over_three_nodes_keeps_telegrams_limits_and_posts_each_card_once() {
    let Some(db) = pg_cluster::database() else {
        return;
    };
    let fake = FakeTelegram::start(TOKEN).await;
    fake.enforce_limits();
    let a = spawn_app(&node_config(&db, "a", &fake)).await;
    eventually("node a to lead", async || leads(&a).await.then_some(())).await;
    let b = spawn_app(&node_config(&db, "b", &fake)).await;
    let c = spawn_app(&node_config(&db, "c", &fake)).await;
    let requests = submit_burst(&[&a, &b, &c]).await;
    until_quiet("the chat", || {
        fake.calls("sendMessage").len() + fake.calls("editMessageText").len()
    })
    .await;
    assert!(!fake.posted().is_empty(), "nothing was posted");
    assert_eq!(fake.rate_limited(), 0, "a chat limit was exceeded");
    assert_eq!(
        fake.terminated_polls(),
        0,
        "two nodes polled Telegram at once"
    );
    let twice: Vec<&String> = requests
        .iter()
        .map(|(_, short)| short)
        .filter(|s| fake.prompt_calls(Some(CHAT), s).len() > 1)
        .collect();
    assert!(twice.is_empty(), "cards posted twice: {twice:?}");
}

/// Node `name`'s config on `db`, with Slack on `fake` in Socket Mode (the same tokens for
/// every node, channel C1) and no Telegram.
fn slack_node_config(
    db: &pg_cluster::Database,
    name: &str,
    fake: &crate::fake_slack::FakeSlack,
) -> String {
    format!("{}{}", node_store(db, name), fake.config())
}

/// 1 000 requests that wait for an owner, from 8 agents' connections spread over
/// `nodes`: (id, short id) of each.
async fn submit_burst(nodes: &[&TestApp]) -> Vec<(String, String)> {
    let mut requests = Vec::new();
    for round in 0..125 {
        let submits = (0..8).map(|k| {
            let node = nodes[(round * 8 + k) % nodes.len()];
            node.submit_pending(json!({"agent": "mailer", "tool": "send_email",
                "args": {"to": format!("p{round}-{k}")}}))
        });
        requests.extend(futures_util::future::join_all(submits).await);
    }
    requests
}

/// Waits (up to two minutes) until `calls`, a count of the calls made to a chat, has not
/// changed for three seconds.
async fn until_quiet(what: &str, calls: impl Fn() -> usize) {
    let mut last = (calls(), Instant::now());
    eventually_within(
        &format!("{what} to go quiet"),
        Duration::from_secs(120),
        async || {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let now = calls();
            if now != last.0 {
                last = (now, Instant::now());
            }
            (last.1.elapsed() > Duration::from_secs(3)).then_some(())
        },
    )
    .await;
}

/// Whether a Slack message's fallback text names request `short` (`request <short>`,
/// not a longer id it begins).
fn names_request(params: &serde_json::Value, short: &str) -> bool {
    let text = params["text"].as_str().unwrap_or_default();
    let needle = format!("request {short}");
    text.match_indices(&needle).any(|(at, _)| {
        !text[at + needle.len()..]
            .chars()
            .next()
            .is_some_and(char::is_alphanumeric)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_over_three_nodes_keeps_slacks_limits_and_posts_each_card_once() {
    let Some(db) = pg_cluster::database() else {
        return;
    };
    let fake = crate::fake_slack::FakeSlack::start().await;
    fake.enforce_limits();
    let a = spawn_app(&slack_node_config(&db, "a", &fake)).await;
    eventually("node a to lead", async || leads(&a).await.then_some(())).await;
    let b = spawn_app(&slack_node_config(&db, "b", &fake)).await;
    let c = spawn_app(&slack_node_config(&db, "c", &fake)).await;
    let nodes = [&a, &b, &c];
    let requests = submit_burst(&nodes).await;
    let calls = || fake.calls("chat.postMessage").len() + fake.calls("chat.update").len();
    until_quiet("the channel", calls).await;
    let posted: Vec<_> = fake
        .calls("chat.postMessage")
        .into_iter()
        .filter(|c| c.ok)
        .collect();
    assert!(!posted.is_empty(), "nothing was posted");
    assert_eq!(fake.rate_limited(), 0, "a Slack limit was exceeded");
    let twice: Vec<&String> = requests
        .iter()
        .map(|(_, short)| short)
        .filter(|s| {
            posted
                .iter()
                .filter(|c| c.params["channel"] == "C1" && names_request(&c.params, s))
                .count()
                > 1
        })
        .collect();
    assert!(twice.is_empty(), "cards posted twice: {twice:?}");

    // Then the owners decide them all, over the three nodes: what was posted is edited
    // as fast as gatebot's pace allows, within chat.update's limit too.
    for (round, chunk) in requests.chunks(8).enumerate() {
        let decisions = chunk
            .iter()
            .enumerate()
            .map(|(k, (id, _))| nodes[(round * 8 + k) % 3].decide_ok(id, "approve", None));
        futures_util::future::join_all(decisions).await;
    }
    until_quiet("the channel", calls).await;
    let updated: Vec<Instant> = fake
        .calls("chat.update")
        .iter()
        .filter(|c| c.ok)
        .map(|c| c.at)
        .collect();
    let busiest_minute = updated
        .iter()
        .map(|t| {
            updated
                .iter()
                .filter(|u| **u >= *t && u.duration_since(*t) < Duration::from_secs(60))
                .count()
        })
        .max()
        .unwrap_or(0);
    eprintln!(
        "a burst over three nodes on Slack: {} posts, {} updates ({busiest_minute} in the \
         busiest minute), {} rate limited",
        posted.len(),
        updated.len(),
        fake.rate_limited()
    );
    assert!(!updated.is_empty(), "nothing was edited");
    assert_eq!(fake.rate_limited(), 0, "a Slack limit was exceeded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_given_one_name_are_told_to_rename_one() {
    let Some(db) = pg_cluster::database() else {
        return;
    };
    let a = spawn_app(&node_store(&db, "twin")).await;
    let b = spawn_app(&node_store(&db, "twin")).await;
    // Each writes the one row every two seconds: the one that finds the other's run
    // there after its own first write says so.
    let warned = eventually("a warning about the shared name", async || {
        for node in [&a, &b] {
            let view = node.owner.get("/v1/nodes").await.unwrap().body;
            let said = view["warnings"].as_array()?.iter().find_map(|w| {
                let w = w.as_str()?;
                w.contains("another node runs under this node's name (twin)")
                    .then(|| w.to_string())
            });
            if said.is_some() {
                return said;
            }
        }
        None
    })
    .await;
    assert!(warned.contains("`[store] node`"), "{warned}");
}
