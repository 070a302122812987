//! The store's SQL layer: what the table files say to the database, in words that do
//! not name the database. A store method runs its statements through
//! [`Store::write`] (one transaction on the writer) or [`Store::read`] (a connection
//! of its own that only reads); inside, a [`Tx`] or a [`Conn`] executes and queries
//! SQL text written with `?N` parameters, binds [`Value`]s built by [`params!`], and
//! hands rows back as [`Row`]s with typed getters ([`Column`]).
//!
//! Why: the store runs on SQLite (a file, the default) or on PostgreSQL (several nodes
//! sharing one database: docs/scale-out.md) with the same store body. What differs
//! between the two sits here and in `pg`; the table files are written once. Where the
//! databases spell a statement differently, the file says both ([`Conn::dialect`]),
//! which is rare: PostgreSQL's schema also takes a few of SQLite's idioms (see the top
//! of `migrations/postgres/0001_baseline.sql`).
//!
//! On SQLite each handle is a borrowed rusqlite connection or transaction: nothing is
//! copied, every statement goes through `prepare_cached` (unless [`Conn::once`] says
//! its text is built per call), and [`Store::write`] is the writer's mutex, `BEGIN`
//! and `COMMIT`.
//!
//! On PostgreSQL each handle is one of the node's connections (`pg::PgConn`); a
//! statement is prepared once per connection and text, with `?N` sent as `$N`; each
//! [`Value`] gives its parameter's type; [`Column::from_pg`] reads what PostgreSQL
//! gives as SQLite would (a sum is `numeric`, a comparison `boolean`, a yes/no column
//! `bigint`). [`Store::write`] takes the node's writer lock, then `BEGIN`s and takes
//! the cluster's writer lock ([`WRITER_LOCK`]) before anything else: one writer across
//! all nodes, so every transaction is as correct as it is on SQLite, with no
//! per-method analysis of what two nodes could interleave.
//!
//! Reads a method makes under the writer's lock stay there ([`Store::writer`]): they
//! see what the writes before them in the same pass wrote.

use std::borrow::Cow;
use std::cell::Cell;

use bytes::BytesMut;
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::Connection;
use tokio_postgres::types::{IsNull, ToSql, Type};

use super::fence::{self, OwnAppends};
use super::pg::{self, PgConn};
use super::{Backend, Result, Store, StoreError};

/// One parameter of a statement. Yes/no values are `Int` 0/1 (the columns are
/// integers on both databases). A NULL keeps the type its value would have had, when
/// it is known (a `None` of an `Option<i64>`): PostgreSQL is told it, so a statement
/// like `?1 IS NULL OR agent = ?1` parses there.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value<'a> {
    Null(Kind),
    Int(i64),
    Real(f64),
    Text(Cow<'a, str>),
}

impl rusqlite::ToSql for Value<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null(_) => ValueRef::Null,
            Value::Int(n) => ValueRef::Integer(*n),
            Value::Real(x) => ValueRef::Real(*x),
            Value::Text(s) => ValueRef::Text(s.as_bytes()),
        }))
    }
}

impl pg::Bind for Value<'_> {
    /// A NULL is sent as the type its value would have had; only a NULL written as
    /// such is left to the server.
    fn sent_as(&self) -> Type {
        match self {
            Value::Null(Kind::Int) | Value::Int(_) => Type::INT8,
            Value::Null(Kind::Real) | Value::Real(_) => Type::FLOAT8,
            Value::Null(Kind::Text) | Value::Text(_) => Type::TEXT,
            Value::Null(Kind::Unknown) => Type::UNKNOWN,
        }
    }
}

impl ToSql for Value<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> std::result::Result<IsNull, pg::BoxError> {
        match self {
            Value::Null(_) => Ok(IsNull::Yes),
            Value::Int(n) => match *ty {
                Type::INT4 => i32::try_from(*n)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(*n)?.to_sql(ty, out),
                Type::BOOL => (*n != 0).to_sql(ty, out),
                #[allow(clippy::cast_precision_loss)]
                Type::FLOAT8 => (*n as f64).to_sql(ty, out),
                _ => n.to_sql(ty, out),
            },
            Value::Real(x) => x.to_sql(ty, out),
            Value::Text(s) => s.as_ref().to_sql(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    tokio_postgres::types::to_sql_checked!();
}

/// The type of a parameter's value: what a NULL would have been.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Int,
    Real,
    Text,
    /// A NULL written as such: its type is the statement's to say.
    Unknown,
}

/// What can be a statement's parameter: borrowed as a [`Value`] for the call.
pub(super) trait Param {
    /// The type of its values.
    const KIND: Kind;
    fn value(&self) -> Value<'_>;
}

impl Param for Value<'_> {
    const KIND: Kind = Kind::Unknown;
    fn value(&self) -> Value<'_> {
        match self {
            Value::Text(s) => Value::Text(Cow::Borrowed(s)),
            Value::Null(k) => Value::Null(*k),
            Value::Int(n) => Value::Int(*n),
            Value::Real(x) => Value::Real(*x),
        }
    }
}

impl Param for i64 {
    const KIND: Kind = Kind::Int;
    fn value(&self) -> Value<'_> {
        Value::Int(*self)
    }
}

impl Param for i32 {
    const KIND: Kind = Kind::Int;
    fn value(&self) -> Value<'_> {
        Value::Int(i64::from(*self))
    }
}

impl Param for u32 {
    const KIND: Kind = Kind::Int;
    fn value(&self) -> Value<'_> {
        Value::Int(i64::from(*self))
    }
}

impl Param for f64 {
    const KIND: Kind = Kind::Real;
    fn value(&self) -> Value<'_> {
        Value::Real(*self)
    }
}

impl Param for bool {
    const KIND: Kind = Kind::Int;
    fn value(&self) -> Value<'_> {
        Value::Int(i64::from(*self))
    }
}

impl Param for str {
    const KIND: Kind = Kind::Text;
    fn value(&self) -> Value<'_> {
        Value::Text(Cow::Borrowed(self))
    }
}

impl Param for String {
    const KIND: Kind = Kind::Text;
    fn value(&self) -> Value<'_> {
        Value::Text(Cow::Borrowed(self))
    }
}

impl Param for Cow<'_, str> {
    const KIND: Kind = Kind::Text;
    fn value(&self) -> Value<'_> {
        Value::Text(Cow::Borrowed(self))
    }
}

impl<T: Param> Param for Option<T> {
    const KIND: Kind = T::KIND;
    fn value(&self) -> Value<'_> {
        self.as_ref().map_or(Value::Null(T::KIND), Param::value)
    }
}

impl<T: Param + ?Sized> Param for &T {
    const KIND: Kind = T::KIND;
    fn value(&self) -> Value<'_> {
        (**self).value()
    }
}

impl From<i64> for Value<'_> {
    fn from(n: i64) -> Self {
        Value::Int(n)
    }
}

impl From<f64> for Value<'_> {
    fn from(x: f64) -> Self {
        Value::Real(x)
    }
}

impl From<bool> for Value<'_> {
    fn from(b: bool) -> Self {
        Value::Int(i64::from(b))
    }
}

impl<'a> From<&'a str> for Value<'a> {
    fn from(s: &'a str) -> Self {
        Value::Text(Cow::Borrowed(s))
    }
}

impl From<String> for Value<'_> {
    fn from(s: String) -> Self {
        Value::Text(Cow::Owned(s))
    }
}

impl<'a, T: Into<Value<'a>>> From<Option<T>> for Value<'a> {
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null(Kind::Unknown), Into::into)
    }
}

/// A statement's parameters, `?1` first: `params![id, now, reason]` borrows each (as
/// [`Param`]) for the call.
macro_rules! params {
    () => {
        &[] as &[$crate::store::sql::Value<'_>]
    };
    ($($p:expr),+ $(,)?) => {
        &[$($crate::store::sql::Param::value(&$p)),+] as &[$crate::store::sql::Value<'_>]
    };
}
pub(super) use params;

/// A value a [`Row`] hands back: `i64`, `u32` (counts: a value out of its range is an
/// error), `f64`, `String`, `bool` (stored 0/1) and their `Option`s (NULL).
pub(super) trait Column: Sized {
    fn from_sqlite(row: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Self>;
    /// Read as SQLite would give it: see `pg`'s module docs.
    fn from_pg(row: &tokio_postgres::Row, i: usize) -> Result<Self>;
}

/// How each type reads from PostgreSQL, through the lenient readers of `pg`.
trait FromPg: Sized {
    fn from_pg_opt(row: &tokio_postgres::Row, i: usize) -> Result<Option<Self>>;
}

impl FromPg for i64 {
    fn from_pg_opt(row: &tokio_postgres::Row, i: usize) -> Result<Option<i64>> {
        Ok(pg::column::<pg::Int>(row, i)?.map(|n| n.0))
    }
}

impl FromPg for u32 {
    fn from_pg_opt(row: &tokio_postgres::Row, i: usize) -> Result<Option<u32>> {
        i64::from_pg_opt(row, i)?
            .map(|n| {
                u32::try_from(n)
                    .map_err(|_| StoreError::Corrupt(format!("column {i} holds {n}, not a count")))
            })
            .transpose()
    }
}

impl FromPg for f64 {
    fn from_pg_opt(row: &tokio_postgres::Row, i: usize) -> Result<Option<f64>> {
        Ok(pg::column::<pg::Real>(row, i)?.map(|x| x.0))
    }
}

impl FromPg for bool {
    fn from_pg_opt(row: &tokio_postgres::Row, i: usize) -> Result<Option<bool>> {
        Ok(pg::column::<pg::Int>(row, i)?.map(|n| n.0 != 0))
    }
}

impl FromPg for String {
    fn from_pg_opt(row: &tokio_postgres::Row, i: usize) -> Result<Option<String>> {
        pg::column::<String>(row, i)
    }
}

macro_rules! column {
    ($($t:ty),+) => {$(
        impl Column for $t {
            fn from_sqlite(row: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Self> {
                row.get(i)
            }
            fn from_pg(row: &tokio_postgres::Row, i: usize) -> Result<Self> {
                <$t as FromPg>::from_pg_opt(row, i)?.ok_or_else(|| {
                    StoreError::Corrupt(format!(
                        "column {} ({}) is NULL",
                        i,
                        row.columns().get(i).map_or("?", |c| c.name())
                    ))
                })
            }
        }
        impl Column for Option<$t> {
            fn from_sqlite(row: &rusqlite::Row<'_>, i: usize) -> rusqlite::Result<Self> {
                row.get(i)
            }
            fn from_pg(row: &tokio_postgres::Row, i: usize) -> Result<Self> {
                <$t as FromPg>::from_pg_opt(row, i)
            }
        }
    )+};
}
column!(i64, u32, f64, String, bool);

/// One row of a query's result, read a column at a time.
pub(super) struct Row<'r> {
    inner: RowOf<'r>,
}

enum RowOf<'r> {
    Sqlite(&'r rusqlite::Row<'r>),
    Pg(&'r tokio_postgres::Row),
}

impl<'r> Row<'r> {
    fn sqlite(row: &'r rusqlite::Row<'r>) -> Row<'r> {
        Row {
            inner: RowOf::Sqlite(row),
        }
    }

    /// Column `i` (from 0) as a `T`.
    pub(super) fn get<T: Column>(&self, i: usize) -> Result<T> {
        match self.inner {
            RowOf::Sqlite(r) => Ok(T::from_sqlite(r, i)?),
            RowOf::Pg(r) => T::from_pg(r, i),
        }
    }
}

/// The database a handle talks to.
#[derive(Clone, Copy)]
pub(super) enum Db<'a> {
    Sqlite(&'a Connection),
    Pg(&'a PgConn),
}

/// A connection to run statements on: a reader's, or the writer's (then [`Tx`] derefs
/// to it). Reads only; writes go through a [`Tx`].
#[derive(Clone, Copy)]
pub(super) struct Conn<'a> {
    db: Db<'a>,
    /// Prepared statements are kept for the next call with the same text.
    cached: bool,
}

/// A statement prepared for one call: from the connection's cache, or made for it.
enum Prepared<'c> {
    Cached(rusqlite::CachedStatement<'c>),
    Once(rusqlite::Statement<'c>),
}

impl<'c> std::ops::Deref for Prepared<'c> {
    type Target = rusqlite::Statement<'c>;

    fn deref(&self) -> &rusqlite::Statement<'c> {
        match self {
            Prepared::Cached(s) => s,
            Prepared::Once(s) => s,
        }
    }
}

impl std::ops::DerefMut for Prepared<'_> {
    fn deref_mut(&mut self) -> &mut Self::Target {
        match self {
            Prepared::Cached(s) => s,
            Prepared::Once(s) => s,
        }
    }
}

impl<'a> Conn<'a> {
    fn sqlite(conn: &'a Connection) -> Conn<'a> {
        Conn {
            db: Db::Sqlite(conn),
            cached: true,
        }
    }

    fn pg(conn: &'a PgConn) -> Conn<'a> {
        Conn {
            db: Db::Pg(conn),
            cached: true,
        }
    }

    /// The same connection, for statements whose text is built per call (a filter's
    /// clauses, a limit written into it): they are prepared for the call and not kept,
    /// so they cannot push the hot statements out of the cache.
    #[must_use]
    pub(super) fn once(self) -> Conn<'a> {
        Conn {
            cached: false,
            ..self
        }
    }

    /// Whether this is a PostgreSQL connection: for the few statements written
    /// differently for each database ([`Conn::dialect`]).
    pub(super) fn is_postgres(&self) -> bool {
        matches!(self.db, Db::Pg(_))
    }

    /// The PostgreSQL connection under this handle, if it is one: for `copy`, which
    /// binds each value as its column's type, beyond what [`Value`] says.
    pub(super) fn postgres(&self) -> Option<&'a PgConn> {
        match self.db {
            Db::Pg(c) => Some(c),
            Db::Sqlite(_) => None,
        }
    }

    /// `sqlite` or `postgres`, the same statement for each database, whichever this
    /// connection is: for what the two spell differently (functions, upserts of a
    /// row's own value).
    pub(super) fn dialect(&self, sqlite: &'static str, postgres: &'static str) -> &'static str {
        if self.is_postgres() {
            postgres
        } else {
            sqlite
        }
    }

    fn prepare(&self, sqlite: &'a Connection, sql: &str) -> Result<Prepared<'a>> {
        Ok(if self.cached {
            Prepared::Cached(sqlite.prepare_cached(sql)?)
        } else {
            Prepared::Once(sqlite.prepare(sql)?)
        })
    }

    /// The first row of `sql`'s result, read by `f`; an error if there is none.
    pub(super) fn query_row<T>(
        &self,
        sql: &str,
        params: &[Value<'_>],
        f: impl FnOnce(&Row<'_>) -> Result<T>,
    ) -> Result<T> {
        self.query_opt(sql, params, f)?
            .ok_or(StoreError::Sqlite(rusqlite::Error::QueryReturnedNoRows))
    }

    /// The first row of `sql`'s result, read by `f`, if there is one.
    pub(super) fn query_opt<T>(
        &self,
        sql: &str,
        params: &[Value<'_>],
        f: impl FnOnce(&Row<'_>) -> Result<T>,
    ) -> Result<Option<T>> {
        match self.db {
            Db::Sqlite(c) => {
                let mut stmt = self.prepare(c, sql)?;
                let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
                match rows.next()? {
                    Some(r) => Ok(Some(f(&Row::sqlite(r))?)),
                    None => Ok(None),
                }
            }
            Db::Pg(c) => match c.query(sql, params, self.cached)?.first() {
                Some(r) => Ok(Some(f(&Row {
                    inner: RowOf::Pg(r),
                })?)),
                None => Ok(None),
            },
        }
    }

    /// Every row of `sql`'s result, each read by `f`, in order.
    pub(super) fn query_map<T>(
        &self,
        sql: &str,
        params: &[Value<'_>],
        mut f: impl FnMut(&Row<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        match self.db {
            Db::Sqlite(c) => {
                let mut stmt = self.prepare(c, sql)?;
                let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
                let mut out = Vec::new();
                while let Some(r) = rows.next()? {
                    out.push(f(&Row::sqlite(r))?);
                }
                Ok(out)
            }
            Db::Pg(c) => c
                .query(sql, params, self.cached)?
                .iter()
                .map(|r| {
                    f(&Row {
                        inner: RowOf::Pg(r),
                    })
                })
                .collect(),
        }
    }

    /// Whether `sql` returns a row.
    pub(super) fn exists(&self, sql: &str, params: &[Value<'_>]) -> Result<bool> {
        match self.db {
            Db::Sqlite(c) => {
                let mut stmt = self.prepare(c, sql)?;
                let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
                Ok(rows.next()?.is_some())
            }
            Db::Pg(c) => Ok(!c.query(sql, params, self.cached)?.is_empty()),
        }
    }
}

/// A write transaction on the writer's connection ([`Store::write`]): reads as a
/// [`Conn`] (it derefs to one) and writes.
#[derive(Clone, Copy)]
pub(super) struct Tx<'a> {
    conn: Conn<'a>,
    /// Set by [`Tx::discard`].
    discard: &'a Cell<bool>,
    /// The first and last seq of the audit rows the transaction appended: on PostgreSQL
    /// its commit then tells the other nodes ([`CHANGES`]), and this node notes them as
    /// its own ([`Writer::own`]).
    appended: &'a Cell<Option<(i64, i64)>>,
}

impl<'a> std::ops::Deref for Tx<'a> {
    type Target = Conn<'a>;

    fn deref(&self) -> &Conn<'a> {
        &self.conn
    }
}

impl<'a> Tx<'a> {
    /// Runs `sql`; how many rows it changed.
    pub(super) fn execute(&self, sql: &str, params: &[Value<'_>]) -> Result<usize> {
        match self.conn.db {
            Db::Sqlite(c) => {
                let mut stmt = self.conn.prepare(c, sql)?;
                Ok(stmt.execute(rusqlite::params_from_iter(params))?)
            }
            Db::Pg(c) => c.execute(sql, params, self.conn.cached),
        }
    }

    /// The rowid of the row the last `INSERT` made. SQLite only (the audit trail's
    /// seq): PostgreSQL's statements say `RETURNING` instead.
    pub(super) fn last_insert_rowid(&self) -> i64 {
        match self.conn.db {
            Db::Sqlite(c) => c.last_insert_rowid(),
            Db::Pg(_) => unreachable!("PostgreSQL's inserts say RETURNING"),
        }
    }

    /// Nothing this transaction did is kept: [`Store::write`] rolls it back though the
    /// closure returns `Ok` (what dropping an uncommitted rusqlite transaction did).
    pub(super) fn discard(&self) {
        self.discard.set(true);
    }

    /// This transaction appended audit row `seq` (see `appended`).
    pub(super) fn note_appended(&self, seq: i64) {
        let first = self.appended.get().map_or(seq, |(first, _)| first);
        self.appended.set(Some((first, seq)));
    }
}

/// The writer's connection, held for several statements and transactions
/// ([`Store::writer`]): reads as a [`Conn`] (it derefs to one) in line with the
/// writes, and [`Writer::write`]s transactions.
pub(super) struct Writer<'a> {
    conn: Conn<'a>,
    /// Where a PostgreSQL node notes the audit rows its commits appended, so that what
    /// it learns of other nodes' changes leaves out its own.
    own: Option<&'a OwnAppends>,
}

/// The channel on which a PostgreSQL node's commit tells the others that the trail grew
/// (`NOTIFY`, no payload: they read the trail from where they were).
pub(super) const CHANGES: &str = "gatebot_changes";

/// A commit that tells the other nodes, in one round trip (see [`CHANGES`]).
const COMMIT_CHANGES: &str = "NOTIFY gatebot_changes; COMMIT";

/// The lock every node's write transaction takes first on PostgreSQL
/// (`pg_advisory_xact_lock`, let go at its commit or rollback): one writer across the
/// cluster, as SQLite has one per file, so what each transaction reads before it writes
/// is still true when it commits, on any node. The number is "gatebot\0".
const WRITER_LOCK: i64 = 0x6761_7465_626f_7400;

/// The database's clock, ms since the epoch, in a statement (the `db_clock` view): what
/// nodes whose own clocks differ agree on.
macro_rules! now {
    () => {
        "(SELECT now_ms FROM db_clock)"
    };
}
pub(super) use now;

/// Refuses the transaction `tx` if this thread writes for work under a lease that no
/// longer holds it ([`fence::current`]; `nodes`). Called first in every write
/// transaction, under the writer lock.
fn check_fence(tx: &Tx<'_>) -> Result<()> {
    let Some(fence) = fence::current() else {
        return Ok(());
    };
    let holds = tx.exists(
        concat!(
            "SELECT 1 FROM leases WHERE name = ?1 AND holder = ?2 AND fence = ?3 \
             AND expires_at > ",
            now!()
        ),
        params![fence.lease, fence.holder, fence.fence],
    )?;
    if holds {
        Ok(())
    } else {
        Err(StoreError::Fenced(fence.lease.to_string()))
    }
}

impl<'a> std::ops::Deref for Writer<'a> {
    type Target = Conn<'a>;

    fn deref(&self) -> &Conn<'a> {
        &self.conn
    }
}

impl Writer<'_> {
    /// Runs `f` in one transaction, committed when it returns `Ok` (unless it
    /// [`Tx::discard`]ed it) and rolled back when it returns `Err`.
    pub(super) fn write<T>(&self, f: impl FnOnce(&Tx<'_>) -> Result<T>) -> Result<T> {
        let discard = Cell::new(false);
        match self.conn.db {
            Db::Sqlite(c) => {
                let tx = c.unchecked_transaction()?;
                let appended = Cell::new(None);
                let write = Tx {
                    conn: Conn::sqlite(&tx),
                    discard: &discard,
                    appended: &appended,
                };
                check_fence(&write)?;
                let out = f(&write)?;
                if !discard.get() {
                    tx.commit()?;
                }
                Ok(out)
            }
            Db::Pg(c) => {
                c.batch(&format!(
                    "BEGIN; SELECT pg_advisory_xact_lock({WRITER_LOCK})"
                ))?;
                let appended = Cell::new(None);
                let write = Tx {
                    conn: self.conn,
                    discard: &discard,
                    appended: &appended,
                };
                let out = check_fence(&write).and_then(|()| f(&write));
                match out {
                    Ok(out) => {
                        let appended = appended.get().filter(|_| !discard.get());
                        c.batch(if discard.get() {
                            "ROLLBACK"
                        } else if appended.is_some() {
                            // Delivered to the listening nodes only once this commits.
                            COMMIT_CHANGES
                        } else {
                            "COMMIT"
                        })?;
                        if let (Some(own), Some(seqs)) = (self.own, appended) {
                            own.note(seqs);
                        }
                        Ok(out)
                    }
                    Err(e) => {
                        // A broken connection has nothing to roll back; its error is e's.
                        let _ = c.batch("ROLLBACK");
                        Err(e)
                    }
                }
            }
        }
    }
}

impl Store {
    /// Runs `f` in one transaction on the writer (see [`Writer::write`]).
    pub(super) fn write<T>(&self, f: impl FnOnce(&Tx<'_>) -> Result<T>) -> Result<T> {
        self.writer(|w| w.write(f))
    }

    /// Runs `f`'s statements beside the writer rather than in line with it, each
    /// committed alone (no transaction, no writer lock, no fence): for the nodes'
    /// heartbeats and leases (`nodes`), which must not wait behind the node's queue of
    /// writes, since a lease renewed late is a lease lost. On SQLite, where one node runs
    /// and has no lease to lose, a transaction on the writer.
    pub(super) fn beside_writer<T>(&self, f: impl FnOnce(&Tx<'_>) -> Result<T>) -> Result<T> {
        match &self.backend {
            Backend::Sqlite { .. } => fence::outside(|| self.write(f)),
            Backend::Postgres(pg) => {
                let conn = pg.reader()?;
                let out = f(&Tx {
                    conn: Conn::pg(&conn),
                    discard: &Cell::new(false),
                    appended: &Cell::new(None),
                });
                pg.put_back(conn);
                out
            }
        }
    }

    /// [`Store::write`], then hands the writer straight to a caller waiting for it, if
    /// there is one ([`Store::expire_due`]: see `give_way`).
    pub(super) fn write_giving_way<T>(&self, f: impl FnOnce(&Tx<'_>) -> Result<T>) -> Result<T> {
        match &self.backend {
            Backend::Sqlite { writer, .. } => {
                let guard = self.hold(writer);
                let out = Writer::on(Conn::sqlite(&guard), None).write(f)?;
                self.give_way(guard);
                Ok(out)
            }
            Backend::Postgres(pg) => {
                let mut guard = self.hold(&pg.writer);
                let out =
                    Writer::on(Conn::pg(pg.connected(&mut guard)?), Some(&pg.own)).write(f)?;
                self.give_way(guard);
                Ok(out)
            }
        }
    }

    /// Runs `f` with the writer's connection held throughout: for a pass that writes
    /// several transactions in a row, and for reads made in line with the writes.
    pub(super) fn writer<T>(&self, f: impl FnOnce(&Writer<'_>) -> Result<T>) -> Result<T> {
        match &self.backend {
            Backend::Sqlite { writer, .. } => {
                let guard = self.hold(writer);
                f(&Writer::on(Conn::sqlite(&guard), None))
            }
            Backend::Postgres(pg) => {
                let mut guard = self.hold(&pg.writer);
                f(&Writer::on(
                    Conn::pg(pg.connected(&mut guard)?),
                    Some(&pg.own),
                ))
            }
        }
    }

    /// Runs `f` on a connection that only reads (see [`Store::reader`]; on PostgreSQL
    /// one of the node's idle connections, or a new one).
    pub(super) fn read<T>(&self, f: impl FnOnce(&Conn<'_>) -> Result<T>) -> Result<T> {
        match &self.backend {
            Backend::Sqlite { .. } => {
                let reader = self.reader();
                f(&Conn::sqlite(&reader))
            }
            Backend::Postgres(pg) => {
                let conn = pg.reader()?;
                let out = f(&Conn::pg(&conn));
                pg.put_back(conn);
                out
            }
        }
    }

    /// [`Store::read`] with every statement of `f` reading one snapshot: what one
    /// commit left, whatever is committed meanwhile (a read transaction, ended without
    /// keeping anything).
    pub(super) fn read_snapshot<T>(&self, f: impl FnOnce(&Conn<'_>) -> Result<T>) -> Result<T> {
        match &self.backend {
            Backend::Sqlite { .. } => {
                let reader = self.reader();
                let tx = reader.unchecked_transaction()?;
                let out = f(&Conn::sqlite(&tx))?;
                tx.rollback()?;
                Ok(out)
            }
            Backend::Postgres(pg) => {
                let conn = pg.reader()?;
                conn.batch("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")?;
                let out = f(&Conn::pg(&conn));
                let ended = conn.batch("ROLLBACK");
                pg.put_back(conn);
                let out = out?;
                ended?;
                Ok(out)
            }
        }
    }
}

/// Runs `f` on a connection of its own to the database file at `path`, opened only to
/// read (as the store's readers are): a look at a database no [`Store`] is open on
/// here, which may be the daemon's (`gatebot check-config`).
pub(super) fn read_file<T>(
    path: &std::path::Path,
    f: impl FnOnce(&Conn<'_>) -> Result<T>,
) -> Result<T> {
    use rusqlite::OpenFlags;
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    f(&Conn::sqlite(&conn))
}

impl<'a> Writer<'a> {
    fn on(conn: Conn<'a>, own: Option<&'a OwnAppends>) -> Writer<'a> {
        Writer { conn, own }
    }
}

#[cfg(test)]
impl Store {
    /// Runs `sql` (statements separated by `;`) on the writer's connection outside the
    /// store's transactions, as someone with the database's password could: for tests
    /// of tampering and of what the schema refuses.
    pub(super) fn raw(&self, sql: &str) -> Result<()> {
        self.writer(|w| match w.conn.db {
            Db::Sqlite(c) => Ok(c.execute_batch(sql)?),
            Db::Pg(c) => c.batch(sql),
        })
    }

    /// Whether the store is on PostgreSQL (tests whose tampering is spelled per database).
    pub(super) fn is_postgres(&self) -> bool {
        matches!(self.backend, Backend::Postgres(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_bind_in_order_and_rows_read_back_typed() {
        let s = Store::open_in_memory().unwrap();
        let got = s
            .read(|c| {
                c.query_row(
                    "SELECT ?1, ?2, ?3, ?4, ?5, ?6",
                    params![7_i64, 2.5_f64, "x", true, None::<String>, Some("y")],
                    |r| {
                        Ok((
                            r.get::<i64>(0)?,
                            r.get::<f64>(1)?,
                            r.get::<String>(2)?,
                            r.get::<bool>(3)?,
                            r.get::<Option<String>>(4)?,
                            r.get::<Option<String>>(5)?,
                        ))
                    },
                )
            })
            .unwrap();
        assert_eq!(got, (7, 2.5, "x".into(), true, None, Some("y".into())));
    }

    #[test]
    fn counts_bind_and_read_back_as_u32_and_out_of_range_is_an_error() {
        let s = Store::open_in_memory().unwrap();
        s.read(|c| {
            let n = c.query_row("SELECT ?1 + 1", params![u32::MAX - 1], |r| r.get::<u32>(0))?;
            assert_eq!(n, u32::MAX);
            assert_eq!(
                c.query_row("SELECT NULL", params![], |r| r.get::<Option<u32>>(0))?,
                None
            );
            assert!(c
                .query_row("SELECT -1", params![], |r| r.get::<u32>(0))
                .is_err());
            assert!(c
                .query_row("SELECT ?1 + 1", params![u32::MAX], |r| r.get::<u32>(0))
                .is_err());
            Ok(())
        })
        .unwrap();
    }

    #[test]
    fn a_write_commits_on_ok_and_rolls_back_on_err_or_discard() {
        let s = Store::open_in_memory().unwrap();
        s.write(|tx| tx.execute("CREATE TABLE t (x INTEGER)", params![]))
            .unwrap();
        let count = |s: &Store| {
            s.read(|c| c.query_row("SELECT COUNT(*) FROM t", params![], |r| r.get::<i64>(0)))
                .unwrap()
        };
        let failed: Result<()> = s.write(|tx| {
            tx.execute("INSERT INTO t VALUES (?1)", params![1_i64])?;
            Err(StoreError::Corrupt("stop".into()))
        });
        assert!(failed.is_err());
        assert_eq!(count(&s), 0);
        s.write(|tx| {
            tx.execute("INSERT INTO t VALUES (?1)", params![2_i64])?;
            tx.discard();
            Ok(())
        })
        .unwrap();
        assert_eq!(count(&s), 0);
        s.write(|tx| tx.execute("INSERT INTO t VALUES (?1)", params![3_i64]))
            .unwrap();
        assert_eq!(count(&s), 1);
    }

    #[test]
    fn a_snapshot_reads_what_was_committed_when_it_began() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("g.db")).unwrap();
        let count = |c: &Conn<'_>| {
            c.query_row("SELECT COUNT(*) FROM budget_state", params![], |r| {
                r.get::<i64>(0)
            })
        };
        let insert = |key: &str| {
            s.write(|tx| {
                tx.execute(
                    "INSERT INTO budget_state (key, value) VALUES (?1, 'x')",
                    params![key],
                )
            })
            .unwrap();
        };
        insert("a");
        let (first, second) = s
            .read_snapshot(|c| {
                let first = count(c)?;
                insert("b");
                Ok((first, count(c)?))
            })
            .unwrap();
        assert_eq!((first, second), (1, 1));
        assert_eq!(s.read(|c| count(c)).unwrap(), 2);
    }

    #[test]
    fn a_file_is_read_without_a_store_and_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.db");
        let s = Store::open(&path).unwrap();
        s.write(|tx| {
            tx.execute(
                "INSERT INTO budget_state (key, value) VALUES ('k', 'v')",
                params![],
            )
        })
        .unwrap();
        let got = read_file(&path, |c| {
            let v = c.query_row(
                "SELECT value FROM budget_state WHERE key = 'k'",
                params![],
                |r| r.get::<String>(0),
            )?;
            // Opened only to read: a write through it fails.
            let wrote = c.query_row(
                "INSERT INTO budget_state (key, value) VALUES ('w', 'v') RETURNING key",
                params![],
                |r| r.get::<String>(0),
            );
            Ok((v, wrote.is_err()))
        })
        .unwrap();
        assert_eq!(got, ("v".to_string(), true));
        assert!(read_file(&dir.path().join("none.db"), |_| Ok(())).is_err());
    }

    #[test]
    fn missing_rows_are_none_or_an_error_and_exists_says_which() {
        let s = Store::open_in_memory().unwrap();
        s.read(|c| {
            let sql = "SELECT id FROM approvals WHERE id = ?1";
            assert_eq!(
                c.query_opt(sql, params!["no"], |r| r.get::<String>(0))?,
                None
            );
            assert!(c
                .query_row(sql, params!["no"], |r| r.get::<String>(0))
                .is_err());
            assert!(!c.exists(sql, params!["no"])?);
            assert!(c.exists("SELECT 1", params![])?);
            assert!(c
                .once()
                .query_map(sql, params!["no"], |r| r.get::<String>(0))?
                .is_empty());
            Ok(())
        })
        .unwrap();
    }
}
