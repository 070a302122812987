//! Block Kit messages and mrkdwn escaping.
//!
//! 1. Everything an agent controls (agent and tool names, summary, arguments, result
//!    details) passes through [`escape`], so it can never form a mention (`<!channel>`,
//!    `<@U…>`) or a link (`<https://…|…>`).
//! 2. Every mrkdwn text object is sent with `"verbatim": true`, so Slack does not
//!    auto-link bare URLs or channel names, nor parse `@here`-style words, in it.
//! 3. Agent and tool names go in `inline code`, summaries and arguments in ``` blocks,
//!    so agent text cannot imitate gatebot's own lines ("*Risk:* low").
//! 4. The plain `text` fallback of each message (shown in notifications) carries no
//!    agent text at all: only gatebot's words, the short id and the risk.
//! 5. Each text object is cut after all escaping, so it stays within Slack's
//!    3000-character limit whatever the agent sent (`&` becomes five characters, a
//!    ``` fence five); a note says how much was cut.

use serde_json::{json, Value};

use crate::approval::{Approval, Status};
use crate::channel::command::{encode_button, Button};
use crate::channel::handle::Reply;
use crate::channel::prompt::{self, PromptContent};

/// Slack's limit on a text object, in characters. gatebot measures UTF-16 units (never
/// fewer than characters), so the limit holds however Slack counts.
pub const MAX_TEXT: usize = 3000;
/// Slack's limit on blocks per message.
pub const MAX_BLOCKS: usize = 50;
/// Room kept for a "… N more characters of … not shown" note.
const NOTE_ROOM: usize = 150;

/// The modal's `callback_id`, so a `view_submission` is recognised as ours.
pub const DENY_MODAL: &str = "gatebot_deny";
/// The reason input's `block_id` and `action_id`.
pub const REASON_FIELD: &str = "reason";

/// Escapes the three characters Slack treats as markup: `&`, `<`, `>`.
#[must_use]
pub fn escape(s: &str) -> String {
    prompt::escape_markup(s)
}

/// The length Slack's limits are checked against (see [`MAX_TEXT`]).
#[must_use]
pub fn text_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// Escaped text inside a ``` block. A fence in the text is broken up (zero-width
/// spaces between the backticks) so it cannot close the block early, and a backtick at
/// either end is kept apart from the block's own fence.
#[must_use]
pub fn code_block(s: &str) -> String {
    let mut body = escape(s).replace("```", "`\u{200b}`\u{200b}`");
    if body.starts_with('`') {
        body.insert(0, '\u{200b}');
    }
    if body.ends_with('`') {
        body.push('\u{200b}');
    }
    format!("```{body}```")
}

/// Escaped text for inside `inline code`: backticks would end it, so they become `'`.
#[must_use]
pub fn inline_code(s: &str) -> String {
    let body = escape(s).replace('`', "'");
    let body = body.replace('\n', " ");
    format!("`{body}`")
}

/// `label` followed by `render(raw)`, with `raw` cut so that the whole text, measured
/// after rendering (escaping, fences) and with the note, fits [`MAX_TEXT`].
fn fitted(label: &str, raw: &str, what: &str, render: impl Fn(&str) -> String) -> String {
    let whole = format!("{label}{}", render(raw));
    if text_len(&whole) <= MAX_TEXT {
        return whole;
    }
    let room = MAX_TEXT.saturating_sub(text_len(label) + NOTE_ROOM);
    let (kept, note) = prompt::fit(raw, what, |p| text_len(&render(p)) <= room);
    let mut text = format!("{label}{}", render(&kept));
    if let Some(n) = note {
        text.push_str(&format!("\n_{}_", escape(&n)));
    }
    text
}

/// A mrkdwn text object that Slack shows as sent: no auto-links, no mention parsing.
fn mrkdwn(text: String) -> Value {
    json!({"type": "mrkdwn", "text": text, "verbatim": true})
}

fn section(text: String) -> Value {
    json!({"type": "section", "text": mrkdwn(text)})
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
fn body(a: &Approval, c: &PromptContent, title: &str) -> Vec<Value> {
    let mut head = format!(
        "*{title}* · id `{}`\n*Agent:* {}   *Tool:* {}\n*Risk:* {} ({})",
        escape(&c.short_id),
        inline_code(&c.agent),
        inline_code(&c.tool),
        escape(&c.risk),
        escape(&c.risk_detail),
    );
    if let Some(e) = c.expires.as_ref().filter(|_| a.status == Status::Pending) {
        head.push_str(&format!("\n*Expires:* {}", escape(e)));
    }
    // The policy's reason names the tool: cut it, not gatebot's lines, if need be.
    head.push_str("\n*Why:* ");
    let mut blocks = vec![section(fitted(&head, &c.reason, "the reason", escape))];
    if let Some(s) = &c.summary {
        blocks.push(section(fitted(
            "*Summary from the agent:*\n",
            s,
            "the summary",
            code_block,
        )));
    }
    blocks.push(section(fitted(
        "*Arguments from the agent:*\n",
        &c.args,
        "arguments",
        code_block,
    )));
    blocks
}

/// The prompt for a pending request: blocks with buttons, and the plain `text` fallback
/// (used in notifications).
#[must_use]
pub fn prompt(a: &Approval) -> (String, Vec<Value>) {
    let c = prompt::content(a, usize::MAX);
    let mut blocks = body(a, &c, "Approval needed");
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
    blocks.push(json!({"type": "context", "elements": [mrkdwn(format!(
        "Reply in this thread with `approve` or `deny &lt;reason&gt;`, or use `/approve {}`.",
        escape(&c.short_id)
    ))]}));
    (fallback(a, &c), blocks)
}

/// The prompt once the request is settled: no buttons, the outcome instead.
#[must_use]
pub fn settled(a: &Approval) -> (String, Vec<Value>) {
    let c = prompt::content(a, usize::MAX);
    let mut blocks = body(a, &c, "Request");
    // The outcome carries the approver's reason or the agent's result detail, which
    // may be long: cut it, or chat.update fails and the buttons stay.
    let outcome = prompt::outcome_line(a).replace('\n', " ");
    blocks.push(section(fitted("", &outcome, "the outcome", |s| {
        format!("*{}*", escape(s))
    })));
    (fallback(a, &c), blocks)
}

/// The `text` fallback: gatebot's words only, never the agent's.
fn fallback(a: &Approval, c: &PromptContent) -> String {
    format!(
        "{}: request {} (risk {})",
        status_word(a.status),
        c.short_id,
        c.risk
    )
}

fn status_word(s: Status) -> &'static str {
    match s {
        Status::Pending => "⏳ Approval needed",
        Status::Approved | Status::Executing | Status::Succeeded => "✅ Approved",
        Status::Failed => "✅ Approved, then failed",
        Status::Rejected => "❌ Denied",
        Status::Expired => "⌛ Expired",
        Status::Cancelled => "🚫 Cancelled",
        Status::Allowed => "✅ Allowed by policy",
        Status::Blocked => "⛔ Blocked by policy",
    }
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
            section(format!(
                "Deny {} from {} (id `{}`)? The reason is sent to the agent.",
                inline_code(&a.tool), inline_code(&a.agent), escape(&a.short_id)
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

/// A reply to a command or click: the `text` fallback (no agent text) and the blocks
/// that show it.
#[must_use]
pub fn reply(reply: &Reply) -> (String, Vec<Value>) {
    let text = match reply {
        Reply::Pending(list) if !list.is_empty() => pending(list),
        other => fitted("", &other.text(), "the answer", escape),
    };
    (reply_fallback(reply), vec![section(text)])
}

fn reply_fallback(reply: &Reply) -> String {
    match reply {
        Reply::Decided(_, a) => format!("{}: request {}", status_word(a.status), a.short_id),
        Reply::AlreadySettled(_, a) => format!(
            "Request {} was already settled ({})",
            a.short_id,
            status_word(a.status)
        ),
        Reply::Pending(list) if list.is_empty() => "No pending requests.".into(),
        Reply::Pending(list) => format!("{} pending request(s)", list.len()),
        // gatebot's own words, and ids the user typed.
        Reply::Text(t) | Reply::NotAllowed(t) => fitted("", t, "the answer", escape),
    }
}

/// `/pending`: one line per request, as many as fit.
fn pending(list: &[Approval]) -> String {
    let mut text = format!("*{} pending request(s):*", list.len());
    let last = "\nDecide with `/approve &lt;id&gt;` or `/deny &lt;id&gt; [reason]`.";
    for (shown, a) in list.iter().enumerate() {
        let c = prompt::content(a, 0);
        let line = format!(
            "\n• `{}` {} wants {}, risk {}{}",
            escape(&a.short_id),
            inline_code(&a.agent),
            inline_code(&a.tool),
            escape(&c.risk),
            c.expires
                .map(|e| format!(", expires {}", escape(&e)))
                .unwrap_or_default()
        );
        if text_len(&text) + text_len(&line) + text_len(last) + NOTE_ROOM > MAX_TEXT {
            text.push_str(&format!(
                "\n… and {} more (`gatebot pending` lists them all)",
                list.len() - shown
            ));
            break;
        }
        text.push_str(&line);
    }
    text.push_str(last);
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::Channel;
    use crate::channel::prompt::sample_approval;

    /// Every text object in `blocks` (sections, context elements, buttons, modal parts).
    fn text_objects(v: &Value, out: &mut Vec<Value>) {
        match v {
            Value::Object(m) => {
                if m.get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| t == "mrkdwn" || t == "plain_text")
                    && m.get("text").is_some_and(Value::is_string)
                {
                    out.push(v.clone());
                }
                m.values().for_each(|x| text_objects(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| text_objects(x, out)),
            _ => {}
        }
    }

    /// Checks Slack's limits on a message and returns its text objects.
    fn within_limits(text: &str, blocks: &[Value]) -> Vec<Value> {
        assert!(blocks.len() <= MAX_BLOCKS);
        assert!(text_len(text) <= MAX_TEXT, "fallback {}", text_len(text));
        let mut objects = Vec::new();
        text_objects(&Value::Array(blocks.to_vec()), &mut objects);
        for o in &objects {
            let t = o["text"].as_str().unwrap();
            assert!(
                text_len(t) <= MAX_TEXT,
                "{} characters: {}…",
                text_len(t),
                t.chars().take(80).collect::<String>()
            );
            if o["type"] == "mrkdwn" {
                assert_eq!(o["verbatim"], true, "{o}");
            } else {
                assert!(text_len(t) <= 75, "a button label: {t}");
            }
        }
        objects
    }

    fn maximal(summary: &str, args_char: &str) -> Approval {
        let mut a = sample_approval();
        // MAX_SUMMARY_CHARS, and arguments as large as a request body may be.
        a.summary = Some(summary.repeat(crate::wire::MAX_SUMMARY_CHARS / summary.chars().count()));
        a.args = json!({"body": args_char.repeat(64 * 1024 / args_char.len())});
        a.tool = "&".repeat(crate::wire::MAX_TOOL_LEN);
        a
    }

    #[test]
    fn maximal_backticks_and_markup_fit_every_text_object() {
        for (summary, args) in [
            ("`", "`"),
            ("&<>", "&"),
            ("<", ">"),
            ("`\u{1F600}", "\u{1F600}"),
        ] {
            let mut a = maximal(summary, args);
            let (text, blocks) = prompt(&a);
            let objects = within_limits(&text, &blocks);
            let all: String = objects.iter().map(|o| o["text"].to_string()).collect();
            assert!(
                all.contains("more characters of arguments not shown"),
                "{all}"
            );
            assert!(
                all.contains("more characters of the summary not shown"),
                "{all}"
            );
            a.status = Status::Failed;
            a.decided_by = Some("alice".into());
            a.decided_via = Some(Channel::Cli);
            a.decided_at = Some(0);
            a.result_detail = Some(summary.repeat(20_000));
            let (text, blocks) = settled(&a);
            let objects = within_limits(&text, &blocks);
            let outcome = objects.last().unwrap()["text"]
                .as_str()
                .unwrap()
                .to_string();
            assert!(
                outcome.starts_with("*✅ Approved by alice (CLI)"),
                "{outcome}"
            );
            assert!(outcome.contains("more characters of the outcome not shown"));
        }
    }

    #[test]
    fn a_cut_never_splits_an_entity_or_a_fence() {
        let mut a = sample_approval();
        a.summary = Some("a```".repeat(500));
        a.args = json!("&".repeat(5000));
        let (_, blocks) = prompt(&a);
        for b in &blocks[1..3] {
            let t = b["text"]["text"].as_str().unwrap();
            let code = &t[t.find("```").unwrap()..t.rfind("```").unwrap() + 3];
            assert_eq!(code.matches("```").count(), 2, "{code}");
            let inner = &code[3..code.len() - 3];
            assert!(
                inner.replace("&amp;", "").chars().all(|c| c != '&'),
                "{inner}"
            );
        }
    }

    #[test]
    fn a_long_deny_reason_is_cut_with_a_note() {
        let mut a = sample_approval();
        a.status = Status::Rejected;
        a.decided_by = Some("alice".into());
        a.decided_via = Some(Channel::Slack);
        a.decided_at = Some(0);
        a.decision_reason = Some("<no> ".repeat(5000));
        let (text, blocks) = settled(&a);
        within_limits(&text, &blocks);
        let outcome = blocks.last().unwrap()["text"]["text"].as_str().unwrap();
        assert!(outcome.starts_with("*❌ Denied by alice (Slack) 1970-01-01 00:00 UTC: &lt;no&gt;"));
        assert!(outcome
            .ends_with("more characters of the outcome not shown (full text: gatebot status)_"));
        assert_eq!(text, "❌ Denied: request k7m2abcd (risk high)");
    }

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
        let b = code_block("`x`");
        assert_eq!(b, "```\u{200b}`x`\u{200b}```");
    }

    #[test]
    fn inline_code_cannot_be_closed_early() {
        assert_eq!(inline_code("a`b<c>"), "`a'b&lt;c&gt;`");
    }

    #[test]
    fn fallbacks_and_replies_carry_no_agent_text() {
        let mut a = sample_approval();
        a.tool = "@here <!channel> https://evil.example".into();
        a.summary = Some("@channel".into());
        let (text, _) = prompt(&a);
        assert_eq!(text, "⏳ Approval needed: request k7m2abcd (risk high)");
        let decided = Reply::Decided(format!("✅ Approved ({})", a.tool), Box::new(a.clone()));
        let (text, blocks) = reply(&decided);
        assert!(!text.contains("evil") && !text.contains('@'), "{text}");
        let shown = within_limits(&text, &blocks);
        let shown = shown[0]["text"].as_str().unwrap();
        assert!(
            shown.contains("&lt;!channel&gt;") && !shown.contains('<'),
            "{shown}"
        );
    }

    #[test]
    fn a_long_pending_list_is_cut_by_whole_lines() {
        let list: Vec<Approval> = (0..200)
            .map(|i| {
                let mut a = sample_approval();
                a.short_id = format!("id{i:06}");
                a.tool = "&".repeat(100);
                a
            })
            .collect();
        let (text, blocks) = reply(&Reply::Pending(list));
        assert_eq!(text, "200 pending request(s)");
        let objects = within_limits(&text, &blocks);
        let t = objects[0]["text"].as_str().unwrap();
        assert!(t.contains("more (`gatebot pending` lists them all)"), "{t}");
        assert!(t.ends_with("[reason]`."));
    }
}
