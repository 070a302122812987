//! Step 1 of loading: `bot.toml` as written, deserialized with serde. TOML that cannot
//! be read, type errors, unknown keys, bad durations and bad words (enum values) are
//! found here, each with the key path and line TOML reports, and said in `bot.toml`'s
//! words ([`plain`]). serde stops at a document's first error, so [`read_file`] reads
//! again with that entry left out until the rest reads: every error in one run, and
//! the entries left out named so that step 2 does not report their absence as well.
//! [`read_only`] reads just the keys a client command needs. Each table's type lives
//! with the section (or chat platform) that resolves it; this is the file they make up.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use serde_path_to_error::Segment;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::agents::FileAgent;
use super::inbox::FileInbox;
use super::limits::FileLimits;
use super::policy::FilePolicy;
use super::promotion::{FileGrants, FilePromotion, FileTool};
use super::queue::{FileLog, FileQueue, FileStore};
use super::slack::FileSlack;
use super::sms::FileSms;
use super::telegram::FileTelegram;
use super::workflow::FileWorkflow;
use super::ConfigError;
use crate::settings::{resolve_table, AnySettings, Resolve};

/// What step 1 read: the file as written, each entry that had an error left out (so
/// the rest is read and resolved as if it were not there), and those errors.
pub(super) struct Read {
    /// `None` only when nothing could be read past an error at the top of the file.
    pub(super) file: Option<FileConfig>,
    /// In the order they were found; the caller sorts them by line.
    pub(super) errors: Vec<ConfigError>,
    /// The key paths of the entries left out (`policy.default_ttl`, `agents.a`).
    pub(super) left_out: Vec<String>,
}

impl Read {
    /// Whether an error at `key` (found resolving what was read) is about an entry
    /// step 1 left out: it was reported already, and what step 2 says of its absence
    /// is not another mistake of the owner's.
    pub(super) fn covers(&self, key: &str) -> bool {
        self.left_out.iter().any(|gone| {
            key == gone
                || key
                    .strip_prefix(gone.as_str())
                    .is_some_and(|rest| rest.starts_with(['.', '[']))
        })
    }
}

/// Step 1 with every error: TOML's syntax errors (it reads on past each), then the
/// schema's. serde stops at the first error of a document, so this reads again with
/// the offending entry left out until the rest reads: each error is reported once,
/// with its key path and line, and one bad key does not hide the next.
pub(super) fn read_file(raw: &str, path: &Path) -> Read {
    let (table, syntax) = DeTable::parse_recoverable(raw);
    let errors = syntax
        .into_iter()
        .map(|e| error(raw, path, String::new(), e.span(), e.message()))
        .collect();
    read_table(raw, path, table, errors)
}

/// Only the keys at `paths` (`[["queue", "socket"], …]`), each checked as `bot.toml`
/// checks it; every other key, however wrong, is not read. Only TOML that cannot be
/// read at all (a syntax error anywhere) stops it as well. What a client command that
/// needs a few keys reads: the rest is the daemon's business.
pub(super) fn read_only(
    raw: &str,
    path: &Path,
    paths: &[&[&str]],
) -> Result<FileConfig, Vec<ConfigError>> {
    let table = DeTable::parse(raw)
        .map_err(|e| vec![error(raw, path, String::new(), e.span(), e.message())])?;
    let mut only = DeTable::new();
    for keys in paths {
        copy_path(table.get_ref(), &mut only, keys);
    }
    let read = read_table(raw, path, Spanned::new(table.span(), only), Vec::new());
    match read.file {
        Some(file) if read.errors.is_empty() => Ok(file),
        _ => {
            let mut errors = read.errors;
            errors.sort_by_key(|e| e.line.unwrap_or(usize::MAX));
            Err(errors)
        }
    }
}

/// Copies the entry at `keys` from `from` to `to`, with the tables on the way (each
/// keeping its span, so errors still point at the right line).
fn copy_path<'i>(from: &DeTable<'i>, to: &mut DeTable<'i>, keys: &[&str]) {
    let Some((first, rest)) = keys.split_first() else {
        return;
    };
    let Some((key, value)) = from.get_key_value(*first) else {
        return;
    };
    match value.get_ref() {
        DeValue::Table(inner) if !rest.is_empty() => {
            let sub = to
                .entry(key.clone())
                .or_insert_with(|| Spanned::new(value.span(), DeValue::Table(DeTable::new())));
            if let DeValue::Table(sub) = sub.get_mut() {
                copy_path(inner, sub, rest);
            }
        }
        // The entry itself, or a value where a table should be (copied for its error).
        _ => {
            to.insert(key.clone(), value.clone());
        }
    }
}

/// Deserializes `table`, leaving out each entry serde stops at, until the rest reads.
fn read_table<'i>(
    raw: &'i str,
    path: &Path,
    mut table: Spanned<DeTable<'i>>,
    mut errors: Vec<ConfigError>,
) -> Read {
    let mut left_out = Vec::new();
    let mut probed = Vec::new();
    loop {
        let de = toml::de::Deserializer::from(table.clone());
        let e = match serde_path_to_error::deserialize::<_, FileConfig>(de) {
            Ok(file) => {
                return Read {
                    file: Some(file),
                    errors,
                    left_out,
                }
            }
            Err(e) => e,
        };
        let (path_keys, shown) = keys_of(e.path());
        let inner = e.into_inner();
        let message = inner.message().trim();
        // A word key (`tier`) given a number, say: toml says only "wanted string or
        // table". Read again with an empty word there, whose error lists the words.
        if message == NOT_A_WORD && !probed.contains(&path_keys) {
            if let Some(value) = entry(table.get_mut(), &path_keys) {
                *value = Spanned::new(value.span(), DeValue::String(Cow::Borrowed("")));
                probed.push(path_keys);
                continue;
            }
        }
        // A table without a key it needs: the table goes. If that key was left out
        // for its own error, this one is not news.
        if let Some(field) = missing_field(message) {
            let key = format!("{shown}.{field}");
            if !left_out.contains(&key) {
                errors.push(error(raw, path, key, inner.span(), "is missing"));
            }
        } else {
            errors.push(error(raw, path, shown, inner.span(), message));
        }
        if path_keys.is_empty() || !remove(table.get_mut(), &path_keys) {
            // The whole file is at fault (not a table of tables, say): nothing more
            // can be read.
            return Read {
                file: None,
                errors,
                left_out,
            };
        }
        left_out.push(path_keys.join("."));
    }
}

/// The map keys of a serde path, up to the first that is not one (an array's index:
/// the array is the entry left out), and the whole path as `bot.toml` would name it
/// (`telegram.approvers[1]`).
fn keys_of(path: &serde_path_to_error::Path) -> (Vec<String>, String) {
    let mut keys = Vec::new();
    for segment in path.iter() {
        match segment {
            Segment::Map { key } => keys.push(key.clone()),
            _ => break,
        }
    }
    let shown = path.to_string();
    let shown = if shown == "." { String::new() } else { shown };
    (keys, shown)
}

/// `tier` of serde's "missing field `tier`".
fn missing_field(message: &str) -> Option<&str> {
    message
        .strip_prefix("missing field `")?
        .split_once('`')
        .map(|(field, _)| field)
}

/// What toml says of a value that is neither a string nor a table where one of a
/// set of words is read.
const NOT_A_WORD: &str = "wanted string or table";

/// The value at `keys`, if there is one.
fn entry<'t, 'i>(
    table: &'t mut DeTable<'i>,
    keys: &[String],
) -> Option<&'t mut Spanned<DeValue<'i>>> {
    let (last, path) = keys.split_last()?;
    let mut t = table;
    for k in path {
        match t.get_mut(k.as_str()).map(Spanned::get_mut) {
            Some(DeValue::Table(inner)) => t = inner,
            _ => return None,
        }
    }
    t.get_mut(last.as_str())
}

/// Removes the entry at `keys`; `false` if there is none.
fn remove(table: &mut DeTable, keys: &[String]) -> bool {
    match keys {
        [] => false,
        [last] => table.remove(last.as_str()).is_some(),
        [first, rest @ ..] => match table.get_mut(first.as_str()).map(Spanned::get_mut) {
            Some(DeValue::Table(t)) => remove(t, rest),
            _ => false,
        },
    }
}

/// 1-based line of a byte offset.
fn line_of(raw: &str, offset: usize) -> usize {
    raw.as_bytes()[..offset.min(raw.len())]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

fn error(
    raw: &str,
    path: &Path,
    key: String,
    span: Option<std::ops::Range<usize>>,
    message: &str,
) -> ConfigError {
    let value = span.clone().and_then(|s| raw.get(s)).unwrap_or_default();
    ConfigError {
        file: path.to_path_buf(),
        line: span.map(|s| line_of(raw, s.start)),
        key,
        message: plain(message.trim(), value.trim()),
    }
}

/// serde's words said as `bot.toml` says things: keys, not fields; a word that is
/// not one of a key's words quoted as written (`"yolo" is not one of "draft_only",
/// …`); types by their TOML names ("expected u64" is "expected a whole number",
/// "struct FileQueue" "a table"). `value` is the text the error points at.
fn plain(message: &str, value: &str) -> String {
    if let Some(rest) = message.strip_prefix("unknown field ") {
        return format!("unknown key {rest}");
    }
    if let Some((_, words)) = message
        .strip_prefix("unknown variant ")
        .and_then(|rest| rest.split_once(", expected "))
    {
        let value = if value.is_empty() { "this" } else { value };
        return format!("{value} is not {}", words.replace('`', "\""));
    }
    crate::words::expected_in_words(message, "a table")
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
    pub(super) email: Option<super::email::FileEmail>,
    pub(super) sms: Option<FileSms>,
    pub(super) whatsapp: Option<super::whatsapp::FileWhatsApp>,
    pub(super) discord: Option<super::discord::FileDiscord>,
    pub(super) inbox: Option<FileInbox>,
    pub(super) workflow: FileWorkflow,
    pub(super) limits: FileLimits,
    pub(super) people: BTreeMap<String, super::people::FilePerson>,
    pub(super) dashboard: Option<super::dashboard::FileDashboard>,
    pub(super) groups: BTreeMap<String, super::teams::FileGroup>,
    pub(super) approval_rules: Vec<super::teams::FileRule>,
    pub(super) step_up: super::teams::FileStepUp,
    pub(super) budgets: Option<super::budgets::FileBudgets>,
}

/// What `gatebot init --with KEY` can write, per platform (Telegram and Slack have
/// flags of their own). A new platform adds its table's `STARTER` here.
pub const STARTERS: &[&crate::settings::Starter] = &[
    &super::email::STARTER,
    &super::sms::STARTER,
    &super::whatsapp::STARTER,
    &super::discord::STARTER,
];

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
            resolve_table(self.email.take(), r, notes, errors),
            resolve_table(self.sms.take(), r, notes, errors),
            resolve_table(self.whatsapp.take(), r, notes, errors),
            resolve_table(self.discord.take(), r, notes, errors),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::config::parse_in_etc as parse;
    use crate::config::Config;

    #[test]
    fn a_bad_tier_names_key_and_line() {
        let e = parse("[agents.mailer]\n\ntier = \"yolo\"\n").unwrap_err();
        assert_eq!(e.key, "agents.mailer.tier");
        assert_eq!(e.line, Some(3));
        assert_eq!(
            e.message,
            "\"yolo\" is not one of \"draft_only\", \"supervised\", \"semi_autonomous\", \
             \"autonomous\""
        );
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
        assert!(e.message.starts_with("unknown key `sockett`"), "{e}");
    }

    fn check(raw: &str) -> Vec<(String, Option<usize>, String)> {
        Config::check_text(raw, Path::new("/etc/gatebot/bot.toml"))
            .unwrap_err()
            .into_iter()
            .map(|e| (e.key, e.line, e.message))
            .collect()
    }

    fn keys(raw: &str) -> Vec<(String, Option<usize>)> {
        check(raw).into_iter().map(|(k, l, _)| (k, l)).collect()
    }

    /// Issue 20: one error of the schema hid every other, and the checks across keys
    /// ran only once the schema's were fixed: a file with mistakes on lines 2, 3 and 5
    /// reported line 5, then, fixed, line 2.
    #[test]
    fn every_mistake_of_every_kind_is_reported_in_one_run_in_file_order() {
        let raw = "[queue]\n\
                   max_body_bytes = 10\n\
                   sockett = \"x.sock\"\n\
                   [policy]\n\
                   default_ttl = \"tomorrow\"\n\
                   tool_approval_mode = \"sometimes\"\n\
                   [agents.a]\n\
                   tier = \"supervised\"\n\
                   read_only_commands = \"yes\"\n\
                   always_allow = [\"x\"]\n\
                   deny = [\"x\"]\n\
                   [telegram]\n\
                   token = \"1:A\"\n\
                   approvers = [1, \"two\"]\n\
                   [workflow]\n\
                   frequency = \"often\"\n";
        assert_eq!(
            keys(raw),
            [
                ("queue.max_body_bytes".into(), Some(2)),
                ("queue.sockett".into(), Some(3)),
                ("policy.default_ttl".into(), Some(5)),
                ("policy.tool_approval_mode".into(), Some(6)),
                ("agents.a.read_only_commands".into(), Some(9)),
                ("agents.a.deny".into(), Some(11)),
                ("telegram.approvers[1]".into(), Some(14)),
                ("workflow.frequency".into(), Some(16)),
            ]
        );
    }

    #[test]
    fn every_line_toml_cannot_read_is_reported_and_the_rest_is_checked() {
        let raw = "[queue]\nsocket = 5\n[policy\nmax_ttl = \"1d\"\n[log]\nlevel = 3\nformat = \n";
        let found = keys(raw);
        let lines: Vec<Option<usize>> = found.iter().map(|(_, l)| *l).collect();
        assert!(lines.contains(&Some(2)), "{found:?}");
        assert!(lines.contains(&Some(3)), "{found:?}");
        assert!(lines.contains(&Some(6)), "{found:?}");
        assert!(lines.contains(&Some(7)), "{found:?}");
        let mut sorted = lines.clone();
        sorted.sort();
        assert_eq!(lines, sorted, "in file order");
    }

    /// A bad entry is left out and the rest read on; what its absence does to the
    /// rest (a table without its required key, an inbox route to the agent whose tier
    /// is wrong) is not reported again.
    #[test]
    fn an_entry_left_out_for_its_error_causes_no_other_error() {
        let inbox = "[inbox]\n[inbox.routes]\ndefault = \"a\"\n";
        let found = check(&format!("[agents.a]\ntier = \"yolo\"\n{inbox}"));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].0.as_str(), found[0].1),
            ("agents.a.tier", Some(2))
        );
        // An agent whose token cannot be read is still one the inbox may name.
        let found = check(&format!(
            "[agents.a]\ntier = \"supervised\"\ntoken_env = \"GATEBOT_TEST_SURELY_UNSET\"\n{inbox}"
        ));
        assert_eq!(found.len(), 1, "{found:?}");
        // A tier that is not there at all is one error, naming the key to add.
        let found = check("[agents.a]\nalways_allow = [\"Read\"]\n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].0.as_str(), found[0].1),
            ("agents.a.tier", Some(1))
        );
        assert!(found[0].2.contains("tier = \"supervised\""), "{found:?}");
        // A table of the wrong type altogether, and a required key of a tool.
        let found = keys("queue = 5\n[tools]\nBash = { command_arg = \"c\" }\nRead = \"reed\"\n");
        assert_eq!(
            found,
            [
                ("queue".into(), Some(1)),
                ("tools.Bash.class".into(), Some(3)),
                ("tools.Read".into(), Some(4))
            ]
        );
    }

    /// What an owner reads names `bot.toml`'s types and forms, never Rust's: each key
    /// of the example bot.toml, given a value of the wrong type, gets an error in
    /// words.
    #[test]
    fn a_value_of_the_wrong_type_is_said_in_bot_toml_words() {
        let example =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("bot.toml"))
                .unwrap();
        let table: toml::Table = toml::from_str(&example).unwrap();
        let mut paths = Vec::new();
        leaves(&table, &mut Vec::new(), &mut paths);
        assert!(paths.len() > 50, "{}", paths.len());
        let rust = [
            "u8", "u16", "u32", "u64", "usize", "i32", "i64", "f64", "struct", "enum", "sequence",
            "map", "untagged", "Option", "Vec", "String",
        ];
        for (path, value) in &paths {
            let wrong = match value {
                toml::Value::String(_) => toml::Value::Integer(7),
                _ => toml::Value::String("seven".into()),
            };
            let mut t = table.clone();
            set(&mut t, path, wrong);
            let raw = toml::to_string(&t).unwrap();
            let errors = Config::check_text(&raw, Path::new("/etc/gatebot/bot.toml"))
                .expect_err(&path.join("."));
            for e in &errors {
                let mut words = e.message.split(|c: char| !c.is_alphanumeric());
                assert!(
                    !words.any(|w| rust.contains(&w) || w.starts_with("File")),
                    "{}: {e}",
                    path.join(".")
                );
            }
        }
    }

    fn leaves(t: &toml::Table, at: &mut Vec<String>, out: &mut Vec<(Vec<String>, toml::Value)>) {
        for (k, v) in t {
            at.push(k.clone());
            match v {
                toml::Value::Table(inner) => leaves(inner, at, out),
                _ => out.push((at.clone(), v.clone())),
            }
            at.pop();
        }
    }

    fn set(t: &mut toml::Table, path: &[String], value: toml::Value) {
        match path {
            [last] => {
                t.insert(last.clone(), value);
            }
            [first, rest @ ..] => {
                if let Some(toml::Value::Table(inner)) = t.get_mut(first) {
                    set(inner, rest, value);
                }
            }
            [] => {}
        }
    }
}
