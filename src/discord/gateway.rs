//! The Gateway connection: a twilight [`Shard`] that keeps itself connected.
//!
//! 1. The shard opens the WebSocket (`gateway_url`, or Discord's), answers HELLO with
//!    IDENTIFY (intents: guilds, guild messages, message content) or, after a lost
//!    connection, RESUME at READY's `resume_gateway_url`, so no dispatch in between is
//!    lost; it sends heartbeats and reconnects with growing pauses by itself.
//! 2. Each message is read here as raw JSON ([`super::Events::dispatch`]), so what
//!    gatebot reads is exactly the fields Discord documents, not a model's idea of them.
//! 3. A shard that ends for good (Discord closed with a code that forbids reconnecting:
//!    a bad token, intents not allowed) is logged in the owner's words and started
//!    again after a pause: a fixed token needs a restart, an allowed intent does not.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use tokio_util::sync::CancellationToken;
use tracing::{debug, error, info, warn};
use twilight_gateway::{CloseFrame, ConfigBuilder, Intents, Message, Shard, ShardId};

use super::Events;
use crate::config::discord::DiscordConfig;

/// Discord's own Gateway.
const DISCORD_GATEWAY: &str = "wss://gateway.discord.gg";
/// The pause before a shard that ended for good is started again.
const RESTART_PAUSE: Duration = Duration::from_secs(30);

/// What the bot listens to: servers and their channels (threads), messages in them
/// (replies to cards, commands typed as text), and their text (a privileged intent, on
/// in the Developer Portal). Interactions come without asking.
#[must_use]
pub fn intents() -> Intents {
    Intents::GUILDS | Intents::GUILD_MESSAGES | Intents::MESSAGE_CONTENT | Intents::DIRECT_MESSAGES
}

/// Runs the Gateway until `stop`.
pub async fn run(events: Arc<Events>, config: &DiscordConfig, stop: CancellationToken) {
    let mut ended = 0u32;
    loop {
        let mut builder = ConfigBuilder::new(config.bot_token.expose().to_string(), intents());
        if config.gateway_url != DISCORD_GATEWAY {
            builder = builder.proxy_url(config.gateway_url.clone());
        }
        let mut shard = Shard::with_config(ShardId::ONE, builder.build());
        info!("discord: connecting to the Gateway");
        loop {
            let next = tokio::select! {
                _ = stop.cancelled() => {
                    shard.close(CloseFrame::NORMAL);
                    return;
                }
                next = shard.next() => next,
            };
            match next {
                Some(Ok(Message::Text(text))) => {
                    ended = 0;
                    events.dispatch(&text);
                }
                Some(Ok(Message::Close(frame))) => {
                    let code = frame.as_ref().map(|f| f.code);
                    match code.and_then(fatal_reason) {
                        Some(why) => {
                            error!(code, "discord: the Gateway closed the connection: {why}")
                        }
                        None => info!(code, "discord: Gateway connection closed; resuming"),
                    }
                }
                Some(Err(e)) => {
                    let text = events.api.scrub(&e.to_string());
                    warn!(error = %text, "discord: Gateway connection trouble; reconnecting");
                }
                None => break,
            }
        }
        ended += 1;
        let pause = RESTART_PAUSE * ended.min(10);
        warn!(retry_in = ?pause, "discord: the Gateway connection ended; starting it again later");
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(pause) => debug!("discord: starting the Gateway again"),
        }
    }
}

/// What a close code that forbids reconnecting means, in the owner's words.
#[must_use]
pub fn fatal_reason(code: u16) -> Option<&'static str> {
    Some(match code {
        4004 => "Discord refused the bot token: copy it again from the Bot tab of the application (Reset Token) into the token file, then restart gatebot",
        4010 | 4011 => "the bot is in too many servers for one connection",
        4012 | 4013 => "gatebot asked for something this Gateway version does not know",
        4014 => "Discord refused the intents: turn on Message Content Intent on the Bot tab of the application in the Developer Portal",
        _ => return None,
    })
}
