//! Reading a chat message as a command: `/name args`, `/name@bot args` on Telegram, and
//! the plain words allowed in a reply to a card.
//!
//! Which names exist and what their arguments mean is up to the conversation kinds
//! ([`crate::chat::conversation::Command::parse`]); this module only splits the text.

/// A command as typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Typed<'a> {
    /// Lower case, `-` read as `_` (`/Approve-Always` is `approve_always`).
    pub name: String,
    /// Everything after the name, trimmed.
    pub args: &'a str,
}

/// Reads `/name[@bot] args`. `None` when the text is not a command, or when it is
/// addressed to another bot (`/approve@otherbot`); `bot_username` is our own.
#[must_use]
pub fn parse<'a>(text: &'a str, bot_username: Option<&str>) -> Option<Typed<'a>> {
    let text = text.trim();
    let (head, args) = match text.split_once(char::is_whitespace) {
        Some((h, r)) => (h, r.trim()),
        None => (text, ""),
    };
    let cmd = head.strip_prefix('/')?;
    let (name, addressed) = match cmd.split_once('@') {
        Some((n, bot)) => (n, Some(bot)),
        None => (cmd, None),
    };
    if let (Some(to), Some(me)) = (addressed, bot_username) {
        if !to.eq_ignore_ascii_case(me) {
            return None;
        }
    }
    Some(Typed {
        name: name.to_ascii_lowercase().replace('-', "_"),
        args,
    })
}

/// The first word of `s`.
#[must_use]
pub fn first_word(s: &str) -> Option<String> {
    s.split_whitespace().next().map(str::to_string)
}

/// `s` trimmed, or `None` when that leaves nothing.
#[must_use]
pub fn non_empty(s: &str) -> Option<String> {
    let t = s.trim();
    (!t.is_empty()).then(|| t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_split_into_name_and_arguments() {
        let t = parse("  /Approve-Always@GateBot  k7m2  ", Some("gatebot")).unwrap();
        assert_eq!((t.name.as_str(), t.args), ("approve_always", "k7m2"));
        assert_eq!(
            parse("/deny k7m2 too  much", None).unwrap().args,
            "k7m2 too  much"
        );
        assert!(parse("/approve@otherbot k7m2", Some("gatebot")).is_none());
        assert!(parse("approve k7m2", None).is_none());
    }
}
