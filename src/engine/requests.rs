//! The request lifecycle: an agent submits a tool call, an owner decides it, the agent
//! cancels it or reports how it went, and deadlines expire it.
//!
//! 1. [`Engine::submit`] checks the request, asks the policy for a verdict (grants,
//!    the owner's tier, a pause), commits it (and its audit rows) through the
//!    group-commit writer, then publishes [`Event::Submitted`].
//! 2. A human decides with [`Engine::decide`] (CLI, Telegram, Slack); the store's
//!    `UPDATE … WHERE status = 'pending'` makes the first decision win, and the
//!    loser gets [`EngineError::AlreadySettled`] with the winner's record. A decision
//!    that arrives after the deadline loses to it: the store expires the request
//!    then and there, and the engine publishes that expiry.
//! 3. [`Engine::run_expiry`] sleeps until the earliest deadline (not a coarse
//!    poll) and expires what is due, requests and workflow check-ins alike, and acts
//!    on the approval rules' timers (reminders, escalation levels: docs/teams.md);
//!    deadlines and timers live in SQLite, so a restart picks them up again.
//! 4. Every change is published as [`Event::Settled`]; long-polling agents
//!    ([`Engine::wait`]) and chat channels listen on the bus.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::field::Empty;
use tracing::{info, info_span, warn, Instrument, Span};

use super::{check_agent_name, Conflict, Engine, EngineError, Event, GrantRefused, What};
use crate::approval::{Approval, Asked, Decision, ListFilter, Status, Verb};
use crate::config::{AgentConfig, Config};
use crate::names::hidden_character;
use crate::policy::shell;
use crate::policy::{Action, AgentRules, History, Request, RiskScore, Tier, Verdict, GRANT_SOURCE};
use crate::store::{
    Inserted, Lookup, NewApproval, NewOffer, Store, StoreError, SubmitFacts, Transition, Voted,
};
use crate::time::{after, now_ms, range, Range};
use crate::trust::grants::{
    canonical_args, check_prefix, command_of, offered_prefix, prefix_to_grant,
};
use crate::trust::{paused_verdict, Grant, GrantAsk, Scope};
use crate::wire::{MAX_KEY_LEN, MAX_SUMMARY_CHARS, MAX_TOOL_LEN};

/// Records a request's id, agent, tool and status (as `verdict`) in `span`, if the
/// span declares those fields (request spans declare them `Empty` and fill them in
/// as they become known; a later call overwrites `verdict` with the newer status).
pub fn record_request(span: &Span, a: &Approval) {
    span.record("id", a.id.as_str());
    span.record("agent", a.agent.as_str());
    span.record("tool", a.tool.as_str());
    span.record("verdict", a.status.as_str());
}

/// "approved by alice on Telegram", "expired: no response within 24 h".
#[must_use]
pub fn describe_settled(a: &Approval) -> String {
    let by = a.decider();
    match a.status {
        Status::Expired => format!(
            "expired: {}",
            a.decision_reason
                .as_deref()
                .unwrap_or("no response in time")
        ),
        Status::Rejected => match &a.decision_reason {
            Some(r) => format!("denied by {by}: {r}"),
            None => format!("denied by {by}"),
        },
        Status::Cancelled => match &a.decision_reason {
            Some(why) => format!("withdrawn: {why}"),
            None => "cancelled by the agent".to_string(),
        },
        Status::Allowed => "allowed by policy".to_string(),
        Status::Blocked => "blocked by policy".to_string(),
        Status::Pending => "pending".to_string(),
        Status::Approved | Status::Executing | Status::Succeeded | Status::Failed => {
            format!("approved by {by}")
        }
    }
}

/// What an approval grants, beyond running the request once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GrantChoice {
    pub scope: ScopeChoice,
    /// A time-boxed grant: it stops covering calls after this long.
    pub for_: Option<Duration>,
}

/// Which scope a grant takes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ScopeChoice {
    /// The whole tool; for a shell-like tool, the exact command.
    #[default]
    Default,
    /// A shell-like tool's exact command.
    Exact,
    /// Commands starting with the prefix named, or (`None`) the one the prompt offered.
    Prefix(Option<String>),
}

/// A request as an agent submits it.
#[derive(Debug, Clone, Default)]
pub struct Submission {
    /// Its `task_id`, if any, must be one of the agent's tasks.
    pub asked: Asked,
    pub ttl: Option<Duration>,
}

/// The result of a submission.
#[derive(Debug, Clone)]
pub struct Submitted {
    pub approval: Approval,
    /// False when an earlier request with the same idempotency key was returned.
    pub created: bool,
}

/// The group-commit writer is gone (the engine is shutting down, or it panicked).
fn writer_stopped() -> EngineError {
    EngineError::Internal {
        context: "committing a request: the store writer has stopped",
        source: None,
    }
}

/// A request waiting for the group-commit writer, and where to send its result.
pub(super) type InsertJob = (NewApproval, oneshot::Sender<Result<Inserted, StoreError>>);

/// Most requests committed in one transaction.
pub(super) const MAX_BATCH: usize = 128;

/// How many times a submit is judged when single-use grants it counted on are used up
/// by copies of the call committed first (each time, the spent grant is out).
const SUBMIT_ATTEMPTS: usize = 4;

/// How long the expiry task waits after a failed pass before it tries again.
const EXPIRY_RETRY: Duration = Duration::from_secs(5);

impl Engine {
    fn validate(&self, sub: &Submission) -> Result<Duration, EngineError> {
        let config = self.config();
        check_agent_name(&sub.asked.agent)?;
        if sub.asked.tool.trim().is_empty() || sub.asked.tool.len() > MAX_TOOL_LEN {
            return Err(EngineError::invalid(
                "tool",
                format!("`tool` must be 1-{MAX_TOOL_LEN} characters"),
            ));
        }
        if let Some(why) = hidden_character("tool", &sub.asked.tool) {
            return Err(EngineError::invalid("tool", why));
        }
        if let Some(s) = &sub.asked.summary {
            if s.chars().count() > MAX_SUMMARY_CHARS {
                return Err(EngineError::invalid(
                    "summary",
                    format!("`summary` is longer than {MAX_SUMMARY_CHARS} characters"),
                ));
            }
        }
        if let Some(c) = sub.asked.confidence {
            if !(0.0..=1.0).contains(&c) {
                return Err(EngineError::invalid(
                    "confidence",
                    format!("`confidence` must be between 0.0 and 1.0, got {c}"),
                ));
            }
        }
        if let Some(c) = sub.asked.cost {
            if !crate::budget::valid_cost(c) {
                return Err(EngineError::invalid(
                    "cost",
                    format!(
                        "`cost` must be a number from 0 to {:.0}, got {c}",
                        crate::budget::MAX_COST
                    ),
                ));
            }
        }
        if let Some(k) = &sub.asked.idempotency_key {
            if k.is_empty() || k.len() > MAX_KEY_LEN {
                return Err(EngineError::invalid(
                    "idempotency_key",
                    format!("`idempotency_key` must be 1-{MAX_KEY_LEN} bytes"),
                ));
            }
        }
        let ttl = sub.ttl.unwrap_or(config.default_ttl);
        // `policy.max_ttl` bounds it, and lies in range::TTL itself.
        let allowed = Range::new(range::TTL.min, config.max_ttl.min(range::TTL.max));
        allowed.check(ttl).map_err(|e| {
            EngineError::invalid("ttl", format!("`ttl` {e} (the longest is policy.max_ttl)"))
        })
    }

    /// Scores, stores and publishes a request. The request is committed before this returns.
    pub async fn submit(
        &self,
        sub: Submission,
        agent: &AgentConfig,
    ) -> Result<Submitted, EngineError> {
        let ttl = self.validate(&sub)?;
        let task_id = self.task_of_request(&sub).await?;
        // The gate's order (engine::gate): a pause commits before the facts are read or
        // after this request is stored, never in between.
        let _order = self.submitting().await;
        // Judged again only when a single-use grant it counted on was used up by a
        // copy of the call committed first: that grant is then out of the facts.
        for _ in 0..SUBMIT_ATTEMPTS {
            let new = self.judged(&sub, agent, task_id.clone(), ttl).await?;
            return match self.commit(new).await? {
                Inserted::New(a) => {
                    let counted = a.status == Status::Allowed && sub.asked.cost.is_some();
                    let submitted = self.announce_submitted(a);
                    if counted {
                        self.spent(&submitted.approval.agent);
                    }
                    Ok(submitted)
                }
                Inserted::Existing(a) => Ok(Submitted {
                    approval: a,
                    created: false,
                }),
                Inserted::Conflict(a) => Err(EngineError::IdempotencyConflict {
                    key: sub.asked.idempotency_key.unwrap_or_default(),
                    what: What::Request,
                    id: a.short_id,
                }),
                Inserted::GrantSpent => continue,
            };
        }
        Err(EngineError::Store(StoreError::Corrupt(format!(
            "a request of {} was judged {SUBMIT_ATTEMPTS} times, each under a single-use grant \
             used up meanwhile",
            sub.asked.agent
        ))))
    }

    /// The request `sub` as the policy judges it now, ready to store.
    async fn judged(
        &self,
        sub: &Submission,
        agent: &AgentConfig,
        task_id: Option<String>,
        ttl: Duration,
    ) -> Result<NewApproval, EngineError> {
        let config = self.config();
        let (name, tool, at) = (sub.asked.agent.clone(), sub.asked.tool.clone(), now_ms());
        let facts = self
            .blocking(move |s| s.submit_facts(&name, &tool, at))
            .await?;
        let judged = judge(&config, &sub.asked, agent, &facts);
        let verdict = judged.verdict;
        let now = now_ms();
        let status = match verdict.action {
            Action::Allow => Status::Allowed,
            Action::Ask => Status::Pending,
            Action::Block => Status::Blocked,
        };
        let (route, audience) = if status == Status::Pending && !config.teams.rules.is_empty() {
            let tier = rules_in_force(agent, facts.tier).tier;
            self.route(
                &config,
                &sub.asked,
                tier,
                verdict.risk.score,
                task_id.as_deref(),
            )
            .await?
            .map_or((None, Vec::new()), |(r, a)| (Some(r), a))
        } else {
            (None, Vec::new())
        };
        let deadline = route.as_ref().and_then(|r| r.deadline_ms);
        Ok(NewApproval {
            asked: Asked {
                task_id,
                ..sub.asked.clone()
            },
            content_hash: content_hash(sub),
            status,
            risk: verdict.risk,
            policy_reason: verdict.reason,
            checkpoint: verdict.checkpoint,
            always_allow_offered: verdict.always_allow_offered,
            // A routed request waits until its rule's deadline, then is denied.
            ttl_ms: (status == Status::Pending).then(|| deadline.unwrap_or(ttl.as_millis() as i64)),
            created_at: now,
            expires_at: (status == Status::Pending)
                .then(|| deadline.map_or_else(|| after(now, ttl), |d| now.saturating_add(d))),
            offer: judged.offer,
            // A pause blocks the call, grant or not.
            grant_id: judged.grant_id.filter(|_| status == Status::Allowed),
            draft: verdict.draft,
            route,
            audience,
            // The threshold the policy judged it by (a tier override keeps the agent's
            // confidence thresholds).
            low_confidence: sub
                .asked
                .confidence
                .is_some_and(|c| c < agent.rules.confidence.ask_human),
        })
    }

    /// What the first approval rule that matches a request asks (`[[approval_rules]]`),
    /// with the people of its groups and who handed over the request's task, and where
    /// its prompts go on each chat platform that is on.
    async fn route(
        &self,
        config: &Config,
        asked: &Asked,
        tier: Tier,
        risk: RiskScore,
        task_id: Option<&str>,
    ) -> Result<Option<(crate::approval::votes::Route, Vec<(String, String)>)>, EngineError> {
        let task = match task_id {
            Some(id) => match self.task_subject(id).await? {
                Some(crate::engine::TaskSubject::Task(t)) => Some(t),
                _ => None,
            },
            None => None,
        };
        let facts = crate::config::teams::RuleFacts {
            agent: &asked.agent,
            tool: &asked.tool,
            risk,
            tier,
            intent: task.as_ref().map(|t| t.intent),
        };
        let Some(rule) = config.teams.rule_for(&facts) else {
            return Ok(None);
        };
        // Where prompts to some groups go on every platform that is on, and who is asked
        // in each chat.
        let places_of = |groups: &[String]| -> Vec<crate::approval::votes::Place> {
            config
                .platforms
                .iter()
                .flat_map(|p| {
                    let key = p.key();
                    config
                        .teams
                        .places(groups, key, &config.people)
                        .into_iter()
                        .map(move |(chat, people)| crate::approval::votes::Place {
                            platform: key.to_string(),
                            chat,
                            people: people.into_iter().collect(),
                        })
                })
                .collect()
        };
        let places = places_of(&rule.ask);
        let step_up = match rule.step_up {
            crate::config::teams::StepUp::Always => true,
            crate::config::teams::StepUp::Never => false,
            crate::config::teams::StepUp::Critical => {
                risk == RiskScore::Critical && self.blocking(|s| s.any_factor()).await?
            }
        };
        let audience = places
            .iter()
            .map(|p| (p.platform.clone(), p.chat.clone()))
            .collect();
        let millis = |d: std::time::Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        let route = crate::approval::votes::Route {
            rule: rule.name.clone(),
            asked: config.teams.asked(&rule.ask),
            approvals: rule.approvals,
            denials: rule.denials,
            self_approval: rule.self_approval,
            step_up,
            handed_by: task.map(|t| t.created_by),
            deadline_ms: rule.deadline.map(millis),
            places,
            remind_after_ms: rule.remind_after.map(millis),
            levels: rule
                .escalation
                .iter()
                .map(|e| crate::approval::votes::Level {
                    after_ms: millis(e.after),
                    asked: config.teams.asked(&e.ask),
                    places: places_of(&e.ask),
                    repeat_ms: e.repeat.map(millis),
                })
                .collect(),
            escalated: 0,
            handled_ms: 0,
        };
        Ok(Some((route, audience)))
    }

    /// Commits a request through the group-commit writer (with fsync) before it
    /// returns; concurrent submissions share a commit.
    async fn commit(&self, new: NewApproval) -> Result<Inserted, EngineError> {
        let (reply, result) = oneshot::channel();
        self.inserts
            .send((new, reply))
            .await
            .map_err(|_| writer_stopped())?;
        self.count_held_back(
            result
                .await
                .map_err(|_| writer_stopped())?
                .map_err(EngineError::from),
        )
    }

    /// Logs, counts and publishes a request just stored.
    fn announce_submitted(&self, a: Approval) -> Submitted {
        info!(
            id = %a.id, short_id = %a.short_id, agent = %a.agent, tool = %a.tool,
            verdict = %a.status, risk = a.risk.score.as_str(),
            "request submitted"
        );
        self.metrics.submitted(a.status);
        if a.status == Status::Pending {
            self.deadlines_changed.notify_one();
        }
        self.publish(Event::Submitted(Arc::new(a.clone())));
        Submitted {
            approval: a,
            created: true,
        }
    }

    /// Finds a request by full id, short id or unique prefix (≥ 4 characters).
    pub async fn lookup(&self, typed: &str, pending_only: bool) -> Result<Approval, EngineError> {
        let t = typed.to_string();
        match self.blocking(move |s| s.lookup(&t, pending_only)).await? {
            Lookup::Found(a) => Ok(*a),
            Lookup::Ambiguous(candidates) => Err(EngineError::Ambiguous {
                what: What::Request,
                typed: typed.to_string(),
                candidates,
            }),
            Lookup::NotFound => Err(EngineError::not_found(What::Request, typed)),
        }
    }

    /// A request by its full id.
    pub async fn get(&self, id: &str) -> Result<Approval, EngineError> {
        let i = id.to_string();
        self.blocking(move |s| s.get(&i))
            .await?
            .ok_or_else(|| EngineError::not_found(What::Request, id))
    }

    /// Applies an owner's decision to the request `typed` names. Channels must
    /// check that the actor is an approver before calling this. "Always allow" grants
    /// what the request's tool allows by default: the whole tool, or for a shell-like
    /// tool the exact command (see [`Engine::decide_granting`]).
    pub async fn decide(&self, typed: &str, decision: Decision) -> Result<Approval, EngineError> {
        self.decide_granting(typed, decision, GrantChoice::default())
            .await
    }

    /// [`Engine::decide`], choosing what an approval grants: its scope, and with
    /// `for_` a time-boxed grant (which an `approve` makes too).
    pub async fn decide_granting(
        &self,
        typed: &str,
        decision: Decision,
        choice: GrantChoice,
    ) -> Result<Approval, EngineError> {
        // Its own span, since chat channels call this as well as the API.
        let span = info_span!(
            "decide",
            id = Empty,
            agent = Empty,
            tool = Empty,
            verdict = Empty,
            by = %decision.actor,
            via = decision.via.as_str(),
        );
        let result = self
            .decide_in_span(typed, decision, choice)
            .instrument(span.clone())
            .await;
        match &result {
            Ok(a) => record_request(&span, a),
            Err(EngineError::AlreadySettled(a)) => record_request(&span, a),
            Err(_) => {}
        }
        result
    }

    async fn decide_in_span(
        &self,
        typed: &str,
        decision: Decision,
        choice: GrantChoice,
    ) -> Result<Approval, EngineError> {
        let approval = match self.lookup(typed, true).await {
            Err(EngineError::NotFound { .. }) => self.lookup(typed, false).await?,
            other => other?,
        };
        let wants_grant = decision.verb == Verb::ApproveAlways || choice.for_.is_some();
        if decision.verb == Verb::Deny && choice != GrantChoice::default() {
            return Err(EngineError::Grant(GrantRefused::DenialGrantsNothing));
        }
        if choice.scope != ScopeChoice::Default && !wants_grant {
            return Err(EngineError::Grant(GrantRefused::ScopeWithoutGrant));
        }
        if wants_grant && approval.status == Status::Pending && !approval.always_allow_offered {
            return Err(EngineError::Grant(GrantRefused::NotOffered {
                request: approval.short_id.clone(),
                tool: approval.tool.clone(),
            }));
        }
        let grant = if wants_grant && approval.status == Status::Pending {
            Some(self.grant_ask(&approval, &choice).await?)
        } else {
            None
        };
        record_request(&Span::current(), &approval);
        if let Some(route) = approval
            .route
            .clone()
            .filter(|_| approval.status == Status::Pending)
        {
            return self.vote(typed, &approval, &route, decision, grant).await;
        }
        let id = approval.id.clone();
        let d = decision.clone();
        let transition = self
            .blocking(move |s| s.decide_granting(&id, &d, grant.as_ref(), now_ms()))
            .await?;
        self.settled(typed, &decision, transition).await
    }

    /// A person's decision on a request an approval rule routes: their vote, taken
    /// only from someone the rule asks (and, for an approval, not from whoever handed
    /// over its task when the rule says so). The request settles when the vote reaches
    /// the rule's approvals or denials; until then it is returned still pending.
    async fn vote(
        &self,
        typed: &str,
        a: &Approval,
        route: &crate::approval::votes::Route,
        decision: Decision,
        grant: Option<GrantAsk>,
    ) -> Result<Approval, EngineError> {
        let approve = decision.verb != Verb::Deny;
        if let Err(why) = route.may_vote(&decision.actor, approve) {
            let detail = json!({"attempted": decision.verb, "refused": why.words(&a.short_id)});
            let (id, actor, via) = (a.id.clone(), decision.actor.clone(), decision.via.clone());
            self.blocking(move |s| {
                s.audit(
                    now_ms(),
                    Some(&id),
                    "vote_refused",
                    Some(&actor),
                    Some(&via),
                    &detail,
                )
            })
            .await?;
            return Err(EngineError::VoteRefused {
                request: a.short_id.clone(),
                why,
            });
        }
        if approve && route.step_up && !decision.factor {
            return Err(self.step_up_required(a, &decision.actor).await?);
        }
        let now = now_ms();
        let vote = crate::approval::votes::Vote {
            person: decision.actor.clone(),
            via: decision.via.clone(),
            approve,
            reason: decision.reason.clone(),
            at: now,
            factor: decision.factor,
        };
        let (id, d) = (a.id.clone(), decision.clone());
        let voted = self
            .blocking(move |s| s.vote(&id, &vote, &d, grant.as_ref(), now))
            .await?;
        match voted {
            Voted::Settled(transition) => self.settled(typed, &decision, transition).await,
            Voted::Counted(a, votes) => {
                info!(
                    id = %a.id, short_id = %a.short_id, by = %decision.actor,
                    via = decision.via.as_str(), approve, votes = votes.len(),
                    "vote counted; the request waits for more"
                );
                // Its cards (and open dashboards) show who has voted.
                self.publish(Event::Subject(a.id.clone()));
                Ok(a)
            }
            Voted::Again(a, first) => Err(EngineError::VotedAlready {
                request: a.short_id,
                approved: first.approve,
            }),
        }
    }

    /// The votes cast on request `id`, in order.
    pub async fn votes(&self, id: &str) -> Result<Vec<crate::approval::votes::Vote>, EngineError> {
        let id = id.to_string();
        self.blocking(move |s| s.votes(&id)).await
    }

    /// What a decision's transition comes to: the request decided (logged, counted,
    /// published), or refused as settled (and audited; expired now if its deadline had
    /// passed).
    async fn settled(
        &self,
        typed: &str,
        decision: &Decision,
        transition: Transition,
    ) -> Result<Approval, EngineError> {
        let (a, expired_now) = match transition {
            Transition::Done(a) => {
                info!(
                    id = %a.id, short_id = %a.short_id, agent = %a.agent, tool = %a.tool,
                    verdict = %a.status, by = %decision.actor, via = decision.via.as_str(),
                    "request decided"
                );
                self.metrics.settled(
                    a.status,
                    a.decided_at
                        .unwrap_or(a.created_at)
                        .saturating_sub(a.created_at),
                );
                self.deadlines_changed.notify_one();
                self.publish(Event::Settled(Arc::new(a.clone())));
                if a.status == Status::Approved {
                    self.spent(&a.agent);
                }
                return Ok(a);
            }
            Transition::NotFound => return Err(EngineError::not_found(What::Request, typed)),
            Transition::OverBudget(a, why) => {
                info!(
                    id = %a.id, agent = %a.agent, by = %decision.actor,
                    "approval refused: over budget"
                );
                return Err(EngineError::Conflict(Conflict::OverBudget {
                    request: a.short_id,
                    why,
                }));
            }
            Transition::AlreadySettled(a) => (a, false),
            Transition::Expired(a) => (a, true),
        };
        if expired_now {
            // The deadline had passed: this call expired the request, so it announces it.
            self.announce_expired(&a);
            self.deadlines_changed.notify_one();
        }
        let (id, actor, via) = (a.id.clone(), decision.actor.clone(), decision.via.clone());
        let detail = json!({"attempted": decision.verb, "status": a.status.as_str()});
        self.blocking(move |s| {
            s.audit(
                now_ms(),
                Some(&id),
                "decision_refused",
                Some(&actor),
                Some(&via),
                &detail,
            )
        })
        .await?;
        Err(EngineError::AlreadySettled(Box::new(a)))
    }

    /// What an approval of `a` grants under `choice` (see [`ScopeChoice`]). The
    /// command comes from what the prompt offered, or, for a request from before its
    /// tool was shell-like, from its arguments under the config's `command_arg`.
    async fn grant_ask(&self, a: &Approval, choice: &GrantChoice) -> Result<GrantAsk, EngineError> {
        let config = self.config();
        let offer = self.offer(&a.id).await?;
        let command_arg = config.trust.shell_tools.get(&a.tool);
        let command = offer.as_ref().and_then(|o| o.command.clone()).or_else(|| {
            command_arg
                .and_then(|arg| command_of(&a.args, arg))
                .map(|c| c.trim_ascii().to_string())
        });
        let shell = command.is_some() || command_arg.is_some();
        let refused = |why| Err(EngineError::Grant(why));
        let scope = match (&choice.scope, shell, command) {
            (ScopeChoice::Default, false, _) => Scope::Tool,
            (_, true, None) => {
                return refused(GrantRefused::NoCommand {
                    request: a.short_id.clone(),
                    tool: a.tool.clone(),
                    arg: command_arg.map_or("command", String::as_str).to_string(),
                })
            }
            (ScopeChoice::Default | ScopeChoice::Exact, true, Some(c)) => Scope::Exact(c),
            (ScopeChoice::Exact | ScopeChoice::Prefix(_), false, _) => {
                return refused(GrantRefused::NotShell {
                    tool: a.tool.clone(),
                })
            }
            // The offer stored with the request is checked again: the rules of what a
            // prefix may cover may have tightened since the prompt was made.
            (ScopeChoice::Prefix(None), true, Some(c)) => Scope::Prefix(
                prefix_to_grant(&shell::Command::read(&c), offer.and_then(|o| o.prefix))
                    .map_err(|why| EngineError::Grant(GrantRefused::Prefix(why)))?,
            ),
            (ScopeChoice::Prefix(Some(p)), true, Some(c)) => Scope::Prefix(
                check_prefix(&shell::Command::read(&c), p)
                    .map_err(|why| EngineError::Grant(GrantRefused::Prefix(why)))?,
            ),
        };
        let for_ = match choice.for_ {
            Some(d) => Some(
                range::GRANT_FOR
                    .check(d)
                    .map_err(|e| EngineError::Grant(GrantRefused::For(e.to_string())))?,
            ),
            None => None,
        };
        let expires_at = for_.map(|d| after(now_ms(), d));
        Ok(GrantAsk::always(scope, expires_at))
    }

    /// How many requests are pending (also a health check: the store answers).
    pub async fn count_pending(&self) -> Result<usize, EngineError> {
        self.blocking(|s| s.count_pending()).await
    }

    /// The oldest `limit` pending requests, and how many are pending in all.
    pub async fn pending_page(&self, limit: usize) -> Result<(Vec<Approval>, usize), EngineError> {
        self.blocking(move |s| Ok((s.list(Some(Status::Pending), limit)?, s.count_pending()?)))
            .await
    }

    /// One page of requests (see [`ListFilter`]).
    pub async fn list(&self, filter: ListFilter) -> Result<Vec<Approval>, EngineError> {
        self.blocking(move |s| s.list_page(&filter)).await
    }

    /// Tools owners allowed for `agent` with "Always allow".
    pub async fn always_allowed_tools(&self, agent: &str) -> Result<Vec<String>, EngineError> {
        let agent = agent.to_string();
        self.blocking(move |s| s.always_allowed_tools(&agent)).await
    }

    /// The agent withdraws its own pending request.
    pub async fn cancel(&self, id: &str, agent: &str) -> Result<Approval, EngineError> {
        let (i, ag) = (id.to_string(), agent.to_string());
        let t = self.blocking(move |s| s.cancel(&i, &ag, now_ms())).await?;
        self.cancelled(id, t)
    }

    /// Withdraws a pending request nobody is left to run: `by` ended its task, `why`
    /// says how ("task t7m2abcd was cancelled by alice").
    pub async fn withdraw(&self, id: &str, by: &str, why: &str) -> Result<Approval, EngineError> {
        let (i, b, w) = (id.to_string(), by.to_string(), why.to_string());
        let t = self
            .blocking(move |s| s.withdraw(&i, &b, &w, now_ms()))
            .await?;
        self.cancelled(id, t)
    }

    /// Announces what a cancel or a withdrawal did.
    fn cancelled(&self, id: &str, t: Transition) -> Result<Approval, EngineError> {
        match t {
            Transition::Done(a) => {
                info!(id = %a.id, agent = %a.agent, tool = %a.tool, "request cancelled");
                self.metrics.settled(a.status, 0);
                self.deadlines_changed.notify_one();
                self.publish(Event::Settled(Arc::new(a.clone())));
                Ok(a)
            }
            Transition::Expired(a) => {
                self.announce_expired(&a);
                self.deadlines_changed.notify_one();
                Err(EngineError::AlreadySettled(Box::new(a)))
            }
            Transition::AlreadySettled(a) | Transition::OverBudget(a, _) => {
                Err(EngineError::AlreadySettled(Box::new(a)))
            }
            Transition::NotFound => Err(EngineError::not_found(What::Request, id)),
        }
    }

    /// Logs, counts and publishes an expiry. Called exactly once per expired request:
    /// by whichever transition expired it (the expiry pass, or a late decision or
    /// cancel that found the deadline passed).
    fn announce_expired(&self, a: &Approval) {
        let _span = info_span!(
            "expire",
            id = %a.id,
            agent = %a.agent,
            tool = %a.tool,
            verdict = a.status.as_str()
        )
        .entered();
        info!(
            id = %a.id, short_id = %a.short_id, agent = %a.agent, tool = %a.tool,
            verdict = "expired", "request expired"
        );
        self.metrics.settled(a.status, 0);
        self.publish(Event::Settled(Arc::new(a.clone())));
    }

    /// The agent reports that it is running the action, or how it went.
    pub async fn report(
        &self,
        id: &str,
        to: Status,
        detail: Option<String>,
    ) -> Result<Approval, EngineError> {
        let i = id.to_string();
        match self
            .blocking(move |s| s.report(&i, to, detail.as_deref(), now_ms()))
            .await?
        {
            Transition::Done(a) => {
                info!(id = %a.id, agent = %a.agent, tool = %a.tool, status = %a.status, "result reported");
                self.publish(Event::Settled(Arc::new(a.clone())));
                Ok(a)
            }
            Transition::AlreadySettled(a)
            | Transition::Expired(a)
            | Transition::OverBudget(a, _) => Err(EngineError::Conflict(Conflict::NotReportable {
                request: a.short_id,
                status: a.status,
            })),
            Transition::NotFound => Err(EngineError::not_found(What::Request, id)),
        }
    }

    /// Waits until the request leaves `pending`, `timeout` passes, or `stop` fires;
    /// returns the request as it is then.
    pub async fn wait(
        &self,
        id: &str,
        timeout: Duration,
        stop: &CancellationToken,
    ) -> Result<Approval, EngineError> {
        // Watch before reading, so a change between the read and the wait is not missed.
        let mut watching = self.waiters.watch(id);
        let current = self.get(id).await?;
        if current.status.is_settled() || timeout.is_zero() {
            return Ok(current);
        }
        // Not kept while waiting: the answer is the request as it is then.
        drop(current);
        tokio::select! {
            _ = tokio::time::sleep(timeout) => self.get(id).await,
            _ = stop.cancelled() => self.get(id).await,
            a = watching.changed() => Ok((*a).clone()),
        }
    }

    /// Expires requests at their deadlines until `stop` fires.
    pub async fn run_expiry(self: Arc<Self>, stop: CancellationToken) {
        loop {
            let expired = match self
                .blocking(|s| {
                    let now = now_ms();
                    Ok((
                        s.expire_due(now)?,
                        s.expire_check_ins_due(now)?,
                        s.route_timers_due(now)?,
                    ))
                })
                .await
            {
                Ok(v) => v,
                Err(e) => {
                    self.metrics.expiry_pass_failed();
                    warn!(error = %e, "expiry pass failed; retrying in 5s");
                    // Wait the whole delay, whatever the deadlines or new requests say:
                    // an overdue deadline would otherwise retry a failing pass at once,
                    // again and again.
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tokio::time::sleep(EXPIRY_RETRY) => {}
                    }
                    continue;
                }
            };
            let (requests, check_ins, timed) = expired;
            for a in requests {
                self.announce_expired(&a);
            }
            for (c, run) in check_ins {
                self.announce_check_in_expired(&c, &run);
            }
            for a in timed {
                // Escalated (its cards change, new chats get them) or reminded (its
                // chats post the reminders): either way its chats have work.
                info!(id = %a.id, short_id = %a.short_id, "request's approval rule timers acted on");
                self.publish(Event::Subject(a.id.clone()));
            }
            let next = self
                .blocking(|s| {
                    let (a, c, t) = (
                        s.next_deadline()?,
                        s.next_check_in_deadline()?,
                        s.next_route_timer()?,
                    );
                    Ok(a.into_iter().chain(c).chain(t).min())
                })
                .await
                .unwrap_or(None);
            // Sleep until the next deadline; a new request or a decision wakes us to
            // recompute. Cap the sleep so a clock jump cannot strand a deadline.
            let sleep = super::sleep_until(next);
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = self.deadlines_changed.notified() => {}
                _ = tokio::time::sleep(sleep) => {}
            }
        }
    }
}

/// The policy's verdict on a request, with what the owner's grants and pause add.
struct Judged {
    verdict: crate::policy::Verdict,
    /// What the prompt offers to grant, if it asks a human and may offer it.
    offer: Option<NewOffer>,
    /// The grant that let the call through, if one did (not the agent's config, not
    /// the policy on its own): its outcome, once reported, is evidence (docs/trust.md).
    grant_id: Option<String>,
}

/// Scores `asked` and decides it under the agent's rules, the owner's tier over the
/// config's, the grants in force and a pause ([`SubmitFacts`]).
fn judge(config: &Config, asked: &Asked, agent: &AgentConfig, facts: &SubmitFacts) -> Judged {
    // A shell-like tool's command, read once: it may make the call read-only, and
    // it decides which grants cover the call.
    let command_arg = config.trust.shell_tools.get(&asked.tool);
    let command = command_arg
        .and_then(|arg| command_of(&asked.args, arg))
        .map(shell::Command::read);
    let rules = rules_in_force(agent, facts.tier);
    let request = Request {
        tool: &asked.tool,
        args: &asked.args,
        confidence: asked.confidence,
        environment: asked.environment.as_deref(),
        command: command.as_ref(),
    };
    let first_use = !facts.run_before;
    let risk = config.policy.risk(&rules, first_use, &request);
    // A grant covers a call within its scope and up to the risk the owner approved.
    // A call grant (an owner's edit, for one use) is a decision already made, not a
    // standing rule: it answers the question the call would ask, whatever the tier.
    let (calls, in_scope): (Vec<&Grant>, Vec<&Grant>) = facts
        .grants
        .iter()
        .filter(|g| g.scope.covers(command.as_ref(), &asked.args))
        .partition(|g| matches!(g.scope, Scope::Call(_)));
    let grant = in_scope.iter().find(|g| risk.score <= g.max_risk).copied();
    let mut verdict = config.policy.decide(
        &rules,
        History {
            always_allowed: grant.is_some(),
            first_use,
        },
        &request,
        risk,
    );
    let let_through = name_grant(&mut verdict, grant, in_scope.first().copied())
        .or_else(|| answer_by_call_grant(&mut verdict, &calls));
    // A shell-like tool's call without a command has nothing a grant could name.
    if command_arg.is_some() && command.is_none() {
        verdict.always_allow_offered = false;
    }
    if let Some(pause) = &facts.pause {
        verdict = paused_verdict(verdict, pause);
    }
    let offer = (verdict.action == Action::Ask && verdict.always_allow_offered).then(|| NewOffer {
        command: command.as_ref().map(|c| c.raw.trim_ascii().to_string()),
        prefix: command.as_ref().and_then(offered_prefix),
        suggest_after: config.trust.grants.suggest_after,
    });
    Judged {
        verdict,
        offer,
        grant_id: let_through.map(|g| g.id.clone()),
    }
}

/// The agent's rules with the tier in force: the owner's, over the config's.
fn rules_in_force(agent: &AgentConfig, tier: Option<Tier>) -> Cow<'_, AgentRules> {
    match tier {
        Some(tier) if tier != agent.rules.tier => Cow::Owned(AgentRules {
            tier,
            ..agent.rules.clone()
        }),
        _ => Cow::Borrowed(&agent.rules),
    }
}

/// Lets a call that would ask a human through under a call grant (`calls`: those
/// whose arguments are exactly the call's), the owner's edit of an earlier request,
/// when its risk is within the grant's and not critical (a critical call always asks).
/// Returns the grant used; a call the policy blocks or allows anyway uses none.
fn answer_by_call_grant<'g>(verdict: &mut Verdict, calls: &[&'g Grant]) -> Option<&'g Grant> {
    if verdict.action != Action::Ask || verdict.risk.score == RiskScore::Critical {
        return None;
    }
    let g = calls.iter().find(|g| verdict.risk.score <= g.max_risk)?;
    verdict.action = Action::Allow;
    verdict.always_allow_offered = false;
    verdict.reason = format!(
        "an owner approved exactly this call ({}), so it runs once without asking (grant {})",
        g.reason.as_deref().unwrap_or("as edited"),
        g.short_id
    );
    Some(g)
}

/// Names in the verdict's reason the grant behind it: `grant`, the one that covers the call
/// and its risk, when it let the call through (returned); or else, when the call asks,
/// `in_scope`, a grant whose scope covers the call but not its risk, and why it did not count.
fn name_grant<'g>(
    verdict: &mut Verdict,
    grant: Option<&'g Grant>,
    in_scope: Option<&Grant>,
) -> Option<&'g Grant> {
    let let_through =
        grant.filter(|_| verdict.action == Action::Allow && verdict.reason.contains(GRANT_SOURCE));
    if let Some(g) = let_through {
        verdict.reason = format!("{} (grant {}: {})", verdict.reason, g.short_id, g.scope);
    }
    if let Some(g) = in_scope.filter(|_| grant.is_none() && verdict.action == Action::Ask) {
        let _ = write!(
            verdict.reason,
            "; grant {} ({}) covers calls only up to {} risk, the risk of the request it \
             was granted on",
            g.short_id,
            g.scope,
            g.max_risk.as_str()
        );
    }
    let_through
}

/// With an idempotency key: the hash of the whole request as the agent sent it, so a
/// repeat of its key must match it all.
fn content_hash(sub: &Submission) -> Option<String> {
    let a = &sub.asked;
    a.idempotency_key.as_ref().map(|_| {
        let mut content = json!({
            "tool": a.tool,
            "args": a.args,
            "summary": a.summary,
            "confidence": a.confidence,
            "environment": a.environment,
            "ttl_ms": sub.ttl.map(|t| t.as_millis() as u64),
            "task_id": a.task_id,
        });
        // Only when declared, so the hashes of requests without a cost stay as they were.
        if let Some(cost) = a.cost {
            content["cost"] = json!(cost);
        }
        crate::store::content_hash(&content)
    })
}

/// The group-commit writer: takes every submission waiting at the moment (up to
/// [`MAX_BATCH`]) and commits them in one transaction, then answers each. A lone
/// submission is committed at once; under load, batches form by themselves. It
/// stops when the engine (the last sender) is dropped.
pub(super) async fn write_batches(store: Arc<Store>, mut rx: mpsc::Receiver<InsertJob>) {
    while let Some(first) = rx.recv().await {
        let mut jobs = vec![first];
        while jobs.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        let (news, replies): (Vec<NewApproval>, Vec<_>) = jobs.into_iter().unzip();
        let s = store.clone();
        match tokio::task::spawn_blocking(move || s.insert_batch_guarded(&news)).await {
            Ok(results) => {
                for (result, reply) in results.into_iter().zip(replies) {
                    let _ = reply.send(result);
                }
            }
            Err(e) => {
                warn!(error = %e, "the store writer failed; its requests get an error");
                for reply in replies {
                    let _ = reply.send(Err(StoreError::Corrupt(format!(
                        "store writer failed: {e}"
                    ))));
                }
            }
        }
    }
}

/// Edit, then approve: an owner approves a pending call with its arguments changed.
impl Engine {
    /// How the call `typed` names would be judged with `args` instead (the owner's
    /// preview): its risk and the policy's reason, as a new request of the agent's now.
    pub async fn score_edit(
        &self,
        typed: &str,
        args: serde_json::Value,
    ) -> Result<(Approval, crate::policy::Verdict), EngineError> {
        let a = self.lookup(typed, true).await?;
        let edited = edited_args(args, &self.config())?;
        let verdict = self.judge_edit(&a, &edited).await?;
        Ok((a, verdict))
    }

    /// The verdict on `a`'s call with the arguments `edited`, as if the agent asked now.
    async fn judge_edit(
        &self,
        a: &Approval,
        edited: &serde_json::Value,
    ) -> Result<crate::policy::Verdict, EngineError> {
        let config = self.config();
        let agent = config
            .agent(&a.agent)
            .ok_or_else(|| EngineError::UnknownAgent(a.agent.clone()))?;
        let (name, tool, at) = (a.agent.clone(), a.tool.clone(), now_ms());
        let facts = self
            .blocking(move |s| s.submit_facts(&name, &tool, at))
            .await?;
        let asked = Asked {
            agent: a.agent.clone(),
            tool: a.tool.clone(),
            args: edited.clone(),
            summary: a.summary.clone(),
            confidence: a.confidence,
            environment: a.environment.clone(),
            ..Asked::default()
        };
        Ok(judge(&config, &asked, &agent, &facts).verdict)
    }

    /// Approves the pending call `typed` names as an owner edited it. A client that takes
    /// an edited call back (`accepts_edits`) gets `edited_args`. Any other is denied,
    /// with the exact edited call in the reason, and a single-use grant of that exact
    /// call for the next [`EDITED_CALL_GRANT`] lets it through when the agent makes it
    /// (unless the policy would block it or it scores critical: then it is judged like
    /// any call). Nothing runs that the owner did not see. Audited with both versions.
    pub async fn approve_edited(
        &self,
        typed: &str,
        args: serde_json::Value,
        actor: String,
        via: crate::approval::Via,
        factor: bool,
    ) -> Result<Approval, EngineError> {
        let a = self.lookup(typed, true).await?;
        let edited = edited_args(args, &self.config())?;
        if let Some(route) = a.route.as_ref().filter(|_| a.status == Status::Pending) {
            // Under an approval rule an edit is decided by one person: only someone the
            // rule asks, and only when one approval is enough.
            if let Err(why) = route.may_vote(&actor, true) {
                return Err(EngineError::VoteRefused {
                    request: a.short_id.clone(),
                    why,
                });
            }
            if route.step_up && !factor {
                return Err(self.step_up_required(&a, &actor).await?);
            }
            if route.approvals > 1 {
                return Err(EngineError::invalid(
                    "args",
                    format!(
                        "request {} needs {} approvals under approval rule \"{}\": an edited \
                         call cannot be voted on; approve it as asked, or deny it and tell the \
                         agent what to send instead",
                        a.short_id, route.approvals, route.rule
                    ),
                ));
            }
        }
        let now = now_ms();
        let (decision, grant) = if a.accepts_edits {
            let decision = Decision {
                verb: Verb::Approve,
                actor,
                via,
                reason: None,
                factor,
            };
            (decision, None)
        } else {
            let verdict = self.judge_edit(&a, &edited).await?;
            let grant = (verdict.action != Action::Block
                && verdict.risk.score != RiskScore::Critical)
                .then(|| GrantAsk {
                    scope: Scope::Call(canonical_args(&edited)),
                    expires_at: Some(after(now, EDITED_CALL_GRANT)),
                    uses: Some(1),
                    max_risk: Some(verdict.risk.score),
                });
            let decision = Decision {
                verb: Verb::Deny,
                actor,
                via,
                reason: Some(edited_call_reason(&a.tool, &edited, grant.is_some())),
                factor,
            };
            (decision, grant)
        };
        let (id, d) = (a.id.clone(), decision.clone());
        let transition = self
            .blocking(move |s| s.approve_edited(&id, &d, &edited, grant.as_ref(), now))
            .await?;
        self.settled(&a.id, &decision, transition).await
    }
}

/// How long the single-use grant of an edited call lasts, for an agent whose client
/// cannot take the edited call back: it is told the call, and makes it again.
pub const EDITED_CALL_GRANT: Duration = Duration::from_secs(3600);

/// What an agent whose client cannot take an edited call back is told: the exact call
/// to make instead, and whether it then runs without asking (`granted`).
fn edited_call_reason(tool: &str, edited: &serde_json::Value, granted: bool) -> String {
    let call = serde_json::to_string(edited).unwrap_or_default();
    let then = if granted {
        "within the next hour, and it runs once without asking again"
    } else {
        "and it is judged again like any call"
    };
    format!(
        "an owner approves this call only as edited, and your client cannot take an edited \
         call back: call {tool} with exactly these arguments instead, {then}: {call}"
    )
}

/// An owner's edited arguments, checked: a JSON object no larger than a request may be.
fn edited_args(args: serde_json::Value, config: &Config) -> Result<serde_json::Value, EngineError> {
    if !args.is_object() {
        return Err(EngineError::invalid(
            "args",
            "the edited arguments must be a JSON object, like the agent's",
        ));
    }
    let size = args.to_string().len();
    if size > config.queue.max_body_bytes {
        return Err(EngineError::invalid(
            "args",
            format!(
                "the edited arguments are {size} bytes; a request may hold at most {}",
                config.queue.max_body_bytes
            ),
        ));
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn engine(store: Store) -> Arc<Engine> {
        let config = Config::parse("", Path::new("/nonexistent/bot.toml")).unwrap();
        Engine::new(store, config)
    }

    /// Waits (in real time, off the runtime) until `cond` holds; panics after 10 s.
    async fn until(what: &str, cond: impl Fn() -> bool) {
        for _ in 0..1000 {
            if cond() {
                return;
            }
            tokio::task::spawn_blocking(|| std::thread::sleep(Duration::from_millis(10)))
                .await
                .unwrap();
        }
        panic!("never happened: {what}");
    }

    /// A store holding a request whose deadline has passed and whose expiry the
    /// database refuses: the expiry pass fails on it every time, while the next
    /// deadline stays in the past.
    fn overdue_and_unexpirable(dir: &Path) -> Store {
        let path = dir.join("g.db");
        let store = Store::open(&path).unwrap();
        let new = NewApproval::sample("m", "t", Some(2));
        let Ok(Inserted::New(a)) = store.insert(&new) else {
            panic!("not inserted")
        };
        // Every attempt to expire it fails, as a full disk or an I/O error would.
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(&format!(
                "CREATE TRIGGER refuse_expiry BEFORE UPDATE ON approvals \
                 WHEN NEW.id = '{}' AND NEW.status = 'expired' \
                 BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END;",
                a.id
            ))
            .unwrap();
        store
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_expiry_pass_waits_before_it_retries() {
        let dir = tempfile::tempdir().unwrap();
        let engine = engine(overdue_and_unexpirable(dir.path()));
        let stop = CancellationToken::new();
        let task = tokio::spawn(engine.clone().run_expiry(stop.clone()));
        until("the first pass failed", || {
            engine.metrics.expiry_pass_failures() >= 1
        })
        .await;
        // The clock is paused and does not move while a blocking call runs, so a task
        // that waits its retry delay makes no second attempt here; one that retried
        // at once would fail again and again in this real-time pause.
        tokio::task::spawn_blocking(|| std::thread::sleep(Duration::from_millis(200)))
            .await
            .unwrap();
        assert_eq!(engine.metrics.expiry_pass_failures(), 1);
        // After the delay it tries again (and fails again: the database still refuses).
        tokio::time::advance(EXPIRY_RETRY).await;
        until("the second pass failed", || {
            engine.metrics.expiry_pass_failures() >= 2
        })
        .await;
        stop.cancel();
        task.await.unwrap();
    }
}
