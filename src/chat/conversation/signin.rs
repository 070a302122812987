//! `/login`: a sign-in link for the web dashboard, for an approver, in a private chat
//! with the bot only (a link posted in a group could be used by anyone in it). The link
//! opens a page with a Sign in button, so a link preview does not use it up
//! ([`crate::engine::Engine::sign_in_link`]). Who: approvers.

use crate::approval::Via;
use crate::chat::card::{Block, Card, Line};
use crate::chat::command::Typed;
use crate::chat::exchange::{Actor, Answer, Said};
use crate::chat::Context;
use crate::engine::{Conflict, EngineError};

use super::{Never, SlashCommand};

/// `/login`'s kind.
pub struct SignIn;

/// `/login` typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command;

impl super::Kind for SignIn {
    type Action = Never;
    type Command = Command;
    const COMMANDS: &'static [SlashCommand] = &[SlashCommand {
        name: "login",
        menu: "a sign-in link for the web dashboard (in a private chat with me)",
        help: Some((
            "/login",
            "a sign-in link for the web dashboard, in a private chat with me",
        )),
    }];

    fn parse(typed: &Typed<'_>, _in_reply: bool) -> Option<Command> {
        (typed.name == "login").then_some(Command)
    }

    #[cfg(test)]
    fn example_cards() -> Vec<Card> {
        vec![card(
            "https://gate.example.com/login/".to_string() + &"f".repeat(64),
            "in 10 min",
        )]
    }
}

impl super::Run for Command {
    fn attempted(&self) -> String {
        "login".into()
    }

    async fn run(self, cx: &Context, actor: &Actor, said: &Said<'_>) -> Answer {
        if !said.private {
            return Answer::note(
                "Send /login to me in a private chat: a sign-in link posted here could be \
                 used by anyone who sees it.",
            );
        }
        let via = Via::Chat(cx.platform.clone());
        let identity = format!("{}:{}", cx.platform.as_str(), actor.id);
        match cx
            .engine
            .sign_in_link(&actor.label(), via, Some(identity))
            .await
        {
            Ok(link) => Answer::Card(card(
                link.url,
                &crate::words::relative(link.expires_at, crate::time::now_ms()),
            )),
            Err(EngineError::Conflict(Conflict::DashboardOff)) => Answer::note(
                "The web dashboard is off: an owner turns it on with `listen` in the \
                 [dashboard] table of bot.toml.",
            ),
            Err(e) => Answer::alert(crate::chat::failure::failure(&e)),
        }
    }
}

/// The link, and what to do with it.
fn card(url: String, expires: &str) -> Card {
    Card {
        blocks: vec![
            Block::Line(Line::text("Your sign-in link for gatebot's dashboard:")),
            Block::Line(Line::text(url)),
            Block::Line(Line::text(format!(
                "Open it and press Sign in. It signs you in once and expires {expires}; \
                 don't share it."
            ))),
        ],
        fallback: "A sign-in link for gatebot's dashboard".into(),
        ..Card::default()
    }
}
