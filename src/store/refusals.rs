//! Refused attempts, coalesced per key and window (the policy is the engine's, in
//! `engine::refusal`; this is its bookkeeping). Each call is one transaction:
//! 1. [`Store::record_refusal`]: inside the key's open window, the attempt only counts
//!    (`refusal_windows.repeats`); otherwise an ended window is closed (below) and the
//!    attempt is an `unauthorised_attempt` audit row that opens a new window.
//! 2. Closing a window ([`Store::close_refusal_windows`], or step 1 for its key) turns
//!    its count, if any, into one more `unauthorised_attempt` row (`count`,
//!    `repeats_of` the first row, `first_at`, `last_at`) and deletes the window.
//!
//! The chain stays append-only: a row is never updated; the count lives outside the
//! trail until its window closes, durably, so a restart loses none.

use serde_json::{json, Value};

use super::audit::audit_conn;
use super::sql::{params, Row, Tx};
use super::{Result, Store};

/// An attempt to record.
#[derive(Debug, Clone)]
pub struct RefusalRow<'a> {
    /// What attempts are coalesced by (callers build it from bounded parts only).
    pub key: &'a str,
    pub approval_id: Option<&'a str>,
    pub actor: &'a str,
    pub channel: &'a str,
    /// The audit row's detail (without `count`: it is added).
    pub detail: &'a Value,
}

/// What became of an attempt.
#[derive(Debug, Clone, PartialEq)]
pub enum Refused {
    /// It is audit row `seq`, the first of a new window; `closed` is the window of the
    /// same key it ended, if that had repeats.
    Recorded { seq: i64, closed: Option<Closed> },
    /// It was counted in the open window that audit row `first_seq` began: `repeats`
    /// attempts after that one so far.
    Counted { first_seq: i64, repeats: i64 },
}

/// A window closed with repeats, now an audit row.
#[derive(Debug, Clone, PartialEq)]
pub struct Closed {
    pub seq: i64,
    pub actor: String,
    pub channel: String,
    /// The closing row's detail: the first attempt's, with the count and times.
    pub detail: Value,
}

/// An open window, as stored.
struct Window {
    key: String,
    approval_id: Option<String>,
    actor: String,
    channel: String,
    detail: String,
    first_seq: i64,
    started: i64,
    last_at: i64,
    repeats: i64,
}

const WINDOW_COLUMNS: &str =
    "key, approval_id, actor, channel, detail, first_seq, started, last_at, repeats";

fn window(r: &Row<'_>) -> Result<Window> {
    Ok(Window {
        key: r.get(0)?,
        approval_id: r.get(1)?,
        actor: r.get(2)?,
        channel: r.get(3)?,
        detail: r.get(4)?,
        first_seq: r.get(5)?,
        started: r.get(6)?,
        last_at: r.get(7)?,
        repeats: r.get(8)?,
    })
}

impl Store {
    /// Records a refused attempt at `now`, coalescing it into its key's window if one
    /// began less than `window_ms` ago (see the module docs).
    pub fn record_refusal(
        &self,
        now: i64,
        window_ms: i64,
        row: &RefusalRow<'_>,
    ) -> Result<Refused> {
        self.write(|tx| {
            let open = tx.query_opt(
                &format!("SELECT {WINDOW_COLUMNS} FROM refusal_windows WHERE key = ?1"),
                params![row.key],
                window,
            )?;
            if let Some(w) = &open {
                // A clock that went back ends the window too, rather than stretch it.
                if (w.started..w.started + window_ms).contains(&now) {
                    tx.execute(
                        "UPDATE refusal_windows SET repeats = repeats + 1, last_at = ?2 WHERE key = ?1",
                        params![row.key, now],
                    )?;
                    return Ok(Refused::Counted {
                        first_seq: w.first_seq,
                        repeats: w.repeats + 1,
                    });
                }
            }
            let closed = match open {
                Some(w) => close(tx, now, w)?,
                None => None,
            };
            let mut detail = row.detail.clone();
            detail["count"] = json!(1);
            let seq = audit_conn(
                tx,
                now,
                row.approval_id,
                "unauthorised_attempt",
                Some(row.actor),
                Some(row.channel),
                &detail,
            )?;
            tx.execute(
                &format!("INSERT INTO refusal_windows ({WINDOW_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, 0)"),
                params![
                    row.key,
                    row.approval_id,
                    row.actor,
                    row.channel,
                    detail.to_string(),
                    seq,
                    now
                ],
            )?;
            Ok(Refused::Recorded { seq, closed })
        })
    }

    /// Closes every window that began `window_ms` or longer before `now` (every window,
    /// when `window_ms` is `None`: at shutdown, and at start for those a crash left
    /// open). Returns those that had repeats, now audit rows.
    pub fn close_refusal_windows(&self, now: i64, window_ms: Option<i64>) -> Result<Vec<Closed>> {
        self.write(|tx| {
            let due: Vec<Window> = tx.query_map(
                &format!(
                    "SELECT {WINDOW_COLUMNS} FROM refusal_windows \
                     WHERE ?2 IS NULL OR started + ?2 <= ?1 OR started > ?1 ORDER BY first_seq"
                ),
                params![now, window_ms],
                window,
            )?;
            if due.is_empty() {
                tx.discard();
                return Ok(Vec::new());
            }
            let mut closed = Vec::new();
            for w in due {
                if let Some(c) = close(tx, now, w)? {
                    closed.push(c);
                }
            }
            Ok(closed)
        })
    }
}

/// Deletes window `w`, first appending its count as an audit row if it has repeats.
fn close(tx: &Tx<'_>, now: i64, w: Window) -> Result<Option<Closed>> {
    tx.execute("DELETE FROM refusal_windows WHERE key = ?1", params![w.key])?;
    if w.repeats == 0 {
        return Ok(None);
    }
    let mut detail: Value = serde_json::from_str(&w.detail).unwrap_or_else(|_| json!({}));
    detail["count"] = json!(w.repeats);
    detail["repeats_of"] = json!(w.first_seq);
    detail["first_at"] = json!(w.started);
    detail["last_at"] = json!(w.last_at);
    let seq = audit_conn(
        tx,
        now,
        w.approval_id.as_deref(),
        "unauthorised_attempt",
        Some(&w.actor),
        Some(&w.channel),
        &detail,
    )?;
    Ok(Some(Closed {
        seq,
        actor: w.actor,
        channel: w.channel,
        detail,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: i64 = 60_000;

    fn attempt(s: &Store, at: i64, key: &str) -> Refused {
        let detail = json!({"attempted": "submit a request"});
        s.record_refusal(
            at,
            MINUTE,
            &RefusalRow {
                key,
                approval_id: None,
                actor: "mailer",
                channel: "api",
                detail: &detail,
            },
        )
        .unwrap()
    }

    fn attempts(s: &Store) -> Vec<Value> {
        s.audit_rows(None, None)
            .unwrap()
            .into_iter()
            .filter(|r| r.event == "unauthorised_attempt")
            .map(|r| r.detail)
            .collect()
    }

    #[test]
    fn a_window_is_one_row_at_once_and_one_with_its_count_when_it_ends() {
        let s = Store::open_in_memory().unwrap();
        let Refused::Recorded { seq, closed: None } = attempt(&s, 1_000, "k") else {
            panic!("the first attempt is a row")
        };
        for n in 1..=4 {
            assert_eq!(
                attempt(&s, 1_000 + n * 1_000, "k"),
                Refused::Counted {
                    first_seq: seq,
                    repeats: n
                }
            );
        }
        // Another key has a window of its own.
        assert!(matches!(
            attempt(&s, 2_000, "other"),
            Refused::Recorded { .. }
        ));
        assert_eq!(attempts(&s).len(), 2);

        // The next attempt after the minute closes the window, then opens a new one.
        let Refused::Recorded {
            closed: Some(c), ..
        } = attempt(&s, 1_000 + MINUTE, "k")
        else {
            panic!("the window closes")
        };
        assert_eq!(c.detail["count"], 4);
        assert_eq!(c.detail["repeats_of"], seq);
        assert_eq!(
            (c.detail["first_at"].clone(), c.detail["last_at"].clone()),
            (json!(1_000), json!(5_000))
        );
        let rows = attempts(&s);
        let total: i64 = rows.iter().map(|d| d["count"].as_i64().unwrap()).sum();
        assert_eq!((rows.len(), total), (4, 7));
        assert!(s.verify_audit().unwrap().problems.is_empty());
    }

    #[test]
    fn ended_windows_are_closed_by_the_periodic_pass_and_all_at_shutdown() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.db");
        {
            let s = Store::open(&path).unwrap();
            attempt(&s, 0, "a");
            attempt(&s, 10, "a");
            attempt(&s, 30_000, "b");
            attempt(&s, 30_010, "b");
            attempt(&s, 30_020, "c");
            // Only `a` has ended at 60 s; `c` had no repeats, so it leaves no row.
            let closed = s.close_refusal_windows(MINUTE, Some(MINUTE)).unwrap();
            assert_eq!(closed.len(), 1);
            assert_eq!(closed[0].detail["count"], 1);
            // The process dies here: `b` is still open, in the file.
        }
        let s = Store::open(&path).unwrap();
        let closed = s.close_refusal_windows(MINUTE, None).unwrap();
        assert_eq!(closed.len(), 1);
        assert_eq!(closed[0].detail["count"], 1);
        let total: i64 = attempts(&s)
            .iter()
            .map(|d| d["count"].as_i64().unwrap())
            .sum();
        assert_eq!(total, 5, "every attempt is in the trail");
        assert!(s
            .close_refusal_windows(10 * MINUTE, None)
            .unwrap()
            .is_empty());
        assert!(s.verify_audit().unwrap().problems.is_empty());
    }
}
