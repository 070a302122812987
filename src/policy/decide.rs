//! The decision: from a scored request and the agent's rules to allow, ask or block.
//!
//! [`decide`] is pure. `always-allowed` below means the tool is in the agent's configured
//! `always_allow`, or an owner's grant covers the call (a human pressed "Always allow"
//! earlier; the engine matches the grant's scope, see `trust::grants`).
//!
//! # Precedence
//! The first rule that applies decides:
//! 1. **deny**: the tool is in the agent's `deny` list → block, in every tier.
//! 2. **draft_only**: a read-only tool at low or medium risk → allow; anything else → block.
//! 3. **supervised** → ask, whatever the lists, the org mode or the risk.
//! 4. **critical risk** → ask, whatever the lists, *except* when `tool_approval_mode` is
//!    `none`, the tool is in the configured `always_allow` and it is not in
//!    `require_approval_for`: then allow (the reason says so). Under `all` or
//!    `dangerous`, always_allow never lets a critical call run unasked, and an owner's
//!    grant never covers a critical call in any mode.
//! 5. **require_approval_for**: the tool is in it → ask (beats always_allow).
//! 6. **always_allow**: the tool is always-allowed → allow.
//! 7. **tool_approval_mode** `all` → ask; `none` → allow. Under `none` the tier rule below
//!    never applies: a semi_autonomous agent's medium and high risk calls run too, and only
//!    deny, critical risk, require_approval_for and the confidence gate hold a call back.
//! 8. **tool_approval_mode** `dangerous` and a destructive tool → ask.
//! 9. **tier**: semi_autonomous allows low risk and asks at medium and high; autonomous
//!    allows.
//!
//! # Confidence gate
//! Then, when the agent sent a confidence and the action is not already block, the
//! agent's thresholds (`proceed_freely` ≥ `proceed_cautiously` ≥ `ask_human`) apply:
//! - not a number, or outside 0.0–1.0 → block;
//! - below `ask_human` → block;
//! - below `proceed_cautiously` → an allow becomes ask (an ask stays ask);
//! - below `proceed_freely` → an allow carries `checkpoint: true`;
//! - otherwise no change.
//!
//! The gate only ever makes a verdict stricter: a tier caps what a confidence can
//! unlock, so high confidence never turns an ask into an allow.
//!
//! # Afterwards
//! - An allowed call to a tool in `checkpoint_before` carries `checkpoint: true`.
//! - `always_allow_offered` is true when the action is ask, the agent is not
//!   `supervised` (which asks for everything, whatever its lists say), the tool is not in
//!   `require_approval_for` and the risk is not critical: only then can "Always allow"
//!   change how the next call is decided.

use std::fmt::Write as _;

use super::{
    Action, AgentRules, ConfidenceThresholds, History, Request, Risk, RiskScore, Tier,
    ToolApprovalMode, ToolClass, Verdict,
};

/// How a verdict's reason names an owner's grant as what let the call run.
pub const GRANT_SOURCE: &str = "by an owner's grant";

/// Decides one scored request (see the module docs for the order of the rules).
#[must_use]
pub(crate) fn decide(
    mode: ToolApprovalMode,
    agent: &AgentRules,
    history: History,
    request: &Request<'_>,
    risk: Risk,
) -> Verdict {
    let tool = request.tool;
    let (mut action, mut reason) = rule(mode, agent, history, tool, &risk);
    let mut checkpoint = false;

    if action != Action::Block {
        if let Some(confidence) = request.confidence {
            let gate = confidence_gate(confidence, &agent.confidence, action);
            action = gate.action;
            checkpoint = gate.checkpoint;
            match gate.note {
                Note::Replace(text) => reason = text,
                Note::Append(text) => reason.push_str(&text),
                Note::None => {}
            }
        }
    }

    if action == Action::Allow && agent.checkpoint_before.contains(tool) {
        checkpoint = true;
        let _ = write!(
            reason,
            "; checkpoint first: {tool} is one of the agent's tools to checkpoint before \
             (checkpoint_before)"
        );
    }

    let always_allow_offered = action == Action::Ask
        && agent.tier != Tier::Supervised
        && !agent.require_approval_for.contains(tool)
        && risk.score != RiskScore::Critical;

    let draft = action == Action::Block
        && agent.tier == Tier::DraftOnly
        && risk.tool_class != ToolClass::ReadOnly
        && !agent.deny.contains(tool);
    Verdict {
        action,
        risk,
        reason,
        checkpoint,
        always_allow_offered,
        draft,
    }
}

/// Rules 1–9: the action before the confidence gate, with its reason.
fn rule(
    mode: ToolApprovalMode,
    agent: &AgentRules,
    history: History,
    tool: &str,
    risk: &Risk,
) -> (Action, String) {
    if agent.deny.contains(tool) {
        return (
            Action::Block,
            format!("{tool} is on the agent's deny list, so it is blocked whatever the risk"),
        );
    }

    match agent.tier {
        Tier::DraftOnly => draft_only(risk),
        Tier::Supervised => (
            Action::Ask,
            "a supervised agent: every call needs a human".to_string(),
        ),
        Tier::SemiAutonomous | Tier::Autonomous => acting(mode, agent, history, tool, risk),
    }
}

fn draft_only(risk: &Risk) -> (Action, String) {
    let said = risk.tool_class.words();
    let score = risk.score.as_str();
    if risk.tool_class != ToolClass::ReadOnly {
        (
            Action::Block,
            format!("a draft-only agent may only run read-only tools; this is a {said}, so it is blocked"),
        )
    } else if risk.score <= RiskScore::Medium {
        (
            Action::Allow,
            format!(
                "a draft-only agent may run read-only tools up to medium risk; this is {score} \
                 risk, so it runs"
            ),
        )
    } else {
        (
            Action::Block,
            format!(
                "a draft-only agent may run read-only tools only up to medium risk; this is \
                 {score} risk, so it is blocked"
            ),
        )
    }
}

/// Rules 4–9, for the tiers that can act on their own.
fn acting(
    mode: ToolApprovalMode,
    agent: &AgentRules,
    history: History,
    tool: &str,
    risk: &Risk,
) -> (Action, String) {
    let allowance = Allowance::of(agent, history, tool);
    let requires_approval = agent.require_approval_for.contains(tool);

    if risk.score == RiskScore::Critical {
        return critical(mode, tool, &allowance, requires_approval);
    }

    let source = allowance.source;
    if requires_approval {
        return (
            Action::Ask,
            format!(
                "{tool} always needs a human for this agent (it is in its require_approval_for)"
            ),
        );
    }
    if allowance.always_allowed {
        return (
            Action::Allow,
            format!("{tool} is always-allowed {source}, so it runs without a human"),
        );
    }

    if let Some(decided) = by_mode(mode, risk) {
        return decided;
    }

    let score = risk.score.as_str();
    if agent.tier == Tier::SemiAutonomous && risk.score != RiskScore::Low {
        (
            Action::Ask,
            format!(
                "a semi-autonomous agent asks a human from medium risk up; this is {score} risk"
            ),
        )
    } else {
        (
            Action::Allow,
            format!(
                "{} agent runs {score}-risk calls without a human",
                match agent.tier {
                    Tier::Autonomous => "an autonomous",
                    _ => "a semi-autonomous",
                }
            ),
        )
    }
}

/// Whether a tool is always-allowed, and what makes it so: the agent's config or an owner's grant.
struct Allowance {
    /// The tool is in the agent's configured `always_allow`.
    in_config: bool,
    /// The config or an owner's grant always-allows the tool.
    always_allowed: bool,
    /// How a reason names what always-allows the tool.
    source: &'static str,
}

impl Allowance {
    fn of(agent: &AgentRules, history: History, tool: &str) -> Self {
        let in_config = agent.always_allow.contains(tool);
        Self {
            in_config,
            always_allowed: in_config || history.always_allowed,
            source: if in_config {
                "in the agent's config"
            } else {
                GRANT_SOURCE
            },
        }
    }
}

/// Rule 4: a critical call asks, unless tool_approval_mode is none and the config (not a
/// grant) always-allows a tool that is not in require_approval_for.
fn critical(
    mode: ToolApprovalMode,
    tool: &str,
    allowance: &Allowance,
    requires_approval: bool,
) -> (Action, String) {
    let source = allowance.source;
    if mode == ToolApprovalMode::None && allowance.in_config && !requires_approval {
        return (
            Action::Allow,
            format!(
                "critical risk, run without a human only because {tool} is always-allowed \
                 {source} and the organisation lets always-allowed tools run unasked \
                 (tool_approval_mode = \"none\")"
            ),
        );
    }
    let mut reason = "critical risk always needs a human".to_string();
    if allowance.always_allowed && requires_approval {
        let _ = write!(
            reason,
            "; {tool} is always-allowed {source}, but it is also in the agent's \
             require_approval_for, which wins"
        );
    } else if allowance.in_config {
        let _ = write!(
            reason,
            "; {tool} is always-allowed {source}, but that covers critical calls only \
             when the organisation lets always-allowed tools run unasked \
             (tool_approval_mode = \"none\")"
        );
    } else if allowance.always_allowed {
        let _ = write!(
            reason,
            "; {tool} is always-allowed {source}, but a grant never covers a critical call"
        );
    }
    (Action::Ask, reason)
}

/// Rules 7–8: what tool_approval_mode decides on its own, if anything (`dangerous` decides
/// only for a destructive tool).
fn by_mode(mode: ToolApprovalMode, risk: &Risk) -> Option<(Action, String)> {
    match mode {
        ToolApprovalMode::All => Some((
            Action::Ask,
            "the organisation asks a human for every call (tool_approval_mode = \"all\")"
                .to_string(),
        )),
        ToolApprovalMode::None => Some((
            Action::Allow,
            format!(
                "the organisation lets calls up to high risk run without a human \
                 (tool_approval_mode = \"none\"); this is {} risk",
                risk.score.as_str()
            ),
        )),
        ToolApprovalMode::Dangerous if risk.tool_class == ToolClass::Destructive => Some((
            Action::Ask,
            "the organisation asks a human for every destructive tool \
             (tool_approval_mode = \"dangerous\")"
                .to_string(),
        )),
        ToolApprovalMode::Dangerous => None,
    }
}

/// What the confidence gate does to the reason.
enum Note {
    None,
    Append(String),
    Replace(String),
}

struct Gate {
    action: Action,
    checkpoint: bool,
    note: Note,
}

fn confidence_gate(c: f64, t: &ConfidenceThresholds, action: Action) -> Gate {
    let shown = number(c);
    if !(0.0..=1.0).contains(&c) {
        return Gate {
            action: Action::Block,
            checkpoint: false,
            note: Note::Replace(format!(
                "the agent's confidence {shown} is not a number from 0 to 1, so the call is \
                 blocked"
            )),
        };
    }
    if c < t.ask_human {
        return Gate {
            action: Action::Block,
            checkpoint: false,
            note: Note::Replace(format!(
                "the agent's confidence {shown} is below {}, the least it may act on \
                 (ask_human), so the call is blocked",
                number(t.ask_human)
            )),
        };
    }
    if c < t.proceed_cautiously {
        let cautiously = number(t.proceed_cautiously);
        let note = if action == Action::Allow {
            format!(
                ", but the agent's confidence {shown} is below {cautiously}, under which it \
                 asks (proceed_cautiously), so it needs a human"
            )
        } else {
            format!(
                "; the agent's confidence {shown} is also below {cautiously}, under which it \
                 asks (proceed_cautiously)"
            )
        };
        return Gate {
            action: Action::Ask,
            checkpoint: false,
            note: Note::Append(note),
        };
    }
    if c < t.proceed_freely && action == Action::Allow {
        return Gate {
            action,
            checkpoint: true,
            note: Note::Append(format!(
                ", with a checkpoint first: the agent's confidence {shown} is below {}, under \
                 which it checkpoints (proceed_freely)",
                number(t.proceed_freely)
            )),
        };
    }
    Gate {
        action,
        checkpoint: false,
        note: Note::None,
    }
}

/// Two decimals when that is exact (`0.50`), the shortest exact form otherwise (`0.499`).
fn number(x: f64) -> String {
    let short = format!("{x:.2}");
    if short.parse::<f64>() == Ok(x) {
        short
    } else {
        format!("{x}")
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, HashMap};
    use std::sync::OnceLock;

    use serde_json::{json, Value};

    use super::super::{ConfidencePreset, ContentPatterns, Policy};
    use super::*;

    use Action::{Allow, Ask, Block};
    use RiskScore::{Critical, High, Low, Medium};
    use Tier::{Autonomous, DraftOnly, SemiAutonomous, Supervised};
    use ToolApprovalMode as Mode;
    use ToolClass::{Destructive, ReadOnly, Write};

    const TOOL: &str = "the_tool";

    /// Compiled once: compiling per case makes the tables slow in debug builds.
    static PATTERNS: OnceLock<ContentPatterns> = OnceLock::new();

    fn set(items: &[&str]) -> BTreeSet<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    fn scored(score: RiskScore, class: ToolClass) -> Risk {
        Risk {
            score,
            tool_class: class,
            factors: Vec::new(),
        }
    }

    fn verdict_for(
        mode: Mode,
        agent: &AgentRules,
        history: History,
        confidence: Option<f64>,
        risk: Risk,
    ) -> Verdict {
        let args = Value::Null;
        let request = Request {
            tool: TOOL,
            args: &args,
            confidence,
            environment: None,
            command: None,
        };
        decide(mode, agent, history, &request, risk)
    }

    fn action(mode: Mode, agent: &AgentRules, score: RiskScore, class: ToolClass) -> Action {
        verdict_for(mode, agent, History::default(), None, scored(score, class)).action
    }

    /// A policy with the layer1 seed's classes, for end-to-end checks.
    fn policy(mode: Mode) -> Policy {
        let tool_classes: HashMap<String, ToolClass> = [
            ("query_org_data", ReadOnly),
            ("create_contact", Write),
            ("send_email", Destructive),
            ("exec", Write),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        Policy {
            tool_classes,
            tool_approval_mode: mode,
            internal_tools: set(&["note_to_self"]),
            patterns: PATTERNS.get_or_init(ContentPatterns::defaults).clone(),
        }
    }

    fn evaluate(
        mode: Mode,
        agent: &AgentRules,
        history: History,
        tool: &str,
        args: &Value,
    ) -> Verdict {
        policy(mode).evaluate(
            agent,
            history,
            &Request {
                tool,
                args,
                confidence: None,
                environment: None,
                command: None,
            },
        )
    }

    #[test]
    fn each_tier_meets_each_risk_level_as_the_layer2_matrix_says() {
        // Org mode `dangerous` with write tools, so only the tier rule speaks.
        let cases = [
            (DraftOnly, Write, [Block, Block, Block, Block]),
            (DraftOnly, Destructive, [Block, Block, Block, Block]),
            (DraftOnly, ReadOnly, [Allow, Allow, Block, Block]),
            (Supervised, Write, [Ask, Ask, Ask, Ask]),
            (Supervised, ReadOnly, [Ask, Ask, Ask, Ask]),
            (SemiAutonomous, Write, [Allow, Ask, Ask, Ask]),
            (SemiAutonomous, ReadOnly, [Allow, Ask, Ask, Ask]),
            (Autonomous, Write, [Allow, Allow, Allow, Ask]),
            (Autonomous, ReadOnly, [Allow, Allow, Allow, Ask]),
        ];
        for (tier, class, want) in cases {
            let agent = AgentRules::with_tier(tier);
            for (score, want) in [Low, Medium, High, Critical].into_iter().zip(want) {
                let v = verdict_for(
                    Mode::Dangerous,
                    &agent,
                    History::default(),
                    None,
                    scored(score, class),
                );
                assert_eq!(v.action, want, "{tier:?} {class:?} {score:?}: {}", v.reason);
                // The rule that decided, in words: the tier's, or the organisation's.
                assert!(
                    v.reason.contains(tier.words())
                        || v.reason.contains("organisation")
                        || v.reason.contains("critical risk"),
                    "{}",
                    v.reason
                );
                assert!(
                    !v.reason.contains(tier.as_str()) || !tier.as_str().contains('_'),
                    "{}",
                    v.reason
                );
            }
        }
    }

    #[test]
    fn the_layer2_checklist_holds_end_to_end() {
        let semi = AgentRules::with_tier(SemiAutonomous);
        let plain = json!({ "subject": "Hello", "body": "See you on Thursday." });
        let priced = json!({ "subject": "Hello", "body": "Our price is $49." });
        let cases = [
            ("query_org_data", &plain, Allow, Low, vec![]),
            ("create_contact", &plain, Ask, Medium, vec![]),
            (
                "create_contact",
                &priced,
                Ask,
                High,
                vec!["pricing_content"],
            ),
            ("send_email", &plain, Ask, High, vec![]),
            ("send_email", &priced, Ask, High, vec!["pricing_content"]),
        ];
        for (tool, args, want, score, factors) in cases {
            let v = evaluate(Mode::Dangerous, &semi, History::default(), tool, args);
            assert_eq!(
                (v.action, v.risk.score),
                (want, score),
                "{tool} {args}: {}",
                v.reason
            );
            assert_eq!(v.risk.factors, factors, "{tool}");
        }
        // Destructive asks in semi_autonomous whatever lowers its count, in every org mode
        // that leaves the tier to decide.
        let lowered = json!({ "body": "A short tutorial." });
        for mode in [Mode::Dangerous, Mode::All] {
            let v = policy(mode).evaluate(
                &semi,
                History::default(),
                &Request {
                    tool: "send_email",
                    args: &lowered,
                    confidence: Some(1.0),
                    environment: Some("sandbox"),
                    command: None,
                },
            );
            assert_eq!(v.action, Ask, "{mode:?}: {}", v.reason);
        }
    }

    #[test]
    fn the_verdict_carries_the_score_and_factors() {
        let semi = AgentRules::with_tier(SemiAutonomous);
        let args =
            json!({ "body": "Refund? See https://x.test", "to": ["a", "b", "c", "d", "e", "f"] });
        let v = evaluate(
            Mode::Dangerous,
            &semi,
            History::default(),
            "create_contact",
            &args,
        );
        assert_eq!(v.risk.score, High);
        assert_eq!(v.risk.tool_class, Write);
        assert_eq!(
            v.risk.factors,
            vec!["negative_context", "external_url", "bulk_operation"]
        );
        // The risk is the verdict's own; the reason says the rule.
        assert_eq!(
            v.reason,
            "a semi-autonomous agent asks a human from medium risk up; this is high risk"
        );
    }

    #[test]
    fn the_layer1_checklist_holds() {
        let supervised = AgentRules {
            always_allow: set(&[TOOL]),
            ..AgentRules::with_tier(Supervised)
        };
        let listed = AgentRules {
            require_approval_for: set(&[TOOL]),
            ..AgentRules::with_tier(Autonomous)
        };
        let allowed = AgentRules {
            always_allow: set(&[TOOL]),
            ..AgentRules::with_tier(Autonomous)
        };
        let both = AgentRules {
            always_allow: set(&[TOOL]),
            require_approval_for: set(&[TOOL]),
            ..AgentRules::with_tier(Autonomous)
        };
        let autonomous = AgentRules::with_tier(Autonomous);
        let semi = AgentRules::with_tier(SemiAutonomous);
        let cases: &[(&str, Mode, &AgentRules, RiskScore, ToolClass, Action)] = &[
            (
                "supervised queues read-only",
                Mode::None,
                &supervised,
                Low,
                ReadOnly,
                Ask,
            ),
            (
                "supervised queues always-allowed",
                Mode::None,
                &supervised,
                Medium,
                Write,
                Ask,
            ),
            (
                "autonomous queues require_approval_for",
                Mode::None,
                &listed,
                Low,
                ReadOnly,
                Ask,
            ),
            (
                "autonomous runs other tools",
                Mode::None,
                &autonomous,
                High,
                Destructive,
                Allow,
            ),
            (
                "always_allow skips in dangerous mode",
                Mode::Dangerous,
                &allowed,
                High,
                Destructive,
                Allow,
            ),
            (
                "always_allow skips in all mode",
                Mode::All,
                &allowed,
                Medium,
                Write,
                Allow,
            ),
            (
                "require_approval_for beats always_allow",
                Mode::None,
                &both,
                Low,
                ReadOnly,
                Ask,
            ),
            (
                "mode all queues autonomous",
                Mode::All,
                &autonomous,
                Low,
                ReadOnly,
                Ask,
            ),
            (
                "mode all queues semi low",
                Mode::All,
                &semi,
                Low,
                ReadOnly,
                Ask,
            ),
            (
                "mode dangerous queues destructive",
                Mode::Dangerous,
                &autonomous,
                High,
                Destructive,
                Ask,
            ),
            (
                "mode dangerous runs write",
                Mode::Dangerous,
                &autonomous,
                High,
                Write,
                Allow,
            ),
            (
                "mode dangerous runs read-only",
                Mode::Dangerous,
                &autonomous,
                Low,
                ReadOnly,
                Allow,
            ),
            (
                "mode none runs semi medium",
                Mode::None,
                &semi,
                Medium,
                Write,
                Allow,
            ),
            (
                "mode none runs semi destructive",
                Mode::None,
                &semi,
                High,
                Destructive,
                Allow,
            ),
        ];
        for (name, mode, agent, score, class, want) in cases {
            let v = verdict_for(
                *mode,
                agent,
                History::default(),
                None,
                scored(*score, *class),
            );
            assert_eq!(v.action, *want, "{name}: {}", v.reason);
        }
    }

    #[test]
    fn a_persisted_always_allow_skips_the_next_call() {
        let semi = AgentRules::with_tier(SemiAutonomous);
        let risk = || scored(Medium, Write);
        let before = verdict_for(Mode::Dangerous, &semi, History::default(), None, risk());
        assert_eq!(before.action, Ask);
        assert!(before.always_allow_offered);
        let history = History {
            always_allowed: true,
            first_use: false,
        };
        let after = verdict_for(Mode::Dangerous, &semi, history, None, risk());
        assert_eq!(after.action, Allow, "{}", after.reason);
        assert!(
            after.reason.contains("always-allowed by an owner's grant"),
            "{}",
            after.reason
        );
        // From the config, the reason says so instead.
        let configured = AgentRules {
            always_allow: set(&[TOOL]),
            ..semi
        };
        let v = verdict_for(
            Mode::Dangerous,
            &configured,
            History::default(),
            None,
            risk(),
        );
        assert_eq!(v.action, Allow);
        assert!(v.reason.contains("in the agent's config"), "{}", v.reason);
    }

    #[test]
    fn the_deny_list_blocks_in_every_tier_and_beats_every_list() {
        for tier in [DraftOnly, Supervised, SemiAutonomous, Autonomous] {
            let agent = AgentRules {
                deny: set(&[TOOL]),
                always_allow: set(&[TOOL]),
                require_approval_for: set(&[TOOL]),
                ..AgentRules::with_tier(tier)
            };
            let history = History {
                always_allowed: true,
                first_use: false,
            };
            // A confidence cannot change a block, nor its reason.
            for confidence in [None, Some(1.0), Some(0.0), Some(f64::NAN)] {
                let v = verdict_for(
                    Mode::None,
                    &agent,
                    history,
                    confidence,
                    scored(Low, ReadOnly),
                );
                assert_eq!(v.action, Block, "{tier:?}");
                assert!(
                    v.reason.contains("the_tool is on the agent's deny list"),
                    "{confidence:?}: {}",
                    v.reason
                );
                assert!(!v.always_allow_offered);
                assert!(!v.checkpoint);
            }
        }
    }

    #[test]
    fn draft_only_explains_why_it_blocks() {
        let agent = AgentRules::with_tier(DraftOnly);
        let v = verdict_for(
            Mode::None,
            &agent,
            History::default(),
            None,
            scored(Medium, Write),
        );
        assert!(
            v.reason.contains("may only run read-only tools"),
            "{}",
            v.reason
        );
        let v = verdict_for(
            Mode::None,
            &agent,
            History::default(),
            None,
            scored(High, ReadOnly),
        );
        assert!(v.reason.contains("only up to medium risk"), "{}", v.reason);
        // Always-allow does not widen draft_only.
        let listed = AgentRules {
            always_allow: set(&[TOOL]),
            ..agent
        };
        assert_eq!(action(Mode::None, &listed, Low, Write), Block);
    }

    #[test]
    fn critical_risk_asks_unless_mode_none_and_always_allowed() {
        let allowed = AgentRules {
            always_allow: set(&[TOOL]),
            ..AgentRules::with_tier(Autonomous)
        };
        let both = AgentRules {
            require_approval_for: set(&[TOOL]),
            ..allowed.clone()
        };
        let plain = AgentRules::with_tier(Autonomous);
        let semi_allowed = AgentRules {
            always_allow: set(&[TOOL]),
            ..AgentRules::with_tier(SemiAutonomous)
        };
        let persisted = History {
            always_allowed: true,
            first_use: false,
        };
        let cases: &[(&str, Mode, &AgentRules, History, Action)] = &[
            (
                "none + always_allow",
                Mode::None,
                &allowed,
                History::default(),
                Allow,
            ),
            // An owner's grant never covers a critical call, whatever the mode.
            ("none + granted", Mode::None, &plain, persisted, Ask),
            (
                "none + semi always_allow",
                Mode::None,
                &semi_allowed,
                History::default(),
                Allow,
            ),
            (
                "dangerous + always_allow",
                Mode::Dangerous,
                &allowed,
                History::default(),
                Ask,
            ),
            (
                "all + always_allow",
                Mode::All,
                &allowed,
                History::default(),
                Ask,
            ),
            (
                "none without always_allow",
                Mode::None,
                &plain,
                History::default(),
                Ask,
            ),
            (
                "none + always_allow + require",
                Mode::None,
                &both,
                History::default(),
                Ask,
            ),
        ];
        for (name, mode, agent, history, want) in cases {
            let v = verdict_for(*mode, agent, *history, None, scored(Critical, Write));
            assert_eq!(v.action, *want, "{name}: {}", v.reason);
            assert!(v.reason.contains("critical risk"), "{name}: {}", v.reason);
            assert!(!v.always_allow_offered, "{name}");
        }
        let v = verdict_for(
            Mode::None,
            &allowed,
            History::default(),
            None,
            scored(Critical, Write),
        );
        assert!(
            v.reason.contains("only because")
                && v.reason.contains("(tool_approval_mode = \"none\")")
                && v.reason.contains("always-allowed"),
            "{}",
            v.reason
        );
        let v = verdict_for(
            Mode::Dangerous,
            &allowed,
            History::default(),
            None,
            scored(Critical, Write),
        );
        assert!(
            v.reason
                .contains("only when the organisation lets always-allowed tools run unasked"),
            "{}",
            v.reason
        );
    }

    #[test]
    fn always_allow_is_offered_only_where_it_can_apply() {
        let listed = AgentRules {
            require_approval_for: set(&[TOOL]),
            ..AgentRules::with_tier(SemiAutonomous)
        };
        let semi = AgentRules::with_tier(SemiAutonomous);
        let supervised = AgentRules::with_tier(Supervised);
        let cases: &[(&str, &AgentRules, RiskScore, bool)] = &[
            ("a plain ask", &semi, High, true),
            ("a supervised agent", &supervised, Low, false),
            ("require_approval_for", &listed, Medium, false),
            ("critical", &semi, Critical, false),
            ("an allow", &semi, Low, false),
        ];
        for (name, agent, score, offered) in cases {
            let v = verdict_for(
                Mode::Dangerous,
                agent,
                History::default(),
                None,
                scored(*score, Write),
            );
            assert_eq!(v.always_allow_offered, *offered, "{name}: {}", v.reason);
        }
    }

    #[test]
    fn each_presets_thresholds_apply_at_their_boundaries() {
        const BELOW: f64 = 1e-9;
        for preset in [
            ConfidencePreset::Minimal,
            ConfidencePreset::Standard,
            ConfidencePreset::Full,
        ] {
            let t = preset.thresholds();
            let agent = AgentRules {
                confidence: t,
                ..AgentRules::with_tier(Autonomous)
            };
            let cases = [
                (1.0, Allow, false),
                (t.proceed_freely, Allow, false),
                (t.proceed_freely - BELOW, Allow, true),
                (t.proceed_cautiously, Allow, true),
                (t.proceed_cautiously - BELOW, Ask, false),
                (t.ask_human, Ask, false),
                (t.ask_human - BELOW, Block, false),
                (0.0, Block, false),
            ];
            for (c, want, checkpoint) in cases {
                let v = verdict_for(
                    Mode::None,
                    &agent,
                    History::default(),
                    Some(c),
                    scored(Low, ReadOnly),
                );
                assert_eq!(
                    (v.action, v.checkpoint),
                    (want, checkpoint),
                    "{preset:?} {c}: {}",
                    v.reason
                );
                if want != Allow || checkpoint {
                    assert!(v.reason.contains("confidence"), "{}", v.reason);
                }
            }
        }
    }

    #[test]
    fn a_confidence_below_ask_human_blocks_with_the_numbers() {
        let agent = AgentRules::with_tier(SemiAutonomous);
        let v = verdict_for(
            Mode::None,
            &agent,
            History::default(),
            Some(0.4),
            scored(Low, ReadOnly),
        );
        assert_eq!(v.action, Block);
        assert!(
            v.reason
                .contains("confidence 0.40 is below 0.50, the least it may act on (ask_human)"),
            "{}",
            v.reason
        );
        let v = verdict_for(
            Mode::None,
            &agent,
            History::default(),
            Some(0.499),
            scored(Low, ReadOnly),
        );
        assert!(
            v.reason
                .contains("confidence 0.499 is below 0.50, the least it may act on"),
            "{}",
            v.reason
        );
    }

    #[test]
    fn confidence_never_loosens_an_ask() {
        let semi = AgentRules::with_tier(SemiAutonomous);
        let supervised = AgentRules::with_tier(Supervised);
        let listed = AgentRules {
            require_approval_for: set(&[TOOL]),
            ..AgentRules::with_tier(Autonomous)
        };
        let autonomous = AgentRules::with_tier(Autonomous);
        let cases: &[(&str, &AgentRules, Mode, RiskScore)] = &[
            ("semi medium", &semi, Mode::Dangerous, Medium),
            ("supervised low", &supervised, Mode::None, Low),
            ("require_approval_for", &listed, Mode::None, Low),
            ("mode all", &autonomous, Mode::All, Low),
            ("critical", &autonomous, Mode::None, Critical),
        ];
        for (name, agent, mode, score) in cases {
            for c in [1.0, 0.95, 0.8, 0.6] {
                let v = verdict_for(
                    *mode,
                    agent,
                    History::default(),
                    Some(c),
                    scored(*score, Write),
                );
                assert_eq!(v.action, Ask, "{name} at {c}: {}", v.reason);
                assert!(!v.checkpoint, "{name} at {c}");
            }
        }
    }

    #[test]
    fn a_confidence_in_the_ask_band_turns_an_allow_into_an_ask() {
        let agent = AgentRules::with_tier(Autonomous);
        let v = verdict_for(
            Mode::Dangerous,
            &agent,
            History::default(),
            Some(0.6),
            scored(Medium, Write),
        );
        assert_eq!(v.action, Ask);
        assert!(
            v.reason.contains(
                "confidence 0.60 is below 0.70, under which it asks (proceed_cautiously)"
            ),
            "{}",
            v.reason
        );
        assert!(v.always_allow_offered);
    }

    #[test]
    fn an_invalid_confidence_blocks_and_names_the_value() {
        let agent = AgentRules::with_tier(Autonomous);
        let cases = [
            (f64::NAN, "NaN"),
            (-0.1, "-0.10"),
            (1.5, "1.50"),
            (f64::INFINITY, "inf"),
        ];
        for (c, shown) in cases {
            let v = verdict_for(
                Mode::None,
                &agent,
                History::default(),
                Some(c),
                scored(Low, ReadOnly),
            );
            assert_eq!(v.action, Block, "{c}");
            assert!(
                v.reason.contains(&format!("confidence {shown} ")),
                "{}",
                v.reason
            );
        }
    }

    #[test]
    fn an_allowed_call_to_a_checkpoint_before_tool_carries_a_checkpoint() {
        let agent = AgentRules {
            checkpoint_before: set(&[TOOL]),
            ..AgentRules::with_tier(SemiAutonomous)
        };
        let v = verdict_for(
            Mode::Dangerous,
            &agent,
            History::default(),
            None,
            scored(Low, Write),
        );
        assert_eq!((v.action, v.checkpoint), (Allow, true));
        assert!(v.reason.contains("checkpoint_before"), "{}", v.reason);
        // An ask does not: the human decides first.
        let v = verdict_for(
            Mode::Dangerous,
            &agent,
            History::default(),
            None,
            scored(High, Write),
        );
        assert_eq!((v.action, v.checkpoint), (Ask, false));
        // Without the list, nothing.
        let plain = AgentRules::with_tier(SemiAutonomous);
        let v = verdict_for(
            Mode::Dangerous,
            &plain,
            History::default(),
            None,
            scored(Low, Write),
        );
        assert_eq!((v.action, v.checkpoint), (Allow, false));
    }

    #[test]
    fn every_reason_is_one_readable_sentence_naming_the_rule_and_risk() {
        let cases = [
            (Mode::Dangerous, SemiAutonomous, High, Destructive, "the organisation asks a human for every destructive tool (tool_approval_mode = \"dangerous\")"),
            (Mode::Dangerous, SemiAutonomous, Low, ReadOnly, "a semi-autonomous agent runs low-risk calls without a human"),
            (Mode::Dangerous, Autonomous, High, Write, "an autonomous agent runs high-risk calls without a human"),
            (Mode::All, Autonomous, Low, ReadOnly, "the organisation asks a human for every call (tool_approval_mode = \"all\")"),
            (Mode::None, SemiAutonomous, High, Write, "the organisation lets calls up to high risk run without a human (tool_approval_mode = \"none\"); this is high risk"),
            (Mode::None, Supervised, Low, ReadOnly, "a supervised agent: every call needs a human"),
            (Mode::None, Autonomous, Critical, Write, "critical risk always needs a human"),
        ];
        for (mode, tier, score, class, want) in cases {
            let v = verdict_for(
                mode,
                &AgentRules::with_tier(tier),
                History::default(),
                None,
                scored(score, class),
            );
            assert_eq!(v.reason, want);
            assert!(!v.reason.contains('\n'));
        }
    }

    /// README, "How a verdict is reached", step 2, cell by cell: every tier × org mode ×
    /// list membership × tool class, over the four risk levels. The expected actions are
    /// written out from README's rules (not computed from them), so any change of
    /// behaviour has to change this table, and README with it.
    #[test]
    fn every_cell_of_the_decision_matrix_is_as_readme_says() {
        use Action::{Allow as A, Ask as Q, Block as B};
        use Tier::{
            Autonomous as Auto, DraftOnly as Draft, SemiAutonomous as Semi, Supervised as Sup,
        };
        use ToolApprovalMode::{All, Dangerous as Dang, None as NoMode};
        use ToolClass::{Destructive as De, ReadOnly as Ro, Write as Wr};

        /// Which of the agent's lists holds the tool.
        #[derive(Debug, Clone, Copy)]
        enum List {
            Plain,
            Req,
            Alw,
            Deny,
        }
        use List::{Alw, Deny, Plain, Req};

        #[rustfmt::skip]
        let table: [(Tier, Mode, List, ToolClass, [Action; 4]); 144] = [
            //  tier   mode    list   class  [low, medium, high, critical]
            (Draft, All, Plain, Ro, [A, A, B, B]),
            (Draft, All, Plain, Wr, [B, B, B, B]),
            (Draft, All, Plain, De, [B, B, B, B]),
            (Draft, All, Req, Ro, [A, A, B, B]),
            (Draft, All, Req, Wr, [B, B, B, B]),
            (Draft, All, Req, De, [B, B, B, B]),
            (Draft, All, Alw, Ro, [A, A, B, B]),
            (Draft, All, Alw, Wr, [B, B, B, B]),
            (Draft, All, Alw, De, [B, B, B, B]),
            (Draft, All, Deny, Ro, [B, B, B, B]),
            (Draft, All, Deny, Wr, [B, B, B, B]),
            (Draft, All, Deny, De, [B, B, B, B]),
            (Draft, Dang, Plain, Ro, [A, A, B, B]),
            (Draft, Dang, Plain, Wr, [B, B, B, B]),
            (Draft, Dang, Plain, De, [B, B, B, B]),
            (Draft, Dang, Req, Ro, [A, A, B, B]),
            (Draft, Dang, Req, Wr, [B, B, B, B]),
            (Draft, Dang, Req, De, [B, B, B, B]),
            (Draft, Dang, Alw, Ro, [A, A, B, B]),
            (Draft, Dang, Alw, Wr, [B, B, B, B]),
            (Draft, Dang, Alw, De, [B, B, B, B]),
            (Draft, Dang, Deny, Ro, [B, B, B, B]),
            (Draft, Dang, Deny, Wr, [B, B, B, B]),
            (Draft, Dang, Deny, De, [B, B, B, B]),
            (Draft, NoMode, Plain, Ro, [A, A, B, B]),
            (Draft, NoMode, Plain, Wr, [B, B, B, B]),
            (Draft, NoMode, Plain, De, [B, B, B, B]),
            (Draft, NoMode, Req, Ro, [A, A, B, B]),
            (Draft, NoMode, Req, Wr, [B, B, B, B]),
            (Draft, NoMode, Req, De, [B, B, B, B]),
            (Draft, NoMode, Alw, Ro, [A, A, B, B]),
            (Draft, NoMode, Alw, Wr, [B, B, B, B]),
            (Draft, NoMode, Alw, De, [B, B, B, B]),
            (Draft, NoMode, Deny, Ro, [B, B, B, B]),
            (Draft, NoMode, Deny, Wr, [B, B, B, B]),
            (Draft, NoMode, Deny, De, [B, B, B, B]),
            (Sup, All, Plain, Ro, [Q, Q, Q, Q]),
            (Sup, All, Plain, Wr, [Q, Q, Q, Q]),
            (Sup, All, Plain, De, [Q, Q, Q, Q]),
            (Sup, All, Req, Ro, [Q, Q, Q, Q]),
            (Sup, All, Req, Wr, [Q, Q, Q, Q]),
            (Sup, All, Req, De, [Q, Q, Q, Q]),
            (Sup, All, Alw, Ro, [Q, Q, Q, Q]),
            (Sup, All, Alw, Wr, [Q, Q, Q, Q]),
            (Sup, All, Alw, De, [Q, Q, Q, Q]),
            (Sup, All, Deny, Ro, [B, B, B, B]),
            (Sup, All, Deny, Wr, [B, B, B, B]),
            (Sup, All, Deny, De, [B, B, B, B]),
            (Sup, Dang, Plain, Ro, [Q, Q, Q, Q]),
            (Sup, Dang, Plain, Wr, [Q, Q, Q, Q]),
            (Sup, Dang, Plain, De, [Q, Q, Q, Q]),
            (Sup, Dang, Req, Ro, [Q, Q, Q, Q]),
            (Sup, Dang, Req, Wr, [Q, Q, Q, Q]),
            (Sup, Dang, Req, De, [Q, Q, Q, Q]),
            (Sup, Dang, Alw, Ro, [Q, Q, Q, Q]),
            (Sup, Dang, Alw, Wr, [Q, Q, Q, Q]),
            (Sup, Dang, Alw, De, [Q, Q, Q, Q]),
            (Sup, Dang, Deny, Ro, [B, B, B, B]),
            (Sup, Dang, Deny, Wr, [B, B, B, B]),
            (Sup, Dang, Deny, De, [B, B, B, B]),
            (Sup, NoMode, Plain, Ro, [Q, Q, Q, Q]),
            (Sup, NoMode, Plain, Wr, [Q, Q, Q, Q]),
            (Sup, NoMode, Plain, De, [Q, Q, Q, Q]),
            (Sup, NoMode, Req, Ro, [Q, Q, Q, Q]),
            (Sup, NoMode, Req, Wr, [Q, Q, Q, Q]),
            (Sup, NoMode, Req, De, [Q, Q, Q, Q]),
            (Sup, NoMode, Alw, Ro, [Q, Q, Q, Q]),
            (Sup, NoMode, Alw, Wr, [Q, Q, Q, Q]),
            (Sup, NoMode, Alw, De, [Q, Q, Q, Q]),
            (Sup, NoMode, Deny, Ro, [B, B, B, B]),
            (Sup, NoMode, Deny, Wr, [B, B, B, B]),
            (Sup, NoMode, Deny, De, [B, B, B, B]),
            (Semi, All, Plain, Ro, [Q, Q, Q, Q]),
            (Semi, All, Plain, Wr, [Q, Q, Q, Q]),
            (Semi, All, Plain, De, [Q, Q, Q, Q]),
            (Semi, All, Req, Ro, [Q, Q, Q, Q]),
            (Semi, All, Req, Wr, [Q, Q, Q, Q]),
            (Semi, All, Req, De, [Q, Q, Q, Q]),
            (Semi, All, Alw, Ro, [A, A, A, Q]),
            (Semi, All, Alw, Wr, [A, A, A, Q]),
            (Semi, All, Alw, De, [A, A, A, Q]),
            (Semi, All, Deny, Ro, [B, B, B, B]),
            (Semi, All, Deny, Wr, [B, B, B, B]),
            (Semi, All, Deny, De, [B, B, B, B]),
            (Semi, Dang, Plain, Ro, [A, Q, Q, Q]),
            (Semi, Dang, Plain, Wr, [A, Q, Q, Q]),
            (Semi, Dang, Plain, De, [Q, Q, Q, Q]),
            (Semi, Dang, Req, Ro, [Q, Q, Q, Q]),
            (Semi, Dang, Req, Wr, [Q, Q, Q, Q]),
            (Semi, Dang, Req, De, [Q, Q, Q, Q]),
            (Semi, Dang, Alw, Ro, [A, A, A, Q]),
            (Semi, Dang, Alw, Wr, [A, A, A, Q]),
            (Semi, Dang, Alw, De, [A, A, A, Q]),
            (Semi, Dang, Deny, Ro, [B, B, B, B]),
            (Semi, Dang, Deny, Wr, [B, B, B, B]),
            (Semi, Dang, Deny, De, [B, B, B, B]),
            (Semi, NoMode, Plain, Ro, [A, A, A, Q]),
            (Semi, NoMode, Plain, Wr, [A, A, A, Q]),
            (Semi, NoMode, Plain, De, [A, A, A, Q]),
            (Semi, NoMode, Req, Ro, [Q, Q, Q, Q]),
            (Semi, NoMode, Req, Wr, [Q, Q, Q, Q]),
            (Semi, NoMode, Req, De, [Q, Q, Q, Q]),
            (Semi, NoMode, Alw, Ro, [A, A, A, A]),
            (Semi, NoMode, Alw, Wr, [A, A, A, A]),
            (Semi, NoMode, Alw, De, [A, A, A, A]),
            (Semi, NoMode, Deny, Ro, [B, B, B, B]),
            (Semi, NoMode, Deny, Wr, [B, B, B, B]),
            (Semi, NoMode, Deny, De, [B, B, B, B]),
            (Auto, All, Plain, Ro, [Q, Q, Q, Q]),
            (Auto, All, Plain, Wr, [Q, Q, Q, Q]),
            (Auto, All, Plain, De, [Q, Q, Q, Q]),
            (Auto, All, Req, Ro, [Q, Q, Q, Q]),
            (Auto, All, Req, Wr, [Q, Q, Q, Q]),
            (Auto, All, Req, De, [Q, Q, Q, Q]),
            (Auto, All, Alw, Ro, [A, A, A, Q]),
            (Auto, All, Alw, Wr, [A, A, A, Q]),
            (Auto, All, Alw, De, [A, A, A, Q]),
            (Auto, All, Deny, Ro, [B, B, B, B]),
            (Auto, All, Deny, Wr, [B, B, B, B]),
            (Auto, All, Deny, De, [B, B, B, B]),
            (Auto, Dang, Plain, Ro, [A, A, A, Q]),
            (Auto, Dang, Plain, Wr, [A, A, A, Q]),
            (Auto, Dang, Plain, De, [Q, Q, Q, Q]),
            (Auto, Dang, Req, Ro, [Q, Q, Q, Q]),
            (Auto, Dang, Req, Wr, [Q, Q, Q, Q]),
            (Auto, Dang, Req, De, [Q, Q, Q, Q]),
            (Auto, Dang, Alw, Ro, [A, A, A, Q]),
            (Auto, Dang, Alw, Wr, [A, A, A, Q]),
            (Auto, Dang, Alw, De, [A, A, A, Q]),
            (Auto, Dang, Deny, Ro, [B, B, B, B]),
            (Auto, Dang, Deny, Wr, [B, B, B, B]),
            (Auto, Dang, Deny, De, [B, B, B, B]),
            (Auto, NoMode, Plain, Ro, [A, A, A, Q]),
            (Auto, NoMode, Plain, Wr, [A, A, A, Q]),
            (Auto, NoMode, Plain, De, [A, A, A, Q]),
            (Auto, NoMode, Req, Ro, [Q, Q, Q, Q]),
            (Auto, NoMode, Req, Wr, [Q, Q, Q, Q]),
            (Auto, NoMode, Req, De, [Q, Q, Q, Q]),
            (Auto, NoMode, Alw, Ro, [A, A, A, A]),
            (Auto, NoMode, Alw, Wr, [A, A, A, A]),
            (Auto, NoMode, Alw, De, [A, A, A, A]),
            (Auto, NoMode, Deny, Ro, [B, B, B, B]),
            (Auto, NoMode, Deny, Wr, [B, B, B, B]),
            (Auto, NoMode, Deny, De, [B, B, B, B]),
        ];
        for (tier, mode, list, class, want) in table {
            let mut agent = AgentRules::with_tier(tier);
            let slot = match list {
                Plain => None,
                Req => Some(&mut agent.require_approval_for),
                Alw => Some(&mut agent.always_allow),
                Deny => Some(&mut agent.deny),
            };
            if let Some(slot) = slot {
                slot.insert(TOOL.to_owned());
            }
            for (score, want) in [Low, Medium, High, Critical].into_iter().zip(want) {
                let v = verdict_for(mode, &agent, History::default(), None, scored(score, class));
                assert_eq!(
                    v.action, want,
                    "{tier:?} / {mode:?} / {list:?} / {class:?} / {score:?}: {}",
                    v.reason
                );
                // Tiers in words; a setting only in parentheses, naming what to change.
                assert!(
                    !v.reason.contains("semi_autonomous") && !v.reason.contains("draft_only"),
                    "{}",
                    v.reason
                );
            }
        }
    }

    #[test]
    fn numbers_show_two_decimals_unless_that_would_round() {
        assert_eq!(number(0.5), "0.50");
        assert_eq!(number(0.95), "0.95");
        assert_eq!(number(0.499), "0.499");
        assert_eq!(number(1.0), "1.00");
    }
}
