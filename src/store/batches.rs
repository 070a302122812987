//! Batches asked in chats (`chat_batches`): "approve all 3 from deployer" is answered
//! with a confirmation that lists the requests; the row keeps exactly those, so the
//! confirmation's buttons (which name the row) decide them and no others. A batch
//! ends once: confirmed or cancelled, in one statement that only an open, unexpired
//! batch passes, so a second tap decides nothing twice.
//!
//! Also the pending requests counted per agent, what a batch would cover: `/pending`
//! and digests offer a batch for each agent with several.

use super::chat::Among;
use super::sql::{params, Row};
use super::{new_id, Result, Store, StoreError};
use crate::policy::RiskScore;
use crate::subject::AgentPending;

/// A batch to record, as its confirmation lists it.
#[derive(Debug, Clone)]
pub struct NewBatch {
    pub platform: String,
    pub chat: String,
    pub agent: String,
    pub approve: bool,
    /// A denial's reason, when it was typed with the batch.
    pub reason: Option<String>,
    /// The full ids of the requests listed, oldest first.
    pub requests: Vec<String>,
    /// Critical requests an approval leaves out.
    pub left_out: usize,
    /// Who asked for it.
    pub asked_by: String,
    pub now: i64,
    pub expires_at: i64,
}

/// Where a batch stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchState {
    /// Shown, not yet confirmed or cancelled.
    Open,
    /// Confirmed: its requests were decided.
    Done,
    Cancelled,
}

impl BatchState {
    fn as_str(self) -> &'static str {
        match self {
            BatchState::Open => "open",
            BatchState::Done => "done",
            BatchState::Cancelled => "cancelled",
        }
    }

    fn parse(s: &str) -> Result<BatchState> {
        match s {
            "open" => Ok(BatchState::Open),
            "done" => Ok(BatchState::Done),
            "cancelled" => Ok(BatchState::Cancelled),
            other => Err(StoreError::Corrupt(format!("batch state {other}"))),
        }
    }
}

/// A batch as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub id: String,
    pub platform: String,
    pub chat: String,
    pub agent: String,
    pub approve: bool,
    pub reason: Option<String>,
    pub requests: Vec<String>,
    pub left_out: usize,
    pub asked_by: String,
    pub created_at: i64,
    pub expires_at: i64,
    pub state: BatchState,
    /// Who confirmed or cancelled it, and when.
    pub ended_by: Option<String>,
    pub ended_at: Option<i64>,
    /// What the confirmer was told, once its requests were decided.
    pub outcome: Option<String>,
}

/// How a batch ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchEnd {
    Confirmed,
    Cancelled,
}

/// What ending a batch came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// It was open: it has ended now (the batch as it is now).
    Now(Batch),
    /// It had ended before (confirmed or cancelled).
    Already(Batch),
    /// Its time ran out before it was confirmed.
    Expired(Batch),
    /// No batch has this id (forged, or forgotten long after it expired).
    Unknown,
}

const COLUMNS: &str = "id, platform, chat, agent, approve, reason, requests, left_out, asked_by, \
     created_at, expires_at, state, ended_by, ended_at, outcome";

fn row_to_batch(r: &Row<'_>) -> Result<Batch> {
    let requests: String = r.get(6)?;
    let state: String = r.get(11)?;
    let left_out: i64 = r.get(7)?;
    Ok(Batch {
        id: r.get(0)?,
        platform: r.get(1)?,
        chat: r.get(2)?,
        agent: r.get(3)?,
        approve: r.get(4)?,
        reason: r.get(5)?,
        requests: serde_json::from_str(&requests)
            .map_err(|_| StoreError::Corrupt("batch requests".into()))?,
        left_out: usize::try_from(left_out).unwrap_or_default(),
        asked_by: r.get(8)?,
        created_at: r.get(9)?,
        expires_at: r.get(10)?,
        state: BatchState::parse(&state)?,
        ended_by: r.get(12)?,
        ended_at: r.get(13)?,
        outcome: r.get(14)?,
    })
}

/// The rank SQL gives a risk score, for `MAX`.
const RISK_RANK: &str =
    "CASE risk_score WHEN 'low' THEN 0 WHEN 'medium' THEN 1 WHEN 'high' THEN 2 END";

fn risk_of_rank(rank: i64) -> RiskScore {
    match rank {
        0 => RiskScore::Low,
        1 => RiskScore::Medium,
        _ => RiskScore::High,
    }
}

impl Store {
    /// Records a batch as its confirmation lists it; returns it.
    pub fn open_batch(&self, b: &NewBatch) -> Result<Batch> {
        let id = new_id();
        self.write(|tx| {
            tx.execute(
                "INSERT INTO chat_batches (id, platform, chat, agent, approve, reason, requests, \
                 left_out, asked_by, created_at, expires_at, state) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 'open')",
                params![
                    id,
                    b.platform,
                    b.chat,
                    b.agent,
                    b.approve,
                    b.reason,
                    serde_json::to_string(&b.requests).unwrap_or_else(|_| "[]".into()),
                    i64::try_from(b.left_out).unwrap_or(i64::MAX),
                    b.asked_by,
                    b.now,
                    b.expires_at,
                ],
            )
        })?;
        self.batch(&id)?
            .ok_or_else(|| StoreError::Corrupt(format!("batch {id} vanished")))
    }

    /// The batch `id`, if there is one.
    pub fn batch(&self, id: &str) -> Result<Option<Batch>> {
        self.writer(|c| {
            c.query_opt(
                &format!("SELECT {COLUMNS} FROM chat_batches WHERE id = ?1"),
                params![id],
                row_to_batch,
            )
        })
    }

    /// Ends the batch `id` as `how`, by `by`, if it is open and unexpired at `now`:
    /// one statement, so of two taps at once only one ends it.
    pub fn end_batch(&self, id: &str, how: BatchEnd, by: &str, now: i64) -> Result<Ended> {
        let state = match how {
            BatchEnd::Confirmed => BatchState::Done,
            BatchEnd::Cancelled => BatchState::Cancelled,
        };
        let changed = self.write(|tx| {
            tx.execute(
                "UPDATE chat_batches SET state = ?2, ended_by = ?3, ended_at = ?4 \
                 WHERE id = ?1 AND state = 'open' AND expires_at > ?4",
                params![id, state.as_str(), by, now],
            )
        })?;
        let Some(batch) = self.batch(id)? else {
            return Ok(Ended::Unknown);
        };
        Ok(if changed == 1 {
            Ended::Now(batch)
        } else if batch.state == BatchState::Open {
            Ended::Expired(batch)
        } else {
            Ended::Already(batch)
        })
    }

    /// Keeps what the confirmer of batch `id` was told, for a second tap.
    pub fn set_batch_outcome(&self, id: &str, outcome: &str) -> Result<()> {
        self.write(|tx| {
            tx.execute(
                "UPDATE chat_batches SET outcome = ?2 WHERE id = ?1",
                params![id, outcome],
            )
        })?;
        Ok(())
    }

    /// Forgets the batches that expired more than `keep` ms before `now` (confirmed or
    /// not: each decision is in the audit trail). Returns how many.
    pub fn forget_batches(&self, now: i64, keep: i64) -> Result<usize> {
        self.write(|tx| {
            tx.execute(
                "DELETE FROM chat_batches WHERE expires_at < ?1",
                params![now - keep],
            )
        })
    }

    /// The agents with at least `min` pending requests, largest first, at most `limit`;
    /// with `among`, only the agents with a pending request among those ids (a
    /// digest's). Each is counted over all its pending requests, and gets the handle
    /// chat buttons name it by.
    pub fn pending_agents(
        &self,
        among: Option<&[String]>,
        min: usize,
        limit: usize,
    ) -> Result<Vec<AgentPending>> {
        self.pending_agents_among(among.map(Among::Ids).as_ref(), min, limit)
    }

    /// [`Store::pending_agents`], `among` any set of requests ([`Among`]).
    pub(super) fn pending_agents_among(
        &self,
        among: Option<&Among<'_>>,
        min: usize,
        limit: usize,
    ) -> Result<Vec<AgentPending>> {
        let (filter, mut values) = match among {
            Some(among) => (
                format!(
                    "AND agent IN (SELECT a.agent FROM approvals a JOIN {} ON a.id = j.value \
                     WHERE a.status = 'pending')",
                    among.table()
                ),
                among.values(),
            ),
            None => (String::new(), Vec::new()),
        };
        let n = values.len();
        values.push(i64::try_from(min).unwrap_or(i64::MAX).into());
        values.push(i64::try_from(limit).unwrap_or(i64::MAX).into());
        let rows: Vec<(String, i64, i64, Option<i64>)> = self.writer(|c| {
            c.once().query_map(
                &format!(
                    "SELECT agent, COUNT(*), SUM(risk_score != 'critical'), MAX({RISK_RANK}) \
                     FROM approvals WHERE status = 'pending' {filter} \
                     GROUP BY agent HAVING COUNT(*) >= ?{} \
                     ORDER BY COUNT(*) DESC, agent LIMIT ?{}",
                    n + 1,
                    n + 2
                ),
                &values,
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
        })?;
        rows.into_iter()
            .map(|(agent, pending, approvable, rank)| {
                Ok(AgentPending {
                    handle: self.agent_handle(&agent)?,
                    agent,
                    pending: usize::try_from(pending).unwrap_or_default(),
                    approvable: usize::try_from(approvable).unwrap_or_default(),
                    approvable_risk: rank.map(risk_of_rank),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::inserted;
    use crate::store::NewApproval;

    fn pending(s: &Store, agent: &str, risk: RiskScore) -> String {
        let mut n = NewApproval::sample(agent, "send_email", Some(i64::MAX));
        n.risk.score = risk;
        inserted(s, &n).id
    }

    fn new_batch(requests: Vec<String>, expires_at: i64) -> NewBatch {
        NewBatch {
            platform: "telegram".into(),
            chat: "-100".into(),
            agent: "mailer".into(),
            approve: true,
            reason: None,
            requests,
            left_out: 1,
            asked_by: "alice".into(),
            now: 1000,
            expires_at,
        }
    }

    #[test]
    fn a_batch_keeps_exactly_its_requests_and_ends_once() {
        let s = Store::open_in_memory().unwrap();
        let ids = vec![pending(&s, "mailer", RiskScore::Low)];
        let b = s.open_batch(&new_batch(ids.clone(), 5000)).unwrap();
        assert_eq!(
            (b.requests.clone(), b.state, b.left_out),
            (ids, BatchState::Open, 1)
        );
        let Ended::Now(done) = s
            .end_batch(&b.id, BatchEnd::Confirmed, "bob", 2000)
            .unwrap()
        else {
            panic!("the first confirmation ends it");
        };
        assert_eq!(
            (done.state, done.ended_by.as_deref(), done.ended_at),
            (BatchState::Done, Some("bob"), Some(2000))
        );
        // A second tap, confirming or cancelling: it had ended.
        for how in [BatchEnd::Confirmed, BatchEnd::Cancelled] {
            assert!(matches!(
                s.end_batch(&b.id, how, "carol", 2001).unwrap(),
                Ended::Already(b) if b.ended_by.as_deref() == Some("bob")
            ));
        }
        s.set_batch_outcome(&b.id, "Approved 1.").unwrap();
        assert_eq!(
            s.batch(&b.id).unwrap().unwrap().outcome.as_deref(),
            Some("Approved 1.")
        );
        assert_eq!(
            s.end_batch("01HZZZZZZZZZZZZZZZZZZZZZZZ", BatchEnd::Confirmed, "bob", 0)
                .unwrap(),
            Ended::Unknown
        );
    }

    #[test]
    fn an_expired_batch_cannot_be_confirmed_and_is_forgotten_later() {
        let s = Store::open_in_memory().unwrap();
        let b = s.open_batch(&new_batch(Vec::new(), 5000)).unwrap();
        assert!(matches!(
            s.end_batch(&b.id, BatchEnd::Confirmed, "bob", 5000).unwrap(),
            Ended::Expired(b) if b.state == BatchState::Open
        ));
        assert_eq!(s.forget_batches(5500, 1000).unwrap(), 0);
        assert_eq!(s.forget_batches(6001, 1000).unwrap(), 1);
        assert_eq!(s.batch(&b.id).unwrap(), None);
    }

    #[test]
    fn agents_are_counted_over_all_their_pending_requests() {
        let s = Store::open_in_memory().unwrap();
        let low = pending(&s, "mailer", RiskScore::Low);
        pending(&s, "mailer", RiskScore::Medium);
        pending(&s, "mailer", RiskScore::Critical);
        pending(&s, "coder", RiskScore::Critical);
        pending(&s, "coder", RiskScore::Critical);
        pending(&s, "lone", RiskScore::Low);
        let all = s.pending_agents(None, 2, 10).unwrap();
        let seen: Vec<(&str, usize, usize, Option<RiskScore>)> = all
            .iter()
            .map(|a| (a.agent.as_str(), a.pending, a.approvable, a.approvable_risk))
            .collect();
        assert_eq!(
            seen,
            [
                ("mailer", 3, 2, Some(RiskScore::Medium)),
                ("coder", 2, 0, None)
            ]
        );
        assert_eq!(all[0].handle, s.agent_handle("mailer").unwrap());
        // Among a digest's requests: only the agents it shows, counted in full.
        let among = s.pending_agents(Some(&[low]), 2, 10).unwrap();
        assert_eq!(among.len(), 1);
        assert_eq!((among[0].agent.as_str(), among[0].pending), ("mailer", 3));
        assert_eq!(s.pending_agents(None, 1, 1).unwrap().len(), 1);
    }
}
