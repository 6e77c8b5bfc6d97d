//! The waker of the one task that waits on something, for single-threaded hand-offs
//! (the [mailbox](super::mailbox) and the output-limit kill in
//! [`OutputState`](super::limits::OutputState)): where a tokio `Notify` or channel costs
//! locks and atomics, one task on one thread needs only a cell.

use std::cell::RefCell;
use std::task::{Context, Waker};

/// The last waker left by the waiting task's pending poll.
#[derive(Debug, Default)]
pub struct WakerSlot(RefCell<Option<Waker>>);

impl WakerSlot {
    /// Keeps `cx`'s waker, unless the one kept already wakes the same task (so a task
    /// polling in a loop clones its waker once).
    pub fn register(&self, cx: &Context<'_>) {
        let mut slot = self.0.borrow_mut();
        if !slot.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            *slot = Some(cx.waker().clone());
        }
    }

    /// Wakes the kept waker, if any (it stays kept: a dropped wait costs at most one
    /// spurious wake-up of its task).
    pub fn wake(&self) {
        let waker = self.0.borrow().clone();
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Forgets the kept waker.
    pub fn clear(&self) {
        self.0.borrow_mut().take();
    }
}
