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

use super::approval_row::{row_to_approval, COLUMNS};
use super::audit::row_to_audit;
use super::sql::{params, Conn, Value};
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

/// Most requests the search index may name for a search to read only those; beyond it,
/// the requests are read newest first (the words are common: a page of them comes soon).
const CANDIDATES: usize = 2_000;

/// The search index query (FTS5, trigrams) for `words`: each word of 3 or more
/// characters as a phrase that must appear. Shorter words cannot be looked up in
/// trigrams; the LIKE that every word is compared with afterwards still applies to them.
/// `None` when no word is long enough.
fn search_index_query(words: &[String]) -> Option<String> {
    let phrases: Vec<String> = words
        .iter()
        .filter(|w| w.chars().count() >= 3)
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect();
    (!phrases.is_empty()).then(|| phrases.join(" AND "))
}

/// The requests (rowids) that may hold every word of `query` (the search index's query):
/// those the index finds, those it has not read yet and those changed since it did.
/// `None` when there are more than [`CANDIDATES`].
fn candidates(conn: &Conn<'_>, query: &str) -> Result<Option<Vec<i64>>> {
    let cap = CANDIDATES as i64 + 1;
    let mut rowids: Vec<i64> = conn.query_map(
        "SELECT rowid FROM approvals_search WHERE approvals_search MATCH ?1 LIMIT ?2",
        params![query, cap],
        |r| r.get(0),
    )?;
    for unread in [
        "SELECT rowid FROM approvals WHERE rowid > \
         (SELECT indexed_through FROM approvals_search_state WHERE id = 1) LIMIT ?1",
        "SELECT approval_rowid FROM approvals_search_stale LIMIT ?1",
    ] {
        if rowids.len() > CANDIDATES {
            break;
        }
        let more: Vec<i64> = conn.query_map(unread, params![cap], |r| r.get(0))?;
        rowids.extend(more);
    }
    Ok((rowids.len() <= CANDIDATES).then_some(rowids))
}

/// The requests (rowids) that hold every one of `words`, read in the table's order;
/// `None` when there are more than [`CANDIDATES`].
fn scanned(conn: &Conn<'_>, words: &[String]) -> Result<Option<Vec<i64>>> {
    let only_words = HistoryFilter {
        words: words.to_vec(),
        ..HistoryFilter::default()
    };
    let w = history_where(conn, &only_words);
    let cap = CANDIDATES + 1;
    let rowids: Vec<i64> = conn.once().query_map(
        &format!(
            "SELECT rowid FROM approvals WHERE true{} LIMIT {cap}",
            w.sql
        ),
        &w.params,
        |r| r.get(0),
    )?;
    Ok((rowids.len() <= CANDIDATES).then_some(rowids))
}

/// The text the search index holds for a request of `approvals` (aliased `a`).
const INDEXED_TEXT: &str = "a.short_id || char(10) || a.agent || char(10) || a.tool || char(10) \
     || coalesce(a.summary, '') || char(10) || a.args || char(10) \
     || coalesce(a.decision_reason, '')";

/// The smallest request id made at `ms` or later: ids are ULIDs, whose first ten
/// characters are the time they were made, and a request's id is made after its
/// `created_at` is taken. Bounding the id as well as `created_at` lets SQLite stop at
/// the bound instead of reading every older row.
fn first_id_at(ms: i64) -> String {
    let ms = u64::try_from(ms.max(0)).unwrap_or(0);
    ulid::Ulid::from_parts(ms.min((1 << 48) - 1), 0).to_string()
}

/// A parameter of a statement being built.
type Sql = Value<'static>;

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
    Sql::from(s.to_string())
}

/// What a page is ordered and cut by: a column, how a key is a parameter, a row's key.
struct Key<T, K> {
    column: &'static str,
    param: fn(&K) -> Sql,
    of: fn(&T) -> K,
}

/// One page of rows matching `w`, newest first, starting at `cursor`: `read` runs the
/// statement for a WHERE clause, an order (`DESC` or `ASC`) and a limit. One row more
/// than a page is read: whether there is another page beyond it.
fn keyset<T, K>(
    mut w: Where,
    cursor: &Cursor<K>,
    limit: usize,
    key: &Key<T, K>,
    read: impl FnOnce(&Where, &str, usize) -> Result<Vec<T>>,
) -> Result<Page<T, K>> {
    let limit = limit.max(1);
    let col = key.column;
    match cursor {
        Cursor::Newest | Cursor::Older(_) => {
            let older_than = if let Cursor::Older(k) = cursor {
                w.and(&format!("{col} < ?"), [(key.param)(k)]);
                true
            } else {
                false
            };
            let mut rows = read(&w, "DESC", limit + 1)?;
            let more = rows.len() > limit;
            rows.truncate(limit);
            Ok(Page {
                older: more.then(|| rows.last().map(key.of)).flatten(),
                newer: older_than.then(|| rows.first().map(key.of)).flatten(),
                rows,
            })
        }
        Cursor::Newer(k) => {
            w.and(&format!("{col} > ?"), [(key.param)(k)]);
            let mut rows = read(&w, "ASC", limit + 1)?;
            let more = rows.len() > limit;
            rows.truncate(limit);
            rows.reverse();
            Ok(Page {
                older: rows.last().map(key.of),
                newer: more.then(|| rows.first().map(key.of)).flatten(),
                rows,
            })
        }
    }
}

/// `LIKE` as SQLite has it, ignoring the case of ASCII letters: PostgreSQL's `LIKE`
/// heeds case, its `ILIKE` does not (of any letter).
fn like(conn: &Conn<'_>) -> &'static str {
    conn.dialect("LIKE", "ILIKE")
}

/// The WHERE clause of `filter`'s words and filters (its page cursor aside).
fn history_where(conn: &Conn<'_>, filter: &HistoryFilter) -> Where {
    let mut w = Where::default();
    let like = like(conn);
    for word in &filter.words {
        let p = containing(word);
        w.and(
            &format!(
                "(tool {like} ? ESCAPE '\\' OR agent {like} ? ESCAPE '\\' \
                 OR summary {like} ? ESCAPE '\\' OR args {like} ? ESCAPE '\\' \
                 OR decision_reason {like} ? ESCAPE '\\' OR short_id {like} ? ESCAPE '\\')"
            ),
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
        let scores: Vec<&str> = [
            RiskScore::Low,
            RiskScore::Medium,
            RiskScore::High,
            RiskScore::Critical,
        ]
        .into_iter()
        .filter(|s| *s >= least)
        .map(RiskScore::as_str)
        .collect();
        let marks = vec!["?"; scores.len()].join(", ");
        w.and(
            &format!("risk_score IN ({marks})"),
            scores.into_iter().map(text),
        );
    }
    if let Some(since) = filter.since {
        w.and(
            "id >= ? AND created_at >= ?",
            [text(&first_id_at(since)), Sql::Int(since)],
        );
    }
    w
}

impl Store {
    /// Brings the search index up to date, a batch at a time: re-indexes the requests
    /// changed since they were indexed, then indexes up to `max` requests written since
    /// the last pass, in one transaction. Returns how many new requests it indexed (fewer
    /// than `max`: it has caught up). Each step is one statement: FTS5 flushes what it
    /// holds at every statement's end, so one statement per batch keeps it cheap.
    ///
    /// PostgreSQL has no such index (SQLite's FTS5): there a search reads the requests
    /// that hold its words with one pass over the table ([`Store::history_page`]).
    pub fn index_history(&self, max: usize) -> Result<usize> {
        self.writer(|w| {
            if w.is_postgres() {
                return Ok(0);
            }
            let behind: bool = w.query_row(
                "SELECT EXISTS (SELECT 1 FROM approvals_search_stale) OR EXISTS (SELECT 1 FROM \
                 approvals WHERE rowid > (SELECT indexed_through FROM approvals_search_state))",
                params![],
                |r| r.get(0),
            )?;
            if !behind {
                return Ok(0);
            }
            w.write(|tx| {
                // The stale entries out and back in, three statements in a row.
                tx.execute(
                    "DELETE FROM approvals_search WHERE rowid IN \
                     (SELECT approval_rowid FROM approvals_search_stale)",
                    params![],
                )?;
                tx.execute(
                    &format!(
                        "INSERT INTO approvals_search (rowid, text) \
                         SELECT a.rowid, {INDEXED_TEXT} FROM approvals a \
                         JOIN approvals_search_stale s ON s.approval_rowid = a.rowid"
                    ),
                    params![],
                )?;
                tx.execute("DELETE FROM approvals_search_stale", params![])?;
                let through: i64 = tx.query_row(
                    "SELECT indexed_through FROM approvals_search_state WHERE id = 1",
                    params![],
                    |r| r.get(0),
                )?;
                let last: Option<i64> = tx.query_row(
                    "SELECT max(rowid) FROM (SELECT rowid FROM approvals WHERE rowid > ?1 \
                     ORDER BY rowid LIMIT ?2)",
                    params![through, max as i64],
                    |r| r.get(0),
                )?;
                let mut indexed = 0;
                if let Some(last) = last {
                    indexed = tx.execute(
                        &format!(
                            "INSERT INTO approvals_search (rowid, text) SELECT a.rowid, {INDEXED_TEXT} \
                             FROM approvals a WHERE a.rowid > ?1 AND a.rowid <= ?2"
                        ),
                        params![through, last],
                    )?;
                    tx.execute(
                        "UPDATE approvals_search_state SET indexed_through = ?1 WHERE id = 1",
                        params![last],
                    )?;
                }
                Ok(indexed)
            })
        })
    }

    /// One page of requests matching `filter`, newest first.
    pub fn history_page(&self, filter: &HistoryFilter) -> Result<Page<Approval, String>> {
        self.read(|c| {
            let mut w = history_where(c, filter);
            // Few requests hold the words: read only those (the index found them, or it
            // has not looked at them yet); many do: reading newest first finds a page soon.
            let indexed = search_index_query(&filter.words).filter(|_| !c.is_postgres());
            let found = match indexed {
                Some(query) => candidates(c, &query)?,
                // Only words too short for the index: one pass over the table in its own
                // order finds the few requests that hold them far sooner than reading it
                // newest first (a lookup per request); many: reading newest first is soon.
                None if !filter.words.is_empty() => scanned(c, &filter.words)?,
                None => None,
            };
            if let Some(rowids) = found {
                let list: Vec<String> = rowids.iter().map(i64::to_string).collect();
                // None found: a condition that holds for no row (PostgreSQL refuses an
                // empty IN list).
                let among = if list.is_empty() {
                    "1 = 0".to_string()
                } else {
                    format!("rowid IN ({})", list.join(","))
                };
                w.and(&among, std::iter::empty());
            }
            let key = Key {
                column: "id",
                param: |id: &String| text(id),
                of: |a: &Approval| a.id.clone(),
            };
            keyset(w, &filter.cursor, filter.limit, &key, |w, order, limit| {
                // The text is built per page (filters, cursor, limit): not worth keeping.
                c.once().query_map(
                    &format!(
                        "SELECT {COLUMNS} FROM approvals WHERE true{} ORDER BY id {order} LIMIT {limit}",
                        w.sql
                    ),
                    &w.params,
                    row_to_approval,
                )
            })
        })
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
        if let Some(since) = filter.since {
            w.and("at >= ?", [Sql::Int(since)]);
        }
        let key = Key {
            column: "seq",
            param: |seq: &i64| Sql::Int(*seq),
            of: |r: &AuditRow| r.seq,
        };
        self.read(|c| {
            if let Some(a) = &filter.actor {
                let like = like(c);
                w.and(
                    &format!("actor {like} ? ESCAPE '\\'"),
                    [text(&containing(a))],
                );
            }
            keyset(w, &filter.cursor, filter.limit, &key, |w, order, limit| {
                c.once().query_map(
                    &format!(
                        "SELECT seq, at, approval_id, event, actor, channel, detail FROM audit \
                         WHERE true{} ORDER BY seq {order} LIMIT {limit}",
                        w.sql
                    ),
                    &w.params,
                    row_to_audit,
                )
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::Verb;
    use crate::store::tests::{decision, inserted, new};
    use crate::store::NewApproval;

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
    fn the_index_catches_up_in_batches_and_what_it_has_not_read_is_found_anyway() {
        let s = Store::open_in_memory().unwrap();
        if s.is_postgres() {
            // SQLite's FTS5 index; PostgreSQL has none (searches: the test above).
            assert_eq!(s.index_history(10).unwrap(), 0);
            return;
        }
        let search = |w: &[&str], limit: usize| {
            s.history_page(&HistoryFilter {
                words: w.iter().map(ToString::to_string).collect(),
                limit,
                ..HistoryFilter::default()
            })
            .unwrap()
        };
        let in_index = |q: &str| -> i64 {
            s.writer(|c| {
                c.query_row(
                    "SELECT count(*) FROM approvals_search WHERE approvals_search MATCH ?1",
                    params![q],
                    |r| r.get(0),
                )
            })
            .unwrap()
        };
        let mut a = new("m", "t", None, Some(i64::MAX));
        a.asked.summary = Some("Quote for Ann".into());
        let a = inserted(&s, &a);
        // Not indexed yet: read directly.
        assert_eq!(ids(&search(&["quote"], 10)), [a.id.as_str()]);
        assert_eq!(s.index_history(10).unwrap(), 1);
        assert_eq!(s.index_history(10).unwrap(), 0, "caught up");
        assert_eq!(in_index("\"quote\""), 1);
        // Changed after it was indexed: its entry is stale, the row is read directly.
        let mut d = decision(Verb::Deny, "alice");
        d.reason = Some("Not to \"ACME\" customers".into());
        s.decide(&a.id, &d, 0).unwrap();
        assert_eq!(in_index("\"acme\""), 0);
        assert_eq!(ids(&search(&["\"acme\""], 10)), [a.id.as_str()]);
        s.index_history(10).unwrap();
        assert_eq!((in_index("\"acme\""), in_index("\"quote\"")), (1, 1));
        assert_eq!(ids(&search(&["acme", "quote"], 10)), [a.id.as_str()]);
        assert!(search(&["acme", "xyz"], 10).rows.is_empty());
        // More requests hold the word than the index may name: read newest first.
        let many: Vec<NewApproval> = (0..CANDIDATES + 5)
            .map(|i| {
                let mut n = new("m", "t", None, Some(i64::MAX));
                n.asked.summary = Some(format!("common word {i}"));
                n
            })
            .collect();
        s.insert_batch(&many);
        for indexed in [false, true] {
            let page = search(&["common"], 3);
            assert_eq!(page.rows.len(), 3, "indexed: {indexed}");
            assert_eq!(page.rows[0].summary.as_deref(), Some("common word 2004"));
            assert!(page.older.is_some());
            s.index_history(100_000).unwrap();
        }
        assert_eq!(in_index("\"common\""), CANDIDATES as i64 + 5);
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
