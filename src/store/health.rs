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

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rusqlite::ErrorCode;

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
}

impl StorageFault {
    /// The API's error code.
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self.kind {
            FaultKind::Unavailable => "storage_unavailable",
            FaultKind::Full => "storage_full",
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
            FaultKind::Unavailable => format!(
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
        let watch = self.watch.as_ref()?;
        let fault = watch.moved().or_else(|| Watch::lock(&watch.failed).clone());
        watch.report(fault.as_ref());
        fault
    }

    /// Runs a store call unless the database was deleted or replaced, and notes a
    /// storage fault it fails on (or that it wrote, clearing an earlier one).
    pub fn guarded<T>(&self, f: impl FnOnce(&Store) -> Result<T>) -> Result<T> {
        let Some(watch) = &self.watch else {
            return f(self);
        };
        if let Some(fault) = watch.moved() {
            watch.report(Some(&fault));
            return Err(StoreError::Storage(fault));
        }
        let before = self.changes();
        let result = f(self);
        self.note(&result, before);
        result
    }

    /// [`Store::insert_batch`] under the same guard as [`Store::guarded`]: the group-commit
    /// writer's calls are store calls too.
    pub fn insert_batch_guarded(
        &self,
        news: &[super::NewApproval],
    ) -> Vec<Result<super::Inserted>> {
        let Some(watch) = &self.watch else {
            return self.insert_batch(news);
        };
        if let Some(fault) = watch.moved() {
            watch.report(Some(&fault));
            return news
                .iter()
                .map(|_| Err(StoreError::Storage(fault.clone())))
                .collect();
        }
        let before = self.changes();
        let results = self.insert_batch(news);
        match results.iter().find(|r| r.is_err()) {
            Some(failed) => self.note(failed, before),
            None => self.note(&Ok(()), before),
        }
        results
    }

    /// Notes how a call that began at `before` changes went (see [`Store::guarded`]).
    pub(super) fn note<T>(&self, result: &Result<T>, before: u64) {
        let Some(watch) = &self.watch else { return };
        match result {
            Err(e) => {
                if let Some(fault) = watch.classify(e) {
                    *Watch::lock(&watch.failed) = Some(fault.clone());
                    watch.report(Some(&fault));
                }
            }
            Ok(_) => {
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

    /// The connection's count of changed rows so far (for [`Store::note`]).
    pub(super) fn changes(&self) -> u64 {
        self.lock().total_changes()
    }

    /// Caps the database at `bytes` (`store.max_size`): beyond it writes fail as on a
    /// full disk (`storage_full`).
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
    use crate::store::tests::new;
    use crate::store::Inserted;

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
            n.args = big.clone();
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
}
