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
//! 3. whoever is not allowed to take the action ([`Action::who`], [`Command::who`]) is
//!    refused, and the attempt audited (`unauthorised_attempt`, naming the user id);
//! 4. the conversation kind runs it, through the engine.

use serde_json::json;
use tracing::{debug, error, warn};

use crate::chat::card::{Button, Card, Line};
use crate::chat::conversation::{self, Action, Command, Who};
use crate::chat::Context;
use crate::engine::Subject;

/// Who pressed, wrote or answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// The platform's user id (Telegram user id, Slack user id).
    pub id: String,
    /// A display name for cards and the audit trail.
    pub name: String,
    /// Whether `id` is one of the platform's approvers.
    pub approver: bool,
}

impl Actor {
    /// How the actor is recorded as `decided_by`: "Alice (12345)".
    #[must_use]
    pub fn label(&self) -> String {
        if self.name.is_empty() || self.name == self.id {
            self.id.clone()
        } else {
            format!("{} ({})", self.name, self.id)
        }
    }
}

/// Where a pressed button is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct At {
    pub chat: String,
    /// The message the button is on, when the platform says.
    pub message: Option<String>,
}

/// Why gatebot asked a question: what its answer is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// "Why deny?": the answer is the reason of a denial.
    DenyReason,
}

impl Purpose {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::DenyReason => "deny_reason",
        }
    }

    #[must_use]
    pub fn parse(s: &str) -> Option<Purpose> {
        match s {
            "deny_reason" => Some(Purpose::DenyReason),
            _ => None,
        }
    }
}

/// The message a text replies to (Telegram's reply, Slack's thread parent).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replied {
    pub message: String,
}

/// Something a person did in a chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inbound {
    /// A button press: its data, and where the button is.
    Press { data: String, at: At },
    /// A message in `chat`, perhaps replying to another. `addressed` is true when the
    /// platform says it was meant for gatebot (a Slack slash command): then text that
    /// is no command gets the help, instead of being ignored as chatter.
    Text {
        chat: String,
        text: String,
        reply_to: Option<Replied>,
        addressed: bool,
    },
    /// The answer to a question gatebot asked in a form (Slack's modal), naming the
    /// subject and purpose it was asked for.
    Answer {
        subject: String,
        purpose: Purpose,
        text: Option<String>,
    },
}

/// A question gatebot asks someone, for a subject, in the platform's way: Telegram
/// sends a message to reply to, Slack opens a form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    pub subject: String,
    pub purpose: Purpose,
    /// The form's title ("Deny request").
    pub title: String,
    /// The question, written to follow an address ("Alice, why deny …?"); where it
    /// stands alone, its first letter is capitalised ([`Line::capitalised`]).
    pub text: Line,
    /// What the answer field is called ("Reason (optional)").
    pub field: String,
    /// The form's submit button ("Deny").
    pub submit: String,
    /// A button that answers without text, put in place of the pressed one where the
    /// platform asks by message ("🚫 Deny without reason").
    pub skip: Option<Button>,
    /// What to tell the asker once the question is out.
    pub asked: String,
    /// What to tell the asker when it could not be asked.
    pub not_asked: String,
}

/// What gatebot answers. Every answer is a [`Card`], so agent text in it stays data
/// and its fallback (a notification's text) carries none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Nothing: the update was not for gatebot.
    Nothing,
    /// It was done, and the subject's card shows it: said briefly where a press gets
    /// an answer (Telegram), not at all where it would be chatter (Slack); commands get
    /// it as their reply.
    Done(Card),
    /// Something the person needs to know: `alert` for a refusal or a failure.
    Notice { card: Card, alert: bool },
    /// A message with content (a list with buttons, the help).
    Card(Card),
    /// A question, asked the platform's way.
    Ask(Question),
}

impl Answer {
    /// A refusal or failure, in gatebot's words (and what the person typed).
    #[must_use]
    pub fn alert(text: impl Into<String>) -> Answer {
        Answer::Notice {
            card: Card::text(text),
            alert: true,
        }
    }

    /// Information that is not a refusal, in gatebot's words.
    #[must_use]
    pub fn note(text: impl Into<String>) -> Answer {
        Answer::Notice {
            card: Card::text(text),
            alert: false,
        }
    }

    /// The card to show as a message, if the answer has one.
    #[must_use]
    pub fn card(&self) -> Option<&Card> {
        match self {
            Answer::Done(c) | Answer::Notice { card: c, .. } | Answer::Card(c) => Some(c),
            Answer::Nothing | Answer::Ask(_) => None,
        }
    }

    /// The answer as plain text (a press's toast).
    #[must_use]
    pub fn text(&self) -> String {
        match self {
            Answer::Nothing => String::new(),
            Answer::Ask(q) => q.asked.clone(),
            other => other.card().map(Card::plain).unwrap_or_default(),
        }
    }
}

/// The message for someone who is not an approver.
#[must_use]
pub fn not_allowed(actor: &Actor) -> String {
    format!(
        "You are not allowed to decide requests or manage agents (your user id {} is not in the approvers list).",
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
            if !allowed(action.who(), actor) {
                let subject = subject_of(cx, action.subject()).await;
                return refuse(cx, actor, subject, &action.attempted()).await;
            }
            conversation::press(cx, actor, action, &at).await
        }
        Inbound::Text {
            chat,
            text,
            reply_to,
            addressed,
        } => {
            cx.engine.metrics.chat_update(&cx.platform, true);
            text_message(cx, actor, &chat, &text, reply_to.as_ref(), addressed).await
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

async fn text_message(
    cx: &Context,
    actor: &Actor,
    chat: &str,
    text: &str,
    reply_to: Option<&Replied>,
    addressed: bool,
) -> Answer {
    let chat_state = cx.engine.chat();
    let mut replied: Option<Subject> = None;
    if let Some(r) = reply_to {
        // A reply to a question gatebot asked: its text is the answer.
        match chat_state.question(&cx.platform, chat, &r.message).await {
            Ok(Some(q)) if !text.trim_start().starts_with('/') => {
                if !actor.approver {
                    let subject = subject_of(cx, Some(&q.subject)).await;
                    return refuse(cx, actor, subject, q.purpose.as_str()).await;
                }
                let answer = Some(text.trim().to_string()).filter(|t| !t.is_empty());
                return conversation::answer(cx, actor, &q.subject, q.purpose, answer).await;
            }
            Ok(Some(q)) => replied = chat_state.subject(&q.subject).await.ok().flatten(),
            Ok(None) => {}
            Err(e) => error!(error = %e, "cannot look up a question"),
        }
        if replied.is_none() {
            // A reply to a card: the card's subject is the one meant.
            replied = match chat_state.shown_at(&cx.platform, chat, &r.message).await {
                Ok(card) => card.map(|c| c.subject),
                Err(e) => {
                    error!(error = %e, "cannot look up the card replied to");
                    None
                }
            };
        }
    }
    let cmd = match Command::parse(text, cx.bot_username.as_deref(), replied.is_some()) {
        Some(c) => c,
        None if addressed => Command::Help,
        None => return Answer::Nothing,
    };
    if !allowed(cmd.who(), actor) {
        let typed = cmd.subject().or(replied.as_ref().map(|s| s.id.as_str()));
        let subject = subject_of(cx, typed).await;
        return refuse(cx, actor, subject, &cmd.attempted()).await;
    }
    conversation::command(cx, actor, cmd, replied.as_ref()).await
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
    if let Ok(s) = cx.engine.chat().lookup(typed).await {
        return Some(s.id);
    }
    cx.engine.lookup(typed, false).await.ok().map(|a| a.id)
}

/// Refuses `actor`, auditing what they attempted.
pub async fn refuse(
    cx: &Context,
    actor: &Actor,
    subject: Option<String>,
    attempted: &str,
) -> Answer {
    let detail = json!({"user_id": actor.id, "name": actor.name, "attempted": attempted});
    if let Err(e) = cx
        .engine
        .record_unauthorised(subject, actor.label(), cx.via(), detail)
        .await
    {
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
