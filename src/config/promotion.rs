//! `[promotion]`, `[grants]` and the table form of `[tools]` entries: how gatebot
//! assesses agents and proposes tier changes, what its grant buttons offer, and which
//! tools are shell-like (docs/trust.md).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::time::Duration;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::ConfigError;
use crate::policy::ToolClass;
use crate::settings::{de_duration, Resolve};
use crate::time::range;
use crate::trust::assess::{Rules, Thresholds};

/// The resolved trust settings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrustConfig {
    pub promotion: PromotionConfig,
    pub grants: GrantsConfig,
    /// Shell-like tools and the argument that holds their command (`Bash` → `command`).
    pub shell_tools: BTreeMap<String, String>,
}

/// `[promotion]`.
#[derive(Debug, Clone, PartialEq)]
pub struct PromotionConfig {
    /// Run the assessment on a schedule (`gatebot agent NAME assess` works either way).
    pub scheduled: bool,
    pub every: Duration,
    /// A declined proposal is not made again for this long (and, for the step to
    /// autonomous, a decline within it holds the agent back).
    pub decline_quiet: Duration,
    /// The rolling window shown beside all-time evidence.
    pub window: Duration,
    pub rules: Rules,
}

impl Default for PromotionConfig {
    fn default() -> Self {
        PromotionConfig {
            scheduled: true,
            every: Duration::from_secs(24 * 3600),
            decline_quiet: Duration::from_secs(30 * 86_400),
            window: Duration::from_secs(30 * 86_400),
            rules: Rules::default(),
        }
    }
}

/// `[grants]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantsConfig {
    /// How long the "Allow for …" button allows.
    pub allow_for: Duration,
    /// Approvals in a row (no denial) after which a prompt suggests the grant; 0: never.
    pub suggest_after: u64,
}

impl Default for GrantsConfig {
    fn default() -> Self {
        GrantsConfig {
            allow_for: Duration::from_secs(3600),
            suggest_after: 10,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct FilePromotion {
    scheduled: bool,
    #[serde(deserialize_with = "de_duration")]
    every: Duration,
    #[serde(deserialize_with = "de_duration")]
    decline_quiet: Duration,
    #[serde(deserialize_with = "de_duration")]
    window: Duration,
    demote_denials: usize,
    demote_window: usize,
    to_semi_autonomous: FileThresholds,
    to_autonomous: FileAutonomous,
}

impl Default for FilePromotion {
    fn default() -> Self {
        let d = PromotionConfig::default();
        FilePromotion {
            scheduled: d.scheduled,
            every: d.every,
            decline_quiet: d.decline_quiet,
            window: d.window,
            demote_denials: d.rules.demote_denials,
            demote_window: d.rules.demote_window,
            to_semi_autonomous: FileThresholds::from(Thresholds::TO_SEMI_AUTONOMOUS),
            to_autonomous: FileAutonomous::default(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct FileThresholds {
    min_handled: u64,
    max_correction_rate: f64,
    min_positive_rate: f64,
    max_escalation_rate: f64,
}

impl From<Thresholds> for FileThresholds {
    fn from(t: Thresholds) -> Self {
        FileThresholds {
            min_handled: t.min_handled,
            max_correction_rate: t.max_correction_rate,
            min_positive_rate: t.min_positive_rate,
            max_escalation_rate: t.max_escalation_rate,
        }
    }
}

impl Default for FileThresholds {
    fn default() -> Self {
        FileThresholds::from(Thresholds::TO_SEMI_AUTONOMOUS)
    }
}

/// `[promotion.to_autonomous]`: the thresholds, and the declined-proposal rule. Keys
/// left out keep the seed's values for this step.
#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct FileAutonomous {
    min_handled: u64,
    max_correction_rate: f64,
    min_positive_rate: f64,
    max_escalation_rate: f64,
    max_declined: u64,
}

impl Default for FileAutonomous {
    fn default() -> Self {
        let t = Thresholds::TO_AUTONOMOUS;
        FileAutonomous {
            min_handled: t.min_handled,
            max_correction_rate: t.max_correction_rate,
            min_positive_rate: t.min_positive_rate,
            max_escalation_rate: t.max_escalation_rate,
            max_declined: Rules::default().max_declined,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct FileGrants {
    #[serde(deserialize_with = "de_duration")]
    allow_for: Duration,
    suggest_after: u64,
}

impl Default for FileGrants {
    fn default() -> Self {
        let d = GrantsConfig::default();
        FileGrants {
            allow_for: d.allow_for,
            suggest_after: d.suggest_after,
        }
    }
}

/// A `[tools]` entry: `Bash = "write"`, or
/// `Bash = { class = "write", command_arg = "command" }` for a shell-like tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FileTool {
    pub(super) class: ToolClass,
    pub(super) command_arg: Option<String>,
}

impl<'de> Deserialize<'de> for FileTool {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ToolVisitor;

        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Table {
            class: ToolClass,
            command_arg: Option<String>,
        }

        impl<'de> Visitor<'de> for ToolVisitor {
            type Value = FileTool;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a class (\"read-only\", \"write\" or \"destructive\") or a table like \
                     { class = \"write\", command_arg = \"command\" }",
                )
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<FileTool, E> {
                let class = ToolClass::deserialize(de::value::StrDeserializer::<E>::new(s))?;
                Ok(FileTool {
                    class,
                    command_arg: None,
                })
            }

            fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<FileTool, M::Error> {
                let t = Table::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(FileTool {
                    class: t.class,
                    command_arg: t.command_arg,
                })
            }
        }

        d.deserialize_any(ToolVisitor)
    }
}

impl Resolve<'_> {
    /// `[promotion]`, `[grants]` and the shell-like tools of `[tools]`; every check only
    /// records, so the value is always there.
    pub(super) fn trust(
        &self,
        promotion: FilePromotion,
        grants: FileGrants,
        tools: &HashMap<String, FileTool>,
        errors: &mut Vec<ConfigError>,
    ) -> TrustConfig {
        let semi = self.thresholds(
            "promotion.to_semi_autonomous",
            &promotion.to_semi_autonomous,
            errors,
        );
        let a = &promotion.to_autonomous;
        let autonomous = self.thresholds(
            "promotion.to_autonomous",
            &FileThresholds {
                min_handled: a.min_handled,
                max_correction_rate: a.max_correction_rate,
                min_positive_rate: a.min_positive_rate,
                max_escalation_rate: a.max_escalation_rate,
            },
            errors,
        );
        self.demotion_rule(&promotion, errors);
        for (table, key, d, range) in [
            ("promotion", "every", promotion.every, range::PROMOTION),
            (
                "promotion",
                "decline_quiet",
                promotion.decline_quiet,
                range::PROMOTION,
            ),
            ("promotion", "window", promotion.window, range::WINDOW),
            ("grants", "allow_for", grants.allow_for, range::GRANT_FOR),
        ] {
            self.duration_in(table, key, d, range, errors);
        }
        let shell_tools = self.shell_tools(tools, errors);
        TrustConfig {
            promotion: PromotionConfig {
                scheduled: promotion.scheduled,
                every: promotion.every,
                decline_quiet: promotion.decline_quiet,
                window: promotion.window,
                rules: Rules {
                    to_semi_autonomous: semi,
                    to_autonomous: autonomous,
                    max_declined: a.max_declined,
                    demote_denials: promotion.demote_denials,
                    demote_window: promotion.demote_window,
                },
            },
            grants: GrantsConfig {
                allow_for: grants.allow_for,
                suggest_after: grants.suggest_after,
            },
            shell_tools,
        }
    }

    /// `promotion.demote_denials` and `promotion.demote_window` together: the denials must
    /// fit in the window, and a window is needed while denials are counted.
    fn demotion_rule(&self, promotion: &FilePromotion, errors: &mut Vec<ConfigError>) {
        if promotion.demote_denials > promotion.demote_window {
            errors.push(self.error(
                "promotion",
                "demote_denials",
                format!(
                    "{} denials can never be among the last {} decisions (`promotion.demote_window`); \
                     use 0 to turn demotion proposals off",
                    promotion.demote_denials, promotion.demote_window
                ),
            ));
        }
        if promotion.demote_denials > 0 && promotion.demote_window == 0 {
            errors.push(self.error(
                "promotion",
                "demote_window",
                "must be at least 1 while `promotion.demote_denials` is set",
            ));
        }
    }

    /// The shell-like tools of `[tools]`: each with a `command_arg`, by the argument that
    /// holds its command.
    fn shell_tools(
        &self,
        tools: &HashMap<String, FileTool>,
        errors: &mut Vec<ConfigError>,
    ) -> BTreeMap<String, String> {
        let mut shell_tools = BTreeMap::new();
        for (tool, t) in tools {
            if let Some(arg) = &t.command_arg {
                if arg.trim().is_empty() || arg.chars().any(char::is_control) {
                    errors.push(self.error(
                        "tools",
                        tool,
                        "`command_arg` must name the argument that holds the command, like \"command\"",
                    ));
                } else {
                    shell_tools.insert(tool.clone(), arg.clone());
                }
            }
        }
        shell_tools
    }

    /// One promotion step's thresholds, in `table`; rates must lie in 0..=1.
    fn thresholds(
        &self,
        table: &str,
        t: &FileThresholds,
        errors: &mut Vec<ConfigError>,
    ) -> Thresholds {
        for (key, rate) in [
            ("max_correction_rate", t.max_correction_rate),
            ("min_positive_rate", t.min_positive_rate),
            ("max_escalation_rate", t.max_escalation_rate),
        ] {
            if !(0.0..=1.0).contains(&rate) {
                errors.push(self.error(
                    table,
                    key,
                    format!("{rate} is not a rate from 0.0 to 1.0 (0.05 is 5 %)"),
                ));
            }
        }
        Thresholds {
            min_handled: t.min_handled,
            max_correction_rate: t.max_correction_rate,
            min_positive_rate: t.min_positive_rate,
            max_escalation_rate: t.max_escalation_rate,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::config::parse_in_etc as parse;
    use crate::config::Config;
    use crate::policy::ToolClass;
    use crate::trust::assess::Thresholds;

    #[test]
    fn defaults_are_the_seeds_thresholds() {
        let c = parse("").unwrap();
        let p = &c.trust.promotion;
        assert!(p.scheduled);
        assert_eq!(p.every, Duration::from_secs(86_400));
        assert_eq!(p.decline_quiet, Duration::from_secs(30 * 86_400));
        assert_eq!(p.rules.to_semi_autonomous, Thresholds::TO_SEMI_AUTONOMOUS);
        assert_eq!(p.rules.to_autonomous, Thresholds::TO_AUTONOMOUS);
        assert_eq!((p.rules.demote_denials, p.rules.demote_window), (3, 10));
        assert_eq!(c.trust.grants.allow_for, Duration::from_secs(3600));
        assert_eq!(c.trust.grants.suggest_after, 10);
    }

    #[test]
    fn every_key_can_be_set() {
        let c = parse(
            "[promotion]\nscheduled = false\nevery = \"1h\"\ndecline_quiet = \"7d\"\nwindow = \"14d\"\n\
             demote_denials = 2\ndemote_window = 5\n\
             [promotion.to_semi_autonomous]\nmin_handled = 10\nmax_correction_rate = 0.1\n\
             min_positive_rate = 0.5\nmax_escalation_rate = 0.2\n\
             [promotion.to_autonomous]\nmin_handled = 20\nmax_declined = 1\n\
             [grants]\nallow_for = \"30m\"\nsuggest_after = 0\n",
        )
        .unwrap();
        let p = &c.trust.promotion;
        assert!(!p.scheduled);
        assert_eq!(p.every, Duration::from_secs(3600));
        assert_eq!(p.rules.to_semi_autonomous.min_handled, 10);
        assert_eq!(p.rules.to_semi_autonomous.max_escalation_rate, 0.2);
        assert_eq!(p.rules.to_autonomous.min_handled, 20);
        // Keys left out keep the seed's values.
        assert_eq!(p.rules.to_autonomous.max_correction_rate, 0.02);
        assert_eq!(p.rules.max_declined, 1);
        assert_eq!((p.rules.demote_denials, p.rules.demote_window), (2, 5));
        assert_eq!(c.trust.grants.allow_for, Duration::from_secs(1800));
        assert_eq!(c.trust.grants.suggest_after, 0);
    }

    #[test]
    fn bad_values_name_their_key_and_line() {
        let cases: &[(&str, &str, usize, &str)] = &[
            (
                "[promotion.to_autonomous]\nmax_correction_rate = 2.0\n",
                "promotion.to_autonomous.max_correction_rate",
                2,
                "not a rate",
            ),
            (
                "[promotion]\n\ndemote_denials = 11\n",
                "promotion.demote_denials",
                3,
                "can never be",
            ),
            (
                "[promotion]\nevery = \"soon\"\n",
                "promotion.every",
                2,
                "30m",
            ),
            (
                "[promotion]\nevery = \"0s\"\n",
                "promotion.every",
                2,
                "longer than zero",
            ),
            (
                "[grants]\nallow_for = \"forever\"\n",
                "grants.allow_for",
                2,
                "duration",
            ),
            (
                "[grants]\nsuggest_after = -1\n",
                "grants.suggest_after",
                2,
                "",
            ),
            (
                "[promotion]\nevry = \"1h\"\n",
                "promotion",
                2,
                "unknown key",
            ),
            (
                "[tools]\nBash = { class = \"write\", command_arg = \"\" }\n",
                "tools.Bash",
                2,
                "command_arg",
            ),
            (
                "[tools]\nBash = { class = \"writ\" }\n",
                "tools.Bash.class",
                2,
                "is not one of",
            ),
            (
                "[tools]\nBash = { class = \"write\", arg = \"command\" }\n",
                "tools.Bash",
                2,
                "unknown key",
            ),
            ("[tools]\nBash = 3\n", "tools.Bash", 2, "a class"),
        ];
        for (raw, key, line, needle) in cases {
            let e = parse(raw).unwrap_err();
            assert!(e.key.starts_with(key), "{raw}: {e}");
            assert_eq!(e.line, Some(*line), "{raw}: {e}");
            assert!(e.message.contains(needle), "{raw}: {e}");
        }
    }

    #[test]
    fn tools_take_a_class_or_a_table_naming_the_command_argument() {
        let c = Config::parse(
            "[tools]\nRead = \"read-only\"\nBash = { class = \"write\", command_arg = \"command\" }\n",
            std::path::Path::new("/etc/gatebot/bot.toml"),
        )
        .unwrap();
        assert_eq!(c.policy.tool_class("Bash"), ToolClass::Write);
        assert_eq!(c.policy.tool_class("Read"), ToolClass::ReadOnly);
        assert_eq!(
            c.trust.shell_tools.get("Bash").map(String::as_str),
            Some("command")
        );
        assert!(!c.trust.shell_tools.contains_key("Read"));
    }
}
