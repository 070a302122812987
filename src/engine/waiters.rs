//! Long-polls waiting for their request to change ([`Engine::wait`]).
//!
//! 1. A poll registers for its request ([`Waiters::watch`]) *before* it reads the
//!    request, so a change between the read and the wait is not missed.
//! 2. Each request waited on has one shared slot, however many polls wait on it: a
//!    `watch` holding the request as last published.
//! 3. Publishing [`Event::Settled`](super::Event::Settled) fills the request's slot
//!    ([`Waiters::settled`]): it wakes only the polls of that request, with the
//!    request as it now is, and nothing is read again. (Polls used to subscribe to the
//!    event bus: every change woke every poll of every request, and a poll that fell
//!    4 096 events behind read its request from the database.)
//! 4. The slot goes when its last poll does ([`Watching`]'s drop).
//!
//! [`Engine::wait`]: super::Engine::wait

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::watch;

use crate::approval::Approval;

type Slot = watch::Sender<Option<Arc<Approval>>>;

/// Every request some poll waits on, with its slot.
#[derive(Default)]
pub(super) struct Waiters {
    slots: Mutex<HashMap<Box<str>, Slot>>,
}

impl Waiters {
    fn slots(&self) -> MutexGuard<'_, HashMap<Box<str>, Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts watching request `id` for its next change.
    pub(super) fn watch(&self, id: &str) -> Watching<'_> {
        let mut slots = self.slots();
        let rx = match slots.get(id) {
            Some(slot) => slot.subscribe(),
            None => {
                let (tx, rx) = watch::channel(None);
                slots.insert(id.into(), tx);
                rx
            }
        };
        Watching {
            waiters: self,
            id: id.into(),
            rx,
        }
    }

    /// Request `a` changed: its polls, if any, get it.
    pub(super) fn settled(&self, a: &Arc<Approval>) {
        if let Some(slot) = self.slots().get(a.id.as_str()) {
            slot.send_replace(Some(a.clone()));
        }
    }

    /// Whether some poll waits on request `id` now.
    pub(super) fn is_watched(&self, id: &str) -> bool {
        self.slots().contains_key(id)
    }

    /// Requests some poll waits on now.
    #[cfg(test)]
    pub(super) fn watched(&self) -> usize {
        self.slots().len()
    }
}

/// One poll's registration for its request; removes the request's slot when it is
/// the last.
pub(super) struct Watching<'a> {
    waiters: &'a Waiters,
    id: Box<str>,
    rx: watch::Receiver<Option<Arc<Approval>>>,
}

impl Watching<'_> {
    /// The request as published by its next change after [`Waiters::watch`].
    pub(super) async fn changed(&mut self) -> Arc<Approval> {
        loop {
            if let Some(a) = self.rx.borrow_and_update().clone() {
                return a;
            }
            // The sender lives in the map while this receiver does.
            if self.rx.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

impl Drop for Watching<'_> {
    fn drop(&mut self) {
        let mut slots = self.waiters.slots();
        // This poll's receiver still counts: it is the last when the count is 1.
        if slots
            .get(&self.id)
            .is_some_and(|slot| slot.receiver_count() <= 1)
        {
            slots.remove(&self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::approval::Status;
    use crate::store::{Inserted, NewApproval, Store};

    /// Two pending requests, and a way to publish either as `status`.
    fn two() -> (Arc<Approval>, Arc<Approval>) {
        let s = Store::open_in_memory().unwrap();
        let new = || match s.insert(&NewApproval::sample("a", "t", None)).unwrap() {
            Inserted::New(a) => Arc::new(a),
            other => panic!("{other:?}"),
        };
        (new(), new())
    }

    fn as_(a: &Arc<Approval>, status: Status) -> Arc<Approval> {
        let mut a = (**a).clone();
        a.status = status;
        Arc::new(a)
    }

    #[tokio::test]
    async fn a_change_reaches_the_polls_of_its_request_only() {
        let w = Waiters::default();
        let (r1, r2) = two();
        let (mut one, mut two, mut other) = (w.watch(&r1.id), w.watch(&r1.id), w.watch(&r2.id));
        assert_eq!(w.watched(), 2);
        w.settled(&as_(&r1, Status::Approved));
        assert_eq!(one.changed().await.status, Status::Approved);
        assert_eq!(two.changed().await.status, Status::Approved);
        let waited = tokio::time::timeout(std::time::Duration::from_millis(20), other.changed());
        assert!(waited.await.is_err(), "r2 did not change");
        drop(one);
        assert_eq!(w.watched(), 2, "r1 still has a poll");
        drop(two);
        assert_eq!(w.watched(), 1);
        drop(other);
        assert_eq!(w.watched(), 0);
        // A change nobody waits for is dropped.
        w.settled(&as_(&r2, Status::Expired));
        assert_eq!(w.watched(), 0);
    }
}
