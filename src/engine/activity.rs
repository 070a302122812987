//! What agents, tasks and runs did, for the web dashboard's pages: an agent's
//! decisions per day, tasks by status with the requests made inside them, and a run's
//! timeline. Reads only; every change goes through the engine's own calls.

use std::collections::HashMap;

use super::{Engine, EngineError};
use crate::inbox::Task;
use crate::time::now_ms;
use crate::workflow::run::Run;

pub use crate::store::{Day, RunEvent, TaskFilter, TaskRequests, Timeline};

/// Most events of one run a timeline reads.
pub const MAX_TIMELINE_EVENTS: usize = 1000;

impl Engine {
    /// `agent`'s human approvals, denials and escalations per UTC day over the last
    /// `days` days (today included), oldest first; days with none are left out.
    pub async fn evidence_days(&self, agent: &str, days: i64) -> Result<Vec<Day>, EngineError> {
        if self.config().agent(agent).is_none() {
            return Err(EngineError::UnknownAgent(agent.to_string()));
        }
        let today = now_ms().div_euclid(86_400_000);
        let since = (today - days.max(1) + 1) * 86_400_000;
        let a = agent.to_string();
        self.blocking(move |s| s.evidence_days(&a, since)).await
    }

    /// One page of tasks, newest first.
    pub async fn task_page(&self, filter: TaskFilter) -> Result<Vec<Task>, EngineError> {
        self.blocking(move |s| s.task_page(&filter)).await
    }

    /// The requests made inside each of `tasks` (full ids): the latest `shown`, and
    /// how many.
    pub async fn requests_of_tasks(
        &self,
        tasks: Vec<String>,
        shown: usize,
    ) -> Result<HashMap<String, TaskRequests>, EngineError> {
        self.blocking(move |s| s.requests_of_tasks(&tasks, shown))
            .await
    }

    /// `run`'s events in order, with their problems, and its check-ins.
    pub async fn run_timeline(&self, run: &Run) -> Result<Timeline, EngineError> {
        let id = run.id.clone();
        self.blocking(move |s| s.run_timeline(&id, MAX_TIMELINE_EVENTS))
            .await
    }
}
