//! `gatebot agent-guidance NAME`: the system-prompt paragraph for the agent's tier.

use super::out::outln;
use super::{encode, expect_ok, pretty, EXIT_GO};
use crate::client::Client;

pub(super) async fn run(client: &Client, name: &str, json: bool) -> Result<u8, String> {
    let res = expect_ok(client.get(&format!("/v1/agents/{}", encode(name))).await)?;
    if json {
        outln!("{}", pretty(&res.body));
    } else {
        outln!("{}", res.body["guidance"].as_str().unwrap_or_default());
    }
    Ok(EXIT_GO)
}
