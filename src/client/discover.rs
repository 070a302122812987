//! Where a `gatebot` command finds the daemon: one order for every client command (the
//! hooks, `mcp`, `ask`, `worker`, `workflow`, the owner's commands), so an agent's hook
//! started in any project directory reaches the daemon the owner runs.
//!
//! The agents' commands may name daemons over TCP instead ([`agents`]): the command
//! line wins over the environment, and at each an endpoint list over a socket:
//! `--url` (one or more), then `--socket`, then `GATEBOT_URL`, then `GATEBOT_SOCKET`,
//! then the steps below from 2 on (`--url` and `--socket` together are an error). The
//! owner's commands take the control socket, by these steps alone:
//!
//! 1. `--socket` / `GATEBOT_SOCKET`: that socket, nothing read;
//! 2. `--config` / `GATEBOT_CONFIG`: that file's sockets (it must be readable);
//! 3. the first config file there is of `./bot.toml`, `$XDG_CONFIG_HOME/gatebot/bot.toml`
//!    (`~/.config/gatebot/bot.toml`) and `/etc/gatebot/bot.toml` (one that exists but
//!    cannot be read, as an agent's account cannot read the system's, is passed over);
//! 4. the default sockets of a user's install (`$XDG_RUNTIME_DIR/gatebot/`) and of the
//!    system's (`/run/gatebot/`, where `systemd/gatebot.socket` puts the agents' socket),
//!    the first that is there.
//!
//! When none gives a socket, the error lists every place tried, in order, and what was
//! there. `gatebot run`, `check-config` and `connect` look for the file the same way
//! (steps 2 and 3). [`Places`] holds the user's and the system's directories, read from
//! the environment; `GATEBOT_SYSTEM_ROOT` moves `/etc`, `/run` and `/var/lib` under
//! another directory (for tests, which never read the real ones).

use std::fmt::Write as _;
use std::io::ErrorKind;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use super::endpoint::{parse_urls, Endpoint, URL_ENV};
use crate::config::Config;

/// The config file's name in each directory searched.
pub const CONFIG_NAME: &str = "bot.toml";
/// The agents' socket's name in the default socket directories.
pub const AGENTS_SOCKET: &str = "gatebot.sock";
/// The owners' socket's name in the default socket directories.
pub const CONTROL_SOCKET: &str = "gatebot-control.sock";

/// The directories searched and written to, besides the current one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Places {
    /// Where `./bot.toml` is looked for.
    pub cwd: PathBuf,
    /// The home directory, when known.
    pub home: Option<PathBuf>,
    /// `$XDG_CONFIG_HOME/gatebot` (or `~/.config/gatebot`), when known.
    pub user_config: Option<PathBuf>,
    /// `$XDG_STATE_HOME/gatebot` (or `~/.local/state/gatebot`), when known: a user's
    /// database.
    pub user_state: Option<PathBuf>,
    /// `$XDG_RUNTIME_DIR/gatebot`, when set: a user's sockets.
    pub user_runtime: Option<PathBuf>,
    /// `/etc/gatebot`.
    pub system_config: PathBuf,
    /// `/var/lib/gatebot` (systemd's `StateDirectory`).
    pub system_state: PathBuf,
    /// `/run/gatebot` (systemd's `RuntimeDirectory`, the socket unit's `ListenStream`).
    pub system_runtime: PathBuf,
}

/// The environment variable that moves the system's directories (for tests).
pub const SYSTEM_ROOT_ENV: &str = "GATEBOT_SYSTEM_ROOT";

impl Places {
    /// From the environment: `HOME`, `XDG_CONFIG_HOME`, `XDG_STATE_HOME`,
    /// `XDG_RUNTIME_DIR`, and `GATEBOT_SYSTEM_ROOT` (default `/`).
    #[must_use]
    pub fn from_env() -> Places {
        let var = |name: &str| {
            std::env::var_os(name)
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
        };
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Places::new(
            cwd,
            var("HOME"),
            var("XDG_CONFIG_HOME"),
            var("XDG_STATE_HOME"),
            var("XDG_RUNTIME_DIR"),
            &var(SYSTEM_ROOT_ENV).unwrap_or_else(|| PathBuf::from("/")),
        )
    }

    /// The places for these directories (each `None` when unset or not absolute).
    #[must_use]
    pub fn new(
        cwd: PathBuf,
        home: Option<PathBuf>,
        xdg_config: Option<PathBuf>,
        xdg_state: Option<PathBuf>,
        xdg_runtime: Option<PathBuf>,
        system_root: &Path,
    ) -> Places {
        let user = |xdg: Option<PathBuf>, fallback: &str| {
            xdg.or_else(|| home.as_ref().map(|h| h.join(fallback)))
                .map(|d| d.join("gatebot"))
        };
        Places {
            user_config: user(xdg_config, ".config"),
            user_state: user(xdg_state, ".local/state"),
            user_runtime: xdg_runtime.map(|d| d.join("gatebot")),
            home,
            cwd,
            system_config: system_root.join("etc/gatebot"),
            system_state: system_root.join("var/lib/gatebot"),
            system_runtime: system_root.join("run/gatebot"),
        }
    }

    /// The config files looked for when none is given, in order, each with how it is
    /// named to people; `None` for the user's when no home directory is known.
    fn config_candidates(&self) -> Vec<(String, Option<PathBuf>)> {
        vec![
            (format!("./{CONFIG_NAME}"), Some(self.cwd.join(CONFIG_NAME))),
            (
                format!("the user's {CONFIG_NAME}"),
                self.user_config.as_ref().map(|d| d.join(CONFIG_NAME)),
            ),
            (
                format!("the system's {CONFIG_NAME}"),
                Some(self.system_config.join(CONFIG_NAME)),
            ),
        ]
    }

    /// The default sockets, in order: the user's install, then the system's.
    fn socket_candidates(&self, which: Which) -> Vec<(String, Option<PathBuf>)> {
        vec![
            (
                format!("the user's {}", which.noun()),
                self.user_runtime.as_ref().map(|d| d.join(which.file())),
            ),
            (
                format!("the system's {}", which.noun()),
                Some(self.system_runtime.join(which.file())),
            ),
        ]
    }
}

/// Which of the daemon's two sockets a command talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    /// The agents' socket (`[queue] socket`): hooks, `mcp`, `ask`, `worker`, `workflow`.
    Agents,
    /// The owners' socket (`[queue] control_socket`): the owner's commands.
    Control,
}

impl Which {
    fn noun(self) -> &'static str {
        match self {
            Which::Agents => "agents' socket",
            Which::Control => "owners' socket",
        }
    }

    fn file(self) -> &'static str {
        match self {
            Which::Agents => AGENTS_SOCKET,
            Which::Control => CONTROL_SOCKET,
        }
    }
}

/// Where the socket was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `--socket` or `GATEBOT_SOCKET`.
    Given,
    /// A config file given with `--config` or `GATEBOT_CONFIG`.
    GivenConfig(PathBuf),
    /// A config file found in the current directory (depends on where the command runs).
    WorkingDirectory(PathBuf),
    /// The user's or the system's config file (the same from any directory).
    Installed(PathBuf),
    /// A default socket path (the same from any directory).
    DefaultSocket,
    /// TCP endpoints from `--url` or `GATEBOT_URL` (which one).
    Urls(&'static str),
}

impl Source {
    /// True when the same command finds the same socket from any directory (and without
    /// `--socket`, `--config` or their variables).
    #[must_use]
    pub fn is_fixed(&self) -> bool {
        matches!(self, Source::Installed(_) | Source::DefaultSocket)
    }
}

/// A socket, and where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub socket: PathBuf,
    pub source: Source,
}

/// A config file, and whether it was given or found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFile {
    pub path: PathBuf,
    /// Given with `--config` / `GATEBOT_CONFIG` (else found in the search).
    pub given: bool,
}

const NO_CONFIG: &str = "no config file";

/// Nothing found: each place tried, in order, with what was there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotFound {
    /// What was looked for: "a config file", "a config file or a socket".
    pub what: &'static str,
    pub tried: Vec<(String, String)>,
    /// For an agents' command, which `--url` / `GATEBOT_URL` would have served: the
    /// advice names them too.
    pub endpoints: bool,
}

impl NotFound {
    /// One line, for a hook's deny message (which the agent's model and its user read).
    #[must_use]
    pub fn one_line(&self) -> String {
        let tried: Vec<String> = self
            .tried
            .iter()
            .map(|(place, what)| format!("{place}: {what}"))
            .collect();
        format!(
            "gatebot found {}; tried, in order: {}. Set GATEBOT_CONFIG or GATEBOT_SOCKET{} in \
             the agent's environment, or write a config with `gatebot init`",
            self.what,
            tried.join("; "),
            if self.endpoints {
                " (or GATEBOT_URL, for gatebot on another machine)"
            } else {
                ""
            }
        )
    }

    /// A list, one place a line, for a command's error.
    #[must_use]
    pub fn lines(&self) -> String {
        let mut s = format!("gatebot found {}; tried, in order:", self.what);
        for (place, what) in &self.tried {
            let _ = write!(s, "\n  {place}: {what}");
        }
        s.push_str(if self.what == NO_CONFIG {
            "\nWrite one with `gatebot init`, or name it with --config or GATEBOT_CONFIG."
        } else if self.endpoints {
            "\nWrite a config with `gatebot init`, or say where gatebot is with --config or \
             GATEBOT_CONFIG (a config file), --socket or GATEBOT_SOCKET (a socket), or --url \
             or GATEBOT_URL (gatebot over TCP, e.g. http://10.0.0.5:8377)."
        } else {
            "\nWrite a config with `gatebot init`, or say where gatebot is with --config or \
             GATEBOT_CONFIG (a config file) or --socket or GATEBOT_SOCKET (a socket)."
        });
        s
    }
}

/// What looking at one candidate file gave.
enum Look {
    /// There, and readable.
    Readable,
    /// Not there: try the next.
    Absent(String),
}

/// Whether `path` is a config file to use; `Err` only for a given file that cannot be
/// read. A file that exists but cannot be read is passed over (an agent's account may
/// not read the system's config, and then finds the system's socket).
fn look(path: &Path) -> Look {
    match std::fs::File::open(path).and_then(|f| f.metadata()) {
        Ok(m) if m.is_file() => Look::Readable,
        Ok(_) => Look::Absent("there, but not a file".into()),
        Err(e) if e.kind() == ErrorKind::NotFound => Look::Absent("not there".into()),
        Err(e) if e.kind() == ErrorKind::PermissionDenied => {
            Look::Absent("there, but this account may not read it".into())
        }
        Err(e) => Look::Absent(format!("cannot be read ({})", crate::files::io_words(&e))),
    }
}

fn named(label: &str, path: &Path) -> String {
    if label.starts_with("./") {
        format!("{label} ({})", path.display())
    } else {
        path.display().to_string()
    }
}

/// The config file: `given` (from `--config` / `GATEBOT_CONFIG`) as it is, else the
/// first of `./bot.toml`, the user's and the system's that is there and readable.
pub fn config_file(given: Option<&Path>, places: &Places) -> Result<ConfigFile, NotFound> {
    let mut tried = Vec::new();
    config_file_into(given, places, &mut tried).ok_or(NotFound {
        what: NO_CONFIG,
        tried,
        endpoints: false,
    })
}

fn config_file_into(
    given: Option<&Path>,
    places: &Places,
    tried: &mut Vec<(String, String)>,
) -> Option<ConfigFile> {
    if let Some(path) = given {
        return Some(ConfigFile {
            path: path.to_path_buf(),
            given: true,
        });
    }
    tried.push(("--config / GATEBOT_CONFIG".into(), "not set".into()));
    for (label, path) in places.config_candidates() {
        let Some(path) = path else {
            tried.push((label, "no home directory (HOME is not set)".into()));
            continue;
        };
        match look(&path) {
            Look::Readable => {
                return Some(ConfigFile { path, given: false });
            }
            Look::Absent(why) => tried.push((named(&label, &path), why)),
        }
    }
    None
}

/// The socket a command of `which` kind talks to (see the module docs). `Err` is a
/// sentence: a config file that is there but broken, or every place tried.
pub fn socket(
    given: Option<&Path>,
    config: Option<&Path>,
    which: Which,
    places: &Places,
) -> Result<Found, Missing> {
    if let Some(s) = given {
        return Ok(Found {
            socket: s.to_path_buf(),
            source: Source::Given,
        });
    }
    let mut tried = vec![(
        "--socket / GATEBOT_SOCKET".to_string(),
        "not set".to_string(),
    )];
    if let Some(file) = config_file_into(config, places, &mut tried) {
        let sockets = Config::sockets(&file.path).map_err(|e| {
            Missing::Broken(format!(
                "{e}\n(pass --socket or set GATEBOT_SOCKET to skip reading the config)"
            ))
        })?;
        let socket = match which {
            Which::Agents => sockets.agents,
            Which::Control => sockets.control,
        };
        let source = if file.given {
            Source::GivenConfig(file.path)
        } else if file.path.parent() == Some(places.cwd.as_path()) {
            Source::WorkingDirectory(file.path)
        } else {
            Source::Installed(file.path)
        };
        return Ok(Found { socket, source });
    }
    for (label, path) in places.socket_candidates(which) {
        let Some(path) = path else {
            tried.push((label, "XDG_RUNTIME_DIR is not set".into()));
            continue;
        };
        match std::fs::metadata(&path) {
            Ok(m) if m.file_type().is_socket() => {
                return Ok(Found {
                    socket: path,
                    source: Source::DefaultSocket,
                })
            }
            Ok(_) => tried.push((path.display().to_string(), "there, but not a socket".into())),
            Err(e) if e.kind() == ErrorKind::NotFound => {
                tried.push((path.display().to_string(), "not there".into()));
            }
            Err(e) => tried.push((
                path.display().to_string(),
                format!("cannot be seen ({})", crate::files::io_words(&e)),
            )),
        }
    }
    Err(Missing::Nowhere(NotFound {
        what: "no config file and no socket",
        tried,
        endpoints: false,
    }))
}

/// What the command line and the environment say about where the agents' commands
/// reach gatebot ([`agents`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Given {
    /// `--url`, each value one endpoint or several separated by commas.
    pub url_flags: Vec<String>,
    /// `--socket`.
    pub socket_flag: Option<PathBuf>,
    /// `GATEBOT_URL`.
    pub url_env: Option<String>,
    /// `GATEBOT_SOCKET`.
    pub socket_env: Option<PathBuf>,
}

impl Given {
    /// The flags, and `GATEBOT_URL` and `GATEBOT_SOCKET` from the environment (empty
    /// counts as unset).
    #[must_use]
    pub fn from_env(url_flags: Vec<String>, socket_flag: Option<PathBuf>) -> Given {
        Given {
            url_flags,
            socket_flag,
            url_env: std::env::var(URL_ENV).ok().filter(|v| !v.is_empty()),
            socket_env: std::env::var_os(SOCKET_ENV)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
        }
    }

    /// The socket given, by flag or else by variable: what the owner's commands use.
    #[must_use]
    pub fn socket(&self) -> Option<&Path> {
        self.socket_flag.as_deref().or(self.socket_env.as_deref())
    }
}

/// The environment variable naming the socket.
pub const SOCKET_ENV: &str = "GATEBOT_SOCKET";

/// Where an agents' command reaches gatebot, and how that was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    /// One Unix socket, or TCP endpoints in the order given.
    pub list: Vec<Endpoint>,
    pub source: Source,
}

/// Where an agents' command (`hook`, `mcp`, `ask`, `worker`, `workflow`) reaches
/// gatebot: `--url`, `--socket`, `GATEBOT_URL`, `GATEBOT_SOCKET`, then the config file
/// and the default sockets as [`socket`] finds them. `Err` is a sentence: a malformed
/// endpoint list, `--url` with `--socket`, or every place tried.
pub fn agents(given: &Given, config: Option<&Path>, places: &Places) -> Result<Endpoints, Missing> {
    let urls = |from: &'static str, values: &[String]| {
        parse_urls(from, values)
            .map(|list| Endpoints {
                list,
                source: Source::Urls(from),
            })
            .map_err(Missing::Broken)
    };
    if !given.url_flags.is_empty() {
        if given.socket_flag.is_some() {
            return Err(Missing::Broken(
                "--url and --socket both say where gatebot is; give one of them".into(),
            ));
        }
        return urls("--url", &given.url_flags);
    }
    if let Some(s) = &given.socket_flag {
        return Ok(Endpoints {
            list: vec![Endpoint::Unix(s.clone())],
            source: Source::Given,
        });
    }
    if let Some(u) = &given.url_env {
        return urls(URL_ENV, std::slice::from_ref(u));
    }
    match socket(given.socket_env.as_deref(), config, Which::Agents, places) {
        Ok(found) => Ok(Endpoints {
            list: vec![Endpoint::Unix(found.socket)],
            source: found.source,
        }),
        Err(Missing::Nowhere(mut n)) => {
            n.what = "no config file, no socket and no endpoint";
            n.tried
                .insert(0, ("--url / GATEBOT_URL".into(), "not set".into()));
            n.endpoints = true;
            Err(Missing::Nowhere(n))
        }
        Err(e) => Err(e),
    }
}

/// Why no socket was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// A config file was found (or given) but does not give the sockets.
    Broken(String),
    /// Nothing anywhere.
    Nowhere(NotFound),
}

impl Missing {
    /// For a hook's deny message.
    #[must_use]
    pub fn one_line(&self) -> String {
        match self {
            Missing::Broken(e) => e.replace('\n', " "),
            Missing::Nowhere(n) => n.one_line(),
        }
    }

    /// For a command's error.
    #[must_use]
    pub fn lines(&self) -> String {
        match self {
            Missing::Broken(e) => e.clone(),
            Missing::Nowhere(n) => n.lines(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Places under `root`: cwd `root/project`, home `root/home`, runtime `root/xdg-run`.
    fn places(root: &Path) -> Places {
        std::fs::create_dir_all(root.join("project")).unwrap();
        Places::new(
            root.join("project"),
            Some(root.join("home")),
            None,
            None,
            Some(root.join("xdg-run")),
            &root.join("sys"),
        )
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn listen(path: &Path) -> std::os::unix::net::UnixListener {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::os::unix::net::UnixListener::bind(path).unwrap()
    }

    #[test]
    fn the_user_directories_follow_xdg_and_fall_back_to_home() {
        let p = Places::new(
            "/p".into(),
            Some("/h".into()),
            Some("/x/config".into()),
            None,
            None,
            Path::new("/"),
        );
        assert_eq!(p.user_config, Some(PathBuf::from("/x/config/gatebot")));
        assert_eq!(p.user_state, Some(PathBuf::from("/h/.local/state/gatebot")));
        assert_eq!(p.user_runtime, None);
        assert_eq!(p.system_config, PathBuf::from("/etc/gatebot"));
        assert_eq!(p.system_runtime, PathBuf::from("/run/gatebot"));
        let p = Places::new(
            "/p".into(),
            Some("/h".into()),
            None,
            None,
            None,
            Path::new("/"),
        );
        assert_eq!(p.user_config, Some(PathBuf::from("/h/.config/gatebot")));
    }

    #[test]
    fn a_given_socket_or_config_wins_over_every_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        write(
            &p.cwd.join("bot.toml"),
            "[queue]\nsocket = \"/here.sock\"\n",
        );
        let f = socket(Some(Path::new("/s.sock")), None, Which::Agents, &p).unwrap();
        assert_eq!((f.socket, f.source), ("/s.sock".into(), Source::Given));
        let given = dir.path().join("other.toml");
        write(&given, "[queue]\ncontrol_socket = \"/other.sock\"\n");
        let f = socket(None, Some(&given), Which::Control, &p).unwrap();
        assert_eq!(f.socket, PathBuf::from("/other.sock"));
        assert_eq!(f.source, Source::GivenConfig(given));
        // A given file that is not there is an error, not a reason to look elsewhere.
        let e = socket(None, Some(&dir.path().join("nope.toml")), Which::Agents, &p)
            .unwrap_err()
            .lines();
        assert!(e.contains("cannot read the config file"), "{e}");
    }

    #[test]
    fn files_are_looked_for_here_then_for_the_user_then_for_the_system() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        let system = p.system_config.join("bot.toml");
        write(&system, "[queue]\nsocket = \"/run/sys.sock\"\n");
        let f = socket(None, None, Which::Agents, &p).unwrap();
        assert_eq!(f.socket, PathBuf::from("/run/sys.sock"));
        assert_eq!(f.source, Source::Installed(system));
        assert!(f.source.is_fixed());

        let user = dir.path().join("home/.config/gatebot/bot.toml");
        write(&user, "[queue]\nsocket = \"user.sock\"\n");
        let f = socket(None, None, Which::Agents, &p).unwrap();
        // Relative paths are relative to the file's directory.
        assert_eq!(f.socket, dir.path().join("home/.config/gatebot/user.sock"));
        assert_eq!(f.source, Source::Installed(user));

        write(&p.cwd.join("bot.toml"), "");
        let f = socket(None, None, Which::Control, &p).unwrap();
        assert_eq!(f.socket, p.cwd.join("gatebot-control.sock"));
        assert_eq!(f.source, Source::WorkingDirectory(p.cwd.join("bot.toml")));
        assert!(!f.source.is_fixed());
        assert_eq!(
            config_file(None, &p).unwrap(),
            ConfigFile {
                path: p.cwd.join("bot.toml"),
                given: false
            }
        );
    }

    #[test]
    fn a_found_file_that_is_broken_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        write(&p.system_config.join("bot.toml"), "[queue]\nsocket = 5\n");
        let e = socket(None, None, Which::Agents, &p).unwrap_err();
        assert!(matches!(e, Missing::Broken(_)));
        assert!(e.lines().contains("bot.toml:2"), "{}", e.lines());
    }

    #[test]
    fn without_a_file_the_default_sockets_are_used_the_users_first() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        let _system = listen(&p.system_runtime.join("gatebot.sock"));
        let f = socket(None, None, Which::Agents, &p).unwrap();
        assert_eq!(f.socket, p.system_runtime.join("gatebot.sock"));
        assert_eq!(f.source, Source::DefaultSocket);
        // The owners' socket is not there: nothing for an owner's command.
        assert!(socket(None, None, Which::Control, &p).is_err());
        let _user = listen(&dir.path().join("xdg-run/gatebot/gatebot.sock"));
        let f = socket(None, None, Which::Agents, &p).unwrap();
        assert_eq!(f.socket, dir.path().join("xdg-run/gatebot/gatebot.sock"));
    }

    #[cfg(unix)]
    #[test]
    fn a_file_this_account_cannot_read_is_passed_over() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        let system = p.system_config.join("bot.toml");
        write(&system, "[queue]\nsocket = \"/nowhere.sock\"\n");
        std::fs::set_permissions(&system, std::fs::Permissions::from_mode(0o000)).unwrap();
        if std::fs::read(&system).is_ok() {
            return; // root reads anything: nothing to check here
        }
        let _system = listen(&p.system_runtime.join("gatebot.sock"));
        let f = socket(None, None, Which::Agents, &p).unwrap();
        assert_eq!(f.socket, p.system_runtime.join("gatebot.sock"));
    }

    #[test]
    fn nothing_found_lists_every_place_tried_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        std::fs::create_dir_all(p.system_runtime.join("gatebot.sock")).unwrap();
        let e = socket(None, None, Which::Agents, &p).unwrap_err();
        let root = dir.path().display();
        assert_eq!(
            e.lines(),
            format!(
                "gatebot found no config file and no socket; tried, in order:\n  \
                 --socket / GATEBOT_SOCKET: not set\n  \
                 --config / GATEBOT_CONFIG: not set\n  \
                 ./bot.toml ({root}/project/bot.toml): not there\n  \
                 {root}/home/.config/gatebot/bot.toml: not there\n  \
                 {root}/sys/etc/gatebot/bot.toml: not there\n  \
                 {root}/xdg-run/gatebot/gatebot.sock: not there\n  \
                 {root}/sys/run/gatebot/gatebot.sock: there, but not a socket\n\
                 Write a config with `gatebot init`, or say where gatebot is with --config or \
                 GATEBOT_CONFIG (a config file) or --socket or GATEBOT_SOCKET (a socket)."
            )
        );
        assert!(!e.one_line().contains('\n'));
        assert!(e
            .one_line()
            .contains("tried, in order: --socket / GATEBOT_SOCKET: not set; --config"));

        let bare = Places::new(
            p.cwd.clone(),
            None,
            None,
            None,
            None,
            &dir.path().join("sys"),
        );
        let e = config_file(None, &bare).unwrap_err().lines();
        assert!(
            e.contains("the user's bot.toml: no home directory (HOME is not set)"),
            "{e}"
        );
    }

    fn given(
        urls: &[&str],
        socket: Option<&str>,
        url_env: Option<&str>,
        socket_env: Option<&str>,
    ) -> Given {
        Given {
            url_flags: urls.iter().map(|u| (*u).to_string()).collect(),
            socket_flag: socket.map(PathBuf::from),
            url_env: url_env.map(str::to_string),
            socket_env: socket_env.map(PathBuf::from),
        }
    }

    #[test]
    fn agents_take_a_flag_over_a_variable_and_endpoints_over_a_socket() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        write(
            &p.cwd.join("bot.toml"),
            "[queue]\nsocket = \"/here.sock\"\n",
        );
        let tcp = |s: &str| super::super::endpoint::parse_urls("t", &[s.to_string()]).unwrap();
        let found = |g: Given| agents(&g, None, &p).unwrap();

        let f = found(given(
            &["http://a:1", "http://b:2"],
            None,
            Some("http://c:3"),
            Some("/e.sock"),
        ));
        assert_eq!(f.list, tcp("http://a:1,http://b:2"));
        assert_eq!(f.source, Source::Urls("--url"));
        let f = found(given(
            &[],
            Some("/f.sock"),
            Some("http://c:3"),
            Some("/e.sock"),
        ));
        assert_eq!(f.list, vec![Endpoint::Unix("/f.sock".into())]);
        assert_eq!(f.source, Source::Given);
        let f = found(given(
            &[],
            None,
            Some("http://c:3,https://d"),
            Some("/e.sock"),
        ));
        assert_eq!(f.list, tcp("http://c:3,https://d:443"));
        assert_eq!(f.source, Source::Urls("GATEBOT_URL"));
        let f = found(given(&[], None, None, Some("/e.sock")));
        assert_eq!(f.list, vec![Endpoint::Unix("/e.sock".into())]);
        let f = found(given(&[], None, None, None));
        assert_eq!(f.list, vec![Endpoint::Unix("/here.sock".into())]);

        let e = agents(
            &given(&["http://a:1"], Some("/f.sock"), None, None),
            None,
            &p,
        )
        .unwrap_err()
        .lines();
        assert!(e.contains("--url and --socket"), "{e}");
        let e = agents(
            &given(&[], None, Some("http://a:1,ftp://b"), None),
            None,
            &p,
        )
        .unwrap_err()
        .one_line();
        assert!(e.starts_with("GATEBOT_URL: `ftp://b`"), "{e}");
    }

    #[test]
    fn nothing_found_for_an_agent_names_the_endpoints_too() {
        let dir = tempfile::tempdir().unwrap();
        let p = places(dir.path());
        let e = agents(&Given::default(), None, &p).unwrap_err();
        assert!(
            e.lines().starts_with(
                "gatebot found no config file, no socket and no endpoint; tried, in order:\n  \
                 --url / GATEBOT_URL: not set\n  --socket / GATEBOT_SOCKET: not set\n"
            ),
            "{}",
            e.lines()
        );
        assert!(e
            .lines()
            .ends_with("or --url or GATEBOT_URL (gatebot over TCP, e.g. http://10.0.0.5:8377)."));
        assert!(e
            .one_line()
            .contains("(or GATEBOT_URL, for gatebot on another machine)"));
    }
}
