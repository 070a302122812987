//! Replies and presses on messages gatebot has no record of: a platform stored a
//! post, but its answer to the post is slow or was lost (so gatebot may post it
//! again). A reply or a button under any message of gatebot's that shows a request
//! must reach that request; a decision replying to a message that shows none is
//! answered, never dropped. The mechanism is the same on every platform (the
//! in-memory one here), and each platform feeds it what it knows of the message
//! replied to: Telegram its text, Slack its `ts` (read back with
//! `conversations.replies`).

use std::sync::Arc;

use gatebot::chat::conversation::approval::{button_data, ButtonKind};
use gatebot::chat::exchange::Answer;
use gatebot::chat::inbound::UNMATCHED_REPLY;
use gatebot::chat::memory::{Memory, Message};
use serde_json::{json, Value};

use crate::fake_slack::FakeSlack;
use crate::fake_telegram::{Failure, FakeTelegram, User};
use crate::helpers::{alice, eventually, mallory, spawn_app, spawn_app_with_memory, TestApp};

const CHAT: &str = "ops";

async fn start(digest_after: usize) -> (TestApp, Arc<Memory>) {
    let memory = Memory::new(&[CHAT], digest_after);
    let app = spawn_app_with_memory(tempfile::tempdir().unwrap(), "", &memory).await;
    (app, memory)
}

fn pending_body() -> Value {
    json!({"agent": "intern", "tool": "create_contact", "args": {"name": "Bo"}})
}

/// The messages in the chat showing request `short`'s card.
fn copies(memory: &Memory, short: &str) -> Vec<Message> {
    memory
        .messages(CHAT)
        .into_iter()
        .filter(|m| m.card.plain().contains(&format!("id {short}")))
        .collect()
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

/// The audit rows of request `id` for `event`.
async fn audited(app: &TestApp, id: &str, event: &str) -> Vec<Value> {
    app.audit_rows(id)
        .await
        .into_iter()
        .filter(|r| r["event"] == event)
        .collect()
}

#[tokio::test]
async fn a_reply_before_the_post_is_confirmed_reaches_its_request_and_the_message_stays_its_card() {
    let (app, memory) = start(5).await;
    // The card reaches the chat, but its answer is slow, and then lost.
    memory.hold_answers();
    memory.lose_next_answers(1);
    let (id, short) = app.submit_pending(pending_body()).await;
    let card = eventually("the card in the chat", async || {
        copies(&memory, &short).pop()
    })
    .await;

    let answer = memory
        .say(&alice(), CHAT, "deny saw it early", Some(&card.id))
        .await;
    assert!(matches!(answer, Answer::Done(_)), "{answer:?}");
    let got = app.get(&id, 0.0).await.body;
    assert_eq!(got["status"], "rejected");
    assert_eq!(got["reason"], "saw it early");
    assert_eq!(got["decided_by"], "Alice (42)");

    // The message the reply found is the card: it shows the outcome once delivery
    // moves on, and is not posted again.
    memory.release_answers();
    shows(&memory, &card.id, "Denied by Alice (42) on Memory").await;
    assert_eq!(copies(&memory, &short).len(), 1, "posted once");
    let prompted = audited(&app, &id, "prompted").await;
    assert_eq!(prompted.len(), 1, "{prompted:?}");
    assert_eq!(prompted[0]["detail"]["adopted"], true);
    assert_eq!(prompted[0]["detail"]["message"], card.id.as_str());
    assert!(audited(&app, &id, "prompt_reposted").await.is_empty());
}

#[tokio::test]
async fn a_reply_to_a_copy_whose_answer_was_lost_reaches_its_request() {
    let (app, memory) = start(5).await;
    memory.lose_next_answers(1);
    let (id, short) = app.submit_pending(pending_body()).await;
    // The first copy's answer was lost, so gatebot posted the card again.
    let both = eventually("the card posted again", async || {
        let c = copies(&memory, &short);
        (c.len() == 2).then_some(c)
    })
    .await;
    assert_eq!(audited(&app, &id, "prompt_reposted").await.len(), 1);

    memory
        .say(&alice(), CHAT, "deny saw it early", Some(&both[0].id))
        .await;
    let got = app.get(&id, 0.0).await.body;
    assert_eq!(got["status"], "rejected");
    assert_eq!(got["reason"], "saw it early");
    // The copy gatebot knows shows the outcome.
    shows(&memory, &both[1].id, "Denied by Alice (42) on Memory").await;
}

#[tokio::test]
async fn a_press_before_the_post_is_confirmed_keeps_the_pressed_message_up_to_date() {
    let (app, memory) = start(5).await;
    memory.hold_answers();
    memory.lose_next_answers(1);
    let (id, short) = app.submit_pending(pending_body()).await;
    let card = eventually("the card in the chat", async || {
        copies(&memory, &short).pop()
    })
    .await;
    // A stranger's press changes nothing, but shows which message the card is.
    let refused = memory
        .press(
            &mallory(),
            CHAT,
            &card.id,
            &button_data(ButtonKind::Approve, &id),
        )
        .await;
    assert!(
        matches!(refused, Answer::Notice { alert: true, .. }),
        "{refused:?}"
    );
    let answer = memory
        .press(
            &alice(),
            CHAT,
            &card.id,
            &button_data(ButtonKind::Approve, &id),
        )
        .await;
    assert!(matches!(answer, Answer::Done(_)), "{answer:?}");
    memory.release_answers();
    // Without the press, the lost answer would leave this card with live buttons.
    let done = shows(&memory, &card.id, "Approved by Alice (42) on Memory").await;
    assert!(done.card.buttons.is_empty());
    assert_eq!(copies(&memory, &short).len(), 1);
}

#[tokio::test]
async fn a_press_on_a_list_is_not_taken_for_the_card_in_flight() {
    let (app, memory) = start(5).await;
    memory.hold_answers();
    let (id, short) = app.submit_pending(pending_body()).await;
    let card = eventually("the card in the chat", async || {
        copies(&memory, &short).pop()
    })
    .await;
    // /pending lists the request with the same buttons as its card.
    memory.say(&alice(), CHAT, "/pending", None).await;
    let list = eventually("the list in the chat", async || {
        memory.find(CHAT, "pending request")
    })
    .await;
    assert!(list
        .card
        .button_data()
        .contains(&button_data(ButtonKind::Approve, &id).as_str()));
    let answer = memory
        .press(
            &alice(),
            CHAT,
            &list.id,
            &button_data(ButtonKind::Approve, &id),
        )
        .await;
    assert!(matches!(answer, Answer::Done(_)), "{answer:?}");
    assert!(
        audited(&app, &id, "prompted").await.is_empty(),
        "the list was taken for the card"
    );
    // The card's own answer comes, and the card shows the outcome.
    memory.release_answers();
    shows(&memory, &card.id, "Approved by Alice (42) on Memory").await;
    let prompted = audited(&app, &id, "prompted").await;
    assert_eq!(prompted.len(), 1);
    assert_eq!(prompted[0]["detail"]["message"], card.id.as_str());
    assert!(prompted[0]["detail"].get("adopted").is_none());
}

#[tokio::test]
async fn a_digest_reviewed_before_its_post_is_confirmed_opens_its_review() {
    // Every request waiting for a card is a burst: one digest.
    let (app, memory) = start(0).await;
    memory.hold_answers();
    memory.lose_next_answers(1);
    let (_, short) = app.submit_pending(pending_body()).await;
    let digest = eventually("the digest in the chat", async || {
        memory.find(CHAT, "gatebot digest")
    })
    .await;
    let answer = memory.press(&alice(), CHAT, &digest.id, "gb1:v:r").await;
    assert!(matches!(answer, Answer::Done(_)), "{answer:?}");
    memory.release_answers();
    let review = shows(&memory, &digest.id, &format!("id {short}")).await;
    assert!(review.card.plain().contains("request 1 of 1"), "{review:?}");
    assert_eq!(memory.messages(CHAT).len(), 1, "the digest, posted once");
}

#[tokio::test]
async fn a_decision_replying_to_a_message_that_shows_no_request_is_answered() {
    let (app, memory) = start(5).await;
    let (id, _) = app.submit_pending(pending_body()).await;
    memory.say(&alice(), CHAT, "/help", None).await;
    let help = eventually("the help in the chat", async || {
        memory.find(CHAT, "gatebot asks you")
    })
    .await;
    for words in ["approve", "deny too risky", "/deny"] {
        let answer = memory.say(&alice(), CHAT, words, Some(&help.id)).await;
        let Answer::Notice { card, .. } = &answer else {
            panic!("{words}: {answer:?}")
        };
        assert_eq!(card.plain(), UNMATCHED_REPLY, "{words}");
    }
    // Someone who may not decide is told that, and it is audited.
    let refused = memory
        .say(&mallory(), CHAT, "approve", Some(&help.id))
        .await;
    assert!(
        matches!(refused, Answer::Notice { alert: true, .. }),
        "{refused:?}"
    );
    // Chatter stays chatter; an id still decides.
    let chatter = memory.say(&alice(), CHAT, "thanks!", Some(&help.id)).await;
    assert_eq!(chatter, Answer::Nothing);
    assert_eq!(app.get(&id, 0.0).await.body["status"], "pending");
}

const TG_TOKEN: &str = "717171:AAE-unconfirmed-test-token";
const ALICE: User = (42, "Alice");
const TG_CHAT: i64 = 7301;

#[tokio::test]
async fn telegram_a_reply_to_a_prompt_whose_answer_never_came_reaches_its_request() {
    let fake = FakeTelegram::start(TG_TOKEN).await;
    let app = spawn_app(&format!(
        "[telegram]\ntoken = \"{TG_TOKEN}\"\napi_url = \"{}\"\nchats = [{TG_CHAT}]\napprovers = [{}]\n",
        fake.url, ALICE.0
    ))
    .await;
    fake.fail_next_sends(&[Failure::Unanswered]);
    let (id, short) = app.submit_pending(pending_body()).await;
    let prompt = eventually("the prompt stored by Telegram", async || {
        fake.stored_prompts(TG_CHAT, &short).pop()
    })
    .await;
    // Telegram sends the message replied to along: plain text, from the bot.
    fake.say(ALICE, TG_CHAT, "deny saw it early", Some(prompt));
    let got = app.wait_for_status(&id, "rejected").await;
    assert_eq!(got["reason"], "saw it early");
    assert_eq!(got["decided_by"], "Alice (42)");

    // The answer to the post never comes; the prompt replied to is brought up to date.
    fake.release();
    eventually("the prompt edited to the outcome", async || {
        fake.ok_calls("editMessageText").into_iter().find(|p| {
            p["message_id"] == prompt && p["text"].as_str().unwrap().contains("Denied by Alice")
        })
    })
    .await;
    assert_eq!(
        fake.stored_prompts(TG_CHAT, &short),
        [prompt],
        "not posted again"
    );
}

#[tokio::test]
async fn slack_a_thread_reply_to_a_copy_whose_answer_was_lost_reaches_its_request() {
    let slack = FakeSlack::start().await;
    let app = spawn_app(&slack.config()).await;
    slack.lose_next_posts(1);
    let (id, short) = app.submit_pending(pending_body()).await;
    let needle = format!("request {short}");
    let both = eventually("the card posted again", async || {
        let ts = slack.stored("C1", &needle);
        (ts.len() == 2).then_some(ts)
    })
    .await;
    let known = eventually("the second post answered", async || {
        slack
            .calls("chat.postMessage")
            .into_iter()
            .find_map(|c| c.ts.filter(|ts| *ts == both[1]))
    })
    .await;

    // A thread reply under the first copy: gatebot reads its parent back.
    slack
        .send(
            "events_api",
            slack.thread_reply("U1", "deny saw it early", &both[0], "Ev1"),
        )
        .await;
    let got = app.wait_for_status(&id, "rejected").await;
    assert_eq!(got["reason"], "saw it early");
    let reads = slack.calls("conversations.replies");
    assert_eq!(reads.len(), 1);
    assert_eq!(reads[0].params["ts"], both[0].as_str());
    assert_eq!(reads[0].params["channel"], "C1");
    eventually("the known copy updated to the outcome", async || {
        slack.calls("chat.update").into_iter().find(|c| {
            c.params["ts"] == known.as_str()
                && c.params["text"].as_str().unwrap().contains("Denied")
        })
    })
    .await;
}
