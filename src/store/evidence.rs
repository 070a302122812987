//! Evidence: an agent's requests counted (what each figure means:
//! [`crate::trust::evidence`]), read from running summaries instead of the requests.
//!
//! 1. `evidence_totals` (all time) and `evidence_hours` (per hour of creation) hold how
//!    many requests have each key: agent, status, whether it asked a human, whether an
//!    owner's grant let it through, whether it was sent with low confidence
//!    (`migrations/0028_evidence_summaries.sql`). Triggers keep them in the transaction
//!    that writes the request, so a view reads tens of rows, not an agent's million.
//! 2. A database upgraded with requests in it is built once, at the engine's start
//!    ([`Store::build_evidence`]): old requests get their low-confidence flag from the
//!    config's thresholds, then both summaries are counted from the requests.
//! 3. [`Store::recount_evidence`] counts every agent's figures from its requests again
//!    (the full count views used to make), compares them with the summaries and, unless
//!    only checking, rebuilds the summaries when they differ, with an audit row
//!    (`gatebot agents recount`).

use std::collections::BTreeSet;

use rusqlite::{params, Connection};
use serde_json::json;

use super::audit::audit_tx;
use super::{Result, Store};
use crate::approval::Via;
use crate::trust::evidence::{Counts, Differed, Recount};

/// An hour in Unix milliseconds: the rolling window starts at a whole hour.
pub const HOUR_MS: i64 = 3_600_000;

/// Every figure of [`Counts`], in its order, summed over summary rows (`n` requests of
/// each key). The same conditions as [`FROM_ROWS`], on the key's columns.
const SUMMED: &str = "COALESCE(SUM(n), 0), \
    COALESCE(SUM(n * (asked = 0 AND status IN ('allowed', 'executing', 'succeeded', 'failed'))), 0), \
    COALESCE(SUM(n * (status = 'blocked')), 0), \
    COALESCE(SUM(n * asked), 0), \
    COALESCE(SUM(n * (asked = 1 AND status IN ('approved', 'executing', 'succeeded', 'failed'))), 0), \
    COALESCE(SUM(n * (status = 'rejected')), 0), \
    COALESCE(SUM(n * (status = 'expired')), 0), \
    COALESCE(SUM(n * (status = 'cancelled')), 0), \
    COALESCE(SUM(n * (status = 'pending')), 0), \
    COALESCE(SUM(n * (status = 'succeeded')), 0), \
    COALESCE(SUM(n * (status = 'failed')), 0), \
    COALESCE(SUM(n * low), 0), \
    COALESCE(SUM(n * (asked = 0 AND granted = 1)), 0), \
    COALESCE(SUM(n * (asked = 0 AND granted = 1 AND status = 'succeeded')), 0), \
    COALESCE(SUM(n * (asked = 0 AND granted = 1 AND status = 'failed')), 0), \
    COALESCE(SUM(n * (asked = 0 AND granted = 0 AND status IN ('succeeded', 'failed'))), 0), \
    COALESCE(SUM(n * ((asked = 1 AND status IN ('approved', 'executing', 'succeeded', 'failed', 'rejected')) \
        OR (asked = 0 AND granted = 1 AND status IN ('succeeded', 'failed')))), 0), \
    COALESCE(SUM(n * ((asked = 1 AND status IN ('approved', 'executing', 'succeeded')) \
        OR (asked = 0 AND granted = 1 AND status = 'succeeded'))), 0)";

/// The full count over an agent's requests created at or after `?2`: what every view
/// read before the summaries, kept as the recount that proves them.
///
/// `ttl_ms` is set exactly for requests that asked a human: the engine gives a deadline
/// only to pending ones. `grant_id` is set exactly for requests an owner's grant let
/// through. An agent's report counts only on those two kinds: on a call nobody was
/// asked about it is the agent's own word.
const FROM_ROWS: &str = "SELECT COUNT(*), \
    COALESCE(SUM(ttl_ms IS NULL AND status IN ('allowed', 'executing', 'succeeded', 'failed')), 0), \
    COALESCE(SUM(status = 'blocked'), 0), \
    COALESCE(SUM(ttl_ms IS NOT NULL), 0), \
    COALESCE(SUM(ttl_ms IS NOT NULL AND status IN ('approved', 'executing', 'succeeded', 'failed')), 0), \
    COALESCE(SUM(status = 'rejected'), 0), \
    COALESCE(SUM(status = 'expired'), 0), \
    COALESCE(SUM(status = 'cancelled'), 0), \
    COALESCE(SUM(status = 'pending'), 0), \
    COALESCE(SUM(status = 'succeeded'), 0), \
    COALESCE(SUM(status = 'failed'), 0), \
    COALESCE(SUM(COALESCE(low_confidence, 0)), 0), \
    COALESCE(SUM(ttl_ms IS NULL AND grant_id IS NOT NULL), 0), \
    COALESCE(SUM(ttl_ms IS NULL AND grant_id IS NOT NULL AND status = 'succeeded'), 0), \
    COALESCE(SUM(ttl_ms IS NULL AND grant_id IS NOT NULL AND status = 'failed'), 0), \
    COALESCE(SUM(ttl_ms IS NULL AND grant_id IS NULL AND status IN ('succeeded', 'failed')), 0), \
    COALESCE(SUM((ttl_ms IS NOT NULL AND status IN ('approved', 'executing', 'succeeded', 'failed', 'rejected')) \
        OR (ttl_ms IS NULL AND grant_id IS NOT NULL AND status IN ('succeeded', 'failed'))), 0), \
    COALESCE(SUM((ttl_ms IS NOT NULL AND status IN ('approved', 'executing', 'succeeded')) \
        OR (ttl_ms IS NULL AND grant_id IS NOT NULL AND status = 'succeeded')), 0) \
    FROM approvals WHERE agent = ?1 AND created_at >= ?2";

/// Both summaries counted from the requests: what the build and a repair write.
const REBUILD: &str = "DELETE FROM evidence_totals;
    DELETE FROM evidence_hours;
    INSERT INTO evidence_totals (agent, status, asked, granted, low, n)
    SELECT agent, status, ttl_ms IS NOT NULL, grant_id IS NOT NULL,
           COALESCE(low_confidence, 0), COUNT(*)
    FROM approvals GROUP BY 1, 2, 3, 4, 5;
    INSERT INTO evidence_hours (agent, hour, status, asked, granted, low, n)
    SELECT agent, created_at / 3600000, status, ttl_ms IS NOT NULL, grant_id IS NOT NULL,
           COALESCE(low_confidence, 0), COUNT(*)
    FROM approvals GROUP BY 1, 2, 3, 4, 5, 6;
    UPDATE evidence_state SET built = 1 WHERE id = 1;";

/// The agents whose summary rows differ from their requests' (a key counted with
/// another `n`, missing, or left over), all time and per hour.
const DIFFERING_TOTALS: &str = "WITH want AS (
        SELECT agent, status, ttl_ms IS NOT NULL AS asked, grant_id IS NOT NULL AS granted,
               COALESCE(low_confidence, 0) AS low, COUNT(*) AS n
        FROM approvals GROUP BY 1, 2, 3, 4, 5),
    have AS (SELECT agent, status, asked, granted, low, n FROM evidence_totals WHERE n <> 0)
    SELECT agent FROM (SELECT * FROM want EXCEPT SELECT * FROM have)
    UNION SELECT agent FROM (SELECT * FROM have EXCEPT SELECT * FROM want)";
const DIFFERING_HOURS: &str = "WITH want AS (
        SELECT agent, created_at / 3600000 AS hour, status, ttl_ms IS NOT NULL AS asked,
               grant_id IS NOT NULL AS granted, COALESCE(low_confidence, 0) AS low,
               COUNT(*) AS n
        FROM approvals GROUP BY 1, 2, 3, 4, 5, 6),
    have AS (SELECT agent, hour, status, asked, granted, low, n FROM evidence_hours
             WHERE n <> 0)
    SELECT agent FROM (SELECT * FROM want EXCEPT SELECT * FROM have)
    UNION SELECT agent FROM (SELECT * FROM have EXCEPT SELECT * FROM want)";

/// What building the summaries of an upgraded database did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Built {
    /// Requests counted, and of them the ones whose low-confidence flag was set now.
    pub requests: u64,
    pub flagged: u64,
}

fn counts_of(r: &rusqlite::Row<'_>) -> rusqlite::Result<Counts> {
    let n = |i: usize| -> rusqlite::Result<u64> { Ok(r.get::<_, i64>(i)?.max(0) as u64) };
    Ok(Counts {
        requests: n(0)?,
        allowed: n(1)?,
        blocked: n(2)?,
        asked: n(3)?,
        approved: n(4)?,
        denied: n(5)?,
        expired: n(6)?,
        cancelled: n(7)?,
        pending: n(8)?,
        succeeded: n(9)?,
        failed: n(10)?,
        low_confidence: n(11)?,
        granted: n(12)?,
        granted_succeeded: n(13)?,
        granted_failed: n(14)?,
        unvouched_reports: n(15)?,
        handled: n(16)?,
        positive: n(17)?,
    })
}

/// `agent`'s counts from the summaries: all time when `since` is 0 or less, else from
/// the start of the hour `since` falls in.
fn summed(conn: &Connection, agent: &str, since: i64) -> Result<Counts> {
    let counts = if since <= 0 {
        conn.prepare_cached(&format!(
            "SELECT {SUMMED} FROM evidence_totals WHERE agent = ?1"
        ))?
        .query_row([agent], counts_of)?
    } else {
        conn.prepare_cached(&format!(
            "SELECT {SUMMED} FROM evidence_hours WHERE agent = ?1 AND hour >= ?2"
        ))?
        .query_row(params![agent, since.div_euclid(HOUR_MS)], counts_of)?
    };
    Ok(counts)
}

fn counted(conn: &Connection, agent: &str, since: i64) -> Result<Counts> {
    Ok(conn
        .prepare_cached(FROM_ROWS)?
        .query_row(params![agent, since], counts_of)?)
}

fn agents_of(conn: &Connection, sql: &str) -> Result<BTreeSet<String>> {
    let mut stmt = conn.prepare(sql)?;
    let rows = stmt.query_map([], |r| r.get(0))?;
    Ok(rows.collect::<std::result::Result<_, _>>()?)
}

impl Store {
    /// Counts `agent`'s requests (see [`crate::trust::evidence`] for what each count
    /// means): all time when `since` is 0, else those created from the start of the
    /// hour `since` falls in (a rolling window counted in whole hours). Read from the
    /// summaries: a few rows whatever the number of requests.
    pub fn evidence(&self, agent: &str, since: i64) -> Result<Counts> {
        summed(&self.read(), agent, since)
    }

    /// The same counts as [`Store::evidence`], counted from every request of `agent`
    /// created at or after `since` (to the millisecond): what the summaries must equal.
    pub fn evidence_from_requests(&self, agent: &str, since: i64) -> Result<Counts> {
        counted(&self.read(), agent, since)
    }

    /// Whether the summaries hold every request (false only in a database upgraded with
    /// requests in it, until [`Store::build_evidence`]).
    pub fn evidence_built(&self) -> Result<bool> {
        Ok(self
            .read()
            .prepare_cached("SELECT built FROM evidence_state WHERE id = 1")?
            .query_row([], |r| r.get(0))?)
    }

    /// Builds the summaries of a database upgraded with requests in it, in one
    /// transaction: requests written before gatebot kept their low-confidence flag get
    /// it from `ask_human` (the agent's threshold in the config now), then both summaries
    /// are counted from the requests. `None` when they were built already.
    pub fn build_evidence(&self, ask_human: &dyn Fn(&str) -> f64) -> Result<Option<Built>> {
        let mut conn = self.lock();
        let tx = conn.transaction()?;
        let built: bool = tx
            .prepare_cached("SELECT built FROM evidence_state WHERE id = 1")?
            .query_row([], |r| r.get(0))?;
        if built {
            return Ok(None);
        }
        let agents: Vec<String> = {
            let mut stmt =
                tx.prepare("SELECT DISTINCT agent FROM approvals WHERE low_confidence IS NULL")?;
            let rows = stmt.query_map([], |r| r.get(0))?;
            rows.collect::<std::result::Result<_, _>>()?
        };
        let mut flagged = 0;
        for agent in &agents {
            // A request without a confidence was never blocked for it.
            tx.prepare_cached(
                "UPDATE approvals SET low_confidence = COALESCE(confidence < ?2, 0) \
                 WHERE agent = ?1 AND low_confidence IS NULL",
            )?
            .execute(params![agent, ask_human(agent)])?;
            flagged += tx
                .prepare_cached(
                    "SELECT COUNT(*) FROM approvals WHERE agent = ?1 AND low_confidence = 1",
                )?
                .query_row([agent], |r| r.get::<_, i64>(0))?;
        }
        tx.execute_batch(REBUILD)?;
        let requests: i64 = tx.query_row("SELECT COUNT(*) FROM approvals", [], |r| r.get(0))?;
        tx.commit()?;
        Ok(Some(Built {
            requests: requests as u64,
            flagged: flagged as u64,
        }))
    }

    /// Counts every agent's evidence from its requests again and compares it with the
    /// summaries. Unless `check_only`, summaries that differ are rebuilt from the
    /// requests in one transaction, audited as `evidence_recounted` (by `actor`, with
    /// the agents that differed).
    pub fn recount_evidence(
        &self,
        check_only: bool,
        actor: &str,
        via: &Via,
        now: i64,
    ) -> Result<Recount> {
        let mut recount = {
            let conn = self.read();
            // One snapshot: requests and summaries as one commit left them.
            let tx = conn.unchecked_transaction()?;
            let mut differing = agents_of(&tx, DIFFERING_TOTALS)?;
            let hours = agents_of(&tx, DIFFERING_HOURS)?;
            differing.extend(hours.iter().cloned());
            let (requests, agents): (i64, i64) = tx.query_row(
                "SELECT COUNT(*), COUNT(DISTINCT agent) FROM approvals",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let differed = differing
                .into_iter()
                .map(|agent| {
                    Ok(Differed {
                        kept: summed(&tx, &agent, 0)?,
                        counted: counted(&tx, &agent, 0)?,
                        hours: hours.contains(&agent),
                        agent,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            tx.rollback()?;
            Recount {
                requests: requests as u64,
                agents: agents as u64,
                differed,
                rebuilt: false,
            }
        };
        if check_only || recount.differed.is_empty() {
            return Ok(recount);
        }
        let mut conn = self.lock();
        let tx = conn.transaction()?;
        // Counted from the requests as this transaction sees them: right whatever was
        // written since the comparison.
        tx.execute_batch(REBUILD)?;
        audit_tx(
            &tx,
            now,
            None,
            "evidence_recounted",
            Some(actor),
            Some(via),
            &json!({
                "agents": recount.differed.iter().map(|d| &d.agent).collect::<Vec<_>>(),
                "requests": recount.requests,
            }),
        )?;
        tx.commit()?;
        recount.rebuilt = true;
        Ok(recount)
    }
}
