//! `gatebot decide ID approve|approve-always|deny [--reason R] [--prefix [P] | --exact]
//! [--for D]`: the owner decides a request; `approve|deny` answers a tier proposal,
//! `continue|stop [--reason R]` a workflow check-in, and for an inbox task
//! `queue|reject` (and `cancel`, `retry`). The daemon decides by what the id names;
//! the answer says its `kind`.

use serde_json::json;

use super::agents::{scope_words, until_words};
use super::out::outln;
use super::{encode, expect_ok, pretty, view_of, EXIT_GO, EXIT_NO};
use crate::client::Client;
use crate::trust::Proposal;

/// What an approval should grant (see `wire::DecisionBody`).
#[derive(Debug, Default)]
pub(super) struct Grant {
    pub prefix: Option<String>,
    pub exact: bool,
    pub for_: Option<String>,
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
    let res = client
        .post(&format!("/v1/requests/{}/decision", encode(id)), &body)
        .await
        .map_err(|e| e.to_string())?;
    // Someone decided first: exit 1 and say who, as for a rejection, not 2 (an error).
    if matches!(
        res.error_code(),
        Some("already_decided" | "task_conflict" | "task_cancelled")
    ) {
        eprintln!("{}", res.error_message());
        return Ok(EXIT_NO);
    }
    let res = expect_ok(Ok(res))?;
    let body = res.body.clone();
    // Each kind of subject answers with its own view, which says its `kind` (a
    // request's does not).
    match body["kind"].as_str() {
        Some(crate::workflow::wire::CHECK_IN_KIND) => {
            let view = parse(body.clone())?;
            if json {
                outln!("{}", pretty(&body));
            } else {
                super::workflow::print_answered(&view);
            }
        }
        // The id named an inbox task (`decide ID queue|reject`).
        Some("task") => super::task::print(&parse(body)?, json),
        _ if json => outln!("{}", pretty(&body)),
        Some("proposal") => print_proposal(&parse(body)?),
        _ => print_request(res)?,
    }
    Ok(EXIT_GO)
}

fn parse<T: serde::de::DeserializeOwned>(body: serde_json::Value) -> Result<T, String> {
    serde_json::from_value(body).map_err(|e| format!("unexpected answer from gatebot: {e}"))
}

/// "approved proposal p7m2abcd: mailer is now supervised".
fn print_proposal(p: &Proposal) {
    match p.status {
        crate::trust::ProposalStatus::Approved => outln!(
            "approved proposal {}: {} is now {}",
            p.short_id,
            p.agent,
            p.to.as_str()
        ),
        _ => outln!(
            "declined proposal {}: {} stays {}",
            p.short_id,
            p.agent,
            p.from.as_str()
        ),
    }
}

/// "approved k7m2abcd (send_email from mailer)", and the grant it made, if any.
fn print_request(res: crate::client::Response) -> Result<(), String> {
    let granted: Option<crate::trust::Grant> = res
        .body
        .get("grant")
        .and_then(|g| serde_json::from_value(g.clone()).ok());
    let view = view_of(res)?;
    outln!(
        "{} {} ({} from {})",
        view.status,
        view.short_id,
        view.tool,
        view.agent
    );
    if let Some(g) = granted {
        outln!(
            "granted {}: {} may run {} without asking: {}, {}",
            g.short_id,
            g.agent,
            g.tool,
            scope_words(&g.scope),
            until_words(&g, crate::time::now_ms())
        );
    }
    Ok(())
}
