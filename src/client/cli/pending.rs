//! `gatebot pending`: the owner's list of pending requests, oldest first, a page at a
//! time, and the open tier proposals (on the first page).

use serde_json::Value;

use super::{encode, expect_ok, pretty, EXIT_GO};
use crate::client::Client;
use crate::trust::evidence::percent;
use crate::trust::Proposal;
use crate::wire::ApprovalView;

pub(super) async fn run(
    client: &Client,
    agent: Option<&str>,
    limit: usize,
    after: Option<&str>,
    json: bool,
) -> Result<u8, String> {
    let mut path = format!("/v1/requests?status=pending&limit={limit}");
    if let Some(a) = agent {
        path.push_str(&format!("&agent={}", encode(a)));
    }
    if let Some(a) = after {
        path.push_str(&format!("&after={}", encode(a)));
    }
    let mut res = expect_ok(client.get(&path).await)?;
    // Proposals are few and not paged: they come with the first page.
    let proposals: Vec<Proposal> = if after.is_none() {
        let body = expect_ok(client.get("/v1/proposals").await)?.body;
        let all: Vec<Proposal> =
            serde_json::from_value(body["proposals"].clone()).map_err(|e| e.to_string())?;
        all.into_iter()
            .filter(|p| agent.is_none_or(|a| p.agent == a))
            .collect()
    } else {
        Vec::new()
    };
    if json {
        res.body["proposals"] = serde_json::to_value(&proposals).unwrap_or(Value::Null);
        println!("{}", pretty(&res.body));
        return Ok(EXIT_GO);
    }
    let list: Vec<ApprovalView> =
        serde_json::from_value(res.body["requests"].clone()).map_err(|e| e.to_string())?;
    print_list(&list);
    if let Some(next) = res.body["next"].as_str() {
        println!("… more pending: gatebot pending --after {next}");
    }
    if !proposals.is_empty() {
        println!();
        println!("Open proposals (gatebot decide ID approve|deny):");
        for p in &proposals {
            let m = p.measures;
            println!(
                "{}  {} ({} handled, {} approved, {} denied)",
                p.short_id,
                p.question(),
                m.handled,
                percent(m.positive_rate),
                percent(m.correction_rate)
            );
        }
    }
    Ok(EXIT_GO)
}

/// One line per request (short id, agent, tool, risk, expiry), its summary below.
fn print_list(list: &[ApprovalView]) {
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
}
