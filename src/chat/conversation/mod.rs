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
//! [`help`] (`/help`), [`checkin`] (a workflow run's check-in), [`task`] (the inbox:
//! `/task`, task cards and their questions), [`proposal`] (a proposed tier change),
//! [`agents`] (`/agents`, `/agent`, `/tier`, `/pause`, `/resume`, `/assess`), [`grants`]
//! (`/grants`, `/revoke`).
//!
//! To add a kind: write its module (card, actions, commands, handlers), then add its
//! variants to [`Action`] / [`Command`] and their arms to the `match`es below; if its
//! subject gets cards of its own, add an arm to [`render`] and to [`shown_in`].

pub mod agents;
pub mod approval;
pub mod checkin;
pub mod digest;
pub mod grants;
pub mod help;
pub mod pending;
pub mod proposal;
pub mod reason;
pub mod task;

use crate::chat::card::Card;
use crate::chat::command;
use crate::chat::inbound::{Actor, Answer, At, Purpose};
use crate::chat::Context;
use crate::engine::EngineError;
use crate::subject::{Subject, SubjectKind};

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
    Task(task::Action),
    CheckIn(checkin::Action),
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
        if let Some(t) = task::decode(rest) {
            return Ok(Action::Task(t));
        }
        if let Some(a) = checkin::decode(rest) {
            return Ok(Action::CheckIn(a));
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
            Action::Task(t) => task::encode(t),
            Action::CheckIn(a) => checkin::encode(a),
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
            | Action::CheckIn(_)
            | Action::Task(_)
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
            Action::Task(t) => t.attempted().into(),
            Action::CheckIn(a) => format!("check-in {:?}", a.button),
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
            Action::Task(t) => Some(t.id()),
            Action::CheckIn(a) => Some(&a.id),
            Action::Proposal(p) => Some(&p.id),
            Action::Digest(_) | Action::Agents(_) | Action::Grants(_) => None,
        }
    }
}

/// A typed command, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Approval(approval::Command),
    CheckIn(checkin::Command),
    Pending,
    Help,
    Task(task::Command),
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
                _ => task::parse_command(&typed)
                    .map(Command::Task)
                    .or_else(|| agents::parse(&typed).map(Command::Agents))
                    .or_else(|| grants::parse(&typed).map(Command::Grants))
                    .or_else(|| checkin::parse_command(&typed, in_reply).map(Command::CheckIn))
                    .or_else(|| approval::parse_command(&typed, in_reply).map(Command::Approval)),
            },
            None if in_reply => checkin::parse_words(text)
                .map(Command::CheckIn)
                .or_else(|| approval::parse_words(text).map(Command::Approval)),
            None => None,
        }
    }

    #[must_use]
    pub fn who(&self) -> Who {
        match self {
            Command::Approval(_)
            | Command::CheckIn(_)
            | Command::Pending
            | Command::Task(_)
            | Command::Agents(_)
            | Command::Grants(_) => Who::Approvers,
            Command::Help => Who::Anyone,
        }
    }

    /// The subject the command names, as typed (an id or a prefix), if it names one.
    #[must_use]
    pub fn subject(&self) -> Option<&str> {
        match self {
            Command::Approval(c) => c.id.as_deref(),
            Command::CheckIn(c) => c.id.as_deref(),
            Command::Pending
            | Command::Help
            | Command::Task(_)
            | Command::Agents(_)
            | Command::Grants(_) => None,
        }
    }

    /// What was tried, for the audit row of a refusal.
    #[must_use]
    pub fn attempted(&self) -> String {
        match self {
            Command::Approval(c) => format!("{:?}", c.verb),
            Command::CheckIn(c) => format!("check-in {:?}", c.verb),
            Command::Pending => "pending".into(),
            Command::Help => "help".into(),
            Command::Task(task::Command::Add { .. }) => "create task".into(),
            Command::Task(task::Command::List) => "list tasks".into(),
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
        Action::Task(t) => task::press(cx, actor, t).await,
        Action::CheckIn(a) => checkin::press(cx, actor, a).await,
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
        // Words for a request in reply to a check-in: say what the check-in takes.
        Command::Approval(c)
            if c.id.is_none() && replied.is_some_and(|s| s.kind == SubjectKind::CheckIn) =>
        {
            checkin::not_a_request()
        }
        Command::Approval(c) => match proposal::named(cx, c.id.as_deref(), replied).await {
            // `/approve <id>` and replies answer a proposal when they name one.
            Some(id) => proposal::command(cx, actor, c, &id).await,
            None => approval::command(cx, actor, c, replied).await,
        },
        Command::CheckIn(c) => checkin::command(cx, actor, c, replied).await,
        Command::Pending => pending::answer(cx).await,
        Command::Help => help::answer(),
        Command::Task(c) => task::command(cx, actor, c).await,
        Command::Agents(c) => agents::command(cx, actor, c).await,
        Command::Grants(c) => grants::command(cx, actor, c).await,
    }
}

/// Runs the answer to a question gatebot asked (the reply to a "why deny?" or "why
/// stop?" question, or the form it opened). `text` is what the person wrote (`None`: nothing).
pub async fn answer(
    cx: &Context,
    actor: &Actor,
    subject: &str,
    purpose: Purpose,
    text: Option<String>,
) -> Answer {
    match purpose {
        Purpose::DenyReason => reason::answer(cx, actor, subject, text).await,
        Purpose::StopReason => checkin::answer_stop(cx, actor, subject, text).await,
        Purpose::Clarify | Purpose::NeedsInput => task::answer(cx, actor, subject, text).await,
    }
}

/// Whether text written in reply to `subject` (to its card, in its thread) that is no
/// command is for its kind to read ([`reply`]), rather than words for a command.
#[must_use]
pub fn reads_replies(subject: &Subject) -> bool {
    match subject.kind {
        SubjectKind::Approval | SubjectKind::CheckIn | SubjectKind::Proposal => false,
        SubjectKind::Task => true,
    }
}

/// Runs text written in reply to a subject's card (or in its thread) that is no
/// command, where the subject's kind reads such text itself (a task reads it as the
/// answer to its question); `None` where it does not, and the text is read as words
/// for a command as before. The caller has checked the writer is an approver.
pub async fn reply(cx: &Context, actor: &Actor, subject: &Subject, text: &str) -> Option<Answer> {
    match subject.kind {
        SubjectKind::Approval | SubjectKind::CheckIn | SubjectKind::Proposal => None,
        SubjectKind::Task => Some(task::reply(cx, actor, subject, text).await),
    }
}

/// The subject (its short id) a card shows, read back from the text a platform keeps
/// of a message (see [`approval::shown_in`]): how a reply to a message gatebot has no
/// record of still reaches its subject. Each kind whose subjects get cards recognises
/// its own.
#[must_use]
pub fn shown_in(text: &str) -> Option<String> {
    // Each kind with cards adds `.or_else(|| kind::shown_in(text))`.
    approval::shown_in(text)
        .or_else(|| checkin::shown_in(text))
        .or_else(|| proposal::shown_in(text))
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
                let mut card = approval::prompt(&a, &extras);
                if let Some(id) = &a.task_id {
                    if let Some(crate::engine::TaskSubject::Task(t)) =
                        cx.engine.task_subject(id).await?
                    {
                        approval::add_task(&mut card, &t);
                    }
                }
                Ok(Some(Rendered {
                    card,
                    revision: a.status.as_str().to_string(),
                    open: pending,
                }))
            }
            Err(EngineError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        },
        SubjectKind::Proposal => match cx.engine.proposal(&subject.id).await {
            Ok(p) => Ok(Some(Rendered {
                card: proposal::card(&p, cx.engine.config().trust.promotion.decline_quiet),
                revision: p.status.as_str().to_string(),
                open: p.status == crate::trust::ProposalStatus::Open,
            })),
            Err(EngineError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        },
        SubjectKind::Task => task::render(cx, subject).await,
        SubjectKind::CheckIn => checkin::render(cx, subject).await,
    }
}
