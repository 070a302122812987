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
    println!("  workflow:        {}", workflow(&c.workflow.default));
    for (name, a) in &c.agents {
        let own = c
            .workflow
            .agents
            .get(name)
            .map(|w| format!("; workflow {}", workflow(w)))
            .unwrap_or_default();
        println!(
            "  agent {name}: {}{}{own}",
            a.rules.tier.as_str(),
            if a.token.is_some() { ", token set" } else { "" }
        );
    }
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
