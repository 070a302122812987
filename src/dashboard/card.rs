//! A card as HTML: the web's renderer, beside Telegram's and Slack's. The dashboard
//! shows every kind's card as the chats do, whole (no platform limit cuts it; long
//! agent text is folded instead), and its buttons as forms that take the same
//! decisions ([`crate::chat::conversation::Action::offered`]). Every string is shown
//! with its hidden characters written out and is escaped by maud; agent text is only
//! ever text.

use maud::{html, Markup, PreEscaped};

use crate::chat::card::{Block, Button, Card, Code, Line, Span, Style};
use crate::chat::conversation::Action;
use crate::config::Config;
use crate::names::visible;

/// Agent text longer than this many lines is folded (its first lines show).
const FOLD_LINES: usize = 16;
/// … or longer than this many characters.
const FOLD_CHARS: usize = 2_000;

/// `card` as HTML, its buttons as forms carrying `csrf`; `config` is the config in
/// force (what a time-boxed grant lasts).
#[must_use]
pub fn render(card: &Card, config: &Config, csrf: &str) -> Markup {
    html! {
        @for b in &card.blocks { (block(b)) }
        @let forms = actions(card, config, csrf);
        @if !forms.0.is_empty() { div.actions { (forms) } }
    }
}

fn block(b: &Block) -> Markup {
    match b {
        Block::Heading { icon, title, tag } => html! {
            h2 {
                span.icon aria-hidden="true" { (icon) } " " (visible(title))
                @if let Some(t) = tag { span.tag { " · " (line(&t.line())) } }
            }
        },
        Block::Line(l) => html! { p { (line(l)) } },
        Block::Fields(fs) => html! {
            dl.fields {
                @for f in fs { div { dt { (visible(&f.label)) } dd { (line(&f.value)) } } }
            }
        },
        Block::Code(c) => code(c),
        Block::List(items) => html! { ul { @for l in items { li { (line(l)) } } } },
        Block::Outcome(o) => html! { p.outcome { strong { (visible(o)) } } },
    }
}

fn line(l: &Line) -> Markup {
    html! {
        @for s in &l.0 {
            @match s {
                Span::Text(t) => (visible(t)),
                Span::Code(t) => code { (visible(t)) },
                Span::Strong(t) => strong { (visible(t)) },
                Span::Em(t) => em { (visible(t)) },
                Span::Mention { name, .. } => strong { (visible(name)) },
            }
        }
    }
}

/// Agent text in a block, folded when long (the summary says how long).
fn code(c: &Code) -> Markup {
    let body = visible(&c.body);
    let lines = body.lines().count();
    let long = lines > FOLD_LINES || body.chars().count() > FOLD_CHARS;
    html! {
        figure.code {
            @if long {
                details {
                    summary { (visible(&c.label)) " (" (lines) " lines: show all)" }
                    pre { code { (body) } }
                }
            } @else {
                figcaption { (visible(&c.label)) }
                pre { code { (body) } }
            }
        }
    }
}

/// The card's buttons that are owner decisions, as forms; the others (a review that
/// the page shows anyway, an answer typed in the chat) are left out.
fn actions(card: &Card, config: &Config, csrf: &str) -> Markup {
    let forms: Vec<Markup> = card
        .buttons
        .iter()
        .flatten()
        .filter_map(|b| button(b, config, csrf))
        .collect();
    if forms.is_empty() {
        return PreEscaped(String::new());
    }
    html! { @for f in forms { (f) } }
}

fn button(b: &Button, config: &Config, csrf: &str) -> Option<Markup> {
    let offered = Action::decode(&b.data).ok()?.offered(config)?;
    let class = match b.style {
        Style::Primary => "primary",
        Style::Danger => "danger",
        Style::Default => "plain",
    };
    Some(html! {
        form.decide method="post" action="/decide" data-verb=(offered.verb) {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="button" value=(b.data);
            @if offered.asks_reason {
                input type="text" name="reason" maxlength="2000" placeholder="Why? (the agent reads it)" aria-label="Reason";
            }
            button.(class) type="submit" { (visible(&b.label)) }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_in_etc;

    /// The whole HTML of a card, a tag a line, as the golden files keep it.
    fn shown(card: &Card) -> String {
        let config = parse_in_etc("").unwrap();
        render(card, &config, "CSRF")
            .into_string()
            .replace("><", ">\n<")
    }

    #[test]
    fn golden_cards_as_the_dashboard_draws_them() {
        crate::chat::golden::check("dashboard", shown);
    }

    #[test]
    fn agent_text_is_escaped_and_hidden_characters_written_out() {
        let mut card = crate::chat::conversation::approval::card(
            &crate::chat::conversation::approval::sample(),
        );
        card.blocks.push(Block::Code(Code {
            label: "Arguments from the agent".into(),
            body: "<img src=x onerror=alert(1)> \u{202e}gnp.exe".into(),
            lang: None,
            what: "arguments",
            max: None,
        }));
        let html = shown(&card);
        assert!(
            html.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{html}"
        );
        assert!(!html.contains("<img"), "{html}");
        assert!(
            !html.contains('\u{202e}') && html.contains("\\u202e"),
            "{html}"
        );
    }

    #[test]
    fn every_decision_button_of_a_request_is_a_form_and_deny_asks_why() {
        let card = crate::chat::conversation::approval::card(
            &crate::chat::conversation::approval::sample(),
        );
        let html = shown(&card);
        assert_eq!(
            html.matches("<form").count(),
            card.buttons.iter().flatten().count(),
            "{html}"
        );
        assert!(html.contains(r#"data-verb="deny""#) && html.contains(r#"name="reason""#));
    }
}
