//! The `[telegram]` table of `bot.toml`: as written, and resolved into the
//! [`TelegramConfig`] the adapter ([`crate::telegram`]) runs with (see [`crate::config`]
//! for the two steps).

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde::Deserialize;

use crate::secret::Secret;
use crate::settings::{
    default_digest_after, keep, ChatSettings, ConfigError, PlatformSettings, PlatformTable, Resolve,
};

#[derive(Debug, Clone)]
pub struct TelegramConfig {
    pub token: Secret,
    /// Bot API base URL, without the trailing `/bot<token>`.
    pub api_url: String,
    /// Chats cards go to (chat ids: private chats or groups), approvers (user ids),
    /// the digest threshold.
    pub chat: ChatSettings,
}

/// `[telegram]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileTelegram {
    token: Option<String>,
    token_env: Option<String>,
    token_file: Option<PathBuf>,
    #[serde(default = "default_telegram_api")]
    api_url: String,
    #[serde(default)]
    chats: Vec<i64>,
    #[serde(default)]
    approvers: BTreeSet<u64>,
    #[serde(default = "default_digest_after")]
    digest_after: usize,
}

fn default_telegram_api() -> String {
    "https://api.telegram.org".into()
}

impl PlatformSettings for TelegramConfig {
    const KEY: &'static str = "telegram";

    fn chat(&self) -> &ChatSettings {
        &self.chat
    }

    /// The bot is built once, with the token and the API URL.
    fn keep_started(&self, new: &mut Self, restart: &mut Vec<&'static str>) {
        if new.token != self.token {
            restart.push("telegram.token");
            new.token = self.token.clone();
        }
        if new.api_url != self.api_url {
            restart.push("telegram.api_url");
            new.api_url = self.api_url.clone();
        }
    }

    fn summary(&self) -> String {
        format!(
            "{} chat(s), {} approver(s), API {}",
            self.chat.destinations.len(),
            self.chat.approvers.len(),
            self.api_url
        )
    }
}

impl PlatformTable for FileTelegram {
    type Settings = TelegramConfig;

    /// The `[telegram]` table; `None` when it is off or has errors (recorded).
    fn resolve(
        self,
        r: &Resolve,
        notes: &mut Vec<String>,
        errors: &mut Vec<ConfigError>,
    ) -> Option<TelegramConfig> {
        let api_url = keep(errors, r.url("telegram", &self.api_url));
        let token = keep(
            errors,
            r.chat_secret(
                "telegram",
                "token",
                self.token,
                self.token_env,
                self.token_file,
                notes,
            ),
        )?;
        let Some(token) = token else {
            if !notes.iter().any(|n| n.starts_with("telegram")) {
                notes.push("telegram: off, because no token is set".into());
            }
            return None;
        };
        let digest_after = keep(errors, r.digest_after("telegram", self.digest_after));
        if self.approvers.is_empty() {
            errors.push(r.error(
                "telegram",
                "approvers",
                "list the Telegram user ids allowed to decide; with none, nobody could approve",
            ));
            return None;
        }
        // With no chats, prompts go to each approver's private chat (chat id = user id).
        let chats = if self.chats.is_empty() {
            self.approvers.iter().map(|&u| u as i64).collect()
        } else {
            self.chats
        };
        let digest_after = digest_after?;
        Some(TelegramConfig {
            token,
            api_url: api_url?,
            chat: ChatSettings {
                destinations: chats.iter().map(i64::to_string).collect(),
                approvers: self.approvers.iter().map(u64::to_string).collect(),
                digest_after,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::TelegramConfig;
    use crate::config::parse_in_etc as parse;

    #[test]
    fn telegram_needs_approvers_and_defaults_chats_to_them() {
        let e = parse("[telegram]\ntoken = \"1:x\"\n").unwrap_err();
        assert_eq!(e.key, "telegram.approvers");
        let c = parse(
            "[telegram]\ntoken = \"1:x\"\napprovers = [42]\napi_url = \"http://127.0.0.1:9/\"\n",
        )
        .unwrap();
        let t = c.platform::<TelegramConfig>().unwrap();
        assert_eq!(t.chat.destinations, vec!["42"]);
        assert_eq!(t.api_url, "http://127.0.0.1:9");
    }
}
