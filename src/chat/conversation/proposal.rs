//! Proposals: gatebot proposes a tier change from an agent's evidence, and an owner
//! approves or declines it. Nothing changes until someone approves.
//!
//! - Card: "Promote mailer to semi_autonomous?", the tiers, the evidence behind it
//!   and the assessment's words; once answered, the outcome instead of the buttons.
//! - Buttons: ✅ Approve · ❌ Deny (the proposal is then declined). Data: `gb1:Pa:<id>`, `gb1:Pd:<id>`.
//! - Commands: `/approve <id>` and `/deny <id> [reason]` (and replies to the card with
//!   `approve` / `deny [reason]`) answer a proposal when the id (or the card) names one;
//!   `gatebot decide ID approve|deny` does from the CLI.
//! - Who: approvers only.

use std::time::Duration;

use crate::approval::Verb;
use crate::chat::card::{Block, Button, Card, Field, Hint, Line, Style, Tag};
use crate::chat::exchange::{Actor, Answer, At};
use crate::chat::text::shorten;
use crate::chat::Context;
use crate::engine::{EngineError, ProposalDecided};
use crate::subject::{Subject, SubjectKind};
use crate::time::clock;
use crate::trust::{Actor as TrustActor, Direction, Proposal, ProposalStatus};
use crate::words;

use super::full_id;
use super::owner::{Decided, Listed, Listing, Offered, OwnerDecision, Refused};
#[cfg(test)]
use super::EXAMPLE_ID;
use super::{Never, Rendered};
use crate::chat::failure::failure;
use crate::engine::Engine;

/// The proposal's kind: tier changes waiting for an owner. Its commands are the
/// approval prompt's `/approve` and `/deny` (see [`super::approval`]).
pub struct Proposals;

impl super::Kind for Proposals {
    type Action = Action;
    type Command = Never;
    const SUBJECT: Option<SubjectKind> = Some(SubjectKind::Proposal);

    async fn render(engine: &Engine, subject: &Subject) -> Result<Option<Rendered>, EngineError> {
        match engine.proposal(&subject.id).await {
            Ok(p) => Ok(Some(Rendered {
                card: card(&p, quiet(engine)),
                revision: p.status.as_str().to_string(),
                open: p.status == ProposalStatus::Open,
                deadline: None,
            })),
            Err(EngineError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `approve` changes the agent's tier, `deny` (or `decline`) declines it.
    async fn decide(engine: &Engine, id: &str, d: OwnerDecision) -> Result<Decided, Refused> {
        decide_as_owner(engine, id, d).await
    }

    /// The open proposals, all on the first page (they are few): `proposals`.
    async fn listed(engine: &Engine, l: &Listing) -> Result<Option<Listed>, EngineError> {
        if !l.first_page() {
            return Ok(None);
        }
        let open: Vec<Proposal> = engine
            .open_proposals()
            .await?
            .into_iter()
            .filter(|p| l.shows(&p.agent))
            .collect();
        let mut said = Vec::new();
        if !open.is_empty() {
            said.push(String::new());
            said.push("Open proposals (gatebot decide ID approve|deny):".into());
            said.extend(
                open.iter()
                    .map(|p| format!("{}  {} ({})", p.short_id, p.question(), p.measures.brief())),
            );
        }
        let mut fields = serde_json::Map::new();
        fields.insert("proposals".into(), serde_json::json!(open));
        Ok(Some(Listed { fields, said }))
    }

    /// A promotion, open; then approved.
    #[cfg(test)]
    fn golden_cards() -> Vec<(&'static str, Card)> {
        let quiet = Duration::from_secs(7 * 24 * 3600);
        let mut p = tests::sample();
        p.created_at = crate::time::now_ms() - 3_600_000;
        let open = card(&p, quiet);
        p.status = ProposalStatus::Approved;
        p.decided_by = Some(TrustActor {
            name: "alice".into(),
            via: crate::approval::Via::Cli,
        });
        p.decided_at = Some(crate::time::now_ms() - 60_000);
        vec![("open", open), ("approved", card(&p, quiet))]
    }

    #[cfg(test)]
    fn example_cards() -> Vec<Card> {
        let mut p = tests::sample();
        p.agent = "<".repeat(64);
        p.reason = "&".repeat(5000);
        let quiet = Duration::from_secs(7 * 24 * 3600);
        let mut cards = vec![card(&p, quiet)];
        p.status = ProposalStatus::Declined;
        cards.push(card(&p, quiet));
        cards.push(answered(&p, quiet));
        cards
    }
}

impl super::Press for Action {
    fn decode(data: &str) -> Option<Action> {
        let (code, id) = data.split_once(':')?;
        let approve = match code {
            "Pa" => true,
            "Pd" => false,
            _ => return None,
        };
        // Proposal ids are ULIDs.
        full_id(id).map(|id| Action { approve, id })
    }

    fn encode(&self) -> String {
        format!("{}:{}", if self.approve { "Pa" } else { "Pd" }, self.id)
    }

    fn offered(&self, _config: &crate::config::Config) -> Option<Offered> {
        Some(if self.approve {
            Offered::verb(&self.id, "approve")
        } else {
            Offered::verb(&self.id, "decline").asking_why()
        })
    }

    fn attempted(&self) -> String {
        if self.approve {
            "approve proposal".into()
        } else {
            "decline proposal".into()
        }
    }

    fn subject(&self) -> Option<&str> {
        Some(&self.id)
    }

    async fn press(self, cx: &Context, actor: &Actor, _at: &At) -> Answer {
        decide(cx, actor, self.approve, &self.id, None).await
    }

    #[cfg(test)]
    fn examples() -> Vec<Action> {
        [true, false]
            .into_iter()
            .map(|approve| Action {
                approve,
                id: EXAMPLE_ID.into(),
            })
            .collect()
    }
}

/// A press on a proposal's button.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    pub approve: bool,
    /// The proposal's full id.
    pub id: String,
}

/// The button data of a proposal's button, for cards and tests.
#[must_use]
pub fn button_data(approve: bool, id: &str) -> String {
    super::Action::Proposal(Action {
        approve,
        id: id.to_string(),
    })
    .encode()
}

/// The proposal a typed decision means, if it means one: the card it replies to, or
/// the subject its id names.
pub async fn named(cx: &Context, typed: Option<&str>, replied: Option<&Subject>) -> Option<String> {
    match (typed, replied) {
        (Some(t), _) => match cx.engine.chat().lookup(t).await {
            Ok(s) if s.kind == SubjectKind::Proposal => Some(s.id),
            _ => None,
        },
        (None, Some(s)) if s.kind == SubjectKind::Proposal => Some(s.id.clone()),
        _ => None,
    }
}

/// Runs a typed decision on the proposal `id`.
pub async fn command(
    cx: &Context,
    actor: &Actor,
    verb: Verb,
    reason: Option<String>,
    id: &str,
) -> Answer {
    match verb {
        Verb::Approve => decide(cx, actor, true, id, reason).await,
        Verb::Deny => decide(cx, actor, false, id, reason).await,
        Verb::ApproveAlways => Answer::alert(
            "A proposal is approved or declined; use /approve <id> or /deny <id> [reason].",
        ),
    }
}

/// Answers the proposal `id` for `actor`. The caller has checked that the actor may.
pub async fn decide(
    cx: &Context,
    actor: &Actor,
    approve: bool,
    id: &str,
    reason: Option<String>,
) -> Answer {
    let who = TrustActor {
        name: actor.label(),
        via: cx.via(),
    };
    match cx.engine.decide_proposal(id, approve, who, reason).await {
        Ok(ProposalDecided::Done(p)) => Answer::Done(answered(&p, quiet(&cx.engine))),
        Ok(ProposalDecided::AlreadySettled(p)) => Answer::alert(format!(
            "Proposal {} is already {}.",
            p.short_id,
            settled_words(&p)
        )),
        Ok(ProposalDecided::Superseded(p)) => Answer::alert(format!(
            "Proposal {} is out of date: {}'s tier changed since it was made, so nothing \
             changed. Use /agent {} to see where it stands.",
            p.short_id, p.agent, p.agent
        )),
        Err(EngineError::NotFound { .. }) => Answer::alert("That proposal no longer exists."),
        Err(e) => Answer::alert(failure(&e)),
    }
}

fn quiet(engine: &Engine) -> Duration {
    engine.config().trust.promotion.decline_quiet
}

/// "approved by Alice (42) on Telegram", "declined by …", "superseded".
fn settled_words(p: &Proposal) -> String {
    let by = p
        .decided_by
        .as_ref()
        .map(|a| a.label())
        .unwrap_or_else(|| "someone".into());
    match p.status {
        ProposalStatus::Open => "open".into(),
        ProposalStatus::Approved => format!("approved by {by}"),
        ProposalStatus::Declined => format!("declined by {by}"),
        ProposalStatus::Superseded => "out of date (the tier changed another way)".into(),
    }
}

/// What the answerer is told.
fn answered(p: &Proposal, quiet: Duration) -> Card {
    match p.status {
        ProposalStatus::Approved => Card::text(format!(
            "✅ Approved proposal {}: {} is now {}.",
            p.short_id,
            p.agent,
            p.to.words()
        )),
        ProposalStatus::Declined => Card::text(format!(
            "❌ Denied proposal {}: {} stays {}; not proposed again for {}.",
            p.short_id,
            p.agent,
            p.from.words(),
            words::span(quiet)
        )),
        _ => Card::text(format!("Proposal {} is {}.", p.short_id, settled_words(p))),
    }
}

/// The line that replaces the buttons once a proposal is answered.
#[must_use]
pub fn outcome_line(p: &Proposal, quiet: Duration) -> String {
    let when = p.decided_at.map(clock).unwrap_or_default();
    let by = p
        .decided_by
        .as_ref()
        .map(|a| a.label())
        .unwrap_or_else(|| "someone".into());
    let reason = p
        .decision_reason
        .as_deref()
        .map(|r| format!(": {r}"))
        .unwrap_or_default();
    match p.status {
        ProposalStatus::Open => "⏳ Waiting for an owner".into(),
        ProposalStatus::Approved => format!(
            "✅ Approved by {by} {when}: {} is now {}",
            p.agent,
            p.to.words()
        ),
        ProposalStatus::Declined => format!(
            "❌ Denied by {by} {when}{reason}; not proposed again for {}",
            words::span(quiet)
        ),
        ProposalStatus::Superseded => {
            format!("⏭ Out of date {when}: the tier was changed another way")
        }
    }
}

/// The proposal's card: with buttons while open, with its outcome once answered.
#[must_use]
pub fn card(p: &Proposal, quiet: Duration) -> Card {
    let open = p.status == ProposalStatus::Open;
    let (icon, verb) = match p.direction {
        Direction::Promote => ("🎓", "Promote"),
        Direction::Demote => ("⚠️", "Demote"),
    };
    // The agent is named once, in the question; the evidence once, in the figures.
    let title = Line::strong(format!("{verb} "))
        .code(shorten(&p.agent, 40))
        .and(format!(" to {}?", p.to.words()));
    let mut fields = vec![Field::new(
        "Tier",
        Line::text(format!("{} → {}", p.from.words(), p.to.words())),
    )];
    // What the evidence is made of, each figure apart: the agent's own reports are
    // never shown as approvals.
    fields.extend(
        p.measures
            .figures()
            .into_iter()
            .map(|(label, words)| Field::new(label, Line::text(words))),
    );
    fields.push(Field::new("Proposed", Line::text(clock(p.created_at))));
    let mut blocks = vec![
        Block::Heading {
            icon,
            // One title whatever the status: the outcome line says how it ended.
            title: "gatebot: tier proposal".into(),
            tag: Some(Tag::subject(SubjectKind::Proposal, &p.short_id)),
        },
        Block::Line(title),
        Block::Fields(fields),
    ];
    // A promotion's reason restates the figures above; a demotion's says what went
    // wrong, which they do not.
    if p.direction == Direction::Demote {
        blocks.push(Block::Line(Line::text(shorten(&p.reason, 600))));
    }
    let fallback = format!(
        "{}: tier proposal {}",
        match p.status {
            ProposalStatus::Open => "🎓 Tier change proposed",
            ProposalStatus::Approved => "✅ Tier change approved",
            ProposalStatus::Declined => "❌ Tier change declined",
            ProposalStatus::Superseded => "⏭ Tier proposal out of date",
        },
        p.short_id
    );
    let mut card = Card {
        blocks,
        fallback,
        ..Card::default()
    };
    if open {
        card.buttons = vec![vec![
            Button::new("✅ Approve", button_data(true, &p.id)).styled(Style::Primary),
            Button::new("❌ Deny", button_data(false, &p.id)).styled(Style::Danger),
        ]];
        card.hint = Some(Hint {
            reply_words: vec!["approve".into(), "deny [reason]".into()],
            command: Some(format!("/approve {}", p.short_id)),
        });
    } else {
        card.blocks.push(Block::Outcome(outcome_line(p, quiet)));
    }
    card
}

/// An owner's decision on proposal `id` away from a chat. The view is the proposal,
/// with `"kind": "proposal"`.
async fn decide_as_owner(engine: &Engine, id: &str, d: OwnerDecision) -> Result<Decided, Refused> {
    d.refuse_request_choices()?;
    let approve = match d.verb().as_str() {
        "decline" | "declined" => false,
        v => match v.parse::<Verb>() {
            Ok(Verb::Approve) => true,
            Ok(Verb::Deny) => false,
            Ok(Verb::ApproveAlways) => {
                return Err(Refused::Unclear(
                    "a proposal is approved or declined: use approve or deny".into(),
                ))
            }
            Err(e) => return Err(Refused::Unclear(e)),
        },
    };
    let reason = d.reason();
    let who = TrustActor {
        name: d.actor,
        via: d.via,
    };
    let settled = |message| Refused::Settled {
        message,
        shown: None,
    };
    match engine.decide_proposal(id, approve, who, reason).await? {
        ProposalDecided::Done(p) => {
            let mut view = serde_json::to_value(&p).unwrap_or_default();
            view["kind"] = "proposal".into();
            Ok(Decided {
                view,
                said: vec![p.decided_line()],
            })
        }
        ProposalDecided::AlreadySettled(p) => Err(settled(format!(
            "proposal {} is already {}{}",
            p.short_id,
            p.status.as_str(),
            p.decided_by
                .as_ref()
                .map(|a| format!(" by {}", a.label()))
                .unwrap_or_default()
        ))),
        ProposalDecided::Superseded(p) => Err(settled(format!(
            "proposal {} is out of date: {}'s tier changed since it was made (from {}), so \
             nothing changed",
            p.short_id,
            p.agent,
            p.from.as_str()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::Via;
    use crate::chat::conversation::{Action as AnyAction, MAX_DATA};
    use crate::policy::Tier;
    use crate::trust::evidence::Counts;

    #[test]
    fn the_card_names_its_proposal_in_the_one_tag() {
        let mut p = sample();
        p.agent = "id zzzz9999".into();
        p.reason = "tier proposal zzzz9999".into();
        for status in [
            ProposalStatus::Open,
            ProposalStatus::Approved,
            ProposalStatus::Declined,
            ProposalStatus::Superseded,
        ] {
            p.status = status;
            let c = card(&p, Duration::from_secs(3600));
            assert_eq!(Tag::read(&c.plain()).as_deref(), Some("p7m2abcd"));
        }
    }

    pub(crate) fn sample() -> Proposal {
        Proposal {
            id: "01JD3X4Y5Z6A7B8C9D0E1F2G3H".into(),
            short_id: "p7m2abcd".into(),
            agent: "mailer".into(),
            direction: Direction::Promote,
            from: Tier::Supervised,
            to: Tier::SemiAutonomous,
            reason: "mailer has handled 57 requests (56 approved and 1 denied by a human): 96 % \
                     went well, 2 % denied, 5 % escalated. Ready for semi-autonomous mode."
                .into(),
            measures: Counts {
                requests: 60,
                asked: 60,
                approved: 56,
                handled: 57,
                denied: 1,
                positive: 55,
                expired: 3,
                ..Counts::default()
            }
            .measures(),
            status: ProposalStatus::Open,
            created_at: 0,
            decided_by: None,
            decided_at: None,
            decision_reason: None,
        }
    }

    /// Runs under an owner's grant and calls nobody was asked about are figures of
    /// their own, and the agent's reports are never called approvals.
    #[test]
    fn the_card_shows_what_the_evidence_is_made_of() {
        let mut p = sample();
        p.from = Tier::SemiAutonomous;
        p.to = Tier::Autonomous;
        p.measures = Counts {
            requests: 460,
            asked: 205,
            approved: 200,
            denied: 2,
            allowed: 255,
            granted: 55,
            granted_succeeded: 50,
            granted_failed: 1,
            succeeded: 250,
            failed: 1,
            unvouched_reports: 200,
            handled: 253,
            positive: 250,
            ..Counts::default()
        }
        .measures();
        let text = card(&p, Duration::from_secs(3600)).plain();
        let fields: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("Evidence"))
            .take_while(|l| !l.starts_with("Proposed"))
            .collect();
        assert_eq!(
            fields,
            [
                "Evidence: 253 handled, 99 % went well, 1 % denied, 0 % escalated",
                "By a human: 200 approved, 2 denied",
                "Granted: 50 reported done, 1 reported failed by the agent, on calls an \
                 owner's grant let run",
                "Not counted: 200 call(s) let through with nobody asked and no grant, and 200 \
                 outcome(s) the agent reported for them (its own word)",
            ]
        );
    }

    #[test]
    fn buttons_round_trip_within_64_bytes() {
        let id = "01JD3X4Y5Z6A7B8C9D0E1F2G3H";
        for approve in [true, false] {
            let data = button_data(approve, id);
            assert!(data.len() <= MAX_DATA, "{data}");
            assert_eq!(
                AnyAction::decode(&data).unwrap(),
                AnyAction::Proposal(Action {
                    approve,
                    id: id.into()
                })
            );
        }
        for forged in [
            "gb1:Pa:short",
            "gb1:Px:01JD3X4Y5Z6A7B8C9D0E1F2G3H",
            "gb1:Pa:01JD3X4Y5Z6A7B8C9D0E1F2G3H;",
        ] {
            assert!(AnyAction::decode(forged).is_err(), "{forged}");
        }
    }

    #[test]
    fn an_open_proposal_asks_and_an_answered_one_says_who() {
        let p = sample();
        let c = card(&p, Duration::from_secs(30 * 86_400));
        assert_eq!(
            c.plain(),
            "🎓 gatebot: tier proposal · id p7m2abcd\n\
             Promote mailer to semi-autonomous?\n\
             Tier: supervised → semi-autonomous\n\
             Evidence: 57 handled, 96 % went well, 2 % denied, 5 % escalated\n\
             By a human: 56 approved, 1 denied\n\
             Proposed: 1970-01-01 00:00 UTC"
        );
        assert_eq!(c.buttons[0].len(), 2);
        assert!(
            !c.fallback.contains("mailer"),
            "no agent text in the fallback"
        );

        let mut declined = p.clone();
        declined.status = ProposalStatus::Declined;
        declined.decided_by = Some(TrustActor {
            name: "alice".into(),
            via: Via::Cli,
        });
        declined.decided_at = Some(0);
        let c = card(&declined, Duration::from_secs(30 * 86_400));
        assert!(c.buttons.is_empty());
        assert_eq!(
            c.blocks.last(),
            Some(&Block::Outcome(
                "❌ Denied by alice on the command line 1970-01-01 00:00 UTC; not proposed again for 30 days"
                    .into()
            ))
        );
    }
}
