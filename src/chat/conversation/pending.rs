//! `/pending`: the open requests, oldest first, each with its decision buttons; then
//! the workflow check-ins that wait, each with its buttons ([`super::checkin`]).
//!
//! At most [`SHOWN`] requests and [`super::checkin::PENDING_SHOWN`] check-ins are
//! listed (renderers keep those that fit the platform's limits and count the rest); the
//! line after them says how to reach the others. Who: approvers only.

use crate::approval::Approval;
use crate::chat::card::{Block, Card, Line};
use crate::chat::inbound::Answer;
use crate::chat::text::shorten;
use crate::chat::Context;
use crate::time::clock;

use super::approval;
use crate::chat::failure::failure;

/// Most requests `/pending` lists.
pub const SHOWN: usize = 20;

/// The answer to `/pending`.
pub async fn answer(cx: &Context) -> Answer {
    let (list, total) = match cx.engine.pending_page(SHOWN).await {
        Ok(page) => page,
        Err(e) => return Answer::alert(failure(&e)),
    };
    let waiting = cx
        .engine
        .waiting_check_ins(None, super::checkin::PENDING_SHOWN)
        .await;
    let check_ins = match (waiting, cx.engine.count_waiting_check_ins().await) {
        (Ok(list), Ok(total)) => (list, total),
        (Err(e), _) | (_, Err(e)) => return Answer::alert(failure(&e)),
    };
    let mut card = card(&list, total);
    let (blocks, rows) = super::checkin::pending_section(&check_ins.0, check_ins.1);
    card.blocks.extend(blocks);
    card.buttons.extend(rows);
    Answer::Card(card)
}

/// The list of `list` (the oldest of `total` pending requests).
#[must_use]
pub fn card(list: &[Approval], total: usize) -> Card {
    if list.is_empty() {
        return Card::text("No pending requests.");
    }
    let total = total.max(list.len());
    let items = list
        .iter()
        .map(|a| {
            let expires = a
                .expires_at
                .map(|at| format!(", expires {}", clock(at)))
                .unwrap_or_default();
            Line::default()
                .code(&a.short_id)
                .and(" ")
                .code(shorten(&a.agent, 40))
                .and(" wants ")
                .code(shorten(&a.tool, 60))
                .and(format!(", risk {}{expires}", a.risk.score.as_str()))
        })
        .collect();
    let mut blocks = vec![
        Block::Line(Line::strong(format!("{total} pending request(s)"))),
        Block::List(items),
    ];
    if total > list.len() {
        blocks.push(Block::Line(Line::text(format!(
            "… and {} more: decide these to see the next, or review a digest \
             (gatebot pending lists them all)",
            total - list.len()
        ))));
    }
    blocks.push(Block::Line(
        Line::text("Decide with ")
            .code("/approve <id>")
            .and(" or ")
            .code("/deny <id> [reason]")
            .and("."),
    ));
    Card {
        blocks,
        buttons: list
            .iter()
            .map(|a| approval::buttons(a, &format!(" {}", a.short_id)))
            .collect(),
        hint: None,
        fallback: format!("{total} pending request(s)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_request_gets_a_line_and_a_row_of_buttons() {
        let mut a = approval::sample();
        let mut b = approval::sample();
        b.short_id = "zzzz9999".into();
        b.always_allow_offered = false;
        a.tool = "</code>".into();
        let c = card(&[a, b], 25);
        assert_eq!(c.buttons.len(), 2);
        assert_eq!(
            c.buttons[1].len(),
            2,
            "no always-allow where it cannot apply"
        );
        assert!(c.buttons[1][0].label.ends_with(" zzzz9999"));
        let text = c.plain();
        assert!(text.contains("25 pending request(s)"), "{text}");
        assert!(text.contains("… and 23 more"), "{text}");
        assert_eq!(card(&[], 0), Card::text("No pending requests."));
    }
}
