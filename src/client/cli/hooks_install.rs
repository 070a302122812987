//! `gatebot hooks install claude-code|codex|gemini [--project DIR | --user] [--dry-run]`
//! and `gatebot hooks status`: gatebot's hook in the agent's own settings file, in the
//! shapes docs/integrations.md documents, added beside whatever the file holds.
//!
//! - Claude Code: `.claude/settings.json` (`--user`: `~/.claude/settings.json`, or
//!   `$CLAUDE_CONFIG_DIR`); `PreToolUse` (or `--event permission-request`); with `--mcp`
//!   also the MCP approval tool in the project's `.mcp.json` and `MCP_TOOL_TIMEOUT` in
//!   the settings' `env`.
//! - Codex: `.codex/hooks.json` (`--user`: `~/.codex/hooks.json`, or `$CODEX_HOME`);
//!   `PreToolUse` (the only one `codex exec` fires) or `PermissionRequest`.
//! - Gemini CLI: `.gemini/settings.json` (`--user`: `~/.gemini/settings.json`);
//!   `BeforeTool`.
//!
//! A second run changes nothing ("already installed"). A file that is not JSON, or whose
//! `hooks` are not shaped as the agent reads them, is left untouched, with an error
//! that names what is wrong. The hook's command finds the daemon as every command does
//! ([`crate::client::discover`]); when the owner's set-up is found only from here (a
//! `./bot.toml`, `--config`, `--socket` or their variables), the command names the
//! socket itself, so it works in the agent's directory too. Endpoints given with `--url`
//! or `GATEBOT_URL` (gatebot on other machines) are named in the command the same way,
//! with `--ca-file` when one is given; the agent's token never is (the hook reads
//! `GATEBOT_TOKEN` from the agent's environment).

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand, ValueEnum};

use super::ordered_json::Json;
use super::out::outln;
use super::writing::{read_for_edit, target, write_whole};
use super::{Where, EXIT_GO};
use crate::client::discover::{self, Found, Missing, Places, Which};
use crate::diff::unified;

#[derive(Debug, Subcommand)]
pub enum HooksAction {
    /// Add gatebot's hook to an agent's own settings file (Claude Code, Codex, Gemini
    /// CLI), keeping everything else in it; a second run changes nothing.
    Install(InstallArgs),
    /// Say where gatebot's hooks are installed, for this project and for the user.
    Status {
        /// The project to look in (default: this directory).
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// The agent: claude-code, codex or gemini.
    pub client: Client,
    /// The project whose settings get the hook (default: this directory).
    #[arg(long, value_name = "DIR", conflicts_with = "user")]
    pub project: Option<PathBuf>,
    /// The user's settings instead: the hook runs in every project.
    #[arg(long)]
    pub user: bool,
    /// Print what would change, as a diff, and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The agent's name in gatebot (default: claude-code, codex or gemini).
    #[arg(long)]
    pub agent: Option<String>,
    /// Claude Code and Codex: which hook (default: pre-tool-use, before every call;
    /// permission-request fires only where the agent would ask its user).
    #[arg(long, value_enum)]
    pub event: Option<HookEvent>,
    /// Claude Code: also add gatebot's MCP approval tool (`gatebot mcp`), for
    /// `claude -p --permission-prompt-tool mcp__gatebot__request_approval`.
    #[arg(long)]
    pub mcp: bool,
}

/// The agents gatebot has hooks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Client {
    ClaudeCode,
    Codex,
    Gemini,
}

/// Which of an agent's hooks gatebot answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HookEvent {
    PreToolUse,
    PermissionRequest,
}

impl Client {
    const ALL: [Client; 3] = [Client::ClaudeCode, Client::Codex, Client::Gemini];

    fn name(self) -> &'static str {
        match self {
            Client::ClaudeCode => "Claude Code",
            Client::Codex => "Codex",
            Client::Gemini => "Gemini CLI",
        }
    }

    fn arg(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::Codex => "codex",
            Client::Gemini => "gemini",
        }
    }

    /// The events gatebot answers, the first being the default.
    fn events(self) -> &'static [&'static str] {
        match self {
            Client::ClaudeCode | Client::Codex => &["PreToolUse", "PermissionRequest"],
            Client::Gemini => &["BeforeTool"],
        }
    }

    /// The settings file of a project, or the user's.
    fn settings(self, scope: &Scope, env: &Env) -> Result<PathBuf, String> {
        let (project, user) = match self {
            Client::ClaudeCode => (".claude/settings.json", "settings.json"),
            Client::Codex => (".codex/hooks.json", "hooks.json"),
            Client::Gemini => (".gemini/settings.json", "settings.json"),
        };
        match scope {
            Scope::Project(dir) => Ok(dir.join(project)),
            Scope::User => Ok(self.user_dir(env)?.join(user)),
        }
    }

    fn user_dir(self, env: &Env) -> Result<PathBuf, String> {
        let own = match self {
            Client::ClaudeCode => env.claude_config_dir.clone(),
            Client::Codex => env.codex_home.clone(),
            Client::Gemini => None,
        };
        let dot = match self {
            Client::ClaudeCode => ".claude",
            Client::Codex => ".codex",
            Client::Gemini => ".gemini",
        };
        own.or_else(|| env.places.home.as_ref().map(|h| h.join(dot)))
            .ok_or_else(|| "HOME is not set, so the user's settings cannot be found".into())
    }
}

/// Where the settings go.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Scope {
    Project(PathBuf),
    User,
}

/// What the commands read from the environment.
#[derive(Debug, Clone)]
struct Env {
    places: Places,
    claude_config_dir: Option<PathBuf>,
    codex_home: Option<PathBuf>,
    /// `$PATH`, to tell whether `gatebot` is found there.
    path: Option<std::ffi::OsString>,
}

impl Env {
    fn read() -> Env {
        let dir = |name: &str| {
            std::env::var_os(name)
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
        };
        Env {
            places: Places::from_env(),
            claude_config_dir: dir("CLAUDE_CONFIG_DIR"),
            codex_home: dir("CODEX_HOME"),
            path: std::env::var_os("PATH"),
        }
    }
}

pub(super) fn run(action: HooksAction, at: &Where) -> Result<u8, String> {
    let env = Env::read();
    match action {
        HooksAction::Install(args) => install(&args, at, &env),
        HooksAction::Status { project } => {
            let project = project.unwrap_or_else(|| env.places.cwd.clone());
            status(&absolute(&project, &env.places.cwd), &env);
            Ok(EXIT_GO)
        }
    }
}

fn absolute(p: &Path, cwd: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    }
}

/// How the hook's command names gatebot, and what it says about reaching it.
struct Reach {
    /// `gatebot`, or this program's path when `gatebot` is not on PATH.
    program: String,
    /// `--socket PATH` when the set-up is found only from here.
    socket: Option<PathBuf>,
    /// `--url URL` for each endpoint given with `--url` or `GATEBOT_URL`.
    urls: Vec<String>,
    /// `--ca-file FILE`, given with the endpoints.
    ca_file: Option<PathBuf>,
    notes: Vec<String>,
}

impl Reach {
    /// The command's words after the subcommand that say where gatebot is.
    fn words(&self) -> Vec<String> {
        let mut w = Vec::new();
        for url in &self.urls {
            w.extend(["--url".to_string(), url.clone()]);
        }
        if let Some(ca) = &self.ca_file {
            w.extend(["--ca-file".to_string(), ca.display().to_string()]);
        }
        if let Some(s) = &self.socket {
            w.extend(["--socket".to_string(), s.display().to_string()]);
        }
        w
    }
}

fn reach(scope: &Scope, at: &Where, env: &Env) -> Result<Reach, String> {
    let (socket, config) = (at.given.socket(), at.config.as_deref());
    let mut notes = Vec::new();
    let program = if on_path("gatebot", env.path.as_deref()) {
        "gatebot".to_string()
    } else {
        let me = std::env::current_exe()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| "gatebot".into());
        notes.push(format!(
            "gatebot is not on PATH, so the hook names this program by its path ({me}); \
             install gatebot on PATH (for example in /usr/local/bin) and run this again \
             to use the plain name"
        ));
        shell_word(&me)
    };
    if !at.given.url_flags.is_empty() || at.given.url_env.is_some() {
        let found = discover::agents(&at.given, config, &env.places).map_err(|m| m.lines())?;
        let urls: Vec<String> = found.list.iter().map(ToString::to_string).collect();
        let from = match found.source {
            discover::Source::Urls(from) => from,
            _ => "--url",
        };
        notes.push(format!(
            "the hook reaches gatebot at {} (given with {from}) and sends the agent's token \
             from GATEBOT_TOKEN: set it in the agent's environment (a token is never written \
             into the settings)",
            urls.join(", ")
        ));
        return Ok(Reach {
            program,
            socket: None,
            urls,
            ca_file: at.ca_file.clone(),
            notes,
        });
    }
    let here = discover::socket(socket, config, Which::Agents, &env.places);
    let there = match scope {
        Scope::Project(dir) => {
            let mut p = env.places.clone();
            p.cwd.clone_from(dir);
            discover::socket(None, None, Which::Agents, &p)
        }
        Scope::User => match &here {
            Ok(f) if f.source.is_fixed() => here.clone(),
            _ => Err(Missing::Broken(String::new())),
        },
    };
    let where_ = match scope {
        Scope::Project(dir) => format!("in {}", dir.display()),
        Scope::User => "in every directory".to_string(),
    };
    let socket = match (&here, &there) {
        (Ok(h), Ok(t)) if h.socket == t.socket => {
            notes.push(format!(
                "{where_} the hook reaches gatebot at {} ({}){}",
                h.socket.display(),
                describe(h),
                not_running(&h.socket)
            ));
            None
        }
        (Ok(h), _) => {
            notes.push(format!(
                "gatebot is found here through {}, which the agent would not find {where_}: \
                 the hook names the socket, {}",
                describe(h),
                h.socket.display()
            ));
            Some(h.socket.clone())
        }
        (Err(_), Ok(t)) => {
            notes.push(format!(
                "{where_} the hook reaches gatebot at {} ({}){}",
                t.socket.display(),
                describe(t),
                not_running(&t.socket)
            ));
            None
        }
        (Err(e), Err(_)) => {
            notes.push(format!(
                "until gatebot can be found, the hook denies every call: {}",
                e.lines()
            ));
            None
        }
    };
    Ok(Reach {
        program,
        socket,
        urls: Vec::new(),
        ca_file: None,
        notes,
    })
}

/// What to add when nothing listens at `socket` yet.
fn not_running(socket: &Path) -> &'static str {
    if socket.exists() {
        ""
    } else {
        "; gatebot is not running yet: start it with `gatebot run`"
    }
}

fn describe(f: &Found) -> String {
    use discover::Source;
    match &f.source {
        Source::Given => "--socket or GATEBOT_SOCKET".into(),
        Source::GivenConfig(p) => format!("--config or GATEBOT_CONFIG, {}", p.display()),
        Source::WorkingDirectory(p) | Source::Installed(p) => format!("from {}", p.display()),
        Source::DefaultSocket => "the default socket".into(),
        Source::Urls(from) => (*from).into(),
    }
}

/// True when `name` is an executable file in one of `path`'s directories.
fn on_path(name: &str, path: Option<&std::ffi::OsStr>) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.is_some_and(|p| {
        std::env::split_paths(p).any(|dir| {
            std::fs::metadata(dir.join(name))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// `s` as one word for a shell (agents run hook commands through one).
fn shell_word(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@%,=".contains(c));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// gatebot's hook command for `client`, as docs/integrations.md writes it.
fn hook_command(client: Client, agent: &str, reach: &Reach) -> String {
    let mut cmd = format!(
        "{} hook {} --agent {}",
        reach.program,
        client.arg(),
        shell_word(agent)
    );
    if client == Client::Gemini {
        cmd.push_str(" --timeout 290s");
    }
    for word in reach.words() {
        cmd.push(' ');
        cmd.push_str(&shell_word(&word));
    }
    cmd
}

/// The group added under `hooks.EVENT`: docs/integrations.md's shape for `client`.
fn hook_group(client: Client, command: &str) -> Json {
    Json::from_value(match client {
        Client::ClaudeCode | Client::Codex => serde_json::json!({
            "matcher": "*",
            "hooks": [{"type": "command", "command": command, "timeout": 600}]
        }),
        Client::Gemini => serde_json::json!({
            "matcher": ".*",
            "hooks": [{"name": "gatebot", "type": "command", "command": command, "timeout": 300_000}]
        }),
    })
    .reorder(&["matcher", "hooks", "name", "type", "command", "timeout"])
}

impl Json {
    /// The same value with each object's keys in `order` (others after, as they were).
    fn reorder(self, order: &[&str]) -> Json {
        match self {
            Json::Object(mut entries) => {
                entries
                    .sort_by_key(|(k, _)| order.iter().position(|o| o == k).unwrap_or(order.len()));
                Json::Object(
                    entries
                        .into_iter()
                        .map(|(k, v)| (k, v.reorder(order)))
                        .collect(),
                )
            }
            Json::Array(items) => {
                Json::Array(items.into_iter().map(|v| v.reorder(order)).collect())
            }
            other => other,
        }
    }
}

/// A settings file read for editing: its text (none when there is no file) and value.
struct Settings {
    path: PathBuf,
    old: Option<String>,
    value: Json,
}

impl Settings {
    fn read(path: &Path) -> Result<Settings, String> {
        let path = target(path)?;
        let old = read_for_edit(&path)?;
        let value = match &old {
            None => Json::Object(Vec::new()),
            Some(text) if text.trim().is_empty() => Json::Object(Vec::new()),
            Some(text) => Json::parse(text).map_err(|e| {
                format!(
                    "{} is not valid JSON ({e}); it was left as it is. Fix it, or add the hook \
                     by hand (docs/integrations.md)",
                    path.display()
                )
            })?,
        };
        if !matches!(value, Json::Object(_)) {
            return Err(format!(
                "{} holds {}, not a JSON object of settings; it was left as it is",
                path.display(),
                value.kind()
            ));
        }
        Ok(Settings { path, old, value })
    }

    /// The hooks gatebot finds: `(event, command)` of every command hook whose program
    /// is gatebot. Errors when `hooks` is not shaped as the agents read it.
    fn gatebot_hooks(&self) -> Result<Vec<(String, String)>, String> {
        let bad = |what: String| {
            format!(
                "{}: {what}; it was left as it is. Fix it, or add the hook by hand \
                 (docs/integrations.md)",
                self.path.display()
            )
        };
        let mut found = Vec::new();
        let Some(hooks) = self.value.get("hooks") else {
            return Ok(found);
        };
        let Json::Object(events) = hooks else {
            return Err(bad(format!("\"hooks\" is {}, not an object", hooks.kind())));
        };
        for (event, groups) in events {
            let Json::Array(groups) = groups else {
                return Err(bad(format!(
                    "\"hooks\".\"{event}\" is {}, not a list",
                    groups.kind()
                )));
            };
            for (i, group) in groups.iter().enumerate() {
                if !matches!(group, Json::Object(_)) {
                    return Err(bad(format!(
                        "\"hooks\".\"{event}\" item {} is {}, not an object",
                        i + 1,
                        group.kind()
                    )));
                }
                let Some(list) = group.get("hooks") else {
                    continue;
                };
                let Json::Array(list) = list else {
                    return Err(bad(format!(
                        "\"hooks\".\"{event}\" item {}: \"hooks\" is {}, not a list",
                        i + 1,
                        list.kind()
                    )));
                };
                for hook in list {
                    if let Some(cmd) = hook.get("command").and_then(Json::as_str) {
                        if is_gatebot_hook(cmd) {
                            found.push((event.clone(), cmd.to_string()));
                        }
                    }
                }
            }
        }
        Ok(found)
    }

    fn new_text(&self) -> String {
        self.value.pretty()
    }

    /// True when writing would change what the file holds (a file that holds the same
    /// settings, however formatted, is left alone).
    fn changed(&self) -> bool {
        match &self.old {
            None => true,
            Some(text) if text.trim().is_empty() => true,
            Some(text) => Json::parse(text).ok().as_ref() != Some(&self.value),
        }
    }

    fn diff(&self) -> String {
        let name = self.path.display().to_string();
        let from = if self.old.is_some() {
            name.clone()
        } else {
            "/dev/null".to_string()
        };
        unified(
            &from,
            &name,
            self.old.as_deref().unwrap_or(""),
            &self.new_text(),
        )
    }
}

/// `gatebot hook …` or `…/gatebot hook …`, possibly quoted.
fn is_gatebot_hook(cmd: &str) -> bool {
    let cmd = cmd.trim_start();
    // The program, quoted or not, and what follows it.
    let (program, rest) = match cmd.chars().next() {
        Some(q @ ('\'' | '"')) => match cmd[1..].find(q) {
            Some(end) => (&cmd[1..=end], &cmd[end + 2..]),
            None => return false,
        },
        _ => cmd.split_at(cmd.find(char::is_whitespace).unwrap_or(cmd.len())),
    };
    let program = program.rsplit('/').next().unwrap_or(program);
    program == "gatebot" && rest.split_whitespace().next() == Some("hook")
}

/// What one file's change came to.
enum Change {
    Added,
    Already(String),
}

fn install(args: &InstallArgs, at: &Where, env: &Env) -> Result<u8, String> {
    let client = args.client;
    let event = hook_event(args)?;
    let scope = install_scope(args, env)?;
    let agent = agent_name(args)?;
    let reach = reach(&scope, at, env)?;
    let command = hook_command(client, &agent, &reach);

    // Read and check every file before writing any (the hook is added in memory).
    let mut settings = Settings::read(&client.settings(&scope, env)?)?;
    let change = add_hook(&mut settings, client, event, &command)?;
    let mcp = if args.mcp {
        Some(McpChange::prepare(&scope, &agent, &reach)?)
    } else {
        None
    };
    if args.mcp {
        set_mcp_timeout(&mut settings)?;
    }

    let mut wrote = false;
    for file in std::iter::once(&settings).chain(mcp.as_ref().and_then(|m| m.settings.as_ref())) {
        if !file.changed() {
            continue;
        }
        if args.dry_run {
            outln!("{}", file.diff().trim_end());
        } else {
            write_whole(&file.path, &file.new_text(), 0o644)?;
            wrote = true;
        }
    }
    let where_ = settings.path.display();
    match &change {
        Change::Added if args.dry_run => {
            outln!("Would add gatebot's {event} hook to {where_}: {command}");
        }
        Change::Added => outln!("Added gatebot's {event} hook to {where_}: {command}"),
        Change::Already(cmd) if *cmd == command => {
            outln!("Already installed in {where_} ({event}: {cmd}).");
        }
        Change::Already(cmd) => outln!(
            "Already installed in {where_} ({event}: {cmd}); left as it is. This run would \
             have written `{command}`: remove the old one first to use it."
        ),
    }
    if let Some(m) = &mcp {
        m.report(args.dry_run);
    }
    if args.dry_run {
        outln!("Nothing was written (--dry-run).");
    } else if !wrote && matches!(change, Change::Already(_)) {
        outln!("Nothing changed.");
    }
    for note in &reach.notes {
        outln!("Note: {note}.");
    }
    if client == Client::Codex {
        outln!("{}", codex_trust(&scope));
    }
    Ok(EXIT_GO)
}

/// The hook event to install under: the client's first, or PermissionRequest when
/// asked (not for Gemini CLI, whose one hook is BeforeTool); `--mcp` only for Claude Code.
fn hook_event(args: &InstallArgs) -> Result<&'static str, String> {
    let client = args.client;
    if args.mcp && client != Client::ClaudeCode {
        return Err("--mcp is for Claude Code only (its --permission-prompt-tool)".into());
    }
    Ok(match (client, args.event) {
        (Client::Gemini, Some(_)) => {
            return Err(
                "--event is for Claude Code and Codex; Gemini CLI's hook is BeforeTool".into(),
            )
        }
        (_, Some(HookEvent::PermissionRequest)) => "PermissionRequest",
        _ => client.events()[0],
    })
}

/// The user's settings, or a project's (`--project DIR`, else the current directory).
fn install_scope(args: &InstallArgs, env: &Env) -> Result<Scope, String> {
    if args.user {
        return Ok(Scope::User);
    }
    let dir = args
        .project
        .clone()
        .unwrap_or_else(|| env.places.cwd.clone());
    let dir = absolute(&dir, &env.places.cwd);
    if !dir.is_dir() {
        return Err(format!("the project {} is not a directory", dir.display()));
    }
    Ok(Scope::Project(dir))
}

/// The agent the hook asks as: `--agent`, else the client's own name.
fn agent_name(args: &InstallArgs) -> Result<String, String> {
    let agent = args
        .agent
        .clone()
        .unwrap_or_else(|| args.client.arg().to_string());
    if !crate::names::valid_agent_name(&agent) {
        return Err(format!(
            "`{agent}` is not an agent name gatebot accepts (letters, digits, `-`, `_` and `.`, at most 64)"
        ));
    }
    Ok(agent)
}

/// Adds gatebot's hook under `event`, unless it is there already; gatebot's hook under
/// another event is refused (each call would be asked twice).
fn add_hook(
    settings: &mut Settings,
    client: Client,
    event: &'static str,
    command: &str,
) -> Result<Change, String> {
    let existing = settings.gatebot_hooks()?;
    if let Some((_, cmd)) = existing.iter().find(|(e, _)| e == event) {
        return Ok(Change::Already(cmd.clone()));
    }
    if let Some((other, cmd)) = existing.first() {
        return Err(format!(
            "{} already has gatebot's hook under {other} (`{cmd}`): with both, each call \
             would be asked twice. Remove that one first, or install the same one (--event \
             {}); the file was left as it is",
            settings.path.display(),
            if other == "PermissionRequest" {
                "permission-request"
            } else {
                "pre-tool-use"
            }
        ));
    }
    let hooks = settings
        .value
        .entry("hooks", Json::Object(Vec::new()))
        .expect("settings are an object");
    let list = hooks
        .entry(event, Json::Array(Vec::new()))
        .expect("hooks are an object");
    if let Json::Array(items) = list {
        items.push(hook_group(client, command));
    }
    Ok(Change::Added)
}

/// The MCP tool's calls wait as long as a hook's: Claude Code's MCP timeout must be
/// longer than gatebot's (docs/integrations.md).
fn set_mcp_timeout(settings: &mut Settings) -> Result<(), String> {
    match settings.value.entry("env", Json::Object(Vec::new())) {
        Some(t @ Json::Object(_)) => {
            t.entry("MCP_TOOL_TIMEOUT", Json::String("600000".into()));
            Ok(())
        }
        _ => Err(format!(
            "{}: \"env\" is not an object; it was left as it is",
            settings.path.display()
        )),
    }
}

/// The MCP approval tool for Claude Code: the project's `.mcp.json`; for the user, the
/// command to run (the user's MCP servers live in Claude Code's own state file).
struct McpChange {
    /// The project's `.mcp.json`; `None` for the user.
    settings: Option<Settings>,
    added: bool,
    existing: Option<String>,
    user_command: Option<String>,
}

impl McpChange {
    fn prepare(scope: &Scope, agent: &str, reach: &Reach) -> Result<McpChange, String> {
        let mut args = vec![
            Json::String("mcp".into()),
            Json::String("--agent".into()),
            Json::String(agent.into()),
        ];
        args.extend(reach.words().into_iter().map(Json::String));
        let program = reach.program.trim_matches('\'').to_string();
        let dir = match scope {
            Scope::Project(dir) => dir.clone(),
            Scope::User => {
                let words: Vec<String> = args
                    .iter()
                    .filter_map(|a| a.as_str().map(shell_word))
                    .collect();
                return Ok(McpChange {
                    settings: None,
                    added: false,
                    existing: None,
                    user_command: Some(format!(
                        "claude mcp add --scope user gatebot -- {} {}",
                        shell_word(&program),
                        words.join(" ")
                    )),
                });
            }
        };
        let mut settings = Settings::read(&dir.join(".mcp.json"))?;
        let path = settings.path.display().to_string();
        let servers = settings
            .value
            .entry("mcpServers", Json::Object(Vec::new()))
            .expect("settings are an object");
        if !matches!(servers, Json::Object(_)) {
            return Err(format!(
                "{path}: \"mcpServers\" is {}, not an object; it was left as it is",
                servers.kind()
            ));
        }
        let existing = servers.get("gatebot").map(|s| {
            let words: Vec<String> = std::iter::once(s.get("command"))
                .chain(match s.get("args") {
                    Some(Json::Array(a)) => a.iter().map(Some).collect(),
                    _ => Vec::new(),
                })
                .flatten()
                .filter_map(|w| w.as_str().map(str::to_string))
                .collect();
            words.join(" ")
        });
        let added = existing.is_none();
        if added {
            servers.entry(
                "gatebot",
                Json::Object(vec![
                    ("command".into(), Json::String(program)),
                    ("args".into(), Json::Array(args)),
                ]),
            );
        }
        Ok(McpChange {
            settings: Some(settings),
            added,
            existing,
            user_command: None,
        })
    }

    fn report(&self, dry_run: bool) {
        if let Some(cmd) = &self.user_command {
            outln!(
                "For every project, add the MCP approval tool with Claude Code's own command \
                 (gatebot does not edit Claude Code's state file): {cmd}"
            );
        } else if let Some(s) = &self.settings {
            if self.added {
                outln!(
                    "{} gatebot's MCP approval tool to {}",
                    if dry_run { "Would add" } else { "Added" },
                    s.path.display()
                );
            } else if let Some(e) = &self.existing {
                outln!(
                    "The MCP server \"gatebot\" is already in {} ({e}); left as it is.",
                    s.path.display()
                );
            }
        }
        outln!(
            "Use it with: claude -p --permission-prompt-tool mcp__gatebot__request_approval \"…\""
        );
    }
}

fn codex_trust(scope: &Scope) -> String {
    let project = match scope {
        Scope::Project(dir) => format!(
            " Codex also loads {}/.codex/hooks.json only in a project it trusts.",
            dir.display()
        ),
        Scope::User => String::new(),
    };
    format!(
        "Codex runs a new or changed hook only once you trust it: start `codex`; when it \
         says \"Hooks need review\", open /hooks, review gatebot's hook and trust it. Until \
         then Codex runs every call unchecked.{project}"
    )
}

/// `gatebot hooks status`: for each agent, the project's and the user's file.
fn status(project: &Path, env: &Env) {
    for client in Client::ALL {
        outln!("{}:", client.name());
        let mut codex_hook = false;
        for (label, scope) in [
            ("project", Scope::Project(project.to_path_buf())),
            ("user", Scope::User),
        ] {
            let path = match client.settings(&scope, env) {
                Ok(p) => p,
                Err(e) => {
                    outln!("  {label}: {e}");
                    continue;
                }
            };
            let line = match std::fs::metadata(&path) {
                Err(_) => "no file".to_string(),
                Ok(_) => match Settings::read(&path).and_then(|s| s.gatebot_hooks()) {
                    Err(e) => format!("cannot be read: {e}"),
                    Ok(found) if found.is_empty() => "no gatebot hook".to_string(),
                    Ok(found) => {
                        codex_hook |= client == Client::Codex;
                        found
                            .iter()
                            .map(|(event, cmd)| format!("{event}: {cmd}"))
                            .collect::<Vec<_>>()
                            .join("; ")
                    }
                },
            };
            outln!("  {label} {}: {line}", path.display());
        }
        if client == Client::ClaudeCode {
            let mcp = project.join(".mcp.json");
            if let Ok(s) = Settings::read(&mcp) {
                if let Some(server) = s.value.get("mcpServers").and_then(|m| m.get("gatebot")) {
                    let cmd = server.get("command").and_then(Json::as_str).unwrap_or("?");
                    outln!("  MCP approval tool {}: {cmd} …", mcp.display());
                }
            }
        }
        if codex_hook {
            outln!(
                "  Codex runs the hook only once you trust it: if it says \"Hooks need \
                 review\", open /hooks in `codex` and trust gatebot's hook."
            );
        }
    }
    let mut places = env.places.clone();
    places.cwd = project.to_path_buf();
    match discover::socket(None, None, Which::Agents, &places) {
        Ok(f) => outln!(
            "From {}, the hooks reach gatebot at {} ({}){}.",
            project.display(),
            f.socket.display(),
            describe(&f),
            not_running(&f.socket)
        ),
        Err(e) => outln!(
            "From {}, the hooks find no gatebot, and deny every call: {}",
            project.display(),
            e.one_line()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gatebots_hooks_are_told_from_others() {
        assert!(is_gatebot_hook(
            "gatebot hook claude-code --agent claude-code"
        ));
        assert!(is_gatebot_hook("'/opt/my tools/gatebot' hook codex"));
        assert!(is_gatebot_hook(
            "/usr/local/bin/gatebot hook gemini --timeout 290s"
        ));
        assert!(!is_gatebot_hook("gatebot mcp"));
        assert!(!is_gatebot_hook("./lint.sh hook"));
    }

    #[test]
    fn words_are_quoted_for_the_shell_only_when_needed() {
        assert_eq!(
            shell_word("/usr/local/bin/gatebot"),
            "/usr/local/bin/gatebot"
        );
        assert_eq!(shell_word("/a b/it's"), "'/a b/it'\\''s'");
    }

    #[test]
    fn the_groups_have_the_documented_shapes() {
        let mut reach = Reach {
            program: "gatebot".into(),
            socket: None,
            urls: Vec::new(),
            ca_file: None,
            notes: Vec::new(),
        };
        let c = hook_command(Client::ClaudeCode, "claude-code", &reach);
        assert_eq!(
            serde_json::to_string(&hook_group(Client::ClaudeCode, &c)).unwrap(),
            r#"{"matcher":"*","hooks":[{"type":"command","command":"gatebot hook claude-code --agent claude-code","timeout":600}]}"#
        );
        let g = hook_command(Client::Gemini, "gemini", &reach);
        assert_eq!(
            serde_json::to_string(&hook_group(Client::Gemini, &g)).unwrap(),
            r#"{"matcher":".*","hooks":[{"name":"gatebot","type":"command","command":"gatebot hook gemini --agent gemini --timeout 290s","timeout":300000}]}"#
        );
        // Endpoints given to `hooks install` are named in the command; a token never is.
        reach.urls = vec!["http://10.0.0.5:8377".into(), "https://b:8377".into()];
        reach.ca_file = Some("/etc/gatebot/ca.pem".into());
        assert_eq!(
            hook_command(Client::Codex, "codex", &reach),
            "gatebot hook codex --agent codex --url http://10.0.0.5:8377 --url https://b:8377 \
             --ca-file /etc/gatebot/ca.pem"
        );
    }
}
