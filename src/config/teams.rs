//! `[groups.NAME]` and `[[approval_rules]]`: who is asked about which requests, and how
//! many of them must agree (docs/teams.md).
//!
//! ```toml
//! [groups.oncall]
//! people = ["alice", "bob"]
//!
//! [[approval_rules]]
//! name = "deploys"
//! agent = "deployer"            # a value or a list; absent: any
//! risk_at_least = "high"
//! ask = ["oncall"]
//! approvals = 2                 # distinct people (default 1)
//! denials = 1                   # a deny from this many ends it, denied (default 1)
//! self_approval = false         # who handed over the task cannot approve its requests
//! ```
//!
//! Rules are tried in order and the first that matches a request that asks a human is
//! its rule; a request no rule matches is asked as before (every approver, the first
//! answer decides). A group names people of `[people]`; only the people of the groups a
//! rule asks may decide its requests.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

use super::people::People;
use super::ConfigError;
use crate::inbox::Intent;
use crate::policy::{RiskScore, Tier};
use crate::settings::Resolve;

/// The shortest `repeat` of an escalation level.
const MIN_REPEAT: std::time::Duration = std::time::Duration::from_secs(1);

/// `[groups]` and `[[approval_rules]]`, resolved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Teams {
    pub groups: BTreeMap<String, Group>,
    pub rules: Vec<ApprovalRule>,
    /// `[step_up] window`: after a confirmed code, how long a person approves requests
    /// that need a second factor on the same surface without another (each use
    /// renews it).
    pub step_up_window: std::time::Duration,
}

/// `[step_up] window`'s default.
pub const STEP_UP_WINDOW: std::time::Duration = std::time::Duration::from_secs(5 * 60);

/// A group of people asked together.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Group {
    /// Names of `[people]`, sorted, each once.
    pub people: Vec<String>,
    /// Where its prompts go on each platform (`telegram` → a chat id, `slack` → a
    /// channel id); on a platform without one, each of its people's private chat.
    pub chats: BTreeMap<String, String>,
}

/// One `[[approval_rules]]` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRule {
    /// Its `name`, else "rule N" (N counts from 1 in file order).
    pub name: String,
    /// What it matches; an empty list matches any.
    pub agents: Vec<String>,
    pub tools: Vec<String>,
    pub risk_at_least: Option<RiskScore>,
    pub tiers: Vec<Tier>,
    pub intents: Vec<Intent>,
    pub in_task: Option<bool>,
    /// The groups asked, in the file's order.
    pub ask: Vec<String>,
    /// Distinct people whose approval approves it.
    pub approvals: u32,
    /// Distinct people whose denial denies it (deny wins).
    pub denials: u32,
    /// Whether the person who handed over a request's task may approve it.
    pub self_approval: bool,
    /// Unanswered this long after it was made, a request is denied.
    pub deadline: Option<std::time::Duration>,
    /// Unsettled this long after it was made, the people asked who have not voted are
    /// reminded where they were asked.
    pub remind_after: Option<std::time::Duration>,
    /// More groups asked as time passes, in order of `after`.
    pub escalation: Vec<Escalation>,
    /// Whether approving needs a second factor.
    pub step_up: StepUp,
}

/// One `[[approval_rules.escalation]]` level: unsettled `after` this long from the
/// request's creation, it is put to `ask`'s groups too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escalation {
    pub after: std::time::Duration,
    pub ask: Vec<String>,
    /// Once reached, its people are reminded this often until the deadline.
    pub repeat: Option<std::time::Duration>,
}

/// Whether approving a rule's requests needs a second factor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StepUp {
    /// Critical risk does, once anyone has enrolled a factor.
    #[default]
    Critical,
    Always,
    Never,
}

/// What a rule is matched on: the request as it is asked.
#[derive(Debug, Clone, Copy)]
pub struct RuleFacts<'a> {
    pub agent: &'a str,
    pub tool: &'a str,
    pub risk: RiskScore,
    /// The agent's tier in force.
    pub tier: Tier,
    /// The intent of the task the request belongs to, if it belongs to one.
    pub intent: Option<Intent>,
}

impl ApprovalRule {
    /// Whether the rule matches a request with `facts`.
    #[must_use]
    pub fn matches(&self, facts: &RuleFacts<'_>) -> bool {
        let any = |list: &[String], v: &str| list.is_empty() || list.iter().any(|x| x == v);
        any(&self.agents, facts.agent)
            && any(&self.tools, facts.tool)
            && self.risk_at_least.is_none_or(|r| facts.risk >= r)
            && (self.tiers.is_empty() || self.tiers.contains(&facts.tier))
            && (self.intents.is_empty() || facts.intent.is_some_and(|i| self.intents.contains(&i)))
            && self.in_task.is_none_or(|t| t == facts.intent.is_some())
    }

    /// Whether every request this rule matches, `earlier` matches too (so this one,
    /// after it, never applies).
    fn shadowed_by(&self, earlier: &ApprovalRule) -> bool {
        fn covers<T: PartialEq>(earlier: &[T], later: &[T]) -> bool {
            earlier.is_empty() || (!later.is_empty() && later.iter().all(|v| earlier.contains(v)))
        }
        let intents_covered = covers(&earlier.intents, &self.intents)
            // A rule that names intents matches only requests in a task.
            || (earlier.intents.is_empty() && self.intents.is_empty());
        covers(&earlier.agents, &self.agents)
            && covers(&earlier.tools, &self.tools)
            && earlier.risk_at_least.unwrap_or(RiskScore::Low)
                <= self.risk_at_least.unwrap_or(RiskScore::Low)
            && covers(&earlier.tiers, &self.tiers)
            && intents_covered
            && (earlier.in_task.is_none()
                || earlier.in_task == self.in_task
                || (earlier.in_task == Some(true) && !self.intents.is_empty()))
    }
}

impl Teams {
    /// Where prompts to `groups` go on `platform`, and who of them is asked in each
    /// chat: each group's own chat there, or its people's private chats (their identity
    /// on the platform, which is the chat id of their private chat with the bot);
    /// sorted by chat, each chat once with its people sorted.
    #[must_use]
    pub fn places(
        &self,
        groups: &[String],
        platform: &str,
        people: &People,
    ) -> BTreeMap<String, BTreeSet<String>> {
        let mut places: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for g in groups.iter().filter_map(|g| self.groups.get(g)) {
            match g.chats.get(platform) {
                Some(chat) => places
                    .entry(chat.clone())
                    .or_default()
                    .extend(g.people.iter().cloned()),
                None => {
                    for p in &g.people {
                        if let Some(chat) = people.identity(p, platform) {
                            places
                                .entry(chat.to_string())
                                .or_default()
                                .insert(p.clone());
                        }
                    }
                }
            }
        }
        places
    }

    /// The first rule that matches `facts`, if any.
    #[must_use]
    pub fn rule_for(&self, facts: &RuleFacts<'_>) -> Option<&ApprovalRule> {
        self.rules.iter().find(|r| r.matches(facts))
    }

    /// The people of `groups` (a rule's `ask`, or an escalation level's): every person
    /// of them, sorted, each once.
    #[must_use]
    pub fn asked(&self, groups: &[String]) -> Vec<String> {
        let people: BTreeSet<&String> = groups
            .iter()
            .filter_map(|g| self.groups.get(g))
            .flat_map(|g| &g.people)
            .collect();
        people.into_iter().cloned().collect()
    }
}

impl ApprovalRule {
    /// Whether it matches on the tool, the task's intent or being in a task, which a
    /// request's agent, tier and risk do not tell.
    fn conditional(&self) -> bool {
        !self.tools.is_empty() || !self.intents.is_empty() || self.in_task.is_some()
    }

    /// "\"deploys\": 2 approvals of alice, bob or carol".
    fn said(&self, teams: &Teams) -> String {
        let asked = teams.asked(&self.ask);
        let many = match self.approvals {
            1 => "1 approval".to_string(),
            n => format!("{n} approvals"),
        };
        let mut s = format!("\"{}\": {many} of {}", self.name, asked.join(", "));
        if self.denials > 1 {
            s.push_str(&format!(", {} denials deny", self.denials));
        }
        if !self.self_approval {
            s.push_str(", not by whoever handed over the task");
        }
        match self.step_up {
            StepUp::Always => s.push_str(", each with a second factor"),
            StepUp::Never => {}
            StepUp::Critical if self.risk_at_least == Some(RiskScore::Critical) => {
                s.push_str(", each with a second factor once anyone has one");
            }
            StepUp::Critical => {}
        }
        s
    }

    /// What it matches besides agent, tier and risk: "send_email, post", "in a task".
    fn condition(&self) -> String {
        let mut parts = Vec::new();
        if !self.tools.is_empty() {
            parts.push(self.tools.join(", "));
        }
        if !self.intents.is_empty() {
            let i: Vec<&str> = self.intents.iter().map(|i| i.as_str()).collect();
            parts.push(format!("tasks of intent {}", i.join(", ")));
        }
        match self.in_task {
            Some(true) if self.intents.is_empty() => parts.push("in a task".into()),
            Some(false) => parts.push("outside tasks".into()),
            _ => {}
        }
        parts.join(", ")
    }
}

impl Teams {
    /// Who decides an agent's requests at `risk` under `tier`, in words: the rules that
    /// match only some tools or tasks (each with what it matches), then the one that
    /// matches the rest, or the first answer of any approver.
    #[must_use]
    pub fn effective(&self, agent: &str, tier: Tier, risk: RiskScore) -> String {
        let mut said = Vec::new();
        for r in &self.rules {
            let facts = RuleFacts {
                agent,
                tool: "",
                risk,
                tier,
                intent: None,
            };
            let general = ApprovalRule {
                tools: Vec::new(),
                intents: Vec::new(),
                in_task: None,
                ..r.clone()
            };
            if !general.matches(&facts) {
                continue;
            }
            if r.conditional() {
                said.push(format!("for {}: {}", r.condition(), r.said(self)));
            } else {
                said.push(r.said(self));
                return said.join("; otherwise ");
            }
        }
        said.push("the first answer of any approver".into());
        said.join("; otherwise ")
    }
}

/// A value or a list of them (`agent = "mailer"`, `agent = ["mailer", "intern"]`).
#[derive(Debug)]
pub(crate) struct OneOrMany<T>(pub(crate) Vec<T>);

impl<T> Default for OneOrMany<T> {
    fn default() -> Self {
        OneOrMany(Vec::new())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Values<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for Values<T> {
            type Value = OneOrMany<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a value or a list of values")
            }

            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                T::deserialize(de::value::StrDeserializer::<E>::new(s)).map(|v| OneOrMany(vec![v]))
            }

            fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Self::Value, S::Error> {
                let mut out = Vec::new();
                while let Some(v) = seq.next_element()? {
                    out.push(v);
                }
                Ok(OneOrMany(out))
            }
        }

        d.deserialize_any(Values(PhantomData))
    }
}

/// `[groups.NAME]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct FileGroup {
    people: Vec<String>,
    telegram_chat: Option<i64>,
    slack_channel: Option<String>,
}

/// `[[approval_rules]]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileRule {
    name: Option<String>,
    #[serde(default)]
    agent: OneOrMany<String>,
    #[serde(default)]
    tool: OneOrMany<String>,
    risk_at_least: Option<RiskScore>,
    #[serde(default)]
    tier: OneOrMany<Tier>,
    #[serde(default)]
    intent: OneOrMany<Intent>,
    in_task: Option<bool>,
    #[serde(default)]
    ask: OneOrMany<String>,
    #[serde(default = "one")]
    approvals: i64,
    #[serde(default = "one")]
    denials: i64,
    #[serde(default = "yes")]
    self_approval: bool,
    #[serde(default, deserialize_with = "crate::settings::de_duration_opt")]
    deadline: Option<std::time::Duration>,
    #[serde(default, deserialize_with = "crate::settings::de_duration_opt")]
    remind_after: Option<std::time::Duration>,
    #[serde(default)]
    escalation: Vec<FileEscalation>,
    step_up: Option<bool>,
}

/// `[step_up]` as written.
#[derive(Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct FileStepUp {
    #[serde(deserialize_with = "crate::settings::de_duration")]
    window: std::time::Duration,
}

impl Default for FileStepUp {
    fn default() -> Self {
        FileStepUp {
            window: STEP_UP_WINDOW,
        }
    }
}

/// `[[approval_rules.escalation]]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileEscalation {
    #[serde(deserialize_with = "crate::settings::de_duration")]
    after: std::time::Duration,
    ask: OneOrMany<String>,
    #[serde(default, deserialize_with = "crate::settings::de_duration_opt")]
    repeat: Option<std::time::Duration>,
}

fn one() -> i64 {
    1
}

fn yes() -> bool {
    true
}

impl Resolve<'_> {
    /// A rule's escalation levels, checked: groups that exist, each level later than the
    /// one before it and sooner than the deadline.
    fn escalation(
        &self,
        table: &str,
        levels: Vec<FileEscalation>,
        deadline: Option<std::time::Duration>,
        teams: &Teams,
        errors: &mut Vec<ConfigError>,
    ) -> Vec<Escalation> {
        let mut out: Vec<Escalation> = Vec::new();
        for (n, l) in levels.into_iter().enumerate() {
            let key = format!("escalation[{}]", n + 1);
            let before = out.last().map(|e| e.after);
            if l.after < std::time::Duration::from_secs(1)
                || before.is_some_and(|b| l.after <= b)
                || deadline.is_some_and(|d| l.after >= d)
            {
                errors.push(self.error(
                    table,
                    &key,
                    format!(
                    "`after` ({}) must be at least 1s, later than the level before it and sooner \
                     than the rule's deadline",
                    crate::time::format_duration(l.after)
                ),
                ));
                continue;
            }
            if l.ask.0.is_empty() {
                errors.push(self.error(
                    table,
                    &key,
                    "asks nobody: name the groups, like ask = [\"leads\"]",
                ));
                continue;
            }
            let missing: Vec<&String> = l
                .ask
                .0
                .iter()
                .filter(|g| !teams.groups.contains_key(*g))
                .collect();
            if let Some(g) = missing.first() {
                errors.push(self.error(
                    table,
                    &key,
                    format!(
                        "there is no group `{}`: add a [groups.{}] table with its people",
                        crate::names::visible(g),
                        crate::names::visible(g)
                    ),
                ));
                continue;
            }
            if let Some(r) = l.repeat {
                if r < MIN_REPEAT {
                    errors.push(self.error(
                        table,
                        &format!("{key}.repeat"),
                        format!(
                            "must be at least {}: the level's people are reminded this often",
                            crate::time::format_duration(MIN_REPEAT)
                        ),
                    ));
                    continue;
                }
            }
            out.push(Escalation {
                after: l.after,
                ask: l.ask.0,
                repeat: l.repeat,
            });
        }
        out
    }

    /// `[groups]` and `[[approval_rules]]`, checked against `[people]`; what can never
    /// apply (an empty group, a rule an earlier one always wins over) is a warning.
    pub(super) fn teams(
        &self,
        (groups, rules, step_up): (BTreeMap<String, FileGroup>, Vec<FileRule>, FileStepUp),
        people: &People,
        max_ttl: std::time::Duration,
        warnings: &mut Vec<String>,
        errors: &mut Vec<ConfigError>,
    ) -> Teams {
        let mut teams = Teams {
            step_up_window: step_up.window,
            ..Teams::default()
        };
        if step_up.window > std::time::Duration::from_secs(24 * 3600) {
            errors.push(self.error(
                "step_up",
                "window",
                "must be at most 24h: a confirmed code stands in for a fresh one only briefly",
            ));
        }
        for (name, g) in groups {
            let table = format!("groups.{name}");
            if !crate::names::valid_agent_name(&name) {
                errors.push(self.error(
                    "groups",
                    &name,
                    format!(
                    "`{name}` is not a group name: letters, digits, `-`, `_` and `.`, at most 64"
                ),
                ));
                continue;
            }
            let mut members = BTreeSet::new();
            for p in g.people {
                if people.names.contains(&p) {
                    members.insert(p);
                } else {
                    errors.push(self.error(
                        &table,
                        "people",
                        format!(
                            "`{}` is not a person of [people]: add a [people.NAME] table for them \
                         (their Telegram, Slack or local account) first",
                            crate::names::visible(&p)
                        ),
                    ));
                }
            }
            if members.is_empty() {
                warnings.push(format!(
                    "[groups.{name}] has nobody in it: a rule that asks only it can never be \
                     approved; add people = [...]"
                ));
            }
            let mut chats = BTreeMap::new();
            if let Some(chat) = g.telegram_chat {
                chats.insert("telegram".to_string(), chat.to_string());
            }
            if let Some(channel) = g.slack_channel.map(|c| c.trim().to_string()) {
                let ok = channel.len() >= 2
                    && channel.len() <= 32
                    && matches!(channel.as_bytes()[0], b'C' | b'G')
                    && channel
                        .bytes()
                        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
                if ok {
                    chats.insert("slack".to_string(), channel);
                } else {
                    errors.push(self.error(
                        &table,
                        "slack_channel",
                        format!(
                            "`{}` is not a Slack channel id (like C0123ABCD)",
                            crate::names::visible(&channel)
                        ),
                    ));
                }
            }
            teams.groups.insert(
                name,
                Group {
                    people: members.into_iter().collect(),
                    chats,
                },
            );
        }
        for (i, r) in rules.into_iter().enumerate() {
            if let Some(rule) = self.rule(i, r, &teams, max_ttl, errors) {
                teams.rules.push(rule);
            }
        }
        for (i, later) in teams.rules.iter().enumerate() {
            if let Some(earlier) = teams.rules[..i].iter().find(|e| later.shadowed_by(e)) {
                warnings.push(format!(
                    "approval rule \"{}\" never applies: \"{}\" comes before it and matches \
                     every request it would; move it up or narrow the earlier one",
                    later.name, earlier.name
                ));
            }
        }
        teams
    }

    /// One rule, checked: what it asks exists and can reach its thresholds.
    fn rule(
        &self,
        i: usize,
        r: FileRule,
        teams: &Teams,
        max_ttl: std::time::Duration,
        errors: &mut Vec<ConfigError>,
    ) -> Option<ApprovalRule> {
        let name = r
            .name
            .map(|n| n.trim().to_string())
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| format!("rule {}", i + 1));
        let table = format!("approval_rules[{}]", i + 1);
        let before = errors.len();
        for a in &r.agent.0 {
            if !crate::names::valid_agent_name(a) {
                errors.push(self.error(
                    &table,
                    "agent",
                    format!(
                        "`{}` is not an agent name (letters, digits, '-', '_' or '.')",
                        crate::names::visible(a)
                    ),
                ));
            }
        }
        if r.ask.0.is_empty() {
            errors.push(self.error(
                &table,
                "ask",
                format!(
                    "rule \"{name}\" asks nobody: name the groups asked, like ask = [\"oncall\"]"
                ),
            ));
        }
        for g in &r.ask.0 {
            if !teams.groups.contains_key(g) {
                errors.push(self.error(
                    &table,
                    "ask",
                    format!(
                        "there is no group `{}`: add a [groups.{}] table with its people",
                        crate::names::visible(g),
                        crate::names::visible(g)
                    ),
                ));
            }
        }
        if let Some(d) = r.deadline {
            if d < std::time::Duration::from_secs(1) || d > max_ttl {
                errors.push(self.error(
                    &table,
                    "deadline",
                    format!(
                    "must be from 1s to the longest a request may wait ([policy] max_ttl, {}): \
                     a routed request waits for its deadline, then is denied",
                    crate::time::format_duration(max_ttl)
                ),
                ));
            }
        }
        if let Some(remind) = r.remind_after {
            let first_level = r.escalation.first().map(|l| l.after);
            if remind < std::time::Duration::from_secs(1)
                || r.deadline.is_some_and(|d| remind >= d)
                || remind > max_ttl
            {
                errors.push(self.error(
                    &table,
                    "remind_after",
                    format!(
                        "must be at least 1s and sooner than the rule's deadline (and than the \
                         longest a request may wait, {})",
                        crate::time::format_duration(max_ttl)
                    ),
                ));
            } else if first_level.is_some_and(|f| remind >= f) {
                errors.push(self.error(
                    &table,
                    "remind_after",
                    "must be sooner than the first escalation level's `after`: the people \
                     first asked are reminded before more are asked",
                ));
            }
        }
        let mut rule = ApprovalRule {
            name,
            agents: r.agent.0,
            tools: r.tool.0,
            risk_at_least: r.risk_at_least,
            tiers: r.tier.0,
            intents: r.intent.0,
            in_task: r.in_task,
            ask: r.ask.0,
            approvals: 1,
            denials: 1,
            self_approval: r.self_approval,
            deadline: r.deadline,
            remind_after: r.remind_after,
            step_up: match r.step_up {
                None => StepUp::Critical,
                Some(true) => StepUp::Always,
                Some(false) => StepUp::Never,
            },
            escalation: self.escalation(&table, r.escalation, r.deadline, teams, errors),
        };
        let asked = teams.asked(&rule.ask).len() as i64;
        for (key, n) in [("approvals", r.approvals), ("denials", r.denials)] {
            if n < 1 {
                errors.push(self.error(&table, key, "must be at least 1"));
            } else if errors.len() == before && asked > 0 && n > asked {
                errors.push(self.error(
                    &table,
                    key,
                    format!(
                        "rule \"{}\" needs {n} people but asks {asked}: it could never be decided \
                     that way; ask more people or lower {key}",
                        rule.name
                    ),
                ));
            }
        }
        rule.approvals = u32::try_from(r.approvals.max(1)).unwrap_or(u32::MAX);
        rule.denials = u32::try_from(r.denials.max(1)).unwrap_or(u32::MAX);
        (errors.len() == before).then_some(rule)
    }
}

#[cfg(test)]
mod tests {
    use crate::config::parse_in_etc as parse;

    const PEOPLE: &str = "[people.alice]\nunix = \"alice\"\n[people.bob]\nunix = \"bob\"\n\
                          [people.carol]\nunix = \"carol\"\n";

    fn errors(toml: &str) -> String {
        match crate::config::Config::check_text(
            &format!("{PEOPLE}{toml}"),
            std::path::Path::new("/etc/gatebot/bot.toml"),
        ) {
            Ok(_) => String::new(),
            Err(e) => e
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    #[test]
    fn rules_and_groups_resolve_and_the_first_match_wins() {
        let c = parse(&format!(
            "{PEOPLE}[groups.oncall]\npeople = [\"bob\", \"alice\", \"bob\"]\n\
             [groups.leads]\npeople = [\"carol\"]\n\
             [[approval_rules]]\nname = \"deploys\"\nagent = \"deployer\"\nrisk_at_least = \"high\"\n\
             ask = [\"oncall\", \"leads\"]\napprovals = 2\nself_approval = false\n\
             [[approval_rules]]\ntool = [\"send_email\", \"post\"]\nask = \"oncall\"\n"
        ))
        .unwrap();
        let t = &c.teams;
        assert_eq!(t.groups["oncall"].people, ["alice", "bob"]);
        let deploys = &t.rules[0];
        assert_eq!(
            (deploys.approvals, deploys.denials, deploys.self_approval),
            (2, 1, false)
        );
        assert_eq!(t.asked(&deploys.ask), ["alice", "bob", "carol"]);
        assert_eq!(t.rules[1].name, "rule 2");
        let facts = |agent, tool, risk| super::RuleFacts {
            agent,
            tool,
            risk,
            tier: crate::policy::Tier::Supervised,
            intent: None,
        };
        use crate::policy::RiskScore::{High, Low};
        let name = |f| t.rule_for(&f).map(|r| r.name.clone());
        assert_eq!(
            name(facts("deployer", "Bash", High)).as_deref(),
            Some("deploys")
        );
        assert_eq!(name(facts("deployer", "Bash", Low)), None);
        assert_eq!(
            name(facts("deployer", "post", Low)).as_deref(),
            Some("rule 2")
        );
        assert_eq!(name(facts("mailer", "Bash", High)), None);
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }

    #[test]
    fn intent_and_in_task_match_only_requests_in_a_task() {
        let c = parse(&format!(
            "{PEOPLE}[groups.g]\npeople = [\"alice\"]\n\
             [[approval_rules]]\nintent = \"code_change\"\nask = \"g\"\n\
             [[approval_rules]]\nin_task = false\ntier = [\"supervised\", \"semi_autonomous\"]\nask = \"g\"\n"
        ))
        .unwrap();
        let facts = |intent, tier| super::RuleFacts {
            agent: "a",
            tool: "t",
            risk: crate::policy::RiskScore::Low,
            tier,
            intent,
        };
        use crate::inbox::Intent::{CodeChange, Research};
        use crate::policy::Tier::{Autonomous, Supervised};
        let t = &c.teams;
        let name = |f| t.rule_for(&f).map(|r| r.name.clone());
        assert_eq!(
            name(facts(Some(CodeChange), Supervised)).as_deref(),
            Some("rule 1")
        );
        assert_eq!(name(facts(Some(Research), Supervised)), None);
        assert_eq!(name(facts(None, Supervised)).as_deref(), Some("rule 2"));
        assert_eq!(name(facts(None, Autonomous)), None);
    }

    #[test]
    fn mistakes_are_named_with_what_to_change() {
        let cases = [
            ("[groups.g]\npeople = [\"dave\"]\n", "`dave` is not a person of [people]"),
            ("[[approval_rules]]\nask = \"nobody\"\n", "there is no group `nobody`"),
            ("[groups.g]\npeople = [\"alice\"]\n[[approval_rules]]\n", "asks nobody"),
            (
                "[groups.g]\npeople = [\"alice\"]\n[[approval_rules]]\nask = \"g\"\napprovals = 2\n",
                "needs 2 people but asks 1",
            ),
            (
                "[groups.g]\npeople = [\"alice\"]\n[[approval_rules]]\nask = \"g\"\ndenials = 0\n",
                "must be at least 1",
            ),
            (
                "[groups.g]\npeople = [\"alice\"]\n[[approval_rules]]\nask = \"g\"\nrisk_at_least = \"huge\"\n",
                "huge",
            ),
            (
                "[groups.g]\npeople = [\"alice\"]\n[[approval_rules]]\nask = \"g\"\ncolour = 1\n",
                "colour",
            ),
        ];
        for (toml, want) in cases {
            let e = errors(toml);
            assert!(e.contains(want), "{toml}: {e}");
        }
    }

    #[test]
    fn a_rule_that_can_never_apply_and_an_empty_group_are_warned_about() {
        let c = parse(&format!(
            "{PEOPLE}[groups.g]\npeople = [\"alice\"]\n[groups.empty]\n\
             [[approval_rules]]\nname = \"mail\"\ntool = \"send_email\"\nask = \"g\"\n\
             [[approval_rules]]\nname = \"risky mail\"\ntool = \"send_email\"\nrisk_at_least = \"high\"\nask = \"g\"\n\
             [[approval_rules]]\nname = \"risky anything\"\nrisk_at_least = \"high\"\nask = \"g\"\n"
        ))
        .unwrap();
        let w = c.warnings.join("\n");
        assert!(
            w.contains("\"risky mail\" never applies: \"mail\" comes before it"),
            "{w}"
        );
        assert!(!w.contains("\"risky anything\" never"), "{w}");
        assert!(w.contains("[groups.empty] has nobody in it"), "{w}");
    }

    #[test]
    fn reminders_come_before_the_first_level_and_the_deadline_and_repeats_are_read() {
        let base = "[groups.oncall]\npeople = [\"alice\"]\n[groups.leads]\npeople = [\"bob\"]\n\
                    [[approval_rules]]\nname = \"x\"\nask = \"oncall\"\ndeadline = \"1h\"\n";
        let level = "[[approval_rules.escalation]]\nafter = \"10m\"\nask = \"leads\"\n";
        let c = parse(&format!(
            "{PEOPLE}{base}remind_after = \"5m\"\n{level}repeat = \"15m\"\n"
        ))
        .unwrap();
        let r = &c.teams.rules[0];
        assert_eq!(r.remind_after, Some(std::time::Duration::from_secs(300)));
        assert_eq!(
            r.escalation[0].repeat,
            Some(std::time::Duration::from_secs(900))
        );
        for (extra, said) in [
            ("remind_after = \"2h\"\n", "sooner than the rule's deadline"),
            ("remind_after = \"0s\"\n", "longer than zero"),
            (
                &format!("remind_after = \"20m\"\n{level}") as &str,
                "sooner than the first escalation level",
            ),
            (
                &format!("{level}repeat = \"0s\"\n") as &str,
                "longer than zero",
            ),
        ] {
            let e = errors(&format!("{base}{extra}"));
            assert!(e.contains(said), "{extra}: {e}");
        }
    }
}
