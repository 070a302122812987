//! The `subjects` table's rows, written in the transaction of whatever creates or
//! changes a subject (a request that asks a human, a task, a check-in, a proposal): its
//! short id, its revision and whether it is open, its home and parent. The files of
//! each table call these; chat bookkeeping (`chat`) reads the rows back, and
//! [`Store::open_subjects`](super::Store::open_subjects) lists the open ones for
//! owners. A leaf: it uses no other table's file.

use super::sql::{params, Tx};
use super::{Result, StoreError};
use crate::approval::new_short_id;
use crate::policy::RiskScore;
use crate::subject::{Home, OpenFilter, OpenPage, Subject, SubjectKind};

/// A short id no request and no subject has: a request's short id names it in
/// `gatebot status`, a subject's in `gatebot decide` and chat commands.
pub(super) fn unique_short_id(tx: &Tx<'_>) -> Result<String> {
    loop {
        let candidate = new_short_id();
        let taken: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM approvals WHERE short_id = ?1) \
             OR EXISTS (SELECT 1 FROM subjects WHERE short_id = ?1)",
            params![candidate],
            |r| r.get(0),
        )?;
        if !taken {
            return Ok(candidate);
        }
    }
}

/// A short id [`unique_short_id`] would give that no row of `table` has either: for
/// things with short ids of their own that are no subjects (runs, grants), so an owner's
/// `k7m2` never names two things at once.
pub(super) fn unique_short_id_beside(tx: &Tx<'_>, table: &'static str) -> Result<String> {
    loop {
        let candidate = unique_short_id(tx)?;
        let taken: bool = tx.query_row(
            &format!("SELECT EXISTS (SELECT 1 FROM {table} WHERE short_id = ?1)"),
            params![candidate],
            |r| r.get(0),
        )?;
        if !taken {
            return Ok(candidate);
        }
    }
}

/// Records a new subject (in the transaction that creates it), open.
pub(super) fn subject_created(
    tx: &Tx<'_>,
    id: &str,
    kind: SubjectKind,
    short_id: &str,
    revision: &str,
    now: i64,
) -> Result<()> {
    tx.execute(
        "INSERT INTO subjects (id, kind, short_id, open, revision, created_at) \
         VALUES (?1, ?2, ?3, 1, ?4, ?5)",
        params![id, kind.as_str(), short_id, revision, now],
    )?;
    Ok(())
}

/// Moves a subject to `revision`, open or not (in the transaction of the change). A
/// request that never asked a human has no subject row, and nothing happens.
pub(super) fn subject_changed(tx: &Tx<'_>, id: &str, open: bool, revision: &str) -> Result<()> {
    tx.execute(
        "UPDATE subjects SET open = ?2, revision = ?3 WHERE id = ?1",
        params![id, open, revision],
    )?;
    Ok(())
}

/// Gives a new subject its home and its parent (in the transaction that creates it).
pub(super) fn set_home(
    tx: &Tx<'_>,
    id: &str,
    home: Option<&Home>,
    parent: Option<&str>,
) -> Result<()> {
    if home.is_none() && parent.is_none() {
        return Ok(());
    }
    let thread = home.and_then(|h| h.thread.as_ref());
    tx.execute(
        "UPDATE subjects SET home_platform = ?2, home_chat = ?3, home_reply_to = ?4, \
         home_root = ?5, parent = ?6 WHERE id = ?1",
        params![
            id,
            home.map(|h| h.platform.as_str()),
            home.map(|h| h.chat.as_str()),
            thread.map(|t| t.reply_to.as_str()),
            thread.map(|t| t.root.as_str()),
            parent
        ],
    )?;
    Ok(())
}

/// Gives a new subject the home of `parent` (without its thread: it goes under the
/// parent's card instead), and `parent` as parent.
pub(super) fn inherit_home(tx: &Tx<'_>, id: &str, parent: &str) -> Result<()> {
    tx.execute(
        "UPDATE subjects SET home_platform = p.home_platform, home_chat = p.home_chat, parent = ?2 \
         FROM (SELECT home_platform, home_chat FROM subjects WHERE id = ?2) AS p \
         WHERE subjects.id = ?1",
        params![id, parent],
    )?;
    Ok(())
}

/// A subject's rank in the owners' list: its request's risk (4 critical … 1 low); a
/// subject of another kind ranks as high.
const RANK: &str = "CASE a.risk_score WHEN 'critical' THEN 4 WHEN 'high' THEN 3 \
                    WHEN 'medium' THEN 2 WHEN 'low' THEN 1 ELSE 3 END";

/// The agent a subject is about, whatever its kind.
const AGENT: &str = "COALESCE(a.agent, \
    (SELECT p.agent FROM proposals p WHERE p.id = s.id), \
    (SELECT r.agent FROM check_ins c JOIN runs r ON r.id = c.run_id WHERE c.id = s.id), \
    (SELECT t.agent FROM tasks t WHERE t.id = s.id), \
    (SELECT t.agent FROM task_questions q JOIN tasks t ON t.id = q.task WHERE q.id = s.id))";

impl super::Store {
    /// One page of open subjects as `f` asks ([`OpenFilter`]); the cursor is
    /// `rank:id` of the page's last subject.
    pub fn open_subjects(&self, f: &OpenFilter) -> Result<OpenPage> {
        let filters = format!(
            "s.open = 1 AND (?1 IS NULL OR s.kind = ?1) AND (?2 IS NULL OR a.tool = ?2) \
             AND (?3 IS NULL OR (a.id IS NOT NULL AND ({RANK}) >= ?3)) \
             AND (?4 IS NULL OR {AGENT} = ?4)"
        );
        let kind = f.kind.map(SubjectKind::as_str);
        let risk = f.risk_at_least.map(|r| match r {
            RiskScore::Low => 1,
            RiskScore::Medium => 2,
            RiskScore::High => 3,
            RiskScore::Critical => 4,
        });
        let (after_rank, after_id) = match f.after.as_deref().and_then(|c| c.split_once(':')) {
            Some((rank, id)) => (rank.parse::<i64>().ok(), Some(id.to_string())),
            None => (None, None),
        };
        let limit = f.limit.max(1);
        let (total, rows) = self.writer(|c| {
            let total: i64 = c.query_row(
                &format!(
                    "SELECT COUNT(*) FROM subjects s LEFT JOIN approvals a ON a.id = s.id \
                     WHERE {filters}"
                ),
                params![kind, f.tool, risk, f.agent],
                |r| r.get(0),
            )?;
            let rows = c.query_map(
                &format!(
                    "SELECT s.id, s.kind, {RANK} AS rank FROM subjects s \
                     LEFT JOIN approvals a ON a.id = s.id \
                     WHERE {filters} \
                     AND (?5 IS NULL OR {RANK} < ?5 OR ({RANK} = ?5 AND s.id < ?6)) \
                     ORDER BY rank DESC, s.id DESC LIMIT ?7"
                ),
                params![
                    kind,
                    f.tool,
                    risk,
                    f.agent,
                    after_rank,
                    after_id,
                    limit as i64 + 1
                ],
                |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?, r.get::<i64>(2)?)),
            )?;
            Ok((total, rows))
        })?;
        let mut page = OpenPage {
            total: usize::try_from(total).unwrap_or(0),
            ..OpenPage::default()
        };
        let mut last = None;
        for (id, kind, rank) in rows {
            if page.subjects.len() == limit {
                page.next = last.take();
                break;
            }
            let kind = SubjectKind::parse(&kind)
                .ok_or_else(|| StoreError::Corrupt(format!("subject {id} has kind {kind}")))?;
            last = Some(format!("{rank}:{id}"));
            page.subjects.push(Subject { id, kind });
        }
        Ok(page)
    }
}

/// Adds `chats` (platform, chat) to where subject `id` is shown.
pub(super) fn add_audience(tx: &Tx<'_>, id: &str, chats: &[(String, String)]) -> Result<()> {
    for (platform, chat) in chats {
        tx.execute(
            "INSERT INTO subject_audience (subject, platform, chat) VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
            params![id, platform, chat],
        )?;
    }
    Ok(())
}
