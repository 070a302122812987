//! Agent trust that grows from evidence: pure and shared by the engine, the store, the
//! API and chat.
//!
//! 1. **Evidence** ([`evidence`]): how an agent has done, counted from its requests,
//!    and the seed's measures mapped onto those counts.
//! 2. **Assessment** ([`assess`]): whether the evidence makes the agent eligible for the
//!    next tier, or whether a run of denials calls for the one below. The result is a
//!    [`Proposal`] for an owner, never a change by itself.
//! 3. **Tier overrides** ([`TierOverride`]): an owner's choice of tier, stored over
//!    `bot.toml`'s baseline and used everywhere the tier matters.
//! 4. **Pause** ([`Pause`]): every new request of a paused agent is blocked at once, and
//!    the engine's gate (`engine::gate`) refuses everything else it does.
//! 5. **Grants** ([`grants`]): what an owner's "Always allow" covers (a whole tool, one
//!    exact command, or a command prefix), for how long, and whether a call falls
//!    under one.
//!
//! docs/trust.md describes all of it for owners.

pub mod assess;
pub mod evidence;
pub mod grants;
pub mod view;

use serde::{Deserialize, Serialize};

use crate::approval::Via;
use crate::policy::{Action, RiskScore, Tier, Verdict};
use crate::time::clock;

pub use grants::{Offer, Scope};

/// Who did something and how, for the records trust keeps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actor {
    /// A display name or user id ("Alice (42)", "alice").
    pub name: String,
    pub via: Via,
}

impl Actor {
    /// "alice on the command line", "Alice (42) on Telegram".
    #[must_use]
    pub fn label(&self) -> String {
        crate::approval::who(Some(&self.name), Some(&self.via))
    }
}

/// An owner's tier for an agent, over `bot.toml`'s baseline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TierOverride {
    pub agent: String,
    pub tier: Tier,
    pub by: Actor,
    pub reason: Option<String>,
    /// Unix milliseconds.
    pub at: i64,
    /// The proposal whose approval set it, if one did.
    pub proposal: Option<String>,
}

/// A paused agent: every new request is blocked, and nothing else it does is accepted
/// (`engine::gate`), until it is resumed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pause {
    /// A ULID: what chat buttons about this pause name.
    pub id: String,
    pub agent: String,
    pub by: Actor,
    pub reason: Option<String>,
    pub at: i64,
}

impl Pause {
    /// "paused by alice on the command line at 2026-11-23 12:00 UTC: runaway loop".
    #[must_use]
    pub fn describe(&self) -> String {
        let mut s = format!("paused by {} at {}", self.by.label(), clock(self.at));
        if let Some(r) = &self.reason {
            s.push_str(": ");
            s.push_str(r);
        }
        s
    }
}

/// The verdict for a request of a paused agent: blocked, whatever the policy said, with
/// the pause as the reason (the risk is kept, so the record still says what was asked).
#[must_use]
pub fn paused_verdict(mut verdict: Verdict, pause: &Pause) -> Verdict {
    verdict.action = Action::Block;
    verdict.reason = format!("the agent is {}", pause.describe());
    verdict.checkpoint = false;
    verdict.always_allow_offered = false;
    // A paused agent's call is no draft: it is not to be sent on.
    verdict.draft = false;
    verdict
}

/// An owner's grant: the agent may run the tool within the scope without asking.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// A ULID.
    pub id: String,
    /// For typing (`gatebot grants revoke k7m2`).
    pub short_id: String,
    pub agent: String,
    pub tool: String,
    /// `scope` (`tool`, `exact`, `prefix`) and, for the last two, `pattern`.
    #[serde(flatten)]
    pub scope: Scope,
    pub by: Actor,
    /// Why it was granted ("Always allow on request k7m2abcd", or the owner's words).
    pub reason: Option<String>,
    /// The request whose decision made it, if one did.
    pub approval: Option<String>,
    pub created_at: i64,
    /// When it stops covering calls (`None`: until revoked).
    pub expires_at: Option<i64>,
    /// Revoked: when, and by whom.
    pub revoked: Option<(i64, Actor)>,
    /// The riskiest call it covers: the risk of the request the owner approved.
    pub max_risk: RiskScore,
    /// How many more calls it lets through (`None`: any number). A grant an owner's
    /// edit made for a client that cannot take an edited call back has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uses_left: Option<u32>,
}

impl Grant {
    /// In force at `now`: neither revoked, expired nor used up.
    #[must_use]
    pub fn active(&self, now: i64) -> bool {
        self.revoked.is_none()
            && self.expires_at.is_none_or(|at| at > now)
            && self.uses_left != Some(0)
    }

    /// How long it lasts, seen at `now`: "until 2026-11-23 13:00 UTC", "until
    /// revoked", "revoked by … at …", "expired …", "used", "once, until …".
    #[must_use]
    pub fn until_words(&self, now: i64) -> String {
        let until = match (&self.revoked, self.expires_at) {
            (Some((at, by)), _) => return format!("revoked by {} {}", by.label(), clock(*at)),
            (None, Some(at)) if at <= now => return format!("expired {}", clock(at)),
            (None, Some(at)) => format!("until {}", clock(at)),
            (None, None) => "until revoked".into(),
        };
        match self.uses_left {
            None => until,
            Some(0) => "used".into(),
            Some(1) => format!("once, {until}"),
            Some(n) => format!("{n} more times, {until}"),
        }
    }

    /// "granted g7m2abcd: mailer may run send_email without asking: the whole tool,
    /// until revoked".
    #[must_use]
    pub fn granted_line(&self, now: i64) -> String {
        format!(
            "granted {}: {} may run {} without asking: {}, {}",
            self.short_id,
            self.agent,
            self.tool,
            self.scope.words(),
            self.until_words(now)
        )
    }
}

/// A grant as an owner asks for it, on approving a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantAsk {
    pub scope: Scope,
    /// Unix milliseconds; `None`: until revoked.
    pub expires_at: Option<i64>,
    /// How many calls it lets through; `None`: any number.
    pub uses: Option<u32>,
    /// The riskiest call it covers; `None`: the request's risk (see the store).
    pub max_risk: Option<RiskScore>,
}

impl GrantAsk {
    /// A grant of `scope` until `expires_at`, for any number of calls up to the
    /// request's risk: what "Always allow" asks for.
    #[must_use]
    pub fn always(scope: Scope, expires_at: Option<i64>) -> GrantAsk {
        GrantAsk {
            scope,
            expires_at,
            uses: None,
            max_risk: None,
        }
    }
}

/// What a proposal proposes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Promote,
    Demote,
}

impl Direction {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Promote => "promote",
            Direction::Demote => "demote",
        }
    }

    pub fn parse(s: &str) -> Result<Direction, String> {
        match s {
            "promote" => Ok(Direction::Promote),
            "demote" => Ok(Direction::Demote),
            other => Err(format!("proposal direction {other}")),
        }
    }
}

/// Where a proposal stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProposalStatus {
    /// Waiting for an owner.
    Open,
    /// An owner approved it: the tier changed.
    Approved,
    /// An owner declined it: not proposed again for a while.
    Declined,
    /// The agent's tier changed some other way (or it left the config) first.
    Superseded,
}

impl ProposalStatus {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ProposalStatus::Open => "open",
            ProposalStatus::Approved => "approved",
            ProposalStatus::Declined => "declined",
            ProposalStatus::Superseded => "superseded",
        }
    }

    pub fn parse(s: &str) -> Result<ProposalStatus, String> {
        match s {
            "open" => Ok(ProposalStatus::Open),
            "approved" => Ok(ProposalStatus::Approved),
            "declined" => Ok(ProposalStatus::Declined),
            "superseded" => Ok(ProposalStatus::Superseded),
            other => Err(format!("proposal status {other}")),
        }
    }
}

/// A proposal to change an agent's tier, for an owner to approve or decline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    /// A ULID (also its subject id: chats show it with a card).
    pub id: String,
    pub short_id: String,
    pub agent: String,
    pub direction: Direction,
    pub from: Tier,
    pub to: Tier,
    /// The assessment's words, with its figures.
    pub reason: String,
    pub measures: evidence::Measures,
    pub status: ProposalStatus,
    pub created_at: i64,
    /// Who answered it, when, and why.
    pub decided_by: Option<Actor>,
    pub decided_at: Option<i64>,
    pub decision_reason: Option<String>,
}

impl Proposal {
    /// "Promote mailer to semi_autonomous?"
    #[must_use]
    pub fn question(&self) -> String {
        let verb = match self.direction {
            Direction::Promote => "Promote",
            Direction::Demote => "Demote",
        };
        format!("{verb} {} to {}?", self.agent, self.to.words())
    }

    /// What an owner's decision did: "approved proposal p7m2abcd: mailer is now
    /// supervised", "denied proposal …: mailer stays …".
    #[must_use]
    pub fn decided_line(&self) -> String {
        match self.status {
            ProposalStatus::Approved => format!(
                "approved proposal {}: {} is now {}",
                self.short_id,
                self.agent,
                self.to.words()
            ),
            _ => format!(
                "denied proposal {}: {} stays {}",
                self.short_id,
                self.agent,
                self.from.words()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{Risk, RiskScore, ToolClass};

    #[test]
    fn a_pause_blocks_and_says_who_and_why() {
        let verdict = Verdict {
            action: Action::Allow,
            risk: Risk {
                score: RiskScore::Low,
                tool_class: ToolClass::ReadOnly,
                factors: vec![],
            },
            reason: "runs".into(),
            checkpoint: true,
            always_allow_offered: true,
            draft: false,
        };
        let pause = Pause {
            id: "01J".into(),
            agent: "mailer".into(),
            by: Actor {
                name: "alice".into(),
                via: Via::Cli,
            },
            reason: Some("runaway loop".into()),
            at: 0,
        };
        let v = paused_verdict(verdict, &pause);
        assert_eq!(v.action, Action::Block);
        assert_eq!(
            v.reason,
            "the agent is paused by alice on the command line at 1970-01-01 00:00 UTC: runaway loop"
        );
        assert!(!v.checkpoint && !v.always_allow_offered);
        assert_eq!(v.risk.score, RiskScore::Low);
    }

    #[test]
    fn a_grant_is_active_until_revoked_or_expired() {
        let mut g = Grant {
            id: "01J".into(),
            short_id: "k7m2abcd".into(),
            agent: "m".into(),
            tool: "t".into(),
            scope: Scope::Tool,
            by: Actor {
                name: "a".into(),
                via: Via::Cli,
            },
            reason: None,
            approval: None,
            created_at: 0,
            expires_at: Some(100),
            revoked: None,
            max_risk: RiskScore::High,
            uses_left: None,
        };
        assert!(g.active(99));
        assert!(!g.active(100));
        g.expires_at = None;
        assert!(g.active(i64::MAX));
        g.revoked = Some((5, g.by.clone()));
        assert!(!g.active(6));
    }
}
