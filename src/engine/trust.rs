//! Trust, engine side: effective tiers, pauses, grants, assessments and proposals.
//!
//! 1. Reads ([`Engine::agent_view`], [`Engine::agent_views`]) put together what the
//!    store knows of an agent with what the config says of it.
//! 2. Changes ([`Engine::set_tier`], [`Engine::pause`], [`Engine::resume`],
//!    [`Engine::revoke_grant`], [`Engine::decide_proposal`]) are one store transaction
//!    each, with their audit rows; the caller has checked that the actor may make them.
//!    Requests a pause denies are published as settled; proposals whose card changes
//!    are published as [`Event::Subject`].
//! 3. [`Engine::assess`] runs the assessment for one agent and, when it calls for a
//!    tier change, makes a proposal (never the change itself). [`Engine::run_promotion`]
//!    runs it for every configured agent every `[promotion] every`, from when it last
//!    ran (kept in SQLite, so restarts do not reset the schedule), until `stop` fires.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::{Conflict, Engine, EngineError, Event, What};
use crate::approval::Approval;
use crate::config::Config;
use crate::policy::{AgentRules, Tier};
use crate::store::{ProposalOutcome, Revoked, Store, StoreError, TierChange};
use crate::time::{clock, format_duration, now_ms};
use crate::trust::assess::{assess, demotion};
use crate::trust::evidence::Recount;
use crate::trust::grants::OfferRow;
use crate::trust::view::{AgentView, AssessOutcome, Evidence, TierSource};
use crate::trust::{Actor, Direction, Grant, Pause, Proposal};

type Result<T> = std::result::Result<T, EngineError>;

/// When the scheduled assessment last ran (Unix milliseconds), in `trust_state`.
const ASSESSED_AT: &str = "promotion.assessed_at";
/// Longest sleep of the schedule, so a reloaded `every` applies soon.
const SCHEDULE_CHECK: Duration = Duration::from_secs(60);

/// The result of answering a proposal.
#[derive(Debug, Clone, PartialEq)]
pub enum ProposalDecided {
    /// Answered now (an approval changed the tier).
    Done(Proposal),
    /// Answered before, by whoever it says.
    AlreadySettled(Proposal),
    /// The agent's tier had changed since it was made: closed, nothing changed.
    Superseded(Proposal),
}

/// A pause, and what it did.
#[derive(Debug, Clone, PartialEq)]
pub struct PauseOutcome {
    pub pause: Pause,
    /// False when the agent was already paused.
    pub new: bool,
    /// Requests denied with it.
    pub denied: Vec<Approval>,
    /// Requests of the agent still pending.
    pub pending: usize,
}

/// The `ask_human` threshold the config gives `agent` now: its own, the unknown agents'
/// rules', or, for an agent the config no longer accepts, a supervised agent's.
fn ask_human_now(config: &Config, agent: &str) -> f64 {
    config
        .agent(agent)
        .map_or_else(|| AgentRules::with_tier(Tier::Supervised), |c| c.rules)
        .confidence
        .ask_human
}

/// Builds the evidence summaries of a database upgraded with requests in it (once: see
/// `store::evidence`), its old requests flagged by the config's thresholds now.
pub(super) fn build_evidence(
    store: &Store,
    config: &Config,
) -> std::result::Result<(), StoreError> {
    let started = std::time::Instant::now();
    if let Some(built) = store.build_evidence(&|agent| ask_human_now(config, agent))? {
        info!(
            requests = built.requests,
            low_confidence = built.flagged,
            took = ?started.elapsed(),
            "counted every agent's evidence from its requests, once, for the running summaries"
        );
    }
    Ok(())
}

impl Engine {
    /// Counts every agent's evidence from its requests again and compares it with the
    /// running summaries; unless `check_only`, rebuilds summaries that differ (one
    /// transaction, audited as `evidence_recounted` by `actor`).
    pub async fn recount_evidence(&self, check_only: bool, actor: Actor) -> Result<Recount> {
        let who = actor.clone();
        let recount = self
            .blocking(move |s| s.recount_evidence(check_only, &who.name, &who.via, now_ms()))
            .await?;
        if recount.rebuilt {
            let agents: Vec<&str> = recount.differed.iter().map(|d| d.agent.as_str()).collect();
            warn!(
                by = %actor.label(),
                agents = %agents.join(", "),
                "the evidence summaries differed from the requests; rebuilt them"
            );
        }
        Ok(recount)
    }

    /// The agent's tier in force: the owner's override, else the config's (the
    /// baseline); `UnknownAgent` when the config does not accept the agent.
    pub async fn effective_tier(&self, agent: &str) -> Result<(Tier, Tier, TierSource)> {
        let baseline = self.baseline(agent)?;
        let a = agent.to_string();
        let over = self.blocking(move |s| s.tier_override(&a)).await?;
        Ok(match over {
            Some(o) => (o.tier, baseline, TierSource::Override),
            None => (baseline, baseline, TierSource::Config),
        })
    }

    fn baseline(&self, agent: &str) -> Result<Tier> {
        self.config()
            .agent(agent)
            .map(|c| c.rules.tier)
            .ok_or_else(|| EngineError::UnknownAgent(agent.to_string()))
    }

    /// One agent's trust, as `gatebot agent NAME` shows it.
    pub async fn agent_view(&self, agent: &str) -> Result<AgentView> {
        let config = self.config();
        let configured = config.agents.contains_key(agent);
        // Strangers too, under `unknown_agents = "supervised"`: they have evidence.
        let Some(cfg) = config.agent(agent) else {
            return Err(EngineError::UnknownAgent(agent.to_string()));
        };
        let trust = &config.trust.promotion;
        let name = agent.to_string();
        let now = now_ms();
        let window_start = now - trust.window.as_millis() as i64;
        let quiet_start = now - trust.decline_quiet.as_millis() as i64;
        let rules = trust.rules;
        let (over, pause, pending, grants, all_time, recent, latest, declined, proposal) = self
            .blocking(move |s| {
                let open = s.proposals(Some(&name), true)?.into_iter().next();
                Ok((
                    s.tier_override(&name)?,
                    s.pause_of(&name)?,
                    s.count_pending_of(&name)?,
                    s.grants(Some(&name), false, now)?,
                    s.evidence(&name, 0)?,
                    s.evidence(&name, window_start)?,
                    s.latest_decisions(&name, rules.demote_window)?,
                    s.declined_since(&name, quiet_start, None)?,
                    open,
                ))
            })
            .await?;
        let baseline = cfg.rules.tier;
        let (tier, source) = match &over {
            Some(o) => (o.tier, TierSource::Override),
            None => (baseline, TierSource::Config),
        };
        let measures = all_time.measures();
        let spend = self
            .agent_spend(agent)
            .await?
            .map(|s| s.lines(agent))
            .unwrap_or_default();
        Ok(AgentView {
            agent: agent.to_string(),
            configured,
            tier,
            baseline,
            source,
            tier_override: over,
            pause,
            pending,
            grants,
            evidence: Evidence {
                all_time,
                recent,
                window: format_duration(trust.window),
                measures,
            },
            assessment: assess(agent, tier, &measures, declined, &rules),
            demotion: demotion(agent, tier, &latest, &rules),
            proposal,
            spend,
        })
    }

    /// Every agent's trust: the configured ones, and any other the database holds an
    /// override, a pause or a grant for.
    pub async fn agent_views(&self) -> Result<Vec<AgentView>> {
        let mut names: BTreeSet<String> = self.config().agents.keys().cloned().collect();
        names.extend(self.known_agents().await?);
        let mut views = Vec::with_capacity(names.len());
        for name in names {
            match self.agent_view(&name).await {
                Ok(v) => views.push(v),
                // Records of an agent the config no longer accepts: nothing to show.
                Err(EngineError::UnknownAgent(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(views)
    }

    /// Agents the database holds trust records for.
    async fn known_agents(&self) -> Result<BTreeSet<String>> {
        self.blocking(|s| {
            let mut names: BTreeSet<String> =
                s.tier_overrides()?.into_iter().map(|o| o.agent).collect();
            names.extend(s.pauses()?.into_iter().map(|p| p.agent));
            names.extend(
                s.grants(None, false, now_ms())?
                    .into_iter()
                    .map(|g| g.agent),
            );
            Ok(names)
        })
        .await
    }

    /// Sets the agent's tier (`Some`), or returns it to the config's (`None`).
    pub async fn set_tier(
        &self,
        agent: &str,
        tier: Option<Tier>,
        actor: Actor,
        reason: Option<String>,
    ) -> Result<TierChange> {
        let baseline = self.baseline(agent)?;
        let a = agent.to_string();
        let who = actor.clone();
        let change = self
            .blocking(move |s| s.set_tier(&a, tier, baseline, &who, reason.as_deref(), now_ms()))
            .await?;
        info!(
            agent, by = %actor.label(),
            tier = tier.unwrap_or(baseline).as_str(),
            "tier changed"
        );
        for id in &change.superseded {
            self.publish(Event::Subject(id.clone()));
        }
        Ok(change)
    }

    /// Pauses the agent; with `deny_pending`, denies its pending requests too.
    pub async fn pause(
        &self,
        agent: &str,
        actor: Actor,
        reason: Option<String>,
        deny_pending: bool,
    ) -> Result<PauseOutcome> {
        self.baseline(agent)?;
        let a = agent.to_string();
        let who = actor.clone();
        // The gate's order (engine::gate): what the agent is doing finishes first, and
        // nothing it does begins until the pause is in force, its tasks are back in
        // the queue and its waits are closed.
        let order = self.pausing().await;
        let (paused, pending) = self
            .blocking(move |s| {
                let p = s.pause(&a, &who, reason.as_deref(), deny_pending, now_ms())?;
                Ok((p, s.count_pending_of(&a)?))
            })
            .await?;
        self.withhold_tasks(agent, &actor).await;
        // Each closed wait is answered (and counted) as paused when it returns.
        let closed = self.close_waits(agent);
        drop(order);
        if paused.new {
            warn!(
                agent, by = %actor.label(), waits_closed = closed,
                "agent paused: its requests are blocked, its tasks and runs wait"
            );
        }
        self.announce_denied(&paused.denied);
        Ok(PauseOutcome {
            pause: paused.pause,
            new: paused.new,
            denied: paused.denied,
            pending,
        })
    }

    /// Denies the pending requests of the agent `pause_id` paused, if that pause is
    /// still in force (`NotFound` otherwise).
    pub async fn deny_pending_of_pause(
        &self,
        pause_id: &str,
        actor: Actor,
    ) -> Result<PauseOutcome> {
        let id = pause_id.to_string();
        let found = self
            .blocking(move |s| s.deny_pending_of_pause(&id, &actor, now_ms()))
            .await?;
        let Some((pause, denied)) = found else {
            return Err(EngineError::not_found(What::Pause, pause_id));
        };
        self.announce_denied(&denied);
        Ok(PauseOutcome {
            pause,
            new: false,
            denied,
            pending: 0,
        })
    }

    fn announce_denied(&self, denied: &[Approval]) {
        for a in denied {
            info!(id = %a.id, agent = %a.agent, tool = %a.tool, "request denied with the agent's pause");
            self.metrics.settled(
                a.status,
                a.decided_at
                    .unwrap_or(a.created_at)
                    .saturating_sub(a.created_at),
            );
            self.publish(Event::Settled(Arc::new(a.clone())));
        }
        if !denied.is_empty() {
            self.deadlines_changed.notify_one();
        }
    }

    /// Resumes the agent; the pause lifted, or `None` if it was not paused.
    pub async fn resume(&self, agent: &str, actor: Actor) -> Result<Option<Pause>> {
        let a = agent.to_string();
        let lifted = self
            .blocking(move |s| s.resume(&a, &actor, now_ms()))
            .await?;
        if lifted.is_some() {
            info!(agent, "agent resumed");
        }
        Ok(lifted)
    }

    /// Grants, of one agent or all; with `all`, revoked and expired ones too.
    pub async fn grants(&self, agent: Option<String>, all: bool) -> Result<Vec<Grant>> {
        self.blocking(move |s| s.grants(agent.as_deref(), all, now_ms()))
            .await
    }

    /// A grant by id.
    pub async fn grant(&self, id: &str) -> Result<Grant> {
        let i = id.to_string();
        self.blocking(move |s| s.grant(&i))
            .await?
            .ok_or_else(|| EngineError::not_found(What::Grant, id))
    }

    /// The grant the decision on request `approval` made, if any.
    pub async fn grant_of_approval(&self, approval: &str) -> Result<Option<Grant>> {
        let a = approval.to_string();
        self.blocking(move |s| s.grant_of_approval(&a)).await
    }

    /// What the prompt of request `approval` offers to grant.
    pub async fn offer(&self, approval: &str) -> Result<Option<OfferRow>> {
        let a = approval.to_string();
        self.blocking(move |s| s.offer(&a)).await
    }

    /// Revokes the grant `typed` names; an already revoked one is a `Conflict`, saying by
    /// whom.
    pub async fn revoke_grant(&self, typed: &str, actor: Actor) -> Result<Grant> {
        let t = typed.to_string();
        match self
            .blocking(move |s| s.revoke_grant(&t, &actor, now_ms()))
            .await?
        {
            Revoked::Done(g) => {
                info!(grant = %g.id, agent = %g.agent, tool = %g.tool, "grant revoked");
                Ok(g)
            }
            Revoked::Already(g) => {
                let (at, by) = g.revoked.clone().unwrap_or((0, g.by.clone()));
                Err(EngineError::Conflict(Conflict::GrantRevoked {
                    grant: g.short_id,
                    by: by.label(),
                    at: clock(at),
                }))
            }
            Revoked::NotFound => Err(EngineError::not_found(What::Grant, typed)),
            Revoked::Ambiguous(candidates) => Err(EngineError::Ambiguous {
                what: What::Grant,
                typed: typed.to_string(),
                candidates,
            }),
        }
    }

    /// The handle chat buttons use for `agent`.
    pub async fn agent_handle(&self, agent: &str) -> Result<String> {
        let a = agent.to_string();
        self.blocking(move |s| s.agent_handle(&a)).await
    }

    /// The agent a chat button's handle names.
    pub async fn agent_of_handle(&self, handle: &str) -> Result<String> {
        let h = handle.to_string();
        self.blocking(move |s| s.agent_of_handle(&h))
            .await?
            .ok_or_else(|| EngineError::not_found(What::Agent, handle))
    }

    /// A proposal by its full id.
    pub async fn proposal(&self, id: &str) -> Result<Proposal> {
        let i = id.to_string();
        self.blocking(move |s| s.proposal(&i))
            .await?
            .ok_or_else(|| EngineError::not_found(What::Proposal, id))
    }

    /// Proposals waiting for an owner, oldest first.
    pub async fn open_proposals(&self) -> Result<Vec<Proposal>> {
        self.blocking(|s| s.proposals(None, true)).await
    }

    /// Approves (`approve`) or declines the proposal with full id `id`. The caller has
    /// checked that the actor may.
    pub async fn decide_proposal(
        &self,
        id: &str,
        approve: bool,
        actor: Actor,
        reason: Option<String>,
    ) -> Result<ProposalDecided> {
        let p = self.proposal(id).await?;
        // An agent gone from the config has no tier to change: it can only be declined.
        let baseline = match self.baseline(&p.agent) {
            Ok(b) => b,
            Err(EngineError::UnknownAgent(a)) if approve => {
                return Err(EngineError::Conflict(Conflict::AgentGone {
                    agent: a,
                    proposal: p.short_id,
                }))
            }
            Err(_) => p.from,
        };
        let (i, who) = (id.to_string(), actor.clone());
        let outcome = self
            .blocking(move |s| {
                s.decide_proposal(&i, approve, baseline, &who, reason.as_deref(), now_ms())
            })
            .await?;
        let decided = match outcome {
            ProposalOutcome::Done(p, change) => {
                info!(
                    proposal = %p.id, agent = %p.agent, status = p.status.as_str(),
                    by = %actor.label(), "proposal answered"
                );
                if let Some(change) = change {
                    for other in &change.superseded {
                        self.publish(Event::Subject(other.clone()));
                    }
                }
                ProposalDecided::Done(p)
            }
            ProposalOutcome::Superseded(p) => ProposalDecided::Superseded(p),
            ProposalOutcome::AlreadySettled(p) => return Ok(ProposalDecided::AlreadySettled(p)),
            ProposalOutcome::NotFound => return Err(EngineError::not_found(What::Proposal, id)),
        };
        self.publish(Event::Subject(id.to_string()));
        Ok(decided)
    }

    /// Assesses `agent` now and, when the evidence calls for a tier change that is not
    /// suppressed, makes the proposal (see [`crate::trust::assess`]).
    pub async fn assess(&self, agent: &str) -> Result<AssessOutcome> {
        let view = self.agent_view(agent).await?;
        let config = self.config();
        let quiet = config.trust.promotion.decline_quiet;
        let quiet_start = now_ms() - quiet.as_millis() as i64;
        let outcome = |proposal: Option<Proposal>, created: bool, note: String| AssessOutcome {
            agent: agent.to_string(),
            tier: view.tier,
            assessment: view.assessment.clone(),
            demotion: view.demotion.clone(),
            proposal,
            created,
            note,
        };
        if let Some(note) = held_back(agent, &view) {
            return Ok(outcome(None, false, note));
        }
        let Some((direction, to, reason)) = called_for(&view) else {
            return Ok(outcome(None, false, view.assessment.reason.clone()));
        };
        if let Some(open) = view.proposal {
            return Ok(outcome(
                Some(open.clone()),
                false,
                format!(
                    "Proposal {} is already waiting for an owner: {}",
                    open.short_id,
                    open.question()
                ),
            ));
        }
        let name = agent.to_string();
        let declined = self
            .blocking(move |s| s.declined_since(&name, quiet_start, Some((direction, to))))
            .await?;
        if declined > 0 {
            return Ok(outcome(
                None,
                false,
                format!(
                    "{} An owner declined this within the last {}, so it is not proposed again yet.",
                    reason,
                    crate::words::span(quiet)
                ),
            ));
        }
        let new = crate::store::NewProposal {
            agent: agent.to_string(),
            direction,
            from: view.tier,
            to,
            reason,
            measures: view.evidence.measures,
        };
        let (proposal, created, note) = self.propose(agent, new).await?;
        Ok(outcome(proposal, created, note))
    }

    /// Makes the proposal `new` and publishes its card: the proposal, whether this
    /// call made it, and the note that says so.
    async fn propose(
        &self,
        agent: &str,
        new: crate::store::NewProposal,
    ) -> Result<(Option<Proposal>, bool, String)> {
        let (to, reason) = (new.to, new.reason.clone());
        let created = self
            .blocking(move |s| s.create_proposal(&new, now_ms()))
            .await?;
        Ok(match created {
            Some(p) => {
                info!(proposal = %p.id, agent, to = to.as_str(), "tier change proposed");
                self.publish(Event::Subject(p.id.clone()));
                let note = format!("Proposed ({}): {} {reason}", p.short_id, p.question());
                (Some(p), true, note)
            }
            // Another assessment made one in the meantime.
            None => (None, false, "A proposal is already open.".into()),
        })
    }

    /// Assesses every configured agent (the schedule's pass); failures are logged.
    pub async fn assess_all(&self) {
        let names: Vec<String> = self.config().agents.keys().cloned().collect();
        for name in names {
            match self.assess(&name).await {
                Ok(o) if o.created => {
                    info!(agent = %name, note = %o.note, "assessment proposed a tier change")
                }
                Ok(_) => {}
                Err(e) => warn!(agent = %name, error = %e, "assessment failed"),
            }
        }
    }

    /// Runs the assessment every `[promotion] every` until `stop` fires. The time of
    /// the last run is kept in SQLite: the first run is one interval after the schedule
    /// first started, and a restart keeps the rhythm.
    pub async fn run_promotion(self: Arc<Self>, stop: CancellationToken) {
        loop {
            let wait = match self.promotion_pass().await {
                Ok(wait) => wait,
                Err(e) => {
                    warn!(error = %e, "the promotion schedule failed; retrying in a minute");
                    SCHEDULE_CHECK
                }
            };
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// One look at the schedule: assesses everyone if due; how long to wait next.
    async fn promotion_pass(&self) -> Result<Duration> {
        let p = self.config().trust.promotion.clone();
        if !p.scheduled {
            return Ok(SCHEDULE_CHECK);
        }
        let now = now_ms();
        let last = self
            .blocking(|s| s.trust_state(ASSESSED_AT))
            .await?
            .and_then(|v| v.parse::<i64>().ok());
        let last = match last {
            Some(at) => at,
            None => {
                // The schedule starts now.
                self.blocking(move |s| s.set_trust_state(ASSESSED_AT, &now.to_string()))
                    .await?;
                now
            }
        };
        let every = p.every.as_millis() as i64;
        if now >= last.saturating_add(every) {
            self.assess_all().await;
            let done = now_ms();
            self.blocking(move |s| s.set_trust_state(ASSESSED_AT, &done.to_string()))
                .await?;
            return Ok(p.every.min(SCHEDULE_CHECK));
        }
        let left = Duration::from_millis(
            last.saturating_add(every)
                .saturating_sub(now)
                .max(0)
                .unsigned_abs(),
        );
        Ok(left.min(SCHEDULE_CHECK))
    }
}

/// Why `agent` is not proposed for any tier change whatever its evidence: it has no
/// table of its own, or it is paused.
fn held_back(agent: &str, view: &AgentView) -> Option<String> {
    if !view.configured {
        return Some(format!("{agent} has no [agents.{agent}] table: only configured agents are proposed for tier changes."));
    }
    view.pause.as_ref().map(|p| {
        format!(
            "{agent} is {}; resume it before proposing tier changes.",
            p.describe()
        )
    })
}

/// The tier change the evidence calls for, with its reason: a run of denials comes
/// first (safety before convenience), then the assessment's suggestion.
fn called_for(view: &AgentView) -> Option<(Direction, Tier, String)> {
    match &view.demotion {
        Some(d) => Some((Direction::Demote, d.to, d.reason.clone())),
        None => view
            .assessment
            .suggested
            .map(|to| (Direction::Promote, to, view.assessment.reason.clone())),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use rusqlite::params;

    use super::*;
    use crate::approval::Asked;
    use crate::engine::Submission;

    /// A database from before the summaries: at the engine's start, each old request
    /// is flagged by its agent's threshold in the config (a configured agent's own, a
    /// stranger's by the unknown agents' rules); a new request is flagged by the
    /// threshold the policy judged it by, and a later config does not move it.
    #[tokio::test]
    async fn low_confidence_is_the_threshold_in_force_when_sent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.db");
        {
            let mut conn = rusqlite::Connection::open(&path).unwrap();
            crate::store::migrations()
                .to_version(&mut conn, 27)
                .unwrap();
            for (id, agent, confidence) in [
                ("a1", "m", 0.6),
                ("a2", "m", 0.9),
                ("a3", "x", 0.6),
                ("a4", "x", 0.3),
            ] {
                conn.execute(
                    "INSERT INTO approvals (id, short_id, agent, tool, args, status, risk_score, \
                     tool_class, risk_factors, policy_reason, confidence, created_at) \
                     VALUES (?1, ?1, ?2, 't', '{}', 'blocked', 'low', 'read', '[]', 'x', ?3, 1)",
                    params![id, agent, confidence],
                )
                .unwrap();
            }
        }
        // `m` acts on 0.8 or more (minimal); a stranger is supervised, standard: 0.5.
        let config = Config::parse(
            "[policy]\nunknown_agents = \"supervised\"\n\
             [agents.m]\ntier = \"supervised\"\nconfidence = \"minimal\"\n",
            Path::new("/nonexistent/bot.toml"),
        )
        .unwrap();
        let engine = Engine::new(Store::open(&path).unwrap(), config.clone());
        let low = async |agent: &str| {
            engine
                .agent_view(agent)
                .await
                .unwrap()
                .evidence
                .all_time
                .low_confidence
        };
        assert_eq!((low("m").await, low("x").await), (1, 1));
        let unsure = |confidence: f64| Submission {
            asked: Asked {
                agent: "m".into(),
                tool: "query_org_data".into(),
                args: serde_json::json!({"q": confidence}),
                confidence: Some(confidence),
                ..Asked::default()
            },
            ttl: None,
        };
        let m = config.agent("m").unwrap();
        let sent = engine.submit(unsure(0.7), &m).await.unwrap();
        assert_eq!(sent.approval.status, crate::approval::Status::Blocked);
        engine.submit(unsure(0.85), &m).await.unwrap();
        assert_eq!(low("m").await, 2);
        let recount = engine
            .recount_evidence(
                true,
                Actor {
                    name: "alice".into(),
                    via: crate::approval::Via::Cli,
                },
            )
            .await
            .unwrap();
        assert_eq!(recount.differed, []);
    }
}
