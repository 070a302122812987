//! Names gatebot accepts from configs and agents.
//!
//! Agent and tool names are shown to owners (in `gatebot pending`, chat prompts, the
//! audit trail) as the thing being approved, so a name must look like what it is: a
//! name with a control, bidirectional-override or invisible character could pose as
//! another (`send\u{200B}_email` shows as `send_email`; `\u{202E}` reverses what
//! follows). Such names are refused, with the character and where it is.

/// Agent names appear in URLs, logs and chat prompts: keep them plain.
#[must_use]
pub fn valid_agent_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Characters that change how a name reads without showing themselves: Unicode's
/// default-ignorable code points (zero-width spaces and joiners, bidirectional marks,
/// overrides and isolates, variation selectors, tags, fillers), the interlinear
/// annotation marks, and line and paragraph separators.
const HIDDEN: &[(char, char)] = &[
    ('\u{00AD}', '\u{00AD}'),
    ('\u{034F}', '\u{034F}'),
    ('\u{061C}', '\u{061C}'),
    ('\u{115F}', '\u{1160}'),
    ('\u{17B4}', '\u{17B5}'),
    ('\u{180B}', '\u{180F}'),
    ('\u{200B}', '\u{200F}'),
    ('\u{2028}', '\u{202E}'),
    ('\u{2060}', '\u{206F}'),
    ('\u{3164}', '\u{3164}'),
    ('\u{FE00}', '\u{FE0F}'),
    ('\u{FEFF}', '\u{FEFF}'),
    ('\u{FFA0}', '\u{FFA0}'),
    ('\u{FFF0}', '\u{FFFB}'),
    ('\u{1BCA0}', '\u{1BCA3}'),
    ('\u{1D173}', '\u{1D17A}'),
    ('\u{E0000}', '\u{E0FFF}'),
];

/// Whether `c` would not show as itself in a name: a control character, whitespace
/// other than the plain space (a no-break or ideographic space reads as a space), or
/// one of [`HIDDEN`].
#[must_use]
pub fn is_hidden(c: char) -> bool {
    c.is_control()
        || (c.is_whitespace() && c != ' ')
        || HIDDEN.iter().any(|(lo, hi)| (*lo..=*hi).contains(&c))
}

/// `text` as a person should see it: every hidden character but the newline, the tab
/// and the two that build emoji (U+FE0F, U+200D) written out as `\u00a0` (beyond
/// U+FFFF as its UTF-16 pair, `\udb40\udc41`, so the escape is also JSON's and
/// `--json` output decodes to the original), so a no-break space cannot pass for a space, nor `\u202e` turn `txt.exe` into what reads `exe.txt`.
/// Everything gatebot shows of agent, task and model text goes through it (cards, the
/// command line). Borrowed when there is nothing to write out.
#[must_use]
pub fn visible(text: &str) -> std::borrow::Cow<'_, str> {
    // The emoji presentation selector and the zero-width joiner are parts of emoji
    // (gatebot's own "♾️" among them) and can neither reorder text nor pass for a space.
    let shown = |c: char| matches!(c, '\n' | '\t' | '\u{FE0F}' | '\u{200D}') || !is_hidden(c);
    if text.chars().all(shown) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if shown(c) {
            out.push(c);
        } else {
            for unit in c.encode_utf16(&mut [0; 2]) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Why `name`, given as the field `field`, cannot be shown as a name: the first
/// hidden character, as `U+200B` with its 1-based character position. `None`: fine.
#[must_use]
pub fn hidden_character(field: &str, name: &str) -> Option<String> {
    let (at, c) = name.chars().enumerate().find(|(_, c)| is_hidden(*c))?;
    Some(format!(
        "`{field}` contains an invisible or control character (U+{:04X} at character {}): \
         names must show as what they are, so such characters are refused",
        u32::from(c),
        at + 1
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_names_are_plain_and_short() {
        for ok in ["mailer", "ops-bot_2", "a.b", &"x".repeat(64)] {
            assert!(valid_agent_name(ok), "{ok}");
        }
        for bad in ["", "mail er", "mailer/1", "ünicode", "<b>", &"x".repeat(65)] {
            assert!(!valid_agent_name(bad), "{bad}");
        }
    }

    #[test]
    fn hidden_characters_are_shown_as_escapes() {
        assert_eq!(visible("git status"), "git status");
        assert!(matches!(visible("a\nb\tc"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(visible("ls\u{a0}-la"), "ls\\u00a0-la");
        assert_eq!(visible("\u{202e}txt.exe"), "\\u202etxt.exe");
        assert_eq!(visible("x\u{e0041}"), "x\\udb40\\udc41");
        // In JSON the escape decodes to the character itself.
        let json = visible(&serde_json::to_string("a\u{202e}b\u{e0041}").unwrap()).into_owned();
        assert_eq!(
            serde_json::from_str::<String>(&json).unwrap(),
            "a\u{202e}b\u{e0041}"
        );
        assert_eq!(
            visible("a\u{200b}b\u{3000}c\rd"),
            "a\\u200bb\\u3000c\\u000dd"
        );
    }

    #[test]
    fn names_that_could_pose_as_others_are_refused() {
        for (bad, code, at) in [
            ("send\u{200B}_email", "U+200B", 5),
            ("send_email\u{200D}", "U+200D", 11),
            ("\u{FEFF}send_email", "U+FEFF", 1),
            ("send_\u{202E}liame", "U+202E", 6),
            ("send\u{2066}_email\u{2069}", "U+2066", 5),
            ("send\u{200E}_email", "U+200E", 5),
            ("send\u{00A0}email", "U+00A0", 5),
            ("send\u{3000}email", "U+3000", 5),
            ("send\u{2028}email", "U+2028", 5),
            ("send\u{AD}_email", "U+00AD", 5),
            ("send_email\u{FE0F}", "U+FE0F", 11),
            ("send_email\u{E0041}", "U+E0041", 11),
            ("send\u{7}_email", "U+0007", 5),
            ("send\n_email", "U+000A", 5),
            ("send\u{85}_email", "U+0085", 5),
        ] {
            let why = hidden_character("tool", bad).unwrap_or_else(|| panic!("{bad:?}"));
            assert!(why.contains(code), "{why}");
            assert!(why.contains(&format!("at character {at})")), "{why}");
            assert!(why.starts_with("`tool` contains"), "{why}");
        }
    }

    #[test]
    fn names_in_any_script_with_plain_spaces_are_fine() {
        for ok in [
            "send_email",
            "mcp__github__create_issue",
            "Bash",
            "run query",
            "écrire_fichier",
            "写文件",
            "отправить",
            "emoji_📧",
        ] {
            assert_eq!(hidden_character("tool", ok), None, "{ok}");
        }
    }
}
