//! What a prompt says, independent of how a channel formats it.
//!
//! All strings here are raw text from agents or gatebot; each channel escapes
//! them for its own markup (HTML for Telegram, mrkdwn for Slack) before sending.

use crate::approval::{Approval, Status};
use crate::time::{clock, format_duration, now_ms};

/// The parts of an approval prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptContent {
    pub short_id: String,
    pub agent: String,
    pub tool: String,
    pub summary: Option<String>,
    /// `high`.
    pub risk: String,
    /// `destructive tool; pricing_content, external_url`.
    pub risk_detail: String,
    /// The policy's reason for asking.
    pub reason: String,
    /// Pretty JSON, cut to fit.
    pub args: String,
    /// Set when `args` was cut: what was left out.
    pub args_note: Option<String>,
    /// `2026-11-23 21:00 UTC (in 24h)`.
    pub expires: Option<String>,
    /// Whether the "Always allow" button applies.
    pub always_allow_offered: bool,
}

/// Builds prompt content, cutting the arguments to at most `max_args_chars` characters.
#[must_use]
pub fn content(a: &Approval, max_args_chars: usize) -> PromptContent {
    let pretty = serde_json::to_string_pretty(&a.args).unwrap_or_else(|_| a.args.to_string());
    let (args, args_note) = truncate(&pretty, max_args_chars);
    let mut detail = format!("{} tool", a.risk.tool_class.as_str());
    if !a.risk.factors.is_empty() {
        detail.push_str("; ");
        detail.push_str(&a.risk.factors.join(", "));
    }
    PromptContent {
        short_id: a.short_id.clone(),
        agent: a.agent.clone(),
        tool: a.tool.clone(),
        summary: a.summary.clone().filter(|s| !s.trim().is_empty()),
        risk: a.risk.score.as_str().to_string(),
        risk_detail: detail,
        reason: a.policy_reason.clone(),
        args,
        args_note,
        expires: a.expires_at.map(|at| {
            let left = std::time::Duration::from_millis((at - now_ms()).max(0) as u64);
            format!("{} (in {})", clock(at), format_duration(left))
        }),
        always_allow_offered: a.always_allow_offered,
    }
}

/// Escapes `&`, `<` and `>`: the characters that are markup both in Telegram's HTML
/// parse mode and in Slack's mrkdwn, so agent text can never become formatting,
/// links or mentions in either.
#[must_use]
pub fn escape_markup(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// Cuts `s` to `max` characters on a char boundary; the note says how much was cut.
#[must_use]
pub fn truncate(s: &str, max: usize) -> (String, Option<String>) {
    let total = s.chars().count();
    if total <= max {
        return (s.to_string(), None);
    }
    let kept: String = s.chars().take(max).collect();
    (kept, Some(cut_note(total - max, "arguments")))
}

/// Cuts `s` to its longest prefix (in characters) for which `fits` holds, for limits
/// that apply to a rendered form (escaped, fenced) rather than to the raw text. `fits`
/// must be monotone: when a prefix fits, so does every shorter one. The note says how
/// many characters of `what` ("arguments", "the summary") were cut.
#[must_use]
pub fn fit(s: &str, what: &str, fits: impl Fn(&str) -> bool) -> (String, Option<String>) {
    if fits(s) {
        return (s.to_string(), None);
    }
    // Byte offsets of every char boundary; `ends[n]` ends the prefix of n characters.
    let ends: Vec<usize> = s
        .char_indices()
        .map(|(i, _)| i)
        .skip(1)
        .chain([s.len()])
        .collect();
    let prefix = |n: usize| if n == 0 { "" } else { &s[..ends[n - 1]] };
    // The whole does not fit: find the largest n < total that does.
    let (mut lo, mut hi) = (0, ends.len() - 1);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if fits(prefix(mid)) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    (
        prefix(lo).to_string(),
        Some(cut_note(ends.len() - lo, what)),
    )
}

fn cut_note(cut: usize, what: &str) -> String {
    format!("… {cut} more characters of {what} not shown (full text: gatebot status)")
}

/// The line that replaces the buttons once a request is settled:
/// "✅ Approved by alice (Telegram) 2026-11-23 12:03 UTC".
#[must_use]
pub fn outcome_line(a: &Approval) -> String {
    let by = a.decided_by.as_deref().unwrap_or("someone");
    let via = a.decided_via.map(|c| c.label()).unwrap_or("gatebot");
    let when = a.decided_at.map(clock).unwrap_or_default();
    let reason = |r: &Option<String>| r.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
    match a.status {
        Status::Pending => "⏳ Waiting for a decision".to_string(),
        Status::Approved => {
            let always = if a.always_allowed {
                " (always allow)"
            } else {
                ""
            };
            format!("✅ Approved{always} by {by} ({via}) {when}")
        }
        Status::Executing => format!("✅ Approved by {by} ({via}) {when}; running"),
        Status::Succeeded => format!("✅ Approved by {by} ({via}) {when}; succeeded"),
        Status::Failed => format!(
            "✅ Approved by {by} ({via}) {when}; failed{}",
            reason(&a.result_detail)
        ),
        Status::Rejected => format!(
            "❌ Denied by {by} ({via}) {when}{}",
            reason(&a.decision_reason)
        ),
        Status::Expired => format!(
            "⌛ Expired {when}: {}",
            a.decision_reason
                .as_deref()
                .unwrap_or("no response in time")
        ),
        Status::Cancelled => format!("🚫 Cancelled by the agent {when}"),
        Status::Allowed => "✅ Allowed by policy".to_string(),
        Status::Blocked => "⛔ Blocked by policy".to_string(),
    }
}

/// A pending request to render in unit tests.
#[cfg(test)]
pub(crate) fn sample_approval() -> Approval {
    use crate::policy::{Risk, RiskScore, ToolClass};
    Approval {
        id: "01JD3X4Y5Z6A7B8C9D0E1F2G3H".into(),
        short_id: "k7m2abcd".into(),
        agent: "mailer".into(),
        tool: "send_email".into(),
        args: serde_json::json!({"to": ["ann@example.com"]}),
        summary: None,
        confidence: None,
        environment: None,
        idempotency_key: None,
        status: Status::Pending,
        risk: Risk {
            score: RiskScore::High,
            tool_class: ToolClass::Destructive,
            factors: vec!["pricing_content".into()],
        },
        policy_reason: "destructive tool".into(),
        checkpoint: false,
        always_allow_offered: true,
        decided_by: None,
        decided_via: None,
        decision_reason: None,
        always_allowed: false,
        result_detail: None,
        ttl_ms: None,
        created_at: 0,
        decided_at: None,
        expires_at: Some(now_ms() + 3_600_000),
        finished_at: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_counts_characters_and_says_what_was_cut() {
        assert_eq!(truncate("héllo", 10), ("héllo".to_string(), None));
        let (kept, note) = truncate("ééééé", 3);
        assert_eq!(kept, "ééé");
        assert!(note.unwrap().starts_with("… 2 more characters"));
    }

    #[test]
    fn fitting_keeps_the_longest_prefix_whose_rendered_form_fits() {
        let doubled = |p: &str| p.chars().count() * 2 <= 6;
        assert_eq!(fit("abc", "x", doubled), ("abc".to_string(), None));
        let (kept, note) = fit("abcdé", "the summary", doubled);
        assert_eq!(kept, "abc");
        assert_eq!(
            note.unwrap(),
            "… 2 more characters of the summary not shown (full text: gatebot status)"
        );
        let (kept, note) = fit("abc", "x", |p| p.is_empty());
        assert_eq!(kept, "");
        assert!(note.unwrap().starts_with("… 3 more"));
    }

    #[test]
    fn every_outcome_says_when() {
        let mut a = sample_approval();
        a.decided_at = Some(0);
        a.decision_reason = Some("no response within 1h".into());
        for status in [
            Status::Approved,
            Status::Rejected,
            Status::Expired,
            Status::Cancelled,
        ] {
            a.status = status;
            assert!(
                outcome_line(&a).contains("1970-01-01 00:00 UTC"),
                "{}",
                outcome_line(&a)
            );
        }
        a.status = Status::Expired;
        assert_eq!(
            outcome_line(&a),
            "⌛ Expired 1970-01-01 00:00 UTC: no response within 1h"
        );
    }
}
