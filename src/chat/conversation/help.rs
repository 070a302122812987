//! `/help` (and `/start`): how to answer gatebot, from every kind's commands in the
//! registry ([`super::commands`]). Also the answer to text addressed to gatebot that
//! no kind reads (a Slack slash command with unknown words). Who: anyone.

use crate::chat::card::{Block, Card, Line};
use crate::chat::command::Typed;
use crate::chat::exchange::{Actor, Answer, Said, Written};
use crate::chat::Context;

use super::{Never, SlashCommand, Taken, Who};

/// `/help`'s kind.
pub struct Help;

/// `/help` typed, or addressed text no kind reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command;

impl super::Kind for Help {
    type Action = Never;
    type Command = Command;
    const COMMANDS: &'static [SlashCommand] = &[SlashCommand {
        name: "help",
        menu: "how to answer gatebot",
        help: None,
    }];

    fn parse(typed: &Typed<'_>, _in_reply: bool) -> Option<Command> {
        matches!(typed.name.as_str(), "help" | "start").then_some(Command)
    }

    fn written(_cx: &Context, w: &Written<'_>) -> Option<Taken<Command>> {
        w.addressed.then_some(Taken::Command(Command))
    }

    #[cfg(test)]
    fn example_cards() -> Vec<Card> {
        vec![card()]
    }

    #[cfg(test)]
    fn golden_cards() -> Vec<(&'static str, Card)> {
        vec![("help", card())]
    }
}

impl super::Run for Command {
    fn who(&self) -> Who {
        Who::Anyone
    }

    fn attempted(&self) -> String {
        "help".into()
    }

    async fn run(self, _cx: &Context, _actor: &Actor, _said: &Said<'_>) -> Answer {
        answer()
    }
}

/// The answer to `/help`.
#[must_use]
pub fn answer() -> Answer {
    Answer::Card(card())
}

#[must_use]
pub fn card() -> Card {
    let mut blocks = vec![Block::Line(Line::text(
        "gatebot asks you before agents take risky actions.",
    ))];
    blocks.push(Block::List(
        super::commands()
            .iter()
            .filter_map(|c| c.help)
            .map(|(cmd, what)| Line::text(format!("{cmd}: {what}")))
            .collect(),
    ));
    blocks.push(Block::Line(Line::text(
        "<id> is the short id in the prompt, or its first 4+ characters. \
         Replying to a prompt with approve or deny [reason] (a check-in: continue or \
         stop [reason]) needs no id. /approve and /deny answer tier proposals too.",
    )));
    Card {
        blocks,
        fallback: "How to answer gatebot".into(),
        ..Card::default()
    }
}

/// The command list a platform advertises (Telegram's `setMyCommands`): name and
/// description, without the slash.
#[must_use]
pub fn commands() -> Vec<(&'static str, &'static str)> {
    super::commands().iter().map(|c| (c.name, c.menu)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_lists_every_command_that_has_a_line_and_the_menu_every_command() {
        let text = card().plain();
        for c in super::super::commands() {
            match c.help {
                Some((typed, _)) => assert!(text.contains(typed), "{typed} missing:\n{text}"),
                None => assert!(!text.contains(&format!("/{}:", c.name)), "{}", c.name),
            }
            assert!(commands().contains(&(c.name, c.menu)), "{}", c.name);
        }
        assert!(
            text.contains("/resume <name> lifts it"),
            "/resume is on /pause's line"
        );
    }

    #[test]
    fn the_slack_manifest_registers_every_command_but_help() {
        let manifest = include_str!("../../../slack/manifest.yml");
        let mut registered: Vec<&str> = manifest
            .lines()
            .filter_map(|l| l.trim().strip_prefix("- command: /"))
            .collect();
        registered.sort_unstable();
        // `/help` is not registered on Slack: text addressed to gatebot that no kind
        // reads gets the help there (see `written` above).
        let mut want: Vec<&str> = super::super::commands()
            .iter()
            .map(|c| c.name)
            .filter(|n| *n != "help")
            .collect();
        want.sort_unstable();
        assert_eq!(registered, want, "slack/manifest.yml's slash commands");
    }
}
