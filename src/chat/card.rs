//! Cards: what gatebot shows in a chat, independent of any platform's markup.
//!
//! A conversation kind builds a [`Card`] (a title, fields, code blocks of agent text,
//! lists, an outcome, buttons and a hint on how to answer by text); each platform has
//! one renderer (`telegram::render`, `slack::render`) that turns it into its markup and
//! owns escaping, the platform's length limits and cutting text to fit them (always
//! with [`crate::chat::text::fit`]).
//!
//! Every string a card shows is shown with its hidden characters written out
//! (`\u202e`, `\u00a0`: [`crate::names::visible`], applied by
//! [`crate::chat::text::escape`] and [`Card::plain`]), so no text can reverse or hide
//! what follows it. Text from agents (names, summaries, arguments, reasons) enters a
//! card only as data: [`Span::Code`] for short values shown as inline code, [`Block::Code`] for
//! long ones shown in a code block. Renderers escape every string they place, so no
//! card can carry markup, and agent text cannot imitate gatebot's own lines.

use crate::subject::SubjectKind;

/// A message gatebot shows in a chat.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Card {
    pub blocks: Vec<Block>,
    /// Rows of buttons.
    pub buttons: Vec<Vec<Button>>,
    /// How to answer by text, shown after everything else.
    pub hint: Option<Hint>,
    /// The notification text (Slack's `text`, a screen reader's summary): gatebot's
    /// words and ids only, never agent text.
    pub fallback: String,
}

/// One part of a card, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// The card's title (gatebot's words, starting "gatebot"), with an optional tag
    /// after it: the subject the card shows ("id `k7m2abcd`"), or a label.
    Heading {
        icon: &'static str,
        title: String,
        tag: Option<Tag>,
    },
    /// A line of gatebot's.
    Line(Line),
    /// `Label: value` lines.
    Fields(Vec<Field>),
    /// Agent text in a code block under a label, cut to fit with a note.
    Code(Code),
    /// A bulleted list.
    List(Vec<Line>),
    /// The final word on a settled subject ("✅ Approved by alice on Telegram …"),
    /// shown in bold, cut to fit with a note.
    Outcome(String),
}

/// What a heading names after its title.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tag {
    /// The subject the card shows: written by every renderer in one fixed form at the
    /// end of the card's first line (`🛡 gatebot: approval needed · id k7m2abcd`) and
    /// read back by [`Tag::read`], so a reply to a message gatebot has no record of
    /// still reaches its subject. Only a subject's own card carries it.
    Subject { kind: SubjectKind, short: String },
    /// Anything else a heading names (an agent), never read back.
    Label(Line),
}

impl Tag {
    /// The subject tag of `kind`'s subject `short` (its short id).
    #[must_use]
    pub fn subject(kind: SubjectKind, short: impl Into<String>) -> Tag {
        Tag::Subject {
            kind,
            short: short.into(),
        }
    }

    /// The tag as a line of the card: `id k7m2abcd`, the id as code.
    #[must_use]
    pub fn line(&self) -> Line {
        match self {
            Tag::Subject { short, .. } => Line::text("id ").code(short),
            Tag::Label(l) => l.clone(),
        }
    }

    /// The short id of the subject whose card `text` is, read back from the text a
    /// platform keeps of a message (Telegram's text, Slack's first block, with or
    /// without its markup): the first line must be a heading of gatebot's (an icon,
    /// then "gatebot") ending in ` · id <short id>`. Agent text never comes first in a
    /// card, and gatebot's other messages carry no such heading, so no agent can point
    /// a reply at another subject.
    #[must_use]
    pub fn read(text: &str) -> Option<String> {
        let first: String = text
            .lines()
            .next()?
            .chars()
            .filter(|c| !matches!(c, '*' | '`' | '_'))
            .collect();
        let (heading, tag) = first.trim().rsplit_once('·')?;
        let (icon, title) = heading.trim().split_once(' ')?;
        if icon.chars().any(char::is_alphanumeric) || !title.trim_start().starts_with("gatebot") {
            return None;
        }
        let short = tag.trim().strip_prefix("id ")?;
        let valid = short.len() == crate::approval::SHORT_ID_LEN
            && short
                .bytes()
                .all(|b| crate::approval::SHORT_ID_ALPHABET.contains(&b));
        valid.then(|| short.to_string())
    }
}

/// A code block of agent text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Code {
    /// gatebot's label above the block ("Arguments from the agent").
    pub label: String,
    pub body: String,
    /// Syntax for platforms that highlight (`json`).
    pub lang: Option<&'static str>,
    /// What a cut note calls the body ("arguments", "the summary").
    pub what: &'static str,
    /// The most room the block may take, in UTF-16 units of its escaped form, so
    /// that a long summary leaves room for the arguments after it.
    pub max: Option<usize>,
}

/// A line of text made of spans.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Line(pub Vec<Span>);

/// A run of text and how it looks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Span {
    /// Plain text.
    Text(String),
    /// Inline code: ids, names, commands, and any short value from an agent.
    Code(String),
    /// Bold.
    Strong(String),
    /// Italic.
    Em(String),
    /// A person gatebot calls on (a reminder): their identity on the platform (a
    /// Telegram user id, a Slack user id) and the name shown. Where the identity is not
    /// one the platform can mention, the name is shown as text.
    Mention { id: String, name: String },
}

/// `Label: value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub label: String,
    pub value: Line,
}

/// A button: its label and the data a press sends back (`gb1:…`, at most 64 bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Button {
    pub label: String,
    pub data: String,
    pub style: Style,
}

/// How a button looks where the platform has styles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Style {
    #[default]
    Default,
    Primary,
    Danger,
}

/// How to answer a card by text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hint {
    /// Words a reply to the card on Telegram or in its thread on Slack may be.
    pub reply_words: Vec<String>,
    /// A command that works anywhere (`/approve k7m2abcd`).
    pub command: Option<String>,
}

impl Line {
    /// A line of plain text.
    #[must_use]
    pub fn text(s: impl Into<String>) -> Line {
        Line(vec![Span::Text(s.into())])
    }

    /// A line of bold text.
    #[must_use]
    pub fn strong(s: impl Into<String>) -> Line {
        Line(vec![Span::Strong(s.into())])
    }

    /// Appends plain text.
    #[must_use]
    pub fn and(mut self, s: impl Into<String>) -> Line {
        self.0.push(Span::Text(s.into()));
        self
    }

    /// Appends a mention of a person ([`Span::Mention`]).
    #[must_use]
    pub fn mention(mut self, id: impl Into<String>, name: impl Into<String>) -> Line {
        self.0.push(Span::Mention {
            id: id.into(),
            name: name.into(),
        });
        self
    }

    /// Appends inline code.
    #[must_use]
    pub fn code(mut self, s: impl Into<String>) -> Line {
        self.0.push(Span::Code(s.into()));
        self
    }

    /// The line with its first letter capitalised.
    #[must_use]
    pub fn capitalised(mut self) -> Line {
        if let Some(Span::Text(t) | Span::Strong(t) | Span::Em(t)) = self.0.first_mut() {
            let mut c = t.chars();
            if let Some(first) = c.next() {
                *t = first.to_uppercase().chain(c).collect();
            }
        }
        self
    }

    /// The line's words without markup (tests, logs, fallbacks).
    #[must_use]
    pub fn plain(&self) -> String {
        self.0
            .iter()
            .map(|s| match s {
                Span::Text(t) | Span::Code(t) | Span::Strong(t) | Span::Em(t) => t.clone(),
                Span::Mention { name, .. } => format!("@{name}"),
            })
            .collect()
    }
}

impl Field {
    #[must_use]
    pub fn new(label: impl Into<String>, value: Line) -> Field {
        Field {
            label: label.into(),
            value,
        }
    }
}

impl Button {
    #[must_use]
    pub fn new(label: impl Into<String>, data: impl Into<String>) -> Button {
        Button {
            label: label.into(),
            data: data.into(),
            style: Style::Default,
        }
    }

    #[must_use]
    pub fn styled(mut self, style: Style) -> Button {
        self.style = style;
        self
    }
}

impl Card {
    /// A card of one plain-text line (answers to commands).
    #[must_use]
    pub fn text(s: impl Into<String>) -> Card {
        let s = s.into();
        Card {
            fallback: s.clone(),
            blocks: vec![Block::Line(Line::text(s))],
            ..Card::default()
        }
    }

    /// Every string the card shows, without markup (tests, the in-memory platform and
    /// Telegram's plain cards), hidden characters written out as
    /// [`crate::names::visible`] does.
    #[must_use]
    pub fn plain(&self) -> String {
        let mut out = Vec::new();
        for b in &self.blocks {
            match b {
                Block::Heading { icon, title, tag } => out.push(format!(
                    "{icon} {title}{}",
                    tag.as_ref()
                        .map(|t| format!(" · {}", t.line().plain()))
                        .unwrap_or_default()
                )),
                Block::Line(l) => out.push(l.plain()),
                Block::Fields(fs) => out.extend(
                    fs.iter()
                        .map(|f| format!("{}: {}", f.label, f.value.plain())),
                ),
                Block::Code(c) => out.push(format!("{}:\n{}", c.label, c.body)),
                Block::List(ls) => out.extend(ls.iter().map(|l| format!("• {}", l.plain()))),
                Block::Outcome(o) => out.push(o.clone()),
            }
        }
        crate::names::visible(&out.join("\n")).into_owned()
    }

    /// The data of every button, row by row.
    #[must_use]
    pub fn button_data(&self) -> Vec<&str> {
        self.buttons
            .iter()
            .flatten()
            .map(|b| b.data.as_str())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heading(tag: Tag) -> Card {
        Card {
            blocks: vec![
                Block::Heading {
                    icon: "🛡",
                    title: "gatebot: approval needed".into(),
                    tag: Some(tag),
                },
                Block::Line(Line::text("Agent: id zzzz9999")),
            ],
            ..Card::default()
        }
    }

    #[test]
    fn a_subject_tag_is_read_back_from_the_first_line_in_every_markup() {
        let card = heading(Tag::subject(SubjectKind::Approval, "k7m2abcd"));
        for text in [
            card.plain(),
            "🛡 gatebot: approval needed  ·  id k7m2abcd\nAgent: x".to_string(),
            "🛡 *gatebot: approval needed* · id `k7m2abcd`\n*Agent:* x".to_string(),
            "⏸ gatebot: workflow check-in · id k7m2wxyz".replace("wxyz", "abcd"),
            "🎓 gatebot: tier change proposed · id k7m2abcd".to_string(),
        ] {
            assert_eq!(Tag::read(&text).as_deref(), Some("k7m2abcd"), "{text}");
        }
    }

    #[test]
    fn nothing_else_reads_as_a_subject_tag() {
        let label = heading(Tag::Label(Line::text("task ").code("k7m2abcd")));
        for text in [
            label.plain(),
            "Agent: x\n🛡 gatebot: approval needed · id k7m2abcd".into(),
            "🛡 gatebot: approval needed · id K7M2ABCD".into(),
            "🛡 gatebot: approval needed · id k7m2abc1".into(),
            "🛡 gatebot: approval needed · id k7m2abcd0".into(),
            "✅ Approved k7m2abcd (x · id zzzz9999".into(),
            "🛡 someone: approval needed · id k7m2abcd".into(),
            "gatebot: approval needed · id k7m2abcd".into(),
            "⏳ Approval needed: request k7m2abcd (risk high)".into(),
            "2 pending request(s)\nk7m2abcd · mailer · id zzzz9999".into(),
            String::new(),
        ] {
            assert_eq!(Tag::read(&text), None, "{text}");
        }
    }
}
