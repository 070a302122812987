//! Reading what happened, for the web dashboard's history and audit pages: requests of
//! every status, searched and filtered, and the audit trail, filtered; both newest
//! first, a page at a time.
//!
//! Pages are keyset pages, never `OFFSET`: a page starts after (or before) the id of a
//! row the previous page showed, so page 2 000 of 100 000 rows costs what page 1 does
//! and rows written meanwhile neither repeat nor vanish. Requests page on their id (a
//! ULID: the order they were made), the trail on its seq.
//!
//! Each page is one statement under the connection's lock, released between pages: an
//! export of the whole filtered history (every page in turn) never holds the daemon up
//! for longer than one page takes.

use rusqlite::types::Value as Sql;

use super::approval_row::{row_to_approval, COLUMNS};
use super::{AuditRow, Result, Store};
use crate::approval::{Approval, Status};
use crate::policy::RiskScore;

/// Where a page starts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Cursor<K> {
    /// The newest rows.
    #[default]
    Newest,
    /// Rows older than this key (the next page).
    Older(K),
    /// Rows newer than this key (the previous page).
    Newer(K),
}

/// One page, newest first, with the keys of the pages beside it.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T, K> {
    pub rows: Vec<T>,
    /// The cursor of the next (older) page, if there are older rows.
    pub older: Option<K>,
    /// The cursor of the previous (newer) page, if there are newer rows.
    pub newer: Option<K>,
}

/// Which requests the history shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistoryFilter {
    /// Words that must each appear (case-insensitively for ASCII) in one of the
    /// request's tool, agent, summary, arguments (their JSON), the decision's reason or
    /// its short id.
    pub words: Vec<String>,
    pub agent: Option<String>,
    pub tool: Option<String>,
    /// Any of these statuses; empty: every status.
    pub statuses: Vec<Status>,
    pub risk_at_least: Option<RiskScore>,
    /// Made at or after this instant (ms).
    pub since: Option<i64>,
    pub cursor: Cursor<String>,
    pub limit: usize,
}

/// Which audit rows the audit page shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    pub event: Option<String>,
    /// The id the rows are about (a request's, a task's, a run's…).
    pub subject: Option<String>,
    /// Part of the actor's name (case-insensitively for ASCII).
    pub actor: Option<String>,
    /// Written at or after this instant (ms).
    pub since: Option<i64>,
    pub cursor: Cursor<i64>,
    pub limit: usize,
}

/// `s` as a LIKE pattern that matches it anywhere, `\` escaping LIKE's own characters.
fn containing(s: &str) -> String {
    let mut p = String::with_capacity(s.len() + 2);
    p.push('%');
    for c in s.chars() {
        if matches!(c, '%' | '_' | '\\') {
            p.push('\\');
        }
        p.push(c);
    }
    p.push('%');
    p
}

/// The smallest request id made at `ms` or later: ids are ULIDs, whose first ten
/// characters are the time they were made, and a request's id is made after its
/// `created_at` is taken. Bounding the id as well as `created_at` lets SQLite stop at
/// the bound instead of reading every older row.
fn first_id_at(ms: i64) -> String {
    let ms = u64::try_from(ms.max(0)).unwrap_or(0);
    ulid::Ulid::from_parts(ms.min((1 << 48) - 1), 0).to_string()
}

/// A statement's WHERE clause being built, with its parameters.
#[derive(Default)]
struct Where {
    sql: String,
    params: Vec<Sql>,
}

impl Where {
    /// Adds `clause`, whose `?` stand for `params` in order.
    fn and(&mut self, clause: &str, params: impl IntoIterator<Item = Sql>) {
        let mut out = String::new();
        let mut params = params.into_iter();
        for part in clause.split_inclusive('?') {
            if let Some(head) = part.strip_suffix('?') {
                out.push_str(head);
                let p = params.next().expect("a parameter for every ?");
                self.params.push(p);
                out.push_str(&format!("?{}", self.params.len()));
            } else {
                out.push_str(part);
            }
        }
        self.sql.push_str(" AND ");
        self.sql.push_str(&out);
    }
}

fn text(s: &str) -> Sql {
    Sql::Text(s.to_string())
}

impl Store {
    /// One page of requests matching `filter`, newest first.
    pub fn history_page(&self, filter: &HistoryFilter) -> Result<Page<Approval, String>> {
        let mut w = Where::default();
        for word in &filter.words {
            let p = containing(word);
            w.and(
                "(tool LIKE ? ESCAPE '\\' OR agent LIKE ? ESCAPE '\\' \
                 OR summary LIKE ? ESCAPE '\\' OR args LIKE ? ESCAPE '\\' \
                 OR decision_reason LIKE ? ESCAPE '\\' OR short_id LIKE ? ESCAPE '\\')",
                std::iter::repeat_n(text(&p), 6),
            );
        }
        if let Some(a) = &filter.agent {
            w.and("agent = ?", [text(a)]);
        }
        if let Some(t) = &filter.tool {
            w.and("tool = ?", [text(t)]);
        }
        if !filter.statuses.is_empty() {
            let marks = vec!["?"; filter.statuses.len()].join(", ");
            w.and(
                &format!("status IN ({marks})"),
                filter.statuses.iter().map(|s| text(s.as_str())),
            );
        }
        if let Some(least) = filter.risk_at_least {
            let scores: Vec<RiskScore> = [
                RiskScore::Low,
                RiskScore::Medium,
                RiskScore::High,
                RiskScore::Critical,
            ]
            .into_iter()
            .filter(|s| *s >= least)
            .collect();
            let marks = vec!["?"; scores.len()].join(", ");
            w.and(
                &format!("risk_score IN ({marks})"),
                scores.iter().map(|s| text(s.as_str())),
            );
        }
        if let Some(since) = filter.since {
            w.and(
                "id >= ? AND created_at >= ?",
                [text(&first_id_at(since)), Sql::Integer(since)],
            );
        }
        let select = |w: &Where, order: &str, limit: usize| {
            format!(
                "SELECT {COLUMNS} FROM approvals WHERE true{} ORDER BY id {order} LIMIT {limit}",
                w.sql
            )
        };
        let limit = filter.limit.max(1);
        let conn = self.lock();
        let read = |sql: &str, params: &[Sql]| -> Result<Vec<Approval>> {
            let mut stmt = conn.prepare_cached(sql)?;
            let rows = stmt.query_map(rusqlite::params_from_iter(params), row_to_approval)?;
            rows.collect::<std::result::Result<Result<Vec<_>>, _>>()?
        };
        // One row more than a page: whether there is another page beyond it.
        match &filter.cursor {
            Cursor::Newest | Cursor::Older(_) => {
                let older_than = match &filter.cursor {
                    Cursor::Older(id) => {
                        w.and("id < ?", [text(id)]);
                        true
                    }
                    _ => false,
                };
                let mut rows = read(&select(&w, "DESC", limit + 1), &w.params)?;
                let more = rows.len() > limit;
                rows.truncate(limit);
                Ok(Page {
                    older: more.then(|| rows.last().map(|a| a.id.clone())).flatten(),
                    newer: older_than
                        .then(|| rows.first().map(|a| a.id.clone()))
                        .flatten(),
                    rows,
                })
            }
            Cursor::Newer(id) => {
                w.and("id > ?", [text(id)]);
                let mut rows = read(&select(&w, "ASC", limit + 1), &w.params)?;
                let more = rows.len() > limit;
                rows.truncate(limit);
                rows.reverse();
                Ok(Page {
                    older: rows.last().map(|a| a.id.clone()),
                    newer: more.then(|| rows.first().map(|a| a.id.clone())).flatten(),
                    rows,
                })
            }
        }
    }

    /// One page of the audit trail matching `filter`, newest first.
    pub fn audit_history(&self, filter: &AuditFilter) -> Result<Page<AuditRow, i64>> {
        let mut w = Where::default();
        if let Some(e) = &filter.event {
            w.and("event = ?", [text(e)]);
        }
        if let Some(s) = &filter.subject {
            w.and("approval_id = ?", [text(s)]);
        }
        if let Some(a) = &filter.actor {
            w.and("actor LIKE ? ESCAPE '\\'", [text(&containing(a))]);
        }
        if let Some(since) = filter.since {
            w.and("at >= ?", [Sql::Integer(since)]);
        }
        let select = |w: &Where, order: &str, limit: usize| {
            format!(
                "SELECT seq, at, approval_id, event, actor, channel, detail FROM audit \
                 WHERE true{} ORDER BY seq {order} LIMIT {limit}",
                w.sql
            )
        };
        let limit = filter.limit.max(1);
        let conn = self.lock();
        let read = |sql: &str, params: &[Sql]| -> Result<Vec<AuditRow>> {
            let mut stmt = conn.prepare_cached(sql)?;
            let rows = stmt.query_map(rusqlite::params_from_iter(params), |r| {
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
                        .unwrap_or(serde_json::Value::Null),
                })
            })?;
            Ok(rows.collect::<std::result::Result<_, _>>()?)
        };
        match filter.cursor {
            Cursor::Newest | Cursor::Older(_) => {
                let older_than = if let Cursor::Older(seq) = filter.cursor {
                    w.and("seq < ?", [Sql::Integer(seq)]);
                    true
                } else {
                    false
                };
                let mut rows = read(&select(&w, "DESC", limit + 1), &w.params)?;
                let more = rows.len() > limit;
                rows.truncate(limit);
                Ok(Page {
                    older: more.then(|| rows.last().map(|r| r.seq)).flatten(),
                    newer: older_than.then(|| rows.first().map(|r| r.seq)).flatten(),
                    rows,
                })
            }
            Cursor::Newer(seq) => {
                w.and("seq > ?", [Sql::Integer(seq)]);
                let mut rows = read(&select(&w, "ASC", limit + 1), &w.params)?;
                let more = rows.len() > limit;
                rows.truncate(limit);
                rows.reverse();
                Ok(Page {
                    older: rows.last().map(|r| r.seq),
                    newer: more.then(|| rows.first().map(|r| r.seq)).flatten(),
                    rows,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::Verb;
    use crate::store::tests::{decision, inserted, new};

    fn filter() -> HistoryFilter {
        HistoryFilter {
            limit: 2,
            ..HistoryFilter::default()
        }
    }

    fn ids(p: &Page<Approval, String>) -> Vec<&str> {
        p.rows.iter().map(|a| a.id.as_str()).collect()
    }

    #[test]
    fn history_pages_newest_first_both_ways_without_offsets() {
        let s = Store::open_in_memory().unwrap();
        let made: Vec<String> = (0..5)
            .map(|_| inserted(&s, &new("m", "t", None, Some(i64::MAX))).id)
            .collect();
        let first = s.history_page(&filter()).unwrap();
        assert_eq!(ids(&first), [&made[4], &made[3]]);
        assert_eq!(first.newer, None);
        let second = s
            .history_page(&HistoryFilter {
                cursor: Cursor::Older(first.older.clone().unwrap()),
                ..filter()
            })
            .unwrap();
        assert_eq!(ids(&second), [&made[2], &made[1]]);
        let third = s
            .history_page(&HistoryFilter {
                cursor: Cursor::Older(second.older.clone().unwrap()),
                ..filter()
            })
            .unwrap();
        assert_eq!((ids(&third), third.older.clone()), (vec![&*made[0]], None));
        // And back: the page before the third is the second again.
        let back = s
            .history_page(&HistoryFilter {
                cursor: Cursor::Newer(third.newer.clone().unwrap()),
                ..filter()
            })
            .unwrap();
        assert_eq!(ids(&back), ids(&second));
        let front = s
            .history_page(&HistoryFilter {
                cursor: Cursor::Newer(back.newer.clone().unwrap()),
                ..filter()
            })
            .unwrap();
        assert_eq!((ids(&front), front.newer.clone()), (ids(&first), None));
    }

    #[test]
    fn history_searches_words_in_every_field_said_and_filters_combine() {
        let s = Store::open_in_memory().unwrap();
        let mut a = new("mailer", "send_email", None, Some(i64::MAX));
        a.asked.args = serde_json::json!({"to": "ann@example.com"});
        a.asked.summary = Some("Reply to 100% of Ann's mail".into());
        let a = inserted(&s, &a);
        let b = inserted(&s, &new("deployer", "shell", None, Some(i64::MAX)));
        s.decide(&b.id, &decision(Verb::Deny, "alice"), 0).unwrap();
        let found = |f: HistoryFilter| -> Vec<String> {
            s.history_page(&HistoryFilter { limit: 10, ..f })
                .unwrap()
                .rows
                .into_iter()
                .map(|a| a.id)
                .collect()
        };
        let words = |w: &[&str]| HistoryFilter {
            words: w.iter().map(ToString::to_string).collect(),
            ..HistoryFilter::default()
        };
        assert_eq!(found(words(&["ANN@example"])), [a.id.as_str()]);
        assert_eq!(found(words(&["100%"])), [a.id.as_str()]);
        assert_eq!(
            found(words(&["1_0"])),
            Vec::<String>::new(),
            "_ is a character"
        );
        assert_eq!(found(words(&["mailer", "reply"])), [a.id.as_str()]);
        assert_eq!(found(words(&["mailer", "shell"])), Vec::<String>::new());
        assert_eq!(found(words(&[&b.short_id])), [b.id.as_str()]);
        assert_eq!(
            found(HistoryFilter {
                statuses: vec![Status::Rejected],
                ..HistoryFilter::default()
            }),
            [b.id.as_str()]
        );
        assert_eq!(
            found(HistoryFilter {
                agent: Some("mailer".into()),
                tool: Some("send_email".into()),
                ..HistoryFilter::default()
            }),
            [a.id.as_str()]
        );
        assert_eq!(
            found(HistoryFilter {
                since: Some(2), // NewApproval::sample's are made at 1
                ..HistoryFilter::default()
            }),
            Vec::<String>::new()
        );
        assert_eq!(
            found(HistoryFilter {
                since: Some(1),
                ..HistoryFilter::default()
            }),
            [b.id.as_str(), a.id.as_str()]
        );
    }

    #[test]
    fn the_first_id_of_an_instant_sorts_before_every_id_made_then() {
        let at = crate::time::now_ms();
        let bound = first_id_at(at);
        let id = crate::store::new_id();
        assert!(bound <= id, "{bound} {id}");
        assert!(first_id_at(at + 10_000) > id);
        assert_eq!(first_id_at(-5), "00000000000000000000000000");
    }

    #[test]
    fn the_trail_pages_newest_first_and_filters_by_event_subject_and_actor() {
        let s = Store::open_in_memory().unwrap();
        let a = inserted(&s, &new("m", "t", None, Some(i64::MAX)));
        s.decide(&a.id, &decision(Verb::Approve, "Alice (42)"), 0)
            .unwrap();
        let all = s
            .audit_history(&AuditFilter {
                limit: 100,
                ..AuditFilter::default()
            })
            .unwrap();
        assert!(all.rows.windows(2).all(|w| w[0].seq > w[1].seq));
        let decided = s
            .audit_history(&AuditFilter {
                actor: Some("alice".into()),
                subject: Some(a.id.clone()),
                limit: 100,
                ..AuditFilter::default()
            })
            .unwrap();
        assert_eq!(decided.rows.len(), 1, "{:?}", decided.rows);
        assert_eq!(decided.rows[0].actor.as_deref(), Some("Alice (42)"));
        let by_event = s
            .audit_history(&AuditFilter {
                event: Some("submitted".into()),
                limit: 1,
                ..AuditFilter::default()
            })
            .unwrap();
        assert_eq!(by_event.rows[0].event, "submitted");
        let one = s
            .audit_history(&AuditFilter {
                limit: 1,
                ..AuditFilter::default()
            })
            .unwrap();
        let next = s
            .audit_history(&AuditFilter {
                limit: 1,
                cursor: Cursor::Older(one.older.unwrap()),
                ..AuditFilter::default()
            })
            .unwrap();
        assert_eq!(next.rows[0].seq, one.rows[0].seq - 1);
        assert_eq!(next.newer, Some(next.rows[0].seq));
    }
}
