//! `[inbox]`: owners hand tasks to agents (docs/inbox.md). Present, the inbox is on:
//! plain text to the bot in a Telegram private chat, a Slack DM or an inbox channel,
//! `/task …`, `gatebot task add` and `POST /v1/tasks` make tasks. Absent, it is off.
//!
//! ```toml
//! [inbox]
//! max_concurrent = 3          # running tasks per agent
//! lease = "60s"               # a worker reports within this, or its task is queued again
//! timeout_grace = "30s"       # after the intent's timeout, before gatebot fails the task
//! progress_every = "5s"       # card edits for progress, at most this often
//! failure_patterns = ["(?i)permission denied"]
//! [inbox.routes]              # intent → agent (or agents, the first not paused); `default`
//! [inbox.timeouts]            # intent → duration; `default` for the rest
//! [inbox.autonomy]            # intent → level (1 confirm first, 2 queue at once)
//! [inbox.concurrency]         # agent → its own max_concurrent
//! [inbox.classifier]          # the optional model classifier
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use regex::RegexSet;
use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::{AgentConfig, ConfigError, UnknownAgents};
use crate::inbox::detect::DEFAULT_FAILURE_PATTERNS;
use crate::inbox::model::ModelClassifier;
use crate::inbox::{Intent, Level};
use crate::names::valid_agent_name;
use crate::settings::{de_duration, keep, Resolve};
use crate::time::range;

/// The key of routes, timeouts and levels that covers every intent not named.
pub const DEFAULT_KEY: &str = "default";

/// The seed's timeouts; other intents get [`DEFAULT_TIMEOUT`] unless configured.
pub const SEED_TIMEOUTS: [(Intent, Duration); 4] = [
    (Intent::Research, Duration::from_secs(30 * 60)),
    (Intent::CodeChange, Duration::from_secs(15 * 60)),
    (Intent::Question, Duration::from_secs(5 * 60)),
    (Intent::Reminder, Duration::from_secs(5 * 60)),
];
/// The timeout of intents the seed gives none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10 * 60);
/// The seed's `MAX_CONCURRENT`.
pub const DEFAULT_MAX_CONCURRENT: usize = 3;

/// The inbox as the daemon runs it.
#[derive(Debug, Clone)]
pub struct InboxConfig {
    /// Intent → its agents, and the agents of every other intent: the first that is
    /// not paused takes a task (a list of one for most).
    pub routes: BTreeMap<Intent, Vec<String>>,
    pub default_route: Vec<String>,
    pub timeouts: BTreeMap<Intent, Duration>,
    pub default_timeout: Duration,
    pub levels: BTreeMap<Intent, Level>,
    pub default_level: Level,
    /// Running tasks per agent, unless [`InboxConfig::concurrency`] names the agent.
    pub max_concurrent: usize,
    pub concurrency: BTreeMap<String, usize>,
    pub lease: Duration,
    pub timeout_grace: Duration,
    pub progress_every: Duration,
    pub failure_patterns: RegexSet,
    pub classifier: Option<ModelClassifier>,
}

impl InboxConfig {
    /// The agents tasks of `intent` go to, in order (empty: none).
    #[must_use]
    pub fn route(&self, intent: Intent) -> &[String] {
        self.routes.get(&intent).unwrap_or(&self.default_route)
    }

    /// The first agent tasks of `intent` go to, if any.
    #[must_use]
    pub fn agent_for(&self, intent: Intent) -> Option<&str> {
        self.route(intent).first().map(String::as_str)
    }

    #[must_use]
    pub fn timeout(&self, intent: Intent) -> Duration {
        self.timeouts
            .get(&intent)
            .copied()
            .unwrap_or(self.default_timeout)
    }

    #[must_use]
    pub fn level(&self, intent: Intent) -> Level {
        self.levels
            .get(&intent)
            .copied()
            .unwrap_or(self.default_level)
    }

    /// How many of `agent`'s tasks may run at once.
    #[must_use]
    pub fn max_concurrent_for(&self, agent: &str) -> usize {
        self.concurrency
            .get(agent)
            .copied()
            .unwrap_or(self.max_concurrent)
    }
}

/// `[inbox]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileInbox {
    #[serde(default = "default_max_concurrent")]
    max_concurrent: usize,
    #[serde(default = "default_lease", deserialize_with = "de_duration")]
    lease: Duration,
    #[serde(default = "default_grace", deserialize_with = "de_duration")]
    timeout_grace: Duration,
    #[serde(default = "default_progress_every", deserialize_with = "de_duration")]
    progress_every: Duration,
    failure_patterns: Option<Vec<String>>,
    #[serde(default)]
    routes: BTreeMap<String, Route>,
    #[serde(default)]
    timeouts: BTreeMap<String, String>,
    #[serde(default)]
    autonomy: BTreeMap<String, i64>,
    #[serde(default)]
    concurrency: BTreeMap<String, usize>,
    classifier: Option<FileClassifier>,
}

/// A route as written: one agent, or agents in order (`["claude-code", "codex"]`).
#[derive(Debug)]
enum Route {
    One(String),
    Many(Vec<String>),
}

/// By hand rather than `untagged`, whose error names neither form.
impl<'de> Deserialize<'de> for Route {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct RouteVisitor;

        impl<'de> Visitor<'de> for RouteVisitor {
            type Value = Route;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an agent's name, or names in order like [\"claude-code\", \"codex\"]")
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<Route, E> {
                Ok(Route::One(s.to_string()))
            }

            fn visit_seq<S: SeqAccess<'de>>(self, seq: S) -> Result<Route, S::Error> {
                Vec::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(Route::Many)
            }
        }

        d.deserialize_any(RouteVisitor)
    }
}

impl Route {
    fn agents(&self) -> Vec<String> {
        match self {
            Route::One(a) => vec![a.clone()],
            Route::Many(list) => list.clone(),
        }
    }
}

/// `[inbox.classifier]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileClassifier {
    api_url: String,
    model: String,
    api_key: Option<String>,
    api_key_env: Option<String>,
    api_key_file: Option<PathBuf>,
    #[serde(
        default = "default_classifier_timeout",
        deserialize_with = "de_duration"
    )]
    timeout: Duration,
}

fn default_max_concurrent() -> usize {
    DEFAULT_MAX_CONCURRENT
}
fn default_lease() -> Duration {
    Duration::from_secs(60)
}
fn default_grace() -> Duration {
    Duration::from_secs(30)
}
fn default_progress_every() -> Duration {
    Duration::from_secs(5)
}
fn default_classifier_timeout() -> Duration {
    Duration::from_secs(10)
}

/// An intent key of a sub-table: an intent, or `None` for `default`.
enum Key {
    Intent(Intent),
    Default,
}

fn key(r: &Resolve, table: &str, k: &str) -> Result<Key, ConfigError> {
    if k == DEFAULT_KEY {
        return Ok(Key::Default);
    }
    k.parse().map(Key::Intent).map_err(|_| {
        r.error(
            table,
            k,
            format!(
                "`{k}` is not an intent: use one of {}, or `default`",
                Intent::names()
            ),
        )
    })
}

/// Checks the agents `[inbox]` names: routes and concurrency must name agents that
/// exist (unless unknown agents are supervised), with valid names.
struct AgentCheck<'a> {
    r: &'a Resolve<'a>,
    agents: &'a BTreeMap<String, AgentConfig>,
    unknown_agents: UnknownAgents,
}

impl AgentCheck<'_> {
    /// The error for `agent`, named at `table.k`, if it is not one to route to.
    fn check(&self, table: &str, k: &str, agent: &str) -> Option<ConfigError> {
        if !valid_agent_name(agent) {
            return Some(
                self.r
                    .error(table, k, format!("`{agent}` is not a valid agent name")),
            );
        }
        let unknown = !self.agents.contains_key(agent);
        (unknown && self.unknown_agents == UnknownAgents::Reject).then(|| {
            self.r.error(
                table,
                k,
                format!(
                    "`{agent}` is not an agent: add an [agents.{agent}] table (or set \
                     policy.unknown_agents = \"supervised\")"
                ),
            )
        })
    }
}

/// A table keyed by intent (or `default`): `seed` with the file's entries over it,
/// and the default (`default` unless the file sets it). Each entry's value is read
/// with `parse`; a bad key or value is recorded.
fn by_intent<V, T>(
    r: &Resolve,
    table: &str,
    entries: &BTreeMap<String, V>,
    parse: impl Fn(&V) -> Result<T, String>,
    (mut by_intent, mut default): (BTreeMap<Intent, T>, T),
    errors: &mut Vec<ConfigError>,
) -> (BTreeMap<Intent, T>, T) {
    for (k, v) in entries {
        let value = parse(v).map_err(|e| r.error(table, k, e));
        match (keep(errors, key(r, table, k)), keep(errors, value)) {
            (Some(Key::Intent(i)), Some(value)) => {
                by_intent.insert(i, value);
            }
            (Some(Key::Default), Some(value)) => default = value,
            _ => {}
        }
    }
    (by_intent, default)
}

impl FileInbox {
    /// The `[inbox]` table; `None` when it has errors (recorded). `agents` are the
    /// configured agents, which routes and concurrency must name.
    pub(crate) fn resolve(
        self,
        r: &Resolve,
        agents: &BTreeMap<String, AgentConfig>,
        unknown_agents: UnknownAgents,
        notes: &mut Vec<String>,
        errors: &mut Vec<ConfigError>,
    ) -> Option<InboxConfig> {
        let before = errors.len();
        self.check_numbers(r, errors);
        let agents = AgentCheck {
            r,
            agents,
            unknown_agents,
        };
        let (routes, default_route) = self.routes(&agents, errors);
        let seed = (SEED_TIMEOUTS.into_iter().collect(), DEFAULT_TIMEOUT);
        let parse_timeout = |v: &String| range::TASK_TIMEOUT.parse(v);
        let (timeouts, default_timeout) = by_intent(
            r,
            "inbox.timeouts",
            &self.timeouts,
            parse_timeout,
            seed,
            errors,
        );
        // Code changes wait for the owner's go by default: a message typed on a phone
        // is a thin basis for editing a repository.
        let seed = (
            BTreeMap::from([(Intent::CodeChange, Level::CONFIRM)]),
            Level::AUTO,
        );
        let parse_level = |v: &i64| Level::parse(*v);
        let (levels, default_level) = by_intent(
            r,
            "inbox.autonomy",
            &self.autonomy,
            parse_level,
            seed,
            errors,
        );
        for (agent, n) in &self.concurrency {
            errors.extend(agents.check("inbox.concurrency", agent, agent));
            if *n == 0 {
                errors.push(r.error("inbox.concurrency", agent, "must be at least 1"));
            }
        }
        let sources = failure_patterns(r, self.failure_patterns, errors);
        let classifier = self.classifier.and_then(|c| c.resolve(r, errors));
        if errors.len() > before {
            return None;
        }
        notes.extend(unrouted(&routes, &default_route));
        Some(InboxConfig {
            routes,
            default_route,
            timeouts,
            default_timeout,
            levels,
            default_level,
            max_concurrent: self.max_concurrent,
            concurrency: self.concurrency,
            lease: self.lease,
            timeout_grace: self.timeout_grace,
            progress_every: self.progress_every,
            failure_patterns: RegexSet::new(&sources).ok()?,
            classifier,
        })
    }

    /// `max_concurrent` and the durations.
    fn check_numbers(&self, r: &Resolve, errors: &mut Vec<ConfigError>) {
        if self.max_concurrent == 0 {
            errors.push(r.error(
                "inbox",
                "max_concurrent",
                "must be at least 1 (running tasks per agent)",
            ));
        }
        for (key, d, range) in [
            ("lease", self.lease, range::LEASE),
            ("timeout_grace", self.timeout_grace, range::INBOX_STEP),
            ("progress_every", self.progress_every, range::INBOX_STEP),
        ] {
            r.duration_in("inbox", key, d, range, errors);
        }
    }

    /// `[inbox.routes]`: the agents of each intent, and of the rest (`default`).
    fn routes(
        &self,
        agents: &AgentCheck,
        errors: &mut Vec<ConfigError>,
    ) -> (BTreeMap<Intent, Vec<String>>, Vec<String>) {
        let r = agents.r;
        let mut routes = BTreeMap::new();
        let mut default_route = Vec::new();
        for (k, route) in &self.routes {
            let names = route.agents();
            let bad: Vec<ConfigError> = names
                .iter()
                .filter_map(|agent| agents.check("inbox.routes", k, agent))
                .collect();
            if names.is_empty() {
                errors.push(r.error("inbox.routes", k, "names no agent"));
                continue;
            }
            let mut seen = std::collections::BTreeSet::new();
            if let Some(twice) = names.iter().find(|a| !seen.insert(a.as_str())) {
                errors.push(r.error("inbox.routes", k, format!("names `{twice}` twice")));
                continue;
            }
            if !bad.is_empty() {
                errors.extend(bad);
                continue;
            }
            match keep(errors, key(r, "inbox.routes", k)) {
                Some(Key::Intent(i)) => {
                    routes.insert(i, names);
                }
                Some(Key::Default) => default_route = names,
                None => {}
            }
        }
        (routes, default_route)
    }
}

/// `failure_patterns` as written, or the defaults; each must compile (recorded).
fn failure_patterns(
    r: &Resolve,
    patterns: Option<Vec<String>>,
    errors: &mut Vec<ConfigError>,
) -> Vec<String> {
    let sources: Vec<String> = patterns.unwrap_or_else(|| {
        DEFAULT_FAILURE_PATTERNS
            .iter()
            .map(|p| (*p).to_string())
            .collect()
    });
    for p in &sources {
        if let Err(e) = regex::Regex::new(p) {
            errors.push(r.error(
                "inbox",
                "failure_patterns",
                format!(
                    "`{p}` is not a regular expression: {}",
                    crate::settings::regex_words(&e.to_string())
                ),
            ));
        }
    }
    sources
}

/// The note for intents no route covers, if any.
fn unrouted(routes: &BTreeMap<Intent, Vec<String>>, default_route: &[String]) -> Option<String> {
    let unrouted: Vec<&str> = Intent::ALL
        .iter()
        .filter(|i| !routes.contains_key(i) && default_route.is_empty())
        .map(|i| i.as_str())
        .collect();
    (!unrouted.is_empty()).then(|| {
        format!(
            "inbox: tasks of intent {} have no agent and are refused; set [inbox.routes] default",
            unrouted.join(", ")
        )
    })
}

impl FileClassifier {
    fn resolve(self, r: &Resolve, errors: &mut Vec<ConfigError>) -> Option<ModelClassifier> {
        const T: &str = "inbox.classifier";
        let before = errors.len();
        let url = self.api_url.trim();
        if !(url.starts_with("https://") || url.starts_with("http://"))
            || url.parse::<hyper::Uri>().is_err()
        {
            errors.push(r.error(
                T,
                "api_url",
                format!(
                    "`{url}` is not an http(s) URL like https://api.openai.com/v1/chat/completions"
                ),
            ));
        }
        if self.model.trim().is_empty() {
            errors.push(r.error(T, "model", "is empty: name the model to ask"));
        }
        let api_key = keep(
            errors,
            r.secret(
                T,
                "api_key",
                self.api_key,
                self.api_key_env,
                self.api_key_file,
            ),
        );
        r.duration_in(
            T,
            "timeout",
            self.timeout,
            range::CLASSIFIER_TIMEOUT,
            errors,
        );
        if errors.len() > before {
            return None;
        }
        Some(ModelClassifier {
            api_url: url.to_string(),
            model: self.model.trim().to_string(),
            api_key: api_key.flatten(),
            timeout: self.timeout,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_in_etc as parse;

    const AGENTS: &str =
        "[agents.claude-code]\ntier = \"supervised\"\n[agents.researcher]\ntier = \"supervised\"\n";

    #[test]
    fn no_inbox_table_means_the_inbox_is_off() {
        assert!(parse(AGENTS).unwrap().inbox.is_none());
    }

    #[test]
    fn defaults_follow_the_seed() {
        let c = parse(&format!(
            "{AGENTS}[inbox]\n[inbox.routes]\ndefault = \"claude-code\"\n"
        ))
        .unwrap();
        let i = c.inbox.unwrap();
        assert_eq!(i.max_concurrent, 3);
        assert_eq!(i.timeout(Intent::Research), Duration::from_secs(1800));
        assert_eq!(i.timeout(Intent::CodeChange), Duration::from_secs(900));
        assert_eq!(i.timeout(Intent::Question), Duration::from_secs(300));
        assert_eq!(i.timeout(Intent::Reminder), Duration::from_secs(300));
        assert_eq!(i.timeout(Intent::Todo), DEFAULT_TIMEOUT);
        assert_eq!(i.level(Intent::CodeChange), Level::CONFIRM);
        assert_eq!(i.level(Intent::Research), Level::AUTO);
        assert_eq!(i.agent_for(Intent::Todo), Some("claude-code"));
        assert_eq!(i.lease, Duration::from_secs(60));
        assert!(i.failure_patterns.is_match("Permission denied"));
        assert!(i.classifier.is_none());
    }

    #[test]
    fn routes_timeouts_levels_and_concurrency_are_read_by_intent() {
        let c = parse(&format!(
            "{AGENTS}[inbox]\nmax_concurrent = 2\n[inbox.routes]\nresearch = \"researcher\"\n\
             [inbox.timeouts]\ntodo = \"2m\"\ndefault = \"1h\"\n[inbox.autonomy]\ncode_change = 2\n\
             default = 1\n[inbox.concurrency]\nresearcher = 1\n"
        ))
        .unwrap();
        let i = c.inbox.unwrap();
        assert_eq!(i.agent_for(Intent::Research), Some("researcher"));
        assert_eq!(i.agent_for(Intent::Todo), None);
        assert_eq!(i.timeout(Intent::Todo), Duration::from_secs(120));
        assert_eq!(i.timeout(Intent::Other), Duration::from_secs(3600));
        assert_eq!(i.level(Intent::CodeChange), Level::AUTO);
        assert_eq!(i.level(Intent::Todo), Level::CONFIRM);
        assert_eq!(i.max_concurrent_for("researcher"), 1);
        assert_eq!(i.max_concurrent_for("claude-code"), 2);
        assert!(
            c.notes.iter().any(|n| n.contains("no agent")),
            "{:?}",
            c.notes
        );
    }

    #[test]
    fn every_bad_key_is_named_with_its_line() {
        let raw = format!(
            "{AGENTS}[inbox]\nmax_concurrent = 0\nfailure_patterns = [\"(unclosed\"]\n\
             [inbox.routes]\nemail = \"claude-code\"\nresearch = \"ghost\"\n\
             [inbox.timeouts]\nresearch = \"forever\"\n[inbox.autonomy]\nquestion = 3\n\
             [inbox.concurrency]\nclaude-code = 0\n\
             [inbox.classifier]\napi_url = \"ftp://x\"\nmodel = \" \"\napi_key_env = \"GATEBOT_TEST_UNSET_KEY\"\n"
        );
        let errors = crate::config::Config::check_text(&raw, std::path::Path::new("/etc/bot.toml"))
            .unwrap_err();
        let found: Vec<(&str, Option<usize>)> =
            errors.iter().map(|e| (e.key.as_str(), e.line)).collect();
        assert_eq!(
            found,
            [
                ("inbox.max_concurrent", Some(6)),
                ("inbox.failure_patterns", Some(7)),
                ("inbox.routes.email", Some(9)),
                ("inbox.routes.research", Some(10)),
                ("inbox.timeouts.research", Some(12)),
                ("inbox.autonomy.question", Some(14)),
                ("inbox.concurrency.claude-code", Some(16)),
                ("inbox.classifier.api_url", Some(18)),
                ("inbox.classifier.model", Some(19)),
                ("inbox.classifier.api_key_env", Some(20)),
            ],
            "{errors:#?}"
        );
        assert!(
            errors[3].message.contains("[agents.ghost]"),
            "{}",
            errors[3]
        );
        assert!(
            errors[2].message.contains("research, code_change"),
            "{}",
            errors[2]
        );
    }

    #[test]
    fn the_classifier_takes_its_key_from_the_environment() {
        std::env::set_var("GATEBOT_TEST_CLASSIFIER_KEY", "sk-test-123456");
        let c = parse(&format!(
            "{AGENTS}[inbox]\n[inbox.classifier]\napi_url = \"http://127.0.0.1:9/v1/chat/completions\"\n\
             model = \"small\"\napi_key_env = \"GATEBOT_TEST_CLASSIFIER_KEY\"\ntimeout = \"2s\"\n"
        ))
        .unwrap();
        let m = c.inbox.unwrap().classifier.unwrap();
        assert_eq!(m.api_key.unwrap().expose(), "sk-test-123456");
        assert_eq!(m.timeout, Duration::from_secs(2));
    }
}
