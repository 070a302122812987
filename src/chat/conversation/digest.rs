//! Digests: one message for a burst of requests, and a way to go through them.
//!
//! When more requests wait for a card in one chat than the platform's `digest_after`,
//! delivery posts one digest instead of a card each (a runaway agent must not bury the
//! owner in messages or run into the platform's rate limits). A digest has three
//! views, kept in SQLite:
//! 1. **summary**: how many requests, by agent and tool with their highest risk, and a
//!    "Review one by one" button; for each agent with several pending, the buttons
//!    that decide them together after a confirmation ([`super::batch`]);
//! 2. **review**: one pending request in full (the same card as its own prompt) with
//!    its decision buttons, plus "Next" and "Summary". When the request shown is
//!    settled (here or anywhere else), the view moves on to the next pending one; a
//!    reply to the digest decides the request it shows;
//! 3. **closed**: once nothing in it is pending, the final tally, without buttons.
//!
//! Buttons (`gb1:v:r`, `gb1:v:s`, `gb1:v:n:<id>`) only change the stored view and ask
//! delivery to draw the message again, so a message has one writer and keeps its pace.
//! Who: approvers only.

use crate::approval::Approval;
use crate::chat::card::{Block, Button, Card, Field, Hint, Line};
use crate::chat::exchange::{Actor, Answer, At};
use crate::chat::text::shorten;
use crate::chat::Context;
use crate::engine::{DigestNow, DigestPage, EngineError};
use crate::subject::{DigestState, DigestSummary};

use super::full_id;
#[cfg(test)]
use super::EXAMPLE_ID;
use super::{approval, Never};

/// What a digest message shows.
#[derive(Debug, Clone, PartialEq)]
pub enum View {
    Summary(DigestSummary),
    /// One pending request; `position` is its 1-based place among the digest's requests.
    Review {
        summary: DigestSummary,
        approval: Box<Approval>,
        position: usize,
    },
    Closed(DigestSummary),
}

impl View {
    #[must_use]
    pub fn summary(&self) -> &DigestSummary {
        match self {
            View::Summary(s) | View::Closed(s) => s,
            View::Review { summary, .. } => summary,
        }
    }
}

/// The view for the digest `message`'s stored state, moving on from a request under
/// review that is no longer pending, and closing once nothing is pending. Returns the
/// view and the state to store if it changed; `None` if `message` is no digest.
pub async fn load(
    cx: &Context,
    chat: &str,
    message: &str,
) -> Result<Option<(View, Option<DigestState>)>, EngineError> {
    let Some(DigestNow {
        state,
        summary,
        review,
    }) = cx.engine.chat().digest(&cx.platform, chat, message).await?
    else {
        return Ok(None);
    };
    if summary.pending == 0 {
        let new = DigestState {
            showing: None,
            closed: true,
        };
        let changed = (new != state).then_some(new);
        return Ok(Some((View::Closed(summary), changed)));
    }
    // Under review: the same request while it is pending, otherwise the next one.
    let Some((approval, position)) = review else {
        return Ok(Some((View::Summary(summary), None)));
    };
    let changed = (state.showing.as_deref() != Some(approval.id.as_str())).then(|| DigestState {
        showing: Some(approval.id.clone()),
        closed: false,
    });
    Ok(Some((
        View::Review {
            summary,
            approval: Box::new(approval),
            position,
        },
        changed,
    )))
}

/// A digest's title line: "12 of 137 requests in this digest need a decision".
#[must_use]
pub fn title(s: &DigestSummary) -> String {
    if s.pending == 0 {
        format!("Digest of {} requests: all settled", s.total)
    } else {
        format!(
            "{} of {} requests in this digest need a decision",
            s.pending, s.total
        )
    }
}

/// Most agent/tool lines a summary lists.
pub const MAX_GROUPS: usize = 10;

/// One line per agent and tool, at most [`MAX_GROUPS`], then how many kinds more.
#[must_use]
pub fn group_lines(s: &DigestSummary) -> Vec<Line> {
    let mut lines: Vec<Line> = s
        .groups
        .iter()
        .take(MAX_GROUPS)
        .map(|g| {
            Line::text(format!(
                "{} · {} × {} ({} pending, up to {} risk)",
                shorten(&g.agent, 40),
                shorten(&g.tool, 60),
                g.count,
                g.pending,
                g.max_risk.as_str()
            ))
        })
        .collect();
    if s.groups.len() > MAX_GROUPS {
        lines.push(Line::text(format!(
            "… and {} more agent/tool pairs",
            s.groups.len() - MAX_GROUPS
        )));
    }
    lines
}

/// The tally of settled outcomes: "3 approved, 1 denied, 2 expired".
#[must_use]
pub fn tally(s: &DigestSummary) -> String {
    let parts: Vec<String> = [
        (s.approved, "approved"),
        (s.rejected, "denied"),
        (s.expired, "expired"),
        (s.cancelled, "cancelled"),
        (s.pending, "pending"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, w)| format!("{n} {w}"))
    .collect();
    parts.join(", ")
}

fn heading() -> Block {
    Block::Heading {
        icon: "📥",
        title: "gatebot digest".into(),
        tag: None,
    }
}

/// The digest's card for `view`.
#[must_use]
pub fn card(view: &View) -> Card {
    let s = view.summary();
    match view {
        View::Summary(_) => {
            let mut blocks = vec![
                heading(),
                Block::Line(Line::strong(title(s))),
                Block::Line(Line::text("They arrived too fast to post one by one.")),
                Block::List(group_lines(s)),
            ];
            if let Some(at) = s.next_expiry {
                blocks.push(Block::Fields(vec![Field::new(
                    "Next expiry",
                    Line::text(crate::words::deadline(at, crate::time::now_ms())),
                )]));
            }
            blocks.push(Block::Line(Line::text(
                "Review them here one by one, or use /pending.",
            )));
            let mut buttons = vec![vec![Button::new(
                "📋 Review one by one",
                super::Action::Digest(Nav::Review).encode(),
            )]];
            if let Some((line, rows)) = super::batch::offers(&s.agents) {
                blocks.push(line);
                buttons.extend(rows);
            }
            Card {
                blocks,
                buttons,
                hint: None,
                fallback: title(s),
            }
        }
        View::Review {
            approval: a,
            position,
            ..
        } => {
            let mut card = approval::card(a);
            card.blocks.insert(
                0,
                Block::Line(Line::strong("📥 gatebot digest").and(format!(
                    " · request {position} of {} · {} pending",
                    s.total, s.pending
                ))),
            );
            card.buttons.push(vec![
                Button::new(
                    "⏭ Next",
                    super::Action::Digest(Nav::Next(a.id.clone())).encode(),
                ),
                Button::new("📋 Summary", super::Action::Digest(Nav::Summary).encode()),
            ]);
            card.hint = Some(Hint {
                reply_words: vec!["approve".into(), "deny [reason]".into()],
                command: Some(format!("/approve {}", a.short_id)),
            });
            card.fallback = title(s);
            card
        }
        View::Closed(_) => Card {
            blocks: vec![
                heading(),
                Block::Line(Line::strong(title(s)).and(format!(": {}.", tally(s)))),
                Block::List(group_lines(s)),
            ],
            buttons: Vec::new(),
            hint: None,
            fallback: title(s),
        },
    }
}

/// The digest's kind: its buttons only move its view.
pub struct Digests;

impl super::Kind for Digests {
    type Action = Nav;
    type Command = Never;

    #[cfg(test)]
    fn golden_cards() -> Vec<(&'static str, Card)> {
        use crate::subject::DigestGroup;
        let group = |agent: &str, tool: &str, count, max_risk| DigestGroup {
            agent: agent.into(),
            tool: tool.into(),
            count,
            pending: count,
            max_risk,
        };
        let summary = DigestSummary {
            total: 42,
            pending: 40,
            approved: 2,
            groups: vec![
                group("mailer", "send_email", 30, crate::policy::RiskScore::High),
                group("coder", "Bash", 10, crate::policy::RiskScore::Medium),
            ],
            next_expiry: Some(crate::time::now_ms() + 86_399_000),
            agents: vec![
                crate::subject::AgentPending {
                    agent: "mailer".into(),
                    handle: "01JD3X4Y5Z6A7B8C9D0E1F2G4M".into(),
                    pending: 30,
                    approvable: 30,
                    approvable_risk: Some(crate::policy::RiskScore::High),
                },
                crate::subject::AgentPending {
                    agent: "coder".into(),
                    handle: "01JD3X4Y5Z6A7B8C9D0E1F2G4C".into(),
                    pending: 10,
                    approvable: 10,
                    approvable_risk: Some(crate::policy::RiskScore::Medium),
                },
            ],
            ..DigestSummary::default()
        };
        vec![("summary", card(&View::Summary(summary)))]
    }

    #[cfg(test)]
    fn example_cards() -> Vec<Card> {
        use crate::subject::DigestGroup;
        let group = DigestGroup {
            agent: "<".repeat(64),
            tool: "&".repeat(crate::wire::MAX_TOOL_LEN),
            count: 1000,
            pending: 999,
            max_risk: crate::policy::RiskScore::Critical,
        };
        let summary = DigestSummary {
            total: 20_000,
            pending: 19_000,
            approved: 1000,
            groups: vec![group; 50],
            next_expiry: Some(0),
            agents: vec![
                crate::subject::AgentPending {
                    agent: "<".repeat(64),
                    handle: super::EXAMPLE_ID.into(),
                    pending: 19_000,
                    approvable: 18_999,
                    approvable_risk: Some(crate::policy::RiskScore::Medium),
                };
                crate::subject::BATCH_AGENTS_SHOWN
            ],
            ..DigestSummary::default()
        };
        let mut approval = approval::sample();
        approval.summary = Some("&<".repeat(crate::wire::MAX_SUMMARY_CHARS / 2));
        vec![
            card(&View::Summary(summary.clone())),
            card(&View::Review {
                summary: summary.clone(),
                approval: Box::new(approval),
                position: 20_000,
            }),
            card(&View::Closed(summary)),
        ]
    }
}

impl super::Press for Nav {
    fn decode(data: &str) -> Option<Nav> {
        match data.strip_prefix("v:")? {
            "r" => Some(Nav::Review),
            "s" => Some(Nav::Summary),
            rest => {
                let id = rest.strip_prefix("n:")?;
                full_id(id).map(Nav::Next)
            }
        }
    }

    fn encode(&self) -> String {
        match self {
            Nav::Review => "v:r".into(),
            Nav::Summary => "v:s".into(),
            Nav::Next(id) => format!("v:n:{id}"),
        }
    }

    fn attempted(&self) -> String {
        "review digest".into()
    }

    fn on_digest(&self) -> bool {
        true
    }

    async fn press(self, cx: &Context, _actor: &Actor, at: &At) -> Answer {
        press(cx, self, at).await
    }

    #[cfg(test)]
    fn examples() -> Vec<Nav> {
        vec![Nav::Review, Nav::Summary, Nav::Next(EXAMPLE_ID.into())]
    }
}

/// Where an approver wants a digest to go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Nav {
    /// Show the first pending request.
    Review,
    /// Show the pending request after this one.
    Next(String),
    /// Back to the summary.
    Summary,
}

/// An approver pressed a digest button: store where the digest goes and ask delivery
/// to draw it.
async fn press(cx: &Context, nav: Nav, at: &At) -> Answer {
    let Some(message) = &at.message else {
        return Answer::note("This button does nothing here.");
    };
    match navigate(cx, &at.chat, message, nav).await {
        Ok(Some(answer)) => answer,
        Ok(None) => Answer::note("This message is not a digest gatebot knows."),
        Err(e) => {
            tracing::error!(error = %e, "cannot move the digest");
            Answer::note("Something went wrong; see the gatebot log.")
        }
    }
}

async fn navigate(
    cx: &Context,
    chat: &str,
    message: &str,
    nav: Nav,
) -> Result<Option<Answer>, EngineError> {
    let to = match nav {
        Nav::Summary => DigestPage::Summary,
        Nav::Review => DigestPage::First,
        Nav::Next(after) => DigestPage::After(after),
    };
    let Some(state) = cx
        .engine
        .chat()
        .turn_digest(&cx.platform, chat, message, to)
        .await?
    else {
        return Ok(None);
    };
    if state.closed {
        return Ok(Some(Answer::note(
            "Every request in this digest is settled.",
        )));
    }
    cx.delivery.redraw(chat, message);
    Ok(Some(Answer::Done(Card::default())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::conversation::{Action, MAX_DATA};

    #[test]
    fn nav_buttons_round_trip_within_64_bytes() {
        let id = "01JD3X4Y5Z6A7B8C9D0E1F2G3H";
        for nav in [Nav::Review, Nav::Summary, Nav::Next(id.into())] {
            let data = Action::Digest(nav.clone()).encode();
            assert!(data.len() <= MAX_DATA);
            assert_eq!(Action::decode(&data), Ok(Action::Digest(nav)));
        }
        for forged in [
            "gb1:v:x",
            "gb1:v:n:short",
            "gb1:v:n:01JD3X4Y5Z6A7B8C9D0E1F2G3H' --",
        ] {
            assert!(Action::decode(forged).is_err(), "{forged}");
        }
    }

    #[test]
    fn tallies_name_only_what_happened() {
        let s = DigestSummary {
            total: 6,
            approved: 3,
            rejected: 1,
            expired: 2,
            ..DigestSummary::default()
        };
        assert_eq!(tally(&s), "3 approved, 1 denied, 2 expired");
        assert_eq!(title(&s), "Digest of 6 requests: all settled");
    }
}
