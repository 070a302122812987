//! Reloading the config (what SIGHUP does): chats and channels added or dropped take
//! effect at once, and every key that needs a restart is named instead of being
//! silently ignored.

use gatebot::config::Config;
use serde_json::{json, Value};

use crate::fake_slack::FakeSlack;
use crate::fake_telegram::FakeTelegram;
use crate::helpers::{eventually, log_text, spawn_app, TestApp, BASE_CONFIG};

const TOKEN: &str = "515151:AAE-reload-test-token";

/// Writes `BASE_CONFIG` plus `extra` over the app's config file and reloads it.
async fn reload(app: &TestApp, extra: &str) -> Vec<&'static str> {
    let config = format!("{BASE_CONFIG}\n{extra}");
    std::fs::write(
        &app.config_path,
        crate::helpers::on_the_store_under_test(&config, app.path()),
    )
    .unwrap();
    app.engine
        .reload(Config::load(&app.config_path).unwrap())
        .await
        .unwrap()
}

fn pending_body() -> Value {
    json!({"agent": "intern", "tool": "create_contact", "args": {"name": "Bo"}})
}

#[tokio::test]
async fn telegram_chats_added_or_dropped_by_a_reload_apply_at_once() {
    let fake = FakeTelegram::start(TOKEN).await;
    let section = |chats: &str| {
        format!(
            "[telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\nchats = [{chats}]\napprovers = [42]\n",
            fake.url
        )
    };
    let prompt = |chat: i64, short: String| {
        let fake = fake.clone();
        async move {
            eventually(&format!("the prompt for {short} in {chat}"), async || {
                fake.prompts_of(Some(chat), &short).pop().map(|(_, m, _)| m)
            })
            .await
        }
    };
    let app = spawn_app(&section("7101")).await;
    let (first, first_short) = app.submit_pending(pending_body()).await;
    let first_in_a = prompt(7101, first_short.clone()).await;

    // Added: the request already waiting gets its card there, and new ones too.
    assert!(reload(&app, &section("7101, 7102")).await.is_empty());
    prompt(7102, first_short.clone()).await;
    let (_, second) = app.submit_pending(pending_body()).await;
    prompt(7101, second.clone()).await;
    prompt(7102, second).await;

    // Dropped: no new cards there, but the cards it has are still brought up to date.
    assert!(reload(&app, &section("7102")).await.is_empty());
    let (_, third) = app.submit_pending(pending_body()).await;
    prompt(7102, third.clone()).await;
    app.decide_ok(&first, "approve", None).await;
    eventually("the dropped chat's card showing the decision", async || {
        fake.ok_calls("editMessageText").into_iter().find(|p| {
            p["chat_id"] == 7101
                && p["message_id"] == first_in_a
                && p["text"].as_str().unwrap().contains("Approved by alice")
        })
    })
    .await;
    assert!(
        fake.prompts_of(Some(7101), &third).is_empty(),
        "a dropped chat got a new card"
    );
}

#[tokio::test]
async fn slack_channels_added_by_a_reload_get_cards() {
    let slack = FakeSlack::start().await;
    let app = spawn_app(&slack.config()).await;
    let (_, short) = app.submit_pending(pending_body()).await;
    let posted_in = |channel: &'static str, short: String| {
        let slack = slack.clone();
        async move {
            eventually(&format!("a card for {short} in {channel}"), async || {
                slack.calls("chat.postMessage").into_iter().find(|c| {
                    c.ok && c.params["channel"] == channel
                        && c.params["text"].as_str().unwrap().contains(&short)
                })
            })
            .await
        }
    };
    posted_in("C1", short.clone()).await;
    let added = slack
        .config()
        .replace("channels = [\"C1\"]", "channels = [\"C1\", \"C2\"]");
    assert!(reload(&app, &added).await.is_empty());
    posted_in("C2", short).await;
    let (_, next) = app.submit_pending(pending_body()).await;
    posted_in("C2", next).await;
}

#[tokio::test]
async fn a_reload_names_each_key_that_needs_a_restart_and_keeps_its_old_value() {
    let app = spawn_app("").await;
    let moved = app.path().join("moved");
    let restart = reload(
        &app,
        &format!(
            "[store]\npath = \"{0}/g.db\"\n[queue]\nsocket = \"{0}/a.sock\"\n\
             control_socket = \"{0}/c.sock\"\nlisten = \"127.0.0.1:0\"\n",
            moved.display()
        ),
    )
    .await;
    assert_eq!(
        restart,
        [
            "store.path",
            "queue.socket",
            "queue.control_socket",
            "queue.listen"
        ]
    );
    let log = log_text();
    for key in &restart {
        assert!(
            log.contains(&format!("`{key}` changed, but it is set up at start")),
            "no warning for {key}"
        );
    }
    // The reload is audited with what it could not apply.
    let audit = app.owner.get("/v1/audit").await.unwrap().body;
    let row = audit["audit"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|r| r["event"] == "config_reloaded")
        .cloned()
        .unwrap();
    assert_eq!(row["detail"]["restart_needed"], json!(restart));
    // The daemon goes on as it started: its sockets and database are where they were.
    let config = app.engine.config();
    assert_eq!(config.queue.socket, app.path().join("gatebot.sock"));
    assert_eq!(config.queue.listen, None);
    app.submit_pending(pending_body()).await;
    assert!(!moved.exists());
}
