//! The `gatebot` command line: the daemon and the owner's and agents' commands.
//!
//! Exit codes of `ask` and `status`: 0 allowed or approved; 1 rejected, blocked,
//! expired or cancelled (reason on stderr); 2 error; 3 still pending when `--wait`
//! ran out (the request stays queued; its id is printed).

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand};
use serde_json::{json, Value};

use super::{Client, ClientError, Response};
use crate::approval::Status;
use crate::client::hook::HookRun;
use crate::client::mcp::McpOptions;
use crate::config::{format_duration, parse_duration, Config};
use crate::hooks::Kind;
use crate::wire::ApprovalView;

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
    version,
    about = "Human approval for AI agents' risky actions"
)]
pub struct Cli {
    /// The config file.
    #[arg(
        long,
        short,
        global = true,
        env = "GATEBOT_CONFIG",
        default_value = "bot.toml"
    )]
    pub config: PathBuf,
    /// The socket to talk to (default: the config's queue.socket for `ask`,
    /// queue.control_socket for owner commands).
    #[arg(long, global = true, env = "GATEBOT_SOCKET")]
    pub socket: Option<PathBuf>,
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
        #[arg(long)]
        json: bool,
    },
    /// Decide a pending request (owner).
    Decide {
        /// Full id, short id, or a unique prefix of at least 4 characters.
        id: String,
        /// approve, approve-always or deny.
        decision: String,
        /// Why; reaches the agent (most useful with deny).
        #[arg(long)]
        reason: Option<String>,
        #[arg(long)]
        json: bool,
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
    /// Validate the config file and explain every error (all of them, each with its
    /// key path and line, once the file parses).
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
}

#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Claude Code's PermissionRequest or PreToolUse command hook.
    ClaudeCode(HookArgs),
    /// Codex's PermissionRequest hook (.codex/hooks.json).
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
}

#[derive(Debug, Subcommand)]
pub enum AuditAction {
    /// Recompute the hash chain; exit 1 if any row was edited, deleted or reordered.
    Verify {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct AskArgs {
    #[arg(long)]
    pub agent: String,
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
    #[arg(long)]
    pub confidence: Option<f64>,
    /// The environment the action runs in (production raises risk, sandbox lowers it).
    #[arg(long = "env")]
    pub environment: Option<String>,
    /// How long the request may wait for a human, e.g. 30m (default: policy.default_ttl).
    #[arg(long)]
    pub ttl: Option<String>,
    /// How long to wait for the decision (default: until it is decided or expires).
    #[arg(long)]
    pub wait: Option<String>,
    /// The same key returns the same request instead of creating another.
    #[arg(long)]
    pub idempotency_key: Option<String>,
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
        Ok(code) => ExitCode::from(code),
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}

async fn client_command(cli: Cli) -> Result<u8, String> {
    match cli.command {
        Command::Run => unreachable!("run is handled by main"),
        Command::CheckConfig { telegram } => {
            let code = check_config(&cli.config)?;
            if telegram {
                check_telegram(&cli.config).await?;
            }
            Ok(code)
        }
        Command::Hook { agent } => {
            // The budget counts from here, before stdin is read.
            let started = tokio::time::Instant::now();
            let (kind, args) = match agent {
                HookCommand::ClaudeCode(a) => (Kind::ClaudeCode, a),
                HookCommand::Codex(a) => (Kind::Codex, a),
                HookCommand::Gemini(a) => (Kind::Gemini, a),
            };
            let budget = args.timeout.as_deref().map(parse_duration).transpose()?;
            let mut input = String::new();
            std::io::stdin()
                .read_to_string(&mut input)
                .map_err(|e| format!("cannot read the hook input from stdin: {e}"))?;
            let run = HookRun {
                kind,
                agent: args.agent,
                budget,
                started,
                socket: socket_for(&cli.socket, &cli.config, false),
                token: args.token,
            };
            let answer = crate::client::hook::run(run, &input).await?;
            println!("{answer}");
            Ok(EXIT_GO)
        }
        Command::Mcp(args) => {
            let budget = args.timeout.as_deref().map(parse_duration).transpose()?;
            let opts = McpOptions {
                agent: args
                    .agent
                    .unwrap_or_else(|| Kind::ClaudeCode.default_agent().to_string()),
                budget: budget.unwrap_or(crate::hooks::DEFAULT_BUDGET),
                socket: socket_for(&cli.socket, &cli.config, false),
                token: args.token,
            };
            let stdin = tokio::io::BufReader::new(tokio::io::stdin());
            crate::client::mcp::serve(opts, stdin, tokio::io::stdout())
                .await
                .map_err(|e| format!("the MCP server stopped: {e}"))?;
            Ok(EXIT_GO)
        }
        Command::AgentGuidance { name, json, token } => {
            let client = client(socket_for(&cli.socket, &cli.config, true)?).with_token(token);
            let res = expect_ok(client.get(&format!("/v1/agents/{}", encode(&name))).await)?;
            if json {
                println!("{}", pretty(&res.body));
            } else {
                println!("{}", res.body["guidance"].as_str().unwrap_or_default());
            }
            Ok(EXIT_GO)
        }
        Command::Ask(args) => {
            let socket = socket_for(&cli.socket, &cli.config, false)?;
            ask(client(socket).with_token(args.token.clone()), args).await
        }
        Command::Status { id, wait, json } => {
            let client = client(socket_for(&cli.socket, &cli.config, true)?);
            let wait = wait.as_deref().map(parse_duration).transpose()?;
            let path = format!("/v1/requests/{}", encode(&id));
            let view = match wait {
                Some(w) => wait_for(&client, &path, w).await?,
                None => view_of(expect_ok(client.get(&path).await)?)?,
            };
            Ok(report_view(&view, json))
        }
        Command::Pending {
            agent,
            limit,
            after,
            json,
        } => {
            let client = client(socket_for(&cli.socket, &cli.config, true)?);
            let mut path = format!("/v1/requests?status=pending&limit={limit}");
            if let Some(a) = &agent {
                path.push_str(&format!("&agent={}", encode(a)));
            }
            if let Some(a) = &after {
                path.push_str(&format!("&after={}", encode(a)));
            }
            let res = expect_ok(client.get(&path).await)?;
            if json {
                println!("{}", pretty(&res.body));
                return Ok(EXIT_GO);
            }
            let list: Vec<ApprovalView> =
                serde_json::from_value(res.body["requests"].clone()).map_err(|e| e.to_string())?;
            if list.is_empty() {
                println!("No pending requests.");
            }
            for a in list {
                println!(
                    "{}  {:<16} {:<24} risk {:<8} expires {}",
                    a.short_id,
                    a.agent,
                    a.tool,
                    a.risk.score.as_str(),
                    a.expires_at.as_deref().unwrap_or("-")
                );
                if let Some(s) = &a.summary {
                    println!("          {s}");
                }
            }
            if let Some(next) = res.body["next"].as_str() {
                println!("… more pending: gatebot pending --after {next}");
            }
            Ok(EXIT_GO)
        }
        Command::Decide {
            id,
            decision,
            reason,
            json,
        } => {
            let client = client(socket_for(&cli.socket, &cli.config, true)?);
            let res = client
                .post(
                    &format!("/v1/requests/{}/decision", encode(&id)),
                    &json!({"decision": decision, "reason": reason}),
                )
                .await
                .map_err(|e| e.to_string())?;
            if res.error_code() == Some("already_decided") {
                eprintln!("{}", res.error_message());
                return Ok(EXIT_NO);
            }
            let view = view_of(expect_ok(Ok(res))?)?;
            if json {
                println!(
                    "{}",
                    pretty(&serde_json::to_value(&view).unwrap_or_default())
                );
            } else {
                println!(
                    "{} {} ({} from {})",
                    view.status, view.short_id, view.tool, view.agent
                );
            }
            Ok(EXIT_GO)
        }
        Command::Audit {
            action: Some(AuditAction::Verify { json }),
            ..
        } => {
            let client = client(socket_for(&cli.socket, &cli.config, true)?);
            let res = expect_ok(client.get("/v1/audit/verify").await)?;
            let problems = res.body["problems"].as_array().cloned().unwrap_or_default();
            if json {
                println!("{}", pretty(&res.body));
            } else if problems.is_empty() {
                println!(
                    "audit trail intact: {} rows checked ({} written before the chain existed)",
                    res.body["rows"], res.body["unchained"]
                );
            } else {
                for p in &problems {
                    println!("{}", p.as_str().unwrap_or_default());
                }
            }
            Ok(if problems.is_empty() {
                EXIT_GO
            } else {
                EXIT_NO
            })
        }
        Command::Audit {
            action: None,
            request,
            since,
            json,
        } => {
            let client = client(socket_for(&cli.socket, &cli.config, true)?);
            let mut query = Vec::new();
            if let Some(r) = request {
                query.push(format!("request={}", encode(&r)));
            }
            if let Some(s) = since {
                query.push(format!("since={}", parse_since(&s)?));
            }
            let path = if query.is_empty() {
                "/v1/audit".to_string()
            } else {
                format!("/v1/audit?{}", query.join("&"))
            };
            let res = expect_ok(client.get(&path).await)?;
            let rows = res.body["audit"].as_array().cloned().unwrap_or_default();
            for row in rows {
                if json {
                    println!("{row}");
                } else {
                    println!(
                        "{} {} {} {} {}",
                        crate::approval::format_ms(row["at"].as_i64().unwrap_or(0)),
                        row["event"].as_str().unwrap_or("?"),
                        row["approval_id"].as_str().unwrap_or("-"),
                        row["actor"].as_str().unwrap_or("-"),
                        row["detail"]
                    );
                }
            }
            Ok(EXIT_GO)
        }
    }
}

/// `check-config --telegram`: one getMe with the configured token and API URL.
async fn check_telegram(path: &std::path::Path) -> Result<(), String> {
    let config = Config::load(path).map_err(|e| e.to_string())?;
    let Some(t) = &config.telegram else {
        return Err("telegram is off (no token), so there is nothing to check".into());
    };
    match crate::telegram::check(t).await {
        Ok(me) => {
            println!(
                "  telegram:        ok, the token belongs to @{}",
                me.user.username.as_deref().unwrap_or("?")
            );
            Ok(())
        }
        Err(e) => Err(format!("telegram: {e}")),
    }
}

fn check_config(path: &std::path::Path) -> Result<u8, String> {
    match Config::check(path) {
        Ok(c) => {
            println!("{}: ok", path.display());
            println!("  database:        {}", c.store.path.display());
            println!("  agent socket:    {}", c.queue.socket.display());
            println!("  control socket:  {}", c.queue.control_socket.display());
            if let Some(l) = &c.queue.listen {
                println!("  TCP listener:    {l} (agents must send their token)");
            }
            println!(
                "  policy:          tool_approval_mode = {:?}, default_ttl = {}, unknown agents: {:?}",
                c.policy.tool_approval_mode,
                format_duration(c.default_ttl),
                c.unknown_agents
            );
            for (name, a) in &c.agents {
                println!(
                    "  agent {name}: {}{}",
                    a.rules.tier.as_str(),
                    if a.token.is_some() { ", token set" } else { "" }
                );
            }
            if let Some(t) = &c.telegram {
                println!(
                    "  telegram:        {} chat(s), {} approver(s), API {}",
                    t.chats.len(),
                    t.approvers.len(),
                    t.api_url
                );
            }
            if let Some(s) = &c.slack {
                println!(
                    "  slack:           {:?} mode, {} channel(s), {} approver(s), API {}",
                    s.mode,
                    s.channels.len(),
                    s.approvers.len(),
                    s.api_url
                );
            }
            for note in &c.notes {
                println!("  note: {note}");
            }
            if c.telegram.is_none() && c.slack.is_none() {
                println!("  chat channels:   none on; owners decide with `gatebot decide`");
            }
            Ok(EXIT_GO)
        }
        // One line per error, each with its file, line and key path.
        Err(errors) => Err(errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\nerror: ")),
    }
}

/// `--socket` / `GATEBOT_SOCKET`, else the config's socket.
fn socket_for(
    flag: &Option<PathBuf>,
    config: &std::path::Path,
    owner: bool,
) -> Result<PathBuf, String> {
    if let Some(s) = flag {
        return Ok(s.clone());
    }
    let c = Config::load(config).map_err(|e| {
        format!("{e}\n(pass --socket or set GATEBOT_SOCKET to skip reading the config)")
    })?;
    Ok(if owner {
        c.queue.control_socket
    } else {
        c.queue.socket
    })
}

async fn ask(client: Client, a: AskArgs) -> Result<u8, String> {
    let args: Value = match (&a.args, &a.args_file) {
        (Some(s), _) if s == "-" => {
            let mut buf = String::new();
            std::io::stdin()
                .read_to_string(&mut buf)
                .map_err(|e| format!("cannot read --args from stdin: {e}"))?;
            parse_args(&buf)?
        }
        (Some(s), _) => parse_args(s)?,
        (None, Some(f)) => parse_args(
            &std::fs::read_to_string(f).map_err(|e| format!("cannot read {}: {e}", f.display()))?,
        )?,
        (None, None) => json!({}),
    };
    let wait = a.wait.as_deref().map(parse_duration).transpose()?;
    let mut body = json!({"agent": a.agent, "tool": a.tool, "args": args});
    for (k, v) in [
        ("summary", a.summary.map(Value::from)),
        ("confidence", a.confidence.map(Value::from)),
        ("environment", a.environment.map(Value::from)),
        ("ttl", a.ttl.map(Value::from)),
        ("idempotency_key", a.idempotency_key.map(Value::from)),
    ] {
        if let Some(v) = v {
            body[k] = v;
        }
    }
    let res = expect_ok(client.post("/v1/requests", &body).await)?;
    let mut view = view_of(res)?;
    if view.status == Status::Pending {
        if !a.json {
            eprintln!(
                "waiting for a human: request {} ({} risk). Decide with `gatebot decide {} approve|deny`.",
                view.short_id,
                view.risk.score.as_str(),
                view.short_id
            );
        }
        let path = format!("/v1/requests/{}", view.id);
        view = wait_for(&client, &path, wait.unwrap_or(Duration::MAX)).await?;
    }
    Ok(report_view(&view, a.json))
}

/// `24h` (that long ago) or an RFC 3339 time, as Unix milliseconds.
fn parse_since(s: &str) -> Result<i64, String> {
    if let Ok(d) = parse_duration(s) {
        return Ok(crate::approval::now_ms() - d.as_millis() as i64);
    }
    humantime::parse_rfc3339_weak(s)
        .map(|t| {
            t.duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as i64)
                .unwrap_or(0)
        })
        .map_err(|_| {
            format!(
                "--since `{s}` is neither a duration like 24h nor a time like 2026-11-22T10:00:00Z"
            )
        })
}

fn parse_args(s: &str) -> Result<Value, String> {
    serde_json::from_str(s).map_err(|e| format!("--args is not valid JSON: {e}"))
}

/// Long-polls in slices until the request settles or `total` passes.
/// Longest wait for one answer from the daemon: more than the longest long-poll slice
/// ([`wait_for`] asks for at most 60 s at a time), so only a daemon that accepts and
/// never answers runs into it, and then the command fails (exit 2) instead of hanging.
const CALL_TIMEOUT: Duration = Duration::from_secs(90);

fn client(socket: PathBuf) -> Client {
    Client::new(socket).with_timeout(CALL_TIMEOUT)
}

async fn wait_for(client: &Client, path: &str, total: Duration) -> Result<ApprovalView, String> {
    let start = Instant::now();
    loop {
        let left = total.saturating_sub(start.elapsed());
        let slice = left.min(Duration::from_secs(60));
        let res = expect_ok(
            client
                .get(&format!("{path}?wait={:.3}", slice.as_secs_f64()))
                .await,
        )?;
        let view = view_of(res)?;
        if view.status != Status::Pending || start.elapsed() >= total {
            return Ok(view);
        }
    }
}

fn report_view(view: &ApprovalView, json: bool) -> u8 {
    if json {
        println!(
            "{}",
            pretty(&serde_json::to_value(view).unwrap_or_default())
        );
    } else {
        let factors = if view.risk.factors.is_empty() {
            String::new()
        } else {
            format!("; {}", view.risk.factors.join(", "))
        };
        println!(
            "{}  id {} ({})  risk {} ({}{})",
            view.status,
            view.short_id,
            view.id,
            view.risk.score.as_str(),
            view.risk.tool_class.as_str(),
            factors
        );
    }
    match view.status {
        s if s.is_go() => {
            if !json && view.checkpoint {
                eprintln!("checkpoint advised before running: {}", view.policy_reason);
            }
            EXIT_GO
        }
        Status::Pending => {
            eprintln!(
                "still pending: request {} stays queued; check it with `gatebot status {}`",
                view.short_id, view.short_id
            );
            EXIT_PENDING
        }
        _ => {
            eprintln!("{}", view.message);
            EXIT_NO
        }
    }
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

/// Percent-encodes a path segment (ids are plain, but a typo should not break the URL).
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}
