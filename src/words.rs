//! How gatebot says things to people: the one place that turns durations, instants and
//! risk into words, for chat cards and the `gatebot` command alike (and the web
//! dashboard and mails to come). Machines get the data (RFC 3339, snake_case names in
//! the JSON); people get these.
//!
//! - A duration as people say it, rounded to what matters: "45 s", "59 min",
//!   "1 h 30 min", "24 h", "3 days" ([`span`]); a deadline relative to now: "in 24 h",
//!   "3 min ago" ([`relative`]).
//! - An instant: "2026-11-26 05:48 UTC" ([`clock`]), the same on every surface.
//! - A risk factor: "first use of this tool" ([`factor`]); a whole risk: "high:
//!   destructive tool, prices in the text" ([`risk`]). Tiers, tool classes and a
//!   request's status say themselves (`Tier::words`, `ToolClass::words`,
//!   `Status::words`): the domain types own their words.

use std::time::Duration;

use serde_json::Value;

use crate::policy::Risk;

pub use crate::time::clock;

/// A duration as people say it: to the second under a minute, to the minute under a
/// day (rounded to the nearest: 86 399 s is "24 h", 7 199 s "2 h"), then in days and
/// hours.
#[must_use]
pub fn span(d: Duration) -> String {
    let secs = d.as_secs();
    if secs < 60 {
        return format!("{secs} s");
    }
    let minutes = secs.saturating_add(30) / 60;
    let (days, hours, mins) = (minutes / 1440, minutes / 60 % 24, minutes % 60);
    match (days, hours, mins) {
        (0, 0, m) => format!("{m} min"),
        (0, h, 0) => format!("{h} h"),
        (0, h, m) => format!("{h} h {m} min"),
        // Up to two days, in hours: "36 h" reads better than "1 day 12 h".
        (1, h, _) => format!("{} h", 24 + h),
        (d, 0, _) => format!("{d} days"),
        (d, h, _) => format!("{d} days {h} h"),
    }
}

/// An instant relative to `now`: "in 24 h", "3 min ago", "now" (within a second).
#[must_use]
pub fn relative(at: i64, now: i64) -> String {
    let gap = |ms: i64| Duration::from_millis(ms.unsigned_abs());
    match at.saturating_sub(now) {
        ms if ms.abs() < 1000 => "now".into(),
        ms if ms > 0 => format!("in {}", span(gap(ms))),
        ms => format!("{} ago", span(gap(ms))),
    }
}

/// A deadline: "in 24 h (2026-11-26 05:48 UTC)".
#[must_use]
pub fn deadline(at: i64, now: i64) -> String {
    format!("{} ({})", relative(at, now), clock(at))
}

/// A risk factor (`policy::risk`'s names) in words. A name gatebot does not know (one
/// a newer version wrote) is shown with spaces for its underscores.
#[must_use]
pub fn factor(name: &str) -> String {
    let said = match name {
        "read_only_command" => "the command only reads",
        "pricing_content" => "prices in the text",
        "competitor_mention" => "mentions competitors",
        "negative_context" => "complaint or negative tone",
        "external_url" => "links outside your domains",
        "bulk_operation" => "more than 5 recipients",
        "first_time_usage" => "first use of this tool",
        "educational_content" => "educational text",
        "internal_tool" => "an internal tool",
        "shell_critical" => "a command that can destroy data",
        "shell_high" => "a risky command",
        "environment_production" => "in production",
        "environment_sandbox" => "in a sandbox",
        other => return other.replace('_', " "),
    };
    said.to_string()
}

/// A duration in the config's notation (`30d`, as the API gives it) said as people
/// say it ("30 days"); anything else as it is.
#[must_use]
pub fn config_span(typed: &str) -> String {
    crate::time::parse_duration(typed).map_or_else(|_| typed.to_string(), span)
}

/// serde's "expected TYPE" said in words: Rust's number types are "a whole number" or
/// "a number", a sequence "an array", a map or struct `map_word` (`bot.toml` says "a
/// table", JSON "an object"); anything else is left as it is.
#[must_use]
pub fn expected_in_words(message: &str, map_word: &str) -> String {
    const TYPES: [(&str, &str); 14] = [
        ("u8", "a whole number"),
        ("u16", "a whole number"),
        ("u32", "a whole number"),
        ("u64", "a whole number"),
        ("usize", "a whole number"),
        ("i8", "a whole number"),
        ("i16", "a whole number"),
        ("i32", "a whole number"),
        ("i64", "a whole number"),
        ("isize", "a whole number"),
        ("f32", "a number"),
        ("f64", "a number"),
        ("a sequence", "an array"),
        ("path string", "a path in quotes"),
    ];
    let Some((head, expected)) = message.rsplit_once("expected ") else {
        return message.to_string();
    };
    let said = if let Some((_, name)) = TYPES.iter().find(|(rust, _)| *rust == expected) {
        (*name).to_string()
    } else if expected == "a map" || expected.starts_with("struct ") || expected.starts_with("map ")
    {
        map_word.to_string()
    } else {
        return message.to_string();
    };
    format!("{head}expected {said}")
}

/// A whole risk: "high: destructive tool, prices in the text, first use of this tool".
#[must_use]
pub fn risk(r: &Risk) -> String {
    let mut parts = vec![r.tool_class.words().to_string()];
    parts.extend(r.factors.iter().map(|f| factor(f)));
    format!("{}: {}", r.score.as_str(), parts.join(", "))
}

/// `s` in at most `max` characters, its end replaced by "…" when cut.
#[must_use]
pub fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max.saturating_sub(1)) {
        Some((end, _)) if s.chars().count() > max => format!("{}…", &s[..end]),
        _ => s.to_string(),
    }
}

/// The argument keys whose value is a command, shown in full (`policy::risk` reads
/// the same keys as commands).
const COMMAND_KEYS: [&str; 5] = ["command", "cmd", "script", "sql", "query"];
/// Most characters of another argument's value shown in a list.
const VALUE_CHARS: usize = 60;
/// Most arguments listed.
const ARGUMENTS_LISTED: usize = 6;

/// The arguments that say what a call does, a line each: a command in full
/// (`command: git push --force`), other values cut (`to: ann@example.com`), lists
/// joined, objects as `{…}`; then how many more there are.
#[must_use]
pub fn key_arguments(args: &Value) -> Vec<String> {
    let Value::Object(map) = args else {
        return match args {
            Value::Null => Vec::new(),
            Value::String(s) => vec![format!("command: {s}")],
            other => vec![cut(&other.to_string(), VALUE_CHARS)],
        };
    };
    let is_command = |k: &str| COMMAND_KEYS.iter().any(|c| c.eq_ignore_ascii_case(k));
    // Commands first: they are what a shell-like call does.
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort_by_key(|k| !is_command(k));
    let mut lines: Vec<String> = keys
        .iter()
        .take(ARGUMENTS_LISTED)
        .map(|k| {
            let v = &map[k.as_str()];
            let said = match v {
                Value::String(s) if is_command(k) => s.clone(),
                Value::String(s) => cut(&s.replace('\n', " "), VALUE_CHARS),
                Value::Array(items) => cut(
                    &items
                        .iter()
                        .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_string))
                        .collect::<Vec<_>>()
                        .join(", "),
                    VALUE_CHARS,
                ),
                Value::Object(_) => "{…}".into(),
                other => other.to_string(),
            };
            format!("{k}: {said}")
        })
        .collect();
    if map.len() > ARGUMENTS_LISTED {
        lines.push(format!("… and {} more", map.len() - ARGUMENTS_LISTED));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::{RiskScore, Tier, ToolClass};

    #[test]
    fn durations_are_rounded_to_what_people_say() {
        let s = |secs: u64| span(Duration::from_secs(secs));
        assert_eq!(s(0), "0 s");
        assert_eq!(s(45), "45 s");
        assert_eq!(s(89), "1 min");
        assert_eq!(s(3599), "1 h");
        assert_eq!(s(3540), "59 min");
        assert_eq!(s(5400), "1 h 30 min");
        assert_eq!(s(7199), "2 h");
        assert_eq!(s(86_399), "24 h");
        assert_eq!(s(129_600), "36 h");
        assert_eq!(s(172_800), "2 days");
        assert_eq!(s(7 * 86_400 + 3 * 3600), "7 days 3 h");
        assert!(
            s(u64::MAX).ends_with(" h"),
            "the longest duration is said too"
        );
    }

    #[test]
    fn deadlines_are_said_from_now() {
        let now = 1_000_000_000_000;
        assert_eq!(relative(now + 86_399_000, now), "in 24 h");
        assert_eq!(relative(now - 180_000, now), "3 min ago");
        assert_eq!(relative(now + 400, now), "now");
        assert_eq!(relative(i64::MAX, i64::MIN).split(' ').next(), Some("in"));
        assert_eq!(
            deadline(now + 3_540_000, now),
            "in 59 min (2001-09-09 02:45 UTC)"
        );
    }

    #[test]
    fn key_arguments_show_a_command_in_full_and_cut_the_rest() {
        let body = "x".repeat(100);
        let args = serde_json::json!({
            "body": body,
            "command": format!("git push --force {}", "y".repeat(100)),
            "to": ["ann@example.com", "bob@example.com"],
            "opts": {"a": 1},
        });
        let lines = key_arguments(&args);
        assert_eq!(
            lines[0],
            format!("command: git push --force {}", "y".repeat(100))
        );
        assert_eq!(lines[1], format!("body: {}…", "x".repeat(59)));
        assert_eq!(lines[2], "opts: {…}");
        assert_eq!(lines[3], "to: ann@example.com, bob@example.com");
        assert_eq!(
            key_arguments(&serde_json::json!("ls -la")),
            ["command: ls -la"]
        );
        let many: serde_json::Map<String, Value> =
            (0..9).map(|i| (format!("k{i}"), Value::from(i))).collect();
        assert_eq!(
            key_arguments(&Value::Object(many)).last().unwrap(),
            "… and 3 more"
        );
        assert_eq!(cut("héllo", 3), "hé…");
        assert_eq!(cut("abc", 3), "abc");
    }

    #[test]
    fn risk_is_said_once_in_words() {
        let r = Risk {
            score: RiskScore::High,
            tool_class: ToolClass::Destructive,
            factors: vec![
                "pricing_content".into(),
                "first_time_usage".into(),
                "custom_thing".into(),
            ],
        };
        assert_eq!(
            risk(&r),
            "high: destructive tool, prices in the text, first use of this tool, custom thing"
        );
        assert_eq!(Tier::SemiAutonomous.words(), "semi-autonomous");
    }
}
