//! `[people.NAME]`: one person and their identities, so that what they do is recorded
//! and shown under their name whichever way they did it (Alice on Telegram and Alice on
//! Slack are one person; so is the account `alice` on the control socket):
//!
//! ```toml
//! [people.alice]
//! telegram = 111          # a Telegram user id
//! slack = "U0AAA"         # a Slack member id
//! unix = "alice"          # the local account (or SUDO_USER) on the control socket
//! email = "alice@example.com"
//! phone = "+15551234567"  # E.164: SMS and WhatsApp
//! discord = "123456789012345678"  # a Discord user id
//! ```
//!
//! Who may decide is still each platform's `approvers` list; an identity no table names
//! is its own person, as before. An identity named by two people is an error (which of
//! them acted could not be told).

use std::collections::{BTreeMap, HashMap};

use serde::Deserialize;

use super::ConfigError;
use crate::settings::Resolve;

/// `[people]`: each person's identities, looked up by identity.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct People {
    /// (surface, identity) → person: surface is a platform's key (`telegram`, `slack`),
    /// `unix` or `email`.
    by_identity: HashMap<(String, String), String>,
    /// Every person's name, in file order (sorted).
    pub names: Vec<String>,
}

impl People {
    /// The person whose identity on `surface` (a platform's key, `unix`, `email`) is
    /// `id`, if a `[people]` table names it.
    #[must_use]
    pub fn named(&self, surface: &str, id: &str) -> Option<&str> {
        self.by_identity
            .get(&(surface.to_string(), id.to_string()))
            .map(String::as_str)
    }

    /// `person`'s identity on `surface` (a platform's key), if their table names one.
    #[must_use]
    pub fn identity(&self, person: &str, surface: &str) -> Option<&str> {
        self.by_identity
            .iter()
            .find(|((s, _), p)| s == surface && p.as_str() == person)
            .map(|((_, id), _)| id.as_str())
    }
}

/// A `[people.NAME]` table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct FilePerson {
    telegram: Option<i64>,
    slack: Option<String>,
    unix: Option<String>,
    email: Option<String>,
    phone: Option<String>,
    discord: Option<String>,
}

impl Resolve<'_> {
    /// Every `[people.NAME]` table; each error names its key and line.
    pub(super) fn people(
        &self,
        file: BTreeMap<String, FilePerson>,
        errors: &mut Vec<ConfigError>,
    ) -> People {
        let mut people = People::default();
        for (name, p) in file {
            let table = format!("people.{name}");
            if !crate::names::valid_agent_name(&name) {
                errors.push(self.error(
                    "people",
                    &name,
                    format!(
                        "`{name}` is not a name gatebot shows: letters, digits, `-`, `_` and \
                         `.`, at most 64"
                    ),
                ));
                continue;
            }
            // (key, value, what it must be, the surfaces it names them on)
            let identities = [
                (
                    "telegram",
                    p.telegram.map(|id| id.to_string()),
                    "a Telegram user id",
                    &["telegram"][..],
                ),
                ("slack", p.slack, "a Slack member id like U0AAA", &["slack"]),
                ("unix", p.unix, "a local account name", &["unix"]),
                ("email", p.email, "an e-mail address", &["email"]),
                (
                    "phone",
                    p.phone,
                    "a phone number in international form, like +15551234567",
                    &["sms", "whatsapp"],
                ),
                (
                    "discord",
                    p.discord,
                    "a Discord user id (digits, like \"123456789012345678\")",
                    &["discord"],
                ),
            ];
            for (key, id, what, surfaces) in identities {
                let Some(id) = id else { continue };
                let id = id.trim().to_string();
                if !valid_identity(key, &id) {
                    errors.push(self.error(&table, key, format!("`{id}` is not {what}")));
                    continue;
                }
                let taken = surfaces
                    .iter()
                    .find_map(|surface| people.by_identity.get(&(surface.to_string(), id.clone())));
                if let Some(other) = taken {
                    errors.push(self.error(
                        &table,
                        key,
                        format!(
                            "`{id}` is already {other}'s: one identity can be one person's \
                             only, or gatebot could not tell who acted"
                        ),
                    ));
                    continue;
                }
                for surface in surfaces {
                    people
                        .by_identity
                        .insert((surface.to_string(), id.clone()), name.clone());
                }
            }
            people.names.push(name);
        }
        people
    }
}

/// A Slack member id: `U` or `W` and upper-case letters and digits.
fn valid_slack_id(s: &str) -> bool {
    let s = s.trim();
    s.len() >= 2
        && s.len() <= 32
        && matches!(s.as_bytes()[0], b'U' | b'W')
        && s.bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
}

/// Whether `id` can be an identity on `surface`.
fn valid_identity(surface: &str, id: &str) -> bool {
    match surface {
        "telegram" => id.parse::<i64>().is_ok_and(|n| n > 0),
        "slack" => valid_slack_id(id),
        "phone" => crate::settings::is_e164(id),
        "discord" => super::discord::is_snowflake(id),
        "unix" => crate::peer::check_sudo_user(id).is_ok(),
        "email" => {
            id.len() <= 254
                && id
                    .split_once('@')
                    .is_some_and(|(user, host)| !user.is_empty() && host.contains('.'))
                && !id.chars().any(|c| c.is_whitespace() || c.is_control())
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use crate::config::parse_in_etc as parse;

    #[test]
    fn one_person_is_found_by_each_of_their_identities() {
        let c = parse(
            "[people.alice]\ntelegram = 111\nslack = \"U0AAA\"\nunix = \"alice\"\n\
             email = \"alice@example.com\"\nphone = \"+15551234567\"\n\
             discord = \"123456789012345678\"\n\n\
             [people.bob]\nunix = \"bob\"\n",
        )
        .unwrap();
        let p = &c.people;
        assert_eq!(p.named("discord", "123456789012345678"), Some("alice"));
        assert_eq!(p.named("telegram", "111"), Some("alice"));
        assert_eq!(p.named("slack", "U0AAA"), Some("alice"));
        assert_eq!(p.named("unix", "alice"), Some("alice"));
        assert_eq!(p.named("email", "alice@example.com"), Some("alice"));
        assert_eq!(p.named("sms", "+15551234567"), Some("alice"));
        assert_eq!(p.named("whatsapp", "+15551234567"), Some("alice"));
        assert_eq!(p.identity("alice", "whatsapp"), Some("+15551234567"));
        assert_eq!(p.named("unix", "bob"), Some("bob"));
        assert_eq!(
            p.named("telegram", "222"),
            None,
            "an unmapped id is its own person"
        );
        assert_eq!(p.names, ["alice", "bob"]);
    }

    #[test]
    fn an_identity_of_two_people_and_bad_ids_are_refused_with_their_keys() {
        let errors = crate::config::Config::check_text(
            "[people.alice]\ntelegram = 111\n\n[people.bob]\ntelegram = 111\nslack = \"alice\"\n\
             email = \"nobody\"\nphone = \"555-1234\"\n",
            std::path::Path::new("/etc/gatebot/bot.toml"),
        )
        .unwrap_err();
        let said: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert_eq!(said.len(), 4, "{said:#?}");
        assert!(
            said[0].contains("people.bob.telegram") && said[0].contains("already alice's"),
            "{said:#?}"
        );
        assert!(said[1].contains("people.bob.slack"), "{said:#?}");
        assert!(said[2].contains("people.bob.email"), "{said:#?}");
        assert!(
            said[3].contains("people.bob.phone") && said[3].contains("+15551234567"),
            "{said:#?}"
        );
    }
}
