//! What agents, tasks and runs did, read for the web dashboard's pages beyond what the
//! tables' own files offer: an agent's human decisions and escalations per day, tasks
//! by status, the requests made inside tasks, and a run's events in order. Reads only.

use std::collections::HashMap;

use super::approval_row::{row_to_approval, COLUMNS};
use super::sql::{params, Conn};
use super::{Result, Store, StoreError};
use crate::approval::Approval;
use crate::inbox::{Task, TaskStatus};
use crate::workflow::evaluate::IssueKind;
use crate::workflow::run::{Action, Artifact, CheckIn, RunIssue};
use crate::workflow::{EventType, Severity};

/// A day in Unix milliseconds.
const DAY_MS: i64 = 86_400_000;

/// One UTC day of an agent's requests: approved and denied by a human, and escalated
/// (sent unsure, below its `ask_human` confidence, or nobody decided in time), counted
/// as the evidence counts them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Day {
    /// Days since 1970-01-01 (UTC).
    pub day: i64,
    pub approved: u64,
    pub denied: u64,
    pub escalated: u64,
}

impl Day {
    /// The day's first instant, in Unix milliseconds.
    #[must_use]
    pub fn start_ms(&self) -> i64 {
        self.day * DAY_MS
    }

    #[must_use]
    pub fn total(&self) -> u64 {
        self.approved + self.denied + self.escalated
    }
}

/// Which tasks [`Store::task_page`] returns: newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskFilter {
    /// Only these statuses (empty: any).
    pub statuses: Vec<TaskStatus>,
    pub agent: Option<String>,
    /// The last id of the previous page.
    pub after: Option<String>,
    pub limit: usize,
}

/// The requests made inside a task: the latest few, and how many there are.
#[derive(Debug, Clone, Default)]
pub struct TaskRequests {
    pub shown: Vec<Approval>,
    pub total: usize,
}

/// One event of a run, as evaluated, with the problems it reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunEvent {
    /// From 1.
    pub seq: u32,
    pub event: EventType,
    pub phase: String,
    pub step: Option<String>,
    pub artifacts: Vec<Artifact>,
    /// What the agent was told.
    pub action: Action,
    pub reason: Option<String>,
    /// The check-in it made.
    pub check_in: Option<String>,
    pub created_at: i64,
    pub issues: Vec<RunIssue>,
}

/// A run's events in order (at most the limit asked), and all its check-ins.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    pub events: Vec<RunEvent>,
    /// Events beyond the limit, not read.
    pub more: usize,
    pub check_ins: Vec<CheckIn>,
}

fn corrupt(what: &str, id: &str) -> StoreError {
    StoreError::Corrupt(format!("{what} of run {id}"))
}

/// An event's seq (from 1), as read from its `INTEGER` column.
fn seq(n: i64, id: &str) -> Result<u32> {
    u32::try_from(n).map_err(|_| corrupt("a seq", id))
}

impl Store {
    /// `agent`'s requests created at or after `since` (the start of a UTC day), per UTC
    /// day, oldest first (days with none are left out), read from the hourly evidence
    /// summaries. Escalations are counted as the evidence counts them.
    pub fn evidence_days(&self, agent: &str, since: i64) -> Result<Vec<Day>> {
        self.read(|c| {
            c.query_map(
                "SELECT hour / 24 AS d, \
                 COALESCE(SUM(n * (asked = 1 AND status IN ('approved', 'executing', 'succeeded', 'failed'))), 0), \
                 COALESCE(SUM(n * (status = 'rejected')), 0), \
                 COALESCE(SUM(n * (status = 'expired') + n * low), 0) \
                 FROM evidence_hours WHERE agent = ?1 AND hour >= ?2 GROUP BY d HAVING SUM(n) > 0 ORDER BY d",
                params![agent, since.div_euclid(super::HOUR_MS)],
                |r| {
                    let n = |i: usize| -> Result<u64> { Ok(r.get::<i64>(i)?.max(0) as u64) };
                    Ok(Day {
                        day: r.get(0)?,
                        approved: n(1)?,
                        denied: n(2)?,
                        escalated: n(3)?,
                    })
                },
            )
        })
    }

    /// One page of tasks, newest first.
    pub fn task_page(&self, f: &TaskFilter) -> Result<Vec<Task>> {
        // The statuses are the enum's own names: nothing typed reaches the SQL.
        let statuses = f
            .statuses
            .iter()
            .map(|s| format!("'{}'", s.as_str()))
            .collect::<Vec<_>>()
            .join(", ");
        let only = if statuses.is_empty() {
            String::new()
        } else {
            format!("status IN ({statuses}) AND ")
        };
        let ids: Vec<String> = self.read(|c| {
            c.once().query_map(
                &format!(
                    "SELECT id FROM tasks WHERE {only}(?1 IS NULL OR agent = ?1) \
                     AND (?2 IS NULL OR id < ?2) ORDER BY id DESC LIMIT ?3"
                ),
                params![f.agent, f.after, f.limit as i64],
                |r| r.get(0),
            )
        })?;
        ids.iter()
            .filter_map(|id| self.get_task(id).transpose())
            .collect()
    }

    /// The requests made inside each of `tasks` (full ids): the latest `shown` of each,
    /// newest first, and how many there are.
    pub fn requests_of_tasks(
        &self,
        tasks: &[String],
        shown: usize,
    ) -> Result<HashMap<String, TaskRequests>> {
        self.read(|c| {
            let latest = format!(
                "SELECT {COLUMNS} FROM approvals WHERE task_id = ?1 ORDER BY id DESC LIMIT ?2"
            );
            let mut out = HashMap::new();
            for t in tasks {
                let total: i64 = c.query_row(
                    "SELECT COUNT(*) FROM approvals WHERE task_id = ?1",
                    params![t],
                    |r| r.get(0),
                )?;
                if total == 0 {
                    continue;
                }
                let shown = c.query_map(&latest, params![t, shown as i64], row_to_approval)?;
                out.insert(
                    t.clone(),
                    TaskRequests {
                        shown,
                        total: usize::try_from(total).unwrap_or(0),
                    },
                );
            }
            Ok(out)
        })
    }

    /// Run `id`'s first `limit` events with their problems, and its check-ins.
    pub fn run_timeline(&self, id: &str, limit: usize) -> Result<Timeline> {
        let (mut events, total, check_ins) = self.read(|c| {
            let total: i64 = c.query_row(
                "SELECT COUNT(*) FROM run_events WHERE run_id = ?1",
                params![id],
                |r| r.get(0),
            )?;
            let mut events = timeline_events(c, id, limit)?;
            attach_issues(c, id, &mut events)?;
            let check_ins: Vec<String> = c.query_map(
                "SELECT id FROM check_ins WHERE run_id = ?1 ORDER BY id",
                params![id],
                |r| r.get(0),
            )?;
            Ok((events, usize::try_from(total).unwrap_or(0), check_ins))
        })?;
        let check_ins = check_ins
            .iter()
            .filter_map(|c| self.check_in(c).transpose())
            .collect::<Result<Vec<_>>>()?;
        events.shrink_to_fit();
        Ok(Timeline {
            more: total.saturating_sub(events.len()),
            events,
            check_ins,
        })
    }
}

/// Run `id`'s first `limit` events, without their problems.
fn timeline_events(conn: &Conn<'_>, id: &str, limit: usize) -> Result<Vec<RunEvent>> {
    let rows = conn.query_map(
        "SELECT seq, type, phase, step, artifacts, action, reason, check_in, created_at \
         FROM run_events WHERE run_id = ?1 ORDER BY seq LIMIT ?2",
        params![id, limit as i64],
        |r| {
            Ok((
                seq(r.get::<i64>(0)?, id)?,
                r.get::<String>(1)?,
                r.get::<String>(2)?,
                r.get::<Option<String>>(3)?,
                r.get::<String>(4)?,
                r.get::<String>(5)?,
                r.get::<Option<String>>(6)?,
                r.get::<Option<String>>(7)?,
                r.get::<i64>(8)?,
            ))
        },
    )?;
    let mut events = Vec::new();
    for row in rows {
        let (seq, event, phase, step, artifacts, action, reason, check_in, at) = row;
        events.push(RunEvent {
            seq,
            event: EventType::parse(&event).ok_or_else(|| corrupt("an event type", id))?,
            phase,
            step,
            artifacts: serde_json::from_str(&artifacts).map_err(|_| corrupt("artifacts", id))?,
            action: Action::parse(&action).ok_or_else(|| corrupt("an action", id))?,
            reason,
            check_in,
            created_at: at,
            issues: Vec::new(),
        });
    }
    Ok(events)
}

/// Puts each of `events` with its problems.
fn attach_issues(conn: &Conn<'_>, id: &str, events: &mut [RunEvent]) -> Result<()> {
    let last = events.last().map_or(0, |e| e.seq);
    let rows = conn.query_map(
        "SELECT seq, kind, text, severity, detected, phase, step, exceeded \
         FROM run_issues WHERE run_id = ?1 AND seq <= ?2 ORDER BY seq, n",
        params![id, i64::from(last)],
        |r| {
            Ok((
                seq(r.get::<i64>(0)?, id)?,
                r.get::<String>(1)?,
                r.get::<String>(2)?,
                r.get::<String>(3)?,
                r.get::<bool>(4)?,
                r.get::<String>(5)?,
                r.get::<Option<String>>(6)?,
                r.get::<bool>(7)?,
            ))
        },
    )?;
    let mut by_seq: HashMap<u32, Vec<RunIssue>> = HashMap::new();
    for row in rows {
        let (seq, kind, text, severity, detected, phase, step, exceeded) = row;
        by_seq.entry(seq).or_default().push(RunIssue {
            kind: match kind.as_str() {
                "warning" => IssueKind::Warning,
                "error" => IssueKind::Error,
                _ => return Err(corrupt("an issue kind", id)),
            },
            text,
            severity: Severity::parse(&severity).ok_or_else(|| corrupt("a severity", id))?,
            detected,
            phase,
            step,
            exceeded,
        });
    }
    for e in events.iter_mut() {
        e.issues = by_seq.remove(&e.seq).unwrap_or_default();
    }
    Ok(())
}
