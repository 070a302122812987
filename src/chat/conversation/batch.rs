//! Batches: one answer for every pending request of an agent, from a chat.
//!
//! - Offered where several requests of one agent wait: `/pending` and a digest show,
//!   per agent (at most [`BATCH_AGENTS_SHOWN`]), ✅ Approve 3 from deployer (up to the
//!   highest risk among them, never critical) and ❌ Deny all 4 from deployer. Data:
//!   `gb1:Ba:<l|m|h>:<agent handle>`, `gb1:Bd:<agent handle>` (handles fit in 64 bytes
//!   whatever the name).
//! - Typed: `/approve_all <agent> [low|medium|high]` (every pending request of the agent
//!   up to that risk; without one, every one below critical) and `/deny_all <agent>
//!   [reason]`.
//! - Neither decides. The answer is a confirmation that lists what will be decided
//!   (short id, tool, risk; [`LINES`] lines, then how many more, by tool and risk) and
//!   what is left out (a critical request is never approved in a batch: it is approved
//!   on its own; a batch denial includes it), with ✅ Approve N / ❌ Deny N and ✖ Cancel
//!   (`gb1:Bc:<batch>`, `gb1:Bx:<batch>`). The store keeps exactly the requests listed
//!   under the batch's id, so confirming decides those and no others: not a request
//!   that arrived after the confirmation was shown. A batch is confirmed once, in the
//!   chat it was shown in, within [`LIFETIME`]; a second tap is told it is done.
//! - A denial without a reason asks why, as ❌ on a prompt does ([`Purpose::BatchDenyReason`]);
//!   🚫 Deny N without reason (`gb1:Bn:<batch>`) skips it. The one reason reaches every
//!   request's agent.
//! - Confirmed, each request is decided through the request kind's owner decision, as a
//!   tap on its prompt or `gatebot decide` would: one vote per request under each
//!   request's approval rule. A request that is no longer pending, or whose rule does not
//!   ask this person, is skipped and counted, not an error for the batch. The answer says
//!   how many of each outcome ("Approved 3, 1 still needs more approvals, 1 skipped:
//!   decided meanwhile, 1 left out: critical risk").
//! - Who: approvers only.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::approval::{Approval, ListFilter, Status};
use crate::chat::card::{Block, Button, Card, Line, Style, Tag};
use crate::chat::command::{first_word, non_empty, Typed};
use crate::chat::exchange::{Actor, Answer, At, Question, Said};
use crate::chat::failure::failure;
use crate::chat::text::shorten;
use crate::chat::Context;
use crate::engine::{Batch, BatchEnd, BatchState, Conflict, Ended, EngineError, NewBatch};
use crate::policy::RiskScore;
use crate::subject::{AgentPending, Purpose, BATCH_AGENTS_SHOWN};
use crate::time::now_ms;

use super::full_id;
use super::owner::{OwnerDecision, Refused};
use super::SlashCommand;
#[cfg(test)]
use super::EXAMPLE_ID;

/// The most requests one batch decides (a confirmation says when more wait).
pub const MOST: usize = 100;
/// The most requests a confirmation lists a line each.
pub const LINES: usize = 10;
/// How long a confirmation may be confirmed.
pub const LIFETIME: Duration = Duration::from_secs(15 * 60);
/// Requests read a page at a time.
const PAGE: usize = 200;
/// Most critical requests a confirmation names.
const CRITICAL_NAMED: usize = 5;
/// Most lines of detail an outcome gives.
const DETAILS: usize = 10;
/// Most characters of a reason (or of why a batch stopped) shown.
const REASON_SHOWN: usize = 300;
/// Most characters of an agent's name on a button.
const AGENT_ON_BUTTON: usize = 24;

/// The batches' kind.
pub struct Batches;

impl super::Kind for Batches {
    type Action = Action;
    type Command = Command;
    /// "Why deny these?", asked when a denial is confirmed without a reason.
    const PURPOSES: &'static [Purpose] = &[Purpose::BatchDenyReason];
    const COMMANDS: &'static [SlashCommand] = &[
        SlashCommand {
            name: "approve_all",
            menu: "<agent> [low|medium|high] — approve an agent's pending requests (you confirm first)",
            help: Some((
                "/approve_all <agent> [low|medium|high]",
                "approve every pending request of an agent up to that risk, never a critical one; you confirm first",
            )),
        },
        SlashCommand {
            name: "deny_all",
            menu: "<agent> [reason] — deny an agent's pending requests (you confirm first)",
            help: Some((
                "/deny_all <agent> [reason]",
                "deny every pending request of an agent; you confirm first, and the reason reaches the agent",
            )),
        },
    ];

    fn parse(typed: &Typed<'_>, _in_reply: bool) -> Option<Command> {
        let approve = match typed.name.as_str() {
            "approve_all" | "approveall" => true,
            "deny_all" | "denyall" => false,
            _ => return None,
        };
        let rest = typed
            .args
            .split_once(char::is_whitespace)
            .map_or("", |(_, r)| r);
        Some(Command {
            approve,
            agent: first_word(typed.args),
            rest: non_empty(rest),
        })
    }

    /// Denies the batch with the answer to "why deny these?" as the reason.
    async fn answer(
        cx: &Context,
        actor: &Actor,
        subject: &str,
        _purpose: Purpose,
        text: Option<String>,
    ) -> Answer {
        confirm(cx, actor, subject, None, Some(text)).await
    }

    async fn pending(cx: &Context) -> Result<Option<Card>, EngineError> {
        let agents = cx.engine.pending_agents(2, BATCH_AGENTS_SHOWN).await?;
        Ok(offers(&agents).map(|(line, buttons)| Card {
            blocks: vec![line],
            buttons,
            ..Card::default()
        }))
    }

    #[cfg(test)]
    fn golden_cards() -> Vec<(&'static str, Card)> {
        golden()
    }

    #[cfg(test)]
    fn example_cards() -> Vec<Card> {
        examples()
    }
}

/// A press on a batch's button.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Offer to approve the pending requests of the agent with this handle, up to
    /// `most` risk (never critical).
    Approve { handle: String, most: RiskScore },
    /// Offer to deny the pending requests of the agent with this handle.
    Deny { handle: String },
    /// Confirm the batch with this id.
    Confirm(String),
    /// Deny the batch with this id without a reason (the question's skip).
    NoReason(String),
    /// Cancel the batch with this id.
    Cancel(String),
}

/// A risk cap's letter in button data.
fn risk_code(r: RiskScore) -> &'static str {
    match r {
        RiskScore::Low => "l",
        RiskScore::Medium => "m",
        // Never critical: an approval batch stops below it.
        RiskScore::High | RiskScore::Critical => "h",
    }
}

fn risk_of_code(c: &str) -> Option<RiskScore> {
    match c {
        "l" => Some(RiskScore::Low),
        "m" => Some(RiskScore::Medium),
        "h" => Some(RiskScore::High),
        _ => None,
    }
}

impl super::Press for Action {
    fn decode(data: &str) -> Option<Action> {
        let mut parts = data.split(':');
        let action = match (parts.next()?, parts.next()?, parts.next()) {
            ("Ba", risk, Some(handle)) => Action::Approve {
                handle: full_id(handle)?,
                most: risk_of_code(risk)?,
            },
            ("Bd", handle, None) => Action::Deny {
                handle: full_id(handle)?,
            },
            ("Bc", id, None) => Action::Confirm(full_id(id)?),
            ("Bn", id, None) => Action::NoReason(full_id(id)?),
            ("Bx", id, None) => Action::Cancel(full_id(id)?),
            _ => return None,
        };
        parts.next().is_none().then_some(action)
    }

    fn encode(&self) -> String {
        match self {
            Action::Approve { handle, most } => format!("Ba:{}:{handle}", risk_code(*most)),
            Action::Deny { handle } => format!("Bd:{handle}"),
            Action::Confirm(id) => format!("Bc:{id}"),
            Action::NoReason(id) => format!("Bn:{id}"),
            Action::Cancel(id) => format!("Bx:{id}"),
        }
    }

    fn attempted(&self) -> String {
        match self {
            Action::Approve { .. } => "approve all".into(),
            Action::Deny { .. } => "deny all".into(),
            Action::Confirm(_) => "confirm batch".into(),
            Action::NoReason(_) => "deny batch without reason".into(),
            Action::Cancel(_) => "cancel batch".into(),
        }
    }

    async fn press(self, cx: &Context, actor: &Actor, at: &At) -> Answer {
        if at.chat.is_empty() {
            return Answer::note("This button does nothing here.");
        }
        match self {
            Action::Approve { handle, most } => match agent_of(cx, &handle).await {
                Ok(agent) => offer(cx, actor, &at.chat, &agent, Some(most), None).await,
                Err(answer) => answer,
            },
            Action::Deny { handle } => match agent_of(cx, &handle).await {
                Ok(agent) => offer(cx, actor, &at.chat, &agent, None, None).await,
                Err(answer) => answer,
            },
            Action::Confirm(id) => confirm(cx, actor, &id, Some(&at.chat), None).await,
            Action::NoReason(id) => confirm(cx, actor, &id, Some(&at.chat), Some(None)).await,
            Action::Cancel(id) => cancel(cx, actor, &id, &at.chat).await,
        }
    }

    #[cfg(test)]
    fn examples() -> Vec<Action> {
        vec![
            Action::Approve {
                handle: EXAMPLE_ID.into(),
                most: RiskScore::Medium,
            },
            Action::Deny {
                handle: EXAMPLE_ID.into(),
            },
            Action::Confirm(EXAMPLE_ID.into()),
            Action::NoReason(EXAMPLE_ID.into()),
            Action::Cancel(EXAMPLE_ID.into()),
        ]
    }
}

/// `/approve_all` or `/deny_all`, typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub approve: bool,
    /// The agent's name, as typed.
    pub agent: Option<String>,
    /// After the name: the risk cap of an approval, the reason of a denial.
    pub rest: Option<String>,
}

impl super::Run for Command {
    fn attempted(&self) -> String {
        if self.approve {
            "approve_all"
        } else {
            "deny_all"
        }
        .into()
    }

    async fn run(self, cx: &Context, actor: &Actor, said: &Said<'_>) -> Answer {
        let usage = if self.approve {
            "Usage: /approve_all <agent> [low|medium|high]"
        } else {
            "Usage: /deny_all <agent> [reason]"
        };
        let Some(agent) = self.agent else {
            return Answer::note(usage);
        };
        if !crate::names::valid_agent_name(&agent) {
            return Answer::alert(failure(&EngineError::UnknownAgent(agent)));
        }
        if !self.approve {
            return offer(cx, actor, said.chat, &agent, None, self.rest).await;
        }
        match self.rest.as_deref().map(risk_cap).transpose() {
            Ok(most) => {
                let most = most.unwrap_or(RiskScore::High);
                offer(cx, actor, said.chat, &agent, Some(most), None).await
            }
            Err(why) => Answer::note(format!("{why} {usage}")),
        }
    }
}

/// The risk cap typed after an agent's name.
fn risk_cap(typed: &str) -> Result<RiskScore, String> {
    match typed.trim().to_ascii_lowercase().as_str() {
        "low" => Ok(RiskScore::Low),
        "medium" => Ok(RiskScore::Medium),
        "high" => Ok(RiskScore::High),
        "critical" => Err(
            "A critical request is never approved in a batch: approve each on its own prompt."
                .into(),
        ),
        _ => Err(
            "After the agent's name comes the highest risk to approve: low, medium or high.".into(),
        ),
    }
}

/// The agent a button's handle names, or what to answer.
async fn agent_of(cx: &Context, handle: &str) -> Result<String, Answer> {
    match cx.engine.agent_of_handle(handle).await {
        Ok(agent) => Ok(agent),
        Err(EngineError::NotFound { .. }) => Err(Answer::alert(
            "This button names no agent gatebot knows. Use /pending for fresh ones.",
        )),
        Err(e) => Err(Answer::alert(failure(&e))),
    }
}

/// "3 requests".
fn requests(n: usize) -> String {
    match n {
        1 => "1 request".into(),
        n => format!("{n} requests"),
    }
}

/// The buttons that offer a batch for each agent with several pending requests, with
/// the line that introduces them; `None` when no agent has several.
#[must_use]
pub fn offers(agents: &[AgentPending]) -> Option<(Block, Vec<Vec<Button>>)> {
    let rows: Vec<Vec<Button>> = agents
        .iter()
        .filter_map(|a| {
            let name = shorten(&a.agent, AGENT_ON_BUTTON);
            let mut row = Vec::new();
            if let (true, Some(most)) = (a.approvable >= 2, a.approvable_risk) {
                let risk = match most {
                    RiskScore::Low => "low risk".to_string(),
                    r => format!("up to {} risk", r.as_str()),
                };
                row.push(
                    Button::new(
                        format!("✅ Approve {} from {name} ({risk})", a.approvable),
                        super::Action::Batch(Action::Approve {
                            handle: a.handle.clone(),
                            most,
                        })
                        .encode(),
                    )
                    .styled(Style::Primary),
                );
            }
            if a.pending >= 2 {
                row.push(
                    Button::new(
                        format!("❌ Deny all {} from {name}", a.pending),
                        super::Action::Batch(Action::Deny {
                            handle: a.handle.clone(),
                        })
                        .encode(),
                    )
                    .styled(Style::Danger),
                );
            }
            (!row.is_empty()).then_some(row)
        })
        .collect();
    if rows.is_empty() {
        return None;
    }
    let line = Line::text(
        "Several from one agent? Decide them together below (you confirm first), or with ",
    )
    .code("/approve_all <agent>")
    .and(" and ")
    .code("/deny_all <agent> [reason]")
    .and(".");
    Some((Block::Line(line), rows))
}

/// What a batch's confirmation shows: the requests it will decide, and what it leaves out.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Confirmation {
    /// The batch's id (its buttons name it).
    pub batch: String,
    pub agent: String,
    pub approve: bool,
    /// An approval's risk cap.
    pub most: Option<RiskScore>,
    /// A denial's reason, typed with it.
    pub reason: Option<String>,
    /// The requests it will decide, oldest first.
    pub requests: Vec<Approval>,
    /// The critical requests an approval leaves out: how many, and the first short ids.
    pub critical: usize,
    pub critical_named: Vec<String>,
    /// Pending requests above the risk cap.
    pub above: usize,
    /// More requests wait than one batch holds.
    pub more: bool,
}

/// The requests of `agent` a batch would decide, read now.
async fn gather(
    cx: &Context,
    agent: &str,
    most: Option<RiskScore>,
) -> Result<Confirmation, EngineError> {
    let mut c = Confirmation {
        agent: agent.to_string(),
        approve: most.is_some(),
        most,
        ..Confirmation::default()
    };
    let mut after = None;
    'pages: loop {
        let page = cx
            .engine
            .list(ListFilter {
                status: Some(Status::Pending),
                agent: Some(agent.to_string()),
                after: after.clone(),
                limit: PAGE,
            })
            .await?;
        for a in &page {
            match most {
                Some(_) if a.risk.score == RiskScore::Critical => {
                    c.critical += 1;
                    if c.critical_named.len() < CRITICAL_NAMED {
                        c.critical_named.push(a.short_id.clone());
                    }
                }
                Some(m) if a.risk.score > m => c.above += 1,
                _ if c.requests.len() < MOST => c.requests.push(a.clone()),
                _ => {
                    c.more = true;
                    break 'pages;
                }
            }
        }
        if page.len() < PAGE {
            break;
        }
        after = page.last().map(|a| a.id.clone());
    }
    Ok(c)
}

/// Offers a batch of `agent`'s pending requests in `chat`: an approval up to `most`
/// risk (`None`: a denial, with `reason`). Decides nothing: records the batch and
/// answers with its confirmation.
async fn offer(
    cx: &Context,
    actor: &Actor,
    chat: &str,
    agent: &str,
    most: Option<RiskScore>,
    reason: Option<String>,
) -> Answer {
    let mut c = match gather(cx, agent, most).await {
        Ok(c) => c,
        Err(e) => return Answer::alert(failure(&e)),
    };
    c.reason = reason;
    if c.requests.is_empty() {
        // An agent no longer in the config may still have requests waiting.
        if c.critical + c.above == 0 && cx.engine.config().agent(agent).is_none() {
            return Answer::alert(failure(&EngineError::UnknownAgent(agent.to_string())));
        }
        return nothing_to_decide(&c);
    }
    let now = now_ms();
    let new = NewBatch {
        platform: cx.platform.to_string(),
        chat: chat.to_string(),
        agent: agent.to_string(),
        approve: c.approve,
        reason: c.reason.clone(),
        requests: c.requests.iter().map(|a| a.id.clone()).collect(),
        left_out: c.critical,
        asked_by: actor.label(),
        now,
        expires_at: now + i64::try_from(LIFETIME.as_millis()).unwrap_or(i64::MAX),
    };
    match cx.engine.open_batch(new).await {
        Ok(b) => {
            c.batch = b.id;
            Answer::Card(confirmation(&c))
        }
        Err(e) => Answer::alert(failure(&e)),
    }
}

/// The answer when nothing of the agent's fits the batch.
fn nothing_to_decide(c: &Confirmation) -> Answer {
    let mut line = Line::text(format!(
        "Nothing to {} of ",
        if c.approve { "approve" } else { "deny" }
    ))
    .code(shorten(&c.agent, 64))
    .and(": no pending request");
    if let Some(m) = c.most.filter(|_| c.above > 0) {
        line = line.and(format!(" up to {} risk", m.as_str()));
    }
    line = line.and(".");
    if c.critical > 0 {
        line = line.and(format!(
            " {} of critical risk {} approved only on its own prompt.",
            requests(c.critical),
            if c.critical == 1 { "is" } else { "are" }
        ));
    }
    Answer::Notice {
        card: Card {
            blocks: vec![Block::Line(line)],
            fallback: "Nothing to decide".into(),
            ..Card::default()
        },
        alert: false,
    }
}

/// "`k7m2abcd` `send_email`, high risk".
fn request_line(a: &Approval) -> Line {
    Line::default()
        .code(&a.short_id)
        .and(" ")
        .code(shorten(&a.tool, 60))
        .and(format!(", {} risk", a.risk.score.as_str()))
}

/// "… and 7 more: `send_email` × 5, `Bash` × 2 (5 low risk, 2 medium risk)".
fn rest_line(rest: &[Approval]) -> Line {
    let mut tools: BTreeMap<&str, usize> = BTreeMap::new();
    let mut risks: BTreeMap<RiskScore, usize> = BTreeMap::new();
    for a in rest {
        *tools.entry(a.tool.as_str()).or_default() += 1;
        *risks.entry(a.risk.score).or_default() += 1;
    }
    let mut tools: Vec<(&str, usize)> = tools.into_iter().collect();
    tools.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut line = Line::text(format!("… and {} more: ", rest.len()));
    for (i, (tool, n)) in tools.iter().take(3).enumerate() {
        if i > 0 {
            line = line.and(", ");
        }
        line = line.code(shorten(tool, 60)).and(format!(" × {n}"));
    }
    if tools.len() > 3 {
        let others: usize = tools.iter().skip(3).map(|(_, n)| n).sum();
        line = line.and(format!(", {others} of other tools"));
    }
    let risks: Vec<String> = risks
        .iter()
        .map(|(r, n)| format!("{n} {} risk", r.as_str()))
        .collect();
    line.and(format!(" ({})", risks.join(", ")))
}

/// How many of `list` an approval rule asks more than one person to settle this way.
fn needing_more(list: &[Approval], approve: bool) -> usize {
    list.iter()
        .filter_map(|a| a.route.as_ref())
        .filter(|r| if approve { r.approvals } else { r.denials } > 1)
        .count()
}

/// A batch's confirmation card.
#[must_use]
pub fn confirmation(c: &Confirmation) -> Card {
    let n = c.requests.len();
    let verb = if c.approve { "Approve" } else { "Deny" };
    let mut blocks = vec![
        Block::Heading {
            icon: "🗂",
            title: "gatebot: batch".into(),
            tag: Some(Tag::Label(Line::default().code(shorten(&c.agent, 64)))),
        },
        Block::Line(
            Line::strong(format!("{verb} {} from ", requests(n)))
                .code(shorten(&c.agent, 64))
                .and("?"),
        ),
    ];
    let mut items: Vec<Line> = c.requests.iter().take(LINES).map(request_line).collect();
    if n > LINES {
        items.push(rest_line(&c.requests[LINES..]));
    }
    blocks.push(Block::List(items));
    if c.critical > 0 {
        let mut line = Line::text(format!(
            "Left out: {} of critical risk (",
            requests(c.critical)
        ));
        for (i, short) in c.critical_named.iter().enumerate() {
            if i > 0 {
                line = line.and(", ");
            }
            line = line.code(short);
        }
        if c.critical > c.critical_named.len() {
            line = line.and(", …");
        }
        blocks.push(Block::Line(
            line.and("): a critical request is approved only on its own prompt."),
        ));
    }
    if let Some(m) = c.most.filter(|_| c.above > 0) {
        blocks.push(Block::Line(Line::text(format!(
            "Not in this batch: {} above {} risk.",
            requests(c.above),
            m.as_str()
        ))));
    }
    if c.more {
        blocks.push(Block::Line(Line::text(format!(
            "More wait than one batch holds ({MOST}): confirm these, then ask again for the rest."
        ))));
    }
    let more = needing_more(&c.requests, c.approve);
    if more > 0 {
        blocks.push(Block::Line(Line::text(format!(
            "{} of these {} more than one person's {}: your confirmation is one vote on each.",
            if more == n {
                "All".to_string()
            } else {
                more.to_string()
            },
            if more == 1 && n != 1 { "needs" } else { "need" },
            if c.approve { "approval" } else { "denial" },
        ))));
    }
    if !c.approve {
        blocks.push(Block::Line(match &c.reason {
            Some(r) => Line::text("The agent reads: ").code(shorten(r, REASON_SHOWN)),
            None => Line::text(format!(
                "❌ Deny {n} asks why; the one reason reaches the agent with each denial."
            )),
        }));
    }
    blocks.push(Block::Line(Line::text(format!(
        "Confirm within {}. Requests that arrive meanwhile are not in this batch.",
        crate::words::span(LIFETIME)
    ))));
    let go = Button::new(
        format!("{} {verb} {n}", if c.approve { "✅" } else { "❌" }),
        super::Action::Batch(Action::Confirm(c.batch.clone())).encode(),
    )
    .styled(if c.approve {
        Style::Primary
    } else {
        Style::Danger
    });
    let cancel = Button::new(
        "✖ Cancel",
        super::Action::Batch(Action::Cancel(c.batch.clone())).encode(),
    );
    Card {
        blocks,
        buttons: vec![vec![go, cancel]],
        hint: None,
        fallback: format!("{verb} {}? Confirm or cancel.", requests(n)),
    }
}

/// The batch `id` if it can still be confirmed here (`chat`: where the button was
/// pressed; `None`: the answer to its question), else what to answer.
async fn open_batch(cx: &Context, id: &str, chat: Option<&str>) -> Result<Batch, Answer> {
    let b = match cx.engine.batch(id).await {
        Ok(Some(b)) => b,
        Ok(None) => return Err(unknown()),
        Err(e) => return Err(Answer::alert(failure(&e))),
    };
    let here = b.platform == cx.platform.as_str() && chat.is_none_or(|c| c == b.chat);
    if !here {
        return Err(Answer::alert(
            "This batch was asked for in another chat: it is confirmed there.",
        ));
    }
    if b.state != BatchState::Open {
        return Err(ended(&b));
    }
    if b.expires_at <= now_ms() {
        return Err(expired());
    }
    Ok(b)
}

fn unknown() -> Answer {
    Answer::alert(
        "gatebot no longer knows this batch (it expired long ago); nothing was decided. Ask \
         again from /pending.",
    )
}

fn expired() -> Answer {
    Answer::alert(format!(
        "This confirmation expired (a batch is confirmed within {}); nothing was decided. \
         Ask again from /pending, or with /approve_all or /deny_all.",
        crate::words::span(LIFETIME)
    ))
}

/// The answer to a tap on a batch that had ended.
fn ended(b: &Batch) -> Answer {
    let by = b
        .ended_by
        .as_deref()
        .map(|p| format!(" by {p}"))
        .unwrap_or_default();
    match b.state {
        BatchState::Cancelled => Answer::note(format!(
            "This batch was cancelled{by}; nothing in it was decided."
        )),
        _ => Answer::note(format!(
            "Already done{by}: {}",
            b.outcome.as_deref().unwrap_or("its requests were decided.")
        )),
    }
}

/// Confirms the batch `id`: decides its requests, or for a denial without a reason,
/// asks why first. `answer`: the reason given in reply to that question (`Some(None)`:
/// none, "Deny without reason").
async fn confirm(
    cx: &Context,
    actor: &Actor,
    id: &str,
    chat: Option<&str>,
    answer: Option<Option<String>>,
) -> Answer {
    let b = match open_batch(cx, id, chat).await {
        Ok(b) => b,
        Err(answer) => return answer,
    };
    if !b.approve && b.reason.is_none() && answer.is_none() {
        return ask_reason(&b);
    }
    let reason = if b.approve {
        None
    } else {
        answer.unwrap_or_else(|| b.reason.clone())
    };
    let b = match cx
        .engine
        .end_batch(&b.id, BatchEnd::Confirmed, &actor.label())
        .await
    {
        Ok(Ended::Now(b)) => b,
        Ok(Ended::Already(b)) => return ended(&b),
        Ok(Ended::Expired(_)) => return expired(),
        Ok(Ended::Unknown) => return unknown(),
        Err(e) => return Answer::alert(failure(&e)),
    };
    tracing::info!(
        platform = %cx.platform, batch = %b.id, agent = %b.agent, approve = b.approve,
        requests = b.requests.len(), by = %actor.label(), "a batch was confirmed in a chat"
    );
    let tally = decide_all(cx, actor, &b, reason).await;
    let card = outcome(&b, &tally);
    let summary = tally.words(b.approve);
    if let Err(e) = cx.engine.set_batch_outcome(&b.id, &summary).await {
        tracing::warn!(error = %e, "cannot keep a batch's outcome");
    }
    Answer::Card(card)
}

/// "Why deny these?", for a denial confirmed without a reason.
fn ask_reason(b: &Batch) -> Answer {
    let n = b.requests.len();
    Answer::Ask(Question {
        subject: b.id.clone(),
        purpose: Purpose::BatchDenyReason,
        title: "Deny requests".into(),
        text: Line::text(format!("why deny these {} from ", requests(n)))
            .code(shorten(&b.agent, 40))
            .and("? The reason is sent to the agent."),
        field: "Reason (optional)".into(),
        submit: format!("Deny {n}"),
        skip: Some(
            Button::new(
                format!("🚫 Deny {n} without reason"),
                super::Action::Batch(Action::NoReason(b.id.clone())).encode(),
            )
            .styled(Style::Danger),
        ),
        asked: format!("Why deny? Reply to my question, or tap “Deny {n} without reason”."),
        not_asked: "Could not open the deny form. Use /deny_all <agent> [reason] instead.".into(),
    })
}

/// Cancels the batch `id`.
async fn cancel(cx: &Context, actor: &Actor, id: &str, chat: &str) -> Answer {
    if let Err(answer) = open_batch(cx, id, Some(chat)).await {
        return answer;
    }
    match cx
        .engine
        .end_batch(id, BatchEnd::Cancelled, &actor.label())
        .await
    {
        Ok(Ended::Now(_)) => Answer::note("Cancelled: nothing was decided."),
        Ok(Ended::Already(b)) => ended(&b),
        Ok(Ended::Expired(_)) => expired(),
        Ok(Ended::Unknown) => unknown(),
        Err(e) => Answer::alert(failure(&e)),
    }
}

/// How a batch's requests came out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// Approved (or denied) by this batch.
    pub done: usize,
    /// A vote counted; the request still waits for more people.
    pub counted: usize,
    /// No longer pending when their turn came.
    pub settled: usize,
    /// Their approval rule does not ask this person (or not for this answer).
    pub not_asked: usize,
    /// This person had voted on them already.
    pub voted: usize,
    /// Their approval needs a second factor, which a chat batch does not confirm.
    pub step_up: usize,
    /// Over a budget: they stay pending.
    pub over_budget: usize,
    /// Gone, or no longer the agent's or within the batch (never approved critical).
    pub gone: usize,
    /// Critical requests the approval left out.
    pub left_out: usize,
    /// Lines of detail: votes counted, refusals, in the engine's words.
    pub said: Vec<String>,
    /// Where the batch stopped, if an error stopped it: how many it had not reached and why.
    pub stopped: Option<(usize, String)>,
}

impl Tally {
    /// "Approved 3, 1 still needs more approvals, 1 skipped: decided meanwhile, 1 left
    /// out: critical risk."
    #[must_use]
    pub fn words(&self, approve: bool) -> String {
        let verb = if approve { "Approved" } else { "Denied" };
        let mut parts = vec![format!("{verb} {}", self.done)];
        let counts: [(usize, String); 8] = [
            (
                self.counted,
                format!(
                    "{} more {}",
                    if self.counted == 1 {
                        "still needs"
                    } else {
                        "still need"
                    },
                    if approve { "approvals" } else { "denials" }
                ),
            ),
            (self.settled, "skipped: decided meanwhile".into()),
            (self.not_asked, "skipped: not yours to answer".into()),
            (self.voted, "skipped: you had voted".into()),
            (self.step_up, "skipped: needs your second factor".into()),
            (self.over_budget, "skipped: over a budget".into()),
            (self.gone, "skipped: no longer in the batch".into()),
            (self.left_out, "left out: critical risk".into()),
        ];
        for (n, what) in counts {
            if n > 0 {
                parts.push(format!("{n} {what}"));
            }
        }
        let mut words = format!("{}.", parts.join(", "));
        if let Some((left, why)) = &self.stopped {
            words.push_str(&format!(
                " Stopped with {} not reached: {}",
                requests(*left),
                shorten(why, REASON_SHOWN)
            ));
        }
        words
    }
}

/// Decides each request of the batch through the request kind's owner decision, as
/// `actor`: one vote each under its rule.
async fn decide_all(cx: &Context, actor: &Actor, b: &Batch, reason: Option<String>) -> Tally {
    let mut t = Tally {
        left_out: b.left_out,
        ..Tally::default()
    };
    let verb = if b.approve { "approve" } else { "deny" };
    for (i, id) in b.requests.iter().enumerate() {
        let a = match cx.engine.get(id).await {
            Ok(a) => a,
            Err(EngineError::NotFound { .. }) => {
                t.gone += 1;
                continue;
            }
            Err(e) => {
                t.stopped = Some((b.requests.len() - i, failure(&e)));
                break;
            }
        };
        if a.status != Status::Pending {
            t.settled += 1;
            continue;
        }
        // Never approved in a batch, whatever was recorded; and only the agent's.
        if a.agent != b.agent || (b.approve && a.risk.score == RiskScore::Critical) {
            t.gone += 1;
            continue;
        }
        let decision = OwnerDecision {
            verb: verb.into(),
            reason: reason.clone(),
            prefix: None,
            exact: false,
            for_: None,
            args: None,
            actor: actor.label(),
            via: cx.via(),
            // A chat confirms no second factor: such approvals are skipped, said why.
            factor: false,
        };
        match super::decide(&cx.engine, None, &a.id, decision).await {
            Ok(d) if d.view["status"] == "pending" => {
                t.counted += 1;
                t.said.extend(d.said);
            }
            Ok(_) => t.done += 1,
            Err(Refused::Settled { .. } | Refused::Engine(EngineError::AlreadySettled(_))) => {
                t.settled += 1;
            }
            Err(Refused::Engine(e @ EngineError::VoteRefused { .. })) => {
                t.not_asked += 1;
                t.said.push(failure(&e));
            }
            Err(Refused::Engine(EngineError::VotedAlready { .. })) => t.voted += 1,
            Err(Refused::Engine(EngineError::StepUpRequired { request, .. })) => {
                t.step_up += 1;
                t.said.push(format!(
                    "Request {request} needs your second factor: approve it on its own \
                     (/approve {request} in a private chat with me)."
                ));
            }
            Err(Refused::Engine(e @ EngineError::Conflict(Conflict::OverBudget { .. }))) => {
                t.over_budget += 1;
                t.said.push(failure(&e));
            }
            Err(Refused::Engine(EngineError::NotFound { .. })) => t.gone += 1,
            Err(Refused::Unclear(why)) => {
                t.stopped = Some((b.requests.len() - i, why));
                break;
            }
            Err(Refused::Engine(e)) => {
                tracing::warn!(error = %e, batch = %b.id, "a batch decision failed");
                t.stopped = Some((b.requests.len() - i, failure(&e)));
                break;
            }
        }
    }
    t
}

/// What a confirmed batch came to.
#[must_use]
pub fn outcome(b: &Batch, t: &Tally) -> Card {
    let icon = if b.approve { "✅" } else { "❌" };
    let mut blocks = vec![Block::Line(
        Line::text(format!("{icon} Batch of "))
            .code(shorten(&b.agent, 64))
            .and(": ")
            .and(t.words(b.approve)),
    )];
    if !t.said.is_empty() {
        let mut details: Vec<Line> = t
            .said
            .iter()
            .take(DETAILS)
            .map(|s| Line::text(s.clone()))
            .collect();
        if t.said.len() > DETAILS {
            details.push(Line::text(format!("… and {} more", t.said.len() - DETAILS)));
        }
        blocks.push(Block::List(details));
    }
    Card {
        blocks,
        fallback: format!(
            "Batch done: {} {}",
            if b.approve { "approved" } else { "denied" },
            t.done
        ),
        ..Card::default()
    }
}

/// A rule that asks alice and bob, two approvals needed (read as stored, so the
/// fields a route gains later keep their defaults).
#[cfg(test)]
fn two_person_rule() -> crate::approval::votes::Route {
    serde_json::from_value(serde_json::json!({
        "rule": "deploys",
        "asked": ["alice", "bob"],
        "approvals": 2,
        "denials": 1,
        "self_approval": true,
    }))
    .expect("a route as stored")
}

/// The golden cards: an approval's confirmation (more requests than lines, a critical
/// one left out, a rule that asks two people), a denial's with its reason, and what a
/// confirmed batch came to.
#[cfg(test)]
fn golden() -> Vec<(&'static str, Card)> {
    let sample = |n: usize, tool: &str, risk: RiskScore| {
        let mut a = super::approval::sample();
        a.short_id = format!("k7m2{:04}", n);
        a.agent = "deployer".into();
        a.tool = tool.into();
        a.risk.score = risk;
        a
    };
    let mut list: Vec<Approval> = (0..12)
        .map(|n| {
            let (tool, risk) = match n % 3 {
                0 => ("kubectl_apply", RiskScore::Medium),
                1 => ("Bash", RiskScore::Low),
                _ => ("send_email", RiskScore::Low),
            };
            sample(n, tool, risk)
        })
        .collect();
    list[0].route = Some(two_person_rule());
    let approve = Confirmation {
        batch: "01JD3X4Y5Z6A7B8C9D0E1F2G3H".into(),
        agent: "deployer".into(),
        approve: true,
        most: Some(RiskScore::Medium),
        reason: None,
        requests: list.clone(),
        critical: 1,
        critical_named: vec!["q9r4wxyz".into()],
        above: 2,
        more: false,
    };
    let deny = Confirmation {
        approve: false,
        most: None,
        reason: Some("the release is frozen until Monday".into()),
        requests: list[..3].to_vec(),
        critical: 0,
        critical_named: Vec::new(),
        above: 0,
        ..approve.clone()
    };
    let batch = Batch {
        id: approve.batch.clone(),
        platform: "telegram".into(),
        chat: "-100".into(),
        agent: "deployer".into(),
        approve: true,
        reason: None,
        requests: list.iter().map(|a| a.id.clone()).collect(),
        left_out: 1,
        asked_by: "alice".into(),
        created_at: 0,
        expires_at: 0,
        state: BatchState::Done,
        ended_by: Some("alice".into()),
        ended_at: Some(0),
        outcome: None,
    };
    let tally = Tally {
        done: 9,
        counted: 1,
        settled: 1,
        not_asked: 1,
        left_out: 1,
        said: vec![
            "Vote counted on k7m20000: 1 of 2 approvals: alice ✓. Waiting for bob.".into(),
            "You are not asked about request k7m20005: its approval rule \"mail\" asks carol."
                .into(),
        ],
        ..Tally::default()
    };
    vec![
        ("confirm-approve", confirmation(&approve)),
        ("confirm-deny", confirmation(&deny)),
        ("done", outcome(&batch, &tally)),
    ]
}

/// The cards at their largest.
#[cfg(test)]
fn examples() -> Vec<Card> {
    let mut a = super::approval::sample();
    a.agent = "a".repeat(64);
    a.tool = "<".repeat(crate::wire::MAX_TOOL_LEN);
    let c = Confirmation {
        batch: EXAMPLE_ID.into(),
        agent: a.agent.clone(),
        approve: true,
        most: Some(RiskScore::High),
        reason: None,
        requests: vec![a.clone(); MOST],
        critical: 10_000,
        critical_named: vec!["k7m2abcd".into(); CRITICAL_NAMED],
        above: 10_000,
        more: true,
    };
    let deny = Confirmation {
        approve: false,
        most: None,
        reason: Some("&<".repeat(2000)),
        ..c.clone()
    };
    let batch = Batch {
        id: EXAMPLE_ID.into(),
        platform: "telegram".into(),
        chat: "-100".into(),
        agent: a.agent.clone(),
        approve: false,
        reason: None,
        requests: Vec::new(),
        left_out: 0,
        asked_by: "alice".into(),
        created_at: 0,
        expires_at: 0,
        state: BatchState::Done,
        ended_by: None,
        ended_at: None,
        outcome: None,
    };
    let tally = Tally {
        done: MOST,
        said: vec!["<".repeat(500); MOST],
        stopped: Some((MOST, "&".repeat(500))),
        ..Tally::default()
    };
    let agents: Vec<AgentPending> = (0..BATCH_AGENTS_SHOWN)
        .map(|_| AgentPending {
            agent: "<".repeat(64),
            handle: EXAMPLE_ID.into(),
            pending: 100_000,
            approvable: 99_999,
            approvable_risk: Some(RiskScore::Medium),
        })
        .collect();
    let (line, buttons) = offers(&agents).unwrap_or((Block::Line(Line::default()), Vec::new()));
    vec![
        confirmation(&c),
        confirmation(&deny),
        outcome(&batch, &tally),
        Card {
            blocks: vec![line],
            buttons,
            hint: None,
            fallback: "Several pending requests of one agent".into(),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::card::Span;
    use crate::chat::conversation::{Action as AnyAction, Command as AnyCommand, MAX_DATA};

    #[test]
    fn buttons_round_trip_within_64_bytes_and_forged_data_is_refused() {
        for action in <Action as super::super::Press>::examples() {
            let data = AnyAction::Batch(action.clone()).encode();
            assert!(data.len() <= MAX_DATA, "{data}");
            assert_eq!(AnyAction::decode(&data), Ok(AnyAction::Batch(action)));
        }
        for forged in [
            "gb1:Ba:c:01HZZZZZZZZZZZZZZZZZZZZZZZ",
            "gb1:Ba:01HZZZZZZZZZZZZZZZZZZZZZZZ",
            "gb1:Bd:l:01HZZZZZZZZZZZZZZZZZZZZZZZ",
            "gb1:Bc:01HZZZZZZZZZZZZZZZZZZZZZZZ:x",
            "gb1:Bc:short",
            "gb1:Bx:01HZZZZZZZZZZZZZZZZZZZZZZ'",
        ] {
            assert!(AnyAction::decode(forged).is_err(), "{forged}");
        }
    }

    fn typed(text: &str) -> Option<AnyCommand> {
        AnyCommand::parse(text, Some("gatebot"), false)
    }

    fn cmd(approve: bool, agent: Option<&str>, rest: Option<&str>) -> Option<AnyCommand> {
        Some(AnyCommand::Batch(Command {
            approve,
            agent: agent.map(str::to_string),
            rest: rest.map(str::to_string),
        }))
    }

    #[test]
    fn commands_read_the_agent_and_the_risk_or_the_reason() {
        assert_eq!(
            typed("/approve_all deployer"),
            cmd(true, Some("deployer"), None)
        );
        assert_eq!(
            typed("/approve_all@gatebot deployer low"),
            cmd(true, Some("deployer"), Some("low"))
        );
        assert_eq!(
            typed("/approveall deployer"),
            cmd(true, Some("deployer"), None)
        );
        assert_eq!(
            typed("/deny-all deployer not  today"),
            cmd(false, Some("deployer"), Some("not  today"))
        );
        assert_eq!(typed("/denyall"), cmd(false, None, None));
        // Not a batch: the request's own commands.
        assert!(!matches!(
            typed("/approve_always k7m2"),
            Some(AnyCommand::Batch(_))
        ));
        assert_eq!(risk_cap("Medium"), Ok(RiskScore::Medium));
        assert!(risk_cap("critical").unwrap_err().contains("never approved"));
        assert!(risk_cap("huge")
            .unwrap_err()
            .contains("low, medium or high"));
    }

    fn list(n: usize) -> Vec<Approval> {
        (0..n)
            .map(|i| {
                let mut a = super::super::approval::sample();
                a.short_id = format!("k7m2{i:04}");
                a.tool = if i % 2 == 0 {
                    "</code>".into()
                } else {
                    "Bash".into()
                };
                a.agent = "<b>deployer</b>".into();
                a
            })
            .collect()
    }

    #[test]
    fn a_confirmation_lists_what_it_decides_and_what_it_leaves_out() {
        let c = Confirmation {
            batch: EXAMPLE_ID.into(),
            agent: "<b>deployer</b>".into(),
            approve: true,
            most: Some(RiskScore::Medium),
            requests: list(13),
            critical: 7,
            critical_named: vec!["q9r4wxyz".into(); CRITICAL_NAMED],
            above: 1,
            ..Confirmation::default()
        };
        let card = confirmation(&c);
        let text = card.plain();
        for part in [
            "Approve 13 requests from <b>deployer</b>?",
            "k7m20000 </code>, high risk",
            "k7m20009 Bash, high risk",
            "… and 3 more: </code> × 2, Bash × 1 (3 high risk)",
            "Left out: 7 requests of critical risk (q9r4wxyz, q9r4wxyz, q9r4wxyz, q9r4wxyz, q9r4wxyz, …): a critical request is approved only on its own prompt.",
            "Not in this batch: 1 request above medium risk.",
            "Confirm within 15 min.",
        ] {
            assert!(text.contains(part), "{part:?} in\n{text}");
        }
        assert!(
            !text.contains("k7m20010"),
            "capped at {LINES} lines: {text}"
        );
        // Agent text is data: only ever in code spans, never in the fallback.
        for b in &card.blocks {
            let lines: Vec<&Line> = match b {
                Block::Line(l) => vec![l],
                Block::List(ls) => ls.iter().collect(),
                _ => Vec::new(),
            };
            for l in lines {
                for s in &l.0 {
                    if let Span::Text(t) | Span::Strong(t) = s {
                        assert!(!t.contains('<'), "{t:?} is not code");
                    }
                }
            }
        }
        assert!(!card.fallback.contains("deployer"), "{}", card.fallback);
        assert_eq!(
            card.button_data(),
            [
                format!("gb1:Bc:{EXAMPLE_ID}").as_str(),
                format!("gb1:Bx:{EXAMPLE_ID}").as_str()
            ]
        );
        // A denial includes critical requests, and says what its reason will be.
        let deny = Confirmation {
            approve: false,
            most: None,
            critical: 0,
            critical_named: Vec::new(),
            above: 0,
            ..c.clone()
        };
        let text = confirmation(&deny).plain();
        assert!(text.contains("Deny 13 requests"), "{text}");
        assert!(text.contains("❌ Deny 13 asks why"), "{text}");
        assert!(!text.contains("Left out"), "{text}");
    }

    #[test]
    fn a_rule_that_asks_two_people_is_said_to_take_one_vote() {
        let mut l = list(2);
        l[1].route = Some(two_person_rule());
        let c = Confirmation {
            approve: true,
            requests: l,
            ..Confirmation::default()
        };
        assert!(confirmation(&c)
            .plain()
            .contains("1 of these needs more than one person's approval: your confirmation is one vote on each."));
        let deny = Confirmation {
            approve: false,
            ..c
        };
        assert!(!confirmation(&deny).plain().contains("one vote on each"));
    }

    #[test]
    fn the_outcome_counts_each_kind_of_result() {
        let t = Tally {
            done: 3,
            counted: 1,
            settled: 1,
            left_out: 1,
            ..Tally::default()
        };
        assert_eq!(
            t.words(true),
            "Approved 3, 1 still needs more approvals, 1 skipped: decided meanwhile, 1 left out: critical risk."
        );
        let t = Tally {
            done: 0,
            not_asked: 2,
            voted: 1,
            stopped: Some((4, "the database is busy".into())),
            ..Tally::default()
        };
        assert_eq!(
            t.words(false),
            "Denied 0, 2 skipped: not yours to answer, 1 skipped: you had voted. Stopped with 4 requests not reached: the database is busy"
        );
    }

    #[test]
    fn offers_need_several_requests_and_never_offer_to_approve_critical_ones() {
        let agent = |pending, approvable, risk| AgentPending {
            agent: "deployer".into(),
            handle: EXAMPLE_ID.into(),
            pending,
            approvable,
            approvable_risk: risk,
        };
        let (_, rows) = offers(&[
            agent(3, 3, Some(RiskScore::Low)),
            agent(4, 1, Some(RiskScore::High)),
            agent(2, 0, None),
        ])
        .unwrap();
        let labels: Vec<Vec<&str>> = rows
            .iter()
            .map(|r| r.iter().map(|b| b.label.as_str()).collect())
            .collect();
        assert_eq!(
            labels,
            [
                vec![
                    "✅ Approve 3 from deployer (low risk)",
                    "❌ Deny all 3 from deployer"
                ],
                vec!["❌ Deny all 4 from deployer"],
                vec!["❌ Deny all 2 from deployer"],
            ]
        );
        assert_eq!(
            rows[0][0].data,
            format!("gb1:Ba:l:{EXAMPLE_ID}"),
            "the cap is the highest risk offered"
        );
        assert!(offers(&[agent(1, 1, Some(RiskScore::Low))]).is_none());
        let (_, rows) = offers(&[agent(5, 5, Some(RiskScore::High))]).unwrap();
        assert_eq!(
            rows[0][0].label,
            "✅ Approve 5 from deployer (up to high risk)"
        );
    }
}
