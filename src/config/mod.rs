//! `bot.toml`: loading, validation and the resolved configuration.
//!
//! Loading happens in two steps:
//! 1. the file is deserialized into the `File*` structs; TOML syntax, type errors,
//!    unknown keys, bad durations and bad enum values are reported with the key path
//!    and line, each entry with an error left out and the rest read on;
//! 2. the result is resolved into [`Config`]: secrets are read from the environment
//!    or files, relative paths are anchored at the config file's directory, patterns
//!    are compiled, and cross-key rules are checked. Errors here also name the key path and, where the
//!    key is in the file, its line.
//!
//! Neither step stops at the first error: [`Config::check`] reports every one of both,
//! in file order (`gatebot check-config`, the daemon's start and its reload), except
//! what step 2 says of an entry step 1 left out. A client command reads only the
//! sockets ([`Config::sockets`]), so a mistake elsewhere does not stop it.
//!
//! Step 1 is `file` (the whole file as written); step 2 is `resolve`, which hands each
//! section to its module: `queue` (`[store]`, `[queue]`, `[log]`), `policy`
//! (`[policy]`, `[tools]`), `agents`, `workflow` (`[workflow]`,
//! `[agents.NAME.workflow]`), `limits` (`[limits]`, `[agents.NAME.limits]`), `inbox`
//! and `promotion` (`[promotion]`, `[grants]`, shell-like `[tools]` entries). Each
//! section's module holds its table as written and resolves it; none uses `file`,
//! `resolve` or another section's resolving. A chat platform's table is a section like
//! the others ([`telegram`], [`slack`]): read and resolved into the settings its
//! adapter runs with, and describing itself ([`crate::settings::PlatformSettings`]:
//! its key, what a reload keeps, its `check-config` line); [`Config::platforms`] holds
//! those that are on. The adapters (`crate::telegram`, `crate::slack`) use their
//! settings; the configuration names no adapter. Sections and platforms alike use the
//! helpers of [`crate::settings`] (the error with its key path and line, secrets,
//! paths, ranges). `reload` says what a
//! running daemon can take up from a new file (SIGHUP) and what needs a restart.
//!
//! Every key is documented in the example `bot.toml` at the top of the repository.

mod agents;
mod budgets;
pub mod dashboard;
pub mod discord;
pub mod email;
pub(crate) mod file;
pub mod inbox;
pub mod limits;
pub mod people;
mod policy;
pub mod promotion;
mod queue;
mod reload;
pub(crate) mod resolve;
pub mod slack;
pub mod sms;
pub mod teams;
pub mod telegram;
pub mod whatsapp;
pub mod workflow;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::approval::PlatformId;
use crate::policy::{AgentRules, Policy, Tier};
use crate::secret::Secret;
use crate::settings::Resolve;
use crate::settings::{AnySettings, PlatformSettings};
pub use crate::settings::{ChatSettings, ConfigError};
use file::read_file;
pub use queue::postgres_target;
pub use resolve::Sockets;

/// The resolved configuration the daemon runs with.
#[derive(Debug, Clone)]
pub struct Config {
    /// The file this was loaded from (used to reload on SIGHUP).
    pub source: PathBuf,
    pub store: StoreConfig,
    pub queue: QueueConfig,
    pub log: LogConfig,
    pub policy: Policy,
    pub default_ttl: Duration,
    pub max_ttl: Duration,
    pub unknown_agents: UnknownAgents,
    pub agents: BTreeMap<String, AgentConfig>,
    /// The chat platforms that are on, each with its table resolved, in the order
    /// `FileConfig` lists them. A platform whose table is absent or has no token is
    /// off (and `notes` say why); [`Config::platform`] finds one by its type.
    pub platforms: Vec<Arc<dyn AnySettings>>,
    /// `None` when `[inbox]` is absent: the inbox is off.
    pub inbox: Option<inbox::InboxConfig>,
    /// Why a configured chat channel is off (e.g. its token variable is unset), and
    /// what was done with a legacy workflow `level`.
    pub notes: Vec<String>,
    /// What works but leaves a door open (an agent without a token that the inbox
    /// routes tasks to, or beside the TCP listener): `check-config` and the daemon's
    /// log warn about each, saying what to change.
    pub warnings: Vec<String>,
    /// Workflow check-ins: every agent's frequency, tolerances, limits, check-in TTL.
    pub workflow: workflow::WorkflowConfig,
    /// `[promotion]`, `[grants]` and the shell-like tools of `[tools]`.
    pub trust: promotion::TrustConfig,
    /// `[limits]` and `[agents.NAME.limits]`: how much each agent may send.
    pub limits: limits::LimitsConfig,
    /// `[people.NAME]`: each person's identities on each surface.
    pub people: people::People,
    /// `[dashboard]`: `None` when the web dashboard is off.
    pub dashboard: Option<dashboard::DashboardConfig>,
    /// `[groups.NAME]` and `[[approval_rules]]`: who is asked about which requests.
    pub teams: teams::Teams,
    /// `[budgets]`: `None` when there are no spend limits.
    pub budgets: Option<Arc<crate::budget::Budgets>>,
}

#[derive(Debug, Clone)]
pub struct StoreConfig {
    pub path: PathBuf,
    /// The most bytes the database may take; beyond it writes fail as on a full disk.
    pub max_size: Option<u64>,
    /// Space kept back for owners: agents' writes stop this far below `max_size`, or
    /// when the disk has less than this free (0: never).
    pub reserve: u64,
    /// `store.url`: the store is on this PostgreSQL database instead of `path`.
    pub postgres: Option<PostgresConfig>,
    /// `store.node`: this node's name among those using the database (default: the
    /// host's name).
    pub node: String,
}

impl StoreConfig {
    /// The database, for people: the SQLite file's path, or the PostgreSQL URL (which
    /// never holds the password).
    #[must_use]
    pub fn shown(&self) -> String {
        match &self.postgres {
            Some(pg) => pg.url.clone(),
            None => self.path.display().to_string(),
        }
    }
}

/// `[store] url` and its password: several nodes share one PostgreSQL database
/// (docs/scale-out.md).
#[derive(Debug, Clone)]
pub struct PostgresConfig {
    /// `postgres://USER@HOST[:PORT]/DB`, without the password.
    pub url: String,
    /// From `password_file` (or a systemd credential) or `password_env`.
    pub password: Option<crate::secret::Secret>,
}

#[derive(Debug, Clone)]
pub struct QueueConfig {
    /// The agents' Unix socket (mode 0660).
    pub socket: PathBuf,
    /// The owners' Unix socket (mode 0600): decisions and listings.
    pub control_socket: PathBuf,
    /// Optional TCP listener for agents; every request needs the agent's token.
    pub listen: Option<String>,
    /// Largest accepted request body, in bytes.
    pub max_body_bytes: usize,
    /// Longest long-poll a client may ask for.
    pub max_wait: Duration,
    /// Serve Prometheus metrics at `/metrics` on the TCP listener too.
    pub metrics: bool,
    /// Open connections per agents' listener (Unix socket, TCP); `None`: as many as fit
    /// the open-file limit, up to [`crate::serve::DEFAULT_MAX_CONNECTIONS`].
    pub max_connections: Option<usize>,
    /// Requests one agent may have in flight at once on the agents' listeners, long-polls
    /// included (each holds a connection while it is answered); see `engine::gate`.
    pub max_connections_per_agent: usize,
    /// Long-polls one agent may hold open at once on the agents' listeners: `?wait=` on
    /// a request, task or run, a task claim with `wait`, the HTTP hook waiting.
    pub max_waits_per_agent: usize,
    /// How long a request head may take to arrive once its first byte has.
    pub header_timeout: Duration,
    /// How long a connection may wait for a request (a long-poll is not waiting).
    pub idle_timeout: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Plain,
    Json,
}

#[derive(Debug, Clone)]
pub struct LogConfig {
    pub format: LogFormat,
    /// A `tracing` filter, e.g. `info` or `gatebot=debug,info`.
    pub level: String,
}

/// What to do with requests from agents that have no `[agents.NAME]` table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnknownAgents {
    /// Refuse them with `unknown_agent`.
    Reject,
    /// Treat them as `supervised` agents with no lists: every call asks a human.
    Supervised,
}

impl UnknownAgents {
    /// As `bot.toml` writes it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            UnknownAgents::Reject => "reject",
            UnknownAgents::Supervised => "supervised",
        }
    }
}

/// The config file's text, or the error that says it cannot be read.
pub(crate) fn read(path: &Path) -> Result<String, ConfigError> {
    std::fs::read_to_string(path).map_err(|e| ConfigError {
        file: path.to_path_buf(),
        key: String::new(),
        line: None,
        message: format!(
            "cannot read the config file: {}",
            crate::files::io_words(&e)
        ),
    })
}

impl Config {
    /// The chat settings of `platform`'s table, when that platform is on.
    #[must_use]
    pub fn chat(&self, platform: &PlatformId) -> Option<&ChatSettings> {
        self.platforms
            .iter()
            .find(|p| p.key() == platform.as_str())
            .map(|p| p.chat_settings())
    }

    /// The settings of platform `P`, when it is on.
    #[must_use]
    pub fn platform<P: PlatformSettings>(&self) -> Option<&P> {
        self.platforms
            .iter()
            .find_map(|p| p.as_any().downcast_ref::<P>())
    }
}

#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub rules: AgentRules,
    /// When set, every request from this agent must carry `Authorization: Bearer <token>`.
    pub token: Option<Secret>,
}

impl Config {
    /// Reads and validates a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        Config::parse(&read(path)?, path)
    }

    /// Validates config text; `path` names the file in errors and anchors relative paths.
    /// The error is the first one in the file (see [`Config::check_text`] for all).
    pub fn parse(raw: &str, path: &Path) -> Result<Config, ConfigError> {
        Config::check_text(raw, path).map_err(|mut errors| errors.swap_remove(0))
    }

    /// Like [`Config::load`], but reports every error it finds, in file order
    /// (`gatebot check-config`, the daemon's start and reload).
    pub fn check(path: &Path) -> Result<Config, Vec<ConfigError>> {
        Config::check_text(&read(path).map_err(|e| vec![e])?, path)
    }

    /// Like [`Config::parse`], but with every error, in file order (never empty on
    /// `Err`): TOML's, the schema's (an entry with an error is left out and the rest
    /// read on, see `file::read_file`) and the checks across keys, except those
    /// about an entry already reported.
    pub fn check_text(raw: &str, path: &Path) -> Result<Config, Vec<ConfigError>> {
        let mut read = read_file(raw, path);
        let mut found = Vec::new();
        let config = read
            .file
            .take()
            .and_then(|file| Resolve::new(raw, path).resolve(file, &mut found));
        let mut errors = std::mem::take(&mut read.errors);
        errors.extend(found.into_iter().filter(|e| !read.covers(&e.key)));
        match config {
            Some(config) if errors.is_empty() => Ok(config),
            _ => {
                // A value left unresolved is always an error recorded, and one left out
                // an error reported.
                debug_assert!(!errors.is_empty());
                // In file order; errors without a line go last.
                errors.sort_by_key(|e| e.line.unwrap_or(usize::MAX));
                Err(errors)
            }
        }
    }

    /// The rules for an agent, applying `[policy] unknown_agents`.
    #[must_use]
    pub fn agent(&self, name: &str) -> Option<AgentConfig> {
        match self.agents.get(name) {
            Some(agent) => Some(agent.clone()),
            None => match self.unknown_agents {
                UnknownAgents::Reject => None,
                UnknownAgents::Supervised => Some(AgentConfig {
                    rules: AgentRules::with_tier(Tier::Supervised),
                    token: None,
                }),
            },
        }
    }
}

/// "1 error", "3 errors": how many [`Config::check`] found, for the line after them.
#[must_use]
pub fn count_errors(n: usize) -> String {
    if n == 1 {
        "1 error".to_string()
    } else {
        format!("{n} errors")
    }
}

/// [`Config::parse`] of `raw` as `/etc/gatebot/bot.toml`: what the unit tests of every
/// section (here and in the chat platforms) parse their snippets with.
#[cfg(test)]
pub(crate) fn parse_in_etc(raw: &str) -> Result<Config, ConfigError> {
    Config::parse(raw, Path::new("/etc/gatebot/bot.toml"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_in_etc as parse;
    use crate::policy::ToolApprovalMode;

    #[test]
    fn an_empty_file_gives_safe_defaults() {
        let c = parse("").unwrap();
        assert_eq!(c.default_ttl, Duration::from_secs(86_400));
        assert_eq!(c.unknown_agents, UnknownAgents::Reject);
        assert_eq!(c.policy.tool_approval_mode, ToolApprovalMode::Dangerous);
        assert_eq!(c.store.path, PathBuf::from("/etc/gatebot/gatebot.db"));
        assert_eq!(c.queue.socket, PathBuf::from("/etc/gatebot/gatebot.sock"));
        assert!(c.agent("nobody").is_none());
    }

    #[test]
    fn the_example_bot_toml_is_valid() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("bot.toml");
        let c = Config::load(&path).unwrap();
        assert!(!c.agents.is_empty());
    }

    #[test]
    fn every_duration_key_is_refused_outside_its_range_naming_key_and_range() {
        let agents = "[agents.a]\ntier = \"supervised\"\n";
        // (table, key, a value out of range, the words of the error)
        let cases = [
            (
                "policy",
                "max_ttl",
                "8000y",
                "from 1 second to 365 days; 8000 years is longer",
            ),
            (
                "policy",
                "default_ttl",
                "500ms",
                "from 1 second to 365 days",
            ),
            (
                "queue",
                "max_wait",
                "2h",
                "from 1 second to 1 hour; 2 hours is longer",
            ),
            (
                "queue",
                "header_timeout",
                "1h",
                "from 1 second to 10 minutes",
            ),
            ("queue", "idle_timeout", "500ms", "from 1 second to 1 hour"),
            (
                "inbox",
                "lease",
                "1ms",
                "from 1 second to 1 hour; 1 millisecond is shorter",
            ),
            (
                "inbox",
                "lease",
                "99999999999d",
                "99999999999 days is longer",
            ),
            ("inbox", "timeout_grace", "2d", "from 1 second to 1 hour"),
            ("inbox", "progress_every", "5h", "from 1 second to 1 hour"),
            (
                "inbox.timeouts",
                "research",
                "30d",
                "from 1 second to 7 days",
            ),
            ("promotion", "every", "2y", "from 1 second to 365 days"),
            (
                "promotion",
                "decline_quiet",
                "2y",
                "from 1 second to 365 days",
            ),
            ("promotion", "window", "30m", "from 1 hour to 3650 days"),
            (
                "grants",
                "allow_for",
                "36500d",
                "from 1 second to 365 days; 36500 days is longer",
            ),
            (
                "workflow",
                "check_in_ttl",
                "400d",
                "from 1 second to 365 days",
            ),
        ];
        for (table, key, value, words) in cases {
            let line = format!("{key} = \"{value}\"\n");
            let raw = match table {
                "inbox" => format!("{agents}[inbox]\n{line}[inbox.routes]\ndefault = \"a\"\n"),
                "inbox.timeouts" => {
                    format!("{agents}[inbox]\n[inbox.routes]\ndefault = \"a\"\n[{table}]\n{line}")
                }
                _ => format!("{agents}[{table}]\n{line}"),
            };
            let errors =
                Config::check_text(&raw, Path::new("/etc/gatebot/bot.toml")).expect_err(&raw);
            let e = errors
                .iter()
                .find(|e| e.key == format!("{table}.{key}"))
                .unwrap_or_else(|| panic!("{table}.{key}: {errors:?}"));
            assert!(e.message.contains(words), "{table}.{key}: {}", e.message);
            assert!(e.line.is_some(), "{e}");
        }
        let classifier = "[inbox]\n[inbox.routes]\ndefault = \"a\"\n[inbox.classifier]\n\
                          api_url = \"http://127.0.0.1:1/v1\"\nmodel = \"m\"\ntimeout = \"1h\"\n";
        let errors = Config::check_text(
            &format!("{agents}{classifier}"),
            Path::new("/etc/gatebot/bot.toml"),
        )
        .unwrap_err();
        assert!(
            errors.iter().any(|e| e.key == "inbox.classifier.timeout"
                && e.message.contains("from 100 milliseconds to 5 minutes")),
            "{errors:?}"
        );
    }

    #[test]
    fn unknown_agents_supervised_gives_a_supervised_stranger() {
        let c = parse("[policy]\nunknown_agents = \"supervised\"\n").unwrap();
        assert_eq!(c.agent("stranger").unwrap().rules.tier, Tier::Supervised);
    }

    #[test]
    fn check_reports_every_error_with_its_key_and_line_in_file_order() {
        let raw = "\
[queue]
max_body_bytes = 10
socket = \"same.sock\"
control_socket = \"same.sock\"

[policy]
default_ttl = \"30d\"

[agents.a]
tier = \"supervised\"
always_allow = [\"x\"]
deny = [\"x\"]

[agents.b]
tier = \"autonomous\"
confidence = { proceed_freely = 0.1, ask_human = 0.9 }

[slack]
bot_token = \"xoxb\"
app_token = \"xapp\"
";
        let errors = Config::check_text(raw, Path::new("/etc/gatebot/bot.toml")).unwrap_err();
        let found: Vec<(&str, Option<usize>)> =
            errors.iter().map(|e| (e.key.as_str(), e.line)).collect();
        assert_eq!(
            found,
            [
                ("queue.max_body_bytes", Some(2)),
                ("queue.control_socket", Some(4)),
                ("policy.default_ttl", Some(7)),
                ("agents.a.deny", Some(12)),
                ("agents.b.confidence", Some(16)),
                ("slack.approvers", Some(18)),
                ("slack.channels", Some(18)),
            ]
        );
        // `parse` (what the daemon uses) reports the first of them.
        let first = parse(raw).unwrap_err();
        assert_eq!(first, errors[0]);
    }
}
