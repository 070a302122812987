//! Subjects: what owners see in chats and act on, of every kind (a request that asks
//! a human, a workflow check-in, a task, a trust proposal), and the chat facts about
//! them that conversations and delivery read: where a subject lives (its home chat
//! and thread), which message shows it, what a digest shows, and the questions
//! gatebot asked about it. The store keeps them; the engine hands them out.

use crate::policy::RiskScore;

/// What kind of thing a subject is: which conversation kind draws its cards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SubjectKind {
    /// A request that asked a human.
    Approval,
    /// A task an owner handed to an agent, or a question it asks (drawn by
    /// `chat::conversation::task`).
    Task,
    /// A workflow run's check-in that asks its owner whether to go on.
    CheckIn,
    /// A proposed tier change, waiting for an owner.
    Proposal,
}

impl SubjectKind {
    /// Every kind of subject.
    pub const ALL: [SubjectKind; 4] = [
        SubjectKind::Approval,
        SubjectKind::Task,
        SubjectKind::CheckIn,
        SubjectKind::Proposal,
    ];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            SubjectKind::Approval => "approval",
            SubjectKind::Task => "task",
            SubjectKind::CheckIn => "checkin",
            SubjectKind::Proposal => "proposal",
        }
    }

    /// The kind [`SubjectKind::as_str`] names.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        SubjectKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// Something shown in chats with cards of its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject {
    pub id: String,
    pub kind: SubjectKind,
}

/// Where in a chat a card goes: as a reply to `reply_to` on Telegram, in the thread
/// `root` starts (Slack, whose threads hang off their first message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thread {
    pub reply_to: String,
    pub root: String,
}

/// Where a subject's cards belong when it has a home: one chat of one platform,
/// threaded under a message there if given. A subject without a home is shown in every
/// destination chat of every platform.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    pub platform: String,
    pub chat: String,
    pub thread: Option<Thread>,
}

/// How a message shows a subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShownBy {
    /// The subject's own card.
    Card,
    /// A digest covering many requests.
    Digest,
}

impl ShownBy {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ShownBy::Card => "card",
            ShownBy::Digest => "digest",
        }
    }

    /// What [`ShownBy::as_str`] names.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "card" => Some(ShownBy::Card),
            "digest" => Some(ShownBy::Digest),
            _ => None,
        }
    }
}

/// A chat message that shows a subject.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shown {
    pub subject: Subject,
    pub message: String,
    pub by: ShownBy,
    /// The subject's revision the message was drawn at.
    pub revision: String,
}

/// An open subject without a message in a chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unposted {
    pub subject: Subject,
    /// Its revision now.
    pub revision: String,
    /// An earlier post of it here has an unknown outcome (it may show twice).
    pub unknown: bool,
}

/// What a digest message shows now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigestState {
    /// The request under review, or `None` for the summary.
    pub showing: Option<String>,
    /// It shows the final tally (nothing left to decide).
    pub closed: bool,
}

/// Requests of one agent and tool in a digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigestGroup {
    pub agent: String,
    pub tool: String,
    pub count: usize,
    pub pending: usize,
    pub max_risk: RiskScore,
}

/// The contents of a digest, counted now.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DigestSummary {
    pub total: usize,
    pub pending: usize,
    /// Approved (including those since executed, succeeded or failed).
    pub approved: usize,
    pub rejected: usize,
    pub expired: usize,
    pub cancelled: usize,
    /// By agent and tool, largest first.
    pub groups: Vec<DigestGroup>,
    /// The earliest deadline among the pending ones.
    pub next_expiry: Option<i64>,
    /// The agents with several requests pending in it, each with all its pending
    /// requests counted (what deciding them together would cover), largest first.
    pub agents: Vec<AgentPending>,
}

/// Most agents a digest or `/pending` offers to decide together.
pub const BATCH_AGENTS_SHOWN: usize = 5;

/// An agent's pending requests, counted for deciding them together ("Approve all 3
/// from deployer"): all of them, and those an approval may cover (every one but the
/// critical ones).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentPending {
    pub agent: String,
    /// The handle chat buttons name the agent by (a ULID: any name fits in 64 bytes).
    pub handle: String,
    pub pending: usize,
    /// Those below critical risk.
    pub approvable: usize,
    /// The highest risk among those, if any.
    pub approvable_risk: Option<RiskScore>,
}

/// Why gatebot asked a question: what its answer is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// "Why deny?": the answer is the reason of a denial.
    DenyReason,
    /// A task's clarify question: the answer classifies the task again.
    Clarify,
    /// A task's agent asks: the answer goes to the agent when it resumes.
    NeedsInput,
    /// "Why stop?": the answer is the reason a workflow check-in is stopped.
    StopReason,
    /// "Why deny these?": the answer is the one reason of a batch of denials (the
    /// question's subject is the batch's id).
    BatchDenyReason,
}

impl Purpose {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Purpose::DenyReason => "deny_reason",
            Purpose::Clarify => "task_clarify",
            Purpose::NeedsInput => "task_input",
            Purpose::StopReason => "stop_reason",
            Purpose::BatchDenyReason => "batch_deny_reason",
        }
    }

    #[must_use]
    pub fn parse(s: &str) -> Option<Purpose> {
        match s {
            "deny_reason" => Some(Purpose::DenyReason),
            "task_clarify" => Some(Purpose::Clarify),
            "task_input" => Some(Purpose::NeedsInput),
            "stop_reason" => Some(Purpose::StopReason),
            "batch_deny_reason" => Some(Purpose::BatchDenyReason),
            _ => None,
        }
    }
}

/// A question gatebot asked, read back from the message that asks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    pub subject: String,
    pub purpose: Purpose,
}

/// The revision a task's subject row carries: its status and the revision counter.
#[must_use]
pub fn task_revision(t: &crate::inbox::Task) -> String {
    format!("{}.{}", t.status, t.revision)
}

/// Which open subjects an owner lists (the web dashboard's pending page): each filter
/// absent lists all. Request-only filters (`tool`, `risk_at_least`) leave out the
/// subjects of other kinds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenFilter {
    pub kind: Option<SubjectKind>,
    pub agent: Option<String>,
    pub tool: Option<String>,
    pub risk_at_least: Option<crate::policy::RiskScore>,
    /// The page after this cursor ([`OpenPage::next`]).
    pub after: Option<String>,
    pub limit: usize,
}

/// One page of open subjects, riskiest first and newest first within a level (a
/// subject of another kind than a request ranks as a high-risk request: a waiting
/// check-in holds a whole workflow).
#[derive(Debug, Clone, Default)]
pub struct OpenPage {
    pub subjects: Vec<Subject>,
    /// How many match the filter, on every page.
    pub total: usize,
    /// The cursor of the next page, if there is one.
    pub next: Option<String>,
}
