//! The Telegram platform adapter: cards with inline keyboards in the configured chats,
//! presses and text commands from approvers, every copy edited once its subject
//! changes.
//!
//! Lifecycle of [`run`]:
//! 1. `getMe` until it succeeds (a bad token or unreachable API is logged as an error
//!    and retried with backoff up to a minute apart; the daemon keeps serving meanwhile);
//! 2. `setMyCommands` with every conversation kind's commands from the registry
//!    ([`crate::chat::conversation::commands`]), so clients offer them (retried in the
//!    background until Telegram takes it);
//! 3. until `stop` fires: delivery ([`crate::chat::delivery`] with [`platform::Telegram`])
//!    and long polling with `getUpdates` ([`updates::poll`]; a 409 means another
//!    process polls with this token), whose updates go through
//!    [`crate::chat::inbound`].
//!
//! Calls go through [`api::BotApi`]: teloxide's types and payloads, gatebot's own HTTP
//! call, so a 5xx is retried by gatebot's backoff at once (not after teloxide's fixed
//! 10 s) and every 429 is counted. Sends keep within Telegram's limits (1 message/s
//! and 20/min per chat, 10/min per supergroup or channel, 30/s overall); delivery also
//! paces edits per chat, and turns a burst into one digest message. Tokens never reach
//! the log: every error text passes through [`crate::secret::scrub`], since errors
//! may carry the request URL, which contains `/bot<TOKEN>/`.

pub mod api;
pub mod limits;
pub mod platform;
pub mod render;
pub mod updates;

use std::sync::Arc;
use std::time::Duration;

use teloxide::prelude::*;
use teloxide::types::{BotCommand, Me};
use teloxide::{ApiError, RequestError};
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

pub use crate::config::telegram::TelegramConfig;

use crate::approval::PlatformId;
use crate::chat::conversation::help;
use crate::engine::Engine;
use crate::retry::{backoff, retry};
use crate::secret::scrub;
use crate::settings::PlatformSettings;

/// The platform's key.
pub const PLATFORM: PlatformId = PlatformId::new(<TelegramConfig as PlatformSettings>::KEY);

use api::BotApi;

/// Builds the bot for `config`; fails only on a malformed `api_url`.
pub fn bot(config: &TelegramConfig) -> anyhow::Result<Bot> {
    let url = url::Url::parse(&config.api_url)
        .map_err(|e| anyhow::anyhow!("telegram.api_url `{}` is not a URL: {e}", config.api_url))?;
    Ok(Bot::new(config.token.expose()).set_api_url(url))
}

/// A one-line explanation of a failed `getMe`.
#[must_use]
pub fn explain_get_me(e: &RequestError, token: &str) -> String {
    match e {
        RequestError::Api(ApiError::InvalidToken) => {
            "Telegram refused the bot token (Unauthorized): check [telegram] token".to_string()
        }
        RequestError::Network(_) => format!(
            "cannot reach the Telegram Bot API: {}",
            scrub(&e.to_string(), &[token])
        ),
        _ => scrub(&e.to_string(), &[token]),
    }
}

/// Calls `getMe` once (for `gatebot check-config --telegram`).
pub async fn check(config: &TelegramConfig) -> anyhow::Result<Me> {
    let api = BotApi::new(bot(config)?);
    api.get_me()
        .await
        .map_err(|e| anyhow::anyhow!(explain_get_me(&e, config.token.expose())))
}

/// Runs the adapter until `stop` fires. Never returns an error: problems are logged.
pub async fn run(engine: Arc<Engine>, config: TelegramConfig, stop: CancellationToken) {
    let token = config.token.expose().to_string();
    let api = match bot(&config) {
        Ok(b) => BotApi::new(b).counting(engine.metrics.clone()),
        Err(e) => {
            error!("telegram: off: {e:#}");
            return;
        }
    };
    let me = retry(
        &stop,
        || api.get_me().send(),
        |e, attempt| {
            let wait = backoff(attempt);
            error!(retry_in = ?wait, attempt = attempt + 1, "telegram: cannot start: {}", explain_get_me(e, &token));
            Some(wait)
        },
    )
    .await;
    let Some(Ok(me)) = me else { return };
    let username = me.user.username.clone().unwrap_or_default();
    info!(bot = %username, chats = ?config.chat.destinations, "telegram: connected");

    let commands = tokio::spawn(set_commands(api.clone(), token.clone(), stop.clone()));
    let telegram = Arc::new(platform::Telegram {
        bot: api,
        token,
        id: me.user.id,
    });
    // Telegram gives updates to one consumer per token: the node that leads polls.
    let inbound = {
        let telegram = telegram.clone();
        let stop = stop.clone();
        move |cx: crate::chat::Context| {
            let engine = cx.engine.clone();
            engine.while_leading(stop, false, move |term| {
                updates::poll(telegram.clone(), cx.clone(), term)
            })
        }
    };
    crate::chat::run(engine, telegram, Some(username), stop, inbound).await;
    let _ = commands.await;
    info!("telegram: stopped");
}

/// Sets the bot's command list (so clients offer /approve, /deny, /pending, /help),
/// retrying with backoff until Telegram takes it.
async fn set_commands(bot: BotApi, token: String, stop: CancellationToken) {
    let commands: Vec<BotCommand> = help::commands()
        .into_iter()
        .map(|(c, d)| BotCommand::new(c, d))
        .collect();
    retry(
        &stop,
        || bot.set_my_commands(commands.clone()).send(),
        |e, attempt| {
            let wait = backoff(attempt);
            warn!(retry_in = ?wait, "telegram: cannot set the command list: {}", scrub(&e.to_string(), &[&token]));
            Some(wait)
        },
    )
    .await;
}

/// How long a `getUpdates` long poll waits for news (below reqwest's 17 s timeout).
pub const POLL_TIMEOUT: Duration = Duration::from_secs(10);
/// The pause after a 409 Conflict before polling again.
pub const CONFLICT_PAUSE: Duration = Duration::from_secs(5);
