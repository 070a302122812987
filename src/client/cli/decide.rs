//! `gatebot decide ID approve|approve-always|deny [--reason R]`: the owner decides;
//! `gatebot decide ID continue|stop [--reason R]` answers a workflow check-in, and for an
//! inbox task `gatebot decide ID queue|reject` (and `cancel`, `retry`). The daemon decides
//! by what the id names; the answer says its `kind`.

use serde_json::json;

use super::out::outln;
use super::{encode, expect_ok, pretty, view_of, EXIT_GO, EXIT_NO};
use crate::client::Client;

pub(super) async fn run(
    client: &Client,
    id: &str,
    decision: &str,
    reason: Option<&str>,
    json: bool,
) -> Result<u8, String> {
    let client = super::as_owner(client);
    let res = client
        .post(
            &format!("/v1/requests/{}/decision", encode(id)),
            &json!({"decision": decision, "reason": reason}),
        )
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
    if res.body["kind"] == crate::workflow::wire::CHECK_IN_KIND {
        let view: crate::workflow::wire::CheckInView = serde_json::from_value(res.body.clone())
            .map_err(|e| format!("unexpected answer from gatebot: {e}"))?;
        if json {
            outln!("{}", pretty(&res.body));
        } else {
            super::workflow::print_answered(&view);
        }
        return Ok(EXIT_GO);
    }
    // The id named an inbox task (`decide ID queue|reject`).
    if res.body["kind"] == "task" {
        let view = serde_json::from_value(res.body)
            .map_err(|e| format!("unexpected answer from gatebot: {e}"))?;
        super::task::print(&view, json);
        return Ok(EXIT_GO);
    }
    let view = view_of(res)?;
    if json {
        outln!(
            "{}",
            pretty(&serde_json::to_value(&view).unwrap_or_default())
        );
    } else {
        outln!(
            "{} {} ({} from {})",
            view.status,
            view.short_id,
            view.tool,
            view.agent
        );
    }
    Ok(EXIT_GO)
}
