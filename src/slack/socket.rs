//! Socket Mode: gatebot holds a WebSocket to Slack, so no public URL is needed.
//!
//! 1. `apps.connections.open` (app-level token) returns a one-time `wss://` URL.
//! 2. Slack sends `hello`, then envelopes `{envelope_id, type, payload,
//!    accepts_response_payload}` of type `interactive`, `slash_commands` or `events_api`.
//! 3. Each envelope is acknowledged at once with `{"envelope_id": …}` (Slack wants the
//!    ack within 3 s and redelivers otherwise); its work runs on a task of its own. An
//!    envelope id seen before is acknowledged again but not handled twice.
//! 4. On `disconnect` (Slack rotates connections), a closed or silent socket, or any
//!    error, a new URL is requested and the loop starts over, with backoff on failures.
//!
//! The socket is driven here with tokio-tungstenite rather than slack-morphism 2.31's
//! `SlackClientSocketModeListener`, whose `shutdown()` leaves tasks running (a client
//! waiting to reconnect connects again afterwards) and whose connection errors are
//! logged with the server's response body and the ticketed URL, beyond gatebot's
//! scrubbing. docs/slack.md ("Modes") has the details, with file and line.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::{Received, Slack};
use crate::retry::backoff;

/// Ping the server this often; Slack pings too, so silence means a dead connection.
const PING_EVERY: Duration = Duration::from_secs(30);
/// Reconnect when nothing at all arrived for this long.
const SILENCE_LIMIT: Duration = Duration::from_secs(90);
/// Limit on opening the connection (URL request plus WebSocket handshake).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How a connection ended.
enum Ended {
    /// Slack asked us to reconnect, or we are stopping.
    Cleanly,
    /// It failed; `true` if it had got as far as `hello` (so backoff starts over).
    Failed(String, bool),
}

/// Keeps a Socket Mode connection up until `stop` fires.
pub async fn run(slack: Arc<Slack>, stop: CancellationToken) {
    let mut failures = 0u32;
    while !stop.is_cancelled() {
        let wait = match connect_once(&slack, &stop).await {
            Ended::Cleanly => {
                failures = 0;
                Duration::from_millis(100)
            }
            Ended::Failed(e, greeted) => {
                if greeted {
                    failures = 0;
                }
                let wait = backoff(failures);
                failures += 1;
                warn!(error = %slack.api.scrub(&e), retry_in = ?wait, "slack: Socket Mode connection lost; reconnecting");
                wait
            }
        };
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = tokio::time::sleep(wait) => {}
        }
    }
    debug!("slack: Socket Mode stopped");
}

/// Opens a Socket Mode connection: asks Slack for its URL, then connects.
async fn open(
    slack: &Slack,
) -> Result<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    String,
> {
    let res = slack
        .api
        .call_app("apps.connections.open", &json!({}))
        .await
        .map_err(|e| format!("apps.connections.open: {e}"))?;
    let url = res["url"]
        .as_str()
        .ok_or("apps.connections.open answered without a url")?
        .to_string();
    // The URL holds a connection ticket: keep it out of error messages.
    tokio_tungstenite::connect_async(url.as_str())
        .await
        .map(|(ws, _)| ws)
        .map_err(|e| format!("cannot open the Socket Mode WebSocket: {e}"))
}

/// What an acknowledged envelope carries, if gatebot handles its type.
fn received(frame: &Value) -> Option<Received> {
    match frame["type"].as_str() {
        Some("interactive") => Some(Received::Interaction(frame["payload"].clone())),
        Some("slash_commands") => Some(Received::SlashCommand(frame["payload"].clone())),
        Some("events_api") => Some(Received::Event(frame["payload"].clone())),
        other => {
            debug!(kind = ?other, "slack: envelope type ignored");
            None
        }
    }
}

async fn connect_once(slack: &Arc<Slack>, stop: &CancellationToken) -> Ended {
    let open = open(slack);
    let mut ws = tokio::select! {
        _ = stop.cancelled() => return Ended::Cleanly,
        r = tokio::time::timeout(CONNECT_TIMEOUT, open) => match r {
            Ok(Ok(ws)) => ws,
            Ok(Err(e)) => return Ended::Failed(e, false),
            Err(_) => return Ended::Failed("connecting timed out".into(), false),
        },
    };
    let mut greeted = false;
    let mut last_seen = Instant::now();
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.tick().await;
    loop {
        tokio::select! {
            _ = stop.cancelled() => {
                let _ = ws.send(Message::Close(None)).await;
                return Ended::Cleanly;
            }
            _ = ping.tick() => {
                if last_seen.elapsed() > SILENCE_LIMIT {
                    return Ended::Failed("no traffic from Slack".into(), greeted);
                }
                if let Err(e) = ws.send(Message::Ping(Vec::new().into())).await {
                    return Ended::Failed(e.to_string(), greeted);
                }
            }
            msg = ws.next() => {
                last_seen = Instant::now();
                let text = match msg {
                    None => return Ended::Failed("the server closed the connection".into(), greeted),
                    Some(Err(e)) => return Ended::Failed(e.to_string(), greeted),
                    Some(Ok(Message::Text(t))) => t,
                    Some(Ok(Message::Close(_))) => return Ended::Failed("the server closed the connection".into(), greeted),
                    Some(Ok(_)) => continue, // pings are answered by tungstenite
                };
                let frame: Value = match serde_json::from_str(text.as_str()) {
                    Ok(v) => v,
                    Err(e) => {
                        warn!(error = %e, "slack: unreadable Socket Mode frame");
                        continue;
                    }
                };
                match frame["type"].as_str() {
                    Some("hello") => {
                        greeted = true;
                        info!("slack: Socket Mode connected");
                        continue;
                    }
                    Some("disconnect") => {
                        info!(reason = frame["reason"].as_str().unwrap_or("?"), "slack: asked to reconnect");
                        let _ = ws.send(Message::Close(None)).await;
                        return Ended::Cleanly;
                    }
                    _ => {}
                }
                let Some(envelope) = frame["envelope_id"].as_str() else {
                    debug!(kind = ?frame["type"], "slack: frame without an envelope ignored");
                    continue;
                };
                let ack = json!({"envelope_id": envelope}).to_string();
                if let Err(e) = ws.send(Message::text(ack)).await {
                    return Ended::Failed(format!("cannot acknowledge: {e}"), greeted);
                }
                if !slack.first_time("envelope", envelope).await {
                    debug!(envelope, "slack: duplicate envelope acknowledged, not handled");
                    continue;
                }
                if let Some(received) = received(&frame) {
                    slack.spawn(received);
                }
            }
        }
    }
}
