//! The "why deny?" question: after ❌, an approver is asked for a reason that reaches
//! the agent.
//!
//! 1. [`ask`] checks the request is still pending and returns the [`Question`]; the
//!    platform asks it its own way: Telegram sends a message to reply to (recorded in
//!    SQLite, so a reply counts after a restart) and puts "🚫 Deny without reason" in
//!    place of ❌; Slack opens a form.
//! 2. The answer denies with its text as the reason (none if it was empty): the
//!    approval kind takes it ([`super::Approvals`]).
//!    Where the platform could not ask at all, it answers at once without a reason.

use crate::chat::card::{Button, Line, Style};
use crate::chat::exchange::{Answer, Question};
use crate::chat::Context;
use crate::subject::Purpose;

use super::{already_settled, button_data, ButtonKind};
use crate::chat::failure::failure;

/// The question for request `id`, if it is still pending.
pub async fn ask(cx: &Context, id: &str) -> Answer {
    let a = match cx.engine.get(id).await {
        Ok(a) => a,
        Err(e) => return Answer::alert(failure(&e)),
    };
    if a.status.is_settled() {
        return already_settled(&a);
    }
    Answer::Ask(Question {
        subject: a.id.clone(),
        purpose: Purpose::DenyReason,
        title: "Deny request".into(),
        text: Line::text("why deny ")
            .code(&a.short_id)
            .and(" (")
            .code(crate::chat::text::shorten(&a.tool, 60))
            .and(" from ")
            .code(crate::chat::text::shorten(&a.agent, 40))
            .and(")? The reason is sent to the agent."),
        field: "Reason (optional)".into(),
        submit: "Deny".into(),
        skip: Some(
            Button::new(
                "🚫 Deny without reason",
                button_data(ButtonKind::DenyNoReason, &a.id),
            )
            .styled(Style::Danger),
        ),
        asked: "Why deny? Reply to my question, or tap “Deny without reason”.".into(),
        not_asked: format!(
            "Could not open the deny form. Use /deny {} [reason] instead.",
            a.short_id
        ),
    })
}
