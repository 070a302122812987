//! `[limits]` and `[agents.NAME.limits]`: how much each agent may send
//! ([`crate::limits`] counts it).
//!
//! 1. `[limits]` is loaded over [`DEFAULT_LIMITS`]; it is what every agent gets, and
//!    agents without a table of their own share it (one set of buckets for all of them).
//! 2. Each `[agents.NAME.limits]` is loaded over the result, key by key.
//! 3. A rate is `"N/PERIOD"` (`"3000/min"`, `"10/s"`, `"500/10s"`); for `bytes`, N is a
//!    size (`"256MiB/h"`). PERIOD is `s`, `min`, `h`, `d` or a duration from 1s to 1d.
//!    `bytes` must hold at least one body of `queue.max_body_bytes`, or a large call
//!    could never pass. Every error names its key path and line.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use super::queue::parse_size;
use super::ConfigError;
use crate::limits::{Limits, Quota, Rate, DEFAULT_LIMITS};
use crate::settings::Resolve;
use crate::time::parse_duration;

/// Every agent's limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitsConfig {
    /// `[limits]`: for agents without a table of their own.
    pub default: Limits,
    /// `[agents.NAME.limits]`, by agent.
    pub agents: BTreeMap<String, Limits>,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            default: DEFAULT_LIMITS,
            agents: BTreeMap::new(),
        }
    }
}

impl LimitsConfig {
    /// The limits of agent `name`.
    #[must_use]
    pub fn for_agent(&self, name: &str) -> &Limits {
        self.agents.get(name).unwrap_or(&self.default)
    }
}

/// A `[limits]` or `[agents.NAME.limits]` table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct FileLimits {
    requests: Option<String>,
    runs: Option<String>,
    events: Option<String>,
    tasks: Option<String>,
    bytes: Option<String>,
}

/// The longest period a rate may name.
const MAX_PERIOD: Duration = Duration::from_secs(86_400);

/// `"3000/min"` (or, for bytes, `"256MiB/h"`).
fn parse_rate(s: &str, quota: Quota) -> Result<Rate, String> {
    let example = match quota {
        Quota::Bytes => "256MiB/h or 1GB/d",
        _ => "3000/min, 10/s or 500/10s",
    };
    let bad = |why: &str| format!("`{s}` is not a rate like {example}: {why}");
    let (amount, period) = s
        .split_once('/')
        .ok_or_else(|| bad("write how many, a `/` and a period"))?;
    let amount = match quota {
        Quota::Bytes => parse_size(amount).map_err(|e| bad(&e))?,
        _ => amount
            .trim()
            .parse::<u64>()
            .map_err(|_| bad(&format!("`{}` is not a whole number", amount.trim())))?,
    };
    if amount == 0 {
        return Err(bad("it must allow at least 1"));
    }
    let period = period.trim();
    let per = match period {
        "s" | "sec" | "second" => Duration::from_secs(1),
        "m" | "min" | "minute" => Duration::from_secs(60),
        "h" | "hour" => Duration::from_secs(3600),
        "d" | "day" => Duration::from_secs(86_400),
        other => parse_duration(other).map_err(|e| bad(&e))?,
    };
    if per < Duration::from_secs(1) || per > MAX_PERIOD {
        return Err(bad("the period must be from 1s to 1d"));
    }
    Ok(Rate { amount, per })
}

impl Resolve<'_> {
    /// `[limits]` and every `[agents.NAME.limits]` (`per_agent`, by agent).
    pub(super) fn limits(
        &self,
        org: FileLimits,
        per_agent: BTreeMap<String, FileLimits>,
        max_body_bytes: usize,
        errors: &mut Vec<ConfigError>,
    ) -> LimitsConfig {
        let default = self.limits_table("limits", org, &DEFAULT_LIMITS, max_body_bytes, errors);
        let agents = per_agent
            .into_iter()
            .map(|(name, table)| {
                let path = format!("agents.{name}.limits");
                let resolved = self.limits_table(&path, table, &default, max_body_bytes, errors);
                (name, resolved)
            })
            .collect();
        LimitsConfig { default, agents }
    }

    /// One table, loaded over `inherited`.
    fn limits_table(
        &self,
        table: &str,
        file: FileLimits,
        inherited: &Limits,
        max_body_bytes: usize,
        errors: &mut Vec<ConfigError>,
    ) -> Limits {
        let mut limits = *inherited;
        for (quota, value, slot) in [
            (Quota::Requests, file.requests, &mut limits.requests),
            (Quota::Runs, file.runs, &mut limits.runs),
            (Quota::Events, file.events, &mut limits.events),
            (Quota::Tasks, file.tasks, &mut limits.tasks),
            (Quota::Bytes, file.bytes, &mut limits.bytes),
        ] {
            let Some(raw) = value else { continue };
            match parse_rate(&raw, quota) {
                Ok(rate) => *slot = rate,
                Err(e) => errors.push(self.error(table, quota.key(), e)),
            }
        }
        if limits.bytes.amount < max_body_bytes as u64 {
            errors.push(self.error(
                table,
                Quota::Bytes.key(),
                format!(
                    "{} is less than one body of `queue.max_body_bytes` ({max_body_bytes} \
                     bytes): a call that large could never pass",
                    limits.bytes.describe(Quota::Bytes)
                ),
            ));
        }
        limits
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse_in_etc as parse;

    #[test]
    fn without_tables_every_agent_gets_the_defaults() {
        let c = parse("[agents.a]\ntier = \"supervised\"\n").unwrap();
        assert_eq!(*c.limits.for_agent("a"), DEFAULT_LIMITS);
        assert_eq!(*c.limits.for_agent("stranger"), DEFAULT_LIMITS);
    }

    #[test]
    fn an_agents_table_overrides_the_org_key_by_key() {
        let c = parse(
            "[limits]\nrequests = \"100/s\"\nruns = \"5/10s\"\n\
             [agents.a]\ntier = \"supervised\"\n[agents.a.limits]\nruns = \"1/min\"\n\
             bytes = \"1GB/d\"\n",
        )
        .unwrap();
        let org = c.limits.for_agent("other");
        assert_eq!(org.requests, Rate::new(100, Duration::from_secs(1)));
        assert_eq!(org.runs, Rate::new(5, Duration::from_secs(10)));
        let a = c.limits.for_agent("a");
        assert_eq!(a.requests, org.requests, "inherited from [limits]");
        assert_eq!(a.runs, Rate::new(1, Duration::from_secs(60)));
        assert_eq!(
            a.bytes,
            Rate::new(1_000_000_000, Duration::from_secs(86_400))
        );
    }

    #[test]
    fn bad_rates_name_their_key_and_line() {
        for (raw, key, line, says) in [
            (
                "[limits]\nrequests = \"lots\"\n",
                "limits.requests",
                2,
                "a `/`",
            ),
            (
                "[limits]\n\nevents = \"0/s\"\n",
                "limits.events",
                3,
                "at least 1",
            ),
            (
                "[limits]\ntasks = \"10/week\"\n",
                "limits.tasks",
                2,
                "not a duration",
            ),
            (
                "[limits]\nruns = \"10/2d\"\n",
                "limits.runs",
                2,
                "from 1s to 1d",
            ),
            (
                "[limits]\nbytes = \"lots/h\"\n",
                "limits.bytes",
                2,
                "256MiB/h",
            ),
            (
                "[limits]\nbytes = \"1KiB/s\"\n",
                "limits.bytes",
                2,
                "max_body_bytes",
            ),
            (
                "[agents.a]\ntier = \"supervised\"\n[agents.a.limits]\nrequests = \"1.5/s\"\n",
                "agents.a.limits.requests",
                4,
                "whole number",
            ),
        ] {
            let e = parse(raw).unwrap_err();
            assert_eq!((e.key.as_str(), e.line), (key, Some(line)), "{raw}");
            assert!(e.message.contains(says), "{raw}: {}", e.message);
        }
        let e = parse("[limits]\nconnections_typo = \"1/s\"\n").unwrap_err();
        assert!(e.message.contains("unknown key"), "{e}");
    }
}
