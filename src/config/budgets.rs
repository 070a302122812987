//! `[budgets]` and `[budgets.agents.NAME]`: spend limits ([`crate::budget`]).
//!
//! ```toml
//! [budgets]
//! currency = "USD"              # a name shown beside every figure
//! daily = 50                    # everyone together, per day; absent: no limit
//! monthly = 500                 # everyone together, per month
//! warn_at = 0.8                 # owners are told at this share of a budget
//! timezone = "Europe/Berlin"    # days and months are counted in it (UTC by default)
//! [budgets.agents.mailer]
//! daily = 5
//! monthly = 40
//! ```
//!
//! Every figure must be a finite number from 0 to [`crate::budget::MAX_COST`];
//! `warn_at` lies in (0, 1]; the time zone must be an IANA name; an agent's table must
//! name an agent of `[agents]`. Each error names its key and line.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{AgentConfig, ConfigError};
use crate::budget::{valid_cost, Budgets, Limits, MAX_COST};
use crate::settings::Resolve;

/// `[budgets]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct FileBudgets {
    currency: Option<String>,
    daily: Option<f64>,
    monthly: Option<f64>,
    warn_at: Option<f64>,
    timezone: Option<String>,
    agents: BTreeMap<String, FileAgentBudget>,
}

/// `[budgets.agents.NAME]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct FileAgentBudget {
    daily: Option<f64>,
    monthly: Option<f64>,
}

/// Longest currency name.
const MAX_CURRENCY_CHARS: usize = 16;

impl Resolve<'_> {
    /// `[budgets]`, if present; every error recorded in `errors`.
    pub(super) fn budgets(
        &self,
        file: Option<FileBudgets>,
        agents: &BTreeMap<String, AgentConfig>,
        errors: &mut Vec<ConfigError>,
    ) -> Option<Budgets> {
        let file = file?;
        let currency = file.currency.unwrap_or_else(|| "USD".into());
        let currency = currency.trim().to_string();
        if currency.is_empty()
            || currency.chars().count() > MAX_CURRENCY_CHARS
            || currency.chars().any(|c| c.is_control())
        {
            errors.push(self.error(
                "budgets",
                "currency",
                format!(
                    "the currency is a name shown beside figures, 1-{MAX_CURRENCY_CHARS} \
                     characters, like \"USD\" or \"credits\""
                ),
            ));
        }
        let warn_at = file.warn_at.unwrap_or(0.8);
        if !(warn_at > 0.0 && warn_at <= 1.0) {
            errors.push(self.error(
                "budgets",
                "warn_at",
                format!(
                    "{warn_at} is not a share of a budget: write a number above 0 and at most \
                     1, like 0.8 for 80 %"
                ),
            ));
        }
        let timezone_name = file.timezone.unwrap_or_else(|| "UTC".into());
        let timezone = match jiff::tz::TimeZone::get(timezone_name.trim()) {
            Ok(tz) => tz,
            Err(_) => {
                errors.push(self.error(
                    "budgets",
                    "timezone",
                    format!(
                        "`{timezone_name}` is not a time zone gatebot knows: write an IANA \
                         name like \"UTC\", \"Europe/Berlin\" or \"America/New_York\""
                    ),
                ));
                jiff::tz::TimeZone::UTC
            }
        };
        let daily = self.figure("budgets", "daily", file.daily, errors);
        let monthly = self.figure("budgets", "monthly", file.monthly, errors);
        let mut per_agent = BTreeMap::new();
        for (name, table) in file.agents {
            let path = format!("budgets.agents.{name}");
            if !agents.contains_key(&name) {
                errors.push(self.error(
                    &path,
                    "",
                    format!(
                        "no agent `{name}` in [agents]: a budget is for an agent the config \
                         names (add [agents.{name}], or fix the name)"
                    ),
                ));
                continue;
            }
            let limits = Limits {
                daily: self.figure(&path, "daily", table.daily, errors),
                monthly: self.figure(&path, "monthly", table.monthly, errors),
            };
            per_agent.insert(name, limits);
        }
        Some(Budgets {
            currency,
            daily,
            monthly,
            warn_at,
            timezone,
            timezone_name: timezone_name.trim().to_string(),
            agents: per_agent,
        })
    }

    /// A limit: a finite number from 0 to [`MAX_COST`].
    fn figure(
        &self,
        table: &str,
        key: &str,
        value: Option<f64>,
        errors: &mut Vec<ConfigError>,
    ) -> Option<f64> {
        let v = value?;
        if valid_cost(v) {
            return Some(v);
        }
        errors.push(self.error(
            table,
            key,
            format!("{v} is not a budget: write a number from 0 to {MAX_COST:.0}"),
        ));
        None
    }
}

#[cfg(test)]
mod tests {
    use crate::config::parse_in_etc as parse;

    const AGENT: &str = "[agents.mailer]\ntier = \"supervised\"\n";

    #[test]
    fn without_the_table_there_are_no_budgets() {
        assert!(parse(AGENT).unwrap().budgets.is_none());
    }

    #[test]
    fn the_table_is_read_with_its_defaults() {
        let c = parse(&format!(
            "{AGENT}[budgets]\ndaily = 50\nmonthly = 500.5\n[budgets.agents.mailer]\ndaily = 5\n"
        ))
        .unwrap();
        let b = c.budgets.unwrap();
        assert_eq!(
            (b.currency.as_str(), b.daily, b.monthly, b.warn_at),
            ("USD", Some(50.0), Some(500.5), 0.8)
        );
        assert_eq!(b.timezone_name, "UTC");
        assert_eq!(b.agents["mailer"].daily, Some(5.0));
        assert_eq!(b.agents["mailer"].monthly, None);
    }

    #[test]
    fn absurd_values_are_refused_naming_key_and_line() {
        for (table, key, line, says) in [
            ("[budgets]\ndaily = -5\n", "budgets.daily", 4, "from 0 to"),
            (
                "[budgets]\nmonthly = nan\n",
                "budgets.monthly",
                4,
                "NaN is not a budget",
            ),
            (
                "[budgets]\ndaily = inf\n",
                "budgets.daily",
                4,
                "inf is not a budget",
            ),
            (
                "[budgets]\ndaily = 1e300\n",
                "budgets.daily",
                4,
                "from 0 to",
            ),
            ("[budgets]\nwarn_at = 0\n", "budgets.warn_at", 4, "above 0"),
            (
                "[budgets]\nwarn_at = 1.5\n",
                "budgets.warn_at",
                4,
                "at most 1",
            ),
            (
                "[budgets]\ntimezone = \"Mars/Olympus\"\n",
                "budgets.timezone",
                4,
                "IANA",
            ),
            (
                "[budgets]\ncurrency = \"\"\n",
                "budgets.currency",
                4,
                "1-16",
            ),
            (
                "[budgets.agents.ghost]\ndaily = 5\n",
                "budgets.agents.ghost",
                3,
                "no agent `ghost`",
            ),
            (
                "[budgets.agents.mailer]\nmonthly = -1\n",
                "budgets.agents.mailer.monthly",
                4,
                "from 0 to",
            ),
        ] {
            let raw = format!("{AGENT}{table}");
            let e = parse(&raw).unwrap_err();
            assert_eq!((e.key.as_str(), e.line), (key, Some(line)), "{raw}");
            assert!(e.message.contains(says), "{raw}: {}", e.message);
        }
        let e = parse(&format!("{AGENT}[budgets]\nweekly = 5\n")).unwrap_err();
        assert!(e.message.contains("unknown key"), "{e}");
    }
}
