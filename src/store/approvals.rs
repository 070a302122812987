//! Approvals: storing requests, their transitions out of `pending`, lookup by a
//! typed id, expiry and lists. The grant an owner's "Always allow" makes is written in
//! the decision's transaction (see `trust.rs`).
//!
//! Every transition out of `pending` is `UPDATE … WHERE status = 'pending'`, so two
//! racing decisions (two taps, a tap and the expiry) yield exactly one winner. A
//! decision or cancel also needs the deadline not to have passed: one that arrives
//! after it, before the expiry task has run, expires the request instead (see
//! [`Transition::Expired`]), so the deadline wins whichever code path sees it first.

use serde_json::json;

use super::approval_row::{get_conn, row_to_approval, COLUMNS, COLUMN_COUNT};
use super::audit::audit_tx;
use super::sql::{params, Conn, Tx, Value};
use super::subjects::{inherit_home, subject_changed, subject_created, unique_short_id};
use super::trust::{grant_tx, offer_tx, NewOffer};
use super::{Result, Store, StoreError, EXPIRE_BATCH, EXPIRE_BEFORE_YIELDING};
use crate::approval::{Approval, Asked, Decision, ListFilter, Status, Verb, Via};
use crate::policy::Risk;
use crate::subject::SubjectKind;
use crate::trust::{GrantAsk, Scope};

/// A new request as the engine hands it to the store.
#[derive(Debug, Clone)]
pub struct NewApproval {
    /// What the agent asked; its `task_id` checked to be one of the agent's tasks (its
    /// cards go under the task's).
    pub asked: Asked,
    /// With a key: [`super::content_hash`] of the request as the agent sent it, so a
    /// repeat of the key is recognised by its whole content.
    pub content_hash: Option<String>,
    pub status: Status,
    pub risk: Risk,
    pub policy_reason: String,
    pub checkpoint: bool,
    pub always_allow_offered: bool,
    pub ttl_ms: Option<i64>,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    /// What the prompt offers to grant (pending requests that offer "Always allow").
    pub offer: Option<NewOffer>,
    /// The owner's grant that let it through without asking anyone (an allowed
    /// request only): what makes its reported outcome count as evidence.
    pub grant_id: Option<String>,
    /// Blocked as a draft-only agent's draft: kept for its owner.
    pub draft: bool,
    /// What the approval rule that matched it asks (a pending request only).
    pub route: Option<crate::approval::votes::Route>,
    /// Where its prompts go under that rule (platform, chat); empty: where every
    /// request's go.
    pub audience: Vec<(String, String)>,
    /// Its confidence was below the agent's `ask_human` threshold in force when it was
    /// sent (the policy blocked it for that): an escalation in the evidence.
    pub low_confidence: bool,
}

impl NewApproval {
    /// A pending request for unit tests and the benchmarks: high risk, destructive, a
    /// one-second ttl.
    #[doc(hidden)]
    #[must_use]
    pub fn sample(agent: &str, tool: &str, expires_at: Option<i64>) -> NewApproval {
        NewApproval {
            asked: Asked {
                agent: agent.into(),
                tool: tool.into(),
                args: json!({"to": "a@example.com"}),
                ..Asked::default()
            },
            content_hash: None,
            status: Status::Pending,
            risk: Risk {
                score: crate::policy::RiskScore::High,
                tool_class: crate::policy::ToolClass::Destructive,
                factors: vec![],
            },
            policy_reason: "test".into(),
            checkpoint: false,
            always_allow_offered: true,
            ttl_ms: Some(1000),
            created_at: 1,
            expires_at,
            offer: None,
            grant_id: None,
            draft: false,
            route: None,
            audience: Vec::new(),
            low_confidence: false,
        }
    }
}

/// Result of [`Store::insert`].
#[derive(Debug, Clone)]
pub enum Inserted {
    /// A new request was stored.
    New(Approval),
    /// The agent already sent this idempotency key with the same content.
    Existing(Approval),
    /// The agent already used this idempotency key for other content.
    Conflict(Approval),
    /// Nothing stored: the single-use grant that was to let it through was used up
    /// meanwhile (by a copy of the call submitted at the same time). Judge it again.
    GrantSpent,
}

/// Result of a transition out of `pending`.
#[derive(Debug, Clone)]
pub enum Transition {
    /// This call made the change; the approval as it is now.
    Done(Approval),
    /// The approval had already left `pending` (or was never there); as it is now.
    AlreadySettled(Approval),
    /// The approval was still `pending` but its deadline had passed, so this call
    /// expired it (the same row and audit entry as [`Store::expire_due`]) instead of
    /// making its own change. To the caller it is already settled; the caller must
    /// also announce the expiry, since the expiry task will not see it.
    Expired(Approval),
    NotFound,
    /// Approving it would overdraw a budget (why, with the figures): it stays pending,
    /// and the refusal is audited.
    OverBudget(Approval, String),
}

/// What [`Store::decide_tx`] did in its caller's transaction.
#[derive(Debug)]
pub(super) enum TxDecided {
    Done(Approval),
    /// Approving it would overdraw a budget: nothing changed but the refusal's audit row.
    OverBudget(Approval, String),
    /// It was not pending, or its deadline had passed.
    NotPending,
}

/// Result of resolving an id typed by a person.
#[derive(Debug, Clone)]
pub enum Lookup {
    Found(Box<Approval>),
    /// Several requests match the prefix; their short ids.
    Ambiguous(Vec<String>),
    NotFound,
}

impl Store {
    /// Stores a new request with its `submitted` and `evaluated` audit rows, or
    /// returns the earlier request with the same `(agent, idempotency_key)`.
    pub fn insert(&self, new: &NewApproval) -> Result<Inserted> {
        self.write(|tx| {
            // Read under the lock: `set_budgets` changes them under it.
            let budgets = self.budgets();
            insert_tx(tx, new, self.watch.as_ref(), budgets.as_deref())
        })
    }

    /// Stores several requests in one transaction (one fsync): group commit for
    /// concurrent submissions. Each result is what [`Store::insert`] would give. A
    /// request refused for room (`store.reserve`) writes nothing, so the others go on;
    /// if the transaction fails as a whole, each request is retried on its own, so one
    /// bad request cannot fail the others.
    pub fn insert_batch(&self, news: &[NewApproval]) -> Vec<Result<Inserted>> {
        let attempt = || -> Result<Vec<Result<Inserted>>> {
            self.write(|tx| {
                let budgets = self.budgets();
                let mut out = Vec::with_capacity(news.len());
                for n in news {
                    match insert_tx(tx, n, self.watch.as_ref(), budgets.as_deref()) {
                        Err(e) if e.held_back() => out.push(Err(e)),
                        other => out.push(Ok(other?)),
                    }
                }
                Ok(out)
            })
        };
        match attempt() {
            Ok(all) => all,
            Err(_) => news.iter().map(|n| self.insert(n)).collect(),
        }
    }

    pub fn get(&self, id: &str) -> Result<Option<Approval>> {
        self.writer(|c| get_tx(c, id))
    }

    /// Resolves a full id, a short id, or a unique prefix (≥ 4 chars) of a short id.
    /// Matching is case-insensitive. `pending_only` restricts prefixes to open requests.
    pub fn lookup(&self, typed: &str, pending_only: bool) -> Result<Lookup> {
        let typed = typed.trim();
        let found: Vec<Approval> = self.writer(|c| {
            if let Some(a) = get_tx(c, typed)? {
                return Ok(vec![a]);
            }
            let lower = typed.to_ascii_lowercase();
            if let Some(a) = c.query_opt(
                &format!("SELECT {COLUMNS} FROM approvals WHERE short_id = ?1"),
                params![lower],
                row_to_approval,
            )? {
                return Ok(vec![a]);
            }
            if lower.len() < 4 || !lower.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return Ok(Vec::new());
            }
            let filter = if pending_only {
                " AND status = 'pending'"
            } else {
                ""
            };
            c.once().query_map(
                &format!(
                    "SELECT {COLUMNS} FROM approvals WHERE short_id LIKE ?1 || '%'{filter} \
                     ORDER BY id DESC LIMIT 11"
                ),
                params![lower],
                row_to_approval,
            )
        })?;
        Ok(match found.len() {
            0 => Lookup::NotFound,
            1 => Lookup::Found(Box::new(found.into_iter().next().expect("one"))),
            _ => Lookup::Ambiguous(found.into_iter().map(|a| a.short_id).collect()),
        })
    }

    /// Applies an owner's decision if the request is still pending and its deadline
    /// has not passed (past it, the request is expired instead: [`Transition::Expired`]).
    /// `approve_always` also grants the agent the whole tool (the engine, which knows
    /// the tool's scopes, uses [`Store::decide_granting`]).
    pub fn decide(&self, id: &str, decision: &Decision, now: i64) -> Result<Transition> {
        let grant =
            (decision.verb == Verb::ApproveAlways).then_some(GrantAsk::always(Scope::Tool, None));
        self.decide_granting(id, decision, grant.as_ref(), now)
    }

    /// [`Store::decide`], with the grant an approval makes (`None`: none), written in
    /// the same transaction with its `grant_added` audit row. A denial grants nothing.
    pub fn decide_granting(
        &self,
        id: &str,
        decision: &Decision,
        grant: Option<&GrantAsk>,
        now: i64,
    ) -> Result<Transition> {
        let grant = grant.filter(|_| decision.verb != Verb::Deny);
        self.decide_as(id, decision, grant, None, now)
    }

    /// Decides `id` on the call as an owner edited it (`edited`), recorded beside the
    /// arguments asked and audited with both: approved as edited, or (for a client that
    /// cannot take an edited call back) denied with `grant`, the single-use grant of the
    /// edited call, made in the same transaction.
    pub fn approve_edited(
        &self,
        id: &str,
        decision: &Decision,
        edited: &serde_json::Value,
        grant: Option<&GrantAsk>,
        now: i64,
    ) -> Result<Transition> {
        self.decide_as(id, decision, grant, Some(edited), now)
    }

    fn decide_as(
        &self,
        id: &str,
        decision: &Decision,
        grant: Option<&GrantAsk>,
        edited: Option<&serde_json::Value>,
        now: i64,
    ) -> Result<Transition> {
        self.write(
            |tx| match self.decide_tx(tx, id, decision, grant, edited, now)? {
                TxDecided::Done(approval) => Ok(Transition::Done(approval)),
                // Its refusal's audit row is kept; the request stays pending.
                TxDecided::OverBudget(approval, why) => Ok(Transition::OverBudget(approval, why)),
                TxDecided::NotPending => refused(tx, id, now),
            },
        )
    }

    /// Decides `id` inside `tx` (see [`Store::decide_granting`]): the approval as decided,
    /// refused as over budget, or not pending (or its deadline had passed), which leaves
    /// `tx` for the caller to answer with [`refused`]. The caller commits.
    pub(super) fn decide_tx(
        &self,
        tx: &Tx<'_>,
        id: &str,
        decision: &Decision,
        grant: Option<&GrantAsk>,
        edited: Option<&serde_json::Value>,
        now: i64,
    ) -> Result<TxDecided> {
        let (status, always) = match decision.verb {
            Verb::Approve | Verb::ApproveAlways => (Status::Approved, grant.is_some()),
            Verb::Deny => (Status::Rejected, false),
        };
        if status == Status::Approved {
            let budgets = self.budgets();
            let refused =
                super::budgets::approval_refused_tx(tx, budgets.as_deref(), id, decision, now)?;
            if let Some((approval, why)) = refused {
                return Ok(TxDecided::OverBudget(approval, why));
            }
        }
        let changed = tx.execute(
            "UPDATE approvals SET status = ?2, decided_by = ?3, decided_via = ?4, \
             decision_reason = ?5, always_allowed = ?6, decided_at = ?7, \
             finished_at = CASE WHEN ?2 = 'rejected' THEN ?7 ELSE NULL END, edited_args = ?8 \
             WHERE id = ?1 AND status = 'pending' AND (expires_at IS NULL OR expires_at > ?7)",
            params![
                id,
                status.as_str(),
                decision.actor,
                decision.via.as_str(),
                decision.reason,
                always,
                now,
                edited.map(|e| e.to_string()),
            ],
        )?;
        if changed == 0 {
            return Ok(TxDecided::NotPending);
        }
        subject_changed(tx, id, false, status.as_str())?;
        if status == Status::Approved {
            let budgets = self.budgets();
            super::budgets::reserve_tx(tx, budgets.as_deref(), id, now)?;
        }
        let approval = get_tx(tx, id)?.ok_or_else(|| StoreError::Corrupt(id.to_string()))?;
        let mut detail = json!({
            "outcome": status.as_str(),
            "always_allow": always,
            "reason": decision.reason,
        });
        if let Some(e) = edited {
            // Both versions: what the agent asked, and what the owner approved instead.
            detail["asked_args"] = approval.args.clone();
            detail["edited_args"] = e.clone();
        }
        audit_tx(
            tx,
            now,
            Some(id),
            "decided",
            Some(&decision.actor),
            Some(&decision.via),
            &detail,
        )?;
        if let Some(ask) = grant {
            grant_tx(tx, &approval, ask, &decision.actor, &decision.via, now)?;
        }
        Ok(TxDecided::Done(approval))
    }

    /// Expires pending requests whose deadline is at or before `now`, earliest first, at
    /// most [`EXPIRE_BATCH`] of them (call again while [`Store::next_deadline`] is due),
    /// and fewer when another caller waits for the writer: after
    /// [`EXPIRE_BEFORE_YIELDING`] it commits what it expired and gives way.
    pub fn expire_due(&self, now: i64) -> Result<Vec<Approval>> {
        self.write_giving_way(|tx| {
            // Bounded, so a mass expiry holds the writer only briefly per pass; the
            // expiry task comes straight back while deadlines are still due.
            let due: Vec<(String, Option<i64>, Option<i64>)> = tx.query_map(
                tx.dialect(
                    "SELECT id, ttl_ms, json_extract(route, '$.deadline_ms') FROM approvals \
                     WHERE status = 'pending' AND expires_at <= ?1 ORDER BY expires_at LIMIT ?2",
                    "SELECT id, ttl_ms, (route::json ->> 'deadline_ms')::bigint FROM approvals \
                     WHERE status = 'pending' AND expires_at <= ?1 ORDER BY expires_at LIMIT ?2",
                ),
                params![now, EXPIRE_BATCH],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?;
            let mut expired = Vec::with_capacity(due.len());
            for (done, (id, ttl_ms, deadline_ms)) in due.into_iter().enumerate() {
                if done >= EXPIRE_BEFORE_YIELDING && self.wanted() {
                    break;
                }
                match expire_tx(tx, &id, ttl_ms, deadline_ms, now) {
                    Ok(Some(a)) => expired.push(a),
                    Ok(None) => {}
                    // Expired and audited, but the row does not read back (a hand-edited
                    // database): keep going, or one bad row would stop every expiry.
                    Err(StoreError::Corrupt(what)) => {
                        tracing::error!(id = %id, %what, "expired a request whose row cannot be read");
                    }
                    Err(e) => return Err(e),
                }
            }
            Ok(expired)
        })
    }

    /// The earliest deadline among pending requests (past ones included).
    pub fn next_deadline(&self) -> Result<Option<i64>> {
        self.writer(|c| {
            c.query_row(
                "SELECT MIN(expires_at) FROM approvals WHERE status = 'pending'",
                params![],
                |r| r.get(0),
            )
        })
    }

    /// When the next route timer is due (a reminder, an escalation level or its
    /// repeat: [`Store::route_timers_due`]), if any.
    pub fn next_route_timer(&self) -> Result<Option<i64>> {
        self.writer(|c| {
            c.query_row(
                "SELECT MIN(route_due_at) FROM approvals WHERE route_due_at IS NOT NULL",
                params![],
                |r| r.get(0),
            )
        })
    }

    /// Cancels a pending request on behalf of its agent, if its deadline has not
    /// passed (past it, the request is expired instead: [`Transition::Expired`]).
    pub fn cancel(&self, id: &str, agent: &str, now: i64) -> Result<Transition> {
        self.cancel_as(id, agent, &Via::Api, None, now)
    }

    /// Withdraws a pending request nobody is left to run (its task ended): cancelled,
    /// with `by` (who ended the task, or gatebot) and `why` recorded as its reason.
    pub fn withdraw(&self, id: &str, by: &str, why: &str, now: i64) -> Result<Transition> {
        self.cancel_as(id, by, &Via::System, Some(why), now)
    }

    fn cancel_as(
        &self,
        id: &str,
        by: &str,
        via: &Via,
        why: Option<&str>,
        now: i64,
    ) -> Result<Transition> {
        self.write(|tx| {
            let changed = tx.execute(
                "UPDATE approvals SET status = 'cancelled', decided_by = ?2, decided_via = ?4, \
                 decision_reason = ?5, decided_at = ?3, finished_at = ?3 \
                 WHERE id = ?1 AND status = 'pending' AND (expires_at IS NULL OR expires_at > ?3)",
                params![id, by, now, via.as_str(), why],
            )?;
            if changed == 0 {
                return refused(tx, id, now);
            }
            subject_changed(tx, id, false, Status::Cancelled.as_str())?;
            audit_tx(
                tx,
                now,
                Some(id),
                "cancelled",
                Some(by),
                Some(via),
                &why.map_or_else(|| json!({}), |w| json!({ "reason": w })),
            )?;
            let a = get_tx(tx, id)?.ok_or_else(|| StoreError::Corrupt(id.to_string()))?;
            Ok(Transition::Done(a))
        })
    }

    /// Records the agent's report: `executing`, `succeeded` or `failed`. Allowed from
    /// approved/allowed (and from executing to a final result).
    pub fn report(
        &self,
        id: &str,
        to: Status,
        detail: Option<&str>,
        now: i64,
    ) -> Result<Transition> {
        debug_assert!(matches!(
            to,
            Status::Executing | Status::Succeeded | Status::Failed
        ));
        let from: &[&str] = if to == Status::Executing {
            &["approved", "allowed"]
        } else {
            &["approved", "allowed", "executing"]
        };
        let placeholders = from
            .iter()
            .map(|s| format!("'{s}'"))
            .collect::<Vec<_>>()
            .join(", ");
        let finished = (to != Status::Executing).then_some(now);
        self.write(|tx| {
            let changed = tx.execute(
                &format!(
                    "UPDATE approvals SET status = ?2, result_detail = COALESCE(?3, result_detail), \
                     finished_at = ?4 WHERE id = ?1 AND status IN ({placeholders})"
                ),
                params![id, to.as_str(), detail, finished],
            )?;
            if changed == 0 {
                return Ok(match get_tx(tx, id)? {
                    Some(a) => Transition::AlreadySettled(a),
                    None => Transition::NotFound,
                });
            }
            subject_changed(tx, id, false, to.as_str())?;
            let a = get_tx(tx, id)?.ok_or_else(|| StoreError::Corrupt(id.to_string()))?;
            audit_tx(
                tx,
                now,
                Some(id),
                to.as_str(),
                Some(&a.agent),
                Some(&Via::Api),
                &json!({"detail": detail}),
            )?;
            Ok(Transition::Done(a))
        })
    }

    /// How many requests are pending.
    pub fn count_pending(&self) -> Result<usize> {
        let n: i64 = self.read(|c| {
            c.query_row(
                "SELECT COUNT(*) FROM approvals WHERE status = 'pending'",
                params![],
                |r| r.get(0),
            )
        })?;
        Ok(n as usize)
    }

    /// Pending requests, oldest first.
    pub fn pending(&self) -> Result<Vec<Approval>> {
        self.list(Some(Status::Pending), 1000)
    }

    /// Requests, newest first unless `status` is pending (then oldest first).
    pub fn list(&self, status: Option<Status>, limit: usize) -> Result<Vec<Approval>> {
        self.list_page(&ListFilter {
            status,
            limit,
            ..ListFilter::default()
        })
    }

    /// One page of requests matching `filter`: pending ones oldest first, others newest
    /// first; `after` is the last id of the previous page.
    pub fn list_page(&self, filter: &ListFilter) -> Result<Vec<Approval>> {
        let mut sql = format!("SELECT {COLUMNS} FROM approvals WHERE true");
        let mut p: Vec<Value<'_>> = Vec::new();
        if let Some(s) = filter.status {
            p.push(s.as_str().into());
            sql.push_str(&format!(" AND status = ?{}", p.len()));
        }
        if let Some(a) = &filter.agent {
            p.push(a.as_str().into());
            sql.push_str(&format!(" AND agent = ?{}", p.len()));
        }
        let oldest_first = filter.status == Some(Status::Pending);
        if let Some(after) = &filter.after {
            p.push(after.as_str().into());
            let op = if oldest_first { ">" } else { "<" };
            sql.push_str(&format!(" AND id {op} ?{}", p.len()));
        }
        let order = if oldest_first { "ASC" } else { "DESC" };
        sql.push_str(&format!(" ORDER BY id {order} LIMIT {}", filter.limit));
        self.read(|c| c.once().query_map(&sql, &p, row_to_approval))
    }
}

/// An earlier request of the agent's under the same idempotency key, if any: the same
/// one again (same content) or a conflict (other content under the key).
fn repeated(tx: &Tx<'_>, new: &NewApproval) -> Result<Option<Inserted>> {
    let Some(key) = &new.asked.idempotency_key else {
        return Ok(None);
    };
    let existing = tx.query_opt(
        &format!(
            "SELECT {COLUMNS}, content_hash FROM approvals WHERE agent = ?1 AND idempotency_key = ?2"
        ),
        params![new.asked.agent, key],
        |r| Ok((row_to_approval(r), r.get::<Option<String>>(COLUMN_COUNT)?)),
    )?;
    if let Some((existing, hash)) = existing {
        let existing = existing?;
        // A request stored before hashes were kept is compared as it was then.
        let same = match (hash, &new.content_hash) {
            (Some(was), Some(now)) => was == *now,
            _ => existing.tool == new.asked.tool && existing.args == new.asked.args,
        };
        return Ok(Some(if same {
            Inserted::Existing(existing)
        } else {
            Inserted::Conflict(existing)
        }));
    }
    Ok(None)
}

/// The two audit rows every new request gets: what the agent submitted, and what the
/// policy made of it (with the grant that let it through, if one did).
fn audit_submitted(tx: &Tx<'_>, new: &NewApproval, id: &str, short_id: &str) -> Result<()> {
    audit_tx(
        tx,
        new.created_at,
        Some(id),
        "submitted",
        Some(&new.asked.agent),
        None,
        &json!({"tool": new.asked.tool, "short_id": short_id}),
    )?;
    let mut evaluated = json!({
        "outcome": new.status.as_str(),
        "risk": new.risk.score.as_str(),
        "tool_class": new.risk.tool_class.as_str(),
        "factors": new.risk.factors,
        "reason": new.policy_reason,
        "checkpoint": new.checkpoint,
    });
    if let Some(g) = new
        .grant_id
        .as_ref()
        .filter(|_| new.status == Status::Allowed)
    {
        evaluated["grant"] = json!(g);
    }
    audit_tx(
        tx,
        new.created_at,
        Some(id),
        "evaluated",
        None,
        Some(&Via::System),
        &evaluated,
    )?;
    Ok(())
}

/// The body of [`Store::insert`], inside the caller's transaction. A new request is
/// an agent's write: refused, before it writes, when agents have no room left
/// (`watch`: see `health`).
fn insert_tx(
    tx: &Tx<'_>,
    new: &NewApproval,
    watch: Option<&super::health::Watch>,
    budgets: Option<&crate::budget::Budgets>,
) -> Result<Inserted> {
    if let Some(repeat) = repeated(tx, new)? {
        return Ok(repeat);
    }
    super::health::agent_room(watch, tx)?;
    // A declared cost that does not fit what is left of a budget blocks the request.
    let over_budget = super::budgets::over_budget_tx(
        tx,
        budgets,
        &new.asked.agent,
        new.status,
        new.asked.cost,
        new.created_at,
    )?
    .map(|why| NewApproval {
        status: Status::Blocked,
        policy_reason: why,
        ttl_ms: None,
        expires_at: None,
        offer: None,
        grant_id: None,
        always_allow_offered: false,
        draft: false,
        ..new.clone()
    });
    let new = over_budget.as_ref().unwrap_or(new);
    if let Some(grant) = new
        .grant_id
        .as_ref()
        .filter(|_| new.status == Status::Allowed)
    {
        if !super::trust::use_grant(tx, grant)? {
            return Ok(Inserted::GrantSpent);
        }
    }
    let id = super::new_id();
    let short_id = unique_short_id(tx)?;
    tx.execute(
        "INSERT INTO approvals (id, short_id, agent, tool, args, summary, confidence, \
         environment, idempotency_key, status, risk_score, tool_class, risk_factors, \
         policy_reason, checkpoint, always_allow_offered, ttl_ms, created_at, expires_at, \
         finished_at, task_id, grant_id, content_hash, draft, accepts_edits, route, \
         low_confidence) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, \
         ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27)",
        params![
            id,
            short_id,
            new.asked.agent,
            new.asked.tool,
            new.asked.args.to_string(),
            new.asked.summary,
            new.asked.confidence,
            new.asked.environment,
            new.asked.idempotency_key,
            new.status.as_str(),
            new.risk.score.as_str(),
            new.risk.tool_class.as_str(),
            serde_json::to_string(&new.risk.factors).unwrap_or_else(|_| "[]".into()),
            new.policy_reason,
            new.checkpoint,
            new.always_allow_offered,
            new.ttl_ms,
            new.created_at,
            new.expires_at,
            (new.status != Status::Pending).then_some(new.created_at),
            new.asked.task_id,
            new.grant_id
                .as_ref()
                .filter(|_| new.status == Status::Allowed),
            new.content_hash,
            (new.draft && new.status == Status::Blocked).then_some("open"),
            new.asked.accepts_edits,
            new.route
                .as_ref()
                .filter(|_| new.status == Status::Pending)
                .map(|r| serde_json::to_string(r).unwrap_or_default()),
            new.low_confidence,
        ],
    )?;
    if new.status == Status::Pending {
        // It asks a human: chats show it.
        subject_created(
            tx,
            &id,
            SubjectKind::Approval,
            &short_id,
            Status::Pending.as_str(),
            new.created_at,
        )?;
        if let Some(task) = &new.asked.task_id {
            // Shown where its task is, under the task's card.
            inherit_home(tx, &id, task)?;
        }
        // Shown to the people its approval rule asks, there only; asked more widely as
        // its escalation levels come due (its timers: `store::votes`).
        super::subjects::add_audience(tx, &id, &new.audience)?;
        if let Some(due) = new.route.as_ref().and_then(|r| r.next_due()) {
            tx.execute(
                "UPDATE approvals SET route_due_at = ?2 WHERE id = ?1",
                params![id, new.created_at.saturating_add(due)],
            )?;
        }
        if let Some(offer) = &new.offer {
            offer_tx(tx, &id, &new.asked.agent, &new.asked.tool, offer)?;
        }
    }
    super::budgets::record_cost_tx(
        tx,
        budgets,
        &id,
        &new.asked.agent,
        new.asked.cost,
        (new.status == Status::Allowed).then_some(new.created_at),
    )?;
    audit_submitted(tx, new, &id, &short_id)?;
    let approval = get_tx(tx, &id)?.ok_or_else(|| StoreError::Corrupt(id.clone()))?;
    Ok(Inserted::New(approval))
}

/// Why a transition out of `pending` changed nothing: the request is gone, has
/// already left `pending`, or is still pending past its deadline. In the last case
/// it is expired here, in the caller's transaction, which is then committed; in the
/// other cases nothing the transaction did is kept ([`Tx::discard`]).
pub(super) fn refused(tx: &Tx<'_>, id: &str, now: i64) -> Result<Transition> {
    let Some(a) = get_tx(tx, id)? else {
        tx.discard();
        return Ok(Transition::NotFound);
    };
    let overdue = a.status == Status::Pending && a.expires_at.is_some_and(|at| at <= now);
    if !overdue {
        tx.discard();
        return Ok(Transition::AlreadySettled(a));
    }
    let deadline_ms = a.route.as_ref().and_then(|r| r.deadline_ms);
    let expired = expire_tx(tx, id, a.ttl_ms, deadline_ms, now)?;
    Ok(match expired {
        Some(a) => Transition::Expired(a),
        None => Transition::AlreadySettled(a),
    })
}

/// Ends one pending request whose time is up; `None` if it was no longer pending. It
/// expires, with its `expired` audit row and a reason naming its own ttl; or, when its
/// approval rule gives it a deadline (`deadline_ms`), it is denied, with the `decided`
/// row a decision gets: never approved by silence, and never merely expired.
fn expire_tx(
    tx: &Tx<'_>,
    id: &str,
    ttl_ms: Option<i64>,
    deadline_ms: Option<i64>,
    now: i64,
) -> Result<Option<Approval>> {
    let span = |ms: i64| crate::words::span(std::time::Duration::from_millis(ms.max(0) as u64));
    let (status, event, reason) = match deadline_ms {
        Some(ms) => (
            Status::Rejected,
            "decided",
            format!("no one answered within {}", span(ms)),
        ),
        None => (
            Status::Expired,
            "expired",
            format!("no response within {}", span(ttl_ms.unwrap_or(0))),
        ),
    };
    let changed = tx.execute(
        "UPDATE approvals SET status = ?4, decided_by = 'gatebot', \
         decided_via = 'system', decision_reason = ?2, decided_at = ?3, finished_at = ?3 \
         WHERE id = ?1 AND status = 'pending'",
        params![id, reason, now, status.as_str()],
    )?;
    if changed == 0 {
        return Ok(None);
    }
    subject_changed(tx, id, false, status.as_str())?;
    let detail = match deadline_ms {
        Some(_) => json!({"outcome": "rejected", "reason": reason, "deadline": true}),
        None => json!({"reason": reason}),
    };
    audit_tx(
        tx,
        now,
        Some(id),
        event,
        Some("gatebot"),
        Some(&Via::System),
        &detail,
    )?;
    get_tx(tx, id)
}

pub(super) fn get_tx(c: &Conn<'_>, id: &str) -> Result<Option<Approval>> {
    get_conn(c, id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::{decision, inserted, new};

    #[test]
    fn a_second_decision_loses_and_sees_the_first() {
        let s = Store::open_in_memory().unwrap();
        let a = inserted(&s, &new("m", "send_email", None, Some(10_000)));
        let first = s
            .decide(&a.id, &decision(Verb::Approve, "alice"), 5)
            .unwrap();
        assert!(matches!(first, Transition::Done(ref x) if x.status == Status::Approved));
        match s.decide(&a.id, &decision(Verb::Deny, "bob"), 6).unwrap() {
            Transition::AlreadySettled(x) => {
                assert_eq!(x.status, Status::Approved);
                assert_eq!(x.decided_by.as_deref(), Some("alice"));
            }
            other => panic!("{other:?}"),
        }
        let decided: Vec<_> = s
            .audit_rows(Some(&a.id), None)
            .unwrap()
            .into_iter()
            .filter(|r| r.event == "decided")
            .collect();
        assert_eq!(decided.len(), 1);
    }

    #[test]
    fn expiry_and_decision_race_has_one_outcome() {
        let s = Store::open_in_memory().unwrap();
        let a = inserted(&s, &new("m", "t", None, Some(100)));
        let expired = s.expire_due(100).unwrap();
        assert_eq!(expired.len(), 1);
        assert_eq!(
            expired[0].decision_reason.as_deref(),
            Some("no response within 1 s")
        );
        assert!(matches!(
            s.decide(&a.id, &decision(Verb::Approve, "alice"), 101).unwrap(),
            Transition::AlreadySettled(x) if x.status == Status::Expired
        ));
        assert!(s.expire_due(200).unwrap().is_empty());
    }

    #[test]
    fn a_decision_after_the_deadline_expires_the_request_instead() {
        let s = Store::open_in_memory().unwrap();
        let a = inserted(&s, &new("m", "t", None, Some(100)));
        // Before the deadline a decision still wins.
        let b = inserted(&s, &new("m", "t", None, Some(100)));
        assert!(matches!(
            s.decide(&b.id, &decision(Verb::Approve, "alice"), 99).unwrap(),
            Transition::Done(x) if x.status == Status::Approved
        ));
        // At the deadline, before any expiry pass: the deadline wins.
        match s
            .decide(&a.id, &decision(Verb::ApproveAlways, "alice"), 100)
            .unwrap()
        {
            Transition::Expired(x) => {
                assert_eq!(x.status, Status::Expired);
                assert_eq!(x.decided_by.as_deref(), Some("gatebot"));
                assert_eq!(x.decided_via, Some(Via::System));
                assert_eq!(x.decision_reason.as_deref(), Some("no response within 1 s"));
                assert!(!x.always_allowed);
            }
            other => panic!("{other:?}"),
        }
        assert!(!s.is_always_allowed("m", "t").unwrap());
        let rows = s.audit_rows(Some(&a.id), None).unwrap();
        let events: Vec<&str> = rows.iter().map(|r| r.event.as_str()).collect();
        assert_eq!(events, ["submitted", "evaluated", "expired"]);
        let expired = rows.last().unwrap();
        assert_eq!(expired.actor.as_deref(), Some("gatebot"));
        assert_eq!(expired.channel.as_deref(), Some("system"));
        assert_eq!(expired.detail, json!({"reason": "no response within 1 s"}));
        // The expiry pass has nothing left to do, and a second late decision only
        // sees the expiry.
        assert!(s.expire_due(200).unwrap().is_empty());
        assert!(matches!(
            s.decide(&a.id, &decision(Verb::Deny, "bob"), 201).unwrap(),
            Transition::AlreadySettled(x) if x.status == Status::Expired
        ));
    }

    #[test]
    fn a_cancel_after_the_deadline_expires_the_request_instead() {
        let s = Store::open_in_memory().unwrap();
        let a = inserted(&s, &new("m", "t", None, Some(100)));
        assert!(matches!(
            s.cancel(&a.id, "m", 150).unwrap(),
            Transition::Expired(x) if x.status == Status::Expired
        ));
        let events: Vec<String> = s
            .audit_rows(Some(&a.id), None)
            .unwrap()
            .into_iter()
            .map(|r| r.event)
            .collect();
        assert_eq!(events, ["submitted", "evaluated", "expired"]);
        // A request without a deadline can always be cancelled.
        let b = inserted(&s, &new("m", "t", None, None));
        assert!(matches!(
            s.cancel(&b.id, "m", i64::MAX).unwrap(),
            Transition::Done(x) if x.status == Status::Cancelled
        ));
    }

    #[test]
    fn idempotency_key_returns_the_same_request_or_a_conflict() {
        let s = Store::open_in_memory().unwrap();
        let a = inserted(&s, &new("m", "t", Some("k1"), None));
        assert!(
            matches!(s.insert(&new("m", "t", Some("k1"), None)).unwrap(), Inserted::Existing(x) if x.id == a.id)
        );
        assert!(matches!(
            s.insert(&new("m", "other", Some("k1"), None)).unwrap(),
            Inserted::Conflict(_)
        ));
        // Another agent may use the same key.
        assert!(matches!(
            s.insert(&new("n", "t", Some("k1"), None)).unwrap(),
            Inserted::New(_)
        ));
    }

    #[test]
    fn approve_always_persists_the_tool_for_the_agent() {
        let s = Store::open_in_memory().unwrap();
        let a = inserted(&s, &new("m", "send_email", None, None));
        s.decide(&a.id, &decision(Verb::ApproveAlways, "alice"), 5)
            .unwrap();
        assert!(s.is_always_allowed("m", "send_email").unwrap());
        assert!(!s.is_always_allowed("other", "send_email").unwrap());
        assert_eq!(s.always_allowed_tools("m").unwrap(), vec!["send_email"]);
    }

    #[test]
    fn lookup_resolves_prefixes_and_reports_ambiguity() {
        let s = Store::open_in_memory().unwrap();
        let a = inserted(&s, &new("m", "t", None, None));
        assert!(matches!(s.lookup(&a.short_id, false).unwrap(), Lookup::Found(x) if x.id == a.id));
        assert!(
            matches!(s.lookup(&a.short_id[..4].to_uppercase(), false).unwrap(), Lookup::Found(x) if x.id == a.id)
        );
        assert!(matches!(
            s.lookup(&a.short_id[..3], false).unwrap(),
            Lookup::NotFound
        ));
        assert!(matches!(s.lookup(&a.id, false).unwrap(), Lookup::Found(_)));
        assert!(matches!(
            s.lookup("zzzz9999", false).unwrap(),
            Lookup::NotFound
        ));
        // Force two short ids with a common prefix.
        let b = inserted(&s, &new("m", "t", None, None));
        s.raw(&format!(
            "UPDATE approvals SET short_id = 'abcd2345' WHERE id = '{}'; \
             UPDATE approvals SET short_id = 'abcd6789' WHERE id = '{}'",
            a.id, b.id
        ))
        .unwrap();
        match s.lookup("abcd", false).unwrap() {
            Lookup::Ambiguous(ids) => assert_eq!(ids.len(), 2),
            other => panic!("{other:?}"),
        }
        assert!(matches!(s.lookup("abcd6", false).unwrap(), Lookup::Found(x) if x.id == b.id));
    }

    #[test]
    fn results_follow_the_lifecycle() {
        let s = Store::open_in_memory().unwrap();
        let a = inserted(&s, &new("m", "t", None, None));
        // Not approved yet: a result is refused.
        assert!(matches!(
            s.report(&a.id, Status::Succeeded, None, 2).unwrap(),
            Transition::AlreadySettled(_)
        ));
        s.decide(&a.id, &decision(Verb::Approve, "alice"), 3)
            .unwrap();
        assert!(matches!(
            s.report(&a.id, Status::Executing, None, 4).unwrap(),
            Transition::Done(_)
        ));
        assert!(
            matches!(s.report(&a.id, Status::Failed, Some("smtp 550"), 5).unwrap(), Transition::Done(x) if x.result_detail.as_deref() == Some("smtp 550"))
        );
        assert!(matches!(
            s.report(&a.id, Status::Succeeded, None, 6).unwrap(),
            Transition::AlreadySettled(_)
        ));
    }

    #[test]
    fn an_unreadable_row_does_not_stop_the_others_expiring() {
        let s = Store::open_in_memory().unwrap();
        let bad = inserted(&s, &new("m", "t", None, Some(100)));
        let good = inserted(&s, &new("m", "t", None, Some(100)));
        s.raw(&format!(
            "UPDATE approvals SET args = 'not json' WHERE id = '{}'",
            bad.id
        ))
        .unwrap();
        let expired = s.expire_due(200).unwrap();
        assert_eq!(expired.len(), 1);
        assert_eq!(expired[0].id, good.id);
        let status: String = s
            .read(|c| {
                c.query_row(
                    "SELECT status FROM approvals WHERE id = ?1",
                    params![bad.id],
                    |r| r.get(0),
                )
            })
            .unwrap();
        assert_eq!(status, "expired");
        assert!(
            s.expire_due(300).unwrap().is_empty(),
            "no pass is stuck on it"
        );
    }

    #[test]
    fn a_batch_commits_together_and_answers_each_request_in_order() {
        let s = Store::open_in_memory().unwrap();
        let batch = [
            new("m", "a", Some("k"), None),
            new("m", "b", None, None),
            new("m", "a", Some("k"), None),
            new("m", "other", Some("k"), None),
        ];
        let r = s.insert_batch(&batch);
        let first = match &r[0] {
            Ok(Inserted::New(a)) => a.id.clone(),
            other => panic!("{other:?}"),
        };
        assert!(matches!(&r[1], Ok(Inserted::New(a)) if a.tool == "b"));
        assert!(matches!(&r[2], Ok(Inserted::Existing(a)) if a.id == first));
        assert!(matches!(&r[3], Ok(Inserted::Conflict(_))));
        assert_eq!(s.list(None, 10).unwrap().len(), 2);
        assert!(s.verify_audit().unwrap().problems.is_empty());
    }
}
