//! The whole approval flow through the in-memory chat platform: no Telegram or Slack
//! code, only the conversation mechanism they share (delivery, cards, the inbound
//! layer, the conversation kinds), against a real daemon and real SQLite.

use std::sync::Arc;

use gatebot::chat::card::Block;
use gatebot::chat::conversation::approval::{button_data, ButtonKind};
use gatebot::chat::exchange::Answer;
use gatebot::chat::memory::{Memory, Message};
use serde_json::json;

use crate::helpers::{alice, eventually, mallory, spawn_app, spawn_app_with_memory, TestApp};

const CHAT: &str = "ops";

async fn start(digest_after: usize) -> (TestApp, Arc<Memory>) {
    let memory = Memory::new(&[CHAT], digest_after);
    let app = spawn_app_with_memory(tempfile::tempdir().unwrap(), "", &memory).await;
    (app, memory)
}

/// The card of request `short` in the chat, once delivery posted it.
async fn card_of(memory: &Memory, short: &str) -> Message {
    eventually(&format!("the card of {short}"), async || {
        memory.find(CHAT, &format!("id {short}"))
    })
    .await
}

/// The message `id` once its text contains `needle`.
async fn shows(memory: &Memory, id: &str, needle: &str) -> Message {
    eventually(&format!("message {id} showing {needle:?}"), async || {
        memory
            .message(CHAT, id)
            .filter(|m| m.card.plain().contains(needle))
    })
    .await
}

fn outcome(m: &Message) -> Option<&str> {
    m.card.blocks.iter().find_map(|b| match b {
        Block::Outcome(o) => Some(o.as_str()),
        _ => None,
    })
}

#[tokio::test]
async fn a_press_approves_the_waiting_agent_and_the_card_shows_the_outcome() {
    let (app, memory) = start(5).await;
    let (id, short) = app
        .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"to": "ann@example.com"}, "summary": "Hi Ann"}))
        .await;
    let card = card_of(&memory, &short).await;
    let text = card.card.plain();
    for part in [
        "mailer wants to run send_email",
        "Risk: high: ",
        "Expires: in ",
        "Hi Ann",
        "ann@example.com",
    ] {
        assert!(text.contains(part), "{part} in {text}");
    }
    assert_eq!(
        card.card.button_data(),
        [
            button_data(ButtonKind::Approve, &id),
            button_data(ButtonKind::ApproveAlways, &id),
            button_data(ButtonKind::Deny, &id),
            button_data(ButtonKind::ApproveFor, &id)
        ]
    );
    assert!(
        !card.card.fallback.contains("send_email"),
        "no agent text in the fallback"
    );

    let waiter = {
        let agent = app.agent.clone();
        let id = id.clone();
        tokio::spawn(async move { agent.get(&format!("/v1/requests/{id}?wait=30")).await })
    };
    let answer = memory
        .press(
            &alice(),
            CHAT,
            &card.id,
            &button_data(ButtonKind::Approve, &id),
        )
        .await;
    assert!(matches!(answer, Answer::Done(_)), "{answer:?}");
    let got = waiter.await.unwrap().unwrap().body;
    assert_eq!(got["status"], "approved");
    assert_eq!(got["decided_by"], "Alice (42)");
    assert_eq!(got["decided_via"], "memory");

    let done = shows(&memory, &card.id, "Approved by Alice (42) on Memory").await;
    assert!(done.card.buttons.is_empty(), "buttons gone: {done:?}");
    assert!(!done.card.plain().contains("Expires:"));
    // A second tap is told who won, and changes nothing.
    let again = memory
        .press(
            &alice(),
            CHAT,
            &card.id,
            &button_data(ButtonKind::Deny, &id),
        )
        .await;
    assert!(
        again
            .text()
            .contains("already approved by Alice (42) on Memory"),
        "{again:?}"
    );
    assert_eq!(app.get(&id, 0.0).await.body["status"], "approved");
    app.stop().await;
}

#[tokio::test]
async fn deny_asks_why_and_the_reply_to_the_question_reaches_the_agent() {
    let (app, memory) = start(5).await;
    let (id, short) = app
        .submit_pending(
            json!({"agent": "intern", "tool": "create_contact", "args": {"name": "Bo"}}),
        )
        .await;
    let card = card_of(&memory, &short).await;
    assert_eq!(
        card.card.buttons[0].len(),
        2,
        "no always-allow for a supervised agent"
    );
    let answer = memory
        .press(
            &alice(),
            CHAT,
            &card.id,
            &button_data(ButtonKind::Deny, &id),
        )
        .await;
    let Answer::Ask(q) = &answer else {
        panic!("expected a question, got {answer:?}")
    };
    assert_eq!(q.subject, id);
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
    let question = memory
        .messages(CHAT)
        .into_iter()
        .find(|m| m.reply_to.as_deref() == Some(card.id.as_str()))
        .expect("the question replies to the card");
    assert!(
        question
            .card
            .plain()
            .starts_with(&format!("Alice, why deny {short}")),
        "{}",
        question.card.plain()
    );
    // Someone else's reply to the question decides nothing, and is audited.
    let refused = memory
        .say(&mallory(), CHAT, "deny it", Some(&question.id))
        .await;
    assert!(refused.text().contains("not allowed"), "{refused:?}");
    memory
        .say(
            &alice(),
            CHAT,
            "wrong customer, ask Ann first",
            Some(&question.id),
        )
        .await;
    let got = app.wait_for_status(&id, "rejected").await;
    assert_eq!(got["reason"], "wrong customer, ask Ann first");
    let done = shows(&memory, &card.id, "Denied by Alice (42) on Memory").await;
    assert_eq!(
        outcome(&done).map(|o| o.ends_with(": wrong customer, ask Ann first")),
        Some(true)
    );
    let refusals: Vec<_> = app
        .audit_rows(&id)
        .await
        .into_iter()
        .filter(|r| r["event"] == "unauthorised_attempt")
        .collect();
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert_eq!(refusals[0]["detail"]["user_id"], "66");
    assert_eq!(refusals[0]["channel"], "memory");
    app.stop().await;
}

#[tokio::test]
async fn replies_commands_and_strangers_go_through_the_same_checks() {
    let (app, memory) = start(5).await;
    let (id, short) = app
        .submit_pending(
            json!({"agent": "intern", "tool": "create_contact", "args": {"name": "Cy"}}),
        )
        .await;
    let card = card_of(&memory, &short).await;

    // A stranger's press decides nothing and is audited.
    let refused = memory
        .press(
            &mallory(),
            CHAT,
            &card.id,
            &button_data(ButtonKind::Approve, &id),
        )
        .await;
    assert!(
        matches!(&refused, Answer::Notice { alert: true, .. })
            && refused.text().contains("not allowed"),
        "{refused:?}"
    );
    // Forged data decides nothing either.
    let forged = memory
        .press(&alice(), CHAT, &card.id, &format!("gb1:a:{id}' OR 1=1"))
        .await;
    assert!(forged.text().contains("not recognised"), "{forged:?}");
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");

    // /pending lists it with its buttons.
    let Answer::Card(list) = memory.say(&alice(), CHAT, "/pending", None).await else {
        panic!("/pending answers with a card")
    };
    assert!(
        list.plain().contains("1 pending request(s)"),
        "{}",
        list.plain()
    );
    assert!(list
        .button_data()
        .contains(&button_data(ButtonKind::Approve, &id).as_str()));
    // Chatter is not for gatebot.
    assert_eq!(
        memory.say(&alice(), CHAT, "lunch?", None).await,
        Answer::Nothing
    );

    // A plain-words reply to the card decides it.
    memory.say(&alice(), CHAT, "approve", Some(&card.id)).await;
    app.wait_for_status(&id, "approved").await;
    shows(&memory, &card.id, "Approved by Alice (42) on Memory").await;

    // A CLI decision and an expiry update the cards too.
    let (id2, short2) = app
        .submit_pending(
            json!({"agent": "intern", "tool": "create_contact", "args": {"name": "Di"}}),
        )
        .await;
    let card2 = card_of(&memory, &short2).await;
    app.decide_ok(&id2, "deny", Some("not today")).await;
    shows(&memory, &card2.id, "Denied by alice on the command line").await;
    let (_, short3) = app
        .submit_pending(json!({"agent": "intern", "tool": "create_contact", "args": {"name": "Ed"}, "ttl": "1s"}))
        .await;
    let card3 = card_of(&memory, &short3).await;
    shows(&memory, &card3.id, "Expired").await;
    app.stop().await;
}

#[tokio::test]
async fn a_burst_becomes_one_digest_that_an_approver_goes_through() {
    // Six requests wait before the platform runs: one digest, not six cards.
    let app = spawn_app("").await;
    let mut ids = Vec::new();
    for n in 0..6 {
        let (id, _) = app
            .submit_pending(json!({"agent": "intern", "tool": "create_contact", "args": {"n": n}}))
            .await;
        ids.push(id);
    }
    ids.sort();
    let dir = app.stop().await;
    let memory = Memory::new(&[CHAT], 3);
    let app = spawn_app_with_memory(dir, "", &memory).await;
    let digest = eventually("the digest", async || {
        memory.find(CHAT, "6 of 6 requests in this digest need a decision")
    })
    .await;
    assert!(digest.card.plain().contains("intern · create_contact × 6"));
    // Review one by one; or the intern's six together, after a confirmation.
    let data = digest.card.button_data();
    assert_eq!(data.len(), 3, "{data:?}");
    assert_eq!(data[0], "gb1:v:r");
    assert!(
        data[1].starts_with("gb1:Ba:h:") && data[2].starts_with("gb1:Bd:"),
        "{data:?}"
    );

    // Only approvers page through it.
    let refused = memory.press(&mallory(), CHAT, &digest.id, "gb1:v:r").await;
    assert!(refused.text().contains("not allowed"));
    memory.press(&alice(), CHAT, &digest.id, "gb1:v:r").await;
    let view = shows(&memory, &digest.id, "request 1 of 6 · 6 pending").await;
    assert!(view
        .card
        .button_data()
        .contains(&button_data(ButtonKind::Approve, &ids[0]).as_str()));
    memory
        .press(
            &alice(),
            CHAT,
            &digest.id,
            &button_data(ButtonKind::Approve, &ids[0]),
        )
        .await;
    app.wait_for_status(&ids[0], "approved").await;
    shows(&memory, &digest.id, "request 2 of 6 · 5 pending").await;
    // A reply to the digest decides the request it shows.
    memory
        .say(&alice(), CHAT, "deny too many at once", Some(&digest.id))
        .await;
    let got = app.wait_for_status(&ids[1], "rejected").await;
    assert_eq!(got["reason"], "too many at once");
    shows(&memory, &digest.id, "request 3 of 6 · 4 pending").await;
    memory.press(&alice(), CHAT, &digest.id, "gb1:v:s").await;
    shows(
        &memory,
        &digest.id,
        "4 of 6 requests in this digest need a decision",
    )
    .await;
    for id in &ids[2..] {
        app.decide_ok(id, "approve", None).await;
    }
    let closed = shows(&memory, &digest.id, "all settled").await;
    assert!(closed.card.plain().contains("5 approved, 1 denied"));
    assert!(closed.card.buttons.is_empty());
    assert_eq!(memory.messages(CHAT).len(), 1, "one message for the burst");
    app.stop().await;
}
