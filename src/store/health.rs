//! Whether the database can keep what gatebot writes, so a fault is refused and
//! reported instead of acknowledged and lost.
//!
//! 1. At open, the database file's and its WAL's identities (device and inode) are
//!    noted ([`Watch`]).
//! 2. Before every store call ([`Store::guarded`]), and on every health, watchdog and
//!    housekeeping tick ([`Store::storage_fault`]), the paths are looked at again: a
//!    file that was deleted or replaced means this process writes into a file nobody
//!    will open again, so every call is refused with `storage_unavailable` until a
//!    restart (there is no way back to the right file).
//! 3. A call that fails because the disk is full (or `store.max_size` is reached:
//!    `storage_full`) or on an I/O error (`storage_unavailable`) is noted, and stays
//!    the reported fault until a later call writes successfully.
//! 4. A new fault is logged at ERROR once, and its clearing at INFO.
//!
//! Room kept back for owners ([`Store::keep_back`], `store.reserve`): what agents
//! write (new requests, workflow runs and events) is refused with `storage_full` once
//! the database is within the reserve of `store.max_size`, or once the disk holds less
//! than the reserve, so owners' decisions, expiries and gatebot's own bookkeeping still
//! commit when agents have filled their share. The check runs in the agent's write
//! transaction before it writes: the database's used pages (page count less free
//! pages, two header reads) and the disk's free space (one `statvfs`, at most every
//! [`DISK_EVERY`]). Such a refusal is not a storage fault (the database is fine: health
//! and the watchdog stay green); it is logged at WARN when it starts and at INFO when
//! agents have room again, and shown by `/v1/health` beside the storage.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rusqlite::ErrorCode;

use super::sql::{params, Tx};
use super::{sibling, Result, Store, StoreError};

/// What is wrong with the storage, as clients are told it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StorageFault {
    pub kind: FaultKind,
    /// What happened and what the operator can do about it.
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// The database cannot keep anything now (deleted, replaced, I/O errors).
    Unavailable,
    /// The database cannot grow (the disk is full, or `store.max_size`).
    Full,
    /// Agents have filled their share (`store.reserve` is kept for owners): their
    /// writes are refused, everything else commits. Not a fault of the storage.
    AgentsFull,
}

impl StorageFault {
    /// The API's error code.
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self.kind {
            FaultKind::Unavailable => "storage_unavailable",
            FaultKind::Full | FaultKind::AgentsFull => "storage_full",
        }
    }
}

/// A file's identity: device and inode.
type Identity = (u64, u64);

fn identity(path: &Path) -> std::io::Result<Identity> {
    let m = std::fs::metadata(path)?;
    Ok((m.dev(), m.ino()))
}

/// The files of an open database, as they were when it was opened.
#[derive(Debug)]
pub(super) struct Watch {
    path: PathBuf,
    file: Identity,
    wal: Option<Identity>,
    /// `store.max_size`, to name it when the database is full.
    max_size: Mutex<Option<u64>>,
    /// The fault of the last failed call, until a call writes again.
    failed: Mutex<Option<StorageFault>>,
    /// The fault last reported, to log each new one once.
    reported: Mutex<Option<StorageFault>>,
    /// What is kept back for owners.
    room: Mutex<Room>,
    /// True while agents' writes are refused for room (to log each change once).
    held: AtomicBool,
    /// The disk's free bytes, and when they were read.
    disk: Mutex<Option<(Instant, u64)>>,
}

/// How often the disk's free space is read for an agent's write, at most.
pub(super) const DISK_EVERY: Duration = Duration::from_millis(100);

/// Space kept back for owners (see the module docs).
#[derive(Debug, Clone, Copy, Default)]
struct Room {
    /// `store.max_size` less `store.reserve`: the most the database may hold for
    /// agents to write more.
    agents_max: Option<u64>,
    /// `store.reserve`: 0 turns both checks off.
    reserve: u64,
    page_size: u64,
}

/// The free bytes of the filesystem holding `path`, for unprivileged writers.
fn disk_free(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a valid C string and `st` a properly sized, writable struct.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    #[allow(clippy::unnecessary_cast)] // the field types differ between platforms
    (rc == 0).then(|| (st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// `n` bytes for people: "64 MiB", "1.5 GiB", "900 KiB".
pub(crate) fn human_bytes(n: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (size, unit) in UNITS {
        if n >= size {
            let v = n as f64 / size as f64;
            return if v.fract() == 0.0 {
                format!("{v:.0} {unit}")
            } else {
                format!("{v:.1} {unit}")
            };
        }
    }
    format!("{n} bytes")
}

/// Refuses an agent's write when the database or the disk has no room for it beyond
/// what is kept for owners (see the module docs). `tx` is the write's transaction.
pub(super) fn agent_room(watch: Option<&Watch>, tx: &Tx<'_>) -> super::Result<()> {
    let Some(watch) = watch else { return Ok(()) };
    let room = *Watch::lock(&watch.room);
    if room.reserve == 0 {
        return Ok(());
    }
    let db = watch.path.display();
    let mut refused = None;
    if let Some(max) = room.agents_max {
        let pages: i64 = tx.query_row(
            "SELECT p.page_count - f.freelist_count \
             FROM pragma_page_count() AS p, pragma_freelist_count() AS f",
            params![],
            |r| r.get(0),
        )?;
        let used = (pages.max(0) as u64).saturating_mul(room.page_size);
        if used >= max {
            refused = Some(format!(
                "the database {db} holds {} of the {} agents may fill: store.max_size ({}) \
                 less store.reserve ({}), which is kept for owners' decisions and expiries. \
                 Raise store.max_size; agents can write again as soon as there is room",
                human_bytes(used),
                human_bytes(max),
                human_bytes(max + room.reserve),
                human_bytes(room.reserve),
            ));
        }
    }
    if refused.is_none() {
        let free = {
            let mut disk = Watch::lock(&watch.disk);
            let now = Instant::now();
            match *disk {
                Some((at, free)) if now.duration_since(at) < DISK_EVERY => Some(free),
                _ => {
                    let free = disk_free(&watch.path);
                    *disk = free.map(|f| (now, f));
                    free
                }
            }
        };
        if let Some(free) = free.filter(|f| *f < room.reserve) {
            refused = Some(format!(
                "the disk holding the database {db} has {} free, less than store.reserve \
                 ({}), which is kept for owners' decisions and expiries. Free disk space; \
                 agents can write again as soon as there is room",
                human_bytes(free),
                human_bytes(room.reserve),
            ));
        }
    }
    match refused {
        Some(message) => {
            if !watch.held.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    code = "storage_full",
                    "agents' writes are refused: {message}"
                );
            }
            Err(super::StoreError::Storage(StorageFault {
                kind: FaultKind::AgentsFull,
                message,
            }))
        }
        None => {
            if watch.held.swap(false, Ordering::Relaxed) {
                tracing::info!(path = %db, "agents have room in the database again");
            }
            Ok(())
        }
    }
}

impl Watch {
    /// Notes the identities of the database at `path` (open) and its WAL.
    pub(super) fn new(path: &Path) -> std::io::Result<Watch> {
        Ok(Watch {
            path: path.to_path_buf(),
            file: identity(path)?,
            wal: identity(&sibling(path, "-wal")).ok(),
            max_size: Mutex::new(None),
            failed: Mutex::new(None),
            reported: Mutex::new(None),
            room: Mutex::new(Room::default()),
            held: AtomicBool::new(false),
            disk: Mutex::new(None),
        })
    }

    /// Whether the files at the paths are still the ones opened.
    fn moved(&self) -> Option<StorageFault> {
        let unavailable = |message: String| {
            Some(StorageFault {
                kind: FaultKind::Unavailable,
                message,
            })
        };
        let db = self.path.display();
        match identity(&self.path) {
            Err(_) => {
                return unavailable(format!(
                    "the database {db} was deleted while gatebot was running: what it records \
                     now would be lost at the next restart. Restore the file from a backup if \
                     you have one, then restart gatebot (under systemd the watchdog restarts it)"
                ))
            }
            Ok(id) if id != self.file => {
                return unavailable(format!(
                    "the database {db} was replaced by another file while gatebot was running: \
                     restart gatebot to use the file that is there now"
                ))
            }
            Ok(_) => {}
        }
        let wal = sibling(&self.path, "-wal");
        match (self.wal, identity(&wal)) {
            (Some(was), Ok(now)) if was == now => None,
            (Some(_), _) => unavailable(format!(
                "the database's write-ahead log {} was deleted or replaced while gatebot was \
                 running: the latest changes would be lost at the next restart. Restart gatebot",
                wal.display()
            )),
            (None, _) => None,
        }
    }

    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The fault a failed call shows, if it is a storage fault.
    fn classify(&self, e: &StoreError) -> Option<StorageFault> {
        let StoreError::Sqlite(rusqlite::Error::SqliteFailure(err, msg)) = e else {
            return None;
        };
        let db = self.path.display();
        let kind = match err.code {
            ErrorCode::DiskFull => FaultKind::Full,
            ErrorCode::SystemIoFailure
            | ErrorCode::CannotOpen
            | ErrorCode::ReadOnly
            | ErrorCode::NotADatabase
            | ErrorCode::DatabaseCorrupt => FaultKind::Unavailable,
            _ => return None,
        };
        let message = match kind {
            FaultKind::Full => match *Self::lock(&self.max_size) {
                Some(max) => format!(
                    "the database {db} cannot grow: the disk is full, or it reached \
                     store.max_size ({max} bytes). Free disk space or raise store.max_size; \
                     gatebot writes again as soon as it can"
                ),
                None => format!(
                    "the database {db} cannot grow: the disk is full. Free disk space; \
                     gatebot writes again as soon as it can"
                ),
            },
            FaultKind::Unavailable | FaultKind::AgentsFull => format!(
                "the database {db} cannot be written ({}): check the disk and the file, \
                 then restart gatebot",
                msg.as_deref().unwrap_or(&err.to_string())
            ),
        };
        Some(StorageFault { kind, message })
    }

    /// Logs `now` if it differs from what was reported last.
    fn report(&self, now: Option<&StorageFault>) {
        let mut reported = Self::lock(&self.reported);
        if reported.as_ref() == now {
            return;
        }
        match now {
            Some(f) => tracing::error!(code = f.code(), "{}", f.message),
            None => tracing::info!(path = %self.path.display(), "the database is writable again"),
        }
        *reported = now.cloned();
    }
}

impl Store {
    /// What is wrong with the storage now, if anything (see the module docs). Looks at
    /// the files without taking the connection, so it answers while a call is stuck.
    pub fn storage_fault(&self) -> Option<StorageFault> {
        if let super::Backend::Postgres(pg) = &self.backend {
            return pg.fault();
        }
        let watch = self.watch.as_ref()?;
        let fault = watch.moved().or_else(|| Watch::lock(&watch.failed).clone());
        watch.report(fault.as_ref());
        fault
    }

    /// Runs a store call unless the database was deleted or replaced, and notes a
    /// storage fault it fails on (or that it wrote, clearing an earlier one).
    pub fn guarded<T>(&self, f: impl FnOnce(&Store) -> Result<T>) -> Result<T> {
        self.guard(
            || f(self),
            |result| result.as_ref().err(),
            |fault| Err(StoreError::Storage(fault)),
        )
    }

    /// [`Store::insert_batch`] under the same guard as [`Store::guarded`]: the group-commit
    /// writer's calls are store calls too.
    pub fn insert_batch_guarded(
        &self,
        news: &[super::NewApproval],
    ) -> Vec<Result<super::Inserted>> {
        self.guard(
            || self.insert_batch(news),
            |results| results.iter().find_map(|r| r.as_ref().err()),
            |fault| {
                news.iter()
                    .map(|_| Err(StoreError::Storage(fault.clone())))
                    .collect()
            },
        )
    }

    /// Makes `call`, unless the database was deleted or replaced (then `refused` says so
    /// for the fault), and notes how it ended (`failure`: its error, if it failed): a
    /// storage fault for `/v1/health` and the watchdog, or a write that ends one.
    fn guard<R>(
        &self,
        call: impl FnOnce() -> R,
        failure: impl Fn(&R) -> Option<&StoreError>,
        refused: impl FnOnce(StorageFault) -> R,
    ) -> R {
        let Some(watch) = &self.watch else {
            let result = call();
            if let super::Backend::Postgres(pg) = &self.backend {
                pg.note(failure(&result));
            }
            return result;
        };
        if let Some(fault) = watch.moved() {
            watch.report(Some(&fault));
            return refused(fault);
        }
        let before = self.changes_if_failed(watch);
        let result = call();
        self.note(failure(&result), before);
        result
    }

    /// The writer's change count, only while a storage fault is recorded: what tells
    /// that a call wrote and the fault is over. Without one, a call (a read above all)
    /// does not touch the writer's lock for it.
    fn changes_if_failed(&self, watch: &Watch) -> Option<u64> {
        Watch::lock(&watch.failed).is_some().then(|| self.changes())
    }

    /// Notes how a call that began at `before` changes went (see [`Store::guarded`]);
    /// `before` is `None` when no fault was recorded as it began.
    fn note(&self, failure: Option<&StoreError>, before: Option<u64>) {
        let Some(watch) = &self.watch else { return };
        match failure {
            Some(e) => {
                if let Some(fault) = watch.classify(e) {
                    *Watch::lock(&watch.failed) = Some(fault.clone());
                    watch.report(Some(&fault));
                }
            }
            None => {
                let Some(before) = before else { return };
                let wrote = self.changes() > before;
                let mut failed = Watch::lock(&watch.failed);
                if wrote && failed.is_some() {
                    *failed = None;
                    drop(failed);
                    watch.report(watch.moved().as_ref());
                }
            }
        }
    }

    /// Keeps `reserve` bytes back for owners (`store.reserve`): agents' writes are
    /// refused once the database holds `max_size` less `reserve`, or the disk has less
    /// than `reserve` free (see the module docs). Also caps the database at `max_size`.
    pub fn keep_back(&self, max_size: Option<u64>, reserve: u64) -> Result<()> {
        if let Some(max) = max_size {
            self.limit_size(max)?;
        }
        let Some(watch) = &self.watch else {
            return Ok(());
        };
        let page: i64 =
            self.writer(|w| w.query_row("PRAGMA page_size", params![], |r| r.get(0)))?;
        *Watch::lock(&watch.room) = Room {
            agents_max: max_size.map(|m| m.saturating_sub(reserve)),
            reserve,
            page_size: page.max(1) as u64,
        };
        Ok(())
    }

    /// Why agents' writes are refused now, if they are (see [`Store::keep_back`]):
    /// not a storage fault, but what `/v1/health` shows beside it.
    pub fn agents_held_back(&self) -> Option<String> {
        let watch = self.watch.as_ref()?;
        if !watch.held.load(Ordering::Relaxed) {
            return None;
        }
        let room = *Watch::lock(&watch.room);
        Some(format!(
            "agents' new requests, workflow runs and events are refused: the database or its \
             disk has no room beyond store.reserve ({}), which is kept for owners' decisions \
             and expiries. Raise store.max_size or free disk space",
            human_bytes(room.reserve)
        ))
    }

    /// The connection's count of changed rows so far (for [`Store::note`]). (Asked of
    /// SQLite's connection itself, not in SQL: it stays off the SQL layer.)
    pub(super) fn changes(&self) -> u64 {
        self.lock().total_changes()
    }

    /// Caps the database at `bytes` (`store.max_size`): beyond it writes fail as on a
    /// full disk (`storage_full`). (A limit of SQLite's connection, set through rusqlite
    /// with the page size it is counted in: it stays off the SQL layer.)
    pub fn limit_size(&self, bytes: u64) -> Result<()> {
        let conn = self.lock();
        let page: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
        let pages = bytes.div_ceil(page.max(1) as u64);
        conn.pragma_update(
            None,
            "max_page_count",
            i64::try_from(pages).unwrap_or(i64::MAX),
        )?;
        if let Some(watch) = &self.watch {
            *Watch::lock(&watch.max_size) = Some(bytes);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::approval::{Status, Verb};
    use crate::store::tests::{decision, new};
    use crate::store::{Inserted, NewRun, StoreError, Transition};

    #[test]
    fn a_deleted_or_replaced_database_refuses_every_call() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.db");
        let s = Store::open(&path).unwrap();
        assert_eq!(s.storage_fault(), None);
        assert!(s.guarded(|s| s.insert(&new("m", "t", None, None))).is_ok());

        std::fs::rename(&path, dir.path().join("moved.db")).unwrap();
        let fault = s.storage_fault().unwrap();
        assert_eq!(fault.code(), "storage_unavailable");
        assert!(fault.message.contains("was deleted"), "{}", fault.message);
        let refused = s.guarded(|s| s.insert(&new("m", "t", None, None)));
        assert!(
            matches!(refused, Err(StoreError::Storage(_))),
            "{refused:?}"
        );

        // Another file at the path is not the one this process writes into.
        std::fs::write(&path, b"").unwrap();
        let fault = s.storage_fault().unwrap();
        assert!(fault.message.contains("was replaced"), "{}", fault.message);
    }

    #[test]
    fn a_full_database_is_reported_until_a_write_succeeds_again() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("g.db")).unwrap();
        s.limit_size(1 << 20).unwrap();
        let big = json!({"body": "x".repeat(50_000)});
        let mut full = None;
        for _ in 0..100 {
            let mut n = new("m", "t", None, None);
            n.asked.args = big.clone();
            match s.guarded(|s| s.insert(&n)) {
                Ok(Inserted::New(_)) => {}
                Ok(other) => panic!("{other:?}"),
                Err(e) => {
                    full = Some(e);
                    break;
                }
            }
        }
        assert!(full.is_some(), "the limit was never reached");
        let fault = s.storage_fault().unwrap();
        assert_eq!(fault.code(), "storage_full");
        assert!(fault.message.contains("store.max_size (1048576 bytes)"));

        // Room again (as when disk space is freed): the next write clears the fault.
        s.limit_size(1 << 30).unwrap();
        assert!(s.guarded(|s| s.insert(&new("m", "t", None, None))).is_ok());
        assert_eq!(s.storage_fault(), None);
    }

    #[test]
    fn agents_are_held_back_by_the_reserve_and_owners_still_write() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("g.db")).unwrap();
        s.keep_back(Some(2 << 20), 512 << 10).unwrap();
        // Large requests, then smaller ones into what room is left: without a
        // reserve, this leaves no page free, and every decision after it fails.
        let mut pending = Vec::new();
        let mut refused = None;
        for size in [50_000, 2_000, 100] {
            refused = Some(loop {
                assert!(pending.len() < 2_000, "the agents' share was never filled");
                let mut n = new("m", "t", None, Some(i64::MAX));
                n.asked.args = json!({"body": "x".repeat(size)});
                match s.guarded(|s| s.insert(&n)) {
                    Ok(Inserted::New(a)) => pending.push(a.id),
                    Ok(other) => panic!("{other:?}"),
                    Err(e) => break e,
                }
            });
        }
        let refused = refused.unwrap();
        assert!(refused.held_back(), "{refused:?}");
        let fault = refused.fault().unwrap();
        assert_eq!(fault.code(), "storage_full");
        assert!(
            fault.message.contains("store.reserve (512 KiB)"),
            "{}",
            fault.message
        );
        // Not a storage fault: health and the watchdog stay green, and say why.
        assert_eq!(s.storage_fault(), None);
        assert!(s.agents_held_back().unwrap().contains("store.reserve"));
        // Agents' runs too.
        let run = NewRun {
            agent: "m".into(),
            title: "Release".into(),
            workflow: None,
            idempotency_key: None,
            created_at: 1,
        };
        assert!(matches!(s.start_run(&run), Err(e) if e.held_back()));
        // Owners decide, and requests expire, from the reserve.
        for id in &pending[..pending.len() / 2] {
            let done = s.decide(id, &decision(Verb::Approve, "alice"), 5).unwrap();
            assert!(matches!(done, Transition::Done(a) if a.status == Status::Approved));
        }
        s.lock()
            .execute(
                "UPDATE approvals SET expires_at = 10 WHERE status = 'pending'",
                [],
            )
            .unwrap();
        let expired = s.expire_due(20).unwrap();
        assert_eq!(expired.len(), pending.len() - pending.len() / 2);
        // Agents are still held back: what owners wrote came out of the reserve.
        let small = new("m", "t", None, Some(i64::MAX));
        assert!(matches!(s.insert(&small), Err(e) if e.held_back()));
    }
}
