//! The Discord platform, end to end: the in-process daemon and a fake Discord on
//! loopback (REST and the Gateway, see `fake_discord`).

use std::time::Duration;

use serde_json::{json, Value};

use crate::fake_discord::{FakeDiscord, Msg, BOT, CHANNEL, OWNER, ROLE_MEMBER, STRANGER, TOKEN};
use crate::helpers::{eventually, spawn_app, spawn_app_in, TestApp};

async fn setup() -> (TestApp, FakeDiscord) {
    let fake = FakeDiscord::start().await;
    let app = spawn_app(&fake.config()).await;
    fake.ready().await;
    (app, fake)
}

/// The card showing `short` in the channel, once posted.
async fn card(fake: &FakeDiscord, short: &str) -> Msg {
    eventually("the Discord card", async || {
        fake.posted(CHANNEL, &format!("id `{short}`"))
            .into_iter()
            .next()
    })
    .await
}

/// A pending request and its card.
async fn prompted(app: &TestApp, fake: &FakeDiscord, args: Value) -> (String, String, Msg) {
    let (id, short) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": args}))
        .await;
    let card = card(fake, &short).await;
    (id, short, card)
}

/// Waits until gatebot has answered interaction `id` with a follow-up.
async fn followup(fake: &FakeDiscord, id: &str) -> (u64, String) {
    eventually("a follow-up", async || {
        fake.interaction(id).followups.into_iter().next()
    })
    .await
}

#[tokio::test]
async fn discord_an_approver_approves_with_a_button_and_the_card_shows_it() {
    let (app, fake) = setup().await;
    let (id, short, card) = prompted(
        &app,
        &fake,
        json!({"to": ["ann@example.com"], "body": "Hi"}),
    )
    .await;
    assert!(
        card.content.contains("`mailer` wants to run `send_email`"),
        "{}",
        card.content
    );
    assert!(card.content.starts_with("🛡 **gatebot"), "{}", card.content);
    assert!(
        card.buttons().iter().any(|b| b.contains("Allow once")),
        "{:?}",
        card.buttons()
    );
    assert_eq!(
        card.allowed_mentions["parse"],
        json!([]),
        "no agent text may ping"
    );
    let press = fake.press(OWNER, &card.id, &card.button("Allow once"));
    let done = app.wait_for_status(&id, "approved").await;
    assert!(
        done["decided_by"].to_string().contains("User 111")
            || done["decided_by"].to_string().contains(OWNER),
        "{done}"
    );
    // Deferred at once as an update of the card, which is then edited to its final state.
    assert_eq!(fake.interaction(&press).acked, Some(6));
    let edited = eventually("the card's final state", async || {
        let m = fake.message(&card.id);
        (m.edits > 0 && m.content.contains("Approved")).then_some(m)
    })
    .await;
    assert!(edited.buttons().is_empty(), "{:?}", edited.buttons());
    assert!(edited.content.contains(&format!("id `{short}`")));
    // The commands of the kinds registry, registered in the guild.
    let commands = fake.commands().unwrap();
    let names: Vec<&str> = commands
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    for c in gatebot::chat::conversation::commands() {
        assert!(
            names.contains(&c.name),
            "{} not registered: {names:?}",
            c.name
        );
    }
    assert!(fake.refused().is_empty(), "{:?}", fake.refused());
}

#[tokio::test]
async fn discord_a_role_approver_denies_and_is_asked_why_in_a_reply() {
    let (app, fake) = setup().await;
    let (id, _, card) = prompted(&app, &fake, json!({"to": ["bob@example.com"]})).await;
    let press = fake.press(ROLE_MEMBER, &card.id, &card.button("Deny"));
    // The question replies to the card, pinging the asker alone.
    let question = eventually("the question", async || {
        fake.messages()
            .into_iter()
            .find(|m| m.author == BOT && m.reply_to.as_deref() == Some(card.id.as_str()))
    })
    .await;
    assert!(
        question.content.starts_with(&format!("<@{ROLE_MEMBER}>")),
        "{}",
        question.content
    );
    assert_eq!(question.allowed_mentions["users"], json!([ROLE_MEMBER]));
    assert_eq!(question.allowed_mentions["parse"], json!([]));
    let (flags, _) = followup(&fake, &press).await;
    assert_eq!(flags, 64, "told privately that it was asked");
    fake.write(
        ROLE_MEMBER,
        CHANNEL,
        "we never mail Bob",
        Some(&question.id),
        false,
    );
    let done = app.wait_for_status(&id, "rejected").await;
    assert_eq!(done["reason"], "we never mail Bob", "{done}");
}

#[tokio::test]
async fn discord_a_reply_to_a_card_decides_it() {
    let (app, fake) = setup().await;
    let (id, _, card) = prompted(&app, &fake, json!({"to": ["a@x"]})).await;
    fake.write(OWNER, CHANNEL, "approve", Some(&card.id), false);
    app.wait_for_status(&id, "approved").await;
    eventually("the card edited", async || {
        (fake.message(&card.id).content.contains("Approved")).then_some(())
    })
    .await;
}

#[tokio::test]
async fn discord_a_slash_command_is_deferred_then_answered_privately() {
    let (app, fake) = setup().await;
    let (id, short, _) = prompted(&app, &fake, json!({"to": ["a@x"]})).await;
    let pending = fake.command(OWNER, "pending", "");
    let answer = eventually("the answer to /pending", async || {
        fake.interaction(&pending).original
    })
    .await;
    assert_eq!(fake.interaction(&pending).acked, Some(5));
    assert!(answer.contains(&short), "{answer}");
    let deny = fake.command(OWNER, "deny", &format!("{short} not today"));
    let done = app.wait_for_status(&id, "rejected").await;
    assert_eq!(done["reason"], "not today", "{done}");
    eventually("the answer to /deny", async || {
        fake.interaction(&deny).original
    })
    .await;
    // Neither the bot token nor an interaction's token reaches the log.
    let logs = crate::helpers::log_text();
    assert!(!logs.contains(TOKEN), "the bot token is in the log");
    let token = fake.interaction(&deny).token;
    assert!(!logs.contains(&token), "an interaction token is in the log");
}

#[tokio::test]
async fn discord_an_unauthorised_press_is_refused_privately_and_audited() {
    let (app, fake) = setup().await;
    let (id, _, card) = prompted(&app, &fake, json!({"to": ["a@x"]})).await;
    let press = fake.press(STRANGER, &card.id, &card.button("Allow once"));
    let (flags, text) = followup(&fake, &press).await;
    assert_eq!(flags, 64, "ephemeral");
    assert!(text.contains("not allowed"), "{text}");
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
    let events = app.audit_events(&id).await;
    assert!(
        events.iter().any(|e| e == "unauthorised_attempt"),
        "{events:?}"
    );
    // A slash command from a stranger is refused the same way.
    let cmd = fake.command(STRANGER, "approve", &card.id);
    let refused = eventually("the refusal", async || fake.interaction(&cmd).original).await;
    assert!(
        refused.contains("not allowed") || refused.contains("No request"),
        "{refused}"
    );
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
}

#[tokio::test]
async fn discord_a_forged_button_and_a_second_tap_decide_nothing_more() {
    let (app, fake) = setup().await;
    let (id, _, card) = prompted(&app, &fake, json!({"to": ["a@x"]})).await;
    let forged = fake.press(OWNER, &card.id, "gb1:forged-and-unknown");
    let (_, text) = followup(&fake, &forged).await;
    assert!(text.contains("not recognised"), "{text}");
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
    let data = card.button("Allow once");
    fake.press(OWNER, &card.id, &data);
    app.wait_for_status(&id, "approved").await;
    let again = fake.press(OWNER, &card.id, &card.button("Deny"));
    let (flags, _) = followup(&fake, &again).await;
    assert_eq!(flags, 64);
    assert_eq!(app.get(&id, 0.0).await.body["status"], "approved");
    let events = app.audit_events(&id).await;
    assert_eq!(
        events
            .iter()
            .filter(|e| e.contains("approved") || *e == "decided")
            .count(),
        1,
        "{events:?}"
    );
}

#[tokio::test]
async fn discord_an_interaction_acknowledged_too_late_decides_nothing() {
    let (app, fake) = setup().await;
    let (id, _, card) = prompted(&app, &fake, json!({"to": ["a@x"]})).await;
    fake.late(1);
    let press = fake.press(OWNER, &card.id, &card.button("Allow once"));
    eventually("the late callback refused", async || {
        fake.refused()
            .iter()
            .any(|r| r.0 == 404 && r.1 == 10062)
            .then_some(())
    })
    .await;
    assert_eq!(fake.interaction(&press).acked, None);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
}

#[tokio::test]
async fn discord_a_429_is_honoured_and_counted_and_a_5xx_retried() {
    let (app, fake) = setup().await;
    fake.rate_limit(1, false);
    fake.fail(1);
    let (_, short, _) = prompted(&app, &fake, json!({"to": ["a@x"]})).await;
    assert_eq!(fake.posted(CHANNEL, &short).len(), 1);
    let refused: Vec<u16> = fake.refused().iter().map(|r| r.0).collect();
    assert_eq!(refused, [429, 500]);
    let metrics = app.engine.metrics.render(0);
    assert!(
        metrics.contains("gatebot_chat_rate_limited_total{channel=\"discord\"} 1"),
        "{metrics}"
    );
    // A global 429 holds every route back, and is counted too.
    fake.rate_limit(1, true);
    let (_, short, _) = prompted(&app, &fake, json!({"to": ["b@x"]})).await;
    assert_eq!(fake.posted(CHANNEL, &short).len(), 1);
    let metrics = app.engine.metrics.render(0);
    assert!(
        metrics.contains("gatebot_chat_rate_limited_total{channel=\"discord\"} 2"),
        "{metrics}"
    );
}

#[tokio::test]
async fn discord_a_spent_bucket_holds_the_next_post_back() {
    let (app, fake) = setup().await;
    let (_, _, _) = prompted(&app, &fake, json!({"to": ["a@x"]})).await;
    let counted = || {
        let metrics = app.engine.metrics.render(0);
        metrics
            .lines()
            .find(|l| l.starts_with("gatebot_chat_rate_limited_total{channel=\"discord\"}"))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0)
    };
    assert_eq!(counted(), 0);
    // The answer to this post says the channel's bucket is spent for 2.5 s.
    fake.spend(1);
    let (_, _, _) = prompted(&app, &fake, json!({"to": ["b@x"]})).await;
    // So the next post waits for the reset instead of drawing a 429.
    let (_, short, _) = prompted(&app, &fake, json!({"to": ["c@x"]})).await;
    assert_eq!(fake.posted(CHANNEL, &short).len(), 1);
    assert!(fake.refused().is_empty(), "{:?}", fake.refused());
    assert!(counted() >= 1, "the wait is counted");
}

#[tokio::test]
async fn discord_after_a_restart_no_card_is_posted_twice() {
    let (app, fake) = setup().await;
    let (id, short, card) = prompted(&app, &fake, json!({"to": ["a@x"]})).await;
    let dir = app.stop().await;
    let app = spawn_app_in(dir, &fake.config()).await;
    eventually("a new session", async || {
        (fake.sessions().0 >= 2).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        fake.posted(CHANNEL, &short).len(),
        1,
        "{:?}",
        fake.messages()
    );
    fake.press(OWNER, &card.id, &card.button("Allow once"));
    app.wait_for_status(&id, "approved").await;
}

#[tokio::test]
async fn discord_a_dropped_gateway_connection_resumes_and_loses_no_press() {
    let (app, fake) = setup().await;
    let (id, _, card) = prompted(&app, &fake, json!({"to": ["a@x"]})).await;
    fake.drop_connection();
    // Pressed while gatebot is away: the dispatch waits for the resume.
    fake.press(OWNER, &card.id, &card.button("Allow once"));
    app.wait_for_status(&id, "approved").await;
    assert_eq!(fake.sessions(), (1, 1), "one IDENTIFY, then a RESUME");
}

#[tokio::test]
async fn discord_hostile_agent_text_is_shown_as_data_and_pings_nobody() {
    let (app, fake) = setup().await;
    let (_, short) = app
        .submit_pending(json!({
            "agent": "intern", "tool": "create_contact",
            "args": {"note": format!("@everyone <@{OWNER}> ``` **bold** {}", "A".repeat(5000))},
            "summary": "@here **Risk: low** [click](https://evil.example) ```\n# Approved",
        }))
        .await;
    let card = card(&fake, &short).await;
    let c = &card.content;
    assert!(c.chars().count() <= 2000, "{}", c.chars().count());
    assert_eq!(card.allowed_mentions["parse"], json!([]));
    assert_eq!(card.allowed_mentions["users"], json!([]));
    // Agent text stays inside its blocks: the only fences are gatebot's own (the
    // summary's and the arguments'), and the summary's "# Approved" is inside one.
    assert_eq!(c.matches("```").count(), 4, "{c}");
    let heading = c.find("\n# Approved").expect("the summary's line");
    assert_eq!(c[..heading].matches("```").count(), 1, "{c}");

    assert!(c.contains("more characters of"), "{c}");
}

#[tokio::test]
async fn discord_a_check_in_is_posted_and_continued_with_a_button() {
    let (app, fake) = setup().await;
    let run = app
        .agent
        .post(
            "/v1/runs",
            &json!({"agent": "mailer", "title": "Release 2.4"}),
        )
        .await
        .unwrap()
        .body["id"]
        .as_str()
        .unwrap()
        .to_string();
    let res = app
        .agent
        .post(
            &format!("/v1/runs/{run}/events"),
            &json!({"type": "phase_complete", "phase": "build", "warnings": [
                {"text": "Style issue", "severity": "low"}
            ]}),
        )
        .await
        .unwrap();
    assert_eq!(res.body["action"], "wait", "{:?}", res.body);
    let short = res.body["check_in"]["short_id"]
        .as_str()
        .unwrap()
        .to_string();
    let card = card(&fake, &short).await;
    fake.press(OWNER, &card.id, &card.button("Continue"));
    eventually("the run to go on", async || {
        let body = app
            .agent
            .get(&format!("/v1/runs/{run}?wait=1"))
            .await
            .unwrap()
            .body;
        (body["status"] == "running").then_some(())
    })
    .await;
}

#[tokio::test]
async fn discord_a_proposal_is_posted_and_approved_by_its_button() {
    // The history behind the proposal is made before Discord is on (50 cards otherwise).
    let fake = FakeDiscord::start().await;
    let app = spawn_app("").await;
    crate::trust::seed(&app, "intern", 50, 0).await;
    let dir = app.stop().await;
    let app = spawn_app_in(dir, &fake.config()).await;
    fake.ready().await;
    let o = crate::trust::assess(&app, "intern").await;
    let short = o["proposal"]["short_id"].as_str().unwrap().to_string();
    let card = card(&fake, &short).await;
    assert!(card.content.contains("Promote"), "{}", card.content);
    let first = card.buttons()[0].clone();
    let press = fake.press(STRANGER, &card.id, &card.button(&first));
    followup(&fake, &press).await;
    assert_eq!(
        crate::trust::trust(&app, "intern").await["tier"],
        "supervised"
    );
    fake.press(OWNER, &card.id, &card.button(&first));
    eventually("the tier to change", async || {
        (crate::trust::trust(&app, "intern").await["tier"] == "semi_autonomous").then_some(())
    })
    .await;
}

#[tokio::test]
async fn discord_a_task_written_to_the_bot_gets_its_card_in_a_thread_and_is_answered_there() {
    let fake = FakeDiscord::start().await;
    let app = spawn_app(&crate::inbox::with_inbox("", &fake.config())).await;
    fake.ready().await;
    let message = fake.write(
        OWNER,
        CHANNEL,
        &format!("<@{BOT}> refactor everything"),
        None,
        true,
    );
    // The thread started from the message has the message's id.
    let in_thread = |needle: &'static str| {
        let fake = &fake;
        let message = message.clone();
        async move {
            eventually(needle, async || {
                fake.messages()
                    .into_iter()
                    .find(|m| m.author == BOT && m.channel == message && m.content.contains(needle))
            })
            .await
        }
    };
    let card = in_thread("gatebot: task").await;
    assert_eq!(fake.thread_parent(&message).as_deref(), Some(CHANNEL));
    assert!(
        card.content.contains("refactor everything"),
        "{}",
        card.content
    );
    in_thread("gatebot asks before the task goes on").await;
    // The owner answers in the thread, as a plain message there.
    fake.write(OWNER, &message, "only src/chat/delivery.rs", None, false);
    let short = card
        .content
        .split("id `")
        .nth(1)
        .and_then(|r| r.split('`').next())
        .unwrap()
        .to_string();
    let t = crate::inbox::wait_status(&app, &short, "pending").await;
    assert_eq!(t["clarification"], "only src/chat/delivery.rs", "{t}");
}
