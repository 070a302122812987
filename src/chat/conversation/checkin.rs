//! Workflow check-ins: a run that paused asks its owner whether to go on.
//!
//! 1. A run's event makes a waiting check-in (see [`crate::workflow`]); it is a subject
//!    of kind `checkin`, so delivery posts its **card** in every chat: the run, the
//!    phase, why it asks, the problems collected since the previous check-in (the first
//!    few), the run's totals, the deadline.
//! 2. Buttons: ▶️ Continue · 🔎 Review issues · ⏹ Stop workflow. Review issues answers
//!    with every problem (severity, kind, phase and step) and the Continue and Stop
//!    buttons again. Stop asks why ([`Purpose::StopReason`]: Telegram by a message to
//!    reply to, with ⏹ Stop without reason in place of the button; Slack by a form); the
//!    reason reaches the agent. Data: `gb1:k:c:<id>`, `gb1:k:r:<id>`, `gb1:k:s:<id>`,
//!    `gb1:k:S:<id>` (stop without reason).
//! 3. Commands (any case): `/continue <id> [note]`, `/stop <id> [reason]`,
//!    `/review <id>`. In a reply to the card (or in its thread) no id is needed, and
//!    plain `continue [note]`, `stop [reason]` and `review` work too.
//! 4. The first answer wins; the card then shows who answered, how and when, or that it
//!    expired (which stops the run). Who: approvers only.

use crate::chat::card::{Block, Button, Card, Field, Hint, Line, Style, Tag};
use crate::chat::command::{non_empty, Typed};
use crate::chat::exchange::{Actor, Answer, At, Question, Said};
use crate::chat::text::shorten;
use crate::chat::Context;
use crate::engine::EngineError;
use crate::subject::Purpose;
use crate::subject::{Subject, SubjectKind};
use crate::time::{clock, now_ms};
use crate::words;
use crate::workflow::evaluate::IssueKind;
use crate::workflow::run::Answered;
use crate::workflow::run::{self, CheckIn, CheckInAnswer, CheckInStatus, Run, RunIssue};
use crate::workflow::{EventType, Severity, Why};

use super::full_id;
use super::owner::{Decided, Listed, Listing, Offered, OwnerDecision, Refused};
#[cfg(test)]
use super::EXAMPLE_ID;
use super::{Rendered, SlashCommand};
use crate::chat::failure::failure;
use crate::engine::{Engine, RunFilter};
use crate::workflow::run::RunStatus;
use crate::workflow::wire::CheckInView;

/// Problems listed on the card itself; Review issues lists them all.
pub const LISTED: usize = 5;
/// The icon a waiting check-in's heading and notification text start with.
const ICON: &str = "🚦";

/// Most check-ins `/pending` lists with their buttons.
pub const PENDING_SHOWN: usize = 10;
/// Most waiting runs `gatebot pending` lists check-ins of (a page of the runs API).
const LISTED_RUNS: usize = 1000;
/// Longest phase, step or title shown in a line, in characters.
const NAME_CHARS: usize = 80;
/// Longest problem text shown in a list, in characters.
const ISSUE_CHARS: usize = 300;

/// The check-in's kind: workflow runs that ask their owner whether to go on.
pub struct CheckIns;

impl super::Kind for CheckIns {
    type Action = Action;
    type Command = Command;
    const SUBJECT: Option<SubjectKind> = Some(SubjectKind::CheckIn);
    const PURPOSES: &'static [Purpose] = &[Purpose::StopReason];
    const COMMANDS: &'static [SlashCommand] = &[
        SlashCommand {
            name: "continue",
            menu: "<id> [note] — let a workflow go on",
            help: Some((
                "/continue <id> [note]",
                "let a workflow go on after its check-in",
            )),
        },
        SlashCommand {
            name: "stop",
            menu: "<id> [reason] — stop a workflow at its check-in",
            help: Some((
                "/stop <id> [reason]",
                "stop a workflow at its check-in; the reason reaches the agent",
            )),
        },
        SlashCommand {
            name: "review",
            menu: "<id> — the warnings and errors of a check-in",
            help: Some(("/review <id>", "every warning and error a check-in shows")),
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

    /// The answer to a "why stop?" question: stops with the text as the reason.
    async fn answer(
        cx: &Context,
        actor: &Actor,
        subject: &str,
        _purpose: Purpose,
        text: Option<String>,
    ) -> Answer {
        decide(cx, actor, run::Answer::Stop, subject, text).await
    }

    /// `continue` or `stop`, with an optional reason that reaches the agent.
    async fn decide(engine: &Engine, id: &str, d: OwnerDecision) -> Result<Decided, Refused> {
        decide_as_owner(engine, id, d).await
    }

    /// The check-ins that wait (few: one per waiting run), all on the first page:
    /// `check_ins`.
    async fn listed(engine: &Engine, l: &Listing) -> Result<Option<Listed>, EngineError> {
        if !l.first_page() {
            return Ok(None);
        }
        let runs = engine
            .list_runs(RunFilter {
                agent: l.agent.clone(),
                status: Some(RunStatus::Waiting),
                after: None,
                limit: LISTED_RUNS,
            })
            .await?;
        let mut waiting = Vec::new();
        for run in &runs {
            if let Some(id) = &run.check_in {
                let c = engine.check_in(id).await?;
                waiting.push(view(engine, &c, run).await?);
            }
        }
        // Oldest first, like the requests above them.
        waiting.sort_by(|a, b| a.id.cmp(&b.id));
        let mut said = Vec::new();
        if !waiting.is_empty() {
            said.push(String::new());
            said.push("Workflow check-ins waiting (gatebot decide ID continue|stop):".into());
            said.extend(waiting.iter().map(CheckInView::listed_line));
        }
        let mut fields = serde_json::Map::new();
        fields.insert("check_ins".into(), serde_json::json!(waiting));
        Ok(Some(Listed { fields, said }))
    }

    /// A first check-in after a build with problems, waiting two hours; then continued.
    #[cfg(test)]
    fn golden_cards() -> Vec<(&'static str, Card)> {
        let now = now_ms();
        let mut d = sample();
        d.check_in.created_at = now - 1000;
        d.check_in.expires_at = Some(now + 7_199_000);
        let waiting = card(&d);
        let review = review_cards(&d).remove(0);
        d.check_in.status = CheckInStatus::Continued;
        d.check_in.decided_by = Some("alice".into());
        d.check_in.decided_via = Some(crate::approval::Via::Cli);
        d.check_in.decided_at = Some(now - 60_000);
        vec![
            ("waiting", waiting),
            ("review", review),
            ("continued", card(&d)),
        ]
    }

    #[cfg(test)]
    fn example_cards() -> Vec<Card> {
        let mut d = sample();
        d.run.title = "<b>".repeat(200);
        d.check_in.phase = "&".repeat(200);
        let mut cards = vec![card(&d)];
        cards.extend(review_cards(&d));
        let list: Vec<(CheckIn, Run)> = (0..PENDING_SHOWN)
            .map(|_| (d.check_in.clone(), d.run.clone()))
            .collect();
        // `/pending` with no request and a page of check-ins.
        let mut pending = Card::text("No pending requests.");
        let (blocks, buttons) = pending_section(&list, 50);
        pending.blocks.extend(blocks);
        pending.buttons.extend(buttons);
        cards.push(pending);
        d.check_in.status = CheckInStatus::Continued;
        cards.push(card(&d));
        cards
    }

    async fn pending(cx: &Context) -> Result<Option<Card>, EngineError> {
        let list = cx.engine.waiting_check_ins(None, PENDING_SHOWN).await?;
        let total = cx.engine.count_waiting_check_ins().await?;
        let (blocks, buttons) = pending_section(&list, total);
        Ok(Some(Card {
            blocks,
            buttons,
            ..Card::default()
        }))
    }
}

impl super::Press for Action {
    fn decode(data: &str) -> Option<Action> {
        let rest = data.strip_prefix("k:")?;
        let (code, id) = rest.split_once(':')?;
        let button = ButtonKind::ALL.into_iter().find(|b| b.code() == code)?;
        full_id(id).map(|id| Action { button, id })
    }

    fn encode(&self) -> String {
        format!("k:{}:{}", self.button.code(), self.id)
    }

    fn attempted(&self) -> String {
        format!("check-in {:?}", self.button)
    }

    fn offered(&self, _config: &crate::config::Config) -> Option<Offered> {
        let id = self.id.as_str();
        match self.button {
            ButtonKind::Continue => Some(Offered::verb(id, "continue")),
            ButtonKind::Stop => Some(Offered::verb(id, "stop").asking_why()),
            ButtonKind::StopNoReason => Some(Offered::verb(id, "stop")),
            // The dashboard shows the whole check-in already.
            ButtonKind::Review => None,
        }
    }

    fn subject(&self) -> Option<&str> {
        Some(&self.id)
    }

    async fn press(self, cx: &Context, actor: &Actor, _at: &At) -> Answer {
        press(cx, actor, self).await
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
        format!("check-in {:?}", self.verb)
    }

    async fn run(self, cx: &Context, actor: &Actor, said: &Said<'_>) -> Answer {
        let replied = said.replied;
        command(cx, actor, self, replied).await
    }
}

/// Which button.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ButtonKind {
    Continue,
    Review,
    /// Asks for a reason first.
    Stop,
    /// Stops at once (offered after ⏹).
    StopNoReason,
}

impl ButtonKind {
    pub const ALL: [ButtonKind; 4] = [
        ButtonKind::Continue,
        ButtonKind::Review,
        ButtonKind::Stop,
        ButtonKind::StopNoReason,
    ];

    /// Its code in button data (`gb1:k:<code>:<check-in id>`).
    fn code(self) -> &'static str {
        match self {
            ButtonKind::Continue => "c",
            ButtonKind::Review => "r",
            ButtonKind::Stop => "s",
            ButtonKind::StopNoReason => "S",
        }
    }
}

/// A press on a check-in's button.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    pub button: ButtonKind,
    /// The check-in's full id.
    pub id: String,
}

/// The button data of a check-in's button (`gb1:k:c:<id>`), for cards and tests.
#[must_use]
pub fn button_data(button: ButtonKind, id: &str) -> String {
    super::Action::CheckIn(Action {
        button,
        id: id.to_string(),
    })
    .encode()
}

/// What a typed command asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Continue,
    Stop,
    Review,
}

/// A check-in command typed, or words in a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub verb: Verb,
    /// The id typed, if any (a reply to a card may omit it).
    pub id: Option<String>,
    /// The owner's note (continue) or reason (stop); it reaches the agent.
    pub reason: Option<String>,
}

/// `/continue`, `/stop`, `/review`; `None` for other names.
#[must_use]
pub fn parse_command(typed: &Typed<'_>, in_reply: bool) -> Option<Command> {
    let verb = match typed.name.as_str() {
        "continue" => Verb::Continue,
        "stop" => Verb::Stop,
        "review" => Verb::Review,
        _ => return None,
    };
    let rest = typed.args;
    let (id, reason) = if in_reply {
        // Everything after the command is the note or reason.
        (None, non_empty(rest))
    } else {
        match rest.split_once(char::is_whitespace) {
            Some((id, r)) => (Some(id.to_string()), non_empty(r)),
            None => (non_empty(rest), None),
        }
    };
    let reason = if verb == Verb::Review { None } else { reason };
    Some(Command { verb, id, reason })
}

/// Plain words in a reply to a check-in: `continue [note]`, `stop [reason]`, `review`.
#[must_use]
pub fn parse_words(text: &str) -> Option<Command> {
    let text = text.trim();
    let (first, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let verb = match first.to_ascii_lowercase().as_str() {
        "continue" => Verb::Continue,
        "stop" => Verb::Stop,
        "review" if rest.trim().is_empty() => Verb::Review,
        _ => return None,
    };
    Some(Command {
        verb,
        id: None,
        reason: if verb == Verb::Review {
            None
        } else {
            non_empty(rest)
        },
    })
}

/// A check-in with its run and the problems it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detail {
    pub check_in: CheckIn,
    pub run: Run,
    pub issues: Vec<RunIssue>,
}

/// Loads check-in `id` with its run and problems; `None` if there is no such check-in.
pub async fn detail(engine: &Engine, id: &str) -> Result<Option<Detail>, EngineError> {
    let check_in = match engine.check_in(id).await {
        Ok(c) => c,
        Err(EngineError::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let run = engine.get_run(&check_in.run_id).await?;
    let issues = engine.check_in_issues(id).await?;
    Ok(Some(Detail {
        check_in,
        run,
        issues,
    }))
}

/// Runs a press on a check-in's button.
pub async fn press(cx: &Context, actor: &Actor, action: Action) -> Answer {
    match action.button {
        ButtonKind::Continue => decide(cx, actor, run::Answer::Continue, &action.id, None).await,
        ButtonKind::StopNoReason => decide(cx, actor, run::Answer::Stop, &action.id, None).await,
        ButtonKind::Review => review(cx, &action.id).await,
        ButtonKind::Stop => ask_reason(cx, &action.id).await,
    }
}

/// Runs a typed command. `replied` is the subject of the card the message replies to.
pub async fn command(
    cx: &Context,
    actor: &Actor,
    cmd: Command,
    replied: Option<&Subject>,
) -> Answer {
    let id = match (cmd.id, replied) {
        (Some(typed), _) => match resolve(cx, &typed).await {
            Ok(id) => id,
            Err(answer) => return answer,
        },
        (None, Some(s)) if s.kind == SubjectKind::CheckIn => s.id.clone(),
        (None, Some(s)) if s.kind == SubjectKind::Proposal => {
            return Answer::note(
                "That is a tier proposal, not a workflow check-in: reply approve or deny [reason].",
            )
        }
        (None, Some(_)) => {
            return Answer::note(
                "That is a request, not a workflow check-in: reply approve or deny [reason].",
            )
        }
        (None, None) => return Answer::note(
            "Which check-in? Use /continue <id> or /stop <id> [reason], or reply to the check-in.",
        ),
    };
    match cmd.verb {
        Verb::Continue => decide(cx, actor, run::Answer::Continue, &id, cmd.reason).await,
        Verb::Stop => decide(cx, actor, run::Answer::Stop, &id, cmd.reason).await,
        Verb::Review => review(cx, &id).await,
    }
}

/// What to tell someone who replied to a check-in with a request's words.
#[must_use]
pub fn not_a_request() -> Answer {
    Answer::note(
        "That is a workflow check-in, not a request: reply continue [note], stop [reason] or review.",
    )
}

/// The check-in `typed` names (an id, a short id or a unique prefix of 4+ characters).
async fn resolve(cx: &Context, typed: &str) -> Result<String, Answer> {
    match cx.engine.chat().lookup(typed).await {
        Ok(s) if s.kind == SubjectKind::CheckIn => Ok(s.id),
        Ok(_) => Err(Answer::alert(format!(
            "`{typed}` is a request, not a workflow check-in: use /approve or /deny."
        ))),
        Err(EngineError::NotFound { .. }) => Err(Answer::alert(format!(
            "No check-in matches `{typed}`. Use /pending to see what waits for you."
        ))),
        Err(e) => Err(Answer::alert(failure(&e))),
    }
}

/// Applies `actor`'s answer to check-in `id`. The caller has checked that the actor may.
pub async fn decide(
    cx: &Context,
    actor: &Actor,
    answer: run::Answer,
    id: &str,
    reason: Option<String>,
) -> Answer {
    let given = CheckInAnswer {
        answer,
        actor: actor.label(),
        via: cx.via(),
        reason,
    };
    match cx.engine.answer_check_in(id, given).await {
        Ok(Answered::Done(c, run)) => Answer::Done(answered(&c, &run)),
        Ok(Answered::Already(c, _) | Answered::Expired(c, _)) => already_answered(&c),
        Ok(Answered::NotFound) => Answer::alert(format!(
            "No check-in matches `{id}`. Use /pending to see what waits for you."
        )),
        Err(e) => Answer::alert(failure(&e)),
    }
}

/// "Check-in k7m2abcd is already stopped by Alice (42) on Telegram: not now."
#[must_use]
pub fn already_answered(c: &CheckIn) -> Answer {
    let short = c.short_id.as_deref().unwrap_or("-");
    Answer::Notice {
        card: Card {
            fallback: format!("Check-in {short} was already answered"),
            ..Card::text(format!(
                "Check-in {short} is already {}.",
                c.describe_answer()
            ))
        },
        alert: true,
    }
}

/// "▶️ Continued k7m2abcd (`Release 2.4` of `deployer`)."
fn answered(c: &CheckIn, run: &Run) -> Card {
    let short = c.short_id.as_deref().unwrap_or("-");
    let word = match c.status {
        CheckInStatus::Stopped => "⏹ Stopped",
        _ => "▶️ Continued",
    };
    let mut line = Line::text(format!("{word} {short} ("))
        .code(shorten(&run.title, NAME_CHARS))
        .and(" of ")
        .code(shorten(&run.agent, 40))
        .and(")");
    match &c.decision_reason {
        Some(r) => line = line.and(": ").code(shorten(r, 500)).and("."),
        None => line = line.and("."),
    }
    Card {
        blocks: vec![Block::Line(line)],
        fallback: format!("{word}: check-in {short}"),
        ..Card::default()
    }
}

/// The "why stop?" question for check-in `id`, if it still waits.
async fn ask_reason(cx: &Context, id: &str) -> Answer {
    let d = match detail(&cx.engine, id).await {
        Ok(Some(d)) => d,
        Ok(None) => return Answer::alert("This check-in no longer exists."),
        Err(e) => return Answer::alert(failure(&e)),
    };
    if d.check_in.status != CheckInStatus::Waiting {
        return already_answered(&d.check_in);
    }
    let short = d.check_in.short_id.clone().unwrap_or_default();
    Answer::Ask(Question {
        subject: d.check_in.id.clone(),
        purpose: Purpose::StopReason,
        title: "Stop workflow".into(),
        text: Line::text("why stop ")
            .code(shorten(&d.run.title, NAME_CHARS))
            .and(" of ")
            .code(shorten(&d.run.agent, 40))
            .and(format!(
                " (check-in {short})? The reason is sent to the agent."
            )),
        field: "Reason (optional)".into(),
        submit: "Stop".into(),
        skip: Some(
            Button::new(
                "⏹ Stop without reason",
                button_data(ButtonKind::StopNoReason, &d.check_in.id),
            )
            .styled(Style::Danger),
        ),
        asked: "Why stop? Reply to my question, or tap “Stop without reason”.".into(),
        not_asked: format!("Could not open the stop form. Use /stop {short} [reason] instead."),
    })
}

/// Review issues: every problem the check-in shows, and (while it waits) the buttons
/// again.
async fn review(cx: &Context, id: &str) -> Answer {
    match detail(&cx.engine, id).await {
        Ok(Some(d)) => Answer::Cards(review_cards(&d)),
        Ok(None) => Answer::alert("This check-in no longer exists."),
        Err(e) => Answer::alert(failure(&e)),
    }
}

/// "⚠️ medium warning · `build` / `lint` · `Deprecated API` (beyond tolerance)".
fn issue_line(i: &RunIssue) -> Line {
    let icon = match (i.kind, i.severity) {
        (IssueKind::Error, _) => "❌",
        (IssueKind::Warning, Severity::High) => "🔶",
        (IssueKind::Warning, _) => "⚠️",
    };
    let mut line = Line::text(format!("{icon} {} {} · ", i.severity, i.kind.as_str()))
        .code(shorten(&i.phase, NAME_CHARS));
    if let Some(step) = &i.step {
        line = line.and(" / ").code(shorten(step, NAME_CHARS));
    }
    line = line.and(" · ").code(shorten(&i.text, ISSUE_CHARS));
    if i.exceeded {
        line = line.and(" (beyond tolerance)");
    }
    if i.detected {
        line = line.and(" (severity from the text)");
    }
    line
}

/// "2 warnings, 1 error".
fn counted(warnings: u32, errors: u32) -> String {
    let plural = |n: u32, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    format!(
        "{}, {}",
        plural(warnings, "warning", "warnings"),
        plural(errors, "error", "errors")
    )
}

/// Why the check-in asks, with agent text as code: "phase `build` complete", or the
/// breach of tolerance.
fn why_line(c: &CheckIn) -> Line {
    match c.why {
        Some(Why::Tolerance) => match c.reason.split_once(": ") {
            // "Warning exceeds tolerance: <agent text>": the prefix is gatebot's.
            Some((ours, text)) => Line::text(format!("{ours}: ")).code(shorten(text, ISSUE_CHARS)),
            None => Line::text("a problem exceeds the tolerance"),
        },
        _ => match (c.event, &c.step) {
            (EventType::WorkflowComplete, _) => Line::text("the workflow is complete"),
            (EventType::StepComplete, Some(step)) => Line::text("step ")
                .code(shorten(step, NAME_CHARS))
                .and(" of ")
                .code(shorten(&c.phase, NAME_CHARS))
                .and(" complete"),
            _ => Line::text("phase ")
                .code(shorten(&c.phase, NAME_CHARS))
                .and(" complete"),
        },
    }
}

/// The fields every view of a check-in shows.
fn fields(d: &Detail) -> Vec<Field> {
    let (c, run) = (&d.check_in, &d.run);
    let mut title = Line::default().code(shorten(&run.title, NAME_CHARS));
    if let Some(w) = &run.workflow {
        title = title.and(" (").code(w).and(")");
    }
    let mut place = Line::default().code(shorten(&c.phase, NAME_CHARS));
    if let Some(step) = &c.step {
        place = place.and(" / ").code(shorten(step, NAME_CHARS));
    }
    let mut totals = format!(
        "{} collected",
        counted(run.totals.warnings, run.totals.errors)
    );
    if !run.dropped.is_empty() {
        totals.push_str(&format!(
            "; {} not collected (limit reached)",
            counted(run.dropped.warnings, run.dropped.errors)
        ));
    }
    let mut fields = vec![
        Field::new("Agent", Line::default().code(&run.agent)),
        Field::new("Run", title),
        Field::new("Where", place),
        Field::new("Why asking", why_line(c)),
    ];
    // The run's first check-in shows everything so far: one line says it.
    if c.shown == run.totals && run.dropped.is_empty() {
        fields.push(Field::new("Problems so far", Line::text(totals)));
    } else {
        fields.push(Field::new(
            "Since the last check-in",
            Line::text(counted(c.shown.warnings, c.shown.errors)),
        ));
        fields.push(Field::new("Run so far", Line::text(totals)));
    }
    if let (CheckInStatus::Waiting, Some(at)) = (c.status, c.expires_at) {
        fields.push(Field::new(
            "Expires",
            Line::text(format!(
                "{}; no answer stops the workflow",
                words::deadline(at, now_ms())
            )),
        ));
    }
    fields
}

/// The Continue, Review issues and Stop workflow buttons; `suffix` follows each label
/// (the short id, where a list shows several).
#[must_use]
pub fn buttons(c: &CheckIn, suffix: &str, with_review: bool) -> Vec<Button> {
    let mut row = vec![Button::new(
        format!("▶️ Continue{suffix}"),
        button_data(ButtonKind::Continue, &c.id),
    )
    .styled(Style::Primary)];
    if with_review {
        row.push(Button::new(
            format!("🔎 Review issues{suffix}"),
            button_data(ButtonKind::Review, &c.id),
        ));
    }
    row.push(
        Button::new(
            format!("⏹ Stop workflow{suffix}"),
            button_data(ButtonKind::Stop, &c.id),
        )
        .styled(Style::Danger),
    );
    row
}

/// The line that replaces the buttons once a check-in is answered or expired.
#[must_use]
pub fn outcome_line(c: &CheckIn) -> String {
    let when = c.decided_at.map(clock).unwrap_or_default();
    let by = crate::approval::who(c.decided_by.as_deref(), c.decided_via.as_ref());
    let reason = c
        .decision_reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    match c.status {
        CheckInStatus::Waiting => "⏳ Waiting for the owner".into(),
        CheckInStatus::Reported => "📋 Reported; nothing to answer".into(),
        CheckInStatus::Continued => format!("▶️ Continued by {by} {when}{reason}"),
        CheckInStatus::Stopped => format!("⏹ Stopped by {by} {when}{reason}"),
        CheckInStatus::Expired => format!(
            "⌛ Expired {when}: {}; the workflow stopped",
            run::expiry_reason(c.ttl_ms)
        ),
    }
}

/// The check-in's card: with its buttons while it waits, with its outcome after.
#[must_use]
pub fn card(d: &Detail) -> Card {
    let c = &d.check_in;
    let short = c.short_id.clone().unwrap_or_default();
    let waiting = c.status == CheckInStatus::Waiting;
    let mut blocks = vec![
        Block::Heading {
            icon: ICON,
            // One title whatever the status: the outcome line says how it ended.
            title: "gatebot: workflow check-in".into(),
            tag: Some(Tag::subject(SubjectKind::CheckIn, &short)),
        },
        Block::Fields(fields(d)),
    ];
    if !d.issues.is_empty() {
        let mut items: Vec<Line> = d.issues.iter().take(LISTED).map(issue_line).collect();
        if d.issues.len() > LISTED {
            items.push(Line::text(format!(
                "… and {} more: Review issues lists them all",
                d.issues.len() - LISTED
            )));
        }
        blocks.push(Block::Line(Line::strong("Warnings and errors")));
        blocks.push(Block::List(items));
    }
    if !c.artifacts.is_empty() {
        blocks.push(Block::Line(Line::strong("Artifacts from the agent")));
        blocks.push(Block::List(
            c.artifacts
                .iter()
                .map(|a| {
                    let line = Line::default().code(shorten(&a.name, NAME_CHARS));
                    match &a.url {
                        Some(url) => line.and(" ").code(shorten(url, 500)),
                        None => line,
                    }
                })
                .collect(),
        ));
    }
    let mut card = Card {
        blocks,
        fallback: if waiting {
            format!("{ICON} Check-in {short}: a workflow waits for you")
        } else {
            format!("Check-in {short}: {}", c.status.as_str())
        },
        ..Card::default()
    };
    if waiting {
        card.buttons = vec![buttons(c, "", true)];
        card.hint = Some(Hint {
            reply_words: vec!["continue".into(), "stop [reason]".into()],
            command: Some(format!("/continue {short}")),
        });
    } else {
        card.blocks.push(Block::Outcome(outcome_line(c)));
    }
    card
}

/// Review issues: every problem the check-in shows, in as many messages as they need
/// (each within every platform's limits, so none is cut away), then, on the last,
/// Continue and Stop again while it waits.
#[must_use]
pub fn review_cards(d: &Detail) -> Vec<Card> {
    let c = &d.check_in;
    let short = c.short_id.clone().unwrap_or_default();
    let pages = issue_pages(&d.issues);
    let count = pages.len();
    let heading = |page: usize| Block::Heading {
        icon: "🔎",
        title: if count > 1 {
            format!("Issues at this check-in ({page} of {count})")
        } else {
            "Issues at this check-in".into()
        },
        tag: Some(Tag::subject(SubjectKind::CheckIn, &short)),
    };
    let waiting = c.status == CheckInStatus::Waiting;
    let mut cards: Vec<Card> = pages
        .into_iter()
        .enumerate()
        .map(|(i, items)| {
            let mut blocks = vec![heading(i + 1)];
            if i == 0 {
                blocks.push(Block::Line(
                    Line::text("Run ")
                        .code(shorten(&d.run.title, NAME_CHARS))
                        .and(" of ")
                        .code(shorten(&d.run.agent, 40))
                        .and(format!(
                            ": {} since the last check-in.",
                            counted(c.shown.warnings, c.shown.errors)
                        )),
                ));
            }
            if items.is_empty() {
                blocks.push(Block::Line(Line::text("No warnings or errors.")));
            } else {
                blocks.push(Block::List(items));
            }
            Card {
                blocks,
                fallback: format!("Issues at check-in {short}"),
                ..Card::default()
            }
        })
        .collect();
    if let Some(last) = cards.last_mut() {
        if waiting {
            last.blocks
                .push(Block::Line(Line::text("Continue the workflow?")));
            last.buttons = vec![buttons(c, "", false)];
        } else {
            last.blocks.push(Block::Outcome(outcome_line(c)));
        }
    }
    cards
}

/// Most characters of issue text one review message lists: well within the smallest
/// limit a message's list has (Slack's 3 000 per section), after escaping and markup.
const REVIEW_PAGE_CHARS: usize = 1800;

/// The issues' lines, a message's worth each (one empty page when there are none).
fn issue_pages(issues: &[RunIssue]) -> Vec<Vec<Line>> {
    let mut pages = vec![Vec::new()];
    let mut used = 0;
    for issue in issues {
        let line = issue_line(issue);
        let size = line.plain().chars().count() + 20;
        if used + size > REVIEW_PAGE_CHARS && pages.last().is_some_and(|p| !p.is_empty()) {
            pages.push(Vec::new());
            used = 0;
        }
        used += size;
        if let Some(page) = pages.last_mut() {
            page.push(line);
        }
    }
    pages
}

/// `/pending`'s section for waiting check-ins: a line and a row of buttons each (at most
/// [`PENDING_SHOWN`]; `total` waiting in all).
#[must_use]
pub fn pending_section(list: &[(CheckIn, Run)], total: usize) -> (Vec<Block>, Vec<Vec<Button>>) {
    if list.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let total = total.max(list.len());
    let items = list
        .iter()
        .map(|(c, run)| {
            let expires = c
                .expires_at
                .map(|at| format!(", expires {}", words::deadline(at, now_ms())))
                .unwrap_or_default();
            Line::default()
                .code(c.short_id.clone().unwrap_or_default())
                .and(" ")
                .code(shorten(&run.agent, 40))
                .and(" · ")
                .code(shorten(&run.title, NAME_CHARS))
                .and(" at ")
                .code(shorten(&c.phase, NAME_CHARS))
                .and(format!(
                    ": {}{expires}",
                    counted(c.shown.warnings, c.shown.errors)
                ))
        })
        .collect();
    let mut blocks = vec![
        Block::Line(Line::strong(format!(
            "{total} workflow check-in(s) waiting"
        ))),
        Block::List(items),
    ];
    if total > list.len() {
        blocks.push(Block::Line(Line::text(format!(
            "… and {} more (gatebot pending lists them all)",
            total - list.len()
        ))));
    }
    blocks.push(Block::Line(
        Line::text("Answer with ")
            .code("/continue <id>")
            .and(" or ")
            .code("/stop <id> [reason]")
            .and("."),
    ));
    let rows = list
        .iter()
        .map(|(c, _)| {
            let short = c.short_id.clone().unwrap_or_default();
            buttons(c, &format!(" {short}"), true)
        })
        .collect();
    (blocks, rows)
}

/// The card of check-in `subject` as things stand, for delivery.
async fn render(engine: &Engine, subject: &Subject) -> Result<Option<Rendered>, EngineError> {
    Ok(detail(engine, &subject.id).await?.map(|d| Rendered {
        revision: d.check_in.status.as_str().to_string(),
        open: d.check_in.status == CheckInStatus::Waiting,
        deadline: d.check_in.expires_at,
        card: card(&d),
    }))
}

/// A waiting check-in to render in unit tests.
#[cfg(test)]
pub(crate) fn sample() -> Detail {
    use crate::workflow::evaluate::Totals;
    use crate::workflow::run::{Artifact, RunStatus};
    let issue = |kind, text: &str, severity, step: Option<&str>| RunIssue {
        kind,
        text: text.into(),
        severity,
        detected: false,
        phase: "build".into(),
        step: step.map(str::to_string),
        exceeded: false,
    };
    Detail {
        check_in: CheckIn {
            id: "01JD3X4Y5Z6A7B8C9D0E1F2G3K".into(),
            short_id: Some("k7m2wxyz".into()),
            run_id: "01JD3X4Y5Z6A7B8C9D0E1F2G3R".into(),
            status: CheckInStatus::Waiting,
            why: Some(Why::CheckIn),
            reason: "Check-in: build complete. Continue?".into(),
            event: EventType::PhaseComplete,
            phase: "build".into(),
            step: None,
            artifacts: vec![Artifact {
                name: "build.log".into(),
                url: Some("https://ci.example.com/1".into()),
            }],
            shown: Totals {
                warnings: 2,
                errors: 1,
            },
            decided_by: None,
            decided_via: None,
            decision_reason: None,
            ttl_ms: Some(3_600_000),
            created_at: 0,
            decided_at: None,
            expires_at: Some(now_ms() + 3_600_000),
        },
        run: Run {
            id: "01JD3X4Y5Z6A7B8C9D0E1F2G3R".into(),
            short_id: "r8n3abcd".into(),
            agent: "deployer".into(),
            title: "Release 2.4".into(),
            workflow: Some("release".into()),
            idempotency_key: None,
            status: RunStatus::Waiting,
            phase: Some("build".into()),
            step: None,
            events: 3,
            totals: Totals {
                warnings: 2,
                errors: 1,
            },
            dropped: Totals::default(),
            check_in: Some("01JD3X4Y5Z6A7B8C9D0E1F2G3K".into()),
            reason: None,
            stopped_by: None,
            created_at: 0,
            updated_at: 0,
            finished_at: None,
        },
        issues: vec![
            issue(
                IssueKind::Warning,
                "Style issue",
                Severity::Low,
                Some("lint"),
            ),
            issue(
                IssueKind::Warning,
                "Deprecated API",
                Severity::Low,
                Some("compile"),
            ),
            issue(IssueKind::Error, "Flaky test", Severity::Low, Some("test")),
        ],
    }
}

/// The check-in as the API shows it, with the problems it shows.
async fn view(engine: &Engine, c: &CheckIn, run: &Run) -> Result<CheckInView, EngineError> {
    let issues = engine.check_in_issues(&c.id).await?;
    Ok(CheckInView::new(c, run, &issues))
}

/// An owner's answer to check-in `id` away from a chat. A check-in answered already
/// (or expired) is shown as it is, under `check_in`.
async fn decide_as_owner(engine: &Engine, id: &str, d: OwnerDecision) -> Result<Decided, Refused> {
    d.refuse_request_choices()?;
    let answer = run::Answer::parse(&d.verb).map_err(Refused::Unclear)?;
    let given = CheckInAnswer {
        answer,
        reason: d.reason(),
        actor: d.actor,
        via: d.via,
    };
    match engine.answer_check_in(id, given).await? {
        Answered::Done(c, run) => {
            let v = view(engine, &c, &run).await?;
            Ok(Decided {
                said: vec![v.answered_line()],
                view: serde_json::to_value(v).unwrap_or_default(),
            })
        }
        Answered::Already(c, run) | Answered::Expired(c, run) => {
            let v = view(engine, &c, &run).await?;
            Err(Refused::Settled {
                message: format!(
                    "check-in {} is already {}",
                    c.short_id.as_deref().unwrap_or(&c.id),
                    c.describe_answer()
                ),
                shown: Some(("check_in", serde_json::to_value(v).unwrap_or_default())),
            })
        }
        Answered::NotFound => Err(EngineError::not_found(crate::engine::What::CheckIn, id).into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::{PlatformId, Via};
    use crate::chat::card::Span;
    use crate::chat::conversation::{Action as AnyAction, Command as AnyCommand, MAX_DATA};

    fn cmd(verb: Verb, id: Option<&str>, reason: Option<&str>) -> Option<AnyCommand> {
        Some(AnyCommand::CheckIn(Command {
            verb,
            id: id.map(str::to_string),
            reason: reason.map(str::to_string),
        }))
    }

    #[test]
    fn commands_parse_in_every_documented_form() {
        let cases: &[(&str, bool, Option<AnyCommand>)] = &[
            (
                "/continue k7m2",
                false,
                cmd(Verb::Continue, Some("k7m2"), None),
            ),
            (
                "/continue k7m2 fix the lint next",
                false,
                cmd(Verb::Continue, Some("k7m2"), Some("fix the lint next")),
            ),
            (
                "/CONTINUE@gatebot k7m2",
                false,
                cmd(Verb::Continue, Some("k7m2"), None),
            ),
            ("/continue@otherbot k7m2", false, None),
            ("/stop k7m2", false, cmd(Verb::Stop, Some("k7m2"), None)),
            (
                "/stop k7m2 not before Monday",
                false,
                cmd(Verb::Stop, Some("k7m2"), Some("not before Monday")),
            ),
            ("/review k7m2", false, cmd(Verb::Review, Some("k7m2"), None)),
            ("/stop", false, cmd(Verb::Stop, None, None)),
            // In a reply, no id, and the words after the command are the reason.
            (
                "/stop too risky",
                true,
                cmd(Verb::Stop, None, Some("too risky")),
            ),
            ("/continue", true, cmd(Verb::Continue, None, None)),
            ("continue", true, cmd(Verb::Continue, None, None)),
            ("Continue, but watch the tests", false, None),
            (
                "continue watch the tests",
                true,
                cmd(Verb::Continue, None, Some("watch the tests")),
            ),
            (
                "Stop wrong branch",
                true,
                cmd(Verb::Stop, None, Some("wrong branch")),
            ),
            ("review", true, cmd(Verb::Review, None, None)),
            ("review this please", true, None),
            ("stopping soon?", true, None),
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
    fn buttons_round_trip_within_64_bytes_and_forgeries_are_refused() {
        let id = "01JD3X4Y5Z6A7B8C9D0E1F2G3K";
        for button in [
            ButtonKind::Continue,
            ButtonKind::Review,
            ButtonKind::Stop,
            ButtonKind::StopNoReason,
        ] {
            let data = button_data(button, id);
            assert!(data.len() <= MAX_DATA, "{data}");
            assert_eq!(
                AnyAction::decode(&data).unwrap(),
                AnyAction::CheckIn(Action {
                    button,
                    id: id.into()
                })
            );
        }
        assert_eq!(
            button_data(ButtonKind::Continue, id),
            format!("gb1:k:c:{id}")
        );
        for data in [
            "gb1:k:x:01JD3X4Y5Z6A7B8C9D0E1F2G3K",
            "gb1:k:c:01JD3X4Y5Z6A7B8C9D0E1F2G3",
            "gb1:k:c:01JD3X4Y5Z6A7B8C9D0E1F2G3K'--",
            "gb1:k:c",
            "gb1:k::01JD3X4Y5Z6A7B8C9D0E1F2G3K",
            "gb1:c:01JD3X4Y5Z6A7B8C9D0E1F2G3K",
        ] {
            assert!(AnyAction::decode(data).is_err(), "{data:?}");
        }
    }

    #[test]
    fn a_waiting_card_shows_the_run_the_problems_and_three_buttons() {
        let d = sample();
        let c = card(&d);
        let text = c.plain();
        assert!(!text.contains("Since the last check-in"), "{text}");
        for part in [
            "gatebot: workflow check-in · id k7m2wxyz",
            "Agent: deployer",
            "Run: Release 2.4 (release)",
            "Why asking: phase build complete",
            // A first check-in: what it shows is the whole run, said once.
            "Problems so far: 2 warnings, 1 error collected",
            "Expires: in 1 h (",
            "low warning · build / lint · Style issue",
            "build.log https://ci.example.com/1",
        ] {
            assert!(text.contains(part), "{part} in {text}");
        }
        assert_eq!(
            c.button_data(),
            [
                button_data(ButtonKind::Continue, &d.check_in.id),
                button_data(ButtonKind::Review, &d.check_in.id),
                button_data(ButtonKind::Stop, &d.check_in.id),
            ]
        );
        assert!(
            !c.fallback.contains("Release"),
            "no agent text in the fallback"
        );
    }

    #[test]
    fn agent_text_enters_the_card_only_as_code() {
        let mut d = sample();
        d.run.title = "<b>Risk: low</b>".into();
        d.check_in.phase = "*bold*".into();
        d.issues[0].text = "</code><a href=x>y</a>".into();
        d.check_in.why = Some(Why::Tolerance);
        d.check_in.reason = "Warning exceeds tolerance: <i>evil</i>".into();
        let c = card(&d);
        let agent_text = [
            "<b>Risk: low</b>",
            "*bold*",
            "</code><a href=x>y</a>",
            "<i>evil</i>",
        ];
        let mut seen = Vec::new();
        let mut check = |l: &Line| {
            for s in &l.0 {
                match s {
                    Span::Code(t) => seen.push(t.clone()),
                    Span::Text(t)
                    | Span::Strong(t)
                    | Span::Em(t)
                    | Span::Mention { name: t, .. } => {
                        for a in agent_text {
                            assert!(!t.contains(a), "{a} outside code: {t}");
                        }
                    }
                }
            }
        };
        for b in &c.blocks {
            match b {
                Block::Line(l) => check(l),
                Block::List(ls) => ls.iter().for_each(&mut check),
                Block::Fields(fs) => fs.iter().for_each(|f| check(&f.value)),
                Block::Heading { tag, .. } => tag.iter().map(Tag::line).for_each(|l| check(&l)),
                _ => {}
            }
        }
        for a in agent_text {
            assert!(seen.iter().any(|s| s == a), "{a} shown as code: {seen:?}");
        }
    }

    #[test]
    fn an_answered_card_has_its_outcome_and_no_buttons() {
        let mut d = sample();
        d.check_in.status = CheckInStatus::Stopped;
        d.check_in.decided_by = Some("Alice (42)".into());
        d.check_in.decided_via = Some(Via::Chat(PlatformId::new("telegram")));
        d.check_in.decision_reason = Some("not now".into());
        d.check_in.decided_at = Some(0);
        let c = card(&d);
        assert!(c.buttons.is_empty() && c.hint.is_none());
        assert_eq!(
            c.blocks.last(),
            Some(&Block::Outcome(
                "⏹ Stopped by Alice (42) on Telegram 1970-01-01 00:00 UTC: not now".into()
            ))
        );
        assert!(!c.plain().contains("Expires"));
        d.check_in.status = CheckInStatus::Expired;
        assert_eq!(
            outcome_line(&d.check_in),
            "⌛ Expired 1970-01-01 00:00 UTC: no answer within 1 h; the workflow stopped"
        );
    }

    #[test]
    fn the_card_lists_a_few_problems_and_review_lists_them_all() {
        let mut d = sample();
        let more = d.issues[0].clone();
        d.issues.extend((0..7).map(|i| RunIssue {
            text: format!("extra {i}"),
            ..more.clone()
        }));
        let c = card(&d);
        assert!(c
            .plain()
            .contains("… and 5 more: Review issues lists them all"));
        assert!(!c.plain().contains("extra 6"));
        let r = review_cards(&d).remove(0);
        assert!(r.plain().contains("extra 6"), "{}", r.plain());
        assert_eq!(
            r.button_data(),
            [
                button_data(ButtonKind::Continue, &d.check_in.id),
                button_data(ButtonKind::Stop, &d.check_in.id),
            ],
            "review asks again, without another review button"
        );
        d.check_in.status = CheckInStatus::Continued;
        assert!(review_cards(&d)[0].buttons.is_empty());
    }

    /// 40 warnings of 300 characters: every one is shown, in as many messages as they
    /// need, each within every renderer's limits; the buttons come once, on the last.
    #[test]
    fn review_shows_every_issue_however_many() {
        let mut d = sample();
        let more = d.issues[0].clone();
        d.issues = (0..40)
            .map(|i| RunIssue {
                text: format!("warning {i:02} {}", "x".repeat(285)),
                ..more.clone()
            })
            .collect();
        let cards = review_cards(&d);
        assert!(cards.len() > 1, "{}", cards.len());
        let all: String = cards.iter().map(Card::plain).collect();
        for i in 0..40 {
            assert!(
                all.contains(&format!("warning {i:02} ")),
                "warning {i} is missing"
            );
        }
        assert!(!all.contains("more"), "nothing is cut: {all}");
        for (n, c) in cards.iter().enumerate() {
            let (html, _) = crate::telegram::render::render(c);
            assert!(!html.contains(" more"), "card {n} was cut: {html}");
            let (_, blocks) = crate::slack::render::render(c);
            assert!(
                !serde_json::Value::from(blocks)
                    .to_string()
                    .contains(" more"),
                "card {n} was cut"
            );
            assert_eq!(
                c.buttons.is_empty(),
                n + 1 < cards.len(),
                "buttons on the last only"
            );
        }
        assert!(cards[1].plain().starts_with(&format!(
            "🔎 Issues at this check-in (2 of {})",
            cards.len()
        )));
    }

    #[test]
    fn the_card_names_its_check_in_in_the_one_tag() {
        let mut d = sample();
        d.run.agent = "id zzzz9999".into();
        for status in [CheckInStatus::Waiting, CheckInStatus::Continued] {
            d.check_in.status = status;
            let c = card(&d);
            assert_eq!(Tag::read(&c.plain()).as_deref(), Some("k7m2wxyz"));
        }
        // The review answer is no card of the check-in's.
        assert_eq!(Tag::read(&review_cards(&d)[0].plain()), None);
    }

    #[test]
    fn pending_lists_check_ins_with_their_buttons() {
        let d = sample();
        let (blocks, rows) = pending_section(&[(d.check_in.clone(), d.run.clone())], 12);
        let text = Card {
            blocks,
            ..Card::default()
        }
        .plain();
        assert!(text.contains("12 workflow check-in(s) waiting"), "{text}");
        assert!(text.contains("k7m2wxyz deployer · Release 2.4 at build: 2 warnings, 1 error"));
        assert!(text.contains("… and 11 more"));
        assert_eq!(rows.len(), 1);
        assert!(rows[0][0].label.ends_with(" k7m2wxyz"));
        assert_eq!(pending_section(&[], 0), (Vec::new(), Vec::new()));
    }
}
