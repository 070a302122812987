//! SQLite persistence: approvals, the audit trail, the chat channels' bookkeeping,
//! workflow runs, inbox tasks and agents' trust (tiers, pauses, grants, proposals).
//!
//! One connection that writes, behind a mutex; callers run store methods on a blocking
//! thread (see `Engine`). Views and scans that only read (an agent's evidence, the
//! dashboard's pages, the audit trail) take a connection of their own ([`Store::read`]):
//! in WAL mode they read while the writer commits, so no view holds up a submit. Every
//! state change is one transaction that also writes its audit
//! row. `Store` is one type whose methods live beside the tables they serve:
//! - `approvals`: requests, their transitions out of `pending`, lookup, expiry, lists;
//! - `audit`: the hash-chained, append-only audit trail and its verification;
//! - `refusals`: refused attempts, coalesced per key and minute into the trail;
//! - `chat`: which chat message shows which subject (cards, digests, questions), and
//!   where a subject's cards go (its home and parent);
//! - `batches`: the batches asked in chats (the requests a confirmation listed, and
//!   whether it was confirmed), and pending requests counted per agent;
//! - `tasks`: the inbox's tasks and their questions;
//! - `drafts`: draft-only agents' blocked calls kept for owners, and what became of them;
//! - `runs`: workflow runs, their events and problems, and their check-ins;
//! - `sessions`: the web dashboard's sign-in links and sessions;
//! - `history`: requests searched and the trail filtered, a keyset page at a time (the
//!   dashboard's history and audit pages);
//! - `budgets`: what requests and tasks cost, summed per day and month, the check a
//!   request's cost passes when it is let through, and the warnings given;
//! - `trust`: tier overrides, pauses, grants and what prompts offer, proposals;
//! - `evidence`: every agent's requests counted, read from running summaries the
//!   triggers keep, built once for an upgraded database, and recounted to prove them;
//! - two leaves the others share, which use none of them: `subjects` (the `subjects`
//!   rows each kind's file writes as its subjects are created and change) and
//!   `approval_row` (reading a request's row back).
//!
//! `sql` is what the table files say SQL through: [`Store::write`] (one transaction on
//! the writer), [`Store::read`] (a reader), parameters and typed rows, in words that
//! do not name the database, so a PostgreSQL backend can slot in under the same files
//! (issue 26). `approvals`, `approval_row`, `subjects`, `audit` and `votes` use it; the
//! other files still use rusqlite directly (`lock`, `reader`) until they move.
//!
//! Durability: WAL with `synchronous = FULL`. A request is acknowledged to its agent
//! only after its transaction commits, and FULL makes that commit survive a power
//! loss, not just a process crash; the extra fsync per commit is the price of
//! "a restart loses nothing".

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use parking_lot::{Mutex as WriterLock, MutexGuard};

use rusqlite::Connection;
use rusqlite_migration::{Migrations, M};

use sql::params;

/// The SQL of one file of `migrations/sqlite/` (the schema, a file per change), built in.
macro_rules! sqlite_migration {
    ($file:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/migrations/sqlite/",
            $file
        ))
    };
}

mod activity;
mod approval_row;
mod approvals;
mod audit;
mod batches;
mod budgets;
mod chat;
mod contacts;
mod copy;
mod drafts;
mod evidence;
mod factors;
mod fence;
mod health;
mod history;
mod nodes;
mod pg;
mod pg_tls;
mod refusals;
mod runs;
mod sessions;
mod sql;
mod subjects;
mod tasks;
mod trust;
mod votes;

pub use activity::{Day, RunEvent, TaskFilter, TaskRequests, Timeline};
pub use approvals::{Inserted, Lookup, NewApproval, Transition};
pub use audit::{AuditCheck, AuditHead, AuditRow};
pub use batches::{Batch, BatchEnd, BatchState, Ended, NewBatch};
pub use chat::SubjectLookup;
pub use contacts::Contact;
pub use copy::{copy_to_postgres, Copied};
pub use drafts::DraftState;
pub use evidence::HOUR_MS;
pub use factors::{CodeCheck, FactorRow, LOCKED_FOR_MS};
pub use fence::Fence;
pub use health::{FaultKind, StorageFault};
pub use history::{AuditFilter, Cursor, HistoryFilter, Page};
pub use nodes::NodeRow;
pub use refusals::{Closed, RefusalRow, Refused};
pub use runs::{EventOutcome, NewEvent, NewRun, Recorded, RunFilter, RunInserted, RunLookup};
pub use sessions::{LinkUse, NewLink, NewSession, Session, SessionEnd};
pub use tasks::{Changed, NewTask, Reclassified, TaskLookup, TaskStep, Timing};
pub use trust::{
    peek_trust, NewOffer, NewProposal, ProposalOutcome, Revoked, SubmitFacts, TierChange,
};
pub use votes::Voted;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("database error: {}", pg::words(.0))]
    Postgres(#[from] tokio_postgres::Error),
    #[error("database migration failed: {0}")]
    Migration(#[from] rusqlite_migration::Error),
    #[error("corrupt row: {0}")]
    Corrupt(String),
    #[error("{0}")]
    File(String),
    /// The database cannot keep what is written (see `health`).
    #[error("{}", .0.message)]
    Storage(StorageFault),
    /// A write made for work under a lease this node no longer holds (see `nodes`).
    #[error("this node no longer holds the {0} lease: another node does that work now")]
    Fenced(String),
}

impl StoreError {
    /// The storage fault this error is, if it is one: a call refused because the
    /// database was deleted or replaced, SQLite's "disk full", or a PostgreSQL server
    /// that cannot be reached.
    #[must_use]
    pub fn fault(&self) -> Option<StorageFault> {
        match self {
            StoreError::Storage(f) => Some(f.clone()),
            StoreError::Sqlite(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DiskFull =>
            {
                Some(StorageFault {
                    kind: FaultKind::Full,
                    message: "the database cannot grow: the disk is full or store.max_size \
                              is reached. Free disk space or raise store.max_size"
                        .into(),
                })
            }
            StoreError::Postgres(e) if pg::unreachable(e) => Some(StorageFault {
                kind: FaultKind::Unavailable,
                message: format!(
                    "the PostgreSQL database cannot be reached ({e}): check that the server \
                     is up and this node can reach it; gatebot tries again at every call"
                ),
            }),
            _ => None,
        }
    }
}

impl StoreError {
    /// True when an agent's write was refused because agents have filled their share
    /// of the database (`store.reserve`); it wrote nothing.
    #[must_use]
    pub fn held_back(&self) -> bool {
        matches!(self, StoreError::Storage(f) if f.kind == FaultKind::AgentsFull)
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Most requests one [`Store::expire_due`] pass expires.
pub const EXPIRE_BATCH: i64 = 500;
/// Requests a [`Store::expire_due`] pass expires before it gives way to a caller
/// waiting for the writer (a submit): a mass expiry then holds up a submit by about
/// this many rows and one commit, not by a whole batch.
pub const EXPIRE_BEFORE_YIELDING: usize = 16;

pub(crate) fn migrations() -> Migrations<'static> {
    Migrations::new(vec![
        M::up(sqlite_migration!("0001_initial.sql")),
        M::up(sqlite_migration!("0002_prompts.sql")),
        M::up(sqlite_migration!("0003_audit_chain.sql")),
        M::up(sqlite_migration!("0004_digests.sql")),
        M::up(sqlite_migration!("0005_conversations.sql")),
        M::up(sqlite_migration!("0006_audit_head.sql")),
        M::up(sqlite_migration!("0007_workflows.sql")),
        M::up(sqlite_migration!("0008_trust.sql")),
        M::up(sqlite_migration!("0009_inbox.sql")),
        M::up(sqlite_migration!("0010_grant_risk.sql")),
        M::up(sqlite_migration!("0011_evidence.sql")),
        M::up(sqlite_migration!("0012_task_suggestion.sql")),
        M::up(sqlite_migration!("0013_content_hash.sql")),
        M::up(sqlite_migration!("0014_dashboard.sql")),
        M::up(sqlite_migration!("0015_drafts.sql")),
        M::up(sqlite_migration!("0016_history_search.sql")),
        M::up(sqlite_migration!("0017_edits.sql")),
        M::up(sqlite_migration!("0018_call_grants.sql")),
        M::up(sqlite_migration!("0019_session_identity.sql")),
        M::up(sqlite_migration!("0020_votes.sql")),
        M::up(sqlite_migration!("0021_budgets.sql")),
        M::up(sqlite_migration!("0022_escalation.sql")),
        M::up(sqlite_migration!("0023_reminders.sql")),
        M::up(sqlite_migration!("0024_factors.sql")),
        M::up(sqlite_migration!("0025_chat_batches.sql")),
        M::up(sqlite_migration!("0026_contacts.sql")),
        M::up(sqlite_migration!("0027_card_outcomes.sql")),
        M::up(sqlite_migration!("0028_evidence_summaries.sql")),
        M::up(sqlite_migration!("0029_nodes.sql")),
    ])
}

/// A new id (a ULID) for anything the store creates. Ids made by one process are
/// strictly increasing, also within one millisecond (ulid's monotonic generator: the
/// random part of the last id plus one) and when the clock steps back, so listings
/// ordered by id show things in the order they were made.
pub(crate) fn new_id() -> String {
    static GENERATOR: Mutex<ulid::Generator> = Mutex::new(ulid::Generator::new());
    let mut g = GENERATOR.lock().unwrap_or_else(|e| e.into_inner());
    match g.generate() {
        Ok(id) => id,
        // The random part of this millisecond's ids ran out (after 2^80 of them at
        // worst): a fresh id of the next millisecond is still larger than the last.
        Err(_) => g
            .generate_from_datetime(
                std::time::SystemTime::now() + std::time::Duration::from_millis(1),
            )
            .unwrap_or_else(|_| ulid::Ulid::new()),
    }
    .to_string()
}

/// The SHA-256 (hex) of `v`'s canonical JSON: object keys sorted, no whitespace. What
/// an idempotency key is stored with, so a repeat is recognised by its whole content
/// (two bodies that differ only in key order or spacing are the same).
#[must_use]
pub fn content_hash(v: &serde_json::Value) -> String {
    use serde_json::Value;
    use sha2::{Digest, Sha256};
    fn write(v: &Value, out: &mut Vec<u8>) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                out.push(b'{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    let _ = serde_json::to_writer(&mut *out, k);
                    out.push(b':');
                    write(&m[k], out);
                }
                out.push(b'}');
            }
            Value::Array(a) => {
                out.push(b'[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write(x, out);
                }
                out.push(b']');
            }
            scalar => {
                let _ = serde_json::to_writer(&mut *out, scalar);
            }
        }
    }
    let mut canonical = Vec::new();
    write(v, &mut canonical);
    Sha256::digest(&canonical)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub(crate) use crate::files::sibling;

pub struct Store {
    /// The database and its connections.
    backend: Backend,
    /// Callers waiting for the writer's connection now: long passes
    /// ([`Store::expire_due`]) commit early and let them in.
    waiting: AtomicUsize,
    /// The database's files, for [`Store::storage_fault`]; `None` in memory and on
    /// PostgreSQL.
    watch: Option<health::Watch>,
    /// The budgets in force ([`Store::set_budgets`]), checked in the transactions that
    /// let requests through.
    budgets: budgets::InForce,
}

/// Where the store keeps its tables: a SQLite file (or memory), or a PostgreSQL
/// database several nodes share. Either way one connection writes, behind a lock
/// (parking_lot's mutex, not std's: a long pass can hand it straight to a caller
/// waiting for it, [`Store::give_way`], instead of taking it back before the woken
/// caller runs), and views read on connections of their own.
enum Backend {
    Sqlite {
        writer: WriterLock<Connection>,
        /// Connections that only read; `None` in memory (one database per connection
        /// there, so reads take the writer's).
        readers: Option<Readers>,
    },
    Postgres(Box<Postgres>),
}

/// The store on PostgreSQL: this node's writer (its transactions also take the
/// cluster's writer lock, see `sql`) and idle readers; a connection found broken is
/// replaced at the next call.
struct Postgres {
    db: pg::Postgres,
    /// `None` until first used, and after it broke.
    writer: WriterLock<Option<pg::PgConn>>,
    idle: Mutex<Vec<pg::PgConn>>,
    /// Why the last call failed, while the server cannot be reached (for
    /// `/v1/health`); cleared by the next call that works.
    failed: Mutex<Option<StorageFault>>,
    /// The audit rows this node's commits appended, not yet read back by its follower.
    own: fence::OwnAppends,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (creating if needed) the database and brings its schema up to date.
    ///
    /// The database file is created 0600 whatever the umask, and SQLite gives its WAL
    /// and SHM the same mode; files an older version left readable by group or others
    /// are made private (with a WARN), so agents in gatebot's group cannot read them.
    pub fn open(path: &Path) -> Result<Store> {
        let io = |what: &str, e: std::io::Error| {
            StoreError::File(format!("{what} {}: {e}", path.display()))
        };
        crate::files::private_file(path).map_err(|e| io("cannot create", e))?;
        let mut conn = Connection::open(path)?;
        Self::prepare(&mut conn)?;
        for file in [
            path.to_path_buf(),
            sibling(path, "-wal"),
            sibling(path, "-shm"),
        ] {
            match crate::files::tighten(&file) {
                Ok(Some(mode)) => tracing::warn!(
                    file = %file.display(),
                    "the database was readable by group or others (mode {mode:o}); made it 0600"
                ),
                Ok(None) => {}
                Err(e) => return Err(io("cannot make private", e)),
            }
        }
        let watch = health::Watch::new(path).map_err(|e| io("cannot look at", e))?;
        Ok(Store::on(
            Backend::Sqlite {
                writer: WriterLock::new(conn),
                readers: Some(Readers {
                    path: path.to_path_buf(),
                    idle: Mutex::default(),
                }),
            },
            Some(watch),
        ))
    }

    /// Opens the PostgreSQL database at `url` (`postgres://USER@HOST[:PORT]/DB`,
    /// signing in with `password` if given) and brings its schema up to date; several
    /// nodes may do so at once (one migrates, the others wait for it).
    pub fn open_postgres(url: &str, password: Option<&str>) -> Result<Store> {
        let db = pg::Postgres::new(url, password)?;
        let conn = db.connect()?;
        pg::migrate(&conn, db.shown())?;
        Ok(Store::on(
            Backend::Postgres(Box::new(Postgres {
                db,
                writer: WriterLock::new(Some(conn)),
                idle: Mutex::default(),
                failed: Mutex::default(),
                own: fence::OwnAppends::default(),
            })),
            None,
        ))
    }

    fn on(backend: Backend, watch: Option<health::Watch>) -> Store {
        Store {
            backend,
            waiting: AtomicUsize::new(0),
            watch,
            budgets: budgets::InForce::default(),
        }
    }

    /// An in-memory store, for tests and benchmarks.
    ///
    /// The store's own unit tests run on PostgreSQL instead when
    /// `GATEBOT_STORE_TESTS=postgres` (`.ci/run` runs them both ways): each gets a fresh
    /// database of a throwaway cluster. The same tests, the same assertions.
    pub fn open_in_memory() -> Result<Store> {
        #[cfg(test)]
        if let Some(url) = tests::postgres_database() {
            return Store::open_postgres(&url, None);
        }
        let mut conn = Connection::open_in_memory()?;
        Self::prepare(&mut conn)?;
        Ok(Store::on(
            Backend::Sqlite {
                writer: WriterLock::new(conn),
                readers: None,
            },
            None,
        ))
    }

    fn prepare(conn: &mut Connection) -> Result<()> {
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        migrations().to_latest(conn)?;
        Ok(())
    }

    /// The SQLite writer's connection (files not yet moved to the SQL layer; they run
    /// on SQLite only).
    fn lock(&self) -> MutexGuard<'_, Connection> {
        match &self.backend {
            Backend::Sqlite { writer, .. } => self.hold(writer),
            Backend::Postgres(_) => {
                unreachable!("only files moved to the SQL layer run on PostgreSQL")
            }
        }
    }

    /// Takes the writer's lock, counted in `waiting` while it waits.
    fn hold<'a, T>(&self, writer: &'a WriterLock<T>) -> MutexGuard<'a, T> {
        // (A panic while holding it leaves the database consistent: transactions roll
        // back, and parking_lot's mutex is not poisoned.)
        if let Some(guard) = writer.try_lock() {
            return guard;
        }
        self.waiting.fetch_add(1, Ordering::Relaxed);
        let guard = writer.lock();
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        guard
    }

    /// Lets go of the writer's connection after a long pass: straight to a caller
    /// waiting for it, if there is one, so the pass's next call (the expiry task makes
    /// several in a row) queues behind it rather than taking the connection back first.
    fn give_way<T>(&self, guard: MutexGuard<'_, T>) {
        if self.wanted() {
            MutexGuard::unlock_fair(guard);
        }
    }

    /// Whether another caller is waiting for the writer's connection.
    fn wanted(&self) -> bool {
        self.waiting.load(Ordering::Relaxed) > 0
    }

    /// A connection for reading only, apart from the writer's: what it reads is what
    /// was committed when its statement began. Falls back to the writer's connection
    /// in memory, or when a reader cannot be opened (logged). Files moved to the SQL
    /// layer read through [`Store::read`] instead.
    fn reader(&self) -> Reader<'_> {
        let Backend::Sqlite { readers, .. } = &self.backend else {
            unreachable!("only files moved to the SQL layer run on PostgreSQL")
        };
        let Some(readers) = readers else {
            return Reader::Writer(self.lock());
        };
        let idle = readers.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let conn = match idle {
            Some(c) => Ok(c),
            None => readers.open(),
        };
        match conn {
            Ok(conn) => Reader::Own {
                conn: Some(conn),
                home: readers,
            },
            Err(e) => {
                tracing::warn!(error = %e, "cannot open a reading connection; reading on the writer's");
                Reader::Writer(self.lock())
            }
        }
    }
}

/// The reading connections of a database file, kept for the next read.
struct Readers {
    path: std::path::PathBuf,
    idle: Mutex<Vec<Connection>>,
}

/// How many idle reading connections are kept (a few views at once are the most a
/// dashboard and a CLI make).
const IDLE_READERS: usize = 4;

impl Readers {
    fn open(&self) -> rusqlite::Result<Connection> {
        use rusqlite::OpenFlags;
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        Ok(conn)
    }
}

impl Postgres {
    /// The writer's connection, made anew if there is none or it broke.
    fn connected<'a>(&self, writer: &'a mut Option<pg::PgConn>) -> Result<&'a pg::PgConn> {
        if writer.as_ref().is_none_or(pg::PgConn::is_closed) {
            *writer = None;
            *writer = Some(self.db.connect()?);
        }
        Ok(writer.as_ref().expect("connected just now"))
    }

    /// An idle reading connection, or a new one.
    fn reader(&self) -> Result<pg::PgConn> {
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match idle {
            Some(c) if !c.is_closed() => Ok(c),
            _ => self.db.connect(),
        }
    }

    /// The fault the last call failed on, if the server could not be reached then.
    fn fault(&self) -> Option<StorageFault> {
        self.failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Notes how a call ended: failed for want of the server (logged once, until a
    /// call works again), or not.
    fn note(&self, failed: Option<&StoreError>) {
        let fault = failed.and_then(StoreError::fault);
        let mut last = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        if failed.is_some() && fault.is_none() {
            // A statement refused, not the server gone: says nothing about reaching it.
            return;
        }
        if *last == fault {
            return;
        }
        match &fault {
            Some(f) => {
                tracing::error!(code = f.code(), database = %self.db.shown(), "{}", f.message)
            }
            None => {
                tracing::info!(database = %self.db.shown(), "the PostgreSQL database can be reached again")
            }
        }
        *last = fault;
    }

    /// Keeps a reading connection for the next read, unless it broke or enough are
    /// kept.
    fn put_back(&self, conn: pg::PgConn) {
        if conn.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        if idle.len() < IDLE_READERS {
            idle.push(conn);
        }
    }
}

pub use pg::Listening;

impl Store {
    /// Whether other nodes may share this database (PostgreSQL): what they change
    /// reaches this node through [`Store::listen_for_changes`] and the trail.
    #[must_use]
    pub fn is_shared(&self) -> bool {
        matches!(self.backend, Backend::Postgres(_))
    }

    /// A connection told of every commit that grows the audit trail, on any node
    /// (`NOTIFY` at commit, see `sql`); `None` on SQLite, which one node has to itself.
    pub fn listen_for_changes(&self) -> Result<Option<Listening>> {
        match &self.backend {
            Backend::Postgres(pg) => pg.db.listen(sql::CHANGES).map(Some),
            Backend::Sqlite { .. } => Ok(None),
        }
    }

    /// The audit rows after `seq`, oldest first, at most `limit`: each one's seq and
    /// the subject it is about (what changed, on whichever node).
    pub fn trail_after(&self, seq: i64, limit: i64) -> Result<Vec<(i64, Option<String>)>> {
        self.read(|c| {
            c.query_map(
                "SELECT seq, approval_id FROM audit WHERE seq > ?1 ORDER BY seq LIMIT ?2",
                params![seq, limit],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })
    }
}

/// A connection to read on: one of the readers (given back when dropped), or the
/// writer's.
enum Reader<'a> {
    Own {
        conn: Option<Connection>,
        home: &'a Readers,
    },
    Writer(MutexGuard<'a, Connection>),
}

impl std::ops::Deref for Reader<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        match self {
            Reader::Own { conn, .. } => conn.as_ref().expect("held until dropped"),
            Reader::Writer(guard) => guard,
        }
    }
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        if let Reader::Own { conn, home } = self {
            let mut idle = home.idle.lock().unwrap_or_else(|e| e.into_inner());
            if idle.len() < IDLE_READERS {
                idle.extend(conn.take());
            }
        }
    }
}

#[cfg(test)]
mod properties;

/// The tests' throwaway PostgreSQL cluster (shared with the integration tests).
#[cfg(test)]
#[path = "../../tests/it/pg_cluster.rs"]
#[allow(dead_code)] // what only the integration tests use
mod pg_cluster;
/// Free loopback ports outside the ephemeral range (the cluster's).
#[cfg(test)]
#[path = "../../tests/it/ports.rs"]
mod ports;

#[cfg(test)]
mod tests {
    //! Fixtures shared by the store's unit tests, and the tests of `Store` itself.

    use super::*;

    /// `GATEBOT_STORE_TESTS=postgres`: a fresh database of the throwaway cluster, for a
    /// test's [`Store::open_in_memory`]; `None` (SQLite in memory) otherwise.
    pub(super) fn postgres_database() -> Option<String> {
        match std::env::var("GATEBOT_STORE_TESTS").as_deref() {
            Ok("postgres") => {}
            Ok("sqlite" | "") | Err(_) => return None,
            Ok(other) => panic!("GATEBOT_STORE_TESTS is `sqlite` or `postgres`, not {other:?}"),
        }
        let db = super::pg_cluster::database()
            .expect("GATEBOT_STORE_TESTS=postgres, but PostgreSQL is not installed");
        Some(db.url())
    }
    use crate::approval::{Approval, Decision, ListFilter, Status, Verb, Via};

    pub(super) fn new(
        agent: &str,
        tool: &str,
        key: Option<&str>,
        expires_at: Option<i64>,
    ) -> NewApproval {
        let mut n = NewApproval::sample(agent, tool, expires_at);
        n.asked.idempotency_key = key.map(Into::into);
        n
    }

    pub(super) fn inserted(s: &Store, n: &NewApproval) -> Approval {
        match s.insert(n).unwrap() {
            Inserted::New(a) => a,
            other => panic!("expected new, got {other:?}"),
        }
    }

    /// A view reads on a connection of its own while the writer is busy (a long
    /// transaction, a batch of submits), and sees what was committed.
    #[test]
    fn reads_never_wait_for_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("gatebot.db")).unwrap();
        inserted(&s, &new("a", "send_email", None, None));
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            // Dropped as the closure unwinds, so a failure cannot hang the scope.
            let writer = s.lock();
            scope.spawn(|| {
                let counts = s.evidence("a", 0).map(|c| c.requests);
                let page = s.list(None, 10).map(|l| l.len());
                let _ = tx.send((counts.unwrap(), page.unwrap()));
            });
            let read = rx.recv_timeout(std::time::Duration::from_secs(30));
            assert_eq!(read, Ok((1, 1)), "the view waited for the writer");
            drop(writer);
        });
        // Readers are kept for the next view, a few at most.
        let held: Vec<_> = (0..IDLE_READERS + 2).map(|_| s.reader()).collect();
        assert!(held.iter().all(|r| matches!(r, Reader::Own { .. })));
        drop(held);
        let Backend::Sqlite {
            readers: Some(readers),
            ..
        } = &s.backend
        else {
            panic!("a file's store has readers")
        };
        assert_eq!(readers.idle.lock().unwrap().len(), IDLE_READERS);
        // In memory every connection is its own database: reads take the writer's.
        let memory = Store::open_in_memory().unwrap();
        if !memory.is_postgres() {
            assert!(matches!(memory.reader(), Reader::Writer(_)));
        }
    }

    pub(super) fn decision(verb: Verb, actor: &str) -> Decision {
        Decision {
            verb,
            actor: actor.into(),
            via: Via::Cli,
            reason: None,
            factor: false,
        }
    }

    #[test]
    fn ids_made_in_one_millisecond_are_strictly_increasing() {
        let ids: Vec<String> = (0..10_000).map(|_| new_id()).collect();
        for w in ids.windows(2) {
            assert!(w[0] < w[1], "{} then {}", w[0], w[1]);
        }
        // Many share a millisecond (the first 10 characters are the time).
        let same_ms = ids.windows(2).filter(|w| w[0][..10] == w[1][..10]).count();
        assert!(same_ms > 0);
    }

    #[test]
    fn requests_made_in_one_millisecond_list_in_the_order_they_were_made() {
        let s = Store::open_in_memory().unwrap();
        let news: Vec<NewApproval> = (0..300)
            .map(|i| {
                let mut n = new("m", "t", None, Some(i64::MAX));
                n.asked.args = serde_json::json!({"n": i});
                n
            })
            .collect();
        // One transaction, one created_at: as a burst of submissions is committed.
        let made: Vec<String> = s
            .insert_batch(&news)
            .into_iter()
            .map(|r| match r.unwrap() {
                Inserted::New(a) => a.id,
                other => panic!("{other:?}"),
            })
            .collect();
        let listed: Vec<String> = s
            .list_page(&ListFilter {
                status: Some(crate::approval::Status::Pending),
                limit: 1000,
                ..ListFilter::default()
            })
            .unwrap()
            .into_iter()
            .map(|a| a.id)
            .collect();
        assert_eq!(listed, made);
    }

    #[test]
    fn content_hash_is_of_the_content_not_its_spelling() {
        let a: serde_json::Value =
            serde_json::from_str(r#"{"b": [1, {"y": 2, "x": "é"}], "a": null}"#).unwrap();
        let b: serde_json::Value =
            serde_json::from_str(r#"{"a":null,"b":[1,{"x":"\u00e9","y":2}]}"#).unwrap();
        assert_eq!(content_hash(&a), content_hash(&b));
        let c: serde_json::Value =
            serde_json::from_str(r#"{"a":null,"b":[{"x":"é","y":2},1]}"#).unwrap();
        assert_ne!(content_hash(&a), content_hash(&c), "order in arrays counts");
        assert_eq!(content_hash(&a).len(), 64);
    }

    #[test]
    fn data_survives_reopening_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.db");
        let id = {
            let s = Store::open(&path).unwrap();
            inserted(&s, &new("m", "t", None, Some(500))).id
        };
        let s = Store::open(&path).unwrap();
        assert_eq!(s.get(&id).unwrap().unwrap().status, Status::Pending);
        assert_eq!(s.next_deadline().unwrap(), Some(500));
    }
}
