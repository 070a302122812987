//! The `subjects` table's rows, written in the transaction of whatever creates or
//! changes a subject (a request that asks a human, a task, a check-in, a proposal): its
//! short id, its revision and whether it is open, its home and parent. The files of
//! each table call these; chat bookkeeping (`chat`) reads the rows back. A leaf: it uses
//! no other table's file.

use rusqlite::{params, Transaction};

use super::Result;
use crate::approval::new_short_id;
use crate::subject::{Home, SubjectKind};

/// A short id no request and no subject has: a request's short id names it in
/// `gatebot status`, a subject's in `gatebot decide` and chat commands.
pub(super) fn unique_short_id(tx: &Transaction<'_>) -> Result<String> {
    loop {
        let candidate = new_short_id();
        let taken: bool = tx
            .prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM approvals WHERE short_id = ?1) \
                 OR EXISTS (SELECT 1 FROM subjects WHERE short_id = ?1)",
            )?
            .query_row([&candidate], |r| r.get(0))?;
        if !taken {
            return Ok(candidate);
        }
    }
}

/// A short id [`unique_short_id`] would give that no row of `table` has either: for
/// things with short ids of their own that are no subjects (runs, grants), so an owner's
/// `k7m2` never names two things at once.
pub(super) fn unique_short_id_beside(tx: &Transaction<'_>, table: &'static str) -> Result<String> {
    loop {
        let candidate = unique_short_id(tx)?;
        let taken: bool = tx
            .prepare_cached(&format!(
                "SELECT EXISTS (SELECT 1 FROM {table} WHERE short_id = ?1)"
            ))?
            .query_row([&candidate], |r| r.get(0))?;
        if !taken {
            return Ok(candidate);
        }
    }
}

/// Records a new subject (in the transaction that creates it), open.
pub(super) fn subject_created(
    tx: &Transaction<'_>,
    id: &str,
    kind: SubjectKind,
    short_id: &str,
    revision: &str,
    now: i64,
) -> Result<()> {
    tx.prepare_cached(
        "INSERT INTO subjects (id, kind, short_id, open, revision, created_at) \
         VALUES (?1, ?2, ?3, 1, ?4, ?5)",
    )?
    .execute(params![id, kind.as_str(), short_id, revision, now])?;
    Ok(())
}

/// Moves a subject to `revision`, open or not (in the transaction of the change). A
/// request that never asked a human has no subject row, and nothing happens.
pub(super) fn subject_changed(
    tx: &Transaction<'_>,
    id: &str,
    open: bool,
    revision: &str,
) -> Result<()> {
    tx.prepare_cached("UPDATE subjects SET open = ?2, revision = ?3 WHERE id = ?1")?
        .execute(params![id, open, revision])?;
    Ok(())
}

/// Gives a new subject its home and its parent (in the transaction that creates it).
pub(super) fn set_home(
    tx: &Transaction<'_>,
    id: &str,
    home: Option<&Home>,
    parent: Option<&str>,
) -> Result<()> {
    if home.is_none() && parent.is_none() {
        return Ok(());
    }
    let thread = home.and_then(|h| h.thread.as_ref());
    tx.prepare_cached(
        "UPDATE subjects SET home_platform = ?2, home_chat = ?3, home_reply_to = ?4, \
         home_root = ?5, parent = ?6 WHERE id = ?1",
    )?
    .execute(params![
        id,
        home.map(|h| h.platform.as_str()),
        home.map(|h| h.chat.as_str()),
        thread.map(|t| t.reply_to.as_str()),
        thread.map(|t| t.root.as_str()),
        parent
    ])?;
    Ok(())
}

/// Gives a new subject the home of `parent` (without its thread: it goes under the
/// parent's card instead), and `parent` as parent.
pub(super) fn inherit_home(tx: &Transaction<'_>, id: &str, parent: &str) -> Result<()> {
    tx.prepare_cached(
        "UPDATE subjects SET home_platform = p.home_platform, home_chat = p.home_chat, parent = ?2 \
         FROM (SELECT home_platform, home_chat FROM subjects WHERE id = ?2) AS p \
         WHERE subjects.id = ?1",
    )?
    .execute(params![id, parent])?;
    Ok(())
}
