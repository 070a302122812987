//! Slash commands: one per command the kinds registry declares
//! ([`crate::chat::conversation::commands`]), registered per guild at start (a bulk
//! overwrite, `PUT /applications/{app}/guilds/{guild}/commands`, so a command the
//! registry dropped disappears too), each with one optional text option for what
//! follows the name (`/deny` → `k7m2abcd too risky`).

use serde_json::{json, Value};
use tracing::{info, warn};
use twilight_http::routing::Route;

use super::api::{id, DiscordApi};
use crate::chat::conversation;

/// The option every command takes: the rest of the command as typed.
pub const ARGUMENTS: &str = "arguments";
/// Discord's limits: a command's description, the commands of an application.
const MAX_DESCRIPTION: usize = 100;
const MAX_COMMANDS: usize = 100;
/// Command type CHAT_INPUT; option type STRING.
const CHAT_INPUT: u64 = 1;
const STRING: u64 = 3;

/// The commands as Discord's bulk-overwrite body.
#[must_use]
pub fn definitions() -> Vec<Value> {
    conversation::commands()
        .iter()
        .take(MAX_COMMANDS)
        .map(|c| {
            let (description, _) = crate::chat::text::fit(c.menu, "the description", |p| {
                p.chars().count() <= MAX_DESCRIPTION
            });
            let typed = c.help.map_or("", |(typed, _)| typed);
            let hint = typed.split_once(' ').map_or(
                "anything else, as you would type it after the command",
                |(_, rest)| rest,
            );
            let (hint, _) =
                crate::chat::text::fit(hint, "the hint", |p| p.chars().count() <= MAX_DESCRIPTION);
            json!({
                "name": c.name,
                "type": CHAT_INPUT,
                "description": description,
                "dm_permission": false,
                "options": [{
                    "type": STRING,
                    "name": ARGUMENTS,
                    "description": hint,
                    "required": false,
                }],
            })
        })
        .collect()
}

/// Registers [`definitions`] in `guild`; logged, never fatal (commands typed as
/// messages and buttons work without them).
pub async fn register(api: &DiscordApi, application: &str, guild: &str) {
    let (Ok(application_id), Ok(guild_id)) = (id(application), id(guild)) else {
        return;
    };
    let route = Route::SetGuildCommands {
        application_id,
        guild_id,
    };
    let body = Value::Array(definitions());
    match api
        .call_patiently(
            &format!("commands:{guild}"),
            &route,
            Some(&body),
            5,
            std::time::Duration::from_secs(60),
        )
        .await
    {
        Ok(_) => info!(guild, "discord: slash commands registered"),
        Err(e) => {
            warn!(guild, error = %e, "discord: cannot register the slash commands (the bot needs the applications.commands scope in that server)")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registry_command_is_a_valid_discord_command() {
        let defs = definitions();
        assert_eq!(defs.len(), conversation::commands().len());
        assert!(!defs.is_empty() && defs.len() <= MAX_COMMANDS);
        let mut names = std::collections::HashSet::new();
        for d in &defs {
            let name = d["name"].as_str().unwrap();
            assert!(
                (1..=32).contains(&name.len())
                    && name.chars().all(|c| c.is_ascii_lowercase()
                        || c.is_ascii_digit()
                        || c == '-'
                        || c == '_'),
                "{name}"
            );
            assert!(names.insert(name.to_string()), "{name} twice");
            for text in [&d["description"], &d["options"][0]["description"]] {
                let t = text.as_str().unwrap();
                assert!(
                    (1..=MAX_DESCRIPTION).contains(&t.chars().count()),
                    "{name}: {t}"
                );
            }
        }
        assert!(names.contains("approve") && names.contains("deny"));
    }
}
