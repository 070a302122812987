//! Cards in Telegram's HTML parse mode, with inline keyboards.
//!
//! 1. Every string of a card is escaped ([`text::escape`]); agent text sits in
//!    `<code>`/`<pre>` under a label saying it comes from the agent, so a summary saying
//!    "Risk: low" or `</code>` renders as literal text inside its block.
//! 2. A message may hold 4096 UTF-16 units. [`OUTCOME_ROOM`] of them are always kept
//!    back for the outcome line a settled card gains, so a prompt and its final edit cut
//!    the agent's text at the same place. Lists take the room they need first (as many
//!    items as fit), then code blocks share the rest in order, each within its `max`.
//!    Every cut goes through [`text::fit`] and says what it left out.
//! 3. Blocks are separated by one line break, and by a blank line before a heading, a
//!    code block, the outcome and the hint.

use teloxide::types::{InlineKeyboardButton, InlineKeyboardMarkup};

use crate::chat::card::{Block, Button, Card, Code, Hint, Line, Span};
use crate::chat::text::{self, escape, len16};

/// Telegram's limit on a message's text, in UTF-16 code units after entity parsing.
pub const MAX_MESSAGE: usize = 4096;
/// Room kept for the outcome line (and the hint) of a card.
pub const OUTCOME_ROOM: usize = 600;
/// Room kept per code block for its cut note and tags.
const NOTE_ROOM: usize = 160;
/// Telegram's limit on the text of an answer to a button press, in characters.
pub const MAX_ANSWER: usize = 190;

/// The whole of a card as Telegram shows it, for review (golden files): the message's
/// HTML, then its buttons, a row a line (`[ ✅ Allow once ] [ ❌ Deny ]`).
#[must_use]
pub fn shown(card: &Card) -> String {
    let (mut shown, keyboard) = render(card);
    shown.push('\n');
    for row in &keyboard.inline_keyboard {
        let labels: Vec<String> = row.iter().map(|b| format!("[ {} ]", b.text)).collect();
        shown.push_str(&format!("\n{}", labels.join(" ")));
    }
    shown + "\n"
}

/// A card's text and keyboard: HTML, or plain text for a card without formatting
/// ([`is_plain`]: sent without a parse mode, nothing in it can be markup).
#[must_use]
pub fn render(card: &Card) -> (String, InlineKeyboardMarkup) {
    let text = if is_plain(card) {
        plain(card)
    } else {
        html(card)
    };
    (text, keyboard(&card.buttons))
}

/// A card of plain lines and lists only: it needs no markup at all.
#[must_use]
pub fn is_plain(card: &Card) -> bool {
    let plain_line = |l: &Line| l.0.iter().all(|s| matches!(s, Span::Text(_)));
    card.hint.is_none()
        && card.blocks.iter().all(|b| match b {
            Block::Line(l) => plain_line(l),
            Block::List(items) => items.iter().all(plain_line),
            _ => false,
        })
}

/// A plain card's text, within [`MAX_MESSAGE`].
#[must_use]
pub fn plain(card: &Card) -> String {
    let text = card.plain();
    let (kept, _) = text::fit(&text, "the text", |p| len16(p) <= MAX_MESSAGE);
    kept
}

/// Buttons as an inline keyboard.
#[must_use]
pub fn keyboard(rows: &[Vec<Button>]) -> InlineKeyboardMarkup {
    InlineKeyboardMarkup::new(rows.iter().map(|row| {
        row.iter()
            .map(|b| InlineKeyboardButton::callback(b.label.clone(), b.data.clone()))
            .collect::<Vec<_>>()
    }))
}

/// A line's spans as HTML.
#[must_use]
pub fn line(l: &Line) -> String {
    l.0.iter()
        .map(|s| match s {
            Span::Text(t) => escape(t),
            Span::Code(t) => format!("<code>{}</code>", escape(t)),
            Span::Strong(t) => format!("<b>{}</b>", escape(t)),
            Span::Em(t) => format!("<i>{}</i>", escape(t)),
            // Telegram mentions a user by id with a link (no username needed).
            Span::Mention { id, name } if id.parse::<i64>().is_ok_and(|n| n > 0) => {
                format!("<a href=\"tg://user?id={id}\">{}</a>", escape(name))
            }
            Span::Mention { name, .. } => escape(name),
        })
        .collect()
}

fn separator(b: &Block) -> &'static str {
    match b {
        Block::Heading { .. } | Block::Code(_) | Block::Outcome(_) => "\n\n",
        Block::Line(_) | Block::Fields(_) | Block::List(_) => "\n",
    }
}

/// The card's text, within [`MAX_MESSAGE`].
#[must_use]
pub fn html(card: &Card) -> String {
    // First what cannot be cut, then lists, then code blocks in the room left.
    let mut parts: Vec<Option<String>> = card
        .blocks
        .iter()
        .map(|b| match b {
            Block::Heading { icon, title, tag } => Some(format!(
                "{icon} <b>{}</b>{}",
                escape(title),
                tag.as_ref()
                    .map(|t| format!("  ·  {}", line(&t.line())))
                    .unwrap_or_default()
            )),
            Block::Line(l) => Some(line(l)),
            Block::Fields(fs) => Some(
                fs.iter()
                    .map(|f| format!("<b>{}:</b> {}", escape(&f.label), line(&f.value)))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            Block::Outcome(o) => Some(outcome(o)),
            Block::List(_) | Block::Code(_) => None,
        })
        .collect();
    let hint = card
        .hint
        .as_ref()
        .map(|h| hint(h, !card.buttons.is_empty()))
        .filter(|h| !h.is_empty());
    // The outcome and the hint live in the room kept back, so a prompt and its final
    // edit give the agent's text (nearly) the same room.
    let fixed: usize = parts
        .iter()
        .zip(&card.blocks)
        .filter(|(_, b)| !matches!(b, Block::Outcome(_)))
        .filter_map(|(p, _)| p.as_ref())
        .map(|p| len16(p) + 2)
        .sum();
    // What every code block takes besides its body (label, tags, a cut note) is kept
    // back too, so a block cut to nothing still fits.
    let code_overhead: usize = card
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Code(c) => Some(len16(&escape(&c.label)) + NOTE_ROOM + 2),
            _ => None,
        })
        .sum();
    let mut room = MAX_MESSAGE
        .saturating_sub(fixed)
        .saturating_sub(OUTCOME_ROOM)
        .saturating_sub(code_overhead);
    for (part, block) in parts.iter_mut().zip(&card.blocks) {
        if let Block::List(items) = block {
            let rendered = list(items, room);
            room = room.saturating_sub(len16(&rendered) + 1);
            *part = Some(rendered);
        }
    }
    for (part, block) in parts.iter_mut().zip(&card.blocks) {
        if let Block::Code(c) = block {
            let (rendered, body) = code(c, room);
            room = room.saturating_sub(body);
            *part = Some(rendered);
        }
    }
    let mut out = String::new();
    for (part, block) in parts.into_iter().zip(&card.blocks) {
        if !out.is_empty() {
            out.push_str(separator(block));
        }
        out.push_str(&part.unwrap_or_default());
    }
    if let Some(h) = hint {
        out.push_str("\n\n");
        out.push_str(&h);
    }
    out
}

/// The outcome in bold, cut to fit [`OUTCOME_ROOM`].
fn outcome(o: &str) -> String {
    let (kept, note) = text::fit(o, "the outcome", |p| {
        len16(&escape(p)) <= OUTCOME_ROOM - 150
    });
    match note {
        Some(n) => format!("<b>{}</b>\n<i>{}</i>", escape(&kept), escape(&n)),
        None => format!("<b>{}</b>", escape(&kept)),
    }
}

/// Items while they fit in `room`, then how many were left out.
fn list(items: &[Line], room: usize) -> String {
    let mut out = String::new();
    for (shown, item) in items.iter().enumerate() {
        let l = format!("• {}", line(item));
        let more = format!("\n… and {} more", items.len() - shown);
        if len16(&out) + len16(&l) + 1 + len16(&more) > room && shown > 0 {
            out.push_str(&more);
            return out;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&l);
    }
    out
}

/// A labelled code block whose escaped body takes at most `room` (and its `max`), and
/// the room its body took.
fn code(c: &Code, room: usize) -> (String, usize) {
    let room = c.max.map_or(room, |m| m.min(room));
    let (kept, note) = text::fit(&c.body, c.what, |p| len16(&escape(p)) <= room);
    let taken = len16(&escape(&kept));
    let body = match c.lang {
        Some(lang) => format!(
            "<pre><code class=\"language-{lang}\">{}</code></pre>",
            escape(&kept)
        ),
        None => format!("<pre>{}</pre>", escape(&kept)),
    };
    let mut out = format!("<b>{}:</b>\n{body}", escape(&c.label));
    if let Some(n) = note {
        out.push_str(&format!("\n<i>{}</i>", escape(&n)));
    }
    (out, taken)
}

fn hint(h: &Hint, buttons: bool) -> String {
    let words = h
        .reply_words
        .iter()
        .map(|w| format!("<code>{}</code>", escape(w)))
        .collect::<Vec<_>>()
        .join(" or ");
    if words.is_empty() {
        // Nothing to reply: the command alone (a reminder).
        return match (&h.command, buttons) {
            (Some(c), _) => format!("Send <code>{}</code>.", escape(c)),
            (None, true) => "Tap a button.".to_string(),
            (None, false) => String::new(),
        };
    }
    if buttons {
        format!("Tap a button, or reply to this message with {words}.")
    } else {
        format!("Reply to this message with {words}.")
    }
}

/// `rows` with the button whose data is `data` replaced by `with` (after ❌: "Deny
/// without reason" in place of "Deny").
#[must_use]
pub fn swap_button(
    kb: &InlineKeyboardMarkup,
    data: &str,
    with: &Button,
) -> Option<InlineKeyboardMarkup> {
    use teloxide::types::InlineKeyboardButtonKind;
    let mut found = false;
    let rows = kb
        .inline_keyboard
        .iter()
        .map(|row| {
            row.iter()
                .map(|b| match &b.kind {
                    InlineKeyboardButtonKind::CallbackData(d) if d == data => {
                        found = true;
                        InlineKeyboardButton::callback(with.label.clone(), with.data.clone())
                    }
                    _ => b.clone(),
                })
                .collect::<Vec<_>>()
        })
        .collect::<Vec<_>>();
    found.then(|| InlineKeyboardMarkup::new(rows))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::card::{Field, Tag};
    use crate::subject::SubjectKind;

    fn card(summary: &str, args: &str) -> Card {
        Card {
            blocks: vec![
                Block::Heading {
                    icon: "🛡",
                    title: "gatebot: approval needed".into(),
                    tag: Some(Tag::subject(SubjectKind::Approval, "k7m2abcd")),
                },
                Block::Fields(vec![Field::new("Tool", Line::default().code("</code>&"))]),
                Block::Code(Code {
                    label: "Summary from the agent".into(),
                    body: summary.into(),
                    lang: None,
                    what: "the summary",
                    max: Some(1200),
                }),
                Block::Code(Code {
                    label: "Arguments from the agent".into(),
                    body: args.into(),
                    lang: Some("json"),
                    what: "arguments",
                    max: None,
                }),
            ],
            buttons: vec![vec![Button::new("✅ Allow once", "gb1:a:x")]],
            hint: Some(Hint {
                reply_words: vec!["approve".into(), "deny [reason]".into()],
                command: None,
            }),
            fallback: String::new(),
        }
    }

    #[test]
    fn hostile_agent_text_stays_inside_its_block() {
        let t = html(&card(
            "</pre>Risk: low<b>",
            "</code></pre><b>Risk: low</b>\nRisk: low & safe",
        ));
        assert!(!t.contains("<b>Risk: low"), "{t}");
        assert!(t.contains("&lt;/code&gt;&lt;/pre&gt;&lt;b&gt;Risk: low&lt;/b&gt;"));
        assert!(
            t.contains("<b>Summary from the agent:</b>\n<pre>&lt;/pre&gt;Risk: low&lt;b&gt;</pre>")
        );
        assert!(t.contains("<b>Tool:</b> <code>&lt;/code&gt;&amp;</code>"));
        assert_eq!(t.matches("<pre>").count(), 2, "{t}");
        assert_eq!(t.matches("</pre>").count(), 2, "{t}");
        assert!(t.ends_with(
            "Tap a button, or reply to this message with <code>approve</code> or <code>deny [reason]</code>."
        ));
    }

    #[test]
    fn hidden_characters_in_agent_text_are_written_out_and_emoji_stay() {
        let mut c = card("\u{202e}txt.exe", "{\"command\": \"ls\u{a0}-la\"}");
        c.blocks
            .push(Block::Outcome("✅ Approved by alice: ok\u{2066}".into()));
        let t = html(&c);
        assert!(t.contains("<pre>\\u202etxt.exe</pre>"), "{t}");
        assert!(t.contains("ls\\u00a0-la"), "{t}");
        assert!(t.contains("ok\\u2066"), "{t}");
        assert!(!t.contains(['\u{202e}', '\u{a0}', '\u{2066}']), "{t}");
        // gatebot's own emoji keep their presentation selector.
        assert_eq!(escape("♾️ Always"), "♾️ Always");
        let plain = Card::text("title \u{202e}gpj.exe");
        assert_eq!(super::plain(&plain), "title \\u202egpj.exe");
    }

    #[test]
    fn long_text_is_cut_to_fit_with_room_for_the_outcome() {
        let mut c = card(&"é".repeat(2000), &"&<".repeat(10_000));
        let t = html(&c);
        assert!(
            len16(&t) <= MAX_MESSAGE - OUTCOME_ROOM + 200,
            "{}",
            len16(&t)
        );
        assert!(t.contains("more characters of arguments not shown"));
        assert!(t.contains("more characters of the summary not shown"));
        // With its outcome (however long), the same cuts, and still within the limit.
        c.blocks.push(Block::Outcome(format!(
            "❌ Denied: {}",
            "<no>".repeat(5000)
        )));
        c.buttons.clear();
        c.hint = None;
        let settled = html(&c);
        assert!(len16(&settled) <= MAX_MESSAGE, "{}", len16(&settled));
        assert!(settled.contains("more characters of the outcome not shown"));
        let cut_args = |s: &str| s[..s.find("</code></pre>").unwrap()].to_string();
        assert_eq!(cut_args(&t), cut_args(&settled), "the same cut");
    }

    /// Every kind's representative cards as Telegram shows them: the message's HTML,
    /// then its buttons a row a line.
    #[test]
    fn golden_cards_read_as_kept() {
        crate::chat::golden::check("telegram", shown);
    }

    #[test]
    fn every_kinds_cards_fit_one_message_with_valid_buttons() {
        let cards = crate::chat::conversation::example_cards();
        assert!(!cards.is_empty());
        for (kind, card) in cards {
            let (text, keyboard) = render(&card);
            assert!(len16(&text) <= MAX_MESSAGE, "{kind}: {}", len16(&text));
            assert_eq!(keyboard.inline_keyboard.len(), card.buttons.len(), "{kind}");
            for data in card.button_data() {
                assert!(data.len() <= 64, "{kind}: {data}");
                assert!(
                    crate::chat::conversation::Action::decode(data).is_ok(),
                    "{kind}: {data}"
                );
            }
        }
    }

    #[test]
    fn a_maximal_request_fits_one_message_pending_and_settled() {
        use crate::approval::{Status, Via};
        use crate::chat::conversation::approval::{card, sample};
        let mut a = sample();
        a.summary = Some("&<".repeat(crate::wire::MAX_SUMMARY_CHARS / 2));
        a.args = serde_json::json!({"body": "\u{1F600}&".repeat(10_000)});
        a.tool = "<".repeat(crate::wire::MAX_TOOL_LEN);
        // gatebot's reasons name the tool; a hostile one at that.
        a.policy_reason = format!("{} is a destructive tool", a.tool);
        let t = html(&card(&a));
        assert!(len16(&t) <= MAX_MESSAGE, "{}", len16(&t));
        assert!(t.contains("more characters of arguments not shown"));
        a.status = Status::Rejected;
        a.decided_by = Some("alice".into());
        a.decided_via = Some(Via::Cli);
        a.decided_at = Some(0);
        a.decision_reason = Some("<no>".repeat(5000));
        let t = html(&card(&a));
        assert!(len16(&t) <= MAX_MESSAGE, "{}", len16(&t));
        assert!(
            t.contains("<b>❌ Denied by alice on the command line"),
            "{t}"
        );
    }

    #[test]
    fn a_long_list_shows_what_fits_and_counts_the_rest() {
        let items: Vec<Line> = (0..200)
            .map(|i| Line::text(format!("{i} ")).code("&".repeat(60)))
            .collect();
        let t = html(&Card {
            blocks: vec![Block::List(items)],
            ..Card::default()
        });
        assert!(len16(&t) <= MAX_MESSAGE);
        assert!(t.contains("more"), "{t}");
    }

    #[test]
    fn a_button_can_be_swapped_for_another() {
        let kb = keyboard(&[vec![Button::new("a", "x"), Button::new("b", "y")]]);
        let swapped = swap_button(&kb, "y", &Button::new("c", "z")).unwrap();
        assert_eq!(swapped.inline_keyboard[0][1].text, "c");
        assert!(swap_button(&kb, "nope", &Button::new("c", "z")).is_none());
    }
}
