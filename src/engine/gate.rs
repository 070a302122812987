//! The gate every agent passes: where its pause is checked, and what it may hold
//! open at once.
//!
//! 1. **A pause stops what the agent does.** Every change an agent makes (claiming a
//!    task, reporting on one, starting a workflow run, reporting a run's event) first
//!    takes [`Engine::acting`], which refuses it with [`EngineError::Paused`] (409
//!    `agent_paused`, saying who paused the agent, when and why) while the agent is
//!    paused. A submission reads the pause with its other facts and is recorded as
//!    blocked instead (the owner sees what was asked), under the same order.
//! 2. **One order for pauses and actions.** Actions hold the gate's lock for reading
//!    while they check and commit; [`Engine::pause`] holds it for writing while it
//!    commits the pause, puts the agent's running tasks back in the queue and closes
//!    its waits. Nothing an agent began before a pause lands after it, and nothing
//!    begins until the pause is in force.
//! 3. **What one agent holds.** On the agents' listeners every request of an agent
//!    takes a [`Slot`] for as long as it is answered (`[queue] max_connections_per_agent`)
//!    and every long-poll a [`WaitSlot`] too (`max_waits_per_agent`). One more is refused
//!    at once with [`EngineError::AtCap`] (429, naming the limit), so one agent cannot
//!    take the connections the others need. Refusals are counted
//!    (`gatebot_agent_refusals_total`).
//! 4. **A pause closes the agent's waits.** Each wait watches a token its agent's
//!    pause cancels: the wait returns at once, and is answered `agent_paused`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedRwLockReadGuard, RwLock};
use tokio_util::sync::CancellationToken;

use super::{Engine, EngineError};
use crate::metrics::AgentRefusal;

/// The gate's state: the order of pauses and actions, and what each agent holds.
#[derive(Debug, Default)]
pub(super) struct Gate {
    order: Arc<RwLock<()>>,
    held: Arc<Mutex<HashMap<String, Held>>>,
}

/// What one agent holds open now.
#[derive(Debug, Default)]
struct Held {
    requests: usize,
    waits: usize,
    /// Cancelled when the agent is paused (made afresh for the waits after).
    pause: Option<CancellationToken>,
}

/// An agent's action in progress: no pause commits until it drops.
#[derive(Debug)]
pub struct Acting(#[allow(dead_code)] OwnedRwLockReadGuard<()>);

/// Which per-agent cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    /// `[queue] max_connections_per_agent`.
    Connections,
    /// `[queue] max_waits_per_agent`.
    Waits,
}

impl Cap {
    /// The key that sets it.
    #[must_use]
    pub fn key(self) -> &'static str {
        match self {
            Cap::Connections => "queue.max_connections_per_agent",
            Cap::Waits => "queue.max_waits_per_agent",
        }
    }

    /// The API's error code.
    #[must_use]
    pub fn code(self) -> &'static str {
        match self {
            Cap::Connections => "too_many_connections",
            Cap::Waits => "too_many_waits",
        }
    }

    pub(super) fn what(self) -> &'static str {
        match self {
            Cap::Connections => "requests in flight",
            Cap::Waits => "long-polls open",
        }
    }

    fn refusal(self) -> AgentRefusal {
        match self {
            Cap::Connections => AgentRefusal::Connections,
            Cap::Waits => AgentRefusal::Waits,
        }
    }
}

/// One request of an agent in flight on the agents' listeners; counted until it drops.
#[derive(Debug)]
pub struct Slot {
    held: Arc<Mutex<HashMap<String, Held>>>,
    agent: String,
}

/// One long-poll of an agent; counted until it drops. Its [`WaitSlot::stop`] fires at
/// shutdown or when the agent is paused.
#[derive(Debug)]
pub struct WaitSlot {
    held: Arc<Mutex<HashMap<String, Held>>>,
    agent: String,
    stop: CancellationToken,
    shutdown: CancellationToken,
}

fn lock(held: &Mutex<HashMap<String, Held>>) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
    // Counters only: a panic elsewhere leaves them usable.
    held.lock().unwrap_or_else(|e| e.into_inner())
}

/// Forgets an agent that holds nothing (and whose waits' token nobody watches).
fn tidy(map: &mut HashMap<String, Held>, agent: &str) {
    if map
        .get(agent)
        .is_some_and(|h| h.requests == 0 && h.waits == 0)
    {
        map.remove(agent);
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut map = lock(&self.held);
        if let Some(h) = map.get_mut(&self.agent) {
            h.requests = h.requests.saturating_sub(1);
        }
        tidy(&mut map, &self.agent);
    }
}

impl Drop for WaitSlot {
    fn drop(&mut self) {
        let mut map = lock(&self.held);
        if let Some(h) = map.get_mut(&self.agent) {
            h.waits = h.waits.saturating_sub(1);
        }
        tidy(&mut map, &self.agent);
    }
}

impl WaitSlot {
    /// What the wait watches: shutdown, or the agent's pause.
    #[must_use]
    pub fn stop(&self) -> &CancellationToken {
        &self.stop
    }

    /// True when the wait was stopped by the agent's pause (not by shutdown).
    #[must_use]
    pub fn paused(&self) -> bool {
        self.stop.is_cancelled() && !self.shutdown.is_cancelled()
    }
}

impl Engine {
    /// Checks that `agent` may act now (it is not paused) and holds the gate's order
    /// until the returned guard drops: take it before a change the agent makes, and
    /// keep it until the change is committed. See the module docs.
    pub async fn acting(&self, agent: &str) -> Result<Acting, EngineError> {
        let guard = self.gate.order.clone().read_owned().await;
        self.refuse_if_paused(agent).await?;
        Ok(Acting(guard))
    }

    /// The gate's order for a submission, which reads the pause itself.
    pub(super) async fn submitting(&self) -> Acting {
        Acting(self.gate.order.clone().read_owned().await)
    }

    /// `Err(Paused)` when `agent` is paused now (counted).
    pub async fn refuse_if_paused(&self, agent: &str) -> Result<(), EngineError> {
        let a = agent.to_string();
        match self.blocking(move |s| s.pause_of(&a)).await? {
            Some(pause) => {
                self.metrics.agent_refused(AgentRefusal::Paused);
                Err(EngineError::Paused(Box::new(pause)))
            }
            None => Ok(()),
        }
    }

    /// Counts a request of `agent` in flight on the agents' listeners, or refuses it
    /// at `[queue] max_connections_per_agent`.
    pub fn enter(&self, agent: &str) -> Result<Slot, EngineError> {
        let max = self.config().queue.max_connections_per_agent;
        let mut map = lock(&self.gate.held);
        let h = map.entry(agent.to_string()).or_default();
        if h.requests >= max {
            drop(map);
            return Err(self.over(agent, Cap::Connections, max));
        }
        h.requests += 1;
        Ok(Slot {
            held: self.gate.held.clone(),
            agent: agent.to_string(),
        })
    }

    /// Starts a long-poll of `agent` on the agents' listeners: refused while it is
    /// paused, or at `[queue] max_waits_per_agent`. Its stop fires at `shutdown` or when
    /// the agent is paused.
    pub async fn begin_wait(
        &self,
        agent: &str,
        shutdown: &CancellationToken,
    ) -> Result<WaitSlot, EngineError> {
        // In the gate's order: a pause either sees this wait (and closes it) or is
        // seen by it.
        let _order = self.acting(agent).await?;
        let max = self.config().queue.max_waits_per_agent;
        let mut map = lock(&self.gate.held);
        let h = map.entry(agent.to_string()).or_default();
        if h.waits >= max {
            tidy(&mut map, agent);
            drop(map);
            return Err(self.over(agent, Cap::Waits, max));
        }
        h.waits += 1;
        // The agent's waits share one token, cancelled by its pause and, as a child of
        // shutdown, at shutdown: a wait costs no task or token of its own (every
        // listener's state holds the daemon's one shutdown token).
        let stop = h
            .pause
            .get_or_insert_with(|| shutdown.child_token())
            .clone();
        drop(map);
        Ok(WaitSlot {
            held: self.gate.held.clone(),
            agent: agent.to_string(),
            stop,
            shutdown: shutdown.clone(),
        })
    }

    fn over(&self, agent: &str, limit: Cap, max: usize) -> EngineError {
        self.metrics.agent_refused(limit.refusal());
        EngineError::AtCap {
            agent: agent.to_string(),
            limit,
            max,
        }
    }

    /// Holds the gate for a pause (see the module docs): actions under way
    /// finish first, and none begins until the guard drops.
    pub(super) async fn pausing(&self) -> tokio::sync::OwnedRwLockWriteGuard<()> {
        self.gate.order.clone().write_owned().await
    }

    /// Closes every wait `agent` holds (its pause is committed); returns how many.
    pub(super) fn close_waits(&self, agent: &str) -> usize {
        let mut map = lock(&self.gate.held);
        let Some(h) = map.get_mut(agent) else {
            return 0;
        };
        if let Some(t) = h.pause.take() {
            t.cancel();
        }
        let n = h.waits;
        tidy(&mut map, agent);
        n
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::Config;
    use crate::store::Store;

    fn engine(limits: &str) -> Arc<Engine> {
        let raw = format!("[agents.a]\ntier = \"supervised\"\n[agents.b]\ntier = \"supervised\"\n[queue]\n{limits}\n");
        let config = Config::parse(&raw, Path::new("/nonexistent/bot.toml")).unwrap();
        Engine::new(Store::open_in_memory().unwrap(), config)
    }

    #[tokio::test]
    async fn each_agent_has_its_own_caps_and_a_slot_frees_its_place() {
        let e = engine("max_connections_per_agent = 2\nmax_waits_per_agent = 1");
        let stop = CancellationToken::new();
        let (a1, a2) = (e.enter("a").unwrap(), e.enter("a").unwrap());
        let err = e.enter("a").unwrap_err();
        assert!(
            matches!(
                err,
                EngineError::AtCap {
                    limit: Cap::Connections,
                    max: 2,
                    ..
                }
            ),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains("`queue.max_connections_per_agent`"),
            "{err}"
        );
        // Another agent is not touched.
        let _b = e.enter("b").unwrap();
        drop(a1);
        let _a3 = e.enter("a").unwrap();
        let w = e.begin_wait("a", &stop).await.unwrap();
        let err = e.begin_wait("a", &stop).await.unwrap_err();
        assert!(
            matches!(
                err,
                EngineError::AtCap {
                    limit: Cap::Waits,
                    ..
                }
            ),
            "{err}"
        );
        let _wb = e.begin_wait("b", &stop).await.unwrap();
        drop(w);
        let _w = e.begin_wait("a", &stop).await.unwrap();
        assert_eq!(e.metrics.agent_refusals(AgentRefusal::Connections), 1);
        assert_eq!(e.metrics.agent_refusals(AgentRefusal::Waits), 1);
        drop(a2);
    }

    #[tokio::test]
    async fn closing_an_agents_waits_stops_them_and_not_the_others() {
        let e = engine("");
        let shutdown = CancellationToken::new();
        let a = e.begin_wait("a", &shutdown).await.unwrap();
        let b = e.begin_wait("b", &shutdown).await.unwrap();
        assert_eq!(e.close_waits("a"), 1);
        a.stop().cancelled().await;
        assert!(a.paused());
        assert!(!b.stop().is_cancelled());
        // A wait begun afterwards is not stopped by the earlier pause.
        let later = e.begin_wait("a", &shutdown).await.unwrap();
        assert!(!later.stop().is_cancelled());
        shutdown.cancel();
        b.stop().cancelled().await;
        assert!(!b.paused(), "stopped by shutdown, not a pause");
    }
}
