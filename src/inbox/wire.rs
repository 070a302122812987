//! The task API's JSON shapes, shared by the daemon and its clients (`gatebot task`,
//! `gatebot worker`); docs/api.md describes them for users.

use serde::{Deserialize, Serialize};

use super::{Intent, Level, Task, TaskStatus};
use crate::time::format_ms;

/// The largest `cost_usd` a report may carry: far above what one run of an agent costs,
/// far below what would make the task card's figure a nonsense (`1e308`).
pub const MAX_COST_USD: f64 = 100_000.0;

/// Whether `cost` is a cost a report may carry: from 0 to [`MAX_COST_USD`].
#[must_use]
pub fn valid_cost(cost: f64) -> bool {
    (0.0..=MAX_COST_USD).contains(&cost)
}

/// `POST /v1/tasks` (owners' socket): an owner hands over a task.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskBody {
    pub text: String,
    /// The agent to run it, instead of `[inbox.routes]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The intent, instead of the classifier's (then nothing is asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
}

/// `POST /v1/tasks/claim`: an agent asks for its next task, waiting up to `wait`
/// seconds (capped by `[queue] max_wait`) for one.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimBody {
    pub agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait: Option<f64>,
}

/// `POST /v1/tasks/{id}/progress`: a line of progress (or none: the lease is renewed).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgressBody {
    pub lease: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// `POST /v1/tasks/{id}/complete`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompleteBody {
    pub lease: String,
    pub result: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// `POST /v1/tasks/{id}/fail`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailBody {
    pub lease: String,
    pub error: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// `POST /v1/tasks/{id}/needs-input`: the agent asks the owner; it gets the answer on a
/// later claim, with its `session_id`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeedsInputBody {
    pub lease: String,
    pub questions: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// The question a task waits on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionView {
    /// `clarify` (the classifier asks before the task is queued) or `input` (the agent
    /// asks while it runs).
    pub purpose: String,
    pub questions: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
    pub asked_at: String,
}

/// A task as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskView {
    pub id: String,
    pub short_id: String,
    pub status: TaskStatus,
    pub intent: Intent,
    pub summary: String,
    pub agent: String,
    pub level: Level,
    /// `keywords` or `model`.
    pub classifier: String,
    /// The owner's words.
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clarification: Option<String>,
    /// The execution prompt the agent gets.
    pub prompt: String,
    /// The classifier model's suggestion quoted in the prompt (model text, not the
    /// owner's words), if a model classified the task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<QuestionView>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Claims in the current run.
    pub attempts: u32,
    pub created_by: String,
    pub created_via: String,
    /// Who queued, rejected, cancelled or retried it last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
}

impl TaskView {
    /// The task in a few lines: status and ids, what and who, then what the owner may
    /// need (the question, how to confirm), the progress or the outcome. A failed
    /// task's error is not among them: it is printed where errors go.
    #[must_use]
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "{}  task {} ({})  {}: {} → {}",
            self.status, self.short_id, self.id, self.intent, self.summary, self.agent
        )];
        if let Some(s) = &self.suggestion {
            // Model output, shown as such: the agent is told it after the owner's words.
            lines.push("  the classifier model suggests to the agent (not your words):".into());
            lines.extend(s.lines().map(|line| format!("  | {line}")));
        }
        match self.status {
            TaskStatus::Pending => lines.push(format!(
                "  waits for your go: gatebot decide {} queue (or reject)",
                self.short_id
            )),
            TaskStatus::Waiting => {
                if let Some(q) = &self.question {
                    lines.extend(q.questions.iter().map(|line| format!("  asks: {line}")));
                    if !q.choices.is_empty() {
                        let whose = if q.purpose == "clarify" && self.classifier == "model" {
                            " (the classifier model's suggestions)"
                        } else {
                            ""
                        };
                        lines.push(format!("  choices{whose}: {}", q.choices.join(" | ")));
                    }
                    lines.push(format!(
                        "  answer in the task's chat thread, or: gatebot task answer {} \"…\"",
                        self.short_id
                    ));
                }
            }
            TaskStatus::Running => {
                lines.extend(self.progress.iter().map(|p| format!("  progress: {p}")))
            }
            TaskStatus::Completed => lines.extend(self.result.iter().cloned()),
            _ => {}
        }
        lines
    }
}

/// What a claim hands the agent: the task, its lease and deadline, and (when the task
/// comes back after the owner answered its questions) the answer and the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimedView {
    pub id: String,
    pub short_id: String,
    pub intent: Intent,
    pub summary: String,
    /// The execution prompt.
    pub prompt: String,
    /// Sent with every report on this run; a report with another lease is refused.
    pub lease: String,
    /// How long the lease lasts without a report: report (progress, even empty)
    /// more often than this.
    pub lease_secs: f64,
    /// The run must end within this many seconds (the intent's timeout).
    pub timeout_secs: f64,
    /// Which claim of the current run this is (2 after a lapsed lease).
    pub attempt: u32,
    /// The questions the agent asked, and the owner's answer, when resuming.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// `POST /v1/tasks/claim`'s answer: a task, or none when the wait ran out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimAnswer {
    pub task: Option<ClaimedView>,
}

impl From<&Task> for TaskView {
    fn from(t: &Task) -> Self {
        TaskView {
            id: t.id.clone(),
            short_id: t.short_id.clone(),
            status: t.status,
            intent: t.intent,
            summary: t.summary.clone(),
            agent: t.agent.clone(),
            level: t.level,
            classifier: t.classifier.as_str().to_string(),
            text: t.text.clone(),
            clarification: t.clarification.clone(),
            prompt: t.prompt.clone(),
            suggestion: t.suggestion.clone(),
            question: t.question.as_ref().map(|q| QuestionView {
                purpose: q.purpose.as_str().to_string(),
                questions: q.questions.clone(),
                choices: q.choices.clone(),
                asked_at: format_ms(q.asked_at),
            }),
            progress: t.progress.clone(),
            result: t.result.clone(),
            error: t.error.clone(),
            cost_usd: t.cost_usd,
            session_id: t.session_id.clone(),
            attempts: t.attempts,
            created_by: t.created_by.clone(),
            created_via: t.created_via.clone(),
            decided_by: t.decided_by.clone(),
            created_at: format_ms(t.created_at),
            updated_at: format_ms(t.updated_at),
            started_at: t.started_at.map(format_ms),
            finished_at: t.finished_at.map(format_ms),
        }
    }
}
