//! The Telegram channel: prompts with buttons in the configured chats, decisions by
//! button or text command, and every copy edited once a request is settled.
//!
//! Lifecycle of [`run`]:
//! 1. `getMe` until it succeeds (a bad token or unreachable API is logged as an error
//!    and retried with backoff up to a minute apart; the daemon keeps serving meanwhile);
//! 2. `setMyCommands`, so clients offer /approve, /deny, /pending, /help;
//! 3. two loops until `stop` fires: [`delivery::run`] with [`sender::TelegramSender`]
//!    (prompts and final edits, durable in SQLite) and [`updates::poll`] (long polling
//!    with `getUpdates`; a 409 means another process polls with this token).
//!
//! Sends go through teloxide's `Throttle` (1 message/s and 20/min per chat, 10/min per
//! supergroup or channel, 30/s overall; it waits out 429s itself); delivery also paces
//! edits per chat, and turns a burst into one digest message. Tokens never reach the log: every error
//! text passes through [`scrub`], since teloxide's errors may carry the request URL,
//! which contains `/bot<TOKEN>/`.

pub mod config;
pub mod render;
pub mod sender;
pub mod updates;

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use regex::Regex;
use teloxide::adaptors::throttle::{Limits, Throttle};
use teloxide::prelude::*;
use teloxide::types::{BotCommand, Me};
use teloxide::{ApiError, RequestError};
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use crate::channel::delivery::{self, backoff};
use crate::engine::Engine;
use crate::telegram::config::TelegramConfig;

/// The bot every part of the channel uses: sends are rate limited.
pub type TgBot = Throttle<Bot>;

/// Removes the bot token from `text` (and anything shaped like `bot<id>:<secret>`).
#[must_use]
pub fn scrub(text: &str, token: &str) -> String {
    static SHAPE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\d{3,}:[A-Za-z0-9_-]{20,}").expect("valid regex"));
    let text = if token.is_empty() {
        text.to_string()
    } else {
        text.replace(token, "[token]")
    };
    SHAPE.replace_all(&text, "[token]").into_owned()
}

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
            scrub(&e.to_string(), token)
        ),
        _ => scrub(&e.to_string(), token),
    }
}

/// Calls `getMe` once (for `gatebot check-config --telegram`).
pub async fn check(config: &TelegramConfig) -> anyhow::Result<Me> {
    let bot = bot(config)?;
    bot.get_me()
        .await
        .map_err(|e| anyhow::anyhow!(explain_get_me(&e, config.token.expose())))
}

/// Runs the channel until `stop` fires. Never returns an error: problems are logged.
pub async fn run(engine: Arc<Engine>, config: TelegramConfig, stop: CancellationToken) {
    let token = config.token.expose().to_string();
    let plain = match bot(&config) {
        Ok(b) => b,
        Err(e) => {
            error!("telegram: off: {e:#}");
            return;
        }
    };
    let me = {
        let mut attempt = 0;
        loop {
            let res = tokio::select! {
                _ = stop.cancelled() => return,
                r = plain.get_me() => r,
            };
            match res {
                Ok(me) => break me,
                Err(e) => {
                    let wait = backoff(attempt);
                    attempt += 1;
                    error!(retry_in = ?wait, attempt, "telegram: cannot start: {}", explain_get_me(&e, &token));
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tokio::time::sleep(wait) => {}
                    }
                }
            }
        }
    };
    let username = me.user.username.clone().unwrap_or_default();
    info!(bot = %username, chats = ?config.chats, "telegram: connected");

    let bot: TgBot = Throttle::new_spawn(plain, Limits::default());
    tokio::spawn(set_commands(bot.clone(), token.clone(), stop.clone()));

    let sender = Arc::new(sender::TelegramSender {
        bot: bot.clone(),
        chats: config.chats.clone(),
        token: token.clone(),
        digest_after: config.digest_after,
    });
    let handler = Arc::new(updates::Handler::new(
        engine.clone(),
        bot,
        &config,
        username,
    ));
    tokio::join!(
        delivery::run(engine, sender, stop.clone()),
        updates::poll(handler, stop.clone()),
    );
    info!("telegram: stopped");
}

/// Sets the bot's command list (so clients offer /approve, /deny, /pending, /help),
/// retrying with backoff until Telegram takes it.
async fn set_commands(bot: TgBot, token: String, stop: CancellationToken) {
    let commands = [
        ("approve", "<id> — allow a request once"),
        (
            "approve_always",
            "<id> — allow it, and this tool for this agent from now on",
        ),
        ("deny", "<id> [reason] — refuse a request"),
        ("pending", "list open requests"),
        ("help", "how to answer gatebot"),
    ]
    .map(|(c, d)| BotCommand::new(c, d));
    let mut attempt = 0;
    loop {
        match bot.set_my_commands(commands.clone()).await {
            Ok(_) => return,
            Err(e) => {
                let wait = backoff(attempt);
                attempt += 1;
                warn!(retry_in = ?wait, "telegram: cannot set the command list: {}", scrub(&e.to_string(), &token));
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(wait) => {}
                }
            }
        }
    }
}

/// How long a `getUpdates` long poll waits for news (below reqwest's 17 s timeout).
pub const POLL_TIMEOUT: Duration = Duration::from_secs(10);
/// The pause after a 409 Conflict before polling again.
pub const CONFLICT_PAUSE: Duration = Duration::from_secs(5);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_removes_the_token_from_urls_and_text() {
        let token = "123456789:AAH-secret_Token-value-xyz987654";
        let e =
            format!("error sending request for url (https://api.telegram.org/bot{token}/GetMe)");
        let s = scrub(&e, token);
        assert!(!s.contains("secret_Token"), "{s}");
        assert!(s.contains("/bot[token]/GetMe"), "{s}");
        // Another token-shaped string (e.g. after a config reload) is caught by its shape.
        let s = scrub(
            "…/bot987654321:ZZZZZZZZZZZZZZZZZZZZZZZZZZ/SendMessage",
            token,
        );
        assert_eq!(s, "…/bot[token]/SendMessage");
        assert_eq!(
            scrub("chat 12345 said: 10:30", token),
            "chat 12345 said: 10:30"
        );
    }
}
