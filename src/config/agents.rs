//! `[agents.NAME]`: each agent's rules and token.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::PathBuf;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::inbox::InboxConfig;
use super::limits::FileLimits;
use super::workflow::FileWorkflow;
use super::{AgentConfig, ConfigError};
use crate::inbox::Intent;
use crate::names::valid_agent_name;
use crate::policy::{AgentRules, ConfidencePreset, Tier};
use crate::settings::{keep, Resolve};

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileAgent {
    /// Required: its absence is an error of step 2, so a table with a bad tier is
    /// still an agent the rest of the file can name.
    pub(super) tier: Option<Tier>,
    #[serde(default)]
    pub(super) require_approval_for: BTreeSet<String>,
    #[serde(default)]
    pub(super) always_allow: BTreeSet<String>,
    #[serde(default)]
    pub(super) deny: BTreeSet<String>,
    #[serde(default)]
    pub(super) checkpoint_before: BTreeSet<String>,
    #[serde(default = "yes")]
    pub(super) read_only_commands: bool,
    #[serde(default)]
    pub(super) confidence: Option<FileConfidence>,
    pub(super) token: Option<String>,
    pub(super) token_env: Option<String>,
    pub(super) token_file: Option<PathBuf>,
    #[serde(default)]
    pub(super) workflow: Option<FileWorkflow>,
    #[serde(default)]
    pub(super) limits: Option<FileLimits>,
}

/// `confidence = "standard"` or `confidence = { preset = "full", ask_human = 0.4 }`.
#[derive(Debug)]
pub(super) enum FileConfidence {
    Preset(ConfidencePreset),
    Custom(FileThresholds),
}

/// By hand rather than `untagged`, whose error names no form and no mistake: a
/// preset's name or the table's own key is what is wrong.
impl<'de> Deserialize<'de> for FileConfidence {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Confidence;

        impl<'de> Visitor<'de> for Confidence {
            type Value = FileConfidence;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a preset (\"minimal\", \"standard\" or \"full\") or a table like \
                     { preset = \"full\", ask_human = 0.4 }",
                )
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<FileConfidence, E> {
                ConfidencePreset::deserialize(de::value::StrDeserializer::<E>::new(s))
                    .map(FileConfidence::Preset)
            }

            fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<FileConfidence, M::Error> {
                FileThresholds::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(FileConfidence::Custom)
            }
        }

        d.deserialize_any(Confidence)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileThresholds {
    pub(super) preset: Option<ConfidencePreset>,
    pub(super) proceed_freely: Option<f64>,
    pub(super) proceed_cautiously: Option<f64>,
    pub(super) ask_human: Option<f64>,
}

/// Warnings for agents anyone on the machine could act as: an agent without a token
/// is whoever reaches the agents' socket and names it. That matters most where the
/// inbox routes the owner's tasks to it (their words are readable, and the tasks can
/// be claimed or completed by any process), and where the TCP listener is on (the
/// agent cannot use it, and still answers to anyone on the socket).
pub(super) fn token_warnings(
    agents: &BTreeMap<String, AgentConfig>,
    inbox: Option<&InboxConfig>,
    listen: Option<&str>,
) -> Vec<String> {
    let routed: std::collections::BTreeSet<&str> = inbox
        .map(|i| Intent::ALL.iter().filter_map(|n| i.agent_for(*n)).collect())
        .unwrap_or_default();
    let mut out = Vec::new();
    for name in &routed {
        if !agents.contains_key(*name) {
            out.push(format!(
                "the inbox routes tasks to `{name}`, which has no [agents.{name}] table and so \
                 no token: any process that can reach the agents' socket can read those tasks \
                 and claim or complete them. Add [agents.{name}] with a token (`token_env = \
                 \"NAME\"`, `token_file` or `token`) and give the same token to its worker \
                 (GATEBOT_TOKEN)."
            ));
        }
    }
    for (name, _) in agents.iter().filter(|(_, a)| a.token.is_none()) {
        let why = match (routed.contains(name.as_str()), listen) {
            (true, Some(l)) => format!(
                "the inbox routes tasks to it and the TCP listener is on ({l}): any process \
                 that can reach the agents' socket can act as it, read its tasks and claim or \
                 complete them, and it cannot use the TCP listener"
            ),
            (true, None) => "the inbox routes tasks to it: any process that can reach the \
                 agents' socket can act as it, read its tasks and claim or complete them"
                .to_string(),
            (false, Some(l)) => format!(
                "the TCP listener is on ({l}): it cannot use the listener, and any process \
                 that can reach the agents' socket can act as it"
            ),
            (false, None) => continue,
        };
        out.push(format!(
            "agent `{name}` has no token, and {why}. Give it one in [agents.{name}] \
             (`token_env = \"NAME\"`, `token_file` or `token`) and the same token to \
             whatever acts as it (GATEBOT_TOKEN)."
        ));
    }
    out
}

impl Resolve<'_> {
    /// Every `[agents.NAME]`. An agent with errors (recorded) is still there, with
    /// what of it could be read, so that what names it (an inbox route) is not an
    /// error too; a config with errors is not used.
    pub(super) fn agents(
        &self,
        agents: BTreeMap<String, FileAgent>,
        errors: &mut Vec<ConfigError>,
    ) -> BTreeMap<String, AgentConfig> {
        // Each token seen so far, and whose it is: no two agents may share one.
        let mut tokens = HashMap::new();
        agents
            .into_iter()
            .map(|(name, agent)| {
                let agent = self.agent(&name, agent, &mut tokens, errors);
                (name, agent)
            })
            .collect()
    }

    fn agent(
        &self,
        name: &str,
        agent: FileAgent,
        tokens: &mut HashMap<String, String>,
        errors: &mut Vec<ConfigError>,
    ) -> AgentConfig {
        let table = format!("agents.{name}");
        let tier = agent.tier.unwrap_or_else(|| {
            errors.push(self.error(
                &table,
                "tier",
                "is missing: every agent needs one: `tier = \"supervised\"` (or \
                 \"draft_only\", \"semi_autonomous\", \"autonomous\")",
            ));
            Tier::Supervised
        });
        if !valid_agent_name(name) {
            errors.push(self.error(
                &table,
                "",
                "agent names may use only letters, digits, '-', '_' and '.' (at most 64)",
            ));
        }
        let token = keep(
            errors,
            self.secret(
                &table,
                "token",
                agent.token,
                agent.token_env,
                agent.token_file,
            ),
        );
        if let Some(Some(t)) = &token {
            if let Some(other) = tokens.insert(t.expose().to_string(), name.to_string()) {
                errors.push(self.error(
                    &table,
                    "token",
                    format!("agents `{other}` and `{name}` share a token; each agent needs its own so one cannot act as the other"),
                ));
            }
        }
        if let Some(tool) = agent.always_allow.intersection(&agent.deny).next() {
            errors.push(self.error(
                &table,
                "deny",
                format!("`{tool}` is in both always_allow and deny"),
            ));
        }
        let confidence = keep(errors, self.confidence(&table, agent.confidence));
        AgentConfig {
            rules: AgentRules {
                tier,
                require_approval_for: agent.require_approval_for,
                always_allow: agent.always_allow,
                deny: agent.deny,
                confidence: confidence.unwrap_or_else(|| ConfidencePreset::Standard.thresholds()),
                checkpoint_before: agent.checkpoint_before,
                read_only_commands: agent.read_only_commands,
            },
            token: token.flatten(),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::parse_in_etc as parse;

    #[test]
    fn shared_tokens_are_an_error() {
        let e = parse(
            "[agents.a]\ntier = \"supervised\"\ntoken = \"same\"\n[agents.b]\ntier = \"supervised\"\ntoken = \"same\"\n",
        )
        .unwrap_err();
        assert!(e.message.contains("share a token"), "{e}");
        assert!(
            !e.to_string().contains("same\""),
            "the token must not be echoed"
        );
    }

    /// Issue 18: the inbox recipe's agent had no token, so any process that could reach
    /// the agents' socket read its tasks and claimed or completed them.
    #[test]
    fn an_agent_without_a_token_is_warned_about_where_it_matters() {
        let inbox = "[inbox]\n[inbox.routes]\ndefault = \"worker\"\nresearch = \"scout\"\n";
        // The inbox routes to two agents: the one without a token is named.
        let c = parse(&format!(
            "[agents.worker]\ntier = \"supervised\"\n[agents.scout]\ntier = \"supervised\"\n\
             token = \"scout-token\"\n[agents.idle]\ntier = \"supervised\"\n{inbox}"
        ))
        .unwrap();
        assert_eq!(
            c.warnings,
            [
                "agent `worker` has no token, and the inbox routes tasks to it: any process that \
                 can reach the agents' socket can act as it, read its tasks and claim or \
                 complete them. Give it one in [agents.worker] (`token_env = \"NAME\"`, \
                 `token_file` or `token`) and the same token to whatever acts as it \
                 (GATEBOT_TOKEN)."
            ]
        );
        // The TCP listener on: every agent without a token.
        let c = parse(&format!(
            "[queue]\nlisten = \"127.0.0.1:8474\"\n[agents.worker]\ntier = \"supervised\"\n\
             [agents.scout]\ntier = \"supervised\"\ntoken = \"scout-token\"\n\
             [agents.idle]\ntier = \"supervised\"\n{inbox}"
        ))
        .unwrap();
        assert_eq!(
            c.warnings,
            [
                "agent `idle` has no token, and the TCP listener is on (127.0.0.1:8474): it \
                 cannot use the listener, and any process that can reach the agents' socket \
                 can act as it. Give it one in [agents.idle] (`token_env = \"NAME\"`, \
                 `token_file` or `token`) and the same token to whatever acts as it \
                 (GATEBOT_TOKEN).",
                "agent `worker` has no token, and the inbox routes tasks to it and the TCP \
                 listener is on (127.0.0.1:8474): any process that can reach the agents' socket \
                 can act as it, read its tasks and claim or complete them, and it cannot use \
                 the TCP listener. Give it one in [agents.worker] (`token_env = \"NAME\"`, \
                 `token_file` or `token`) and the same token to whatever acts as it \
                 (GATEBOT_TOKEN).",
            ]
        );
        // Routed to an agent without a table (strangers allowed): no token is possible.
        let c = parse(&format!(
            "[policy]\nunknown_agents = \"supervised\"\n[agents.scout]\ntier = \"supervised\"\n\
             token = \"scout-token\"\n{inbox}"
        ))
        .unwrap();
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
        assert!(
            c.warnings[0].starts_with(
                "the inbox routes tasks to `worker`, which has no [agents.worker] table and so \
                 no token"
            ),
            "{}",
            c.warnings[0]
        );
        // Tokens everywhere, or no inbox and no listener: nothing to warn about.
        let c = parse(&format!(
            "[queue]\nlisten = \"127.0.0.1:8474\"\n[agents.worker]\ntier = \"supervised\"\n\
             token = \"worker-token\"\n[agents.scout]\ntier = \"supervised\"\n\
             token = \"scout-token\"\n{inbox}"
        ))
        .unwrap();
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        let c = parse("[agents.worker]\ntier = \"supervised\"\n").unwrap();
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }
}
