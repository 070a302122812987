//! Agent management in chat: what owners see and do about an agent's trust from their
//! phone. No cards of its own: every answer is a message ([`Answer::Card`]).
//!
//! - `/agents`: every agent, its tier in force (and where it comes from), pause,
//!   pending requests and evidence; per agent ⏸ Pause, ⛔ Pause + deny pending (the
//!   kill switch: two taps from the command menu) or ▶️ Resume.
//! - `/agent NAME`: one agent in full (evidence over all time and the rolling window,
//!   the assessment, grants, an open proposal), with the same buttons and 🔎 Assess.
//! - `/tier NAME TIER [reason]`, `/tier NAME reset`: set the agent's tier, or return it
//!   to `bot.toml`'s.
//! - `/pause NAME [reason]` (the answer offers ❌ Deny N pending), `/resume NAME`.
//! - `/assess NAME`: run the assessment now (an eligible agent gets a proposal card).
//! - Buttons name the agent by its handle (a ULID kept in SQLite), so they fit in 64
//!   bytes whatever the name: `gb1:Tp:<handle>` pause, `gb1:Td:<handle>` pause and deny
//!   pending, `gb1:Tr:<handle>` resume, `gb1:Ta:<handle>` assess; `gb1:Tx:<pause id>`
//!   denies the pending requests of that pause, if it is still in force.
//! - Who: approvers only.

use crate::chat::card::{Block, Button, Card, Field, Line, Style, Tag};
use crate::chat::command::Typed;
use crate::chat::exchange::{Actor, Answer, At, Said};
use crate::chat::text::shorten;
use crate::chat::Context;
use crate::engine::EngineError;
use crate::names::valid_agent_name;
use crate::policy::Tier;
use crate::time::clock;
use crate::trust::view::AgentView;
use crate::trust::Actor as TrustActor;

use super::full_id;
use super::SlashCommand;
#[cfg(test)]
use super::EXAMPLE_ID;
use crate::chat::failure::failure;

/// Most agents `/agents` lists with buttons.
pub const SHOWN: usize = 20;

/// Agent management's kind.
pub struct Agents;

impl super::Kind for Agents {
    type Action = Action;
    type Command = Command;
    const COMMANDS: &'static [SlashCommand] = &[
        SlashCommand {
            name: "agents",
            menu: "agents' tiers, pauses and evidence",
            help: Some((
                "/agents",
                "every agent's tier, pause and evidence, with ⏸ Pause buttons",
            )),
        },
        SlashCommand {
            name: "agent",
            menu: "<name> — one agent's evidence and grants",
            help: Some(("/agent <name>", "one agent: evidence, assessment, grants")),
        },
        SlashCommand {
            name: "tier",
            menu: "<name> <tier>|reset [reason] — set an agent's tier",
            help: Some((
                "/tier <name> <tier> [reason]",
                "set an agent's tier (or /tier <name> reset for bot.toml's)",
            )),
        },
        SlashCommand {
            name: "pause",
            menu: "<name> [reason] — block an agent's requests",
            help: Some((
                "/pause <name> [reason]",
                "block every new request of an agent; /resume <name> lifts it",
            )),
        },
        SlashCommand {
            name: "resume",
            menu: "<name> — lift an agent's pause",
            help: None,
        },
        SlashCommand {
            name: "assess",
            menu: "<name> — check an agent for a tier change",
            help: Some((
                "/assess <name>",
                "check an agent's evidence for a tier change now",
            )),
        },
    ];

    fn parse(typed: &Typed<'_>, _in_reply: bool) -> Option<Command> {
        parse(typed)
    }
}

impl super::Press for Action {
    fn decode(data: &str) -> Option<Action> {
        let (code, id) = data.split_once(':')?;
        let button = ButtonKind::ALL.into_iter().find(|b| b.code() == code)?;
        full_id(id).map(|id| Action { button, id })
    }

    fn encode(&self) -> String {
        format!("{}:{}", self.button.code(), self.id)
    }

    fn attempted(&self) -> String {
        Action::attempted(self).into()
    }

    async fn press(self, cx: &Context, actor: &Actor, _at: &At) -> Answer {
        press(cx, actor, self).await
    }

    #[cfg(test)]
    fn examples() -> Vec<Action> {
        ButtonKind::ALL
            .into_iter()
            .map(|button| Action {
                button,
                id: EXAMPLE_ID.into(),
            })
            .collect()
    }
}

impl super::Run for Command {
    fn attempted(&self) -> String {
        Command::attempted(self)
    }

    async fn run(self, cx: &Context, actor: &Actor, _said: &Said<'_>) -> Answer {
        command(cx, actor, self).await
    }
}

/// A press on an agent button.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    pub button: ButtonKind,
    /// The agent's handle, or for [`ButtonKind::DenyPending`] the pause's id.
    pub id: String,
}

/// Which agent button.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ButtonKind {
    Pause,
    PauseAndDeny,
    Resume,
    Assess,
    /// Deny the pending requests of a pause (its id), if it is still in force.
    DenyPending,
}

impl ButtonKind {
    pub const ALL: [ButtonKind; 5] = [
        ButtonKind::Pause,
        ButtonKind::PauseAndDeny,
        ButtonKind::Resume,
        ButtonKind::Assess,
        ButtonKind::DenyPending,
    ];

    fn code(self) -> &'static str {
        match self {
            ButtonKind::Pause => "Tp",
            ButtonKind::PauseAndDeny => "Td",
            ButtonKind::Resume => "Tr",
            ButtonKind::Assess => "Ta",
            ButtonKind::DenyPending => "Tx",
        }
    }
}

/// What a refusal's audit row says was tried.
impl Action {
    #[must_use]
    pub fn attempted(&self) -> &'static str {
        match self.button {
            ButtonKind::Pause => "pause agent",
            ButtonKind::PauseAndDeny => "pause agent and deny pending",
            ButtonKind::Resume => "resume agent",
            ButtonKind::Assess => "assess agent",
            ButtonKind::DenyPending => "deny pending of paused agent",
        }
    }
}

/// The button data for `button` on `id` (a handle, or a pause id).
#[must_use]
pub fn button_data(button: ButtonKind, id: &str) -> String {
    super::Action::Agents(Action {
        button,
        id: id.to_string(),
    })
    .encode()
}

/// A typed agent command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    List,
    Show(String),
    /// `None`: back to the config's tier.
    Tier {
        agent: String,
        tier: Option<Tier>,
        reason: Option<String>,
    },
    Pause {
        agent: String,
        reason: Option<String>,
    },
    Resume(String),
    Assess(String),
    /// A command of this kind typed wrongly: how to type it.
    Usage(&'static str),
}

impl Command {
    /// What a refusal's audit row says was tried.
    #[must_use]
    pub fn attempted(&self) -> String {
        match self {
            Command::List => "agents".into(),
            Command::Show(a) => format!("agent {a}"),
            Command::Tier { agent, .. } => format!("tier {agent}"),
            Command::Pause { agent, .. } => format!("pause {agent}"),
            Command::Resume(a) => format!("resume {a}"),
            Command::Assess(a) => format!("assess {a}"),
            Command::Usage(u) => (*u).into(),
        }
    }
}

const TIER_USAGE: &str =
    "/tier NAME TIER [reason] (draft_only, supervised, semi_autonomous, autonomous), or /tier NAME reset";

/// `/agents`, `/agent`, `/tier`, `/pause`, `/resume`, `/assess`; `None` for other names.
#[must_use]
pub fn parse(typed: &Typed<'_>) -> Option<Command> {
    let mut words = typed.args.split_whitespace();
    let agent = words.next().map(str::to_string);
    let rest = |after: usize| -> Option<String> {
        let t: Vec<&str> = typed.args.split_whitespace().skip(after).collect();
        Some(t.join(" ")).filter(|s| !s.is_empty())
    };
    Some(match (typed.name.as_str(), agent) {
        ("agents", _) => Command::List,
        ("agent", Some(a)) => Command::Show(a),
        ("agent", None) => Command::Usage("/agent NAME"),
        ("tier", Some(a)) => match words.next() {
            Some(t) if t.eq_ignore_ascii_case("reset") => Command::Tier {
                agent: a,
                tier: None,
                reason: rest(2),
            },
            Some(t) => match serde_json::from_value::<Tier>(serde_json::Value::String(
                t.to_ascii_lowercase().replace('-', "_"),
            )) {
                Ok(tier) => Command::Tier {
                    agent: a,
                    tier: Some(tier),
                    reason: rest(2),
                },
                Err(_) => Command::Usage(TIER_USAGE),
            },
            None => Command::Usage(TIER_USAGE),
        },
        ("tier", None) => Command::Usage(TIER_USAGE),
        ("pause", Some(a)) => Command::Pause {
            agent: a,
            reason: rest(1),
        },
        ("pause", None) => Command::Usage("/pause NAME [reason]"),
        ("resume", Some(a)) => Command::Resume(a),
        ("resume", None) => Command::Usage("/resume NAME"),
        ("assess", Some(a)) => Command::Assess(a),
        ("assess", None) => Command::Usage("/assess NAME"),
        _ => return None,
    })
}

fn trust_actor(cx: &Context, actor: &Actor) -> TrustActor {
    TrustActor {
        name: actor.label(),
        via: cx.via(),
    }
}

/// What to tell someone whose agent command failed.
fn failed(e: &EngineError) -> Answer {
    match e {
        EngineError::UnknownAgent(a) => Answer::alert(format!(
            "No agent `{}` in the config. /agents lists them.",
            shorten(a, 64)
        )),
        // A button whose agent handle is not in the database (forged, or another
        // database's): it names nobody.
        EngineError::NotFound { .. } => {
            Answer::alert("This button names no agent gatebot knows. Use /agents for fresh ones.")
        }
        other => Answer::alert(failure(other)),
    }
}

/// Runs a typed agent command by an approver.
async fn command(cx: &Context, actor: &Actor, cmd: Command) -> Answer {
    let who = trust_actor(cx, actor);
    match cmd {
        Command::Usage(u) => Answer::note(format!("Usage: {u}")),
        Command::List => list(cx).await,
        Command::Show(a) => show(cx, &a).await,
        Command::Tier {
            agent,
            tier,
            reason,
        } => {
            if !valid_agent_name(&agent) {
                return failed(&EngineError::UnknownAgent(agent));
            }
            match cx.engine.set_tier(&agent, tier, who, reason).await {
                Ok(change) => {
                    let from = change
                        .before
                        .as_ref()
                        .map(|o| o.tier)
                        .or_else(|| cx.engine.config().agent(&agent).map(|c| c.rules.tier));
                    let now = match &change.after {
                        Some(o) => format!("{} (set by {})", o.tier.words(), o.by.label()),
                        None => format!(
                            "{} (as bot.toml sets it)",
                            cx.engine
                                .config()
                                .agent(&agent)
                                .map_or("?", |c| c.rules.tier.words())
                        ),
                    };
                    let mut line = Line::text("🎚 ").code(&agent).and(format!(" is now {now}"));
                    if let Some(from) = from {
                        line = line.and(format!("; it was {}", from.words()));
                    }
                    Answer::Done(Card {
                        blocks: vec![Block::Line(line.and("."))],
                        fallback: "Tier changed".into(),
                        ..Card::default()
                    })
                }
                Err(e) => failed(&e),
            }
        }
        Command::Pause { agent, reason } => pause(cx, &agent, who, reason, false).await,
        Command::Resume(agent) => resume(cx, &agent, who).await,
        Command::Assess(agent) => assess(cx, &agent).await,
    }
}

/// Runs a press on an agent button by an approver.
async fn press(cx: &Context, actor: &Actor, a: Action) -> Answer {
    let who = trust_actor(cx, actor);
    if a.button == ButtonKind::DenyPending {
        return match cx.engine.deny_pending_of_pause(&a.id, who).await {
            Ok(o) => Answer::Done(Card::text(format!(
                "❌ Denied {} pending request(s) of {}.",
                o.denied.len(),
                o.pause.agent
            ))),
            Err(EngineError::NotFound { .. }) => {
                Answer::alert("That pause is over (the agent was resumed); nothing was denied.")
            }
            Err(e) => failed(&e),
        };
    }
    let agent = match cx.engine.agent_of_handle(&a.id).await {
        Ok(agent) => agent,
        Err(e) => return failed(&e),
    };
    match a.button {
        ButtonKind::Pause => pause(cx, &agent, who, None, false).await,
        ButtonKind::PauseAndDeny => pause(cx, &agent, who, None, true).await,
        ButtonKind::Resume => resume(cx, &agent, who).await,
        ButtonKind::Assess => assess(cx, &agent).await,
        ButtonKind::DenyPending => unreachable!("handled above"),
    }
}

async fn pause(
    cx: &Context,
    agent: &str,
    who: TrustActor,
    reason: Option<String>,
    deny_pending: bool,
) -> Answer {
    if !valid_agent_name(agent) {
        return failed(&EngineError::UnknownAgent(agent.to_string()));
    }
    let o = match cx.engine.pause(agent, who, reason, deny_pending).await {
        Ok(o) => o,
        Err(e) => return failed(&e),
    };
    let mut line = Line::text("⏸ ").code(agent).and(format!(
        " {}{}.",
        if o.new { "is " } else { "was already " },
        o.pause.describe()
    ));
    if !o.denied.is_empty() {
        line = line.and(format!(" Denied {} pending request(s).", o.denied.len()));
    }
    let mut card = Card {
        blocks: vec![Block::Line(line)],
        fallback: format!("Agent paused: {} pending", o.pending),
        ..Card::default()
    };
    if o.pending > 0 {
        card.blocks.push(Block::Line(Line::text(format!(
            "{} request(s) of it are still pending; new ones are blocked.",
            o.pending
        ))));
        card.buttons = vec![vec![Button::new(
            format!("❌ Deny {} pending", o.pending),
            button_data(ButtonKind::DenyPending, &o.pause.id),
        )
        .styled(Style::Danger)]];
    }
    Answer::Card(card)
}

async fn resume(cx: &Context, agent: &str, who: TrustActor) -> Answer {
    match cx.engine.resume(agent, who).await {
        Ok(Some(p)) => Answer::Done(Card {
            blocks: vec![Block::Line(
                Line::text("▶️ ")
                    .code(agent)
                    .and(format!(" is running again (it was {}).", p.describe())),
            )],
            fallback: "Agent resumed".into(),
            ..Card::default()
        }),
        Ok(None) => Answer::note(format!("{} is not paused.", shorten(agent, 64))),
        Err(e) => failed(&e),
    }
}

async fn assess(cx: &Context, agent: &str) -> Answer {
    if !valid_agent_name(agent) {
        return failed(&EngineError::UnknownAgent(agent.to_string()));
    }
    match cx.engine.assess(agent).await {
        Ok(o) => Answer::Card(Card {
            blocks: vec![
                Block::Line(Line::text("🔎 Assessment of ").code(agent)),
                Block::Line(Line::text(shorten(&o.note, 800))),
            ],
            fallback: "Assessment".into(),
            ..Card::default()
        }),
        Err(e) => failed(&e),
    }
}

/// The buttons for one agent: pause (and pause + deny pending) or resume.
async fn buttons(cx: &Context, v: &AgentView, label: bool) -> Result<Vec<Button>, EngineError> {
    let handle = cx.engine.agent_handle(&v.agent).await?;
    let name = if label {
        format!(" {}", shorten(&v.agent, 20))
    } else {
        String::new()
    };
    Ok(if v.pause.is_some() {
        vec![Button::new(
            format!("▶️ Resume{name}"),
            button_data(ButtonKind::Resume, &handle),
        )]
    } else {
        let mut row = vec![Button::new(
            format!("⏸ Pause{name}"),
            button_data(ButtonKind::Pause, &handle),
        )];
        if v.pending > 0 {
            row.push(
                Button::new(
                    format!("⛔ Pause{name} + deny {}", v.pending),
                    button_data(ButtonKind::PauseAndDeny, &handle),
                )
                .styled(Style::Danger),
            );
        }
        row
    })
}

async fn list(cx: &Context) -> Answer {
    let views = match cx.engine.agent_views().await {
        Ok(v) => v,
        Err(e) => return failed(&e),
    };
    if views.is_empty() {
        return Answer::note("No agents are configured.");
    }
    let mut items = Vec::new();
    let mut rows = Vec::new();
    for v in &views {
        let mut line = Line::default()
            .code(shorten(&v.agent, 40))
            .and(format!(" {}", v.tier_said()));
        if v.pause.is_some() {
            line = line.and(" · ⏸ paused");
        }
        line = line.and(format!(
            " · {} pending · {} · {} grant(s)",
            v.pending,
            v.evidence.measures.brief(),
            v.grants.len()
        ));
        if let Some(p) = &v.proposal {
            line = line.and(" · proposal ").code(&p.short_id);
        }
        items.push(line);
        if rows.len() < SHOWN {
            match buttons(cx, v, true).await {
                Ok(row) => rows.push(row),
                Err(e) => return failed(&e),
            }
        }
    }
    let mut blocks = vec![
        Block::Line(Line::strong(format!("{} agent(s)", views.len()))),
        Block::List(items),
    ];
    blocks.push(Block::Line(
        Line::text("Details: ")
            .code("/agent NAME")
            .and(" · tier: ")
            .code("/tier NAME TIER")
            .and(" · grants: ")
            .code("/grants"),
    ));
    Answer::Card(Card {
        blocks,
        buttons: rows,
        hint: None,
        fallback: format!("{} agent(s)", views.len()),
    })
}

/// One agent in full, as `/agent NAME` shows it: its tier and pause, what it has
/// pending, its evidence, the assessment, and an open proposal.
fn agent_fields(v: &AgentView) -> Vec<Field> {
    let mut fields = vec![Field::new("Tier", Line::text(v.tier_said()))];
    if let Some(o) = &v.tier_override {
        let mut since = format!("set {}", clock(o.at));
        if let Some(r) = &o.reason {
            since.push_str(": ");
            since.push_str(r);
        }
        fields.push(Field::new("Tier set", Line::text(shorten(&since, 300))));
    }
    fields.push(Field::new(
        "Paused",
        Line::text(
            v.pause
                .as_ref()
                .map_or_else(|| "no".to_string(), |p| shorten(&p.describe(), 300)),
        ),
    ));
    fields.push(Field::new("Pending", Line::text(v.pending.to_string())));
    fields.push(Field::new(
        "All time",
        Line::text(v.evidence.all_time.words()),
    ));
    fields.push(Field::new(
        format!("Last {}", crate::words::config_span(&v.evidence.window)),
        Line::text(v.evidence.recent.words()),
    ));
    fields.extend(
        v.evidence
            .measures
            .figures()
            .into_iter()
            .map(|(label, words)| Field::new(label, Line::text(words))),
    );
    fields.push(Field::new(
        "Assessment",
        Line::text(shorten(&v.assessment.reason, 600)),
    ));
    if let Some(d) = &v.demotion {
        fields.push(Field::new("Denials", Line::text(shorten(&d.reason, 300))));
    }
    if let Some(p) = &v.proposal {
        fields.push(Field::new(
            "Proposal",
            Line::default()
                .code(&p.short_id)
                .and(format!(" {}", p.question())),
        ));
    }
    fields
}

async fn show(cx: &Context, agent: &str) -> Answer {
    if !valid_agent_name(agent) {
        return failed(&EngineError::UnknownAgent(agent.to_string()));
    }
    let v = match cx.engine.agent_view(agent).await {
        Ok(v) => v,
        Err(e) => return failed(&e),
    };
    let fields = agent_fields(&v);
    let mut blocks = vec![
        Block::Heading {
            icon: "🤖",
            title: "gatebot: agent".into(),
            tag: Some(Tag::Label(Line::default().code(shorten(agent, 64)))),
        },
        Block::Fields(fields),
    ];
    if !v.grants.is_empty() {
        blocks.push(Block::Line(Line::strong(format!(
            "{} grant(s) in force",
            v.grants.len()
        ))));
        blocks.push(Block::List(
            v.grants.iter().map(super::grants::grant_line).collect(),
        ));
    }
    let mut row = match buttons(cx, &v, false).await {
        Ok(row) => row,
        Err(e) => return failed(&e),
    };
    match cx.engine.agent_handle(agent).await {
        Ok(handle) => row.push(Button::new(
            "🔎 Assess now",
            button_data(ButtonKind::Assess, &handle),
        )),
        Err(e) => return failed(&e),
    }
    Answer::Card(Card {
        blocks,
        buttons: vec![row],
        hint: None,
        fallback: "Agent".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::command;
    use crate::chat::conversation::{Action as AnyAction, MAX_DATA};

    fn parsed(text: &str) -> Option<Command> {
        parse(&command::parse(text, None).unwrap())
    }

    #[test]
    fn commands_parse_with_their_arguments() {
        let cases: &[(&str, Option<Command>)] = &[
            ("/agents", Some(Command::List)),
            ("/agent mailer", Some(Command::Show("mailer".into()))),
            ("/agent", Some(Command::Usage("/agent NAME"))),
            (
                "/tier mailer autonomous earned it",
                Some(Command::Tier {
                    agent: "mailer".into(),
                    tier: Some(Tier::Autonomous),
                    reason: Some("earned it".into()),
                }),
            ),
            (
                "/tier mailer Semi-Autonomous",
                Some(Command::Tier {
                    agent: "mailer".into(),
                    tier: Some(Tier::SemiAutonomous),
                    reason: None,
                }),
            ),
            (
                "/tier mailer reset",
                Some(Command::Tier {
                    agent: "mailer".into(),
                    tier: None,
                    reason: None,
                }),
            ),
            ("/tier mailer godmode", Some(Command::Usage(TIER_USAGE))),
            ("/tier", Some(Command::Usage(TIER_USAGE))),
            (
                "/pause mailer runaway  loop",
                Some(Command::Pause {
                    agent: "mailer".into(),
                    reason: Some("runaway loop".into()),
                }),
            ),
            (
                "/pause mailer",
                Some(Command::Pause {
                    agent: "mailer".into(),
                    reason: None,
                }),
            ),
            ("/resume mailer", Some(Command::Resume("mailer".into()))),
            ("/assess mailer", Some(Command::Assess("mailer".into()))),
            ("/approve k7m2", None),
        ];
        for (text, want) in cases {
            assert_eq!(&parsed(text), want, "{text}");
        }
    }

    #[test]
    fn buttons_round_trip_within_64_bytes() {
        let id = "01JD3X4Y5Z6A7B8C9D0E1F2G3H";
        for button in [
            ButtonKind::Pause,
            ButtonKind::PauseAndDeny,
            ButtonKind::Resume,
            ButtonKind::Assess,
            ButtonKind::DenyPending,
        ] {
            let data = button_data(button, id);
            assert!(data.len() <= MAX_DATA);
            assert_eq!(
                AnyAction::decode(&data).unwrap(),
                AnyAction::Agents(Action {
                    button,
                    id: id.into()
                })
            );
        }
        assert!(AnyAction::decode("gb1:Tp:mailer").is_err());
    }
}
