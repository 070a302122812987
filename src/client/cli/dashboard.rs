//! `gatebot dashboard login|sessions|revoke`: signing in to the web dashboard from the
//! machine gatebot runs on, and ending sessions.

use clap::Subcommand;
use serde_json::{json, Value};

use super::out::outln;
use super::{expect_ok, listing, pretty, EXIT_GO};
use crate::client::Client;

#[derive(Debug, Subcommand)]
pub enum DashboardAction {
    /// Print a sign-in link for you: open it and press Sign in. It signs in once and
    /// expires after [dashboard] login_link_ttl (10 minutes unless set).
    Login {
        /// Print the data as JSON (what the API answers) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// List the browsers signed in to the dashboard.
    Sessions {
        /// Print the data as JSON (what the API answers) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Sign browsers out: one session by its id, every session of a person, or all.
    Revoke {
        /// The session's id, as `gatebot dashboard sessions` lists it.
        #[arg(required_unless_present_any = ["person", "all"], conflicts_with_all = ["person", "all"])]
        id: Option<String>,
        /// Every session of this person.
        #[arg(long, conflicts_with = "all")]
        person: Option<String>,
        /// Every session of everyone.
        #[arg(long)]
        all: bool,
    },
}

/// `gatebot dashboard …`, as the owner.
pub(super) async fn run(client: &Client, action: DashboardAction) -> Result<u8, String> {
    match action {
        DashboardAction::Login { json } => login(client, json).await,
        DashboardAction::Sessions { json } => sessions(client, json).await,
        DashboardAction::Revoke { id, person, all } => {
            let body = match (id, person) {
                (Some(id), _) => json!({"session": id}),
                (None, Some(p)) => json!({"person": p}),
                (None, None) => json!({"all": all}),
            };
            let res = expect_ok(client.post("/v1/dashboard/sessions/revoke", &body).await)?;
            let ended: Vec<String> =
                serde_json::from_value(res.body["ended"].clone()).unwrap_or_default();
            match ended.len() {
                0 => outln!("No session was signed in; nothing changed."),
                1 => outln!("Signed out session {}.", ended[0]),
                n => outln!("Signed out {n} sessions: {}.", ended.join(", ")),
            }
            Ok(EXIT_GO)
        }
    }
}

async fn login(client: &Client, json: bool) -> Result<u8, String> {
    let res = expect_ok(client.post("/v1/dashboard/links", &json!({})).await)?;
    if json {
        outln!("{}", pretty(&res.body));
        return Ok(EXIT_GO);
    }
    let url = res.body["url"].as_str().unwrap_or_default();
    let person = res.body["person"].as_str().unwrap_or_default();
    let expires = res.body["expires_at"]
        .as_str()
        .and_then(crate::time::parse_ms)
        .map(|ms| crate::words::deadline(ms, crate::time::now_ms()))
        .unwrap_or_default();
    outln!("Open this link and press Sign in (it signs {person} in once; it expires {expires}):");
    outln!("{url}");
    Ok(EXIT_GO)
}

async fn sessions(client: &Client, json: bool) -> Result<u8, String> {
    let Some(list) = listing::<Value>(client, "/v1/dashboard/sessions", "sessions", json).await?
    else {
        return Ok(EXIT_GO);
    };
    if list.is_empty() {
        outln!("No browser is signed in to the dashboard.");
        return Ok(EXIT_GO);
    }
    let now = crate::time::now_ms();
    let when = |v: &Value| {
        v.as_str()
            .and_then(crate::time::parse_ms)
            .map(|ms| crate::words::relative(ms, now))
            .unwrap_or_default()
    };
    outln!("ID        PERSON           SIGNED IN        LAST USED        BROWSER");
    for s in &list {
        outln!(
            "{:<8}  {:<16} {:<16} {:<16} {}",
            s["id"].as_str().unwrap_or_default(),
            crate::words::cut(s["person"].as_str().unwrap_or_default(), 16),
            when(&s["created_at"]),
            when(&s["last_seen_at"]),
            crate::words::cut(s["user_agent"].as_str().unwrap_or("unknown"), 24),
        );
    }
    outln!("Sign one out: gatebot dashboard revoke ID");
    Ok(EXIT_GO)
}
