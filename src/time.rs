//! Time as gatebot reads and writes it: durations in the config's notation (`30m`,
//! `24h`, `7d`), instants as Unix milliseconds (what the store keeps), and the two
//! ways instants are shown: RFC 3339 for machines, `clock` for people in chat.

use std::time::Duration;

/// Parses `30s`, `30m`, `24h`, `7d`, `1h 30m`. Zero is refused.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let d = humantime::parse_duration(s.trim())
        .map_err(|e| format!("`{s}` is not a duration like 30m, 24h or 7d ({e})"))?;
    if d.is_zero() {
        return Err(format!("`{s}` must be longer than zero"));
    }
    Ok(d)
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

/// Milliseconds since the Unix epoch.
#[must_use]
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// RFC 3339 UTC, seconds precision.
#[must_use]
pub fn format_ms(ms: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64);
    humantime::format_rfc3339_seconds(t).to_string()
}

/// `2026-11-23 21:00 UTC`.
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
        assert_eq!(format_duration(Duration::from_secs(86_400)), "24h");
        assert_eq!(format_duration(Duration::from_secs(604_800)), "7d");
        assert_eq!(format_duration(Duration::from_secs(5400)), "90m");
    }

    #[test]
    fn clock_is_minutes_in_utc() {
        assert_eq!(clock(0), "1970-01-01 00:00 UTC");
    }
}
