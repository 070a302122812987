//! The Slack channel, end to end: the in-process daemon, real slack-morphism, and a
//! fake Slack (Web API + Socket Mode) on loopback.

use std::time::Duration;

use gatebot::chat::conversation::approval::{button_data as encode_button, ButtonKind as Button};
use serde_json::{json, Value};

use crate::fake_slack::{click, message, submit_modal, FakeSlack, Via};
use crate::fake_telegram::FakeTelegram;
use crate::helpers::{eventually, eventually_within, log_text, spawn_app, spawn_app_in, TestApp};

pub(crate) const APPROVER: &str = "U1";
const STRANGER: &str = "U999";

async fn setup() -> (TestApp, FakeSlack) {
    let fake = FakeSlack::start().await;
    let app = spawn_app(&fake.config()).await;
    (app, fake)
}

/// A pending request and its Slack prompt.
pub(crate) struct Prompted {
    pub(crate) id: String,
    pub(crate) short_id: String,
    pub(crate) ts: String,
    /// The `chat.postMessage` params.
    pub(crate) params: Value,
}

pub(crate) async fn prompted(
    app: &TestApp,
    fake: &FakeSlack,
    agent: &str,
    tool: &str,
    args: Value,
) -> Prompted {
    let (id, short_id) = app
        .submit_pending(json!({"agent": agent, "tool": tool, "args": args}))
        .await;
    let call = eventually("the prompt", async || {
        fake.calls("chat.postMessage")
            .into_iter()
            .find(|c| c.ts.is_some() && c.params.to_string().contains(&id))
    })
    .await;
    Prompted {
        short_id,
        ts: call.ts.clone().unwrap(),
        params: call.params,
        id,
    }
}

/// What `user` was told privately (ephemeral messages and response_url answers).
pub(crate) fn ephemerals(fake: &FakeSlack, user: &str) -> Vec<String> {
    fake.answers(user).iter().map(|a| a.text()).collect()
}

async fn ephemeral_containing(fake: &FakeSlack, user: &str, needle: &str) -> String {
    eventually(&format!("an ephemeral with {needle:?}"), async || {
        ephemerals(fake, user)
            .into_iter()
            .find(|t| t.contains(needle))
    })
    .await
}

/// The `chat.update` that shows `ts` in its final form for `status_word`.
pub(crate) async fn update_of(fake: &FakeSlack, ts: &str, status_word: &str) -> Value {
    eventually(
        &format!("a chat.update of {ts} saying {status_word}"),
        async || {
            fake.calls("chat.update")
                .into_iter()
                .find(|c| {
                    c.ok && c.params["ts"] == ts
                        && c.params["text"]
                            .as_str()
                            .unwrap_or("")
                            .contains(status_word)
                })
                .map(|c| c.params)
        },
    )
    .await
}

async fn status(app: &TestApp, id: &str) -> Value {
    app.get(id, 0.0).await.body
}

fn action_ids(params: &Value) -> Vec<String> {
    params["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "actions")
        .flat_map(|b| b["elements"].as_array().unwrap().iter())
        .map(|e| e["action_id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn a_click_on_allow_once_approves_and_the_prompt_loses_its_buttons() {
    let (app, fake) = setup().await;
    let p = prompted(
        &app,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["ann@example.com"], "body": "Hi"}),
    )
    .await;
    assert_eq!(p.params["channel"], "C1");
    assert_eq!(
        p.params["text"],
        format!("⏳ Approval needed: request {} (risk high)", p.short_id),
        "a plain text fallback"
    );
    let text = p.params["blocks"].to_string();
    for needle in [
        "mailer",
        "send_email",
        "*Risk:* high",
        "destructive tool",
        "ann@example.com",
        "*Expires:*",
        &p.short_id,
    ] {
        assert!(text.contains(needle), "{needle} missing from {text}");
    }
    assert_eq!(
        action_ids(&p.params),
        [
            encode_button(Button::Approve, &p.id),
            encode_button(Button::ApproveAlways, &p.id),
            encode_button(Button::Deny, &p.id),
            encode_button(Button::ApproveFor, &p.id)
        ]
    );
    assert!(fake.calls("auth.test").len() <= 1);
    assert!(
        fake.calls("apps.connections.open")[0]
            .auth
            .contains("xapp-test-app"),
        "Socket Mode uses the app token"
    );
    assert!(p.params.get("blocks").is_some());

    let waiter = {
        let agent = app.agent.clone();
        let id = p.id.clone();
        tokio::spawn(async move { agent.get(&format!("/v1/requests/{id}?wait=30")).await })
    };
    let env = fake
        .send(
            "interactive",
            click(APPROVER, &p.ts, &encode_button(Button::Approve, &p.id)),
        )
        .await;
    let got = waiter.await.unwrap().unwrap().body;
    assert_eq!(got["status"], "approved", "{got:?}");
    assert_eq!(got["decided_via"], "slack");
    assert_eq!(got["decided_by"], "name-U1 (U1)");
    eventually("the ack", async || fake.acks().contains(&env).then_some(())).await;

    let update = update_of(&fake, &p.ts, "Approved").await;
    assert_eq!(update["channel"], "C1");
    assert!(action_ids(&update).is_empty(), "buttons removed: {update}");
    assert!(!update["blocks"].to_string().contains("*Expires:*"));
    assert!(update["blocks"]
        .to_string()
        .contains("Approved by name-U1 (U1) on Slack"));
    // No chatter for the clicker: the prompt itself shows the outcome.
    assert!(ephemerals(&fake, APPROVER).is_empty());
    app.stop().await;
}

#[tokio::test]
async fn deny_opens_a_modal_and_its_reason_reaches_the_agent() {
    let (app, fake) = setup().await;
    let p = prompted(
        &app,
        &fake,
        "intern",
        "create_contact",
        json!({"name": "Bo"}),
    )
    .await;
    fake.send(
        "interactive",
        click(APPROVER, &p.ts, &encode_button(Button::Deny, &p.id)),
    )
    .await;
    let open = eventually("views.open", async || fake.calls("views.open").pop()).await;
    assert_eq!(open.params["trigger_id"], format!("trigger-{}", p.ts));
    let view = &open.params["view"];
    assert_eq!(view["type"], "modal");
    let meta = view["private_metadata"].as_str().unwrap().to_string();
    assert!(meta.contains(&p.id));
    // The click alone decides nothing.
    assert_eq!(status(&app, &p.id).await["status"], "pending");

    fake.send(
        "interactive",
        submit_modal(APPROVER, &meta, Some("  wrong customer  ")),
    )
    .await;
    let got = app.wait_for_status(&p.id, "rejected").await;
    assert_eq!(got["reason"], "wrong customer");
    assert!(got["message"].as_str().unwrap().contains("wrong customer"));
    let update = update_of(&fake, &p.ts, "Denied").await;
    assert!(update["blocks"].to_string().contains("wrong customer"));
}

#[tokio::test]
async fn always_allow_lets_the_next_call_through_and_is_offered_only_when_it_applies() {
    let (app, fake) = setup().await;
    let p = prompted(
        &app,
        &fake,
        "intern",
        "create_contact",
        json!({"name": "Bo"}),
    )
    .await;
    // A supervised agent always asks: "Always allow" would not apply.
    assert_eq!(
        action_ids(&p.params).len(),
        2,
        "{:?}",
        action_ids(&p.params)
    );

    let p = prompted(
        &app,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["a@example.com"]}),
    )
    .await;
    fake.send(
        "interactive",
        click(
            APPROVER,
            &p.ts,
            &encode_button(Button::ApproveAlways, &p.id),
        ),
    )
    .await;
    let got = app.wait_for_status(&p.id, "approved").await;
    assert_eq!(got["always_allowed"], true, "{got:?}");
    let next = app
        .submit_ok("mailer", "send_email", json!({"to": ["b@example.com"]}))
        .await;
    assert_eq!(next["status"], "allowed", "{next:?}");
}

#[tokio::test]
async fn non_approvers_are_refused_privately_and_audited() {
    let (app, fake) = setup().await;
    let p = prompted(
        &app,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["a@example.com"]}),
    )
    .await;
    fake.send(
        "interactive",
        click(STRANGER, &p.ts, &encode_button(Button::Approve, &p.id)),
    )
    .await;
    ephemeral_containing(&fake, STRANGER, "not allowed").await;
    fake.send(
        "interactive",
        click(STRANGER, &p.ts, &encode_button(Button::Deny, &p.id)),
    )
    .await;
    fake.send(
        "slash_commands",
        fake.slash(STRANGER, "/approve", &p.short_id),
    )
    .await;
    eventually("three refusals", async || {
        (ephemerals(&fake, STRANGER).len() == 3).then_some(())
    })
    .await;
    assert!(ephemerals(&fake, STRANGER)
        .iter()
        .all(|t| t.contains("not allowed")));
    assert!(
        fake.calls("views.open").is_empty(),
        "no deny form for a stranger"
    );
    let events = app.audit_events(&p.id).await;
    assert_eq!(
        events
            .iter()
            .filter(|e| *e == "unauthorised_attempt")
            .count(),
        3,
        "{events:?}"
    );
    assert_eq!(status(&app, &p.id).await["status"], "pending");
    // A refused /pending is audited too.
    fake.send("slash_commands", fake.slash(STRANGER, "/pending", ""))
        .await;
    eventually("the fourth refusal", async || {
        (ephemerals(&fake, STRANGER).len() == 4).then_some(())
    })
    .await;
}

#[tokio::test]
async fn slash_commands_take_prefixes_and_explain_ambiguous_or_unknown_ids() {
    if !crate::helpers::sqlite_only(
        "slash_commands_take_prefixes_and_explain_ambiguous_or_unknown_ids",
    ) {
        return;
    }
    let (app, fake) = setup().await;
    let a = prompted(
        &app,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["a@example.com"]}),
    )
    .await;
    let b = prompted(
        &app,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["b@example.com"]}),
    )
    .await;
    let c = prompted(
        &app,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["c@example.com"]}),
    )
    .await;

    fake.send("slash_commands", fake.slash(APPROVER, "/pending", ""))
        .await;
    let list = ephemeral_containing(&fake, APPROVER, "3 pending").await;
    assert!(
        list.contains(&a.short_id) && list.contains(&c.short_id),
        "{list}"
    );

    // Make two short ids share a prefix, so the prefix is ambiguous.
    let db = rusqlite::Connection::open(app.path().join("gatebot.db")).unwrap();
    db.busy_timeout(Duration::from_secs(5)).unwrap();
    db.execute(
        "UPDATE approvals SET short_id = 'zzzz2345' WHERE id = ?1",
        [&a.id],
    )
    .unwrap();
    db.execute(
        "UPDATE approvals SET short_id = 'zzzz6789' WHERE id = ?1",
        [&b.id],
    )
    .unwrap();
    drop(db);
    fake.send("slash_commands", fake.slash(APPROVER, "/approve", "zzzz"))
        .await;
    let msg = ephemeral_containing(&fake, APPROVER, "matches several").await;
    assert!(
        msg.contains("zzzz2345") && msg.contains("zzzz6789"),
        "{msg}"
    );

    fake.send("slash_commands", fake.slash(APPROVER, "/approve", "qqqqqq"))
        .await;
    ephemeral_containing(&fake, APPROVER, "No request matches").await;

    fake.send("slash_commands", fake.slash(APPROVER, "/approve", "zzzz6"))
        .await;
    app.wait_for_status(&b.id, "approved").await;
    ephemeral_containing(&fake, APPROVER, "Approved zzzz6789").await;

    fake.send(
        "slash_commands",
        fake.slash(
            APPROVER,
            "/deny",
            &format!("{} not this week", &c.short_id[..5]),
        ),
    )
    .await;
    let got = app.wait_for_status(&c.id, "rejected").await;
    assert_eq!(got["reason"], "not this week");

    fake.send(
        "slash_commands",
        fake.slash(APPROVER, "/approve_always", "zzzz2345"),
    )
    .await;
    app.wait_for_status(&a.id, "approved").await;
    // Every answer was private: nothing was posted to the channel but the three prompts.
    assert_eq!(fake.calls("chat.postMessage").len(), 3);
}

#[tokio::test]
async fn a_reply_in_a_prompt_thread_decides_without_an_id() {
    let (app, fake) = setup().await;
    let p = prompted(
        &app,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["a@example.com"]}),
    )
    .await;
    let q = prompted(
        &app,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["b@example.com"]}),
    )
    .await;
    // Chatter in the thread and top-level words are ignored.
    fake.send(
        "events_api",
        message(APPROVER, "what is this?", Some(&p.ts), "Ev0"),
    )
    .await;
    fake.send("events_api", message(APPROVER, "approve", None, "Ev1"))
        .await;
    fake.send(
        "events_api",
        message(APPROVER, "deny not to this address", Some(&p.ts), "Ev2"),
    )
    .await;
    let got = app.wait_for_status(&p.id, "rejected").await;
    assert_eq!(got["reason"], "not to this address");
    let said = ephemeral_containing(&fake, APPROVER, "Denied").await;
    assert!(said.contains(&p.short_id));
    let answer = fake.calls("chat.postEphemeral").pop().unwrap();
    assert_eq!(
        answer.params["thread_ts"],
        p.ts.as_str(),
        "answered in the thread"
    );

    fake.send(
        "events_api",
        message(APPROVER, "/approve", Some(&q.ts), "Ev3"),
    )
    .await;
    app.wait_for_status(&q.id, "approved").await;
    // The answer follows the decision: wait for it rather than race it.
    ephemeral_containing(&fake, APPROVER, &format!("Approved {}", q.short_id)).await;
    assert_eq!(
        ephemerals(&fake, APPROVER).len(),
        2,
        "{:?}",
        ephemerals(&fake, APPROVER)
    );
}

#[tokio::test]
async fn prompts_follow_cli_decisions_and_a_late_click_is_told_who_won() {
    let (app, fake) = setup().await;
    let p = prompted(
        &app,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["a@example.com"]}),
    )
    .await;
    app.decide_ok(&p.id, "approve", None).await;
    let update = update_of(&fake, &p.ts, "Approved").await;
    assert!(action_ids(&update).is_empty());
    assert!(update["blocks"]
        .to_string()
        .contains("by alice on the command line"));

    fake.send(
        "interactive",
        click(APPROVER, &p.ts, &encode_button(Button::Deny, &p.id)),
    )
    .await;
    let said = ephemeral_containing(&fake, APPROVER, "already").await;
    assert!(
        said.contains("approved by alice on the command line"),
        "{said}"
    );
    fake.send(
        "interactive",
        click(APPROVER, &p.ts, &encode_button(Button::Approve, &p.id)),
    )
    .await;
    eventually("two late-click answers", async || {
        (ephemerals(&fake, APPROVER).len() == 2).then_some(())
    })
    .await;
    assert!(fake.calls("views.open").is_empty());
    assert_eq!(status(&app, &p.id).await["decided_by"], "alice");
}

#[tokio::test]
async fn an_expired_request_updates_its_prompt() {
    let (app, fake) = setup().await;
    let res = app
        .submit(json!({"agent": "mailer", "tool": "send_email", "args": {"to": ["a@example.com"]}, "ttl": "3s"}))
        .await;
    let id = res.body["id"].as_str().unwrap().to_string();
    let post = eventually("the prompt", async || {
        fake.calls("chat.postMessage")
            .into_iter()
            .find(|c| c.params.to_string().contains(&id))
    })
    .await;
    let ts = post.ts.unwrap();
    let update = update_of(&fake, &ts, "Expired").await;
    assert!(action_ids(&update).is_empty());
    let shown = update["blocks"].to_string();
    let when =
        regex::Regex::new(r"⌛ Expired \d{4}-\d\d-\d\d \d\d:\d\d UTC: no response within 3 s")
            .unwrap();
    assert!(when.is_match(&shown), "{shown}");
    assert_eq!(status(&app, &id).await["status"], "expired");
}

#[tokio::test]
async fn a_redelivered_envelope_is_acknowledged_twice_but_decides_once() {
    let (app, fake) = setup().await;
    let p = prompted(
        &app,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["a@example.com"]}),
    )
    .await;
    let frame = json!({
        "envelope_id": "dup-1",
        "type": "interactive",
        "accepts_response_payload": false,
        "payload": click(APPROVER, &p.ts, &encode_button(Button::Approve, &p.id)),
    });
    fake.send_frame(frame.clone()).await;
    fake.send_frame(frame).await;
    // The same event redelivered in a new envelope is also handled once.
    let p2 = prompted(
        &app,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["b@example.com"]}),
    )
    .await;
    fake.send(
        "events_api",
        message(APPROVER, "approve", Some(&p2.ts), "EvSame"),
    )
    .await;
    fake.send(
        "events_api",
        message(APPROVER, "approve", Some(&p2.ts), "EvSame"),
    )
    .await;

    eventually("both acks", async || {
        (fake.acks().iter().filter(|a| *a == "dup-1").count() == 2).then_some(())
    })
    .await;
    app.wait_for_status(&p.id, "approved").await;
    app.wait_for_status(&p2.id, "approved").await;
    // Let any duplicate handling finish before looking for its traces.
    eventually("all acks", async || (fake.acks().len() == 4).then_some(())).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    for id in [&p.id, &p2.id] {
        let events = app.audit_events(id).await;
        assert_eq!(
            events.iter().filter(|e| *e == "decided").count(),
            1,
            "{events:?}"
        );
        assert!(
            !events.iter().any(|e| e == "decision_refused"),
            "{events:?}"
        );
    }
    // Only the thread reply got an answer; no "already approved" for a duplicate.
    assert_eq!(
        ephemerals(&fake, APPROVER).len(),
        1,
        "{:?}",
        ephemerals(&fake, APPROVER)
    );
}

#[tokio::test]
async fn a_dropped_socket_reconnects_and_the_next_click_works() {
    let (app, fake) = setup().await;
    let p = prompted(
        &app,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["a@example.com"]}),
    )
    .await;
    eventually("a connection", async || {
        (fake.connections() == 1).then_some(())
    })
    .await;
    fake.drop_connection();
    eventually("a second connection", async || {
        (fake.connections() == 2).then_some(())
    })
    .await;
    assert!(
        fake.calls("apps.connections.open").len() >= 2,
        "a fresh URL for each connection"
    );
    fake.send(
        "interactive",
        click(APPROVER, &p.ts, &encode_button(Button::Approve, &p.id)),
    )
    .await;
    app.wait_for_status(&p.id, "approved").await;
    // Slack asking us to reconnect is handled the same way.
    fake.send_frame(json!({"type": "disconnect", "reason": "refresh_requested"}))
        .await;
    eventually("a third connection", async || {
        (fake.connections() == 3).then_some(())
    })
    .await;
    app.stop().await;
}

/// Slack counts `chat.update` per app, whatever the channel ("50+ per minute"): with
/// cards in two channels edited at once, gatebot's edits together stay within it, not
/// each channel's. (Each channel's own pace, 1.2 s, would make 100 a minute.)
#[tokio::test]
async fn edits_in_two_channels_together_keep_chat_updates_limit() {
    let fake = FakeSlack::start().await;
    fake.enforce_limits();
    let config = fake
        .config()
        .replace("channels = [\"C1\"]", "channels = [\"C1\", \"C2\"]");
    let app = spawn_app(&format!("{config}digest_after = 100\n")).await;
    // 26 cards in each channel, then all 26 decided: 52 edits, more than 50 a minute
    // if each channel were paced alone.
    let mut ids = Vec::new();
    for n in 0..26 {
        let (id, _) = app
            .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"n": n}}))
            .await;
        ids.push(id);
    }
    eventually_within(
        "every card in both channels",
        Duration::from_secs(90),
        async || {
            (fake
                .calls("chat.postMessage")
                .iter()
                .filter(|c| c.ok)
                .count()
                == 52)
                .then_some(())
        },
    )
    .await;
    for id in &ids {
        app.decide_ok(id, "approve", None).await;
    }
    eventually_within("every card edited", Duration::from_secs(120), async || {
        (fake.calls("chat.update").iter().filter(|c| c.ok).count() >= 52).then_some(())
    })
    .await;
    assert_eq!(fake.rate_limited(), 0, "a Slack limit was exceeded");
}

#[tokio::test]
async fn a_rate_limited_post_waits_for_retry_after() {
    let fake = FakeSlack::start().await;
    // Longer than the first backoff step (1 s): only Retry-After explains the wait.
    fake.rate_limit("chat.postMessage", 1, 3);
    let app = spawn_app(&fake.config()).await;
    let p = prompted(
        &app,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["a@example.com"]}),
    )
    .await;
    let posts = fake.calls("chat.postMessage");
    assert_eq!(posts.len(), 2, "one 429, then the post");
    assert!(posts[0].ts.is_none());
    assert_eq!(posts[1].ts.as_deref(), Some(p.ts.as_str()));
    let waited = posts[1].at - posts[0].at;
    assert!(waited >= Duration::from_secs(3), "retried after {waited:?}");
}

#[tokio::test]
async fn a_rate_limited_answer_waits_for_retry_after() {
    let (app, fake) = setup().await;
    let p = prompted(
        &app,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["a@example.com"]}),
    )
    .await;
    fake.rate_limit("chat.postEphemeral", 1, 3);
    fake.send(
        "interactive",
        click(STRANGER, &p.ts, &encode_button(Button::Approve, &p.id)),
    )
    .await;
    ephemeral_containing(&fake, STRANGER, "not allowed").await;
    let calls = fake.calls("chat.postEphemeral");
    assert_eq!(calls.len(), 2, "one 429, then the answer");
    let waited = calls[1].at - calls[0].at;
    assert!(waited >= Duration::from_secs(3), "retried after {waited:?}");
}

#[tokio::test]
async fn a_rate_limited_deny_form_is_retried_only_while_its_trigger_lives() {
    let (app, fake) = setup().await;
    let p = prompted(
        &app,
        &fake,
        "intern",
        "create_contact",
        json!({"name": "Bo"}),
    )
    .await;
    let deny = encode_button(Button::Deny, &p.id);
    // A trigger id lives 3 s: a 5 s wait would be useless, so the clicker is told.
    fake.rate_limit("views.open", 1, 5);
    fake.send("interactive", click(APPROVER, &p.ts, &deny))
        .await;
    ephemeral_containing(&fake, APPROVER, "Could not open the deny form").await;
    assert_eq!(fake.calls("views.open").len(), 1);

    fake.rate_limit("views.open", 1, 1);
    fake.send("interactive", click(APPROVER, &p.ts, &deny))
        .await;
    let opened = eventually("a retried views.open", async || {
        let calls = fake.calls("views.open");
        calls.iter().any(|c| c.ok).then_some(calls)
    })
    .await;
    assert_eq!(opened.len(), 3, "one refusal, one 429, then the form");
    let waited = opened[2].at - opened[1].at;
    assert!(waited >= Duration::from_secs(1), "retried after {waited:?}");
    assert_eq!(
        opened[2].params["trigger_id"],
        opened[1].params["trigger_id"]
    );
    assert_eq!(ephemerals(&fake, APPROVER).len(), 1, "no second apology");
}

#[tokio::test]
async fn slash_command_answers_and_refusals_arrive_through_the_response_url() {
    let (app, fake) = setup().await;
    let p = prompted(
        &app,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["a@example.com"]}),
    )
    .await;
    fake.send("slash_commands", fake.slash(APPROVER, "/pending", ""))
        .await;
    let answer = eventually("the answer", async || fake.answers(APPROVER).pop()).await;
    assert_eq!(answer.via, Via::ResponseUrl);
    assert_eq!(answer.params["response_type"], "ephemeral");
    assert!(
        answer.text().contains("1 pending") && answer.text().contains(&p.short_id),
        "{}",
        answer.text()
    );

    fake.send(
        "slash_commands",
        fake.slash(STRANGER, "/approve", &p.short_id),
    )
    .await;
    let refusal = eventually("the refusal", async || fake.answers(STRANGER).pop()).await;
    assert_eq!(refusal.via, Via::ResponseUrl);
    assert_eq!(refusal.params["response_type"], "ephemeral");
    assert!(refusal.text().contains("not allowed"), "{}", refusal.text());
    assert!(fake.calls("chat.postEphemeral").is_empty());

    // An expired response_url: chat.postEphemeral in the command's channel instead.
    fake.fail_responses();
    fake.send("slash_commands", fake.slash(STRANGER, "/deny", &p.short_id))
        .await;
    let fallback = eventually("the fallback", async || {
        fake.answers(STRANGER)
            .into_iter()
            .find(|a| a.via == Via::Ephemeral)
    })
    .await;
    assert!(fallback.text().contains("not allowed"));
    assert_eq!(fallback.params["channel"], "C1");
    assert_eq!(status(&app, &p.id).await["status"], "pending");
}

#[tokio::test]
async fn a_decision_in_telegram_updates_the_slack_prompt() {
    const TG_TOKEN: &str = "424242:AAE-fake-secret-token-for-tests_0123456789";
    const TG_CHAT: i64 = 7001;
    let slack = FakeSlack::start().await;
    let telegram = FakeTelegram::start(TG_TOKEN).await;
    let app = spawn_app(&format!(
        "{}\n[telegram]\ntoken = \"{TG_TOKEN}\"\napi_url = \"{}\"\nchats = [{TG_CHAT}]\napprovers = [42]\n",
        slack.config(),
        telegram.url
    ))
    .await;
    let p = prompted(
        &app,
        &slack,
        "intern",
        "create_contact",
        json!({"name": "Bo"}),
    )
    .await;
    let message = eventually("the Telegram prompt", async || {
        let sent = telegram.ok_calls("sendMessage").into_iter().find(|m| {
            m["chat_id"] == TG_CHAT && m["text"].as_str().unwrap().contains(&p.short_id)
        })?;
        telegram.message_id(TG_CHAT, &sent["text"])
    })
    .await;
    telegram.press(
        (42, "Alice"),
        TG_CHAT,
        message,
        &encode_button(Button::Approve, &p.id),
    );
    let update = update_of(&slack, &p.ts, "Approved").await;
    assert_eq!(update["channel"], "C1");
    assert!(action_ids(&update).is_empty(), "buttons removed: {update}");
    let shown = update["blocks"].to_string();
    assert!(
        shown.contains("Approved by Alice (42) on Telegram"),
        "{shown}"
    );
    assert_eq!(status(&app, &p.id).await["decided_via"], "telegram");
    assert_eq!(slack.calls("chat.postMessage").len(), 1);
    app.stop().await;
}

#[tokio::test]
async fn after_a_restart_a_decision_updates_the_prompt_already_posted() {
    let (app, fake) = setup().await;
    let p = prompted(
        &app,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["a@example.com"]}),
    )
    .await;
    let dir = app.stop().await;
    let app = spawn_app_in(dir, &fake.config()).await;
    app.decide_ok(&p.id, "approve", None).await;
    let update = update_of(&fake, &p.ts, "Approved").await;
    assert!(action_ids(&update).is_empty());
    assert!(update["blocks"]
        .to_string()
        .contains("by alice on the command line"));
    assert_eq!(
        fake.calls("chat.postMessage").len(),
        1,
        "the prompt was not posted again"
    );
    app.stop().await;
}

#[tokio::test]
async fn a_long_deny_reason_is_cut_so_the_prompt_still_loses_its_buttons() {
    let (app, fake) = setup().await;
    let p = prompted(
        &app,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["a@example.com"]}),
    )
    .await;
    let reason = "<&>".repeat(4000);
    app.decide_ok(&p.id, "deny", Some(&reason)).await;
    let update = update_of(&fake, &p.ts, "Denied").await;
    assert!(action_ids(&update).is_empty());
    let outcome = update["blocks"].as_array().unwrap().last().unwrap()["text"]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        outcome.starts_with("*❌ Denied by alice on the command line"),
        "{outcome}"
    );
    assert!(
        outcome.contains("more characters of the outcome not shown"),
        "{outcome}"
    );
}

#[tokio::test]
async fn hostile_arguments_render_literally() {
    let (app, fake) = setup().await;
    let hostile = "<!channel> <@U0ADMIN> <https://evil.example|click here> & *Risk:* low ```";
    let res = app
        .submit(json!({"agent": "mailer", "tool": "send_email", "args": {"body": hostile}, "summary": hostile}))
        .await;
    let id = res.body["id"].as_str().unwrap().to_string();
    let post = eventually("the prompt", async || {
        fake.calls("chat.postMessage")
            .into_iter()
            .find(|c| c.params.to_string().contains(&id))
    })
    .await;
    let mut texts = vec![post.params["text"].as_str().unwrap().to_string()];
    for b in post.params["blocks"].as_array().unwrap() {
        if let Some(t) = b["text"]["text"].as_str() {
            texts.push(t.to_string());
        }
    }
    let all = texts.join("\n");
    for raw in ["<!channel>", "<@U0ADMIN>", "<https://", "& "] {
        assert!(!all.contains(raw), "{raw:?} got through: {all}");
    }
    assert!(all.contains("&lt;!channel&gt;") && all.contains("&lt;@U0ADMIN&gt;"));
    assert!(all.contains("&lt;https://evil.example|click here&gt;") && all.contains("&amp; "));
    // The fake risk line sits inside code blocks (where mrkdwn does not apply), and
    // gatebot's real one comes first.
    for t in &texts[1..] {
        if t.contains("*Risk:* low") {
            let before = &t[..t.find("*Risk:* low").unwrap()];
            assert_eq!(
                before.matches("```").count() % 2,
                1,
                "outside a code block: {t}"
            );
            assert_eq!(
                t.matches("```").count(),
                2,
                "the fence in the text stayed closed: {t}"
            );
        }
    }
    assert!(
        all.contains("*Risk:* high: "),
        "gatebot's own risk line: {all}"
    );
}

/// Every mrkdwn text object in `v` (blocks, elements, views).
fn mrkdwn_objects(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Object(m) => {
            if m.get("type") == Some(&json!("mrkdwn")) {
                out.push(v.clone());
            }
            m.values().for_each(|x| mrkdwn_objects(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| mrkdwn_objects(x, out)),
        _ => {}
    }
}

/// Checks a message gatebot sent: every mrkdwn text verbatim (no auto-links, no
/// mention parsing), no `<` Slack could read as a mention or link, and a plain `text`
/// fallback (notifications) with none of the agent's words.
fn assert_inert(params: &Value) {
    let mut objects = Vec::new();
    mrkdwn_objects(&params["blocks"], &mut objects);
    assert!(!objects.is_empty(), "{params}");
    for o in &objects {
        assert_eq!(o["verbatim"], true, "{o}");
        assert!(!o["text"].as_str().unwrap().contains('<'), "{o}");
    }
    let text = params["text"].as_str().unwrap();
    for word in ["@", "<", "http", "evil", "#general"] {
        assert!(!text.contains(word), "{word:?} in the fallback {text:?}");
    }
}

#[tokio::test]
async fn hostile_tool_names_summaries_and_results_cannot_mention_or_link() {
    let (app, fake) = setup().await;
    let hostile = "@channel @here <!channel> <!here|here> <@U0ADMIN> https://evil.example www.evil.example #general";
    let tool = "@here<!channel>https://evil.example";
    let (id, short) = app
        .submit_pending(
            json!({"agent": "intern", "tool": tool, "args": {"body": hostile}, "summary": hostile}),
        )
        .await;
    let post = eventually("the prompt", async || {
        fake.calls("chat.postMessage")
            .into_iter()
            .find(|c| c.ok && c.params.to_string().contains(&id))
    })
    .await;
    assert_inert(&post.params);
    let shown = post.params["blocks"].to_string();
    assert!(
        shown.contains("`@here&lt;!channel&gt;https://evil.example`"),
        "{shown}"
    );

    // The answer to a slash command names the tool.
    fake.send("slash_commands", fake.slash(APPROVER, "/approve", &short))
        .await;
    let answer = eventually("the answer", async || fake.answers(APPROVER).pop()).await;
    assert_inert(&answer.params);
    assert!(
        answer.text().contains("@here&lt;!channel&gt;"),
        "{}",
        answer.text()
    );

    // The agent's result detail (long, too) ends up in the prompt's outcome.
    let res = app
        .agent
        .post(
            &format!("/v1/requests/{id}/result"),
            &json!({"ok": false, "detail": hostile.repeat(100)}),
        )
        .await
        .unwrap();
    assert!(res.status.is_success(), "{:?}", res.body);
    let update = update_of(&fake, post.ts.as_deref().unwrap(), "failed").await;
    assert_inert(&update);
    assert!(update["blocks"]
        .to_string()
        .contains("failed: @channel @here &lt;!channel&gt;"));
}

/// HTTP mode: a daemon listening for Slack's signed requests.
async fn http_setup() -> (TestApp, FakeSlack, String) {
    let fake = FakeSlack::start().await;
    let port = crate::helpers::free_port().port();
    let config = format!(
        "[slack]\nmode = \"http\"\nbot_token = \"xoxb-test-bot\"\nsigning_secret = \"shh-secret\"\n\
         events_listen = \"127.0.0.1:{port}\"\napi_url = \"{}\"\nchannels = [\"C1\"]\napprovers = [\"U1\"]\n",
        fake.api_url
    );
    let app = spawn_app(&config).await;
    (app, fake, format!("http://127.0.0.1:{port}/slack/events"))
}

pub(crate) fn sign(secret: &str, ts: &str, body: &str) -> String {
    use hmac::Mac;
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("v0:{ts}:{body}").as_bytes());
    format!("v0={}", hex::encode(mac.finalize().into_bytes()))
}

pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// POSTs a form body (as Slack sends interactions) with the given signature headers.
pub(crate) async fn post_form(url: &str, body: &str, ts: &str, signature: &str) -> u16 {
    // The listener starts with the daemon's tasks: retry until it is up.
    eventually("the events listener", async || {
        raw_post(url, body, ts, signature).await.ok()
    })
    .await
}

async fn raw_post(url: &str, body: &str, ts: &str, signature: &str) -> std::io::Result<u16> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_once('/').unwrap();
    let mut stream = tokio::net::TcpStream::connect(host).await?;
    let req = format!(
        "POST /{path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         X-Slack-Request-Timestamp: {ts}\r\nX-Slack-Signature: {signature}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(req.as_bytes()).await?;
    let mut out = String::new();
    stream.read_to_string(&mut out).await?;
    let status = out
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Ok(status)
}

pub(crate) fn form_click(p: &Prompted) -> String {
    let payload = click(APPROVER, &p.ts, &encode_button(Button::Approve, &p.id)).to_string();
    serde_urlencoded::to_string([("payload", payload)]).unwrap()
}

#[tokio::test]
async fn http_mode_accepts_a_correctly_signed_click() {
    let (app, fake, url) = http_setup().await;
    let p = prompted(
        &app,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["a@example.com"]}),
    )
    .await;
    let body = form_click(&p);
    let ts = now_secs().to_string();
    assert_eq!(
        post_form(&url, &body, &ts, &sign("shh-secret", &ts, &body)).await,
        200
    );
    app.wait_for_status(&p.id, "approved").await;
    assert!(
        fake.calls("apps.connections.open").is_empty(),
        "no Socket Mode in HTTP mode"
    );
}

#[tokio::test]
async fn http_mode_rejects_a_bad_signature() {
    let (app, fake, url) = http_setup().await;
    let p = prompted(
        &app,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["a@example.com"]}),
    )
    .await;
    let body = form_click(&p);
    let ts = now_secs().to_string();
    assert_eq!(
        post_form(&url, &body, &ts, &sign("wrong-secret", &ts, &body)).await,
        401
    );
    // Signed for another body.
    assert_eq!(
        post_form(&url, &body, &ts, &sign("shh-secret", &ts, "payload=%7B%7D")).await,
        401
    );
    assert_eq!(post_form(&url, &body, &ts, "").await, 401);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(status(&app, &p.id).await["status"], "pending");
}

#[tokio::test]
async fn http_mode_rejects_a_stale_timestamp() {
    let (app, fake, url) = http_setup().await;
    let p = prompted(
        &app,
        &fake,
        "mailer",
        "send_email",
        json!({"to": ["a@example.com"]}),
    )
    .await;
    let body = form_click(&p);
    let ts = (now_secs() - 600).to_string();
    assert_eq!(
        post_form(&url, &body, &ts, &sign("shh-secret", &ts, &body)).await,
        401
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(status(&app, &p.id).await["status"], "pending");
}

#[tokio::test]
async fn tokens_never_reach_the_logs_even_when_slack_echoes_them() {
    let fake = FakeSlack::start().await;
    fake.fail("apps.connections.open", "invalid_auth");
    fake.fail("chat.postMessage", "not_authed");
    let app = spawn_app(&fake.config()).await;
    app.submit_ok("mailer", "send_email", json!({"to": ["a@example.com"]}))
        .await;
    eventually(
        "a failed connection attempt and a failed post",
        async || {
            let text = log_text();
            (text.contains("apps.connections.open: invalid_auth") && text.contains("not_authed"))
                .then_some(())
        },
    )
    .await;
    app.stop().await;
    let text = log_text();
    assert!(text.contains("[redacted]"), "{text}");
    for secret in ["xoxb-test-bot", "xapp-test-app"] {
        assert!(
            !text.contains(secret),
            "{secret} leaked into the log:\n{text}"
        );
    }
}

/// Every mrkdwn and plain text a message shows, joined.
pub(crate) fn shown_text(params: &Value) -> String {
    let mut all = Vec::new();
    mrkdwn_objects(params, &mut all);
    all.iter()
        .filter_map(|t| t["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn a_burst_becomes_one_digest_that_an_approver_reviews_one_by_one() {
    // Eight requests arrive while Slack is not configured; when it is, they are all
    // waiting at once: one digest, not eight prompts.
    let fake = FakeSlack::start().await;
    let app = spawn_app("").await;
    let mut ids = Vec::new();
    for n in 0..8 {
        let body = app
            .submit_ok("intern", "create_contact", json!({"n": n}))
            .await;
        ids.push(body["id"].as_str().unwrap().to_string());
    }
    ids.sort();
    let dir = app.stop().await;
    let app = spawn_app_in(dir, &format!("{}digest_after = 5\n", fake.config())).await;
    let posted = eventually("the digest", async || {
        fake.calls("chat.postMessage").into_iter().find(|c| c.ok)
    })
    .await;
    let ts = posted.ts.clone().unwrap();
    let text = shown_text(&posted.params);
    assert!(
        text.contains("8 of 8 requests in this digest need a decision"),
        "{text}"
    );
    assert!(text.contains("intern · create_contact × 8"), "{text}");
    // Review one by one; or the intern's eight together, after a confirmation.
    let ids_shown = action_ids(&posted.params);
    assert_eq!(ids_shown[0], "gb1:v:r");
    assert!(
        ids_shown[1].starts_with("gb1:Ba:h:") && ids_shown[2].starts_with("gb1:Bd:"),
        "{ids_shown:?}"
    );
    let shows = |needle: String| {
        let fake = fake.clone();
        let ts = ts.clone();
        async move {
            eventually(&format!("the digest showing {needle:?}"), async || {
                fake.calls("chat.update")
                    .into_iter()
                    .rev()
                    .find(|c| c.ok && c.params["ts"] == ts.as_str())
                    .filter(|c| shown_text(&c.params).contains(&needle))
                    .map(|c| c.params)
            })
            .await
        }
    };

    // A stranger cannot page through it.
    fake.send("interactive", click(STRANGER, &ts, "gb1:v:r"))
        .await;
    ephemeral_containing(&fake, STRANGER, "not allowed").await;

    fake.send("interactive", click(APPROVER, &ts, "gb1:v:r"))
        .await;
    let view = shows("request 1 of 8 · 8 pending".into()).await;
    assert!(action_ids(&view).contains(&encode_button(Button::Approve, &ids[0])));
    fake.send(
        "interactive",
        click(APPROVER, &ts, &encode_button(Button::Approve, &ids[0])),
    )
    .await;
    app.wait_for_status(&ids[0], "approved").await;
    shows("request 2 of 8 · 7 pending".into()).await;
    // A reply in the digest's thread decides the request it shows.
    fake.send(
        "events_api",
        message(APPROVER, "deny not these", Some(&ts), "EvDigest1"),
    )
    .await;
    let got = app.wait_for_status(&ids[1], "rejected").await;
    assert_eq!(got["reason"], "not these");
    shows("request 3 of 8 · 6 pending".into()).await;
    fake.send("interactive", click(APPROVER, &ts, "gb1:v:s"))
        .await;
    shows("6 of 8 requests in this digest need a decision".into()).await;
    for id in &ids[2..] {
        app.decide_ok(id, "approve", None).await;
    }
    let closed = shows("all settled".into()).await;
    assert!(shown_text(&closed).contains("7 approved, 1 denied"));
    assert!(action_ids(&closed).is_empty(), "no buttons left");
    assert_eq!(
        fake.calls("chat.postMessage")
            .iter()
            .filter(|c| c.ok)
            .count(),
        1,
        "one message for the burst"
    );
    app.stop().await;
}

/// How long the flaky-Slack test may take to deliver its prompts, and its updates.
const CHAOS: Duration = Duration::from_secs(180);

#[tokio::test]
async fn a_flaky_slack_still_gets_every_prompt_and_update_exactly_once() {
    // A fifth of posts and updates fail: 429s, 500s, dropped connections, slow answers.
    let fake = FakeSlack::start().await;
    fake.chaos(0.2, 20261123);
    let app = spawn_app(&format!("{}digest_after = 100\n", fake.config())).await;
    let mut requests = Vec::new();
    for n in 0..10 {
        // The queue keeps answering agents while Slack misbehaves.
        let body = app
            .submit_ok("intern", "create_contact", json!({"n": n}))
            .await;
        requests.push(body["short_id"].as_str().unwrap().to_string());
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let posts_of = |short: &str| -> Vec<String> {
        fake.calls("chat.postMessage")
            .into_iter()
            .filter(|c| c.ok && c.params["text"].as_str().unwrap_or("").contains(short))
            .map(|c| c.ts.unwrap())
            .collect()
    };
    eventually_within("every prompt", CHAOS, async || {
        requests
            .iter()
            .all(|s| !posts_of(s).is_empty())
            .then_some(())
    })
    .await;
    let list = app.owner.get("/v1/requests?status=pending").await.unwrap();
    for (i, r) in list.body["requests"].as_array().unwrap().iter().enumerate() {
        let verb = if i % 2 == 0 { "approve" } else { "deny" };
        let id = r["id"].as_str().unwrap();
        app.decide_ok(id, verb, None).await;
    }
    let updates_of = |ts: &str| {
        fake.calls("chat.update")
            .into_iter()
            .filter(|c| c.ok && c.params["ts"] == ts)
            .count()
    };
    eventually_within("every update", CHAOS, async || {
        requests
            .iter()
            .all(|s| updates_of(&posts_of(s)[0]) > 0)
            .then_some(())
    })
    .await;
    let failed = fake
        .calls("chat.postMessage")
        .iter()
        .filter(|c| !c.ok)
        .count()
        + fake.calls("chat.update").iter().filter(|c| !c.ok).count();
    assert!(failed > 0, "the chaos hit something");
    // Give stray retries a moment, then count.
    tokio::time::sleep(Duration::from_secs(2)).await;
    for s in &requests {
        let posts = posts_of(s);
        assert_eq!(posts.len(), 1, "prompt {s} posted {} times", posts.len());
        assert_eq!(updates_of(&posts[0]), 1, "prompt {s} updated");
    }
    app.stop().await;
}
