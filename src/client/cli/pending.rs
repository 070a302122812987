//! `gatebot pending`: what waits for the owner, from `GET /v1/pending`: pending
//! requests oldest first, a page at a time, and on the first page whatever else every
//! kind lists there (the workflow check-ins that wait, the open tier proposals), each
//! kind its own section (`--json`: its own keys).

use super::decide::print_said;
use super::{encode, expect_ok, EXIT_GO};
use crate::client::Client;

pub(super) async fn run(
    client: &Client,
    agent: Option<&str>,
    limit: usize,
    after: Option<&str>,
    json: bool,
) -> Result<u8, String> {
    let mut path = format!("/v1/pending?limit={limit}");
    if let Some(a) = agent {
        path.push_str(&format!("&agent={}", encode(a)));
    }
    if let Some(a) = after {
        path.push_str(&format!("&after={}", encode(a)));
    }
    let mut body = expect_ok(client.get(&path).await)?.body;
    print_said(&mut body, json);
    Ok(EXIT_GO)
}
