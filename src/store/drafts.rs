//! Drafts: the write and destructive calls of draft-only agents, blocked and kept
//! (`approvals.draft`: `open` until an owner discards one or hands it to an agent as an
//! inbox task). Each change is one transaction with its audit row.

use serde_json::json;

use super::approval_row::{get_conn, row_to_approval, COLUMNS};
use super::audit::audit_tx;
use super::sql::params;
use super::{Result, Store};
use crate::approval::{Approval, Via};

/// What became of a draft.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DraftState {
    Open,
    Discarded,
    /// Handed on as this task (none yet while the task is being made).
    Handed(Option<String>),
}

impl Store {
    /// One page of open drafts, newest first (`after`: the last id of the page before).
    pub fn drafts(
        &self,
        agent: Option<&str>,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Approval>> {
        self.writer(|c| {
            c.query_map(
                &format!(
                    "SELECT {COLUMNS} FROM approvals WHERE draft = 'open' \
                     AND (?1 IS NULL OR agent = ?1) AND (?2 IS NULL OR id < ?2) \
                     ORDER BY id DESC LIMIT ?3"
                ),
                params![agent, after, limit as i64],
                row_to_approval,
            )
        })
    }

    /// The draft `id` and what became of it; `None` if no draft has that id.
    pub fn draft(&self, id: &str) -> Result<Option<(Approval, DraftState)>> {
        self.writer(|c| {
            let state: Option<(Option<String>, Option<String>)> = c.query_opt(
                "SELECT draft, draft_task FROM approvals WHERE id = ?1",
                params![id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let state = match state {
                Some((Some(s), task)) => match s.as_str() {
                    "open" => DraftState::Open,
                    "discarded" => DraftState::Discarded,
                    _ => DraftState::Handed(task),
                },
                _ => return Ok(None),
            };
            Ok(get_conn(c, id)?.map(|a| (a, state)))
        })
    }

    /// Moves an open draft to `to` (audited as `draft_discarded` or `draft_handed`);
    /// `false` if it is no open draft (someone settled it first). `Handed(None)` claims it
    /// while its task is made; [`Store::draft_task`] then names the task.
    pub fn settle_draft(
        &self,
        id: &str,
        to: &DraftState,
        by: &str,
        via: &Via,
        now: i64,
    ) -> Result<bool> {
        let (state, event) = match to {
            DraftState::Open => ("open", "draft_reopened"),
            DraftState::Discarded => ("discarded", "draft_discarded"),
            DraftState::Handed(_) => ("handed", "draft_handed"),
        };
        let from = if *to == DraftState::Open {
            "handed"
        } else {
            "open"
        };
        self.write(|tx| {
            let changed = tx.execute(
                "UPDATE approvals SET draft = ?2 WHERE id = ?1 AND draft = ?3",
                params![id, state, from],
            )?;
            if changed == 1 {
                audit_tx(tx, now, Some(id), event, Some(by), Some(via), &json!({}))?;
            }
            Ok(changed == 1)
        })
    }

    /// Names the task a handed draft became (audited with it).
    pub fn draft_task(&self, id: &str, task: &str, by: &str, via: &Via, now: i64) -> Result<()> {
        self.write(|tx| {
            tx.execute(
                "UPDATE approvals SET draft_task = ?2 WHERE id = ?1 AND draft = 'handed'",
                params![id, task],
            )?;
            audit_tx(
                tx,
                now,
                Some(id),
                "draft_task",
                Some(by),
                Some(via),
                &json!({"task": task}),
            )
        })
    }
}
