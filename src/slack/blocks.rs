//! Block Kit messages and mrkdwn escaping.
//!
//! Everything an agent controls (agent and tool names, summary, arguments, reasons)
//! passes through [`escape`], so it can never form a mention (`<!channel>`, `<@U…>`)
//! or a link (`<https://…|…>`). Free text that could imitate gatebot's own formatting
//! (a summary saying "*Risk:* low") goes into code blocks, where mrkdwn is not applied.

use serde_json::{json, Value};

use crate::approval::{Approval, Status};
use crate::channel::command::{encode_button, Button};
use crate::channel::handle::Reply;
use crate::channel::prompt::{self, PromptContent};

/// Slack's limit on a section's text, in characters.
pub const MAX_SECTION_CHARS: usize = 3000;
/// Room left for the arguments inside their section (label, fences, note).
const MAX_ARGS_CHARS: usize = MAX_SECTION_CHARS - 200;
/// Room for the summary inside its section.
const MAX_SUMMARY_CHARS: usize = MAX_SECTION_CHARS - 100;

/// The modal's `callback_id`, so a `view_submission` is recognised as ours.
pub const DENY_MODAL: &str = "gatebot_deny";
/// The reason input's `block_id` and `action_id`.
pub const REASON_FIELD: &str = "reason";

/// Escapes the three characters Slack treats as markup: `&`, `<`, `>`.
#[must_use]
pub fn escape(s: &str) -> String {
    crate::channel::prompt::escape_markup(s)
}

/// Escaped text for inside a ``` block: a fence in the text is broken up so it cannot
/// close the block early (a zero-width space between the backticks).
#[must_use]
pub fn code_block(s: &str) -> String {
    let body = escape(s).replace("```", "`\u{200b}`\u{200b}`");
    format!("```{body}```")
}

/// Escaped text for inside `inline code`: backticks would end it, so they become `'`.
#[must_use]
pub fn inline_code(s: &str) -> String {
    let body = escape(s).replace('`', "'");
    let body = body.replace('\n', " ");
    format!("`{body}`")
}

/// Escapes `raw` and cuts it so the escaped text is at most `max` characters, never
/// inside an entity. The note says how much was cut.
#[must_use]
pub fn fit_escaped(raw: &str, max: usize) -> (String, Option<String>) {
    let mut out = String::new();
    let mut used = 0;
    let mut kept = 0;
    for c in raw.chars() {
        let piece = escape(c.encode_utf8(&mut [0; 4]));
        let n = piece.chars().count();
        if used + n > max {
            break;
        }
        out.push_str(&piece);
        used += n;
        kept += 1;
    }
    let total = raw.chars().count();
    let note = (kept < total).then(|| {
        format!(
            "… {} more characters not shown (full text: gatebot status)",
            total - kept
        )
    });
    (out, note)
}

fn mrkdwn(text: String) -> Value {
    json!({"type": "section", "text": {"type": "mrkdwn", "text": text}})
}

fn button(label: &str, b: Button, id: &str, style: Option<&str>) -> Value {
    let data = encode_button(b, id);
    let mut v = json!({
        "type": "button",
        "text": {"type": "plain_text", "text": label, "emoji": true},
        "action_id": data,
        "value": data,
    });
    if let Some(s) = style {
        v["style"] = json!(s);
    }
    v
}

/// The body of a prompt, shared by the pending and the settled forms.
fn body(a: &Approval, c: &PromptContent) -> Vec<Value> {
    let mut head = format!(
        "*Approval needed* · id `{}`\n*Agent:* {}   *Tool:* {}\n*Risk:* {} ({})\n*Why:* {}",
        escape(&c.short_id),
        escape(&c.agent),
        inline_code(&c.tool),
        escape(&c.risk),
        escape(&c.risk_detail),
        escape(&c.reason),
    );
    if let Some(e) = c.expires.as_ref().filter(|_| a.status == Status::Pending) {
        head.push_str(&format!("\n*Expires:* {}", escape(e)));
    }
    let mut blocks = vec![mrkdwn(head)];
    if let Some(s) = &c.summary {
        let (text, note) = fit_escaped(s, MAX_SUMMARY_CHARS);
        let mut t = format!("*Summary:*\n{}", code_block_escaped(&text));
        if let Some(n) = note {
            t.push_str(&format!("\n_{}_", escape(&n)));
        }
        blocks.push(mrkdwn(t));
    }
    let pretty = serde_json::to_string_pretty(&a.args).unwrap_or_else(|_| a.args.to_string());
    let (args, note) = fit_escaped(&pretty, MAX_ARGS_CHARS);
    let mut t = format!("*Arguments:*\n{}", code_block_escaped(&args));
    if let Some(n) = note {
        t.push_str(&format!("\n_{}_", escape(&n)));
    }
    blocks.push(mrkdwn(t));
    blocks
}

/// A ``` block around text that is already escaped.
fn code_block_escaped(escaped: &str) -> String {
    format!("```{}```", escaped.replace("```", "`\u{200b}`\u{200b}`"))
}

/// The prompt for a pending request: blocks with buttons, and the plain `text` fallback
/// (used in notifications).
#[must_use]
pub fn prompt(a: &Approval) -> (String, Vec<Value>) {
    let c = prompt::content(a, usize::MAX);
    let mut blocks = body(a, &c);
    let mut buttons = vec![button(
        "✅ Allow once",
        Button::Approve,
        &a.id,
        Some("primary"),
    )];
    if c.always_allow_offered {
        buttons.push(button(
            "♾️ Always allow",
            Button::ApproveAlways,
            &a.id,
            None,
        ));
    }
    buttons.push(button("❌ Deny", Button::Deny, &a.id, Some("danger")));
    blocks.push(json!({"type": "actions", "block_id": "gatebot_decide", "elements": buttons}));
    blocks.push(
        json!({"type": "context", "elements": [{"type": "mrkdwn", "text": format!(
            "Reply in this thread with `approve` or `deny <reason>`, or use `/approve {}`.",
            escape(&c.short_id)
        )}]}),
    );
    (fallback(a, &c), blocks)
}

/// The prompt once the request is settled: no buttons, the outcome instead.
#[must_use]
pub fn settled(a: &Approval) -> (String, Vec<Value>) {
    let c = prompt::content(a, usize::MAX);
    let outcome = prompt::outcome_line(a);
    let mut blocks = body(a, &c);
    // The head said "Approval needed"; say what happened instead.
    if let Some(t) = blocks[0]["text"]["text"].as_str() {
        let t = t.replacen("*Approval needed*", "*Request*", 1);
        blocks[0]["text"]["text"] = json!(t);
    }
    blocks.push(mrkdwn(format!("*{}*", escape(&outcome))));
    let text = format!(
        "{} · {} wants {} ({})",
        escape(&outcome),
        escape(&c.agent),
        escape(&c.tool),
        escape(&c.short_id)
    );
    (text, blocks)
}

fn fallback(a: &Approval, c: &PromptContent) -> String {
    let status = if a.status == Status::Pending {
        "Approval needed"
    } else {
        a.status.as_str()
    };
    format!(
        "{status}: {} wants to run {} (risk {}, id {})",
        escape(&c.agent),
        escape(&c.tool),
        escape(&c.risk),
        escape(&c.short_id)
    )
}

/// The deny modal: an optional reason; `private_metadata` carries the request id
/// and the channel to answer in.
#[must_use]
pub fn deny_modal(a: &Approval, channel: &str) -> Value {
    json!({
        "type": "modal",
        "callback_id": DENY_MODAL,
        "private_metadata": json!({"id": a.id, "channel": channel}).to_string(),
        "title": {"type": "plain_text", "text": "Deny request"},
        "submit": {"type": "plain_text", "text": "Deny"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            mrkdwn(format!(
                "Deny {} from {} (id `{}`)? The reason is sent to the agent.",
                inline_code(&a.tool), escape(&a.agent), escape(&a.short_id)
            )),
            {
                "type": "input",
                "block_id": REASON_FIELD,
                "optional": true,
                "label": {"type": "plain_text", "text": "Reason (optional)"},
                "element": {
                    "type": "plain_text_input",
                    "action_id": REASON_FIELD,
                    "multiline": true,
                    "max_length": 1000
                }
            }
        ]
    })
}

/// A reply to a command as escaped mrkdwn text.
#[must_use]
pub fn reply_text(reply: &Reply) -> String {
    match reply {
        Reply::Pending(list) if !list.is_empty() => {
            let mut lines = vec![format!("*{} pending request(s):*", list.len())];
            for a in list {
                let c = prompt::content(a, 0);
                lines.push(format!(
                    "• `{}` {} wants {}, risk {}{}",
                    escape(&a.short_id),
                    escape(&a.agent),
                    inline_code(&a.tool),
                    escape(&c.risk),
                    c.expires
                        .map(|e| format!(", expires {}", escape(&e)))
                        .unwrap_or_default()
                ));
            }
            lines.push("Decide with `/approve <id>` or `/deny <id> [reason]`.".into());
            let (text, _) = prompt::truncate(&lines.join("\n"), MAX_SECTION_CHARS);
            text
        }
        other => escape(&other.text()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_characters_are_escaped() {
        assert_eq!(
            escape("<!channel> <@U123> <https://evil|click> & co"),
            "&lt;!channel&gt; &lt;@U123&gt; &lt;https://evil|click&gt; &amp; co"
        );
    }

    #[test]
    fn a_fence_in_the_text_cannot_close_the_code_block() {
        let b = code_block("a```*Risk:* low```b");
        assert!(b.starts_with("```") && b.ends_with("```"));
        assert_eq!(b.matches("```").count(), 2, "{b}");
    }

    #[test]
    fn inline_code_cannot_be_closed_early() {
        assert_eq!(inline_code("a`b<c>"), "`a'b&lt;c&gt;`");
    }

    #[test]
    fn fitting_never_cuts_an_entity_and_counts_what_was_cut() {
        let (s, note) = fit_escaped("a&b", 3);
        assert_eq!(s, "a");
        assert!(note.unwrap().starts_with("… 2 more characters"));
        let (s, note) = fit_escaped("a&b", 7);
        assert_eq!(s, "a&amp;b");
        assert!(note.is_none());
    }
}
