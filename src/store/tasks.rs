//! Tasks: the inbox's queue and lifecycle, durable, each change one transaction with
//! its audit row and its subject row.
//!
//! Tasks are kept in the order they were handed over (`rowid`: ULIDs made in the same
//! millisecond do not sort by time), and claimed oldest first.
//!
//! A change reads the task, asks [`lifecycle::next`] whether the step applies, and
//! writes the row back, all inside one transaction on the store's single connection,
//! so two racing steps (a cancel and a completion, a lapsed lease and a late report)
//! give exactly one outcome. Every change moves the task's `revision` (so its cards
//! are edited), except progress, which moves it at most once per `progress_every`:
//! progress that comes sooner is kept and marked due (`progress_due`), and the timer
//! pass ([`Store::task_timers`]) shows it when its time comes.
//!
//! Questions (`task_questions`) are subjects of kind `task` too: a card of their own,
//! posted under the task's card, open until answered (or dropped when the task is
//! cancelled).

use serde_json::json;

use super::audit::audit_tx;
use super::sql::{params, Conn, Row, Tx};
use super::subjects::{inherit_home, set_home, subject_changed, subject_created, unique_short_id};
use super::{Result, Store, StoreError};
use crate::approval::Via;
use crate::inbox::lifecycle::{self, Step};
use crate::inbox::{
    Clarify, ClassifiedBy, Intent, Level, QuestionPurpose, QuestionState, Report, Task,
    TaskQuestion, TaskStatus,
};
use crate::subject::task_revision;
use crate::subject::{Home, SubjectKind};

/// A classified task, as the engine hands it to the store.
#[derive(Debug, Clone)]
pub struct NewTask {
    pub text: String,
    pub intent: Intent,
    pub summary: String,
    pub prompt: String,
    /// The classifier model's suggestion in the prompt, if a model classified it.
    pub suggestion: Option<String>,
    pub level: Level,
    pub classifier: ClassifiedBy,
    pub agent: String,
    pub clarify: Option<Clarify>,
    pub created_by: String,
    pub created_via: Via,
    /// Where its card goes: the chat it was written in, threaded under the owner's
    /// message; `None`: every destination.
    pub home: Option<Home>,
}

/// A task after a change, and every subject whose cards the change touched (the task
/// and its questions).
#[derive(Debug, Clone)]
pub struct Changed {
    pub task: Task,
    pub subjects: Vec<String>,
}

/// The result of a step on a task.
#[derive(Debug, Clone)]
pub enum TaskStep {
    Done(Box<Changed>),
    /// The step does not apply to the task as it is now: why, and the task.
    Refused(Box<Task>, String),
    /// A report under a lease the task no longer holds.
    LeaseLost(Box<Task>),
    NotFound,
}

/// How an owner's answer changes the task.
#[derive(Debug, Clone)]
pub enum Reclassified {
    /// The answer to the agent's questions: the task is queued with it.
    Input,
    /// The answer to a clarify question: the task as classified again with it.
    Clarified {
        intent: Intent,
        summary: String,
        prompt: String,
        suggestion: Option<String>,
        level: Level,
        classifier: ClassifiedBy,
        agent: String,
    },
}

/// Result of [`Store::lookup_task`].
#[derive(Debug, Clone)]
pub enum TaskLookup {
    Found(Box<Task>),
    Ambiguous(Vec<String>),
    NotFound,
}

/// The timing a lease-holding step needs, from `[inbox]`.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    pub lease_ms: i64,
    pub progress_every_ms: i64,
}

const COLUMNS: &str = "id, short_id, status, intent, summary, prompt, level, classifier, agent, \
    text, clarification, created_by, created_via, decided_by, attempts, lapses, lease, \
    lease_until, deadline, progress, progress_at, revision, result, error, cost_usd, \
    session_id, input, input_questions, created_at, updated_at, started_at, finished_at, \
    suggestion";

/// A running task that completed or failed: its cost and session kept (a report
/// without them keeps what an earlier one said), its end, and its card redrawn.
fn finished(t: &mut Task, cost_usd: Option<f64>, session_id: &Option<String>, now: i64) {
    t.cost_usd = cost_usd.or(t.cost_usd);
    t.session_id = session_id.clone().or(t.session_id.take());
    t.finished_at = Some(now);
    end_run(t);
    t.revision += 1;
}

/// A running task's progress report: its lease extended, its text kept, and its card
/// redrawn at most once per `progress_every` (sooner progress waits for the timer pass).
fn progressed(
    tx: &Tx<'_>,
    t: &mut Task,
    text: Option<&str>,
    timing: Timing,
    now: i64,
) -> Result<()> {
    t.lease_until = Some(now.saturating_add(timing.lease_ms));
    let Some(text) = text else {
        return Ok(());
    };
    t.progress = Some(text.to_string());
    t.progress_at = Some(now);
    let shown = t_shown_at(tx, &t.id)?;
    if now.saturating_sub(shown) >= timing.progress_every_ms {
        t.revision += 1;
        set_shown(tx, &t.id, now, None)?;
    } else {
        set_shown(
            tx,
            &t.id,
            shown,
            Some(shown.saturating_add(timing.progress_every_ms)),
        )?;
    }
    Ok(())
}

/// What a worker's report does to its running task (already moved to its next status):
/// the audit row's detail, `None` for progress, which has no audit row. A question the
/// report asks is added to `touched`.
fn apply_report(
    tx: &Tx<'_>,
    t: &mut Task,
    report: &Report,
    timing: Timing,
    now: i64,
    touched: &mut Vec<String>,
) -> Result<Option<serde_json::Value>> {
    Ok(match report {
        Report::Progress(text) => {
            progressed(tx, t, text.as_deref(), timing, now)?;
            None
        }
        Report::Complete {
            result,
            cost_usd,
            session_id,
        } => {
            t.result = Some(result.clone());
            finished(t, *cost_usd, session_id, now);
            Some(json!({"cost_usd": cost_usd, "result_chars": result.chars().count()}))
        }
        Report::Fail {
            error,
            cost_usd,
            session_id,
        } => {
            t.error = Some(error.clone());
            finished(t, *cost_usd, session_id, now);
            Some(json!({"error": error}))
        }
        Report::NeedsInput {
            questions,
            session_id,
        } => {
            t.session_id = session_id.clone().or(t.session_id.take());
            end_run(t);
            t.revision += 1;
            touched.push(ask_tx(tx, t, QuestionPurpose::Input, questions, &[], now)?);
            Some(json!({"questions": questions}))
        }
    })
}

/// A new task's row in `tasks`, at revision 0.
fn insert_task_row(
    tx: &Tx<'_>,
    id: &str,
    short_id: &str,
    status: TaskStatus,
    new: &NewTask,
    now: i64,
) -> Result<()> {
    tx.execute(
        "INSERT INTO tasks (id, short_id, status, intent, summary, prompt, level, classifier, \
         agent, text, created_by, created_via, revision, shown_at, created_at, updated_at, \
         suggestion) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 0, ?13, ?13, ?13, ?14)",
        params![
            id,
            short_id,
            status.as_str(),
            new.intent.as_str(),
            new.summary,
            new.prompt,
            i64::from(new.level.0),
            new.classifier.as_str(),
            new.agent,
            new.text,
            new.created_by,
            new.created_via.as_str(),
            now,
            new.suggestion,
        ],
    )?;
    Ok(())
}

/// The audit row of a task's creation: what it was classified as, and the status it starts in.
fn audit_created(
    tx: &Tx<'_>,
    id: &str,
    short_id: &str,
    status: TaskStatus,
    new: &NewTask,
    now: i64,
) -> Result<()> {
    audit_tx(
        tx,
        now,
        Some(id),
        Step::Created {
            clarify: false,
            confirm: false,
        }
        .event(),
        Some(&new.created_by),
        Some(&new.created_via),
        &json!({
            "short_id": short_id,
            "text": new.text,
            "intent": new.intent,
            "summary": new.summary,
            "agent": new.agent,
            "level": new.level,
            "classifier": new.classifier,
            "suggestion": new.suggestion,
            "status": status,
        }),
    )
}

impl Store {
    /// Stores a classified task (and its clarify question, if any), with its audit
    /// and subject rows.
    pub fn insert_task(&self, new: &NewTask, now: i64) -> Result<Changed> {
        let status = lifecycle::next(
            None,
            Step::Created {
                clarify: new.clarify.is_some(),
                confirm: new.level.needs_confirmation(),
            },
        )
        .map_err(StoreError::Corrupt)?;
        self.write(|tx| {
            let id = super::new_id();
            let short_id = unique_short_id(tx)?;
            insert_task_row(tx, &id, &short_id, status, new, now)?;
            let task = get_task_tx(tx, &id)?.ok_or_else(|| StoreError::Corrupt(id.clone()))?;
            subject_created(
                tx,
                &id,
                SubjectKind::Task,
                &short_id,
                &task_revision(&task),
                now,
            )?;
            set_home(tx, &id, new.home.as_ref(), None)?;
            audit_created(tx, &id, &short_id, status, new, now)?;
            let mut subjects = vec![id.clone()];
            if let Some(c) = &new.clarify {
                let q = ask_tx(
                    tx,
                    &task,
                    QuestionPurpose::Clarify,
                    std::slice::from_ref(&c.question),
                    &c.choices,
                    now,
                )?;
                subjects.push(q);
            }
            let task = get_task_tx(tx, &id)?.ok_or_else(|| StoreError::Corrupt(id.clone()))?;
            Ok(Changed { task, subjects })
        })
    }

    pub fn get_task(&self, id: &str) -> Result<Option<Task>> {
        self.writer(|c| get_task_tx(c, id))
    }

    /// Resolves a full id, a short id, or a unique prefix (4+ characters) of a short id.
    pub fn lookup_task(&self, typed: &str) -> Result<TaskLookup> {
        let typed = typed.trim();
        let lower = typed.to_ascii_lowercase();
        self.writer(|conn| {
            let exact: Option<String> = conn.query_opt(
                "SELECT id FROM tasks WHERE id = ?1 OR short_id = ?2",
                params![typed, lower],
                |r| r.get(0),
            )?;
            if let Some(id) = exact {
                return Ok(match get_task_tx(conn, &id)? {
                    Some(t) => TaskLookup::Found(Box::new(t)),
                    None => TaskLookup::NotFound,
                });
            }
            if lower.len() < 4 || !lower.bytes().all(|b| b.is_ascii_alphanumeric()) {
                return Ok(TaskLookup::NotFound);
            }
            let found: Vec<(String, String)> = conn.query_map(
                "SELECT id, short_id FROM tasks WHERE short_id LIKE ?1 || '%' ORDER BY id DESC LIMIT 11",
                params![lower],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            Ok(match found.as_slice() {
                [] => TaskLookup::NotFound,
                [(id, _)] => match get_task_tx(conn, id)? {
                    Some(t) => TaskLookup::Found(Box::new(t)),
                    None => TaskLookup::NotFound,
                },
                many => TaskLookup::Ambiguous(many.iter().map(|(_, s)| s.clone()).collect()),
            })
        })
    }

    /// Open tasks, oldest first; or, with `all`, the latest `limit` of any status,
    /// newest first. `agent` limits them to one agent's.
    pub fn list_tasks(&self, all: bool, agent: Option<&str>, limit: usize) -> Result<Vec<Task>> {
        let sql = if all {
            "SELECT id FROM tasks WHERE (?1 IS NULL OR agent = ?1) ORDER BY rowid DESC LIMIT ?2"
        } else {
            "SELECT id FROM tasks WHERE status IN ('pending', 'queued', 'running', 'waiting') \
             AND (?1 IS NULL OR agent = ?1) ORDER BY rowid LIMIT ?2"
        };
        self.writer(|conn| {
            let ids: Vec<String> =
                conn.query_map(sql, params![agent, limit as i64], |r| r.get(0))?;
            ids.iter()
                .filter_map(|id| get_task_tx(conn, id).transpose())
                .collect()
        })
    }

    /// An owner's step on a task: `Queue`, `Reject`, `Cancel` or `Retry`.
    pub fn decide_task(
        &self,
        id: &str,
        step: Step,
        actor: &str,
        via: &Via,
        now: i64,
    ) -> Result<TaskStep> {
        debug_assert!(matches!(
            step,
            Step::Queue | Step::Reject | Step::Cancel | Step::Retry
        ));
        self.step(id, step, now, |tx, t, to| {
            t.decided_by = Some(actor.to_string());
            match step {
                Step::Reject | Step::Cancel => {
                    t.finished_at = Some(now);
                    end_run(t);
                }
                Step::Retry => {
                    t.attempts = 0;
                    t.lapses = 0;
                    t.result = None;
                    t.error = None;
                    t.progress = None;
                    t.progress_at = None;
                    t.cost_usd = None;
                    t.session_id = None;
                    t.input = None;
                    t.input_questions.clear();
                    t.started_at = None;
                    t.finished_at = None;
                }
                _ => {}
            }
            let mut touched = Vec::new();
            if to == TaskStatus::Cancelled {
                touched = drop_questions(tx, &t.id)?;
            }
            let detail = json!({"from": t.status, "to": to});
            Ok((Some((actor.to_string(), via.clone(), detail)), touched))
        })
    }

    /// Claims `agent`'s oldest queued task, unless `max_running` of its tasks run
    /// already: a lease until `now + lease_ms` and a deadline after the intent's
    /// timeout (`timeout_ms`) and `grace_ms`.
    pub fn claim_task(
        &self,
        agent: &str,
        max_running: usize,
        lease_ms: i64,
        timeout_ms: impl Fn(Intent) -> i64,
        grace_ms: i64,
        now: i64,
    ) -> Result<Option<Changed>> {
        self.write(|tx| {
            let running: i64 = tx.query_row(
                "SELECT COUNT(*) FROM tasks WHERE agent = ?1 AND status = 'running'",
                params![agent],
                |r| r.get(0),
            )?;
            if running as usize >= max_running {
                tx.discard();
                return Ok(None);
            }
            let next: Option<String> = tx.query_opt(
            "SELECT id FROM tasks WHERE agent = ?1 AND status = 'queued' ORDER BY rowid LIMIT 1",
            params![agent],
            |r| r.get(0),
        )?;
            let Some(id) = next else {
                tx.discard();
                return Ok(None);
            };
            let mut t = get_task_tx(tx, &id)?.ok_or_else(|| StoreError::Corrupt(id.clone()))?;
            let to = lifecycle::next(Some(t.status), Step::Claim).map_err(StoreError::Corrupt)?;
            t.status = to;
            t.attempts += 1;
            t.lease = Some(new_lease());
            t.lease_until = Some(now.saturating_add(lease_ms));
            t.started_at = Some(now);
            t.deadline = Some(
                now.saturating_add(timeout_ms(t.intent))
                    .saturating_add(grace_ms),
            );
            t.updated_at = now;
            t.revision += 1;
            write_task(tx, &t, now)?;
            audit_tx(
                tx,
                now,
                Some(&id),
                Step::Claim.event(),
                Some(agent),
                Some(&Via::Api),
                &json!({"attempt": t.attempts}),
            )?;
            Ok(Some(Changed {
                subjects: vec![id],
                task: t,
            }))
        })
    }

    /// A worker's report under `lease`.
    pub fn report_task(
        &self,
        id: &str,
        lease: &str,
        report: &Report,
        timing: Timing,
        now: i64,
    ) -> Result<TaskStep> {
        let step = match report {
            Report::Progress(_) => Step::Progress,
            Report::Complete { .. } => Step::Complete,
            Report::Fail { .. } => Step::Fail,
            Report::NeedsInput { .. } => Step::NeedsInput,
        };
        self.write(|tx| {
            let Some(mut t) = get_task_tx(tx, id)? else {
                tx.discard();
                return Ok(TaskStep::NotFound);
            };
            if t.status != TaskStatus::Running {
                let why = lifecycle::next(Some(t.status), step)
                    .err()
                    .unwrap_or_default();
                tx.discard();
                return Ok(TaskStep::Refused(Box::new(t), why));
            }
            if t.lease.as_deref() != Some(lease) {
                tx.discard();
                return Ok(TaskStep::LeaseLost(Box::new(t)));
            }
            let to = lifecycle::next(Some(t.status), step).map_err(StoreError::Corrupt)?;
            t.status = to;
            t.updated_at = now;
            let mut touched = vec![id.to_string()];
            let audit = apply_report(tx, &mut t, report, timing, now, &mut touched)?;
            write_task(tx, &t, now)?;
            if let Some(detail) = audit {
                audit_tx(
                    tx,
                    now,
                    Some(id),
                    step.event(),
                    Some(&t.agent),
                    Some(&Via::Api),
                    &detail,
                )?;
            }
            t = get_task_tx(tx, id)?.ok_or_else(|| StoreError::Corrupt(id.to_string()))?;
            Ok(TaskStep::Done(Box::new(Changed {
                task: t,
                subjects: touched,
            })))
        })
    }

    /// The open question `question` (a question's id, or a task's, meaning its open
    /// question), as asked.
    pub fn open_question(&self, id: &str) -> Result<Option<TaskQuestion>> {
        let q = self.writer(|conn| {
            Ok(match get_question(conn, id)? {
                Some(q) => Some(q),
                None => open_question_of(conn, id)?,
            })
        })?;
        Ok(q.filter(|q| q.state == QuestionState::Open))
    }

    /// A question by id, whatever its state.
    pub fn question_by_id(&self, id: &str) -> Result<Option<TaskQuestion>> {
        self.writer(|conn| get_question(conn, id))
    }

    /// The owner answers question `question_id`; the task moves on as `how` says.
    pub fn answer_task(
        &self,
        question_id: &str,
        answer: &str,
        actor: &str,
        via: &Via,
        how: &Reclassified,
        now: i64,
    ) -> Result<TaskStep> {
        let q = self.writer(|conn| get_question(conn, question_id))?;
        let Some(q) = q else {
            return Ok(TaskStep::NotFound);
        };
        if q.state != QuestionState::Open {
            let t = self
                .get_task(&q.task)?
                .ok_or_else(|| StoreError::Corrupt(q.task.clone()))?;
            let why = match (&q.answered_by, q.state) {
                (Some(by), QuestionState::Answered) => {
                    format!("the question was already answered by {by}")
                }
                _ => "the question is no longer open".to_string(),
            };
            return Ok(TaskStep::Refused(Box::new(t), why));
        }
        let confirm = match how {
            Reclassified::Input => false,
            Reclassified::Clarified { level, .. } => level.needs_confirmation(),
        };
        self.step(&q.task, Step::Answer { confirm }, now, |tx, t, _| {
            let changed = tx.execute(
                "UPDATE task_questions SET state = 'answered', answer = ?2, answered_by = ?3, \
                 answered_via = ?4, answered_at = ?5 WHERE id = ?1 AND state = 'open'",
                params![q.id, answer, actor, via.as_str(), now],
            )?;
            if changed == 0 {
                return Err(StoreError::Corrupt(format!("question {} moved", q.id)));
            }
            subject_changed(tx, &q.id, false, QuestionState::Answered.as_str())?;
            match how {
                Reclassified::Input => {
                    t.input = Some(answer.to_string());
                    t.input_questions = q.questions.clone();
                }
                Reclassified::Clarified {
                    intent,
                    summary,
                    prompt,
                    suggestion,
                    level,
                    classifier,
                    agent,
                } => {
                    t.clarification = Some(answer.to_string());
                    t.intent = *intent;
                    t.summary = summary.clone();
                    t.prompt = prompt.clone();
                    t.suggestion = suggestion.clone();
                    t.level = *level;
                    t.classifier = *classifier;
                    t.agent = agent.clone();
                }
            }
            let detail = json!({"purpose": q.purpose.as_str(), "answer": answer});
            Ok((
                Some((actor.to_string(), via.clone(), detail)),
                vec![q.id.clone()],
            ))
        })
    }

    /// Applies what is due at `now`: leases that lapsed (queued again the first time
    /// in a run, failed the second), runs past their deadline (failed), progress due
    /// on cards. Returns every change.
    pub fn task_timers(&self, now: i64) -> Result<Vec<Changed>> {
        let due: Vec<(String, &'static str)> = self.writer(|conn| {
            let mut out: Vec<(String, &'static str)> = Vec::new();
            let ran_out = conn.query_map(
                "SELECT id, CASE WHEN deadline IS NOT NULL AND deadline <= ?1 THEN 'timeout' \
                 ELSE 'lapse' END FROM tasks WHERE status = 'running' AND \
                 ((lease_until IS NOT NULL AND lease_until <= ?1) OR (deadline IS NOT NULL AND deadline <= ?1)) \
                 ORDER BY id LIMIT 500",
                params![now],
                |r| Ok((r.get::<String>(0)?, r.get::<String>(1)?)),
            )?;
            for (id, kind) in ran_out {
                out.push((
                    id,
                    if kind == "timeout" {
                        "timeout"
                    } else {
                        "lapse"
                    },
                ));
            }
            let progress = conn.query_map(
                "SELECT id FROM tasks WHERE progress_due IS NOT NULL AND progress_due <= ?1 \
                 ORDER BY progress_due LIMIT 500",
                params![now],
                |r| r.get::<String>(0),
            )?;
            for id in progress {
                out.push((id, "progress"));
            }
            Ok(out)
        })?;
        let mut changed = Vec::new();
        for (id, kind) in due {
            let outcome = match kind {
                "progress" => self.show_progress(&id, now)?,
                "timeout" => self.step(&id, Step::TimedOut, now, |_, t, _| {
                    let ran = now.saturating_sub(t.started_at.unwrap_or(now));
                    t.error = Some(format!(
                        "timed out: the run took longer than its {} (the intent's timeout and \
                         [inbox] timeout_grace) and was failed by gatebot",
                        crate::words::span(std::time::Duration::from_millis(ran.max(0) as u64))
                    ));
                    t.finished_at = Some(now);
                    end_run(t);
                    Ok((system(json!({"after_ms": ran})), Vec::new()))
                })?,
                _ => {
                    let first = self.get_task(&id)?.is_some_and(|t| t.lapses == 0);
                    self.step(&id, Step::LeaseLapsed { first }, now, |_, t, _| {
                        t.lapses += 1;
                        if first {
                            t.lease = None;
                            t.lease_until = None;
                            t.deadline = None;
                        } else {
                            t.error = Some(
                                "the worker stopped reporting: its lease lapsed twice in this \
                                 run, so gatebot gave up"
                                    .into(),
                            );
                            t.finished_at = Some(now);
                            end_run(t);
                        }
                        Ok((system(json!({"lapses": t.lapses})), Vec::new()))
                    })?
                }
            };
            if let TaskStep::Done(c) = outcome {
                changed.push(*c);
            }
        }
        Ok(changed)
    }

    /// Puts every running task of `agent` back in the queue, because an owner
    /// (`actor`, `via`) paused it: their leases are void, so their workers' next
    /// reports are refused and their commands stop. One transaction per task.
    pub fn withhold_tasks_of(
        &self,
        agent: &str,
        actor: &str,
        via: &Via,
        now: i64,
    ) -> Result<Vec<Changed>> {
        let ids = self.task_ids_of(agent, TaskStatus::Running)?;
        let mut changed = Vec::new();
        for id in ids {
            let step = self.step(&id, Step::AgentPaused, now, |_, t, _| {
                end_run(t);
                let detail = json!({"agent": agent, "why": "agent paused"});
                Ok((Some((actor.to_string(), via.clone(), detail)), Vec::new()))
            })?;
            if let TaskStep::Done(c) = step {
                changed.push(*c);
            }
        }
        Ok(changed)
    }

    /// Ids of `agent`'s tasks in `status`, oldest first.
    pub fn task_ids_of(&self, agent: &str, status: TaskStatus) -> Result<Vec<String>> {
        self.writer(|conn| {
            conn.query_map(
                "SELECT id FROM tasks WHERE agent = ?1 AND status = ?2 ORDER BY rowid",
                params![agent, status.as_str()],
                |r| r.get(0),
            )
        })
    }

    /// Queues task `id`, still queued, for agent `to` instead of its own (which is
    /// paused, while its route names `to`).
    pub fn reroute_task(&self, id: &str, to: &str, now: i64) -> Result<TaskStep> {
        self.step(id, Step::Rerouted, now, |_, t, _| {
            let from = std::mem::replace(&mut t.agent, to.to_string());
            Ok((system(json!({"from": from, "to": to})), Vec::new()))
        })
    }

    /// The requests made for task `task` that still wait for a human: (id, agent).
    pub fn pending_requests_of(&self, task: &str) -> Result<Vec<(String, String)>> {
        self.writer(|conn| {
            conn.query_map(
                "SELECT id, agent FROM approvals WHERE task_id = ?1 AND status = 'pending' ORDER BY id",
                params![task],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })
    }

    /// When [`Store::task_timers`] next has something to do.
    pub fn next_task_timer(&self) -> Result<Option<i64>> {
        self.writer(|conn| {
            conn.query_row(
                conn.dialect(
                    "SELECT MIN(t) FROM ( \
                         SELECT MIN(MIN(COALESCE(lease_until, deadline), COALESCE(deadline, lease_until))) AS t \
                         FROM tasks WHERE status = 'running' \
                         UNION ALL SELECT MIN(progress_due) FROM tasks WHERE progress_due IS NOT NULL) AS due",
                    "SELECT MIN(t) FROM ( \
                         SELECT MIN(LEAST(COALESCE(lease_until, deadline), COALESCE(deadline, lease_until))) AS t \
                         FROM tasks WHERE status = 'running' \
                         UNION ALL SELECT MIN(progress_due) FROM tasks WHERE progress_due IS NOT NULL) AS due",
                ),
                params![],
                |r| r.get(0),
            )
        })
    }

    /// Moves a task's revision so its cards show the latest progress.
    fn show_progress(&self, id: &str, now: i64) -> Result<TaskStep> {
        self.write(|tx| {
            let Some(mut t) = get_task_tx(tx, id)? else {
                tx.discard();
                return Ok(TaskStep::NotFound);
            };
            t.revision += 1;
            write_task(tx, &t, now)?;
            set_shown(tx, id, now, None)?;
            Ok(TaskStep::Done(Box::new(Changed {
                subjects: vec![id.to_string()],
                task: t,
            })))
        })
    }

    /// The common shape of a step: read, check the transition, let `change` edit the
    /// task (and touch other rows, returning the audit row's actor, via and detail,
    /// and other subjects it changed), write it back with a new revision, audit.
    fn step(
        &self,
        id: &str,
        step: Step,
        now: i64,
        change: impl FnOnce(
            &Tx<'_>,
            &mut Task,
            TaskStatus,
        ) -> Result<(Option<(String, Via, serde_json::Value)>, Vec<String>)>,
    ) -> Result<TaskStep> {
        self.write(|tx| {
            let Some(mut t) = get_task_tx(tx, id)? else {
                tx.discard();
                return Ok(TaskStep::NotFound);
            };
            let to = match lifecycle::next(Some(t.status), step) {
                Ok(to) => to,
                Err(why) => {
                    tx.discard();
                    return Ok(TaskStep::Refused(Box::new(t), why));
                }
            };
            let (audit, mut touched) = change(tx, &mut t, to)?;
            t.status = to;
            t.updated_at = now;
            t.revision += 1;
            write_task(tx, &t, now)?;
            if let Some((actor, via, detail)) = audit {
                audit_tx(
                    tx,
                    now,
                    Some(id),
                    step.event(),
                    Some(&actor),
                    Some(&via),
                    &detail,
                )?;
            }
            let t = get_task_tx(tx, id)?.ok_or_else(|| StoreError::Corrupt(id.to_string()))?;
            touched.insert(0, id.to_string());
            Ok(TaskStep::Done(Box::new(Changed {
                task: t,
                subjects: touched,
            })))
        })
    }
}

/// gatebot's own audit actor.
fn system(detail: serde_json::Value) -> Option<(String, Via, serde_json::Value)> {
    Some(("gatebot".into(), Via::System, detail))
}

/// Clears what only a running task has.
fn end_run(t: &mut Task) {
    t.lease = None;
    t.lease_until = None;
    t.deadline = None;
}

fn new_lease() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..24)
        .map(|_| char::from(b"0123456789abcdef"[rng.random_range(0..16)]))
        .collect()
}

fn t_shown_at(tx: &Tx<'_>, id: &str) -> Result<i64> {
    tx.query_row(
        "SELECT shown_at FROM tasks WHERE id = ?1",
        params![id],
        |r| r.get(0),
    )
}

fn set_shown(tx: &Tx<'_>, id: &str, at: i64, due: Option<i64>) -> Result<()> {
    tx.execute(
        "UPDATE tasks SET shown_at = ?2, progress_due = ?3 WHERE id = ?1",
        params![id, at, due],
    )?;
    Ok(())
}

/// Writes every column a step may change, and the subject row's revision.
fn write_task(tx: &Tx<'_>, t: &Task, now: i64) -> Result<()> {
    tx.execute(
        "UPDATE tasks SET status = ?2, intent = ?3, summary = ?4, prompt = ?5, level = ?6, \
         classifier = ?7, agent = ?8, clarification = ?9, decided_by = ?10, attempts = ?11, \
         lapses = ?12, lease = ?13, lease_until = ?14, deadline = ?15, progress = ?16, \
         progress_at = ?17, revision = ?18, result = ?19, error = ?20, cost_usd = ?21, \
         session_id = ?22, input = ?23, input_questions = ?24, updated_at = ?25, \
         started_at = ?26, finished_at = ?27, suggestion = ?28, \
         progress_due = CASE WHEN ?2 = 'running' THEN progress_due ELSE NULL END \
         WHERE id = ?1",
        params![
            t.id,
            t.status.as_str(),
            t.intent.as_str(),
            t.summary,
            t.prompt,
            i64::from(t.level.0),
            t.classifier.as_str(),
            t.agent,
            t.clarification,
            t.decided_by,
            t.attempts,
            t.lapses,
            t.lease,
            t.lease_until,
            t.deadline,
            t.progress,
            t.progress_at,
            t.revision,
            t.result,
            t.error,
            t.cost_usd,
            t.session_id,
            t.input,
            (!t.input_questions.is_empty())
                .then(|| serde_json::to_string(&t.input_questions).unwrap_or_default()),
            now,
            t.started_at,
            t.finished_at,
            t.suggestion,
        ],
    )?;
    subject_changed(tx, &t.id, t.status.is_open(), &task_revision(t))?;
    Ok(())
}

/// Asks the owner `questions` about task `t`: a question row and its subject, shown
/// under the task's card wherever the task is shown. Returns its id.
fn ask_tx(
    tx: &Tx<'_>,
    t: &Task,
    purpose: QuestionPurpose,
    questions: &[String],
    choices: &[String],
    now: i64,
) -> Result<String> {
    let id = super::new_id();
    let short_id = unique_short_id(tx)?;
    tx.execute(
        "INSERT INTO task_questions (id, task, purpose, questions, choices, state, asked_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, 'open', ?6)",
        params![
            id,
            t.id,
            purpose.as_str(),
            serde_json::to_string(questions).unwrap_or_else(|_| "[]".into()),
            serde_json::to_string(choices).unwrap_or_else(|_| "[]".into()),
            now
        ],
    )?;
    subject_created(
        tx,
        &id,
        SubjectKind::Task,
        &short_id,
        QuestionState::Open.as_str(),
        now,
    )?;
    // Where the task is shown, and under its card there.
    inherit_home(tx, &id, &t.id)?;
    audit_tx(
        tx,
        now,
        Some(&t.id),
        "task_asked",
        Some("gatebot"),
        Some(&Via::System),
        &json!({"purpose": purpose.as_str(), "questions": questions, "choices": choices}),
    )?;
    Ok(id)
}

/// Drops the task's open questions (it was cancelled); returns their ids.
fn drop_questions(tx: &Tx<'_>, task: &str) -> Result<Vec<String>> {
    let ids: Vec<String> = tx.query_map(
        "SELECT id FROM task_questions WHERE task = ?1 AND state = 'open'",
        params![task],
        |r| r.get(0),
    )?;
    for id in &ids {
        tx.execute(
            "UPDATE task_questions SET state = 'dropped' WHERE id = ?1",
            params![id],
        )?;
        subject_changed(tx, id, false, QuestionState::Dropped.as_str())?;
    }
    Ok(ids)
}

fn get_task_tx(conn: &Conn<'_>, id: &str) -> Result<Option<Task>> {
    let task = conn.query_opt(
        &format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1"),
        params![id],
        row_to_task,
    )?;
    let Some(mut task) = task else {
        return Ok(None);
    };
    task.question = open_question_of(conn, id)?;
    Ok(Some(task))
}

fn open_question_of(conn: &Conn<'_>, task: &str) -> Result<Option<TaskQuestion>> {
    let id: Option<String> = conn.query_opt(
        "SELECT id FROM task_questions WHERE task = ?1 AND state = 'open' ORDER BY rowid DESC LIMIT 1",
        params![task],
        |r| r.get(0),
    )?;
    match id {
        Some(id) => get_question(conn, &id),
        None => Ok(None),
    }
}

fn get_question(conn: &Conn<'_>, id: &str) -> Result<Option<TaskQuestion>> {
    conn.query_opt(
        "SELECT id, task, purpose, questions, choices, state, answer, answered_by, \
         answered_via, asked_at, answered_at FROM task_questions WHERE id = ?1",
        params![id],
        |r| {
            let corrupt = |what: &str| StoreError::Corrupt(format!("question {id}: bad {what}"));
            let purpose: String = r.get(2)?;
            let questions: String = r.get(3)?;
            let choices: String = r.get(4)?;
            let state: String = r.get(5)?;
            Ok(TaskQuestion {
                id: r.get(0)?,
                task: r.get(1)?,
                purpose: QuestionPurpose::parse(&purpose).map_err(|_| corrupt("purpose"))?,
                questions: serde_json::from_str(&questions).map_err(|_| corrupt("questions"))?,
                choices: serde_json::from_str(&choices).map_err(|_| corrupt("choices"))?,
                state: QuestionState::parse(&state).map_err(|_| corrupt("state"))?,
                answer: r.get(6)?,
                answered_by: r.get(7)?,
                answered_via: r.get(8)?,
                asked_at: r.get(9)?,
                answered_at: r.get(10)?,
            })
        },
    )
}

fn row_to_task(r: &Row<'_>) -> Result<Task> {
    let id: String = r.get(0)?;
    let status: String = r.get(2)?;
    let intent: String = r.get(3)?;
    let level: i64 = r.get(6)?;
    let classifier: String = r.get(7)?;
    let input_questions: Option<String> = r.get(27)?;
    let corrupt = |what: &str| StoreError::Corrupt(format!("task {id}: bad {what}"));
    let parse = || -> Result<Task> {
        Ok(Task {
            id: id.clone(),
            short_id: r.get(1)?,
            status: status.parse().map_err(|_| corrupt("status"))?,
            intent: intent.parse().map_err(|_| corrupt("intent"))?,
            summary: r.get(4)?,
            prompt: r.get(5)?,
            suggestion: r.get(32)?,
            level: Level(u8::try_from(level).map_err(|_| corrupt("level"))?),
            classifier: match classifier.as_str() {
                "model" => ClassifiedBy::Model,
                "keywords" => ClassifiedBy::Keywords,
                _ => return Err(corrupt("classifier")),
            },
            agent: r.get(8)?,
            text: r.get(9)?,
            clarification: r.get(10)?,
            created_by: r.get(11)?,
            created_via: r.get(12)?,
            decided_by: r.get(13)?,
            attempts: r.get(14)?,
            lapses: r.get(15)?,
            lease: r.get(16)?,
            lease_until: r.get(17)?,
            deadline: r.get(18)?,
            progress: r.get(19)?,
            progress_at: r.get(20)?,
            revision: r.get(21)?,
            result: r.get(22)?,
            error: r.get(23)?,
            cost_usd: r.get(24)?,
            session_id: r.get(25)?,
            input: r.get(26)?,
            input_questions: input_questions
                .map(|q| serde_json::from_str(&q).map_err(|_| corrupt("input_questions")))
                .transpose()?
                .unwrap_or_default(),
            question: None,
            created_at: r.get(28)?,
            updated_at: r.get(29)?,
            started_at: r.get(30)?,
            finished_at: r.get(31)?,
        })
    };
    parse()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new_task(text: &str) -> NewTask {
        NewTask {
            text: text.into(),
            intent: Intent::Other,
            summary: "S".into(),
            prompt: "P".into(),
            suggestion: None,
            level: Level::AUTO,
            classifier: ClassifiedBy::Keywords,
            agent: "a".into(),
            clarify: None,
            created_by: "alice".into(),
            created_via: Via::Cli,
            home: None,
        }
    }

    const TIMING: Timing = Timing {
        lease_ms: 60_000,
        progress_every_ms: 5_000,
    };

    fn claimed(s: &Store, now: i64) -> Task {
        s.claim_task("a", 3, 60_000, |_| 600_000, 0, now)
            .unwrap()
            .unwrap()
            .task
    }

    fn progress(s: &Store, t: &Task, text: &str, now: i64) -> Task {
        let r = Report::Progress(Some(text.into()));
        match s
            .report_task(&t.id, t.lease.as_deref().unwrap(), &r, TIMING, now)
            .unwrap()
        {
            TaskStep::Done(c) => c.task,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn progress_moves_the_card_at_most_once_per_interval_and_the_rest_comes_due() {
        let s = Store::open_in_memory().unwrap();
        s.insert_task(&new_task("t"), 1_000).unwrap();
        let t = claimed(&s, 10_000);
        let rev = t.revision;
        let t = progress(&s, &t, "one", 20_000);
        assert_eq!(t.revision, rev + 1, "the first progress shows at once");
        let t = progress(&s, &t, "two", 21_000);
        let t = progress(&s, &t, "three", 22_000);
        assert_eq!(t.revision, rev + 1, "sooner progress waits");
        assert_eq!(t.progress.as_deref(), Some("three"));
        assert_eq!(s.next_task_timer().unwrap(), Some(25_000));
        assert!(s.task_timers(24_999).unwrap().is_empty());
        let due = s.task_timers(25_000).unwrap();
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].task.revision, rev + 2);
        assert!(s.task_timers(25_001).unwrap().is_empty(), "shown once");
    }

    #[test]
    fn a_claim_takes_the_oldest_queued_task_within_the_bound() {
        let s = Store::open_in_memory().unwrap();
        let first = s.insert_task(&new_task("1"), 1).unwrap().task;
        let second = s.insert_task(&new_task("2"), 2).unwrap().task;
        let claim = |max: usize| {
            s.claim_task("a", max, 60_000, |_| 600_000, 0, 10)
                .unwrap()
                .map(|c| c.task.id)
        };
        assert_eq!(claim(1), Some(first.id));
        assert_eq!(claim(1), None, "one may run");
        assert_eq!(claim(2), Some(second.id));
        assert_eq!(claim(3), None, "nothing queued");
        assert_eq!(
            s.claim_task("b", 3, 60_000, |_| 600_000, 0, 10)
                .unwrap()
                .map(|c| c.task.id),
            None,
            "another agent gets none of them"
        );
    }

    #[test]
    fn an_answered_question_cannot_be_answered_twice() {
        let s = Store::open_in_memory().unwrap();
        let mut new = new_task("refactor");
        new.clarify = Some(Clarify {
            question: "Which?".into(),
            choices: vec!["A".into()],
        });
        let c = s.insert_task(&new, 1).unwrap();
        assert_eq!(c.task.status, TaskStatus::Waiting);
        assert_eq!(c.subjects.len(), 2, "the task and its question");
        let q = c.task.question.unwrap();
        let how = Reclassified::Input;
        let first = s
            .answer_task(&q.id, "A", "alice", &Via::Cli, &how, 2)
            .unwrap();
        assert!(matches!(first, TaskStep::Done(ref c) if c.task.status == TaskStatus::Queued));
        let second = s
            .answer_task(&q.id, "B", "bob", &Via::Cli, &how, 3)
            .unwrap();
        let TaskStep::Refused(_, why) = second else {
            panic!("{second:?}")
        };
        assert_eq!(why, "the question was already answered by alice");
    }
}
