//! `gatebot store copy --to postgres://…`: an installation's SQLite file copied into a
//! fresh PostgreSQL database, so it carries on there (docs/scale-out.md, "Moving from
//! SQLite"). Offline: the daemon is stopped, so nothing changes the file meanwhile.
//!
//! 1. The SQLite file is taken for the copy alone (SQLite's exclusive locking mode and
//!    a transaction that writes nothing): a gatebot that has it open is told apart
//!    and refused, nothing changes it meanwhile, and everything is read in that one
//!    transaction, one snapshot. Its schema must be this gatebot's (the newest
//!    migration applied, no newer one).
//! 2. PostgreSQL's schema is brought up as a node's start does ([`Store::open_postgres`]).
//! 3. One PostgreSQL transaction, taking the cluster's writer lock as every write does
//!    ([`Store::write`]), so a node started too early waits for it rather than writing
//!    between its rows. A target that already holds requests or audit rows is refused.
//! 4. The tables to copy come from the schemas themselves, not from a list here: every
//!    table of the SQLite file that PostgreSQL's schema has too, with the same columns
//!    (plus PostgreSQL's explicit `rowid`, filled from SQLite's implicit one). A new
//!    migration's table is copied without touching this file. Left out: SQLite's own
//!    tables (`sqlite_*`), the history search's full-text index (a virtual table and its
//!    shadow tables) and its bookkeeping ([`SQLITE_ONLY`]); any other table PostgreSQL
//!    lacks is refused as a mistake in gatebot (`tests/it/postgres_schema.rs` checks the
//!    two schemas agree).
//! 5. Tables are copied referenced ones first (their foreign keys are checked at each
//!    row), and the tables whose inserts run triggers (the requests, which keep the
//!    evidence summaries; the audit trail, which moves its head) before the tables those
//!    triggers fill. Rows PostgreSQL already holds when a table's turn comes (the rows
//!    its schema starts with, and what those triggers wrote) are kept: they were made from
//!    the same rows by the same rules. The audit trail goes in seq order with its seqs
//!    and hashes as they are; its append-only triggers stay on. The triggers that keep
//!    a summary row by row (the audit head, the evidence counts) are off in the copy's
//!    transaction and what they keep is set once from the copied rows
//!    ([`ROW_TRIGGERS`]: row by row, a long trail took quadratic time); the head must
//!    end where SQLite's is, which is checked before committing.
//! 6. Each value is bound as its PostgreSQL column's type (`bigint`, `text`, `double
//!    precision`, a `boolean` from 0/1, `bytea`…); a value that does not fit is refused
//!    with its table and column, and nothing is kept.
//! 7. Identity columns (the `rowid`s, reminders' ids) were written explicitly: their
//!    sequences are moved past the highest copied value, so the next insert does not
//!    collide.
//! 8. After the commit, the copy's audit trail is verified as `gatebot audit verify` does.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use tokio_postgres::types::{IsNull, ToSql, Type};

use super::audit::{AuditCheck, AuditHead};
use super::pg::{self, PgConn};
use super::sql::Value;
use super::{Backend, Result, Store, StoreError};

/// Tables of the SQLite file that PostgreSQL does not have, on purpose: the history
/// search's bookkeeping (its full-text index itself is a virtual table and shadow
/// tables, which `PRAGMA table_list` names as such). See the top of
/// `migrations/postgres/0001_baseline.sql`.
const SQLITE_ONLY: &[&str] = &["approvals_search_state", "approvals_search_stale"];

/// Tables of what the nodes that used the file were doing, not of what they decided: the
/// nodes' rows and their leases. The PostgreSQL nodes write their own; a lease copied
/// from the file would only hold the first of them back.
const RUNTIME: &[&str] = &["nodes", "leases"];

/// Most values one `INSERT` carries (PostgreSQL takes up to 65 535 parameters).
const VALUES_PER_INSERT: usize = 30_000;
/// Most rows one `INSERT` carries.
const ROWS_PER_INSERT: usize = 1_000;

/// What [`copy_to_postgres`] did.
#[derive(Debug)]
pub struct Copied {
    /// The PostgreSQL database, for people (no password).
    pub database: String,
    /// Each table copied, in the order copied.
    pub tables: Vec<TableCopied>,
    /// The audit trail's head in the SQLite file, and in the copy.
    pub source_head: AuditHead,
    pub copy_head: AuditHead,
    /// The copy's audit trail verified after the commit.
    pub check: AuditCheck,
    /// How long the copy's transaction took (reading, writing, committing).
    pub took: Duration,
}

/// One table copied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableCopied {
    pub table: String,
    /// Rows read from the SQLite file.
    pub rows: u64,
    /// Of those, rows PostgreSQL already held (its schema's, or what a trigger made from
    /// rows copied before), kept as they were.
    pub kept: u64,
}

impl Copied {
    /// Rows read from the SQLite file, over every table.
    #[must_use]
    pub fn rows(&self) -> u64 {
        self.tables.iter().map(|t| t.rows).sum()
    }

    /// Rows of `table` copied, 0 if it was not.
    #[must_use]
    pub fn rows_of(&self, table: &str) -> u64 {
        self.tables
            .iter()
            .find(|t| t.table == table)
            .map_or(0, |t| t.rows)
    }
}

/// Copies the SQLite database at `sqlite` into the empty PostgreSQL database at `url`
/// (signing in with `password`), in one transaction: see the module's docs.
pub fn copy_to_postgres(sqlite: &Path, url: &str, password: Option<&str>) -> Result<Copied> {
    let source = Source::open(sqlite)?;
    let plan = source.tables()?;
    let source_head = source.head()?;
    if source_head.legacy_rows > 0 || source_head.legacy_through > 0 {
        // PostgreSQL's head starts with none, and its triggers keep it so.
        return Err(StoreError::File(format!(
            "the audit trail in {} began before gatebot chained it (its first {} rows have \
             no hash), and PostgreSQL's trail cannot hold such rows: this installation \
             cannot be copied yet. Keep it on SQLite, and please report it. Nothing was \
             copied",
            sqlite.display(),
            source_head.legacy_rows
        )));
    }
    let store = Store::open_postgres(url, password).map_err(|e| {
        StoreError::File(format!(
            "cannot open the PostgreSQL database {url}: {}. Make it as docs/scale-out.md \
             says (\"Setting it up\"), and check that this machine reaches it. Nothing was \
             copied",
            with_causes(&e)
        ))
    })?;
    let database = match &store.backend {
        Backend::Postgres(pg) => pg.db.shown().to_string(),
        Backend::Sqlite { .. } => unreachable!("opened on PostgreSQL"),
    };
    let started = Instant::now();
    let tables = store.write(|tx| {
        let pg = tx.postgres().expect("a PostgreSQL store's transaction");
        refuse_unless_empty(pg, &database)?;
        let tables = order(pg, plan)?;
        set_row_triggers(pg, "DISABLE")?;
        let mut copied = Vec::with_capacity(tables.len());
        for table in &tables {
            copied.push(copy_table(&source.conn, pg, table)?);
        }
        for table in &tables {
            move_sequences(pg, table)?;
        }
        follow_copied_rows(tx, pg)?;
        set_row_triggers(pg, "ENABLE")?;
        let head = pg_head(pg)?;
        if head != source_head {
            return Err(StoreError::File(format!(
                "the copy's audit head ({}) is not the SQLite file's ({}); nothing was \
                 copied. Run `gatebot audit verify` on the SQLite installation first",
                head_words(&head),
                head_words(&source_head)
            )));
        }
        // The trail grew: nodes listening on the database (none should be) are told.
        if head.head.seq > 0 {
            let first = pg.query("SELECT min(seq) FROM audit", NONE, false)?;
            let first: Option<i64> = first.first().map(|r| r.try_get(0)).transpose()?;
            tx.note_appended(first.unwrap_or(head.head.seq));
            tx.note_appended(head.head.seq);
        }
        Ok(copied)
    });
    let tables = tables.map_err(|e| match e {
        // Ours, which say it.
        StoreError::File(_) => e,
        e => StoreError::File(format!(
            "the copy stopped: {}. Nothing was copied",
            with_causes(&e)
        )),
    })?;
    let took = started.elapsed();
    // Nothing was written to the file: this lets go of it (as dropping it would).
    let _ = source.conn.execute_batch("ROLLBACK");
    let checked = store.verify_audit().and_then(|check| {
        let head = store
            .audit_head()?
            .ok_or_else(|| StoreError::Corrupt("the copy's audit head is missing".into()))?;
        Ok((check, head))
    });
    let (check, copy_head) = checked.map_err(|e| {
        StoreError::File(format!(
            "the copy was made, but its audit trail could not be checked ({}): start \
             gatebot on it and run `gatebot audit verify`",
            with_causes(&e)
        ))
    })?;
    Ok(Copied {
        database,
        tables,
        source_head: source_head.head,
        copy_head,
        check,
        took,
    })
}

/// `e` and what caused it, each said once ("error connecting to server" alone names
/// nothing).
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut words = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let said = c.to_string();
        // PostgreSQL's own report is in `words` already, in fewer words.
        let reported = c.is::<tokio_postgres::error::DbError>()
            || c.downcast_ref::<tokio_postgres::Error>()
                .is_some_and(|e| e.as_db_error().is_some());
        if !words.contains(&said) && !reported {
            words.push_str(": ");
            words.push_str(&said);
        }
        cause = c.source();
    }
    words
}

/// The SQLite file being copied.
struct Source {
    conn: Connection,
}

/// A table to copy: its name and the columns both databases have, in SQLite's order
/// (`rowid` last, when PostgreSQL has SQLite's implicit rowid as a column).
#[derive(Debug, Clone)]
struct Table {
    name: String,
    columns: Vec<String>,
    /// Whether SQLite numbers its rows (`rowid`): they are read in that order.
    has_rowid: bool,
}

/// A table as copied: its columns with PostgreSQL's types.
struct Target {
    name: String,
    columns: Vec<(String, Type)>,
    /// Whether SQLite numbers its rows (read in that order, else by primary key).
    has_rowid: bool,
    /// Columns PostgreSQL numbers itself (identity), written here explicitly.
    identity: Vec<String>,
    /// Whether any of them is `GENERATED ALWAYS` (its insert must say it overrides).
    always: bool,
}

/// The audit head row, every column: what the copy must end with.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FullHead {
    head: AuditHead,
    legacy_rows: i64,
    legacy_through: i64,
}

impl Source {
    /// Opens `path` to read only; refuses a file that is missing or is not this
    /// gatebot's database.
    fn open(path: &Path) -> Result<Source> {
        if !path.is_file() {
            return Err(StoreError::File(format!(
                "there is no gatebot database at {}: `[store] path` in the config names \
                 it (is --config the installation's bot.toml?)",
                path.display()
            )));
        }
        // Taken for itself (`locking_mode = EXCLUSIVE`, a write transaction that
        // writes nothing), which a gatebot that has the file open refuses at once:
        // nothing can change the file during the copy, and a running gatebot is said,
        // without connecting to its socket (which would start it under systemd).
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| {
            StoreError::File(format!(
                "cannot open {}: {e} (run the copy as the account gatebot runs as)",
                path.display()
            ))
        })?;
        // A gatebot holds the file open all the time: no use waiting for it.
        conn.busy_timeout(Duration::ZERO)?;
        conn.pragma_update(None, "locking_mode", "EXCLUSIVE")?;
        if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
            return Err(match e.sqlite_error_code() {
                Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked) => {
                    StoreError::File(format!(
                        "{} is in use: gatebot is running. Stop it, with its sockets so that \
                         an agent's call does not start it again (sudo systemctl stop \
                         gatebot.socket gatebot-control.socket gatebot.service), then copy",
                        path.display()
                    ))
                }
                _ => e.into(),
            });
        }
        let behind = super::migrations()
            .pending_migrations(&conn)
            .map_err(|e| StoreError::File(format!("{} cannot be read: {e}", path.display())))?;
        if behind > 0 {
            return Err(StoreError::File(format!(
                "{} was written by an older gatebot: start this gatebot once on it as it \
                 is (it brings the file up to date), stop it, then copy",
                path.display()
            )));
        }
        if behind < 0 {
            return Err(StoreError::File(format!(
                "{} was written by a newer gatebot: copy it with that version",
                path.display()
            )));
        }
        Ok(Source { conn })
    }

    /// The tables to copy, with their columns, from the file's own schema.
    fn tables(&self) -> Result<Vec<Table>> {
        let mut list = self
            .conn
            .prepare("SELECT name, type, wr FROM pragma_table_list WHERE schema = 'main'")?;
        let listed: Vec<(String, String, bool)> = list
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let mut tables = Vec::new();
        for (name, kind, without_rowid) in listed {
            // Views, virtual tables (the full-text index) and their shadow tables, and
            // SQLite's own (`sqlite_sequence`, `sqlite_stat1`…) are not data to copy.
            if kind != "table"
                || name.starts_with("sqlite_")
                || SQLITE_ONLY.contains(&&*name)
                || RUNTIME.contains(&&*name)
            {
                continue;
            }
            let mut info = self
                .conn
                .prepare("SELECT name FROM pragma_table_info(?1) ORDER BY cid")?;
            let columns = info
                .query_map([&name], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            tables.push(Table {
                name,
                columns,
                has_rowid: !without_rowid,
            });
        }
        tables.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(tables)
    }

    /// The audit trail's head row.
    fn head(&self) -> Result<FullHead> {
        self.conn
            .query_row(
                "SELECT seq, hash, rows, legacy_rows, legacy_through FROM audit_head WHERE id = 1",
                [],
                |r| {
                    Ok(FullHead {
                        head: AuditHead {
                            seq: r.get(0)?,
                            hash: r.get(1)?,
                            rows: r.get(2)?,
                        },
                        legacy_rows: r.get(3)?,
                        legacy_through: r.get(4)?,
                    })
                },
            )
            .map_err(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => StoreError::File(
                    "the SQLite file's audit head (audit_head) is missing: run `gatebot audit \
                     verify` on it; a trail that does not verify is not copied"
                        .into(),
                ),
                e => e.into(),
            })
    }
}

/// `seq N, hash abcdef012345…`.
fn head_words(h: &FullHead) -> String {
    let mut s = format!("row {}", h.head.seq);
    if let Some(hash) = &h.head.hash {
        s.push_str(&format!(", hash {}…", hash.get(..12).unwrap_or(hash)));
    }
    if h.legacy_rows > 0 {
        s.push_str(&format!(
            ", {} rows written before the chain existed",
            h.legacy_rows
        ));
    }
    s
}

/// A statement's parameters when it has none.
const NONE: &[Value<'static>] = &[];

/// Refuses a database that already holds requests or audit rows: a copy goes into a
/// fresh one, never over an installation.
fn refuse_unless_empty(pg: &PgConn, database: &str) -> Result<()> {
    let rows = pg.query(
        "SELECT (SELECT count(*) FROM approvals), (SELECT count(*) FROM audit)",
        NONE,
        false,
    )?;
    let row = rows
        .first()
        .ok_or_else(|| StoreError::Corrupt("no count".into()))?;
    let (requests, audit): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
    if requests > 0 || audit > 0 {
        let some =
            |n: i64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        return Err(StoreError::File(format!(
            "the PostgreSQL database {database} already holds an installation ({}, {}): \
             copy into a new, empty database, made as docs/scale-out.md says (\"Setting it \
             up\"). Nothing was copied",
            some(requests, "request", "requests"),
            some(audit, "audit row", "audit rows")
        )));
    }
    Ok(())
}

/// The tables to copy, each with PostgreSQL's column types, in the order they can be
/// copied in (see the module's docs, 5); refuses a table or column PostgreSQL lacks.
fn order(pg: &PgConn, tables: Vec<Table>) -> Result<Vec<Target>> {
    // Each table's columns on PostgreSQL: name, type, identity ('a' always, 'd' by
    // default, '' none).
    let mut targets = BTreeMap::new();
    for table in tables {
        let rows = pg.query(
            "SELECT a.attname::text, a.atttypid, a.attidentity::text \
             FROM pg_attribute a \
             JOIN pg_class c ON c.oid = a.attrelid \
             JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE c.relname = ?1 AND n.nspname = current_schema() AND c.relkind = 'r' \
             AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
            &[Value::from(table.name.as_str())],
            true,
        )?;
        if rows.is_empty() && SQLITE_ONLY.contains(&table.name.as_str()) {
            continue;
        }
        if rows.is_empty() {
            return Err(StoreError::File(format!(
                "the table {} of the SQLite file is not in PostgreSQL's schema: this \
                 gatebot cannot copy it (a mistake in gatebot: please report it). Nothing \
                 was copied",
                table.name
            )));
        }
        let mut pg_columns: BTreeMap<String, (Type, String)> = BTreeMap::new();
        for r in &rows {
            let name: String = r.try_get(0)?;
            let oid: u32 = r.try_get(1)?;
            let identity: String = r.try_get(2)?;
            let ty = Type::from_oid(oid).unwrap_or(Type::UNKNOWN);
            pg_columns.insert(name, (ty, identity));
        }
        let mut columns = table.columns.clone();
        if table.has_rowid
            && pg_columns.contains_key("rowid")
            && !columns.iter().any(|c| c == "rowid")
        {
            columns.push("rowid".into());
        }
        let ours: BTreeSet<&str> = columns.iter().map(String::as_str).collect();
        let theirs: BTreeSet<&str> = pg_columns.keys().map(String::as_str).collect();
        if ours != theirs {
            let only = |a: &BTreeSet<&str>, b: &BTreeSet<&str>| {
                a.difference(b).copied().collect::<Vec<_>>().join(", ")
            };
            return Err(StoreError::File(format!(
                "the table {} differs between the two schemas (only in SQLite: [{}]; only in \
                 PostgreSQL: [{}]): a mistake in gatebot, please report it. Nothing was copied",
                table.name,
                only(&ours, &theirs),
                only(&theirs, &ours)
            )));
        }
        let mut target = Target {
            name: table.name.clone(),
            columns: Vec::with_capacity(columns.len()),
            has_rowid: table.has_rowid,
            identity: Vec::new(),
            always: false,
        };
        for c in columns {
            let (ty, identity) = pg_columns.remove(&c).expect("compared above");
            match identity.as_str() {
                "a" => {
                    target.always = true;
                    target.identity.push(c.clone());
                }
                "d" => target.identity.push(c.clone()),
                _ => {}
            }
            target.columns.push((c, ty));
        }
        targets.insert(table.name, target);
    }
    // Which table references which (foreign keys), and which run triggers on insert.
    let mut needs: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for r in pg.query(
        "SELECT a.relname::text, b.relname::text FROM pg_constraint k \
         JOIN pg_class a ON a.oid = k.conrelid \
         JOIN pg_class b ON b.oid = k.confrelid \
         JOIN pg_namespace n ON n.oid = a.relnamespace \
         WHERE k.contype = 'f' AND n.nspname = current_schema()",
        NONE,
        false,
    )? {
        let (from, to): (String, String) = (r.try_get(0)?, r.try_get(1)?);
        if from != to && targets.contains_key(&to) {
            needs.entry(from).or_default().insert(to);
        }
    }
    let mut triggering = BTreeSet::new();
    for r in pg.query(
        "SELECT DISTINCT c.relname::text FROM pg_trigger t \
         JOIN pg_class c ON c.oid = t.tgrelid \
         JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE NOT t.tgisinternal AND (t.tgtype & 4) <> 0 AND n.nspname = current_schema()",
        NONE,
        false,
    )? {
        triggering.insert(r.try_get::<_, String>(0)?);
    }
    // Each turn takes, of the tables whose referenced tables are copied, one that runs
    // triggers first, else the first by name.
    let mut ordered = Vec::with_capacity(targets.len());
    while !targets.is_empty() {
        let ready = |name: &String| {
            needs
                .get(name)
                .is_none_or(|n| n.iter().all(|t| !targets.contains_key(t)))
        };
        let next = targets
            .keys()
            .filter(|n| ready(n))
            .min_by_key(|n| (!triggering.contains(*n), (*n).clone()))
            .cloned()
            .ok_or_else(|| {
                StoreError::File(format!(
                    "the tables {} reference each other in a loop: they cannot be copied \
                     one after the other (a mistake in gatebot, please report it). Nothing \
                     was copied",
                    targets.keys().cloned().collect::<Vec<_>>().join(", ")
                ))
            })?;
        ordered.push(targets.remove(&next).expect("a key of it"));
    }
    Ok(ordered)
}

/// `"name"`, quoted for both databases.
fn quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Copies one table's rows, a batch of rows per `INSERT`.
fn copy_table(sqlite: &Connection, pg: &PgConn, t: &Target) -> Result<TableCopied> {
    let names: Vec<String> = t.columns.iter().map(|(c, _)| quoted(c)).collect();
    // Rows PostgreSQL holds already (see the module's docs, 5) are kept.
    let held = pg.query(
        &format!("SELECT EXISTS (SELECT 1 FROM {})", quoted(&t.name)),
        NONE,
        false,
    )?;
    let held: bool = held
        .first()
        .map(|r| r.try_get(0))
        .transpose()?
        .unwrap_or(false);
    let order = if t.has_rowid {
        "rowid".to_string()
    } else {
        // WITHOUT ROWID: by its primary key, which is how SQLite stores it.
        "1".to_string()
    };
    let mut select = sqlite.prepare(&format!(
        "SELECT {} FROM {} ORDER BY {order}",
        names.join(", "),
        quoted(&t.name)
    ))?;
    let width = t.columns.len();
    let per_insert = (VALUES_PER_INSERT / width.max(1)).clamp(1, ROWS_PER_INSERT);
    let mut batch: Vec<Cell> = Vec::with_capacity(per_insert * width);
    let mut copied = TableCopied {
        table: t.name.clone(),
        rows: 0,
        kept: 0,
    };
    let mut rows = select.query([])?;
    while let Some(row) = rows.next()? {
        for (i, (column, ty)) in t.columns.iter().enumerate() {
            batch.push(Cell::of(row.get_ref(i)?, ty).map_err(|what| {
                StoreError::File(format!(
                    "{}.{column} of row {} holds {what}; nothing was copied",
                    t.name,
                    copied.rows + 1
                ))
            })?);
        }
        copied.rows += 1;
        if batch.len() == per_insert * width {
            copied.kept += insert(pg, t, &names, &batch, held)?;
            batch.clear();
        }
    }
    if !batch.is_empty() {
        copied.kept += insert(pg, t, &names, &batch, held)?;
    }
    Ok(copied)
}

/// Inserts `cells` (whole rows of `t`): how many of them PostgreSQL already held.
fn insert(pg: &PgConn, t: &Target, names: &[String], cells: &[Cell], held: bool) -> Result<u64> {
    let width = t.columns.len();
    let rows = cells.len() / width;
    let mut sql = format!("INSERT INTO {} ({})", quoted(&t.name), names.join(", "));
    if t.always {
        sql.push_str(" OVERRIDING SYSTEM VALUE");
    }
    sql.push_str(" VALUES ");
    for r in 0..rows {
        if r > 0 {
            sql.push_str(", ");
        }
        sql.push('(');
        for c in 0..width {
            if c > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("?{}", r * width + c + 1));
        }
        sql.push(')');
    }
    if held {
        sql.push_str(" ON CONFLICT DO NOTHING");
    }
    let params: Vec<Bound<'_>> = cells
        .iter()
        .enumerate()
        .map(|(i, cell)| Bound {
            cell,
            ty: t.columns[i % width].1.clone(),
        })
        .collect();
    // The same text for every full batch of a table: prepared once.
    let written = pg.execute(&sql, &params, true)?;
    Ok((rows - written) as u64)
}

/// The row triggers that keep a summary of the rows inserted, one update of the same
/// row per insert: the audit head (and the check that it moves one row at a time) and
/// the evidence summaries. In one transaction that copies a whole trail they are
/// quadratic (each update of the head row walks past the versions the earlier ones
/// left), so the copy turns them off in its transaction, sets what they keep once from
/// the copied rows ([`follow_copied_rows`]), and turns them on again before it
/// commits. Nothing else sees them off: `ALTER TABLE` locks each table until the commit.
const ROW_TRIGGERS: [(&str, &str); 3] = [
    ("audit", "audit_head_follows"),
    ("audit_head", "audit_head_counts_every_row"),
    ("approvals", "evidence_counts_insert"),
];

/// `DISABLE` or `ENABLE` [`ROW_TRIGGERS`] (the database's owner may: gatebot's role,
/// which made the schema).
fn set_row_triggers(pg: &PgConn, how: &str) -> Result<()> {
    for (table, trigger) in ROW_TRIGGERS {
        pg.batch(&format!("ALTER TABLE {table} {how} TRIGGER {trigger}"))?;
    }
    Ok(())
}

/// What [`ROW_TRIGGERS`] would have kept, from the copied rows: the audit head at the
/// trail's last row, counting every row, and the evidence summaries counted from the
/// requests (as the summaries' build and repair count them).
fn follow_copied_rows(tx: &super::sql::Tx<'_>, pg: &PgConn) -> Result<()> {
    pg.batch(
        "UPDATE audit_head SET (seq, hash, rows) = \
           (SELECT seq, hash, (SELECT count(*) FROM audit) FROM audit ORDER BY seq DESC LIMIT 1) \
         WHERE id = 1 AND EXISTS (SELECT 1 FROM audit)",
    )?;
    super::evidence::rebuild(tx)
}

/// Moves the sequences of `t`'s identity columns past the highest value copied.
fn move_sequences(pg: &PgConn, t: &Target) -> Result<()> {
    for column in &t.identity {
        pg.query(
            &format!(
                "SELECT setval(pg_get_serial_sequence(?1, ?2), max({c})) FROM {t} \
                 HAVING max({c}) IS NOT NULL",
                c = quoted(column),
                t = quoted(&t.name)
            ),
            &[Value::from(quoted(&t.name)), Value::from(column.as_str())],
            false,
        )?;
    }
    Ok(())
}

/// The copy's audit head row, read in the copy's transaction.
fn pg_head(pg: &PgConn) -> Result<FullHead> {
    let rows = pg.query(
        "SELECT seq, hash, rows, legacy_rows, legacy_through FROM audit_head WHERE id = 1",
        NONE,
        false,
    )?;
    let r = rows
        .first()
        .ok_or_else(|| StoreError::Corrupt("the copy's audit head is missing".into()))?;
    Ok(FullHead {
        head: AuditHead {
            seq: r.try_get(0)?,
            hash: r.try_get(1)?,
            rows: r.try_get(2)?,
        },
        legacy_rows: r.try_get(3)?,
        legacy_through: r.try_get(4)?,
    })
}

/// One value read from SQLite, already in the form its PostgreSQL column takes.
#[derive(Debug, Clone, PartialEq)]
enum Cell {
    Null,
    Int(i64),
    Bool(bool),
    Real(f64),
    Text(String),
    Bytes(Vec<u8>),
}

impl Cell {
    /// `v` as a value of a column of type `ty`; `Err` says what it holds instead.
    fn of(v: ValueRef<'_>, ty: &Type) -> std::result::Result<Cell, String> {
        let is_int = [Type::INT8, Type::INT4, Type::INT2].contains(ty);
        let is_real = [Type::FLOAT8, Type::FLOAT4].contains(ty);
        let is_text = [Type::TEXT, Type::VARCHAR, Type::BPCHAR, Type::NAME].contains(ty);
        let mismatch = |what: &str| format!("{what}, where PostgreSQL's column is {ty}");
        Ok(match v {
            ValueRef::Null => Cell::Null,
            ValueRef::Integer(n) if is_int => {
                // Checked here, not at bind time, to name the table and column.
                let fits = match *ty {
                    Type::INT4 => i32::try_from(n).is_ok(),
                    Type::INT2 => i16::try_from(n).is_ok(),
                    _ => true,
                };
                if !fits {
                    return Err(mismatch(&format!("{n}, too large")));
                }
                Cell::Int(n)
            }
            ValueRef::Integer(n @ (0 | 1)) if *ty == Type::BOOL => Cell::Bool(n == 1),
            #[allow(clippy::cast_precision_loss)]
            ValueRef::Integer(n) if is_real => Cell::Real(n as f64),
            ValueRef::Real(x) if is_real => Cell::Real(x),
            ValueRef::Text(s) if is_text => Cell::Text(
                std::str::from_utf8(s)
                    .map_err(|_| "text that is not UTF-8".to_string())?
                    .to_string(),
            ),
            ValueRef::Blob(b) | ValueRef::Text(b) if *ty == Type::BYTEA => Cell::Bytes(b.to_vec()),
            ValueRef::Integer(n) => return Err(mismatch(&format!("the number {n}"))),
            ValueRef::Real(x) => return Err(mismatch(&format!("the number {x}"))),
            ValueRef::Text(_) => return Err(mismatch("text")),
            ValueRef::Blob(_) => return Err(mismatch("bytes")),
        })
    }
}

/// A [`Cell`] bound as its column's type.
#[derive(Debug)]
struct Bound<'a> {
    cell: &'a Cell,
    ty: Type,
}

impl pg::Bind for Bound<'_> {
    fn sent_as(&self) -> Type {
        self.ty.clone()
    }
}

impl ToSql for Bound<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> std::result::Result<IsNull, pg::BoxError> {
        match self.cell {
            Cell::Null => Ok(IsNull::Yes),
            Cell::Int(n) => match *ty {
                Type::INT4 => i32::try_from(*n)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(*n)?.to_sql(ty, out),
                _ => n.to_sql(ty, out),
            },
            Cell::Bool(b) => b.to_sql(ty, out),
            Cell::Real(x) => match *ty {
                #[allow(clippy::cast_possible_truncation)]
                Type::FLOAT4 => (*x as f32).to_sql(ty, out),
                _ => x.to_sql(ty, out),
            },
            Cell::Text(s) => s.as_str().to_sql(ty, out),
            Cell::Bytes(b) => b.as_slice().to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    tokio_postgres::types::to_sql_checked!();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_take_their_postgresql_columns_type_or_say_what_they_hold() {
        assert_eq!(
            Cell::of(ValueRef::Integer(7), &Type::INT8),
            Ok(Cell::Int(7))
        );
        assert_eq!(
            Cell::of(ValueRef::Integer(1), &Type::BOOL),
            Ok(Cell::Bool(true))
        );
        assert_eq!(
            Cell::of(ValueRef::Integer(0), &Type::BOOL),
            Ok(Cell::Bool(false))
        );
        assert_eq!(
            Cell::of(ValueRef::Integer(2), &Type::FLOAT8),
            Ok(Cell::Real(2.0))
        );
        assert_eq!(
            Cell::of(ValueRef::Text(b"x"), &Type::TEXT),
            Ok(Cell::Text("x".into()))
        );
        assert_eq!(
            Cell::of(ValueRef::Blob(&[0, 1]), &Type::BYTEA),
            Ok(Cell::Bytes(vec![0, 1]))
        );
        assert_eq!(Cell::of(ValueRef::Null, &Type::INT8), Ok(Cell::Null));
        let refused = [
            (ValueRef::Integer(2), Type::BOOL, "the number 2"),
            (ValueRef::Text(b"7"), Type::INT8, "text"),
            (ValueRef::Integer(1 << 40), Type::INT4, "too large"),
            (ValueRef::Real(1.5), Type::INT8, "the number 1.5"),
            (ValueRef::Blob(&[0xff]), Type::TEXT, "bytes"),
        ];
        for (v, ty, words) in refused {
            let err = Cell::of(v, &ty).unwrap_err();
            assert!(err.contains(words) && err.contains(ty.name()), "{err}");
        }
    }

    #[test]
    fn a_missing_file_is_named_with_where_it_comes_from() {
        let dir = tempfile::tempdir().unwrap();
        let err = Source::open(&dir.path().join("none.db")).err().unwrap();
        assert!(err.to_string().contains("[store] path"), "{err}");
        assert!(!dir.path().join("none.db").exists(), "nothing was created");
    }

    /// The tables come from the file's schema: the history search's index and
    /// bookkeeping and SQLite's own tables are left out; the five whose order is their
    /// rowid are read with it.
    #[test]
    fn the_tables_to_copy_are_read_from_the_files_schema() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.db");
        drop(Store::open(&path).unwrap());
        let source = Source::open(&path).unwrap();
        let tables = source.tables().unwrap();
        let names: Vec<&str> = tables.iter().map(|t| t.name.as_str()).collect();
        for want in [
            "approvals",
            "audit",
            "audit_head",
            "tasks",
            "runs",
            "reminders",
        ] {
            assert!(names.contains(&want), "{want} missing from {names:?}");
        }
        for left in [
            "approvals_search",
            "approvals_search_data",
            "approvals_search_state",
            "sqlite_sequence",
        ] {
            assert!(!names.contains(&left), "{left} is SQLite's own");
        }
        assert_eq!(source.head().unwrap().head.seq, 0);
    }

    /// A trail older than its chain: refused before PostgreSQL is reached.
    #[test]
    fn a_trail_that_began_unchained_is_refused_before_anything_is_copied() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.db");
        drop(Store::open(&path).unwrap());
        let c = Connection::open(&path).unwrap();
        c.execute_batch(
            "DROP TRIGGER audit_head_counts_every_row; \
             UPDATE audit_head SET legacy_rows = 2, legacy_through = 2",
        )
        .unwrap();
        drop(c);
        // Nothing listens on port 1: the refusal comes first.
        let err = copy_to_postgres(&path, "postgres://gatebot@127.0.0.1:1/gatebot", None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("began before gatebot chained it"), "{err}");
        assert!(err.contains("first 2 rows"), "{err}");
    }

    #[test]
    fn an_older_or_newer_file_is_refused_with_what_to_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.db");
        drop(Store::open(&path).unwrap());
        let set = |v: i64| {
            let c = Connection::open(&path).unwrap();
            c.pragma_update(None, "user_version", v).unwrap();
        };
        set(3);
        let err = Source::open(&path).err().unwrap().to_string();
        assert!(err.contains("older gatebot"), "{err}");
        set(999);
        let err = Source::open(&path).err().unwrap().to_string();
        assert!(err.contains("newer gatebot"), "{err}");
    }
}
