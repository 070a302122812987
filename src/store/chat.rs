//! Chat bookkeeping, for every conversation kind: what gets cards (`subjects`), which
//! message in which chat shows which subject (`cards`), what digests show (`digests`),
//! and the questions gatebot asked (`questions`).
//!
//! A subject is shown in a chat by its own **card** or, for requests, by a **digest**:
//! one message standing for every request that was waiting for a card there at once.
//! Each card row is written *before* the post starts (`message` NULL) and completed when
//! the platform answers, so:
//! - a restart never re-posts what was posted, and edits still find their messages;
//! - a post whose outcome is unknown (the process died, or the answer was lost) is
//!   known to be unknown: it is posted again, and the audit trail says so.
//!
//! A card records the subject's revision it was drawn at; when the subject's revision
//! moves on (the store updates it in the transaction of every change), the card is out
//! of date. Ids are passed to the database as one JSON array (`json_each`; PostgreSQL's
//! schema defines one that reads such a list), so a digest of
//! 100 000 requests takes one statement per [`POST_CHUNK`] of them, not 100 000; each
//! chunk is its own transaction, with its audit rows.

use serde_json::json;

use super::approval_row::get_conn;
use super::audit::audit_tx;
use super::sql::{params, Conn, Tx, Value};
use super::{Result, Store, StoreError};
use crate::approval::{Approval, Status, Via};
use crate::policy::RiskScore;
pub use crate::subject::{
    DigestGroup, DigestState, DigestSummary, Shown, ShownBy, Subject, SubjectKind, Thread, Unposted,
};

/// Result of [`Store::lookup_subject`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubjectLookup {
    Found(Subject),
    /// Several subjects match the prefix; their short ids.
    Ambiguous(Vec<String>),
    NotFound,
}

/// A question gatebot asked: the subject, and what the answer is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    pub subject: String,
    pub purpose: String,
}

fn subject_kind(s: &str) -> Result<SubjectKind> {
    SubjectKind::parse(s).ok_or_else(|| StoreError::Corrupt(format!("subject kind {s}")))
}

/// Most subjects one transaction of a post's bookkeeping records ([`Store::begin_post`],
/// [`Store::finish_post`], [`Store::card_reposted`], [`Store::abandon_post`]): a digest
/// of 100 000 requests is recorded a chunk at a time, each chunk with its audit rows, so
/// neither SQLite nor gatebot holds the whole post's rows at once, and the writer is
/// free between chunks.
pub const POST_CHUNK: usize = 2_000;

fn ids_json(ids: &[String]) -> String {
    serde_json::to_string(ids).unwrap_or_else(|_| "[]".into())
}

/// The requests a digest's counts are over ([`Store::summarize`]).
pub(super) enum Among<'a> {
    /// These ids.
    Ids(&'a [String]),
    /// The requests of the digest post in flight in `chat` begun at `posted_at`
    /// ([`Store::begin_digest`]): read by SQLite, never held here.
    InFlight {
        platform: &'a str,
        chat: &'a str,
        posted_at: i64,
    },
    /// The requests digest `message` in `chat` shows.
    Posted {
        platform: &'a str,
        chat: &'a str,
        message: &'a str,
    },
}

impl Among<'_> {
    /// The requests' ids as a table `j (value)` for a FROM clause, its parameters
    /// numbered from ?1 ([`Among::values`]).
    pub(super) fn table(&self) -> &'static str {
        match self {
            Among::Ids(_) => "json_each(?1) j",
            Among::InFlight { .. } => {
                "(SELECT subject AS value FROM cards WHERE platform = ?1 AND chat = ?2 \
                 AND message IS NULL AND shown_by = 'digest' AND posted_at = ?3) j"
            }
            Among::Posted { .. } => {
                "(SELECT subject AS value FROM cards WHERE platform = ?1 AND chat = ?2 \
                 AND message = ?3 AND shown_by = 'digest') j"
            }
        }
    }

    pub(super) fn values(&self) -> Vec<Value<'static>> {
        match self {
            Among::Ids(ids) => vec![ids_json(ids).into()],
            Among::InFlight {
                platform,
                chat,
                posted_at,
            } => vec![
                platform.to_string().into(),
                chat.to_string().into(),
                (*posted_at).into(),
            ],
            Among::Posted {
                platform,
                chat,
                message,
            } => vec![
                platform.to_string().into(),
                chat.to_string().into(),
                message.to_string().into(),
            ],
        }
    }
}

/// Audits, before they are posted again, that the requests `ids` had a post in `chat`
/// whose outcome is unknown.
fn reposted_tx<'a>(
    tx: &Tx<'_>,
    platform: &str,
    chat: &str,
    ids: impl IntoIterator<Item = &'a String>,
    now: i64,
) -> Result<()> {
    let detail = json!({
        "chat": chat,
        "why": "the outcome of an earlier post is unknown (gatebot stopped, or the answer was lost); the prompt may show twice",
    });
    let via = Via::Chat(crate::approval::PlatformId::owned(platform));
    for id in ids {
        audit_tx(
            tx,
            now,
            Some(id),
            "prompt_reposted",
            None,
            Some(&via),
            &detail,
        )?;
    }
    Ok(())
}

/// Records in flight that `rows` (a JSON array of `[subject, revision]`) are about to
/// be shown in `chat` by one message.
fn begin_tx(
    tx: &Tx<'_>,
    platform: &str,
    chat: &str,
    rows: &str,
    by: ShownBy,
    thread: Option<&str>,
    now: i64,
) -> Result<()> {
    tx.execute(
        // PostgreSQL's json_each takes a list of text (see its migration): the pairs are
        // read with its own json_array_elements.
        tx.dialect(
            "INSERT INTO cards (subject, platform, chat, message, shown_by, revision, posted_at, thread) \
             SELECT j.value ->> 0, ?1, ?2, NULL, ?3, j.value ->> 1, ?4, ?6 FROM json_each(?5) j WHERE true \
             ON CONFLICT (subject, platform, chat) DO UPDATE SET message = NULL, \
                 shown_by = excluded.shown_by, revision = excluded.revision, \
                 posted_at = excluded.posted_at, thread = excluded.thread",
            "INSERT INTO cards (subject, platform, chat, message, shown_by, revision, posted_at, thread) \
             SELECT j.value ->> 0, ?1, ?2, NULL, ?3, j.value ->> 1, ?4, ?6 \
             FROM json_array_elements(?5::json) j WHERE true \
             ON CONFLICT (subject, platform, chat) DO UPDATE SET message = NULL, \
                 shown_by = excluded.shown_by, revision = excluded.revision, \
                 posted_at = excluded.posted_at, thread = excluded.thread",
        ),
        params![platform, chat, by.as_str(), now, rows, thread],
    )?;
    Ok(())
}

fn status(s: &str) -> Result<Status> {
    s.parse()
        .map_err(|_| StoreError::Corrupt(format!("status {s}")))
}

/// Records that `message` shows the subjects `ids` whose post in `chat` is in flight
/// (`message` NULL), with a `prompted` audit row each and, for a digest, its state;
/// returns the subjects recorded. `adopted`: the message was found through a reply or
/// a press, not in the platform's answer to the post.
#[allow(clippy::too_many_arguments)]
fn record_post(
    tx: &Tx<'_>,
    platform: &str,
    chat: &str,
    ids: &[String],
    by: ShownBy,
    message: &str,
    now: i64,
    adopted: bool,
) -> Result<Vec<String>> {
    let mut recorded: Vec<String> = tx.query_map(
        "UPDATE cards SET message = ?3, posted_at = ?4 WHERE platform = ?1 AND chat = ?2 \
         AND message IS NULL AND subject IN (SELECT value FROM json_each(?5)) \
         RETURNING subject",
        params![platform, chat, message, now, ids_json(ids)],
        |r| r.get(0),
    )?;
    // In the order the ids were made, whichever order the database updated them in.
    recorded.sort();
    recorded_tx(tx, platform, chat, &recorded, by, message, now, adopted)?;
    Ok(recorded)
}

/// The `prompted` audit rows of the subjects `recorded` as shown by `message`, and for
/// a digest, its state.
#[allow(clippy::too_many_arguments)]
fn recorded_tx(
    tx: &Tx<'_>,
    platform: &str,
    chat: &str,
    recorded: &[String],
    by: ShownBy,
    message: &str,
    now: i64,
    adopted: bool,
) -> Result<()> {
    let mut detail = json!({"chat": chat, "message": message, "digest": by == ShownBy::Digest});
    if adopted {
        detail["adopted"] = json!(true);
    }
    let via = Via::Chat(crate::approval::PlatformId::owned(platform));
    for id in recorded {
        audit_tx(tx, now, Some(id), "prompted", None, Some(&via), &detail)?;
    }
    if by == ShownBy::Digest && !recorded.is_empty() {
        tx.execute(
            "INSERT INTO digests (platform, chat, message, showing, closed, posted_at) \
             VALUES (?1, ?2, ?3, NULL, 0, ?4) ON CONFLICT DO NOTHING",
            params![platform, chat, message, now],
        )?;
    }
    Ok(())
}

/// A subject's home and parent columns: platform, chat, reply_to, root, parent.
type HomeRow = (
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
);

/// Whether a subject `s` belongs in `chat` (`?1` platform, `?2` chat, and the numbered
/// parameter saying whether the chat is a destination): one of its audience's chats
/// when it has an audience (a request an approval rule routes), else its home chat, or
/// any destination chat when it has no home.
fn belongs(destination_param: usize) -> String {
    format!(
        "(CASE WHEN EXISTS (SELECT 1 FROM subject_audience a WHERE a.subject = s.id) \
              THEN EXISTS (SELECT 1 FROM subject_audience a WHERE a.subject = s.id \
                           AND a.platform = ?1 AND a.chat = ?2) \
         WHEN s.home_platform IS NULL THEN ?{destination_param} = 1 \
         ELSE (s.home_platform = ?1 AND s.home_chat = ?2) END)"
    )
}

/// Under the message showing `subject` in `chat`: as a reply to it, in its thread.
fn card_thread(
    conn: &Conn<'_>,
    subject: &str,
    platform: &str,
    chat: &str,
) -> Result<Option<Thread>> {
    let card: Option<(String, Option<String>)> = conn.query_opt(
        "SELECT message, thread FROM cards WHERE subject = ?1 AND platform = ?2 \
         AND chat = ?3 AND message IS NOT NULL",
        params![subject, platform, chat],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    Ok(card.map(|(message, thread)| Thread {
        root: thread.unwrap_or_else(|| message.clone()),
        reply_to: message,
    }))
}

impl Store {
    /// Every subject whose presence in `chat` needs work: open ones without a posted
    /// message, and those whose message shows an older revision: what a rescan looks
    /// at ([`Store::unposted_in`] and [`Store::stale_in`] without ids), as a list for
    /// the tests.
    #[cfg(test)]
    pub fn chat_backlog(
        &self,
        platform: &str,
        chat: &str,
        destination: bool,
    ) -> Result<Vec<String>> {
        self.writer(|c| {
            c.query_map(
                &format!(
                    "SELECT s.id FROM subjects s WHERE s.open = 1 AND {} AND NOT EXISTS \
                         (SELECT 1 FROM cards c WHERE c.subject = s.id AND c.platform = ?1 \
                          AND c.chat = ?2 AND c.message IS NOT NULL) \
                     UNION SELECT c.subject FROM cards c JOIN subjects s ON s.id = c.subject \
                     WHERE c.platform = ?1 AND c.chat = ?2 AND c.message IS NOT NULL \
                     AND c.revision != s.revision \
                     ORDER BY 1",
                    belongs(3)
                ),
                params![platform, chat, destination],
                |r| r.get(0),
            )
        })
    }

    /// The subjects among `ids` that are open and have no posted message in `chat`,
    /// oldest first (in the order they were made: ULIDs made in the same millisecond
    /// do not sort by time, and a task's card must come before its question's).
    pub fn unposted(
        &self,
        platform: &str,
        chat: &str,
        ids: &[String],
        destination: bool,
    ) -> Result<Vec<Unposted>> {
        Ok(self
            .unposted_in(platform, chat, Some(ids), destination, usize::MAX)?
            .0)
    }

    /// [`Store::unposted`] among `ids`, or (`None`) among every subject, with at most
    /// `requests` requests (the oldest: a burst of them is shown by a digest, which
    /// needs only their number); and how many requests there are in all.
    pub fn unposted_in(
        &self,
        platform: &str,
        chat: &str,
        ids: Option<&[String]>,
        destination: bool,
        requests: usize,
    ) -> Result<(Vec<Unposted>, usize)> {
        let source = match ids {
            Some(_) => "subjects s JOIN json_each(?3) j ON s.id = j.value",
            None => "subjects s",
        };
        let unposted = format!(
            "WITH u AS (SELECT s.rowid AS r, s.id, s.kind, s.revision, EXISTS (SELECT 1 FROM cards c \
                 WHERE c.subject = s.id AND c.platform = ?1 AND c.chat = ?2 AND c.message IS NULL) AS unknown \
             FROM {source} \
             WHERE s.open = 1 AND {} AND NOT EXISTS (SELECT 1 FROM cards c \
                 WHERE c.subject = s.id AND c.platform = ?1 AND c.chat = ?2 \
                 AND c.message IS NOT NULL))",
            belongs(4)
        );
        let ids = ids.map(ids_json);
        let cap = i64::try_from(requests).unwrap_or(i64::MAX);
        self.writer(|c| {
            let rows = c.once().query_map(
                &format!(
                    "{unposted} SELECT id, kind, revision, unknown FROM ( \
                         SELECT r, id, kind, revision, unknown FROM u WHERE kind != 'approval' \
                         UNION ALL SELECT * FROM (SELECT r, id, kind, revision, unknown FROM u \
                             WHERE kind = 'approval' ORDER BY r LIMIT ?5) AS requests) AS due \
                     ORDER BY r"
                ),
                params![platform, chat, ids, destination, cap],
                |r| {
                    Ok((
                        r.get::<String>(0)?,
                        r.get::<String>(1)?,
                        r.get::<String>(2)?,
                        r.get::<bool>(3)?,
                    ))
                },
            )?;
            let mut out = Vec::new();
            let mut listed = 0;
            for (id, kind, revision, unknown) in rows {
                let kind = subject_kind(&kind)?;
                listed += usize::from(kind == SubjectKind::Approval);
                out.push(Unposted {
                    subject: Subject { id, kind },
                    revision,
                    unknown,
                });
            }
            let total = if listed < requests {
                listed
            } else {
                let n: i64 = c.once().query_row(
                    &format!("{unposted} SELECT COUNT(*) FROM u WHERE kind = 'approval'"),
                    params![platform, chat, ids, destination],
                    |r| r.get(0),
                )?;
                usize::try_from(n).unwrap_or_default()
            };
            Ok((out, total))
        })
    }

    /// Messages in `chat` showing subjects among `ids` at an older revision, with the
    /// subject's revision now.
    pub fn stale_cards(
        &self,
        platform: &str,
        chat: &str,
        ids: &[String],
    ) -> Result<Vec<(Shown, String)>> {
        self.stale_in(platform, chat, Some(ids))
    }

    /// [`Store::stale_cards`] among `ids`, or (`None`) among every subject.
    pub fn stale_in(
        &self,
        platform: &str,
        chat: &str,
        ids: Option<&[String]>,
    ) -> Result<Vec<(Shown, String)>> {
        let among = match ids {
            Some(_) => "JOIN json_each(?3) j ON j.value = c.subject",
            None => "",
        };
        let mut values: Vec<Value<'_>> = vec![platform.into(), chat.into()];
        values.extend(ids.map(|ids| ids_json(ids).into()));
        let rows = self.writer(|c| {
            c.once().query_map(
                &format!(
                    "SELECT c.subject, s.kind, c.message, c.shown_by, c.revision, s.revision \
                     FROM cards c JOIN subjects s ON s.id = c.subject {among} \
                     WHERE c.platform = ?1 AND c.chat = ?2 AND c.message IS NOT NULL \
                     AND c.revision != s.revision ORDER BY c.subject"
                ),
                &values,
                |r| {
                    Ok((
                        r.get::<String>(0)?,
                        r.get::<String>(1)?,
                        r.get::<String>(2)?,
                        r.get::<String>(3)?,
                        r.get::<String>(4)?,
                        r.get::<String>(5)?,
                    ))
                },
            )
        })?;
        let mut out = Vec::new();
        for (id, kind, message, by, revision, now) in rows {
            out.push((
                Shown {
                    subject: Subject {
                        id,
                        kind: subject_kind(&kind)?,
                    },
                    message,
                    by: ShownBy::parse(&by)
                        .ok_or_else(|| StoreError::Corrupt(format!("shown_by {by}")))?,
                    revision,
                },
                now,
            ));
        }
        Ok(out)
    }

    /// Notes, before posting, that `subjects` (id and the revision the message will
    /// show) are about to be shown in `chat` by one message.
    /// `thread` is the root of the thread the message goes in, if any.
    pub fn begin_post(
        &self,
        platform: &str,
        chat: &str,
        subjects: &[(String, String)],
        by: ShownBy,
        thread: Option<&str>,
        now: i64,
    ) -> Result<()> {
        for chunk in subjects.chunks(POST_CHUNK) {
            let rows = serde_json::to_string(chunk).unwrap_or_else(|_| "[]".into());
            self.write(|tx| begin_tx(tx, platform, chat, &rows, by, thread, now))?;
        }
        Ok(())
    }

    /// The post of [`Store::begin_post`] succeeded as `message`: record it, with a
    /// `prompted` audit row per subject (and the digest's state for a digest). Returns
    /// the subjects recorded: those still in flight. One a reply or press has already
    /// tied to a message ([`Store::adopt_post`]: the post's own message, whose answer
    /// came late, or an earlier copy) keeps that message.
    pub fn finish_post(
        &self,
        platform: &str,
        chat: &str,
        ids: &[String],
        by: ShownBy,
        message: &str,
        now: i64,
    ) -> Result<Vec<String>> {
        let mut recorded = Vec::new();
        for chunk in ids.chunks(POST_CHUNK) {
            recorded.extend(
                self.write(|tx| record_post(tx, platform, chat, chunk, by, message, now, false))?,
            );
        }
        Ok(recorded)
    }

    /// Ties `message` in `chat`, a message of gatebot's that shows what a post in
    /// flight there shows, to that post: a reply or a press on it came before the
    /// platform's answer to the post (slow, or lost). For a card, the post of
    /// `subject`'s card; for a digest, the latest digest post in flight. Returns the
    /// subjects it now records (none if nothing matching was in flight), each audited
    /// as `prompted` with `adopted: true`.
    pub fn adopt_post(
        &self,
        platform: &str,
        chat: &str,
        message: &str,
        subject: Option<&str>,
        by: ShownBy,
        now: i64,
    ) -> Result<Vec<String>> {
        self.write(|tx| {
            let ids: Vec<String> = match (by, subject) {
                (ShownBy::Card, Some(id)) => tx.query_map(
                    "SELECT subject FROM cards WHERE platform = ?1 AND chat = ?2 AND subject = ?3 \
                     AND message IS NULL AND shown_by = 'card'",
                    params![platform, chat, id],
                    |r| r.get(0),
                )?,
                (ShownBy::Card, None) => Vec::new(),
                // The rows of one digest post are begun together, with one `posted_at`.
                (ShownBy::Digest, _) => tx.query_map(
                    "SELECT subject FROM cards WHERE platform = ?1 AND chat = ?2 \
                     AND message IS NULL AND shown_by = 'digest' AND posted_at = \
                     (SELECT MAX(posted_at) FROM cards WHERE platform = ?1 AND chat = ?2 \
                      AND message IS NULL AND shown_by = 'digest')",
                    params![platform, chat],
                    |r| r.get(0),
                )?,
            };
            record_post(tx, platform, chat, &ids, by, message, now, true)
        })
    }

    /// The post of [`Store::begin_post`] certainly did not happen: forget it.
    pub fn abandon_post(&self, platform: &str, chat: &str, ids: &[String]) -> Result<()> {
        for chunk in ids.chunks(POST_CHUNK) {
            self.write(|tx| {
                tx.execute(
                    "DELETE FROM cards WHERE platform = ?1 AND chat = ?2 AND message IS NULL \
                     AND subject IN (SELECT value FROM json_each(?3))",
                    params![platform, chat, ids_json(chunk)],
                )
            })?;
        }
        Ok(())
    }

    /// Begins a digest post in `chat` of every open request that belongs there and has
    /// no message there ([`Store::begin_post`] for requests not listed: SQLite finds
    /// them), a chunk of [`POST_CHUNK`] per transaction, all with `now` as their
    /// `posted_at`, which names the post until it is finished
    /// ([`Store::finish_digest`]) or abandoned ([`Store::abandon_digest`]). A request
    /// whose earlier post there has an unknown outcome is audited as `prompt_reposted`
    /// first. Returns how many requests the post shows, and how many were reposted.
    pub fn begin_digest(
        &self,
        platform: &str,
        chat: &str,
        destination: bool,
        now: i64,
    ) -> Result<(usize, usize)> {
        let (mut shown, mut reposted, mut after) = (0, 0, 0i64);
        loop {
            // The chunk's last rowid, how many it shows and how many were reposted;
            // `None`: nothing left.
            let done = self.write(|tx| {
                let chunk: Vec<(i64, String, String, bool)> = tx.query_map(
                    &format!(
                        "SELECT s.rowid, s.id, s.revision, EXISTS (SELECT 1 FROM cards c \
                             WHERE c.subject = s.id AND c.platform = ?1 AND c.chat = ?2 \
                             AND c.message IS NULL) \
                         FROM subjects s WHERE s.rowid > ?4 AND s.open = 1 AND s.kind = 'approval' \
                         AND {} AND NOT EXISTS (SELECT 1 FROM cards c WHERE c.subject = s.id \
                             AND c.platform = ?1 AND c.chat = ?2 AND c.message IS NOT NULL) \
                         ORDER BY s.rowid LIMIT ?5",
                        belongs(3)
                    ),
                    params![platform, chat, destination, after, POST_CHUNK as i64],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                )?;
                let Some((last, ..)) = chunk.last() else {
                    tx.discard();
                    return Ok(None);
                };
                let unknown: Vec<&String> = chunk
                    .iter()
                    .filter(|(.., unknown)| *unknown)
                    .map(|(_, id, ..)| id)
                    .collect();
                reposted_tx(tx, platform, chat, unknown.iter().copied(), now)?;
                let rows: Vec<(&String, &String)> = chunk
                    .iter()
                    .map(|(_, id, revision, _)| (id, revision))
                    .collect();
                let rows = serde_json::to_string(&rows).unwrap_or_else(|_| "[]".into());
                begin_tx(tx, platform, chat, &rows, ShownBy::Digest, None, now)?;
                Ok(Some((*last, chunk.len(), unknown.len())))
            })?;
            let Some((last, n, unknown)) = done else {
                break;
            };
            after = last;
            reposted += unknown;
            shown += n;
        }
        Ok((shown, reposted))
    }

    /// The digest post begun at `begun` ([`Store::begin_digest`]) succeeded as
    /// `message`: records it, a chunk of [`POST_CHUNK`] requests per transaction, each
    /// with its `prompted` audit rows (as [`Store::finish_post`] does). Returns how many
    /// it recorded (those a reply or press had not already tied to a message).
    pub fn finish_digest(
        &self,
        platform: &str,
        chat: &str,
        begun: i64,
        message: &str,
        now: i64,
    ) -> Result<usize> {
        let mut recorded = 0;
        loop {
            let n = self.write(|tx| {
                let chunk: Vec<String> = tx.query_map(
                    "UPDATE cards SET message = ?3, posted_at = ?4 WHERE rowid IN \
                     (SELECT rowid FROM cards WHERE platform = ?1 AND chat = ?2 \
                      AND message IS NULL AND shown_by = 'digest' AND posted_at = ?5 LIMIT ?6) \
                     RETURNING subject",
                    params![platform, chat, message, now, begun, POST_CHUNK as i64],
                    |r| r.get(0),
                )?;
                if chunk.is_empty() {
                    tx.discard();
                    return Ok(0);
                }
                recorded_tx(
                    tx,
                    platform,
                    chat,
                    &chunk,
                    ShownBy::Digest,
                    message,
                    now,
                    false,
                )?;
                Ok(chunk.len())
            })?;
            if n == 0 {
                break;
            }
            recorded += n;
        }
        Ok(recorded)
    }

    /// The digest post begun at `begun` certainly did not happen: forget it.
    pub fn abandon_digest(&self, platform: &str, chat: &str, begun: i64) -> Result<()> {
        loop {
            let gone = self.write(|tx| {
                tx.execute(
                    "DELETE FROM cards WHERE rowid IN (SELECT rowid FROM cards \
                     WHERE platform = ?1 AND chat = ?2 AND message IS NULL \
                     AND shown_by = 'digest' AND posted_at = ?3 LIMIT ?4)",
                    params![platform, chat, begun, POST_CHUNK as i64],
                )
            })?;
            if gone == 0 {
                return Ok(());
            }
        }
    }

    /// Takes the outcome reply of the card `message` in `chat` on `platform` (one that
    /// cannot edit) to send it now: `true` the first time, `false` once taken (sent, or
    /// in flight when gatebot stopped) or when no card is that message.
    pub fn take_outcome(
        &self,
        platform: &str,
        chat: &str,
        message: &str,
        now: i64,
    ) -> Result<bool> {
        let taken = self.write(|tx| {
            tx.execute(
                "UPDATE cards SET outcome_at = ?4 \
                 WHERE platform = ?1 AND chat = ?2 AND message = ?3 AND outcome_at IS NULL",
                params![platform, chat, message, now],
            )
        })?;
        Ok(taken > 0)
    }

    /// Returns a taken outcome reply the platform did not send, to be sent later.
    pub fn put_back_outcome(&self, platform: &str, chat: &str, message: &str) -> Result<()> {
        self.write(|tx| {
            tx.execute(
                "UPDATE cards SET outcome_at = NULL \
                 WHERE platform = ?1 AND chat = ?2 AND message = ?3",
                params![platform, chat, message],
            )
        })?;
        Ok(())
    }

    /// Records that the message showing `subject` in `chat` now shows `revision`.
    pub fn card_drawn(
        &self,
        subject: &str,
        platform: &str,
        chat: &str,
        revision: &str,
    ) -> Result<()> {
        self.write(|tx| {
            tx.execute(
                "UPDATE cards SET revision = ?4 WHERE subject = ?1 AND platform = ?2 AND chat = ?3",
                params![subject, platform, chat, revision],
            )
        })?;
        Ok(())
    }

    /// Audits that an earlier post of `ids` in `chat` has an unknown outcome and they
    /// are posted again.
    pub fn card_reposted(
        &self,
        platform: &str,
        chat: &str,
        ids: &[String],
        now: i64,
    ) -> Result<()> {
        for chunk in ids.chunks(POST_CHUNK) {
            self.write(|tx| reposted_tx(tx, platform, chat, chunk, now))?;
        }
        Ok(())
    }

    /// What a chat message shows: a subject's own card, or the request a digest shows
    /// under review. `None` for other messages (and for a digest's summary).
    pub fn shown_at(&self, platform: &str, chat: &str, message: &str) -> Result<Option<Shown>> {
        self.writer(|c| {
            let own: Option<(String, String, String)> = c.query_opt(
                "SELECT c.subject, s.kind, c.revision FROM cards c JOIN subjects s ON s.id = c.subject \
                 WHERE c.platform = ?1 AND c.chat = ?2 AND c.message = ?3 AND c.shown_by = 'card'",
                params![platform, chat, message],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?;
            if let Some((id, kind, revision)) = own {
                return Ok(Some(Shown {
                    subject: Subject {
                        id,
                        kind: subject_kind(&kind)?,
                    },
                    message: message.to_string(),
                    by: ShownBy::Card,
                    revision,
                }));
            }
            let showing: Option<String> = c
                .query_opt(
                    "SELECT showing FROM digests WHERE platform = ?1 AND chat = ?2 AND message = ?3",
                    params![platform, chat, message],
                    |r| r.get::<Option<String>>(0),
                )?
                .flatten();
            Ok(showing.map(|id| Shown {
                subject: Subject {
                    id,
                    kind: SubjectKind::Approval,
                },
                message: message.to_string(),
                by: ShownBy::Digest,
                revision: String::new(),
            }))
        })
    }

    /// Resolves what a person typed (a full id, a short id, or a unique prefix of 4+
    /// characters of a short id, any case) to subjects of any kind; open ones only
    /// when `open_only`. Several matches: their short ids.
    pub fn lookup_subject(&self, typed: &str, open_only: bool) -> Result<SubjectLookup> {
        let typed = typed.trim();
        let lower = typed.to_ascii_lowercase();
        self.writer(|c| {
            let exact: Option<(String, String)> = c.query_opt(
                "SELECT id, kind FROM subjects WHERE id = ?1 OR short_id = ?2",
                params![typed, lower],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            if let Some((id, kind)) = exact {
                return Ok(SubjectLookup::Found(Subject {
                    id,
                    kind: subject_kind(&kind)?,
                }));
            }
            if lower.len() < 4 || !lower.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return Ok(SubjectLookup::NotFound);
            }
            let found: Vec<(String, String, String)> = c.query_map(
                "SELECT id, kind, short_id FROM subjects WHERE short_id LIKE ?1 || '%' \
                 AND (?2 = 0 OR open = 1) ORDER BY id DESC LIMIT 11",
                params![lower, open_only],
                |r| {
                    Ok((
                        r.get::<String>(0)?,
                        r.get::<String>(1)?,
                        r.get::<String>(2)?,
                    ))
                },
            )?;
            Ok(match found.as_slice() {
                [] => SubjectLookup::NotFound,
                [(id, kind, _)] => SubjectLookup::Found(Subject {
                    id: id.clone(),
                    kind: subject_kind(kind)?,
                }),
                many => SubjectLookup::Ambiguous(many.iter().map(|(_, _, s)| s.clone()).collect()),
            })
        })
    }

    /// A subject by id, and whether it is open.
    pub fn subject(&self, id: &str) -> Result<Option<(Subject, bool)>> {
        let row: Option<(String, bool)> = self.writer(|c| {
            c.query_opt(
                "SELECT kind, open FROM subjects WHERE id = ?1",
                params![id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })?;
        row.map(|(kind, open)| {
            Ok((
                Subject {
                    id: id.to_string(),
                    kind: subject_kind(&kind)?,
                },
                open,
            ))
        })
        .transpose()
    }

    /// Where a card of `subject` goes in `chat`: under its home message if this is its
    /// home chat, else under its parent's card there (once that is posted); `None`:
    /// top-level.
    pub fn anchor(&self, subject: &str, platform: &str, chat: &str) -> Result<Option<Thread>> {
        self.writer(|c| {
            let row: Option<HomeRow> = c.query_opt(
                "SELECT home_platform, home_chat, home_reply_to, home_root, parent \
                 FROM subjects WHERE id = ?1",
                params![subject],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )?;
            let Some((home_platform, home_chat, reply_to, root, parent)) = row else {
                return Ok(None);
            };
            let at_home =
                home_platform.as_deref() == Some(platform) && home_chat.as_deref() == Some(chat);
            if let (true, Some(reply_to)) = (at_home, reply_to) {
                let root = root.unwrap_or_else(|| reply_to.clone());
                return Ok(Some(Thread { reply_to, root }));
            }
            let Some(parent) = parent else {
                return Ok(None);
            };
            card_thread(c, &parent, platform, chat)
        })
    }

    /// The thread of the message showing `subject` in `chat` (its card, or the digest
    /// that shows it), to reply under it; `None` if none is posted there.
    pub fn shown_in(&self, subject: &str, platform: &str, chat: &str) -> Result<Option<Thread>> {
        self.writer(|c| card_thread(c, subject, platform, chat))
    }

    /// The subject whose home thread `root` starts in `chat` (a task written as a chat
    /// message: replies in its thread are about it).
    pub fn threaded(&self, platform: &str, chat: &str, root: &str) -> Result<Option<Subject>> {
        let row: Option<(String, String)> = self.writer(|c| {
            c.query_opt(
                "SELECT id, kind FROM subjects WHERE home_platform = ?1 AND home_chat = ?2 \
                 AND home_root = ?3 AND parent IS NULL ORDER BY id DESC LIMIT 1",
                params![platform, chat, root],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })?;
        row.map(|(id, kind)| {
            Ok(Subject {
                id,
                kind: subject_kind(&kind)?,
            })
        })
        .transpose()
    }

    /// The home chats on `platform` of subjects that need work there (open, or with a
    /// card out of date): delivery serves them beside its destination chats.
    pub fn home_chats(&self, platform: &str) -> Result<Vec<String>> {
        self.writer(|c| {
            c.query_map(
                "SELECT DISTINCT s.home_chat FROM subjects s WHERE s.home_platform = ?1 AND \
                 (s.open = 1 OR EXISTS (SELECT 1 FROM cards c WHERE c.subject = s.id \
                  AND c.platform = ?1 AND c.revision != s.revision)) \
                 UNION SELECT a.chat FROM subject_audience a JOIN subjects s ON s.id = a.subject \
                 WHERE a.platform = ?1 AND s.open = 1 ORDER BY 1",
                params![platform],
                |r| r.get(0),
            )
        })
    }

    /// The chats on `platform` a subject's audience names (a routed request's).
    pub fn audience_on(&self, subject: &str, platform: &str) -> Result<Vec<String>> {
        self.writer(|c| {
            c.query_map(
                "SELECT chat FROM subject_audience WHERE subject = ?1 AND platform = ?2 ORDER BY chat",
                params![subject, platform],
                |r| r.get(0),
            )
        })
    }

    /// A subject's home chat, as (platform, chat), if it has one.
    pub fn home_of(&self, subject: &str) -> Result<Option<(String, String)>> {
        let row: Option<(Option<String>, Option<String>)> = self.writer(|c| {
            c.query_opt(
                "SELECT home_platform, home_chat FROM subjects WHERE id = ?1",
                params![subject],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })?;
        Ok(match row {
            Some((Some(p), Some(c))) => Some((p, c)),
            _ => None,
        })
    }

    /// What a digest message shows, if `message` is a digest.
    pub fn digest(&self, platform: &str, chat: &str, message: &str) -> Result<Option<DigestState>> {
        self.writer(|c| {
            c.query_opt(
                "SELECT showing, closed FROM digests WHERE platform = ?1 AND chat = ?2 AND message = ?3",
                params![platform, chat, message],
                |r| {
                    Ok(DigestState {
                        showing: r.get(0)?,
                        closed: r.get(1)?,
                    })
                },
            )
        })
    }

    /// Sets what a digest message shows.
    pub fn set_digest(
        &self,
        platform: &str,
        chat: &str,
        message: &str,
        state: &DigestState,
    ) -> Result<()> {
        self.write(|tx| {
            tx.execute(
                "UPDATE digests SET showing = ?4, closed = ?5 WHERE platform = ?1 AND chat = ?2 AND message = ?3",
                params![platform, chat, message, state.showing, state.closed],
            )
        })?;
        Ok(())
    }

    /// Counts what a digest covers, as things stand now.
    pub fn digest_summary(
        &self,
        platform: &str,
        chat: &str,
        message: &str,
    ) -> Result<DigestSummary> {
        self.summarize_among(&Among::Posted {
            platform,
            chat,
            message,
        })
    }

    /// Counts the requests `ids` by outcome, and by agent and tool; and the agents with
    /// several pending among them, each counted over all its pending requests.
    pub fn summarize(&self, ids: &[String]) -> Result<DigestSummary> {
        self.summarize_among(&Among::Ids(ids))
    }

    /// Counts the requests of the digest post in flight in `chat` begun at `posted_at`
    /// ([`Store::begin_digest`]), as [`Store::summarize`] does.
    pub fn summarize_in_flight(
        &self,
        platform: &str,
        chat: &str,
        posted_at: i64,
    ) -> Result<DigestSummary> {
        self.summarize_among(&Among::InFlight {
            platform,
            chat,
            posted_at,
        })
    }

    fn summarize_among(&self, among: &Among<'_>) -> Result<DigestSummary> {
        let mut summary = self.count_outcomes(among)?;
        summary.agents =
            self.pending_agents_among(Some(among), 2, crate::subject::BATCH_AGENTS_SHOWN)?;
        Ok(summary)
    }

    fn count_outcomes(&self, among: &Among<'_>) -> Result<DigestSummary> {
        let (table, values) = (among.table(), among.values());
        let mut summary = DigestSummary::default();
        let (rows, groups) = self.writer(|c| {
            let rows = c.once().query_map(
                &format!(
                    "SELECT a.status, COUNT(*), MIN(CASE WHEN a.status = 'pending' THEN a.expires_at END) \
                     FROM approvals a JOIN {table} ON a.id = j.value GROUP BY a.status"
                ),
                &values,
                |r| {
                    Ok((
                        r.get::<String>(0)?,
                        r.get::<i64>(1)?,
                        r.get::<Option<i64>>(2)?,
                    ))
                },
            )?;
            let groups = c.once().query_map(
                &format!(
                    "SELECT a.agent, a.tool, COUNT(*), SUM(a.status = 'pending'), \
                         MAX(CASE a.risk_score WHEN 'low' THEN 0 WHEN 'medium' THEN 1 \
                             WHEN 'high' THEN 2 ELSE 3 END) \
                     FROM approvals a JOIN {table} ON a.id = j.value \
                     GROUP BY a.agent, a.tool ORDER BY COUNT(*) DESC, a.agent, a.tool"
                ),
                &values,
                |r| {
                    Ok(DigestGroup {
                        agent: r.get(0)?,
                        tool: r.get(1)?,
                        count: r.get::<i64>(2)? as usize,
                        pending: r.get::<i64>(3)? as usize,
                        max_risk: match r.get::<i64>(4)? {
                            0 => RiskScore::Low,
                            1 => RiskScore::Medium,
                            2 => RiskScore::High,
                            _ => RiskScore::Critical,
                        },
                    })
                },
            )?;
            Ok((rows, groups))
        })?;
        for (s, n, next) in rows {
            let n = n as usize;
            summary.total += n;
            match status(&s)? {
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
        summary.groups = groups;
        Ok(summary)
    }

    /// The pending request a digest should show next: the first after `after` in id
    /// order, wrapping round; with its 1-based position among the digest's requests.
    pub fn digest_next(
        &self,
        platform: &str,
        chat: &str,
        message: &str,
        after: Option<&str>,
    ) -> Result<Option<(Approval, usize)>> {
        let found = self.writer(|c| {
            let next = |from: &str| -> Result<Option<String>> {
                c.query_opt(
                    "SELECT a.id FROM cards c JOIN approvals a ON a.id = c.subject \
                     WHERE c.platform = ?1 AND c.chat = ?2 AND c.message = ?3 \
                     AND c.shown_by = 'digest' AND a.status = 'pending' AND a.id > ?4 \
                     ORDER BY a.id LIMIT 1",
                    params![platform, chat, message, from],
                    |r| r.get(0),
                )
            };
            let found = match next(after.unwrap_or(""))? {
                Some(id) => Some(id),
                None if after.is_some() => next("")?,
                None => None,
            };
            let Some(id) = found else { return Ok(None) };
            let approval = get_conn(c, &id)?.ok_or_else(|| StoreError::Corrupt(id.clone()))?;
            Ok(Some((id, approval)))
        })?;
        let Some((id, approval)) = found else {
            return Ok(None);
        };
        let position = self.digest_position(platform, chat, message, &id)?;
        Ok(Some((approval, position)))
    }

    /// The 1-based place of request `id` among a digest's requests, in id order.
    pub fn digest_position(
        &self,
        platform: &str,
        chat: &str,
        message: &str,
        id: &str,
    ) -> Result<usize> {
        let position: i64 = self.writer(|c| {
            c.query_row(
                "SELECT COUNT(*) FROM cards WHERE platform = ?1 AND chat = ?2 AND message = ?3 \
                 AND shown_by = 'digest' AND subject <= ?4",
                params![platform, chat, message, id],
                |r| r.get(0),
            )
        })?;
        Ok(position as usize)
    }

    /// Remembers that `message` asks a question about `subject`, for `purpose`.
    pub fn record_question(
        &self,
        platform: &str,
        chat: &str,
        message: &str,
        subject: &str,
        purpose: &str,
        now: i64,
    ) -> Result<()> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO questions (platform, chat, message, subject, purpose, asked_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
                 ON CONFLICT (platform, chat, message) DO UPDATE SET subject = excluded.subject, \
                 purpose = excluded.purpose, asked_at = excluded.asked_at",
                params![platform, chat, message, subject, purpose, now],
            )
        })?;
        Ok(())
    }

    /// The question `message` asks, if it is one of gatebot's.
    pub fn question(&self, platform: &str, chat: &str, message: &str) -> Result<Option<Asked>> {
        self.writer(|c| {
            c.query_opt(
                "SELECT subject, purpose FROM questions WHERE platform = ?1 AND chat = ?2 AND message = ?3",
                params![platform, chat, message],
                |r| {
                    Ok(Asked {
                        subject: r.get(0)?,
                        purpose: r.get(1)?,
                    })
                },
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::{Decision, Verb};
    use crate::store::{Inserted, NewApproval};

    const TG: &str = "telegram";

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
            via: Via::Cli,
            reason: None,
            factor: false,
        };
        s.decide(id, &d, 5).unwrap();
    }

    fn at(ids: &[String], revision: &str) -> Vec<(String, String)> {
        ids.iter()
            .map(|i| (i.clone(), revision.to_string()))
            .collect()
    }

    fn unposted(s: &Store, chat: &str, ids: &[String]) -> Vec<(String, bool)> {
        s.unposted(TG, chat, ids, true)
            .unwrap()
            .into_iter()
            .map(|u| (u.subject.id, u.unknown))
            .collect()
    }

    #[test]
    fn a_post_is_recorded_before_it_starts_and_completed_after() {
        let s = Store::open_in_memory().unwrap();
        let a = pending(&s, "t", RiskScore::High);
        let ids = vec![a.clone()];
        assert_eq!(s.chat_backlog(TG, "1", true).unwrap(), ids);
        assert_eq!(unposted(&s, "1", &ids), vec![(a.clone(), false)]);

        s.begin_post(TG, "1", &at(&ids, "pending"), ShownBy::Card, None, 2)
            .unwrap();
        // In flight: still unposted, but now known to have an unknown outcome.
        assert_eq!(unposted(&s, "1", &ids), vec![(a.clone(), true)]);
        s.abandon_post(TG, "1", &ids).unwrap();
        assert_eq!(unposted(&s, "1", &ids), vec![(a.clone(), false)]);

        s.begin_post(TG, "1", &at(&ids, "pending"), ShownBy::Card, None, 2)
            .unwrap();
        s.finish_post(TG, "1", &ids, ShownBy::Card, "77", 3)
            .unwrap();
        assert!(unposted(&s, "1", &ids).is_empty());
        assert!(s.chat_backlog(TG, "1", true).unwrap().is_empty());
        // Another chat still needs it.
        assert_eq!(s.chat_backlog(TG, "2", true).unwrap(), ids);
        let p = s.shown_at(TG, "1", "77").unwrap().unwrap();
        assert_eq!((p.subject.id.as_str(), p.by), (a.as_str(), ShownBy::Card));
        assert!(s.shown_at("slack", "1", "77").unwrap().is_none());
        assert!(s
            .audit_rows(Some(&a), None)
            .unwrap()
            .iter()
            .any(|r| r.event == "prompted"));

        decide(&s, &a, Verb::Approve);
        let stale = s.stale_cards(TG, "1", &ids).unwrap();
        assert_eq!(stale.len(), 1);
        assert_eq!(stale[0].0.message, "77");
        assert_eq!(stale[0].1, "approved");
        assert_eq!(s.chat_backlog(TG, "1", true).unwrap(), ids);
        s.card_drawn(&a, TG, "1", "approved").unwrap();
        assert!(s.stale_cards(TG, "1", &ids).unwrap().is_empty());
        assert!(s.chat_backlog(TG, "1", true).unwrap().is_empty());
        // Settled, never shown in chat 2: nothing to do there.
        assert!(s.chat_backlog(TG, "2", true).unwrap().is_empty());
        assert_eq!(s.subject(&a).unwrap().map(|(_, open)| open), Some(false));
    }

    #[test]
    fn a_digest_of_more_requests_than_a_chunk_shows_and_audits_every_one() {
        let s = Store::open_in_memory().unwrap();
        let n = POST_CHUNK * 2 + 3;
        let ids: Vec<String> = (0..n).map(|_| pending(&s, "t", RiskScore::High)).collect();
        // One was in flight when gatebot stopped: its outcome is unknown.
        s.begin_post(TG, "1", &at(&ids[5..6], "pending"), ShownBy::Card, None, 1)
            .unwrap();
        // A scan lists the oldest few and counts them all; so does a list of ids.
        let (listed, total) = s.unposted_in(TG, "1", None, true, 6).unwrap();
        assert_eq!((listed.len(), total), (6, n));
        assert_eq!(listed[0].subject.id, ids[0]);
        assert!(listed[5].unknown && !listed[4].unknown);
        let (listed, total) = s.unposted_in(TG, "1", Some(&ids[..10]), true, 6).unwrap();
        assert_eq!((listed.len(), total), (6, 10));

        let (shown, reposted) = s.begin_digest(TG, "1", true, 2).unwrap();
        assert_eq!((shown, reposted), (n, 1));
        let summary = s.summarize_in_flight(TG, "1", 2).unwrap();
        assert_eq!((summary.total, summary.pending), (n, n));
        assert_eq!(summary.groups[0].count, n);
        assert_eq!(s.finish_digest(TG, "1", 2, "90", 3).unwrap(), n);
        let (listed, total) = s.unposted_in(TG, "1", None, true, 6).unwrap();
        assert!(listed.is_empty() && total == 0);
        assert!(s.digest(TG, "1", "90").unwrap().is_some());
        assert_eq!(s.digest_summary(TG, "1", "90").unwrap().total, n);
        assert!(
            s.shown_at(TG, "1", "90").unwrap().is_none(),
            "a digest's summary"
        );
        // Every request is audited as prompted by the digest, once; the one in flight
        // before as reposted too; and the chain holds.
        let rows = s.audit_rows(None, None).unwrap();
        let mut prompted: std::collections::HashMap<&str, usize> = Default::default();
        for r in rows.iter().filter(|r| r.event == "prompted") {
            assert_eq!(r.detail["digest"], true);
            *prompted
                .entry(r.approval_id.as_deref().unwrap())
                .or_default() += 1;
        }
        assert_eq!(prompted.len(), n);
        assert!(prompted.values().all(|c| *c == 1));
        let reposted: Vec<_> = rows
            .iter()
            .filter(|r| r.event == "prompt_reposted")
            .collect();
        assert_eq!(reposted.len(), 1);
        assert_eq!(reposted[0].approval_id.as_deref(), Some(ids[5].as_str()));
        assert!(s.verify_audit().unwrap().problems.is_empty());

        // Another chat has its own digest to make; abandoned, it records nothing.
        assert_eq!(s.unposted_in(TG, "2", None, true, 6).unwrap().1, n);
        assert_eq!(s.begin_digest(TG, "2", true, 4).unwrap(), (n, 0));
        s.abandon_digest(TG, "2", 4).unwrap();
        let (listed, total) = s.unposted_in(TG, "2", None, true, 6).unwrap();
        assert_eq!(total, n);
        assert!(listed.iter().all(|u| !u.unknown));
        // A chat that is no destination gets none of them (they have no home).
        assert_eq!(s.begin_digest(TG, "3", false, 5).unwrap(), (0, 0));
    }

    #[test]
    fn a_cards_outcome_is_taken_once_and_put_back_only_when_nothing_was_sent() {
        let s = Store::open_in_memory().unwrap();
        let a = pending(&s, "t", RiskScore::High);
        let ids = vec![a.clone()];
        s.begin_post(
            "whatsapp",
            "+1",
            &at(&ids, "pending"),
            ShownBy::Card,
            None,
            2,
        )
        .unwrap();
        s.finish_post("whatsapp", "+1", &ids, ShownBy::Card, "wamid.1", 3)
            .unwrap();
        assert!(
            !s.take_outcome("whatsapp", "+1", "wamid.2", 4).unwrap(),
            "no such card"
        );
        assert!(
            !s.take_outcome("whatsapp", "+2", "wamid.1", 4).unwrap(),
            "another chat"
        );
        assert!(s.take_outcome("whatsapp", "+1", "wamid.1", 4).unwrap());
        assert!(
            !s.take_outcome("whatsapp", "+1", "wamid.1", 5).unwrap(),
            "once"
        );
        s.put_back_outcome("whatsapp", "+1", "wamid.1").unwrap();
        assert!(s.take_outcome("whatsapp", "+1", "wamid.1", 6).unwrap());
        // Redrawing the card (a later revision) does not give it back.
        decide(&s, &a, Verb::Approve);
        s.card_drawn(&a, "whatsapp", "+1", "approved").unwrap();
        assert!(!s.take_outcome("whatsapp", "+1", "wamid.1", 7).unwrap());
    }

    #[test]
    fn a_message_found_before_the_answer_to_its_post_is_kept() {
        let s = Store::open_in_memory().unwrap();
        let a = pending(&s, "t", RiskScore::High);
        let ids = vec![a.clone()];
        // Nothing in flight: nothing to adopt.
        assert!(s
            .adopt_post(TG, "1", "55", Some(&a), ShownBy::Card, 2)
            .unwrap()
            .is_empty());
        s.begin_post(TG, "1", &at(&ids, "pending"), ShownBy::Card, None, 2)
            .unwrap();
        // Another chat's post, or another subject, is not this message.
        assert!(s
            .adopt_post(TG, "2", "55", Some(&a), ShownBy::Card, 3)
            .unwrap()
            .is_empty());
        assert!(s
            .adopt_post(TG, "1", "55", Some("other"), ShownBy::Card, 3)
            .unwrap()
            .is_empty());
        assert_eq!(
            s.adopt_post(TG, "1", "55", Some(&a), ShownBy::Card, 3)
                .unwrap(),
            ids
        );
        assert_eq!(s.shown_at(TG, "1", "55").unwrap().unwrap().subject.id, a);
        assert!(unposted(&s, "1", &ids).is_empty(), "not posted again");
        // The answer comes after all (the same message, or a second copy): the
        // message found first stays the card, and is audited once.
        assert!(s
            .finish_post(TG, "1", &ids, ShownBy::Card, "56", 4)
            .unwrap()
            .is_empty());
        assert_eq!(s.shown_at(TG, "1", "55").unwrap().unwrap().subject.id, a);
        assert!(s.shown_at(TG, "1", "56").unwrap().is_none());
        let prompted: Vec<_> = s
            .audit_rows(Some(&a), None)
            .unwrap()
            .into_iter()
            .filter(|r| r.event == "prompted")
            .collect();
        assert_eq!(prompted.len(), 1);
        assert_eq!(prompted[0].detail["adopted"], true);
        // A message that failed for sure is forgotten, but not one found meanwhile.
        s.abandon_post(TG, "1", &ids).unwrap();
        assert!(s.shown_at(TG, "1", "55").unwrap().is_some());
    }

    #[test]
    fn a_press_finds_the_latest_digest_in_flight() {
        let s = Store::open_in_memory().unwrap();
        let mut ids: Vec<String> = (0..4).map(|_| pending(&s, "t", RiskScore::High)).collect();
        ids.sort();
        let (old, new) = (ids[..2].to_vec(), ids[2..].to_vec());
        // An earlier digest whose outcome stayed unknown, and the one in flight now.
        s.begin_post(TG, "1", &at(&old, "pending"), ShownBy::Digest, None, 2)
            .unwrap();
        s.begin_post(TG, "1", &at(&new, "pending"), ShownBy::Digest, None, 5)
            .unwrap();
        assert_eq!(
            s.adopt_post(TG, "1", "90", None, ShownBy::Digest, 6)
                .unwrap(),
            new
        );
        assert_eq!(
            s.digest(TG, "1", "90").unwrap(),
            Some(DigestState {
                showing: None,
                closed: false
            })
        );
        assert_eq!(s.digest_summary(TG, "1", "90").unwrap().total, 2);
        // The answer to the post records nothing more, and leaves the digest's view.
        s.set_digest(
            TG,
            "1",
            "90",
            &DigestState {
                showing: Some(new[0].clone()),
                closed: false,
            },
        )
        .unwrap();
        assert!(s
            .finish_post(TG, "1", &new, ShownBy::Digest, "90", 7)
            .unwrap()
            .is_empty());
        assert_eq!(
            s.digest(TG, "1", "90").unwrap().unwrap().showing.as_deref(),
            Some(new[0].as_str())
        );
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
        s.begin_post(TG, "1", &at(&ids, "pending"), ShownBy::Digest, None, 2)
            .unwrap();
        s.finish_post(TG, "1", &ids, ShownBy::Digest, "90", 3)
            .unwrap();
        assert_eq!(
            s.digest(TG, "1", "90").unwrap(),
            Some(DigestState {
                showing: None,
                closed: false
            })
        );
        // The summary is not a request's card.
        assert!(s.shown_at(TG, "1", "90").unwrap().is_none());
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
        let p = s.shown_at(TG, "1", "90").unwrap().unwrap();
        assert_eq!(
            (p.subject.id.as_str(), p.by),
            (ids[2].as_str(), ShownBy::Digest)
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
    fn subjects_are_found_by_id_short_id_or_prefix() {
        let s = Store::open_in_memory().unwrap();
        let a = pending(&s, "t", RiskScore::High);
        let short = s.get(&a).unwrap().unwrap().short_id;
        let found = |typed: &str| match s.lookup_subject(typed, true).unwrap() {
            SubjectLookup::Found(x) => Some(x.id),
            _ => None,
        };
        assert_eq!(found(&a), Some(a.clone()));
        assert_eq!(found(&short.to_uppercase()), Some(a.clone()));
        assert_eq!(found(&short[..4]), Some(a.clone()));
        assert_eq!(found(&short[..3]), None);
        decide(&s, &a, Verb::Approve);
        assert_eq!(found(&short[..4]), None, "not open any more");
        assert!(matches!(
            s.lookup_subject(&short[..4], false).unwrap(),
            SubjectLookup::Found(_)
        ));
    }

    #[test]
    fn questions_survive_in_the_database() {
        let s = Store::open_in_memory().unwrap();
        let a = pending(&s, "t", RiskScore::High);
        s.record_question(TG, "1", "55", &a, "deny_reason", 2)
            .unwrap();
        assert_eq!(
            s.question(TG, "1", "55").unwrap(),
            Some(Asked {
                subject: a,
                purpose: "deny_reason".into()
            })
        );
        assert_eq!(s.question(TG, "1", "56").unwrap(), None);
    }

    #[test]
    fn a_database_from_before_conversations_keeps_its_prompts_and_questions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.db");
        // The schema of migrations 1-4, with one prompted request and a question.
        let mut conn = rusqlite::Connection::open(&path).unwrap();
        rusqlite_migration::Migrations::new(vec![
            rusqlite_migration::M::up(sqlite_migration!("0001_initial.sql")),
            rusqlite_migration::M::up(sqlite_migration!("0002_prompts.sql")),
            rusqlite_migration::M::up(sqlite_migration!("0003_audit_chain.sql")),
            rusqlite_migration::M::up(sqlite_migration!("0004_digests.sql")),
        ])
        .to_latest(&mut conn)
        .unwrap();
        conn.execute_batch(
            "INSERT INTO approvals (id, short_id, agent, tool, args, status, risk_score, tool_class, \
                 risk_factors, policy_reason, created_at) \
             VALUES ('01AAAAAAAAAAAAAAAAAAAAAAAA', 'aaaa2222', 'm', 't', '{}', 'approved', 'high', \
                 'write', '[]', 'r', 1), \
                    ('01BBBBBBBBBBBBBBBBBBBBBBBB', 'bbbb2222', 'm', 't', '{}', 'pending', 'high', \
                 'write', '[]', 'r', 2); \
             INSERT INTO prompts (approval_id, channel, chat, message, kind, posted_at, final_status) \
             VALUES ('01AAAAAAAAAAAAAAAAAAAAAAAA', 'telegram', '1', '10', 'prompt', 1, NULL), \
                    ('01BBBBBBBBBBBBBBBBBBBBBBBB', 'telegram', '1', '11', 'prompt', 2, NULL); \
             INSERT INTO reason_questions VALUES ('telegram', '1', '12', '01AAAAAAAAAAAAAAAAAAAAAAAA', 3);",
        )
        .unwrap();
        drop(conn);
        let s = Store::open(&path).unwrap();
        // The settled request's card still shows it pending: it needs its final edit.
        assert_eq!(
            s.chat_backlog(TG, "1", true).unwrap(),
            ["01AAAAAAAAAAAAAAAAAAAAAAAA"]
        );
        assert_eq!(
            s.shown_at(TG, "1", "11").unwrap().unwrap().subject.id,
            "01BBBBBBBBBBBBBBBBBBBBBBBB"
        );
        assert_eq!(
            s.question(TG, "1", "12").unwrap().unwrap().subject,
            "01AAAAAAAAAAAAAAAAAAAAAAAA"
        );
    }
}
