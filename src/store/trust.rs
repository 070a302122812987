//! Trust: tier overrides, pauses, grants, prompt offers, proposals and the evidence
//! counted from requests (see [`crate::trust`] and `migrations/sqlite/0008_trust.sql`).
//!
//! As everywhere in the store, each change is one transaction with its audit rows:
//! a tier change closes the agent's open proposals in it; a pause with
//! `deny_pending` denies every pending request of the agent in it; a grant made by a
//! decision is written in the decision's transaction (`approvals.rs`).

use serde_json::{json, Value};

use super::approval_row::get_conn;
use super::audit::audit_tx;
use super::sql::{params, Conn, Row, Tx};
use super::subjects::{subject_changed, subject_created, unique_short_id, unique_short_id_beside};
use super::{Result, Store, StoreError};
use crate::approval::{Approval, Status, Via};
use crate::policy::{RiskScore, Tier};
use crate::subject::SubjectKind;
use crate::trust::evidence::Measures;
use crate::trust::grants::OfferRow;
use crate::trust::{
    Actor, Direction, Grant, GrantAsk, Pause, Proposal, ProposalStatus, Scope, TierOverride,
};

/// What the submit path needs to know about an agent, read under one lock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubmitFacts {
    /// The owner's tier, over the config's.
    pub tier: Option<Tier>,
    pub pause: Option<Pause>,
    /// Grants in force for this agent and tool.
    pub grants: Vec<Grant>,
    /// An earlier call of the tool by the agent was let through (allowed, approved,
    /// executing, succeeded or failed); the policy's `first_time_usage` is its negation.
    pub run_before: bool,
}

/// What a prompt offers to grant, as the engine hands it to the store with the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewOffer {
    /// A shell-like tool's command, and the prefix offered for it.
    pub command: Option<String>,
    pub prefix: Option<String>,
    /// Approvals in a row (no denial) of the same tool, prefix or command that make
    /// the prompt suggest the grant; 0 turns suggestions off.
    pub suggest_after: u64,
}

/// A new proposal, as the engine's assessment makes it.
#[derive(Debug, Clone, PartialEq)]
pub struct NewProposal {
    pub agent: String,
    pub direction: Direction,
    pub from: Tier,
    pub to: Tier,
    pub reason: String,
    pub measures: Measures,
}

/// The result of a tier change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TierChange {
    /// The override before, and after (`None`: the config's tier).
    pub before: Option<TierOverride>,
    pub after: Option<TierOverride>,
    /// Open proposals of the agent this change made moot (closed as superseded).
    pub superseded: Vec<String>,
}

/// The result of [`Store::pause`].
#[derive(Debug, Clone, PartialEq)]
pub struct Paused {
    pub pause: Pause,
    /// False when the agent was already paused (the earlier pause stands).
    pub new: bool,
    /// Pending requests this call denied.
    pub denied: Vec<Approval>,
}

/// The result of answering a proposal.
#[derive(Debug, Clone, PartialEq)]
pub enum ProposalOutcome {
    /// Answered now; with the tier change an approval made.
    Done(Proposal, Option<Box<TierChange>>),
    /// It was answered (or superseded) before.
    AlreadySettled(Proposal),
    /// The agent's tier is no longer the one it proposes to move from: closed as
    /// superseded instead.
    Superseded(Proposal),
    NotFound,
}

/// The result of revoking a grant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Revoked {
    Done(Grant),
    /// It was revoked before (by whom is in it).
    Already(Grant),
    NotFound,
    Ambiguous(Vec<String>),
}

fn tier_of(s: &str) -> Result<Tier> {
    serde_json::from_value(Value::String(s.to_string()))
        .map_err(|_| StoreError::Corrupt(format!("tier {s}")))
}

fn via_of(s: &str) -> Result<Via> {
    s.parse()
        .map_err(|_| StoreError::Corrupt(format!("decision source {s}")))
}

fn corrupt(e: String) -> StoreError {
    StoreError::Corrupt(e)
}

const GRANT_COLUMNS: &str = "id, short_id, agent, tool, scope, pattern, granted_by, granted_via, \
    reason, approval_id, created_at, expires_at, revoked_at, revoked_by, revoked_via, max_risk, uses_left";

fn row_to_grant(r: &Row<'_>) -> Result<Grant> {
    let scope: String = r.get(4)?;
    let pattern: Option<String> = r.get(5)?;
    let via: String = r.get(7)?;
    let revoked_at: Option<i64> = r.get(12)?;
    let revoked_by: Option<String> = r.get(13)?;
    let revoked_via: Option<String> = r.get(14)?;
    let max_risk: String = r.get(15)?;
    let uses_left: Option<i64> = r.get(16)?;
    let (id, short_id, agent, tool, by, reason, approval, created_at, expires_at) = (
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(6)?,
        r.get(8)?,
        r.get(9)?,
        r.get(10)?,
        r.get(11)?,
    );
    let revoked = match (revoked_at, revoked_by, revoked_via) {
        (Some(at), Some(name), Some(via)) => Some((
            at,
            Actor {
                name,
                via: via_of(&via)?,
            },
        )),
        _ => None,
    };
    Ok(Grant {
        id,
        short_id,
        agent,
        tool,
        scope: Scope::from_parts(&scope, pattern).map_err(corrupt)?,
        by: Actor {
            name: by,
            via: via_of(&via)?,
        },
        reason,
        approval,
        created_at,
        expires_at,
        revoked,
        max_risk: serde_json::from_value(Value::String(max_risk.clone()))
            .map_err(|_| corrupt(format!("grant risk {max_risk}")))?,
        uses_left: uses_left
            .map(|n| u32::try_from(n).map_err(|_| corrupt(format!("grant uses {n}"))))
            .transpose()?,
    })
}

const PROPOSAL_COLUMNS: &str = "id, short_id, agent, direction, from_tier, to_tier, reason, \
    measures, status, created_at, decided_by, decided_via, decided_at, decision_reason";

fn row_to_proposal(r: &Row<'_>) -> Result<Proposal> {
    let direction: String = r.get(3)?;
    let from: String = r.get(4)?;
    let to: String = r.get(5)?;
    let measures: String = r.get(7)?;
    let status: String = r.get(8)?;
    let decided_by: Option<String> = r.get(10)?;
    let decided_via: Option<String> = r.get(11)?;
    let (id, short_id, agent, reason, created_at, decided_at, decision_reason) = (
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(6)?,
        r.get(9)?,
        r.get(12)?,
        r.get(13)?,
    );
    Ok(Proposal {
        id,
        short_id,
        agent,
        direction: Direction::parse(&direction).map_err(corrupt)?,
        from: tier_of(&from)?,
        to: tier_of(&to)?,
        reason,
        measures: serde_json::from_str(&measures)
            .map_err(|_| corrupt("proposal measures".into()))?,
        status: ProposalStatus::parse(&status).map_err(corrupt)?,
        created_at,
        decided_by: match (decided_by, decided_via) {
            (Some(name), Some(via)) => Some(Actor {
                name,
                via: via_of(&via)?,
            }),
            _ => None,
        },
        decided_at,
        decision_reason,
    })
}

fn get_proposal(conn: &Conn<'_>, id: &str) -> Result<Option<Proposal>> {
    conn.query_opt(
        &format!("SELECT {PROPOSAL_COLUMNS} FROM proposals WHERE id = ?1"),
        params![id],
        row_to_proposal,
    )
}

/// Reads an owner's tier from a `tier_overrides` row (the columns of
/// [`OVERRIDE_COLUMNS`]).
fn override_row(r: &Row<'_>) -> Result<TierOverride> {
    let (tier, via): (String, String) = (r.get(1)?, r.get(3)?);
    Ok(TierOverride {
        agent: r.get(0)?,
        tier: tier_of(&tier)?,
        by: Actor {
            name: r.get(2)?,
            via: via_of(&via)?,
        },
        reason: r.get(4)?,
        at: r.get(5)?,
        proposal: r.get(6)?,
    })
}

const OVERRIDE_COLUMNS: &str = "agent, tier, set_by, set_via, reason, set_at, proposal";

fn get_override(conn: &Conn<'_>, agent: &str) -> Result<Option<TierOverride>> {
    conn.query_opt(
        &format!("SELECT {OVERRIDE_COLUMNS} FROM tier_overrides WHERE agent = ?1"),
        params![agent],
        override_row,
    )
}

/// Reads a pause from a `pauses` row (the columns of [`PAUSE_COLUMNS`]).
fn pause_row(r: &Row<'_>) -> Result<Pause> {
    let via: String = r.get(3)?;
    Ok(Pause {
        id: r.get(1)?,
        agent: r.get(0)?,
        by: Actor {
            name: r.get(2)?,
            via: via_of(&via)?,
        },
        reason: r.get(4)?,
        at: r.get(5)?,
    })
}

const PAUSE_COLUMNS: &str = "agent, id, paused_by, paused_via, reason, paused_at";

fn get_pause(conn: &Conn<'_>, agent: &str) -> Result<Option<Pause>> {
    conn.query_opt(
        &format!("SELECT {PAUSE_COLUMNS} FROM pauses WHERE agent = ?1"),
        params![agent],
        pause_row,
    )
}

/// The most risk a grant made on a request of risk `score` covers: the request's own
/// (a critical request makes none; should one, it covers up to high).
fn grant_risk(score: RiskScore) -> RiskScore {
    score.min(RiskScore::High)
}

/// Records a grant an owner's decision on request `approval` made, with its audit row
/// (in the decision's transaction).
pub(super) fn grant_tx(
    tx: &Tx<'_>,
    approval: &Approval,
    ask: &GrantAsk,
    actor: &str,
    via: &Via,
    now: i64,
) -> Result<Grant> {
    let id = super::new_id();
    let short_id = unique_short_id_beside(tx, "grants")?;
    let reason = match ask.scope {
        Scope::Call(_) => format!("the call as edited on request {}", approval.short_id),
        _ => format!("Always allow on request {}", approval.short_id),
    };
    let max_risk = grant_risk(ask.max_risk.unwrap_or(approval.risk.score));
    tx.execute(
        "INSERT INTO grants (id, short_id, agent, tool, scope, pattern, granted_by, granted_via, \
         reason, approval_id, created_at, expires_at, max_risk, uses_left) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
        params![
            id,
            short_id,
            approval.agent,
            approval.tool,
            ask.scope.kind(),
            ask.scope.pattern(),
            actor,
            via.as_str(),
            reason,
            approval.id,
            now,
            ask.expires_at,
            max_risk.as_str(),
            ask.uses,
        ],
    )?;
    audit_tx(
        tx,
        now,
        Some(&approval.id),
        "grant_added",
        Some(actor),
        Some(via),
        &json!({
            "grant": id,
            "short_id": short_id,
            "agent": approval.agent,
            "tool": approval.tool,
            "scope": ask.scope.kind(),
            "pattern": ask.scope.pattern(),
            "expires_at": ask.expires_at,
            "max_risk": max_risk.as_str(),
            "uses": ask.uses,
        }),
    )?;
    get_grant(tx, &id)?.ok_or_else(|| StoreError::Corrupt(format!("grant {id}")))
}

/// Takes one use of grant `id` for a call it lets through, in the call's transaction:
/// `false` when it has none left (a grant without a count has any number).
pub(super) fn use_grant(tx: &Tx<'_>, id: &str) -> Result<bool> {
    let left: Option<Option<i64>> = tx.query_opt(
        "SELECT uses_left FROM grants WHERE id = ?1",
        params![id],
        |r| r.get(0),
    )?;
    match left.flatten() {
        None => Ok(true),
        Some(n) if n <= 0 => Ok(false),
        Some(_) => {
            tx.execute(
                "UPDATE grants SET uses_left = uses_left - 1 WHERE id = ?1",
                params![id],
            )?;
            Ok(true)
        }
    }
}

fn get_grant(conn: &Conn<'_>, id: &str) -> Result<Option<Grant>> {
    conn.query_opt(
        &format!("SELECT {GRANT_COLUMNS} FROM grants WHERE id = ?1"),
        params![id],
        row_to_grant,
    )
}

/// Records what the prompt of the new pending request `id` offers to grant, with the
/// learned suggestion counted now (in the request's transaction).
pub(super) fn offer_tx(
    tx: &Tx<'_>,
    id: &str,
    agent: &str,
    tool: &str,
    offer: &NewOffer,
) -> Result<()> {
    // The suggestion is for the narrowest thing a grant here would cover: the prefix
    // of a shell command, else the exact command, else the whole tool.
    let (suggest, key) = match (&offer.prefix, &offer.command) {
        (Some(p), _) => ("prefix", Some(p.as_str())),
        (None, Some(c)) => ("exact", Some(c.as_str())),
        (None, None) => ("tool", None),
    };
    let streak = if offer.suggest_after == 0 {
        0
    } else {
        approvals_in_a_row(tx, agent, tool, suggest, key)?
    };
    let suggested = (offer.suggest_after > 0 && streak >= offer.suggest_after).then_some(suggest);
    if offer.command.is_none() && suggested.is_none() {
        // Nothing to offer beyond the plain buttons.
        return Ok(());
    }
    tx.execute(
        "INSERT INTO grant_offers (approval_id, command, prefix, suggest, streak) \
         VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id, offer.command, offer.prefix, suggested, streak as i64],
    )?;
    Ok(())
}

/// Human approvals of `agent`'s calls of `tool` (with the same prefix or command, for
/// `prefix` and `exact`) since its last such denial.
fn approvals_in_a_row(
    conn: &Conn<'_>,
    agent: &str,
    tool: &str,
    by: &str,
    key: Option<&str>,
) -> Result<u64> {
    // `decided_by IS NOT NULL` tells a human's approval from the policy's allow that
    // the agent later reported on.
    const APPROVED: &str = "a.status IN ('approved', 'executing', 'succeeded', 'failed') \
        AND a.decided_by IS NOT NULL";
    let join = match by {
        "prefix" => "JOIN grant_offers o ON o.approval_id = a.id AND o.prefix = ?3",
        "exact" => "JOIN grant_offers o ON o.approval_id = a.id AND o.command = ?3",
        _ => "",
    };
    let sql = format!(
        "SELECT COUNT(*) FROM approvals a {join} WHERE a.agent = ?1 AND a.tool = ?2 AND {APPROVED} \
         AND a.id > COALESCE((SELECT MAX(a.id) FROM approvals a {join} WHERE a.agent = ?1 \
             AND a.tool = ?2 AND a.status = 'rejected'), '')"
    );
    let n: i64 = match key {
        Some(key) if !join.is_empty() => {
            conn.once()
                .query_row(&sql, params![agent, tool, key], |r| r.get(0))?
        }
        _ => conn
            .once()
            .query_row(&sql, params![agent, tool], |r| r.get(0))?,
    };
    Ok(n as u64)
}

/// The owners' tiers and pauses in the database at `path`, read without changing it
/// (`gatebot check-config`, which may run beside the daemon or without it). `None`
/// when there is no database yet, or it predates trust.
pub fn peek_trust(path: &std::path::Path) -> Result<Option<(Vec<TierOverride>, Vec<Pause>)>> {
    if !path.exists() {
        return Ok(None);
    }
    super::sql::read_file(path, |conn| {
        let has: bool = conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tier_overrides')",
            params![],
            |r| r.get(0),
        )?;
        if !has {
            return Ok(None);
        }
        let names =
            |sql: &str| -> Result<Vec<String>> { conn.query_map(sql, params![], |r| r.get(0)) };
        let overrides = names("SELECT agent FROM tier_overrides ORDER BY agent")?
            .iter()
            .filter_map(|a| get_override(conn, a).transpose())
            .collect::<Result<_>>()?;
        let pauses = names("SELECT agent FROM pauses ORDER BY agent")?
            .iter()
            .filter_map(|a| get_pause(conn, a).transpose())
            .collect::<Result<_>>()?;
        Ok(Some((overrides, pauses)))
    })
}

impl Store {
    /// Everything the submit path needs about `agent` and `tool`, under one lock. One
    /// statement answers the common case (no pause, no grant); the pause and the grants
    /// are read only when there are some.
    pub fn submit_facts(&self, agent: &str, tool: &str, now: i64) -> Result<SubmitFacts> {
        self.writer(|conn| {
            let (run_before, tier, paused, granted): (bool, Option<String>, bool, bool) = conn
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM approvals WHERE agent = ?1 AND tool = ?2 AND status IN \
                         ('allowed', 'approved', 'executing', 'succeeded', 'failed')), \
                     (SELECT tier FROM tier_overrides WHERE agent = ?1), \
                     EXISTS (SELECT 1 FROM pauses WHERE agent = ?1), \
                     EXISTS (SELECT 1 FROM grants WHERE agent = ?1 AND tool = ?2 AND revoked_at IS NULL \
                         AND (expires_at IS NULL OR expires_at > ?3) \
                         AND (uses_left IS NULL OR uses_left > 0))",
                    params![agent, tool, now],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                )?;
            let pause = if paused {
                get_pause(conn, agent)?
            } else {
                None
            };
            let grants = if granted {
                conn.query_map(
                    &format!(
                        "SELECT {GRANT_COLUMNS} FROM grants WHERE agent = ?1 AND tool = ?2 \
                         AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?3) \
                         AND (uses_left IS NULL OR uses_left > 0) ORDER BY id"
                    ),
                    params![agent, tool, now],
                    row_to_grant,
                )?
            } else {
                Vec::new()
            };
            Ok(SubmitFacts {
                tier: tier.map(|t| tier_of(&t)).transpose()?,
                pause,
                grants,
                run_before,
            })
        })
    }

    /// The owner's tier for `agent`, if one is set.
    pub fn tier_override(&self, agent: &str) -> Result<Option<TierOverride>> {
        self.read(|c| get_override(c, agent))
    }

    /// Every owner's tier, by agent.
    pub fn tier_overrides(&self) -> Result<Vec<TierOverride>> {
        self.writer(|c| {
            c.query_map(
                &format!("SELECT {OVERRIDE_COLUMNS} FROM tier_overrides ORDER BY agent"),
                params![],
                override_row,
            )
        })
    }

    /// Sets (`Some`) or clears (`None`) the owner's tier for `agent`, audited as
    /// `tier_changed` with the tiers before and after; closes the agent's open
    /// proposals (they proposed a move from a tier it no longer has).
    pub fn set_tier(
        &self,
        agent: &str,
        tier: Option<Tier>,
        baseline: Tier,
        actor: &Actor,
        reason: Option<&str>,
        now: i64,
    ) -> Result<TierChange> {
        self.write(|tx| set_tier_tx(tx, agent, tier, baseline, actor, reason, None, now))
    }

    /// The pause of `agent`, if it is paused.
    pub fn pause_of(&self, agent: &str) -> Result<Option<Pause>> {
        self.read(|c| get_pause(c, agent))
    }

    /// Every pause.
    pub fn pauses(&self) -> Result<Vec<Pause>> {
        self.writer(|c| {
            c.query_map(
                &format!("SELECT {PAUSE_COLUMNS} FROM pauses ORDER BY agent"),
                params![],
                pause_row,
            )
        })
    }

    /// Pauses `agent` (an agent already paused stays paused as it was) and, with
    /// `deny_pending`, denies every pending request of it, in one transaction.
    pub fn pause(
        &self,
        agent: &str,
        actor: &Actor,
        reason: Option<&str>,
        deny_pending: bool,
        now: i64,
    ) -> Result<Paused> {
        self.write(|tx| {
            let existing = get_pause(tx, agent)?;
            let new = existing.is_none();
            if new {
                tx.execute(
                    "INSERT INTO pauses (agent, id, paused_by, paused_via, reason, paused_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![
                        agent,
                        super::new_id(),
                        actor.name,
                        actor.via.as_str(),
                        reason,
                        now
                    ],
                )?;
                audit_tx(
                    tx,
                    now,
                    None,
                    "agent_paused",
                    Some(&actor.name),
                    Some(&actor.via),
                    &json!({"agent": agent, "reason": reason}),
                )?;
            }
            let pause = get_pause(tx, agent)?
                .ok_or_else(|| StoreError::Corrupt(format!("pause of {agent}")))?;
            let denied = if deny_pending {
                deny_pending_tx(tx, &pause, actor, now)?
            } else {
                Vec::new()
            };
            Ok(Paused { pause, new, denied })
        })
    }

    /// Denies every pending request of the agent `pause` paused, if that pause is still
    /// in force (`None` otherwise: the agent was resumed, or paused again since).
    pub fn deny_pending_of_pause(
        &self,
        pause_id: &str,
        actor: &Actor,
        now: i64,
    ) -> Result<Option<(Pause, Vec<Approval>)>> {
        self.write(|tx| {
            let agent: Option<String> = tx.query_opt(
                "SELECT agent FROM pauses WHERE id = ?1",
                params![pause_id],
                |r| r.get(0),
            )?;
            let Some(agent) = agent else {
                tx.discard();
                return Ok(None);
            };
            let pause = get_pause(tx, &agent)?
                .ok_or_else(|| StoreError::Corrupt(format!("pause {agent}")))?;
            let denied = deny_pending_tx(tx, &pause, actor, now)?;
            Ok(Some((pause, denied)))
        })
    }

    /// Resumes `agent`; the pause that was lifted, if it was paused.
    pub fn resume(&self, agent: &str, actor: &Actor, now: i64) -> Result<Option<Pause>> {
        self.write(|tx| {
            let Some(pause) = get_pause(tx, agent)? else {
                tx.discard();
                return Ok(None);
            };
            tx.execute("DELETE FROM pauses WHERE agent = ?1", params![agent])?;
            audit_tx(
                tx,
                now,
                None,
                "agent_resumed",
                Some(&actor.name),
                Some(&actor.via),
                &json!({"agent": agent, "paused_by": pause.by.name, "paused_at": pause.at}),
            )?;
            Ok(Some(pause))
        })
    }

    /// Pending requests of `agent`.
    pub fn count_pending_of(&self, agent: &str) -> Result<usize> {
        let n: i64 = self.read(|c| {
            c.query_row(
                c.dialect(
                    "SELECT COUNT(*) FROM approvals INDEXED BY approvals_pending_agent \
                     WHERE agent = ?1 AND status = 'pending'",
                    "SELECT COUNT(*) FROM approvals WHERE agent = ?1 AND status = 'pending'",
                ),
                params![agent],
                |r| r.get(0),
            )
        })?;
        Ok(n as usize)
    }

    /// Grants, oldest first: of one agent or all; with revoked and expired ones or not.
    pub fn grants(&self, agent: Option<&str>, all: bool, now: i64) -> Result<Vec<Grant>> {
        self.read(|c| {
            c.query_map(
                &format!(
                    "SELECT {GRANT_COLUMNS} FROM grants WHERE (?1 IS NULL OR agent = ?1) \
                     AND (?2 = 1 OR (revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?3) \
                                 AND (uses_left IS NULL OR uses_left > 0))) \
                     ORDER BY id"
                ),
                params![agent, all, now],
                row_to_grant,
            )
        })
    }

    /// Whether a whole-tool grant lets `agent` run `tool` without asking now.
    pub fn is_always_allowed(&self, agent: &str, tool: &str) -> Result<bool> {
        Ok(self.always_allowed_tools(agent)?.iter().any(|t| t == tool))
    }

    /// The tools `agent` may run without asking by a whole-tool grant in force.
    pub fn always_allowed_tools(&self, agent: &str) -> Result<Vec<String>> {
        self.writer(|c| {
            c.query_map(
                "SELECT DISTINCT tool FROM grants WHERE agent = ?1 AND scope = 'tool' \
                 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?2) ORDER BY tool",
                params![agent, crate::time::now_ms()],
                |r| r.get(0),
            )
        })
    }

    /// A grant by id.
    pub fn grant(&self, id: &str) -> Result<Option<Grant>> {
        self.writer(|c| get_grant(c, id))
    }

    /// The grant the decision on request `approval` made, if it made one.
    pub fn grant_of_approval(&self, approval: &str) -> Result<Option<Grant>> {
        let mut found = self.writer(|c| {
            c.query_map(
                &format!(
                    "SELECT {GRANT_COLUMNS} FROM grants WHERE approval_id = ?1 ORDER BY id DESC LIMIT 1"
                ),
                params![approval],
                row_to_grant,
            )
        })?;
        Ok(found.pop())
    }

    /// Revokes the grant `typed` names (a full id, a short id, or a unique prefix of
    /// 4+ characters of one), audited as `grant_revoked`.
    pub fn revoke_grant(&self, typed: &str, actor: &Actor, now: i64) -> Result<Revoked> {
        let typed = typed.trim();
        let lower = typed.to_ascii_lowercase();
        self.write(|tx| {
            // A prefix is 4+ letters and digits (no LIKE wildcards).
            let prefix = lower.len() >= 4 && lower.bytes().all(|b| b.is_ascii_alphanumeric());
            let found: Vec<Grant> = tx.query_map(
                &format!(
                    "SELECT {GRANT_COLUMNS} FROM grants WHERE id = ?1 OR short_id = ?2 \
                     OR (?3 = 1 AND short_id LIKE ?2 || '%') ORDER BY id DESC LIMIT 11"
                ),
                params![typed, lower, prefix],
                row_to_grant,
            )?;
            let grant = match exact_or_only(&found, typed, &lower) {
                Some(g) => g,
                None if found.is_empty() => {
                    tx.discard();
                    return Ok(Revoked::NotFound);
                }
                None => {
                    tx.discard();
                    return Ok(Revoked::Ambiguous(
                        found.into_iter().map(|g| g.short_id).collect(),
                    ));
                }
            };
            if grant.revoked.is_some() {
                tx.discard();
                return Ok(Revoked::Already(grant));
            }
            tx.execute(
                "UPDATE grants SET revoked_at = ?2, revoked_by = ?3, revoked_via = ?4 \
                 WHERE id = ?1 AND revoked_at IS NULL",
                params![grant.id, now, actor.name, actor.via.as_str()],
            )?;
            audit_tx(
                tx,
                now,
                grant.approval.as_deref(),
                "grant_revoked",
                Some(&actor.name),
                Some(&actor.via),
                &json!({
                    "grant": grant.id,
                    "short_id": grant.short_id,
                    "agent": grant.agent,
                    "tool": grant.tool,
                    "scope": grant.scope.kind(),
                    "pattern": grant.scope.pattern(),
                }),
            )?;
            let revoked = get_grant(tx, &grant.id)?
                .ok_or_else(|| StoreError::Corrupt(format!("grant {}", grant.id)))?;
            Ok(Revoked::Done(revoked))
        })
    }

    /// What the prompt of request `approval` offers to grant.
    pub fn offer(&self, approval: &str) -> Result<Option<OfferRow>> {
        type Offered = (Option<String>, Option<String>, Option<String>, i64);
        let row: Option<Offered> = self.writer(|c| {
            c.query_opt(
                "SELECT command, prefix, suggest, streak FROM grant_offers WHERE approval_id = ?1",
                params![approval],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
        })?;
        row.map(|(command, prefix, suggest, streak)| {
            let suggest = match suggest.as_deref() {
                None => None,
                Some("tool") => Some(Scope::Tool),
                Some("prefix") => prefix.clone().map(Scope::Prefix),
                Some("exact") => command.clone().map(Scope::Exact),
                Some(other) => return Err(StoreError::Corrupt(format!("suggest {other}"))),
            };
            Ok(OfferRow {
                command,
                prefix,
                suggest,
                streak: streak as u64,
            })
        })
        .transpose()
    }

    /// `agent`'s latest `n` human decisions, newest first: `true` for a denial.
    pub fn latest_decisions(&self, agent: &str, n: usize) -> Result<Vec<bool>> {
        self.read(|c| {
            c.query_map(
                c.dialect(
                    "SELECT status = 'rejected' FROM approvals INDEXED BY approvals_decisions \
                     WHERE agent = ?1 AND ttl_ms IS NOT NULL AND decided_at IS NOT NULL \
                     AND status IN ('approved', 'executing', 'succeeded', 'failed', 'rejected') \
                     ORDER BY decided_at DESC, id DESC LIMIT ?2",
                    "SELECT status = 'rejected' FROM approvals \
                     WHERE agent = ?1 AND ttl_ms IS NOT NULL AND decided_at IS NOT NULL \
                     AND status IN ('approved', 'executing', 'succeeded', 'failed', 'rejected') \
                     ORDER BY decided_at DESC, id DESC LIMIT ?2",
                ),
                params![agent, n as i64],
                |r| r.get(0),
            )
        })
    }

    /// Proposals of `agent` declined at or after `since`: all, or only those that
    /// proposed `to` in `direction`.
    pub fn declined_since(
        &self,
        agent: &str,
        since: i64,
        only: Option<(Direction, Tier)>,
    ) -> Result<u64> {
        let (direction, to) = only
            .map(|(d, t)| (Some(d.as_str()), Some(t.as_str())))
            .unwrap_or((None, None));
        let n: i64 = self.read(|c| {
            c.query_row(
                "SELECT COUNT(*) FROM proposals WHERE agent = ?1 AND status = 'declined' \
                 AND decided_at >= ?2 AND (?3 IS NULL OR direction = ?3) AND (?4 IS NULL OR to_tier = ?4)",
                params![agent, since, direction, to],
                |r| r.get(0),
            )
        })?;
        Ok(n as u64)
    }

    /// Records a proposal, open, with its subject row and audit row; `None` if the
    /// agent already has an open one (that one stands).
    pub fn create_proposal(&self, new: &NewProposal, now: i64) -> Result<Option<Proposal>> {
        self.write(|tx| {
            let open: bool = tx.query_row(
                "SELECT EXISTS (SELECT 1 FROM proposals WHERE agent = ?1 AND status = 'open')",
                params![new.agent],
                |r| r.get(0),
            )?;
            if open {
                tx.discard();
                return Ok(None);
            }
            let id = super::new_id();
            let short_id = unique_short_id(tx)?;
            tx.execute(
                &format!(
                    "INSERT INTO proposals ({PROPOSAL_COLUMNS}) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'open', ?9, NULL, NULL, NULL, NULL)"
                ),
                params![
                    id,
                    short_id,
                    new.agent,
                    new.direction.as_str(),
                    new.from.as_str(),
                    new.to.as_str(),
                    new.reason,
                    serde_json::to_string(&new.measures).unwrap_or_else(|_| "{}".into()),
                    now
                ],
            )?;
            subject_created(tx, &id, SubjectKind::Proposal, &short_id, "open", now)?;
            audit_tx(
                tx,
                now,
                Some(&id),
                "proposal_created",
                Some("gatebot"),
                Some(&Via::System),
                &json!({
                    "agent": new.agent,
                    "direction": new.direction.as_str(),
                    "from": new.from.as_str(),
                    "to": new.to.as_str(),
                    "reason": new.reason,
                    "measures": new.measures,
                    "short_id": short_id,
                }),
            )?;
            let p = get_proposal(tx, &id)?.ok_or_else(|| StoreError::Corrupt(id.clone()))?;
            Ok(Some(p))
        })
    }

    /// A proposal by id.
    pub fn proposal(&self, id: &str) -> Result<Option<Proposal>> {
        self.writer(|c| get_proposal(c, id))
    }

    /// Proposals, oldest first: open ones only, or all of one agent's.
    pub fn proposals(&self, agent: Option<&str>, open_only: bool) -> Result<Vec<Proposal>> {
        self.read(|c| {
            c.query_map(
                &format!(
                    "SELECT {PROPOSAL_COLUMNS} FROM proposals WHERE (?1 IS NULL OR agent = ?1) \
                     AND (?2 = 0 OR status = 'open') ORDER BY id LIMIT 1000"
                ),
                params![agent, open_only],
                row_to_proposal,
            )
        })
    }

    /// Answers the open proposal `id`. Approving moves the agent to the proposed tier,
    /// if it is still at the tier the proposal moves from (`baseline` is its tier in
    /// the config now); otherwise the proposal is closed as superseded.
    pub fn decide_proposal(
        &self,
        id: &str,
        approve: bool,
        baseline: Tier,
        actor: &Actor,
        reason: Option<&str>,
        now: i64,
    ) -> Result<ProposalOutcome> {
        self.write(|tx| {
            let Some(p) = get_proposal(tx, id)? else {
                tx.discard();
                return Ok(ProposalOutcome::NotFound);
            };
            if p.status != ProposalStatus::Open {
                tx.discard();
                return Ok(ProposalOutcome::AlreadySettled(p));
            }
            let current = get_override(tx, &p.agent)?.map_or(baseline, |o| o.tier);
            let status = match (approve, current == p.from) {
                (true, false) => ProposalStatus::Superseded,
                (true, true) => ProposalStatus::Approved,
                (false, _) => ProposalStatus::Declined,
            };
            tx.execute(
            "UPDATE proposals SET status = ?2, decided_by = ?3, decided_via = ?4, decided_at = ?5, \
             decision_reason = ?6 WHERE id = ?1 AND status = 'open'",
            params![
                id,
                status.as_str(),
                actor.name,
                actor.via.as_str(),
                now,
                reason
            ],
        )?;
            subject_changed(tx, id, false, status.as_str())?;
            audit_tx(
                tx,
                now,
                Some(id),
                match status {
                    ProposalStatus::Approved => "proposal_approved",
                    ProposalStatus::Declined => "proposal_declined",
                    _ => "proposal_superseded",
                },
                Some(&actor.name),
                Some(&actor.via),
                &json!({
                    "agent": p.agent,
                    "from": p.from.as_str(),
                    "to": p.to.as_str(),
                    "tier_now": current.as_str(),
                    "reason": reason,
                }),
            )?;
            let change = if status == ProposalStatus::Approved {
                let why = format!("approved proposal {}: {}", p.short_id, p.question());
                Some(Box::new(set_tier_tx(
                    tx,
                    &p.agent,
                    Some(p.to),
                    baseline,
                    actor,
                    Some(reason.unwrap_or(&why)),
                    Some(id),
                    now,
                )?))
            } else {
                None
            };
            let p = get_proposal(tx, id)?.ok_or_else(|| StoreError::Corrupt(id.to_string()))?;
            Ok(match status {
                ProposalStatus::Superseded => ProposalOutcome::Superseded(p),
                _ => ProposalOutcome::Done(p, change),
            })
        })
    }

    /// The handle chat buttons use to name `agent` (made on first use).
    pub fn agent_handle(&self, agent: &str) -> Result<String> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO agent_handles (id, agent) VALUES (?1, ?2) ON CONFLICT DO NOTHING",
                params![super::new_id(), agent],
            )?;
            tx.query_row(
                "SELECT id FROM agent_handles WHERE agent = ?1",
                params![agent],
                |r| r.get(0),
            )
        })
    }

    /// The agent a handle names.
    pub fn agent_of_handle(&self, id: &str) -> Result<Option<String>> {
        self.writer(|c| {
            c.query_opt(
                "SELECT agent FROM agent_handles WHERE id = ?1",
                params![id],
                |r| r.get(0),
            )
        })
    }

    /// A small durable fact (`trust_state`).
    pub fn trust_state(&self, key: &str) -> Result<Option<String>> {
        self.writer(|c| {
            c.query_opt(
                "SELECT value FROM trust_state WHERE key = ?1",
                params![key],
                |r| r.get(0),
            )
        })
    }

    /// Sets a small durable fact.
    pub fn set_trust_state(&self, key: &str, value: &str) -> Result<()> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO trust_state (key, value) VALUES (?1, ?2) \
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                params![key, value],
            )
        })?;
        Ok(())
    }
}

/// The grant `typed` names among `found`: the one whose id or short id it is, else the
/// only one.
fn exact_or_only(found: &[Grant], typed: &str, lower: &str) -> Option<Grant> {
    found
        .iter()
        .find(|g| g.id == typed || g.short_id == lower)
        .or_else(|| (found.len() == 1).then(|| &found[0]))
        .cloned()
}

/// The body of a tier change, in the caller's transaction.
#[allow(clippy::too_many_arguments)]
fn set_tier_tx(
    tx: &Tx<'_>,
    agent: &str,
    tier: Option<Tier>,
    baseline: Tier,
    actor: &Actor,
    reason: Option<&str>,
    proposal: Option<&str>,
    now: i64,
) -> Result<TierChange> {
    let before = get_override(tx, agent)?;
    write_override(tx, agent, tier, actor, reason, proposal, now)?;
    let after = get_override(tx, agent)?;
    let from = before.as_ref().map_or(baseline, |o| o.tier);
    let to = after.as_ref().map_or(baseline, |o| o.tier);
    audit_tx(
        tx,
        now,
        proposal,
        "tier_changed",
        Some(&actor.name),
        Some(&actor.via),
        &json!({
            "agent": agent,
            "from": from.as_str(),
            "to": to.as_str(),
            "baseline": baseline.as_str(),
            "override": after.as_ref().map(|o| o.tier.as_str()),
            "reason": reason,
        }),
    )?;
    let superseded = supersede_open_proposals(tx, agent, proposal, to, actor, now)?;
    Ok(TierChange {
        before,
        after,
        superseded,
    })
}

/// Sets `agent`'s tier override to `tier`, or removes it (`None`).
fn write_override(
    tx: &Tx<'_>,
    agent: &str,
    tier: Option<Tier>,
    actor: &Actor,
    reason: Option<&str>,
    proposal: Option<&str>,
    now: i64,
) -> Result<()> {
    match tier {
        Some(t) => {
            tx.execute(
                "INSERT INTO tier_overrides (agent, tier, set_by, set_via, reason, \
                 set_at, proposal) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
                 ON CONFLICT (agent) DO UPDATE SET tier = excluded.tier, \
                 set_by = excluded.set_by, set_via = excluded.set_via, \
                 reason = excluded.reason, set_at = excluded.set_at, \
                 proposal = excluded.proposal",
                params![
                    agent,
                    t.as_str(),
                    actor.name,
                    actor.via.as_str(),
                    reason,
                    now,
                    proposal
                ],
            )?;
        }
        None => {
            tx.execute(
                "DELETE FROM tier_overrides WHERE agent = ?1",
                params![agent],
            )?;
        }
    }
    Ok(())
}

/// Open proposals moved from the old tier are moot once a tier is set by hand: each
/// of `agent`'s open proposals but `proposal` (the one that made the change, if any) is
/// superseded, with its subject change and audit row. Returns their ids.
fn supersede_open_proposals(
    tx: &Tx<'_>,
    agent: &str,
    proposal: Option<&str>,
    tier_now: Tier,
    actor: &Actor,
    now: i64,
) -> Result<Vec<String>> {
    let superseded: Vec<String> = tx.query_map(
        "SELECT id FROM proposals WHERE agent = ?1 AND status = 'open' AND (?2 IS NULL OR id != ?2)",
        params![agent, proposal],
        |r| r.get(0),
    )?;
    for id in &superseded {
        tx.execute(
            "UPDATE proposals SET status = 'superseded', decided_by = ?2, decided_via = ?3, \
             decided_at = ?4, decision_reason = 'the tier was changed by hand' WHERE id = ?1",
            params![id, actor.name, actor.via.as_str(), now],
        )?;
        subject_changed(tx, id, false, ProposalStatus::Superseded.as_str())?;
        audit_tx(
            tx,
            now,
            Some(id),
            "proposal_superseded",
            Some(&actor.name),
            Some(&actor.via),
            &json!({"agent": agent, "tier_now": tier_now.as_str()}),
        )?;
    }
    Ok(superseded)
}

/// Denies every pending request of `pause`'s agent whose deadline has not passed,
/// each with its `decided` audit row and subject change, in the caller's transaction.
fn deny_pending_tx(tx: &Tx<'_>, pause: &Pause, actor: &Actor, now: i64) -> Result<Vec<Approval>> {
    let reason = format!(
        "denied with every pending request: the agent is {}",
        pause.describe()
    );
    let ids: Vec<String> = tx.query_map(
        "UPDATE approvals SET status = 'rejected', decided_by = ?2, decided_via = ?3, \
         decision_reason = ?4, decided_at = ?5, finished_at = ?5 \
         WHERE agent = ?1 AND status = 'pending' AND (expires_at IS NULL OR expires_at > ?5) \
         RETURNING id",
        params![pause.agent, actor.name, actor.via.as_str(), reason, now],
        |r| r.get(0),
    )?;
    let mut denied = Vec::with_capacity(ids.len());
    for id in &ids {
        subject_changed(tx, id, false, Status::Rejected.as_str())?;
        audit_tx(
            tx,
            now,
            Some(id),
            "decided",
            Some(&actor.name),
            Some(&actor.via),
            &json!({
                "outcome": "rejected",
                "always_allow": false,
                "reason": reason,
                "pause": pause.id,
            }),
        )?;
        denied.push(get_conn(tx, id)?.ok_or_else(|| StoreError::Corrupt(id.clone()))?);
    }
    Ok(denied)
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    use super::*;
    use crate::approval::Verb;
    use crate::store::tests::{decision, inserted, new};
    use crate::store::{Inserted, NewApproval, Transition};
    use crate::trust::evidence::Counts;

    fn alice() -> Actor {
        Actor {
            name: "alice".into(),
            via: Via::Cli,
        }
    }

    fn pending(s: &Store, agent: &str, tool: &str) -> Approval {
        inserted(s, &new(agent, tool, None, Some(i64::MAX)))
    }

    /// A request of `agent` decided with `verb` at `at`.
    fn decided_at(s: &Store, agent: &str, tool: &str, verb: Verb, at: i64) -> Approval {
        let a = pending(s, agent, tool);
        match s.decide(&a.id, &decision(verb, "alice"), at).unwrap() {
            Transition::Done(a) => a,
            other => panic!("{other:?}"),
        }
    }

    fn decided(s: &Store, agent: &str, tool: &str, verb: Verb) -> Approval {
        decided_at(s, agent, tool, verb, 10)
    }

    #[test]
    fn always_allow_rows_become_whole_tool_grants() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.db");
        let mut conn = Connection::open(&path).unwrap();
        rusqlite_migration::Migrations::new(
            [
                sqlite_migration!("0001_initial.sql"),
                sqlite_migration!("0002_prompts.sql"),
                sqlite_migration!("0003_audit_chain.sql"),
                sqlite_migration!("0004_digests.sql"),
                sqlite_migration!("0005_conversations.sql"),
            ]
            .into_iter()
            .map(rusqlite_migration::M::up)
            .collect(),
        )
        .to_latest(&mut conn)
        .unwrap();
        conn.execute_batch(
            "INSERT INTO always_allow VALUES ('mailer', 'send_email', 5, 'alice', 'telegram', NULL), \
                                             ('mailer', 'create_contact', 6, 'bob', 'cli', 'X');",
        )
        .unwrap();
        drop(conn);
        let s = Store::open(&path).unwrap();
        let grants = s.grants(Some("mailer"), true, 100).unwrap();
        assert_eq!(grants.len(), 2);
        assert!(grants
            .iter()
            .all(|g| g.scope == Scope::Tool && g.active(100)));
        assert_eq!(grants[0].tool, "send_email");
        assert_eq!(
            grants[0].by.via,
            Via::Chat(crate::approval::PlatformId::new("telegram"))
        );
        assert_eq!(grants[0].id.len(), 26);
        assert!(s.is_always_allowed("mailer", "send_email").unwrap());
        // The migrated short ids cannot collide with generated ones (they hold a 0).
        assert!(grants.iter().all(|g| g.short_id.contains('0')));
        assert!(matches!(
            s.revoke_grant(&grants[1].short_id, &alice(), 200).unwrap(),
            Revoked::Done(_)
        ));
    }

    #[test]
    fn submit_facts_hold_the_override_the_pause_and_the_grants_in_force() {
        let s = Store::open_in_memory().unwrap();
        let empty = s.submit_facts("m", "Bash", 0).unwrap();
        assert_eq!(empty, SubmitFacts::default());

        s.set_tier(
            "m",
            Some(Tier::Autonomous),
            Tier::Supervised,
            &alice(),
            Some("earned"),
            1,
        )
        .unwrap();
        s.pause("m", &alice(), Some("loop"), false, 2).unwrap();
        let a = pending(&s, "m", "Bash");
        let forever = GrantAsk::always(Scope::Prefix("git status".into()), None);
        s.decide_granting(
            &a.id,
            &decision(Verb::ApproveAlways, "alice"),
            Some(&forever),
            3,
        )
        .unwrap();
        let b = pending(&s, "m", "Bash");
        let brief = GrantAsk::always(Scope::Exact("npm test".into()), Some(100));
        s.decide_granting(&b.id, &decision(Verb::Approve, "alice"), Some(&brief), 3)
            .unwrap();
        // Another agent's and another tool's grants are not this call's.
        let c = pending(&s, "other", "Bash");
        s.decide(&c.id, &decision(Verb::ApproveAlways, "alice"), 3)
            .unwrap();

        let facts = s.submit_facts("m", "Bash", 50).unwrap();
        assert_eq!(facts.tier, Some(Tier::Autonomous));
        assert_eq!(
            facts.pause.as_ref().unwrap().reason.as_deref(),
            Some("loop")
        );
        assert!(facts.run_before);
        let mut scopes: Vec<&Scope> = facts.grants.iter().map(|g| &g.scope).collect();
        scopes.sort_by_key(|s| s.kind());
        assert_eq!(scopes, [&brief.scope, &forever.scope]);
        // At its expiry, the time-boxed grant is gone; a revoked one too.
        let later = s.submit_facts("m", "Bash", 100).unwrap();
        assert_eq!(later.grants.len(), 1);
        s.revoke_grant(&later.grants[0].short_id, &alice(), 101)
            .unwrap();
        assert!(s.submit_facts("m", "Bash", 102).unwrap().grants.is_empty());
        // The decision made the grant, and says so in the trail.
        let events: Vec<String> = s
            .audit_rows(Some(&a.id), None)
            .unwrap()
            .into_iter()
            .map(|r| r.event)
            .collect();
        assert_eq!(
            events,
            [
                "submitted",
                "evaluated",
                "decided",
                "grant_added",
                "grant_revoked"
            ]
        );
        assert_eq!(
            s.grant_of_approval(&a.id).unwrap().unwrap().scope,
            forever.scope
        );
    }

    #[test]
    fn a_pause_with_deny_pending_denies_in_the_same_step_and_resume_lifts_it() {
        let s = Store::open_in_memory().unwrap();
        let a = pending(&s, "m", "t");
        let b = pending(&s, "m", "t");
        let other = pending(&s, "n", "t");
        let p = s.pause("m", &alice(), Some("runaway"), true, 5).unwrap();
        assert!(p.new);
        assert_eq!(p.denied.len(), 2);
        assert!(p
            .denied
            .iter()
            .all(|x| x.status == Status::Rejected && x.decided_by.as_deref() == Some("alice")));
        assert!(p.denied[0]
            .decision_reason
            .as_deref()
            .unwrap()
            .contains("paused by alice on the command line"));
        for id in [&a.id, &b.id] {
            assert_eq!(s.subject(id).unwrap().map(|(_, open)| open), Some(false));
        }
        assert_eq!(s.get(&other.id).unwrap().unwrap().status, Status::Pending);
        // Pausing again keeps the first pause; its denials find nothing new.
        let again = s.pause("m", &bob(), None, true, 6).unwrap();
        assert!(!again.new && again.denied.is_empty());
        assert_eq!(again.pause.by.name, "alice");
        // A request that came in since is denied by the pause's button.
        let c = pending(&s, "m", "t");
        let (_, denied) = s
            .deny_pending_of_pause(&p.pause.id, &bob(), 7)
            .unwrap()
            .unwrap();
        assert_eq!(denied.len(), 1);
        assert_eq!(denied[0].id, c.id);
        let lifted = s.resume("m", &bob(), 8).unwrap().unwrap();
        assert_eq!(lifted.id, p.pause.id);
        assert!(s.resume("m", &bob(), 9).unwrap().is_none());
        // A lifted pause's button denies nothing.
        pending(&s, "m", "t");
        assert!(s
            .deny_pending_of_pause(&p.pause.id, &bob(), 10)
            .unwrap()
            .is_none());
        let events: Vec<String> = s
            .audit_rows(None, None)
            .unwrap()
            .into_iter()
            .map(|r| r.event)
            .filter(|e| e.starts_with("agent_"))
            .collect();
        assert_eq!(events, ["agent_paused", "agent_resumed"]);
    }

    fn bob() -> Actor {
        Actor {
            name: "bob".into(),
            via: Via::Chat(crate::approval::PlatformId::new("telegram")),
        }
    }

    fn promote(agent: &str) -> NewProposal {
        NewProposal {
            agent: agent.into(),
            direction: Direction::Promote,
            from: Tier::Supervised,
            to: Tier::SemiAutonomous,
            reason: "ready".into(),
            measures: Measures::default(),
        }
    }

    #[test]
    fn proposals_are_one_open_at_a_time_and_an_approval_sets_the_tier() {
        let s = Store::open_in_memory().unwrap();
        let p = s.create_proposal(&promote("m"), 1).unwrap().unwrap();
        assert!(s.create_proposal(&promote("m"), 2).unwrap().is_none());
        assert_eq!(
            s.subject(&p.id).unwrap(),
            Some((
                crate::subject::Subject {
                    id: p.id.clone(),
                    kind: SubjectKind::Proposal
                },
                true
            ))
        );
        // The tier has not changed by itself.
        assert!(s.tier_override("m").unwrap().is_none());
        match s
            .decide_proposal(&p.id, true, Tier::Supervised, &bob(), None, 5)
            .unwrap()
        {
            ProposalOutcome::Done(done, Some(change)) => {
                assert_eq!(done.status, ProposalStatus::Approved);
                assert_eq!(
                    change.after.unwrap().proposal.as_deref(),
                    Some(p.id.as_str())
                );
            }
            other => panic!("{other:?}"),
        }
        let o = s.tier_override("m").unwrap().unwrap();
        assert_eq!((o.tier, o.by.name.as_str()), (Tier::SemiAutonomous, "bob"));
        assert!(o.reason.unwrap().contains(&p.short_id));
        assert_eq!(s.subject(&p.id).unwrap().map(|(_, open)| open), Some(false));
        assert!(matches!(
            s.decide_proposal(&p.id, false, Tier::Supervised, &alice(), None, 6)
                .unwrap(),
            ProposalOutcome::AlreadySettled(x) if x.status == ProposalStatus::Approved
        ));
        let events: Vec<String> = s
            .audit_rows(Some(&p.id), None)
            .unwrap()
            .into_iter()
            .map(|r| r.event)
            .collect();
        assert_eq!(
            events,
            ["proposal_created", "proposal_approved", "tier_changed"]
        );
    }

    #[test]
    fn a_declined_proposal_is_counted_and_a_moved_tier_supersedes_one() {
        let s = Store::open_in_memory().unwrap();
        let p = s.create_proposal(&promote("m"), 1).unwrap().unwrap();
        s.decide_proposal(
            &p.id,
            false,
            Tier::Supervised,
            &alice(),
            Some("not yet"),
            10,
        )
        .unwrap();
        assert_eq!(s.declined_since("m", 10, None).unwrap(), 1);
        assert_eq!(s.declined_since("m", 11, None).unwrap(), 0);
        assert_eq!(
            s.declined_since("m", 0, Some((Direction::Promote, Tier::SemiAutonomous)))
                .unwrap(),
            1
        );
        assert_eq!(
            s.declined_since("m", 0, Some((Direction::Demote, Tier::SemiAutonomous)))
                .unwrap(),
            0
        );
        assert!(s.tier_override("m").unwrap().is_none());

        // A tier set by hand closes the open proposal: it moved from a tier gone now.
        let q = s.create_proposal(&promote("m"), 20).unwrap().unwrap();
        let change = s
            .set_tier(
                "m",
                Some(Tier::Autonomous),
                Tier::Supervised,
                &alice(),
                None,
                21,
            )
            .unwrap();
        assert_eq!(change.superseded, std::slice::from_ref(&q.id));
        assert_eq!(
            s.proposal(&q.id).unwrap().unwrap().status,
            ProposalStatus::Superseded
        );
        // One made before the config moved the agent is superseded when approved.
        s.set_tier("m", None, Tier::Supervised, &alice(), None, 22)
            .unwrap();
        let r = s.create_proposal(&promote("m"), 23).unwrap().unwrap();
        assert!(matches!(
            s.decide_proposal(&r.id, true, Tier::SemiAutonomous, &alice(), None, 24).unwrap(),
            ProposalOutcome::Superseded(x) if x.status == ProposalStatus::Superseded
        ));
        assert!(s.tier_override("m").unwrap().is_none());
    }

    #[test]
    fn evidence_counts_follow_the_documented_mapping() {
        let s = Store::open_in_memory().unwrap();
        let allowed = |conf: Option<f64>| NewApproval {
            status: Status::Allowed,
            ttl_ms: None,
            expires_at: None,
            asked: crate::approval::Asked {
                confidence: conf,
                ..NewApproval::sample("m", "t", None).asked
            },
            ..NewApproval::sample("m", "t", None)
        };
        let ok = inserted(&s, &allowed(None));
        s.report(&ok.id, Status::Succeeded, None, 2).unwrap();
        let bad = inserted(&s, &allowed(None));
        s.report(&bad.id, Status::Failed, None, 2).unwrap();
        inserted(&s, &allowed(Some(0.95)));
        inserted(
            &s,
            &NewApproval {
                status: Status::Blocked,
                ttl_ms: None,
                expires_at: None,
                asked: crate::approval::Asked {
                    confidence: Some(0.1),
                    ..NewApproval::sample("m", "t", None).asked
                },
                // Below the agent's threshold when it was sent: the engine says so.
                low_confidence: true,
                ..NewApproval::sample("m", "t", None)
            },
        );
        decided_at(&s, "m", "t", Verb::Approve, 10);
        decided_at(&s, "m", "t", Verb::Approve, 11);
        let then_failed = decided_at(&s, "m", "t", Verb::Approve, 12);
        s.report(&then_failed.id, Status::Failed, None, 20).unwrap();
        decided_at(&s, "m", "t", Verb::Deny, 13);
        let e = inserted(&s, &new("m", "t", None, Some(5)));
        s.expire_due(6).unwrap();
        let c = pending(&s, "m", "t");
        s.cancel(&c.id, "m", 7).unwrap();
        pending(&s, "m", "t");
        decided(&s, "other", "t", Verb::Deny);
        let _ = e;
        // An owner's grant, and three calls it let through: two reported, one not.
        let always = decided_at(&s, "m", "t", Verb::ApproveAlways, 14);
        let g = s.grant_of_approval(&always.id).unwrap().unwrap();
        let granted = || NewApproval {
            grant_id: Some(g.id.clone()),
            ..allowed(None)
        };
        let g_ok = inserted(&s, &granted());
        s.report(&g_ok.id, Status::Succeeded, None, 15).unwrap();
        let g_bad = inserted(&s, &granted());
        s.report(&g_bad.id, Status::Failed, None, 15).unwrap();
        inserted(&s, &granted());
        // A grant names only a call it let through: a blocked one (a pause) keeps none.
        inserted(
            &s,
            &NewApproval {
                status: Status::Blocked,
                ..granted()
            },
        );

        let n = s.evidence("m", 0).unwrap();
        assert_eq!(n, s.evidence_from_requests("m", 0).unwrap());
        assert_eq!(
            n,
            Counts {
                requests: 16,
                allowed: 6,
                blocked: 2,
                asked: 8,
                approved: 4,
                denied: 1,
                expired: 1,
                cancelled: 1,
                pending: 1,
                succeeded: 2,
                failed: 3,
                low_confidence: 1,
                granted: 3,
                granted_succeeded: 1,
                granted_failed: 1,
                // The two reports on calls nobody was asked about.
                unvouched_reports: 2,
                // 4 approved + 1 denied by a human, 2 reported of the granted calls; the
                // reports on the calls the policy let through alone are not evidence.
                handled: 7,
                // 3 approved (one approval was reported failed) + 1 reported success
                // under the grant.
                positive: 4,
            }
        );
        // The window counts from its start.
        assert_eq!(s.evidence("m", i64::MAX).unwrap(), Counts::default());
        // Latest human decisions, newest first: the grant's approval, the denial, then
        // the approvals.
        assert_eq!(
            s.latest_decisions("m", 10).unwrap(),
            [false, true, false, false, false]
        );
    }

    #[test]
    fn requests_a_grant_let_through_before_it_was_recorded_are_found_by_their_reason() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.db");
        {
            // A database from before `grant_id` (migrations 1-9), with a grant, two
            // calls it let through (the engine named it in their reasons), a call the
            // policy let through alone, and one naming a grant of another agent.
            let mut conn = Connection::open(&path).unwrap();
            crate::store::migrations().to_version(&mut conn, 9).unwrap();
            conn.execute_batch(
                "INSERT INTO grants (id, short_id, agent, tool, scope, pattern, granted_by, \
                 granted_via, reason, created_at) VALUES \
                 ('01G', 'gr8mabcd', 'm', 'Bash', 'prefix', 'git status', 'alice', 'cli', 'x', 1), \
                 ('01H', 'gr8mwxyz', 'n', 'Bash', 'prefix', 'git status', 'alice', 'cli', 'x', 1);",
            )
            .unwrap();
            let mut insert = conn
                .prepare(
                    "INSERT INTO approvals (id, short_id, agent, tool, args, status, risk_score, \
                     tool_class, risk_factors, policy_reason, created_at) \
                     VALUES (?1, ?1, ?2, 'Bash', '{}', ?3, 'low', 'read', '[]', ?4, 1)",
                )
                .unwrap();
            let by_grant = |g: &str| {
                format!(
                    "semi_autonomous: a write call at low risk runs without a human because \
                     Bash is always-allowed by an owner's grant (grant {g}: commands starting \
                     `git status`)"
                )
            };
            for (id, agent, status, reason) in [
                ("a1", "m", "succeeded", by_grant("gr8mabcd")),
                ("a2", "m", "failed", by_grant("gr8mabcd")),
                (
                    "a3",
                    "m",
                    "succeeded",
                    "semi_autonomous: runs without a human".into(),
                ),
                ("a4", "m", "succeeded", by_grant("gr8mwxyz")),
            ] {
                insert
                    .execute(rusqlite::params![id, agent, status, reason])
                    .unwrap();
            }
        }
        let s = Store::open(&path).unwrap();
        // What the engine does at its start in an upgraded database.
        assert!(s.build_evidence(&|_| 0.5).unwrap().is_some());
        let c = s.evidence("m", 0).unwrap();
        assert_eq!(
            (c.granted, c.granted_succeeded, c.granted_failed),
            (2, 1, 1)
        );
        assert_eq!((c.unvouched_reports, c.handled, c.positive), (2, 2, 1));
    }

    #[test]
    fn offers_suggest_a_grant_after_enough_approvals_in_a_row() {
        let s = Store::open_in_memory().unwrap();
        let offer = |command: Option<&str>| NewOffer {
            command: command.map(Into::into),
            prefix: command.and_then(|c| {
                crate::trust::grants::offered_prefix(&crate::policy::shell::Command::read(c))
            }),
            suggest_after: 3,
        };
        let ask = |s: &Store, tool: &str, command: Option<&str>| -> Approval {
            let n = NewApproval {
                offer: Some(offer(command)),
                ..NewApproval::sample("m", tool, Some(i64::MAX))
            };
            match s.insert(&n).unwrap() {
                Inserted::New(a) => a,
                other => panic!("{other:?}"),
            }
        };
        let approve = |s: &Store, a: &Approval, verb: Verb| {
            s.decide(&a.id, &decision(verb, "alice"), 5).unwrap();
        };
        // Whole tools: no row until there is something to suggest.
        for _ in 0..3 {
            let a = ask(&s, "send_email", None);
            assert!(s.offer(&a.id).unwrap().is_none());
            approve(&s, &a, Verb::Approve);
        }
        let a = ask(&s, "send_email", None);
        let o = s.offer(&a.id).unwrap().unwrap();
        assert_eq!((o.suggest, o.streak), (Some(Scope::Tool), 3));
        // A denial starts the count again.
        approve(&s, &a, Verb::Deny);
        let a = ask(&s, "send_email", None);
        assert!(s.offer(&a.id).unwrap().is_none());

        // Shell commands count by their prefix.
        for cmd in ["git status", "git status -s", "git status --short"] {
            let a = ask(&s, "Bash", Some(cmd));
            let o = s.offer(&a.id).unwrap().unwrap();
            assert_eq!(
                (o.command.as_deref(), o.suggest.as_ref()),
                (Some(cmd), None)
            );
            approve(&s, &a, Verb::Approve);
        }
        let other = ask(&s, "Bash", Some("npm test"));
        assert_eq!(s.offer(&other.id).unwrap().unwrap().suggest, None);
        let a = ask(&s, "Bash", Some("git status"));
        let o = s.offer(&a.id).unwrap().unwrap();
        assert_eq!(o.suggest, Some(Scope::Prefix("git status".into())));
        assert_eq!(o.streak, 3);
    }

    #[test]
    fn grants_are_revoked_by_short_id_or_prefix_once() {
        let s = Store::open_in_memory().unwrap();
        let a = decided(&s, "m", "t", Verb::ApproveAlways);
        let g = s.grant_of_approval(&a.id).unwrap().unwrap();
        assert!(matches!(
            s.revoke_grant("zz", &alice(), 1).unwrap(),
            Revoked::NotFound
        ));
        assert!(matches!(
            s.revoke_grant("%%%%", &alice(), 1).unwrap(),
            Revoked::NotFound
        ));
        match s
            .revoke_grant(&g.short_id[..5].to_uppercase(), &bob(), 2)
            .unwrap()
        {
            Revoked::Done(r) => assert_eq!(r.revoked.unwrap().1.name, "bob"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            s.revoke_grant(&g.id, &alice(), 3).unwrap(),
            Revoked::Already(r) if r.revoked.as_ref().unwrap().0 == 2
        ));
        assert!(!s.is_always_allowed("m", "t").unwrap());
        assert_eq!(s.grants(None, false, 4).unwrap().len(), 0);
        assert_eq!(s.grants(None, true, 4).unwrap().len(), 1);
    }

    #[test]
    fn handles_name_agents_stably_and_peek_reads_without_writing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.db");
        assert!(peek_trust(&path).unwrap().is_none());
        let s = Store::open(&path).unwrap();
        let h = s.agent_handle("mailer").unwrap();
        assert_eq!(s.agent_handle("mailer").unwrap(), h);
        assert_eq!(s.agent_of_handle(&h).unwrap().as_deref(), Some("mailer"));
        assert!(s
            .agent_of_handle("01AAAAAAAAAAAAAAAAAAAAAAAA")
            .unwrap()
            .is_none());
        s.set_tier(
            "mailer",
            Some(Tier::Autonomous),
            Tier::Supervised,
            &alice(),
            None,
            1,
        )
        .unwrap();
        s.pause("other", &alice(), None, false, 2).unwrap();
        let (overrides, pauses) = peek_trust(&path).unwrap().unwrap();
        assert_eq!(overrides[0].tier, Tier::Autonomous);
        assert_eq!(pauses[0].agent, "other");
        s.set_trust_state("k", "1").unwrap();
        assert_eq!(s.trust_state("k").unwrap().as_deref(), Some("1"));
    }
}
