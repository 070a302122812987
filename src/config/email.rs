//! The `[email]` table of `bot.toml`: prompts by e-mail (docs/email.md), as written and
//! resolved into the [`EmailConfig`] the adapter ([`crate::email`]) runs with.
//!
//! ```toml
//! [email]
//! smtp_host = "smtp.example.com"
//! security = "starttls"        # starttls (port 587), tls (465), or none (a relay on this machine, 25)
//! username = "gatebot@example.com"
//! password_file = "/etc/gatebot/smtp-password"
//! from = "gatebot <gatebot@example.com>"
//! to = ["alice@example.com"]   # who gets the prompts of requests no approval rule routes
//! notify_outcomes = false
//! ```

use std::path::PathBuf;

use serde::Deserialize;

use crate::secret::Secret;
use crate::settings::{
    default_digest_after, keep, ChatSettings, ConfigError, PlatformSettings, PlatformTable,
    Resolve, Starter,
};

/// How the connection to the SMTP server is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Security {
    /// Plain, then STARTTLS (required: a server that does not offer it is refused).
    Starttls,
    /// TLS from the first byte (SMTPS).
    Tls,
    /// Plain: only for a relay on this machine (the host must be a loopback address).
    None,
}

impl Security {
    fn default_port(self) -> u16 {
        match self {
            Security::Starttls => 587,
            Security::Tls => 465,
            Security::None => 25,
        }
    }
}

#[derive(Debug, Clone)]
pub struct EmailConfig {
    pub smtp_host: String,
    pub smtp_port: u16,
    pub security: Security,
    pub username: Option<String>,
    pub password: Option<Secret>,
    /// The `From:` address (with a display name, if given).
    pub from: String,
    /// Mails to the asked people on each request's outcome too.
    pub notify_outcomes: bool,
    /// The addresses prompts go to (`to`), as destinations; the same as approvers.
    pub chat: ChatSettings,
}

/// `[email]` as written.
/// What `gatebot init --with email` writes.
pub const STARTER: Starter = Starter {
    key: "email",
    question: "Mail prompts, with a link into the dashboard to decide?",
    secrets: &[("smtp-password", "the SMTP password")],
    table: "# E-mail: a mail per prompt (a digest in a burst) with a link that signs the reader\n\
            # into the dashboard, where they press Approve or Deny (docs/email.md).\n\
            [email]\n\
            # The SMTP server; \"starttls\" (port 587), \"tls\" (port 465), or \"none\" (a relay\n\
            # on this machine only).\n\
            smtp_host = \"smtp.example.com\"\n\
            security = \"starttls\"\n\
            # Signing in: the account and the file holding its password.\n\
            username = \"gatebot@example.com\"\n\
            password_file = {smtp-password}\n\
            # The From: address, and who gets the prompts (their [people] `email` signs\n\
            # them in from the link).\n\
            from = \"gatebot <gatebot@example.com>\"\n\
            to = []\n\n",
    fill_in: "Fill in [email] smtp_host, username, from and to (docs/email.md)",
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileEmail {
    smtp_host: String,
    smtp_port: Option<u16>,
    #[serde(default = "default_security")]
    security: Security,
    username: Option<String>,
    password: Option<String>,
    password_env: Option<String>,
    password_file: Option<PathBuf>,
    from: String,
    #[serde(default)]
    to: Vec<String>,
    #[serde(default)]
    notify_outcomes: bool,
    #[serde(default = "default_digest_after")]
    digest_after: usize,
}

fn default_security() -> Security {
    Security::Starttls
}

/// Whether `s` looks like an address a mail can go to (`name@domain.tld`), with no
/// characters that could end a header.
pub fn valid_address(s: &str) -> bool {
    let Some((local, domain)) = s.rsplit_once('@') else {
        return false;
    };
    !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && s.len() <= 254
        && s.chars()
            .all(|c| c.is_ascii_graphic() && !matches!(c, '<' | '>' | ',' | ';' | '"' | '\\'))
}

impl PlatformSettings for EmailConfig {
    const KEY: &'static str = "email";

    fn chat(&self) -> &ChatSettings {
        &self.chat
    }

    /// The SMTP transport is built once, from the server and its credentials.
    fn keep_started(&self, new: &mut Self, restart: &mut Vec<&'static str>) {
        if (new.smtp_host.as_str(), new.smtp_port, new.security)
            != (self.smtp_host.as_str(), self.smtp_port, self.security)
        {
            restart.push("email.smtp_host");
            new.smtp_host = self.smtp_host.clone();
            new.smtp_port = self.smtp_port;
            new.security = self.security;
        }
        if new.username != self.username || new.password != self.password {
            restart.push("email.password");
            new.username = self.username.clone();
            new.password = self.password.clone();
        }
    }

    fn summary(&self) -> String {
        let security = match self.security {
            Security::Starttls => "STARTTLS",
            Security::Tls => "TLS",
            Security::None => "no TLS (a local relay)",
        };
        format!(
            "{} address(es), via {}:{} ({security})",
            self.chat.destinations.len(),
            self.smtp_host,
            self.smtp_port
        )
    }
}

impl PlatformTable for FileEmail {
    type Settings = EmailConfig;

    /// The `[email]` table; `None` when its password is not set (noted) or it has
    /// errors (recorded).
    fn resolve(
        self,
        r: &Resolve,
        notes: &mut Vec<String>,
        errors: &mut Vec<ConfigError>,
    ) -> Option<EmailConfig> {
        let before = errors.len();
        let host = self.smtp_host.trim().to_string();
        let loopback = host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        if host.is_empty() || host.contains(['/', ' ', ':']) && !host.contains("::") {
            errors.push(r.error(
                "email",
                "smtp_host",
                format!("`{host}` is not a host name (like smtp.example.com)"),
            ));
        } else if self.security == Security::None && !loopback {
            errors.push(r.error(
                "email",
                "security",
                "\"none\" sends mail unencrypted: only for a relay on this machine \
                 (smtp_host = \"127.0.0.1\"); use \"starttls\" or \"tls\" for a server elsewhere",
            ));
        }
        let from_address = self
            .from
            .rsplit_once('<')
            .map_or(self.from.as_str(), |(_, a)| a.trim_end_matches('>'))
            .trim();
        if !valid_address(from_address) || self.from.contains(['\r', '\n']) {
            errors.push(r.error(
                "email",
                "from",
                format!(
                    "`{}` is not an address (like gatebot@example.com, or \"gatebot \
                     <gatebot@example.com>\")",
                    crate::names::visible(&self.from)
                ),
            ));
        }
        for a in &self.to {
            if !valid_address(a.trim()) {
                errors.push(r.error(
                    "email",
                    "to",
                    format!("`{}` is not an e-mail address", crate::names::visible(a)),
                ));
            }
        }
        if self.username.is_some()
            != (self.password.is_some()
                || self.password_env.is_some()
                || self.password_file.is_some())
        {
            errors.push(r.error(
                "email",
                "username",
                "give both a username and a password (password, password_env or \
                 password_file), or neither for a server that takes mail without signing in",
            ));
        }
        let password = if self.username.is_some() {
            match keep(
                errors,
                r.chat_secret(
                    "email",
                    "password",
                    self.password,
                    self.password_env,
                    self.password_file,
                    notes,
                ),
            ) {
                Some(Some(p)) => Some(p),
                // Its variable is unset: the channel is off (noted).
                Some(None) => return None,
                None => None,
            }
        } else {
            None
        };
        let digest_after = keep(errors, r.digest_after("email", self.digest_after));
        if errors.len() > before {
            return None;
        }
        let to: Vec<String> = self.to.iter().map(|a| a.trim().to_string()).collect();
        Some(EmailConfig {
            smtp_port: self.smtp_port.unwrap_or(self.security.default_port()),
            smtp_host: host,
            security: self.security,
            username: self.username,
            password,
            from: self.from.trim().to_string(),
            notify_outcomes: self.notify_outcomes,
            chat: ChatSettings {
                approvers: to.iter().cloned().collect(),
                destinations: to,
                digest_after: digest_after?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{EmailConfig, Security};
    use crate::config::parse_in_etc as parse;

    #[test]
    fn a_local_relay_needs_no_password_and_a_remote_server_needs_tls() {
        let c = parse(
            "[email]\nsmtp_host = \"127.0.0.1\"\nsecurity = \"none\"\nfrom = \"gatebot <g@example.com>\"\n\
             to = [\"alice@example.com\"]\n",
        )
        .unwrap();
        let e = c.platform::<EmailConfig>().unwrap();
        assert_eq!((e.smtp_port, e.security), (25, Security::None));
        assert_eq!(e.chat.destinations, ["alice@example.com"]);
        let bad = parse(
            "[email]\nsmtp_host = \"smtp.example.com\"\nsecurity = \"none\"\nfrom = \"g@example.com\"\n",
        )
        .unwrap_err();
        assert_eq!(bad.key, "email.security");
        for (table, key) in [
            ("smtp_host = \"x\"\nfrom = \"nobody\"\n", "email.from"),
            (
                "smtp_host = \"x\"\nfrom = \"g@example.com\"\nto = [\"a@b.c\\r\\nBcc: x@y.z\"]\n",
                "email.to",
            ),
            (
                "smtp_host = \"x\"\nfrom = \"g@example.com\"\nusername = \"g\"\n",
                "email.username",
            ),
        ] {
            let e = parse(&format!("[email]\n{table}")).unwrap_err();
            assert_eq!(e.key, key, "{table}");
        }
    }
}
