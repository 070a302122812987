//! An in-memory chat platform.
//!
//! Messages live in memory, and people act by calling [`Memory::press`] and
//! [`Memory::say`]. Behind those it runs exactly what Telegram and Slack run:
//! delivery posts and edits cards, the inbound layer checks approvers and routes, the
//! conversation kinds act through the engine. Only the translation to a network API is
//! missing, so a flow that is the same on every platform is tested once, here, and a
//! new conversation kind can be tested before any platform renders it.
//!
//! Questions are asked the Telegram way: a message replying to the pressed card, which
//! the asker answers by replying to it ([`Memory::say`] with `reply_to`). Threads are
//! Telegram's too: a card posted in a thread replies to the message it hangs off
//! ([`Message::reply_to`]); [`Memory::write`] is text written to gatebot itself.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::Notify;

use crate::approval::PlatformId;
use crate::chat::card::{Card, Line};
use crate::chat::exchange::{Actor, Answer, At};
use crate::chat::inbound::{self, Inbound, Replied, Seen};
use crate::chat::platform::{Platform, PlatformRun, SendError};
use crate::chat::Context;
use crate::config::{ChatSettings, Config};
use crate::subject::Thread;

/// The platform's key.
pub const PLATFORM: PlatformId = PlatformId::new("memory");

/// A message in a chat of the in-memory platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub chat: String,
    pub id: String,
    pub card: Card,
    /// How often it was edited.
    pub edits: usize,
    /// The message it replies to.
    pub reply_to: Option<String>,
}

#[derive(Debug, Default)]
struct State {
    next: u64,
    messages: Vec<Message>,
    /// Posts whose answer is lost: the message exists, the call fails as unknown.
    lose_answers: usize,
    /// Answers to posts wait until released (the message exists meanwhile).
    hold_answers: bool,
    /// Holding and losing answers apply only to posts whose text contains this.
    only_showing: Option<String>,
}

/// The in-memory platform: chats, a digest threshold, and what was posted.
#[derive(Debug)]
pub struct Memory {
    chats: Vec<String>,
    digest_after: usize,
    state: Mutex<State>,
    cx: OnceLock<Context>,
    started: Notify,
    released: Notify,
}

impl Memory {
    #[must_use]
    pub fn new(chats: &[&str], digest_after: usize) -> Arc<Memory> {
        Arc::new(Memory {
            chats: chats.iter().map(|c| (*c).to_string()).collect(),
            digest_after,
            state: Mutex::new(State::default()),
            cx: OnceLock::new(),
            started: Notify::new(),
            released: Notify::new(),
        })
    }

    /// The next `n` posts take effect but their answers are lost (after any hold):
    /// delivery sees an unknown outcome, as when a connection breaks after the platform
    /// stored a post.
    pub fn lose_next_answers(&self, n: usize) {
        self.lock().lose_answers += n;
    }

    /// From now on, answers to posts wait (the messages exist meanwhile), as when the
    /// platform is slow to confirm a post, until [`Memory::release_answers`].
    pub fn hold_answers(&self) {
        self.lock().hold_answers = true;
    }

    /// From now on, [`Memory::hold_answers`] and [`Memory::lose_next_answers`] apply
    /// only to posts whose text contains `needle`; other posts are answered at once.
    /// For a test whose earlier traffic may still be on its way when it holds.
    pub fn only_posts_showing(&self, needle: &str) {
        self.lock().only_showing = Some(needle.to_string());
    }

    pub fn release_answers(&self) {
        self.lock().hold_answers = false;
        self.released.notify_waiters();
    }

    /// Runs the platform in a daemon ([`crate::daemon::App::add_platform`]).
    #[must_use]
    pub fn runner(self: &Arc<Self>) -> PlatformRun {
        let memory = self.clone();
        Box::new(move |engine, stop| {
            let memory = memory.clone();
            Box::pin(async move {
                let inbound = {
                    let memory = memory.clone();
                    let stop = stop.clone();
                    move |cx: Context| async move {
                        let _ = memory.cx.set(cx);
                        memory.started.notify_waiters();
                        stop.cancelled().await;
                    }
                };
                crate::chat::run(engine, memory, None, stop, inbound).await;
            })
        })
    }

    async fn context(&self) -> &Context {
        loop {
            let started = self.started.notified();
            if let Some(cx) = self.cx.get() {
                return cx;
            }
            let _ = tokio::time::timeout(Duration::from_millis(50), started).await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn add(&self, chat: &str, card: Card, reply_to: Option<String>) -> String {
        let mut state = self.lock();
        state.next += 1;
        let id = state.next.to_string();
        state.messages.push(Message {
            chat: chat.to_string(),
            id: id.clone(),
            card,
            edits: 0,
            reply_to,
        });
        id
    }

    /// Every message in `chat`, oldest first.
    #[must_use]
    pub fn messages(&self, chat: &str) -> Vec<Message> {
        self.lock()
            .messages
            .iter()
            .filter(|m| m.chat == chat)
            .cloned()
            .collect()
    }

    /// A message by id.
    #[must_use]
    pub fn message(&self, chat: &str, id: &str) -> Option<Message> {
        self.lock()
            .messages
            .iter()
            .find(|m| m.chat == chat && m.id == id)
            .cloned()
    }

    /// The first message in `chat` whose text contains `needle`.
    #[must_use]
    pub fn find(&self, chat: &str, needle: &str) -> Option<Message> {
        self.lock()
            .messages
            .iter()
            .find(|m| m.chat == chat && m.card.plain().contains(needle))
            .cloned()
    }

    /// `actor` presses the button with `data` on `message` in `chat`.
    pub async fn press(&self, actor: &Actor, chat: &str, message: &str, data: &str) -> Answer {
        let cx = self.context().await;
        let at = At {
            chat: chat.to_string(),
            message: Some(message.to_string()),
            text: self.message(chat, message).map(|m| m.card.plain()),
            // The in-memory platform's private chats are named after their person.
            private: chat == actor.id,
        };
        let press = Inbound::Press {
            data: data.to_string(),
            at,
        };
        let answer = inbound::handle(cx, actor, press).await;
        self.show(cx, actor, chat, Some(message), &answer).await;
        answer
    }

    /// `actor` writes `text` in `chat`, replying to `reply_to` if given.
    pub async fn say(
        &self,
        actor: &Actor,
        chat: &str,
        text: &str,
        reply_to: Option<&str>,
    ) -> Answer {
        let cx = self.context().await;
        let message = Inbound::Text {
            chat: chat.to_string(),
            text: text.to_string(),
            // Every message here is gatebot's; like Telegram, the reply carries it.
            reply_to: reply_to.map(|m| Replied {
                message: m.to_string(),
                seen: self
                    .message(chat, m)
                    .map_or(Seen::Theirs, |msg| Seen::Ours(msg.card.plain())),
            }),
            addressed: false,
            direct: false,
            private: false,
            origin: None,
        };
        let answer = inbound::handle(cx, actor, message).await;
        self.show(cx, actor, chat, reply_to, &answer).await;
        answer
    }

    /// `actor` writes `text` to gatebot itself in `chat` (as in a Telegram private chat
    /// or a Slack DM): with the inbox on, plain text is a task, whose card replies to
    /// this message. Returns the message's id and the answer.
    pub async fn write(&self, actor: &Actor, chat: &str, text: &str) -> (String, Answer) {
        let cx = self.context().await;
        let id = self.add(chat, Card::text(text), None);
        let message = Inbound::Text {
            chat: chat.to_string(),
            text: text.to_string(),
            reply_to: None,
            addressed: false,
            direct: true,
            private: true,
            origin: Some(Thread {
                reply_to: id.clone(),
                root: id.clone(),
            }),
        };
        let answer = inbound::handle(cx, actor, message).await;
        self.show(cx, actor, chat, Some(&id), &answer).await;
        (id, answer)
    }

    /// Posts what an answer shows in the chat: a card, or a question to reply to.
    async fn show(
        &self,
        cx: &Context,
        actor: &Actor,
        chat: &str,
        to: Option<&str>,
        answer: &Answer,
    ) {
        match answer {
            Answer::Card(_) | Answer::Cards(_) => {
                for card in answer.cards() {
                    self.add(chat, card.clone(), to.map(str::to_string));
                }
            }
            Answer::Ask(q) => {
                let mut text = Line::text(format!("{}, ", actor.name));
                text.0.extend(q.text.0.clone());
                let card = Card {
                    blocks: vec![crate::chat::card::Block::Line(text)],
                    fallback: q.title.clone(),
                    ..Card::default()
                };
                let id = self.add(chat, card, to.map(str::to_string));
                if let Err(e) = cx
                    .engine
                    .chat()
                    .ask(&cx.platform, chat, &id, &q.subject, q.purpose)
                    .await
                {
                    tracing::error!(error = %e, "memory: cannot record the question");
                }
            }
            Answer::Nothing | Answer::Done(_) | Answer::Notice { .. } => {}
        }
    }
}

impl Platform for Memory {
    fn id(&self) -> PlatformId {
        PLATFORM
    }

    /// Its own chats and threshold; approvers are whoever the test says
    /// ([`Actor::approver`]).
    fn settings(&self, _config: &Config) -> ChatSettings {
        ChatSettings {
            destinations: self.chats.clone(),
            approvers: BTreeSet::new(),
            digest_after: self.digest_after,
        }
    }

    fn pace(&self, _chat: &str) -> Duration {
        Duration::ZERO
    }

    async fn post(
        &self,
        chat: &str,
        card: &Card,
        thread: Option<&Thread>,
    ) -> Result<String, SendError> {
        let id = self.add(chat, card.clone(), thread.map(|t| t.reply_to.clone()));
        let affected = self
            .lock()
            .only_showing
            .as_ref()
            .is_none_or(|needle| card.plain().contains(needle.as_str()));
        if !affected {
            return Ok(id);
        }
        // The message exists now; its answer may be slow, and then lost.
        loop {
            let released = self.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            if !self.lock().hold_answers {
                break;
            }
            released.await;
        }
        let mut state = self.lock();
        if state.lose_answers > 0 {
            state.lose_answers -= 1;
            return Err(SendError::Unknown("the answer to the post was lost".into()));
        }
        Ok(id)
    }

    async fn edit(&self, chat: &str, message: &str, card: &Card) -> Result<(), SendError> {
        let mut state = self.lock();
        let m = state
            .messages
            .iter_mut()
            .find(|m| m.chat == chat && m.id == message)
            .ok_or_else(|| SendError::Permanent(format!("no message {message} in {chat}")))?;
        if m.card != *card {
            m.card = card.clone();
            m.edits += 1;
        }
        Ok(())
    }
}
