//! The nodes that use the database (`nodes`: one on SQLite, several sharing a PostgreSQL
//! one) and the leases that let one node at a time do the work only one may do
//! (`leases`: the chat platforms, the timers). Both are timed by the database's clock
//! (the `db_clock` view), never by a node's own, so nodes whose clocks differ agree on
//! when a lease ends.
//!
//! A lease is held by one run of a node until `expires_at` unless that run renews it;
//! once it has ended any node may take it, and each new holder gets the next **fence**.
//! Work done under a lease carries its fence ([`Fence`]): every write transaction made
//! while a fence is set checks, under the writer lock, that the lease is still that
//! fence's and not ended, and is refused otherwise (`StoreError::Fenced`). So a node
//! that was frozen past its lease (SIGSTOP, a long pause) and wakes believing it still
//! leads cannot write what the new holder is doing.

use super::fence::{self, Fence};
use super::sql::{now, params};
use super::{Backend, Result, Store};

/// This node as its row says: written at start and renewed while it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRow {
    /// `[store] node`, or the host's name.
    pub name: String,
    /// This run of the node (new at each start): what holds its leases.
    pub run: String,
    pub version: String,
    /// A hash of the configuration it loaded: nodes that differ are shown.
    pub config_hash: String,
    /// When this run started (ms).
    pub started_at: i64,
}

/// A node as the database last heard of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub name: String,
    pub version: String,
    pub config_hash: String,
    pub started_at: i64,
    /// How long ago (ms, by the database's clock) it last renewed its row.
    pub silent_for: i64,
    /// The leases its current run holds, unexpired.
    pub leases: Vec<String>,
}

/// A lease held: the fence this holder's work carries, and how long it has left by the
/// database's clock when it was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    pub fence: i64,
    pub left_ms: i64,
}

impl Store {
    /// Runs `f` with every write transaction it makes checking `fence` first (see the
    /// module's doc); without one, as `f` alone.
    pub fn fenced<T>(&self, fence: Option<&Fence>, f: impl FnOnce(&Store) -> T) -> T {
        match fence {
            Some(fence) => fence::within(fence, || f(self)),
            None => f(self),
        }
    }

    /// Of the audit rows `from..=through`, the ranges this node's own commits appended
    /// (always none on SQLite, where there is no other node); forgets those before `from`.
    pub fn own_appends(&self, from: i64, through: i64) -> Vec<(i64, i64)> {
        let Backend::Postgres(pg) = &self.backend else {
            return Vec::new();
        };
        let mut own = pg
            .own
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        own.retain(|&(_, last)| last >= from);
        own.iter()
            .filter(|&&(first, last)| first <= through && last >= from)
            .copied()
            .collect()
    }

    /// Writes this node's row (a new run replaces the last one's); the run that wrote it
    /// last, when another than `me`'s (an earlier run of this node, or another node
    /// given the same name).
    pub fn heartbeat(&self, me: &NodeRow) -> Result<Option<String>> {
        self.beside_writer(|tx| {
            let before: Option<String> = tx.query_opt(
                "SELECT run FROM nodes WHERE name = ?1",
                params![me.name],
                |r| r.get(0),
            )?;
            tx.execute(
                concat!(
                    "INSERT INTO nodes (name, run, version, config_hash, started_at, seen_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ",
                    now!(),
                    ") \
                     ON CONFLICT (name) DO UPDATE SET run = excluded.run, \
                     version = excluded.version, config_hash = excluded.config_hash, \
                     started_at = excluded.started_at, seen_at = excluded.seen_at"
                ),
                params![me.name, me.run, me.version, me.config_hash, me.started_at],
            )?;
            Ok(before.filter(|run| *run != me.run))
        })
    }

    /// Takes lease `name` for `me`'s run, or renews it, for `ttl_ms` from now by the
    /// database's clock: `Some` while `me` holds it, `None` while another run does (of
    /// another node, or an earlier run of this one, whose lease runs out by itself).
    pub fn hold_lease(&self, name: &str, me: &NodeRow, ttl_ms: i64) -> Result<Option<Held>> {
        self.beside_writer(|tx| {
            tx.query_opt(
                concat!(
                    "INSERT INTO leases (name, holder, node, fence, expires_at) \
                     VALUES (?1, ?2, ?3, 1, ",
                    now!(),
                    " + ?4) \
                     ON CONFLICT (name) DO UPDATE SET \
                       fence = CASE WHEN leases.holder = excluded.holder \
                               THEN leases.fence ELSE leases.fence + 1 END, \
                       holder = excluded.holder, node = excluded.node, \
                       expires_at = excluded.expires_at \
                     WHERE leases.holder = excluded.holder OR leases.expires_at <= ",
                    now!(),
                    " \
                     RETURNING fence, expires_at - ",
                    now!(),
                    ""
                ),
                params![name, me.run, me.name, ttl_ms],
                |r| {
                    Ok(Held {
                        fence: r.get(0)?,
                        left_ms: r.get(1)?,
                    })
                },
            )
        })
    }

    /// Ends `me`'s hold on lease `name` now (a node stopping), so another node takes it
    /// at its next try rather than when it would have run out.
    pub fn release_lease(&self, name: &str, me: &NodeRow) -> Result<()> {
        self.beside_writer(|tx| {
            tx.execute(
                concat!(
                    "UPDATE leases SET expires_at = ",
                    now!(),
                    " WHERE name = ?1 AND holder = ?2"
                ),
                params![name, me.run],
            )?;
            Ok(())
        })
    }

    /// Every node the database has heard of, most recently heard first.
    pub fn nodes(&self) -> Result<Vec<Node>> {
        self.read(|c| {
            let leases: Vec<(String, String)> = c.query_map(
                concat!(
                    "SELECT holder, name FROM leases WHERE expires_at > ",
                    now!(),
                    " ORDER BY name"
                ),
                params![],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let nodes: Vec<(String, Node)> = c.query_map(
                concat!(
                    "SELECT run, name, version, config_hash, started_at, ",
                    now!(),
                    " - seen_at \
                     FROM nodes ORDER BY seen_at DESC, name"
                ),
                params![],
                |r| {
                    Ok((
                        r.get(0)?,
                        Node {
                            name: r.get(1)?,
                            version: r.get(2)?,
                            config_hash: r.get(3)?,
                            started_at: r.get(4)?,
                            silent_for: r.get(5)?,
                            leases: Vec::new(),
                        },
                    ))
                },
            )?;
            Ok(nodes
                .into_iter()
                .map(|(run, mut node)| {
                    node.leases = leases
                        .iter()
                        .filter(|(holder, _)| *holder == run)
                        .map(|(_, name)| name.clone())
                        .collect();
                    node
                })
                .collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreError;

    fn node(name: &str, run: &str) -> NodeRow {
        NodeRow {
            name: name.into(),
            run: run.into(),
            version: "1.0.0".into(),
            config_hash: "abc".into(),
            started_at: 1,
        }
    }

    #[test]
    fn a_lease_is_held_by_one_run_until_it_ends_and_the_next_holder_gets_the_next_fence() {
        let s = Store::open_in_memory().unwrap();
        let (a, b) = (node("a", "a-1"), node("b", "b-1"));
        let first = s.hold_lease("leader", &a, 60_000).unwrap().unwrap();
        assert_eq!(first.fence, 1);
        assert!(
            first.left_ms > 50_000 && first.left_ms <= 60_000,
            "{first:?}"
        );
        // Another run cannot take it while it lasts; renewing keeps the fence.
        assert_eq!(s.hold_lease("leader", &b, 60_000).unwrap(), None);
        assert_eq!(
            s.hold_lease("leader", &a, 60_000).unwrap().unwrap().fence,
            1
        );
        // Once it has ended (here: let go), the other run takes it with the next fence,
        // and the first cannot have it back while the second holds it.
        s.release_lease("leader", &a).unwrap();
        assert_eq!(
            s.hold_lease("leader", &b, 60_000).unwrap().unwrap().fence,
            2
        );
        assert_eq!(s.hold_lease("leader", &a, 60_000).unwrap(), None);
        // A new run of b (a restart) waits for it like any other.
        assert_eq!(
            s.hold_lease("leader", &node("b", "b-2"), 60_000).unwrap(),
            None
        );
        // A lease that ran out is taken as one let go.
        assert_eq!(s.hold_lease("other", &a, 0).unwrap().unwrap().fence, 1);
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert_eq!(s.hold_lease("other", &b, 60_000).unwrap().unwrap().fence, 2);
    }

    #[test]
    fn a_write_under_a_fence_that_no_longer_holds_is_refused_and_changes_nothing() {
        let s = Store::open_in_memory().unwrap();
        let (a, b) = (node("a", "a-1"), node("b", "b-1"));
        let held = s.hold_lease("leader", &a, 60_000).unwrap().unwrap();
        let fence = Fence {
            lease: "leader",
            holder: a.run.clone(),
            fence: held.fence,
        };
        // While a holds it, its fenced writes go through (any write transaction: here
        // a number asking for no more texts).
        let stop = |s: &Store, number: &str| s.set_stopped("sms", number, true, 1);
        assert!(s.fenced(Some(&fence), |s| stop(s, "+100")).unwrap());
        s.release_lease("leader", &a).unwrap();
        s.hold_lease("leader", &b, 60_000).unwrap().unwrap();
        let stale = s.fenced(Some(&fence), |s| stop(s, "+200"));
        assert!(
            matches!(stale, Err(StoreError::Fenced(ref l)) if l == "leader"),
            "{stale:?}"
        );
        assert!(!s.contact("sms", "+200").unwrap().stopped);
        // Without the fence (an API call on that node) writes go through.
        assert!(stop(&s, "+300").unwrap());
        // The fence is the call's only: the thread's next call writes unfenced.
        assert!(stop(&s, "+200").unwrap());
        // Heartbeats and leases are written beside the writer, never fenced.
        s.fenced(Some(&fence), |s| s.heartbeat(&a)).unwrap();
    }

    #[test]
    fn nodes_are_listed_with_the_leases_their_current_run_holds() {
        let s = Store::open_in_memory().unwrap();
        let (a, b) = (node("a", "a-1"), node("b", "b-1"));
        s.heartbeat(&a).unwrap();
        s.heartbeat(&b).unwrap();
        s.hold_lease("leader", &a, 60_000).unwrap().unwrap();
        let nodes = s.nodes().unwrap();
        assert_eq!(nodes.len(), 2);
        let got = |name: &str| nodes.iter().find(|n| n.name == name).unwrap().clone();
        assert_eq!(got("a").leases, vec!["leader".to_string()]);
        assert!(got("b").leases.is_empty());
        assert!((0..5_000).contains(&got("a").silent_for), "{:?}", got("a"));
        assert_eq!(s.heartbeat(&a).unwrap(), None, "its own run wrote it last");
        // A restart of a is a new run: the old run's lease is not the new one's.
        assert_eq!(
            s.heartbeat(&node("a", "a-2")).unwrap().as_deref(),
            Some("a-1")
        );
        let nodes = s.nodes().unwrap();
        assert!(nodes
            .iter()
            .find(|n| n.name == "a")
            .unwrap()
            .leases
            .is_empty());
    }
}
