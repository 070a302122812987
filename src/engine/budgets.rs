//! Budgets (credit gating): the store checks a request's declared cost in the
//! transaction that lets it through ([`crate::budget`], `store::budgets`); here the
//! engine records what results report, tells owners when a budget reaches its warning
//! share, and reads spend for the views.
//!
//! 1. After spend changed (a request with a cost allowed or approved, a result or a
//!    task reporting a cost), [`Engine::spent`] asks the store for the warnings not yet
//!    given this period; each is recorded and audited there, then posted as a notice
//!    ([`Event::Notice`]) in every destination chat.
//! 2. [`Engine::report_cost`]: a result's cost takes the place of the declared one.
//! 3. [`Engine::agent_spend`]: "3.20 USD of 5.00 USD today", for the CLI and dashboard.

use std::sync::Arc;

use tracing::{info, warn};

use super::{Engine, EngineError, Event};
use crate::approval::Approval;
use crate::budget::{valid_cost, Budgets, Spend, MAX_COST};
use crate::time::now_ms;

/// An agent's spend against the budgets that apply to it.
#[derive(Debug, Clone)]
pub struct AgentSpend {
    pub budgets: Arc<Budgets>,
    pub spend: Spend,
}

impl AgentSpend {
    /// "3.20 USD of 5.00 USD today", one per budget that applies to `agent`.
    #[must_use]
    pub fn lines(&self, agent: &str) -> Vec<String> {
        self.budgets.describe(agent, &self.spend)
    }
}

impl Engine {
    /// Tells owners of each budget of `agent`'s that reached its warning share this
    /// period and was not told yet: in the background, so the call that spent is
    /// answered first. A failure is logged: the spend it follows stands.
    pub(super) fn spent(&self, agent: &str) {
        if self.config().budgets.is_none() {
            return;
        }
        let (store, events, agent) = (self.store.clone(), self.events.clone(), agent.to_string());
        tokio::spawn(async move {
            let a = agent.clone();
            match super::blocking(&store, move |s| s.budget_warnings(&a, now_ms())).await {
                Ok(given) => {
                    for w in given {
                        info!(agent, budget = %w.budget.key(), period = %w.period, "budget warning");
                        let _ = events.send(Event::Notice(Arc::from(w.to_string())));
                    }
                }
                Err(e) => warn!(agent, error = %e, "cannot check the budgets' warnings"),
            }
        });
    }

    /// Records what request `id`'s result reported it cost: it takes the place of the
    /// cost the request declared. Checked (finite, 0 to [`MAX_COST`]) before anything
    /// is written.
    pub async fn report_cost(&self, id: &str, cost: f64) -> Result<Approval, EngineError> {
        check_cost(cost)?;
        let i = id.to_string();
        let reported = self
            .blocking(move |s| s.report_cost(&i, cost, now_ms()))
            .await?;
        let a = reported.ok_or_else(|| EngineError::not_found(super::What::Request, id))?;
        self.spent(&a.agent);
        Ok(a)
    }

    /// What `agent` spent today and this month against the budgets that apply to it;
    /// `None` when no budget applies.
    pub async fn agent_spend(&self, agent: &str) -> Result<Option<AgentSpend>, EngineError> {
        let a = agent.to_string();
        let found = self.blocking(move |s| s.spend(&a, now_ms())).await?;
        Ok(found
            .filter(|(b, _)| b.apply_to(agent))
            .map(|(budgets, spend)| AgentSpend { budgets, spend }))
    }
}

/// A reported cost: finite, from 0 to [`MAX_COST`].
pub fn check_cost(cost: f64) -> Result<f64, EngineError> {
    if valid_cost(cost) {
        return Ok(cost);
    }
    Err(EngineError::invalid(
        "cost",
        format!("`cost` must be a number from 0 to {MAX_COST:.0}, got {cost}"),
    ))
}
