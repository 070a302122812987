//! The audit trail: append-only (triggers refuse edits and deletes) and hash-chained,
//! each row carrying the previous row's hash and its own, so `gatebot audit verify`
//! finds an edited, deleted or reordered row even in a copy of the file.
//!
//! How a row is appended, by every writer (the group-commit writer, decisions, chat
//! bookkeeping, standalone rows), through [`audit_conn`]:
//! 1. read the chain's head (`audit_head`: the last row's seq and hash);
//! 2. hash the new row over the head's hash and the row's fields, and insert it;
//! 3. the `audit_head_follows` trigger moves the head to the new row in the same
//!    statement, so the head and the trail cannot disagree unless someone edits the
//!    file (and to make its row count agree with a shorter trail they must drop
//!    `audit_head_counts_every_row`).
//!
//! What [`Store::verify_audit_with`] checks, and what it cannot: see
//! `docs/audit.md`. In short, the trail must be one unbroken chain from its genesis
//! (only the rows written before the chain existed, counted when it was introduced,
//! may lack a hash), must end at the recorded head, every append-only trigger must be
//! in place as the migrations wrote it, and an anchor (a head hash kept outside the
//! machine) must still be in the chain. Someone who can write the file can still
//! rewrite it all consistently; only an anchor kept elsewhere shows that.

use serde_json::Value;

use super::sql::{params, Conn, Row, Tx};
use super::{Result, Store};
use crate::approval::Via;

/// One audit row.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AuditRow {
    pub seq: i64,
    pub at: i64,
    pub approval_id: Option<String>,
    pub event: String,
    pub actor: Option<String>,
    pub channel: Option<String>,
    pub detail: Value,
}

/// Reads one audit row selected as `seq, at, approval_id, event, actor, channel,
/// detail` (a detail that does not parse reads as `null`).
pub(super) fn row_to_audit(r: &Row<'_>) -> Result<AuditRow> {
    let detail: Option<String> = r.get(6)?;
    Ok(AuditRow {
        seq: r.get(0)?,
        at: r.get(1)?,
        approval_id: r.get(2)?,
        event: r.get(3)?,
        actor: r.get(4)?,
        channel: r.get(5)?,
        detail: detail
            .and_then(|d| serde_json::from_str(&d).ok())
            .unwrap_or(Value::Null),
    })
}

/// The result of [`Store::verify_audit`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AuditCheck {
    /// Rows checked.
    pub rows: usize,
    /// Rows written before the chain existed (not verifiable).
    pub unchained: usize,
    /// The chain's head as recorded, if the record is there.
    pub head: Option<AuditHead>,
    /// The row whose hash is the anchor asked for, if it was found in the chain.
    pub anchored_at: Option<i64>,
    /// What is wrong; empty when the trail is intact.
    pub problems: Vec<String>,
}

/// The chain's head: the last row's seq and hash, and how many rows the trail holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AuditHead {
    pub seq: i64,
    /// `None` before the first chained row.
    pub hash: Option<String>,
    pub rows: i64,
}

/// The triggers that keep the trail append-only and its head honest, as the migrations
/// create them (compared with whitespace collapsed and without the final `;`).
const TRIGGERS: [(&str, &str); 5] = [
    (
        "audit_is_append_only_update",
        "CREATE TRIGGER audit_is_append_only_update BEFORE UPDATE ON audit \
         BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END",
    ),
    (
        "audit_is_append_only_delete",
        "CREATE TRIGGER audit_is_append_only_delete BEFORE DELETE ON audit \
         BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END",
    ),
    (
        "audit_head_follows",
        "CREATE TRIGGER audit_head_follows AFTER INSERT ON audit \
         BEGIN UPDATE audit_head SET seq = NEW.seq, hash = NEW.hash, rows = rows + 1 WHERE id = 1; END",
    ),
    (
        "audit_head_counts_every_row",
        "CREATE TRIGGER audit_head_counts_every_row BEFORE UPDATE ON audit_head \
         WHEN NEW.id <> OLD.id OR NEW.rows <> OLD.rows + 1 \
         OR NEW.legacy_rows <> OLD.legacy_rows OR NEW.legacy_through <> OLD.legacy_through \
         BEGIN SELECT RAISE(ABORT, 'the audit head moves one row at a time'); END",
    ),
    (
        "audit_head_is_kept",
        "CREATE TRIGGER audit_head_is_kept BEFORE DELETE ON audit_head \
         BEGIN SELECT RAISE(ABORT, 'the audit head is kept'); END",
    ),
];

/// The same triggers on PostgreSQL, as the baseline migration creates them: each
/// trigger's definition (`pg_get_triggerdef`, the table's schema left out) and the
/// source of the function it runs, compared with whitespace collapsed. Two more refuse
/// `TRUNCATE`, which runs no row trigger there.
const PG_TRIGGERS: [(&str, &str, &str); 7] = [
    (
        "audit_is_append_only_update",
        "CREATE TRIGGER audit_is_append_only_update BEFORE UPDATE ON audit FOR EACH ROW \
         EXECUTE FUNCTION audit_is_append_only_update()",
        "BEGIN RAISE EXCEPTION 'the audit trail is append-only'; END",
    ),
    (
        "audit_is_append_only_delete",
        "CREATE TRIGGER audit_is_append_only_delete BEFORE DELETE ON audit FOR EACH ROW \
         EXECUTE FUNCTION audit_is_append_only_delete()",
        "BEGIN RAISE EXCEPTION 'the audit trail is append-only'; END",
    ),
    (
        "audit_is_append_only_truncate",
        "CREATE TRIGGER audit_is_append_only_truncate BEFORE TRUNCATE ON audit \
         FOR EACH STATEMENT EXECUTE FUNCTION audit_is_append_only_truncate()",
        "BEGIN RAISE EXCEPTION 'the audit trail is append-only'; END",
    ),
    (
        "audit_head_follows",
        "CREATE TRIGGER audit_head_follows AFTER INSERT ON audit FOR EACH ROW \
         EXECUTE FUNCTION audit_head_follows()",
        "BEGIN UPDATE audit_head SET seq = NEW.seq, hash = NEW.hash, rows = rows + 1 \
         WHERE id = 1; RETURN NULL; END",
    ),
    (
        "audit_head_counts_every_row",
        "CREATE TRIGGER audit_head_counts_every_row BEFORE UPDATE ON audit_head FOR EACH ROW \
         WHEN (((new.id <> old.id) OR (new.rows <> (old.rows + 1)) \
         OR (new.legacy_rows <> old.legacy_rows) \
         OR (new.legacy_through <> old.legacy_through))) \
         EXECUTE FUNCTION audit_head_counts_every_row()",
        "BEGIN RAISE EXCEPTION 'the audit head moves one row at a time'; END",
    ),
    (
        "audit_head_is_kept",
        "CREATE TRIGGER audit_head_is_kept BEFORE DELETE ON audit_head FOR EACH ROW \
         EXECUTE FUNCTION audit_head_is_kept()",
        "BEGIN RAISE EXCEPTION 'the audit head is kept'; END",
    ),
    (
        "audit_head_is_kept_truncate",
        "CREATE TRIGGER audit_head_is_kept_truncate BEFORE TRUNCATE ON audit_head \
         FOR EACH STATEMENT EXECUTE FUNCTION audit_head_is_kept_truncate()",
        "BEGIN RAISE EXCEPTION 'the audit head is kept'; END",
    ),
];

/// Rows [`Store::verify_audit_with`] reads under one lock; the lock is released between
/// pages so the daemon keeps answering while a long trail is checked.
const VERIFY_PAGE: i64 = 2000;

/// SQL with runs of whitespace collapsed and without a final `;`, to compare triggers.
fn normalised(sql: &str) -> String {
    sql.trim()
        .trim_end_matches(';')
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

impl Store {
    /// Appends an audit row that is not part of a state change (refused attempts,
    /// config reloads, daemon start).
    pub fn audit(
        &self,
        now: i64,
        approval_id: Option<&str>,
        event: &str,
        actor: Option<&str>,
        channel: Option<&Via>,
        detail: &Value,
    ) -> Result<()> {
        let channel = channel.map(Via::as_str);
        self.write(|tx| audit_conn(tx, now, approval_id, event, actor, channel, detail))?;
        Ok(())
    }

    /// Audit rows, oldest first, optionally for one approval and/or since a time.
    pub fn audit_rows(
        &self,
        approval_id: Option<&str>,
        since: Option<i64>,
    ) -> Result<Vec<AuditRow>> {
        self.audit_page(approval_id, since, 0, i64::MAX, i64::MAX)
    }

    /// The highest seq in the trail (0 when it is empty): where a reader that started
    /// now stops, so a trail that grows meanwhile still ends.
    pub fn audit_last_seq(&self) -> Result<i64> {
        self.writer(|c| {
            c.query_row("SELECT COALESCE(MAX(seq), 0) FROM audit", params![], |r| {
                r.get(0)
            })
        })
    }

    /// Up to `limit` audit rows with `after < seq <= until`, oldest first, optionally
    /// for one approval and/or since a time: one page of a trail read in pages.
    pub fn audit_page(
        &self,
        approval_id: Option<&str>,
        since: Option<i64>,
        after: i64,
        until: i64,
        limit: i64,
    ) -> Result<Vec<AuditRow>> {
        self.read(|c| {
            c.query_map(
                "SELECT seq, at, approval_id, event, actor, channel, detail FROM audit \
                 WHERE (?1 IS NULL OR approval_id = ?1) AND (?2 IS NULL OR at >= ?2) \
                 AND seq > ?3 AND seq <= ?4 ORDER BY seq LIMIT ?5",
                params![approval_id, since, after, until, limit],
                row_to_audit,
            )
        })
    }

    /// The chain's head as recorded; `None` if the record was removed.
    pub fn audit_head(&self) -> Result<Option<AuditHead>> {
        self.writer(|c| head_conn(c))
    }

    /// [`Store::verify_audit_with`] without an anchor.
    pub fn verify_audit(&self) -> Result<AuditCheck> {
        self.verify_audit_with(None)
    }

    /// Recomputes the audit hash chain and reports every break: an edited row (its
    /// hash no longer matches), a deleted or reordered row (the next row's prev_hash
    /// no longer matches), a row without a hash after the rows that predate the chain,
    /// rows cut off the end or an emptied table (the recorded head, or the highest seq
    /// ever issued, is past the last row), a missing or changed trigger, and an
    /// `anchor` (a head hash printed earlier) that is no longer in the chain.
    ///
    /// Rows appended while it runs are not checked: it checks the trail up to the head
    /// it reads first, a page at a time.
    pub fn verify_audit_with(&self, anchor: Option<&str>) -> Result<AuditCheck> {
        let mut check = AuditCheck {
            rows: 0,
            unchained: 0,
            head: None,
            anchored_at: None,
            problems: Vec::new(),
        };
        let (head, legacy, issued) = self.writer(|c| {
            let legacy: Option<(i64, i64)> = c.query_opt(
                "SELECT legacy_rows, legacy_through FROM audit_head WHERE id = 1",
                params![],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            // SQLite also keeps the highest seq ever issued apart from the head;
            // PostgreSQL numbers rows from the head itself.
            let issued: Option<i64> = if c.is_postgres() {
                None
            } else {
                c.query_opt(
                    "SELECT seq FROM sqlite_sequence WHERE name = 'audit'",
                    params![],
                    |r| r.get(0),
                )?
            };
            if c.is_postgres() {
                check_pg_triggers(c, &mut check.problems)?;
            } else {
                check_triggers(c, &mut check.problems)?;
            }
            Ok((head_conn(c)?, legacy, issued))
        })?;
        let Some(head) = head else {
            check.problems.push(
                "the chain's head record (audit_head) is missing: the end of the trail \
                 cannot be checked"
                    .into(),
            );
            return Ok(check);
        };
        check.head = Some(head.clone());
        let (legacy_rows, legacy_through) = legacy.unwrap_or((0, 0));
        let mut walk = ChainWalk {
            legacy_rows,
            legacy_through,
            anchor,
            prev: None,
            link_unknown: false,
            last_seq: 0,
            last_hash: None,
        };
        let mut after = 0;
        loop {
            let page = self.audit_chain_page(after, head.seq, VERIFY_PAGE)?;
            let Some(last) = page.last() else { break };
            after = last.seq;
            for row in page {
                walk.row(&mut check, row);
            }
        }
        walk.ends(&mut check, &head, issued);
        Ok(check)
    }

    /// Up to `limit` rows with `after < seq <= until`, oldest first, with their hashes.
    fn audit_chain_page(&self, after: i64, until: i64, limit: i64) -> Result<Vec<ChainRow>> {
        self.read(|c| {
            c.query_map(
                "SELECT seq, at, approval_id, event, actor, channel, detail, prev_hash, hash \
                 FROM audit WHERE seq > ?1 AND seq <= ?2 ORDER BY seq LIMIT ?3",
                params![after, until, limit],
                |r| {
                    Ok(ChainRow {
                        seq: r.get(0)?,
                        at: r.get(1)?,
                        approval_id: r.get(2)?,
                        event: r.get(3)?,
                        actor: r.get(4)?,
                        channel: r.get(5)?,
                        detail: r.get::<Option<String>>(6)?.unwrap_or_default(),
                        prev_hash: r.get(7)?,
                        hash: r.get(8)?,
                    })
                },
            )
        })
    }
}

/// Checks that the trail's triggers are there as written, noting each that is not.
fn check_triggers(conn: &Conn<'_>, problems: &mut Vec<String>) -> Result<()> {
    for (name, want) in TRIGGERS {
        let sql: Option<String> = conn
            .query_opt(
                "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = ?1",
                params![name],
                |r| r.get::<Option<String>>(0),
            )?
            .flatten();
        match sql {
            None => problems.push(format!(
                "the trigger {name} is missing: the trail is no longer protected \
                 against edits (was it dropped to change rows?)"
            )),
            Some(sql) if normalised(&sql) != normalised(want) => problems.push(format!(
                "the trigger {name} was changed: it no longer protects the trail"
            )),
            Some(_) => {}
        }
    }
    Ok(())
}

/// [`check_triggers`] on PostgreSQL: each trigger there, switched on, as written, and
/// running the function as written.
fn check_pg_triggers(conn: &Conn<'_>, problems: &mut Vec<String>) -> Result<()> {
    for (name, want, body) in PG_TRIGGERS {
        let found: Option<(String, String, String, String)> = conn.query_opt(
            "SELECT pg_get_triggerdef(t.oid), n.nspname, t.tgenabled::text, p.prosrc \
             FROM pg_trigger t \
             JOIN pg_class c ON c.oid = t.tgrelid \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             JOIN pg_proc p ON p.oid = t.tgfoid \
             WHERE t.tgname = ?1 AND NOT t.tgisinternal \
             AND c.relname IN ('audit', 'audit_head') \
             AND n.nspname = current_schema()",
            params![name],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )?;
        match found {
            None => problems.push(format!(
                "the trigger {name} is missing: the trail is no longer protected \
                 against edits (was it dropped to change rows?)"
            )),
            Some((_, _, enabled, _)) if enabled != "O" => problems.push(format!(
                "the trigger {name} is switched off: the trail is no longer protected \
                 against edits"
            )),
            Some((def, schema, _, source)) => {
                let def = def.replace(&format!(" ON {schema}."), " ON ");
                if normalised(&def) != normalised(want) || normalised(&source) != normalised(body) {
                    problems.push(format!(
                        "the trigger {name} was changed: it no longer protects the trail"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// [`Store::verify_audit_with`]'s walk along the chain, row by row, oldest first.
struct ChainWalk<'a> {
    /// Rows written before the chain existed, and the last of them.
    legacy_rows: i64,
    legacy_through: i64,
    anchor: Option<&'a str>,
    /// The hash of the last chained row.
    prev: Option<String>,
    /// After a row without a hash, the next row's link cannot be checked.
    link_unknown: bool,
    last_seq: i64,
    last_hash: Option<String>,
}

impl ChainWalk<'_> {
    /// Checks one row: its place, its link to the row before and its own hash.
    fn row(&mut self, check: &mut AuditCheck, row: ChainRow) {
        let seq = row.seq;
        check.rows += 1;
        if seq <= self.legacy_through {
            // Written before the chain existed: nothing to recompute.
            if row.hash.is_some() {
                check.problems.push(format!(
                    "row {seq} predates the chain but carries a hash (it was changed)"
                ));
            } else {
                check.unchained += 1;
            }
            self.last_seq = seq;
            return;
        }
        if seq != self.last_seq + 1 {
            check.problems.push(format!(
                "rows {}..{} are missing",
                self.last_seq + 1,
                seq - 1
            ));
        }
        self.last_seq = seq;
        let Some(hash) = row.hash.clone() else {
            check.problems.push(format!(
                "row {seq} has no hash: only the {} rows written before \
                 the chain existed may lack one",
                self.legacy_rows
            ));
            self.link_unknown = true;
            self.last_hash = None;
            return;
        };
        let skip_link = std::mem::take(&mut self.link_unknown);
        if !skip_link && row.prev_hash != self.prev {
            check.problems.push(match self.prev {
                None => format!(
                    "row {seq} follows a row that is no longer in the trail (rows \
                     before it were removed or their hashes erased)"
                ),
                Some(_) => format!(
                    "row {seq} does not follow the row before it (a row was deleted \
                     or reordered)"
                ),
            });
        }
        let expect = audit_hash(
            row.prev_hash.as_deref(),
            row.at,
            row.approval_id.as_deref(),
            &row.event,
            row.actor.as_deref(),
            row.channel.as_deref(),
            &row.detail,
        );
        if expect != hash {
            check.problems.push(format!(
                "row {seq} ({}) was changed after it was written",
                row.event
            ));
        }
        if self.anchor == Some(hash.as_str()) {
            check.anchored_at = Some(seq);
        }
        self.prev = Some(hash.clone());
        self.last_hash = Some(hash);
    }

    /// After the last row: what the walk found against what the head records, the
    /// highest seq ever issued (`issued`) and the anchor asked for.
    fn ends(self, check: &mut AuditCheck, head: &AuditHead, issued: Option<i64>) {
        let (legacy_rows, last_seq) = (self.legacy_rows, self.last_seq);
        if check.unchained as i64 != legacy_rows {
            check.problems.push(format!(
                "{} rows written before the chain existed are left of the {legacy_rows} \
                 there were (rows were removed, or hashes erased)",
                check.unchained
            ));
        }
        if head.seq > last_seq {
            check.problems.push(format!(
                "rows {}..{} were removed from the end (the chain's head is row {})",
                last_seq + 1,
                head.seq,
                head.seq
            ));
        } else if self.last_hash != head.hash {
            check
                .problems
                .push(format!("row {last_seq} is not the chain's recorded head"));
        }
        if check.rows as i64 != head.rows {
            check.problems.push(format!(
                "the trail holds {} rows but its head counts {}: rows were removed",
                check.rows, head.rows
            ));
        }
        if let Some(issued) = issued {
            if issued > head.seq.max(last_seq) {
                check.problems.push(format!(
                    "rows {}..{issued} were removed from the end",
                    head.seq.max(last_seq) + 1
                ));
            }
        }
        if let Some(anchor) = self.anchor {
            if check.anchored_at.is_none() {
                check.problems.push(format!(
                    "the anchored head {anchor} is not in the chain: rows up to it were \
                     removed or rewritten"
                ));
            }
        }
    }
}

/// A row as the chain sees it: the stored text of every hashed field.
struct ChainRow {
    seq: i64,
    at: i64,
    approval_id: Option<String>,
    event: String,
    actor: Option<String>,
    channel: Option<String>,
    detail: String,
    prev_hash: Option<String>,
    hash: Option<String>,
}

fn head_conn(conn: &Conn<'_>) -> Result<Option<AuditHead>> {
    conn.query_opt(
        "SELECT seq, hash, rows FROM audit_head WHERE id = 1",
        params![],
        |r| {
            Ok(AuditHead {
                seq: r.get(0)?,
                hash: r.get(1)?,
                rows: r.get(2)?,
            })
        },
    )
}

/// Appends an audit row inside the caller's transaction, so the row commits or rolls
/// back with the state change it records.
pub(super) fn audit_tx(
    tx: &Tx<'_>,
    now: i64,
    approval_id: Option<&str>,
    event: &str,
    actor: Option<&str>,
    channel: Option<&Via>,
    detail: &Value,
) -> Result<()> {
    audit_conn(
        tx,
        now,
        approval_id,
        event,
        actor,
        channel.map(Via::as_str),
        detail,
    )?;
    Ok(())
}

/// Appends an audit row in the caller's transaction; returns its seq.
pub(super) fn audit_conn(
    tx: &Tx<'_>,
    now: i64,
    approval_id: Option<&str>,
    event: &str,
    actor: Option<&str>,
    channel: Option<&str>,
    detail: &Value,
) -> Result<i64> {
    // Chain onto the recorded head, not onto whatever row is last now: after rows were
    // cut off the end, the next row then shows the cut too. Callers hold the
    // connection's mutex (one writer), so the head cannot move between this read and
    // the insert; the insert moves it (trigger `audit_head_follows`).

    let prev: Option<String> = tx
        .query_opt("SELECT hash FROM audit_head WHERE id = 1", params![], |r| {
            r.get::<Option<String>>(0)
        })?
        .flatten();
    let detail = detail.to_string();
    let hash = audit_hash(
        prev.as_deref(),
        now,
        approval_id,
        event,
        actor,
        channel,
        &detail,
    );
    let row = params![now, approval_id, event, actor, channel, detail, prev, hash];
    if tx.is_postgres() {
        // No sequence there (a rolled-back append would leave a gap): the next number
        // is the head's plus one, and the cluster's writer lock, which this
        // transaction holds, keeps anyone else from taking it meanwhile.
        let seq = tx.query_row(
            "INSERT INTO audit (seq, at, approval_id, event, actor, channel, detail, \
                                prev_hash, hash) \
             VALUES ((SELECT seq + 1 FROM audit_head WHERE id = 1), \
                     ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
             RETURNING seq",
            row,
            |r| r.get(0),
        )?;
        tx.note_appended(seq);
        return Ok(seq);
    }
    tx.execute(
        "INSERT INTO audit (at, approval_id, event, actor, channel, detail, prev_hash, hash) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        row,
    )?;
    Ok(tx.last_insert_rowid())
}

/// The hash of one audit row, chained to the previous row's hash.
fn audit_hash(
    prev: Option<&str>,
    at: i64,
    approval_id: Option<&str>,
    event: &str,
    actor: Option<&str>,
    channel: Option<&str>,
    detail: &str,
) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    // Length-prefix every field so no two different rows hash the same input.
    for field in [
        prev.unwrap_or(""),
        &at.to_string(),
        approval_id.unwrap_or("\0"),
        event,
        actor.unwrap_or("\0"),
        channel.unwrap_or("\0"),
        detail,
    ] {
        h.update((field.len() as u64).to_le_bytes());
        h.update(field.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::Verb;
    use crate::store::tests::{decision, inserted, new};

    #[test]
    fn the_audit_trail_refuses_edits_and_deletes() {
        let s = Store::open_in_memory().unwrap();
        inserted(&s, &new("m", "t", None, None));
        for refused in [
            "UPDATE audit SET event = 'x'",
            "DELETE FROM audit",
            "DELETE FROM audit_head",
            "UPDATE audit_head SET rows = 0",
        ] {
            assert!(s.raw(refused).is_err(), "{refused}");
        }
        if s.is_postgres() {
            // TRUNCATE runs no row trigger there; SQLite has no TRUNCATE.
            assert!(s.raw("TRUNCATE audit").is_err());
            assert!(s.raw("TRUNCATE audit_head").is_err());
        }
        assert!(s.verify_audit().unwrap().problems.is_empty());
    }

    #[test]
    fn a_dropped_switched_off_or_changed_trigger_shows() {
        let s = Store::open_in_memory().unwrap();
        inserted(&s, &new("m", "t", None, None));
        let problems = |s: &Store| s.verify_audit().unwrap().problems;
        assert!(problems(&s).is_empty(), "{:?}", problems(&s));
        let has = |p: &[String], needle: &str| p.iter().any(|m| m.contains(needle));
        if s.is_postgres() {
            s.raw("ALTER TABLE audit DISABLE TRIGGER audit_is_append_only_update")
                .unwrap();
            let p = problems(&s);
            assert!(
                has(&p, "audit_is_append_only_update is switched off"),
                "{p:?}"
            );
            s.raw(
                "ALTER TABLE audit ENABLE TRIGGER audit_is_append_only_update; \
                 CREATE OR REPLACE FUNCTION audit_head_is_kept() RETURNS trigger \
                 LANGUAGE plpgsql AS $$ BEGIN RETURN OLD; END $$",
            )
            .unwrap();
            let p = problems(&s);
            assert!(has(&p, "audit_head_is_kept was changed"), "{p:?}");
            assert!(!has(&p, "switched off"), "{p:?}");
            s.raw("DROP TRIGGER audit_is_append_only_truncate ON audit")
                .unwrap();
            let p = problems(&s);
            assert!(has(&p, "audit_is_append_only_truncate is missing"), "{p:?}");
        } else {
            s.raw("DROP TRIGGER audit_head_is_kept").unwrap();
            let p = problems(&s);
            assert!(has(&p, "audit_head_is_kept is missing"), "{p:?}");
        }
    }

    #[test]
    fn audit_verify_passes_an_intact_trail_and_finds_each_kind_of_tampering() {
        let s = Store::open_in_memory().unwrap();
        for i in 0..4 {
            let a = inserted(&s, &new("m", &format!("t{i}"), None, None));
            s.decide(&a.id, &decision(Verb::Approve, "alice"), 9)
                .unwrap();
        }
        let ok = s.verify_audit().unwrap();
        assert_eq!(ok.rows, 12);
        assert!(ok.problems.is_empty(), "{:?}", ok.problems);

        let tamper = |sql: &str| {
            let _ = s.raw(if s.is_postgres() {
                "DROP TRIGGER audit_is_append_only_update ON audit; \
                 DROP TRIGGER audit_is_append_only_delete ON audit"
            } else {
                "DROP TRIGGER audit_is_append_only_update; DROP TRIGGER audit_is_append_only_delete;"
            });
            s.raw(sql).unwrap();
        };
        tamper("UPDATE audit SET actor = 'mallory' WHERE seq = 3");
        let p = s.verify_audit().unwrap().problems;
        assert!(
            p.iter()
                .any(|m| m.contains("row 3") && m.contains("changed")),
            "{p:?}"
        );

        tamper("UPDATE audit SET actor = 'alice' WHERE seq = 3; DELETE FROM audit WHERE seq = 5");
        let p = s.verify_audit().unwrap().problems;
        assert!(
            p.iter().any(|m| m.contains("rows 5..5 are missing")),
            "{p:?}"
        );
        assert!(
            p.iter().any(|m| m.contains("row 6 does not follow")),
            "{p:?}"
        );

        tamper("DELETE FROM audit WHERE seq >= 11");
        let p = s.verify_audit().unwrap().problems;
        assert!(
            p.iter().any(|m| m.contains("removed from the end")),
            "{p:?}"
        );
    }
}

#[cfg(test)]
mod chain_tests {
    //! The tampering a plain hash chain misses: rows cut off the end with the sequence
    //! lowered, hashes erased to pass as "written before the chain", an emptied table,
    //! dropped triggers; and the anchor kept outside the machine.

    use rusqlite::Connection;

    use super::*;
    use crate::store::tests::{inserted, new};

    /// A store on a file with `n` requests (two audit rows each).
    fn trail(dir: &std::path::Path, n: usize) -> Store {
        let s = Store::open(&dir.join("g.db")).unwrap();
        for i in 0..n {
            inserted(&s, &new("m", &format!("t{i}"), None, None));
        }
        s
    }

    /// Runs `sql` as someone with write access to the file would, triggers dropped first.
    fn tamper(s: &Store, sql: &str) {
        let conn = s.lock();
        for (name, _) in TRIGGERS {
            conn.execute_batch(&format!("DROP TRIGGER IF EXISTS {name}"))
                .unwrap();
        }
        conn.execute_batch(sql).unwrap();
    }

    /// Puts the triggers back exactly as the migrations wrote them.
    fn restore_triggers(s: &Store) {
        let conn = s.lock();
        for (_, sql) in TRIGGERS {
            conn.execute_batch(sql).unwrap();
        }
    }

    fn problems(s: &Store) -> Vec<String> {
        s.verify_audit().unwrap().problems
    }

    fn has(p: &[String], needle: &str) -> bool {
        p.iter().any(|m| m.contains(needle))
    }

    #[test]
    fn an_intact_trail_ends_at_its_head_and_every_trigger_is_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let s = trail(dir.path(), 3);
        let check = s.verify_audit().unwrap();
        assert!(check.problems.is_empty(), "{:?}", check.problems);
        let head = check.head.unwrap();
        assert_eq!((head.seq, head.rows, check.rows), (6, 6, 6));
        assert_eq!(head, s.audit_head().unwrap().unwrap());
    }

    #[test]
    fn rows_cut_off_the_end_show_even_with_the_sequence_lowered() {
        let dir = tempfile::tempdir().unwrap();
        let s = trail(dir.path(), 3);
        tamper(
            &s,
            "DELETE FROM audit WHERE seq > 4; UPDATE sqlite_sequence SET seq = 4 WHERE name = 'audit';",
        );
        restore_triggers(&s);
        let p = problems(&s);
        assert!(has(&p, "rows 5..6 were removed from the end"), "{p:?}");
        assert!(has(&p, "holds 4 rows but its head counts 6"), "{p:?}");
        // The next row chains onto the recorded head, so the cut stays visible.
        inserted(&s, &new("m", "after", None, None));
        let p = problems(&s);
        assert!(has(&p, "row 5 does not follow"), "{p:?}");
    }

    #[test]
    fn a_head_moved_back_with_the_cut_needs_the_triggers_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let s = trail(dir.path(), 3);
        tamper(
            &s,
            "DELETE FROM audit WHERE seq > 4; UPDATE sqlite_sequence SET seq = 4 WHERE name = 'audit';
             UPDATE audit_head SET seq = 4, rows = 4, hash = (SELECT hash FROM audit WHERE seq = 4);",
        );
        let p = problems(&s);
        assert!(has(&p, "audit_head_counts_every_row is missing"), "{p:?}");
        assert!(has(&p, "audit_is_append_only_delete is missing"), "{p:?}");
    }

    #[test]
    fn erased_hashes_do_not_pass_as_rows_from_before_the_chain() {
        let dir = tempfile::tempdir().unwrap();
        let s = trail(dir.path(), 3);
        tamper(
            &s,
            "UPDATE audit SET hash = NULL, prev_hash = NULL, actor = 'mallory' WHERE seq <= 2;",
        );
        restore_triggers(&s);
        let p = problems(&s);
        assert!(has(&p, "row 1 has no hash"), "{p:?}");
        assert!(has(&p, "row 2 has no hash"), "{p:?}");
    }

    #[test]
    fn an_emptied_trail_shows() {
        let dir = tempfile::tempdir().unwrap();
        let s = trail(dir.path(), 2);
        tamper(
            &s,
            "DELETE FROM audit; DELETE FROM sqlite_sequence WHERE name = 'audit';",
        );
        restore_triggers(&s);
        let p = problems(&s);
        assert!(has(&p, "rows 1..4 were removed from the end"), "{p:?}");
        assert!(has(&p, "holds 0 rows but its head counts 4"), "{p:?}");
        // With the head record gone too.
        tamper(&s, "DELETE FROM audit_head;");
        restore_triggers(&s);
        let p = problems(&s);
        assert!(has(&p, "head record (audit_head) is missing"), "{p:?}");
    }

    #[test]
    fn dropped_or_changed_triggers_fail_the_check_before_any_row_changes() {
        let dir = tempfile::tempdir().unwrap();
        let s = trail(dir.path(), 1);
        s.lock()
            .execute_batch(
                "DROP TRIGGER audit_is_append_only_update; DROP TRIGGER audit_is_append_only_delete;",
            )
            .unwrap();
        let p = problems(&s);
        assert!(has(&p, "audit_is_append_only_update is missing"), "{p:?}");
        assert!(has(&p, "audit_is_append_only_delete is missing"), "{p:?}");
        // A trigger of the same name that lets everything through.
        s.lock()
            .execute_batch(
                "CREATE TRIGGER audit_is_append_only_update BEFORE UPDATE ON audit WHEN 0 \
                 BEGIN SELECT RAISE(ABORT, 'the audit trail is append-only'); END;",
            )
            .unwrap();
        assert!(has(
            &problems(&s),
            "audit_is_append_only_update was changed"
        ));
    }

    #[test]
    fn an_anchor_kept_elsewhere_shows_a_consistent_rewrite() {
        let dir = tempfile::tempdir().unwrap();
        let s = trail(dir.path(), 2);
        let anchor = s.audit_head().unwrap().unwrap().hash.unwrap();
        inserted(&s, &new("m", "later", None, None));
        let check = s.verify_audit_with(Some(&anchor)).unwrap();
        assert!(check.problems.is_empty(), "{:?}", check.problems);
        assert_eq!(check.anchored_at, Some(4));

        // Someone rewrites the trail from row 3 on, recomputing every hash and the head,
        // and puts the triggers back: nothing inside the file shows it...
        tamper(
            &s,
            "DELETE FROM audit WHERE seq >= 3; DELETE FROM audit_head;
             INSERT INTO audit_head (id, seq, hash, rows, legacy_rows, legacy_through)
                 SELECT 1, 2, hash, 2, 0, 0 FROM audit WHERE seq = 2;
             UPDATE sqlite_sequence SET seq = 2 WHERE name = 'audit';",
        );
        restore_triggers(&s);
        inserted(&s, &new("m", "forged", None, None));
        inserted(&s, &new("m", "forged", None, None));
        assert!(problems(&s).is_empty(), "{:?}", problems(&s));
        // ...but the anchor taken before is no longer in the chain.
        let check = s.verify_audit_with(Some(&anchor)).unwrap();
        assert_eq!(check.anchored_at, None);
        assert!(
            has(&check.problems, "is not in the chain"),
            "{:?}",
            check.problems
        );
    }

    #[test]
    fn rows_from_before_the_chain_are_allowed_only_as_the_prefix_they_were() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.db");
        {
            // A database from before the chain (migrations 0001 and 0002) with two rows.
            let mut conn = Connection::open(&path).unwrap();
            crate::store::migrations().to_version(&mut conn, 2).unwrap();
            conn.execute_batch(
                "INSERT INTO audit (at, event) VALUES (1, 'daemon_started'), (2, 'config_reloaded');",
            )
            .unwrap();
        }
        let s = Store::open(&path).unwrap();
        inserted(&s, &new("m", "t", None, None));
        let check = s.verify_audit().unwrap();
        assert!(check.problems.is_empty(), "{:?}", check.problems);
        assert_eq!((check.rows, check.unchained), (4, 2));

        // Deleting one of them, or erasing the first chained row's hash, shows.
        tamper(&s, "DELETE FROM audit WHERE seq = 1;");
        restore_triggers(&s);
        assert!(has(
            &problems(&s),
            "1 rows written before the chain existed are left of the 2"
        ));
        tamper(&s, "UPDATE audit SET hash = NULL WHERE seq = 3;");
        restore_triggers(&s);
        assert!(has(&problems(&s), "row 3 has no hash"));
    }
}
