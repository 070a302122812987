//! Chat bookkeeping: which message in which chat shows which request.
//!
//! A request is shown in a chat either by its own **prompt** or by a **digest**: one
//! message standing for every request that was waiting for a prompt there at once.
//! Each row is written *before* the post starts (`message` NULL) and completed when the
//! platform answers, so:
//! - a restart never re-posts what was posted, and edits still find their messages;
//! - a post whose outcome is unknown (the process died, or the answer was lost) is
//!   known to be unknown: it is posted again, and the audit trail says so.
//!
//! Ids are passed to SQLite as one JSON array (`json_each`), so a digest of 100 000
//! requests is one statement, not 100 000.

use rusqlite::{params, OptionalExtension};
use serde_json::json;

use super::approvals::get_conn;
use super::audit::audit_tx;
use super::{Result, Store, StoreError};
use crate::approval::{Approval, Channel, Status};
use crate::policy::RiskScore;

/// How a message shows a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptKind {
    /// The request's own prompt, with its buttons.
    Prompt,
    /// A digest covering many requests.
    Digest,
}

impl PromptKind {
    fn as_str(self) -> &'static str {
        match self {
            PromptKind::Prompt => "prompt",
            PromptKind::Digest => "digest",
        }
    }

    fn parse(s: &str) -> Result<Self> {
        match s {
            "prompt" => Ok(PromptKind::Prompt),
            "digest" => Ok(PromptKind::Digest),
            other => Err(StoreError::Corrupt(format!("prompt kind {other}"))),
        }
    }
}

/// A chat message that shows a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptRecord {
    pub approval_id: String,
    pub channel: Channel,
    pub chat: String,
    pub message: String,
    pub kind: PromptKind,
    /// The settled status the message was last brought up to date with, if any.
    pub final_status: Option<Status>,
}

/// What a digest message shows now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigestState {
    /// The request under review, or `None` for the summary.
    pub showing: Option<String>,
    /// It shows the final tally (nothing left to decide).
    pub closed: bool,
}

/// Requests of one agent and tool in a digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigestGroup {
    pub agent: String,
    pub tool: String,
    pub count: usize,
    pub pending: usize,
    pub max_risk: RiskScore,
}

/// The contents of a digest, counted now.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DigestSummary {
    pub total: usize,
    pub pending: usize,
    /// Approved (including those since executed, succeeded or failed).
    pub approved: usize,
    pub rejected: usize,
    pub expired: usize,
    pub cancelled: usize,
    /// By agent and tool, largest first.
    pub groups: Vec<DigestGroup>,
    /// The earliest deadline among the pending ones.
    pub next_expiry: Option<i64>,
}

fn ids_json(ids: &[String]) -> String {
    serde_json::to_string(ids).unwrap_or_else(|_| "[]".into())
}

fn status(s: Option<String>) -> Result<Option<Status>> {
    s.map(|s| {
        s.parse()
            .map_err(|_| StoreError::Corrupt(format!("status {s}")))
    })
    .transpose()
}

impl Store {
    /// The requests among `ids` that are pending and have no posted message in
    /// `chat`, oldest first; `true` marks one whose earlier post has an unknown outcome.
    pub fn unprompted(
        &self,
        channel: Channel,
        chat: &str,
        ids: &[String],
    ) -> Result<Vec<(String, bool)>> {
        let conn = self.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT a.id, EXISTS (SELECT 1 FROM prompts p WHERE p.approval_id = a.id \
                 AND p.channel = ?1 AND p.chat = ?2 AND p.message IS NULL) \
             FROM approvals a JOIN json_each(?3) j ON a.id = j.value \
             WHERE a.status = 'pending' AND NOT EXISTS (SELECT 1 FROM prompts p \
                 WHERE p.approval_id = a.id AND p.channel = ?1 AND p.chat = ?2 \
                 AND p.message IS NOT NULL) \
             ORDER BY a.id",
        )?;
        let rows = stmt.query_map(params![channel.as_str(), chat, ids_json(ids)], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Messages in `chat` showing settled requests among `ids` that are not up to date.
    pub fn stale_prompts(
        &self,
        channel: Channel,
        chat: &str,
        ids: &[String],
    ) -> Result<Vec<PromptRecord>> {
        let conn = self.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT p.approval_id, p.message, p.kind, p.final_status \
             FROM prompts p JOIN approvals a ON a.id = p.approval_id \
             JOIN json_each(?3) j ON j.value = p.approval_id \
             WHERE p.channel = ?1 AND p.chat = ?2 AND p.message IS NOT NULL \
             AND a.status != 'pending' AND (p.final_status IS NULL OR p.final_status != a.status) \
             ORDER BY p.approval_id",
        )?;
        let rows = stmt.query_map(params![channel.as_str(), chat, ids_json(ids)], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, Option<String>>(3)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (approval_id, message, kind, final_status) = row?;
            out.push(PromptRecord {
                approval_id,
                channel,
                chat: chat.to_string(),
                message,
                kind: PromptKind::parse(&kind)?,
                final_status: status(final_status)?,
            });
        }
        Ok(out)
    }

    /// Every request whose presence in `chat` needs work: pending ones without a posted
    /// message, and settled ones whose message does not show it yet. Used at start and
    /// whenever events were missed.
    pub fn chat_backlog(&self, channel: Channel, chat: &str) -> Result<Vec<String>> {
        let conn = self.lock();
        let mut stmt = conn.prepare_cached(
            "SELECT a.id FROM approvals a WHERE a.status = 'pending' AND NOT EXISTS \
                 (SELECT 1 FROM prompts p WHERE p.approval_id = a.id AND p.channel = ?1 \
                  AND p.chat = ?2 AND p.message IS NOT NULL) \
             UNION SELECT p.approval_id FROM prompts p JOIN approvals a ON a.id = p.approval_id \
             WHERE p.channel = ?1 AND p.chat = ?2 AND p.message IS NOT NULL \
             AND a.status != 'pending' AND (p.final_status IS NULL OR p.final_status != a.status) \
             ORDER BY 1",
        )?;
        let rows = stmt.query_map(params![channel.as_str(), chat], |r| r.get(0))?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Notes, before posting, that `ids` are about to be shown in `chat` by one message.
    pub fn begin_post(
        &self,
        channel: Channel,
        chat: &str,
        ids: &[String],
        kind: PromptKind,
        now: i64,
    ) -> Result<()> {
        let mut conn = self.lock();
        let tx = conn.transaction()?;
        tx.execute(
            "INSERT INTO prompts (approval_id, channel, chat, message, kind, posted_at) \
             SELECT j.value, ?1, ?2, NULL, ?3, ?4 FROM json_each(?5) j WHERE true \
             ON CONFLICT (approval_id, channel, chat) DO UPDATE SET message = NULL, \
                 kind = excluded.kind, posted_at = excluded.posted_at, final_status = NULL",
            params![channel.as_str(), chat, kind.as_str(), now, ids_json(ids)],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// The post of [`Store::begin_post`] succeeded as `message`: record it, with a
    /// `prompted` audit row per request (and the digest's state for a digest).
    pub fn finish_post(
        &self,
        channel: Channel,
        chat: &str,
        ids: &[String],
        kind: PromptKind,
        message: &str,
        now: i64,
    ) -> Result<()> {
        let mut conn = self.lock();
        let tx = conn.transaction()?;
        tx.execute(
            "UPDATE prompts SET message = ?3, posted_at = ?4 WHERE channel = ?1 AND chat = ?2 \
             AND approval_id IN (SELECT value FROM json_each(?5))",
            params![channel.as_str(), chat, message, now, ids_json(ids)],
        )?;
        let detail =
            json!({"chat": chat, "message": message, "digest": kind == PromptKind::Digest});
        for id in ids {
            audit_tx(&tx, now, Some(id), "prompted", None, Some(channel), &detail)?;
        }
        if kind == PromptKind::Digest {
            tx.execute(
                "INSERT OR REPLACE INTO digests (channel, chat, message, showing, closed, posted_at) \
                 VALUES (?1, ?2, ?3, NULL, 0, ?4)",
                params![channel.as_str(), chat, message, now],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// The post of [`Store::begin_post`] certainly did not happen: forget it.
    pub fn abandon_post(&self, channel: Channel, chat: &str, ids: &[String]) -> Result<()> {
        let conn = self.lock();
        conn.execute(
            "DELETE FROM prompts WHERE channel = ?1 AND chat = ?2 AND message IS NULL \
             AND approval_id IN (SELECT value FROM json_each(?3))",
            params![channel.as_str(), chat, ids_json(ids)],
        )?;
        Ok(())
    }

    /// Records that a prompt now shows the settled `status`.
    pub fn record_prompt_final(
        &self,
        approval_id: &str,
        channel: Channel,
        chat: &str,
        status: Status,
    ) -> Result<()> {
        let conn = self.lock();
        conn.execute(
            "UPDATE prompts SET final_status = ?4 WHERE approval_id = ?1 AND channel = ?2 AND chat = ?3",
            params![approval_id, channel.as_str(), chat, status.as_str()],
        )?;
        Ok(())
    }

    /// The request a chat message shows: its own prompt, or the request a digest shows
    /// under review. `None` for other messages (and for a digest's summary).
    pub fn prompt_by_message(
        &self,
        channel: Channel,
        chat: &str,
        message: &str,
    ) -> Result<Option<PromptRecord>> {
        let conn = self.lock();
        let own: Option<(String, Option<String>)> = conn
            .prepare_cached(
                "SELECT approval_id, final_status FROM prompts WHERE channel = ?1 AND chat = ?2 \
                 AND message = ?3 AND kind = 'prompt'",
            )?
            .query_row(params![channel.as_str(), chat, message], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?;
        let (approval_id, final_status, kind) = match own {
            Some((id, fs)) => (id, fs, PromptKind::Prompt),
            None => {
                let showing: Option<String> = conn
                    .prepare_cached(
                        "SELECT showing FROM digests WHERE channel = ?1 AND chat = ?2 AND message = ?3",
                    )?
                    .query_row(params![channel.as_str(), chat, message], |r| r.get(0))
                    .optional()?
                    .flatten();
                match showing {
                    Some(id) => (id, None, PromptKind::Digest),
                    None => return Ok(None),
                }
            }
        };
        Ok(Some(PromptRecord {
            approval_id,
            channel,
            chat: chat.to_string(),
            message: message.to_string(),
            kind,
            final_status: status(final_status)?,
        }))
    }

    /// What a digest message shows, if `message` is a digest.
    pub fn digest(
        &self,
        channel: Channel,
        chat: &str,
        message: &str,
    ) -> Result<Option<DigestState>> {
        let conn = self.lock();
        let state = conn
            .prepare_cached(
                "SELECT showing, closed FROM digests WHERE channel = ?1 AND chat = ?2 AND message = ?3",
            )?
            .query_row(params![channel.as_str(), chat, message], |r| {
                Ok(DigestState {
                    showing: r.get(0)?,
                    closed: r.get(1)?,
                })
            })
            .optional()?;
        Ok(state)
    }

    /// Sets what a digest message shows.
    pub fn set_digest(
        &self,
        channel: Channel,
        chat: &str,
        message: &str,
        state: &DigestState,
    ) -> Result<()> {
        let conn = self.lock();
        conn.execute(
            "UPDATE digests SET showing = ?4, closed = ?5 WHERE channel = ?1 AND chat = ?2 AND message = ?3",
            params![
                channel.as_str(),
                chat,
                message,
                state.showing,
                state.closed
            ],
        )?;
        Ok(())
    }

    /// Counts what a digest covers, as things stand now.
    pub fn digest_summary(
        &self,
        channel: Channel,
        chat: &str,
        message: &str,
    ) -> Result<DigestSummary> {
        let ids: Vec<String> = {
            let conn = self.lock();
            let mut stmt = conn.prepare_cached(
                "SELECT approval_id FROM prompts WHERE channel = ?1 AND chat = ?2 \
                 AND message = ?3 AND kind = 'digest'",
            )?;
            let rows = stmt.query_map(params![channel.as_str(), chat, message], |r| r.get(0))?;
            rows.collect::<std::result::Result<_, _>>()?
        };
        self.summarize(&ids)
    }

    /// Counts the requests `ids` by outcome, and by agent and tool.
    pub fn summarize(&self, ids: &[String]) -> Result<DigestSummary> {
        let conn = self.lock();
        let ids = ids_json(ids);
        let mut summary = DigestSummary::default();
        let mut stmt = conn.prepare_cached(
            "SELECT a.status, COUNT(*), MIN(CASE WHEN a.status = 'pending' THEN a.expires_at END) \
             FROM approvals a JOIN json_each(?1) j ON a.id = j.value GROUP BY a.status",
        )?;
        let rows = stmt.query_map([&ids], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, Option<i64>>(2)?,
            ))
        })?;
        for row in rows {
            let (s, n, next) = row?;
            let n = n as usize;
            summary.total += n;
            match status(Some(s))?.unwrap_or(Status::Pending) {
                Status::Pending => {
                    summary.pending += n;
                    summary.next_expiry = next;
                }
                Status::Rejected => summary.rejected += n,
                Status::Expired => summary.expired += n,
                Status::Cancelled => summary.cancelled += n,
                _ => summary.approved += n,
            }
        }
        let mut stmt = conn.prepare_cached(
            "SELECT a.agent, a.tool, COUNT(*), SUM(a.status = 'pending'), \
                 MAX(CASE a.risk_score WHEN 'low' THEN 0 WHEN 'medium' THEN 1 \
                     WHEN 'high' THEN 2 ELSE 3 END) \
             FROM approvals a JOIN json_each(?1) j ON a.id = j.value \
             GROUP BY a.agent, a.tool ORDER BY COUNT(*) DESC, a.agent, a.tool",
        )?;
        let rows = stmt.query_map([&ids], |r| {
            Ok(DigestGroup {
                agent: r.get(0)?,
                tool: r.get(1)?,
                count: r.get::<_, i64>(2)? as usize,
                pending: r.get::<_, i64>(3)? as usize,
                max_risk: match r.get::<_, i64>(4)? {
                    0 => RiskScore::Low,
                    1 => RiskScore::Medium,
                    2 => RiskScore::High,
                    _ => RiskScore::Critical,
                },
            })
        })?;
        summary.groups = rows.collect::<std::result::Result<_, _>>()?;
        Ok(summary)
    }

    /// The pending request a digest should show next: the first after `after` in id
    /// order, wrapping round; with its 1-based position among the digest's requests.
    pub fn digest_next(
        &self,
        channel: Channel,
        chat: &str,
        message: &str,
        after: Option<&str>,
    ) -> Result<Option<(Approval, usize)>> {
        let conn = self.lock();
        let next = |from: &str| -> Result<Option<String>> {
            Ok(conn
                .prepare_cached(
                    "SELECT a.id FROM prompts p JOIN approvals a ON a.id = p.approval_id \
                     WHERE p.channel = ?1 AND p.chat = ?2 AND p.message = ?3 AND p.kind = 'digest' \
                     AND a.status = 'pending' AND a.id > ?4 ORDER BY a.id LIMIT 1",
                )?
                .query_row(params![channel.as_str(), chat, message, from], |r| r.get(0))
                .optional()?)
        };
        let found = match next(after.unwrap_or(""))? {
            Some(id) => Some(id),
            None if after.is_some() => next("")?,
            None => None,
        };
        let Some(id) = found else { return Ok(None) };
        let approval = get_conn(&conn, &id)?.ok_or_else(|| StoreError::Corrupt(id.clone()))?;
        drop(conn);
        let position = self.digest_position(channel, chat, message, &id)?;
        Ok(Some((approval, position)))
    }

    /// The 1-based place of request `id` among a digest's requests, in id order.
    pub fn digest_position(
        &self,
        channel: Channel,
        chat: &str,
        message: &str,
        id: &str,
    ) -> Result<usize> {
        let conn = self.lock();
        let position: i64 = conn
            .prepare_cached(
                "SELECT COUNT(*) FROM prompts WHERE channel = ?1 AND chat = ?2 AND message = ?3 \
                 AND kind = 'digest' AND approval_id <= ?4",
            )?
            .query_row(params![channel.as_str(), chat, message, id], |r| r.get(0))?;
        Ok(position as usize)
    }

    /// Remembers that `message` asks why `approval_id` should be denied.
    pub fn record_question(
        &self,
        channel: Channel,
        chat: &str,
        message: &str,
        approval_id: &str,
        now: i64,
    ) -> Result<()> {
        let conn = self.lock();
        conn.execute(
            "INSERT OR REPLACE INTO reason_questions (channel, chat, message, approval_id, asked_at) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![channel.as_str(), chat, message, approval_id, now],
        )?;
        Ok(())
    }

    /// The request a "why deny?" question asks about, if `message` is one.
    pub fn question(&self, channel: Channel, chat: &str, message: &str) -> Result<Option<String>> {
        let conn = self.lock();
        let id = conn
            .prepare_cached(
                "SELECT approval_id FROM reason_questions WHERE channel = ?1 AND chat = ?2 AND message = ?3",
            )?
            .query_row(params![channel.as_str(), chat, message], |r| r.get(0))
            .optional()?;
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::{Decision, Verb};
    use crate::store::{Inserted, NewApproval};

    const TG: Channel = Channel::Telegram;

    fn pending(s: &Store, tool: &str, risk: RiskScore) -> String {
        let mut new = NewApproval::sample("m", tool, Some(10_000));
        new.risk.score = risk;
        match s.insert(&new).unwrap() {
            Inserted::New(a) => a.id,
            other => panic!("{other:?}"),
        }
    }

    fn decide(s: &Store, id: &str, verb: Verb) {
        let d = Decision {
            verb,
            actor: "alice".into(),
            via: Channel::Cli,
            reason: None,
        };
        s.decide(id, &d, 5).unwrap();
    }

    #[test]
    fn a_post_is_recorded_before_it_starts_and_completed_after() {
        let s = Store::open_in_memory().unwrap();
        let a = pending(&s, "t", RiskScore::High);
        let ids = vec![a.clone()];
        assert_eq!(s.chat_backlog(TG, "1").unwrap(), ids);
        assert_eq!(
            s.unprompted(TG, "1", &ids).unwrap(),
            vec![(a.clone(), false)]
        );

        s.begin_post(TG, "1", &ids, PromptKind::Prompt, 2).unwrap();
        // In flight: still unprompted, but now known to have an unknown outcome.
        assert_eq!(
            s.unprompted(TG, "1", &ids).unwrap(),
            vec![(a.clone(), true)]
        );
        s.abandon_post(TG, "1", &ids).unwrap();
        assert_eq!(
            s.unprompted(TG, "1", &ids).unwrap(),
            vec![(a.clone(), false)]
        );

        s.begin_post(TG, "1", &ids, PromptKind::Prompt, 2).unwrap();
        s.finish_post(TG, "1", &ids, PromptKind::Prompt, "77", 3)
            .unwrap();
        assert!(s.unprompted(TG, "1", &ids).unwrap().is_empty());
        assert!(s.chat_backlog(TG, "1").unwrap().is_empty());
        // Another chat still needs it.
        assert_eq!(s.chat_backlog(TG, "2").unwrap(), ids);
        let p = s.prompt_by_message(TG, "1", "77").unwrap().unwrap();
        assert_eq!(
            (p.approval_id.as_str(), p.kind),
            (a.as_str(), PromptKind::Prompt)
        );
        assert!(s
            .prompt_by_message(Channel::Slack, "1", "77")
            .unwrap()
            .is_none());
        assert!(s
            .audit_rows(Some(&a), None)
            .unwrap()
            .iter()
            .any(|r| r.event == "prompted"));

        decide(&s, &a, Verb::Approve);
        let stale = s.stale_prompts(TG, "1", &ids).unwrap();
        assert_eq!(stale.len(), 1);
        assert_eq!(stale[0].message, "77");
        assert_eq!(s.chat_backlog(TG, "1").unwrap(), ids);
        s.record_prompt_final(&a, TG, "1", Status::Approved)
            .unwrap();
        assert!(s.stale_prompts(TG, "1", &ids).unwrap().is_empty());
        assert!(s.chat_backlog(TG, "1").unwrap().is_empty());
        // Settled, never prompted in chat 2: nothing to do there.
        assert!(s.chat_backlog(TG, "2").unwrap().is_empty());
    }

    #[test]
    fn a_digest_counts_its_requests_and_walks_the_pending_ones() {
        let s = Store::open_in_memory().unwrap();
        let mut ids: Vec<String> = (0..5)
            .map(|i| {
                pending(
                    &s,
                    if i < 3 { "send_email" } else { "Bash" },
                    if i == 4 {
                        RiskScore::Critical
                    } else {
                        RiskScore::Medium
                    },
                )
            })
            .collect();
        // A digest walks its requests in id order.
        ids.sort();
        s.begin_post(TG, "1", &ids, PromptKind::Digest, 2).unwrap();
        s.finish_post(TG, "1", &ids, PromptKind::Digest, "90", 3)
            .unwrap();
        assert_eq!(
            s.digest(TG, "1", "90").unwrap(),
            Some(DigestState {
                showing: None,
                closed: false
            })
        );
        // The summary is not a request's prompt.
        assert!(s.prompt_by_message(TG, "1", "90").unwrap().is_none());
        let sum = s.digest_summary(TG, "1", "90").unwrap();
        assert_eq!((sum.total, sum.pending), (5, 5));
        assert_eq!(sum.next_expiry, Some(10_000));
        assert_eq!(sum.groups[0].tool, "send_email");
        assert_eq!(sum.groups[0].count, 3);
        assert_eq!(sum.groups[1].max_risk, RiskScore::Critical);

        let (first, pos) = s.digest_next(TG, "1", "90", None).unwrap().unwrap();
        assert_eq!((first.id.as_str(), pos), (ids[0].as_str(), 1));
        decide(&s, &ids[1], Verb::Deny);
        let (next, pos) = s
            .digest_next(TG, "1", "90", Some(&ids[0]))
            .unwrap()
            .unwrap();
        assert_eq!(
            (next.id.as_str(), pos),
            (ids[2].as_str(), 3),
            "skips the settled one"
        );
        let (wrapped, _) = s
            .digest_next(TG, "1", "90", Some(&ids[4]))
            .unwrap()
            .unwrap();
        assert_eq!(wrapped.id, ids[0], "wraps round");

        s.set_digest(
            TG,
            "1",
            "90",
            &DigestState {
                showing: Some(ids[2].clone()),
                closed: false,
            },
        )
        .unwrap();
        // While it shows a request, a reply to it names that request.
        let p = s.prompt_by_message(TG, "1", "90").unwrap().unwrap();
        assert_eq!(
            (p.approval_id.as_str(), p.kind),
            (ids[2].as_str(), PromptKind::Digest)
        );

        for id in [&ids[0], &ids[2], &ids[3], &ids[4]] {
            decide(&s, id, Verb::Approve);
        }
        assert!(s.digest_next(TG, "1", "90", None).unwrap().is_none());
        let sum = s.digest_summary(TG, "1", "90").unwrap();
        assert_eq!((sum.pending, sum.approved, sum.rejected), (0, 4, 1));
        assert_eq!(sum.next_expiry, None);
        // Every covered request's audit trail says how it was shown.
        let rows = s.audit_rows(Some(&ids[3]), None).unwrap();
        let prompted = rows.iter().find(|r| r.event == "prompted").unwrap();
        assert_eq!(prompted.detail["digest"], true);
    }

    #[test]
    fn reason_questions_survive_in_the_database() {
        let s = Store::open_in_memory().unwrap();
        let a = pending(&s, "t", RiskScore::High);
        s.record_question(TG, "1", "55", &a, 2).unwrap();
        assert_eq!(s.question(TG, "1", "55").unwrap(), Some(a));
        assert_eq!(s.question(TG, "1", "56").unwrap(), None);
    }
}
