//! `gatebot pending`: the owner's list of pending requests, oldest first, a page at a
//! time; on the first page, the workflow check-ins that wait too (text: their own
//! section; `--json`: the `check_ins` key) and the open tier proposals (`proposals`).

use serde_json::Value;

use super::out::outln;
use super::{encode, expect_ok, field, pretty, EXIT_GO};
use crate::client::Client;
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
    // Check-ins are few (one per waiting run): the first page shows them all.
    let check_ins = match after {
        None => super::workflow::waiting_check_ins(client, agent).await?,
        Some(_) => Vec::new(),
    };
    // Proposals are few and not paged either: they come with the first page.
    let proposals: Vec<Proposal> = if after.is_none() {
        let body = expect_ok(client.get("/v1/proposals").await)?.body;
        let all: Vec<Proposal> = field(&body, "proposals")?;
        all.into_iter()
            .filter(|p| agent.is_none_or(|a| p.agent == a))
            .collect()
    } else {
        Vec::new()
    };
    if json {
        res.body["check_ins"] = serde_json::to_value(&check_ins).unwrap_or_default();
        res.body["proposals"] = serde_json::to_value(&proposals).unwrap_or(Value::Null);
        outln!("{}", pretty(&res.body));
        return Ok(EXIT_GO);
    }
    let list: Vec<ApprovalView> = field(&res.body, "requests")?;
    print_list(&list);
    if let Some(next) = res.body["next"].as_str() {
        outln!("… more pending: gatebot pending --after {next}");
    }
    super::workflow::print_waiting(&check_ins);
    if !proposals.is_empty() {
        outln!();
        outln!("Open proposals (gatebot decide ID approve|deny):");
        for p in &proposals {
            outln!("{}  {} ({})", p.short_id, p.question(), p.measures.brief());
        }
    }
    Ok(EXIT_GO)
}

/// One line per request (short id, agent, tool, risk, expiry), its summary below.
fn print_list(list: &[ApprovalView]) {
    if list.is_empty() {
        outln!("No pending requests.");
    }
    for a in list {
        if super::out::closed() {
            break;
        }
        outln!(
            "{}  {:<16} {:<24} risk {:<8} expires {}",
            a.short_id,
            a.agent,
            a.tool,
            a.risk.score.as_str(),
            a.expires_at.as_deref().unwrap_or("-")
        );
        if let Some(s) = &a.summary {
            outln!("          {s}");
        }
    }
}
