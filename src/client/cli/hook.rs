//! `gatebot hook claude-code|codex|gemini`: the hook's JSON on stdin, its answer on
//! stdout ([`crate::client::hook::run`]).

use std::io::Read;
use std::path::{Path, PathBuf};

use super::{socket_for, HookCommand, EXIT_GO};
use crate::client::hook::HookRun;
use crate::hooks::Kind;
use crate::time::parse_duration;

pub(super) async fn run(
    command: HookCommand,
    flag: &Option<PathBuf>,
    config: &Path,
) -> Result<u8, String> {
    // The budget counts from here, before stdin is read.
    let started = tokio::time::Instant::now();
    let (kind, args) = match command {
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
        socket: socket_for(flag, config, false),
        token: args.token,
        task_id: args.task.filter(|t| !t.trim().is_empty()),
    };
    let answer = crate::client::hook::run(run, &input).await?;
    println!("{answer}");
    Ok(EXIT_GO)
}
