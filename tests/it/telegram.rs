//! The Telegram channel end to end: the real daemon and real teloxide against
//! [`FakeTelegram`] on loopback.

use std::time::Duration;

use serde_json::{json, Value};

use crate::fake_telegram::{Failure, FakeTelegram, User, BOT_USERNAME};
use crate::helpers::{eventually, log_text, spawn_app, spawn_app_in, TestApp};

const TOKEN: &str = "424242:AAE-fake-secret-token-for-tests_0123456789";
const ALICE: User = (42, "Alice");
const MALLORY: User = (66, "Mallory");
/// Private chats (positive ids), so the 20/min group limit never slows tests.
const CHAT_A: i64 = 7001;
const CHAT_B: i64 = 7002;
/// A group (negative id): Telegram's 20 messages a minute apply.
const GROUP: i64 = -5001;

async fn start_with(token: &str) -> (TestApp, FakeTelegram) {
    let fake = FakeTelegram::start(TOKEN).await;
    let app = spawn_app(&format!(
        "[telegram]\ntoken = \"{token}\"\napi_url = \"{}\"\nchats = [{CHAT_A}, {CHAT_B}]\napprovers = [{}]\n",
        fake.url, ALICE.0
    ))
    .await;
    (app, fake)
}

async fn start() -> (TestApp, FakeTelegram) {
    start_with(TOKEN).await
}

/// The prompt message for `short_id` in `chat`: (message id, sendMessage params).
async fn prompt(fake: &FakeTelegram, chat: i64, short_id: &str) -> (i64, Value) {
    eventually(
        &format!("the prompt for {short_id} in {chat}"),
        async || {
            let (_, message, params) = fake.prompts_of(Some(chat), short_id).pop()?;
            Some((message, params))
        },
    )
    .await
}

/// The latest answerCallbackQuery params.
async fn callback_answer(fake: &FakeTelegram, n: usize) -> Value {
    eventually("a callback answer", async || {
        fake.ok_calls("answerCallbackQuery").get(n).cloned()
    })
    .await
}

/// A reply sent to `chat` whose text contains `needle`.
async fn reply_containing(fake: &FakeTelegram, chat: i64, needle: &str) -> Value {
    eventually(&format!("a reply containing {needle:?}"), async || {
        fake.ok_calls("sendMessage")
            .into_iter()
            .find(|p| p["chat_id"] == json!(chat) && p["text"].as_str().unwrap().contains(needle))
    })
    .await
}

/// The final edit of the prompt message `id` in `chat`.
async fn final_edit(fake: &FakeTelegram, chat: i64, id: i64, needle: &str) -> Value {
    eventually(
        &format!("the prompt {chat}/{id} edited to {needle:?}"),
        async || {
            fake.ok_calls("editMessageText").into_iter().find(|p| {
                p["chat_id"] == json!(chat)
                    && p["message_id"] == json!(id)
                    && p["text"].as_str().unwrap().contains(needle)
            })
        },
    )
    .await
}

fn button_data(params: &Value) -> Vec<String> {
    params["reply_markup"]["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap().iter())
        .map(|b| b["callback_data"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn an_approvers_tap_approves_the_waiting_agent_and_edits_every_copy() {
    let (app, fake) = start().await;
    let (id, short) = app.submit_pending(json!({"agent": "intern", "tool": "create_contact", "args": {"name": "Bo"}, "summary": "Add Bo"})).await;
    let (msg_a, p) = prompt(&fake, CHAT_A, &short).await;
    let (msg_b, _) = prompt(&fake, CHAT_B, &short).await;
    assert_eq!(p["parse_mode"], "HTML");
    let text = p["text"].as_str().unwrap();
    for part in [
        "<code>intern</code>",
        "<code>create_contact</code>",
        "Risk:",
        "Expires:",
        "<pre>Add Bo</pre>",
    ] {
        assert!(text.contains(part), "{part} in {text}");
    }
    let data = button_data(&p);
    assert_eq!(data[0], format!("gb1:a:{id}"));
    assert!(data.iter().all(|d| d.len() <= 64));
    // setMyCommands was called at start.
    let cmds = fake.ok_calls("setMyCommands");
    assert!(cmds[0]["commands"].to_string().contains("approve_always"));

    let waiter = {
        let agent = app.agent.clone();
        let id = id.clone();
        tokio::spawn(async move { agent.get(&format!("/v1/requests/{id}?wait=30")).await })
    };
    fake.press(ALICE, CHAT_A, msg_a, &data[0]);
    let got = waiter.await.unwrap().unwrap();
    assert_eq!(got.body["status"], "approved", "{:?}", got.body);
    assert_eq!(got.body["decided_via"], "telegram");
    assert!(got.body["decided_by"].as_str().unwrap().contains("Alice"));
    let ans = callback_answer(&fake, 0).await;
    assert!(ans["text"].as_str().unwrap().contains("Approved"), "{ans}");

    for (chat, msg) in [(CHAT_A, msg_a), (CHAT_B, msg_b)] {
        let e = final_edit(&fake, chat, msg, "Approved by Alice (42) on Telegram").await;
        assert_eq!(
            e["reply_markup"]["inline_keyboard"],
            json!([]),
            "buttons removed"
        );
        assert_eq!(e["parse_mode"], "HTML");
    }
    // A second tap on the old button.
    fake.press(ALICE, CHAT_B, msg_b, &data[0]);
    let ans = callback_answer(&fake, 1).await;
    assert!(
        ans["text"]
            .as_str()
            .unwrap()
            .contains("already approved by Alice"),
        "{ans}"
    );
    assert_eq!(ans["show_alert"], true);
    // Shutdown is prompt even with a long poll in flight (stop() allows 10 s).
    app.stop().await;
}

#[tokio::test]
async fn deny_asks_for_a_reason_and_the_reply_reaches_the_agent() {
    let (app, fake) = start().await;
    let (id, short) = app
        .submit_pending(
            json!({"agent": "mailer", "tool": "send_email", "args": {"to": "a@example.com"}}),
        )
        .await;
    let (msg, p) = prompt(&fake, CHAT_A, &short).await;
    let data = button_data(&p);
    assert_eq!(
        data.len(),
        4,
        "always allow (and for a while) is offered here"
    );
    fake.press(ALICE, CHAT_A, msg, &format!("gb1:d:{id}"));
    let question = reply_containing(&fake, CHAT_A, &format!("why deny <code>{short}</code>")).await;
    assert_eq!(question["reply_markup"]["force_reply"], true);
    assert_eq!(question["reply_markup"]["selective"], true);
    assert_eq!(question["parse_mode"], "HTML");
    // Mentioned, so the selective force-reply reaches the approver in a group too.
    assert!(question["text"]
        .as_str()
        .unwrap()
        .starts_with("<a href=\"tg://user?id=42\">Alice</a>"));
    assert_eq!(question["reply_parameters"]["message_id"], json!(msg));
    // ❌ became "Deny without reason" on the prompt.
    eventually("the deny-without-reason button", async || {
        let m = fake.message(CHAT_A, msg);
        m["reply_markup"]
            .to_string()
            .contains(&format!("gb1:s:{id}"))
            .then_some(())
    })
    .await;
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
    let qid = fake.message_id(CHAT_A, &question["text"]).unwrap();
    fake.say(ALICE, CHAT_A, "wrong customer, ask Ann first", Some(qid));
    let got = app.get(&id, 20.0).await;
    assert_eq!(got.body["status"], "rejected", "{:?}", got.body);
    assert_eq!(got.body["reason"], "wrong customer, ask Ann first");
    final_edit(&fake, CHAT_A, msg, "Denied by Alice (42) on Telegram").await;

    // Deny without a reason.
    let (id2, short2) = app
        .submit_pending(
            json!({"agent": "mailer", "tool": "send_email", "args": {"to": "b@example.com"}}),
        )
        .await;
    let (msg2, _) = prompt(&fake, CHAT_B, &short2).await;
    fake.press(ALICE, CHAT_B, msg2, &format!("gb1:d:{id2}"));
    reply_containing(&fake, CHAT_B, &format!("why deny <code>{short2}</code>")).await;
    fake.press(ALICE, CHAT_B, msg2, &format!("gb1:s:{id2}"));
    let got = app.get(&id2, 20.0).await;
    assert_eq!(got.body["status"], "rejected", "{:?}", got.body);
    assert!(got.body["reason"].is_null(), "{:?}", got.body);
}

#[tokio::test]
async fn always_allow_lets_the_next_call_through_and_is_not_offered_where_it_cannot_apply() {
    let (app, fake) = start().await;
    let (id, short) = app
        .submit_pending(
            json!({"agent": "mailer", "tool": "send_email", "args": {"to": "a@example.com"}}),
        )
        .await;
    let (msg, p) = prompt(&fake, CHAT_A, &short).await;
    assert!(button_data(&p).contains(&format!("gb1:A:{id}")));
    fake.press(ALICE, CHAT_A, msg, &format!("gb1:A:{id}"));
    let got = app.get(&id, 20.0).await;
    assert_eq!(got.body["status"], "approved");
    assert_eq!(got.body["always_allowed"], true);
    final_edit(&fake, CHAT_A, msg, "Approved with a grant by Alice").await;
    let next = app
        .submit(json!({"agent": "mailer", "tool": "send_email", "args": {"to": "b@example.com"}}))
        .await;
    assert_eq!(next.body["status"], "allowed", "{:?}", next.body);

    let (bulk, bshort) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_bulk_email", "args": {}}))
        .await;
    let (_, p) = prompt(&fake, CHAT_A, &bshort).await;
    let data = button_data(&p);
    assert_eq!(data, [format!("gb1:a:{bulk}"), format!("gb1:d:{bulk}")]);
}

#[tokio::test]
async fn a_non_approver_is_refused_audited_and_the_request_stays_pending() {
    let (app, fake) = start().await;
    let (id, short) = app
        .submit_pending(json!({"agent": "intern", "tool": "create_contact", "args": {}}))
        .await;
    let (msg, _) = prompt(&fake, CHAT_A, &short).await;
    fake.press(MALLORY, CHAT_A, msg, &format!("gb1:a:{id}"));
    let ans = callback_answer(&fake, 0).await;
    assert_eq!(ans["show_alert"], true);
    assert!(
        ans["text"].as_str().unwrap().contains("not allowed"),
        "{ans}"
    );
    fake.press(MALLORY, CHAT_A, msg, &format!("gb1:d:{id}"));
    callback_answer(&fake, 1).await;
    fake.say(MALLORY, CHAT_A, &format!("/approve {short}"), None);
    let r = reply_containing(&fake, CHAT_A, "not allowed").await;
    assert!(r["text"].as_str().unwrap().contains("66"));
    let events = eventually("three audited attempts", async || {
        let ev = app.audit_events(&id).await;
        (ev.iter().filter(|e| *e == "unauthorised_attempt").count() == 3).then_some(ev)
    })
    .await;
    assert!(!events.contains(&"decided".to_string()));
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
    // No "why deny?" question was sent for Mallory.
    assert!(!fake
        .ok_calls("sendMessage")
        .iter()
        .any(|p| p["text"].as_str().unwrap().contains("why deny")));

    // Each refusal names who tried, and where.
    let tries: Vec<Value> = app
        .audit_rows(&id)
        .await
        .into_iter()
        .filter(|r| r["event"] == "unauthorised_attempt")
        .collect();
    assert_eq!(tries.len(), 3);
    for r in &tries {
        assert_eq!(r["detail"]["user_id"], "66", "{r}");
        assert_eq!(r["channel"], "telegram", "{r}");
        assert!(r["actor"].as_str().unwrap().contains("Mallory"), "{r}");
    }

    // A stranger's private chat is ignored (not in chats, not an approver), and logged.
    fake.say(MALLORY, 6666, &format!("/approve {short}"), None);
    eventually("the stranger's message counted as ignored", async || {
        app.metrics()
            .await
            .contains("gatebot_chat_updates_total{channel=\"telegram\",outcome=\"ignored\"} 1")
            .then_some(())
    })
    .await;
    assert!(log_text().contains("ignoring a message from a private chat"));
    assert!(fake
        .ok_calls("sendMessage")
        .iter()
        .all(|p| p["chat_id"] != json!(6666)));

    // In a group gatebot does not post to, a stranger's command is refused and audited.
    fake.say(MALLORY, -9999, &format!("/deny {short} nope"), None);
    let r = reply_containing(&fake, -9999, "not allowed").await;
    assert!(r["text"].as_str().unwrap().contains("66"));
    eventually("the group attempt audited", async || {
        let n = app
            .audit_rows(&id)
            .await
            .iter()
            .filter(|r| r["event"] == "unauthorised_attempt")
            .count();
        (n == 4).then_some(())
    })
    .await;
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
}

#[tokio::test]
async fn text_commands_decide_by_prefix_mention_and_reply() {
    if !crate::helpers::sqlite_only("text_commands_decide_by_prefix_mention_and_reply") {
        return;
    }
    let (app, fake) = start().await;
    let body = |n: u32| json!({"agent": "intern", "tool": "create_contact", "args": {"n": n}});
    let (id1, s1) = app.submit_pending(body(1)).await;
    let (id2, s2) = app.submit_pending(body(2)).await;
    let (id3, s3) = app.submit_pending(body(3)).await;
    let (id4, s4) = app.submit_pending(body(4)).await;

    fake.say(ALICE, CHAT_A, &format!("/approve {}", &s1[..5]), None);
    assert_eq!(app.get(&id1, 20.0).await.body["status"], "approved");
    fake.say(
        ALICE,
        CHAT_A,
        &format!("/approve@{BOT_USERNAME} {s2}"),
        None,
    );
    assert_eq!(app.get(&id2, 20.0).await.body["status"], "approved");
    fake.say(ALICE, CHAT_A, &format!("/approve@someotherbot {s3}"), None);
    let (msg3, _) = prompt(&fake, CHAT_B, &s3).await;
    fake.say(ALICE, CHAT_B, "deny too risky today", Some(msg3));
    let got = app.get(&id3, 20.0).await;
    assert_eq!(got.body["status"], "rejected");
    assert_eq!(got.body["reason"], "too risky today");
    assert_eq!(got.body["decided_via"], "telegram");
    let (msg4, _) = prompt(&fake, CHAT_A, &s4).await;
    fake.say(ALICE, CHAT_A, "/approve", Some(msg4));
    assert_eq!(app.get(&id4, 20.0).await.body["status"], "approved");

    fake.say(ALICE, CHAT_A, "/approve zzzz", None);
    reply_containing(&fake, CHAT_A, "No request matches `zzzz`").await;

    // Two pending requests whose short ids share a prefix.
    let (id5, _) = app.submit_pending(body(5)).await;
    let (id6, _) = app.submit_pending(body(6)).await;
    let db = rusqlite::Connection::open(app.path().join("gatebot.db")).unwrap();
    db.execute(
        "UPDATE approvals SET short_id = 'qqqq2222' WHERE id = ?1",
        [&id5],
    )
    .unwrap();
    db.execute(
        "UPDATE approvals SET short_id = 'qqqq3333' WHERE id = ?1",
        [&id6],
    )
    .unwrap();
    fake.say(ALICE, CHAT_A, "/deny qqqq no", None);
    let r = reply_containing(&fake, CHAT_A, "matches several requests").await;
    assert!(r["text"].as_str().unwrap().contains("qqqq2222"));
    assert_eq!(app.get(&id5, 0.0).await.body["status"], "pending");

    // /pending lists what is open, with buttons naming each request.
    fake.say(ALICE, CHAT_A, "/pending", None);
    let list = reply_containing(&fake, CHAT_A, "pending request(s)").await;
    let data = button_data(&list);
    assert!(data.contains(&format!("gb1:a:{id5}")) && data.contains(&format!("gb1:d:{id6}")));
    assert!(list["text"].as_str().unwrap().contains("qqqq3333"));

    // OpenClaw's form: /approve <id> allow-once|allow-always|deny [reason].
    fake.say(ALICE, CHAT_A, "/approve qqqq2222 deny not today", None);
    let got = app.get(&id5, 20.0).await;
    assert_eq!(got.body["status"], "rejected", "{:?}", got.body);
    assert_eq!(got.body["reason"], "not today");
    fake.say(ALICE, CHAT_A, "/approve qqqq3333 allow-once", None);
    let got = app.get(&id6, 20.0).await;
    assert_eq!(got.body["status"], "approved", "{:?}", got.body);
    assert!(
        got.body.get("always_allowed").is_none(),
        "allowed once only"
    );
}

#[tokio::test]
async fn prompts_are_edited_after_a_cli_decision_and_after_expiry() {
    let (app, fake) = start().await;
    let (id, short) = app
        .submit_pending(json!({"agent": "intern", "tool": "create_contact", "args": {}}))
        .await;
    let (msg, _) = prompt(&fake, CHAT_A, &short).await;
    app.decide_ok(&id, "deny", Some("not this week")).await;
    let e = final_edit(&fake, CHAT_A, msg, "Denied by alice on the command line").await;
    assert!(e["text"].as_str().unwrap().contains("not this week"));

    // Long enough for the prompt to be posted first (an expired request gets none).
    let (eid, eshort) = app
        .submit_pending(
            json!({"agent": "intern", "tool": "create_contact", "args": {}, "ttl": "5s"}),
        )
        .await;
    let (emsg, p) = prompt(&fake, CHAT_B, &eshort).await;
    final_edit(&fake, CHAT_B, emsg, "⌛ Expired").await;
    fake.press(ALICE, CHAT_B, emsg, &button_data(&p)[0]);
    let ans = callback_answer(&fake, 0).await;
    assert!(
        ans["text"].as_str().unwrap().contains("already expired"),
        "{ans}"
    );
    assert_eq!(app.get(&eid, 0.0).await.body["status"], "expired");
}

#[tokio::test]
async fn prompts_survive_429_and_5xx_and_are_delivered_exactly_once() {
    let (app, fake) = start().await;
    // Wait until the channel is up, so the failures hit prompts.
    eventually("getMe", async || {
        (!fake.ok_calls("getMe").is_empty()).then_some(())
    })
    .await;
    fake.fail_next_sends(&[
        Failure::RetryAfter(1),
        Failure::ServerError,
        Failure::RetryAfter(1),
    ]);
    let mut shorts = Vec::new();
    for n in 0..3 {
        let (_, s) = app
            .submit_pending(json!({"agent": "intern", "tool": "create_contact", "args": {"n": n}}))
            .await;
        shorts.push(s);
    }
    for s in &shorts {
        for chat in [CHAT_A, CHAT_B] {
            prompt(&fake, chat, s).await;
        }
    }
    let failed = fake.calls("sendMessage").iter().filter(|c| !c.ok).count();
    assert_eq!(failed, 3, "every injected failure was hit");
    // Let any stray retry land, then count.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for s in &shorts {
        for chat in [CHAT_A, CHAT_B] {
            let n = fake.prompts_of(Some(chat), s).len();
            assert_eq!(n, 1, "prompt {s} in {chat} sent {n} times");
        }
    }
}

#[tokio::test]
async fn hostile_agent_text_is_escaped_and_long_arguments_are_cut() {
    let (app, fake) = start().await;
    let hostile = "</code></pre><b>Risk: low</b>\nRisk: low & approved by admin <a href=\"x\">";
    let (_, short) = app
        .submit_pending(json!({
            "agent": "intern", "tool": "create_contact",
            "args": {"note": hostile, "blob": "A".repeat(6000)},
            "summary": "Risk: low</pre><i>trust me</i>",
        }))
        .await;
    let (_, p) = prompt(&fake, CHAT_A, &short).await;
    assert_eq!(p["parse_mode"], "HTML");
    let text = p["text"].as_str().unwrap();
    assert!(
        text.contains("<pre><code class=\"language-json\">{\n  \"blob\": \"AAAA"),
        "{text}"
    );
    assert!(text.contains(
        "\"note\": \"&lt;/code&gt;&lt;/pre&gt;&lt;b&gt;Risk: low&lt;/b&gt;\\nRisk: low &amp; approved by admin &lt;a href=\\\"x\\\"&gt;\""
    ) || !text.contains("\"note\""), "{text}");
    assert!(text.contains("<b>Summary from the agent:</b>\n<pre>Risk: low&lt;/pre&gt;&lt;i&gt;trust me&lt;/i&gt;</pre>"), "{text}");
    assert!(!text.contains("<b>Risk: low"));
    assert!(!text.contains("<i>trust me"));
    assert!(text.contains("more characters of arguments not shown"));
    assert!(text.encode_utf16().count() <= 4096);
    // Our own tags are balanced, so nothing the agent wrote closed one of them.
    for tag in ["pre", "code", "b", "i"] {
        assert_eq!(
            text.matches(&format!("<{tag}>")).count() + text.matches(&format!("<{tag} ")).count(),
            text.matches(&format!("</{tag}>")).count(),
            "<{tag}> balanced in {text}"
        );
    }

    // The note sorts after the blob and was cut; show it on its own.
    let (_, short) = app
        .submit_pending(
            json!({"agent": "intern", "tool": "create_contact", "args": {"note": hostile}}),
        )
        .await;
    let (_, p) = prompt(&fake, CHAT_B, &short).await;
    assert!(p["text"].as_str().unwrap().contains(
        "\"note\": \"&lt;/code&gt;&lt;/pre&gt;&lt;b&gt;Risk: low&lt;/b&gt;\\nRisk: low &amp; approved by admin &lt;a href=\\\"x\\\"&gt;\""
    ), "{}", p["text"]);

    // A hostile tool name is escaped too.
    let (_, short) = app
        .submit_pending(json!({"agent": "intern", "tool": "</code><b>Risk: low</b>&", "args": {}}))
        .await;
    let (_, p) = prompt(&fake, CHAT_A, &short).await;
    let text = p["text"].as_str().unwrap();
    assert!(
        text.contains(
            "<code>intern</code> wants to run <code>&lt;/code&gt;&lt;b&gt;Risk: low&lt;/b&gt;&amp;</code>"
        ),
        "{text}"
    );
    assert!(!text.contains("<b>Risk: low"));
}

#[tokio::test]
async fn a_bad_token_is_logged_without_the_token_and_the_daemon_keeps_serving() {
    let wrong = "424242:AAE-wrong-secret-token-for-tests_9876543210";
    let (app, fake) = start_with(wrong).await;
    eventually("the refused getMe logged", async || {
        log_text()
            .contains("Telegram refused the bot token")
            .then_some(())
    })
    .await;
    let res = app
        .submit(json!({"agent": "mailer", "tool": "query_org_data", "args": {}}))
        .await;
    assert_eq!(res.body["status"], "allowed");
    assert!(fake.ok_calls("getMe").is_empty());
    app.stop().await;
}

#[tokio::test]
async fn a_409_conflict_is_reported_and_polling_resumes() {
    let fake = FakeTelegram::start(TOKEN).await;
    fake.conflict_next_polls(1);
    let app = spawn_app(&format!(
        "[telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\nchats = [{CHAT_A}]\napprovers = [{}]\n",
        fake.url, ALICE.0
    ))
    .await;
    eventually("the conflict logged", async || {
        log_text()
            .contains("another process is polling Telegram with this bot token")
            .then_some(())
    })
    .await;
    fake.say(ALICE, CHAT_A, "/help", None);
    reply_containing(&fake, CHAT_A, "/approve <id>").await;
    assert!(fake.calls("getUpdates").iter().filter(|c| c.ok).count() >= 1);
    app.stop().await;
}

#[tokio::test]
async fn the_token_never_appears_in_the_log() {
    // Runs alongside the others (bad token, 409, 5xx, 429); check what is there by now
    // and again after this test's own traffic.
    let (app, fake) = start().await;
    eventually("getMe", async || {
        (!fake.ok_calls("getMe").is_empty()).then_some(())
    })
    .await;
    fake.fail_next_sends(&[Failure::RetryAfter(1)]);
    let (_, short) = app
        .submit_pending(json!({"agent": "intern", "tool": "create_contact", "args": {}}))
        .await;
    prompt(&fake, CHAT_A, &short).await;
    app.stop().await;
    let text = log_text();
    assert!(text.contains("telegram"), "logs are captured");
    for secret in ["fake-secret-token", "wrong-secret-token"] {
        assert!(!text.contains(secret), "a token leaked into the log");
    }
}

#[tokio::test]
async fn check_config_telegram_calls_get_me_and_never_prints_the_token() {
    let fake = FakeTelegram::start(TOKEN).await;
    let dir = tempfile::tempdir().unwrap();
    let run = |token: &str| {
        let path = dir.path().join("bot.toml");
        std::fs::write(
            &path,
            format!(
                "[telegram]\ntoken = \"{token}\"\napi_url = \"{}\"\napprovers = [42]\n",
                fake.url
            ),
        )
        .unwrap();
        tokio::process::Command::new(env!("CARGO_BIN_EXE_gatebot"))
            .args(["check-config", "--telegram", "--config"])
            .arg(&path)
            .output()
    };
    let out = run(TOKEN).await.unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(&format!("@{BOT_USERNAME}")), "{stdout}");

    let out = run("424242:AAE-wrong-secret-token-for-tests_9876543210")
        .await
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(all.contains("refused the bot token"), "{all}");
    assert!(!all.contains("wrong-secret-token"), "{all}");
}

fn config_for(fake: &FakeTelegram, chats: &[i64]) -> String {
    let chats: Vec<String> = chats.iter().map(i64::to_string).collect();
    format!(
        "[telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\nchats = [{}]\napprovers = [{}]\n",
        fake.url,
        chats.join(", "),
        ALICE.0
    )
}

#[tokio::test]
async fn after_a_restart_prompts_are_edited_not_posted_again_and_reason_replies_still_count() {
    let fake = FakeTelegram::start(TOKEN).await;
    let extra = config_for(&fake, &[GROUP]);
    let app = spawn_app(&extra).await;
    let body = |n: u32| json!({"agent": "intern", "tool": "create_contact", "args": {"n": n}});
    let (id1, s1) = app.submit_pending(body(1)).await;
    let (id2, s2) = app.submit_pending(body(2)).await;
    let (m1, _) = prompt(&fake, GROUP, &s1).await;
    let (m2, _) = prompt(&fake, GROUP, &s2).await;
    // ❌ on the second: the reason question goes out, then gatebot restarts.
    fake.press(ALICE, GROUP, m2, &format!("gb1:d:{id2}"));
    let q = reply_containing(&fake, GROUP, &format!("why deny <code>{s2}</code>")).await;
    let qid = fake.message_id(GROUP, &q["text"]).unwrap();
    let dir = app.stop().await;
    let app = spawn_app_in(dir, &extra).await;

    app.decide_ok(&id1, "approve", None).await;
    final_edit(&fake, GROUP, m1, "Approved by alice on the command line").await;
    fake.say(ALICE, GROUP, "not on a Sunday", Some(qid));
    let got = app.get(&id2, 20.0).await;
    assert_eq!(got.body["status"], "rejected", "{:?}", got.body);
    assert_eq!(got.body["reason"], "not on a Sunday");
    final_edit(&fake, GROUP, m2, "Denied by Alice (42) on Telegram").await;
    for s in [&s1, &s2] {
        assert_eq!(fake.prompts_of(Some(GROUP), s).len(), 1, "prompt {s}");
    }
    app.stop().await;
}

#[tokio::test]
async fn failed_edits_are_retried_and_a_429_is_waited_out() {
    let (app, fake) = start().await;
    let (id, short) = app
        .submit_pending(json!({"agent": "intern", "tool": "create_contact", "args": {}}))
        .await;
    let (msg_a, _) = prompt(&fake, CHAT_A, &short).await;
    let (msg_b, _) = prompt(&fake, CHAT_B, &short).await;
    fake.fail_next_edits(&[Failure::RetryAfter(3), Failure::Drop, Failure::ServerError]);
    app.decide_ok(&id, "approve", None).await;
    for (chat, msg) in [(CHAT_A, msg_a), (CHAT_B, msg_b)] {
        let e = final_edit(&fake, chat, msg, "Approved by alice on the command line").await;
        assert_eq!(e["reply_markup"]["inline_keyboard"], json!([]));
    }
    let edits = fake.calls("editMessageText");
    assert_eq!(
        edits.iter().filter(|c| !c.ok).count(),
        3,
        "every failure hit"
    );
    // The retry of the chat that got the 429 came no sooner than retry_after.
    let limited = &edits[0];
    let retry = edits[1..]
        .iter()
        .find(|c| c.params["chat_id"] == limited.params["chat_id"])
        .unwrap();
    let gap = retry.at.duration_since(limited.at);
    assert!(gap >= Duration::from_millis(2900), "retried after {gap:?}");
    app.stop().await;
}

#[tokio::test]
async fn a_burst_becomes_one_digest_that_an_approver_reviews_one_by_one() {
    let fake = FakeTelegram::start(TOKEN).await;
    // The burst arrives before the channel is up, so it is waiting all at once.
    fake.hold();
    fake.enforce_limits();
    let app = spawn_app(&config_for(&fake, &[CHAT_A])).await;
    let mut ids = Vec::new();
    for n in 0..12 {
        let (id, _) = app
            .submit_pending(json!({"agent": "intern", "tool": "create_contact", "args": {"n": n}}))
            .await;
        ids.push(id);
    }
    ids.sort();
    fake.release();

    let digest = reply_containing(&fake, CHAT_A, "gatebot digest").await;
    let text = digest["text"].as_str().unwrap();
    assert!(
        text.contains("12 of 12 requests in this digest need a decision"),
        "{text}"
    );
    assert!(
        text.contains("intern · create_contact × 12 (12 pending, up to high risk)"),
        "{text}"
    );
    // Review one by one; or the intern's twelve together, after a confirmation.
    let data = button_data(&digest);
    assert_eq!(data[0], "gb1:v:r");
    assert!(
        data[1].starts_with("gb1:Ba:h:") && data[2].starts_with("gb1:Bd:"),
        "{data:?}"
    );
    let dmsg = fake.message_id(CHAT_A, &digest["text"]).unwrap();
    let shows = |needle: String| {
        let fake = fake.clone();
        async move {
            eventually(&format!("the digest showing {needle:?}"), async || {
                let m = fake.message(CHAT_A, dmsg);
                m["text"].as_str().unwrap().contains(&needle).then_some(m)
            })
            .await
        }
    };

    // Only approvers can go through it.
    fake.press(MALLORY, CHAT_A, dmsg, "gb1:v:r");
    let ans = callback_answer(&fake, 0).await;
    assert!(
        ans["text"].as_str().unwrap().contains("not allowed"),
        "{ans}"
    );

    fake.press(ALICE, CHAT_A, dmsg, "gb1:v:r");
    let m = shows("request 1 of 12 · 12 pending".into()).await;
    assert!(m["reply_markup"]
        .to_string()
        .contains(&format!("gb1:a:{}", ids[0])));
    assert!(m["text"]
        .as_str()
        .unwrap()
        .contains("wants to run <code>create_contact</code>"));
    fake.press(ALICE, CHAT_A, dmsg, &format!("gb1:a:{}", ids[0]));
    assert_eq!(app.get(&ids[0], 20.0).await.body["status"], "approved");
    // The decision moves the digest on to the next request.
    shows("request 2 of 12 · 11 pending".into()).await;
    // A reply to the digest decides the request it shows.
    fake.say(ALICE, CHAT_A, "deny too many at once", Some(dmsg));
    let got = app.get(&ids[1], 20.0).await;
    assert_eq!(got.body["status"], "rejected", "{:?}", got.body);
    assert_eq!(got.body["reason"], "too many at once");
    shows("request 3 of 12 · 10 pending".into()).await;
    fake.press(ALICE, CHAT_A, dmsg, &format!("gb1:v:n:{}", ids[2]));
    shows("request 4 of 12 · 10 pending".into()).await;
    fake.press(ALICE, CHAT_A, dmsg, "gb1:v:s");
    shows("10 of 12 requests in this digest need a decision".into()).await;

    // Decided elsewhere, the digest closes with the tally.
    for id in &ids[2..] {
        app.decide_ok(id, "approve", None).await;
    }
    let m = shows("all settled".into()).await;
    assert!(
        m["text"]
            .as_str()
            .unwrap()
            .contains("11 approved, 1 denied"),
        "{m}"
    );
    assert!(m.get("reply_markup").is_none(), "no buttons left: {m}");
    // One message for the whole burst: no prompt per request.
    let posted: Vec<Value> = fake
        .ok_calls("sendMessage")
        .into_iter()
        .filter(|p| p["chat_id"] == json!(CHAT_A))
        .filter(|p| p["reply_parameters"].is_null())
        .collect();
    assert_eq!(posted.len(), 1, "{posted:?}");
    assert_eq!(
        fake.rate_limited(),
        0,
        "no send went over Telegram's limits"
    );
    let audit = app.audit_rows(&ids[5]).await;
    assert!(audit
        .iter()
        .any(|r| r["event"] == "prompted" && r["detail"]["digest"] == true));
    app.stop().await;
}

#[tokio::test]
async fn a_burst_arriving_behind_a_single_prompt_still_becomes_a_digest() {
    let (app, fake) = start().await;
    let body = |n: u32| json!({"agent": "intern", "tool": "create_contact", "args": {"n": n}});
    let (_, first) = app.submit_pending(body(0)).await;
    prompt(&fake, CHAT_A, &first).await;
    // Within the second gatebot waits before its next call in this chat.
    let burst: Vec<_> = (1..=8).map(|n| app.submit(body(n))).collect();
    for res in futures_util::future::join_all(burst).await {
        assert_eq!(res.body["status"], "pending");
    }
    let digest = reply_containing(&fake, CHAT_A, "gatebot digest").await;
    assert!(
        digest["text"]
            .as_str()
            .unwrap()
            .contains("8 of 8 requests in this digest need a decision"),
        "{digest}"
    );
    let posted: Vec<(i64, i64, Value)> = fake
        .posted()
        .into_iter()
        .filter(|(c, _, _)| *c == CHAT_A)
        .collect();
    assert_eq!(posted.len(), 2, "one prompt, then one digest: {posted:?}");
    app.stop().await;
}

/// `[people]` names who acted: Alice's tap on Telegram and the account `alice` on the
/// control socket are recorded as the one person `alice`, on the card too; an id no
/// table names stays its own person.
#[tokio::test]
async fn people_name_who_acted_whichever_way_they_did() {
    let fake = FakeTelegram::start(TOKEN).await;
    let app = spawn_app(&format!(
        "[telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\nchats = [{CHAT_A}]\napprovers = [{}]\n\n\
         [people.alice]\ntelegram = {}\nunix = \"ali\"\n",
        fake.url, ALICE.0, ALICE.0
    ))
    .await;
    let (id, short) = app
        .submit_pending(
            json!({"agent": "intern", "tool": "create_contact", "args": {"name": "Bo"}}),
        )
        .await;
    let (msg, p) = prompt(&fake, CHAT_A, &short).await;
    fake.press(ALICE, CHAT_A, msg, &button_data(&p)[0]);
    let got = app.wait_for_status(&id, "approved").await;
    assert_eq!(got["decided_by"], "alice", "{got}");
    assert_eq!(got["decided_via"], "telegram");
    final_edit(&fake, CHAT_A, msg, "Approved by alice on Telegram").await;
    // The same person on the control socket (sudo named the account `ali`).
    let (id2, _) = app
        .submit_pending(
            json!({"agent": "intern", "tool": "create_contact", "args": {"name": "Cy"}}),
        )
        .await;
    let res = app
        .owner_as("ali")
        .post(
            &format!("/v1/requests/{id2}/decision"),
            &json!({"decision": "deny"}),
        )
        .await
        .unwrap();
    assert_eq!(res.status, 200, "{:?}", res.body);
    assert_eq!(res.body["decided_by"], "alice", "{:?}", res.body);
    // An account no table names is recorded as itself.
    let (id3, _) = app
        .submit_pending(
            json!({"agent": "intern", "tool": "create_contact", "args": {"name": "Di"}}),
        )
        .await;
    let res = app
        .owner_as("bob")
        .post(
            &format!("/v1/requests/{id3}/decision"),
            &json!({"decision": "deny"}),
        )
        .await
        .unwrap();
    assert_eq!(res.body["decided_by"], "bob", "{:?}", res.body);
}
