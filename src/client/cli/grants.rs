//! `gatebot grants [--agent A] [--all] [--json]` and `gatebot grants revoke ID`: what
//! owners allowed agents to run without asking, and taking it back.

use clap::Subcommand;
use serde_json::json;

use super::out::outln;
use super::{encode, expect_ok, listing, pretty, EXIT_GO};
use crate::client::Client;
use crate::trust::Grant;

#[derive(Debug, Subcommand)]
pub enum GrantsAction {
    /// Revoke a grant: the agent asks again before the calls it covered.
    Revoke {
        /// The grant's short id (or a unique prefix of 4+ characters), or full id.
        id: String,
        /// Print the data as JSON (what the API answers) instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// `gatebot grants`.
pub(super) async fn list(
    client: &Client,
    agent: Option<&str>,
    all: bool,
    json: bool,
) -> Result<u8, String> {
    let mut path = format!("/v1/grants?all={all}");
    if let Some(a) = agent {
        path.push_str(&format!("&agent={}", encode(a)));
    }
    let Some(grants) = listing::<Grant>(client, &path, "grants", json).await? else {
        return Ok(EXIT_GO);
    };
    if grants.is_empty() {
        outln!("No grants{}.", if all { "" } else { " in force" });
        return Ok(EXIT_GO);
    }
    let now = crate::time::now_ms();
    for g in &grants {
        // Within 80 columns: what it covers, then who granted it and for how long.
        outln!(
            "{:<8}  {:<16} {:<20} {}",
            g.short_id,
            crate::words::cut(&g.agent, 16),
            crate::words::cut(&g.tool, 20),
            g.scope.words()
        );
        outln!(
            "          by {} {}, {}",
            g.by.label(),
            crate::time::clock(g.created_at),
            g.until_words(now)
        );
        if let Some(r) = &g.reason {
            outln!("          {r}");
        }
    }
    Ok(EXIT_GO)
}

/// `gatebot grants revoke ID`.
pub(super) async fn revoke(client: &Client, id: &str, json: bool) -> Result<u8, String> {
    let res = expect_ok(
        client
            .post(&format!("/v1/grants/{}/revoke", encode(id)), &json!({}))
            .await,
    )?;
    if json {
        outln!("{}", pretty(&res.body));
        return Ok(EXIT_GO);
    }
    let g: Grant = serde_json::from_value(res.body).map_err(|e| e.to_string())?;
    outln!(
        "revoked grant {}: {} asks again before running {} ({})",
        g.short_id,
        g.agent,
        g.tool,
        g.scope.words()
    );
    Ok(EXIT_GO)
}
