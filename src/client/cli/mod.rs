//! The `gatebot` command line: the daemon and the owner's and agents' commands.
//!
//! Exit codes of `ask` and `status`: 0 allowed or approved; 1 rejected, blocked,
//! expired or cancelled (reason on stderr); 2 error; 3 still pending when `--wait`
//! ran out (the request stays queued; its id is printed). `workflow event` and
//! `workflow status` use the same codes: 0 continue, 1 stop, 2 error, 3 still waiting.
//!
//! One file per command; this one holds the arguments, the dispatch, and what the
//! commands share: finding the socket, reading answers, waiting, printing a request.

mod agents;
mod ask;
mod audit;
mod batch;
mod check_config;
mod complete;
mod connect;
mod dashboard;
mod decide;
mod factor;

mod grants;
mod guidance;
mod hook;
mod hooks_install;
mod init;
mod man;
mod mcp;
mod nodes;
mod ordered_json;
mod out;
mod pending;
mod status;
mod store;
mod task;
mod worker;
mod workflow;
mod writing;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand};
use serde_json::Value;

use super::{Client, ClientError, Endpoint, Response};
use crate::approval::Status;
use crate::client::discover::{self, Places, Which};
use crate::retry::reconnect_delay;
use crate::wire::ApprovalView;
pub use complete::{complete_if_asked, Shell};
pub use man::pages as man_pages;
use out::outln;
pub use workflow::{EventArgs, ListArgs, StartArgs, WorkflowCommand};

/// What `gatebot --version` says: the version and the commit it was built from
/// (`build.rs`; `unknown` for a build without git).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (rev ",
    env!("GATEBOT_GIT_COMMIT"),
    ")"
);

/// Exit code: allowed or approved.
pub const EXIT_GO: u8 = 0;
/// Exit code: rejected, blocked, expired or cancelled.
pub const EXIT_NO: u8 = 1;
/// Exit code: an error (bad input, unknown agent, daemon unreachable).
pub const EXIT_ERROR: u8 = 2;
/// Exit code: still pending when the wait ran out.
pub const EXIT_PENDING: u8 = 3;

#[derive(Debug, Parser)]
#[command(
    name = "gatebot",
    version = VERSION,
    about = "Human approval for AI agents' risky actions"
)]
pub struct Cli {
    /// The config file (default: the first there is of ./bot.toml,
    /// ~/.config/gatebot/bot.toml and /etc/gatebot/bot.toml).
    #[arg(long, short, global = true, env = "GATEBOT_CONFIG")]
    pub config: Option<PathBuf>,
    /// The socket to talk to, also GATEBOT_SOCKET (default: the config's queue.socket
    /// for agents' commands, queue.control_socket for owner commands; without a config
    /// file, the default sockets in $XDG_RUNTIME_DIR/gatebot/ and /run/gatebot/).
    #[arg(long, global = true, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// For the agents' commands (hook, mcp, ask, worker, workflow): reach gatebot over
    /// TCP at http://HOST:PORT or https://HOST:PORT, also GATEBOT_URL (comma-separated).
    /// Repeat it for several gatebots: a call goes on to the next when one is down or
    /// answers 503. A flag wins over a variable, and a URL over a socket; not with
    /// --socket. The agent's token (--token) is sent with every call.
    #[arg(long = "url", global = true, value_name = "URL")]
    pub url: Vec<String>,
    /// The CA certificates (a PEM file) that https:// endpoints are checked against,
    /// instead of the system's.
    #[arg(long, global = true, env = "GATEBOT_CA_FILE", value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the daemon.
    Run,
    /// Submit a request as an agent and wait for the verdict.
    Ask(AskArgs),
    /// Show a request (owner); optionally wait for it to be decided.
    Status {
        /// Full id, short id, or a unique prefix of at least 4 characters.
        id: String,
        /// Wait up to this long for a decision, e.g. 30s or 10m.
        #[arg(long)]
        wait: Option<String>,
        /// Print the data as JSON (what the API answers) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List pending requests (owner), oldest first.
    Pending {
        /// Only this agent's requests.
        #[arg(long)]
        agent: Option<String>,
        /// At most this many (1-1000).
        #[arg(long, default_value_t = 1000)]
        limit: usize,
        /// The page after this request id (the `next` a previous page printed).
        #[arg(long)]
        after: Option<String>,
        /// Print the data as JSON (what the API answers) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Decide a pending request, answer a tier proposal or a workflow check-in, or
    /// queue / reject a task that waits for your go (owner).
    Decide {
        /// ID DECISION: the id (full, short, or a unique prefix of at least 4
        /// characters) and approve, approve-always or deny (a request); approve or deny
        /// (a proposal); continue or stop (a check-in); queue, reject, cancel or retry
        /// (a task). With --agent: the DECISION alone, approve or deny.
        #[arg(num_args = 1..=2, required = true, value_names = ["ID", "DECISION"],
              add = clap_complete::ArgValueCompleter::new(complete::decide_words))]
        what: Vec<String>,
        /// Decide every pending request of this agent at once (with --tool and
        /// --risk-at-most to narrow it): what will be decided is listed first and
        /// asked on the terminal; a critical request is never approved so.
        #[arg(long, value_name = "AGENT")]
        agent: Option<String>,
        /// With --agent: only this tool's requests.
        #[arg(long, requires = "agent")]
        tool: Option<String>,
        /// With --agent: only requests of this risk or less (low, medium, high, critical).
        #[arg(long = "risk-at-most", value_name = "RISK", requires = "agent")]
        risk_at_most: Option<String>,
        /// With --agent: decide without asking (for scripts).
        #[arg(long, requires = "agent")]
        yes: bool,
        /// Why; reaches the agent (most useful with deny).
        #[arg(long)]
        reason: Option<String>,
        /// With approve-always on a shell-like tool's call: allow commands starting
        /// with this prefix (words the command starts with; no interpreters, wrappers
        /// or compound commands). Without a value: the prefix the prompt offered.
        #[arg(long, num_args = 0..=1, default_missing_value = "", conflicts_with = "exact")]
        prefix: Option<String>,
        /// With approve-always on a shell-like tool's call: allow only this exact
        /// command (the default for shell-like tools).
        #[arg(long)]
        exact: bool,
        /// A time-boxed grant, e.g. 1h: `approve --for 1h` also allows the same call
        /// for that long.
        #[arg(long = "for", value_name = "DURATION")]
        for_: Option<String>,
        /// With approve: approve the call with these arguments instead (a file holding
        /// a JSON object, `-` for stdin); an agent whose client cannot run an edited
        /// call is told the exact call to make instead.
        #[arg(long, value_name = "FILE")]
        args: Option<PathBuf>,
        /// A code from your authenticator app, for an approval that needs your second
        /// factor (asked on the terminal when needed; see `gatebot factor`).
        #[arg(long, value_name = "CODE")]
        code: Option<String>,
        /// Print the data as JSON (what the API answers) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Enroll, list or remove your second factors: an authenticator app's codes confirm
    /// approvals that need one (owner).
    Factor {
        #[command(subcommand)]
        action: factor::FactorAction,
    },
    /// List every agent with its tier (configured and in force), pause, grants and
    /// evidence, or recount every agent's evidence from its requests (owner).
    Agents {
        #[command(subcommand)]
        action: Option<agents::AgentsAction>,
        /// Print the data as JSON (what the API answers) instead of text.
        #[arg(long, global = true)]
        json: bool,
    },
    /// Show one agent's trust, or assess it, set its tier, pause or resume it (owner).
    Agent {
        /// The agent's name.
        name: String,
        #[command(subcommand)]
        action: Option<agents::AgentAction>,
        /// Print the data as JSON (what the API answers) instead of text.
        #[arg(long, global = true)]
        json: bool,
    },
    /// List what owners allowed agents to run without asking, or revoke a grant (owner).
    Grants {
        #[command(subcommand)]
        action: Option<grants::GrantsAction>,
        /// Only this agent's grants.
        #[arg(long)]
        agent: Option<String>,
        /// Also revoked and expired grants.
        #[arg(long)]
        all: bool,
        /// Print the data as JSON (what the API answers) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Sign in to the web dashboard (a link for you), or list and end its sessions (owner).
    Dashboard {
        #[command(subcommand)]
        action: dashboard::DashboardAction,
    },
    /// Print the audit trail (owner), or check it with `audit verify`.
    Audit {
        #[command(subcommand)]
        action: Option<AuditAction>,
        /// Only this request.
        #[arg(long)]
        request: Option<String>,
        /// Only rows from this long ago (e.g. 24h) or since this time (RFC 3339).
        #[arg(long)]
        since: Option<String>,
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// Copy this installation's data into a new PostgreSQL database (gatebot stopped):
    /// `store copy --to postgres://USER@HOST/DB`.
    Store {
        #[command(subcommand)]
        action: store::StoreAction,
    },
    /// List the gatebot nodes using the database (several share a PostgreSQL one), which
    /// one leads (sends the chat messages and runs the timers), and what differs between them.
    Nodes {
        /// Print the data as JSON (what the API answers) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Validate the config file and explain every error in one run (each with its key
    /// path and line, in file order, then how many).
    CheckConfig {
        /// Also ask Telegram who the bot is (getMe): checks the token and the API URL.
        #[arg(long)]
        telegram: bool,
    },
    /// Answer an agent's hook: JSON on stdin, the decision as JSON on stdout.
    Hook {
        #[command(subcommand)]
        agent: HookCommand,
    },
    /// Run a stdio MCP server with the `request_approval` tool
    /// (Claude Code's --permission-prompt-tool).
    Mcp(HookArgs),
    /// Hand a task to an agent, follow it, answer it, cancel or retry it (owner).
    Task {
        #[command(subcommand)]
        action: TaskAction,
    },
    /// List open tasks (owner), oldest first; --all for the latest of any status.
    Tasks {
        /// The latest 1000 tasks of any status, newest first.
        #[arg(long)]
        all: bool,
        /// Only this agent's tasks.
        #[arg(long)]
        agent: Option<String>,
        /// Print the data as JSON (what the API answers) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Claim an agent's tasks and run COMMAND for each (prompt on stdin).
    Worker(WorkerArgs),
    /// An agent's workflow runs: start one, report its events, show it.
    Workflow {
        #[command(subcommand)]
        action: WorkflowCommand,
    },
    /// List workflow runs (owner), newest first.
    Workflows(ListArgs),
    /// Write a commented config file for your set-up: a user's or a system install,
    /// Telegram and Slack, the approvers, one agent (asks on a terminal).
    Init(init::InitArgs),
    /// Connect a chat: `connect telegram` finds your user id when you send /start to
    /// the bot.
    Connect {
        #[command(subcommand)]
        platform: connect::ConnectCommand,
    },
    /// Put gatebot's hook in an agent's own settings (Claude Code, Codex, Gemini CLI),
    /// or say where it is installed.
    Hooks {
        #[command(subcommand)]
        action: hooks_install::HooksAction,
    },
    /// Print the system-prompt paragraph for an agent's autonomy tier.
    AgentGuidance {
        /// The agent's name.
        name: String,
        /// Print the API's JSON (tier, lists, guidance) instead.
        #[arg(long)]
        json: bool,
        /// The agent's token, needed with --socket on the agents' socket.
        #[arg(long, env = "GATEBOT_TOKEN", hide_env_values = true)]
        token: Option<String>,
    },
    /// Print the shell completion script for bash, zsh, fish or powershell: load it
    /// with `source <(gatebot completions bash)` (the Debian package installs it);
    /// `decide` then completes the ids that wait.
    Completions {
        /// The shell.
        shell: Shell,
    },
    /// Print the gatebot(1) man page, or write every page (one per command) to a
    /// directory.
    Man {
        /// Write gatebot.1 and a page per command here.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Claude Code's PermissionRequest or PreToolUse command hook.
    ClaudeCode(HookArgs),
    /// Codex's PermissionRequest or PreToolUse hook (.codex/hooks.json).
    Codex(HookArgs),
    /// Gemini CLI's BeforeTool hook (settings.json).
    Gemini(HookArgs),
}

#[derive(Debug, Args)]
pub struct HookArgs {
    /// The agent to submit as (default: claude-code, codex, gemini; mcp: claude-code).
    #[arg(long, env = "GATEBOT_AGENT")]
    pub agent: Option<String>,
    /// Answer (deny) after this long if nobody decided; keep it under the agent's
    /// hook timeout (default: 540s; gemini: 55s).
    #[arg(long)]
    pub timeout: Option<String>,
    /// The agent's token, if it has one.
    #[arg(long, env = "GATEBOT_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// The inbox task the agent runs, named on its requests (`gatebot worker` sets
    /// GATEBOT_TASK_ID for its command).
    #[arg(long, env = "GATEBOT_TASK_ID")]
    pub task: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum TaskAction {
    /// Hand over a task: its words (`-` reads them from stdin).
    Add {
        /// The task, in your words.
        #[arg(required = true)]
        text: Vec<String>,
        /// The agent to run it, instead of [inbox.routes].
        #[arg(long)]
        agent: Option<String>,
        /// The intent (research, code_change, organize, question, reminder, todo,
        /// todo_complete, todo_check, other), instead of the classifier's.
        #[arg(long)]
        intent: Option<String>,
        /// Print the data as JSON (what the API answers) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show a task; with --wait, wait until it is finished or needs you.
    Status {
        /// Full id, short id, or a unique prefix of at least 4 characters.
        id: String,
        /// Wait up to this long, e.g. 30s or 10m.
        #[arg(long)]
        wait: Option<String>,
        /// Print the data as JSON (what the API answers) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Answer the question a task waits on.
    Answer {
        /// The task's id (or short id).
        id: String,
        /// Your answer to its question.
        #[arg(required = true)]
        text: Vec<String>,
        /// Print the data as JSON (what the API answers) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Cancel an open task (a running one's command is stopped).
    Cancel {
        /// The task's id (or short id).
        id: String,
        /// Print the data as JSON (what the API answers) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Queue a failed or cancelled task again.
    Retry {
        /// The task's id (or short id).
        id: String,
        /// Print the data as JSON (what the API answers) instead of text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// The agent whose tasks to run.
    #[arg(long, env = "GATEBOT_AGENT")]
    pub agent: String,
    /// How many tasks to run at once (1-64; gatebot's [inbox] max_concurrent still
    /// bounds them).
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,
    /// Run one task, then exit: 0 completed, 1 not completed, 2 error.
    #[arg(long)]
    pub once: bool,
    /// The agent's token, if it has one.
    #[arg(long, env = "GATEBOT_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum AuditAction {
    /// Recompute the hash chain; exit 1 if any row was edited, deleted or reordered,
    /// rows were cut off the end, or a protecting trigger is missing.
    Verify {
        /// A head hash printed earlier by `gatebot audit head` and kept elsewhere:
        /// also exit 1 unless the chain still holds it.
        #[arg(long)]
        head: Option<String>,
        /// Print the data as JSON (what the API answers) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print the chain's head hash, to keep outside this machine and pass to
    /// `audit verify --head` later.
    Head {
        /// Print its row number and the row count too, as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct AskArgs {
    /// The agent asking (its name in bot.toml).
    #[arg(long)]
    pub agent: String,
    /// The tool it wants to run.
    #[arg(long)]
    pub tool: String,
    /// The tool's arguments as JSON; `-` reads them from stdin.
    #[arg(long, conflicts_with = "args_file")]
    pub args: Option<String>,
    /// Read the arguments from a JSON file.
    #[arg(long)]
    pub args_file: Option<PathBuf>,
    /// One line for the owner: what the agent wants to do and why.
    #[arg(long)]
    pub summary: Option<String>,
    /// The agent's confidence, 0.0 to 1.0.
    #[arg(long, value_parser = ask::parse_confidence)]
    pub confidence: Option<f64>,
    /// The environment the action runs in (production raises risk, sandbox lowers it).
    #[arg(long = "env")]
    pub environment: Option<String>,
    /// How long the request may wait for a human, e.g. 30m (default: policy.default_ttl).
    #[arg(long)]
    pub ttl: Option<String>,
    /// What the call costs, in the currency of [budgets] (e.g. 2.50): a cost over what
    /// is left of a budget blocks it.
    #[arg(long, value_parser = ask::parse_cost)]
    pub cost: Option<f64>,
    /// How long to wait for the decision (default: until it is decided or expires).
    #[arg(long)]
    pub wait: Option<String>,
    /// The same key returns the same request instead of creating another.
    #[arg(long)]
    pub idempotency_key: Option<String>,
    /// The inbox task the agent runs (GATEBOT_TASK_ID, set by `gatebot worker`).
    #[arg(long, env = "GATEBOT_TASK_ID")]
    pub task: Option<String>,
    /// The agent's token, if it has one.
    #[arg(long, env = "GATEBOT_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Print the API's JSON instead of a summary.
    #[arg(long)]
    pub json: bool,
}

/// Runs a client command (everything but `run`). Returns the process exit code.
pub async fn run_client(cli: Cli) -> ExitCode {
    match client_command(cli).await {
        // Output that could not be written (other than to a reader that stopped) is
        // an incomplete result.
        Ok(_) if out::failed() => ExitCode::from(EXIT_ERROR),
        Ok(code) => ExitCode::from(code),
        Err(message) => {
            // The daemon's words may quote an agent's (a command, a summary): written
            // out as standard output is (`out::line`).
            eprintln!("error: {}", crate::names::visible(&message));
            ExitCode::from(EXIT_ERROR)
        }
    }
}

impl WorkerArgs {
    /// The worker these arguments describe, reaching gatebot with `client`.
    fn worker(self, client: Client, ca_file: Option<PathBuf>) -> worker::Worker {
        worker::Worker {
            client,
            ca_file,
            agent: self.agent,
            concurrency: self.concurrency,
            once: self.once,
            command: self.command,
            token: self.token,
        }
    }
}

/// Where a command finds gatebot: what its command line and environment say.
pub(super) struct Where {
    pub given: discover::Given,
    pub config: Option<PathBuf>,
    pub ca_file: Option<PathBuf>,
}

impl Where {
    /// A client of the agents' socket or endpoints ([`discover::agents`]) sending the
    /// agent's `token`, without a timeout; `Err` says why there is none, in one line for
    /// a hook's deny (`one_line`), else a line per place tried. Over TCP every call
    /// must carry a token, so none is an error here, before anything is sent.
    pub(super) fn agents(&self, token: Option<String>, one_line: bool) -> Result<Client, String> {
        let found = discover::agents(&self.given, self.config.as_deref(), &Places::from_env())
            .map_err(|m| if one_line { m.one_line() } else { m.lines() })?;
        let tcp = found.list.iter().any(|e| matches!(e, Endpoint::Tcp(_)));
        if tcp && token.is_none() {
            return Err(TOKEN_NEEDED.into());
        }
        Ok(Client::with_endpoints(found.list, self.ca_file.as_deref())?.with_token(token))
    }

    /// The client of an owner's command: the control socket ([`socket_for`]).
    fn owner(&self) -> Result<Client, String> {
        if !self.given.url_flags.is_empty() {
            return Err(URL_NOT_OWNERS.into());
        }
        control_socket(self.given.socket(), self.config.as_deref()).map(|s| as_owner(&client(s)))
    }
}

const TOKEN_NEEDED: &str = "gatebot over TCP takes only calls that carry the agent's token: \
                            set GATEBOT_TOKEN in the agent's environment, or pass --token";

const URL_NOT_OWNERS: &str = "--url is for the agents' commands (hook, mcp, ask, worker, \
                              workflow); the owner's commands talk to the control socket: \
                              drop --url, and name the socket with --socket if it is not found";

async fn client_command(cli: Cli) -> Result<u8, String> {
    let at = Where {
        given: discover::Given::from_env(cli.url.clone(), cli.socket.clone()),
        config: cli.config.clone(),
        ca_file: cli.ca_file.clone(),
    };
    let config = cli.config.as_deref();
    // The owner's commands talk to the control socket. Every owner's command says who
    // acts (see [`as_owner`]).
    let owner = || at.owner();
    // The agents' commands: their socket or their endpoints, each call bounded.
    let agent = |token| {
        at.agents(token, false)
            .map(|c| c.with_timeout(CALL_TIMEOUT))
    };
    match cli.command {
        Command::Run => unreachable!("run is handled by main"),
        Command::CheckConfig { telegram } => {
            check_config::run(&config_file(config)?, telegram).await
        }
        Command::Store { action } => store::run(action, &config_file(config)?).await,
        Command::Hook { agent } => hook::run(agent, &at).await,
        Command::Init(args) => init::run(args, config),
        Command::Completions { shell } => complete::script(shell),
        Command::Man { dir } => man::run(dir.as_deref()),
        Command::Connect { platform } => connect::run(platform, &config_file(config)?).await,
        Command::Hooks { action } => hooks_install::run(action, &at),
        Command::Mcp(args) => mcp::run(args, &at).await,
        Command::Task { action } => task_command(&owner()?, action).await,
        Command::Tasks { all, agent, json } => {
            task::list(&owner()?, all, agent.as_deref(), json).await
        }
        Command::Worker(args) => {
            let client = at.agents(args.token.clone(), false)?;
            worker::run(args.worker(client, at.ca_file.clone())).await
        }
        Command::AgentGuidance { name, json, token } => {
            // Over TCP when endpoints are given (an agent on another machine), else on
            // the control socket, or the agents' with --socket.
            let client = if at.given.url_flags.is_empty() && at.given.url_env.is_none() {
                owner()?.with_token(token)
            } else {
                agent(token)?
            };
            guidance::run(&client, &name, json).await
        }
        Command::Ask(args) => ask::run(agent(args.token.clone())?, args).await,
        Command::Status { id, wait, json } => {
            status::run(&owner()?, &id, wait.as_deref(), json).await
        }
        Command::Pending {
            agent,
            limit,
            after,
            json,
        } => pending::run(&owner()?, agent.as_deref(), limit, after.as_deref(), json).await,
        Command::Decide {
            what,
            agent,
            tool,
            risk_at_most,
            yes,
            reason,
            prefix,
            exact,
            for_,
            args,
            code,
            json,
        } => match (agent, what.as_slice()) {
            (Some(agent), [verb]) => {
                if prefix.is_some()
                    || exact
                    || for_.is_some()
                    || args.is_some()
                    || code.is_some()
                    || json
                {
                    return Err("a batch (--agent) approves or denies once each; grants,                          edits and --json are for one request at a time"
                        .into());
                }
                let b = batch::Batch {
                    agent,
                    tool,
                    risk_at_most,
                    verb: verb.clone(),
                    reason,
                    yes,
                };
                batch::run(&owner()?, b).await
            }
            (Some(_), _) => Err("with --agent, give the decision alone:                  gatebot decide --agent A approve|deny"
                .into()),
            (None, [id, decision]) => {
                let grant = decide::Grant {
                    prefix,
                    exact,
                    for_,
                    args,
                    code,
                };
                decide::run(&owner()?, id, decision, reason.as_deref(), grant, json).await
            }
            (None, _) => Err("give the id and the decision: gatebot decide ID approve|deny|…,                  or decide many with gatebot decide --agent A approve|deny"
                .into()),
        },
        Command::Agents { action, json } => match action {
            None => agents::list(&owner()?, json).await,
            Some(agents::AgentsAction::Recount { check }) => {
                agents::recount(&owner()?, check, json).await
            }
        },
        Command::Agent { name, action, json } => agents::run(&owner()?, &name, action, json).await,
        Command::Grants {
            action,
            agent,
            all,
            json,
        } => grants_command(&owner()?, action, agent.as_deref(), all, json).await,
        Command::Workflow { action } => workflow_command(&at, action).await,
        Command::Workflows(a) => workflow::list(&owner()?, a).await,
        Command::Dashboard { action } => dashboard::run(&owner()?, action).await,
        Command::Factor { action } => factor::run(&owner()?, action).await,
        Command::Audit {
            action,
            request,
            since,
            json,
        } => audit_command(&owner()?, action, request, since, json).await,
        Command::Nodes { json } => nodes::list(&owner()?, json).await,
    }
}

/// `gatebot grants [revoke ID]`, as the owner.
async fn grants_command(
    c: &Client,
    action: Option<grants::GrantsAction>,
    agent: Option<&str>,
    all: bool,
    json: bool,
) -> Result<u8, String> {
    match action {
        Some(grants::GrantsAction::Revoke { id, json }) => grants::revoke(c, &id, json).await,
        None => grants::list(c, agent, all, json).await,
    }
}

/// `gatebot audit [verify|head]`, as the owner.
async fn audit_command(
    c: &Client,
    action: Option<AuditAction>,
    request: Option<String>,
    since: Option<String>,
    json: bool,
) -> Result<u8, String> {
    match action {
        Some(AuditAction::Verify { head, json }) => audit::verify(c, head.as_deref(), json).await,
        Some(AuditAction::Head { json }) => audit::head(c, json).await,
        None => audit::trail(c, request.as_deref(), since.as_deref(), json).await,
    }
}

/// `gatebot task …`, as the owner.
async fn task_command(c: &Client, action: TaskAction) -> Result<u8, String> {
    match action {
        TaskAction::Add {
            text,
            agent,
            intent,
            json,
        } => task::add(c, &text, agent.as_deref(), intent.as_deref(), json).await,
        TaskAction::Status { id, wait, json } => task::status(c, &id, wait.as_deref(), json).await,
        TaskAction::Answer { id, text, json } => task::answer(c, &id, &text, json).await,
        TaskAction::Cancel { id, json } => task::step(c, &id, "cancel", json).await,
        TaskAction::Retry { id, json } => task::step(c, &id, "retry", json).await,
    }
}

/// `gatebot workflow …`, as the agent whose token it is given.
async fn workflow_command(at: &Where, action: WorkflowCommand) -> Result<u8, String> {
    let agent = |token| {
        at.agents(token, false)
            .map(|c| c.with_timeout(CALL_TIMEOUT))
    };
    match action {
        WorkflowCommand::Start(a) => workflow::start(&agent(a.token.clone())?, a).await,
        WorkflowCommand::Event(a) => workflow::event(&agent(a.token.clone())?, a).await,
        WorkflowCommand::Status {
            run,
            wait,
            token,
            json,
        } => workflow::status(&agent(token)?, &run, wait.as_deref(), json).await,
    }
}

/// The control socket an owner's command talks to, found in the one order every client
/// command uses ([`crate::client::discover`]; the agents' commands go by
/// [`Where::agents`]). Only the sockets are read from a config
/// ([`crate::config::Config::sockets`]): secrets are the daemon's, not the caller's.
fn control_socket(given: Option<&Path>, config: Option<&Path>) -> Result<PathBuf, String> {
    discover::socket(given, config, Which::Control, &Places::from_env())
        .map(|found| found.socket)
        .map_err(|missing| missing.lines())
}

/// The config file: `--config` / `GATEBOT_CONFIG`, else the first found
/// ([`crate::client::discover::config_file`]).
fn config_file(config: Option<&Path>) -> Result<PathBuf, String> {
    discover::config_file(config, &Places::from_env())
        .map(|f| f.path)
        .map_err(|missing| missing.lines())
}

/// Longest wait for one answer from the daemon: more than the longest long-poll slice
/// ([`wait_for`] asks for at most 60 s at a time), so only a daemon that accepts and
/// never answers runs into it, and then the command fails (exit 2) instead of hanging.
const CALL_TIMEOUT: Duration = Duration::from_secs(90);

fn client(socket: PathBuf) -> Client {
    Client::new(socket).with_timeout(CALL_TIMEOUT)
}

/// Long-polls request `path` until it settles or `total` passes ([`long_poll`]).
async fn wait_for(client: &Client, path: &str, total: Duration) -> Result<ApprovalView, String> {
    long_poll(client, path, total, |v: &ApprovalView| {
        v.status != Status::Pending
    })
    .await
}

/// Long-polls `path` (a request, a run, a task) in slices of at most 60 s (the daemon
/// cuts each to `[queue] max_wait`) until `settled` says its answer is final or `total`
/// passes, and gives the last answer. A daemon that cannot be reached or drops the
/// connection (a restart: requests, check-ins and tasks survive it) is tried again with
/// backoff within the same `total`; stderr says so once ("lost gatebot …;
/// reconnecting, and still waiting"), and again when it is back. With several
/// endpoints each poll goes on to the next that knows `path` ([`Client::get_made`]),
/// and every round of them failing is one failure here.
async fn long_poll<T: serde::de::DeserializeOwned>(
    client: &Client,
    path: &str,
    total: Duration,
    settled: impl Fn(&T) -> bool,
) -> Result<T, String> {
    let start = Instant::now();
    let mut failures = 0u32;
    loop {
        let left = total.saturating_sub(start.elapsed());
        let slice = left.min(Duration::from_secs(60));
        let res = client
            .get_made(&format!("{path}?wait={:.3}", slice.as_secs_f64()))
            .await;
        match res {
            Err(e) if e.is_transient() => {
                let left = total.saturating_sub(start.elapsed());
                if left.is_zero() {
                    return Err(e.to_string());
                }
                if failures == 0 {
                    eprintln!("lost gatebot ({e}); reconnecting, and still waiting");
                }
                tokio::time::sleep(reconnect_delay(failures).min(left)).await;
                failures = failures.saturating_add(1);
            }
            res => {
                if failures > 0 {
                    eprintln!("reconnected to gatebot");
                    failures = 0;
                }
                let answer: T = serde_json::from_value(expect_ok(res)?.body)
                    .map_err(|e| format!("unexpected answer from gatebot: {e}"))?;
                if settled(&answer) || start.elapsed() >= total {
                    return Ok(answer);
                }
            }
        }
    }
}

/// Prints a request (`ask`, `status`) and returns the exit code its status means.
/// Prints a request (`ask`, `status`) and says by the exit code how it stands. Where
/// it is still pending, `asked` says it was just asked (`ask`), so the line on stderr
/// tells how to follow it; `status` has just been run and says nothing more.
fn report_view(view: &ApprovalView, json: bool, asked: bool) -> u8 {
    if json {
        outln!(
            "{}",
            pretty(&serde_json::to_value(view).unwrap_or_default())
        );
    } else {
        for line in view.described(crate::time::now_ms()) {
            outln!("{line}");
        }
    }
    match view.status {
        s if s.is_go() => {
            if !json && view.checkpoint {
                eprintln!("checkpoint advised before running: {}", view.policy_reason);
            }
            EXIT_GO
        }
        Status::Pending => {
            if asked {
                eprintln!(
                    "still pending: request {} stays queued; follow it with `gatebot status {} \
                     --wait 10m`",
                    view.short_id, view.short_id
                );
            }
            EXIT_PENDING
        }
        _ => {
            eprintln!("{}", view.message);
            EXIT_NO
        }
    }
}

/// A duration flag (`--wait 5m`), checked against its range: the error names the flag
/// and says the range in words.
fn flag_duration(flag: &str, value: &str, range: crate::time::Range) -> Result<Duration, String> {
    range.parse(value).map_err(|e| format!("{flag}: {e}"))
}

fn expect_ok(res: Result<Response, ClientError>) -> Result<Response, String> {
    let res = res.map_err(|e| e.to_string())?;
    if res.status.is_success() {
        Ok(res)
    } else {
        Err(format!(
            "{} ({})",
            res.error_message(),
            res.error_code().unwrap_or("error")
        ))
    }
}

fn view_of(res: Response) -> Result<ApprovalView, String> {
    serde_json::from_value(res.body).map_err(|e| format!("unexpected answer from gatebot: {e}"))
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// Reads `key` of a daemon's answer as `T`.
fn field<T: serde::de::DeserializeOwned>(body: &Value, key: &str) -> Result<T, String> {
    serde_json::from_value(body[key].clone()).map_err(|e| e.to_string())
}

/// A listing from `path`: with `--json` printed as the daemon answered (`None`),
/// else its `key`, read.
async fn listing<T: serde::de::DeserializeOwned>(
    client: &Client,
    path: &str,
    key: &str,
    json: bool,
) -> Result<Option<Vec<T>>, String> {
    let res = expect_ok(client.get(path).await)?;
    if json {
        outln!("{}", pretty(&res.body));
        return Ok(None);
    }
    field(&res.body, key).map(Some)
}

/// Percent-encodes a path segment (ids are plain, but a typo should not break the URL).
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A client for an owner's command: the daemon records who acts from the control
/// socket's peer credentials; for its own account and root (reached with sudo), the
/// person sudo names, which this sends.
fn as_owner(client: &Client) -> Client {
    match std::env::var("SUDO_USER") {
        Ok(person) if !person.is_empty() => client
            .clone()
            .with_header(crate::peer::SUDO_USER_HEADER, person),
        _ => client.clone(),
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    /// Every flag and argument of every command says what it is for in `--help`.
    #[test]
    fn every_flag_has_help_text() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if matches!(id, "help" | "version") {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} --{id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&Cli::command(), "gatebot", &mut missing);
        assert!(missing.is_empty(), "no help text: {missing:#?}");
    }
}
