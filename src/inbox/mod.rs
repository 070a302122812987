//! The inbox: owners hand tasks to agents, and see them through to done.
//!
//! ```text
//!  owner's words ─▶ classify (keywords, or a model with keywords as fallback)
//!        │             intent · summary · execution prompt · clarify? · level
//!        ▼
//!  waiting (clarify) ─answer─▶ pending (level 1: Queue / Reject) ─▶ queued ─▶ running
//!                                                                    ▲    │ claim (lease)
//!                       lease lapsed once, needs-input answered ─────┘    ▼
//!                                         completed | failed | waiting | cancelled
//! ```
//!
//! This module is the domain, pure and shared by the daemon and the worker:
//! - [`Intent`], [`Level`], [`Classification`]: what a classifier says about a task;
//! - [`keywords`]: the table-driven keyword classifier, always available;
//! - [`classify`]: summary, execution prompt and clarify rules, and the fallback from a
//!   model's answer to keywords; [`model`]: the optional OpenAI-compatible classifier;
//! - [`lifecycle`]: the statuses and every allowed transition, as one table;
//! - [`detect`]: failure and pending-input detection over an agent's final output;
//! - [`output`]: how the worker reads a command's output (plain lines, or Claude
//!   Code's JSON and stream-JSON);
//! - [`wire`]: the task API's JSON shapes.
//!
//! The engine (`engine::tasks`) and the store (`store::tasks`) apply it; chats show it
//! through `chat::conversation::task`.

pub mod classify;
pub mod detect;
pub mod keywords;
pub mod lifecycle;
pub mod model;
pub mod output;
pub mod wire;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use lifecycle::TaskStatus;

/// What an owner's task is about. It picks the agent (`[inbox.routes]`), the timeout
/// (`[inbox.timeouts]`), the default autonomy level (`[inbox.autonomy]`) and how the
/// execution prompt is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Intent {
    Research,
    CodeChange,
    Organize,
    Question,
    Reminder,
    Todo,
    TodoComplete,
    TodoCheck,
    Other,
}

impl Intent {
    /// Every intent, in the order docs and errors list them.
    pub const ALL: [Intent; 9] = [
        Intent::Research,
        Intent::CodeChange,
        Intent::Organize,
        Intent::Question,
        Intent::Reminder,
        Intent::Todo,
        Intent::TodoComplete,
        Intent::TodoCheck,
        Intent::Other,
    ];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Intent::Research => "research",
            Intent::CodeChange => "code_change",
            Intent::Organize => "organize",
            Intent::Question => "question",
            Intent::Reminder => "reminder",
            Intent::Todo => "todo",
            Intent::TodoComplete => "todo_complete",
            Intent::TodoCheck => "todo_check",
            Intent::Other => "other",
        }
    }

    /// The names of every intent, comma-separated (for error messages).
    #[must_use]
    pub fn names() -> String {
        Intent::ALL
            .iter()
            .map(|i| i.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// How a card names it: "code change".
    #[must_use]
    pub fn label(self) -> String {
        self.as_str().replace('_', " ")
    }
}

impl fmt::Display for Intent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Intent {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let wanted = s.trim().to_ascii_lowercase().replace('-', "_");
        Intent::ALL
            .into_iter()
            .find(|i| i.as_str() == wanted)
            .ok_or_else(|| format!("unknown intent `{s}`: use one of {}", Intent::names()))
    }
}

/// How much the agent may do before the owner says so.
///
/// `1`: the owner confirms (Queue / Reject) before the task is queued; `2`: queued at
/// once. The number is stored as it is, so more levels can be added without a
/// migration; today every level from 2 up queues at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Level(pub u8);

impl Level {
    /// The owner confirms first.
    pub const CONFIRM: Level = Level(1);
    /// Queued at once.
    pub const AUTO: Level = Level(2);
    /// The highest level gatebot knows (config and classifiers are held to it).
    pub const MAX: Level = Level(2);

    /// Whether the owner must confirm before the task is queued.
    #[must_use]
    pub fn needs_confirmation(self) -> bool {
        self <= Level::CONFIRM
    }

    /// A level as configured or answered: 1 to [`Level::MAX`].
    pub fn parse(n: i64) -> Result<Level, String> {
        match u8::try_from(n) {
            Ok(v) if (1..=Level::MAX.0).contains(&v) => Ok(Level(v)),
            _ => Err(format!(
                "`{n}` is not an autonomy level: 1 (the owner confirms first) or 2 (queued at once)"
            )),
        }
    }
}

/// A question to the owner, with concrete answers to pick where there are some.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Clarify {
    pub question: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<String>,
}

/// What a classifier makes of an owner's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    pub intent: Intent,
    /// A noun phrase of at most [`MAX_SUMMARY`] characters, for cards and lists.
    pub summary: String,
    /// The task written for the agent: the owner's words, what to do, and a model's
    /// suggestion marked as one.
    pub prompt: String,
    /// A model classifier's own instructions for the agent (bounded): a suggestion,
    /// never the task; shown to the owner with the task.
    pub suggestion: Option<String>,
    /// Asked before the task may go on, when the words are not enough.
    pub clarify: Option<Clarify>,
    /// The classifier's own view of the level; it can only lower the configured one.
    pub level: Option<Level>,
    /// Which classifier answered.
    pub by: ClassifiedBy,
}

/// Which classifier produced a classification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClassifiedBy {
    Keywords,
    Model,
}

impl ClassifiedBy {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ClassifiedBy::Keywords => "keywords",
            ClassifiedBy::Model => "model",
        }
    }
}

/// A task and everything that happened to it.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub id: String,
    pub short_id: String,
    pub status: TaskStatus,
    pub intent: Intent,
    pub summary: String,
    /// The execution prompt.
    pub prompt: String,
    /// The classifier model's suggestion in the prompt, shown to the owner (model
    /// text: untrusted wherever it is shown).
    pub suggestion: Option<String>,
    pub level: Level,
    pub classifier: ClassifiedBy,
    pub agent: String,
    /// The owner's words (untrusted text wherever it is shown).
    pub text: String,
    pub clarification: Option<String>,
    pub created_by: String,
    /// Where it was handed over: `cli`, `api`, or a chat platform's key.
    pub created_via: String,
    pub decided_by: Option<String>,
    /// Claims in the current run, and leases that lapsed in it.
    pub attempts: u32,
    pub lapses: u32,
    pub lease: Option<String>,
    pub lease_until: Option<i64>,
    pub deadline: Option<i64>,
    pub progress: Option<String>,
    pub progress_at: Option<i64>,
    /// Moves whenever what its card shows changes.
    pub revision: i64,
    pub result: Option<String>,
    pub error: Option<String>,
    pub cost_usd: Option<f64>,
    pub session_id: Option<String>,
    /// The owner's answer to the agent's questions, for its next claim.
    pub input: Option<String>,
    pub input_questions: Vec<String>,
    /// The question it waits on, if any.
    pub question: Option<TaskQuestion>,
    /// Unix milliseconds.
    pub created_at: i64,
    pub updated_at: i64,
    pub started_at: Option<i64>,
    pub finished_at: Option<i64>,
}

/// Why a question was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionPurpose {
    /// The classifier asks before the task goes on.
    Clarify,
    /// The agent asks while it runs.
    Input,
}

impl QuestionPurpose {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            QuestionPurpose::Clarify => "clarify",
            QuestionPurpose::Input => "input",
        }
    }

    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "clarify" => Ok(QuestionPurpose::Clarify),
            "input" => Ok(QuestionPurpose::Input),
            other => Err(format!("unknown question purpose `{other}`")),
        }
    }
}

/// Whether a question still waits for the owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuestionState {
    Open,
    Answered,
    /// The task moved on without an answer (it was cancelled).
    Dropped,
}

impl QuestionState {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            QuestionState::Open => "open",
            QuestionState::Answered => "answered",
            QuestionState::Dropped => "dropped",
        }
    }

    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "open" => Ok(QuestionState::Open),
            "answered" => Ok(QuestionState::Answered),
            "dropped" => Ok(QuestionState::Dropped),
            other => Err(format!("unknown question state `{other}`")),
        }
    }
}

/// A question a task asks its owner: shown as a card of its own in the task's thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskQuestion {
    pub id: String,
    pub task: String,
    pub purpose: QuestionPurpose,
    pub questions: Vec<String>,
    pub choices: Vec<String>,
    pub state: QuestionState,
    pub answer: Option<String>,
    pub answered_by: Option<String>,
    pub answered_via: Option<String>,
    pub asked_at: i64,
    pub answered_at: Option<i64>,
}

/// Longest summary, in characters (the seed's display limit).
pub const MAX_SUMMARY: usize = 30;
/// Longest task an owner may write, in characters (a Telegram message is at most 4096).
pub const MAX_TASK_CHARS: usize = 4000;
/// Longest progress line kept, in characters.
pub const MAX_PROGRESS_CHARS: usize = 500;
/// Longest result or error kept, in characters.
pub const MAX_RESULT_CHARS: usize = 16_000;
/// Most questions an agent may ask at once, and the longest of each.
pub const MAX_QUESTIONS: usize = 10;
pub const MAX_QUESTION_CHARS: usize = 500;
/// Longest answer an owner may give, in characters.
pub const MAX_ANSWER_CHARS: usize = 4000;

/// `s` cut to at most `max` characters (a `…` marks the cut).
#[must_use]
pub fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The last `max` characters of `s` (a `…` marks the cut).
#[must_use]
pub fn tail(s: &str, max: usize) -> String {
    let n = s.chars().count();
    if n <= max {
        return s.to_string();
    }
    let mut out = String::from("…");
    out.extend(s.chars().skip(n - max.saturating_sub(1)));
    out
}

/// Checks text an owner or agent sends: not empty, within `max` characters, and no
/// control characters but line breaks and tabs. `what` names it in the error.
pub fn check_text(what: &str, s: &str, max: usize) -> Result<String, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err(format!("{what} is empty"));
    }
    let n = t.chars().count();
    if n > max {
        return Err(format!("{what} is {n} characters; the most is {max}"));
    }
    if t.chars()
        .any(|c| c.is_control() && !matches!(c, '\n' | '\t' | '\r'))
    {
        return Err(format!(
            "{what} contains control characters (only line breaks and tabs are allowed)"
        ));
    }
    Ok(t.to_string())
}

/// What a worker reports.
#[derive(Debug, Clone)]
pub enum Report {
    /// A line of progress, or `None` only to renew the lease.
    Progress(Option<String>),
    Complete {
        result: String,
        cost_usd: Option<f64>,
        session_id: Option<String>,
    },
    Fail {
        error: String,
        cost_usd: Option<f64>,
        session_id: Option<String>,
    },
    NeedsInput {
        questions: Vec<String>,
        session_id: Option<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intents_round_trip_and_unknown_ones_name_the_choices() {
        for i in Intent::ALL {
            assert_eq!(i.as_str().parse::<Intent>().unwrap(), i);
        }
        assert_eq!("Code-Change".parse::<Intent>().unwrap(), Intent::CodeChange);
        let e = "email".parse::<Intent>().unwrap_err();
        assert!(e.contains("research, code_change"), "{e}");
    }

    #[test]
    fn levels_are_one_or_two() {
        assert_eq!(Level::parse(1), Ok(Level::CONFIRM));
        assert_eq!(Level::parse(2), Ok(Level::AUTO));
        for bad in [0, 3, -1, 300] {
            assert!(Level::parse(bad).is_err(), "{bad}");
        }
        assert!(Level::CONFIRM.needs_confirmation());
        assert!(!Level::AUTO.needs_confirmation());
    }

    #[test]
    fn text_checks_refuse_empty_long_and_control_text() {
        assert_eq!(check_text("the task", "  do it \n", 10).unwrap(), "do it");
        assert!(check_text("the task", "   ", 10)
            .unwrap_err()
            .contains("empty"));
        assert!(check_text("the task", "x".repeat(11).as_str(), 10)
            .unwrap_err()
            .contains("11 characters"));
        assert!(check_text("the task", "a\u{0}b", 10)
            .unwrap_err()
            .contains("control"));
        assert!(check_text("the task", "a\tb\nc", 10).is_ok());
    }

    #[test]
    fn cutting_keeps_characters_whole() {
        assert_eq!(cut("héllo", 10), "héllo");
        assert_eq!(cut("ééééé", 3), "éé…");
        assert_eq!(tail("abcdef", 4), "…def");
        assert_eq!(tail("abc", 4), "abc");
    }
}
