//! Step 1 of loading: `bot.toml` as written, deserialized with serde. Type errors,
//! unknown keys, bad durations and bad enum values stop here, with the key path and
//! line TOML reports. Each table's type lives with the section (or chat platform) that
//! resolves it; this is the file they make up.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use super::agents::FileAgent;
use super::inbox::FileInbox;
use super::limits::FileLimits;
use super::policy::FilePolicy;
use super::promotion::{FileGrants, FilePromotion, FileTool};
use super::queue::{FileLog, FileQueue, FileStore};
use super::slack::FileSlack;
use super::telegram::FileTelegram;
use super::workflow::FileWorkflow;
use super::ConfigError;
use crate::settings::{resolve_table, AnySettings, Resolve};

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
    // A chat platform's table: its field here and its line in `platforms` below.
    pub(super) telegram: Option<FileTelegram>,
    pub(super) slack: Option<FileSlack>,
    pub(super) inbox: Option<FileInbox>,
    pub(super) workflow: FileWorkflow,
    pub(super) limits: FileLimits,
}

impl FileConfig {
    /// The chat platforms' tables, taken out and resolved: those that are on, in this
    /// order. One that is off is noted in `notes`; one with errors records them.
    pub(super) fn platforms(
        &mut self,
        r: &Resolve,
        notes: &mut Vec<String>,
        errors: &mut Vec<ConfigError>,
    ) -> Vec<Arc<dyn AnySettings>> {
        [
            resolve_table(self.telegram.take(), r, notes, errors),
            resolve_table(self.slack.take(), r, notes, errors),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
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
