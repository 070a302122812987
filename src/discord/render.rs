//! Cards as Discord messages: markdown `content` and buttons in action rows.
//!
//! 1. Every string of a card passes through [`escape`]: hidden characters are written
//!    out, and every character Discord's markdown gives a meaning (`*`, `_`, `~`, `|`,
//!    `` ` ``, `[`, `]`, `<`, `@`, `\`; `#`, `>` and `-` at the start of a line) is
//!    escaped with a backslash, so agent text can form no formatting, link, heading, quote or mention
//!    (`@everyone`, `<@id>`, `<#id>`). Messages are sent with `allowed_mentions` that
//!    ping nobody but whom gatebot means ([`allowed_mentions`]), in case anything slips.
//! 2. Inline values go in `inline code` (backticks become `'`), long agent text in
//!    ``` blocks (a fence inside is broken up with zero-width spaces).
//! 3. A message may hold 2000 characters (counted here in UTF-16 units, never fewer).
//!    [`OUTCOME_ROOM`] of them are kept back for the outcome a settled card gains, so a
//!    prompt and its final edit cut the agent's text at the same place. Lists take the
//!    room they need first, code blocks share the rest in order, each within its `max`;
//!    every cut goes through [`text::fit`] and says what it left out.
//! 4. Buttons go in action rows: at most [`MAX_BUTTONS_PER_ROW`] a row and
//!    [`MAX_ROWS`] rows (a longer row is split); labels within [`MAX_LABEL`],
//!    `custom_id` (the card's `gb1:…` data, at most 64 bytes) within
//!    [`MAX_CUSTOM_ID`].

use serde_json::{json, Value};

use crate::chat::card::{Block, Button, Card, Code, Hint, Line, Span, Style};
use crate::chat::text::{self, len16};

/// Discord's limit on a message's `content`, in characters.
pub const MAX_CONTENT: usize = 2000;
/// Room kept for the outcome line (and the hint) of a card.
pub const OUTCOME_ROOM: usize = 400;
/// Room kept per code block for its label, fences and cut note.
const NOTE_ROOM: usize = 120;
/// Discord's limits on components: buttons in a row, rows in a message.
pub const MAX_BUTTONS_PER_ROW: usize = 5;
pub const MAX_ROWS: usize = 5;
/// Discord's limit on a button's label, in characters.
pub const MAX_LABEL: usize = 80;
/// Discord's limit on a component's `custom_id`, in characters.
pub const MAX_CUSTOM_ID: usize = 100;

/// Component type of an action row, of a button (Discord's numbers).
pub const ACTION_ROW: u64 = 1;
pub const BUTTON: u64 = 2;

/// A rendered card: the message's `content` and `components`.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub content: String,
    pub components: Vec<Value>,
    /// The user ids the card mentions on purpose (a reminder): only they are pinged.
    pub mentions: Vec<String>,
}

impl Message {
    /// The JSON body of a create or edit call (`POST`/`PATCH` a message, an
    /// interaction's follow-up or original response).
    #[must_use]
    pub fn body(&self) -> Value {
        json!({
            "content": self.content,
            "components": self.components,
            "allowed_mentions": allowed_mentions(&self.mentions),
        })
    }
}

/// `allowed_mentions` that ping the `users` named and nobody else: no `@everyone`, no
/// `@here`, no roles, whatever the content says.
#[must_use]
pub fn allowed_mentions(users: &[String]) -> Value {
    json!({"parse": [], "users": users, "replied_user": false})
}

/// The whole of a card as Discord shows it, for review (golden files): the message's
/// markdown, then its buttons, a row a line (`[ ✅ Allow once ] [ ❌ Deny ]`).
#[must_use]
pub fn shown(card: &Card) -> String {
    let m = render(card);
    let mut shown = m.content;
    shown.push('\n');
    for row in &m.components {
        let labels: Vec<String> = row["components"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|b| format!("[ {} ]", b["label"].as_str().unwrap_or("?")))
            .collect();
        shown.push_str(&format!("\n{}", labels.join(" ")));
    }
    shown + "\n"
}

/// A card as a message.
#[must_use]
pub fn render(card: &Card) -> Message {
    let content = markdown(card);
    let mut mentions = Vec::new();
    for b in &card.blocks {
        let lines: Vec<&Line> = match b {
            Block::Line(l) => vec![l],
            Block::Fields(fs) => fs.iter().map(|f| &f.value).collect(),
            Block::List(items) => items.iter().collect(),
            _ => vec![],
        };
        for l in lines {
            for s in &l.0 {
                if let Span::Mention { id, .. } = s {
                    if is_user_id(id) && !mentions.contains(id) {
                        mentions.push(id.clone());
                    }
                }
            }
        }
    }
    Message {
        content,
        components: components(&card.buttons),
        mentions,
    }
}

/// Buttons as action rows: a row of more than [`MAX_BUTTONS_PER_ROW`] is split, rows
/// past [`MAX_ROWS`] are left out (every card's actions can be typed as commands too).
#[must_use]
pub fn components(rows: &[Vec<Button>]) -> Vec<Value> {
    rows.iter()
        .flat_map(|row| row.chunks(MAX_BUTTONS_PER_ROW))
        .filter(|row| !row.is_empty())
        .take(MAX_ROWS)
        .map(|row| {
            json!({
                "type": ACTION_ROW,
                "components": row.iter().map(button).collect::<Vec<_>>(),
            })
        })
        .collect()
}

fn button(b: &Button) -> Value {
    // Discord's styles: 1 primary (blurple), 2 secondary (grey), 4 danger (red).
    let style = match b.style {
        Style::Primary => 1,
        Style::Default => 2,
        Style::Danger => 4,
    };
    let (label, _) = text::fit(&crate::names::visible(&b.label), "the label", |p| {
        p.chars().count() <= MAX_LABEL
    });
    json!({"type": BUTTON, "style": style, "label": label, "custom_id": b.data})
}

/// Whether `id` is a Discord user id, which a mention can name.
fn is_user_id(id: &str) -> bool {
    crate::config::discord::is_snowflake(id)
}

/// Escapes `s` for Discord markdown: hidden characters written out, every markdown
/// character preceded by a backslash (see the module docs). `#`, `>` and `-` mean
/// something only at the start of a line (a heading, a quote, a list or subtext), so
/// they are escaped there alone; `(` and `)` make a link only after `[…]`, whose
/// brackets are escaped.
#[must_use]
pub fn escape(s: &str) -> String {
    let s = crate::names::visible(s);
    let mut out = String::with_capacity(s.len() + 8);
    let mut line_start = true;
    for c in s.chars() {
        let always = matches!(
            c,
            '\\' | '*' | '_' | '~' | '|' | '`' | '[' | ']' | '<' | '@'
        );
        let at_start = line_start && matches!(c, '#' | '>' | '-');
        if always || at_start {
            out.push('\\');
        }
        out.push(c);
        if c == '\n' {
            line_start = true;
        } else if !c.is_whitespace() {
            line_start = false;
        }
    }
    out
}

/// Text for inside `inline code`: markdown is not read there, but a backtick would end
/// it and a line break would spill out of it.
#[must_use]
pub fn inline_code(s: &str) -> String {
    let body = crate::names::visible(s)
        .replace('`', "'")
        .replace(['\n', '\r'], " ");
    if body.trim().is_empty() {
        return escape(s);
    }
    format!("`{body}`")
}

/// Text inside a ``` block: a fence in it is broken up so it cannot close the block, and
/// a backtick at its end is kept apart from the closing fence.
#[must_use]
pub fn code_block(s: &str, lang: Option<&str>) -> String {
    let mut body = crate::names::visible(s).replace("```", "`\u{200b}`\u{200b}`");
    if body.ends_with('`') {
        body.push('\u{200b}');
    }
    format!("```{}\n{body}\n```", lang.unwrap_or(""))
}

/// A line's spans as markdown.
#[must_use]
pub fn line(l: &Line) -> String {
    l.0.iter()
        .map(|s| match s {
            Span::Text(t) => escape(t),
            Span::Code(t) => inline_code(t),
            Span::Strong(t) => marked("**", t),
            Span::Em(t) => marked("*", t),
            Span::Mention { id, .. } if is_user_id(id) => format!("<@{id}>"),
            Span::Mention { name, .. } => escape(name),
        })
        .collect()
}

/// `text` between `mark`s, with its white space outside them (Discord, like Slack,
/// shows `**bold **` with its stars).
fn marked(mark: &str, text: &str) -> String {
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

fn separator(b: &Block) -> &'static str {
    match b {
        Block::Heading { .. } | Block::Code(_) | Block::Outcome(_) => "\n\n",
        Block::Line(_) | Block::Fields(_) | Block::List(_) => "\n",
    }
}

/// The card's markdown, within [`MAX_CONTENT`].
#[must_use]
pub fn markdown(card: &Card) -> String {
    // First what cannot be cut, then lists, then code blocks in the room left.
    let mut parts: Vec<Option<String>> = card
        .blocks
        .iter()
        .map(|b| match b {
            Block::Heading { icon, title, tag } => Some(format!(
                "{icon} **{}**{}",
                escape(title),
                tag.as_ref()
                    .map(|t| format!(" · {}", line(&t.line())))
                    .unwrap_or_default()
            )),
            Block::Line(l) => Some(line(l)),
            Block::Fields(fs) => Some(
                fs.iter()
                    .map(|f| format!("**{}:** {}", escape(&f.label), line(&f.value)))
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
    let fixed: usize = parts
        .iter()
        .zip(&card.blocks)
        .filter(|(_, b)| !matches!(b, Block::Outcome(_)))
        .filter_map(|(p, _)| p.as_ref())
        .map(|p| len16(p) + 2)
        .sum();
    let code_overhead: usize = card
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Code(c) => Some(len16(&escape(&c.label)) + NOTE_ROOM),
            _ => None,
        })
        .sum();
    let mut room = MAX_CONTENT
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
    within_limit(out)
}

/// The last guard: text over [`MAX_CONTENT`] (a card of many long fixed lines) loses
/// whole lines from its end, and says so. Cutting whole lines never splits an escape,
/// inline code or a fence's line; an open fence is closed.
fn within_limit(text: String) -> String {
    if len16(&text) <= MAX_CONTENT {
        return text;
    }
    const MORE: &str = "\n… (cut to fit Discord's message size; full text: gatebot status)";
    let mut out = String::new();
    let mut fenced = false;
    for l in text.lines() {
        let closing = if fenced || l.starts_with("```") {
            "\n```"
        } else {
            ""
        };
        if len16(&out) + 1 + len16(l) + len16(closing) + len16(MORE) > MAX_CONTENT {
            break;
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(l);
        if l.starts_with("```") && !(l.len() > 3 && l.ends_with("```")) {
            fenced = !fenced;
        }
    }
    if fenced {
        out.push_str("\n```");
    }
    out.push_str(MORE);
    out
}

/// The outcome in bold, cut to fit [`OUTCOME_ROOM`].
fn outcome(o: &str) -> String {
    let (kept, note) = text::fit(o, "the outcome", |p| {
        len16(&escape(&p.replace('\n', " "))) <= OUTCOME_ROOM - 150
    });
    let bold = format!("**{}**", escape(&kept.replace('\n', " ")));
    match note {
        Some(n) => format!("{bold}\n*{}*", escape(&n)),
        None => bold,
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

/// A labelled code block whose body takes at most `room` (and its `max`), and the room
/// its body took.
fn code(c: &Code, room: usize) -> (String, usize) {
    let room = c.max.map_or(room, |m| m.min(room));
    let (kept, note) = text::fit(&c.body, c.what, |p| len16(&code_block(p, c.lang)) <= room);
    let block = code_block(&kept, c.lang);
    let taken = len16(&block);
    let mut out = format!("**{}:**\n{block}", escape(&c.label));
    if let Some(n) = note {
        out.push_str(&format!("\n*{}*", escape(&n)));
    }
    (out, taken)
}

fn hint(h: &Hint, buttons: bool) -> String {
    let words = h
        .reply_words
        .iter()
        .map(|w| inline_code(w))
        .collect::<Vec<_>>()
        .join(" or ");
    let command = h.command.as_ref().map(|c| inline_code(c));
    match (words.is_empty(), command, buttons) {
        (true, Some(c), _) => format!("Use {c}."),
        (true, None, true) => "Press a button.".to_string(),
        (true, None, false) => String::new(),
        (false, Some(c), true) => {
            format!("Press a button, reply to this message with {words}, or use {c}.")
        }
        (false, Some(c), false) => format!("Reply to this message with {words}, or use {c}."),
        (false, None, true) => format!("Press a button, or reply to this message with {words}."),
        (false, None, false) => format!("Reply to this message with {words}."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chat::card::Tag;
    use crate::subject::SubjectKind;

    fn hostile() -> Card {
        Card {
            blocks: vec![
                Block::Heading {
                    icon: "🛡",
                    title: "gatebot: approval needed".into(),
                    tag: Some(Tag::subject(SubjectKind::Approval, "k7m2abcd")),
                },
                Block::Line(
                    Line::text("@everyone ")
                        .code("rm -rf ` @here")
                        .and(" **bold** <@123456789012345678> [x](https://evil) # h"),
                ),
                Block::Code(Code {
                    label: "Summary from the agent".into(),
                    body: "```\n@everyone\n```**Risk: low**\u{202e}".into(),
                    lang: None,
                    what: "the summary",
                    max: None,
                }),
            ],
            ..Card::default()
        }
    }

    #[test]
    fn hostile_text_forms_no_markup_no_mention_and_no_fence() {
        let t = markdown(&hostile());
        assert!(t.contains("\\@everyone "), "{t}");
        assert!(t.contains("`rm -rf ' @here`"), "{t}");
        assert!(t.contains("\\*\\*bold\\*\\*"), "{t}");
        assert!(t.contains("\\<\\@123456789012345678>"), "{t}");
        assert!(t.contains("\\[x\\](https://evil)"), "{t}");
        assert_eq!(escape("# h\n - > a-b"), "\\# h\n \\- > a-b");
        // One opening and one closing fence: the agent's fence is broken up.
        assert_eq!(t.matches("```").count(), 2, "{t}");
        assert!(t.contains("\\u202e") && !t.contains('\u{202e}'), "{t}");
        let m = render(&hostile());
        assert!(m.mentions.is_empty());
        assert_eq!(m.body()["allowed_mentions"]["parse"], json!([]));
    }

    #[test]
    fn the_heading_reads_back_as_the_subject_tag() {
        let t = markdown(&hostile());
        assert_eq!(Tag::read(&t).as_deref(), Some("k7m2abcd"), "{t}");
    }

    #[test]
    fn a_mention_of_a_user_pings_that_user_alone() {
        let card = Card {
            blocks: vec![Block::Line(
                Line::text("Reminder for ")
                    .mention("123456789012345678", "alice")
                    .mention("U0AAA", "bob"),
            )],
            ..Card::default()
        };
        let m = render(&card);
        assert!(m.content.contains("<@123456789012345678>"), "{}", m.content);
        assert!(m.content.contains("bob") && !m.content.contains("U0AAA"));
        assert_eq!(m.mentions, ["123456789012345678"]);
    }

    #[test]
    fn golden_cards_read_as_kept() {
        crate::chat::golden::check("discord", shown);
    }

    /// Every kind's example cards within Discord's limits: content, rows, buttons per
    /// row, labels, custom ids (that decode as gatebot's).
    #[test]
    fn every_kinds_cards_fit_discords_limits() {
        let mut cards: Vec<(String, Card)> = crate::chat::conversation::example_cards()
            .into_iter()
            .map(|(n, c)| (n.to_string(), c))
            .collect();
        cards.extend(crate::chat::golden::golden_cards());
        assert!(!cards.is_empty());
        for (kind, card) in cards {
            let m = render(&card);
            assert!(
                len16(&m.content) <= MAX_CONTENT,
                "{kind}: {}",
                len16(&m.content)
            );
            assert!(m.components.len() <= MAX_ROWS, "{kind}");
            for row in &m.components {
                assert_eq!(row["type"], ACTION_ROW);
                let buttons = row["components"].as_array().unwrap();
                assert!(!buttons.is_empty() && buttons.len() <= MAX_BUTTONS_PER_ROW);
                for b in buttons {
                    let id = b["custom_id"].as_str().unwrap();
                    assert!(
                        !id.is_empty() && id.chars().count() <= MAX_CUSTOM_ID,
                        "{kind}: {id}"
                    );
                    assert!(
                        crate::chat::conversation::Action::decode(id).is_ok(),
                        "{id}"
                    );
                    let label = b["label"].as_str().unwrap();
                    assert!(!label.is_empty() && label.chars().count() <= MAX_LABEL);
                }
            }
        }
    }

    #[test]
    fn a_maximal_request_fits_one_message_pending_and_settled() {
        use crate::approval::{Status, Via};
        use crate::chat::conversation::approval::{card, sample};
        let mut a = sample();
        a.summary = Some("*_".repeat(crate::wire::MAX_SUMMARY_CHARS / 2));
        a.args = serde_json::json!({"body": "\u{1F600}`".repeat(10_000)});
        a.tool = "@".repeat(crate::wire::MAX_TOOL_LEN);
        a.policy_reason = format!("{} is a destructive tool", a.tool);
        let t = markdown(&card(&a));
        assert!(len16(&t) <= MAX_CONTENT, "{}", len16(&t));
        assert!(t.contains("more characters of"), "{t}");
        a.status = Status::Rejected;
        a.decided_by = Some("alice".into());
        a.decided_via = Some(Via::Cli);
        a.decided_at = Some(0);
        a.decision_reason = Some("<no>".repeat(5000));
        let t = markdown(&card(&a));
        assert!(len16(&t) <= MAX_CONTENT, "{}", len16(&t));
        assert!(
            t.contains("**❌ Denied by alice on the command line"),
            "{t}"
        );
    }

    #[test]
    fn long_rows_are_split_and_extra_rows_left_out() {
        let row: Vec<Button> = (0..7)
            .map(|i| Button::new(format!("b{i}"), format!("gb1:x{i}")))
            .collect();
        let rows = vec![row.clone(), row.clone(), row.clone()];
        let c = components(&rows);
        assert_eq!(c.len(), MAX_ROWS);
        assert_eq!(c[0]["components"].as_array().unwrap().len(), 5);
        assert_eq!(c[1]["components"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn an_oversized_card_loses_whole_lines_and_closes_its_fence() {
        let card = Card {
            blocks: (0..200)
                .map(|i| Block::Line(Line::text(format!("line {i} ")).code("x".repeat(40))))
                .collect(),
            ..Card::default()
        };
        let t = markdown(&card);
        assert!(len16(&t) <= MAX_CONTENT);
        assert!(t.ends_with("full text: gatebot status)"), "{t}");
        let fenced = within_limit(format!("a\n```\n{}\n```", "y\n".repeat(3000)));
        assert!(len16(&fenced) <= MAX_CONTENT);
        assert_eq!(fenced.matches("```").count(), 2, "{fenced}");
    }
}
