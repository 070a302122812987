//! Files, directories and sockets gatebot creates, with the modes it means whatever
//! the umask it was started with.
//!
//! - The database, its WAL and its SHM are the owner's alone (0600): they hold every
//!   request's arguments and the audit trail. [`private_file`] creates the database
//!   file 0600 before SQLite opens it, and SQLite gives the WAL and SHM the database
//!   file's mode. [`tighten`] takes group and other access away from files an older
//!   version created more loosely.
//! - A directory gatebot creates for the database is 0700; one it creates for a socket
//!   is 0711 (others may pass through to the socket, whose own mode says who may
//!   connect, but not list the directory). See [`create_dirs`].
//! - A socket gets its mode when it is bound ([`bind_unix`]), never by a `chmod`
//!   after it, so there is no moment at which it is open to more users than meant.
//!
//! # The umask window
//! `bind` has no mode argument: the socket file gets the socket's own mode minus the
//! umask. [`bind_unix`] sets the socket's mode on the descriptor before binding (Linux
//! uses it for the file), and around `bind` sets the umask to the old one minus the
//! socket's mode bits, so the file comes out with exactly the mode asked for. The umask
//! is process-wide, so while it is changed a file another thread creates gets that mask
//! too. That is safe here because:
//! 1. every umask change in gatebot happens in [`bind_unix`], under [`UMASK_LOCK`], so
//!    two binds never interleave and the old mask is always the one restored;
//! 2. the mask in force meanwhile differs from the old one only in the socket's mode
//!    bits (owner and perhaps group read/write): it never takes the owner's access
//!    away from anything, and never gives others what the old mask withheld unless the
//!    socket itself has it;
//! 3. the files gatebot itself creates (the database, WAL, SHM, directories) get their
//!    modes explicitly (`fchmod` after creation, or SQLite copying the database file's
//!    mode), so they come out the same whichever mask is in force; and the daemon binds
//!    its sockets in `App::build`, before any server or chat task runs.

use std::fs::{DirBuilder, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// `path` with `suffix` appended to its file name: the database's `-wal`, `-shm` and
/// `-journal` beside it.
#[must_use]
pub fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    name.into()
}

/// A failed file operation in words, for a message a person reads: the system's own
/// sentence ("no such file or directory", "permission denied") without its error
/// number.
#[must_use]
pub fn io_words(e: &io::Error) -> String {
    let text = e.to_string();
    let text = match text.rfind(" (os error ") {
        Some(at) if text.ends_with(')') => &text[..at],
        _ => &text,
    };
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// Mode of a directory gatebot creates for the database: the owner's alone.
pub const PRIVATE_DIR: u32 = 0o700;
/// Mode of a directory gatebot creates for a socket: others may reach the socket
/// through it (the socket's mode decides who may connect), not list it.
pub const SOCKET_DIR: u32 = 0o711;
/// Mode of the database, its WAL and SHM.
pub const PRIVATE_FILE: u32 = 0o600;

/// Held around every umask change (see the module docs).
static UMASK_LOCK: Mutex<()> = Mutex::new(());

/// Creates `dir` and any missing parents with `mode` (exactly, whatever the umask).
/// Directories that exist are left as they are.
pub fn create_dirs(dir: &Path, mode: u32) -> io::Result<()> {
    let mut missing: Vec<PathBuf> = Vec::new();
    let mut at = Some(dir);
    while let Some(d) = at.filter(|d| !d.as_os_str().is_empty()) {
        if d.symlink_metadata().is_ok() {
            break;
        }
        missing.push(d.to_path_buf());
        at = d.parent();
    }
    for d in missing.iter().rev() {
        match DirBuilder::new().mode(mode).create(d) {
            Ok(()) => std::fs::set_permissions(d, Permissions::from_mode(mode))?,
            // Another process made it meanwhile: it is theirs to set up.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Creates `path` empty with mode 0600 if it does not exist (SQLite treats an empty
/// file as an empty database, and gives the WAL and SHM the database file's mode).
/// Returns whether it created the file.
pub fn private_file(path: &Path) -> io::Result<bool> {
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(PRIVATE_FILE)
        .open(path)
    {
        Ok(file) => {
            // The umask may have taken more than group and other access away.
            file.set_permissions(Permissions::from_mode(PRIVATE_FILE))?;
            Ok(true)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

/// Takes group and other access away from `path` if it has any, returning the mode it
/// had then (to report); `None` when it was already private or does not exist.
pub fn tighten(path: &Path) -> io::Result<Option<u32>> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if !meta.is_file() {
        return Ok(None);
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 == 0 {
        return Ok(None);
    }
    std::fs::set_permissions(path, Permissions::from_mode(mode & 0o700))?;
    Ok(Some(mode))
}

/// Binds a Unix socket at `path` (and listens on it) whose file has `mode` from the
/// moment it exists (see the module docs for how, and why the umask change is safe).
pub fn bind_unix(path: &Path, mode: u32) -> io::Result<std::os::unix::net::UnixListener> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;

    let bytes = path.as_os_str().as_bytes();
    // SAFETY: sockaddr_un is plain old data; all zeroes is a valid (empty) address.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    if bytes.is_empty() || bytes.len() >= addr.sun_path.len() || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "a socket path must be 1-{} bytes without NUL",
                addr.sun_path.len() - 1
            ),
        ));
    }
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (to, from) in addr.sun_path.iter_mut().zip(bytes) {
        *to = *from as libc::c_char;
    }
    let len = std::mem::size_of::<libc::sa_family_t>() + bytes.len() + 1;

    // SAFETY: socket() has no memory arguments; a valid descriptor is owned at once.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by socket() and nothing else owns it.
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    // Linux gives the socket file the descriptor's mode, minus the umask.
    // SAFETY: fchmod on a descriptor we own; no memory arguments.
    if unsafe { libc::fchmod(socket.as_raw_fd(), mode as libc::mode_t) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let bound = {
        let _only_one = UMASK_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: umask cannot fail and touches no memory. The first call only reads the
        // old mask (setting a stricter one for that instant); the lock keeps every
        // change in this process paired with its restore.
        let old = unsafe { libc::umask(0o077) };
        unsafe { libc::umask(old & !(mode as libc::mode_t) & 0o777) };
        // SAFETY: `addr` is a valid sockaddr_un and `len` covers its family and the
        // NUL-terminated path inside it.
        let r = unsafe {
            libc::bind(
                socket.as_raw_fd(),
                std::ptr::addr_of!(addr).cast::<libc::sockaddr>(),
                len as libc::socklen_t,
            )
        };
        let error = io::Error::last_os_error();
        // SAFETY: as above.
        unsafe { libc::umask(old) };
        if r == 0 {
            Ok(())
        } else {
            Err(error)
        }
    };
    bound?;
    // SAFETY: listen on a bound descriptor we own; no memory arguments.
    if unsafe { libc::listen(socket.as_raw_fd(), libc::SOMAXCONN) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(std::os::unix::net::UnixListener::from(socket))
}

/// What is at a path, in words, for an error message.
#[must_use]
pub fn describe(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_file() {
        "a regular file"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else if t.is_fifo() {
        "a named pipe"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a device"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn a_failed_file_operation_is_said_without_its_error_number() {
        let e = std::fs::read("/nonexistent/gatebot/bot.toml").unwrap_err();
        assert_eq!(io_words(&e), "no such file or directory");
        let e = io::Error::from_raw_os_error(13);
        assert_eq!(io_words(&e), "permission denied");
        let e = io::Error::other("Odd thing");
        assert_eq!(io_words(&e), "odd thing");
    }

    #[test]
    fn missing_directories_get_the_mode_asked_for_and_existing_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), Permissions::from_mode(0o755)).unwrap();
        let deep = dir.path().join("a/b/c");
        create_dirs(&deep, PRIVATE_DIR).unwrap();
        for d in ["a", "a/b", "a/b/c"] {
            assert_eq!(mode(&dir.path().join(d)), 0o700, "{d}");
        }
        assert_eq!(mode(dir.path()), 0o755);
        create_dirs(&deep, SOCKET_DIR).unwrap();
        assert_eq!(mode(&deep), 0o700, "an existing directory is left alone");
    }

    #[test]
    fn a_private_file_is_created_once_with_mode_0600() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("g.db");
        assert!(private_file(&p).unwrap());
        assert_eq!(mode(&p), 0o600);
        std::fs::write(&p, b"data").unwrap();
        assert!(!private_file(&p).unwrap());
        assert_eq!(
            std::fs::read(&p).unwrap(),
            b"data",
            "an existing file is kept"
        );
    }

    #[test]
    fn tighten_takes_group_and_other_access_away() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("g.db");
        std::fs::write(&p, b"x").unwrap();
        std::fs::set_permissions(&p, Permissions::from_mode(0o644)).unwrap();
        assert_eq!(tighten(&p).unwrap(), Some(0o644));
        assert_eq!(mode(&p), 0o600);
        assert_eq!(tighten(&p).unwrap(), None);
        assert_eq!(tighten(&dir.path().join("missing")).unwrap(), None);
    }

    #[test]
    fn a_socket_has_its_mode_from_the_moment_it_is_bound() {
        let dir = tempfile::tempdir().unwrap();
        for want in [0o660, 0o600] {
            let p = dir.path().join(format!("{want:o}.sock"));
            let _l = bind_unix(&p, want).unwrap();
            assert_eq!(mode(&p), want);
        }
    }
}
