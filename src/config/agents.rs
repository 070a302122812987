//! `[agents.NAME]`: each agent's rules and token.

use std::collections::{BTreeMap, HashMap};

use super::file::FileAgent;
use super::resolve::{keep, Resolve};
use super::{AgentConfig, ConfigError};
use crate::names::valid_agent_name;
use crate::policy::AgentRules;

impl Resolve<'_> {
    /// Every `[agents.NAME]`; an agent with errors (recorded) is left out.
    pub(super) fn agents(
        &self,
        agents: BTreeMap<String, FileAgent>,
        errors: &mut Vec<ConfigError>,
    ) -> BTreeMap<String, AgentConfig> {
        // Each token seen so far, and whose it is: no two agents may share one.
        let mut tokens = HashMap::new();
        agents
            .into_iter()
            .filter_map(|(name, agent)| {
                let agent = self.agent(&name, agent, &mut tokens, errors)?;
                Some((name, agent))
            })
            .collect()
    }

    fn agent(
        &self,
        name: &str,
        agent: FileAgent,
        tokens: &mut HashMap<String, String>,
        errors: &mut Vec<ConfigError>,
    ) -> Option<AgentConfig> {
        let table = format!("agents.{name}");
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
        Some(AgentConfig {
            rules: AgentRules {
                tier: agent.tier,
                require_approval_for: agent.require_approval_for,
                always_allow: agent.always_allow,
                deny: agent.deny,
                confidence: confidence?,
                checkpoint_before: agent.checkpoint_before,
                read_only_commands: agent.read_only_commands,
            },
            token: token?,
        })
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
}
