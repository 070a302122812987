//! The approval record and its lifecycle.
//!
//! ```text
//! submit ─┬─ allowed   (policy: runs at once)          ─┐
//!         ├─ blocked   (policy: refused)                 │ terminal
//!         └─ pending ─┬─ approved ─▶ executing ─▶ succeeded | failed
//!                     ├─ rejected                        │
//!                     ├─ expired   (deadline passed)     │
//!                     └─ cancelled (by the agent)       ─┘
//! ```
//! `allowed` may also move to `executing` / `succeeded` / `failed` when the agent reports.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::policy::Risk;

pub mod votes;

/// What an agent asks to do, as it sent it: the fields a request keeps from its
/// submission. `wire::SubmitBody` brings them in (`From`), the engine's `Submission` and
/// the store's new row carry them whole, and [`Approval`] holds them once stored.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Asked {
    pub agent: String,
    pub tool: String,
    pub args: serde_json::Value,
    pub summary: Option<String>,
    pub confidence: Option<f64>,
    pub environment: Option<String>,
    pub idempotency_key: Option<String>,
    /// The inbox task the agent is running, if any.
    pub task_id: Option<String>,
    /// The agent's client takes an edited call back (an owner's edit-then-approve):
    /// Claude Code's hooks and the MCP permission tool say so.
    pub accepts_edits: bool,
    /// What the call costs, as the agent declares it (in the currency of `[budgets]`).
    pub cost: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pending,
    Approved,
    Rejected,
    Expired,
    Cancelled,
    Executing,
    Succeeded,
    Failed,
    Allowed,
    Blocked,
}

impl Status {
    /// As people say it: one verb per outcome ("denied", never "rejected"; the JSON
    /// keeps its names).
    #[must_use]
    pub fn words(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Approved => "approved",
            Status::Rejected => "denied",
            Status::Expired => "expired",
            Status::Cancelled => "cancelled",
            Status::Executing => "approved, running",
            Status::Succeeded => "approved, succeeded",
            Status::Failed => "approved, failed",
            Status::Allowed => "allowed",
            Status::Blocked => "blocked",
        }
    }

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Approved => "approved",
            Status::Rejected => "rejected",
            Status::Expired => "expired",
            Status::Cancelled => "cancelled",
            Status::Executing => "executing",
            Status::Succeeded => "succeeded",
            Status::Failed => "failed",
            Status::Allowed => "allowed",
            Status::Blocked => "blocked",
        }
    }

    /// The agent may run the action.
    #[must_use]
    pub fn is_go(self) -> bool {
        matches!(
            self,
            Status::Approved
                | Status::Allowed
                | Status::Executing
                | Status::Succeeded
                | Status::Failed
        )
    }

    /// No longer waiting for a human.
    #[must_use]
    pub fn is_settled(self) -> bool {
        self != Status::Pending
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Status {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        serde_json::from_value(serde_json::Value::String(s.to_string()))
            .map_err(|_| format!("unknown status `{s}`"))
    }
}

/// A chat platform's key (`telegram`, `slack`, `memory`): how chat bookkeeping, the
/// audit trail, `decided_via` and the metrics name a platform. Adding a platform adds
/// no variant anywhere: a platform is its key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PlatformId(Cow<'static, str>);

impl PlatformId {
    #[must_use]
    pub const fn new(key: &'static str) -> PlatformId {
        PlatformId(Cow::Borrowed(key))
    }

    /// A platform named at run time (read back from the database).
    #[must_use]
    pub fn owned(key: &str) -> PlatformId {
        PlatformId(Cow::Owned(key.to_string()))
    }

    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// How the platform is named to people: its key, capitalised ("Telegram").
    #[must_use]
    pub fn label(&self) -> String {
        let mut c = self.0.chars();
        match c.next() {
            Some(first) => first.to_uppercase().chain(c).collect(),
            None => String::new(),
        }
    }
}

impl fmt::Display for PlatformId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a decision came from: a chat platform, or one of gatebot's own interfaces.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Via {
    Chat(PlatformId),
    Cli,
    Api,
    /// The web dashboard.
    Dashboard,
    System,
}

/// Who did something, and where, as people read it: "alice on the command line",
/// "Alice (42) on Telegram", "mailer through the API"; what gatebot did itself, by its
/// name alone. One set of parentheses at most: a chat's own "(user id)".
#[must_use]
pub fn who(by: Option<&str>, via: Option<&Via>) -> String {
    let by = by.unwrap_or("someone");
    match via {
        Some(Via::Chat(p)) => format!("{by} on {}", p.label()),
        Some(Via::Cli) => format!("{by} on the command line"),
        Some(Via::Api) => format!("{by} through the API"),
        Some(Via::Dashboard) => format!("{by} on the dashboard"),
        Some(Via::System) | None => by.to_string(),
    }
}

impl Via {
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            Via::Chat(p) => p.as_str(),
            Via::Cli => "cli",
            Via::Api => "api",
            Via::Dashboard => "dashboard",
            Via::System => "system",
        }
    }

    /// How the source is named to people ("Approved by alice on Telegram").
    #[must_use]
    pub fn label(&self) -> String {
        match self {
            Via::Chat(p) => p.label(),
            Via::Cli => "CLI".into(),
            Via::Api => "API".into(),
            Via::Dashboard => "the dashboard".into(),
            Via::System => "gatebot".into(),
        }
    }
}

impl fmt::Display for Via {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Via {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "cli" => Ok(Via::Cli),
            "api" => Ok(Via::Api),
            "dashboard" => Ok(Via::Dashboard),
            "system" => Ok(Via::System),
            key if !key.is_empty()
                && key
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') =>
            {
                Ok(Via::Chat(PlatformId(Cow::Owned(key.to_string()))))
            }
            other => Err(format!("unknown decision source `{other}`")),
        }
    }
}

impl Serialize for Via {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Via {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// What an owner decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verb {
    Approve,
    ApproveAlways,
    Deny,
}

impl FromStr for Verb {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "approve" | "allow" | "allow_once" | "yes" => Ok(Verb::Approve),
            "approve_always" | "allow_always" | "always" => Ok(Verb::ApproveAlways),
            "deny" | "reject" | "no" => Ok(Verb::Deny),
            other => Err(format!(
                "unknown decision `{other}`: use approve, approve-always or deny"
            )),
        }
    }
}

/// A decision with who made it and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub verb: Verb,
    /// Who decided: a display name or user id.
    pub actor: String,
    pub via: Via,
    pub reason: Option<String>,
    /// Whether the surface confirmed the decider's second factor for it (a fresh code,
    /// or their step-up window there): approvals that need one are refused without.
    pub factor: bool,
}

/// One request and everything that happened to it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Approval {
    pub id: String,
    pub short_id: String,
    pub agent: String,
    pub tool: String,
    pub args: serde_json::Value,
    pub summary: Option<String>,
    pub confidence: Option<f64>,
    pub environment: Option<String>,
    pub idempotency_key: Option<String>,
    pub status: Status,
    pub risk: Risk,
    pub policy_reason: String,
    pub checkpoint: bool,
    pub always_allow_offered: bool,
    pub decided_by: Option<String>,
    pub decided_via: Option<Via>,
    pub decision_reason: Option<String>,
    pub always_allowed: bool,
    pub result_detail: Option<String>,
    /// Unix milliseconds.
    pub ttl_ms: Option<i64>,
    pub created_at: i64,
    pub decided_at: Option<i64>,
    pub expires_at: Option<i64>,
    pub finished_at: Option<i64>,
    /// The inbox task the agent was running when it asked, if any.
    pub task_id: Option<String>,
    /// Its client takes an edited call back ([`Asked::accepts_edits`]).
    pub accepts_edits: bool,
    /// The call's arguments as an owner edited and approved them, if so.
    pub edited_args: Option<serde_json::Value>,
    /// What the approval rule that matched it asks (who, how many), if one did.
    pub route: Option<crate::approval::votes::Route>,
    /// What the call costs, as its agent declared it ([`Asked::cost`]).
    pub cost: Option<f64>,
}

impl Approval {
    /// Who decided and where: "Alice (42) on Telegram" ([`who`]).
    #[must_use]
    pub fn decider(&self) -> String {
        who(self.decided_by.as_deref(), self.decided_via.as_ref())
    }

    /// The sentence a model reads about this request; it cannot be mistaken for
    /// another outcome, and says plainly when the action did not run.
    #[must_use]
    pub fn message(&self) -> String {
        let tool = &self.tool;
        match self.status {
            Status::Pending => format!(
                "[Action pending] {tool}: waiting for a human decision (id {}). Do not run it yet.",
                self.short_id
            ),
            Status::Allowed => format!("[Action allowed] {tool}: {}", self.policy_reason),
            Status::Approved | Status::Executing | Status::Succeeded | Status::Failed => {
                let by = self.decided_by.as_deref().unwrap_or("an approver");
                let mut m = format!("[Action approved] {tool}: approved by {by}");
                if let Some(r) = &self.decision_reason {
                    m.push_str(&format!(": {r}"));
                }
                m
            }
            Status::Rejected => format!(
                "[Action rejected] {tool}: {}. The action was not run.",
                self.decision_reason.as_deref().unwrap_or("No reason given")
            ),
            Status::Expired => format!(
                "[Action expired] {tool}: {}. Nobody decided, so the action was not run; it was not denied.",
                self.decision_reason.as_deref().unwrap_or("no response in time")
            ),
            Status::Cancelled => match &self.decision_reason {
                Some(why) => format!(
                    "[Action cancelled] {tool}: withdrawn, because {why}. The action was not run."
                ),
                None => format!(
                    "[Action cancelled] {tool}: cancelled by the agent. The action was not run."
                ),
            },
            Status::Blocked => format!(
                "[Action blocked] {tool}: {}. The action was not run.",
                self.policy_reason
            ),
        }
    }
}

/// The alphabet of short ids: no 0/o, 1/l/i, so they survive being read aloud or typed.
pub const SHORT_ID_ALPHABET: &[u8] = b"23456789abcdefghjkmnpqrstuvwxyz";
pub const SHORT_ID_LEN: usize = 8;

/// A fresh random short id.
#[must_use]
pub fn new_short_id() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..SHORT_ID_LEN)
        .map(|_| SHORT_ID_ALPHABET[rng.random_range(0..SHORT_ID_ALPHABET.len())] as char)
        .collect()
}

/// Which requests one page of a listing holds (`gatebot list`, `GET /v1/requests`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilter {
    pub status: Option<Status>,
    pub agent: Option<String>,
    /// The last id of the previous page.
    pub after: Option<String>,
    pub limit: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_ids_use_only_the_unambiguous_alphabet() {
        for _ in 0..200 {
            let id = new_short_id();
            assert_eq!(id.len(), SHORT_ID_LEN);
            assert!(id.bytes().all(|b| SHORT_ID_ALPHABET.contains(&b)), "{id}");
        }
    }

    #[test]
    fn verbs_accept_the_chat_spellings() {
        assert_eq!("allow-once".parse::<Verb>().unwrap(), Verb::Approve);
        assert_eq!("allow-always".parse::<Verb>().unwrap(), Verb::ApproveAlways);
        assert_eq!(
            "approve-always".parse::<Verb>().unwrap(),
            Verb::ApproveAlways
        );
        assert_eq!("DENY".parse::<Verb>().unwrap(), Verb::Deny);
        assert!("maybe".parse::<Verb>().is_err());
    }

    #[test]
    fn decision_sources_round_trip_and_name_platforms_by_key() {
        for v in [
            Via::Chat(PlatformId::new("telegram")),
            Via::Chat(PlatformId::new("memory")),
            Via::Cli,
            Via::Api,
            Via::System,
        ] {
            assert_eq!(v.as_str().parse::<Via>().unwrap(), v);
        }
        assert_eq!(Via::Chat(PlatformId::new("slack")).label(), "Slack");
        assert_eq!(Via::Cli.label(), "CLI");
        assert!("Not A Platform".parse::<Via>().is_err());
    }

    #[test]
    fn statuses_round_trip_through_strings() {
        for s in [
            Status::Pending,
            Status::Approved,
            Status::Rejected,
            Status::Expired,
            Status::Cancelled,
            Status::Executing,
            Status::Succeeded,
            Status::Failed,
            Status::Allowed,
            Status::Blocked,
        ] {
            assert_eq!(s.as_str().parse::<Status>().unwrap(), s);
        }
    }
}
