//! Several gatebot nodes on one PostgreSQL database (docs/scale-out.md): the row is the
//! truth whichever node wrote it, and a poll waiting on one node is answered when an
//! owner decides on another (the commit's notification, or the trail read every two
//! seconds). Skipped, with one line, without PostgreSQL.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::fake_telegram::{FakeTelegram, User};
use crate::helpers::{eventually, gatebot_at, spawn_app, TestApp};
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
        "[store]\nurl = \"{}\"\nnode = \"{name}\"\n\
         [telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\nchats = [{CHAT}]\napprovers = [{}]\n",
        db.url(),
        fake.url,
        ALICE.0
    )
}

/// What `/v1/health` says of the node that answers: whether it leads.
async fn leads(app: &TestApp) -> bool {
    let health = app.owner.get("/v1/health").await.unwrap();
    health.body["node"]["leader"] == true
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
    let (message, card) = eventually("the card of the request submitted on b", async || {
        let (_, message, params) = fake.prompts_of(Some(CHAT), &short).pop()?;
        Some((message, params))
    })
    .await;
    let (answer, ()) = tokio::join!(b.get(&id, 30.0), async {
        // The card's first button approves.
        let approve = card["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
            .as_str()
            .unwrap()
            .to_string();
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
    eventually("the card posted by b", async || {
        fake.prompts_of(Some(CHAT), &next).pop()
    })
    .await;
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
    let events = b.audit_events(&short_lived).await;
    assert_eq!(
        events.iter().filter(|e| *e == "expired").count(),
        1,
        "{events:?}"
    );
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
    // a is a process of its own, to be killed; b runs in this test.
    let mut a = crate::cli::Daemon::start_with(&node_config(&db, "a", &fake)).await;
    let a_leads = async |a: &crate::cli::Daemon| {
        let out = a.cli(&["nodes", "--json"]).await;
        let view: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        (view["nodes"][0]["leader"] == true).then_some(())
    };
    eventually("node a to lead", async || a_leads(&a).await).await;
    let b = spawn_app(&node_config(&db, "b", &fake)).await;
    let (_, before) = b
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"to": "ann"}}))
        .await;
    eventually("a's card", async || {
        fake.prompts_of(Some(CHAT), &before).pop()
    })
    .await;
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
    let (message, card) = eventually("b's card", async || {
        let (_, message, params) = fake.prompts_of(Some(CHAT), &after).pop()?;
        Some((message, params))
    })
    .await;
    let approve = card["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_string();
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
    let events = b.audit_events(&doomed).await;
    assert_eq!(
        events.iter().filter(|e| *e == "expired").count(),
        1,
        "{events:?}"
    );
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
    let mut a = crate::cli::Daemon::start_with(&node_config(&db, "a", &fake)).await;
    let a_leads = async |a: &crate::cli::Daemon| {
        let out = a.cli(&["nodes", "--json"]).await;
        let view: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        Some(view["nodes"][0]["leader"] == true)
    };
    eventually("node a to lead", async || a_leads(&a).await?.then_some(())).await;
    let b = spawn_app(&node_config(&db, "b", &fake)).await;
    // Due while a is frozen: b expires it; a, waking, must not (its timers' writes carry
    // a stale fence).
    let (doomed, _) = b
        .submit_pending(
            json!({"agent": "mailer", "tool": "send_email", "args": {"to": "bo"}, "ttl": "3s"}),
        )
        .await;

    a.signal("STOP");
    let frozen = Instant::now();
    eventually("node b to lead", async || leads(&b).await.then_some(())).await;
    eprintln!(
        "a leader frozen: another node led after {:?}",
        frozen.elapsed()
    );
    b.wait_for_status(&doomed, "expired").await;
    a.signal("CONT");
    // Awake, a finds it no longer leads, and says so.
    eventually("node a to stand by", async || {
        (!a_leads(&a).await?).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(leads(&b).await, "b still leads");
    let log = a.stop_and_log().await;
    assert!(log.contains("this node no longer leads"), "{log}");
    // It led once, before it froze, and never again.
    assert_eq!(log.matches("this node leads").count(), 1, "{log}");
    let events = b.audit_events(&doomed).await;
    assert_eq!(
        events.iter().filter(|e| *e == "expired").count(),
        1,
        "{events:?}"
    );
}
