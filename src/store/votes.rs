//! Votes on requests an approval rule routes (`votes`): each person's once, audited
//! as a `vote` row; the vote that settles a request settles it in the same
//! transaction (the `decided` row as for any decision), so two people casting the last
//! needed vote at once give exactly one outcome.

use serde_json::json;

use super::approvals::{get_tx, refused, TxDecided};
use super::audit::audit_tx;
use super::sql::{params, Conn, Tx};
use super::subjects::{add_audience, subject_changed};
use super::{Result, Store, StoreError, Transition};
use crate::approval::votes::{pending_revision, Reminder, Standing, Vote};
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

/// Acts on request `id`'s route timers due at `now` ([`Store::route_timers_due`]);
/// `None` if it had nothing to do (settled meanwhile, or no timer left).
fn route_timers_tx(tx: &Tx<'_>, id: &str, now: i64) -> Result<Option<Approval>> {
    let a = get_tx(tx, id)?.ok_or_else(|| StoreError::Corrupt(id.to_string()))?;
    let route = a
        .route
        .clone()
        .filter(|_| a.status == crate::approval::Status::Pending);
    let Some(mut route) = route else {
        // Settled meanwhile: nothing is due any more.
        tx.execute(
            "UPDATE approvals SET route_due_at = NULL WHERE id = ?1",
            params![id],
        )?;
        return Ok(None);
    };
    let due = route.advance(now.saturating_sub(a.created_at));
    let next = route.next_due().map(|t| a.created_at.saturating_add(t));
    tx.execute(
        "UPDATE approvals SET route = ?2, route_due_at = ?3 WHERE id = ?1",
        params![id, serde_json::to_string(&route).unwrap_or_default(), next],
    )?;
    let votes = votes_tx(tx, id)?;
    for (n, level) in due.levels.iter().enumerate() {
        let chats: Vec<(String, String)> = level
            .places
            .iter()
            .map(|p| (p.platform.clone(), p.chat.clone()))
            .collect();
        add_audience(tx, id, &chats)?;
        audit_tx(
            tx,
            now,
            Some(id),
            "escalated",
            Some("gatebot"),
            Some(&crate::approval::Via::System),
            &json!({
                "level": route.escalated - due.levels.len() + n + 1,
                "asked": level.asked,
                "rule": route.rule,
            }),
        )?;
    }
    if !due.levels.is_empty() {
        subject_changed(
            tx,
            id,
            true,
            &pending_revision(votes.len(), route.escalated),
        )?;
    }
    let mut reminded = std::collections::BTreeSet::new();
    for place in &due.reminders {
        // Those asked there who have not voted (nor been asked elsewhere and voted).
        let waiting: Vec<&String> = place
            .people
            .iter()
            .filter(|p| !votes.iter().any(|v| &v.person == *p))
            .collect();
        if waiting.is_empty() {
            continue;
        }
        // A reminder there still waiting to be posted stands for this one too.
        let written = tx.execute(
            "INSERT INTO reminders (approval_id, platform, chat, people, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
            params![
                id,
                place.platform,
                place.chat,
                serde_json::to_string(&waiting).unwrap_or_default(),
                now
            ],
        )?;
        if written == 1 {
            reminded.extend(waiting.into_iter().cloned());
        }
    }
    if !reminded.is_empty() {
        audit_tx(
            tx,
            now,
            Some(id),
            "reminded",
            Some("gatebot"),
            Some(&crate::approval::Via::System),
            &json!({"people": reminded, "rule": route.rule}),
        )?;
    }
    if due.levels.is_empty() && reminded.is_empty() {
        return Ok(None);
    }
    get_tx(tx, id)
}

fn votes_tx(c: &Conn<'_>, id: &str) -> Result<Vec<Vote>> {
    c.query_map(
        "SELECT person, via, approve, reason, at, factor FROM votes WHERE approval_id = ?1 \
         ORDER BY at, person",
        params![id],
        |r| {
            let via: String = r.get(1)?;
            Ok(Vote {
                person: r.get(0)?,
                via: via
                    .parse()
                    .map_err(|_| StoreError::Corrupt(format!("vote via {via}")))?,
                approve: r.get(2)?,
                reason: r.get(3)?,
                at: r.get(4)?,
                factor: r.get(5)?,
            })
        },
    )
}

/// Most requests one pass of the route timers moves on.
const TIMER_BATCH: i64 = 100;

impl Store {
    /// Acts on every route timer due at `now` of pending routed requests, each request
    /// in one transaction: escalation levels reached (their people are asked too: the
    /// stored route grows, their chats join the audience, the cards' revision changes;
    /// audited as `escalated`), reminders written for delivery to post (to the people
    /// asked in each place who have not voted; audited as `reminded`), and the time of
    /// the next timer. Returns the requests acted on.
    pub fn route_timers_due(&self, now: i64) -> Result<Vec<Approval>> {
        self.writer(|w| {
            let due: Vec<String> = w.query_map(
                "SELECT id FROM approvals WHERE route_due_at <= ?1 ORDER BY route_due_at LIMIT ?2",
                params![now, TIMER_BATCH],
                |r| r.get(0),
            )?;
            let mut out = Vec::new();
            for id in due {
                if let Some(a) = w.write(|tx| route_timers_tx(tx, &id, now))? {
                    out.push(a);
                }
            }
            Ok(out)
        })
    }

    /// The reminders waiting to be posted in `chat` on `platform`, oldest first.
    pub fn reminders_in(&self, platform: &str, chat: &str) -> Result<Vec<Reminder>> {
        self.writer(|c| {
            c.query_map(
                "SELECT r.id, r.approval_id, r.people, a.status = 'pending' FROM reminders r \
                 JOIN approvals a ON a.id = r.approval_id \
                 WHERE r.platform = ?1 AND r.chat = ?2 ORDER BY r.id",
                params![platform, chat],
                |r| {
                    let id: i64 = r.get(0)?;
                    let people: String = r.get(2)?;
                    Ok(Reminder {
                        id,
                        approval_id: r.get(1)?,
                        open: r.get(3)?,
                        platform: platform.to_string(),
                        chat: chat.to_string(),
                        people: serde_json::from_str(&people)
                            .map_err(|_| StoreError::Corrupt(format!("reminder {id} people")))?,
                    })
                },
            )
        })
    }

    /// Takes reminder `id` to post it now: `false` if it is gone (taken already). Once
    /// taken it is never posted again unless [`Store::put_back_reminder`] returns it.
    pub fn take_reminder(&self, id: i64) -> Result<bool> {
        let taken =
            self.write(|tx| tx.execute("DELETE FROM reminders WHERE id = ?1", params![id]))?;
        Ok(taken == 1)
    }

    /// Returns a taken reminder whose post the platform refused without doing anything
    /// (it asked to wait, or could not be reached), to be posted later.
    ///
    /// It keeps its id (its place in the chat's order) unless a reminder written since
    /// took that id (SQLite gives a new row the highest id plus one, so a taken last
    /// reminder's id comes free): then it gets a new one, rather than being dropped as a
    /// duplicate. A reminder waiting for the same request in the same chat still stands
    /// for it.
    pub fn put_back_reminder(&self, r: &Reminder) -> Result<()> {
        let people = serde_json::to_string(&r.people).unwrap_or_default();
        let now = crate::time::now_ms();
        self.write(|tx| {
            let id_taken: bool = tx.query_row(
                "SELECT EXISTS (SELECT 1 FROM reminders WHERE id = ?1)",
                params![r.id],
                |row| row.get(0),
            )?;
            if id_taken {
                tx.execute(
                    "INSERT INTO reminders (approval_id, platform, chat, people, created_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
                    params![r.approval_id, r.platform, r.chat, people, now],
                )?;
            } else {
                tx.execute(
                    "INSERT INTO reminders (id, approval_id, platform, chat, people, created_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING",
                    params![r.id, r.approval_id, r.platform, r.chat, people, now],
                )?;
            }
            Ok(())
        })
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
        self.writer(|w| {
            // What the vote's own transaction came to; `None`: its approval would
            // overdraw a budget, so it was rolled back, to be refused on its own.
            let first: Option<Voted> = w.write(|tx| {
                let open = tx.exists(
                    "SELECT 1 FROM approvals WHERE id = ?1 AND status = 'pending' \
                     AND (expires_at IS NULL OR expires_at > ?2)",
                    params![id, now],
                )?;
                if !open {
                    return Ok(Some(Voted::Settled(refused(tx, id, now)?)));
                }
                let added = tx.execute(
                    "INSERT INTO votes (approval_id, person, via, approve, reason, at, factor) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT DO NOTHING",
                    params![
                        id,
                        vote.person,
                        vote.via.as_str(),
                        vote.approve,
                        vote.reason,
                        vote.at,
                        vote.factor
                    ],
                )?;
                let approval =
                    get_tx(tx, id)?.ok_or_else(|| StoreError::Corrupt(id.to_string()))?;
                let votes = votes_tx(tx, id)?;
                if added == 0 {
                    let first = votes
                        .iter()
                        .find(|v| v.person == vote.person)
                        .cloned()
                        .ok_or_else(|| StoreError::Corrupt(format!("vote of {}", vote.person)))?;
                    tx.discard();
                    return Ok(Some(Voted::Again(approval, first)));
                }
                audit_tx(
                    tx,
                    now,
                    Some(id),
                    "vote",
                    Some(&vote.person),
                    Some(&vote.via),
                    &json!({"approve": vote.approve, "reason": vote.reason, "factor": vote.factor}),
                )?;
                let route = approval.route.as_ref().ok_or_else(|| {
                    StoreError::Corrupt(format!("approval {id}: a vote without a rule"))
                })?;
                match route.standing(&votes) {
                    Standing::Open => {
                        // Its cards say who voted: they change.
                        subject_changed(
                            tx,
                            id,
                            true,
                            &pending_revision(votes.len(), route.escalated),
                        )?;
                        Ok(Some(Voted::Counted(approval, votes)))
                    }
                    Standing::Approved | Standing::Denied => {
                        let grant = grant.filter(|_| vote.approve);
                        match self.decide_tx(tx, id, decision, grant, None, now)? {
                            TxDecided::Done(a) => Ok(Some(Voted::Settled(Transition::Done(a)))),
                            TxDecided::OverBudget(..) => {
                                tx.discard();
                                Ok(None)
                            }
                            TxDecided::NotPending => {
                                Ok(Some(Voted::Settled(refused(tx, id, now)?)))
                            }
                        }
                    }
                }
            })?;
            match first {
                Some(voted) => Ok(voted),
                None => {
                    // The approving vote cannot be taken: it would overdraw a budget.
                    // Nothing of it is kept (the request stays pending, its vote
                    // uncast) but the refusal's audit row, committed on its own.
                    let grant = grant.filter(|_| vote.approve);
                    let refusal =
                        w.write(|tx| self.decide_tx(tx, id, decision, grant, None, now))?;
                    match refusal {
                        TxDecided::OverBudget(a, why) => {
                            Ok(Voted::Settled(Transition::OverBudget(a, why)))
                        }
                        TxDecided::Done(a) => Ok(Voted::Settled(Transition::Done(a))),
                        TxDecided::NotPending => {
                            Ok(Voted::Settled(w.write(|tx| refused(tx, id, now))?))
                        }
                    }
                }
            }
        })
    }

    /// Every vote on request `id`, in the order they were cast.
    pub fn votes(&self, id: &str) -> Result<Vec<Vote>> {
        self.writer(|c| votes_tx(c, id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::votes::{Level, Place, Route};
    use crate::store::{Inserted, NewApproval};

    fn place(chat: &str, person: &str) -> Place {
        Place {
            platform: "telegram".into(),
            chat: chat.into(),
            people: vec![person.into()],
        }
    }

    fn routed(store: &Store, created_at: i64) -> String {
        let mut new = NewApproval::sample("mailer", "send_email", None);
        new.created_at = created_at;
        new.route = Some(Route {
            rule: "mail".into(),
            asked: vec!["alice".into()],
            approvals: 1,
            denials: 1,
            self_approval: true,
            step_up: false,
            handed_by: None,
            deadline_ms: None,
            places: vec![place("42", "alice")],
            remind_after_ms: Some(500),
            levels: vec![
                Level {
                    after_ms: 1_000,
                    asked: vec!["bob".into()],
                    places: vec![place("43", "bob")],
                    repeat_ms: Some(400),
                },
                Level {
                    after_ms: 2_000,
                    asked: vec!["carol".into()],
                    places: vec![],
                    repeat_ms: None,
                },
            ],
            escalated: 0,
            handled_ms: 0,
        });
        match store.insert(&new).unwrap() {
            Inserted::New(a) => a.id,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_reminder_put_back_is_kept_when_a_newer_one_took_its_id() {
        let store = Store::open_in_memory().unwrap();
        let first = routed(&store, 10_000);
        assert_eq!(store.route_timers_due(10_500).unwrap().len(), 1);
        let taken = store.reminders_in("telegram", "42").unwrap().remove(0);
        assert!(store.take_reminder(taken.id).unwrap());
        // Another request's reminder is written while the first is being posted: the
        // table is empty, so it gets the id the taken one had.
        let second = routed(&store, 10_100);
        assert_eq!(store.route_timers_due(10_600).unwrap().len(), 1);
        let newer = store.reminders_in("telegram", "42").unwrap();
        // SQLite numbers a row after the largest there, so the id is reused (the case
        // this test is about); PostgreSQL's identity never reuses one. Either way the
        // reminder put back must be kept.
        if !store.is_postgres() {
            assert_eq!(
                newer[0].id, taken.id,
                "the test's premise: the id is reused"
            );
        }
        // The platform refused the first post: it goes back, beside the newer one.
        store.put_back_reminder(&taken).unwrap();
        let mut waiting: Vec<String> = store
            .reminders_in("telegram", "42")
            .unwrap()
            .into_iter()
            .map(|r| r.approval_id)
            .collect();
        // (In id order: on SQLite the one put back took a new id, after the newer one.)
        if store.is_postgres() {
            waiting.reverse();
        }
        assert_eq!(waiting, [second, first]);
        // Put back twice (a retry): still one reminder per request and chat.
        store.put_back_reminder(&taken).unwrap();
        assert_eq!(store.reminders_in("telegram", "42").unwrap().len(), 2);
    }

    #[test]
    fn each_timer_acts_once_in_order_even_across_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gatebot.db");
        let waiting = |store: &Store, chat: &str| -> Vec<Vec<String>> {
            let r = store.reminders_in("telegram", chat).unwrap();
            r.into_iter().map(|r| r.people).collect()
        };
        let id = {
            let store = Store::open(&path).unwrap();
            let id = routed(&store, 10_000);
            assert_eq!(store.next_route_timer().unwrap(), Some(10_500));
            // Not due yet; then the reminder, in alice's chat, once.
            assert!(store.route_timers_due(10_499).unwrap().is_empty());
            assert_eq!(store.route_timers_due(10_500).unwrap().len(), 1);
            assert_eq!(waiting(&store, "42"), [vec!["alice".to_string()]]);
            assert!(store.route_timers_due(10_900).unwrap().is_empty());
            // Posted (taken): a second take finds nothing.
            let r = store.reminders_in("telegram", "42").unwrap().remove(0);
            assert!(store.take_reminder(r.id).unwrap());
            assert!(!store.take_reminder(r.id).unwrap());
            // The first level, once.
            let first = store.route_timers_due(11_000).unwrap();
            let route = first[0].route.clone().unwrap();
            assert_eq!(
                (route.escalated, route.asked.clone()),
                (1, vec!["alice".into(), "bob".into()])
            );
            assert!(store.route_timers_due(11_100).unwrap().is_empty());
            assert_eq!(store.audience_on(&id, "telegram").unwrap(), ["43"]);
            assert!(
                waiting(&store, "43").is_empty(),
                "a level is prompted, not reminded"
            );
            id
        };
        // Reopened (a restart): what was done stays done; the level's repeat comes due,
        // and one not yet posted stands for the next.
        let store = Store::open(&path).unwrap();
        assert!(store.route_timers_due(11_399).unwrap().is_empty());
        assert_eq!(store.route_timers_due(11_400).unwrap().len(), 1);
        assert!(store.route_timers_due(11_800).unwrap().is_empty());
        assert_eq!(waiting(&store, "43"), [vec!["bob".to_string()]]);
        let second = store.route_timers_due(12_000).unwrap();
        assert_eq!(
            second[0].route.as_ref().unwrap().asked,
            ["alice", "bob", "carol"]
        );
        let rows = store.audit_rows(Some(&id), None).unwrap();
        let count = |e: &str| rows.iter().filter(|r| r.event == e).count();
        assert_eq!((count("escalated"), count("reminded")), (2, 2));
    }
}
