//! `gatebot nodes`: every gatebot node using the database (several share a PostgreSQL
//! one: docs/scale-out.md), which one leads, and what differs between them.

use super::out::outln;
use super::{expect_ok, pretty, EXIT_GO};
use crate::client::Client;
use crate::engine::cluster::{NodeView, NodesView};
use crate::words;

/// Prints the nodes, this one first; exit 0 (warnings are printed, not failed on).
pub(super) async fn list(client: &Client, json: bool) -> Result<u8, String> {
    let res = expect_ok(client.get("/v1/nodes").await)?;
    if json {
        outln!("{}", pretty(&res.body));
        return Ok(EXIT_GO);
    }
    let view: NodesView = serde_json::from_value(res.body).map_err(|e| e.to_string())?;
    outln!(
        "{:<24} {:<8} {:<10} {:<12}  {}",
        "NODE",
        "ROLE",
        "VERSION",
        "CONFIG",
        "LAST HEARD"
    );
    for n in &view.nodes {
        let name = if n.this {
            format!("{} (this)", words::cut(&n.name, 17))
        } else {
            words::cut(&n.name, 24)
        };
        outln!(
            "{:<24} {:<8} {:<10} {:<12}  {}",
            name,
            role(n),
            words::cut(&n.version, 10),
            if n.config.is_empty() { "-" } else { &n.config },
            heard(n),
        );
    }
    for w in &view.warnings {
        outln!("warning: {w}");
    }
    Ok(EXIT_GO)
}

/// What the node does now, in a word.
fn role(n: &NodeView) -> &'static str {
    match (n.running, n.leader) {
        (false, _) => "silent",
        (true, true) => "leader",
        (true, false) => "standby",
    }
}

/// When it last renewed its row: "now", "3 s ago".
fn heard(n: &NodeView) -> String {
    words::relative(-n.silent_for_ms, 0)
}
