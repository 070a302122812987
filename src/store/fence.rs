//! What a write transaction carries from the work it is made for: the lease that work is
//! done under ([`Fence`], checked by every write transaction while set: `sql`), and the
//! audit rows a node's own commits appended ([`OwnAppends`]). Data only: the SQL that
//! reads and checks them is in `sql` and `nodes`.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::Mutex;

/// The lease some work is done under (see the module's doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    pub lease: &'static str,
    /// The run that holds it ([`NodeRow::run`]).
    pub holder: String,
    pub fence: i64,
}

thread_local! {
    /// The fence of the work this thread writes for, if any ([`within`]).
    static FENCE: RefCell<Option<Fence>> = const { RefCell::new(None) };
}

/// Runs `f` with `fence` set for this thread's write transactions (`Store::fenced`).
pub(super) fn within<T>(fence: &Fence, f: impl FnOnce() -> T) -> T {
    let before = FENCE.with(|slot| slot.replace(Some(fence.clone())));
    // Put back even if `f` panics: the thread is the blocking pool's and runs other
    // calls after this one.
    struct Restore(Option<Fence>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let before = self.0.take();
            FENCE.with(|slot| *slot.borrow_mut() = before);
        }
    }
    let _restore = Restore(before);
    f()
}

/// The fence this thread's write transactions must check now, if any.
pub(super) fn current() -> Option<Fence> {
    FENCE.with(|slot| slot.borrow().clone())
}

/// The most ranges [`OwnAppends`] keeps (a follower that stopped reading): the oldest go
/// first, and the rows they cover are then taken for other nodes' (shown twice, never
/// missed).
const OWN_KEPT: usize = 10_000;

/// The audit rows a PostgreSQL node's own commits appended (first and last seq of each
/// commit), until its follower has read past them: what it learns of other nodes'
/// changes from the trail leaves these out.
#[derive(Debug, Default)]
pub(super) struct OwnAppends(pub(super) Mutex<VecDeque<(i64, i64)>>);

impl OwnAppends {
    /// A commit of this node appended rows `seqs.0..=seqs.1`.
    pub(super) fn note(&self, seqs: (i64, i64)) {
        let mut own = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if own.len() == OWN_KEPT {
            own.pop_front();
        }
        own.push_back(seqs);
    }
}
