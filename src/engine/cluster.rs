//! What a node learns of the other nodes' changes, when several share one PostgreSQL
//! database (docs/scale-out.md). Every commit that grows the audit trail tells the
//! listening nodes (`NOTIFY`, delivered only once it commits); a node then reads the
//! trail from where it was and hands each request some poll here waits on to its
//! waiters, as the deciding node does to its own. A notification can be lost (the
//! listening connection drops, the node was busy reconnecting): the trail is read
//! every [`RECHECK`] anyway, so a lost one delays an answer by that much at most and
//! never loses it.
//!
//! Only waiters follow other nodes' changes so far: chat cards and the dashboard's live
//! view of a node show what that node changed (docs/scale-out.md, "Not done yet").

use std::sync::{Arc, Weak};
use std::time::Duration;

use tracing::{debug, warn};

use super::Engine;
use crate::approval::Status;
use crate::store::Listening;

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

/// Hands the requests the trail shows changed after `last` to their waiters; the last
/// seq read.
async fn catch_up(engine: &Arc<Engine>, mut last: i64) -> i64 {
    loop {
        let after = last;
        let rows = match engine.blocking(move |s| s.trail_after(after, PAGE)).await {
            Ok(rows) => rows,
            // The database out of reach: calls say so; read again at the next turn.
            Err(_) => return last,
        };
        let full = rows.len() as i64 == PAGE;
        for (seq, subject) in rows {
            last = seq;
            let Some(id) = subject.filter(|id| engine.waiters.is_watched(id)) else {
                continue;
            };
            let read = id.clone();
            if let Ok(Some(a)) = engine.blocking(move |s| s.get(&read)).await {
                if a.status != Status::Pending {
                    engine.waiters.settled(&Arc::new(a));
                }
            }
        }
        if !full {
            return last;
        }
    }
}
