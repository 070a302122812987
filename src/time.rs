//! Time as gatebot reads and writes it: durations in the config's notation (`30m`,
//! `24h`, `7d`), instants as Unix milliseconds (what the store keeps), and the two
//! ways instants are shown: RFC 3339 for machines, `clock` for people in chat.
//!
//! Every duration gatebot reads (a `bot.toml` key, an API field, a command's flag) has
//! a [`Range`] it must fall in, listed in [`range`] and checked by [`Range::check`],
//! the one helper for all of them; its error says the range in words ("from 1 second
//! to 365 days"). Showing an instant never fails, whatever the database holds: one
//! before 1970 is shown as 1970, one after the year 9999 as the last second of 9999
//! ([`format_ms`], [`clock`]).

use std::time::Duration;

/// Parses `30s`, `30m`, `24h`, `7d`, `1h 30m`. Zero is refused. The error says what
/// is wrong in words ("`5x`: `x` is not a unit; …"), never the parser's own text.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s.trim()).map_err(|e| not_a_duration(s, &e))?;
    if d.is_zero() {
        return Err(format!("`{s}` must be longer than zero"));
    }
    Ok(d)
}

/// Why `s` is not a duration, in words.
fn not_a_duration(s: &str, e: &humantime::DurationError) -> String {
    use humantime::DurationError as E;
    const LIKE: &str = "a duration like 30m, 24h or 7d";
    match e {
        E::Empty => format!("is empty; write {LIKE}"),
        E::UnknownUnit { unit, value, .. } if unit.is_empty() => {
            format!("`{s}` needs a unit: {value}s, {value}m, {value}h or {value}d")
        }
        E::UnknownUnit { unit, .. } => format!(
            "`{s}`: `{unit}` is not a unit of time; use s, m, h or d (seconds, minutes, \
             hours, days), as in 30m, 24h or 7d"
        ),
        E::NumberOverflow => format!("`{s}` is too long to be a duration"),
        E::InvalidCharacter(_) | E::NumberExpected(_) => format!("`{s}` is not {LIKE}"),
    }
}

/// The durations a key, field or flag accepts: from `min` to `max`, both included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Range {
    pub min: Duration,
    pub max: Duration,
}

const SECOND: Duration = Duration::from_secs(1);
const MINUTE: Duration = Duration::from_secs(60);
const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(86_400);

const fn days(n: u64) -> Duration {
    Duration::from_secs(n * 86_400)
}

const fn minutes(n: u64) -> Duration {
    Duration::from_secs(n * 60)
}

/// The range of every duration gatebot reads. `bot.toml` documents each key's beside
/// it, docs/api.md each field's and the README each flag's.
pub mod range {
    use std::time::Duration;

    use super::{days, minutes, Range, DAY, HOUR, SECOND};

    /// How long a request or a check-in may wait for a human: `[policy] default_ttl`
    /// and `max_ttl`, `[workflow] check_in_ttl`, a request's `ttl` (which `max_ttl`
    /// bounds further).
    pub const TTL: Range = Range::new(SECOND, days(365));
    /// `[queue] max_wait`: the longest long-poll.
    pub const MAX_WAIT: Range = Range::new(SECOND, HOUR);
    /// `[queue] header_timeout`.
    pub const HEADER_TIMEOUT: Range = Range::new(SECOND, minutes(10));
    /// `[queue] idle_timeout`.
    pub const IDLE_TIMEOUT: Range = Range::new(SECOND, HOUR);
    /// `[inbox] lease`: a worker renews it at a third of its length (at most every 2
    /// seconds), so a shorter lease lapses under a live worker, and a dead worker holds
    /// a task for at most twice the longest.
    pub const LEASE: Range = Range::new(SECOND, HOUR);
    /// `[inbox] timeout_grace` and `progress_every`.
    pub const INBOX_STEP: Range = Range::new(SECOND, HOUR);
    /// `[inbox.timeouts]`: how long one run of a task may take.
    pub const TASK_TIMEOUT: Range = Range::new(SECOND, days(7));
    /// `[inbox.classifier] timeout` (a local model may answer well within a second).
    pub const CLASSIFIER_TIMEOUT: Range = Range::new(Duration::from_millis(100), minutes(5));
    /// `[promotion] every` and `decline_quiet`.
    pub const PROMOTION: Range = Range::new(SECOND, days(365));
    /// `[promotion] window`: the rolling window of evidence.
    pub const WINDOW: Range = Range::new(HOUR, days(3650));
    /// A time-boxed grant: `[grants] allow_for`, `gatebot decide … --for`, the
    /// decision's `for`. A grant meant to last longer is one without a time box.
    pub const GRANT_FOR: Range = Range::new(SECOND, days(365));
    /// How long a client command waits: `--wait` of `ask`, `status`, `task` and
    /// `workflow`, `--timeout` of `hook` and `mcp` (the daemon cuts each long-poll to
    /// `[queue] max_wait`; the command polls again until its own wait is over).
    pub const CLIENT_WAIT: Range = Range::new(SECOND, DAY);
    /// `[dashboard] login_link_ttl`: how long a sign-in link may be used.
    pub const LOGIN_LINK: Range = Range::new(minutes(1), DAY);
    /// `[dashboard] session_idle` and `session_max`: how long a signed-in browser stays
    /// signed in, unused and at all.
    pub const SESSION: Range = Range::new(minutes(5), days(90));
    /// `gatebot audit --since`: how far back.
    pub const SINCE: Range = Range::new(SECOND, days(36_500));
}

impl Range {
    #[must_use]
    pub const fn new(min: Duration, max: Duration) -> Range {
        Range { min, max }
    }

    /// "from 1 second to 365 days".
    #[must_use]
    pub fn describe(&self) -> String {
        format!("from {} to {}", words(self.min), words(self.max))
    }

    /// `d` if it is in the range; otherwise what the range is, in words, and whether
    /// `d` is shorter or longer ("must be from 1 second to 365 days; 8000 years is
    /// longer"). The caller puts the key, field or flag in front.
    pub fn check(&self, d: Duration) -> Result<Duration, String> {
        if d < self.min {
            Err(format!(
                "must be {}; {} is shorter",
                self.describe(),
                words(d)
            ))
        } else if d > self.max {
            Err(format!(
                "must be {}; {} is longer",
                self.describe(),
                words(d)
            ))
        } else {
            Ok(d)
        }
    }

    /// [`parse_duration`], then [`Range::check`].
    pub fn parse(&self, s: &str) -> Result<Duration, String> {
        let d = parse_duration(s)?;
        self.check(d)
            .map_err(|e| format!("`{}` is out of range: {e}", s.trim()))
    }
}

/// A duration for people: "1 second", "90 minutes", "7 days", "8000 years" (as
/// `y` is read: 365.25 days), "1.5 seconds", "250 milliseconds": the largest unit
/// that divides it.
#[must_use]
pub fn words(d: Duration) -> String {
    let plural = |n: u128, unit: &str| {
        if n == 1 {
            format!("1 {unit}")
        } else {
            format!("{n} {unit}s")
        }
    };
    let ms = d.as_millis();
    let unit = |u: Duration| u.as_millis();
    let year = unit(DAY) * 365 + unit(DAY) / 4;
    match ms {
        0 if d.is_zero() => "0 seconds".to_string(),
        0 => "less than a millisecond".to_string(),
        _ if ms >= year && ms % year == 0 => plural(ms / year, "year"),
        _ if ms >= unit(DAY) && ms % unit(DAY) == 0 => plural(ms / unit(DAY), "day"),
        _ if ms >= unit(HOUR) && ms % unit(HOUR) == 0 => plural(ms / unit(HOUR), "hour"),
        _ if ms >= unit(MINUTE) && ms % unit(MINUTE) == 0 => plural(ms / unit(MINUTE), "minute"),
        _ if ms >= unit(SECOND) && ms % unit(SECOND) == 0 => plural(ms / unit(SECOND), "second"),
        _ if ms >= unit(DAY) => format!("about {}", plural(ms / unit(DAY), "day")),
        _ if ms >= unit(SECOND) => format!("{:.1} seconds", d.as_secs_f64()),
        _ => plural(ms, "millisecond"),
    }
}

/// Formats a duration the way the config writes it: `7d`, `24h`, `90m`, `45s`.
#[must_use]
pub fn format_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        _ if s >= 2 * 86_400 && s % 86_400 == 0 => format!("{}d", s / 86_400),
        _ if s >= 3600 && s % 3600 == 0 => format!("{}h", s / 3600),
        _ if s >= 60 && s % 60 == 0 => format!("{}m", s / 60),
        _ => format!("{s}s"),
    }
}

/// Milliseconds since the Unix epoch (in unit tests, the instant [`fixed_now`] sets on
/// this thread, if any: texts that say "in 24 h" are then the same on every run).
#[must_use]
pub fn now_ms() -> i64 {
    #[cfg(test)]
    if let Some(at) = FIXED_NOW.with(std::cell::Cell::get) {
        return at;
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
thread_local! {
    static FIXED_NOW: std::cell::Cell<Option<i64>> = const { std::cell::Cell::new(None) };
}

/// Runs `f` with [`now_ms`] answering `at` on this thread (unit tests only).
#[cfg(test)]
pub fn fixed_now<T>(at: i64, f: impl FnOnce() -> T) -> T {
    let before = FIXED_NOW.with(|n| n.replace(Some(at)));
    let out = f();
    FIXED_NOW.with(|n| n.set(before));
    out
}

/// `ms` from now, saturating: what a deadline `d` after now is, however long `d`.
#[must_use]
pub fn after(now: i64, d: Duration) -> i64 {
    now.saturating_add(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The last millisecond RFC 3339 can write: 9999-12-31T23:59:59.999Z.
pub const LAST_SHOWN_MS: i64 = 253_402_300_799_999;

/// RFC 3339 UTC, seconds precision. An instant before 1970 is shown as the epoch, one
/// after the year 9999 as its last second: a stored time, whatever it is, never stops
/// a listing.
#[must_use]
pub fn format_ms(ms: i64) -> String {
    let ms = ms.clamp(0, LAST_SHOWN_MS);
    // In range by the clamp: 0 to 253 402 300 799 999.
    let t = std::time::UNIX_EPOCH + Duration::from_millis(ms.unsigned_abs());
    humantime::format_rfc3339_seconds(t).to_string()
}

/// An RFC 3339 instant (as [`format_ms`] writes them) as Unix milliseconds.
#[must_use]
pub fn parse_ms(s: &str) -> Option<i64> {
    let t = humantime::parse_rfc3339(s).ok()?;
    let ms = t.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis();
    i64::try_from(ms).ok()
}

/// `2026-11-23 21:00 UTC` (clamped like [`format_ms`]).
#[must_use]
pub fn clock(ms: i64) -> String {
    let s = format_ms(ms); // 2026-11-23T21:00:05Z
    format!("{} {} UTC", &s[..10], &s[11..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_like_the_docs_say() {
        assert_eq!(parse_duration("30m").unwrap(), Duration::from_secs(1800));
        assert_eq!(parse_duration("24h").unwrap(), Duration::from_secs(86_400));
        assert_eq!(parse_duration("7d").unwrap(), Duration::from_secs(604_800));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("tomorrow").is_err());
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
    }

    #[test]
    fn a_bad_duration_is_said_in_words_without_the_parsers_text() {
        let e = |s: &str| parse_duration(s).unwrap_err();
        assert_eq!(
            e("tomorrow"),
            "`tomorrow` is not a duration like 30m, 24h or 7d"
        );
        assert_eq!(e("-5m"), "`-5m` is not a duration like 30m, 24h or 7d");
        assert_eq!(e("30"), "`30` needs a unit: 30s, 30m, 30h or 30d");
        assert_eq!(
            e("5x"),
            "`5x`: `x` is not a unit of time; use s, m, h or d (seconds, minutes, hours, \
             days), as in 30m, 24h or 7d"
        );
        assert_eq!(e("  "), "is empty; write a duration like 30m, 24h or 7d");
        assert_eq!(e("0s"), "`0s` must be longer than zero");
        assert!(e("99999999999999999999y").contains("too long"));
        // None of them carries the parser's own words or byte offsets.
        for s in [
            "tomorrow",
            "-5m",
            "30",
            "5x",
            "",
            "1h 30",
            "m5",
            "99999999999999999999y",
        ] {
            let m = e(s);
            for internal in [
                " at 0",
                " at 1",
                "expected number",
                "invalid character",
                "sec or",
            ] {
                assert!(!m.contains(internal), "{s}: {m}");
            }
        }
        assert_eq!(format_duration(Duration::from_secs(86_400)), "24h");
        assert_eq!(format_duration(Duration::from_secs(604_800)), "7d");
        assert_eq!(format_duration(Duration::from_secs(5400)), "90m");
    }

    #[test]
    fn clock_is_minutes_in_utc() {
        assert_eq!(clock(0), "1970-01-01 00:00 UTC");
    }

    #[test]
    fn any_stored_instant_can_be_shown() {
        for ms in [
            i64::MIN,
            -1,
            i64::MAX,
            LAST_SHOWN_MS + 1,
            300_000_000_000_000,
        ] {
            let s = format_ms(ms);
            assert!(
                s == "1970-01-01T00:00:00Z" || s == "9999-12-31T23:59:59Z",
                "{ms}: {s}"
            );
            assert!(clock(ms).ends_with(" UTC"));
        }
        assert_eq!(format_ms(LAST_SHOWN_MS), "9999-12-31T23:59:59Z");
        assert_eq!(after(i64::MAX - 5, Duration::from_secs(1)), i64::MAX);
        assert_eq!(after(1000, Duration::MAX), i64::MAX);
    }

    #[test]
    fn durations_are_said_in_words() {
        let w = |s: &str| words(parse_duration(s).unwrap());
        assert_eq!(w("1s"), "1 second");
        assert_eq!(w("90m"), "90 minutes");
        assert_eq!(w("7d"), "7 days");
        assert_eq!(w("365d"), "365 days");
        assert_eq!(w("8000y"), "8000 years");
        assert_eq!(w("1ms"), "1 millisecond");
        assert_eq!(w("1500ms"), "1.5 seconds");
        assert_eq!(words(Duration::ZERO), "0 seconds");
    }

    #[test]
    fn a_range_says_itself_in_words() {
        assert_eq!(range::TTL.describe(), "from 1 second to 365 days");
        assert!(range::LEASE.check(Duration::from_secs(60)).is_ok());
        assert_eq!(
            range::LEASE.parse("1ms").unwrap_err(),
            "`1ms` is out of range: must be from 1 second to 1 hour; 1 millisecond is shorter"
        );
        assert_eq!(
            range::TTL
                .check(parse_duration("8000y").unwrap())
                .unwrap_err(),
            "must be from 1 second to 365 days; 8000 years is longer"
        );
        // Each range holds its own default.
        for r in [
            range::TTL,
            range::MAX_WAIT,
            range::HEADER_TIMEOUT,
            range::IDLE_TIMEOUT,
            range::LEASE,
            range::INBOX_STEP,
            range::TASK_TIMEOUT,
            range::CLASSIFIER_TIMEOUT,
            range::PROMOTION,
            range::WINDOW,
            range::GRANT_FOR,
            range::CLIENT_WAIT,
            range::SINCE,
        ] {
            assert!(r.min <= r.max && !r.min.is_zero(), "{r:?}");
        }
    }
}
