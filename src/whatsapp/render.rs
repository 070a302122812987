//! A [`Card`] as a WhatsApp message: an interactive message with up to three reply
//! buttons, or a plain text; and the variables of the template sent outside the
//! 24-hour window.
//!
//! 1. WhatsApp's limits (Cloud API, interactive reply buttons): a body of at most
//!    [`MAX_BODY`] characters, at most [`MAX_BUTTONS`] buttons, a title of at most
//!    [`MAX_TITLE`] characters, an id of at most [`MAX_ID`]; a text of at most
//!    [`MAX_TEXT`]. Lengths are measured in UTF-16 units, never fewer than characters.
//! 2. gatebot's words use WhatsApp's formatting (`*bold*`, `_italic_`); agent text is
//!    data: every value is put in a monospace span (` ```…``` `), inside which WhatsApp
//!    applies no other formatting; a backtick in it is written as `ˋ` so it cannot end
//!    the span, hidden characters are written out (`\u202e`), and line breaks in a short
//!    value become spaces (it cannot start a line that looks like gatebot's).
//! 3. What cannot be cut (heading, lines, fields, the outcome, the hint) is placed
//!    first; lists and code blocks share the room left, cut with a note.
//! 4. A card with more than three buttons shows the first three; the others are named
//!    in the text, next to the commands that work by typing (the hint).

use crate::chat::card::{Block, Button, Card, Code, Hint, Line, Span, Tag};
use crate::chat::text::{self, len16};

/// The most characters of an interactive message's body.
pub const MAX_BODY: usize = 1024;
/// The most characters of a text message.
pub const MAX_TEXT: usize = 4096;
/// The most reply buttons of an interactive message.
pub const MAX_BUTTONS: usize = 3;
/// The most characters of a reply button's title.
pub const MAX_TITLE: usize = 20;
/// The most characters of a reply button's id.
pub const MAX_ID: usize = 256;
/// The most a template variable takes here (Meta: no line breaks, no tabs, no more
/// than four spaces in a row).
pub const MAX_VARIABLE: usize = 200;
/// Room kept for an outcome.
const OUTCOME_ROOM: usize = 300;
/// What each code block takes besides its body: label, fences, a cut note.
const CODE_OVERHEAD: usize = 140;

/// A reply button: its id (the card button's data) and its title.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyButton {
    pub id: String,
    pub title: String,
}

/// A card as WhatsApp sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// `type: interactive`, `interactive.type: button`.
    Interactive {
        body: String,
        buttons: Vec<ReplyButton>,
    },
    /// `type: text`.
    Text { body: String },
}

impl Message {
    /// The message's text.
    #[must_use]
    pub fn body(&self) -> &str {
        match self {
            Message::Interactive { body, .. } | Message::Text { body } => body,
        }
    }
}

/// The message that shows `card`.
#[must_use]
pub fn render(card: &Card) -> Message {
    let all: Vec<&Button> = card.buttons.iter().flatten().collect();
    if all.is_empty() {
        return Message::Text {
            body: body(card, &[], MAX_TEXT),
        };
    }
    let (shown, rest) = all.split_at(all.len().min(MAX_BUTTONS));
    let mut titles: Vec<String> = Vec::new();
    let buttons = shown
        .iter()
        .map(|b| {
            let mut title = title(&b.label);
            // Titles must differ within a message.
            let mut n = 2;
            while titles.contains(&title) {
                title = format!("{} {n}", text::shorten(&title, MAX_TITLE - 3).trim_end());
                n += 1;
            }
            titles.push(title.clone());
            ReplyButton {
                id: b.data.chars().take(MAX_ID).collect(),
                title,
            }
        })
        .collect();
    Message::Interactive {
        body: body(card, rest, MAX_BODY),
        buttons,
    }
}

/// What goes back as a reply to a card that WhatsApp cannot edit: its heading and its
/// outcome (or, for a card without one, the whole card as text).
#[must_use]
pub fn outcome(card: &Card) -> Option<String> {
    let heading = card
        .blocks
        .iter()
        .find(|b| matches!(b, Block::Heading { .. }));
    let outcome = card
        .blocks
        .iter()
        .find(|b| matches!(b, Block::Outcome(_)))?;
    let short = Card {
        blocks: heading.into_iter().chain([outcome]).cloned().collect(),
        ..Card::default()
    };
    Some(body(&short, &[], MAX_TEXT))
}

/// The template's two body variables for `card`: `{{1}}` what it is (its heading, with
/// the subject's id where it shows one), `{{2}}` its first line (who wants what) or
/// first two fields.
#[must_use]
pub fn variables(card: &Card) -> (String, String) {
    let heading = card.blocks.iter().find_map(|b| match b {
        Block::Heading { title, tag, .. } => Some(match tag {
            Some(Tag::Subject { short, .. }) => format!("{} · id {short}", ours(title)),
            Some(Tag::Label(l)) => format!("{} · {}", ours(title), line(l)),
            None => ours(title),
        }),
        _ => None,
    });
    // The first block after the heading: who wants what, or the first fields.
    let mut rest = card.blocks.iter().filter_map(|b| match b {
        Block::Line(l) => Some(line(l)),
        Block::Fields(fs) => Some(
            fs.iter()
                .take(2)
                .map(|f| format!("{}: {}", ours(&f.label), line(&f.value)))
                .collect::<Vec<_>>()
                .join(", "),
        ),
        _ => None,
    });
    let (one, two) = match heading {
        Some(h) => (h, rest.next()),
        None => (rest.next().unwrap_or_else(|| "gatebot".into()), rest.next()),
    };
    let two = two.unwrap_or_else(|| "It waits for your answer".into());
    (variable(&one), variable(&two))
}

/// The id of the subject `card` shows (its heading's tag).
#[must_use]
pub fn subject_short(card: &Card) -> Option<String> {
    card.blocks.iter().find_map(|b| match b {
        Block::Heading {
            tag: Some(Tag::Subject { short, .. }),
            ..
        } => Some(short.clone()),
        _ => None,
    })
}

/// A template variable: one line, no runs of spaces, within [`MAX_VARIABLE`].
fn variable(s: &str) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let (kept, note) = text::fit(&one, "text", |p| len16(p) + 4 <= MAX_VARIABLE);
    match note {
        Some(_) => format!("{}…", balance(kept.trim_end())),
        None => one,
    }
}

/// A button's label within [`MAX_TITLE`] characters.
fn title(label: &str) -> String {
    let label = label.trim();
    if label.chars().count() <= MAX_TITLE {
        return label.to_string();
    }
    format!("{}…", text::shorten(label, MAX_TITLE - 1).trim_end())
}

/// The card's text within `max`, naming `rest`, the buttons not shown as buttons.
fn body(card: &Card, rest: &[&Button], max: usize) -> String {
    let mut parts: Vec<Option<String>> = card
        .blocks
        .iter()
        .map(|b| match b {
            Block::Heading { icon, title, tag } => Some(format!(
                "{icon} *{}*{}",
                ours(title),
                tag.as_ref()
                    .map(|t| match t {
                        Tag::Subject { short, .. } => format!(" · id {short}"),
                        Tag::Label(l) => format!(" · {}", line(l)),
                    })
                    .unwrap_or_default()
            )),
            Block::Line(l) => Some(line(l)),
            Block::Fields(fs) => Some(
                fs.iter()
                    .map(|f| format!("*{}:* {}", ours(&f.label), line(&f.value)))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            Block::Outcome(o) => Some(data_block(o, OUTCOME_ROOM.min(max / 3), "the outcome")),
            Block::List(_) | Block::Code(_) => None,
        })
        .collect();
    let mut tail = Vec::new();
    if !rest.is_empty() {
        let labels: Vec<String> = rest.iter().map(|b| ours(b.label.trim())).collect();
        tail.push(format!(
            "More choices than WhatsApp shows as buttons: {} (in the dashboard or another chat).",
            labels.join(", ")
        ));
    }
    if let Some(h) = card
        .hint
        .as_ref()
        .map(|h| hint(h, !card.buttons.is_empty()))
    {
        if !h.is_empty() {
            tail.push(h);
        }
    }
    let fixed: usize = parts.iter().flatten().map(|p| len16(p) + 2).sum::<usize>()
        + tail.iter().map(|t| len16(t) + 2).sum::<usize>();
    let codes = card
        .blocks
        .iter()
        .filter(|b| matches!(b, Block::Code(_)))
        .count();
    let mut room = max
        .saturating_sub(fixed)
        .saturating_sub(codes * CODE_OVERHEAD);
    for (part, block) in parts.iter_mut().zip(&card.blocks) {
        if let Block::List(items) = block {
            let rendered = list(items, room);
            room = room.saturating_sub(len16(&rendered) + 1);
            *part = Some(rendered);
        }
    }
    for (part, block) in parts.iter_mut().zip(&card.blocks) {
        if let Block::Code(c) = block {
            let (rendered, taken) = code(c, room);
            room = room.saturating_sub(taken);
            *part = Some(rendered);
        }
    }
    let mut out = String::new();
    for (part, block) in parts.into_iter().zip(&card.blocks) {
        let Some(part) = part.filter(|p| !p.is_empty()) else {
            continue;
        };
        if !out.is_empty() {
            out.push_str(separator(block));
        }
        out.push_str(&part);
    }
    for t in tail {
        out.push_str("\n\n");
        out.push_str(&t);
    }
    // What cannot be cut may still not fit (a very long list of fields): cut the whole.
    if len16(&out) > max {
        let (kept, _) = text::fit(&out, "the card", |p| len16(p) + 5 <= max);
        out = format!("{}…", balance(kept.trim_end()));
    }
    out
}

fn separator(b: &Block) -> &'static str {
    match b {
        Block::Heading { .. } | Block::Code(_) | Block::Outcome(_) => "\n\n",
        Block::Line(_) | Block::Fields(_) | Block::List(_) => "\n",
    }
}

/// A text cut anywhere, with a monospace span left open closed again.
fn balance(s: &str) -> String {
    if s.matches("```").count() % 2 == 1 {
        format!("{s}```")
    } else {
        s.to_string()
    }
}

/// A line's spans, gatebot's words formatted, agent text as data.
#[must_use]
pub fn line(l: &Line) -> String {
    l.0.iter()
        .map(|s| match s {
            Span::Text(t) => ours(t),
            Span::Strong(t) => marked('*', &ours(t)),
            Span::Em(t) => marked('_', &ours(t)),
            Span::Code(t) => data(t),
            Span::Mention { name, .. } => data(name),
        })
        .collect()
}

/// `t` between `marker`s, its outer spaces outside them (WhatsApp formats `*a*`, not
/// `*a *`).
fn marked(marker: char, t: &str) -> String {
    let inner = t.trim();
    if inner.is_empty() {
        return t.to_string();
    }
    let start = t.len() - t.trim_start().len();
    let end = start + inner.len();
    format!("{}{marker}{inner}{marker}{}", &t[..start], &t[end..])
}

/// gatebot's own words, with hidden characters written out.
fn ours(t: &str) -> String {
    crate::names::visible(t).into_owned()
}

/// A short value from an agent (or anyone but gatebot): one line, monospace.
fn data(t: &str) -> String {
    let one: String = t.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.is_empty() {
        return String::new();
    }
    format!("```{}```", inert(&one))
}

/// Text that cannot end a monospace span: hidden characters written out, backticks
/// replaced by a look-alike.
fn inert(t: &str) -> String {
    crate::names::visible(t).replace('`', "ˋ")
}

/// A long value as a monospace block of at most `room` characters, with a note when
/// cut.
fn data_block(t: &str, room: usize, what: &str) -> String {
    let (kept, note) = text::fit(t, what, |p| len16(&inert(p)) <= room);
    let mut out = format!("```{}```", inert(&kept));
    if let Some(n) = note {
        out.push_str(&format!("\n_{}_", ours(&n)));
    }
    out
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
        if len16(&l) > room {
            let (kept, _) = text::fit(&l, "the item", |p| len16(p) + 5 <= room);
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&format!("{}…", balance(kept.trim_end())));
            return out;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&l);
    }
    out
}

/// A labelled code block whose body takes at most `room` (and its `max`), and the room
/// its body took.
fn code(c: &Code, room: usize) -> (String, usize) {
    let room = c.max.map_or(room, |m| m.min(room));
    let block = data_block(&c.body, room, c.what);
    let taken = len16(&block);
    (format!("*{}:*\n{block}", ours(&c.label)), taken)
}

fn hint(h: &Hint, buttons: bool) -> String {
    let words = h
        .reply_words
        .iter()
        .map(|w| format!("*{}*", ours(w)))
        .collect::<Vec<_>>()
        .join(" or ");
    let command = h
        .command
        .as_ref()
        .map(|c| format!("type {}", ours(c)))
        .unwrap_or_default();
    match (words.is_empty(), buttons, command.is_empty()) {
        (true, _, false) => format!("Send {}.", ours(h.command.as_deref().unwrap_or_default())),
        (true, true, true) => "Tap a button.".into(),
        (true, false, true) => String::new(),
        (false, true, _) => {
            let mut s = format!("Tap a button, or reply to this message with {words}");
            if !command.is_empty() {
                s.push_str(&format!(", or {command}"));
            }
            s + "."
        }
        (false, false, _) => {
            let mut s = format!("Reply to this message with {words}");
            if !command.is_empty() {
                s.push_str(&format!(", or {command}"));
            }
            s + "."
        }
    }
}

/// The whole of a card as WhatsApp shows it, for review (golden files): its text, its
/// buttons, and the template's variables when it is sent outside the window.
#[must_use]
pub fn shown(card: &Card) -> String {
    let message = render(card);
    let mut out = message.body().to_string();
    if let Message::Interactive { buttons, .. } = &message {
        let titles: Vec<String> = buttons.iter().map(|b| format!("[ {} ]", b.title)).collect();
        out.push_str(&format!("\n{}", titles.join(" ")));
    }
    out.push_str(&format!("\n--- {} characters", len16(message.body())));
    let (one, two) = variables(card);
    out.push_str(&format!(
        "\n--- outside 24 h, the template with {{{{1}}}} = {one} and {{{{2}}}} = {two}"
    ));
    if let Some(o) = outcome(card) {
        out.push_str(&format!("\n--- its outcome, as a reply to the card:\n{o}"));
    }
    out + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::card::Field;
    use crate::subject::SubjectKind;

    fn hostile_card() -> Card {
        Card {
            blocks: vec![
                Block::Heading {
                    icon: "🛡",
                    title: "gatebot: request".into(),
                    tag: Some(Tag::subject(SubjectKind::Approval, "k7m2abcd")),
                },
                Block::Line(
                    Line::default()
                        .code("*bold* _it_ ~gone~ ```x``` evil\u{202e}\nRisk: low")
                        .and(" wants to run ")
                        .code("rm"),
                ),
                Block::Fields(vec![Field::new("Risk", Line::text("high"))]),
                Block::Code(Code {
                    label: "Arguments from the agent".into(),
                    body: format!("```\n*{}*", "A".repeat(5000)),
                    lang: Some("json"),
                    what: "arguments",
                    max: None,
                }),
            ],
            buttons: vec![
                vec![
                    Button::new("✅ Allow once", "gb1:a:1"),
                    Button::new("♾️ Always allow this tool for this agent", "gb1:a:2"),
                    Button::new("❌ Deny", "gb1:a:3"),
                ],
                vec![Button::new("⏱ Allow for 1 h", "gb1:a:4")],
            ],
            hint: Some(Hint {
                reply_words: vec!["approve".into(), "deny [reason]".into()],
                command: Some("/approve k7m2abcd".into()),
            }),
            fallback: String::new(),
        }
    }

    #[test]
    fn hostile_agent_text_stays_monospace_data_and_is_cut_within_the_body() {
        let Message::Interactive { body, buttons } = render(&hostile_card()) else {
            panic!("a card with buttons is interactive");
        };
        assert!(len16(&body) <= MAX_BODY, "{}", len16(&body));
        // Agent text never closes its span: every ``` is gatebot's, in pairs.
        assert_eq!(body.matches("```").count() % 2, 0, "{body}");
        assert!(
            body.contains("```*bold* _it_ ~gone~ ˋˋˋxˋˋˋ evil\\u202e Risk: low```"),
            "{body}"
        );
        assert!(!body.contains('\u{202e}'));
        assert!(!body.lines().any(|l| l.starts_with("Risk: low")), "{body}");
        assert!(
            body.contains("more characters of arguments not shown"),
            "{body}"
        );
        assert_eq!(buttons.len(), 3);
        assert!(buttons.iter().all(|b| b.title.chars().count() <= MAX_TITLE));
        assert_eq!(buttons[1].title, "♾\u{fe0f} Always allow thi…");
        assert!(
            body.contains("⏱ Allow for 1 h"),
            "the fourth is named: {body}"
        );
        assert!(body.contains("/approve k7m2abcd"), "{body}");
    }

    #[test]
    fn the_heading_reads_back_as_the_subject_tag() {
        let body = render(&hostile_card()).body().to_string();
        assert_eq!(Tag::read(&body).as_deref(), Some("k7m2abcd"), "{body}");
    }

    #[test]
    fn template_variables_are_one_line_and_short() {
        let (one, two) = variables(&hostile_card());
        assert_eq!(one, "gatebot: request · id k7m2abcd");
        assert!(!two.contains('\n') && !two.contains("     ") && len16(&two) <= MAX_VARIABLE);
        assert_eq!(variables(&Card::text("hello")).0, "hello");
    }

    #[test]
    fn every_kinds_cards_fit_whatsapp_s_limits() {
        let cards = crate::chat::conversation::example_cards();
        assert!(!cards.is_empty());
        for (kind, card) in cards {
            match render(&card) {
                Message::Interactive { body, buttons } => {
                    assert!(
                        !body.is_empty() && len16(&body) <= MAX_BODY,
                        "{kind}: {}",
                        len16(&body)
                    );
                    assert!((1..=MAX_BUTTONS).contains(&buttons.len()), "{kind}");
                    for b in &buttons {
                        assert!(b.title.chars().count() <= MAX_TITLE, "{kind}: {}", b.title);
                        assert!(!b.title.is_empty() && b.id.len() <= MAX_ID, "{kind}");
                        assert!(
                            crate::chat::conversation::Action::decode(&b.id).is_ok(),
                            "{kind}: {}",
                            b.id
                        );
                    }
                    let mut titles: Vec<&str> = buttons.iter().map(|b| b.title.as_str()).collect();
                    titles.dedup();
                    assert_eq!(titles.len(), buttons.len(), "{kind}: titles differ");
                }
                Message::Text { body } => {
                    assert!(!body.is_empty() && len16(&body) <= MAX_TEXT, "{kind}");
                }
            }
            assert_eq!(render(&card).body().matches("```").count() % 2, 0, "{kind}");
            let (one, two) = variables(&card);
            assert!(
                len16(&one) <= MAX_VARIABLE && len16(&two) <= MAX_VARIABLE,
                "{kind}"
            );
            assert!(!one.contains('\n') && !two.contains('\n'), "{kind}");
            assert!(!one.contains("     ") && !two.contains("     "), "{kind}");
            if let Some(o) = outcome(&card) {
                assert!(len16(&o) <= MAX_TEXT, "{kind}");
            }
        }
    }

    #[test]
    fn golden_cards_read_as_kept() {
        crate::chat::golden::check("whatsapp", shown);
    }
}
