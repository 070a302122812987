//! The agents' pages: `/agents` lists every agent's tier in force (and where it comes
//! from), pause, pending requests, evidence and grants, as `gatebot agents` does;
//! `/agents/{name}` shows one, as `gatebot agent NAME` does, with the owner's changes:
//! its tier (or back to `bot.toml`'s), its open proposal approved or declined, pause
//! (denying its pending requests too, if asked) and resume, and its grants revoked.
//! A chart shows its human approvals, denials and escalations per day.
//!
//! Every change is the engine call the control socket's routes make (`api::trust`;
//! a proposal through its kind's owner decision, as `gatebot decide` takes it), made
//! by the person signed in, on the dashboard.

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Form;
use maud::{html, Markup};
use serde::Deserialize;

use super::forms::{actor, engine_words, given, not_found, when};
use super::page::{answered, shell, Menu, Outcome};
use super::signin::Signed;
use super::DashState;
use crate::approval::Via;
use crate::chat::conversation::{self, owner::OwnerDecision, owner::Refused};
use crate::engine::{Day, EngineError, Session};
use crate::names::{valid_agent_name, visible};
use crate::policy::Tier;
use crate::trust::view::{AgentView, TierSource};
use crate::words;

/// The days the chart shows, today included.
pub(super) const CHART_DAYS: i64 = 30;

const TIERS: [Tier; 4] = [
    Tier::DraftOnly,
    Tier::Supervised,
    Tier::SemiAutonomous,
    Tier::Autonomous,
];

/// `GET /agents`: every agent.
pub(super) async fn list(State(state): State<DashState>, Signed(session): Signed) -> Response {
    let views = match state.engine.agent_views().await {
        Ok(v) => v,
        Err(e) => return super::failed(&e),
    };
    let body = html! {
        h1 { "Agents" }
        @if views.is_empty() {
            p.count { "No agents are configured: add an [agents.NAME] table to bot.toml." }
        }
        @for v in &views {
            article.item.agent {
                h2 { a href=(href(&v.agent)) { (visible(&v.agent)) }
                    @if v.pause.is_some() { " " span.badge.paused { "paused" } }
                    @if !v.configured { " " span.badge { "not in bot.toml" } }
                }
                dl.fields {
                    div { dt { "Tier" } dd { (tier_words(v)) } }
                    @if let Some(p) = &v.pause { div { dt { "Paused" } dd { (visible(&p.describe())) } } }
                    div { dt { "Pending" } dd { (pending_words(v.pending)) } }
                    div { dt { "Evidence" } dd { (v.evidence.measures.brief()) } }
                    @if !v.spend.is_empty() { div { dt { "Spend" } dd { (v.spend.join("; ")) } } }
                    div { dt { "Grants" } dd { (v.grants.len()) " in force" } }
                    @if let Some(p) = &v.proposal {
                        div { dt { "Proposal" } dd { (visible(&p.question())) " " a href=(href(&v.agent)) { "Answer it" } } }
                    }
                }
            }
        }
    };
    shell("Agents", Some(&session), Menu::Agents, body).into_response()
}

/// Where the page of `agent` is (agent names are URL-safe: letters, digits, `-_.`).
fn href(agent: &str) -> String {
    format!("/agents/{agent}")
}

fn pending_words(n: usize) -> String {
    match n {
        0 => "nothing waits for you".into(),
        1 => "1 request waits for you".into(),
        n => format!("{n} requests wait for you"),
    }
}

/// The tier in force and where it comes from.
fn tier_words(v: &AgentView) -> String {
    match (&v.source, &v.tier_override) {
        (TierSource::Override, Some(o)) => format!(
            "{}, set by {} {}; bot.toml says {}",
            v.tier.words(),
            o.by.label(),
            words::clock(o.at),
            v.baseline.words()
        ),
        _ => format!("{}, as bot.toml sets it", v.tier.words()),
    }
}

/// `GET /agents/{name}`: one agent.
pub(super) async fn page(
    State(state): State<DashState>,
    Signed(session): Signed,
    Path(name): Path<String>,
) -> Response {
    let unknown = || {
        not_found(
            &session,
            Menu::Agents,
            &format!("gatebot knows no agent “{name}”."),
            ("/agents", "All agents"),
        )
    };
    if !valid_agent_name(&name) {
        return unknown();
    }
    let view = match state.engine.agent_view(&name).await {
        Ok(v) => v,
        Err(EngineError::UnknownAgent(_)) => return unknown(),
        Err(e) => return super::failed(&e),
    };
    let days = match state.engine.evidence_days(&name, CHART_DAYS).await {
        Ok(d) => d,
        Err(e) => return super::failed(&e),
    };
    let now = crate::time::now_ms();
    let body = html! {
        p.crumbs { a href="/agents" { "Agents" } " ›" }
        h1 { (visible(&view.agent))
            @if view.pause.is_some() { " " span.badge.paused { "paused" } }
        }
        @if !view.configured {
            p.note { "This agent has no [agents." (visible(&view.agent)) "] table in bot.toml: "
                "it is accepted under [policy] unknown_agents, or its records outlived its table." }
        }
        (tier_section(&view, &session.csrf))
        @if let Some(p) = &view.proposal { (proposal_section(&view.agent, p, &session.csrf, now)) }
        (pause_section(&view, &session.csrf))
        (evidence_section(&view, &days, now, &session.csrf))
        (grants_section(&view, &session.csrf, now))
    };
    shell(&view.agent, Some(&session), Menu::Agents, body).into_response()
}

fn tier_section(v: &AgentView, csrf: &str) -> Markup {
    let action = format!("{}/tier", href(&v.agent));
    html! {
        section.panel #tier {
            h2 { "Tier" }
            p { "In force: " strong { (v.tier.words()) } ". "
                @match (&v.source, &v.tier_override) {
                    (TierSource::Override, Some(o)) => {
                        "Set by " (visible(&o.by.label())) " " (when(o.at, crate::time::now_ms()))
                        @if let Some(r) = &o.reason { ": “" (visible(r)) "”" }
                        ". bot.toml says " (v.baseline.words()) "."
                    }
                    _ => { "As bot.toml sets it." }
                }
            }
            form.stack method="post" action=(action) {
                input type="hidden" name="csrf" value=(csrf);
                label { "New tier "
                    select name="tier" {
                        @for t in TIERS {
                            option value=(t.as_str()) selected[t == v.tier] { (t.words()) }
                        }
                    }
                }
                label { "Why (kept in the audit trail) "
                    input type="text" name="reason" maxlength="2000";
                }
                div.buttons {
                    button.primary type="submit" { "Set tier" }
                    @if v.source == TierSource::Override {
                        button type="submit" name="reset" value="1" {
                            "Back to bot.toml's (" (v.baseline.words()) ")"
                        }
                    }
                }
            }
        }
    }
}

fn proposal_section(agent: &str, p: &crate::trust::Proposal, csrf: &str, now: i64) -> Markup {
    html! {
        section.panel #proposal {
            h2 { "Proposal " code { (p.short_id) } }
            p { strong { (visible(&p.question())) } " Proposed " (when(p.created_at, now)) "." }
            p { (visible(&p.reason)) }
            form.stack method="post" action=(format!("{}/proposal", href(agent))) {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="proposal" value=(p.id);
                label { "Why (optional; kept in the audit trail) "
                    input type="text" name="reason" maxlength="2000";
                }
                div.buttons {
                    button.primary type="submit" name="verb" value="approve" { "Approve" }
                    button.danger type="submit" name="verb" value="decline" { "Decline" }
                }
            }
        }
    }
}

fn pause_section(v: &AgentView, csrf: &str) -> Markup {
    let base = href(&v.agent);
    html! {
        section.panel #pause {
            h2 { "Pause" }
            @if let Some(p) = &v.pause {
                p { "Paused by " (visible(&p.by.label())) " " (when(p.at, crate::time::now_ms()))
                    @if let Some(r) = &p.reason { ": “" (visible(r)) "”" }
                    ". Its requests are blocked, its tasks wait and its workflow runs take no events." }
                form.inline method="post" action=(format!("{base}/resume")) {
                    input type="hidden" name="csrf" value=(csrf);
                    button.primary type="submit" { "Resume" }
                }
                @if v.pending > 0 {
                    p { (pending_words(v.pending)) " from before the pause." }
                    form.inline method="post" action=(format!("{base}/pause")) {
                        input type="hidden" name="csrf" value=(csrf);
                        input type="hidden" name="deny_pending" value="1";
                        button.danger type="submit" { "Deny them" }
                    }
                }
            } @else {
                p { "Not paused. A pause blocks every new request of the agent at once, sends "
                    "its running tasks back to the queue and holds its workflow runs, until you resume it." }
                form.stack method="post" action=(format!("{base}/pause")) {
                    input type="hidden" name="csrf" value=(csrf);
                    label { "Why (the agent reads it in every refusal) "
                        input type="text" name="reason" maxlength="2000";
                    }
                    @if v.pending > 0 {
                        label.check {
                            input type="checkbox" name="deny_pending" value="1";
                            " Also deny its pending requests (" (v.pending) ")"
                        }
                    }
                    div.buttons { button.danger type="submit" { "Pause" } }
                }
            }
        }
    }
}

fn evidence_section(v: &AgentView, days: &[Day], now: i64, csrf: &str) -> Markup {
    let m = &v.evidence.measures;
    html! {
        section.panel #evidence {
            h2 { "Evidence" }
            dl.fields {
                @for (label, said) in m.figures() { div { dt { (label) } dd { (said) } } }
                div { dt { "All time" } dd { (v.evidence.all_time.words()) } }
                div { dt { "Last " (words::config_span(&v.evidence.window)) } dd { (v.evidence.recent.words()) } }
                div { dt { "Assessment" } dd { (visible(&v.assessment.reason)) } }
                @if let Some(d) = &v.demotion { div { dt { "Denials" } dd { (visible(&d.reason)) } } }
                @for line in &v.spend { div { dt { "Spend" } dd { (line) } } }
            }
            // gatebot assesses every agent on its schedule; this runs it now.
            form.inline method="post" action=(format!("{}/assess", href(&v.agent))) {
                input type="hidden" name="csrf" value=(csrf);
                button type="submit" { "Assess now" }
                " " span.note { "An eligible agent gets a proposal; nothing changes until you approve it." }
            }
            h3 { "Per day, the last " (CHART_DAYS) " days" }
            (chart(days, now))
        }
    }
}

/// The first 10 characters of an RFC 3339 instant: the UTC date.
fn date(ms: i64) -> String {
    crate::time::format_ms(ms).chars().take(10).collect()
}

fn day_words(d: &Day) -> String {
    format!(
        "{}: {} approved, {} denied, {} escalated",
        date(d.start_ms()),
        d.approved,
        d.denied,
        d.escalated
    )
}

/// Human approvals, denials and escalations per day as stacked bars (an SVG drawn here,
/// coloured by the stylesheet), with its numbers in words for screen readers and in a
/// table under it.
pub(super) fn chart(days: &[Day], now: i64) -> Markup {
    const W: i64 = 300;
    const H: i64 = 100;
    let slot = W / CHART_DAYS;
    let today = now.div_euclid(86_400_000);
    let first = today - CHART_DAYS + 1;
    let shown: Vec<&Day> = days.iter().filter(|d| d.total() > 0).collect();
    let (a, d, e) = shown.iter().fold((0, 0, 0), |(a, d, e), x| {
        (a + x.approved, d + x.denied, e + x.escalated)
    });
    let most = shown.iter().map(|d| d.total()).max().unwrap_or(0);
    let summary = format!(
        "Over the last {CHART_DAYS} days: {a} approved, {d} denied, {e} escalated{}.",
        if most > 0 {
            format!("; the busiest day had {most}")
        } else {
            String::new()
        }
    );
    if shown.is_empty() {
        return html! { p.count { "No human decisions or escalations in the last " (CHART_DAYS) " days." } };
    }
    // Whole units: a bar's parts are scaled to the busiest day.
    // A part that is not nothing is at least a unit high, so every count shows.
    let scale = |n: u64| -> i64 {
        match n {
            0 => 0,
            n => ((n as i64 * H) / (most.max(1) as i64)).max(1),
        }
    };
    // The bars stand on this line (room above for parts rounded up).
    let base = H + 3;
    html! {
        figure.chart {
            svg.chart viewBox=(format!("0 0 {W} {}", base + 1)) width=(W) height=(base + 1)
                role="img" aria-labelledby="chart-title chart-desc" {
                title #chart-title { "Decisions per day for the last " (CHART_DAYS) " days" }
                desc #chart-desc { (summary) }
                line.axis x1="0" y1=(base) x2=(W) y2=(base) {}
                @for day in &shown {
                    @let x = (day.day - first) * slot + 1;
                    @let ha = scale(day.approved);
                    @let hd = scale(day.denied);
                    @let he = scale(day.escalated);
                    g {
                        title { (day_words(day)) }
                        @if ha > 0 { rect.approved x=(x) y=(base - ha) width=(slot - 2) height=(ha) {} }
                        @if hd > 0 { rect.denied x=(x) y=(base - ha - hd) width=(slot - 2) height=(hd) {} }
                        @if he > 0 { rect.escalated x=(x) y=(base - ha - hd - he) width=(slot - 2) height=(he) {} }
                    }
                }
            }
            figcaption {
                span.legend.approved { "approved" } " "
                span.legend.denied { "denied" } " "
                span.legend.escalated { "escalated" } " · "
                (date(first * 86_400_000)) " to " (date(today * 86_400_000)) " (UTC)"
            }
            details {
                summary { "The numbers" }
                div.scroll {
                    table {
                        thead { tr { th { "Day" } th { "Approved" } th { "Denied" } th { "Escalated" } } }
                        tbody {
                            @for day in &shown {
                                tr { td { (date(day.start_ms())) } td { (day.approved) } td { (day.denied) } td { (day.escalated) } }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn grants_section(v: &AgentView, csrf: &str, now: i64) -> Markup {
    let action = format!("{}/revoke", href(&v.agent));
    html! {
        section.panel #grants {
            h2 { "Grants" }
            @if v.grants.is_empty() {
                p.count { "No grants in force: the agent asks before everything its tier holds back." }
            }
            ul.rows {
                @for g in &v.grants {
                    li {
                        div {
                            code { (visible(&g.tool)) } ": " (visible(&g.scope.words())) ", "
                            (g.until_words(now)) ". Granted by " (visible(&g.by.label())) " "
                            (when(g.created_at, now)) " (" code { (g.short_id) } ", up to "
                            (g.max_risk.as_str()) " risk)"
                            @if let Some(r) = &g.reason { br; span.muted { (visible(r)) } }
                        }
                        form.inline method="post" action=(action) {
                            input type="hidden" name="csrf" value=(csrf);
                            input type="hidden" name="grant" value=(g.id);
                            button.danger type="submit" { "Revoke" }
                        }
                    }
                }
            }
        }
    }
}

/// Checks the name in a change's URL; the page to go back to.
fn back_to(name: &str) -> Result<String, (StatusCode, String)> {
    if valid_agent_name(name) {
        Ok(href(name))
    } else {
        Err((
            StatusCode::NOT_FOUND,
            format!("gatebot knows no agent “{}”.", visible(name)),
        ))
    }
}

/// Checks the form's token, then takes `step` and answers as every form is answered.
async fn changed<F, Fut>(
    state: &DashState,
    signed: &Signed,
    headers: &HeaderMap,
    csrf: &str,
    name: &str,
    step: F,
) -> Response
where
    F: FnOnce(Session) -> Fut,
    Fut: std::future::Future<Output = Outcome>,
{
    if let Err(r) = signed.check(state, headers, csrf).await {
        return r;
    }
    let back = match back_to(name) {
        Ok(b) => b,
        Err(e) => return answered(headers, Err(e), "/agents"),
    };
    let outcome = step(signed.0.clone()).await;
    answered(headers, outcome, &back)
}

/// `POST /agents/{name}/assess`: as `gatebot agent NAME assess`, the promotion
/// assessment now: a proposal it makes shows on the page, as does the assessment.
pub(super) async fn assess(
    State(state): State<DashState>,
    signed: Signed,
    headers: HeaderMap,
    Path(name): Path<String>,
    Form(form): Form<CsrfForm>,
) -> Response {
    let engine = state.engine.clone();
    changed(
        &state,
        &signed,
        &headers,
        &form.csrf,
        &name.clone(),
        |_| async move {
            let o = engine.assess(&name).await.map_err(|e| engine_words(&e))?;
            Ok(vec![o.note])
        },
    )
    .await
}

#[derive(Deserialize)]
pub(super) struct TierForm {
    csrf: String,
    #[serde(default)]
    tier: String,
    #[serde(default)]
    reason: String,
    /// Present: back to `bot.toml`'s tier.
    reset: Option<String>,
}

/// `POST /agents/{name}/tier`: as `gatebot agent NAME tier TIER | --reset`.
pub(super) async fn set_tier(
    State(state): State<DashState>,
    signed: Signed,
    headers: HeaderMap,
    Path(name): Path<String>,
    Form(form): Form<TierForm>,
) -> Response {
    let engine = state.engine.clone();
    changed(&state, &signed, &headers, &form.csrf, &name.clone(), |s| async move {
        let tier = match form.reset {
            Some(_) => None,
            None => Some(
                TIERS
                    .into_iter()
                    .find(|t| t.as_str() == form.tier)
                    .ok_or((
                        StatusCode::BAD_REQUEST,
                        "Choose one of the tiers offered: draft-only, supervised, semi-autonomous or autonomous.".to_string(),
                    ))?,
            ),
        };
        engine
            .set_tier(&name, tier, actor(&s), given(&form.reason))
            .await
            .map_err(|e| engine_words(&e))?;
        Ok(vec![match tier {
            Some(t) => format!("{name} is now {}", t.words()),
            None => format!("{name} is back to bot.toml's tier"),
        }])
    })
    .await
}

#[derive(Deserialize)]
pub(super) struct PauseForm {
    csrf: String,
    #[serde(default)]
    reason: String,
    deny_pending: Option<String>,
}

/// `POST /agents/{name}/pause`: as `gatebot agent NAME pause [--deny-pending]`.
pub(super) async fn pause(
    State(state): State<DashState>,
    signed: Signed,
    headers: HeaderMap,
    Path(name): Path<String>,
    Form(form): Form<PauseForm>,
) -> Response {
    let engine = state.engine.clone();
    changed(
        &state,
        &signed,
        &headers,
        &form.csrf,
        &name.clone(),
        |s| async move {
            let o = engine
                .pause(
                    &name,
                    actor(&s),
                    given(&form.reason),
                    form.deny_pending.is_some(),
                )
                .await
                .map_err(|e| engine_words(&e))?;
            let mut said = vec![if o.new {
                format!("{name} paused")
            } else {
                format!("{name} was already paused")
            }];
            if !o.denied.is_empty() {
                said.push(format!("denied {} pending request(s)", o.denied.len()));
            }
            Ok(said)
        },
    )
    .await
}

#[derive(Deserialize)]
pub(super) struct CsrfForm {
    csrf: String,
}

/// `POST /agents/{name}/resume`: as `gatebot agent NAME resume`.
pub(super) async fn resume(
    State(state): State<DashState>,
    signed: Signed,
    headers: HeaderMap,
    Path(name): Path<String>,
    Form(form): Form<CsrfForm>,
) -> Response {
    let engine = state.engine.clone();
    changed(
        &state,
        &signed,
        &headers,
        &form.csrf,
        &name.clone(),
        |s| async move {
            let lifted = engine
                .resume(&name, actor(&s))
                .await
                .map_err(|e| engine_words(&e))?;
            Ok(vec![if lifted.is_some() {
                format!("{name} resumed")
            } else {
                format!("{name} was not paused")
            }])
        },
    )
    .await
}

#[derive(Deserialize)]
pub(super) struct RevokeForm {
    csrf: String,
    grant: String,
}

/// `POST /agents/{name}/revoke`: as `gatebot grants revoke ID`.
pub(super) async fn revoke(
    State(state): State<DashState>,
    signed: Signed,
    headers: HeaderMap,
    Path(name): Path<String>,
    Form(form): Form<RevokeForm>,
) -> Response {
    let engine = state.engine.clone();
    changed(
        &state,
        &signed,
        &headers,
        &form.csrf,
        &name.clone(),
        |s| async move {
            let g = engine
                .revoke_grant(form.grant.trim(), actor(&s))
                .await
                .map_err(|e| engine_words(&e))?;
            Ok(vec![format!(
                "revoked grant {}: {} asks again before running {}",
                g.short_id, g.agent, g.tool
            )])
        },
    )
    .await
}

#[derive(Deserialize)]
pub(super) struct ProposalForm {
    csrf: String,
    proposal: String,
    #[serde(default)]
    verb: String,
    #[serde(default)]
    reason: String,
}

/// `POST /agents/{name}/proposal`: the agent's open proposal approved or declined,
/// through the proposal kind's owner decision, as `gatebot decide ID approve|deny`.
pub(super) async fn proposal(
    State(state): State<DashState>,
    signed: Signed,
    headers: HeaderMap,
    Path(name): Path<String>,
    Form(form): Form<ProposalForm>,
) -> Response {
    let engine = state.engine.clone();
    changed(
        &state,
        &signed,
        &headers,
        &form.csrf,
        &name.clone(),
        |s| async move {
            if !matches!(form.verb.as_str(), "approve" | "decline") {
                return Err((
                    StatusCode::BAD_REQUEST,
                    "A proposal is approved or declined.".to_string(),
                ));
            }
            let p = engine
                .proposal(form.proposal.trim())
                .await
                .map_err(|e| engine_words(&e))?;
            if p.agent != name {
                return Err((
                    StatusCode::BAD_REQUEST,
                    format!("Proposal {} is not about {name}.", p.short_id),
                ));
            }
            let decision = OwnerDecision {
                verb: form.verb.clone(),
                reason: given(&form.reason),
                prefix: None,
                exact: false,
                for_: None,
                args: None,
                actor: s.person.clone(),
                via: Via::Dashboard,
                factor: false,
            };
            let subject = engine.identify(&p.id).await.ok();
            match conversation::decide(&engine, subject.as_ref(), &p.id, decision).await {
                Ok(d) => Ok(d.said),
                Err(Refused::Unclear(m)) => Err((StatusCode::BAD_REQUEST, m)),
                Err(Refused::Settled { message, .. }) => Err((StatusCode::CONFLICT, message)),
                Err(Refused::Engine(e)) => Err(engine_words(&e)),
            }
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chart_draws_a_stacked_bar_per_day_and_says_its_numbers() {
        let now = 40 * 86_400_000 + 5;
        let days = [
            Day {
                day: 39,
                approved: 3,
                denied: 1,
                escalated: 0,
            },
            Day {
                day: 40,
                approved: 0,
                denied: 0,
                escalated: 2,
            },
        ];
        let html = chart(&days, now).into_string();
        assert!(html.contains("<svg"), "{html}");
        assert!(!html.contains("style="), "{html}");
        assert!(
            html.contains(
                "Over the last 30 days: 3 approved, 1 denied, 2 escalated; the busiest day had 4."
            ),
            "{html}"
        );
        assert!(
            html.contains("1970-02-09: 3 approved, 1 denied, 0 escalated"),
            "{html}"
        );
        // The busiest day fills the height: 3 of 4 approved is 75 units of 100.
        assert!(
            html.contains(r#"class="approved" x="281" y="28" width="8" height="75""#),
            "{html}"
        );
        assert!(
            html.contains(r#"class="denied" x="281" y="3" width="8" height="25""#),
            "{html}"
        );
        // Today is the last slot; parts that are nothing are not drawn.
        assert!(
            html.contains(r#"class="escalated" x="291" y="53" width="8" height="50""#),
            "{html}"
        );
        assert_eq!(html.matches("<rect").count(), 3, "{html}");
        assert!(chart(&[], now).into_string().contains("No human decisions"));
    }
}
