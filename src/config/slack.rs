//! The `[slack]` table of `bot.toml`: as written, and resolved into the
//! [`SlackConfig`] the adapter ([`crate::slack`]) runs with (see [`crate::config`] for
//! the two steps).

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde::Deserialize;

use crate::secret::Secret;
use crate::settings::{
    default_digest_after, keep, ChatSettings, ConfigError, PlatformSettings, PlatformTable, Resolve,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SlackMode {
    /// Socket Mode: gatebot opens a WebSocket to Slack; no public URL needed.
    Socket,
    /// HTTP events: Slack posts to `events_listen`; requests are signature-checked.
    Http,
}

impl SlackMode {
    /// As `bot.toml` writes it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            SlackMode::Socket => "socket",
            SlackMode::Http => "http",
        }
    }
}

#[derive(Debug, Clone)]
pub struct SlackConfig {
    pub bot_token: Secret,
    /// Needed in Socket Mode.
    pub app_token: Option<Secret>,
    /// Needed in HTTP mode.
    pub signing_secret: Option<Secret>,
    /// Web API base URL, e.g. `https://slack.com/api` (no trailing slash).
    pub api_url: String,
    pub mode: SlackMode,
    /// Address the HTTP events listener binds (HTTP mode).
    pub events_listen: Option<String>,
    /// Channels cards go to (channel ids), approvers (user ids), the digest threshold.
    pub chat: ChatSettings,
    /// Channels whose top-level messages are tasks for the inbox (with `[inbox]` on).
    pub inbox_channels: Vec<String>,
}

/// `[slack]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileSlack {
    bot_token: Option<String>,
    bot_token_env: Option<String>,
    bot_token_file: Option<PathBuf>,
    app_token: Option<String>,
    app_token_env: Option<String>,
    app_token_file: Option<PathBuf>,
    signing_secret: Option<String>,
    signing_secret_env: Option<String>,
    signing_secret_file: Option<PathBuf>,
    #[serde(default = "default_slack_api")]
    api_url: String,
    #[serde(default = "default_slack_mode")]
    mode: SlackMode,
    events_listen: Option<String>,
    #[serde(default)]
    channels: Vec<String>,
    #[serde(default)]
    approvers: BTreeSet<String>,
    #[serde(default = "default_digest_after")]
    digest_after: usize,
    #[serde(default)]
    inbox_channels: Vec<String>,
}

fn default_slack_api() -> String {
    "https://slack.com/api".into()
}

fn default_slack_mode() -> SlackMode {
    SlackMode::Socket
}

/// The bot token, and the app token and signing secret when set.
type Secrets = (Secret, Option<Secret>, Option<Secret>);

impl PlatformSettings for SlackConfig {
    const KEY: &'static str = "slack";

    fn chat(&self) -> &ChatSettings {
        &self.chat
    }

    /// The client, the Socket Mode connection or the events listener are set up once.
    fn keep_started(&self, new: &mut Self, restart: &mut Vec<&'static str>) {
        let mut keep = |key, changed: bool| {
            if changed {
                restart.push(key);
            }
        };
        keep("slack.bot_token", new.bot_token != self.bot_token);
        keep("slack.app_token", new.app_token != self.app_token);
        keep(
            "slack.signing_secret",
            new.signing_secret != self.signing_secret,
        );
        keep("slack.mode", new.mode != self.mode);
        keep(
            "slack.events_listen",
            new.events_listen != self.events_listen,
        );
        keep("slack.api_url", new.api_url != self.api_url);
        new.bot_token = self.bot_token.clone();
        new.app_token = self.app_token.clone();
        new.signing_secret = self.signing_secret.clone();
        new.mode = self.mode;
        new.events_listen = self.events_listen.clone();
        new.api_url = self.api_url.clone();
    }

    fn summary(&self) -> String {
        format!(
            "mode = \"{}\", {} channel(s), {} approver(s), API {}",
            self.mode.as_str(),
            self.chat.destinations.len(),
            self.chat.approvers.len(),
            self.api_url
        )
    }
}

impl PlatformTable for FileSlack {
    type Settings = SlackConfig;

    /// The `[slack]` table; `None` when it is off or has errors (recorded).
    fn resolve(
        mut self,
        r: &Resolve,
        notes: &mut Vec<String>,
        errors: &mut Vec<ConfigError>,
    ) -> Option<SlackConfig> {
        let api_url = keep(errors, r.url("slack", &self.api_url));
        let (bot_token, app_token, signing_secret) = self.secrets(r, notes, errors)?;
        let digest_after = self.check(r, errors)?;
        Some(SlackConfig {
            bot_token,
            app_token,
            signing_secret,
            api_url: api_url?,
            mode: self.mode,
            events_listen: self.events_listen,
            chat: ChatSettings {
                destinations: self.channels,
                approvers: self.approvers,
                digest_after,
            },
            inbox_channels: self.inbox_channels,
        })
    }
}

impl FileSlack {
    /// The secrets, taken out of `self`; `None` when the channel is off (noted: no
    /// bot token, or not the secret its mode needs) or a secret has an error (recorded).
    fn secrets(
        &mut self,
        r: &Resolve,
        notes: &mut Vec<String>,
        errors: &mut Vec<ConfigError>,
    ) -> Option<Secrets> {
        let bot_token = keep(
            errors,
            r.chat_secret(
                "slack",
                "bot_token",
                self.bot_token.take(),
                self.bot_token_env.take(),
                self.bot_token_file.take(),
                notes,
            ),
        )?;
        let Some(bot_token) = bot_token else {
            if !notes.iter().any(|n| n.starts_with("slack")) {
                notes.push("slack: off, because no bot token is set".into());
            }
            return None;
        };
        let app_token = keep(
            errors,
            r.chat_secret(
                "slack",
                "app_token",
                self.app_token.take(),
                self.app_token_env.take(),
                self.app_token_file.take(),
                notes,
            ),
        )?;
        let signing_secret = keep(
            errors,
            r.chat_secret(
                "slack",
                "signing_secret",
                self.signing_secret.take(),
                self.signing_secret_env.take(),
                self.signing_secret_file.take(),
                notes,
            ),
        )?;
        match self.mode {
            SlackMode::Socket if app_token.is_none() => {
                notes.push("slack: off, because Socket Mode needs an app token (xapp-…)".into());
                return None;
            }
            SlackMode::Http if signing_secret.is_none() => {
                notes.push("slack: off, because HTTP mode needs a signing secret".into());
                return None;
            }
            _ => {}
        }
        Some((bot_token, app_token, signing_secret))
    }

    /// The keys of a channel that is on; `Some(digest_after)` when they are all valid,
    /// else `None` with every error recorded.
    fn check(&self, r: &Resolve, errors: &mut Vec<ConfigError>) -> Option<usize> {
        let before = errors.len();
        match &self.events_listen {
            None if self.mode == SlackMode::Http => errors.push(r.error(
                "slack",
                "events_listen",
                "HTTP mode needs an address to receive Slack's requests, like 127.0.0.1:3000",
            )),
            Some(l) if l.parse::<std::net::SocketAddr>().is_err() => errors.push(r.error(
                "slack",
                "events_listen",
                format!("`{l}` is not an address like 127.0.0.1:3000"),
            )),
            _ => {}
        }
        if self.approvers.is_empty() {
            errors.push(r.error(
                "slack",
                "approvers",
                "list the Slack user ids (U…) allowed to decide; with none, nobody could approve",
            ));
        }
        if self.channels.is_empty() {
            errors.push(r.error(
                "slack",
                "channels",
                "list the channel ids (C…) where prompts go",
            ));
        }
        if let Some(bad) = self
            .inbox_channels
            .iter()
            .find(|c| c.trim().is_empty() || c.chars().any(|ch| !ch.is_ascii_alphanumeric()))
        {
            errors.push(r.error(
                "slack",
                "inbox_channels",
                format!("`{bad}` is not a channel id like C0123456789"),
            ));
        }
        let digest_after = keep(errors, r.digest_after("slack", self.digest_after));
        if errors.len() > before {
            return None;
        }
        digest_after
    }
}

#[cfg(test)]
mod tests {
    use super::{SlackConfig, SlackMode};
    use crate::config::parse_in_etc as parse;

    #[test]
    fn slack_needs_channels_approvers_and_the_mode_s_secret() {
        let e =
            parse("[slack]\nbot_token = \"xoxb\"\napp_token = \"xapp\"\napprovers = [\"U1\"]\n")
                .unwrap_err();
        assert_eq!(e.key, "slack.channels");
        let c = parse("[slack]\nbot_token = \"xoxb\"\napprovers = [\"U1\"]\nchannels = [\"C1\"]\n")
            .unwrap();
        assert!(
            c.platform::<SlackConfig>().is_none(),
            "socket mode without an app token is off"
        );
        let c = parse("[slack]\nbot_token = \"xoxb\"\napp_token = \"xapp\"\napprovers = [\"U1\"]\nchannels = [\"C1\"]\n")
            .unwrap();
        assert_eq!(c.platform::<SlackConfig>().unwrap().mode, SlackMode::Socket);
        let e = parse("[slack]\nmode = \"http\"\nbot_token = \"xoxb\"\nsigning_secret = \"s\"\napprovers = [\"U1\"]\nchannels = [\"C1\"]\n")
            .unwrap_err();
        assert_eq!(e.key, "slack.events_listen");
    }

    #[test]
    fn inbox_channels_are_channel_ids() {
        let base = "[slack]\nbot_token = \"xoxb\"\napp_token = \"xapp\"\napprovers = [\"U1\"]\nchannels = [\"C1\"]\n";
        let c = parse(&format!("{base}inbox_channels = [\"C2\"]\n")).unwrap();
        assert_eq!(c.platform::<SlackConfig>().unwrap().inbox_channels, ["C2"]);
        let e = parse(&format!("{base}inbox_channels = [\"#inbox\"]\n")).unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("slack.inbox_channels", Some(6)));
        assert!(e.message.contains("not a channel id"), "{e}");
    }
}
