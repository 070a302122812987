//! `gatebot ask`: submit a request as an agent and wait for the verdict.

use std::io::Read;
use std::time::Duration;

use serde_json::{json, Value};

use super::{expect_ok, report_view, view_of, wait_for, AskArgs};
use crate::approval::Status;
use crate::client::Client;
use crate::time::range;

pub(super) async fn run(client: Client, a: AskArgs) -> Result<u8, String> {
    let args = read_args(&a)?;
    let wait = a
        .wait
        .as_deref()
        .map(|w| super::flag_duration("--wait", w, range::CLIENT_WAIT))
        .transpose()?;
    let mut body = json!({"agent": a.agent, "tool": a.tool, "args": args});
    for (k, v) in [
        ("summary", a.summary.map(Value::from)),
        ("confidence", a.confidence.map(Value::from)),
        ("environment", a.environment.map(Value::from)),
        ("ttl", a.ttl.map(Value::from)),
        ("cost", a.cost.map(Value::from)),
        // Without a key of the caller's, one of this invocation's own: a call resent to
        // the next endpoint then finds the request the first one made.
        (
            "idempotency_key",
            Some(Value::from(
                a.idempotency_key
                    .unwrap_or_else(crate::client::fresh_idempotency_key),
            )),
        ),
        (
            "task_id",
            a.task.filter(|t| !t.trim().is_empty()).map(Value::from),
        ),
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
    Ok(report_view(&view, a.json, true))
}

/// The tool's arguments: `--args JSON`, `--args -` (stdin), `--args-file F`, or none.
fn read_args(a: &AskArgs) -> Result<Value, String> {
    match (&a.args, &a.args_file) {
        (Some(s), _) if s == "-" => {
            let mut buf = String::new();
            std::io::stdin()
                .read_to_string(&mut buf)
                .map_err(|e| format!("cannot read --args from stdin: {e}"))?;
            parse_args(&buf)
        }
        (Some(s), _) => parse_args(s),
        (None, Some(f)) => parse_args(
            &std::fs::read_to_string(f).map_err(|e| format!("cannot read {}: {e}", f.display()))?,
        ),
        (None, None) => Ok(json!({})),
    }
}

/// `--confidence`: a number from 0.0 to 1.0. `NaN` and `inf` parse as floats but
/// have no place in JSON: sent, they would become `null` and drop the confidence gate
/// without a word, so they are refused here (clap exits 2 with this message).
pub(super) fn parse_confidence(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(c) if (0.0..=1.0).contains(&c) => Ok(c),
        _ => Err(format!("`{s}` is not a number from 0.0 to 1.0")),
    }
}

/// `--cost`: a number from 0 to [`crate::budget::MAX_COST`] (`NaN` and `inf` refused,
/// as for `--confidence`).
pub(super) fn parse_cost(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(c) if crate::budget::valid_cost(c) => Ok(c),
        _ => Err(format!(
            "`{s}` is not a cost: write a number from 0 to {:.0}",
            crate::budget::MAX_COST
        )),
    }
}

fn parse_args(s: &str) -> Result<Value, String> {
    serde_json::from_str(s).map_err(|e| format!("--args is not valid JSON: {e}"))
}
