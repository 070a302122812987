//! Secrets (agent tokens, chat bot tokens) that must never reach a log line.
//!
//! A secret lives in a [`Secret`], whose `Debug` and `Display` print `[redacted]`.
//! Text that may carry one anyway (an HTTP client's error naming the URL, which holds
//! Telegram's token; a server echoing a token back) passes through [`scrub`] before it
//! is logged or shown.

use std::fmt;
use std::sync::LazyLock;

use regex::Regex;

/// `text` with each of `secrets`, and anything shaped like a chat token (a Telegram
/// bot token `123456:AA…`, a Slack `xoxb-…` / `xapp-…` token), replaced by `[redacted]`.
#[must_use]
pub fn scrub(text: &str, secrets: &[&str]) -> String {
    static SHAPES: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"\d{3,}:[A-Za-z0-9_-]{20,}|\bx(?:ox[abposre]|app)-[A-Za-z0-9-]+")
            .expect("valid regex")
    });
    let mut out = text.to_string();
    // Short secrets would match innocent words; real tokens are far longer.
    for secret in secrets.iter().filter(|s| s.len() >= 4) {
        out = out.replace(secret, "[redacted]");
    }
    SHAPES.replace_all(&out, "[redacted]").into_owned()
}

/// A secret string. `Debug` and `Display` print `[redacted]`; read it with [`Secret::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    #[must_use]
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The secret itself. Call sites are easy to grep for.
    #[must_use]
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Compares in time independent of where the first difference is, so a
    /// token cannot be guessed byte by byte from response timings.
    #[must_use]
    pub fn matches(&self, candidate: &str) -> bool {
        let a = self.0.as_bytes();
        let b = candidate.as_bytes();
        if a.len() != b.len() {
            return false;
        }
        a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrubbing_removes_secrets_and_token_shapes() {
        let token = "123456789:AAH-secret_Token-value-xyz987654";
        let e =
            format!("error sending request for url (https://api.telegram.org/bot{token}/GetMe)");
        assert_eq!(
            scrub(&e, &[token]),
            "error sending request for url (https://api.telegram.org/bot[redacted]/GetMe)"
        );
        // Another token-shaped string (e.g. after a config reload) is caught by its shape.
        assert_eq!(
            scrub(
                "…/bot987654321:ZZZZZZZZZZZZZZZZZZZZZZZZZZ/SendMessage",
                &[token]
            ),
            "…/bot[redacted]/SendMessage"
        );
        assert_eq!(
            scrub(
                "auth failed for xoxb-123-abc and xapp-1-A0-99 with sekrit!",
                &["sekrit"]
            ),
            "auth failed for [redacted] and [redacted] with [redacted]!"
        );
        assert_eq!(
            scrub("chat 12345 said: 10:30", &[token]),
            "chat 12345 said: 10:30"
        );
    }

    #[test]
    fn a_secret_never_prints_its_value() {
        let s = Secret::new("hunter2-token");
        assert!(!format!("{s:?}").contains("hunter2"));
        assert!(!format!("{s}").contains("hunter2"));
        assert_eq!(s.expose(), "hunter2-token");
    }

    #[test]
    fn matches_compares_whole_values() {
        let s = Secret::new("abc");
        assert!(s.matches("abc"));
        assert!(!s.matches("abd"));
        assert!(!s.matches("ab"));
        assert!(!s.matches("abcd"));
    }
}
