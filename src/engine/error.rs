//! What can go wrong in the engine, as facts: which thing was not found, which field
//! is wrong and how, which choice conflicts with which verb. The words people read are
//! chosen at the edges: `api::error` (status, code and message; the `gatebot` command
//! prints those messages), `chat::failure` (what a chat answers). The `Display` texts
//! here are the plain statement of each fact, for logs and for edges that add nothing.

use std::fmt;

use crate::approval::Approval;
use crate::inbox::TaskStatus;
use crate::store::StoreError;

use super::gate::Cap;

/// What kind of thing an id was meant to name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    Request,
    Task,
    Run,
    CheckIn,
    Grant,
    Proposal,
    Pause,
    /// An agent's handle on a chat button (an agent in the config is an `UnknownAgent`).
    Agent,
    /// Any subject a chat shows, of whichever kind.
    Subject,
    /// A signed-in browser of the web dashboard.
    Session,
    /// A draft-only agent's kept call.
    Draft,
    /// A person's second factor.
    Factor,
}

impl What {
    /// "request", "workflow run".
    #[must_use]
    pub fn noun(self) -> &'static str {
        match self {
            What::Request => "request",
            What::Task => "task",
            What::Run => "workflow run",
            What::CheckIn => "check-in",
            What::Grant => "grant",
            What::Proposal => "proposal",
            What::Pause => "pause",
            What::Agent => "agent",
            What::Subject => "subject",
            What::Session => "dashboard session",
            What::Draft => "draft",
            What::Factor => "second factor",
        }
    }

    /// "requests", "workflow runs".
    #[must_use]
    pub fn plural(self) -> String {
        format!("{}s", self.noun())
    }
}

/// Why a client may not act as the agent it names (its token).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenProblem {
    /// The token sent is not this agent's.
    NotTheAgents,
    /// The agent has a token and none was sent.
    Missing,
    /// The agent has no token, and the listener (TCP) requires one.
    ListenerRequiresOne,
    /// A token was sent, but the agent has none.
    NoneConfigured,
}

/// A part of an owner's grant choice (what an approval grants beyond the one call).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantRefused {
    /// A denial came with a scope or a time box.
    DenialGrantsNothing,
    /// A scope (prefix, exact) came with a plain one-time approval.
    ScopeWithoutGrant,
    /// The request's prompt offered no "Always allow" (`request` is its short id).
    NotOffered { request: String, tool: String },
    /// A shell-like tool's request without a command under `arg` to grant.
    NoCommand {
        request: String,
        tool: String,
        arg: String,
    },
    /// A prefix or exact scope for a tool that is not shell-like.
    NotShell { tool: String },
    /// The prefix cannot be granted (the trust module's reason).
    Prefix(String),
    /// The time box is out of range (how).
    For(String),
}

impl fmt::Display for GrantRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GrantRefused::DenialGrantsNothing => {
                write!(f, "a denial grants nothing: a scope or a time box goes with an approval")
            }
            GrantRefused::ScopeWithoutGrant => write!(
                f,
                "a prefix or exact scope chooses what an always-allow (or time-boxed) approval grants"
            ),
            GrantRefused::NotOffered { request, tool } => write!(
                f,
                "\"Always allow\" does not apply to request {request}: {tool} needs a human every \
                 time (a supervised agent, require_approval_for, critical risk, or a shell-like \
                 tool's call without a command); approve it once instead"
            ),
            GrantRefused::NoCommand { request, tool, arg } => write!(
                f,
                "{tool} is a shell-like tool, and request {request} has no command under `{arg}` \
                 to grant; approve it once"
            ),
            GrantRefused::NotShell { tool } => write!(
                f,
                "{tool} is not a shell-like tool (its [tools] entry names no command_arg), so a \
                 grant covers the whole tool"
            ),
            GrantRefused::Prefix(why) => write!(f, "{why}"),
            GrantRefused::For(why) => write!(f, "a time-boxed grant {why}"),
        }
    }
}

/// A step that does not apply to the thing as it is now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Conflict {
    /// The task's state refuses the step (`task` is its short id).
    #[error("task {task}: {why}")]
    Task {
        task: String,
        status: TaskStatus,
        why: String,
    },
    /// The lease a worker holds lapsed and the task was queued again.
    #[error(
        "task {task}: this lease is no longer the task's (it lapsed, and the task was queued \
         again); stop working on it"
    )]
    LeaseLost { task: String },
    /// An answer for a task that asks nothing now.
    #[error("task {task} is {status} and asks nothing now")]
    NothingAsked { task: String, status: TaskStatus },
    /// The grant was revoked already.
    #[error("grant {grant} was already revoked by {by} at {at}")]
    GrantRevoked {
        grant: String,
        by: String,
        at: String,
    },
    /// A result reported for a request that did not run.
    #[error(
        "request {request} is {status}; a result can be reported only for an allowed or \
         approved request"
    )]
    NotReportable {
        request: String,
        status: crate::approval::Status,
    },
    /// Approving a proposal for an agent no longer in the config.
    #[error(
        "{agent} is no longer in the config, so proposal {proposal} cannot change its tier; \
         decline it"
    )]
    AgentGone { agent: String, proposal: String },
    /// A draft that is no longer open (`why` says what became of it).
    #[error("draft {draft} {why}")]
    Draft { draft: String, why: String },
    /// Approving the request would overdraw a budget (`why` gives the figures); it stays
    /// pending.
    #[error("request {request} cannot be approved, and stays pending: {why}")]
    OverBudget { request: String, why: String },
    /// The web dashboard is off, so it has no links or sessions.
    #[error(
        "the web dashboard is off: set `listen` in the [dashboard] table of bot.toml and \
         restart gatebot"
    )]
    DashboardOff,
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("unknown agent `{0}`: add an [agents.{0}] table to the config")]
    UnknownAgent(String),
    /// A person's vote on a request its approval rule does not let them cast.
    #[error("{}", why.words(request))]
    VoteRefused {
        request: String,
        why: crate::approval::votes::VoteRefused,
    },
    /// Approving this request needs the person's second factor, which the surface did
    /// not confirm (chat never does: it links to the dashboard's confirm page).
    #[error("{}", step_up_words(request, *enrolled))]
    StepUpRequired { request: String, enrolled: bool },
    /// A code for a second factor was not accepted.
    #[error("{}", code_words(refused))]
    CodeRefused { refused: crate::store::CodeCheck },
    /// The person voted on this request already; their first vote stands.
    #[error("You voted on request {request} already ({}); your first vote stands.", if *approved { "approve" } else { "deny" })]
    VotedAlready { request: String, approved: bool },
    /// The client may not act as `agent`.
    #[error("{}", describe_token(agent, *problem))]
    Unauthorized {
        agent: String,
        problem: TokenProblem,
    },
    /// A field of what was sent is wrong: `problem` says how (it names the field).
    #[error("{problem}")]
    Invalid {
        field: &'static str,
        problem: String,
    },
    #[error("no {} with id `{id}`", what.noun())]
    NotFound { what: What, id: String },
    #[error("`{typed}` matches several {}: {}", what.plural(), candidates.join(", "))]
    Ambiguous {
        what: What,
        typed: String,
        candidates: Vec<String>,
    },
    #[error("request {} is already {}", .0.short_id, super::describe_settled(.0))]
    AlreadySettled(Box<Approval>),
    /// An owner's grant choice that does not go with the decision or the request.
    #[error("{0}")]
    Grant(GrantRefused),
    #[error(
        "idempotency_key `{key}` was already used by this agent for a {} with other \
         content ({} {id}): send a new key for a new {}, or the same content to repeat it",
        what.noun(), what.noun(), what.noun()
    )]
    IdempotencyConflict { key: String, what: What, id: String },
    /// The agent is over one of its limits ([`crate::limits`]).
    #[error("{0}")]
    Limited(Box<crate::limits::Limited>),
    /// The database: a storage fault (`StoreError::fault`) or a failed query.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A step the engine cannot take, from a bug or a task that died: `context` says
    /// what was being done.
    #[error("internal error: {context}")]
    Internal {
        context: &'static str,
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The step does not apply to the thing as it is now.
    #[error("{0}")]
    Conflict(Conflict),
    /// The agent is paused: it may do nothing until an owner resumes it.
    #[error("agent `{}` is {}", .0.agent, .0.describe())]
    Paused(Box<crate::trust::Pause>),
    /// The agent holds as many connections or long-polls as `[queue]` allows per agent.
    #[error(
        "agent `{agent}` already has {max} {}, the most `{}` allows; wait for one to finish \
         before starting another",
        limit.what(), limit.key()
    )]
    AtCap {
        agent: String,
        limit: Cap,
        max: usize,
    },
}

impl EngineError {
    /// `field` is wrong: `problem` says how, in words that name it.
    pub fn invalid(field: &'static str, problem: impl Into<String>) -> EngineError {
        EngineError::Invalid {
            field,
            problem: problem.into(),
        }
    }

    /// No `what` with id `id`.
    pub fn not_found(what: What, id: impl Into<String>) -> EngineError {
        EngineError::NotFound {
            what,
            id: id.into(),
        }
    }

    /// A failure inside the daemon while doing `context`, with its cause.
    pub fn internal(
        context: &'static str,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> EngineError {
        EngineError::Internal {
            context,
            source: Some(source.into()),
        }
    }

    /// Whether this says that nothing has the id (of any kind).
    #[must_use]
    pub fn is_not_found(&self) -> bool {
        matches!(self, EngineError::NotFound { .. })
    }

    /// The error and every cause under it, for the log: "a: b: c".
    #[must_use]
    pub fn chain(&self) -> String {
        let mut s = self.to_string();
        let mut cause = std::error::Error::source(self);
        while let Some(c) = cause {
            s.push_str(": ");
            s.push_str(&c.to_string());
            cause = c.source();
        }
        s
    }
}

fn describe_token(agent: &str, problem: TokenProblem) -> String {
    match problem {
        TokenProblem::NotTheAgents => format!("the bearer token is not agent `{agent}`'s token"),
        TokenProblem::Missing => {
            format!("agent `{agent}` has a token: send it as `Authorization: Bearer <token>`")
        }
        TokenProblem::ListenerRequiresOne => {
            format!("agent `{agent}` has no token configured, and the TCP listener requires one")
        }
        TokenProblem::NoneConfigured => {
            format!("a bearer token was sent, but agent `{agent}` has none configured")
        }
    }
}

/// What a person is told when approving `request` needs their second factor.
fn step_up_words(request: &str, enrolled: bool) -> String {
    if enrolled {
        format!(
            "Approving request {request} needs your second factor: enter a code from your \
             authenticator app (a deny needs none)."
        )
    } else {
        format!(
            "Approving request {request} needs a second factor, and you have none: enroll one \
             with `gatebot factor enroll` or on the dashboard's Factors page first. A deny from \
             you counts without one."
        )
    }
}

/// Why a code was refused, in words.
fn code_words(refused: &crate::store::CodeCheck) -> String {
    use crate::store::CodeCheck;
    match refused {
        CodeCheck::Wrong { left } if *left > 0 => format!(
            "That code is not right (or too old): check your authenticator app's clock. {left} \
             more wrong code{} and codes are refused for {}.",
            if *left == 1 { "" } else { "s" },
            crate::words::span(std::time::Duration::from_millis(
                crate::store::LOCKED_FOR_MS.unsigned_abs()
            ))
        ),
        CodeCheck::Wrong { .. } => format!(
            "That code is not right, and that was one wrong code too many: codes are refused \
             for {}.",
            crate::words::span(std::time::Duration::from_millis(
                crate::store::LOCKED_FOR_MS.unsigned_abs()
            ))
        ),
        CodeCheck::Reused => {
            "That code was used already: a code works once; wait for the next one.".to_string()
        }
        CodeCheck::Locked { until } => format!(
            "Too many wrong codes: codes are refused until {}.",
            crate::time::clock(*until)
        ),
        CodeCheck::NoFactor => {
            "You have no second factor: enroll one with `gatebot factor enroll` or on the \
             dashboard's Factors page."
                .to_string()
        }
        CodeCheck::Accepted { .. } => "The code was accepted.".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_names_what_was_looked_for() {
        let e = EngineError::not_found(What::Grant, "zzzz");
        assert_eq!(e.to_string(), "no grant with id `zzzz`");
        let e = EngineError::not_found(What::Request, "ab12");
        assert_eq!(e.to_string(), "no request with id `ab12`");
    }

    #[test]
    fn internal_keeps_its_cause() {
        let io = std::io::Error::other("disk on fire");
        let e = EngineError::internal("reading the store", io);
        assert_eq!(e.to_string(), "internal error: reading the store");
        assert_eq!(e.chain(), "internal error: reading the store: disk on fire");
        assert!(std::error::Error::source(&e).is_some());
    }
}
