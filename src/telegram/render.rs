//! Telegram markup: HTML escaping, prompt text and keyboards.
//!
//! Prompts use `parse_mode = HTML`. Everything an agent supplied (agent and tool
//! names, summary, arguments) is escaped and shown inside `<code>`/`<pre>` blocks under
//! a label saying it comes from the agent, so a summary containing "Risk: low" or
//! `</code>` renders as literal text inside the block and cannot pass for gatebot's own
//! lines. Replies to commands are sent as plain text (no parse mode at all).

use teloxide::types::{InlineKeyboardButton, InlineKeyboardMarkup};

use crate::approval::{Approval, Status};
use crate::channel::command::{encode_button, Button};
use crate::channel::digest::{self, encode_nav, DigestView, Nav};
use crate::channel::prompt::{self, PromptContent};
use crate::time::clock;

/// Telegram's limit on a message's text, in UTF-16 code units after entity parsing.
pub const MAX_MESSAGE: usize = 4096;
/// Room kept for the outcome line added when the prompt is edited after a decision.
const OUTCOME_ROOM: usize = 600;
/// Most of a summary shown, in UTF-16 units of its escaped form.
const SUMMARY_ROOM: usize = 1200;

/// Escapes text for Telegram's HTML parse mode (element content).
#[must_use]
pub fn escape(s: &str) -> String {
    crate::channel::prompt::escape_markup(s)
}

/// Escapes text for an HTML attribute value (adds `"`).
#[must_use]
pub fn escape_attr(s: &str) -> String {
    escape(s).replace('"', "&quot;")
}

fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// The longest prefix of `s`, in characters, whose escaped form fits `room` UTF-16 units.
fn fitting_chars(s: &str, room: usize) -> usize {
    let mut used = 0;
    for (n, c) in s.chars().enumerate() {
        let w = match c {
            '&' => 5,
            '<' | '>' => 4,
            c => c.len_utf16(),
        };
        if used + w > room {
            return n;
        }
        used += w;
    }
    s.chars().count()
}

/// The prompt's body (without buttons or outcome), fitting Telegram's limit with room
/// left for the outcome line.
#[must_use]
pub fn prompt_body(a: &Approval) -> String {
    let c = prompt::content(a, usize::MAX);
    let mut head = header(&c, a.status == Status::Pending);
    if let Some(summary) = &c.summary {
        let keep = fitting_chars(summary, SUMMARY_ROOM);
        let (kept, note) = prompt::truncate(summary, keep);
        head.push_str("\n\n<b>Summary from the agent:</b>\n<pre>");
        head.push_str(&escape(&kept));
        head.push_str("</pre>");
        if note.is_some() {
            head.push_str("\n<i>(summary shortened)</i>");
        }
    }
    head.push_str("\n\n<b>Arguments from the agent:</b>\n");
    // The note is at most ~100 characters; keep 160 for it and the tags.
    let room = MAX_MESSAGE
        .saturating_sub(OUTCOME_ROOM)
        .saturating_sub(utf16_len(&head))
        .saturating_sub(160);
    let keep = fitting_chars(&c.args, room);
    let (args, note) = prompt::truncate(&c.args, keep);
    head.push_str("<pre><code class=\"language-json\">");
    head.push_str(&escape(&args));
    head.push_str("</code></pre>");
    if let Some(note) = note {
        head.push_str("\n<i>");
        head.push_str(&escape(&note));
        head.push_str("</i>");
    }
    head
}

fn header(c: &PromptContent, pending: bool) -> String {
    let mut s = format!(
        "🛡 <b>gatebot: approval needed</b>  ·  id <code>{}</code>\n\
         <b>Agent:</b> <code>{}</code>\n\
         <b>Tool:</b> <code>{}</code>\n\
         <b>Risk:</b> <b>{}</b> ({})\n\
         <b>Why asking:</b> {}",
        escape(&c.short_id),
        escape(&c.agent),
        escape(&c.tool),
        escape(&c.risk.to_uppercase()),
        escape(&c.risk_detail),
        escape(&c.reason),
    );
    if let (true, Some(exp)) = (pending, &c.expires) {
        s.push_str(&format!("\n<b>Expires:</b> {}", escape(exp)));
    }
    s
}

/// The prompt as first posted: body, and how to answer by text.
#[must_use]
pub fn prompt_text(a: &Approval) -> String {
    format!(
        "{}\n\nTap a button, or reply to this message with <code>approve</code> or <code>deny [reason]</code>.",
        prompt_body(a)
    )
}

/// The prompt once settled: body plus the outcome line (no buttons).
#[must_use]
pub fn final_text(a: &Approval) -> String {
    let line = prompt::outcome_line(a);
    let keep = fitting_chars(&line, OUTCOME_ROOM - 10);
    let (line, _) = prompt::truncate(&line, keep);
    format!("{}\n\n<b>{}</b>", prompt_body(a), escape(&line))
}

/// ✅ Allow once · ♾️ Always allow (where it applies) · ❌ Deny.
#[must_use]
pub fn prompt_keyboard(a: &Approval) -> InlineKeyboardMarkup {
    InlineKeyboardMarkup::new([buttons(a, "")])
}

fn buttons(a: &Approval, suffix: &str) -> Vec<InlineKeyboardButton> {
    let mut row = vec![InlineKeyboardButton::callback(
        format!("✅ Allow once{suffix}"),
        encode_button(Button::Approve, &a.id),
    )];
    if a.always_allow_offered {
        row.push(InlineKeyboardButton::callback(
            format!("♾️ Always allow{suffix}"),
            encode_button(Button::ApproveAlways, &a.id),
        ));
    }
    row.push(InlineKeyboardButton::callback(
        format!("❌ Deny{suffix}"),
        encode_button(Button::Deny, &a.id),
    ));
    row
}

/// Most requests `/pending` lists with buttons.
pub const PENDING_SHOWN: usize = 20;

/// `/pending`: one line per request, one row of buttons per request, for the oldest
/// [`PENDING_SHOWN`] of `total` pending requests.
#[must_use]
pub fn pending(list: &[Approval], total: usize) -> (String, InlineKeyboardMarkup) {
    if list.is_empty() {
        return (
            "No pending requests.".into(),
            InlineKeyboardMarkup::default(),
        );
    }
    let total = total.max(list.len());
    let mut text = format!("<b>{total} pending request(s)</b>");
    let mut rows = Vec::new();
    for a in list.iter().take(PENDING_SHOWN) {
        let expires = a.expires_at.map(clock).unwrap_or_default();
        text.push_str(&format!(
            "\n<code>{}</code>  <code>{}</code> · <code>{}</code> · risk {} · expires {}",
            escape(&a.short_id),
            escape(&prompt::truncate(&a.agent, 40).0),
            escape(&prompt::truncate(&a.tool, 60).0),
            escape(a.risk.score.as_str()),
            escape(&expires),
        ));
        rows.push(buttons(a, &format!(" {}", a.short_id)));
    }
    let shown = list.len().min(PENDING_SHOWN);
    if total > shown {
        text.push_str(&format!(
            "\n… and {} more: decide these to see the next, or review a digest \
             (gatebot pending lists them all)",
            total - shown
        ));
    }
    (text, InlineKeyboardMarkup::new(rows))
}

/// A digest message: its text and buttons (see [`digest`]).
#[must_use]
pub fn digest(view: &DigestView) -> (String, InlineKeyboardMarkup) {
    let s = view.summary();
    let groups = || {
        digest::group_lines(s)
            .iter()
            .map(|l| format!("\n• {}", escape(l)))
            .collect::<String>()
    };
    match view {
        DigestView::Summary(_) => {
            let mut text = format!(
                "{}\n<b>{}</b>\nThey arrived too fast to post one by one.{}",
                "📥 <b>gatebot digest</b>",
                escape(&digest::title(s)),
                groups()
            );
            if let Some(at) = s.next_expiry {
                text.push_str(&format!("\n<b>Next expiry:</b> {}", escape(&clock(at))));
            }
            text.push_str("\n\nReview them here one by one, or use /pending.");
            let review =
                InlineKeyboardButton::callback("📋 Review one by one", encode_nav(&Nav::Review));
            (text, InlineKeyboardMarkup::new([[review]]))
        }
        DigestView::Review {
            approval, position, ..
        } => {
            let text = format!(
                "📥 <b>gatebot digest</b> · request {position} of {} · {} pending\n\n{}\n\n\
                 Tap a button, or reply to this message with <code>approve</code> or <code>deny [reason]</code>.",
                s.total,
                s.pending,
                prompt_body(approval)
            );
            let nav = vec![
                InlineKeyboardButton::callback(
                    "⏭ Next",
                    encode_nav(&Nav::Next(approval.id.clone())),
                ),
                InlineKeyboardButton::callback("📋 Summary", encode_nav(&Nav::Summary)),
            ];
            (
                text,
                InlineKeyboardMarkup::new([buttons(approval, ""), nav]),
            )
        }
        DigestView::Closed(_) => (
            format!(
                "📥 <b>gatebot digest</b>\n<b>{}</b>: {}.{}",
                escape(&digest::title(s)),
                escape(&digest::tally(s)),
                groups()
            ),
            InlineKeyboardMarkup::default(),
        ),
    }
}

/// After ❌: the same keyboard with that request's ❌ Deny replaced by "Deny without reason".
#[must_use]
pub fn with_deny_without_reason(kb: &InlineKeyboardMarkup, id: &str) -> InlineKeyboardMarkup {
    use teloxide::types::InlineKeyboardButtonKind;
    let deny = encode_button(Button::Deny, id);
    let rows = kb
        .inline_keyboard
        .iter()
        .map(|row| {
            row.iter()
                .map(|b| match &b.kind {
                    InlineKeyboardButtonKind::CallbackData(d) if *d == deny => {
                        InlineKeyboardButton::callback(
                            b.text.replace("❌ Deny", "🚫 Deny without reason"),
                            encode_button(Button::DenyNoReason, id),
                        )
                    }
                    _ => b.clone(),
                })
                .collect::<Vec<_>>()
        })
        .collect::<Vec<_>>();
    InlineKeyboardMarkup::new(rows)
}

/// The question sent (as a ForceReply, HTML) after ❌. It mentions the approver, so a
/// selective ForceReply reaches them in a group.
#[must_use]
pub fn reason_question(a: &Approval, approver: &teloxide::types::User) -> String {
    format!(
        "<a href=\"tg://user?id={}\">{}</a>, why deny <code>{}</code> (<code>{}</code> from <code>{}</code>)? \
         Reply to this message with a reason; it reaches the agent. \
         Or tap “Deny without reason” on the prompt.",
        approver.id.0,
        escape(&prompt::truncate(&approver.full_name(), 60).0),
        escape(&a.short_id),
        escape(&prompt::truncate(&a.tool, 60).0),
        escape(&prompt::truncate(&a.agent, 40).0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn approval(args: serde_json::Value, summary: Option<&str>) -> Approval {
        Approval {
            args,
            summary: summary.map(str::to_string),
            ..crate::channel::prompt::sample_approval()
        }
    }

    #[test]
    fn escaping_covers_html_specials() {
        assert_eq!(escape("a<b>&</code>"), "a&lt;b&gt;&amp;&lt;/code&gt;");
        assert_eq!(escape_attr("\"x\"&"), "&quot;x&quot;&amp;");
    }

    #[test]
    fn hostile_agent_text_stays_inside_its_block() {
        let a = approval(
            json!({"body": "</code></pre><b>Risk: low</b>\nRisk: low & safe"}),
            Some("</pre>Risk: low<b>"),
        );
        let t = prompt_text(&a);
        assert!(!t.contains("<b>Risk: low"), "{t}");
        assert!(t.contains("&lt;/code&gt;&lt;/pre&gt;&lt;b&gt;Risk: low&lt;/b&gt;"));
        assert!(t.contains("<pre>&lt;/pre&gt;Risk: low&lt;b&gt;</pre>"));
        // Our tags balance: the agent added none.
        assert_eq!(t.matches("<pre>").count(), 2, "{t}");
        assert_eq!(t.matches("</pre>").count(), 2, "{t}");
    }

    #[test]
    fn long_arguments_are_cut_to_fit_with_a_note() {
        let a = approval(
            json!({"body": "&<".repeat(10_000)}),
            Some(&"é".repeat(2000)),
        );
        let t = final_text(&a);
        assert!(utf16_len(&t) <= MAX_MESSAGE, "{}", utf16_len(&t));
        assert!(t.contains("more characters of arguments not shown"));
        assert!(t.contains("summary shortened"));
    }

    #[test]
    fn always_allow_is_offered_only_where_it_applies() {
        let mut a = approval(json!({}), None);
        assert_eq!(prompt_keyboard(&a).inline_keyboard[0].len(), 3);
        a.always_allow_offered = false;
        let kb = prompt_keyboard(&a);
        assert_eq!(kb.inline_keyboard[0].len(), 2);
        let swapped = with_deny_without_reason(&kb, &a.id);
        assert!(swapped.inline_keyboard[0][1]
            .text
            .contains("without reason"));
    }
}
