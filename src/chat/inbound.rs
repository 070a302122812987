//! What people do in chats, platform-neutral: a press, a command or text, or the
//! answer to a question; and what gatebot answers.
//!
//! A platform adapter translates its update into an [`Inbound`] from an [`Actor`] and
//! calls [`handle`]; it then shows the [`Answer`] its own way. Here, once for every
//! platform:
//! 1. the update is counted (`gatebot_chat_updates_total`);
//! 2. a press is decoded ([`Action::decode`]; forged or stale data decides nothing);
//!    text is matched to what it replies to: a question gatebot asked (its text is the
//!    answer), or a card (its subject is the one meant; plain words may decide it);
//!    otherwise it is read as a command;
//! 3. a reply or press on a message of gatebot's that it has no record of (the
//!    platform stored a post but its answer is slow or was lost, so gatebot may post
//!    again) still reaches its request: a card names it (`id k7m2abcd`), and the
//!    message is recorded as the card (or digest) of the post in flight there, so it
//!    is edited like any other. A decision replying to a message that shows no request
//!    gatebot can find is told so, never ignored;
//! 4. whoever is not allowed to take the action ([`Action::who`], [`Command::who`]) is
//!    refused, and the attempt audited (`unauthorised_attempt`, naming the user id);
//! 5. the conversation kind runs it, through the engine.

use serde_json::json;
use tracing::{debug, error, info, warn};

use crate::chat::card::Tag;
use crate::chat::conversation::{self, Action, Command, Taken, Who};
use crate::chat::exchange::{Actor, Answer, At, Said, Written};
use crate::chat::Context;
use crate::engine::{EngineError, Pressed, Refusal, RepliedTo as Recorded};
use crate::subject::Purpose;
use crate::subject::Thread;
use crate::subject::{ShownBy, Subject};

/// The message a text replies to (Telegram's reply, Slack's thread parent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replied {
    pub message: String,
    /// Whose it is and what it says, as far as the platform told.
    pub seen: Seen,
}

/// What the platform told about a message replied to. Its text matters only when
/// gatebot does not know the message (a post whose answer is slow or was lost): a
/// card names its request (`id k7m2abcd`), so the reply can still reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    /// One of gatebot's own messages, with its text (Telegram sends it with the reply).
    Ours(String),
    /// Someone else's message: it shows nothing of gatebot's.
    Theirs,
    /// The platform did not say (Slack's thread parent): read back when needed
    /// ([`crate::chat::platform::Platform::read`]).
    Unread,
}

/// Something a person did in a chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inbound {
    /// A button press: its data, and where the button is.
    Press { data: String, at: At },
    /// A message in `chat`, perhaps replying to another. `addressed` is true when the
    /// platform says it was meant for gatebot (a Slack slash command): then text that
    /// is no command gets the help, instead of being ignored as chatter. `direct` is
    /// true when it was written to gatebot itself (a Telegram private chat with the
    /// bot, a Slack DM or inbox channel): with the inbox on, text that is no command
    /// there is a task. `private` is true when only the writer sees gatebot's answer (a
    /// Telegram private chat, a Slack DM, a Slack slash command): what only they may see
    /// is said there alone. `origin` is where a card answering it goes: after the message
    /// itself, in its thread.
    Text {
        chat: String,
        text: String,
        reply_to: Option<Replied>,
        addressed: bool,
        direct: bool,
        private: bool,
        origin: Option<Thread>,
    },
    /// The answer to a question gatebot asked in a form (Slack's modal), naming the
    /// subject and purpose it was asked for.
    Answer {
        subject: String,
        purpose: Purpose,
        text: Option<String>,
    },
}

/// The message for someone who is not an approver.
#[must_use]
pub fn not_allowed(actor: &Actor) -> String {
    format!(
        "You are not allowed to decide requests, hand gatebot tasks or manage agents (your user id {} is not in the approvers list).",
        actor.id
    )
}

/// Handles one inbound update; see the module docs.
pub async fn handle(cx: &Context, actor: &Actor, inbound: Inbound) -> Answer {
    match inbound {
        Inbound::Press { data, at } => {
            cx.engine.metrics.chat_update(&cx.platform, true);
            let action = match Action::decode(&data) {
                Ok(a) => a,
                Err(e) => {
                    warn!(platform = %cx.platform, user = %actor.id, "{e}");
                    return Answer::alert("This button is not recognised (stale or forged).");
                }
            };
            debug!(platform = %cx.platform, user = %actor.id, ?action, "button pressed");
            // Whoever pressed: the press shows which message is the card or digest.
            adopt_pressed(cx, &action, &at).await;
            if !allowed(action.who(), actor) {
                let subject = subject_of(cx, action.subject()).await;
                let attempted = format!("button {}", action.attempted());
                return refuse(cx, actor, subject, &attempted).await;
            }
            action.press(cx, actor, &at).await
        }
        Inbound::Text {
            chat,
            text,
            reply_to,
            addressed,
            direct,
            private,
            origin,
        } => {
            cx.engine.metrics.chat_update(&cx.platform, true);
            let m = Message {
                chat: &chat,
                text: &text,
                reply_to: reply_to.as_ref(),
                addressed,
                direct,
                private,
                origin,
            };
            text_message(cx, actor, m).await
        }
        Inbound::Answer {
            subject,
            purpose,
            text,
        } => {
            cx.engine.metrics.chat_update(&cx.platform, true);
            if !actor.approver {
                let subject = subject_of(cx, Some(&subject)).await;
                return refuse(cx, actor, subject, purpose.as_str()).await;
            }
            conversation::answer(cx, actor, &subject, purpose, text).await
        }
    }
}

/// A text message, as [`Inbound::Text`] has it.
struct Message<'a> {
    chat: &'a str,
    text: &'a str,
    reply_to: Option<&'a Replied>,
    addressed: bool,
    direct: bool,
    private: bool,
    origin: Option<Thread>,
}

async fn text_message(cx: &Context, actor: &Actor, m: Message<'_>) -> Answer {
    let is_command = m.text.trim_start().starts_with('/');
    let (replied, unmatched) = match m.reply_to {
        Some(r) => match replied_to(cx, actor, &m, r, is_command).await {
            RepliedTo::Answered(answer) => return answer,
            RepliedTo::Subject(s) => (Some(s), false),
            RepliedTo::Unmatched => (None, true),
            RepliedTo::None => (None, false),
        },
        None => (None, false),
    };
    // Words in reply to a subject whose kind reads them itself (a task's answer).
    if let Some(s) = replied
        .as_ref()
        .filter(|s| !is_command && conversation::reads_replies(s))
    {
        if !actor.approver {
            return refuse(cx, actor, Some(s.id.clone()), "answer a task's question").await;
        }
        return conversation::reply(cx, actor, s, m.text).await;
    }
    let in_reply = replied.is_some() || unmatched;
    let cmd = match Command::parse(m.text, cx.bot_username.as_deref(), in_reply) {
        Some(c) => c,
        None => {
            let written = Written {
                text: m.text,
                direct: m.direct,
                addressed: m.addressed,
                replying: m.reply_to.is_some(),
            };
            match Command::written(cx, &written) {
                Some(Taken::Command(c)) => c,
                Some(Taken::Answer(answer)) => return *answer,
                None => return Answer::Nothing,
            }
        }
    };
    if !allowed(cmd.who(), actor) {
        let typed = cmd.subject().or(replied.as_ref().map(|s| s.id.as_str()));
        let subject = subject_of(cx, typed).await;
        let attempted = format!("command {}", cmd.attempted());
        return refuse(cx, actor, subject, &attempted).await;
    }
    if unmatched && cmd.wants_replied() {
        warn!(platform = %cx.platform, chat = m.chat, user = %actor.id, "a decision replies to a message that shows no request gatebot can find");
        return Answer::note(UNMATCHED_REPLY);
    }
    let said = Said {
        chat: m.chat,
        private: m.private,
        origin: m.origin.as_ref(),
        replied: replied.as_ref(),
    };
    cmd.run(cx, actor, &said).await
}

/// What a reply is to.
enum RepliedTo {
    /// A question gatebot asked, now answered (or the answer refused).
    Answered(Answer),
    /// A subject's card, its thread, or a question about it (to which a command replies).
    Subject(Subject),
    /// A message of gatebot's that shows no subject it can find.
    Unmatched,
    /// Someone else's message.
    None,
}

/// Finds what `r` is: a question gatebot asked (its text is the answer, unless it is
/// a command), a card or a thread of a subject, or a message gatebot has no record of.
async fn replied_to(
    cx: &Context,
    actor: &Actor,
    m: &Message<'_>,
    r: &Replied,
    is_command: bool,
) -> RepliedTo {
    let chat = m.chat;
    // A reply to a question gatebot asked: its text is the answer (a command's is not,
    // and means the question's subject). Else a reply to a card: the card's subject is
    // the one meant. Else a reply in the thread a subject lives in (a task written as
    // a message).
    match cx
        .engine
        .chat()
        .replied_to(&cx.platform, chat, &r.message, !is_command)
        .await
    {
        Ok(Recorded::Question(q)) => {
            if !actor.approver {
                let subject = subject_of(cx, Some(&q.subject)).await;
                return RepliedTo::Answered(refuse(cx, actor, subject, q.purpose.as_str()).await);
            }
            let answer = Some(m.text.trim().to_string()).filter(|t| !t.is_empty());
            return RepliedTo::Answered(
                conversation::answer(cx, actor, &q.subject, q.purpose, answer).await,
            );
        }
        Ok(Recorded::Subject(s)) => return RepliedTo::Subject(s),
        Ok(Recorded::Nothing) => {}
        Err(e) => error!(error = %e, "cannot look up the message replied to"),
    }
    // A message gatebot has no record of: a card whose post is still unconfirmed, or a
    // copy posted again after its answer was lost.
    match shown_by_text(cx, chat, r).await {
        Shows::Subject(s) => RepliedTo::Subject(s),
        Shows::Nothing => RepliedTo::Unmatched,
        Shows::NotOurs => RepliedTo::None,
    }
}

/// The answer to a decision replying to a message of gatebot's that shows no request
/// it can find (a list, a help text, or a message it cannot read back).
pub const UNMATCHED_REPLY: &str = "I cannot tell which request your reply is about: the message \
     you replied to shows none I can find. Decide with /approve <id> or /deny <id> [reason] \
     (the id is on the request's prompt), or reply to the prompt itself. /pending lists them.";

/// What a message gatebot has no record of shows.
enum Shows {
    /// A request's card (adopted as that card's message if its post is in flight).
    Subject(Subject),
    /// A message of gatebot's showing no request it can find, or one it could not read.
    Nothing,
    /// Someone else's message.
    NotOurs,
}

/// Finds the request a message of gatebot's shows by its text (see [`Seen`]), reading
/// the message back if the platform did not send it along, and records the message
/// as the card of that request if its post is still in flight here.
async fn shown_by_text(cx: &Context, chat: &str, r: &Replied) -> Shows {
    let text = match &r.seen {
        Seen::Ours(t) => t.clone(),
        Seen::Theirs => return Shows::NotOurs,
        Seen::Unread => match cx.reader.read_back(chat, &r.message).await {
            Ok(Some(t)) => t,
            Ok(None) => return Shows::NotOurs,
            Err(e) => {
                warn!(platform = %cx.platform, chat, message = %r.message, error = %e, "cannot read back the message replied to");
                return Shows::Nothing;
            }
        },
    };
    let Some(short) = Tag::read(&text) else {
        return Shows::Nothing;
    };
    let subject = match cx.engine.chat().lookup(&short).await {
        Ok(s) => s,
        Err(EngineError::NotFound { .. }) => return Shows::Nothing,
        Err(e) => {
            error!(error = %e, "cannot look up the request a reply names");
            return Shows::Nothing;
        }
    };
    adopt(cx, chat, &r.message, Some(&subject.id), ShownBy::Card).await;
    Shows::Subject(subject)
}

/// Records `message` as the message of a post in flight in `chat` (see
/// [`crate::engine::ChatState::adopt`]); a failure only costs the bookkeeping.
async fn adopt(cx: &Context, chat: &str, message: &str, subject: Option<&str>, by: ShownBy) {
    match cx
        .engine
        .chat()
        .adopt(&cx.platform, chat, message, subject, by)
        .await
    {
        Ok(ids) => adopted(cx, chat, message, &ids),
        Err(e) => error!(error = %e, "cannot record the message of a post in flight"),
    }
}

/// Logs that a reply or press recorded `message` as the message of a post in flight.
fn adopted(cx: &Context, chat: &str, message: &str, ids: &[String]) {
    if !ids.is_empty() {
        info!(
            platform = %cx.platform, chat, message, subjects = ids.len(),
            "a reply or press came before the platform confirmed the post: its message is recorded"
        );
    }
}

/// A press on a message gatebot has no record of: if it is the message of a post in
/// flight in its chat (the button's own card, as its text shows, or a digest), record
/// it as such first, so the press can act on it and later changes reach it.
async fn adopt_pressed(cx: &Context, action: &Action, at: &At) {
    let Some(message) = &at.message else { return };
    let pressed = match action {
        // Digest buttons are only ever on digests.
        digest if digest.on_digest() => Pressed::Digest,
        other => {
            let Some(id) = other.subject() else { return };
            // Only the subject's own card: a `/pending` list has the same buttons.
            let Some(short) = at.text.as_deref().and_then(Tag::read) else {
                return;
            };
            Pressed::Card {
                subject: id.to_string(),
                tag: short,
            }
        }
    };
    match cx
        .engine
        .chat()
        .adopt_pressed(&cx.platform, &at.chat, message, pressed)
        .await
    {
        Ok(ids) => adopted(cx, &at.chat, message, &ids),
        Err(e) => error!(error = %e, "cannot record the message of a post in flight"),
    }
}

fn allowed(who: Who, actor: &Actor) -> bool {
    match who {
        Who::Anyone => true,
        Who::Approvers => actor.approver,
    }
}

/// The full id of a subject named by `typed` (an id or a prefix), for the audit row:
/// a subject of any kind (a request that asked, a proposal), else any request.
async fn subject_of(cx: &Context, typed: Option<&str>) -> Option<String> {
    let typed = typed?;
    match cx.engine.lookup(typed, false).await {
        Ok(a) => Some(a.id),
        // Not a request: a subject of another kind (a check-in), if it is one.
        Err(_) => cx.engine.chat().lookup(typed).await.ok().map(|s| s.id),
    }
}

/// Refuses `actor`, auditing what they attempted (a fixed text: "button Approve",
/// "command pending"; the same attempts of a minute are coalesced by it).
pub async fn refuse(
    cx: &Context,
    actor: &Actor,
    subject: Option<String>,
    attempted: &str,
) -> Answer {
    let detail = json!({"user_id": actor.id, "name": actor.name, "attempted": attempted});
    let refusal = Refusal {
        approval_id: subject,
        actor: actor.label(),
        via: cx.via(),
        transport: None,
        kind: attempted.to_string(),
        reason: None,
        detail,
    };
    if let Err(e) = cx.engine.record_unauthorised(refusal).await {
        error!(error = %e, "cannot audit an unauthorised attempt");
    }
    Answer::alert(not_allowed(actor))
}

impl Context {
    /// How decisions taken here are recorded.
    #[must_use]
    pub fn via(&self) -> crate::approval::Via {
        crate::approval::Via::Chat(self.platform.clone())
    }
}
