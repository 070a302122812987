//! Step 1 of loading: `bot.toml` as written, deserialized with serde. Type errors,
//! unknown keys, bad durations and bad enum values stop here, with the key path and
//! line TOML reports.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use super::promotion::{FileGrants, FilePromotion, FileTool};
use super::{ConfigError, LogFormat, UnknownAgents};
use crate::policy::{ConfidencePreset, PatternOverrides, Tier, ToolApprovalMode};
use crate::slack::config::FileSlack;
use crate::telegram::config::FileTelegram;
use crate::time::parse_duration;

pub(super) fn parse_file(raw: &str, path: &Path) -> Result<FileConfig, ConfigError> {
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
pub(super) fn locate(raw: &str, table: &str, key: &str) -> Option<usize> {
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

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct FileConfig {
    pub(super) store: FileStore,
    pub(super) queue: FileQueue,
    pub(super) log: FileLog,
    pub(super) policy: FilePolicy,
    pub(super) tools: HashMap<String, FileTool>,
    pub(super) agents: BTreeMap<String, FileAgent>,
    pub(super) promotion: FilePromotion,
    pub(super) grants: FileGrants,
    pub(super) telegram: Option<FileTelegram>,
    pub(super) slack: Option<FileSlack>,
    pub(super) inbox: Option<super::inbox::FileInbox>,
    pub(super) workflow: super::workflow::FileWorkflow,
    pub(super) limits: super::limits::FileLimits,
}

/// `[queue] max_connections_per_agent` when not set: well below a listener's cap.
pub(crate) const DEFAULT_CONNECTIONS_PER_AGENT: usize = 64;
/// `[queue] max_waits_per_agent` when not set.
pub(crate) const DEFAULT_WAITS_PER_AGENT: usize = 32;
/// The most either per-agent cap may be.
pub(crate) const MAX_PER_AGENT: usize = 10_000;

/// A burst larger than this becomes one digest message (see `chat::conversation::digest`).
pub(crate) const DEFAULT_DIGEST_AFTER: usize = 5;

/// The `digest_after` of every chat platform's table.
pub(crate) fn default_digest_after() -> usize {
    DEFAULT_DIGEST_AFTER
}

#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct FileStore {
    pub(super) path: PathBuf,
    pub(super) max_size: Option<String>,
    pub(super) reserve: Option<String>,
}

impl Default for FileStore {
    fn default() -> Self {
        FileStore {
            path: PathBuf::from("gatebot.db"),
            max_size: None,
            reserve: None,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct FileQueue {
    pub(super) socket: PathBuf,
    pub(super) control_socket: PathBuf,
    pub(super) listen: Option<String>,
    pub(super) max_body_bytes: usize,
    #[serde(deserialize_with = "de_duration")]
    pub(super) max_wait: Duration,
    pub(super) metrics: bool,
    pub(super) max_connections: Option<usize>,
    pub(super) max_connections_per_agent: usize,
    pub(super) max_waits_per_agent: usize,
    #[serde(deserialize_with = "de_duration")]
    pub(super) header_timeout: Duration,
    #[serde(deserialize_with = "de_duration")]
    pub(super) idle_timeout: Duration,
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
            max_connections: None,
            max_connections_per_agent: DEFAULT_CONNECTIONS_PER_AGENT,
            max_waits_per_agent: DEFAULT_WAITS_PER_AGENT,
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct FileLog {
    pub(super) format: LogFormat,
    pub(super) level: String,
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
pub(super) struct FilePolicy {
    pub(super) tool_approval_mode: ToolApprovalMode,
    #[serde(deserialize_with = "de_duration")]
    pub(super) default_ttl: Duration,
    #[serde(deserialize_with = "de_duration")]
    pub(super) max_ttl: Duration,
    pub(super) unknown_agents: UnknownAgents,
    pub(super) internal_tools: BTreeSet<String>,
    pub(super) patterns: PatternOverrides,
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

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileAgent {
    pub(super) tier: Tier,
    #[serde(default)]
    pub(super) require_approval_for: BTreeSet<String>,
    #[serde(default)]
    pub(super) always_allow: BTreeSet<String>,
    #[serde(default)]
    pub(super) deny: BTreeSet<String>,
    #[serde(default)]
    pub(super) checkpoint_before: BTreeSet<String>,
    #[serde(default = "yes")]
    pub(super) read_only_commands: bool,
    #[serde(default)]
    pub(super) confidence: Option<FileConfidence>,
    pub(super) token: Option<String>,
    pub(super) token_env: Option<String>,
    pub(super) token_file: Option<PathBuf>,
    #[serde(default)]
    pub(super) workflow: Option<super::workflow::FileWorkflow>,
    #[serde(default)]
    pub(super) limits: Option<super::limits::FileLimits>,
}

/// `confidence = "standard"` or `confidence = { preset = "full", ask_human = 0.4 }`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum FileConfidence {
    Preset(ConfidencePreset),
    Custom(FileThresholds),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileThresholds {
    pub(super) preset: Option<ConfidencePreset>,
    pub(super) proceed_freely: Option<f64>,
    pub(super) proceed_cautiously: Option<f64>,
    pub(super) ask_human: Option<f64>,
}

pub(super) fn de_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let s = String::deserialize(d)?;
    parse_duration(&s).map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use crate::config::parse_in_etc as parse;

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
}
