//! The system page: whether the daemon can keep what it is sent (its storage, as
//! `/v1/health` reports it), the chat platforms it runs and how their calls went since
//! it started (the `gatebot_chat_*` counters of `/metrics`), the nodes using the
//! database and which one leads (`gatebot nodes`), its version, how long it has run,
//! the config file it read, and the dashboard's signed-in browsers.
//!
//! gatebot keeps no list of delivery errors, only counts (each error is in its log, with
//! the platform, the chat and when it will retry); the page shows the counts.

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use maud::{html, Markup};

use super::page::{shell, Menu};
use super::signin::Signed;
use super::DashState;
use crate::approval::PlatformId;
use crate::config::Config;
use crate::engine::cluster::NodesView;
use crate::metrics::ChatCountsNow;
use crate::names::visible;
use crate::store::StorageFault;
use crate::words::{relative, span};

static STARTED: OnceLock<Instant> = OnceLock::new();

/// Notes when the dashboard was set up (at the daemon's start): the page's uptime.
pub(super) fn mark_start() {
    STARTED.get_or_init(Instant::now);
}

/// `GET /system`: the page.
pub(super) async fn page(State(state): State<DashState>, Signed(session): Signed) -> Response {
    let engine = &state.engine;
    let config = engine.config();
    let fault = engine.storage_fault().await;
    let held_back = if fault.is_none() {
        engine.agents_held_back().await
    } else {
        None
    };
    let pending = engine.count_pending().await.ok();
    // How many browsers are signed in, and whose.
    let signed_in = engine.sessions().await.ok().map(|s| {
        let mut people: Vec<&str> = s.iter().map(|s| s.person.as_str()).collect();
        people.sort_unstable();
        people.dedup();
        (s.len(), people.join(", "))
    });
    let platforms = platforms(&config, engine.metrics.chat_counts());
    let nodes = engine.nodes().await.ok();
    let body = html! {
        h1 { "System" }
        (storage(fault.as_ref(), held_back.as_deref(), pending))
        (chats(&platforms))
        (nodes_section(nodes.as_ref()))
        (about(&config, signed_in.as_ref()))
    };
    shell("System", Some(&session), Menu::System, body).into_response()
}

/// Whether the database keeps what it is sent, as `/v1/health` says it.
fn storage(
    fault: Option<&StorageFault>,
    held_back: Option<&str>,
    pending: Option<usize>,
) -> Markup {
    html! {
        section.health.ok[fault.is_none()].broken[fault.is_some()] {
            h2 { "Storage" }
            @match fault {
                None => p { "The database keeps what it is sent."
                    @if let Some(n) = pending {
                        " " (match n { 0 => "Nothing is waiting for an owner.".to_string(),
                                       1 => "1 request waits for an owner.".to_string(),
                                       n => format!("{n} requests wait for an owner.") })
                    } },
                Some(f) => p { strong { "The database cannot keep what it is sent: " } (f.message) },
            }
            @if let Some(why) = held_back {
                p { strong { "Agents' requests are refused: " } (why) " Owners can still decide." }
            }
        }
    }
}

/// The chat platforms with their counters since start.
fn chats(platforms: &[(String, String, ChatCountsNow)]) -> Markup {
    html! {
        section {
            h2 { "Chat platforms" }
            @if platforms.is_empty() {
                p { "No chat platform is on: owners decide here and with the "
                    code { "gatebot" } " command." }
            } @else {
                div.scroll {
                    table.rows.platforms {
                        thead { tr {
                            th { "Platform" } th { "Set up" } th { "Posted" } th { "Received" }
                            th { "Failed calls" } th { "Rate-limited (429)" }
                        } }
                        tbody {
                            @for (key, setup, c) in platforms {
                                tr {
                                    td data-label="Platform" { (PlatformId::owned(key).label()) }
                                    td data-label="Set up" { (visible(setup)) }
                                    td data-label="Posted" { (count(c.cards, "card")) ", " (count(c.digests, "digest")) }
                                    td data-label="Received" { (c.handled) " handled, " (c.ignored) " ignored" }
                                    td data-label="Failed calls" { (c.send_errors) }
                                    td data-label="Rate-limited (429)" { (c.rate_limited) }
                                }
                            }
                        }
                    }
                }
                p.count { "Counted since gatebot started. Failed calls are retried; gatebot keeps "
                    "no list of them, its log has each one (the platform, the chat, the error "
                    "and when it retries)." }
            }
        }
    }
}

/// The nodes using the database (several share a PostgreSQL one), which one leads, and
/// what owners should look at; as `gatebot nodes` shows them.
fn nodes_section(view: Option<&NodesView>) -> Markup {
    html! {
        section {
            h2 { "Nodes" }
            @match view {
                None => p { "Unknown: the database did not answer." },
                Some(view) => {
                    div.scroll {
                        table.rows.nodes {
                            thead { tr {
                                th { "Node" } th { "Role" } th { "Version" }
                                th { "Configuration" } th { "Last heard" }
                            } }
                            tbody {
                                @for n in &view.nodes {
                                    tr {
                                        td data-label="Node" { (visible(&n.name)) @if n.this { " (this one)" } }
                                        td data-label="Role" { (match (n.running, n.leader) {
                                            (false, _) => "silent",
                                            (true, true) => "leads",
                                            (true, false) => "stands by",
                                        }) }
                                        td data-label="Version" { (visible(&n.version)) }
                                        td data-label="Configuration" { code { (visible(&n.config)) } }
                                        td data-label="Last heard" { (relative(-n.silent_for_ms, 0)) }
                                    }
                                }
                            }
                        }
                    }
                    @for w in &view.warnings {
                        p.error { strong { "Look at this: " } (visible(w)) }
                    }
                    p.count { "The leading node sends the chats' messages and runs the timers; "
                        "every node takes agents' calls and owners' answers, and another "
                        "takes the lead when it stops." }
                }
            }
        }
    }
}

/// gatebot itself: version, uptime, files, the dashboard's address and sessions.
fn about(config: &Config, signed_in: Option<&(usize, String)>) -> Markup {
    let up = STARTED.get().map(Instant::elapsed);
    html! {
        section {
            h2 { "gatebot" }
            dl.fields {
                div { dt { "Version" } dd { (env!("CARGO_PKG_VERSION")) } }
                div { dt { "Running for" } dd {
                    @match up { Some(d) => (span(Duration::from_secs(d.as_secs()))), None => "unknown" }
                } }
                div { dt { "Config file" } dd { code { (visible(&config.source.display().to_string())) } } }
                div { dt { "Database" } dd { code { (visible(&config.store.shown())) } } }
                @if let Some(d) = &config.dashboard {
                    div { dt { "Dashboard address" } dd { code { (visible(&d.public_url)) } } }
                }
                div { dt { "Signed in to the dashboard" } dd {
                    @match signed_in {
                        Some((n, people)) => {
                            (match n { 1 => "1 browser".to_string(), n => format!("{n} browsers") })
                            @if !people.is_empty() { " (" (visible(people)) ")" }
                            ". " code { "gatebot dashboard sessions" } " lists them; "
                            code { "gatebot dashboard revoke" } " signs them out."
                        }
                        None => "unknown (the database did not answer)",
                    }
                } }
            }
        }
    }
}

/// The chat platforms: those the config turns on, with what they are set up with,
/// then any other that runs (one added in code, as tests do); each with its counters.
fn platforms(
    config: &Config,
    mut counts: Vec<(String, ChatCountsNow)>,
) -> Vec<(String, String, ChatCountsNow)> {
    let mut out: Vec<(String, String, ChatCountsNow)> = config
        .platforms
        .iter()
        .map(|p| {
            let key = p.key().to_string();
            let c = counts
                .iter()
                .position(|(k, _)| *k == key)
                .map(|i| counts.remove(i).1)
                .unwrap_or_default();
            (key, p.summary_line(), c)
        })
        .collect();
    out.extend(
        counts
            .into_iter()
            .map(|(k, c)| (k, "running (not set up in the config file)".to_string(), c)),
    );
    out
}

/// "1 card", "3 cards".
fn count(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}
