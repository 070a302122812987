//! `bot.toml`: loading, validation and the resolved configuration.
//!
//! Loading happens in two steps:
//! 1. the file is deserialized into the `File*` structs; type errors, unknown keys,
//!    bad durations, bad enum values and bad regexes are reported by TOML with the
//!    key path, line and column;
//! 2. the result is resolved into [`Config`]: secrets are read from the environment
//!    or files, relative paths are anchored at the config file's directory, and
//!    cross-key rules are checked. Errors here also name the key path and, where the
//!    key is in the file, its line. This step does not stop at the first error:
//!    [`Config::check`] reports them all (serde stops at the first in step 1).
//!
//! Every key is documented in the example `bot.toml` at the top of the repository.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use crate::names::valid_agent_name;
use crate::policy::{
    AgentRules, ConfidencePreset, ConfidenceThresholds, ContentPatterns, PatternOverrides, Policy,
    Tier, ToolApprovalMode, ToolClass,
};
use crate::secret::Secret;
use crate::time::{format_duration, parse_duration};

/// A configuration error: what is wrong, where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file the error is in.
    pub file: PathBuf,
    /// The key path (`agents.mailer.tier`), empty when the whole file is at fault.
    pub key: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if !self.key.is_empty() {
            write!(f, ": `{}`", self.key)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

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
    /// `None` when `[telegram]` is absent or has no token: the channel is off.
    pub telegram: Option<TelegramConfig>,
    /// `None` when `[slack]` is absent or has no tokens: the channel is off.
    pub slack: Option<SlackConfig>,
    /// Why a configured chat channel is off (e.g. its token variable is unset).
    pub notes: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct TelegramConfig {
    pub token: Secret,
    /// Bot API base URL, without the trailing `/bot<token>`.
    pub api_url: String,
    /// Chats prompts go to (private chats or groups).
    pub chats: Vec<i64>,
    /// Telegram user ids allowed to decide.
    pub approvers: BTreeSet<u64>,
    /// More requests than this waiting for a prompt in one chat get one digest.
    pub digest_after: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SlackMode {
    /// Socket Mode: gatebot opens a WebSocket to Slack; no public URL needed.
    Socket,
    /// HTTP events: Slack posts to `events_listen`; requests are signature-checked.
    Http,
}

#[derive(Debug, Clone)]
pub struct SlackConfig {
    pub bot_token: Secret,
    /// Needed in Socket Mode.
    pub app_token: Option<Secret>,
    /// Needed in HTTP mode.
    pub signing_secret: Option<Secret>,
    /// Web API base URL, e.g. `https://slack.com/api` (no trailing slash).
    pub api_url: String,
    pub mode: SlackMode,
    /// Address the HTTP events listener binds (HTTP mode).
    pub events_listen: Option<String>,
    /// Channel ids prompts go to.
    pub channels: Vec<String>,
    /// Slack user ids allowed to decide.
    pub approvers: BTreeSet<String>,
    /// More requests than this waiting for a prompt in one channel get one digest.
    pub digest_after: usize,
}

#[derive(Debug, Clone)]
pub struct StoreConfig {
    pub path: PathBuf,
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

#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub rules: AgentRules,
    /// When set, every request from this agent must carry `Authorization: Bearer <token>`.
    pub token: Option<Secret>,
}

impl Config {
    /// Reads and validates a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let raw = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.to_path_buf(),
            key: String::new(),
            line: None,
            message: format!("cannot read the config file: {e}"),
        })?;
        Config::parse(&raw, path)
    }

    /// Validates config text; `path` names the file in errors and anchors relative paths.
    /// The error is the first one in the file (see [`Config::check_text`] for all).
    pub fn parse(raw: &str, path: &Path) -> Result<Config, ConfigError> {
        Config::check_text(raw, path).map_err(|mut errors| errors.swap_remove(0))
    }

    /// Like [`Config::load`], but reports every error it finds, in file order
    /// (`gatebot check-config`). A file that is not valid TOML for the schema gives
    /// one error: the deserializer stops there.
    pub fn check(path: &Path) -> Result<Config, Vec<ConfigError>> {
        let raw = std::fs::read_to_string(path).map_err(|e| {
            vec![ConfigError {
                file: path.to_path_buf(),
                key: String::new(),
                line: None,
                message: format!("cannot read the config file: {e}"),
            }]
        })?;
        Config::check_text(&raw, path)
    }

    /// Like [`Config::parse`], but with every error, in file order (never empty on `Err`).
    pub fn check_text(raw: &str, path: &Path) -> Result<Config, Vec<ConfigError>> {
        let file: FileConfig = parse_file(raw, path).map_err(|e| vec![e])?;
        let ctx = Resolve {
            raw,
            path,
            base: path
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from(".")),
        };
        let mut errors = Vec::new();
        match ctx.resolve(file, &mut errors) {
            Some(config) if errors.is_empty() => Ok(config),
            _ => {
                // Errors without a line (none so far) go last.
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

fn parse_file(raw: &str, path: &Path) -> Result<FileConfig, ConfigError> {
    let err = |key: String, e: toml::de::Error| ConfigError {
        file: path.to_path_buf(),
        line: e.span().map(|s| line_of(raw, s.start)),
        key,
        message: e.message().trim().to_string(),
    };
    let de = toml::Deserializer::parse(raw).map_err(|e| err(String::new(), e))?;
    serde_path_to_error::deserialize(de).map_err(|e| {
        let key = e.path().to_string();
        let key = if key == "." { String::new() } else { key };
        err(key, e.into_inner())
    })
}

/// 1-based line of a byte offset.
fn line_of(raw: &str, offset: usize) -> usize {
    raw[..offset.min(raw.len())].matches('\n').count() + 1
}

/// The line of `key` inside `[table]` (dotted, e.g. `agents.mailer`), by a plain scan.
/// Good enough for error messages about keys we know are present.
fn locate(raw: &str, table: &str, key: &str) -> Option<usize> {
    let mut in_table = table.is_empty();
    let header = format!("[{table}]");
    for (i, line) in raw.lines().enumerate() {
        let t = line.trim();
        if t.starts_with('[') {
            in_table = t.replace(' ', "") == header.replace(' ', "");
            if in_table && key.is_empty() {
                return Some(i + 1);
            }
            continue;
        }
        if in_table && !key.is_empty() {
            if let Some((k, _)) = t.split_once('=') {
                if k.trim().trim_matches('"') == key {
                    return Some(i + 1);
                }
            }
        }
    }
    None
}

// ---- the file as written -------------------------------------------------------------

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct FileConfig {
    store: FileStore,
    queue: FileQueue,
    log: FileLog,
    policy: FilePolicy,
    tools: HashMap<String, ToolClass>,
    agents: BTreeMap<String, FileAgent>,
    telegram: Option<FileTelegram>,
    slack: Option<FileSlack>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTelegram {
    token: Option<String>,
    token_env: Option<String>,
    token_file: Option<PathBuf>,
    #[serde(default = "default_telegram_api")]
    api_url: String,
    #[serde(default)]
    chats: Vec<i64>,
    #[serde(default)]
    approvers: BTreeSet<u64>,
    #[serde(default = "default_digest_after")]
    digest_after: usize,
}

fn default_telegram_api() -> String {
    "https://api.telegram.org".into()
}

/// A burst larger than this becomes one digest message (see `channel::digest`).
pub const DEFAULT_DIGEST_AFTER: usize = 5;

fn default_digest_after() -> usize {
    DEFAULT_DIGEST_AFTER
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSlack {
    bot_token: Option<String>,
    bot_token_env: Option<String>,
    bot_token_file: Option<PathBuf>,
    app_token: Option<String>,
    app_token_env: Option<String>,
    app_token_file: Option<PathBuf>,
    signing_secret: Option<String>,
    signing_secret_env: Option<String>,
    signing_secret_file: Option<PathBuf>,
    #[serde(default = "default_slack_api")]
    api_url: String,
    #[serde(default = "default_slack_mode")]
    mode: SlackMode,
    events_listen: Option<String>,
    #[serde(default)]
    channels: Vec<String>,
    #[serde(default)]
    approvers: BTreeSet<String>,
    #[serde(default = "default_digest_after")]
    digest_after: usize,
}

fn default_slack_api() -> String {
    "https://slack.com/api".into()
}

fn default_slack_mode() -> SlackMode {
    SlackMode::Socket
}

#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct FileStore {
    path: PathBuf,
}

impl Default for FileStore {
    fn default() -> Self {
        FileStore {
            path: PathBuf::from("gatebot.db"),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct FileQueue {
    socket: PathBuf,
    control_socket: PathBuf,
    listen: Option<String>,
    max_body_bytes: usize,
    #[serde(deserialize_with = "de_duration")]
    max_wait: Duration,
    metrics: bool,
}

impl Default for FileQueue {
    fn default() -> Self {
        FileQueue {
            socket: PathBuf::from("gatebot.sock"),
            control_socket: PathBuf::from("gatebot-control.sock"),
            listen: None,
            max_body_bytes: 64 * 1024,
            max_wait: Duration::from_secs(300),
            metrics: false,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct FileLog {
    format: LogFormat,
    level: String,
}

impl Default for FileLog {
    fn default() -> Self {
        FileLog {
            format: LogFormat::Plain,
            level: "info".into(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct FilePolicy {
    tool_approval_mode: ToolApprovalMode,
    #[serde(deserialize_with = "de_duration")]
    default_ttl: Duration,
    #[serde(deserialize_with = "de_duration")]
    max_ttl: Duration,
    unknown_agents: UnknownAgents,
    internal_tools: BTreeSet<String>,
    patterns: PatternOverrides,
}

impl Default for FilePolicy {
    fn default() -> Self {
        FilePolicy {
            tool_approval_mode: ToolApprovalMode::Dangerous,
            default_ttl: Duration::from_secs(24 * 3600),
            max_ttl: Duration::from_secs(7 * 24 * 3600),
            unknown_agents: UnknownAgents::Reject,
            internal_tools: BTreeSet::new(),
            patterns: PatternOverrides::default(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileAgent {
    tier: Tier,
    #[serde(default)]
    require_approval_for: BTreeSet<String>,
    #[serde(default)]
    always_allow: BTreeSet<String>,
    #[serde(default)]
    deny: BTreeSet<String>,
    #[serde(default)]
    checkpoint_before: BTreeSet<String>,
    #[serde(default)]
    confidence: Option<FileConfidence>,
    token: Option<String>,
    token_env: Option<String>,
    token_file: Option<PathBuf>,
}

/// `confidence = "standard"` or `confidence = { preset = "full", ask_human = 0.4 }`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum FileConfidence {
    Preset(ConfidencePreset),
    Custom(FileThresholds),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileThresholds {
    preset: Option<ConfidencePreset>,
    proceed_freely: Option<f64>,
    proceed_cautiously: Option<f64>,
    ask_human: Option<f64>,
}

fn de_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let s = String::deserialize(d)?;
    parse_duration(&s).map_err(serde::de::Error::custom)
}

// ---- resolution ----------------------------------------------------------------------

struct Resolve<'a> {
    raw: &'a str,
    path: &'a Path,
    base: PathBuf,
}

/// Keeps the value of `r`, or records its error and gives `None`.
fn keep<T>(errors: &mut Vec<ConfigError>, r: Result<T, ConfigError>) -> Option<T> {
    r.map_err(|e| errors.push(e)).ok()
}

impl Resolve<'_> {
    fn error(&self, table: &str, key: &str, message: impl Into<String>) -> ConfigError {
        let full = match (table.is_empty(), key.is_empty()) {
            (true, _) => key.to_string(),
            (false, true) => table.to_string(),
            (false, false) => format!("{table}.{key}"),
        };
        ConfigError {
            file: self.path.to_path_buf(),
            key: full,
            line: locate(self.raw, table, key).or_else(|| locate(self.raw, table, "")),
            message: message.into(),
        }
    }

    fn anchor(&self, p: &Path) -> PathBuf {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.base.join(p)
        }
    }

    /// Resolves the file, recording every error it finds in `errors`. Returns `None`
    /// when a value the config needs could not be resolved; the caller must check
    /// `errors` either way (the checks that leave no value behind only record).
    fn resolve(&self, file: FileConfig, errors: &mut Vec<ConfigError>) -> Option<Config> {
        let FileConfig {
            store,
            queue,
            log,
            policy,
            tools,
            agents,
            telegram,
            slack,
        } = file;
        let mut notes = Vec::new();
        let telegram = telegram.and_then(|t| self.telegram(t, &mut notes, errors));
        let slack = slack.and_then(|s| self.slack(s, &mut notes, errors));

        if queue.max_body_bytes < 1024 {
            errors.push(self.error("queue", "max_body_bytes", "must be at least 1024"));
        }
        if let Some(listen) = &queue.listen {
            if listen.parse::<std::net::SocketAddr>().is_err() {
                errors.push(self.error(
                    "queue",
                    "listen",
                    format!("`{listen}` is not an address like 127.0.0.1:8377"),
                ));
            }
        }
        if queue.metrics && queue.listen.is_none() {
            errors.push(self.error(
                "queue",
                "metrics",
                "metrics are served on the TCP listener: set `queue.listen` too (the control socket always serves /metrics)",
            ));
        }
        if queue.socket == queue.control_socket {
            errors.push(self.error(
                "queue",
                "control_socket",
                "must differ from `queue.socket`: agents must not reach the owners' socket",
            ));
        }
        if tracing_subscriber::EnvFilter::try_new(&log.level).is_err() {
            errors.push(self.error(
                "log",
                "level",
                format!(
                    "`{}` is not a log filter like info or gatebot=debug",
                    log.level
                ),
            ));
        }
        if policy.default_ttl > policy.max_ttl {
            errors.push(self.error(
                "policy",
                "default_ttl",
                format!(
                    "{} is longer than `policy.max_ttl` ({})",
                    format_duration(policy.default_ttl),
                    format_duration(policy.max_ttl)
                ),
            ));
        }
        let patterns = ContentPatterns::new(&policy.patterns).map_err(|e| {
            self.error(
                "policy.patterns",
                e.key,
                if e.key == "internal_domains" {
                    e.message
                } else {
                    format!("invalid regular expression: {}", e.message)
                },
            )
        });
        let patterns = keep(errors, patterns);

        let mut resolved = BTreeMap::new();
        let mut tokens: HashMap<String, String> = HashMap::new();
        for (name, agent) in agents {
            let table = format!("agents.{name}");
            if !valid_agent_name(&name) {
                errors.push(self.error(
                    &table,
                    "",
                    "agent names may use only letters, digits, '-', '_' and '.' (at most 64)",
                ));
            }
            let token = keep(
                errors,
                self.secret(
                    &table,
                    "token",
                    agent.token,
                    agent.token_env,
                    agent.token_file,
                ),
            );
            if let Some(Some(t)) = &token {
                if let Some(other) = tokens.insert(t.expose().to_string(), name.clone()) {
                    errors.push(self.error(
                        &table,
                        "token",
                        format!("agents `{other}` and `{name}` share a token; each agent needs its own so one cannot act as the other"),
                    ));
                }
            }
            if let Some(tool) = agent.always_allow.intersection(&agent.deny).next() {
                errors.push(self.error(
                    &table,
                    "deny",
                    format!("`{tool}` is in both always_allow and deny"),
                ));
            }
            let confidence = keep(errors, self.confidence(&table, agent.confidence));
            let (Some(token), Some(confidence)) = (token, confidence) else {
                continue;
            };
            resolved.insert(
                name,
                AgentConfig {
                    rules: AgentRules {
                        tier: agent.tier,
                        require_approval_for: agent.require_approval_for,
                        always_allow: agent.always_allow,
                        deny: agent.deny,
                        confidence,
                        checkpoint_before: agent.checkpoint_before,
                    },
                    token,
                },
            );
        }

        Some(Config {
            source: self.path.to_path_buf(),
            store: StoreConfig {
                path: self.anchor(&store.path),
            },
            queue: QueueConfig {
                socket: self.anchor(&queue.socket),
                control_socket: self.anchor(&queue.control_socket),
                listen: queue.listen,
                max_body_bytes: queue.max_body_bytes,
                max_wait: queue.max_wait,
                metrics: queue.metrics,
            },
            log: LogConfig {
                format: log.format,
                level: log.level,
            },
            policy: Policy {
                tool_classes: tools,
                tool_approval_mode: policy.tool_approval_mode,
                internal_tools: policy.internal_tools,
                patterns: patterns?,
            },
            default_ttl: policy.default_ttl,
            max_ttl: policy.max_ttl,
            unknown_agents: policy.unknown_agents,
            agents: resolved,
            telegram,
            slack,
            notes,
        })
    }

    /// A chat secret: like [`Resolve::secret`], except that an unset environment
    /// variable turns the channel off (with a note) instead of failing, so the same
    /// config runs with and without chat tokens.
    fn chat_secret(
        &self,
        table: &str,
        key: &str,
        inline: Option<String>,
        env: Option<String>,
        file: Option<PathBuf>,
        notes: &mut Vec<String>,
    ) -> Result<Option<Secret>, ConfigError> {
        if let Some(var) = &env {
            if inline.is_none() && file.is_none() && std::env::var_os(var).is_none() {
                notes.push(format!(
                    "{table}: off, because the environment variable `{var}` ({table}.{key}_env) is not set"
                ));
                return Ok(None);
            }
        }
        self.secret(table, key, inline, env, file)
    }

    fn url(&self, table: &str, url: &str) -> Result<String, ConfigError> {
        let trimmed = url.trim_end_matches('/');
        if !(trimmed.starts_with("https://") || trimmed.starts_with("http://")) {
            return Err(self.error(table, "api_url", format!("`{url}` is not an http(s) URL")));
        }
        Ok(trimmed.to_string())
    }

    fn digest_after(&self, table: &str, n: usize) -> Result<usize, ConfigError> {
        if n == 0 {
            return Err(self.error(
                table,
                "digest_after",
                "must be at least 1 (the most requests posted one by one before a digest)",
            ));
        }
        Ok(n)
    }

    /// The `[telegram]` table; `None` when it is off or has errors (recorded).
    fn telegram(
        &self,
        t: FileTelegram,
        notes: &mut Vec<String>,
        errors: &mut Vec<ConfigError>,
    ) -> Option<TelegramConfig> {
        let api_url = keep(errors, self.url("telegram", &t.api_url));
        let token = keep(
            errors,
            self.chat_secret(
                "telegram",
                "token",
                t.token,
                t.token_env,
                t.token_file,
                notes,
            ),
        )?;
        let Some(token) = token else {
            if !notes.iter().any(|n| n.starts_with("telegram")) {
                notes.push("telegram: off, because no token is set".into());
            }
            return None;
        };
        let digest_after = keep(errors, self.digest_after("telegram", t.digest_after));
        if t.approvers.is_empty() {
            errors.push(self.error(
                "telegram",
                "approvers",
                "list the Telegram user ids allowed to decide; with none, nobody could approve",
            ));
            return None;
        }
        // With no chats, prompts go to each approver's private chat (chat id = user id).
        let chats = if t.chats.is_empty() {
            t.approvers.iter().map(|&u| u as i64).collect()
        } else {
            t.chats
        };
        let digest_after = digest_after?;
        Some(TelegramConfig {
            token,
            api_url: api_url?,
            chats,
            approvers: t.approvers,
            digest_after,
        })
    }

    /// The `[slack]` table; `None` when it is off or has errors (recorded).
    fn slack(
        &self,
        s: FileSlack,
        notes: &mut Vec<String>,
        errors: &mut Vec<ConfigError>,
    ) -> Option<SlackConfig> {
        let api_url = keep(errors, self.url("slack", &s.api_url));
        let bot_token = keep(
            errors,
            self.chat_secret(
                "slack",
                "bot_token",
                s.bot_token,
                s.bot_token_env,
                s.bot_token_file,
                notes,
            ),
        )?;
        let Some(bot_token) = bot_token else {
            if !notes.iter().any(|n| n.starts_with("slack")) {
                notes.push("slack: off, because no bot token is set".into());
            }
            return None;
        };
        let app_token = keep(
            errors,
            self.chat_secret(
                "slack",
                "app_token",
                s.app_token,
                s.app_token_env,
                s.app_token_file,
                notes,
            ),
        )?;
        let signing_secret = keep(
            errors,
            self.chat_secret(
                "slack",
                "signing_secret",
                s.signing_secret,
                s.signing_secret_env,
                s.signing_secret_file,
                notes,
            ),
        )?;
        match s.mode {
            SlackMode::Socket if app_token.is_none() => {
                notes.push("slack: off, because Socket Mode needs an app token (xapp-…)".into());
                return None;
            }
            SlackMode::Http if signing_secret.is_none() => {
                notes.push("slack: off, because HTTP mode needs a signing secret".into());
                return None;
            }
            _ => {}
        }
        let before = errors.len();
        match &s.events_listen {
            None if s.mode == SlackMode::Http => errors.push(self.error(
                "slack",
                "events_listen",
                "HTTP mode needs an address to receive Slack's requests, like 127.0.0.1:3000",
            )),
            Some(l) if l.parse::<std::net::SocketAddr>().is_err() => errors.push(self.error(
                "slack",
                "events_listen",
                format!("`{l}` is not an address like 127.0.0.1:3000"),
            )),
            _ => {}
        }
        if s.approvers.is_empty() {
            errors.push(self.error(
                "slack",
                "approvers",
                "list the Slack user ids (U…) allowed to decide; with none, nobody could approve",
            ));
        }
        if s.channels.is_empty() {
            errors.push(self.error(
                "slack",
                "channels",
                "list the channel ids (C…) where prompts go",
            ));
        }
        let digest_after = keep(errors, self.digest_after("slack", s.digest_after));
        if errors.len() > before {
            return None;
        }
        Some(SlackConfig {
            bot_token,
            app_token,
            signing_secret,
            api_url: api_url?,
            mode: s.mode,
            events_listen: s.events_listen,
            channels: s.channels,
            approvers: s.approvers,
            digest_after: digest_after?,
        })
    }

    /// Resolves `KEY`, `KEY_env` or `KEY_file` (at most one may be set).
    fn secret(
        &self,
        table: &str,
        key: &str,
        inline: Option<String>,
        env: Option<String>,
        file: Option<PathBuf>,
    ) -> Result<Option<Secret>, ConfigError> {
        let set = [inline.is_some(), env.is_some(), file.is_some()]
            .iter()
            .filter(|x| **x)
            .count();
        if set > 1 {
            return Err(self.error(
                table,
                key,
                format!("set only one of `{key}`, `{key}_env` and `{key}_file`"),
            ));
        }
        let value = if let Some(v) = inline {
            v
        } else if let Some(var) = env {
            std::env::var(&var).map_err(|_| {
                self.error(
                    table,
                    &format!("{key}_env"),
                    format!("environment variable `{var}` is not set"),
                )
            })?
        } else if let Some(f) = file {
            let f = self.anchor(&self.expand_credentials(table, key, &f)?);
            std::fs::read_to_string(&f)
                .map_err(|e| {
                    self.error(
                        table,
                        &format!("{key}_file"),
                        format!("cannot read `{}`: {e}", f.display()),
                    )
                })?
                .trim()
                .to_string()
        } else {
            return Ok(None);
        };
        if value.trim().is_empty() {
            return Err(self.error(table, key, "is empty"));
        }
        Ok(Some(Secret::new(value)))
    }

    /// Expands `${CREDENTIALS_DIRECTORY}` (systemd's `LoadCredential=`) in a `*_file` path.
    fn expand_credentials(&self, table: &str, key: &str, f: &Path) -> Result<PathBuf, ConfigError> {
        const VAR: &str = "${CREDENTIALS_DIRECTORY}";
        let text = f.to_string_lossy();
        if !text.contains(VAR) {
            return Ok(f.to_path_buf());
        }
        let dir = std::env::var("CREDENTIALS_DIRECTORY").map_err(|_| {
            self.error(
                table,
                &format!("{key}_file"),
                "uses ${CREDENTIALS_DIRECTORY}, which systemd sets with LoadCredential=; it is not set here",
            )
        })?;
        Ok(PathBuf::from(text.replace(VAR, &dir)))
    }

    fn confidence(
        &self,
        table: &str,
        c: Option<FileConfidence>,
    ) -> Result<ConfidenceThresholds, ConfigError> {
        let t = match c {
            None => ConfidencePreset::Standard.thresholds(),
            Some(FileConfidence::Preset(p)) => p.thresholds(),
            Some(FileConfidence::Custom(c)) => {
                let base = c.preset.unwrap_or(ConfidencePreset::Standard).thresholds();
                ConfidenceThresholds {
                    proceed_freely: c.proceed_freely.unwrap_or(base.proceed_freely),
                    proceed_cautiously: c.proceed_cautiously.unwrap_or(base.proceed_cautiously),
                    ask_human: c.ask_human.unwrap_or(base.ask_human),
                }
            }
        };
        let ok = |x: f64| (0.0..=1.0).contains(&x);
        let in_range = ok(t.proceed_freely) && ok(t.proceed_cautiously) && ok(t.ask_human);
        let ordered =
            t.ask_human <= t.proceed_cautiously && t.proceed_cautiously <= t.proceed_freely;
        if !(in_range && ordered) {
            return Err(self.error(
                table,
                "confidence",
                "thresholds must lie in 0.0..=1.0 with ask_human <= proceed_cautiously <= proceed_freely",
            ));
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(raw: &str) -> Result<Config, ConfigError> {
        Config::parse(raw, Path::new("/etc/gatebot/bot.toml"))
    }

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
    fn a_bad_tier_names_key_and_line() {
        let e = parse("[agents.mailer]\n\ntier = \"yolo\"\n").unwrap_err();
        assert_eq!(e.key, "agents.mailer.tier");
        assert_eq!(e.line, Some(3));
        assert!(e.message.contains("unknown variant"), "{e}");
    }

    #[test]
    fn a_bad_duration_names_key_and_line() {
        let e = parse("[policy]\ndefault_ttl = \"soon\"\n").unwrap_err();
        assert_eq!(e.key, "policy.default_ttl");
        assert_eq!(e.line, Some(2));
        assert!(e.message.contains("30m"), "{e}");
    }

    #[test]
    fn an_unknown_key_is_an_error() {
        let e = parse("[queue]\nsocket = \"a.sock\"\nsockett = 1\n").unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(e.message.contains("unknown field"), "{e}");
    }

    #[test]
    fn a_bad_pattern_names_its_key() {
        let e = parse("[policy.patterns]\npricing = \"(unclosed\"\n").unwrap_err();
        assert_eq!(e.key, "policy.patterns.pricing");
        assert_eq!(e.line, Some(2));
    }

    #[test]
    fn a_missing_token_env_is_an_error() {
        let e = parse(
            "[agents.a]\ntier = \"supervised\"\ntoken_env = \"GATEBOT_TEST_SURELY_UNSET_VAR\"\n",
        )
        .unwrap_err();
        assert_eq!(e.key, "agents.a.token_env");
        assert_eq!(e.line, Some(3));
        assert!(e.message.contains("GATEBOT_TEST_SURELY_UNSET_VAR"));
    }

    #[test]
    fn two_token_sources_are_an_error() {
        let e = parse("[agents.a]\ntier = \"supervised\"\ntoken = \"x\"\ntoken_env = \"Y\"\n")
            .unwrap_err();
        assert!(e.message.contains("only one"), "{e}");
    }

    #[test]
    fn shared_tokens_are_an_error() {
        let e = parse(
            "[agents.a]\ntier = \"supervised\"\ntoken = \"same\"\n[agents.b]\ntier = \"supervised\"\ntoken = \"same\"\n",
        )
        .unwrap_err();
        assert!(e.message.contains("share a token"), "{e}");
        assert!(
            !e.to_string().contains("same\""),
            "the token must not be echoed"
        );
    }

    #[test]
    fn a_token_file_is_read_and_trimmed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tok"), "s3cret\n").unwrap();
        let cfg = dir.path().join("bot.toml");
        std::fs::write(
            &cfg,
            "[agents.a]\ntier = \"supervised\"\ntoken_file = \"tok\"\n",
        )
        .unwrap();
        let c = Config::load(&cfg).unwrap();
        assert_eq!(c.agents["a"].token.as_ref().unwrap().expose(), "s3cret");
    }

    #[test]
    fn token_files_can_name_systemd_credentials() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("mailer-token"), "from-credentials\n").unwrap();
        let raw = "[agents.a]\ntier = \"supervised\"\ntoken_file = \"${CREDENTIALS_DIRECTORY}/mailer-token\"\n";
        // Only this test touches CREDENTIALS_DIRECTORY.
        std::env::remove_var("CREDENTIALS_DIRECTORY");
        let e = parse(raw).unwrap_err();
        assert_eq!(e.key, "agents.a.token_file");
        assert!(e.message.contains("LoadCredential"), "{e}");
        std::env::set_var("CREDENTIALS_DIRECTORY", dir.path());
        let c = parse(raw).unwrap();
        std::env::remove_var("CREDENTIALS_DIRECTORY");
        assert_eq!(
            c.agents["a"].token.as_ref().unwrap().expose(),
            "from-credentials"
        );
    }

    #[test]
    fn confidence_presets_and_overrides_resolve() {
        let c = parse(
            "[agents.a]\ntier = \"autonomous\"\nconfidence = \"full\"\n[agents.b]\ntier = \"autonomous\"\nconfidence = { preset = \"minimal\", ask_human = 0.6 }\n",
        )
        .unwrap();
        assert_eq!(c.agents["a"].rules.confidence.proceed_freely, 0.7);
        assert_eq!(c.agents["b"].rules.confidence.proceed_freely, 0.99);
        assert_eq!(c.agents["b"].rules.confidence.ask_human, 0.6);
    }

    #[test]
    fn disordered_confidence_thresholds_are_an_error() {
        let e = parse(
            "[agents.a]\ntier = \"autonomous\"\nconfidence = { proceed_freely = 0.5, ask_human = 0.9 }\n",
        )
        .unwrap_err();
        assert_eq!(e.key, "agents.a.confidence");
    }

    #[test]
    fn unknown_agents_supervised_gives_a_supervised_stranger() {
        let c = parse("[policy]\nunknown_agents = \"supervised\"\n").unwrap();
        assert_eq!(c.agent("stranger").unwrap().rules.tier, Tier::Supervised);
    }

    #[test]
    fn default_ttl_longer_than_max_is_an_error() {
        let e = parse("[policy]\ndefault_ttl = \"30d\"\n").unwrap_err();
        assert_eq!(e.key, "policy.default_ttl");
    }

    #[test]
    fn same_socket_twice_is_an_error() {
        let e = parse("[queue]\nsocket = \"a.sock\"\ncontrol_socket = \"a.sock\"\n").unwrap_err();
        assert_eq!(e.key, "queue.control_socket");
    }

    #[test]
    fn chat_channels_are_off_without_tokens() {
        let c = parse(
            "[telegram]\ntoken_env = \"GATEBOT_TEST_UNSET_TG\"\napprovers = [1]\n[slack]\nbot_token_env = \"GATEBOT_TEST_UNSET_SL\"\n",
        )
        .unwrap();
        assert!(c.telegram.is_none() && c.slack.is_none());
        assert_eq!(c.notes.len(), 2, "{:?}", c.notes);
        assert!(c.notes[0].contains("GATEBOT_TEST_UNSET_TG"));
    }

    #[test]
    fn telegram_needs_approvers_and_defaults_chats_to_them() {
        let e = parse("[telegram]\ntoken = \"1:x\"\n").unwrap_err();
        assert_eq!(e.key, "telegram.approvers");
        let c = parse(
            "[telegram]\ntoken = \"1:x\"\napprovers = [42]\napi_url = \"http://127.0.0.1:9/\"\n",
        )
        .unwrap();
        let t = c.telegram.unwrap();
        assert_eq!(t.chats, vec![42]);
        assert_eq!(t.api_url, "http://127.0.0.1:9");
    }

    #[test]
    fn slack_needs_channels_approvers_and_the_mode_s_secret() {
        let e =
            parse("[slack]\nbot_token = \"xoxb\"\napp_token = \"xapp\"\napprovers = [\"U1\"]\n")
                .unwrap_err();
        assert_eq!(e.key, "slack.channels");
        let c = parse("[slack]\nbot_token = \"xoxb\"\napprovers = [\"U1\"]\nchannels = [\"C1\"]\n")
            .unwrap();
        assert!(c.slack.is_none(), "socket mode without an app token is off");
        let c = parse("[slack]\nbot_token = \"xoxb\"\napp_token = \"xapp\"\napprovers = [\"U1\"]\nchannels = [\"C1\"]\n")
            .unwrap();
        assert_eq!(c.slack.unwrap().mode, SlackMode::Socket);
        let e = parse("[slack]\nmode = \"http\"\nbot_token = \"xoxb\"\nsigning_secret = \"s\"\napprovers = [\"U1\"]\nchannels = [\"C1\"]\n")
            .unwrap_err();
        assert_eq!(e.key, "slack.events_listen");
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
