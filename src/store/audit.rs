//! The audit trail: append-only (triggers refuse edits and deletes) and hash-chained,
//! each row carrying the previous row's hash and its own, so `gatebot audit verify`
//! finds an edited, deleted or reordered row even in a copy of the file.

use rusqlite::{params, Connection, OptionalExtension, Transaction};
use serde_json::Value;

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

/// The result of [`Store::verify_audit`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AuditCheck {
    /// Rows checked.
    pub rows: usize,
    /// Rows written before the chain existed (not verifiable).
    pub unchained: usize,
    /// What is wrong; empty when the trail is intact.
    pub problems: Vec<String>,
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
        let conn = self.lock();
        audit_conn(&conn, now, approval_id, event, actor, channel, detail)
    }

    /// Audit rows, oldest first, optionally for one approval and/or since a time.
    pub fn audit_rows(
        &self,
        approval_id: Option<&str>,
        since: Option<i64>,
    ) -> Result<Vec<AuditRow>> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT seq, at, approval_id, event, actor, channel, detail FROM audit \
             WHERE (?1 IS NULL OR approval_id = ?1) AND (?2 IS NULL OR at >= ?2) ORDER BY seq",
        )?;
        let rows = stmt.query_map(params![approval_id, since], |r| {
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
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Recomputes the audit hash chain and reports every break: an edited row (its
    /// hash no longer matches), a deleted or reordered row (the next row's prev_hash
    /// no longer matches), or rows cut off the end (the highest seq ever issued is
    /// larger than the last row's).
    pub fn verify_audit(&self) -> Result<AuditCheck> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT seq, at, approval_id, event, actor, channel, detail, prev_hash, hash \
             FROM audit ORDER BY seq",
        )?;
        type Row = (
            i64,
            i64,
            Option<String>,
            String,
            Option<String>,
            Option<String>,
            String,
            Option<String>,
            Option<String>,
        );
        let rows: Vec<Row> = stmt
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get::<_, Option<String>>(6)?.unwrap_or_default(),
                    r.get(7)?,
                    r.get(8)?,
                ))
            })?
            .collect::<std::result::Result<_, _>>()?;
        let mut check = AuditCheck {
            rows: rows.len(),
            unchained: 0,
            problems: Vec::new(),
        };
        let mut prev: Option<String> = None;
        let mut chained = false;
        let mut last_seq = 0;
        for (seq, at, approval_id, event, actor, channel, detail, prev_hash, hash) in rows {
            if seq != last_seq + 1 && chained {
                check
                    .problems
                    .push(format!("rows {}..{} are missing", last_seq + 1, seq - 1));
            }
            last_seq = seq;
            let Some(hash) = hash else {
                if chained {
                    check.problems.push(format!("row {seq} has no hash"));
                } else {
                    check.unchained += 1;
                }
                continue;
            };
            if chained && prev_hash != prev {
                check.problems.push(format!(
                    "row {seq} does not follow the row before it (a row was deleted or reordered)"
                ));
            }
            let expect = audit_hash(
                prev_hash.as_deref(),
                at,
                approval_id.as_deref(),
                &event,
                actor.as_deref(),
                channel.as_deref(),
                &detail,
            );
            if expect != hash {
                check.problems.push(format!(
                    "row {seq} ({event}) was changed after it was written"
                ));
            }
            chained = true;
            prev = Some(hash);
        }
        let issued: Option<i64> = conn
            .query_row(
                "SELECT seq FROM sqlite_sequence WHERE name = 'audit'",
                [],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(issued) = issued {
            if issued > last_seq {
                check.problems.push(format!(
                    "rows {}..{issued} were removed from the end",
                    last_seq + 1
                ));
            }
        }
        Ok(check)
    }
}

/// Appends an audit row inside the caller's transaction, so the row commits or rolls
/// back with the state change it records.
pub(super) fn audit_tx(
    tx: &Transaction<'_>,
    now: i64,
    approval_id: Option<&str>,
    event: &str,
    actor: Option<&str>,
    channel: Option<&Via>,
    detail: &Value,
) -> Result<()> {
    audit_conn(tx, now, approval_id, event, actor, channel, detail)
}

fn audit_conn(
    conn: &Connection,
    now: i64,
    approval_id: Option<&str>,
    event: &str,
    actor: Option<&str>,
    channel: Option<&Via>,
    detail: &Value,
) -> Result<()> {
    // Callers hold the connection's mutex (one writer), so the last hash cannot
    // change between this read and the insert.
    let prev: Option<String> = conn
        .prepare_cached("SELECT hash FROM audit ORDER BY seq DESC LIMIT 1")?
        .query_row([], |r| r.get(0))
        .optional()?
        .flatten();
    let channel = channel.map(Via::as_str);
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
    conn.prepare_cached(
        "INSERT INTO audit (at, approval_id, event, actor, channel, detail, prev_hash, hash) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        now,
        approval_id,
        event,
        actor,
        channel,
        detail,
        prev,
        hash
    ])?;
    Ok(())
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
        let conn = s.lock();
        assert!(conn.execute("UPDATE audit SET event = 'x'", []).is_err());
        assert!(conn.execute("DELETE FROM audit", []).is_err());
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
            let conn = s.lock();
            conn.execute_batch(
                "DROP TRIGGER audit_is_append_only_update; DROP TRIGGER audit_is_append_only_delete;",
            )
            .ok();
            conn.execute_batch(sql).unwrap();
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
