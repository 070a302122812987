//! `gatebot init`: writes a commented `bot.toml` for the owner's case, from flags, or
//! by asking on a terminal: a user's install (the config in `~/.config/gatebot`, the
//! database in `~/.local/state/gatebot`, the sockets in `$XDG_RUNTIME_DIR/gatebot`) or
//! the system's (README, "Running as a service": `/etc/gatebot`, `/var/lib/gatebot`,
//! `/run/gatebot`); Telegram and Slack with their tokens in files (the file never holds
//! a token); the approvers; one agent. It never replaces a file unless told to
//! (`--force`, which keeps the old one as `bot.toml.bak`), and checks what it wrote as
//! `gatebot check-config` does, then says what is left to do.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::Args;

use super::out::outln;
use super::writing::write_whole;
use super::EXIT_GO;
use crate::client::discover::{Places, AGENTS_SOCKET, CONFIG_NAME, CONTROL_SOCKET};
use crate::config::file::STARTERS;
use crate::config::Config;
use crate::settings::Starter;

const TIERS: [&str; 4] = ["draft_only", "supervised", "semi_autonomous", "autonomous"];

#[derive(Debug, Args, Default, Clone)]
pub struct InitArgs {
    /// For just you (the default): the config in ~/.config/gatebot, the database in
    /// ~/.local/state/gatebot, the sockets in $XDG_RUNTIME_DIR/gatebot.
    #[arg(long, conflicts_with = "system")]
    pub user: bool,
    /// For a system service (README, "Running as a service"): /etc/gatebot/bot.toml,
    /// the database in /var/lib/gatebot, the sockets in /run/gatebot, chat tokens
    /// through systemd's credentials.
    #[arg(long)]
    pub system: bool,
    /// The database file, instead of the install's.
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
    /// The agents' socket, instead of the install's.
    #[arg(long, value_name = "PATH")]
    pub agents_socket: Option<PathBuf>,
    /// The owners' socket, instead of the install's.
    #[arg(long, value_name = "PATH")]
    pub control_socket: Option<PathBuf>,
    /// Ask owners on Telegram.
    #[arg(long)]
    pub telegram: bool,
    /// The file that holds the Telegram bot token (default: telegram-token beside the
    /// config; with --system, systemd's credential).
    #[arg(long, value_name = "PATH")]
    pub telegram_token_file: Option<String>,
    /// A Telegram user id allowed to decide; repeat it for more (`gatebot connect
    /// telegram --write` adds yours).
    #[arg(long = "telegram-approver", value_name = "ID")]
    pub telegram_approvers: Vec<u64>,
    /// Ask owners on Slack.
    #[arg(long)]
    pub slack: bool,
    /// The file that holds the Slack bot token (xoxb-…).
    #[arg(long, value_name = "PATH")]
    pub slack_bot_token_file: Option<String>,
    /// The file that holds the Slack app-level token (xapp-…).
    #[arg(long, value_name = "PATH")]
    pub slack_app_token_file: Option<String>,
    /// A Slack channel id (C…) for the prompts; repeat it for more.
    #[arg(long = "slack-channel", value_name = "ID")]
    pub slack_channels: Vec<String>,
    /// A Slack member id (U…) allowed to decide; repeat it for more.
    #[arg(long = "slack-approver", value_name = "ID")]
    pub slack_approvers: Vec<String>,
    /// Also write this platform's table, its secrets in files it names: email, sms,
    /// whatsapp, discord.
    /// Repeat it, or separate them with commas.
    #[arg(long = "with", value_name = "PLATFORM", value_delimiter = ',')]
    pub with: Vec<String>,
    /// The agent to set up (default: claude-code).
    #[arg(long)]
    pub agent: Option<String>,
    /// Its tier: draft_only, supervised (the default: every call asks), semi_autonomous
    /// or autonomous.
    #[arg(long, value_parser = TIERS)]
    pub tier: Option<String>,
    /// Where the web dashboard listens (default 127.0.0.1:8378), or `off` for none.
    #[arg(long, value_name = "ADDR")]
    pub dashboard: Option<String>,
    /// Replace an existing file (the old one is kept as bot.toml.bak).
    #[arg(long)]
    pub force: bool,
    /// Ask nothing, even on a terminal.
    #[arg(long)]
    pub yes: bool,
}

/// A user's install or the system's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Install {
    User,
    System,
}

/// Everything the file says, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Plan {
    install: Install,
    path: PathBuf,
    store: PathBuf,
    agents_socket: PathBuf,
    control_socket: PathBuf,
    telegram: Option<Telegram>,
    slack: Option<Slack>,
    /// The other platforms' tables (`--with`), each with its secrets' files as written.
    others: Vec<Other>,
    agent: String,
    tier: String,
    /// The dashboard's address; `None`: no dashboard.
    dashboard: Option<std::net::SocketAddr>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Telegram {
    /// As written in the file (relative to it, or `${CREDENTIALS_DIRECTORY}/…`).
    token_file: String,
    approvers: Vec<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Slack {
    bot_token_file: String,
    app_token_file: String,
    channels: Vec<String>,
    approvers: Vec<String>,
}

/// A platform written from its [`Starter`].
#[derive(Debug, Clone, PartialEq, Eq)]
struct Other {
    starter: &'static Starter,
    /// (credential name, its file as written in the table).
    files: Vec<(&'static str, String)>,
}

pub(super) fn run(args: InitArgs, config: Option<&Path>) -> Result<u8, String> {
    let places = Places::from_env();
    let mut args = args;
    if !args.yes && std::io::stdin().is_terminal() {
        let stdin = std::io::stdin();
        args = ask(args, &places, &mut stdin.lock(), &mut std::io::stderr())?;
    }
    let plan = Plan::resolve(&args, config, &places)?;
    let text = render(&plan);
    write_new(&plan.path, &text, args.force, plan.install)?;
    outln!(
        "Wrote {} ({}).",
        plan.path.display(),
        match plan.install {
            Install::User => "a user's install",
            Install::System => "a system service",
        }
    );
    for (n, step) in next_steps(&plan, &places).iter().enumerate() {
        outln!("{}. {step}", n + 1);
    }
    match Config::check_text(&text, &plan.path) {
        Ok(_) => outln!("gatebot check-config: ok."),
        Err(errors) => {
            outln!("gatebot check-config finds what the steps above leave to do:");
            for e in errors {
                outln!("  {e}");
            }
        }
    }
    Ok(EXIT_GO)
}

impl Plan {
    fn resolve(args: &InitArgs, config: Option<&Path>, places: &Places) -> Result<Plan, String> {
        let install = if args.system {
            Install::System
        } else {
            Install::User
        };
        let no_home = || {
            "HOME is not set, so a user's install has no place: pass --config, --store, \
             --agents-socket and --control-socket, or --system"
                .to_string()
        };
        let (config_dir, state_dir, runtime_dir) = match install {
            Install::System => (
                Some(places.system_config.clone()),
                Some(places.system_state.clone()),
                Some(places.system_runtime.clone()),
            ),
            Install::User => (
                places.user_config.clone(),
                places.user_state.clone(),
                places.user_runtime.clone(),
            ),
        };
        let path = match config {
            Some(p) if p.is_absolute() => p.to_path_buf(),
            Some(p) => places.cwd.join(p),
            None => config_dir.ok_or_else(no_home)?.join(CONFIG_NAME),
        };
        // Without $XDG_RUNTIME_DIR a user's sockets go beside the config.
        let runtime_dir = runtime_dir.or_else(|| path.parent().map(Path::to_path_buf));
        let pick = |given: &Option<PathBuf>, dir: &Option<PathBuf>, name: &str| match given {
            Some(p) if p.is_absolute() => Ok(p.clone()),
            Some(p) => Ok(places.cwd.join(p)),
            None => dir.as_ref().map(|d| d.join(name)).ok_or_else(no_home),
        };
        let credential = |name: &str, given: &Option<String>| match (given, install) {
            (Some(f), _) => f.clone(),
            (None, Install::System) => format!("${{CREDENTIALS_DIRECTORY}}/{name}"),
            (None, Install::User) => name.to_string(),
        };
        let telegram = (args.telegram
            || args.telegram_token_file.is_some()
            || !args.telegram_approvers.is_empty())
        .then(|| Telegram {
            token_file: credential("telegram-token", &args.telegram_token_file),
            approvers: args.telegram_approvers.clone(),
        });
        let slack = (args.slack
            || args.slack_bot_token_file.is_some()
            || args.slack_app_token_file.is_some()
            || !args.slack_channels.is_empty()
            || !args.slack_approvers.is_empty())
        .then(|| Slack {
            bot_token_file: credential("slack-bot-token", &args.slack_bot_token_file),
            app_token_file: credential("slack-app-token", &args.slack_app_token_file),
            channels: args.slack_channels.clone(),
            approvers: args.slack_approvers.clone(),
        });
        let mut others = Vec::new();
        for key in &args.with {
            let key = key.trim();
            let Some(starter) = STARTERS.iter().copied().find(|s| s.key == key) else {
                let known: Vec<&str> = STARTERS.iter().map(|s| s.key).collect();
                return Err(format!(
                    "--with `{key}`: gatebot knows {} (Telegram and Slack have flags of \
                     their own: --telegram, --slack)",
                    known.join(", ")
                ));
            };
            if others.iter().any(|o: &Other| o.starter.key == key) {
                continue;
            }
            let files = starter
                .secrets
                .iter()
                .map(|(name, _)| (*name, credential(name, &None)))
                .collect();
            others.push(Other { starter, files });
        }
        let agent = args.agent.clone().unwrap_or_else(|| "claude-code".into());
        if !crate::names::valid_agent_name(&agent) {
            return Err(format!(
                "--agent `{agent}`: an agent's name is letters, digits, `-`, `_` and `.` \
                 (at most 64)"
            ));
        }
        Ok(Plan {
            dashboard: dashboard(args.dashboard.as_deref())?,
            install,
            store: pick(&args.store, &state_dir, "gatebot.db")?,
            agents_socket: pick(&args.agents_socket, &runtime_dir, AGENTS_SOCKET)?,
            control_socket: pick(&args.control_socket, &runtime_dir, CONTROL_SOCKET)?,
            path,
            telegram,
            slack,
            others,
            agent,
            tier: args.tier.clone().unwrap_or_else(|| "supervised".into()),
        })
    }

    /// A token file as a path to show the owner: where the token goes.
    fn token_path(&self, written: &str, places: &Places) -> PathBuf {
        if let Some(name) = written.strip_prefix("${CREDENTIALS_DIRECTORY}/") {
            // systemd/gatebot.service loads each credential from /etc/gatebot.
            return places.system_config.join(name);
        }
        let p = Path::new(written);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.path.parent().unwrap_or(Path::new(".")).join(p)
        }
    }
}

/// A TOML string.
fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn quoted_path(p: &Path) -> String {
    quoted(&p.to_string_lossy())
}

/// Where the dashboard listens unless `--dashboard` says otherwise.
const DASHBOARD: &str = "127.0.0.1:8378";

/// `--dashboard ADDR|off` read: the address, or `None` for no dashboard.
fn dashboard(given: Option<&str>) -> Result<Option<std::net::SocketAddr>, String> {
    match given.map(str::trim) {
        None => Ok(Some(DASHBOARD.parse().expect("a socket address"))),
        Some("off") => Ok(None),
        Some(a) => a.parse().map(Some).map_err(|_| {
            format!("--dashboard: `{a}` is not an address like 127.0.0.1:8378 (or `off`)")
        }),
    }
}

fn strings(items: &[String]) -> String {
    let items: Vec<String> = items.iter().map(|s| quoted(s)).collect();
    format!("[{}]", items.join(", "))
}

/// The file: every key it sets, with what it does and what to change.
fn render(p: &Plan) -> String {
    let mut s = String::new();
    let install = match p.install {
        Install::User => "a user's install: gatebot runs as you (`gatebot run`)",
        Install::System => {
            "a system service: systemd/gatebot.service runs gatebot as the user `gatebot`"
        }
    };
    s.push_str(&format!(
        "# gatebot's configuration, written by `gatebot init` for {install}.\n\
         # Every key, with its default and what it does, is in the example bot.toml of\n\
         # gatebot's repository (README, \"Configuration\"). Check this file with:\n\
         #   gatebot check-config --config {}\n\
         # Relative paths are relative to this file's directory. Durations are written\n\
         # like \"30m\", \"24h\", \"7d\".\n\n",
        p.path.display()
    ));
    let who = match p.install {
        Install::User => "only\n# the account gatebot runs as (and root) may open it",
        // systemd/gatebot-control.socket holds it, 0660 for group `gatebot`.
        Install::System => {
            "members\n# of the group `gatebot` may open it (sudo usermod -aG gatebot YOU, then log in\n# again), and root"
        }
    };
    s.push_str(&format!(
        "[store]\n\
         # The database: every request, decision and the audit trail (created 0600).\n\
         path = {}\n\n\
         [queue]\n\
         # The agents' socket: their hooks, `gatebot mcp`, `ask` and `worker` connect here.\n\
         socket = {}\n\
         # The owners' socket: `gatebot pending`, `decide`, `status` … connect here; {who}.\n\
         control_socket = {}\n\n",
        quoted_path(&p.store),
        quoted_path(&p.agents_socket),
        quoted_path(&p.control_socket)
    ));
    if let Some(addr) = p.dashboard {
        s.push_str(&format!(
            "[dashboard]\n\
             # The web dashboard: what waits for you, live, with the chats' buttons. Sign in\n\
             # with a link from `gatebot dashboard login`. Plain HTTP: keep it on loopback\n\
             # (a TLS proxy in front for anything else; docs/dashboard.md).\n\
             listen = \"{addr}\"\n\n"
        ));
    }
    s.push_str(POLICY_AND_TOOLS);
    s.push_str(&format!(
        "# The agent; its name is what its hook sends (`--agent`). Add a table per agent.\n\
         [agents.{}]\n\
         # \"draft_only\": only read-only tools run; \"supervised\": every call asks a human;\n\
         # \"semi_autonomous\": low risk runs, the rest asks; \"autonomous\": runs, except\n\
         # critical risk and what [policy] holds back. gatebot proposes a change of tier\n\
         # when the agent's record earns it (docs/trust.md); nothing changes until you agree.\n\
         tier = {}\n\
         # A token the agent's requests must carry (its hooks send GATEBOT_TOKEN), so that\n\
         # no other program on this machine can act as it. Put one in a file (for example\n\
         # `openssl rand -hex 32 > agent-token`, readable only by the owner) and name it:\n\
         # token_file = \"agent-token\"\n\n",
        agent_key(&p.agent),
        quoted(&p.tier)
    ));
    s.push_str(&chat_tables(p));
    s
}

/// The `[policy]` and `[tools]` tables every written file starts from.
const POLICY_AND_TOOLS: &str = "[policy]\n\
         # The rule for the whole organisation, after each agent's lists: \"dangerous\": a\n\
         # destructive tool always asks a human; \"all\": every call a tier would run asks;\n\
         # \"none\": only what the tier and the risk hold back asks.\n\
         tool_approval_mode = \"dangerous\"\n\
         # How long a request waits for a human before it expires (an expired request is\n\
         # not run; the agent is told nobody decided).\n\
         default_ttl = \"24h\"\n\
         # Calls from agents not listed below: \"reject\", or \"supervised\" (each asks).\n\
         unknown_agents = \"reject\"\n\n\
         # How risky each tool is: \"read-only\", \"write\" (tools not listed) or \"destructive\".\n\
         # A shell-like tool names the argument that holds its command, so gatebot reads the\n\
         # command (and an \"Always allow\" covers that command, not the whole tool).\n\
         [tools]\n\
         # Claude Code (Codex names its shell Bash too)\n\
         Read = \"read-only\"\n\
         Grep = \"read-only\"\n\
         Glob = \"read-only\"\n\
         LS = \"read-only\"\n\
         Edit = \"write\"\n\
         MultiEdit = \"write\"\n\
         Write = \"write\"\n\
         Bash = { class = \"write\", command_arg = \"command\" }\n\
         # Gemini CLI\n\
         read_file = \"read-only\"\n\
         read_many_files = \"read-only\"\n\
         list_directory = \"read-only\"\n\
         glob = \"read-only\"\n\
         search_file_content = \"read-only\"\n\
         write_file = \"write\"\n\
         replace = \"write\"\n\
         run_shell_command = { class = \"write\", command_arg = \"command\" }\n\n";

/// The chat platforms' tables the plan has, or the line saying there are none.
fn chat_tables(p: &Plan) -> String {
    let mut s = String::new();
    if let Some(t) = &p.telegram {
        let approvers: Vec<String> = t.approvers.iter().map(ToString::to_string).collect();
        s.push_str(&format!(
            "# Telegram: approval requests come to your chats with buttons (docs/telegram.md).\n\
             [telegram]\n\
             # The file holding the bot token from @BotFather (the token is never written here).\n\
             token_file = {}\n\
             # Telegram user ids allowed to decide. `gatebot connect telegram --write` adds\n\
             # yours once you send /start to the bot.\n\
             approvers = [{}]\n\
             # Chats the requests go to: user ids, or a group's id (negative). Empty: each\n\
             # approver's private chat with the bot.\n\
             chats = []\n\n",
            quoted(&t.token_file),
            approvers.join(", ")
        ));
    }
    if let Some(sl) = &p.slack {
        s.push_str(&format!(
            "# Slack: approval requests in channels with buttons. Create the app from\n\
             # slack/manifest.yml (docs/slack.md) and invite it to each channel.\n\
             [slack]\n\
             # The files holding the bot token (xoxb-…) and the app-level token (xapp-…,\n\
             # scope connections:write); the tokens are never written here.\n\
             bot_token_file = {}\n\
             app_token_file = {}\n\
             # Channel ids (C…) the requests go to.\n\
             channels = {}\n\
             # Slack member ids (U…) allowed to decide.\n\
             approvers = {}\n\n",
            quoted(&sl.bot_token_file),
            quoted(&sl.app_token_file),
            strings(&sl.channels),
            strings(&sl.approvers)
        ));
    }
    for o in &p.others {
        let mut table = o.starter.table.to_string();
        for (name, file) in &o.files {
            table = table.replace(&format!("{{{name}}}"), &quoted(file));
        }
        s.push_str(&table);
    }
    if p.telegram.is_none() && p.slack.is_none() && p.others.is_empty() {
        s.push_str(
            "# No chat: owners decide with `gatebot pending` and `gatebot decide`. Add a\n\
             # platform's table later (`gatebot init --telegram`, `--slack` or\n\
             # `--with email` on a new file shows one).\n",
        );
    }
    s
}

/// An agent's name as a TOML key (plain names need no quotes; `.` does).
fn agent_key(name: &str) -> String {
    if name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        name.to_string()
    } else {
        quoted(name)
    }
}

/// Writes the new file; an existing one only with `force`, kept as `FILE.bak`.
fn write_new(path: &Path, text: &str, force: bool, install: Install) -> Result<(), String> {
    let mode = match install {
        Install::User => 0o600,
        // Read by the `gatebot` group (README: install -m 0640 -g gatebot).
        Install::System => 0o640,
    };
    match std::fs::symlink_metadata(path) {
        Ok(_) if !force => {
            return Err(format!(
                "{} is already there, and gatebot init leaves it as it is: check it with \
                 `gatebot check-config`, or pass --force to replace it (the old one is kept \
                 as {}.bak)",
                path.display(),
                CONFIG_NAME
            ))
        }
        Ok(m) if !m.is_file() => {
            return Err(format!(
                "{} is not a file; nothing was written",
                path.display()
            ))
        }
        Ok(_) => {
            let backup = path.with_file_name(format!(
                "{}.bak",
                path.file_name().unwrap_or_default().to_string_lossy()
            ));
            std::fs::copy(path, &backup).map_err(|e| {
                format!(
                    "cannot keep the old file as {}: {e}; nothing was written",
                    backup.display()
                )
            })?;
        }
        Err(_) => {}
    }
    write_whole(path, text, mode)
}

/// What the owner does next, in order.
fn next_steps(p: &Plan, places: &Places) -> Vec<String> {
    let mut steps = Vec::new();
    let system = p.install == Install::System;
    let put = |what: &str, file: &Path| {
        if system {
            format!(
                "Put {what} in {0}, readable only by root (systemd hands it to gatebot): \
                 sudo install -m 600 /dev/null {0} && sudoedit {0}",
                file.display()
            )
        } else {
            format!(
                "Put {what} in {0}, readable only by you: install -m 600 /dev/null {0} && \
                 \"${{EDITOR:-nano}}\" {0}",
                file.display()
            )
        }
    };
    if let Some(t) = &p.telegram {
        steps.push(put(
            "the Telegram bot token from @BotFather",
            &p.token_path(&t.token_file, places),
        ));
        if t.approvers.is_empty() {
            let env = if system && t.token_file.contains("${CREDENTIALS_DIRECTORY}") {
                format!(
                    "sudo CREDENTIALS_DIRECTORY={} ",
                    places.system_config.display()
                )
            } else {
                String::new()
            };
            steps.push(format!(
                "Make yourself an approver: {env}gatebot connect telegram --write (it asks you \
                 to send /start to the bot, and writes your user id here)"
            ));
        }
    }
    if let Some(s) = &p.slack {
        steps.push(put(
            "the Slack bot token (xoxb-…)",
            &p.token_path(&s.bot_token_file, places),
        ));
        steps.push(put(
            "the Slack app-level token (xapp-…)",
            &p.token_path(&s.app_token_file, places),
        ));
        if s.channels.is_empty() || s.approvers.is_empty() {
            steps.push(format!(
                "Fill in [slack] channels and approvers in {} (docs/slack.md)",
                p.path.display()
            ));
        }
    }
    for o in &p.others {
        for ((_, what), (_, file)) in o.starter.secrets.iter().zip(&o.files) {
            steps.push(put(what, &p.token_path(file, places)));
        }
        steps.push(o.starter.fill_in.to_string());
    }
    if system {
        steps.push(format!(
            "Give the file to gatebot's group and install the service (README, \"Running as \
             a service\"): sudo chgrp gatebot {}, then the systemd units",
            p.path.display()
        ));
    } else {
        steps.push("Start gatebot: gatebot run".to_string());
    }
    steps.push(format!(
        "Put gatebot in front of the agent: gatebot hooks install claude-code --project DIR \
         (or codex, gemini; --user for every project). The hook asks as the agent `{}`",
        p.agent
    ));
    steps
}

/// Asks for what the flags left open, on a terminal; each answer defaults to the
/// flag's value (Enter keeps it).
fn ask(
    mut args: InitArgs,
    places: &Places,
    input: &mut impl BufRead,
    out: &mut impl Write,
) -> Result<InitArgs, String> {
    let mut q = Questions { input, out };
    q.say("gatebot init: a few questions; Enter keeps the answer in [brackets].")?;
    let system = q.choose(
        "Set up gatebot for just you (user) or as a system service (system)?",
        &["user", "system"],
        if args.system { "system" } else { "user" },
    )? == "system";
    args.system = system;
    args.user = !system;
    let config_dir = if system {
        Some(places.system_config.clone())
    } else {
        places.user_config.clone()
    };
    let default_file = |name: &str| {
        if system {
            format!("${{CREDENTIALS_DIRECTORY}}/{name}")
        } else {
            config_dir
                .as_ref()
                .map_or(name.to_string(), |d| d.join(name).display().to_string())
        }
    };
    ask_telegram(&mut q, &mut args, &default_file)?;
    ask_slack(&mut q, &mut args, &default_file)?;
    for starter in STARTERS {
        let on = args.with.iter().any(|k| k == starter.key);
        let wanted = q.yes_no(starter.question, on)?;
        args.with.retain(|k| k != starter.key);
        if wanted {
            args.with.push(starter.key.to_string());
        }
    }
    loop {
        let agent = q.text(
            "The agent's name (what its hook sends)",
            args.agent.as_deref().unwrap_or("claude-code"),
        )?;
        if crate::names::valid_agent_name(&agent) {
            args.agent = Some(agent);
            break;
        }
        q.say("An agent's name is letters, digits, -, _ and . (at most 64).")?;
    }
    args.tier = Some(q.choose(
        "Its tier: draft_only, supervised (every call asks), semi_autonomous or autonomous?",
        &TIERS,
        args.tier.as_deref().unwrap_or("supervised"),
    )?);
    Ok(args)
}

/// Telegram: whether to ask there, the token's file, and who may decide.
fn ask_telegram<R: BufRead, W: Write>(
    q: &mut Questions<'_, R, W>,
    args: &mut InitArgs,
    default_file: &dyn Fn(&str) -> String,
) -> Result<(), String> {
    let telegram_on = args.telegram || args.telegram_token_file.is_some();
    if q.yes_no("Ask owners on Telegram?", telegram_on)? {
        args.telegram = true;
        let default = args
            .telegram_token_file
            .clone()
            .unwrap_or_else(|| default_file("telegram-token"));
        args.telegram_token_file = Some(q.text(
            "The file that will hold the bot token from @BotFather",
            &default,
        )?);
        args.telegram_approvers = q.ids(
            "Telegram user ids allowed to decide, separated by spaces (none: add yours later \
             with `gatebot connect telegram --write`)",
            &args.telegram_approvers,
        )?;
    } else {
        args.telegram = false;
        args.telegram_token_file = None;
        args.telegram_approvers.clear();
    }
    Ok(())
}

/// Slack: whether to ask there, the two tokens' files, the channels and who may decide.
fn ask_slack<R: BufRead, W: Write>(
    q: &mut Questions<'_, R, W>,
    args: &mut InitArgs,
    default_file: &dyn Fn(&str) -> String,
) -> Result<(), String> {
    let slack_on = args.slack || args.slack_bot_token_file.is_some();
    if q.yes_no("Ask owners on Slack?", slack_on)? {
        args.slack = true;
        let bot = args
            .slack_bot_token_file
            .clone()
            .unwrap_or_else(|| default_file("slack-bot-token"));
        args.slack_bot_token_file =
            Some(q.text("The file that will hold the bot token (xoxb-…)", &bot)?);
        let app = args
            .slack_app_token_file
            .clone()
            .unwrap_or_else(|| default_file("slack-app-token"));
        args.slack_app_token_file =
            Some(q.text("The file that will hold the app-level token (xapp-…)", &app)?);
        args.slack_channels = q.words(
            "Channel ids (C…) for the requests, separated by spaces",
            &args.slack_channels,
        )?;
        args.slack_approvers = q.words(
            "Slack member ids (U…) allowed to decide, separated by spaces",
            &args.slack_approvers,
        )?;
    } else {
        args.slack = false;
        args.slack_bot_token_file = None;
        args.slack_app_token_file = None;
        args.slack_channels.clear();
        args.slack_approvers.clear();
    }
    Ok(())
}

struct Questions<'a, R, W> {
    input: &'a mut R,
    out: &'a mut W,
}

impl<R: BufRead, W: Write> Questions<'_, R, W> {
    fn say(&mut self, text: &str) -> Result<(), String> {
        writeln!(self.out, "{text}").map_err(|e| e.to_string())
    }

    /// The answer to `question`, `default` for an empty one.
    fn text(&mut self, question: &str, default: &str) -> Result<String, String> {
        write!(self.out, "{question} [{default}] ")
            .and_then(|()| self.out.flush())
            .map_err(|e| e.to_string())?;
        let mut line = String::new();
        let n = self
            .input
            .read_line(&mut line)
            .map_err(|e| format!("cannot read the answer: {e}"))?;
        if n == 0 {
            return Err(
                "the input ended before every question was answered; nothing was written".into(),
            );
        }
        let line = line.trim();
        Ok(if line.is_empty() { default } else { line }.to_string())
    }

    fn choose(
        &mut self,
        question: &str,
        options: &[&str],
        default: &str,
    ) -> Result<String, String> {
        loop {
            let a = self.text(question, default)?;
            if options.contains(&a.as_str()) {
                return Ok(a);
            }
            self.say(&format!("Please answer one of: {}.", options.join(", ")))?;
        }
    }

    fn yes_no(&mut self, question: &str, default: bool) -> Result<bool, String> {
        loop {
            let a = self.text(
                &format!("{question} (y/n)"),
                if default { "y" } else { "n" },
            )?;
            match a.to_ascii_lowercase().as_str() {
                "y" | "yes" => return Ok(true),
                "n" | "no" => return Ok(false),
                _ => self.say("Please answer y or n.")?,
            }
        }
    }

    fn words(&mut self, question: &str, default: &[String]) -> Result<Vec<String>, String> {
        let a = self.text(question, &default.join(" "))?;
        Ok(a.split([' ', ','])
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect())
    }

    fn ids(&mut self, question: &str, default: &[u64]) -> Result<Vec<u64>, String> {
        let default: Vec<String> = default.iter().map(ToString::to_string).collect();
        loop {
            let words = self.words(question, &default)?;
            match words.iter().map(|w| w.parse::<u64>()).collect() {
                Ok(ids) => return Ok(ids),
                Err(_) => self.say("A Telegram user id is a number, like 123456789.")?,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(root: &Path) -> Places {
        Places::new(
            root.join("project"),
            Some(root.join("home")),
            None,
            None,
            Some(root.join("run-user")),
            &root.join("sys"),
        )
    }

    #[test]
    fn a_users_install_lives_in_the_users_directories() {
        let root = Path::new("/r");
        let p = Plan::resolve(&InitArgs::default(), None, &places(root)).unwrap();
        assert_eq!(p.path, root.join("home/.config/gatebot/bot.toml"));
        assert_eq!(p.store, root.join("home/.local/state/gatebot/gatebot.db"));
        assert_eq!(p.agents_socket, root.join("run-user/gatebot/gatebot.sock"));
        assert_eq!(
            p.control_socket,
            root.join("run-user/gatebot/gatebot-control.sock")
        );
        assert_eq!(
            (p.agent.as_str(), p.tier.as_str()),
            ("claude-code", "supervised")
        );
        assert_eq!((p.telegram, p.slack), (None, None));
    }

    #[test]
    fn a_system_install_lives_where_the_service_expects_it() {
        let root = Path::new("/r");
        let args = InitArgs {
            system: true,
            telegram: true,
            slack_channels: vec!["C1".into()],
            ..InitArgs::default()
        };
        let p = Plan::resolve(&args, None, &places(root)).unwrap();
        assert_eq!(p.path, root.join("sys/etc/gatebot/bot.toml"));
        assert_eq!(p.store, root.join("sys/var/lib/gatebot/gatebot.db"));
        assert_eq!(p.agents_socket, root.join("sys/run/gatebot/gatebot.sock"));
        let t = p.telegram.as_ref().unwrap();
        assert_eq!(t.token_file, "${CREDENTIALS_DIRECTORY}/telegram-token");
        assert_eq!(
            p.token_path(&t.token_file, &places(root)),
            root.join("sys/etc/gatebot/telegram-token")
        );
        let s = p.slack.as_ref().unwrap();
        assert_eq!(s.app_token_file, "${CREDENTIALS_DIRECTORY}/slack-app-token");
        let text = render(&p);
        assert!(text.contains("token_file = \"${CREDENTIALS_DIRECTORY}/telegram-token\"\n"));
        assert!(text.contains("channels = [\"C1\"]\n"));
    }

    #[test]
    fn the_questions_fill_in_what_the_flags_left_open() {
        let root = Path::new("/r");
        // Enter (no) for every platform after Slack.
        let input = format!(
            "\nmaybe\ny\n\n42 x\n42, 43\nn\n{}bad name!\nmy-agent\nsemi\nsemi_autonomous\n",
            "\n".repeat(STARTERS.len())
        );
        let mut input = input.as_bytes();
        let mut out = Vec::new();
        let args = ask(InitArgs::default(), &places(root), &mut input, &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("Please answer y or n."), "{out}");
        assert!(out.contains("A Telegram user id is a number"), "{out}");
        assert!(
            out.contains(
                "Please answer one of: draft_only, supervised, semi_autonomous, autonomous."
            ),
            "{out}"
        );
        assert!(out.contains(&format!(
            "The file that will hold the bot token from @BotFather [{}] ",
            root.join("home/.config/gatebot/telegram-token").display()
        )));
        let p = Plan::resolve(&args, None, &places(root)).unwrap();
        assert_eq!(p.install, Install::User);
        assert_eq!(
            p.telegram,
            Some(Telegram {
                token_file: root
                    .join("home/.config/gatebot/telegram-token")
                    .display()
                    .to_string(),
                approvers: vec![42, 43],
            })
        );
        assert_eq!(p.slack, None);
        assert_eq!(p.others, []);
        assert_eq!(
            (p.agent.as_str(), p.tier.as_str()),
            ("my-agent", "semi_autonomous")
        );

        // Input that ends early writes nothing.
        let mut short = "system\n".as_bytes();
        let e = ask(
            InitArgs::default(),
            &places(root),
            &mut short,
            &mut Vec::new(),
        )
        .unwrap_err();
        assert!(e.contains("nothing was written"), "{e}");
    }

    #[test]
    fn every_other_platform_is_written_with_its_secrets_in_files_the_service_loads() {
        let root = Path::new("/r");
        let every: Vec<String> = STARTERS.iter().map(|s| s.key.to_string()).collect();
        let args = InitArgs {
            system: true,
            with: every.clone(),
            ..InitArgs::default()
        };
        let p = Plan::resolve(&args, None, &places(root)).unwrap();
        let text = render(&p);
        let unit = include_str!("../../../systemd/gatebot.service");
        let steps = next_steps(&p, &places(root)).join("\n");
        for starter in STARTERS {
            assert!(text.contains(&format!("\n[{}]\n", starter.key)), "{text}");
            assert!(steps.contains(starter.fill_in), "{steps}");
            for (name, what) in starter.secrets {
                assert!(
                    text.contains(&format!("\"${{CREDENTIALS_DIRECTORY}}/{name}\"")),
                    "{name}: {text}"
                );
                assert!(
                    unit.contains(&format!("LoadCredential={name}:/etc/gatebot/{name}\n"))
                        && unit.contains(&format!("SetCredential={name}:\\n\n")),
                    "systemd/gatebot.service loads {name}"
                );
                assert!(steps.contains(what), "{steps}");
            }
        }
        let placeholder = regex::Regex::new(r"\{[a-z-]+\}").unwrap();
        assert!(
            !placeholder.is_match(&text),
            "every placeholder filled: {text}"
        );
        assert!(!text.contains("No chat"), "{text}");
        // The file is TOML, and every key in it is one the platforms' tables know:
        // check-config finds only what the steps leave to fill in, never an unknown key.
        let errors = Config::check_text(&text, &p.path).unwrap_err();
        for e in &errors {
            let said = e.to_string();
            assert!(!said.contains("unknown field"), "{said}");
        }

        let user = Plan::resolve(
            &InitArgs {
                with: vec!["sms".into(), "sms".into()],
                ..InitArgs::default()
            },
            None,
            &places(root),
        )
        .unwrap();
        assert_eq!(user.others.len(), 1);
        assert!(render(&user).contains("auth_token_file = \"twilio-auth-token\"\n"));
        let e = Plan::resolve(
            &InitArgs {
                with: vec!["pigeon".into()],
                ..InitArgs::default()
            },
            None,
            &places(root),
        )
        .unwrap_err();
        assert!(
            e.contains("`pigeon`") && e.contains("email, sms, whatsapp, discord"),
            "{e}"
        );
    }
}
