//! `[workflow]` and `[agents.NAME.workflow]`: how often an agent's workflow runs check
//! in, which problems they tolerate, their limits, and how long a check-in waits.
//!
//! Resolution (see [`crate::workflow::model`] for the model):
//! 1. `[workflow]` is loaded over the seed's defaults; it is also what agents without a
//!    table of their own get (and agents accepted by `unknown_agents = "supervised"`);
//! 2. each `[agents.NAME.workflow]` is loaded over the org's result, key by key; its
//!    `[…overrides.PHASE]` tables merge over the org's for the same phase, key by key;
//! 3. a legacy `level` is migrated (or ignored, or unknown: the safe defaults), and a
//!    note says so: `check-config` prints it, the daemon logs it at start;
//! 4. values are checked: limits between 1 and [`MAX_LIMIT`], `check_in_ttl` at most
//!    `policy.max_ttl`, phase names 1-128 characters without control characters. Every
//!    error names its key path and line.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::ConfigError;
use crate::settings::Resolve;
use crate::time::{format_duration, range};
use crate::workflow::model::{
    load, AutonomyKeys, Frequency, Limits, OnLimit, PhaseOverride, Settings, Tolerance,
    DEFAULT_AUTONOMY, DEFAULT_LIMITS,
};
use crate::workflow::wire::valid_phase;

/// The largest `max_total_warnings` / `max_total_errors` accepted.
pub const MAX_LIMIT: u32 = 100_000;

/// How long a check-in waits for its owner unless `check_in_ttl` says otherwise.
pub const DEFAULT_CHECK_IN_TTL: Duration = Duration::from_secs(24 * 3600);

/// One agent's workflow settings, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentWorkflow {
    pub settings: Settings,
    /// How long a check-in waits before it expires (and the run stops).
    pub check_in_ttl: Duration,
}

impl Default for AgentWorkflow {
    fn default() -> Self {
        AgentWorkflow {
            settings: Settings::default(),
            check_in_ttl: DEFAULT_CHECK_IN_TTL,
        }
    }
}

/// Every agent's workflow settings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WorkflowConfig {
    /// `[workflow]`: for agents without a table of their own.
    pub default: AgentWorkflow,
    /// `[agents.NAME.workflow]`, by agent.
    pub agents: BTreeMap<String, AgentWorkflow>,
}

impl WorkflowConfig {
    /// The settings of agent `name`.
    #[must_use]
    pub fn for_agent(&self, name: &str) -> &AgentWorkflow {
        self.agents.get(name).unwrap_or(&self.default)
    }
}

/// A `[workflow]` or `[agents.NAME.workflow]` table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct FileWorkflow {
    level: Option<String>,
    check_in_frequency: Option<Frequency>,
    warning_tolerance: Option<Tolerance>,
    error_tolerance: Option<Tolerance>,
    max_total_warnings: Option<u32>,
    max_total_errors: Option<u32>,
    on_limit_reached: Option<OnLimit>,
    #[serde(deserialize_with = "crate::settings::de_duration_opt")]
    check_in_ttl: Option<Duration>,
    overrides: BTreeMap<String, FileOverride>,
}

/// A `[….overrides.PHASE]` table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct FileOverride {
    check_in_frequency: Option<Frequency>,
    warning_tolerance: Option<Tolerance>,
    error_tolerance: Option<Tolerance>,
}

impl Resolve<'_> {
    /// `[workflow]` and every `[agents.NAME.workflow]` (`per_agent`, by agent).
    pub(super) fn workflow(
        &self,
        org: FileWorkflow,
        per_agent: BTreeMap<String, FileWorkflow>,
        max_ttl: Duration,
        notes: &mut Vec<String>,
        errors: &mut Vec<ConfigError>,
    ) -> WorkflowConfig {
        let base = AgentWorkflow {
            settings: Settings {
                autonomy: DEFAULT_AUTONOMY,
                overrides: BTreeMap::new(),
                limits: DEFAULT_LIMITS,
            },
            check_in_ttl: DEFAULT_CHECK_IN_TTL,
        };
        let default = self.workflow_table("workflow", org, &base, max_ttl, notes, errors);
        let agents = per_agent
            .into_iter()
            .map(|(name, table)| {
                let path = format!("agents.{name}.workflow");
                let resolved = self.workflow_table(&path, table, &default, max_ttl, notes, errors);
                (name, resolved)
            })
            .collect();
        WorkflowConfig { default, agents }
    }

    /// One table, loaded over `inherited`.
    fn workflow_table(
        &self,
        table: &str,
        file: FileWorkflow,
        inherited: &AgentWorkflow,
        max_ttl: Duration,
        notes: &mut Vec<String>,
        errors: &mut Vec<ConfigError>,
    ) -> AgentWorkflow {
        let FileWorkflow {
            level,
            check_in_frequency,
            warning_tolerance,
            error_tolerance,
            max_total_warnings,
            max_total_errors,
            on_limit_reached,
            check_in_ttl,
            overrides,
        } = file;
        let keys = AutonomyKeys {
            level,
            check_in_frequency,
            warning_tolerance,
            error_tolerance,
        };
        let (autonomy, migration) = load(&keys, inherited.settings.autonomy);
        if let Some(m) = migration {
            notes.push(format!("{table}: {m}"));
        }
        let limits = self.workflow_limits(
            table,
            max_total_warnings,
            max_total_errors,
            on_limit_reached,
            inherited.settings.limits,
            errors,
        );
        let check_in_ttl = check_in_ttl
            .and_then(|ttl| self.check_in_ttl(table, ttl, max_ttl, errors))
            .unwrap_or(inherited.check_in_ttl);
        let overrides = self.phase_overrides(
            table,
            overrides,
            inherited.settings.overrides.clone(),
            errors,
        );
        AgentWorkflow {
            settings: Settings {
                autonomy,
                overrides,
                limits,
            },
            check_in_ttl,
        }
    }

    /// `max_total_warnings` and `max_total_errors` (each set when it is between 1 and
    /// [`MAX_LIMIT`]) and `on_limit_reached`, over `limits`.
    fn workflow_limits(
        &self,
        table: &str,
        max_total_warnings: Option<u32>,
        max_total_errors: Option<u32>,
        on_limit_reached: Option<OnLimit>,
        mut limits: Limits,
        errors: &mut Vec<ConfigError>,
    ) -> Limits {
        for (key, value, slot) in [
            (
                "max_total_warnings",
                max_total_warnings,
                &mut limits.max_total_warnings,
            ),
            (
                "max_total_errors",
                max_total_errors,
                &mut limits.max_total_errors,
            ),
        ] {
            match value {
                Some(n) if (1..=MAX_LIMIT).contains(&n) => *slot = n,
                Some(n) => errors.push(self.error(
                    table,
                    key,
                    format!("must be between 1 and {MAX_LIMIT}, got {n}"),
                )),
                None => {}
            }
        }
        if let Some(on) = on_limit_reached {
            limits.on_limit_reached = on;
        }
        limits
    }

    /// `check_in_ttl` as written, when it is a valid TTL no longer than `policy.max_ttl`.
    fn check_in_ttl(
        &self,
        table: &str,
        ttl: Duration,
        max_ttl: Duration,
        errors: &mut Vec<ConfigError>,
    ) -> Option<Duration> {
        let ttl = self.duration_in(table, "check_in_ttl", ttl, range::TTL, errors)?;
        if ttl > max_ttl {
            errors.push(self.error(
                table,
                "check_in_ttl",
                format!(
                    "{} is longer than `policy.max_ttl` ({})",
                    format_duration(ttl),
                    format_duration(max_ttl)
                ),
            ));
            return None;
        }
        Some(ttl)
    }

    /// The table's `[….overrides.PHASE]` tables, each merged key by key over `inherited`'s
    /// override for the same phase.
    fn phase_overrides(
        &self,
        table: &str,
        file: BTreeMap<String, FileOverride>,
        mut overrides: BTreeMap<String, PhaseOverride>,
        errors: &mut Vec<ConfigError>,
    ) -> BTreeMap<String, PhaseOverride> {
        for (phase, o) in file {
            if !valid_phase(&phase) {
                errors.push(self.error(
                    &format!("{table}.overrides.{phase}"),
                    "",
                    format!(
                        "phase `{}` must be 1-128 characters without control characters",
                        phase.escape_debug()
                    ),
                ));
                continue;
            }
            let mine = PhaseOverride {
                check_in_frequency: o.check_in_frequency,
                warning_tolerance: o.warning_tolerance,
                error_tolerance: o.error_tolerance,
            };
            let under = overrides.get(&phase).copied().unwrap_or_default();
            overrides.insert(phase, mine.over(under));
        }
        overrides
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::parse_in_etc as parse;
    use crate::config::Config;
    use crate::workflow::model::Autonomy;

    #[test]
    fn without_tables_every_agent_gets_the_seeds_defaults() {
        let c = parse("[agents.a]\ntier = \"supervised\"\n").unwrap();
        let w = c.workflow.for_agent("a");
        assert_eq!(w.settings, Settings::default());
        assert_eq!(w.check_in_ttl, DEFAULT_CHECK_IN_TTL);
        assert_eq!(c.workflow.for_agent("stranger"), w);
    }

    #[test]
    fn agents_inherit_the_org_table_key_by_key_and_overrides_merge() {
        let c = parse(
            r#"
[workflow]
warning_tolerance = "medium"
max_total_warnings = 10
on_limit_reached = "truncate"
check_in_ttl = "2h"

[workflow.overrides.evaluate]
warning_tolerance = "none"

[agents.a]
tier = "supervised"

[agents.a.workflow]
check_in_frequency = "per-step"
max_total_errors = 3

[agents.a.workflow.overrides.evaluate]
check_in_frequency = "end-only"

[agents.b]
tier = "supervised"
"#,
        )
        .unwrap();
        let a = c.workflow.for_agent("a");
        assert_eq!(
            a.settings.autonomy,
            Autonomy {
                check_in_frequency: Frequency::PerStep,
                warning_tolerance: Tolerance::Medium,
                error_tolerance: Tolerance::None,
            }
        );
        assert_eq!(
            (
                a.settings.limits.max_total_warnings,
                a.settings.limits.max_total_errors,
                a.settings.limits.on_limit_reached
            ),
            (10, 3, OnLimit::Truncate)
        );
        assert_eq!(a.check_in_ttl, Duration::from_secs(7200));
        assert_eq!(
            a.settings.overrides["evaluate"],
            PhaseOverride {
                check_in_frequency: Some(Frequency::EndOnly),
                warning_tolerance: Some(Tolerance::None),
                error_tolerance: None,
            }
        );
        let b = c.workflow.for_agent("b");
        assert_eq!(b, &c.workflow.default);
        assert_eq!(b.settings.autonomy.check_in_frequency, Frequency::PerPhase);
    }

    #[test]
    fn a_legacy_level_is_migrated_with_a_note_and_explicit_keys_win() {
        let c = parse(
            "[agents.a]\ntier = \"supervised\"\n[agents.a.workflow]\nlevel = \"dry-run\"\nwarning_tolerance = \"low\"\n\
             [agents.b]\ntier = \"supervised\"\n[agents.b.workflow]\nlevel = \"reckless\"\n",
        )
        .unwrap();
        assert_eq!(
            c.workflow.for_agent("a").settings.autonomy,
            Autonomy {
                check_in_frequency: Frequency::PerStep,
                warning_tolerance: Tolerance::Low,
                error_tolerance: Tolerance::None,
            }
        );
        assert_eq!(
            c.workflow.for_agent("b").settings.autonomy,
            DEFAULT_AUTONOMY
        );
        assert!(
            c.notes
                .iter()
                .any(|n| n
                    .starts_with("agents.a.workflow: migrating legacy autonomy level `dry-run`")),
            "{:?}",
            c.notes
        );
        assert!(
            c.notes
                .iter()
                .any(|n| n
                    .starts_with("agents.b.workflow: unknown legacy autonomy level `reckless`")),
            "{:?}",
            c.notes
        );
    }

    #[test]
    fn bad_values_are_reported_with_key_path_and_line() {
        // (toml, key path, line, words in the message)
        let cases: &[(&str, &str, usize, &str)] = &[
            ("[workflow]\nwarning_tolerance = \"lwo\"\n", "workflow.warning_tolerance", 2, "is not one of"),
            ("[workflow]\ncheck_in_frequency = \"hourly\"\n", "workflow.check_in_frequency", 2, "per-step"),
            ("[workflow]\non_limit_reached = \"panic\"\n", "workflow.on_limit_reached", 2, "truncate"),
            ("[workflow]\n\nmax_total_warnings = 0\n", "workflow.max_total_warnings", 3, "between 1 and"),
            ("[workflow]\nmax_total_errors = -1\n", "workflow.max_total_errors", 2, ""),
            ("[workflow]\ncheck_in_ttl = \"soon\"\n", "workflow.check_in_ttl", 2, "30m"),
            ("[workflow]\ncheck_in_ttl = \"30d\"\n", "workflow.check_in_ttl", 2, "policy.max_ttl"),
            ("[workflow]\ncheck_in_every = \"step\"\n", "workflow.check_in_every", 2, "unknown key"),
            ("[workflow.overrides.build]\nwarning_tolerance = \"extreme\"\n", "workflow.overrides.build.warning_tolerance", 2, "is not one of"),
            ("[workflow.overrides.build]\nlevel = \"dry-run\"\n", "workflow.overrides.build.level", 2, "unknown key"),
            (
                "[agents.a]\ntier = \"supervised\"\n[agents.a.workflow]\nerror_tolerance = \"some\"\n",
                "agents.a.workflow.error_tolerance",
                4,
                "is not one of",
            ),
            (
                "[agents.a]\ntier = \"supervised\"\n[agents.a.workflow]\nmax_total_errors = 1000000\n",
                "agents.a.workflow.max_total_errors",
                4,
                "between 1 and",
            ),
        ];
        for (raw, key, line, words) in cases {
            let e = parse(raw).unwrap_err();
            assert_eq!((e.key.as_str(), e.line), (*key, Some(*line)), "{raw}: {e}");
            assert!(e.message.contains(words), "{raw}: {e}");
        }
    }

    #[test]
    fn check_reports_every_workflow_error() {
        let raw = "[workflow]\nmax_total_warnings = 0\ncheck_in_ttl = \"8d\"\n[agents.a]\ntier = \"supervised\"\n[agents.a.workflow]\nmax_total_errors = 0\n";
        let errors = Config::check_text(raw, Path::new("/etc/gatebot/bot.toml")).unwrap_err();
        let found: Vec<(&str, Option<usize>)> =
            errors.iter().map(|e| (e.key.as_str(), e.line)).collect();
        assert_eq!(
            found,
            [
                ("workflow.max_total_warnings", Some(2)),
                ("workflow.check_in_ttl", Some(3)),
                ("agents.a.workflow.max_total_errors", Some(7)),
            ]
        );
    }
}
