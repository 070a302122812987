//! The kinds of conversation gatebot has in chats, one module each, and the one place
//! that dispatches to them (as mini-redis dispatches commands to `cmd/`).
//!
//! Each kind says:
//! - what **card** it shows ([`approval::card`], [`digest::card`], …);
//! - which **actions** it offers: its buttons' data (`gb1:…`, at most 64 bytes, decoded
//!   by [`Action::decode`]) and the **commands** it answers ([`Command::parse`]);
//! - **who** may take them ([`Action::who`], [`Command::who`]): the inbound layer
//!   refuses and audits everyone else before a kind sees the action;
//! - what each does, **through the engine** ([`press`], [`command()`], [`answer`]).
//!
//! Kinds: [`approval`] (a request's prompt), [`digest`] (one message for a burst of
//! requests), [`reason`] (the "why deny?" question), [`pending`] (`/pending`),
//! [`help`] (`/help`), [`proposal`] (a proposed tier change), [`agents`] (`/agents`,
//! `/agent`, `/tier`, `/pause`, `/resume`, `/assess`), [`grants`] (`/grants`,
//! `/revoke`).
//!
//! To add a kind: write its module (card, actions, commands, handlers), then add its
//! variants to [`Action`] / [`Command`] and their arms to the `match`es below; if its
//! subject gets cards of its own, add an arm to [`render`].

pub mod agents;
pub mod approval;
pub mod digest;
pub mod grants;
pub mod help;
pub mod pending;
pub mod proposal;
pub mod reason;

use crate::chat::card::Card;
use crate::chat::command;
use crate::chat::inbound::{Actor, Answer, At, Purpose};
use crate::chat::Context;
use crate::engine::{EngineError, Subject, SubjectKind};

/// Every button's data starts with this (and a version, so old buttons can be told apart).
pub const DATA_PREFIX: &str = "gb1:";
/// Telegram's limit on callback data, in bytes; gatebot holds every platform to it.
pub const MAX_DATA: usize = 64;

/// Who may take an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Who {
    /// Only the platform's approvers.
    Approvers,
    /// Anyone who can write to the bot.
    Anyone,
}

/// A button press, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Approval(approval::Action),
    Digest(digest::Nav),
    Proposal(proposal::Action),
    Agents(agents::Action),
    Grants(grants::Action),
}

impl Action {
    /// Decodes button data; anything gatebot did not produce is an error (forged or
    /// stale data), whose text says so without echoing the data.
    pub fn decode(data: &str) -> Result<Action, String> {
        let bad = || format!("unrecognised button data ({} bytes)", data.len());
        if data.len() > MAX_DATA {
            return Err(bad());
        }
        let rest = data.strip_prefix(DATA_PREFIX).ok_or_else(bad)?;
        if let Some(nav) = digest::decode(rest) {
            return Ok(Action::Digest(nav));
        }
        if let Some(p) = proposal::decode(rest) {
            return Ok(Action::Proposal(p));
        }
        if let Some(a) = agents::decode(rest) {
            return Ok(Action::Agents(a));
        }
        if let Some(g) = grants::decode(rest) {
            return Ok(Action::Grants(g));
        }
        approval::decode(rest).map(Action::Approval).ok_or_else(bad)
    }

    /// The button data for this action.
    #[must_use]
    pub fn encode(&self) -> String {
        let data = match self {
            Action::Approval(a) => approval::encode(a),
            Action::Digest(n) => digest::encode(n),
            Action::Proposal(p) => proposal::encode(p),
            Action::Agents(a) => agents::encode(a),
            Action::Grants(g) => grants::encode(g),
        };
        let data = format!("{DATA_PREFIX}{data}");
        debug_assert!(data.len() <= MAX_DATA, "{data}");
        data
    }

    #[must_use]
    pub fn who(&self) -> Who {
        match self {
            Action::Approval(_)
            | Action::Digest(_)
            | Action::Proposal(_)
            | Action::Agents(_)
            | Action::Grants(_) => Who::Approvers,
        }
    }

    /// What was tried, for the audit row of a refusal.
    #[must_use]
    pub fn attempted(&self) -> String {
        match self {
            Action::Approval(a) => format!("{:?}", a.verb()),
            Action::Digest(_) => "review digest".into(),
            Action::Proposal(p) if p.approve => "approve proposal".into(),
            Action::Proposal(_) => "decline proposal".into(),
            Action::Agents(a) => a.attempted().into(),
            Action::Grants(_) => "revoke grant".into(),
        }
    }

    /// The subject the action is about, if it names one.
    #[must_use]
    pub fn subject(&self) -> Option<&str> {
        match self {
            Action::Approval(a) => Some(a.id()),
            Action::Proposal(p) => Some(&p.id),
            Action::Digest(_) | Action::Agents(_) | Action::Grants(_) => None,
        }
    }
}

/// A typed command, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Approval(approval::Command),
    Pending,
    Help,
    Agents(agents::Command),
    Grants(grants::Command),
}

impl Command {
    /// Reads a message as a command. `bot_username` is the bot's own username
    /// (Telegram), used to ignore `/cmd@otherbot`; `in_reply` says the message replies
    /// to (or is in the thread of) a card, which lets a decision omit the id and be
    /// plain words. `None` when the message is not for gatebot.
    #[must_use]
    pub fn parse(text: &str, bot_username: Option<&str>, in_reply: bool) -> Option<Command> {
        match command::parse(text, bot_username) {
            Some(typed) => match typed.name.as_str() {
                "pending" | "list" => Some(Command::Pending),
                "help" | "start" => Some(Command::Help),
                _ => agents::parse(&typed)
                    .map(Command::Agents)
                    .or_else(|| grants::parse(&typed).map(Command::Grants))
                    .or_else(|| approval::parse_command(&typed, in_reply).map(Command::Approval)),
            },
            None if in_reply => approval::parse_words(text).map(Command::Approval),
            None => None,
        }
    }

    #[must_use]
    pub fn who(&self) -> Who {
        match self {
            Command::Approval(_) | Command::Pending | Command::Agents(_) | Command::Grants(_) => {
                Who::Approvers
            }
            Command::Help => Who::Anyone,
        }
    }

    /// The subject the command names, as typed (an id or a prefix), if it names one.
    #[must_use]
    pub fn subject(&self) -> Option<&str> {
        match self {
            Command::Approval(c) => c.id.as_deref(),
            Command::Pending | Command::Help | Command::Agents(_) | Command::Grants(_) => None,
        }
    }

    /// What was tried, for the audit row of a refusal.
    #[must_use]
    pub fn attempted(&self) -> String {
        match self {
            Command::Approval(c) => format!("{:?}", c.verb),
            Command::Pending => "pending".into(),
            Command::Help => "help".into(),
            Command::Agents(c) => c.attempted(),
            Command::Grants(c) => c.attempted(),
        }
    }
}

/// Runs a press by someone allowed to take it. `at` is where the pressed button is.
pub async fn press(cx: &Context, actor: &Actor, action: Action, at: &At) -> Answer {
    match action {
        Action::Approval(a) => approval::press(cx, actor, a).await,
        Action::Digest(nav) => digest::press(cx, nav, at).await,
        Action::Proposal(p) => proposal::press(cx, actor, p).await,
        Action::Agents(a) => agents::press(cx, actor, a).await,
        Action::Grants(g) => grants::press(cx, actor, g).await,
    }
}

/// Runs a command by someone allowed to give it. `replied` is the subject of the card
/// the message replies to, if any.
pub async fn command(
    cx: &Context,
    actor: &Actor,
    cmd: Command,
    replied: Option<&Subject>,
) -> Answer {
    match cmd {
        Command::Approval(c) => match proposal::named(cx, c.id.as_deref(), replied).await {
            // `/approve <id>` and replies answer a proposal when they name one.
            Some(id) => proposal::command(cx, actor, c, &id).await,
            None => approval::command(cx, actor, c, replied).await,
        },
        Command::Pending => pending::answer(cx).await,
        Command::Help => help::answer(),
        Command::Agents(c) => agents::command(cx, actor, c).await,
        Command::Grants(c) => grants::command(cx, actor, c).await,
    }
}

/// Runs the answer to a question gatebot asked (the reply to a "why deny?" question,
/// or the form it opened). `text` is what the person wrote (`None`: nothing).
pub async fn answer(
    cx: &Context,
    actor: &Actor,
    subject: &str,
    purpose: Purpose,
    text: Option<String>,
) -> Answer {
    match purpose {
        Purpose::DenyReason => reason::answer(cx, actor, subject, text).await,
    }
}

/// A subject's card as things stand, for delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    pub card: Card,
    /// The subject's revision the card shows.
    pub revision: String,
    /// Whether the subject still waits for people (new cards are posted only then).
    pub open: bool,
}

/// The card that shows `subject` now; `None` if the subject is gone.
pub async fn render(cx: &Context, subject: &Subject) -> Result<Option<Rendered>, EngineError> {
    match subject.kind {
        SubjectKind::Approval => match cx.engine.get(&subject.id).await {
            Ok(a) => {
                let pending = a.status == crate::approval::Status::Pending;
                let extras = approval::Extras {
                    offer: if pending && a.always_allow_offered {
                        cx.engine.offer(&a.id).await?
                    } else {
                        None
                    },
                    allow_for: Some(cx.engine.config().trust.grants.allow_for),
                    grant: if a.always_allowed {
                        cx.engine.grant_of_approval(&a.id).await?
                    } else {
                        None
                    },
                };
                Ok(Some(Rendered {
                    card: approval::prompt(&a, &extras),
                    revision: a.status.as_str().to_string(),
                    open: pending,
                }))
            }
            Err(EngineError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        },
        SubjectKind::Proposal => match cx.engine.proposal(&subject.id).await {
            Ok(p) => Ok(Some(Rendered {
                card: proposal::card(&p, cx.engine.config().trust.promotion.decline_quiet),
                revision: p.status.as_str().to_string(),
                open: p.status == crate::trust::ProposalStatus::Open,
            })),
            Err(EngineError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        },
    }
}
