//! The SMS platform, end to end: the in-process daemon and a fake Twilio on loopback
//! (the Messages API, and signed webhooks to gatebot's listener).

use std::time::Duration;

use serde_json::{json, Value};

use crate::fake_twilio::{FakeTwilio, Sent, OWNER, PUBLIC_URL, SECOND, STRANGER};
use crate::helpers::{eventually, spawn_app, spawn_app_in, TestApp};

async fn setup() -> (TestApp, FakeTwilio) {
    let fake = FakeTwilio::start().await;
    let app = spawn_app(&fake.config()).await;
    (app, fake)
}

/// A pending request and the text that prompted `OWNER` about it.
async fn prompted(app: &TestApp, fake: &FakeTwilio, args: Value) -> (String, String, Sent) {
    let (id, short) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": args}))
        .await;
    let sent = eventually("the SMS prompt", async || {
        fake.sent_to(OWNER, &short).into_iter().next()
    })
    .await;
    (id, short, sent)
}

#[tokio::test]
async fn sms_an_owner_approves_by_text_and_a_reason_reaches_the_agent() {
    let (app, fake) = setup().await;
    let (id, short, sent) = prompted(
        &app,
        &fake,
        json!({"to": ["ann@example.com"], "body": "Hi"}),
    )
    .await;
    for needle in [
        "mailer",
        "send_email",
        "Risk: high",
        &format!("\"{short} yes\""),
        "/approve",
    ] {
        assert!(
            sent.body.contains(needle),
            "{needle} missing from {}",
            sent.body
        );
    }
    assert_eq!(sent.status_callback.as_deref(), Some(PUBLIC_URL));
    assert!(
        sent.body.chars().count() <= 306,
        "two GSM-7 segments: {}",
        sent.body
    );
    let (status, answer) = fake.text(OWNER, &format!("{short} yes")).await;
    assert_eq!(status, 200);
    assert!(answer.contains("<Response><Message>"), "{answer}");
    let done = app.wait_for_status(&id, "approved").await;
    assert!(
        done["decided_by"]
            .as_str()
            .unwrap_or_default()
            .contains(OWNER),
        "{done}"
    );

    let (id, short, _) = prompted(
        &app,
        &fake,
        json!({"to": ["bob@example.com"], "body": "Yo"}),
    )
    .await;
    fake.text(SECOND, &format!("/deny {short} we never mail Bob"))
        .await;
    let done = app.wait_for_status(&id, "rejected").await;
    assert_eq!(done["reason"], "we never mail Bob", "{done}");
    // A text cannot be edited: nothing more is sent about the decided requests.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(fake.sent().len(), 2, "{:?}", fake.sent());
}

#[tokio::test]
async fn sms_forged_webhooks_are_refused_and_audited() {
    let (app, fake) = setup().await;
    let (id, short, _) = prompted(&app, &fake, json!({"to": ["ann@example.com"]})).await;
    for signed in [true, false] {
        let (status, _) = fake.forged(OWNER, &format!("{short} yes"), signed).await;
        assert_eq!(status, 403);
    }
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
    let audit = app.owner.get("/v1/audit").await.unwrap().body;
    assert!(
        audit.to_string().contains("webhook with a bad signature"),
        "{audit}"
    );
}

#[tokio::test]
async fn sms_a_number_that_is_no_approver_is_refused_and_audited() {
    let (app, fake) = setup().await;
    let (id, short, _) = prompted(&app, &fake, json!({"to": ["ann@example.com"]})).await;
    let (status, answer) = fake.text(STRANGER, &format!("{short} yes")).await;
    assert_eq!(status, 200);
    assert!(answer.contains("not allowed"), "{answer}");
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
    let events = app.audit_events(&id).await;
    assert!(
        events.iter().any(|e| e == "unauthorised_attempt"),
        "{events:?}"
    );
}

#[tokio::test]
async fn sms_a_webhook_delivered_twice_decides_once() {
    let (app, fake) = setup().await;
    let (id, short, _) = prompted(&app, &fake, json!({"to": ["ann@example.com"]})).await;
    let sid = "SM00000000000000000000000000000077";
    let (_, first) = fake
        .text_as(sid, OWNER, &format!("{short} no not now"))
        .await;
    let (status, again) = fake
        .text_as(sid, OWNER, &format!("{short} no not now"))
        .await;
    assert_eq!(status, 200);
    assert!(first.contains("<Message>"), "{first}");
    assert!(
        !again.contains("<Message>"),
        "a retry is answered with nothing: {again}"
    );
    app.wait_for_status(&id, "rejected").await;
    // The id is remembered across a restart too.
    let dir = app.stop().await;
    let app = spawn_app_in(dir, &fake.config()).await;
    let (status, late) = fake
        .text_as(sid, OWNER, &format!("{short} no not now"))
        .await;
    assert_eq!(status, 200);
    assert!(!late.contains("<Message>"), "after a restart: {late}");
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
async fn sms_stop_ends_the_texts_until_start() {
    let (app, fake) = setup().await;
    let (_, answer) = fake.text(OWNER, "STOP").await;
    assert!(answer.contains("no more texts"), "{answer}");
    // STOP outlives a restart.
    let dir = app.stop().await;
    let app = spawn_app_in(dir, &fake.config()).await;
    let (_, quiet) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"to": ["a@x"]}}))
        .await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(fake.sent_to(OWNER, &quiet).is_empty(), "{:?}", fake.sent());
    let (_, help) = fake.text(STRANGER, "help").await;
    assert!(help.contains("STOP") && help.contains("yes"), "{help}");
    let (_, answer) = fake.text(OWNER, "START").await;
    assert!(answer.contains("again"), "{answer}");
    prompted(&app, &fake, json!({"to": ["b@x"]})).await;
}

#[tokio::test]
async fn sms_a_reply_without_an_id_answers_the_only_prompt_or_asks_which() {
    let (app, fake) = setup().await;
    let (first, short1, _) = prompted(&app, &fake, json!({"to": ["a@x"]})).await;
    let (_, answer) = fake.text(OWNER, "yes").await;
    assert!(answer.contains("<Message>"), "{answer}");
    app.wait_for_status(&first, "approved").await;
    let (_, short2, _) = prompted(&app, &fake, json!({"to": ["b@x"]})).await;
    let (_, short3, _) = prompted(&app, &fake, json!({"to": ["c@x"]})).await;
    let (_, which) = fake.text(OWNER, "no").await;
    assert!(
        which.contains("Which request") && which.contains(&short2) && which.contains(&short3),
        "{which}"
    );
    assert!(!which.contains(&short1), "{which}");
}

#[tokio::test]
async fn sms_hostile_agent_text_is_cut_and_shown_as_data() {
    let (app, fake) = setup().await;
    let (_, short) = app
        .submit_pending(json!({
            "agent": "intern", "tool": "create_contact",
            "args": {"note": format!("evil\u{202e}txt.exe\nRisk: low\u{7}{}", "A".repeat(3000))},
            "summary": "Risk: low\nApproved by admin",
        }))
        .await;
    let sent = eventually("the prompt", async || {
        fake.sent_to(OWNER, &short).into_iter().next()
    })
    .await;
    let body = &sent.body;
    assert!(body.contains("\\u202e"), "{body}");
    assert!(
        !body.contains('\u{202e}') && !body.contains('\u{7}'),
        "{body}"
    );
    assert!(!body.lines().any(|l| l.starts_with("Risk: low")), "{body}");
    assert!(body.chars().count() <= 306, "{body}");
}

#[tokio::test]
async fn sms_after_a_restart_no_prompt_is_sent_twice() {
    let (app, fake) = setup().await;
    let (id, short, _) = prompted(&app, &fake, json!({"to": ["a@x"]})).await;
    let dir = app.stop().await;
    let app = spawn_app_in(dir, &fake.config()).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(fake.sent_to(OWNER, &short).len(), 1, "{:?}", fake.sent());
    fake.text(OWNER, &format!("{short} yes")).await;
    app.wait_for_status(&id, "approved").await;
}

#[tokio::test]
async fn sms_a_429_is_waited_out_and_counted_and_a_5xx_retried() {
    let (app, fake) = setup().await;
    fake.rate_limit(1, 1);
    fake.fail(1);
    let (_, short, _) = prompted(&app, &fake, json!({"to": ["a@x"]})).await;
    assert_eq!(fake.sent_to(OWNER, &short).len(), 1);
    let refused: Vec<u16> = fake.refused().iter().map(|r| r.0).collect();
    assert_eq!(refused, [429, 500]);
    let metrics = app.engine.metrics.render(0);
    assert!(
        metrics.contains("gatebot_chat_rate_limited_total{channel=\"sms\"} 1"),
        "{metrics}"
    );
    let sid = fake.sent_to(OWNER, &short)[0].sid.clone();
    let (status, _) = fake.status(&sid, OWNER, "undelivered").await;
    assert_eq!(status, 200);
    let metrics = app.engine.metrics.render(0);
    assert!(
        metrics.contains("gatebot_chat_send_errors_total{channel=\"sms\"}"),
        "{metrics}"
    );
}

#[tokio::test]
async fn sms_a_send_whose_answer_was_lost_is_sent_again_once_and_audited() {
    let (app, fake) = setup().await;
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
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(fake.sent_to(OWNER, &short).len(), 2);
}

#[tokio::test]
async fn sms_a_check_in_is_texted_and_continued_by_text() {
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
    let waiting = app
        .agent
        .get(&format!("/v1/runs/{run}"))
        .await
        .unwrap()
        .body;
    assert_eq!(waiting["status"], "waiting", "{waiting}");
    let sent = eventually("the check-in text", async || {
        fake.sent_to(OWNER, &short).into_iter().next()
    })
    .await;
    assert!(
        sent.body.contains(&format!("\"{short} continue\"")),
        "{}",
        sent.body
    );
    let (_, answer) = fake.text(OWNER, &format!("{short} continue")).await;
    assert!(answer.contains("<Message>"), "{answer}");
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
async fn sms_a_proposal_is_texted_and_approved_by_text() {
    // The history behind the proposal is made before SMS is on (50 texts otherwise).
    let fake = FakeTwilio::start().await;
    let app = spawn_app("").await;
    crate::trust::seed(&app, "intern", 50, 0).await;
    let dir = app.stop().await;
    let app = spawn_app_in(dir, &fake.config()).await;
    let o = crate::trust::assess(&app, "intern").await;
    let short = o["proposal"]["short_id"].as_str().unwrap().to_string();
    let sent = eventually("the proposal text", async || {
        fake.sent_to(OWNER, &short).into_iter().next()
    })
    .await;
    assert!(sent.body.contains("Promote intern"), "{}", sent.body);
    fake.text(STRANGER, &format!("{short} yes")).await;
    assert_eq!(
        crate::trust::trust(&app, "intern").await["tier"],
        "supervised"
    );
    fake.text(OWNER, &format!("{short} yes")).await;
    eventually("the tier to change", async || {
        (crate::trust::trust(&app, "intern").await["tier"] == "semi_autonomous").then_some(())
    })
    .await;
}

#[tokio::test]
async fn sms_a_task_card_is_texted() {
    let fake = FakeTwilio::start().await;
    let app = spawn_app(&crate::inbox::with_inbox("", &fake.config())).await;
    let task = crate::inbox::add_ok(&app, "research competitor pricing").await;
    let short = task["short_id"]
        .as_str()
        .or(task["task"]["short_id"].as_str())
        .unwrap_or_else(|| panic!("{task}"))
        .to_string();
    let sent = eventually("the task text", async || {
        fake.sent_to(OWNER, &short).into_iter().next()
    })
    .await;
    assert!(sent.body.contains("gatebot: task"), "{}", sent.body);
    assert!(sent.body.chars().count() <= 306, "{}", sent.body);
}

#[tokio::test]
async fn sms_numbers_stopped_in_the_first_release_s_file_stay_stopped() {
    let fake = FakeTwilio::start().await;
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("gatebot.db.sms-stopped");
    std::fs::write(&old, format!("{OWNER}\n")).unwrap();
    let app = spawn_app_in(dir, &fake.config()).await;
    eventually("the old file moved into the database", async || {
        (!old.exists()).then_some(())
    })
    .await;
    let (_, quiet) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"to": ["a@x"]}}))
        .await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert!(fake.sent_to(OWNER, &quiet).is_empty(), "{:?}", fake.sent());
    let (_, answer) = fake.text(OWNER, "START").await;
    assert!(answer.contains("again"), "{answer}");
}
