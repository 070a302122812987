//! Chat commands and button payloads, shared by Telegram and Slack.
//!
//! Accepted forms (case-insensitive, Telegram's `/cmd@botname` too):
//! - `/approve <id>`, `/approve_always <id>`, `/deny <id> [reason]`, `/pending`, `/help`
//! - OpenClaw's `/approve <id> allow-once|allow-always|deny [reason]`
//! - in a reply to (or thread of) a prompt, no id is needed: `/approve`, `/approve_always`,
//!   `/deny [reason]`, or plain `approve`, `always allow`, `deny [reason]`. In a reply,
//!   everything after `/deny` is the reason, and the prompt replied to names the request.

use crate::approval::Verb;

/// A parsed chat command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatCommand {
    Decide {
        verb: Verb,
        /// The id typed, if any (a reply to a prompt may omit it).
        id: Option<String>,
        reason: Option<String>,
    },
    Pending,
    Help,
}

/// Parses a message. `bot_username` is the bot's own username (Telegram), used to
/// ignore `/cmd@otherbot`; `in_reply` says the message replies to one of our prompts.
/// Returns `None` when the message is not for us.
#[must_use]
pub fn parse(text: &str, bot_username: Option<&str>, in_reply: bool) -> Option<ChatCommand> {
    let text = text.trim();
    let (head, rest) = match text.split_once(char::is_whitespace) {
        Some((h, r)) => (h, r.trim()),
        None => (text, ""),
    };
    if let Some(cmd) = head.strip_prefix('/') {
        let (name, addressed) = match cmd.split_once('@') {
            Some((n, bot)) => (n, Some(bot)),
            None => (cmd, None),
        };
        if let (Some(to), Some(me)) = (addressed, bot_username) {
            if !to.eq_ignore_ascii_case(me) {
                return None;
            }
        }
        let name = name.to_ascii_lowercase().replace('-', "_");
        return match name.as_str() {
            "approve" | "allow" => Some(approve(rest, in_reply)),
            "approve_always" | "allow_always" | "always" => Some(ChatCommand::Decide {
                verb: Verb::ApproveAlways,
                id: first_word(rest).filter(|_| !in_reply || !rest.is_empty()),
                reason: None,
            }),
            "deny" | "reject" => Some(deny(rest, in_reply)),
            "pending" | "list" => Some(ChatCommand::Pending),
            "help" | "start" => Some(ChatCommand::Help),
            _ => None,
        };
    }
    if !in_reply {
        return None;
    }
    // Plain words, only in a reply to a prompt.
    let lower = text.to_ascii_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    match words.as_slice() {
        ["approve" | "approved" | "allow" | "ok" | "yes"] => Some(ChatCommand::Decide {
            verb: Verb::Approve,
            id: None,
            reason: None,
        }),
        ["always" | "approve_always" | "allow_always"]
        | ["always", "allow" | "approve"]
        | ["approve" | "allow", "always"] => Some(ChatCommand::Decide {
            verb: Verb::ApproveAlways,
            id: None,
            reason: None,
        }),
        [first, ..] if matches!(*first, "deny" | "reject" | "no") => Some(ChatCommand::Decide {
            verb: Verb::Deny,
            id: None,
            reason: non_empty(rest),
        }),
        _ => None,
    }
}

fn approve(rest: &str, in_reply: bool) -> ChatCommand {
    let mut words = rest.split_whitespace();
    let id = words.next().map(str::to_string);
    // OpenClaw: `/approve <id> allow-once|allow-always|deny [reason]`.
    let verb = match words.next().map(|w| w.parse::<Verb>()) {
        Some(Ok(v)) => v,
        _ => Verb::Approve,
    };
    let reason = if verb == Verb::Deny {
        let after: Vec<&str> = words.collect();
        non_empty(&after.join(" "))
    } else {
        None
    };
    ChatCommand::Decide {
        verb,
        id: id.filter(|_| !(in_reply && rest.is_empty())),
        reason,
    }
}

fn deny(rest: &str, in_reply: bool) -> ChatCommand {
    if in_reply {
        return ChatCommand::Decide {
            verb: Verb::Deny,
            id: None,
            reason: non_empty(rest),
        };
    }
    let (id, reason) = match rest.split_once(char::is_whitespace) {
        Some((id, r)) => (Some(id.to_string()), non_empty(r)),
        None => (non_empty(rest), None),
    };
    ChatCommand::Decide {
        verb: Verb::Deny,
        id,
        reason,
    }
}

fn first_word(s: &str) -> Option<String> {
    s.split_whitespace().next().map(str::to_string)
}

fn non_empty(s: &str) -> Option<String> {
    let t = s.trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// The help text for chat users.
pub const HELP: &str = "gatebot asks you before agents take risky actions.\n\
/approve <id>: allow a request once\n\
/approve_always <id>: allow it and this tool for this agent from now on\n\
/deny <id> [reason]: refuse it; the reason reaches the agent\n\
/pending: list open requests\n\
<id> is the short id in the prompt, or its first 4+ characters. \
Replying to a prompt with approve or deny [reason] needs no id.";

/// What a prompt button does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Button {
    Approve,
    ApproveAlways,
    Deny,
    /// Deny without giving a reason (offered after ❌).
    DenyNoReason,
}

impl Button {
    fn code(self) -> char {
        match self {
            Button::Approve => 'a',
            Button::ApproveAlways => 'A',
            Button::Deny => 'd',
            Button::DenyNoReason => 's',
        }
    }

    #[must_use]
    pub fn verb(self) -> Verb {
        match self {
            Button::Approve => Verb::Approve,
            Button::ApproveAlways => Verb::ApproveAlways,
            Button::Deny | Button::DenyNoReason => Verb::Deny,
        }
    }
}

/// Telegram's limit on callback data, in bytes.
pub const MAX_BUTTON_DATA: usize = 64;

/// Encodes a button press as `gb1:<code>:<request id>` (≤ 64 bytes for a ULID).
#[must_use]
pub fn encode_button(button: Button, approval_id: &str) -> String {
    let data = format!("gb1:{}:{approval_id}", button.code());
    debug_assert!(data.len() <= MAX_BUTTON_DATA);
    data
}

/// Decodes button data; anything we did not produce is an error (forged or stale data).
pub fn decode_button(data: &str) -> Result<(Button, String), String> {
    let bad = || format!("unrecognised button data ({} bytes)", data.len());
    if data.len() > MAX_BUTTON_DATA {
        return Err(bad());
    }
    let rest = data.strip_prefix("gb1:").ok_or_else(bad)?;
    let (code, id) = rest.split_once(':').ok_or_else(bad)?;
    let button = match code {
        "a" => Button::Approve,
        "A" => Button::ApproveAlways,
        "d" => Button::Deny,
        "s" => Button::DenyNoReason,
        _ => return Err(bad()),
    };
    // Request ids are ULIDs: 26 Crockford base32 characters.
    if id.len() != 26 || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(bad());
    }
    Ok((button, id.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decide(verb: Verb, id: Option<&str>, reason: Option<&str>) -> Option<ChatCommand> {
        Some(ChatCommand::Decide {
            verb,
            id: id.map(str::to_string),
            reason: reason.map(str::to_string),
        })
    }

    #[test]
    fn commands_parse_in_every_documented_form() {
        let cases: &[(&str, bool, Option<ChatCommand>)] = &[
            (
                "/approve k7m2",
                false,
                decide(Verb::Approve, Some("k7m2"), None),
            ),
            (
                "/approve@GateBot k7m2",
                false,
                decide(Verb::Approve, Some("k7m2"), None),
            ),
            ("/approve@otherbot k7m2", false, None),
            (
                "/APPROVE k7m2",
                false,
                decide(Verb::Approve, Some("k7m2"), None),
            ),
            (
                "/approve_always k7m2",
                false,
                decide(Verb::ApproveAlways, Some("k7m2"), None),
            ),
            ("/deny k7m2", false, decide(Verb::Deny, Some("k7m2"), None)),
            (
                "/deny k7m2 too  expensive",
                false,
                decide(Verb::Deny, Some("k7m2"), Some("too  expensive")),
            ),
            (
                "/approve k7m2 allow-once",
                false,
                decide(Verb::Approve, Some("k7m2"), None),
            ),
            (
                "/approve k7m2 allow-always",
                false,
                decide(Verb::ApproveAlways, Some("k7m2"), None),
            ),
            (
                "/approve k7m2 deny not now",
                false,
                decide(Verb::Deny, Some("k7m2"), Some("not now")),
            ),
            ("/approve", false, decide(Verb::Approve, None, None)),
            ("/pending", false, Some(ChatCommand::Pending)),
            ("/pending@gatebot", false, Some(ChatCommand::Pending)),
            ("/help", false, Some(ChatCommand::Help)),
            ("/start", false, Some(ChatCommand::Help)),
            ("/weather", false, None),
            ("approve", false, None),
            ("hello there", true, None),
            // In a reply, no id is needed and /deny's words are the reason.
            ("/approve", true, decide(Verb::Approve, None, None)),
            (
                "/deny too expensive",
                true,
                decide(Verb::Deny, None, Some("too expensive")),
            ),
            ("/deny", true, decide(Verb::Deny, None, None)),
            ("approve", true, decide(Verb::Approve, None, None)),
            ("Approve", true, decide(Verb::Approve, None, None)),
            (
                "always allow",
                true,
                decide(Verb::ApproveAlways, None, None),
            ),
            (
                "deny wrong customer",
                true,
                decide(Verb::Deny, None, Some("wrong customer")),
            ),
            ("Deny", true, decide(Verb::Deny, None, None)),
            ("approve the other one too", true, None),
        ];
        for (text, in_reply, want) in cases {
            assert_eq!(
                &parse(text, Some("gatebot"), *in_reply),
                want,
                "{text:?} (reply: {in_reply})"
            );
        }
    }

    #[test]
    fn buttons_round_trip_within_64_bytes() {
        let id = "01JD3X4Y5Z6A7B8C9D0E1F2G3H";
        for b in [
            Button::Approve,
            Button::ApproveAlways,
            Button::Deny,
            Button::DenyNoReason,
        ] {
            let data = encode_button(b, id);
            assert!(data.len() <= MAX_BUTTON_DATA);
            assert_eq!(decode_button(&data).unwrap(), (b, id.to_string()));
        }
    }

    #[test]
    fn forged_button_data_is_refused() {
        for data in [
            "",
            "gb1:a",
            "gb1:x:01JD3X4Y5Z6A7B8C9D0E1F2G3H",
            "gb2:a:01JD3X4Y5Z6A7B8C9D0E1F2G3H",
            "gb1:a:01JD3X4Y5Z6A7B8C9D0E1F2G3",
            "gb1:a:01JD3X4Y5Z6A7B8C9D0E1F2G3H' OR 1=1",
            "gb1:a:../../../../etc/passwd/xxxxxxxxx",
            &"gb1:a:".repeat(20),
        ] {
            assert!(decode_button(data).is_err(), "{data:?}");
        }
    }
}
