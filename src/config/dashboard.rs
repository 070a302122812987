//! `[dashboard]`: the web dashboard's listener, the address its links use, and how long
//! sign-in links and sessions last.
//!
//! ```toml
//! [dashboard]
//! listen = "127.0.0.1:8378"                      # absent: no dashboard
//! public_url = "https://gate.example.com"        # what links say; default http://LISTEN
//! login_link_ttl = "10m"
//! session_idle = "12h"
//! session_max = "7d"
//! ```

use std::net::SocketAddr;
use std::time::Duration;

use serde::Deserialize;

use super::ConfigError;
use crate::settings::{de_duration, Resolve};
use crate::time::range;

/// How long a sign-in link may be used when `login_link_ttl` is not set.
pub const DEFAULT_LOGIN_LINK_TTL: Duration = Duration::from_secs(10 * 60);
/// How long a session may go unused when `session_idle` is not set.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(12 * 3600);
/// How long a session lasts at most when `session_max` is not set.
pub const DEFAULT_SESSION_MAX: Duration = Duration::from_secs(7 * 24 * 3600);

/// `[dashboard]`, resolved: present only when `listen` is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DashboardConfig {
    /// Where the dashboard listens (HTTP; put a TLS proxy in front beyond loopback).
    pub listen: SocketAddr,
    /// The address people open, without a trailing slash: links in chats and the CLI
    /// use it. `http://LISTEN` unless set.
    pub public_url: String,
    /// How long a sign-in link may be used (it is used up by signing in).
    pub login_link_ttl: Duration,
    /// A session unused this long is over.
    pub session_idle: Duration,
    /// A session is over this long after sign-in, however used.
    pub session_max: Duration,
}

impl DashboardConfig {
    /// Whether people reach it over https (its cookie is then `Secure`).
    #[must_use]
    pub fn https(&self) -> bool {
        self.public_url.starts_with("https://")
    }
}

/// `[dashboard]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileDashboard {
    listen: Option<String>,
    public_url: Option<String>,
    #[serde(default = "login_link_ttl", deserialize_with = "de_duration")]
    login_link_ttl: Duration,
    #[serde(default = "session_idle", deserialize_with = "de_duration")]
    session_idle: Duration,
    #[serde(default = "session_max", deserialize_with = "de_duration")]
    session_max: Duration,
}

fn login_link_ttl() -> Duration {
    DEFAULT_LOGIN_LINK_TTL
}
fn session_idle() -> Duration {
    DEFAULT_SESSION_IDLE
}
fn session_max() -> Duration {
    DEFAULT_SESSION_MAX
}

impl Resolve<'_> {
    /// `[dashboard]`: `None` when absent or without `listen` (no dashboard). Each error
    /// names its key and line.
    pub(super) fn dashboard(
        &self,
        file: Option<FileDashboard>,
        notes: &mut Vec<String>,
        errors: &mut Vec<ConfigError>,
    ) -> Option<DashboardConfig> {
        let d = file?;
        let Some(listen) = d.listen else {
            notes
                .push("the web dashboard is off: set `listen` in [dashboard] to turn it on".into());
            return None;
        };
        let Ok(addr) = listen.parse::<SocketAddr>() else {
            errors.push(self.error(
                "dashboard",
                "listen",
                format!("`{listen}` is not an address like 127.0.0.1:8378"),
            ));
            return None;
        };
        let public_url = match d.public_url {
            None => format!("http://{addr}"),
            Some(u) => match public_url(&u) {
                Ok(u) => u,
                Err(why) => {
                    errors.push(self.error("dashboard", "public_url", why));
                    return None;
                }
            },
        };
        let ttl = self.duration_in(
            "dashboard",
            "login_link_ttl",
            d.login_link_ttl,
            range::LOGIN_LINK,
            errors,
        );
        let idle = self.duration_in(
            "dashboard",
            "session_idle",
            d.session_idle,
            range::SESSION,
            errors,
        );
        let max = self.duration_in(
            "dashboard",
            "session_max",
            d.session_max,
            range::SESSION,
            errors,
        );
        let (ttl, idle, max) = (ttl?, idle?, max?);
        if idle > max {
            errors.push(self.error(
                "dashboard",
                "session_idle",
                "must not be longer than `session_max` (a session ends at the first of the two)",
            ));
            return None;
        }
        Some(DashboardConfig {
            listen: addr,
            public_url,
            login_link_ttl: ttl,
            session_idle: idle,
            session_max: max,
        })
    }
}

/// `public_url` checked: an http(s) URL with a host and no query or fragment, without
/// its trailing slash.
fn public_url(u: &str) -> Result<String, String> {
    let parsed = url::Url::parse(u).map_err(|e| format!("`{u}` is not a URL ({e})"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(format!(
            "`{u}` is not an http(s) address like https://gate.example.com"
        ));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(format!(
            "`{u}` has a query or a fragment: give the address the dashboard is reached at"
        ));
    }
    Ok(u.trim_end_matches('/').to_string())
}

#[cfg(test)]
mod tests {
    use crate::config::parse_in_etc as parse;

    #[test]
    fn the_dashboard_is_off_without_listen_and_its_links_follow_public_url() {
        let c = parse("").unwrap();
        assert!(c.dashboard.is_none());
        let c = parse("[dashboard]\nlogin_link_ttl = \"5m\"\n").unwrap();
        assert!(c.dashboard.is_none());
        assert!(c.notes.iter().any(|n| n.contains("dashboard is off")));
        let c = parse("[dashboard]\nlisten = \"127.0.0.1:8378\"\n").unwrap();
        let d = c.dashboard.unwrap();
        assert_eq!(d.public_url, "http://127.0.0.1:8378");
        assert_eq!(d.login_link_ttl.as_secs(), 600);
        assert!(!d.https());
        let c = parse(
            "[dashboard]\nlisten = \"127.0.0.1:8378\"\npublic_url = \"https://gate.example.com/gb/\"\n",
        )
        .unwrap();
        let d = c.dashboard.unwrap();
        assert_eq!(d.public_url, "https://gate.example.com/gb");
        assert!(d.https());
    }

    #[test]
    fn bad_dashboard_values_name_their_key() {
        for (toml, key, words) in [
            (
                "listen = \"localhost\"",
                "dashboard.listen",
                "not an address",
            ),
            (
                "listen = \"127.0.0.1:1\"\npublic_url = \"ftp://x\"",
                "dashboard.public_url",
                "not an http(s) address",
            ),
            (
                "listen = \"127.0.0.1:1\"\npublic_url = \"https://x/?a=1\"",
                "dashboard.public_url",
                "query",
            ),
            (
                "listen = \"127.0.0.1:1\"\nlogin_link_ttl = \"5s\"",
                "dashboard.login_link_ttl",
                "1 minute",
            ),
            (
                "listen = \"127.0.0.1:1\"\nsession_idle = \"30d\"\nsession_max = \"1d\"",
                "dashboard.session_idle",
                "session_max",
            ),
        ] {
            let e = parse(&format!("[dashboard]\n{toml}\n"))
                .unwrap_err()
                .to_string();
            assert!(e.contains(key) && e.contains(words), "{toml}: {e}");
        }
    }
}
