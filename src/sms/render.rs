//! A [`Card`] as one compact text message: no markup, no buttons, and within two
//! segments where it can be.
//!
//! 1. The card's parts become lines, each with a priority: what it is and its id, the
//!    first line (agent and tool), the risk in words, the outcome, the replies that
//!    work and the dashboard link are always kept; the key argument, the agent's
//!    summary, other fields and list items are kept while they fit.
//! 2. Agent text is data: hidden characters are written out (`\u202e`), line breaks in
//!    it become spaces (so it cannot start a line that looks like gatebot's), and each
//!    value is cut to a length of its own.
//! 3. gatebot's own typography (`·`, `→`, `…`, emoji icons) is written in GSM-7, so a
//!    card costs 160 characters a segment (153 once split) unless the agent's own
//!    text needs UCS-2 (70, 67 once split).
//! 4. Optional lines are dropped, least important first, until the text fits in
//!    [`TARGET_SEGMENTS`]; the whole is never longer than Twilio's 1 600 characters.

use crate::chat::card::{Block, Card, Line, Span, Tag};
use crate::subject::SubjectKind;

/// A card aims at this many segments.
pub const TARGET_SEGMENTS: usize = 2;
/// The longest body the Messages API takes.
pub const MAX_BODY_CHARS: usize = 1600;

/// GSM 03.38's basic character set: one septet each.
const GSM_BASIC: &str = "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà";
/// Its extension table: two septets each (an escape, then the character).
const GSM_EXTENDED: &str = "^{}\\[~]|€\u{0c}";

/// How a text is encoded for SMS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// GSM-7: 160 septets in one segment, 153 a segment once split.
    Gsm7,
    /// UCS-2, when any character is outside GSM-7: 70 units, 67 once split.
    Ucs2,
}

/// How many segments `text` is sent as, and in which encoding.
#[must_use]
pub fn segments(text: &str) -> (usize, Encoding) {
    let mut septets = 0;
    let mut gsm = true;
    for c in text.chars() {
        if GSM_BASIC.contains(c) {
            septets += 1;
        } else if GSM_EXTENDED.contains(c) {
            septets += 2;
        } else {
            gsm = false;
            break;
        }
    }
    let (units, single, part, encoding) = if gsm {
        (septets, 160, 153, Encoding::Gsm7)
    } else {
        (text.encode_utf16().count(), 70, 67, Encoding::Ucs2)
    };
    let n = if units <= single {
        1
    } else {
        units.div_ceil(part)
    };
    (n, encoding)
}

/// A line of the message and how much it matters (0: always kept; higher numbers are
/// dropped first).
struct Part {
    text: String,
    rank: u8,
}

/// The message that shows `card`; `dashboard` is the dashboard's public URL, when it is
/// on (a request's card then links to its page there: a link never decides by itself).
#[must_use]
pub fn render(card: &Card, dashboard: Option<&str>) -> String {
    let mut parts = Vec::new();
    let mut short = None;
    let mut kind = None;
    let mut lines: u8 = 0;
    for block in &card.blocks {
        match block {
            Block::Heading { title, tag, .. } => {
                let tag = match tag {
                    Some(Tag::Subject { kind: k, short: s }) => {
                        short = Some(s.clone());
                        kind = Some(*k);
                        format!(" - id {s}")
                    }
                    Some(Tag::Label(l)) => format!(" - {}", line(l, 40)),
                    None => String::new(),
                };
                parts.push(Part {
                    text: format!("{}{tag}", ours(title).trim()),
                    rank: 0,
                });
            }
            // The first line says who wants what; later ones are explanations.
            Block::Line(l) => {
                let rank = if lines == 0 { 0 } else { 1 + lines };
                lines = lines.saturating_add(1);
                parts.push(Part {
                    text: line(l, 70).trim().to_string(),
                    rank,
                });
            }
            Block::Fields(fields) => {
                for f in fields {
                    let value = line(&f.value, 60);
                    let (text, rank) = if f.label == "Risk" {
                        // The level in words, without the reasons after it.
                        let level = value.split(':').next().unwrap_or_default().to_string();
                        (format!("Risk: {level}"), 0)
                    } else {
                        (format!("{}: {value}", ours(&f.label)), 3)
                    };
                    parts.push(Part { text, rank });
                }
            }
            Block::Code(c) => match c.lang {
                Some("json") => {
                    let args = serde_json::from_str(&c.body)
                        .map(|v| crate::words::key_arguments(&v))
                        .unwrap_or_default();
                    if let Some(first) = args.first() {
                        parts.push(Part {
                            text: data(first, 60),
                            rank: 1,
                        });
                    }
                }
                _ => parts.push(Part {
                    text: format!("{}: {}", ours(&c.label), data(&c.body, 80)),
                    rank: 4,
                }),
            },
            Block::List(items) => {
                for (i, item) in items.iter().enumerate() {
                    parts.push(Part {
                        text: format!("- {}", line(item, 50)),
                        rank: 5 + u8::try_from(i.min(200)).unwrap_or(200),
                    });
                }
            }
            Block::Outcome(o) => parts.push(Part {
                text: data(o, 100),
                rank: 0,
            }),
        }
    }
    if let (Some(hint), Some(s)) = (&card.hint, &short) {
        let words: Vec<String> = hint
            .reply_words
            .iter()
            .map(|w| format!("\"{s} {}\"", yes_no(w)))
            .collect();
        let mut reply = String::from("Text ");
        reply.push_str(&words.join(" or "));
        if let Some(cmd) = &hint.command {
            if words.is_empty() {
                reply.push_str(cmd);
            } else {
                reply.push_str(&format!(" or {cmd}"));
            }
        }
        parts.push(Part {
            text: reply,
            rank: 0,
        });
    }
    if let (Some(base), Some(s), Some(SubjectKind::Approval)) = (dashboard, &short, kind) {
        parts.push(Part {
            text: format!("{}/requests/{s}", base.trim_end_matches('/')),
            rank: 0,
        });
    }
    fit(parts)
}

/// The whole of a card as a phone shows it, for review (golden files), with its cost.
#[must_use]
pub fn shown(card: &Card) -> String {
    let text = render(card, Some("https://gatebot.example.com"));
    let (n, encoding) = segments(&text);
    format!(
        "{text}\n--- {n} segment(s), {encoding:?}, {} characters\n",
        text.chars().count()
    )
}

/// Drops the least important parts until the text fits in [`TARGET_SEGMENTS`], then
/// cuts it at [`MAX_BODY_CHARS`].
fn fit(mut parts: Vec<Part>) -> String {
    let join = |parts: &[Part]| {
        parts
            .iter()
            .map(|p| p.text.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    };
    loop {
        let text = join(&parts);
        if segments(&text).0 <= TARGET_SEGMENTS {
            return text;
        }
        let worst = parts
            .iter()
            .enumerate()
            .filter(|(_, p)| p.rank > 0)
            .max_by_key(|(i, p)| (p.rank, *i))
            .map(|(i, _)| i);
        match worst {
            Some(i) => {
                parts.remove(i);
            }
            None => return cut(&text, MAX_BODY_CHARS),
        }
    }
}

/// At most `max` characters of `s`, ending in `...` where it was cut.
fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let kept: String = s.chars().take(max.saturating_sub(3)).collect();
    format!("{}...", kept.trim_end())
}

/// A reply word as SMS offers it: `approve` is `yes`, `deny [reason]` is `no [reason]`.
fn yes_no(word: &str) -> String {
    if let Some(rest) = word.strip_prefix("approve") {
        format!("yes{rest}")
    } else if let Some(rest) = word.strip_prefix("deny") {
        format!("no{rest}")
    } else {
        word.to_string()
    }
}

/// A line of a card: gatebot's words in GSM-7, agent text (code spans) as data.
fn line(l: &Line, max: usize) -> String {
    let mut out = String::new();
    for span in &l.0 {
        match span {
            Span::Text(t) | Span::Strong(t) | Span::Em(t) => out.push_str(&ours(t)),
            Span::Code(t) => out.push_str(&data(t, max)),
            Span::Mention { name, .. } => out.push_str(&data(name, 40)),
        }
    }
    cut(&out, max)
}

/// Text from an agent (or from anyone but gatebot): hidden characters written out,
/// on one line, cut to `max` characters.
fn data(text: &str, max: usize) -> String {
    let shown = crate::names::visible(text);
    let one_line: String = shown.split_whitespace().collect::<Vec<_>>().join(" ");
    cut(ours(&one_line).trim(), max)
}

/// gatebot's own words in characters GSM-7 has: its typography spelled out, its emoji
/// icons left out.
fn ours(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '·' | '–' | '—' => out.push('-'),
            '→' => out.push_str("->"),
            '…' => out.push_str("..."),
            '×' => out.push('x'),
            '‘' | '’' => out.push('\''),
            '“' | '”' => out.push('"'),
            '\u{a0}' | '\u{2009}' | '\u{202f}' => out.push(' '),
            c if is_icon(c) => {}
            c => out.push(c),
        }
    }
    out
}

/// Emoji and pictographs, with the selectors and joiners that build them.
fn is_icon(c: char) -> bool {
    matches!(c as u32,
        0x1F000..=0x1FAFF | 0x2300..=0x23FF | 0x25A0..=0x25FF | 0x2600..=0x27BF | 0x2B00..=0x2BFF
        | 0xFE0F | 0x200D | 0x20E3)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_count_gsm7_and_ucs2_as_carriers_do() {
        assert_eq!(segments(&"a".repeat(160)), (1, Encoding::Gsm7));
        assert_eq!(segments(&"a".repeat(161)), (2, Encoding::Gsm7));
        assert_eq!(segments(&"a".repeat(306)), (2, Encoding::Gsm7));
        assert_eq!(segments(&"a".repeat(307)), (3, Encoding::Gsm7));
        // An extension character takes two septets.
        assert_eq!(segments(&"[".repeat(80)), (1, Encoding::Gsm7));
        assert_eq!(segments(&"[".repeat(81)), (2, Encoding::Gsm7));
        assert_eq!(segments(&"é".repeat(160)), (1, Encoding::Gsm7));
        assert_eq!(segments(&"ж".repeat(70)), (1, Encoding::Ucs2));
        assert_eq!(segments(&"ж".repeat(71)), (2, Encoding::Ucs2));
        assert_eq!(
            segments(&format!("{}ж", "a".repeat(133))),
            (2, Encoding::Ucs2)
        );
        assert_eq!(segments("🙂").1, Encoding::Ucs2);
    }

    #[test]
    fn every_golden_card_fits_in_two_gsm7_segments_or_says_why() {
        for (name, card) in crate::chat::golden::golden_cards() {
            let text = render(&card, Some("https://gatebot.example.com"));
            let (n, encoding) = segments(&text);
            assert!(text.chars().count() <= MAX_BODY_CHARS, "{name}");
            assert_eq!(
                encoding,
                Encoding::Gsm7,
                "{name}: gatebot's words are GSM-7:\n{text}"
            );
            // Help is a list of commands: it may take more.
            if !name.starts_with("help") {
                assert!(n <= TARGET_SEGMENTS, "{name} takes {n} segments:\n{text}");
            }
        }
    }

    #[test]
    fn golden_cards_read_as_kept() {
        crate::chat::golden::check("sms", shown);
    }

    #[test]
    fn hostile_agent_text_stays_data_on_one_line_and_is_cut() {
        let card = Card {
            blocks: vec![
                Block::Heading {
                    icon: "🛡",
                    title: "gatebot: request".into(),
                    tag: Some(Tag::subject(SubjectKind::Approval, "k7m2abcd")),
                },
                Block::Line(
                    Line(vec![Span::Code(format!(
                        "evil\u{202e}\nRisk: low\u{7}{}",
                        "x".repeat(500)
                    ))])
                    .and(" wants to run ")
                    .code("rm"),
                ),
            ],
            ..Card::default()
        };
        let text = render(&card, None);
        assert!(text.contains("evil\\u202e Risk: low\\u0007"), "{text}");
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(
            !text.contains('\u{202e}') && text.chars().count() < 200,
            "{text}"
        );
    }
}
