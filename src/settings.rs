//! What reading any table of `bot.toml` takes, for [`crate::config`]'s sections and
//! the chat platforms' own tables alike: the error that names a key and its line
//! ([`ConfigError`]), the file being resolved (`Resolve`: key paths and lines,
//! relative paths, secrets, ranges, URLs), and what every chat platform's table sets
//! ([`ChatSettings`]), and what a platform's settings say about themselves
//! ([`PlatformSettings`], `PlatformTable`). It uses nothing of `config` or of any
//! platform, so `config` can name the platforms' tables while the platforms read them
//! with these helpers.

use std::any::Any;
use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserializer;

use crate::secret::Secret;
use crate::time::{parse_duration, Range};

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

/// What every chat platform's table sets: where cards go, who may decide there, and
/// when a burst of requests becomes one digest.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChatSettings {
    /// Chat or channel ids, as the platform writes them.
    pub destinations: Vec<String>,
    /// User ids, as the platform writes them.
    pub approvers: BTreeSet<String>,
    /// More requests than this waiting for a card in one chat get one digest.
    pub digest_after: usize,
}

/// A chat platform's settings (its `bot.toml` table, resolved) describe the platform
/// to the rest of gatebot: `config` holds them and reloads them, `gatebot
/// check-config` prints them, the daemon starts the platform with them
/// (`crate::platforms`), and none of those names a platform.
pub trait PlatformSettings: Clone + fmt::Debug + Send + Sync + 'static {
    /// The platform's key: the name of its table in `bot.toml`, its label in logs and
    /// metrics, the `platform` column of chat bookkeeping.
    const KEY: &'static str;

    /// Where cards go, who decides, when a burst becomes a digest.
    fn chat(&self) -> &ChatSettings;

    /// For a reload (SIGHUP): keeps in `new` what the running platform was started
    /// with (its tokens, API URL, mode: what takes a restart), and adds each of those
    /// keys whose value `new` changed to `restart`, as `table.key`, in file order.
    /// Everything else in `new` (its chats, approvers, digest threshold) applies.
    fn keep_started(&self, new: &mut Self, restart: &mut Vec<&'static str>);

    /// What `gatebot check-config` says of it after its name: how many chats and
    /// approvers, which API.
    fn summary(&self) -> String;
}

/// What `gatebot init --with KEY` writes for a platform: its table, every key
/// commented, its secrets in files named by credential (the file never holds one), and
/// what is left for the owner to fill in. Each platform's table file declares its own
/// (`config::file::STARTERS` lists them).
#[derive(Debug, PartialEq, Eq)]
pub struct Starter {
    /// The platform's key: `--with KEY` writes `[KEY]`.
    pub key: &'static str,
    /// What `gatebot init` asks on a terminal.
    pub question: &'static str,
    /// Its secrets: (credential name, what it holds, for the owner). The table names
    /// each's file as `{credential-name}`; `gatebot init` writes the file's path (with
    /// `--system`, systemd's credential, which `systemd/gatebot.service` loads).
    pub secrets: &'static [(&'static str, &'static str)],
    /// The table, commented, with `{credential-name}` where a secret file's path goes.
    pub table: &'static str,
    /// What the owner fills in before it works, as a step ("Fill in … (docs/…)").
    pub fill_in: &'static str,
}

/// A chat platform's table as written (deserialized with serde, as a field of the
/// file's type), and how it is resolved.
pub(crate) trait PlatformTable {
    type Settings: PlatformSettings;

    /// The resolved settings; `None` when the platform is off (with a note in `notes`
    /// saying why) or the table has errors (recorded in `errors`).
    fn resolve(
        self,
        r: &Resolve,
        notes: &mut Vec<String>,
        errors: &mut Vec<ConfigError>,
    ) -> Option<Self::Settings>;
}

/// `table` resolved, as [`crate::config::Config`] holds it: a platform's settings,
/// whichever the platform.
pub(crate) fn resolve_table<T: PlatformTable>(
    table: Option<T>,
    r: &Resolve,
    notes: &mut Vec<String>,
    errors: &mut Vec<ConfigError>,
) -> Option<Arc<dyn AnySettings>> {
    let settings = table?.resolve(r, notes, errors)?;
    Some(Arc::new(settings))
}

/// [`PlatformSettings`] whichever the platform, for a list of them.
pub trait AnySettings: fmt::Debug + Send + Sync {
    /// [`PlatformSettings::KEY`].
    fn key(&self) -> &'static str;
    /// [`PlatformSettings::chat`].
    fn chat_settings(&self) -> &ChatSettings;
    /// [`PlatformSettings::summary`].
    fn summary_line(&self) -> String;
    /// `new` (the same platform's settings from a new file) as the running platform
    /// can take them up ([`PlatformSettings::keep_started`]).
    fn reloaded(
        &self,
        new: &dyn AnySettings,
        restart: &mut Vec<&'static str>,
    ) -> Arc<dyn AnySettings>;
    /// For [`crate::config::Config::platform`], which gives a platform its own type back.
    fn as_any(&self) -> &dyn Any;
}

impl<P: PlatformSettings> AnySettings for P {
    fn key(&self) -> &'static str {
        P::KEY
    }

    fn chat_settings(&self) -> &ChatSettings {
        self.chat()
    }

    fn summary_line(&self) -> String {
        self.summary()
    }

    fn reloaded(
        &self,
        new: &dyn AnySettings,
        restart: &mut Vec<&'static str>,
    ) -> Arc<dyn AnySettings> {
        // Settings of one key are always of one type; anything else keeps the old.
        let Some(new) = new.as_any().downcast_ref::<P>() else {
            return Arc::new(self.clone());
        };
        let mut new = new.clone();
        self.keep_started(&mut new, restart);
        Arc::new(new)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The file being resolved: what errors point into, and what paths are relative to.
/// `config`'s sections add their own resolve steps to it, each in its module
/// (`impl Resolve` in `config::queue`, `config::agents`, …); a chat platform's table
/// resolves itself with it.
pub(crate) struct Resolve<'a> {
    raw: &'a str,
    path: &'a Path,
    base: PathBuf,
}

/// Keeps the value of `r`, or records its error and gives `None`.
pub(crate) fn keep<T>(errors: &mut Vec<ConfigError>, r: Result<T, ConfigError>) -> Option<T> {
    r.map_err(|e| errors.push(e)).ok()
}

impl<'a> Resolve<'a> {
    /// `raw` is the text of the file at `path`.
    pub(crate) fn new(raw: &'a str, path: &'a Path) -> Self {
        Resolve {
            raw,
            path,
            base: path
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from(".")),
        }
    }
    /// An error at `table.key`, on the key's line, else on the table's.
    pub(crate) fn error(&self, table: &str, key: &str, message: impl Into<String>) -> ConfigError {
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

    /// The config file being resolved.
    pub(crate) fn file(&self) -> &Path {
        self.path
    }

    /// A path from the file, relative to the file's directory unless absolute.
    pub(crate) fn anchor(&self, p: &Path) -> PathBuf {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.base.join(p)
        }
    }

    /// Resolves `KEY`, `KEY_env` or `KEY_file` (at most one may be set).
    pub(crate) fn secret(
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
                        format!(
                            "cannot read `{}`: {}",
                            f.display(),
                            crate::files::io_words(&e)
                        ),
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

    /// A chat secret: like [`Resolve::secret`], except that an unset environment
    /// variable turns the channel off (with a note) instead of failing, so the same
    /// config runs with and without chat tokens.
    pub(crate) fn chat_secret(
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

    /// A chat platform's `api_url`, without trailing slashes.
    pub(crate) fn url(&self, table: &str, url: &str) -> Result<String, ConfigError> {
        let trimmed = url.trim_end_matches('/');
        if !(trimmed.starts_with("https://") || trimmed.starts_with("http://")) {
            return Err(self.error(table, "api_url", format!("`{url}` is not an http(s) URL")));
        }
        Ok(trimmed.to_string())
    }

    /// `d`, the value of `table.key`, if it lies in `range`; otherwise records an error
    /// that names the key and says the range in words, and gives `None`. Every
    /// duration key of `bot.toml` is checked with it.
    pub(crate) fn duration_in(
        &self,
        table: &str,
        key: &str,
        d: Duration,
        range: Range,
        errors: &mut Vec<ConfigError>,
    ) -> Option<Duration> {
        keep(
            errors,
            range.check(d).map_err(|e| self.error(table, key, e)),
        )
    }

    /// A chat platform's `digest_after`.
    pub(crate) fn digest_after(&self, table: &str, n: usize) -> Result<usize, ConfigError> {
        if n == 0 {
            return Err(self.error(
                table,
                "digest_after",
                "must be at least 1 (the most requests posted one by one before a digest)",
            ));
        }
        Ok(n)
    }
}

/// The line of `key` inside `[table]` (dotted, e.g. `agents.mailer`), by a plain scan.
/// Good enough for error messages about keys we know are present.
pub(crate) fn locate(raw: &str, table: &str, key: &str) -> Option<usize> {
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

/// Why a pattern is not a regular expression, from the regex crate's error text: its
/// own sentence ("unclosed group"), without the drawing of the pattern with a caret
/// under it that comes before.
pub(crate) fn regex_words(error_text: &str) -> String {
    if let Some(why) = error_text
        .lines()
        .find_map(|l| l.trim().strip_prefix("error: "))
    {
        return why.trim().to_string();
    }
    if error_text.contains("size limit") {
        return "it is too large to compile".to_string();
    }
    error_text
        .lines()
        .last()
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// A duration as `bot.toml` writes it (`30m`, `24h`), for `deserialize_with`.
pub(crate) fn de_duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    struct InWords;

    impl serde::de::Visitor<'_> for InWords {
        type Value = Duration;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a duration in quotes, like \"30m\", \"24h\" or \"7d\"")
        }

        fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Duration, E> {
            parse_duration(s).map_err(E::custom)
        }
    }

    d.deserialize_str(InWords)
}

/// [`de_duration`] for an optional key (`#[serde(default, deserialize_with = …)]`).
pub(crate) fn de_duration_opt<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<Duration>, D::Error> {
    de_duration(d).map(Some)
}

/// A burst larger than this becomes one digest message (see `chat::conversation::digest`).
pub(crate) const DEFAULT_DIGEST_AFTER: usize = 5;

/// The `digest_after` of every chat platform's table.
pub(crate) fn default_digest_after() -> usize {
    DEFAULT_DIGEST_AFTER
}

/// Whether `n` is a phone number as E.164 writes it (SMS, WhatsApp, `[people] phone`): `+`, then 8 to 15 digits.
#[must_use]
pub fn is_e164(n: &str) -> bool {
    n.strip_prefix('+').is_some_and(|d| {
        (8..=15).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit()) && !d.starts_with('0')
    })
}
