//! `/help` (and `/start`): how to answer gatebot. Who: anyone.

use crate::chat::card::{Block, Card, Line};
use crate::chat::inbound::Answer;

/// The help text.
pub const HELP: &[(&str, &str)] = &[
    ("/approve <id>", "allow a request once"),
    (
        "/approve_always <id>",
        "allow it and this tool for this agent from now on",
    ),
    (
        "/deny <id> [reason]",
        "refuse it; the reason reaches the agent",
    ),
    (
        "/pending",
        "list open requests, waiting check-ins and tier proposals",
    ),
    (
        "/continue <id> [note]",
        "let a workflow go on after its check-in",
    ),
    (
        "/stop <id> [reason]",
        "stop a workflow at its check-in; the reason reaches the agent",
    ),
    ("/review <id>", "every warning and error a check-in shows"),
    (
        "/task <words>",
        "hand an agent a task (in a private chat with me, plain text does too)",
    ),
    ("/tasks", "list open tasks"),
    (
        "/agents",
        "every agent's tier, pause and evidence, with ⏸ Pause buttons",
    ),
    ("/agent <name>", "one agent: evidence, assessment, grants"),
    (
        "/tier <name> <tier> [reason]",
        "set an agent's tier (or /tier <name> reset for bot.toml's)",
    ),
    (
        "/pause <name> [reason]",
        "block every new request of an agent; /resume <name> lifts it",
    ),
    (
        "/assess <name>",
        "check an agent's evidence for a tier change now",
    ),
    (
        "/grants [name]",
        "what agents may run without asking, with Revoke buttons",
    ),
    ("/revoke <id>", "revoke a grant"),
];

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
        HELP.iter()
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
    vec![
        ("approve", "<id> — allow a request once"),
        (
            "approve_always",
            "<id> — allow it, and this tool for this agent from now on",
        ),
        ("deny", "<id> [reason] — refuse a request"),
        ("pending", "list open requests, check-ins and proposals"),
        ("continue", "<id> [note] — let a workflow go on"),
        ("stop", "<id> [reason] — stop a workflow at its check-in"),
        ("review", "<id> — the warnings and errors of a check-in"),
        ("task", "<words> — hand an agent a task"),
        ("tasks", "list open tasks"),
        ("agents", "agents' tiers, pauses and evidence"),
        ("agent", "<name> — one agent's evidence and grants"),
        ("tier", "<name> <tier>|reset [reason] — set an agent's tier"),
        ("pause", "<name> [reason] — block an agent's requests"),
        ("resume", "<name> — lift an agent's pause"),
        ("assess", "<name> — check an agent for a tier change"),
        ("grants", "[name] — what agents may run without asking"),
        ("revoke", "<id> — revoke a grant"),
        ("help", "how to answer gatebot"),
    ]
}
