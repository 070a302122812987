//! Batches asked in chats, through typed calls: the confirmation's record (exactly the
//! requests it lists), ended once; and pending requests counted per agent, what a batch
//! would cover. The requests themselves are decided one by one through the request
//! kind's owner decision, as a single tap is: a batch changes no request by itself.

use super::{Engine, EngineError};
use crate::store::{Batch, BatchEnd, Ended, NewBatch};
use crate::subject::AgentPending;
use crate::time::now_ms;

impl Engine {
    /// The agents with at least `min` pending requests, largest first, at most `limit`,
    /// each counted over all its pending requests.
    pub async fn pending_agents(
        &self,
        min: usize,
        limit: usize,
    ) -> Result<Vec<AgentPending>, EngineError> {
        self.blocking(move |s| s.pending_agents(None, min, limit))
            .await
    }

    /// Records a batch as its confirmation lists it.
    pub async fn open_batch(&self, batch: NewBatch) -> Result<Batch, EngineError> {
        self.blocking(move |s| s.open_batch(&batch)).await
    }

    /// The batch `id`, if there is one.
    pub async fn batch(&self, id: &str) -> Result<Option<Batch>, EngineError> {
        let id = id.to_string();
        self.blocking(move |s| s.batch(&id)).await
    }

    /// Ends the batch `id` as `how`, by `by`, if it is open and unexpired: of two taps at
    /// once, one ends it and the other is told it had ended.
    pub async fn end_batch(&self, id: &str, how: BatchEnd, by: &str) -> Result<Ended, EngineError> {
        let (id, by) = (id.to_string(), by.to_string());
        self.blocking(move |s| s.end_batch(&id, how, &by, now_ms()))
            .await
    }

    /// Keeps what the confirmer of batch `id` was told, for a second tap.
    pub async fn set_batch_outcome(&self, id: &str, outcome: &str) -> Result<(), EngineError> {
        let (id, outcome) = (id.to_string(), outcome.to_string());
        self.blocking(move |s| s.set_batch_outcome(&id, &outcome))
            .await
    }
}
