//! `gatebot decide --agent A [--tool T] [--risk-at-most R] approve|deny [--reason R] [--yes]`:
//! one answer for every pending request of an agent that the filters keep. It lists
//! what it will do first (a critical request is never approved in a batch: it is left
//! out, to be approved on its own; a batch deny includes it) and asks on a terminal
//! (`--yes` for scripts). Each request is then decided through `POST
//! /v1/requests/{id}/decision`, as `gatebot decide ID` does: one vote per request under
//! each request's approval rule. Afterwards it says how many of each outcome.

use std::io::IsTerminal;

use serde_json::{json, Value};

use super::out::outln;
use super::{encode, expect_ok, EXIT_GO, EXIT_NO};
use crate::client::Client;
use crate::policy::RiskScore;

/// The most requests one batch lists.
const MOST: usize = 1000;

/// What the batch asks.
#[derive(Debug)]
pub(super) struct Batch {
    pub agent: String,
    pub tool: Option<String>,
    pub risk_at_most: Option<String>,
    pub verb: String,
    pub reason: Option<String>,
    pub yes: bool,
}

/// A pending request as the batch reads it.
struct Pending {
    id: String,
    short_id: String,
    tool: String,
    risk: RiskScore,
}

fn risk_of(v: &Value) -> Option<RiskScore> {
    serde_json::from_value(v["risk"]["score"].clone()).ok()
}

/// Every pending request of the agent that the filters keep, oldest first.
async fn pending(
    client: &Client,
    b: &Batch,
    most: Option<RiskScore>,
) -> Result<Vec<Pending>, String> {
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let mut path = format!("/v1/pending?limit=100&agent={}", encode(&b.agent));
        if let Some(a) = &after {
            path.push_str(&format!("&after={}", encode(a)));
        }
        let body = expect_ok(client.get(&path).await)?.body;
        let requests = body["requests"].as_array().cloned().unwrap_or_default();
        for r in &requests {
            let (Some(id), Some(short), Some(tool), Some(risk)) = (
                r["id"].as_str(),
                r["short_id"].as_str(),
                r["tool"].as_str(),
                risk_of(r),
            ) else {
                continue;
            };
            let kept =
                b.tool.as_deref().is_none_or(|t| t == tool) && most.is_none_or(|m| risk <= m);
            if kept {
                out.push(Pending {
                    id: id.into(),
                    short_id: short.into(),
                    tool: tool.into(),
                    risk,
                });
            }
        }
        match body["next"].as_str() {
            Some(next) if !requests.is_empty() && out.len() < MOST => after = Some(next.into()),
            _ => break,
        }
    }
    out.truncate(MOST);
    Ok(out)
}

fn requests(n: usize) -> String {
    match n {
        1 => "1 request".into(),
        n => format!("{n} requests"),
    }
}

pub(super) async fn run(client: &Client, b: Batch) -> Result<u8, String> {
    let approve = match b.verb.as_str() {
        "approve" => true,
        "deny" => false,
        other => {
            return Err(format!(
                "a batch takes approve or deny, not `{other}` (grants, edits and other \
                 subjects are decided one at a time: gatebot decide ID …)"
            ))
        }
    };
    let most = b
        .risk_at_most
        .as_deref()
        .map(|r| {
            serde_json::from_value::<RiskScore>(json!(r)).map_err(|_| {
                format!("--risk-at-most takes low, medium, high or critical, not `{r}`")
            })
        })
        .transpose()?;
    let found = pending(client, &b, most).await?;
    let (decided, critical): (Vec<&Pending>, Vec<&Pending>) = found
        .iter()
        .partition(|p| !(approve && p.risk == RiskScore::Critical));
    let verb = if approve { "Approve" } else { "Deny" };
    if decided.is_empty() {
        outln!("Nothing to {} of {}.", b.verb, b.agent);
        if !critical.is_empty() {
            outln!("{} of critical risk left out: a critical request is approved only on its own (gatebot decide ID approve).", requests(critical.len()));
        }
        return Ok(EXIT_GO);
    }
    outln!("{verb} {} of {}:", requests(decided.len()), b.agent);
    for p in &decided {
        outln!("  {}  {}, {} risk", p.short_id, p.tool, p.risk.as_str());
    }
    if !critical.is_empty() {
        let ids: Vec<&str> = critical.iter().map(|p| p.short_id.as_str()).collect();
        outln!(
            "Left out: {} of critical risk ({}): a critical request is approved only on its own.",
            requests(critical.len()),
            ids.join(", ")
        );
    }
    if let Some(r) = &b.reason {
        outln!("The agent reads: {r}");
    }
    if !b.yes && !confirmed(verb, decided.len())? {
        outln!("Nothing decided.");
        return Ok(EXIT_NO);
    }
    decide_all(client, &b, &decided).await
}

/// Asks on the terminal; without one, refuses (a script says --yes).
fn confirmed(verb: &str, n: usize) -> Result<bool, String> {
    if !std::io::stdin().is_terminal() {
        return Err(format!(
            "not deciding {} without asking: this is no terminal; add --yes to decide them",
            requests(n)
        ));
    }
    eprint!("{verb} these {}? [y/N] ", requests(n));
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| format!("cannot read the answer: {e}"))?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes" | "Yes"))
}

/// Decides each request, then says how many of each outcome.
async fn decide_all(client: &Client, b: &Batch, list: &[&Pending]) -> Result<u8, String> {
    let (mut approved, mut denied, mut counted, mut settled, mut refused) = (0, 0, 0, 0, 0);
    let mut said = Vec::new();
    for p in list {
        let body = json!({"decision": b.verb, "reason": b.reason});
        let res = client
            .post(&format!("/v1/requests/{}/decision", encode(&p.id)), &body)
            .await
            .map_err(|e| e.to_string())?;
        if res.status.is_success() {
            match res.body["status"].as_str() {
                Some("approved") => approved += 1,
                Some("rejected") => denied += 1,
                _ => counted += 1,
            }
            continue;
        }
        match res.error_code() {
            Some("already_decided") => settled += 1,
            Some("not_asked" | "own_task" | "voted_already" | "step_up_required" | "no_factor") => {
                refused += 1;
                said.push(res.error_message());
            }
            _ => {
                return Err(format!(
                    "stopped at {}: {}",
                    p.short_id,
                    res.error_message()
                ))
            }
        }
    }
    let mut parts = Vec::new();
    for (n, what) in [
        (approved, "approved"),
        (denied, "denied"),
        (counted, "a vote counted (more people must answer)"),
        (settled, "decided already"),
        (refused, "refused"),
    ] {
        if n > 0 {
            parts.push(format!("{} {what}", requests(n)));
        }
    }
    outln!("{}.", parts.join("; "));
    for s in said {
        outln!("  {s}");
    }
    Ok(if refused > 0 || settled > 0 {
        EXIT_NO
    } else {
        EXIT_GO
    })
}
