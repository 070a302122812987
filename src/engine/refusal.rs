//! Refused attempts (a missing or wrong token, an agent trying to decide, a chat user
//! who is not an approver): every one is recorded, but a flood of them fills neither
//! the disk nor the log.
//!
//! 1. Every string an attempt echoes (what was tried, a tool name, an id typed in a
//!    URL, a display name) is cut to [`ECHO_CHARS`] characters plus its original
//!    length ([`cut`]).
//! 2. Attempts are coalesced per key (who claimed to act, what kind of thing was
//!    tried, on which channel and transport, and why it was refused: all from bounded
//!    sets) and [`REFUSAL_WINDOW`]: the first attempt of a window is an
//!    `unauthorised_attempt` audit row at once, with `count: 1`, and one WARN line;
//!    later ones in the window are only counted, durably (the store's
//!    `refusal_windows`).
//! 3. When the window ends its count, if any, becomes one more `unauthorised_attempt`
//!    row (`count`, `repeats_of` the first row, `first_at`, `last_at`) and one more
//!    WARN line: at the key's next attempt, in the housekeeping pass
//!    ([`Engine::run_housekeeping`](super::Engine::run_housekeeping)), at shutdown,
//!    and at the next start for windows a crash left open. So the attempts of a key are the sum of its rows' `count`s,
//!    and at most two rows and two log lines a minute stand for any number of them.

use std::borrow::Cow;
use std::time::Duration;

use serde_json::{json, Value};
use tracing::{debug, warn};

use super::{Engine, EngineError, Transport};
use crate::approval::Via;
use crate::store::{Closed, RefusalRow, Refused};
use crate::time::now_ms;

/// The most characters of an echoed string that are kept.
pub const ECHO_CHARS: usize = 200;

/// How long refused attempts with the same key are coalesced into one count.
pub const REFUSAL_WINDOW: Duration = Duration::from_secs(60);

/// `s`, or its first [`ECHO_CHARS`] characters and its length when it is longer:
/// `"abc… (65536 characters)"`.
#[must_use]
pub fn cut(s: &str) -> Cow<'_, str> {
    match s.char_indices().nth(ECHO_CHARS) {
        None => Cow::Borrowed(s),
        Some((end, _)) => Cow::Owned(format!("{}… ({} characters)", &s[..end], s.chars().count())),
    }
}

/// Cuts every string in `v` (see [`cut`]).
fn cut_all(v: &mut Value) {
    match v {
        Value::String(s) => {
            if let Cow::Owned(c) = cut(s) {
                *s = c;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(cut_all),
        Value::Object(map) => map.values_mut().for_each(cut_all),
        _ => {}
    }
}

/// A refused attempt, as the API and the chat layer report it.
#[derive(Debug, Clone)]
pub struct Refusal {
    /// The request it was about, if it names one that exists.
    pub approval_id: Option<String>,
    /// Who claimed to act: the agent named (or the token's owner, or `unknown`), the
    /// chat user.
    pub actor: String,
    pub via: Via,
    /// The API's transport; `None` in chats.
    pub transport: Option<Transport>,
    /// What kind of thing was tried, from a fixed set ("submit a request", "button
    /// Approve"): part of the key, so never anything the caller typed.
    pub kind: String,
    /// Why it was refused, from a bounded set (the engine's messages name configured
    /// agents only): part of the key.
    pub reason: Option<String>,
    /// What the audit row says beyond that; its strings are cut. Never a token.
    pub detail: Value,
}

impl Engine {
    /// Records a refused attempt, coalesced with the same attempts of the last minute
    /// (see the module docs). `detail` must never hold a token.
    pub async fn record_unauthorised(&self, refusal: Refusal) -> Result<(), EngineError> {
        let Refusal {
            approval_id,
            actor,
            via,
            transport,
            kind,
            reason,
            mut detail,
        } = refusal;
        let actor = cut(&actor).into_owned();
        let kind = cut(&kind).into_owned();
        let reason = reason.map(|r| cut(&r).into_owned());
        let transport = transport.map(Transport::as_str);
        let key = json!([actor, kind, via.as_str(), transport, reason]).to_string();
        cut_all(&mut detail);
        if detail.get("attempted").is_none() {
            detail["attempted"] = json!(kind);
        }
        let channel = via.as_str().to_string();
        let logged = detail.clone();
        let window = REFUSAL_WINDOW.as_millis() as i64;
        let outcome = self
            .blocking(move |s| {
                s.record_refusal(
                    now_ms(),
                    window,
                    &RefusalRow {
                        key: &key,
                        approval_id: approval_id.as_deref(),
                        actor: &actor,
                        channel: &channel,
                        detail: &detail,
                    },
                )
                .map(|o| (o, actor))
            })
            .await?;
        match outcome {
            (Refused::Recorded { seq, closed }, actor) => {
                if let Some(c) = closed {
                    log_closed(&c);
                }
                // The same attempts in the next minute are only counted, and logged
                // once when it ends (`log_closed`).
                warn!(
                    actor = %actor, via = via.as_str(), detail = %logged, audit_seq = seq,
                    "unauthorised attempt refused"
                );
            }
            (Refused::Counted { first_seq, repeats }, actor) => {
                debug!(actor = %actor, via = via.as_str(), first_seq, repeats, "unauthorised attempt counted");
            }
        }
        Ok(())
    }

    /// Closes the windows of refused attempts that have ended (`all`: every window, at
    /// shutdown and start), turning their counts into audit rows; returns how many
    /// had repeats.
    pub async fn flush_refusals(&self, all: bool) -> Result<usize, EngineError> {
        let window = (!all).then_some(REFUSAL_WINDOW.as_millis() as i64);
        let closed = self
            .blocking(move |s| s.close_refusal_windows(now_ms(), window))
            .await?;
        closed.iter().for_each(log_closed);
        Ok(closed.len())
    }
}

/// One WARN line for a window's repeats.
fn log_closed(c: &Closed) {
    warn!(
        actor = %c.actor, via = %c.channel, count = %c.detail["count"],
        repeats_of = %c.detail["repeats_of"], audit_seq = c.seq,
        "unauthorised attempts repeated: refused and counted in the minute after the one logged"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_echoes_are_cut_with_their_length_and_short_ones_kept() {
        assert_eq!(cut("send_email"), "send_email");
        let long = "é".repeat(70_000);
        let c = cut(&long);
        assert!(c.starts_with(&"é".repeat(ECHO_CHARS)));
        assert!(
            c.ends_with("… (70000 characters)"),
            "{}",
            &c[c.len() - 40..]
        );
        assert_eq!(
            c.chars().count(),
            ECHO_CHARS + "… (70000 characters)".chars().count()
        );
        let mut v = json!({"a": "x".repeat(300), "b": ["y".repeat(201)], "n": 1});
        cut_all(&mut v);
        assert!(v["a"].as_str().unwrap().ends_with("(300 characters)"));
        assert!(v["b"][0].as_str().unwrap().ends_with("(201 characters)"));
        assert_eq!(v["n"], 1);
    }
}
