//! `gatebot decide ID approve|approve-always|deny [--reason R]`: the owner decides.

use serde_json::json;

use super::{encode, expect_ok, pretty, view_of, EXIT_GO, EXIT_NO};
use crate::client::Client;
use crate::peer::SUDO_USER_HEADER;

pub(super) async fn run(
    client: &Client,
    id: &str,
    decision: &str,
    reason: Option<&str>,
    json: bool,
) -> Result<u8, String> {
    // The daemon records who decided from the socket's peer credentials; for its own
    // account and root (reached with sudo), the person sudo names.
    let client = match std::env::var("SUDO_USER") {
        Ok(person) if !person.is_empty() => client.clone().with_header(SUDO_USER_HEADER, person),
        _ => client.clone(),
    };
    let res = client
        .post(
            &format!("/v1/requests/{}/decision", encode(id)),
            &json!({"decision": decision, "reason": reason}),
        )
        .await
        .map_err(|e| e.to_string())?;
    // Someone decided first: exit 1 and say who, as for a rejection, not 2 (an error).
    if res.error_code() == Some("already_decided") {
        eprintln!("{}", res.error_message());
        return Ok(EXIT_NO);
    }
    let view = view_of(expect_ok(Ok(res))?)?;
    if json {
        println!(
            "{}",
            pretty(&serde_json::to_value(&view).unwrap_or_default())
        );
    } else {
        println!(
            "{} {} ({} from {})",
            view.status, view.short_id, view.tool, view.agent
        );
    }
    Ok(EXIT_GO)
}
