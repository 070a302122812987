//! `gatebot mcp`: the MCP approval tool on stdin and stdout ([`crate::client::mcp`]).

use super::flag_duration;
use super::{HookArgs, Where, EXIT_GO};
use crate::client::mcp::McpOptions;
use crate::client::stop_on_signals;
use crate::hooks::{Kind, DEFAULT_BUDGET};
use crate::time::range;

pub(super) async fn run(args: HookArgs, at: &Where) -> Result<u8, String> {
    let budget = args
        .timeout
        .as_deref()
        .map(|t| flag_duration("--timeout", t, range::CLIENT_WAIT))
        .transpose()?;
    let stop = stop_on_signals().map_err(|e| format!("cannot handle signals: {e}"))?;
    let opts = McpOptions {
        agent: args
            .agent
            .unwrap_or_else(|| Kind::ClaudeCode.default_agent().to_string()),
        budget: budget.unwrap_or(DEFAULT_BUDGET),
        client: at.agents(args.token, true),
        stop: stop.clone(),
        task_id: args.task.filter(|t| !t.trim().is_empty()),
    };
    let stdin = tokio::io::BufReader::new(tokio::io::stdin());
    crate::client::mcp::serve(opts, stdin, tokio::io::stdout())
        .await
        .map_err(|e| format!("the MCP server stopped: {e}"))?;
    if stop.is_cancelled() {
        // Stopped by a signal: stdin may still be open, and the runtime would wait for
        // its read to end before exiting. Everything to say has been written.
        std::process::exit(EXIT_GO.into());
    }
    Ok(EXIT_GO)
}
