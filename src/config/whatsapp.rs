//! The `[whatsapp]` table of `bot.toml`: as written, and resolved into the
//! [`WhatsAppConfig`] the adapter ([`crate::whatsapp`]) runs with (see [`crate::config`]
//! for the two steps).

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde::Deserialize;

use crate::secret::Secret;
use crate::settings::{
    default_digest_after, is_e164, keep, ChatSettings, ConfigError, PlatformSettings,
    PlatformTable, Resolve, Starter,
};

/// What `gatebot init --with whatsapp` writes.
pub const STARTER: Starter = Starter {
    key: "whatsapp",
    question: "Send prompts to WhatsApp (Meta's Cloud API), answered with buttons?",
    secrets: &[
        (
            "whatsapp-access-token",
            "the WhatsApp system user's access token",
        ),
        (
            "whatsapp-app-secret",
            "the Meta app's secret, which signs WhatsApp's webhooks",
        ),
        (
            "whatsapp-verify-token",
            "the words you give Meta as the webhook's verify token",
        ),
    ],
    table: "# WhatsApp through Meta's Cloud API: cards with buttons; outside 24 hours of an\n\
            # approver's last message, the approved template (docs/whatsapp.md).\n\
            [whatsapp]\n\
            # The business number's Phone number ID (WhatsApp > API Setup) and the file\n\
            # holding the system user's access token.\n\
            phone_number_id = \"\"\n\
            access_token_file = {whatsapp-access-token}\n\
            # The numbers allowed to decide (international form, like \"+15551234567\").\n\
            approvers = []\n\
            # The approved Utility template for approvers quiet for 24 hours.\n\
            # template = \"gatebot_prompt\"\n\
            # Where Meta's webhooks reach gatebot (behind your TLS proxy), with the app\n\
            # secret that signs them and your verify token. Without them, answers are not read.\n\
            # listen = \"127.0.0.1:3002\"\n\
            # app_secret_file = {whatsapp-app-secret}\n\
            # verify_token_file = {whatsapp-verify-token}\n\n",
    fill_in: "Fill in [whatsapp] phone_number_id and approvers, create the template, and \
              set up the webhook's listen, app secret and verify token (docs/whatsapp.md)",
};

/// What a quick-reply button of the template does, in the order the template has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TemplateButton {
    /// Sends the full card (the window is open once they tap it).
    Show,
    /// Approves the request (a request or a proposal; on other cards it shows the card).
    Approve,
    /// Denies it, without a reason (likewise).
    Deny,
}

#[derive(Debug, Clone)]
pub struct WhatsAppConfig {
    /// The business phone number's id in the Cloud API (digits, not the number).
    pub phone_number_id: String,
    /// The system user's access token: the Bearer token of every Graph API call.
    pub access_token: Secret,
    /// The app secret: the key webhooks are signed with (`X-Hub-Signature-256`).
    pub app_secret: Option<Secret>,
    /// What Meta sends back in the webhook's verification handshake.
    pub verify_token: Option<Secret>,
    /// The Graph API's base URL, without trailing slashes.
    pub api_url: String,
    /// The Graph API version in the path (`v23.0`).
    pub api_version: String,
    /// Where the webhook listener binds (behind the TLS proxy).
    pub listen: Option<String>,
    /// The approved message template sent outside the 24-hour window, and its language.
    pub template: Option<String>,
    pub template_language: String,
    /// What the template's quick-reply buttons do, in order.
    pub template_buttons: Vec<TemplateButton>,
    /// Numbers cards go to (E.164), approvers (E.164), the digest threshold.
    pub chat: ChatSettings,
}

/// `[whatsapp]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileWhatsApp {
    phone_number_id: Option<String>,
    access_token: Option<String>,
    access_token_env: Option<String>,
    access_token_file: Option<PathBuf>,
    app_secret: Option<String>,
    app_secret_env: Option<String>,
    app_secret_file: Option<PathBuf>,
    verify_token: Option<String>,
    verify_token_env: Option<String>,
    verify_token_file: Option<PathBuf>,
    #[serde(default = "default_graph_api")]
    api_url: String,
    #[serde(default = "default_graph_version")]
    api_version: String,
    listen: Option<String>,
    template: Option<String>,
    #[serde(default = "default_template_language")]
    template_language: String,
    #[serde(default = "default_template_buttons")]
    template_buttons: Vec<String>,
    #[serde(default)]
    to: Vec<String>,
    #[serde(default)]
    approvers: BTreeSet<String>,
    #[serde(default = "default_digest_after")]
    digest_after: usize,
}

fn default_graph_api() -> String {
    "https://graph.facebook.com".into()
}

fn default_graph_version() -> String {
    "v23.0".into()
}

fn default_template_language() -> String {
    "en_US".into()
}

fn default_template_buttons() -> Vec<String> {
    vec!["show".into(), "approve".into(), "deny".into()]
}

impl PlatformSettings for WhatsAppConfig {
    const KEY: &'static str = "whatsapp";

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
        keep(
            "whatsapp.phone_number_id",
            new.phone_number_id != self.phone_number_id,
        );
        keep(
            "whatsapp.access_token",
            new.access_token != self.access_token,
        );
        keep("whatsapp.app_secret", new.app_secret != self.app_secret);
        keep(
            "whatsapp.verify_token",
            new.verify_token != self.verify_token,
        );
        keep("whatsapp.api_url", new.api_url != self.api_url);
        keep("whatsapp.api_version", new.api_version != self.api_version);
        keep("whatsapp.listen", new.listen != self.listen);
        keep("whatsapp.template", new.template != self.template);
        keep(
            "whatsapp.template_language",
            new.template_language != self.template_language,
        );
        keep(
            "whatsapp.template_buttons",
            new.template_buttons != self.template_buttons,
        );
        new.phone_number_id = self.phone_number_id.clone();
        new.access_token = self.access_token.clone();
        new.app_secret = self.app_secret.clone();
        new.verify_token = self.verify_token.clone();
        new.api_url = self.api_url.clone();
        new.api_version = self.api_version.clone();
        new.listen = self.listen.clone();
        new.template = self.template.clone();
        new.template_language = self.template_language.clone();
        new.template_buttons = self.template_buttons.clone();
    }

    fn summary(&self) -> String {
        let replies = match &self.listen {
            Some(l) => format!("webhooks on {l}"),
            None => "no replies (set listen, app_secret and verify_token to receive them)".into(),
        };
        let template = match &self.template {
            Some(t) => format!("template {t} ({})", self.template_language),
            None => "no template (approvers who have not written in 24 h get nothing)".into(),
        };
        format!(
            "{} number(s), {} approver(s), {replies}, {template}, API {}/{}",
            self.chat.destinations.len(),
            self.chat.approvers.len(),
            self.api_url,
            self.api_version
        )
    }
}

impl PlatformTable for FileWhatsApp {
    type Settings = WhatsAppConfig;

    /// The `[whatsapp]` table; `None` when it is off or has errors (recorded).
    fn resolve(
        self,
        r: &Resolve,
        notes: &mut Vec<String>,
        errors: &mut Vec<ConfigError>,
    ) -> Option<WhatsAppConfig> {
        const T: &str = "whatsapp";
        let api_url = keep(errors, r.url(T, &self.api_url));
        let token = keep(
            errors,
            r.chat_secret(
                T,
                "access_token",
                self.access_token,
                self.access_token_env,
                self.access_token_file,
                notes,
            ),
        )?;
        let Some(access_token) = token else {
            if !notes.iter().any(|n| n.starts_with(T)) {
                notes.push("whatsapp: off, because no access token is set".into());
            }
            return None;
        };
        let before = errors.len();
        let app_secret = keep(
            errors,
            r.secret(
                T,
                "app_secret",
                self.app_secret,
                self.app_secret_env,
                self.app_secret_file,
            ),
        )
        .flatten();
        let verify_token = keep(
            errors,
            r.secret(
                T,
                "verify_token",
                self.verify_token,
                self.verify_token_env,
                self.verify_token_file,
            ),
        )
        .flatten();
        let phone_number_id = self.phone_number_id.unwrap_or_default();
        if phone_number_id.is_empty() || !phone_number_id.bytes().all(|b| b.is_ascii_digit()) {
            errors.push(r.error(
                T,
                "phone_number_id",
                "set the phone number id (digits, under WhatsApp > API Setup in Meta's app dashboard; not the phone number itself)",
            ));
        }
        if !(self.api_version.starts_with('v')
            && self.api_version[1..]
                .split('.')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())))
        {
            errors.push(r.error(
                T,
                "api_version",
                format!(
                    "`{}` is not a Graph API version like \"v23.0\"",
                    self.api_version
                ),
            ));
        }
        if self.approvers.is_empty() {
            errors.push(r.error(
                T,
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
                    T,
                    key,
                    format!("`{bad}` is not a phone number in E.164 form, like \"+15551234567\""),
                ));
            }
        }
        if let Some(l) = &self.listen {
            if l.parse::<std::net::SocketAddr>().is_err() {
                errors.push(r.error(
                    T,
                    "listen",
                    format!("`{l}` is not an address like 127.0.0.1:3002"),
                ));
            } else if app_secret.is_none() {
                errors.push(r.error(
                    T,
                    "app_secret",
                    "set the app secret (App settings > Basic in Meta's app dashboard): every webhook's signature is checked with it",
                ));
            } else if verify_token.is_none() {
                errors.push(r.error(
                    T,
                    "verify_token",
                    "set a verify token: the same words you type in the webhook's set-up at Meta",
                ));
            }
        }
        if let Some(t) = &self.template {
            if t.is_empty()
                || !t
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            {
                errors.push(r.error(
                    T,
                    "template",
                    format!("`{t}` is not a template name (lower-case letters, digits and _)"),
                ));
            }
        }
        let mut template_buttons = Vec::new();
        for b in &self.template_buttons {
            match b.as_str() {
                "show" => template_buttons.push(TemplateButton::Show),
                "approve" => template_buttons.push(TemplateButton::Approve),
                "deny" => template_buttons.push(TemplateButton::Deny),
                other => errors.push(r.error(
                    T,
                    "template_buttons",
                    format!("`{other}` is no button gatebot knows: use \"show\", \"approve\" or \"deny\", in the template's order"),
                )),
            }
        }
        if template_buttons.len() > 3 {
            errors.push(r.error(
                T,
                "template_buttons",
                "gatebot fills at most three quick-reply buttons",
            ));
        }
        let digest_after = keep(errors, r.digest_after(T, self.digest_after));
        if errors.len() > before {
            return None;
        }
        // With no numbers to send to, cards go to each approver.
        let to = if self.to.is_empty() {
            self.approvers.iter().cloned().collect()
        } else {
            self.to
        };
        Some(WhatsAppConfig {
            phone_number_id,
            access_token,
            app_secret,
            verify_token,
            api_url: api_url?,
            api_version: self.api_version,
            listen: self.listen,
            template: self.template,
            template_language: self.template_language,
            template_buttons,
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
    use super::{TemplateButton, WhatsAppConfig};
    use crate::config::parse_in_etc as parse;

    #[test]
    fn whatsapp_needs_a_number_id_approvers_by_number_and_secrets_to_listen() {
        let base = "[whatsapp]\naccess_token = \"t\"\n";
        let e = parse(&format!("{base}approvers = [\"+15551234567\"]\n")).unwrap_err();
        assert_eq!(e.key, "whatsapp.phone_number_id");
        let e = parse(&format!(
            "{base}phone_number_id = \"106540352242922\"\napprovers = [\"15551234567\"]\n"
        ))
        .unwrap_err();
        assert_eq!((e.key.as_str(), e.line), ("whatsapp.approvers", Some(4)));
        assert!(e.message.contains("E.164"), "{e}");
        let ok = format!(
            "{base}phone_number_id = \"106540352242922\"\napprovers = [\"+15551234567\"]\n"
        );
        let e = parse(&format!("{ok}listen = \"127.0.0.1:3002\"\n")).unwrap_err();
        assert_eq!(e.key, "whatsapp.app_secret");
        let e = parse(&format!(
            "{ok}listen = \"127.0.0.1:3002\"\napp_secret = \"s\"\n"
        ))
        .unwrap_err();
        assert_eq!(e.key, "whatsapp.verify_token");
        let e = parse(&format!("{ok}template = \"Gatebot Prompt\"\n")).unwrap_err();
        assert_eq!(e.key, "whatsapp.template");
        let e = parse(&format!("{ok}template_buttons = [\"maybe\"]\n")).unwrap_err();
        assert_eq!(e.key, "whatsapp.template_buttons");
        let c = parse(&format!("{ok}template = \"gatebot_prompt\"\n")).unwrap();
        let s = c.platform::<WhatsAppConfig>().unwrap();
        assert_eq!(s.chat.destinations, ["+15551234567"]);
        assert_eq!(s.api_url, "https://graph.facebook.com");
        assert_eq!(s.template_language, "en_US");
        assert_eq!(
            s.template_buttons,
            [
                TemplateButton::Show,
                TemplateButton::Approve,
                TemplateButton::Deny
            ]
        );
        let off = parse("[whatsapp]\naccess_token_env = \"GATEBOT_TEST_NO_SUCH_VAR\"\n").unwrap();
        assert!(off.platform::<WhatsAppConfig>().is_none());
    }
}
