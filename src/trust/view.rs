//! How the API shows an agent's trust, and what an assessment did: shared by the
//! daemon (which builds them) and the command line (which prints them).

use serde::{Deserialize, Serialize};

use super::assess::{Assessment, Demotion};
use super::evidence::{Counts, Measures};
use super::{Grant, Pause, Proposal, TierOverride};
use crate::policy::Tier;

/// Where an agent's tier in force comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TierSource {
    /// `bot.toml` (or `[policy] unknown_agents`).
    Config,
    /// An owner's tier stored in the database.
    Override,
}

impl TierSource {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            TierSource::Config => "config",
            TierSource::Override => "override",
        }
    }
}

/// An agent's counts over all time and over the rolling window, and the measures the
/// assessment uses (all time).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    pub all_time: Counts,
    pub recent: Counts,
    /// The rolling window, like `30d`.
    pub window: String,
    pub measures: Measures,
}

/// Everything about one agent's trust: `gatebot agent NAME`, `GET /v1/agents/{name}/trust`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentView {
    pub agent: String,
    /// It has an `[agents.NAME]` table (else it is a stranger under `unknown_agents`,
    /// or gone from the config while its records remain).
    pub configured: bool,
    /// The tier in force.
    pub tier: Tier,
    /// The tier `bot.toml` gives it.
    pub baseline: Tier,
    pub source: TierSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier_override: Option<TierOverride>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause: Option<Pause>,
    /// Its requests waiting for a human now.
    pub pending: usize,
    /// Grants in force.
    pub grants: Vec<Grant>,
    pub evidence: Evidence,
    /// What the assessment says now (nothing is proposed by reading this).
    pub assessment: Assessment,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demotion: Option<Demotion>,
    /// Its open proposal, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<Proposal>,
    /// Its spend against each budget that applies to it, in words ("3.20 USD of 5.00
    /// USD today"); empty without budgets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spend: Vec<String>,
}

impl AgentView {
    /// Its tier in force and where it comes from, in words: "semi-autonomous (as
    /// bot.toml sets it)", "supervised (set by alice on the command line 2026-11-25 09:00 UTC: too many
    /// denials; bot.toml says semi-autonomous)".
    #[must_use]
    pub fn tier_said(&self) -> String {
        match (&self.source, &self.tier_override) {
            (TierSource::Override, Some(o)) => format!(
                "{} (set by {} {}{}; bot.toml says {})",
                self.tier.words(),
                o.by.label(),
                crate::time::clock(o.at),
                o.reason
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default(),
                self.baseline.words()
            ),
            _ => format!("{} (as bot.toml sets it)", self.tier.words()),
        }
    }
}

/// What an assessment run did for one agent: `gatebot agent NAME assess`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssessOutcome {
    pub agent: String,
    pub tier: Tier,
    pub assessment: Assessment,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub demotion: Option<Demotion>,
    /// The proposal made now, or the one already open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proposal: Option<Proposal>,
    /// Whether this run made the proposal.
    pub created: bool,
    /// One sentence: what happened and why.
    pub note: String,
}

/// `POST /v1/agents/{name}/tier`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierBody {
    /// The tier to set, or `null` for `bot.toml`'s. Required, so a body that forgets
    /// it does not reset anything by accident.
    #[serde(deserialize_with = "Option::deserialize")]
    pub tier: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Refused when present: who asks is the caller's own account (the control
    /// socket's peer credentials).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<serde_json::Value>,
}

/// `POST /v1/agents/{name}/pause`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PauseBody {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Also deny every pending request of the agent.
    #[serde(default)]
    pub deny_pending: bool,
    /// Refused when present, as for [`TierBody`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<serde_json::Value>,
}

/// `POST /v1/evidence/recount` `{"check"?}`: count every agent's evidence from its
/// requests again; with `check`, only say what differs.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecountBody {
    #[serde(default)]
    pub check: bool,
    /// Refused when present, as for [`TierBody`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<serde_json::Value>,
}

/// The body of `resume` and `revoke`: `{}` (an `actor` is refused, as for [`TierBody`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActorBody {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<serde_json::Value>,
}
