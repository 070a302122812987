//! Drafts: what a draft-only agent would have sent, kept for its owner instead of
//! vanishing as blocked. An owner discards one, or hands it to an agent as an inbox task
//! ("send this draft"), which then runs under that agent's own tier and gates: handing
//! a draft on grants nothing.

use super::{Engine, EngineError, TaskRequest, What};
use crate::approval::{Approval, Via};
use crate::inbox::Task;
use crate::store::DraftState;
use crate::time::now_ms;

impl Engine {
    /// One page of open drafts, newest first.
    pub async fn drafts(
        &self,
        agent: Option<String>,
        after: Option<String>,
        limit: usize,
    ) -> Result<Vec<Approval>, EngineError> {
        self.blocking(move |s| s.drafts(agent.as_deref(), after.as_deref(), limit))
            .await
    }

    /// Discards the open draft `id`, by `by` via `via` (audited).
    pub async fn discard_draft(
        &self,
        id: &str,
        by: &str,
        via: Via,
    ) -> Result<Approval, EngineError> {
        let a = self.open_draft(id).await?;
        let (key, by) = (a.id.clone(), by.to_string());
        let moved = self
            .blocking(move |s| s.settle_draft(&key, &DraftState::Discarded, &by, &via, now_ms()))
            .await?;
        if !moved {
            return Err(self.draft_settled(&a.id).await);
        }
        Ok(a)
    }

    /// Hands the open draft `id` to `agent` as an inbox task that asks it to make the
    /// call (audited, with the task). The draft is claimed first, so two owners cannot
    /// hand it on twice; if the task cannot be made, it is open again.
    pub async fn hand_draft(
        &self,
        id: &str,
        agent: &str,
        by: &str,
        via: Via,
    ) -> Result<(Approval, Task), EngineError> {
        let a = self.open_draft(id).await?;
        let text = draft_task_text(&a);
        let (key, who, v) = (a.id.clone(), by.to_string(), via.clone());
        let claimed = self
            .blocking(move |s| s.settle_draft(&key, &DraftState::Handed(None), &who, &v, now_ms()))
            .await?;
        if !claimed {
            return Err(self.draft_settled(&a.id).await);
        }
        let made = self
            .create_task(TaskRequest {
                text,
                agent: Some(agent.to_string()),
                intent: None,
                by: by.to_string(),
                via: via.clone(),
                home: None,
            })
            .await;
        let (key, who) = (a.id.clone(), by.to_string());
        match made {
            Ok(task) => {
                let t = task.id.clone();
                self.blocking(move |s| s.draft_task(&key, &t, &who, &via, now_ms()))
                    .await?;
                Ok((a, task))
            }
            Err(e) => {
                self.blocking(move |s| {
                    s.settle_draft(&key, &DraftState::Open, &who, &via, now_ms())
                })
                .await?;
                Err(e)
            }
        }
    }

    /// The draft `id` (a full id, a short id or a unique prefix), if it is open.
    async fn open_draft(&self, id: &str) -> Result<Approval, EngineError> {
        let full = self.lookup(id, false).await?.id;
        let found = self.blocking(move |s| s.draft(&full)).await?;
        match found {
            Some((a, DraftState::Open)) => Ok(a),
            Some((a, _)) => Err(self.draft_settled(&a.id).await),
            None => Err(EngineError::not_found(What::Draft, id)),
        }
    }

    /// The error for a draft that was settled already: what became of it.
    async fn draft_settled(&self, id: &str) -> EngineError {
        let key = id.to_string();
        let state = self.blocking(move |s| s.draft(&key)).await.ok().flatten();
        let why = match state.map(|(_, s)| s) {
            Some(DraftState::Discarded) => "was discarded already".to_string(),
            Some(DraftState::Handed(Some(t))) => format!("was handed on already (task {t})"),
            Some(DraftState::Handed(None)) => "is being handed on".to_string(),
            _ => "is no open draft".to_string(),
        };
        EngineError::Conflict(super::Conflict::Draft {
            draft: id.to_string(),
            why,
        })
    }
}

/// The task a draft becomes: what the agent is to do, in words, with the call whole.
fn draft_task_text(a: &Approval) -> String {
    let args = serde_json::to_string_pretty(&a.args).unwrap_or_else(|_| a.args.to_string());
    let mut text = format!(
        "Send this draft, which {} wrote and could not send itself (it is draft-only): \
         run the tool {} with exactly these arguments:\n{args}",
        a.agent, a.tool
    );
    if let Some(s) = a.summary.as_deref().filter(|s| !s.trim().is_empty()) {
        text.push_str(&format!("\nWhat {} said it is: {s}", a.agent));
    }
    text
}
