//! Grants in chat: what owners allowed agents to run without asking, and revoking it.
//! No cards of its own: every answer is a message.
//!
//! - `/grants [NAME]`: the grants in force (of one agent, or all), each with who
//!   granted it, when, why and until when, and a 🗑 Revoke button (`gb1:Gr:<grant id>`).
//! - `/revoke ID`: revoke a grant by its short id (or a prefix of 4+ characters).
//! - Who: approvers only.

use crate::chat::card::{Block, Button, Card, Line, Style};
use crate::chat::command::{first_word, Typed};
use crate::chat::exchange::{Actor, Answer, At, Said};
use crate::chat::text::shorten;
use crate::chat::Context;
use crate::engine::EngineError;
use crate::time::clock;
use crate::trust::{Actor as TrustActor, Grant, Scope};

use super::full_id;
use super::SlashCommand;
#[cfg(test)]
use super::EXAMPLE_ID;
use crate::chat::failure::failure;

/// Most grants `/grants` lists with buttons.
pub const SHOWN: usize = 20;

/// Grants' kind.
pub struct Grants;

impl super::Kind for Grants {
    type Action = Action;
    type Command = Command;
    const COMMANDS: &'static [SlashCommand] = &[
        SlashCommand {
            name: "grants",
            menu: "[name] — what agents may run without asking",
            help: Some((
                "/grants [name]",
                "what agents may run without asking, with Revoke buttons",
            )),
        },
        SlashCommand {
            name: "revoke",
            menu: "<id> — revoke a grant",
            help: Some(("/revoke <id>", "revoke a grant")),
        },
    ];

    fn parse(typed: &Typed<'_>, _in_reply: bool) -> Option<Command> {
        parse(typed)
    }
}

impl super::Press for Action {
    fn decode(data: &str) -> Option<Action> {
        let id = data.strip_prefix("Gr:")?;
        full_id(id).map(|id| Action { id })
    }

    fn encode(&self) -> String {
        format!("Gr:{}", self.id)
    }

    fn attempted(&self) -> String {
        "revoke grant".into()
    }

    async fn press(self, cx: &Context, actor: &Actor, _at: &At) -> Answer {
        revoke(cx, actor, &self.id).await
    }

    #[cfg(test)]
    fn examples() -> Vec<Action> {
        vec![Action {
            id: EXAMPLE_ID.into(),
        }]
    }
}

impl super::Run for Command {
    fn attempted(&self) -> String {
        Command::attempted(self)
    }

    async fn run(self, cx: &Context, actor: &Actor, _said: &Said<'_>) -> Answer {
        match self {
            Command::List(agent) => list(cx, agent).await,
            Command::Revoke(None) => {
                Answer::note("Usage: /revoke ID (the grant's id from /grants)")
            }
            Command::Revoke(Some(id)) => revoke(cx, actor, &id).await,
        }
    }
}

/// A press on a grant's 🗑 Revoke button: the grant's full id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    pub id: String,
}

/// The button data of a grant's 🗑 Revoke button.
#[must_use]
pub fn button_data(id: &str) -> String {
    super::Action::Grants(Action { id: id.to_string() }).encode()
}

/// A typed grants command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    List(Option<String>),
    Revoke(Option<String>),
}

impl Command {
    #[must_use]
    pub fn attempted(&self) -> String {
        match self {
            Command::List(_) => "grants".into(),
            Command::Revoke(id) => format!("revoke grant {}", id.as_deref().unwrap_or("")),
        }
    }
}

/// `/grants [NAME]`, `/revoke ID`; `None` for other names.
#[must_use]
pub fn parse(typed: &Typed<'_>) -> Option<Command> {
    match typed.name.as_str() {
        "grants" => Some(Command::List(first_word(typed.args))),
        "revoke" => Some(Command::Revoke(first_word(typed.args))),
        _ => None,
    }
}

/// What a grant covers, in words: "the whole tool", "exactly `ls -la`", …
fn scope_line(line: Line, scope: &Scope) -> Line {
    match scope {
        Scope::Tool => line.and("the whole tool"),
        Scope::Exact(c) => line.and("exactly ").code(shorten(c, 200)),
        Scope::Prefix(p) => line.and("commands starting ").code(shorten(p, 200)),
        Scope::Call(args) => line
            .and("exactly the call with arguments ")
            .code(shorten(args, 200)),
    }
}

/// One grant as a list line: id, agent, tool, scope, who, when, until.
#[must_use]
pub fn grant_line(g: &Grant) -> Line {
    let line = Line::default()
        .code(&g.short_id)
        .and(" ")
        .code(shorten(&g.agent, 40))
        .and(" may run ")
        .code(shorten(&g.tool, 60))
        .and(": ");
    let mut line = scope_line(line, &g.scope).and(format!(
        " · by {} {}",
        shorten(&g.by.label(), 80),
        clock(g.created_at)
    ));
    if let Some(n) = g.uses_left {
        line = line.and(if n == 1 {
            " · once".to_string()
        } else {
            format!(" · {n} more times")
        });
    }
    line = match g.expires_at {
        Some(at) => line.and(format!(" · until {}", clock(at))),
        None => line.and(" · until revoked"),
    };
    if let Some(r) = &g.reason {
        line = line.and(format!(" · {}", shorten(r, 120)));
    }
    line
}

async fn revoke(cx: &Context, actor: &Actor, typed: &str) -> Answer {
    let who = TrustActor {
        name: actor.label(),
        via: cx.via(),
    };
    match cx.engine.revoke_grant(typed, who).await {
        Ok(g) => {
            let line = Line::text(format!("🗑 Revoked grant {}: ", g.short_id))
                .code(shorten(&g.agent, 40))
                .and(" asks again before running ")
                .code(shorten(&g.tool, 60))
                .and(" (");
            Answer::Done(Card {
                blocks: vec![Block::Line(scope_line(line, &g.scope).and(")."))],
                fallback: format!("Grant {} revoked", g.short_id),
                ..Card::default()
            })
        }
        Err(EngineError::NotFound { id: t, .. }) => Answer::alert(format!(
            "No grant matches `{}`. /grants lists them.",
            shorten(&t, 64)
        )),
        Err(e) => Answer::alert(failure(&e)),
    }
}

async fn list(cx: &Context, agent: Option<String>) -> Answer {
    let grants = match cx.engine.grants(agent.clone(), false).await {
        Ok(g) => g,
        Err(e) => return Answer::alert(failure(&e)),
    };
    if grants.is_empty() {
        return Answer::note(match agent {
            Some(a) => format!("{} has no grants in force.", shorten(&a, 64)),
            None => "No grants in force.".into(),
        });
    }
    let shown = &grants[..grants.len().min(SHOWN)];
    let mut blocks = vec![
        Block::Line(Line::strong(format!("{} grant(s) in force", grants.len()))),
        Block::List(shown.iter().map(grant_line).collect()),
    ];
    if grants.len() > shown.len() {
        blocks.push(Block::Line(Line::text(format!(
            "… and {} more: gatebot grants lists them all.",
            grants.len() - shown.len()
        ))));
    }
    Answer::Card(Card {
        blocks,
        buttons: shown
            .iter()
            .map(|g| {
                vec![
                    Button::new(format!("🗑 Revoke {}", g.short_id), button_data(&g.id))
                        .styled(Style::Danger),
                ]
            })
            .collect(),
        hint: None,
        fallback: format!("{} grant(s) in force", grants.len()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::Via;
    use crate::chat::command;
    use crate::chat::conversation::{Action as AnyAction, MAX_DATA};

    #[test]
    fn commands_and_buttons_parse() {
        let p = |t: &str| parse(&command::parse(t, None).unwrap());
        assert_eq!(p("/grants"), Some(Command::List(None)));
        assert_eq!(
            p("/grants mailer"),
            Some(Command::List(Some("mailer".into())))
        );
        assert_eq!(
            p("/revoke k7m2"),
            Some(Command::Revoke(Some("k7m2".into())))
        );
        assert_eq!(p("/revoke"), Some(Command::Revoke(None)));
        assert_eq!(p("/pending"), None);
        let id = "01JD3X4Y5Z6A7B8C9D0E1F2G3H";
        let data = button_data(id);
        assert!(data.len() <= MAX_DATA);
        assert_eq!(
            AnyAction::decode(&data).unwrap(),
            AnyAction::Grants(Action { id: id.into() })
        );
        assert!(AnyAction::decode("gb1:Gr:k7m2abcd").is_err());
    }

    #[test]
    fn a_grant_line_says_what_who_when_and_until() {
        let g = Grant {
            id: "01JD3X4Y5Z6A7B8C9D0E1F2G3H".into(),
            short_id: "g7m2abcd".into(),
            agent: "coder".into(),
            tool: "Bash".into(),
            scope: Scope::Prefix("git status".into()),
            by: TrustActor {
                name: "alice".into(),
                via: Via::Cli,
            },
            reason: Some("Always allow on request k7m2abcd".into()),
            approval: None,
            created_at: 0,
            expires_at: Some(3_600_000),
            revoked: None,
            max_risk: crate::policy::RiskScore::Medium,
            uses_left: None,
        };
        assert_eq!(
            grant_line(&g).plain(),
            "g7m2abcd coder may run Bash: commands starting git status · by alice on the command line \
             1970-01-01 00:00 UTC · until 1970-01-01 01:00 UTC · Always allow on request k7m2abcd"
        );
    }
}
