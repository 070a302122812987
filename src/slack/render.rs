//! Cards as Block Kit, and mrkdwn escaping.
//!
//! 1. Every string of a card passes through [`escape`], so agent text can never form a
//!    mention (`<!channel>`, `<@U…>`) or a link (`<https://…|…>`).
//! 2. Every mrkdwn text object is sent with `"verbatim": true`, so Slack does not
//!    auto-link bare URLs or channel names, nor parse `@here`-style words, in it.
//! 3. Inline values go in `inline code`, code blocks in ``` fences (a fence inside the
//!    text is broken up), so agent text cannot imitate gatebot's own lines ("*Risk:* low").
//! 4. The plain `text` of a message (shown in notifications) is the card's fallback,
//!    which never carries agent text.
//! 5. Each text object is cut after all escaping, so it stays within Slack's limit of
//!    3000 characters whatever the agent sent (`&` becomes five characters, a ``` fence
//!    five); lists keep the items that fit and count the rest; a note says what was cut.
//!
//! Layout: a section for the heading, lines and fields; a section per code block and
//! per list; the outcome in a section of its own, last; an `actions` block per row of
//! buttons; the hint as a `context` block.

use serde_json::{json, Value};

use crate::chat::card::{Block, Button, Card, Code, Hint, Line, Span, Style};
use crate::chat::exchange::Question;
use crate::chat::text::{self, escape, len16};

/// Slack's limit on a text object, in characters. gatebot measures UTF-16 units (never
/// fewer than characters), so the limit holds however Slack counts.
pub const MAX_TEXT: usize = 3000;
/// The `callback_id` of gatebot's question forms, so a `view_submission` is recognised
/// as ours (named when denying was its only use; forms already open keep it).
pub const QUESTION_FORM: &str = "gatebot_deny";
/// The answer input's `block_id` and `action_id`.
pub const ANSWER_FIELD: &str = "reason";
/// Slack's limit on a modal's title, submit and close labels.
const MAX_FORM_LABEL: usize = 24;

/// Slack's limit on blocks per message.
pub const MAX_BLOCKS: usize = 50;
/// Slack's limit on a button's label.
pub const MAX_LABEL: usize = 75;
/// Room kept for a "… N more characters of … not shown" note.
const NOTE_ROOM: usize = 150;

/// The whole of a card as Slack shows it, for review (golden files): each block's
/// mrkdwn (an actions block as its buttons), then the notification text.
#[must_use]
pub fn shown(card: &Card) -> String {
    let (text, blocks) = render(card);
    let mut shown = String::new();
    for b in &blocks {
        let said = match b["type"].as_str() {
            Some("actions") => b["elements"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| format!("[ {} ]", e["text"]["text"].as_str().unwrap_or("?")))
                .collect::<Vec<_>>()
                .join(" "),
            Some("section" | "header") => b["text"]["text"].as_str().unwrap_or("?").to_string(),
            Some("context") => b["elements"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| e["text"].as_str().unwrap_or("?").to_string())
                .collect::<Vec<_>>()
                .join(" "),
            _ => b.to_string(),
        };
        shown.push_str(&format!(
            "--- {}\n{said}\n",
            b["type"].as_str().unwrap_or("?")
        ));
    }
    shown.push_str(&format!("--- notification\n{text}\n"));
    shown
}

/// A card's fallback text and blocks.
#[must_use]
pub fn render(card: &Card) -> (String, Vec<Value>) {
    let mut blocks = Vec::new();
    let mut text = String::new();
    let flush = |text: &mut String, blocks: &mut Vec<Value>| {
        if !text.is_empty() {
            blocks.push(section(std::mem::take(text)));
        }
    };
    for b in &card.blocks {
        match b {
            Block::Heading { icon, title, tag } => {
                flush(&mut text, &mut blocks);
                text = format!(
                    "{icon} *{}*{}",
                    escape(title),
                    tag.as_ref()
                        .map(|t| format!(" · {}", line(&t.line())))
                        .unwrap_or_default()
                );
            }
            Block::Line(l) => push_line(&mut text, &mut blocks, line(l)),
            Block::Fields(fs) => {
                for f in fs {
                    let l = format!("*{}:* {}", escape(&f.label), line(&f.value));
                    push_line(&mut text, &mut blocks, l);
                }
            }
            Block::List(items) => {
                flush(&mut text, &mut blocks);
                blocks.push(section(list(items)));
            }
            Block::Code(c) => {
                flush(&mut text, &mut blocks);
                blocks.push(section(code(c)));
            }
            Block::Outcome(o) => {
                flush(&mut text, &mut blocks);
                blocks.push(section(fitted("", o, "the outcome", |s| {
                    format!("*{}*", escape(&s.replace('\n', " ")))
                })));
            }
        }
    }
    flush(&mut text, &mut blocks);
    for (i, row) in card.buttons.iter().enumerate() {
        blocks.push(json!({
            "type": "actions",
            "block_id": format!("gatebot_{i}"),
            "elements": row.iter().map(button).collect::<Vec<_>>(),
        }));
    }
    if let Some(h) = card.hint.as_ref().map(hint).filter(|h| !h.is_empty()) {
        blocks.push(json!({"type": "context", "elements": [mrkdwn(h)]}));
    }
    blocks.truncate(MAX_BLOCKS);
    let (fallback, _) = text::fit(&card.fallback, "the text", |p| len16(p) <= MAX_TEXT);
    (fallback, blocks)
}

/// Adds a line to the section being built, starting a new section when it would pass
/// the limit.
fn push_line(text: &mut String, blocks: &mut Vec<Value>, l: String) {
    if !text.is_empty() && len16(text) + 1 + len16(&l) > MAX_TEXT {
        blocks.push(section(std::mem::take(text)));
    }
    if !text.is_empty() {
        text.push('\n');
    }
    // A single line over the limit (it should not happen: kinds keep values short).
    if len16(&l) > MAX_TEXT {
        let (kept, _) = text::fit(&l, "the line", |p| len16(p) < MAX_TEXT);
        text.push_str(&kept);
    } else {
        text.push_str(&l);
    }
}

/// A line's spans as mrkdwn.
#[must_use]
pub fn line(l: &Line) -> String {
    l.0.iter()
        .map(|s| match s {
            Span::Text(t) => escape(t),
            Span::Code(t) => inline_code(t),
            Span::Strong(t) => marked('*', t),
            Span::Em(t) => marked('_', t),
            Span::Mention { id, name } => {
                let user = id.len() >= 2
                    && matches!(id.as_bytes()[0], b'U' | b'W')
                    && id
                        .bytes()
                        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
                if user {
                    format!("<@{id}>")
                } else {
                    escape(name)
                }
            }
        })
        .collect()
}

/// `text` between `mark`s, with its leading and trailing white space outside them:
/// Slack closes `*bold*` only where the mark touches a character, so `*Promote *`
/// would show its stars.
fn marked(mark: char, text: &str) -> String {
    let inner = text.trim();
    if inner.is_empty() {
        return escape(text);
    }
    let start = text.len() - text.trim_start().len();
    let end = start + inner.len();
    format!(
        "{}{mark}{}{mark}{}",
        escape(&text[..start]),
        escape(inner),
        escape(&text[end..])
    )
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
    let body = escape(s).replace('`', "'").replace('\n', " ");
    format!("`{body}`")
}

/// `label` followed by `render(raw)`, with `raw` cut so that the whole text, measured
/// after rendering (escaping, fences) and with the note, fits [`MAX_TEXT`].
fn fitted(label: &str, raw: &str, what: &str, render: impl Fn(&str) -> String) -> String {
    fitted_within(label, raw, what, MAX_TEXT, render)
}

fn fitted_within(
    label: &str,
    raw: &str,
    what: &str,
    max: usize,
    render: impl Fn(&str) -> String,
) -> String {
    let whole = format!("{label}{}", render(raw));
    if len16(&whole) <= max {
        return whole;
    }
    let room = max.saturating_sub(len16(label) + NOTE_ROOM);
    let (kept, note) = text::fit(raw, what, |p| len16(&render(p)) <= room);
    let mut text = format!("{label}{}", render(&kept));
    if let Some(n) = note {
        text.push_str(&format!("\n_{}_", escape(&n)));
    }
    text
}

fn code(c: &Code) -> String {
    let label = format!("*{}:*\n", escape(&c.label));
    let max = c
        .max
        .map_or(MAX_TEXT, |m| (m + len16(&label) + 6).min(MAX_TEXT));
    fitted_within(&label, &c.body, c.what, max, code_block)
}

/// Items while they fit, then how many were left out.
fn list(items: &[Line]) -> String {
    let mut out = String::new();
    for (shown, item) in items.iter().enumerate() {
        let l = format!("• {}", line(item));
        let more = format!("\n… and {} more", items.len() - shown);
        if len16(&out) + len16(&l) + 1 + len16(&more) > MAX_TEXT {
            out.push_str(more.trim_start_matches(|c| shown == 0 && c == '\n'));
            return out;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&l);
    }
    out
}

fn hint(h: &Hint) -> String {
    let words = h
        .reply_words
        .iter()
        .map(|w| inline_code(w))
        .collect::<Vec<_>>()
        .join(" or ");
    match &h.command {
        Some(c) if words.is_empty() => format!("Use {}.", inline_code(c)),
        None if words.is_empty() => String::new(),
        Some(c) => format!(
            "Reply in this thread with {words}, or use {}.",
            inline_code(c)
        ),
        None => format!("Reply in this thread with {words}."),
    }
}

/// A mrkdwn text object that Slack shows as sent: no auto-links, no mention parsing.
#[must_use]
pub fn mrkdwn(text: String) -> Value {
    json!({"type": "mrkdwn", "text": text, "verbatim": true})
}

/// A section with one mrkdwn text.
#[must_use]
pub fn section(text: String) -> Value {
    json!({"type": "section", "text": mrkdwn(text)})
}

/// A plain-text object (button labels, modal titles), within `max` characters.
#[must_use]
pub fn plain(text: &str, max: usize) -> Value {
    let (kept, _) = text::fit(text, "the label", |p| len16(p) <= max);
    json!({"type": "plain_text", "text": kept, "emoji": true})
}

/// A form asking `q`; `private_metadata` carries the subject, the purpose and the
/// channel to answer in.
#[must_use]
pub fn form(q: &Question, channel: &str) -> Value {
    json!({
        "type": "modal",
        "callback_id": QUESTION_FORM,
        "private_metadata": json!({
            "id": q.subject, "purpose": q.purpose.as_str(), "channel": channel
        }).to_string(),
        "title": plain(&q.title, MAX_FORM_LABEL),
        "submit": plain(&q.submit, MAX_FORM_LABEL),
        "close": plain("Cancel", MAX_FORM_LABEL),
        "blocks": [
            section(line(&q.text.clone().capitalised())),
            {
                "type": "input",
                "block_id": ANSWER_FIELD,
                "optional": true,
                "label": plain(&q.field, MAX_LABEL),
                "element": {
                    "type": "plain_text_input",
                    "action_id": ANSWER_FIELD,
                    "multiline": true,
                    "max_length": 1000
                }
            }
        ]
    })
}

fn button(b: &Button) -> Value {
    let mut v = json!({
        "type": "button",
        "text": plain(&b.label, MAX_LABEL),
        "action_id": b.data,
        "value": b.data,
    });
    match b.style {
        Style::Primary => v["style"] = json!("primary"),
        Style::Danger => v["style"] = json!("danger"),
        Style::Default => {}
    }
    v
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::chat::card::{Field, Tag};

    /// Every text object in `blocks` (sections, context elements, buttons, modal parts).
    pub(crate) fn text_objects(v: &Value, out: &mut Vec<Value>) {
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
    pub(crate) fn within_limits(text: &str, blocks: &[Value]) -> Vec<Value> {
        assert!(blocks.len() <= MAX_BLOCKS);
        assert!(len16(text) <= MAX_TEXT, "fallback {}", len16(text));
        let mut objects = Vec::new();
        text_objects(&Value::Array(blocks.to_vec()), &mut objects);
        for o in &objects {
            let t = o["text"].as_str().unwrap();
            assert!(
                len16(t) <= MAX_TEXT,
                "{} characters: {}…",
                len16(t),
                t.chars().take(80).collect::<String>()
            );
            if o["type"] == "mrkdwn" {
                assert_eq!(o["verbatim"], true, "{o}");
            } else {
                assert!(len16(t) <= MAX_LABEL, "a label: {t}");
            }
        }
        objects
    }

    /// Every kind's representative cards as Slack shows them: each block's mrkdwn (an
    /// actions block as its buttons), then the notification text.
    #[test]
    fn golden_cards_read_as_kept() {
        crate::chat::golden::check("slack", shown);
    }

    #[test]
    fn every_kinds_cards_fit_slacks_limits() {
        let cards = crate::chat::conversation::example_cards();
        assert!(!cards.is_empty());
        for (kind, card) in cards {
            let (text, blocks) = render(&card);
            within_limits(&text, &blocks);
            assert!(!text.is_empty(), "{kind} has no notification text");
        }
    }

    #[test]
    fn bold_and_italic_marks_touch_their_words() {
        let mut l = Line::strong("Promote ").code("mailer").and(" to");
        l.0.push(Span::Em(" now".into()));
        assert_eq!(line(&l), "*Promote* `mailer` to _now_");
        assert_eq!(line(&Line::strong("  ")), "  ");
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
    fn a_cut_never_splits_an_entity_or_a_fence() {
        let card = Card {
            blocks: vec![
                Block::Code(Code {
                    label: "Summary".into(),
                    body: "a```".repeat(500),
                    lang: None,
                    what: "the summary",
                    max: None,
                }),
                Block::Code(Code {
                    label: "Arguments".into(),
                    body: "&".repeat(5000),
                    lang: Some("json"),
                    what: "arguments",
                    max: None,
                }),
            ],
            ..Card::default()
        };
        let (text, blocks) = render(&card);
        within_limits(&text, &blocks);
        for b in &blocks {
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
    fn fields_lines_lists_and_outcome_stay_within_the_limits() {
        let card = Card {
            blocks: vec![
                Block::Heading {
                    icon: "🛡",
                    title: "gatebot".into(),
                    tag: Some(Tag::Label(Line::text("id ").code("k7m2"))),
                },
                Block::Fields(vec![
                    Field::new("Tool", Line::default().code("&".repeat(128))),
                    Field::new("Why", Line::text("<".repeat(2000))),
                ]),
                Block::List(
                    (0..200)
                        .map(|i| Line::text(format!("{i}")).code("&".repeat(100)))
                        .collect(),
                ),
                Block::Outcome(format!("❌ Denied: {}", "<no> ".repeat(5000))),
            ],
            buttons: vec![vec![Button::new("x".repeat(200), "gb1:a:x")]],
            ..Card::default()
        };
        let (text, blocks) = render(&card);
        let objects = within_limits(&text, &blocks);
        let all: String = objects.iter().map(|o| o["text"].to_string()).collect();
        assert!(all.contains("… and "), "the list says how many it left out");
        let outcome = blocks
            .iter()
            .rev()
            .find(|b| b["type"] == "section")
            .unwrap()["text"]["text"]
            .as_str()
            .unwrap();
        assert!(outcome.starts_with("*❌ Denied: &lt;no&gt;"), "{outcome}");
        assert!(
            outcome.ends_with("(full text: gatebot status)_"),
            "{outcome}"
        );
    }

    /// A request as large and as hostile as an agent can make it.
    fn maximal(summary: &str, args_char: &str) -> crate::approval::Approval {
        let mut a = crate::chat::conversation::approval::sample();
        a.summary = Some(summary.repeat(crate::wire::MAX_SUMMARY_CHARS / summary.chars().count()));
        a.args = serde_json::json!({"body": args_char.repeat(64 * 1024 / args_char.len())});
        a.tool = "&".repeat(crate::wire::MAX_TOOL_LEN);
        a
    }

    #[test]
    fn a_maximal_request_fits_every_text_object_pending_and_settled() {
        use crate::approval::{Status, Via};
        use crate::chat::conversation::approval::card;
        for (summary, args) in [
            ("`", "`"),
            ("&<>", "&"),
            ("<", ">"),
            ("`\u{1F600}", "\u{1F600}"),
        ] {
            let mut a = maximal(summary, args);
            let (text, blocks) = render(&card(&a));
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
            assert!(!text.contains('&'), "no agent text in the fallback: {text}");
            a.status = Status::Failed;
            a.decided_by = Some("alice".into());
            a.decided_via = Some(Via::Cli);
            a.decided_at = Some(0);
            a.result_detail = Some(summary.repeat(20_000));
            let (text, blocks) = render(&card(&a));
            let objects = within_limits(&text, &blocks);
            let outcome = objects.last().unwrap()["text"]
                .as_str()
                .unwrap()
                .to_string();
            assert!(
                outcome.starts_with("*✅ Approved by alice on the command line"),
                "{outcome}"
            );
            assert!(outcome.contains("more characters of the outcome not shown"));
        }
    }

    #[test]
    fn a_long_pending_list_keeps_whole_lines_and_counts_the_rest() {
        use crate::chat::conversation::approval;
        let list: Vec<_> = (0..200)
            .map(|i| {
                let mut a = approval::sample();
                a.short_id = format!("id{i:06}");
                a.tool = "&".repeat(100);
                a
            })
            .collect();
        let (text, blocks) = render(&approval::pending_card(
            &list[..approval::PENDING_SHOWN],
            200,
        ));
        assert_eq!(text, "200 pending request(s)");
        let objects = within_limits(&text, &blocks);
        let shown: String = objects.iter().map(|o| o["text"].to_string()).collect();
        assert!(shown.contains("… and 180 more"), "{shown}");
        assert!(!shown.contains('<'), "{shown}");
    }

    #[test]
    fn hidden_characters_are_written_out_in_every_span() {
        let l = Line(vec![
            Span::Text("a\u{202e}b".into()),
            Span::Code("ls\u{a0}-la".into()),
        ]);
        assert_eq!(line(&l), "a\\u202eb`ls\\u00a0-la`");
    }

    #[test]
    fn markup_in_every_span_is_escaped() {
        let l = Line(vec![
            Span::Text("<!channel>".into()),
            Span::Strong("<@U1>".into()),
            Span::Em("&".into()),
            Span::Code("<https://x|y>".into()),
        ]);
        assert_eq!(
            line(&l),
            "&lt;!channel&gt;*&lt;@U1&gt;*_&amp;_`&lt;https://x|y&gt;`"
        );
    }
}
