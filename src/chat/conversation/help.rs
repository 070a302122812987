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
    ("/pending", "list open requests and waiting check-ins"),
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
         stop [reason]) needs no id.",
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
        ("pending", "list open requests and waiting check-ins"),
        ("continue", "<id> [note] — let a workflow go on"),
        ("stop", "<id> [reason] — stop a workflow at its check-in"),
        ("review", "<id> — the warnings and errors of a check-in"),
        ("task", "<words> — hand an agent a task"),
        ("tasks", "list open tasks"),
        ("help", "how to answer gatebot"),
    ]
}
