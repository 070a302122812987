//! `gatebot check-config [--telegram]`: validate the config and explain every error.

use std::path::Path;

use super::EXIT_GO;
use crate::config::Config;
use crate::time::format_duration;

pub(super) async fn run(path: &Path, telegram: bool) -> Result<u8, String> {
    let code = check(path)?;
    if telegram {
        check_telegram(path).await?;
    }
    Ok(code)
}

fn check(path: &Path) -> Result<u8, String> {
    match Config::check(path) {
        Ok(c) => {
            print_summary(path, &c);
            Ok(EXIT_GO)
        }
        // One line per error, each with its file, line and key path.
        Err(errors) => Err(errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\nerror: ")),
    }
}

/// What a valid config sets up: files, sockets, policy, agents, chat channels.
fn print_summary(path: &Path, c: &Config) {
    println!("{}: ok", path.display());
    println!("  database:        {}", c.store.path.display());
    println!("  agent socket:    {}", c.queue.socket.display());
    println!("  control socket:  {}", c.queue.control_socket.display());
    if let Some(l) = &c.queue.listen {
        println!("  TCP listener:    {l} (agents must send their token)");
    }
    println!(
        "  policy:          tool_approval_mode = {:?}, default_ttl = {}, unknown agents: {:?}",
        c.policy.tool_approval_mode,
        format_duration(c.default_ttl),
        c.unknown_agents
    );
    // The tier in force is an owner's override, when the database holds one.
    let (overrides, pauses) = match crate::store::peek_trust(&c.store.path) {
        Ok(found) => found.unwrap_or_default(),
        Err(e) => {
            println!(
                "  note: cannot read the database for owners' tiers and pauses ({e}); \
                 the tiers below are bot.toml's"
            );
            Default::default()
        }
    };
    for (name, a) in &c.agents {
        let tier = match overrides.iter().find(|o| &o.agent == name) {
            Some(o) => format!(
                "{} (set by {} {}; bot.toml says {})",
                o.tier.as_str(),
                o.by.label(),
                crate::time::clock(o.at),
                a.rules.tier.as_str()
            ),
            None => a.rules.tier.as_str().to_string(),
        };
        let paused = pauses
            .iter()
            .find(|p| &p.agent == name)
            .map(|p| format!(", {}", p.describe()))
            .unwrap_or_default();
        println!(
            "  agent {name}: {tier}{paused}{}",
            if a.token.is_some() { ", token set" } else { "" }
        );
    }
    for (tool, arg) in &c.trust.shell_tools {
        println!("  shell-like tool {tool}: its command is in `{arg}` (scoped grants)");
    }
    let p = &c.trust.promotion;
    println!(
        "  promotion:       {}, proposals declined stay quiet for {}",
        if p.scheduled {
            format!("assessed every {}", format_duration(p.every))
        } else {
            "assessed on demand only".to_string()
        },
        format_duration(p.decline_quiet)
    );
    if let Some(t) = &c.telegram {
        println!(
            "  telegram:        {} chat(s), {} approver(s), API {}",
            t.chat.destinations.len(),
            t.chat.approvers.len(),
            t.api_url
        );
    }
    if let Some(s) = &c.slack {
        println!(
            "  slack:           {:?} mode, {} channel(s), {} approver(s), API {}",
            s.mode,
            s.chat.destinations.len(),
            s.chat.approvers.len(),
            s.api_url
        );
    }
    for note in &c.notes {
        println!("  note: {note}");
    }
    if c.telegram.is_none() && c.slack.is_none() {
        println!("  chat channels:   none on; owners decide with `gatebot decide`");
    }
}

/// `check-config --telegram`: one getMe with the configured token and API URL.
async fn check_telegram(path: &Path) -> Result<(), String> {
    let config = Config::load(path).map_err(|e| e.to_string())?;
    let Some(t) = &config.telegram else {
        return Err("telegram is off (no token), so there is nothing to check".into());
    };
    match crate::telegram::check(t).await {
        Ok(me) => {
            println!(
                "  telegram:        ok, the token belongs to @{}",
                me.user.username.as_deref().unwrap_or("?")
            );
            Ok(())
        }
        Err(e) => Err(format!("telegram: {e}")),
    }
}
