//! The WhatsApp platform, end to end: the in-process daemon and a fake Cloud API on
//! loopback (the Messages API with its limits and its 24-hour rule, and signed webhooks
//! to gatebot's listener).

use serde_json::{json, Value};

use crate::fake_whatsapp::{FakeWhatsApp, Sent, OWNER, QUIET, SECOND, STRANGER, VERIFY_TOKEN};
use crate::helpers::{eventually, spawn_app, spawn_app_in, TestApp};

async fn setup() -> (TestApp, FakeWhatsApp) {
    let fake = FakeWhatsApp::start().await;
    let app = spawn_app(&fake.config()).await;
    (app, fake)
}

/// `who` writes to the business number and gatebot answers: their window is open.
async fn open_window(fake: &FakeWhatsApp, who: &str) {
    let before = fake.sent().iter().filter(|s| s.to == who).count();
    assert_eq!(fake.text(who, "/help").await, 200);
    eventually("gatebot's answer", async || {
        (fake.sent().iter().filter(|s| s.to == who).count() > before).then_some(())
    })
    .await;
}

/// A pending request and the message that prompted `OWNER` about it.
async fn prompted(app: &TestApp, fake: &FakeWhatsApp, args: Value) -> (String, String, Sent) {
    let (id, short) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": args}))
        .await;
    let sent = eventually("the WhatsApp prompt", async || {
        fake.sent_to(OWNER, &short).into_iter().next()
    })
    .await;
    (id, short, sent)
}

/// The replies to `message` once nothing more comes.
async fn settled_replies(fake: &FakeWhatsApp, message: &str) -> Vec<Sent> {
    tokio::time::sleep(QUIET).await;
    fake.replies_to(message)
}

#[tokio::test]
async fn whatsapp_an_owner_approves_with_a_button_and_the_outcome_replies_once() {
    let (app, fake) = setup().await;
    open_window(&fake, OWNER).await;
    let (id, short, card) = prompted(
        &app,
        &fake,
        json!({"to": ["ann@example.com"], "body": "Hi"}),
    )
    .await;
    assert_eq!(card.kind, "interactive", "{card:?}");
    for needle in ["mailer", "send_email", "Risk:", &format!("id {short}")] {
        assert!(
            card.body.contains(needle),
            "{needle} missing from {}",
            card.body
        );
    }
    assert_eq!(card.buttons.len(), 3, "{card:?}");
    // The fourth button is offered in words.
    assert!(card.body.contains("Allow for"), "{}", card.body);
    assert_eq!(
        fake.press(OWNER, &card.id, &card.button("Allow once"))
            .await,
        200
    );
    let done = app.wait_for_status(&id, "approved").await;
    assert!(
        done["decided_by"]
            .as_str()
            .unwrap_or_default()
            .contains("Owner Person")
            || done["decided_by"]
                .as_str()
                .unwrap_or_default()
                .contains(OWNER),
        "{done}"
    );
    let outcome = eventually("the outcome as a reply to the card", async || {
        fake.replies_to(&card.id).into_iter().next()
    })
    .await;
    assert_eq!(outcome.kind, "text");
    assert!(outcome.body.contains(&short), "{}", outcome.body);
    // The agent reports that the call ran: the card changes again, no second outcome.
    app.agent
        .post(&format!("/v1/requests/{id}/result"), &json!({"ok": true}))
        .await
        .unwrap();
    assert_eq!(settled_replies(&fake, &card.id).await.len(), 1);

    // A denial typed as a command by the second approver, whose window is open too.
    open_window(&fake, SECOND).await;
    let (id, short, _) = prompted(&app, &fake, json!({"to": ["bob@example.com"]})).await;
    fake.text(SECOND, &format!("/deny {short} we never mail Bob"))
        .await;
    let done = app.wait_for_status(&id, "rejected").await;
    assert_eq!(done["reason"], "we never mail Bob", "{done}");

    // Words in reply to a card (`context.id`) decide it, like on every platform.
    let (id, _, card) = prompted(&app, &fake, json!({"to": ["cy@example.com"]})).await;
    fake.reply(OWNER, &card.id, "deny not to Cy").await;
    let done = app.wait_for_status(&id, "rejected").await;
    assert_eq!(done["reason"], "not to Cy", "{done}");
}

#[tokio::test]
async fn whatsapp_outside_the_window_the_template_goes_and_its_quick_replies_act() {
    let (app, fake) = setup().await;
    // The owner never wrote: only the template may reach them.
    let (id, short, template) = prompted(&app, &fake, json!({"to": ["ann@example.com"]})).await;
    assert_eq!(template.kind, "template", "{template:?}");
    assert!(
        template.body.contains(&format!("id {short}")),
        "{}",
        template.body
    );
    let payloads: Vec<&str> = template.buttons.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        payloads,
        [
            format!("gatebot show {short}"),
            format!("gatebot approve {short}"),
            format!("gatebot deny {short}")
        ]
    );
    assert!(
        fake.refused().is_empty(),
        "nothing but the template was tried: {:?}",
        fake.refused()
    );
    // "Show": the full card follows, as a reply to the template.
    fake.quick_reply(OWNER, &template.id, &format!("gatebot show {short}"))
        .await;
    let card = eventually("the full card", async || {
        fake.replies_to(&template.id)
            .into_iter()
            .find(|s| s.kind == "interactive")
    })
    .await;
    assert!(card.body.contains("send_email"), "{}", card.body);
    fake.press(OWNER, &card.id, &card.button("Allow once"))
        .await;
    app.wait_for_status(&id, "approved").await;
    // The card's message is the template's: the outcome replies to it, once.
    let replies = settled_replies(&fake, &template.id).await;
    assert_eq!(
        replies.iter().filter(|s| s.kind == "text").count(),
        1,
        "{replies:?}"
    );

    // A second request while the window is open is a card; expired on Meta's side
    // (131047), the template goes instead.
    fake.expire(OWNER);
    let (id, short, sent) = prompted(&app, &fake, json!({"to": ["bob@example.com"]})).await;
    assert_eq!(sent.kind, "template", "{sent:?}");
    assert!(
        fake.refused().contains(&(400, 131047)),
        "{:?}",
        fake.refused()
    );
    // "Deny" on the template decides at once.
    fake.quick_reply(OWNER, &sent.id, &format!("gatebot deny {short}"))
        .await;
    app.wait_for_status(&id, "rejected").await;
}

#[tokio::test]
async fn whatsapp_the_webhook_handshake_echoes_the_challenge_only_for_the_token() {
    let (_app, fake) = setup().await;
    let (status, body) = fake.handshake(VERIFY_TOKEN, "1158201444").await;
    assert_eq!((status, body.as_str()), (200, "1158201444"));
    let (status, body) = fake.handshake("guessed", "1158201444").await;
    assert_eq!(status, 403);
    assert!(!body.contains("1158201444"), "{body}");
}

#[tokio::test]
async fn whatsapp_forged_webhooks_are_refused_and_audited() {
    let (app, fake) = setup().await;
    open_window(&fake, OWNER).await;
    let (id, short, _) = prompted(&app, &fake, json!({"to": ["ann@example.com"]})).await;
    for signed in [true, false] {
        let status = fake
            .forged(OWNER, &format!("/approve {short}"), signed)
            .await;
        assert_eq!(status, 403);
    }
    tokio::time::sleep(QUIET).await;
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
    let audit = app.owner.get("/v1/audit").await.unwrap().body;
    assert!(
        audit.to_string().contains("webhook with a bad signature"),
        "{audit}"
    );
}

#[tokio::test]
async fn whatsapp_a_number_that_is_no_approver_is_refused_and_audited() {
    let (app, fake) = setup().await;
    open_window(&fake, OWNER).await;
    let (id, _, card) = prompted(&app, &fake, json!({"to": ["ann@example.com"]})).await;
    assert_eq!(
        fake.press(STRANGER, &card.id, &card.button("Allow once"))
            .await,
        200
    );
    let answer = eventually("the refusal", async || {
        fake.sent_to(STRANGER, "not allowed").into_iter().next()
    })
    .await;
    assert_eq!(answer.kind, "text");
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
    let events = app.audit_events(&id).await;
    assert!(
        events.iter().any(|e| e == "unauthorised_attempt"),
        "{events:?}"
    );
}

#[tokio::test]
async fn whatsapp_a_webhook_delivered_twice_decides_once_also_after_a_restart() {
    let (app, fake) = setup().await;
    open_window(&fake, OWNER).await;
    let (id, short, _) = prompted(&app, &fake, json!({"to": ["ann@example.com"]})).await;
    let inbound = "wamid.TWICE0000000000000001";
    let deny = json!({"type": "text", "text": {"body": format!("/deny {short} not now")}});
    assert_eq!(
        fake.message_as(inbound, OWNER, deny.clone(), None).await,
        200
    );
    assert_eq!(
        fake.message_as(inbound, OWNER, deny.clone(), None).await,
        200
    );
    app.wait_for_status(&id, "rejected").await;
    assert_eq!(settled_replies(&fake, inbound).await.len(), 1, "one answer");
    // The id is remembered across a restart too.
    let dir = app.stop().await;
    let app = spawn_app_in(dir, &fake.config()).await;
    assert_eq!(fake.message_as(inbound, OWNER, deny, None).await, 200);
    assert_eq!(
        settled_replies(&fake, inbound).await.len(),
        1,
        "after a restart"
    );
    let events = app.audit_events(&id).await;
    assert_eq!(
        events
            .iter()
            .filter(|e| e.contains("reject") || *e == "denied" || *e == "decided")
            .count(),
        1,
        "{events:?}"
    );
}

#[tokio::test]
async fn whatsapp_the_pair_rate_limit_is_waited_out_and_counted_and_a_5xx_retried() {
    let (app, fake) = setup().await;
    open_window(&fake, OWNER).await;
    fake.pair_limit(1);
    fake.fail(1);
    let (_, short, card) = prompted(&app, &fake, json!({"to": ["a@x"]})).await;
    assert_eq!(fake.sent_to(OWNER, &short).len(), 1);
    let refused: Vec<i64> = fake.refused().iter().map(|r| r.1).collect();
    assert_eq!(refused, [131_000, 131_056]);
    let metrics = app.engine.metrics.render(0);
    assert!(
        metrics.contains("gatebot_chat_rate_limited_total{channel=\"whatsapp\"} 1"),
        "{metrics}"
    );
    // Meta may take a card and report later that the window had closed: it is counted,
    // and the template goes.
    assert_eq!(fake.status(&card.id, OWNER, "failed", 131_047).await, 200);
    eventually("the failed message counted", async || {
        app.engine
            .metrics
            .render(0)
            .contains("gatebot_chat_send_errors_total{channel=\"whatsapp\"}")
            .then_some(())
    })
    .await;
    let template = eventually("the template after the failure", async || {
        fake.sent_to(OWNER, &short)
            .into_iter()
            .find(|s| s.kind == "template")
    })
    .await;
    assert!(
        template
            .buttons
            .iter()
            .any(|(p, _)| *p == format!("gatebot show {short}")),
        "{template:?}"
    );
}

#[tokio::test]
async fn whatsapp_after_a_restart_no_card_and_no_outcome_is_sent_twice() {
    let (app, fake) = setup().await;
    open_window(&fake, OWNER).await;
    let (id, short, card) = prompted(&app, &fake, json!({"to": ["a@x"]})).await;
    let dir = app.stop().await;
    let app = spawn_app_in(dir, &fake.config()).await;
    tokio::time::sleep(QUIET).await;
    assert_eq!(fake.sent_to(OWNER, &short).len(), 1, "{:?}", fake.sent());
    fake.press(OWNER, &card.id, &card.button("Allow once"))
        .await;
    app.wait_for_status(&id, "approved").await;
    eventually("the outcome", async || {
        fake.replies_to(&card.id).into_iter().next()
    })
    .await;
    let dir = app.stop().await;
    let app = spawn_app_in(dir, &fake.config()).await;
    app.agent
        .post(
            &format!("/v1/requests/{id}/result"),
            &json!({"executing": true}),
        )
        .await
        .unwrap();
    assert_eq!(settled_replies(&fake, &card.id).await.len(), 1);
    assert_eq!(
        fake.sent_to(OWNER, &short).len(),
        2,
        "the card and its outcome"
    );
}

#[tokio::test]
async fn whatsapp_a_send_whose_answer_was_lost_is_sent_again_once_and_audited() {
    let (app, fake) = setup().await;
    open_window(&fake, OWNER).await;
    fake.lose(1);
    let (id, short) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"to": ["a@x"]}}))
        .await;
    eventually("the prompt sent again", async || {
        (fake.sent_to(OWNER, &short).len() == 2).then_some(())
    })
    .await;
    let events = app.audit_events(&id).await;
    assert!(events.iter().any(|e| e == "prompt_reposted"), "{events:?}");
    tokio::time::sleep(QUIET).await;
    assert_eq!(fake.sent_to(OWNER, &short).len(), 2);
}

#[tokio::test]
async fn whatsapp_hostile_agent_text_is_shown_as_data_and_cut_within_limits() {
    let (app, fake) = setup().await;
    open_window(&fake, OWNER).await;
    let (_, short) = app
        .submit_pending(json!({
            "agent": "intern", "tool": "create_contact",
            "args": {"note": format!("*urgent* _now_ ~x~ ```\nRisk: low``` evil\u{202e}{}", "A".repeat(5000))},
            "summary": "*Approved* by _admin_\nRisk: low ```",
        }))
        .await;
    let sent = eventually("the prompt", async || {
        fake.sent_to(OWNER, &short).into_iter().next()
    })
    .await;
    let body = &sent.body;
    assert!(body.chars().count() <= 1024, "{}", body.chars().count());
    assert!(
        body.contains("\\u202e") && !body.contains('\u{202e}'),
        "{body}"
    );
    assert_eq!(
        body.matches("```").count() % 2,
        0,
        "spans stay closed: {body}"
    );
    assert!(
        body.contains("ˋˋˋ"),
        "agent backticks cannot close a span: {body}"
    );
    // Wherever the agent wrote "Risk: low" or "*Approved*", it is inside a monospace
    // span, where WhatsApp formats nothing.
    for needle in ["Risk: low", "*Approved*", "*urgent*"] {
        for (at, _) in body.match_indices(needle) {
            assert_eq!(
                body[..at].matches("```").count() % 2,
                1,
                "{needle} at {at} is outside a span: {body}"
            );
        }
    }
}

#[tokio::test]
async fn whatsapp_a_check_in_is_a_card_continued_with_its_button() {
    let (app, fake) = setup().await;
    open_window(&fake, OWNER).await;
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
    let card = eventually("the check-in card", async || {
        fake.sent_to(OWNER, &short).into_iter().next()
    })
    .await;
    assert_eq!(card.kind, "interactive", "{card:?}");
    fake.press(OWNER, &card.id, &card.button("Continue")).await;
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
async fn whatsapp_a_proposal_is_a_card_approved_with_its_button() {
    // The history behind the proposal is made before WhatsApp is on.
    let fake = FakeWhatsApp::start().await;
    let app = spawn_app("").await;
    crate::trust::seed(&app, "intern", 50, 0).await;
    let dir = app.stop().await;
    let app = spawn_app_in(dir, &fake.config()).await;
    open_window(&fake, OWNER).await;
    let o = crate::trust::assess(&app, "intern").await;
    let short = o["proposal"]["short_id"].as_str().unwrap().to_string();
    let card = eventually("the proposal card", async || {
        fake.sent_to(OWNER, &short).into_iter().next()
    })
    .await;
    assert!(card.body.contains("Promote"), "{}", card.body);
    fake.press(OWNER, &card.id, &card.button("Approve")).await;
    eventually("the tier to change", async || {
        (crate::trust::trust(&app, "intern").await["tier"] == "semi_autonomous").then_some(())
    })
    .await;
}

#[tokio::test]
async fn whatsapp_a_task_card_is_sent() {
    let fake = FakeWhatsApp::start().await;
    let app = spawn_app(&crate::inbox::with_inbox("", &fake.config())).await;
    open_window(&fake, OWNER).await;
    let task = crate::inbox::add_ok(&app, "research competitor pricing").await;
    let short = task["short_id"]
        .as_str()
        .or(task["task"]["short_id"].as_str())
        .unwrap_or_else(|| panic!("{task}"))
        .to_string();
    let card = eventually("the task card", async || {
        fake.sent_to(OWNER, &short).into_iter().next()
    })
    .await;
    assert!(card.body.contains("gatebot: task"), "{}", card.body);
    assert!(card.body.chars().count() <= 4096);
}

#[tokio::test]
async fn whatsapp_deny_asks_why_and_the_reply_to_the_question_is_the_reason() {
    let (app, fake) = setup().await;
    open_window(&fake, OWNER).await;
    let (id, _, card) = prompted(&app, &fake, json!({"to": ["ann@example.com"]})).await;
    let before = fake.sent().len();
    fake.press(OWNER, &card.id, &card.button("Deny")).await;
    let question = eventually("the question", async || {
        fake.sent()
            .into_iter()
            .skip(before)
            .find(|s| s.to == OWNER && s.kind == "interactive")
    })
    .await;
    assert!(question.body.to_lowercase().contains("why"), "{question:?}");
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
    fake.reply(OWNER, &question.id, "too risky today").await;
    let done = app.wait_for_status(&id, "rejected").await;
    assert_eq!(done["reason"], "too risky today", "{done}");
}

#[tokio::test]
async fn whatsapp_a_digest_outside_the_window_goes_by_template_and_show_lists_what_waits() {
    let fake = FakeWhatsApp::start().await;
    let app = spawn_app(&format!("{}digest_after = 1\n", fake.config())).await;
    // A burst: after the first card, the rest wait together and become a digest.
    let submits = ["a@x", "b@x", "c@x", "d@x"].map(|to| {
        app.submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"to": [to]}}))
    });
    let shorts: Vec<String> = futures_util::future::join_all(submits)
        .await
        .into_iter()
        .map(|(_, short)| short)
        .collect();
    let template = eventually("a template for the digest", async || {
        fake.sent().into_iter().find(|s| {
            s.kind == "template" && s.buttons.iter().any(|(p, _)| p == "gatebot show pending")
        })
    })
    .await;
    fake.quick_reply(OWNER, &template.id, "gatebot show pending")
        .await;
    let list = eventually("the pending list", async || {
        fake.sent().into_iter().find(|s| {
            s.to == OWNER
                && s.kind != "template"
                && shorts.iter().all(|id| s.body.contains(id.as_str()))
        })
    })
    .await;
    assert!(list.body.chars().count() <= 4096, "{list:?}");
}
