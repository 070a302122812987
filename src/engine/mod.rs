//! The engine: the only code that changes state. It owns the store and the event bus,
//! and holds the config in force; a file per domain holds the steps:
//! `requests` (submit, decide, cancel, report, wait, expire: the request lifecycle),
//! `runs` (workflow runs and check-ins), `tasks` (the inbox), `trust` (tiers, pauses,
//! grants, proposals), `gate` (what an agent may hold open, and its pause), `sessions` (the web
//! dashboard's sign-in links and sessions), `history` (requests and the trail searched, a
//! page at a time, for the dashboard), `chat`
//! (chat bookkeeping for conversations and delivery), `batches` (the batches asked in
//! chats, and pending requests counted per agent), `drafts` (draft-only agents'
//! blocked calls, discarded or handed on as tasks), `refusal` and `housekeeping`.
//! Every change is published on the bus ([`Event`]); long-polls and chats listen.
//!
//! Every store call is guarded ([`Store::guarded`]): refused with a storage fault
//! when the database file was deleted or replaced, and a disk-full or I/O failure is
//! noted for [`Engine::storage_fault`] (`/v1/health`, the systemd watchdog).
//! Errors are typed facts ([`EngineError`]); the API and chat word them.

use std::sync::Arc;

use serde_json::json;
use tokio::sync::{broadcast, mpsc, watch, Notify};
use tracing::warn;

use crate::approval::{Approval, Status, Via};
use crate::config::{AgentConfig, Config};
use crate::names::{hidden_character, valid_agent_name};
use crate::store::{AuditCheck, AuditHead, AuditRow, StorageFault, Store, StoreError};
use crate::subject::Subject;
use crate::time::now_ms;

mod activity;
mod batches;
mod budgets;
mod chat;
pub mod cluster;
mod drafts;
mod error;
mod factors;
mod gate;
mod history;
mod housekeeping;
mod refusal;
mod requests;
mod sessions;
mod tasks;
mod trust;
mod waiters;

mod runs;

// Domain types the engine's calls take and give, re-exported for the callers that
// name them beside the call (the engine re-exports nothing of the store's).
pub use crate::store::{Batch, BatchEnd, BatchState, Ended, NewBatch, Session, SessionEnd};
pub use crate::store::{CodeCheck, FactorRow};
pub use activity::{Day, RunEvent, TaskFilter, TaskRequests, Timeline, MAX_TIMELINE_EVENTS};
pub use budgets::{check_cost, AgentSpend};
pub use chat::{ChatState, ChatWork, DigestNow, DigestPage, Pressed, RepliedTo};
pub use error::{Conflict, EngineError, GrantRefused, TokenProblem, What};
pub use factors::Enrolment;
pub use gate::{Acting, Cap, Slot, WaitSlot};
pub use history::{AuditFilter, Cursor, HistoryFilter, Page};
pub use refusal::{cut, Refusal, ECHO_CHARS, REFUSAL_WINDOW};
pub use requests::{
    describe_settled, record_request, GrantChoice, ScopeChoice, Submission, Submitted,
};
pub use runs::{EventOutcome, Recorded, RunFilter, RunStart};
pub use sessions::{token_shaped, SignInLink, SignInRefused, SignedIn};
pub use tasks::{TaskRequest, TaskSubject};
pub use trust::{PauseOutcome, ProposalDecided};

/// Owners' tier overrides and the agents' pauses, as a database holds them.
pub type OwnersTrust = (Vec<crate::trust::TierOverride>, Vec<crate::trust::Pause>);

/// A read-only look at the database at `path`, which a running daemon may hold open
/// (`gatebot check-config`): owners' tier overrides and pauses. `None`: no database, or
/// one from before tiers could be set.
pub fn peek_trust(path: &std::path::Path) -> Result<Option<OwnersTrust>, EngineError> {
    Ok(crate::store::peek_trust(path)?)
}

/// Opens the database at `path` (creating it if needed, with its private mode),
/// brings its schema up to date and closes it; then reports how many requests are
/// pending in it. For tools and tests that look at a daemon's database while it is
/// stopped.
pub fn open_database(path: &std::path::Path) -> Result<usize, EngineError> {
    let store = Store::open(path)?;
    Ok(store.count_pending()?)
}

/// How long a timer loop sleeps before the deadline `next` (ms since the epoch): until
/// it, but at most a minute, so a clock jump cannot strand a deadline; a minute when
/// there is none (a change wakes the loop sooner).
fn sleep_until(next: Option<i64>) -> std::time::Duration {
    let ms = next.map_or(60_000, |at| at.saturating_sub(now_ms()).clamp(0, 60_000));
    std::time::Duration::from_millis(ms.unsigned_abs())
}

/// Runs a store call on the blocking pool: SQLite calls block, sometimes on fsync.
async fn blocking<T, F>(store: &Arc<Store>, f: F) -> Result<T, EngineError>
where
    T: Send + 'static,
    F: FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
{
    let store = store.clone();
    // Work only the leading node does carries its lease's fence (`cluster`).
    let fence = cluster::FENCE.try_with(Clone::clone).ok().flatten();
    // Guarded: refused if the database was deleted or replaced, and a disk-full or I/O
    // failure is noted for /v1/health and the watchdog.
    tokio::task::spawn_blocking(move || store.fenced(fence.as_ref(), |s| s.guarded(f)))
        .await
        .map_err(|e| EngineError::internal("running a store call", e))?
        .map_err(EngineError::from)
}

/// Something that happened, published on the engine's bus.
#[derive(Debug, Clone)]
pub enum Event {
    /// A new request was stored (any status: pending ones need a prompt).
    Submitted(Arc<Approval>),
    /// A request changed state after submission (decided, expired, cancelled, result).
    Settled(Arc<Approval>),
    /// A subject of another kind (not a request) was created or changed, or a subject
    /// of any kind by another node sharing the database: its cards in chats need a look.
    Subject(String),
    /// Words for the owners, posted once in every destination chat (a budget's
    /// warning); not a subject: nothing to decide, no card to keep up to date.
    Notice(Arc<str>),
}

impl Event {
    /// The request the event is about, if it is about one.
    #[must_use]
    pub fn approval(&self) -> Option<&Approval> {
        match self {
            Event::Submitted(a) | Event::Settled(a) => Some(a),
            Event::Subject(_) | Event::Notice(_) => None,
        }
    }

    /// The subject whose cards in chats this event may change: a request that asks a
    /// human (or did), or a subject of another kind.
    #[must_use]
    pub fn subject(&self) -> Option<&str> {
        match self {
            Event::Submitted(a) if a.status == Status::Pending => Some(&a.id),
            Event::Submitted(_) => None,
            Event::Settled(a) => Some(&a.id),
            Event::Subject(id) => Some(id),
            Event::Notice(_) => None,
        }
    }
}

/// How a client reached gatebot; TCP clients must always present a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Unix,
    Tcp,
}

impl Transport {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Unix => "unix",
            Transport::Tcp => "tcp",
        }
    }
}

/// Refuses an agent name that is not plain ([`valid_agent_name`]), naming a hidden
/// character if that is the reason.
pub(super) fn check_agent_name(agent: &str) -> Result<(), EngineError> {
    if valid_agent_name(agent) {
        return Ok(());
    }
    Err(EngineError::invalid(
        "agent",
        hidden_character("agent", agent)
            .unwrap_or_else(|| "`agent` must be 1-64 letters, digits, '-', '_' or '.'".into()),
    ))
}

pub struct Engine {
    /// Counters for `GET /metrics`.
    pub metrics: Arc<crate::metrics::Metrics>,
    store: Arc<Store>,
    inserts: mpsc::Sender<requests::InsertJob>,
    /// The config in force; a watch, so what set itself up from it (chat delivery's
    /// workers) can follow a reload.
    config: watch::Sender<Arc<Config>>,
    events: broadcast::Sender<Event>,
    /// Long-polls, by the request they wait on ([`Engine::wait`]).
    waiters: waiters::Waiters,
    deadlines_changed: Notify,
    chat: ChatState,
    tasks: tasks::TaskState,
    gate: gate::Gate,
    /// Every agent's token buckets ([`Engine::admit`]).
    quotas: crate::limits::Quotas,
    /// This node among those using the database, and whether it leads.
    pub node: cluster::Node,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").finish_non_exhaustive()
    }
}

impl Engine {
    /// Opens (creating if needed) the database at `config.store.path`, or the
    /// PostgreSQL database `store.url` names, brings its schema up to date, and starts
    /// the engine on it.
    pub async fn open(config: Config) -> Result<Arc<Engine>, EngineError> {
        let (path, max_size, reserve) = (
            config.store.path.clone(),
            config.store.max_size,
            config.store.reserve,
        );
        let postgres = config.store.postgres.clone();
        let thresholds = config.clone();
        let store = tokio::task::spawn_blocking(move || {
            let store = match postgres {
                Some(pg) => {
                    Store::open_postgres(&pg.url, pg.password.as_ref().map(|p| p.expose()))?
                }
                None => {
                    let store = Store::open(&path)?;
                    store.keep_back(max_size, reserve)?;
                    store
                }
            };
            // Off the async threads: counting an upgraded database's requests takes
            // a while (once).
            trust::build_evidence(&store, &thresholds)?;
            Ok::<_, StoreError>(store)
        })
        .await
        .map_err(|e| EngineError::internal("opening the store", e))??;
        Ok(Engine::new(store, config))
    }

    /// Must be called inside a tokio runtime: it starts the group-commit writer.
    #[must_use]
    pub fn new(store: Store, config: Config) -> Arc<Engine> {
        let (events, _) = broadcast::channel(4096);
        let store = Arc::new(store);
        if let Err(e) = store.set_budgets(config.budgets.clone(), now_ms()) {
            // The budgets still hold against the days as they were last counted.
            warn!(error = %e, "cannot count the budgets' days again");
        }
        // Built already when opened by `Engine::open`: then one row read.
        if let Err(e) = trust::build_evidence(&store, &config) {
            warn!(error = %e, "cannot build the evidence summaries; agents' evidence may be short");
        }
        let (inserts, rx) = mpsc::channel(4 * requests::MAX_BATCH);
        tokio::spawn(requests::write_batches(store.clone(), rx));
        let shared = store.is_shared();
        let engine = Arc::new(Engine {
            metrics: Arc::default(),
            inserts,
            chat: ChatState::new(store.clone()),
            store,
            node: cluster::Node::new(&config),
            config: watch::Sender::new(Arc::new(config)),
            events,
            waiters: waiters::Waiters::default(),
            deadlines_changed: Notify::new(),
            tasks: tasks::TaskState::default(),
            gate: gate::Gate::default(),
            quotas: crate::limits::Quotas::default(),
        });
        // Several nodes may share the database: follow what the others change.
        if shared {
            tokio::spawn(cluster::follow(Arc::downgrade(&engine)));
        }
        engine
    }

    /// Lets `agent` (authenticated) make one call of kind `quota` with a body of
    /// `bytes`, or refuses it for the limit it is over ([`crate::limits`]): counted in
    /// `gatebot_rate_limited_total`, and logged at WARN at most once a minute per agent.
    /// Every route an agent writes through calls this before it does anything else.
    pub fn admit(
        &self,
        agent: &str,
        quota: crate::limits::Quota,
        bytes: usize,
    ) -> Result<(), EngineError> {
        use crate::limits::Taken;
        let config = self.config();
        let shared = !config.agents.contains_key(agent);
        let limits = config.limits.for_agent(agent);
        let now = std::time::Instant::now();
        match self
            .quotas
            .take(agent, shared, limits, quota, bytes as u64, now)
        {
            Taken::Ok => Ok(()),
            Taken::Refused { limited, log } => {
                self.metrics.limited(limited.quota);
                if log {
                    warn!(agent, limit = limited.quota.key(), "{limited}");
                }
                Err(EngineError::Limited(Box::new(limited)))
            }
        }
    }

    /// Counts an agent's write refused because agents filled their share of the
    /// database (`store.reserve`), and passes the result on.
    fn count_held_back<T>(&self, r: Result<T, EngineError>) -> Result<T, EngineError> {
        if let Err(EngineError::Store(e)) = &r {
            if e.held_back() {
                self.metrics.held_back();
            }
        }
        r
    }

    /// Why agents' writes are refused now, if they are: they filled their share of the
    /// database (see [`Store::keep_back`]). Not a storage fault: owners can act.
    pub async fn agents_held_back(&self) -> Option<String> {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || store.agents_held_back())
            .await
            .unwrap_or(None)
    }

    /// The configuration in force.
    #[must_use]
    pub fn config(&self) -> Arc<Config> {
        self.config.borrow().clone()
    }

    /// The config in force, and every change to it from now on.
    #[must_use]
    pub fn watch_config(&self) -> watch::Receiver<Arc<Config>> {
        self.config.subscribe()
    }

    /// Replaces the configuration (SIGHUP) with what of `config` a running daemon can
    /// apply ([`Config::reloaded`]); pending requests keep their verdicts. Each key that
    /// needs a restart is named in a warning and in the `config_reloaded` audit row, and
    /// returned.
    pub async fn reload(&self, config: Config) -> Result<Vec<&'static str>, EngineError> {
        let source = config.source.display().to_string();
        let mut restart = Vec::new();
        self.config.send_modify(|current| {
            let (applied, keys) = current.reloaded(config);
            *current = Arc::new(applied);
            restart = keys;
        });
        // `gatebot nodes` compares the configuration in force.
        self.node.reloaded(&self.config().source);
        let budgets = self.config().budgets.clone();
        self.blocking(move |s| s.set_budgets(budgets, now_ms()))
            .await?;
        for key in &restart {
            warn!(
                key,
                "configuration reload: `{key}` changed, but it is set up at start; \
                 the old value stays in force until gatebot restarts"
            );
        }
        let detail = json!({"source": source, "restart_needed": restart});
        self.blocking(move |s| {
            s.audit(
                now_ms(),
                None,
                "config_reloaded",
                Some("gatebot"),
                Some(&Via::System),
                &detail,
            )
        })
        .await?;
        Ok(restart)
    }

    /// Subscribes to every approval event from now on.
    #[must_use]
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// Runs a store call on the blocking pool: SQLite calls block, sometimes on fsync.
    async fn blocking<T, F>(&self, f: F) -> Result<T, EngineError>
    where
        T: Send + 'static,
        F: FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
    {
        blocking(&self.store, f).await
    }

    /// Chat bookkeeping: what conversations and delivery read and record.
    #[must_use]
    pub fn chat(&self) -> &ChatState {
        &self.chat
    }

    /// What `typed` (a full id, a short id or a unique prefix of 4+ characters) names
    /// for an owner: a request that asked a human, a task, a check-in or a proposal; an
    /// open one first. A request that never asked a human names no subject (look it up
    /// as a request).
    pub async fn identify(&self, typed: &str) -> Result<Subject, EngineError> {
        chat::lookup(&self.store, typed).await
    }

    /// One page of what waits for owners, of every kind (the web dashboard's list).
    pub async fn open_subjects(
        &self,
        filter: crate::subject::OpenFilter,
    ) -> Result<crate::subject::OpenPage, EngineError> {
        self.blocking(move |s| s.open_subjects(&filter)).await
    }

    fn publish(&self, event: Event) {
        if let Event::Settled(a) = &event {
            self.waiters.settled(a);
        }
        // No receiver is fine: nobody is waiting or prompting.
        let _ = self.events.send(event);
    }

    /// Checks that a client may act as `agent`, and returns the agent's config.
    ///
    /// An agent with a token must present it on every transport; on TCP every
    /// agent must have and present one. A token never identifies a different agent.
    pub fn authenticate(
        &self,
        agent: &str,
        bearer: Option<&str>,
        transport: Transport,
    ) -> Result<AgentConfig, EngineError> {
        // A malformed name is refused as such, not as an unknown agent: the owner sees
        // why (an invisible character posing as another agent's name, say).
        check_agent_name(agent)?;
        let config = self.config();
        let Some(cfg) = config.agent(agent) else {
            return Err(EngineError::UnknownAgent(agent.to_string()));
        };
        let refuse = |problem| {
            Err(EngineError::Unauthorized {
                agent: agent.to_string(),
                problem,
            })
        };
        match (&cfg.token, bearer) {
            (Some(token), Some(b)) if token.matches(b) => Ok(cfg),
            (Some(_), Some(_)) => refuse(TokenProblem::NotTheAgents),
            (Some(_), None) => refuse(TokenProblem::Missing),
            (None, _) if transport == Transport::Tcp => refuse(TokenProblem::ListenerRequiresOne),
            (None, Some(_)) => refuse(TokenProblem::NoneConfigured),
            (None, None) => Ok(cfg),
        }
    }

    /// The agent whose token `bearer` is, if any (to name who tried what in the audit).
    #[must_use]
    pub fn token_owner(&self, bearer: &str) -> Option<String> {
        let config = self.config();
        config
            .agents
            .iter()
            .find(|(_, a)| a.token.as_ref().is_some_and(|t| t.matches(bearer)))
            .map(|(name, _)| name.clone())
    }

    /// Records that the daemon started, and how many requests it found waiting. Windows
    /// of refused attempts an earlier run left open (it crashed) are closed first.
    pub async fn record_start(&self) -> Result<usize, EngineError> {
        self.flush_refusals(true).await?;
        self.blocking(|s| {
            let pending = s.count_pending()?;
            s.audit(
                now_ms(),
                None,
                "daemon_started",
                Some("gatebot"),
                Some(&Via::System),
                &json!({"version": env!("CARGO_PKG_VERSION"), "pending": pending}),
            )?;
            Ok(pending)
        })
        .await
    }

    /// What is wrong with the storage, if anything: the database file deleted or
    /// replaced, the disk full, I/O errors (see `store::health`). Does not wait for
    /// the connection, so it answers while a store call is stuck.
    pub async fn storage_fault(&self) -> Option<StorageFault> {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || store.storage_fault())
            .await
            .unwrap_or(None)
    }

    /// Up to `limit` audit rows with `after < seq <= until`, oldest first, optionally
    /// for one request and/or since a time: a page of the trail, for readers that
    /// stream it rather than hold it.
    pub async fn audit_page(
        &self,
        approval_id: Option<String>,
        since: Option<i64>,
        after: i64,
        until: i64,
        limit: i64,
    ) -> Result<Vec<AuditRow>, EngineError> {
        self.blocking(move |s| s.audit_page(approval_id.as_deref(), since, after, until, limit))
            .await
    }

    /// The highest seq in the audit trail now (where a reader starting now stops).
    pub async fn audit_last_seq(&self) -> Result<i64, EngineError> {
        self.blocking(|s| s.audit_last_seq()).await
    }

    /// Recomputes the audit hash chain; with `anchor` (a head hash printed earlier),
    /// also checks that the chain still holds it.
    pub async fn verify_audit(&self, anchor: Option<String>) -> Result<AuditCheck, EngineError> {
        self.blocking(move |s| s.verify_audit_with(anchor.as_deref()))
            .await
    }

    /// The audit chain's head as recorded (`None` if the record was removed).
    pub async fn audit_head(&self) -> Result<Option<AuditHead>, EngineError> {
        self.blocking(|s| s.audit_head()).await
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::store::{Inserted, NewApproval};
    use crate::subject::SubjectKind;

    #[tokio::test]
    async fn waits_on_a_request_get_its_change_and_leave_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("g.db")).unwrap();
        let new = || match store.insert(&NewApproval::sample("m", "t", None)) {
            Ok(Inserted::New(a)) => a,
            other => panic!("not inserted: {other:?}"),
        };
        let (a, b) = (new(), new());
        let config = Config::parse("", Path::new("/nonexistent/bot.toml")).unwrap();
        let engine = Engine::new(store, config);
        let stop = CancellationToken::new();
        let long = Duration::from_secs(60);
        let waits: Vec<_> = (0..3)
            .map(|_| {
                let (engine, id, stop) = (engine.clone(), a.id.clone(), stop.clone());
                tokio::spawn(async move { engine.wait(&id, long, &stop).await })
            })
            .collect();
        let other = {
            let (engine, id, stop) = (engine.clone(), b.id.clone(), stop.clone());
            tokio::spawn(async move { engine.wait(&id, Duration::from_millis(300), &stop).await })
        };
        while engine.waiters.watched() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        engine.cancel(&a.id, "m").await.unwrap();
        for w in waits {
            assert_eq!(w.await.unwrap().unwrap().status, Status::Cancelled);
        }
        // The other request's wait is not woken by it: it times out, still pending.
        assert_eq!(other.await.unwrap().unwrap().status, Status::Pending);
        assert_eq!(engine.waiters.watched(), 0);
        // A request already settled is answered at once.
        let settled = engine.wait(&a.id, long, &stop).await.unwrap();
        assert_eq!(settled.status, Status::Cancelled);
    }

    #[tokio::test]
    async fn identify_names_the_kind_of_what_an_owner_typed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("g.db")).unwrap();
        let Ok(Inserted::New(a)) = store.insert(&NewApproval::sample("m", "t", None)) else {
            panic!("not inserted")
        };
        let config = Config::parse("", Path::new("/nonexistent/bot.toml")).unwrap();
        let engine = Engine::new(store, config);
        let named = engine.identify(&a.short_id).await.unwrap();
        assert_eq!(
            (named.id.as_str(), named.kind),
            (a.id.as_str(), SubjectKind::Approval)
        );
        let missing = engine.identify("zzzzzz").await.unwrap_err();
        assert!(
            matches!(
                missing,
                EngineError::NotFound {
                    what: What::Subject,
                    ..
                }
            ),
            "{missing:?}"
        );
    }
}
