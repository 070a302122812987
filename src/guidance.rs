//! What an agent should know about its own autonomy tier: a paragraph for its
//! system prompt (layer2 step 7), and the lists behind it.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::policy::{AgentRules, Tier};

/// `GET /v1/agents/{name}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentGuidance {
    pub agent: String,
    pub tier: String,
    pub require_approval_for: Vec<String>,
    /// Configured plus owner-added ("Always allow") tools.
    pub always_allow: Vec<String>,
    pub deny: Vec<String>,
    pub guidance: String,
}

/// The guidance for `agent` with `rules`; `added` are the tools owners allowed with
/// "Always allow".
#[must_use]
pub fn for_agent(agent: &str, rules: &AgentRules, added: &[String]) -> AgentGuidance {
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
        require_approval_for: list(&rules.require_approval_for),
        always_allow: list(&always),
        deny: list(&rules.deny),
        guidance: paragraph(rules, &always),
    }
}

fn names(s: &BTreeSet<String>) -> String {
    s.iter().cloned().collect::<Vec<_>>().join(", ")
}

fn paragraph(rules: &AgentRules, always: &BTreeSet<String>) -> String {
    const WAITING: &str = "If an action is queued, tell the user you are checking with the \
        team and will get back to them shortly; do not say it is done.";
    const NOT_RUN: &str = "When gatebot answers that an action was rejected, blocked, expired, \
        cancelled or withdrawn, the action did not run: say so plainly, do not claim it \
        happened, and do not retry it unchanged. An expired action was not denied; nobody \
        decided in time.";
    let mut p = match rules.tier {
        Tier::DraftOnly => "IMPORTANT: You are in draft-only mode. Only read-only actions of \
            low or medium risk run; every other action is blocked, not queued. Prepare \
            drafts and show them to the user instead of acting."
            .to_string(),
        Tier::Supervised => format!(
            "IMPORTANT: You are in supervised mode. Every tool action needs the owner's \
             approval before it runs: when you use a tool, it is queued for review. {WAITING}"
        ),
        Tier::SemiAutonomous => format!(
            "IMPORTANT: You are in semi-autonomous mode. Low-risk actions (data queries, \
             creating records) run automatically. Higher-risk actions (sending messages, bulk \
             operations, anything involving pricing or competitors, destructive commands) are \
             queued for the owner's approval. {WAITING}"
        ),
        Tier::Autonomous => format!(
            "IMPORTANT: You are in autonomous mode. Your actions run without review, except \
             tools the owner flagged and dangerous commands (such as deleting data), which \
             are queued for the owner's approval. {WAITING}"
        ),
    };
    if rules.tier != Tier::DraftOnly && !rules.require_approval_for.is_empty() {
        p.push_str(&format!(
            " These tools always need approval: {}.",
            names(&rules.require_approval_for)
        ));
    }
    if matches!(rules.tier, Tier::SemiAutonomous | Tier::Autonomous) && !always.is_empty() {
        p.push_str(&format!(
            " These tools run without asking unless a command is dangerous: {}.",
            names(always)
        ));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tier_says_a_refused_action_did_not_run() {
        for tier in [
            Tier::DraftOnly,
            Tier::Supervised,
            Tier::SemiAutonomous,
            Tier::Autonomous,
        ] {
            let g = for_agent("a", &AgentRules::with_tier(tier), &[]);
            assert!(g.guidance.contains("did not run"), "{tier:?}");
            assert_eq!(g.tier, tier.as_str());
        }
    }

    #[test]
    fn the_tiers_describe_what_waits_for_a_human() {
        let g = |t| for_agent("a", &AgentRules::with_tier(t), &[]).guidance;
        assert!(g(Tier::Supervised).contains("Every tool action needs the owner's approval"));
        assert!(g(Tier::SemiAutonomous).contains("Low-risk actions"));
        assert!(g(Tier::DraftOnly).contains("blocked, not queued"));
        assert!(g(Tier::Autonomous).contains("checking with the team"));
    }

    #[test]
    fn owner_added_tools_join_the_configured_always_allow_list() {
        let mut rules = AgentRules::with_tier(Tier::SemiAutonomous);
        rules.always_allow.insert("b_tool".into());
        rules.require_approval_for.insert("send_bulk_email".into());
        rules.deny.insert("drop_db".into());
        let g = for_agent("a", &rules, &["a_tool".into(), "b_tool".into()]);
        assert_eq!(g.always_allow, vec!["a_tool", "b_tool"]);
        assert!(g.guidance.contains("a_tool, b_tool"));
        assert!(g.guidance.contains("always need approval: send_bulk_email"));
        assert!(g
            .guidance
            .contains("never allowed; do not try them: drop_db"));
    }
}
