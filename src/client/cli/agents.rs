//! `gatebot agents [recount [--check]]` and `gatebot agent NAME [assess | tier TIER |
//! tier --reset | pause | resume]`: agents' trust from the owner's shell (docs/trust.md).

use clap::Subcommand;
use serde_json::json;

use super::out::outln;
use super::{encode, expect_ok, listing, pretty, EXIT_GO, EXIT_NO};
use crate::client::Client;
use crate::time::clock;
use crate::trust::evidence::{percent, Recount};
use crate::trust::view::{AgentView, AssessOutcome};
use crate::words;

#[derive(Debug, Subcommand)]
pub enum AgentAction {
    /// Run the promotion assessment now; an eligible agent gets a proposal for an
    /// owner to approve (nothing changes by itself).
    Assess,
    /// Set the agent's tier, stored over bot.toml's; `--reset` returns to bot.toml's.
    Tier {
        /// draft_only, supervised, semi_autonomous or autonomous.
        #[arg(required_unless_present = "reset")]
        tier: Option<String>,
        /// Back to the tier bot.toml gives the agent.
        #[arg(long, conflicts_with = "tier")]
        reset: bool,
        /// Why; kept in the audit trail.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Block every new request of the agent until it is resumed.
    Pause {
        /// Also deny every request of the agent that is waiting for a human.
        #[arg(long)]
        deny_pending: bool,
        /// Why; shown to the agent in every refusal and kept in the audit trail.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Lift the agent's pause.
    Resume,
}

#[derive(Debug, Subcommand)]
pub enum AgentsAction {
    /// Count every agent's evidence from its requests again and compare it with the
    /// counts gatebot keeps as requests are written; rebuild those if they differ
    /// (audited). Exit 1 with --check when they differ.
    Recount {
        /// Only say what differs; change nothing.
        #[arg(long)]
        check: bool,
    },
}

/// `gatebot agents recount [--check]`: exit 0 when the kept counts match the requests
/// (or were rebuilt), 1 when `--check` found them different.
pub(super) async fn recount(client: &Client, check: bool, json: bool) -> Result<u8, String> {
    let res = expect_ok(
        client
            .post("/v1/evidence/recount", &json!({"check": check}))
            .await,
    )?;
    let r: Recount = serde_json::from_value(res.body.clone()).map_err(|e| e.to_string())?;
    let code = if check && !r.differed.is_empty() {
        EXIT_NO
    } else {
        EXIT_GO
    };
    if json {
        outln!("{}", pretty(&res.body));
        return Ok(code);
    }
    outln!(
        "Counted the evidence of {} agent(s) again from their {} request(s).",
        r.agents,
        r.requests
    );
    if r.differed.is_empty() {
        outln!("What gatebot keeps matches the requests.");
        return Ok(code);
    }
    outln!(
        "What gatebot keeps differs from the requests for {} agent(s):",
        r.differed.len()
    );
    for d in &r.differed {
        outln!("  {}", d.words());
    }
    if r.rebuilt {
        outln!(
            "Rebuilt what gatebot keeps from the requests; the audit trail records it. \
             Every agent's figures are now counted from its requests."
        );
    } else {
        outln!("Nothing was changed. `gatebot agents recount` rebuilds them from the requests.");
    }
    Ok(code)
}

/// `gatebot agents`.
pub(super) async fn list(client: &Client, json: bool) -> Result<u8, String> {
    let Some(views) = listing::<AgentView>(client, "/v1/agents", "agents", json).await? else {
        return Ok(EXIT_GO);
    };
    if views.is_empty() {
        outln!("No agents are configured.");
        return Ok(EXIT_GO);
    }
    // Within 80 columns: a row of figures per agent, then under it, indented, what the
    // evidence is made of (the same words as the proposal and `gatebot agent NAME`),
    // the pause and the open proposal.
    outln!(
        "{:<16} {:<16} {:<6}  {:>7}  {:>7}  {:>9}  {:>6}",
        "AGENT",
        "TIER",
        "PAUSED",
        "PENDING",
        "HANDLED",
        "WENT WELL",
        "GRANTS"
    );
    for v in &views {
        let m = v.evidence.measures;
        outln!(
            "{:<16} {:<16} {:<6}  {:>7}  {:>7}  {:>9}  {:>6}",
            words::cut(&v.agent, 16),
            v.tier.words(),
            if v.pause.is_some() { "yes" } else { "-" },
            v.pending,
            m.handled,
            percent(m.positive_rate),
            v.grants.len(),
        );
        outln!("  evidence: {}", m.brief());
        if !v.spend.is_empty() {
            outln!("  spend: {}", v.spend.join("; "));
        }
        if let Some(p) = &v.pause {
            outln!("  {}", p.describe());
        }
        if let Some(p) = &v.proposal {
            outln!("  proposal {}: {}", p.short_id, p.question());
        }
    }
    Ok(EXIT_GO)
}

/// `gatebot agent NAME [ACTION]`.
pub(super) async fn run(
    client: &Client,
    name: &str,
    action: Option<AgentAction>,
    json: bool,
) -> Result<u8, String> {
    let base = format!("/v1/agents/{}", encode(name));
    let res = match action {
        None => expect_ok(client.get(&format!("{base}/trust")).await)?,
        Some(AgentAction::Assess) => return assess(client, &base, json).await,
        Some(AgentAction::Tier {
            tier,
            reset: _,
            reason,
        }) => {
            // `--reset` sends null: back to bot.toml's tier (clap requires one of them).
            expect_ok(
                client
                    .post(
                        &format!("{base}/tier"),
                        &json!({"tier": tier, "reason": reason}),
                    )
                    .await,
            )?
        }
        Some(AgentAction::Pause {
            deny_pending,
            reason,
        }) => {
            let body = json!({"deny_pending": deny_pending, "reason": reason});
            let res = expect_ok(client.post(&format!("{base}/pause"), &body).await)?;
            print_paused(name, &res.body, json);
            return Ok(EXIT_GO);
        }
        Some(AgentAction::Resume) => {
            let res = expect_ok(client.post(&format!("{base}/resume"), &json!({})).await)?;
            print_resumed(name, &res.body, json);
            return Ok(EXIT_GO);
        }
    };
    if json {
        outln!("{}", pretty(&res.body));
        return Ok(EXIT_GO);
    }
    let view: AgentView = serde_json::from_value(res.body).map_err(|e| e.to_string())?;
    print_view(&view);
    Ok(EXIT_GO)
}

/// `gatebot agent NAME assess`: the assessment's note, and how to answer a proposal it made.
async fn assess(client: &Client, base: &str, json: bool) -> Result<u8, String> {
    let res = expect_ok(client.post(&format!("{base}/assess"), &json!({})).await)?;
    if json {
        outln!("{}", pretty(&res.body));
        return Ok(EXIT_GO);
    }
    let o: AssessOutcome = serde_json::from_value(res.body).map_err(|e| e.to_string())?;
    outln!("{}", o.note);
    if let Some(p) = o.proposal.filter(|_| o.created) {
        outln!(
            "An owner answers it in chat, or with: gatebot decide {} approve|deny",
            p.short_id
        );
    }
    Ok(EXIT_GO)
}

/// What `gatebot agent NAME pause` did: what a pause holds, what it denied, what waits.
fn print_paused(name: &str, b: &serde_json::Value, json: bool) {
    if json {
        outln!("{}", pretty(b));
        return;
    }
    let verb = if b["new"] == true {
        "paused"
    } else {
        "was already paused"
    };
    outln!(
        "{name} {verb}: its requests are blocked, its tasks wait (running ones were \
         queued again), its workflow runs take no events and its long-polls are \
         answered, until `gatebot agent {name} resume`"
    );
    let denied = b["denied"].as_array().map_or(0, Vec::len);
    if denied > 0 {
        outln!("denied {denied} pending request(s)");
    }
    let pending = b["pending"].as_u64().unwrap_or(0);
    if pending > 0 {
        outln!(
            "{pending} request(s) still pending: `gatebot agent {name} pause --deny-pending` denies them"
        );
    }
}

/// What `gatebot agent NAME resume` did.
fn print_resumed(name: &str, b: &serde_json::Value, json: bool) {
    if json {
        outln!("{}", pretty(b));
    } else if b["resumed"] == true {
        outln!(
            "{name} resumed: its requests are decided by its tier again, and it claims \
             its tasks and reports on its runs again"
        );
    } else {
        outln!("{name} was not paused");
    }
}

fn print_view(v: &AgentView) {
    outln!(
        "{}{}",
        v.agent,
        if v.configured {
            ""
        } else {
            " (not in the config)"
        }
    );
    let tier = v.tier_said();
    outln!("  tier:        {tier}");
    outln!(
        "  paused:      {}",
        v.pause.as_ref().map_or("no".to_string(), |p| p.describe())
    );
    outln!("  pending:     {}", v.pending);
    for (i, line) in v.spend.iter().enumerate() {
        outln!("  {:<13}{line}", if i == 0 { "spend:" } else { "" });
    }
    outln!("  all time:    {}", v.evidence.all_time.words());
    // At least one space after the label, however long the window's words.
    outln!(
        "  {:<12} {}",
        format!("last {}:", words::config_span(&v.evidence.window)),
        v.evidence.recent.words()
    );
    for (label, words) in v.evidence.measures.figures() {
        outln!("  {:<13}{words}", format!("{}:", label.to_lowercase()));
    }
    outln!("  assessment:  {}", v.assessment.reason);
    if let Some(d) = &v.demotion {
        outln!("  denials:     {}", d.reason);
    }
    if let Some(p) = &v.proposal {
        outln!(
            "  proposal:    {} {} (gatebot decide {} approve|deny)",
            p.short_id,
            p.question(),
            p.short_id
        );
    }
    if v.grants.is_empty() {
        outln!("  grants:      none");
    } else {
        outln!("  grants:");
        let now = crate::time::now_ms();
        for g in &v.grants {
            outln!(
                "    {}  {}  {}  by {} {}  {}",
                g.short_id,
                g.tool,
                g.scope.words(),
                g.by.label(),
                clock(g.created_at),
                g.until_words(now)
            );
        }
    }
}
