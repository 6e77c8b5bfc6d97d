//! Idle polling: after the last request, keep looking for the next one for a short while
//! (`idle-poll-us`) before letting the thread sleep.
//!
//! When the runtime has nothing to do it sleeps in `epoll_wait`, and the next request
//! has to wake it: the client's `send` finds the server's thread asleep, the kernel
//! wakes it on its CPU, and on a virtual machine an idle vCPU has halted, so the wake-up
//! is an interrupt to another vCPU that the hypervisor must deliver and reschedule. On
//! the 2-vCPU machines streamd is measured on, that costs 30-40 µs each way: one client
//! doing XADD after XADD sees a 100 µs round trip against a sleeping server and about
//! 30 µs against one that is still polling (docs/performance.md has the figures).
//! Hypervisors poll for the same reason before halting a vCPU (KVM's `halt_poll_ns`,
//! 200 µs by default), and so does the guest's `haltpoll` idle driver, but neither is
//! always on; this puts the polling where the work is.
//!
//! How: every batch of commands a connection executes counts as activity. While activity
//! was seen within the window, one task, the [`IdlePoll::run`] loop, stays runnable by
//! yielding: the scheduler then polls the sockets without a timeout (`epoll_wait(…, 0)`)
//! between its turns instead of sleeping, and a request that arrives meanwhile is read at
//! once. A window without activity ends the polling and the task waits (costing nothing)
//! until the next batch wakes it. A busy server never polls idly (there is always a
//! ready task); an idle server never wakes up for this; the cost is CPU time in the
//! gaps of a light load: at most `idle-poll-us` after each burst of requests.
//! `idle-poll-us 0` turns it off.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// The idle-polling state shared by the connections (which report activity) and the
/// polling task.
#[derive(Debug, Default)]
pub struct IdlePoll {
    /// How long to keep polling after the last activity (`idle-poll-us`); zero = off.
    window: Cell<Duration>,
    /// Bumped by every batch of commands; the poller compares it with what it saw.
    activity: Cell<u64>,
    /// True while the poller waits on `wake`: the next activity must wake it.
    parked: Cell<bool>,
    /// Wakes the parked poller.
    wake: Notify,
}

impl IdlePoll {
    /// A poller with the given window (zero = off).
    pub fn new(window: Duration) -> IdlePoll {
        IdlePoll {
            window: Cell::new(window),
            ..IdlePoll::default()
        }
    }

    /// Sets the window (`CONFIG SET idle-poll-us`); takes effect from the next activity.
    pub fn set_window(&self, window: Duration) {
        self.window.set(window);
    }

    /// The current window.
    pub fn window(&self) -> Duration {
        self.window.get()
    }

    /// Records that a connection just executed commands (cheap: two `Cell` updates, and
    /// a wake-up only when the poller was parked).
    #[inline]
    pub fn note_activity(&self) {
        self.activity.set(self.activity.get().wrapping_add(1));
        if self.parked.get() && !self.window.get().is_zero() {
            self.parked.set(false);
            self.wake.notify_one();
        }
    }

    /// The polling loop; runs for the life of the server (spawn it on the `LocalSet`).
    pub async fn run(self: Rc<Self>) {
        loop {
            self.parked.set(true);
            self.wake.notified().await;
            self.parked.set(false);
            let mut seen = self.activity.get();
            let mut last_activity = Instant::now();
            loop {
                // Yielding defers this task until the scheduler has polled the sockets
                // (without a timeout, as a task is ready), so every turn of this loop is
                // one look at the sockets.
                tokio::task::yield_now().await;
                let now_seen = self.activity.get();
                if now_seen != seen {
                    seen = now_seen;
                    last_activity = Instant::now();
                } else if last_activity.elapsed() >= self.window.get() {
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` on a current-thread runtime inside a `LocalSet`, as the server does.
    fn local<F: std::future::Future>(f: F) -> F::Output {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        tokio::task::LocalSet::new().block_on(&rt, f)
    }

    #[test]
    fn activity_starts_polling_and_the_window_ends_it() {
        local(async {
            let poll = Rc::new(IdlePoll::new(Duration::from_secs(10)));
            tokio::task::spawn_local(poll.clone().run());
            tokio::task::yield_now().await;
            assert!(
                poll.parked.get(),
                "the poller waits until there is activity"
            );
            poll.note_activity();
            assert!(!poll.parked.get(), "activity wakes the poller");
            // Within the window the poller stays runnable (polling), however long the
            // scheduler takes to come back here.
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(!poll.parked.get(), "inside the window it keeps polling");
            // A window that has passed: it parks again.
            poll.set_window(Duration::from_millis(1));
            tokio::time::sleep(Duration::from_millis(50)).await;
            assert!(
                poll.parked.get(),
                "no activity for a window: the poller parks"
            );
            poll.note_activity();
            assert!(!poll.parked.get(), "and the next activity wakes it again");
        });
    }

    #[test]
    fn a_zero_window_never_wakes_the_poller() {
        local(async {
            let poll = Rc::new(IdlePoll::new(Duration::ZERO));
            tokio::task::spawn_local(poll.clone().run());
            tokio::task::yield_now().await;
            poll.note_activity();
            assert!(poll.parked.get(), "off: activity leaves the poller parked");
            poll.set_window(Duration::from_millis(5));
            poll.note_activity();
            assert!(!poll.parked.get(), "on again: the next activity wakes it");
            assert_eq!(poll.window(), Duration::from_millis(5));
        });
    }
}
