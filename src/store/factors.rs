//! Second factors (`factors`, docs/teams.md): each person's TOTP factors, a code
//! accepted once (a step later than the factor's last), wrong codes counted per person
//! and refused for a while past a few, and the step-up windows a confirmed code opens.

use serde_json::json;

use super::audit::audit_tx;
use super::sql::{params, Tx};
use super::{Result, Store};
use crate::approval::Via;

/// Wrong codes in a row after which a person's codes are refused for [`LOCKED_FOR_MS`].
pub const MOST_WRONG_CODES: i64 = 5;
/// How long codes are refused after too many wrong ones; a wrong code older than this
/// no longer counts.
pub const LOCKED_FOR_MS: i64 = 15 * 60 * 1000;
/// How long an enrolment waits for its first code.
pub const ENROL_WITHIN_MS: i64 = 10 * 60 * 1000;

/// A person's factor, as lists show it (never its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FactorRow {
    pub id: String,
    pub person: String,
    pub label: String,
    pub created_at: i64,
    /// `None`: enrolment not finished (no first code yet).
    pub confirmed_at: Option<i64>,
}

/// What a code came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeCheck {
    /// Right, and not used before: the factor it matched.
    Accepted { factor: String },
    /// Not a code of theirs now; `left` more wrong ones before codes are refused.
    Wrong { left: i64 },
    /// Right, but already used (a code is accepted once).
    Reused,
    /// Too many wrong codes: refused, whatever it is, until then (Unix ms).
    Locked { until: i64 },
    /// They have no factor (or no enrolment waiting, for a first code).
    NoFactor,
}

impl Store {
    /// Starts an enrolment: a factor that counts once its first code confirms it.
    pub fn add_factor(
        &self,
        id: &str,
        person: &str,
        label: &str,
        secret: &str,
        now: i64,
    ) -> Result<()> {
        self.writer(|w| {
            // Enrolments never finished are forgotten.
            w.write(|tx| {
                tx.execute(
                    "DELETE FROM factors WHERE confirmed_at IS NULL AND created_at < ?1",
                    params![now - ENROL_WITHIN_MS],
                )
            })?;
            w.write(|tx| {
                tx.execute(
                    "INSERT INTO factors (id, person, label, secret, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![id, person, label, secret, now],
                )
            })?;
            Ok(())
        })
    }

    /// Every factor of `person` (enrolments under way too), oldest first.
    pub fn factors(&self, person: &str, now: i64) -> Result<Vec<FactorRow>> {
        self.writer(|c| {
            c.query_map(
                "SELECT id, person, label, created_at, confirmed_at FROM factors \
                 WHERE person = ?1 AND (confirmed_at IS NOT NULL OR created_at >= ?2) \
                 ORDER BY created_at, id",
                params![person, now - ENROL_WITHIN_MS],
                |r| {
                    Ok(FactorRow {
                        id: r.get(0)?,
                        person: r.get(1)?,
                        label: r.get(2)?,
                        created_at: r.get(3)?,
                        confirmed_at: r.get(4)?,
                    })
                },
            )
        })
    }

    /// Whether anyone has a confirmed factor (critical requests then need one).
    pub fn any_factor(&self) -> Result<bool> {
        self.writer(|c| {
            c.query_row(
                "SELECT EXISTS (SELECT 1 FROM factors WHERE confirmed_at IS NOT NULL)",
                params![],
                |r| r.get(0),
            )
        })
    }

    /// Finishes `person`'s enrolment `id` with its first code (audited as
    /// `factor_enrolled`); a wrong one counts like any wrong code.
    pub fn confirm_factor(
        &self,
        person: &str,
        id: &str,
        code: &str,
        via: &Via,
        now: i64,
    ) -> Result<CodeCheck> {
        self.write(|tx| {
            let secret: Option<String> = tx.query_opt(
                "SELECT secret FROM factors WHERE id = ?1 AND person = ?2 \
                 AND confirmed_at IS NULL AND created_at >= ?3",
                params![id, person, now - ENROL_WITHIN_MS],
                |r| r.get(0),
            )?;
            let Some(secret) = secret else {
                tx.discard();
                return Ok(CodeCheck::NoFactor);
            };
            let checked = check_tx(tx, person, code, via, now, &[(id.to_string(), secret, 0)])?;
            if let CodeCheck::Accepted { .. } = checked {
                tx.execute(
                    "UPDATE factors SET confirmed_at = ?2 WHERE id = ?1",
                    params![id, now],
                )?;
                audit_tx(
                    tx,
                    now,
                    None,
                    "factor_enrolled",
                    Some(person),
                    Some(via),
                    &json!({"factor": id}),
                )?;
            }
            Ok(checked)
        })
    }

    /// Checks a code against `person`'s confirmed factors: accepted once, wrong ones
    /// counted (audited as `code_refused`), refused for a while past a few.
    pub fn check_code(&self, person: &str, code: &str, via: &Via, now: i64) -> Result<CodeCheck> {
        self.write(|tx| {
            let factors = confirmed_tx(tx, person)?;
            if factors.is_empty() {
                tx.discard();
                return Ok(CodeCheck::NoFactor);
            }
            check_tx(tx, person, code, via, now, &factors)
        })
    }

    /// Removes `person`'s factor `id` after a fresh code from any of their factors
    /// (audited as `factor_removed`). `Ok(None)`: no such factor of theirs.
    pub fn remove_factor(
        &self,
        person: &str,
        id: &str,
        code: &str,
        via: &Via,
        now: i64,
    ) -> Result<Option<CodeCheck>> {
        self.write(|tx| {
            let exists: bool = tx.query_row(
                "SELECT EXISTS (SELECT 1 FROM factors WHERE id = ?1 AND person = ?2)",
                params![id, person],
                |r| r.get(0),
            )?;
            if !exists {
                tx.discard();
                return Ok(None);
            }
            let factors = confirmed_tx(tx, person)?;
            let checked = if factors.is_empty() {
                // An enrolment never finished: nothing to prove.
                CodeCheck::Accepted {
                    factor: id.to_string(),
                }
            } else {
                check_tx(tx, person, code, via, now, &factors)?
            };
            if let CodeCheck::Accepted { .. } = checked {
                tx.execute("DELETE FROM factors WHERE id = ?1", params![id])?;
                tx.execute(
                    "DELETE FROM step_up_windows WHERE person = ?1",
                    params![person],
                )?;
                audit_tx(
                    tx,
                    now,
                    None,
                    "factor_removed",
                    Some(person),
                    Some(via),
                    &json!({"factor": id}),
                )?;
            }
            Ok(Some(checked))
        })
    }

    /// Opens (or moves on) `person`'s step-up window on `surface` until `until`.
    pub fn open_step_up(&self, person: &str, surface: &str, until: i64) -> Result<()> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO step_up_windows (person, surface, until) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (person, surface) DO UPDATE SET until = excluded.until",
                params![person, surface, until],
            )
        })?;
        Ok(())
    }

    /// Whether `person`'s step-up window on `surface` is open at `now`; if so it is
    /// moved on to `renew_to` (each use resets it).
    pub fn use_step_up(
        &self,
        person: &str,
        surface: &str,
        now: i64,
        renew_to: i64,
    ) -> Result<bool> {
        let used = self.write(|tx| {
            tx.execute(
                "UPDATE step_up_windows SET until = ?4 WHERE person = ?1 AND surface = ?2 \
                 AND until > ?3",
                params![person, surface, now, renew_to],
            )
        })?;
        Ok(used == 1)
    }
}

/// (id, secret, last step) of `person`'s confirmed factors.
fn confirmed_tx(tx: &Tx<'_>, person: &str) -> Result<Vec<(String, String, i64)>> {
    tx.query_map(
        "SELECT id, secret, last_step FROM factors WHERE person = ?1 AND confirmed_at IS NOT NULL \
         ORDER BY created_at",
        params![person],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
}

/// Checks `code` against `factors` (id, secret, last step accepted) for `person`, in
/// `tx`: the lock first, then each factor; a match takes its step (so the code is not
/// accepted again) and clears the wrong codes; a miss counts one.
fn check_tx(
    tx: &Tx<'_>,
    person: &str,
    code: &str,
    via: &Via,
    now: i64,
    factors: &[(String, String, i64)],
) -> Result<CodeCheck> {
    let failures: Option<(i64, i64)> = tx.query_opt(
        "SELECT count, last_at FROM step_up_failures WHERE person = ?1",
        params![person],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    // Wrong codes older than the lock no longer count.
    let wrong = failures
        .filter(|(_, last)| now - last < LOCKED_FOR_MS)
        .map_or(0, |(n, _)| n);
    if wrong >= MOST_WRONG_CODES {
        let until = failures.map_or(now, |(_, last)| last + LOCKED_FOR_MS);
        return Ok(CodeCheck::Locked { until });
    }
    let secs = u64::try_from(now / 1000).unwrap_or(0);
    let mut reused = false;
    for (id, secret, last_step) in factors {
        let Some(step) = crate::factor::check(secret, code, secs) else {
            continue;
        };
        let step = i64::try_from(step).unwrap_or(i64::MAX);
        if step <= *last_step {
            reused = true;
            continue;
        }
        tx.execute(
            "UPDATE factors SET last_step = ?2 WHERE id = ?1",
            params![id, step],
        )?;
        tx.execute(
            "DELETE FROM step_up_failures WHERE person = ?1",
            params![person],
        )?;
        return Ok(CodeCheck::Accepted { factor: id.clone() });
    }
    let count = wrong + 1;
    tx.execute(
        "INSERT INTO step_up_failures (person, count, last_at) VALUES (?1, ?2, ?3) \
         ON CONFLICT (person) DO UPDATE SET count = excluded.count, last_at = excluded.last_at",
        params![person, count, now],
    )?;
    audit_tx(
        tx,
        now,
        None,
        "code_refused",
        Some(person),
        Some(via),
        &json!({"why": if reused { "used already" } else { "wrong" }, "in_a_row": count}),
    )?;
    Ok(if reused {
        CodeCheck::Reused
    } else {
        CodeCheck::Wrong {
            left: MOST_WRONG_CODES - count,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ";

    fn code(at_ms: i64) -> String {
        crate::factor::code_at(SECRET, u64::try_from(at_ms / 1000).unwrap()).unwrap()
    }

    #[test]
    fn a_code_confirms_once_wrong_ones_lock_and_a_window_renews_on_use() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("gatebot.db")).unwrap();
        let via = Via::Cli;
        let t = 1_800_000_000_000;
        assert_eq!(
            store.check_code("alice", "123456", &via, t).unwrap(),
            CodeCheck::NoFactor
        );
        store.add_factor("F1", "alice", "phone", SECRET, t).unwrap();
        assert!(!store.any_factor().unwrap(), "not until its first code");
        let first = store
            .confirm_factor("alice", "F1", &code(t), &via, t)
            .unwrap();
        assert_eq!(
            first,
            CodeCheck::Accepted {
                factor: "F1".into()
            }
        );
        assert!(store.any_factor().unwrap());
        // The same code again (same step): refused as used.
        assert_eq!(
            store
                .check_code("alice", &code(t), &via, t + 1_000)
                .unwrap(),
            CodeCheck::Reused
        );
        // The next step's code works, once.
        let next = t + 30_000;
        assert!(matches!(
            store.check_code("alice", &code(next), &via, next).unwrap(),
            CodeCheck::Accepted { .. }
        ));
        // Wrong codes count down, then lock even the right code out for a while.
        let mut left = Vec::new();
        for _ in 0..5 {
            match store.check_code("alice", "000000", &via, next).unwrap() {
                CodeCheck::Wrong { left: l } => left.push(l),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(left, [4, 3, 2, 1, 0]);
        let later = next + 60_000;
        assert!(matches!(
            store
                .check_code("alice", &code(later), &via, later)
                .unwrap(),
            CodeCheck::Locked { .. }
        ));
        let free = next + LOCKED_FOR_MS + 1;
        assert!(matches!(
            store.check_code("alice", &code(free), &via, free).unwrap(),
            CodeCheck::Accepted { .. }
        ));
        // Windows: open, used (and renewed), then past.
        store.open_step_up("alice", "cli", t + 10).unwrap();
        assert!(store.use_step_up("alice", "cli", t + 5, t + 20).unwrap());
        assert!(store.use_step_up("alice", "cli", t + 15, t + 30).unwrap());
        assert!(!store.use_step_up("alice", "cli", t + 31, t + 40).unwrap());
        assert!(!store.use_step_up("alice", "session:x", t, t + 40).unwrap());
        let rows = store.audit_rows(None, None).unwrap();
        let count = |e: &str| rows.iter().filter(|r| r.event == e).count();
        assert_eq!((count("factor_enrolled"), count("code_refused")), (1, 6));
    }
}
