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
//!
//! **No polling while the machine's CPUs are contended.** The preemption rule sees only
//! what happens to this thread during a poll. Where processes outnumber the cores all
//! the time (the six-node cluster benchmarks: three primaries, three replicas and the
//! load tool on two vCPUs), every node still polled in each gap it found, the vCPUs
//! never halted, and what polling saves (waking a halted vCPU) was never there to save:
//! `cluster/auction` spent 25.1-27.5 µs of cluster CPU per command with polling and
//! 23.9-24.7 with `idle-poll-us 0` in most runs (both also have rounds of 29-31 µs, the
//! auction's own: docs/performance.md). So the poller
//! also reads the kernel's CPU pressure (PSI, `/proc/pressure/cpu`: the share of time
//! some runnable task waited for a CPU) at most every [`PRESSURE_EVERY`]; while that
//! share is at least [`CONTENDED_FROM`] it does not poll (re-reading on a timer), and it
//! polls again once the share falls below [`CONTENDED_UNTIL`]. A lone client and its
//! server on two vCPUs read 0-9%, the cluster benchmarks 78-80%. Without PSI (a kernel
//! without it) the rules above apply alone.

use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// A turn of the polling loop (one `epoll_wait(…, 0)`, a few µs) that took this long
/// found no work and was not run: the thread was preempted.
const PREEMPTED: Duration = Duration::from_micros(25);

/// The kernel's CPU pressure file (PSI).
const PRESSURE_FILE: &str = "/proc/pressure/cpu";

/// How often the CPU pressure is read (at most; only while the poller runs).
pub const PRESSURE_EVERY: Duration = Duration::from_millis(100);

/// A share of time with some task waiting for a CPU from which polling stops.
pub const CONTENDED_FROM: f64 = 0.25;

/// The share below which polling resumes.
pub const CONTENDED_UNTIL: f64 = 0.10;

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
    /// True while the poller is polling (between an activity and the end of its window).
    polling: Cell<bool>,
    /// Wakes the parked poller.
    wake: Notify,
    /// The machine's CPU pressure, when the kernel reports it
    /// ([`IdlePoll::watching_cpu_pressure`]).
    pressure: RefCell<Option<CpuPressure>>,
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

    /// This poller, not polling while the machine's CPUs are contended (the module's
    /// last rule), when the kernel reports CPU pressure.
    pub fn watching_cpu_pressure(self) -> IdlePoll {
        self.watching_pressure_file(PathBuf::from(PRESSURE_FILE))
    }

    /// [`IdlePoll::watching_cpu_pressure`] reading `path` (tests give their own file).
    fn watching_pressure_file(self, path: PathBuf) -> IdlePoll {
        IdlePoll {
            pressure: RefCell::new(CpuPressure::open(path)),
            ..self
        }
    }

    /// True while the CPUs are contended (read at most every [`PRESSURE_EVERY`]).
    fn contended(&self) -> bool {
        self.pressure
            .borrow_mut()
            .as_mut()
            .is_some_and(|p| p.contended(Instant::now()))
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
            if self.contended() {
                // Not parked: activity does not wake this task meanwhile.
                tokio::time::sleep(PRESSURE_EVERY).await;
                continue;
            }
            self.parked.set(true);
            self.wake.notified().await;
            self.parked.set(false);
            if self.contended() {
                continue;
            }
            if let Some(last) = last_activity {
                self.current
                    .set(adapt(self.current.get(), self.window.get(), last.elapsed()));
            }
            let mut seen = self.activity.get();
            let mut last = Instant::now();
            last_activity = Some(last);
            self.polling.set(true);
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
                } else if last.elapsed() >= self.current_window() || self.contended() {
                    break;
                }
            }
            self.polling.set(false);
        }
    }

    /// The poll's current length (at most [`IdlePoll::window`]).
    pub fn current_window(&self) -> Duration {
        self.current.get().min(self.window.get())
    }
}

/// The machine's CPU pressure: the kernel's count of microseconds during which some
/// runnable task waited for a CPU (the `some` line's `total=` in `/proc/pressure/cpu`),
/// read now and then, and whether its recent share of the time says the CPUs are
/// contended ([`CONTENDED_FROM`], [`CONTENDED_UNTIL`]).
#[derive(Debug)]
struct CpuPressure {
    /// The pressure file.
    path: PathBuf,
    /// When the stall total was read last, and its value.
    last: (Instant, u64),
    /// The state decided at the last reading.
    contended: bool,
}

impl CpuPressure {
    /// Starts watching `path`; `None` when it cannot be read or parsed (no PSI).
    fn open(path: PathBuf) -> Option<CpuPressure> {
        let total = read_stall_total(&path)?;
        Some(CpuPressure {
            path,
            last: (Instant::now(), total),
            contended: false,
        })
    }

    /// Whether the CPUs are contended, re-reading the file when the last reading is at
    /// least [`PRESSURE_EVERY`] old. A file that stops being readable leaves the state
    /// as it was.
    fn contended(&mut self, now: Instant) -> bool {
        let (then, before) = self.last;
        let wall = now.saturating_duration_since(then);
        if wall < PRESSURE_EVERY {
            return self.contended;
        }
        let Some(total) = read_stall_total(&self.path) else {
            return self.contended;
        };
        self.last = (now, total);
        let share = total.saturating_sub(before) as f64 / wall.as_micros().max(1) as f64;
        self.contended = if self.contended {
            share >= CONTENDED_UNTIL
        } else {
            share >= CONTENDED_FROM
        };
        self.contended
    }
}

/// The `some` line's `total=` (µs) of a PSI file.
fn read_stall_total(path: &std::path::Path) -> Option<u64> {
    parse_stall_total(&std::fs::read_to_string(path).ok()?)
}

/// The `some` line's `total=` of PSI text such as
/// `some avg10=0.00 avg60=0.00 avg300=0.00 total=123`.
fn parse_stall_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    line.split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
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
    fn psi_text_gives_the_some_total() {
        let text = "some avg10=1.50 avg60=0.00 avg300=0.00 total=10295138573\n\
                    full avg10=0.00 avg60=0.00 avg300=0.00 total=7\n";
        assert_eq!(parse_stall_total(text), Some(10_295_138_573));
        assert_eq!(parse_stall_total("full avg10=0.00 total=7\n"), None);
        assert_eq!(parse_stall_total("some avg10=0.00 total=x\n"), None);
        assert_eq!(parse_stall_total(""), None);
    }

    #[test]
    fn contended_cpus_stop_the_polling_until_the_pressure_falls() {
        let dir = std::env::temp_dir().join(format!("idle-poll-psi-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join("cpu");
        let write = move |path: &std::path::Path, total: u64| {
            let text = format!("some avg10=0.00 avg60=0.00 avg300=0.00 total={total}\n");
            std::fs::write(path, text).expect("write psi file")
        };
        write(&file, 0);
        // Waits (bounded) until `cond` holds, checking every few ms.
        async fn until(what: &str, cond: impl Fn() -> bool) {
            let deadline = Instant::now() + Duration::from_secs(10);
            while !cond() {
                assert!(Instant::now() < deadline, "timed out waiting: {what}");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        local(async {
            let poll = Rc::new(
                IdlePoll::new(Duration::from_secs(3600)).watching_pressure_file(file.clone()),
            );
            poll.preempted_after.set(Duration::from_secs(3600));
            tokio::task::spawn_local(poll.clone().run());
            tokio::task::yield_now().await;
            poll.note_activity();
            assert!(!poll.parked.get(), "no pressure: activity starts a poll");
            until("polling", || poll.polling.get()).await;
            // From now on the stall total grows as fast as the clock: fully contended.
            let stalling = Rc::new(Cell::new(true));
            let (flag, path) = (stalling.clone(), file.clone());
            tokio::task::spawn_local(async move {
                let (started, mut total) = (Instant::now(), 0);
                loop {
                    if flag.get() {
                        total = started.elapsed().as_micros() as u64;
                    }
                    write(&path, total);
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            });
            // The poll (an hour long) ends at the next reading, and the poller waits on
            // its timer: not polling, not parked, so activity does not wake it.
            until("the poll ends", || !poll.polling.get()).await;
            assert!(!poll.parked.get(), "contended: on its timer, not parked");
            poll.note_activity();
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert!(!poll.polling.get(), "contended: activity starts no poll");
            // The stall stops growing: after its next reading the poller parks, and the
            // next activity starts a poll again.
            stalling.set(false);
            until("parked again", || poll.parked.get()).await;
            poll.note_activity();
            until("polling again", || poll.polling.get()).await;
        });
        let _ = std::fs::remove_dir_all(&dir);
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
