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
//!
//! **The window adapts** (as KVM's halt polling does): `idle-poll-us` is its upper bound,
//! and each time the poller is woken from sleep it looks at how long the server was idle
//! since the last activity. Idle for less than `idle-poll-us`: a longer poll would have
//! caught that request, so the window doubles (from a quarter of the bound, up to the
//! bound). Idle for longer: the poll before the sleep was spent for nothing, so the
//! window halves, and below an eighth of the bound it is zero. A lone client's requests
//! come back within the window, it stays at the bound, and the poll never ends; a server
//! whose clients come by once in a while stops polling after a few such wake-ups instead
//! of spinning for `idle-poll-us` after each of them.
//!
//! **Polling yields to other work on the machine.** A turn of the loop is one
//! `epoll_wait(…, 0)`, a few µs; a turn that took 25 µs or more without finding work
//! means the kernel ran another thread on this CPU meanwhile: polling now takes the CPU
//! from someone who needs it. The poll ends there and the window halves. Where processes
//! outnumber the cores (six cluster nodes and `redis-cli --cluster reshard` on two
//! cores), every node spun after every command while the node that had the next command
//! waited for a CPU: `cluster/reshard-100k` took 0.173 s with polling and 0.159 s with
//! `idle-poll-us 0` (medians of six, 2026-12-06); with this rule, 0.152-0.160 s.

use std::cell::Cell;
use std::rc::Rc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// A turn of the polling loop (one `epoll_wait(…, 0)`, a few µs) that took this long
/// found no work and was not run: the thread was preempted.
const PREEMPTED: Duration = Duration::from_micros(25);

/// The idle-polling state shared by the connections (which report activity) and the
/// polling task.
#[derive(Debug, Default)]
pub struct IdlePoll {
    /// The longest poll after the last activity (`idle-poll-us`); zero = off.
    window: Cell<Duration>,
    /// The poll's current length, adapted between zero and `window` ([`adapt`]).
    current: Cell<Duration>,
    /// A turn at least this long counts as preempted ([`PREEMPTED`]; tests change it).
    preempted_after: Cell<Duration>,
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
            current: Cell::new(window),
            preempted_after: Cell::new(PREEMPTED),
            ..IdlePoll::default()
        }
    }

    /// Sets the window (`CONFIG SET idle-poll-us`); takes effect from the next activity.
    /// A new value also restarts the adaptation from it (every batch calls this with
    /// the configured value, which changes nothing then).
    pub fn set_window(&self, window: Duration) {
        if self.window.get() != window {
            self.window.set(window);
            self.current.set(window);
        }
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
        let mut last_activity: Option<Instant> = None;
        loop {
            self.parked.set(true);
            self.wake.notified().await;
            self.parked.set(false);
            if let Some(last) = last_activity {
                self.current
                    .set(adapt(self.current.get(), self.window.get(), last.elapsed()));
            }
            let mut seen = self.activity.get();
            let mut last = Instant::now();
            last_activity = Some(last);
            loop {
                // Yielding defers this task until the scheduler has polled the sockets
                // (without a timeout, as a task is ready), so every turn of this loop is
                // one look at the sockets.
                let turn = Instant::now();
                tokio::task::yield_now().await;
                let now_seen = self.activity.get();
                if now_seen != seen {
                    seen = now_seen;
                    last = Instant::now();
                    last_activity = Some(last);
                } else if turn.elapsed() >= self.preempted_after.get() {
                    // Another thread had this CPU: polling takes it from someone.
                    self.current.set(self.current.get() / 2);
                    break;
                } else if last.elapsed() >= self.current_window() {
                    break;
                }
            }
        }
    }

    /// The poll's current length (at most [`IdlePoll::window`]).
    pub fn current_window(&self) -> Duration {
        self.current.get().min(self.window.get())
    }
}

/// The next poll length after the server slept and was woken `idle` after its last
/// activity, with the poll at `current` and `idle-poll-us` at `max` (the module's
/// "The window adapts").
fn adapt(current: Duration, max: Duration, idle: Duration) -> Duration {
    if idle <= max {
        // A longer poll would have caught this request.
        current.saturating_mul(2).max(max / 4).min(max)
    } else {
        let half = current / 2;
        if half < max / 8 {
            Duration::ZERO
        } else {
            half.min(max)
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
            // A test thread is preempted now and then on a busy machine; that rule has
            // its own test.
            poll.preempted_after.set(Duration::from_secs(3600));
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
    fn a_preempted_turn_ends_the_poll_and_halves_the_window() {
        local(async {
            let poll = Rc::new(IdlePoll::new(Duration::from_secs(10)));
            // Every turn counts as preempted.
            poll.preempted_after.set(Duration::ZERO);
            tokio::task::spawn_local(poll.clone().run());
            tokio::task::yield_now().await;
            poll.note_activity();
            assert!(!poll.parked.get());
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(
                poll.parked.get(),
                "the poll ended long before its 10 s window"
            );
            assert_eq!(poll.current_window(), Duration::from_secs(5));
        });
    }

    #[test]
    fn the_window_shrinks_after_long_sleeps_and_grows_after_short_ones() {
        let max = Duration::from_micros(100);
        let long = Duration::from_millis(100);
        let short = Duration::from_micros(60);
        // The windows after four wake-ups that each slept `idle`, from `w`.
        let four = |w: &mut Duration, idle: Duration| -> Vec<u128> {
            (0..4)
                .map(|_| {
                    *w = adapt(*w, max, idle);
                    w.as_micros()
                })
                .collect()
        };
        let mut w = max;
        let shrinking = four(&mut w, long);
        assert_eq!(
            shrinking,
            [50, 25, 12, 0],
            "each wasted poll halves it, then it stops"
        );
        let growing = four(&mut w, short);
        assert_eq!(
            growing,
            [25, 50, 100, 100],
            "requests it would have caught grow it back"
        );
        assert_eq!(
            adapt(max, max, max),
            max,
            "idle exactly the bound counts as caught"
        );
        assert_eq!(
            adapt(max, Duration::ZERO, short),
            Duration::ZERO,
            "off stays off"
        );
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
