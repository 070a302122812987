//! The two dimensions an owner sets for an agent's workflows, exactly as the seed
//! (`autonomy-evaluation-logic.md`) defines them: how often the run **checks in**
//! ([`Frequency`]) and which problems it **tolerates** ([`Tolerance`] for warnings and
//! for errors), with per-phase overrides and global [`Limits`]; and the migration of the
//! legacy single `level`.
//!
//! Loading an agent's settings (see `config::workflow`):
//! 1. the org-wide `[workflow]` table is loaded over the seed's defaults ([`load`]);
//! 2. an agent's `[agents.NAME.workflow]` table is loaded over the org's result, so an
//!    agent inherits every key it does not set;
//! 3. in either table, a legacy `level` without `check_in_frequency` is migrated with
//!    [`migrate_legacy`] (an unknown level gives the safe defaults), and explicit keys win
//!    over the migrated ones; with `check_in_frequency` set the level is ignored, as the
//!    seed says. Each migration is reported ([`Migration`]), so the config can log it;
//! 4. per-phase overrides merge over the result key by key ([`Settings::for_phase`]);
//!    limits are always global.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// When a run pauses for its owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Frequency {
    /// After every step (`step_complete`).
    PerStep,
    /// After every phase (`phase_complete`).
    PerPhase,
    /// Once, at the end (`workflow_complete`).
    EndOnly,
}

impl Frequency {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Frequency::PerStep => "per-step",
            Frequency::PerPhase => "per-phase",
            Frequency::EndOnly => "end-only",
        }
    }
}

/// The most severe problem of a kind a run tolerates before `result_handling` applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tolerance {
    None,
    Low,
    Medium,
    High,
}

impl Tolerance {
    /// none 0, low 1, medium 2, high 3.
    #[must_use]
    pub fn rank(self) -> u8 {
        match self {
            Tolerance::None => 0,
            Tolerance::Low => 1,
            Tolerance::Medium => 2,
            Tolerance::High => 3,
        }
    }

    /// The seed's `getToleranceRank` on a name: one gatebot does not know counts as
    /// `low`. gatebot's own inputs never need it: `bot.toml` refuses an unknown name with
    /// its key and line, so a typo cannot silently change what a run tolerates. It states
    /// the seed's rule for any other source of names, and its tests pin that rule.
    #[must_use]
    pub fn from_name(name: &str) -> Tolerance {
        match name {
            "none" => Tolerance::None,
            "low" => Tolerance::Low,
            "medium" => Tolerance::Medium,
            "high" => Tolerance::High,
            _ => Tolerance::Low,
        }
    }

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Tolerance::None => "none",
            Tolerance::Low => "low",
            Tolerance::Medium => "medium",
            Tolerance::High => "high",
        }
    }
}

/// How bad one warning or error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Low,
    Medium,
    High,
}

impl Severity {
    /// low 1, medium 2, high 3.
    #[must_use]
    pub fn rank(self) -> u8 {
        match self {
            Severity::Low => 1,
            Severity::Medium => 2,
            Severity::High => 3,
        }
    }

    /// A severity given by name (any case); `None` for a name gatebot does not know.
    #[must_use]
    pub fn parse(name: &str) -> Option<Severity> {
        match name.trim().to_ascii_lowercase().as_str() {
            "low" => Some(Severity::Low),
            "medium" => Some(Severity::Medium),
            "high" => Some(Severity::High),
            _ => None,
        }
    }

    /// The seed's `getSeverityRank` on a name: one gatebot does not know is `medium`.
    #[must_use]
    pub fn from_name(name: &str) -> Severity {
        Severity::parse(name).unwrap_or(Severity::Medium)
    }

    /// The seed's `severityExceedsTolerance`: the severity's rank is greater.
    #[must_use]
    pub fn exceeds(self, tolerance: Tolerance) -> bool {
        self.rank() > tolerance.rank()
    }

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Medium => "medium",
            Severity::High => "high",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What happens when a global limit is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnLimit {
    /// The run stops.
    Stop,
    /// The run goes on, but problems of the kind that reached its limit are no longer
    /// collected (logged, and counted as not collected).
    Truncate,
}

impl OnLimit {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            OnLimit::Stop => "stop",
            OnLimit::Truncate => "truncate",
        }
    }
}

/// The run's limits on collected problems, over its whole life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub max_total_warnings: u32,
    pub max_total_errors: u32,
    pub on_limit_reached: OnLimit,
}

/// The seed's `DEFAULT_LIMITS`.
pub const DEFAULT_LIMITS: Limits = Limits {
    max_total_warnings: 50,
    max_total_errors: 20,
    on_limit_reached: OnLimit::Stop,
};

/// Frequency and tolerances in force for one phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Autonomy {
    pub check_in_frequency: Frequency,
    pub warning_tolerance: Tolerance,
    pub error_tolerance: Tolerance,
}

/// The seed's defaults for the new model, and its "safe defaults" for an unknown
/// legacy level: check in per phase, tolerate low warnings, no errors.
pub const DEFAULT_AUTONOMY: Autonomy = Autonomy {
    check_in_frequency: Frequency::PerPhase,
    warning_tolerance: Tolerance::Low,
    error_tolerance: Tolerance::None,
};

/// What a phase changes; unset keys keep the run's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PhaseOverride {
    pub check_in_frequency: Option<Frequency>,
    pub warning_tolerance: Option<Tolerance>,
    pub error_tolerance: Option<Tolerance>,
}

impl PhaseOverride {
    /// `self` over `under`, key by key (`self` wins).
    #[must_use]
    pub fn over(self, under: PhaseOverride) -> PhaseOverride {
        PhaseOverride {
            check_in_frequency: self.check_in_frequency.or(under.check_in_frequency),
            warning_tolerance: self.warning_tolerance.or(under.warning_tolerance),
            error_tolerance: self.error_tolerance.or(under.error_tolerance),
        }
    }
}

/// An agent's workflow settings, resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    pub autonomy: Autonomy,
    /// By phase name.
    pub overrides: BTreeMap<String, PhaseOverride>,
    pub limits: Limits,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            autonomy: DEFAULT_AUTONOMY,
            overrides: BTreeMap::new(),
            limits: DEFAULT_LIMITS,
        }
    }
}

impl Settings {
    /// The seed's `getPhaseAutonomy`: the phase's override merged over the run's
    /// settings, override winning (limits are not part of it: they are always global).
    #[must_use]
    pub fn for_phase(&self, phase: &str) -> Autonomy {
        let Some(o) = self.overrides.get(phase) else {
            return self.autonomy;
        };
        Autonomy {
            check_in_frequency: o
                .check_in_frequency
                .unwrap_or(self.autonomy.check_in_frequency),
            warning_tolerance: o
                .warning_tolerance
                .unwrap_or(self.autonomy.warning_tolerance),
            error_tolerance: o.error_tolerance.unwrap_or(self.autonomy.error_tolerance),
        }
    }
}

/// The seed's `migrateFromLegacy` for the levels it names; `None` for any other (the
/// caller then uses [`DEFAULT_AUTONOMY`], the seed's safe defaults).
#[must_use]
pub fn migrate_legacy(level: &str) -> Option<Autonomy> {
    let (check_in_frequency, warning_tolerance, error_tolerance) = match level {
        "dry-run" => (Frequency::PerStep, Tolerance::None, Tolerance::None),
        "assist" => (Frequency::PerPhase, Tolerance::None, Tolerance::None),
        "guarded" => (Frequency::PerPhase, Tolerance::Low, Tolerance::None),
        "autonomous" => (Frequency::EndOnly, Tolerance::Medium, Tolerance::Low),
        _ => return None,
    };
    Some(Autonomy {
        check_in_frequency,
        warning_tolerance,
        error_tolerance,
    })
}

/// The autonomy keys of one table as written (`[workflow]` or `[agents.NAME.workflow]`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AutonomyKeys {
    /// The legacy single level (`dry-run`, `assist`, `guarded`, `autonomous`).
    pub level: Option<String>,
    pub check_in_frequency: Option<Frequency>,
    pub warning_tolerance: Option<Tolerance>,
    pub error_tolerance: Option<Tolerance>,
}

/// What loading did with a legacy `level`, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Migration {
    /// A known level was migrated (before explicit keys were applied over it).
    Migrated { level: String, to: Autonomy },
    /// An unknown level: the safe defaults were used.
    Unknown { level: String },
    /// `check_in_frequency` is set, so the level was not used at all.
    Ignored { level: String },
}

impl fmt::Display for Migration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let describe = |a: &Autonomy| {
            format!(
                "check_in_frequency = {}, warning_tolerance = {}, error_tolerance = {}",
                a.check_in_frequency.as_str(),
                a.warning_tolerance.as_str(),
                a.error_tolerance.as_str()
            )
        };
        match self {
            Migration::Migrated { level, to } => write!(
                f,
                "migrating legacy autonomy level `{level}` to the new model: {} (keys set beside it win)",
                describe(to)
            ),
            Migration::Unknown { level } => write!(
                f,
                "unknown legacy autonomy level `{level}` (known: dry-run, assist, guarded, autonomous): using the safe defaults, {}",
                describe(&DEFAULT_AUTONOMY)
            ),
            Migration::Ignored { level } => write!(
                f,
                "legacy autonomy level `{level}` is ignored because check_in_frequency is set"
            ),
        }
    }
}

/// The seed's `loadAutonomyConfig`, over `inherited` (the seed's defaults for the
/// org-wide table, the org's settings for an agent's table): a legacy level without
/// `check_in_frequency` is migrated, explicit keys winning; otherwise explicit keys
/// over `inherited`.
#[must_use]
pub fn load(keys: &AutonomyKeys, inherited: Autonomy) -> (Autonomy, Option<Migration>) {
    match (&keys.level, keys.check_in_frequency) {
        (Some(level), None) => {
            let (base, migration) = match migrate_legacy(level) {
                Some(to) => (
                    to,
                    Migration::Migrated {
                        level: level.clone(),
                        to,
                    },
                ),
                None => (
                    DEFAULT_AUTONOMY,
                    Migration::Unknown {
                        level: level.clone(),
                    },
                ),
            };
            let autonomy = Autonomy {
                check_in_frequency: base.check_in_frequency,
                warning_tolerance: keys.warning_tolerance.unwrap_or(base.warning_tolerance),
                error_tolerance: keys.error_tolerance.unwrap_or(base.error_tolerance),
            };
            (autonomy, Some(migration))
        }
        (level, frequency) => {
            let autonomy = Autonomy {
                check_in_frequency: frequency.unwrap_or(inherited.check_in_frequency),
                warning_tolerance: keys
                    .warning_tolerance
                    .unwrap_or(inherited.warning_tolerance),
                error_tolerance: keys.error_tolerance.unwrap_or(inherited.error_tolerance),
            };
            let ignored = level.as_ref().map(|level| Migration::Ignored {
                level: level.clone(),
            });
            (autonomy, ignored)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Frequency::*;

    fn autonomy(f: Frequency, w: Tolerance, e: Tolerance) -> Autonomy {
        Autonomy {
            check_in_frequency: f,
            warning_tolerance: w,
            error_tolerance: e,
        }
    }

    #[test]
    fn the_seeds_migration_table() {
        let cases: &[(&str, Option<Autonomy>)] = &[
            (
                "dry-run",
                Some(autonomy(PerStep, Tolerance::None, Tolerance::None)),
            ),
            (
                "assist",
                Some(autonomy(PerPhase, Tolerance::None, Tolerance::None)),
            ),
            (
                "guarded",
                Some(autonomy(PerPhase, Tolerance::Low, Tolerance::None)),
            ),
            (
                "autonomous",
                Some(autonomy(EndOnly, Tolerance::Medium, Tolerance::Low)),
            ),
            ("yolo", None),
            ("Guarded", None),
            ("", None),
        ];
        for (level, want) in cases {
            assert_eq!(migrate_legacy(level), *want, "{level}");
        }
    }

    #[test]
    fn loading_migrates_a_legacy_level_and_explicit_keys_win() {
        let keys = |level: Option<&str>, f, w, e| AutonomyKeys {
            level: level.map(str::to_string),
            check_in_frequency: f,
            warning_tolerance: w,
            error_tolerance: e,
        };
        let org = autonomy(EndOnly, Tolerance::High, Tolerance::High);
        let cases: &[(AutonomyKeys, Autonomy, &str)] = &[
            // Nothing set: the inherited settings (the seed's defaults at the top).
            (keys(None, None, None, None), org, ""),
            // A level alone: the seed's table, whatever is inherited.
            (
                keys(Some("dry-run"), None, None, None),
                autonomy(PerStep, Tolerance::None, Tolerance::None),
                "migrating legacy autonomy level `dry-run`",
            ),
            // Explicit tolerances win over the migrated ones.
            (
                keys(Some("guarded"), None, Some(Tolerance::Medium), None),
                autonomy(PerPhase, Tolerance::Medium, Tolerance::None),
                "migrating",
            ),
            // An unknown level: the safe defaults, not the inherited settings.
            (
                keys(Some("yolo"), None, None, Some(Tolerance::Low)),
                autonomy(PerPhase, Tolerance::Low, Tolerance::Low),
                "unknown legacy autonomy level `yolo`",
            ),
            // With check_in_frequency set, the seed does not migrate at all.
            (
                keys(Some("autonomous"), Some(PerStep), None, None),
                autonomy(PerStep, Tolerance::High, Tolerance::High),
                "is ignored because check_in_frequency is set",
            ),
            (
                keys(None, Some(PerStep), Some(Tolerance::None), None),
                autonomy(PerStep, Tolerance::None, Tolerance::High),
                "",
            ),
        ];
        for (k, want, note) in cases {
            let (got, migration) = load(k, org);
            assert_eq!(got, *want, "{k:?}");
            let text = migration.map(|m| m.to_string()).unwrap_or_default();
            assert!(
                text.contains(note) && (note.is_empty() == text.is_empty()),
                "{k:?}: {text}"
            );
        }
        assert_eq!(
            load(&AutonomyKeys::default(), DEFAULT_AUTONOMY).0,
            DEFAULT_AUTONOMY
        );
    }

    #[test]
    fn a_phase_override_merges_over_the_settings_and_leaves_the_rest() {
        // The seed's "stricter evaluate phase".
        let mut s = Settings {
            autonomy: autonomy(PerPhase, Tolerance::Medium, Tolerance::None),
            ..Settings::default()
        };
        s.overrides.insert(
            "evaluate".into(),
            PhaseOverride {
                check_in_frequency: Some(PerStep),
                warning_tolerance: Some(Tolerance::None),
                error_tolerance: None,
            },
        );
        assert_eq!(
            s.for_phase("evaluate"),
            autonomy(PerStep, Tolerance::None, Tolerance::None)
        );
        assert_eq!(s.for_phase("build"), s.autonomy);
        assert_eq!(s.for_phase("Evaluate"), s.autonomy, "names match exactly");
    }

    #[test]
    fn severities_exceed_tolerances_by_rank_and_unknown_names_have_the_seeds_defaults() {
        // (severity, tolerance, exceeds): the seed's table, and its defaults for
        // unknown names (severity medium, tolerance low).
        let cases: &[(&str, &str, bool)] = &[
            ("low", "none", true),
            ("medium", "none", true),
            ("high", "none", true),
            ("low", "low", false),
            ("medium", "low", true),
            ("high", "low", true),
            ("low", "medium", false),
            ("medium", "medium", false),
            ("high", "medium", true),
            ("low", "high", false),
            ("medium", "high", false),
            ("high", "high", false),
            ("critical", "low", true),
            ("critical", "medium", false),
            ("low", "strict", false),
            ("medium", "strict", true),
            ("HIGH", "high", false),
        ];
        for (severity, tolerance, want) in cases {
            assert_eq!(
                Severity::from_name(severity).exceeds(Tolerance::from_name(tolerance)),
                *want,
                "{severity} vs {tolerance}"
            );
        }
    }
}
