//! `/pending` (and `/list`): what waits for people, every kind's part in registry
//! order ([`super::Kind::pending`]): the open requests, oldest first, each with its
//! decision buttons ([`super::approval`]); then the workflow check-ins that wait
//! ([`super::checkin`]).
//!
//! Each part lists at most a page (renderers keep what fits the platform's limits and
//! count the rest) and says how to reach the others. Who: approvers only.

use crate::chat::command::Typed;
use crate::chat::exchange::{Actor, Answer, Said};
use crate::chat::Context;

use super::{Never, SlashCommand};
use crate::chat::failure::failure;

/// `/pending`'s kind.
pub struct Pending;

/// `/pending` typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command;

impl super::Kind for Pending {
    type Action = Never;
    type Command = Command;
    const COMMANDS: &'static [SlashCommand] = &[SlashCommand {
        name: "pending",
        menu: "list open requests, check-ins and proposals",
        help: Some((
            "/pending",
            "list open requests, waiting check-ins and tier proposals",
        )),
    }];

    fn parse(typed: &Typed<'_>, _in_reply: bool) -> Option<Command> {
        matches!(typed.name.as_str(), "pending" | "list").then_some(Command)
    }
}

impl super::Run for Command {
    fn attempted(&self) -> String {
        "pending".into()
    }

    async fn run(self, cx: &Context, _actor: &Actor, _said: &Said<'_>) -> Answer {
        answer(cx).await
    }
}

/// The answer to `/pending`: every kind's part, one after the other.
pub async fn answer(cx: &Context) -> Answer {
    let parts = match super::pending_parts(cx).await {
        Ok(parts) => parts,
        Err(e) => return Answer::alert(failure(&e)),
    };
    let mut parts = parts.into_iter();
    let mut card = parts.next().unwrap_or_default();
    for part in parts {
        card.blocks.extend(part.blocks);
        card.buttons.extend(part.buttons);
    }
    Answer::Card(card)
}
