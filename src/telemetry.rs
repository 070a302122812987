//! Logging: plain or JSON lines on stderr, filtered by `[log] level` or `RUST_LOG`.
//! Plain lines are coloured only on a terminal: escape codes in a file or in journald
//! are noise that breaks `grep` (and `NO_COLOR` turns colour off everywhere).
//!
//! Tokens are never logged: they live in [`crate::secret::Secret`], whose `Debug`
//! and `Display` print `[redacted]`, and no code path formats them into a field.
//! Errors from the Telegram client are scrubbed ([`crate::secret::scrub`]).

use std::ffi::OsString;
use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Installs the global subscriber. `RUST_LOG`, when set, wins over `level`.
pub fn init(format: LogFormat, level: &str) {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(level))
        .unwrap_or_else(|_| EnvFilter::new("info"))
        // reqwest logs request URLs at debug level, and Telegram's URLs contain the
        // bot token (`/bot<TOKEN>/`): never let those lines through.
        .add_directive("reqwest=info".parse().expect("valid directive"))
        // twilight-http logs request URLs at debug level too, and an interaction's
        // callback and follow-up URLs carry its token.
        .add_directive("twilight_http=info".parse().expect("valid directive"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour(
            std::io::stderr().is_terminal(),
            std::env::var_os("NO_COLOR"),
        ))
        .with_writer(std::io::stderr);
    // A second init (tests) is not an error worth failing over.
    let _ = match format {
        LogFormat::Plain => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
}

/// Whether plain log lines get ANSI colours: only when stderr is a terminal, and
/// `NO_COLOR` (<https://no-color.org>) is not set to something non-empty.
fn colour(terminal: bool, no_color: Option<OsString>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(colour(true, None));
        assert!(colour(true, Some(OsString::new())));
        assert!(!colour(true, Some("1".into())));
        assert!(!colour(false, None));
    }
}
