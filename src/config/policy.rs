//! `[policy]` and `[tools]`: what the decision engine is given, the request TTL rules,
//! and an agent's confidence thresholds (the policy's gate, set per agent).

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use serde::Deserialize;

use super::agents::FileConfidence;
use super::promotion::FileTool;
use super::{ConfigError, UnknownAgents};
use crate::policy::{
    ConfidencePreset, ConfidenceThresholds, ContentPatterns, PatternOverrides, Policy,
    ToolApprovalMode,
};
use crate::settings::{de_duration, keep, Resolve};
use crate::time::{format_duration, range};

#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct FilePolicy {
    pub(super) tool_approval_mode: ToolApprovalMode,
    #[serde(deserialize_with = "de_duration")]
    pub(super) default_ttl: Duration,
    #[serde(deserialize_with = "de_duration")]
    pub(super) max_ttl: Duration,
    pub(super) unknown_agents: UnknownAgents,
    pub(super) internal_tools: BTreeSet<String>,
    pub(super) patterns: PatternOverrides,
}

impl Default for FilePolicy {
    fn default() -> Self {
        FilePolicy {
            tool_approval_mode: ToolApprovalMode::Dangerous,
            default_ttl: Duration::from_secs(24 * 3600),
            max_ttl: Duration::from_secs(7 * 24 * 3600),
            unknown_agents: UnknownAgents::Reject,
            internal_tools: BTreeSet::new(),
            patterns: PatternOverrides::default(),
        }
    }
}

impl Resolve<'_> {
    /// `[policy]` and `[tools]`; `None` when the patterns do not compile (recorded).
    /// The TTLs and `unknown_agents` are taken from `policy` as they are.
    pub(super) fn policy(
        &self,
        policy: FilePolicy,
        tools: HashMap<String, FileTool>,
        errors: &mut Vec<ConfigError>,
    ) -> Option<Policy> {
        // A request lives at least a second (the API refuses anything shorter), and at
        // most a year: a deadline is a date gatebot must be able to show.
        for (key, ttl) in [
            ("default_ttl", policy.default_ttl),
            ("max_ttl", policy.max_ttl),
        ] {
            self.duration_in("policy", key, ttl, range::TTL, errors);
        }
        if policy.default_ttl > policy.max_ttl {
            errors.push(self.error(
                "policy",
                "default_ttl",
                format!(
                    "{} is longer than `policy.max_ttl` ({})",
                    format_duration(policy.default_ttl),
                    format_duration(policy.max_ttl)
                ),
            ));
        }
        let patterns = keep(errors, self.patterns(&policy.patterns));
        Some(Policy {
            tool_classes: tools.into_iter().map(|(t, f)| (t, f.class)).collect(),
            tool_approval_mode: policy.tool_approval_mode,
            internal_tools: policy.internal_tools,
            patterns: patterns?,
        })
    }

    /// `[policy.patterns]` compiled; an error names the pattern's key, and says
    /// why it is not a regular expression unless it is an `internal_domains` entry.
    fn patterns(&self, overrides: &PatternOverrides) -> Result<ContentPatterns, ConfigError> {
        ContentPatterns::new(overrides).map_err(|e| {
            self.error(
                "policy.patterns",
                e.key,
                if e.key == "internal_domains" {
                    e.message
                } else {
                    format!(
                        "is not a regular expression: {}",
                        crate::settings::regex_words(&e.message)
                    )
                },
            )
        })
    }

    /// An agent's `confidence`, in `table` (`agents.NAME`): a preset, or a preset with
    /// some thresholds overridden.
    pub(super) fn confidence(
        &self,
        table: &str,
        c: Option<FileConfidence>,
    ) -> Result<ConfidenceThresholds, ConfigError> {
        let t = match c {
            None => ConfidencePreset::Standard.thresholds(),
            Some(FileConfidence::Preset(p)) => p.thresholds(),
            Some(FileConfidence::Custom(c)) => {
                let base = c.preset.unwrap_or(ConfidencePreset::Standard).thresholds();
                ConfidenceThresholds {
                    proceed_freely: c.proceed_freely.unwrap_or(base.proceed_freely),
                    proceed_cautiously: c.proceed_cautiously.unwrap_or(base.proceed_cautiously),
                    ask_human: c.ask_human.unwrap_or(base.ask_human),
                }
            }
        };
        let ok = |x: f64| (0.0..=1.0).contains(&x);
        let in_range = ok(t.proceed_freely) && ok(t.proceed_cautiously) && ok(t.ask_human);
        let ordered =
            t.ask_human <= t.proceed_cautiously && t.proceed_cautiously <= t.proceed_freely;
        if !(in_range && ordered) {
            return Err(self.error(
                table,
                "confidence",
                "thresholds must lie in 0.0..=1.0 with ask_human <= proceed_cautiously <= proceed_freely",
            ));
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use crate::config::parse_in_etc as parse;
    use crate::config::Config;
    use std::path::Path;

    #[test]
    fn a_ttl_under_a_second_or_over_a_year_is_an_error() {
        for (key, value, words) in [
            ("default_ttl", "500ms", "500 milliseconds is shorter"),
            ("max_ttl", "500ms", "500 milliseconds is shorter"),
            ("max_ttl", "8000y", "8000 years is longer"),
            ("default_ttl", "400d", "400 days is longer"),
        ] {
            let raw = format!("[policy]\n{key} = \"{value}\"\n");
            let errors = Config::check_text(&raw, Path::new("/etc/gatebot/bot.toml")).unwrap_err();
            let e = errors
                .iter()
                .find(|e| e.key == format!("policy.{key}") && e.line == Some(2))
                .unwrap_or_else(|| panic!("{errors:?}"));
            assert_eq!(
                e.message,
                format!("must be from 1 second to 365 days; {words}")
            );
        }
    }

    #[test]
    fn default_ttl_longer_than_max_is_an_error() {
        let e = parse("[policy]\ndefault_ttl = \"30d\"\n").unwrap_err();
        assert_eq!(e.key, "policy.default_ttl");
    }

    #[test]
    fn a_bad_pattern_names_its_key() {
        let e = parse("[policy.patterns]\npricing = \"(unclosed\"\n").unwrap_err();
        assert_eq!(e.key, "policy.patterns.pricing");
        assert_eq!(e.line, Some(2));
        // The regex crate's sentence, without its drawing of the pattern.
        assert_eq!(e.message, "is not a regular expression: unclosed group");
    }

    #[test]
    fn confidence_presets_and_overrides_resolve() {
        let c = parse(
            "[agents.a]\ntier = \"autonomous\"\nconfidence = \"full\"\n[agents.b]\ntier = \"autonomous\"\nconfidence = { preset = \"minimal\", ask_human = 0.6 }\n",
        )
        .unwrap();
        assert_eq!(c.agents["a"].rules.confidence.proceed_freely, 0.7);
        assert_eq!(c.agents["b"].rules.confidence.proceed_freely, 0.99);
        assert_eq!(c.agents["b"].rules.confidence.ask_human, 0.6);
    }

    #[test]
    fn disordered_confidence_thresholds_are_an_error() {
        let e = parse(
            "[agents.a]\ntier = \"autonomous\"\nconfidence = { proceed_freely = 0.5, ask_human = 0.9 }\n",
        )
        .unwrap_err();
        assert_eq!(e.key, "agents.a.confidence");
    }
}
