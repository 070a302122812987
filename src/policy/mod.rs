//! Risk scoring and the approval decision: pure, synchronous, no I/O.
//!
//! `Policy::evaluate` turns one tool-call request plus the facts the engine knows
//! (the agent's rules, whether an owner's grant covers the call,
//! whether any earlier call of the tool by the agent was let through) into a [`Verdict`].
//!
//! # How a verdict is reached
//! 1. **Risk** (`risk.rs`): the tool class from `[tools]` (unknown = write) gives the
//!    base level, content factors found in the arguments raise it, educational
//!    content and internal tools lower the count (layer2 §2.2). Dangerous shell
//!    commands lift it to high or critical; the environment moves it one level.
//! 2. **Decision** (`decide.rs`): deny list, tier, critical rule, require_approval_for,
//!    always_allow, org `tool_approval_mode`, tier matrix, in that order, and then
//!    the confidence gate, which may only make a verdict stricter.

mod decide;
mod risk;
pub mod shell;

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

pub use decide::GRANT_SOURCE;
pub use risk::{ContentPatterns, PatternError, PatternOverrides, RiskInput};

/// An agent's autonomy tier (layer2 §2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Only read-only tools run; everything else is blocked.
    DraftOnly,
    /// Every call waits for a human.
    Supervised,
    /// Low risk runs; medium and above wait for a human.
    SemiAutonomous,
    /// Runs, except what the lists, the org mode or critical risk hold back.
    Autonomous,
}

impl Tier {
    /// As people say it: "draft-only", "supervised", "semi-autonomous", "autonomous".
    #[must_use]
    pub fn words(self) -> &'static str {
        match self {
            Tier::DraftOnly => "draft-only",
            Tier::Supervised => "supervised",
            Tier::SemiAutonomous => "semi-autonomous",
            Tier::Autonomous => "autonomous",
        }
    }

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::DraftOnly => "draft_only",
            Tier::Supervised => "supervised",
            Tier::SemiAutonomous => "semi_autonomous",
            Tier::Autonomous => "autonomous",
        }
    }
}

/// Static class of a tool (layer1 step 2). Unknown tools are `Write`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolClass {
    ReadOnly,
    Write,
    Destructive,
}

impl ToolClass {
    /// As people say it: "read-only tool", "write tool", "destructive tool".
    #[must_use]
    pub fn words(self) -> &'static str {
        match self {
            ToolClass::ReadOnly => "read-only tool",
            ToolClass::Write => "write tool",
            ToolClass::Destructive => "destructive tool",
        }
    }

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ToolClass::ReadOnly => "read-only",
            ToolClass::Write => "write",
            ToolClass::Destructive => "destructive",
        }
    }
}

/// The organisation-wide `[policy] tool_approval_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolApprovalMode {
    /// Every call a tier would run asks a human instead.
    All,
    /// Destructive tools ask a human.
    Dangerous,
    /// Whatever the earlier rules (deny list, draft_only, supervised, critical risk,
    /// require_approval_for) do not hold back runs without asking (layer2 seed).
    None,
}

impl ToolApprovalMode {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            ToolApprovalMode::All => "all",
            ToolApprovalMode::Dangerous => "dangerous",
            ToolApprovalMode::None => "none",
        }
    }
}

/// Risk level, ordered from least to most risky.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RiskScore {
    Low,
    Medium,
    High,
    Critical,
}

impl RiskScore {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            RiskScore::Low => "low",
            RiskScore::Medium => "medium",
            RiskScore::High => "high",
            RiskScore::Critical => "critical",
        }
    }

    /// One level up; critical stays critical.
    #[must_use]
    pub fn raised(self) -> Self {
        match self {
            RiskScore::Low => RiskScore::Medium,
            RiskScore::Medium => RiskScore::High,
            RiskScore::High | RiskScore::Critical => RiskScore::Critical,
        }
    }

    /// One level down; low stays low.
    #[must_use]
    pub fn lowered(self) -> Self {
        match self {
            RiskScore::Low | RiskScore::Medium => RiskScore::Low,
            RiskScore::High => RiskScore::Medium,
            RiskScore::Critical => RiskScore::High,
        }
    }
}

/// What happens to the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Runs at once; recorded as `allowed`.
    Allow,
    /// Waits for a human; recorded as `pending`.
    Ask,
    /// Refused outright; recorded as `blocked`.
    Block,
}

/// The scored risk of one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Risk {
    pub score: RiskScore,
    pub tool_class: ToolClass,
    /// Factor names, in a stable order (see `risk.rs` for the list).
    pub factors: Vec<String>,
}

/// The outcome of [`Policy::evaluate`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub action: Action,
    pub risk: Risk,
    /// One human-readable sentence: why this action.
    pub reason: String,
    /// The agent should checkpoint before running (confidence gate / checkpoint_before).
    pub checkpoint: bool,
    /// Whether "Always allow" can apply to this request if a human is asked
    /// (false when the tool is in require_approval_for or the risk is critical).
    pub always_allow_offered: bool,
    /// Blocked as a draft-only agent's write or destructive call: kept as a draft for
    /// its owner to hand on or discard (the dashboard's drafts).
    pub draft: bool,
}

/// Confidence thresholds (confidence seed). Below `ask_human` the request is blocked.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ConfidenceThresholds {
    pub proceed_freely: f64,
    pub proceed_cautiously: f64,
    pub ask_human: f64,
}

/// The named presets of the confidence seed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfidencePreset {
    Minimal,
    Standard,
    Full,
}

impl ConfidencePreset {
    #[must_use]
    pub fn thresholds(self) -> ConfidenceThresholds {
        match self {
            ConfidencePreset::Minimal => ConfidenceThresholds {
                proceed_freely: 0.99,
                proceed_cautiously: 0.95,
                ask_human: 0.8,
            },
            ConfidencePreset::Standard => ConfidenceThresholds {
                proceed_freely: 0.9,
                proceed_cautiously: 0.7,
                ask_human: 0.5,
            },
            ConfidencePreset::Full => ConfidenceThresholds {
                proceed_freely: 0.7,
                proceed_cautiously: 0.5,
                ask_human: 0.3,
            },
        }
    }
}

/// One agent's rules, as configured (`[agents.NAME]`).
#[derive(Debug, Clone, PartialEq)]
pub struct AgentRules {
    pub tier: Tier,
    /// Always ask for these tools (beats always_allow).
    pub require_approval_for: BTreeSet<String>,
    /// Configured always-allow tools (the engine adds owners' grants as a fact).
    pub always_allow: BTreeSet<String>,
    /// Never run these tools: blocked in every tier.
    pub deny: BTreeSet<String>,
    pub confidence: ConfidenceThresholds,
    /// Allowed calls to these tools carry `checkpoint: true`.
    pub checkpoint_before: BTreeSet<String>,
    /// A shell-like tool's call whose whole command only reads (`shell::Command::read`) is
    /// scored as a read-only call (`[agents.NAME] read_only_commands`, on by default).
    pub read_only_commands: bool,
}

impl AgentRules {
    /// Rules for an agent with only a tier set.
    #[must_use]
    pub fn with_tier(tier: Tier) -> Self {
        AgentRules {
            tier,
            require_approval_for: BTreeSet::new(),
            always_allow: BTreeSet::new(),
            deny: BTreeSet::new(),
            confidence: ConfidencePreset::Standard.thresholds(),
            checkpoint_before: BTreeSet::new(),
            read_only_commands: true,
        }
    }
}

/// Facts about one request that come from outside the request itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct History {
    /// An owner's grant covers this call ("Always allow" earlier, in a scope that
    /// matches; see `trust::grants`). A grant never lets a critical call run.
    pub always_allowed: bool,
    /// No earlier call of this tool by this agent was allowed or approved (statuses
    /// allowed, approved, executing, succeeded, failed); pending, rejected, expired,
    /// cancelled and blocked calls do not count. See `Store::submit_facts`.
    pub first_use: bool,
}

/// One request as the policy sees it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub tool: &'a str,
    pub args: &'a serde_json::Value,
    /// The agent's own confidence, 0.0–1.0.
    pub confidence: Option<f64>,
    /// `production` raises risk one level, `sandbox` lowers it (case-insensitive).
    pub environment: Option<&'a str>,
    /// A shell-like tool's command (`[tools]` names its `command_arg`), read once.
    pub command: Option<&'a shell::Command<'a>>,
}

/// The org-wide policy: tool classes, org mode and compiled content patterns.
#[derive(Debug, Clone)]
pub struct Policy {
    pub tool_classes: std::collections::HashMap<String, ToolClass>,
    pub tool_approval_mode: ToolApprovalMode,
    /// Tools with no external side effects (lower the factor count by one).
    pub internal_tools: BTreeSet<String>,
    pub patterns: ContentPatterns,
}

impl Policy {
    /// The class of a tool; tools not in `[tools]` are `write`.
    #[must_use]
    pub fn tool_class(&self, tool: &str) -> ToolClass {
        self.tool_classes
            .get(tool)
            .copied()
            .unwrap_or(ToolClass::Write)
    }

    /// The tools `[tools]` puts in `class`.
    #[must_use]
    pub fn tools_of_class(&self, class: ToolClass) -> BTreeSet<String> {
        self.tool_classes
            .iter()
            .filter(|(_, c)| **c == class)
            .map(|(t, _)| t.clone())
            .collect()
    }

    /// Score and decide one request. Pure: same inputs, same verdict.
    #[must_use]
    pub fn evaluate(&self, agent: &AgentRules, history: History, request: &Request<'_>) -> Verdict {
        let risk = self.risk(agent, history.first_use, request);
        self.decide(agent, history, request, risk)
    }

    /// Scores one request (step 1 of [`Policy::evaluate`]). A shell-like tool's call
    /// whose whole command only reads is scored as a read-only call, with the factor
    /// `read_only_command`, unless the agent's `read_only_commands` is off.
    #[must_use]
    pub fn risk(&self, agent: &AgentRules, first_use: bool, request: &Request<'_>) -> Risk {
        let read_only_command =
            agent.read_only_commands && request.command.is_some_and(|c| c.read_only.is_some());
        risk::assess(
            &self.patterns,
            &RiskInput {
                tool_class: if read_only_command {
                    ToolClass::ReadOnly
                } else {
                    self.tool_class(request.tool)
                },
                read_only_command,
                internal_tool: self.internal_tools.contains(request.tool),
                args: request.args,
                environment: request.environment,
                first_use,
            },
        )
    }

    /// Decides a scored request (step 2 of [`Policy::evaluate`]): the engine scores
    /// first, so that only grants whose risk covers the call's count as `history`.
    #[must_use]
    pub fn decide(
        &self,
        agent: &AgentRules,
        history: History,
        request: &Request<'_>,
        risk: Risk,
    ) -> Verdict {
        decide::decide(self.tool_approval_mode, agent, history, request, risk)
    }
}
