//! Workflow check-ins in Telegram and Slack: the real daemon, teloxide and
//! slack-morphism against the fakes on loopback. The card is posted in every chat,
//! Review issues lists the problems and asks again, Continue and Stop (with the owner's
//! reason) reach the waiting agent, strangers are refused and audited.

use serde_json::{json, Value};

use gatebot::chat::conversation::checkin::{button_data, ButtonKind};

use crate::fake_slack::{click, submit_modal, FakeSlack};
use crate::fake_telegram::{FakeTelegram, User};
use crate::helpers::{eventually, spawn_app, TestApp};

const TOKEN: &str = "424242:AAE-fake-secret-token-for-tests_0123456789";
const ALICE: User = (42, "Alice");
const MALLORY: User = (66, "Mallory");
const CHAT: i64 = 7101;

/// Starts a run of `mailer` and reports a phase end with a low warning: the run waits.
/// Returns (run id, check-in id, check-in short id).
async fn waiting_run(app: &TestApp, title: &str) -> (String, String, String) {
    let res = app
        .agent
        .post("/v1/runs", &json!({"agent": "mailer", "title": title}))
        .await
        .unwrap();
    let run = res.body["id"].as_str().unwrap().to_string();
    let res = app
        .agent
        .post(
            &format!("/v1/runs/{run}/events"),
            &json!({"type": "phase_complete", "phase": "build", "warnings": [
                {"text": "Style issue", "severity": "low"},
                {"text": "<b>unused</b> import", "severity": "low"}
            ]}),
        )
        .await
        .unwrap();
    assert_eq!(res.body["action"], "wait", "{:?}", res.body);
    (
        run,
        res.body["check_in"]["id"].as_str().unwrap().to_string(),
        res.body["check_in"]["short_id"]
            .as_str()
            .unwrap()
            .to_string(),
    )
}

/// The run as its agent sees it after waiting up to `wait` seconds.
async fn run_after(app: &TestApp, run: &str, wait: f64) -> Value {
    app.agent
        .get(&format!("/v1/runs/{run}?wait={wait}"))
        .await
        .unwrap()
        .body
}

fn keyboard(params: &Value) -> Vec<String> {
    params["reply_markup"]["inline_keyboard"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .flat_map(|r| r.as_array().unwrap().iter())
                .map(|b| b["callback_data"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn telegram_posts_the_check_in_reviews_it_and_continue_reaches_the_agent() {
    let fake = FakeTelegram::start(TOKEN).await;
    let app = spawn_app(&format!(
        "[telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\nchats = [{CHAT}]\napprovers = [{}]\n",
        fake.url, ALICE.0
    ))
    .await;
    let (run, cid, short) = waiting_run(&app, "<i>Release</i> 2.4").await;
    let (msg, params) = eventually("the check-in's card", async || {
        let (_, m, p) = fake.prompts_of(Some(CHAT), &short).pop()?;
        Some((m, p))
    })
    .await;
    let html = params["text"].as_str().unwrap();
    assert_eq!(params["parse_mode"], "HTML");
    for part in [
        "gatebot: workflow check-in",
        "<code>&lt;i&gt;Release&lt;/i&gt; 2.4</code>",
        "phase <code>build</code> complete",
        "<code>&lt;b&gt;unused&lt;/b&gt; import</code>",
    ] {
        assert!(html.contains(part), "{part} in {html}");
    }
    assert!(
        !html.contains("<i>Release"),
        "agent text is escaped: {html}"
    );
    assert_eq!(
        keyboard(&params),
        [
            button_data(ButtonKind::Continue, &cid),
            button_data(ButtonKind::Review, &cid),
            button_data(ButtonKind::Stop, &cid)
        ]
    );
    let commands = fake.ok_calls("setMyCommands");
    assert!(commands[0]["commands"].to_string().contains("\"continue\""));

    // A stranger's press is refused and audited.
    fake.press(MALLORY, CHAT, msg, &button_data(ButtonKind::Continue, &cid));
    let refused = eventually("the refusal", async || {
        fake.ok_calls("answerCallbackQuery").into_iter().next()
    })
    .await;
    assert!(
        refused["text"].as_str().unwrap().contains("not allowed"),
        "{refused}"
    );
    let audited = app.audit_rows(&cid).await;
    assert!(
        audited.iter().any(|r| r["event"] == "unauthorised_attempt"
            && r["channel"] == "telegram"
            && r["detail"]["user_id"] == "66"),
        "{audited:?}"
    );

    // Review issues: a reply with every problem, and Continue / Stop again.
    fake.press(ALICE, CHAT, msg, &button_data(ButtonKind::Review, &cid));
    let review = eventually("the review", async || {
        fake.ok_calls("sendMessage").into_iter().find(|p| {
            p["text"]
                .as_str()
                .unwrap()
                .contains("Issues at this check-in")
        })
    })
    .await;
    assert_eq!(review["reply_parameters"]["message_id"], json!(msg));
    let text = review["text"].as_str().unwrap();
    assert!(
        text.contains("Style issue") && text.contains("&lt;b&gt;unused"),
        "{text}"
    );
    assert_eq!(
        keyboard(&review),
        [
            button_data(ButtonKind::Continue, &cid),
            button_data(ButtonKind::Stop, &cid)
        ]
    );
    assert_eq!(run_after(&app, &run, 0.0).await["status"], "waiting");

    let review_msg = fake.message_id(CHAT, &review["text"]).unwrap();
    fake.press(
        ALICE,
        CHAT,
        review_msg,
        &button_data(ButtonKind::Continue, &cid),
    );
    let got = eventually("the run to go on", async || {
        let r = run_after(&app, &run, 5.0).await;
        (r["status"] == "running").then_some(r)
    })
    .await;
    assert_eq!(got["action"], "continue");
    assert_eq!(got["check_in"]["decided_via"], "telegram");
    let edited = eventually("the card's final edit", async || {
        fake.ok_calls("editMessageText").into_iter().find(|p| {
            p["message_id"] == json!(msg)
                && p["text"]
                    .as_str()
                    .unwrap()
                    .contains("Continued by Alice (42) on Telegram")
        })
    })
    .await;
    assert_eq!(edited["reply_markup"]["inline_keyboard"], json!([]));
    app.stop().await;
}

#[tokio::test]
async fn telegram_stop_asks_why_and_the_reply_reaches_the_agent() {
    let fake = FakeTelegram::start(TOKEN).await;
    let app = spawn_app(&format!(
        "[telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\nchats = [{CHAT}]\napprovers = [{}]\n",
        fake.url, ALICE.0
    ))
    .await;
    let (run, cid, short) = waiting_run(&app, "Migrate").await;
    let msg = eventually("the card", async || {
        fake.prompts_of(Some(CHAT), &short).pop().map(|(_, m, _)| m)
    })
    .await;
    fake.press(ALICE, CHAT, msg, &button_data(ButtonKind::Stop, &cid));
    let question = eventually("the question", async || {
        fake.ok_calls("sendMessage")
            .into_iter()
            .find(|p| p["text"].as_str().unwrap().contains("why stop"))
    })
    .await;
    assert_eq!(question["reply_markup"]["force_reply"], true);
    // ⏹ became "Stop without reason" on the card.
    eventually("the stop-without-reason button", async || {
        keyboard(&fake.message(CHAT, msg))
            .contains(&button_data(ButtonKind::StopNoReason, &cid))
            .then_some(())
    })
    .await;
    let qid = fake.message_id(CHAT, &question["text"]).unwrap();
    fake.say(ALICE, CHAT, "wrong branch, use main", Some(qid));
    let got = eventually("the run to stop", async || {
        let r = run_after(&app, &run, 5.0).await;
        (r["status"] == "stopped").then_some(r)
    })
    .await;
    assert_eq!(got["stopped_by"], "owner");
    assert!(
        got["reason"]
            .as_str()
            .unwrap()
            .ends_with("stopped by Alice (42) on Telegram: wrong branch, use main"),
        "{got}"
    );
    app.stop().await;
}

#[tokio::test]
async fn slack_posts_the_check_in_and_stop_opens_a_form_whose_reason_reaches_the_agent() {
    let fake = FakeSlack::start().await;
    let app = spawn_app(&fake.config()).await;
    let (run, cid, short) = waiting_run(&app, "Release 2.4").await;
    let post = eventually("the check-in's message", async || {
        fake.calls("chat.postMessage")
            .into_iter()
            .find(|c| c.ts.is_some() && c.params.to_string().contains(&cid))
    })
    .await;
    let ts = post.ts.clone().unwrap();
    let blocks = post.params["blocks"].to_string();
    assert!(
        blocks.contains(&short) && blocks.contains("Release 2.4"),
        "{blocks}"
    );
    assert!(
        blocks.contains("&lt;b&gt;unused&lt;/b&gt;"),
        "escaped: {blocks}"
    );
    assert_eq!(
        post.params["text"],
        format!("🚦 Check-in {short}: a workflow waits for you"),
        "no agent text in the fallback"
    );

    // Review issues: told privately, with the buttons again.
    fake.send(
        "interactive",
        click("U1", &ts, &button_data(ButtonKind::Review, &cid)),
    )
    .await;
    let review = eventually("the review", async || {
        fake.answers("U1")
            .into_iter()
            .find(|a| a.text().contains("Issues at this check-in"))
    })
    .await;
    assert!(review.text().contains("Style issue"), "{}", review.text());

    // A stranger's click is refused.
    fake.send(
        "interactive",
        click("U999", &ts, &button_data(ButtonKind::Continue, &cid)),
    )
    .await;
    eventually("the refusal", async || {
        fake.answers("U999")
            .into_iter()
            .find(|a| a.text().contains("not allowed"))
    })
    .await;

    fake.send(
        "interactive",
        click("U1", &ts, &button_data(ButtonKind::Stop, &cid)),
    )
    .await;
    let open = eventually("views.open", async || fake.calls("views.open").pop()).await;
    let meta = open.params["view"]["private_metadata"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        meta.contains(&cid) && meta.contains("stop_reason"),
        "{meta}"
    );
    assert_eq!(run_after(&app, &run, 0.0).await["status"], "waiting");
    fake.send("interactive", submit_modal("U1", &meta, Some("not today")))
        .await;
    let got = eventually("the run to stop", async || {
        let r = run_after(&app, &run, 5.0).await;
        (r["status"] == "stopped").then_some(r)
    })
    .await;
    assert!(
        got["reason"]
            .as_str()
            .unwrap()
            .ends_with("on Slack: not today"),
        "{got}"
    );
    eventually("the card's update", async || {
        fake.calls("chat.update").into_iter().find(|c| {
            c.ok && c.params["ts"] == ts.as_str()
                && c.params["blocks"]
                    .to_string()
                    .contains("Stopped by name-U1 (U1) on Slack")
        })
    })
    .await;

    // `/continue` answers another check-in by its short id.
    let (run2, _, short2) = waiting_run(&app, "Second").await;
    fake.send(
        "slash_commands",
        fake.slash("U1", "/continue", &format!("{short2} ship it")),
    )
    .await;
    let got = eventually("the second run to go on", async || {
        let r = run_after(&app, &run2, 5.0).await;
        (r["status"] == "running").then_some(r)
    })
    .await;
    assert!(
        got["reason"].as_str().unwrap().ends_with(": ship it"),
        "{got}"
    );
    app.stop().await;
}
