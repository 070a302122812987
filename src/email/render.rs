//! A card as a mail: the subject (gatebot's words only), a plain-text part and an HTML
//! part. Every string is escaped for HTML (maud escapes what it places) and shown with
//! its hidden characters written out ([`crate::names::visible`]); buttons, which a mail
//! cannot carry, become the link into the dashboard.

use maud::{html, Markup};

use crate::chat::card::{Block, Card, Code, Line, Span};
use crate::names::visible;

/// The longest subject, in characters.
const SUBJECT_CHARS: usize = 120;

/// A mail's parts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mail {
    pub subject: String,
    pub text: String,
    pub html: String,
}

/// Where a mail's link leads, and what it says of itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub url: String,
    /// "expires in 24 h", or `None` for a plain link (no sign-in).
    pub expires: Option<String>,
}

/// `card` as a mail, with `link` into the dashboard when the dashboard is on.
#[must_use]
pub fn render(card: &Card, link: Option<&Link>) -> Mail {
    let subject = format!(
        "[gatebot] {}",
        crate::words::cut(
            &visible(&card.fallback).replace(['\r', '\n'], " "),
            SUBJECT_CHARS
        )
    );
    let mut text = card.plain();
    let answer = link_words(link, !card.buttons.is_empty());
    if let Some((before, url, after)) = &answer {
        text.push_str(&format!("\n\n{before}\n{url}\n{after}"));
    }
    text.push_str("\n\n-- \ngatebot\n");
    let body = html! {
        @for b in &card.blocks { (block(b)) }
        @if let Some((before, url, after)) = &answer {
            p { (before) br; a href=(url) { (url) } br; small { (after) } }
        }
        hr;
        p { small { "gatebot" } }
    };
    let html = format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head><body>{}</body></html>",
        body.into_string()
    );
    Mail {
        subject,
        text,
        html,
    }
}

/// What the mail says about its link: before it, the URL, after it.
fn link_words(link: Option<&Link>, open: bool) -> Option<(String, String, String)> {
    let link = link?;
    let before = if open {
        "Open it in gatebot's dashboard to approve or deny:"
    } else {
        "See it in gatebot's dashboard:"
    };
    let after = match &link.expires {
        Some(e) => format!(
            "The link signs you in once and expires {e}; it decides nothing by itself. \
             Don't forward this mail."
        ),
        None => "Sign in to the dashboard to answer.".to_string(),
    };
    Some((before.to_string(), link.url.clone(), after))
}

fn block(b: &Block) -> Markup {
    match b {
        Block::Heading { icon, title, tag } => html! {
            h2 { (icon) " " (visible(title))
                @if let Some(t) = tag { " · " (line(&t.line())) } }
        },
        Block::Line(l) => html! { p { (line(l)) } },
        Block::Fields(fs) => html! {
            p { @for f in fs { b { (visible(&f.label)) ": " } (line(&f.value)) br; } }
        },
        Block::Code(c) => code(c),
        Block::List(items) => html! { ul { @for l in items { li { (line(l)) } } } },
        Block::Outcome(o) => html! { p { b { (visible(o)) } } },
    }
}

fn code(c: &Code) -> Markup {
    html! {
        p { b { (visible(&c.label)) ":" } }
        pre { code { (visible(&c.body)) } }
    }
}

fn line(l: &Line) -> Markup {
    html! {
        @for s in &l.0 {
            @match s {
                Span::Text(t) => (visible(t)),
                Span::Code(t) => code { (visible(t)) },
                Span::Strong(t) => b { (visible(t)) },
                Span::Em(t) => i { (visible(t)) },
                Span::Mention { name, .. } => b { (visible(name)) },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole mail of a card: its subject, then each part.
    fn shown(card: &Card) -> String {
        let link = Link {
            url: "https://gate.example.com/login/LINK".into(),
            expires: Some("in 24 h".into()),
        };
        let m = render(card, Some(&link));
        format!(
            "Subject: {}\n--- text/plain\n{}--- text/html\n{}\n",
            m.subject, m.text, m.html
        )
    }

    #[test]
    fn golden_cards_read_as_kept() {
        crate::chat::golden::check("email", shown);
    }

    #[test]
    fn agent_text_is_escaped_and_the_subject_holds_no_line_break() {
        let mut card = Card::text("hi");
        card.blocks.push(Block::Code(Code {
            label: "Arguments from the agent".into(),
            body: "<script>alert(1)</script>\u{202e}gnp.exe".into(),
            lang: None,
            what: "arguments",
            max: None,
        }));
        card.fallback = "Approval needed\r\nBcc: x@example.com".into();
        let link = Link {
            url: "https://gate.example.com/login/abc".into(),
            expires: Some("in 24 h".into()),
        };
        let m = render(&card, Some(&link));
        assert!(!m.subject.contains(['\r', '\n']), "{}", m.subject);
        assert!(m.html.contains("&lt;script&gt;"), "{}", m.html);
        assert!(!m.html.contains("<script>"));
        assert!(
            m.html.contains("\\u{202e}") || m.html.contains("\\u202e"),
            "{}",
            m.html
        );
        assert!(m.text.contains("https://gate.example.com/login/abc"));
        assert!(m.text.contains("decides nothing by itself"));
    }
}
