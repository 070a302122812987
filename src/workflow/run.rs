//! The records of a workflow run, as the store keeps them: the run, its check-ins and
//! the problems they show; and the sentences that describe an answer.
//!
//! ```text
//! start ─▶ running ─┬─ event: continue / report ─▶ running
//!                   ├─ event: wait ─▶ waiting ─┬─ continue ─▶ running (completed after workflow_complete)
//!                   │                          └─ stop, expiry ─▶ stopped
//!                   ├─ event: stop (tolerance, limit) ─▶ stopped
//!                   └─ workflow_complete: continue ─▶ completed
//! ```

use serde::{Deserialize, Serialize};

use super::evaluate::{EventType, IssueKind, StopCause, Totals, Why};
use super::model::Severity;
use crate::approval::Via;

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    Running,
    /// A check-in waits for the owner.
    Waiting,
    Stopped,
    Completed,
}

impl RunStatus {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Waiting => "waiting",
            RunStatus::Stopped => "stopped",
            RunStatus::Completed => "completed",
        }
    }

    #[must_use]
    pub fn parse(s: &str) -> Option<RunStatus> {
        match s {
            "running" => Some(RunStatus::Running),
            "waiting" => Some(RunStatus::Waiting),
            "stopped" => Some(RunStatus::Stopped),
            "completed" => Some(RunStatus::Completed),
            _ => None,
        }
    }

    /// No more events.
    #[must_use]
    pub fn is_finished(self) -> bool {
        matches!(self, RunStatus::Stopped | RunStatus::Completed)
    }

    /// What the agent does now.
    #[must_use]
    pub fn action(self) -> Action {
        match self {
            RunStatus::Running | RunStatus::Completed => Action::Continue,
            RunStatus::Waiting => Action::Wait,
            RunStatus::Stopped => Action::Stop,
        }
    }
}

/// What an event's answer tells the agent to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    Continue,
    /// Long-poll the run until the owner answers the check-in.
    Wait,
    Stop,
}

impl Action {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Continue => "continue",
            Action::Wait => "wait",
            Action::Stop => "stop",
        }
    }

    #[must_use]
    pub fn parse(s: &str) -> Option<Action> {
        match s {
            "continue" => Some(Action::Continue),
            "wait" => Some(Action::Wait),
            "stop" => Some(Action::Stop),
            _ => None,
        }
    }
}

/// Where a check-in is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckInStatus {
    /// Asks the owner; the run waits.
    Waiting,
    Continued,
    Stopped,
    /// Nobody answered in time: counts as stop.
    Expired,
    /// A check-in point with nothing to show: a report, asking nothing.
    Reported,
}

impl CheckInStatus {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            CheckInStatus::Waiting => "waiting",
            CheckInStatus::Continued => "continued",
            CheckInStatus::Stopped => "stopped",
            CheckInStatus::Expired => "expired",
            CheckInStatus::Reported => "reported",
        }
    }

    #[must_use]
    pub fn parse(s: &str) -> Option<CheckInStatus> {
        match s {
            "waiting" => Some(CheckInStatus::Waiting),
            "continued" => Some(CheckInStatus::Continued),
            "stopped" => Some(CheckInStatus::Stopped),
            "expired" => Some(CheckInStatus::Expired),
            "reported" => Some(CheckInStatus::Reported),
            _ => None,
        }
    }
}

/// An owner's answer to a check-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Answer {
    Continue,
    Stop,
}

impl Answer {
    /// `continue` or `stop` (any case); the error says what is accepted.
    pub fn parse(s: &str) -> Result<Answer, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "continue" => Ok(Answer::Continue),
            "stop" => Ok(Answer::Stop),
            other => Err(format!(
                "unknown answer `{other}` to a check-in: use continue or stop"
            )),
        }
    }

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Answer::Continue => "continue",
            Answer::Stop => "stop",
        }
    }
}

/// An owner's answer, with who gave it and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckInAnswer {
    pub answer: Answer,
    pub actor: String,
    pub via: Via,
    pub reason: Option<String>,
}

/// Something a step produced, as the agent names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Artifact {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// A workflow run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub id: String,
    pub short_id: String,
    pub agent: String,
    pub title: String,
    pub workflow: Option<String>,
    pub idempotency_key: Option<String>,
    pub status: RunStatus,
    /// Of the last event.
    pub phase: Option<String>,
    pub step: Option<String>,
    pub events: u32,
    /// Collected over the run: what the limits count.
    pub totals: Totals,
    /// Not collected because their limit was reached (truncate).
    pub dropped: Totals,
    /// The waiting or latest check-in.
    pub check_in: Option<String>,
    /// Why it stopped, or the owner's last answer.
    pub reason: Option<String>,
    pub stopped_by: Option<StopCause>,
    pub created_at: i64,
    pub updated_at: i64,
    pub finished_at: Option<i64>,
}

/// A check-in of a run, with the event that made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckIn {
    pub id: String,
    /// `None` for a report.
    pub short_id: Option<String>,
    pub run_id: String,
    pub status: CheckInStatus,
    /// `None` for a report.
    pub why: Option<Why>,
    /// The question, or the breach of tolerance.
    pub reason: String,
    pub event: EventType,
    pub phase: String,
    pub step: Option<String>,
    pub artifacts: Vec<Artifact>,
    /// How many problems it shows.
    pub shown: Totals,
    pub decided_by: Option<String>,
    pub decided_via: Option<Via>,
    pub decision_reason: Option<String>,
    pub ttl_ms: Option<i64>,
    pub created_at: i64,
    pub decided_at: Option<i64>,
    pub expires_at: Option<i64>,
}

/// A warning or error a run reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunIssue {
    pub kind: IssueKind,
    pub text: String,
    pub severity: Severity,
    pub detected: bool,
    pub phase: String,
    pub step: Option<String>,
    /// Beyond the phase's tolerance.
    pub exceeded: bool,
}

impl CheckIn {
    /// How it was answered, in a sentence's words: "continued by alice on Telegram",
    /// "stopped by alice on the command line: not now", "expired: no answer within 1 h".
    #[must_use]
    pub fn describe_answer(&self) -> String {
        let by = crate::approval::who(self.decided_by.as_deref(), self.decided_via.as_ref());
        let reason = self
            .decision_reason
            .as_deref()
            .map(|r| format!(": {r}"))
            .unwrap_or_default();
        match self.status {
            CheckInStatus::Waiting => "waiting for the owner".into(),
            CheckInStatus::Reported => "a report (nothing to answer)".into(),
            CheckInStatus::Continued => format!("continued by {by}{reason}"),
            CheckInStatus::Stopped => format!("stopped by {by}{reason}"),
            CheckInStatus::Expired => format!("expired: {}", expiry_reason(self.ttl_ms)),
        }
    }

    /// What a run that reaches this check-in's answer tells its agent.
    #[must_use]
    pub fn run_reason(&self) -> String {
        let short = self.short_id.as_deref().unwrap_or("-");
        match self.status {
            CheckInStatus::Expired => format!(
                "check-in {short} expired: {}; an unanswered check-in counts as stop",
                expiry_reason(self.ttl_ms)
            ),
            _ => format!("check-in {short} {}", self.describe_answer()),
        }
    }
}

/// "no answer within 1 h".
#[must_use]
pub fn expiry_reason(ttl_ms: Option<i64>) -> String {
    format!(
        "no answer within {}",
        crate::words::span(std::time::Duration::from_millis(
            ttl_ms.unwrap_or(0).max(0) as u64
        ))
    )
}

/// What an owner's answer to a check-in did.
#[derive(Debug, Clone)]
pub enum Answered {
    /// This answer was applied: the check-in and the run as they are now.
    Done(CheckIn, Run),
    /// The check-in no longer waited (answered, expired, or a report).
    Already(CheckIn, Run),
    /// It still waited, past its deadline: this call expired it (the caller announces it).
    Expired(CheckIn, Run),
    NotFound,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::PlatformId;

    #[test]
    fn answers_are_described_for_people_and_agents() {
        let mut c = CheckIn {
            id: "01J".into(),
            short_id: Some("k7m2abcd".into()),
            run_id: "01R".into(),
            status: CheckInStatus::Stopped,
            why: Some(Why::CheckIn),
            reason: "Check-in: build complete. Continue?".into(),
            event: EventType::PhaseComplete,
            phase: "build".into(),
            step: None,
            artifacts: vec![],
            shown: Totals::default(),
            decided_by: Some("Alice (42)".into()),
            decided_via: Some(Via::Chat(PlatformId::new("telegram"))),
            decision_reason: Some("not before Monday".into()),
            ttl_ms: Some(3_600_000),
            created_at: 0,
            decided_at: Some(0),
            expires_at: Some(3_600_000),
        };
        assert_eq!(
            c.run_reason(),
            "check-in k7m2abcd stopped by Alice (42) on Telegram: not before Monday"
        );
        c.status = CheckInStatus::Expired;
        assert_eq!(
            c.run_reason(),
            "check-in k7m2abcd expired: no answer within 1 h; an unanswered check-in counts as stop"
        );
        c.status = CheckInStatus::Continued;
        c.decision_reason = None;
        c.decided_via = Some(Via::Cli);
        assert_eq!(
            c.describe_answer(),
            "continued by Alice (42) on the command line"
        );
    }

    #[test]
    fn statuses_round_trip_and_answers_parse() {
        for s in [
            RunStatus::Running,
            RunStatus::Waiting,
            RunStatus::Stopped,
            RunStatus::Completed,
        ] {
            assert_eq!(RunStatus::parse(s.as_str()), Some(s));
        }
        for s in [
            CheckInStatus::Waiting,
            CheckInStatus::Continued,
            CheckInStatus::Stopped,
            CheckInStatus::Expired,
            CheckInStatus::Reported,
        ] {
            assert_eq!(CheckInStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(Answer::parse(" Continue "), Ok(Answer::Continue));
        assert_eq!(Answer::parse("STOP"), Ok(Answer::Stop));
        assert!(Answer::parse("approve")
            .unwrap_err()
            .contains("continue or stop"));
        assert_eq!(RunStatus::Waiting.action(), Action::Wait);
        assert_eq!(RunStatus::Completed.action(), Action::Continue);
    }
}
