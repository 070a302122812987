//! The approval prompt: a request's card, its buttons, and the commands that decide it.
//!
//! - Card: who wants what, the risk and why gatebot asks, the agent's summary and
//!   arguments (as code, cut to fit), the deadline; once settled, the outcome instead
//!   of the buttons.
//! - Buttons: ✅ Allow once · ♾️ Always allow (only where the policy offers it) ·
//!   ❌ Deny, which asks why ([`reason`]) and offers 🚫 Deny without reason.
//!   Where "Always allow" applies, the prompt also offers ⏱ Allow for 1 h (`[grants]
//!   allow_for`), and for a shell-like tool its always-allow is scoped: ♾️ Always:
//!   this command, and ♾️ Always: this prefix when the command has one (never for
//!   interpreters, wrappers or compound commands). What the scoped buttons grant was
//!   stored with the request ([`crate::trust::grants::OfferRow`]); the button names only the
//!   request. After enough approvals in a row, the prompt says so and offers the
//!   matching grant first (`[grants] suggest_after`).
//!   Data: `gb1:a:<id>`, `gb1:A:<id>`, `gb1:d:<id>`, `gb1:s:<id>`, and `gb1:ae:<id>`
//!   (exact), `gb1:ap:<id>` (prefix), `gb1:af:<id>` (for a while).
//! - Commands (case-insensitive): `/approve <id>`, `/approve_always <id>`,
//!   `/deny <id> [reason]`; OpenClaw's `/approve <id> allow-once|allow-always|deny
//!   [reason]`. In a reply to the card (or in its thread) no id is needed, everything
//!   after `/deny` is the reason, and plain `approve`, `always allow`, `deny [reason]`
//!   work too.
//! - Who: approvers only.

use crate::approval::{Approval, Decision, Status, Verb};
use crate::chat::card::{Block, Button, Card, Code, Field, Hint, Line, Style, Tag};
use crate::chat::command::{first_word, non_empty, Typed};
use crate::chat::exchange::{Actor, Answer, At, Said};
use crate::chat::text::shorten;
use crate::chat::Context;
use crate::engine::{describe_settled, EngineError};
use crate::engine::{GrantChoice, ScopeChoice};
use crate::subject::Purpose;
use crate::subject::{Subject, SubjectKind};
use crate::time::{clock, now_ms};
use crate::trust::grants::OfferRow;
use crate::words;

use super::full_id;
use super::owner::{Decided, Listed, Listing, Offered, OwnerDecision, Refused};
#[cfg(test)]
use super::EXAMPLE_ID;
use super::{Rendered, SlashCommand};
use crate::engine::Engine;

#[cfg(test)]
mod golden;
mod owner;
pub mod reason;
use crate::trust::{Grant, Scope};

/// The approval prompt's kind: requests that ask a human.
pub struct Approvals;

impl super::Kind for Approvals {
    type Action = Action;
    type Command = Command;
    const SUBJECT: Option<SubjectKind> = Some(SubjectKind::Approval);
    /// The "why deny?" question ([`reason`]).
    const PURPOSES: &'static [Purpose] = &[Purpose::DenyReason];
    const DECIDES_UNSHOWN: bool = true;
    const COMMANDS: &'static [SlashCommand] = &[
        SlashCommand {
            name: "approve",
            menu: "<id> — allow a request once",
            help: Some(("/approve <id>", "allow a request once")),
        },
        SlashCommand {
            name: "approve_always",
            menu: "<id> — allow it, and this tool for this agent from now on",
            help: Some((
                "/approve_always <id>",
                "allow it and this tool for this agent from now on",
            )),
        },
        SlashCommand {
            name: "deny",
            menu: "<id> [reason] — refuse a request",
            help: Some((
                "/deny <id> [reason]",
                "refuse it; the reason reaches the agent",
            )),
        },
    ];

    fn parse(typed: &Typed<'_>, in_reply: bool) -> Option<Command> {
        parse_command(typed, in_reply)
    }

    fn parse_words(text: &str) -> Option<Command> {
        parse_words(text)
    }

    async fn render(engine: &Engine, subject: &Subject) -> Result<Option<Rendered>, EngineError> {
        render(engine, subject).await
    }

    /// Denies the request with the answer to "why deny?" as the reason.
    async fn answer(
        cx: &Context,
        actor: &Actor,
        subject: &str,
        _purpose: Purpose,
        text: Option<String>,
    ) -> Answer {
        decide(cx, actor, Verb::Deny, subject, text).await
    }

    async fn pending(cx: &Context) -> Result<Option<Card>, EngineError> {
        let (list, total) = cx.engine.pending_page(PENDING_SHOWN).await?;
        Ok(Some(pending_card(&list, total)))
    }

    async fn decide(
        engine: &Engine,
        typed: &str,
        decision: OwnerDecision,
    ) -> Result<Decided, Refused> {
        owner::decide(engine, typed, decision).await
    }

    async fn listed(engine: &Engine, listing: &Listing) -> Result<Option<Listed>, EngineError> {
        owner::listed(engine, listing).await
    }

    #[cfg(test)]
    fn golden_cards() -> Vec<(&'static str, Card)> {
        golden::cards()
    }

    #[cfg(test)]
    fn example_cards() -> Vec<Card> {
        use crate::approval::Via;
        let mut a = sample();
        a.summary = Some("&<".repeat(crate::wire::MAX_SUMMARY_CHARS / 2));
        a.args = serde_json::json!({"body": "\u{1F600}&".repeat(10_000)});
        a.tool = "<".repeat(crate::wire::MAX_TOOL_LEN);
        a.agent = "a".repeat(64);
        let mut cards = vec![card(&a)];
        a.status = Status::Rejected;
        a.decided_by = Some("alice".into());
        a.decided_via = Some(Via::Cli);
        a.decided_at = Some(0);
        a.decision_reason = Some("<no>".repeat(5000));
        cards.push(card(&a));
        cards.push(decided(&a, None));
        let list: Vec<Approval> = (0..PENDING_SHOWN).map(|_| a.clone()).collect();
        cards.push(pending_card(&list, 500));
        cards
    }
}

impl super::Press for Action {
    fn decode(data: &str) -> Option<Action> {
        let (code, id) = data.split_once(':')?;
        let button = ButtonKind::ALL.into_iter().find(|b| b.code() == code)?;
        full_id(id).map(|id| Action { button, id })
    }

    fn encode(&self) -> String {
        format!("{}:{}", self.button.code(), self.id)
    }

    fn attempted(&self) -> String {
        format!("{:?}", self.verb())
    }

    fn subject(&self) -> Option<&str> {
        Some(&self.id)
    }

    fn offered(&self, config: &crate::config::Config) -> Option<Offered> {
        let id = self.id.as_str();
        Some(match self.button {
            ButtonKind::Approve => Offered::verb(id, "approve"),
            ButtonKind::ApproveAlways => Offered::verb(id, "approve-always"),
            ButtonKind::ApproveExact => Offered {
                exact: true,
                ..Offered::verb(id, "approve-always")
            },
            ButtonKind::ApprovePrefix => Offered {
                prefix: Some(String::new()),
                ..Offered::verb(id, "approve-always")
            },
            ButtonKind::ApproveFor => Offered {
                for_: Some(crate::time::format_duration(config.trust.grants.allow_for)),
                ..Offered::verb(id, "approve")
            },
            ButtonKind::Deny => Offered::verb(id, "deny").asking_why(),
            ButtonKind::DenyNoReason => Offered::verb(id, "deny"),
        })
    }

    async fn press(self, cx: &Context, actor: &Actor, at: &At) -> Answer {
        press(cx, actor, self, at.private).await
    }

    #[cfg(test)]
    fn examples() -> Vec<Action> {
        ButtonKind::ALL
            .into_iter()
            .map(|button| Action {
                button,
                id: EXAMPLE_ID.into(),
            })
            .collect()
    }
}

impl super::Run for Command {
    fn subject(&self) -> Option<&str> {
        self.id.as_deref()
    }

    fn attempted(&self) -> String {
        format!("{:?}", self.verb)
    }

    fn wants_replied(&self) -> bool {
        self.id.is_none()
    }

    async fn run(self, cx: &Context, actor: &Actor, said: &Said<'_>) -> Answer {
        let replied = said.replied;
        // Words for a request in reply to a check-in: say what the check-in takes.
        if self.id.is_none() && replied.is_some_and(|s| s.kind == SubjectKind::CheckIn) {
            return super::checkin::not_a_request();
        }
        // `/approve <id>` and replies answer a proposal when they name one.
        match super::proposal::named(cx, self.id.as_deref(), replied).await {
            Some(id) => super::proposal::command(cx, actor, self.verb, self.reason, &id).await,
            None => command(cx, actor, self, replied, said.private).await,
        }
    }
}

/// A press on a prompt's button.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    pub button: ButtonKind,
    /// The request's full id.
    pub id: String,
}

/// Which button.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ButtonKind {
    Approve,
    ApproveAlways,
    /// Asks for a reason first.
    Deny,
    /// Denies at once (offered after ❌).
    DenyNoReason,
    /// Approves and grants the exact command (shell-like tools).
    ApproveExact,
    /// Approves and grants the prefix the prompt offered (shell-like tools).
    ApprovePrefix,
    /// Approves and grants for `[grants] allow_for`.
    ApproveFor,
}

impl ButtonKind {
    pub const ALL: [ButtonKind; 7] = [
        ButtonKind::Approve,
        ButtonKind::ApproveAlways,
        ButtonKind::Deny,
        ButtonKind::DenyNoReason,
        ButtonKind::ApproveExact,
        ButtonKind::ApprovePrefix,
        ButtonKind::ApproveFor,
    ];

    /// Its code in button data (`gb1:<code>:<request id>`).
    fn code(self) -> &'static str {
        match self {
            ButtonKind::Approve => "a",
            ButtonKind::ApproveAlways => "A",
            ButtonKind::Deny => "d",
            ButtonKind::DenyNoReason => "s",
            ButtonKind::ApproveExact => "ae",
            ButtonKind::ApprovePrefix => "ap",
            ButtonKind::ApproveFor => "af",
        }
    }
}

impl Action {
    #[must_use]
    pub fn verb(&self) -> Verb {
        match self.button {
            ButtonKind::Approve | ButtonKind::ApproveFor => Verb::Approve,
            ButtonKind::ApproveAlways | ButtonKind::ApproveExact | ButtonKind::ApprovePrefix => {
                Verb::ApproveAlways
            }
            ButtonKind::Deny | ButtonKind::DenyNoReason => Verb::Deny,
        }
    }

    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }
}

/// The button data of a prompt's button (`gb1:a:<id>`), for cards and tests.
#[must_use]
pub fn button_data(button: ButtonKind, id: &str) -> String {
    super::Action::Approval(Action {
        button,
        id: id.to_string(),
    })
    .encode()
}

/// A decision typed as a command or as words in a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub verb: Verb,
    /// The id typed, if any (a reply to a card may omit it).
    pub id: Option<String>,
    pub reason: Option<String>,
}

/// `/approve`, `/approve_always`, `/deny` and their spellings; `None` for other names.
#[must_use]
pub fn parse_command(typed: &Typed<'_>, in_reply: bool) -> Option<Command> {
    let rest = typed.args;
    match typed.name.as_str() {
        "approve" | "allow" => Some(approve(rest, in_reply)),
        "approve_always" | "allow_always" | "always" => Some(Command {
            verb: Verb::ApproveAlways,
            id: first_word(rest).filter(|_| !in_reply || !rest.is_empty()),
            reason: None,
        }),
        "deny" | "reject" => Some(deny(rest, in_reply)),
        _ => None,
    }
}

/// Plain words in a reply to a card: `approve`, `always allow`, `deny [reason]`.
#[must_use]
pub fn parse_words(text: &str) -> Option<Command> {
    let text = text.trim();
    let lower = text.to_ascii_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let rest = text.split_once(char::is_whitespace).map_or("", |(_, r)| r);
    let verb = match words.as_slice() {
        ["approve" | "approved" | "allow" | "ok" | "yes"] => Verb::Approve,
        ["always" | "approve_always" | "allow_always"]
        | ["always", "allow" | "approve"]
        | ["approve" | "allow", "always"] => Verb::ApproveAlways,
        [first, ..] if matches!(*first, "deny" | "reject" | "no") => {
            return Some(Command {
                verb: Verb::Deny,
                id: None,
                reason: non_empty(rest),
            })
        }
        _ => return None,
    };
    Some(Command {
        verb,
        id: None,
        reason: None,
    })
}

fn approve(rest: &str, in_reply: bool) -> Command {
    let mut words = rest.split_whitespace();
    let id = words.next().map(str::to_string);
    // OpenClaw: `/approve <id> allow-once|allow-always|deny [reason]`.
    let verb = match words.next().map(|w| w.parse::<Verb>()) {
        Some(Ok(v)) => v,
        _ => Verb::Approve,
    };
    let reason = if verb == Verb::Deny {
        let after: Vec<&str> = words.collect();
        non_empty(&after.join(" "))
    } else {
        None
    };
    Command {
        verb,
        id: id.filter(|_| !(in_reply && rest.is_empty())),
        reason,
    }
}

fn deny(rest: &str, in_reply: bool) -> Command {
    if in_reply {
        return Command {
            verb: Verb::Deny,
            id: None,
            reason: non_empty(rest),
        };
    }
    let (id, reason) = match rest.split_once(char::is_whitespace) {
        Some((id, r)) => (Some(id.to_string()), non_empty(r)),
        None => (non_empty(rest), None),
    };
    Command {
        verb: Verb::Deny,
        id,
        reason,
    }
}

/// Runs a press on a prompt's button (`private`: in the presser's private chat).
pub async fn press(cx: &Context, actor: &Actor, action: Action, private: bool) -> Answer {
    let choice = match action.button {
        ButtonKind::Deny => return reason::ask(cx, &action.id).await,
        ButtonKind::ApproveExact => GrantChoice {
            scope: ScopeChoice::Exact,
            for_: None,
        },
        ButtonKind::ApprovePrefix => GrantChoice {
            scope: ScopeChoice::Prefix(None),
            for_: None,
        },
        ButtonKind::ApproveFor => GrantChoice {
            scope: ScopeChoice::Default,
            for_: Some(cx.engine.config().trust.grants.allow_for),
        },
        ButtonKind::Approve | ButtonKind::ApproveAlways | ButtonKind::DenyNoReason => {
            GrantChoice::default()
        }
    };
    let d = (action.verb(), action.id.as_str(), None);
    decide_in(cx, actor, d, choice, private).await
}

/// Runs a typed decision. `replied` is the subject of the card the message replies to.
pub async fn command(
    cx: &Context,
    actor: &Actor,
    cmd: Command,
    replied: Option<&Subject>,
    private: bool,
) -> Answer {
    let typed = match (cmd.id, replied) {
        (Some(id), _) => id,
        (None, Some(s)) => s.id.clone(),
        (None, None) => {
            return Answer::note("Which request? Use /approve <id>, or reply to the prompt.")
        }
    };
    let d = (cmd.verb, typed.as_str(), cmd.reason);
    decide_in(cx, actor, d, GrantChoice::default(), private).await
}

/// Applies `actor`'s decision on the request `typed` names (id, short id or prefix).
/// The caller has checked that the actor may decide.
pub async fn decide(
    cx: &Context,
    actor: &Actor,
    verb: Verb,
    typed: &str,
    reason: Option<String>,
) -> Answer {
    decide_granting(cx, actor, verb, typed, reason, GrantChoice::default()).await
}

/// [`decide`], choosing what an approval grants.
pub async fn decide_granting(
    cx: &Context,
    actor: &Actor,
    verb: Verb,
    typed: &str,
    reason: Option<String>,
    choice: GrantChoice,
) -> Answer {
    decide_in(cx, actor, (verb, typed, reason), choice, false).await
}

/// [`decide_granting`] in a private chat with the person, or not: an approval that
/// needs their second factor gets a link to the dashboard's confirm page there only.
async fn decide_in(
    cx: &Context,
    actor: &Actor,
    (verb, typed, reason): (Verb, &str, Option<String>),
    choice: GrantChoice,
    private: bool,
) -> Answer {
    let decision = Decision {
        verb,
        actor: actor.label(),
        via: cx.via(),
        reason,
        // Chat never confirms a second factor: it links to the dashboard's confirm page.
        factor: false,
    };
    match cx.engine.decide_granting(typed, decision, choice).await {
        Ok(a) if a.status == Status::Pending => {
            // A vote under an approval rule: the request waits for more.
            let votes = cx.engine.votes(&a.id).await.unwrap_or_default();
            Answer::Done(Card::text(format!("🗳 {}", vote_counted(&a, &votes))))
        }
        Ok(a) => {
            let grant = if a.always_allowed {
                cx.engine.grant_of_approval(&a.id).await.ok().flatten()
            } else {
                None
            };
            Answer::Done(decided(&a, grant.as_ref()))
        }
        Err(EngineError::AlreadySettled(a)) => already_settled(&a),
        Err(EngineError::StepUpRequired {
            request,
            enrolled: true,
        }) => step_up_link(cx, actor, &request, private).await,
        Err(e) => Answer::alert(crate::chat::failure::failure(&e)),
    }
}

/// The answer to an approval that needs `actor`'s second factor: in their private
/// chat, a single-use sign-in link to the dashboard's confirm page for `request`
/// (where a code decides it); anywhere else, where to ask for one (a link posted in a
/// group could be used by anyone in it).
async fn step_up_link(cx: &Context, actor: &Actor, request: &str, private: bool) -> Answer {
    if !private {
        return Answer::alert(format!(
            "Approving request {request} needs your second factor. Send /approve {request} to \
             me in a private chat for a link to confirm it with a code, or run gatebot decide \
             {request} approve on gatebot's machine. A deny needs no code."
        ));
    }
    let identity = format!("{}:{}", cx.platform.as_str(), actor.id);
    let next = format!("/requests/{request}/confirm");
    match cx
        .engine
        .sign_in_link_to(&actor.label(), cx.via(), Some(identity), Some(next))
        .await
    {
        Ok(link) => Answer::Card(Card {
            blocks: vec![
                Block::Line(Line::text(format!(
                    "🔐 Approving request {request} needs your second factor. Confirm it with a \
                     code from your authenticator app here:"
                ))),
                Block::Line(Line::text(link.url)),
                Block::Line(Line::text(format!(
                    "The link signs you in once and expires {}; don't share it.",
                    words::relative(link.expires_at, now_ms())
                ))),
            ],
            fallback: format!("Confirm request {request} with your second factor"),
            ..Card::default()
        }),
        Err(EngineError::Conflict(crate::engine::Conflict::DashboardOff)) => {
            Answer::alert(format!(
                "Approving request {request} needs your second factor, confirmed on the web \
                 dashboard, which is off: run gatebot decide {request} approve on gatebot's \
                 machine (it asks for a code)."
            ))
        }
        Err(e) => Answer::alert(crate::chat::failure::failure(&e)),
    }
}

/// "Vote counted on k7m2abcd: 1 of 2 approvals: alice ✓. Waiting for bob or carol."
#[must_use]
pub fn vote_counted(a: &Approval, votes: &[crate::approval::votes::Vote]) -> String {
    let progress = a
        .route
        .as_ref()
        .map(|r| r.progress(votes))
        .unwrap_or_default();
    format!("Vote counted on {}: {progress}", a.short_id)
}

/// "Request k7m2abcd is already approved by Alice (42) on Telegram."
#[must_use]
pub fn already_settled(a: &Approval) -> Answer {
    Answer::Notice {
        card: Card {
            fallback: format!(
                "Request {} was already settled ({})",
                a.short_id,
                status_word(a.status)
            ),
            ..Card::text(format!(
                "Request {} is already {}.",
                a.short_id,
                describe_settled(a)
            ))
        },
        alert: true,
    }
}

/// "✅ Approved k7m2abcd (`send_email` from `mailer`)."
fn decided(a: &Approval, grant: Option<&Grant>) -> Card {
    let call = |l: Line| {
        l.and(" (")
            .code(shorten(&a.tool, 60))
            .and(" from ")
            .code(shorten(&a.agent, 40))
            .and(")")
    };
    let line = match (grant, a.status) {
        (Some(g), _) => {
            let line = call(Line::text(format!("♾️ Approved {}", a.short_id)))
                .and("; ")
                .code(shorten(&a.agent, 40))
                .and(" may now run ")
                .code(shorten(&a.tool, 60))
                .and(" without asking: ");
            grant_words(line, g).and(format!(" (grant {}).", g.short_id))
        }
        (_, Status::Rejected) => {
            let line = call(Line::text(format!("❌ Denied {}", a.short_id)));
            match &a.decision_reason {
                Some(r) => line.and(": ").code(shorten(r, 500)).and("."),
                None => line.and("."),
            }
        }
        _ => call(Line::text(format!("✅ Approved {}", a.short_id))).and("."),
    };
    Card {
        blocks: vec![Block::Line(line)],
        fallback: format!("{}: request {}", status_word(a.status), a.short_id),
        ..Card::default()
    }
}

/// What a grant covers and until when, appended to `line`.
#[must_use]
pub fn grant_words(line: Line, g: &Grant) -> Line {
    let line = match &g.scope {
        Scope::Tool => line.and("every call"),
        Scope::Exact(c) => line.and("exactly ").code(shorten(c, 200)),
        Scope::Prefix(p) => line.and("commands starting ").code(shorten(p, 200)),
        Scope::Call(args) => line
            .and("exactly the call with arguments ")
            .code(shorten(args, 200)),
    };
    let line = match g.uses_left {
        None => line,
        Some(1) => line.and(", once"),
        Some(n) => line.and(format!(", {n} more times")),
    };
    match g.expires_at {
        Some(at) => line.and(format!(", until {}", clock(at))),
        None => line.and(", until revoked"),
    }
}

/// Longest policy reason shown, in characters (it names the tool).
const REASON_CHARS: usize = 300;
/// Most of a summary shown, in UTF-16 units of its escaped form, so the arguments
/// after it keep room.
const SUMMARY_ROOM: usize = 1200;

/// The fields every view of a request shows.
#[must_use]
pub fn fields(a: &Approval) -> Vec<Field> {
    let mut fields = vec![
        Field::new("Risk", Line::text(words::risk(&a.risk))),
        Field::new(
            "Why asking",
            Line::text(shorten(&a.policy_reason, REASON_CHARS)),
        ),
    ];
    if let (Status::Pending, Some(at)) = (a.status, a.expires_at) {
        // Under an approval rule's deadline, silence is a denial, not an expiry.
        let routed = a.route.as_ref().is_some_and(|r| r.deadline_ms.is_some());
        let (label, prefix) = if routed {
            ("Deadline", "denied if unanswered ")
        } else {
            ("Expires", "")
        };
        fields.push(Field::new(
            label,
            Line::text(format!("{prefix}{}", words::deadline(at, now_ms()))),
        ));
    }
    fields
}

/// "`mailer` wants to run `send_email`": who asks for what, said once.
#[must_use]
pub fn asks(a: &Approval) -> Line {
    Line::default()
        .code(shorten(&a.agent, 40))
        .and(" wants to run ")
        .code(shorten(&a.tool, 60))
}

/// The agent's summary, as a code block cut to fit, if it gave one.
#[must_use]
pub fn agent_summary(a: &Approval) -> Option<Block> {
    let s = a.summary.as_ref().filter(|s| !s.trim().is_empty())?;
    Some(Block::Code(Code {
        label: "Summary from the agent".into(),
        body: s.clone(),
        lang: None,
        what: "the summary",
        max: Some(SUMMARY_ROOM),
    }))
}

/// The agent's summary and arguments, as code blocks cut to fit.
#[must_use]
pub fn agent_text(a: &Approval) -> Vec<Block> {
    let mut blocks: Vec<Block> = agent_summary(a).into_iter().collect();
    blocks.push(agent_arguments(a));
    blocks
}

/// The agent's arguments, as a JSON code block cut to fit.
#[must_use]
pub fn agent_arguments(a: &Approval) -> Block {
    let pretty = serde_json::to_string_pretty(&a.args).unwrap_or_else(|_| a.args.to_string());
    Block::Code(Code {
        label: "Arguments from the agent".into(),
        body: pretty,
        lang: Some("json"),
        what: "arguments",
        max: None,
    })
}

/// The decision buttons for a pending request; `suffix` follows each label (the
/// short id, where a list shows several requests).
#[must_use]
pub fn buttons(a: &Approval, suffix: &str) -> Vec<Button> {
    let mut row = vec![Button::new(
        format!("✅ Allow once{suffix}"),
        button_data(ButtonKind::Approve, &a.id),
    )
    .styled(Style::Primary)];
    if a.always_allow_offered {
        row.push(Button::new(
            format!("♾️ Always allow{suffix}"),
            button_data(ButtonKind::ApproveAlways, &a.id),
        ));
    }
    row.push(
        Button::new(
            format!("❌ Deny{suffix}"),
            button_data(ButtonKind::Deny, &a.id),
        )
        .styled(Style::Danger),
    );
    row
}

/// The request's card: with buttons while pending, with its outcome once settled.
#[must_use]
pub fn card(a: &Approval) -> Card {
    let pending = a.status == Status::Pending;
    // Who asks for what, in the agent's words, how risky and until when; then the
    // arguments, which may be long.
    let mut blocks = vec![
        Block::Heading {
            icon: HEADING_ICON,
            // One title whatever the status: the outcome line says how it ended.
            title: "gatebot: request".into(),
            // `Tag::read` reads the id back from this line.
            tag: Some(Tag::subject(SubjectKind::Approval, &a.short_id)),
        },
        Block::Line(asks(a)),
    ];
    blocks.extend(agent_summary(a));
    blocks.push(Block::Fields(fields(a)));
    blocks.push(agent_arguments(a));
    let mut card = Card {
        blocks,
        fallback: format!(
            "{}: request {} (risk {})",
            status_word(a.status),
            a.short_id,
            a.risk.score.as_str()
        ),
        ..Card::default()
    };
    if pending {
        card.buttons = vec![buttons(a, "")];
        card.hint = Some(Hint {
            reply_words: vec!["approve".into(), "deny [reason]".into()],
            command: Some(format!("/approve {}", a.short_id)),
        });
    } else {
        card.blocks.push(Block::Outcome(outcome_line(a)));
    }
    card
}

/// The icon of a request's card heading.
const HEADING_ICON: &str = "🛡";

/// A request's card as things stand, for delivery; `None` if the request is gone.
async fn render(engine: &Engine, subject: &Subject) -> Result<Option<Rendered>, EngineError> {
    match engine.get(&subject.id).await {
        Ok(a) => render_request(engine, &a).await.map(Some),
        Err(EngineError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The card of `a`, a request in hand as it stands (one an event just carried, say),
/// for delivery: what the stored request's card would be, without reading it again.
pub async fn render_request(engine: &Engine, a: &Approval) -> Result<Rendered, EngineError> {
    let pending = a.status == Status::Pending;
    let extras = Extras {
        offer: if pending && a.always_allow_offered {
            engine.offer(&a.id).await?
        } else {
            None
        },
        allow_for: Some(engine.config().trust.grants.allow_for),
        grant: if a.always_allowed {
            engine.grant_of_approval(&a.id).await?
        } else {
            None
        },
        votes: if a.route.is_some() {
            engine.votes(&a.id).await?
        } else {
            Vec::new()
        },
    };
    let revision = if pending && a.route.is_some() {
        crate::approval::votes::pending_revision(
            extras.votes.len(),
            a.route.as_ref().map_or(0, |r| r.escalated),
        )
    } else {
        a.status.as_str().to_string()
    };
    let mut card = prompt(a, &extras);
    if let Some(cost) = a.cost {
        add_cost(&mut card, cost, engine.config().budgets.as_deref());
    }
    if let Some(id) = &a.task_id {
        if let Some(crate::engine::TaskSubject::Task(t)) = engine.task_subject(id).await? {
            add_task(&mut card, &t);
        }
    }
    Ok(Rendered {
        card,
        revision,
        open: pending,
        deadline: a.expires_at.filter(|_| pending),
    })
}

/// Most requests `/pending` lists.
pub const PENDING_SHOWN: usize = 20;

/// The requests' part of `/pending`: `list` (the oldest of `total` pending requests),
/// each with its decision buttons.
#[must_use]
pub fn pending_card(list: &[Approval], total: usize) -> Card {
    if list.is_empty() {
        return Card::text("No pending requests.");
    }
    let total = total.max(list.len());
    let items = list
        .iter()
        .map(|a| {
            let expires = a
                .expires_at
                .map(|at| format!(", expires {}", words::deadline(at, now_ms())))
                .unwrap_or_default();
            Line::default()
                .code(&a.short_id)
                .and(" ")
                .code(shorten(&a.agent, 40))
                .and(" wants ")
                .code(shorten(&a.tool, 60))
                .and(format!(", risk {}{expires}", a.risk.score.as_str()))
        })
        .collect();
    let mut blocks = vec![
        Block::Line(Line::strong(format!("{total} pending request(s)"))),
        Block::List(items),
    ];
    if total > list.len() {
        blocks.push(Block::Line(Line::text(format!(
            "… and {} more: decide these to see the next, or review a digest \
             (gatebot pending lists them all)",
            total - list.len()
        ))));
    }
    blocks.push(Block::Line(
        Line::text("Decide with ")
            .code("/approve <id>")
            .and(" or ")
            .code("/deny <id> [reason]")
            .and("."),
    ));
    Card {
        blocks,
        buttons: list
            .iter()
            .map(|a| buttons(a, &format!(" {}", a.short_id)))
            .collect(),
        hint: None,
        fallback: format!("{total} pending request(s)"),
    }
}

/// Shows what the request costs on its card, after its risk: "2.50 USD" in the
/// currency of `[budgets]` (without budgets, the bare figure).
pub fn add_cost(card: &mut Card, cost: f64, budgets: Option<&crate::budget::Budgets>) {
    let said = match budgets {
        Some(b) => crate::budget::money(cost, &b.currency),
        None => format!("{cost:.2}"),
    };
    for b in &mut card.blocks {
        if let Block::Fields(fields) = b {
            fields.insert(1, Field::new("Cost", Line::text(said)));
            return;
        }
    }
}

/// Names the inbox task a request belongs to on its card, after the agent.
pub fn add_task(card: &mut Card, t: &crate::inbox::Task) {
    for b in &mut card.blocks {
        if let Block::Fields(fields) = b {
            fields.insert(1, Field::new("Task", super::task::task_line(t)));
            return;
        }
    }
}

/// What a request's own prompt shows beyond the request: what it offers to grant, and
/// the grant its decision made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extras {
    /// What the prompt offers (a shell-like tool's command and prefix, the learned
    /// suggestion).
    pub offer: Option<OfferRow>,
    /// The "Allow for …" button's duration (`[grants] allow_for`).
    pub allow_for: Option<std::time::Duration>,
    /// The grant the decision made, once approved with one.
    pub grant: Option<Grant>,
    /// The votes cast on it, when an approval rule routes it.
    pub votes: Vec<crate::approval::votes::Vote>,
}

/// A request's own prompt: [`card`], with the grants it offers while pending (scoped
/// for a shell-like tool, time-boxed, the learned suggestion first), and once approved
/// with a grant, what the grant covers.
#[must_use]
pub fn prompt(a: &Approval, x: &Extras) -> Card {
    let mut card = card(a);
    if let Some(r) = &a.route {
        let line = votes_line(a.status == Status::Pending, r, &x.votes);
        if a.status == Status::Pending {
            card.blocks.push(Block::Line(line));
        } else if !x.votes.is_empty() {
            // Before the outcome line.
            let at = card.blocks.len().saturating_sub(1);
            card.blocks.insert(at, Block::Line(line));
        }
    }
    if a.status != Status::Pending {
        if let Some(g) = &x.grant {
            // Before the outcome line.
            let at = card.blocks.len().saturating_sub(1);
            card.blocks.insert(at, Block::Line(granted_line(g)));
        }
        return card;
    }
    if !a.always_allow_offered {
        return card;
    }
    let offer = x.offer.clone().unwrap_or_default();
    let button = |kind: ButtonKind, label: String| Button::new(label, button_data(kind, &a.id));
    let once = button(ButtonKind::Approve, "✅ Allow once".into()).styled(Style::Primary);
    let deny = button(ButtonKind::Deny, "❌ Deny".into()).styled(Style::Danger);
    let mut extra = Vec::new();
    let (always, prefix) = match &offer.command {
        Some(_) => {
            let mut line = Line::text("♾️ Always allow can cover this exact command");
            if let Some(p) = &offer.prefix {
                line = line
                    .and(", or every simple command starting ")
                    .code(shorten(p, 200));
            }
            card.blocks.push(Block::Line(line.and(".")));
            (
                button(ButtonKind::ApproveExact, "♾️ Always: this command".into()),
                offer
                    .prefix
                    .as_ref()
                    .map(|_| button(ButtonKind::ApprovePrefix, "♾️ Always: this prefix".into())),
            )
        }
        None => (
            button(ButtonKind::ApproveAlways, "♾️ Always allow".into()),
            None,
        ),
    };
    if let Some(scope) = &offer.suggest {
        card.blocks
            .push(Block::Line(suggestion_line(a, scope, offer.streak)));
    }
    // The suggested grant comes first.
    let row = match (&offer.suggest, prefix) {
        (Some(Scope::Prefix(_)), Some(p)) => {
            extra.push(always);
            vec![p.styled(Style::Primary), once, deny]
        }
        (Some(_), p) => {
            extra.extend(p);
            vec![always.styled(Style::Primary), once, deny]
        }
        (None, p) => {
            extra.extend(p);
            vec![once, always, deny]
        }
    };
    if let Some(d) = x.allow_for {
        extra.push(button(
            ButtonKind::ApproveFor,
            format!("⏱ Allow for {}", words::span(d)),
        ));
    }
    card.buttons = vec![row];
    if !extra.is_empty() {
        card.buttons.push(extra);
    }
    card
}

/// "👥 1 of 2 approvals: alice ✓. Waiting for bob or carol. (approval rule “deploys”)"
/// while a routed request waits; "👥 Votes: alice ✓, bob ✓" once it is settled.
fn votes_line(
    pending: bool,
    r: &crate::approval::votes::Route,
    votes: &[crate::approval::votes::Vote],
) -> Line {
    if pending {
        // Who was asked later, and when: the levels reached so far.
        let later: String = r.levels[..r.escalated.min(r.levels.len())]
            .iter()
            .map(|l| {
                let after = std::time::Duration::from_millis(l.after_ms.max(0).unsigned_abs());
                format!(
                    " Asked after {}: {}.",
                    words::span(after),
                    l.asked.join(", ")
                )
            })
            .collect();
        return Line::text(format!("👥 {}{later} ", r.progress(votes)))
            .and(format!("(approval rule “{}”)", shorten(&r.rule, 80)));
    }
    let cast: Vec<String> = votes
        .iter()
        .map(|v| format!("{} {}", v.person, if v.approve { "✓" } else { "✗" }))
        .collect();
    Line::text(format!("👥 Votes: {}", cast.join(", ")))
}

/// Most people one reminder calls on by name; the rest are counted.
const MOST_MENTIONED: usize = 20;

/// A reminder of the pending routed request `a`, posted in a chat where some of its
/// people were asked, as a reply to its card there: it calls on `people` (each with
/// their identity on the platform, if they have one there), says what waits and how it
/// stands, and when silence denies it.
#[must_use]
pub fn reminder(
    a: &Approval,
    votes: &[crate::approval::votes::Vote],
    people: &[(String, Option<String>)],
    now: i64,
) -> Card {
    let mut call = Line::text("⏰ ");
    for (n, (name, id)) in people.iter().take(MOST_MENTIONED).enumerate() {
        if n > 0 {
            call = call.and(", ");
        }
        call = match id {
            Some(id) => call.mention(id, name),
            None => call.and(name.clone()),
        };
    }
    if people.len() > MOST_MENTIONED {
        call = call.and(format!(" and {} more", people.len() - MOST_MENTIONED));
    }
    let call = call
        .and(": request ")
        .code(&a.short_id)
        .and(" still waits for your answer.");
    let mut blocks = vec![Block::Line(call), Block::Line(asks(a))];
    if let Some(r) = &a.route {
        blocks.push(Block::Line(Line::text(format!("👥 {}", r.progress(votes)))));
    }
    if let Some(at) = a.expires_at {
        let routed = a.route.as_ref().is_some_and(|r| r.deadline_ms.is_some());
        let what = if routed {
            "Denied if unanswered"
        } else {
            "Expires"
        };
        blocks.push(Block::Line(Line::text(format!(
            "{what} {}.",
            words::deadline(at, now)
        ))));
    }
    Card {
        blocks,
        buttons: Vec::new(),
        hint: Some(Hint {
            reply_words: Vec::new(),
            command: Some(format!("/approve {}", a.short_id)),
        }),
        fallback: format!(
            "Reminder: request {} still waits for your answer",
            a.short_id
        ),
    }
}

/// "♾️ Grant g7m2abcd: `mailer` may run `send_email` without asking: …", on a request
/// approved with a grant.
fn granted_line(g: &Grant) -> Line {
    grant_words(
        Line::text(format!("♾️ Grant {}: ", g.short_id))
            .code(shorten(&g.agent, 40))
            .and(" may run ")
            .code(shorten(&g.tool, 60))
            .and(" without asking: "),
        g,
    )
}

/// "💡 `mailer` has had `send_email` approved 5 times in a row with no denial. Allow it
/// always?": the learned suggestion of a grant ([grants] suggest_after).
fn suggestion_line(a: &Approval, scope: &Scope, streak: u64) -> Line {
    let line = Line::text("💡 ")
        .code(shorten(&a.agent, 40))
        .and(" has had ");
    let line = match scope {
        Scope::Tool => line.code(shorten(&a.tool, 60)),
        Scope::Exact(c) => line.and("exactly ").code(shorten(c, 200)),
        Scope::Prefix(p) => line.and("commands starting ").code(shorten(p, 200)),
        // Never suggested: a call grant is made only by an owner's edit.
        Scope::Call(args) => line.and("exactly ").code(shorten(args, 200)),
    };
    line.and(format!(
        " approved {streak} times in a row with no denial. Allow it always?"
    ))
}

/// The status in a few words of gatebot's (fallback texts).
#[must_use]
pub fn status_word(s: Status) -> &'static str {
    match s {
        Status::Pending => "⏳ Approval needed",
        Status::Approved | Status::Executing | Status::Succeeded => "✅ Approved",
        Status::Failed => "✅ Approved, then failed",
        Status::Rejected => "❌ Denied",
        Status::Expired => "⌛ Expired",
        Status::Cancelled => "🚫 Cancelled",
        Status::Allowed => "✅ Allowed by policy",
        Status::Blocked => "⛔ Blocked by policy",
    }
}

/// The line that replaces the buttons once a request is settled:
/// "✅ Approved by alice on Telegram 2026-11-23 12:03 UTC".
#[must_use]
pub fn outcome_line(a: &Approval) -> String {
    let by = a.decider();
    let when = a.decided_at.map(clock).unwrap_or_default();
    let reason = |r: &Option<String>| r.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
    match a.status {
        Status::Pending => "⏳ Waiting for a decision".to_string(),
        // The grant, if the approval made one, is said in its own line above.
        Status::Approved if a.always_allowed => {
            format!("✅ Approved with a grant by {by} {when}")
        }
        Status::Approved => format!("✅ Approved by {by} {when}"),
        Status::Executing => format!("✅ Approved by {by} {when}; running"),
        Status::Succeeded => format!("✅ Approved by {by} {when}; succeeded"),
        Status::Failed => format!(
            "✅ Approved by {by} {when}; failed{}",
            reason(&a.result_detail)
        ),
        Status::Rejected => format!("❌ Denied by {by} {when}{}", reason(&a.decision_reason)),
        Status::Expired => format!(
            "⌛ Expired {when}: {}",
            a.decision_reason
                .as_deref()
                .unwrap_or("no response in time")
        ),
        Status::Cancelled => match &a.decision_reason {
            Some(why) => format!("🚫 Withdrawn {when}: {why}"),
            None => format!("🚫 Cancelled by the agent {when}"),
        },
        Status::Allowed => "✅ Allowed by policy".to_string(),
        Status::Blocked => "⛔ Blocked by policy".to_string(),
    }
}

/// A pending request to render in unit tests.
#[cfg(test)]
pub(crate) fn sample() -> Approval {
    use crate::policy::{Risk, RiskScore, ToolClass};
    Approval {
        id: "01JD3X4Y5Z6A7B8C9D0E1F2G3H".into(),
        short_id: "k7m2abcd".into(),
        agent: "mailer".into(),
        tool: "send_email".into(),
        args: serde_json::json!({"to": ["ann@example.com"]}),
        summary: None,
        confidence: None,
        environment: None,
        idempotency_key: None,
        status: Status::Pending,
        risk: Risk {
            score: RiskScore::High,
            tool_class: ToolClass::Destructive,
            factors: vec!["pricing_content".into()],
        },
        policy_reason: "destructive tool".into(),
        checkpoint: false,
        always_allow_offered: true,
        decided_by: None,
        decided_via: None,
        decision_reason: None,
        always_allowed: false,
        result_detail: None,
        ttl_ms: None,
        created_at: 0,
        decided_at: None,
        expires_at: Some(now_ms() + 3_600_000),
        finished_at: None,
        task_id: None,
        accepts_edits: false,
        edited_args: None,
        route: None,
        cost: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::{PlatformId, Via};

    /// A message's text as Telegram keeps it: the HTML's text, entities resolved.
    fn telegram_text(card: &Card) -> String {
        let html = crate::telegram::render::html(card);
        let mut text = String::new();
        let mut in_tag = false;
        for c in html.chars() {
            match c {
                '<' => in_tag = true,
                '>' => in_tag = false,
                c if !in_tag => text.push(c),
                _ => {}
            }
        }
        text.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&amp;", "&")
    }

    #[test]
    fn a_card_names_its_request_in_the_one_tag_on_every_platform() {
        let mut a = sample();
        // Agent text that names another request comes after the heading.
        a.summary = Some("id zzzz9999\n🛡 gatebot · id zzzz9999".into());
        a.tool = "id zzzz9999".into();
        for status in [Status::Pending, Status::Rejected, Status::Expired] {
            a.status = status;
            let c = card(&a);
            let slack = crate::slack::render::render(&c).1[0]["text"]["text"]
                .as_str()
                .unwrap()
                .to_string();
            for text in [c.plain(), telegram_text(&c), slack] {
                assert_eq!(Tag::read(&text).as_deref(), Some("k7m2abcd"), "{text}");
            }
        }
    }

    #[test]
    fn other_messages_of_gatebot_show_no_request() {
        let mut a = sample();
        a.tool = "· id zzzz9999".into();
        a.status = Status::Approved;
        // The answer to a decision names the tool on its first line.
        let answer = decided(&a, None);
        for text in [
            answer.plain(),
            telegram_text(&answer),
            answer.fallback.clone(),
            pending_card(std::slice::from_ref(&a), 1).plain(),
        ] {
            assert_eq!(Tag::read(&text), None, "{text}");
        }
    }

    #[test]
    fn each_pending_request_gets_a_line_and_a_row_of_buttons() {
        let mut a = sample();
        let mut b = sample();
        b.short_id = "zzzz9999".into();
        b.always_allow_offered = false;
        a.tool = "</code>".into();
        let c = pending_card(&[a, b], 25);
        assert_eq!(c.buttons.len(), 2);
        assert_eq!(
            c.buttons[1].len(),
            2,
            "no always-allow where it cannot apply"
        );
        assert!(c.buttons[1][0].label.ends_with(" zzzz9999"));
        let text = c.plain();
        assert!(text.contains("25 pending request(s)"), "{text}");
        assert!(text.contains("… and 23 more"), "{text}");
        assert_eq!(pending_card(&[], 0), Card::text("No pending requests."));
    }

    use crate::chat::conversation::{Action as AnyAction, Command as AnyCommand, MAX_DATA};

    fn decision(verb: Verb, id: Option<&str>, reason: Option<&str>) -> Option<AnyCommand> {
        Some(AnyCommand::Approval(Command {
            verb,
            id: id.map(str::to_string),
            reason: reason.map(str::to_string),
        }))
    }

    #[test]
    fn commands_parse_in_every_documented_form() {
        let cases: &[(&str, bool, Option<AnyCommand>)] = &[
            (
                "/approve k7m2",
                false,
                decision(Verb::Approve, Some("k7m2"), None),
            ),
            (
                "/approve@GateBot k7m2",
                false,
                decision(Verb::Approve, Some("k7m2"), None),
            ),
            ("/approve@otherbot k7m2", false, None),
            (
                "/APPROVE k7m2",
                false,
                decision(Verb::Approve, Some("k7m2"), None),
            ),
            (
                "/approve_always k7m2",
                false,
                decision(Verb::ApproveAlways, Some("k7m2"), None),
            ),
            (
                "/deny k7m2",
                false,
                decision(Verb::Deny, Some("k7m2"), None),
            ),
            (
                "/deny k7m2 too  expensive",
                false,
                decision(Verb::Deny, Some("k7m2"), Some("too  expensive")),
            ),
            (
                "/approve k7m2 allow-once",
                false,
                decision(Verb::Approve, Some("k7m2"), None),
            ),
            (
                "/approve k7m2 allow-always",
                false,
                decision(Verb::ApproveAlways, Some("k7m2"), None),
            ),
            (
                "/approve k7m2 deny not now",
                false,
                decision(Verb::Deny, Some("k7m2"), Some("not now")),
            ),
            ("/approve", false, decision(Verb::Approve, None, None)),
            (
                "/pending",
                false,
                Some(AnyCommand::Pending(super::super::pending::Command)),
            ),
            (
                "/pending@gatebot",
                false,
                Some(AnyCommand::Pending(super::super::pending::Command)),
            ),
            (
                "/help",
                false,
                Some(AnyCommand::Help(super::super::help::Command)),
            ),
            (
                "/start",
                false,
                Some(AnyCommand::Help(super::super::help::Command)),
            ),
            ("/weather", false, None),
            ("approve", false, None),
            ("hello there", true, None),
            // In a reply, no id is needed and /deny's words are the reason.
            ("/approve", true, decision(Verb::Approve, None, None)),
            (
                "/deny too expensive",
                true,
                decision(Verb::Deny, None, Some("too expensive")),
            ),
            ("/deny", true, decision(Verb::Deny, None, None)),
            ("approve", true, decision(Verb::Approve, None, None)),
            ("Approve", true, decision(Verb::Approve, None, None)),
            (
                "always allow",
                true,
                decision(Verb::ApproveAlways, None, None),
            ),
            (
                "deny wrong customer",
                true,
                decision(Verb::Deny, None, Some("wrong customer")),
            ),
            ("Deny", true, decision(Verb::Deny, None, None)),
            ("approve the other one too", true, None),
        ];
        for (text, in_reply, want) in cases {
            assert_eq!(
                &AnyCommand::parse(text, Some("gatebot"), *in_reply),
                want,
                "{text:?} (reply: {in_reply})"
            );
        }
    }

    #[test]
    fn buttons_round_trip_within_64_bytes() {
        let id = "01JD3X4Y5Z6A7B8C9D0E1F2G3H";
        for button in [
            ButtonKind::Approve,
            ButtonKind::ApproveAlways,
            ButtonKind::Deny,
            ButtonKind::DenyNoReason,
        ] {
            let data = button_data(button, id);
            assert!(data.len() <= MAX_DATA);
            assert_eq!(
                AnyAction::decode(&data).unwrap(),
                AnyAction::Approval(Action {
                    button,
                    id: id.into()
                })
            );
        }
        assert_eq!(button_data(ButtonKind::Approve, id), format!("gb1:a:{id}"));
    }

    #[test]
    fn forged_button_data_is_refused() {
        for data in [
            "",
            "gb1:a",
            "gb1:x:01JD3X4Y5Z6A7B8C9D0E1F2G3H",
            "gb2:a:01JD3X4Y5Z6A7B8C9D0E1F2G3H",
            "gb1:a:01JD3X4Y5Z6A7B8C9D0E1F2G3",
            "gb1:a:01JD3X4Y5Z6A7B8C9D0E1F2G3H' OR 1=1",
            "gb1:a:../../../../etc/passwd/xxxxxxxxx",
            &"gb1:a:".repeat(20),
        ] {
            assert!(AnyAction::decode(data).is_err(), "{data:?}");
        }
    }

    #[test]
    fn always_allow_is_offered_only_where_it_applies() {
        let mut a = sample();
        assert_eq!(card(&a).buttons[0].len(), 3);
        a.always_allow_offered = false;
        assert_eq!(card(&a).buttons[0].len(), 2);
    }

    #[test]
    fn every_outcome_says_when() {
        let mut a = sample();
        a.decided_at = Some(0);
        a.decision_reason = Some("no response within 1 h".into());
        for status in [
            Status::Approved,
            Status::Rejected,
            Status::Expired,
            Status::Cancelled,
        ] {
            a.status = status;
            assert!(
                outcome_line(&a).contains("1970-01-01 00:00 UTC"),
                "{}",
                outcome_line(&a)
            );
        }
        a.status = Status::Expired;
        assert_eq!(
            outcome_line(&a),
            "⌛ Expired 1970-01-01 00:00 UTC: no response within 1 h"
        );
    }

    #[test]
    fn a_settled_card_has_its_outcome_and_no_buttons() {
        let mut a = sample();
        a.status = Status::Approved;
        a.decided_by = Some("alice".into());
        a.decided_via = Some(Via::Chat(PlatformId::new("slack")));
        a.decided_at = Some(0);
        let c = card(&a);
        assert!(c.buttons.is_empty() && c.hint.is_none());
        assert_eq!(
            c.blocks.last(),
            Some(&Block::Outcome(
                "✅ Approved by alice on Slack 1970-01-01 00:00 UTC".into()
            ))
        );
        assert!(!c.plain().contains("Expires"));
        assert_eq!(c.fallback, "✅ Approved: request k7m2abcd (risk high)");
    }
}
