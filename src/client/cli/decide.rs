//! `gatebot decide ID VERB [--reason R] [--prefix [P] | --exact] [--for D] [--args FILE]`: the owner
//! decides whatever the id names. The daemon finds its kind, and the kind takes its own
//! verbs: `approve|approve-always|deny` for a request (with what an approval grants),
//! `approve|deny` for a tier proposal, `continue|stop` for a workflow check-in,
//! `queue|reject|cancel|retry` for an inbox task. The answer is the subject's view and
//! the lines to print.

use serde_json::{json, Value};

use super::out::outln;
use super::{encode, expect_ok, pretty, EXIT_GO, EXIT_NO};
use crate::client::Client;

/// What an approval should grant (see `wire::DecisionBody`).
#[derive(Debug, Default)]
pub(super) struct Grant {
    pub prefix: Option<String>,
    pub exact: bool,
    pub for_: Option<String>,
    /// Edited arguments: a file holding a JSON object (`-`: stdin).
    pub args: Option<std::path::PathBuf>,
    /// A code from the owner's authenticator app, for an approval that needs a second
    /// factor (asked on the terminal when it is needed and not given).
    pub code: Option<String>,
}

pub(super) async fn run(
    client: &Client,
    id: &str,
    decision: &str,
    reason: Option<&str>,
    grant: Grant,
    json: bool,
) -> Result<u8, String> {
    let mut body = json!({"decision": decision, "reason": reason});
    if let Some(p) = &grant.prefix {
        body["prefix"] = json!(p);
    }
    if grant.exact {
        body["exact"] = json!(true);
    }
    if let Some(d) = &grant.for_ {
        body["for"] = json!(d);
    }
    if let Some(path) = &grant.args {
        body["args"] = edited_args(path)?;
    }
    if let Some(code) = &grant.code {
        body["code"] = json!(code);
    }
    let path = format!("/v1/requests/{}/decision", encode(id));
    let mut res = client.post(&path, &body).await.map_err(|e| e.to_string())?;
    // An approval that needs the owner's second factor: ask for a code on a terminal.
    if res.error_code() == Some("step_up_required") && grant.code.is_none() {
        if let Some(code) = code_from_terminal(&res.error_message())? {
            body["code"] = json!(code);
            res = client.post(&path, &body).await.map_err(|e| e.to_string())?;
        }
    }
    // Someone decided first, the rule does not take this vote, or a budget refuses the
    // approval (the request stays pending): exit 1 and say why, as for a rejection, not 2.
    if matches!(
        res.error_code(),
        Some(
            "already_decided"
                | "task_conflict"
                | "task_cancelled"
                | "own_task"
                | "not_asked"
                | "voted_already"
                | "over_budget"
                | "step_up_required"
                | "no_factor"
                | "wrong_code"
                | "codes_locked"
        )
    ) {
        eprintln!("{}", res.error_message());
        return Ok(EXIT_NO);
    }
    let mut body = expect_ok(Ok(res))?.body;
    print_said(&mut body, json);
    Ok(EXIT_GO)
}

/// A code typed on the terminal after `why`, or `None` without a terminal (the caller
/// then says why and exits 1; a script passes --code).
pub(super) fn code_from_terminal(why: &str) -> Result<Option<String>, String> {
    use std::io::IsTerminal;
    if !std::io::stdin().is_terminal() {
        return Ok(None);
    }
    eprintln!("{why}");
    eprint!("Code: ");
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| format!("cannot read the code: {e}"))?;
    Ok(Some(line.trim().to_string()).filter(|c| !c.is_empty()))
}

/// The edited arguments in `path` (`-`: stdin), read as JSON.
fn edited_args(path: &std::path::Path) -> Result<Value, String> {
    let text = if path.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).map_err(|e| format!("--args: stdin: {e}"))?
    } else {
        std::fs::read_to_string(path).map_err(|e| format!("--args: {}: {e}", path.display()))?
    };
    serde_json::from_str(&text).map_err(|e| format!("--args: {} is not JSON: {e}", path.display()))
}

/// Prints an owner's answer: with `--json` the data (without the lines for people),
/// else the lines the daemon wrote under `said`.
pub(super) fn print_said(body: &mut Value, json: bool) {
    let said = body
        .as_object_mut()
        .and_then(|o| o.remove("said"))
        .unwrap_or_default();
    if json {
        outln!("{}", pretty(body));
        return;
    }
    for line in said.as_array().into_iter().flatten() {
        if super::out::closed() {
            break;
        }
        outln!("{}", line.as_str().unwrap_or_default());
    }
}
