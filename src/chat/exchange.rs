//! One exchange with a person in a chat, platform-neutral: who acts ([`Actor`]), where
//! ([`At`] a button, [`Said`] a command), what they wrote that no kind read as a
//! command ([`Written`]), and what gatebot answers ([`Answer`], or a [`Question`]).
//! The inbound layer ([`super::inbound`]) makes these and the conversation kinds
//! ([`super::conversation`]) take them; neither needs the other's insides.

use crate::chat::card::{Button, Card, Line};
use crate::subject::{Purpose, Subject, Thread};

/// Who pressed, wrote or answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    /// The platform's user id (Telegram user id, Slack user id).
    pub id: String,
    /// A display name for cards and the audit trail.
    pub name: String,
    /// Whether `id` is one of the platform's approvers.
    pub approver: bool,
    /// The person `[people]` names for `id` on this platform, if any.
    pub person: Option<String>,
}

impl Actor {
    /// How the actor is recorded as `decided_by`: the person `[people]` names for them
    /// ("alice"), else "Alice (12345)" (an unmapped id is its own person).
    #[must_use]
    pub fn label(&self) -> String {
        if let Some(person) = &self.person {
            return person.clone();
        }
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
    /// That message's text, when the platform sends it with the press: how a card
    /// gatebot has no record of (its post unconfirmed) is told from another message
    /// with the same buttons (a `/pending` list).
    pub text: Option<String>,
    /// Whether the chat is the presser's private chat with the bot (where a link for
    /// them alone may be posted).
    pub private: bool,
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
    /// an answer on Telegram, not at all where it would be chatter on Slack; commands get
    /// it as their reply.
    Done(Card),
    /// Something the person needs to know: `alert` for a refusal or a failure.
    Notice { card: Card, alert: bool },
    /// A message with content (a list with buttons, the help).
    Card(Card),
    /// Several messages, in order: content that one message cannot hold whole (every
    /// issue of a check-in), each card within the platforms' limits.
    Cards(Vec<Card>),
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

    /// The card to show as a message, if the answer has one (the first, of several).
    #[must_use]
    pub fn card(&self) -> Option<&Card> {
        self.cards().into_iter().next()
    }

    /// The cards to show as messages, in order.
    #[must_use]
    pub fn cards(&self) -> Vec<&Card> {
        match self {
            Answer::Done(c) | Answer::Notice { card: c, .. } | Answer::Card(c) => vec![c],
            Answer::Cards(cards) => cards.iter().collect(),
            Answer::Nothing | Answer::Ask(_) => Vec::new(),
        }
    }

    /// The answer as plain text (a press's toast).
    #[must_use]
    pub fn text(&self) -> String {
        match self {
            Answer::Nothing => String::new(),
            Answer::Ask(q) => q.asked.clone(),
            other => other
                .cards()
                .into_iter()
                .map(Card::plain)
                .collect::<Vec<_>>()
                .join("\n\n"),
        }
    }
}

/// Where a command was said: what a kind's command may need besides its words.
#[derive(Debug, Clone, Copy)]
pub struct Said<'a> {
    /// The chat it was written in.
    pub chat: &'a str,
    /// Only the writer sees gatebot's answer: a Telegram private chat, a Slack DM, a
    /// Slack slash command (answered to the one who typed it alone).
    pub private: bool,
    /// Where an answer that is a new card goes: after the message, in its thread.
    pub origin: Option<&'a Thread>,
    /// The subject of the card the message replies to (or is in the thread of).
    pub replied: Option<&'a Subject>,
}

/// Text written where gatebot reads it that no kind read as a command, for the kinds
/// that take such text ([`crate::chat::conversation::Kind::written`]).
#[derive(Debug, Clone, Copy)]
pub struct Written<'a> {
    pub text: &'a str,
    /// Written to gatebot itself (a private chat with the bot, a DM, an inbox channel).
    pub direct: bool,
    /// The platform says it was meant for gatebot (a Slack slash command).
    pub addressed: bool,
    /// It replies to a message that is none of gatebot's cards.
    pub replying: bool,
}
