//! The `[sms]` table of `bot.toml`: as written, and resolved into the [`SmsConfig`]
//! the adapter ([`crate::sms`]) runs with (see [`crate::config`] for the two steps).

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde::Deserialize;

use crate::secret::Secret;
use crate::settings::{
    default_digest_after, is_e164, keep, ChatSettings, ConfigError, PlatformSettings,
    PlatformTable, Resolve, Starter,
};

/// What `gatebot init --with sms` writes.
pub const STARTER: Starter = Starter {
    key: "sms",
    question: "Text prompts by SMS (Twilio), answered by text?",
    secrets: &[("twilio-auth-token", "the Twilio auth token")],
    table:
        "# SMS through Twilio: compact prompts by text, answered \"ID yes\" or \"ID no reason\"\n\
            # (docs/sms.md).\n\
            [sms]\n\
            # The account SID (AC…, on the Twilio console's front page) and the file holding\n\
            # its auth token, which also signs Twilio's webhooks.\n\
            account_sid = \"\"\n\
            auth_token_file = {twilio-auth-token}\n\
            # The Twilio number prompts are sent from, and the numbers allowed to decide\n\
            # (international form, like \"+15551234567\").\n\
            from = \"\"\n\
            approvers = []\n\
            # Where Twilio's webhooks reach gatebot (behind your TLS proxy), and the https\n\
            # address you give Twilio for them. Without both, replies are not read.\n\
            # listen = \"127.0.0.1:3001\"\n\
            # public_url = \"https://gatebot.example.com/sms\"\n\n",
    fill_in: "Fill in [sms] account_sid, from and approvers, and the webhook's listen and \
              public_url (docs/sms.md)",
};

#[derive(Debug, Clone)]
pub struct SmsConfig {
    /// The Twilio account (`AC…`): the user name of basic auth, and part of the URL.
    pub account_sid: String,
    /// The auth token: basic auth's password, and the key webhooks are signed with.
    pub auth_token: Secret,
    /// The number cards are sent from (E.164), unless a messaging service sends them.
    pub from: Option<String>,
    /// A Twilio messaging service (`MG…`) that picks the sending number.
    pub messaging_service_sid: Option<String>,
    /// The REST API's base URL, without trailing slashes.
    pub api_url: String,
    /// Where the webhook listener binds (behind the TLS proxy).
    pub listen: Option<String>,
    /// The full public URL Twilio calls (and signs): inbound messages and delivery
    /// statuses both go there.
    pub public_url: Option<String>,
    /// Numbers cards go to (E.164), approvers (E.164), the digest threshold.
    pub chat: ChatSettings,
}

/// `[sms]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileSms {
    account_sid: Option<String>,
    auth_token: Option<String>,
    auth_token_env: Option<String>,
    auth_token_file: Option<PathBuf>,
    from: Option<String>,
    messaging_service_sid: Option<String>,
    #[serde(default = "default_twilio_api")]
    api_url: String,
    listen: Option<String>,
    public_url: Option<String>,
    #[serde(default)]
    to: Vec<String>,
    #[serde(default)]
    approvers: BTreeSet<String>,
    #[serde(default = "default_digest_after")]
    digest_after: usize,
}

fn default_twilio_api() -> String {
    "https://api.twilio.com".into()
}

impl PlatformSettings for SmsConfig {
    const KEY: &'static str = "sms";

    fn chat(&self) -> &ChatSettings {
        &self.chat
    }

    /// The client and the listener are set up once.
    fn keep_started(&self, new: &mut Self, restart: &mut Vec<&'static str>) {
        let mut keep = |key, changed: bool| {
            if changed {
                restart.push(key);
            }
        };
        keep("sms.account_sid", new.account_sid != self.account_sid);
        keep("sms.auth_token", new.auth_token != self.auth_token);
        keep("sms.from", new.from != self.from);
        keep(
            "sms.messaging_service_sid",
            new.messaging_service_sid != self.messaging_service_sid,
        );
        keep("sms.api_url", new.api_url != self.api_url);
        keep("sms.listen", new.listen != self.listen);
        keep("sms.public_url", new.public_url != self.public_url);
        new.account_sid = self.account_sid.clone();
        new.auth_token = self.auth_token.clone();
        new.from = self.from.clone();
        new.messaging_service_sid = self.messaging_service_sid.clone();
        new.api_url = self.api_url.clone();
        new.listen = self.listen.clone();
        new.public_url = self.public_url.clone();
    }

    fn summary(&self) -> String {
        let replies = match (&self.listen, &self.public_url) {
            (Some(l), Some(u)) => format!("replies at {u} (listening on {l})"),
            _ => "no replies (set listen and public_url to receive texts)".to_string(),
        };
        format!(
            "{} number(s), {} approver(s), {replies}, API {}",
            self.chat.destinations.len(),
            self.chat.approvers.len(),
            self.api_url
        )
    }
}

impl PlatformTable for FileSms {
    type Settings = SmsConfig;

    /// The `[sms]` table; `None` when it is off or has errors (recorded).
    fn resolve(
        self,
        r: &Resolve,
        notes: &mut Vec<String>,
        errors: &mut Vec<ConfigError>,
    ) -> Option<SmsConfig> {
        let api_url = keep(errors, r.url("sms", &self.api_url));
        let token = keep(
            errors,
            r.chat_secret(
                "sms",
                "auth_token",
                self.auth_token,
                self.auth_token_env,
                self.auth_token_file,
                notes,
            ),
        )?;
        let Some(auth_token) = token else {
            if !notes.iter().any(|n| n.starts_with("sms")) {
                notes.push("sms: off, because no Twilio auth token is set".into());
            }
            return None;
        };
        let before = errors.len();
        let account_sid = self.account_sid.unwrap_or_default();
        if !(account_sid.starts_with("AC")
            && account_sid.len() == 34
            && account_sid.bytes().all(|b| b.is_ascii_alphanumeric()))
        {
            errors.push(r.error(
                "sms",
                "account_sid",
                "set the Twilio account SID (AC followed by 32 letters and digits, on the Twilio console's front page)",
            ));
        }
        match (&self.from, &self.messaging_service_sid) {
            (None, None) => errors.push(r.error(
                "sms",
                "from",
                "set the Twilio number cards are sent from (like \"+15005550006\"), or messaging_service_sid",
            )),
            (Some(_), Some(_)) => errors.push(r.error(
                "sms",
                "messaging_service_sid",
                "set either from or messaging_service_sid, not both",
            )),
            (Some(f), None) if f.trim().is_empty() => errors.push(r.error(
                "sms",
                "from",
                "set the Twilio number prompts are sent from, in E.164 form like \"+15005550006\" \
                 (or a messaging_service_sid instead)",
            )),
            (Some(f), None) if !is_e164(f) => errors.push(r.error(
                "sms",
                "from",
                format!("`{f}` is not a phone number in E.164 form, like \"+15005550006\""),
            )),
            (None, Some(m)) if !m.starts_with("MG") => errors.push(r.error(
                "sms",
                "messaging_service_sid",
                format!("`{m}` is not a messaging service SID (MG…)"),
            )),
            _ => {}
        }
        if self.approvers.is_empty() {
            errors.push(r.error(
                "sms",
                "approvers",
                "list the phone numbers (E.164, like \"+15551234567\") allowed to decide; with none, nobody could approve",
            ));
        }
        for (key, list) in [
            ("approvers", self.approvers.iter().collect::<Vec<_>>()),
            ("to", self.to.iter().collect()),
        ] {
            if let Some(bad) = list.iter().find(|n| !is_e164(n)) {
                errors.push(r.error(
                    "sms",
                    key,
                    format!("`{bad}` is not a phone number in E.164 form, like \"+15551234567\""),
                ));
            }
        }
        match (&self.listen, &self.public_url) {
            (Some(l), _) if l.parse::<std::net::SocketAddr>().is_err() => errors.push(r.error(
                "sms",
                "listen",
                format!("`{l}` is not an address like 127.0.0.1:3001"),
            )),
            (Some(_), None) => errors.push(r.error(
                "sms",
                "public_url",
                "set the https URL Twilio calls (the one given in the Twilio console): signatures are checked against it",
            )),
            (None, Some(_)) => errors.push(r.error(
                "sms",
                "listen",
                "set the address to receive Twilio's webhooks on, like 127.0.0.1:3001 (behind your TLS proxy)",
            )),
            (Some(_), Some(u)) if !(u.starts_with("https://") || u.starts_with("http://")) => {
                errors.push(r.error("sms", "public_url", format!("`{u}` is not an http(s) URL")))
            }
            _ => {}
        }
        let digest_after = keep(errors, r.digest_after("sms", self.digest_after));
        if errors.len() > before {
            return None;
        }
        // With no numbers to send to, cards go to each approver.
        let to = if self.to.is_empty() {
            self.approvers.iter().cloned().collect()
        } else {
            self.to
        };
        Some(SmsConfig {
            account_sid,
            auth_token,
            from: self.from,
            messaging_service_sid: self.messaging_service_sid,
            api_url: api_url?,
            listen: self.listen,
            public_url: self.public_url,
            chat: ChatSettings {
                destinations: to,
                approvers: self.approvers,
                digest_after: digest_after?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::SmsConfig;
    use crate::config::parse_in_etc as parse;
    use crate::settings::is_e164;

    const SID: &str = "AC00000000000000000000000000000001";

    #[test]
    fn sms_needs_an_account_a_sender_and_approvers_by_number() {
        let base = format!("[sms]\naccount_sid = \"{SID}\"\nauth_token = \"t\"\n");
        let e = parse(&format!("{base}approvers = [\"+15551234567\"]\n")).unwrap_err();
        assert_eq!(e.key, "sms.from");
        // As `gatebot init --with sms` leaves it: said as what to set, not as "`` is not".
        let e = parse(&format!(
            "{base}from = \"\"\napprovers = [\"+15551234567\"]\n"
        ))
        .unwrap_err();
        assert_eq!(e.key, "sms.from");
        assert!(e.message.starts_with("set the Twilio number"), "{e}");
        let e = parse(&format!(
            "{base}from = \"+15005550006\"\napprovers = [\"5551234567\"]\n"
        ))
        .unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("sms.approvers", Some(5)));
        assert!(e.message.contains("E.164"), "{e}");
        let e = parse(&format!("{base}from = \"+15005550006\"\napprovers = [\"+15551234567\"]\nlisten = \"127.0.0.1:3001\"\n"))
            .unwrap_err();
        assert_eq!(e.key, "sms.public_url");
        let c = parse(&format!(
            "{base}from = \"+15005550006\"\napprovers = [\"+15551234567\"]\n"
        ))
        .unwrap();
        let s = c.platform::<SmsConfig>().unwrap();
        assert_eq!(s.chat.destinations, ["+15551234567"]);
        assert_eq!(s.api_url, "https://api.twilio.com");
        let off = parse("[sms]\nauth_token_env = \"GATEBOT_TEST_NO_SUCH_VAR\"\n").unwrap();
        assert!(off.platform::<SmsConfig>().is_none());
    }

    #[test]
    fn e164_is_a_plus_and_digits() {
        assert!(is_e164("+15551234567"));
        for bad in [
            "15551234567",
            "+1555",
            "+0123456789",
            "+1 555 123 4567",
            "+1555123456789012",
        ] {
            assert!(!is_e164(bad), "{bad}");
        }
    }
}
