//! `[store]`, `[queue]` and `[log]`: where gatebot keeps its data, how agents and
//! owners reach it, and what it logs.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::{ConfigError, LogConfig, LogFormat, PostgresConfig, QueueConfig, StoreConfig};
use crate::files::sibling;
use crate::serve::DEFAULT_MAX_CONNECTIONS;
use crate::settings::{de_duration, keep, Resolve};
use crate::time::range;

/// `[queue] max_connections_per_agent` when not set: well below a listener's cap.
pub(crate) const DEFAULT_CONNECTIONS_PER_AGENT: usize = 64;
/// `[queue] max_waits_per_agent` when not set.
pub(crate) const DEFAULT_WAITS_PER_AGENT: usize = 32;
/// The most either per-agent cap may be.
pub(crate) const MAX_PER_AGENT: usize = 10_000;

#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct FileStore {
    pub(super) path: PathBuf,
    pub(super) max_size: Option<String>,
    pub(super) reserve: Option<String>,
    pub(super) url: Option<String>,
    pub(super) password_env: Option<String>,
    pub(super) password_file: Option<PathBuf>,
    pub(super) node: Option<String>,
}

impl Default for FileStore {
    fn default() -> Self {
        FileStore {
            path: PathBuf::from("gatebot.db"),
            max_size: None,
            reserve: None,
            url: None,
            password_env: None,
            password_file: None,
            node: None,
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

/// `gatebot store copy --to URL`'s database: the URL and its password as `[store] url`,
/// `password_env` and `password_file` give them, refused for the same reasons (a
/// password in the URL, an unset variable, an unreadable file), with a relative
/// `password_file` read from the current directory. Each error names its key as
/// `bot.toml` spells it.
pub fn postgres_target(
    url: &str,
    password_env: Option<String>,
    password_file: Option<PathBuf>,
) -> Result<PostgresConfig, Vec<ConfigError>> {
    let here = std::env::current_dir()
        .unwrap_or_else(|_| PathBuf::from("."))
        .join("command line");
    let resolve = Resolve::new("", &here);
    let store = FileStore {
        url: Some(url.to_string()),
        password_env,
        password_file,
        ..FileStore::default()
    };
    let mut errors = Vec::new();
    match resolve.postgres(&store, &mut errors) {
        Some(target) if errors.is_empty() => Ok(target),
        _ => Err(errors),
    }
}

impl Resolve<'_> {
    /// `[store]`; a bad size is recorded, and the value is always there.
    pub(super) fn store(&self, store: FileStore, errors: &mut Vec<ConfigError>) -> StoreConfig {
        let max_size = store.max_size.as_deref().and_then(|s| match parse_size(s) {
            Ok(n) if n >= MIN_STORE_SIZE => Some(n),
            Ok(_) => {
                errors.push(self.error(
                    "store",
                    "max_size",
                    format!("`{s}` is too small: the database needs at least 1MiB"),
                ));
                None
            }
            Err(e) => {
                errors.push(self.error("store", "max_size", e));
                None
            }
        });
        let reserve = match (store.reserve.as_deref().map(parse_size), max_size) {
            (None, Some(max)) => (max / 10).min(DEFAULT_RESERVE),
            (None, None) => DEFAULT_RESERVE,
            (Some(Ok(n)), Some(max)) if n >= max / 2 => {
                errors.push(self.error(
                    "store",
                    "reserve",
                    format!(
                        "must be less than half of `store.max_size` ({max} bytes), or agents                          would have less room than owners; got {n} bytes"
                    ),
                ));
                0
            }
            (Some(Ok(n)), _) => n,
            (Some(Err(e)), _) => {
                errors.push(self.error("store", "reserve", e));
                0
            }
        };
        let postgres = self.postgres(&store, errors);
        if postgres.is_some() {
            for (key, set) in [
                ("max_size", store.max_size.is_some()),
                ("reserve", store.reserve.is_some()),
            ] {
                if set {
                    errors.push(self.error(
                        "store",
                        key,
                        "limits the SQLite file; on PostgreSQL (`store.url`) the server's own \
                         limits apply: remove it",
                    ));
                }
            }
        }
        let node = match &store.node {
            Some(name) if valid_node_name(name) => name.clone(),
            Some(_) => {
                errors.push(self.error(
                    "store",
                    "node",
                    "must be 1 to 64 letters, digits, '.', '_' or '-' (a name for this node \
                     that no other node sharing the database has)",
                ));
                host_name()
            }
            None => host_name(),
        };
        StoreConfig {
            path: self.anchor(&store.path),
            max_size,
            reserve,
            postgres,
            node,
        }
    }

    /// `store.url` and the password it signs in with, if the store is on PostgreSQL.
    fn postgres(&self, store: &FileStore, errors: &mut Vec<ConfigError>) -> Option<PostgresConfig> {
        let Some(url) = &store.url else {
            if store.password_env.is_some() || store.password_file.is_some() {
                errors.push(self.error(
                    "store",
                    if store.password_env.is_some() { "password_env" } else { "password_file" },
                    "is the PostgreSQL password, but `store.url` is not set: set it, or remove this",
                ));
            }
            return None;
        };
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            errors.push(self.error(
                "store",
                "url",
                "must be a PostgreSQL URL, like \"postgres://gatebot@db.example/gatebot\"",
            ));
            return None;
        }
        if url::Url::parse(url).is_ok_and(|u| u.password().is_some()) {
            errors.push(self.error(
                "store",
                "url",
                "must not hold the password (it would show in logs): put it in the file \
                 `store.password_file` names, or in `store.password_env`",
            ));
            return None;
        }
        let password = keep(
            errors,
            self.secret(
                "store",
                "password",
                None,
                store.password_env.clone(),
                store.password_file.clone(),
            ),
        )?;
        Some(PostgresConfig {
            url: url.clone(),
            password,
        })
    }

    /// `[queue]`; its checks only record, so the value is always there.
    pub(super) fn queue(&self, queue: FileQueue, errors: &mut Vec<ConfigError>) -> QueueConfig {
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
        if queue.max_connections == Some(0) {
            errors.push(self.error("queue", "max_connections", "must be at least 1"));
        }
        for (key, d, r) in [
            ("max_wait", queue.max_wait, range::MAX_WAIT),
            (
                "header_timeout",
                queue.header_timeout,
                range::HEADER_TIMEOUT,
            ),
            ("idle_timeout", queue.idle_timeout, range::IDLE_TIMEOUT),
        ] {
            self.duration_in("queue", key, d, r, errors);
        }
        QueueConfig {
            socket: self.anchor(&queue.socket),
            control_socket: self.anchor(&queue.control_socket),
            listen: queue.listen,
            max_body_bytes: queue.max_body_bytes,
            max_wait: queue.max_wait,
            metrics: queue.metrics,
            max_connections: queue.max_connections,
            max_connections_per_agent: queue.max_connections_per_agent,
            max_waits_per_agent: queue.max_waits_per_agent,
            header_timeout: queue.header_timeout,
            idle_timeout: queue.idle_timeout,
        }
    }

    /// `max_connections_per_agent` and `max_waits_per_agent`: each from 1 to
    /// [`MAX_PER_AGENT`], a wait being also a connection; a per-agent cap not below the
    /// listener's is a note (one agent could then take every connection).
    pub(super) fn per_agent_caps(
        &self,
        queue: &QueueConfig,
        notes: &mut Vec<String>,
        errors: &mut Vec<ConfigError>,
    ) {
        for (key, n) in [
            ("max_connections_per_agent", queue.max_connections_per_agent),
            ("max_waits_per_agent", queue.max_waits_per_agent),
        ] {
            if !(1..=MAX_PER_AGENT).contains(&n) {
                errors.push(self.error(
                    "queue",
                    key,
                    format!("must be from 1 to {MAX_PER_AGENT}, got {n}"),
                ));
            }
        }
        if queue.max_waits_per_agent > queue.max_connections_per_agent {
            errors.push(self.error(
                "queue",
                "max_waits_per_agent",
                format!(
                    "{} is more than `queue.max_connections_per_agent` ({}): every long-poll \
                     is also a request in flight",
                    queue.max_waits_per_agent, queue.max_connections_per_agent
                ),
            ));
        }
        let listener = queue.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS);
        if queue.max_connections_per_agent >= listener {
            notes.push(format!(
                "queue: max_connections_per_agent ({}) is not below the agents' socket's cap \
                 ({listener}, queue.max_connections): one agent can take every connection",
                queue.max_connections_per_agent
            ));
        }
    }

    /// The socket paths against each other, the database and this file: a socket path
    /// must name nothing else gatebot uses (the daemon refuses to start on a path that
    /// holds anything but a stale socket, and must never remove the database).
    pub(super) fn socket_paths(
        &self,
        store: &StoreConfig,
        queue: &QueueConfig,
        errors: &mut Vec<ConfigError>,
    ) {
        if queue.socket == queue.control_socket {
            errors.push(self.error(
                "queue",
                "control_socket",
                "must differ from `queue.socket`: agents must not reach the owners' socket",
            ));
        }
        let taken = [
            (store.path.clone(), "the database (`store.path`)"),
            (
                sibling(&store.path, "-wal"),
                "the database's write-ahead log",
            ),
            (
                sibling(&store.path, "-shm"),
                "the database's shared-memory file",
            ),
            (sibling(&store.path, "-journal"), "the database's journal"),
            (self.file().to_path_buf(), "this config file"),
        ];
        for (key, path) in [
            ("socket", &queue.socket),
            ("control_socket", &queue.control_socket),
        ] {
            if let Some((_, what)) = taken.iter().find(|(p, _)| p == path) {
                errors.push(self.error(
                    "queue",
                    key,
                    format!(
                        "`{}` is {what}: a socket needs a path of its own",
                        path.display()
                    ),
                ));
            }
        }
    }

    /// `[log]`; a bad filter is recorded, and the value is always there.
    pub(super) fn log(&self, log: FileLog, errors: &mut Vec<ConfigError>) -> LogConfig {
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
        LogConfig {
            format: log.format,
            level: log.level,
        }
    }
}

/// The smallest `store.max_size`: room for the schema and some requests.
const MIN_STORE_SIZE: u64 = 1 << 20;

/// `store.reserve` unless set: 64 MiB, or a tenth of `store.max_size` if that is less.
pub const DEFAULT_RESERVE: u64 = 64 << 20;

/// `500MB`, `2GiB`, `1048576` (bytes): a size, as `store.max_size` is written.
pub(super) fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let unit_bytes: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        _ => u64::MAX,
    };
    digits
        .parse::<u64>()
        .ok()
        .filter(|_| unit_bytes != u64::MAX)
        .and_then(|n| n.checked_mul(unit_bytes))
        .ok_or_else(|| format!("`{s}` is not a size like 500MB, 2GB or 1GiB"))
}

/// Whether `name` may be a node's name (`[store] node`): it is shown in `gatebot nodes`
/// and logs, and must tell nodes apart.
fn valid_node_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// This machine's name, the node's name when `[store] node` is not set; "gatebot" when
/// it cannot be read or is no valid name.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| valid_node_name(h))
        .unwrap_or_else(|| "gatebot".to_string())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::config::parse_in_etc as parse;
    use crate::config::Config;

    #[test]
    fn per_agent_caps_default_well_below_the_listener_and_are_checked() {
        let c = parse("").unwrap();
        assert_eq!(c.queue.max_connections_per_agent, 64);
        assert_eq!(c.queue.max_waits_per_agent, 32);
        assert!(c.notes.is_empty(), "{:?}", c.notes);
        for (raw, key, words) in [
            (
                "max_connections_per_agent = 0",
                "queue.max_connections_per_agent",
                "from 1 to 10000",
            ),
            (
                "max_waits_per_agent = 100000",
                "queue.max_waits_per_agent",
                "from 1 to 10000",
            ),
            (
                "max_connections_per_agent = 4\nmax_waits_per_agent = 8",
                "queue.max_waits_per_agent",
                "more than `queue.max_connections_per_agent` (4)",
            ),
        ] {
            let errors = Config::check_text(
                &format!("[queue]\n{raw}\n"),
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

    #[test]
    fn a_postgres_store_takes_its_url_and_a_password_kept_out_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let password = dir.path().join("pg-password");
        std::fs::write(&password, "s3cret-pw\n").unwrap();
        let c = Config::check_text(
            &format!(
                "[store]\nurl = \"postgres://gatebot@db.example:5433/gate\"\n\
                 password_file = \"{}\"\n",
                password.display()
            ),
            Path::new("/etc/gatebot/bot.toml"),
        )
        .unwrap();
        let pg = c.store.postgres.as_ref().unwrap();
        assert_eq!(pg.url, "postgres://gatebot@db.example:5433/gate");
        assert_eq!(pg.password.as_ref().unwrap().expose(), "s3cret-pw");
        assert_eq!(c.store.shown(), "postgres://gatebot@db.example:5433/gate");
        assert!(!format!("{c:?}").contains("s3cret-pw"));
        assert!(parse("").unwrap().store.postgres.is_none());
        // The node's name: its own, or the host's.
        assert_eq!(
            parse("[store]\nnode = \"gate-1.b_2\"\n")
                .unwrap()
                .store
                .node,
            "gate-1.b_2"
        );
        assert!(super::valid_node_name(&parse("").unwrap().store.node));
        for (raw, key, words) in [
            (
                "url = \"postgres://gatebot:hunter2@db/gate\"",
                "store.url",
                "must not hold the password",
            ),
            ("url = \"mysql://db/gate\"", "store.url", "PostgreSQL URL"),
            (
                "password_env = \"PG_PASSWORD\"",
                "store.password_env",
                "`store.url` is not set",
            ),
            (
                "url = \"postgres://gatebot@db/gate\"\nmax_size = \"1GiB\"",
                "store.max_size",
                "server's own limits",
            ),
            (
                "url = \"postgres://gatebot@db/gate\"\npassword_env = \"GATEBOT_TEST_UNSET_PG\"",
                "store.password_env",
                "is not set",
            ),
            ("node = \"gate 1\"", "store.node", "letters, digits"),
            ("node = \"\"", "store.node", "1 to 64"),
            ("node = \"<b>x</b>\"", "store.node", "letters, digits"),
        ] {
            let errors = Config::check_text(
                &format!("[store]\n{raw}\n"),
                Path::new("/etc/gatebot/bot.toml"),
            )
            .unwrap_err();
            assert!(
                errors
                    .iter()
                    .any(|e| e.key == key && e.message.contains(words)),
                "{raw}: {errors:?}"
            );
            assert!(!format!("{errors:?}").contains("hunter2"), "{errors:?}");
        }
    }

    #[test]
    fn same_socket_twice_is_an_error() {
        let e = parse("[queue]\nsocket = \"a.sock\"\ncontrol_socket = \"a.sock\"\n").unwrap_err();
        assert_eq!(e.key, "queue.control_socket");
        // The same file, written two ways.
        let e = parse("[queue]\nsocket = \"./a.sock\"\ncontrol_socket = \"/etc/gatebot/a.sock\"\n")
            .unwrap_err();
        assert_eq!(e.key, "queue.control_socket");
        assert_eq!(e.line, Some(3));
    }

    #[test]
    fn a_socket_on_the_database_or_its_files_is_an_error() {
        for (socket, what) in [
            ("gatebot.db", "the database (`store.path`)"),
            ("gatebot.db-wal", "write-ahead log"),
            ("/etc/gatebot/gatebot.db-shm", "shared-memory file"),
            ("bot.toml", "this config file"),
        ] {
            let e = parse(&format!("[queue]\nsocket = \"{socket}\"\n")).unwrap_err();
            assert_eq!(e.key, "queue.socket", "{socket}");
            assert_eq!(e.line, Some(2), "{socket}");
            assert!(e.message.contains(what), "{socket}: {}", e.message);
        }
        let e = parse(
            "[store]\npath = \"/var/lib/g.db\"\n[queue]\ncontrol_socket = \"/var/lib/g.db\"\n",
        )
        .unwrap_err();
        assert_eq!(e.key, "queue.control_socket");
        assert!(
            parse("[store]\npath = \"/var/lib/g.db\"\n[queue]\nsocket = \"gatebot.db\"\n").is_ok()
        );
    }

    #[test]
    fn the_reserve_is_a_tenth_of_max_size_up_to_64mib_and_leaves_agents_room() {
        let reserve = |raw: &str| parse(raw).unwrap().store.reserve;
        assert_eq!(
            reserve(""),
            64 << 20,
            "no max_size: what the disk must keep free"
        );
        assert_eq!(reserve("[store]\nmax_size = \"10MiB\"\n"), 1 << 20);
        assert_eq!(reserve("[store]\nmax_size = \"10GiB\"\n"), 64 << 20);
        assert_eq!(
            reserve("[store]\nmax_size = \"10MiB\"\nreserve = \"2MiB\"\n"),
            2 << 20
        );
        assert_eq!(reserve("[store]\nreserve = \"0\"\n"), 0, "0 turns it off");
        let e = parse("[store]\nmax_size = \"10MiB\"\nreserve = \"5MiB\"\n").unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("store.reserve", Some(3)));
        assert!(e.message.contains("less than half"), "{}", e.message);
        let e = parse("[store]\nreserve = \"some\"\n").unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("store.reserve", Some(2)));
    }

    #[test]
    fn connection_limits_are_checked_with_their_key() {
        let e = parse("[queue]\nmax_connections = 0\n").unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("queue.max_connections", Some(2)));
        let e = parse("[queue]\nidle_timeout = \"500ms\"\n").unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("queue.idle_timeout", Some(2)));
        let e = parse("[queue]\nheader_timeout = \"soon\"\n").unwrap_err();
        assert_eq!(e.key, "queue.header_timeout");
        let c = parse("").unwrap();
        assert_eq!(c.queue.max_connections, None);
        assert_eq!(c.queue.header_timeout, std::time::Duration::from_secs(10));
        assert_eq!(c.queue.idle_timeout, std::time::Duration::from_secs(60));
    }

    #[test]
    fn sockets_are_read_without_the_daemons_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bot.toml");
        std::fs::write(
            &path,
            "[queue]\ncontrol_socket = \"/run/gatebot/control.sock\"\n\n\
             [agents.mailer]\ntier = \"supervised\"\ntoken_env = \"GATEBOT_TEST_UNSET_TOKEN\"\n\n\
             [telegram]\ntoken_file = \"${CREDENTIALS_DIRECTORY}/telegram-token\"\n\
             chats = [1]\napprovers = [1]\n",
        )
        .unwrap();
        assert!(Config::load(&path).is_err(), "the daemon needs the secrets");
        let s = Config::sockets(&path).unwrap();
        assert_eq!(s.agents, dir.path().join("gatebot.sock"));
        assert_eq!(s.control, Path::new("/run/gatebot/control.sock"));

        // A bad socket key is an error, with its line.
        std::fs::write(&path, "[queue]\nsocket = 5\n").unwrap();
        let e = Config::sockets(&path).unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("queue.socket", Some(2)));
        // So is TOML that cannot be read at all.
        std::fs::write(&path, "[queue]\nsocket = \"a.sock\"\n[policy\n").unwrap();
        let e = Config::sockets(&path).unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
    }

    /// Issue 20: `gatebot pending` failed on a bad `default_ttl`, a key it does not
    /// read: the whole file was read and checked to find the sockets.
    #[test]
    fn sockets_are_read_whatever_the_other_keys_say() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bot.toml");
        std::fs::write(
            &path,
            "[queue]\nmax_wait = \"forever\"\nsockett = 1\ncontrol_socket = \"ctl.sock\"\n\
             [policy]\ndefault_ttl = \"tomorrow\"\n[agents.a]\ntier = \"yolo\"\n\
             [telegram]\napprovers = \"me\"\n[nonsense]\nx = 1\n",
        )
        .unwrap();
        assert!(Config::load(&path).is_err());
        let s = Config::sockets(&path).unwrap();
        assert_eq!(s.agents, dir.path().join("gatebot.sock"));
        assert_eq!(s.control, dir.path().join("ctl.sock"));
        // `[queue]` that is not a table is wrong for the sockets too.
        std::fs::write(&path, "queue = \"here\"\n").unwrap();
        let e = Config::sockets(&path).unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("queue", Some(1)));
    }
}
