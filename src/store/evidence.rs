//! Evidence: an agent's requests counted (what each figure means:
//! [`crate::trust::evidence`]), read from running summaries instead of the requests.
//!
//! 1. `evidence_totals` (all time) and `evidence_hours` (per hour of creation) hold how
//!    many requests have each key: agent, status, whether it asked a human, whether an
//!    owner's grant let it through, whether it was sent with low confidence
//!    (`migrations/sqlite/0028_evidence_summaries.sql`). Triggers keep them in the transaction
//!    that writes the request, so a view reads tens of rows, not an agent's million.
//! 2. A database upgraded with requests in it is built once, at the engine's start
//!    ([`Store::build_evidence`]): old requests get their low-confidence flag from the
//!    config's thresholds, then both summaries are counted from the requests.
//! 3. [`Store::recount_evidence`] counts every agent's figures from its requests again
//!    (the full count views used to make), compares them with the summaries and, unless
//!    only checking, rebuilds the summaries when they differ, with an audit row
//!    (`gatebot agents recount`).

use std::collections::BTreeSet;

use serde_json::json;

use super::audit::audit_tx;
use super::sql::{params, Conn, Row, Tx};
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

/// Both summaries counted from the requests: what the build and a repair write, one
/// statement after another in the caller's transaction.
const REBUILD: [&str; 5] = [
    "DELETE FROM evidence_totals",
    "DELETE FROM evidence_hours",
    "INSERT INTO evidence_totals (agent, status, asked, granted, low, n)
    SELECT agent, status, CASE WHEN ttl_ms IS NOT NULL THEN 1 ELSE 0 END,
           CASE WHEN grant_id IS NOT NULL THEN 1 ELSE 0 END,
           COALESCE(low_confidence, 0), COUNT(*)
    FROM approvals GROUP BY 1, 2, 3, 4, 5",
    "INSERT INTO evidence_hours (agent, hour, status, asked, granted, low, n)
    SELECT agent, created_at / 3600000, status, CASE WHEN ttl_ms IS NOT NULL THEN 1 ELSE 0 END,
           CASE WHEN grant_id IS NOT NULL THEN 1 ELSE 0 END,
           COALESCE(low_confidence, 0), COUNT(*)
    FROM approvals GROUP BY 1, 2, 3, 4, 5, 6",
    "UPDATE evidence_state SET built = 1 WHERE id = 1",
];

/// Writes both summaries again from the requests ([`REBUILD`]).
pub(super) fn rebuild(tx: &Tx<'_>) -> Result<()> {
    for sql in REBUILD {
        tx.execute(sql, params![])?;
    }
    Ok(())
}

/// The agents whose summary rows differ from their requests' (a key counted with
/// another `n`, missing, or left over), all time and per hour.
const DIFFERING_TOTALS: &str = "WITH want AS (
        SELECT agent, status, CASE WHEN ttl_ms IS NOT NULL THEN 1 ELSE 0 END AS asked,
               CASE WHEN grant_id IS NOT NULL THEN 1 ELSE 0 END AS granted,
               COALESCE(low_confidence, 0) AS low, COUNT(*) AS n
        FROM approvals GROUP BY 1, 2, 3, 4, 5),
    have AS (SELECT agent, status, asked, granted, low, n FROM evidence_totals WHERE n <> 0)
    SELECT agent FROM (SELECT * FROM want EXCEPT SELECT * FROM have) AS missing
    UNION SELECT agent FROM (SELECT * FROM have EXCEPT SELECT * FROM want) AS extra";
const DIFFERING_HOURS: &str = "WITH want AS (
        SELECT agent, created_at / 3600000 AS hour, status,
               CASE WHEN ttl_ms IS NOT NULL THEN 1 ELSE 0 END AS asked,
               CASE WHEN grant_id IS NOT NULL THEN 1 ELSE 0 END AS granted,
               COALESCE(low_confidence, 0) AS low, COUNT(*) AS n
        FROM approvals GROUP BY 1, 2, 3, 4, 5, 6),
    have AS (SELECT agent, hour, status, asked, granted, low, n FROM evidence_hours
             WHERE n <> 0)
    SELECT agent FROM (SELECT * FROM want EXCEPT SELECT * FROM have) AS missing
    UNION SELECT agent FROM (SELECT * FROM have EXCEPT SELECT * FROM want) AS extra";

/// What building the summaries of an upgraded database did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Built {
    /// Requests counted, and of them the ones whose low-confidence flag was set now.
    pub requests: u64,
    pub flagged: u64,
}

fn counts_of(r: &Row<'_>) -> Result<Counts> {
    let n = |i: usize| -> Result<u64> { Ok(r.get::<i64>(i)?.max(0) as u64) };
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
fn summed(conn: &Conn<'_>, agent: &str, since: i64) -> Result<Counts> {
    // The same text every call (SUMMED is a constant): kept prepared.
    if since <= 0 {
        conn.query_row(
            &format!("SELECT {SUMMED} FROM evidence_totals WHERE agent = ?1"),
            params![agent],
            counts_of,
        )
    } else {
        // Summed per key first: the figures' conditions then run on a few rows, not on
        // every hour of the window (3x faster over 30 days).
        conn.query_row(
            &format!(
                "SELECT {SUMMED} FROM (SELECT status, asked, granted, low, CAST(SUM(n) AS BIGINT) AS n \
                 FROM evidence_hours WHERE agent = ?1 AND hour >= ?2 \
                 GROUP BY status, asked, granted, low) AS per_key"
            ),
            params![agent, since.div_euclid(HOUR_MS)],
            counts_of,
        )
    }
}

fn counted(conn: &Conn<'_>, agent: &str, since: i64) -> Result<Counts> {
    conn.query_row(FROM_ROWS, params![agent, since], counts_of)
}

fn agents_of(conn: &Conn<'_>, sql: &str) -> Result<BTreeSet<String>> {
    Ok(conn
        .query_map(sql, params![], |r| r.get(0))?
        .into_iter()
        .collect())
}

impl Store {
    /// Counts `agent`'s requests (see [`crate::trust::evidence`] for what each count
    /// means): all time when `since` is 0, else those created from the start of the
    /// hour `since` falls in (a rolling window counted in whole hours). Read from the
    /// summaries: a few rows whatever the number of requests.
    pub fn evidence(&self, agent: &str, since: i64) -> Result<Counts> {
        self.read(|c| summed(c, agent, since))
    }

    /// The same counts as [`Store::evidence`], counted from every request of `agent`
    /// created at or after `since` (to the millisecond): what the summaries must equal.
    pub fn evidence_from_requests(&self, agent: &str, since: i64) -> Result<Counts> {
        self.read(|c| counted(c, agent, since))
    }

    /// Whether the summaries hold every request (false only in a database upgraded with
    /// requests in it, until [`Store::build_evidence`]).
    pub fn evidence_built(&self) -> Result<bool> {
        self.read(|c| {
            c.query_row(
                "SELECT built FROM evidence_state WHERE id = 1",
                params![],
                |r| r.get(0),
            )
        })
    }

    /// Builds the summaries of a database upgraded with requests in it, in one
    /// transaction: requests written before gatebot kept their low-confidence flag get
    /// it from `ask_human` (the agent's threshold in the config now), then both summaries
    /// are counted from the requests. `None` when they were built already.
    pub fn build_evidence(&self, ask_human: &dyn Fn(&str) -> f64) -> Result<Option<Built>> {
        self.write(|tx| {
            let built: bool = tx.query_row(
                "SELECT built FROM evidence_state WHERE id = 1",
                params![],
                |r| r.get(0),
            )?;
            if built {
                tx.discard();
                return Ok(None);
            }
            let agents: Vec<String> = tx.query_map(
                "SELECT DISTINCT agent FROM approvals WHERE low_confidence IS NULL",
                params![],
                |r| r.get(0),
            )?;
            let mut flagged = 0;
            for agent in &agents {
                // A request without a confidence was never blocked for it.
                tx.execute(
                    "UPDATE approvals SET low_confidence = COALESCE(confidence < ?2, 0) \
                     WHERE agent = ?1 AND low_confidence IS NULL",
                    params![agent, ask_human(agent)],
                )?;
                flagged += tx.query_row(
                    "SELECT COUNT(*) FROM approvals WHERE agent = ?1 AND low_confidence = 1",
                    params![agent],
                    |r| r.get::<i64>(0),
                )?;
            }
            rebuild(tx)?;
            let requests: i64 =
                tx.query_row("SELECT COUNT(*) FROM approvals", params![], |r| r.get(0))?;
            Ok(Some(Built {
                requests: requests as u64,
                flagged: flagged as u64,
            }))
        })
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
        // One snapshot: requests and summaries as one commit left them.
        let mut recount = self.read_snapshot(|c| {
            let mut differing = agents_of(c, DIFFERING_TOTALS)?;
            let hours = agents_of(c, DIFFERING_HOURS)?;
            differing.extend(hours.iter().cloned());
            let (requests, agents): (i64, i64) = c.query_row(
                "SELECT COUNT(*), COUNT(DISTINCT agent) FROM approvals",
                params![],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let differed = differing
                .into_iter()
                .map(|agent| {
                    Ok(Differed {
                        kept: summed(c, &agent, 0)?,
                        counted: counted(c, &agent, 0)?,
                        hours: hours.contains(&agent),
                        agent,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(Recount {
                requests: requests as u64,
                agents: agents as u64,
                differed,
                rebuilt: false,
            })
        })?;
        if check_only || recount.differed.is_empty() {
            return Ok(recount);
        }
        self.write(|tx| {
            // Counted from the requests as this transaction sees them: right whatever was
            // written since the comparison.
            rebuild(tx)?;
            audit_tx(
                tx,
                now,
                None,
                "evidence_recounted",
                Some(actor),
                Some(via),
                &json!({
                    "agents": recount.differed.iter().map(|d| &d.agent).collect::<Vec<_>>(),
                    "requests": recount.requests,
                }),
            )
        })?;
        recount.rebuilt = true;
        Ok(recount)
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    use super::*;
    use crate::approval::{Asked, Status, Verb};
    use crate::store::tests::{decision, inserted};
    use crate::store::{Day, Inserted, NewApproval, Transition};
    use crate::trust::Actor;

    /// xorshift64: the same sequence every run, without a crate.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        fn pick<'a, T>(&mut self, from: &'a [T]) -> Option<&'a T> {
            (!from.is_empty()).then(|| &from[self.below(from.len() as u64) as usize])
        }
    }

    const AGENTS: [&str; 4] = ["mailer", "coder", "intern", "scout"];
    /// 2023-11-14 22:13:20 UTC: not at a whole hour.
    const START: i64 = 1_700_000_000_000;

    /// `agent`'s days from `since` counted from its requests, as the chart counts them.
    fn days_from_requests(s: &Store, agent: &str, since: i64) -> Vec<Day> {
        s.writer(|c| {
            c.query_map(
                "SELECT created_at / 86400000, \
                 SUM(ttl_ms IS NOT NULL AND status IN ('approved', 'executing', 'succeeded', 'failed')), \
                 SUM(status = 'rejected'), \
                 SUM(status = 'expired') + SUM(COALESCE(low_confidence, 0)) \
                 FROM approvals WHERE agent = ?1 AND created_at >= ?2 GROUP BY 1 ORDER BY 1",
                params![agent, since],
                |r| {
                    Ok(Day {
                        day: r.get(0)?,
                        approved: r.get::<i64>(1)? as u64,
                        denied: r.get::<i64>(2)? as u64,
                        escalated: r.get::<i64>(3)? as u64,
                    })
                },
            )
        })
        .unwrap()
    }

    fn statuses(s: &Store) -> BTreeSet<String> {
        s.writer(|c| {
            c.query_map("SELECT DISTINCT status FROM approvals", params![], |r| {
                r.get(0)
            })
        })
        .unwrap()
        .into_iter()
        .collect()
    }

    /// Requests of several agents, asked, let through (some by owners' grants) and
    /// blocked, some sent with low confidence, through every way the store moves a
    /// request on (decisions that grant, denials, reports, cancels, withdrawals,
    /// expiries, a pause denying what waits): the summaries equal the full count for
    /// every agent, all time, over windows, and per day.
    #[test]
    fn the_summaries_equal_a_full_count_through_every_transition() {
        let s = Store::open_in_memory().unwrap();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut now = START;
        let mut requests: Vec<(String, String)> = Vec::new();
        let mut grants: Vec<(String, String)> = Vec::new();
        let alice = Actor {
            name: "alice".into(),
            via: Via::Cli,
        };
        for _ in 0..1500 {
            now += rng.below(20 * 60_000) as i64;
            let agent = AGENTS[rng.below(AGENTS.len() as u64) as usize];
            match rng.below(11) {
                0..=4 => {
                    let confidence = match rng.below(3) {
                        0 => None,
                        _ => Some(rng.below(100) as f64 / 100.0),
                    };
                    let sample = NewApproval::sample(agent, "t", None);
                    let ttl = 60_000 * (5 + rng.below(180) as i64);
                    let status = match rng.below(3) {
                        0 => Status::Pending,
                        1 => Status::Allowed,
                        _ => Status::Blocked,
                    };
                    let grant_id = grants
                        .iter()
                        .filter(|(_, a)| a == agent)
                        .map(|(g, _)| g.clone())
                        .next()
                        .filter(|_| status != Status::Pending && rng.below(2) == 0);
                    let new = NewApproval {
                        asked: Asked {
                            confidence,
                            ..sample.asked.clone()
                        },
                        status,
                        ttl_ms: (status == Status::Pending).then_some(ttl),
                        expires_at: (status == Status::Pending).then_some(now + ttl),
                        created_at: now,
                        grant_id,
                        low_confidence: confidence.is_some_and(|c| c < 0.5),
                        ..sample
                    };
                    if let Inserted::New(a) = s.insert(&new).unwrap() {
                        requests.push((a.id, agent.to_string()));
                    }
                }
                5 | 6 => {
                    // Mostly a recent request: more of those still wait.
                    let Some((id, _)) = rng
                        .pick(&requests[requests.len().saturating_sub(8)..])
                        .cloned()
                    else {
                        continue;
                    };
                    let verb =
                        [Verb::Approve, Verb::Deny, Verb::ApproveAlways][rng.below(3) as usize];
                    if let Transition::Done(a) =
                        s.decide(&id, &decision(verb, "alice"), now).unwrap()
                    {
                        if let Some(g) = s.grant_of_approval(&a.id).unwrap() {
                            grants.push((g.id, a.agent));
                        }
                    }
                }
                7 => {
                    let Some((id, _)) = rng.pick(&requests).cloned() else {
                        continue;
                    };
                    let to = [Status::Executing, Status::Succeeded, Status::Failed]
                        [rng.below(3) as usize];
                    let _ = s.report(&id, to, None, now);
                }
                8 => {
                    let Some((id, agent)) = rng
                        .pick(&requests[requests.len().saturating_sub(8)..])
                        .cloned()
                    else {
                        continue;
                    };
                    if rng.below(2) == 0 {
                        let _ = s.cancel(&id, &agent, now);
                    } else {
                        let _ = s.withdraw(&id, "gatebot", "its task ended", now);
                    }
                }
                9 => {
                    s.expire_due(now).unwrap();
                }
                _ => {
                    if rng.below(4) == 0 {
                        s.pause(agent, &alice, None, true, now).unwrap();
                        s.resume(agent, &alice, now).unwrap();
                    }
                }
            }
        }
        // Every status was reached, so every transition was taken.
        assert_eq!(statuses(&s).len(), 10, "{:?}", statuses(&s));
        for agent in AGENTS {
            let all = s.evidence(agent, 0).unwrap();
            assert_eq!(all, s.evidence_from_requests(agent, 0).unwrap(), "{agent}");
            assert!(all.requests > 100 && all.low_confidence > 0 && all.granted > 0);
            for since in [
                START + 1,
                START + 3 * HOUR_MS + 1234,
                now - 26 * HOUR_MS,
                now,
            ] {
                let hour = since.div_euclid(HOUR_MS) * HOUR_MS;
                assert_eq!(
                    s.evidence(agent, since).unwrap(),
                    s.evidence_from_requests(agent, hour).unwrap(),
                    "{agent} since {since}"
                );
            }
            let since = (START / 86_400_000 + 1) * 86_400_000;
            let days = s.evidence_days(agent, since).unwrap();
            assert!(days.len() > 2, "{days:?}");
            assert_eq!(days, days_from_requests(&s, agent, since), "{agent}");
        }
        let found = s.recount_evidence(true, "alice", &Via::Cli, now).unwrap();
        assert_eq!(found.differed, []);
        assert_eq!(found.agents, 4);
    }

    /// The rolling window starts at the start of the hour its start falls in.
    #[test]
    fn the_window_counts_whole_hours() {
        let s = Store::open_in_memory().unwrap();
        let hour = START.div_euclid(HOUR_MS) * HOUR_MS;
        let since = hour + 45 * 60_000;
        for at in [since - 30 * 60_000, since - 2 * HOUR_MS, since + 1] {
            inserted(
                &s,
                &NewApproval {
                    created_at: at,
                    ..NewApproval::sample("m", "t", Some(at + 1000))
                },
            );
        }
        // 30 minutes before the start is in (the hour began 45 minutes before it), two
        // hours before is not.
        assert_eq!(s.evidence("m", since).unwrap().requests, 2);
        assert_eq!(s.evidence("m", 0).unwrap().requests, 3);
    }

    /// A summary row changed behind gatebot's back: the check names the agent and
    /// changes nothing; the recount rebuilds from the requests and audits it.
    #[test]
    fn a_recount_finds_a_changed_summary_and_rebuilds_it() {
        let s = Store::open_in_memory().unwrap();
        for (agent, verb) in [
            ("m", Verb::Approve),
            ("m", Verb::Deny),
            ("n", Verb::Approve),
        ] {
            let a = inserted(&s, &NewApproval::sample(agent, "t", Some(START)));
            s.decide(&a.id, &decision(verb, "alice"), 1).unwrap();
        }
        let right = s.evidence("m", 0).unwrap();
        s.raw(
            "UPDATE evidence_totals SET n = n + 2 WHERE agent = 'm' AND status = 'rejected';
             DELETE FROM evidence_hours WHERE agent = 'n';",
        )
        .unwrap();
        assert_eq!(s.evidence("m", 0).unwrap().denied, 3);
        let check = s.recount_evidence(true, "alice", &Via::Cli, 5).unwrap();
        assert!(!check.rebuilt);
        let names: Vec<&str> = check.differed.iter().map(|d| d.agent.as_str()).collect();
        assert_eq!(names, ["m", "n"]);
        assert_eq!(
            check.differed[0].words(),
            "m: requests: 4 kept, 2 counted from its requests; asked a human: 4 kept, 2 counted \
             from its requests; denied: 3 kept, 1 counted from its requests; handled: 4 kept, 2 \
             counted from its requests"
        );
        assert_eq!(
            check.differed[1].words(),
            "n: its counts per hour (the recent window and the dashboard's chart) differed from \
             its requests, its all-time figures did not"
        );
        assert_eq!(
            s.evidence("m", 0).unwrap().denied,
            3,
            "a check changes nothing"
        );

        let fixed = s.recount_evidence(false, "alice", &Via::Cli, 6).unwrap();
        assert!(fixed.rebuilt);
        assert_eq!(s.evidence("m", 0).unwrap(), right);
        assert_eq!(s.evidence("n", 1).unwrap().approved, 1);
        let again = s.recount_evidence(true, "alice", &Via::Cli, 7).unwrap();
        assert_eq!(again.differed, []);
        let audited: (String, String) = s
            .read(|c| {
                c.query_row(
                    "SELECT actor, detail FROM audit WHERE event = 'evidence_recounted'",
                    params![],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
            })
            .unwrap();
        assert_eq!(audited.0, "alice");
        assert!(audited.1.contains(r#""agents":["m","n"]"#), "{}", audited.1);
    }

    /// A database at the migration before the summaries, with requests: opened, it is
    /// not built; built with the thresholds of the config, the summaries equal the full
    /// count, each old request flagged by its agent's threshold.
    #[test]
    fn an_upgraded_database_is_built_once_with_the_configs_thresholds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.db");
        {
            let mut conn = Connection::open(&path).unwrap();
            crate::store::migrations()
                .to_version(&mut conn, 27)
                .unwrap();
            let mut insert = conn
                .prepare(
                    "INSERT INTO approvals (id, short_id, agent, tool, args, status, risk_score, \
                     tool_class, risk_factors, policy_reason, confidence, ttl_ms, grant_id, \
                     created_at, decided_at) \
                     VALUES (?1, ?1, ?2, 't', '{}', ?3, 'low', 'read', '[]', 'x', ?4, ?5, ?6, ?7, ?7)",
                )
                .unwrap();
            // id, agent, status, confidence, ttl, grant.
            type Old<'a> = (
                &'a str,
                &'a str,
                &'a str,
                Option<f64>,
                Option<i64>,
                Option<&'a str>,
            );
            let rows: [Old<'_>; 8] = [
                ("a1", "m", "blocked", Some(0.2), None, None),
                ("a2", "m", "approved", Some(0.6), Some(1000), None),
                ("a3", "m", "rejected", None, Some(1000), None),
                ("a4", "m", "expired", Some(0.9), Some(1000), None),
                ("a5", "m", "succeeded", None, None, Some("g1")),
                ("a6", "s", "blocked", Some(0.6), None, None),
                ("a7", "s", "approved", Some(0.9), Some(1000), None),
                ("a8", "s", "failed", Some(0.1), None, Some("g2")),
            ];
            for (i, (id, agent, status, confidence, ttl, grant)) in rows.into_iter().enumerate() {
                insert
                    .execute(rusqlite::params![
                        id,
                        agent,
                        status,
                        confidence,
                        ttl,
                        grant,
                        START + i as i64 * HOUR_MS
                    ])
                    .unwrap();
            }
        }
        let s = Store::open(&path).unwrap();
        assert!(!s.evidence_built().unwrap());
        // `m` asks a human below 0.5; `s` (a stranger) below 0.7.
        let threshold = |agent: &str| if agent == "m" { 0.5 } else { 0.7 };
        let built = s.build_evidence(&threshold).unwrap().unwrap();
        assert_eq!((built.requests, built.flagged), (8, 3));
        assert!(s.evidence_built().unwrap());
        assert_eq!(s.build_evidence(&threshold).unwrap(), None, "built once");
        for agent in ["m", "s"] {
            let c = s.evidence(agent, 0).unwrap();
            assert_eq!(c, s.evidence_from_requests(agent, 0).unwrap(), "{agent}");
            assert_eq!(
                c,
                s.evidence(agent, START - 1).unwrap(),
                "every hour is in the hourly summary"
            );
        }
        let m = s.evidence("m", 0).unwrap();
        assert_eq!(
            (
                m.requests,
                m.low_confidence,
                m.approved,
                m.denied,
                m.expired
            ),
            (5, 1, 1, 1, 1)
        );
        assert_eq!((m.granted, m.granted_succeeded, m.handled), (1, 1, 3));
        let st = s.evidence("s", 0).unwrap();
        assert_eq!(
            (st.requests, st.low_confidence, st.granted_failed),
            (3, 2, 1)
        );
        // New requests are counted as they are written, on top.
        inserted(&s, &NewApproval::sample("m", "t", Some(START)));
        assert_eq!(s.evidence("m", 0).unwrap().pending, 1);
        assert_eq!(
            s.recount_evidence(true, "a", &Via::Cli, 1)
                .unwrap()
                .differed,
            []
        );
    }

    /// The agent's view reads indexes, never every request of the agent (the store
    /// names them with INDEXED BY, which fails rather than scan).
    #[test]
    fn an_agents_view_reads_no_request_table_scan() {
        let s = Store::open_in_memory().unwrap();
        assert_eq!(s.count_pending_of("m").unwrap(), 0);
        assert!(s.latest_decisions("m", 10).unwrap().is_empty());
        if s.is_postgres() {
            // SQLite's query plans, which INDEXED BY pins there; PostgreSQL plans by its
            // statistics and has no such hint.
            return;
        }
        for sql in [
            "SELECT status = 'rejected' FROM approvals WHERE agent = ?1 AND ttl_ms IS NOT NULL \
             AND decided_at IS NOT NULL \
             AND status IN ('approved', 'executing', 'succeeded', 'failed', 'rejected') \
             ORDER BY decided_at DESC, id DESC LIMIT 10",
            "SELECT COUNT(*) FROM approvals WHERE agent = ?1 AND status = 'pending'",
        ] {
            let plan: Vec<String> = s
                .writer(|c| {
                    c.once()
                        .query_map(&format!("EXPLAIN QUERY PLAN {sql}"), params!["m"], |r| {
                            r.get(3)
                        })
                })
                .unwrap();
            let plan = plan.join("; ");
            assert!(
                plan.contains("approvals_decisions") || plan.contains("approvals_pending_agent"),
                "{sql}: {plan}"
            );
            assert!(!plan.contains("TEMP B-TREE"), "{sql}: {plan}");
        }
    }
}
