//! What the daemon and its clients agree on about runs: the JSON shapes of the runs API
//! (docs/api.md describes them) and the limits the daemon enforces on what agents send.

use serde::{Deserialize, Serialize};

use super::evaluate::{EventType, Handling, IssueKind, StopCause, Totals, Why};
use super::model::Severity;
use super::run::{Action, Artifact, CheckIn, CheckInStatus, Run, RunIssue, RunStatus};
use crate::approval::Via;
use crate::time::format_ms;

/// Longest run title, in characters.
pub const MAX_TITLE_CHARS: usize = 200;
/// Longest phase or step name, in characters.
pub const MAX_PHASE_CHARS: usize = 128;
/// Longest warning or error text, in characters.
pub const MAX_ISSUE_CHARS: usize = 2000;
/// Most warnings and errors (together) in one event.
pub const MAX_ISSUES_PER_EVENT: usize = 500;
/// Most artifacts in one event.
pub const MAX_ARTIFACTS: usize = 50;
/// Longest artifact name, in characters.
pub const MAX_ARTIFACT_NAME_CHARS: usize = 200;
/// Longest artifact URL, in bytes.
pub const MAX_URL_LEN: usize = 2000;

/// A phase or step name: 1-128 characters, not blank, no control characters (it is
/// shown in chats and logs).
#[must_use]
pub fn valid_phase(name: &str) -> bool {
    !name.trim().is_empty()
        && name.chars().count() <= MAX_PHASE_CHARS
        && !name.chars().any(char::is_control)
}

/// `POST /v1/runs`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartRunBody {
    pub agent: String,
    /// What the run does, for the owner ("Release 2.4").
    pub title: String,
    /// The kind of workflow, a plain name ("release"), shown with the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// A warning or error as an agent reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportedIssue {
    pub text: String,
    /// `low`, `medium` or `high`; any other name counts as `medium`; absent: detected
    /// from the text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<String>,
}

/// A step's `result_handling`; each absent one is `stop`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandlingBody {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<Handling>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_warning: Option<Handling>,
}

/// `POST /v1/runs/{id}/events`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventBody {
    #[serde(rename = "type")]
    pub event: EventType,
    pub phase: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<ReportedIssue>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ReportedIssue>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_handling: Option<HandlingBody>,
    /// The same key for the same run returns the first answer again (a retry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

/// A warning or error as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssueView {
    pub text: String,
    pub severity: Severity,
    /// The severity was detected from the text.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub detected: bool,
    pub phase: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// Beyond the phase's tolerance.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exceeded: bool,
}

impl From<&RunIssue> for IssueView {
    fn from(i: &RunIssue) -> Self {
        IssueView {
            text: i.text.clone(),
            severity: i.severity,
            detected: i.detected,
            phase: i.phase.clone(),
            step: i.step.clone(),
            exceeded: i.exceeded,
        }
    }
}

/// A check-in as the API shows it (also the answer of a decision on one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckInView {
    /// Always `checkin`: tells a decision's answer from a request's.
    pub kind: String,
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_id: Option<String>,
    pub run: String,
    pub agent: String,
    pub title: String,
    pub status: CheckInStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<Why>,
    /// The question, or the breach of tolerance.
    pub reason: String,
    pub event: EventType,
    pub phase: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// What it shows: every problem since the previous check-in.
    pub warnings: Vec<IssueView>,
    pub errors: Vec<IssueView>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_via: Option<Via>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_reason: Option<String>,
    pub created_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

/// The kind a [`CheckInView`] says it is.
pub const CHECK_IN_KIND: &str = "checkin";

impl CheckInView {
    /// A waiting check-in's line in a list (`gatebot pending`).
    #[must_use]
    pub fn listed_line(&self) -> String {
        format!(
            "{}  {:<16} check-in  {:<32} at {:<16} {} warning(s), {} error(s)  expires {}",
            self.short_id.as_deref().unwrap_or("-"),
            self.agent,
            self.title,
            self.phase,
            self.warnings.len(),
            self.errors.len(),
            self.expires_at.as_deref().unwrap_or("-")
        )
    }

    /// "continued check-in c7m2abcd (run `deploy` of ci, at build)": after an answer.
    #[must_use]
    pub fn answered_line(&self) -> String {
        let verb = match self.status {
            CheckInStatus::Stopped => "stopped",
            _ => "continued",
        };
        format!(
            "{verb} check-in {} (run `{}` of {}, at {})",
            self.short_id.as_deref().unwrap_or("-"),
            self.title,
            self.agent,
            self.phase
        )
    }

    #[must_use]
    pub fn new(c: &CheckIn, run: &Run, issues: &[RunIssue]) -> CheckInView {
        let of = |kind: IssueKind| {
            issues
                .iter()
                .filter(|i| i.kind == kind)
                .map(IssueView::from)
                .collect()
        };
        CheckInView {
            kind: CHECK_IN_KIND.into(),
            id: c.id.clone(),
            short_id: c.short_id.clone(),
            run: run.id.clone(),
            agent: run.agent.clone(),
            title: run.title.clone(),
            status: c.status,
            why: c.why,
            reason: c.reason.clone(),
            event: c.event,
            phase: c.phase.clone(),
            step: c.step.clone(),
            warnings: of(IssueKind::Warning),
            errors: of(IssueKind::Error),
            artifacts: c.artifacts.clone(),
            decided_by: c.decided_by.clone(),
            decided_via: c.decided_via.clone(),
            decision_reason: c.decision_reason.clone(),
            created_at: format_ms(c.created_at),
            decided_at: c.decided_at.map(format_ms),
            expires_at: c.expires_at.map(format_ms),
        }
    }
}

/// A run as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunView {
    pub id: String,
    pub short_id: String,
    pub agent: String,
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    pub status: RunStatus,
    /// What the agent does now: `continue`, `wait` (for the check-in) or `stop`.
    pub action: Action,
    /// Why: the check-in's question, why it stopped, or the owner's last answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    pub events: u32,
    /// Problems collected over the run (what the limits count).
    pub totals: Totals,
    /// Problems not collected because their limit was reached (`truncate`).
    #[serde(default, skip_serializing_if = "Totals::is_empty")]
    pub not_collected: Totals,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<StopCause>,
    /// The waiting check-in, else the latest one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_in: Option<CheckInView>,
    pub created_at: String,
    pub updated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
}

impl RunView {
    #[must_use]
    pub fn new(run: &Run, check_in: Option<CheckInView>) -> RunView {
        let reason = match (&check_in, run.status) {
            (Some(c), RunStatus::Waiting) => Some(c.reason.clone()),
            _ => run.reason.clone(),
        };
        RunView {
            id: run.id.clone(),
            short_id: run.short_id.clone(),
            agent: run.agent.clone(),
            title: run.title.clone(),
            workflow: run.workflow.clone(),
            status: run.status,
            action: run.status.action(),
            reason,
            phase: run.phase.clone(),
            step: run.step.clone(),
            events: run.events,
            totals: run.totals,
            not_collected: run.dropped,
            stopped_by: run.stopped_by,
            check_in,
            created_at: format_ms(run.created_at),
            updated_at: format_ms(run.updated_at),
            finished_at: run.finished_at.map(format_ms),
        }
    }
}

/// The answer to `POST /v1/runs/{id}/events`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventAnswer {
    /// `continue`, `wait` (long-poll `GET /v1/runs/{id}?wait=S`) or `stop`.
    pub action: Action,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The check-in the event made: waiting, or a report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_in: Option<CheckInView>,
    /// The event's number in the run (from 1).
    pub seq: u32,
    /// Problems of this event beyond the phase's tolerance.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exceeded: Vec<IssueView>,
    /// Kinds no longer collected from this event on (`on_limit_reached = "truncate"`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub truncated: Vec<IssueKind>,
    /// The event's idempotency key was seen before: this is the first answer again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repeated: bool,
    pub run: RunView,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_names_are_plain_and_bounded() {
        for ok in ["build", "Phase 2: deploy", "évaluer", &"x".repeat(128)] {
            assert!(valid_phase(ok), "{ok}");
        }
        for bad in ["", "   ", "a\nb", "tab\there", &"x".repeat(129)] {
            assert!(!valid_phase(bad), "{bad:?}");
        }
    }

    #[test]
    fn an_event_body_refuses_unknown_fields_and_types() {
        let ok: EventBody = serde_json::from_str(
            r#"{"type": "phase_complete", "phase": "build", "warnings": [{"text": "w", "severity": "low"}],
                "result_handling": {"on_warning": "ask"}, "artifacts": [{"name": "log", "url": "https://x"}]}"#,
        )
        .unwrap();
        assert_eq!(ok.event, EventType::PhaseComplete);
        assert_eq!(ok.result_handling.unwrap().on_warning, Some(Handling::Ask));
        for bad in [
            r#"{"type": "step_done", "phase": "p"}"#,
            r#"{"type": "step_complete"}"#,
            r#"{"type": "step_complete", "phase": "p", "warnings": [{"txt": "w"}]}"#,
            r#"{"type": "step_complete", "phase": "p", "result_handling": {"on_error": "stop"}}"#,
            r#"{"type": "step_complete", "phase": "p", "result_handling": {"on_failure": "retry"}}"#,
            r#"{"type": "step_complete", "phase": "p", "extra": 1}"#,
        ] {
            assert!(serde_json::from_str::<EventBody>(bad).is_err(), "{bad}");
        }
    }
}
