//! Numbers that texted STOP: nothing more is sent to them until they text START.
//! Kept durably, one number a line, in a file beside the database
//! (`<database>.sms-stopped`), written whole and renamed into place at each change.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tracing::warn;

pub struct Stops {
    path: PathBuf,
    numbers: Mutex<BTreeSet<String>>,
}

impl Stops {
    /// The numbers stopped so far, kept beside the database at `database`.
    #[must_use]
    pub fn open(database: &Path) -> Stops {
        let mut name = database.file_name().unwrap_or_default().to_os_string();
        name.push(".sms-stopped");
        let path = database.with_file_name(name);
        let numbers = std::fs::read_to_string(&path)
            .map(|text| {
                text.lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        Stops {
            path,
            numbers: Mutex::new(numbers),
        }
    }

    /// Whether `number` texted STOP (and not START since).
    pub fn stopped(&self, number: &str) -> bool {
        self.lock().contains(number)
    }

    /// Records STOP (`true`) or START (`false`) from `number`; `Err` when it could not
    /// be kept on disk (it still holds until restart).
    pub fn set(&self, number: &str, stop: bool) -> std::io::Result<()> {
        let mut numbers = self.lock();
        let changed = if stop {
            numbers.insert(number.to_string())
        } else {
            numbers.remove(number)
        };
        if !changed {
            return Ok(());
        }
        let text: String = numbers.iter().map(|n| format!("{n}\n")).collect();
        let tmp = self.path.with_extension("tmp");
        std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, &self.path))
            .inspect_err(|e| warn!(path = %self.path.display(), error = %e, "sms: cannot keep the numbers that texted STOP"))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.numbers.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_outlives_a_restart_until_start() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("gatebot.db");
        let stops = Stops::open(&db);
        stops.set("+15551234567", true).unwrap();
        assert!(Stops::open(&db).stopped("+15551234567"));
        stops.set("+15551234567", false).unwrap();
        assert!(!Stops::open(&db).stopped("+15551234567"));
    }
}
