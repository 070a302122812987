//! Workflow runs: starting them, recording and evaluating their events, their
//! check-ins (asked, answered, expired), and the lists owners and agents read.
//!
//! An event is evaluated inside the transaction that records it
//! ([`Store::record_event`]): the run's totals and unreported problems are read, the
//! pure evaluation ([`crate::workflow::evaluate()`]) runs, and its outcome is written with
//! the audit rows, so two events of one run cannot interleave and a crash leaves either
//! the whole event or none of it. A check-in that asks is a subject (kind `checkin`)
//! created in that transaction; its answer or expiry moves the subject's revision in
//! the transaction that makes it. As for requests, an answer that arrives after the
//! deadline loses to it: the check-in is expired then and there.

use serde_json::json;

use super::audit::audit_tx;
use super::sql::{params, Conn, Row, Tx};
use super::subjects::{subject_changed, subject_created, unique_short_id, unique_short_id_beside};
use super::{Result, Store, StoreError, EXPIRE_BATCH};
use crate::approval::Via;
use crate::subject::SubjectKind;
use crate::workflow::evaluate::{Evaluation, IssueKind, StepResult, Totals};
use crate::workflow::run::{
    Action, Answered, Artifact, CheckIn, CheckInAnswer, CheckInStatus, Run, RunIssue, RunStatus,
};
use crate::workflow::{
    evaluate, EventType, Issue, RunState, Settings, Severity, StopCause, Verdict, Why,
};

/// Most problems one check-in's list reads back (a run's limits keep far fewer).
pub const MAX_ISSUES_READ: usize = 5000;

/// A run as the engine hands it to the store.
#[derive(Debug, Clone)]
pub struct NewRun {
    pub agent: String,
    pub title: String,
    pub workflow: Option<String>,
    pub idempotency_key: Option<String>,
    pub created_at: i64,
}

/// Result of [`Store::start_run`].
#[derive(Debug, Clone)]
pub enum RunInserted {
    New(Run),
    /// The agent already started a run with this idempotency key, title and workflow.
    Existing(Run),
    /// The agent already used this idempotency key for another run.
    Conflict(Run),
}

/// An event as the engine hands it to the store: normalized, validated.
#[derive(Debug, Clone)]
pub struct NewEvent {
    pub step: StepResult,
    pub artifacts: Vec<Artifact>,
    pub idempotency_key: Option<String>,
    /// With a key: [`super::content_hash`] of the event as the agent sent it, so a
    /// repeat of the key is recognised by its whole content.
    pub content_hash: Option<String>,
}

/// What an event did to its run.
#[derive(Debug, Clone)]
pub struct EventOutcome {
    pub seq: u32,
    pub action: Action,
    pub reason: Option<String>,
    /// The check-in it made (waiting or a report).
    pub check_in: Option<CheckIn>,
    /// The run after it.
    pub run: Run,
    /// Problems beyond tolerance.
    pub exceeded: Vec<Issue>,
    /// Kinds no longer collected from this event on (truncate).
    pub truncated: Vec<IssueKind>,
}

/// Result of [`Store::record_event`].
#[derive(Debug, Clone)]
pub enum Recorded {
    /// Evaluated and stored.
    Evaluated(EventOutcome),
    /// The event's idempotency key was seen before with the same content: its answer then
    /// (with the run and check-in as they are now).
    Repeated(EventOutcome),
    /// The idempotency key was used before for an event with other content (its number).
    KeyConflict(u32),
    /// A check-in waits: no events until it is answered.
    Waiting(Run),
    /// The run is stopped or completed.
    Finished(Run),
    NotFound,
}

/// Result of resolving a run id typed by a person.
#[derive(Debug, Clone)]
pub enum RunLookup {
    Found(Box<Run>),
    /// Several runs match the prefix; their short ids.
    Ambiguous(Vec<String>),
    NotFound,
}

/// Which runs [`Store::list_runs`] returns: newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunFilter {
    pub agent: Option<String>,
    pub status: Option<RunStatus>,
    /// The last id of the previous page.
    pub after: Option<String>,
    pub limit: usize,
}

const RUN_COLUMNS: &str = "id, short_id, agent, title, workflow, idempotency_key, status, \
    phase, step, events, warnings, errors, dropped_warnings, dropped_errors, check_in, reason, \
    stopped_by, created_at, updated_at, finished_at";

const CHECK_IN_COLUMNS: &str = "c.id, c.short_id, c.run_id, c.status, c.why, c.reason, \
    e.type, e.phase, e.step, e.artifacts, c.warnings, c.errors, c.decided_by, c.decided_via, \
    c.decision_reason, c.ttl_ms, c.created_at, c.decided_at, c.expires_at";

fn corrupt(what: &str, id: &str) -> StoreError {
    StoreError::Corrupt(format!("{what} of {id}"))
}

fn row_to_run(r: &Row<'_>) -> Result<Run> {
    let id: String = r.get(0)?;
    let status: String = r.get(6)?;
    let stopped_by: Option<String> = r.get(16)?;
    let parse = || -> Result<Run> {
        Ok(Run {
            short_id: r.get(1)?,
            agent: r.get(2)?,
            title: r.get(3)?,
            workflow: r.get(4)?,
            idempotency_key: r.get(5)?,
            status: RunStatus::parse(&status).ok_or_else(|| corrupt("status", &id))?,
            phase: r.get(7)?,
            step: r.get(8)?,
            events: r.get(9)?,
            totals: Totals {
                warnings: r.get(10)?,
                errors: r.get(11)?,
            },
            dropped: Totals {
                warnings: r.get(12)?,
                errors: r.get(13)?,
            },
            check_in: r.get(14)?,
            reason: r.get(15)?,
            stopped_by: stopped_by
                .map(|s| StopCause::parse(&s).ok_or_else(|| corrupt("stopped_by", &id)))
                .transpose()?,
            created_at: r.get(17)?,
            updated_at: r.get(18)?,
            finished_at: r.get(19)?,
            id: id.clone(),
        })
    };
    parse()
}

fn row_to_check_in(r: &Row<'_>) -> Result<CheckIn> {
    let id: String = r.get(0)?;
    let status: String = r.get(3)?;
    let why: Option<String> = r.get(4)?;
    let event: String = r.get(6)?;
    let artifacts: String = r.get(9)?;
    let via: Option<String> = r.get(13)?;
    let parse = || -> Result<CheckIn> {
        Ok(CheckIn {
            short_id: r.get(1)?,
            run_id: r.get(2)?,
            status: CheckInStatus::parse(&status).ok_or_else(|| corrupt("status", &id))?,
            why: match why.as_deref() {
                None => None,
                Some("check_in") => Some(Why::CheckIn),
                Some("tolerance") => Some(Why::Tolerance),
                Some(_) => return Err(corrupt("why", &id)),
            },
            reason: r.get(5)?,
            event: EventType::parse(&event).ok_or_else(|| corrupt("event type", &id))?,
            phase: r.get(7)?,
            step: r.get(8)?,
            artifacts: serde_json::from_str(&artifacts).map_err(|_| corrupt("artifacts", &id))?,
            shown: Totals {
                warnings: r.get(10)?,
                errors: r.get(11)?,
            },
            decided_by: r.get(12)?,
            decided_via: via
                .map(|v| v.parse::<Via>().map_err(|_| corrupt("decided_via", &id)))
                .transpose()?,
            decision_reason: r.get(14)?,
            ttl_ms: r.get(15)?,
            created_at: r.get(16)?,
            decided_at: r.get(17)?,
            expires_at: r.get(18)?,
            id: id.clone(),
        })
    };
    parse()
}

fn run_conn(conn: &Conn<'_>, id: &str) -> Result<Option<Run>> {
    conn.query_opt(
        &format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"),
        params![id],
        row_to_run,
    )
}

fn check_in_conn(conn: &Conn<'_>, id: &str) -> Result<Option<CheckIn>> {
    conn.query_opt(
        &format!(
            "SELECT {CHECK_IN_COLUMNS} FROM check_ins c \
             JOIN run_events e ON e.run_id = c.run_id AND e.seq = c.seq WHERE c.id = ?1"
        ),
        params![id],
        row_to_check_in,
    )
}

fn must<T>(found: Option<T>, what: &str, id: &str) -> Result<T> {
    found.ok_or_else(|| StoreError::Corrupt(format!("{what} {id} vanished")))
}

impl Store {
    /// Starts a run (with its `run_started` audit row), or returns the run an earlier
    /// start with the same idempotency key made.
    pub fn start_run(&self, new: &NewRun) -> Result<RunInserted> {
        self.write(|tx| {
            if let Some(key) = &new.idempotency_key {
                let existing = tx.query_opt(
                    &format!(
                        "SELECT {RUN_COLUMNS} FROM runs WHERE agent = ?1 AND idempotency_key = ?2"
                    ),
                    params![new.agent, key],
                    row_to_run,
                )?;
                if let Some(run) = existing {
                    let same = run.title == new.title && run.workflow == new.workflow;
                    tx.discard();
                    return Ok(if same {
                        RunInserted::Existing(run)
                    } else {
                        RunInserted::Conflict(run)
                    });
                }
            }
            super::health::agent_room(self.watch.as_ref(), tx)?;
            let id = super::new_id();
            let short_id = unique_short_id_beside(tx, "runs")?;
            tx.execute(
                "INSERT INTO runs (id, short_id, agent, title, workflow, idempotency_key, status, \
                 created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running', ?7, ?7)",
                params![
                    id,
                    short_id,
                    new.agent,
                    new.title,
                    new.workflow,
                    new.idempotency_key,
                    new.created_at
                ],
            )?;
            audit_tx(
                tx,
                new.created_at,
                Some(&id),
                "run_started",
                Some(&new.agent),
                None,
                &json!({"short_id": short_id, "title": new.title, "workflow": new.workflow}),
            )?;
            let run = must(run_conn(tx, &id)?, "run", &id)?;
            Ok(RunInserted::New(run))
        })
    }

    /// A run by id.
    pub fn run(&self, id: &str) -> Result<Option<Run>> {
        self.writer(|c| run_conn(c, id))
    }

    /// Resolves a full id or a short id (any case), and with `prefixes` a unique
    /// prefix of 4+ characters of a short id.
    pub fn lookup_run(&self, typed: &str, prefixes: bool) -> Result<RunLookup> {
        let typed = typed.trim();
        let lower = typed.to_ascii_lowercase();
        let found: Vec<Run> = self.writer(|conn| {
            let exact = conn.query_opt(
                &format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1 OR short_id = ?2"),
                params![typed, lower],
                row_to_run,
            )?;
            if let Some(run) = exact {
                return Ok(vec![run]);
            }
            if !prefixes || lower.len() < 4 || !lower.bytes().all(|b| b.is_ascii_alphanumeric())
            {
                return Ok(Vec::new());
            }
            conn.query_map(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM runs WHERE short_id LIKE ?1 || '%' ORDER BY id DESC LIMIT 11"
                ),
                params![lower],
                row_to_run,
            )
        })?;
        Ok(match found.len() {
            0 => RunLookup::NotFound,
            1 => RunLookup::Found(Box::new(found.into_iter().next().expect("one"))),
            _ => RunLookup::Ambiguous(found.into_iter().map(|r| r.short_id).collect()),
        })
    }

    /// Records one event of run `run_id`, evaluated against `settings` in force; a
    /// check-in it makes waits at most `ttl_ms`. See the module docs.
    pub fn record_event(
        &self,
        run_id: &str,
        new: &NewEvent,
        settings: &Settings,
        ttl_ms: i64,
        now: i64,
    ) -> Result<Recorded> {
        self.write(|tx| {
            let Some(run) = run_conn(tx, run_id)? else {
                tx.discard();
                return Ok(Recorded::NotFound);
            };
            if let Some(key) = &new.idempotency_key {
                if let Some(repeat) = repeated_event(tx, &run, new, key)? {
                    tx.discard();
                    return Ok(repeat);
                }
            }
            match run.status {
                RunStatus::Waiting => {
                    tx.discard();
                    return Ok(Recorded::Waiting(run));
                }
                RunStatus::Stopped | RunStatus::Completed => {
                    tx.discard();
                    return Ok(Recorded::Finished(run));
                }
                RunStatus::Running => {}
            }
            super::health::agent_room(self.watch.as_ref(), tx)?;
            let unreported: i64 = tx.query_row(
                "SELECT COUNT(*) FROM run_issues WHERE run_id = ?1 AND check_in IS NULL",
                params![run_id],
                |r| r.get(0),
            )?;
            let state = RunState {
                totals: run.totals,
                unreported: usize::try_from(unreported).unwrap_or(usize::MAX),
            };
            let evaluation = evaluate(settings, &state, &new.step);
            let seq = run.events.saturating_add(1);
            let outcome = apply(tx, &run, new, &evaluation, seq, ttl_ms, now)?;
            Ok(Recorded::Evaluated(outcome))
        })
    }

    /// Applies an owner's answer to the check-in `id`, if it still waits and its
    /// deadline has not passed (past it, it is expired instead: [`Answered::Expired`]).
    pub fn answer_check_in(&self, id: &str, answer: &CheckInAnswer, now: i64) -> Result<Answered> {
        self.write(|tx| {
            let Some(check_in) = check_in_conn(tx, id)? else {
                tx.discard();
                return Ok(Answered::NotFound);
            };
            let run = must(run_conn(tx, &check_in.run_id)?, "run", &check_in.run_id)?;
            if check_in.status != CheckInStatus::Waiting {
                tx.discard();
                return Ok(Answered::Already(check_in, run));
            }
            if check_in.expires_at.is_some_and(|at| at <= now) {
                let (c, r) = expire_tx(tx, &check_in, now)?;
                return Ok(Answered::Expired(c, r));
            }
            let status = match answer.answer {
                crate::workflow::run::Answer::Continue => CheckInStatus::Continued,
                crate::workflow::run::Answer::Stop => CheckInStatus::Stopped,
            };
            tx.execute(
                "UPDATE check_ins SET status = ?2, decided_by = ?3, decided_via = ?4, \
             decision_reason = ?5, decided_at = ?6 WHERE id = ?1 AND status = 'waiting'",
                params![
                    id,
                    status.as_str(),
                    answer.actor,
                    answer.via.as_str(),
                    answer.reason,
                    now
                ],
            )?;
            let check_in = must(check_in_conn(tx, id)?, "check-in", id)?;
            let reason = check_in.run_reason();
            let run_status = match (status, check_in.event) {
                (CheckInStatus::Stopped, _) => RunStatus::Stopped,
                (_, EventType::WorkflowComplete) => RunStatus::Completed,
                _ => RunStatus::Running,
            };
            let stopped_by = (run_status == RunStatus::Stopped).then_some(StopCause::Owner);
            set_run_status(tx, &run.id, run_status, &reason, stopped_by, now)?;
            subject_changed(tx, id, false, status.as_str())?;
            audit_tx(
                tx,
                now,
                Some(id),
                "check_in_answered",
                Some(&answer.actor),
                Some(&answer.via),
                &json!({"answer": answer.answer.as_str(), "reason": answer.reason, "run": run.id}),
            )?;
            audit_run_end(tx, &run.id, run_status, stopped_by, &reason, now)?;
            let run = must(run_conn(tx, &run.id)?, "run", &run.id)?;
            Ok(Answered::Done(check_in, run))
        })
    }

    /// Expires waiting check-ins whose deadline is at or before `now` (earliest first,
    /// at most [`EXPIRE_BATCH`]); each stops its run.
    pub fn expire_check_ins_due(&self, now: i64) -> Result<Vec<(CheckIn, Run)>> {
        self.write(|tx| {
        let due: Vec<String> = tx.query_map(
            "SELECT id FROM check_ins WHERE status = 'waiting' AND expires_at <= ?1 \
             ORDER BY expires_at LIMIT ?2",
            params![now, EXPIRE_BATCH],
            |r| r.get(0),
        )?;
        let mut expired = Vec::with_capacity(due.len());
        for id in due {
            match check_in_conn(tx, &id) {
                Ok(Some(c)) => expired.push(expire_tx(tx, &c, now)?),
                Ok(None) => {}
                // A row that does not read back (a hand-edited database) must not stop
                // the others expiring; it is expired without its record.
                Err(StoreError::Corrupt(what)) => {
                    tracing::error!(id = %id, %what, "expiring a check-in whose row cannot be read");
                    tx.execute(
                        "UPDATE check_ins SET status = 'expired', decided_at = ?2 WHERE id = ?1",
                        params![id, now],
                    )?;
                    subject_changed(tx, &id, false, CheckInStatus::Expired.as_str())?;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(expired)
        })
    }

    /// The earliest deadline among waiting check-ins (past ones included).
    pub fn next_check_in_deadline(&self) -> Result<Option<i64>> {
        self.writer(|c| {
            c.query_row(
                "SELECT MIN(expires_at) FROM check_ins WHERE status = 'waiting'",
                params![],
                |r| r.get(0),
            )
        })
    }

    /// A check-in by id.
    pub fn check_in(&self, id: &str) -> Result<Option<CheckIn>> {
        self.writer(|c| check_in_conn(c, id))
    }

    /// The problems a check-in shows, in the order they were reported (at most
    /// [`MAX_ISSUES_READ`]).
    pub fn check_in_issues(&self, id: &str) -> Result<Vec<RunIssue>> {
        let rows = self.writer(|conn| {
            conn.query_map(
                "SELECT kind, text, severity, detected, phase, step, exceeded FROM run_issues \
                 WHERE check_in = ?1 ORDER BY seq, n LIMIT ?2",
                params![id, MAX_ISSUES_READ as i64],
                |r| {
                    let kind: String = r.get(0)?;
                    let severity: String = r.get(2)?;
                    Ok((
                        kind,
                        severity,
                        RunIssue {
                            kind: IssueKind::Warning,
                            text: r.get(1)?,
                            severity: Severity::Medium,
                            detected: r.get(3)?,
                            phase: r.get(4)?,
                            step: r.get(5)?,
                            exceeded: r.get(6)?,
                        },
                    ))
                },
            )
        })?;
        let mut out = Vec::new();
        for (kind, severity, mut issue) in rows {
            issue.kind = match kind.as_str() {
                "warning" => IssueKind::Warning,
                "error" => IssueKind::Error,
                _ => return Err(corrupt("issue kind", id)),
            };
            issue.severity = Severity::parse(&severity).ok_or_else(|| corrupt("severity", id))?;
            out.push(issue);
        }
        Ok(out)
    }

    /// One page of runs, newest first.
    pub fn list_runs(&self, filter: &RunFilter) -> Result<Vec<Run>> {
        self.writer(|conn| {
            conn.query_map(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM runs WHERE (?1 IS NULL OR agent = ?1) \
                     AND (?2 IS NULL OR status = ?2) AND (?3 IS NULL OR id < ?3) \
                     ORDER BY id DESC LIMIT ?4"
                ),
                params![
                    filter.agent,
                    filter.status.map(RunStatus::as_str),
                    filter.after,
                    filter.limit as i64
                ],
                row_to_run,
            )
        })
    }

    /// Waiting check-ins with their runs, oldest first, optionally of one agent.
    pub fn waiting_check_ins(
        &self,
        agent: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(CheckIn, Run)>> {
        let ids: Vec<(String, String)> = self.writer(|conn| {
            conn.query_map(
                "SELECT c.id, c.run_id FROM check_ins c JOIN runs r ON r.id = c.run_id \
                 WHERE c.status = 'waiting' AND (?1 IS NULL OR r.agent = ?1) \
                 ORDER BY c.id LIMIT ?2",
                params![agent, limit as i64],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })?;
        self.writer(|conn| {
            ids.into_iter()
                .map(|(c, r)| {
                    Ok((
                        must(check_in_conn(conn, &c)?, "check-in", &c)?,
                        must(run_conn(conn, &r)?, "run", &r)?,
                    ))
                })
                .collect()
        })
    }

    /// How many check-ins wait for their owner.
    pub fn count_waiting_check_ins(&self) -> Result<usize> {
        let n: i64 = self.writer(|c| {
            c.query_row(
                "SELECT COUNT(*) FROM check_ins WHERE status = 'waiting'",
                params![],
                |r| r.get(0),
            )
        })?;
        Ok(usize::try_from(n).unwrap_or(0))
    }
}

/// The answer an earlier event with idempotency key `key` got, if there was one:
/// [`Recorded::Repeated`] for the same event (the same content hash; for an event
/// stored before hashes were kept, the same type, phase and step),
/// [`Recorded::KeyConflict`] for another.
fn repeated_event(tx: &Tx<'_>, run: &Run, new: &NewEvent, key: &str) -> Result<Option<Recorded>> {
    type Earlier = (
        u32,
        String,
        String,
        Option<String>,
        String,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let earlier: Option<Earlier> = tx.query_opt(
        "SELECT seq, type, phase, step, action, reason, check_in, content_hash \
         FROM run_events WHERE run_id = ?1 AND idempotency_key = ?2",
        params![run.id, key],
        |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
            ))
        },
    )?;
    let Some((seq, kind, phase, step_name, action, reason, check_in, hash)) = earlier else {
        return Ok(None);
    };
    let step = &new.step;
    let same = match (hash, &new.content_hash) {
        (Some(was), Some(now)) => was == *now,
        _ => kind == step.event.as_str() && phase == step.phase && step_name == step.step,
    };
    if !same {
        return Ok(Some(Recorded::KeyConflict(seq)));
    }
    let check_in = match check_in {
        Some(id) => Some(must(check_in_conn(tx, &id)?, "check-in", &id)?),
        None => None,
    };
    Ok(Some(Recorded::Repeated(EventOutcome {
        seq,
        action: Action::parse(&action).ok_or_else(|| corrupt("event action", &run.id))?,
        reason,
        check_in,
        run: run.clone(),
        exceeded: Vec::new(),
        truncated: Vec::new(),
    })))
}

/// Writes an evaluated event: the event row, its problems, the check-in it makes,
/// the run's new state, and the audit rows.
fn apply(
    tx: &Tx<'_>,
    run: &Run,
    new: &NewEvent,
    evaluation: &Evaluation,
    seq: u32,
    ttl_ms: i64,
    now: i64,
) -> Result<EventOutcome> {
    let step = &new.step;
    let settled = settle(step, &evaluation.verdict);
    insert_event(tx, &run.id, new, evaluation, seq, &settled, now)?;
    let check_in_id = match &settled.check_in {
        Some((status, why, text)) => Some(make_check_in(
            tx, run, seq, *status, *why, text, ttl_ms, now,
        )?),
        None => None,
    };
    update_run(
        tx,
        run,
        step,
        evaluation,
        seq,
        &settled,
        check_in_id.as_deref(),
        now,
    )?;
    let detail = event_detail(step, evaluation, seq, &settled, check_in_id.as_deref());
    audit_tx(
        tx,
        now,
        Some(&run.id),
        "run_event",
        Some(&run.agent),
        None,
        &detail,
    )?;
    let Settled {
        action,
        reason,
        status,
        stopped_by,
        ..
    } = settled;
    let reason_text = reason.clone().unwrap_or_default();
    audit_run_end(tx, &run.id, status, stopped_by, &reason_text, now)?;
    let check_in = match &check_in_id {
        Some(id) => Some(must(check_in_conn(tx, id)?, "check-in", id)?),
        None => None,
    };
    Ok(EventOutcome {
        seq,
        action,
        reason,
        check_in,
        run: must(run_conn(tx, &run.id)?, "run", &run.id)?,
        exceeded: evaluation.exceeded.clone(),
        truncated: evaluation.truncated.clone(),
    })
}

/// The `run_event` audit row's detail.
fn event_detail(
    step: &StepResult,
    evaluation: &Evaluation,
    seq: u32,
    settled: &Settled,
    check_in: Option<&str>,
) -> serde_json::Value {
    json!({
        "seq": seq,
        "type": step.event.as_str(),
        "phase": step.phase,
        "step": step.step,
        "warnings": step.warnings.len(),
        "errors": step.errors.len(),
        "exceeded": evaluation.exceeded.len(),
        "truncated": evaluation.truncated,
        "action": settled.action.as_str(),
        "reason": settled.reason,
        "check_in": check_in,
    })
}

/// Moves run `run` to event `seq` (its status, place, problem totals, check-in and
/// reason), and ties the event to its check-in.
#[allow(clippy::too_many_arguments)]
fn update_run(
    tx: &Tx<'_>,
    run: &Run,
    step: &StepResult,
    evaluation: &Evaluation,
    seq: u32,
    settled: &Settled,
    check_in_id: Option<&str>,
    now: i64,
) -> Result<()> {
    // A stopped run's reason says why; a running one keeps the owner's last answer.
    let run_reason = if settled.status == RunStatus::Stopped {
        &settled.reason
    } else {
        &run.reason
    };
    tx.execute(
        "UPDATE runs SET status = ?2, phase = ?3, step = ?4, events = ?5, warnings = ?6, \
         errors = ?7, dropped_warnings = dropped_warnings + ?8, dropped_errors = dropped_errors + ?9, \
         check_in = COALESCE(?10, check_in), reason = ?11, stopped_by = ?12, updated_at = ?13, \
         finished_at = CASE WHEN ?2 IN ('stopped', 'completed') THEN ?13 ELSE NULL END \
         WHERE id = ?1",
        params![
            run.id,
            settled.status.as_str(),
            step.phase,
            step.step,
            seq,
            evaluation.totals.warnings,
            evaluation.totals.errors,
            evaluation.dropped.warnings,
            evaluation.dropped.errors,
            check_in_id,
            run_reason,
            settled.stopped_by.map(StopCause::as_str),
            now
        ],
    )?;
    tx.execute(
        "UPDATE run_events SET check_in = ?3 WHERE run_id = ?1 AND seq = ?2",
        params![run.id, seq, check_in_id],
    )?;
    Ok(())
}

/// What an event's verdict does to its run ([`apply`]).
struct Settled {
    action: Action,
    reason: Option<String>,
    status: RunStatus,
    stopped_by: Option<StopCause>,
    /// The check-in to make: its status, why it asks, its text.
    check_in: Option<(CheckInStatus, Option<Why>, String)>,
}

/// What `verdict` on the event `step` does: the action the agent is told, the run's
/// status after it, and the check-in it makes, if any.
fn settle(step: &StepResult, verdict: &Verdict) -> Settled {
    let completes = step.event == EventType::WorkflowComplete;
    let after_continue = if completes {
        RunStatus::Completed
    } else {
        RunStatus::Running
    };
    // (action, reason, run status, stopped by, check-in to make)
    let (action, reason, status, stopped_by, check_in) = match verdict {
        Verdict::Continue => (Action::Continue, None, after_continue, None, None),
        Verdict::Report => (
            Action::Continue,
            None,
            after_continue,
            None,
            Some((
                CheckInStatus::Reported,
                None,
                crate::workflow::evaluate::question(step.event, &step.phase, step.step.as_deref()),
            )),
        ),
        Verdict::Ask { why, reason } => (
            Action::Wait,
            Some(reason.clone()),
            RunStatus::Waiting,
            None,
            Some((CheckInStatus::Waiting, Some(*why), reason.clone())),
        ),
        Verdict::Stop { cause, reason } => (
            Action::Stop,
            Some(reason.clone()),
            RunStatus::Stopped,
            Some(*cause),
            None,
        ),
    };
    Settled {
        action,
        reason,
        status,
        stopped_by,
        check_in,
    }
}

/// Stores event `seq` of run `run` with its issues (those kept, and those over the
/// run's limits).
#[allow(clippy::too_many_arguments)]
fn insert_event(
    tx: &Tx<'_>,
    run: &str,
    new: &NewEvent,
    evaluation: &Evaluation,
    seq: u32,
    settled: &Settled,
    now: i64,
) -> Result<()> {
    let step = &new.step;
    let artifacts = serde_json::to_string(&new.artifacts).unwrap_or_else(|_| "[]".into());
    tx.execute(
        "INSERT INTO run_events (run_id, seq, type, phase, step, artifacts, handling, autonomy, \
         action, reason, check_in, truncated, idempotency_key, created_at, content_hash) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, NULL, ?11, ?12, ?13, ?14)",
        params![
            run,
            seq,
            step.event.as_str(),
            step.phase,
            step.step,
            artifacts,
            serde_json::to_string(&step.handling).unwrap_or_default(),
            serde_json::to_string(&evaluation.autonomy).unwrap_or_default(),
            settled.action.as_str(),
            settled.reason,
            serde_json::to_string(&evaluation.truncated).unwrap_or_else(|_| "[]".into()),
            new.idempotency_key,
            now,
            new.content_hash
        ],
    )?;
    let issues = evaluation
        .kept
        .iter()
        .map(|i| (i, false))
        .chain(evaluation.exceeded.iter().map(|i| (i, true)));
    for (n, (issue, exceeded)) in issues.enumerate() {
        tx.execute(
            "INSERT INTO run_issues (run_id, seq, n, kind, severity, detected, text, phase, \
             step, exceeded, check_in) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, NULL)",
            params![
                run,
                seq,
                n as i64,
                issue.kind.as_str(),
                issue.severity.as_str(),
                issue.detected,
                issue.text,
                step.phase,
                step.step,
                exceeded
            ],
        )?;
    }
    Ok(())
}

/// Stores a check-in of event `seq`: a waiting one (a subject, with a short id and a
/// deadline, showing every problem not yet shown), or a report. Returns its id.
#[allow(clippy::too_many_arguments)]
fn make_check_in(
    tx: &Tx<'_>,
    run: &Run,
    seq: u32,
    status: CheckInStatus,
    why: Option<Why>,
    reason: &str,
    ttl_ms: i64,
    now: i64,
) -> Result<String> {
    let id = super::new_id();
    let waiting = status == CheckInStatus::Waiting;
    let short_id = if waiting {
        Some(unique_short_id(tx)?)
    } else {
        None
    };
    let (warnings, errors): (i64, i64) = tx.query_row(
        "SELECT COALESCE(SUM(kind = 'warning'), 0), COALESCE(SUM(kind = 'error'), 0) \
         FROM run_issues WHERE run_id = ?1 AND check_in IS NULL",
        params![run.id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    tx.execute(
        "INSERT INTO check_ins (id, short_id, run_id, seq, status, why, reason, warnings, errors, \
         ttl_ms, created_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        params![
            id,
            short_id,
            run.id,
            seq,
            status.as_str(),
            why.map(Why::as_str),
            reason,
            warnings,
            errors,
            waiting.then_some(ttl_ms),
            now,
            waiting.then_some(now.saturating_add(ttl_ms))
        ],
    )?;
    // What it shows is now shown: the next check-in starts after it.
    tx.execute(
        "UPDATE run_issues SET check_in = ?2 WHERE run_id = ?1 AND check_in IS NULL",
        params![run.id, id],
    )?;
    if let Some(short) = &short_id {
        subject_created(tx, &id, SubjectKind::CheckIn, short, status.as_str(), now)?;
        audit_tx(
            tx,
            now,
            Some(&id),
            "check_in_asked",
            Some(&run.agent),
            None,
            &json!({
                "run": run.id,
                "short_id": short,
                "why": why.map(Why::as_str),
                "reason": reason,
                "warnings": warnings,
                "errors": errors,
                "expires_at": now.saturating_add(ttl_ms),
            }),
        )?;
    } else {
        audit_tx(
            tx,
            now,
            Some(&id),
            "check_in_reported",
            Some(&run.agent),
            None,
            &json!({"run": run.id, "reason": reason}),
        )?;
    }
    Ok(id)
}

/// Moves a run to `status` after a check-in's answer or expiry.
fn set_run_status(
    tx: &Tx<'_>,
    run_id: &str,
    status: RunStatus,
    reason: &str,
    stopped_by: Option<StopCause>,
    now: i64,
) -> Result<()> {
    tx.execute(
        "UPDATE runs SET status = ?2, reason = ?3, stopped_by = ?4, updated_at = ?5, \
         finished_at = CASE WHEN ?2 IN ('stopped', 'completed') THEN ?5 ELSE NULL END \
         WHERE id = ?1",
        params![
            run_id,
            status.as_str(),
            reason,
            stopped_by.map(StopCause::as_str),
            now
        ],
    )?;
    Ok(())
}

/// The `run_stopped` / `run_completed` audit row of a run that just ended, if it did.
fn audit_run_end(
    tx: &Tx<'_>,
    run_id: &str,
    status: RunStatus,
    stopped_by: Option<StopCause>,
    reason: &str,
    now: i64,
) -> Result<()> {
    let event = match status {
        RunStatus::Stopped => "run_stopped",
        RunStatus::Completed => "run_completed",
        RunStatus::Running | RunStatus::Waiting => return Ok(()),
    };
    audit_tx(
        tx,
        now,
        Some(run_id),
        event,
        Some("gatebot"),
        Some(&Via::System),
        &json!({"stopped_by": stopped_by.map(StopCause::as_str), "reason": reason}),
    )
}

/// Expires one waiting check-in and stops its run, with the audit rows.
fn expire_tx(tx: &Tx<'_>, check_in: &CheckIn, now: i64) -> Result<(CheckIn, Run)> {
    let reason = crate::workflow::run::expiry_reason(check_in.ttl_ms);
    tx.execute(
        "UPDATE check_ins SET status = 'expired', decided_by = 'gatebot', decided_via = 'system', \
         decision_reason = ?2, decided_at = ?3 WHERE id = ?1 AND status = 'waiting'",
        params![check_in.id, reason, now],
    )?;
    let expired = must(check_in_conn(tx, &check_in.id)?, "check-in", &check_in.id)?;
    let run_reason = expired.run_reason();
    set_run_status(
        tx,
        &expired.run_id,
        RunStatus::Stopped,
        &run_reason,
        Some(StopCause::Expiry),
        now,
    )?;
    subject_changed(tx, &expired.id, false, CheckInStatus::Expired.as_str())?;
    audit_tx(
        tx,
        now,
        Some(&expired.id),
        "check_in_expired",
        Some("gatebot"),
        Some(&Via::System),
        &json!({"reason": reason, "run": expired.run_id}),
    )?;
    audit_run_end(
        tx,
        &expired.run_id,
        RunStatus::Stopped,
        Some(StopCause::Expiry),
        &run_reason,
        now,
    )?;
    let run = must(run_conn(tx, &expired.run_id)?, "run", &expired.run_id)?;
    Ok((expired, run))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workflow::evaluate::{normalize, ResultHandling};
    use crate::workflow::run::Answer;
    use crate::workflow::Frequency;

    const TTL: i64 = 1000;

    fn started(s: &Store, agent: &str, key: Option<&str>) -> Run {
        let new = NewRun {
            agent: agent.into(),
            title: "Release 2.4".into(),
            workflow: Some("release".into()),
            idempotency_key: key.map(str::to_string),
            created_at: 1,
        };
        match s.start_run(&new).unwrap() {
            RunInserted::New(r) => r,
            other => panic!("{other:?}"),
        }
    }

    fn event(kind: EventType, phase: &str, warnings: &[&str], errors: &[&str]) -> NewEvent {
        let issues = |k, list: &[&str]| {
            list.iter()
                .map(|t| {
                    let (text, sev) = t.split_once(':').unwrap_or((t, "low"));
                    normalize(k, text, Some(sev))
                })
                .collect()
        };
        NewEvent {
            step: StepResult {
                event: kind,
                phase: phase.into(),
                step: Some("s".into()),
                warnings: issues(IssueKind::Warning, warnings),
                errors: issues(IssueKind::Error, errors),
                handling: ResultHandling::default(),
            },
            artifacts: vec![],
            idempotency_key: None,
            content_hash: None,
        }
    }

    fn record(s: &Store, run: &Run, e: &NewEvent, now: i64) -> Recorded {
        s.record_event(&run.id, e, &Settings::default(), TTL, now)
            .unwrap()
    }

    fn evaluated(r: Recorded) -> EventOutcome {
        match r {
            Recorded::Evaluated(o) => o,
            other => panic!("{other:?}"),
        }
    }

    fn answer(a: Answer, reason: Option<&str>) -> CheckInAnswer {
        CheckInAnswer {
            answer: a,
            actor: "alice".into(),
            via: Via::Cli,
            reason: reason.map(str::to_string),
        }
    }

    #[test]
    fn a_run_starts_once_per_idempotency_key() {
        let s = Store::open_in_memory().unwrap();
        let run = started(&s, "m", Some("k"));
        assert_eq!((run.status, run.events), (RunStatus::Running, 0));
        let again = NewRun {
            agent: "m".into(),
            title: "Release 2.4".into(),
            workflow: Some("release".into()),
            idempotency_key: Some("k".into()),
            created_at: 2,
        };
        assert!(matches!(s.start_run(&again).unwrap(), RunInserted::Existing(r) if r.id == run.id));
        let other = NewRun {
            title: "Other".into(),
            ..again.clone()
        };
        assert!(matches!(
            s.start_run(&other).unwrap(),
            RunInserted::Conflict(_)
        ));
        // Keys are per agent.
        let theirs = NewRun {
            agent: "n".into(),
            ..again
        };
        assert!(matches!(s.start_run(&theirs).unwrap(), RunInserted::New(_)));
        assert!(matches!(
            s.lookup_run(&run.short_id.to_uppercase(), false).unwrap(),
            RunLookup::Found(_)
        ));
        assert!(matches!(
            s.lookup_run(&run.short_id[..4], false).unwrap(),
            RunLookup::NotFound
        ));
        assert!(matches!(
            s.lookup_run(&run.short_id[..5], true).unwrap(),
            RunLookup::Found(_)
        ));
    }

    #[test]
    fn a_check_in_waits_shows_what_accumulated_and_the_answer_lets_the_run_go_on() {
        let s = Store::open_in_memory().unwrap();
        let run = started(&s, "m", None);
        let o = evaluated(record(
            &s,
            &run,
            &event(EventType::StepComplete, "build", &["Style issue"], &[]),
            10,
        ));
        assert_eq!((o.action, o.run.totals.warnings), (Action::Continue, 1));
        assert!(o.check_in.is_none());

        let o = evaluated(record(
            &s,
            &run,
            &event(EventType::PhaseComplete, "build", &[], &[]),
            20,
        ));
        assert_eq!(o.action, Action::Wait);
        assert_eq!(
            o.reason.as_deref(),
            Some("Check-in: build complete. Continue?")
        );
        let c = o.check_in.unwrap();
        assert_eq!(
            (c.status, c.shown.warnings, c.expires_at),
            (CheckInStatus::Waiting, 1, Some(20 + TTL))
        );
        assert_eq!(o.run.status, RunStatus::Waiting);
        // The check-in is a subject, open, at its status.
        let (subject, open) = s.subject(&c.id).unwrap().unwrap();
        assert_eq!((subject.kind, open), (SubjectKind::CheckIn, true));
        assert_eq!(s.check_in_issues(&c.id).unwrap()[0].text, "Style issue");
        assert_eq!(s.next_check_in_deadline().unwrap(), Some(20 + TTL));
        assert_eq!(s.waiting_check_ins(Some("m"), 10).unwrap().len(), 1);
        assert!(s.waiting_check_ins(Some("n"), 10).unwrap().is_empty());

        // No events while it waits.
        assert!(matches!(
            record(
                &s,
                &run,
                &event(EventType::StepComplete, "test", &[], &[]),
                30
            ),
            Recorded::Waiting(_)
        ));
        let Answered::Done(c2, r2) = s
            .answer_check_in(&c.id, &answer(Answer::Continue, Some("ok")), 40)
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (c2.status, r2.status),
            (CheckInStatus::Continued, RunStatus::Running)
        );
        assert_eq!(
            r2.reason.as_deref(),
            Some(
                format!(
                    "check-in {} continued by alice on the command line: ok",
                    c.short_id.clone().unwrap()
                )
                .as_str()
            )
        );
        assert!(
            !s.subject(&c.id).unwrap().unwrap().1,
            "closed once answered"
        );
        // A second answer loses and sees the first.
        assert!(matches!(
            s.answer_check_in(&c.id, &answer(Answer::Stop, None), 50).unwrap(),
            Answered::Already(c3, _) if c3.status == CheckInStatus::Continued
        ));
        // The next check-in starts after the last one: a clean phase is a report.
        let o = evaluated(record(
            &s,
            &run,
            &event(EventType::PhaseComplete, "test", &[], &[]),
            60,
        ));
        assert_eq!(o.action, Action::Continue);
        assert_eq!(o.check_in.unwrap().status, CheckInStatus::Reported);
        let o = evaluated(record(
            &s,
            &run,
            &event(EventType::WorkflowComplete, "test", &[], &[]),
            70,
        ));
        assert_eq!(
            (o.action, o.run.status),
            (Action::Continue, RunStatus::Completed)
        );
        assert!(matches!(
            record(&s, &run, &event(EventType::StepComplete, "x", &[], &[]), 80),
            Recorded::Finished(_)
        ));
        let events: Vec<String> = s
            .audit_rows(Some(&run.id), None)
            .unwrap()
            .into_iter()
            .map(|r| r.event)
            .collect();
        assert_eq!(
            events,
            [
                "run_started",
                "run_event",
                "run_event",
                "run_event",
                "run_event",
                "run_completed"
            ]
        );
        let events: Vec<String> = s
            .audit_rows(Some(&c.id), None)
            .unwrap()
            .into_iter()
            .map(|r| r.event)
            .collect();
        assert_eq!(events, ["check_in_asked", "check_in_answered"]);
    }

    #[test]
    fn a_breach_stops_the_run_with_the_seeds_reason() {
        let s = Store::open_in_memory().unwrap();
        let run = started(&s, "m", None);
        let o = evaluated(record(
            &s,
            &run,
            &event(
                EventType::StepComplete,
                "build",
                &["Deprecated API:medium"],
                &[],
            ),
            10,
        ));
        assert_eq!(
            (o.action, o.run.status, o.run.stopped_by),
            (Action::Stop, RunStatus::Stopped, Some(StopCause::Tolerance))
        );
        assert_eq!(
            o.run.reason.as_deref(),
            Some("Warning exceeds tolerance: Deprecated API")
        );
        assert_eq!(o.exceeded.len(), 1);
        assert!(o.run.finished_at.is_some());
    }

    #[test]
    fn an_answer_after_the_deadline_loses_to_it_and_expiry_stops_the_run() {
        let s = Store::open_in_memory().unwrap();
        let run = started(&s, "m", None);
        let settings = Settings {
            autonomy: crate::workflow::Autonomy {
                check_in_frequency: Frequency::PerStep,
                ..Settings::default().autonomy
            },
            ..Settings::default()
        };
        let o = evaluated(
            s.record_event(
                &run.id,
                &event(EventType::StepComplete, "b", &["Style issue"], &[]),
                &settings,
                TTL,
                10,
            )
            .unwrap(),
        );
        let c = o.check_in.unwrap();
        let Answered::Expired(c2, r2) = s
            .answer_check_in(&c.id, &answer(Answer::Continue, None), 10 + TTL)
            .unwrap()
        else {
            panic!()
        };
        assert_eq!(
            (c2.status, r2.status, r2.stopped_by),
            (
                CheckInStatus::Expired,
                RunStatus::Stopped,
                Some(StopCause::Expiry)
            )
        );
        assert!(r2.reason.unwrap().contains("expired: no answer within 1 s"));
        assert!(
            s.expire_check_ins_due(10_000).unwrap().is_empty(),
            "expired once"
        );

        // The expiry pass does the same for one nobody answered.
        let run = started(&s, "m", None);
        let o = evaluated(
            s.record_event(
                &run.id,
                &event(EventType::StepComplete, "b", &["Style issue"], &[]),
                &settings,
                TTL,
                100,
            )
            .unwrap(),
        );
        assert!(s.expire_check_ins_due(100 + TTL - 1).unwrap().is_empty());
        let expired = s.expire_check_ins_due(100 + TTL).unwrap();
        assert_eq!(expired.len(), 1);
        assert_eq!(expired[0].0.id, o.check_in.unwrap().id);
        assert_eq!(expired[0].1.status, RunStatus::Stopped);
        assert_eq!(s.next_check_in_deadline().unwrap(), None);
        assert_eq!(s.count_waiting_check_ins().unwrap(), 0);
    }

    #[test]
    fn a_repeated_event_key_returns_the_first_answer_and_counts_once() {
        let s = Store::open_in_memory().unwrap();
        let run = started(&s, "m", None);
        let mut e = event(EventType::StepComplete, "build", &["Style issue"], &[]);
        e.idempotency_key = Some("step-1".into());
        let first = evaluated(record(&s, &run, &e, 10));
        let Recorded::Repeated(again) = record(&s, &run, &e, 20) else {
            panic!()
        };
        assert_eq!((again.seq, again.action), (first.seq, first.action));
        assert_eq!(s.run(&run.id).unwrap().unwrap().totals.warnings, 1);
        let mut other = event(EventType::StepComplete, "test", &[], &[]);
        other.idempotency_key = Some("step-1".into());
        assert!(matches!(
            record(&s, &run, &other, 30),
            Recorded::KeyConflict(1)
        ));
    }

    #[test]
    fn a_waiting_check_in_and_its_deadline_survive_reopening_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.db");
        let (run, c) = {
            let s = Store::open(&path).unwrap();
            let run = started(&s, "m", None);
            let o = evaluated(record(
                &s,
                &run,
                &event(EventType::PhaseComplete, "build", &["Style issue"], &[]),
                10,
            ));
            (run, o.check_in.unwrap())
        };
        let s = Store::open(&path).unwrap();
        assert_eq!(s.run(&run.id).unwrap().unwrap().status, RunStatus::Waiting);
        assert_eq!(
            s.check_in(&c.id).unwrap().unwrap().expires_at,
            Some(10 + TTL)
        );
        assert_eq!(s.next_check_in_deadline().unwrap(), Some(10 + TTL));
        assert!(s
            .chat_backlog("telegram", "1", true)
            .unwrap()
            .contains(&c.id));
    }
}
