//! `[limits]`: what one agent may hold open at once on the agents' listeners (its
//! Unix socket and the TCP listener; the owners' control socket is not counted), so
//! that no agent can take the room every other agent needs.
//!
//! ```toml
//! [limits]
//! connections_per_agent = 64   # requests in flight at once (each holds a connection)
//! waits_per_agent = 32         # long-polls among them
//! ```
//!
//! Read at each request, so a reload applies at once. The engine counts and refuses
//! (`engine::gate`); these are only the numbers.

use serde::Deserialize;

use super::resolve::Resolve;
use super::{ConfigError, QueueConfig};
use crate::serve::DEFAULT_MAX_CONNECTIONS;

/// The most either key may be.
pub const MAX_PER_AGENT: usize = 10_000;

/// `[limits]` as the daemon runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitsConfig {
    /// Requests one agent may have in flight at once (long-polls included).
    pub connections_per_agent: usize,
    /// Long-polls one agent may hold open at once: `?wait=` on a request, task or run,
    /// a task claim with `wait`, the HTTP hook waiting for a decision.
    pub waits_per_agent: usize,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            connections_per_agent: 64,
            waits_per_agent: 32,
        }
    }
}

/// `[limits]` as written.
#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct FileLimits {
    connections_per_agent: usize,
    waits_per_agent: usize,
}

impl Default for FileLimits {
    fn default() -> Self {
        let d = LimitsConfig::default();
        FileLimits {
            connections_per_agent: d.connections_per_agent,
            waits_per_agent: d.waits_per_agent,
        }
    }
}

impl Resolve<'_> {
    /// `[limits]`; its checks only record, so the value is always there. A cap that
    /// does not stay below the listener's is a note: one agent could then fill it.
    pub(super) fn limits(
        &self,
        file: FileLimits,
        queue: &QueueConfig,
        notes: &mut Vec<String>,
        errors: &mut Vec<ConfigError>,
    ) -> LimitsConfig {
        for (key, n) in [
            ("connections_per_agent", file.connections_per_agent),
            ("waits_per_agent", file.waits_per_agent),
        ] {
            if !(1..=MAX_PER_AGENT).contains(&n) {
                errors.push(self.error(
                    "limits",
                    key,
                    format!("must be from 1 to {MAX_PER_AGENT}, got {n}"),
                ));
            }
        }
        if file.waits_per_agent > file.connections_per_agent {
            errors.push(self.error(
                "limits",
                "waits_per_agent",
                format!(
                    "{} is more than `limits.connections_per_agent` ({}): every long-poll is \
                     also a request in flight",
                    file.waits_per_agent, file.connections_per_agent
                ),
            ));
        }
        let listener = queue.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS);
        if file.connections_per_agent >= listener {
            notes.push(format!(
                "limits: connections_per_agent ({}) is not below the agents' socket's cap \
                 ({listener}, queue.max_connections): one agent can take every connection",
                file.connections_per_agent
            ));
        }
        LimitsConfig {
            connections_per_agent: file.connections_per_agent,
            waits_per_agent: file.waits_per_agent,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::parse_in_etc as parse;
    use crate::config::Config;
    use std::path::Path;

    #[test]
    fn limits_default_well_below_the_listener_and_are_checked() {
        let c = parse("").unwrap();
        assert_eq!(c.limits.connections_per_agent, 64);
        assert_eq!(c.limits.waits_per_agent, 32);
        assert!(c.notes.is_empty(), "{:?}", c.notes);
        for (raw, key, words) in [
            (
                "connections_per_agent = 0",
                "limits.connections_per_agent",
                "from 1 to 10000",
            ),
            (
                "waits_per_agent = 100000",
                "limits.waits_per_agent",
                "from 1 to 10000",
            ),
            (
                "connections_per_agent = 4\nwaits_per_agent = 8",
                "limits.waits_per_agent",
                "more than `limits.connections_per_agent` (4)",
            ),
        ] {
            let errors = Config::check_text(
                &format!("[limits]\n{raw}\n"),
                Path::new("/etc/gatebot/bot.toml"),
            )
            .unwrap_err();
            assert!(
                errors
                    .iter()
                    .any(|e| e.key == key && e.message.contains(words)),
                "{raw}: {errors:?}"
            );
        }
        let c = parse("[queue]\nmax_connections = 50\n").unwrap();
        assert!(
            c.notes[0].contains("not below the agents' socket's cap (50"),
            "{:?}",
            c.notes
        );
    }
}
