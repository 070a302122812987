//! The engine's side of the inbox: tasks handed over, classified, queued, claimed
//! under leases, reported on, answered, and timed out (see [`crate::inbox`]).
//!
//! 1. [`Engine::create_task`] checks the words, classifies them ([`Engine::classify`]:
//!    the model classifier when configured, keywords when it is not or fails), picks
//!    the level (the intent's configured level, lowered never raised by the
//!    classifier) and the agent (`[inbox.routes]`), and stores the task.
//! 2. Agents long-poll [`Engine::claim_task`] for their next queued task, up to their
//!    concurrency bound, and report with [`Engine::report_task`] under the lease it
//!    gave them. A completion is read for failure and pending input first
//!    ([`crate::inbox::detect`]).
//! 3. Owners step in with [`Engine::task_step`] (queue, reject, cancel, retry) and
//!    [`Engine::answer_task`] (a clarify answer classifies the task again).
//! 4. [`Engine::run_task_timers`] sleeps until the next lease, deadline or progress due,
//!    and applies it.
//!
//! After every change the task and its questions are published as
//! [`Event::Subject`], so delivery edits their cards, and waiting claims look again.
//! When a task ends, the requests its run made that still wait for a human are
//! withdrawn (cancelled): nobody is left to run them.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, Notify};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::{Conflict, Engine, EngineError, Event, Submission, What};
use crate::approval::Via;
use crate::config::inbox::InboxConfig;
use crate::inbox::classify::{self, Input};
use crate::inbox::detect::{self, Verdict};
use crate::inbox::lifecycle::Step;
use crate::inbox::Report;
use crate::inbox::{
    check_text, cut, tail, Classification, ClassifiedBy, Intent, Level, QuestionPurpose, Task,
    TaskQuestion, TaskStatus, MAX_ANSWER_CHARS, MAX_PROGRESS_CHARS, MAX_QUESTIONS,
    MAX_QUESTION_CHARS, MAX_RESULT_CHARS, MAX_TASK_CHARS,
};
use crate::names::valid_agent_name;
use crate::store::{Changed, NewTask, Reclassified, TaskLookup, TaskStep, Timing};
use crate::subject::Home;
use crate::time::now_ms;
use crate::trust::Actor;

/// The engine's task bookkeeping in memory: who to wake.
#[derive(Debug, Default)]
pub(super) struct TaskState {
    /// Claims waiting for work look again when any task changes.
    pub(super) changed: Notify,
    /// The timer task recomputes its next wake-up.
    pub(super) timers: Notify,
}

/// An owner hands over a task.
#[derive(Debug, Clone)]
pub struct TaskRequest {
    pub text: String,
    /// The agent to run it, instead of `[inbox.routes]`.
    pub agent: Option<String>,
    /// The intent, instead of the classifier's.
    pub intent: Option<Intent>,
    /// Who, as recorded.
    pub by: String,
    pub via: Via,
    /// Where its card goes (the chat it was written in); `None`: every destination.
    pub home: Option<Home>,
}

/// What a subject of kind `task` is: a task, or a question one asks.
#[derive(Debug, Clone)]
pub enum TaskSubject {
    Task(Box<Task>),
    Question(TaskQuestion, Box<Task>),
}

/// Longest session id accepted from an agent.
const MAX_SESSION_ID: usize = 200;

fn inbox_off() -> EngineError {
    EngineError::invalid(
        "inbox",
        "the inbox is off: add an [inbox] table to bot.toml (see docs/inbox.md)",
    )
}

/// Text an agent sends, made fit to show: escape sequences (colours) and other control
/// characters removed, cut to `max` characters (`keep_end`: keeping the end).
fn clean(s: &str, max: usize, keep_end: bool) -> String {
    static ANSI: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)")
            .expect("compiles")
    });
    let plain: String = ANSI
        .replace_all(s, "")
        .chars()
        .filter(|c| !c.is_control() || matches!(c, '\n' | '\t'))
        .collect();
    let plain = plain.trim();
    if keep_end {
        tail(plain, max)
    } else {
        cut(plain, max)
    }
}

fn check_cost(cost: Option<f64>) -> Result<Option<f64>, EngineError> {
    match cost {
        Some(c) if !crate::inbox::wire::valid_cost(c) => Err(EngineError::invalid(
            "cost_usd",
            format!(
                "`cost_usd` must be from 0 to {} (US dollars), got {c}",
                crate::inbox::wire::MAX_COST_USD
            ),
        )),
        other => Ok(other),
    }
}

fn check_session(session: Option<String>) -> Result<Option<String>, EngineError> {
    match session {
        Some(s)
            if s.trim().is_empty()
                || s.len() > MAX_SESSION_ID
                || s.chars().any(char::is_control) =>
        {
            Err(EngineError::invalid(
                "session_id",
                format!("`session_id` must be 1-{MAX_SESSION_ID} bytes without control characters"),
            ))
        }
        other => Ok(other.map(|s| s.trim().to_string())),
    }
}

/// A worker's report made safe to store: texts cleaned and cut to their limits, costs
/// and session ids checked, and a completion read for a failure or for questions at its
/// end ([`crate::inbox::detect`]).
fn checked_report(
    report: Report,
    failure_patterns: &regex::RegexSet,
) -> Result<Report, EngineError> {
    Ok(match report {
        Report::Progress(text) => Report::Progress(
            text.map(|t| clean(&t, MAX_PROGRESS_CHARS, true))
                .filter(|t| !t.is_empty()),
        ),
        Report::Complete {
            result,
            cost_usd,
            session_id,
        } => {
            let result = clean(&result, MAX_RESULT_CHARS, true);
            let cost_usd = check_cost(cost_usd)?;
            let session_id = check_session(session_id)?;
            match detect::verdict(&result, failure_patterns) {
                Verdict::Completed => Report::Complete {
                    result,
                    cost_usd,
                    session_id,
                },
                Verdict::Failed(line) => Report::Fail {
                    error: format!("the agent's output reports a failure: {line}"),
                    cost_usd,
                    session_id,
                },
                Verdict::NeedsInput(questions) => Report::NeedsInput {
                    questions,
                    session_id,
                },
            }
        }
        Report::Fail {
            error,
            cost_usd,
            session_id,
        } => {
            let error = clean(&error, MAX_RESULT_CHARS, true);
            Report::Fail {
                error: if error.is_empty() {
                    "the agent reported a failure without saying why".into()
                } else {
                    error
                },
                cost_usd: check_cost(cost_usd)?,
                session_id: check_session(session_id)?,
            }
        }
        Report::NeedsInput {
            questions,
            session_id,
        } => {
            let questions: Vec<String> = questions
                .iter()
                .map(|q| clean(q, MAX_QUESTION_CHARS, false))
                .filter(|q| !q.is_empty())
                .collect();
            if questions.is_empty() || questions.len() > MAX_QUESTIONS {
                return Err(EngineError::invalid(
                    "questions",
                    format!("`questions` must hold 1-{MAX_QUESTIONS} non-empty questions"),
                ));
            }
            Report::NeedsInput {
                questions,
                session_id: check_session(session_id)?,
            }
        }
    })
}

impl Engine {
    fn inbox_config(&self) -> Result<InboxConfig, EngineError> {
        self.config().inbox.clone().ok_or_else(inbox_off)
    }

    /// Publishes a change and wakes whoever waits on tasks.
    fn task_changed(&self, c: &Changed) {
        for id in &c.subjects {
            self.publish(Event::Subject(id.clone()));
        }
        if !c.task.status.is_open() {
            self.metrics.task_finished(c.task.status.as_str());
        }
        self.tasks.changed.notify_waiters();
        self.tasks.timers.notify_one();
    }

    /// Classifies by the model when one is configured, falling back to keywords (logged
    /// and counted) when it fails; by keywords otherwise.
    pub async fn classify(&self, inbox: &InboxConfig, input: Input<'_>) -> Classification {
        let Some(model) = &inbox.classifier else {
            return classify::by_keywords(input);
        };
        match model.classify(input).await {
            Ok(c) => c,
            Err(why) => {
                warn!(
                    reason = why.reason(),
                    "model classifier: {why}; classifying by keywords"
                );
                self.metrics.classifier_fallback(why.reason());
                classify::by_keywords(input)
            }
        }
    }

    /// Agents paused now.
    async fn paused_agents(&self) -> Result<BTreeSet<String>, EngineError> {
        self.blocking(|s| Ok(s.pauses()?.into_iter().map(|p| p.agent).collect()))
            .await
    }

    /// The level and agent for a classification: the intent's configured level,
    /// lowered (never raised) by the classifier's view, and the agent asked for or
    /// routed to (the first on the route that is not `paused`; the first when all are).
    fn place(
        &self,
        inbox: &InboxConfig,
        c: &Classification,
        agent: Option<&str>,
        paused: &BTreeSet<String>,
    ) -> Result<(Level, String), EngineError> {
        let level = match c.level {
            Some(l) => l.min(inbox.level(c.intent)),
            None => inbox.level(c.intent),
        };
        let route = inbox.route(c.intent);
        let routed = route
            .iter()
            .find(|a| !paused.contains(*a))
            .or(route.first())
            .map(String::as_str);
        let agent = match agent.or(routed) {
            Some(a) => a.to_string(),
            None => {
                return Err(EngineError::invalid(
                    "agent",
                    format!(
                        "no agent takes {} tasks: set [inbox.routes] {} (or default) in bot.toml",
                        c.intent, c.intent
                    ),
                ))
            }
        };
        if self.config().agent(&agent).is_none() {
            return Err(EngineError::invalid(
                "agent",
                format!("agent `{agent}` is not configured: add an [agents.{agent}] table"),
            ));
        }
        Ok((level, agent))
    }

    /// Checks, classifies, routes and stores a task; see the module docs. The caller
    /// has checked that the person may hand over tasks.
    pub async fn create_task(&self, req: TaskRequest) -> Result<Task, EngineError> {
        let inbox = self.inbox_config()?;
        let text = check_text("the task", &req.text, MAX_TASK_CHARS)
            .map_err(|why| EngineError::invalid("text", why))?;
        if let Some(a) = &req.agent {
            if !valid_agent_name(a) {
                return Err(EngineError::invalid(
                    "agent",
                    "`agent` must be 1-64 letters, digits, '-', '_' or '.'",
                ));
            }
        }
        let input = Input {
            text: &text,
            clarification: None,
            intent: req.intent,
        };
        let c = self.classify(&inbox, input).await;
        let paused = self.paused_agents().await?;
        let (level, agent) = self.place(&inbox, &c, req.agent.as_deref(), &paused)?;
        let new = NewTask {
            text,
            intent: c.intent,
            summary: c.summary,
            prompt: c.prompt,
            suggestion: c.suggestion,
            level,
            classifier: c.by,
            agent,
            clarify: c.clarify,
            created_by: req.by,
            created_via: req.via,
            home: req.home,
        };
        let changed = self
            .blocking(move |s| s.insert_task(&new, now_ms()))
            .await?;
        let t = &changed.task;
        info!(
            id = %t.id, short_id = %t.short_id, intent = %t.intent, agent = %t.agent,
            status = %t.status, classifier = t.classifier.as_str(), "task created"
        );
        self.metrics
            .task_created(t.classifier == ClassifiedBy::Model);
        self.task_changed(&changed);
        Ok(changed.task)
    }

    /// A task by full id, short id or unique prefix.
    pub async fn task(&self, typed: &str) -> Result<Task, EngineError> {
        let t = typed.to_string();
        match self.blocking(move |s| s.lookup_task(&t)).await? {
            TaskLookup::Found(t) => Ok(*t),
            TaskLookup::Ambiguous(candidates) => Err(EngineError::Ambiguous {
                what: What::Task,
                typed: typed.to_string(),
                candidates,
            }),
            TaskLookup::NotFound => Err(EngineError::not_found(What::Task, typed)),
        }
    }

    /// Open tasks, oldest first; with `all`, the latest `limit` of any status.
    pub async fn tasks(
        &self,
        all: bool,
        agent: Option<String>,
        limit: usize,
    ) -> Result<Vec<Task>, EngineError> {
        self.blocking(move |s| s.list_tasks(all, agent.as_deref(), limit))
            .await
    }

    /// What the subject `id` of kind `task` is now (`None`: gone).
    pub async fn task_subject(&self, id: &str) -> Result<Option<TaskSubject>, EngineError> {
        let id = id.to_string();
        self.blocking(move |s| {
            if let Some(t) = s.get_task(&id)? {
                return Ok(Some(TaskSubject::Task(Box::new(t))));
            }
            let Some(q) = s.question_by_id(&id)? else {
                return Ok(None);
            };
            Ok(s.get_task(&q.task)?
                .map(|t| TaskSubject::Question(q, Box::new(t))))
        })
        .await
    }

    /// Withdraws the requests still waiting for a human that `t`'s run made, once `t`
    /// has ended: whoever was to run them is gone, and their prompts should say so
    /// instead of waiting for an answer nobody needs.
    async fn withdraw_requests(&self, t: &Task) {
        if t.status.is_open() {
            return;
        }
        let id = t.id.clone();
        let pending = match self.blocking(move |s| s.pending_requests_of(&id)).await {
            Ok(p) => p,
            Err(e) => {
                warn!(id = %t.id, error = %e, "cannot read the requests of an ended task");
                return;
            }
        };
        let by = t
            .decided_by
            .clone()
            .unwrap_or_else(|| "gatebot".to_string());
        let why = match &t.decided_by {
            Some(who) => format!("its task {} was {} by {who}", t.short_id, t.status),
            None => format!("its task {} is {}", t.short_id, t.status),
        };
        for (request, _agent) in pending {
            match self.withdraw(&request, &by, &why).await {
                Ok(_) => info!(id = %request, task = %t.id, "request withdrawn: its task ended"),
                Err(e) => {
                    info!(id = %request, task = %t.id, error = %e, "request of an ended task not withdrawn")
                }
            }
        }
    }

    /// Maps a store step's result to the task or an error naming the task.
    fn stepped(&self, typed: &str, r: TaskStep) -> Result<Task, EngineError> {
        match r {
            TaskStep::Done(c) => {
                self.task_changed(&c);
                Ok(c.task)
            }
            TaskStep::Refused(t, why) => Err(EngineError::Conflict(Conflict::Task {
                task: t.short_id,
                status: t.status,
                why,
            })),
            TaskStep::LeaseLost(t) => Err(EngineError::Conflict(Conflict::LeaseLost {
                task: t.short_id,
            })),
            TaskStep::NotFound => Err(EngineError::not_found(What::Task, typed)),
        }
    }

    /// An owner's step on the task `typed` names: queue or reject a level-1 task,
    /// cancel an open one, retry a failed or cancelled one.
    pub async fn task_step(
        &self,
        typed: &str,
        step: Step,
        actor: &str,
        via: &Via,
    ) -> Result<Task, EngineError> {
        if !matches!(
            step,
            Step::Queue | Step::Reject | Step::Cancel | Step::Retry
        ) {
            return Err(EngineError::Internal {
                context: "an owner's task step: the step is not one an owner takes",
                source: None,
            });
        }
        self.inbox_config()?;
        let task = self.task(typed).await?;
        let (id, actor_s, via_s) = (task.id.clone(), actor.to_string(), via.clone());
        let r = self
            .blocking(move |s| s.decide_task(&id, step, &actor_s, &via_s, now_ms()))
            .await?;
        let t = self.stepped(typed, r)?;
        info!(id = %t.id, short_id = %t.short_id, status = %t.status, by = %actor, "task {}", step.event().trim_start_matches("task_").replace('_', " "));
        self.withdraw_requests(&t).await;
        Ok(t)
    }

    /// The owner answers the question `subject` (a question's id, or a task's: its
    /// open question). A clarify answer classifies the task again with it.
    pub async fn answer_task(
        &self,
        subject: &str,
        answer: &str,
        actor: &str,
        via: &Via,
    ) -> Result<Task, EngineError> {
        let inbox = self.inbox_config()?;
        let answer = check_text("the answer", answer, MAX_ANSWER_CHARS)
            .map_err(|why| EngineError::invalid("answer", why))?;
        let id = subject.to_string();
        let q = self.blocking(move |s| s.open_question(&id)).await?;
        let Some(q) = q else {
            // Say what the task is doing instead.
            let t = match self.task_subject(subject).await? {
                Some(TaskSubject::Task(t) | TaskSubject::Question(_, t)) => t,
                None => return Err(EngineError::not_found(What::Task, subject)),
            };
            return Err(EngineError::Conflict(Conflict::NothingAsked {
                task: t.short_id,
                status: t.status,
            }));
        };
        let task = self
            .task_subject(&q.task)
            .await?
            .and_then(|s| match s {
                TaskSubject::Task(t) => Some(t),
                TaskSubject::Question(..) => None,
            })
            .ok_or_else(|| EngineError::not_found(What::Task, q.task.clone()))?;
        let how = match q.purpose {
            QuestionPurpose::Input => Reclassified::Input,
            QuestionPurpose::Clarify => {
                let input = Input {
                    text: &task.text,
                    clarification: Some(&answer),
                    intent: None,
                };
                let c = self.classify(&inbox, input).await;
                // Keep an agent the owner chose: one the original intent does not route to.
                let chosen = (!inbox.route(task.intent).contains(&task.agent))
                    .then_some(task.agent.as_str());
                let paused = self.paused_agents().await?;
                let (level, agent) = self.place(&inbox, &c, chosen, &paused)?;
                Reclassified::Clarified {
                    intent: c.intent,
                    summary: c.summary,
                    prompt: c.prompt,
                    suggestion: c.suggestion,
                    level,
                    classifier: c.by,
                    agent,
                }
            }
        };
        let (qid, a, who, v) = (q.id.clone(), answer.clone(), actor.to_string(), via.clone());
        let r = self
            .blocking(move |s| s.answer_task(&qid, &a, &who, &v, &how, now_ms()))
            .await?;
        let t = self.stepped(subject, r)?;
        info!(id = %t.id, short_id = %t.short_id, status = %t.status, by = %actor, "task question answered");
        Ok(t)
    }

    /// `agent`'s next queued task, waiting up to `wait` for one (and for a free slot
    /// under its concurrency bound); `None` when the wait ran out or `stop` fired.
    pub async fn claim_task(
        &self,
        agent: &str,
        wait: Duration,
        stop: &CancellationToken,
    ) -> Result<Option<Task>, EngineError> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let inbox = self.inbox_config()?;
            // Registered before looking, so a change in between is not missed.
            let changed = self.tasks.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let (a, max) = (agent.to_string(), inbox.max_concurrent_for(agent));
            let lease_ms = inbox.lease.as_millis() as i64;
            let grace_ms = inbox.timeout_grace.as_millis() as i64;
            let timeouts = inbox.clone();
            // A paused agent claims nothing; a pause wakes this loop (`changed`).
            let acting = self.acting(agent).await?;
            let claimed = self
                .blocking(move |s| {
                    s.claim_task(
                        &a,
                        max,
                        lease_ms,
                        |i| timeouts.timeout(i).as_millis() as i64,
                        grace_ms,
                        now_ms(),
                    )
                })
                .await?;
            drop(acting);
            if let Some(c) = claimed {
                info!(id = %c.task.id, short_id = %c.task.short_id, agent, attempt = c.task.attempts, "task claimed");
                self.task_changed(&c);
                return Ok(Some(c.task));
            }
            tokio::select! {
                _ = &mut changed => {}
                _ = tokio::time::sleep_until(deadline) => return Ok(None),
                _ = stop.cancelled() => return Ok(None),
            }
        }
    }

    /// A worker's report on task `id` under `lease`. A completion whose output reports
    /// a failure fails the task; one that ends asking questions makes it wait for the
    /// owner ([`crate::inbox::detect`]).
    pub async fn report_task(
        &self,
        id: &str,
        lease: &str,
        report: Report,
    ) -> Result<Task, EngineError> {
        let inbox = self.inbox_config()?;
        if lease.trim().is_empty() {
            return Err(EngineError::invalid("lease", "`lease` is empty"));
        }
        let report = checked_report(report, &inbox.failure_patterns)?;
        let timing = Timing {
            lease_ms: inbox.lease.as_millis() as i64,
            progress_every_ms: inbox.progress_every.as_millis() as i64,
        };
        // A paused agent reports nothing: its running tasks were queued again, and its
        // worker learns why here.
        let key = id.to_string();
        let Some(agent) = self
            .blocking(move |s| s.get_task(&key))
            .await?
            .map(|t| t.agent)
        else {
            return Err(EngineError::not_found(What::Task, id));
        };
        let acting = self.acting(&agent).await?;
        let (i, l, rep) = (id.to_string(), lease.to_string(), report.clone());
        let r = self
            .blocking(move |s| s.report_task(&i, &l, &rep, timing, now_ms()))
            .await?;
        drop(acting);
        let t = self.stepped(id, r)?;
        if !matches!(report, Report::Progress(_)) {
            info!(id = %t.id, short_id = %t.short_id, agent = %t.agent, status = %t.status, "task reported");
        }
        self.withdraw_requests(&t).await;
        if let Report::Complete {
            cost_usd: Some(_), ..
        }
        | Report::Fail {
            cost_usd: Some(_), ..
        } = &report
        {
            self.spent(&t.agent);
        }
        Ok(t)
    }

    /// Waits until task `id` is finished or needs its owner (pending, waiting), or
    /// `timeout` passes, or `stop` fires; returns it as it is then.
    pub async fn wait_task(
        &self,
        id: &str,
        timeout: Duration,
        stop: &CancellationToken,
    ) -> Result<Task, EngineError> {
        let settled = |t: &Task| !matches!(t.status, TaskStatus::Queued | TaskStatus::Running);
        let mut rx = self.subscribe();
        let current = self.task(id).await?;
        if settled(&current) || timeout.is_zero() {
            return Ok(current);
        }
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => return self.task(&current.id).await,
                _ = stop.cancelled() => return self.task(&current.id).await,
                ev = rx.recv() => match ev {
                    Ok(Event::Subject(s)) if s == current.id => {
                        let t = self.task(&current.id).await?;
                        if settled(&t) {
                            return Ok(t);
                        }
                    }
                    Ok(_) => {}
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let t = self.task(&current.id).await?;
                        if settled(&t) {
                            return Ok(t);
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return self.task(&current.id).await,
                },
            }
        }
    }

    /// Applies lapsed leases, deadlines and due progress at their times, until `stop`.
    pub async fn run_task_timers(self: Arc<Self>, stop: CancellationToken) {
        loop {
            match self.blocking(|s| s.task_timers(now_ms())).await {
                Ok(changed) => {
                    for c in &changed {
                        let t = &c.task;
                        match t.status {
                            TaskStatus::Queued => warn!(
                                id = %t.id, short_id = %t.short_id, agent = %t.agent,
                                "task lease lapsed (its worker stopped reporting); queued again"
                            ),
                            TaskStatus::Failed => warn!(
                                id = %t.id, short_id = %t.short_id, agent = %t.agent,
                                error = t.error.as_deref().unwrap_or(""), "task failed by gatebot"
                            ),
                            _ => {}
                        }
                        self.task_changed(c);
                        self.withdraw_requests(t).await;
                    }
                }
                Err(e) => warn!(error = %e, "task timer pass failed; retrying"),
            }
            let next = self.blocking(|s| s.next_task_timer()).await.unwrap_or(None);
            // A change (a claim, progress) wakes us to recompute; the cap keeps a clock
            // jump from stranding a deadline.
            let sleep = super::sleep_until(next);
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = self.tasks.timers.notified() => {}
                _ = tokio::time::sleep(sleep) => {}
            }
        }
    }

    /// What pausing `agent` does to its tasks (the gate is held for the pause): its
    /// running tasks go back to the queue, and its queued tasks go to the next agent
    /// on their route that is not paused, if there is one; the rest wait for it.
    pub(super) async fn withhold_tasks(&self, agent: &str, actor: &Actor) {
        if self.config().inbox.is_none() {
            return;
        }
        let (a, who) = (agent.to_string(), actor.clone());
        match self
            .blocking(move |s| s.withhold_tasks_of(&a, &who.name, &who.via, now_ms()))
            .await
        {
            Ok(changed) => {
                for c in &changed {
                    info!(id = %c.task.id, short_id = %c.task.short_id, agent, "task queued again: its agent was paused");
                    self.task_changed(c);
                }
            }
            Err(e) => warn!(agent, error = %e, "cannot queue the tasks of a paused agent again"),
        }
        if let Err(e) = self.reroute_tasks(agent).await {
            warn!(agent, error = %e, "cannot route the tasks of a paused agent elsewhere");
        }
        // Claims waiting for the agent look again, and find it paused.
        self.tasks.changed.notify_waiters();
    }

    /// Sends `agent`'s queued tasks that came by a route to the next agent on it that
    /// is not paused.
    async fn reroute_tasks(&self, agent: &str) -> Result<(), EngineError> {
        let Some(inbox) = self.config().inbox.clone() else {
            return Ok(());
        };
        let paused = self.paused_agents().await?;
        let a = agent.to_string();
        let queued = self
            .blocking(move |s| {
                let ids = s.task_ids_of(&a, TaskStatus::Queued)?;
                let mut tasks = Vec::with_capacity(ids.len());
                for id in ids {
                    tasks.extend(s.get_task(&id)?);
                }
                Ok(tasks)
            })
            .await?;
        for t in queued {
            let route = inbox.route(t.intent);
            // A task an owner gave this agent by name waits for it.
            if !route.iter().any(|r| r == agent) {
                continue;
            }
            let Some(to) = route.iter().find(|r| *r != agent && !paused.contains(*r)) else {
                continue;
            };
            let (id, to_s) = (t.id.clone(), to.clone());
            let r = self
                .blocking(move |s| s.reroute_task(&id, &to_s, now_ms()))
                .await?;
            if let TaskStep::Done(c) = r {
                info!(id = %c.task.id, short_id = %c.task.short_id, from = agent, to = %to, "task routed to another agent: its own is paused");
                self.task_changed(&c);
            }
        }
        Ok(())
    }

    /// The task a request names (`task_id`), checked to be one of its agent's.
    pub(super) async fn task_of_request(
        &self,
        sub: &Submission,
    ) -> Result<Option<String>, EngineError> {
        let Some(id) = sub.asked.task_id.clone().filter(|t| !t.trim().is_empty()) else {
            return Ok(None);
        };
        let key = id.trim().to_string();
        let task = self.blocking(move |s| s.get_task(&key)).await?;
        match task {
            Some(t) if t.agent == sub.asked.agent => Ok(Some(t.id)),
            // The same answer whether the task is another agent's or does not exist, so
            // an agent learns nothing about other agents' tasks.
            _ => Err(EngineError::invalid(
                "task_id",
                format!(
                    "`task_id` `{}` is not a task of agent `{}`",
                    cut(id.trim(), 40),
                    sub.asked.agent
                ),
            )),
        }
    }
}
