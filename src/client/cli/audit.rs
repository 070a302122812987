//! `gatebot audit`: print the audit trail; `gatebot audit verify`: check its hash chain;
//! `gatebot audit head`: print the chain's head hash, to anchor the chain elsewhere.

use std::ops::ControlFlow;

use serde_json::Value;

use super::out::{self, outln};
use super::{encode, expect_ok, pretty, EXIT_GO, EXIT_NO};
use crate::client::Client;
use crate::time::{format_ms, now_ms, parse_duration, range};

/// `audit verify [--head HASH]`: exit 1 if the trail is not the unbroken chain its
/// head records (or no longer holds the anchor `head`).
pub(super) async fn verify(client: &Client, head: Option<&str>, json: bool) -> Result<u8, String> {
    let path = match head {
        Some(h) => format!("/v1/audit/verify?head={}", encode(h)),
        None => "/v1/audit/verify".to_string(),
    };
    let res = expect_ok(client.get(&path).await)?;
    let problems = res.body["problems"].as_array().cloned().unwrap_or_default();
    if json {
        outln!("{}", pretty(&res.body));
    } else if problems.is_empty() {
        outln!(
            "audit trail intact: {} rows checked ({} written before the chain existed)",
            res.body["rows"],
            res.body["unchained"]
        );
        if let Some(at) = res.body["anchored_at"].as_i64() {
            outln!("the anchored head is row {at}: nothing up to it has changed since");
        }
    } else {
        for p in &problems {
            outln!("{}", p.as_str().unwrap_or_default());
        }
    }
    Ok(if problems.is_empty() {
        EXIT_GO
    } else {
        EXIT_NO
    })
}

/// `audit head`: the chain's head hash (the last row's), alone on a line.
pub(super) async fn head(client: &Client, json: bool) -> Result<u8, String> {
    let res = expect_ok(client.get("/v1/audit/head").await)?;
    if json {
        outln!("{}", pretty(&res.body));
        return Ok(EXIT_GO);
    }
    match res.body["hash"].as_str() {
        Some(hash) => {
            outln!("{hash}");
            Ok(EXIT_GO)
        }
        None => Err("the audit trail has no chained row yet".into()),
    }
}

/// `audit [--request ID] [--since 24h]`: one line (or JSON object) per row, printed
/// as the rows arrive (the daemon streams them), so a long trail is never held whole.
pub(super) async fn trail(
    client: &Client,
    request: Option<&str>,
    since: Option<&str>,
    json: bool,
) -> Result<u8, String> {
    let mut query = vec!["format=ndjson".to_string()];
    if let Some(r) = request {
        query.push(format!("request={}", encode(r)));
    }
    if let Some(s) = since {
        query.push(format!("since={}", parse_since(s)?));
    }
    let path = format!("/v1/audit?{}", query.join("&"));
    let mut failed: Option<String> = None;
    let answer = client
        .get_lines(&path, |line| match print_row(line, json) {
            // The reader went away (`gatebot audit | head`): stop quietly.
            Ok(()) if out::closed() => ControlFlow::Break(()),
            Ok(()) => ControlFlow::Continue(()),
            Err(message) => {
                failed = Some(message);
                ControlFlow::Break(())
            }
        })
        .await
        .map_err(|e| e.to_string())?;
    if let Some(res) = answer {
        return Err(format!(
            "{} ({})",
            res.error_message(),
            res.error_code().unwrap_or("error")
        ));
    }
    match failed {
        Some(message) => Err(message),
        None => Ok(EXIT_GO),
    }
}

/// Prints one streamed row: as it came (`--json`), or as a line for people. An error
/// the daemon reports mid-stream, or a line that is no row, stops the listing.
fn print_row(line: &[u8], json: bool) -> Result<(), String> {
    let row: Value =
        serde_json::from_slice(line).map_err(|e| format!("unexpected answer from gatebot: {e}"))?;
    if let Some(error) = row.get("error") {
        return Err(format!(
            "{} ({})",
            error["message"]
                .as_str()
                .unwrap_or("the trail could not be read"),
            error["code"].as_str().unwrap_or("error")
        ));
    }
    if json {
        outln!("{}", String::from_utf8_lossy(line));
    } else {
        outln!(
            "{} {} {} {} {}",
            format_ms(row["at"].as_i64().unwrap_or(0)),
            row["event"].as_str().unwrap_or("?"),
            row["approval_id"].as_str().unwrap_or("-"),
            row["actor"].as_str().unwrap_or("-"),
            row["detail"]
        );
    }
    Ok(())
}

/// `24h` (that long ago) or an RFC 3339 time, as Unix milliseconds.
fn parse_since(s: &str) -> Result<i64, String> {
    if let Ok(d) = parse_duration(s) {
        let d = super::flag_duration("--since", s, range::SINCE).map(|_| d)?;
        return Ok(now_ms().saturating_sub(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)));
    }
    humantime::parse_rfc3339_weak(s)
        .map(|t| {
            t.duration_since(std::time::UNIX_EPOCH)
                .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
                .unwrap_or(0)
        })
        .map_err(|_| {
            format!(
                "--since `{s}` is neither a duration like 24h nor a time like 2026-11-22T10:00:00Z"
            )
        })
}
