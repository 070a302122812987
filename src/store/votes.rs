//! Votes on requests an approval rule routes (`votes`): each person's once, audited
//! as a `vote` row; the vote that settles a request settles it in the same
//! transaction (the `decided` row as for any decision), so two people casting the last
//! needed vote at once give exactly one outcome.

use rusqlite::{params, OptionalExtension, Transaction};
use serde_json::json;

use super::approvals::{get_tx, refused, TxDecided};
use super::audit::audit_tx;
use super::subjects::{add_audience, subject_changed};
use super::{Result, Store, StoreError, Transition};
use crate::approval::votes::{pending_revision, Standing, Vote};
use crate::approval::{Approval, Decision};
use crate::trust::GrantAsk;

/// What a vote came to.
#[derive(Debug, Clone)]
pub enum Voted {
    /// Counted; the request still waits for more (as it is now, with every vote).
    Counted(Approval, Vec<Vote>),
    /// This person had voted on it already (their first vote, which stands).
    Again(Approval, Vote),
    /// The request settled with this vote, or had settled (or expired) before it.
    Settled(Transition),
}

fn votes_tx(tx: &Transaction<'_>, id: &str) -> Result<Vec<Vote>> {
    let mut stmt = tx.prepare_cached(
        "SELECT person, via, approve, reason, at FROM votes WHERE approval_id = ?1 ORDER BY at, person",
    )?;
    let rows = stmt.query_map([id], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, bool>(2)?,
            r.get::<_, Option<String>>(3)?,
            r.get::<_, i64>(4)?,
        ))
    })?;
    rows.map(|row| {
        let (person, via, approve, reason, at) = row?;
        Ok(Vote {
            person,
            via: via
                .parse()
                .map_err(|_| StoreError::Corrupt(format!("vote via {via}")))?,
            approve,
            reason,
            at,
        })
    })
    .collect()
}

/// Most requests one escalation pass moves on.
const ESCALATION_BATCH: i64 = 100;

impl Store {
    /// Reaches every escalation level due at `now` of pending routed requests: the
    /// level's people are asked too (the stored route grows, the level's chats join the
    /// audience, the cards' revision changes), audited as `escalated`, and the request's
    /// next level is set, each in one transaction. Returns the requests escalated.
    pub fn escalate_due(&self, now: i64) -> Result<Vec<Approval>> {
        let mut conn = self.lock();
        let due: Vec<String> = conn
            .prepare_cached(
                "SELECT id FROM approvals WHERE next_escalation_at <= ?1 ORDER BY next_escalation_at \
                 LIMIT ?2",
            )?
            .query_map(params![now, ESCALATION_BATCH], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        let mut out = Vec::new();
        for id in due {
            let tx = conn.transaction()?;
            let a = get_tx(&tx, &id)?.ok_or_else(|| StoreError::Corrupt(id.clone()))?;
            let route = a
                .route
                .clone()
                .filter(|_| a.status == crate::approval::Status::Pending);
            let Some(mut route) = route else {
                // Settled meanwhile: nothing is due any more.
                tx.execute(
                    "UPDATE approvals SET next_escalation_at = NULL WHERE id = ?1",
                    [&id],
                )?;
                tx.commit()?;
                continue;
            };
            let Some(level) = route.escalate() else {
                tx.execute(
                    "UPDATE approvals SET next_escalation_at = NULL WHERE id = ?1",
                    [&id],
                )?;
                tx.commit()?;
                continue;
            };
            let next = route
                .next_level()
                .map(|l| a.created_at.saturating_add(l.after_ms));
            tx.prepare_cached(
                "UPDATE approvals SET route = ?2, next_escalation_at = ?3 WHERE id = ?1",
            )?
            .execute(params![
                id,
                serde_json::to_string(&route).unwrap_or_default(),
                next
            ])?;
            add_audience(&tx, &id, &level.chats)?;
            let votes = votes_tx(&tx, &id)?;
            subject_changed(
                &tx,
                &id,
                true,
                &pending_revision(votes.len(), route.escalated),
            )?;
            audit_tx(
                &tx,
                now,
                Some(&id),
                "escalated",
                Some("gatebot"),
                Some(&crate::approval::Via::System),
                &json!({"level": route.escalated, "asked": level.asked, "rule": route.rule}),
            )?;
            let a = get_tx(&tx, &id)?.ok_or_else(|| StoreError::Corrupt(id.clone()))?;
            tx.commit()?;
            out.push(a);
        }
        Ok(out)
    }

    /// Records `vote` on the pending request `id` and, when it settles the request
    /// under its route, decides it as `decision` says (with `grant`, for an approval)
    /// in the same transaction.
    pub fn vote(
        &self,
        id: &str,
        vote: &Vote,
        decision: &Decision,
        grant: Option<&GrantAsk>,
        now: i64,
    ) -> Result<Voted> {
        let mut conn = self.lock();
        let tx = conn.transaction()?;
        let open = tx
            .prepare_cached(
                "SELECT 1 FROM approvals WHERE id = ?1 AND status = 'pending' \
                 AND (expires_at IS NULL OR expires_at > ?2)",
            )?
            .query_row(params![id, now], |_| Ok(()))
            .optional()?
            .is_some();
        if !open {
            return Ok(Voted::Settled(refused(tx, id, now)?));
        }
        let added = tx
            .prepare_cached(
                "INSERT INTO votes (approval_id, person, via, approve, reason, at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING",
            )?
            .execute(params![
                id,
                vote.person,
                vote.via.as_str(),
                vote.approve,
                vote.reason,
                vote.at
            ])?;
        let approval = get_tx(&tx, id)?.ok_or_else(|| StoreError::Corrupt(id.to_string()))?;
        let votes = votes_tx(&tx, id)?;
        if added == 0 {
            let first = votes
                .iter()
                .find(|v| v.person == vote.person)
                .cloned()
                .ok_or_else(|| StoreError::Corrupt(format!("vote of {}", vote.person)))?;
            return Ok(Voted::Again(approval, first));
        }
        audit_tx(
            &tx,
            now,
            Some(id),
            "vote",
            Some(&vote.person),
            Some(&vote.via),
            &json!({"approve": vote.approve, "reason": vote.reason, "factor": false}),
        )?;
        let route = approval
            .route
            .as_ref()
            .ok_or_else(|| StoreError::Corrupt(format!("approval {id}: a vote without a rule")))?;
        match route.standing(&votes) {
            Standing::Open => {
                // Its cards say who voted: they change.
                subject_changed(
                    &tx,
                    id,
                    true,
                    &pending_revision(votes.len(), route.escalated),
                )?;
                tx.commit()?;
                Ok(Voted::Counted(approval, votes))
            }
            Standing::Approved | Standing::Denied => {
                let grant = grant.filter(|_| vote.approve);
                match self.decide_tx(&tx, id, decision, grant, None, now)? {
                    TxDecided::Done(a) => {
                        tx.commit()?;
                        Ok(Voted::Settled(Transition::Done(a)))
                    }
                    TxDecided::OverBudget(..) => {
                        // The approving vote cannot be taken: it would overdraw a
                        // budget. Nothing of it is kept (the request stays pending, its
                        // vote uncast) but the refusal's audit row, committed on its own.
                        drop(tx);
                        let tx = conn.transaction()?;
                        let refusal = self.decide_tx(&tx, id, decision, grant, None, now)?;
                        tx.commit()?;
                        match refusal {
                            TxDecided::OverBudget(a, why) => {
                                Ok(Voted::Settled(Transition::OverBudget(a, why)))
                            }
                            TxDecided::Done(a) => Ok(Voted::Settled(Transition::Done(a))),
                            TxDecided::NotPending => {
                                let tx = conn.transaction()?;
                                Ok(Voted::Settled(refused(tx, id, now)?))
                            }
                        }
                    }
                    TxDecided::NotPending => Ok(Voted::Settled(refused(tx, id, now)?)),
                }
            }
        }
    }

    /// Every vote on request `id`, in the order they were cast.
    pub fn votes(&self, id: &str) -> Result<Vec<Vote>> {
        let mut conn = self.lock();
        let tx = conn.transaction()?;
        votes_tx(&tx, id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::votes::{Level, Route};
    use crate::store::{Inserted, NewApproval};

    fn routed(store: &Store, created_at: i64) -> String {
        let mut new = NewApproval::sample("mailer", "send_email", None);
        new.created_at = created_at;
        new.route = Some(Route {
            rule: "mail".into(),
            asked: vec!["alice".into()],
            approvals: 1,
            denials: 1,
            self_approval: true,
            handed_by: None,
            deadline_ms: None,
            levels: vec![
                Level {
                    after_ms: 1_000,
                    asked: vec!["bob".into()],
                    chats: vec![("telegram".into(), "43".into())],
                },
                Level {
                    after_ms: 2_000,
                    asked: vec!["carol".into()],
                    chats: vec![],
                },
            ],
            escalated: 0,
        });
        match store.insert(&new).unwrap() {
            Inserted::New(a) => a.id,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn each_level_is_reached_once_in_order_even_across_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gatebot.db");
        let id = {
            let store = Store::open(&path).unwrap();
            let id = routed(&store, 10_000);
            // Not due yet; then the first level, once.
            assert!(store.escalate_due(10_999).unwrap().is_empty());
            let first = store.escalate_due(11_000).unwrap();
            assert_eq!(first.len(), 1);
            let route = first[0].route.clone().unwrap();
            assert_eq!(
                (route.escalated, route.asked.clone()),
                (1, vec!["alice".into(), "bob".into()])
            );
            assert!(store.escalate_due(11_500).unwrap().is_empty());
            assert_eq!(store.audience_on(&id, "telegram").unwrap(), ["43"]);
            id
        };
        // Reopened (a restart): what was reached stays reached; the next level comes due.
        let store = Store::open(&path).unwrap();
        assert!(store.escalate_due(11_900).unwrap().is_empty());
        let second = store.escalate_due(12_000).unwrap();
        assert_eq!(
            second[0].route.as_ref().unwrap().asked,
            ["alice", "bob", "carol"]
        );
        assert!(store.escalate_due(99_000).unwrap().is_empty());
        let rows = store.audit_rows(Some(&id), None).unwrap();
        assert_eq!(rows.iter().filter(|r| r.event == "escalated").count(), 2);
    }
}
