//! Agent trust in chat: proposal cards, agent management, grants and the scoped grant
//! buttons of prompts, through the in-memory platform (the mechanism every platform
//! shares), and the main flows again through the fake Telegram and the fake Slack.

use std::sync::Arc;

use gatebot::chat::card::Card;
use gatebot::chat::conversation::approval::{button_data, ButtonKind};
use gatebot::chat::conversation::proposal;
use gatebot::chat::exchange::Answer;
use gatebot::chat::memory::{Memory, Message};
use serde_json::{json, Value};

use crate::fake_telegram::{FakeTelegram, User};
use crate::helpers::{alice, eventually, mallory, spawn_app, spawn_app_with_memory, TestApp};
use crate::trust::{assess, owner_get, seed, trust, SHELL};

const CHAT: &str = "ops";

async fn start(extra: &str) -> (TestApp, Arc<Memory>) {
    let memory = Memory::new(&[CHAT], 5);
    let app = spawn_app_with_memory(tempfile::tempdir().unwrap(), extra, &memory).await;
    (app, memory)
}

/// The first message whose text contains `needle`, once there is one.
async fn message(memory: &Memory, needle: &str) -> Message {
    eventually(&format!("a message with {needle:?}"), async || {
        memory.find(CHAT, needle)
    })
    .await
}

/// Message `id` once its text contains `needle`.
async fn shows(memory: &Memory, id: &str, needle: &str) -> Message {
    eventually(&format!("message {id} showing {needle:?}"), async || {
        memory
            .message(CHAT, id)
            .filter(|m| m.card.plain().contains(needle))
    })
    .await
}

/// The data of the button whose label starts with `label`.
fn button(card: &Card, label: &str) -> String {
    card.buttons
        .iter()
        .flatten()
        .find(|b| b.label.starts_with(label))
        .unwrap_or_else(|| panic!("no {label:?} button in {:?}", card.buttons))
        .data
        .clone()
}

fn answer_card(a: &Answer) -> &Card {
    a.card().unwrap_or_else(|| panic!("no card in {a:?}"))
}

async fn refusals(app: &TestApp) -> Vec<Value> {
    let (_, audit) = owner_get(app, "/v1/audit").await;
    audit["audit"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["event"] == "unauthorised_attempt")
        .cloned()
        .collect()
}

#[tokio::test]
async fn a_proposal_card_is_approved_by_an_approver_and_refused_to_others() {
    let (app, memory) = start("").await;
    seed(&app, "intern", 50, 0).await;
    let o = assess(&app, "intern").await;
    let id = o["proposal"]["id"].as_str().unwrap().to_string();
    let short = o["proposal"]["short_id"].as_str().unwrap().to_string();
    let card = message(&memory, "Promote intern to semi-autonomous?").await;
    let proposed = gatebot::time::clock(o["proposal"]["created_at"].as_i64().unwrap());
    assert_eq!(
        card.card.plain(),
        format!(
            "🎓 gatebot: tier proposal · id {short}\n\
             Promote intern to semi-autonomous?\n\
             Tier: supervised → semi-autonomous\n\
             Evidence: 50 handled, 100 % went well, 0 % denied, 0 % escalated\n\
             By a human: 50 approved, 0 denied\n\
             Proposed: {proposed}"
        )
    );
    assert_eq!(
        card.card.button_data(),
        [
            proposal::button_data(true, &id),
            proposal::button_data(false, &id)
        ]
    );
    assert!(!card.card.fallback.contains("intern"));

    let refused = memory
        .press(
            &mallory(),
            CHAT,
            &card.id,
            &proposal::button_data(true, &id),
        )
        .await;
    assert!(refused.text().contains("not allowed"), "{refused:?}");
    let rows = refusals(&app).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(
        rows[0]["approval_id"],
        json!(id),
        "the refusal names the proposal"
    );
    assert_eq!(trust(&app, "intern").await["tier"], "supervised");

    let done = memory
        .press(&alice(), CHAT, &card.id, &proposal::button_data(true, &id))
        .await;
    assert!(matches!(done, Answer::Done(_)), "{done:?}");
    assert!(
        done.text().contains("intern is now semi-autonomous"),
        "{done:?}"
    );
    assert_eq!(trust(&app, "intern").await["tier"], "semi_autonomous");
    let edited = shows(&memory, &card.id, "Approved by Alice (42) on Memory").await;
    assert!(edited.card.buttons.is_empty());
    // A second tap is told who answered.
    let late = memory
        .press(&alice(), CHAT, &card.id, &proposal::button_data(false, &id))
        .await;
    assert!(
        late.text().contains("already approved by Alice"),
        "{late:?}"
    );
    app.stop().await;
}

#[tokio::test]
async fn a_reply_declines_a_proposal_and_it_is_not_proposed_again() {
    let (app, memory) = start("").await;
    seed(&app, "intern", 50, 0).await;
    assess(&app, "intern").await;
    let card = message(&memory, "Promote intern").await;
    memory
        .say(&alice(), CHAT, "deny not before the audit", Some(&card.id))
        .await;
    let edited = shows(&memory, &card.id, "Denied by Alice (42) on Memory").await;
    assert!(edited
        .card
        .plain()
        .contains("not before the audit; not proposed again for 30 days"));
    assert_eq!(trust(&app, "intern").await["tier"], "supervised");
    // Asked again, from chat: no new proposal, and it says why.
    let again = memory.say(&alice(), CHAT, "/assess intern", None).await;
    assert!(
        again
            .text()
            .contains("declined this within the last 30 days"),
        "{again:?}"
    );
    let cards = memory
        .messages(CHAT)
        .into_iter()
        .filter(|m| m.card.plain().contains("Promote intern"))
        .count();
    assert_eq!(cards, 1);
    app.stop().await;
}

#[tokio::test]
async fn two_taps_pause_a_runaway_agent_and_deny_what_it_queued() {
    let (app, memory) = start("").await;
    let mut ids = Vec::new();
    for n in 0..2 {
        let (id, short) = app
            .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"n": n}}))
            .await;
        message(&memory, &format!("id {short}")).await;
        ids.push(id);
    }
    // Tap one: /agents (from the command menu); tap two: ⛔ Pause + deny.
    let list = memory.say(&alice(), CHAT, "/agents", None).await;
    let card = answer_card(&list).clone();
    let text = card.plain();
    assert!(text.contains("6 agent(s)"), "{text}");
    assert!(
        text.contains("mailer semi-autonomous (as bot.toml sets it) · 2 pending"),
        "{text}"
    );
    let kill = button(&card, "⛔ Pause mailer + deny 2");
    assert!(kill.len() <= 64);
    let posted = memory
        .messages(CHAT)
        .into_iter()
        .find(|m| m.card == card)
        .unwrap();
    // A stranger's press does nothing, and is audited.
    let refused = memory.press(&mallory(), CHAT, &posted.id, &kill).await;
    assert!(refused.text().contains("not allowed"));
    assert_eq!(refusals(&app).await.len(), 1);
    let paused = memory.press(&alice(), CHAT, &posted.id, &kill).await;
    assert!(
        paused.text().contains("Denied 2 pending request(s)"),
        "{paused:?}"
    );
    for id in &ids {
        let got = app.wait_for_status(id, "rejected").await;
        assert!(got["reason"]
            .as_str()
            .unwrap()
            .contains("paused by Alice (42) on Memory"));
    }
    message(&memory, "Denied by Alice (42) on Memory").await;
    let blocked = app.submit_ok("mailer", "send_email", json!({"n": 3})).await;
    assert_eq!(blocked["status"], "blocked");

    // /agent shows it paused, with ▶️ Resume.
    let shown = memory.say(&alice(), CHAT, "/agent mailer", None).await;
    let card = answer_card(&shown).clone();
    assert!(
        card.plain()
            .contains("Paused: paused by Alice (42) on Memory"),
        "{}",
        card.plain()
    );
    // The evidence, each figure apart: the pause's denials are human denials.
    let text = card.plain();
    let evidence: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("All time:"))
        .take_while(|l| !l.starts_with("Assessment:"))
        .collect();
    assert_eq!(
        evidence,
        [
            "All time: 3 request(s): 0 let through without asking a human (0 by an owner's grant), \
             1 blocked, 2 asked (0 approved, 2 denied, 0 expired, 0 cancelled, 0 pending); the \
             agent reported 0 succeeded and 0 failed; 0 blocked for low confidence",
            "Last 30 days: 3 request(s): 0 let through without asking a human (0 by an owner's grant), \
             1 blocked, 2 asked (0 approved, 2 denied, 0 expired, 0 cancelled, 0 pending); the \
             agent reported 0 succeeded and 0 failed; 0 blocked for low confidence",
            "Evidence: 2 handled, 0 % went well, 100 % denied, 0 % escalated",
            "By a human: 0 approved, 2 denied",
        ]
    );
    button(&card, "▶️ Resume");
    let resumed = memory.say(&alice(), CHAT, "/resume mailer", None).await;
    assert!(resumed.text().contains("is running again"), "{resumed:?}");
    let asks = app.submit_ok("mailer", "send_email", json!({"n": 4})).await;
    assert_eq!(asks["status"], "pending");
    app.stop().await;
}

#[tokio::test]
async fn pause_by_command_offers_to_deny_what_is_pending() {
    let (app, memory) = start("").await;
    let (id, _) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {}}))
        .await;
    let answer = memory
        .say(&alice(), CHAT, "/pause mailer looping on refunds", None)
        .await;
    let card = answer_card(&answer).clone();
    assert!(
        card.plain().contains("looping on refunds"),
        "{}",
        card.plain()
    );
    assert!(card
        .plain()
        .contains("1 request(s) of it are still pending"));
    let deny = button(&card, "❌ Deny 1 pending");
    let posted = memory
        .messages(CHAT)
        .into_iter()
        .find(|m| m.card == card)
        .unwrap();
    let done = memory.press(&alice(), CHAT, &posted.id, &deny).await;
    assert!(
        done.text()
            .contains("Denied 1 pending request(s) of mailer"),
        "{done:?}"
    );
    app.wait_for_status(&id, "rejected").await;
    // Once resumed, the old button denies nothing.
    memory.say(&alice(), CHAT, "/resume mailer", None).await;
    let (id2, _) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"n": 2}}))
        .await;
    let stale = memory.press(&alice(), CHAT, &posted.id, &deny).await;
    assert!(stale.text().contains("pause is over"), "{stale:?}");
    assert_eq!(app.get(&id2, 0.0).await.body["status"], "pending");
    // Strangers cannot pause, set tiers or revoke.
    for text in [
        "/pause mailer",
        "/tier mailer autonomous",
        "/grants",
        "/agents",
    ] {
        let r = memory.say(&mallory(), CHAT, text, None).await;
        assert!(r.text().contains("not allowed"), "{text}: {r:?}");
    }
    assert_eq!(refusals(&app).await.len(), 4);
    assert!(trust(&app, "mailer").await["pause"].is_null());
    // Bad input gets the usage, and changes nothing.
    let r = memory
        .say(&alice(), CHAT, "/tier mailer godmode", None)
        .await;
    assert!(r.text().contains("Usage: /tier NAME TIER"), "{r:?}");
    let r = memory.say(&alice(), CHAT, "/pause nobody", None).await;
    assert!(r.text().contains("No agent `nobody`"), "{r:?}");
    let r = memory
        .say(&alice(), CHAT, "/tier mailer autonomous trusted now", None)
        .await;
    assert!(
        r.text()
            .contains("mailer is now autonomous (set by Alice (42) on Memory)"),
        "{r:?}"
    );
    assert_eq!(trust(&app, "mailer").await["tier"], "autonomous");
    app.stop().await;
}

#[tokio::test]
async fn a_shell_prompt_offers_scoped_grants_and_a_revoke_asks_again() {
    let (app, memory) = start(SHELL).await;
    let (id, short) = app
        .submit_pending(
            json!({"agent": "coder", "tool": "Bash", "args": {"command": "git status --short"}}),
        )
        .await;
    let card = message(&memory, &format!("id {short}")).await;
    assert!(
        card.card
            .plain()
            .contains("Always allow can cover this exact command, or every simple command starting git status."),
        "{}",
        card.card.plain()
    );
    assert_eq!(
        card.card.button_data(),
        [
            button_data(ButtonKind::Approve, &id),
            button_data(ButtonKind::ApproveExact, &id),
            button_data(ButtonKind::Deny, &id),
            button_data(ButtonKind::ApprovePrefix, &id),
            button_data(ButtonKind::ApproveFor, &id),
        ]
    );
    // The button names the request; what it grants was stored with it.
    let done = memory
        .press(
            &alice(),
            CHAT,
            &card.id,
            &button_data(ButtonKind::ApprovePrefix, &id),
        )
        .await;
    assert!(
        done.text().contains(
            "coder may now run Bash without asking: commands starting git status, until revoked"
        ),
        "{done:?}"
    );
    let edited = shows(&memory, &card.id, "Approved with a grant by Alice").await;
    assert!(edited
        .card
        .plain()
        .contains("may run Bash without asking: commands starting git status"));
    let ok = app
        .submit_ok("coder", "Bash", json!({"command": "git status"}))
        .await;
    assert_eq!(ok["status"], "allowed");
    let hostile = app
        .submit_ok("coder", "Bash", json!({"command": "git status; rm -rf ~"}))
        .await;
    assert_ne!(hostile["status"], "allowed");

    // /grants lists it with a Revoke button, which only approvers may press.
    let list = memory.say(&alice(), CHAT, "/grants coder", None).await;
    let card = answer_card(&list).clone();
    assert!(
        card.plain()
            .contains("coder may run Bash: commands starting git status · by Alice (42) on Memory"),
        "{}",
        card.plain()
    );
    let revoke = button(&card, "🗑 Revoke");
    let posted = memory
        .messages(CHAT)
        .into_iter()
        .find(|m| m.card == card)
        .unwrap();
    let refused = memory.press(&mallory(), CHAT, &posted.id, &revoke).await;
    assert!(refused.text().contains("not allowed"));
    assert_eq!(refusals(&app).await.len(), 1);
    let revoked = memory.press(&alice(), CHAT, &posted.id, &revoke).await;
    assert!(
        revoked
            .text()
            .contains("coder asks again before running Bash"),
        "{revoked:?}"
    );
    let asks = app
        .submit_ok("coder", "Bash", json!({"command": "git status"}))
        .await;
    assert_eq!(asks["status"], "pending");
    let again = memory.press(&alice(), CHAT, &posted.id, &revoke).await;
    assert!(
        again.text().contains("already revoked by Alice"),
        "{again:?}"
    );
    app.stop().await;
}

#[tokio::test]
async fn allow_for_an_hour_grants_until_then() {
    let (app, memory) = start("").await;
    let (id, short) = app
        .submit_pending(
            json!({"agent": "mailer", "tool": "send_email", "args": {"to": "a@example.com"}}),
        )
        .await;
    let card = message(&memory, &format!("id {short}")).await;
    let data = button(&card.card, "⏱ Allow for 1 h");
    assert_eq!(data, button_data(ButtonKind::ApproveFor, &id));
    let done = memory.press(&alice(), CHAT, &card.id, &data).await;
    assert!(
        done.text()
            .contains("mailer may now run send_email without asking: every call, until "),
        "{done:?}"
    );
    let next = app
        .submit_ok("mailer", "send_email", json!({"to": "b@example.com"}))
        .await;
    assert_eq!(next["status"], "allowed");
    let (_, g) = owner_get(&app, "/v1/grants?agent=mailer").await;
    assert!(g["grants"][0]["expires_at"].is_i64(), "{g}");
    app.stop().await;
}

#[tokio::test]
async fn after_enough_approvals_the_prompt_suggests_the_grant_first() {
    let (app, memory) = start("[grants]\nsuggest_after = 3\n").await;
    for n in 0..3 {
        let (id, _) = app
            .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"n": n}}))
            .await;
        app.decide_ok(&id, "approve", None).await;
    }
    let (id, short) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"n": 3}}))
        .await;
    let card = message(&memory, &format!("id {short}")).await;
    assert!(
        card.card
            .plain()
            .contains("💡 mailer has had send_email approved 3 times in a row with no denial. Allow it always?"),
        "{}",
        card.card.plain()
    );
    assert_eq!(
        card.card.buttons[0][0].data,
        button_data(ButtonKind::ApproveAlways, &id),
        "the suggested grant comes first"
    );
    // A denial starts the count again.
    memory
        .press(
            &alice(),
            CHAT,
            &card.id,
            &button_data(ButtonKind::DenyNoReason, &id),
        )
        .await;
    let (_, short) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"n": 4}}))
        .await;
    let card = message(&memory, &format!("id {short}")).await;
    assert!(!card.card.plain().contains("💡"));
    app.stop().await;
}

const TG_TOKEN: &str = "424242:AAE-fake-secret-token-for-tests_0123456789";
const ALICE: User = (42, "Alice");
const MALLORY: User = (66, "Mallory");
const CHAT_ID: i64 = 7001;

/// A daemon with the fake Telegram, chat `CHAT_ID`, Alice its approver.
async fn start_telegram() -> (TestApp, FakeTelegram) {
    let fake = FakeTelegram::start(TG_TOKEN).await;
    let app = spawn_app(&format!(
        "[telegram]\ntoken = \"{TG_TOKEN}\"\napi_url = \"{}\"\nchats = [{CHAT_ID}]\napprovers = [{}]\n",
        fake.url, ALICE.0
    ))
    .await;
    (app, fake)
}

#[tokio::test]
async fn proposals_through_the_fake_telegram() {
    let (app, fake) = start_telegram().await;
    seed(&app, "intern", 50, 0).await;
    let o = assess(&app, "intern").await;
    let id = o["proposal"]["id"].as_str().unwrap().to_string();
    let short = o["proposal"]["short_id"].as_str().unwrap().to_string();
    let (message, params) = eventually("the proposal card", async || {
        let (_, m, p) = fake.prompts_of(Some(CHAT_ID), &short).pop()?;
        Some((m, p))
    })
    .await;
    let text = params["text"].as_str().unwrap();
    assert!(text.contains("<code>intern</code>"), "{text}");
    assert!(text.contains("Promote"), "{text}");
    let data = proposal::button_data(true, &id);
    assert!(params["reply_markup"].to_string().contains(&data));
    fake.press(MALLORY, CHAT_ID, message, &data);
    eventually("the refusal", async || {
        fake.ok_calls("answerCallbackQuery")
            .into_iter()
            .find(|a| a["text"].as_str().unwrap_or("").contains("not allowed"))
    })
    .await;
    assert_eq!(trust(&app, "intern").await["tier"], "supervised");
    fake.press(ALICE, CHAT_ID, message, &data);
    eventually("the tier to change", async || {
        (trust(&app, "intern").await["tier"] == "semi_autonomous").then_some(())
    })
    .await;
    eventually("the card's final edit", async || {
        fake.ok_calls("editMessageText").into_iter().find(|p| {
            p["message_id"] == json!(message)
                && p["text"]
                    .as_str()
                    .unwrap()
                    .contains("Approved by Alice (42) on Telegram")
        })
    })
    .await;
    // /agents answers in the chat, with its pause buttons.
    fake.say(ALICE, CHAT_ID, "/agents", None);
    let list = eventually("the agents list", async || {
        fake.ok_calls("sendMessage")
            .into_iter()
            .find(|p| p["text"].as_str().unwrap_or("").contains("6 agent(s)"))
    })
    .await;
    let markup = list["reply_markup"].to_string();
    assert!(markup.contains("gb1:Tp:"), "{markup}");
    assert_eq!(refusals(&app).await.len(), 1);
    app.stop().await;
}

#[tokio::test]
async fn pause_and_decline_through_the_fake_slack() {
    use crate::fake_slack::{click, FakeSlack};
    let fake = FakeSlack::start().await;
    let app = spawn_app(&fake.config()).await;
    let (id, _) = app
        .submit_pending(
            json!({"agent": "mailer", "tool": "send_email", "args": {"to": "a@example.com"}}),
        )
        .await;
    fake.send(
        "slash_commands",
        fake.slash("U1", "/pause", "mailer incident 42"),
    )
    .await;
    let told = eventually("the pause answer", async || {
        fake.answers("U1")
            .into_iter()
            .map(|a| a.text())
            .find(|t| t.contains("incident 42"))
    })
    .await;
    assert!(told.contains("still pending"), "{told}");
    let blocked = app.submit_ok("mailer", "query_org_data", json!({})).await;
    assert_eq!(blocked["status"], "blocked");
    // A stranger's slash command is refused privately and audited.
    fake.send("slash_commands", fake.slash("U999", "/resume", "mailer"))
        .await;
    eventually("the stranger's refusal", async || {
        fake.answers("U999")
            .into_iter()
            .find(|a| a.text().contains("not allowed"))
    })
    .await;
    assert!(!trust(&app, "mailer").await["pause"].is_null());
    fake.send("slash_commands", fake.slash("U1", "/resume", "mailer"))
        .await;
    eventually("the resume", async || {
        trust(&app, "mailer").await["pause"].is_null().then_some(())
    })
    .await;
    app.decide_ok(&id, "approve", None).await;

    // A proposal card, declined with a click.
    seed(&app, "intern", 50, 0).await;
    let o = assess(&app, "intern").await;
    let pid = o["proposal"]["id"].as_str().unwrap().to_string();
    let post = eventually("the proposal card", async || {
        fake.calls("chat.postMessage")
            .into_iter()
            .find(|c| c.ts.is_some() && c.params.to_string().contains(&pid))
    })
    .await;
    assert!(post.params["blocks"].to_string().contains("Promote"));
    let ts = post.ts.clone().unwrap();
    fake.send(
        "interactive",
        click("U1", &ts, &proposal::button_data(false, &pid)),
    )
    .await;
    eventually("the declined card", async || {
        fake.calls("chat.update").into_iter().find(|c| {
            c.ok && c.params["ts"] == ts.as_str()
                && c.params["blocks"].to_string().contains("Denied by")
        })
    })
    .await;
    assert_eq!(trust(&app, "intern").await["tier"], "supervised");
    assert_eq!(refusals(&app).await.len(), 1);
    app.stop().await;
}

#[tokio::test]
async fn a_time_boxed_grant_from_the_button_runs_out() {
    let (app, memory) = start("[grants]\nallow_for = \"1s\"\n").await;
    let (id, short) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"n": 1}}))
        .await;
    let card = message(&memory, &format!("id {short}")).await;
    let data = button(&card.card, "⏱ Allow for 1 s");
    memory.press(&alice(), CHAT, &card.id, &data).await;
    app.wait_for_status(&id, "approved").await;
    // Once the second has passed, the same tool asks again (and the grant is listed
    // as expired).
    eventually("the one-second grant to run out", async || {
        let next = app.submit_ok("mailer", "send_email", json!({"n": 2})).await;
        (next["status"] == "pending").then_some(())
    })
    .await;
    let (_, g) = owner_get(&app, "/v1/grants?agent=mailer").await;
    assert_eq!(g["grants"], json!([]));
    let (_, g) = owner_get(&app, "/v1/grants?agent=mailer&all=true").await;
    assert_eq!(g["grants"].as_array().unwrap().len(), 1);
    app.stop().await;
}

#[tokio::test]
async fn pause_with_deny_pending_and_revoke_through_the_fake_telegram() {
    let (app, fake) = start_telegram().await;
    let mut ids = Vec::new();
    for n in 0..2 {
        let (id, short) = app
            .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"n": n}}))
            .await;
        eventually("the prompt", async || {
            fake.prompts_of(Some(CHAT_ID), &short).pop()
        })
        .await;
        ids.push(id);
    }
    fake.say(ALICE, CHAT_ID, "/agents", None);
    let list = eventually("the agents list", async || {
        fake.ok_calls("sendMessage")
            .into_iter()
            .find(|p| p["text"].as_str().unwrap_or("").contains("6 agent(s)"))
    })
    .await;
    let kill = list["reply_markup"]["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap().iter())
        .find(|b| {
            b["text"]
                .as_str()
                .unwrap()
                .starts_with("⛔ Pause mailer + deny 2")
        })
        .unwrap_or_else(|| panic!("{list}"))["callback_data"]
        .as_str()
        .unwrap()
        .to_string();
    let message = fake.message_id(CHAT_ID, &list["text"]).unwrap();
    fake.press(MALLORY, CHAT_ID, message, &kill);
    fake.press(ALICE, CHAT_ID, message, &kill);
    for id in &ids {
        app.wait_for_status(id, "rejected").await;
    }
    assert_eq!(
        app.submit_ok("mailer", "send_email", json!({})).await["status"],
        "blocked"
    );
    assert_eq!(refusals(&app).await.len(), 1, "the stranger's press");

    // A grant made with ♾️ on a prompt, revoked with 🗑 from /grants.
    let (id, short) = app
        .submit_pending(
            json!({"agent": "boss", "tool": "send_email", "args": {"to": "a@example.com"}}),
        )
        .await;
    let (_, prompt, _) = eventually("boss's prompt", async || {
        fake.prompts_of(Some(CHAT_ID), &short).pop()
    })
    .await;
    fake.press(
        ALICE,
        CHAT_ID,
        prompt,
        &button_data(ButtonKind::ApproveAlways, &id),
    );
    app.wait_for_status(&id, "approved").await;
    assert_eq!(
        app.submit_ok("boss", "send_email", json!({"to": "b@example.com"}))
            .await["status"],
        "allowed"
    );
    fake.say(ALICE, CHAT_ID, "/grants boss", None);
    let grants = eventually("the grants list", async || {
        fake.ok_calls("sendMessage").into_iter().find(|p| {
            p["text"]
                .as_str()
                .unwrap_or("")
                .contains("grant(s) in force")
        })
    })
    .await;
    let revoke = grants["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(revoke.starts_with("gb1:Gr:"), "{revoke}");
    let message = fake.message_id(CHAT_ID, &grants["text"]).unwrap();
    fake.press(ALICE, CHAT_ID, message, &revoke);
    eventually("the call to ask again", async || {
        let next = app
            .submit_ok("boss", "send_email", json!({"to": "c@example.com"}))
            .await;
        (next["status"] == "pending").then_some(())
    })
    .await;
    app.stop().await;
}

#[tokio::test]
async fn a_declined_proposal_stays_declined_and_a_grant_is_revoked_through_the_fake_slack() {
    use crate::fake_slack::{click, FakeSlack};
    let fake = FakeSlack::start().await;
    let app = spawn_app(&format!(
        "{}\n[grants]\nallow_for = \"1s\"\n",
        fake.config()
    ))
    .await;
    seed(&app, "intern", 50, 0).await;
    let o = assess(&app, "intern").await;
    let pid = o["proposal"]["id"].as_str().unwrap().to_string();
    let post = eventually("the proposal card", async || {
        fake.calls("chat.postMessage")
            .into_iter()
            .find(|c| c.ts.is_some() && c.params.to_string().contains(&pid))
    })
    .await;
    fake.send(
        "interactive",
        click(
            "U1",
            post.ts.as_deref().unwrap(),
            &proposal::button_data(false, &pid),
        ),
    )
    .await;
    eventually("the decline", async || {
        (trust(&app, "intern").await["assessment"]["declined_recently"] == 1).then_some(())
    })
    .await;
    // Not proposed again: assessing from Slack says why, and posts no new card.
    fake.send("slash_commands", fake.slash("U1", "/assess", "intern"))
        .await;
    eventually("the assessment's answer", async || {
        fake.answers("U1")
            .into_iter()
            .find(|a| a.text().contains("declined this within the last 30 days"))
    })
    .await;
    let cards = fake
        .calls("chat.postMessage")
        .into_iter()
        .filter(|c| {
            c.params["text"]
                .as_str()
                .unwrap_or("")
                .contains("Tier change")
        })
        .count();
    assert_eq!(cards, 1);

    // ⏱ Allow for 1s: the grant runs out by itself.
    let (id, _) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"n": 1}}))
        .await;
    let prompt = eventually("the prompt", async || {
        fake.calls("chat.postMessage")
            .into_iter()
            .find(|c| c.ts.is_some() && c.params.to_string().contains(&id))
    })
    .await;
    fake.send(
        "interactive",
        click(
            "U1",
            prompt.ts.as_deref().unwrap(),
            &button_data(ButtonKind::ApproveFor, &id),
        ),
    )
    .await;
    app.wait_for_status(&id, "approved").await;
    eventually("the grant to run out", async || {
        let next = app.submit_ok("mailer", "send_email", json!({"n": 2})).await;
        (next["status"] == "pending").then_some(())
    })
    .await;

    // A whole-tool grant, revoked with /revoke.
    let (id, _) = app
        .submit_pending(json!({"agent": "boss", "tool": "send_email", "args": {}}))
        .await;
    app.decide_ok(&id, "approve-always", None).await;
    let (_, g) = owner_get(&app, "/v1/grants?agent=boss").await;
    let short = g["grants"][0]["short_id"].as_str().unwrap().to_string();
    fake.send("slash_commands", fake.slash("U999", "/revoke", &short))
        .await;
    fake.send("slash_commands", fake.slash("U1", "/revoke", &short))
        .await;
    eventually("the revocation", async || {
        fake.answers("U1")
            .into_iter()
            .find(|a| a.text().contains(&format!("Revoked grant {short}")))
    })
    .await;
    let next = app.submit_ok("boss", "send_email", json!({})).await;
    assert_eq!(next["status"], "pending");
    eventually("the stranger's refusal", async || {
        fake.answers("U999")
            .into_iter()
            .find(|a| a.text().contains("not allowed"))
    })
    .await;
    app.stop().await;
}

/// A reply to a proposal's card whose post gatebot never saw confirmed reaches the
/// proposal (the card names it), as for a request's prompt.
#[tokio::test]
async fn a_reply_to_a_proposal_card_whose_post_is_unconfirmed_answers_it() {
    let (app, memory) = start("").await;
    seed(&app, "intern", 50, 0).await;
    // Only the proposal's post is held and its answer lost: the seeded requests'
    // cards may still be on their way.
    memory.only_posts_showing("Promote intern");
    memory.hold_answers();
    memory.lose_next_answers(1);
    let o = assess(&app, "intern").await;
    let short = o["proposal"]["short_id"].as_str().unwrap().to_string();
    let card = message(&memory, &format!("id {short}")).await;

    let answer = memory.say(&alice(), CHAT, "approve", Some(&card.id)).await;
    assert!(answer.text().contains("semi-autonomous"), "{answer:?}");
    assert_eq!(trust(&app, "intern").await["tier"], "semi_autonomous");
    // The message the reply found became the card: it shows the outcome, once.
    memory.release_answers();
    shows(&memory, &card.id, "Approved by Alice").await;
    let copies = memory
        .messages(CHAT)
        .into_iter()
        .filter(|m| m.card.plain().contains(&format!("id {short}")))
        .count();
    assert_eq!(copies, 1, "posted once");
}
