//! What an agent should know about its own autonomy tier: a paragraph for its
//! system prompt (layer2 step 7), and the lists behind it.
//!
//! The paragraph says what runs automatically and what is queued for a human, so it
//! follows the decision order in `policy/decide.rs`: the deny list, then the tier
//! (draft_only blocks what is not read-only, supervised asks for everything), then
//! for the acting tiers critical risk, `require_approval_for`, the always-allow
//! lists, the org `tool_approval_mode` (which is why it is an input here), and last
//! the tier's own risk rule.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::policy::{AgentRules, Policy, Tier, ToolApprovalMode, ToolClass};
use crate::trust::{Grant, Scope};

/// `GET /v1/agents/{name}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentGuidance {
    pub agent: String,
    pub tier: String,
    /// The organisation's `[policy] tool_approval_mode`.
    pub tool_approval_mode: String,
    pub require_approval_for: Vec<String>,
    /// Configured plus owner-added ("Always allow") tools.
    pub always_allow: Vec<String>,
    pub deny: Vec<String>,
    pub guidance: String,
}

/// The organisation-wide rules the guidance depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrgRules {
    pub mode: ToolApprovalMode,
    /// The tools `[tools]` classes as destructive.
    pub destructive: BTreeSet<String>,
}

impl OrgRules {
    #[must_use]
    pub fn of(policy: &Policy) -> OrgRules {
        OrgRules {
            mode: policy.tool_approval_mode,
            destructive: policy.tools_of_class(ToolClass::Destructive),
        }
    }
}

/// The guidance for `agent` with `rules` under `org`; `added` are the tools owners
/// allowed with "Always allow".
#[must_use]
pub fn for_agent(
    agent: &str,
    rules: &AgentRules,
    added: &[String],
    org: &OrgRules,
) -> AgentGuidance {
    let always: BTreeSet<String> = rules
        .always_allow
        .iter()
        .cloned()
        .chain(added.iter().cloned())
        .collect();
    let list = |s: &BTreeSet<String>| s.iter().cloned().collect::<Vec<_>>();
    AgentGuidance {
        agent: agent.to_string(),
        tier: rules.tier.as_str().to_string(),
        tool_approval_mode: org.mode.as_str().to_string(),
        require_approval_for: list(&rules.require_approval_for),
        always_allow: list(&always),
        deny: list(&rules.deny),
        guidance: paragraph(rules, &always, org),
    }
}

fn names(s: &BTreeSet<String>) -> String {
    s.iter().cloned().collect::<Vec<_>>().join(", ")
}

const WAITING: &str = "If an action is queued, tell the user you are checking with the team \
    and will get back to them shortly; do not say it is done.";
const NOT_RUN: &str = "When gatebot answers that an action was rejected, blocked, expired, \
    cancelled or withdrawn, the action did not run: say so plainly, do not claim it \
    happened, and do not retry it unchanged. An expired action was not denied; nobody \
    decided in time.";
const CRITICAL: &str = "critical-risk actions (dangerous commands such as `rm -rf`, \
    `DROP TABLE` or `DELETE FROM`)";

fn paragraph(rules: &AgentRules, always: &BTreeSet<String>, org: &OrgRules) -> String {
    let mut p = match rules.tier {
        Tier::DraftOnly => "IMPORTANT: You are in draft-only mode. Only read-only actions of \
            low or medium risk run; every other action is blocked, not queued. Prepare \
            drafts and show them to the user instead of acting."
            .to_string(),
        Tier::Supervised => format!(
            "IMPORTANT: You are in supervised mode. Every tool action needs the owner's \
             approval before it runs: when you use a tool, it is queued for review. {WAITING}"
        ),
        Tier::SemiAutonomous | Tier::Autonomous => acting(rules, always, org),
    };
    if rules.tier != Tier::DraftOnly && !rules.require_approval_for.is_empty() {
        p.push_str(&format!(
            " These tools always need the owner's approval: {}.",
            names(&rules.require_approval_for)
        ));
    }
    // require_approval_for beats always_allow, so those tools are not "without asking".
    let runs: BTreeSet<String> = always
        .difference(&rules.require_approval_for)
        .cloned()
        .collect();
    if matches!(rules.tier, Tier::SemiAutonomous | Tier::Autonomous) && !runs.is_empty() {
        // Under `none` the configured list runs even at critical risk; an owner's grant
        // never covers a critical call.
        let (critical_too, not_critical): (BTreeSet<String>, BTreeSet<String>) =
            if org.mode == ToolApprovalMode::None {
                runs.into_iter()
                    .partition(|t| rules.always_allow.contains(t))
            } else {
                (BTreeSet::new(), runs)
            };
        if !critical_too.is_empty() {
            p.push_str(&format!(
                " These tools run without asking, even at critical risk: {}.",
                names(&critical_too)
            ));
        }
        if !not_critical.is_empty() {
            p.push_str(&format!(
                " These tools run without asking, unless a call is critical risk: {}.",
                names(&not_critical)
            ));
        }
    }
    if !rules.deny.is_empty() {
        p.push_str(&format!(
            " These tools are never allowed; do not try them: {}.",
            names(&rules.deny)
        ));
    }
    p.push(' ');
    p.push_str(NOT_RUN);
    p
}

/// Adds to `g` the shell commands owners' scoped grants let the agent run without
/// asking (a whole-tool grant is already in `always_allow`). Only the acting tiers act
/// on grants, and `require_approval_for` beats them.
pub fn with_scoped_grants(g: &mut AgentGuidance, rules: &AgentRules, grants: &[Grant]) {
    if !matches!(rules.tier, Tier::SemiAutonomous | Tier::Autonomous) {
        return;
    }
    let items: Vec<String> = grants
        .iter()
        .filter(|g| !rules.require_approval_for.contains(&g.tool))
        .filter_map(|g| match &g.scope {
            // A call grant lets one edited call through once: the agent's denial
            // already gave it that call.
            Scope::Tool | Scope::Call(_) => None,
            Scope::Exact(c) => Some(format!("{} exactly `{c}`", g.tool)),
            Scope::Prefix(p) => Some(format!("{} commands starting `{p}`", g.tool)),
        })
        .collect();
    if items.is_empty() {
        return;
    }
    let sentence = format!(
        " These commands run without asking, unless a call is critical risk: {}.",
        items.join("; ")
    );
    let at = g
        .guidance
        .rfind(NOT_RUN)
        .map_or(g.guidance.len(), |i| i - 1);
    g.guidance.insert_str(at, &sentence);
}

/// The opening for semi_autonomous and autonomous agents, by org mode.
fn acting(rules: &AgentRules, always: &BTreeSet<String>, org: &OrgRules) -> String {
    let tier = match rules.tier {
        Tier::SemiAutonomous => "semi-autonomous",
        _ => "autonomous",
    };
    match org.mode {
        ToolApprovalMode::All => {
            let except = if always.is_subset(&rules.require_approval_for) {
                ""
            } else {
                ", except the always-allowed tools below"
            };
            format!(
                "IMPORTANT: You are in {tier} mode, but the organisation requires a human's \
                 approval for every tool call (tool_approval_mode = all): every action you \
                 take is queued for the owner's approval{except}. {WAITING}"
            )
        }
        ToolApprovalMode::None => format!(
            "IMPORTANT: You are in {tier} mode, and the organisation does not hold tool \
             calls back (tool_approval_mode = none): your actions run automatically, without \
             review, except {CRITICAL}, which are queued for the owner's approval. {WAITING}"
        ),
        ToolApprovalMode::Dangerous => {
            // Always-allowed and require_approval_for tools are covered by their own lists.
            let destructive: BTreeSet<String> = org
                .destructive
                .iter()
                .filter(|t| !always.contains(*t) && !rules.require_approval_for.contains(*t))
                .cloned()
                .collect();
            if rules.tier == Tier::SemiAutonomous {
                let tools = if destructive.is_empty() {
                    String::new()
                } else {
                    format!(
                        ", and every call to a destructive tool ({})",
                        names(&destructive)
                    )
                };
                format!(
                    "IMPORTANT: You are in semi-autonomous mode. Only low-risk actions run \
                     automatically: in practice, read-only tools such as data queries, unless \
                     their content raises the risk. Everything else is queued for the owner's \
                     approval: anything that writes, sends or deletes, bulk operations, \
                     content about pricing or competitors, {CRITICAL}{tools}. {WAITING}"
                )
            } else {
                let tools = if destructive.is_empty() {
                    String::new()
                } else {
                    format!(" and calls to destructive tools ({})", names(&destructive))
                };
                format!(
                    "IMPORTANT: You are in autonomous mode. Your actions run automatically, \
                     without review, except {CRITICAL}{tools}, which are queued for the \
                     owner's approval. {WAITING}"
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use serde_json::json;

    use super::*;
    use crate::policy::{Action, ContentPatterns, History, Request};

    use Tier::{Autonomous, DraftOnly, SemiAutonomous, Supervised};
    use ToolApprovalMode as Mode;

    const TIERS: [Tier; 4] = [DraftOnly, Supervised, SemiAutonomous, Autonomous];
    const MODES: [Mode; 3] = [Mode::All, Mode::Dangerous, Mode::None];

    fn org(mode: Mode) -> OrgRules {
        OrgRules {
            mode,
            destructive: ["send_email".to_string()].into(),
        }
    }

    fn guidance(tier: Tier, mode: Mode) -> String {
        for_agent("a", &AgentRules::with_tier(tier), &[], &org(mode)).guidance
    }

    fn policy(mode: Mode) -> Policy {
        Policy {
            tool_classes: HashMap::from([
                ("query_org_data".to_string(), ToolClass::ReadOnly),
                ("create_contact".to_string(), ToolClass::Write),
                ("send_email".to_string(), ToolClass::Destructive),
            ]),
            tool_approval_mode: mode,
            internal_tools: BTreeSet::new(),
            patterns: ContentPatterns::defaults(),
        }
    }

    /// What `decide.rs` does with a plain read-only, write, destructive and
    /// critical call (no lists, not a first use).
    fn actions(tier: Tier, mode: Mode) -> [Action; 4] {
        let p = policy(mode);
        let rules = AgentRules::with_tier(tier);
        let calls = [
            ("query_org_data", json!({"q": "contacts"})),
            ("create_contact", json!({"name": "Ann"})),
            ("send_email", json!({"to": "ann@example.com"})),
            ("exec", json!({"command": "rm -rf /srv"})),
        ];
        calls.map(|(tool, args)| {
            let req = Request {
                tool,
                args: &args,
                confidence: None,
                environment: None,
                command: None,
            };
            p.evaluate(&rules, History::default(), &req).action
        })
    }

    /// One row: what the policy does with [read-only, write, destructive, critical]
    /// calls, and what the paragraph must and must not say about it.
    struct Case {
        tier: Tier,
        mode: Mode,
        actions: [Action; 4],
        says: &'static [&'static str],
        never: &'static [&'static str],
    }

    #[test]
    fn each_tier_and_mode_says_what_the_policy_does() {
        use Action::{Allow as Run, Ask as Queue, Block};
        let case = |tier, mode, actions, says, never| Case {
            tier,
            mode,
            actions,
            says,
            never,
        };
        const BLOCKED: &[&str] = &["blocked, not queued"];
        const EVERY: &[&str] = &["Every tool action needs the owner's approval"];
        const ALL: &[&str] = &[
            "every action you take is queued",
            "tool_approval_mode = all",
        ];
        const NONE: &[&str] = &[
            "your actions run automatically",
            "tool_approval_mode = none",
            "except critical-risk actions",
            "`rm -rf`",
        ];
        let draft = [Run, Block, Block, Block];
        let table = [
            case(DraftOnly, Mode::All, draft, BLOCKED, &["queued for"]),
            case(DraftOnly, Mode::Dangerous, draft, BLOCKED, &["queued for"]),
            case(DraftOnly, Mode::None, draft, BLOCKED, &["queued for"]),
            case(Supervised, Mode::All, [Queue; 4], EVERY, &["automatically"]),
            case(
                Supervised,
                Mode::Dangerous,
                [Queue; 4],
                EVERY,
                &["automatically"],
            ),
            case(
                Supervised,
                Mode::None,
                [Queue; 4],
                EVERY,
                &["automatically"],
            ),
            case(
                SemiAutonomous,
                Mode::All,
                [Queue; 4],
                ALL,
                &["automatically", "send_email"],
            ),
            case(
                SemiAutonomous,
                Mode::Dangerous,
                [Run, Queue, Queue, Queue],
                &[
                    "Only low-risk actions run automatically",
                    "read-only tools",
                    "anything that writes",
                    "`rm -rf`",
                    "destructive tool (send_email)",
                ],
                &["tool_approval_mode"],
            ),
            case(
                SemiAutonomous,
                Mode::None,
                [Run, Run, Run, Queue],
                NONE,
                &["send_email", "Only low-risk"],
            ),
            case(
                Autonomous,
                Mode::All,
                [Queue; 4],
                ALL,
                &["automatically", "send_email"],
            ),
            case(
                Autonomous,
                Mode::Dangerous,
                [Run, Run, Queue, Queue],
                &[
                    "Your actions run automatically",
                    "`rm -rf`",
                    "destructive tools (send_email)",
                ],
                &["tool_approval_mode"],
            ),
            case(
                Autonomous,
                Mode::None,
                [Run, Run, Run, Queue],
                NONE,
                &["send_email"],
            ),
        ];
        assert_eq!(table.len(), TIERS.len() * MODES.len());
        for c in table {
            let (tier, mode) = (c.tier, c.mode);
            assert_eq!(
                actions(tier, mode),
                c.actions,
                "the policy changed for {tier:?} × {mode:?}: update the guidance"
            );
            let g = guidance(tier, mode);
            for s in c.says {
                assert!(g.contains(s), "{tier:?} × {mode:?} lacks {s:?}: {g}");
            }
            for s in c.never {
                assert!(!g.contains(s), "{tier:?} × {mode:?} says {s:?}: {g}");
            }
        }
    }

    #[test]
    fn every_tier_and_mode_says_a_refused_action_did_not_run() {
        for tier in TIERS {
            for mode in MODES {
                let g = for_agent("a", &AgentRules::with_tier(tier), &[], &org(mode));
                assert!(g.guidance.contains("did not run"), "{tier:?} {mode:?}");
                assert_eq!(g.tier, tier.as_str());
                assert_eq!(g.tool_approval_mode, mode.as_str());
            }
        }
    }

    #[test]
    fn always_allowed_tools_run_even_at_critical_risk_only_under_none() {
        let mut rules = AgentRules::with_tier(Autonomous);
        rules.always_allow.insert("exec".into());
        let g = |mode| for_agent("a", &rules, &[], &org(mode)).guidance;
        assert!(g(Mode::None).contains("run without asking, even at critical risk: exec."));
        assert!(g(Mode::Dangerous)
            .contains("run without asking, unless a call is critical risk: exec."));
        assert!(g(Mode::All).contains("except the always-allowed tools below"));
        assert!(g(Mode::All).contains("unless a call is critical risk: exec."));
    }

    #[test]
    fn an_always_allowed_destructive_tool_is_not_listed_as_queued() {
        let mut rules = AgentRules::with_tier(Autonomous);
        rules.always_allow.insert("send_email".into());
        let g = for_agent("a", &rules, &[], &org(Mode::Dangerous)).guidance;
        assert!(!g.contains("destructive tools"), "{g}");
        assert!(g.contains("run without asking, unless a call is critical risk: send_email."));
    }

    #[test]
    fn require_approval_for_beats_the_always_allow_list() {
        let mut rules = AgentRules::with_tier(SemiAutonomous);
        rules.always_allow.insert("send_email".into());
        rules.require_approval_for.insert("send_email".into());
        let g = for_agent("a", &rules, &[], &org(Mode::All)).guidance;
        assert!(
            g.contains("always need the owner's approval: send_email."),
            "{g}"
        );
        assert!(!g.contains("run without asking"), "{g}");
        assert!(!g.contains("except the always-allowed tools"), "{g}");
    }

    #[test]
    fn owner_added_tools_join_the_configured_always_allow_list() {
        let mut rules = AgentRules::with_tier(SemiAutonomous);
        rules.always_allow.insert("b_tool".into());
        rules.require_approval_for.insert("send_bulk_email".into());
        rules.deny.insert("drop_db".into());
        let g = for_agent(
            "a",
            &rules,
            &["a_tool".into(), "b_tool".into()],
            &org(Mode::Dangerous),
        );
        assert_eq!(g.always_allow, vec!["a_tool", "b_tool"]);
        assert!(g.guidance.contains("a_tool, b_tool"));
        assert!(g
            .guidance
            .contains("always need the owner's approval: send_bulk_email"));
        assert!(g
            .guidance
            .contains("never allowed; do not try them: drop_db"));
    }

    #[test]
    fn owners_grants_never_run_at_critical_risk_and_scoped_ones_are_named() {
        let mut rules = AgentRules::with_tier(Autonomous);
        rules.always_allow.insert("exec".into());
        let g = for_agent("a", &rules, &["granted".into()], &org(Mode::None)).guidance;
        assert!(g.contains("even at critical risk: exec."), "{g}");
        assert!(
            g.contains("unless a call is critical risk: granted."),
            "{g}"
        );

        let grant = |scope| Grant {
            id: "01JD3X4Y5Z6A7B8C9D0E1F2G3H".into(),
            short_id: "g7m2abcd".into(),
            agent: "a".into(),
            tool: "Bash".into(),
            scope,
            by: crate::trust::Actor {
                name: "alice".into(),
                via: crate::approval::Via::Cli,
            },
            reason: None,
            approval: None,
            created_at: 0,
            expires_at: None,
            revoked: None,
            max_risk: crate::policy::RiskScore::High,
            uses_left: None,
        };
        let grants = [
            grant(Scope::Prefix("git status".into())),
            grant(Scope::Exact("npm test".into())),
            grant(Scope::Tool),
        ];
        let mut g = for_agent("a", &rules, &[], &org(Mode::Dangerous));
        with_scoped_grants(&mut g, &rules, &grants);
        assert!(
            g.guidance.contains(
                " These commands run without asking, unless a call is critical risk: Bash \
                 commands starting `git status`; Bash exactly `npm test`. When gatebot"
            ),
            "{}",
            g.guidance
        );
        // Supervised agents ask for everything, grants or not.
        let supervised = AgentRules::with_tier(Supervised);
        let mut g = for_agent("a", &supervised, &[], &org(Mode::Dangerous));
        let before = g.guidance.clone();
        with_scoped_grants(&mut g, &supervised, &grants);
        assert_eq!(g.guidance, before);
    }

    #[test]
    fn the_destructive_tools_come_from_the_tools_table() {
        let o = OrgRules::of(&policy(Mode::Dangerous));
        assert_eq!(o.destructive, BTreeSet::from(["send_email".to_string()]));
        assert_eq!(o.mode, Mode::Dangerous);
    }
}
