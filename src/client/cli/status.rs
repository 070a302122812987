//! `gatebot status ID [--wait D]`: show a request; wait for its decision.

use super::{encode, expect_ok, report_view, view_of, wait_for};
use crate::client::Client;
use crate::time::range;

pub(super) async fn run(
    client: &Client,
    id: &str,
    wait: Option<&str>,
    json: bool,
) -> Result<u8, String> {
    let wait = wait
        .map(|w| super::flag_duration("--wait", w, range::CLIENT_WAIT))
        .transpose()?;
    let path = format!("/v1/requests/{}", encode(id));
    let view = match wait {
        Some(w) => wait_for(client, &path, w).await?,
        None => view_of(expect_ok(client.get(&path).await)?)?,
    };
    Ok(report_view(&view, json, false))
}
