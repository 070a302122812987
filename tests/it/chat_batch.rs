//! Batches in chat, through the in-memory platform: "approve all from an agent" and
//! "deny all" offered by `/pending` and typed, each answered with a confirmation that
//! lists what it will decide; confirming decides exactly those (one vote each under each
//! request's rule, never a critical one approved), once, and says how many of each
//! outcome.

use std::sync::Arc;

use gatebot::chat::card::Card;
use gatebot::chat::exchange::{Actor, Answer};
use gatebot::chat::memory::{Memory, Message};
use serde_json::{json, Value};

use crate::helpers::{alice, mallory, spawn_app_with_memory, TestApp};

const CHAT: &str = "ops";

async fn start(extra: &str) -> (TestApp, Arc<Memory>) {
    // No digest: these tests press the buttons of /pending and of confirmations.
    let memory = Memory::new(&[CHAT], 50);
    let app = spawn_app_with_memory(tempfile::tempdir().unwrap(), extra, &memory).await;
    (app, memory)
}

/// The intern's requests: two of low risk, one of high, one critical.
async fn intern_requests(app: &TestApp) -> (Vec<String>, String) {
    let mut ids = Vec::new();
    for (tool, args, risk) in [
        ("query_org_data", json!({"q": "a"}), "low"),
        ("query_org_data", json!({"q": "b"}), "low"),
        ("create_contact", json!({"name": "Bo"}), "high"),
    ] {
        let (id, _) = app
            .submit_pending(json!({"agent": "intern", "tool": tool, "args": args}))
            .await;
        assert_eq!(
            app.get(&id, 0.0).await.body["risk"]["score"],
            risk,
            "{tool}"
        );
        ids.push(id);
    }
    let (critical, _) = app
        .submit_pending(json!({"agent": "intern", "tool": "Bash", "args": {"command": "rm -rf /"}}))
        .await;
    assert_eq!(
        app.get(&critical, 0.0).await.body["risk"]["score"],
        "critical"
    );
    (ids, critical)
}

/// The message that shows `card` (the latest, if several do): delivery posts cards to
/// the chat meanwhile, so the last message need not be the answer.
fn shown(memory: &Memory, card: &Card) -> Message {
    memory
        .messages(CHAT)
        .into_iter()
        .rev()
        .find(|m| m.card == *card)
        .expect("the answer is posted")
}

/// The card of an answer that is one.
fn card_of(answer: &Answer) -> &Card {
    match answer {
        Answer::Card(c) => c,
        other => panic!("expected a card, got {other:?}"),
    }
}

/// The data of the button whose label starts with `label` in `m`.
fn button(m: &Message, label: &str) -> String {
    m.card
        .buttons
        .iter()
        .flatten()
        .find(|b| b.label.starts_with(label))
        .unwrap_or_else(|| panic!("no button {label:?} in {:?}", m.card.buttons))
        .data
        .clone()
}

async fn status(app: &TestApp, id: &str) -> Value {
    app.get(id, 0.0).await.body["status"].clone()
}

#[tokio::test]
async fn approve_all_from_pending_confirms_first_and_never_approves_a_critical_request() {
    let (app, memory) = start("").await;
    let (ids, critical) = intern_requests(&app).await;
    let Answer::Card(list) = memory.say(&alice(), CHAT, "/pending", None).await else {
        panic!("/pending answers with a card")
    };
    let text = list.plain();
    assert!(text.contains("Decide them together below"), "{text}");
    let pending = shown(&memory, &list);
    let labels: Vec<&str> = list
        .buttons
        .iter()
        .flatten()
        .map(|b| b.label.as_str())
        .collect();
    assert!(
        labels.contains(&"✅ Approve 3 from intern (up to high risk)"),
        "{labels:?}"
    );
    assert!(labels.contains(&"❌ Deny all 4 from intern"), "{labels:?}");

    // Pressing the offer decides nothing: it answers with the confirmation.
    let offered = memory
        .press(
            &alice(),
            CHAT,
            &pending.id,
            &button(&pending, "✅ Approve 3"),
        )
        .await;
    let Answer::Card(card) = &offered else {
        panic!("a confirmation: {offered:?}")
    };
    let text = card.plain();
    for part in [
        "Approve 3 requests from intern?",
        "query_org_data, low risk",
        "create_contact, high risk",
        "Left out: 1 request of critical risk",
        "Confirm within 15 min.",
    ] {
        assert!(text.contains(part), "{part:?} in\n{text}");
    }
    for id in ids.iter().chain([&critical]) {
        assert_eq!(status(&app, id).await, "pending");
    }
    let confirmation = shown(&memory, card);
    let confirm = button(&confirmation, "✅ Approve 3");

    // Someone who is no approver: refused, audited, nothing decided.
    let refused = memory
        .press(&mallory(), CHAT, &confirmation.id, &confirm)
        .await;
    assert!(
        matches!(&refused, Answer::Notice { alert: true, .. })
            && refused.text().contains("not allowed"),
        "{refused:?}"
    );
    assert_eq!(status(&app, &ids[0]).await, "pending");
    // The same button pressed in another chat: refused.
    let elsewhere = memory.press(&alice(), "elsewhere", "1", &confirm).await;
    assert!(elsewhere.text().contains("another chat"), "{elsewhere:?}");
    assert_eq!(status(&app, &ids[0]).await, "pending");

    let done = memory
        .press(&alice(), CHAT, &confirmation.id, &confirm)
        .await;
    assert_eq!(
        done.text(),
        "✅ Batch of intern: Approved 3, 1 left out: critical risk.",
        "{done:?}"
    );
    for id in &ids {
        let r = app.get(id, 0.0).await.body;
        assert_eq!(
            (
                r["status"].as_str(),
                r["decided_by"].as_str(),
                r["decided_via"].as_str()
            ),
            (Some("approved"), Some("Alice (42)"), Some("memory"))
        );
    }
    assert_eq!(status(&app, &critical).await, "pending");

    // A second tap decides nothing and says what was done.
    let again = memory
        .press(&alice(), CHAT, &confirmation.id, &confirm)
        .await;
    assert!(
        matches!(&again, Answer::Notice { alert: false, .. })
            && again
                .text()
                .contains("Already done by Alice (42): Approved 3, 1 left out: critical risk."),
        "{again:?}"
    );
    assert_eq!(status(&app, &critical).await, "pending");
    // Cancelling what was done changes nothing either.
    let cancel = button(&confirmation, "✖ Cancel");
    let late = memory
        .press(&alice(), CHAT, &confirmation.id, &cancel)
        .await;
    assert!(late.text().contains("Already done"), "{late:?}");
    app.stop().await;
}

#[tokio::test]
async fn a_typed_approval_takes_a_risk_cap_and_a_cancel_decides_nothing() {
    let (app, memory) = start("").await;
    let (ids, _) = intern_requests(&app).await;
    let said = memory
        .say(&alice(), CHAT, "/approve_all intern low", None)
        .await;
    let text = card_of(&said).plain();
    assert!(text.contains("Approve 2 requests from intern?"), "{text}");
    assert!(
        text.contains("Not in this batch: 1 request above low risk."),
        "{text}"
    );
    let confirmation = shown(&memory, card_of(&said));
    let cancelled = memory
        .press(
            &alice(),
            CHAT,
            &confirmation.id,
            &button(&confirmation, "✖ Cancel"),
        )
        .await;
    assert_eq!(cancelled.text(), "Cancelled: nothing was decided.");
    let after = memory
        .press(
            &alice(),
            CHAT,
            &confirmation.id,
            &button(&confirmation, "✅ Approve 2"),
        )
        .await;
    assert!(
        after.text().contains("was cancelled by Alice (42)"),
        "{after:?}"
    );
    for id in &ids {
        assert_eq!(status(&app, id).await, "pending");
    }
    // Words that are no risk, a critical cap, an unknown agent, nothing pending.
    let bad = memory
        .say(&alice(), CHAT, "/approve_all intern huge", None)
        .await;
    assert!(bad.text().contains("low, medium or high"), "{bad:?}");
    let critical = memory
        .say(&alice(), CHAT, "/approve_all intern critical", None)
        .await;
    assert!(
        critical.text().contains("never approved in a batch"),
        "{critical:?}"
    );
    let nobody = memory.say(&alice(), CHAT, "/deny_all mailer", None).await;
    assert_eq!(
        nobody.text(),
        "Nothing to deny of mailer: no pending request."
    );
    let unknown = memory.say(&alice(), CHAT, "/deny_all nosuch", None).await;
    assert!(
        unknown.text().contains("No agent `nosuch` in the config"),
        "{unknown:?}"
    );
    let stranger = memory
        .say(&mallory(), CHAT, "/approve_all intern", None)
        .await;
    assert!(stranger.text().contains("not allowed"), "{stranger:?}");
    app.stop().await;
}

#[tokio::test]
async fn a_denial_covers_exactly_what_was_shown_critical_included_with_one_reason() {
    let (app, memory) = start("").await;
    let (ids, critical) = intern_requests(&app).await;
    let said = memory
        .say(&alice(), CHAT, "/deny_all intern frozen until Monday", None)
        .await;
    let text = card_of(&said).plain();
    assert!(text.contains("Deny 4 requests from intern?"), "{text}");
    assert!(
        text.contains("The agent reads: frozen until Monday"),
        "{text}"
    );
    let confirmation = shown(&memory, card_of(&said));
    // A request that arrives after the confirmation was shown is not in it.
    let (late, _) = app
        .submit_pending(
            json!({"agent": "intern", "tool": "create_contact", "args": {"name": "Late"}}),
        )
        .await;
    let done = memory
        .press(
            &alice(),
            CHAT,
            &confirmation.id,
            &button(&confirmation, "❌ Deny 4"),
        )
        .await;
    assert_eq!(done.text(), "❌ Batch of intern: Denied 4.", "{done:?}");
    for id in ids.iter().chain([&critical]) {
        let r = app.get(id, 0.0).await.body;
        assert_eq!(
            (r["status"].as_str(), r["reason"].as_str()),
            (Some("rejected"), Some("frozen until Monday")),
            "{id}"
        );
    }
    assert_eq!(status(&app, &late).await, "pending");
    app.stop().await;
}

#[tokio::test]
async fn a_denial_without_a_reason_asks_why_and_the_reply_is_the_reason() {
    let (app, memory) = start("").await;
    let (ids, critical) = intern_requests(&app).await;
    let list = memory.say(&alice(), CHAT, "/pending", None).await;
    let pending = shown(&memory, card_of(&list));
    let offered = memory
        .press(
            &alice(),
            CHAT,
            &pending.id,
            &button(&pending, "❌ Deny all 4"),
        )
        .await;
    let confirmation = shown(&memory, card_of(&offered));
    assert!(
        confirmation.card.plain().contains("❌ Deny 4 asks why"),
        "{}",
        confirmation.card.plain()
    );
    let asked = memory
        .press(
            &alice(),
            CHAT,
            &confirmation.id,
            &button(&confirmation, "❌ Deny 4"),
        )
        .await;
    let Answer::Ask(q) = &asked else {
        panic!("a question: {asked:?}")
    };
    let skip = q.skip.clone().expect("a skip button");
    assert_eq!(skip.label, "🚫 Deny 4 without reason");
    let question = memory
        .messages(CHAT)
        .into_iter()
        .find(|m| m.reply_to.as_deref() == Some(confirmation.id.as_str()))
        .expect("the question replies to the confirmation");
    assert!(
        question
            .card
            .plain()
            .starts_with("Alice, why deny these 4 requests from intern?"),
        "{}",
        question.card.plain()
    );
    // Asking decided nothing.
    assert_eq!(status(&app, &critical).await, "pending");
    // Someone else's reply to the question: refused.
    let refused = memory.say(&mallory(), CHAT, "no", Some(&question.id)).await;
    assert!(refused.text().contains("not allowed"), "{refused:?}");
    assert_eq!(status(&app, &critical).await, "pending");
    let done = memory
        .say(&alice(), CHAT, "cleaning up", Some(&question.id))
        .await;
    assert_eq!(done.text(), "❌ Batch of intern: Denied 4.", "{done:?}");
    for id in ids.iter().chain([&critical]) {
        assert_eq!(app.get(id, 0.0).await.body["reason"], "cleaning up", "{id}");
    }
    // The skip button after it was done: harmless.
    let again = memory
        .press(&alice(), CHAT, &confirmation.id, &skip.data)
        .await;
    assert!(again.text().contains("Already done"), "{again:?}");
    app.stop().await;
}

#[tokio::test]
async fn an_expired_confirmation_decides_nothing() {
    let (app, memory) = start("").await;
    let (ids, _) = intern_requests(&app).await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let batch = app
        .engine
        .open_batch(gatebot::engine::NewBatch {
            platform: "memory".into(),
            chat: CHAT.into(),
            agent: "intern".into(),
            approve: true,
            reason: None,
            requests: ids.clone(),
            left_out: 0,
            asked_by: "Alice (42)".into(),
            now: now - 3_600_000,
            expires_at: now - 1,
        })
        .await
        .unwrap();
    let expired = memory
        .press(&alice(), CHAT, "1", &format!("gb1:Bc:{}", batch.id))
        .await;
    assert!(
        matches!(&expired, Answer::Notice { alert: true, .. })
            && expired
                .text()
                .contains("This confirmation expired (a batch is confirmed within 15 min)"),
        "{expired:?}"
    );
    for id in &ids {
        assert_eq!(status(&app, id).await, "pending");
    }
    // A batch gatebot never made (or forgot): nothing either.
    let unknown = memory
        .press(&alice(), CHAT, "1", "gb1:Bc:01HZZZZZZZZZZZZZZZZZZZZZZZ")
        .await;
    assert!(unknown.text().contains("no longer knows"), "{unknown:?}");
    app.stop().await;
}

const TEAM: &str = r#"
[people.alice]
unix = "alice"

[people.bob]
unix = "bob"

[people.dave]
unix = "dave"

[groups.oncall]
people = ["alice", "bob"]

[[approval_rules]]
name = "mail"
tool = "send_email"
ask = "oncall"
approvals = 2
"#;

fn person(id: &str, name: &str) -> Actor {
    Actor {
        id: id.into(),
        name: name.into(),
        approver: true,
        person: Some(name.to_ascii_lowercase()),
    }
}

/// `who` approves all of the mailer's requests from a typed command, confirmed.
async fn approve_all(memory: &Memory, who: &Actor) -> Answer {
    let said = memory.say(who, CHAT, "/approve_all mailer", None).await;
    let confirmation = shown(memory, card_of(&said));
    let confirm = button(&confirmation, "✅ Approve");
    memory.press(who, CHAT, &confirmation.id, &confirm).await
}

#[tokio::test]
async fn under_a_two_person_rule_a_batch_is_one_vote_per_request() {
    let (app, memory) = start(TEAM).await;
    let mut ids = Vec::new();
    for n in 0..3 {
        let (id, _) = app
            .submit_pending(json!({"agent": "mailer", "tool": "send_email", "args": {"n": n}}))
            .await;
        ids.push(id);
    }
    let (alice, bob, dave) = (
        person("42", "Alice"),
        person("43", "Bob"),
        person("44", "Dave"),
    );
    let said = memory.say(&alice, CHAT, "/approve_all mailer", None).await;
    let text = card_of(&said).plain();
    assert!(
        text.contains(
            "All of these need more than one person's approval: your confirmation is one vote on each."
        ),
        "{text}"
    );
    let first = approve_all(&memory, &alice).await;
    let said = first.text();
    assert!(
        said.starts_with("✅ Batch of mailer: Approved 0, 3 still need more approvals."),
        "{said}"
    );
    assert!(
        said.contains("1 of 2 approvals: alice ✓. Waiting for bob."),
        "{said}"
    );
    for id in &ids {
        assert_eq!(status(&app, id).await, "pending");
    }
    // Someone the rule does not ask: each request skipped and counted, none decided.
    let refused = approve_all(&memory, &dave).await;
    assert!(
        refused
            .text()
            .starts_with("✅ Batch of mailer: Approved 0, 3 skipped: not yours to answer."),
        "{}",
        refused.text()
    );
    assert!(
        refused.text().contains("its approval rule \"mail\" asks"),
        "{}",
        refused.text()
    );
    // alice again: her first votes stand.
    let twice = approve_all(&memory, &alice).await;
    assert!(
        twice.text().contains("3 skipped: you had voted"),
        "{}",
        twice.text()
    );
    // bob's batch settles them.
    let second = approve_all(&memory, &bob).await;
    assert_eq!(
        second.text(),
        "✅ Batch of mailer: Approved 3.",
        "{second:?}"
    );
    for id in &ids {
        let r = app.get(id, 0.0).await.body;
        assert_eq!(
            (r["status"].as_str(), r["decided_by"].as_str()),
            (Some("approved"), Some("bob"))
        );
    }
    app.stop().await;
}

/// On Telegram: the command menu lists the batch commands; `/deny_all` is answered with
/// the confirmation as a reply; its ❌ asks why by a message to reply to, and puts
/// "🚫 Deny 2 without reason" in place of the pressed button; the reply denies both.
#[tokio::test]
async fn on_telegram_a_batch_denial_asks_why_and_the_reply_denies_them() {
    use crate::fake_telegram::{FakeTelegram, User};
    use crate::helpers::{eventually, spawn_app};
    const TOKEN: &str = "424242:AAE-fake-secret-token-for-batches";
    const ALICE: User = (42, "Alice");
    const CHAT: i64 = 7001;
    let fake = FakeTelegram::start(TOKEN).await;
    let app = spawn_app(&format!(
        "[telegram]\ntoken = \"{TOKEN}\"\napi_url = \"{}\"\nchats = [{CHAT}]\napprovers = [{}]\n",
        fake.url, ALICE.0
    ))
    .await;
    let mut ids = Vec::new();
    for n in 0..2 {
        let (id, _) = app
            .submit_pending(json!({"agent": "intern", "tool": "create_contact", "args": {"n": n}}))
            .await;
        ids.push(id);
    }
    let menu = eventually("the command menu", async || {
        fake.ok_calls("setMyCommands").pop()
    })
    .await;
    for name in ["approve_all", "deny_all"] {
        assert!(
            menu["commands"]
                .to_string()
                .contains(&format!("\"{name}\"")),
            "{menu}"
        );
    }
    // The message a reply of the bot's containing `needle` is, and its params.
    let sent = |needle: &'static str| {
        let fake = &fake;
        async move {
            eventually(&format!("a message containing {needle:?}"), async || {
                fake.calls("sendMessage").into_iter().find_map(|c| {
                    let shown = c.ok
                        && c.params["chat_id"] == json!(CHAT)
                        && c.params["text"].as_str()?.contains(needle);
                    shown.then(|| (c.message_id.unwrap(), c.params))
                })
            })
            .await
        }
    };
    fake.say(ALICE, CHAT, "/deny_all intern", None);
    let (confirmation, params) = sent("Deny 2 requests from").await;
    let data: Vec<String> = params["reply_markup"]["inline_keyboard"][0]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["callback_data"].as_str().unwrap().to_string())
        .collect();
    assert!(data[0].starts_with("gb1:Bc:") && data[1].starts_with("gb1:Bx:"));
    fake.press(ALICE, CHAT, confirmation, &data[0]);
    let (question, _) = sent("why deny these 2 requests from").await;
    let swapped = eventually("the skip button in place of ❌", async || {
        fake.ok_calls("editMessageReplyMarkup")
            .into_iter()
            .find(|p| p["message_id"] == json!(confirmation))
    })
    .await;
    assert_eq!(
        swapped["reply_markup"]["inline_keyboard"][0][0]["text"],
        "🚫 Deny 2 without reason"
    );
    for id in &ids {
        assert_eq!(status(&app, id).await, "pending");
    }
    fake.say(ALICE, CHAT, "not this week", Some(question));
    sent("Batch of").await;
    let (_, done) = sent("Denied 2.").await;
    assert!(
        done["text"]
            .as_str()
            .unwrap()
            .contains("<code>intern</code>"),
        "{done}"
    );
    for id in &ids {
        let r = app.wait_for_status(id, "rejected").await;
        assert_eq!(r["reason"], "not this week");
    }
    app.stop().await;
}

/// A digest offers the batch for each agent with several requests in it; the
/// confirmation lists every pending request of the agent as it is when pressed.
#[tokio::test]
async fn a_digest_offers_the_batch_of_each_agent_with_several() {
    // The requests wait before the platform runs: one digest for them.
    let app = crate::helpers::spawn_app("").await;
    let (ids, critical) = intern_requests(&app).await;
    let dir = app.stop().await;
    let memory = Memory::new(&[CHAT], 2);
    let app = spawn_app_with_memory(dir, "", &memory).await;
    let digest = crate::helpers::eventually("a digest offering the batch", async || {
        memory.messages(CHAT).into_iter().find(|m| {
            m.card.plain().contains("gatebot digest")
                && m.card
                    .buttons
                    .iter()
                    .flatten()
                    .any(|b| b.label.starts_with("❌ Deny all"))
        })
    })
    .await;
    let offered = memory
        .press(&alice(), CHAT, &digest.id, &button(&digest, "❌ Deny all"))
        .await;
    let text = card_of(&offered).plain();
    assert!(text.contains("Deny 4 requests from intern?"), "{text}");
    let confirmation = shown(&memory, card_of(&offered));
    let asked = memory
        .press(
            &alice(),
            CHAT,
            &confirmation.id,
            &button(&confirmation, "❌ Deny 4"),
        )
        .await;
    let Answer::Ask(q) = asked else {
        panic!("a question: {asked:?}")
    };
    let skip = q.skip.expect("a skip button");
    let done = memory
        .press(&alice(), CHAT, &confirmation.id, &skip.data)
        .await;
    assert_eq!(done.text(), "❌ Batch of intern: Denied 4.", "{done:?}");
    for id in ids.iter().chain([&critical]) {
        let r = app.get(id, 0.0).await.body;
        assert_eq!(
            (r["status"].as_str(), r["reason"].as_str()),
            (Some("rejected"), None),
            "{id}"
        );
    }
    app.stop().await;
}
