//! A task's statuses and the one table of transitions between them.
//!
//! ```text
//! create ─┬─ waiting (clarify) ─answer─┬─ pending ─Queue─▶ queued
//!         ├─ pending (level 1) ─Reject─┼─▶ rejected
//!         └─ queued (level 2) ◀────────┘
//! queued ─claim─▶ running ─┬─ complete ─▶ completed
//!                          ├─ fail, timeout, second lapse ─▶ failed
//!                          ├─ needs input ─▶ waiting ─answer─▶ queued
//!                          ├─ first lapse ─▶ queued
//!                          └─ its agent paused ─▶ queued
//! queued ─its agent paused, another on its route─▶ queued (that agent's)
//! pending | queued | running | waiting ─cancel─▶ cancelled
//! failed | cancelled ─retry─▶ queued
//! ```
//!
//! The store applies a transition with `UPDATE … WHERE status = <from>`, so two racing
//! events (a cancel and a completion, two presses) give exactly one outcome.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskStatus {
    /// Waiting for the owner to confirm (level 1): Queue or Reject.
    Pending,
    /// Waiting for its agent to claim it.
    Queued,
    /// Claimed by a worker holding a lease.
    Running,
    /// Waiting for the owner's answer (a clarify question, or the agent's questions).
    Waiting,
    Completed,
    Failed,
    /// The owner said no before it was queued.
    Rejected,
    /// The owner withdrew it.
    Cancelled,
}

impl TaskStatus {
    pub const ALL: [TaskStatus; 8] = [
        TaskStatus::Pending,
        TaskStatus::Queued,
        TaskStatus::Running,
        TaskStatus::Waiting,
        TaskStatus::Completed,
        TaskStatus::Failed,
        TaskStatus::Rejected,
        TaskStatus::Cancelled,
    ];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::Queued => "queued",
            TaskStatus::Running => "running",
            TaskStatus::Waiting => "waiting",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Rejected => "rejected",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// Not finished: chats keep showing it, `/tasks` lists it.
    #[must_use]
    pub fn is_open(self) -> bool {
        matches!(
            self,
            TaskStatus::Pending | TaskStatus::Queued | TaskStatus::Running | TaskStatus::Waiting
        )
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for TaskStatus {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        TaskStatus::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| format!("unknown task status `{s}`"))
    }
}

/// What happens to a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Classified; `clarify` when a question must be answered first, `confirm` when
    /// the owner must confirm (level 1).
    Created {
        clarify: bool,
        confirm: bool,
    },
    /// The owner confirmed a level-1 task.
    Queue,
    /// The owner refused a level-1 task.
    Reject,
    /// A worker claimed it.
    Claim,
    /// The worker reported progress (renews the lease).
    Progress,
    Complete,
    Fail,
    /// The agent asked the owner something.
    NeedsInput,
    /// The owner answered the open question; `confirm` when the task (re-classified
    /// after a clarify answer) needs confirming first.
    Answer {
        confirm: bool,
    },
    /// The lease ran out without a word from the worker; `first` the first time in
    /// this run.
    LeaseLapsed {
        first: bool,
    },
    /// The intent's timeout passed.
    TimedOut,
    /// Its agent was paused: a running task goes back to the queue (its worker's
    /// lease is void), to wait for the agent or go to another on its route.
    AgentPaused,
    /// Queued for another agent its route names, while its own is paused.
    Rerouted,
    Cancel,
    Retry,
}

impl Step {
    /// The audit event this step writes.
    #[must_use]
    pub fn event(self) -> &'static str {
        match self {
            Step::Created { .. } => "task_created",
            Step::Queue => "task_queued",
            Step::Reject => "task_rejected",
            Step::Claim => "task_claimed",
            Step::Progress => "task_progress",
            Step::Complete => "task_completed",
            Step::Fail => "task_failed",
            Step::NeedsInput => "task_needs_input",
            Step::Answer { .. } => "task_answered",
            Step::LeaseLapsed { first: true } => "task_requeued",
            Step::LeaseLapsed { first: false } => "task_lease_lapsed",
            Step::TimedOut => "task_timed_out",
            Step::AgentPaused => "task_withheld",
            Step::Rerouted => "task_rerouted",
            Step::Cancel => "task_cancelled",
            Step::Retry => "task_retried",
        }
    }
}

/// Where `step` takes a task in status `from` (`None` for creation), or why it cannot.
pub fn next(from: Option<TaskStatus>, step: Step) -> Result<TaskStatus, String> {
    use TaskStatus::*;
    let to = match (from, step) {
        (None, Step::Created { clarify: true, .. }) => Waiting,
        (None, Step::Created { confirm: true, .. }) => Pending,
        (None, Step::Created { .. }) => Queued,
        (Some(Pending), Step::Queue) => Queued,
        (Some(Pending), Step::Reject) => Rejected,
        (Some(Queued), Step::Claim) => Running,
        (Some(Running), Step::Progress) => Running,
        (Some(Running), Step::Complete) => Completed,
        (Some(Running), Step::Fail | Step::TimedOut) => Failed,
        (Some(Running), Step::LeaseLapsed { first: false }) => Failed,
        (Some(Running), Step::LeaseLapsed { first: true }) => Queued,
        (Some(Running), Step::NeedsInput) => Waiting,
        (Some(Running), Step::AgentPaused) => Queued,
        (Some(Queued), Step::Rerouted) => Queued,
        (Some(Waiting), Step::Answer { confirm: true }) => Pending,
        (Some(Waiting), Step::Answer { confirm: false }) => Queued,
        (Some(Pending | Queued | Running | Waiting), Step::Cancel) => Cancelled,
        (Some(Failed | Cancelled), Step::Retry) => Queued,
        (Some(s), step) => return Err(refusal(s, step)),
        (None, _) => return Err("no such task".into()),
    };
    Ok(to)
}

/// Why `step` does not apply to a task in status `s`, in the owner's words.
fn refusal(s: TaskStatus, step: Step) -> String {
    let what = match step {
        Step::Queue => "queued",
        Step::Reject => "rejected",
        Step::Cancel => "cancelled",
        Step::Retry => "retried (only failed or cancelled tasks are)",
        Step::Answer { .. } => "answered (it is not waiting for an answer)",
        Step::Claim => "claimed",
        _ => "reported on (it is not running under this lease)",
    };
    format!("the task is {s}, so it cannot be {what}")
}

#[cfg(test)]
mod tests {
    use super::TaskStatus::*;
    use super::*;

    #[test]
    fn every_transition_of_the_table() {
        let create = |clarify, confirm| Step::Created { clarify, confirm };
        let cases: &[(Option<TaskStatus>, Step, Option<TaskStatus>)] = &[
            (None, create(true, true), Some(Waiting)),
            (None, create(false, true), Some(Pending)),
            (None, create(false, false), Some(Queued)),
            (Some(Pending), Step::Queue, Some(Queued)),
            (Some(Pending), Step::Reject, Some(Rejected)),
            (Some(Pending), Step::Claim, None),
            (Some(Queued), Step::Queue, None),
            (Some(Queued), Step::Claim, Some(Running)),
            (Some(Running), Step::Claim, None),
            (Some(Running), Step::Progress, Some(Running)),
            (Some(Running), Step::Complete, Some(Completed)),
            (Some(Running), Step::Fail, Some(Failed)),
            (Some(Running), Step::TimedOut, Some(Failed)),
            (Some(Running), Step::NeedsInput, Some(Waiting)),
            (
                Some(Running),
                Step::LeaseLapsed { first: true },
                Some(Queued),
            ),
            (
                Some(Running),
                Step::LeaseLapsed { first: false },
                Some(Failed),
            ),
            (Some(Running), Step::AgentPaused, Some(Queued)),
            (Some(Queued), Step::AgentPaused, None),
            (Some(Queued), Step::Rerouted, Some(Queued)),
            (Some(Running), Step::Rerouted, None),
            (Some(Queued), Step::Complete, None),
            (Some(Waiting), Step::Complete, None),
            (Some(Waiting), Step::Answer { confirm: false }, Some(Queued)),
            (Some(Waiting), Step::Answer { confirm: true }, Some(Pending)),
            (Some(Running), Step::Answer { confirm: false }, None),
            (Some(Pending), Step::Cancel, Some(Cancelled)),
            (Some(Queued), Step::Cancel, Some(Cancelled)),
            (Some(Running), Step::Cancel, Some(Cancelled)),
            (Some(Waiting), Step::Cancel, Some(Cancelled)),
            (Some(Completed), Step::Cancel, None),
            (Some(Failed), Step::Cancel, None),
            (Some(Failed), Step::Retry, Some(Queued)),
            (Some(Cancelled), Step::Retry, Some(Queued)),
            (Some(Completed), Step::Retry, None),
            (Some(Rejected), Step::Retry, None),
            (Some(Queued), Step::Retry, None),
            (Some(Completed), Step::Progress, None),
            (Some(Cancelled), Step::Complete, None),
        ];
        for (from, step, want) in cases {
            assert_eq!(next(*from, *step).ok(), *want, "{from:?} + {step:?}");
        }
    }

    #[test]
    fn a_refusal_says_what_the_task_is() {
        let e = next(Some(Completed), Step::Cancel).unwrap_err();
        assert_eq!(e, "the task is completed, so it cannot be cancelled");
        let e = next(Some(Cancelled), Step::Complete).unwrap_err();
        assert!(e.contains("not running under this lease"), "{e}");
    }

    #[test]
    fn open_statuses_are_the_unfinished_ones() {
        let open: Vec<_> = TaskStatus::ALL
            .into_iter()
            .filter(|s| s.is_open())
            .collect();
        assert_eq!(open, [Pending, Queued, Running, Waiting]);
        for s in TaskStatus::ALL {
            assert_eq!(s.as_str().parse::<TaskStatus>().unwrap(), s);
        }
    }
}
