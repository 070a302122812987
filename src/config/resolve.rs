//! Step 2 of loading: the file as written becomes a [`Config`]. [`Resolve`] carries
//! what every section needs to report an error (the text and path, for key paths and
//! lines) and to read what the file points at (its directory, for relative paths).
//! Each section resolves itself with it: `[store]`, `[queue]`, `[log]` in `queue`,
//! `[policy]`, `[tools]` in `policy`, `[agents.*]` in `agents`, `[promotion]`, `[grants]`
//! and shell-like tools in `promotion`, and the chat tables in the platforms' own modules.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::file::{locate, FileConfig};
use super::{Config, ConfigError};
use crate::secret::Secret;
use crate::time::Range;

/// The file being resolved: what errors point into, and what paths are relative to.
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
    pub(super) fn new(raw: &'a str, path: &'a Path) -> Self {
        Resolve {
            raw,
            path,
            base: path
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from(".")),
        }
    }
}

impl Resolve<'_> {
    /// Resolves the file, recording every error it finds in `errors`. Returns `None`
    /// when a value the config needs could not be resolved; the caller must check
    /// `errors` either way (the checks that leave no value behind only record).
    pub(super) fn resolve(
        &self,
        file: FileConfig,
        errors: &mut Vec<ConfigError>,
    ) -> Option<Config> {
        let FileConfig {
            store,
            queue,
            log,
            policy,
            tools,
            mut agents,
            telegram,
            slack,
            inbox,
            workflow,
            promotion,
            grants,
            limits,
        } = file;
        let mut notes = Vec::new();
        let workflow = self.workflow(workflow, &mut agents, policy.max_ttl, &mut notes, errors);
        let telegram = telegram.and_then(|t| t.resolve(self, &mut notes, errors));
        let slack = slack.and_then(|s| s.resolve(self, &mut notes, errors));
        let store = self.store(store, errors);
        let queue = self.queue(queue, errors);
        let limits = self.limits(limits, &mut agents, queue.max_body_bytes, errors);
        self.socket_paths(&store, &queue, errors);
        self.per_agent_caps(&queue, &mut notes, errors);
        let log = self.log(log, errors);
        let (default_ttl, max_ttl, unknown_agents) =
            (policy.default_ttl, policy.max_ttl, policy.unknown_agents);
        let trust = self.trust(promotion, grants, &tools, errors);
        let policy = self.policy(policy, tools, errors);
        let agents = self.agents(agents, errors);
        let inbox =
            inbox.and_then(|i| i.resolve(self, &agents, unknown_agents, &mut notes, errors));
        let warnings =
            super::agents::token_warnings(&agents, inbox.as_ref(), queue.listen.as_deref());
        Some(Config {
            source: self.path.to_path_buf(),
            store,
            queue,
            log,
            policy: policy?,
            default_ttl,
            max_ttl,
            unknown_agents,
            agents,
            telegram,
            slack,
            inbox,
            notes,
            warnings,
            workflow,
            trust,
            limits,
        })
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

#[cfg(test)]
mod tests {
    use crate::config::parse_in_etc as parse;
    use crate::config::Config;

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
    fn chat_channels_are_off_without_tokens() {
        let c = parse(
            "[telegram]\ntoken_env = \"GATEBOT_TEST_UNSET_TG\"\napprovers = [1]\n[slack]\nbot_token_env = \"GATEBOT_TEST_UNSET_SL\"\n",
        )
        .unwrap();
        assert!(c.telegram.is_none() && c.slack.is_none());
        assert_eq!(c.notes.len(), 2, "{:?}", c.notes);
        assert!(c.notes[0].contains("GATEBOT_TEST_UNSET_TG"));
    }
}
