//! Budgets: what requests and inbox tasks cost, summed per agent and for everyone per
//! day and month ([`crate::budget`] says which day and month), checked in the
//! transaction that lets a request through, and the warnings given.
//!
//! 1. A request's declared cost is kept with it (`cost`); when it is allowed (at
//!    insert) or approved (at decision) it begins to count (`spent_at`), in the same
//!    transaction that checked it fits: two requests that fit alone but not together
//!    cannot both be let through, since the store's transactions run one at a time.
//! 2. A result's reported cost takes the place of the declared one (`reported_cost`);
//!    a task's `cost_usd` counts at its `finished_at`.
//! 3. Requests' spend is also added up per day and agent (`spend_days`, days in the
//!    budget's time zone) in those transactions, so a check reads at most a month of
//!    days, not every costed request; tasks' costs are few and summed from `tasks`.
//!    When the time zone changes, or budgets are turned on, [`Store::set_budgets`]
//!    counts the current month's days again from the requests.
//! 4. A warning is given once per budget and period: its `budget_warnings` row.

use std::sync::{Arc, RwLock};

use serde_json::json;

use super::approval_row::get_conn;
use super::audit::audit_tx;
use super::sql::{params, Conn, Tx};
use super::{Result, Store};
use crate::approval::{Approval, Decision, Status, Via};
use crate::budget::{Budgets, Overdraft, Periods, Spend, Warning};

/// The budgets in force, as the engine last set them.
#[derive(Debug, Default)]
pub(super) struct InForce(RwLock<Option<Arc<Budgets>>>);

impl InForce {
    fn get(&self) -> Option<Arc<Budgets>> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// What was spent in `periods`, by `agent` and by everyone.
pub(super) fn spend_conn(conn: &Conn<'_>, agent: &str, periods: &Periods) -> Result<Spend> {
    let (day_start, day_end) = periods.day;
    let (month_start, month_end) = periods.month;
    let month_first = format!("{}-01", periods.month_key);
    conn.query_row(
        "SELECT \
               COALESCE(SUM(CASE WHEN agent = ?1 AND today THEN amount END), 0), \
               COALESCE(SUM(CASE WHEN agent = ?1 THEN amount END), 0), \
               COALESCE(SUM(CASE WHEN today THEN amount END), 0), \
               COALESCE(SUM(amount), 0) \
             FROM ( \
               SELECT day = ?2 AS today, agent, amount FROM spend_days \
                 WHERE day >= ?3 AND day <= ?2 \
               UNION ALL \
               SELECT finished_at >= ?4 AND finished_at < ?5, agent, cost_usd FROM tasks \
                 WHERE cost_usd IS NOT NULL AND finished_at >= ?6 AND finished_at < ?7) AS spent",
        params![
            agent,
            periods.day_key,
            month_first,
            day_start,
            day_end,
            month_start,
            month_end
        ],
        |r| {
            Ok(Spend {
                agent_day: r.get(0)?,
                agent_month: r.get(1)?,
                all_day: r.get(2)?,
                all_month: r.get(3)?,
            })
        },
    )
}

/// Adds `amount` to what `agent` spent on the day `at` falls in (nothing while no
/// budgets are in force: the days are counted again when they are turned on).
fn add_spend_tx(
    tx: &Tx<'_>,
    budgets: Option<&Budgets>,
    agent: &str,
    at: i64,
    amount: f64,
) -> Result<()> {
    let Some(b) = budgets else {
        return Ok(());
    };
    if amount == 0.0 {
        return Ok(());
    }
    tx.execute(
        "INSERT INTO spend_days (day, agent, amount) VALUES (?1, ?2, ?3) \
         ON CONFLICT (day, agent) DO UPDATE SET amount = spend_days.amount + excluded.amount",
        params![b.day_key(at), agent, amount],
    )?;
    Ok(())
}

/// Counts the days of the current month (in `b`'s time zone) again from the requests'
/// spend, and records the time zone they are in.
fn recount_tx(tx: &Tx<'_>, b: &Budgets, now: i64) -> Result<()> {
    tx.execute("DELETE FROM spend_days", params![])?;
    let month_start = b.periods(now).month.0;
    let rows: Vec<(i64, String, f64)> = tx.query_map(
        "SELECT spent_at, agent, COALESCE(reported_cost, cost, 0) FROM approvals \
         WHERE spent_at >= ?1",
        params![month_start],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    for (at, agent, amount) in rows {
        add_spend_tx(tx, Some(b), &agent, at, amount)?;
    }
    tx.execute(
        "INSERT INTO budget_state (key, value) VALUES ('timezone', ?1) \
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        params![b.timezone_name],
    )?;
    Ok(())
}

/// Why a new request of `agent` (with `status` as the policy judged it) whose declared
/// cost is `cost` must be blocked under the budgets in force: its cost does not fit
/// what is left (the figures), so it is never queued for a human to approve into
/// overdraft. `None` when it fits, declares no cost, or no budget applies.
pub(super) fn over_budget_tx(
    tx: &Tx<'_>,
    budgets: Option<&Budgets>,
    agent: &str,
    status: Status,
    cost: Option<f64>,
    at: i64,
) -> Result<Option<String>> {
    let (Some(b), Some(cost)) = (budgets, cost) else {
        return Ok(None);
    };
    if !matches!(status, Status::Allowed | Status::Pending) || !b.apply_to(agent) {
        return Ok(None);
    }
    let spend = spend_conn(tx, agent, &b.periods(at))?;
    Ok(b.check(agent, &spend, cost)
        .err()
        .map(|over| over_budget(&over)))
}

/// A refusal's reason: "over budget: it would cost …".
fn over_budget(over: &Overdraft) -> String {
    format!("over budget: {over}")
}

/// Keeps the declared `cost` of `agent`'s new request `id`; an allowed one counts
/// from its creation (`allowed_at`).
pub(super) fn record_cost_tx(
    tx: &Tx<'_>,
    budgets: Option<&Budgets>,
    id: &str,
    agent: &str,
    cost: Option<f64>,
    allowed_at: Option<i64>,
) -> Result<()> {
    let Some(cost) = cost else {
        return Ok(());
    };
    tx.execute(
        "UPDATE approvals SET cost = ?2, spent_at = ?3 WHERE id = ?1",
        params![id, cost, allowed_at],
    )?;
    if let Some(at) = allowed_at {
        add_spend_tx(tx, budgets, agent, at, cost)?;
    }
    Ok(())
}

/// Why approving the pending request `id` now would overdraw a budget, if it would:
/// the approval is refused and audited (`decision_refused`, with the figures), and the
/// request stays pending. `None`: it fits, it declares no cost, or no budget applies.
pub(super) fn approval_refused_tx(
    tx: &Tx<'_>,
    budgets: Option<&Budgets>,
    id: &str,
    decision: &Decision,
    now: i64,
) -> Result<Option<(Approval, String)>> {
    let Some(b) = budgets else {
        return Ok(None);
    };
    let cost: Option<(String, f64)> = tx.query_opt(
        "SELECT agent, cost FROM approvals WHERE id = ?1 AND status = 'pending' \
         AND cost IS NOT NULL AND (expires_at IS NULL OR expires_at > ?2)",
        params![id, now],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let Some((agent, cost)) = cost else {
        return Ok(None);
    };
    if !b.apply_to(&agent) {
        return Ok(None);
    }
    let spend = spend_conn(tx, &agent, &b.periods(now))?;
    let Err(over) = b.check(&agent, &spend, cost) else {
        return Ok(None);
    };
    let why = over_budget(&over);
    audit_tx(
        tx,
        now,
        Some(id),
        "decision_refused",
        Some(&decision.actor),
        Some(&decision.via),
        &json!({
            "attempted": decision.verb,
            "status": "pending",
            "reason": why,
            "budget": over.budget.key(),
            "cost": cost,
            "spent": over.budget.spent,
            "limit": over.budget.limit,
        }),
    )?;
    let a = get_conn(tx, id)?.ok_or_else(|| super::StoreError::Corrupt(id.to_string()))?;
    Ok(Some((a, why)))
}

/// An approved request's declared cost counts from now.
pub(super) fn reserve_tx(tx: &Tx<'_>, budgets: Option<&Budgets>, id: &str, now: i64) -> Result<()> {
    let declared: Option<(String, f64)> = tx.query_opt(
        "SELECT agent, cost FROM approvals WHERE id = ?1 AND cost IS NOT NULL \
         AND spent_at IS NULL",
        params![id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let Some((agent, cost)) = declared else {
        return Ok(());
    };
    tx.execute(
        "UPDATE approvals SET spent_at = ?2 WHERE id = ?1",
        params![id, now],
    )?;
    add_spend_tx(tx, budgets, &agent, now, cost)
}

impl Store {
    /// The budgets to check from now on (`None`: none), from the config in force. When
    /// their time zone is not the one `spend_days` is kept in (or budgets were off), the
    /// current month's days are counted again first, in one transaction, while no other
    /// call runs.
    /// They are in force even if counting fails (the error is returned): against the
    /// days as they were last counted.
    pub fn set_budgets(&self, budgets: Option<Arc<Budgets>>, now: i64) -> Result<()> {
        self.writer(|w| {
            let counted = w.write(|tx| Self::recount(tx, budgets.as_deref(), now));
            *self.budgets.0.write().unwrap_or_else(|e| e.into_inner()) = budgets;
            counted
        })
    }

    /// [`Store::set_budgets`]' counting, in its transaction.
    fn recount(tx: &Tx<'_>, budgets: Option<&Budgets>, now: i64) -> Result<()> {
        let kept: Option<String> = tx.query_opt(
            "SELECT value FROM budget_state WHERE key = 'timezone'",
            params![],
            |r| r.get(0),
        )?;
        match budgets {
            Some(b) if kept.as_deref() != Some(b.timezone_name.as_str()) => {
                recount_tx(tx, b, now)?;
            }
            Some(_) => {}
            // Not kept while off: counted again when budgets are turned on.
            None => {
                tx.execute("DELETE FROM budget_state WHERE key = 'timezone'", params![])?;
            }
        }
        Ok(())
    }

    /// The budgets in force.
    pub(super) fn budgets(&self) -> Option<Arc<Budgets>> {
        self.budgets.get()
    }

    /// What was spent in the day and the month `now` falls in, by `agent` and by
    /// everyone; `None` without budgets.
    pub fn spend(&self, agent: &str, now: i64) -> Result<Option<(Arc<Budgets>, Spend)>> {
        self.writer(|w| {
            let Some(b) = self.budgets() else {
                return Ok(None);
            };
            let spend = spend_conn(w, agent, &b.periods(now))?;
            Ok(Some((b, spend)))
        })
    }

    /// Records the cost a result of request `id` reported: it takes the place of what
    /// the request declared, and counts from now if it did not count already. Audited.
    /// `None` if no allowed or approved request has the id.
    pub fn report_cost(&self, id: &str, cost: f64, now: i64) -> Result<Option<Approval>> {
        self.write(|tx| {
            let budgets = self.budgets();
            // What it counted so far, and since when.
            let before: Option<(String, Option<i64>, f64)> = tx.query_opt(
                "SELECT agent, spent_at, CASE WHEN spent_at IS NULL THEN 0 \
                 ELSE COALESCE(reported_cost, cost, 0) END FROM approvals WHERE id = ?1",
                params![id],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?;
            let changed = tx.execute(
                "UPDATE approvals SET reported_cost = ?2, spent_at = COALESCE(spent_at, ?3) \
                 WHERE id = ?1 AND status IN ('approved', 'allowed', 'executing', 'succeeded', \
                 'failed')",
                params![id, cost, now],
            )?;
            if changed == 0 {
                tx.discard();
                return Ok(None);
            }
            if let Some((agent, spent_at, counted)) = before {
                add_spend_tx(
                    tx,
                    budgets.as_deref(),
                    &agent,
                    spent_at.unwrap_or(now),
                    cost - counted,
                )?;
            }
            let a = get_conn(tx, id)?.ok_or_else(|| super::StoreError::Corrupt(id.to_string()))?;
            audit_tx(
                tx,
                now,
                Some(id),
                "cost_reported",
                Some(&a.agent),
                Some(&Via::Api),
                &json!({ "cost": cost }),
            )?;
            Ok(Some(a))
        })
    }

    /// The warnings `agent`'s spend gives now that were not given yet this period:
    /// each recorded (so it is given once) and audited in one transaction.
    pub fn budget_warnings(&self, agent: &str, now: i64) -> Result<Vec<Warning>> {
        self.writer(|w| {
            let Some(b) = self.budgets() else {
                return Ok(Vec::new());
            };
            if !b.apply_to(agent) {
                return Ok(Vec::new());
            }
            w.write(|tx| {
                let periods = b.periods(now);
                let spend = spend_conn(tx, agent, &periods)?;
                let mut given = Vec::new();
                for w in b.warnings(agent, &spend, &periods) {
                    let new = tx.execute(
                        "INSERT INTO budget_warnings (budget, period, spent, at) \
                         VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
                        params![w.budget.key(), w.period, w.budget.spent, now],
                    )?;
                    if new == 0 {
                        continue;
                    }
                    audit_tx(
                        tx,
                        now,
                        None,
                        "budget_warning",
                        None,
                        Some(&Via::System),
                        &json!({
                            "budget": w.budget.key(),
                            "period": w.period,
                            "spent": w.budget.spent,
                            "limit": w.budget.limit,
                            "warn_at": w.warn_at,
                        }),
                    )?;
                    given.push(w);
                }
                Ok(given)
            })
        })
    }
}
