//! What a node learns of the other nodes' changes, when several share one PostgreSQL
//! database (docs/scale-out.md). Every commit that grows the audit trail tells the
//! listening nodes (`NOTIFY`, delivered only once it commits); a node then reads the
//! trail from where it was and hands each request some poll here waits on to its
//! waiters, as the deciding node does to its own. A notification can be lost (the
//! listening connection drops, the node was busy reconnecting): the trail is read
//! every [`RECHECK`] anyway, so a lost one delays an answer by that much at most and
//! never loses it.
//!
//! What other nodes changed is published on this node's bus as a subject's change
//! ([`super::Event::Subject`]), so chat delivery (on the leading node),
//! the dashboard's live view and `--wait` commands follow every node's changes.
//!
//! One node at a time **leads** ([`Engine::run_node`]): it holds the leader's lease, a
//! row with a fence number that lasts [`LEASE_TTL`] by the database's clock unless
//! renewed, and sends the chats' messages and runs the timers ([`Engine::while_leading`]). A
//! node that cannot renew in time stops acting before the lease would end; another takes
//! it once it has; the timers' writes carry the fence and are refused once it is stale.

use std::sync::{Arc, Weak};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use super::Engine;
use crate::approval::Status;
use crate::store::{Fence, Listening, NodeRow};

/// How often the trail is read with no notification.
pub(super) const RECHECK: Duration = Duration::from_secs(2);

/// Trail rows read at once.
const PAGE: i64 = 500;

/// Follows the trail for as long as the engine lives (the task holds it weakly).
pub(super) async fn follow(engine: Weak<Engine>) {
    let mut last = match engine.upgrade() {
        Some(e) => match e.blocking(|s| s.audit_head()).await {
            Ok(head) => head.map_or(0, |h| h.seq),
            Err(e) => {
                warn!(error = %e, "cannot read the audit trail's head; following it from the start");
                0
            }
        },
        None => return,
    };
    let mut listening: Option<Listening> = None;
    loop {
        if listening.is_none() {
            let Some(e) = engine.upgrade() else { return };
            listening = match e.blocking(|s| s.listen_for_changes()).await {
                Ok(l) => l,
                Err(e) => {
                    debug!(error = %e, "cannot listen for other nodes' changes; reading the trail every {}s", RECHECK.as_secs());
                    None
                }
            };
        }
        match &mut listening {
            Some(l) => {
                tokio::select! {
                    heard = l.heard.recv() => if heard.is_none() { listening = None },
                    () = tokio::time::sleep(RECHECK) => {}
                }
            }
            None => tokio::time::sleep(RECHECK).await,
        }
        let Some(e) = engine.upgrade() else { return };
        last = catch_up(&e, last).await;
    }
}

/// Tells this node of what other nodes changed after `last` (the trail's rows its own
/// commits did not append): each subject they changed is published on the bus (the chat
/// platforms, the dashboard's live view and `--wait` commands follow it as they follow
/// this node's changes), each request some poll here waits on is handed to its waiters,
/// and the timers look at their deadlines again. Returns the last seq read.
async fn catch_up(engine: &Arc<Engine>, mut last: i64) -> i64 {
    loop {
        let after = last;
        let rows = match engine.blocking(move |s| s.trail_after(after, PAGE)).await {
            Ok(rows) => rows,
            // The database out of reach: calls say so; read again at the next turn.
            Err(_) => return last,
        };
        let full = rows.len() as i64 == PAGE;
        let Some(&(through, _)) = rows.last() else {
            return last;
        };
        let own = engine.store.own_appends(after + 1, through);
        let mine = |seq: i64| own.iter().any(|&(first, end)| (first..=end).contains(&seq));
        let mut changed: Vec<String> = Vec::new();
        let mut others = false;
        for (seq, subject) in rows {
            last = seq;
            if mine(seq) {
                continue;
            }
            others = true;
            if let Some(id) = subject {
                if !changed.contains(&id) {
                    changed.push(id);
                }
            }
        }
        if others {
            engine.deadlines_changed.notify_one();
            engine.tasks.changed.notify_waiters();
            engine.tasks.timers.notify_one();
        }
        for id in changed {
            if engine.waiters.is_watched(&id) {
                let read = id.clone();
                if let Ok(Some(a)) = engine.blocking(move |s| s.get(&read)).await {
                    if a.status != Status::Pending {
                        engine.waiters.settled(&Arc::new(a));
                    }
                }
            }
            let _ = engine.events.send(super::Event::Subject(id));
        }
        if !full {
            return last;
        }
    }
}

/// The lease one node at a time holds to send the chats' messages and run the timers.
pub const LEADER: &str = "leader";

/// How long the lease lasts unless renewed, by the database's clock.
pub const LEASE_TTL: Duration = Duration::from_secs(10);

/// How often the holder renews it, and the others try to take it.
const RENEW: Duration = Duration::from_secs(2);

/// How long before the lease would end (counted on this node's clock from when the
/// renewal was sent) the holder stops acting: room for the renewal's round trip and for
/// clocks that run at slightly different rates.
const MARGIN: Duration = Duration::from_secs(2);

/// How often a node on SQLite renews its row (it is the only node: nothing waits on it).
const SOLE_HEARTBEAT: Duration = Duration::from_secs(60);

/// This node among those using the database, and whether it leads.
#[derive(Debug)]
pub struct Node {
    /// Its name among the nodes (`[store] node`).
    pub name: String,
    /// Its row in `nodes`, with the hash of the configuration in force (renewed at
    /// each reload): [`Node::row`].
    row: std::sync::Mutex<NodeRow>,
    /// `Some` while this node leads: with the fence its timers' writes carry (none on
    /// SQLite, where the only node always leads).
    leading: watch::Sender<Option<Lead>>,
    /// Another run wrote this node's row after this run first did: another node runs
    /// under the same name.
    name_shared: std::sync::atomic::AtomicBool,
}

/// This node leads, under `fence`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lead {
    pub fence: Option<Fence>,
}

tokio::task_local! {
    /// The fence the current task's store writes carry ([`Engine::blocking`]).
    pub(super) static FENCE: Option<Fence>;
}

impl Node {
    pub(super) fn new(config: &crate::config::Config) -> Node {
        Node {
            name: config.store.node.clone(),
            row: std::sync::Mutex::new(NodeRow {
                name: config.store.node.clone(),
                run: crate::store::new_id(),
                version: env!("CARGO_PKG_VERSION").to_string(),
                config_hash: config_hash(&config.source),
                started_at: crate::time::now_ms(),
            }),
            leading: watch::Sender::new(None),
            name_shared: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Heartbeat number `beat` (0: this run's first) found the row last written by
    /// `other`, when another run: after the first, another node has this name.
    fn heard_row(&self, beat: u64, other: Option<String>) {
        use std::sync::atomic::Ordering;
        if beat > 0 && other.is_some() && !self.name_shared.swap(true, Ordering::Relaxed) {
            warn!(
                node = %self.name,
                "another gatebot node runs under this node's name, so the two show as one in \
                 `gatebot nodes`: give each node its own name ([store] node in its bot.toml)"
            );
        }
    }

    /// Its row as it is now: with the hash of the configuration in force.
    fn row(&self) -> NodeRow {
        self.row
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The configuration was reloaded from `source`: its hash is the one the next
    /// heartbeat writes.
    pub(super) fn reloaded(&self, source: &std::path::Path) {
        self.row
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .config_hash = config_hash(source);
    }

    /// Whether this node leads now.
    #[must_use]
    pub fn leads(&self) -> bool {
        self.leading.borrow().is_some()
    }

    /// Follows whether this node leads (`Some` while it does).
    #[must_use]
    pub fn watch_lead(&self) -> watch::Receiver<Option<Lead>> {
        self.leading.subscribe()
    }
}

impl Engine {
    /// Keeps this node's row up to date and, when the store is shared, takes and renews
    /// the leader's lease, until `stop`; then lets the lease go, so another node takes it
    /// at once. On SQLite the node leads from the start.
    pub async fn run_node(self: Arc<Self>, stop: CancellationToken) {
        if !self.store.is_shared() {
            self.node.leading.send_replace(Some(Lead { fence: None }));
            for beat in 0.. {
                let row = self.node.row();
                match self.blocking(move |s| s.heartbeat(&row)).await {
                    Ok(other) => self.node.heard_row(beat, other),
                    Err(e) => debug!(error = %e, "cannot renew this node's row"),
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(SOLE_HEARTBEAT) => {}
                }
            }
        }
        // While this node leads: when its lease would end, by its own clock counted from
        // when the last renewal that held was sent, less the margin. Checked while a
        // renewal is under way too: a renewal stuck (a slow or unreachable database)
        // must not keep the node acting past its lease.
        let mut valid_until: Option<tokio::time::Instant> = None;
        let mut beat = 0;
        'renewing: loop {
            let sent = tokio::time::Instant::now();
            let row = self.node.row();
            let renewal = self.blocking(move |s| {
                let other = s.heartbeat(&row)?;
                Ok((
                    other,
                    s.hold_lease(LEADER, &row, LEASE_TTL.as_millis() as i64),
                ))
            });
            tokio::pin!(renewal);
            let held = loop {
                tokio::select! {
                    () = stop.cancelled() => break 'renewing,
                    held = &mut renewal => break held,
                    () = sleep_until_some(valid_until) => {
                        valid_until = None;
                        self.step_down("its lease could not be renewed in time");
                    }
                }
            };
            let held = held.and_then(|(other, held)| {
                self.node.heard_row(beat, other);
                Ok(held?)
            });
            beat += 1;
            match held {
                Ok(Some(held)) => {
                    let left =
                        Duration::from_millis(held.left_ms.max(0).unsigned_abs()).min(LEASE_TTL);
                    let until = sent + left.saturating_sub(MARGIN);
                    if until > tokio::time::Instant::now() {
                        valid_until = Some(until);
                        self.lead(held.fence);
                    } else {
                        // Answered too late to act on: the next renewal may.
                        valid_until = None;
                        self.step_down("its lease could not be renewed in time");
                    }
                }
                Ok(None) => {
                    valid_until = None;
                    self.step_down("another node holds the lease");
                }
                // Out of reach: this node keeps leading until its lease would end.
                Err(e) => debug!(error = %e, "cannot renew the leader's lease"),
            }
            let renew = sent + RENEW;
            loop {
                tokio::select! {
                    () = stop.cancelled() => break 'renewing,
                    () = tokio::time::sleep_until(renew) => break,
                    () = sleep_until_some(valid_until) => {
                        valid_until = None;
                        self.step_down("its lease could not be renewed in time");
                    }
                }
            }
        }
        if self.node.leads() {
            self.step_down("it is stopping");
            let row = self.node.row();
            if let Err(e) = self.blocking(move |s| s.release_lease(LEADER, &row)).await {
                debug!(error = %e, "cannot let the leader's lease go; it runs out by itself");
            }
        }
    }

    /// This node leads, under `fence` (said once, when it starts to).
    fn lead(&self, fence: i64) {
        let me = self.node.row();
        let lead = Lead {
            fence: Some(Fence {
                lease: LEADER,
                holder: me.run.clone(),
                fence,
            }),
        };
        self.node.leading.send_if_modified(|now| {
            if now.as_ref() == Some(&lead) {
                return false;
            }
            info!(node = %me.name, fence, "this node leads: it sends the chats' messages and runs the timers");
            *now = Some(lead);
            true
        });
    }

    /// This node no longer leads, because `why`.
    fn step_down(&self, why: &str) {
        self.node.leading.send_if_modified(|now| {
            if now.is_none() {
                return false;
            }
            info!(node = %self.node.name, "this node no longer leads: {why}");
            *now = None;
            true
        });
    }

    /// Runs `work` while this node leads: started when it comes to lead, stopped (its
    /// token cancelled, and awaited) when it no longer does, started again when it leads
    /// again; until `stop`. With `fenced`, every store write `work` makes itself (not
    /// from tasks it spawns) carries the lease's fence and is refused once another node
    /// holds the lease (`store::nodes`).
    pub async fn while_leading<F, Fut>(
        self: Arc<Self>,
        stop: CancellationToken,
        fenced: bool,
        work: F,
    ) where
        F: Fn(CancellationToken) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let mut leading = self.node.leading.subscribe();
        loop {
            let lead = loop {
                if let Some(lead) = leading.borrow_and_update().clone() {
                    break lead;
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    changed = leading.changed() => if changed.is_err() { return },
                }
            };
            let term = stop.child_token();
            let fence = lead.fence.clone().filter(|_| fenced);
            let run = FENCE.scope(fence, work(term.clone()));
            tokio::pin!(run);
            loop {
                tokio::select! {
                    () = &mut run => return,
                    changed = leading.changed() => {
                        let still = changed.is_ok()
                            && leading.borrow_and_update().as_ref() == Some(&lead);
                        if !still {
                            term.cancel();
                            run.as_mut().await;
                            break;
                        }
                    }
                }
            }
            if stop.is_cancelled() {
                return;
            }
        }
    }
}

/// Completes at `at`, or never without one.
async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Keys that differ from node to node by design: where each node listens, logs and
/// finds its own secrets. Left out of [`config_hash`].
const NODE_KEYS: &[(&str, &str)] = &[
    ("store", "node"),
    ("store", "path"),
    ("store", "password_file"),
    ("store", "password_env"),
    ("queue", "socket"),
    ("queue", "control_socket"),
    ("queue", "listen"),
    ("dashboard", "listen"),
    ("log", "format"),
    ("log", "level"),
];

/// A short hash of the configuration file at `path` as the nodes should share it (what
/// differs by design, [`NODE_KEYS`], left out; comments and layout do not count): two
/// nodes showing different ones run different configurations. Empty when the file
/// cannot be read (tests' engines have none).
fn config_hash(path: &std::path::Path) -> String {
    use sha2::{Digest, Sha256};
    let Ok(text) = std::fs::read_to_string(path) else {
        return String::new();
    };
    let Ok(mut table) = text.parse::<toml::Table>() else {
        return String::new();
    };
    for (section, key) in NODE_KEYS {
        if let Some(toml::Value::Table(t)) = table.get_mut(*section) {
            t.remove(*key);
            // A table that held only a node's own keys is as good as absent.
            if t.is_empty() {
                table.remove(*section);
            }
        }
    }
    let canonical = toml::to_string(&table).unwrap_or_default();
    Sha256::digest(canonical.as_bytes())[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A node that has not renewed its row for this long is shown as silent (stopped, or
/// cut off from the database), and left out of the version and configuration checks.
const SILENT_AFTER: Duration = LEASE_TTL;

/// A node as owners see it (`gatebot nodes`, `GET /v1/nodes`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeView {
    pub name: String,
    pub version: String,
    /// A short hash of its configuration, as every node should share it.
    pub config: String,
    /// When its current run started (ms).
    pub started_at: i64,
    /// How long ago it last renewed its row (ms, the database's clock).
    pub silent_for_ms: i64,
    /// It holds the leader's lease: it sends the chats' messages and runs the timers.
    pub leader: bool,
    /// It is the node that answered.
    pub this: bool,
    /// It renewed its row lately; otherwise it is stopped or cut off.
    pub running: bool,
}

/// Every node the database knows, and what owners should look at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodesView {
    pub nodes: Vec<NodeView>,
    /// Nodes running different versions or configurations, no node leading.
    pub warnings: Vec<String>,
}

impl Engine {
    /// Every node the database knows, this one first, with the warnings owners should
    /// act on.
    pub async fn nodes(&self) -> Result<NodesView, super::EngineError> {
        let rows = self.blocking(|s| s.nodes()).await?;
        let me = &self.node;
        // On SQLite there is no lease: the one node leads while it runs.
        let sole = !self.store.is_shared();
        let mut nodes: Vec<NodeView> = rows
            .into_iter()
            .map(|n| {
                let this = n.name == me.name;
                NodeView {
                    running: this || n.silent_for < SILENT_AFTER.as_millis() as i64,
                    leader: if sole {
                        this && self.node.leads()
                    } else {
                        n.leases.iter().any(|l| l == LEADER)
                    },
                    this,
                    name: n.name,
                    version: n.version,
                    // This node's own as it is now (its row follows at the next heartbeat).
                    config: if this {
                        self.node.row().config_hash
                    } else {
                        n.config_hash
                    },
                    started_at: n.started_at,
                    silent_for_ms: n.silent_for.max(0),
                }
            })
            .collect();
        nodes.sort_by_key(|n| !n.this);
        let mut warnings = warnings(&nodes);
        if me.name_shared.load(std::sync::atomic::Ordering::Relaxed) {
            warnings.push(format!(
                "another node runs under this node's name ({}), so the two show as one here: \
                 give each node its own name (`[store] node` in its bot.toml)",
                me.name
            ));
        }
        Ok(NodesView { nodes, warnings })
    }
}

/// What owners should act on among `nodes`: running nodes that differ in version or
/// configuration, and no node leading.
fn warnings(nodes: &[NodeView]) -> Vec<String> {
    let running: Vec<&NodeView> = nodes.iter().filter(|n| n.running).collect();
    let mut out = Vec::new();
    let differ = |of: fn(&NodeView) -> &str| {
        running.iter().any(|n| of(n) != of(running[0])).then(|| {
            running
                .iter()
                .map(|n| format!("{} {}", n.name, of(n)))
                .collect::<Vec<_>>()
                .join(", ")
        })
    };
    if let Some(list) = differ(|n| n.version.as_str()) {
        out.push(format!(
            "the nodes run different versions ({list}): upgrade them to one version"
        ));
    }
    if let Some(list) = differ(|n| n.config.as_str()) {
        out.push(format!(
            "the nodes run different configurations ({list}; bot.toml without what each \
             node sets for itself: its name, paths, sockets, listen addresses and log): give \
             every node the same bot.toml"
        ));
    }
    if !running.is_empty() && !running.iter().any(|n| n.leader) {
        out.push(format!(
            "no node leads now: chat messages and timers wait until one takes the lead \
             (within {} of the last leader stopping)",
            crate::words::span(LEASE_TTL)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, version: &str, config: &str, leader: bool, running: bool) -> NodeView {
        NodeView {
            name: name.into(),
            version: version.into(),
            config: config.into(),
            started_at: 0,
            silent_for_ms: if running { 0 } else { 60_000 },
            leader,
            this: false,
            running,
        }
    }

    #[test]
    fn owners_are_warned_of_differing_versions_and_configurations_and_of_no_leader() {
        let same = [
            node("a", "1.0.0", "abc", true, true),
            node("b", "1.0.0", "abc", false, true),
            // A stopped node's old version and configuration do not count.
            node("c", "0.9.0", "old", false, false),
        ];
        assert!(warnings(&same).is_empty(), "{:?}", warnings(&same));
        let differ = [
            node("a", "1.0.0", "abc", false, true),
            node("b", "1.1.0", "def", false, true),
        ];
        assert_eq!(
            warnings(&differ),
            [
                "the nodes run different versions (a 1.0.0, b 1.1.0): upgrade them to one \
                 version",
                "the nodes run different configurations (a abc, b def; bot.toml without what \
                 each node sets for itself: its name, paths, sockets, listen addresses and \
                 log): give every node the same bot.toml",
                "no node leads now: chat messages and timers wait until one takes the lead \
                 (within 10 s of the last leader stopping)",
            ]
        );
    }

    #[test]
    fn what_each_node_sets_for_itself_leaves_the_configuration_hash_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            config_hash(&path)
        };
        let a = write(
            "a.toml",
            "[store]\nnode = \"a\"\nurl = \"postgres://g@db/g\"\n[queue]\nlisten = \"10.0.0.1:8377\"\n\
             [policy]\ntool_approval_mode = \"dangerous\"\n",
        );
        // Another node's own keys, comments and layout: the same configuration.
        let b = write(
            "b.toml",
            "# node b\n[queue]\nlisten = \"10.0.0.2:8377\"\n[store]\nurl = \"postgres://g@db/g\"\n\
             node = \"b\"\n\n[policy]\ntool_approval_mode = \"dangerous\"\n",
        );
        assert_eq!(a.len(), 12);
        assert_eq!(a, b);
        let other = write(
            "c.toml",
            "[store]\nnode = \"c\"\nurl = \"postgres://g@db/g\"\n[policy]\ntool_approval_mode = \"all\"\n",
        );
        assert_ne!(a, other);
        assert_eq!(config_hash(&dir.path().join("missing.toml")), "");
    }
}
