//! The chat across several nodes on one PostgreSQL database (docs/scale-out.md): every
//! node hears what comes to it (a webhook a load balancer sent there), while the node
//! that leads posts and edits the cards. A press on any node decides and the leader's
//! card shows it; an event Slack retries on another node is handled once; a digest's
//! page turned on a node that stands by is drawn there; in Socket Mode every node holds
//! one of the app's connections. Skipped, with one line, without
//! PostgreSQL.

use std::time::Duration;

use gatebot::chat::conversation::approval::{button_data, ButtonKind};
use serde_json::json;

use crate::fake_slack::{click, message, FakeSlack};
use crate::helpers::{eventually, spawn_app};
use crate::nodes::{leads, node_store};
use crate::pg_cluster;
use crate::slack::{
    ephemerals, form_click, now_secs, post_form, prompted, shown_text, sign, update_of, APPROVER,
};

const SECRET: &str = "shh-secret";

/// Node `name`'s config on `db`, with Slack in HTTP mode on `fake` (`extra` in its
/// table), and the URL its events listener takes Slack's requests on.
fn slack_node(
    db: &pg_cluster::Database,
    name: &str,
    fake: &FakeSlack,
    extra: &str,
) -> (String, String) {
    let port = crate::helpers::free_port().port();
    let config = format!(
        "{}[slack]\nmode = \"http\"\nbot_token = \"xoxb-test-bot\"\nsigning_secret = \"{SECRET}\"\n\
         events_listen = \"127.0.0.1:{port}\"\napi_url = \"{}\"\nchannels = [\"C1\"]\n\
         approvers = [\"{APPROVER}\"]\n{extra}",
        node_store(db, name),
        fake.api_url
    );
    (config, format!("http://127.0.0.1:{port}/slack/events"))
}

/// POSTs `body` to `url` signed as Slack signs it; Slack's status back.
async fn from_slack(url: &str, body: &str) -> u16 {
    let ts = now_secs().to_string();
    post_form(url, body, &ts, &sign(SECRET, &ts, body)).await
}

/// The `chat.postMessage` calls that showed `needle`.
fn posts_showing(fake: &FakeSlack, needle: &str) -> usize {
    fake.calls("chat.postMessage")
        .iter()
        .filter(|c| c.params.to_string().contains(needle))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_press_on_a_standby_node_decides_and_a_retried_event_is_handled_once() {
    let Some(db) = pg_cluster::database() else {
        return;
    };
    let fake = FakeSlack::start().await;
    let (a_config, a_url) = slack_node(&db, "a", &fake, "");
    let a = spawn_app(&a_config).await;
    eventually("node a to lead", async || leads(&a).await.then_some(())).await;
    let (b_config, b_url) = slack_node(&db, "b", &fake, "");
    let b = spawn_app(&b_config).await;

    // A request submitted on b: the leader posts its card, once.
    let p = prompted(
        &b,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["a@example.com"]}),
    )
    .await;
    // The press reaches b (where a load balancer sent it): b decides, and the leader's
    // card shows the outcome.
    assert_eq!(from_slack(&b_url, &form_click(&p)).await, 200);
    b.wait_for_status(&p.id, "approved").await;
    let update = update_of(&fake, &p.ts, "Approved").await;
    assert!(
        !update.to_string().contains("\"actions\""),
        "the card kept its buttons: {update}"
    );
    assert_eq!(posts_showing(&fake, &p.id), 1, "the card was posted twice");

    // A thread reply Slack delivers to a, then retries on b (no answer within 3 s):
    // the same event id, handled once across the nodes.
    let p2 = prompted(
        &a,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["b@example.com"]}),
    )
    .await;
    let reply = message(APPROVER, "approve", Some(&p2.ts), "EvAcrossNodes").to_string();
    assert_eq!(from_slack(&a_url, &reply).await, 200);
    assert_eq!(from_slack(&b_url, &reply).await, 200);
    a.wait_for_status(&p2.id, "approved").await;
    // Let a second handling, were there one, finish before looking for its traces.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let events = b.audit_events(&p2.id).await;
    assert_eq!(
        events.iter().filter(|e| *e == "decided").count(),
        1,
        "{events:?}"
    );
    assert!(
        !events.iter().any(|e| e == "decision_refused"),
        "handled twice: {events:?}"
    );
    // One answer to the approver (the reply's), no "already approved" for the retry.
    assert_eq!(
        ephemerals(&fake, APPROVER).len(),
        1,
        "{:?}",
        ephemerals(&fake, APPROVER)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_leader_posts_and_a_digest_turned_on_a_standby_is_drawn_there() {
    let Some(db) = pg_cluster::database() else {
        return;
    };
    let fake = FakeSlack::start().await;
    // Node a leads with no chat of its own; b, with Slack, stands by.
    let a = spawn_app(&node_store(&db, "a")).await;
    eventually("node a to lead", async || leads(&a).await.then_some(())).await;
    let (b_config, _) = slack_node(&db, "b", &fake, "digest_after = 5\n");
    let b = spawn_app(&b_config).await;
    for n in 0..8 {
        b.submit_pending(json!({"agent": "intern", "tool": "create_contact", "args": {"n": n}}))
            .await;
    }
    // b stands by: it posts nothing (a, leading, has no Slack).
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        fake.calls("chat.postMessage").is_empty(),
        "a node that stands by posted"
    );
    assert!(!leads(&b).await);

    // a stops: b leads, and posts the eight waiting as one digest.
    let _dir = a.stop().await;
    let posted = eventually("the digest", async || {
        fake.calls("chat.postMessage").into_iter().find(|c| c.ok)
    })
    .await;
    let ts = posted.ts.clone().unwrap();
    assert!(
        shown_text(&posted.params).contains("8 of 8 requests in this digest need a decision"),
        "{}",
        shown_text(&posted.params)
    );
    assert!(leads(&b).await);

    // c stands by. An approver's press to review the digest comes to c: c turns the
    // page and draws the digest itself, and the leader does not post it again.
    let (c_config, c_url) = slack_node(&db, "c", &fake, "digest_after = 5\n");
    let _c = spawn_app(&c_config).await;
    let press =
        serde_urlencoded::to_string([("payload", click(APPROVER, &ts, "gb1:v:r").to_string())])
            .unwrap();
    assert_eq!(from_slack(&c_url, &press).await, 200);
    eventually("the digest showing its first request", async || {
        fake.calls("chat.update")
            .into_iter()
            .find(|c| {
                c.ok && c.params["ts"] == ts.as_str()
                    && shown_text(&c.params).contains("request 1 of 8 · 8 pending")
            })
            .map(|_| ())
    })
    .await;
    assert_eq!(fake.calls("chat.postMessage").len(), 1, "posted again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_node_holds_a_socket_mode_connection_and_a_press_on_each_decides() {
    let Some(db) = pg_cluster::database() else {
        return;
    };
    let fake = FakeSlack::start().await;
    let a = spawn_app(&format!("{}{}", node_store(&db, "a"), fake.config())).await;
    eventually("node a to lead", async || leads(&a).await.then_some(())).await;
    let b = spawn_app(&format!("{}{}", node_store(&db, "b"), fake.config())).await;
    eventually("a connection from each node", async || {
        (fake.open_connections() == 2).then_some(())
    })
    .await;
    let p1 = prompted(
        &a,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["a@example.com"]}),
    )
    .await;
    let p2 = prompted(
        &b,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["b@example.com"]}),
    )
    .await;
    // Slack hands each envelope to one of the app's connections: here one to each node.
    for p in [&p1, &p2] {
        let press = click(APPROVER, &p.ts, &button_data(ButtonKind::Approve, &p.id));
        fake.send("interactive", press).await;
    }
    a.wait_for_status(&p1.id, "approved").await;
    a.wait_for_status(&p2.id, "approved").await;
    update_of(&fake, &p2.ts, "Approved").await;
    // Neither node pushed the other off: the same two connections throughout.
    assert_eq!(fake.connections(), 2, "a node connected again");
    assert_eq!(fake.open_connections(), 2);
}
