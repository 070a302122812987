//! `gatebot hook claude-code|codex|gemini`: the hook's JSON on stdin, its answer on
//! stdout ([`crate::client::hook::run`]).
//!
//! Agents kill a hook whose time runs out (Claude Code: SIGTERM; Gemini CLI: SIGTERM,
//! then SIGKILL 5 s later), and Ctrl-C reaches it too. On SIGTERM, SIGINT or SIGHUP
//! the hook withdraws its request, prints a deny if anyone still reads it, and exits,
//! all within a second ([`crate::hooks::resolve_until_stopped`]).

use std::io::Write;

use tokio::io::AsyncReadExt;

use super::flag_duration;
use super::{HookCommand, Where, EXIT_ERROR, EXIT_GO};
use crate::client::hook::HookRun;
use crate::client::stop_on_signals;
use crate::hooks::Kind;
use crate::time::range;

pub(super) async fn run(command: HookCommand, at: &Where) -> Result<u8, String> {
    // The budget counts from here, before stdin is read.
    let started = tokio::time::Instant::now();
    let stop = stop_on_signals().map_err(|e| format!("cannot handle signals: {e}"))?;
    let (kind, args) = match command {
        HookCommand::ClaudeCode(a) => (Kind::ClaudeCode, a),
        HookCommand::Codex(a) => (Kind::Codex, a),
        HookCommand::Gemini(a) => (Kind::Gemini, a),
    };
    let budget = args
        .timeout
        .as_deref()
        .map(|t| flag_duration("--timeout", t, range::CLIENT_WAIT))
        .transpose()?;
    let mut input = String::new();
    let mut stdin = tokio::io::stdin();
    let read = tokio::select! {
        r = stdin.read_to_string(&mut input) => r,
        _ = stop.cancelled() => {
            // Nothing was asked yet. Exit 2 is a block for every agent; exit at once,
            // since the runtime would otherwise wait for the read of stdin to end.
            eprintln!("gatebot hook: stopped before the hook input was read; the action was not checked");
            std::process::exit(EXIT_ERROR.into());
        }
    };
    read.map_err(|e| format!("cannot read the hook input from stdin: {e}"))?;
    let run = HookRun {
        kind,
        agent: args.agent,
        budget,
        started,
        // Why gatebot cannot be reached becomes the deny the agent's model and its user
        // read, naming every place tried.
        client: at.agents(args.token, true),
        stop,
        task_id: args.task.filter(|t| !t.trim().is_empty()),
    };
    if let Some(answer) = crate::client::hook::run(run, &input).await? {
        // The agent may have closed our stdout already (it killed us): nothing to say then.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{answer}").and_then(|()| out.flush());
    }
    Ok(EXIT_GO)
}
