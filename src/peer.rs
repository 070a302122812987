//! Who is on the other end of a Unix socket: the kernel's word (`SO_PEERCRED`), not
//! the caller's. The accept loop ([`crate::serve`]) attaches a [`Caller`] to every
//! request that comes over a Unix socket; an owner's decision on the control socket
//! is recorded as [`Caller::owner_name`].
//!
//! Under the systemd unit, owners reach the control socket as the `gatebot` account
//! (`sudo -u gatebot gatebot decide …`): the kernel then names that shared account,
//! not the person. For the accounts that can already do anything to gatebot's data,
//! its own and root, the person sudo names (`SUDO_USER`, which `gatebot decide` sends
//! as [`SUDO_USER_HEADER`]) is recorded instead; the account is logged beside it. Any
//! other account is recorded by its own name, whatever it claims.

use std::ffi::CStr;

/// The header `gatebot decide` sends with the `SUDO_USER` it was started with.
pub const SUDO_USER_HEADER: &str = "x-gatebot-sudo-user";

/// The peer of a Unix-socket connection, as the kernel reported it at accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller {
    pub uid: u32,
    pub pid: Option<i32>,
}

impl Caller {
    /// The account's user name, else `uid N` (an account without a passwd entry).
    /// Blocking (NSS may ask a directory service): call it off the async threads.
    #[must_use]
    pub fn account(&self) -> String {
        user_name(self.uid).unwrap_or_else(|| format!("uid {}", self.uid))
    }

    /// Who decided, for `decided_by`: the account, or, when the account is gatebot's
    /// own or root, the person sudo named (see the module docs). Blocking, as
    /// [`Caller::account`].
    #[must_use]
    pub fn owner_name(&self, sudo_user: Option<&str>) -> String {
        match sudo_user {
            Some(person) if self.is_shared_account() => person.to_string(),
            _ => self.account(),
        }
    }

    /// gatebot's own account or root: whoever reaches the socket as one of them got
    /// there through sudo or su, and could do anything to gatebot's data anyway.
    #[must_use]
    pub fn is_shared_account(&self) -> bool {
        // SAFETY: geteuid has no preconditions and cannot fail.
        self.uid == 0 || self.uid == unsafe { libc::geteuid() }
    }
}

/// Checks a `SUDO_USER` as sent in [`SUDO_USER_HEADER`]: a user name, nothing that
/// could pose as something else in a prompt or the audit trail.
pub fn check_sudo_user(name: &str) -> Result<&str, String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'@'));
    if ok {
        Ok(name)
    } else {
        Err(format!(
            "`{SUDO_USER_HEADER}` must be a user name (letters, digits, . _ - @; at most 64)"
        ))
    }
}

/// The name of the account `uid` (getpwuid_r, so NSS sources count too).
#[must_use]
pub fn user_name(uid: u32) -> Option<String> {
    let mut buf = vec![0u8; 1024];
    loop {
        // SAFETY: passwd is plain data that getpwuid_r fills in; an all-zero value is valid.
        let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the call and `buf.len()` is its size; the
        // strings in `entry` point into `buf`, which outlives their use below.
        let rc = unsafe {
            libc::getpwuid_r(
                uid,
                &mut entry,
                buf.as_mut_ptr().cast(),
                buf.len(),
                &mut found,
            )
        };
        if rc == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 4, 0);
            continue;
        }
        if rc != 0 || found.is_null() || entry.pw_name.is_null() {
            return None;
        }
        // SAFETY: on success pw_name is a NUL-terminated string inside `buf`.
        let name = unsafe { CStr::from_ptr(entry.pw_name) };
        return name.to_str().ok().map(str::to_string);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_named_and_an_unknown_uid_is_shown_as_a_number() {
        assert_eq!(user_name(0).as_deref(), Some("root"));
        let nobody_here = Caller {
            uid: 3_999_999_999,
            pid: None,
        };
        assert_eq!(nobody_here.account(), "uid 3999999999");
    }

    #[test]
    fn only_shared_accounts_are_recorded_as_the_person_sudo_names() {
        let root = Caller { uid: 0, pid: None };
        assert_eq!(root.owner_name(Some("alice")), "alice");
        assert_eq!(root.owner_name(None), "root");
        let someone = Caller {
            uid: 3_999_999_998,
            pid: None,
        };
        if !someone.is_shared_account() {
            assert_eq!(someone.owner_name(Some("alice")), "uid 3999999998");
        }
    }

    #[test]
    fn a_sudo_user_must_be_a_plain_user_name() {
        assert_eq!(check_sudo_user("alice.b-2"), Ok("alice.b-2"));
        for bad in [
            "",
            "alice on the command line",
            "a\u{200b}lice",
            "x\ny",
            &"a".repeat(65),
        ] {
            assert!(check_sudo_user(bad).is_err(), "{bad:?}");
        }
    }
}
