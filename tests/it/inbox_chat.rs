//! The inbox in chat: tasks written to gatebot, their cards in the task's thread,
//! questions answered there, through the in-memory platform (the shared mechanism), the
//! fake Telegram and the fake Slack.

use std::sync::Arc;

use gatebot::chat::card::Block;
use gatebot::chat::exchange::Answer;
use gatebot::chat::memory::{Memory, Message};
use serde_json::{json, Value};

use crate::fake_slack::{self, FakeSlack};
use crate::fake_telegram::{FakeTelegram, User};
use crate::helpers::{alice, eventually, mallory, spawn_app, spawn_app_with_memory, TestApp};
use crate::inbox::{claim, report, task, wait_status, with_inbox};

const OPS: &str = "ops";
/// A chat that is no destination: gatebot writes there only what was written there.
const DM: &str = "alice-dm";

async fn start_memory() -> (TestApp, Arc<Memory>) {
    let memory = Memory::new(&[OPS], 5);
    let app =
        spawn_app_with_memory(tempfile::tempdir().unwrap(), &with_inbox("", ""), &memory).await;
    (app, memory)
}

/// The message in `chat` whose card shows `needle`, once there is one.
async fn message_with(memory: &Memory, chat: &str, needle: &str) -> Message {
    eventually(
        &format!("a message with {needle:?} in {chat}"),
        async || memory.find(chat, needle),
    )
    .await
}

/// Message `id` once its text shows `needle`.
async fn shows(memory: &Memory, chat: &str, id: &str, needle: &str) -> Message {
    eventually(&format!("message {id} showing {needle:?}"), async || {
        memory
            .message(chat, id)
            .filter(|m| m.card.plain().contains(needle))
    })
    .await
}

fn labels(m: &Message) -> Vec<String> {
    m.card
        .buttons
        .iter()
        .flatten()
        .map(|b| b.label.clone())
        .collect()
}

fn data_of(m: &Message, label: &str) -> String {
    m.card
        .buttons
        .iter()
        .flatten()
        .find(|b| b.label == label)
        .unwrap_or_else(|| panic!("no {label} button on {:?}", m.card))
        .data
        .clone()
}

/// The only task, once there is one.
async fn the_task(app: &TestApp) -> Value {
    eventually("a task", async || {
        let all = app.owner.get("/v1/tasks?all=true").await.unwrap().body;
        all["tasks"].as_array().unwrap().first().cloned()
    })
    .await
}

#[tokio::test]
async fn an_approvers_message_becomes_a_task_whose_card_follows_it_to_done() {
    let memory = Memory::new(&[OPS, DM], 5);
    let app =
        spawn_app_with_memory(tempfile::tempdir().unwrap(), &with_inbox("", ""), &memory).await;
    let (asked, answer) = memory
        .write(
            &alice(),
            DM,
            "research what our three competitors charge for the Pro tier",
        )
        .await;
    assert_eq!(answer, Answer::Nothing, "the card is the answer");
    let t = the_task(&app).await;
    assert_eq!(t["created_by"], "Alice (42)");
    assert_eq!(t["created_via"], "memory");
    let short = t["short_id"].as_str().unwrap().to_string();
    let card = message_with(&memory, DM, &format!("id {short}")).await;
    assert_eq!(
        card.reply_to.as_deref(),
        Some(asked.as_str()),
        "in its thread"
    );
    let text = card.card.plain();
    for part in [
        "Intent: research",
        "Agent: researcher",
        "Status: queued",
        "research what our three competitors charge",
    ] {
        assert!(text.contains(part), "{part} in {text}");
    }
    assert_eq!(labels(&card), ["✖️ Cancel"]);

    let c = claim(&app, "researcher", 0.0).await;
    let id = c["id"].as_str().unwrap();
    shows(&memory, DM, &card.id, "Status: running").await;
    report(
        &app,
        "researcher",
        id,
        "progress",
        json!({"lease": c["lease"], "text": "reading pricing pages"}),
    )
    .await;
    shows(&memory, DM, &card.id, "reading pricing pages").await;
    report(
        &app,
        "researcher",
        id,
        "complete",
        json!({"lease": c["lease"], "result": "A: $20, B: $25", "cost_usd": 0.05}),
    )
    .await;
    let done = shows(&memory, DM, &card.id, "Completed by researcher").await;
    assert!(done.card.plain().contains("A: $20, B: $25"));
    assert!(done.card.plain().contains("cost $0.05"));
    assert!(done.card.buttons.is_empty());
    // A task handed over from the CLI has no home: every destination shows it; the one
    // written in the DM was shown there only.
    let res = app
        .owner
        .post("/v1/tasks", &json!({"text": "say hello to the team"}))
        .await
        .unwrap();
    let cli_short = res.body["short_id"].as_str().unwrap();
    message_with(&memory, OPS, &format!("id {cli_short}")).await;
    assert!(
        memory.find(OPS, &short).is_none(),
        "{:?}",
        memory.messages(OPS)
    );
    app.stop().await;
}

#[tokio::test]
async fn a_strangers_task_is_refused_audited_and_not_stored() {
    let (app, memory) = start_memory().await;
    let (_, refused) = memory.write(&mallory(), OPS, "research pricing").await;
    assert!(
        matches!(&refused, Answer::Notice { alert: true, .. })
            && refused.text().contains("not allowed"),
        "{refused:?}"
    );
    let refused = memory
        .say(&mallory(), OPS, "/task research pricing", None)
        .await;
    assert!(refused.text().contains("not allowed"), "{refused:?}");
    let all = app.owner.get("/v1/tasks?all=true").await.unwrap().body;
    assert_eq!(all["tasks"], json!([]));
    let audit = app.owner.get("/v1/audit").await.unwrap().body;
    let attempts: Vec<&Value> = audit["audit"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["event"] == "unauthorised_attempt")
        .collect();
    // The second attempt within the minute is counted into the first's row when its
    // window closes (issue 10's coalescing), not written as a row of its own.
    assert_eq!(attempts.len(), 1, "{audit}");
    assert_eq!(attempts[0]["detail"]["attempted"], "command create task");
    assert_eq!(attempts[0]["detail"]["user_id"], "66");
    // Chatter that is not written to gatebot stays chatter, even the owner's.
    assert_eq!(
        memory.say(&alice(), OPS, "lunch?", None).await,
        Answer::Nothing
    );
    app.stop().await;
}

#[tokio::test]
async fn a_level_one_task_is_queued_or_rejected_from_its_card() {
    let (app, memory) = start_memory().await;
    let answer = memory
        .say(
            &alice(),
            OPS,
            "/task fix the flaky test in src/store/chat.rs",
            None,
        )
        .await;
    // /task from `say` has no message to thread under: a note, and the card top-level.
    assert!(answer.text().contains("Its card follows"), "{answer:?}");
    let t = the_task(&app).await;
    let card = message_with(
        &memory,
        OPS,
        &format!("id {}", t["short_id"].as_str().unwrap()),
    )
    .await;
    assert!(card.card.plain().contains("Status: waiting for your go"));
    assert_eq!(labels(&card), ["▶️ Queue", "🚫 Reject"]);
    let refused = memory
        .press(&mallory(), OPS, &card.id, &data_of(&card, "▶️ Queue"))
        .await;
    assert!(refused.text().contains("not allowed"), "{refused:?}");
    let done = memory
        .press(&alice(), OPS, &card.id, &data_of(&card, "▶️ Queue"))
        .await;
    assert!(done.text().contains("Queued task"), "{done:?}");
    let card = shows(&memory, OPS, &card.id, "Status: queued").await;
    assert_eq!(labels(&card), ["✖️ Cancel"]);
    // A second press on the old button is told why nothing happened.
    let again = memory
        .press(
            &alice(),
            OPS,
            &card.id,
            &format!("gb1:tq:{}", t["id"].as_str().unwrap()),
        )
        .await;
    assert!(
        again.text().contains("is queued, so it cannot be queued"),
        "{again:?}"
    );
    // Cancel, then Retry, from the card.
    memory
        .press(&alice(), OPS, &card.id, &data_of(&card, "✖️ Cancel"))
        .await;
    let card = shows(&memory, OPS, &card.id, "Cancelled by Alice (42)").await;
    assert_eq!(labels(&card), ["🔁 Retry"]);
    memory
        .press(&alice(), OPS, &card.id, &data_of(&card, "🔁 Retry"))
        .await;
    shows(&memory, OPS, &card.id, "Status: queued").await;
    // /task without words says what to write; nothing is stored.
    let note = memory.say(&alice(), OPS, "/task", None).await;
    assert!(
        note.text().contains("Write the task after /task"),
        "{note:?}"
    );
    // /tasks lists it.
    let Answer::Card(list) = memory.say(&alice(), OPS, "/tasks", None).await else {
        panic!("/tasks answers with a card")
    };
    assert!(
        list.plain().contains(t["short_id"].as_str().unwrap()),
        "{}",
        list.plain()
    );
    app.stop().await;
}

#[tokio::test]
async fn a_clarify_question_is_asked_in_the_thread_and_a_choice_answers_it() {
    let (app, memory) = start_memory().await;
    memory.write(&alice(), OPS, "refactor everything").await;
    let t = the_task(&app).await;
    assert_eq!(t["status"], "waiting");
    let short = t["short_id"].as_str().unwrap().to_string();
    let card = message_with(&memory, OPS, &format!("id {short}")).await;
    let question = message_with(&memory, OPS, "gatebot asks before the task goes on").await;
    assert_eq!(
        question.reply_to.as_deref(),
        Some(card.id.as_str()),
        "under the task's card"
    );
    assert!(question.card.plain().contains("Which code should change?"));
    assert_eq!(
        labels(&question),
        [
            "Plan first: propose the changes, edit nothing",
            "Go ahead across the whole codebase",
            "✍️ Answer"
        ]
    );
    let refused = memory
        .press(&mallory(), OPS, &question.id, &labels_data(&question, 0))
        .await;
    assert!(refused.text().contains("not allowed"));
    memory
        .press(&alice(), OPS, &question.id, &labels_data(&question, 0))
        .await;
    shows(&memory, OPS, &question.id, "Answered by Alice (42)").await;
    let t = wait_status(&app, &short, "pending").await;
    assert_eq!(
        t["clarification"],
        "Plan first: propose the changes, edit nothing"
    );
    let card = shows(&memory, OPS, &card.id, "Status: waiting for your go").await;
    assert_eq!(labels(&card), ["▶️ Queue", "🚫 Reject"]);
    app.stop().await;
}

fn labels_data(m: &Message, n: usize) -> String {
    m.card.buttons.iter().flatten().nth(n).unwrap().data.clone()
}

#[tokio::test]
async fn an_agents_questions_are_answered_by_a_reply_and_reach_it_on_its_next_claim() {
    let (app, memory) = start_memory().await;
    let (started, _) = memory.write(&alice(), OPS, "say hello to the team").await;
    let t = the_task(&app).await;
    let id = t["id"].as_str().unwrap().to_string();
    let card = message_with(
        &memory,
        OPS,
        &format!("id {}", t["short_id"].as_str().unwrap()),
    )
    .await;
    let c = claim(&app, "claude-code", 0.0).await;
    report(
        &app,
        "claude-code",
        &id,
        "needs-input",
        json!({"lease": c["lease"], "questions": ["Which team?", "In <b>which</b> channel?"], "session_id": "s-7"}),
    )
    .await;
    let question = message_with(&memory, OPS, "The agent asks").await;
    assert_eq!(question.reply_to.as_deref(), Some(card.id.as_str()));
    // The agent's words are data: in a code block, as written.
    let Some(Block::Code(code)) = question
        .card
        .blocks
        .iter()
        .find(|b| matches!(b, Block::Code(_)))
    else {
        panic!("a code block")
    };
    assert_eq!(code.body, "1. Which team?\n2. In <b>which</b> channel?");
    shows(&memory, OPS, &card.id, "Status: waiting for your answer").await;
    // A stranger's reply answers nothing.
    let refused = memory
        .say(&mallory(), OPS, "the sales team", Some(&question.id))
        .await;
    assert!(refused.text().contains("not allowed"));
    let ok = memory
        .say(&alice(), OPS, "ops, in #general", Some(&question.id))
        .await;
    assert!(ok.text().contains("Answer sent"), "{ok:?}");
    shows(&memory, OPS, &question.id, "Answered by Alice (42)").await;
    let c = claim(&app, "claude-code", 0.0).await;
    assert_eq!(c["input"], "ops, in #general");
    assert_eq!(c["session_id"], "s-7");
    // A reply to the task's card when it asks nothing is never dropped: it becomes a
    // task of its own, for the same agent, and the answer says so.
    let note = memory
        .say(&alice(), OPS, "also post it in #sales", Some(&card.id))
        .await;
    assert!(
        note.text()
            .contains("asks nothing now, so your words became a task of their own"),
        "{note:?}"
    );
    let list = app.owner.get("/v1/tasks?all=true").await.unwrap().body;
    let follow = list["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| {
            t["text"]
                .as_str()
                .unwrap_or("")
                .starts_with("also post it in #sales")
        })
        .unwrap_or_else(|| panic!("no follow-up task in {list}"))
        .clone();
    assert_eq!(follow["agent"], "claude-code", "{follow}");
    // So does a reply to one's own message that started the task.
    let note = memory
        .say(&alice(), OPS, "and thank them", Some(&started))
        .await;
    assert!(
        note.text()
            .contains("asks nothing now, so your words became a task of their own"),
        "{note:?}"
    );
    assert!(
        follow["text"].as_str().unwrap().contains(&format!(
            "(A follow-up to task {}",
            t["short_id"].as_str().unwrap()
        )),
        "{follow}"
    );
    app.stop().await;
}

#[tokio::test]
async fn the_answer_button_asks_for_the_text_and_the_reply_answers() {
    let (app, memory) = start_memory().await;
    memory.write(&alice(), OPS, "???").await;
    let t = the_task(&app).await;
    let question = message_with(&memory, OPS, "I could not make out a task").await;
    let answer = memory
        .press(
            &alice(),
            OPS,
            &question.id,
            &data_of(&question, "✍️ Answer"),
        )
        .await;
    let Answer::Ask(q) = &answer else {
        panic!("{answer:?}")
    };
    assert_eq!(q.title, "Answer the task");
    let asked = memory
        .messages(OPS)
        .into_iter()
        .find(|m| m.card.plain().starts_with("Alice, your answer for task"))
        .expect("the question message");
    memory
        .say(&alice(), OPS, "say hello to the team", Some(&asked.id))
        .await;
    let t = wait_status(&app, t["id"].as_str().unwrap(), "queued").await;
    assert_eq!(t["clarification"], "say hello to the team");
    app.stop().await;
}

#[tokio::test]
async fn a_request_made_for_a_task_is_prompted_under_the_tasks_card() {
    let (app, memory) = start_memory().await;
    memory.write(&alice(), OPS, "say hello to the team").await;
    let t = the_task(&app).await;
    let card = message_with(
        &memory,
        OPS,
        &format!("id {}", t["short_id"].as_str().unwrap()),
    )
    .await;
    let (_, short) = app
        .submit_pending(json!({"agent": "claude-code", "tool": "send_email", "args": {"to": "team@example.com"}, "task_id": t["id"]}))
        .await;
    let prompt = message_with(&memory, OPS, &format!("id {short}")).await;
    assert_eq!(prompt.reply_to.as_deref(), Some(card.id.as_str()));
    assert!(
        prompt.card.plain().contains(&format!(
            "Task: {} {}",
            t["short_id"].as_str().unwrap(),
            t["summary"].as_str().unwrap()
        )),
        "{}",
        prompt.card.plain()
    );
    app.stop().await;
}

// ---- Telegram --------------------------------------------------------------------

const TG_TOKEN: &str = "424242:AAE-fake-secret-token-for-tests_0123456789";
const ALICE: User = (42, "Alice");
const MALLORY: User = (66, "Mallory");
/// Alice's private chat with the bot (chat id = user id), not in `chats`.
const ALICE_DM: i64 = 42;
const GROUP: i64 = -5001;

async fn start_telegram() -> (TestApp, FakeTelegram) {
    let fake = FakeTelegram::start(TG_TOKEN).await;
    let app = spawn_app(&with_inbox(
        "",
        &format!(
            "[telegram]\ntoken = \"{TG_TOKEN}\"\napi_url = \"{}\"\nchats = [{GROUP}]\napprovers = [{}]\n",
            fake.url, ALICE.0
        ),
    ))
    .await;
    eventually("telegram to poll", async || {
        (!fake.calls("getUpdates").is_empty()).then_some(())
    })
    .await;
    (app, fake)
}

/// The sendMessage (params, message id) in `chat` whose text contains `needle`.
async fn sent(fake: &FakeTelegram, chat: i64, needle: &str) -> (Value, i64) {
    eventually(
        &format!("a message with {needle:?} in {chat}"),
        async || {
            fake.calls("sendMessage").into_iter().find_map(|c| {
                (c.ok
                    && c.params["chat_id"] == json!(chat)
                    && c.params["text"].as_str().unwrap_or("").contains(needle))
                .then(|| (c.params, c.message_id.unwrap()))
            })
        },
    )
    .await
}

fn replies_to(params: &Value) -> Option<i64> {
    params["reply_parameters"]["message_id"].as_i64()
}

fn tg_buttons(params: &Value) -> Vec<(String, String)> {
    params["reply_markup"]["inline_keyboard"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row.as_array().unwrap().clone())
        .map(|b| {
            (
                b["text"].as_str().unwrap().to_string(),
                b["callback_data"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn telegram_a_private_message_becomes_a_task_answered_in_its_thread() {
    let (app, fake) = start_telegram().await;
    fake.say(ALICE, ALICE_DM, "refactor everything", None);
    let t = the_task(&app).await;
    let short = t["short_id"].as_str().unwrap();
    let (card, card_id) = sent(&fake, ALICE_DM, &format!("id <code>{short}</code>")).await;
    assert!(
        replies_to(&card).is_some(),
        "the card replies to the owner's message"
    );
    assert!(card["text"]
        .as_str()
        .unwrap()
        .contains("<pre>refactor everything</pre>"));
    let (question, _) = sent(&fake, ALICE_DM, "gatebot asks before the task goes on").await;
    assert_eq!(
        replies_to(&question),
        Some(card_id),
        "the question replies to the card"
    );
    let buttons = tg_buttons(&question);
    assert_eq!(buttons.len(), 3, "{buttons:?}");
    // Alice answers by replying to the question.
    let question_id = eventually("the question's id", async || {
        fake.calls("sendMessage")
            .into_iter()
            .find(|c| {
                c.params["text"]
                    .as_str()
                    .unwrap_or("")
                    .contains("gatebot asks before")
            })
            .and_then(|c| c.message_id)
    })
    .await;
    fake.say(
        ALICE,
        ALICE_DM,
        "only src/chat/delivery.rs",
        Some(question_id),
    );
    let t = wait_status(&app, short, "pending").await;
    assert_eq!(t["clarification"], "only src/chat/delivery.rs");
    // A reply to a message that is no card (gatebot's note) is talk, not a new task.
    let (_, note) = sent(&fake, ALICE_DM, "Answer sent").await;
    fake.say(ALICE, ALICE_DM, "thanks!", Some(note));
    sent(&fake, ALICE_DM, "not one of gatebot").await;
    let all = app.owner.get("/v1/tasks?all=true").await.unwrap().body;
    assert_eq!(all["tasks"].as_array().unwrap().len(), 1);
    // The card is edited to ask for the owner's go, with Queue / Reject.
    let edit = eventually("the card's edit", async || {
        fake.ok_calls("editMessageText").into_iter().find(|p| {
            p["message_id"] == json!(card_id)
                && p["text"].as_str().unwrap().contains("waiting for your go")
        })
    })
    .await;
    let buttons = tg_buttons(&edit);
    assert_eq!(buttons[0].0, "▶️ Queue");
    fake.press(ALICE, ALICE_DM, card_id, &buttons[0].1);
    wait_status(&app, short, "queued").await;
    app.stop().await;
}

#[tokio::test]
async fn telegram_needs_input_and_requests_go_in_the_tasks_thread() {
    let (app, fake) = start_telegram().await;
    let asked = fake.say(ALICE, GROUP, "/task say hello to the team", None);
    let t = the_task(&app).await;
    let id = t["id"].as_str().unwrap().to_string();
    let short = t["short_id"].as_str().unwrap().to_string();
    let (card, card_id) = sent(&fake, GROUP, &format!("id <code>{short}</code>")).await;
    assert_eq!(
        replies_to(&card),
        Some(asked),
        "in the /task message's thread"
    );
    // A request the task's agent makes is prompted as a reply to the task's card.
    let (_, req_short) = app
        .submit_pending(json!({"agent": "claude-code", "tool": "send_email", "args": {"to": "team@example.com"}, "task_id": id}))
        .await;
    let (prompt, _) = sent(&fake, GROUP, &format!("id <code>{req_short}</code>")).await;
    assert_eq!(replies_to(&prompt), Some(card_id));
    assert!(prompt["text"]
        .as_str()
        .unwrap()
        .contains(&format!("<code>{short}</code>")));
    // The agent asks; the owner replies to the question card.
    let c = claim(&app, "claude-code", 0.0).await;
    report(
        &app,
        "claude-code",
        &id,
        "needs-input",
        json!({"lease": c["lease"], "questions": ["Which team?"]}),
    )
    .await;
    let (question, question_id) = sent(&fake, GROUP, "The agent asks").await;
    assert_eq!(replies_to(&question), Some(card_id));
    // Someone who is not an approver answers nothing, and is audited.
    fake.say(MALLORY, GROUP, "the sales team", Some(question_id));
    eventually("the refusal", async || {
        fake.ok_calls("sendMessage")
            .into_iter()
            .find(|p| p["text"].as_str().unwrap_or("").contains("not allowed"))
    })
    .await;
    fake.say(ALICE, GROUP, "the ops team", Some(question_id));
    let t = wait_status(&app, &id, "queued").await;
    sent(&fake, GROUP, "Answer sent").await;
    assert!(t.get("question").is_none());
    assert_eq!(
        claim(&app, "claude-code", 0.0).await["input"],
        "the ops team"
    );
    // Chatter in the group is still ignored.
    let before = fake.calls("sendMessage").len();
    fake.say(ALICE, GROUP, "lunch anyone?", None);
    fake.say(ALICE, GROUP, "/pending", None);
    sent(&fake, GROUP, "pending request").await;
    assert_eq!(
        fake.calls("sendMessage").len(),
        before + 1,
        "only /pending answered"
    );
    app.stop().await;
}

#[tokio::test]
async fn telegram_a_strangers_private_task_is_refused_and_audited() {
    let (app, fake) = start_telegram().await;
    fake.say(MALLORY, 66, "research pricing", None);
    let (refusal, _) = sent(&fake, 66, "not allowed").await;
    assert!(refusal["text"].as_str().unwrap().contains("66"));
    let audit = app.owner.get("/v1/audit").await.unwrap().body;
    assert!(audit["audit"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["event"] == "unauthorised_attempt"
            && r["detail"]["attempted"] == "command create task"));
    let all = app.owner.get("/v1/tasks?all=true").await.unwrap().body;
    assert_eq!(all["tasks"], json!([]));
    app.stop().await;
}

// ---- Slack -----------------------------------------------------------------------

async fn start_slack() -> (TestApp, FakeSlack) {
    let fake = FakeSlack::start().await;
    let config = fake.config() + "inbox_channels = [\"C2\"]\n";
    let app = spawn_app(&with_inbox("", &config)).await;
    (app, fake)
}

/// The chat.postMessage to `channel` whose text or blocks contain `needle`.
async fn posted(fake: &FakeSlack, channel: &str, needle: &str) -> fake_slack::Call {
    eventually(
        &format!("a post with {needle:?} in {channel}"),
        async || {
            fake.calls("chat.postMessage").into_iter().find(|c| {
                c.ts.is_some()
                    && c.params["channel"] == channel
                    && c.params.to_string().contains(needle)
            })
        },
    )
    .await
}

fn slack_buttons(params: &Value) -> Vec<(String, String)> {
    params["blocks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "actions")
        .flat_map(|b| b["elements"].as_array().unwrap().clone())
        .map(|e| {
            (
                e["text"]["text"].as_str().unwrap().to_string(),
                e["value"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn slack_a_dm_becomes_a_task_answered_in_its_thread() {
    let (app, fake) = start_slack().await;
    fake.send(
        "events_api",
        fake_slack::message_in(
            "D1",
            "im",
            "U1",
            "refactor everything",
            "1700000100.000100",
            None,
            "Ev1",
        ),
    )
    .await;
    let t = the_task(&app).await;
    let short = t["short_id"].as_str().unwrap().to_string();
    let card = posted(&fake, "D1", &format!("`{short}`")).await;
    assert_eq!(
        card.params["thread_ts"], "1700000100.000100",
        "in the DM's thread"
    );
    let question = posted(&fake, "D1", "gatebot asks before the task goes on").await;
    assert_eq!(question.params["thread_ts"], "1700000100.000100");
    // The owner answers in the thread.
    fake.send(
        "events_api",
        fake_slack::message_in(
            "D1",
            "im",
            "U1",
            "only src/chat/delivery.rs",
            "1700000100.000200",
            Some("1700000100.000100"),
            "Ev2",
        ),
    )
    .await;
    let t = wait_status(&app, &short, "pending").await;
    assert_eq!(t["clarification"], "only src/chat/delivery.rs");
    app.stop().await;
}

#[tokio::test]
async fn slack_needs_input_is_answered_in_a_form_and_strangers_are_refused() {
    let (app, fake) = start_slack().await;
    // A stranger's message in the inbox channel: refused, audited, nothing stored.
    fake.send(
        "events_api",
        fake_slack::message_in(
            "C2",
            "channel",
            "U999",
            "research pricing",
            "1700000200.000100",
            None,
            "Ev1",
        ),
    )
    .await;
    eventually("the refusal", async || {
        fake.answers("U999")
            .into_iter()
            .find(|a| a.text().contains("not allowed"))
    })
    .await;
    // The owner's message there is a task.
    fake.send(
        "events_api",
        fake_slack::message_in(
            "C2",
            "channel",
            "U1",
            "say hello to the team",
            "1700000200.000200",
            None,
            "Ev2",
        ),
    )
    .await;
    let t = the_task(&app).await;
    assert_eq!(t["created_by"], "U1");
    let id = t["id"].as_str().unwrap().to_string();
    let c = claim(&app, "claude-code", 0.0).await;
    report(
        &app,
        "claude-code",
        &id,
        "needs-input",
        json!({"lease": c["lease"], "questions": ["Which team?"], "session_id": "s-3"}),
    )
    .await;
    let question = posted(&fake, "C2", "The agent asks").await;
    assert_eq!(question.params["thread_ts"], "1700000200.000200");
    let buttons = slack_buttons(&question.params);
    let (_, answer) = buttons.iter().find(|(l, _)| l == "✍️ Answer").unwrap();
    fake.send(
        "interactive",
        fake_slack::click_in("U1", "C2", question.ts.as_deref().unwrap(), answer),
    )
    .await;
    let form = eventually("the form", async || {
        fake.calls("views.open").into_iter().next()
    })
    .await;
    let meta = form.params["view"]["private_metadata"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(meta.contains("task_input"), "{meta}");
    fake.send(
        "interactive",
        fake_slack::submit_modal("U1", &meta, Some("the ops team")),
    )
    .await;
    wait_status(&app, &id, "queued").await;
    let c = claim(&app, "claude-code", 0.0).await;
    assert_eq!(c["input"], "the ops team");
    // A /task slash command: a note to the owner, and the card in the channel.
    fake.send(
        "slash_commands",
        fake.slash("U1", "/task", "what time is it in Tokyo?"),
    )
    .await;
    eventually("the note", async || {
        fake.answers("U1")
            .into_iter()
            .find(|a| a.text().contains("Its card follows"))
    })
    .await;
    let tasks = app.owner.get("/v1/tasks?all=true").await.unwrap().body;
    let newest = &tasks["tasks"][0];
    assert_eq!(newest["intent"], "question");
    let card = posted(
        &fake,
        "C1",
        &format!("`{}`", newest["short_id"].as_str().unwrap()),
    )
    .await;
    assert!(card.params.get("thread_ts").is_none(), "{:?}", card.params);
    let _ = task(&app, &id).await;
    app.stop().await;
}
