//! `gatebot check-config [--telegram]`: validate the config and explain every error.

use std::path::Path;

use super::out::outln;
use super::EXIT_GO;
use crate::config::{AgentConfig, Config, ConfigError};
use crate::policy::RiskScore;
use crate::telegram::TelegramConfig;
use crate::time::format_duration;
use crate::trust::TierOverride;

pub(super) async fn run(path: &Path, telegram: bool) -> Result<u8, String> {
    let config = check(path)?;
    // With --telegram the token is part of what is checked: "ok" is printed only once
    // every check passed, so an "ok" never comes before an error and exit code 2.
    let bot = if telegram {
        Some(check_telegram(&config).await?)
    } else {
        None
    };
    print_summary(path, &config);
    if let Some(bot) = bot {
        outln!("  telegram:        ok, the token belongs to @{bot}");
    }
    Ok(EXIT_GO)
}

fn check(path: &Path) -> Result<Config, String> {
    Config::check(path).map_err(|errors| every_error(path, &errors))
}

/// One line per error, each with its file, line and key path, in file order, then how
/// many (the caller writes `error: ` before the first line).
fn every_error(path: &Path, errors: &[ConfigError]) -> String {
    let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
    format!(
        "{}\n{}: {}",
        lines.join("\nerror: "),
        path.display(),
        crate::config::count_errors(errors.len())
    )
}

/// What a valid config sets up: files, sockets, policy, agents, chat channels.
fn print_summary(path: &Path, c: &Config) {
    outln!("{}: ok", path.display());
    outln!("  database:        {}", c.store.shown());
    outln!("  agent socket:    {}", c.queue.socket.display());
    outln!("  control socket:  {}", c.queue.control_socket.display());
    if let Some(l) = &c.queue.listen {
        outln!("  TCP listener:    {l} (agents must send their token)");
    }
    // Values as bot.toml writes them, so they can be pasted back.
    outln!(
        "  policy:          tool_approval_mode = \"{}\", default_ttl = \"{}\", max_ttl = \"{}\", unknown_agents = \"{}\"",
        c.policy.tool_approval_mode.as_str(),
        format_duration(c.default_ttl),
        format_duration(c.max_ttl),
        c.unknown_agents.as_str()
    );
    outln!("  workflow:        {}", workflow(&c.workflow.default));
    print_agents(c);
    print_rules(c);
    for (tool, arg) in &c.trust.shell_tools {
        outln!("  shell-like tool {tool}: its command is in `{arg}` (scoped grants)");
    }
    let p = &c.trust.promotion;
    outln!(
        "  promotion:       {}, proposals declined stay quiet for {}",
        if p.scheduled {
            format!("assessed every {}", format_duration(p.every))
        } else {
            "assessed on demand only".to_string()
        },
        format_duration(p.decline_quiet)
    );
    for p in &c.platforms {
        // In the column of the lines above ("  database:        ").
        outln!("  {:<17}{}", format!("{}:", p.key()), p.summary_line());
    }
    for note in &c.notes {
        outln!("  note: {note}");
    }
    for warning in &c.warnings {
        outln!("  warning: {warning}");
    }
    if c.platforms.is_empty() {
        outln!("  chat channels:   none on; owners decide with `gatebot decide`");
    }
}

/// One line per agent: its tier in force (an owner's override, when the database holds
/// one), its pause, whether its token is set, and its own workflow if it has one.
fn print_agents(c: &Config) {
    let peeked = if c.store.postgres.is_some() {
        outln!(
            "  note: owners' tiers and pauses are in PostgreSQL, which check-config does \
             not sign in to; the tiers below are bot.toml's"
        );
        Ok(None)
    } else {
        crate::engine::peek_trust(&c.store.path)
    };
    let (overrides, pauses) = match peeked {
        Ok(found) => found.unwrap_or_default(),
        Err(e) => {
            outln!(
                "  note: cannot read the database for owners' tiers and pauses ({e}); \
                 the tiers below are bot.toml's"
            );
            Default::default()
        }
    };
    for (name, a) in &c.agents {
        let own = c
            .workflow
            .agents
            .get(name)
            .map(|w| format!("; workflow {}", workflow(w)))
            .unwrap_or_default();
        let tier = tier_in_force(a, overrides.iter().find(|o| &o.agent == name));
        let paused = pauses
            .iter()
            .find(|p| &p.agent == name)
            .map(|p| format!(", {}", p.describe()))
            .unwrap_or_default();
        outln!(
            "  agent {name}: {tier}{paused}{}{own}",
            if a.token.is_some() { ", token set" } else { "" }
        );
    }
}

/// Who decides each agent's requests at each risk level under `[[approval_rules]]`
/// (bot.toml's tiers), risks with the same answer on one line.
fn print_rules(c: &Config) {
    if c.teams.rules.is_empty() {
        return;
    }
    outln!("  approval rules (the first that matches decides who is asked):");
    let risks = [
        RiskScore::Low,
        RiskScore::Medium,
        RiskScore::High,
        RiskScore::Critical,
    ];
    for (name, a) in &c.agents {
        let mut lines: Vec<(Vec<RiskScore>, String)> = Vec::new();
        for risk in risks {
            let said = c.teams.effective(name, a.rules.tier, risk);
            match lines.last_mut() {
                Some((rs, last)) if *last == said => rs.push(risk),
                _ => lines.push((vec![risk], said)),
            }
        }
        for (rs, said) in lines {
            let span = match rs.as_slice() {
                [one] => one.as_str().to_string(),
                [first, .., last] => format!("{} to {}", first.as_str(), last.as_str()),
                [] => continue,
            };
            outln!("    {name}, {span} risk: {said}");
        }
    }
}

/// The agent's tier in force: an owner's override (who set it, when, and what bot.toml
/// says), else bot.toml's.
fn tier_in_force(a: &AgentConfig, set: Option<&TierOverride>) -> String {
    match set {
        Some(o) => format!(
            "{} (set by {} {}; bot.toml says {})",
            o.tier.as_str(),
            o.by.label(),
            crate::time::clock(o.at),
            a.rules.tier.as_str()
        ),
        None => a.rules.tier.as_str().to_string(),
    }
}

/// "per-phase, warnings up to low, errors up to none, limits 50/20 (stop), check-ins
/// wait 24h".
fn workflow(w: &crate::config::workflow::AgentWorkflow) -> String {
    let (a, l) = (&w.settings.autonomy, &w.settings.limits);
    let overrides = if w.settings.overrides.is_empty() {
        String::new()
    } else {
        let phases: Vec<&str> = w.settings.overrides.keys().map(String::as_str).collect();
        format!(", overrides for {}", phases.join(", "))
    };
    format!(
        "{}, warnings up to {}, errors up to {}, limits {} warnings / {} errors ({}), check-ins wait {}{overrides}",
        a.check_in_frequency.as_str(),
        a.warning_tolerance.as_str(),
        a.error_tolerance.as_str(),
        l.max_total_warnings,
        l.max_total_errors,
        l.on_limit_reached.as_str(),
        format_duration(w.check_in_ttl)
    )
}

/// `check-config --telegram`: one getMe with the configured token and API URL;
/// the bot's username.
async fn check_telegram(config: &Config) -> Result<String, String> {
    let Some(t) = config.platform::<TelegramConfig>() else {
        // The note says why it is off ("off, because the environment variable … is not set").
        let why = config
            .notes
            .iter()
            .find_map(|n| n.strip_prefix("telegram:"))
            .map_or("off: there is no [telegram] table", str::trim);
        return Err(format!(
            "telegram: nothing to check with --telegram: the channel is {why}"
        ));
    };
    match crate::telegram::check(t).await {
        Ok(me) => Ok(me.user.username.unwrap_or_else(|| "?".into())),
        Err(e) => Err(format!("telegram: {e}")),
    }
}
