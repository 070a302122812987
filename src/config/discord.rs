//! The `[discord]` table of `bot.toml`: as written, and resolved into the
//! [`DiscordConfig`] the adapter ([`crate::discord`]) runs with (see [`crate::config`]
//! for the two steps).

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde::Deserialize;

use crate::secret::Secret;
use crate::settings::{
    default_digest_after, keep, ChatSettings, ConfigError, PlatformSettings, PlatformTable,
    Resolve, Starter,
};

/// What `gatebot init --with discord` writes.
pub const STARTER: Starter = Starter {
    key: "discord",
    question: "Post prompts in Discord channels, answered with buttons?",
    secrets: &[("discord-token", "the Discord bot's token")],
    table: "# Discord: a bot on the Gateway (no public URL needed) posting prompts with buttons\n\
            # in channels, answering slash commands and replies (docs/discord.md).\n\
            [discord]\n\
            # The file holding the bot's token (Developer Portal > the application > Bot).\n\
            bot_token_file = {discord-token}\n\
            # Channel ids the prompts go to, and the user ids allowed to decide (Developer\n\
            # Mode on, then right-click > Copy ID).\n\
            channels = []\n\
            approvers = []\n\
            # Members with any of these role ids may decide too.\n\
            # approver_roles = []\n\n",
    fill_in: "Invite the bot and fill in [discord] channels and approvers (docs/discord.md)",
};

#[derive(Debug, Clone)]
pub struct DiscordConfig {
    /// The bot's token (Bot tab of the application), sent as `Authorization: Bot …`.
    pub bot_token: Secret,
    /// The REST API's base URL, without trailing slashes (`https://discord.com`).
    pub api_url: String,
    /// The Gateway's URL (`wss://gateway.discord.gg`); resumes go where READY says.
    pub gateway_url: String,
    /// Members with any of these roles (role ids) decide too, besides `approvers`.
    pub approver_roles: BTreeSet<String>,
    /// Channels cards go to (channel ids), approvers (user ids), the digest threshold.
    pub chat: ChatSettings,
}

/// `[discord]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileDiscord {
    bot_token: Option<String>,
    bot_token_env: Option<String>,
    bot_token_file: Option<PathBuf>,
    #[serde(default = "default_api")]
    api_url: String,
    #[serde(default = "default_gateway")]
    gateway_url: String,
    #[serde(default)]
    channels: Vec<String>,
    #[serde(default)]
    approvers: BTreeSet<String>,
    #[serde(default)]
    approver_roles: BTreeSet<String>,
    #[serde(default = "default_digest_after")]
    digest_after: usize,
}

fn default_api() -> String {
    "https://discord.com".into()
}

fn default_gateway() -> String {
    "wss://gateway.discord.gg".into()
}

/// Whether `id` is a Discord id (a snowflake: a 64-bit number, written in digits).
#[must_use]
pub fn is_snowflake(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 20
        && id.bytes().all(|b| b.is_ascii_digit())
        && id.parse::<u64>().is_ok_and(|n| n > 0)
}

impl PlatformSettings for DiscordConfig {
    const KEY: &'static str = "discord";

    fn chat(&self) -> &ChatSettings {
        &self.chat
    }

    /// The HTTP client and the Gateway connection are set up once.
    fn keep_started(&self, new: &mut Self, restart: &mut Vec<&'static str>) {
        let mut keep = |key, changed: bool| {
            if changed {
                restart.push(key);
            }
        };
        keep("discord.bot_token", new.bot_token != self.bot_token);
        keep("discord.api_url", new.api_url != self.api_url);
        keep("discord.gateway_url", new.gateway_url != self.gateway_url);
        new.bot_token = self.bot_token.clone();
        new.api_url = self.api_url.clone();
        new.gateway_url = self.gateway_url.clone();
    }

    fn summary(&self) -> String {
        format!(
            "{} channel(s), {} approver(s), {} approver role(s), API {}",
            self.chat.destinations.len(),
            self.chat.approvers.len(),
            self.approver_roles.len(),
            self.api_url
        )
    }
}

impl PlatformTable for FileDiscord {
    type Settings = DiscordConfig;

    /// The `[discord]` table; `None` when it is off or has errors (recorded).
    fn resolve(
        self,
        r: &Resolve,
        notes: &mut Vec<String>,
        errors: &mut Vec<ConfigError>,
    ) -> Option<DiscordConfig> {
        let api_url = keep(errors, r.url("discord", &self.api_url));
        let token = keep(
            errors,
            r.chat_secret(
                "discord",
                "bot_token",
                self.bot_token,
                self.bot_token_env,
                self.bot_token_file,
                notes,
            ),
        )?;
        let Some(bot_token) = token else {
            if !notes.iter().any(|n| n.starts_with("discord")) {
                notes.push("discord: off, because no bot token is set".into());
            }
            return None;
        };
        let before = errors.len();
        let gateway_url = self.gateway_url.trim_end_matches('/').to_string();
        if !(gateway_url.starts_with("wss://") || gateway_url.starts_with("ws://")) {
            errors.push(r.error(
                "discord",
                "gateway_url",
                format!(
                    "`{}` is not a WebSocket URL (wss://…); leave it out to use Discord's",
                    self.gateway_url
                ),
            ));
        }
        if self.approvers.is_empty() && self.approver_roles.is_empty() {
            errors.push(r.error(
                "discord",
                "approvers",
                "list the Discord user ids allowed to decide (or approver_roles); with none, nobody could approve",
            ));
        }
        if self.channels.is_empty() {
            errors.push(r.error(
                "discord",
                "channels",
                "list the channel ids where prompts go (right-click the channel, Copy Channel ID)",
            ));
        }
        for (key, list, what) in [
            (
                "approvers",
                self.approvers.iter().collect::<Vec<_>>(),
                "a user id",
            ),
            (
                "approver_roles",
                self.approver_roles.iter().collect(),
                "a role id",
            ),
            ("channels", self.channels.iter().collect(), "a channel id"),
        ] {
            if let Some(bad) = list.iter().find(|id| !is_snowflake(id)) {
                errors.push(r.error(
                    "discord",
                    key,
                    format!("`{bad}` is not {what} (digits only, like \"123456789012345678\"; Discord shows them with Developer Mode on)"),
                ));
            }
        }
        let digest_after = keep(errors, r.digest_after("discord", self.digest_after));
        if errors.len() > before {
            return None;
        }
        Some(DiscordConfig {
            bot_token,
            api_url: api_url?,
            gateway_url,
            approver_roles: self.approver_roles,
            chat: ChatSettings {
                destinations: self.channels,
                approvers: self.approvers,
                digest_after: digest_after?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{is_snowflake, DiscordConfig};
    use crate::config::parse_in_etc as parse;

    #[test]
    fn discord_needs_channels_and_approvers_by_id() {
        let base = "[discord]\nbot_token = \"t\"\n";
        let e = parse(&format!("{base}approvers = [\"111111111111111111\"]\n")).unwrap_err();
        assert_eq!(e.key, "discord.channels");
        let e = parse(&format!("{base}channels = [\"222222222222222222\"]\n")).unwrap_err();
        assert_eq!(e.key, "discord.approvers");
        let e = parse(&format!(
            "{base}channels = [\"222222222222222222\"]\napprovers = [\"@alice\"]\n"
        ))
        .unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("discord.approvers", Some(4)));
        assert!(e.message.contains("not a user id"), "{e}");
        let c = parse(&format!(
            "{base}channels = [\"222222222222222222\"]\napprover_roles = [\"333333333333333333\"]\n"
        ))
        .unwrap();
        let d = c.platform::<DiscordConfig>().unwrap();
        assert_eq!(d.api_url, "https://discord.com");
        assert_eq!(d.gateway_url, "wss://gateway.discord.gg");
        assert!(d.approver_roles.contains("333333333333333333"));
        let e = parse(&format!(
            "{base}channels = [\"2\"]\napprovers = [\"1\"]\ngateway_url = \"https://x\"\n"
        ))
        .unwrap_err();
        assert_eq!(e.key, "discord.gateway_url");
        let off = parse("[discord]\nbot_token_env = \"GATEBOT_TEST_NO_SUCH_VAR\"\n").unwrap();
        assert!(off.platform::<DiscordConfig>().is_none());
    }

    #[test]
    fn snowflakes_are_digits() {
        assert!(is_snowflake("123456789012345678"));
        for bad in ["", "0", "U123", "12 34", "123456789012345678901", "-1"] {
            assert!(!is_snowflake(bad), "{bad}");
        }
    }
}
